//! What GitOps tools read from a ModelDeployment, on the real control plane with the real core
//! and the real KAITO and Dynamo providers (their ServiceAccounts, shipped RBAC; the upstream
//! operators' status comes from the samples KAITO v0.10 and Dynamo write, as in `kaito.rs` and
//! `dynamo.rs`): deployments are driven to Pending (waiting for a provider), Stalled (no provider
//! fits), Deploying, Running, Failed (incompatible; and the upstream failed), a new generation
//! nobody acted on yet (reconcile paused) and back to Running; then on the very objects the API
//! server returns:
//!
//! - the Argo CD health check `deploy/gitops/argocd/health.lua` (taken from the argocd-cm snippet,
//!   checked equal to the file) runs as Argo CD runs it: in gopher-lua, the Lua implementation
//!   Argo CD embeds, at the version Argo CD pins, with only the libraries Argo CD opens for
//!   argocd-cm health scripts (`e2e/go/argocd-health`, built from its module by its `build.sh`
//!   and cached, or `$AIRUNWAY_ARGOCD_HEALTH_BIN`);
//! - kstatus is computed by the real `sigs.k8s.io/cli-utils` package (`e2e/go/kstatus`, built
//!   from its module by its `build.sh` and cached, or `$AIRUNWAY_KSTATUS_BIN`);
//! - `kubectl wait --for=condition=Ready md/<name>` (the README's line) runs with a real
//!   kubectl (`e2e/go/kubectl`, built from the k8s.io/kubectl module of the Kubernetes version
//!   the harness runs and cached, or `$AIRUNWAY_KUBECTL_BIN`): met at Running, not met while
//!   Deploying, nor for a generation nobody acted on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use airunway_api::constants::{condition_types, reasons};
use airunway_api::v1alpha1::{ConditionStatus, ModelDeployment, NotReadyReason, Phase};
use airunway_e2e::sandbox::kaito;
use airunway_e2e::scale::{go_program, kstatus_binary, kubectl_binary, run_json};
use airunway_e2e::stack::{self, FAST_HEALTH};
use airunway_e2e::wait::{wait_for, wait_for_condition};
use airunway_e2e::{TestEnv, cluster_lock, paths};
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);

fn deployment(name: &str, spec: Value) -> ModelDeployment {
    serde_json::from_value(
        json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": name}, "spec": spec}),
    )
    .unwrap()
}

fn cpu_llamacpp() -> Value {
    json!({"model": {"id": "google/gemma-3-1b-it-qat-q8_0-gguf"},
           "engine": {"type": "llamacpp", "args": {"model-file": "gemma-3-1b-it-q8_0.gguf"}},
           "resources": {"gpu": {"count": 0}, "memory": "16Gi", "cpu": "8"},
           "image": "ghcr.io/sozercan/llama-cpp-runner:latest"})
}

fn upstream(env: &TestEnv, group: &str, version: &str, kind: &str) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: format!("{}s", kind.to_lowercase()),
    };
    Api::namespaced_with(env.client.clone(), &env.namespace, &resource)
}

/// The deployment exactly as the API server serves it (every field, as a GitOps tool reads it).
async fn served(env: &TestEnv, name: &str) -> Value {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("airunway.ai", "v1alpha1", "ModelDeployment"),
        "modeldeployments",
    );
    let api: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), &env.namespace, &resource);
    serde_json::to_value(api.get(name).await.unwrap()).unwrap()
}

/// The health check as Argo CD gets it: the argocd-cm key, checked equal to `health.lua`.
fn argocd_health_script() -> String {
    let root = paths::workspace_root().join("deploy/gitops/argocd");
    let file = std::fs::read_to_string(root.join("health.lua")).unwrap();
    let cm: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(root.join("argocd-cm.yaml")).unwrap())
            .unwrap();
    let embedded = cm["data"]["resource.customizations.health.airunway.ai_ModelDeployment"]
        .as_str()
        .expect(
            "argocd-cm.yaml carries resource.customizations.health.airunway.ai_ModelDeployment",
        );
    assert_eq!(
        embedded, file,
        "deploy/gitops/argocd/argocd-cm.yaml must carry health.lua verbatim"
    );
    file
}

/// The Argo CD health runner (`e2e/go/argocd-health`: gopher-lua, the Lua Argo CD embeds, with
/// the libraries Argo CD opens for argocd-cm health scripts), built from its module by its
/// `build.sh` and cached, or `$AIRUNWAY_ARGOCD_HEALTH_BIN`.
fn argocd_health_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("AIRUNWAY_ARGOCD_HEALTH_BIN") {
        return PathBuf::from(path);
    }
    go_program("e2e/go/argocd-health/build.sh", "argocd-health")
}

/// Runs the Argo CD health check on each object as Argo CD runs it: (status, message).
fn argocd_health(binary: &Path, objects: &[Value]) -> Vec<(String, String)> {
    let script = argocd_health_script();
    let dir = std::env::temp_dir().join(format!("airunway-gitops-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("health.lua");
    std::fs::write(&file, script).unwrap();
    let results = run_json(binary, &[file.as_os_str()], objects);
    assert_eq!(results.len(), objects.len());
    results
        .iter()
        .map(|r| {
            (
                r["status"].as_str().unwrap().to_string(),
                r["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// kstatus (sigs.k8s.io/cli-utils) of each object: (status, message).
fn kstatus(binary: &Path, objects: &[Value]) -> Vec<(String, String)> {
    run_json(binary, &[], objects)
        .iter()
        .map(|r| {
            (
                r["status"].as_str().unwrap().to_string(),
                r["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Starts `kubectl wait --for=condition=Ready md/<name> --timeout=<timeout>` against the test
/// control plane; resolves to (success, stdout + stderr, when it ended).
fn kubectl_wait_ready(
    kubectl: &PathBuf,
    env: &TestEnv,
    name: &str,
    timeout: Duration,
) -> tokio::task::JoinHandle<(bool, String, Instant)> {
    let mut command = tokio::process::Command::new(kubectl);
    command
        .arg("--kubeconfig")
        .arg(&env.control_plane.kubeconfig)
        .args([
            "--namespace",
            &env.namespace,
            "wait",
            "--for=condition=Ready",
        ])
        .arg(format!("md/{name}"))
        .arg(format!("--timeout={}s", timeout.as_secs()))
        .kill_on_drop(true);
    tokio::spawn(async move {
        let output = command.output().await.unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (
            output.status.success(),
            text.trim().to_string(),
            Instant::now(),
        )
    })
}

fn is(md: &ModelDeployment, type_: &str) -> Option<ConditionStatus> {
    md.condition(type_).map(|c| c.status)
}

#[tokio::test]
async fn argo_cd_health_and_kstatus_for_every_phase() {
    let _lock = cluster_lock().await;
    let started = Instant::now();
    let env = TestEnv::new("gitops").await;
    // Built (or found in the cache) before anything runs, so its time is not the deployments'.
    let kstatus_bin = kstatus_binary();
    let argocd_health_bin = argocd_health_binary();
    let kubectl = kubectl_binary();
    airunway_e2e::providers::delete_all(&env.client).await;
    kaito::install_controller_stand_in(&env.client)
        .await
        .unwrap();
    let identity = stack::service_account_identity(
        &env,
        "deploy/providers/kaito/rbac.yaml",
        "airunway-provider-kaito",
    )
    .await;
    let core = stack::start_core(&env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let provider = stack::start_provider(
        &env,
        "airunway-provider-kaito",
        &identity,
        &["--heartbeat-interval=1s"],
        "kaito-0",
    )
    .await;
    let dynamo_identity = stack::service_account_identity(
        &env,
        "deploy/providers/dynamo/rbac.yaml",
        "airunway-provider-dynamo",
    )
    .await;
    let dynamo = stack::start_provider(
        &env,
        "airunway-provider-dynamo",
        &dynamo_identity,
        &["--heartbeat-interval=1s"],
        "dynamo-0",
    )
    .await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let ws = upstream(&env, "kaito.sh", "v1beta1", "Workspace");
    let dgds = upstream(&env, "nvidia.com", "v1beta1", "DynamoGraphDeployment");
    let create = |name: &'static str, spec: Value| {
        let mds = mds.clone();
        async move {
            mds.create(&PostParams::default(), &deployment(name, spec))
                .await
                .unwrap();
        }
    };

    // Pending, waiting: it names a provider that is not registered (it would proceed by itself
    // once it registers).
    create(
        "waiting",
        json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"},
            "resources": {"gpu": {"count": 1}}, "provider": {"name": "llmd"}}),
    )
    .await;
    // Failed upstream: Dynamo reports its DynamoGraphDeployment failed.
    create(
        "upstream-failed",
        json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"},
            "resources": {"gpu": {"count": 1}}, "provider": {"name": "dynamo"}}),
    )
    .await;
    // Pending, stalled: no registered provider serves disaggregated TensorRT-LLM (Dynamo serves
    // it aggregated only, KAITO not at all).
    create(
        "nofit",
        json!({"model": {"id": "a/b"}, "engine": {"type": "trtllm"},
            "serving": {"mode": "disaggregated"},
            "scaling": {"prefill": {"replicas": 1, "gpu": {"count": 1}},
                        "decode": {"replicas": 1, "gpu": {"count": 1}}}}),
    )
    .await;
    // Failed: KAITO is named but cannot serve SGLang (the core's check of its registered
    // capabilities at reconcile, as in the Go AI Runway; issue 32, V1).
    create(
        "incompatible",
        json!({"model": {"id": "a/b"}, "engine": {"type": "sglang"},
            "resources": {"gpu": {"count": 1}}, "provider": {"name": "kaito"}}),
    )
    .await;
    create("deploying", cpu_llamacpp()).await;
    create("running", cpu_llamacpp()).await;

    // `kubectl wait --for=condition=Ready md/running`, started before it is Running.
    let waiter = kubectl_wait_ready(&kubectl, &env, "running", Duration::from_secs(60));

    let (waiting, _) = wait_for_condition(
        &mds,
        "waiting",
        WAIT,
        condition_types::RECONCILING,
        ConditionStatus::True,
    )
    .await;
    assert_eq!(waiting.phase(), Some(Phase::Pending));
    assert_eq!(
        waiting
            .condition(condition_types::RECONCILING)
            .unwrap()
            .reason
            .as_deref(),
        Some(reasons::PROVIDER_NOT_REGISTERED)
    );
    let (nofit, stalled) = wait_for_condition(
        &mds,
        "nofit",
        WAIT,
        condition_types::STALLED,
        ConditionStatus::True,
    )
    .await;
    assert_eq!(nofit.phase(), Some(Phase::Pending));
    assert_eq!(stalled.reason.as_deref(), Some(reasons::SELECTION_FAILED));
    let (incompatible, stalled) = wait_for_condition(
        &mds,
        "incompatible",
        WAIT,
        condition_types::STALLED,
        ConditionStatus::True,
    )
    .await;
    assert_eq!(incompatible.phase(), Some(Phase::Failed));
    assert_eq!(stalled.reason.as_deref(), Some(reasons::VALIDATION_FAILED));

    // The upstream operators' own statuses on the objects the providers created.
    for (api, name, sample) in [
        (&ws, "deploying", "workspace-pending.yaml"),
        (&ws, "running", "workspace-ready.yaml"),
        (&dgds, "upstream-failed", "dgd-v1beta1-failed.yaml"),
    ] {
        wait_for(api, name, WAIT, "the upstream object", |_| true).await;
        api.patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": paths::upstream_status_sample(sample).unwrap()})),
        )
        .await
        .unwrap();
    }
    let deploying = wait_for(&mds, "deploying", WAIT, "Deploying", |md| {
        md.phase() == Some(Phase::Deploying)
            && md.status.as_ref().and_then(|s| s.message.as_deref())
                == Some("Inference workload is not ready")
    })
    .await;
    let running = wait_for(&mds, "running", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    let upstream_failed = wait_for(&mds, "upstream-failed", WAIT, "Failed", |md| {
        md.phase() == Some(Phase::Failed)
    })
    .await;
    assert_eq!(
        upstream_failed
            .condition(condition_types::STALLED)
            .unwrap()
            .reason
            .as_deref(),
        Some(NotReadyReason::UpstreamReconcileError.as_str()),
        "Dynamo's reconcile error, in the shared vocabulary"
    );
    let (met, output, met_at) = tokio::time::timeout(WAIT, waiter).await.unwrap().unwrap();
    assert!(met, "kubectl wait md/running: {output}");
    assert_eq!(output, "modeldeployment.airunway.ai/running condition met");
    eprintln!(
        "kubectl wait --for=condition=Ready md/running: {output:?} {:.1}s after the start",
        met_at.duration_since(started).as_secs_f64()
    );
    let (met, output, _) = kubectl_wait_ready(&kubectl, &env, "deploying", Duration::from_secs(2))
        .await
        .unwrap();
    assert!(!met, "kubectl wait md/deploying must time out: {output}");
    assert!(output.contains("timed out"), "{output}");

    // The conditions themselves: Ready only while Running; Reconciling xor Stalled otherwise.
    let table = [
        (
            &waiting,
            None,
            Some(ConditionStatus::True),
            Some(ConditionStatus::False),
        ),
        (
            &nofit,
            None,
            Some(ConditionStatus::False),
            Some(ConditionStatus::True),
        ),
        // Held by the core's validation (no provider acted, as for `nofit`): no `Ready`.
        (
            &incompatible,
            None,
            Some(ConditionStatus::False),
            Some(ConditionStatus::True),
        ),
        (
            &deploying,
            Some(ConditionStatus::False),
            Some(ConditionStatus::True),
            Some(ConditionStatus::False),
        ),
        (
            &running,
            Some(ConditionStatus::True),
            Some(ConditionStatus::False),
            Some(ConditionStatus::False),
        ),
        (
            &upstream_failed,
            Some(ConditionStatus::False),
            Some(ConditionStatus::False),
            Some(ConditionStatus::True),
        ),
    ];
    for (md, ready, reconciling, stalled) in table {
        let name = md.metadata.name.clone().unwrap();
        assert_eq!(is(md, condition_types::READY), ready, "{name} Ready");
        assert_eq!(
            is(md, condition_types::RECONCILING),
            reconciling,
            "{name} Reconciling"
        );
        assert_eq!(is(md, condition_types::STALLED), stalled, "{name} Stalled");
        assert_eq!(
            md.status.as_ref().unwrap().observed_generation,
            md.metadata.generation,
            "{name}: acted on"
        );
    }

    // A new generation nobody has acted on: reconcile paused, then the spec changed.
    mds.patch(
        "running",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"metadata": {"annotations": {"airunway.ai/reconcile-paused": "true"}}}),
        ),
    )
    .await
    .unwrap();
    let paused = mds
        .patch(
            "running",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"resources": {"memory": "12Gi"}}})),
        )
        .await
        .unwrap();
    assert_eq!(paused.metadata.generation, Some(2));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let behind = served(&env, "running").await;
    assert_eq!(behind["status"]["observedGeneration"], 1, "nobody wrote");
    // Ready is still True, but for generation 1: kubectl wait holds out for generation 2.
    let (met, output, _) = kubectl_wait_ready(&kubectl, &env, "running", Duration::from_secs(2))
        .await
        .unwrap();
    assert!(
        !met,
        "kubectl wait must not be met for a generation nobody acted on: {output}"
    );

    // What the tools say about each.
    let mut names = vec!["waiting", "nofit", "deploying", "running-at-generation-1"];
    let mut objects = Vec::new();
    for name in ["waiting", "nofit", "deploying"] {
        objects.push(served(&env, name).await);
    }
    let mut running_gen1 = serde_json::to_value(&running).unwrap();
    running_gen1["apiVersion"] = json!("airunway.ai/v1alpha1");
    running_gen1["kind"] = json!("ModelDeployment");
    objects.push(running_gen1);
    names.push("incompatible");
    objects.push(served(&env, "incompatible").await);
    names.push("upstream-failed");
    objects.push(served(&env, "upstream-failed").await);
    names.push("paused-generation-2");
    objects.push(behind.clone());
    // A new generation nobody acted on, without the pause annotation (as right after a sync,
    // before the provider's next write): the same object with the annotation dropped.
    names.push("generation-2-not-acted-on");
    let mut unpaused = behind.clone();
    unpaused["metadata"]["annotations"]
        .as_object_mut()
        .unwrap()
        .remove("airunway.ai/reconcile-paused");
    objects.push(unpaused);

    // Resume: the provider applies generation 2 and the deployment is Running again.
    mds.patch(
        "running",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"airunway.ai/reconcile-paused": null}}})),
    )
    .await
    .unwrap();
    // The provider applies the Workspace's new generation; until KAITO (played here) reports on
    // it, the deployment keeps serving but is not Ready for generation 2 (issue 35: Updating).
    let workspace = wait_for(&ws, "running", WAIT, "Workspace generation 2", |w| {
        w.metadata.generation.is_some_and(|g| g >= 2)
    })
    .await;
    let updating = wait_for(&mds, "running", WAIT, "Updating", |md| {
        md.status.as_ref().is_some_and(|s| {
            s.observed_generation == Some(2)
                && s.not_ready
                    .as_ref()
                    .is_some_and(|n| n.reason == NotReadyReason::Updating)
        })
    })
    .await;
    assert_eq!(updating.phase(), Some(Phase::Running));
    assert_eq!(
        is(&updating, condition_types::READY),
        Some(ConditionStatus::False)
    );
    let mut reported = paths::upstream_status_sample("workspace-ready.yaml").unwrap();
    for condition in reported["conditions"].as_array_mut().unwrap() {
        condition["observedGeneration"] = json!(workspace.metadata.generation);
    }
    ws.patch_status(
        "running",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": reported})),
    )
    .await
    .unwrap();
    let resumed = kubectl_wait_ready(&kubectl, &env, "running", Duration::from_secs(60));
    let (met, output, _) = tokio::time::timeout(WAIT, resumed).await.unwrap().unwrap();
    assert!(met, "kubectl wait md/running at generation 2: {output}");
    let again = wait_for(&mds, "running", WAIT, "generation 2 acted on", |md| {
        md.status.as_ref().and_then(|s| s.observed_generation) == Some(2)
            && md.phase() == Some(Phase::Running)
    })
    .await;
    assert_eq!(
        is(&again, condition_types::READY),
        Some(ConditionStatus::True)
    );
    names.push("running-at-generation-2");
    objects.push(served(&env, "running").await);
    // Running but Degraded (issue 34): the served object with the provider's Degraded=True as
    // the SDK writes it when one of two replicas is not ready (the provider suites show the
    // real transition; kstatus does not read Degraded, Argo CD does).
    names.push("running-degraded");
    let mut degraded = served(&env, "running").await;
    degraded["status"]["conditions"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": condition_types::DEGRADED, "status": "True",
            "reason": reasons::REPLICAS_UNAVAILABLE,
            "message": "1 of 2 replicas ready: serving at reduced capacity",
            "lastTransitionTime": "2026-11-26T00:00:00Z", "observedGeneration": 2}));
    objects.push(degraded);
    // Running at zero replicas, as the SDK writes it (Ready=True ScaledToZero): as its spec
    // asks, so Healthy and Current.
    names.push("scaled-to-zero");
    let mut zero = served(&env, "running").await;
    for condition in zero["status"]["conditions"].as_array_mut().unwrap() {
        if condition["type"] == condition_types::READY {
            condition["status"] = json!("True");
            condition["reason"] = json!(reasons::SCALED_TO_ZERO);
            condition["message"] = json!(
                "Scaled to zero (spec.scaling.replicas is 0): no replica serves until it is scaled up"
            );
        }
    }
    objects.push(zero);

    let health = argocd_health(&argocd_health_bin, &objects);
    let computed = kstatus(&kstatus_bin, &objects);
    let expected = [
        ("waiting", "Progressing", "InProgress"),
        ("nofit", "Degraded", "Failed"),
        ("deploying", "Progressing", "InProgress"),
        ("running-at-generation-1", "Healthy", "Current"),
        ("incompatible", "Degraded", "Failed"),
        ("upstream-failed", "Degraded", "Failed"),
        ("paused-generation-2", "Suspended", "InProgress"),
        ("generation-2-not-acted-on", "Progressing", "InProgress"),
        ("running-at-generation-2", "Healthy", "Current"),
        ("running-degraded", "Degraded", "Current"),
        ("scaled-to-zero", "Healthy", "Current"),
    ];
    for (((name, argo, kstat), (health, health_message)), (status, message)) in
        expected.iter().zip(&health).zip(&computed)
    {
        eprintln!(
            "{name:28} Argo CD {health:11} {health_message:?}\n{:28} kstatus {status:11} {message:?}",
            ""
        );
        assert_eq!(health, argo, "Argo CD health of {name}: {health_message}");
        assert_eq!(status, kstat, "kstatus of {name}: {message}");
    }
    assert_eq!(names.len(), expected.len());
    // The messages say why.
    assert!(
        health[0]
            .1
            .starts_with("ProviderNotRegistered: Provider 'llmd' is not registered"),
        "{:?}",
        health[0]
    );
    assert!(
        health[1]
            .1
            .starts_with("SelectionFailed: no compatible provider found for this configuration"),
        "{:?}",
        health[1]
    );
    assert_eq!(
        health[4].1,
        "ValidationFailed: spec.engine.type: provider kaito does not support engine sglang"
    );
    assert!(
        health[5]
            .1
            .starts_with("UpstreamReconcileError: failed to reconcile Dynamo components"),
        "{:?}",
        health[5]
    );
    assert_eq!(
        computed[7].1,
        "ModelDeployment generation is 2, but latest observed generation is 1"
    );
    assert_eq!(
        computed[4].1,
        "spec.engine.type: provider kaito does not support engine sglang"
    );
    assert_eq!(
        health[9].1,
        "ReplicasUnavailable: 1 of 2 replicas ready: serving at reduced capacity"
    );

    provider.process.terminate(Duration::from_secs(10));
    dynamo.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
    airunway_e2e::providers::delete_all(&env.client).await;
    eprintln!("gitops suite: {:.1}s", started.elapsed().as_secs_f64());
}
