//! `airunway-core`: the AI Runway core controller.

use clap::Parser;

/// The global allocator: jemalloc, which gives freed memory back to the system
/// (docs/performance.md, "Allocators").
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = airunway_core::args::Args::parse();
    if let Some(command) = &args.command {
        // validate, select, explain: offline, no cluster, no telemetry.
        std::process::exit(airunway_core::offline::run(command));
    }
    if let Err(message) = args.validate() {
        eprintln!("error: {message}");
        std::process::exit(2);
    }
    airunway_api::runtime::install_crypto_provider()?;
    let _telemetry =
        airunway_api::runtime::init_telemetry("airunway-core", args.common.log_format)?;
    airunway_core::run::run(args).await
}
