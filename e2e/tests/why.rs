//! `kubectl airunway why` and `kubectl airunway providers` (issue 40, day two) against the real
//! control plane, with the real core and the real `airunway-provider-vllm` (as its
//! ServiceAccount, its Pods on KWOK's simulated GPU nodes): the plugin runs as a process with
//! the test's kubeconfig, and what it prints is checked against the objects.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use airunway_api::constants::{condition_types, reasons};
use airunway_api::v1alpha1::{ConditionStatus, InferenceProviderConfig, ModelDeployment, Phase};
use airunway_e2e::stack::{self, FAST_HEALTH, Running};
use airunway_e2e::wait::wait_for;
use airunway_e2e::{TestEnv, cluster_lock, paths};
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

/// The core and the vLLM provider.
async fn start(env: &TestEnv) -> (Running, Running) {
    airunway_e2e::providers::delete_all(&env.client).await;
    let core = stack::start_core(env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
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
    // Ready (the provider's word), then Available (the core's, written on its own after it
    // sees the registration): `why` reports the second.
    wait_for(&ipcs, "vllm", WAIT, "ready and Available", |i| {
        let status = i.status.as_ref();
        status.and_then(|s| s.ready) == Some(true)
            && status
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|conditions| {
                    conditions.iter().any(|c| {
                        c.type_ == condition_types::AVAILABLE && c.status == ConditionStatus::True
                    })
                })
    })
    .await;
    (core, provider)
}

/// A Qwen3 deployment on provider `provider`, its image pinned by digest (nothing to resolve).
fn deployment(name: &str, provider: &str) -> ModelDeployment {
    serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": name},
        "spec": {"model": {"id": "Qwen/Qwen3-0.6B"},
                 "engine": {"type": "vllm",
                            "image": format!("vllm/vllm-openai@sha256:{}", "a".repeat(64))},
                 "resources": {"gpu": {"count": 1}},
                 "provider": {"name": provider}},
    }))
    .unwrap()
}

/// Runs `kubectl-airunway <args>` with the test's kubeconfig: (exit code, stdout, stderr).
async fn plugin(env: &TestEnv, args: &[&str]) -> (i32, String, String) {
    let binary = paths::our_binary("kubectl-airunway").unwrap();
    let output = tokio::process::Command::new(binary)
        .args(args)
        .env("KUBECONFIG", &env.control_plane.kubeconfig)
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `why -o json` of deployment `name`.
async fn why_json(env: &TestEnv, name: &str) -> (i32, Value) {
    let (code, stdout, stderr) =
        plugin(env, &["why", name, "-n", &env.namespace, "-o", "json"]).await;
    let report = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("why {name}: not JSON ({e}): {stdout}\n{stderr}"));
    (code, report)
}

#[tokio::test]
async fn why_and_providers_tell_what_the_objects_say() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("why").await;
    let (_core, _provider) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    mds.create(&PostParams::default(), &deployment("served", "vllm"))
        .await
        .unwrap();
    mds.create(&PostParams::default(), &deployment("orphan", "nobody"))
        .await
        .unwrap();
    let served = wait_for(&mds, "served", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    let orphan = wait_for(&mds, "orphan", WAIT, "Pending on its provider", |md| {
        md.phase() == Some(Phase::Pending)
            && md
                .condition(condition_types::PROVIDER_HEALTHY)
                .and_then(|c| c.reason.as_deref())
                == Some(reasons::PROVIDER_NOT_REGISTERED)
    })
    .await;

    // The Running deployment: its decision, a healthy provider, its upstream objects.
    let (code, report) = why_json(&env, "served").await;
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["phase"], "Running");
    assert_eq!(report["decision"]["provider"], "vllm");
    assert_eq!(report["decision"]["engine"], "vllm");
    assert_eq!(report["provider"]["state"], "healthy", "{report}");
    assert_eq!(report["provider"]["registered"], true);
    assert!(report["provider"]["heartbeatAgeSeconds"].as_i64().unwrap() < 30);
    let provider_status = served.status.clone().unwrap().provider.unwrap();
    let kinds: Vec<(String, String)> = report["upstream"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["kind"].as_str().unwrap().to_string(),
                u["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    if let (Some(kind), Some(name)) = (provider_status.resource_kind, provider_status.resource_name)
    {
        assert!(kinds.contains(&(kind, name)), "{kinds:?}");
    }
    assert!(kinds.iter().any(|(k, _)| k == "Deployment"), "{kinds:?}");
    assert!(report["notReady"].is_null(), "{report}");
    let (code, human, _) = plugin(&env, &["why", "served", "-n", &env.namespace]).await;
    assert_eq!(code, 0);
    assert!(human.contains("Phase:      Running"), "{human}");
    assert!(human.contains("Health:     vllm: healthy"), "{human}");

    // The deployment on an unregistered provider: Pending, and says the provider is missing.
    let (code, report) = why_json(&env, "orphan").await;
    assert_eq!(code, 1, "{report}");
    let phase = orphan.status.clone().unwrap().phase.map(|p| p.to_string());
    assert_eq!(report["phase"].as_str(), phase.as_deref());
    assert_eq!(report["phase"], "Pending");
    assert_eq!(report["decision"]["provider"], "nobody");
    assert_eq!(report["provider"]["registered"], false);
    assert_eq!(report["provider"]["state"], "not registered");
    assert_eq!(report["upstream"], json!([]));
    let conditions = report["conditions"].as_array().unwrap().len();
    assert_eq!(
        conditions,
        orphan
            .status
            .unwrap()
            .conditions
            .map(|c| c.len())
            .unwrap_or(0)
    );

    let (code, human, _) = plugin(&env, &["why", "orphan", "-n", &env.namespace]).await;
    assert_eq!(code, 1);
    assert!(
        human.contains("Health:     nobody: not registered"),
        "{human}"
    );
    assert!(human.contains(reasons::PROVIDER_NOT_REGISTERED), "{human}");

    // A deployment that does not exist: exit 2 and a message.
    let (code, _, stderr) = plugin(&env, &["why", "absent", "-n", &env.namespace]).await;
    assert_eq!(code, 2);
    assert!(stderr.contains("not found"), "{stderr}");

    // providers: every registration, and the deployments each serves (all namespaces).
    let (code, stdout, stderr) = plugin(&env, &["providers", "-o", "json"]).await;
    assert_eq!(code, 0, "{stderr}");
    let rows: Value = serde_json::from_str(&stdout).unwrap();
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    let registered: Vec<String> = ipcs
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|i| i.metadata.name)
        .collect();
    let mut named: Vec<String> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
    named.sort();
    let mut expected = registered.clone();
    expected.sort();
    assert_eq!(named, expected);
    let all: Api<ModelDeployment> = Api::all(env.client.clone());
    let on_vllm = all
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|md| {
            md.status
                .as_ref()
                .and_then(|s| s.provider.as_ref())
                .and_then(|p| p.name.as_deref())
                == Some("vllm")
        })
        .count();
    let vllm = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "vllm")
        .unwrap();
    assert_eq!(vllm["deployments"].as_u64(), Some(on_vllm as u64));
    assert!(on_vllm >= 1);
    assert_eq!(vllm["state"], "healthy");
    assert!(
        vllm["engines"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "vllm"),
        "{vllm}"
    );
    let (_, table, _) = plugin(&env, &["providers"]).await;
    assert!(table.starts_with("NAME"), "{table}");
    assert!(table.lines().any(|l| l.starts_with("vllm ")), "{table}");
}
