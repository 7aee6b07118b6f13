//! The metric table (pure, the one place): per named metric and per engine, the PromQL query
//! the autoscaler runs, and how the autoscaler reads its value.
//!
//! Series are selected by labels Prometheus has for every scraped model server:
//! - `namespace`: the deployment's namespace, as Kubernetes service discovery gives it (the
//!   Prometheus Operator's PodMonitor and ServiceMonitor add it; a plain `kubernetes_sd_configs`
//!   scrape job relabels `__meta_kubernetes_namespace` to it);
//! - `model_name`: the served model name, which vLLM and SGLang put on every metric they export
//!   (`engine.args["served-model-name"]`, else `model.servedName`, else `model.id`: what the
//!   providers pass the engine).
//!
//! Per-replica metrics are summed over the deployment's pods and read with `AverageValue`
//! semantics: the autoscaler divides the sum by the current replica count and compares the
//! average with `target` (desired = ceil(sum / target)). The endpoint picker's pool metrics are
//! already averages over the pool's pods, so they are read with `Value` semantics (desired =
//! ceil(replicas × value / target)).

use airunway_api::v1alpha1::{
    AutoscalingMetric, AutoscalingMetricType, EngineType, ModelDeploymentSpec,
};

/// How the autoscaler reads a metric's value against `target`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregation {
    /// The query sums over the replicas; the autoscaler divides by the replica count
    /// (KEDA/HPA `AverageValue`).
    PerReplica,
    /// The query is already an average over the replicas (KEDA/HPA `Value`).
    PoolAverage,
}

impl Aggregation {
    /// The KEDA trigger `metricType` and the HPA target `type`.
    pub fn target_type(self) -> &'static str {
        match self {
            Aggregation::PerReplica => "AverageValue",
            Aggregation::PoolAverage => "Value",
        }
    }
}

/// One metric as the autoscaler reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricQuery {
    /// The PromQL query.
    pub query: String,
    /// How its value is compared with `target`.
    pub aggregation: Aggregation,
}

/// What the queries select on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryScope<'a> {
    /// The deployment's namespace.
    pub namespace: &'a str,
    /// The served model name (`None`: none known, e.g. a custom image without `servedName`).
    pub model_name: Option<&'a str>,
    /// The resolved engine (`None`: not decided yet).
    pub engine: Option<EngineType>,
    /// The deployment's InferencePool (`<namespace>`, `<name>`), `None` without the gateway
    /// integration.
    pub pool: Option<(&'a str, &'a str)>,
}

/// Why a metric cannot be mapped, with the reason the condition carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable {
    /// `ScalingReady` reason.
    pub reason: &'static str,
    /// What is wrong and how to fix it.
    pub message: String,
}

use airunway_api::constants::reasons::autoscaling as reasons;

/// The series names of a named per-replica metric for `engine`: several are joined with `or`
/// (a renamed metric, so old and new versions of the server both work). `Err` says why the
/// engine has no such metric.
pub fn engine_series(
    metric: AutoscalingMetricType,
    engine: EngineType,
) -> Result<&'static [&'static str], String> {
    use AutoscalingMetricType::{KvCacheUsage, QueueDepth};
    match (engine, metric) {
        (EngineType::Vllm, QueueDepth) => Ok(&["vllm:num_requests_waiting"]),
        // Renamed in vLLM 0.10 from `vllm:gpu_cache_usage_perc`; both are queried.
        (EngineType::Vllm, KvCacheUsage) => {
            Ok(&["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"])
        }
        (EngineType::Sglang, QueueDepth) => Ok(&["sglang:num_queue_reqs"]),
        (EngineType::Sglang, KvCacheUsage) => Ok(&["sglang:token_usage"]),
        (EngineType::Llamacpp, QueueDepth | KvCacheUsage) => Err(format!(
            "{} is not available for engine llamacpp: llama.cpp's server exports its metrics (e.g. llamacpp:requests_deferred) without a model label, so they cannot be told apart per deployment; use type prometheus with a query of your own",
            metric.as_str()
        )),
        (EngineType::Trtllm, QueueDepth | KvCacheUsage) => Err(format!(
            "{} is not available for engine trtllm: TensorRT-LLM has no Prometheus metric for it that AI Runway can select per deployment; use type prometheus with a query of your own",
            metric.as_str()
        )),
        (_, other) => Err(format!("{} is not an engine metric", other.as_str())),
    }
}

/// The served model name the engine reports in `model_name`: `engine.args["served-model-name"]`,
/// else `model.servedName`, else `model.id`.
pub fn served_model_name(spec: &ModelDeploymentSpec) -> Option<&str> {
    fn non_empty(s: Option<&String>) -> Option<&str> {
        s.map(String::as_str).filter(|s| !s.trim().is_empty())
    }
    non_empty(
        spec.engine
            .as_ref()
            .and_then(|e| e.args.as_ref())
            .and_then(|a| a.get("served-model-name")),
    )
    .or_else(|| non_empty(spec.model.served_name.as_ref()))
    .or_else(|| non_empty(spec.model.id.as_ref()))
}

/// A PromQL string literal (double-quoted, `\` and `"` escaped).
pub fn promql_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The query and reading of `metric` for a deployment in `scope`.
pub fn query(
    metric: &AutoscalingMetric,
    scope: &QueryScope<'_>,
) -> Result<MetricQuery, Unavailable> {
    let unavailable = |reason, message: String| Unavailable { reason, message };
    let namespace = promql_string(scope.namespace);
    match metric.metric_type {
        AutoscalingMetricType::Prometheus => Ok(MetricQuery {
            query: metric.query.clone().unwrap_or_default(),
            aggregation: Aggregation::PerReplica,
        }),
        kind
        @ (AutoscalingMetricType::PoolQueueDepth | AutoscalingMetricType::PoolKvCacheUsage) => {
            let Some((pool_namespace, pool)) = scope.pool else {
                return Err(unavailable(
                    reasons::METRIC_UNAVAILABLE,
                    format!(
                        "{} comes from the gateway's endpoint picker, and the core's gateway integration is off (--enable-gateway=false); use queueDepth or kvCacheUsage",
                        kind.as_str()
                    ),
                ));
            };
            let series = match kind {
                AutoscalingMetricType::PoolQueueDepth => "inference_pool_average_queue_size",
                _ => "inference_pool_average_kv_cache_utilization",
            };
            Ok(MetricQuery {
                query: format!(
                    "max({series}{{namespace={},name={}}})",
                    promql_string(pool_namespace),
                    promql_string(pool)
                ),
                aggregation: Aggregation::PoolAverage,
            })
        }
        kind @ (AutoscalingMetricType::QueueDepth | AutoscalingMetricType::KvCacheUsage) => {
            let Some(engine) = scope.engine else {
                return Err(unavailable(
                    reasons::WAITING_FOR_ENGINE,
                    format!(
                        "{} depends on the engine, which is not decided yet",
                        kind.as_str()
                    ),
                ));
            };
            let series = engine_series(kind, engine)
                .map_err(|message| unavailable(reasons::METRIC_UNAVAILABLE, message))?;
            let Some(model) = scope.model_name else {
                return Err(unavailable(
                    reasons::METRIC_UNAVAILABLE,
                    format!(
                        "{} selects the model server's series by the served model name, and this deployment names none: set spec.model.servedName",
                        kind.as_str()
                    ),
                ));
            };
            let selector = format!(
                "{{namespace={namespace},model_name={}}}",
                promql_string(model)
            );
            let joined = series
                .iter()
                .map(|s| format!("{s}{selector}"))
                .collect::<Vec<_>>()
                .join(" or ");
            Ok(MetricQuery {
                query: format!("sum({joined})"),
                aggregation: Aggregation::PerReplica,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metric(kind: AutoscalingMetricType) -> AutoscalingMetric {
        AutoscalingMetric {
            metric_type: kind,
            target: "5".into(),
            ..Default::default()
        }
    }

    fn scope(engine: Option<EngineType>) -> QueryScope<'static> {
        QueryScope {
            namespace: "team-a",
            model_name: Some("Qwen/Qwen3-0.6B"),
            engine,
            pool: Some(("team-a", "qwen")),
        }
    }

    #[test]
    fn the_table() {
        use AutoscalingMetricType::*;
        let cases = [
            (
                QueueDepth,
                EngineType::Vllm,
                r#"sum(vllm:num_requests_waiting{namespace="team-a",model_name="Qwen/Qwen3-0.6B"})"#,
            ),
            (
                KvCacheUsage,
                EngineType::Vllm,
                r#"sum(vllm:kv_cache_usage_perc{namespace="team-a",model_name="Qwen/Qwen3-0.6B"} or vllm:gpu_cache_usage_perc{namespace="team-a",model_name="Qwen/Qwen3-0.6B"})"#,
            ),
            (
                QueueDepth,
                EngineType::Sglang,
                r#"sum(sglang:num_queue_reqs{namespace="team-a",model_name="Qwen/Qwen3-0.6B"})"#,
            ),
            (
                KvCacheUsage,
                EngineType::Sglang,
                r#"sum(sglang:token_usage{namespace="team-a",model_name="Qwen/Qwen3-0.6B"})"#,
            ),
            (
                PoolQueueDepth,
                EngineType::Vllm,
                r#"max(inference_pool_average_queue_size{namespace="team-a",name="qwen"})"#,
            ),
            (
                PoolKvCacheUsage,
                EngineType::Llamacpp,
                r#"max(inference_pool_average_kv_cache_utilization{namespace="team-a",name="qwen"})"#,
            ),
        ];
        for (kind, engine, want) in cases {
            let got = query(&metric(kind), &scope(Some(engine))).unwrap();
            assert_eq!(got.query, want, "{kind:?} {engine:?}");
            let pool = matches!(kind, PoolQueueDepth | PoolKvCacheUsage);
            assert_eq!(
                got.aggregation,
                if pool {
                    Aggregation::PoolAverage
                } else {
                    Aggregation::PerReplica
                }
            );
        }
    }

    #[test]
    fn engines_without_the_metric_are_refused_with_the_way_out() {
        for engine in [EngineType::Llamacpp, EngineType::Trtllm] {
            for kind in [
                AutoscalingMetricType::QueueDepth,
                AutoscalingMetricType::KvCacheUsage,
            ] {
                let e = query(&metric(kind), &scope(Some(engine))).unwrap_err();
                assert_eq!(e.reason, reasons::METRIC_UNAVAILABLE);
                assert!(
                    e.message.starts_with(&format!(
                        "{} is not available for engine {}",
                        kind.as_str(),
                        engine.as_str()
                    )),
                    "{}",
                    e.message
                );
                assert!(
                    e.message
                        .ends_with("use type prometheus with a query of your own")
                );
            }
        }
    }

    #[test]
    fn waits_for_the_engine_and_needs_a_model_name_and_a_pool() {
        let e = query(&metric(AutoscalingMetricType::QueueDepth), &scope(None)).unwrap_err();
        assert_eq!(e.reason, reasons::WAITING_FOR_ENGINE);
        let mut nameless = scope(Some(EngineType::Vllm));
        nameless.model_name = None;
        let e = query(&metric(AutoscalingMetricType::QueueDepth), &nameless).unwrap_err();
        assert!(
            e.message.ends_with("set spec.model.servedName"),
            "{}",
            e.message
        );
        let mut no_pool = scope(Some(EngineType::Vllm));
        no_pool.pool = None;
        let e = query(&metric(AutoscalingMetricType::PoolQueueDepth), &no_pool).unwrap_err();
        assert_eq!(e.reason, reasons::METRIC_UNAVAILABLE);
        assert!(e.message.contains("--enable-gateway=false"));
        // A pool metric needs no engine.
        assert!(query(&metric(AutoscalingMetricType::PoolQueueDepth), &scope(None)).is_ok());
    }

    #[test]
    fn a_query_of_your_own_is_taken_as_it_is() {
        let mine = AutoscalingMetric {
            metric_type: AutoscalingMetricType::Prometheus,
            target: "3".into(),
            query: Some("sum(rate(http_requests_total[1m]))".into()),
            ..Default::default()
        };
        let got = query(&mine, &scope(None)).unwrap();
        assert_eq!(got.query, "sum(rate(http_requests_total[1m]))");
        assert_eq!(got.aggregation.target_type(), "AverageValue");
    }

    #[test]
    fn label_values_are_escaped_and_the_served_name_is_what_the_engine_reports() {
        assert_eq!(promql_string(r#"a"b\c"#), r#""a\"b\\c""#);
        let spec: ModelDeploymentSpec = serde_json::from_value(serde_json::json!({
            "model": {"id": "org/m", "servedName": "served"},
            "engine": {"args": {"served-model-name": "from-args"}},
        }))
        .unwrap();
        assert_eq!(served_model_name(&spec), Some("from-args"));
        let spec: ModelDeploymentSpec = serde_json::from_value(
            serde_json::json!({"model": {"id": "org/m", "servedName": "served"}}),
        )
        .unwrap();
        assert_eq!(served_model_name(&spec), Some("served"));
        let spec: ModelDeploymentSpec =
            serde_json::from_value(serde_json::json!({"model": {"id": "org/m"}})).unwrap();
        assert_eq!(served_model_name(&spec), Some("org/m"));
        let spec: ModelDeploymentSpec =
            serde_json::from_value(serde_json::json!({"model": {"source": "custom"}})).unwrap();
        assert_eq!(served_model_name(&spec), None);
    }
}
