//! `--simulate-upstream`: plays the upstream operators that cannot run here.
//!
//! - KAITO: [`super::kaito`] does what the KAITO controller does (the workload whose Pods
//!   really run on the simulated nodes, then the status from its readiness).
//! - Dynamo and KubeRay: the status they really write (`e2e/fixtures/status-samples/`) is
//!   written to the upstream objects the providers create: first "not ready yet", then
//!   "ready", a few seconds apart. (The real KubeRay operator runs in the sandbox without
//!   `--simulate-upstream`, up to where it needs a Ray dashboard.)
//!
//! Sandbox and test code only; never part of a shipped binary.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Result;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use crate::paths;

/// How far an object's simulated lifecycle has got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Created, no status written yet.
    Created,
    /// "Not ready yet" written.
    Progressing,
    /// "Ready" written.
    Ready,
}

/// The Workspace status KAITO writes at `stage`.
pub fn workspace_status(stage: Stage) -> Result<Value> {
    paths::upstream_status_sample(match stage {
        Stage::Ready => "workspace-ready.yaml",
        _ => "workspace-pending.yaml",
    })
}

/// The DynamoGraphDeployment status the Dynamo operator writes at `stage`, with the components
/// of `dgd` (the samples' condition wording, this object's component names and replica counts):
/// a `v1beta1` graph (`spec.components[]`, Dynamo ≥ 1.5) gets `status.components` from the
/// `dgd-v1beta1-*.yaml` samples, a `v1alpha1` one (`spec.services`, Dynamo 1.1)
/// `status.services` from the `dgd-*.yaml` ones.
pub fn dgd_status(dgd: &Value, stage: Stage) -> Result<Value> {
    let beta = dgd["spec"]["components"].is_array();
    let sample = match (stage, beta) {
        (Stage::Ready, true) => "dgd-v1beta1-successful.yaml",
        (_, true) => "dgd-v1beta1-pending.yaml",
        (Stage::Ready, false) => "dgd-successful.yaml",
        (_, false) => "dgd-pending.yaml",
    };
    let mut status = paths::upstream_status_sample(sample)?;
    let name = dgd["metadata"]["name"].as_str().unwrap_or_default();
    let mut services = serde_json::Map::new();
    let mut not_ready = Vec::new();
    for (service, spec) in crate::dynamo_graph::components(dgd) {
        let replicas = spec["replicas"].as_i64().unwrap_or(1);
        let component = format!("{name}-{}", service.to_lowercase());
        let ready = if stage == Stage::Ready { replicas } else { 0 };
        not_ready.push(format!(
            "{component}: Component deployment not ready - Available condition not true"
        ));
        let mut reported = json!({
            "componentKind": "Deployment", "componentNames": [component],
            "replicas": replicas, "updatedReplicas": replicas, "readyReplicas": ready, "availableReplicas": ready,
        });
        // Dynamo 1.1 also wrote the singular name; v1beta1 status has only the list.
        if !beta {
            reported["componentName"] = json!(component);
        }
        services.insert(service.to_string(), reported);
    }
    status[if beta { "components" } else { "services" }] = Value::Object(services);
    if stage != Stage::Ready
        && let Some(condition) = status["conditions"].get_mut(0)
    {
        condition["message"] = json!(format!("Resources not ready: {}", not_ready.join("; ")));
    }
    status["observedGeneration"] = dgd["metadata"]["generation"].clone();
    Ok(status)
}

/// The RayService status the KubeRay operator writes at `stage` for `ray_service`: the samples'
/// conditions and wording, with this object's cluster name and worker replica counts. Until
/// it is ready everything sits in `pendingServiceStatus`; once ready the cluster is promoted to
/// `activeServiceStatus` with the Serve application `RUNNING`.
pub fn rayservice_status(ray_service: &Value, stage: Stage) -> Result<Value> {
    let mut status = paths::upstream_status_sample(match stage {
        Stage::Ready => "rayservice-running.yaml",
        _ => "rayservice-pending.yaml",
    })?;
    let name = ray_service["metadata"]["name"].as_str().unwrap_or_default();
    let cluster_name = format!("{name}-raycluster-sandb");
    let workers: i64 = ray_service["spec"]["rayClusterConfig"]["workerGroupSpecs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| g["replicas"].as_i64().unwrap_or(0))
        .sum();
    let serving = if stage == Stage::Ready {
        "activeServiceStatus"
    } else {
        "pendingServiceStatus"
    };
    let cluster = &mut status[serving];
    cluster["rayClusterName"] = json!(cluster_name);
    let cluster_status = &mut cluster["rayClusterStatus"];
    let ready = if stage == Stage::Ready { workers } else { 0 };
    for (field, value) in [
        ("desiredWorkerReplicas", workers),
        ("minWorkerReplicas", workers),
        ("maxWorkerReplicas", workers),
        ("readyWorkerReplicas", ready),
        ("availableWorkerReplicas", ready),
    ] {
        cluster_status[field] = json!(value);
    }
    cluster_status["head"]["podName"] = json!(format!("{cluster_name}-head-sandb"));
    cluster_status["head"]["serviceName"] = json!(format!("{cluster_name}-head-svc"));
    let generation = ray_service["metadata"]["generation"].clone();
    status["observedGeneration"] = generation.clone();
    for condition in status["conditions"].as_array_mut().into_iter().flatten() {
        condition["observedGeneration"] = generation.clone();
    }
    Ok(status)
}

/// Builds the status an upstream operator writes for an object at a stage.
type StatusFor = fn(&Value, Stage) -> Result<Value>;

fn upstream_kinds() -> [(ApiResource, StatusFor); 2] {
    // The storage version of the Dynamo >= 1.5 CRD the sandbox installs (no conversion call).
    let dgd = ApiResource {
        group: "nvidia.com".into(),
        version: "v1beta1".into(),
        api_version: "nvidia.com/v1beta1".into(),
        kind: "DynamoGraphDeployment".into(),
        plural: "dynamographdeployments".into(),
    };
    let ray_service = ApiResource {
        group: "ray.io".into(),
        version: "v1".into(),
        api_version: "ray.io/v1".into(),
        kind: "RayService".into(),
        plural: "rayservices".into(),
    };
    [(dgd, dgd_status), (ray_service, rayservice_status)]
}

/// Runs the simulation forever: KAITO Workspaces are reconciled as KAITO does
/// ([`super::kaito`]); each Dynamo and KubeRay object created by a provider gets "not ready"
/// after `delay` and "ready" after twice `delay` (again after it is recreated).
pub async fn run(client: Client, delay: Duration) -> Result<()> {
    let mut seen: HashMap<String, (Instant, Stage)> = HashMap::new();
    let selector = ListParams::default().labels("airunway.ai/managed-by=airunway");
    if let Err(e) = super::kaito::install_controller_stand_in(&client).await {
        eprintln!("simulated KAITO: installing the controller stand-in: {e:#}");
    }
    loop {
        if let Err(e) = super::kaito::reconcile_all(&client, None).await {
            eprintln!("simulated KAITO: {e:#}");
        }
        for (resource, status_for) in upstream_kinds() {
            let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
            let Ok(list) = api.list(&selector).await else {
                continue;
            };
            for object in list.items {
                let (Some(uid), Some(name), Some(namespace)) = (
                    object.metadata.uid.clone(),
                    object.metadata.name.clone(),
                    object.metadata.namespace.clone(),
                ) else {
                    continue;
                };
                let (since, stage) = *seen
                    .entry(uid.clone())
                    .or_insert((Instant::now(), Stage::Created));
                // A real operator reports on every new generation (a spec change): a ready
                // object whose status is about an older generation is reported on again.
                let behind = matches!(
                    (object.data["status"]["observedGeneration"].as_i64(), object.metadata.generation),
                    (Some(observed), Some(generation)) if observed < generation
                );
                let next = match stage {
                    Stage::Created if since.elapsed() >= delay => Stage::Progressing,
                    Stage::Progressing if since.elapsed() >= delay * 2 => Stage::Ready,
                    Stage::Ready if behind => Stage::Ready,
                    _ => continue,
                };
                let value = serde_json::to_value(&object)?;
                let status = status_for(&value, next)?;
                // The operators write their whole status (`Status().Update`), so the status is
                // replaced, not merged: a merge would keep fields of the previous stage (e.g.
                // KubeRay's pending cluster after its promotion).
                let replace: json_patch::Patch = serde_json::from_value(
                    json!([{"op": "add", "path": "/status", "value": status}]),
                )?;
                let namespaced: Api<DynamicObject> =
                    Api::namespaced_with(client.clone(), &namespace, &resource);
                match namespaced
                    .patch_status(&name, &PatchParams::default(), &Patch::Json::<()>(replace))
                    .await
                {
                    Ok(_) => {
                        println!("simulated {} {namespace}/{name}: {next:?}", resource.kind);
                        seen.insert(uid, (since, next));
                    }
                    Err(e) => eprintln!("simulating {} {namespace}/{name}: {e}", resource.kind),
                }
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn dgd_status_follows_the_object() {
        let dgd = json!({"metadata": {"name": "pd", "generation": 2}, "spec": {"services": {
            "Frontend": {"replicas": 2}, "VllmPrefillWorker": {"replicas": 2}, "VllmDecodeWorker": {"replicas": 4}}}});
        let pending = dgd_status(&dgd, Stage::Progressing).unwrap();
        assert_eq!(pending["state"], "pending");
        assert_eq!(pending["services"]["VllmDecodeWorker"]["readyReplicas"], 0);
        assert!(
            pending["conditions"][0]["message"]
                .as_str()
                .unwrap()
                .contains("pd-vllmprefillworker: Component deployment not ready")
        );
        let ready = dgd_status(&dgd, Stage::Ready).unwrap();
        assert_eq!(ready["state"], "successful");
        assert_eq!(ready["services"]["VllmDecodeWorker"]["readyReplicas"], 4);
        assert_eq!(ready["observedGeneration"], 2);
        // A v1beta1 graph: Dynamo >= 1.5's status.components.
        let beta = json!({"metadata": {"name": "pd", "generation": 1}, "spec": {"components": [
            {"name": "Frontend", "replicas": 1}, {"name": "VllmDecodeWorker", "type": "decode", "replicas": 2}]}});
        let pending = dgd_status(&beta, Stage::Progressing).unwrap();
        assert_eq!(pending["services"], Value::Null);
        assert_eq!(pending["components"]["VllmDecodeWorker"]["replicas"], 2);
        assert_eq!(
            pending["components"]["VllmDecodeWorker"]["componentName"],
            Value::Null
        );
        let ready = dgd_status(&beta, Stage::Ready).unwrap();
        assert_eq!(ready["components"]["VllmDecodeWorker"]["readyReplicas"], 2);
        assert_eq!(workspace_status(Stage::Ready).unwrap()["state"], "Ready");
    }

    #[test]
    fn rayservice_status_follows_the_object() {
        let ray_service = json!({"metadata": {"name": "pd", "generation": 3}, "spec": {"rayClusterConfig": {"workerGroupSpecs": [
            {"groupName": "prefill-workers", "replicas": 2}, {"groupName": "decode-workers", "replicas": 3}]}}});
        let pending = rayservice_status(&ray_service, Stage::Progressing).unwrap();
        assert_eq!(pending["conditions"][0]["reason"], "Initializing");
        assert_eq!(
            pending["pendingServiceStatus"]["rayClusterName"],
            "pd-raycluster-sandb"
        );
        assert_eq!(
            pending["pendingServiceStatus"]["rayClusterStatus"]["desiredWorkerReplicas"],
            5
        );
        assert_eq!(
            pending["pendingServiceStatus"]["rayClusterStatus"]["readyWorkerReplicas"],
            0
        );
        let ready = rayservice_status(&ray_service, Stage::Ready).unwrap();
        assert_eq!(ready["conditions"][0]["status"], "True");
        assert_eq!(
            ready["activeServiceStatus"]["applicationStatuses"]["llm"]["status"],
            "RUNNING"
        );
        assert_eq!(
            ready["activeServiceStatus"]["rayClusterStatus"]["readyWorkerReplicas"],
            5
        );
        assert_eq!(ready["observedGeneration"], 3);
        assert_eq!(ready["conditions"][1]["observedGeneration"], 3);
    }
}
