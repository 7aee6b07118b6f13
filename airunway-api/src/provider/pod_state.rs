//! Why a deployment does not serve, read from the real state of its Pods and of an `apps/v1`
//! Deployment (pure): the not-ready reasons of the shared vocabulary ([`NotReadyReason`]) that
//! Kubernetes itself reports, each naming the object it was read from.
//!
//! **A Pod** ([`pod_not_ready`]) says nothing while it is Ready, terminating or finished.
//! Otherwise, in this order:
//! - `PodScheduled=False` with reason `Unschedulable` → `InsufficientCapacity` with the
//!   scheduler's message, which names what no node has (`0/4 nodes are available: 2
//!   Insufficient nvidia.com/gpu, ...`);
//! - then each container that is not ready, init containers first, each giving at most one
//!   reason; the pod's reason is the one of highest [precedence](PRECEDENCE) (the first
//!   container on a tie):
//!   - waiting with a reason of [`IMAGE_PULL_REASONS`] → `ImagePullFailed`;
//!   - crashing — waiting in `CrashLoopBackOff`, or restarted at least
//!     [`CRASH_LOOP_RESTARTS`] times with a last termination, or terminated with a non-zero
//!     exit code — with a termination (the last one, else the current one) whose reason is
//!     `OOMKilled` → `OOMKilled`; whose message shows refused credentials
//!     ([`MODEL_AUTH_PATTERNS`]) → `ModelAuthFailed`; whose message shows a failed model
//!     download ([`MODEL_DOWNLOAD_PATTERNS`]) → `ModelDownloadFailed`; else
//!     `EngineCrashLoop` with the exit code, the termination reason and message.
//!
//! **Several Pods** ([`pods_not_ready`]): at most [`MAX_PODS_EXAMINED`] of them, by name; the
//! reason of highest precedence wins, the first pod by name on a tie. So the outcome does not
//! depend on the order a cache lists them in.
//!
//! **A Deployment** ([`deployment_not_ready`]), in this order: `ReplicaFailure=True` with
//! reason `FailedCreate` and a message saying `exceeded quota` → `QuotaExceeded`; then, while a
//! rollout is under way (the controller has not observed the latest generation, fewer updated
//! replicas than asked for, or replicas of an older ReplicaSet still running):
//! `Progressing=False` with reason `ProgressDeadlineExceeded` → `RolloutStalled`, else
//! `Updating`. A progress deadline exceeded by a scale-up of the newest ReplicaSet (a replica
//! more than the nodes can place) is no rollout: nothing here, `Degraded` and the Pods say it.
//!
//! Messages carry no restart count or time, so a Pod that keeps restarting the same way gives
//! the same status (no write on every restart).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ContainerStateTerminated, ContainerStatus, Pod};

use crate::v1alpha1::{NotReadyReason, NotReadySource, NotReadyStatus};

/// The most Pods [`pods_not_ready`] examines (the first by name): a deployment of thousands of
/// replicas costs no more than one of 64.
pub const MAX_PODS_EXAMINED: usize = 64;

/// Restarts after which a container that terminated and is not ready counts as crashing even
/// when the kubelet is not (yet) backing off: the kubelet's back-off starts after the first
/// failure, so three restarts are three failures in a row.
pub const CRASH_LOOP_RESTARTS: i32 = 3;

/// The kubelet's waiting reasons of a container whose image cannot be pulled.
pub const IMAGE_PULL_REASONS: [&str; 4] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
];

/// Substrings (compared in lower case) of a termination message that show the model source
/// refused the credentials: the model downloader's category (`(unauthorized)`, its exit code
/// 3) and its `refused (HTTP 401)`/`(HTTP 403)`, the `requests` error text of
/// `huggingface_hub` (`401 Client Error`, `403 Client Error`), its gated-repository error
/// (`GatedRepoError`, `Cannot access gated repo`), the Hub's restricted-model text (`Access to
/// model ... is restricted`) and its token errors (`Invalid user token`, `Invalid credentials
/// in Authorization header`).
pub const MODEL_AUTH_PATTERNS: [&str; 11] = [
    "(unauthorized)",
    "(http 401)",
    "(http 403)",
    "401 client error",
    "403 client error",
    "gatedrepoerror",
    "cannot access gated repo",
    "is restricted",
    "awaiting a review from the repo authors",
    "invalid user token",
    "invalid credentials in authorization header",
];

/// Substrings (compared in lower case) of a termination message that show the model could not
/// be downloaded (checked after [`MODEL_AUTH_PATTERNS`]): the model downloader's categories
/// (docs/model-cache.md "Exit codes": `(not-found)`, `(integrity)`, `(http-status)`,
/// `(transport)`, `(protocol)`, `(unsafe-path)`) and `huggingface_hub`'s errors for a missing
/// repository, revision or file (`RepositoryNotFoundError`, `RevisionNotFoundError`,
/// `EntryNotFoundError`, which `LocalEntryNotFoundError` contains).
pub const MODEL_DOWNLOAD_PATTERNS: [&str; 9] = [
    "(not-found)",
    "(integrity)",
    "(http-status)",
    "(transport)",
    "(protocol)",
    "(unsafe-path)",
    "repositorynotfounderror",
    "revisionnotfounderror",
    "entrynotfounderror",
];

/// The reasons the Pods and Deployments give, highest precedence first: what stops every
/// replica for a reason the user must fix comes before what may stop only some of them.
pub const PRECEDENCE: [NotReadyReason; 9] = [
    NotReadyReason::ModelAuthFailed,
    NotReadyReason::ModelDownloadFailed,
    NotReadyReason::ImagePullFailed,
    NotReadyReason::OomKilled,
    NotReadyReason::EngineCrashLoop,
    NotReadyReason::InsufficientCapacity,
    NotReadyReason::QuotaExceeded,
    NotReadyReason::RolloutStalled,
    NotReadyReason::Updating,
];

/// The rank of `reason` in [`PRECEDENCE`] (lower wins; reasons not listed come last).
fn rank(reason: NotReadyReason) -> usize {
    PRECEDENCE
        .iter()
        .position(|r| *r == reason)
        .unwrap_or(PRECEDENCE.len())
}

/// The better of two candidates: the one of higher precedence, `current` on a tie.
fn better(current: Option<NotReadyStatus>, next: Option<NotReadyStatus>) -> Option<NotReadyStatus> {
    match (current, next) {
        (Some(current), Some(next)) if rank(next.reason) < rank(current.reason) => Some(next),
        (Some(current), _) => Some(current),
        (None, next) => next,
    }
}

/// Whether `pod` carries every label of `selector` (an empty selector selects nothing).
pub fn selects(selector: &BTreeMap<String, String>, pod: &Pod) -> bool {
    let labels = pod.metadata.labels.as_ref();
    !selector.is_empty()
        && selector
            .iter()
            .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

/// Why `pods` do not serve (see the module documentation): the reason of highest precedence
/// among the first [`MAX_PODS_EXAMINED`] by name; `None` when none says anything.
pub fn pods_not_ready<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> Option<NotReadyStatus> {
    let mut pods: Vec<&Pod> = pods.into_iter().collect();
    pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    pods.into_iter()
        .take(MAX_PODS_EXAMINED)
        .fold(None, |found, pod| better(found, pod_not_ready(pod)))
}

/// Why `pod` does not serve (see the module documentation), read from it; `None` when it is
/// Ready, terminating, finished, or says nothing this module maps.
pub fn pod_not_ready(pod: &Pod) -> Option<NotReadyStatus> {
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let status = pod.status.as_ref()?;
    if matches!(status.phase.as_deref(), Some("Succeeded" | "Failed")) {
        return None;
    }
    let conditions = status.conditions.as_deref().unwrap_or_default();
    if conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True")
    {
        return None;
    }
    let source = NotReadySource::new("v1", "Pod", pod.metadata.name.clone().unwrap_or_default());
    if let Some(unschedulable) = conditions.iter().find(|c| {
        c.type_ == "PodScheduled"
            && c.status == "False"
            && c.reason.as_deref() == Some("Unschedulable")
    }) {
        let message = unschedulable
            .message
            .clone()
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| "No node can run the pod".to_string());
        return Some(
            NotReadyStatus::new(NotReadyReason::InsufficientCapacity, message).from_object(source),
        );
    }
    let containers = status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten());
    containers
        .fold(None, |found, container| {
            better(
                found,
                container_not_ready(container)
                    .map(|(reason, message)| NotReadyStatus::new(reason, message)),
            )
        })
        .map(|found| found.from_object(source))
}

/// The reason and message of one container, if it says why it does not serve.
fn container_not_ready(container: &ContainerStatus) -> Option<(NotReadyReason, String)> {
    if container.ready {
        return None;
    }
    let name = &container.name;
    let state = container.state.as_ref();
    let waiting = state.and_then(|s| s.waiting.as_ref());
    let waiting_reason = waiting
        .and_then(|w| w.reason.as_deref())
        .unwrap_or_default();
    let waiting_message = waiting
        .and_then(|w| w.message.as_deref())
        .filter(|m| !m.is_empty());
    if IMAGE_PULL_REASONS.contains(&waiting_reason) {
        return Some((
            NotReadyReason::ImagePullFailed,
            match waiting_message {
                Some(message) => format!("container {name}: {waiting_reason}: {message}"),
                None => format!("container {name}: {waiting_reason}"),
            },
        ));
    }
    let current = state
        .and_then(|s| s.terminated.as_ref())
        .filter(|t| t.exit_code != 0);
    let last = container
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref());
    let crashing = waiting_reason == "CrashLoopBackOff"
        || current.is_some()
        || (container.restart_count >= CRASH_LOOP_RESTARTS && last.is_some());
    if !crashing {
        return None;
    }
    let Some(termination) = last.or(current) else {
        return Some((
            NotReadyReason::EngineCrashLoop,
            format!(
                "container {name} keeps crashing: {}",
                waiting_message.unwrap_or(waiting_reason)
            ),
        ));
    };
    Some(termination_reason(name, termination))
}

/// The reason a crashing container's `termination` gives (OOM, credentials, download, crash).
fn termination_reason(
    name: &str,
    termination: &ContainerStateTerminated,
) -> (NotReadyReason, String) {
    let reason = termination.reason.as_deref().unwrap_or("Error");
    let code = termination.exit_code;
    let message = termination
        .message
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty());
    if reason == "OOMKilled" {
        return (
            NotReadyReason::OomKilled,
            format!(
                "container {name} was killed for exceeding its memory limit (OOMKilled, exit code {code})"
            ),
        );
    }
    let lower = message.map(str::to_lowercase).unwrap_or_default();
    let said = message.unwrap_or("no termination message");
    if MODEL_AUTH_PATTERNS.iter().any(|p| lower.contains(p)) {
        return (
            NotReadyReason::ModelAuthFailed,
            format!("container {name}: the model source refused the credentials: {said}"),
        );
    }
    if MODEL_DOWNLOAD_PATTERNS.iter().any(|p| lower.contains(p)) {
        return (
            NotReadyReason::ModelDownloadFailed,
            format!("container {name}: the model could not be downloaded: {said}"),
        );
    }
    (
        NotReadyReason::EngineCrashLoop,
        format!("container {name} keeps crashing: exit code {code} ({reason}): {said}"),
    )
}

/// Why the `apps/v1` Deployment `deployment` does not serve its latest generation (see the
/// module documentation); `None` when it reports nothing of the kind.
pub fn deployment_not_ready(deployment: &Deployment) -> Option<NotReadyStatus> {
    let name = deployment.metadata.name.clone().unwrap_or_default();
    let source = NotReadySource::new("apps/v1", "Deployment", name.clone());
    let status = deployment.status.as_ref()?;
    let conditions = status.conditions.as_deref().unwrap_or_default();
    let condition = |type_: &str, value: &str| {
        conditions
            .iter()
            .find(|c| c.type_ == type_ && c.status == value)
    };
    if let Some(failure) = condition("ReplicaFailure", "True")
        && failure.reason.as_deref() == Some("FailedCreate")
        && let Some(message) = failure.message.as_deref()
        && message.contains("exceeded quota")
    {
        return Some(
            NotReadyStatus::new(NotReadyReason::QuotaExceeded, message).from_object(source),
        );
    }
    let desired = deployment
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1);
    let updated = status.updated_replicas.unwrap_or(0);
    let total = status.replicas.unwrap_or(0);
    let behind = match (deployment.metadata.generation, status.observed_generation) {
        (Some(generation), Some(observed)) => observed < generation,
        (Some(_), None) => true,
        _ => false,
    };
    // A new ReplicaSet not yet complete, or an older one's replicas still running. (A scale-up
    // of the newest ReplicaSet is not a rollout: `Degraded` and the Pods say why it waits.)
    if !(behind || updated < desired || total > updated) {
        return None;
    }
    if let Some(progressing) = condition("Progressing", "False")
        && progressing.reason.as_deref() == Some("ProgressDeadlineExceeded")
    {
        let message = progressing
            .message
            .clone()
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| format!("Deployment {name} exceeded its progress deadline"));
        return Some(
            NotReadyStatus::new(
                NotReadyReason::RolloutStalled,
                format!("The new generation makes no progress: {message}"),
            )
            .from_object(source),
        );
    }
    let message = if behind {
        format!("Deployment {name} is rolling out a new generation")
    } else {
        format!(
            "Deployment {name} is rolling out a new generation: {updated} of {desired} replicas updated"
        )
    };
    Some(NotReadyStatus::new(NotReadyReason::Updating, message).from_object(source))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn pod(name: &str, status: Value) -> Pod {
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns",
                "labels": {"airunway.ai/deployment": "m", "app": "m"}},
            "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.10.0"}]},
            "status": status}))
        .unwrap()
    }

    /// What kube-scheduler writes on a Pod asking for more GPUs than any node has.
    fn unschedulable(name: &str) -> Pod {
        pod(
            name,
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                "reason": "Unschedulable", "lastTransitionTime": "2026-01-01T00:00:00Z",
                "message": "0/4 nodes are available: 2 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/4 nodes are available: 2 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."}],
                "qosClass": "Burstable"}),
        )
    }

    fn running_not_ready(container: Value) -> Value {
        json!({"phase": "Running", "conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Initialized", "status": "True"},
            {"type": "Ready", "status": "False", "reason": "ContainersNotReady",
             "message": "containers with unready status: [vllm]"},
            {"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady"}],
            "containerStatuses": [container]})
    }

    fn waiting(reason: &str, message: &str) -> Value {
        json!({"name": "vllm", "image": "vllm/vllm-openai:v0.10.0", "imageID": "", "ready": false,
            "restartCount": 0, "started": false,
            "state": {"waiting": {"reason": reason, "message": message}}})
    }

    /// A container in back-off after `restarts` restarts, last terminated with `terminated`.
    fn crash_looping(restarts: i32, terminated: Value) -> Value {
        json!({"name": "vllm", "image": "vllm/vllm-openai:v0.10.0", "imageID": "", "ready": false,
            "restartCount": restarts, "started": false,
            "state": {"waiting": {"reason": "CrashLoopBackOff",
                "message": "back-off 40s restarting failed container=vllm pod=m-7d9f_ns(uid)"}},
            "lastState": {"terminated": terminated}})
    }

    fn terminated(code: i32, reason: &str, message: &str) -> Value {
        json!({"exitCode": code, "reason": reason, "message": message,
            "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:05Z",
            "containerID": "containerd://abc"})
    }

    #[test]
    fn an_unschedulable_pod_names_the_resource_no_node_has() {
        let found = pod_not_ready(&unschedulable("m-1")).unwrap();
        assert_eq!(found.reason, NotReadyReason::InsufficientCapacity);
        assert!(
            found.message.contains("Insufficient nvidia.com/gpu"),
            "{}",
            found.message
        );
        assert_eq!(found.object, Some(NotReadySource::new("v1", "Pod", "m-1")));
    }

    #[test]
    fn image_pull_failures_of_containers_and_init_containers() {
        for reason in IMAGE_PULL_REASONS {
            let found = pod_not_ready(&pod(
                "m-1",
                running_not_ready(waiting(
                    reason,
                    "Back-off pulling image \"registry.invalid/x:1\"",
                )),
            ))
            .unwrap();
            assert_eq!(found.reason, NotReadyReason::ImagePullFailed, "{reason}");
            assert_eq!(
                found.message,
                format!(
                    "container vllm: {reason}: Back-off pulling image \"registry.invalid/x:1\""
                )
            );
        }
        let mut status = running_not_ready(
            json!({"name": "vllm", "ready": false, "restartCount": 0, "image": "x", "imageID": "",
            "state": {"waiting": {"reason": "PodInitializing"}}}),
        );
        status["initContainerStatuses"] = json!([{"name": "fetch", "ready": false, "restartCount": 0,
            "image": "x", "imageID": "", "state": {"waiting": {"reason": "ErrImagePull",
            "message": "rpc error: code = NotFound desc = failed to pull and unpack image"}}}]);
        let found = pod_not_ready(&pod("m-1", status)).unwrap();
        assert_eq!(found.reason, NotReadyReason::ImagePullFailed);
        assert!(found.message.starts_with("container fetch: ErrImagePull"));
    }

    #[test]
    fn a_crash_loop_carries_exit_code_reason_and_termination_message() {
        let found = pod_not_ready(&pod(
            "m-1",
            running_not_ready(crash_looping(
                5,
                terminated(
                    1,
                    "Error",
                    "ValueError: No available memory for the cache blocks.\n",
                ),
            )),
        ))
        .unwrap();
        assert_eq!(found.reason, NotReadyReason::EngineCrashLoop);
        assert_eq!(
            found.message,
            "container vllm keeps crashing: exit code 1 (Error): ValueError: No available memory for the cache blocks."
        );
        // The same crash after one more restart: the same status (nothing to write).
        let again = pod_not_ready(&pod(
            "m-1",
            running_not_ready(crash_looping(
                6,
                terminated(
                    1,
                    "Error",
                    "ValueError: No available memory for the cache blocks.\n",
                ),
            )),
        ))
        .unwrap();
        assert_eq!(again, found);
    }

    #[test]
    fn restarts_without_back_off_count_from_the_threshold() {
        let restarted = |restarts| {
            pod_not_ready(&pod(
                "m-1",
                running_not_ready(
                    json!({"name": "vllm", "ready": false, "restartCount": restarts,
                    "image": "x", "imageID": "", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                    "lastState": {"terminated": terminated(2, "Error", "")}}),
                ),
            ))
        };
        assert_eq!(restarted(CRASH_LOOP_RESTARTS - 1), None);
        let found = restarted(CRASH_LOOP_RESTARTS).unwrap();
        assert_eq!(found.reason, NotReadyReason::EngineCrashLoop);
        assert_eq!(
            found.message,
            "container vllm keeps crashing: exit code 2 (Error): no termination message"
        );
    }

    #[test]
    fn oom_kills_are_told_from_other_crashes() {
        let found = pod_not_ready(&pod(
            "m-1",
            running_not_ready(crash_looping(2, terminated(137, "OOMKilled", ""))),
        ))
        .unwrap();
        assert_eq!(found.reason, NotReadyReason::OomKilled);
        assert_eq!(found.reason.as_str(), "OOMKilled");
        assert!(found.message.contains("exit code 137"));
    }

    #[test]
    fn refused_credentials_and_failed_downloads() {
        let auth = [
            // The model downloader's termination log (exit code 3).
            "access to model meta-llama/Llama-3.1-8B refused (HTTP 401); HF_TOKEN is not set: the model may be gated or private (unauthorized)",
            // huggingface_hub in the engine.
            "huggingface_hub.errors.GatedRepoError: 403 Client Error. Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json.\nAccess to model meta-llama/Llama-3.1-8B is restricted and you are not in the authorized list.",
            "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://huggingface.co/api/models/org/m",
            "OSError: Invalid user token.",
        ];
        for message in auth {
            let found = pod_not_ready(&pod(
                "m-1",
                running_not_ready(crash_looping(1, terminated(1, "Error", message))),
            ))
            .unwrap();
            assert_eq!(found.reason, NotReadyReason::ModelAuthFailed, "{message}");
            assert!(found.message.contains(message.trim()));
        }
        let download = [
            "model org/missing at revision main not found (HTTP 404) (not-found)",
            "huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. Repository Not Found for url: https://huggingface.co/api/models/org/missing",
            "sha256 of model.safetensors is 1f2e..., expected 9a8b... (integrity)",
        ];
        for message in download {
            let found = pod_not_ready(&pod(
                "m-1",
                running_not_ready(crash_looping(1, terminated(4, "Error", message))),
            ))
            .unwrap();
            assert_eq!(
                found.reason,
                NotReadyReason::ModelDownloadFailed,
                "{message}"
            );
        }
        // A failed init container (restartPolicy Never: terminated, not restarting).
        let mut status =
            running_not_ready(json!({"name": "vllm", "ready": false, "restartCount": 0,
            "image": "x", "imageID": "", "state": {"waiting": {"reason": "PodInitializing"}}}));
        status["phase"] = json!("Pending");
        status["initContainerStatuses"] = json!([{"name": "download", "ready": false, "restartCount": 0,
            "image": "x", "imageID": "", "state": {"terminated": terminated(4, "Error",
            "model org/missing at revision main not found (HTTP 404) (not-found)")}}]);
        assert_eq!(
            pod_not_ready(&pod("m-1", status)).unwrap().reason,
            NotReadyReason::ModelDownloadFailed
        );
    }

    #[test]
    fn ready_terminating_and_starting_pods_say_nothing() {
        let ready = pod(
            "m-1",
            json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [crash_looping(4, terminated(1, "Error", "old crash"))]}),
        );
        assert_eq!(pod_not_ready(&ready), None);
        let mut terminating = unschedulable("m-1");
        terminating.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                "2026-01-01T00:00:00Z".parse().unwrap(),
            ));
        assert_eq!(pod_not_ready(&terminating), None);
        let starting = pod(
            "m-1",
            running_not_ready(json!({"name": "vllm", "ready": false, "restartCount": 0,
                "image": "x", "imageID": "", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}})),
        );
        assert_eq!(pod_not_ready(&starting), None);
        assert_eq!(
            pod_not_ready(&pod("m-1", json!({"phase": "Pending"}))),
            None
        );
    }

    #[test]
    fn among_pods_precedence_then_name_decides_whatever_the_order() {
        let crash = pod(
            "m-b",
            running_not_ready(crash_looping(3, terminated(1, "Error", "boom"))),
        );
        let pull = pod(
            "m-c",
            running_not_ready(waiting("ImagePullBackOff", "Back-off pulling image")),
        );
        let pending = unschedulable("m-a");
        let orders = [
            vec![&crash, &pull, &pending],
            vec![&pending, &pull, &crash],
            vec![&pull, &crash, &pending],
        ];
        for pods in orders {
            let found = pods_not_ready(pods).unwrap();
            assert_eq!(found.reason, NotReadyReason::ImagePullFailed);
            assert_eq!(found.object.unwrap().name, "m-c");
        }
        let other = unschedulable("m-0");
        let found = pods_not_ready([&pending, &other]).unwrap();
        assert_eq!(
            found.object.unwrap().name,
            "m-0",
            "a tie goes to the first by name"
        );
        assert_eq!(pods_not_ready(std::iter::empty()), None);
    }

    #[test]
    fn at_most_the_cap_of_pods_is_examined() {
        let mut pods: Vec<Pod> = (0..MAX_PODS_EXAMINED)
            .map(|i| unschedulable(&format!("m-{i:03}")))
            .collect();
        pods.push(pod(
            "z-last",
            running_not_ready(waiting("ErrImagePull", "not found")),
        ));
        let found = pods_not_ready(&pods).unwrap();
        assert_eq!(found.reason, NotReadyReason::InsufficientCapacity);
    }

    #[test]
    fn a_selector_selects_pods_carrying_all_its_labels() {
        let p = unschedulable("m-1");
        let selector = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert!(selects(&selector(&[("airunway.ai/deployment", "m")]), &p));
        assert!(selects(
            &selector(&[("airunway.ai/deployment", "m"), ("app", "m")]),
            &p
        ));
        assert!(!selects(&selector(&[("airunway.ai/deployment", "n")]), &p));
        assert!(!selects(&selector(&[("other", "m")]), &p));
        assert!(!selects(&BTreeMap::new(), &p));
    }

    fn deployment(generation: i64, replicas: i32, status: Value) -> Deployment {
        serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "m", "namespace": "ns", "generation": generation},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "m"}},
                "template": {"metadata": {"labels": {"app": "m"}}, "spec": {"containers": []}}},
            "status": status}))
        .unwrap()
    }

    fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Value {
        json!({"type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2026-01-01T00:00:00Z", "lastUpdateTime": "2026-01-01T00:00:00Z"})
    }

    #[test]
    fn a_settled_deployment_says_nothing() {
        let settled = deployment(
            2,
            2,
            json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
                "availableReplicas": 2, "conditions": [
                condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
                condition("Progressing", "True", "NewReplicaSetAvailable", "ReplicaSet \"m-5d8f\" has successfully progressed.")]}),
        );
        assert_eq!(deployment_not_ready(&settled), None);
    }

    #[test]
    fn a_rollout_under_way_is_updating() {
        let rolling = deployment(
            3,
            2,
            json!({"observedGeneration": 3, "replicas": 3, "updatedReplicas": 1, "readyReplicas": 2,
                "availableReplicas": 2, "unavailableReplicas": 1, "conditions": [
                condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
                condition("Progressing", "True", "ReplicaSetUpdated", "ReplicaSet \"m-6c9b\" is progressing.")]}),
        );
        let found = deployment_not_ready(&rolling).unwrap();
        assert_eq!(found.reason, NotReadyReason::Updating);
        assert_eq!(
            found.message,
            "Deployment m is rolling out a new generation: 1 of 2 replicas updated"
        );
        assert_eq!(
            found.object,
            Some(NotReadySource::new("apps/v1", "Deployment", "m"))
        );
        let unobserved = deployment(
            4,
            2,
            json!({"observedGeneration": 3, "replicas": 2,
            "updatedReplicas": 2, "availableReplicas": 2}),
        );
        assert_eq!(
            deployment_not_ready(&unobserved).unwrap().reason,
            NotReadyReason::Updating
        );
        // Old replicas still running after every new one is up.
        let draining = deployment(
            3,
            2,
            json!({"observedGeneration": 3, "replicas": 3,
            "updatedReplicas": 2, "availableReplicas": 3}),
        );
        assert_eq!(
            deployment_not_ready(&draining).unwrap().reason,
            NotReadyReason::Updating
        );
    }

    #[test]
    fn a_stalled_rollout_while_the_old_replicas_serve() {
        let stalled = deployment(
            3,
            1,
            json!({"observedGeneration": 3, "replicas": 2, "updatedReplicas": 1, "readyReplicas": 1,
                "availableReplicas": 1, "unavailableReplicas": 1, "conditions": [
                condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
                condition("Progressing", "False", "ProgressDeadlineExceeded", "ReplicaSet \"m-6c9b\" has timed out progressing.")]}),
        );
        let found = deployment_not_ready(&stalled).unwrap();
        assert_eq!(found.reason, NotReadyReason::RolloutStalled);
        assert_eq!(
            found.message,
            "The new generation makes no progress: ReplicaSet \"m-6c9b\" has timed out progressing."
        );
    }

    #[test]
    fn a_scale_up_past_its_deadline_is_no_stalled_rollout() {
        let stuck = deployment(
            2,
            2,
            json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 1,
                "availableReplicas": 1, "unavailableReplicas": 1, "conditions": [
                condition("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
                condition("Progressing", "False", "ProgressDeadlineExceeded", "ReplicaSet \"m-5d8f\" has timed out progressing.")]}),
        );
        assert_eq!(deployment_not_ready(&stuck), None);
    }

    #[test]
    fn a_quota_refusal_wins_over_the_stall_it_causes() {
        let refused = deployment(
            1,
            2,
            json!({"observedGeneration": 1, "replicas": 0, "updatedReplicas": 0, "conditions": [
                condition("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
                condition("ReplicaFailure", "True", "FailedCreate", "pods \"m-6c9b-x2x\" is forbidden: exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=8, limited: requests.nvidia.com/gpu=8"),
                condition("Progressing", "False", "ProgressDeadlineExceeded", "ReplicaSet \"m-6c9b\" has timed out progressing.")]}),
        );
        let found = deployment_not_ready(&refused).unwrap();
        assert_eq!(found.reason, NotReadyReason::QuotaExceeded);
        assert!(found.message.contains("requests.nvidia.com/gpu"));
        // Another creation failure (an admission webhook) is not a quota.
        let denied = deployment(
            1,
            1,
            json!({"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1,
            "conditions": [condition("ReplicaFailure", "True", "FailedCreate", "admission webhook \"x\" denied the request")]}),
        );
        assert_eq!(deployment_not_ready(&denied), None);
    }
}
