//! The real `airunway-core` binary against the real control plane: selection outcomes in
//! status, pause, selector disabled, no healthy providers, late providers, no churn, field
//! ownership, events, metrics, leader election, reconcile-time validation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use airunway_api::apply_body;
use airunway_api::constants::{condition_types, messages, reasons};
use airunway_api::v1alpha1::{ConditionStatus, ModelDeployment, Phase};
use airunway_e2e::providers::{delete_all, heartbeat, register_shipped};
use airunway_e2e::stack::{self, Running};
use airunway_e2e::wait::{eventually, wait_for, wait_for_condition};
use airunway_e2e::{TestEnv, cluster_lock, http};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);

async fn start_core(env: &TestEnv, extra: &[&str], pod_name: &str) -> Running {
    stack::start_core(env, &env.control_plane.kubeconfig, extra, pod_name).await
}

fn deployment(name: &str, spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap()
}

#[tokio::test]
async fn selection_outcomes_of_section_4_4_in_status() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("core-selection").await;
    delete_all(&env.client).await;
    register_shipped(&env.client, &["kaito", "dynamo", "kuberay", "llmd"], true).await;
    let core = start_core(&env, &[], "core-selection").await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);

    let gpu1 = json!({"gpu": {"count": 1}});
    let cases = [
        (
            "cpu-llamacpp",
            json!({"model": {"id": "google/gemma"}, "engine": {"type": "llamacpp"}, "resources": {"gpu": {"count": 0}}}),
            "kaito",
            "llamacpp",
            reasons::AUTO_SELECTED,
            "matched capabilities: engine=llamacpp, gpu=false, mode=aggregated",
        ),
        (
            "no-gpu-no-engine",
            json!({"model": {"id": "google/gemma"}}),
            "kaito",
            "llamacpp",
            reasons::AUTO_SELECTED,
            "matched capabilities: engine=llamacpp, gpu=false, mode=aggregated",
        ),
        (
            "gpu-trtllm",
            json!({"model": {"id": "a/b"}, "engine": {"type": "trtllm"}, "resources": gpu1}),
            "dynamo",
            "trtllm",
            reasons::AUTO_SELECTED,
            "matched capabilities: engine=trtllm, gpu=true, mode=aggregated",
        ),
        (
            "gpu-sglang",
            json!({"model": {"id": "a/b"}, "engine": {"type": "sglang"}, "resources": gpu1}),
            "dynamo",
            "sglang",
            reasons::AUTO_SELECTED,
            "matched capabilities: engine=sglang, gpu=true, mode=aggregated",
        ),
        (
            "gpu-llamacpp",
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "resources": gpu1}),
            "kaito",
            "llamacpp",
            reasons::AUTO_SELECTED,
            "matched capabilities: engine=llamacpp, gpu=true, mode=aggregated",
        ),
        (
            "disaggregated",
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"},
                                 "scaling": {"prefill": gpu1, "decode": gpu1}}),
            "dynamo",
            "vllm",
            reasons::AUTO_SELECTED,
            "matched capabilities: engine=vllm, gpu=true, mode=disaggregated",
        ),
        (
            "gpu-default",
            json!({"model": {"id": "a/b"}, "resources": gpu1}),
            "dynamo",
            "vllm",
            reasons::AUTO_SELECTED,
            "matched capabilities: engine=vllm, gpu=true, mode=aggregated",
        ),
        (
            "named-kuberay",
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": gpu1, "provider": {"name": "kuberay"}}),
            "kuberay",
            "vllm",
            reasons::EXPLICIT_SELECTION,
            "explicit provider selection",
        ),
        (
            "named-llmd",
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": gpu1, "provider": {"name": "llmd"}}),
            "llmd",
            "vllm",
            reasons::EXPLICIT_SELECTION,
            "explicit provider selection",
        ),
    ];
    for (name, spec, _, _, _, _) in &cases {
        api.create(&PostParams::default(), &deployment(name, spec.clone()))
            .await
            .unwrap();
    }
    for (name, _, provider, engine, reason, selected_reason) in cases {
        let md = wait_for(&api, name, WAIT, "a provider selection", |md| {
            md.selected_provider().is_some()
        })
        .await;
        let status = md.status.as_ref().unwrap();
        let p = status.provider.as_ref().unwrap();
        assert_eq!(p.name.as_deref(), Some(provider), "{name}");
        assert_eq!(
            p.selected_reason.as_deref(),
            Some(selected_reason),
            "{name}"
        );
        let e = status.engine.as_ref().unwrap();
        assert_eq!(e.engine_type.map(|e| e.as_str()), Some(engine), "{name}");
        assert!(e.selected_reason.is_some(), "{name}");
        let selected = md.condition(condition_types::PROVIDER_SELECTED).unwrap();
        assert_eq!(
            (selected.status, selected.reason.as_deref()),
            (ConditionStatus::True, Some(reason)),
            "{name}"
        );
        if reason == reasons::AUTO_SELECTED {
            assert_eq!(
                selected.message.as_deref(),
                Some(format!("Provider {provider} auto-selected").as_str())
            );
        }
        assert!(
            md.condition(condition_types::VALIDATED).unwrap().is_true(),
            "{name}"
        );
        assert!(
            md.condition(condition_types::ENGINE_SELECTED)
                .unwrap()
                .is_true(),
            "{name}"
        );
        assert!(
            md.condition(condition_types::PROVIDER_HEALTHY)
                .unwrap()
                .is_true(),
            "{name}"
        );
        assert_eq!(
            status.phase,
            Some(Phase::Pending),
            "{name}: the provider has not taken over"
        );
        assert_eq!(status.observed_generation, md.metadata.generation, "{name}");
        // kstatus: in progress until the provider has acted.
        let reconciling = md.condition(condition_types::RECONCILING).unwrap();
        assert_eq!(
            (reconciling.status, reconciling.reason.as_deref()),
            (ConditionStatus::True, Some(reasons::WAITING_FOR_PROVIDER)),
            "{name}"
        );
        assert!(
            !md.condition(condition_types::STALLED).unwrap().is_true(),
            "{name}"
        );
    }

    // Events: one ProviderSelected per deployment, with the spec's wording.
    let events: Api<Event> = Api::namespaced(env.client.clone(), &env.namespace);
    let notes = eventually("ProviderSelected events", WAIT, || async {
        let list = events
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        let notes: Vec<String> = list
            .items
            .iter()
            .filter(|e| e.reason.as_deref() == Some("ProviderSelected"))
            .filter_map(|e| e.note.clone())
            .collect();
        if notes.len() >= cases_len() {
            Ok(notes)
        } else {
            Err(format!("{notes:?}"))
        }
    })
    .await;
    assert!(
        notes.contains(&"Selected provider 'kaito': matched capabilities: engine=llamacpp, gpu=false, mode=aggregated".to_string()),
        "{notes:?}"
    );
    assert!(
        notes.contains(&"Selected provider 'kuberay': explicit provider selection".to_string()),
        "{notes:?}"
    );

    // Metrics: the phase gauges come from the core's watch cache, which may trail the reads
    // above by a moment, so wait for every series.
    let expected = [
        format!(
            "airunway_modeldeployment_total{{namespace=\"{}\",phase=\"Pending\"}} 9",
            env.namespace
        ),
        "airunway_provider_selection_total{provider=\"kaito\",reason=\"auto\"}".to_string(),
        // No count: the cores of the suite's other tests watch every namespace and may select
        // a deployment of theirs that names kuberay too.
        "airunway_provider_selection_total{provider=\"kuberay\",reason=\"manual\"}".to_string(),
        "airunway_deployment_status{provider=\"kaito\",phase=\"Pending\"}".to_string(),
        "airunway_deployment_replicas{provider=\"kaito\",state=\"desired\"}".to_string(),
        "airunway_reconciliation_duration_seconds_bucket{le=\"0.005\",provider=\"dynamo\"}"
            .to_string(),
        format!(
            "airunway_deployment_phase{{name=\"cpu-llamacpp\",namespace=\"{}\",phase=\"Pending\"}} 1",
            env.namespace
        ),
    ];
    let metrics_url = core.metrics_url();
    eventually("the core's metrics series", WAIT, || async {
        let (code, body) = http::get(&metrics_url).await.map_err(|e| e.to_string())?;
        match expected
            .iter()
            .find(|series| !body.contains(series.as_str()))
        {
            None if code == 200 => Ok(()),
            None => Err(format!("HTTP {code}:\n{body}")),
            Some(missing) => Err(format!("/metrics lacks {missing}:\n{body}")),
        }
    })
    .await;
    core.process.terminate(Duration::from_secs(10));
    delete_all(&env.client).await;
}

fn cases_len() -> usize {
    9
}

#[tokio::test]
async fn no_churn_and_exact_field_ownership() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("core-ownership").await;
    delete_all(&env.client).await;
    register_shipped(&env.client, &["kaito"], true).await;
    let core = start_core(&env, &[], "core-ownership").await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    api.create(
        &PostParams::default(),
        &deployment(
            "settled",
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}}),
        ),
    )
    .await
    .unwrap();
    let md = wait_for(&api, "settled", WAIT, "selection", |md| {
        md.selected_provider() == Some("kaito")
    })
    .await;

    // Trigger reconciles without a change (a provider heartbeat re-queues its deployments);
    // the object must not be written again.
    let version = md.metadata.resource_version.clone();
    for _ in 0..3 {
        heartbeat(&env.client, "kaito", true).await;
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    let after = api.get("settled").await.unwrap();
    assert_eq!(
        after.metadata.resource_version, version,
        "a reconcile without change wrote the object"
    );

    // managedFields: airunway-core owns exactly its fields on the status subresource.
    let entries: Vec<_> = after.metadata.managed_fields.clone().unwrap_or_default();
    let core_entry = entries
        .iter()
        .find(|e| e.manager.as_deref() == Some("airunway-core"))
        .expect("an airunway-core entry");
    assert_eq!(core_entry.operation.as_deref(), Some("Apply"));
    assert_eq!(core_entry.subresource.as_deref(), Some("status"));
    let fields = core_entry.fields_v1.as_ref().unwrap().0["f:status"].clone();
    let keys: BTreeSet<&str> = fields
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        BTreeSet::from([
            "f:conditions",
            "f:engine",
            "f:message",
            "f:observedGeneration",
            "f:phase",
            "f:provider"
        ])
    );
    let conditions: BTreeSet<&str> = fields["f:conditions"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        // GatewayReady: a core condition (constants::condition_types::CORE_OWNED) the gateway
        // integration writes; its own suite checks it.
        .filter(|k| *k != "k:{\"type\":\"GatewayReady\"}")
        .collect();
    assert_eq!(
        conditions,
        BTreeSet::from([
            "k:{\"type\":\"EngineSelected\"}",
            "k:{\"type\":\"ProviderHealthy\"}",
            "k:{\"type\":\"ProviderSelected\"}",
            "k:{\"type\":\"Reconciling\"}",
            "k:{\"type\":\"RuntimeConfigResolved\"}",
            "k:{\"type\":\"Stalled\"}",
            "k:{\"type\":\"Validated\"}",
        ])
    );
    let provider_fields: BTreeSet<&str> = fields["f:provider"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        provider_fields,
        BTreeSet::from(["f:name", "f:selectedReason"])
    );
    assert!(
        !entries
            .iter()
            .any(|e| e.manager.as_deref() == Some("airunway-core") && e.subresource.is_none()),
        "the core never writes spec"
    );

    // A provider taking over phase/message: the core releases them and keeps its own fields.
    let provider_status = json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment", "metadata": {"name": "settled"},
        "status": {"phase": "Deploying", "message": "Workspace created", "provider": {"resourceName": "settled", "resourceKind": "Workspace"}},
    });
    api.patch_status(
        "settled",
        &PatchParams::apply("kaito-provider").force(),
        &apply_body::apply(&provider_status),
    )
    .await
    .unwrap();
    heartbeat(&env.client, "kaito", true).await;
    let md = eventually("the provider to keep phase Deploying", WAIT, || async {
        let md = api.get("settled").await.map_err(|e| e.to_string())?;
        let status = md.status.clone().unwrap_or_default();
        let provider = status.provider.clone().unwrap_or_default();
        if status.phase == Some(Phase::Deploying)
            && provider.name.as_deref() == Some("kaito")
            && provider.resource_kind.as_deref() == Some("Workspace")
        {
            Ok(md)
        } else {
            Err(format!("{status:?}"))
        }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let later = api.get("settled").await.unwrap();
    assert_eq!(
        later.status.as_ref().unwrap().phase,
        Some(Phase::Deploying),
        "the core took phase back"
    );
    // This provider writes no Reconciling/Stalled/observedGeneration: the core let go of its own,
    // so no stale `Reconciling=True` (waiting for the provider) outlives the hand-over.
    let later = eventually(
        "the core to release what goes with the phase",
        WAIT,
        || async {
            let md = api.get("settled").await.map_err(|e| e.to_string())?;
            let status = md.status.clone().unwrap_or_default();
            if md.condition(condition_types::RECONCILING).is_none()
                && md.condition(condition_types::STALLED).is_none()
                && status.observed_generation.is_none()
            {
                Ok(md)
            } else {
                Err(format!("{status:?}"))
            }
        },
    )
    .await;
    assert!(md.condition(condition_types::VALIDATED).is_some());
    assert!(
        later
            .condition(condition_types::PROVIDER_HEALTHY)
            .unwrap()
            .is_true()
    );
    core.process.terminate(Duration::from_secs(10));
    delete_all(&env.client).await;
}

#[tokio::test]
async fn pause_annotation_stops_all_writes() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("core-pause").await;
    delete_all(&env.client).await;
    register_shipped(&env.client, &["kaito"], true).await;
    let core = start_core(&env, &[], "core-pause").await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let mut md = deployment(
        "paused",
        json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}}),
    );
    md.metadata.annotations = Some(
        [(
            "airunway.ai/reconcile-paused".to_string(),
            "true".to_string(),
        )]
        .into(),
    );
    let created = api.create(&PostParams::default(), &md).await.unwrap();
    for _ in 0..3 {
        heartbeat(&env.client, "kaito", true).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let still = api.get("paused").await.unwrap();
    assert_eq!(
        still.metadata.resource_version, created.metadata.resource_version,
        "a paused deployment was written"
    );
    assert!(still.status.is_none());

    // Unpausing resumes reconciliation.
    let unpause = json!({"metadata": {"annotations": {"airunway.ai/reconcile-paused": "false"}}});
    api.patch("paused", &PatchParams::default(), &Patch::Merge(&unpause))
        .await
        .unwrap();
    wait_for(&api, "paused", WAIT, "selection after unpausing", |md| {
        md.selected_provider() == Some("kaito")
    })
    .await;
    core.process.terminate(Duration::from_secs(10));
    delete_all(&env.client).await;
}

#[tokio::test]
async fn selector_disabled_keeps_deployments_pending() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("core-selector-off").await;
    delete_all(&env.client).await;
    register_shipped(&env.client, &["kaito"], true).await;
    let core = start_core(
        &env,
        &["--enable-provider-selector=false"],
        "core-selector-off",
    )
    .await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    api.create(
        &PostParams::default(),
        &deployment(
            "unnamed",
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}}),
        ),
    )
    .await
    .unwrap();
    let (md, c) = wait_for_condition(
        &api,
        "unnamed",
        WAIT,
        condition_types::PROVIDER_SELECTED,
        ConditionStatus::False,
    )
    .await;
    assert_eq!(c.message.as_deref(), Some(messages::SELECTOR_DISABLED));
    assert_eq!(c.reason.as_deref(), Some(reasons::NO_PROVIDER));
    let status = md.status.as_ref().unwrap();
    assert_eq!(status.phase, Some(Phase::Pending));
    assert_eq!(status.message.as_deref(), Some(messages::SELECTOR_DISABLED));

    // A named provider still works with the selector disabled.
    api.create(&PostParams::default(), &deployment("named", json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "provider": {"name": "kaito"}}))).await.unwrap();
    let md = wait_for(&api, "named", WAIT, "explicit selection", |md| {
        md.selected_provider() == Some("kaito")
    })
    .await;
    assert_eq!(
        md.status
            .unwrap()
            .provider
            .unwrap()
            .selected_reason
            .as_deref(),
        Some("explicit provider selection")
    );
    core.process.terminate(Duration::from_secs(10));
    delete_all(&env.client).await;
}

#[tokio::test]
async fn no_healthy_providers_then_a_provider_appears() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("core-late-provider").await;
    delete_all(&env.client).await;
    register_shipped(&env.client, &["kaito", "dynamo"], false).await;
    let core = start_core(&env, &[], "core-late-provider").await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    api.create(
        &PostParams::default(),
        &deployment(
            "waiting",
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}}),
        ),
    )
    .await
    .unwrap();
    let md = wait_for(
        &api,
        "waiting",
        WAIT,
        "Pending with no healthy providers",
        |md| {
            md.status.as_ref().and_then(|s| s.message.as_deref())
                == Some(messages::NO_HEALTHY_PROVIDERS)
        },
    )
    .await;
    assert_eq!(md.status.as_ref().unwrap().phase, Some(Phase::Pending));
    let c = md.condition(condition_types::PROVIDER_SELECTED).unwrap();
    assert_eq!(
        (c.status, c.reason.as_deref()),
        (ConditionStatus::False, Some(reasons::SELECTION_FAILED))
    );
    let stuck_since = c.last_transition_time.clone();

    // Only dynamo becomes ready: still no compatible provider, and the message says why.
    heartbeat(&env.client, "dynamo", true).await;
    let md = wait_for(
        &api,
        "waiting",
        WAIT,
        "a no-compatible-provider message",
        |md| {
            md.status
                .as_ref()
                .and_then(|s| s.message.as_deref())
                .is_some_and(|m| {
                    m.starts_with(
                        "Provider selection failed: no compatible provider found for this configuration",
                    )
                })
        },
    )
    .await;
    let message = md.status.unwrap().message.unwrap();
    assert!(
        message.contains("dynamo: does not offer engine llamacpp"),
        "{message}"
    );
    assert!(message.contains("kaito: not ready"), "{message}");
    assert_eq!(
        md_get(&api, "waiting")
            .await
            .condition(condition_types::PROVIDER_SELECTED)
            .unwrap()
            .last_transition_time,
        stuck_since,
        "lastTransitionTime moves only when the status changes"
    );

    // kaito appears: the waiting deployment is un-stuck without touching it.
    heartbeat(&env.client, "kaito", true).await;
    let md = wait_for(&api, "waiting", WAIT, "selection of kaito", |md| {
        md.selected_provider() == Some("kaito")
    })
    .await;
    assert!(
        md.condition(condition_types::PROVIDER_SELECTED)
            .unwrap()
            .is_true()
    );
    core.process.terminate(Duration::from_secs(10));
    delete_all(&env.client).await;
}

async fn md_get(api: &Api<ModelDeployment>, name: &str) -> ModelDeployment {
    api.get(name).await.unwrap()
}

#[tokio::test]
async fn reconcile_time_validation_keeps_invalid_deployments_pending() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("core-validation").await;
    delete_all(&env.client).await;
    register_shipped(&env.client, &["kaito"], true).await;
    let core = start_core(&env, &[], "core-validation").await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    // Passes the CRD rules (no webhook here) but not the core's checks.
    api.create(
        &PostParams::default(),
        &deployment(
            "escalating",
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"},
            "provider": {"overrides": {"frontend": {"securityContext": {"privileged": true}}}}}),
        ),
    )
    .await
    .unwrap();
    let (md, validated) = wait_for_condition(
        &api,
        "escalating",
        WAIT,
        condition_types::VALIDATED,
        ConditionStatus::False,
    )
    .await;
    let status = md.status.as_ref().unwrap();
    // Failed, with the Go AI Runway's prefix (issue 32, V4).
    assert_eq!(status.phase, Some(Phase::Failed));
    let message = status.message.clone().unwrap();
    assert!(
        message.starts_with(
            "Validation failed: spec.provider.overrides.frontend.securityContext: key 'securityContext' is not allowed"
        ),
        "{message}"
    );
    assert_eq!(
        validated.message.as_deref(),
        message.strip_prefix("Validation failed: ")
    );
    assert!(
        md.selected_provider().is_none(),
        "an invalid deployment is not sent to a provider"
    );

    // Fixing the spec validates it and selects a provider.
    let fix = json!({"spec": {"provider": {"overrides": null}}});
    api.patch("escalating", &PatchParams::default(), &Patch::Merge(&fix))
        .await
        .unwrap();
    let md = wait_for(&api, "escalating", WAIT, "validation and selection", |md| {
        md.selected_provider() == Some("kaito")
    })
    .await;
    assert!(md.condition(condition_types::VALIDATED).unwrap().is_true());
    let events: Api<Event> = Api::namespaced(env.client.clone(), &env.namespace);
    let list = events.list(&ListParams::default()).await.unwrap();
    assert!(
        list.items
            .iter()
            .any(|e| e.reason.as_deref() == Some("ValidationFailed")
                && e.type_.as_deref() == Some("Warning"))
    );
    core.process.terminate(Duration::from_secs(10));
    delete_all(&env.client).await;
}

#[tokio::test]
async fn leader_election_hands_over_within_the_lease_duration() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("core-leader").await;
    delete_all(&env.client).await;
    register_shipped(&env.client, &["kaito"], true).await;
    let lease_args = [
        "--leader-elect",
        &format!("--leader-election-namespace={}", env.namespace),
        "--leader-election-lease-duration=6s",
    ];
    let a = start_core(&env, &lease_args, "core-a").await;
    let leases: Api<Lease> = Api::namespaced(env.client.clone(), &env.namespace);
    let holder = |lease: &Lease| {
        lease
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.clone())
            .unwrap_or_default()
    };
    wait_for(&leases, "airunway-core", WAIT, "core-a to lead", |l| {
        holder(l).starts_with("core-a-")
    })
    .await;
    let b = start_core(&env, &lease_args, "core-b").await;

    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    api.create(
        &PostParams::default(),
        &deployment(
            "first",
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}}),
        ),
    )
    .await
    .unwrap();
    wait_for(&api, "first", WAIT, "selection by the leader", |md| {
        md.selected_provider() == Some("kaito")
    })
    .await;
    let events: Api<Event> = Api::namespaced(env.client.clone(), &env.namespace);
    let reporters = |list: &[Event], object: &str| -> BTreeSet<String> {
        list.iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(object))
            .filter_map(|e| e.reporting_instance.clone())
            .collect()
    };
    let first = eventually("the leader's event", WAIT, || async {
        let list = events
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?
            .items;
        let r = reporters(&list, "first");
        if r.is_empty() {
            Err("no event yet".into())
        } else {
            Ok(r)
        }
    })
    .await;
    assert_eq!(
        first,
        BTreeSet::from(["core-a".to_string()]),
        "only the leader writes"
    );
    assert!(
        !std::fs::read_to_string(b.process.log())
            .unwrap()
            .contains("starting the ModelDeployment controller")
    );

    // kill -9 the leader: the standby takes over within the lease duration.
    let killed = Instant::now();
    a.process.kill();
    wait_for(
        &leases,
        "airunway-core",
        Duration::from_secs(20),
        "core-b to lead",
        |l| holder(l).starts_with("core-b-"),
    )
    .await;
    let handover = killed.elapsed();
    eprintln!(
        "leadership handed over {:.1}s after kill -9 (lease duration 6s)",
        handover.as_secs_f64()
    );
    assert!(
        handover <= Duration::from_secs(6) + Duration::from_secs(3),
        "handover took {handover:?}"
    );
    api.create(
        &PostParams::default(),
        &deployment(
            "second",
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}}),
        ),
    )
    .await
    .unwrap();
    wait_for(&api, "second", WAIT, "selection by the new leader", |md| {
        md.selected_provider() == Some("kaito")
    })
    .await;
    let second = eventually("the new leader's event", WAIT, || async {
        let list = events
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?
            .items;
        let r = reporters(&list, "second");
        if r.is_empty() {
            Err("no event yet".into())
        } else {
            Ok(r)
        }
    })
    .await;
    assert_eq!(second, BTreeSet::from(["core-b".to_string()]));
    b.process.terminate(Duration::from_secs(10));
    delete_all(&env.client).await;
}

#[tokio::test]
async fn a_selection_rule_that_fails_is_surfaced() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("core-rule-error").await;
    delete_all(&env.client).await;
    register_shipped(&env.client, &["kaito"], true).await;
    let mut broken = airunway_e2e::providers::shipped_registration("kaito");
    broken["metadata"]["name"] = json!("broken");
    broken["spec"]["selectionRules"] =
        json!([{"condition": "spec.model.id.startsWith(1)", "priority": 1000}]);
    airunway_e2e::providers::register(&env.client, &broken, true).await;
    let core = start_core(&env, &[], "core-rule-error").await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    api.create(
        &PostParams::default(),
        &deployment(
            "ruled",
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}}),
        ),
    )
    .await
    .unwrap();
    // The failing rule counts as false: kaito wins despite broken's higher priority.
    wait_for(&api, "ruled", WAIT, "selection of kaito", |md| {
        md.selected_provider() == Some("kaito")
    })
    .await;
    let ipcs: Api<airunway_api::v1alpha1::InferenceProviderConfig> = Api::all(env.client.clone());
    let ipc = wait_for(&ipcs, "broken", WAIT, "SelectionRulesValid=False", |ipc| {
        ipc.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c.type_ == condition_types::SELECTION_RULES_VALID
                        && c.status == ConditionStatus::False
                })
            })
    })
    .await;
    let c = ipc
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == condition_types::SELECTION_RULES_VALID)
        .unwrap();
    let message = c.message.unwrap();
    assert!(
        message.starts_with(
            "selection rule 0 (`spec.model.id.startsWith(1)`) failed for ModelDeployment"
        ),
        "{message}"
    );
    let (_, body) = http::get(&core.metrics_url()).await.unwrap();
    assert!(
        body.contains("airunway_selection_rule_errors_total{provider=\"broken\"}"),
        "{body}"
    );
    let events: Api<Event> = Api::namespaced(env.client.clone(), &env.namespace);
    let list = events.list(&ListParams::default()).await.unwrap();
    assert!(
        list.items
            .iter()
            .any(|e| e.reason.as_deref() == Some("SelectionRuleError"))
    );
    core.process.terminate(Duration::from_secs(10));
    delete_all(&env.client).await;
}
