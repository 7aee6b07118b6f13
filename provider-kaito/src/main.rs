//! `airunway-provider-kaito`: the KAITO provider shim.

use airunway_api::provider::{ProviderArgs, run_with_args};
use airunway_provider_kaito::{KaitoProvider, NodeProvisioning, truthy};
use clap::Parser;

/// The SDK's options and the KAITO provider's own.
#[derive(Parser, Debug)]
#[command(version, about = "The AI Runway KAITO provider")]
struct Args {
    /// Options of every provider shim.
    #[command(flatten)]
    sdk: ProviderArgs,

    /// Node auto-provisioning: when true (`1`, `t`, `true`, `y`, `yes`, `on`, `enabled`),
    /// Workspaces name the instance type below for their nodes (the Go AI Runway's setting).
    #[arg(
        long,
        env = "AIRUNWAY_KAITO_NODE_AUTO_PROVISIONING",
        default_value = "false"
    )]
    node_auto_provisioning: String,

    /// The instance type of GPU Workspaces under node auto-provisioning, e.g.
    /// `Standard_NC24ads_A100_v4`.
    #[arg(long, env = "AIRUNWAY_KAITO_GPU_INSTANCE_TYPE")]
    gpu_instance_type: Option<String>,

    /// The instance type of CPU Workspaces under node auto-provisioning.
    #[arg(long, env = "AIRUNWAY_KAITO_CPU_INSTANCE_TYPE")]
    cpu_instance_type: Option<String>,
}

/// The global allocator: jemalloc, which gives freed memory back to the system
/// (docs/performance.md, "Allocators").
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[airunway_api::provider::tokio::main(crate = "airunway_api::provider::tokio")]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let provider = KaitoProvider {
        node_provisioning: truthy(&args.node_auto_provisioning).then(|| NodeProvisioning {
            gpu_instance_type: args.gpu_instance_type.filter(|t| !t.is_empty()),
            cpu_instance_type: args.cpu_instance_type.filter(|t| !t.is_empty()),
        }),
    };
    match run_with_args(provider, args.sdk).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
