//! Process wiring: checks, servers, leader election, the controller, graceful shutdown.

use std::sync::Arc;
use std::time::Duration;

use airunway_api::cache_trim;
use airunway_api::runtime::{
    EventPublisher, InvalidObjects, LeaderElection, Started, WatchBackoff, default_identity,
    guarded_watcher, serve_metrics, start, touched_once_stored,
};
use airunway_api::v1alpha1::{InferenceProviderConfig, ModelDeployment};
use anyhow::Context as _;
use futures::{StreamExt, TryStreamExt};
use kube::runtime::controller::{Config as ControllerConfig, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use prometheus_client::registry::Registry;

use crate::args::Args;
use crate::controller::{Context, ProviderChanges, SelectionInputs, run_controller};
use crate::gateway::GoneDeployments;
use crate::health::{MonitorOptions, run_monitor};
use crate::metrics::{CoreMetrics, DeploymentCollector, ProviderHealthCollector};
use crate::model_cache::users::UseTracker;
use crate::selection::{HealthPolicy, RuleSet};
use crate::webhook::certs::CertConfig;
use crate::webhook::{WebhookOptions, start_webhooks};

/// Caches queued for a reconcile by deployment events before events are dropped (the caches'
/// resync covers a dropped one).
const CACHE_TRIGGER_BUFFER: usize = 4096;

/// How many deployments the core reconciles at once.
const RECONCILE_CONCURRENCY: u16 = 32;

/// Name the core reports events as.
pub const CONTROLLER_NAME: &str = "airunway-core";

/// Runs the core until SIGTERM (or lost leadership, which is an error).
pub async fn run(args: Args) -> anyhow::Result<()> {
    let Started {
        client,
        shutdown,
        health,
    } = start(&args.common).await?;
    let mut registry = Registry::with_prefix("airunway");
    let metrics = CoreMetrics::register(&mut registry);

    // Deployments are cached with only what the reconcile reads (status ownership, no
    // last-applied copy of the spec): see `cache_trim`.
    let (deployment_store, deployment_writer) = reflector::store::<ModelDeployment>();
    // Phase transitions are judged against the cached copy, before the event reaches it.
    let (cached_deployments, transitions) = (deployment_store.clone(), metrics.clone());
    // Deletions and relists, for the gateway allowances no reconcile can take back (see
    // `gateway::release`).
    let gone = args.enable_gateway.then(GoneDeployments::new);
    let observed = gone.clone();
    // The caches whose users a deployment event changes (see `model_cache::users`).
    let (cache_triggers, cache_trigger_receiver) = tokio::sync::mpsc::channel(CACHE_TRIGGER_BUFFER);
    let mut uses = UseTracker::default();
    let (policy_events, policy_event_receiver) = crate::policy::sync::DeploymentEvents::new();
    // Every watch of a kind users write decodes each object on its own: one the types refuse
    // is reported on it and skipped (see `guarded_watch`).
    let invalid = InvalidObjects::new(EventPublisher::new(client.clone(), CONTROLLER_NAME));
    let deployment_changes = guarded_watcher(
        client.clone(),
        airunway_api::runtime::list_pages::deployment_watch_config(),
        invalid.clone(),
        deployment_store.clone(),
    )
    .backoff(WatchBackoff::default())
    .modify(|md: &mut ModelDeployment| cache_trim::keep_status_ownership(&mut md.metadata))
    .inspect_ok(move |event| transitions.observe_watch(event, &cached_deployments))
    .reflect(deployment_writer)
    .inspect_ok(move |event| {
        if let Some(gone) = &observed {
            gone.observe(event);
        }
        policy_events.observe(event);
        for cache in uses.observe(event) {
            // A full buffer means a burst is queued; the caches' resync covers the rest.
            let _ = cache_triggers.try_send(cache);
        }
    });
    // A re-list's deployments are reconciled once the store holds them (`stored_triggers`).
    let deployment_changes = touched_once_stored(deployment_changes, deployment_store.clone())
        // A watch error is logged and dropped (the watcher's backoff paces its retries): given
        // to the controller it would pause every trigger (kube's `trigger_backoff`, up to 30 s).
        .filter(|item| {
            if let Err(e) = item {
                tracing::warn!(error = %e, "ModelDeployment watch failed; retrying");
            }
            std::future::ready(item.is_ok())
        });
    let controller = Controller::for_stream(deployment_changes, deployment_store)
        .trigger_backoff(WatchBackoff::default())
        .with_config(ControllerConfig::default().concurrency(RECONCILE_CONCURRENCY));
    registry.register_collector(Box::new(DeploymentCollector::new(controller.store())));

    // The provider cache serves the webhooks on every replica and the controller on the leader.
    // The same watch announces each change once the cache holds it (see `ProviderChanges`).
    let (providers, writer) = reflector::store();
    let health_policy = HealthPolicy {
        stale_after: args.provider_stale_threshold,
    };
    registry.register_collector(Box::new(ProviderHealthCollector::new(
        providers.clone(),
        health_policy,
    )));
    serve_metrics(
        args.common.metrics_bind_address,
        Arc::new(registry),
        shutdown.clone(),
    )
    .await?;
    let provider_changes = ProviderChanges::new();
    let reflect = guarded_watcher::<InferenceProviderConfig>(
        client.clone(),
        watcher::Config::default(),
        invalid.clone(),
        providers.clone(),
    )
    .backoff(WatchBackoff::default())
    .reflect(writer);
    // A re-list's triggers once the store holds it (`stored_triggers`).
    let reflect = touched_once_stored(reflect, providers.clone());
    let announce = provider_changes.clone();
    let cached = providers.clone();
    tokio::spawn(async move {
        futures::pin_mut!(reflect);
        // A heartbeat alone changes nothing selection reads (staleness reaches the deployments
        // through the monitor's `Available` condition), so it wakes no deployment.
        let mut seen = SelectionInputs::default();
        while let Some(event) = reflect.next().await {
            match event {
                Ok(ipc) => {
                    let deleted = cached.get(&ObjectRef::from_obj(&ipc)).is_none();
                    if seen.changed(&ipc, deleted) {
                        announce.announce(ipc);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "InferenceProviderConfig watch error"),
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(60), providers.wait_until_ready())
        .await
        .context("InferenceProviderConfig cache did not sync within 60s")??;

    // ModelDeploymentPolicy caches: the webhooks on every replica, the reconcile on the leader.
    let (policies, policy_changes) = crate::policy::Policies::start(
        client.clone(),
        args.webhook_namespace(),
        invalid.clone(),
        shutdown.clone(),
    )
    .await?;

    if args.webhook_bind_address.port() != 0 {
        let options = WebhookOptions {
            bind: args.webhook_bind_address,
            selector_enabled: args.enable_provider_selector,
            certs: CertConfig {
                secret_namespace: args.webhook_namespace(),
                secret_name: args.webhook_secret_name.clone(),
                sans: args.webhook_sans(),
                lifetime: args.webhook_cert_lifetime,
                rotation_margin: args.webhook_cert_rotation_margin,
                validating_configuration: args.validating_webhook_configuration.clone(),
                mutating_configuration: args.mutating_webhook_configuration.clone(),
            },
        };
        start_webhooks(
            client.clone(),
            options,
            providers.clone(),
            Some(policies.clone()),
            metrics.clone(),
            shutdown.clone(),
        )
        .await?;
    }

    // Every replica is ready to serve admission; only the leader reconciles.
    health.set_ready(true);
    let mut leader = if args.common.leader_elect {
        let identity = default_identity();
        let mut election = LeaderElection::start(
            client.clone(),
            &args.common.lease_namespace(),
            &args.leader_election_id,
            &identity,
            args.common.leader_election_lease_duration,
        )
        .await?;
        tracing::info!(%identity, "waiting for leadership");
        if !election.acquire(&shutdown).await {
            return Ok(());
        }
        Some(election)
    } else {
        None
    };

    // The gateway integration (leader only): its watches start once the CRDs are served.
    let (gateway, controller) = if args.enable_gateway {
        let (integration, triggers) = crate::gateway::Integration::start(
            client.clone(),
            args.gateway_config(),
            controller.store(),
            EventPublisher::new(client.clone(), CONTROLLER_NAME),
            metrics.clone(),
            shutdown.clone(),
        );
        if let Some(gone) = gone {
            tokio::spawn(integration.clone().release_gone(
                gone,
                providers.clone(),
                shutdown.clone(),
            ));
        }
        (Some(integration), controller.reconcile_on(triggers))
    } else {
        (None, controller)
    };
    // The model cache (leader only): its watches, the ModelCache controller, and the
    // deployments to look at again when their caches or claims change.
    let (model_cache, storage_triggers) = crate::model_cache::Integration::start(
        client.clone(),
        args.cache_config(),
        controller.store(),
        cache_trigger_receiver,
        invalid.clone(),
        shutdown.clone(),
    );
    let controller = controller.reconcile_on(storage_triggers);
    // Autoscaling (leader only): KEDA's CRD detection and the watches on the autoscalers, whose
    // status changes look at their deployment again.
    let (autoscaling, autoscaling_triggers) = crate::autoscaling::Integration::start(
        client.clone(),
        args.autoscaling_config(),
        controller.store(),
        EventPublisher::new(client.clone(), CONTROLLER_NAME),
        args.enable_gateway,
        shutdown.clone(),
    );
    let controller = controller.reconcile_on(autoscaling_triggers);
    // Policies (leader only): deployments to judge again when a policy, a namespace's labels
    // or a neighbour under a quota change; the GPU ledgers kept in step.
    let enforcement = Arc::new(crate::policy::Enforcement {
        policies,
        deployments: controller.store(),
    });
    let policy_triggers = crate::policy::sync::start(
        enforcement.clone(),
        policy_changes,
        policy_event_receiver,
        shutdown.clone(),
    );
    let controller = controller.reconcile_on(policy_triggers);
    // Runtime configurations (leader only): their caches, and the deployments a config change
    // concerns (docs/platform.md).
    let (runtime_configs, runtime_config_triggers) = crate::runtime_config::RuntimeConfigs::start(
        client.clone(),
        controller.store(),
        invalid.clone(),
        shutdown.clone(),
    );
    let controller = controller.reconcile_on(runtime_config_triggers);
    let ctx = Arc::new(Context {
        client: client.clone(),
        providers,
        selector_enabled: args.enable_provider_selector,
        rules: RuleSet::default(),
        events: EventPublisher::new(client.clone(), CONTROLLER_NAME),
        metrics,
        resync: args.resync_interval,
        selection_slots: Arc::new(tokio::sync::Semaphore::new(
            std::thread::available_parallelism().map_or(2, |n| n.get().max(2)),
        )),
        gateway,
        model_cache: Some(model_cache),
        autoscaling: Some(autoscaling),
        policy: Some(enforcement),
        failures: Default::default(),
        secrets: Some(Arc::new(crate::secret_references::Check::new(
            client.clone(),
        ))),
        secret_misses: Default::default(),
        access: args.check_upstream_access.then(|| {
            Arc::new(crate::access::Check::new(
                client.clone(),
                args.upstream_access_cache_ttl,
            ))
        }),
        runtime_configs,
    });
    tracing::info!(
        provider_selector = args.enable_provider_selector,
        stale_after = ?args.provider_stale_threshold,
        "starting the ModelDeployment controller"
    );
    let stop_controller = shutdown.child_token();
    let monitor = MonitorOptions {
        interval: args.provider_probe_interval,
        failure_threshold: args.provider_probe_failure_threshold,
        policy: health_policy,
    };
    tokio::spawn(run_monitor(
        client.clone(),
        ctx.providers.clone(),
        monitor,
        stop_controller.clone(),
    ));
    let controller_task = tokio::spawn(run_controller(
        ctx,
        controller,
        provider_changes.subscribe(),
        stop_controller.clone(),
    ));
    match leader.as_mut() {
        Some(election) => {
            tokio::select! {
                _ = shutdown.cancelled() => {}
                lost = election.lost() => {
                    stop_controller.cancel();
                    let _ = controller_task.await;
                    return Err(lost.into());
                }
            }
        }
        None => shutdown.cancelled().await,
    }
    stop_controller.cancel();
    let _ = controller_task.await;
    if let Some(election) = leader {
        election.release().await;
    }
    tracing::info!("stopped");
    Ok(())
}
