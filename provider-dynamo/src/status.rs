//! DynamoGraphDeployment status → ModelDeployment status (pure), from what the Dynamo
//! operator really writes (`deploy/operator/internal/controller/dynamographdeployment_controller.go`,
//! the Reconcile defer; `e2e/fixtures/status-samples/dgd-*.yaml`):
//!
//! | `status.state` | phase | message |
//! |---|---|---|
//! | `successful` | Running | — |
//! | `initializing`, `pending` | Deploying | the `Ready` condition message, if any |
//! | `failed` | Failed | the `Ready` condition message (the operator's error) |
//! | no status yet | Deploying | waiting for the operator |
//!
//! Why it is not ready (`TranslatedStatus::not_ready`, read from the DGD; docs/providers/dynamo.md
//! "Not-ready reasons" has the table): `failed` → `UpstreamReconcileError` (or
//! `QuotaExceeded` when the error says `exceeded quota`; `RolloutStalled`, phase `Running`,
//! for `rolling_update_failed` while every service still has a ready replica); a new generation
//! the operator has not reported on (`status.observedGeneration` behind), a managed rolling
//! update (`rolling_update_in_progress`, `status.rollingUpdate`), or a service with fewer
//! `updatedReplicas` than `replicas` → `Updating`, even when the state says `successful` (the
//! operator calls a Deployment in mid-rollout ready; phase `Running` while every service keeps
//! a ready replica); `pending` → `DeploymentInProgress`.
//!
//! Dynamo 1.1 reports its services in `status.services`; Dynamo ≥ 1.5 the same entries as
//! `status.components` (in both versions); the spec's are `spec.services` on `v1alpha1` and
//! `spec.components[]` on `v1beta1` ([`crate::workload::reported`],
//! [`crate::workload::spec_components`]).
//!
//! Replicas are summed over every service in `status.services` (frontend and workers, as the Go
//! AI Runway does): desired from `replicas`, ready from `readyReplicas` (or `availableReplicas`
//! where the operator omits it, PodCliqueScalingGroup), available from `availableReplicas` (or
//! `readyReplicas`, PodClique). Before the operator reports services (or after a failed
//! reconcile cleared them), desired is the sum of the spec's service replicas and ready 0. A
//! pending deployment without a `Ready` message gets one summed from every service:
//! `<ready>/<desired> replicas ready (Frontend 1/1, VllmWorker 0/1)`. The endpoint is the
//! frontend Service `<name>-frontend`, port 8000.

use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::{TranslatedStatus, replica_count, sum_replicas};
use airunway_api::serde_json::Value;
use airunway_api::v1alpha1::{
    EndpointStatus, ModelDeployment, NotReadyReason, NotReadySource, NotReadyStatus, Phase,
    ReplicaStatus,
};

use crate::render::FRONTEND_PORT;
use crate::workload::{reported, spec_components};

fn ready_message(status: &Value) -> Option<String> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")
        .and_then(|c| c["message"].as_str())
        .filter(|m| !m.is_empty())
        .map(str::to_string)
}

/// The services to count: those in `status.services` (the operator's view), else (before the
/// operator reported any, or after a failed reconcile cleared them) those in the spec.
fn replicas(dgd: &Value) -> (ReplicaStatus, Vec<String>) {
    let reported = reported(&dgd["status"]).filter(|s| !s.is_empty());
    let Some(reported) = reported else {
        let mut counts = ReplicaStatus {
            desired: None,
            ready: Some(0),
            available: Some(0),
        };
        let desired = sum_replicas(
            spec_components(dgd)
                .into_iter()
                .map(|(_, s)| replica_count(&s["replicas"]).unwrap_or(1)),
        );
        counts.desired = Some(desired);
        top_level_counts(&dgd["status"], &mut counts);
        return (counts, Vec::new());
    };
    let count = |s: &Value, field: &str, fallback: &str| -> i32 {
        replica_count(&s[field])
            .or_else(|| replica_count(&s[fallback]))
            .unwrap_or(0)
    };
    let mut status = ReplicaStatus {
        desired: Some(0),
        ready: Some(0),
        available: Some(0),
    };
    let mut summary = Vec::new();
    for (name, service) in reported {
        let desired = replica_count(&service["replicas"]).unwrap_or(0);
        // PodClique reports no availableReplicas, PodCliqueScalingGroup no readyReplicas.
        let ready = count(service, "readyReplicas", "availableReplicas");
        let available = count(service, "availableReplicas", "readyReplicas");
        status.desired = status.desired.map(|d| d.saturating_add(desired));
        status.ready = status.ready.map(|r| r.saturating_add(ready));
        status.available = status.available.map(|a| a.saturating_add(available));
        summary.push(format!("{name} {ready}/{desired}"));
    }
    top_level_counts(&dgd["status"], &mut status);
    (status, summary)
}

/// Top-level `status.desiredReplicas`/`readyReplicas`/`availableReplicas`, when an operator
/// writes them, win over the per-service sums (as the Go AI Runway reads them).
fn top_level_counts(status: &Value, counts: &mut ReplicaStatus) {
    for (field, slot) in [
        ("desiredReplicas", &mut counts.desired),
        ("readyReplicas", &mut counts.ready),
        ("availableReplicas", &mut counts.available),
    ] {
        if let Some(count) = replica_count(&status[field]) {
            *slot = Some(count);
        }
    }
}

/// The `Ready` condition's reason the operator writes when a managed rolling update failed.
pub const ROLLING_UPDATE_FAILED: &str = "rolling_update_failed";
/// The `Ready` condition's reason while a managed rolling update is under way.
pub const ROLLING_UPDATE_IN_PROGRESS: &str = "rolling_update_in_progress";

/// A ResourceQuota refusing an object the operator creates (the API server's words).
const QUOTA_ERROR: &str = "exceeded quota";

fn ready_reason(status: &Value) -> Option<&str> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")
        .and_then(|c| c["reason"].as_str())
}

/// One service as the operator reports it in `status.services`.
struct Service<'a> {
    name: &'a str,
    replicas: i32,
    updated: Option<i32>,
    ready: i32,
}

fn services(status: &Value) -> Vec<Service<'_>> {
    reported(status)
        .into_iter()
        .flatten()
        .map(|(name, s)| Service {
            name,
            replicas: replica_count(&s["replicas"]).unwrap_or(0),
            updated: replica_count(&s["updatedReplicas"]),
            ready: replica_count(&s["readyReplicas"])
                .or_else(|| replica_count(&s["availableReplicas"]))
                .unwrap_or(0),
        })
        .collect()
}

/// Services some of whose replicas run an older revision: `<name> <updated>/<replicas> updated`.
fn rolling(services: &[Service<'_>]) -> Vec<String> {
    services
        .iter()
        .filter_map(|s| {
            s.updated
                .filter(|u| *u < s.replicas)
                .map(|u| format!("{} {u}/{} updated", s.name, s.replicas))
        })
        .collect()
}

/// Whether every service reported keeps a ready replica (the previous version still serves).
fn serving(services: &[Service<'_>]) -> bool {
    !services.is_empty() && services.iter().all(|s| s.ready > 0)
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
            not_ready: None,
        };
    };
    let data = &dgd.data;
    let status = &data["status"];
    let (counted, summary) = replicas(data);
    let progress = (!summary.is_empty()).then(|| {
        format!(
            "{}/{} replicas ready ({})",
            counted.ready.unwrap_or(0),
            counted.desired.unwrap_or(0),
            summary.join(", ")
        )
    });
    let replicas = Some(counted);
    let from = NotReadySource::new(
        dgd.types
            .as_ref()
            .map_or("nvidia.com/v1alpha1", |t| t.api_version.as_str()),
        "DynamoGraphDeployment",
        dgd.metadata.name.clone().unwrap_or_default(),
    );
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
    let services = services(status);
    let serving = serving(&services);
    let state = status["state"].as_str();

    if state == Some("failed") {
        let message = ready_message(status)
            .unwrap_or_else(|| "Dynamo reports the deployment failed".to_string());
        if ready_reason(status) == Some(ROLLING_UPDATE_FAILED) && serving {
            let text = format!(
                "Dynamo's rolling update of DynamoGraphDeployment {} failed ({message}); the previous version keeps serving",
                from.name
            );
            return result(
                Phase::Running,
                Some(text.clone()),
                Some((NotReadyReason::RolloutStalled, text)),
            );
        }
        let reason = if ready_reason(status) == Some(ROLLING_UPDATE_FAILED) {
            NotReadyReason::RolloutStalled
        } else if message.contains(QUOTA_ERROR) {
            NotReadyReason::QuotaExceeded
        } else {
            NotReadyReason::UpstreamReconcileError
        };
        return result(
            Phase::Failed,
            Some(message.clone()),
            Some((reason, message)),
        );
    }

    // Not ready for this generation: the operator has not reported on it, runs its own rolling
    // update, or some service still runs replicas of an older revision (a Deployment in
    // mid-rollout is Available, so the operator may call the whole graph `successful`).
    let generation = dgd.metadata.generation;
    let observed = status["observedGeneration"].as_i64();
    let mut updating = Vec::new();
    if let (Some(generation), Some(observed)) = (generation, observed)
        && observed < generation
    {
        updating.push(format!(
            "the operator has not acted on generation {generation} yet (it reports generation {observed})"
        ));
    }
    let managed_rollout = ready_reason(status) == Some(ROLLING_UPDATE_IN_PROGRESS)
        || matches!(
            status["rollingUpdate"]["phase"].as_str(),
            Some("Pending" | "InProgress")
        );
    if managed_rollout {
        updating.push("Dynamo's rolling update is in progress".to_string());
    }
    let rolling = rolling(&services);
    if !rolling.is_empty() {
        updating.push(format!("services rolling out: {}", rolling.join(", ")));
    }
    if !updating.is_empty() && state.is_some() {
        let (phase, tail) = if serving || state == Some("successful") {
            (Phase::Running, "; the previous version keeps serving")
        } else {
            (Phase::Deploying, "")
        };
        let text = format!(
            "Updating DynamoGraphDeployment {}: {}{tail}",
            from.name,
            updating.join("; ")
        );
        return result(
            phase,
            Some(text.clone()),
            Some((NotReadyReason::Updating, text)),
        );
    }
    match state {
        Some("successful") => result(Phase::Running, None, None),
        Some(state @ ("pending" | "initializing")) => {
            let message = ready_message(status)
                .or(progress)
                .unwrap_or_else(|| format!("Dynamo state: {state}"));
            result(
                Phase::Deploying,
                Some(message.clone()),
                Some((NotReadyReason::InProgress, message)),
            )
        }
        Some(other) => {
            let message = format!("Dynamo state: {other}");
            result(
                Phase::Deploying,
                Some(message.clone()),
                Some((NotReadyReason::InProgress, message)),
            )
        }
        None => {
            let message = format!(
                "Waiting for the Dynamo operator to reconcile DynamoGraphDeployment {name}"
            );
            result(
                Phase::Deploying,
                Some(message.clone()),
                Some((NotReadyReason::InProgress, message)),
            )
        }
    }
}
