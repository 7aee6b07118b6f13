//! Gateway integration: every `Running` deployment becomes reachable through the cluster's
//! inference gateway by its model name (docs/gateway.md).
//!
//! The integration is provider-neutral and lives beside the selection pipeline, not inside it:
//! - [`detect`]: whether the cluster serves `inferencepools` (`inference.networking.k8s.io/v1`),
//!   `httproutes` and `gateways` (`gateway.networking.k8s.io/v1`), from a watch on those three
//!   CustomResourceDefinitions (no restart when they appear or go).
//! - pure parts, which carry the tests: [`select`] (which Gateway), [`names`], [`allowed`]
//!   (the listeners' `allowedRoutes` arithmetic), [`model`] (the routed model name),
//!   [`render`] (InferencePool, endpoint picker stack, HTTPRoute, the LoRA adapters'
//!   InferenceModelRewrite), [`plan`] (whether to route
//!   or clean, and the `GatewayReady` condition / `status.gateway` a route's own status
//!   implies), [`route`] (everything routing one deployment takes, decided in one function
//!   from what was read: the reads it needs, the listener change, the objects to apply with
//!   their bodies, the events and the status).
//! - [`reconcile`]: the shell that gathers what the route plan asks for (watch caches, the
//!   API server, the model server's `/v1/models`), applies with server-side apply under
//!   [`airunway_api::constants::field_managers::CORE_GATEWAY`], patches a Gateway's listeners
//!   with optimistic locking, publishes the events and cleans up.
//! - [`release`]: the namespaces whose allowance on a Gateway may have to be taken back because
//!   a deployment went away without a reconcile seeing it being deleted (and, per Gateway,
//!   which Gateways give it back).
//! - [`watches`]: metadata watches of the endpoint picker's objects other than its Deployment
//!   (restored at once when deleted) and of the HTTPRoutes users manage (`httpRouteRef`).
//!
//! Status: `status.gateway` and `GatewayReady` are the core's (ARCHITECTURE §3); they travel in
//! the core's one status apply (`crate::status`), so nothing is written when nothing changed.

pub mod allowed;
pub mod detect;
pub mod discover;
pub mod model;
pub mod names;
pub mod plan;
pub mod reconcile;
pub mod release;
pub mod render;
pub mod route;
pub mod select;
pub mod watches;

pub use detect::{Detection, Detector};
pub use plan::DesiredGateway;
pub use reconcile::Integration;
pub use release::GoneDeployments;
pub use route::GatewayConfig;

/// The Gateway label that marks the inference gateway when a cluster has several.
pub const INFERENCE_GATEWAY_LABEL: &str = "airunway.ai/inference-gateway";

/// Gateway annotation: the namespaces AI Runway added to the listeners' `allowedRoutes`
/// (comma-separated), so it removes only what it added.
pub const ALLOWED_NAMESPACES_ANNOTATION: &str = "airunway.ai/allowed-route-namespaces";

/// Annotation on the pool and route: hash of the inputs they were rendered from (an unchanged
/// hash means nothing to apply).
pub const INPUTS_HASH_ANNOTATION: &str = "airunway.ai/gateway-inputs-hash";

/// The header the route matches the model name on (the inference extension's body-based
/// router sets it from the request's `model` field).
pub const MODEL_NAME_HEADER: &str = "X-Gateway-Model-Name";

/// The route's request timeout (long generations).
pub const REQUEST_TIMEOUT: &str = "300s";

/// The endpoint picker's gRPC (ext-proc) port.
pub const EPP_PORT: i32 = 9002;
/// The endpoint picker's gRPC health port.
pub const EPP_HEALTH_PORT: i32 = 9003;
/// The endpoint picker's Prometheus metrics port (its default, `--metrics-port`).
pub const EPP_METRICS_PORT: i32 = 9090;
/// The default endpoint picker image (Gateway API Inference Extension v1.5.0).
pub const DEFAULT_EPP_IMAGE: &str = "registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0";

/// `GatewayReady` reasons (named in `airunway-api`'s constants with every other observable
/// name).
pub use airunway_api::constants::reasons::gateway as reasons;

/// Errors of the gateway layer.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The API server refused a request.
    #[error("{action} {object}: {source}")]
    Api {
        /// What was attempted (`apply InferencePool`, `delete HTTPRoute`, ...).
        action: String,
        /// `<namespace>/<name>`.
        object: String,
        /// The error.
        #[source]
        source: kube::Error,
    },
    /// A Gateway kept changing under the listener update.
    #[error("Gateway {object} changed {attempts} times while its listeners were updated")]
    Conflict {
        /// `<namespace>/<name>`.
        object: String,
        /// Attempts made.
        attempts: u32,
    },
    /// Something read from the cluster is not what the API promises.
    #[error("{object}: {message}")]
    Invalid {
        /// The object.
        object: String,
        /// What is wrong.
        message: String,
    },
}

impl GatewayError {
    /// A static label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            GatewayError::Api { .. } => "gateway_api",
            GatewayError::Conflict { .. } => "gateway_conflict",
            GatewayError::Invalid { .. } => "gateway_invalid",
        }
    }
}
