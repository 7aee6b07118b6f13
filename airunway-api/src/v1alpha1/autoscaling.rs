//! `spec.scaling.autoscaling` and `status.autoscaling`: autoscaling a deployment on the signals
//! that matter for LLM serving, through its scale subresource (docs/autoscaling.md).

use serde::{Deserialize, Serialize};

/// Autoscaling of the deployment's replicas (`scaling.replicas`, the scale subresource). The
/// core creates and owns the autoscaler: a KEDA `ScaledObject` when KEDA is installed, else an
/// `autoscaling/v2` `HorizontalPodAutoscaler` on external metrics.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
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
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
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
