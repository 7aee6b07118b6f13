//! KAITO Workspace status → ModelDeployment status (pure), from what KAITO v0.10.0 really
//! writes (`pkg/workspace/controllers/workspace_controller.go`, `syncWorkspaceStatus`; the
//! samples in `e2e/fixtures/status-samples/workspace-*.yaml`):
//!
//! | Workspace | phase | message |
//! |---|---|---|
//! | `WorkspaceSucceeded=True` (state `Ready`) | Running | — |
//! | `WorkspaceSucceeded=False`, reason `workspaceFailed` (state `Failed`, fine-tuning) | Failed | the condition message |
//! | a condition message ending in `(last reconcile error: <e>)` | Deploying | `KAITO reconcile error: <e>` (KAITO retries; not terminal) |
//! | a False `NodesReady`/`ResourceReady`/`InferenceReady` | Deploying | that condition's message |
//! | no status yet | Deploying | waiting for KAITO |
//!
//! Why it is not ready (`TranslatedStatus::not_ready`, read from the Workspace; docs/providers/kaito.md
//! "Not-ready reasons" has the table): KAITO behind a new generation → `Updating` (phase
//! `Running` while the previous version is Ready); `NodeClaimReady=False` or
//! `NodesReady=False` `NodeNotReady` → `InsufficientCapacity` naming the nodes it waits for;
//! a reconcile error → `ModelAuthFailed`, `ModelDownloadFailed`, `QuotaExceeded` when its text
//! says so, else `UpstreamReconcileError`; a failed Workspace → `Unclassified`; a Workspace
//! that lost readiness → `Unclassified` (or `Updating` while the update that caused it rolls);
//! anything else not ready → `DeploymentInProgress` (the pods may tell more).
//!
//! Replicas, from the Workspace as the Go AI Runway reports them: desired = `resource.count`
//! (else `status.targetNodeCount`, else `scaling.replicas`); ready and available = desired when
//! the Workspace is Ready (`status.state` `Ready`/`Succeeded`, or `WorkspaceSucceeded=True`),
//! else 0. A Workspace in state `Ready` counts as Running even before its conditions are
//! written. Endpoint: Service `<workspace>` port 80.

use airunway_api::constants::condition_types;
use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::{TranslatedStatus, replica_count};
use airunway_api::serde_json::Value;
use airunway_api::v1alpha1::{
    ConditionStatus, EndpointStatus, ModelDeployment, NotReadyReason, NotReadySource,
    NotReadyStatus, Phase, ReplicaStatus,
};

/// The Service port KAITO exposes for a Workspace.
pub const SERVICE_PORT: i32 = 80;

const ERROR_MARKER: &str = "(last reconcile error: ";

/// Texts of KAITO's preset generator (`presets/workspace/generator/generator.go`) when Hugging
/// Face refuses the model's metadata: no token (`authentication required for accessing <url>`)
/// or a token refused (`failed to fetch <url>: status 401`/`403`).
const AUTH_ERRORS: [&str; 3] = [
    "authentication required for accessing",
    ": status 401",
    ": status 403",
];

/// The same generator failing to read the model's files or config from Hugging Face
/// (`error listing files: ...`, `error fetching config: ...`).
const DOWNLOAD_ERRORS: [&str; 2] = ["error listing files:", "error fetching config:"];

/// A ResourceQuota refusing an object KAITO creates (the API server's `exceeded quota`).
const QUOTA_ERROR: &str = "exceeded quota";

fn condition<'a>(status: &'a Value, type_: &str) -> Option<&'a Value> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

fn is_true(condition: Option<&Value>) -> bool {
    condition.is_some_and(|c| c["status"] == "True")
}

fn is_false(condition: Option<&Value>) -> bool {
    condition.is_some_and(|c| c["status"] == "False")
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

/// The reason a KAITO reconcile error maps to: the model's credentials refused, the model's
/// files unreadable, a quota, else the operator's own error.
pub fn reconcile_error_reason(error: &str) -> NotReadyReason {
    if AUTH_ERRORS.iter().any(|p| error.contains(p)) {
        NotReadyReason::ModelAuthFailed
    } else if DOWNLOAD_ERRORS.iter().any(|p| error.contains(p)) {
        NotReadyReason::ModelDownloadFailed
    } else if error.contains(QUOTA_ERROR) {
        NotReadyReason::QuotaExceeded
    } else {
        NotReadyReason::UpstreamReconcileError
    }
}

/// The generation KAITO last reported on: `status.observedGeneration`, else the newest of its
/// conditions' (KAITO v0.10 writes it per condition).
fn observed_generation(status: &Value) -> Option<i64> {
    status["observedGeneration"].as_i64().or_else(|| {
        status["conditions"]
            .as_array()?
            .iter()
            .filter_map(|c| c["observedGeneration"].as_i64())
            .max()
    })
}

/// The Workspace as the source of a not-ready reason.
fn source(workspace: &DynamicObject) -> NotReadySource {
    NotReadySource::new(
        workspace
            .types
            .as_ref()
            .map_or("kaito.sh/v1beta1", |t| t.api_version.as_str()),
        "Workspace",
        workspace.metadata.name.clone().unwrap_or_default(),
    )
}

/// What the Workspace waits for when its nodes are missing: `InsufficientCapacity` naming the
/// nodes (count, instance type, label selector) KAITO looks for.
fn missing_nodes(workspace: &DynamicObject, kaito_message: &str) -> String {
    let status = &workspace.data["status"];
    let resource = &workspace.data["resource"];
    let target = replica_count(&status["targetNodeCount"])
        .or_else(|| replica_count(&resource["count"]))
        .unwrap_or(1);
    let instance_type = resource["instanceType"]
        .as_str()
        .filter(|t| !t.is_empty())
        .map(|t| format!(" of instance type {t}"))
        .unwrap_or_default();
    let selector = resource["labelSelector"]["matchLabels"]
        .as_object()
        .map(|labels| {
            labels
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .filter(|s| !s.is_empty())
        .map(|s| format!(" matching {s}"))
        .unwrap_or_default();
    let matching = status["workerNodes"].as_array().map_or(0, Vec::len);
    format!(
        "KAITO: {kaito_message}: Workspace {} needs {target} ready node(s){instance_type}{selector}; {matching} node(s) match",
        workspace.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Whether the deployment already shows `Updating` for a not-ready state: the update KAITO was
/// handed is still rolling (KAITO's own status cannot tell an update from a lost pod).
fn updating_shown(md: &ModelDeployment) -> bool {
    md.condition(condition_types::READY).is_some_and(|c| {
        c.status == ConditionStatus::False
            && c.reason.as_deref() == Some(NotReadyReason::Updating.as_str())
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
    let from = source(workspace);
    let result = |phase, message: Option<String>, not_ready: Option<(NotReadyReason, String)>| {
        TranslatedStatus {
            phase,
            ready: phase == Phase::Running && not_ready.is_none(),
            message,
            replicas: replicas.clone(),
            endpoint: endpoint.clone(),
            not_ready: not_ready
                .map(|(reason, text)| NotReadyStatus::new(reason, text).from_object(from.clone())),
        }
    };

    // KAITO has not reported on the Workspace as last applied: whatever it shows is about the
    // previous spec, so the deployment is not ready for this one (the previous version keeps
    // serving while it was Ready).
    let generation = workspace.metadata.generation;
    let observed = observed_generation(status);
    if let (Some(generation), Some(observed)) = (generation, observed)
        && observed < generation
        && status["state"] != "Failed"
    {
        let (phase, serving) = if workspace_ready {
            (Phase::Running, "; the previous version keeps serving")
        } else {
            (Phase::Deploying, "")
        };
        return result(
            phase,
            Some(format!(
                "Updating: KAITO has not acted on Workspace {} generation {generation} yet (it reports generation {observed}){serving}",
                from.name
            )),
            Some((
                NotReadyReason::Updating,
                format!(
                    "KAITO has not acted on Workspace {} generation {generation} yet (it reports generation {observed}){serving}",
                    from.name
                ),
            )),
        );
    }
    if workspace_ready {
        return result(Phase::Running, None, None);
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
        let not_ready = (NotReadyReason::Unclassified, message.clone());
        return result(Phase::Failed, Some(message), Some(not_ready));
    }
    if status.is_null() || status["conditions"].as_array().is_none_or(Vec::is_empty) {
        return result(
            Phase::Deploying,
            Some(format!("Waiting for KAITO to reconcile Workspace {name}")),
            None,
        );
    }
    let succeeded = condition(status, "WorkspaceSucceeded");
    if let Some(failed) = succeeded.filter(|c| c["reason"] == "workspaceFailed") {
        let message = failed["message"].as_str().map(str::to_string);
        let not_ready = (
            NotReadyReason::Unclassified,
            message
                .clone()
                .unwrap_or_else(|| format!("KAITO reports Workspace {name} failed")),
        );
        return result(Phase::Failed, message, Some(not_ready));
    }
    if let Some(error) = reconcile_error(status) {
        let message = format!("KAITO reconcile error: {error}");
        let not_ready = (reconcile_error_reason(&error), message.clone());
        return result(Phase::Deploying, Some(message), Some(not_ready));
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
    // Nodes: KAITO waits for node claims (node auto-provisioning) or for enough ready nodes
    // matching the Workspace's selector; no node, no capacity for the workload.
    let node_claims = condition(status, "NodeClaimReady");
    let nodes = condition(status, "NodesReady");
    let missing = if is_false(node_claims) {
        node_claims
    } else {
        nodes.filter(|c| c["status"] == "False" && c["reason"] == "NodeNotReady")
    };
    if let Some(missing) = missing {
        let kaito_message = missing["message"].as_str().unwrap_or("nodes are not ready");
        let not_ready = (
            NotReadyReason::InsufficientCapacity,
            missing_nodes(workspace, kaito_message),
        );
        return result(Phase::Deploying, waiting, Some(not_ready));
    }
    let text = waiting
        .clone()
        .unwrap_or_else(|| format!("Waiting for KAITO Workspace {name} to become ready"));
    let reason = if updating_shown(md) {
        NotReadyReason::Updating
    } else if status["state"] == "NotReady" {
        // It was Ready and lost readiness; KAITO does not say why.
        NotReadyReason::Unclassified
    } else {
        NotReadyReason::InProgress
    };
    let text = if reason == NotReadyReason::Unclassified {
        format!("KAITO reports Workspace {name} no longer ready: {text}")
    } else {
        text
    };
    result(Phase::Deploying, waiting, Some((reason, text)))
}
