//! Autoscaling end to end with real parts (issue 34): the real KEDA operator and metrics
//! server (`github.com/kedacore/keda/v2`), kube-controller-manager's real HPA controller
//! reading `external.metrics.k8s.io` through kube-apiserver's aggregation layer, Debian's
//! Prometheus scraping a played vLLM `/metrics` whose queue depth the test sets, and the real
//! core and vLLM provider: the autoscaler writes `spec.scaling.replicas` through the
//! ModelDeployment's scale subresource and the provider's Deployment follows, in place.
//! Each step's time is printed (`step ...`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use airunway_api::constants::condition_types::{SCALING_ACTIVE, SCALING_READY};
use airunway_api::v1alpha1::{
    ConditionStatus, EngineType, InferenceProviderConfig, ModelDeployment, Phase,
};
use airunway_core::autoscaling::plan::{self, Inputs, Kind};
use airunway_e2e::autoscaling::{Autoscaling, PlayedModelServer};
use airunway_e2e::registry::LocalRegistry;
use airunway_e2e::stack::{self, FAST_HEALTH, Running};
use airunway_e2e::wait::{eventually, wait_for};
use airunway_e2e::{TestEnv, cluster_lock};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);
/// A scaling step: metric scraped (1 s), read by KEDA (1 s polling) and the HPA controller
/// (1 s sync), the scale subresource written, the provider's Deployment rolled to the count and
/// KWOK's pods Ready. Seconds on an idle machine; bounded for a loaded one.
const SCALE_WAIT: Duration = Duration::from_secs(120);
const MODEL: &str = "qwen3";

fn scaled_objects(env: &TestEnv) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("keda.sh", "v1alpha1", "ScaledObject"),
        "scaledobjects",
    );
    Api::namespaced_with(env.client.clone(), &env.namespace, &resource)
}

/// The core (with `core_flags`) and the vLLM provider as their ServiceAccounts.
async fn start(env: &TestEnv, core_flags: &[&str]) -> (Running, Running) {
    airunway_e2e::providers::delete_all(&env.client).await;
    let mut flags: Vec<&str> = FAST_HEALTH.to_vec();
    flags.extend_from_slice(core_flags);
    let core = stack::start_core(env, &env.control_plane.kubeconfig, &flags, "core").await;
    let identity = stack::service_account_identity(
        env,
        "deploy/providers/vllm/rbac.yaml",
        "airunway-provider-vllm",
    )
    .await;
    let provider = stack::start_provider(
        env,
        "airunway-provider-vllm",
        &identity,
        &["--heartbeat-interval=1s", "--finalizer-timeout=30s"],
        "vllm-0",
    )
    .await;
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, "vllm", WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    (core, provider)
}

/// A vLLM deployment of one GPU per replica on the image in the test's registry.
fn deployment(name: &str, image: &str, scaling: Value) -> ModelDeployment {
    serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": name},
        "spec": {"model": {"id": "Qwen/Qwen3-0.6B", "servedName": MODEL},
                 "engine": {"type": "vllm", "image": image},
                 "resources": {"gpu": {"count": 1}},
                 "scaling": scaling,
                 "provider": {"name": "vllm"}}}))
    .unwrap()
}

fn spec_replicas(md: &ModelDeployment) -> Option<i64> {
    serde_json::to_value(md).unwrap()["spec"]["scaling"]["replicas"].as_i64()
}

/// Waits until the autoscaler has written `replicas` into `spec.scaling.replicas` and the
/// provider's Deployment `name` (the same object: `uid`) runs exactly that many Ready pods;
/// prints and returns how long since `since`.
async fn wait_scaled(
    env: &TestEnv,
    name: &str,
    uid: &str,
    replicas: i32,
    step: &str,
    since: Instant,
) -> Duration {
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    eventually(
        &format!("{step}: md/{name} scaled to {replicas} and its Deployment following"),
        SCALE_WAIT,
        || async {
            let md = mds.get(name).await.map_err(|e| e.to_string())?;
            let wanted = spec_replicas(&md);
            if wanted != Some(i64::from(replicas)) {
                return Err(format!("spec.scaling.replicas is {wanted:?}"));
            }
            let deployment = deployments.get(name).await.map_err(|e| e.to_string())?;
            if deployment.metadata.uid.as_deref() != Some(uid) {
                return Err(format!(
                    "the Deployment was replaced (uid {:?}, was {uid})",
                    deployment.metadata.uid
                ));
            }
            let spec = deployment.spec.as_ref().and_then(|s| s.replicas);
            let status = deployment.status.clone().unwrap_or_default();
            let ready = status.ready_replicas.unwrap_or(0);
            let total = status.replicas.unwrap_or(0);
            if spec == Some(replicas) && ready == replicas && total == replicas {
                Ok(())
            } else {
                Err(format!(
                    "Deployment spec.replicas {spec:?}, status replicas {total}, ready {ready}"
                ))
            }
        },
    )
    .await;
    let took = since.elapsed();
    eprintln!(
        "step {step}: {replicas} replicas Ready {:.1}s after the metric changed",
        took.as_secs_f64()
    );
    took
}

/// KEDA's ScaledObject condition `type` (`Ready`, `Active`) as (status, reason, message).
fn keda_condition(object: &DynamicObject, type_: &str) -> Option<(String, String, String)> {
    object.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_string(),
                c["reason"].as_str().unwrap_or_default().to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
}

#[tokio::test]
async fn keda_scales_a_deployment_through_its_scale_subresource_to_zero_and_back() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("keda-scales").await;
    let started = Instant::now();
    let autoscaling = Autoscaling::shared();
    eprintln!(
        "step KEDA and Prometheus: {:.1}s (started in {:.1}s)",
        started.elapsed().as_secs_f64(),
        autoscaling.timings.total.as_secs_f64()
    );
    for process in autoscaling.processes() {
        env.report_log(process.name(), process.log().to_path_buf());
    }
    let (_core, _provider) = start(&env, &[]).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);

    let registry = LocalRegistry::start(
        &env.control_plane
            .dir
            .join(format!("registry-{}", env.namespace)),
    )
    .unwrap();
    registry.push_tiny_image("vllm/vllm-openai", "e2e").unwrap();
    let image = format!("{}/vllm/vllm-openai:e2e", registry.address);

    let name = "chat";
    let step = Instant::now();
    mds.create(
        &PostParams::default(),
        &deployment(name, &image, json!({"replicas": 1})),
    )
    .await
    .unwrap();
    let md = wait_for(&mds, name, WAIT, "Running with a selector", |md| {
        md.phase() == Some(Phase::Running)
            && md
                .status
                .as_ref()
                .and_then(|s| s.selector.as_ref())
                .is_some()
    })
    .await;
    eprintln!(
        "step deployment Running with status.selector {:?}: {:.1}s",
        md.status.as_ref().and_then(|s| s.selector.clone()),
        step.elapsed().as_secs_f64()
    );
    let uid = deployments.get(name).await.unwrap().metadata.uid.unwrap();

    // The played model server of the deployment, with a queue of 7 before the autoscaler
    // exists: the first decision is a scale-up.
    let server = PlayedModelServer::start(autoscaling, &env.namespace, "chat-0", MODEL)
        .await
        .unwrap();
    server.set_waiting(7.0);
    let scraped = server
        .wait_scraped(autoscaling, 7.0, Duration::from_secs(30))
        .await
        .unwrap();
    eprintln!(
        "step Prometheus scraped the played server: {:.1}s",
        scraped.as_secs_f64()
    );

    // A ScaledObject as a user writes it: the Prometheus scaler on the queue depth of this
    // deployment's series (namespace and model_name), 2 waiting requests per replica, woken
    // above 0.5, 0 to 4 replicas, polled every second, to zero after 5 s without a queue.
    let query = format!(
        "sum(vllm:num_requests_waiting{{namespace=\"{}\",model_name=\"{MODEL}\"}})",
        env.namespace
    );
    let scaled_object = json!({
        "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
        "metadata": {"name": name, "namespace": env.namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
                               "name": name},
            "minReplicaCount": 0, "maxReplicaCount": 4,
            "pollingInterval": 1, "cooldownPeriod": 5,
            "triggers": [{"type": "prometheus", "metadata": {
                "serverAddress": autoscaling.prometheus_url, "query": query,
                "threshold": "2", "activationThreshold": "0.5"}}]}});
    let objects = scaled_objects(&env);
    let since = Instant::now();
    objects
        .patch(
            name,
            &PatchParams::apply("airunway-e2e").force(),
            &Patch::Apply(&scaled_object),
        )
        .await
        .unwrap();

    // KEDA: Ready, its HPA on the ModelDeployment's scale subresource with the external metric.
    let ready = eventually("the ScaledObject Ready", WAIT, || async {
        let object = objects.get(name).await.map_err(|e| e.to_string())?;
        match keda_condition(&object, "Ready") {
            Some((status, _, _)) if status == "True" => Ok(object),
            other => Err(format!(
                "Ready: {other:?}; status {}",
                object.data["status"]
            )),
        }
    })
    .await;
    eprintln!(
        "step ScaledObject Ready: {:.1}s",
        since.elapsed().as_secs_f64()
    );
    let hpa_name = ready.data["status"]["hpaName"]
        .as_str()
        .unwrap_or("keda-hpa-chat")
        .to_string();
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(env.client.clone(), &env.namespace);
    let hpa = hpas.get(&hpa_name).await.unwrap();
    let hpa_spec = hpa.spec.clone().unwrap();
    assert_eq!(
        (
            hpa_spec.scale_target_ref.api_version.as_deref(),
            hpa_spec.scale_target_ref.kind.as_str(),
            hpa_spec.scale_target_ref.name.as_str()
        ),
        (Some("airunway.ai/v1alpha1"), "ModelDeployment", name),
        "KEDA's HPA scales the ModelDeployment itself"
    );
    assert_eq!(hpa_spec.max_replicas, 4);
    assert_eq!(
        hpa_spec.metrics.as_ref().unwrap()[0].type_,
        "External",
        "{hpa_spec:?}"
    );

    // Up: 7 waiting at 2 per replica → 4 (the maximum).
    wait_scaled(&env, name, &uid, 4, "queue 7 → up", since).await;
    let hpa_status = hpas.get(&hpa_name).await.unwrap().status.unwrap();
    assert_eq!(hpa_status.desired_replicas, 4, "{hpa_status:?}");
    // The provider writes the ready count after the Deployment's status shows it: follow it.
    eventually(
        "status.replicas.ready follows (what the scale subresource reports)",
        SCALE_WAIT,
        || async {
            let md = mds.get(name).await.map_err(|e| e.to_string())?;
            let ready = md
                .status
                .as_ref()
                .and_then(|s| s.replicas.clone())
                .and_then(|r| r.ready);
            if ready == Some(4) {
                Ok(())
            } else {
                Err(format!("status.replicas.ready is {ready:?}"))
            }
        },
    )
    .await;

    // Down: 3 waiting → 2.
    let since = Instant::now();
    server.set_waiting(3.0);
    wait_scaled(&env, name, &uid, 2, "queue 3 → down", since).await;

    // To zero: no queue (below the activation threshold) for the cooldown → 0.
    let since = Instant::now();
    server.set_waiting(0.0);
    wait_scaled(&env, name, &uid, 0, "queue 0 → zero", since).await;
    let object = objects.get(name).await.unwrap();
    assert_eq!(
        keda_condition(&object, "Active").map(|c| c.0).as_deref(),
        Some("False"),
        "{}",
        object.data["status"]
    );

    // And back: 5 waiting wakes it (KEDA 0 → 1) and the HPA takes it to ceil(5 / 2) = 3.
    let since = Instant::now();
    server.set_waiting(5.0);
    wait_scaled(&env, name, &uid, 3, "queue 5 → from zero", since).await;
    let object = objects.get(name).await.unwrap();
    assert_eq!(
        keda_condition(&object, "Active").map(|c| c.0).as_deref(),
        Some("True"),
        "{}",
        object.data["status"]
    );

    // Removing the ScaledObject removes its HPA; the deployment keeps its last count.
    objects
        .delete(name, &DeleteParams::default())
        .await
        .unwrap();
    eventually("KEDA's HPA removed with its ScaledObject", WAIT, || async {
        match hpas.get_opt(&hpa_name).await {
            Ok(None) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    mds.delete(name, &DeleteParams::default()).await.unwrap();
    drop(server);
    eprintln!("step whole test: {:.1}s", started.elapsed().as_secs_f64());
}

/// The deployment's condition `type_` as (status, reason, message).
fn md_condition(md: &ModelDeployment, type_: &str) -> Option<(ConditionStatus, String, String)> {
    md.condition(type_).map(|c| {
        (
            c.status,
            c.reason.clone().unwrap_or_default(),
            c.message.clone().unwrap_or_default(),
        )
    })
}

/// Waits until the deployment's condition `type_` has `status`; returns (reason, message).
async fn wait_md_condition(
    env: &TestEnv,
    name: &str,
    type_: &str,
    status: ConditionStatus,
) -> (String, String) {
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    eventually(
        &format!("md/{name} {type_}={status:?}"),
        SCALE_WAIT,
        || async {
            let md = mds.get(name).await.map_err(|e| e.to_string())?;
            match md_condition(&md, type_) {
                Some((s, reason, message)) if s == status => Ok((reason, message)),
                other => Err(format!("{type_}: {other:?}")),
            }
        },
    )
    .await
}

#[tokio::test]
async fn the_core_creates_the_scaled_object_from_the_spec_and_keda_scales_to_zero_and_back() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("core-autoscaling").await;
    let started = Instant::now();
    let autoscaling = Autoscaling::shared();
    for process in autoscaling.processes() {
        env.report_log(process.name(), process.log().to_path_buf());
    }
    let address = format!(
        "--autoscaling-prometheus-address={}",
        autoscaling.prometheus_url
    );
    let (_core, _provider) = start(&env, &[&address]).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(env.client.clone(), &env.namespace);
    let objects = scaled_objects(&env);

    let registry = LocalRegistry::start(
        &env.control_plane
            .dir
            .join(format!("registry-{}", env.namespace)),
    )
    .unwrap();
    registry.push_tiny_image("vllm/vllm-openai", "e2e").unwrap();
    let image = format!("{}/vllm/vllm-openai:e2e", registry.address);

    // The model server already has a queue when the deployment asks for autoscaling.
    let name = "auto";
    let server = PlayedModelServer::start(autoscaling, &env.namespace, "auto-0", MODEL)
        .await
        .unwrap();
    server.set_waiting(7.0);
    server
        .wait_scraped(autoscaling, 7.0, Duration::from_secs(30))
        .await
        .unwrap();

    // What a user writes: the queue depth at 2 per replica, woken above 0.5, 0 to 4 replicas,
    // read every second, to zero after 5 s without a queue.
    let since = Instant::now();
    mds.create(
        &PostParams::default(),
        &deployment(
            name,
            &image,
            json!({"replicas": 1, "autoscaling": {
                "minReplicas": 0, "maxReplicas": 4, "pollingSeconds": 1, "cooldownSeconds": 5,
                "metrics": [{"type": "queueDepth", "target": "2", "activationTarget": "0.5"}]}}),
        ),
    )
    .await
    .unwrap();
    let md = wait_for(&mds, name, WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    let md_uid = md.metadata.uid.clone().unwrap();

    // The ScaledObject the core made: named after the deployment, controlled by it, on its
    // scale subresource, with the vLLM queue-depth query of its namespace and served model.
    let object = eventually("the core's ScaledObject", WAIT, || async {
        objects
            .get_opt(name)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "no ScaledObject yet".to_string())
    })
    .await;
    eprintln!(
        "step the core created the ScaledObject: {:.1}s after the deployment",
        since.elapsed().as_secs_f64()
    );
    let owner = object
        .metadata
        .owner_references
        .clone()
        .unwrap_or_default()
        .into_iter()
        .find(|o| o.controller == Some(true))
        .expect("a controller owner reference");
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
        ("ModelDeployment", name, md_uid.as_str())
    );
    let spec = &object.data["spec"];
    assert_eq!(
        spec["scaleTargetRef"],
        json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment", "name": name})
    );
    assert_eq!(
        (&spec["minReplicaCount"], &spec["maxReplicaCount"]),
        (&json!(0), &json!(4))
    );
    let trigger = &spec["triggers"][0];
    assert_eq!(trigger["type"], "prometheus", "{spec}");
    assert_eq!(
        trigger["metadata"]["serverAddress"].as_str(),
        Some(autoscaling.prometheus_url.as_str())
    );
    let query = trigger["metadata"]["query"].as_str().unwrap();
    for part in [
        "vllm:num_requests_waiting",
        &format!("namespace=\"{}\"", env.namespace),
        &format!("model_name=\"{MODEL}\""),
    ] {
        assert!(query.contains(part), "the query {query:?} lacks {part}");
    }

    // KEDA accepts it and the deployment says so; the queue of 7 takes it to 4.
    let (reason, message) =
        wait_md_condition(&env, name, SCALING_READY, ConditionStatus::True).await;
    eprintln!(
        "step ScalingReady=True ({reason}: {message}): {:.1}s after the deployment",
        since.elapsed().as_secs_f64()
    );
    let uid = deployments.get(name).await.unwrap().metadata.uid.unwrap();
    wait_scaled(&env, name, &uid, 4, "core: queue 7 → up", since).await;
    wait_md_condition(&env, name, SCALING_ACTIVE, ConditionStatus::True).await;
    let md = wait_for(&mds, name, WAIT, "status.autoscaling at 4", |md| {
        md.status
            .as_ref()
            .and_then(|s| s.autoscaling.as_ref())
            .is_some_and(|a| a.desired_replicas == Some(4))
    })
    .await;
    let status = md.status.unwrap().autoscaling.unwrap();
    assert_eq!(
        (status.kind.as_deref(), status.name.as_deref()),
        (Some("ScaledObject"), Some(name))
    );

    let since = Instant::now();
    server.set_waiting(3.0);
    wait_scaled(&env, name, &uid, 2, "core: queue 3 → down", since).await;

    let since = Instant::now();
    server.set_waiting(0.0);
    wait_scaled(&env, name, &uid, 0, "core: queue 0 → zero", since).await;
    let (reason, message) =
        wait_md_condition(&env, name, SCALING_ACTIVE, ConditionStatus::False).await;
    eprintln!("step at zero: ScalingActive=False ({reason}: {message})");

    let since = Instant::now();
    server.set_waiting(5.0);
    wait_scaled(&env, name, &uid, 3, "core: queue 5 → from zero", since).await;
    wait_md_condition(&env, name, SCALING_ACTIVE, ConditionStatus::True).await;

    // The autoscaler goes with the deployment (garbage collection of the owned object), and
    // KEDA's HPA with it.
    let hpa_name = objects.get(name).await.unwrap().data["status"]["hpaName"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| format!("keda-hpa-{name}"));
    let since = Instant::now();
    mds.delete(name, &DeleteParams::default()).await.unwrap();
    eventually(
        "the ScaledObject and KEDA's HPA removed with the deployment",
        WAIT,
        || async {
            let object = objects.get_opt(name).await.map_err(|e| e.to_string())?;
            let hpa = hpas.get_opt(&hpa_name).await.map_err(|e| e.to_string())?;
            match (object, hpa) {
                (None, None) => Ok(()),
                (o, h) => Err(format!(
                    "ScaledObject there: {}, HPA there: {}",
                    o.is_some(),
                    h.is_some()
                )),
            }
        },
    )
    .await;
    eprintln!(
        "step ScaledObject and HPA removed {:.1}s after the deployment was deleted",
        since.elapsed().as_secs_f64()
    );
    drop(server);
    eprintln!("step whole test: {:.1}s", started.elapsed().as_secs_f64());
}

/// The core's shipped autoscaler shapes, for every metric type, against the real API server:
/// the ScaledObject against KEDA's real CRD, the HPA against `autoscaling/v2` (server-side dry
/// run; nothing is stored).
#[tokio::test]
async fn the_shipped_scaled_object_and_hpa_pass_server_side_dry_run() {
    let env = TestEnv::new("autoscaler-shapes").await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let mut md = deployment(
        "shapes",
        "vllm/vllm-openai:v0.11.0",
        json!({"replicas": 1, "autoscaling": {
            "minReplicas": 0, "maxReplicas": 8, "pollingSeconds": 5, "cooldownSeconds": 60,
            "metrics": [
                {"type": "queueDepth", "target": "4", "activationTarget": "1"},
                {"type": "kvCacheUsage", "target": "0.8"},
                {"type": "poolQueueDepth", "target": "10"},
                {"type": "poolKvCacheUsage", "target": "0.75"},
                {"type": "prometheus", "target": "3",
                 "query": "sum(rate(vllm:request_success_total{namespace=\"x\"}[1m]))"}]}}),
    );
    // Stored for real (its uid goes into the owner reference); no core runs in this test.
    md = mds.create(&PostParams::default(), &md).await.unwrap();
    for keda in [true, false] {
        let plan = plan::plan(&Inputs {
            md: &md,
            valid: true,
            engine: Some(EngineType::Vllm),
            keda,
            prometheus_address: "http://prometheus.monitoring.svc:9090",
            pool: Some((env.namespace.clone(), "shapes".to_string())),
            scaled_object: None,
            hpa: None,
            keda_hpa: None,
            labels: Default::default(),
        });
        let (kind, object) = plan
            .apply
            .clone()
            .unwrap_or_else(|| panic!("the plan applies nothing (keda {keda}): {plan:?}"));
        assert_eq!(kind, if keda { Kind::ScaledObject } else { Kind::Hpa });
        let resource = if keda {
            ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("keda.sh", "v1alpha1", "ScaledObject"),
                "scaledobjects",
            )
        } else {
            ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("autoscaling", "v2", "HorizontalPodAutoscaler"),
                "horizontalpodautoscalers",
            )
        };
        let api: Api<DynamicObject> =
            Api::namespaced_with(env.client.clone(), &env.namespace, &resource);
        let accepted = api
            .patch(
                "shapes",
                &PatchParams::apply("airunway-core-autoscaling").dry_run(),
                &Patch::Apply(&object),
            )
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "the API server refused the shipped {}: {e}\n{}",
                    kind.as_str(),
                    serde_json::to_string_pretty(&object).unwrap()
                )
            });
        // Nothing the schema would prune: what was sent is what the server kept, quantities
        // compared by value (the API server stores an HPA target of "0.8" as "800m").
        let mut sent = object["spec"].clone();
        let mut kept = accepted.data["spec"].clone();
        canonical_quantities(&mut sent);
        canonical_quantities(&mut kept);
        for (key, value) in sent.as_object().unwrap() {
            assert_eq!(
                &kept[key],
                value,
                "{} spec.{key} changed by the API server (pruned or defaulted differently)",
                kind.as_str()
            );
        }
        eprintln!(
            "{} with 5 metric types accepted by the real schema",
            kind.as_str()
        );
    }
}

/// Replaces each HPA metric target's `value`/`averageValue` quantity (a decimal, or a decimal
/// with the milli suffix `m`, the two forms the API server writes for these) by its number.
fn canonical_quantities(spec: &mut Value) {
    let Some(metrics) = spec.get_mut("metrics").and_then(Value::as_array_mut) else {
        return;
    };
    for metric in metrics {
        let Some(target) = metric
            .get_mut("external")
            .and_then(|e| e.get_mut("target"))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        for key in ["value", "averageValue"] {
            if let Some(text) = target.get(key).and_then(Value::as_str) {
                let number = match text.strip_suffix('m') {
                    Some(milli) => milli.parse::<f64>().unwrap() / 1000.0,
                    None => text.parse::<f64>().unwrap(),
                };
                target.insert(key.to_string(), json!(number));
            }
        }
    }
}
