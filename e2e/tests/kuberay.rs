//! The real `airunway-provider-kuberay` (running as its ServiceAccount with the shipped RBAC)
//! and the real core, against the real KubeRay RayService CRD. One test runs the real KubeRay
//! operator v1.3.0 (built from its Go module), which expands our RayServices into RayClusters
//! and Ray Pods that run on the simulated nodes, up to where it needs a Ray dashboard; the
//! others play the operator by writing the status samples KubeRay v1.3 really writes
//! (`e2e/fixtures/status-samples/rayservice-*.yaml`) for the states after that.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use airunway_api::constants::{condition_types, messages};
use airunway_api::v1alpha1::{
    ConditionStatus, InferenceProviderConfig, ModelDeployment, NotReadyReason, Phase,
    ProviderStatus,
};
use airunway_e2e::control_plane::{crd_files, install_crds};
use airunway_e2e::stack::{self, FAST_HEALTH, Running};
use airunway_e2e::wait::{eventually, wait_deleted, wait_for, wait_for_condition};
use airunway_e2e::{TestEnv, cluster_lock, paths};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);
/// The fingerprint of the shipped `ray.io/v1` RayService schema (provider-kuberay/src/schema.rs).
const V1_FINGERPRINT: &str = "7cdae45a72e929fd";

fn rayservices(env: &TestEnv) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "ray.io".into(),
        version: "v1".into(),
        api_version: "ray.io/v1".into(),
        kind: "RayService".into(),
        plural: "rayservices".into(),
    };
    Api::namespaced_with(env.client.clone(), &env.namespace, &resource)
}

async fn start(env: &TestEnv) -> (Running, Running) {
    airunway_e2e::providers::delete_all(&env.client).await;
    // The real RayService CRD, whatever an earlier (failed) test of this binary left behind.
    install_crds(&env.client, &rayservice_crd_files())
        .await
        .unwrap();
    let identity = stack::service_account_identity(
        env,
        "deploy/providers/kuberay/rbac.yaml",
        "airunway-provider-kuberay",
    )
    .await;
    let core = stack::start_core(env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let provider = stack::start_provider(
        env,
        "airunway-provider-kuberay",
        &identity,
        &["--heartbeat-interval=1s", "--finalizer-timeout=20s"],
        "kuberay-0",
    )
    .await;
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, "kuberay", WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    (core, provider)
}

/// The shipped RayService CRD file.
fn rayservice_crd_files() -> Vec<std::path::PathBuf> {
    crd_files()
        .unwrap()
        .into_iter()
        .filter(|f| f.ends_with("ray.io_rayservices.yaml"))
        .collect()
}

fn deployment(name: &str, spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment", "metadata": {"name": name}, "spec": spec})).unwrap()
}

fn gpu_vllm_on_kuberay() -> Value {
    json!({"model": {"id": "Qwen/Qwen3-8B", "servedName": "qwen3"},
           "provider": {"name": "kuberay", "overrides": {"head": {"rayStartParams": {"num-cpus": "0"}}}},
           "engine": {"type": "vllm", "contextLength": 8192, "args": {"enable-prefix-caching": "false", "enforce-eager": ""}},
           "resources": {"gpu": {"count": 1}, "memory": "32Gi"},
           "env": [{"name": "VLLM_LOGGING_LEVEL", "value": "INFO"}],
           "secrets": {"huggingFaceToken": "hf-token"},
           "nodeSelector": {"pool": "gpu"},
           "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
           "podTemplate": {"metadata": {"labels": {"team": "search"}}}})
}

/// Replaces the RayService's whole status with `status`, as the KubeRay operator does.
async fn write_status(api: &Api<DynamicObject>, name: &str, status: Value) {
    let patch: json_patch::Patch =
        serde_json::from_value(json!([{"op": "add", "path": "/status", "value": status}])).unwrap();
    api.patch_status(name, &PatchParams::default(), &Patch::Json::<()>(patch))
        .await
        .unwrap();
}

fn sample(file: &str) -> Value {
    paths::upstream_status_sample(file).unwrap()
}

#[tokio::test]
async fn gpu_vllm_named_kuberay_lifecycle_with_the_real_rayservice_schema() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("kuberay-lifecycle").await;
    let (core, provider) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let rs = rayservices(&env);

    mds.create(
        &PostParams::default(),
        &deployment("qwen", gpu_vllm_on_kuberay()),
    )
    .await
    .unwrap();
    // A GPU vLLM deployment that does not name kuberay: KubeRay is never a candidate.
    mds.create(
        &PostParams::default(),
        &deployment(
            "unnamed",
            json!({"model": {"id": "Qwen/Qwen3-8B"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}}),
        ),
    )
    .await
    .unwrap();

    let md = wait_for(&mds, "qwen", WAIT, "Deploying on kuberay", |md| {
        md.phase() == Some(Phase::Deploying)
    })
    .await;
    assert_eq!(
        md.status.clone().unwrap().provider,
        Some(ProviderStatus {
            name: Some("kuberay".into()),
            selected_reason: Some("explicit provider selection".into()),
            resource_name: Some("qwen".into()),
            resource_kind: Some("RayService".into()),
            ..Default::default()
        })
    );
    // Accepted by the real RayService schema, with the expected fields.
    let ray_service = rs.get("qwen").await.unwrap();
    let spec = &ray_service.data["spec"];
    let config: Value = serde_saphyr::from_str(spec["serveConfigV2"].as_str().unwrap()).unwrap();
    let app = &config["applications"][0];
    assert_eq!(
        (&app["name"], &app["route_prefix"], &app["import_path"]),
        (
            &json!("llm"),
            &json!("/"),
            &json!("ray.serve.llm:build_openai_app")
        )
    );
    assert_eq!(
        app["args"]["llm_configs"][0],
        json!({"model_loading_config": {"model_id": "qwen3", "model_source": "Qwen/Qwen3-8B"},
               "deployment_config": {"num_replicas": 1},
               "engine_kwargs": {"max_model_len": 8192, "enable_prefix_caching": false, "enforce_eager": true}})
    );
    let cluster = &spec["rayClusterConfig"];
    assert_eq!(
        cluster["headGroupSpec"]["rayStartParams"],
        json!({"dashboard-host": "0.0.0.0", "num-cpus": "0"})
    );
    let head = &cluster["headGroupSpec"]["template"]["spec"]["containers"][0];
    assert_eq!(head["name"], "ray-head");
    assert_eq!(head["image"], "rayproject/ray-llm:2.55.0-py311-cu128");
    let workers = cluster["workerGroupSpecs"].as_array().unwrap();
    assert_eq!(workers.len(), 1);
    let group = &workers[0];
    assert_eq!(
        (
            &group["groupName"],
            &group["replicas"],
            &group["minReplicas"],
            &group["maxReplicas"]
        ),
        (&json!("gpu-workers"), &json!(1), &json!(1), &json!(1))
    );
    let worker = &group["template"]["spec"]["containers"][0];
    assert_eq!(
        worker["resources"]["limits"],
        json!({"memory": "32Gi", "nvidia.com/gpu": "1"})
    );
    assert_eq!(
        worker["env"],
        json!([{"name": "VLLM_LOGGING_LEVEL", "value": "INFO"},
               {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "HF_TOKEN"}}}])
    );
    assert_eq!(
        group["template"]["spec"]["nodeSelector"],
        json!({"pool": "gpu"})
    );
    // `airunway.ai/model-deployment`: the label the gateway's pool selects (parity G5).
    assert_eq!(
        group["template"]["metadata"]["labels"],
        json!({"airunway.ai/deployment": "qwen", "airunway.ai/model-deployment": "qwen", "team": "search"})
    );
    let owner = &ray_service.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("ModelDeployment", "qwen", Some(true))
    );
    assert_eq!(
        ray_service
            .labels()
            .get("airunway.ai/managed-by")
            .map(String::as_str),
        Some("airunway")
    );

    // The deployment that did not name kuberay was never given to it.
    let (unnamed, _) = wait_for_condition(
        &mds,
        "unnamed",
        WAIT,
        condition_types::PROVIDER_SELECTED,
        ConditionStatus::False,
    )
    .await;
    assert_eq!(unnamed.selected_provider(), None);
    assert_eq!(unnamed.phase(), Some(Phase::Pending));
    assert!(rs.get_opt("unnamed").await.unwrap().is_none());

    // Each real KubeRay status drives the deployment.
    let mut ready_but_app_failed = sample("rayservice-running.yaml");
    ready_but_app_failed["activeServiceStatus"]["applicationStatuses"]["llm"] = json!({"status": "DEPLOY_FAILED", "message": "Deploying app 'llm' failed: CUDA out of memory"});
    let cases = [
        (
            sample("rayservice-pending.yaml"),
            Phase::Deploying,
            "RayService is initializing: RayCluster Pods are being provisioned for first time",
            ConditionStatus::False,
            0,
        ),
        (
            sample("rayservice-running.yaml"),
            Phase::Running,
            // Go's text (parity S1).
            "RayService created, pods are ready",
            ConditionStatus::True,
            1,
        ),
        (
            sample("rayservice-deploy-failed.yaml"),
            Phase::Failed,
            "Deploying app 'llm' failed with exception:\nTraceback (most recent call last):",
            ConditionStatus::False,
            0,
        ),
        (
            ready_but_app_failed,
            Phase::Failed,
            "Deploying app 'llm' failed: CUDA out of memory",
            ConditionStatus::False,
            0,
        ),
        (
            sample("rayservice-running.yaml"),
            Phase::Running,
            // Go's text (parity S1).
            "RayService created, pods are ready",
            ConditionStatus::True,
            1,
        ),
    ];
    for (index, (status, expected_phase, message, ready, ready_replicas)) in
        cases.into_iter().enumerate()
    {
        write_status(&rs, "qwen", status).await;
        let md = wait_for(&mds, "qwen", WAIT, &format!("status case {index}"), |md| {
            md.phase() == Some(expected_phase)
                && md
                    .status
                    .as_ref()
                    .and_then(|s| s.message.as_deref())
                    .is_some_and(|m| m.starts_with(message))
        })
        .await;
        let status = md.status.clone().unwrap();
        assert_eq!(
            md.condition(condition_types::READY).unwrap().status,
            ready,
            "case {index}"
        );
        // Degraded: only the ready cluster with a failed application (case 3), cleared after.
        let degraded = md.condition(condition_types::DEGRADED).unwrap();
        let expected = if index == 3 {
            (ConditionStatus::True, "ApplicationUnhealthy")
        } else {
            (ConditionStatus::False, "NotDegraded")
        };
        assert_eq!(
            (
                degraded.status,
                degraded.reason.as_deref().unwrap_or_default()
            ),
            expected,
            "case {index}: {:?}",
            degraded.message
        );
        let replicas = status.replicas.unwrap();
        assert_eq!(
            (replicas.desired, replicas.ready),
            (Some(1), Some(ready_replicas)),
            "case {index}"
        );
        // Why it is not ready, in the shared vocabulary, read from the RayService: Serve's
        // Python error is unclassified, its CUDA out-of-memory error is OOMKilled.
        let reason = [
            Some(NotReadyReason::InProgress),
            None,
            Some(NotReadyReason::Unclassified),
            Some(NotReadyReason::OomKilled),
            None,
        ][index];
        assert_not_ready(&md, reason, "RayService", &format!("case {index}"));
        let endpoint = status.endpoint.unwrap();
        assert_eq!(
            (endpoint.service.as_deref(), endpoint.port),
            (Some("qwen-serve-svc"), Some(8000)),
            "case {index}"
        );
    }
    every_status_fixture_on_the_live_object(&mds, &rs, "qwen", "kuberay").await;
    env.wait_for_event("ProviderError", |n| {
        n.contains("No module named 'vllm_serve'")
    })
    .await;

    // A hand edit of the RayService is restored, with a DriftDetected event.
    rs.patch(
        "qwen",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"rayClusterConfig": {"rayVersion": "2.9.0"}}})),
    )
    .await
    .unwrap();
    wait_for(&rs, "qwen", WAIT, "rayVersion restored", |o| {
        o.data["spec"]["rayClusterConfig"]["rayVersion"] == "2.55.0"
    })
    .await;
    env.wait_for_event("DriftDetected", |n| {
        n.starts_with("Provider resource was modified directly, reconciling")
    })
    .await;

    // Changing model.id recreates the RayService.
    let uid = rs.get("qwen").await.unwrap().uid().unwrap();
    mds.patch(
        "qwen",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"model": {"id": "Qwen/Qwen3-4B"}}})),
    )
    .await
    .unwrap();
    let recreated = wait_for(&rs, "qwen", WAIT, "a new RayService", |o| {
        o.uid() != Some(uid.clone())
    })
    .await;
    assert!(
        recreated.data["spec"]["serveConfigV2"]
            .as_str()
            .unwrap()
            .contains("model_source: Qwen/Qwen3-4B")
    );

    // Deleting the deployment deletes the RayService.
    mds.delete("qwen", &DeleteParams::default()).await.unwrap();
    wait_deleted(&mds, "qwen", WAIT).await;
    wait_deleted(&rs, "qwen", WAIT).await;
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}

#[tokio::test]
async fn incompatible_deployments_overrides_and_the_registration() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("kuberay-compat").await;
    let (core, provider) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let rs = rayservices(&env);

    for (name, spec, message) in [
        (
            "gguf",
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "image": "i", "resources": {"gpu": {"count": 1}}, "provider": {"name": "kuberay"}}),
            "spec.engine.type: provider kuberay does not support engine llamacpp",
        ),
        (
            "sgl",
            json!({"model": {"id": "a/b"}, "engine": {"type": "sglang"}, "resources": {"gpu": {"count": 1}}, "provider": {"name": "kuberay"}}),
            "spec.engine.type: provider kuberay does not support engine sglang",
        ),
        (
            "trt",
            json!({"model": {"id": "a/b"}, "engine": {"type": "trtllm"}, "resources": {"gpu": {"count": 1}}, "provider": {"name": "kuberay"}}),
            "spec.engine.type: provider kuberay does not support engine trtllm",
        ),
    ] {
        mds.create(&PostParams::default(), &deployment(name, spec))
            .await
            .unwrap();
        // The core checks KubeRay's registered capabilities at reconcile, as the Go AI Runway
        // does (issue 32, V1); the provider's own texts are its second line (unit-tested).
        let (md, validated) = wait_for_condition(
            &mds,
            name,
            WAIT,
            condition_types::VALIDATED,
            ConditionStatus::False,
        )
        .await;
        assert_eq!(validated.message.as_deref(), Some(message), "{name}");
        assert_eq!(md.phase(), Some(Phase::Failed), "{name}");
        assert!(rs.get_opt(name).await.unwrap().is_none(), "{name}");
        env.wait_for_event("ValidationFailed", |n| n == message)
            .await;
    }
    // vLLM without GPUs never reaches the provider: the API server refuses it with the CRD's
    // own rule (the provider's "KubeRay requires GPU" is its last line, unit-tested).
    let refused = mds
        .create(
            &PostParams::default(),
            &deployment(
                "cpu",
                json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 0}}, "provider": {"name": "kuberay"}}),
            ),
        )
        .await;
    match refused {
        Err(kube::Error::Api(status)) => assert!(
            status.code == 422 && status.message.contains(messages::VLLM_REQUIRES_GPU),
            "{status:?}"
        ),
        other => panic!("a vLLM deployment without GPUs was not refused: {other:?}"),
    }
    assert!(rs.get_opt("cpu").await.unwrap().is_none());

    // Overrides: a typo is a warning naming the path; a wrong type fails the deployment.
    let mut spec = gpu_vllm_on_kuberay();
    spec["provider"]["overrides"] = json!({"head": {"rayStartParms": {"num-cpus": "0"}}});
    mds.create(&PostParams::default(), &deployment("typo", spec))
        .await
        .unwrap();
    wait_for(&mds, "typo", WAIT, "Deploying", |md| {
        md.phase() == Some(Phase::Deploying)
    })
    .await;
    env.wait_for_event("UnknownOverride", |n| {
        n.starts_with("unknown key provider.overrides.head.rayStartParms is ignored")
    })
    .await;
    mds.patch(
        "typo",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"spec": {"provider": {"overrides": {"head": {"resources": {"cpu": 4}}}}}}),
        ),
    )
    .await
    .unwrap();
    let md = wait_for(&mds, "typo", WAIT, "Failed with the override error", |md| {
        md.phase() == Some(Phase::Failed)
    })
    .await;
    assert_eq!(
        md.status.unwrap().message.as_deref(),
        Some(
            "invalid provider.overrides: provider.overrides.head.resources.cpu must be a quantity string such as \"4\" or \"8Gi\", got 4"
        )
    );

    // The IPC: ready, version, heartbeat, schema version and fingerprint; no selection rules.
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    let ipc = ipcs.get("kuberay").await.unwrap();
    assert!(ipc.spec.selection_rules.as_ref().is_none_or(Vec::is_empty));
    // Ray Serve LLM's OpenAI app serves chat only, as the Go AI Runway advertises.
    let spec = serde_json::to_value(&ipc.spec).unwrap();
    assert_eq!(
        spec["capabilities"]["engines"][0]["apiFormats"],
        serde_json::json!(["openai-chat"])
    );
    let first = ipc.status.unwrap();
    assert_eq!(first.ready, Some(true));
    assert_eq!(first.version.as_deref(), Some("kuberay-provider:0.1.0"));
    assert_eq!(first.upstream_crd_version.as_deref(), Some("ray.io/v1"));
    assert_eq!(first.upstream_schema_hash.as_deref(), Some(V1_FINGERPRINT));
    let heartbeat = first.last_heartbeat.clone().unwrap();
    eventually("a newer heartbeat", WAIT, || async {
        let status = ipcs.get("kuberay").await.map_err(|e| e.to_string())?.status;
        match status.and_then(|s| s.last_heartbeat) {
            Some(next) if next != heartbeat => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}

#[tokio::test]
async fn deletion_does_not_hang_when_the_rayservice_crd_is_gone() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("kuberay-crd-gone").await;
    let (core, provider) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    mds.create(
        &PostParams::default(),
        &deployment("orphan", gpu_vllm_on_kuberay()),
    )
    .await
    .unwrap();
    wait_for(&mds, "orphan", WAIT, "Deploying", |md| {
        md.phase() == Some(Phase::Deploying)
    })
    .await;

    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    crds.delete("rayservices.ray.io", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&crds, "rayservices.ray.io", Duration::from_secs(60)).await;
    // The provider notices: not ready, with the reason.
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    let ipc = wait_for(&ipcs, "kuberay", WAIT, "ready=false", |ipc| {
        ipc.status.as_ref().and_then(|s| s.ready) == Some(false)
    })
    .await;
    let upstream = ipc
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == condition_types::UPSTREAM_AVAILABLE)
        .unwrap();
    assert_eq!(
        upstream.message.as_deref(),
        Some("CRD rayservices.ray.io is not installed: install KubeRay in the cluster")
    );

    let started = std::time::Instant::now();
    mds.delete("orphan", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&mds, "orphan", Duration::from_secs(15)).await;
    eprintln!(
        "deleted without the RayService CRD in {:.1}s (finalizer timeout is 20s)",
        started.elapsed().as_secs_f64()
    );

    // A new named deployment reports the missing CRD.
    mds.create(
        &PostParams::default(),
        &deployment("later", gpu_vllm_on_kuberay()),
    )
    .await
    .unwrap();
    let md = wait_for(&mds, "later", WAIT, "the missing-CRD message", |md| {
        md.status
            .as_ref()
            .and_then(|s| s.message.as_deref())
            .is_some_and(|m| m.starts_with(&messages::provider_crd_not_installed("kuberay")))
    })
    .await;
    assert_eq!(md.phase(), Some(Phase::Pending));

    // Put the CRD back for the other tests of this binary.
    install_crds(&env.client, &rayservice_crd_files())
        .await
        .unwrap();
    eventually("the provider to be ready again", WAIT, || async {
        let ipc = ipcs.get("kuberay").await.map_err(|e| e.to_string())?;
        if ipc.status.as_ref().and_then(|s| s.ready) == Some(true) {
            Ok(())
        } else {
            Err(format!("{:?}", ipc.status))
        }
    })
    .await;
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}

#[tokio::test]
async fn an_unknown_rayservice_schema_is_refused_naming_it() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("kuberay-schema").await;
    let (core, provider) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    mds.create(
        &PostParams::default(),
        &deployment("chat", gpu_vllm_on_kuberay()),
    )
    .await
    .unwrap();
    wait_for(&mds, "chat", WAIT, "Deploying", |md| {
        md.phase() == Some(Phase::Deploying)
    })
    .await;

    // A KubeRay whose RayService schema retyped a field this provider writes.
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let mut changed = serde_json::to_value(crds.get("rayservices.ray.io").await.unwrap()).unwrap();
    for version in changed["spec"]["versions"].as_array_mut().unwrap() {
        version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["rayClusterConfig"]
            ["properties"]["rayVersion"] = json!({"type": "integer"});
    }
    let changed: CustomResourceDefinition = serde_json::from_value(changed).unwrap();
    crds.replace("rayservices.ray.io", &PostParams::default(), &changed)
        .await
        .unwrap();
    let (md, compatible) = wait_for_condition(
        &mds,
        "chat",
        WAIT,
        condition_types::PROVIDER_COMPATIBLE,
        ConditionStatus::False,
    )
    .await;
    let message = compatible.message.unwrap_or_default();
    assert!(
        message.starts_with("unsupported rayservices.ray.io schema ray.io/v1 (fingerprint ")
            && !message.starts_with(&format!(
                "unsupported rayservices.ray.io schema ray.io/v1 (fingerprint {V1_FINGERPRINT}"
            ))
            && message.contains(&format!("this provider knows {V1_FINGERPRINT}")),
        "{message}"
    );
    assert_eq!(md.phase(), Some(Phase::Failed));
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, "kuberay", WAIT, "ready=false", |ipc| {
        ipc.status.as_ref().and_then(|s| s.ready) == Some(false)
    })
    .await;

    // The real schema back: the deployment is served again.
    install_crds(&env.client, &rayservice_crd_files())
        .await
        .unwrap();
    wait_for_condition(
        &mds,
        "chat",
        WAIT,
        condition_types::PROVIDER_COMPATIBLE,
        ConditionStatus::True,
    )
    .await;
    wait_for(&ipcs, "kuberay", WAIT, "ready again", |ipc| {
        ipc.status.as_ref().and_then(|s| s.ready) == Some(true)
            && ipc
                .status
                .as_ref()
                .and_then(|s| s.upstream_schema_hash.as_deref())
                == Some(V1_FINGERPRINT)
    })
    .await;
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}

/// The group names, replicas and container limits of a RayCluster spec (or of a RayService's
/// `rayClusterConfig`): what the KubeRay operator must carry over from what we rendered.
fn groups(cluster_spec: &Value) -> Vec<(String, Value, Value)> {
    let head = &cluster_spec["headGroupSpec"]["template"]["spec"]["containers"][0];
    let mut out = vec![(
        "head".to_string(),
        json!(1),
        head["resources"]["limits"].clone(),
    )];
    for group in cluster_spec["workerGroupSpecs"].as_array().unwrap() {
        out.push((
            group["groupName"].as_str().unwrap().to_string(),
            group["replicas"].clone(),
            group["template"]["spec"]["containers"][0]["resources"]["limits"].clone(),
        ));
    }
    out
}

/// The real KubeRay operator v1.3.0 (built from its Go module) accepts the RayServices our
/// provider creates and expands them into RayClusters with the head and worker groups,
/// replicas and GPU limits we rendered; kube-scheduler places the Ray Pods (GPU workers on the
/// simulated GPU nodes) and KWOK runs them, so the RayCluster becomes `ready`. There it stops:
/// the RayService controller next asks the Ray dashboard of the head Pod (port 8265) for the
/// Serve applications, and no Ray runs in a KWOK Pod, so the RayService stays `Initializing`
/// (its cluster in `pendingServiceStatus`) and the deployment `Deploying`. The states after
/// that are covered by the status-sample tests above.
#[tokio::test]
async fn the_real_kuberay_operator_expands_our_rayservices_into_running_rayclusters() {
    use airunway_e2e::control_plane::operators::start_kuberay_operator;
    use airunway_e2e::control_plane::workloads::GPU_NODES;
    use airunway_e2e::process::Lifetime;
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::ListParams;

    let _lock = cluster_lock().await;
    let env = TestEnv::new("kuberay-real-operator").await;
    // The CRDs the operator watches (an earlier test of this binary may have replaced them).
    let ray_crds: Vec<_> = crd_files()
        .unwrap()
        .into_iter()
        .filter(|f| f.to_string_lossy().contains("ray.io_"))
        .collect();
    install_crds(&env.client, &ray_crds).await.unwrap();
    let (core, provider) = start(&env).await;
    let log = env
        .control_plane
        .dir
        .join("logs")
        .join(format!("kuberay-operator-{}.log", env.namespace));
    env.report_log("kuberay-operator", log.clone());
    let kubeconfig = env.control_plane.kubeconfig.clone();
    let namespace = env.namespace.clone();
    let started = std::time::Instant::now();
    let operator = tokio::task::spawn_blocking(move || {
        start_kuberay_operator(
            &kubeconfig,
            &log,
            Lifetime::WithTestProcess,
            Some(&namespace),
        )
    })
    .await
    .unwrap()
    .unwrap();
    eprintln!(
        "KubeRay operator ready in {:.1}s",
        started.elapsed().as_secs_f64()
    );

    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let rs = rayservices(&env);
    let gpu_nodes = json!({"nvidia.com/gpu.present": "true"});
    mds.create(
        &PostParams::default(),
        &deployment(
            "agg",
            json!({"model": {"id": "Qwen/Qwen3-8B"}, "provider": {"name": "kuberay"},
                   "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 2}},
                   "scaling": {"replicas": 2}, "nodeSelector": gpu_nodes}),
        ),
    )
    .await
    .unwrap();
    mds.create(
        &PostParams::default(),
        &deployment(
            "pd",
            json!({"model": {"id": "Qwen/Qwen3-8B"}, "provider": {"name": "kuberay"},
                   "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"},
                   "scaling": {"prefill": {"replicas": 1, "gpu": {"count": 1}},
                               "decode": {"replicas": 2, "gpu": {"count": 1}}},
                   "nodeSelector": gpu_nodes}),
        ),
    )
    .await
    .unwrap();

    let clusters_api: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        &env.namespace,
        &ApiResource {
            group: "ray.io".into(),
            version: "v1".into(),
            api_version: "ray.io/v1".into(),
            kind: "RayCluster".into(),
            plural: "rayclusters".into(),
        },
    );
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    for (name, expected_groups) in [
        ("agg", vec![("head", 1), ("gpu-workers", 2)]),
        (
            "pd",
            vec![("head", 1), ("prefill-workers", 1), ("decode-workers", 2)],
        ),
    ] {
        let ray_service = wait_for(&rs, name, WAIT, "created by the provider", |_| true).await;
        let rendered = groups(&ray_service.data["spec"]["rayClusterConfig"]);
        // The operator names the cluster in the RayService's status and creates it.
        let with_cluster = wait_for(
            &rs,
            name,
            Duration::from_secs(60),
            "a pending RayCluster",
            |o| {
                o.data["status"]["pendingServiceStatus"]["rayClusterName"]
                    .as_str()
                    .is_some_and(|n| !n.is_empty())
            },
        )
        .await;
        let cluster_name = with_cluster.data["status"]["pendingServiceStatus"]["rayClusterName"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            cluster_name.starts_with(&format!("{name}-raycluster-")),
            "{cluster_name}"
        );
        let cluster = wait_for(
            &clusters_api,
            &cluster_name,
            Duration::from_secs(90),
            "ready (all Ray Pods running)",
            |c| c.data["status"]["state"] == "ready",
        )
        .await;
        let owner = &cluster.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("RayService", name)
        );
        let actual = groups(&cluster.data["spec"]);
        assert_eq!(
            actual, rendered,
            "{name}: the RayCluster's groups differ from the RayService's"
        );
        let names: Vec<(&str, i64)> = actual
            .iter()
            .map(|(g, r, _)| (g.as_str(), r.as_i64().unwrap()))
            .collect();
        assert_eq!(names, expected_groups, "{name}");
        for (group, _, limits) in actual.iter().skip(1) {
            let gpus = if name == "agg" { "2" } else { "1" };
            assert_eq!(limits["nvidia.com/gpu"], gpus, "{name} {group}");
        }
        // The Pods the operator created: a head and one per worker replica, each worker with
        // the GPU limit we rendered, on a simulated GPU node, Running.
        let list = pods
            .list(&ListParams::default().labels(&format!("ray.io/cluster={cluster_name}")))
            .await
            .unwrap();
        let workers: usize = expected_groups
            .iter()
            .skip(1)
            .map(|(_, r)| *r as usize)
            .sum();
        assert_eq!(list.items.len(), 1 + workers, "{name}: Ray Pods");
        for pod in &list.items {
            let labels = pod.labels();
            let node_type = labels.get("ray.io/node-type").cloned().unwrap_or_default();
            let status = pod.status.clone().unwrap();
            assert_eq!(
                status.phase.as_deref(),
                Some("Running"),
                "{}",
                pod.name_any()
            );
            let node = pod.spec.clone().unwrap().node_name.unwrap_or_default();
            assert!(
                GPU_NODES.contains(&node.as_str()),
                "{} on {node}",
                pod.name_any()
            );
            if node_type == "worker" {
                let group = labels.get("ray.io/group").unwrap();
                let limits = pod.spec.clone().unwrap().containers[0]
                    .resources
                    .clone()
                    .unwrap()
                    .limits
                    .unwrap();
                let expected = rendered.iter().find(|(g, _, _)| g == group).unwrap();
                assert_eq!(
                    limits.get("nvidia.com/gpu").map(|q| q.0.clone()),
                    expected.2["nvidia.com/gpu"].as_str().map(str::to_string),
                    "{}",
                    pod.name_any()
                );
            }
        }
        // Where it stops: no Ray dashboard answers, so the Serve applications are never
        // deployed; the RayService stays Initializing and the deployment Deploying.
        let ray_service = rs.get(name).await.unwrap();
        let ready = ray_service.data["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Ready")
            .cloned()
            .unwrap();
        assert_eq!(
            (&ready["status"], &ready["reason"]),
            (&json!("False"), &json!("Initializing"))
        );
        let md = mds.get(name).await.unwrap();
        assert_eq!(md.phase(), Some(Phase::Deploying), "{name}");
    }
    eprintln!(
        "both RayClusters ready {:.1}s after the operator started",
        started.elapsed().as_secs_f64()
    );
    // The operator's own account of where it stops (its log, error level).
    let log_text = std::fs::read_to_string(operator.process.log()).unwrap_or_default();
    let stops: Vec<&str> = log_text
        .lines()
        .filter(|l| l.contains("\terror\t") && !l.contains("found 0 head"))
        .collect();
    eprintln!(
        "operator errors once the clusters exist (last 2 of {}):\n{}",
        stops.len(),
        stops[stops.len().saturating_sub(2)..].join("\n")
    );
    assert!(
        stops
            .iter()
            .any(|l| l.contains("failed to get Serve application statuses from the dashboard")),
        "the operator stops at the Ray dashboard"
    );
    for name in ["agg", "pd"] {
        mds.delete(name, &DeleteParams::default()).await.unwrap();
    }
    for name in ["agg", "pd"] {
        wait_deleted(&mds, name, Duration::from_secs(60)).await;
        wait_deleted(&rs, name, Duration::from_secs(60)).await;
    }
    operator.process.terminate(Duration::from_secs(10));
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}

/// The pods of RayCluster `cluster` that run the model: owned by it and asking for GPUs (the
/// worker groups; the head has none), found without the labels the selector uses.
fn gpu_pods_of(cluster: &str, pods: &[k8s_openapi::api::core::v1::Pod]) -> Vec<String> {
    pods.iter()
        .filter(|p| {
            p.owner_references()
                .iter()
                .any(|o| o.kind == "RayCluster" && o.name == cluster)
        })
        .filter(|p| {
            p.metadata.deletion_timestamp.is_none()
                && p.spec.as_ref().is_some_and(|s| {
                    s.containers.iter().any(|c| {
                        c.resources
                            .as_ref()
                            .and_then(|r| r.limits.as_ref())
                            .is_some_and(|l| l.contains_key("nvidia.com/gpu"))
                    })
                })
        })
        .map(|p| p.name_any())
        .collect()
}

/// `kubectl scale md/<name> --replicas=3` with the real KubeRay operator v1.3.0: the RayService
/// is changed in place (same uid, worker group replicas 3) and, because KubeRay leaves a
/// running cluster's worker replicas to Ray's autoscaler, the provider scales the RayCluster
/// itself: the same RayCluster (same uid) gets 3 GPU worker pods, which KWOK runs, and
/// `status.selector` selects exactly them (not the head, not another deployment's pods);
/// `status.workload` names the RayService, its RayCluster, `ray-worker` and port 8000. Zero is
/// refused with a condition naming KubeRay and the minimum, nothing changes and the spec keeps
/// 0; back to 1, the cluster drops to one worker.
#[tokio::test]
async fn kubectl_scale_resizes_the_running_raycluster_in_place() {
    use airunway_e2e::control_plane::operators::start_kuberay_operator;
    use airunway_e2e::process::Lifetime;
    use airunway_e2e::scale::{kubectl_scale, wait_selector_selects};
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::ListParams;

    let _lock = cluster_lock().await;
    let env = TestEnv::new("kuberay-scale").await;
    let ray_crds: Vec<_> = crd_files()
        .unwrap()
        .into_iter()
        .filter(|f| f.to_string_lossy().contains("ray.io_"))
        .collect();
    install_crds(&env.client, &ray_crds).await.unwrap();
    let (core, provider) = start(&env).await;
    let log = env
        .control_plane
        .dir
        .join("logs")
        .join(format!("kuberay-operator-{}.log", env.namespace));
    env.report_log("kuberay-operator", log.clone());
    let kubeconfig = env.control_plane.kubeconfig.clone();
    let namespace = env.namespace.clone();
    let operator = tokio::task::spawn_blocking(move || {
        start_kuberay_operator(
            &kubeconfig,
            &log,
            Lifetime::WithTestProcess,
            Some(&namespace),
        )
    })
    .await
    .unwrap()
    .unwrap();

    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let rs = rayservices(&env);
    let clusters: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        &env.namespace,
        &ApiResource {
            group: "ray.io".into(),
            version: "v1".into(),
            api_version: "ray.io/v1".into(),
            kind: "RayCluster".into(),
            plural: "rayclusters".into(),
        },
    );
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    let spec = |name: &str| {
        deployment(
            name,
            json!({"model": {"id": "Qwen/Qwen3-8B"}, "provider": {"name": "kuberay"},
                   "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}},
                   "nodeSelector": {"nvidia.com/gpu.present": "true"}}),
        )
    };
    // A second deployment beside it: its Ray pods must not be selected.
    for name in ["scaled", "other"] {
        mds.create(&PostParams::default(), &spec(name))
            .await
            .unwrap();
    }
    let mut cluster_names = Vec::new();
    for name in ["scaled", "other"] {
        let with_cluster = wait_for(&rs, name, Duration::from_secs(60), "a RayCluster", |o| {
            o.data["status"]["pendingServiceStatus"]["rayClusterName"]
                .as_str()
                .is_some_and(|n| !n.is_empty())
        })
        .await;
        let cluster = with_cluster.data["status"]["pendingServiceStatus"]["rayClusterName"]
            .as_str()
            .unwrap()
            .to_string();
        wait_for(&clusters, &cluster, Duration::from_secs(90), "ready", |c| {
            c.data["status"]["state"] == "ready"
        })
        .await;
        cluster_names.push(cluster);
    }
    let cluster_name = cluster_names[0].clone();
    let service_uid = rs.get("scaled").await.unwrap().metadata.uid.unwrap();
    let cluster_uid = clusters
        .get(&cluster_name)
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    let expected = |cluster: String| move |all: &[Pod]| gpu_pods_of(&cluster, all);
    let selector = wait_selector_selects(
        &env,
        "scaled",
        expected(cluster_name.clone()),
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(
        selector,
        format!("ray.io/cluster={cluster_name},ray.io/node-type=worker")
    );
    let workload = mds
        .get("scaled")
        .await
        .unwrap()
        .status
        .unwrap()
        .workload
        .unwrap();
    let upstream = workload.upstream.unwrap();
    assert_eq!(
        (
            upstream.kind.as_str(),
            upstream.name.as_str(),
            upstream.uid.as_deref()
        ),
        ("RayService", "scaled", Some(service_uid.as_str()))
    );
    let workloads = workload.workloads.unwrap();
    assert_eq!(
        (workloads[0].kind.as_str(), workloads[0].name.as_str()),
        ("RayCluster", cluster_name.as_str())
    );
    assert_eq!(
        (workload.container.as_deref(), workload.port),
        (Some("ray-worker"), Some(8000))
    );

    // Scaled to 3 by the real kubectl through the scale subresource.
    let started = std::time::Instant::now();
    kubectl_scale(&env, "scaled", 3).await;
    let ray_service = wait_for(&rs, "scaled", WAIT, "worker replicas 3", |o| {
        o.data["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["replicas"] == 3
    })
    .await;
    assert_eq!(
        ray_service.metadata.uid.as_deref(),
        Some(service_uid.as_str())
    );
    let cluster = wait_for(&clusters, &cluster_name, WAIT, "worker replicas 3", |c| {
        c.data["spec"]["workerGroupSpecs"][0]["replicas"] == 3
    })
    .await;
    assert_eq!(cluster.metadata.uid.as_deref(), Some(cluster_uid.as_str()));
    // Written by the provider (KubeRay leaves a running cluster's replicas to Ray's autoscaler).
    let managers: Vec<(String, String)> = cluster
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|m| {
            (
                m.manager.clone().unwrap_or_default(),
                m.operation.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert!(
        managers.contains(&("kuberay-provider".to_string(), "Update".to_string())),
        "{managers:?}"
    );
    wait_selector_selects(
        &env,
        "scaled",
        |all: &[Pod]| {
            let serving = gpu_pods_of(&cluster_name, all);
            if serving.len() == 3 {
                serving
            } else {
                Vec::new()
            }
        },
        Duration::from_secs(60),
    )
    .await;
    let running = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .unwrap()
        .items
        .iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .count();
    eprintln!(
        "3 GPU workers in the same RayCluster {:.1}s after kubectl scale ({running} Running)",
        started.elapsed().as_secs_f64()
    );
    // The other deployment's cluster was not touched.
    let other = clusters.get(&cluster_names[1]).await.unwrap();
    assert_eq!(other.data["spec"]["workerGroupSpecs"][0]["replicas"], 1);

    // Zero: refused with KubeRay's reason and minimum; the RayService and the cluster keep 3,
    // the spec keeps 0.
    kubectl_scale(&env, "scaled", 0).await;
    let (md, refused) = wait_for_condition(
        &mds,
        "scaled",
        WAIT,
        condition_types::PROVIDER_COMPATIBLE,
        ConditionStatus::False,
    )
    .await;
    assert_eq!(
        refused.message.as_deref(),
        Some(airunway_provider_kuberay::compat::NO_ZERO)
    );
    assert_eq!(md.phase(), Some(Phase::Failed));
    assert_eq!(md.spec.scaling.as_ref().unwrap().replicas, Some(0));
    assert_eq!(
        rs.get("scaled").await.unwrap().data["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["replicas"],
        3
    );
    assert_eq!(
        clusters.get(&cluster_name).await.unwrap().data["spec"]["workerGroupSpecs"][0]["replicas"],
        3
    );

    // Back to 1: compatible again, the same cluster drops to one GPU worker.
    kubectl_scale(&env, "scaled", 1).await;
    wait_for_condition(
        &mds,
        "scaled",
        WAIT,
        condition_types::PROVIDER_COMPATIBLE,
        ConditionStatus::True,
    )
    .await;
    wait_selector_selects(
        &env,
        "scaled",
        |all: &[Pod]| {
            let serving = gpu_pods_of(&cluster_name, all);
            if serving.len() == 1 {
                serving
            } else {
                Vec::new()
            }
        },
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(
        clusters
            .get(&cluster_name)
            .await
            .unwrap()
            .metadata
            .uid
            .as_deref(),
        Some(cluster_uid.as_str())
    );

    for name in ["scaled", "other"] {
        mds.delete(name, &DeleteParams::default()).await.unwrap();
    }
    for name in ["scaled", "other"] {
        wait_deleted(&mds, name, Duration::from_secs(60)).await;
        wait_deleted(&rs, name, Duration::from_secs(60)).await;
    }
    operator.process.terminate(Duration::from_secs(10));
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
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
