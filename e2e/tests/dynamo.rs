//! The real `airunway-provider-dynamo` (with `airunway-provider-kaito` beside it, both as their
//! ServiceAccounts) and the real core, against the real DynamoGraphDeployment CRD of Dynamo ≥ 1.5
//! (installed by default: `v1alpha1` and `v1beta1` served, `v1beta1` rendered); the test plays
//! the Dynamo operator with the status samples it really writes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use airunway_api::constants::condition_types;
use airunway_api::v1alpha1::{ConditionStatus, ModelDeployment, NotReadyReason, Phase};
use airunway_e2e::dynamo_graph::{self, component, main_container};
use airunway_e2e::stack::{self, FAST_HEALTH, Running};
use airunway_e2e::wait::{wait_deleted, wait_for, wait_for_condition};
use airunway_e2e::{TestEnv, cluster_lock, paths};
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// The graphs at the version the provider renders on the default CRD (`v1beta1`).
fn dgds(env: &TestEnv) -> Api<DynamicObject> {
    let r = dynamo_graph::resource(dynamo_graph::V1BETA1);
    Api::namespaced_with(env.client.clone(), &env.namespace, &r)
}

/// A Dynamo 1.1 status sample (`status.services`) as Dynamo ≥ 1.5 writes it on `v1beta1`: the
/// same entries under `status.components`, without the singular `componentName`.
fn as_v1beta1_status(mut status: Value) -> Value {
    if let Some(Value::Object(mut services)) =
        status.as_object_mut().and_then(|s| s.remove("services"))
    {
        for reported in services.values_mut() {
            if let Some(reported) = reported.as_object_mut() {
                reported.remove("componentName");
            }
        }
        status["components"] = Value::Object(services);
    }
    status
}

fn workspaces(env: &TestEnv) -> Api<DynamicObject> {
    Api::namespaced_with(
        env.client.clone(),
        &env.namespace,
        &resource("kaito.sh", "v1beta1", "Workspace", "workspaces"),
    )
}

struct Stack {
    core: Running,
    dynamo: Running,
    kaito: Running,
}

impl Stack {
    fn stop(self) {
        for running in [self.dynamo, self.kaito, self.core] {
            running.process.terminate(Duration::from_secs(10));
        }
    }
}

/// Plays the KAITO workspace controller: a Deployment labelled as the KAITO Helm chart labels
/// it (the KAITO provider is ready only while such a Deployment has a ready replica; KWOK runs
/// its pod).
async fn fake_kaito_controller(env: &TestEnv) {
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(env.client.clone(), &env.namespace);
    let labels = json!({"app.kubernetes.io/name": "workspace"});
    let deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "kaito-workspace", "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "manager", "image": "kaito/workspace:0.10.0"}]}}},
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
}

async fn start(env: &TestEnv) -> Stack {
    airunway_e2e::providers::delete_all(&env.client).await;
    fake_kaito_controller(env).await;
    let flags = ["--heartbeat-interval=1s"];
    let core = stack::start_core(env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let dynamo_id = stack::service_account_identity(
        env,
        "deploy/providers/dynamo/rbac.yaml",
        "airunway-provider-dynamo",
    )
    .await;
    let dynamo = stack::start_provider(
        env,
        "airunway-provider-dynamo",
        &dynamo_id,
        &flags,
        "dynamo-0",
    )
    .await;
    let kaito_id = stack::service_account_identity(
        env,
        "deploy/providers/kaito/rbac.yaml",
        "airunway-provider-kaito",
    )
    .await;
    let kaito =
        stack::start_provider(env, "airunway-provider-kaito", &kaito_id, &flags, "kaito-0").await;
    // Both registered and ready before deployments arrive.
    let ipcs: Api<airunway_api::v1alpha1::InferenceProviderConfig> = Api::all(env.client.clone());
    for name in ["dynamo", "kaito"] {
        wait_for(&ipcs, name, WAIT, "ready", |i| {
            i.status.as_ref().and_then(|s| s.ready) == Some(true)
        })
        .await;
    }
    Stack {
        core,
        dynamo,
        kaito,
    }
}

fn design_doc_example(name: &str) -> ModelDeployment {
    let path =
        paths::workspace_root().join(format!("airunway-api/tests/fixtures/design-doc/{name}"));
    let mut value: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    value["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("namespace");
    serde_json::from_value(value).unwrap()
}

fn deployment(name: &str, spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment", "metadata": {"name": name}, "spec": spec})).unwrap()
}

#[tokio::test]
async fn examples_auto_selection_and_status() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("dynamo-examples").await;
    let stack = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let dgd = dgds(&env);

    // Example 1 (GPU vLLM, no provider named) is auto-selected to dynamo; example 3 names it.
    for file in [
        "modeldeployment-example1.yaml",
        "modeldeployment-example3.yaml",
    ] {
        mds.create(&PostParams::default(), &design_doc_example(file))
            .await
            .unwrap();
    }
    // SGLang and disaggregated without a provider: dynamo too (kaito is running and ready).
    mds.create(&PostParams::default(), &deployment("sgl", json!({"model": {"id": "Qwen/Qwen3-8B"}, "engine": {"type": "sglang"}, "resources": {"gpu": {"count": 1}}}))).await.unwrap();
    mds.create(
        &PostParams::default(),
        &deployment(
            "pd",
            json!({"model": {"id": "Qwen/Qwen3-8B"}, "serving": {"mode": "disaggregated"},
        "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}}}),
        ),
    )
    .await
    .unwrap();
    for (name, reason) in [
        (
            "llama-8b",
            "matched capabilities: engine=vllm, gpu=true, mode=aggregated",
        ),
        ("llama-70b-pd", "explicit provider selection"),
        (
            "sgl",
            "matched capabilities: engine=sglang, gpu=true, mode=aggregated",
        ),
        (
            "pd",
            "matched capabilities: engine=vllm, gpu=true, mode=disaggregated",
        ),
    ] {
        let md = wait_for(&mds, name, WAIT, "Deploying on dynamo", |md| {
            md.phase() == Some(Phase::Deploying)
        })
        .await;
        assert_eq!(md.selected_provider(), Some("dynamo"), "{name}");
        assert_eq!(
            md.status
                .unwrap()
                .provider
                .unwrap()
                .selected_reason
                .as_deref(),
            Some(reason),
            "{name}"
        );
    }

    // The real schema accepted the DGDs (v1beta1), with the expected components.
    let services = |o: &DynamicObject| -> Vec<String> { dynamo_graph::names(&o.data) };
    let one = dgd.get("llama-8b").await.unwrap();
    assert_eq!(
        one.types.as_ref().unwrap().api_version,
        "nvidia.com/v1beta1"
    );
    assert_eq!(services(&one), ["Frontend", "VllmWorker"]);
    assert_eq!(
        main_container(component(&one.data, "VllmWorker"))["args"],
        json!([
            "--model",
            "meta-llama/Llama-3.1-8B-Instruct",
            "--max-model-len",
            "8192",
            "--enable-prefix-caching"
        ])
    );
    // Native resource requirements, accepted by the real schema: GPUs as limits and requests,
    // the model and engine labels.
    assert_eq!(
        main_container(component(&one.data, "VllmWorker"))["resources"],
        json!({"limits": {"nvidia.com/gpu": "1", "memory": "32Gi"}, "requests": {"nvidia.com/gpu": "1"}})
    );
    let labels = one.labels();
    assert_eq!(
        (
            labels
                .get("airunway.ai/model-deployment")
                .map(String::as_str),
            labels.get("airunway.ai/model-id").map(String::as_str),
            labels.get("airunway.ai/engine-type").map(String::as_str),
        ),
        (
            Some("llama-8b"),
            Some("meta-llama-Llama-3.1-8B-Instruct"),
            Some("vllm")
        )
    );
    let three = dgd.get("llama-70b-pd").await.unwrap();
    assert_eq!(
        services(&three),
        ["Frontend", "VllmDecodeWorker", "VllmPrefillWorker"]
    );
    assert_eq!(component(&three.data, "Frontend")["replicas"], 2);
    assert_eq!(
        main_container(component(&three.data, "Frontend"))["env"],
        json!([{"name": "DYN_ROUTER_MODE", "value": "kv"}])
    );
    assert_eq!(
        component(&three.data, "VllmPrefillWorker")["type"],
        "prefill"
    );
    assert_eq!(
        services(&dgd.get("sgl").await.unwrap()),
        ["Frontend", "SglangWorker"]
    );

    // The engine fields through the real API server and the real DGD schema: TensorRT-LLM's
    // real runtime image; prefix caching off (kept as written), eager mode, engine.image and
    // extraArgs after every derived flag.
    mds.create(
        &PostParams::default(),
        &deployment(
            "trt",
            json!({"model": {"id": "nvidia/Llama-3.1-8B-FP8"}, "engine": {"type": "trtllm"},
        "resources": {"gpu": {"count": 1}}}),
        ),
    )
    .await
    .unwrap();
    mds.create(&PostParams::default(), &deployment("knobs", json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm",
        "enablePrefixCaching": false, "enforceEager": true, "image": "registry.example/vllm:custom", "extraArgs": ["--kv-cache-dtype=fp8"]},
        "resources": {"gpu": {"count": 1}, "cpu": "4"}, "provider": {"name": "dynamo"}}))).await.unwrap();
    let trt = wait_for(&dgd, "trt", WAIT, "the TensorRT-LLM DGD", |_| true).await;
    assert_eq!(
        main_container(component(&trt.data, "TrtllmWorker"))["image"],
        "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:1.6.1"
    );
    let knobs = wait_for(
        &dgd,
        "knobs",
        WAIT,
        "the DGD with the engine fields",
        |_| true,
    )
    .await;
    let container = main_container(component(&knobs.data, "VllmWorker"));
    assert_eq!(container["image"], "registry.example/vllm:custom");
    assert_eq!(
        container["args"],
        json!([
            "--model",
            "Qwen/Qwen3-0.6B",
            "--no-enable-prefix-caching",
            "--enforce-eager",
            "--kv-cache-dtype=fp8"
        ])
    );
    assert_eq!(
        container["resources"],
        json!({"limits": {"nvidia.com/gpu": "1", "cpu": "4"}, "requests": {"nvidia.com/gpu": "1"}})
    );
    let knobs_md = mds.get("knobs").await.unwrap();
    assert_eq!(
        knobs_md.spec.engine.as_ref().unwrap().enable_prefix_caching,
        Some(false),
        "false survives the round trip"
    );

    // Each real Dynamo status drives phase, message, replicas and endpoint.
    for (file, expected, message_start, ready) in [
        (
            "dgd-initializing.yaml",
            Phase::Deploying,
            "Dynamo state: initializing",
            0,
        ),
        (
            "dgd-v1beta1-pending.yaml",
            Phase::Deploying,
            "Resources not ready: qwen3-frontend",
            0,
        ),
        (
            "dgd-pending-grove.yaml",
            Phase::Deploying,
            "Resources not ready: qwen3: podclique/",
            0,
        ),
        (
            "dgd-v1beta1-failed.yaml",
            Phase::Failed,
            "failed to reconcile Dynamo components deployments: no multinode orchestrator available",
            0,
        ),
        // Every service counts (frontend and worker, as the Go AI Runway sums them).
        // Go's text while Running (parity S1).
        (
            "dgd-v1beta1-successful.yaml",
            Phase::Running,
            "DynamoGraphDeployment created, pods are ready",
            2,
        ),
    ] {
        // The samples name their worker component VllmWorker, as this DGD does. Dynamo 1.1's
        // samples with no v1beta1 counterpart (initializing, the Grove pathway) are written as
        // Dynamo >= 1.5 writes the same status on v1beta1 (status.components).
        let status = as_v1beta1_status(paths::upstream_status_sample(file).unwrap());
        dgd.patch_status(
            "llama-8b",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": status})),
        )
        .await
        .unwrap();
        let md = wait_for(&mds, "llama-8b", WAIT, file, |md| {
            md.phase() == Some(expected)
                && md
                    .status
                    .as_ref()
                    .and_then(|s| s.message.as_deref())
                    .is_some_and(|m| m.starts_with(message_start))
        })
        .await;
        let status = md.status.clone().unwrap();
        assert_eq!(
            status.replicas.as_ref().unwrap().ready,
            Some(ready),
            "{file}"
        );
        // Why it is not ready, in the shared vocabulary, read from the DynamoGraphDeployment.
        let reason = match file {
            "dgd-v1beta1-failed.yaml" => Some(NotReadyReason::UpstreamReconcileError),
            "dgd-v1beta1-successful.yaml" => None,
            _ => Some(NotReadyReason::InProgress),
        };
        assert_not_ready(&md, reason, "DynamoGraphDeployment", file);
        let endpoint = status.endpoint.unwrap();
        assert_eq!(
            (endpoint.service.as_deref(), endpoint.port),
            (Some("llama-8b-frontend"), Some(8000)),
            "{file}"
        );
        assert_eq!(
            md.condition(condition_types::READY).unwrap().status,
            if ready > 0 {
                ConditionStatus::True
            } else {
                ConditionStatus::False
            },
            "{file}"
        );
    }
    every_status_fixture_on_the_live_object(&mds, &dgd, "llama-8b", "dynamo").await;

    // Dynamo calls the graph successful while a worker's new revision has not rolled out (a
    // Deployment in mid-rollout is Available): not Ready for this generation, still serving.
    let mut rolling = paths::upstream_status_sample("dgd-v1beta1-successful.yaml").unwrap();
    rolling["components"]["VllmWorker"]["updatedReplicas"] = json!(0);
    dgd.patch_status(
        "llama-8b",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": rolling})),
    )
    .await
    .unwrap();
    let md = wait_for(&mds, "llama-8b", WAIT, "Updating", |md| {
        md.status
            .as_ref()
            .and_then(|s| s.not_ready.as_ref())
            .is_some_and(|n| n.reason == NotReadyReason::Updating)
    })
    .await;
    assert_eq!(md.phase(), Some(Phase::Running));
    assert_not_ready(
        &md,
        Some(NotReadyReason::Updating),
        "DynamoGraphDeployment",
        "successful mid-rollout",
    );
    assert_eq!(
        md.condition(condition_types::RECONCILING).unwrap().status,
        ConditionStatus::True
    );
    env.wait_for_event("ProviderError", |n| {
        n.contains("no multinode orchestrator available")
    })
    .await;
    stack.stop();
}

#[tokio::test]
async fn overrides_drift_mode_switch_deletion_and_incompatibility() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("dynamo-lifecycle").await;
    let stack = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let dgd = dgds(&env);
    mds.create(&PostParams::default(), &deployment("chat", json!({"model": {"id": "Qwen/Qwen3-8B"}, "engine": {"type": "vllm"},
        "resources": {"gpu": {"count": 1}}, "provider": {"name": "dynamo", "overrides": {"routerMode": "kv", "frontend": {"replicsa": 2}}}}))).await.unwrap();
    wait_for(&mds, "chat", WAIT, "Deploying", |md| {
        md.phase() == Some(Phase::Deploying)
    })
    .await;
    // An override typo: a warning event naming the path.
    env.wait_for_event("UnknownOverride", |n| {
        n.starts_with("unknown key provider.overrides.frontend.replicsa is ignored")
    })
    .await;

    // Wrong override type: the reconcile fails with the path and the expected type.
    mds.patch(
        "chat",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"spec": {"provider": {"overrides": {"frontend": {"replicas": "two"}}}}}),
        ),
    )
    .await
    .unwrap();
    let md = wait_for(&mds, "chat", WAIT, "Failed with the override error", |md| {
        md.phase() == Some(Phase::Failed)
    })
    .await;
    assert_eq!(
        md.status.unwrap().message.as_deref(),
        Some(
            "invalid provider.overrides: provider.overrides.frontend.replicas must be a non-negative integer, got \"two\""
        )
    );
    mds.patch(
        "chat",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"provider": {"overrides": {"frontend": {"replicas": 2}}}}})),
    )
    .await
    .unwrap();
    let graph = wait_for(&dgd, "chat", WAIT, "frontend replicas 2", |o| {
        component(&o.data, "Frontend")["replicas"] == 2
    })
    .await;

    // Drift is reverted.
    let worker = dynamo_graph::index(&graph.data, "VllmWorker").unwrap();
    let drift: json_patch::Patch = serde_json::from_value(json!([
        {"op": "replace", "path": format!("/spec/components/{worker}/replicas"), "value": 9}]))
    .unwrap();
    dgd.patch("chat", &PatchParams::default(), &Patch::Json::<()>(drift))
        .await
        .unwrap();
    wait_for(&dgd, "chat", WAIT, "worker replicas restored", |o| {
        component(&o.data, "VllmWorker")["replicas"] == 1
    })
    .await;
    env.wait_for_event("DriftDetected", |n| {
        n.starts_with("Provider resource was modified directly, reconciling")
    })
    .await;

    // Switching serving.mode recreates the DGD with prefill and decode workers.
    let uid = dgd.get("chat").await.unwrap().uid().unwrap();
    mds.patch("chat", &PatchParams::default(), &Patch::Merge(json!({"spec": {"serving": {"mode": "disaggregated"}, "resources": null,
        "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"replicas": 2, "gpu": {"count": 1}}}}}))).await.unwrap();
    let recreated = wait_for(&dgd, "chat", WAIT, "a new DGD", |o| {
        o.uid() != Some(uid.clone())
    })
    .await;
    assert_eq!(
        dynamo_graph::names(&recreated.data),
        ["Frontend", "VllmDecodeWorker", "VllmPrefillWorker"]
    );

    // Deletion cascades.
    mds.delete("chat", &DeleteParams::default()).await.unwrap();
    wait_deleted(&mds, "chat", WAIT).await;
    wait_deleted(&dgd, "chat", WAIT).await;

    // llama.cpp on dynamo: ProviderCompatible=False with the spec's message.
    mds.create(
        &PostParams::default(),
        &deployment(
            "gguf",
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "image": "i",
        "resources": {"gpu": {"count": 1}}, "provider": {"name": "dynamo"}}),
        ),
    )
    .await
    .unwrap();
    // The core checks Dynamo's registered capabilities at reconcile, as the Go AI Runway does
    // (issue 32, V1); the provider's own check is its second line (unit-tested).
    let (_, validated) = wait_for_condition(
        &mds,
        "gguf",
        WAIT,
        condition_types::VALIDATED,
        ConditionStatus::False,
    )
    .await;
    assert_eq!(
        validated.message.as_deref(),
        Some("spec.engine.type: provider dynamo does not support engine llamacpp")
    );
    assert!(dgd.get_opt("gguf").await.unwrap().is_none());
    stack.stop();
}

#[tokio::test]
async fn moving_from_kaito_to_dynamo() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("dynamo-move").await;
    let stack = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    mds.create(
        &PostParams::default(),
        &deployment(
            "mover",
            json!({"model": {"id": "microsoft/Phi-4-mini-instruct"}, "engine": {"type": "vllm"},
        "resources": {"gpu": {"count": 1}}, "provider": {"name": "kaito"}}),
        ),
    )
    .await
    .unwrap();
    wait_for(&mds, "mover", WAIT, "Deploying on kaito", |md| {
        md.phase() == Some(Phase::Deploying)
    })
    .await;
    workspaces(&env).get("mover").await.unwrap();

    mds.patch(
        "mover",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"provider": {"name": "dynamo"}}})),
    )
    .await
    .unwrap();
    wait_for(&mds, "mover", WAIT, "taken over by dynamo", |md| {
        md.selected_provider() == Some("dynamo")
            && md
                .status
                .as_ref()
                .and_then(|s| s.provider.as_ref())
                .and_then(|p| p.resource_kind.as_deref())
                == Some("DynamoGraphDeployment")
    })
    .await;
    wait_deleted(&workspaces(&env), "mover", WAIT).await;
    dgds(&env).get("mover").await.unwrap();
    let md = wait_for(&mds, "mover", WAIT, "kaito's finalizer released", |md| {
        !md.finalizers()
            .contains(&"airunway.ai/kaito-provider".to_string())
    })
    .await;
    assert!(
        md.finalizers()
            .contains(&"airunway.ai/dynamo-provider".to_string())
    );
    stack.stop();
}

/// Plays the Dynamo operator (≥ 1.5, Deployment pathway, reconciling the `v1beta1` graph) for the
/// graphs in `namespace`, once a second: each component becomes a Deployment
/// `<graph>-<component lowercased>` owned by the graph, with the component's replicas (kept in
/// step, as the operator's component controller does) and the operator's pod labels
/// (`nvidia.com/dynamo-graph-deployment-name`, `-component`, `-component-type` (the component's
/// `type`), `-namespace`, `nvidia.com/selector`), container `main` with the component's image
/// and GPU limit; KWOK runs the pods. The graph's status is the operator's (the
/// `dgd-v1beta1-*.yaml` wording) with each component's counts read from its Deployment under
/// `status.components`: `successful` once every one is fully ready, else `pending`.
async fn play_dynamo_operator(client: kube::Client, namespace: String) {
    loop {
        if let Err(e) = reconcile_graphs(&client, &namespace).await {
            eprintln!("played Dynamo operator: {e}");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

async fn reconcile_graphs(client: &kube::Client, namespace: &str) -> Result<(), kube::Error> {
    use airunway_e2e::sandbox::simulate::{Stage, dgd_status};
    use k8s_openapi::api::apps::v1::Deployment;

    let graphs: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        namespace,
        &dynamo_graph::resource(dynamo_graph::V1BETA1),
    );
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    for graph in graphs.list(&Default::default()).await?.items {
        if graph.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = graph.name_any();
        let value = serde_json::to_value(&graph).unwrap();
        let owner = json!({"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeployment",
            "name": name, "uid": graph.metadata.uid.clone().unwrap(),
            "controller": true, "blockOwnerDeletion": true});
        let mut counts = serde_json::Map::new();
        let mut all_ready = true;
        for (service, spec) in dynamo_graph::components(&value) {
            let service = service.to_string();
            let component = format!("{name}-{}", service.to_lowercase());
            let replicas = spec["replicas"].as_i64().unwrap_or(1);
            let labels = json!({
                "nvidia.com/dynamo-graph-deployment-name": name,
                "nvidia.com/dynamo-component": service,
                "nvidia.com/dynamo-component-type": spec["type"],
                "nvidia.com/dynamo-namespace": format!("{namespace}-{name}"),
                "nvidia.com/selector": component,
            });
            let main = main_container(spec);
            let mut container = json!({"name": "main",
                "image": main["image"].as_str().unwrap_or("registry.invalid/dynamo:played")});
            if let Some(gpu) = main["resources"]["limits"]["nvidia.com/gpu"].as_str() {
                container["resources"] = json!({"limits": {"nvidia.com/gpu": gpu}});
            }
            let deployment = json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": component, "ownerReferences": [owner], "labels": labels},
                "spec": {"replicas": replicas,
                         "selector": {"matchLabels": {"nvidia.com/selector": component}},
                         "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}}},
            });
            deployments
                .patch(
                    &component,
                    &PatchParams::apply("dynamo-operator").force(),
                    &Patch::Apply(&deployment),
                )
                .await?;
            let status = deployments
                .get(&component)
                .await?
                .status
                .unwrap_or_default();
            let ready = i64::from(status.ready_replicas.unwrap_or(0));
            all_ready &= ready == replicas && status.replicas.map(i64::from) == Some(replicas);
            counts.insert(
                service.clone(),
                json!({"componentKind": "Deployment", "componentNames": [component],
                       "replicas": replicas, "updatedReplicas": status.updated_replicas.unwrap_or(0),
                       "readyReplicas": ready, "availableReplicas": status.available_replicas.unwrap_or(0)}),
            );
        }
        let stage = if all_ready {
            Stage::Ready
        } else {
            Stage::Progressing
        };
        let mut status = dgd_status(&value, stage).unwrap();
        status["components"] = Value::Object(counts);
        if value["status"] == status {
            continue;
        }
        let patch: json_patch::Patch =
            serde_json::from_value(json!([{"op": "add", "path": "/status", "value": status}]))
                .unwrap();
        graphs
            .patch_status(&name, &PatchParams::default(), &Patch::Json::<()>(patch))
            .await?;
    }
    Ok(())
}

/// The pods of Deployment `component`, by the operator's per-component selector label (not the
/// labels `status.selector` uses).
fn pods_of_component(component: &str, pods: &[k8s_openapi::api::core::v1::Pod]) -> Vec<String> {
    pods.iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| p.labels().get("nvidia.com/selector").map(String::as_str) == Some(component))
        .map(|p| p.name_any())
        .collect()
}

/// Scaling on Dynamo, with the played Dynamo operator running the graph's components as
/// Deployments whose pods KWOK runs: `status.selector` selects exactly the worker pods (not the
/// frontend's) and `status.workload` lists the component Deployments with
/// their roles. `kubectl scale --replicas=3` changes the worker service's replicas in place
/// (same graph uid, same worker Deployment uid, 3 pods); at 3 workers of 8 GPUs only two fit
/// the two simulated GPU nodes, so the graph serves with 3 of 4 replicas ready and `Degraded`
/// turns True, then clears at 2. `--replicas=0` stops the workers (Dynamo runs a graph with no
/// worker) and 1 brings one back.
#[tokio::test]
async fn kubectl_scale_changes_the_worker_replicas_in_place_and_degraded_follows() {
    use airunway_e2e::scale::{kubectl_scale, wait_selector_selects};
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Pod;

    let _lock = cluster_lock().await;
    let env = TestEnv::new("dynamo-scale").await;
    let stack = start(&env).await;
    let player = tokio::spawn(play_dynamo_operator(
        env.client.clone(),
        env.namespace.clone(),
    ));
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let dgd = dgds(&env);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let spec = json!({"model": {"id": "Qwen/Qwen3-8B"}, "engine": {"type": "vllm"},
               "resources": {"gpu": {"count": 8}}, "provider": {"name": "dynamo"}});
    mds.create(&PostParams::default(), &deployment("chat", spec))
        .await
        .unwrap();
    wait_for(&mds, "chat", Duration::from_secs(60), "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    let worker = "chat-vllmworker";
    let selector = wait_selector_selects(
        &env,
        "chat",
        |all: &[Pod]| pods_of_component(worker, all),
        WAIT,
    )
    .await;
    assert_eq!(
        selector,
        "nvidia.com/dynamo-component-type=worker,nvidia.com/dynamo-graph-deployment-name=chat"
    );
    let md = mds.get("chat").await.unwrap();
    let workload = md.status.as_ref().unwrap().workload.clone().unwrap();
    let graph_uid = dgd.get("chat").await.unwrap().metadata.uid.unwrap();
    assert_eq!(
        workload.upstream.as_ref().unwrap().uid.as_deref(),
        Some(graph_uid.as_str())
    );
    let listed: Vec<(String, Option<String>)> = workload
        .workloads
        .unwrap()
        .into_iter()
        .map(|w| (format!("{}/{}", w.kind, w.name), w.role))
        .collect();
    assert_eq!(
        listed,
        [
            (
                "Deployment/chat-frontend".to_string(),
                Some("frontend".to_string())
            ),
            (
                "Deployment/chat-vllmworker".to_string(),
                Some("worker".to_string())
            ),
        ]
    );
    assert_eq!(workload.container.as_deref(), Some("main"));
    assert_eq!(
        md.condition(condition_types::DEGRADED).map(|c| c.status),
        Some(ConditionStatus::False)
    );
    let worker_uid = deployments.get(worker).await.unwrap().metadata.uid;

    // 3 workers of 8 GPUs on two 8-GPU nodes: in place, and one cannot run.
    let started = std::time::Instant::now();
    kubectl_scale(&env, "chat", 3).await;
    let graph = wait_for(&dgd, "chat", WAIT, "worker replicas 3", |o| {
        component(&o.data, "VllmWorker")["replicas"] == 3
    })
    .await;
    assert_eq!(graph.metadata.uid.as_deref(), Some(graph_uid.as_str()));
    assert_eq!(component(&graph.data, "Frontend")["replicas"], 1);
    wait_selector_selects(
        &env,
        "chat",
        |all: &[Pod]| {
            let pods = pods_of_component(worker, all);
            if pods.len() == 3 { pods } else { Vec::new() }
        },
        WAIT,
    )
    .await;
    assert_eq!(
        deployments.get(worker).await.unwrap().metadata.uid,
        worker_uid
    );
    // Settled: two workers ready, the third unschedulable (no 8 GPUs left).
    let md = wait_for(&mds, "chat", WAIT, "Degraded=True at 3 of 4", |md| {
        md.condition(condition_types::DEGRADED).is_some_and(|c| {
            c.status == ConditionStatus::True
                && c.message.as_deref()
                    == Some("3 of 4 replicas ready: serving at reduced capacity")
        })
    })
    .await;
    let degraded = md.condition(condition_types::DEGRADED).unwrap();
    eprintln!(
        "Degraded=True (3 of 4) {:.1}s after kubectl scale",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(degraded.reason.as_deref(), Some("ReplicasUnavailable"));
    let replicas = md.status.as_ref().unwrap().replicas.clone().unwrap();
    assert_eq!((replicas.desired, replicas.ready), (Some(4), Some(3)));

    // 2: every replica ready again, Degraded clears and the graph is Running.
    kubectl_scale(&env, "chat", 2).await;
    let md = wait_for(
        &mds,
        "chat",
        Duration::from_secs(60),
        "Running, not Degraded",
        |md| {
            md.phase() == Some(Phase::Running)
                && md
                    .condition(condition_types::DEGRADED)
                    .is_some_and(|c| c.status == ConditionStatus::False)
        },
    )
    .await;
    assert_eq!(
        md.condition(condition_types::DEGRADED)
            .unwrap()
            .message
            .as_deref(),
        Some("3 of 3 replicas ready")
    );

    // 0: the workers stop (the frontend stays), then 1 brings one back.
    kubectl_scale(&env, "chat", 0).await;
    wait_for(&deployments, worker, WAIT, "0 replicas", |d| {
        d.spec.as_ref().and_then(|s| s.replicas) == Some(0)
            && d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0) == 0
    })
    .await;
    assert_eq!(
        component(&dgd.get("chat").await.unwrap().data, "VllmWorker")["replicas"],
        0
    );
    kubectl_scale(&env, "chat", 1).await;
    wait_selector_selects(
        &env,
        "chat",
        |all: &[Pod]| pods_of_component(worker, all),
        WAIT,
    )
    .await;
    assert_eq!(
        deployments.get(worker).await.unwrap().metadata.uid,
        worker_uid
    );

    mds.delete("chat", &DeleteParams::default()).await.unwrap();
    wait_deleted(&mds, "chat", Duration::from_secs(60)).await;
    player.abort();
    stack.stop();
}

/// `status.notReady` and `Ready` say the same: `reason`, read from an object of `kind`
/// (`None`: Ready, no `status.notReady`).
fn assert_not_ready(md: &ModelDeployment, reason: Option<NotReadyReason>, kind: &str, case: &str) {
    let status = md.status.as_ref().unwrap();
    let ready = md.condition(condition_types::READY).unwrap();
    let Some(reason) = reason else {
        assert!(status.not_ready.is_none(), "{case}: {:?}", status.not_ready);
        assert_eq!(ready.reason.as_deref(), Some("DeploymentReady"), "{case}");
        return;
    };
    let not_ready = status
        .not_ready
        .as_ref()
        .unwrap_or_else(|| panic!("{case}: no status.notReady"));
    assert_eq!(not_ready.reason, reason, "{case}: {}", not_ready.message);
    assert_eq!(ready.reason.as_deref(), Some(reason.as_str()), "{case}");
    assert_eq!(
        ready.message.as_deref(),
        Some(not_ready.message.as_str()),
        "{case}"
    );
    assert_eq!(
        not_ready.object.as_ref().map(|o| o.kind.as_str()),
        Some(kind),
        "{case}"
    );
}

/// Every status fixture `provider` declares for the conformance suite
/// (`provider-<provider>/conformance/status-fixtures.yaml`), written to the live upstream
/// object `name` as its operator would (the API server checks it against the real CRD
/// schema), gives deployment `name` the fixture's phase and `Ready` reason. Each fixture is
/// reached from a state of another reason, so a state left over cannot pass for it.
async fn every_status_fixture_on_the_live_object(
    mds: &Api<ModelDeployment>,
    upstream: &Api<DynamicObject>,
    name: &str,
    provider: &str,
) {
    let path = paths::workspace_root().join(format!(
        "provider-{provider}/conformance/status-fixtures.yaml"
    ));
    let fixtures: Vec<Value> =
        serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let field = |f: &Value, key: &str| f[key].as_str().unwrap().to_string();
    let ready = fixtures
        .iter()
        .find(|f| f["reason"] == "DeploymentReady")
        .unwrap()
        .clone();
    let other = fixtures
        .iter()
        .find(|f| f["reason"] != "DeploymentReady")
        .unwrap()
        .clone();
    let started = std::time::Instant::now();
    for fixture in &fixtures {
        let reset = if fixture["reason"] == "DeploymentReady" {
            &other
        } else {
            &ready
        };
        for step in [reset, fixture] {
            let (phase, reason) = (field(step, "phase"), field(step, "reason"));
            let patch: json_patch::Patch = serde_json::from_value(
                json!([{"op": "add", "path": "/status", "value": step["upstreamStatus"]}]),
            )
            .unwrap();
            upstream
                .patch_status(name, &PatchParams::default(), &Patch::Json::<()>(patch))
                .await
                .unwrap_or_else(|e| panic!("{}: {e}", field(step, "name")));
            wait_for(mds, name, WAIT, &field(step, "name"), |md| {
                md.phase().map(|p| p.as_str()) == Some(phase.as_str())
                    && md
                        .condition(condition_types::READY)
                        .and_then(|c| c.reason.as_deref())
                        == Some(reason.as_str())
            })
            .await;
        }
    }
    eprintln!(
        "{} {provider} status fixtures on the live object in {:.1}s",
        fixtures.len(),
        started.elapsed().as_secs_f64()
    );
}

/// The provider follows the served DynamoGraphDeployment version without a restart (its watch
/// and cache too, not only its renders): on the Dynamo 1.1 CRD (`v1alpha1` only) it renders
/// `v1alpha1` and the status Dynamo writes there reaches the deployment; back on the Dynamo ≥ 1.5
/// CRD (`v1beta1` served and stored) the same deployment's graph is `v1beta1` and its status
/// reaches the deployment again. Only a watch of the served version delivers those status
/// changes (the resync is minutes away). The default CRD is installed again at the end.
#[tokio::test]
async fn the_watch_follows_the_served_version() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    let _lock = cluster_lock().await;
    let env = TestEnv::new("dynamo-versions").await;
    let stack = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    const CRD: &str = "dynamographdeployments.nvidia.com";
    let fixtures = paths::fixtures_dir();
    let dynamo_1_1 =
        fixtures.join("upstream-crd-versions/dynamo-1.1/nvidia.com_dynamographdeployments.yaml");
    let dynamo_1_5 = fixtures.join("upstream-crds/dynamo/nvidia.com_dynamographdeployments.yaml");
    let graphs = |version: &str| -> Api<DynamicObject> {
        Api::namespaced_with(
            env.client.clone(),
            &env.namespace,
            &dynamo_graph::resource(version),
        )
    };
    let replace_crd = |file: std::path::PathBuf| {
        let (crds, client) = (crds.clone(), env.client.clone());
        async move {
            crds.delete(CRD, &DeleteParams::default()).await.unwrap();
            wait_deleted(&crds, CRD, Duration::from_secs(60)).await;
            airunway_e2e::control_plane::install_crds(&client, &[file])
                .await
                .unwrap();
        }
    };
    // Dynamo writes the status; the deployment shows it only if the provider's watch of the
    // served version delivers it.
    let served = |version: &'static str, sample: &'static str| {
        let (mds, api) = (mds.clone(), graphs(version));
        async move {
            let graph = wait_for(&api, "chat", WAIT, version, |_| true).await;
            let status = paths::upstream_status_sample(sample).unwrap();
            let patch: json_patch::Patch = serde_json::from_value(json!([
                {"op": "add", "path": "/status", "value": status}]))
            .unwrap();
            api.patch_status("chat", &PatchParams::default(), &Patch::Json::<()>(patch))
                .await
                .unwrap();
            wait_for(&mds, "chat", WAIT, "Running from the status", |md| {
                md.phase() == Some(Phase::Running)
            })
            .await;
            graph
        }
    };

    // Dynamo 1.1: v1alpha1 only.
    replace_crd(dynamo_1_1).await;
    mds.create(&PostParams::default(), &deployment("chat", json!({"model": {"id": "Qwen/Qwen3-0.6B"},
        "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}, "provider": {"name": "dynamo"}})))
        .await
        .unwrap();
    let old = served(dynamo_graph::V1ALPHA1, "dgd-successful.yaml").await;
    assert_eq!(
        old.types.as_ref().unwrap().api_version,
        "nvidia.com/v1alpha1"
    );
    assert_eq!(dynamo_graph::names(&old.data), ["Frontend", "VllmWorker"]);
    assert!(old.data["spec"]["services"].is_object(), "{:?}", old.data);

    // Dynamo >= 1.5: v1beta1 stored (and v1alpha1 served through Dynamo's conversion webhook,
    // which nothing here calls). The graph the CRD's removal took is rendered as v1beta1.
    replace_crd(dynamo_1_5).await;
    let new = served(dynamo_graph::V1BETA1, "dgd-v1beta1-successful.yaml").await;
    assert_eq!(
        new.types.as_ref().unwrap().api_version,
        "nvidia.com/v1beta1"
    );
    assert_eq!(dynamo_graph::names(&new.data), ["Frontend", "VllmWorker"]);
    assert!(new.data["spec"]["components"].is_array(), "{:?}", new.data);
    // The same provider process throughout.
    assert!(
        stack.dynamo.process.exit_status().is_none(),
        "the provider exited: {}",
        stack.dynamo.process.log_tail(20)
    );
    stack.stop();
}

/// Every example deployment in `examples/` that lands on Dynamo (named, or selected as the GPU
/// default) renders a `v1beta1` DynamoGraphDeployment on the default (Dynamo ≥ 1.5) CRD,
/// admitted by its real schema.
#[tokio::test]
async fn every_dynamo_example_renders_v1beta1() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("dynamo-example-versions").await;
    let stack = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let dgd = dgds(&env);
    let mut created = Vec::new();
    let mut files: Vec<std::path::PathBuf> =
        std::fs::read_dir(paths::workspace_root().join("examples"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
    files.sort();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
        for mut doc in docs {
            if doc["kind"] != "ModelDeployment" {
                continue;
            }
            if let Some(metadata) = doc["metadata"].as_object_mut() {
                metadata.remove("namespace");
            }
            let md: ModelDeployment = serde_json::from_value(doc).unwrap();
            // The admission webhook refuses the example written to be refused.
            if mds.create(&PostParams::default(), &md).await.is_ok() {
                created.push((file.clone(), md.name_any()));
            }
        }
    }
    let mut on_dynamo = Vec::new();
    for (file, name) in &created {
        let md = wait_for(&mds, name, WAIT, "a provider selected", |md| {
            md.selected_provider().is_some() || md.phase() == Some(Phase::Failed)
        })
        .await;
        if md.selected_provider() != Some("dynamo") {
            continue;
        }
        let graph = wait_for(&dgd, name, WAIT, "the DynamoGraphDeployment", |_| true).await;
        assert_eq!(
            graph.types.as_ref().unwrap().api_version,
            "nvidia.com/v1beta1",
            "{}",
            file.display()
        );
        assert!(
            graph.data["spec"]["components"].is_array() && graph.data["spec"]["services"].is_null(),
            "{}: {:?}",
            file.display(),
            graph.data["spec"]
        );
        on_dynamo.push(file.file_name().unwrap().to_string_lossy().to_string());
    }
    eprintln!("examples on Dynamo, rendered v1beta1: {on_dynamo:?}");
    for expected in ["disaggregated-vllm-dynamo.yaml", "gpu-vllm-dynamo.yaml"] {
        assert!(on_dynamo.iter().any(|f| f == expected), "{on_dynamo:?}");
    }
    stack.stop();
}
