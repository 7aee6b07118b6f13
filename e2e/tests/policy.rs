//! ModelDeploymentPolicy (issue 36, docs/policy.md) on the real control plane with the real
//! core as its ServiceAccount (the shipped RBAC: the policy caches, the GPU ledger Role in its
//! namespace): admission refusals with the exact message per rule; a namespace quota of 4 GPUs
//! under 16 concurrent creates admits exactly 4 and the ledger agrees; a deletion frees a slot;
//! with the webhook down a violating deployment is stored, reported and held; a policy tightened
//! under a running deployment reports it and leaves it running.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use airunway_api::constants::{condition_types, event_reasons, labels, messages, reasons};
use airunway_api::v1alpha1::{
    ConditionStatus, InferenceProviderConfig, ModelDeployment, ModelDeploymentPolicy, Phase,
};
use airunway_e2e::admission::{
    core_identity, create_raw, deployment, install_webhooks, rejection, remove_webhooks, start_core,
};
use airunway_e2e::binaries::free_port;
use airunway_e2e::providers::delete_all;
use airunway_e2e::stack;
use airunway_e2e::wait::{eventually, wait_for};
use airunway_e2e::{TestEnv, cluster_lock};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

/// A policy selecting only the test's namespace.
async fn create_policy(env: &TestEnv, name: &str, mut spec: Value) -> ModelDeploymentPolicy {
    spec["namespaceSelector"] =
        json!({"matchLabels": {"kubernetes.io/metadata.name": env.namespace}});
    let policy: ModelDeploymentPolicy = serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeploymentPolicy",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap();
    let api: Api<ModelDeploymentPolicy> = Api::all(env.client.clone());
    let _ = api.delete(name, &DeleteParams::default()).await;
    eventually("the policy created", WAIT, || async {
        api.create(&PostParams::default(), &policy)
            .await
            .map_err(|e| e.to_string())
    })
    .await
}

async fn delete_policy(env: &TestEnv, name: &str) {
    let api: Api<ModelDeploymentPolicy> = Api::all(env.client.clone());
    let _ = api.delete(name, &DeleteParams::default()).await;
}

/// Waits until the webhook refuses `object` in a dry run with a message containing `expected`
/// (its policy cache has the policy).
async fn wait_refused(env: &TestEnv, object: &Value, expected: &str) {
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let md: ModelDeployment = serde_json::from_value(object.clone()).unwrap();
    eventually("the webhook to apply the policy", WAIT, || async {
        match api
            .create(
                &PostParams {
                    dry_run: true,
                    ..Default::default()
                },
                &md,
            )
            .await
        {
            Err(e) if e.to_string().contains(expected) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}

fn gpu_deployment(name: &str, gpus: i32) -> Value {
    deployment(
        name,
        json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": gpus}}}),
    )
}

/// The ledger's entries: deployment → GPUs.
async fn ledger(env: &TestEnv) -> BTreeMap<String, i64> {
    let configmaps: Api<ConfigMap> = Api::namespaced(env.client.clone(), &env.namespace);
    let ledger = configmaps
        .get(&format!("airunway-gpu-ledger-{}", env.namespace))
        .await
        .unwrap();
    ledger
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(name, value)| {
            let entry: Value = serde_json::from_str(&value).unwrap();
            (name, entry["gpus"].as_i64().unwrap())
        })
        .collect()
}

#[tokio::test]
async fn admission_refuses_each_rule_with_the_exact_message() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("policy-rules").await;
    delete_all(&env.client).await;
    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let core = start_core(&env, &kubeconfig, port, &[]).await;
    create_policy(
        &env,
        "team-limits",
        json!({"allowedProviders": ["vllm"], "allowedEngines": ["vllm", "llamacpp"],
               "allowedImages": ["registry.example.com/team"], "maxGpusPerDeployment": 4,
               "allowedOverridePaths": ["deployment.*"]}),
    )
    .await;
    let policy = "team-limits";
    let too_many = messages::policy::too_many_gpus(
        policy,
        4,
        "spec.resources.gpu.count × spec.scaling.replicas (4 × 2)",
        8,
    );
    let big = deployment(
        "big",
        json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 4}}, "scaling": {"replicas": 2}}),
    );
    wait_refused(&env, &big, &too_many).await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);

    let cases = [
        (
            deployment(
                "kaito",
                json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}, "provider": {"name": "kaito"}}),
            ),
            "spec.provider.name",
            messages::policy::provider_not_allowed(policy, "[vllm]", "spec.provider.name", "kaito"),
        ),
        (
            deployment(
                "sglang",
                json!({"model": {"id": "a/b"}, "engine": {"type": "sglang"}, "resources": {"gpu": {"count": 1}}}),
            ),
            "spec.engine.type",
            messages::policy::engine_not_allowed(
                policy,
                "[vllm, llamacpp]",
                "spec.engine.type",
                "sglang",
            ),
        ),
        (
            deployment(
                "hub-image",
                json!({"model": {"id": "a/b"}, "engine": {"type": "vllm", "image": "vllm/vllm-openai:v0.9.0"}, "resources": {"gpu": {"count": 1}}}),
            ),
            "spec.engine.image",
            messages::policy::image_not_allowed(
                policy,
                "[registry.example.com/team]",
                "spec.engine.image",
                "vllm/vllm-openai:v0.9.0",
                "docker.io/vllm/vllm-openai",
            ),
        ),
        (big, "spec.resources.gpu.count", too_many.clone()),
        (
            deployment(
                "override",
                json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}},
                       "provider": {"overrides": {"deployment": {"spec": {"minReadySeconds": 5}}, "routerMode": "kv"}}}),
            ),
            "spec.provider.overrides.routerMode",
            messages::policy::override_not_allowed(
                policy,
                "[deployment.*]",
                "spec.provider.overrides.routerMode",
            ),
        ),
    ];
    for (object, field, expected) in cases {
        let name = object["metadata"]["name"].clone();
        let (message, fields) = rejection(&api, object).await;
        println!("{name}: {message}");
        assert!(
            message.contains(&format!("{field}: {expected}")),
            "{name}: {message}\nexpected: {expected}"
        );
        assert_eq!(fields, [field], "{name}");
    }
    // What keeps every rule is admitted (a registry image, two GPUs, an allowed override).
    let (code, _, body) = create_raw(
        &env.client,
        &env.namespace,
        &deployment(
            "compliant",
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm", "image": "registry.example.com/team/vllm:1"},
                   "resources": {"gpu": {"count": 2}}, "provider": {"overrides": {"deployment": {"spec": {"minReadySeconds": 5}}}}}),
        ),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let (md, _) = airunway_e2e::wait::wait_for_condition(
        &api,
        "compliant",
        WAIT,
        condition_types::POLICY_COMPLIANT,
        ConditionStatus::True,
    )
    .await;
    assert_eq!(
        md.condition(condition_types::POLICY_COMPLIANT)
            .unwrap()
            .reason
            .as_deref(),
        Some(reasons::policy::COMPLIANT)
    );

    delete_policy(&env, policy).await;
    core.terminate(Duration::from_secs(10));
    remove_webhooks(&env.client).await;
}

#[tokio::test]
async fn a_quota_of_four_admits_exactly_four_of_sixteen_concurrent_creates() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("policy-quota").await;
    delete_all(&env.client).await;
    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let core = start_core(&env, &kubeconfig, port, &[]).await;
    let policy = "team-quota";
    create_policy(&env, policy, json!({"gpuQuota": 4})).await;
    let namespace = env.namespace.clone();
    let formula =
        |gpus: i64| format!("spec.resources.gpu.count × spec.scaling.replicas ({gpus} × 1)");
    // A dry run over the quota: refused, and it writes nothing (no ledger yet afterwards).
    wait_refused(
        &env,
        &gpu_deployment("five", 5),
        &messages::policy::quota_exceeded(policy, &namespace, 4, 0, &formula(5), 5),
    )
    .await;
    let configmaps: Api<ConfigMap> = Api::namespaced(env.client.clone(), &env.namespace);
    assert!(
        configmaps
            .get_opt(&format!("airunway-gpu-ledger-{namespace}"))
            .await
            .unwrap()
            .is_none(),
        "a dry run never writes the ledger"
    );

    // 16 creates of one GPU each at once.
    let started = Instant::now();
    let creates = (0..16).map(|i| {
        let client = env.client.clone();
        let namespace = namespace.clone();
        async move {
            let name = format!("burst-{i:02}");
            let (code, _, body) = create_raw(&client, &namespace, &gpu_deployment(&name, 1)).await;
            (name, code, body)
        }
    });
    let results = futures::future::join_all(creates).await;
    println!("16 concurrent creates answered in {:?}", started.elapsed());
    let admitted: Vec<String> = results
        .iter()
        .filter(|(_, code, _)| *code == 201)
        .map(|(name, _, _)| name.clone())
        .collect();
    let refusals: Vec<String> = results
        .iter()
        .filter(|(_, code, _)| *code != 201)
        .map(|(_, code, body)| format!("{code} {}", body["message"].as_str().unwrap_or_default()))
        .collect();
    println!("admitted {admitted:?}");
    for refusal in &refusals {
        println!("refused: {refusal}");
    }
    assert_eq!(
        admitted.len(),
        4,
        "exactly four fit: {admitted:?} {refusals:?}"
    );
    let full = messages::policy::quota_exceeded(policy, &namespace, 4, 4, &formula(1), 1);
    assert!(
        refusals.iter().all(|r| r.contains(&full)),
        "every refusal names the quota: {refusals:?}"
    );
    // The ledger agrees: the four admitted, one GPU each.
    let entries = ledger(&env).await;
    assert_eq!(
        entries.keys().cloned().collect::<Vec<_>>(),
        admitted,
        "{entries:?}"
    );
    assert_eq!(entries.values().sum::<i64>(), 4);
    // The stored ones comply (reconcile time, in creation order).
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    for name in &admitted {
        airunway_e2e::wait::wait_for_condition(
            &api,
            name,
            WAIT,
            condition_types::POLICY_COMPLIANT,
            ConditionStatus::True,
        )
        .await;
    }

    // Deleting one frees one slot: the core prunes its entry on the deletion.
    api.delete(&admitted[0], &DeleteParams::default())
        .await
        .unwrap();
    let freed = Instant::now();
    eventually("the freed slot to be admitted", WAIT, || async {
        let (code, _, body) = create_raw(
            &env.client,
            &env.namespace,
            &gpu_deployment("after-delete", 1),
        )
        .await;
        if code == 201 {
            Ok(())
        } else {
            Err(format!("{code} {body}"))
        }
    })
    .await;
    println!("slot free again {:?} after the deletion", freed.elapsed());
    let (code, _, body) = create_raw(
        &env.client,
        &env.namespace,
        &gpu_deployment("one-too-many", 1),
    )
    .await;
    assert_ne!(code, 201, "the quota is full again: {body}");
    let entries = ledger(&env).await;
    assert!(!entries.contains_key(&admitted[0]), "{entries:?}");
    assert!(entries.contains_key("after-delete"), "{entries:?}");
    assert_eq!(entries.values().sum::<i64>(), 4);

    delete_policy(&env, policy).await;
    // No quota selects the namespace any more: the core deletes the ledger.
    eventually("the ledger deleted", WAIT, || async {
        match configmaps
            .get_opt(&format!("airunway-gpu-ledger-{namespace}"))
            .await
        {
            Ok(None) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    core.terminate(Duration::from_secs(10));
    remove_webhooks(&env.client).await;
}

#[tokio::test]
async fn reconcile_time_holds_new_violations_and_reports_running_ones() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("policy-reconcile").await;
    delete_all(&env.client).await;
    // The webhook is down (no configurations registered, as when the core is unreachable and
    // failurePolicy Ignore lets writes through): only reconcile-time enforcement acts.
    remove_webhooks(&env.client).await;
    let kubeconfig = core_identity(&env).await;
    let core = start_core(&env, &kubeconfig, free_port(), &stack::FAST_HEALTH).await;
    let identity = stack::service_account_identity(
        &env,
        "deploy/providers/vllm/rbac.yaml",
        "airunway-provider-vllm",
    )
    .await;
    let provider = stack::start_provider(
        &env,
        "airunway-provider-vllm",
        &identity,
        &["--heartbeat-interval=1s"],
        "vllm-0",
    )
    .await;
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, "vllm", WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let on_vllm = |gpus: i32| {
        json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm", "image": format!("127.0.0.1:{port}/vllm/vllm-openai:offline")},
               "resources": {"gpu": {"count": gpus}}, "provider": {"name": "vllm"}})
    };
    let create = |name: &str, spec: Value| {
        let md: ModelDeployment = serde_json::from_value(deployment(name, spec)).unwrap();
        let api = api.clone();
        async move { api.create(&PostParams::default(), &md).await.unwrap() }
    };

    // A deployment running before any policy.
    create("running", on_vllm(2)).await;
    wait_for(&api, "running", WAIT, "Running", |md| {
        md.status.as_ref().and_then(|s| s.phase) == Some(Phase::Running)
    })
    .await;
    let workload = eventually("the provider's Deployment", WAIT, || async {
        let list = deployments
            .list(&ListParams::default().labels(&format!("{}=running", labels::DEPLOYMENT)))
            .await
            .map_err(|e| e.to_string())?;
        list.items.into_iter().next().ok_or("none yet".to_string())
    })
    .await;

    // The policy tightened under it: reported, still running, its workload untouched.
    create_policy(&env, "tight", json!({"maxGpusPerDeployment": 1})).await;
    let expected = messages::policy::too_many_gpus(
        "tight",
        1,
        "spec.resources.gpu.count × spec.scaling.replicas (2 × 1)",
        2,
    );
    let (md, condition) = airunway_e2e::wait::wait_for_condition(
        &api,
        "running",
        WAIT,
        condition_types::POLICY_COMPLIANT,
        ConditionStatus::False,
    )
    .await;
    assert_eq!(
        condition.reason.as_deref(),
        Some(reasons::policy::VIOLATION)
    );
    assert_eq!(condition.message.as_deref(), Some(expected.as_str()));
    let status = md.status.clone().unwrap();
    assert_eq!(status.phase, Some(Phase::Running));
    assert_eq!(
        status.provider.and_then(|p| p.name).as_deref(),
        Some("vllm")
    );
    // A few seconds later: still running, the same Deployment (uid) with its replica.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let md = api.get("running").await.unwrap();
    assert_eq!(
        md.status.as_ref().and_then(|s| s.phase),
        Some(Phase::Running)
    );
    let now = deployments
        .get(workload.metadata.name.as_deref().unwrap())
        .await
        .unwrap();
    assert_eq!(now.metadata.uid, workload.metadata.uid);
    assert_eq!(now.spec.and_then(|s| s.replicas), Some(1));
    let events: Api<Event> = Api::namespaced(env.client.clone(), &env.namespace);
    eventually("a PolicyViolation warning event", WAIT, || async {
        let list = events
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        list.items
            .iter()
            .find(|e| {
                e.reason.as_deref() == Some(event_reasons::POLICY_VIOLATION)
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("running")
                    && e.note.as_deref() == Some(expected.as_str())
            })
            .map(|_| ())
            .ok_or_else(|| format!("{} events", list.items.len()))
    })
    .await;

    // Created while the webhook is down, breaking the policy: stored, reported, held.
    create("violating", on_vllm(2)).await;
    let (md, condition) = airunway_e2e::wait::wait_for_condition(
        &api,
        "violating",
        WAIT,
        condition_types::POLICY_COMPLIANT,
        ConditionStatus::False,
    )
    .await;
    assert_eq!(
        condition.reason.as_deref(),
        Some(reasons::policy::VIOLATION)
    );
    let status = md.status.clone().unwrap();
    assert_eq!(status.phase, Some(Phase::Pending));
    assert_eq!(
        status.message.as_deref(),
        Some(format!("{}{expected}", messages::policy::HELD_PREFIX).as_str())
    );
    assert_eq!(
        status.provider.and_then(|p| p.name),
        None,
        "no provider selected"
    );
    let selected = md.condition(condition_types::PROVIDER_SELECTED).unwrap();
    assert_eq!(selected.status, ConditionStatus::False);
    assert_eq!(selected.reason.as_deref(), Some(reasons::policy::VIOLATION));
    assert!(
        md.condition(condition_types::STALLED)
            .is_some_and(|c| c.is_true())
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    let held = deployments
        .list(&ListParams::default().labels(&format!("{}=violating", labels::DEPLOYMENT)))
        .await
        .unwrap();
    assert!(
        held.items.is_empty(),
        "the provider created nothing for a held deployment"
    );

    // The policy removed: the held deployment goes on by itself (watch-driven), and the
    // condition goes away with the last policy.
    delete_policy(&env, "tight").await;
    let md = wait_for(&api, "violating", WAIT, "Running, the hold lifted", |md| {
        md.status.as_ref().and_then(|s| s.phase) == Some(Phase::Running)
    })
    .await;
    assert!(md.condition(condition_types::POLICY_COMPLIANT).is_none());
    wait_for(
        &api,
        "running",
        WAIT,
        "no PolicyCompliant without a policy",
        |md| md.condition(condition_types::POLICY_COMPLIANT).is_none(),
    )
    .await;

    for name in ["running", "violating"] {
        let _ = api.delete(name, &DeleteParams::default()).await;
    }
    provider.process.terminate(Duration::from_secs(10));
    core.terminate(Duration::from_secs(10));
}
