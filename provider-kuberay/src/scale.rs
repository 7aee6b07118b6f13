//! Scaling a running RayService in place: the worker replicas of its RayClusters.
//!
//! KubeRay (v1.3, and v1.5 still) applies a RayService's `rayClusterConfig` to its RayCluster
//! only when the cluster's hash changes, and that hash leaves out the worker groups'
//! `replicas`, `minReplicas` and `maxReplicas` (they belong to Ray's autoscaler): a changed
//! `replicas` in the RayService reaches a cluster created after it, never the running one. So
//! the provider does what Ray's autoscaler does: it writes the worker groups' replicas of the
//! RayService's clusters (those named in its status and owned by it) to what it rendered, and
//! the RayCluster controller adds or removes worker pods in place. Serve's `num_replicas`
//! follows through `serveConfigV2`, which KubeRay submits to the running cluster.

use airunway_api::serde_json::{Value, json};
use airunway_api::v1alpha1::{ModelDeployment, ServingMode};

use crate::render::{DECODE_GROUP, GPU_GROUP, PREFILL_GROUP};

/// The worker groups of `md` and the replicas each should run.
pub fn desired_groups(md: &ModelDeployment) -> Vec<(&'static str, i32)> {
    let spec = &md.spec;
    match spec.serving_mode() {
        ServingMode::Aggregated => vec![(GPU_GROUP, spec.replicas())],
        ServingMode::Disaggregated => {
            let scaling = spec.scaling.as_ref();
            vec![
                (
                    PREFILL_GROUP,
                    spec.role_replicas(scaling.and_then(|s| s.prefill.as_ref())),
                ),
                (
                    DECODE_GROUP,
                    spec.role_replicas(scaling.and_then(|s| s.decode.as_ref())),
                ),
            ]
        }
    }
}

/// The RayClusters of `ray_service` (a RayService as served): those named in its active and
/// pending status.
pub fn cluster_names(ray_service: &Value) -> Vec<String> {
    let status = &ray_service["status"];
    ["activeServiceStatus", "pendingServiceStatus"]
        .iter()
        .filter_map(|s| status[s]["rayClusterName"].as_str())
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

/// The JSON patch that sets the worker replicas of `cluster` (a RayCluster as served) to
/// `groups`, each guarded by a test of the group's name; `None` when they are already so, or
/// when the cluster is not the RayService `ray_service_uid`'s.
pub fn replicas_patch(
    cluster: &Value,
    ray_service_uid: &str,
    groups: &[(&str, i32)],
) -> Option<Value> {
    let owned = cluster["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|o| o["kind"] == "RayService" && o["uid"] == ray_service_uid);
    if !owned {
        return None;
    }
    let mut ops = Vec::new();
    for (index, group) in cluster["spec"]["workerGroupSpecs"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let Some(name) = group["groupName"].as_str() else {
            continue;
        };
        let Some((_, replicas)) = groups.iter().find(|(g, _)| *g == name) else {
            continue;
        };
        let fields = ["replicas", "minReplicas", "maxReplicas"];
        if fields.iter().all(|f| group[f] == json!(replicas)) {
            continue;
        }
        let path = format!("/spec/workerGroupSpecs/{index}");
        ops.push(json!({"op": "test", "path": format!("{path}/groupName"), "value": name}));
        for field in fields {
            ops.push(json!({"op": "add", "path": format!("{path}/{field}"), "value": replicas}));
        }
    }
    (!ops.is_empty()).then_some(Value::Array(ops))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use airunway_api::serde_json;

    fn md(mut spec: Value) -> ModelDeployment {
        spec["model"] = json!({"id": "a/b"});
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns"}, "spec": spec,
        }))
        .unwrap()
    }

    fn cluster(owner: &str, groups: Value) -> Value {
        json!({"metadata": {"name": "m-raycluster-a", "ownerReferences": [{"kind": "RayService", "uid": owner}]},
               "spec": {"workerGroupSpecs": groups}})
    }

    #[test]
    fn the_groups_follow_scaling_replicas_and_the_ratio() {
        assert_eq!(
            desired_groups(&md(json!({"scaling": {"replicas": 3}}))),
            vec![(GPU_GROUP, 3)]
        );
        assert_eq!(
            desired_groups(&md(json!({"serving": {"mode": "disaggregated"},
                "scaling": {"replicas": 2, "prefill": {"replicas": 1}, "decode": {"replicas": 2}}}))),
            vec![(PREFILL_GROUP, 2), (DECODE_GROUP, 4)]
        );
    }

    #[test]
    fn only_the_groups_that_differ_are_patched_on_an_owned_cluster() {
        let groups = json!([
            {"groupName": "prefill-workers", "replicas": 1, "minReplicas": 1, "maxReplicas": 1},
            {"groupName": "decode-workers", "replicas": 4, "minReplicas": 4, "maxReplicas": 4},
        ]);
        let wanted = [(PREFILL_GROUP, 2), (DECODE_GROUP, 4)];
        let patch = replicas_patch(&cluster("rs-uid", groups.clone()), "rs-uid", &wanted).unwrap();
        assert_eq!(
            patch,
            json!([
                {"op": "test", "path": "/spec/workerGroupSpecs/0/groupName", "value": "prefill-workers"},
                {"op": "add", "path": "/spec/workerGroupSpecs/0/replicas", "value": 2},
                {"op": "add", "path": "/spec/workerGroupSpecs/0/minReplicas", "value": 2},
                {"op": "add", "path": "/spec/workerGroupSpecs/0/maxReplicas", "value": 2},
            ])
        );
        // As wanted, or another RayService's cluster: nothing.
        let same = [(PREFILL_GROUP, 1), (DECODE_GROUP, 4)];
        assert_eq!(
            replicas_patch(&cluster("rs-uid", groups.clone()), "rs-uid", &same),
            None
        );
        assert_eq!(
            replicas_patch(&cluster("other", groups), "rs-uid", &wanted),
            None
        );
    }

    #[test]
    fn the_clusters_are_those_named_in_the_status() {
        let ray_service = json!({"status": {
            "activeServiceStatus": {"rayClusterName": "a"},
            "pendingServiceStatus": {"rayClusterName": ""},
        }});
        assert_eq!(cluster_names(&ray_service), ["a"]);
        assert!(cluster_names(&json!({})).is_empty());
    }
}
