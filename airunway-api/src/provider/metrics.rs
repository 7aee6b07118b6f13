//! Provider metrics (prefix `airunway_`): `reconciliation_duration_seconds{provider}` and
//! `reconciliation_errors_total{provider, error_type}`, as in the core.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProviderLabel {
    provider: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    provider: String,
    error_type: String,
}

/// The provider's metric handles.
#[derive(Clone)]
pub struct ProviderMetrics {
    provider: String,
    duration: Family<ProviderLabel, Histogram>,
    errors: Family<ErrorLabels, Counter>,
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
        };
        registry.register(
            "reconciliation_duration_seconds",
            "Time to reconcile one ModelDeployment",
            metrics.duration.clone(),
        );
        registry.register(
            "reconciliation_errors",
            "Failed reconciles",
            metrics.errors.clone(),
        );
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
}
