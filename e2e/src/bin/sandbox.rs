//! `airunway-sandbox`: run AI Runway locally for real, with nothing but this repository.
//!
//! ```text
//! e2e/sandbox up [--simulate-upstream]   # build, start everything, apply examples/
//! e2e/sandbox down                       # stop everything, remove the state
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use airunway_e2e::sandbox::{self, State, UpOptions};
use clap::{Parser, Subcommand};

/// Run AI Runway locally: a real kube-apiserver, etcd and kube-controller-manager, the core
/// with its webhooks and the KAITO, Dynamo and KubeRay providers, with the example deployments
/// applied.
#[derive(Parser, Debug)]
#[command(name = "airunway-sandbox", version)]
struct Cli {
    /// Folder for the sandbox's state and logs (default: <repository>/.sandbox).
    #[arg(long, global = true)]
    state_dir: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Build what is needed, start everything, apply examples/ and show the deployments.
    Up {
        /// Play the KAITO, Dynamo and KubeRay operators (writing the status they really write) so
        /// deployments reach Running.
        #[arg(long)]
        simulate_upstream: bool,
        /// Do not build (binaries and the control plane are already built).
        #[arg(long)]
        no_build: bool,
        /// Stop waiting for the deployments to settle after this many seconds.
        #[arg(long, default_value_t = 180)]
        timeout_seconds: u64,
        /// Folder of example ModelDeployments.
        #[arg(long)]
        examples: Option<PathBuf>,
    },
    /// Stop everything the sandbox started and remove its state.
    Down,
    /// (internal) Play the upstream operators; started by `up --simulate-upstream`.
    #[command(hide = true)]
    Simulate {
        /// Admin kubeconfig of the sandbox.
        #[arg(long)]
        kubeconfig: PathBuf,
    },
    /// (internal) Serve the played Dynamo conversion webhook; started by `up`.
    #[command(hide = true)]
    DynamoConversion {
        /// Folder holding its certificate and key (written by `up`).
        #[arg(long)]
        dir: PathBuf,
        /// Port on 127.0.0.1.
        #[arg(long)]
        port: u16,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let state = State::new(cli.state_dir);
    let result = match cli.command {
        Command::Up {
            simulate_upstream,
            no_build,
            timeout_seconds,
            examples,
        } => {
            let options = UpOptions {
                simulate_upstream,
                no_build,
                timeout: Duration::from_secs(timeout_seconds),
                examples: examples
                    .unwrap_or_else(|| airunway_e2e::paths::workspace_root().join("examples")),
            };
            sandbox::up(&state, &options).await
        }
        Command::Down => sandbox::down(&state).map(|()| println!("sandbox stopped")),
        Command::Simulate { kubeconfig } => sandbox::simulate(&kubeconfig).await,
        Command::DynamoConversion { dir, port } => {
            sandbox::serve_dynamo_conversion(&dir, port).await
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
