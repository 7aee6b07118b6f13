//! Intent mode on the real control plane: the real `airunway-provider-dynamo` (as its
//! ServiceAccount) and the real core, against the real DynamoGraphDeploymentRequest and
//! DynamoGraphDeployment CRDs. The test plays Dynamo's request controller with the status
//! samples it really writes (`e2e/fixtures/status-samples/dgdr-*.yaml`) and creates the graph
//! a request generates (labelled as Dynamo labels it, with a graph status sample).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use airunway_api::constants::annotations::dynamo::{ATTEMPT, INTENT_HASH};
use airunway_api::constants::{condition_types, reasons};
use airunway_api::v1alpha1::{ModelDeployment, Phase};
use airunway_e2e::stack::{self, FAST_HEALTH, Running};
use airunway_e2e::wait::{eventually, wait_deleted, wait_for};
use airunway_e2e::{TestEnv, cluster_lock, paths};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);
const LOCKED: &str = "Dynamo profiling inputs are locked; change the airunway.ai/dynamo-attempt annotation to explicitly reconfigure";

fn resource(version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: "nvidia.com".into(),
        version: version.into(),
        api_version: format!("nvidia.com/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

fn requests(env: &TestEnv) -> Api<DynamicObject> {
    Api::namespaced_with(
        env.client.clone(),
        &env.namespace,
        &resource(
            "v1beta1",
            "DynamoGraphDeploymentRequest",
            "dynamographdeploymentrequests",
        ),
    )
}

/// The graphs at the version the installed CRD stores (no conversion needed to write it).
async fn graphs(env: &TestEnv) -> (Api<DynamicObject>, String) {
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let crd = crds.get("dynamographdeployments.nvidia.com").await.unwrap();
    let version = crd
        .spec
        .versions
        .iter()
        .find(|v| v.storage)
        .unwrap()
        .name
        .clone();
    let api = Api::namespaced_with(
        env.client.clone(),
        &env.namespace,
        &resource(&version, "DynamoGraphDeployment", "dynamographdeployments"),
    );
    (api, version)
}

fn sample(file: &str) -> Value {
    let path = paths::status_samples_dir().join(file);
    serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// Writes the status of status sample `file` to request `name`, as Dynamo's controller does,
/// with `dgdName` when given.
async fn play_request(api: &Api<DynamicObject>, name: &str, file: &str, graph: Option<&str>) {
    let mut status = sample(file)["status"].clone();
    if let Some(graph) = graph {
        status["dgdName"] = json!(graph);
    }
    let patch: json_patch::Patch =
        serde_json::from_value(json!([{"op": "add", "path": "/status", "value": status}])).unwrap();
    api.patch_status(name, &PatchParams::default(), &Patch::Json::<()>(patch))
        .await
        .unwrap_or_else(|e| panic!("{file} on {name}: {e}"));
}

/// Creates the graph request `request` generated (Dynamo's `dgdr.nvidia.com/*` labels, no
/// owner), from the graph sample of the stored version, with that sample's ready status.
async fn play_generated_graph(env: &TestEnv, request: &str, name: &str) {
    let (api, version) = graphs(env).await;
    let file = if version == "v1alpha1" {
        "dgd-successful.yaml"
    } else {
        "dgd-v1beta1-successful.yaml"
    };
    let sample = sample(file);
    let graph: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("nvidia.com/{version}"), "kind": "DynamoGraphDeployment",
        "metadata": {"name": name, "labels": {
            "dgdr.nvidia.com/name": request, "dgdr.nvidia.com/namespace": env.namespace}},
        "spec": sample["spec"],
    }))
    .unwrap();
    api.create(&PostParams::default(), &graph).await.unwrap();
    let patch: json_patch::Patch = serde_json::from_value(
        json!([{"op": "add", "path": "/status", "value": sample["status"]}]),
    )
    .unwrap();
    api.patch_status(name, &PatchParams::default(), &Patch::Json::<()>(patch))
        .await
        .unwrap();
}

/// The one request of deployment `deployment` other than `except`, once there.
async fn request_of(env: &TestEnv, deployment: &str, except: Option<&str>) -> DynamicObject {
    let api = requests(env);
    let selector = format!("airunway.ai/model-deployment={deployment}");
    eventually(&format!("a new request of {deployment}"), WAIT, || async {
        let list = api
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|e| e.to_string())?;
        list.items
            .into_iter()
            .find(|r| {
                Some(r.name_any().as_str()) != except && r.metadata.deletion_timestamp.is_none()
            })
            .ok_or_else(|| "none yet".to_string())
    })
    .await
}

fn intent_deployment(name: &str, ttft: f64) -> ModelDeployment {
    serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": name},
        "spec": {
            "model": {"id": "Qwen/Qwen3-0.6B"},
            "engine": {"type": "vllm"},
            "provider": {"name": "dynamo", "overrides": {
                "deploymentMode": "intent",
                "intent": {
                    "hardware": {"totalGpus": 2, "gpuSku": "h100_sxm", "numGpusPerNode": 2},
                    "workload": {"isl": 3000, "osl": 150, "concurrency": 8.0},
                    "sla": {"ttft": ttft, "itl": 20.0},
                },
            }},
        },
    }))
    .unwrap()
}

async fn start(env: &TestEnv) -> (Running, Running) {
    airunway_e2e::providers::delete_all(&env.client).await;
    let core = stack::start_core(env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let identity = stack::service_account_identity(
        env,
        "deploy/providers/dynamo/rbac.yaml",
        "airunway-provider-dynamo",
    )
    .await;
    let dynamo = stack::start_provider(
        env,
        "airunway-provider-dynamo",
        &identity,
        &["--heartbeat-interval=1s"],
        "dynamo-0",
    )
    .await;
    let ipcs: Api<airunway_api::v1alpha1::InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, "dynamo", WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    (core, dynamo)
}

fn provider_status(md: &ModelDeployment) -> airunway_api::v1alpha1::ProviderStatus {
    md.status.clone().unwrap().provider.unwrap()
}

#[tokio::test]
async fn an_intent_profiles_locks_its_inputs_runs_through_its_graph_and_starts_over_on_a_new_attempt()
 {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("dynamo-intent").await;
    let (core, dynamo) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let dgdrs = requests(&env);

    // A request, accepted by the real DGDR schema, stating the intent and applying itself.
    mds.create(&PostParams::default(), &intent_deployment("qwen", 200.0))
        .await
        .unwrap();
    let request = request_of(&env, "qwen", None).await;
    let name = request.name_any();
    assert!(name.starts_with("qwen-") && name.len() <= 32, "{name}");
    let spec = &request.data["spec"];
    assert_eq!(
        (
            &spec["model"],
            &spec["backend"],
            &spec["autoApply"],
            &spec["searchStrategy"]
        ),
        (
            &json!("Qwen/Qwen3-0.6B"),
            &json!("vllm"),
            &json!(true),
            &json!("rapid")
        )
    );
    assert_eq!(spec["hardware"]["totalGpus"], 2);
    assert_eq!(spec["sla"]["ttft"], 200.0);
    let hash = request.annotations().get(INTENT_HASH).cloned().unwrap();
    assert_eq!(
        request.annotations().get(ATTEMPT).map(String::as_str),
        Some("")
    );
    assert!(
        request
            .owner_references()
            .iter()
            .any(|o| o.kind == "ModelDeployment" && o.controller == Some(true))
    );

    // Pending, then profiling: the deployment deploys, its status names the request.
    play_request(&dgdrs, &name, "dgdr-pending.yaml", None).await;
    play_request(&dgdrs, &name, "dgdr-profiling.yaml", None).await;
    let md = wait_for(&mds, "qwen", WAIT, "profiling", |md| {
        md.phase() == Some(Phase::Deploying)
            && md
                .status
                .as_ref()
                .and_then(|s| s.provider.as_ref())
                .and_then(|p| p.intent.as_ref())
                .and_then(|i| i.phase.as_deref())
                == Some("Profiling")
    })
    .await;
    assert_eq!(
        md.status.as_ref().unwrap().message.as_deref(),
        Some("Dynamo is profiling the model (Initializing)")
    );
    let provider = provider_status(&md);
    let request_ref = provider.request_ref.clone().unwrap();
    assert_eq!(
        (
            request_ref.kind.as_str(),
            request_ref.name.as_str(),
            request_ref.uid.as_deref()
        ),
        (
            "DynamoGraphDeploymentRequest",
            name.as_str(),
            request.metadata.uid.as_deref()
        )
    );
    let intent = provider.intent.unwrap();
    assert_eq!(intent.input_hash.as_deref(), Some(hash.as_str()));
    assert_eq!(intent.profiling_phase.as_deref(), Some("Initializing"));

    // Changing the intent while profiling is refused with the message; the request is left as
    // it was.
    let mut changed = mds.get("qwen").await.unwrap();
    changed.spec = intent_deployment("qwen", 350.0).spec;
    mds.replace("qwen", &PostParams::default(), &changed)
        .await
        .unwrap();
    wait_for(&mds, "qwen", WAIT, "the intent locked", |md| {
        md.condition(condition_types::READY)
            .is_some_and(|c| c.message.as_deref() == Some(LOCKED))
            && md
                .condition(condition_types::RESOURCE_CREATED)
                .and_then(|c| c.reason.as_deref())
                == Some(reasons::dynamo::INTENT_LOCKED)
    })
    .await;
    let unchanged = dgdrs.get(&name).await.unwrap();
    assert_eq!(unchanged.data["spec"]["sla"]["ttft"], 200.0);
    assert_eq!(unchanged.annotations().get(INTENT_HASH), Some(&hash));

    // Back to the accepted intent: Dynamo deploys the graph it chose, the deployment runs
    // through it.
    let mut reverted = mds.get("qwen").await.unwrap();
    reverted.spec = intent_deployment("qwen", 200.0).spec;
    mds.replace("qwen", &PostParams::default(), &reverted)
        .await
        .unwrap();
    let graph = format!("{name}-dgd");
    play_generated_graph(&env, &name, &graph).await;
    play_request(&dgdrs, &name, "dgdr-deploying.yaml", Some(&graph)).await;
    wait_for(&mds, "qwen", WAIT, "deploying the graph", |md| {
        md.phase() == Some(Phase::Deploying)
            && md
                .status
                .as_ref()
                .and_then(|s| s.message.as_deref())
                .is_some_and(|m| m.contains(&graph))
    })
    .await;
    play_request(&dgdrs, &name, "dgdr-deployed.yaml", Some(&graph)).await;
    let md = wait_for(&mds, "qwen", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
            && md
                .status
                .as_ref()
                .and_then(|s| s.provider.as_ref())
                .is_some_and(|p| p.workload_ref.is_some())
    })
    .await;
    let status = md.status.clone().unwrap();
    let workload = status
        .provider
        .as_ref()
        .unwrap()
        .workload_ref
        .clone()
        .unwrap();
    assert_eq!(
        (workload.kind.as_str(), workload.name.as_str()),
        ("DynamoGraphDeployment", graph.as_str())
    );
    assert_eq!(
        status.endpoint.unwrap().service,
        Some(format!("{graph}-frontend"))
    );
    assert_eq!(
        md.condition(condition_types::READY).unwrap().status,
        airunway_api::v1alpha1::ConditionStatus::True
    );

    // A new attempt: a new request; the earlier request and the graph it created are deleted.
    let mut again = mds.get("qwen").await.unwrap();
    again
        .annotations_mut()
        .insert(ATTEMPT.to_string(), "2".to_string());
    mds.replace("qwen", &PostParams::default(), &again)
        .await
        .unwrap();
    let second = request_of(&env, "qwen", Some(&name)).await;
    assert_ne!(second.name_any(), name);
    assert_eq!(
        second.annotations().get(ATTEMPT).map(String::as_str),
        Some("2")
    );
    assert_eq!(second.annotations().get(INTENT_HASH), Some(&hash));
    wait_deleted(&dgdrs, &name, WAIT).await;
    let (graph_api, _) = graphs(&env).await;
    wait_deleted(&graph_api, &graph, WAIT).await;
    let md = wait_for(&mds, "qwen", WAIT, "the new request recorded", |md| {
        md.status
            .as_ref()
            .and_then(|s| s.provider.as_ref())
            .and_then(|p| p.request_ref.as_ref())
            .is_some_and(|r| r.name == second.name_any())
    })
    .await;
    assert_eq!(md.phase(), Some(Phase::Deploying));
    assert_eq!(
        provider_status(&md).intent.unwrap().attempt.as_deref(),
        Some("2")
    );

    // Deleting the deployment deletes its request and the graph that request created.
    let second_graph = format!("{}-dgd", second.name_any());
    play_generated_graph(&env, &second.name_any(), &second_graph).await;
    play_request(
        &dgdrs,
        &second.name_any(),
        "dgdr-deployed.yaml",
        Some(&second_graph),
    )
    .await;
    wait_for(&mds, "qwen", WAIT, "Running again", |md| {
        md.phase() == Some(Phase::Running)
            && md
                .status
                .as_ref()
                .and_then(|s| s.provider.as_ref())
                .and_then(|p| p.workload_ref.as_ref())
                .is_some_and(|w| w.name == second_graph)
    })
    .await;
    mds.delete("qwen", &Default::default()).await.unwrap();
    wait_deleted(&mds, "qwen", WAIT).await;
    wait_deleted(&dgdrs, &second.name_any(), WAIT).await;
    wait_deleted(&graph_api, &second_graph, WAIT).await;
    for running in [dynamo, core] {
        running.process.terminate(Duration::from_secs(10));
    }
}

#[tokio::test]
async fn a_refused_intent_is_incompatible_with_the_go_message() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("dynamo-intent-refused").await;
    let (core, dynamo) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let mut both = intent_deployment("both", 200.0);
    let overrides = both
        .spec
        .provider
        .as_mut()
        .unwrap()
        .overrides
        .as_mut()
        .unwrap();
    overrides["intent"]["workload"]["requestRate"] = json!(4.0);
    mds.create(&PostParams::default(), &both).await.unwrap();
    let md = wait_for(&mds, "both", WAIT, "Failed", |md| {
        md.phase() == Some(Phase::Failed)
    })
    .await;
    let compatible = md.condition(condition_types::PROVIDER_COMPATIBLE).unwrap();
    assert_eq!(
        compatible.message.as_deref(),
        Some("specify requestRate or concurrency, not both")
    );
    let none = requests(&env)
        .list(&ListParams::default().labels("airunway.ai/model-deployment=both"))
        .await
        .unwrap();
    assert!(none.items.is_empty());
    for running in [dynamo, core] {
        running.process.terminate(Duration::from_secs(10));
    }
}
