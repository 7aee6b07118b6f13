//! The core's Prometheus metrics (design doc §9, prefix `airunway_`).
//!
//! | metric | labels |
//! |---|---|
//! | `airunway_modeldeployment_total` (gauge, from the watch cache at scrape time) | `namespace`, `phase` |
//! | `airunway_deployment_phase` (gauge, 1 for the current phase) | `name`, `namespace`, `phase` |
//! | `airunway_deployment_status` (gauge, deployments; the Go AI Runway's name) | `provider`, `phase` |
//! | `airunway_deployment_replicas` (gauge, summed; the Go AI Runway's name) | `provider`, `state` (`desired`, `ready`, `available`) |
//! | `airunway_reconciliation_duration_seconds` (histogram) | `provider` |
//! | `airunway_reconciliation_errors_total` (counter) | `provider`, `error_type` |
//! | `airunway_provider_selection_total` (counter) | `provider`, `reason` |
//! | `airunway_selection_rule_errors_total` (counter) | `provider` |
//! | `airunway_gateway_actions_total` (counter, gateway integration writes) | `action` (`apply`, `delete`, `allow_namespace`, `disallow_namespace`, `route_deleted_by_user`), `result` (`ok`, `error`) |
//!
//! `provider` is `none` before a provider is decided. Counters carry the OpenMetrics `_total`
//! suffix.

use std::collections::BTreeMap;

use airunway_api::v1alpha1::ModelDeployment;
use kube::runtime::reflector::Store;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Label set `{provider}`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
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
}

impl CoreMetrics {
    /// Registers the metrics in `registry`.
    pub fn register(registry: &mut Registry) -> CoreMetrics {
        let metrics = CoreMetrics {
            reconcile_duration: Family::new_with_constructor(|| {
                Histogram::new([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0])
            }),
            reconcile_errors: Family::default(),
            provider_selections: Family::default(),
            rule_errors: Family::default(),
            gateway_actions: Family::default(),
        };
        registry.register(
            "reconciliation_duration_seconds",
            "Time to reconcile one ModelDeployment",
            metrics.reconcile_duration.clone(),
        );
        registry.register(
            "reconciliation_errors",
            "Failed reconciles",
            metrics.reconcile_errors.clone(),
        );
        registry.register(
            "provider_selection",
            "Providers written to status.provider.name",
            metrics.provider_selections.clone(),
        );
        registry.register(
            "selection_rule_errors",
            "Selection rules that failed to evaluate",
            metrics.rule_errors.clone(),
        );
        registry.register(
            "gateway_actions",
            "Writes of the gateway integration (pools, endpoint pickers, routes, Gateway listeners)",
            metrics.gateway_actions.clone(),
        );
        metrics
    }
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

impl Collector for DeploymentCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let objects = self.store.state();
        let phase_of = |md: &ModelDeployment| {
            md.status
                .as_ref()
                .and_then(|s| s.phase)
                .map(|p| p.as_str())
                .unwrap_or("Unknown")
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
            "modeldeployment_total",
            "ModelDeployments by namespace and phase",
            None,
            gauge.metric_type(),
        )?;
        for ((namespace, phase), count) in totals {
            let labels = NamespacePhase { namespace, phase };
            ConstGauge::new(count).encode(family.encode_family(&labels)?)?;
        }
        let provider_of =
            |md: &ModelDeployment| md.selected_provider().unwrap_or("none").to_string();
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
            let counts = md.status.as_ref().and_then(|s| s.replicas.as_ref());
            for (state, value) in [
                ("desired", counts.and_then(|r| r.desired)),
                ("ready", counts.and_then(|r| r.ready)),
                ("available", counts.and_then(|r| r.available)),
            ] {
                *replicas
                    .entry(ProviderState {
                        provider: provider.clone(),
                        state: state.to_string(),
                    })
                    .or_default() += i64::from(value.unwrap_or(0));
            }
        }
        let mut family = encoder.encode_descriptor(
            "deployment_status",
            "ModelDeployments by provider and phase",
            None,
            gauge.metric_type(),
        )?;
        for (labels, count) in by_provider {
            ConstGauge::new(count).encode(family.encode_family(&labels)?)?;
        }
        let mut family = encoder.encode_descriptor(
            "deployment_replicas",
            "Worker replicas of all ModelDeployments by provider and state",
            None,
            gauge.metric_type(),
        )?;
        for (labels, count) in replicas {
            ConstGauge::new(count).encode(family.encode_family(&labels)?)?;
        }
        let mut family = encoder.encode_descriptor(
            "deployment_phase",
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
        Ok(())
    }
}
