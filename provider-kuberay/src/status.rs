//! RayService status → ModelDeployment status (pure), from what the KubeRay operator v1.3
//! really writes (`../shared/upstream-crds/status-samples/rayservice-*.yaml`).
//!
//! KubeRay has no failed state: its `Ready` condition follows the serve endpoints, not the
//! health of the Serve applications, and a failed application shows up only in
//! `applicationStatuses` of the active cluster (`activeServiceStatus`) or, on the first deploy
//! and during an upgrade, of the pending one (`pendingServiceStatus`). So:
//!
//! | RayService | phase | message | Ready |
//! |---|---|---|---|
//! | an active application `DEPLOY_FAILED` | Failed | that application's message | False |
//! | a pending application `DEPLOY_FAILED`, nothing active | Failed | that application's message | False |
//! | a pending application `DEPLOY_FAILED`, active apps `RUNNING` | Failed | `The update failed to deploy; the previous version keeps serving: <message>` | True |
//! | an active application `UNHEALTHY` | Deploying | `Serve application <app> is UNHEALTHY: <message>` (Serve restarts it) | False |
//! | `Ready=True`, every active application `RUNNING`, no pending cluster | Running | — | True |
//! | the same with a pending cluster (an upgrade rolling out) | Deploying | `Updating: ...` | True |
//! | `Ready=True`, an active application not `RUNNING` yet | Deploying | `Serve application <app> is <status>` | False |
//! | `Ready=False` | Deploying | the `Ready` message, with the pending cluster's detail | False |
//! | no status yet | Deploying | waiting for the KubeRay operator | False |
//!
//! Replicas: desired = the sum of the worker groups' `replicas`; ready and available = the
//! serving cluster's `readyWorkerReplicas` and `availableWorkerReplicas` while its
//! applications are `RUNNING`, else 0. Endpoint: Service `<name>-serve-svc`, port 8000.

use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::{TranslatedStatus, replica_count};
use airunway_api::serde_json::Value;
use airunway_api::v1alpha1::{EndpointStatus, ModelDeployment, Phase, ReplicaStatus};

use crate::render::SERVE_PORT;

/// Serve application status: running.
pub const RUNNING: &str = "RUNNING";
/// Serve application status: failed to deploy.
pub const DEPLOY_FAILED: &str = "DEPLOY_FAILED";
/// Serve application status: unhealthy after it ran.
pub const UNHEALTHY: &str = "UNHEALTHY";

/// The Service KubeRay creates in front of the Serve proxies of the active cluster.
pub fn serve_service(name: &str) -> String {
    format!("{name}-serve-svc")
}

/// One Serve application as reported by KubeRay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Application {
    /// The application name.
    pub name: String,
    /// Its status (`NOT_STARTED`, `DEPLOYING`, `RUNNING`, `DEPLOY_FAILED`, `DELETING`,
    /// `UNHEALTHY`).
    pub status: String,
    /// Its message (the Ray dashboard's, e.g. a traceback), may be empty.
    pub message: String,
}

impl Application {
    /// The application's message, or its name and status when it has none.
    pub fn described(&self) -> String {
        let message = self.message.trim();
        if message.is_empty() {
            format!("Serve application {} is {}", self.name, self.status)
        } else {
            message.to_string()
        }
    }
}

/// The applications of `service_status` (an `activeServiceStatus` or `pendingServiceStatus`),
/// in name order.
pub fn applications(service_status: &Value) -> Vec<Application> {
    service_status["applicationStatuses"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, app)| Application {
            name: name.clone(),
            status: app["status"].as_str().unwrap_or_default().to_string(),
            message: app["message"].as_str().unwrap_or_default().to_string(),
        })
        .collect()
}

fn condition<'a>(conditions: &'a Value, type_: &str) -> Option<&'a Value> {
    conditions.as_array()?.iter().find(|c| c["type"] == type_)
}

fn message_of(condition: Option<&Value>) -> Option<String> {
    condition
        .and_then(|c| c["message"].as_str())
        .filter(|m| !m.is_empty())
        .map(str::to_string)
}

/// What the pending cluster is waiting for: its first False condition among those KubeRay
/// sets while provisioning, or a pending application's state.
fn pending_detail(pending: &Value) -> Option<String> {
    let cluster_conditions = &pending["rayClusterStatus"]["conditions"];
    ["ReplicaFailure", "RayClusterProvisioned", "HeadPodReady"]
        .iter()
        .filter_map(|t| condition(cluster_conditions, t))
        .find(|c| {
            (c["type"] == "ReplicaFailure" && c["status"] == "True")
                || (c["type"] != "ReplicaFailure" && c["status"] != "True")
        })
        .and_then(|c| message_of(Some(c)))
        .or_else(|| {
            applications(pending)
                .into_iter()
                .find(|a| a.status != RUNNING)
                .map(|a| format!("Serve application {} is {}", a.name, a.status))
        })
}

fn worker_replicas(ray_service: &Value, serving: Option<&Value>) -> ReplicaStatus {
    let desired: i32 = ray_service["spec"]["rayClusterConfig"]["workerGroupSpecs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| replica_count(&g["replicas"]).unwrap_or(0))
        .fold(0, i32::saturating_add);
    let count = |field: &str| {
        serving
            .and_then(|s| replica_count(&s["rayClusterStatus"][field]))
            .unwrap_or(0)
    };
    ReplicaStatus {
        desired: Some(desired),
        ready: Some(count("readyWorkerReplicas")),
        available: Some(count("availableWorkerReplicas")),
    }
}

/// Translates the RayService status.
pub fn translate(md: &ModelDeployment, ray_service: Option<&DynamicObject>) -> TranslatedStatus {
    let name = md.metadata.name.clone().unwrap_or_default();
    let Some(ray_service) = ray_service else {
        return TranslatedStatus {
            phase: Phase::Deploying,
            message: Some("Waiting for the RayService".into()),
            replicas: None,
            endpoint: None,
            ready: false,
            not_ready: None,
        };
    };
    let endpoint = Some(EndpointStatus {
        service: Some(serve_service(&name)),
        port: Some(SERVE_PORT),
    });
    let data = &ray_service.data;
    let status = &data["status"];
    let active = &status["activeServiceStatus"];
    let pending = &status["pendingServiceStatus"];
    let active_apps = applications(active);
    let pending_apps = applications(pending);
    let ready_condition = condition(&status["conditions"], "Ready");
    let endpoints_ready = ready_condition.is_some_and(|c| c["status"] == "True");
    let active_running = !active_apps.is_empty() && active_apps.iter().all(|a| a.status == RUNNING);
    let upgrading = pending["rayClusterName"]
        .as_str()
        .is_some_and(|n| !n.is_empty());
    let serving = endpoints_ready && active_running;
    let result = |phase, message: Option<String>, ready: bool| TranslatedStatus {
        phase,
        message,
        replicas: Some(worker_replicas(data, ready.then_some(active))),
        endpoint: endpoint.clone(),
        ready,
        not_ready: None,
    };

    if ready_condition.is_none() {
        return result(
            Phase::Deploying,
            Some(format!(
                "Waiting for the KubeRay operator to reconcile RayService {name}"
            )),
            false,
        );
    }
    if let Some(failed) = active_apps.iter().find(|a| a.status == DEPLOY_FAILED) {
        return result(Phase::Failed, Some(failed.described()), false);
    }
    if let Some(failed) = pending_apps.iter().find(|a| a.status == DEPLOY_FAILED) {
        return if serving {
            result(
                Phase::Failed,
                Some(format!(
                    "The update failed to deploy; the previous version keeps serving: {}",
                    failed.described()
                )),
                true,
            )
        } else {
            result(Phase::Failed, Some(failed.described()), false)
        };
    }
    if let Some(unhealthy) = active_apps.iter().find(|a| a.status == UNHEALTHY) {
        let detail = unhealthy.message.trim();
        let message = if detail.is_empty() {
            format!("Serve application {} is {UNHEALTHY}", unhealthy.name)
        } else {
            format!(
                "Serve application {} is {UNHEALTHY}: {detail}",
                unhealthy.name
            )
        };
        return result(Phase::Deploying, Some(message), false);
    }
    if serving && upgrading {
        let detail = pending_detail(pending)
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        return result(
            Phase::Deploying,
            Some(format!(
                "Updating: a new Ray cluster is being prepared and the previous one keeps serving{detail}"
            )),
            true,
        );
    }
    if serving {
        return result(Phase::Running, None, true);
    }
    if endpoints_ready {
        let waiting = active_apps
            .iter()
            .find(|a| a.status != RUNNING)
            .map(|a| format!("Serve application {} is {}", a.name, a.status))
            .unwrap_or_else(|| "Waiting for the Serve applications to report".to_string());
        return result(Phase::Deploying, Some(waiting), false);
    }
    let ready_message =
        message_of(ready_condition).unwrap_or_else(|| "RayService is not ready".to_string());
    let message = match pending_detail(pending) {
        Some(detail) => format!("{ready_message}: {detail}"),
        None => ready_message,
    };
    result(Phase::Deploying, Some(message), false)
}
