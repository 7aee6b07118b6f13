//! Plays the KAITO workspace controller v0.10.0 (its Go module is not served here, so it cannot
//! be built) for the Workspaces AI Runway creates, doing to them what KAITO does in BYO-node
//! mode (node auto-provisioning off, as AI Runway installs KAITO), from KAITO's documented
//! behaviour and the status samples in `e2e/fixtures/status-samples/workspace-*.yaml`:
//!
//! 1. Nodes: the Ready nodes matching `resource.labelSelector` are the worker nodes; fewer
//!    than `resource.count` → status "nodes not ready" (`NodesReady=False`, state Pending) and
//!    nothing is created.
//! 2. The workload, owned by the Workspace and named like it, with a required node affinity
//!    on the label selector: a **StatefulSet** (KAITO runs every inference Workspace as one
//!    since v0.8) whose pods carry `kaito.sh/workspace: <name>` (its selector): for
//!    `inference.template` from that pod template, for `inference.preset` with one container
//!    named like the Workspace asking for every GPU of a matching node. `resource.count`
//!    replicas, set once: KAITO never resizes it (its webhook refuses a `resource.count`
//!    change). A Service `<name>` (port 80 → 5000) selects pod `<name>-0` (KAITO's selector:
//!    `statefulset.kubernetes.io/pod-name`), a headless Service `<name>-headless` every pod.
//!    The Pods then really run: kube-scheduler places them and KWOK reports them Running/Ready.
//! 3. Status, from the workload's real readiness: `readyReplicas == replicas` → state Ready
//!    (`InferenceReady=True`); before that → Pending; after having been Ready → NotReady.
//!    `workerNodes` and `targetNodeCount` are the real ones.
//!
//! What stays simulated: no model is loaded (the images are never pulled), no preset's GPU
//! sizing (a preset takes all GPUs of one node), no node auto-provisioning, no tuning, no
//! benchmark. The KAITO controller's own Deployment is a stand-in ([`install_controller_stand_in`])
//! so the KAITO provider, which is ready only while a KAITO controller runs, sees one.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, Node, Service};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use crate::paths;

/// The namespace the KAITO workspace chart installs its controller into.
pub const CONTROLLER_NAMESPACE: &str = "kaito-workspace";
/// The label KAITO puts on a Workspace's Pods.
pub const WORKSPACE_LABEL: &str = "kaito.sh/workspace";
/// The port KAITO's inference servers listen on.
pub const INFERENCE_PORT: i32 = 5000;

/// The Workspace kind.
pub fn workspace_resource() -> ApiResource {
    ApiResource {
        group: "kaito.sh".into(),
        version: "v1beta1".into(),
        api_version: "kaito.sh/v1beta1".into(),
        kind: "Workspace".into(),
        plural: "workspaces".into(),
    }
}

fn already_exists(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(status) if status.code == 409)
}

async fn create_if_missing<K>(api: &Api<K>, object: &K) -> Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    match api.create(&PostParams::default(), object).await {
        Ok(_) => Ok(()),
        Err(e) if already_exists(&e) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// A stand-in for the KAITO workspace controller's Deployment, labelled as the KAITO Helm
/// chart labels it (`app.kubernetes.io/name: workspace`) in `kaito-workspace`. Its Pod runs on
/// a simulated node like any other; it does nothing: [`reconcile`] does the controller's work.
pub async fn install_controller_stand_in(client: &Client) -> Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    create_if_missing(
        &namespaces,
        &serde_json::from_value(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CONTROLLER_NAMESPACE}}))?,
    )
    .await?;
    let labels = json!({"app.kubernetes.io/name": "workspace", "app.kubernetes.io/instance": "kaito-workspace"});
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "kaito-workspace", "namespace": CONTROLLER_NAMESPACE, "labels": labels,
                     "annotations": {"airunway.ai/simulated": "stand-in for the KAITO workspace controller v0.10.0; the e2e simulator does its work"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "manager", "image": "registry.invalid/simulated/kaito-workspace:0.10.0"}]}}},
    }))?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), CONTROLLER_NAMESPACE);
    create_if_missing(&deployments, &deployment).await
}

fn match_labels(workspace: &Value) -> BTreeMap<String, String> {
    workspace["resource"]["labelSelector"]["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
        .collect()
}

fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// KAITO's required node affinity for the Workspace's label selector.
fn node_affinity(labels: &BTreeMap<String, String>) -> Value {
    let expressions: Vec<Value> = labels
        .iter()
        .map(|(k, v)| json!({"key": k, "operator": "In", "values": [v]}))
        .collect();
    json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": expressions}]}}})
}

fn owner_reference(workspace: &DynamicObject) -> Result<Value> {
    Ok(
        json!({"apiVersion": "kaito.sh/v1beta1", "kind": "Workspace",
              "name": workspace.name_any(),
              "uid": workspace.metadata.uid.clone().context("workspace without uid")?,
              "controller": true, "blockOwnerDeletion": true}),
    )
}

/// The status KAITO writes in a situation, from the sample, with this Workspace's nodes,
/// target node count and generation.
fn status_from_sample(
    file: &str,
    worker_nodes: &[String],
    target: i64,
    generation: &Value,
) -> Result<Value> {
    let mut status = paths::upstream_status_sample(file)?;
    status["workerNodes"] = json!(worker_nodes);
    status["targetNodeCount"] = json!(target);
    let now = jiff::Timestamp::now()
        .round(jiff::Unit::Second)?
        .to_string();
    for condition in status["conditions"].as_array_mut().into_iter().flatten() {
        condition["observedGeneration"] = generation.clone();
        condition["lastTransitionTime"] = json!(now);
    }
    Ok(status)
}

/// One reconcile of one Workspace, as KAITO does it. Returns the state written, if any.
pub async fn reconcile(client: &Client, workspace: &DynamicObject) -> Result<Option<String>> {
    let name = workspace.name_any();
    let namespace = workspace
        .namespace()
        .context("workspace without namespace")?;
    let value = serde_json::to_value(workspace)?;
    let generation = value["metadata"]["generation"].clone();
    let target = value["resource"]["count"].as_i64().unwrap_or(1).max(1);
    let selector = match_labels(&value);

    // 1. Nodes.
    let label_selector = selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let nodes: Api<Node> = Api::all(client.clone());
    let matching: Vec<Node> = nodes
        .list(&ListParams::default().labels(&label_selector))
        .await?
        .items
        .into_iter()
        .filter(is_ready)
        .collect();
    let mut worker_nodes: Vec<String> = matching.iter().map(|n| n.name_any()).collect();
    worker_nodes.sort();
    let current_state = value["status"]["state"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (file, state) = if (worker_nodes.len() as i64) < target {
        ("workspace-nodes-not-ready.yaml", "Pending")
    } else {
        // 2. The workload and its Services.
        let owner = owner_reference(workspace)?;
        let pod_labels = json!({WORKSPACE_LABEL: name});
        let services: Api<Service> = Api::namespaced(client.clone(), &namespace);
        create_if_missing(&services, &serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "ownerReferences": [owner], "labels": pod_labels},
            "spec": {"selector": {WORKSPACE_LABEL: name, "statefulset.kubernetes.io/pod-name": format!("{name}-0")},
                     "ports": [{"name": "http", "port": 80, "targetPort": INFERENCE_PORT}]},
        }))?)
        .await?;
        create_if_missing(&services, &serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("{name}-headless"), "ownerReferences": [owner], "labels": pod_labels},
            "spec": {"clusterIP": "None", "publishNotReadyAddresses": true, "selector": pod_labels,
                     "ports": [{"name": "http", "port": INFERENCE_PORT}]},
        }))?)
        .await?;
        let template = if value["inference"]["template"].is_object() {
            let mut template = value["inference"]["template"].clone();
            let mut labels = template["metadata"]["labels"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            labels.insert(WORKSPACE_LABEL.into(), json!(name));
            template["metadata"]["labels"] = Value::Object(labels);
            template["spec"]["affinity"] = node_affinity(&selector);
            template
        } else {
            // A preset name may be a Hugging Face id (`Qwen/Qwen3-0.6B`): made image-safe.
            let preset = value["inference"]["preset"]["name"]
                .as_str()
                .unwrap_or("preset")
                .to_lowercase()
                .replace('/', "-");
            let gpus = matching
                .first()
                .and_then(|n| {
                    n.status
                        .as_ref()?
                        .allocatable
                        .as_ref()?
                        .get("nvidia.com/gpu")
                        .cloned()
                })
                .map(|q| q.0)
                .unwrap_or_else(|| "1".into());
            json!({"metadata": {"labels": pod_labels},
                   "spec": {"affinity": node_affinity(&selector),
                            "containers": [{"name": name,
                                "image": format!("registry.invalid/simulated/kaito-preset-{preset}:0.10.0"),
                                "ports": [{"containerPort": INFERENCE_PORT}],
                                "resources": {"limits": {"nvidia.com/gpu": gpus}, "requests": {"nvidia.com/gpu": gpus}}}]}})
        };
        let statefulsets: Api<StatefulSet> = Api::namespaced(client.clone(), &namespace);
        create_if_missing(
            &statefulsets,
            &serde_json::from_value(json!({
                "apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": name, "ownerReferences": [owner], "labels": pod_labels},
                "spec": {"replicas": target, "serviceName": format!("{name}-headless"),
                         "podManagementPolicy": "Parallel",
                         "selector": {"matchLabels": pod_labels},
                         "template": template},
            }))?,
        )
        .await?;
        let status = statefulsets.get(&name).await?.status.unwrap_or_default();
        let (replicas, ready) = (status.replicas, status.ready_replicas.unwrap_or(0));
        // 3. Status from the workload's readiness.
        if replicas > 0 && ready >= replicas && i64::from(ready) >= target {
            ("workspace-ready.yaml", "Ready")
        } else if current_state == "Ready" || current_state == "NotReady" {
            ("workspace-notready.yaml", "NotReady")
        } else {
            ("workspace-pending.yaml", "Pending")
        }
    };
    let status = status_from_sample(file, &worker_nodes, target, &generation)?;
    let without_times = |status: &Value| {
        let mut status = status.clone();
        for condition in status["conditions"].as_array_mut().into_iter().flatten() {
            if let Some(c) = condition.as_object_mut() {
                c.remove("lastTransitionTime");
            }
        }
        status
    };
    if without_times(&value["status"]) == without_times(&status) {
        return Ok(None);
    }
    let replace: json_patch::Patch =
        serde_json::from_value(json!([{"op": "add", "path": "/status", "value": status}]))?;
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &namespace, &workspace_resource());
    api.patch_status(&name, &PatchParams::default(), &Patch::Json::<()>(replace))
        .await?;
    Ok(Some(state.to_string()))
}

/// Reconciles every Workspace AI Runway manages (in `namespace` only, when given) once.
pub async fn reconcile_all(client: &Client, namespace: Option<&str>) -> Result<()> {
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &workspace_resource()),
        None => Api::all_with(client.clone(), &workspace_resource()),
    };
    let list = api
        .list(&ListParams::default().labels("airunway.ai/managed-by=airunway"))
        .await?;
    for workspace in list.items {
        if workspace.metadata.deletion_timestamp.is_some() {
            continue;
        }
        match reconcile(client, &workspace).await {
            Ok(Some(state)) => println!(
                "simulated KAITO: Workspace {}/{} {state}",
                workspace.namespace().unwrap_or_default(),
                workspace.name_any()
            ),
            Ok(None) => {}
            Err(e) => eprintln!(
                "simulated KAITO: Workspace {}/{}: {e:#}",
                workspace.namespace().unwrap_or_default(),
                workspace.name_any()
            ),
        }
    }
    Ok(())
}

/// Runs the KAITO simulation until the task is dropped, once a second.
pub async fn run(client: Client, namespace: Option<String>) -> Result<()> {
    install_controller_stand_in(&client).await?;
    loop {
        if let Err(e) = reconcile_all(&client, namespace.as_deref()).await {
            eprintln!("simulated KAITO: {e:#}");
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}
