//! Operational plumbing shared by every AI Runway binary (feature `runtime`): command-line
//! options, telemetry, the health and metrics HTTP servers, leader election, shutdown on
//! signals, and Kubernetes events.
//!
//! Every binary behaves the same way: structured logs (`--log-format json`), OpenTelemetry
//! traces when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, Prometheus metrics on
//! `--metrics-bind-address`, `/healthz` and `/readyz` on `--health-probe-bind-address`,
//! Lease-based leader election with `--leader-elect`, graceful shutdown on SIGTERM.

mod args;
mod events;
pub mod guarded_watch;
mod http;
mod leader;
pub mod list_pages;
pub mod retry;
mod shutdown;
pub mod stored_triggers;
mod telemetry;
pub mod trace_context;
pub mod watch_health;

pub use args::{CommonArgs, LogFormat, parse_duration};
pub use events::EventPublisher;
pub use guarded_watch::{InvalidObjects, guarded_watcher};
pub use http::{HealthState, serve_health, serve_metrics};
pub use leader::{LeaderElection, LeaderError, default_identity};
pub use retry::FailureCounts;
pub use shutdown::shutdown_on_signals;
pub use stored_triggers::touched_once_stored;
pub use telemetry::{TelemetryGuard, init_telemetry};
pub use watch_health::WatchBackoff;

/// Installs the one rustls crypto provider of the process (ring). Call first thing in `main`;
/// fails if another provider was installed already.
pub fn install_crypto_provider() -> anyhow::Result<()> {
    rustls::crypto::ring::default_provider()
        .install_default()
        .map_err(|_| anyhow::anyhow!("a rustls crypto provider was already installed"))
}

/// What every AI Runway binary starts from (see [`start`]).
pub struct Started {
    /// API client.
    pub client: kube::Client,
    /// Cancelled on SIGTERM or SIGINT.
    pub shutdown: tokio_util::sync::CancellationToken,
    /// `/healthz` and `/readyz`; not ready until the binary calls `set_ready(true)`.
    pub health: HealthState,
}

/// The common start of a binary: a client from the environment, shutdown on signals, AI
/// Runway's CRDs required, and the health endpoints served on
/// `--health-probe-bind-address`.
pub async fn start(common: &CommonArgs) -> anyhow::Result<Started> {
    let client = kube_client().await?;
    let shutdown = shutdown_on_signals()?;
    require_airunway_crds(&client).await?;
    let health = HealthState::default();
    serve_health(
        common.health_probe_bind_address,
        health.clone(),
        shutdown.clone(),
    )
    .await?;
    Ok(Started {
        client,
        shutdown,
        health,
    })
}

/// A Kubernetes client from the environment (in-cluster config, or `KUBECONFIG` /
/// `~/.kube/config`), with a clear error when none is available.
pub async fn kube_client() -> anyhow::Result<kube::Client> {
    let config = kube::Config::infer().await.map_err(|e| {
        anyhow::anyhow!(
            "no Kubernetes configuration found ({e}); run in a cluster or set KUBECONFIG"
        )
    })?;
    Ok(kube::Client::try_from(config)?)
}

/// Fails with a clear message unless the API server serves AI Runway's kinds (the CRDs are
/// installed). Uses discovery, which needs no RBAC beyond being authenticated.
pub async fn require_airunway_crds(client: &kube::Client) -> anyhow::Result<()> {
    let missing = |what: &str| {
        anyhow::anyhow!(
            "{what} is not served by the API server: install AI Runway's CRDs (kubectl apply -k deploy/crds) first"
        )
    };
    let resources = match client
        .list_api_group_resources(crate::constants::API_VERSION)
        .await
    {
        Ok(list) => list.resources,
        Err(kube::Error::Api(status)) if status.code == 404 => {
            return Err(missing(crate::constants::API_VERSION));
        }
        Err(e) => {
            return Err(anyhow::anyhow!(
                "discovering {}: {e}",
                crate::constants::API_VERSION
            ));
        }
    };
    for plural in ["modeldeployments", "inferenceproviderconfigs"] {
        if !resources.iter().any(|r| r.name == plural) {
            return Err(missing(&format!("{plural}.{}", crate::constants::GROUP)));
        }
    }
    Ok(())
}
