//! Runtime configurations through the provider SDK (docs/platform.md, issue 36): the real
//! `airunway-provider-vllm` (its ServiceAccount, the shipped RBAC) and the real core on the
//! harness's cluster. A `RuntimeConfig`'s node selector, tolerations, env, Hugging Face token
//! Secret, engine image, Pod annotations and label propagation reach the vLLM Deployment and its
//! Service; a config change re-renders exactly the deployments that use it (one upstream write
//! each, counted in the API server's audit log) and a change no render uses writes nothing.
//!
//! The core resolves each deployment's config and publishes `status.effectiveRuntimeConfig`;
//! the tests wait for the value `runtime_config::Source::effective` gives for the config the
//! deployment names ([`publish`]).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use airunway_api::conformance::audit;
use airunway_api::constants::{annotations, condition_types, labels};
use airunway_api::runtime_config::Source;
use airunway_api::v1alpha1::{ConditionStatus, ModelDeployment, Phase, RuntimeConfig};
use airunway_e2e::control_plane::audit_log_path;
use airunway_e2e::registry::LocalRegistry;
use airunway_e2e::scale::{kstatus_binary, run_json};
use airunway_e2e::stack::{self, FAST_HEALTH, Running};
use airunway_e2e::wait::{eventually, wait_for};
use airunway_e2e::{TestEnv, cluster_lock};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);
/// How long the tests watch for writes that must not come.
const QUIET: Duration = Duration::from_secs(5);
const PROPAGATED: (&str, &str) = ("org.example/cost-center", "ml-42");

/// The core and the vLLM provider (its ServiceAccount, the shipped RBAC); the provider's user.
async fn start(env: &TestEnv) -> (Running, Running, String) {
    airunway_e2e::providers::delete_all(&env.client).await;
    let mut core_flags = FAST_HEALTH.to_vec();
    core_flags.push("--webhook-bind-address=127.0.0.1:0");
    let core = stack::start_core(env, &env.control_plane.kubeconfig, &core_flags, "core").await;
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
    let ipcs: Api<airunway_api::v1alpha1::InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, "vllm", WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    let user = format!(
        "system:serviceaccount:{}:airunway-provider-vllm",
        env.namespace
    );
    (core, provider, user)
}

/// A registry on loopback with a tiny vLLM image; the image's reference.
fn registry(env: &TestEnv, name: &str) -> (LocalRegistry, String) {
    let registry = LocalRegistry::start(
        &env.control_plane
            .dir
            .join(format!("registry-{}-{name}", env.namespace)),
    )
    .unwrap();
    registry
        .push_tiny_image("platform/vllm-openai", "approved")
        .unwrap();
    let image = format!("{}/platform/vllm-openai:approved", registry.address);
    (registry, image)
}

async fn create_config(env: &TestEnv, name: &str, spec: Value) -> RuntimeConfig {
    let configs: Api<RuntimeConfig> = Api::namespaced(env.client.clone(), &env.namespace);
    let config: RuntimeConfig = serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "RuntimeConfig",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap();
    configs
        .create(&PostParams::default(), &config)
        .await
        .unwrap()
}

async fn replace_config_spec(env: &TestEnv, name: &str, spec: Value) -> RuntimeConfig {
    let configs: Api<RuntimeConfig> = Api::namespaced(env.client.clone(), &env.namespace);
    let mut config = configs.get(name).await.unwrap();
    config.spec = serde_json::from_value(spec).unwrap();
    configs
        .replace(name, &PostParams::default(), &config)
        .await
        .unwrap()
}

/// A vLLM deployment naming `config`, labelled with [`PROPAGATED`].
async fn create_deployment(env: &TestEnv, name: &str, config: &str) {
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let md: ModelDeployment = serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": name, "labels": {PROPAGATED.0: PROPAGATED.1, "app": name}},
        "spec": {"model": {"id": "Qwen/Qwen3-0.6B", "servedName": "qwen3"},
                 "engine": {"type": "vllm", "args": {"max-model-len": "2048"}},
                 "resources": {"gpu": {"count": 1}, "memory": "8Gi"},
                 "provider": {"name": "vllm"},
                 "runtimeConfigName": config},
    }))
    .unwrap();
    mds.create(&PostParams::default(), &md).await.unwrap();
}

/// Publishes `config` in `name`'s `status.effectiveRuntimeConfig` as the core does once it has
/// resolved the deployment's `spec.runtimeConfigName`.
async fn publish(env: &TestEnv, name: &str, config: &RuntimeConfig) {
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let effective = Source::Namespace(Arc::new(config.clone())).effective();
    wait_for(
        &mds,
        name,
        WAIT,
        "the core's effectiveRuntimeConfig",
        |md| {
            md.status
                .as_ref()
                .and_then(|s| s.effective_runtime_config.as_deref())
                == Some(&effective)
        },
    )
    .await;
}

fn pod_spec(deployment: &Deployment) -> k8s_openapi::api::core::v1::PodSpec {
    deployment.spec.clone().unwrap().template.spec.unwrap()
}

fn env_of(deployment: &Deployment) -> BTreeMap<String, Value> {
    pod_spec(deployment).containers[0]
        .env
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|e| {
            let value = serde_json::to_value(&e).unwrap();
            (e.name, value)
        })
        .collect()
}

fn spec_hash(deployment: &Deployment) -> String {
    deployment.metadata.annotations.clone().unwrap_or_default()[annotations::SPEC_HASH].clone()
}

async fn running(env: &TestEnv, name: &str) -> ModelDeployment {
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    wait_for(&mds, name, WAIT, "Running and Ready", |md| {
        md.phase() == Some(Phase::Running)
            && md.condition(condition_types::READY).map(|c| c.status) == Some(ConditionStatus::True)
    })
    .await
}

/// The upstream writes (Deployments, Services) of `user` in the test namespace since `since`
/// (from byte `offset` of the audit log), by object name.
fn upstream_writes(
    env: &TestEnv,
    offset: u64,
    user: &str,
    since: jiff::Timestamp,
) -> BTreeMap<String, Vec<String>> {
    let requests =
        audit::read(&audit_log_path(&env.control_plane.dir), offset, user, since).unwrap();
    let mut writes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for request in requests.iter().filter(|r| {
        r.is_write()
            && matches!(r.resource.as_str(), "deployments" | "services")
            && r.namespace.as_deref() == Some(env.namespace.as_str())
    }) {
        writes
            .entry(request.name.clone().unwrap_or_default())
            .or_default()
            .push(request.describe());
    }
    writes
}

#[tokio::test]
async fn a_runtime_config_reaches_the_vllm_deployment_and_its_service() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("rtc-render").await;
    let (_core, _provider, _user) = start(&env).await;
    let (local, image) = registry(&env, "render");
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let services: Api<Service> = Api::namespaced(env.client.clone(), &env.namespace);
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);

    let config = create_config(
        &env,
        "team",
        json!({
            "secrets": {"huggingFaceToken": "platform-hf-token"},
            "nodeSelector": {"nvidia.com/gpu.present": "true"},
            "tolerations": [{"key": "org.example/dedicated", "operator": "Exists", "effect": "NoSchedule"}],
            "podTemplate": {"metadata": {"labels": {"org.example/pool": "shared"},
                                         "annotations": {"org.example/owner": "platform"}}},
            "env": [{"name": "VLLM_LOGGING_LEVEL", "value": "DEBUG"}],
            "engineImages": {"vllm": image},
            "labelPropagation": {"enabled": true, "match": ["org.example/*"]},
        }),
    )
    .await;
    create_deployment(&env, "served", "team").await;
    publish(&env, "served", &config).await;

    // The provider renders with the config: the image it resolves is the config's.
    let md = running(&env, "served").await;
    let resolved = md.status.clone().unwrap().image.unwrap();
    assert_eq!(resolved.requested.as_deref(), Some(image.as_str()));
    let live = eventually("the Deployment rendered with the config", WAIT, || async {
        let live = deployments.get("served").await.map_err(|e| e.to_string())?;
        let selector = pod_spec(&live).node_selector.unwrap_or_default();
        if selector.get("nvidia.com/gpu.present").map(String::as_str) == Some("true") {
            Ok(live)
        } else {
            Err(format!("node selector {selector:?}"))
        }
    })
    .await;
    let spec = pod_spec(&live);
    let container = &spec.containers[0];
    assert!(
        container
            .image
            .as_deref()
            .unwrap()
            .starts_with(&format!("{}/platform/vllm-openai", local.address)),
        "{:?}",
        container.image
    );
    let tolerations = spec.tolerations.clone().unwrap();
    assert_eq!(tolerations.len(), 1);
    assert_eq!(tolerations[0].key.as_deref(), Some("org.example/dedicated"));
    let env_vars = env_of(&live);
    assert_eq!(env_vars["VLLM_LOGGING_LEVEL"]["value"], "DEBUG");
    assert_eq!(
        env_vars["HF_TOKEN"]["valueFrom"]["secretKeyRef"]["name"],
        "platform-hf-token"
    );
    let template_meta = live.spec.clone().unwrap().template.metadata.unwrap();
    let pod_labels = template_meta.labels.unwrap();
    assert_eq!(
        pod_labels.get(PROPAGATED.0).map(String::as_str),
        Some(PROPAGATED.1)
    );
    assert_eq!(
        pod_labels.get("org.example/pool").map(String::as_str),
        Some("shared")
    );
    assert_eq!(
        template_meta.annotations.unwrap_or_default()["org.example/owner"],
        "platform"
    );
    // The objects' own labels: the propagated label and the provider.
    let service = services.get("served").await.unwrap();
    for (kind, meta) in [
        ("Deployment", &live.metadata),
        ("Service", &service.metadata),
    ] {
        let object_labels = meta.labels.clone().unwrap_or_default();
        assert_eq!(
            object_labels.get(PROPAGATED.0).map(String::as_str),
            Some(PROPAGATED.1),
            "{kind}"
        );
        assert_eq!(
            object_labels.get(labels::PROVIDER).map(String::as_str),
            Some("vllm"),
            "{kind}"
        );
        // Only labels the config's patterns match propagate.
        assert!(
            !object_labels.contains_key("app"),
            "{kind}: {object_labels:?}"
        );
    }
    // Pods are scheduled with the config's node selector (KWOK's GPU nodes carry it).
    let pods: Api<k8s_openapi::api::core::v1::Pod> =
        Api::namespaced(env.client.clone(), &env.namespace);
    let pod_list = pods
        .list(&kube::api::ListParams::default().labels(&format!("{}=served", labels::DEPLOYMENT)))
        .await
        .unwrap();
    assert!(
        pod_list.items.iter().any(|p| p
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| n.starts_with("kwok-gpu-"))),
        "no pod on a GPU node"
    );
    mds.delete("served", &Default::default()).await.unwrap();
}

#[tokio::test]
async fn a_config_change_re_renders_exactly_its_deployments() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("rtc-change").await;
    let (_core, _provider, user) = start(&env).await;
    let (_registry, image) = registry(&env, "change");
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let spec = |level: &str, size: &str| {
        json!({
            "env": [{"name": "VLLM_LOGGING_LEVEL", "value": level}],
            "engineImages": {"vllm": image},
            "modelCache": {"size": size},
            "labelPropagation": {"enabled": true, "match": ["org.example/*"]},
        })
    };
    let config_a = create_config(&env, "a", spec("INFO", "100Gi")).await;
    let config_b = create_config(&env, "b", spec("INFO", "100Gi")).await;
    for (name, config) in [("a1", &config_a), ("a2", &config_a), ("b1", &config_b)] {
        create_deployment(&env, name, config.metadata.name.as_deref().unwrap()).await;
        publish(&env, name, config).await;
    }
    let mut before = BTreeMap::new();
    for name in ["a1", "a2", "b1"] {
        running(&env, name).await;
        let live = eventually(
            &format!("{name} rendered with its config"),
            WAIT,
            || async {
                let live = deployments.get(name).await.map_err(|e| e.to_string())?;
                if env_of(&live).contains_key("VLLM_LOGGING_LEVEL") {
                    Ok(live)
                } else {
                    Err(format!("env {:?}", env_of(&live)))
                }
            },
        )
        .await;
        before.insert(name, live);
    }
    let generation = |md: &ModelDeployment| md.metadata.generation;
    let md_before = mds.get("a1").await.unwrap();

    // Change A as the platform team would, then publish it as the core would.
    tokio::time::sleep(QUIET).await;
    let log = audit_log_path(&env.control_plane.dir);
    let offset = audit::length(&log).unwrap();
    let since = jiff::Timestamp::now();
    let config_a = replace_config_spec(&env, "a", spec("DEBUG", "100Gi")).await;
    for name in ["a1", "a2"] {
        publish(&env, name, &config_a).await;
    }
    for name in ["a1", "a2"] {
        eventually(&format!("{name} re-rendered"), WAIT, || async {
            let live = deployments.get(name).await.map_err(|e| e.to_string())?;
            let level = env_of(&live)
                .get("VLLM_LOGGING_LEVEL")
                .map(|v| v["value"].clone())
                .unwrap_or_default();
            if level == "DEBUG" {
                Ok(())
            } else {
                Err(format!("VLLM_LOGGING_LEVEL {level}"))
            }
        })
        .await;
    }
    tokio::time::sleep(QUIET).await;
    let writes = upstream_writes(&env, offset, &user, since);
    eprintln!("upstream writes after the change of A: {writes:?}");
    for name in ["a1", "a2"] {
        assert_eq!(
            writes.get(name).map(Vec::len),
            Some(1),
            "one write for {name}: {writes:?}"
        );
    }
    assert!(!writes.contains_key("b1"), "nothing for b1: {writes:?}");
    let b1 = deployments.get("b1").await.unwrap();
    assert_eq!(b1.metadata.generation, before["b1"].metadata.generation);
    assert_eq!(spec_hash(&b1), spec_hash(&before["b1"]));
    let a1 = deployments.get("a1").await.unwrap();
    assert_ne!(
        spec_hash(&a1),
        spec_hash(&before["a1"]),
        "the spec hash follows the config"
    );

    // A config change is no new generation: once the rollout is done the deployment reads
    // Current to kstatus, with the same generation observed.
    let md_after = eventually("a1 ready after the re-render", WAIT, || async {
        let md = mds.get("a1").await.map_err(|e| e.to_string())?;
        let ready =
            md.condition(condition_types::READY).map(|c| c.status) == Some(ConditionStatus::True);
        let live = deployments.get("a1").await.map_err(|e| e.to_string())?;
        let status = live.status.clone().unwrap_or_default();
        let rolled = status.updated_replicas == Some(1)
            && status.ready_replicas == Some(1)
            && status.replicas == Some(1);
        if ready && rolled && md.phase() == Some(Phase::Running) {
            Ok(md)
        } else {
            Err(format!(
                "phase {:?}, ready {ready}, Deployment {status:?}",
                md.phase()
            ))
        }
    })
    .await;
    assert_eq!(generation(&md_after), generation(&md_before));
    assert_eq!(
        md_after.status.as_ref().and_then(|s| s.observed_generation),
        generation(&md_after)
    );
    let kstatus = kstatus(&[serde_json::to_value(&md_after).unwrap()]);
    assert_eq!(kstatus[0].0, "Current", "{kstatus:?}");

    // A change of a field no provider renders (the model cache size is the core's): the same
    // objects, nothing written.
    let offset = audit::length(&log).unwrap();
    let since = jiff::Timestamp::now();
    let config_a = replace_config_spec(&env, "a", spec("DEBUG", "200Gi")).await;
    for name in ["a1", "a2"] {
        publish(&env, name, &config_a).await;
    }
    tokio::time::sleep(QUIET).await;
    let writes = upstream_writes(&env, offset, &user, since);
    assert!(writes.is_empty(), "no upstream write: {writes:?}");
    assert_eq!(
        spec_hash(&deployments.get("a1").await.unwrap()),
        spec_hash(&a1)
    );
    for name in ["a1", "a2", "b1"] {
        mds.delete(name, &Default::default()).await.unwrap();
    }
}

/// kstatus (`sigs.k8s.io/cli-utils`, `e2e/go/kstatus`) of each object: (status, message).
fn kstatus(objects: &[Value]) -> Vec<(String, String)> {
    let results = run_json(&kstatus_binary(), &[], objects);
    results
        .iter()
        .map(|r| {
            (
                r["status"].as_str().unwrap_or_default().to_string(),
                r["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}
