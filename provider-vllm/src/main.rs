//! `airunway-provider-vllm`: the direct vLLM provider shim.

#[airunway_api::provider::tokio::main(crate = "airunway_api::provider::tokio")]
async fn main() -> std::process::ExitCode {
    match airunway_api::provider::run(airunway_provider_vllm::VllmProvider).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
