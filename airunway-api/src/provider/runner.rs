//! Wiring of a provider process.

use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use clap::Parser;
use futures::channel::mpsc;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::controller::{Config as ControllerConfig, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Client, Resource as _};
use prometheus_client::registry::Registry;
use tokio::sync::watch;

use super::HeldDeployment;
use super::args::ProviderArgs;
use super::context::{Context, Kinds};
use super::kinds::KindTable;
use super::metrics::ProviderMetrics;
use super::read_your_writes::LiveObjects;
use super::reconcile::{error_policy, reconcile_held};
use super::registration::{self, ControllerHealth, Heartbeat};
use super::runtime_configs::{self, ConfigRef, ConfigStores};
use super::traits::{Provider, SchemaDetection};
use crate::cache_trim;
use crate::compact_object::{CompactObject, compact_event};
use crate::compact_resource::{compact_ref, compact_resource_event};
use crate::constants::{field_managers, labels};
use crate::probe::v1::{EngineCapability, GetInfoResponse, UpstreamHealth, upstream_health};
use crate::runtime::touched_once_stored;
use crate::runtime::watch_health::{Progress, Stalled, WatchBackoff};
use crate::runtime::{
    EventPublisher, InvalidObjects, LeaderElection, LeaderError, Started, default_identity,
    guarded_watcher, init_telemetry, install_crypto_provider, serve_metrics, start,
};
use crate::v1alpha1::{ClusterRuntimeConfig, ModelDeployment, ProbeEndpoint, RuntimeConfig};

/// Writes heartbeats for one provider.
struct Reporter<P> {
    name: String,
    version: String,
    client: Client,
    provider: Arc<P>,
    metrics: ProviderMetrics,
}

impl<P> Clone for Reporter<P> {
    fn clone(&self) -> Self {
        Reporter {
            name: self.name.clone(),
            version: self.version.clone(),
            client: self.client.clone(),
            provider: self.provider.clone(),
            metrics: self.metrics.clone(),
        }
    }
}

impl<P: Provider> Reporter<P> {
    async fn beat(
        &self,
        detection: &SchemaDetection,
        controller: Option<&ControllerHealth>,
        stalled: Option<&Stalled>,
        shutting_down: bool,
    ) -> Result<(), registration::RegistrationError> {
        let upstream = self.provider.upstream();
        let named = self.provider.upstream_controller();
        let heartbeat = Heartbeat {
            name: &self.name,
            version: self.version.clone(),
            detection,
            shutting_down,
            display: (self.provider.display_name(), &upstream.kind),
            controller: named.as_ref().zip(controller),
            stalled,
        };
        registration::heartbeat(&self.client, &heartbeat).await?;
        self.metrics.heartbeat_written();
        Ok(())
    }
}

/// The watch of the ModelDeployments: all of them, every change. Nothing is filtered by
/// generation: a status-only change (the core's `StorageReady` or `ModelDownloaded`, which
/// the [storage gate](super::storage_gate) waits on) must wake the reconcile like a spec
/// change.
fn deployment_watch() -> watcher::Config {
    crate::runtime::list_pages::deployment_watch_config()
}

/// How many deployments are reconciled at once: enough to keep the API server busy, few
/// enough that a burst queues here (deduplicated per deployment) instead of in flight.
const RECONCILE_CONCURRENCY: u16 = 32;

/// Records in `progress` what a watch stream delivers: an object says watch `watch` works
/// (and, when `queues`, that a reconcile is queued); an error says it fails, and is logged and
/// dropped: the watcher's own backoff paces its retries, while a controller given an error
/// pauses *all* its triggers (kube's `trigger_backoff`, 800 ms doubling to 30 s, reset only by
/// an event), so one failing watch stalled every reconcile for minutes after an API server
/// restart (issue 23 item 6).
fn track<S, K>(
    stream: S,
    watch: String,
    progress: Arc<Mutex<Progress>>,
    queues: bool,
) -> impl futures::Stream<Item = Result<K, watcher::Error>> + Send + 'static
where
    S: futures::Stream<Item = Result<K, watcher::Error>> + Send + 'static,
    K: Send + 'static,
{
    stream
        .inspect(move |item| {
            let now = jiff::Timestamp::now();
            if let Err(e) = item {
                tracing::warn!(watch = %watch, error = %e, "watch failed; retrying");
            }
            let Ok(mut progress) = progress.lock() else {
                return;
            };
            match item {
                Ok(_) => {
                    progress.watch_ok(&watch);
                    if queues {
                        progress.arrived(now);
                    }
                }
                Err(e) => progress.watch_error(&watch, e.to_string(), now),
            }
        })
        .filter(|item| std::future::ready(item.is_ok()))
}

/// The name of the watch of `resource` in health messages (`workspaces.kaito.sh`).
fn watch_name(resource: &ApiResource) -> String {
    if resource.group.is_empty() {
        resource.plural.clone()
    } else {
        format!("{}.{}", resource.plural, resource.group)
    }
}

/// The items of `make(value)` for the latest value `values` holds: when it changes, the
/// stream made for the previous value is dropped and one for the new value made (a watch made
/// anew lists again, and a reflector it feeds then replaces its store). Once the sender is
/// gone, the current stream runs on.
pub(crate) fn following<T, S, F>(
    mut values: watch::Receiver<T>,
    mut make: F,
) -> impl futures::Stream<Item = S::Item> + Send + 'static
where
    T: Clone + Send + Sync + 'static,
    S: futures::Stream + Send + 'static,
    S::Item: Send,
    F: FnMut(T) -> S + Send + 'static,
{
    let first = Box::pin(make(values.borrow_and_update().clone()));
    futures::stream::unfold(
        (values, make, first, true),
        |(mut values, mut make, mut current, mut open)| async move {
            loop {
                if !open {
                    let item = current.next().await?;
                    return Some((item, (values, make, current, open)));
                }
                tokio::select! {
                    changed = values.changed() => match changed {
                        Ok(()) => {
                            let value = values.borrow_and_update().clone();
                            current = Box::pin(make(value));
                        }
                        Err(_) => open = false,
                    },
                    item = current.next() => {
                        return item.map(|item| (item, (values, make, current, open)));
                    }
                }
            }
        },
    )
}

/// The version the upstream watch should follow after `detection`, when it is not `current`:
/// the detected schema's version (an undetected or unsupported schema keeps the watch where
/// it is).
pub(crate) fn next_watch_version(current: &str, detection: &SchemaDetection) -> Option<String> {
    detection
        .schema()
        .map(|schema| schema.version.clone())
        .filter(|version| version != current)
}

/// The watch of the objects of `resource` this provider manages (only those labelled
/// `airunway.ai/managed-by: airunway`, cached compactly ([`CompactObject`]) with only the
/// managedFields times the staleness check reads, see [`super::staleness::keep_update_times`])
/// at the version `resources` holds
/// (the primary kind's detected version, followed: see [`following`]): the cache, keyed by
/// `resource` whatever version is watched, and the stream of changes that wakes the owning
/// deployment's reconcile (recorded in `progress`).
fn watch_owned(
    client: &Client,
    resource: &ApiResource,
    resources: watch::Receiver<ApiResource>,
    manager: String,
    progress: &Arc<Mutex<Progress>>,
) -> (
    LiveObjects,
    impl futures::Stream<Item = Result<CompactObject, watcher::Error>> + Send + 'static,
) {
    let writer = reflector::store::Writer::new(resource.clone());
    let store = writer.as_reader();
    let live = LiveObjects::new(store.clone(), resource.clone());
    let client = client.clone();
    let changes = following(resources, move |resource: ApiResource| {
        let owned: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        watcher(
            owned,
            watcher::Config::default()
                .labels(&format!(
                    "{}={}",
                    labels::MANAGED_BY,
                    labels::MANAGED_BY_VALUE
                ))
                .any_semantic()
                .page_size(crate::runtime::list_pages::UPSTREAM_LIST_PAGE),
        )
        .backoff(WatchBackoff::default())
    })
    .modify(move |object: &mut DynamicObject| {
        super::staleness::keep_update_times(&mut object.metadata, &manager)
    })
    // Held compactly: a `Value` tree costs about ten times the object's JSON.
    .map_ok(compact_event)
    .reflect(writer);
    // Tracked on the watch's events, not its objects: a re-listing that finds nothing still
    // says the watch works again (its `InitDone`).
    let changes = touched_once_stored(
        track(changes, watch_name(resource), progress.clone(), false),
        store,
    );
    (live, changes)
}

/// Whether the CRD `name` exists (an error reading it counts as installed: the watch then
/// retries as for any other kind).
async fn crd_installed(client: &Client, name: &str) -> bool {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    !matches!(crds.get_opt(name).await, Ok(None))
}

/// A cache of `resource` that has listed nothing, for a kind not watched.
fn empty_cache(resource: ApiResource) -> LiveObjects {
    let mut writer = reflector::store::Writer::<CompactObject>::new(resource.clone());
    writer.apply_watcher_event(&watcher::Event::InitDone);
    LiveObjects::new(writer.as_reader(), resource)
}

/// The watch of the Pods `selector` selects in every namespace (see
/// [`Provider::pod_watch_selector`]), cached trimmed to what the not-ready mapping reads
/// ([`cache_trim::trim_pod`]): the cache, and the stream of the Pods whose trimmed state
/// changed (a pod IP or a heartbeat time changing wakes nothing).
fn watch_pods(
    client: &Client,
    selector: &str,
    progress: &Arc<Mutex<Progress>>,
) -> (
    Store<Pod>,
    impl futures::Stream<Item = Result<Pod, watcher::Error>> + Send + 'static + use<>,
) {
    let writer = reflector::store::Writer::<Pod>::default();
    let store = writer.as_reader();
    let changes = watcher(
        Api::<Pod>::all(client.clone()),
        watcher::Config::default().labels(selector).any_semantic(),
    )
    .backoff(WatchBackoff::default())
    .modify(cache_trim::trim_pod)
    .reflect(writer);
    // Tracked on the watch's events, before the filter: a re-listing after an API server
    // restart delivers unchanged Pods only, or none at all (its `InitDone` then), and either
    // must still say the watch works again.
    let changes = touched_once_stored(
        track(changes, "pods".to_string(), progress.clone(), false),
        store.clone(),
    )
    .predicate_filter(trimmed_state, Default::default());
    (store, changes)
}

/// The watch of every object of one runtime configuration kind (`watch`: its name in health
/// messages), cached without `managedFields` ([`cache_trim::drop_ownership`]; an object that
/// does not decode reported through `invalid` and skipped): the cache, and
/// the stream of the objects whose spec changed (`spec_hash`; a metadata-only change wakes
/// nothing).
fn watch_configs<K>(
    client: &Client,
    watch: &str,
    spec_hash: fn(&K) -> Option<u64>,
    progress: &Arc<Mutex<Progress>>,
    invalid: &InvalidObjects,
) -> (
    Store<K>,
    impl futures::Stream<Item = Result<K, watcher::Error>> + Send + 'static + use<K>,
)
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let writer = reflector::store::Writer::<K>::default();
    let store = writer.as_reader();
    let changes = guarded_watcher(
        client.clone(),
        watcher::Config::default().any_semantic(),
        invalid.clone(),
        store.clone(),
    )
    .backoff(WatchBackoff::default())
    .modify(|config: &mut K| cache_trim::drop_ownership(config.meta_mut()))
    .reflect(writer);
    // Tracked on the watch's events, like the owned objects' watches.
    let changes = touched_once_stored(
        track(changes, watch.to_string(), progress.clone(), false),
        store.clone(),
    )
    .predicate_filter(spec_hash, Default::default());
    (store, changes)
}

/// A hash of a config's defaults (the predicate of [`watch_configs`]).
fn defaults_hash(defaults: &crate::v1alpha1::RuntimeDefaults) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    crate::runtime_config::spec_hash(defaults).hash(&mut hasher);
    Some(hasher.finish())
}

/// A hash of what the trimmed `pod` says (labels, deletion, status): the Pod wakes its
/// deployments only when it changes.
fn trimmed_state(pod: &Pod) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(&(
        &pod.metadata.labels,
        &pod.metadata.deletion_timestamp,
        &pod.status,
    ))
    .ok()?
    .hash(&mut hasher);
    Some(hasher.finish())
}

/// The deployments of `provider` `pod` belongs to: those of its namespace assigned to
/// `provider` whose `status.workload.podSelector` selects it. The deployment the pod's
/// `airunway.ai/deployment` label names is looked up directly; otherwise every cached
/// deployment is scanned (KAITO's and KubeRay's own Pods need not carry the label).
fn deployments_of_pod(
    deployments: &Store<HeldDeployment>,
    provider: &str,
    pod: &Pod,
) -> Vec<ObjectRef<HeldDeployment>> {
    let Some(namespace) = pod.metadata.namespace.as_deref() else {
        return Vec::new();
    };
    let selects = |held: &HeldDeployment| {
        let Ok(md) = held.decode() else {
            return false;
        };
        let status = md.status.as_ref();
        status
            .and_then(|s| s.provider.as_ref())
            .is_some_and(|p| p.name.as_deref() == Some(provider))
            && status
                .and_then(|s| s.workload.as_ref())
                .and_then(|w| w.pod_selector.as_ref())
                .is_some_and(|selector| super::pod_state::selects(selector, pod))
    };
    let named = pod
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(labels::DEPLOYMENT))
        .map(|name| ObjectRef::<HeldDeployment>::new(name).within(namespace));
    if let Some(named) = named
        && let Some(md) = deployments.get(&named)
        && selects(&md)
    {
        return vec![named];
    }
    deployments
        .state()
        .into_iter()
        .filter(|md| md.meta().namespace.as_deref() == Some(namespace) && selects(md))
        .map(|md| ObjectRef::from_obj(md.as_ref()))
        .collect()
}

/// [`runtime_configs::deployments_using`] over the deployment cache, each decoded once.
fn held_deployments_using(
    deployments: &Store<HeldDeployment>,
    provider: &str,
    config: &ConfigRef,
) -> Vec<ObjectRef<HeldDeployment>> {
    let decoded: Vec<ModelDeployment> = deployments
        .state()
        .iter()
        .filter_map(|held| held.decode().ok())
        .collect();
    runtime_configs::deployments_using(&decoded, provider, config)
        .iter()
        .map(compact_ref)
        .collect()
}

/// Why [`run`] stopped with an error: the provider could not start, or lost its leadership
/// (on SIGTERM it stops without an error).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The process could not start: the TLS crypto provider, telemetry, the Kubernetes
    /// client, the AI Runway CRDs or the signal handlers.
    #[error("starting: {0}")]
    Start(String),
    /// The metrics and health endpoint or the probe could not listen.
    #[error("serving: {0}")]
    Serve(String),
    /// Leader election could not start, or leadership was lost while running.
    #[error("{0}")]
    Leadership(LeaderError),
}

impl RunError {
    /// A short, static label for logs and metrics.
    pub fn category(&self) -> &'static str {
        match self {
            RunError::Start(_) => "start",
            RunError::Serve(_) => "serve",
            RunError::Leadership(_) => "leadership",
        }
    }
}

/// The text of a plumbing error with its causes, for a [`RunError`].
fn chain(error: &anyhow::Error) -> String {
    format!("{error:#}")
}

/// Parses the command line and runs `provider` until SIGTERM.
pub async fn run<P: Provider>(provider: P) -> Result<(), RunError> {
    run_with_args(provider, ProviderArgs::parse()).await
}

/// The upstream detection and the CRD `resourceVersion` it was computed from.
#[derive(Clone, Debug)]
struct Detected {
    detection: SchemaDetection,
    crd_version: Option<String>,
}

/// Detects the upstream schema. The CRD's metadata is read first; the whole CRD (for Dynamo
/// almost a megabyte) is read and fingerprinted again only when its `resourceVersion` changed.
async fn detect<P: Provider>(client: &Client, provider: &P, previous: &Detected) -> Detected {
    let upstream = provider.upstream();
    if !upstream.from_crd {
        return Detected {
            detection: provider.detect_schema(None),
            crd_version: None,
        };
    }
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let keep = |e: kube::Error| {
        tracing::warn!(error = %e, crd = %upstream.crd_name(), "could not read the upstream CRD; keeping the last detection");
        previous.clone()
    };
    let version = match api.get_metadata_opt(&upstream.crd_name()).await {
        Ok(meta) => meta.and_then(|m| m.metadata.resource_version),
        Err(e) => return keep(e),
    };
    if version.is_some() && version == previous.crd_version {
        return previous.clone();
    }
    match api.get_opt(&upstream.crd_name()).await {
        Ok(crd) => Detected {
            crd_version: crd
                .as_ref()
                .and_then(|c| c.metadata.resource_version.clone()),
            detection: provider.detect_schema(crd.as_ref()),
        },
        Err(e) => keep(e),
    }
}

/// Looks up the upstream operator's Deployments, for a provider that names them (`None`
/// otherwise).
async fn look_up_controller<P: Provider>(
    client: &Client,
    provider: &P,
) -> Option<ControllerHealth> {
    let controller = provider.upstream_controller()?;
    let api: Api<k8s_openapi::api::apps::v1::Deployment> = Api::all(client.clone());
    let params = kube::api::ListParams::default().labels(&controller.label_selector);
    Some(match api.list(&params).await {
        Ok(list) => registration::controller_health(&list.items),
        Err(e) => ControllerHealth::LookupFailed(e.to_string()),
    })
}

fn probe_info<P: Provider>(
    provider: &P,
    detection: &SchemaDetection,
    controller: Option<&ControllerHealth>,
) -> GetInfoResponse {
    let registration = registration::registration_spec(provider);
    let named = provider.upstream_controller();
    let (healthy, condition) = registration::upstream_readiness(
        detection,
        named.as_ref().zip(controller),
        provider.display_name(),
        &provider.upstream().kind,
    );
    let (version, hash) = match detection {
        SchemaDetection::Supported(s) => (s.api_version.clone(), s.fingerprint.clone()),
        SchemaDetection::Unsupported {
            api_version,
            fingerprint,
            ..
        } => (api_version.clone(), fingerprint.clone()),
        _ => (String::new(), String::new()),
    };
    GetInfoResponse {
        name: provider.name().to_string(),
        version: format!("{}-provider:{}", provider.name(), provider.version()),
        engines: registration
            .capabilities
            .as_ref()
            .map(|c| c.engine_capabilities())
            .unwrap_or_default()
            .into_iter()
            .map(|e| EngineCapability {
                name: e.name.as_str().to_string(),
                serving_modes: e
                    .serving_modes
                    .iter()
                    .map(|m| m.as_str().to_string())
                    .collect(),
                gpu_support: e.gpu_support,
                cpu_support: e.cpu_support,
                lora_support: e.lora_support,
                tool_calling_support: e.tool_calling_support,
            })
            .collect(),
        upstream_crd_version: version,
        upstream_schema_hash: hash,
        upstream_health: Some(UpstreamHealth {
            status: if healthy {
                upstream_health::Status::Healthy
            } else {
                upstream_health::Status::Unhealthy
            } as i32,
            reason: condition.reason,
            message: condition.message,
        }),
        documentation: registration.documentation.unwrap_or_default(),
    }
}

/// Runs `provider` with `args` (e.g. parsed as part of a provider's own command line) until
/// SIGTERM or lost leadership; installs the TLS crypto provider and telemetry first. With the
/// `render` subcommand it renders offline instead and exits the process with its code.
pub async fn run_with_args<P: Provider>(provider: P, args: ProviderArgs) -> Result<(), RunError> {
    if let Some(super::offline_render::SdkCommand::Render(render)) = &args.command {
        // Offline: no cluster, no telemetry; the exit code is the command's.
        std::process::exit(super::offline_render::run_render(
            &provider,
            render,
            &args.pod_security(),
        ));
    }
    install_crypto_provider().map_err(|e| RunError::Start(chain(&e)))?;
    let service: &'static str = Box::leak(format!("{}-provider", provider.name()).into_boxed_str());
    let _telemetry =
        init_telemetry(service, args.common.log_format).map_err(|e| RunError::Start(chain(&e)))?;
    let name = provider.name().to_string();
    let Started {
        client,
        shutdown,
        health,
    } = start(&args.common)
        .await
        .map_err(|e| RunError::Start(chain(&e)))?;
    let mut registry = Registry::with_prefix("airunway");
    let metrics = ProviderMetrics::register(&mut registry, &name);
    serve_metrics(
        args.common.metrics_bind_address,
        Arc::new(registry),
        shutdown.clone(),
    )
    .await
    .map_err(|e| RunError::Serve(chain(&e)))?;

    let upstream = provider.upstream();
    let first = detect(
        &client,
        &provider,
        &Detected {
            detection: SchemaDetection::NotEstablished {
                crd: upstream.crd_name(),
            },
            crd_version: None,
        },
    )
    .await;
    tracing::info!(detection = ?first.detection, "upstream detected");
    let first_detected = first.clone();
    let first = first.detection;
    let detection = Arc::new(RwLock::new(first.clone()));
    let first_controller = look_up_controller(&client, &provider).await;
    let controller_health = Arc::new(RwLock::new(first_controller.clone()));
    let (info_tx, info_rx) =
        watch::channel(probe_info(&provider, &first, first_controller.as_ref()));
    // Whether the controller cannot make progress (see `watch_health`): reported by the
    // heartbeat (ready: false, saying why) and the probe (NOT_SERVING).
    let (stalled_tx, stalled_rx) = watch::channel(None::<Stalled>);
    super::probe_server::serve(
        args.probe_bind_address,
        info_rx,
        stalled_rx.clone(),
        shutdown.clone(),
    )
    .await
    .map_err(|e| RunError::Serve(chain(&e)))?;
    health.set_ready(true);

    let mut leader = if args.common.leader_elect {
        let lease = args
            .leader_election_id
            .clone()
            .unwrap_or_else(|| format!("{name}-provider"));
        let mut election = LeaderElection::start(
            client.clone(),
            &args.common.lease_namespace(),
            &lease,
            &default_identity(),
            args.common.leader_election_lease_duration,
        )
        .await
        .map_err(RunError::Leadership)?;
        if !election.acquire(&shutdown).await {
            return Ok(());
        }
        Some(election)
    } else {
        None
    };

    // Register (retrying: the core's webhook may not be up yet).
    let mut spec = registration::registration_spec(&provider);
    spec.probe = Some(ProbeEndpoint {
        endpoint: Some(args.advertised_probe()),
    });
    let annotations = registration::registration_annotations(provider.display_name(), &spec);
    let mut delay = Duration::from_millis(500);
    loop {
        match registration::register(&client, &name, &spec, &annotations).await {
            Ok(_) => break,
            Err(e) => {
                tracing::warn!(error = %e, category = e.category(), "registration failed; retrying")
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tokio::time::sleep(delay) => {}
        }
        delay = (delay * 2).min(Duration::from_secs(30));
    }
    let provider = Arc::new(provider);
    let version = format!("{name}-provider:{}", provider.version());
    let reporter = Reporter {
        name: name.clone(),
        version,
        client: client.clone(),
        provider: provider.clone(),
        metrics: metrics.clone(),
    };
    if let Err(e) = reporter
        .beat(&first, first_controller.as_ref(), None, false)
        .await
    {
        tracing::warn!(error = %e, "first heartbeat failed");
    }
    tracing::info!(provider = %name, "registered");

    // Heartbeat loop: re-detect the upstream (cheaply: see `detect`), refresh the probe info,
    // report in. A changed detection re-checks every deployment (one waiting for the CRD, say).
    let (mut detection_changed, detection_changes) = mpsc::channel::<()>(1);
    let stop_heartbeat = shutdown.child_token();
    // The primary kind as watched: its detected version, followed when it changes (a CRD
    // upgraded from serving `v1alpha1` to `v1beta1`, say) without a restart.
    let version_for_watch = first
        .schema()
        .map(|s| s.version.clone())
        .unwrap_or_else(|| upstream.default_version.clone());
    let resource = ApiResource {
        group: upstream.group.clone(),
        version: version_for_watch.clone(),
        api_version: upstream.api_version(&version_for_watch),
        kind: upstream.kind.clone(),
        plural: upstream.plural.clone(),
    };
    let (watched_tx, watched_rx) = watch::channel(resource.clone());
    {
        let upstream = upstream.clone();
        let (client, provider, detection, controller_health, stop) = (
            client.clone(),
            provider.clone(),
            detection.clone(),
            controller_health.clone(),
            stop_heartbeat.clone(),
        );
        let reporter = reporter.clone();
        let interval = args.heartbeat_interval;
        let mut stalled_rx = stalled_rx.clone();
        tokio::spawn(async move {
            let mut previous = first_detected;
            let mut previous_controller = first_controller;
            loop {
                // Every interval, and at once when the progress verdict changes.
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(interval) => {}
                    changed = stalled_rx.changed() => if changed.is_err() { return },
                }
                let stalled = stalled_rx.borrow_and_update().clone();
                let current = detect(&client, provider.as_ref(), &previous).await;
                let controller = look_up_controller(&client, provider.as_ref()).await;
                if controller != previous_controller {
                    tracing::info!(controller = ?controller, "upstream operator changed");
                    if let Ok(mut c) = controller_health.write() {
                        c.clone_from(&controller);
                    }
                }
                if current.detection != previous.detection {
                    tracing::info!(detection = ?current.detection, "upstream changed");
                    if let Ok(mut d) = detection.write() {
                        *d = current.detection.clone();
                    }
                    watched_tx.send_if_modified(|watched| {
                        let Some(version) =
                            next_watch_version(&watched.version, &current.detection)
                        else {
                            return false;
                        };
                        tracing::info!(%version, "the upstream watch follows the served version");
                        watched.api_version = upstream.api_version(&version);
                        watched.version = version;
                        true
                    });
                    // Full: a re-check of everything is already queued.
                    let _ = detection_changed.try_send(());
                }
                if current.detection != previous.detection || controller != previous_controller {
                    let _ = info_tx.send(probe_info(
                        provider.as_ref(),
                        &current.detection,
                        controller.as_ref(),
                    ));
                }
                if let Err(e) = reporter
                    .beat(
                        &current.detection,
                        controller.as_ref(),
                        stalled.as_ref(),
                        false,
                    )
                    .await
                {
                    tracing::warn!(error = %e, "heartbeat failed");
                }
                previous = current;
                previous_controller = controller;
            }
        });
    }

    // What the watches and the reconciles do, for the progress verdict.
    let progress = Arc::new(Mutex::new(Progress::default()));
    // The upstream objects this provider manages: one watch, narrowed by label, cached
    // without their managedFields' field sets; its events wake the owning deployment's reconcile.
    let (live, owned_changes) = watch_owned(
        &client,
        &resource,
        watched_rx,
        field_managers::provider(&name),
        &progress,
    );
    // The secondary kinds (built-in: watched at their default version), one watch each.
    let table = KindTable::of(provider.as_ref());
    let mut caches = vec![live];
    let mut secondary_changes = Vec::new();
    for (_, kind) in table.iter().skip(1) {
        let resource = ApiResource {
            group: kind.group.clone(),
            version: kind.default_version.clone(),
            api_version: kind.api_version(&kind.default_version),
            kind: kind.kind.clone(),
            plural: kind.plural.clone(),
        };
        // Secondary kinds stay at their default version (the sender is dropped at once).
        if kind.from_crd && !crd_installed(&client, &kind.crd_name()).await {
            // Not installed: nothing to list (a write of it is refused as the CRD gone).
            tracing::warn!(crd = %kind.crd_name(), "secondary upstream kind not installed: not watched until the provider restarts");
            caches.push(empty_cache(resource));
            continue;
        }
        let (cache, changes) = watch_owned(
            &client,
            &resource,
            watch::channel(resource.clone()).1,
            field_managers::provider(&name),
            &progress,
        );
        caches.push(cache);
        secondary_changes.push((changes, resource));
    }
    // Every ModelDeployment is watched (which are this provider's is in their status); only
    // those it serves are cached, with only what the reconcile reads.
    // An object of a kind users write that does not decode is reported on it and skipped
    // (see `guarded_watch`); the rest of the kind is served.
    let invalid = InvalidObjects::new(EventPublisher::new(
        client.clone(),
        &format!("{name}-provider"),
    ));
    // Held compactly (`HeldDeployment`): a reconcile decodes the one it reads.
    let deployments_writer = reflector::store::Writer::<HeldDeployment>::default();
    let deployments = deployments_writer.as_reader();
    metrics.count_deployments_of(deployments.clone());
    let provider_name = name.clone();
    let deployment_changes = guarded_watcher::<ModelDeployment>(
        client.clone(),
        deployment_watch(),
        invalid.clone(),
        deployments.clone(),
    )
    .backoff(WatchBackoff::default())
    // Only the deployments this provider serves are held (another provider's cost nothing).
    .filter_map({
        let (held, filter_name) = (deployments.clone(), provider_name.clone());
        move |event| {
            std::future::ready(match event {
                Ok(event) => cache_trim::provider_deployment_event(event, &filter_name, |md| {
                    held.get(&compact_ref(&ObjectRef::from_obj(md))).is_some()
                })
                .map(Ok),
                Err(e) => Some(Err(e)),
            })
        }
    })
    .modify(move |md: &mut ModelDeployment| cache_trim::provider_deployment(md, &provider_name))
    .try_filter_map(|event| std::future::ready(Ok(compact_resource_event(event))))
    .reflect(deployments_writer);
    // A re-list's deployments are reconciled once the store holds them (`stored_triggers`).
    let deployment_changes = touched_once_stored(deployment_changes, deployments.clone());
    // Every deployment change queues a reconcile.
    let deployment_changes = track(
        deployment_changes,
        "modeldeployments.airunway.ai".to_string(),
        progress.clone(),
        true,
    );

    // The Pods of the deployments, when the provider names them: a change of what a Pod says
    // wakes the deployments that select it.
    let pod_watch = provider
        .pod_watch_selector()
        .map(|selector| watch_pods(&client, &selector, &progress));
    let pods = pod_watch.as_ref().map(|(store, _)| store.clone());

    // The runtime configurations: a change of one re-renders the deployments whose status
    // names it.
    let (namespaced_configs, namespaced_config_changes) = watch_configs::<RuntimeConfig>(
        &client,
        "runtimeconfigs.airunway.ai",
        |config| defaults_hash(&config.spec.defaults),
        &progress,
        &invalid,
    );
    let (cluster_configs, cluster_config_changes) = watch_configs::<ClusterRuntimeConfig>(
        &client,
        "clusterruntimeconfigs.airunway.ai",
        |config| defaults_hash(&config.spec.defaults),
        &progress,
        &invalid,
    );

    let ctx = Arc::new(Context {
        provider: provider.clone(),
        client: client.clone(),
        detection: detection.clone(),
        kinds: Kinds::new(table, caches),
        events: EventPublisher::new(client.clone(), &format!("{name}-provider")),
        finalizer_timeout: args.finalizer_timeout,
        resync: args.resync_interval,
        metrics,
        moved_since: Mutex::new(Default::default()),
        warned: Mutex::new(Default::default()),
        failures: Default::default(),
        recent: Default::default(),
        pod_security: args.pod_security(),
        stale_threshold: args.stale_status_threshold,
        pods,
        runtime_configs: ConfigStores {
            namespaced: namespaced_configs,
            cluster: cluster_configs,
        },
    });
    let stop_controller = shutdown.child_token();
    let mut controller = Controller::for_stream(deployment_changes, deployments)
        .owns_stream_with(owned_changes, resource);
    for (changes, resource) in secondary_changes {
        controller = controller.owns_stream_with(changes, resource);
    }
    if let Some((_, changes)) = pod_watch {
        let (deployments, provider) = (controller.store(), name.clone());
        controller = controller.watches_stream(changes, move |pod: Pod| {
            deployments_of_pod(&deployments, &provider, &pod)
        });
    }
    {
        let (deployments, provider) = (controller.store(), name.clone());
        controller = controller.watches_stream(namespaced_config_changes, move |config| {
            held_deployments_using(&deployments, &provider, &ConfigRef::namespaced(&config))
        });
        let (deployments, provider) = (controller.store(), name.clone());
        controller = controller.watches_stream(cluster_config_changes, move |config| {
            held_deployments_using(&deployments, &provider, &ConfigRef::cluster(&config))
        });
    }
    let controller = controller
        .reconcile_all_on(detection_changes)
        // No error reaches the triggers (see `track`); bounded all the same.
        .trigger_backoff(WatchBackoff::default())
        .with_config(ControllerConfig::default().concurrency(RECONCILE_CONCURRENCY))
        .graceful_shutdown_on(stop_controller.clone().cancelled_owned())
        .run(reconcile_held, error_policy, ctx)
        .for_each({
            let progress = progress.clone();
            move |result| {
                // A finished reconcile (successful or not) is progress; a watch error passed
                // through the queue is not (the watch's own tracker records it).
                let finished =
                    !matches!(result, Err(kube::runtime::controller::Error::QueueError(_)));
                if finished && let Ok(mut progress) = progress.lock() {
                    progress.completed();
                }
                if let Err(e) = result {
                    tracing::debug!(error = %e, "controller event");
                }
                async {}
            }
        });
    let controller_task = tokio::spawn(controller);
    tracing::info!(provider = %name, "reconciling ModelDeployments");
    // The verdict, once a second (in-memory; no API call): changes wake the heartbeat and the
    // probe.
    {
        let (progress, stop, deadline) = (
            progress.clone(),
            stop_controller.clone(),
            args.progress_deadline,
        );
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let verdict = progress
                    .lock()
                    .ok()
                    .and_then(|p| p.verdict(jiff::Timestamp::now(), deadline));
                stalled_tx.send_if_modified(|current| {
                    if *current == verdict {
                        return false;
                    }
                    match &verdict {
                        Some(stalled) => {
                            tracing::warn!(reason = stalled.reason(), message = %stalled.message(), "cannot make progress: reporting not ready")
                        }
                        None => tracing::info!("making progress again: reporting ready"),
                    }
                    current.clone_from(&verdict);
                    true
                });
            }
        });
    }

    let lost = match leader.as_mut() {
        Some(election) => tokio::select! {
            _ = shutdown.cancelled() => None,
            lost = election.lost() => Some(lost),
        },
        None => {
            shutdown.cancelled().await;
            None
        }
    };
    // Say so at once: new work must not be sent here any more.
    let last = detection
        .read()
        .map(|d| d.clone())
        .unwrap_or_else(|_| first.clone());
    let last_controller = controller_health.read().ok().and_then(|c| c.clone());
    if let Err(e) = reporter
        .beat(&last, last_controller.as_ref(), None, true)
        .await
    {
        tracing::warn!(error = %e, "could not report ready=false");
    }
    stop_heartbeat.cancel();
    stop_controller.cancel();
    let _ = controller_task.await;
    if let (Some(election), None) = (leader, lost.as_ref()) {
        election.release().await;
    }
    match lost {
        Some(error) => Err(RunError::Leadership(error)),
        None => {
            tracing::info!("stopped");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::provider::storage_gate::{StorageGate, gate};
    use serde_json::json;

    /// A change of the core's storage conditions reaches the reconcile: the watch selects
    /// every deployment, and the trimmed cache entry keeps the conditions the gate reads.
    #[test]
    fn storage_condition_changes_reach_the_gate() {
        let config = deployment_watch();
        assert!(config.label_selector.is_none() && config.field_selector.is_none());
        let with = |status: &str| -> ModelDeployment {
            serde_json::from_value(json!({
                "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
                "metadata": {"name": "m", "namespace": "ns", "generation": 1,
                    "finalizers": ["airunway.ai/p-provider"],
                    "managedFields": [{"manager": "airunway-core", "operation": "Apply",
                        "subresource": "status", "fieldsType": "FieldsV1", "fieldsV1": {}}]},
                "spec": {"model": {"id": "a/b", "storage": {"volumes": [{"name": "w", "purpose": "modelCache"}]}}},
                "status": {"provider": {"name": "p"}, "conditions": [
                    {"type": "StorageReady", "status": "True", "reason": "PVCsBound", "message": "bound",
                     "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    {"type": "ModelDownloaded", "status": status, "reason": "DownloadInProgress",
                     "message": "Model download in progress: 5% (1 files, 1 MiB)",
                     "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
            }))
            .unwrap()
        };
        let mut downloading = with("False");
        cache_trim::provider_deployment(&mut downloading, "p");
        assert_eq!(
            gate(&downloading),
            StorageGate::Wait {
                reason: "DownloadInProgress".into(),
                message: "Model download in progress: 5% (1 files, 1 MiB)".into()
            }
        );
        let mut downloaded = with("True");
        cache_trim::provider_deployment(&mut downloaded, "p");
        assert_eq!(gate(&downloaded), StorageGate::Open);
    }

    /// A Pod wakes the deployments of its provider, in its namespace, whose
    /// `status.workload.podSelector` selects it.
    #[test]
    fn a_pod_wakes_the_deployments_that_select_it() {
        let md = |namespace: &str, name: &str, provider: &str, app: &str| -> ModelDeployment {
            serde_json::from_value(json!({
                "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"model": {"id": "a/b"}},
                "status": {"provider": {"name": provider},
                    "workload": {"podSelector": {"app": app}}},
            }))
            .unwrap()
        };
        let mut writer = reflector::store::Writer::<HeldDeployment>::default();
        writer.apply_watcher_event(&watcher::Event::Init);
        for deployment in [
            md("ns", "m", "p", "m"),
            md("ns", "shares-the-label", "p", "m"),
            md("ns", "other-app", "p", "other"),
            md("ns", "other-provider", "q", "m"),
            md("elsewhere", "m", "p", "m"),
        ] {
            writer.apply_watcher_event(&watcher::Event::InitApply(
                HeldDeployment::new(&deployment).unwrap(),
            ));
        }
        writer.apply_watcher_event(&watcher::Event::InitDone);
        let store = writer.as_reader();
        let pod = |labels: serde_json::Value| -> Pod {
            serde_json::from_value(
                json!({"metadata": {"name": "m-1", "namespace": "ns", "labels": labels}}),
            )
            .unwrap()
        };
        let names = |refs: Vec<ObjectRef<HeldDeployment>>| -> Vec<(String, String)> {
            let mut names: Vec<_> = refs
                .into_iter()
                .map(|r| (r.namespace.unwrap_or_default(), r.name))
                .collect();
            names.sort();
            names
        };
        // Named by its label: looked up directly.
        assert_eq!(
            names(deployments_of_pod(
                &store,
                "p",
                &pod(json!({"app": "m", "airunway.ai/deployment": "m"}))
            )),
            [("ns".to_string(), "m".to_string())]
        );
        // Not named (KAITO's, KubeRay's pods may not be): every selecting deployment.
        assert_eq!(
            names(deployments_of_pod(&store, "p", &pod(json!({"app": "m"})))),
            [
                ("ns".to_string(), "m".to_string()),
                ("ns".to_string(), "shares-the-label".to_string())
            ]
        );
        assert!(deployments_of_pod(&store, "p", &pod(json!({"app": "x"}))).is_empty());
    }

    /// What wakes a deployment is what the trimmed Pod says, not a heartbeat time or a pod IP.
    #[test]
    fn only_a_change_of_what_the_mapping_reads_wakes_a_deployment() {
        let pod = |ip: &str, reason: &str| -> Pod {
            let mut pod: Pod = serde_json::from_value(json!({
                "metadata": {"name": "m-1", "namespace": "ns", "resourceVersion": ip},
                "status": {"podIP": ip, "conditions": [{"type": "PodScheduled", "status": "False",
                    "reason": reason, "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}))
            .unwrap();
            cache_trim::trim_pod(&mut pod);
            pod
        };
        assert_eq!(
            trimmed_state(&pod("10.0.0.1", "Unschedulable")),
            trimmed_state(&pod("10.0.0.2", "Unschedulable"))
        );
        assert_ne!(
            trimmed_state(&pod("10.0.0.1", "Unschedulable")),
            trimmed_state(&pod("10.0.0.1", "SchedulingGated"))
        );
    }

    /// The watch follows the detected version: a new schema version moves it, anything else
    /// (the same version, a CRD gone or not established, an unknown schema) leaves it.
    #[test]
    fn the_watch_follows_the_detected_version() {
        let at = |version: &str| {
            SchemaDetection::Supported(crate::provider::UpstreamSchema {
                version: version.into(),
                api_version: format!("nvidia.com/{version}"),
                fingerprint: "f".into(),
            })
        };
        assert_eq!(
            next_watch_version("v1alpha1", &at("v1beta1")).as_deref(),
            Some("v1beta1")
        );
        assert_eq!(
            next_watch_version("v1beta1", &at("v1alpha1")).as_deref(),
            Some("v1alpha1")
        );
        assert_eq!(next_watch_version("v1beta1", &at("v1beta1")), None);
        let gone = SchemaDetection::CrdNotInstalled { crd: "x".into() };
        assert_eq!(next_watch_version("v1beta1", &gone), None);
        let unknown = SchemaDetection::Unsupported {
            api_version: "nvidia.com/v2".into(),
            fingerprint: "f".into(),
            message: "m".into(),
        };
        assert_eq!(next_watch_version("v1beta1", &unknown), None);
    }

    /// A changed value replaces the stream made for the previous one; once the sender is
    /// gone, the last stream runs to its end.
    #[tokio::test]
    async fn following_switches_to_the_stream_of_the_latest_value() {
        let (tx, rx) = watch::channel("v1alpha1".to_string());
        // Each version's stream: one item at once, then nothing until dropped.
        let made = Arc::new(Mutex::new(Vec::new()));
        let record = made.clone();
        let mut stream = Box::pin(following(rx, move |version: String| {
            record.lock().unwrap().push(version.clone());
            futures::stream::once(async move { version }).chain(futures::stream::pending())
        }));
        assert_eq!(stream.next().await.as_deref(), Some("v1alpha1"));
        tx.send("v1beta1".to_string()).unwrap();
        assert_eq!(stream.next().await.as_deref(), Some("v1beta1"));
        drop(tx);
        // The v1beta1 stream runs on (pending): nothing more, and no new stream made.
        let next = tokio::time::timeout(Duration::from_millis(50), stream.next()).await;
        assert!(next.is_err(), "{next:?}");
        assert_eq!(*made.lock().unwrap(), ["v1alpha1", "v1beta1"]);
    }
}
