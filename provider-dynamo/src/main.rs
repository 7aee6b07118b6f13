//! `airunway-provider-dynamo`: the NVIDIA Dynamo provider shim.

/// The global allocator: jemalloc, which gives freed memory back to the system
/// (docs/performance.md, "Allocators").
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[airunway_api::provider::tokio::main(crate = "airunway_api::provider::tokio")]
async fn main() -> std::process::ExitCode {
    match airunway_api::provider::run(airunway_provider_dynamo::DynamoProvider).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
