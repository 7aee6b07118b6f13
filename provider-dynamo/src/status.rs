//! DynamoGraphDeployment status → ModelDeployment status (pure), from what the Dynamo
//! operator really writes (`../shared/upstream-crds/status-samples/dgd-*.yaml`):
//!
//! | `status.state` | phase | message |
//! |---|---|---|
//! | `successful` | Running | — |
//! | `initializing`, `pending` | Deploying | the `Ready` condition message, if any |
//! | `failed` | Failed | the `Ready` condition message (the operator's error) |
//! | no status yet | Deploying | waiting for the operator |
//!
//! Replicas are summed over the worker services (`componentType: worker` in the spec; prefill +
//! decode when disaggregated): desired from `replicas`, ready from `readyReplicas`, available
//! from `availableReplicas` (or `readyReplicas` where the operator omits it). The endpoint is
//! the frontend Service `<name>-frontend`, port 8000.

use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::TranslatedStatus;
use airunway_api::serde_json::Value;
use airunway_api::v1alpha1::{EndpointStatus, ModelDeployment, Phase, ReplicaStatus};

use crate::render::FRONTEND_PORT;

fn ready_message(status: &Value) -> Option<String> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")
        .and_then(|c| c["message"].as_str())
        .filter(|m| !m.is_empty())
        .map(str::to_string)
}

fn worker_replicas(dgd: &Value) -> ReplicaStatus {
    let services = dgd["spec"]["services"].as_object();
    let workers: Vec<&String> = services
        .into_iter()
        .flatten()
        .filter(|(_, s)| s["componentType"] == "worker")
        .map(|(name, _)| name)
        .collect();
    let status_services = &dgd["status"]["services"];
    let sum = |field: &str, fallback: Option<&str>| -> i32 {
        workers
            .iter()
            .map(|name| {
                let s = &status_services[name.as_str()];
                s[field]
                    .as_i64()
                    .or_else(|| fallback.and_then(|f| s[f].as_i64()))
                    .unwrap_or(0) as i32
            })
            .sum()
    };
    let desired: i32 = workers
        .iter()
        .map(|name| {
            dgd["spec"]["services"][name.as_str()]["replicas"]
                .as_i64()
                .unwrap_or(1) as i32
        })
        .sum();
    ReplicaStatus {
        desired: Some(desired),
        ready: Some(sum("readyReplicas", None)),
        available: Some(sum("availableReplicas", Some("readyReplicas"))),
    }
}

/// Translates the DynamoGraphDeployment status.
pub fn translate(md: &ModelDeployment, dgd: Option<&DynamicObject>) -> TranslatedStatus {
    let name = md.metadata.name.clone().unwrap_or_default();
    let endpoint = Some(EndpointStatus {
        service: Some(format!("{name}-frontend")),
        port: Some(FRONTEND_PORT),
    });
    let Some(dgd) = dgd else {
        return TranslatedStatus {
            phase: Phase::Deploying,
            message: Some("Waiting for the DynamoGraphDeployment".into()),
            replicas: None,
            endpoint: None,
            ready: false,
        };
    };
    let data = &dgd.data;
    let status = &data["status"];
    let replicas = Some(worker_replicas(data));
    let result = |phase, message, ready| TranslatedStatus {
        phase,
        message,
        replicas: replicas.clone(),
        endpoint: endpoint.clone(),
        ready,
    };
    match status["state"].as_str() {
        Some("successful") => result(Phase::Running, None, true),
        Some("failed") => result(
            Phase::Failed,
            Some(
                ready_message(status)
                    .unwrap_or_else(|| "Dynamo reports the deployment failed".to_string()),
            ),
            false,
        ),
        Some(state @ ("pending" | "initializing")) => result(
            Phase::Deploying,
            Some(ready_message(status).unwrap_or_else(|| format!("Dynamo state: {state}"))),
            false,
        ),
        Some(other) => result(
            Phase::Deploying,
            Some(format!("Dynamo state: {other}")),
            false,
        ),
        None => result(
            Phase::Deploying,
            Some(format!(
                "Waiting for the Dynamo operator to reconcile DynamoGraphDeployment {name}"
            )),
            false,
        ),
    }
}
