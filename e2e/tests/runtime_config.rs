//! Runtime configurations (issue 36, docs/platform.md) on the real control plane with the real
//! core running as its ServiceAccount with the shipped RBAC:
//! - a deployment that names no config and finds no `default` proceeds, with
//!   `RuntimeConfigResolved=True/DefaultRuntimeConfigNotFound` and its event;
//! - one that names a missing config stays `Pending` with no provider, `RuntimeConfigResolved=
//!   False/RuntimeConfigNotFound` and a Warning, and proceeds once the config is created (the
//!   watch: nothing polls);
//! - the cluster config, then the namespaced one of the same name, which wins: the status
//!   reference (only one of `namespaceRef`/`clusterRef`) and the hash, equal to
//!   `runtime_config::spec_hash` of the object the API server serves; `RuntimeConfigChanged`;
//! - a config change re-renders exactly its deployments: the core's status writes per
//!   deployment, counted in the API server's audit log, are one for each deployment using the
//!   changed config and none for the others;
//! - defaults the validation refuses are reported naming the config;
//! - the config deleted under a deployment that has its provider leaves it as it is;
//! - labels propagate to the deployment's managed claim, its ModelCache and the download Job
//!   (metadata and Pod template), and a changed label value follows on the claim, the cache and
//!   the Job's metadata.
//!
//! The gateway objects (HTTPRoute, InferencePool, endpoint picker) and the autoscaler get the
//! same labels through the renders the `airunway-core` unit tests cover
//! (`core-controller/tests/runtime_config.rs`): the gateway suite's setup is not reused here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::Duration;

use airunway_api::conformance::audit;
use airunway_api::constants::{condition_types, reasons};
use airunway_api::runtime_config::spec_hash;
use airunway_api::storage;
use airunway_api::v1alpha1::{
    ClusterRuntimeConfig, ConditionStatus, EffectiveRuntimeConfig, ModelCache, ModelDeployment,
    Phase, RuntimeConfig, RuntimeConfigScope,
};
use airunway_e2e::control_plane::audit_log_path;
use airunway_e2e::providers::{delete_all, register_shipped};
use airunway_e2e::stack::start_core;
use airunway_e2e::wait::{wait_for, wait_for_condition};
use airunway_e2e::{TestEnv, cluster_lock};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);
/// How long nothing more may be written after a config change settled.
const QUIET: Duration = Duration::from_secs(4);
const CONFIG: &str = "gpu-pool";

fn deployment(name: &str, config: Option<&str>) -> ModelDeployment {
    let mut spec = json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}});
    if let Some(config) = config {
        spec["runtimeConfigName"] = json!(config);
    }
    serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap()
}

async fn create(api: &Api<ModelDeployment>, md: &ModelDeployment) {
    api.create(&PostParams::default(), md).await.unwrap();
}

fn cluster_config(env_value: &str) -> Value {
    json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ClusterRuntimeConfig",
        "metadata": {"name": CONFIG},
        "spec": {"env": [{"name": "LOG_LEVEL", "value": env_value}]}})
}

fn namespaced_config(namespace: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "RuntimeConfig",
        "metadata": {"name": name, "namespace": namespace}, "spec": spec})
}

fn effective(md: &ModelDeployment) -> Option<EffectiveRuntimeConfig> {
    md.status
        .as_ref()
        .and_then(|s| s.effective_runtime_config.as_deref().cloned())
}

fn hash_of(md: &ModelDeployment) -> Option<String> {
    effective(md).map(|e| e.hash)
}

/// The core's status writes (server-side apply patches of `modeldeployments/status` that
/// succeeded) per deployment of `namespace`, in the audit log from byte `offset` on.
fn status_writes(env: &TestEnv, offset: u64, namespace: &str) -> BTreeMap<String, usize> {
    let user = format!("system:serviceaccount:{}:airunway-core", env.namespace);
    let requests = audit::read(
        &audit_log_path(&env.control_plane.dir),
        offset,
        &user,
        jiff::Timestamp::UNIX_EPOCH,
    )
    .unwrap();
    let mut writes = BTreeMap::new();
    for request in requests {
        if request.verb == "patch"
            && request.resource == "modeldeployments/status"
            && request.namespace.as_deref() == Some(namespace)
            && (200..300).contains(&request.code)
        {
            *writes.entry(request.name.unwrap_or_default()).or_insert(0) += 1;
        }
    }
    writes
}

fn audit_offset(env: &TestEnv) -> u64 {
    audit::length(&audit_log_path(&env.control_plane.dir)).unwrap()
}

#[tokio::test]
async fn resolution_status_events_and_exact_rerenders() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("runtime-config").await;
    let other = TestEnv::new("runtime-config-other").await;
    delete_all(&env.client).await;
    register_shipped(&env.client, &["kaito"], true).await;
    let clusters: Api<ClusterRuntimeConfig> = Api::all(env.client.clone());
    let _ = clusters.delete(CONFIG, &DeleteParams::default()).await;
    let _ = clusters.delete("default", &DeleteParams::default()).await;
    // No provider process runs: probes and heartbeats must not change the deployments'
    // status while the writes are counted.
    let core = start_core(
        &env,
        &env.control_plane.kubeconfig,
        &[
            "--provider-probe-interval=1h",
            "--provider-stale-threshold=1h",
        ],
        "core-runtime-config",
    )
    .await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let remote_api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &other.namespace);
    let namespaced: Api<RuntimeConfig> = Api::namespaced(env.client.clone(), &env.namespace);
    let t = condition_types::RUNTIME_CONFIG_RESOLVED;

    // 1. No config named, no `default` anywhere: no error, it proceeds.
    create(&api, &deployment("plain", None)).await;
    let md = wait_for(&api, "plain", WAIT, "provider selected", |md| {
        md.selected_provider() == Some("kaito")
    })
    .await;
    let c = md.condition(t).expect("RuntimeConfigResolved");
    assert!(c.is_true());
    assert_eq!(
        c.reason.as_deref(),
        Some(reasons::runtime_config::DEFAULT_NOT_FOUND)
    );
    assert_eq!(effective(&md), None);
    env.wait_for_event("DefaultRuntimeConfigNotFound", |n| {
        n.contains("no defaults apply")
    })
    .await;

    // 2. A named config that exists nowhere: Pending, no provider.
    create(&api, &deployment("named", Some(CONFIG))).await;
    let (md, c) = wait_for_condition(&api, "named", WAIT, t, ConditionStatus::False).await;
    assert_eq!(
        c.reason.as_deref(),
        Some(reasons::runtime_config::NOT_FOUND)
    );
    let message = c.message.clone().unwrap();
    assert_eq!(
        message,
        format!(
            "spec.runtimeConfigName names \"{CONFIG}\", which exists neither as a RuntimeConfig in namespace {} nor as a ClusterRuntimeConfig; create one of them, or change spec.runtimeConfigName",
            env.namespace
        )
    );
    let status = md.status.clone().unwrap();
    assert_eq!(status.phase, Some(Phase::Pending));
    assert_eq!(md.selected_provider(), None);
    assert!(md.condition(condition_types::PROVIDER_SELECTED).is_none());
    let notes = env
        .wait_for_event("RuntimeConfigNotFound", |n| n == message)
        .await;
    assert_eq!(notes.len(), 1, "told once: {notes:?}");

    // 3. The cluster config appears: it proceeds (the watch wakes it), with the cluster ref.
    airunway_e2e::manifests::apply(&env.client, &[cluster_config("debug")]).await;
    create(&remote_api, &deployment("remote", Some(CONFIG))).await;
    let served = clusters.get(CONFIG).await.unwrap();
    let cluster_hash = spec_hash(&served.spec.defaults);
    for (api, name) in [(&api, "named"), (&remote_api, "remote")] {
        let md = wait_for(api, name, WAIT, "the cluster config applied", |md| {
            md.selected_provider() == Some("kaito") && hash_of(md).is_some()
        })
        .await;
        let reference = effective(&md).unwrap();
        assert_eq!(reference.scope, RuntimeConfigScope::Cluster);
        assert!(reference.namespace_ref.is_none(), "only one ref");
        assert_eq!(reference.cluster_ref.unwrap().name, CONFIG);
        assert_eq!(reference.hash, cluster_hash);
        let c = md.condition(t).unwrap();
        assert_eq!(
            c.reason.as_deref(),
            Some(reasons::runtime_config::CLUSTER_CONFIG)
        );
    }

    // 4. A RuntimeConfig of the same name in the namespace wins there only.
    airunway_e2e::manifests::apply(
        &env.client,
        &[namespaced_config(
            &env.namespace,
            CONFIG,
            json!({"env": [{"name": "LOG_LEVEL", "value": "info"}]}),
        )],
    )
    .await;
    let served = namespaced.get(CONFIG).await.unwrap();
    let namespace_hash = spec_hash(&served.spec.defaults);
    let md = wait_for(&api, "named", WAIT, "the namespaced config applied", |md| {
        hash_of(md).as_deref() == Some(namespace_hash.as_str())
    })
    .await;
    let reference = effective(&md).unwrap();
    assert_eq!(reference.scope, RuntimeConfigScope::Namespace);
    assert!(reference.cluster_ref.is_none(), "only one ref");
    let namespace_ref = reference.namespace_ref.unwrap();
    assert_eq!(
        (
            namespace_ref.kind.as_str(),
            namespace_ref.namespace.as_str(),
            namespace_ref.name.as_str()
        ),
        ("RuntimeConfig", env.namespace.as_str(), CONFIG)
    );
    assert_eq!(
        md.condition(t).unwrap().reason.as_deref(),
        Some(reasons::runtime_config::NAMESPACE_CONFIG)
    );
    env.wait_for_event("RuntimeConfigChanged", |n| {
        n.contains(&format!(
            "ClusterRuntimeConfig {CONFIG} (hash {cluster_hash})"
        )) && n.contains(&format!(
            "RuntimeConfig {}/{CONFIG} (hash {namespace_hash})",
            env.namespace
        ))
    })
    .await;
    let remote = remote_api.get("remote").await.unwrap();
    assert_eq!(hash_of(&remote), Some(cluster_hash.clone()));

    // 5. A config change re-renders exactly its deployments.
    tokio::time::sleep(QUIET).await;
    let offset = audit_offset(&env);
    airunway_e2e::manifests::apply(&env.client, &[cluster_config("warn")]).await;
    let new_cluster_hash = spec_hash(&clusters.get(CONFIG).await.unwrap().spec.defaults);
    assert_ne!(new_cluster_hash, cluster_hash);
    wait_for(&remote_api, "remote", WAIT, "the new cluster hash", |md| {
        hash_of(md).as_deref() == Some(new_cluster_hash.as_str())
    })
    .await;
    tokio::time::sleep(QUIET).await;
    let here = status_writes(&env, offset, &env.namespace);
    let there = status_writes(&env, offset, &other.namespace);
    println!("cluster config change: status writes {here:?} and {there:?}");
    assert_eq!(there.get("remote"), Some(&1), "{there:?}");
    assert!(
        here.is_empty(),
        "the namespace's own config shadows it: {here:?}"
    );

    let offset = audit_offset(&env);
    airunway_e2e::manifests::apply(
        &env.client,
        &[namespaced_config(
            &env.namespace,
            CONFIG,
            json!({"env": [{"name": "LOG_LEVEL", "value": "error"}]}),
        )],
    )
    .await;
    let new_namespace_hash = spec_hash(&namespaced.get(CONFIG).await.unwrap().spec.defaults);
    wait_for(&api, "named", WAIT, "the new namespaced hash", |md| {
        hash_of(md).as_deref() == Some(new_namespace_hash.as_str())
    })
    .await;
    tokio::time::sleep(QUIET).await;
    let here = status_writes(&env, offset, &env.namespace);
    let there = status_writes(&env, offset, &other.namespace);
    println!("namespaced config change: status writes {here:?} and {there:?}");
    assert_eq!(here, BTreeMap::from([("named".to_string(), 1)]));
    assert!(there.is_empty(), "{there:?}");

    // 6. Defaults the reconcile-time validation refuses (an image reference; the CRD admits
    // any string of its length) name the config.
    airunway_e2e::manifests::apply(
        &env.client,
        &[namespaced_config(
            &env.namespace,
            "bad",
            json!({"engineImages": {"llamacpp": "Not A/valid image"}}),
        )],
    )
    .await;
    create(&api, &deployment("broken", Some("bad"))).await;
    let (_, c) = wait_for_condition(
        &api,
        "broken",
        WAIT,
        condition_types::VALIDATED,
        ConditionStatus::False,
    )
    .await;
    let message = c.message.unwrap();
    assert!(
        message.contains(&format!("(from RuntimeConfig {}/bad)", env.namespace)),
        "{message}"
    );

    // 7. The namespaced config deleted: the cluster config applies again; the cluster config
    // deleted too: the deployment keeps its provider and its last config, and says so.
    namespaced
        .delete(CONFIG, &DeleteParams::default())
        .await
        .unwrap();
    wait_for(&api, "named", WAIT, "back to the cluster config", |md| {
        hash_of(md).as_deref() == Some(new_cluster_hash.as_str())
    })
    .await;
    clusters
        .delete(CONFIG, &DeleteParams::default())
        .await
        .unwrap();
    let (md, c) = wait_for_condition(&api, "named", WAIT, t, ConditionStatus::False).await;
    assert!(
        c.message
            .as_deref()
            .unwrap()
            .contains("keeps running as last applied"),
        "{c:?}"
    );
    assert_eq!(md.selected_provider(), Some("kaito"));
    assert_eq!(hash_of(&md), Some(new_cluster_hash));
    core.process.terminate(Duration::from_secs(10));
    delete_all(&env.client).await;
}

#[tokio::test]
async fn labels_propagate_to_the_claim_the_cache_and_the_download_job() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("runtime-config-labels").await;
    let _core = start_core(
        &env,
        &env.control_plane.kubeconfig,
        &[],
        "core-runtime-config-labels",
    )
    .await;
    airunway_e2e::manifests::apply(
        &env.client,
        &[namespaced_config(
            &env.namespace,
            "default",
            json!({"labelPropagation": {"enabled": true, "match": ["org.example/*"]}}),
        )],
    )
    .await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let md: ModelDeployment = serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "labelled",
            "labels": {"org.example/team": "ml", "org.example/cost-center": "42", "unrelated": "x"}},
        "spec": {"model": {"id": "org/model", "storage": {"volumes": [
                {"name": "cache", "purpose": "modelCache", "size": "1Gi"}]}},
            "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}},
    }))
    .unwrap();
    create(&api, &md).await;
    let md = wait_for(
        &api,
        "labelled",
        WAIT,
        "the namespace's default config",
        |md| effective(md).is_some(),
    )
    .await;
    assert_eq!(
        md.condition(condition_types::RUNTIME_CONFIG_RESOLVED)
            .and_then(|c| c.reason.clone())
            .as_deref(),
        Some(reasons::runtime_config::NAMESPACE_CONFIG)
    );
    let propagated = |labels: Option<&BTreeMap<String, String>>| -> BTreeMap<String, String> {
        labels
            .into_iter()
            .flatten()
            .filter(|(k, _)| k.starts_with("org.example/") || k.as_str() == "unrelated")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let expected = |team: &str| {
        BTreeMap::from([
            ("org.example/cost-center".to_string(), "42".to_string()),
            ("org.example/team".to_string(), team.to_string()),
        ])
    };
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(env.client.clone(), &env.namespace);
    let caches: Api<ModelCache> = Api::namespaced(env.client.clone(), &env.namespace);
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), &env.namespace);
    let job_name = storage::download_job_name("labelled-cache");
    let claim = wait_for(&claims, "labelled-cache", WAIT, "created", |_| true).await;
    assert_eq!(propagated(claim.metadata.labels.as_ref()), expected("ml"));
    let cache = wait_for(&caches, "labelled-cache", WAIT, "created", |_| true).await;
    assert_eq!(propagated(cache.metadata.labels.as_ref()), expected("ml"));
    let job = wait_for(&jobs, &job_name, WAIT, "created", |_| true).await;
    assert_eq!(propagated(job.metadata.labels.as_ref()), expected("ml"));
    let template = job
        .spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.labels.as_ref());
    assert_eq!(
        propagated(template),
        expected("ml"),
        "the Job's Pod template"
    );

    // A changed value follows on the claim, the cache and the Job (its Pod template is
    // immutable: it keeps the value it was created with).
    api.patch(
        "labelled",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"org.example/team": "infra"}}})),
    )
    .await
    .unwrap();
    let has = |team: &'static str| {
        move |o: &BTreeMap<String, String>| {
            o.get("org.example/team").map(String::as_str) == Some(team)
        }
    };
    wait_for(&claims, "labelled-cache", WAIT, "relabelled", |c| {
        has("infra")(c.labels())
    })
    .await;
    wait_for(&caches, "labelled-cache", WAIT, "relabelled", |c| {
        has("infra")(c.labels())
    })
    .await;
    let job = wait_for(&jobs, &job_name, WAIT, "relabelled", |j| {
        has("infra")(j.labels())
    })
    .await;
    assert_eq!(propagated(job.metadata.labels.as_ref()), expected("infra"));
}
