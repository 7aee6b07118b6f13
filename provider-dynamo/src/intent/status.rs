//! The deployment's status from its DynamoGraphDeploymentRequest (pure): the request's
//! `status.phase` says where Dynamo is — `Pending` and `Profiling` (with its
//! `profilingPhase`), `Ready` (a graph chosen), `Deploying` (the graph it created rolls out),
//! `Deployed` (it serves), `Failed` — and `status.dgdName` names the graph it created, whose
//! frontend Service serves the model.

use airunway_api::constants::annotations::dynamo::{ATTEMPT, INTENT_HASH};
use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::TranslatedStatus;
use airunway_api::serde_json::Value;
use airunway_api::v1alpha1::{
    EndpointStatus, NotReadyReason, NotReadySource, NotReadyStatus, Phase, ReplicaStatus,
};

use super::{GROUP, REQUEST_KIND, REQUEST_VERSION};
use crate::render::FRONTEND_PORT;

/// The message while the request waits for Dynamo (the Go AI Runway's).
pub const PENDING_MESSAGE: &str = "Dynamo deployment request is pending";
/// The message when the cluster has no DynamoGraphDeploymentRequest API (the Go AI Runway's).
pub const REQUEST_API_MISSING: &str =
    "DynamoGraphDeploymentRequest API is not installed; use direct mode or install DGDR support";

/// What the live request says about the intent (the Go AI Runway's
/// `status.provider.intent`, `requestRef` and `workloadRef` names).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestState {
    /// The request's name.
    pub request: String,
    /// The request's UID.
    pub request_uid: Option<String>,
    /// `status.phase` (`""`: not reported yet).
    pub phase: String,
    /// `status.profilingPhase`, while profiling.
    pub profiling_phase: String,
    /// The accepted input hash (`airunway.ai/dynamo-intent-hash`).
    pub input_hash: String,
    /// The accepted attempt (`airunway.ai/dynamo-attempt`).
    pub attempt: String,
    /// `status.dgdName`: the graph the request created.
    pub workload: Option<String>,
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or_default()
}

/// The state of `request`.
pub fn state(request: &DynamicObject) -> RequestState {
    let status = &request.data["status"];
    let annotation = |key: &str| {
        request
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .cloned()
            .unwrap_or_default()
    };
    RequestState {
        request: request.metadata.name.clone().unwrap_or_default(),
        request_uid: request.metadata.uid.clone(),
        phase: text(status, "phase").to_string(),
        profiling_phase: text(status, "profilingPhase").to_string(),
        input_hash: annotation(INTENT_HASH),
        attempt: annotation(ATTEMPT),
        workload: Some(text(status, "dgdName"))
            .filter(|n| !n.is_empty())
            .map(str::to_string),
    }
}

/// The message of the request's condition `type_`, if it has one.
fn condition_message(status: &Value, type_: &str) -> Option<String> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"].as_str() == Some(type_))
        .and_then(|c| c["message"].as_str())
        .filter(|m| !m.is_empty())
        .map(str::to_string)
}

/// Translates the request's status.
pub fn translate(request: Option<&DynamicObject>) -> TranslatedStatus {
    let in_progress = |message: String| TranslatedStatus {
        phase: Phase::Deploying,
        message: Some(message),
        replicas: None,
        endpoint: None,
        ready: false,
        not_ready: None,
    };
    let Some(request) = request else {
        return in_progress(format!("Waiting for the {REQUEST_KIND}"));
    };
    let status = &request.data["status"];
    let state = state(request);
    let from = NotReadySource::new(
        format!("{GROUP}/{REQUEST_VERSION}"),
        REQUEST_KIND,
        state.request.clone(),
    );
    let graph = state.workload.clone().unwrap_or_default();
    match state.phase.as_str() {
        "" | "Pending" => in_progress(PENDING_MESSAGE.into()),
        "Profiling" => in_progress(if state.profiling_phase.is_empty() {
            "Dynamo is profiling the model".into()
        } else {
            format!("Dynamo is profiling the model ({})", state.profiling_phase)
        }),
        "Ready" => in_progress("Dynamo profiled the model and chose a graph".into()),
        "Deploying" => in_progress(format!(
            "Dynamo is deploying the DynamoGraphDeployment {graph} it chose"
        )),
        "Deployed" => {
            let info = &status["deploymentInfo"];
            let count = |key: &str| info[key].as_i64().and_then(|n| i32::try_from(n).ok());
            let replicas = (info.is_object()).then(|| ReplicaStatus {
                desired: count("replicas"),
                ready: count("availableReplicas"),
                available: count("availableReplicas"),
            });
            TranslatedStatus {
                phase: Phase::Running,
                message: Some(format!(
                    "DynamoGraphDeployment {graph} created by {REQUEST_KIND} {} is ready",
                    state.request
                )),
                replicas,
                endpoint: state.workload.as_ref().map(|graph| EndpointStatus {
                    service: Some(format!("{graph}-frontend")),
                    port: Some(FRONTEND_PORT),
                }),
                ready: true,
                not_ready: None,
            }
        }
        "Failed" => {
            let message = condition_message(status, "Succeeded")
                .or_else(|| condition_message(status, "Profiling"))
                .unwrap_or_else(|| {
                    format!("Dynamo reports {REQUEST_KIND} {} failed", state.request)
                });
            TranslatedStatus {
                phase: Phase::Failed,
                message: Some(message.clone()),
                replicas: None,
                endpoint: None,
                ready: false,
                not_ready: Some(
                    NotReadyStatus::new(NotReadyReason::UpstreamReconcileError, message)
                        .from_object(from),
                ),
            }
        }
        other => in_progress(format!("{REQUEST_KIND} {} is {other}", state.request)),
    }
}
