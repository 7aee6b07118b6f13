//! `airunway-provider-vllm`: the direct vLLM provider shim.

use airunway_api::provider::{ProviderArgs, run_with_args};
use airunway_provider_vllm::{VllmProvider, image};
use clap::Parser;

/// The SDK's options and the direct vLLM provider's own.
#[derive(Parser, Debug)]
#[command(version, about = "The AI Runway direct vLLM provider")]
struct Args {
    /// Options of every provider shim.
    #[command(flatten)]
    sdk: ProviderArgs,

    /// The image deployments that name none run, resolved to its digest before use (a
    /// failure to resolve it holds the deployment `Failed`).
    #[arg(long, env = "AIRUNWAY_VLLM_DEFAULT_IMAGE", default_value = image::DEFAULT_IMAGE)]
    default_image: String,
}

/// The global allocator: jemalloc, which gives freed memory back to the system
/// (docs/performance.md, "Allocators").
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[airunway_api::provider::tokio::main(crate = "airunway_api::provider::tokio")]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    if let Err(message) = image::parse(&args.default_image) {
        eprintln!("error: --default-image: {message}");
        return std::process::ExitCode::FAILURE;
    }
    let provider = VllmProvider::with_default_image(args.default_image);
    match run_with_args(provider, args.sdk).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
