//! `spec.scaling.autoscaling` (docs/autoscaling.md): the rules the CRD also says in CEL (same
//! messages, same fields), and those it cannot: a pool metric with the gateway turned off, a
//! named metric the explicitly chosen engine does not export.

use airunway_api::constants::messages;
use airunway_api::v1alpha1::{
    AutoscalingMetricType, ModelDeploymentSpec, is_decimal, is_positive_decimal,
};

use super::FieldError;
use crate::autoscaling::metrics::engine_series;

const FIELD: &str = "spec.scaling.autoscaling";

/// Appends the errors of `spec.scaling.autoscaling`.
pub(super) fn validate_autoscaling(spec: &ModelDeploymentSpec, errors: &mut Vec<FieldError>) {
    let Some(autoscaling) = spec.scaling.as_ref().and_then(|s| s.autoscaling.as_ref()) else {
        return;
    };
    if autoscaling
        .min_replicas
        .is_some_and(|min| min > autoscaling.max_replicas)
    {
        errors.push(FieldError::new(
            format!("{FIELD}.minReplicas"),
            messages::AUTOSCALING_MIN_ABOVE_MAX,
        ));
    }
    let gateway_off = spec.gateway.as_ref().and_then(|g| g.enabled) == Some(false);
    let engine = spec.explicit_engine();
    let mut seen: Vec<AutoscalingMetricType> = Vec::new();
    for (index, metric) in autoscaling.metrics.iter().enumerate() {
        let at = |field: &str| format!("{FIELD}.metrics[{index}]{field}");
        let kind = metric.metric_type;
        if seen.contains(&kind) {
            errors.push(FieldError::new(
                format!("{FIELD}.metrics"),
                messages::AUTOSCALING_DUPLICATE_METRIC,
            ));
        }
        seen.push(kind);
        if !is_positive_decimal(&metric.target) {
            errors.push(FieldError::new(
                at(".target"),
                messages::AUTOSCALING_TARGET_NOT_DECIMAL,
            ));
        }
        if metric
            .activation_target
            .as_deref()
            .is_some_and(|a| !is_decimal(a))
        {
            errors.push(FieldError::new(
                at(".activationTarget"),
                messages::AUTOSCALING_ACTIVATION_NOT_DECIMAL,
            ));
        }
        match (kind, metric.query.is_some()) {
            (AutoscalingMetricType::Prometheus, false) => errors.push(FieldError::new(
                at(".query"),
                messages::AUTOSCALING_QUERY_REQUIRED,
            )),
            (AutoscalingMetricType::Prometheus, true) => {}
            (_, true) => errors.push(FieldError::new(
                at(".query"),
                messages::AUTOSCALING_QUERY_NOT_ALLOWED,
            )),
            _ => {}
        }
        match kind {
            AutoscalingMetricType::PoolQueueDepth | AutoscalingMetricType::PoolKvCacheUsage
                if gateway_off =>
            {
                errors.push(FieldError::new(
                    at(".type"),
                    messages::AUTOSCALING_POOL_NEEDS_GATEWAY,
                ));
            }
            AutoscalingMetricType::QueueDepth | AutoscalingMetricType::KvCacheUsage => {
                if let Some(Err(message)) = engine.map(|e| engine_series(kind, e)) {
                    errors.push(FieldError::new(at(".type"), message));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{errors, one};
    use super::*;
    use serde_json::{Value, json};

    fn with(autoscaling: Value) -> Vec<FieldError> {
        errors(
            json!({"model": {"id": "a/b"}, "resources": {"gpu": {"count": 1}},
                      "scaling": {"autoscaling": autoscaling}}),
        )
    }

    fn metric(m: Value) -> Value {
        json!({"maxReplicas": 4, "metrics": [m]})
    }

    #[test]
    fn valid_autoscaling_passes() {
        for a in [
            json!({"minReplicas": 0, "maxReplicas": 4, "metrics": [
                {"type": "queueDepth", "target": "5", "activationTarget": "0"},
                {"type": "kvCacheUsage", "target": "0.8"},
                {"type": "poolQueueDepth", "target": "3"},
                {"type": "prometheus", "target": "10", "query": "sum(x)"}]}),
            json!({"minReplicas": 4, "maxReplicas": 4, "metrics": [{"type": "queueDepth", "target": "1"}]}),
        ] {
            assert_eq!(with(a.clone()), vec![], "{a}");
        }
    }

    #[test]
    fn min_above_max() {
        assert_eq!(
            with(
                json!({"minReplicas": 5, "maxReplicas": 4, "metrics": [{"type": "queueDepth", "target": "1"}]})
            ),
            one(
                "spec.scaling.autoscaling.minReplicas",
                messages::AUTOSCALING_MIN_ABOVE_MAX
            )
        );
    }

    #[test]
    fn targets_are_decimals() {
        for bad in ["0", "-1", "1e3", "5m", ".5", "0.0"] {
            assert_eq!(
                with(metric(json!({"type": "queueDepth", "target": bad}))),
                one(
                    "spec.scaling.autoscaling.metrics[0].target",
                    messages::AUTOSCALING_TARGET_NOT_DECIMAL
                ),
                "{bad}"
            );
        }
        assert_eq!(
            with(metric(
                json!({"type": "queueDepth", "target": "1", "activationTarget": "-2"})
            )),
            one(
                "spec.scaling.autoscaling.metrics[0].activationTarget",
                messages::AUTOSCALING_ACTIVATION_NOT_DECIMAL
            )
        );
    }

    #[test]
    fn query_only_and_always_for_prometheus() {
        assert_eq!(
            with(metric(json!({"type": "prometheus", "target": "1"}))),
            one(
                "spec.scaling.autoscaling.metrics[0].query",
                messages::AUTOSCALING_QUERY_REQUIRED
            )
        );
        assert_eq!(
            with(metric(
                json!({"type": "kvCacheUsage", "target": "1", "query": "up"})
            )),
            one(
                "spec.scaling.autoscaling.metrics[0].query",
                messages::AUTOSCALING_QUERY_NOT_ALLOWED
            )
        );
    }

    #[test]
    fn metric_types_are_unique() {
        assert_eq!(
            with(json!({"maxReplicas": 2, "metrics": [
                {"type": "queueDepth", "target": "1"}, {"type": "queueDepth", "target": "2"}]})),
            one(
                "spec.scaling.autoscaling.metrics",
                messages::AUTOSCALING_DUPLICATE_METRIC
            )
        );
    }

    #[test]
    fn pool_metrics_need_the_gateway() {
        let found = errors(
            json!({"model": {"id": "a/b"}, "gateway": {"enabled": false},
            "scaling": {"autoscaling": metric(json!({"type": "poolKvCacheUsage", "target": "0.7"}))}}),
        );
        assert_eq!(
            found,
            one(
                "spec.scaling.autoscaling.metrics[0].type",
                messages::AUTOSCALING_POOL_NEEDS_GATEWAY
            )
        );
    }

    #[test]
    fn a_named_metric_the_chosen_engine_lacks() {
        let found = errors(
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"},
            "scaling": {"autoscaling": metric(json!({"type": "kvCacheUsage", "target": "0.7"}))}}),
        );
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].field, "spec.scaling.autoscaling.metrics[0].type");
        assert!(
            found[0]
                .message
                .starts_with("kvCacheUsage is not available for engine llamacpp"),
            "{}",
            found[0].message
        );
        // Pool metrics and queries of your own work with any engine.
        let found = errors(
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"},
            "scaling": {"autoscaling": {"maxReplicas": 2, "metrics": [
                {"type": "poolQueueDepth", "target": "2"},
                {"type": "prometheus", "target": "2", "query": "sum(llamacpp:requests_deferred)"}]}}}),
        );
        assert_eq!(found, vec![]);
    }
}
