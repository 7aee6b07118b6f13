//! Gateway integration: every `Running` deployment becomes reachable through the cluster's
//! inference gateway by its model name (docs/gateway.md).
//!
//! The integration is provider-neutral and lives beside the selection pipeline, not inside it:
//! - [`detect`]: whether the cluster serves `inferencepools` (`inference.networking.k8s.io/v1`),
//!   `httproutes` and `gateways` (`gateway.networking.k8s.io/v1`), from a watch on those three
//!   CustomResourceDefinitions (no restart when they appear or go).
//! - pure parts, which carry the tests: [`select`] (which Gateway), [`names`], [`allowed`]
//!   (the listeners' `allowedRoutes` arithmetic), [`model`] (the routed model name),
//!   [`render`] (InferencePool, endpoint picker stack, HTTPRoute), [`plan`] (what to do and the
//!   `GatewayReady` condition / `status.gateway` it implies, from the route's own status).
//! - [`reconcile`]: the thin shell that reads the watch caches, applies with server-side apply
//!   under [`airunway_api::constants::field_managers::CORE_GATEWAY`], patches a Gateway's
//!   listeners with optimistic locking, and cleans up.
//! - [`release`]: the namespaces whose allowance on a Gateway may have to be taken back because
//!   a deployment went away without a reconcile seeing it being deleted.
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
pub mod select;

pub use detect::{Detection, Detector};
pub use plan::DesiredGateway;
pub use reconcile::{GatewayConfig, Integration};
pub use release::GoneDeployments;

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
/// The default endpoint picker image (Gateway API Inference Extension v1.5.0).
pub const DEFAULT_EPP_IMAGE: &str = "registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0";

/// `GatewayReady` reasons.
pub mod reasons {
    /// True: pool and route exist and the Gateway accepted the route.
    pub const CONFIGURED: &str = "GatewayConfigured";
    /// False: the inference extension or Gateway API CRDs are not served (only when
    /// `spec.gateway.enabled: true`).
    pub const CRDS_NOT_AVAILABLE: &str = "CRDsNotAvailable";
    /// False: no Gateway, or several and none chosen.
    pub const NO_GATEWAY: &str = "NoGateway";
    /// False: `spec.gateway.enabled: false`.
    pub const DISABLED: &str = "GatewayDisabled";
    /// False: the deployment is not `Running`; nothing routes to it.
    pub const NOT_RUNNING: &str = "DeploymentNotRunning";
    /// False: the route exists; its Gateway has not reported on it yet.
    pub const ROUTE_PENDING: &str = "RoutePending";
    /// False: the user deleted the route AI Runway created; it is not recreated.
    pub const ROUTE_DELETED: &str = "HTTPRouteDeleted";
    /// False: `spec.gateway.httpRouteRef` names a route that does not exist.
    pub const ROUTE_NOT_FOUND: &str = "HTTPRouteNotFound";
    /// False: the provider manages the pool and has not created it yet.
    pub const POOL_NOT_FOUND: &str = "InferencePoolNotFound";
    /// False: no model name could be resolved.
    pub const NO_MODEL_NAME: &str = "ModelNameUnknown";
    /// False: the API server refused the pool.
    pub const POOL_FAILED: &str = "InferencePoolFailed";
    /// False: the API server refused an endpoint picker object.
    pub const EPP_FAILED: &str = "EPPFailed";
    /// False: the API server refused the route.
    pub const ROUTE_FAILED: &str = "HTTPRouteFailed";
    /// False: the Gateway's listeners could not be changed.
    pub const GATEWAY_PATCH_FAILED: &str = "GatewayPatchFailed";

    /// Reasons under which no gateway object of the deployment exists.
    pub const CLEAN: [&str; 4] = [DISABLED, NOT_RUNNING, CRDS_NOT_AVAILABLE, NO_GATEWAY];
}

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
