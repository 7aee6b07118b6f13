//! Where a RayService's serving pods are, and the Serve failures its replica counts do not
//! show (pure), from what the KubeRay operator v1.3 does:
//!
//! - The RayService runs on a RayCluster (`ray.io/v1`) named in
//!   `status.activeServiceStatus.rayClusterName` once it serves, in
//!   `status.pendingServiceStatus.rayClusterName` while it is first prepared (or upgraded):
//!   `status.workload.workloads` is that cluster, the serving one when there is one.
//! - KubeRay labels every Ray pod `ray.io/cluster: <cluster>` and `ray.io/node-type: head|worker`;
//!   the `<name>-serve-svc` Service selects `ray.io/serve: "true"`, which KubeRay sets on every
//!   worker pod of a RayService and on the head only while its Serve proxy is healthy. The
//!   worker pods are what `scaling.replicas` scales (the GPU groups, where the vLLM replicas
//!   run), so the pod selector is the cluster's workers: container `ray-worker`, Serve port 8000.
//! - A change of the worker groups' `replicas` alone is applied by KubeRay to the same
//!   RayCluster (its cluster hash leaves replicas out), so scaling is in place.
//! - Degraded beyond the counts: the cluster serves (`Ready=True`) but a Serve application of
//!   the active cluster is `UNHEALTHY` or `DEPLOY_FAILED`, or an update failed to deploy while
//!   the previous version keeps serving: `ApplicationUnhealthy`.

use std::collections::BTreeMap;

use airunway_api::constants::reasons;
use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::Degradation;
use airunway_api::serde_json::Value;
use airunway_api::v1alpha1::{WorkloadReference, WorkloadStatus};

use crate::render::{SERVE_PORT, WORKER_CONTAINER};
use crate::status::{DEPLOY_FAILED, RUNNING, UNHEALTHY, applications};

/// The pod label naming a Ray pod's RayCluster.
pub const CLUSTER_LABEL: &str = "ray.io/cluster";
/// The pod label telling a head pod from a worker pod.
pub const NODE_TYPE_LABEL: &str = "ray.io/node-type";
/// `ray.io/node-type` of worker pods.
pub const WORKER_NODE: &str = "worker";

fn cluster_of(service_status: &Value) -> Option<&str> {
    service_status["rayClusterName"]
        .as_str()
        .filter(|n| !n.is_empty())
}

/// The RayCluster serving the RayService: the active one, else the one being prepared.
pub fn serving_cluster(ray_service: &Value) -> Option<&str> {
    let status = &ray_service["status"];
    cluster_of(&status["activeServiceStatus"])
        .or_else(|| cluster_of(&status["pendingServiceStatus"]))
}

/// `status.workload` of `ray_service`: its serving RayCluster and that cluster's worker pods
/// (none before KubeRay named a cluster).
pub fn workload(ray_service: Option<&DynamicObject>) -> Option<WorkloadStatus> {
    let cluster = serving_cluster(&ray_service?.data)?;
    Some(WorkloadStatus {
        upstream: None,
        workloads: Some(vec![WorkloadReference {
            api_version: "ray.io/v1".into(),
            kind: "RayCluster".into(),
            name: cluster.into(),
            uid: None,
            role: None,
        }]),
        pod_selector: Some(BTreeMap::from([
            (CLUSTER_LABEL.to_string(), cluster.to_string()),
            (NODE_TYPE_LABEL.to_string(), WORKER_NODE.to_string()),
        ])),
        container: Some(WORKER_CONTAINER.into()),
        port: Some(SERVE_PORT),
    })
}

/// `Degraded=True` with `ApplicationUnhealthy` while the cluster serves but a Serve
/// application failed (see the module documentation).
pub fn degradation(ray_service: Option<&DynamicObject>) -> Option<Degradation> {
    let status = &ray_service?.data["status"];
    let endpoints_ready = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    if !endpoints_ready {
        return None;
    }
    let active = applications(&status["activeServiceStatus"]);
    if let Some(failed) = active
        .iter()
        .find(|a| a.status == UNHEALTHY || a.status == DEPLOY_FAILED)
    {
        let detail = failed.message.trim();
        let message = if detail.is_empty() {
            format!(
                "Serve application {} is {} while the Ray cluster serves",
                failed.name, failed.status
            )
        } else {
            format!(
                "Serve application {} is {} while the Ray cluster serves: {detail}",
                failed.name, failed.status
            )
        };
        return Some(Degradation {
            reason: reasons::APPLICATION_UNHEALTHY,
            message,
        });
    }
    let active_running = !active.is_empty() && active.iter().all(|a| a.status == RUNNING);
    let failed_update = applications(&status["pendingServiceStatus"])
        .into_iter()
        .find(|a| a.status == DEPLOY_FAILED)?;
    active_running.then(|| Degradation {
        reason: reasons::APPLICATION_UNHEALTHY,
        message: format!(
            "The update failed to deploy; the previous version keeps serving: {}",
            failed_update.described()
        ),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use airunway_api::serde_json::{self, json};

    fn ray_service(status: Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "ray.io/v1", "kind": "RayService",
            "metadata": {"name": "qwen3", "namespace": "ns"},
            "status": status,
        }))
        .unwrap()
    }

    fn ready(status: &str) -> Value {
        json!([{"type": "Ready", "status": status}])
    }

    fn apps(status: &str, message: &str) -> Value {
        json!({"llm": {"status": status, "message": message}})
    }

    #[test]
    fn the_serving_clusters_workers_are_the_workload() {
        let pending_only = ray_service(json!({
            "activeServiceStatus": {"rayClusterStatus": {}},
            "pendingServiceStatus": {"rayClusterName": "qwen3-raycluster-a1"},
        }));
        let found = workload(Some(&pending_only)).unwrap();
        assert_eq!(
            found.selector_string().as_deref(),
            Some("ray.io/cluster=qwen3-raycluster-a1,ray.io/node-type=worker")
        );
        let cluster = &found.workloads.as_ref().unwrap()[0];
        assert_eq!(
            (
                cluster.api_version.as_str(),
                cluster.kind.as_str(),
                cluster.name.as_str()
            ),
            ("ray.io/v1", "RayCluster", "qwen3-raycluster-a1")
        );
        assert_eq!(
            (found.container.as_deref(), found.port),
            (Some("ray-worker"), Some(8000))
        );
        // Serving and upgrading: the active cluster.
        let upgrading = ray_service(json!({
            "activeServiceStatus": {"rayClusterName": "qwen3-raycluster-a1"},
            "pendingServiceStatus": {"rayClusterName": "qwen3-raycluster-b2"},
        }));
        assert_eq!(
            serving_cluster(&upgrading.data),
            Some("qwen3-raycluster-a1")
        );
        // No cluster named yet.
        assert_eq!(workload(Some(&ray_service(json!({})))), None);
        assert_eq!(workload(None), None);
    }

    #[test]
    fn a_failed_application_on_a_ready_cluster_is_degraded() {
        for state in [UNHEALTHY, DEPLOY_FAILED] {
            let service = ray_service(json!({
                "conditions": ready("True"),
                "activeServiceStatus": {"rayClusterName": "c", "applicationStatuses": apps(state, "replica died")},
            }));
            let degraded = degradation(Some(&service)).unwrap();
            assert_eq!(degraded.reason, reasons::APPLICATION_UNHEALTHY);
            assert_eq!(
                degraded.message,
                format!(
                    "Serve application llm is {state} while the Ray cluster serves: replica died"
                )
            );
        }
        let failed_update = ray_service(json!({
            "conditions": ready("True"),
            "activeServiceStatus": {"rayClusterName": "a", "applicationStatuses": apps(RUNNING, "")},
            "pendingServiceStatus": {"rayClusterName": "b", "applicationStatuses": apps(DEPLOY_FAILED, "No module named 'x'")},
        }));
        assert_eq!(
            degradation(Some(&failed_update)).unwrap().message,
            "The update failed to deploy; the previous version keeps serving: No module named 'x'"
        );
        // Running, or not serving at all (Ready=False: the phase and Ready say it).
        let running = ray_service(json!({
            "conditions": ready("True"),
            "activeServiceStatus": {"rayClusterName": "a", "applicationStatuses": apps(RUNNING, "")},
        }));
        assert_eq!(degradation(Some(&running)), None);
        let not_serving = ray_service(json!({
            "conditions": ready("False"),
            "pendingServiceStatus": {"rayClusterName": "b", "applicationStatuses": apps(DEPLOY_FAILED, "x")},
        }));
        assert_eq!(degradation(Some(&not_serving)), None);
    }
}
