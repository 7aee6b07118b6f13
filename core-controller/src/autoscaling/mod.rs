//! Autoscaling (docs/autoscaling.md): the autoscaler of a deployment with
//! `spec.scaling.autoscaling`, targeting its scale subresource.
//!
//! Laid out like the model cache, decisions pure and I/O beside them:
//! - [`metrics`] (pure): the metric table, per named metric and per engine the PromQL query and
//!   how its value is read.
//! - [`render`] (pure): the KEDA `ScaledObject` and the `HorizontalPodAutoscaler`.
//! - [`plan`] (pure): what one deployment needs (apply, replace, delete) and the status its
//!   autoscaler's own status implies (`status.autoscaling`, `ScalingReady`, `ScalingActive`).
//! - [`reconcile`]: the shell: whether KEDA's CRD is served (a watch, as for the gateway CRDs),
//!   the watches on the autoscalers (a change in their status re-reconciles their deployment),
//!   server-side apply under [`airunway_api::constants::field_managers::CORE_AUTOSCALING`],
//!   deletion and events.

pub mod metrics;
pub mod plan;
pub mod reconcile;
pub mod render;

use airunway_api::kube_error::ErrorClass;

pub use plan::DesiredAutoscaling;
pub use reconcile::Integration;

/// The Prometheus the autoscaler reads when `--autoscaling-prometheus-address` is not given.
pub const DEFAULT_PROMETHEUS_ADDRESS: &str = "http://prometheus.monitoring.svc:9090";
/// KEDA's `pollingInterval` when `pollingSeconds` is not given (KEDA's default).
pub const DEFAULT_POLLING_SECONDS: i32 = 30;
/// KEDA's `cooldownPeriod` when `cooldownSeconds` is not given (KEDA's default).
pub const DEFAULT_COOLDOWN_SECONDS: i32 = 300;

/// KEDA's ScaledObject CRD.
pub const SCALED_OBJECTS_CRD: &str = "scaledobjects.keda.sh";
/// KEDA's API group.
pub const KEDA_GROUP: &str = "keda.sh";
/// The ScaledObject version the core writes.
pub const KEDA_VERSION: &str = "v1alpha1";
/// `keda.sh/v1alpha1`.
pub const KEDA_API_VERSION: &str = "keda.sh/v1alpha1";
/// The ScaledObject kind.
pub const SCALED_OBJECT_KIND: &str = "ScaledObject";
/// `autoscaling/v2`.
pub const HPA_API_VERSION: &str = "autoscaling/v2";
/// The HorizontalPodAutoscaler kind.
pub const HPA_KIND: &str = "HorizontalPodAutoscaler";

/// The options of autoscaling, from the core's flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoscalingConfig {
    /// The Prometheus KEDA's triggers query (`--autoscaling-prometheus-address`).
    pub prometheus_address: String,
}

impl Default for AutoscalingConfig {
    fn default() -> Self {
        AutoscalingConfig {
            prometheus_address: DEFAULT_PROMETHEUS_ADDRESS.to_string(),
        }
    }
}

/// Errors of the autoscaling layer.
#[derive(Debug, thiserror::Error)]
pub enum AutoscalingError {
    /// The API server refused a request.
    #[error("{action} {object}: {source}")]
    Api {
        /// What was attempted (`apply ScaledObject`, `delete HorizontalPodAutoscaler`).
        action: String,
        /// `<namespace>/<name>`.
        object: String,
        /// The error.
        #[source]
        source: kube::Error,
    },
}

impl AutoscalingError {
    /// A static label for metrics and logs.
    pub fn category(&self) -> &'static str {
        match self {
            AutoscalingError::Api { source, .. } => ErrorClass::of(source).category(),
        }
    }
}
