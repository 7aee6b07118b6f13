//! The real `airunway-provider-dynamo` (with `airunway-provider-kaito` beside it, both as their
//! ServiceAccounts) and the real core, against the real DynamoGraphDeployment CRD; the test plays
//! the Dynamo operator with the status samples it really writes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use airunway_api::constants::condition_types;
use airunway_api::v1alpha1::{ConditionStatus, ModelDeployment, Phase};
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

fn dgds(env: &TestEnv) -> Api<DynamicObject> {
    let r = resource(
        "nvidia.com",
        "v1alpha1",
        "DynamoGraphDeployment",
        "dynamographdeployments",
    );
    Api::namespaced_with(env.client.clone(), &env.namespace, &r)
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

    // The real schema accepted the DGDs, with the expected services.
    let services = |o: &DynamicObject| -> Vec<String> {
        o.data["spec"]["services"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    let one = dgd.get("llama-8b").await.unwrap();
    assert_eq!(services(&one), ["Frontend", "VllmWorker"]);
    assert_eq!(
        one.data["spec"]["services"]["VllmWorker"]["extraPodSpec"]["mainContainer"]["args"],
        json!([
            "--model",
            "meta-llama/Llama-3.1-8B-Instruct",
            "--max-model-len",
            "8192",
            "--enable-prefix-caching"
        ])
    );
    // The Go AI Runway's shapes, accepted by the real schema: GPUs as limits and requests, the
    // model and engine labels.
    assert_eq!(
        one.data["spec"]["services"]["VllmWorker"]["resources"],
        json!({"limits": {"gpu": "1", "memory": "32Gi"}, "requests": {"gpu": "1"}})
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
    assert_eq!(three.data["spec"]["services"]["Frontend"]["replicas"], 2);
    assert_eq!(
        three.data["spec"]["services"]["Frontend"]["envs"],
        json!([{"name": "DYN_ROUTER_MODE", "value": "kv"}])
    );
    assert_eq!(
        three.data["spec"]["services"]["VllmPrefillWorker"]["subComponentType"],
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
        trt.data["spec"]["services"]["TrtllmWorker"]["extraPodSpec"]["mainContainer"]["image"],
        "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:1.1.1"
    );
    let knobs = wait_for(
        &dgd,
        "knobs",
        WAIT,
        "the DGD with the engine fields",
        |_| true,
    )
    .await;
    let container = &knobs.data["spec"]["services"]["VllmWorker"]["extraPodSpec"]["mainContainer"];
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
        knobs.data["spec"]["services"]["VllmWorker"]["resources"],
        json!({"limits": {"gpu": "1", "cpu": "4"}, "requests": {"gpu": "1"}})
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
            "dgd-pending.yaml",
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
            "dgd-failed.yaml",
            Phase::Failed,
            "failed to reconcile Dynamo components deployments: no multinode orchestrator available",
            0,
        ),
        // Every service counts (frontend and worker, as the Go AI Runway sums them).
        // Go's text while Running (parity S1).
        (
            "dgd-successful.yaml",
            Phase::Running,
            "DynamoGraphDeployment created, pods are ready",
            2,
        ),
    ] {
        // The samples name their worker service VllmWorker, as this DGD does.
        let status = paths::upstream_status_sample(file).unwrap();
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
    wait_for(&dgd, "chat", WAIT, "frontend replicas 2", |o| {
        o.data["spec"]["services"]["Frontend"]["replicas"] == 2
    })
    .await;

    // Drift is reverted.
    dgd.patch(
        "chat",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"services": {"VllmWorker": {"replicas": 9}}}})),
    )
    .await
    .unwrap();
    wait_for(&dgd, "chat", WAIT, "worker replicas restored", |o| {
        o.data["spec"]["services"]["VllmWorker"]["replicas"] == 1
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
    assert!(
        recreated.data["spec"]["services"]
            .get("VllmPrefillWorker")
            .is_some()
    );
    assert!(
        recreated.data["spec"]["services"]
            .get("VllmWorker")
            .is_none()
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
