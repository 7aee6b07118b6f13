//! KAITO Workspace status → ModelDeployment status (pure), from what KAITO v0.10 really
//! writes (`../shared/upstream-crds/status-samples/workspace-*.yaml`):
//!
//! | Workspace | phase | message |
//! |---|---|---|
//! | `WorkspaceSucceeded=True` (state `Ready`) | Running | — |
//! | `WorkspaceSucceeded=False`, reason `workspaceFailed` (state `Failed`, fine-tuning) | Failed | the condition message |
//! | a condition message ending in `(last reconcile error: <e>)` | Deploying | `KAITO reconcile error: <e>` (KAITO retries; not terminal) |
//! | a False `NodesReady`/`ResourceReady`/`InferenceReady` | Deploying | that condition's message |
//! | no status yet | Deploying | waiting for KAITO |
//!
//! Replicas, from the Workspace as the Go AI Runway reports them: desired = `resource.count`
//! (else `status.targetNodeCount`, else `scaling.replicas`); ready and available = desired when
//! the Workspace is Ready (`status.state` `Ready`/`Succeeded`, or `WorkspaceSucceeded=True`),
//! else 0. A Workspace in state `Ready` counts as Running even before its conditions are
//! written. Endpoint: Service `<workspace>` port 80.

use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::{TranslatedStatus, replica_count};
use airunway_api::serde_json::Value;
use airunway_api::v1alpha1::{EndpointStatus, ModelDeployment, Phase, ReplicaStatus};

/// The Service port KAITO exposes for a Workspace.
pub const SERVICE_PORT: i32 = 80;

const ERROR_MARKER: &str = "(last reconcile error: ";

fn condition<'a>(status: &'a Value, type_: &str) -> Option<&'a Value> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

fn is_true(condition: Option<&Value>) -> bool {
    condition.is_some_and(|c| c["status"] == "True")
}

/// The reconcile error KAITO appends to its condition messages, if any.
pub fn reconcile_error(status: &Value) -> Option<String> {
    status["conditions"].as_array()?.iter().find_map(|c| {
        let message = c["message"].as_str()?;
        let start = message.find(ERROR_MARKER)? + ERROR_MARKER.len();
        let error = message[start..]
            .strip_suffix(')')
            .unwrap_or(&message[start..]);
        Some(error.to_string())
    })
}

/// Translates the Workspace status.
pub fn translate(md: &ModelDeployment, workspace: Option<&DynamicObject>) -> TranslatedStatus {
    let name = md.metadata.name.clone().unwrap_or_default();
    let endpoint = Some(EndpointStatus {
        service: Some(name.clone()),
        port: Some(SERVICE_PORT),
    });
    let Some(workspace) = workspace else {
        return TranslatedStatus {
            phase: Phase::Deploying,
            message: Some("Waiting for the Workspace".into()),
            replicas: None,
            endpoint: None,
            ready: false,
            not_ready: None,
        };
    };
    let status = &workspace.data["status"];
    let desired = replica_count(&workspace.data["resource"]["count"])
        .or_else(|| replica_count(&status["targetNodeCount"]))
        .unwrap_or_else(|| md.spec.replicas());
    let workspace_ready = matches!(status["state"].as_str(), Some("Ready" | "Succeeded"))
        || is_true(condition(status, "WorkspaceSucceeded"));
    let ready_count = if workspace_ready { desired } else { 0 };
    let replicas = Some(ReplicaStatus {
        desired: Some(desired),
        ready: Some(ready_count),
        available: Some(ready_count),
    });
    let result = |phase, message: Option<String>, ready| TranslatedStatus {
        phase,
        message,
        replicas: replicas.clone(),
        endpoint: endpoint.clone(),
        ready,
        not_ready: None,
    };

    if workspace_ready {
        return result(Phase::Running, None, true);
    }
    // `state: Failed` is terminal with or without conditions (as the Go AI Runway).
    if status["state"] == "Failed" {
        let message = condition(status, "WorkspaceSucceeded")
            .and_then(|c| c["message"].as_str())
            .filter(|m| !m.is_empty())
            .map_or_else(
                || format!("KAITO reports Workspace {name} failed"),
                str::to_string,
            );
        return result(Phase::Failed, Some(message), false);
    }
    if status.is_null() || status["conditions"].as_array().is_none_or(Vec::is_empty) {
        return result(
            Phase::Deploying,
            Some(format!("Waiting for KAITO to reconcile Workspace {name}")),
            false,
        );
    }
    let succeeded = condition(status, "WorkspaceSucceeded");
    if let Some(failed) = succeeded.filter(|c| c["reason"] == "workspaceFailed") {
        return result(
            Phase::Failed,
            failed["message"].as_str().map(str::to_string),
            false,
        );
    }
    if let Some(error) = reconcile_error(status) {
        return result(
            Phase::Deploying,
            Some(format!("KAITO reconcile error: {error}")),
            false,
        );
    }
    let waiting = [
        "NodesReady",
        "NodeClaimReady",
        "ResourceReady",
        "InferenceReady",
        "WorkspaceSucceeded",
    ]
    .iter()
    .filter_map(|t| condition(status, t))
    .find(|c| c["status"] != "True")
    .and_then(|c| c["message"].as_str())
    .map(str::to_string);
    result(Phase::Deploying, waiting, false)
}
