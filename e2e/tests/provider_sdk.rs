//! The provider SDK through the example third-party provider (`examples/configmap-provider`,
//! built only on `airunway-api`), against the real control plane with the real core: its
//! registration, probe and heartbeat; the lifecycle of a deployment; drift; recreation;
//! deletion; stale-provider detection; SIGTERM; the finalizer timeout; field ownership.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use airunway_api::constants::{condition_types, reasons};
use airunway_api::probe::v1::GetInfoRequest;
use airunway_api::probe::v1::provider_service_client::ProviderServiceClient;
use airunway_api::v1alpha1::{
    ConditionStatus, InferenceProviderConfig, ModelDeployment, Phase, ProviderStatus,
};
use airunway_e2e::stack::{self, FAST_HEALTH, Running, start_core, start_provider};
use airunway_e2e::wait::{wait_deleted, wait_for, wait_for_condition};
use airunway_e2e::{TestEnv, cluster_lock};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);
const PROVIDER: &str = "configmap-provider";

async fn provider_identity(env: &TestEnv) -> PathBuf {
    stack::service_account_identity(
        env,
        "examples/configmap-provider/deploy/rbac.yaml",
        "configmap-provider",
    )
    .await
}

async fn start_example(env: &TestEnv, kubeconfig: &std::path::Path, extra: &[&str]) -> Running {
    let mut args = vec!["--heartbeat-interval=1s"];
    args.extend_from_slice(extra);
    start_provider(env, PROVIDER, kubeconfig, &args, "configmap-0").await
}

async fn clean_slate(env: &TestEnv) {
    airunway_e2e::providers::delete_all(&env.client).await;
}

fn deployment(name: &str, spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": name, "labels": {"airunway.ai/team": "research", "app": "not-propagated"}}, "spec": spec}))
    .unwrap()
}

#[tokio::test]
async fn registration_probe_and_heartbeat() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("sdk-registration").await;
    clean_slate(&env).await;
    let kubeconfig = provider_identity(&env).await;
    let core = start_core(&env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let provider = start_example(&env, &kubeconfig, &[]).await;
    let probe = provider.probe.unwrap();
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    let ipc = wait_for(
        &ipcs,
        "configmap",
        WAIT,
        "registration and a heartbeat",
        |ipc| {
            ipc.status
                .as_ref()
                .is_some_and(|s| s.ready == Some(true) && s.last_heartbeat.is_some())
        },
    )
    .await;
    let engines = ipc
        .spec
        .capabilities
        .as_ref()
        .unwrap()
        .engine_capabilities();
    assert_eq!(
        engines.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
        ["vllm", "llamacpp"]
    );
    assert_eq!(
        ipc.spec.selection_rules.as_ref().unwrap()[0].condition,
        "spec.model.id.startsWith('example/')"
    );
    assert_eq!(
        ipc.spec.probe.as_ref().unwrap().endpoint.as_deref(),
        Some(format!("127.0.0.1:{probe}").as_str())
    );
    let status = ipc.status.clone().unwrap();
    assert_eq!(status.version.as_deref(), Some("configmap-provider:0.1.0"));
    assert_eq!(status.upstream_crd_version.as_deref(), Some("v1"));

    // GetInfo answers over gRPC, and so does the standard health service.
    let mut client = ProviderServiceClient::connect(format!("http://127.0.0.1:{probe}"))
        .await
        .unwrap();
    let info = client
        .get_info(GetInfoRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (info.name.as_str(), info.version.as_str()),
        ("configmap", "configmap-provider:0.1.0")
    );
    assert_eq!(info.engines.len(), 2);
    assert_eq!(info.upstream_health.unwrap().status, 1, "HEALTHY");
    let channel = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{probe}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    let serving = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(serving.status, 1, "SERVING");

    // The heartbeat advances; the core records the provider as available.
    let first = status.last_heartbeat.unwrap();
    let ipc = wait_for(
        &ipcs,
        "configmap",
        WAIT,
        "a later heartbeat and Available=True",
        |ipc| {
            let s = ipc.status.as_ref().unwrap();
            s.last_heartbeat.as_ref().is_some_and(|t| t.0 > first.0)
                && s.conditions
                    .iter()
                    .flatten()
                    .any(|c| c.type_ == condition_types::AVAILABLE && c.is_true())
        },
    )
    .await;
    // Field ownership on the IPC: the provider owns its status fields, the core only Available.
    let managers: BTreeSet<String> = ipc
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert!(
        managers.contains("configmap-provider") && managers.contains("airunway-core"),
        "{managers:?}"
    );
    let core_fields = ipc
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .find(|m| m.manager.as_deref() == Some("airunway-core"))
        .unwrap()
        .fields_v1
        .clone()
        .unwrap()
        .0;
    assert_eq!(
        core_fields,
        json!({"f:status": {"f:conditions": {"k:{\"type\":\"Available\"}": {".": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:observedGeneration": {}, "f:reason": {}, "f:status": {}, "f:type": {}}}}})
    );
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}

#[tokio::test]
async fn lifecycle_drift_recreate_and_deletion() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("sdk-lifecycle").await;
    clean_slate(&env).await;
    let kubeconfig = provider_identity(&env).await;
    let core = start_core(&env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let provider = start_example(&env, &kubeconfig, &[]).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), &env.namespace);

    mds.create(
        &PostParams::default(),
        &deployment(
            "chat",
            json!({"model": {"id": "example/chat"}, "engine": {"type": "llamacpp"}}),
        ),
    )
    .await
    .unwrap();
    let md = wait_for(&mds, "chat", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    let status = md.status.clone().unwrap();
    assert_eq!(
        status.provider,
        Some(ProviderStatus {
            name: Some("configmap".into()),
            selected_reason: Some(
                "matched capabilities: engine=llamacpp, gpu=false, mode=aggregated".into()
            ),
            resource_name: Some("chat".into()),
            resource_kind: Some("ConfigMap".into()),
            ..Default::default()
        })
    );
    assert_eq!(status.endpoint.as_ref().unwrap().port, Some(8000));
    assert_eq!(status.replicas.as_ref().unwrap().ready, Some(1));
    for (t, reason) in [
        (
            condition_types::PROVIDER_COMPATIBLE,
            reasons::COMPATIBILITY_VERIFIED,
        ),
        (condition_types::RESOURCE_CREATED, reasons::RESOURCE_CREATED),
        (condition_types::READY, reasons::DEPLOYMENT_READY),
    ] {
        let c = md.condition(t).unwrap();
        assert_eq!(
            (c.status, c.reason.as_deref()),
            (ConditionStatus::True, Some(reason)),
            "{t}"
        );
    }
    assert_eq!(
        md.condition(condition_types::RESOURCE_CREATED)
            .unwrap()
            .message
            .as_deref(),
        Some("ConfigMap created successfully")
    );
    assert!(
        md.finalizers()
            .contains(&"airunway.ai/configmap-provider".to_string())
    );

    let cm = cms.get("chat").await.unwrap();
    let owner = &cm.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (
            owner.kind.as_str(),
            owner.name.as_str(),
            owner.controller,
            owner.block_owner_deletion
        ),
        ("ModelDeployment", "chat", Some(true), Some(true))
    );
    assert_eq!(owner.uid, md.uid().unwrap());
    let labels = cm.metadata.labels.clone().unwrap();
    assert_eq!(
        labels.get("airunway.ai/managed-by").map(String::as_str),
        Some("airunway")
    );
    assert_eq!(
        labels.get("airunway.ai/team").map(String::as_str),
        Some("research")
    );
    assert!(
        !labels.contains_key("app"),
        "only airunway.ai/ labels are propagated"
    );
    env.wait_for_event("ResourceCreated", |n| n == "Created ConfigMap 'chat'")
        .await;

    // status.workload as a third-party provider fills it: the ConfigMap as the upstream object
    // (with its uid); a ConfigMap runs no pods, so no workloads, no pod selector and no
    // status.selector.
    let workload = status.workload.clone().unwrap();
    let upstream = workload.upstream.clone().unwrap();
    assert_eq!(
        (
            upstream.api_version.as_str(),
            upstream.kind.as_str(),
            upstream.name.as_str(),
            upstream.uid.as_deref()
        ),
        ("v1", "ConfigMap", "chat", cm.uid().as_deref())
    );
    assert_eq!(
        (
            workload.workloads.as_ref(),
            workload.pod_selector.as_ref(),
            workload.container.as_ref(),
            workload.port
        ),
        (None, None, None, None)
    );
    assert_eq!(status.selector, None);
    // Degraded, written by the SDK from the replica counts.
    let degraded = md.condition(condition_types::DEGRADED).unwrap();
    assert_eq!(
        (
            degraded.status,
            degraded.reason.as_deref(),
            degraded.message.as_deref()
        ),
        (
            ConditionStatus::False,
            Some(reasons::NOT_DEGRADED),
            Some("1 of 1 replicas ready")
        )
    );

    // managedFields: the provider owns exactly its status fields, the core exactly its own.
    let owned = |manager: &str| -> BTreeSet<String> {
        md.metadata
            .managed_fields
            .iter()
            .flatten()
            .filter(|m| {
                m.manager.as_deref() == Some(manager) && m.subresource.as_deref() == Some("status")
            })
            .flat_map(|m| {
                let status = m.fields_v1.clone().unwrap().0["f:status"].clone();
                let mut keys: Vec<String> = Vec::new();
                for (k, v) in status.as_object().unwrap() {
                    if k == "f:conditions" || k == "f:provider" {
                        keys.extend(
                            v.as_object()
                                .unwrap()
                                .keys()
                                .filter(|x| *x != ".")
                                .map(|x| format!("{k}/{x}")),
                        );
                    } else {
                        keys.push(k.clone());
                    }
                }
                keys
            })
            .collect()
    };
    let provider_owned = owned("configmap-provider");
    assert_eq!(
        provider_owned,
        BTreeSet::from([
            "f:conditions/k:{\"type\":\"Degraded\"}".to_string(),
            "f:conditions/k:{\"type\":\"ProviderCompatible\"}".to_string(),
            "f:conditions/k:{\"type\":\"Ready\"}".to_string(),
            "f:conditions/k:{\"type\":\"Reconciling\"}".to_string(),
            "f:conditions/k:{\"type\":\"ResourceCreated\"}".to_string(),
            "f:conditions/k:{\"type\":\"Stalled\"}".to_string(),
            "f:endpoint".to_string(),
            "f:message".to_string(),
            "f:observedGeneration".to_string(),
            "f:phase".to_string(),
            "f:provider/f:resourceKind".to_string(),
            "f:provider/f:resourceName".to_string(),
            "f:replicas".to_string(),
            "f:workload".to_string(),
        ])
    );
    // The core owns its own fields, plus at most a share of what goes with the phase (the
    // same values it wrote before the hand-over), which the provider owns too.
    let mut core_owned = owned("airunway-core");
    // GatewayReady: a core condition (constants::condition_types::CORE_OWNED) the gateway
    // integration writes; its own suite checks it.
    core_owned.remove("f:conditions/k:{\"type\":\"GatewayReady\"}");
    let core_only = BTreeSet::from([
        "f:conditions/k:{\"type\":\"EngineSelected\"}".to_string(),
        "f:conditions/k:{\"type\":\"ProviderHealthy\"}".to_string(),
        "f:conditions/k:{\"type\":\"ProviderSelected\"}".to_string(),
        "f:conditions/k:{\"type\":\"RuntimeConfigResolved\"}".to_string(),
        "f:conditions/k:{\"type\":\"Validated\"}".to_string(),
        "f:engine".to_string(),
        "f:provider/f:name".to_string(),
        "f:provider/f:selectedReason".to_string(),
    ]);
    let shared = BTreeSet::from([
        "f:conditions/k:{\"type\":\"Reconciling\"}".to_string(),
        "f:conditions/k:{\"type\":\"Stalled\"}".to_string(),
        "f:observedGeneration".to_string(),
    ]);
    assert!(core_only.is_subset(&core_owned), "{core_owned:?}");
    for field in core_owned.difference(&core_only) {
        assert!(
            shared.contains(field) && provider_owned.contains(field),
            "the core owns {field} alone: {core_owned:?}"
        );
    }
    // kstatus and kubectl wait: Running is Ready, neither reconciling nor stalled, and the
    // provider has acted on this generation.
    assert_eq!(status.observed_generation, md.metadata.generation);
    assert!(md.condition(condition_types::READY).unwrap().is_true());
    assert!(
        !md.condition(condition_types::RECONCILING)
            .unwrap()
            .is_true()
    );
    assert!(!md.condition(condition_types::STALLED).unwrap().is_true());

    // Drift: a direct edit is reverted with a DriftDetected event.
    cms.patch(
        "chat",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"replicas": "99"}})),
    )
    .await
    .unwrap();
    wait_for(&cms, "chat", WAIT, "the edit to be reverted", |cm| {
        cm.data.as_ref().unwrap()["replicas"] == "1"
    })
    .await;
    env.wait_for_event("DriftDetected", |n| {
        n.starts_with("Provider resource was modified directly, reconciling")
    })
    .await;

    // A config field changes in place (same object): here `kubectl scale` through the
    // ModelDeployment's scale subresource, which a third-party provider gets with the CRD; an
    // identity field recreates the object.
    let uid = cms.get("chat").await.unwrap().uid().unwrap();
    airunway_e2e::scale::kubectl_scale(&env, "chat", 3).await;
    let cm = wait_for(&cms, "chat", WAIT, "replicas 3", |cm| {
        cm.data.as_ref().unwrap()["replicas"] == "3"
    })
    .await;
    assert_eq!(cm.uid().unwrap(), uid, "a config change must not recreate");
    mds.patch(
        "chat",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"model": {"id": "example/chat-v2"}}})),
    )
    .await
    .unwrap();
    let cm = wait_for(&cms, "chat", WAIT, "the recreated ConfigMap", |cm| {
        cm.data.as_ref().unwrap()["model"] == "example/chat-v2"
    })
    .await;
    assert_ne!(cm.uid().unwrap(), uid, "an identity change must recreate");
    let recreated = cm.uid();
    // Running again, and status.workload names the new ConfigMap.
    wait_for(
        &mds,
        "chat",
        WAIT,
        "Running again on the new ConfigMap",
        |md| {
            md.phase() == Some(Phase::Running)
                && md
                    .status
                    .as_ref()
                    .and_then(|s| s.workload.as_ref())
                    .and_then(|w| w.upstream.as_ref())
                    .and_then(|u| u.uid.clone())
                    == recreated
        },
    )
    .await;

    // Deletion removes the ConfigMap and releases the deployment.
    mds.delete("chat", &DeleteParams::default()).await.unwrap();
    wait_deleted(&mds, "chat", WAIT).await;
    wait_deleted(&cms, "chat", WAIT).await;
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}

#[tokio::test]
async fn stale_provider_detection_and_recovery() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("sdk-stale").await;
    clean_slate(&env).await;
    let kubeconfig = provider_identity(&env).await;
    let core = start_core(&env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let provider = start_example(&env, &kubeconfig, &[]).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    mds.create(&PostParams::default(), &deployment("before", json!({"model": {"id": "example/a"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}}))).await.unwrap();
    wait_for(&mds, "before", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;

    // kill -9: the probe fails; within the threshold the provider is not available.
    let killed = std::time::Instant::now();
    provider.process.kill();
    let ipc = wait_for(
        &ipcs,
        "configmap",
        Duration::from_secs(15),
        "Available=False",
        |ipc| {
            ipc.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| {
                    cs.iter().any(|c| {
                        c.type_ == condition_types::AVAILABLE && c.status == ConditionStatus::False
                    })
                })
        },
    )
    .await;
    eprintln!(
        "provider marked unavailable {:.1}s after kill -9",
        killed.elapsed().as_secs_f64()
    );
    let available = ipc
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == condition_types::AVAILABLE)
        .unwrap();
    assert_eq!(available.reason.as_deref(), Some(reasons::PROBE_FAILED));
    let (_, healthy) = wait_for_condition(
        &mds,
        "before",
        WAIT,
        condition_types::PROVIDER_HEALTHY,
        ConditionStatus::False,
    )
    .await;
    assert_eq!(healthy.reason.as_deref(), Some(reasons::PROVIDER_STALE));
    assert!(
        healthy
            .message
            .as_deref()
            .unwrap()
            .starts_with("Provider configmap is stale since "),
        "{healthy:?}"
    );
    env.wait_for_event("ProviderUnhealthy", |n| {
        n.starts_with("Provider configmap is stale since ")
    })
    .await;

    // A new deployment is not sent to the stale provider.
    mds.create(&PostParams::default(), &deployment("during", json!({"model": {"id": "example/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}}))).await.unwrap();
    let (waiting, _) = wait_for_condition(
        &mds,
        "during",
        WAIT,
        condition_types::PROVIDER_SELECTED,
        ConditionStatus::False,
    )
    .await;
    assert!(
        waiting
            .status
            .as_ref()
            .unwrap()
            .provider
            .as_ref()
            .and_then(|p| p.name.clone())
            .is_none()
    );
    assert_eq!(waiting.status.unwrap().phase, Some(Phase::Pending));

    // Restart: everything recovers.
    let provider = start_example(&env, &kubeconfig, &[]).await;
    wait_for_condition(
        &mds,
        "before",
        WAIT,
        condition_types::PROVIDER_HEALTHY,
        ConditionStatus::True,
    )
    .await;
    wait_for(&mds, "during", WAIT, "selection and Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    env.wait_for_event("ProviderRecovered", |_| true).await;

    // SIGTERM: ready=false is written at once.
    provider.process.terminate(Duration::from_secs(10));
    let ipc = ipcs.get("configmap").await.unwrap();
    assert_eq!(
        ipc.status.as_ref().unwrap().ready,
        Some(false),
        "ready must be false right after SIGTERM"
    );
    let upstream = ipc
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == condition_types::UPSTREAM_AVAILABLE)
        .unwrap();
    assert_eq!(upstream.reason.as_deref(), Some(reasons::SHUTTING_DOWN));
    core.process.terminate(Duration::from_secs(10));
}

#[tokio::test]
async fn finalizer_timeout_releases_a_stuck_deletion() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("sdk-finalizer").await;
    clean_slate(&env).await;
    let kubeconfig = provider_identity(&env).await;
    let core = start_core(&env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let provider = start_example(&env, &kubeconfig, &["--finalizer-timeout=4s"]).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), &env.namespace);
    mds.create(
        &PostParams::default(),
        &deployment(
            "stuck",
            json!({"model": {"id": "example/c"}, "engine": {"type": "llamacpp"}}),
        ),
    )
    .await
    .unwrap();
    wait_for(&mds, "stuck", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    // The "upstream operator" never finishes deleting its object.
    cms.patch(
        "stuck",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": ["e2e.airunway.ai/never"]}})),
    )
    .await
    .unwrap();
    let started = std::time::Instant::now();
    mds.delete("stuck", &DeleteParams::default()).await.unwrap();
    wait_deleted(&mds, "stuck", Duration::from_secs(30)).await;
    let elapsed = started.elapsed();
    eprintln!(
        "deletion released by the finalizer timeout after {:.1}s (timeout 4s)",
        elapsed.as_secs_f64()
    );
    assert!(
        elapsed >= Duration::from_secs(4),
        "released before the timeout: {elapsed:?}"
    );
    env.wait_for_event("FinalizerTimeout", |n| {
        n.starts_with("Finalizer removed after timeout, provider resource may be orphaned")
    })
    .await;
    let orphan = cms.get("stuck").await.unwrap();
    assert!(
        orphan.metadata.deletion_timestamp.is_some(),
        "the orphan is left Terminating for manual cleanup"
    );
    cms.patch(
        "stuck",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}

/// kstatus (the real `sigs.k8s.io/cli-utils`, `e2e/go/kstatus`) of one object: its status.
fn kstatus_of(object: &ModelDeployment) -> String {
    use std::io::Write;
    let binary = std::env::var_os("AIRUNWAY_KSTATUS_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| airunway_e2e::scale::go_program("e2e/go/kstatus/build.sh", "kstatus"));
    let mut child = std::process::Command::new(&binary)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut object = serde_json::to_value(object).unwrap();
    object["apiVersion"] = json!("airunway.ai/v1alpha1");
    object["kind"] = json!("ModelDeployment");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(&[object]).unwrap().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    results[0]["status"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_generation_refused_after_the_provider_took_over_is_failed_for_kstatus() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("sdk-refused-generation").await;
    clean_slate(&env).await;
    let kubeconfig = provider_identity(&env).await;
    // No admission webhook here: the spec below passes the CRD's rules, not the core's checks.
    let core = start_core(&env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let provider = start_example(&env, &kubeconfig, &[]).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    mds.create(
        &PostParams::default(),
        &deployment(
            "refused",
            json!({"model": {"id": "example/chat"}, "engine": {"type": "llamacpp"}}),
        ),
    )
    .await
    .unwrap();
    let running = wait_for(&mds, "refused", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    assert_eq!(kstatus_of(&running), "Current");

    let escalate = json!({"spec": {"provider": {"overrides": {"frontend": {"securityContext": {"privileged": true}}}}}});
    let patched = mds
        .patch("refused", &PatchParams::default(), &Patch::Merge(&escalate))
        .await
        .unwrap();
    let generation = patched.metadata.generation;
    let md = wait_for(
        &mds,
        "refused",
        WAIT,
        "the provider's status for the refused generation",
        |md| {
            md.status.as_ref().and_then(|s| s.observed_generation) == generation
                && md
                    .condition(condition_types::READY)
                    .is_some_and(|c| c.reason.as_deref() == Some("ValidationFailed"))
        },
    )
    .await;
    let status = md.status.clone().unwrap();
    // The ConfigMap of the previous generation still serves: the phase stays, Ready does not.
    assert_eq!(status.phase, Some(Phase::Running));
    let not_ready = status.not_ready.clone().unwrap();
    assert!(
        not_ready.message.starts_with(&format!(
            "Generation {} is not deployed: spec.provider.overrides.frontend.securityContext",
            generation.unwrap()
        )),
        "{}",
        not_ready.message
    );
    assert!(
        not_ready
            .message
            .ends_with("; the previous generation keeps serving"),
        "{}",
        not_ready.message
    );
    let stalled = md.condition(condition_types::STALLED).unwrap();
    assert_eq!(
        (stalled.status, stalled.reason.as_deref()),
        (ConditionStatus::True, Some("ValidationFailed"))
    );
    assert_eq!(
        kstatus_of(&md),
        "Failed",
        "the kstatus gap of docs/notes.md"
    );
    let cm: ConfigMap = Api::namespaced(env.client.clone(), &env.namespace)
        .get("refused")
        .await
        .unwrap();
    assert!(
        !serde_json::to_string(&cm).unwrap().contains("privileged"),
        "nothing of the refused generation is deployed"
    );
    // No churn while it stays refused.
    let version = md.metadata.resource_version.clone();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        mds.get("refused").await.unwrap().metadata.resource_version,
        version
    );

    // Fixed: deployed again, Ready, current.
    let fix = json!({"spec": {"provider": {"overrides": null}}});
    mds.patch("refused", &PatchParams::default(), &Patch::Merge(&fix))
        .await
        .unwrap();
    let md = wait_for(&mds, "refused", WAIT, "Ready again", |md| {
        md.condition(condition_types::READY)
            .is_some_and(|c| c.status == ConditionStatus::True)
            && md.status.as_ref().and_then(|s| s.observed_generation) == md.metadata.generation
    })
    .await;
    assert_eq!(md.status.as_ref().unwrap().not_ready, None);
    assert_eq!(kstatus_of(&md), "Current");
    mds.delete("refused", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&mds, "refused", WAIT).await;
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}
