//! What the controllers keep of watched objects (pure). A reflector store holds every object
//! of a kind for the life of the process; keeping only what the reconciles read keeps memory
//! proportional to what matters at 10,000 deployments.
//!
//! Removed: `managedFields` entries other than the status subresource's (the controllers read
//! status ownership only, see [`crate::managed_fields`]) and the
//! `kubectl.kubernetes.io/last-applied-configuration` annotation (a second copy of the spec
//! that nothing here reads). Upstream objects lose their `managedFields` entirely.

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    ContainerStatus, Pod, PodCondition, PodStatus,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionVersion,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The annotation `kubectl apply` keeps a copy of the applied object in.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops the last-applied annotation and every `managedFields` entry that is not about the
/// status subresource.
pub fn keep_status_ownership(meta: &mut ObjectMeta) {
    drop_last_applied(meta);
    if let Some(entries) = meta.managed_fields.as_mut() {
        entries.retain(|e| e.subresource.as_deref() == Some("status"));
        entries.shrink_to_fit();
    }
    crate::managed_fields::compact_status_ownership(meta);
}

/// [`keep_status_ownership`], and of that only what `manager` owns (a provider reads nothing
/// else).
pub fn keep_status_ownership_of(meta: &mut ObjectMeta, manager: &str) {
    keep_status_ownership(meta);
    if let Some(entries) = meta.managed_fields.as_mut() {
        entries.retain(|e| e.manager.as_deref() == Some(manager));
        entries.shrink_to_fit();
    }
}

/// A provider's watched deployment, trimmed to what its reconcile reads: of the managed fields
/// only the status entry of `provider`'s field manager (a deployment it does not serve is not
/// stored at all: [`provider_deployment_event`]).
#[cfg(feature = "provider-sdk")]
pub fn provider_deployment(md: &mut crate::v1alpha1::ModelDeployment, provider: &str) {
    keep_status_ownership_of(
        &mut md.metadata,
        &crate::constants::field_managers::provider(provider),
    );
}

/// What a provider's deployment store is told of a watch event: it holds only the deployments
/// it serves (assigned to it, or still carrying its finalizer: [`plan::triage`] not `Ignore`).
/// A deployment it does not serve is not stored; one that stops being served while `held`
/// (in the store) is removed, and its reconcile then finds nothing to do. Deletions pass.
///
/// [`plan::triage`]: crate::provider::plan::triage
#[cfg(feature = "provider-sdk")]
pub fn provider_deployment_event(
    event: kube::runtime::watcher::Event<crate::v1alpha1::ModelDeployment>,
    provider: &str,
    held: impl Fn(&crate::v1alpha1::ModelDeployment) -> bool,
) -> Option<kube::runtime::watcher::Event<crate::v1alpha1::ModelDeployment>> {
    use crate::provider::plan;
    use kube::runtime::watcher::Event;
    let served =
        |md: &crate::v1alpha1::ModelDeployment| plan::triage(md, provider) != plan::Triage::Ignore;
    match event {
        Event::Apply(md) if !served(&md) => held(&md).then_some(Event::Delete(md)),
        Event::InitApply(md) if !served(&md) => None,
        other => Some(other),
    }
}

/// Keeps of a watched CustomResourceDefinition what an availability check reads: its identity
/// and creation time, each version's name and whether it is served and stored, and the status
/// conditions. The schemas (for the Gateway API and KEDA CRDs, hundreds of kilobytes each as
/// typed values) are dropped.
pub fn crd_availability(crd: &mut CustomResourceDefinition) {
    drop_ownership(&mut crd.metadata);
    crd.metadata.annotations = None;
    crd.metadata.labels = None;
    crd.spec.conversion = None;
    for version in &mut crd.spec.versions {
        *version = CustomResourceDefinitionVersion {
            name: std::mem::take(&mut version.name),
            served: version.served,
            storage: version.storage,
            ..CustomResourceDefinitionVersion::default()
        };
    }
    if let Some(status) = crd.status.as_mut() {
        status.accepted_names = None;
        if let Some(conditions) = status.conditions.as_mut() {
            for condition in conditions {
                condition.message = None;
            }
        }
    }
}

/// Drops the last-applied annotation and all `managedFields`.
pub fn drop_ownership(meta: &mut ObjectMeta) {
    drop_last_applied(meta);
    meta.managed_fields = None;
}

fn drop_last_applied(meta: &mut ObjectMeta) {
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.remove(LAST_APPLIED_ANNOTATION);
        if annotations.is_empty() {
            meta.annotations = None;
        }
    }
}

/// Keeps of a watched Pod only what a provider's not-ready mapping
/// ([`pod_state`](crate::provider::pod_state)) and the mapping to its deployments read: name,
/// namespace, uid, resourceVersion, labels, owner references and deletion time; the phase; the
/// conditions' type, status, reason and message; and each container's name, readiness,
/// restart count and states (waiting reason and message, terminated exit code, reason and
/// message). No spec, annotation, time, address or image is kept, so a Pod costs a few hundred
/// bytes and a change of what is dropped (a heartbeat time, a pod IP) leaves it the same.
pub fn trim_pod(pod: &mut Pod) {
    let meta = std::mem::take(&mut pod.metadata);
    pod.metadata = ObjectMeta {
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resource_version: meta.resource_version,
        labels: meta.labels,
        owner_references: meta.owner_references,
        deletion_timestamp: meta.deletion_timestamp,
        ..ObjectMeta::default()
    };
    pod.spec = None;
    pod.status = pod.status.take().map(|status| PodStatus {
        phase: status.phase,
        conditions: status.conditions.map(|conditions| {
            conditions
                .into_iter()
                .map(|c| PodCondition {
                    type_: c.type_,
                    status: c.status,
                    reason: c.reason,
                    message: c.message,
                    ..PodCondition::default()
                })
                .collect()
        }),
        init_container_statuses: status.init_container_statuses.map(trim_containers),
        container_statuses: status.container_statuses.map(trim_containers),
        ..PodStatus::default()
    });
}

fn trim_containers(statuses: Vec<ContainerStatus>) -> Vec<ContainerStatus> {
    statuses
        .into_iter()
        .map(|c| ContainerStatus {
            name: c.name,
            ready: c.ready,
            restart_count: c.restart_count,
            state: c.state.map(trim_state),
            last_state: c.last_state.map(trim_state),
            ..ContainerStatus::default()
        })
        .collect()
}

fn trim_state(state: ContainerState) -> ContainerState {
    ContainerState {
        running: state.running.map(|_| ContainerStateRunning::default()),
        terminated: state.terminated.map(|t| ContainerStateTerminated {
            exit_code: t.exit_code,
            reason: t.reason,
            message: t.message,
            signal: t.signal,
            ..ContainerStateTerminated::default()
        }),
        waiting: state.waiting.map(|w| ContainerStateWaiting {
            reason: w.reason,
            message: w.message,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta() -> ObjectMeta {
        serde_json::from_value(json!({
            "name": "m",
            "annotations": {LAST_APPLIED_ANNOTATION: "{\"spec\":{}}", "airunway.ai/x": "y"},
            "managedFields": [
                {"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}},
                {"manager": "airunway-core", "operation": "Apply", "subresource": "status", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}},
            ],
        }))
        .unwrap()
    }

    #[test]
    fn status_ownership_is_all_that_is_kept() {
        let mut m = meta();
        keep_status_ownership(&mut m);
        let managers: Vec<_> = m
            .managed_fields
            .iter()
            .flatten()
            .map(|e| e.manager.clone().unwrap())
            .collect();
        assert_eq!(managers, ["airunway-core"]);
        assert_eq!(
            m.annotations.unwrap().keys().collect::<Vec<_>>(),
            ["airunway.ai/x"]
        );
    }

    #[test]
    fn a_provider_keeps_only_its_own_status_ownership() {
        let mut m = meta();
        keep_status_ownership_of(&mut m, "kaito-provider");
        assert!(m.managed_fields.unwrap().is_empty());
        let mut m = meta();
        keep_status_ownership_of(&mut m, "airunway-core");
        assert_eq!(m.managed_fields.unwrap().len(), 1);
    }

    #[cfg(feature = "provider-sdk")]
    #[test]
    fn a_pod_keeps_what_its_not_ready_reason_is_read_from() {
        let full: Pod = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "m-1", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                "labels": {"app": "m"}, "annotations": {"a": "b"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "m-5d", "uid": "r"}],
                "managedFields": [{"manager": "kube-controller-manager", "operation": "Update"}]},
            "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.10.0"}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "hostIP": "10.0.0.2",
                "startTime": "2026-01-01T00:00:00Z",
                "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady",
                    "message": "containers with unready status: [vllm]",
                    "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "containerStatuses": [{"name": "vllm", "ready": false, "restartCount": 4,
                    "image": "vllm/vllm-openai:v0.10.0", "imageID": "sha256:abc", "containerID": "containerd://x",
                    "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 1m20s"}},
                    "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "message": "boom",
                        "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:01Z",
                        "containerID": "containerd://x"}}}]}}))
        .unwrap();
        let before = crate::provider::pod_state::pod_not_ready(&full);
        let mut trimmed = full.clone();
        trim_pod(&mut trimmed);
        assert_eq!(crate::provider::pod_state::pod_not_ready(&trimmed), before);
        assert!(before.is_some());
        assert_eq!(
            serde_json::to_value(&trimmed).unwrap(),
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "m-1", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                    "labels": {"app": "m"},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "m-5d", "uid": "r"}]},
                "status": {"phase": "Running",
                    "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady",
                        "message": "containers with unready status: [vllm]"}],
                    "containerStatuses": [{"name": "vllm", "ready": false, "restartCount": 4,
                        "image": "", "imageID": "",
                        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 1m20s"}},
                        "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "message": "boom"}}}]}})
        );
    }

    #[test]
    fn upstream_objects_keep_no_ownership() {
        let mut m = meta();
        drop_ownership(&mut m);
        assert!(m.managed_fields.is_none());
        assert!(!m.annotations.unwrap().contains_key(LAST_APPLIED_ANNOTATION));
    }

    #[cfg(feature = "provider-sdk")]
    #[test]
    fn a_provider_store_is_told_only_of_deployments_it_serves() {
        use crate::v1alpha1::ModelDeployment;
        use kube::runtime::watcher::Event;
        let md = |provider: &str, finalizer: Option<&str>| -> ModelDeployment {
            serde_json::from_value(json!({
                "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
                "metadata": {"name": "m", "namespace": "n", "finalizers": finalizer.map(|f| vec![f])},
                "spec": {"model": {"id": "a/b"}},
                "status": {"provider": {"name": provider}},
            }))
            .unwrap()
        };
        let kind = |e: Option<Event<ModelDeployment>>| match e {
            None => "none",
            Some(Event::Apply(_)) => "apply",
            Some(Event::InitApply(_)) => "init-apply",
            Some(Event::Delete(_)) => "delete",
            Some(Event::Init) => "init",
            Some(Event::InitDone) => "init-done",
        };
        let event = |e, held| kind(provider_deployment_event(e, "kaito", |_| held));
        // Served: assigned, or moved away while still carrying the finalizer.
        assert_eq!(event(Event::Apply(md("kaito", None)), false), "apply");
        assert_eq!(
            event(
                Event::Apply(md("dynamo", Some("airunway.ai/kaito-provider"))),
                true
            ),
            "apply"
        );
        assert_eq!(
            event(Event::InitApply(md("kaito", None)), false),
            "init-apply"
        );
        // Not served: nothing, or a removal when the store held it.
        assert_eq!(event(Event::Apply(md("dynamo", None)), false), "none");
        assert_eq!(event(Event::Apply(md("dynamo", None)), true), "delete");
        assert_eq!(event(Event::InitApply(md("dynamo", None)), false), "none");
        // Deletions and the list markers pass.
        assert_eq!(event(Event::Delete(md("dynamo", None)), false), "delete");
        assert_eq!(event(Event::Init, false), "init");
        assert_eq!(event(Event::InitDone, false), "init-done");
    }

    #[test]
    fn a_crd_keeps_its_versions_and_conditions_only() {
        let mut crd: CustomResourceDefinition = serde_json::from_value(json!({
            "metadata": {"name": "httproutes.gateway.networking.k8s.io", "resourceVersion": "7",
                "creationTimestamp": "2026-11-27T12:00:00Z", "annotations": {"a": "b"},
                "managedFields": [{"manager": "kubectl", "operation": "Apply"}]},
            "spec": {"group": "gateway.networking.k8s.io", "scope": "Namespaced",
                "names": {"kind": "HTTPRoute", "plural": "httproutes"},
                "versions": [
                    {"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}},
                     "subresources": {"status": {}}},
                    {"name": "v1beta1", "served": false, "storage": false}]},
            "status": {"conditions": [{"type": "Established", "status": "True", "message": "the initial names have been accepted"}],
                "acceptedNames": {"kind": "HTTPRoute", "plural": "httproutes"}, "storedVersions": ["v1"]},
        }))
        .unwrap();
        crd_availability(&mut crd);
        assert_eq!(
            serde_json::to_value(&crd).unwrap(),
            json!({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "httproutes.gateway.networking.k8s.io", "resourceVersion": "7",
                    "creationTimestamp": "2026-11-27T12:00:00Z"},
                "spec": {"group": "gateway.networking.k8s.io", "scope": "Namespaced",
                    "names": {"kind": "HTTPRoute", "plural": "httproutes"},
                    "versions": [{"name": "v1", "served": true, "storage": true},
                        {"name": "v1beta1", "served": false, "storage": false}]},
                "status": {"conditions": [{"type": "Established", "status": "True"}], "storedVersions": ["v1"]},
            })
        );
    }
}
