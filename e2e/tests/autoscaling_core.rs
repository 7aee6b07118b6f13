//! The core's side of autoscaling (issue 34) on the real control plane, with the real core
//! running as its ServiceAccount with the shipped RBAC: the autoscaler of a deployment with
//! `spec.scaling.autoscaling` created and owned by it, changed in place, replaced when KEDA's
//! real ScaledObject CRD appears (the API server validates the ScaledObject against KEDA's
//! schema), removed with `autoscaling` and with the deployment (garbage collector); someone
//! else's object of the name left alone; the CRD's rules refusing what they can say. No KEDA
//! operator or HPA controller acts here: the statuses they write are mapped by the plan's unit
//! tests and shown end to end by the `autoscaling` suite.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use airunway_api::constants::{annotations, condition_types, event_reasons, messages};
use airunway_api::v1alpha1::ModelDeployment;
use airunway_e2e::stack::{self, Running};
use airunway_e2e::wait::{eventually, wait_deleted, wait_for};
use airunway_e2e::{TestEnv, cluster_lock, manifests, paths};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);
const KEDA_CRD: &str = "scaledobjects.keda.sh";
const KEDA_CRD_FILE: &str = "keda.sh_scaledobjects.yaml";

async fn start_core(env: &TestEnv, pod: &str) -> Running {
    stack::start_core(env, &env.control_plane.kubeconfig, &[], pod).await
}

fn hpas(env: &TestEnv) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("autoscaling", "v2", "HorizontalPodAutoscaler"),
        "horizontalpodautoscalers",
    );
    Api::namespaced_with(env.client.clone(), &env.namespace, &resource)
}

fn scaled_objects(env: &TestEnv) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("keda.sh", "v1alpha1", "ScaledObject"),
        "scaledobjects",
    );
    Api::namespaced_with(env.client.clone(), &env.namespace, &resource)
}

fn deployment(name: &str, autoscaling: Value) -> ModelDeployment {
    serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": name},
        "spec": {"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"},
                 "resources": {"gpu": {"count": 1}},
                 "scaling": {"replicas": 1, "autoscaling": autoscaling}},
    }))
    .unwrap()
}

/// KEDA's ScaledObject CRD as published in its Go module: from the upstream CRDs the harness
/// installs, else the one the cluster serves.
async fn keda_crd(client: &Client) -> Value {
    let from_files = paths::upstream_crd_dirs()
        .unwrap_or_default()
        .into_iter()
        .map(|dir| dir.join(KEDA_CRD_FILE))
        .find(|file| file.is_file())
        .and_then(|file| manifests::read(&file).into_iter().next());
    if let Some(crd) = from_files {
        return crd;
    }
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let live = api.get_opt(KEDA_CRD).await.unwrap().unwrap_or_else(|| {
        panic!("KEDA's {KEDA_CRD_FILE} is neither among the upstream CRDs nor installed (e2e/control-plane/upstream-crds.sh fetches it from KEDA's Go module)")
    });
    let mut crd = serde_json::to_value(live).unwrap();
    crd["metadata"] = json!({"name": KEDA_CRD});
    crd.as_object_mut().unwrap().remove("status");
    crd
}

async fn remove_keda_crd(client: &Client) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    if api.get_opt(KEDA_CRD).await.unwrap().is_some() {
        api.delete(KEDA_CRD, &DeleteParams::default())
            .await
            .unwrap();
        wait_deleted(&api, KEDA_CRD, WAIT).await;
    }
}

async fn install_keda_crd(client: &Client, crd: &Value) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    api.patch(
        KEDA_CRD,
        &PatchParams::apply("autoscaling-core-test").force(),
        &Patch::Apply(crd),
    )
    .await
    .unwrap();
    wait_for(&api, KEDA_CRD, WAIT, "Established", |crd| {
        crd.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            })
    })
    .await;
}

fn owned_by(object: &DynamicObject, md: &ModelDeployment) -> bool {
    object.owner_references().iter().any(|r| {
        r.controller == Some(true)
            && r.kind == "ModelDeployment"
            && Some(&r.uid) == md.metadata.uid.as_ref()
    })
}

fn condition(md: &ModelDeployment, type_: &str) -> Option<(String, String, String)> {
    md.condition(type_).map(|c| {
        (
            c.status.as_str().to_string(),
            c.reason.clone().unwrap_or_default(),
            c.message.clone().unwrap_or_default(),
        )
    })
}

#[tokio::test]
async fn the_autoscaler_is_created_owned_changed_replaced_and_removed() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("autoscaling-core").await;
    let crd = keda_crd(&env.client).await;
    remove_keda_crd(&env.client).await;
    let _core = start_core(&env, "autoscaling-core").await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let ns = env.namespace.clone();

    // Without KEDA: an autoscaling/v2 HPA on External metrics, floored at one replica, and
    // the deployment says so.
    let autoscaling = json!({"minReplicas": 0, "maxReplicas": 3, "metrics": [
        {"type": "queueDepth", "target": "5", "activationTarget": "1"},
        {"type": "kvCacheUsage", "target": "0.8"}]});
    let md = api
        .create(&PostParams::default(), &deployment("auto", autoscaling))
        .await
        .unwrap();
    let hpa = wait_for(&hpas(&env), "auto", WAIT, "the core's HPA", |h| {
        owned_by(h, &md)
    })
    .await;
    assert_eq!(hpa.data["spec"]["minReplicas"], 1);
    assert_eq!(hpa.data["spec"]["maxReplicas"], 3);
    assert_eq!(
        hpa.data["spec"]["scaleTargetRef"],
        json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment", "name": "auto"})
    );
    assert_eq!(
        hpa.data["spec"]["metrics"][0]["external"]["metric"]["name"],
        "airunway-queue-depth"
    );
    let queries: Value = serde_json::from_str(
        hpa.annotations()
            .get(annotations::AUTOSCALING_QUERIES)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        queries["airunway-kv-cache-usage"],
        format!(
            r#"sum(vllm:kv_cache_usage_perc{{namespace="{ns}",model_name="Qwen/Qwen3-0.6B"}} or vllm:gpu_cache_usage_perc{{namespace="{ns}",model_name="Qwen/Qwen3-0.6B"}})"#
        )
    );
    let md = wait_for(&api, "auto", WAIT, "status.autoscaling", |md| {
        md.status
            .as_ref()
            .and_then(|s| s.autoscaling.as_ref())
            .is_some_and(|a| a.kind.as_deref() == Some("HorizontalPodAutoscaler"))
    })
    .await;
    let (status, _, message) = condition(&md, condition_types::SCALING_READY).unwrap();
    assert_eq!(status, "False", "no HPA controller reported yet: {message}");
    assert!(
        message.ends_with("a HorizontalPodAutoscaler cannot scale to zero without the alpha HPAScaleToZero feature gate, so it keeps at least 1 replica; install KEDA to scale to zero)"),
        "{message}"
    );
    assert!(condition(&md, condition_types::SCALING_ACTIVE).is_some());
    env.wait_for_event(event_reasons::AUTOSCALER_CREATED, |n| {
        n == format!("HorizontalPodAutoscaler {ns}/auto created (0 to 3 replicas)")
    })
    .await;

    // A change is applied in place.
    api.patch(
        "auto",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"scaling": {"autoscaling": {"maxReplicas": 5}}}})),
    )
    .await
    .unwrap();
    let changed = wait_for(&hpas(&env), "auto", WAIT, "maxReplicas 5", |h| {
        h.data["spec"]["maxReplicas"] == 5
    })
    .await;
    assert_eq!(changed.uid(), hpa.uid(), "changed in place");

    // KEDA installed: the HPA is replaced by a ScaledObject the real CRD admits.
    install_keda_crd(&env.client, &crd).await;
    let so = wait_for(
        &scaled_objects(&env),
        "auto",
        WAIT,
        "the core's ScaledObject",
        |s| owned_by(s, &md),
    )
    .await;
    wait_deleted(&hpas(&env), "auto", WAIT).await;
    assert_eq!(so.data["spec"]["minReplicaCount"], 0);
    assert_eq!(so.data["spec"]["maxReplicaCount"], 5);
    assert_eq!(
        so.data["spec"]["triggers"][0],
        json!({"type": "prometheus", "name": "queuedepth", "metricType": "AverageValue",
               "metadata": {"serverAddress": "http://prometheus.monitoring.svc:9090",
                            "query": format!(r#"sum(vllm:num_requests_waiting{{namespace="{ns}",model_name="Qwen/Qwen3-0.6B"}})"#),
                            "threshold": "5", "activationThreshold": "1"}})
    );
    let md = wait_for(&api, "auto", WAIT, "ScaledObject in status", |md| {
        md.status
            .as_ref()
            .and_then(|s| s.autoscaling.as_ref())
            .is_some_and(|a| a.kind.as_deref() == Some("ScaledObject"))
    })
    .await;
    assert_eq!(
        condition(&md, condition_types::SCALING_READY).unwrap(),
        (
            "False".to_string(),
            "AutoscalerPending".to_string(),
            format!("KEDA has not reported on ScaledObject {ns}/auto yet")
        )
    );
    env.wait_for_event(event_reasons::AUTOSCALER_REPLACED, |n| {
        n == format!(
            "HorizontalPodAutoscaler {ns}/auto replaced by a ScaledObject (KEDA is installed)"
        )
    })
    .await;

    // Autoscaling removed: the ScaledObject goes, and so do the conditions and the status.
    api.patch(
        "auto",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"scaling": {"autoscaling": null}}})),
    )
    .await
    .unwrap();
    wait_deleted(&scaled_objects(&env), "auto", WAIT).await;
    wait_for(&api, "auto", WAIT, "no autoscaling status", |md| {
        md.condition(condition_types::SCALING_READY).is_none()
            && md.condition(condition_types::SCALING_ACTIVE).is_none()
            && md.status.as_ref().is_some_and(|s| s.autoscaling.is_none())
    })
    .await;
    env.wait_for_event(event_reasons::AUTOSCALER_REMOVED, |n| {
        n == format!("ScaledObject {ns}/auto removed: spec.scaling.autoscaling is not set")
    })
    .await;

    // Removed with the deployment: the garbage collector follows the owner reference.
    let gone = api
        .create(
            &PostParams::default(),
            &deployment(
                "gone",
                json!({"maxReplicas": 2, "metrics": [{"type": "poolQueueDepth", "target": "3"}]}),
            ),
        )
        .await
        .unwrap();
    let so = wait_for(
        &scaled_objects(&env),
        "gone",
        WAIT,
        "owned ScaledObject",
        |s| owned_by(s, &gone),
    )
    .await;
    assert_eq!(so.data["spec"]["triggers"][0]["metricType"], "Value");
    api.delete("gone", &DeleteParams::default()).await.unwrap();
    wait_deleted(&scaled_objects(&env), "gone", WAIT).await;

    // Someone else's ScaledObject of the name is left as it is, and the deployment says why.
    let theirs = json!({"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
        "metadata": {"name": "taken", "namespace": ns},
        "spec": {"scaleTargetRef": {"name": "something-else"}, "triggers": [
            {"type": "cpu", "metricType": "Utilization", "metadata": {"value": "50"}}]}});
    let theirs: DynamicObject = serde_json::from_value(theirs).unwrap();
    scaled_objects(&env)
        .create(&PostParams::default(), &theirs)
        .await
        .unwrap();
    api.create(
        &PostParams::default(),
        &deployment(
            "taken",
            json!({"maxReplicas": 2, "metrics": [{"type": "queueDepth", "target": "3"}]}),
        ),
    )
    .await
    .unwrap();
    let md = wait_for(&api, "taken", WAIT, "AutoscalerConflict", |md| {
        md.condition(condition_types::SCALING_READY)
            .is_some_and(|c| c.reason.as_deref() == Some("AutoscalerConflict"))
    })
    .await;
    assert_eq!(
        condition(&md, condition_types::SCALING_READY).unwrap().2,
        format!(
            "ScaledObject {ns}/taken exists and is not this deployment's: delete it, or it stays as it is and this deployment is not autoscaled"
        )
    );
    let still = scaled_objects(&env).get("taken").await.unwrap();
    assert_eq!(
        still.data["spec"]["scaleTargetRef"]["name"], "something-else",
        "untouched"
    );
    assert!(still.owner_references().is_empty());
}

#[tokio::test]
async fn the_crd_refuses_what_its_rules_can_say() {
    let env = TestEnv::new("autoscaling-cel").await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let cases = [
        (
            json!({"minReplicas": 3, "maxReplicas": 2, "metrics": [{"type": "queueDepth", "target": "1"}]}),
            "spec.scaling.autoscaling.minReplicas",
            messages::AUTOSCALING_MIN_ABOVE_MAX,
        ),
        (
            json!({"maxReplicas": 2, "metrics": [{"type": "queueDepth", "target": "0"}]}),
            "spec.scaling.autoscaling.metrics[0].target",
            messages::AUTOSCALING_TARGET_NOT_DECIMAL,
        ),
        (
            json!({"maxReplicas": 2, "metrics": [{"type": "queueDepth", "target": "1", "activationTarget": "1e3"}]}),
            "spec.scaling.autoscaling.metrics[0].activationTarget",
            messages::AUTOSCALING_ACTIVATION_NOT_DECIMAL,
        ),
        (
            json!({"maxReplicas": 2, "metrics": [{"type": "prometheus", "target": "1"}]}),
            "spec.scaling.autoscaling.metrics[0].query",
            messages::AUTOSCALING_QUERY_REQUIRED,
        ),
        (
            json!({"maxReplicas": 2, "metrics": [{"type": "kvCacheUsage", "target": "1", "query": "up"}]}),
            "spec.scaling.autoscaling.metrics[0].query",
            messages::AUTOSCALING_QUERY_NOT_ALLOWED,
        ),
        (
            json!({"maxReplicas": 2, "metrics": [{"type": "queueDepth", "target": "1"}, {"type": "queueDepth", "target": "2"}]}),
            "spec.scaling.autoscaling.metrics",
            messages::AUTOSCALING_DUPLICATE_METRIC,
        ),
    ];
    for (i, (autoscaling, field, message)) in cases.into_iter().enumerate() {
        let name = format!("bad-{i}");
        let error = api
            .create(
                &PostParams::default(),
                &deployment(&name, autoscaling.clone()),
            )
            .await
            .expect_err(&format!("{autoscaling} must be refused"));
        let text = error.to_string();
        assert!(
            text.contains(&format!("{field}: Invalid value")) && text.contains(message),
            "{autoscaling}: {text}"
        );
    }
    // And a valid one is stored.
    eventually("a valid autoscaling spec stored", WAIT, || async {
        api.create(
            &PostParams::default(),
            &deployment(
                "good",
                json!({"minReplicas": 0, "maxReplicas": 2, "metrics": [{"type": "prometheus", "target": "2.5", "query": "sum(x)"}]}),
            ),
        )
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
    })
    .await;
}
