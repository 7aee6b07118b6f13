//! Status that tells the truth, from real Pod state (issue 35): the real providers (each as its
//! ServiceAccount with its shipped RBAC, which now lets it watch its Pods) and the real core,
//! with kube-scheduler deciding where Pods fit and KWOK playing the kubelets. Beside KWOK's
//! own stages, ours (`e2e/control-plane/kwok-stages/`) make a Pod report what a kubelet reports
//! when an image cannot be pulled, when the engine keeps crashing, or when the model server
//! never gets ready, chosen by the pod annotation
//! [`POD_STATE_ANNOTATION`] the tests set through `spec.podTemplate`. A Pod that asks for more
//! GPUs or CPUs than any simulated node has needs no stage: the real scheduler says why. No
//! test writes a Pod, a Deployment or an upstream status.
//!
//! Shown: llm-d's `InsufficientCapacity` naming `nvidia.com/gpu`, `ImagePullFailed` and
//! `EngineCrashLoop` with the termination message, `QuotaExceeded` from a ResourceQuota the
//! real quota admission enforces, a rollout whose new ReplicaSet never gets
//! ready going `Updating` then `RolloutStalled` (`Ready=False`, `Stalled=True`) while the old
//! replica keeps the deployment `Running` with its endpoint; the KubeRay workload's Pods (the
//! real KubeRay operator) and KAITO's (the KAITO simulator) `InsufficientCapacity`; and no
//! status write while a deployment stays not ready for the same reason (its resourceVersion
//! does not move over a window).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use airunway_api::constants::condition_types;
use airunway_api::v1alpha1::{
    ConditionStatus, InferenceProviderConfig, ModelDeployment, NotReadyReason, NotReadyStatus,
    Phase,
};
use airunway_e2e::control_plane::workloads::{
    EXIT_CODE_ANNOTATION, POD_STATE_ANNOTATION, TERMINATION_MESSAGE_ANNOTATION,
    TERMINATION_REASON_ANNOTATION,
};
use airunway_e2e::sandbox::kaito;
use airunway_e2e::stack::{self, FAST_HEALTH, Running};
use airunway_e2e::wait::wait_for;
use airunway_e2e::{TestEnv, cluster_lock};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);
/// How long a deployment in a steady not-ready state is watched for status writes.
const CHURN_WINDOW: Duration = Duration::from_secs(8);

/// Starts the core and the provider `name` (`airunway-provider-<name>`, its shipped RBAC) and
/// waits until the provider is registered ready.
async fn start(env: &TestEnv, name: &str) -> (Running, Running) {
    airunway_e2e::providers::delete_all(&env.client).await;
    let identity = stack::service_account_identity(
        env,
        &format!("deploy/providers/{name}/rbac.yaml"),
        &format!("airunway-provider-{name}"),
    )
    .await;
    let core = stack::start_core(env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let provider = stack::start_provider(
        env,
        &format!("airunway-provider-{name}"),
        &identity,
        &["--heartbeat-interval=1s", "--finalizer-timeout=20s"],
        &format!("{name}-0"),
    )
    .await;
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, name, WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    (core, provider)
}

fn deployment(name: &str, spec: Value) -> ModelDeployment {
    serde_json::from_value(
        json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": name}, "spec": spec}),
    )
    .unwrap()
}

/// An llm-d deployment of `gpus` GPUs whose pods carry `annotations`.
fn on_llmd(gpus: u32, annotations: Value) -> Value {
    json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"},
           "resources": {"gpu": {"count": gpus}},
           "podTemplate": {"metadata": {"annotations": annotations}},
           "provider": {"name": "llmd"}})
}

fn not_ready(md: &ModelDeployment) -> Option<&NotReadyStatus> {
    md.status.as_ref().and_then(|s| s.not_ready.as_deref())
}

fn ready_reason(md: &ModelDeployment) -> Option<(ConditionStatus, String, String)> {
    md.condition(condition_types::READY).map(|c| {
        (
            c.status,
            c.reason.clone().unwrap_or_default(),
            c.message.clone().unwrap_or_default(),
        )
    })
}

/// Waits until `name` is not ready for `reason` (`status.notReady` and `Ready=False` agree).
async fn wait_not_ready(
    mds: &Api<ModelDeployment>,
    name: &str,
    reason: NotReadyReason,
) -> ModelDeployment {
    let md = wait_for(mds, name, WAIT, reason.as_str(), |md| {
        not_ready(md).is_some_and(|n| n.reason == reason)
            && ready_reason(md).is_some_and(|(status, r, _)| {
                status == ConditionStatus::False && r == reason.as_str()
            })
    })
    .await;
    let (_, _, message) = ready_reason(&md).unwrap();
    assert_eq!(
        message,
        not_ready(&md).unwrap().message,
        "Ready says what notReady says"
    );
    md
}

/// Asserts that none of `names` is written to over [`CHURN_WINDOW`]: the provider re-reads
/// the Pods on every change and writes only what differs.
async fn assert_no_churn(mds: &Api<ModelDeployment>, names: &[&str]) {
    let mut before = Vec::new();
    for name in names {
        before.push(mds.get(name).await.unwrap().metadata.resource_version);
    }
    tokio::time::sleep(CHURN_WINDOW).await;
    for (name, before) in names.iter().zip(before) {
        let after = mds.get(name).await.unwrap();
        assert_eq!(
            after.metadata.resource_version, before,
            "{name} was written in a steady state: {:?}",
            after.status
        );
    }
}

/// llm-d: Pods that ask for 16 GPUs (the simulated nodes have 8), Pods whose image cannot be
/// pulled, Pods whose engine keeps crashing, is OOM-killed, or is refused the gated model each
/// give their own reason, read from the Pod; none of them is written again while it stays so.
#[tokio::test]
async fn llmd_pods_say_capacity_image_crash_oom_and_credentials() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("truth-llmd-pods").await;
    let (core, provider) = start(&env, "llmd").await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let started = Instant::now();
    let gated = "huggingface_hub.errors.GatedRepoError: 401 Client Error. Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct/resolve/main/config.json. Access to model meta-llama/Llama-3.1-8B-Instruct is restricted. You must have access to it and be authenticated to access it. Please log in.";
    let crash = "ValueError: The model's max seq len (40960) is larger than the maximum number of tokens that can be stored in KV cache (16384).";
    for (name, spec) in [
        ("too-big", on_llmd(16, json!({}))),
        (
            "bad-image",
            on_llmd(1, json!({POD_STATE_ANNOTATION: "image-pull-failed"})),
        ),
        (
            "crashing",
            on_llmd(
                1,
                json!({POD_STATE_ANNOTATION: "crash-loop", TERMINATION_MESSAGE_ANNOTATION: crash}),
            ),
        ),
        (
            "out-of-memory",
            on_llmd(
                1,
                json!({POD_STATE_ANNOTATION: "crash-loop", EXIT_CODE_ANNOTATION: "137",
                       TERMINATION_REASON_ANNOTATION: "OOMKilled"}),
            ),
        ),
        (
            "gated",
            on_llmd(
                1,
                json!({POD_STATE_ANNOTATION: "crash-loop", TERMINATION_MESSAGE_ANNOTATION: gated}),
            ),
        ),
    ] {
        mds.create(&PostParams::default(), &deployment(name, spec))
            .await
            .unwrap();
    }

    let too_big = wait_not_ready(&mds, "too-big", NotReadyReason::InsufficientCapacity).await;
    eprintln!(
        "InsufficientCapacity {:.1}s after creation",
        started.elapsed().as_secs_f64()
    );
    let found = not_ready(&too_big).unwrap();
    assert!(
        found.message.contains("Insufficient nvidia.com/gpu"),
        "the scheduler's words name the resource: {}",
        found.message
    );
    let source = found.object.clone().unwrap();
    assert_eq!(
        (source.api_version.as_str(), source.kind.as_str()),
        ("v1", "Pod")
    );
    assert!(source.name.starts_with("too-big-"), "{source:?}");
    assert_eq!(too_big.phase(), Some(Phase::Deploying));
    assert_eq!(
        too_big
            .condition(condition_types::RECONCILING)
            .map(|c| (c.status, c.reason.clone())),
        Some((
            ConditionStatus::True,
            Some("InsufficientCapacity".to_string())
        )),
        "kstatus: in progress, saying why"
    );

    let bad_image = wait_not_ready(&mds, "bad-image", NotReadyReason::ImagePullFailed).await;
    let found = not_ready(&bad_image).unwrap();
    assert!(
        found
            .message
            .starts_with("container vllm: ImagePullBackOff: Back-off pulling image"),
        "{}",
        found.message
    );
    assert!(
        found
            .object
            .as_ref()
            .unwrap()
            .name
            .starts_with("bad-image-")
    );

    let crashing = wait_not_ready(&mds, "crashing", NotReadyReason::EngineCrashLoop).await;
    let found = not_ready(&crashing).unwrap();
    assert_eq!(
        found.message,
        format!("container vllm keeps crashing: exit code 1 (Error): {crash}")
    );
    let oom = wait_not_ready(&mds, "out-of-memory", NotReadyReason::OomKilled).await;
    assert_eq!(
        not_ready(&oom).unwrap().message,
        "container vllm was killed for exceeding its memory limit (OOMKilled, exit code 137)"
    );
    let refused = wait_not_ready(&mds, "gated", NotReadyReason::ModelAuthFailed).await;
    assert_eq!(
        not_ready(&refused).unwrap().message,
        format!("container vllm: the model source refused the credentials: {gated}")
    );
    eprintln!(
        "all five reasons {:.1}s after creation",
        started.elapsed().as_secs_f64()
    );

    assert_no_churn(
        &mds,
        &["too-big", "bad-image", "crashing", "out-of-memory", "gated"],
    )
    .await;
    drop((core, provider));
}

/// A ResourceQuota of one GPU in the namespace and an llm-d deployment asking for two: the
/// quota admission refuses the Pod, the real ReplicaSet controller reports `FailedCreate` and
/// the Deployment `ReplicaFailure`; the deployment is `Ready=False` `QuotaExceeded` with the API
/// server's words (`Failed`, `Stalled=True`: someone must change the quota or the spec).
#[tokio::test]
async fn pods_a_quota_refuses_are_quota_exceeded() {
    use k8s_openapi::api::core::v1::ResourceQuota;

    let _lock = cluster_lock().await;
    let env = TestEnv::new("truth-quota").await;
    let quotas: Api<ResourceQuota> = Api::namespaced(env.client.clone(), &env.namespace);
    quotas
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "gpus"},
                "spec": {"hard": {"requests.nvidia.com/gpu": "1"}}}))
            .unwrap(),
        )
        .await
        .unwrap();
    // The quota controller has counted the namespace's usage (the admission refuses every Pod
    // before it has).
    wait_for(&quotas, "gpus", WAIT, "usage counted", |q| {
        q.status.as_ref().and_then(|s| s.used.as_ref()).is_some()
    })
    .await;
    let (core, provider) = start(&env, "llmd").await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let started = Instant::now();
    mds.create(
        &PostParams::default(),
        &deployment("over-quota", on_llmd(2, json!({}))),
    )
    .await
    .unwrap();
    let md = wait_not_ready(&mds, "over-quota", NotReadyReason::QuotaExceeded).await;
    eprintln!(
        "QuotaExceeded {:.1}s after creation",
        started.elapsed().as_secs_f64()
    );
    let found = not_ready(&md).unwrap();
    assert!(
        found.message.contains("exceeded quota: gpus")
            && found.message.contains("requests.nvidia.com/gpu"),
        "the API server's words: {}",
        found.message
    );
    assert_eq!(
        found
            .object
            .as_ref()
            .map(|o| (o.kind.as_str(), o.name.as_str())),
        Some(("Deployment", "over-quota"))
    );
    assert_eq!(md.phase(), Some(Phase::Failed));
    assert_eq!(
        md.condition(condition_types::STALLED).map(|c| c.status),
        Some(ConditionStatus::True)
    );
    assert_no_churn(&mds, &["over-quota"]).await;
    drop((core, provider));
}

/// Go AI Runway #422 on the real deployment controller: a new generation whose Pods run but
/// never get ready. While it rolls out the deployment is `Running` (the old replica serves, the
/// endpoint stays) but `Ready=False` `Updating`; once the Deployment's progress deadline (5 s,
/// an override) passes, `Ready=False` `RolloutStalled` and `Stalled=True` for the current
/// generation; `Degraded` as the counts say (the old replica is ready: not degraded).
#[tokio::test]
async fn a_rollout_whose_new_replicas_never_get_ready_stalls_while_the_old_one_serves() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("truth-rollout").await;
    let (core, provider) = start(&env, "llmd").await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    let mut spec = on_llmd(1, json!({}));
    spec["provider"]["overrides"] = json!({"spec": {"progressDeadlineSeconds": 5}});
    mds.create(&PostParams::default(), &deployment("roll", spec))
        .await
        .unwrap();
    let serving = wait_for(&mds, "roll", WAIT, "Running and Ready", |md| {
        md.phase() == Some(Phase::Running)
            && ready_reason(md).is_some_and(|(s, _, _)| s == ConditionStatus::True)
    })
    .await;
    assert!(not_ready(&serving).is_none());
    let old_pods: Vec<String> = pods
        .list(&ListParams::default().labels("airunway.ai/deployment=roll"))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    assert_eq!(old_pods.len(), 1);

    // Generation 2: the new ReplicaSet's Pod runs but never gets ready.
    let started = Instant::now();
    mds.patch(
        "roll",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"spec": {"podTemplate": {"metadata": {"annotations": {
            POD_STATE_ANNOTATION: "never-ready"}}}}}),
        ),
    )
    .await
    .unwrap();
    let generation = mds.get("roll").await.unwrap().metadata.generation;
    let updating = wait_for(&mds, "roll", WAIT, "Updating", |md| {
        md.status.as_ref().and_then(|s| s.observed_generation) == generation
            && not_ready(md).is_some_and(|n| {
                matches!(
                    n.reason,
                    NotReadyReason::Updating | NotReadyReason::RolloutStalled
                )
            })
    })
    .await;
    assert_eq!(
        updating.phase(),
        Some(Phase::Running),
        "the old replica serves"
    );
    let (status, _, _) = ready_reason(&updating).unwrap();
    assert_eq!(status, ConditionStatus::False, "not ready for generation 2");

    let stalled = wait_not_ready(&mds, "roll", NotReadyReason::RolloutStalled).await;
    eprintln!(
        "RolloutStalled {:.1}s after generation 2",
        started.elapsed().as_secs_f64()
    );
    let md_status = stalled.status.clone().unwrap();
    assert_eq!(md_status.observed_generation, generation);
    assert_eq!(stalled.phase(), Some(Phase::Running));
    let found = not_ready(&stalled).unwrap();
    assert!(
        found.message.contains("has timed out progressing"),
        "the deployment controller's words: {}",
        found.message
    );
    assert_eq!(
        found
            .object
            .as_ref()
            .map(|o| (o.kind.as_str(), o.name.as_str())),
        Some(("Deployment", "roll"))
    );
    assert_eq!(
        stalled
            .condition(condition_types::STALLED)
            .map(|c| c.status),
        Some(ConditionStatus::True),
        "kstatus: Failed for the current generation"
    );
    assert_eq!(
        md_status.endpoint.and_then(|e| e.service).as_deref(),
        Some("roll"),
        "the endpoint (and the route) stays"
    );
    let replicas = md_status.replicas.unwrap();
    assert_eq!((replicas.desired, replicas.ready), (Some(1), Some(1)));
    assert_eq!(
        stalled
            .condition(condition_types::DEGRADED)
            .map(|c| c.status),
        Some(ConditionStatus::False),
        "the counts: one replica asked for, one ready"
    );
    // The old Pod still serves; the new one runs, not ready.
    let all = pods
        .list(&ListParams::default().labels("airunway.ai/deployment=roll"))
        .await
        .unwrap()
        .items;
    let ready = |p: &Pod| {
        p.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    };
    let old = all
        .iter()
        .find(|p| p.metadata.name.as_ref() == old_pods.first())
        .unwrap();
    assert!(ready(old));
    assert_eq!(all.iter().filter(|p| !ready(p)).count(), 1, "the new Pod");
    let live = deployments.get("roll").await.unwrap();
    assert!(live.status.unwrap().conditions.unwrap().iter().any(
        |c| c.type_ == "Progressing" && c.reason.as_deref() == Some("ProgressDeadlineExceeded")
    ));

    assert_no_churn(&mds, &["roll"]).await;
    drop((core, provider));
}

/// The real KubeRay operator expands the RayService into a RayCluster whose worker Pods ask
/// for 16 GPUs: the scheduler cannot place them, and the deployment says so.
#[tokio::test]
async fn kuberay_workers_that_cannot_be_scheduled() {
    use airunway_e2e::control_plane::operators::start_kuberay_operator;
    use airunway_e2e::control_plane::{crd_files, install_crds};
    use airunway_e2e::process::Lifetime;

    let _lock = cluster_lock().await;
    let env = TestEnv::new("truth-kuberay").await;
    let ray_crds: Vec<_> = crd_files()
        .unwrap()
        .into_iter()
        .filter(|f| f.to_string_lossy().contains("ray.io_"))
        .collect();
    install_crds(&env.client, &ray_crds).await.unwrap();
    let (core, provider) = start(&env, "kuberay").await;
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
    let started = Instant::now();
    mds.create(
        &PostParams::default(),
        &deployment(
            "ray-big",
            json!({"model": {"id": "Qwen/Qwen3-8B"}, "provider": {"name": "kuberay"},
                   "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 16}},
                   "nodeSelector": {"nvidia.com/gpu.present": "true"}}),
        ),
    )
    .await
    .unwrap();
    let md = wait_not_ready(&mds, "ray-big", NotReadyReason::InsufficientCapacity).await;
    eprintln!(
        "KubeRay InsufficientCapacity {:.1}s after creation",
        started.elapsed().as_secs_f64()
    );
    let found = not_ready(&md).unwrap();
    assert!(
        found.message.contains("Insufficient nvidia.com/gpu"),
        "{}",
        found.message
    );
    let pod = found.object.clone().unwrap();
    assert_eq!(pod.kind, "Pod");
    // A worker Pod of the RayCluster the operator created.
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    let live = pods.get(&pod.name).await.unwrap();
    let labels = live.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels.get("ray.io/node-type").map(String::as_str),
        Some("worker")
    );
    assert_ne!(md.phase(), Some(Phase::Running));
    assert_no_churn(&mds, &["ray-big"]).await;
    operator.process.terminate(Duration::from_secs(10));
    drop((core, provider));
}

/// The KAITO simulator creates the workload KAITO would for a llama.cpp deployment whose Pod
/// asks for 200 CPUs (the simulated nodes have 16 and 96): the deployment says no node fits.
#[tokio::test]
async fn kaito_workload_pods_that_cannot_be_scheduled() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("truth-kaito").await;
    kaito::install_controller_stand_in(&env.client)
        .await
        .unwrap();
    let (core, provider) = start(&env, "kaito").await;
    let simulator = tokio::spawn(kaito::run(env.client.clone(), Some(env.namespace.clone())));
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let started = Instant::now();
    mds.create(
        &PostParams::default(),
        &deployment(
            "cpu-big",
            json!({"model": {"id": "google/gemma-3-1b-it-qat-q8_0-gguf"},
                   "engine": {"type": "llamacpp", "args": {"model-file": "gemma-3-1b-it-q8_0.gguf"}},
                   "resources": {"gpu": {"count": 0}, "memory": "16Gi", "cpu": "200"},
                   "image": "ghcr.io/sozercan/llama-cpp-runner:latest",
                   "provider": {"name": "kaito"}}),
        ),
    )
    .await
    .unwrap();
    let md = wait_not_ready(&mds, "cpu-big", NotReadyReason::InsufficientCapacity).await;
    eprintln!(
        "KAITO InsufficientCapacity {:.1}s after creation",
        started.elapsed().as_secs_f64()
    );
    let found = not_ready(&md).unwrap();
    assert!(
        found.message.contains("Insufficient cpu"),
        "{}",
        found.message
    );
    let pod = found.object.clone().unwrap();
    assert_eq!(pod.kind, "Pod");
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    let live = pods.get(&pod.name).await.unwrap();
    assert_eq!(
        live.metadata
            .labels
            .unwrap_or_default()
            .get("kaito.sh/workspace")
            .map(String::as_str),
        Some("cpu-big")
    );
    assert_no_churn(&mds, &["cpu-big"]).await;
    simulator.abort();
    drop((core, provider));
}
