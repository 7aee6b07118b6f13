//! The event reasons of spec 001 §9 on the real core and the real `airunway-provider-vllm`
//! (each with the shipped RBAC), read back through the events API (`events.k8s.io/v1`):
//! `ProviderSelected`, `ResourceCreated`, `SecretNotFound` (from the existence of the Secrets a
//! deployment names, cleared by creating them), `ProviderError`, `DriftDetected` (the same
//! drift twice: one Event whose series counts both) and `FinalizerTimeout`; distinct notes of
//! one reason stay distinct Events; and a deployment failing for two minutes (five or more in
//! the long run: `AIRUNWAY_E2E_EVENTS_FAILING_SECONDS=300`) leaves a bounded number of Event
//! objects while the other scenarios run beside it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use airunway_api::apply_body;
use airunway_api::constants::{condition_types, event_reasons, reasons};
use airunway_api::v1alpha1::{ConditionStatus, InferenceProviderConfig, ModelDeployment, Phase};
use airunway_e2e::registry::LocalRegistry;
use airunway_e2e::stack::{self, FAST_HEALTH, Running};
use airunway_e2e::wait::{wait_deleted, wait_for, wait_for_condition};
use airunway_e2e::{TestEnv, cluster_lock};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);
/// How long the failing deployment fails before its events are counted, by default: two
/// minutes, 60 tries (docs/testing.md; the long run sets `AIRUNWAY_E2E_EVENTS_FAILING_SECONDS`).
const FAILING_FOR_DEFAULT: Duration = Duration::from_secs(2 * 60);

/// How long the failing deployment fails: `AIRUNWAY_E2E_EVENTS_FAILING_SECONDS`, else
/// [`FAILING_FOR_DEFAULT`].
fn failing_for() -> Duration {
    std::env::var("AIRUNWAY_E2E_EVENTS_FAILING_SECONDS")
        .ok()
        .map(|s| {
            s.parse::<u64>().unwrap_or_else(|_| {
                panic!("AIRUNWAY_E2E_EVENTS_FAILING_SECONDS={s:?} is not a number of seconds")
            })
        })
        .map_or(FAILING_FOR_DEFAULT, Duration::from_secs)
}
/// The most Event objects the failing deployment may leave in that time: ProviderSelected,
/// SecretNotFound and ProviderError once each, with room for a provider restart's repeat.
const FAILING_EVENT_BOUND: usize = 6;

/// The core and the provider, the provider's default image `default_image`.
async fn start(env: &TestEnv, default_image: &str) -> (Running, Running) {
    airunway_e2e::providers::delete_all(&env.client).await;
    let core = stack::start_core(env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let identity = stack::service_account_identity(
        env,
        "deploy/providers/vllm/rbac.yaml",
        "airunway-provider-vllm",
    )
    .await;
    // A 2 s resync: the failing deployment is tried again every 2 s while it fails.
    let default_image = format!("--default-image={default_image}");
    let flags = [
        "--heartbeat-interval=1s",
        "--finalizer-timeout=5s",
        "--resync-interval=2s",
        default_image.as_str(),
    ];
    let provider =
        stack::start_provider(env, "airunway-provider-vllm", &identity, &flags, "vllm-0").await;
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, "vllm", WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    (core, provider)
}

fn deployment(name: &str, spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1",
        "kind": "ModelDeployment", "metadata": {"name": name}, "spec": spec}))
    .unwrap()
}

fn on_vllm(image: &str, token: &str) -> Value {
    json!({"model": {"id": "Qwen/Qwen3-0.6B", "servedName": "qwen3"},
           "engine": {"type": "vllm", "image": image},
           "resources": {"gpu": {"count": 1}, "memory": "8Gi"},
           "secrets": {"huggingFaceToken": token},
           "provider": {"name": "vllm"}})
}

/// An image on a loopback port nothing listens on: resolution fails at once, every time (the
/// default image's failure holds the deployment `Failed`; a custom image's only warns).
fn unreachable_image() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("127.0.0.1:{port}/vllm/vllm-openai:never")
}

/// The Event objects in the namespace about ModelDeployment `name`.
async fn events_about(env: &TestEnv, name: &str) -> Vec<Event> {
    let api: Api<Event> = Api::namespaced(env.client.clone(), &env.namespace);
    api.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().is_some_and(|r| {
                r.kind.as_deref() == Some("ModelDeployment") && r.name.as_deref() == Some(name)
            })
        })
        .collect()
}

fn summary(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            format!(
                "{} x{}: {}",
                e.reason.as_deref().unwrap_or_default(),
                e.series.as_ref().map_or(1, |s| s.count),
                e.note.as_deref().unwrap_or_default()
            )
        })
        .collect()
}

/// Waits for an Event about `name` with `reason` whose note `matches`; returns it.
async fn wait_event(
    env: &TestEnv,
    name: &str,
    reason: &str,
    matches: impl Fn(&Event) -> bool,
) -> Event {
    let deadline = Instant::now() + WAIT;
    loop {
        let events = events_about(env, name).await;
        if let Some(e) = events
            .iter()
            .find(|e| e.reason.as_deref() == Some(reason) && matches(e))
        {
            return e.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no {reason} event about {name} as expected within {WAIT:?}; its events: {:#?}",
            summary(&events)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn create_secret(env: &TestEnv, name: &str, key: &str) {
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), &env.namespace);
    secrets
        .create(
            &PostParams::default(),
            &Secret {
                metadata: ObjectMeta {
                    name: Some(name.to_string()),
                    ..ObjectMeta::default()
                },
                string_data: Some([(key.to_string(), "e2e-not-a-token".to_string())].into()),
                ..Secret::default()
            },
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn every_reason_of_the_spec_distinct_notes_series_and_a_bounded_failure() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("events").await;
    let (core, provider) = start(&env, &unreachable_image()).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let ns = env.namespace.clone();

    // The failing deployment first: its (default) image never resolves (Failed,
    // ProviderError) and its token Secret does not exist. It fails for `failing_for()`, tried
    // again every 2 s, while the rest runs.
    let failing_since = Instant::now();
    let mut spec = on_vllm("unused", "failing-token");
    spec["engine"].as_object_mut().unwrap().remove("image");
    mds.create(&PostParams::default(), &deployment("failing", spec))
        .await
        .unwrap();
    wait_for(&mds, "failing", WAIT, "Failed", |md| {
        md.phase() == Some(Phase::Failed)
    })
    .await;
    let error = wait_event(&env, "failing", event_reasons::PROVIDER_ERROR, |_| true).await;
    assert!(
        error
            .note
            .as_deref()
            .unwrap_or_default()
            .starts_with("Provider resource in error state: "),
        "{error:?}"
    );
    assert_eq!(error.type_.as_deref(), Some("Warning"));

    // A deployment naming two Secrets that do not exist (its token and an env secretKeyRef).
    let registry = LocalRegistry::start(
        &env.control_plane
            .dir
            .join(format!("registry-{}", env.namespace)),
    )
    .unwrap();
    registry.push_tiny_image("vllm/vllm-openai", "e2e").unwrap();
    let image = format!("{}/vllm/vllm-openai:e2e", registry.address);
    let mut spec = on_vllm(&image, "hf-token");
    spec["env"] = json!([{"name": "API_KEY",
        "valueFrom": {"secretKeyRef": {"name": "api-key", "key": "key"}}}]);
    let started = Instant::now();
    mds.create(&PostParams::default(), &deployment("served", spec))
        .await
        .unwrap();
    let (_, condition) = wait_for_condition(
        &mds,
        "served",
        WAIT,
        condition_types::SECRETS_FOUND,
        ConditionStatus::False,
    )
    .await;
    assert_eq!(condition.reason.as_deref(), Some(reasons::SECRET_NOT_FOUND));
    let message = condition.message.clone().unwrap_or_default();
    assert!(
        message.starts_with(&format!(
            "Secret 'hf-token' not found in namespace '{ns}' (named by spec.secrets.huggingFaceToken): create it (kubectl create secret generic hf-token -n {ns} --from-literal=HF_TOKEN=<value>)"
        )),
        "{message}"
    );
    assert!(
        message.contains(&format!("Secret 'api-key' not found in namespace '{ns}' (named by spec.env[0].valueFrom.secretKeyRef (API_KEY))")),
        "{message}"
    );
    eprintln!("SecretsFound=False: {message}");
    // One event per missing Secret: two notes of one reason and action, two Events.
    for secret in ["hf-token", "api-key"] {
        let note = format!("Secret '{secret}' not found in namespace '{ns}'");
        let event = wait_event(&env, "served", event_reasons::SECRET_NOT_FOUND, |e| {
            e.note.as_deref() == Some(note.as_str())
        })
        .await;
        assert_eq!(event.type_.as_deref(), Some("Warning"));
    }
    // The deployment is served all the same (a missing Secret stops the model server's
    // container, not the rollout).
    let md = wait_for(&mds, "served", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    eprintln!(
        "deployment Running {:.1}s after creation",
        started.elapsed().as_secs_f64()
    );
    assert!(
        md.condition(condition_types::SECRETS_FOUND)
            .is_some_and(|c| c.status == ConditionStatus::False)
    );
    let selected = wait_event(&env, "served", event_reasons::PROVIDER_SELECTED, |_| true).await;
    assert!(
        selected
            .note
            .as_deref()
            .unwrap_or_default()
            .starts_with("Selected provider 'vllm': "),
        "{selected:?}"
    );
    wait_event(&env, "served", event_reasons::RESOURCE_CREATED, |e| {
        e.note.as_deref() == Some("Created Deployment 'served'")
    })
    .await;

    // The Secrets appear: no watch tells the core, its backoff re-check notices.
    create_secret(&env, "hf-token", "HF_TOKEN").await;
    create_secret(&env, "api-key", "key").await;
    let created = Instant::now();
    let (_, condition) = wait_for_condition(
        &mds,
        "served",
        Duration::from_secs(90),
        condition_types::SECRETS_FOUND,
        ConditionStatus::True,
    )
    .await;
    eprintln!(
        "SecretsFound=True {:.1}s after the Secrets were created: {}",
        created.elapsed().as_secs_f64(),
        condition.message.as_deref().unwrap_or_default()
    );
    assert_eq!(condition.reason.as_deref(), Some(reasons::SECRETS_FOUND));

    // The same drift twice: one DriftDetected Event, its series counting both.
    let drift_note = "Provider resource was modified directly, reconciling (Deployment 'served' is restored from the ModelDeployment)";
    for round in 1..=2 {
        deployments
            .patch(
                "served",
                &PatchParams::apply("someone-else").force(),
                &apply_body::apply(&json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "served"}, "spec": {"replicas": 3}})),
            )
            .await
            .unwrap();
        wait_for(
            &deployments,
            "served",
            WAIT,
            "replicas restored to 1",
            |d| d.spec.as_ref().and_then(|s| s.replicas) == Some(1),
        )
        .await;
        let drift = wait_event(&env, "served", event_reasons::DRIFT_DETECTED, |e| {
            e.note.as_deref() == Some(drift_note)
                && e.series.as_ref().map_or(1, |s| s.count) >= round
        })
        .await;
        eprintln!(
            "drift {round}: DriftDetected series count {}",
            drift.series.as_ref().map_or(1, |s| s.count)
        );
    }
    let drifts: Vec<Event> = events_about(&env, "served")
        .await
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(event_reasons::DRIFT_DETECTED))
        .collect();
    assert_eq!(drifts.len(), 1, "{:#?}", summary(&drifts));

    // FinalizerTimeout: the Deployment never goes away (a finalizer nobody removes).
    deployments
        .patch(
            "served",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["e2e.airunway.ai/never"]}})),
        )
        .await
        .unwrap();
    mds.delete("served", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&mds, "served", WAIT).await;
    wait_event(&env, "served", event_reasons::FINALIZER_TIMEOUT, |e| {
        e.note
            .as_deref()
            .unwrap_or_default()
            .starts_with("Finalizer removed after timeout")
    })
    .await;
    deployments
        .patch(
            "served",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();

    // The bound: the failing deployment's Event objects after it failed for `failing_for`.
    let failing_for = failing_for();
    let left = failing_for.saturating_sub(failing_since.elapsed());
    eprintln!(
        "other scenarios done; waiting {:.0}s more for {:.0}s of failure",
        left.as_secs_f64(),
        failing_for.as_secs_f64()
    );
    tokio::time::sleep(left).await;
    let md = mds.get("failing").await.unwrap();
    assert_eq!(md.phase(), Some(Phase::Failed), "still failing");
    let events = events_about(&env, "failing").await;
    let seen: i32 = events
        .iter()
        .map(|e| e.series.as_ref().map_or(1, |s| s.count))
        .sum();
    eprintln!(
        "failing for {:.0}s: {} Event objects ({seen} occurrences) about it: {:#?}",
        failing_since.elapsed().as_secs_f64(),
        events.len(),
        summary(&events)
    );
    assert!(
        events.len() <= FAILING_EVENT_BOUND,
        "{} Event objects about a deployment failing for {:.0}s (bound {FAILING_EVENT_BOUND}): {:#?}",
        events.len(),
        failing_since.elapsed().as_secs_f64(),
        summary(&events)
    );
    for reason in [
        event_reasons::PROVIDER_SELECTED,
        event_reasons::PROVIDER_ERROR,
        event_reasons::SECRET_NOT_FOUND,
    ] {
        assert!(
            events.iter().any(|e| e.reason.as_deref() == Some(reason)),
            "no {reason}: {:#?}",
            summary(&events)
        );
    }

    mds.delete("failing", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&mds, "failing", WAIT).await;
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}
