//! The Prometheus metric names and label values every AI Runway binary exports (the contract
//! the dashboard and the alerts in `deploy/` read; docs/observability.md lists them with their
//! meaning).
//!
//! Names are as registered in a `prometheus_client` registry made with [`PREFIX`]: the
//! exposition reads `airunway_<name>`, and a counter gets the OpenMetrics `_total` suffix
//! (`webhook_requests` is exposed as `airunway_webhook_requests_total`).

/// The registry prefix of every metric.
pub const PREFIX: &str = "airunway";

/// Gauge `{namespace, phase}`: ModelDeployments by namespace and phase (core, from its cache).
pub const MODELDEPLOYMENT_TOTAL: &str = "modeldeployment_total";
/// Gauge `{name, namespace, phase}`: 1 for the current phase of each deployment (core).
pub const DEPLOYMENT_PHASE: &str = "deployment_phase";
/// Gauge `{name, namespace, state}`: each deployment's replicas by [`replica_states`] (core).
pub const MODELDEPLOYMENT_REPLICAS: &str = "modeldeployment_replicas";
/// Gauge `{provider, phase}`: deployments by provider and phase (core; the Go AI Runway's name).
pub const DEPLOYMENT_STATUS: &str = "deployment_status";
/// Gauge `{provider, state}`: replicas of all deployments summed by provider (core; Go's name).
pub const DEPLOYMENT_REPLICAS: &str = "deployment_replicas";
/// Histogram `{provider}`: time to reconcile one deployment (core and providers).
pub const RECONCILIATION_DURATION_SECONDS: &str = "reconciliation_duration_seconds";
/// Counter `{provider, error_type}`: failed reconciles (core and providers).
pub const RECONCILIATION_ERRORS: &str = "reconciliation_errors";
/// Counter `{provider, reason}`: providers written to `status.provider.name` (core).
pub const PROVIDER_SELECTION: &str = "provider_selection";
/// Counter `{provider}`: selection rules that failed to evaluate (core).
pub const SELECTION_RULE_ERRORS: &str = "selection_rule_errors";
/// Counter `{action, result}`: writes of the gateway integration (core).
pub const GATEWAY_ACTIONS: &str = "gateway_actions";
/// Histogram `{provider}`: a deployment's creation to its provider recorded in status (core).
pub const SELECTION_DURATION_SECONDS: &str = "selection_duration_seconds";
/// Counter `{provider, from_phase, to_phase}`: phase changes the core's watch saw.
pub const DEPLOYMENT_PHASE_TRANSITIONS: &str = "deployment_phase_transitions";
/// Histogram `{provider}`: a deployment's creation to its first observed `Running` (core).
pub const DEPLOYMENT_READY_DURATION_SECONDS: &str = "deployment_ready_duration_seconds";
/// Gauge `{provider}`: 1 when the core judges the provider's heartbeat stale, else 0.
pub const PROVIDER_STALE: &str = "provider_stale";
/// Gauge `{provider}`: seconds since the provider's last heartbeat (core: from the
/// registration's `status.lastHeartbeat`; provider: since its last successful heartbeat write).
pub const PROVIDER_HEARTBEAT_AGE_SECONDS: &str = "provider_heartbeat_age_seconds";
/// Counter `{webhook, operation, result}`: admission requests answered (core).
pub const WEBHOOK_REQUESTS: &str = "webhook_requests";
/// Histogram `{webhook, operation}`: time to answer one admission request (core).
pub const WEBHOOK_REQUEST_DURATION_SECONDS: &str = "webhook_request_duration_seconds";
/// Counter `{provider, kind, result}`: server-side applies of upstream objects (providers).
pub const UPSTREAM_APPLIES: &str = "upstream_applies";
/// Gauge `{provider, phase}`: the deployments a provider serves, by phase (providers).
pub const PROVIDER_DEPLOYMENTS: &str = "provider_deployments";

/// The `provider` label before a provider is decided.
pub const NO_PROVIDER: &str = "none";
/// The `phase` label of a deployment without a phase yet (`from_phase` of its first phase).
pub const NO_PHASE: &str = "Unknown";

/// Values of the `state` label of the replica gauges.
pub mod replica_states {
    /// `status.replicas.desired`.
    pub const DESIRED: &str = "desired";
    /// `status.replicas.ready`.
    pub const READY: &str = "ready";
    /// `status.replicas.available`.
    pub const AVAILABLE: &str = "available";
}

/// Values of the `reason` label of `provider_selection_total` (the Go AI Runway's).
pub mod selection_reasons {
    /// Named in `spec.provider.name`.
    pub const MANUAL: &str = "manual";
    /// Chosen by the selection.
    pub const AUTO: &str = "auto";
}

/// Values of the `webhook` label: the webhook's path without its slash.
pub mod webhooks {
    /// The defaulting webhook of ModelDeployments.
    pub const MUTATE_MODELDEPLOYMENT: &str = "mutate-modeldeployment";
    /// The validating webhook of ModelDeployments.
    pub const VALIDATE_MODELDEPLOYMENT: &str = "validate-modeldeployment";
    /// The validating webhook of InferenceProviderConfigs.
    pub const VALIDATE_INFERENCEPROVIDERCONFIG: &str = "validate-inferenceproviderconfig";
}

/// Values of the `result` label of `webhook_requests_total`.
pub mod webhook_results {
    /// The request was admitted.
    pub const ALLOWED: &str = "allowed";
    /// The request was denied (a validation or policy failure).
    pub const DENIED: &str = "denied";
    /// The AdmissionReview could not be read; the request was refused.
    pub const ERROR: &str = "error";
}

/// The `operation` label of an AdmissionReview that could not be read.
pub const UNKNOWN_OPERATION: &str = "UNKNOWN";

/// Values of the `result` label of `upstream_applies_total`.
pub mod apply_results {
    /// The object was written (created or updated) by server-side apply.
    pub const APPLIED: &str = "applied";
    /// The live object already matched; nothing was written.
    pub const UNCHANGED: &str = "unchanged";
    /// The API server refused the apply, or it failed.
    pub const ERROR: &str = "error";
}
