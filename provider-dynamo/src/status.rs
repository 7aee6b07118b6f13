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

/// The services to count: those in `status.services` (the operator's view), else (before the
/// operator reported any, or after a failed reconcile cleared them) those in the spec.
fn replicas(dgd: &Value) -> (ReplicaStatus, Vec<String>) {
    let reported = dgd["status"]["services"]
        .as_object()
        .filter(|s| !s.is_empty());
    let Some(reported) = reported else {
        let mut counts = ReplicaStatus {
            desired: None,
            ready: Some(0),
            available: Some(0),
        };
        let desired = sum_replicas(
            dgd["spec"]["services"]
                .as_object()
                .into_iter()
                .flatten()
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
    let (counted, services) = replicas(data);
    let progress = (!services.is_empty()).then(|| {
        format!(
            "{}/{} replicas ready ({})",
            counted.ready.unwrap_or(0),
            counted.desired.unwrap_or(0),
            services.join(", ")
        )
    });
    let replicas = Some(counted);
    let result = |phase, message, ready| TranslatedStatus {
        phase,
        message,
        replicas: replicas.clone(),
        endpoint: endpoint.clone(),
        ready,
        not_ready: None,
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
            Some(
                ready_message(status)
                    .or(progress)
                    .unwrap_or_else(|| format!("Dynamo state: {state}")),
            ),
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
