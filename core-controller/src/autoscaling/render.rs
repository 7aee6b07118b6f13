//! The autoscaler objects (pure): a KEDA `ScaledObject` or an `autoscaling/v2`
//! `HorizontalPodAutoscaler`, named after the deployment, owned by it (controller owner
//! reference), targeting its scale subresource.

use std::collections::BTreeMap;

use airunway_api::constants::{API_VERSION, annotations, labels};
use airunway_api::v1alpha1::{AutoscalingSpec, ModelDeployment};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::metrics::MetricQuery;
use super::{
    DEFAULT_COOLDOWN_SECONDS, DEFAULT_POLLING_SECONDS, HPA_API_VERSION, HPA_KIND, KEDA_API_VERSION,
    SCALED_OBJECT_KIND,
};

/// One metric, mapped: its type name, query and targets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderedMetric {
    /// The metric's `type` (`queueDepth`, ..., `prometheus`).
    pub name: &'static str,
    /// The query and how it is read.
    pub query: MetricQuery,
    /// `target`.
    pub target: String,
    /// `activationTarget`.
    pub activation: Option<String>,
}

/// The owner reference of everything the core creates for `md`.
fn owner(md: &ModelDeployment) -> Value {
    json!([{
        "apiVersion": API_VERSION,
        "kind": "ModelDeployment",
        "name": md.metadata.name,
        "uid": md.metadata.uid,
        "controller": true,
        "blockOwnerDeletion": true,
    }])
}

fn scale_target(md: &ModelDeployment) -> Value {
    json!({"apiVersion": API_VERSION, "kind": "ModelDeployment", "name": md.metadata.name})
}

/// The first 16 hex digits of the SHA-256 of `value`'s JSON (keys sorted by `serde_json`).
pub fn inputs_hash(value: &Value) -> String {
    let digest = Sha256::digest(value.to_string().as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// `metadata` with the labels, the owner and the hash of `spec` (and `extra` annotations).
fn metadata(md: &ModelDeployment, spec: &Value, extra: BTreeMap<&str, String>) -> Value {
    let mut annotations_map: BTreeMap<&str, String> = extra;
    annotations_map.insert(annotations::AUTOSCALING_INPUTS_HASH, inputs_hash(spec));
    json!({
        "name": md.metadata.name,
        "namespace": md.metadata.namespace,
        "labels": {
            labels::MANAGED_BY: labels::MANAGED_BY_VALUE,
            labels::MODEL_DEPLOYMENT: md.metadata.name,
        },
        "annotations": annotations_map,
        "ownerReferences": owner(md),
    })
}

/// `object` with the labels a runtime configuration propagates (its own labels win); the
/// inputs hash then covers them too, so a changed label is applied again. Unchanged without
/// labels.
pub fn with_labels(mut object: Value, propagated: &BTreeMap<String, String>) -> Value {
    if propagated.is_empty() {
        return object;
    }
    let hash = inputs_hash(&json!({"spec": object["spec"], "labels": propagated}));
    crate::runtime_config::stamp(&mut object["metadata"], propagated);
    object["metadata"]["annotations"][annotations::AUTOSCALING_INPUTS_HASH] = json!(hash);
    object
}

/// The KEDA `ScaledObject` (keda.sh/v1alpha1): one `prometheus` trigger per metric, reading
/// `server_address`.
pub fn scaled_object(
    md: &ModelDeployment,
    autoscaling: &AutoscalingSpec,
    metrics: &[RenderedMetric],
    server_address: &str,
) -> Value {
    let triggers: Vec<Value> = metrics
        .iter()
        .map(|m| {
            let mut metadata = json!({
                "serverAddress": server_address,
                "query": m.query.query,
                "threshold": m.target,
            });
            if let Some(activation) = &m.activation {
                metadata["activationThreshold"] = json!(activation);
            }
            json!({
                "type": "prometheus",
                "name": m.name.to_ascii_lowercase(),
                "metricType": m.query.aggregation.target_type(),
                "metadata": metadata,
            })
        })
        .collect();
    let spec = json!({
        "scaleTargetRef": scale_target(md),
        "minReplicaCount": autoscaling.min_replicas.unwrap_or(1),
        "maxReplicaCount": autoscaling.max_replicas,
        "pollingInterval": autoscaling.polling_seconds.unwrap_or(DEFAULT_POLLING_SECONDS),
        "cooldownPeriod": autoscaling.cooldown_seconds.unwrap_or(DEFAULT_COOLDOWN_SECONDS),
        "triggers": triggers,
    });
    json!({
        "apiVersion": KEDA_API_VERSION,
        "kind": SCALED_OBJECT_KIND,
        "metadata": metadata(md, &spec, BTreeMap::new()),
        "spec": spec,
    })
}

/// The External metric name the `HorizontalPodAutoscaler` asks the metrics adapter for:
/// `airunway-<type>` in kebab case (`airunway-queue-depth`, ..., `airunway-prometheus`).
pub fn external_metric_name(metric_type: &str) -> String {
    let mut name = String::from("airunway-");
    for c in metric_type.chars() {
        if c.is_ascii_uppercase() {
            name.push('-');
            name.push(c.to_ascii_lowercase());
        } else {
            name.push(c);
        }
    }
    name
}

/// The `HorizontalPodAutoscaler` (autoscaling/v2) on External metrics: each metric by its
/// [`external_metric_name`] with the selector `airunway.ai/model-deployment: <name>` (the
/// adapter answers in the deployment's namespace); the queries the adapter must run are in the
/// annotation [`annotations::AUTOSCALING_QUERIES`]. `minReplicas` is at least 1: the
/// HorizontalPodAutoscaler scales to zero only behind the alpha `HPAScaleToZero` gate.
pub fn horizontal_pod_autoscaler(
    md: &ModelDeployment,
    autoscaling: &AutoscalingSpec,
    metrics: &[RenderedMetric],
) -> Value {
    let mut queries = BTreeMap::new();
    let specs: Vec<Value> = metrics
        .iter()
        .map(|m| {
            let name = external_metric_name(m.name);
            queries.insert(name.clone(), m.query.query.clone());
            let kind = m.query.aggregation.target_type();
            let target = match kind {
                "Value" => json!({"type": kind, "value": m.target}),
                _ => json!({"type": kind, "averageValue": m.target}),
            };
            json!({
                "type": "External",
                "external": {
                    "metric": {
                        "name": name,
                        "selector": {"matchLabels": {labels::MODEL_DEPLOYMENT: md.metadata.name}},
                    },
                    "target": target,
                },
            })
        })
        .collect();
    let spec = json!({
        "scaleTargetRef": scale_target(md),
        "minReplicas": autoscaling.min_replicas.unwrap_or(1).max(1),
        "maxReplicas": autoscaling.max_replicas,
        "metrics": specs,
    });
    let queries = serde_json::to_string(&queries).unwrap_or_default();
    let extra = BTreeMap::from([(annotations::AUTOSCALING_QUERIES, queries)]);
    json!({
        "apiVersion": HPA_API_VERSION,
        "kind": HPA_KIND,
        "metadata": metadata(md, &spec, extra),
        "spec": spec,
    })
}

#[cfg(test)]
mod tests {
    use super::super::metrics::Aggregation;
    use super::*;

    fn md() -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": API_VERSION, "kind": "ModelDeployment",
            "metadata": {"name": "qwen", "namespace": "team-a", "uid": "u-1"},
            "spec": {"model": {"id": "Qwen/Qwen3-0.6B"}},
        }))
        .unwrap()
    }

    fn autoscaling(min: Option<i32>) -> AutoscalingSpec {
        AutoscalingSpec {
            min_replicas: min,
            max_replicas: 4,
            ..Default::default()
        }
    }

    fn metrics() -> Vec<RenderedMetric> {
        vec![
            RenderedMetric {
                name: "queueDepth",
                query: MetricQuery {
                    query: "sum(q)".into(),
                    aggregation: Aggregation::PerReplica,
                },
                target: "5".into(),
                activation: Some("1".into()),
            },
            RenderedMetric {
                name: "poolKvCacheUsage",
                query: MetricQuery {
                    query: "max(p)".into(),
                    aggregation: Aggregation::PoolAverage,
                },
                target: "0.8".into(),
                activation: None,
            },
        ]
    }

    #[test]
    fn scaled_object_shape() {
        let object = scaled_object(&md(), &autoscaling(Some(0)), &metrics(), "http://prom:9090");
        assert_eq!(object["apiVersion"], "keda.sh/v1alpha1");
        assert_eq!(object["kind"], "ScaledObject");
        assert_eq!(object["metadata"]["name"], "qwen");
        assert_eq!(object["metadata"]["namespace"], "team-a");
        assert_eq!(
            object["metadata"]["ownerReferences"][0],
            json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment", "name": "qwen",
                   "uid": "u-1", "controller": true, "blockOwnerDeletion": true})
        );
        assert_eq!(
            object["metadata"]["labels"],
            json!({"airunway.ai/managed-by": "airunway", "airunway.ai/model-deployment": "qwen"})
        );
        let spec = &object["spec"];
        assert_eq!(
            spec["scaleTargetRef"],
            json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment", "name": "qwen"})
        );
        assert_eq!(spec["minReplicaCount"], 0);
        assert_eq!(spec["maxReplicaCount"], 4);
        assert_eq!(spec["pollingInterval"], 30);
        assert_eq!(spec["cooldownPeriod"], 300);
        assert_eq!(
            spec["triggers"][0],
            json!({"type": "prometheus", "name": "queuedepth", "metricType": "AverageValue",
                   "metadata": {"serverAddress": "http://prom:9090", "query": "sum(q)",
                                "threshold": "5", "activationThreshold": "1"}})
        );
        assert_eq!(spec["triggers"][1]["metricType"], "Value");
        assert!(
            spec["triggers"][1]["metadata"]
                .get("activationThreshold")
                .is_none()
        );
        assert_eq!(
            object["metadata"]["annotations"][annotations::AUTOSCALING_INPUTS_HASH],
            inputs_hash(spec)
        );
    }

    #[test]
    fn hpa_shape_and_its_floor_of_one() {
        let object = horizontal_pod_autoscaler(&md(), &autoscaling(Some(0)), &metrics());
        assert_eq!(object["apiVersion"], "autoscaling/v2");
        assert_eq!(object["kind"], "HorizontalPodAutoscaler");
        let spec = &object["spec"];
        assert_eq!(spec["minReplicas"], 1, "HPA cannot scale to zero");
        assert_eq!(spec["maxReplicas"], 4);
        assert_eq!(
            spec["metrics"][0],
            json!({"type": "External", "external": {
                "metric": {"name": "airunway-queue-depth",
                           "selector": {"matchLabels": {"airunway.ai/model-deployment": "qwen"}}},
                "target": {"type": "AverageValue", "averageValue": "5"}}})
        );
        assert_eq!(
            spec["metrics"][1]["external"]["target"],
            json!({"type": "Value", "value": "0.8"})
        );
        let queries: Value = serde_json::from_str(
            object["metadata"]["annotations"][annotations::AUTOSCALING_QUERIES]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            queries,
            json!({"airunway-queue-depth": "sum(q)", "airunway-pool-kv-cache-usage": "max(p)"})
        );
        let two = horizontal_pod_autoscaler(&md(), &autoscaling(Some(2)), &metrics());
        assert_eq!(two["spec"]["minReplicas"], 2);
        assert_ne!(
            two["metadata"]["annotations"][annotations::AUTOSCALING_INPUTS_HASH],
            object["metadata"]["annotations"][annotations::AUTOSCALING_INPUTS_HASH]
        );
    }

    #[test]
    fn external_metric_names() {
        assert_eq!(
            external_metric_name("kvCacheUsage"),
            "airunway-kv-cache-usage"
        );
        assert_eq!(external_metric_name("prometheus"), "airunway-prometheus");
    }
}
