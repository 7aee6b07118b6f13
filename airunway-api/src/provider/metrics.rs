//! Provider metrics (prefix `airunway_`, names in [`crate::metric_names`]):
//! `reconciliation_duration_seconds{provider}` and `reconciliation_errors_total{provider,
//! error_type}` as in the core; `upstream_applies_total{provider, kind, result}`;
//! `provider_deployments{provider, phase}` (from the deployment cache at scrape time) and
//! `provider_heartbeat_age_seconds{provider}` (since this process's last successful heartbeat
//! write).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use kube::runtime::reflector::Store;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::HeldDeployment;
use crate::metric_names as names;
use crate::v1alpha1::ModelDeployment;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProviderLabel {
    provider: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    provider: String,
    error_type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApplyLabels {
    provider: String,
    kind: String,
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
struct ProviderPhase {
    provider: String,
    phase: String,
}

/// The provider's metric handles.
#[derive(Clone)]
pub struct ProviderMetrics {
    provider: String,
    duration: Family<ProviderLabel, Histogram>,
    errors: Family<ErrorLabels, Counter>,
    applies: Family<ApplyLabels, Counter>,
    state: Arc<ProviderState>,
}

/// What the scrape-time gauges read: the deployment cache (once the watch is set up) and the
/// time of the last successful heartbeat write.
#[derive(Debug, Default)]
struct ProviderState {
    deployments: OnceLock<Store<HeldDeployment>>,
    last_heartbeat: Mutex<Option<Instant>>,
}

/// The scrape-time gauges of one provider.
#[derive(Debug)]
struct StateCollector {
    provider: String,
    state: Arc<ProviderState>,
}

impl ProviderMetrics {
    /// Registers the metrics of `provider` in `registry`.
    pub fn register(registry: &mut Registry, provider: &str) -> ProviderMetrics {
        let metrics = ProviderMetrics {
            provider: provider.to_string(),
            duration: Family::new_with_constructor(|| {
                Histogram::new([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0])
            }),
            errors: Family::default(),
            applies: Family::default(),
            state: Arc::default(),
        };
        registry.register(
            names::RECONCILIATION_DURATION_SECONDS,
            "Time to reconcile one ModelDeployment",
            metrics.duration.clone(),
        );
        registry.register(
            names::RECONCILIATION_ERRORS,
            "Failed reconciles",
            metrics.errors.clone(),
        );
        registry.register(
            names::UPSTREAM_APPLIES,
            "Server-side applies of upstream objects, by kind and result (applied, unchanged, error)",
            metrics.applies.clone(),
        );
        registry.register_collector(Box::new(StateCollector {
            provider: provider.to_string(),
            state: metrics.state.clone(),
        }));
        metrics
    }

    /// Records one reconcile's duration.
    pub fn observe(&self, elapsed: Duration) {
        self.duration
            .get_or_create(&ProviderLabel {
                provider: self.provider.clone(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// Counts an error of `category`.
    pub fn error(&self, category: &str) {
        self.errors
            .get_or_create(&ErrorLabels {
                provider: self.provider.clone(),
                error_type: category.to_string(),
            })
            .inc();
    }

    /// Counts one upstream object of `kind` applied, found unchanged or refused
    /// ([`names::apply_results`]).
    pub fn applied(&self, kind: &str, result: &str) {
        self.applies
            .get_or_create(&ApplyLabels {
                provider: self.provider.clone(),
                kind: kind.to_string(),
                result: result.to_string(),
            })
            .inc();
    }

    /// The deployment cache `provider_deployments` counts from (set once).
    pub fn count_deployments_of(&self, store: Store<HeldDeployment>) {
        let _ = self.state.deployments.set(store);
    }

    /// Records a successful heartbeat write.
    pub fn heartbeat_written(&self) {
        if let Ok(mut last) = self.state.last_heartbeat.lock() {
            *last = Some(Instant::now());
        }
    }
}

/// The deployments `provider` serves (its name in `status.provider.name`), by phase (pure).
fn served_by_phase(
    deployments: impl IntoIterator<Item = ModelDeployment>,
    provider: &str,
) -> BTreeMap<String, i64> {
    let mut counts = BTreeMap::new();
    for md in deployments {
        if md.selected_provider() != Some(provider) {
            continue;
        }
        let phase = md
            .status
            .as_ref()
            .and_then(|s| s.phase)
            .map(|p| p.as_str())
            .unwrap_or(names::NO_PHASE);
        *counts.entry(phase.to_string()).or_default() += 1;
    }
    counts
}

impl Collector for StateCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let gauge = ConstGauge::new(0i64);
        if let Some(store) = self.state.deployments.get() {
            // Decoded one at a time, at scrape time only (the cache holds them compactly).
            let all = store.state();
            let decoded = all.iter().filter_map(|held| held.decode().ok());
            let counts = served_by_phase(decoded, &self.provider);
            let mut family = encoder.encode_descriptor(
                names::PROVIDER_DEPLOYMENTS,
                "ModelDeployments this provider serves, by phase",
                None,
                gauge.metric_type(),
            )?;
            for (phase, count) in counts {
                let labels = ProviderPhase {
                    provider: self.provider.clone(),
                    phase,
                };
                ConstGauge::new(count).encode(family.encode_family(&labels)?)?;
            }
        }
        let last = self.state.last_heartbeat.lock().ok().and_then(|l| *l);
        if let Some(last) = last {
            let mut family = encoder.encode_descriptor(
                names::PROVIDER_HEARTBEAT_AGE_SECONDS,
                "Seconds since this provider's last successful heartbeat write",
                None,
                gauge.metric_type(),
            )?;
            let labels = ProviderLabel {
                provider: self.provider.clone(),
            };
            ConstGauge::new(last.elapsed().as_secs_f64()).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use kube::runtime::watcher;
    use serde_json::json;

    fn md(name: &str, provider: Option<&str>, phase: Option<&str>) -> ModelDeployment {
        let mut status = json!({});
        if let Some(provider) = provider {
            status["provider"] = json!({"name": provider});
        }
        if let Some(phase) = phase {
            status["phase"] = json!(phase);
        }
        serde_json::from_value(
            json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": "ns", "uid": name},
            "spec": {"model": {"id": "a/b"}}, "status": status}),
        )
        .unwrap()
    }

    #[test]
    fn only_the_deployments_this_provider_serves_are_counted_by_phase() {
        let all = [
            md("a", Some("kaito"), Some("Running")),
            md("b", Some("kaito"), Some("Running")),
            md("c", Some("kaito"), None),
            md("d", Some("dynamo"), Some("Failed")),
            md("e", None, Some("Pending")),
        ];
        let counts = served_by_phase(all, "kaito");
        assert_eq!(
            counts.into_iter().collect::<Vec<_>>(),
            vec![("Running".to_string(), 2), ("Unknown".to_string(), 1)]
        );
    }

    #[test]
    fn the_scrape_reports_applies_served_deployments_and_heartbeat_age() {
        let mut registry = Registry::with_prefix(names::PREFIX);
        let metrics = ProviderMetrics::register(&mut registry, "kaito");
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            !text.contains("provider_deployments"),
            "no cache yet: {text}"
        );
        assert!(!text.contains("heartbeat_age"), "no heartbeat yet: {text}");

        let (store, mut writer) = kube::runtime::reflector::store();
        for md in [
            md("a", Some("kaito"), Some("Running")),
            md("d", Some("dynamo"), Some("Failed")),
        ] {
            writer.apply_watcher_event(&watcher::Event::Apply(HeldDeployment::new(&md).unwrap()));
        }
        metrics.count_deployments_of(store);
        metrics.heartbeat_written();
        metrics.applied("Workspace", names::apply_results::APPLIED);
        metrics.applied("Workspace", names::apply_results::UNCHANGED);
        metrics.applied("Workspace", names::apply_results::UNCHANGED);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains(
                "airunway_provider_deployments{provider=\"kaito\",phase=\"Running\"} 1\n"
            ),
            "{text}"
        );
        assert!(
            !text.contains("phase=\"Failed\""),
            "another provider's: {text}"
        );
        assert!(
            text.contains("airunway_upstream_applies_total{provider=\"kaito\",kind=\"Workspace\",result=\"unchanged\"} 2\n"),
            "{text}"
        );
        let age: f64 = text
            .lines()
            .find_map(|l| {
                l.strip_prefix("airunway_provider_heartbeat_age_seconds{provider=\"kaito\"} ")
            })
            .unwrap()
            .parse()
            .unwrap();
        assert!((0.0..5.0).contains(&age), "{age}");
    }
}
