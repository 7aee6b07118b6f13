//! `spec.scaling.autoscaling` and `status.autoscaling`: autoscaling a deployment on the signals
//! that matter for LLM serving, through its scale subresource (docs/autoscaling.md).

use kube::KubeSchema;
use serde::{Deserialize, Serialize};

use crate::constants::messages;

/// Whether `text` is a non-negative decimal as the CRD's rules read it (`5`, `0.8`: digits,
/// at most one point with digits on both sides, no sign or exponent; the CEL rules say the same
/// with `^[0-9]+([.][0-9]+)?$`).
pub fn is_decimal(text: &str) -> bool {
    let (whole, fraction) = match text.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (text, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(whole) && fraction.is_none_or(digits)
}

/// Whether `text` is a decimal above zero (a metric's `target`).
pub fn is_positive_decimal(text: &str) -> bool {
    is_decimal(text) && text.bytes().any(|b| (b'1'..=b'9').contains(&b))
}

/// Autoscaling of the deployment's replicas (`scaling.replicas`, the scale subresource). The
/// core creates and owns the autoscaler: a KEDA `ScaledObject` when KEDA is installed, else an
/// `autoscaling/v2` `HorizontalPodAutoscaler` on external metrics.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.minReplicas) || self.minReplicas <= self.maxReplicas").message(messages::AUTOSCALING_MIN_ABOVE_MAX).field_path(".minReplicas"))]
#[x_kube(validation = kube::core::Rule::new("self.metrics.all(m, self.metrics.exists_one(n, n.type == m.type))").message(messages::AUTOSCALING_DUPLICATE_METRIC).field_path(".metrics"))]
pub struct AutoscalingSpec {
    /// The fewest replicas (default 1). `0` scales to zero when no metric is active (KEDA only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 32))]
    pub min_replicas: Option<i32>,

    /// The most replicas.
    #[schemars(range(min = 1, max = 32))]
    pub max_replicas: i32,

    /// The signals to scale on; the autoscaler takes the largest replica count any of them asks
    /// for.
    #[schemars(length(min = 1, max = 8))]
    pub metrics: Vec<AutoscalingMetric>,

    /// Seconds without an active metric before scaling to zero (KEDA's `cooldownPeriod`,
    /// default 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 86400))]
    pub cooldown_seconds: Option<i32>,

    /// Seconds between metric reads (KEDA's `pollingInterval`, default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 3600))]
    pub polling_seconds: Option<i32>,
}

/// One signal to scale on.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new(concat!("self.target.matches('", "^[0-9]+([.][0-9]+)?$", "') && self.target.matches('[1-9]')")).message(messages::AUTOSCALING_TARGET_NOT_DECIMAL).field_path(".target"))]
#[x_kube(validation = kube::core::Rule::new(concat!("!has(self.activationTarget) || self.activationTarget.matches('", "^[0-9]+([.][0-9]+)?$", "')")).message(messages::AUTOSCALING_ACTIVATION_NOT_DECIMAL).field_path(".activationTarget"))]
#[x_kube(validation = kube::core::Rule::new("self.type != 'prometheus' || has(self.query)").message(messages::AUTOSCALING_QUERY_REQUIRED).field_path(".query"))]
#[x_kube(validation = kube::core::Rule::new("self.type == 'prometheus' || !has(self.query)").message(messages::AUTOSCALING_QUERY_NOT_ALLOWED).field_path(".query"))]
pub struct AutoscalingMetric {
    /// What to measure: a named LLM signal, mapped to what the deployment's engine exports, or
    /// `prometheus` for a query of your own.
    #[serde(rename = "type")]
    pub metric_type: AutoscalingMetricType,

    /// The value per replica to hold the metric at, a decimal number such as `5` or `0.8`.
    #[schemars(length(min = 1, max = 32))]
    pub target: String,

    /// The value above which a deployment at zero replicas is woken (KEDA's
    /// `activationThreshold`, default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 32))]
    pub activation_target: Option<String>,

    /// The PromQL query, for `type: prometheus` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4096))]
    pub query: Option<String>,
}

/// The named signals (docs/autoscaling.md has the per-engine table).
#[derive(
    Serialize, Deserialize, schemars::JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq, Hash,
)]
#[serde(rename_all = "camelCase")]
pub enum AutoscalingMetricType {
    /// Requests waiting in the model server's queue (vLLM `vllm:num_requests_waiting`).
    #[default]
    QueueDepth,
    /// KV-cache use, 0 to 1 (vLLM `vllm:kv_cache_usage_perc`).
    KvCacheUsage,
    /// The inference pool's average queue size, from the endpoint picker (gateway on).
    PoolQueueDepth,
    /// The inference pool's average KV-cache use, from the endpoint picker (gateway on).
    PoolKvCacheUsage,
    /// A PromQL query of your own (`query`).
    Prometheus,
}

impl AutoscalingMetricType {
    /// The name used in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            AutoscalingMetricType::QueueDepth => "queueDepth",
            AutoscalingMetricType::KvCacheUsage => "kvCacheUsage",
            AutoscalingMetricType::PoolQueueDepth => "poolQueueDepth",
            AutoscalingMetricType::PoolKvCacheUsage => "poolKvCacheUsage",
            AutoscalingMetricType::Prometheus => "prometheus",
        }
    }
}

/// What the autoscaler of a deployment is and what it last decided (written by the core).
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AutoscalingStatus {
    /// `ScaledObject` or `HorizontalPodAutoscaler`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Its name (in the deployment's namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The replica count the autoscaler last asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_replicas: Option<i32>,
    /// When it last changed the replica count (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scale_time: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_as_the_cel_rules_read_them() {
        for ok in ["0", "5", "0.8", "10.25", "007"] {
            assert!(is_decimal(ok), "{ok}");
        }
        for bad in [
            "", ".5", "5.", "-1", "+1", "1e3", "1.2.3", " 1", "0x1", "1,5",
        ] {
            assert!(!is_decimal(bad), "{bad}");
        }
        assert!(is_positive_decimal("0.8"));
        assert!(!is_positive_decimal("0"));
        assert!(!is_positive_decimal("0.00"));
    }
}
