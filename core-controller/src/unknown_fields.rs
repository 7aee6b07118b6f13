//! Fields under `spec` that this version does not know (pure).
//!
//! The ModelDeployment CRD keeps unknown fields under `spec` (instead of pruning them), so a
//! misspelt field or one from a newer or older AI Runway is never silently lost: the validating
//! webhook refuses it here, naming the field and the fields known at that place. The walk
//! follows the CRD's own schema, so it is as deep as the schema and no deeper: free-form objects
//! (`provider.overrides`) are not entered, lists and maps are bounded by the schema's limits.

use std::sync::LazyLock;

use airunway_api::kube::CustomResourceExt;
use airunway_api::v1alpha1::ModelDeployment;
use serde_json::Value;

use crate::validation::FieldError;

/// At most this many unknown fields are reported (the rest are summarised).
pub const MAX_REPORTED: usize = 16;

/// The schema of `ModelDeployment.spec`, from the generated CRD.
static SPEC_SCHEMA: LazyLock<Value> = LazyLock::new(|| {
    serde_json::to_value(ModelDeployment::crd())
        .ok()
        .and_then(|crd| {
            crd.pointer("/spec/versions/0/schema/openAPIV3Schema/properties/spec")
                .cloned()
        })
        .unwrap_or(Value::Null)
});

/// The OpenAPI schema of `ModelDeployment.spec` in the generated CRD.
pub fn spec_schema() -> &'static Value {
    &SPEC_SCHEMA
}

/// Errors for every field of `spec` (the raw JSON of `ModelDeployment.spec`) that the schema
/// does not declare.
pub fn unknown_fields(spec: &Value) -> Vec<FieldError> {
    let mut found = Vec::new();
    let mut total = 0;
    walk(spec, &SPEC_SCHEMA, "spec", &mut found, &mut total);
    if total > found.len() {
        found.push(FieldError {
            field: "spec".into(),
            message: format!(
                "{} more unknown fields not listed",
                total.saturating_sub(found.len())
            ),
        });
    }
    found
}

fn walk(value: &Value, schema: &Value, path: &str, found: &mut Vec<FieldError>, total: &mut usize) {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        let Some(object) = value.as_object() else {
            return;
        };
        for (key, child) in object {
            match properties.get(key) {
                Some(child_schema) => {
                    walk(child, child_schema, &format!("{path}.{key}"), found, total);
                }
                None => {
                    *total += 1;
                    if found.len() < MAX_REPORTED {
                        found.push(FieldError {
                            field: format!("{path}.{key}"),
                            message: unknown_message(properties.keys()),
                        });
                    }
                }
            }
        }
        return;
    }
    if let Some(items) = schema.get("items")
        && let Some(list) = value.as_array()
    {
        for (i, item) in list.iter().enumerate() {
            walk(item, items, &format!("{path}[{i}]"), found, total);
        }
        return;
    }
    if let Some(values) = schema.get("additionalProperties").filter(|s| s.is_object())
        && let Some(map) = value.as_object()
    {
        for (key, child) in map {
            walk(child, values, &format!("{path}[{key}]"), found, total);
        }
    }
}

fn unknown_message<'a>(known: impl Iterator<Item = &'a String>) -> String {
    let known: Vec<&str> = known.map(String::as_str).collect();
    format!(
        "unknown field: this version of AI Runway does not know it and would ignore it; check the spelling (known fields here: {})",
        known.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(spec: Value) -> Vec<String> {
        unknown_fields(&spec).into_iter().map(|e| e.field).collect()
    }

    #[test]
    fn known_fields_pass() {
        let spec = json!({
            "model": {"id": "a/b", "source": "huggingface", "servedName": "b"},
            "engine": {"type": "vllm", "image": "x", "enablePrefixCaching": false, "enforceEager": true,
                       "extraArgs": ["--a"], "args": {"k": "v"}, "contextLength": 10, "trustRemoteCode": false},
            "provider": {"name": "kaito", "overrides": {"anything": {"goes": [1, {"here": true}]}}},
            "resources": {"gpu": {"count": 1, "type": "nvidia.com/gpu"}, "cpu": "1", "memory": "1Gi"},
            "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
            "nodeSelector": {"a": "b"},
            "podTemplate": {"metadata": {"labels": {"a": "b"}, "annotations": {"c": "d"}}},
            "gateway": {"enabled": true, "modelName": "m", "httpRouteRef": "r"},
            "secrets": {"huggingFaceToken": "hf"},
            "serving": {"mode": "aggregated"},
            "scaling": {"replicas": 1},
        });
        assert_eq!(fields(spec), Vec::<String>::new());
    }

    #[test]
    fn unknown_fields_are_named_at_every_depth() {
        let spec = json!({
            "model": {"id": "a/b", "revision": "main"},
            "engine": {"type": "vllm", "enablePrefixCachng": false},
            "env": [{"name": "A", "valu": "x"}],
            "scaling": {"prefill": {"replicas": 1, "gpus": 2}},
            "replicas": 3,
        });
        assert_eq!(
            fields(spec),
            vec![
                "spec.engine.enablePrefixCachng",
                "spec.env[0].valu",
                "spec.model.revision",
                "spec.replicas",
                "spec.scaling.prefill.gpus",
            ]
        );
        let errors = unknown_fields(&json!({"model": {"id": "a/b"}, "enigne": {}}));
        assert!(
            errors[0].message.contains("known fields here: "),
            "{errors:?}"
        );
        assert!(errors[0].message.contains("engine"), "{errors:?}");
    }

    #[test]
    fn reports_are_bounded() {
        let mut spec = serde_json::Map::new();
        for i in 0..1000 {
            spec.insert(format!("f{i}"), json!(i));
        }
        let errors = unknown_fields(&Value::Object(spec));
        assert_eq!(errors.len(), MAX_REPORTED + 1);
        assert_eq!(
            errors[MAX_REPORTED].message,
            format!("{} more unknown fields not listed", 1000 - MAX_REPORTED)
        );
    }
}
