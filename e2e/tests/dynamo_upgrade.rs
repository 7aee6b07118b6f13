//! The Dynamo upgrade path (issue 37) on the real control plane, with the real core and the
//! real Dynamo provider (as its ServiceAccount): deployments created while the cluster has
//! Dynamo 1.1's DynamoGraphDeployment CRD (`v1alpha1` only) stay Running, with one graph each,
//! while the CRD moves to Dynamo >= 1.5's (both versions served, `v1beta1` storage, Dynamo's
//! conversion webhook — played, `airunway_e2e::dynamo_conversion`), then to `v1beta1` only
//! (`v1alpha1` no longer served, its objects migrated, then dropped from `storedVersions`).
//! The test plays the Dynamo operator: it runs each component as a Deployment and writes the
//! status Dynamo writes (the status samples' wording), reading the graph in the version the
//! operator of that Dynamo release reads (`v1alpha1` for 1.1, the `v1beta1` hub after).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airunway_api::v1alpha1::{ModelDeployment, Phase};
use airunway_e2e::control_plane::{read_crds, wait_crd_established};
use airunway_e2e::dynamo_conversion::CRD_NAME;
use airunway_e2e::dynamo_conversion::server::installable;
use airunway_e2e::stack::{self, FAST_HEALTH, Running};
use airunway_e2e::wait::{eventually, wait_for};
use airunway_e2e::{ControlPlane, TestEnv, cluster_lock, paths};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);
/// The engine image `agg` names.
const PINNED_IMAGE: &str = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1";

fn graphs(client: &kube::Client, namespace: &str, version: &str) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "nvidia.com".into(),
        version: version.into(),
        api_version: format!("nvidia.com/{version}"),
        kind: "DynamoGraphDeployment".into(),
        plural: "dynamographdeployments".into(),
    };
    Api::namespaced_with(client.clone(), namespace, &resource)
}

fn crd_file(path: &str) -> CustomResourceDefinition {
    let file = paths::fixtures_dir().join(path);
    read_crds(&file).unwrap().into_iter().next().unwrap()
}

/// Replaces the installed DGD CRD with `crd` (a PUT: versions the new one lacks go away).
async fn replace_crd(client: &kube::Client, mut crd: CustomResourceDefinition) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let live = api.get(CRD_NAME).await.unwrap();
    crd.metadata.resource_version = live.metadata.resource_version;
    api.replace(CRD_NAME, &PostParams::default(), &crd)
        .await
        .unwrap();
    wait_crd_established(client, CRD_NAME, WAIT).await.unwrap();
}

/// Dynamo >= 1.5's CRD with its conversion webhook pointing at the played one.
fn crd_1_5() -> CustomResourceDefinition {
    let crd = installable(crd_file(
        "upstream-crds/dynamo/nvidia.com_dynamographdeployments.yaml",
    ));
    let url = crd
        .spec
        .conversion
        .as_ref()
        .and_then(|c| c.webhook.as_ref());
    let url = url.and_then(|w| w.client_config.as_ref()?.url.clone());
    assert_eq!(
        url,
        Some(ControlPlane::shared().dynamo_conversion.url.clone())
    );
    crd
}

async fn served_versions(client: &kube::Client) -> Vec<String> {
    let crd = Api::<CustomResourceDefinition>::all(client.clone())
        .get(CRD_NAME)
        .await
        .unwrap();
    crd.spec
        .versions
        .iter()
        .filter(|v| v.served)
        .map(|v| v.name.clone())
        .collect()
}

/// The played Dynamo operator, once a second: one Deployment `<graph>-<component lowercased>`
/// per component (replicas, the `main` image and GPU limit of the graph), and the graph's
/// status in the read version's shape, `successful` once every Deployment is fully ready.
async fn play_dynamo_operator(client: kube::Client, namespace: String) {
    loop {
        if let Err(e) = reconcile(&client, &namespace).await {
            eprintln!("played Dynamo operator: {e}");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// A component as the played operator runs it: name, replicas, image, GPU limit.
struct Component {
    name: String,
    replicas: i64,
    image: String,
    gpu: Option<String>,
}

fn components(graph: &Value, version: &str) -> Vec<Component> {
    if version == "v1beta1" {
        graph["spec"]["components"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                let main = c["podTemplate"]["spec"]["containers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|m| m["name"] == "main")
                    .cloned()
                    .unwrap_or(Value::Null);
                Component {
                    name: c["name"].as_str().unwrap_or_default().to_string(),
                    replicas: c["replicas"].as_i64().unwrap_or(1),
                    image: main["image"].as_str().unwrap_or("played").to_string(),
                    gpu: main["resources"]["limits"]["nvidia.com/gpu"]
                        .as_str()
                        .map(str::to_string),
                }
            })
            .collect()
    } else {
        graph["spec"]["services"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, s)| Component {
                name: name.clone(),
                replicas: s["replicas"].as_i64().unwrap_or(1),
                image: s["extraPodSpec"]["mainContainer"]["image"]
                    .as_str()
                    .unwrap_or("played")
                    .to_string(),
                gpu: s["resources"]["limits"]["gpu"].as_str().map(str::to_string),
            })
            .collect()
    }
}

async fn reconcile(client: &kube::Client, namespace: &str) -> Result<(), kube::Error> {
    let version = if served_versions(client)
        .await
        .contains(&"v1beta1".to_string())
    {
        "v1beta1"
    } else {
        "v1alpha1"
    };
    let api = graphs(client, namespace, version);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    for graph in api.list(&Default::default()).await?.items {
        if graph.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = graph.name_any();
        let value = serde_json::to_value(&graph).unwrap();
        let owner = json!({"apiVersion": format!("nvidia.com/{version}"), "kind": "DynamoGraphDeployment",
            "name": name, "uid": graph.metadata.uid.clone().unwrap(),
            "controller": true, "blockOwnerDeletion": true});
        let mut counts = serde_json::Map::new();
        let mut all_ready = true;
        for component in components(&value, version) {
            let deployment_name = format!("{name}-{}", component.name.to_lowercase());
            let labels = json!({"nvidia.com/selector": deployment_name,
                "nvidia.com/dynamo-graph-deployment-name": name,
                "nvidia.com/dynamo-component": component.name});
            let mut container = json!({"name": "main", "image": component.image});
            if let Some(gpu) = &component.gpu {
                container["resources"] = json!({"limits": {"nvidia.com/gpu": gpu}});
            }
            let deployment = json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": deployment_name, "ownerReferences": [owner], "labels": labels},
                "spec": {"replicas": component.replicas,
                         "selector": {"matchLabels": {"nvidia.com/selector": deployment_name}},
                         "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}}},
            });
            deployments
                .patch(
                    &deployment_name,
                    &PatchParams::apply("dynamo-operator").force(),
                    &Patch::Apply(&deployment),
                )
                .await?;
            let status = deployments
                .get(&deployment_name)
                .await?
                .status
                .unwrap_or_default();
            let ready = i64::from(status.ready_replicas.unwrap_or(0));
            all_ready &= ready == component.replicas
                && status.replicas.map(i64::from) == Some(component.replicas);
            let mut count = json!({"componentKind": "Deployment", "componentNames": [deployment_name],
                "replicas": component.replicas, "updatedReplicas": status.updated_replicas.unwrap_or(0),
                "readyReplicas": ready, "availableReplicas": status.available_replicas.unwrap_or(0)});
            if version == "v1alpha1" {
                count["componentName"] = json!(deployment_name);
            }
            counts.insert(component.name, count);
        }
        let sample = match (version, all_ready) {
            ("v1beta1", true) => "dgd-v1beta1-successful.yaml",
            ("v1beta1", false) => "dgd-v1beta1-pending.yaml",
            (_, true) => "dgd-successful.yaml",
            (_, false) => "dgd-pending.yaml",
        };
        let mut status = paths::upstream_status_sample(sample).unwrap();
        let key = if version == "v1beta1" {
            "components"
        } else {
            "services"
        };
        status[key] = Value::Object(counts);
        status["observedGeneration"] = value["metadata"]["generation"].clone();
        if !all_ready {
            status["conditions"][0]["message"] = json!("Resources not ready");
        }
        if value["status"]["state"] == status["state"] && value["status"][key] == status[key] {
            continue;
        }
        api.patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await?;
    }
    Ok(())
}

fn deployment(name: &str, spec: Value) -> ModelDeployment {
    serde_json::from_value(
        json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": name}, "spec": spec}),
    )
    .unwrap()
}

/// What a graph looked like at one stage.
#[derive(Debug, PartialEq)]
struct Snapshot {
    uid: String,
    generation: i64,
    /// Component Deployment name -> (uid, image).
    deployments: BTreeMap<String, (String, String)>,
    pods: Vec<String>,
}

async fn snapshot(env: &TestEnv, name: &str) -> Snapshot {
    let graph = graphs(&env.client, &env.namespace, "v1beta1")
        .get(name)
        .await;
    let graph = match graph {
        Ok(graph) => graph,
        Err(_) => graphs(&env.client, &env.namespace, "v1alpha1")
            .get(name)
            .await
            .unwrap(),
    };
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let prefix = format!("{name}-");
    let deployments: BTreeMap<String, (String, String)> = deployments
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|d| d.name_any().starts_with(&prefix))
        .map(|d| {
            let image = d
                .spec
                .as_ref()
                .and_then(|s| s.template.spec.as_ref())
                .and_then(|s| s.containers.first())
                .and_then(|c| c.image.clone())
                .unwrap_or_default();
            (d.name_any(), (d.uid().unwrap(), image))
        })
        .collect();
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    let mut pods: Vec<String> = pods
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            p.labels()
                .get("nvidia.com/dynamo-graph-deployment-name")
                .map(String::as_str)
                == Some(name)
        })
        .map(|p| p.name_any())
        .collect();
    pods.sort();
    Snapshot {
        uid: graph.uid().unwrap(),
        generation: graph.metadata.generation.unwrap_or_default(),
        deployments,
        pods,
    }
}

/// The `apiVersion` of the provider's apply in the graph's managed fields.
fn applied_version(graph: &DynamicObject) -> Vec<(String, String)> {
    graph
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|m| m.operation.as_deref() == Some("Apply"))
        .map(|m| {
            (
                m.manager.clone().unwrap_or_default(),
                m.api_version.clone().unwrap_or_default(),
            )
        })
        .collect()
}

#[tokio::test]
async fn deployments_stay_running_from_dynamo_1_1_through_both_versions_to_v1beta1_only() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("dynamo-upgrade").await;
    let client = env.client.clone();

    // Dynamo 1.1: only v1alpha1 (the default CRD of the harness is Dynamo >= 1.5's; no graph
    // exists yet, so it is replaced outright).
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.delete(CRD_NAME, &DeleteParams::default())
        .await
        .unwrap();
    airunway_e2e::wait::wait_deleted(&crds, CRD_NAME, WAIT).await;
    crds.create(
        &PostParams::default(),
        &crd_file("upstream-crd-versions/dynamo-1.1/nvidia.com_dynamographdeployments.yaml"),
    )
    .await
    .unwrap();
    wait_crd_established(&client, CRD_NAME, WAIT).await.unwrap();
    assert_eq!(served_versions(&client).await, ["v1alpha1"]);

    airunway_e2e::providers::delete_all(&client).await;
    let core: Running =
        stack::start_core(&env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let identity = stack::service_account_identity(
        &env,
        "deploy/providers/dynamo/rbac.yaml",
        "airunway-provider-dynamo",
    )
    .await;
    let dynamo = stack::start_provider(
        &env,
        "airunway-provider-dynamo",
        &identity,
        &["--heartbeat-interval=1s"],
        "dynamo-0",
    )
    .await;
    let operator = tokio::spawn(play_dynamo_operator(client.clone(), env.namespace.clone()));

    let mds: Api<ModelDeployment> = Api::namespaced(client.clone(), &env.namespace);
    let names = ["agg", "pd"];
    // `agg` names its image, the same on both versions; `pd` takes the provider's default,
    // which is Dynamo 1.1.1's runtime on `v1alpha1` and 1.6.1's on `v1beta1`.
    mds.create(&PostParams::default(), &deployment("agg", json!({"model": {"id": "Qwen/Qwen3-0.6B"},
        "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}, "provider": {"name": "dynamo"},
        "image": PINNED_IMAGE})))
        .await
        .unwrap();
    mds.create(&PostParams::default(), &deployment("pd", json!({"model": {"id": "Qwen/Qwen3-0.6B"},
        "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"}, "provider": {"name": "dynamo"},
        "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}}})))
        .await
        .unwrap();
    for name in names {
        wait_for(&mds, name, WAIT, "Running on Dynamo 1.1", |md| {
            md.phase() == Some(Phase::Running)
        })
        .await;
    }
    let alpha = graphs(&client, &env.namespace, "v1alpha1");
    let mut before = BTreeMap::new();
    for name in names {
        let graph = alpha.get(name).await.unwrap();
        assert!(
            applied_version(&graph)
                .iter()
                .any(|(_, v)| v == "nvidia.com/v1alpha1"),
            "{name}: {:?}",
            applied_version(&graph)
        );
        before.insert(name, snapshot(&env, name).await);
    }

    // From here on, every deployment must stay Running: watched every 200 ms.
    let left_running: Arc<Mutex<Vec<String>>> = Arc::default();
    let watcher = {
        let mds = mds.clone();
        let left_running = left_running.clone();
        tokio::spawn(async move {
            loop {
                for name in names {
                    if let Ok(md) = mds.get(name).await
                        && md.phase() != Some(Phase::Running)
                    {
                        left_running
                            .lock()
                            .unwrap()
                            .push(format!("{name}: {:?}", md.phase()));
                    }
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    };

    // Dynamo >= 1.5: both versions served, v1beta1 the storage version, the conversion webhook.
    replace_crd(&client, crd_1_5()).await;
    assert_eq!(served_versions(&client).await, ["v1alpha1", "v1beta1"]);
    let beta = graphs(&client, &env.namespace, "v1beta1");
    for name in names {
        let graph = eventually(&format!("{name} re-rendered in v1beta1"), WAIT, || {
            let beta = beta.clone();
            async move {
                let graph = beta.get(name).await.map_err(|e| e.to_string())?;
                let applied = applied_version(&graph);
                if applied.iter().any(|(_, v)| v == "nvidia.com/v1beta1") {
                    Ok(graph)
                } else {
                    Err(format!("applies: {applied:?}"))
                }
            }
        })
        .await;
        eprintln!(
            "{name} after the move to both versions: managed fields {:?}, generation {:?}",
            graph
                .metadata
                .managed_fields
                .iter()
                .flatten()
                .map(|m| (&m.manager, &m.operation, &m.api_version, &m.subresource))
                .collect::<Vec<_>>(),
            graph.metadata.generation
        );
    }
    let mut both = BTreeMap::new();
    for name in names {
        wait_for(&mds, name, WAIT, "Running on both versions", |md| {
            md.phase() == Some(Phase::Running)
        })
        .await;
        // The played operator has applied the re-rendered graph: every component Deployment
        // runs the v1beta1 render's image, one pod each.
        let settled = eventually(
            &format!("{name}'s components on the v1beta1 render"),
            WAIT,
            || {
                let env = &env;
                async move {
                    let s = snapshot(env, name).await;
                    let on_new_image = s
                        .deployments
                        .values()
                        .all(|(_, image)| image.ends_with(":1.6.1"));
                    if on_new_image && s.pods.len() == s.deployments.len() {
                        Ok(s)
                    } else {
                        Err(format!("{s:?}"))
                    }
                }
            },
        )
        .await;
        both.insert(name, settled);
    }

    // v1beta1 only: v1alpha1 no longer served (still in storedVersions until migrated).
    let mut crd = serde_json::to_value(crd_1_5()).unwrap();
    for version in crd["spec"]["versions"].as_array_mut().unwrap() {
        if version["name"] == "v1alpha1" {
            version["served"] = json!(false);
        }
    }
    replace_crd(&client, serde_json::from_value(crd).unwrap()).await;
    assert_eq!(served_versions(&client).await, ["v1beta1"]);
    let stored = crds
        .get(CRD_NAME)
        .await
        .unwrap()
        .status
        .unwrap()
        .stored_versions;
    assert_eq!(stored, Some(vec!["v1alpha1".into(), "v1beta1".into()]));
    assert!(alpha.get("agg").await.is_err(), "v1alpha1 is not served");
    // The storage version migration (what kube-storage-version-migrator does): rewrite each
    // object, then drop v1alpha1 from storedVersions.
    for graph in beta.list(&Default::default()).await.unwrap().items {
        beta.replace(&graph.name_any(), &PostParams::default(), &graph)
            .await
            .unwrap();
    }
    crds.patch_status(
        CRD_NAME,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"storedVersions": ["v1beta1"]}})),
    )
    .await
    .unwrap();
    // Some time for anything to go wrong.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut only = BTreeMap::new();
    for name in names {
        let md = wait_for(&mds, name, WAIT, "Running on v1beta1 only", |md| {
            md.phase() == Some(Phase::Running)
        })
        .await;
        assert_eq!(md.phase(), Some(Phase::Running), "{name}");
        only.insert(name, snapshot(&env, name).await);
    }
    watcher.abort();
    operator.abort();
    let left = left_running.lock().unwrap().clone();
    eprintln!("left Running while the CRD moved: {left:?}");
    assert!(
        left.iter().all(|l| !l.starts_with("agg:")),
        "agg (same image on both versions) left Running: {left:?}"
    );
    assert!(
        left.iter().all(|l| !l.contains("Failed")),
        "a deployment failed: {left:?}"
    );

    let uids = |s: &Snapshot| -> Vec<String> {
        s.deployments.values().map(|(uid, _)| uid.clone()).collect()
    };
    for name in names {
        let (a, b, c) = (&before[name], &both[name], &only[name]);
        eprintln!("{name}: 1.1 {a:?}\n  both {b:?}\n  v1beta1 only {c:?}");
        // One graph each, the same object all along, and the same component Deployments.
        assert_eq!(
            beta.list(&Default::default())
                .await
                .unwrap()
                .items
                .iter()
                .filter(|g| g.name_any() == name)
                .count(),
            1
        );
        assert_eq!((&a.uid, uids(a)), (&b.uid, uids(b)), "{name}");
        assert_eq!((&b.uid, &b.deployments), (&c.uid, &c.deployments), "{name}");
        assert_eq!(b.pods, c.pods, "{name}: pods after v1beta1 only");
    }
    // `agg`: the v1beta1 re-render is the same graph, so its pods were not recreated.
    let (a, b) = (&before["agg"], &both["agg"]);
    assert_eq!(a.deployments, b.deployments);
    assert_eq!(a.pods, b.pods, "agg: pods after the move to both versions");
    // `pd`: the default image moved with the version (1.1.1 -> 1.6.1), so the component
    // Deployments rolled in place to new pods.
    let (a, b) = (&before["pd"], &both["pd"]);
    assert!(
        a.deployments
            .values()
            .all(|(_, image)| image.ends_with(":1.1.1"))
            && b.deployments
                .values()
                .all(|(_, image)| image.ends_with(":1.6.1")),
        "pd images: {:?} -> {:?}",
        a.deployments,
        b.deployments
    );
    assert_ne!(a.pods, b.pods, "pd: a new image runs in new pods");
    assert_eq!(beta.list(&Default::default()).await.unwrap().items.len(), 2);

    for running in [dynamo, core] {
        running.process.terminate(Duration::from_secs(10));
    }
}
