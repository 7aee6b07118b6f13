//! Faults while work is in flight, on the real control plane with the real core and providers
//! (each under its ServiceAccount with the shipped RBAC). The upstream operators of KAITO,
//! Dynamo and KubeRay are played by
//! writing the status they really write (`chaos::play_operator`, which retries a write the
//! restarting API server refused): KAITO's and
//! Dynamo's operators cannot be built here, and a simulator restarts nothing, so every figure
//! is about our controllers. llm-d's and vLLM's Deployments are run by the real deployment
//! controller, kube-scheduler and KWOK.
//!
//! - `apiserver_restart_*`: kube-apiserver `kill -9`ed and restarted with the same flags; the
//!   controllers' watches recover without a restart of their own, the webhooks keep serving,
//!   and work queued across the restart is done with no external nudge (issue 23 item 6).
//! - `provider_health_*`: a provider whose watch keeps failing reports itself not ready, the
//!   core says why on its deployments, and both clear when the watch works again.
//! - `provider_leader_failover_*`: two replicas of a provider; the leader killed mid-burst; the
//!   other takes over within the lease and nothing is done twice.
//! - `chaos_smoke`: a seeded schedule of kills (core, each provider's leader, kube-apiserver)
//!   during a burst across every shipped provider (llm-d's and vLLM's Deployments run real
//!   Pods on KWOK's simulated GPU nodes, as many as their GPUs allow); convergence, one upstream object per deployment with its
//!   owner reference, no Pods rolled, no write once the cluster is at rest, nothing left after
//!   deletion, no panic. Sized by
//!   `AIRUNWAY_CHAOS_SEED`, `AIRUNWAY_CHAOS_DEPLOYMENTS`, `AIRUNWAY_CHAOS_FAULTS`,
//!   `AIRUNWAY_CHAOS_SETTLE_SECONDS` (the long run: docs/reliability.md, "Chaos").
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use airunway_api::constants::condition_types;
use airunway_api::v1alpha1::{ConditionStatus, InferenceProviderConfig, ModelDeployment};
use airunway_e2e::bench::workload::Target;
use airunway_e2e::chaos::play_operator as simulate_operator;
use airunway_e2e::chaos::{self, Fault, Fleet};
use airunway_e2e::wait::eventually;
use airunway_e2e::{TestEnv, cluster_lock};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::json;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Waits until every deployment of `run` in `0..count` has an upstream object; returns when.
async fn wait_upstream(
    env: &TestEnv,
    run: &str,
    targets: &[Target],
    count: usize,
    timeout: Duration,
) -> Instant {
    eventually(
        "every deployment to have its upstream object",
        timeout,
        || async {
            let mut n = 0;
            for t in targets {
                n += chaos::upstream_objects(env, *t, run).await.len();
            }
            if n >= count {
                Ok(Instant::now())
            } else {
                Err(format!("{n} of {count} upstream objects"))
            }
        },
    )
    .await
}

/// The gRPC health status (`""`, what the core checks) and `GetInfo`'s upstream health reason
/// of the provider probe on `port`.
async fn probe_health(port: u16) -> (i32, String) {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let status = tonic_health::pb::health_client::HealthClient::new(channel.clone())
        .check(tonic_health::pb::HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .status;
    let info =
        airunway_api::probe::v1::provider_service_client::ProviderServiceClient::new(channel)
            .get_info(airunway_api::probe::v1::GetInfoRequest {})
            .await
            .unwrap()
            .into_inner();
    (
        status,
        info.upstream_health.map(|h| h.reason).unwrap_or_default(),
    )
}

async fn ipc(env: &TestEnv, name: &str) -> InferenceProviderConfig {
    let api: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    api.get(name).await.unwrap()
}

#[tokio::test]
async fn apiserver_restart_controllers_recover_without_restarting_and_queued_work_resumes() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("apiserver-restart").await;
    let run = env.namespace.clone();
    let targets = [Target::Kaito];
    let fleet = chaos::start_fleet(&env, &targets, 1, &["--progress-deadline=20s"]).await;
    simulate_operator(env.client.clone(), Target::Kaito, run.clone());
    let pids = fleet.pids();

    // Settled work first.
    chaos::create_deployments(&env, &run, 0, 5, &targets).await;
    chaos::wait_running(&env, &run, 5, Duration::from_secs(90))
        .await
        .unwrap_or_else(|p| panic!("before the restart: {p:?}"));

    // 1. The API server restarts on its own.
    let restart = env
        .control_plane
        .restart_apiserver(Duration::from_secs(2))
        .await
        .unwrap();
    let ready = Instant::now();
    let webhook = chaos::webhook_refuses(&env, Duration::from_secs(30)).await;
    chaos::create_deployments(&env, &run, 5, 6, &targets).await;
    let upstream = wait_upstream(&env, &run, &targets, 6, Duration::from_secs(60)).await;
    let running = chaos::wait_running(&env, &run, 6, Duration::from_secs(60))
        .await
        .unwrap_or_else(|p| panic!("after the restart: {p:?}"));
    chaos::keep_logs(&env, &fleet, "apiserver-restart-1");
    println!(
        "API server restart: down {:.1}s (kill -9, 2 s pause, start, /readyz); webhook refusing again {:.2}s after ready; a deployment created then: Workspace {:.2}s, Running {:.2}s after ready",
        restart.down.as_secs_f64(),
        webhook.as_secs_f64(),
        upstream.duration_since(ready).as_secs_f64(),
        running.duration_since(ready).as_secs_f64(),
    );
    assert!(
        webhook < Duration::from_secs(15),
        "webhook back after {webhook:?}"
    );
    assert!(
        upstream.duration_since(ready) < Duration::from_secs(20),
        "the provider's watches came back after {:?}",
        upstream.duration_since(ready)
    );

    // 2. A burst queued across a restart: created, and the API server killed at once.
    chaos::create_deployments(&env, &run, 6, 30, &targets).await;
    let restart = env
        .control_plane
        .restart_apiserver(Duration::from_secs(3))
        .await
        .unwrap();
    let ready = Instant::now();
    let upstream = wait_upstream(&env, &run, &targets, 30, Duration::from_secs(120)).await;
    chaos::keep_logs(&env, &fleet, "apiserver-restart");
    let running = chaos::wait_running(&env, &run, 30, Duration::from_secs(90))
        .await
        .unwrap_or_else(|p| panic!("after the second restart: {p:?}"));
    println!(
        "API server restart with 24 deployments just created: down {:.1}s; every Workspace {:.2}s and every deployment Running {:.2}s after ready, no nudge",
        restart.down.as_secs_f64(),
        upstream.duration_since(ready).as_secs_f64(),
        running.duration_since(ready).as_secs_f64(),
    );
    assert!(
        upstream.duration_since(ready) < Duration::from_secs(30),
        "queued work resumed only after {:?}",
        upstream.duration_since(ready)
    );
    // Nobody restarted: the same processes, all alive; the provider is ready.
    assert_eq!(fleet.pids(), pids);
    for r in fleet
        .core
        .running
        .iter()
        .chain(fleet.providers.iter().flat_map(|(_, r)| r.running.iter()))
    {
        assert!(
            r.process.exit_status().is_none(),
            "{} exited",
            r.process.name()
        );
    }
    let kaito = ipc(&env, "kaito").await;
    assert_eq!(kaito.status.and_then(|s| s.ready), Some(true));
    assert_eq!(chaos::panics(&fleet.logs()), Vec::<String>::new());
}

#[tokio::test]
async fn provider_health_a_failing_watch_reports_not_ready_and_the_core_says_why() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("provider-health").await;
    let run = env.namespace.clone();
    let targets = [Target::Kaito];
    let fleet = chaos::start_fleet(&env, &targets, 1, &["--progress-deadline=10s"]).await;
    simulate_operator(env.client.clone(), Target::Kaito, run.clone());
    chaos::create_deployments(&env, &run, 0, 1, &targets).await;
    chaos::wait_running(&env, &run, 1, Duration::from_secs(90))
        .await
        .unwrap_or_else(|p| panic!("{p:?}"));

    // Take `watch` on workspaces away from the provider's ClusterRole; an open watch keeps
    // going, so restart the API server: every new watch of workspaces is refused (403).
    let roles: Api<k8s_openapi::api::rbac::v1::ClusterRole> = Api::all(env.client.clone());
    let role = roles.get("airunway-provider-kaito").await.unwrap();
    let original = role.rules.clone().unwrap_or_default();
    let without_watch: Vec<_> = original
        .iter()
        .cloned()
        .map(|mut rule| {
            if rule
                .resources
                .as_ref()
                .is_some_and(|r| r.iter().any(|r| r == "workspaces"))
            {
                rule.verbs.retain(|v| v != "watch");
            }
            rule
        })
        .collect();
    let set_rules = |rules: Vec<k8s_openapi::api::rbac::v1::PolicyRule>| {
        let roles = roles.clone();
        async move {
            roles
                .patch(
                    "airunway-provider-kaito",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"rules": rules})),
                )
                .await
                .unwrap();
        }
    };
    set_rules(without_watch).await;
    env.control_plane
        .restart_apiserver(Duration::from_secs(1))
        .await
        .unwrap();
    let broken = Instant::now();
    let not_ready = eventually(
        "kaito to report ready=false (WatchFailing)",
        Duration::from_secs(60),
        || async {
            let status = ipc(&env, "kaito").await.status.unwrap_or_default();
            let upstream = status
                .conditions
                .as_deref()
                .unwrap_or_default()
                .iter()
                .find(|c| c.type_ == condition_types::UPSTREAM_AVAILABLE)
                .cloned();
            match (status.ready, upstream) {
                // The watch of ModelDeployments may be reported first while it comes back
                // (refused, 403, 410 Expired and relist); the one that stays is workspaces.
                (Some(false), Some(c))
                    if c.reason.as_deref() == Some("WatchFailing")
                        && c.message
                            .as_deref()
                            .is_some_and(|m| m.contains("workspaces.kaito.sh")) =>
                {
                    Ok(c.message.unwrap_or_default())
                }
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    let reported = broken.elapsed();
    assert!(
        not_ready.contains("watch of workspaces.kaito.sh has been failing since")
            && not_ready.contains("403"),
        "{not_ready}"
    );
    // The probe says so too: NOT_SERVING (2), and GetInfo gives the reason.
    let probe = fleet.providers[0].1.running[0].probe.unwrap();
    assert_eq!(probe_health(probe).await, (2, "WatchFailing".to_string()));
    // The core marks the provider unavailable and says why on its deployment.
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let md = airunway_e2e::wait::wait_for(
        &mds,
        "md-00000",
        Duration::from_secs(30),
        "ProviderHealthy=False naming the workspaces watch",
        |md| {
            md.condition(condition_types::PROVIDER_HEALTHY)
                .is_some_and(|c| {
                    c.status == ConditionStatus::False
                        && c.message
                            .as_deref()
                            .is_some_and(|m| m.contains("workspaces.kaito.sh"))
                })
        },
    )
    .await;
    let healthy = md
        .condition(condition_types::PROVIDER_HEALTHY)
        .cloned()
        .unwrap();
    let marked = broken.elapsed();
    let why = healthy.message.clone().unwrap_or_default();
    assert!(why.contains("watch of workspaces.kaito.sh"), "{why}");

    // Give `watch` back: the watch resumes and everything clears without a restart.
    set_rules(original).await;
    let restored = Instant::now();
    airunway_e2e::wait::wait_for_condition(
        &mds,
        "md-00000",
        Duration::from_secs(60),
        condition_types::PROVIDER_HEALTHY,
        ConditionStatus::True,
    )
    .await;
    assert_eq!(
        ipc(&env, "kaito").await.status.and_then(|s| s.ready),
        Some(true)
    );
    assert_eq!(probe_health(probe).await.0, 1, "SERVING again");
    println!(
        "failing watch: ready=false after {:.1}s (progress deadline 10s), the deployment ProviderHealthy=False after {:.1}s: {}; healthy again {:.1}s after the permission came back",
        reported.as_secs_f64(),
        marked.as_secs_f64(),
        why,
        restored.elapsed().as_secs_f64()
    );
    assert_eq!(chaos::panics(&fleet.logs()), Vec::<String>::new());
}

#[tokio::test]
async fn provider_leader_failover_mid_burst_takes_over_within_the_lease_and_does_nothing_twice() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("leader-failover").await;
    let test_started = jiff::Timestamp::now();
    let run = env.namespace.clone();
    let targets = [Target::Kaito];
    let mut fleet = chaos::start_fleet(&env, &targets, 2, &[]).await;
    simulate_operator(env.client.clone(), Target::Kaito, run.clone());
    let count = 40;
    let creating = {
        let client = env.client.clone();
        let namespace = env.namespace.clone();
        let run = run.clone();
        tokio::spawn(async move {
            let mds: Api<ModelDeployment> = Api::namespaced(client, &namespace);
            for i in 0..count {
                let md: ModelDeployment =
                    serde_json::from_value(airunway_e2e::bench::workload::deployment(
                        &run,
                        i,
                        &namespace,
                        &[Target::Kaito],
                    ))
                    .unwrap();
                mds.create(&Default::default(), &md).await.unwrap();
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    // Mid-burst: the leader dies.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let provider = fleet.provider(Target::Kaito).unwrap();
    let leader = provider.leader_pid(&env).await.expect("a kaito leader");
    let before = chaos::lease_holder(&env, "kaito-provider").await.unwrap();
    let standby = provider
        .running
        .iter()
        .map(|r| r.process.pid())
        .find(|pid| *pid != leader)
        .unwrap();
    // No replacement: the standby must take over.
    let killed = provider.kill_leader(&env).await.unwrap();
    assert_eq!(killed, leader);
    let killed_at = Instant::now();
    let new_holder = eventually(
        "another replica to take the Lease",
        Duration::from_secs(30),
        || async {
            match chaos::lease_holder(&env, "kaito-provider").await {
                Some(h) if h != before => Ok(h),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    let took_over = killed_at.elapsed();
    assert!(
        new_holder.ends_with(&format!("-{standby}")),
        "{new_holder} is not the standby {standby}"
    );
    creating.await.unwrap();
    let upstream = wait_upstream(&env, &run, &targets, count, Duration::from_secs(90)).await;
    chaos::wait_running(&env, &run, count, Duration::from_secs(90))
        .await
        .unwrap_or_else(|p| panic!("{p:?}"));
    println!(
        "leader failover: {before} killed; {new_holder} holds the Lease {:.1}s later (lease 6s); all {count} Workspaces {:.1}s after the kill",
        took_over.as_secs_f64(),
        upstream.duration_since(killed_at).as_secs_f64()
    );
    assert!(
        took_over < Duration::from_secs(6 + 5),
        "take-over after {took_over:?}"
    );

    // Nothing twice: one Workspace per deployment, owned by it, and one ResourceCreated event.
    let workspaces = chaos::upstream_objects(&env, Target::Kaito, &run).await;
    assert_eq!(workspaces.len(), count);
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments = mds.list(&ListParams::default()).await.unwrap().items;
    for w in &workspaces {
        let owner = &w.metadata.owner_references.as_ref().unwrap()[0];
        assert!(
            deployments
                .iter()
                .any(|d| d.metadata.uid.as_deref() == Some(owner.uid.as_str())),
            "{:?} owned by a deployment that does not exist",
            w.metadata.name
        );
    }
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(env.client.clone(), &env.namespace);
    let mut created: BTreeMap<String, i32> = BTreeMap::new();
    for e in events.list(&ListParams::default()).await.unwrap().items {
        if e.reason.as_deref() == Some("ResourceCreated") {
            let name = e.regarding.and_then(|r| r.name).unwrap_or_default();
            *created.entry(name).or_default() += e.series.map(|s| s.count).unwrap_or(1);
        }
    }
    let twice: Vec<_> = created.iter().filter(|(_, n)| **n > 1).collect();
    println!(
        "ResourceCreated events: {} deployments, {} more than once",
        created.len(),
        twice.len()
    );
    assert!(twice.is_empty(), "created twice: {twice:?}");
    // A Workspace the killed leader created just before dying may have lost its event with it;
    // the new leader adopts the object (no second create).
    assert!(created.len() <= count);
    let deletes: Vec<_> = chaos::writes_between(&env, test_started, jiff::Timestamp::now())
        .into_iter()
        .filter(|(what, _)| what.contains("delete workspaces"))
        .collect();
    assert!(
        deletes.is_empty(),
        "Workspaces deleted (recreated?): {deletes:?}"
    );
    assert_eq!(chaos::panics(&fleet.logs()), Vec::<String>::new());
}

#[tokio::test]
async fn chaos_smoke() {
    let _lock = cluster_lock().await;
    let seed: u64 = env_or("AIRUNWAY_CHAOS_SEED", 23);
    let count: usize = env_or("AIRUNWAY_CHAOS_DEPLOYMENTS", 45);
    let faults: usize = env_or("AIRUNWAY_CHAOS_FAULTS", 7);
    let settle = Duration::from_secs(env_or("AIRUNWAY_CHAOS_SETTLE_SECONDS", 20));
    let span = Duration::from_secs(env_or("AIRUNWAY_CHAOS_SPAN_SECONDS", 40));
    let targets = Target::EVERY_PROVIDER;
    let schedule = chaos::schedule(seed, faults, &targets, span, Duration::from_secs(4));
    // llm-d's and vLLM's Pods share the simulated GPUs; the other providers take the rest.
    let plan = chaos::assign(count, &targets, chaos::simulated_gpus());
    assert_eq!(plan.len(), count);
    let mix: Vec<String> = targets
        .iter()
        .map(|t| format!("{} {}", plan.iter().filter(|p| *p == t).count(), t.name()))
        .collect();
    println!(
        "chaos: seed {seed}, {count} deployments ({}), {faults} faults over {span:?}:",
        mix.join(", ")
    );
    for s in &schedule {
        println!("  +{:>5.1}s  {}", s.at.as_secs_f64(), s.fault);
    }

    let env = TestEnv::new("chaos").await;
    let run = env.namespace.clone();
    let mut fleet: Fleet =
        chaos::start_fleet(&env, &targets, 2, &["--progress-deadline=30s"]).await;
    for t in targets.into_iter().filter(|t| t.simulated()) {
        simulate_operator(env.client.clone(), t, run.clone());
    }

    // The burst, in slices spread over the span, with the faults at their moments.
    let started = Instant::now();
    let creator = {
        let client = env.client.clone();
        let namespace = env.namespace.clone();
        let run = run.clone();
        let plan = plan.clone();
        tokio::spawn(async move {
            let mds: Api<ModelDeployment> = Api::namespaced(client, &namespace);
            let pause = span / (count.max(1) as u32);
            for (i, target) in plan.into_iter().enumerate() {
                let md: ModelDeployment = serde_json::from_value(
                    airunway_e2e::bench::workload::deployment(&run, i, &namespace, &[target]),
                )
                .unwrap();
                for attempt in 0.. {
                    match mds.create(&Default::default(), &md).await {
                        Ok(_) => break,
                        Err(kube::Error::Api(s)) if s.code == 409 => break,
                        Err(e) if attempt > 120 => panic!("creating {i}: {e}"),
                        Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
                    }
                }
                tokio::time::sleep(pause).await;
            }
        })
    };
    let mut injected = Vec::new();
    for s in &schedule {
        if let Some(wait) = s.at.checked_sub(started.elapsed()) {
            tokio::time::sleep(wait).await;
        }
        let at = started.elapsed();
        let detail = match s.fault {
            Fault::KillCore => format!("pid {:?}", fleet.core.kill_leader_and_replace(&env).await),
            Fault::KillProvider(t) => format!(
                "pid {:?}",
                fleet
                    .provider(t)
                    .unwrap()
                    .kill_leader_and_replace(&env)
                    .await
            ),
            Fault::RestartApiServer => {
                let r = env
                    .control_plane
                    .restart_apiserver(Duration::from_secs(1))
                    .await
                    .unwrap();
                format!("down {:.1}s", r.down.as_secs_f64())
            }
        };
        println!(
            "  injected at +{:.1}s: {} ({detail})",
            at.as_secs_f64(),
            s.fault
        );
        injected.push(s.fault);
    }
    let last_fault = Instant::now();
    creator.await.unwrap();

    // Convergence: every deployment Running (what it reaches without faults).
    let converged = chaos::wait_running(&env, &run, count, Duration::from_secs(180)).await;
    if converged.is_err() {
        chaos::keep_logs(&env, &fleet, "chaos");
    }
    let converged =
        converged.unwrap_or_else(|p| panic!("not converged 180 s after the last fault: {p:?}"));
    let converge = converged.duration_since(last_fault);

    // Exactly one upstream object per deployment, owned by it.
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments = mds.list(&ListParams::default()).await.unwrap().items;
    let mut owners: BTreeMap<String, usize> = BTreeMap::new();
    let kinds = chaos::upstream_kinds(&targets);
    for kind in &kinds {
        for o in chaos::objects_of_kind(&env, kind, &run).await {
            let owner = o
                .metadata
                .owner_references
                .as_ref()
                .and_then(|r| r.iter().find(|r| r.controller == Some(true)))
                .unwrap_or_else(|| panic!("{:?} has no controller owner", o.metadata.name));
            let md = deployments
                .iter()
                .find(|d| d.metadata.uid.as_deref() == Some(owner.uid.as_str()))
                .unwrap_or_else(|| panic!("{:?} is an orphan", o.metadata.name));
            *owners.entry(md.metadata.name.clone().unwrap()).or_default() += 1;
        }
    }
    let not_one: Vec<_> = deployments
        .iter()
        .filter_map(|d| d.metadata.name.clone())
        .filter(|n| owners.get(n) != Some(&1))
        .collect();
    assert!(
        not_one.is_empty(),
        "deployments without exactly one upstream object: {not_one:?}"
    );

    // A fault changes no rendered pod template: no Deployment's Pods were rolled.
    let rolled = chaos::rolled_deployments(&env).await;
    assert!(
        rolled.is_empty(),
        "Deployments whose Pods were rolled (ReplicaSets each): {rolled:?}"
    );

    // Status stops changing: once the upstream is at rest (the deployment controller's last
    // status changes can trail `Running` by many seconds after an API server restart, and our
    // providers rightly copy them) and a moment to handle the last event, our components write
    // nothing but leases and heartbeats.
    let at_rest = chaos::wait_at_rest(&env, Duration::from_secs(120))
        .await
        .unwrap_or_else(|why| panic!("the cluster not at rest 120 s after Running: {why}"));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let status_changes = chaos::StatusChanges::start(&env);
    let window_start = jiff::Timestamp::now();
    tokio::time::sleep(settle).await;
    let writes = chaos::writes_between(&env, window_start, jiff::Timestamp::now());
    let changes = status_changes.lines();
    drop(status_changes);

    // Delete everything: no finalizer left behind. Timed from the request (the API server
    // marks the deployments one by one while the controllers already remove finalizers).
    let deleted = Instant::now();
    mds.delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .unwrap();
    let delete_call = deleted.elapsed();
    eventually(
        "every deployment to be gone",
        Duration::from_secs(120),
        || async {
            let left = mds
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            if left.items.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "{} left, finalizers {:?}",
                    left.items.len(),
                    left.items
                        .first()
                        .and_then(|m| m.metadata.finalizers.clone())
                ))
            }
        },
    )
    .await;
    let gone = deleted.elapsed();
    // The upstream objects go with them (owner references; garbage collection).
    eventually(
        "every upstream object to be gone",
        Duration::from_secs(60),
        || async {
            let mut left = 0;
            for kind in &kinds {
                left += chaos::objects_of_kind(&env, kind, &run).await.len();
            }
            if left == 0 {
                Ok(())
            } else {
                Err(format!("{left} upstream objects left"))
            }
        },
    )
    .await;
    let upstream_gone = deleted.elapsed();
    chaos::keep_logs(&env, &fleet, "chaos");
    let panics = chaos::panics(&fleet.logs());
    println!(
        "chaos figures: seed {seed}; faults injected {} (core {}, providers {}, API server {}); {count} deployments Running {:.1}s after the last fault, at rest {:.1}s later; one upstream object each with its owner, no Pods rolled; writes in the {:?} settle window (leases and heartbeats aside): {:?}; all deleted (the deletecollection call {:.1}s), no finalizer left, in {:.1}s, their upstream objects gone in {:.1}s; panics: {}",
        injected.len(),
        injected.iter().filter(|f| **f == Fault::KillCore).count(),
        injected
            .iter()
            .filter(|f| matches!(f, Fault::KillProvider(_)))
            .count(),
        injected
            .iter()
            .filter(|f| **f == Fault::RestartApiServer)
            .count(),
        converge.as_secs_f64(),
        at_rest.as_secs_f64(),
        settle,
        writes,
        delete_call.as_secs_f64(),
        gone.as_secs_f64(),
        upstream_gone.as_secs_f64(),
        panics.len()
    );
    assert!(
        writes.is_empty(),
        "writes after settle: {writes:?}; the status changes seen ({} in all): {:#?}",
        changes.len(),
        changes.iter().take(12).collect::<Vec<_>>()
    );
    assert_eq!(panics, Vec::<String>::new());
}
