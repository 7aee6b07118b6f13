//! The provider SDK (feature `provider-sdk`): a provider is a type implementing [`Provider`] (pure
//! functions) and a `main` calling [`run`]. The SDK does the rest of the provider contract:
//!
//! 1. **Registration**: applies InferenceProviderConfig `<name>` (field manager
//!    `<name>-provider`, never forcing, so fields an admin takes over stay theirs), with the probe
//!    endpoint; heartbeats `ready`, `version`, `lastHeartbeat`, `upstreamCRDVersion`,
//!    `upstreamSchemaHash` and the `UpstreamAvailable` condition every `--heartbeat-interval`;
//!    writes `ready: false` on SIGTERM. A provider naming its operator's Deployments
//!    ([`Provider::upstream_controller`]) is ready only while one of them has a ready replica.
//! 2. **Probe**: `grpc.health.v1.Health` and `airunway.provider.v1.ProviderService` on
//!    `--probe-bind-address`.
//! 3. **Reconcile** of the ModelDeployments whose `status.provider.name` is this provider (and
//!    those still carrying its finalizer): pause annotation; finalizer
//!    `airunway.ai/<name>-provider` with `--finalizer-timeout` (5 minutes) and a
//!    `FinalizerTimeout` event; deletion that does not hang when the upstream CRD is gone;
//!    `ProviderCompatible`; schema detection (unknown schema: `ProviderCompatible=False`,
//!    `Failed`); render → server-side apply (force, manager `<name>-provider`) with a controller
//!    owner reference and labels; drift overwritten with a `DriftDetected` event; identity
//!    changes delete and recreate; moving to another provider cleans up and releases the
//!    finalizer and the status fields; status translation applied to the provider-owned status
//!    fields; `ResourceCreated`/`Ready`; `StaleStatus` when the upstream operator has not
//!    reported on the object's latest change for `--stale-status-threshold` ([`staleness`]);
//!    events. A provider may manage a set of objects of
//!    several built-in kinds per deployment ([`Provider::secondary_kinds`],
//!    [`Provider::render_set`], [`Provider::translate_set_status`]; e.g. llm-d's Deployments
//!    and Services): each object is applied, drift-checked and recreated on its own, objects
//!    the render no longer produces (a changed shape) are deleted, and cleanup deletes them
//!    all; [`workload`] has the shared vLLM Deployment/Service render and the Deployment
//!    status translator. A provider that needs I/O before its pure render (the direct vLLM
//!    provider resolving its image to a digest) implements [`Provider::prepare`]: the
//!    [`Preparation`]'s status fields and conditions are written (manager
//!    `<name>-provider-prepare`, only when changed, see [`prepare`]) and the render sees them.
//!    The pipeline is [`plan::triage`] →
//!    [`plan::plan`] (pure) → apply only when the plan says so → status only when it changed;
//!    every read comes from the watch caches, and a change of the upstream object (its
//!    operator's status, an edit, a deletion) arrives through the provider's watch on its kind
//!    (only objects labelled `airunway.ai/managed-by: airunway`), never by polling.
//! 4. **Operations**: metrics, `/healthz`, `/readyz`, Lease leader election, tracing, graceful
//!    shutdown — the same flags as the core.

mod args;
mod cleanup;
pub mod cycle;
pub mod desired;
mod live;
mod metrics;
pub mod overrides;
pub mod plan;
pub mod prepare;
mod probe_server;
mod recent;
mod reconcile;
pub mod registration;
mod replica_count;
mod runner;
pub mod schema;
pub mod staleness;
mod status_write;
#[cfg(feature = "provider-testing")]
pub mod testing;
mod traits;
pub mod workload;

/// The async runtime the SDK runs on, re-exported so a provider's `main` needs no other
/// dependency: `#[airunway_api::provider::tokio::main(crate = "airunway_api::provider::tokio")]`.
pub use tokio;

pub use args::ProviderArgs;
pub use metrics::ProviderMetrics;
pub use reconcile::ReconcileError;
pub use replica_count::{replica_count, sum_replicas};
pub use runner::{run, run_with_args};
pub use traits::{
    Preparation, Provider, RenderError, RenderWarning, Rendered, RenderedSet, SchemaDetection,
    TranslatedStatus, UpstreamController, UpstreamKind, UpstreamSchema,
};
