//! `kubectl-airunway`: the kubectl plugin of AI Runway (see the library's docs).

use clap::Parser;

fn main() -> anyhow::Result<()> {
    let args = kubectl_airunway::Args::parse();
    match kubectl_airunway::run(&args) {
        Ok(code) => std::process::exit(code),
        Err(error) => {
            eprintln!("error: {error}");
            std::process::exit(airunway_api::offline::exit::USAGE);
        }
    }
}
