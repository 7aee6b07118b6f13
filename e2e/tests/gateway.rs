//! The gateway integration (docs/gateway.md) on the harness's cluster with the real Gateway
//! API v1.5.1 and Gateway API Inference Extension v1.5.0 CRDs: the real core (running as its
//! ServiceAccount with the shipped RBAC, so the RBAC is shown to be enough) and the real llm-d
//! provider, whose vLLM pods kube-scheduler places on KWOK's simulated GPU nodes so the
//! deployment reaches Running without any status written by the test.
//!
//! Simulated, because no gateway implementation runs here (Istio needs a data plane): the
//! Gateway's status and the HTTPRoute's per-parent status are written by the test from the
//! samples of what Istio's gateway controller writes (`e2e/fixtures/status-samples/`). The
//! endpoint picker Deployment is scheduled and becomes Available on the simulated CPU nodes
//! (no container runs there); the real endpoint picker runs as a host process instead, against
//! a vLLM deployment's pool (`the_real_endpoint_picker_loads_the_pool_and_its_pods`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use airunway_api::apply_body;
use airunway_api::constants::condition_types::{self, GATEWAY_READY};
use airunway_api::v1alpha1::{
    ConditionStatus, InferenceProviderConfig, ModelDeployment, NotReadyReason, Phase,
};
use airunway_e2e::dynamo_graph;
use airunway_e2e::stack::{self, FAST_HEALTH, Running};
use airunway_e2e::wait::{eventually, wait_deleted, wait_for};
use airunway_e2e::{TestEnv, cluster_lock, paths};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::Client;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, ObjectMeta, Patch,
    PatchParams, PostParams,
};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);
const MODEL: &str = "qwen3";
const GATEWAY_ADDRESS: &str = "172.18.255.200";
/// The endpoint picker llm-d registers in its gateway capability.
const LLMD_EPP_IMAGE: &str = "ghcr.io/llm-d/llm-d-inference-scheduler:v0.6.0";

fn resource(group: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural)
}

fn gateways(client: &Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        namespace,
        &resource("gateway.networking.k8s.io", "Gateway", "gateways"),
    )
}

fn routes(client: &Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        namespace,
        &resource("gateway.networking.k8s.io", "HTTPRoute", "httproutes"),
    )
}

fn pools(client: &Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        namespace,
        &resource(
            "inference.networking.k8s.io",
            "InferencePool",
            "inferencepools",
        ),
    )
}

fn sample(file: &str) -> Value {
    let text = std::fs::read_to_string(paths::status_samples_dir().join(file)).unwrap();
    serde_saphyr::from_str(&text).unwrap()
}

fn value(object: &DynamicObject) -> Value {
    serde_json::to_value(object).unwrap()
}

async fn create_namespace(client: &Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some(name.to_string()),
                    labels: Some([("airunway.ai/e2e".to_string(), "true".to_string())].into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .unwrap();
}

/// A Gateway shaped like the sample, with the status Istio writes once it is programmed.
async fn create_gateway(client: &Client, namespace: &str, name: &str, labelled: bool) {
    let mut gateway = sample("gateway-programmed.yaml");
    let status = gateway["status"].take();
    gateway.as_object_mut().unwrap().remove("status");
    gateway["metadata"] = json!({"name": name, "namespace": namespace});
    if labelled {
        gateway["metadata"]["labels"] = json!({"airunway.ai/inference-gateway": "true"});
    }
    let api = gateways(client, namespace);
    api.create(
        &PostParams::default(),
        &serde_json::from_value(gateway).unwrap(),
    )
    .await
    .unwrap();
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": status})),
    )
    .await
    .unwrap();
}

/// Plays the gateway controller: the route's per-parent status from the sample, for `gateway`.
async fn write_route_status(
    client: &Client,
    namespace: &str,
    name: &str,
    gateway_namespace: &str,
    gateway: &str,
    accepted: Option<(&str, &str)>,
) {
    let api = routes(client, namespace);
    let live = api.get(name).await.unwrap();
    let generation = live.metadata.generation.unwrap();
    let mut status = sample("httproute-accepted.yaml")["status"].clone();
    status["parents"][0]["parentRef"]["namespace"] = json!(gateway_namespace);
    status["parents"][0]["parentRef"]["name"] = json!(gateway);
    for condition in status["parents"][0]["conditions"].as_array_mut().unwrap() {
        condition["observedGeneration"] = json!(generation);
    }
    if let Some((reason, message)) = accepted {
        status["parents"][0]["conditions"][0]["status"] = json!("False");
        status["parents"][0]["conditions"][0]["reason"] = json!(reason);
        status["parents"][0]["conditions"][0]["message"] = json!(message);
    }
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": status})),
    )
    .await
    .unwrap();
}

async fn start(env: &TestEnv) -> (Running, Running) {
    airunway_e2e::providers::delete_all(&env.client).await;
    let core = start_core(env).await;
    let provider = start_llmd(env).await;
    (core, provider)
}

/// The core with the gateway integration, as its ServiceAccount.
async fn start_core(env: &TestEnv) -> Running {
    let core_identity =
        stack::service_account_identity(env, "deploy/core/rbac.yaml", "airunway-core").await;
    let mut args: Vec<&str> = FAST_HEALTH.to_vec();
    args.push("--resync-interval=10m");
    stack::start_core(env, &core_identity, &args, "core-gateway").await
}

/// The llm-d provider, as its ServiceAccount, once its InferenceProviderConfig is ready.
async fn start_llmd(env: &TestEnv) -> Running {
    let identity = stack::service_account_identity(
        env,
        "deploy/providers/llmd/rbac.yaml",
        "airunway-provider-llmd",
    )
    .await;
    let provider = stack::start_provider(
        env,
        "airunway-provider-llmd",
        &identity,
        &["--heartbeat-interval=1s"],
        "llmd-gw",
    )
    .await;
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, "llmd", WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    provider
}

fn deployment(name: &str, gateway: Value) -> ModelDeployment {
    serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": name},
        "spec": {"model": {"id": "Qwen/Qwen3-0.6B", "servedName": MODEL},
                 "engine": {"type": "vllm"},
                 "resources": {"gpu": {"count": 1}, "memory": "8Gi"},
                 "provider": {"name": "llmd"},
                 "gateway": gateway},
    }))
    .unwrap()
}

fn gateway_ready(md: &ModelDeployment) -> Option<(ConditionStatus, String, String)> {
    md.condition(GATEWAY_READY).map(|c| {
        (
            c.status,
            c.reason.clone().unwrap_or_default(),
            c.message.clone().unwrap_or_default(),
        )
    })
}

async fn wait_reason(mds: &Api<ModelDeployment>, name: &str, reason: &str) -> ModelDeployment {
    wait_for(
        mds,
        name,
        WAIT,
        &format!("GatewayReady reason {reason}"),
        |md| gateway_ready(md).is_some_and(|(_, r, _)| r == reason),
    )
    .await
}

fn listener_namespaces(gateway: &DynamicObject) -> Value {
    value(gateway)["spec"]["listeners"][0]["allowedRoutes"]["namespaces"].clone()
}

/// The end of a scenario: removes its Gateway (Gateways are cluster-wide: the next scenario
/// chooses among its own) and prints how long the scenario took.
async fn remove_gateway_and_report(
    env: &TestEnv,
    gateway_namespace: &str,
    scenario: &str,
    started: Instant,
) {
    gateways(&env.client, gateway_namespace)
        .delete("inference-gateway", &DeleteParams::default())
        .await
        .unwrap();
    eprintln!("{scenario}: {:.1}s", started.elapsed().as_secs_f64());
}

async fn metric(core: &Running, needle: &str) -> f64 {
    let (_, body) = airunway_e2e::http::get(&core.metrics_url()).await.unwrap();
    body.lines()
        .filter(|l| l.starts_with(needle))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// `kubectl get md <name> -o wide`: the API server's Table of the deployment (what kubectl
/// prints) has the priority-1 columns Replicas-Ready, Replicas-Desired, Gateway-Endpoint and
/// Message, and its row holds the values of the object it was made from (`includeObject`).
async fn wide_columns_show_the_status(client: &Client, namespace: &str, name: &str) {
    let request = http::Request::get(format!(
        "/apis/airunway.ai/v1alpha1/namespaces/{namespace}/modeldeployments/{name}?includeObject=Object"
    ))
    .header(
        "Accept",
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
    )
    .body(Vec::new())
    .unwrap();
    let table: Value = client.request(request).await.unwrap();
    assert_eq!(table["kind"], "Table", "{table}");
    let columns = table["columnDefinitions"].as_array().unwrap();
    let wide: Vec<&str> = columns
        .iter()
        .filter(|c| c["priority"] == 1)
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        wide,
        [
            "Replicas-Ready",
            "Replicas-Desired",
            "Gateway-Endpoint",
            "Message"
        ]
    );
    let row = &table["rows"][0];
    let cell = |column: &str| {
        let i = columns.iter().position(|c| c["name"] == column).unwrap();
        row["cells"][i].clone()
    };
    let status = &row["object"]["status"];
    assert_eq!(cell("Gateway-Endpoint"), json!(GATEWAY_ADDRESS), "{row}");
    assert_eq!(cell("Gateway-Endpoint"), status["gateway"]["endpoint"]);
    assert!(status["replicas"]["desired"].is_i64(), "{row}");
    assert_eq!(
        cell("Replicas-Desired"),
        status["replicas"]["desired"],
        "{row}"
    );
    // A missing value is a null cell (kubectl prints <none>), as a missing field indexes to
    // null here.
    assert_eq!(cell("Replicas-Ready"), status["replicas"]["ready"], "{row}");
    assert_eq!(cell("Message"), status["message"], "{row}");
    assert_eq!(cell("Phase"), status["phase"], "{row}");
}

#[tokio::test]
async fn a_running_deployment_is_routed_through_the_gateway_and_cleaned_up() {
    let _lock = cluster_lock().await;
    let started = Instant::now();
    let env = TestEnv::new("gateway-main").await;
    let gateway_namespace = format!("{}-gw", env.namespace);
    create_namespace(&env.client, &gateway_namespace).await;
    create_gateway(&env.client, &gateway_namespace, "inference-gateway", true).await;
    let (core, _provider) = start(&env).await;
    let ns = env.namespace.clone();
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &ns);

    mds.create(&PostParams::default(), &deployment("qwen", json!({})))
        .await
        .unwrap();
    // Before Running nothing is routed.
    let md = wait_for(&mds, "qwen", WAIT, "GatewayReady", |md| {
        md.condition(GATEWAY_READY).is_some()
    })
    .await;
    if md.phase() != Some(Phase::Running) {
        assert_eq!(gateway_ready(&md).unwrap().1, "DeploymentNotRunning");
    }
    wait_for(&mds, "qwen", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    let running_at = started.elapsed();

    // The pool selects the model's pods (labelled through the provider's pod template).
    let pool = wait_for(&pools(&env.client, &ns), "qwen", WAIT, "pool", |_| true).await;
    let pool = value(&pool);
    assert_eq!(
        pool["spec"]["selector"],
        json!({"matchLabels": {"airunway.ai/model-deployment": "qwen"}})
    );
    assert_eq!(pool["spec"]["targetPorts"], json!([{"number": 8000}]));
    // (The API server defaults group, kind and failureMode.)
    let picker_ref = &pool["spec"]["endpointPickerRef"];
    assert_eq!(
        (
            &picker_ref["kind"],
            &picker_ref["name"],
            &picker_ref["port"]
        ),
        (
            &json!("Service"),
            &json!("qwen-epp"),
            &json!({"number": 9002})
        )
    );
    assert_eq!(pool["metadata"]["ownerReferences"][0]["name"], "qwen");
    let managers: Vec<&str> = pool["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert_eq!(managers, ["airunway-core-gateway"]);
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &ns);
    let selected = pods
        .list(&ListParams::default().labels("airunway.ai/model-deployment=qwen"))
        .await
        .unwrap();
    assert!(
        !selected.items.is_empty(),
        "the pool's selector matches the model's pods"
    );
    for pod in &selected.items {
        let ports: Vec<i32> = pod.spec.as_ref().unwrap().containers[0]
            .ports
            .iter()
            .flatten()
            .map(|p| p.container_port)
            .collect();
        assert!(ports.contains(&8000), "{ports:?}");
    }

    // The endpoint picker stack, image and configuration from llm-d's gateway capability.
    let epp = "qwen-epp";
    Api::<ServiceAccount>::namespaced(env.client.clone(), &ns)
        .get(epp)
        .await
        .unwrap();
    let role = Api::<Role>::namespaced(env.client.clone(), &ns)
        .get(epp)
        .await
        .unwrap();
    assert!(
        role.rules
            .unwrap()
            .iter()
            .all(|r| r.verbs == ["get", "list", "watch"])
    );
    let binding = Api::<RoleBinding>::namespaced(env.client.clone(), &ns)
        .get(epp)
        .await
        .unwrap();
    assert_eq!(binding.subjects.unwrap()[0].name, epp);
    let config = Api::<ConfigMap>::namespaced(env.client.clone(), &ns)
        .get(epp)
        .await
        .unwrap();
    let plugins = config.data.unwrap()["default-plugins.yaml"].clone();
    assert!(
        plugins.contains("prefix-cache-scorer") && plugins.contains("decode-filter"),
        "llm-d's configuration: {plugins}"
    );
    let service = Api::<Service>::namespaced(env.client.clone(), &ns)
        .get(epp)
        .await
        .unwrap();
    assert_eq!(service.spec.unwrap().ports.unwrap()[0].port, 9002);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &ns);
    let picker = wait_for(&deployments, epp, WAIT, "endpoint picker Available", |d| {
        d.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Available" && c.status == "True")
            })
    })
    .await;
    let container = &picker.spec.unwrap().template.spec.unwrap().containers[0];
    assert_eq!(container.image.as_deref(), Some(LLMD_EPP_IMAGE));

    // The route: exact parent and backend, header match on the served name, long timeout.
    let route = value(&routes(&env.client, &ns).get("qwen").await.unwrap());
    assert_eq!(
        route["spec"]["parentRefs"],
        json!([{"group": "gateway.networking.k8s.io", "kind": "Gateway",
        "name": "inference-gateway", "namespace": gateway_namespace}])
    );
    let rule = &route["spec"]["rules"][0];
    assert_eq!(
        rule["backendRefs"],
        json!([{"group": "inference.networking.k8s.io", "kind": "InferencePool",
        "name": "qwen", "namespace": ns, "weight": 1}])
    );
    assert_eq!(
        rule["matches"][0]["headers"],
        json!([{"type": "Exact", "name": "X-Gateway-Model-Name", "value": MODEL}])
    );
    assert_eq!(rule["timeouts"]["request"], "300s");

    // The deployment's namespace is allowed on the Gateway's listener (it was `Same`).
    let gateway = gateways(&env.client, &gateway_namespace)
        .get("inference-gateway")
        .await
        .unwrap();
    let mut allowed = vec![gateway_namespace.clone(), ns.clone()];
    allowed.sort();
    assert_eq!(
        listener_namespaces(&gateway),
        json!({"from": "Selector", "selector": {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": allowed}]}})
    );

    // No status from the gateway yet: pending, with status.gateway from the Gateway's address.
    let md = wait_reason(&mds, "qwen", "RoutePending").await;
    // The pods serve but the route the deployment gets is not accepted: not Ready, and says
    // why (the provider folds the core's GatewayReady into Ready); still Running, so the route
    // stays.
    let blocked = wait_for(&mds, "qwen", WAIT, "Ready=False GatewayNotReady", |md| {
        md.condition(condition_types::READY)
            .is_some_and(|c| c.reason.as_deref() == Some("GatewayNotReady"))
    })
    .await;
    let blocked_status = blocked.status.clone().unwrap();
    assert_eq!(blocked_status.phase, Some(Phase::Running));
    let not_ready = blocked_status.not_ready.clone().unwrap();
    assert_eq!(not_ready.reason, NotReadyReason::GatewayNotReady);
    assert!(
        not_ready.message.starts_with(
            "The model server is ready but the gateway does not route to it (RoutePending: "
        ),
        "{}",
        not_ready.message
    );
    assert_eq!(
        blocked
            .condition(condition_types::RECONCILING)
            .map(|c| (c.status, c.reason.clone())),
        Some((ConditionStatus::True, Some("GatewayNotReady".to_string()))),
        "kstatus reads it as still in progress"
    );
    let status_gateway = md.status.clone().unwrap().gateway.unwrap();
    assert_eq!(status_gateway.endpoint.as_deref(), Some(GATEWAY_ADDRESS));
    assert_eq!(status_gateway.model_name.as_deref(), Some(MODEL));
    wide_columns_show_the_status(&env.client, &ns, "qwen").await;
    assert_eq!(
        status_gateway.gateway_namespace.as_deref(),
        Some(gateway_namespace.as_str())
    );
    assert_eq!(
        status_gateway.gateway_name.as_deref(),
        Some("inference-gateway")
    );

    // The gateway accepts the route: GatewayReady follows.
    write_route_status(
        &env.client,
        &ns,
        "qwen",
        &gateway_namespace,
        "inference-gateway",
        None,
    )
    .await;
    let md = wait_reason(&mds, "qwen", "GatewayConfigured").await;
    let (status, _, message) = gateway_ready(&md).unwrap();
    // Accepted: the provider's Ready follows, and status.notReady goes.
    let md = wait_for(&mds, "qwen", WAIT, "Ready=True", |md| {
        md.condition(condition_types::READY)
            .is_some_and(|c| c.status == ConditionStatus::True)
    })
    .await;
    assert_eq!(md.status.as_ref().unwrap().not_ready, None);
    assert_eq!(status, ConditionStatus::True);
    assert!(
        message.contains(&format!(
            "Gateway {gateway_namespace}/inference-gateway accepted the route"
        )),
        "{message}"
    );
    eprintln!(
        "GatewayReady=True {:.1}s after the deployment was Running",
        (started.elapsed() - running_at).as_secs_f64()
    );
    // Nothing changes, nothing is written: the status stays at the same resourceVersion.
    let version = md.metadata.resource_version.clone();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        mds.get("qwen").await.unwrap().metadata.resource_version,
        version,
        "no status churn"
    );

    // The endpoint picker Deployment deleted by hand is put back (watched by its label).
    let old_uid = deployments.get(epp).await.unwrap().metadata.uid;
    deployments
        .delete(epp, &DeleteParams::default())
        .await
        .unwrap();
    wait_for(&deployments, epp, WAIT, "endpoint picker restored", |d| {
        d.metadata.deletion_timestamp.is_none() && d.metadata.uid != old_uid
    })
    .await;
    // So are its other objects (each watched by the label, metadata only): the ConfigMap, the
    // Service and the RoleBinding deleted together come back without a resync (10 min here).
    let deleted_at = Instant::now();
    let config_maps: Api<ConfigMap> = Api::namespaced(env.client.clone(), &ns);
    let services: Api<Service> = Api::namespaced(env.client.clone(), &ns);
    let bindings: Api<RoleBinding> = Api::namespaced(env.client.clone(), &ns);
    let uids = (
        config_maps.get(epp).await.unwrap().metadata.uid,
        services.get(epp).await.unwrap().metadata.uid,
        bindings.get(epp).await.unwrap().metadata.uid,
    );
    config_maps
        .delete(epp, &DeleteParams::default())
        .await
        .unwrap();
    services
        .delete(epp, &DeleteParams::default())
        .await
        .unwrap();
    bindings
        .delete(epp, &DeleteParams::default())
        .await
        .unwrap();
    wait_for(&config_maps, epp, WAIT, "picker ConfigMap restored", |c| {
        c.metadata.uid != uids.0
    })
    .await;
    wait_for(&services, epp, WAIT, "picker Service restored", |s| {
        s.metadata.uid != uids.1
    })
    .await;
    wait_for(&bindings, epp, WAIT, "picker RoleBinding restored", |b| {
        b.metadata.uid != uids.2
    })
    .await;
    eprintln!(
        "picker ConfigMap, Service and RoleBinding restored {:.1}s after their deletion",
        deleted_at.elapsed().as_secs_f64()
    );

    // Refused by its parent: the route's own reason.
    write_route_status(
        &env.client,
        &ns,
        "qwen",
        &gateway_namespace,
        "inference-gateway",
        Some((
            "NotAllowedByListeners",
            "listener http does not allow this namespace",
        )),
    )
    .await;
    let md = wait_reason(&mds, "qwen", "NotAllowedByListeners").await;
    assert!(
        gateway_ready(&md)
            .unwrap()
            .2
            .ends_with("listener http does not allow this namespace")
    );

    // A user deletes the route: it is not recreated for this spec.
    routes(&env.client, &ns)
        .delete("qwen", &DeleteParams::default())
        .await
        .unwrap();
    let md = wait_reason(&mds, "qwen", "HTTPRouteDeleted").await;
    assert!(md.status.clone().unwrap().gateway.is_none());
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        routes(&env.client, &ns)
            .get_opt("qwen")
            .await
            .unwrap()
            .is_none(),
        "not recreated"
    );
    assert!(
        metric(
            &core,
            "airunway_gateway_actions_total{action=\"route_deleted_by_user\""
        )
        .await
            >= 1.0
    );

    // Disabled: pool, endpoint picker and route go; status.gateway removed; the namespace's
    // allowance taken back (its last routed deployment).
    mds.patch(
        "qwen",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"gateway": {"enabled": false}}})),
    )
    .await
    .unwrap();
    let md = wait_reason(&mds, "qwen", "GatewayDisabled").await;
    assert!(md.status.clone().unwrap().gateway.is_none());
    wait_deleted(&pools(&env.client, &ns), "qwen", WAIT).await;
    wait_deleted(&deployments, epp, WAIT).await;
    wait_deleted(
        &Api::<Service>::namespaced(env.client.clone(), &ns),
        epp,
        WAIT,
    )
    .await;
    let gateway = gateways(&env.client, &gateway_namespace)
        .get("inference-gateway")
        .await
        .unwrap();
    assert_eq!(listener_namespaces(&gateway), json!({"from": "Same"}));
    assert!(
        value(&gateway)["metadata"]["annotations"]
            .get("airunway.ai/allowed-route-namespaces")
            .is_none()
    );

    // Enabled again (a spec change): everything back, the route included.
    mds.patch(
        "qwen",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"gateway": {"enabled": true}}})),
    )
    .await
    .unwrap();
    wait_for(
        &routes(&env.client, &ns),
        "qwen",
        WAIT,
        "route recreated",
        |_| true,
    )
    .await;
    wait_for(
        &pools(&env.client, &ns),
        "qwen",
        WAIT,
        "pool recreated",
        |_| true,
    )
    .await;
    wait_reason(&mds, "qwen", "RoutePending").await;

    // Leaving Running: another model (llm-d recreates its objects) on nodes that do not
    // exist, so the new pods stay Pending; nothing routes to the deployment meanwhile.
    mds.patch(
        "qwen",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {
        "model": {"id": "Qwen/Qwen3-1.7B"},
        "nodeSelector": {"airunway.ai/e2e-pool": "no-such-nodes"},
        "provider": {"overrides": {"spec": {"progressDeadlineSeconds": 3}}}}})),
    )
    .await
    .unwrap();
    let md = wait_reason(&mds, "qwen", "DeploymentNotRunning").await;
    assert_ne!(md.phase(), Some(Phase::Running));
    wait_deleted(&routes(&env.client, &ns), "qwen", WAIT).await;
    wait_deleted(&pools(&env.client, &ns), "qwen", WAIT).await;
    wait_deleted(&deployments, epp, WAIT).await;
    let gateway = gateways(&env.client, &gateway_namespace)
        .get("inference-gateway")
        .await
        .unwrap();
    assert_eq!(listener_namespaces(&gateway), json!({"from": "Same"}));
    assert!(
        metric(
            &core,
            "airunway_gateway_actions_total{action=\"delete\",result=\"ok\""
        )
        .await
            >= 6.0
    );
    env.wait_for_event("GatewayResourcesApplied", |n| n.contains("HTTPRoute"))
        .await;
    env.wait_for_event("GatewayResourcesRemoved", |_| true)
        .await;

    mds.delete("qwen", &DeleteParams::default()).await.unwrap();
    wait_deleted(&mds, "qwen", WAIT).await;
    remove_gateway_and_report(&env, &gateway_namespace, "main gateway scenario", started).await;
}

#[tokio::test]
async fn several_gateways_own_routes_and_provider_managed_pools() {
    let _lock = cluster_lock().await;
    let started = Instant::now();
    let env = TestEnv::new("gateway-choices").await;
    let ns = env.namespace.clone();
    // Two Gateways, neither labelled, in the deployment's namespace.
    create_gateway(&env.client, &ns, "gw-a", false).await;
    create_gateway(&env.client, &ns, "gw-b", false).await;
    let (_core, _provider) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &ns);

    mds.create(&PostParams::default(), &deployment("choose", json!({})))
        .await
        .unwrap();
    let md = wait_reason(&mds, "choose", "NoGateway").await;
    let message = gateway_ready(&md).unwrap().2;
    assert!(
        message.contains("Gateways found")
            && message.contains("none is labelled airunway.ai/inference-gateway=\"true\""),
        "{message}"
    );
    assert!(
        message.contains(&format!("{ns}/gw-a")) && message.contains(&format!("{ns}/gw-b")),
        "{message}"
    );
    assert!(
        routes(&env.client, &ns)
            .get_opt("choose")
            .await
            .unwrap()
            .is_none()
    );
    // Labelling one chooses it (the Gateway watch wakes the deployment).
    gateways(&env.client, &ns)
        .patch(
            "gw-b",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {"airunway.ai/inference-gateway": "true"}}}),
            ),
        )
        .await
        .unwrap();
    let route = wait_for(&routes(&env.client, &ns), "choose", WAIT, "route", |_| true).await;
    assert_eq!(value(&route)["spec"]["parentRefs"][0]["name"], "gw-b");
    // Same namespace as the Gateway: its listener is left as it was.
    let gateway = gateways(&env.client, &ns).get("gw-b").await.unwrap();
    assert_eq!(listener_namespaces(&gateway), json!({"from": "Same"}));

    // Bring your own route: none is created; GatewayReady follows the user's route.
    mds.create(
        &PostParams::default(),
        &deployment("byo", json!({"httpRouteRef": "my-route"})),
    )
    .await
    .unwrap();
    let md = wait_reason(&mds, "byo", "HTTPRouteNotFound").await;
    assert!(gateway_ready(&md).unwrap().2.contains("my-route"));
    wait_for(&pools(&env.client, &ns), "byo", WAIT, "pool", |_| true).await;
    assert!(
        routes(&env.client, &ns)
            .get_opt("byo")
            .await
            .unwrap()
            .is_none(),
        "no route of ours"
    );
    let mut mine = sample("httproute-accepted.yaml");
    mine.as_object_mut().unwrap().remove("status");
    mine["metadata"] = json!({"name": "my-route", "namespace": ns});
    mine["spec"]["parentRefs"][0]["namespace"] = json!(ns);
    mine["spec"]["parentRefs"][0]["name"] = json!("gw-b");
    mine["spec"]["rules"][0]["backendRefs"][0]["namespace"] = json!(ns);
    mine["spec"]["rules"][0]["backendRefs"][0]["name"] = json!("byo");
    routes(&env.client, &ns)
        .create(
            &PostParams::default(),
            &serde_json::from_value(mine).unwrap(),
        )
        .await
        .unwrap();
    // The user's route is watched (metadata only, routes without our label): its creation,
    // then its status written by the Gateway, reach the condition without a resync (10 min
    // here) or a spec change.
    let watched = Instant::now();
    wait_reason(&mds, "byo", "RoutePending").await;
    write_route_status(&env.client, &ns, "my-route", &ns, "gw-b", None).await;
    let md = wait_reason(&mds, "byo", "GatewayConfigured").await;
    assert!(
        gateway_ready(&md)
            .unwrap()
            .2
            .contains(&format!("HTTPRoute {ns}/my-route is the user's")),
        "{md:?}"
    );
    write_route_status(
        &env.client,
        &ns,
        "my-route",
        &ns,
        "gw-b",
        Some((
            "NotAllowedByListeners",
            "listener http does not allow this namespace",
        )),
    )
    .await;
    wait_reason(&mds, "byo", "NotAllowedByListeners").await;
    write_route_status(&env.client, &ns, "my-route", &ns, "gw-b", None).await;
    wait_reason(&mds, "byo", "GatewayConfigured").await;
    eprintln!(
        "the user's route followed (created, accepted, refused, accepted) in {:.1}s",
        watched.elapsed().as_secs_f64()
    );
    mds.patch(
        "byo",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"gateway": {"modelName": "byo-model"}}})),
    )
    .await
    .unwrap();
    let md = wait_for(&mds, "byo", WAIT, "the new model name", |md| {
        md.status
            .as_ref()
            .and_then(|s| s.gateway.as_ref())
            .and_then(|g| g.model_name.as_deref())
            == Some("byo-model")
    })
    .await;
    assert_eq!(gateway_ready(&md).unwrap().1, "GatewayConfigured");
    assert!(
        routes(&env.client, &ns)
            .get_opt("byo")
            .await
            .unwrap()
            .is_none()
    );

    // A provider that manages its own pool and endpoint picker (as Dynamo's does upstream):
    // an administrator sets the capability on llm-d's registration; the core then creates
    // only the route, to the provider's pool, once that pool exists. Such a provider makes its
    // pool only when asked, so the deployment sets `enabled: true`.
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    let ipc = ipcs.get("llmd").await.unwrap();
    let mut engines = serde_json::to_value(&ipc.spec.capabilities).unwrap()["engines"].clone();
    engines[0]["gateway"] =
        json!({"managesInferencePool": true, "inferencePoolNamePattern": "{name}-pool"});
    ipcs.patch(
        "llmd",
        &PatchParams::apply("cluster-admin").force(),
        &apply_body::apply(&json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig",
        "metadata": {"name": "llmd"}, "spec": {"capabilities": {"engines": engines}}})),
    )
    .await
    .unwrap();
    mds.create(
        &PostParams::default(),
        &deployment("managed", json!({"enabled": true})),
    )
    .await
    .unwrap();
    let md = wait_reason(&mds, "managed", "InferencePoolNotFound").await;
    assert!(
        gateway_ready(&md)
            .unwrap()
            .2
            .contains(&format!("InferencePool {ns}/managed-pool"))
    );
    // The provider's pool appears (created here as the provider would).
    let mut pool = sample("inferencepool-accepted.yaml");
    pool.as_object_mut().unwrap().remove("status");
    pool["metadata"] = json!({"name": "managed-pool", "namespace": ns});
    pools(&env.client, &ns)
        .create(
            &PostParams::default(),
            &serde_json::from_value(pool).unwrap(),
        )
        .await
        .unwrap();
    let route = wait_for(
        &routes(&env.client, &ns),
        "managed",
        WAIT,
        "route to the provider's pool",
        |_| true,
    )
    .await;
    assert_eq!(
        value(&route)["spec"]["rules"][0]["backendRefs"][0]["name"],
        "managed-pool"
    );
    wait_reason(&mds, "managed", "RoutePending").await;
    assert!(
        pools(&env.client, &ns)
            .get_opt("managed")
            .await
            .unwrap()
            .is_none(),
        "no pool of ours"
    );
    assert!(
        Api::<Deployment>::namespaced(env.client.clone(), &ns)
            .get_opt("managed-epp")
            .await
            .unwrap()
            .is_none(),
        "no picker of ours"
    );

    for name in ["choose", "byo", "managed"] {
        mds.delete(name, &DeleteParams::default()).await.unwrap();
    }
    for name in ["choose", "byo", "managed"] {
        wait_deleted(&mds, name, WAIT).await;
    }
    eventually(
        "the provider's pool kept",
        Duration::from_secs(5),
        || async {
            match pools(&env.client, &ns).get_opt("managed-pool").await {
                Ok(Some(_)) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    for name in ["gw-a", "gw-b"] {
        gateways(&env.client, &ns)
            .delete(name, &DeleteParams::default())
            .await
            .unwrap();
    }
    eprintln!(
        "gateway choices scenario: {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

/// With the CRDs served but no Gateway in the cluster, a deployment that did not ask for the
/// integration (`spec.gateway.enabled` unset) gets no `GatewayReady` at any point (one status
/// write fewer before Running and one fewer at Running), while `enabled: true` is told why.
/// A Gateway created later is noticed through the Gateway watch (the core resyncs every 10 min
/// here, so nothing polls) and both are routed; when it goes, both are cleaned up again.
#[tokio::test]
async fn without_a_gateway_only_a_deployment_that_asked_gets_a_condition() {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, watcher};
    let _lock = cluster_lock().await;
    let started = Instant::now();
    let env = TestEnv::new("gateway-none").await;
    let ns = env.namespace.clone();
    // No Gateway anywhere (an earlier scenario that failed may have left one).
    let all_gateways: Api<DynamicObject> = Api::all_with(
        env.client.clone(),
        &resource("gateway.networking.k8s.io", "Gateway", "gateways"),
    );
    for gateway in all_gateways
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
    {
        let namespace = gateway.metadata.namespace.clone().unwrap();
        gateways(&env.client, &namespace)
            .delete(
                &gateway.metadata.name.clone().unwrap(),
                &DeleteParams::default(),
            )
            .await
            .unwrap();
    }
    eventually("no Gateway in the cluster", WAIT, || async {
        let left = all_gateways
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len();
        if left == 0 {
            Ok(())
        } else {
            Err(format!("{left} left"))
        }
    })
    .await;
    let (core, _provider) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &ns);

    // Every version of "quiet" the API server stores, from its creation on.
    let versions = std::sync::Arc::new(std::sync::Mutex::new(Vec::<ModelDeployment>::new()));
    let watch = {
        let versions = versions.clone();
        let stream = watcher::watcher(
            mds.clone(),
            watcher::Config::default().fields("metadata.name=quiet"),
        )
        .applied_objects();
        tokio::spawn(async move {
            futures::pin_mut!(stream);
            while let Some(Ok(md)) = stream.next().await {
                versions.lock().unwrap().push(md);
            }
        })
    };
    mds.create(&PostParams::default(), &deployment("quiet", json!({})))
        .await
        .unwrap();
    mds.create(
        &PostParams::default(),
        &deployment("asked", json!({"enabled": true})),
    )
    .await
    .unwrap();
    let asked = wait_for(&mds, "asked", WAIT, "Running and NoGateway", |md| {
        md.phase() == Some(Phase::Running)
            && gateway_ready(md).is_some_and(|(_, r, _)| r == "NoGateway")
    })
    .await;
    let (status, _, message) = gateway_ready(&asked).unwrap();
    assert_eq!(status, ConditionStatus::False);
    assert!(
        message.contains("no Gateway found in the cluster") && message.contains("create a Gateway"),
        "{message}"
    );
    wait_for(&mds, "quiet", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    // The core has decided for "asked" (created after "quiet") at Running; give "quiet"'s own
    // reconcile at Running a moment, then look at every version it had.
    tokio::time::sleep(Duration::from_secs(2)).await;
    {
        let seen = versions.lock().unwrap();
        assert!(
            seen.iter().any(|md| md.phase() == Some(Phase::Running)),
            "the watch saw Running"
        );
        for md in seen.iter() {
            assert!(
                md.condition(GATEWAY_READY).is_none()
                    && md
                        .status
                        .as_ref()
                        .and_then(|s| s.gateway.as_ref())
                        .is_none(),
                "version {:?} of quiet carries gateway status: {:?}",
                md.metadata.resource_version,
                md.status
            );
        }
        eprintln!("quiet: {} versions, none with GatewayReady", seen.len());
    }
    assert_eq!(metric(&core, "airunway_gateway_actions_total").await, 0.0);
    assert!(
        pools(&env.client, &ns)
            .get_opt("quiet")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        routes(&env.client, &ns)
            .get_opt("quiet")
            .await
            .unwrap()
            .is_none()
    );

    // A Gateway appears: the Gateway watch wakes both and both are routed.
    let appeared = Instant::now();
    create_gateway(&env.client, &ns, "late-gateway", false).await;
    for name in ["quiet", "asked"] {
        let route = wait_for(&routes(&env.client, &ns), name, WAIT, "route", |_| true).await;
        assert_eq!(
            value(&route)["spec"]["parentRefs"][0]["name"],
            "late-gateway"
        );
        wait_for(&pools(&env.client, &ns), name, WAIT, "pool", |_| true).await;
        let md = wait_reason(&mds, name, "RoutePending").await;
        assert_eq!(
            md.status
                .unwrap()
                .gateway
                .unwrap()
                .gateway_namespace
                .as_deref(),
            Some(ns.as_str())
        );
    }
    eprintln!(
        "routed {:.1}s after the Gateway was created",
        appeared.elapsed().as_secs_f64()
    );

    // It goes: both are cleaned up; only the one that asked keeps a condition.
    gateways(&env.client, &ns)
        .delete("late-gateway", &DeleteParams::default())
        .await
        .unwrap();
    for name in ["quiet", "asked"] {
        wait_deleted(&routes(&env.client, &ns), name, WAIT).await;
        wait_deleted(&pools(&env.client, &ns), name, WAIT).await;
    }
    wait_reason(&mds, "asked", "NoGateway").await;
    let quiet = wait_for(&mds, "quiet", WAIT, "no GatewayReady", |md| {
        md.condition(GATEWAY_READY).is_none()
    })
    .await;
    assert!(quiet.status.unwrap().gateway.is_none());

    watch.abort();
    for name in ["quiet", "asked"] {
        mds.delete(name, &DeleteParams::default()).await.unwrap();
    }
    for name in ["quiet", "asked"] {
        wait_deleted(&mds, name, WAIT).await;
    }
    eprintln!(
        "no-Gateway scenario: {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

/// Dynamo manages its own pool: asked for the gateway, the real Dynamo provider gives the graph
/// an `epp` service, and the Dynamo operator (simulated: its Go module is not served here) does
/// what ai-dynamo/dynamo's `reconcileEPPResources` does for such a graph: it creates the
/// InferencePool `<graph>-pool` selecting the graph's workers. The core creates only the route
/// to that pool: no pool and no endpoint picker of its own. A Dynamo deployment that did not
/// ask gets no `epp` service, no route and no condition.
#[tokio::test]
async fn a_dynamo_deployment_gets_only_a_route_to_the_pool_dynamo_makes() {
    let _lock = cluster_lock().await;
    let started = Instant::now();
    let env = TestEnv::new("gateway-dynamo").await;
    let ns = env.namespace.clone();
    create_gateway(&env.client, &ns, "dynamo-gateway", true).await;
    let (_core, _provider) = start(&env).await;
    let dynamo_identity = stack::service_account_identity(
        &env,
        "deploy/providers/dynamo/rbac.yaml",
        "airunway-provider-dynamo",
    )
    .await;
    let _dynamo = stack::start_provider(
        &env,
        "airunway-provider-dynamo",
        &dynamo_identity,
        &["--heartbeat-interval=1s"],
        "dynamo-gw",
    )
    .await;
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, "dynamo", WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &ns);
    let dgds: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        &ns,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("nvidia.com", "v1beta1", "DynamoGraphDeployment"),
            "dynamographdeployments",
        ),
    );
    let dynamo_deployment = |name: &str, gateway: Value| -> ModelDeployment {
        let mut md = deployment(name, gateway);
        md.spec.provider = Some(serde_json::from_value(json!({"name": "dynamo"})).unwrap());
        md
    };
    mds.create(
        &PostParams::default(),
        &dynamo_deployment("dyn", json!({"enabled": true})),
    )
    .await
    .unwrap();
    mds.create(
        &PostParams::default(),
        &dynamo_deployment("dyn-quiet", json!({})),
    )
    .await
    .unwrap();

    // The graph (v1beta1, Dynamo >= 1.5) asks Dynamo's operator for its native endpoint picker
    // (and so for the pool).
    let dgd = wait_for(&dgds, "dyn", WAIT, "DynamoGraphDeployment", |_| true).await;
    let dgd = value(&dgd);
    let epp = dynamo_graph::component(&dgd, "Epp");
    assert_eq!(epp["type"], "epp", "{dgd}");
    assert!(epp.get("eppConfig").is_none(), "{epp}");
    let worker = dynamo_graph::component(&dgd, "VllmWorker");
    assert_eq!(worker["frontendSidecar"], "sidecar-frontend", "{worker}");
    assert_eq!(
        dynamo_graph::container(worker, "sidecar-frontend")["args"],
        json!(["-m", "dynamo.frontend", "--router-mode", "direct"])
    );
    let quiet_dgd = wait_for(&dgds, "dyn-quiet", WAIT, "DynamoGraphDeployment", |_| true).await;
    assert!(dynamo_graph::component(&value(&quiet_dgd), "Epp").is_null());

    // The Dynamo operator reports both graphs successful (its real status).
    let status = paths::upstream_status_sample("dgd-v1beta1-successful.yaml").unwrap();
    for name in ["dyn", "dyn-quiet"] {
        dgds.patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": status})),
        )
        .await
        .unwrap();
    }
    // Running, and waiting for Dynamo's pool.
    let md = wait_for(
        &mds,
        "dyn",
        WAIT,
        "Running and InferencePoolNotFound",
        |md| {
            md.phase() == Some(Phase::Running)
                && gateway_ready(md).is_some_and(|(_, r, _)| r == "InferencePoolNotFound")
        },
    )
    .await;
    let message = gateway_ready(&md).unwrap().2;
    assert!(
        message.contains(&format!("InferencePool {ns}/dyn-pool")) && message.contains("dynamo"),
        "{message}"
    );

    // The operator creates the pool as ai-dynamo/dynamo's epp.GenerateInferencePool does.
    // Dynamo >= 1.5 derives the graph's Dynamo namespace from its namespace and name.
    let dynamo_namespace = format!("{ns}-dyn");
    let mut pool = sample("inferencepool-accepted.yaml");
    pool.as_object_mut().unwrap().remove("status");
    pool["metadata"] = json!({"name": "dyn-pool", "namespace": ns,
        "labels": {"nvidia.com/dynamo-graph-deployment-name": "dyn",
                   "nvidia.com/dynamo-component": "Epp",
                   "nvidia.com/dynamo-component-type": "epp"},
        "ownerReferences": [{"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeployment",
            "name": "dyn", "uid": dgd["metadata"]["uid"], "controller": true,
            "blockOwnerDeletion": true}]});
    pool["spec"] = json!({
        "targetPorts": [{"number": 8000}],
        "selector": {"matchLabels": {"nvidia.com/dynamo-component-type": "worker",
                                     "nvidia.com/dynamo-namespace": dynamo_namespace}},
        "endpointPickerRef": {"kind": "Service", "name": "dyn-epp", "port": {"number": 9002}},
    });
    pools(&env.client, &ns)
        .create(
            &PostParams::default(),
            &serde_json::from_value(pool).unwrap(),
        )
        .await
        .unwrap();

    // The core routes to it, and creates nothing else.
    let route = wait_for(&routes(&env.client, &ns), "dyn", WAIT, "route", |_| true).await;
    let route = value(&route);
    assert_eq!(route["spec"]["parentRefs"][0]["name"], "dynamo-gateway");
    assert_eq!(
        route["spec"]["rules"][0]["backendRefs"][0],
        json!({"group": "inference.networking.k8s.io", "kind": "InferencePool",
               "name": "dyn-pool", "namespace": ns, "weight": 1})
    );
    wait_reason(&mds, "dyn", "RoutePending").await;
    let names: Vec<String> = pools(&env.client, &ns)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["dyn-pool"], "no pool of the core's");
    let pickers = Api::<Deployment>::namespaced(env.client.clone(), &ns)
        .list(&ListParams::default().labels("airunway.ai/gateway-of"))
        .await
        .unwrap();
    assert!(pickers.items.is_empty(), "no endpoint picker of the core's");
    write_route_status(&env.client, &ns, "dyn", &ns, "dynamo-gateway", None).await;
    let md = wait_reason(&mds, "dyn", "GatewayConfigured").await;
    let gateway = md.status.unwrap().gateway.unwrap();
    assert_eq!(gateway.endpoint.as_deref(), Some(GATEWAY_ADDRESS));
    assert_eq!(gateway.model_name.as_deref(), Some(MODEL));

    // The one that did not ask: Running, not routed, no condition.
    let quiet = wait_for(&mds, "dyn-quiet", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    assert!(gateway_ready(&quiet).is_none(), "{:?}", quiet.status);
    assert!(
        routes(&env.client, &ns)
            .get_opt("dyn-quiet")
            .await
            .unwrap()
            .is_none()
    );

    for name in ["dyn", "dyn-quiet"] {
        mds.delete(name, &DeleteParams::default()).await.unwrap();
    }
    for name in ["dyn", "dyn-quiet"] {
        wait_deleted(&mds, name, WAIT).await;
    }
    gateways(&env.client, &ns)
        .delete("dynamo-gateway", &DeleteParams::default())
        .await
        .unwrap();
    eprintln!("Dynamo scenario: {:.1}s", started.elapsed().as_secs_f64());
}

#[tokio::test]
async fn the_inference_extension_crd_going_and_coming_back_needs_no_restart() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let _lock = cluster_lock().await;
    let started = Instant::now();
    let env = TestEnv::new("gateway-crds").await;
    let ns = env.namespace.clone();
    let gateway_namespace = format!("{ns}-gw");
    create_namespace(&env.client, &gateway_namespace).await;
    create_gateway(&env.client, &gateway_namespace, "inference-gateway", true).await;
    let (_core, _provider) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &ns);
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let name = "inferencepools.inference.networking.k8s.io";

    // The InferencePool CRD goes away while the core runs.
    let mut saved = crds.get(name).await.unwrap();
    crds.delete(name, &DeleteParams::default()).await.unwrap();
    wait_deleted(&crds, name, WAIT).await;
    mds.create(
        &PostParams::default(),
        &deployment("asked", json!({"enabled": true})),
    )
    .await
    .unwrap();
    // Running, but it cannot be routed, and it says why.
    let md = wait_for(&mds, "asked", WAIT, "Running and CRDsNotAvailable", |md| {
        md.phase() == Some(Phase::Running)
            && gateway_ready(md).is_some_and(|(_, r, _)| r == "CRDsNotAvailable")
    })
    .await;
    let message = gateway_ready(&md).unwrap().2;
    assert!(message.contains(name), "{message}");
    assert!(md.status.unwrap().gateway.is_none());

    // It comes back: the same core routes the deployment.
    saved.metadata = ObjectMeta {
        name: Some(name.to_string()),
        labels: saved.metadata.labels.clone(),
        annotations: saved.metadata.annotations.clone(),
        ..Default::default()
    };
    saved.status = None;
    crds.create(&PostParams::default(), &saved).await.unwrap();
    let back = Instant::now();
    wait_for(
        &routes(&env.client, &ns),
        "asked",
        WAIT,
        "route after the CRD returned",
        |_| true,
    )
    .await;
    wait_for(
        &pools(&env.client, &ns),
        "asked",
        WAIT,
        "pool after the CRD returned",
        |_| true,
    )
    .await;
    wait_reason(&mds, "asked", "RoutePending").await;
    eprintln!(
        "routed {:.1}s after the CRD was created again",
        back.elapsed().as_secs_f64()
    );

    let gateway = gateways(&env.client, &gateway_namespace)
        .get("inference-gateway")
        .await
        .unwrap();
    assert_eq!(
        listener_namespaces(&gateway)["selector"]["matchExpressions"][0]["values"],
        json!([ns, gateway_namespace]),
        "sorted"
    );

    // Deleted and created again while the deployment is routed: its pool went with the CRD.
    // The watch cache may still hold that pool (with the current inputs hash), but it is older
    // than the new CRD, so it counts as gone and the pool is applied again at once (the core
    // resyncs every 10 min here).
    let old_pool = pools(&env.client, &ns)
        .get("asked")
        .await
        .unwrap()
        .metadata
        .uid;
    let mut again = crds.get(name).await.unwrap();
    crds.delete(name, &DeleteParams::default()).await.unwrap();
    wait_deleted(&crds, name, WAIT).await;
    wait_reason(&mds, "asked", "CRDsNotAvailable").await;
    again.metadata = ObjectMeta {
        name: Some(name.to_string()),
        labels: again.metadata.labels.clone(),
        annotations: again.metadata.annotations.clone(),
        ..Default::default()
    };
    again.status = None;
    crds.create(&PostParams::default(), &again).await.unwrap();
    let recreated = Instant::now();
    wait_for(
        &pools(&env.client, &ns),
        "asked",
        WAIT,
        "a new pool after the CRD was re-created",
        |p| p.metadata.uid != old_pool,
    )
    .await;
    wait_reason(&mds, "asked", "RoutePending").await;
    eprintln!(
        "pool back {:.1}s after the CRD was re-created while routed",
        recreated.elapsed().as_secs_f64()
    );

    // Deleting the namespace's last routed deployment takes its allowance back (while the
    // provider's finalizer holds the deployment, the core sees it being deleted).
    let deleting = Instant::now();
    mds.delete("asked", &DeleteParams::default()).await.unwrap();
    wait_deleted(&mds, "asked", WAIT).await;
    eprintln!(
        "deployment deleted in {:.1}s",
        deleting.elapsed().as_secs_f64()
    );
    eventually("the listener back to Same", WAIT, || async {
        let gateway = gateways(&env.client, &gateway_namespace)
            .get("inference-gateway")
            .await
            .unwrap();
        let namespaces = listener_namespaces(&gateway);
        if namespaces == json!({"from": "Same"}) {
            Ok(())
        } else {
            Err(namespaces.to_string())
        }
    })
    .await;
    remove_gateway_and_report(&env, &gateway_namespace, "CRD scenario", started).await;
}

fn rewrites(client: &Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        namespace,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(
                "inference.networking.x-k8s.io",
                "v1alpha2",
                "InferenceModelRewrite",
            ),
            "inferencemodelrewrites",
        ),
    )
}

/// A listener allowing exactly `namespaces` (sorted) by name.
fn allowing(namespaces: &[&str]) -> Value {
    let mut values: Vec<&str> = namespaces.to_vec();
    values.sort();
    json!({"from": "Selector", "selector": {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": values}]}})
}

/// Routing control (docs/gateway.md): a deployment names the user's InferencePool
/// (`spec.gateway.poolRef`) and gets only a route to it, or names its own Gateway
/// (`spec.gateway.gatewayRef`) and is routed through it under the usual allowance and clean-up
/// rules, with `status.gateway.gatewayName`; and a deployment's LoRA adapters are routed by name
/// (the route matches each, an InferenceModelRewrite names them to the pool's picker, which the
/// real endpoint picker loads, with the LoRA affinity scorer in its configuration).
#[tokio::test]
async fn routing_control_pool_ref_gateway_ref_and_adapters() {
    let _lock = cluster_lock().await;
    let started = Instant::now();
    let env = TestEnv::new("gateway-control").await;
    let ns = env.namespace.clone();
    let gateway_namespace = format!("{ns}-gw");
    let edge = format!("{ns}-edge");
    create_namespace(&env.client, &gateway_namespace).await;
    create_gateway(&env.client, &gateway_namespace, "inference-gateway", true).await;
    create_namespace(&env.client, &edge).await;
    create_gateway(&env.client, &edge, "team-gw", false).await;
    let (_core, _llmd) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &ns);
    let pickers: Api<Deployment> = Api::namespaced(env.client.clone(), &ns);

    // 1. poolRef, named before the pool exists: said, nothing created.
    mds.create(
        &PostParams::default(),
        &deployment("pooled", json!({"poolRef": "shared-pool"})),
    )
    .await
    .unwrap();
    let md = wait_reason(&mds, "pooled", "InferencePoolNotFound").await;
    assert_eq!(
        gateway_ready(&md).unwrap().2,
        format!(
            "spec.gateway.poolRef names InferencePool {ns}/shared-pool, which does not exist; create it (inference.networking.k8s.io/v1, selecting this deployment's pods) or remove poolRef to have AI Runway create one"
        )
    );
    assert!(
        routes(&env.client, &ns)
            .get_opt("pooled")
            .await
            .unwrap()
            .is_none()
    );
    // The user creates it, with a selector and picker of their own: the pool watch routes the
    // deployment (no resync: 10 min here).
    let mut pool = sample("inferencepool-accepted.yaml");
    pool.as_object_mut().unwrap().remove("status");
    pool["metadata"] = json!({"name": "shared-pool", "namespace": ns});
    pool["spec"]["selector"] = json!({"matchLabels": {"app.example/pool": "shared"}});
    pool["spec"]["endpointPickerRef"]["name"] = json!("shared-epp");
    let created = pools(&env.client, &ns)
        .create(
            &PostParams::default(),
            &serde_json::from_value(pool).unwrap(),
        )
        .await
        .unwrap();
    let route = wait_for(
        &routes(&env.client, &ns),
        "pooled",
        WAIT,
        "route to the user's pool",
        |_| true,
    )
    .await;
    assert_eq!(
        value(&route)["spec"]["rules"][0]["backendRefs"],
        json!([{"group": "inference.networking.k8s.io", "kind": "InferencePool",
                "name": "shared-pool", "namespace": ns, "weight": 1}])
    );
    assert_eq!(
        value(&route)["spec"]["parentRefs"][0]["name"],
        "inference-gateway",
        "the cluster-wide Gateway"
    );
    wait_reason(&mds, "pooled", "RoutePending").await;
    assert!(
        pools(&env.client, &ns)
            .get_opt("pooled")
            .await
            .unwrap()
            .is_none(),
        "no pool of ours"
    );
    assert!(
        pickers.get_opt("pooled-epp").await.unwrap().is_none(),
        "no picker of ours"
    );
    let kept = pools(&env.client, &ns).get("shared-pool").await.unwrap();
    assert_eq!(
        kept.metadata.resource_version, created.metadata.resource_version,
        "the user's pool is never written"
    );
    write_route_status(
        &env.client,
        &ns,
        "pooled",
        &gateway_namespace,
        "inference-gateway",
        None,
    )
    .await;
    let md = wait_reason(&mds, "pooled", "GatewayConfigured").await;
    assert_eq!(
        gateway_ready(&md).unwrap().2,
        format!(
            "InferencePool {ns}/shared-pool and HTTPRoute {ns}/pooled exist; Gateway {gateway_namespace}/inference-gateway accepted the route"
        )
    );

    // 2. gatewayRef: routed through that Gateway rather than the labelled one; its listener
    //    opened to the namespace; status.gateway names it.
    mds.create(
        &PostParams::default(),
        &deployment(
            "edge",
            json!({"gatewayRef": {"name": "team-gw", "namespace": edge}}),
        ),
    )
    .await
    .unwrap();
    let route = wait_for(
        &routes(&env.client, &ns),
        "edge",
        WAIT,
        "route through team-gw",
        |_| true,
    )
    .await;
    assert_eq!(
        value(&route)["spec"]["parentRefs"],
        json!([{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "team-gw", "namespace": edge}])
    );
    wait_listener_of(
        &env.client,
        &edge,
        "team-gw",
        "team-gw opened to the namespace",
        allowing(&[&ns, &edge]),
    )
    .await;
    wait_listener(
        &env.client,
        &gateway_namespace,
        "the shared Gateway still open (pooled)",
        allowing(&[&ns, &gateway_namespace]),
    )
    .await;
    write_route_status(&env.client, &ns, "edge", &edge, "team-gw", None).await;
    let md = wait_reason(&mds, "edge", "GatewayConfigured").await;
    assert!(
        gateway_ready(&md)
            .unwrap()
            .2
            .ends_with(&format!("Gateway {edge}/team-gw accepted the route")),
        "{md:?}"
    );
    let fields = md.status.clone().unwrap().gateway.unwrap();
    assert_eq!(
        (
            fields.gateway_name.as_deref(),
            fields.gateway_namespace.as_deref(),
            fields.endpoint.as_deref()
        ),
        (Some("team-gw"), Some(edge.as_str()), Some(GATEWAY_ADDRESS))
    );
    // A Gateway that does not exist: said; the route removed and the namespace's allowance on
    // team-gw taken back, while `pooled` keeps it on the shared Gateway.
    mds.patch(
        "edge",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"gateway": {"gatewayRef": {"name": "missing"}}}})),
    )
    .await
    .unwrap();
    let md = wait_reason(&mds, "edge", "NoGateway").await;
    assert_eq!(
        gateway_ready(&md).unwrap().2,
        format!(
            "spec.gateway.gatewayRef names Gateway {edge}/missing, which does not exist; create it, or correct or remove spec.gateway.gatewayRef (without it the cluster-wide Gateway is used)"
        )
    );
    wait_deleted(&routes(&env.client, &ns), "edge", WAIT).await;
    wait_listener_of(
        &env.client,
        &edge,
        "team-gw",
        "team-gw back to Same",
        json!({"from": "Same"}),
    )
    .await;
    wait_listener(
        &env.client,
        &gateway_namespace,
        "the shared Gateway kept",
        allowing(&[&ns, &gateway_namespace]),
    )
    .await;
    eprintln!(
        "poolRef and gatewayRef: {:.1}s",
        started.elapsed().as_secs_f64()
    );

    // 3. LoRA adapters, on the direct vLLM provider (its picker is the core's default, the
    //    one built here) with two replicas on the simulated GPU nodes.
    let adapters_at = Instant::now();
    let vllm_identity = stack::service_account_identity(
        &env,
        "deploy/providers/vllm/rbac.yaml",
        "airunway-provider-vllm",
    )
    .await;
    let _vllm = stack::start_provider(
        &env,
        "airunway-provider-vllm",
        &vllm_identity,
        &["--heartbeat-interval=1s"],
        "vllm-gw-lora",
    )
    .await;
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    let registration = wait_for(&ipcs, "vllm", WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    let lora = registration
        .spec
        .capabilities
        .as_ref()
        .map(|c| c.engine_capabilities())
        .unwrap_or_default()
        .into_iter()
        .any(|c| c.name == airunway_api::v1alpha1::EngineType::Vllm && c.lora_support);
    let offline = format!(
        "127.0.0.1:{}/vllm/vllm-openai:offline",
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    );
    let with_adapters = |adapters: Value| -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "lora"},
            "spec": {"model": {"id": "Qwen/Qwen3-0.6B", "servedName": MODEL},
                     "engine": {"type": "vllm", "image": offline},
                     "resources": {"gpu": {"count": 1}, "memory": "8Gi"},
                     "scaling": {"replicas": 2},
                     "provider": {"name": "vllm"},
                     "adapters": adapters},
        }))
        .unwrap()
    };
    mds.create(
        &PostParams::default(),
        &with_adapters(json!([{"name": "sql-lora", "source": "hf://org/sql-lora"},
                              {"name": "chat-lora", "source": "org/chat-lora"}])),
    )
    .await
    .unwrap();
    assert!(
        lora,
        "the vLLM provider's registration declares loraSupport for vllm"
    );
    wait_for(&mds, "lora", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    let route = wait_for(&routes(&env.client, &ns), "lora", WAIT, "route", |_| true).await;
    let matched: Vec<Value> = value(&route)["spec"]["rules"][0]["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["headers"][0]["value"].clone())
        .collect();
    assert_eq!(
        matched,
        [json!(MODEL), json!("sql-lora"), json!("chat-lora")]
    );
    // Accepted by the real v1.5.0 CRD (stored with its defaults).
    let rewrite = wait_for(
        &rewrites(&env.client, &ns),
        "lora-adapters",
        WAIT,
        "rewrite",
        |_| true,
    )
    .await;
    assert_eq!(
        value(&rewrite)["spec"],
        json!({"poolRef": {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "lora"},
               "rules": [
                   {"matches": [{"model": {"type": "Exact", "value": "sql-lora"}}],
                    "targets": [{"modelRewrite": "sql-lora"}]},
                   {"matches": [{"model": {"type": "Exact", "value": "chat-lora"}}],
                    "targets": [{"modelRewrite": "chat-lora"}]}]})
    );
    let config = Api::<ConfigMap>::namespaced(env.client.clone(), &ns)
        .get("lora-epp")
        .await
        .unwrap()
        .data
        .unwrap()["default-plugins.yaml"]
        .clone();
    assert!(config.contains("- type: lora-affinity-scorer"), "{config}");
    // The real picker accepts that configuration, loads the pool and the rewrite.
    let (picker, log) = start_real_picker(&env, "lora").await;
    let loaded = || {
        picker_log(&log, "Added/Updated InferenceModelRewrite")
            .into_iter()
            .filter(|l| {
                l["InferenceModelRewrite"] == json!({"name": "lora-adapters", "namespace": ns})
            })
            .count()
    };
    eventually("the picker loads the rewrite", WAIT, || async {
        if loaded() > 0 {
            Ok(())
        } else {
            Err(picker.process.log_tail(20))
        }
    })
    .await;
    // One adapter removed: the rewrite follows and the picker loads it again.
    let before = loaded();
    mds.patch(
        "lora",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"spec": {"adapters": [{"name": "sql-lora", "source": "hf://org/sql-lora"}]}}),
        ),
    )
    .await
    .unwrap();
    wait_for(
        &rewrites(&env.client, &ns),
        "lora-adapters",
        WAIT,
        "one rule",
        |r| value(r)["spec"]["rules"].as_array().map(Vec::len) == Some(1),
    )
    .await;
    eventually("the picker reloads the rewrite", WAIT, || async {
        if loaded() > before {
            Ok(())
        } else {
            Err(picker.process.log_tail(20))
        }
    })
    .await;
    // The picker's metrics are readable with no token (the core renders them without
    // authentication), as by any scraper.
    let (status, body) = airunway_e2e::http::get(&picker.metrics_url())
        .await
        .unwrap();
    assert_eq!(status, 200);
    assert!(body.contains("inference_pool_per_pod_queue_size"), "{body}");
    picker.process.terminate(Duration::from_secs(10));
    // No adapters left: the rewrite goes.
    mds.patch(
        "lora",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"adapters": null}})),
    )
    .await
    .unwrap();
    wait_deleted(&rewrites(&env.client, &ns), "lora-adapters", WAIT).await;
    eprintln!("adapters: {:.1}s", adapters_at.elapsed().as_secs_f64());

    for name in ["pooled", "edge", "lora"] {
        mds.delete(name, &DeleteParams::default()).await.unwrap();
    }
    for name in ["pooled", "edge", "lora"] {
        wait_deleted(&mds, name, WAIT).await;
    }
    assert!(
        pools(&env.client, &ns)
            .get_opt("shared-pool")
            .await
            .unwrap()
            .is_some(),
        "the user's pool is never deleted"
    );
    wait_listener(
        &env.client,
        &gateway_namespace,
        "the shared Gateway back to Same",
        json!({"from": "Same"}),
    )
    .await;
    gateways(&env.client, &edge)
        .delete("team-gw", &DeleteParams::default())
        .await
        .unwrap();
    remove_gateway_and_report(
        &env,
        &gateway_namespace,
        "routing control scenario",
        started,
    )
    .await;
}

/// Waits until the Gateway's listener allows exactly `expected` (`{"from": "Same"}` once AI
/// Runway took every allowance back).
async fn wait_listener(client: &Client, gateway_namespace: &str, what: &str, expected: Value) {
    wait_listener_of(
        client,
        gateway_namespace,
        "inference-gateway",
        what,
        expected,
    )
    .await;
}

/// [`wait_listener`] for the Gateway `gateway_namespace/name`.
async fn wait_listener_of(
    client: &Client,
    gateway_namespace: &str,
    name: &str,
    what: &str,
    expected: Value,
) {
    eventually(what, WAIT, || async {
        let gateway = gateways(client, gateway_namespace).get(name).await.unwrap();
        let namespaces = listener_namespaces(&gateway);
        let annotated = value(&gateway)["metadata"]["annotations"]
            .get("airunway.ai/allowed-route-namespaces")
            .cloned();
        let back_to_same = expected == json!({"from": "Same"});
        if namespaces == expected && (annotated.is_none() || !back_to_same) {
            Ok(())
        } else {
            Err(format!("{namespaces}, annotation {annotated:?}"))
        }
    })
    .await;
}

/// A deployment can go without any reconcile seeing it being deleted: it has no finalizer left
/// when it is deleted, or the core is not running then. Its namespace's allowance on the Gateway
/// is taken back all the same: from the watch's delete event, and from the sweep the core makes
/// when it starts.
#[tokio::test]
async fn an_allowance_is_taken_back_when_no_reconcile_saw_the_deletion() {
    let _lock = cluster_lock().await;
    let started = Instant::now();
    let env = TestEnv::new("gateway-gone").await;
    let ns = env.namespace.clone();
    let gateway_namespace = format!("{ns}-gw");
    create_namespace(&env.client, &gateway_namespace).await;
    create_gateway(&env.client, &gateway_namespace, "inference-gateway", true).await;
    let (core, provider) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &ns);
    let mut allowed = vec![gateway_namespace.clone(), ns.clone()];
    allowed.sort();
    let allowed = json!({"from": "Selector", "selector": {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": allowed}]}});
    let same = json!({"from": "Same"});

    // 1. No finalizer left when it is deleted: the provider is stopped (nothing adds its
    //    finalizer again) and its finalizer removed by hand; the deletion is immediate, and the
    //    core's watch reports only that it is gone.
    mds.create(
        &PostParams::default(),
        &deployment("unheld", json!({"enabled": true})),
    )
    .await
    .unwrap();
    wait_for(&mds, "unheld", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    wait_listener(
        &env.client,
        &gateway_namespace,
        "the namespace allowed",
        allowed.clone(),
    )
    .await;
    provider.process.terminate(Duration::from_secs(10));
    mds.patch(
        "unheld",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let deleting = Instant::now();
    mds.delete("unheld", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&mds, "unheld", WAIT).await;
    wait_listener(
        &env.client,
        &gateway_namespace,
        "the listener back to Same after a deletion no reconcile saw",
        same.clone(),
    )
    .await;
    eprintln!(
        "allowance taken back {:.1}s after the unheld deployment was deleted",
        deleting.elapsed().as_secs_f64()
    );

    // 2. Deleted while the core is not running: the provider's finalizer goes with no core to
    //    see it; the next core's first list sweeps the namespaces the Gateway carries.
    let _provider = start_llmd(&env).await;
    mds.create(
        &PostParams::default(),
        &deployment("unwatched", json!({"enabled": true})),
    )
    .await
    .unwrap();
    wait_for(&mds, "unwatched", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    wait_listener(
        &env.client,
        &gateway_namespace,
        "the namespace allowed again",
        allowed,
    )
    .await;
    core.process.terminate(Duration::from_secs(10));
    mds.delete("unwatched", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&mds, "unwatched", WAIT).await;
    let gateway = gateways(&env.client, &gateway_namespace)
        .get("inference-gateway")
        .await
        .unwrap();
    assert_ne!(
        listener_namespaces(&gateway),
        same,
        "nothing took the allowance back while the core was stopped"
    );
    let restarting = Instant::now();
    let _core = start_core(&env).await;
    wait_listener(
        &env.client,
        &gateway_namespace,
        "the listener back to Same after the core started",
        same,
    )
    .await;
    eprintln!(
        "allowance taken back {:.1}s after the core started again",
        restarting.elapsed().as_secs_f64()
    );
    remove_gateway_and_report(
        &env,
        &gateway_namespace,
        "deletions no reconcile saw",
        started,
    )
    .await;
}

/// A listener that already selects namespaces by name, in the `matchExpressions` form and in
/// the legacy `matchLabels` form (what the Go AI Runway wrote before its issue #333 fix, or
/// what an admin wrote), keeps the Gateway's own namespace in what the core writes when it adds
/// a deployment's namespace, and when it takes it back: routes attached from the Gateway's
/// namespace stay allowed (issue 32, bug 2; the Go project's rule).
#[tokio::test]
async fn a_selector_listener_keeps_the_gateway_namespace() {
    let _lock = cluster_lock().await;
    let started = Instant::now();
    let env = TestEnv::new("gateway-selector").await;
    let ns = env.namespace.clone();
    let gateway_namespace = format!("{ns}-gw");
    let other = format!("{ns}-other");
    create_namespace(&env.client, &gateway_namespace).await;
    create_gateway(&env.client, &gateway_namespace, "inference-gateway", true).await;
    let name_label = "kubernetes.io/metadata.name";
    let listeners = json!([
        {"name": "http", "protocol": "HTTP", "port": 80, "allowedRoutes": {"namespaces": {
            "from": "Selector", "selector": {"matchExpressions": [
                {"key": name_label, "operator": "In", "values": [other]}]}}}},
        {"name": "http-legacy", "protocol": "HTTP", "port": 8080, "allowedRoutes": {"namespaces": {
            "from": "Selector", "selector": {"matchLabels": {name_label: other}}}}},
    ]);
    gateways(&env.client, &gateway_namespace)
        .patch(
            "inference-gateway",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"listeners": listeners}})),
        )
        .await
        .unwrap();
    let (core, provider) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &ns);
    let selector = |names: &[&String]| {
        let mut names: Vec<&String> = names.to_vec();
        names.sort();
        json!({"from": "Selector", "selector": {"matchExpressions": [
            {"key": name_label, "operator": "In", "values": names}]}})
    };
    let every_listener = |expected: Value, what: &'static str| {
        let client = env.client.clone();
        let gateway_namespace = gateway_namespace.clone();
        async move {
            eventually(what, WAIT, || async {
                let gateway = gateways(&client, &gateway_namespace)
                    .get("inference-gateway")
                    .await
                    .unwrap();
                let namespaces: Vec<Value> = value(&gateway)["spec"]["listeners"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| l["allowedRoutes"]["namespaces"].clone())
                    .collect();
                if namespaces.len() == 2 && namespaces.iter().all(|n| *n == expected) {
                    Ok(gateway)
                } else {
                    Err(format!("{namespaces:?}"))
                }
            })
            .await
        }
    };

    mds.create(
        &PostParams::default(),
        &deployment("selected", json!({"enabled": true})),
    )
    .await
    .unwrap();
    wait_for(&mds, "selected", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    // Both forms are rewritten to one In list: the admin's namespace, the deployment's and
    // the Gateway's own.
    let gateway = every_listener(
        selector(&[&gateway_namespace, &ns, &other]),
        "both listeners to allow the Gateway's namespace, the deployment's and the admin's",
    )
    .await;
    assert_eq!(
        value(&gateway)["metadata"]["annotations"]["airunway.ai/allowed-route-namespaces"],
        json!(ns),
        "only the deployment's namespace is recorded as the core's"
    );
    // The route the core made is accepted once the Gateway says so.
    wait_reason(&mds, "selected", "RoutePending").await;
    write_route_status(
        &env.client,
        &ns,
        "selected",
        &gateway_namespace,
        "inference-gateway",
        None,
    )
    .await;
    wait_reason(&mds, "selected", "GatewayConfigured").await;

    // Taken back: the admin's namespace and the Gateway's own stay.
    mds.delete("selected", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&mds, "selected", WAIT).await;
    let gateway = every_listener(
        selector(&[&gateway_namespace, &other]),
        "both listeners to keep the Gateway's namespace and the admin's",
    )
    .await;
    assert!(
        value(&gateway)["metadata"]["annotations"]
            .get("airunway.ai/allowed-route-namespaces")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty),
        "{:?}",
        value(&gateway)["metadata"]["annotations"]
    );

    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
    remove_gateway_and_report(
        &env,
        &gateway_namespace,
        "a selector listener keeps the gateway namespace",
        started,
    )
    .await;
}

/// The pod names (endpoint `<pod>-rank-<index of the target port>`) the picker reports a
/// model-server queue gauge for, per pool: the endpoints in its datastore.
fn picker_endpoints(metrics: &str, pool: &str) -> std::collections::BTreeSet<String> {
    let label = |line: &str, name: &str| -> Option<String> {
        let start = line.find(&format!("{name}=\""))? + name.len() + 2;
        Some(line[start..].split('"').next()?.to_string())
    };
    metrics
        .lines()
        .filter(|l| l.starts_with("inference_pool_per_pod_queue_size{"))
        .filter(|l| label(l, "name").as_deref() == Some(pool))
        .filter_map(|l| label(l, "model_server_pod"))
        .collect()
}

/// The picker's JSON log lines whose message is `msg`.
fn picker_log(log: &std::path::Path, msg: &str) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["msg"] == msg)
        .collect()
}

/// The endpoint addresses the picker started collecting model-server data for (its log).
fn picker_collection_addresses(log: &std::path::Path) -> std::collections::BTreeSet<String> {
    picker_log(log, "starting collection")
        .iter()
        .filter_map(|l| l["endpoint"].as_str().map(str::to_string))
        .collect()
}

/// The ready pods matching the label `selector`: name -> pod IP (from KWOK).
async fn selected_ready_pods(pods: &Api<Pod>, selector: &str) -> Vec<(String, String)> {
    let mut ready: Vec<(String, String)> = pods
        .list(&ListParams::default().labels(selector))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| {
            let status = p.status?;
            let is_ready = status
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True");
            Some((p.metadata.name?, status.pod_ip.filter(|_| is_ready)?))
        })
        .collect();
    ready.sort();
    ready
}

/// Starts the real endpoint picker as a host process with what the core rendered for
/// `deployment`'s picker: the Deployment's container arguments (the configuration file path
/// pointed at a local copy of the rendered ConfigMap's), and the identity of the picker's
/// ServiceAccount, so the rendered Role is shown to be enough. Asserts that it accepts the
/// configuration, that its gRPC health check (what the rendered probe asks) is SERVING, which
/// it is only once it has read its InferencePool, and that it reconciled the deployment's pool.
async fn start_real_picker(
    env: &TestEnv,
    deployment: &str,
) -> (
    airunway_e2e::control_plane::operators::EndpointPicker,
    std::path::PathBuf,
) {
    let ns = env.namespace.clone();
    let epp = format!("{deployment}-epp");
    let picker = wait_for(
        &Api::<Deployment>::namespaced(env.client.clone(), &ns),
        &epp,
        WAIT,
        "endpoint picker",
        |_| true,
    )
    .await;
    let container = picker.spec.unwrap().template.spec.unwrap().containers[0].clone();
    assert_eq!(
        container.image.as_deref(),
        Some("registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0"),
        "the core's default picker: the one built here"
    );
    let config = Api::<ConfigMap>::namespaced(env.client.clone(), &ns)
        .get(&epp)
        .await
        .unwrap()
        .data
        .unwrap()["default-plugins.yaml"]
        .clone();
    let dir = env.control_plane.dir.join(format!("epp-{ns}-{deployment}"));
    std::fs::create_dir_all(&dir).unwrap();
    let config_file = dir.join("default-plugins.yaml");
    std::fs::write(&config_file, &config).unwrap();
    let args: Vec<String> = container
        .args
        .unwrap()
        .into_iter()
        .map(|a| {
            if a == "/config/default-plugins.yaml" {
                config_file.display().to_string()
            } else {
                a
            }
        })
        .collect();
    assert!(
        args.windows(2)
            .any(|w| w == ["--config-file", &config_file.display().to_string()]),
        "{args:?}"
    );
    let identity = env
        .control_plane
        .kubeconfig_for(
            &format!("system:serviceaccount:{ns}:{epp}"),
            &[
                "system:serviceaccounts",
                &format!("system:serviceaccounts:{ns}"),
            ],
        )
        .unwrap();
    let log = env
        .control_plane
        .dir
        .join("logs")
        .join(format!("endpoint-picker-{ns}-{deployment}.log"));
    env.report_log("endpoint-picker", log.clone());
    let picker_env = [
        ("NAMESPACE".to_string(), ns.clone()),
        ("POD_NAME".to_string(), format!("{epp}-host")),
    ]
    .into();
    let picker = airunway_e2e::control_plane::operators::start_endpoint_picker(
        &identity,
        args,
        picker_env,
        &log,
        airunway_e2e::process::Lifetime::WithTestProcess,
    )
    .await
    .unwrap();
    eprintln!(
        "endpoint picker SERVING {:.2}s after start",
        picker.ready_after.as_secs_f64()
    );
    // The core's plugin configuration is one the real picker accepts.
    assert_eq!(
        picker_log(&log, "loaded configuration from file/text successfully").len(),
        1,
        "{}",
        picker.process.log_tail(30)
    );
    assert_eq!(
        picker.health("inference-extension").await.unwrap(),
        tonic_health::pb::health_check_response::ServingStatus::Serving
    );
    let reconciled = picker_log(&log, "Reconciling InferencePool");
    assert!(
        reconciled
            .iter()
            .any(|l| l["InferencePool"] == json!({"name": deployment, "namespace": ns})),
        "{reconciled:?}"
    );
    (picker, log)
}

/// Waits until the picker's metrics name exactly `want` as `pool`'s endpoints.
async fn picker_endpoints_are(
    picker: &airunway_e2e::control_plane::operators::EndpointPicker,
    pool: &str,
    want: std::collections::BTreeSet<String>,
) {
    let url = picker.metrics_url();
    eventually("the picker's endpoints", WAIT, || async {
        let (_, body) = airunway_e2e::http::get(&url)
            .await
            .map_err(|e| e.to_string())?;
        let seen = picker_endpoints(&body, pool);
        if seen == want {
            Ok(())
        } else {
            Err(format!("{seen:?}, want {want:?}"))
        }
    })
    .await;
}

/// The real endpoint picker (`sigs.k8s.io/gateway-api-inference-extension` v1.5.0 `cmd/epp`,
/// built from its Go module by `e2e/control-plane/build.sh`) run as a host process with what
/// the core rendered for a vLLM deployment whose pods KWOK runs: the Deployment's container
/// arguments, the ConfigMap's plugin configuration (the core's default; vLLM's registration
/// names no picker) and the identity of the picker's ServiceAccount, so the rendered Role is
/// shown to be enough. It loads the pool (its gRPC health check turns SERVING), takes each
/// selected pod as an endpoint (its metrics name each pod, its log each pod IP), and follows a
/// replaced pod.
///
/// Not shown, because no model server runs in a simulated pod and KWOK's pod IPs route nowhere:
/// the picker's scrape of each pod's `/metrics` (put beyond the test with
/// `--refresh-metrics-interval=1h`) and so scheduling a request through its ext-proc port.
#[tokio::test]
async fn the_real_endpoint_picker_loads_the_pool_and_its_pods() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("gateway-epp").await;
    let started = Instant::now();
    let ns = env.namespace.clone();
    let gateway_namespace = format!("{ns}-gw");
    create_namespace(&env.client, &gateway_namespace).await;
    create_gateway(&env.client, &gateway_namespace, "inference-gateway", true).await;
    let (_core, _llmd) = start(&env).await;
    let vllm_identity = stack::service_account_identity(
        &env,
        "deploy/providers/vllm/rbac.yaml",
        "airunway-provider-vllm",
    )
    .await;
    let _vllm = stack::start_provider(
        &env,
        "airunway-provider-vllm",
        &vllm_identity,
        &["--heartbeat-interval=1s"],
        "vllm-gw",
    )
    .await;
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, "vllm", WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;

    // Two replicas on the simulated GPU nodes; the image on a loopback port nothing listens
    // on (resolution fails at once and the tag runs as given).
    let offline = format!(
        "127.0.0.1:{}/vllm/vllm-openai:offline",
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    );
    let md: ModelDeployment = serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "qwen"},
        "spec": {"model": {"id": "Qwen/Qwen3-0.6B", "servedName": MODEL},
                 "engine": {"type": "vllm", "image": offline},
                 "resources": {"gpu": {"count": 1}, "memory": "8Gi"},
                 "scaling": {"replicas": 2},
                 "provider": {"name": "vllm"}},
    }))
    .unwrap();
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &ns);
    mds.create(&PostParams::default(), &md).await.unwrap();
    wait_for(&mds, "qwen", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    wait_for(&pools(&env.client, &ns), "qwen", WAIT, "pool", |_| true).await;
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &ns);
    let selected = eventually("two ready pods selected by the pool", WAIT, || async {
        let ready = selected_ready_pods(&pods, "airunway.ai/model-deployment=qwen").await;
        if ready.len() == 2 {
            Ok(ready)
        } else {
            Err(format!("{ready:?}"))
        }
    })
    .await;

    let (picker, log) = start_real_picker(&env, "qwen").await;
    // Its endpoints: exactly the pool's ready pods, by name (metrics) and by pod IP (log).
    let want_names = |pods: &[(String, String)]| -> std::collections::BTreeSet<String> {
        pods.iter()
            .map(|(name, _)| format!("{name}-rank-0"))
            .collect()
    };
    let want_ips = |pods: &[(String, String)]| -> std::collections::BTreeSet<String> {
        pods.iter().map(|(_, ip)| ip.clone()).collect()
    };
    picker_endpoints_are(&picker, "qwen", want_names(&selected)).await;
    let addresses = picker_collection_addresses(&log);
    assert_eq!(
        addresses,
        want_ips(&selected),
        "{}",
        picker.process.log_tail(30)
    );
    for (_, ip) in &selected {
        assert!(ip.starts_with("10.244."), "a KWOK pod IP: {ip}");
    }

    // A pod replaced: the picker drops it and takes the new one (it watches the pods; KWOK
    // may hand the new pod the freed IP, so the names tell them apart).
    let (gone, _) = selected[0].clone();
    pods.delete(&gone, &DeleteParams::default()).await.unwrap();
    let replaced = eventually("the replaced pod ready", WAIT, || async {
        let ready = selected_ready_pods(&pods, "airunway.ai/model-deployment=qwen").await;
        if ready.len() == 2 && ready.iter().all(|(name, _)| *name != gone) {
            Ok(ready)
        } else {
            Err(format!("{ready:?}"))
        }
    })
    .await;
    picker_endpoints_are(&picker, "qwen", want_names(&replaced)).await;
    let addresses = picker_collection_addresses(&log);
    assert!(
        want_ips(&replaced).is_subset(&addresses),
        "{addresses:?} {replaced:?}"
    );
    assert!(picker.process.exit_status().is_none(), "still running");
    picker.process.terminate(Duration::from_secs(10));

    mds.delete("qwen", &DeleteParams::default()).await.unwrap();
    wait_deleted(&mds, "qwen", WAIT).await;
    remove_gateway_and_report(
        &env,
        &gateway_namespace,
        "real endpoint picker scenario (after the control plane)",
        started,
    )
    .await;
}

/// KAITO builds its workload Pods itself, labelled `kaito.sh/workspace: <workspace>` and not
/// with our pod-template label; its registration names that label as the pool's selector
/// (`gateway.poolSelector`). The KAITO simulator (`airunway_e2e::sandbox::kaito`; KAITO's
/// operator cannot be built here) creates the preset's StatefulSet whose Pod KWOK runs; the pool
/// the core creates selects exactly that Pod on the model server's port, and the real endpoint
/// picker, started with what the core rendered, takes it as its endpoint.
#[tokio::test]
async fn a_kaito_pool_selects_the_workspace_pods_and_the_real_picker_loads_them() {
    use airunway_e2e::sandbox::kaito;
    use kube::ResourceExt;
    let _lock = cluster_lock().await;
    let env = TestEnv::new("gateway-kaito").await;
    let started = Instant::now();
    let ns = env.namespace.clone();
    let gateway_namespace = format!("{ns}-gw");
    create_namespace(&env.client, &gateway_namespace).await;
    create_gateway(&env.client, &gateway_namespace, "inference-gateway", true).await;
    let (_core, _llmd) = start(&env).await;
    // The KAITO provider is ready only while a KAITO workspace controller runs: the
    // simulator's stand-in Deployment, whose Pod runs on a simulated node.
    kaito::install_controller_stand_in(&env.client)
        .await
        .unwrap();
    let kaito_identity = stack::service_account_identity(
        &env,
        "deploy/providers/kaito/rbac.yaml",
        "airunway-provider-kaito",
    )
    .await;
    let _kaito = stack::start_provider(
        &env,
        "airunway-provider-kaito",
        &kaito_identity,
        &["--heartbeat-interval=1s"],
        "kaito-gw",
    )
    .await;
    let simulator = tokio::spawn(kaito::run(env.client.clone(), Some(ns.clone())));
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, "kaito", WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;

    let md: ModelDeployment = serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "phi"},
        "spec": {"model": {"id": "microsoft/Phi-4-mini-instruct"}, "engine": {"type": "vllm"},
                 "resources": {"gpu": {"count": 1}}, "provider": {"name": "kaito"}},
    }))
    .unwrap();
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &ns);
    mds.create(&PostParams::default(), &md).await.unwrap();
    wait_for(&mds, "phi", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;

    // The pool selects KAITO's label, on the port the Workspace's Service targets.
    let pool = value(&wait_for(&pools(&env.client, &ns), "phi", WAIT, "pool", |_| true).await);
    assert_eq!(
        pool["spec"]["selector"],
        json!({"matchLabels": {"kaito.sh/workspace": "phi"}})
    );
    assert_eq!(
        pool["spec"]["targetPorts"],
        json!([{"number": kaito::INFERENCE_PORT}])
    );
    // Exactly the workload's Pod (the StatefulSet KAITO made for the preset), serving there.
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &ns);
    let selected = eventually("the workspace's pod ready", WAIT, || async {
        let ready = selected_ready_pods(&pods, "kaito.sh/workspace=phi").await;
        if ready.len() == 1 {
            Ok(ready)
        } else {
            Err(format!("{ready:?}"))
        }
    })
    .await;
    let pod = pods.get(&selected[0].0).await.unwrap();
    assert_eq!(pod.owner_references()[0].kind, "StatefulSet");
    assert_eq!(
        pod.spec.unwrap().containers[0]
            .ports
            .iter()
            .flatten()
            .map(|p| p.container_port)
            .collect::<Vec<_>>(),
        [kaito::INFERENCE_PORT]
    );

    // The real picker takes that Pod (name and KWOK IP) as the pool's endpoint.
    let (picker, log) = start_real_picker(&env, "phi").await;
    picker_endpoints_are(&picker, "phi", [format!("{}-rank-0", selected[0].0)].into()).await;
    assert_eq!(
        picker_collection_addresses(&log),
        [selected[0].1.clone()].into(),
        "{}",
        picker.process.log_tail(30)
    );
    picker.process.terminate(Duration::from_secs(10));

    mds.delete("phi", &DeleteParams::default()).await.unwrap();
    wait_deleted(&mds, "phi", WAIT).await;
    simulator.abort();
    remove_gateway_and_report(
        &env,
        &gateway_namespace,
        "KAITO pool and real picker scenario (after the control plane)",
        started,
    )
    .await;
}
