//! Command-line options of every provider built on the SDK.

use std::net::SocketAddr;
use std::time::Duration;

use crate::runtime::{CommonArgs, parse_duration};

/// Options of a provider shim (each also readable from the environment).
#[derive(clap::Parser, Clone, Debug)]
#[command(version, about = "An AI Runway provider shim")]
pub struct ProviderArgs {
    /// An offline command (`render`; docs/gitops.md) instead of running the provider.
    #[command(subcommand)]
    pub command: Option<super::offline_render::SdkCommand>,

    /// Options shared by every AI Runway binary.
    #[command(flatten)]
    pub common: CommonArgs,

    /// Address of the gRPC probe (grpc.health.v1 and airunway.provider.v1).
    #[arg(
        long,
        env = "AIRUNWAY_PROBE_BIND_ADDRESS",
        default_value = "0.0.0.0:9090"
    )]
    pub probe_bind_address: SocketAddr,

    /// `host:port` the core uses to reach the probe, advertised in the InferenceProviderConfig
    /// (default: `POD_IP` with the probe port, else the bind address).
    #[arg(long, env = "AIRUNWAY_PROBE_ADVERTISE_ADDRESS")]
    pub probe_advertise_address: Option<String>,

    /// How often the provider reports in (`status.lastHeartbeat`) and re-checks its upstream CRD.
    #[arg(long, env = "AIRUNWAY_HEARTBEAT_INTERVAL", default_value = "30s", value_parser = parse_duration)]
    pub heartbeat_interval: Duration,

    /// How often each deployment is re-checked without a change. Status follows the upstream
    /// object through the provider's watch, not this timer; the re-check reads only the watch
    /// caches and writes nothing unless something differs. (`--status-sync-interval` is the
    /// old name.)
    #[arg(long, alias = "status-sync-interval", env = "AIRUNWAY_RESYNC_INTERVAL", default_value = "10m", value_parser = parse_duration)]
    pub resync_interval: Duration,

    /// How long deletion waits for the upstream object before the finalizer is removed anyway
    /// (with a FinalizerTimeout warning event).
    #[arg(long, env = "AIRUNWAY_FINALIZER_TIMEOUT", default_value = "5m", value_parser = parse_duration)]
    pub finalizer_timeout: Duration,

    /// How long a watch may fail without pause, or changes wait with no reconcile finishing,
    /// before the provider reports itself not ready (heartbeat `ready: false` saying why, probe
    /// NOT_SERVING), so the core stops sending it work; it reports ready again once it moves.
    #[arg(long, env = "AIRUNWAY_PROGRESS_DEADLINE", default_value = "60s", value_parser = parse_duration)]
    pub progress_deadline: Duration,

    /// How long the upstream operator may leave an object's latest change unreported before
    /// the deployment shows `StaleStatus=True` (spec §13.4; `0s` switches detection off).
    #[arg(long, env = "AIRUNWAY_STALE_STATUS_THRESHOLD", default_value = "5m", value_parser = parse_duration)]
    pub stale_status_threshold: Duration,

    /// Name of the leader election Lease (default `<name>-provider`).
    #[arg(long, env = "AIRUNWAY_LEADER_ELECTION_ID")]
    pub leader_election_id: Option<String>,

    /// The Pod Security Standards profile every rendered object is checked against before it is
    /// applied: `baseline` or `restricted` (see docs/security.md).
    #[arg(
        long,
        env = "AIRUNWAY_POD_SECURITY_PROFILE",
        default_value = "baseline"
    )]
    pub pod_security_profile: crate::pod_security::Profile,

    /// Allow `priorityClassName` in rendered pods (refused by default).
    #[arg(long, env = "AIRUNWAY_ALLOW_PRIORITY_CLASS")]
    pub allow_priority_class: bool,

    /// Allow `runtimeClassName` in rendered pods (refused by default).
    #[arg(long, env = "AIRUNWAY_ALLOW_RUNTIME_CLASS")]
    pub allow_runtime_class: bool,
}

impl ProviderArgs {
    /// The pod security policy the flags set.
    pub fn pod_security(&self) -> crate::pod_security::Policy {
        crate::pod_security::Policy {
            profile: self.pod_security_profile,
            exemptions: crate::pod_security::Exemptions {
                priority_class: self.allow_priority_class,
                runtime_class: self.allow_runtime_class,
            },
        }
    }

    /// The probe endpoint to advertise.
    pub fn advertised_probe(&self) -> String {
        if let Some(address) = &self.probe_advertise_address {
            return address.clone();
        }
        let port = self.probe_bind_address.port();
        if let Ok(ip) = std::env::var("POD_IP") {
            return format!("{ip}:{port}");
        }
        if self.probe_bind_address.ip().is_unspecified() {
            format!("127.0.0.1:{port}")
        } else {
            self.probe_bind_address.to_string()
        }
    }
}
