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
//! | a pending application `DEPLOY_FAILED`, active apps `RUNNING` | Running | `The update failed to deploy; the previous version keeps serving: <message>` | False (`RolloutStalled`) |
//! | an active application `UNHEALTHY` | Deploying | `Serve application <app> is UNHEALTHY: <message>` (Serve restarts it) | False |
//! | `Ready=True`, every active application `RUNNING`, no pending cluster | Running | — | True |
//! | the same with a pending cluster (an upgrade rolling out), or a generation KubeRay has not reported on | Running | `Updating: ...` | False (`Updating`) |
//! | `Ready=True`, an active application not `RUNNING` yet | Deploying | `Serve application <app> is <status>` | False |
//! | `Ready=False` | Deploying | the `Ready` message, with the pending cluster's detail | False |
//! | no status yet | Deploying | waiting for the KubeRay operator | False |
//!
//! Why it is not ready (`TranslatedStatus::not_ready`; docs/providers/kuberay.md "Not-ready
//! reasons" has the table): a failed or unhealthy Serve application → the reason its message
//! (and its deployments' messages) names — a replica that cannot be scheduled
//! (`InsufficientCapacity`), a refused Hugging Face token or gated model (`ModelAuthFailed`),
//! out of memory (`OOMKilled`), a model repository that cannot be read
//! (`ModelDownloadFailed`) — else `Unclassified` with the application's message; a failed
//! update while the previous version serves → `RolloutStalled`; an upgrade rolling →
//! `Updating`; a RayCluster whose Pods KubeRay cannot create (`ReplicaFailure=True`) →
//! `QuotaExceeded` for a quota, else `UpstreamReconcileError`, as does a RayCluster in state
//! `failed`; serve endpoints dropped to 0 → `Unclassified`; anything else →
//! `DeploymentInProgress` (the Ray Pods may tell more).
//!
//! Replicas: desired = the sum of the worker groups' `replicas`; ready and available = the
//! serving cluster's `readyWorkerReplicas` and `availableWorkerReplicas` while its
//! applications are `RUNNING`, else 0. Endpoint: Service `<name>-serve-svc`, port 8000.

use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::{TranslatedStatus, replica_count};
use airunway_api::serde_json::Value;
use airunway_api::v1alpha1::{
    EndpointStatus, ModelDeployment, NotReadyReason, NotReadySource, NotReadyStatus, Phase,
    ReplicaStatus,
};

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

/// Ray Serve's message for replicas that wait for resources (`deployment_state.py`: "... has
/// N replicas that have taken more than 30s to be scheduled ... Resources required for each
/// replica: ..., total resources available: ...").
const UNSCHEDULED: [&str; 2] = ["to be scheduled", "Resources required for each replica"];
/// Hugging Face refusing the token or the gated model (huggingface_hub's `GatedRepoError` and
/// HTTP errors, as the engine's traceback carries them).
const AUTH_ERRORS: [&str; 6] = [
    "GatedRepoError",
    "Cannot access gated repo",
    "You are trying to access a gated repo",
    "401 Client Error",
    "403 Client Error",
    "Invalid user token",
];
/// Out of memory: Ray's memory monitor (`ray.exceptions.OutOfMemoryError`), the GPU (`CUDA out
/// of memory`, `torch.OutOfMemoryError`), or the kernel (`OOMKilled`).
const OOM_ERRORS: [&str; 3] = ["OutOfMemoryError", "CUDA out of memory", "OOMKilled"];
/// The model repository cannot be read (huggingface_hub's not-found errors).
const DOWNLOAD_ERRORS: [&str; 3] = [
    "RepositoryNotFoundError",
    "RevisionNotFoundError",
    "EntryNotFoundError",
];
/// A ResourceQuota refusing the Ray Pods (the API server's words in KubeRay's
/// `ReplicaFailure` message).
const QUOTA_ERROR: &str = "exceeded quota";

/// The reason a Serve message (an application's or a deployment's) names, if it names one.
pub fn serve_reason(message: &str) -> Option<NotReadyReason> {
    if UNSCHEDULED.iter().all(|p| message.contains(p)) {
        Some(NotReadyReason::InsufficientCapacity)
    } else if AUTH_ERRORS.iter().any(|p| message.contains(p)) {
        Some(NotReadyReason::ModelAuthFailed)
    } else if OOM_ERRORS.iter().any(|p| message.contains(p)) {
        Some(NotReadyReason::OomKilled)
    } else if DOWNLOAD_ERRORS.iter().any(|p| message.contains(p)) {
        Some(NotReadyReason::ModelDownloadFailed)
    } else {
        None
    }
}

/// The messages of the Serve deployments of application `app` in `service_status`.
fn deployment_messages<'a>(service_status: &'a Value, app: &str) -> Vec<&'a str> {
    service_status["applicationStatuses"][app]["serveDeploymentStatuses"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(_, d)| d["message"].as_str())
        .filter(|m| !m.is_empty())
        .collect()
}

/// The specific reason an application of `service_status` (its message, then its
/// deployments') names, with the message that names it.
fn app_reason(service_status: &Value, app: &Application) -> Option<(NotReadyReason, String)> {
    std::iter::once(app.message.as_str())
        .chain(deployment_messages(service_status, &app.name))
        .find_map(|m| serve_reason(m).map(|r| (r, m.trim().to_string())))
}

/// The first application of `service_status` not `RUNNING` whose messages name a specific
/// reason (e.g. replicas waiting for GPUs while the application deploys).
fn waiting_reason(service_status: &Value) -> Option<(NotReadyReason, String)> {
    applications(service_status)
        .iter()
        .filter(|a| a.status != RUNNING)
        .find_map(|a| app_reason(service_status, a))
}

/// A RayCluster KubeRay reports a failure of: Pods it cannot create (`ReplicaFailure=True`,
/// `<reason>` and the API server's error) or the deprecated state `failed`.
fn cluster_failure(service_status: &Value) -> Option<(NotReadyReason, String, NotReadySource)> {
    let name = service_status["rayClusterName"]
        .as_str()
        .filter(|n| !n.is_empty())?;
    let cluster = &service_status["rayClusterStatus"];
    let source = NotReadySource::new("ray.io/v1", "RayCluster", name);
    if let Some(failure) =
        condition(&cluster["conditions"], "ReplicaFailure").filter(|c| c["status"] == "True")
    {
        let message = failure["message"]
            .as_str()
            .unwrap_or_default()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(": ");
        let reason = if message.contains(QUOTA_ERROR) {
            NotReadyReason::QuotaExceeded
        } else {
            NotReadyReason::UpstreamReconcileError
        };
        return Some((
            reason,
            format!("KubeRay cannot create the Pods of RayCluster {name}: {message}"),
            source,
        ));
    }
    if cluster["state"] == "failed" {
        let why = cluster["reason"].as_str().unwrap_or("no reason given");
        return Some((
            NotReadyReason::UpstreamReconcileError,
            format!("KubeRay reports RayCluster {name} failed: {why}"),
            source,
        ));
    }
    None
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
    let own = NotReadySource::new(
        ray_service
            .types
            .as_ref()
            .map_or("ray.io/v1", |t| t.api_version.as_str()),
        "RayService",
        ray_service.metadata.name.clone().unwrap_or_default(),
    );
    // `counted`: the active cluster serves, its workers count as ready.
    let result = |phase,
                  message: Option<String>,
                  counted: bool,
                  not_ready: Option<(NotReadyReason, String, NotReadySource)>| {
        TranslatedStatus {
            phase,
            message,
            replicas: Some(worker_replicas(data, counted.then_some(active))),
            endpoint: endpoint.clone(),
            ready: phase == Phase::Running && not_ready.is_none(),
            not_ready: not_ready.map(|(reason, text, source)| {
                NotReadyStatus::new(reason, text).from_object(source)
            }),
        }
    };
    let from_service = |reason, text: &str| Some((reason, text.to_string(), own.clone()));

    if ready_condition.is_none() {
        let message = format!("Waiting for the KubeRay operator to reconcile RayService {name}");
        let not_ready = from_service(NotReadyReason::InProgress, &message);
        return result(Phase::Deploying, Some(message), false, not_ready);
    }
    if let Some(failed) = active_apps.iter().find(|a| a.status == DEPLOY_FAILED) {
        let (reason, _) =
            app_reason(active, failed).unwrap_or((NotReadyReason::Unclassified, String::new()));
        let message = failed.described();
        let not_ready = from_service(reason, &message);
        return result(Phase::Failed, Some(message), false, not_ready);
    }
    if let Some(failed) = pending_apps.iter().find(|a| a.status == DEPLOY_FAILED) {
        if serving {
            // A new version that cannot deploy while the previous one keeps serving.
            let message = format!(
                "The update failed to deploy; the previous version keeps serving: {}",
                failed.described()
            );
            let not_ready = from_service(NotReadyReason::RolloutStalled, &message);
            return result(Phase::Running, Some(message), true, not_ready);
        }
        let (reason, _) =
            app_reason(pending, failed).unwrap_or((NotReadyReason::Unclassified, String::new()));
        let message = failed.described();
        let not_ready = from_service(reason, &message);
        return result(Phase::Failed, Some(message), false, not_ready);
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
        let (reason, _) =
            app_reason(active, unhealthy).unwrap_or((NotReadyReason::Unclassified, String::new()));
        let not_ready = from_service(reason, &message);
        return result(Phase::Deploying, Some(message), false, not_ready);
    }
    let behind = match (
        ray_service.metadata.generation,
        status["observedGeneration"].as_i64(),
    ) {
        (Some(generation), Some(observed)) if observed < generation => Some(format!(
            "KubeRay has not acted on RayService {} generation {generation} yet (it reports generation {observed})",
            own.name
        )),
        _ => None,
    };
    if serving && (upgrading || behind.is_some()) {
        let detail = if upgrading {
            pending_detail(pending)
                .map(|d| format!(": {d}"))
                .unwrap_or_default()
        } else {
            behind.map(|b| format!(": {b}")).unwrap_or_default()
        };
        let message = format!(
            "Updating: a new Ray cluster is being prepared and the previous one keeps serving{detail}"
        );
        // What blocks the new cluster, when KubeRay or Serve says.
        let not_ready = cluster_failure(pending)
            .or_else(|| waiting_reason(pending).map(|(reason, text)| (reason, text, own.clone())))
            .or_else(|| from_service(NotReadyReason::Updating, &message));
        return result(Phase::Running, Some(message), true, not_ready);
    }
    if serving {
        return result(Phase::Running, None, true, None);
    }
    if endpoints_ready {
        let waiting = active_apps
            .iter()
            .find(|a| a.status != RUNNING)
            .map(|a| format!("Serve application {} is {}", a.name, a.status))
            .unwrap_or_else(|| "Waiting for the Serve applications to report".to_string());
        let not_ready = waiting_reason(active)
            .map(|(reason, text)| (reason, text, own.clone()))
            .or_else(|| from_service(NotReadyReason::InProgress, &waiting));
        return result(Phase::Deploying, Some(waiting), false, not_ready);
    }
    let ready_message =
        message_of(ready_condition).unwrap_or_else(|| "RayService is not ready".to_string());
    let message = match pending_detail(pending) {
        Some(detail) => format!("{ready_message}: {detail}"),
        None => ready_message,
    };
    let lost = ready_condition.is_some_and(|c| c["reason"] == "ZeroServeEndpoints");
    let not_ready = cluster_failure(pending)
        .or_else(|| cluster_failure(active))
        .or_else(|| {
            waiting_reason(pending)
                .or_else(|| waiting_reason(active))
                .map(|(reason, text)| (reason, text, own.clone()))
        })
        .or_else(|| {
            let reason = if lost {
                NotReadyReason::Unclassified
            } else {
                NotReadyReason::InProgress
            };
            from_service(reason, &message)
        });
    result(Phase::Deploying, Some(message), false, not_ready)
}
