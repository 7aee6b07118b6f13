//! Command-line options of `airunway-core` (each also readable from the environment).

use std::time::Duration;

use airunway_api::runtime::CommonArgs;
use clap::{ArgAction, Parser};

use crate::parse_duration;

/// The AI Runway core controller: validates ModelDeployments, selects their engine and
/// provider, serves the admission webhooks, and watches provider health.
#[derive(Parser, Clone, Debug)]
#[command(name = "airunway-core", version, about)]
pub struct Args {
    /// Options shared by every AI Runway binary.
    #[command(flatten)]
    pub common: CommonArgs,

    /// Select a provider for deployments that name none (`--enable-provider-selector=false`
    /// leaves that to a custom selector).
    #[arg(long, env = "AIRUNWAY_ENABLE_PROVIDER_SELECTOR", default_value_t = true, action = ArgAction::Set)]
    pub enable_provider_selector: bool,

    /// A provider whose heartbeat is older than this is stale (default: 3 heartbeat
    /// intervals of 30s).
    #[arg(long, env = "AIRUNWAY_PROVIDER_STALE_THRESHOLD", default_value = "90s", value_parser = parse_duration)]
    pub provider_stale_threshold: Duration,

    /// How often the core probes each provider's gRPC endpoint.
    #[arg(long, env = "AIRUNWAY_PROVIDER_PROBE_INTERVAL", default_value = "10s", value_parser = parse_duration)]
    pub provider_probe_interval: Duration,

    /// Consecutive failed probes after which a provider is stale.
    #[arg(
        long,
        env = "AIRUNWAY_PROVIDER_PROBE_FAILURE_THRESHOLD",
        default_value_t = 3
    )]
    pub provider_probe_failure_threshold: u32,

    /// Re-check every deployment this often even without changes.
    #[arg(long, env = "AIRUNWAY_RESYNC_INTERVAL", default_value = "5m", value_parser = parse_duration)]
    pub resync_interval: Duration,

    /// Name of the leader election Lease.
    #[arg(
        long,
        env = "AIRUNWAY_LEADER_ELECTION_ID",
        default_value = "airunway-core"
    )]
    pub leader_election_id: String,
}
