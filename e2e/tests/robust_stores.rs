//! Robust stores (issue 41 item 3) on the real control plane: with no admission webhook and no
//! depth policy installed, the API server stores a ModelDeployment whose `provider.overrides`
//! nest 300 levels deep (past serde_json's recursion limit of 128; the CRD leaves the field
//! free-form and cannot bound its depth). The real core and the real llm-d provider (each as
//! its ServiceAccount with the shipped RBAC) list and watch it with a good deployment in the
//! same namespace: the good one is selected and rendered, the deep one gets an `InvalidObject`
//! Warning event from each controller (published once), and neither process exits or logs a
//! failed deployment watch — for a deep object there before the controllers start (the initial
//! list) and one created while they run (the watch).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use airunway_api::constants::event_reasons::INVALID_OBJECT;
use airunway_api::v1alpha1::{InferenceProviderConfig, ModelDeployment};
use airunway_e2e::admission::{create_raw, deployment, remove_webhooks};
use airunway_e2e::stack::{self, FAST_HEALTH, Running};
use airunway_e2e::wait::{eventually, wait_for};
use airunway_e2e::{TestEnv, cluster_lock};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

/// Levels of `provider.overrides` in the deep deployments.
const DEPTH: usize = 300;

fn llmd_spec(overrides: Value) -> Value {
    json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"},
        "resources": {"gpu": {"count": 1}},
        "provider": {"name": "llmd", "overrides": overrides}})
}

fn nested(depth: usize) -> Value {
    let mut deep = json!(1);
    for _ in 0..depth {
        deep = json!({"a": deep});
    }
    deep
}

/// Creates a deep deployment with the raw API (no typed client could read the answer).
async fn create_deep(env: &TestEnv, name: &str) {
    let (code, _, body) = create_raw(
        &env.client,
        &env.namespace,
        &deployment(name, llmd_spec(nested(DEPTH))),
    )
    .await;
    assert_eq!(
        code, 201,
        "the API server should store {name} ({DEPTH} levels): {body}"
    );
}

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
        "llmd-0",
    )
    .await;
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, "llmd", WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    provider
}

/// Creates a good llm-d deployment and waits until it is selected and its Deployment exists.
async fn served(env: &TestEnv, name: &str) -> Duration {
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let md: ModelDeployment =
        serde_json::from_value(deployment(name, llmd_spec(json!({})))).unwrap();
    let t = Instant::now();
    mds.create(&PostParams::default(), &md).await.unwrap();
    wait_for(&mds, name, WAIT, "selected", |md| {
        md.selected_provider() == Some("llmd")
    })
    .await;
    eventually("the llm-d Deployment", WAIT, || async {
        match deployments.get_opt(name).await {
            Ok(Some(_)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    t.elapsed()
}

/// The `InvalidObject` events about `name`, with their reporting controllers.
async fn invalid_object_events(env: &TestEnv, name: &str) -> Vec<Event> {
    let events: Api<Event> = Api::namespaced(env.client.clone(), &env.namespace);
    events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(INVALID_OBJECT))
        .filter(|e| {
            e.regarding
                .as_ref()
                .is_some_and(|r| r.name.as_deref() == Some(name))
        })
        .collect()
}

/// Waits until both controllers reported `name`; checks each event once and its note.
async fn reported_by_both(env: &TestEnv, name: &str) -> Vec<Event> {
    let events = eventually("InvalidObject from the core and llm-d", WAIT, || async {
        let events = invalid_object_events(env, name).await;
        let mut by: Vec<String> = events
            .iter()
            .filter_map(|e| e.reporting_controller.clone())
            .collect();
        by.sort();
        if by == ["airunway-core", "llmd-provider"] {
            Ok(events)
        } else {
            Err(format!("reported by {by:?}"))
        }
    })
    .await;
    for event in &events {
        assert_eq!(event.type_.as_deref(), Some("Warning"));
        let note = event.note.as_deref().unwrap_or_default();
        assert!(
            // The first field past the limit: kubectl's managedFields entry
            // (`...fieldsV1.f:spec.f:provider.f:overrides.f:a...`) comes before the spec.
            note.contains("f:provider.f:overrides.f:a")
                && note.contains("levels)")
                && note.contains("recursion limit exceeded")
                && note.contains("nest the field less deeply"),
            "{note}"
        );
        let regarding = event.regarding.as_ref().unwrap();
        assert_eq!(regarding.kind.as_deref(), Some("ModelDeployment"));
        assert!(regarding.uid.is_some(), "{regarding:?}");
    }
    events
}

/// Neither process exited, and neither logged a failed deployment watch.
fn still_running(processes: &[&Running]) {
    for running in processes {
        let process = &running.process;
        assert!(
            process.exit_status().is_none(),
            "{} exited: {:?}\n{}",
            process.name(),
            process.exit_status(),
            process.log_tail(40)
        );
        let log = std::fs::read_to_string(process.log()).unwrap_or_default();
        let failed: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("watch failed") || l.contains("recursion limit"))
            .filter(|l| !l.contains("does not decode"))
            .collect();
        assert!(
            failed.is_empty(),
            "{} logged failures:\n{}",
            process.name(),
            failed.join("\n")
        );
        assert!(
            log.contains("object does not decode: skipped"),
            "{} did not log the skipped object",
            process.name()
        );
    }
}

#[tokio::test]
async fn an_object_nested_past_the_decoders_limit_is_reported_and_skipped() {
    let started = Instant::now();
    let _lock = cluster_lock().await;
    let env = TestEnv::new("robust-stores").await;
    airunway_e2e::providers::delete_all(&env.client).await;
    // No webhook, no depth policy (neither is installed on this control plane).
    remove_webhooks(&env.client).await;

    // Stored before the controllers start: their first list holds it.
    create_deep(&env, "deep-listed").await;

    let mut core_args = vec![];
    core_args.extend_from_slice(&FAST_HEALTH);
    let core = stack::start_core(&env, &env.control_plane.kubeconfig, &core_args, "core").await;
    let provider = start_llmd(&env).await;

    let first = served(&env, "good").await;
    let listed = reported_by_both(&env, "deep-listed").await;

    // Created while the controllers run: it arrives on their watches.
    create_deep(&env, "deep-watched").await;
    let watched = reported_by_both(&env, "deep-watched").await;
    let second = served(&env, "good-after").await;

    // The deep objects stay unselected (the core never decoded them).
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let good = mds.get("good").await.unwrap();
    assert_eq!(good.selected_provider(), Some("llmd"));

    // A few heartbeats later (each re-queues the provider's deployments) nothing was
    // reported twice: every event is still a single occurrence (no series).
    tokio::time::sleep(Duration::from_secs(3)).await;
    for name in ["deep-listed", "deep-watched"] {
        let events = invalid_object_events(&env, name).await;
        assert_eq!(events.len(), 2, "{name}: {events:?}");
        for event in events {
            assert!(event.series.is_none(), "{name} reported again: {event:?}");
        }
    }
    still_running(&[&core, &provider]);

    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
    eprintln!(
        "robust stores: {DEPTH}-level overrides stored without webhook or policy; good deployments selected and rendered in {first:?} (deep one listed) and {second:?} (deep one watched); InvalidObject from core and llm-d for both ({} + {} events, once each); suite took {:?}",
        listed.len(),
        watched.len(),
        started.elapsed()
    );
}
