//! Intent mode (pure): `provider.overrides.deploymentMode: intent` states hardware, workload
//! and latency targets instead of a topology, and Dynamo's DynamoGraphDeploymentRequest (DGDR)
//! profiles the model, chooses the topology and creates the DynamoGraphDeployment itself
//! (`autoApply: true`).
//!
//! - [`spec`]: the typed `intent` block and every refused combination, in the Go AI Runway's
//!   words (`controller/pkg/dynamointent`).
//! - [`attempt`]: the input hash, the attempt token and the request name derived from it, and
//!   the rule that locks the inputs while Dynamo profiles or serves them.
//! - [`request`]: the DGDR.
//! - [`status`]: the deployment's status from the DGDR's: profiling → deploying → running.

pub mod attempt;
pub mod prepare;
pub mod request;
pub mod spec;
pub mod status;

use airunway_api::serde_json::{Map, Value};
use airunway_api::v1alpha1::ModelDeployment;

/// The override key choosing the deployment mode.
pub const DEPLOYMENT_MODE: &str = "deploymentMode";
/// [`DEPLOYMENT_MODE`] for a rendered graph (the default).
pub const MODE_MANUAL: &str = "manual";
/// [`DEPLOYMENT_MODE`] for a profiled request.
pub const MODE_INTENT: &str = "intent";
/// The override key holding the typed intent.
pub const INTENT: &str = "intent";

/// The API group of Dynamo's kinds.
pub const GROUP: &str = "nvidia.com";
/// The DGDR kind.
pub const REQUEST_KIND: &str = "DynamoGraphDeploymentRequest";
/// The DGDR's plural resource name.
pub const REQUEST_PLURAL: &str = "dynamographdeploymentrequests";
/// The DGDR version rendered (served by Dynamo 1.1 and 1.5 alike, whatever the DGD's).
pub const REQUEST_VERSION: &str = "v1beta1";

/// Why an intent deployment is refused, or cannot go on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IntentError {
    /// A combination intent mode refuses (the Go AI Runway's message).
    #[error("{0}")]
    Refused(&'static str),
    /// The `intent` block does not decode.
    #[error("invalid Dynamo intent: {0}")]
    Malformed(String),
    /// An override value intent mode cannot take.
    #[error("{0}")]
    InvalidOverride(String),
    /// The inputs changed while Dynamo profiles or serves them under the same attempt.
    #[error(
        "Dynamo profiling inputs are locked; change the airunway.ai/dynamo-attempt annotation to explicitly reconfigure"
    )]
    Locked,
}

impl IntentError {
    /// A stable name for metrics and logs.
    pub fn category(&self) -> &'static str {
        match self {
            IntentError::Refused(_) => "intent_refused",
            IntentError::Malformed(_) => "intent_malformed",
            IntentError::InvalidOverride(_) => "intent_invalid_override",
            IntentError::Locked => "intent_locked",
        }
    }
}

/// The deployment's `provider.overrides`, if any.
pub fn overrides(md: &ModelDeployment) -> Option<&Map<String, Value>> {
    md.spec.provider.as_ref().and_then(|p| p.overrides.as_ref())
}

/// Whether `md` asks for intent mode (`deploymentMode: intent`).
pub fn is_intent(md: &ModelDeployment) -> bool {
    overrides(md)
        .and_then(|o| o.get(DEPLOYMENT_MODE))
        .and_then(Value::as_str)
        == Some(MODE_INTENT)
}

/// Whether `md` is handled by intent mode: `deploymentMode: intent`, or an `intent` block
/// (refused without the mode, see [`spec::parse`]).
pub fn applies(md: &ModelDeployment) -> bool {
    is_intent(md) || overrides(md).is_some_and(|o| o.contains_key(INTENT))
}

#[cfg(test)]
mod tests;
