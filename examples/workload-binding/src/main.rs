//! `workload-binding`: binds to one ModelDeployment's serving workload through the contract
//! its provider writes (`status.workload`, `status.selector`), and keeps a monitor Service
//! selecting exactly its serving pods in step with it — the pattern a tool that attaches a
//! sidecar, a scaler or a monitor to a workload someone else owns follows.
//!
//! `workload-binding --namespace <ns> --deployment <md>` watches the deployment (never polls)
//! and applies `<md>-monitor` whenever what the provider reports changes.

use anyhow::Context as _;
use clap::Parser;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};

use airunway_api::v1alpha1::ModelDeployment;
use workload_binding::{FIELD_MANAGER, is_current, monitor_service};

/// The command line.
#[derive(Parser)]
#[command(
    version,
    about = "Bind a monitor Service to a ModelDeployment's serving pods"
)]
struct Args {
    /// The deployment's namespace.
    #[arg(long)]
    namespace: String,
    /// The deployment's name.
    #[arg(long)]
    deployment: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let client = kube::Client::try_default()
        .await
        .context("no Kubernetes configuration (KUBECONFIG or in-cluster)")?;
    let deployments: Api<ModelDeployment> = Api::namespaced(client.clone(), &args.namespace);
    let services: Api<Service> = Api::namespaced(client, &args.namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={}", args.deployment));
    let mut changes = watcher(deployments, config).applied_objects().boxed();
    while let Some(md) = changes.next().await {
        let md = md.context("watching the deployment")?;
        let desired = match monitor_service(&md) {
            Ok(service) => service,
            Err(waiting) => {
                eprintln!("waiting ({}): {waiting}", waiting.category());
                continue;
            }
        };
        let name = desired.metadata.name.clone().unwrap_or_default();
        let live = services
            .get_opt(&name)
            .await
            .context("reading the Service")?;
        if live.as_ref().is_some_and(|live| is_current(&desired, live)) {
            continue;
        }
        services
            .patch(
                &name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&desired),
            )
            .await
            .with_context(|| format!("applying Service {name}"))?;
        let selector = md.status.and_then(|s| s.selector).unwrap_or_default();
        eprintln!("bound Service {name} to the pods selected by {selector}");
    }
    Ok(())
}
