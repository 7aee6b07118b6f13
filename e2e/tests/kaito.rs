//! The real `airunway-provider-kaito` (running as its ServiceAccount with the shipped RBAC) and
//! the real core, against the real KAITO Workspace CRD. KAITO's operator cannot be built here
//! (its Go module is not served): one test runs the KAITO simulator
//! (`airunway_e2e::sandbox::kaito`), which creates the workload KAITO would and whose Pods
//! really run on the simulated nodes; the others write the status samples KAITO v0.10 really
//! writes (`e2e/fixtures/status-samples/workspace-*.yaml`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::Duration;

use airunway_api::constants::{condition_types, messages};
use airunway_api::v1alpha1::{
    ConditionStatus, InferenceProviderConfig, ModelDeployment, NotReadyReason, Phase,
    ProviderStatus,
};
use airunway_e2e::control_plane::{crd_files, install_crds};
use airunway_e2e::sandbox::kaito;
use airunway_e2e::stack::{self, FAST_HEALTH, Running};
use airunway_e2e::wait::{eventually, wait_deleted, wait_for, wait_for_condition};
use airunway_e2e::{TestEnv, cluster_lock, paths};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);

fn workspaces(env: &TestEnv) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "kaito.sh".into(),
        version: "v1beta1".into(),
        api_version: "kaito.sh/v1beta1".into(),
        kind: "Workspace".into(),
        plural: "workspaces".into(),
    };
    Api::namespaced_with(env.client.clone(), &env.namespace, &resource)
}

async fn start(env: &TestEnv) -> (Running, Running) {
    start_with(env, &[]).await
}

/// [`start`] with `extra` provider flags.
async fn start_with(env: &TestEnv, extra: &[&str]) -> (Running, Running) {
    airunway_e2e::providers::delete_all(&env.client).await;
    // The KAITO provider is ready only while a KAITO workspace controller runs: the
    // simulator's stand-in Deployment, whose Pod runs on a simulated node.
    kaito::install_controller_stand_in(&env.client)
        .await
        .unwrap();
    let identity: PathBuf = stack::service_account_identity(
        env,
        "deploy/providers/kaito/rbac.yaml",
        "airunway-provider-kaito",
    )
    .await;
    let core = stack::start_core(env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let provider = stack::start_provider(
        env,
        "airunway-provider-kaito",
        &identity,
        &[
            &["--heartbeat-interval=1s", "--finalizer-timeout=20s"],
            extra,
        ]
        .concat(),
        "kaito-0",
    )
    .await;
    (core, provider)
}

fn deployment(name: &str, spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment", "metadata": {"name": name}, "spec": spec})).unwrap()
}

fn cpu_llamacpp() -> Value {
    json!({"model": {"id": "google/gemma-3-1b-it-qat-q8_0-gguf"}, "engine": {"type": "llamacpp", "args": {"model-file": "gemma-3-1b-it-q8_0.gguf"}},
           "resources": {"gpu": {"count": 0}, "memory": "16Gi", "cpu": "8"}, "image": "ghcr.io/sozercan/llama-cpp-runner:latest",
           "secrets": {"huggingFaceToken": "hf-token"}})
}

#[tokio::test]
async fn cpu_llamacpp_lifecycle_with_the_real_workspace_schema() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("kaito-lifecycle").await;
    let (core, provider) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let ws = workspaces(&env);

    // Auto-selected (no provider named) and accepted by the real KAITO schema.
    mds.create(
        &PostParams::default(),
        &deployment("gemma-cpu", cpu_llamacpp()),
    )
    .await
    .unwrap();
    let md = wait_for(&mds, "gemma-cpu", WAIT, "Deploying on kaito", |md| {
        md.phase() == Some(Phase::Deploying)
    })
    .await;
    let status = md.status.clone().unwrap();
    assert_eq!(
        status.provider,
        Some(ProviderStatus {
            name: Some("kaito".into()),
            selected_reason: Some(
                "matched capabilities: engine=llamacpp, gpu=false, mode=aggregated".into()
            ),
            resource_name: Some("gemma-cpu".into()),
            resource_kind: Some("Workspace".into()),
            ..Default::default()
        })
    );
    let workspace = ws.get("gemma-cpu").await.unwrap();
    let data = &workspace.data;
    assert_eq!(
        data["resource"],
        json!({"count": 1, "labelSelector": {"matchLabels": {"kubernetes.io/os": "linux"}}})
    );
    let container = &data["inference"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["image"],
        "ghcr.io/sozercan/llama-cpp-runner:latest"
    );
    assert_eq!(
        container["args"],
        json!([
            "huggingface://google/gemma-3-1b-it-qat-q8_0-gguf/gemma-3-1b-it-q8_0.gguf",
            "--address=:5000"
        ])
    );
    assert_eq!(container["ports"], json!([{"containerPort": 5000}]));
    assert_eq!(
        container["resources"],
        json!({"requests": {"memory": "16Gi", "cpu": "8"}})
    );
    // The token by reference to the Secret's HF_TOKEN key (Go's form, parity K3).
    assert_eq!(
        container["env"],
        json!([{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "HF_TOKEN"}}}])
    );
    assert!(container.get("envFrom").is_none());
    let owner = &workspace.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (
            owner.kind.as_str(),
            owner.controller,
            owner.block_owner_deletion
        ),
        ("ModelDeployment", Some(true), Some(true))
    );
    assert_eq!(
        workspace
            .labels()
            .get("airunway.ai/managed-by")
            .map(String::as_str),
        Some("airunway")
    );

    // Each real KAITO status drives the deployment.
    let cases = [
        (
            "workspace-pending.yaml",
            Phase::Deploying,
            "Inference workload is not ready",
            ConditionStatus::False,
            0,
        ),
        (
            "workspace-nodes-not-ready.yaml",
            Phase::Deploying,
            "Not enough Nodes are ready",
            ConditionStatus::False,
            0,
        ),
        (
            "workspace-reconcile-error.yaml",
            Phase::Deploying,
            "KAITO reconcile error: failed to get GPU config: missing required nvidia.com labels on node aks-gpu-31245678-vmss000000",
            ConditionStatus::False,
            0,
        ),
        (
            "workspace-ready.yaml",
            Phase::Running,
            // Go's text (parity S1).
            "Workspace created, pods are ready",
            ConditionStatus::True,
            1,
        ),
        (
            "workspace-notready.yaml",
            Phase::Deploying,
            "Inference workload is not ready",
            ConditionStatus::False,
            0,
        ),
    ];
    for (file, expected_phase, message, ready, ready_replicas) in cases {
        ws.patch_status(
            "gemma-cpu",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": paths::upstream_status_sample(file).unwrap()})),
        )
        .await
        .unwrap();
        let md = wait_for(&mds, "gemma-cpu", WAIT, file, |md| {
            md.phase() == Some(expected_phase)
                && md.status.as_ref().and_then(|s| s.message.as_deref()) == Some(message)
        })
        .await;
        let status = md.status.clone().unwrap();
        assert_eq!(
            md.condition(condition_types::READY).unwrap().status,
            ready,
            "{file}"
        );
        assert_eq!(
            status.replicas.as_ref().unwrap().ready,
            Some(ready_replicas),
            "{file}"
        );
        assert_eq!(status.replicas.as_ref().unwrap().desired, Some(1), "{file}");
        // Why it is not ready, in the shared vocabulary, read from the Workspace.
        let reason = match file {
            "workspace-pending.yaml" => Some(NotReadyReason::InProgress),
            "workspace-nodes-not-ready.yaml" => Some(NotReadyReason::InsufficientCapacity),
            "workspace-reconcile-error.yaml" => Some(NotReadyReason::UpstreamReconcileError),
            "workspace-notready.yaml" => Some(NotReadyReason::Unclassified),
            _ => None,
        };
        assert_not_ready(&md, reason, "Workspace", file);
        let endpoint = status.endpoint.unwrap();
        assert_eq!(
            (endpoint.service.as_deref(), endpoint.port),
            (Some("gemma-cpu"), Some(80)),
            "{file}"
        );
    }

    every_status_fixture_on_the_live_object(&mds, &ws, "gemma-cpu", "kaito").await;

    // A hand edit of the Workspace is restored, with a DriftDetected event.
    ws.patch(
        "gemma-cpu",
        &PatchParams::default(),
        &Patch::Merge(json!({"resource": {"count": 5}})),
    )
    .await
    .unwrap();
    wait_for(&ws, "gemma-cpu", WAIT, "count restored to 1", |w| {
        w.data["resource"]["count"] == 1
    })
    .await;
    env.wait_for_event("DriftDetected", |n| {
        n.starts_with("Provider resource was modified directly, reconciling")
    })
    .await;

    // Changing model.id recreates the Workspace.
    let uid = ws.get("gemma-cpu").await.unwrap().uid().unwrap();
    mds.patch(
        "gemma-cpu",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"model": {"id": "google/gemma-3-4b-it-qat-q4_0-gguf"}}})),
    )
    .await
    .unwrap();
    let recreated = wait_for(&ws, "gemma-cpu", WAIT, "a new Workspace", |w| {
        w.uid() != Some(uid.clone())
    })
    .await;
    assert!(
        recreated.data["inference"]["template"]["spec"]["containers"][0]["args"][0]
            .as_str()
            .unwrap()
            .starts_with("huggingface://google/gemma-3-4b-it")
    );

    // Deleting the deployment deletes the Workspace.
    mds.delete("gemma-cpu", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&mds, "gemma-cpu", WAIT).await;
    wait_deleted(&ws, "gemma-cpu", WAIT).await;
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}

#[tokio::test]
async fn vllm_preset_named_kaito_and_incompatible_engines() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("kaito-preset").await;
    let (core, provider) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    mds.create(&PostParams::default(), &deployment("phi", json!({"model": {"id": "microsoft/Phi-4-mini-instruct"}, "engine": {"type": "vllm"},
        "resources": {"gpu": {"count": 1}}, "provider": {"name": "kaito"}, "secrets": {"huggingFaceToken": "hf"}}))).await.unwrap();
    wait_for(&mds, "phi", WAIT, "Deploying", |md| {
        md.phase() == Some(Phase::Deploying)
    })
    .await;
    let workspace = workspaces(&env).get("phi").await.unwrap();
    let preset = &workspace.data["inference"]["preset"];
    // `model.id` verbatim, as the Go AI Runway (parity K1).
    assert_eq!(preset["name"], "microsoft/Phi-4-mini-instruct");
    assert_eq!(preset["presetOptions"], json!({"modelAccessSecret": "hf"}));
    assert_eq!(
        preset["accessMode"], "public",
        "the real schema's default is kept (not drift)"
    );
    assert_eq!(
        workspace.data["resource"]["labelSelector"],
        json!({"matchLabels": {"kubernetes.io/os": "linux", "nvidia.com/gpu.present": "true"}})
    );

    // sglang named on kaito: the core checks KAITO's registered capabilities at reconcile, as
    // the Go AI Runway does (issue 32, V1): Validated=False with Go's text, Failed, no Workspace
    // (the provider's own check, with the spec's text, is its second line, unit-tested).
    mds.create(
        &PostParams::default(),
        &deployment(
            "sgl",
            json!({"model": {"id": "a/b"}, "engine": {"type": "sglang"},
        "resources": {"gpu": {"count": 1}}, "provider": {"name": "kaito"}}),
        ),
    )
    .await
    .unwrap();
    let (md, validated) = wait_for_condition(
        &mds,
        "sgl",
        WAIT,
        condition_types::VALIDATED,
        ConditionStatus::False,
    )
    .await;
    let message = "spec.engine.type: provider kaito does not support engine sglang";
    assert_eq!(validated.message.as_deref(), Some(message));
    assert_eq!(md.phase(), Some(Phase::Failed));
    assert!(workspaces(&env).get_opt("sgl").await.unwrap().is_none());
    env.wait_for_event("ValidationFailed", |n| n == message)
        .await;

    // The IPC: ready, version, heartbeat, schema version and fingerprint.
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    let ipc = ipcs.get("kaito").await.unwrap();
    // llama.cpp ignores `servedName` behind the gateway (the Go AI Runway's registration);
    // vLLM does not.
    let spec = serde_json::to_value(&ipc.spec).unwrap();
    let gateway = |engine: &str| {
        spec["capabilities"]["engines"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e["name"] == engine)
            .map(|e| e["gateway"]["ignoresServedName"].clone())
    };
    assert_eq!(gateway("llamacpp"), Some(serde_json::json!(true)));
    assert_eq!(gateway("vllm"), Some(serde_json::Value::Null));
    let status = ipc.status.unwrap();
    assert_eq!(status.ready, Some(true));
    assert_eq!(status.version.as_deref(), Some("kaito-provider:0.1.0"));
    assert!(status.last_heartbeat.is_some());
    assert_eq!(
        status.upstream_crd_version.as_deref(),
        Some("kaito.sh/v1beta1")
    );
    assert_eq!(
        status.upstream_schema_hash.as_deref(),
        Some(airunway_provider_kaito_fingerprint())
    );
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}

/// Without KAITO's workspace controller the provider refuses fast, as the Go AI Runway does:
/// no Workspace nobody would reconcile, `Ready=False/UpstreamControllerMissing` with how to
/// install the controller, and the core's `ProviderUnhealthy` event saying the same; with the
/// controller back the deployment proceeds (issue 32, bug 4).
#[tokio::test]
async fn without_the_workspace_controller_nothing_is_created_until_it_is_back() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("kaito-no-controller").await;
    let (core, provider) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    let ready = |want: bool| {
        move |ipc: &InferenceProviderConfig| ipc.status.as_ref().and_then(|s| s.ready) == Some(want)
    };
    wait_for(&ipcs, "kaito", WAIT, "kaito ready", ready(true)).await;

    // The controller removed: the registration goes not ready.
    let controllers: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(env.client.clone(), kaito::CONTROLLER_NAMESPACE);
    controllers
        .delete("kaito-workspace", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&controllers, "kaito-workspace", WAIT).await;
    wait_for(&ipcs, "kaito", WAIT, "kaito not ready", ready(false)).await;

    let mut spec = cpu_llamacpp();
    spec["provider"] = json!({"name": "kaito"});
    mds.create(&PostParams::default(), &deployment("waiting", spec))
        .await
        .unwrap();
    let (md, condition) = wait_for_condition(
        &mds,
        "waiting",
        WAIT,
        condition_types::READY,
        ConditionStatus::False,
    )
    .await;
    // Ready in the shared vocabulary; ResourceCreated keeps the Go AI Runway's reason (below).
    assert_eq!(
        condition.reason.as_deref(),
        Some(NotReadyReason::UpstreamOperatorMissing.as_str()),
        "{condition:?}"
    );
    let message = condition.message.unwrap_or_default();
    assert!(
        message.starts_with("The KAITO workspace controller is not running")
            && message.contains("helm install kaito-workspace kaito/workspace")
            && message.contains("az aks update --enable-ai-toolchain-operator"),
        "{message}"
    );
    let created = md.condition(condition_types::RESOURCE_CREATED).unwrap();
    assert_eq!(created.reason.as_deref(), Some("UpstreamControllerMissing"));
    assert!(
        workspaces(&env).get_opt("waiting").await.unwrap().is_none(),
        "a Workspace nobody reconciles was created"
    );
    env.wait_for_event("ProviderUnhealthy", |n| {
        n.contains("KAITO workspace controller is not running")
    })
    .await;

    // The controller back: the deployment proceeds without being touched.
    kaito::install_controller_stand_in(&env.client)
        .await
        .unwrap();
    wait_for(&ipcs, "kaito", WAIT, "kaito ready again", ready(true)).await;
    eventually(
        "the Workspace once the controller is back",
        WAIT,
        || async {
            workspaces(&env)
                .get_opt("waiting")
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| "no Workspace yet".to_string())
        },
    )
    .await;
    let md = wait_for(&mds, "waiting", WAIT, "Deploying", |md| {
        md.phase() == Some(Phase::Deploying)
    })
    .await;
    assert_ne!(
        md.condition(condition_types::READY)
            .and_then(|c| c.reason.clone())
            .as_deref(),
        Some("UpstreamControllerMissing")
    );

    mds.delete("waiting", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&mds, "waiting", WAIT).await;
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}

/// A Workspace of the deployment's name that belongs to someone else is left alone, and the
/// deployment says so with the Go AI Runway's reason, `ResourceConflict`, naming the owner's
/// kind, name and uid (issue 32, bug 5); an unowned one says `no owner references`.
#[tokio::test]
async fn a_workspace_of_someone_else_is_a_resource_conflict() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("kaito-conflict").await;
    let (core, provider) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let holders: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(env.client.clone(), &env.namespace);
    let holder = holders
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "holder"}})).unwrap(),
        )
        .await
        .unwrap();
    let holder_uid = holder.uid().unwrap();
    let foreign = |name: &str, owners: Value| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "kaito.sh/v1beta1", "kind": "Workspace",
            "metadata": {"name": name, "ownerReferences": owners, "labels": {"team": "someone-else"}},
            "resource": {"count": 1, "labelSelector": {"matchLabels": {"kubernetes.io/os": "linux"}}},
            "inference": {"template": {"spec": {"containers": [{"name": "server", "image": "busybox"}]}}},
        }))
        .unwrap()
    };
    let ws = workspaces(&env);
    for (name, owners, owner_text) in [
        (
            "taken",
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "holder", "uid": holder_uid}]),
            format!("owned by ConfigMap/holder (uid {holder_uid})"),
        ),
        ("unowned", json!([]), "no owner references".to_string()),
    ] {
        let before = ws
            .create(&PostParams::default(), &foreign(name, owners))
            .await
            .unwrap();
        mds.create(&PostParams::default(), &deployment(name, cpu_llamacpp()))
            .await
            .unwrap();
        let (md, ready) = wait_for_condition(
            &mds,
            name,
            WAIT,
            condition_types::READY,
            ConditionStatus::False,
        )
        .await;
        let expected = format!(
            "Workspace {}/{name} exists but is not managed by this ModelDeployment ({owner_text}); delete or rename it",
            env.namespace
        );
        assert_eq!(ready.reason.as_deref(), Some("ResourceConflict"), "{name}");
        assert_eq!(ready.message.as_deref(), Some(expected.as_str()), "{name}");
        let created = md.condition(condition_types::RESOURCE_CREATED).unwrap();
        assert_eq!(
            created.reason.as_deref(),
            Some("ResourceConflict"),
            "{name}"
        );
        let status = md.status.unwrap();
        assert_eq!(status.phase, Some(Phase::Failed), "{name}");
        assert_eq!(status.message.as_deref(), Some(expected.as_str()), "{name}");
        // The Workspace is not taken over.
        let after = ws.get(name).await.unwrap();
        assert_eq!(
            after.metadata.resource_version, before.metadata.resource_version,
            "{name}: the foreign Workspace was written"
        );
    }
    mds.delete_collection(&DeleteParams::default(), &Default::default())
        .await
        .unwrap();
    for name in ["taken", "unowned"] {
        wait_deleted(&mds, name, WAIT).await;
        assert!(
            ws.get_opt(name).await.unwrap().is_some(),
            "{name} was deleted with the deployment"
        );
    }
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}

/// The fingerprint of the shipped v1beta1 Workspace schema (provider-kaito/src/schema.rs).
fn airunway_provider_kaito_fingerprint() -> &'static str {
    "c122e829f70c5bc8"
}

#[tokio::test]
async fn deletion_does_not_hang_when_the_kaito_crd_is_gone() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("kaito-crd-gone").await;
    let (core, provider) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    mds.create(
        &PostParams::default(),
        &deployment("orphan", cpu_llamacpp()),
    )
    .await
    .unwrap();
    wait_for(&mds, "orphan", WAIT, "Deploying", |md| {
        md.phase() == Some(Phase::Deploying)
    })
    .await;

    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    crds.delete("workspaces.kaito.sh", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&crds, "workspaces.kaito.sh", Duration::from_secs(60)).await;
    // The provider notices: not ready, with the reason.
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    let ipc = wait_for(&ipcs, "kaito", WAIT, "ready=false", |ipc| {
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
        Some("CRD workspaces.kaito.sh is not installed: install KAITO in the cluster")
    );

    let started = std::time::Instant::now();
    mds.delete("orphan", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&mds, "orphan", Duration::from_secs(15)).await;
    eprintln!(
        "deleted without the KAITO CRD in {:.1}s (finalizer timeout is 20s)",
        started.elapsed().as_secs_f64()
    );

    // A new named deployment reports the missing CRD.
    mds.create(
        &PostParams::default(),
        &deployment(
            "later",
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "image": "i",
        "provider": {"name": "kaito"}}),
        ),
    )
    .await
    .unwrap();
    let md = wait_for(&mds, "later", WAIT, "the missing-CRD message", |md| {
        md.status
            .as_ref()
            .and_then(|s| s.message.as_deref())
            .is_some_and(|m| m.starts_with(&messages::provider_crd_not_installed("kaito")))
    })
    .await;
    assert_eq!(md.phase(), Some(Phase::Pending));

    // Put the CRD back for the other tests of this binary.
    let files: Vec<_> = crd_files()
        .unwrap()
        .into_iter()
        .filter(|f| f.ends_with("kaito.sh_workspaces.yaml"))
        .collect();
    install_crds(&env.client, &files).await.unwrap();
    eventually("the provider to be ready again", WAIT, || async {
        let ipc = ipcs.get("kaito").await.map_err(|e| e.to_string())?;
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

/// The KAITO simulator does what KAITO v0.10 does with our Workspaces: a StatefulSet for a
/// preset (every GPU of a node, on the GPU nodes the label selector picks) and for a template
/// (llama.cpp on CPU, from its pod template), each with its Service; kube-scheduler places their Pods, KWOK
/// runs them, and the Workspace status follows their real readiness, so both deployments reach
/// Running. The test writes no status.
#[tokio::test]
async fn kaito_workloads_run_on_simulated_nodes_and_the_deployments_reach_running() {
    use airunway_e2e::control_plane::workloads::{CPU_NODES, GPU_NODES};
    use k8s_openapi::api::apps::v1::StatefulSet;
    use k8s_openapi::api::core::v1::{Endpoints, Pod};
    use kube::api::ListParams;

    let _lock = cluster_lock().await;
    let env = TestEnv::new("kaito-simulated-workloads").await;
    let (core, provider) = start(&env).await;
    let simulator = tokio::spawn(kaito::run(env.client.clone(), Some(env.namespace.clone())));
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let started = std::time::Instant::now();
    mds.create(
        &PostParams::default(),
        &deployment(
            "phi",
            json!({"model": {"id": "microsoft/Phi-4-mini-instruct"}, "engine": {"type": "vllm"},
        "resources": {"gpu": {"count": 1}}, "provider": {"name": "kaito"}}),
        ),
    )
    .await
    .unwrap();
    mds.create(
        &PostParams::default(),
        &deployment("gemma-cpu", cpu_llamacpp()),
    )
    .await
    .unwrap();
    for name in ["phi", "gemma-cpu"] {
        wait_for(&mds, name, Duration::from_secs(60), "Running", |md| {
            md.phase() == Some(Phase::Running)
        })
        .await;
    }
    eprintln!(
        "both KAITO deployments Running {:.1}s after creation",
        started.elapsed().as_secs_f64()
    );

    let ws = workspaces(&env);
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    // The preset: a StatefulSet owned by the Workspace, its Pod on a GPU node with all its GPUs.
    let statefulsets: Api<StatefulSet> = Api::namespaced(env.client.clone(), &env.namespace);
    let sts = statefulsets.get("phi").await.unwrap();
    assert_eq!(sts.owner_references()[0].kind, "Workspace");
    assert_eq!(sts.status.clone().unwrap().ready_replicas, Some(1));
    let workspace = ws.get("phi").await.unwrap();
    assert_eq!(workspace.data["status"]["state"], "Ready");
    let worker_nodes: Vec<String> =
        serde_json::from_value(workspace.data["status"]["workerNodes"].clone()).unwrap();
    assert_eq!(worker_nodes, GPU_NODES.map(String::from).to_vec());
    let phi_pods = pods
        .list(&ListParams::default().labels("kaito.sh/workspace=phi"))
        .await
        .unwrap()
        .items;
    assert_eq!(phi_pods.len(), 1);
    let pod = &phi_pods[0];
    assert!(GPU_NODES.contains(&pod.spec.clone().unwrap().node_name.unwrap().as_str()));
    assert_eq!(
        pod.status.clone().unwrap().phase.as_deref(),
        Some("Running")
    );
    let limits = pod.spec.clone().unwrap().containers[0]
        .resources
        .clone()
        .unwrap()
        .limits
        .unwrap();
    assert_eq!(limits["nvidia.com/gpu"].0, "8");

    // The template: a StatefulSet from the Workspace's pod template, on a Linux node.
    let template_sts = statefulsets.get("gemma-cpu").await.unwrap();
    assert_eq!(template_sts.owner_references()[0].kind, "Workspace");
    let container = &template_sts
        .spec
        .clone()
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers[0];
    assert_eq!(
        container.image.as_deref(),
        Some("ghcr.io/sozercan/llama-cpp-runner:latest")
    );
    let gemma_pods = pods
        .list(&ListParams::default().labels("kaito.sh/workspace=gemma-cpu"))
        .await
        .unwrap()
        .items;
    assert_eq!(gemma_pods.len(), 1);
    let node = gemma_pods[0].spec.clone().unwrap().node_name.unwrap();
    assert!(CPU_NODES.contains(&node.as_str()) || GPU_NODES.contains(&node.as_str()));
    // The Service the deployment's endpoint names has the Pod behind it.
    let md = mds.get("gemma-cpu").await.unwrap();
    let endpoint = md.status.clone().unwrap().endpoint.unwrap();
    assert_eq!(endpoint.service.as_deref(), Some("gemma-cpu"));
    let endpoints: Api<Endpoints> = Api::namespaced(env.client.clone(), &env.namespace);
    eventually("the Service's Endpoints", WAIT, || async {
        let e = endpoints
            .get_opt("gemma-cpu")
            .await
            .map_err(|e| e.to_string())?;
        let addresses = e
            .and_then(|e| e.subsets)
            .unwrap_or_default()
            .into_iter()
            .flat_map(|s| s.addresses.unwrap_or_default())
            .count();
        if addresses == 1 {
            Ok(())
        } else {
            Err(format!("{addresses} addresses"))
        }
    })
    .await;

    // Deleting the deployments deletes the Workspaces, and the garbage collector their
    // workloads.
    mds.delete("phi", &DeleteParams::default()).await.unwrap();
    mds.delete("gemma-cpu", &DeleteParams::default())
        .await
        .unwrap();
    for name in ["phi", "gemma-cpu"] {
        wait_deleted(&mds, name, Duration::from_secs(60)).await;
        wait_deleted(&ws, name, Duration::from_secs(60)).await;
    }
    wait_deleted(&statefulsets, "phi", Duration::from_secs(60)).await;
    wait_deleted(&statefulsets, "gemma-cpu", Duration::from_secs(60)).await;
    simulator.abort();
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}

/// Stale upstream status (spec §13.4), with KAITO's status played by the test: the provider
/// runs with `--stale-status-threshold=5s`. A Running deployment's context length changes (the
/// Workspace's pod template changes, generation 2) while "KAITO" writes no status: `StaleStatus=True`
/// appears once the threshold passes (no other change wakes the reconcile: it looks again when
/// the object would turn stale), naming the Workspace and since when (the provider's apply).
/// Then "KAITO" reports on generation 2: `StaleStatus=False`, Running, and the deployment is
/// not written again in a quiet window longer than the threshold.
#[tokio::test]
async fn stale_upstream_status_is_flagged_with_since_and_cleared_when_kaito_reports_again() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("kaito-stale-status").await;
    let (core, provider) = start_with(&env, &["--stale-status-threshold=5s"]).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let ws = workspaces(&env);
    mds.create(&PostParams::default(), &deployment("gemma", cpu_llamacpp()))
        .await
        .unwrap();
    wait_for(&ws, "gemma", WAIT, "the Workspace", |_| true).await;
    // KAITO's status for a generation, as the real samples carry it in every condition.
    let ready_for = |generation: i64| {
        let mut status = paths::upstream_status_sample("workspace-ready.yaml").unwrap();
        for condition in status["conditions"].as_array_mut().unwrap() {
            condition["observedGeneration"] = json!(generation);
        }
        json!({"status": status})
    };
    ws.patch_status(
        "gemma",
        &PatchParams::default(),
        &Patch::Merge(ready_for(1)),
    )
    .await
    .unwrap();
    wait_for(&mds, "gemma", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    // Kept past the threshold: a converged Workspace is not stale, and a deployment that never
    // was stale shows no StaleStatus condition.
    tokio::time::sleep(Duration::from_secs(7)).await;
    let md = mds.get("gemma").await.unwrap();
    assert_eq!(md.phase(), Some(Phase::Running));
    assert!(
        md.condition(condition_types::STALE_STATUS).is_none(),
        "never stale: no condition"
    );

    // Changed: the provider applies the new template (generation 2); "KAITO" stays silent.
    // (Not the replicas: KAITO keeps resource.count as created, see
    // `kubectl_scale_is_held_naming_the_count_kaito_keeps`.)
    let scaled = std::time::Instant::now();
    mds.patch(
        "gemma",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"engine": {"contextLength": 4096}}})),
    )
    .await
    .unwrap();
    let workspace = wait_for(&ws, "gemma", WAIT, "--ctx-size 4096", |w| {
        w.data["inference"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .is_some_and(|a| {
                a.iter()
                    .any(|arg| arg.as_str().is_some_and(|t| t.contains("4096")))
            })
    })
    .await;
    let generation = workspace.metadata.generation.unwrap();
    assert!(generation >= 2, "the apply raised the generation");
    let applied = workspace
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .find(|e| e.manager.as_deref() == Some("kaito-provider") && e.subresource.is_none())
        .and_then(|e| e.time.clone())
        .unwrap()
        .0;
    let (md, stale) = wait_for_condition(
        &mds,
        "gemma",
        WAIT,
        condition_types::STALE_STATUS,
        ConditionStatus::True,
    )
    .await;
    let flagged_after = scaled.elapsed();
    eprintln!(
        "StaleStatus=True {:.1}s after the change (threshold 5s)",
        flagged_after.as_secs_f64()
    );
    assert!(
        flagged_after >= Duration::from_secs(3),
        "not before the threshold: {flagged_after:?}"
    );
    assert_eq!(stale.reason.as_deref(), Some("UpstreamStatusStale"));
    assert_eq!(
        stale.message.as_deref(),
        Some(
            format!(
                "The upstream operator has not reported status for Workspace gemma (generation {generation}) since {applied} (threshold 5s)"
            )
            .as_str()
        )
    );
    assert_eq!(stale.observed_generation, md.metadata.generation);
    // Not ready for the new generation, because the operator does not act: Ready says so in
    // the shared vocabulary, naming the operator, the Workspace and since when; the previous
    // version keeps serving.
    assert_eq!(md.phase(), Some(Phase::Running));
    assert_not_ready(
        &md,
        Some(NotReadyReason::UpstreamOperatorMissing),
        "Workspace",
        "stale",
    );
    assert_eq!(
        md.status
            .as_ref()
            .unwrap()
            .not_ready
            .as_ref()
            .unwrap()
            .message,
        format!(
            "The kaito.sh operator has not reported on Workspace gemma (generation {generation}) since {applied}, more than 5s: is it installed and running?"
        )
    );

    // "KAITO" reports on the new generation: the condition turns False, the phase is Running.
    ws.patch_status(
        "gemma",
        &PatchParams::default(),
        &Patch::Merge(ready_for(generation)),
    )
    .await
    .unwrap();
    let (md, current) = wait_for_condition(
        &mds,
        "gemma",
        WAIT,
        condition_types::STALE_STATUS,
        ConditionStatus::False,
    )
    .await;
    assert_eq!(current.reason.as_deref(), Some("UpstreamStatusCurrent"));
    assert_eq!(md.phase(), Some(Phase::Running));
    assert_not_ready(&md, None, "Workspace", "reported again");
    assert_eq!(
        md.status.as_ref().unwrap().replicas.as_ref().unwrap().ready,
        Some(1)
    );
    // Quiet: nothing rewrites the deployment over a window longer than the threshold.
    let settled = wait_for(&mds, "gemma", WAIT, "settled", |md| {
        md.condition(condition_types::STALE_STATUS)
            .is_some_and(|c| c.status == ConditionStatus::False)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(8)).await;
    let later = mds.get("gemma").await.unwrap();
    assert_eq!(
        later.metadata.resource_version, settled.metadata.resource_version,
        "no status write in 8 s after the condition cleared"
    );

    mds.delete("gemma", &DeleteParams::default()).await.unwrap();
    wait_deleted(&mds, "gemma", WAIT).await;
    wait_deleted(&ws, "gemma", WAIT).await;
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}

/// The pods of StatefulSet `name`, found by owner (not by the labels the selector uses).
fn pods_of_statefulset(name: &str, pods: &[k8s_openapi::api::core::v1::Pod]) -> Vec<String> {
    pods.iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            p.owner_references()
                .iter()
                .any(|o| o.kind == "StatefulSet" && o.name == name)
        })
        .map(|p| p.name_any())
        .collect()
}

/// Scaling on KAITO, with the KAITO simulator: `status.selector` selects exactly the pod of the
/// Workspace's StatefulSet (not the other deployment's) and `status.workload` names the
/// Workspace, the StatefulSet, the container and port 5000. `kubectl scale --replicas=3`:
/// KAITO keeps `resource.count` as created (its webhook refuses a change), so the provider
/// holds the deployment with a condition naming KAITO and the count the Workspace keeps; the
/// Workspace (same uid, count 1, same generation) and its StatefulSet are untouched and the
/// spec keeps 3. `--replicas=0` is refused as KAITO's zero; back to 1, it runs again.
#[tokio::test]
async fn kubectl_scale_is_held_naming_the_count_kaito_keeps() {
    use airunway_e2e::scale::{kubectl_scale, wait_selector_selects};
    use k8s_openapi::api::apps::v1::StatefulSet;
    use k8s_openapi::api::core::v1::Pod;

    let _lock = cluster_lock().await;
    let env = TestEnv::new("kaito-scale").await;
    let (core, provider) = start(&env).await;
    let simulator = tokio::spawn(kaito::run(env.client.clone(), Some(env.namespace.clone())));
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let ws = workspaces(&env);
    let statefulsets: Api<StatefulSet> = Api::namespaced(env.client.clone(), &env.namespace);
    for name in ["gemma", "other"] {
        mds.create(&PostParams::default(), &deployment(name, cpu_llamacpp()))
            .await
            .unwrap();
    }
    for name in ["gemma", "other"] {
        wait_for(&mds, name, Duration::from_secs(60), "Running", |md| {
            md.phase() == Some(Phase::Running)
        })
        .await;
    }
    let selector = wait_selector_selects(
        &env,
        "gemma",
        |all: &[Pod]| pods_of_statefulset("gemma", all),
        WAIT,
    )
    .await;
    assert_eq!(selector, "kaito.sh/workspace=gemma");
    let workspace = ws.get("gemma").await.unwrap();
    let workspace_uid = workspace.metadata.uid.clone().unwrap();
    let generation = workspace.metadata.generation;
    let sts_uid = statefulsets.get("gemma").await.unwrap().metadata.uid;
    let workload = mds
        .get("gemma")
        .await
        .unwrap()
        .status
        .unwrap()
        .workload
        .unwrap();
    let upstream = workload.upstream.unwrap();
    assert_eq!(
        (upstream.kind.as_str(), upstream.uid.as_deref()),
        ("Workspace", Some(workspace_uid.as_str()))
    );
    let workloads = workload.workloads.unwrap();
    assert_eq!(
        (workloads[0].kind.as_str(), workloads[0].name.as_str()),
        ("StatefulSet", "gemma")
    );
    assert_eq!(
        (workload.container.as_deref(), workload.port),
        (Some("model"), Some(5000))
    );

    // 3: held, naming KAITO and the count the Workspace keeps; nothing applied.
    kubectl_scale(&env, "gemma", 3).await;
    let (md, held) = wait_for_condition(
        &mds,
        "gemma",
        WAIT,
        condition_types::RESOURCE_CREATED,
        ConditionStatus::False,
    )
    .await;
    let message = held.message.clone().unwrap_or_default();
    assert_eq!(held.reason.as_deref(), Some("IncompatibleConfiguration"));
    assert!(
        message.starts_with("KAITO cannot change the replicas of a Workspace in place")
            && message.contains("Workspace gemma keeps 1; set scaling.replicas back to 1"),
        "{message}"
    );
    assert_eq!(md.phase(), Some(Phase::Failed));
    assert_eq!(md.spec.scaling.as_ref().unwrap().replicas, Some(3));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let workspace = ws.get("gemma").await.unwrap();
    assert_eq!(
        workspace.metadata.uid.as_deref(),
        Some(workspace_uid.as_str())
    );
    assert_eq!(workspace.data["resource"]["count"], 1);
    assert_eq!(workspace.metadata.generation, generation);
    let sts = statefulsets.get("gemma").await.unwrap();
    assert_eq!(
        (sts.metadata.uid, sts.spec.unwrap().replicas),
        (sts_uid, Some(1))
    );

    // 0: KAITO's zero refusal.
    kubectl_scale(&env, "gemma", 0).await;
    let (_, refused) = wait_for_condition(
        &mds,
        "gemma",
        WAIT,
        condition_types::PROVIDER_COMPATIBLE,
        ConditionStatus::False,
    )
    .await;
    assert!(
        refused
            .message
            .as_deref()
            .is_some_and(|m| m.starts_with("KAITO cannot scale a Workspace to zero")),
        "{refused:?}"
    );
    assert_eq!(ws.get("gemma").await.unwrap().data["resource"]["count"], 1);

    // Back to 1: running again on the same Workspace.
    kubectl_scale(&env, "gemma", 1).await;
    wait_for(&mds, "gemma", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    wait_selector_selects(
        &env,
        "gemma",
        |all: &[Pod]| pods_of_statefulset("gemma", all),
        WAIT,
    )
    .await;
    assert_eq!(
        ws.get("gemma").await.unwrap().metadata.uid.as_deref(),
        Some(workspace_uid.as_str())
    );

    for name in ["gemma", "other"] {
        mds.delete(name, &DeleteParams::default()).await.unwrap();
    }
    for name in ["gemma", "other"] {
        wait_deleted(&mds, name, Duration::from_secs(60)).await;
        wait_deleted(&ws, name, Duration::from_secs(60)).await;
    }
    simulator.abort();
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
