//! Where a DynamoGraphDeployment's serving pods are, and which partial failures its status
//! shows (pure), from what the Dynamo operator (1.1 line) really does:
//!
//! - The operator runs each service of the graph as a component workload and reports it in
//!   `status.services.<service>`: `componentKind` (`Deployment`; `PodClique` or
//!   `PodCliqueScalingGroup` on the Grove pathway; `LeaderWorkerSet` for multinode) and
//!   `componentName`/`componentNames` (e.g. `qwen3-vllmworker-7f3c9a1e`). Those are
//!   `status.workload.workloads`, each with its role: `frontend`, `worker` (aggregated),
//!   `prefill`, `decode` (the service's `subComponentType`), `epp`.
//! - Every component pod carries `nvidia.com/dynamo-graph-deployment-name: <graph>` and
//!   `nvidia.com/dynamo-component-type: <frontend|worker|epp|...>` (the operator's pod labels,
//!   `deploy/operator/internal/consts`); the workers are what `scaling.replicas` scales, so
//!   the pod selector is the graph's `worker` pods (prefill and decode workers both). The
//!   engine runs in the container `main`; workers serve no HTTP API themselves (the
//!   frontend Service `<name>-frontend:8000` does), so no port is reported.
//! - Degraded beyond the counts: a worker service with none of its replicas ready while the
//!   graph still serves (the frontend and another worker service ready) names that service.

use std::collections::BTreeMap;

use airunway_api::constants::reasons;
use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::{Degradation, replica_count};
use airunway_api::serde_json::{Map, Value};
use airunway_api::v1alpha1::{ModelDeployment, WorkloadReference, WorkloadStatus};

/// The pod label naming the graph a component pod belongs to.
pub const GRAPH_LABEL: &str = "nvidia.com/dynamo-graph-deployment-name";
/// The pod label carrying the component type (`frontend`, `worker`, `epp`, `planner`).
pub const COMPONENT_TYPE_LABEL: &str = "nvidia.com/dynamo-component-type";
/// The component type of the engine workers (aggregated, and on Dynamo 1.1 prefill and decode
/// alike).
pub const WORKER: &str = "worker";
/// The component type of prefill workers on Dynamo ≥ 1.5.
pub const PREFILL: &str = "prefill";
/// The component type of decode workers on Dynamo ≥ 1.5.
pub const DECODE: &str = "decode";
/// The name of the container the Dynamo operator runs a component's engine in.
pub const MAIN_CONTAINER: &str = "main";
/// At most this many workload references (the CRD's bound).
const MAX_WORKLOADS: usize = 16;

/// The API version of a component workload kind the operator reports.
fn api_version(kind: &str) -> Option<&'static str> {
    match kind {
        "Deployment" => Some("apps/v1"),
        "PodClique" | "PodCliqueScalingGroup" => Some("grove.io/v1alpha1"),
        "LeaderWorkerSet" => Some("leaderworkerset.x-k8s.io/v1"),
        _ => None,
    }
}

/// A component's role in the graph, from its spec: on `v1alpha1` its `subComponentType`
/// (`prefill`, `decode`), else its `componentType` (`frontend`, `worker`, `epp`); on `v1beta1`
/// its `type` (the same values).
pub fn role(service: &Value) -> Option<String> {
    service["subComponentType"]
        .as_str()
        .filter(|r| !r.is_empty())
        .or_else(|| service["componentType"].as_str())
        .or_else(|| service["type"].as_str())
        .filter(|r| !r.is_empty())
        .map(str::to_string)
}

/// Whether `role` runs the engine (aggregated, prefill or decode workers).
pub fn is_worker(role: Option<&str>) -> bool {
    matches!(role, Some(WORKER | PREFILL | DECODE))
}

/// The components the operator reports: `status.components` (Dynamo ≥ 1.5, the same in both
/// versions), else `status.services` (Dynamo 1.1).
pub fn reported(status: &Value) -> Option<&Map<String, Value>> {
    status["components"]
        .as_object()
        .or_else(|| status["services"].as_object())
}

/// The spec's components with their names: `spec.services` (`v1alpha1`) or
/// `spec.components[]` by `name` (`v1beta1`).
pub fn spec_components(dgd: &Value) -> Vec<(&str, &Value)> {
    if let Some(list) = dgd["spec"]["components"].as_array() {
        return list
            .iter()
            .filter_map(|c| c["name"].as_str().map(|name| (name, c)))
            .collect();
    }
    dgd["spec"]["services"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, s)| (name.as_str(), s))
        .collect()
}

/// The spec of the component `name` (`Value::Null` when the spec has none).
pub fn spec_component<'a>(dgd: &'a Value, name: &str) -> &'a Value {
    spec_components(dgd)
        .into_iter()
        .find(|(n, _)| *n == name)
        .map_or(&Value::Null, |(_, c)| c)
}

/// The pod label value of the workers [`workload`] selects: `worker`, except on a Dynamo ≥ 1.5
/// disaggregated graph, whose workers are typed (and labelled) `prefill` and `decode`: there
/// the decode workers, which produce every token (a label selector cannot name both).
fn selected_worker_type(dgd: Option<&DynamicObject>) -> &'static str {
    let typed = dgd.is_some_and(|dgd| {
        dgd.data["spec"]["components"]
            .as_array()
            .is_some_and(|list| list.iter().any(|c| c["type"] == DECODE))
    });
    if typed { DECODE } else { WORKER }
}

/// `status.workload` of the graph `dgd` for deployment `md`.
pub fn workload(md: &ModelDeployment, dgd: Option<&DynamicObject>) -> Option<WorkloadStatus> {
    let name = md.metadata.name.clone()?;
    let mut workloads = Vec::new();
    if let Some(dgd) = dgd {
        for (service, reported) in reported(&dgd.data["status"]).into_iter().flatten() {
            let Some(kind) = reported["componentKind"].as_str() else {
                continue;
            };
            let Some(api_version) = api_version(kind) else {
                continue;
            };
            let mut names: Vec<&str> = reported["componentNames"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if names.is_empty() {
                names.extend(reported["componentName"].as_str());
            }
            let role = role(spec_component(&dgd.data, service));
            workloads.extend(names.into_iter().map(|component| WorkloadReference {
                api_version: api_version.into(),
                kind: kind.into(),
                name: component.into(),
                uid: None,
                role: role.clone(),
            }));
        }
    }
    workloads.sort_by(|a, b| a.name.cmp(&b.name));
    workloads.truncate(MAX_WORKLOADS);
    Some(WorkloadStatus {
        upstream: None,
        workloads: (!workloads.is_empty()).then_some(workloads),
        pod_selector: Some(BTreeMap::from([
            (GRAPH_LABEL.to_string(), name),
            (
                COMPONENT_TYPE_LABEL.to_string(),
                selected_worker_type(dgd).to_string(),
            ),
        ])),
        container: Some(MAIN_CONTAINER.into()),
        port: None,
    })
}

/// `Degraded` beyond the replica counts: a worker service with none of its replicas ready
/// while the graph serves through others (the frontend and another worker service ready).
pub fn degradation(dgd: Option<&DynamicObject>) -> Option<Degradation> {
    let dgd = dgd?;
    let reported = reported(&dgd.data["status"])?;
    let ready = |s: &Value| {
        replica_count(&s["readyReplicas"])
            .or_else(|| replica_count(&s["availableReplicas"]))
            .unwrap_or(0)
    };
    let mut frontend_ready = false;
    let mut serving_workers = 0;
    let mut down = Vec::new();
    for (service, status) in reported {
        let role = role(spec_component(&dgd.data, service));
        let desired = replica_count(&status["replicas"]).unwrap_or(0);
        if role.as_deref() == Some("frontend") {
            frontend_ready |= ready(status) > 0;
        } else if is_worker(role.as_deref()) {
            if ready(status) > 0 {
                serving_workers += 1;
            } else if desired > 0 {
                down.push(format!("{service} 0/{desired}"));
            }
        }
    }
    (frontend_ready && serving_workers > 0 && !down.is_empty()).then(|| Degradation {
        reason: reasons::REPLICAS_UNAVAILABLE,
        message: format!(
            "Dynamo worker {} has no ready replica while the others serve",
            down.join(", ")
        ),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use airunway_api::serde_json::{self, json};

    fn md(name: &str) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": "ns"}, "spec": {"model": {"id": "Qwen/Qwen3-0.6B"}},
        }))
        .unwrap()
    }

    fn dgd(services: Value, status: Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment",
            "metadata": {"name": "qwen3", "namespace": "ns"},
            "spec": {"services": services},
            "status": {"services": status},
        }))
        .unwrap()
    }

    fn disaggregated_spec() -> Value {
        json!({
            "Frontend": {"componentType": "frontend"},
            "VllmPrefillWorker": {"componentType": "worker", "subComponentType": "prefill"},
            "VllmDecodeWorker": {"componentType": "worker", "subComponentType": "decode"},
        })
    }

    fn service(kind: &str, name: &str, replicas: i32, ready: i32) -> Value {
        json!({"componentKind": kind, "componentName": name, "componentNames": [name],
               "replicas": replicas, "readyReplicas": ready, "availableReplicas": ready})
    }

    #[test]
    fn the_workers_are_selected_and_every_component_is_listed_with_its_role() {
        let graph = dgd(
            disaggregated_spec(),
            json!({
                "Frontend": service("Deployment", "qwen3-frontend", 1, 1),
                "VllmPrefillWorker": service("Deployment", "qwen3-vllmprefillworker-1a", 2, 2),
                "VllmDecodeWorker": service("Deployment", "qwen3-vllmdecodeworker-2b", 4, 4),
            }),
        );
        let workload = workload(&md("qwen3"), Some(&graph)).unwrap();
        assert_eq!(
            workload.selector_string().as_deref(),
            Some(
                "nvidia.com/dynamo-component-type=worker,nvidia.com/dynamo-graph-deployment-name=qwen3"
            )
        );
        assert_eq!(workload.container.as_deref(), Some("main"));
        assert_eq!(workload.port, None);
        let listed: Vec<(String, String, String, Option<String>)> = workload
            .workloads
            .unwrap()
            .into_iter()
            .map(|w| (w.api_version, w.kind, w.name, w.role))
            .collect();
        let deployment = |name: &str, role: &str| {
            (
                "apps/v1".to_string(),
                "Deployment".to_string(),
                name.to_string(),
                Some(role.to_string()),
            )
        };
        assert_eq!(
            listed,
            vec![
                deployment("qwen3-frontend", "frontend"),
                deployment("qwen3-vllmdecodeworker-2b", "decode"),
                deployment("qwen3-vllmprefillworker-1a", "prefill"),
            ]
        );
    }

    #[test]
    fn grove_components_and_a_graph_without_status() {
        let graph = dgd(
            json!({"VllmWorker": {"componentType": "worker"}}),
            json!({"VllmWorker": {"componentKind": "PodClique", "componentName": "qwen3-0-vllmworker"}}),
        );
        let listed = workload(&md("qwen3"), Some(&graph))
            .unwrap()
            .workloads
            .unwrap();
        assert_eq!(listed[0].api_version, "grove.io/v1alpha1");
        assert_eq!(listed[0].kind, "PodClique");
        assert_eq!(listed[0].role.as_deref(), Some("worker"));
        // Before the operator reports its components: the selector alone.
        let bare = workload(&md("qwen3"), None).unwrap();
        assert_eq!(bare.workloads, None);
        assert!(bare.pod_selector.is_some());
    }

    #[test]
    fn a_worker_service_down_while_others_serve_is_degraded() {
        let graph = |prefill_ready: i32, decode_ready: i32, frontend_ready: i32| {
            dgd(
                disaggregated_spec(),
                json!({
                    "Frontend": service("Deployment", "qwen3-frontend", 1, frontend_ready),
                    "VllmPrefillWorker": service("Deployment", "p", 1, prefill_ready),
                    "VllmDecodeWorker": service("Deployment", "d", 2, decode_ready),
                }),
            )
        };
        let degraded = degradation(Some(&graph(0, 2, 1))).unwrap();
        assert_eq!(degraded.reason, reasons::REPLICAS_UNAVAILABLE);
        assert_eq!(
            degraded.message,
            "Dynamo worker VllmPrefillWorker 0/1 has no ready replica while the others serve"
        );
        // All up, all down, or no frontend: the counts say it (or nothing serves).
        assert_eq!(degradation(Some(&graph(1, 2, 1))), None);
        assert_eq!(degradation(Some(&graph(0, 0, 1))), None);
        assert_eq!(degradation(Some(&graph(0, 2, 0))), None);
        assert_eq!(degradation(None), None);
    }
}
