//! The core's Prometheus metrics (design doc §9, prefix `airunway_`; names in
//! [`airunway_api::metric_names`], meanings and costs in docs/observability.md).
//!
//! | metric | labels |
//! |---|---|
//! | `airunway_modeldeployment_total` (gauge, from the watch cache at scrape time) | `namespace`, `phase` |
//! | `airunway_deployment_phase` (gauge, 1 for the current phase) | `name`, `namespace`, `phase` |
//! | `airunway_modeldeployment_replicas` (gauge, per deployment) | `name`, `namespace`, `state` |
//! | `airunway_deployment_status` (gauge, deployments; the Go AI Runway's name) | `provider`, `phase` |
//! | `airunway_deployment_replicas` (gauge, summed; the Go AI Runway's name) | `provider`, `state` (`desired`, `ready`, `available`) |
//! | `airunway_reconciliation_duration_seconds` (histogram) | `provider` |
//! | `airunway_reconciliation_errors_total` (counter) | `provider`, `error_type` |
//! | `airunway_provider_selection_total` (counter) | `provider`, `reason` |
//! | `airunway_selection_rule_errors_total` (counter) | `provider` |
//! | `airunway_selection_duration_seconds` (histogram, creation → provider in status) | `provider` |
//! | `airunway_deployment_phase_transitions_total` (counter, from the watch) | `provider`, `from_phase`, `to_phase` |
//! | `airunway_deployment_ready_duration_seconds` (histogram, creation → first `Running`) | `provider` |
//! | `airunway_provider_stale` (gauge 0/1, from the provider cache at scrape time) | `provider` |
//! | `airunway_provider_heartbeat_age_seconds` (gauge, from the provider cache at scrape time) | `provider` |
//! | `airunway_webhook_requests_total` (counter) | `webhook`, `operation`, `result` |
//! | `airunway_webhook_request_duration_seconds` (histogram) | `webhook`, `operation` |
//! | `airunway_gateway_actions_total` (counter, gateway integration writes) | `action` (`apply`, `delete`, `allow_namespace`, `disallow_namespace`, `route_deleted_by_user`), `result` (`ok`, `error`) |
//!
//! `provider` is `none` before a provider is decided. Counters carry the OpenMetrics `_total`
//! suffix. Gauges over deployments and providers are computed from the caches at scrape time:
//! nothing is kept per deployment between scrapes but the set of deployments seen `Running`
//! (for the ready duration's "first").

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airunway_api::metric_names::{self as names, replica_states};
use airunway_api::v1alpha1::{InferenceProviderConfig, ModelDeployment, Phase};
use jiff::Timestamp;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::selection::HealthPolicy;
use crate::selection::availability::heartbeat_staleness;

/// Buckets of reconcile durations (seconds).
const RECONCILE_BUCKETS: [f64; 10] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0];
/// Buckets of creation → provider recorded (seconds): sub-second when a provider fits at once,
/// minutes while the named provider is not registered yet.
const SELECTION_BUCKETS: [f64; 12] = [
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0,
];
/// Buckets of creation → first `Running` (seconds; the Go AI Runway's).
const READY_BUCKETS: [f64; 9] = [
    10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0,
];
/// Buckets of an admission answer (seconds): milliseconds, with the API server's 10 s default
/// timeout as the far end.
const WEBHOOK_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// Label set `{provider}`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct ProviderLabel {
    /// Provider name or `none`.
    pub provider: String,
}

/// Label set `{provider, error_type}`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// Provider name or `none`.
    pub provider: String,
    /// [`crate::error::ReconcileError::category`].
    pub error_type: String,
}

/// Label set `{provider, reason}`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SelectionLabels {
    /// Provider name.
    pub provider: String,
    /// `auto` or `manual` (named in `spec.provider.name`), as in the Go AI Runway.
    pub reason: String,
}

/// Label set `{action, result}` of gateway integration writes.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GatewayActionLabels {
    /// What was done (`apply`, `delete`, `allow_namespace`, ...).
    pub action: String,
    /// `ok` or `error`.
    pub result: String,
}

/// Label set `{provider, from_phase, to_phase}` of phase transitions.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TransitionLabels {
    /// The deployment's provider (`none` before one is recorded).
    pub provider: String,
    /// The phase before (`Unknown` for none).
    pub from_phase: String,
    /// The phase after.
    pub to_phase: String,
}

/// Label set `{webhook, operation, result}` of admission requests.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WebhookLabels {
    /// [`names::webhooks`].
    pub webhook: String,
    /// The AdmissionRequest's operation (`CREATE`, `UPDATE`, ...).
    pub operation: String,
    /// [`names::webhook_results`].
    pub result: String,
}

/// Label set `{webhook, operation}` of admission durations.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WebhookOperationLabels {
    /// [`names::webhooks`].
    pub webhook: String,
    /// The AdmissionRequest's operation.
    pub operation: String,
}

/// The core's metric handles.
#[derive(Clone)]
pub struct CoreMetrics {
    /// Reconcile duration.
    pub reconcile_duration: Family<ProviderLabel, Histogram>,
    /// Reconcile errors.
    pub reconcile_errors: Family<ErrorLabels, Counter>,
    /// Provider selections written.
    pub provider_selections: Family<SelectionLabels, Counter>,
    /// Selection rules that failed to evaluate.
    pub rule_errors: Family<ProviderLabel, Counter>,
    /// Gateway integration writes (see `crate::gateway`).
    pub gateway_actions: Family<GatewayActionLabels, Counter>,
    /// Creation → provider recorded in status.
    pub selection_duration: Family<ProviderLabel, Histogram>,
    /// Phase changes seen by the watch.
    pub phase_transitions: Family<TransitionLabels, Counter>,
    /// Creation → first `Running`.
    pub ready_duration: Family<ProviderLabel, Histogram>,
    /// Admission requests answered.
    pub webhook_requests: Family<WebhookLabels, Counter>,
    /// Admission answer time.
    pub webhook_duration: Family<WebhookOperationLabels, Histogram>,
    /// Deployments seen `Running` (by uid), for the ready duration's "first".
    seen_running: Arc<Mutex<HashSet<String>>>,
}

impl CoreMetrics {
    /// Registers the metrics in `registry`.
    pub fn register(registry: &mut Registry) -> CoreMetrics {
        let metrics = CoreMetrics {
            reconcile_duration: Family::new_with_constructor(|| Histogram::new(RECONCILE_BUCKETS)),
            reconcile_errors: Family::default(),
            provider_selections: Family::default(),
            rule_errors: Family::default(),
            gateway_actions: Family::default(),
            selection_duration: Family::new_with_constructor(|| Histogram::new(SELECTION_BUCKETS)),
            phase_transitions: Family::default(),
            ready_duration: Family::new_with_constructor(|| Histogram::new(READY_BUCKETS)),
            webhook_requests: Family::default(),
            webhook_duration: Family::new_with_constructor(|| Histogram::new(WEBHOOK_BUCKETS)),
            seen_running: Arc::default(),
        };
        registry.register(
            names::RECONCILIATION_DURATION_SECONDS,
            "Time to reconcile one ModelDeployment",
            metrics.reconcile_duration.clone(),
        );
        registry.register(
            names::RECONCILIATION_ERRORS,
            "Failed reconciles",
            metrics.reconcile_errors.clone(),
        );
        registry.register(
            names::PROVIDER_SELECTION,
            "Providers written to status.provider.name",
            metrics.provider_selections.clone(),
        );
        registry.register(
            names::SELECTION_RULE_ERRORS,
            "Selection rules that failed to evaluate",
            metrics.rule_errors.clone(),
        );
        registry.register(
            names::GATEWAY_ACTIONS,
            "Writes of the gateway integration (pools, endpoint pickers, routes, Gateway listeners)",
            metrics.gateway_actions.clone(),
        );
        registry.register(
            names::SELECTION_DURATION_SECONDS,
            "Time from a ModelDeployment's creation to its provider recorded in status",
            metrics.selection_duration.clone(),
        );
        registry.register(
            names::DEPLOYMENT_PHASE_TRANSITIONS,
            "ModelDeployment phase changes seen by the core's watch",
            metrics.phase_transitions.clone(),
        );
        registry.register(
            names::DEPLOYMENT_READY_DURATION_SECONDS,
            "Time from a ModelDeployment's creation to its first observed Running phase",
            metrics.ready_duration.clone(),
        );
        registry.register(
            names::WEBHOOK_REQUESTS,
            "Admission requests answered, by result (allowed, denied, error)",
            metrics.webhook_requests.clone(),
        );
        registry.register(
            names::WEBHOOK_REQUEST_DURATION_SECONDS,
            "Time to answer one admission request",
            metrics.webhook_duration.clone(),
        );
        metrics
    }

    /// Records a provider written to status for the first time: the time since `md`'s creation.
    pub fn selected(&self, md: &ModelDeployment, provider: &str, now: Timestamp) {
        if let Some(created) = md.metadata.creation_timestamp.as_ref() {
            self.selection_duration
                .get_or_create(&ProviderLabel {
                    provider: provider.to_string(),
                })
                .observe(seconds_between(created.0, now));
        }
    }

    /// Records one answered admission request.
    pub fn webhook_answered(
        &self,
        webhook: &str,
        operation: &str,
        result: &str,
        elapsed: Duration,
    ) {
        self.webhook_requests
            .get_or_create(&WebhookLabels {
                webhook: webhook.to_string(),
                operation: operation.to_string(),
                result: result.to_string(),
            })
            .inc();
        self.webhook_duration
            .get_or_create(&WebhookOperationLabels {
                webhook: webhook.to_string(),
                operation: operation.to_string(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// Counts the phase transition a watch event carries, compared with the cached copy in
    /// `store` (call before the event reaches the store), and the ready duration of a first
    /// `Running`. The first listing after a start records nothing (no previous phase is
    /// known); a relist records what changed while the watch was down.
    pub fn observe_watch(
        &self,
        event: &watcher::Event<ModelDeployment>,
        store: &Store<ModelDeployment>,
    ) {
        let (md, listed) = match event {
            watcher::Event::Apply(md) => (md, false),
            watcher::Event::InitApply(md) => (md, true),
            watcher::Event::Delete(md) => {
                if let (Some(uid), Ok(mut seen)) =
                    (md.metadata.uid.as_ref(), self.seen_running.lock())
                {
                    seen.remove(uid);
                }
                return;
            }
            watcher::Event::Init | watcher::Event::InitDone => return,
        };
        let old = store.get(&ObjectRef::from_obj(md));
        let Some(uid) = md.metadata.uid.as_deref() else {
            return;
        };
        let first_running = {
            let Ok(mut seen) = self.seen_running.lock() else {
                return;
            };
            phase_of(md) == Some(Phase::Running) && seen.insert(uid.to_string())
        };
        let Some(change) = transition(old.as_deref(), md, listed) else {
            return;
        };
        self.phase_transitions
            .get_or_create(&TransitionLabels {
                provider: change.provider.clone(),
                from_phase: change.from.to_string(),
                to_phase: change.to.to_string(),
            })
            .inc();
        if first_running
            && change.to == Phase::Running.as_str()
            && let Some(created) = md.metadata.creation_timestamp.as_ref()
        {
            self.ready_duration
                .get_or_create(&ProviderLabel {
                    provider: change.provider,
                })
                .observe(seconds_between(created.0, Timestamp::now()));
        }
    }
}

/// A phase change between two copies of one deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    /// The provider of the newer copy (`none` before one is recorded).
    pub provider: String,
    /// The phase before (`Unknown` for none).
    pub from: &'static str,
    /// The phase after.
    pub to: &'static str,
}

/// The phase change from `old` (the cached copy) to `new` (pure). A deployment not cached
/// before is a change only when it is new (not `listed` after a start), and only once it has a
/// phase.
pub fn transition(
    old: Option<&ModelDeployment>,
    new: &ModelDeployment,
    listed: bool,
) -> Option<Transition> {
    if old.is_none() && listed {
        return None;
    }
    let to = phase_of(new)?;
    let from = old.and_then(phase_of);
    if from == Some(to) {
        return None;
    }
    Some(Transition {
        provider: new
            .selected_provider()
            .unwrap_or(names::NO_PROVIDER)
            .to_string(),
        from: from.map(Phase::as_str).unwrap_or(names::NO_PHASE),
        to: to.as_str(),
    })
}

fn phase_of(md: &ModelDeployment) -> Option<Phase> {
    md.status.as_ref().and_then(|s| s.phase)
}

fn seconds_between(from: Timestamp, to: Timestamp) -> f64 {
    to.duration_since(from).as_secs_f64().max(0.0)
}

/// Reports deployments by namespace and phase from the watch cache at scrape time (no stale
/// series for deleted objects).
#[derive(Debug)]
pub struct DeploymentCollector {
    store: Store<ModelDeployment>,
}

impl DeploymentCollector {
    /// A collector over `store`.
    pub fn new(store: Store<ModelDeployment>) -> Self {
        DeploymentCollector { store }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NamespacePhase {
    namespace: String,
    phase: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
struct ProviderPhase {
    provider: String,
    phase: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
struct ProviderState {
    provider: String,
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DeploymentPhase {
    name: String,
    namespace: String,
    phase: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DeploymentState {
    name: String,
    namespace: String,
    state: String,
}

impl Collector for DeploymentCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let objects = self.store.state();
        let phase_of = |md: &ModelDeployment| {
            md.status
                .as_ref()
                .and_then(|s| s.phase)
                .map(|p| p.as_str())
                .unwrap_or(names::NO_PHASE)
                .to_string()
        };
        let mut totals: BTreeMap<(String, String), i64> = BTreeMap::new();
        for md in &objects {
            *totals
                .entry((
                    md.metadata.namespace.clone().unwrap_or_default(),
                    phase_of(md),
                ))
                .or_default() += 1;
        }
        let gauge = ConstGauge::new(0i64);
        let mut family = encoder.encode_descriptor(
            names::MODELDEPLOYMENT_TOTAL,
            "ModelDeployments by namespace and phase",
            None,
            gauge.metric_type(),
        )?;
        for ((namespace, phase), count) in totals {
            let labels = NamespacePhase { namespace, phase };
            ConstGauge::new(count).encode(family.encode_family(&labels)?)?;
        }
        let provider_of = |md: &ModelDeployment| {
            md.selected_provider()
                .unwrap_or(names::NO_PROVIDER)
                .to_string()
        };
        let mut by_provider: BTreeMap<ProviderPhase, i64> = BTreeMap::new();
        let mut replicas: BTreeMap<ProviderState, i64> = BTreeMap::new();
        for md in &objects {
            let provider = provider_of(md);
            *by_provider
                .entry(ProviderPhase {
                    provider: provider.clone(),
                    phase: phase_of(md),
                })
                .or_default() += 1;
            for (state, value) in replica_counts(md) {
                *replicas
                    .entry(ProviderState {
                        provider: provider.clone(),
                        state: state.to_string(),
                    })
                    .or_default() += i64::from(value.unwrap_or(0));
            }
        }
        let mut family = encoder.encode_descriptor(
            names::DEPLOYMENT_STATUS,
            "ModelDeployments by provider and phase",
            None,
            gauge.metric_type(),
        )?;
        for (labels, count) in by_provider {
            ConstGauge::new(count).encode(family.encode_family(&labels)?)?;
        }
        let mut family = encoder.encode_descriptor(
            names::DEPLOYMENT_REPLICAS,
            "Worker replicas of all ModelDeployments by provider and state",
            None,
            gauge.metric_type(),
        )?;
        for (labels, count) in replicas {
            ConstGauge::new(count).encode(family.encode_family(&labels)?)?;
        }
        let mut family = encoder.encode_descriptor(
            names::DEPLOYMENT_PHASE,
            "1 for the current phase of each ModelDeployment",
            None,
            gauge.metric_type(),
        )?;
        for md in &objects {
            let labels = DeploymentPhase {
                name: md.metadata.name.clone().unwrap_or_default(),
                namespace: md.metadata.namespace.clone().unwrap_or_default(),
                phase: phase_of(md),
            };
            ConstGauge::new(1i64).encode(family.encode_family(&labels)?)?;
        }
        let mut family = encoder.encode_descriptor(
            names::MODELDEPLOYMENT_REPLICAS,
            "Worker replicas of each ModelDeployment by state (desired, ready, available)",
            None,
            gauge.metric_type(),
        )?;
        for md in &objects {
            // A deployment whose provider reported no replicas yet has no series.
            for (state, value) in replica_counts(md) {
                let Some(value) = value else { continue };
                let labels = DeploymentState {
                    name: md.metadata.name.clone().unwrap_or_default(),
                    namespace: md.metadata.namespace.clone().unwrap_or_default(),
                    state: state.to_string(),
                };
                ConstGauge::new(i64::from(value)).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// `status.replicas` by [`replica_states`].
fn replica_counts(md: &ModelDeployment) -> [(&'static str, Option<i32>); 3] {
    let counts = md.status.as_ref().and_then(|s| s.replicas.as_ref());
    [
        (replica_states::DESIRED, counts.and_then(|r| r.desired)),
        (replica_states::READY, counts.and_then(|r| r.ready)),
        (replica_states::AVAILABLE, counts.and_then(|r| r.available)),
    ]
}

/// Reports each registered provider's heartbeat age and the core's staleness verdict from the
/// provider cache at scrape time (the verdict selection and the health monitor judge by).
#[derive(Debug)]
pub struct ProviderHealthCollector {
    store: Store<InferenceProviderConfig>,
    policy: HealthPolicy,
}

impl ProviderHealthCollector {
    /// A collector over `store`, judged by `policy`.
    pub fn new(store: Store<InferenceProviderConfig>, policy: HealthPolicy) -> Self {
        ProviderHealthCollector { store, policy }
    }
}

/// One provider's health figures (pure): (stale 0/1, heartbeat age in seconds when it has one).
pub fn provider_health(
    ipc: &InferenceProviderConfig,
    now: Timestamp,
    policy: HealthPolicy,
) -> (i64, Option<f64>) {
    let stale = i64::from(heartbeat_staleness(ipc, now, policy).is_some());
    let age = ipc
        .status
        .as_ref()
        .and_then(|s| s.last_heartbeat.as_ref())
        .map(|beat| seconds_between(beat.0, now));
    (stale, age)
}

impl Collector for ProviderHealthCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let now = Timestamp::now();
        let mut figures: Vec<(ProviderLabel, (i64, Option<f64>))> = self
            .store
            .state()
            .iter()
            .filter_map(|ipc| {
                let provider = ipc.metadata.name.clone()?;
                Some((
                    ProviderLabel { provider },
                    provider_health(ipc, now, self.policy),
                ))
            })
            .collect();
        figures.sort_by(|a, b| a.0.cmp(&b.0));
        let gauge = ConstGauge::new(0i64);
        let mut family = encoder.encode_descriptor(
            names::PROVIDER_STALE,
            "1 when the core judges the provider's heartbeat stale",
            None,
            gauge.metric_type(),
        )?;
        for (labels, (stale, _)) in &figures {
            ConstGauge::new(*stale).encode(family.encode_family(labels)?)?;
        }
        let mut family = encoder.encode_descriptor(
            names::PROVIDER_HEARTBEAT_AGE_SECONDS,
            "Seconds since the provider's last heartbeat recorded in its InferenceProviderConfig",
            None,
            gauge.metric_type(),
        )?;
        for (labels, (_, age)) in &figures {
            if let Some(age) = age {
                ConstGauge::new(*age).encode(family.encode_family(labels)?)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn md(phase: Option<&str>, provider: Option<&str>) -> ModelDeployment {
        let mut status = json!({});
        if let Some(phase) = phase {
            status["phase"] = json!(phase);
        }
        if let Some(provider) = provider {
            status["provider"] = json!({"name": provider});
            status["replicas"] = json!({"desired": 2, "ready": 1});
        }
        serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns", "uid": "u1", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"model": {"id": "a/b"}}, "status": status}))
        .unwrap()
    }

    #[test]
    fn a_transition_is_a_phase_change_against_the_cached_copy() {
        let pending = md(Some("Pending"), None);
        let running = md(Some("Running"), Some("kaito"));
        assert_eq!(
            transition(Some(&pending), &running, false),
            Some(Transition {
                provider: "kaito".into(),
                from: "Pending",
                to: "Running"
            })
        );
        // The same phase again (a status write of replicas, say) is no transition.
        assert_eq!(transition(Some(&running), &running, false), None);
        // The first phase of a new deployment is one, from `Unknown`.
        assert_eq!(
            transition(Some(&md(None, None)), &pending, false),
            Some(Transition {
                provider: "none".into(),
                from: "Unknown",
                to: "Pending"
            })
        );
        assert_eq!(
            transition(None, &pending, false).map(|t| t.from),
            Some("Unknown")
        );
        // The listing after a start knows no previous phase; no phase yet is no transition.
        assert_eq!(transition(None, &running, true), None);
        assert_eq!(transition(None, &md(None, None), false), None);
        // A relist of a deployment whose phase changed while the watch was down is one.
        assert!(transition(Some(&pending), &running, true).is_some());
    }

    #[test]
    fn the_watch_counts_transitions_and_the_first_running_only() {
        let mut registry = Registry::with_prefix(names::PREFIX);
        let metrics = CoreMetrics::register(&mut registry);
        let (store, mut writer) = kube::runtime::reflector::store();
        let mut see = |event: watcher::Event<ModelDeployment>| {
            metrics.observe_watch(&event, &store);
            writer.apply_watcher_event(&event);
        };
        see(watcher::Event::Apply(md(Some("Pending"), None)));
        see(watcher::Event::Apply(md(Some("Running"), Some("kaito"))));
        see(watcher::Event::Apply(md(Some("Deploying"), Some("kaito"))));
        see(watcher::Event::Apply(md(Some("Running"), Some("kaito"))));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in [
            "airunway_deployment_phase_transitions_total{provider=\"none\",from_phase=\"Unknown\",to_phase=\"Pending\"} 1\n",
            "airunway_deployment_phase_transitions_total{provider=\"kaito\",from_phase=\"Pending\",to_phase=\"Running\"} 1\n",
            "airunway_deployment_phase_transitions_total{provider=\"kaito\",from_phase=\"Running\",to_phase=\"Deploying\"} 1\n",
            "airunway_deployment_phase_transitions_total{provider=\"kaito\",from_phase=\"Deploying\",to_phase=\"Running\"} 1\n",
            // Running twice, ready once: the first time only.
            "airunway_deployment_ready_duration_seconds_count{provider=\"kaito\"} 1\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
    }

    #[test]
    fn the_collector_reports_each_deployments_phase_and_replicas() {
        let (store, mut writer) = kube::runtime::reflector::store();
        writer.apply_watcher_event(&watcher::Event::Apply(md(Some("Running"), Some("kaito"))));
        let mut registry = Registry::with_prefix(names::PREFIX);
        registry.register_collector(Box::new(DeploymentCollector::new(store)));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in [
            "airunway_modeldeployment_total{namespace=\"ns\",phase=\"Running\"} 1\n",
            "airunway_deployment_phase{name=\"m\",namespace=\"ns\",phase=\"Running\"} 1\n",
            "airunway_modeldeployment_replicas{name=\"m\",namespace=\"ns\",state=\"desired\"} 2\n",
            "airunway_modeldeployment_replicas{name=\"m\",namespace=\"ns\",state=\"ready\"} 1\n",
            "airunway_deployment_replicas{provider=\"kaito\",state=\"available\"} 0\n",
            "airunway_deployment_status{provider=\"kaito\",phase=\"Running\"} 1\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        // Not reported by the provider: no per-deployment series.
        assert!(!text.contains("state=\"available\"} 0\nairunway_modeldeployment_replicas"));
        assert!(
            !text.contains("name=\"m\",namespace=\"ns\",state=\"available\""),
            "{text}"
        );
    }

    #[test]
    fn a_providers_staleness_and_heartbeat_age_come_from_its_registration() {
        let ipc = |status: serde_json::Value| -> InferenceProviderConfig {
            serde_json::from_value(
                json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig",
                "metadata": {"name": "kaito"}, "spec": {}, "status": status}),
            )
            .unwrap()
        };
        let policy = HealthPolicy {
            stale_after: Duration::from_secs(90),
        };
        let now: Timestamp = "2026-01-01T00:10:00Z".parse().unwrap();
        assert_eq!(
            provider_health(
                &ipc(json!({"ready": true, "lastHeartbeat": "2026-01-01T00:09:30Z"})),
                now,
                policy
            ),
            (0, Some(30.0))
        );
        assert_eq!(
            provider_health(
                &ipc(json!({"ready": true, "lastHeartbeat": "2026-01-01T00:05:00Z"})),
                now,
                policy
            ),
            (1, Some(300.0))
        );
        assert_eq!(
            provider_health(&ipc(json!({"ready": false})), now, policy),
            (1, None)
        );
    }
}
