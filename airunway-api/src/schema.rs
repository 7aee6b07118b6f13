//! Hand-written schema fragments for fields whose Rust type cannot say it all.

use schemars::{Schema, SchemaGenerator, json_schema};

/// A free-form JSON object whose unknown fields the API server keeps
/// (`x-kubernetes-preserve-unknown-fields`).
pub fn free_form_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// A Kubernetes resource quantity written as a string (`16Gi`, `500m`, `4`).
pub fn quantity(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "maxLength": 64,
        "x-kubernetes-validations": [{
            "rule": "isQuantity(self)",
            "message": "must be a Kubernetes quantity such as 16Gi, 500m or 4",
        }],
    })
}

/// CPU per worker: a quantity greater than zero and at most 512 cores.
pub fn cpu_quantity(_: &mut SchemaGenerator) -> Schema {
    bounded_quantity(crate::constants::limits::MAX_CPU)
}

/// Memory per worker: a quantity greater than zero and at most 4Ti.
pub fn memory_quantity(_: &mut SchemaGenerator) -> Schema {
    bounded_quantity(crate::constants::limits::MAX_MEMORY)
}

fn bounded_quantity(max: &str) -> Schema {
    json_schema!({
        "type": "string",
        "maxLength": 64,
        "x-kubernetes-validations": [
            {
                "rule": "isQuantity(self)",
                "message": "must be a Kubernetes quantity such as 16Gi, 500m or 4",
            },
            {
                "rule": "!isQuantity(self) || quantity(self).isGreaterThan(quantity('0'))",
                "message": "must be greater than zero",
            },
            {
                "rule": format!("!isQuantity(self) || quantity(self).compareTo(quantity('{max}')) <= 0"),
                "message": format!("exceeds maximum allowed ({max})"),
            },
        ],
    })
}

/// One entry of `capabilities.engines`: an engine name (shorthand that inherits the
/// capability-level `servingModes`, `gpuSupport` and `cpuSupport`) or a per-engine object.
pub fn engine_capability_entry(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "An engine this provider serves: either its name (vllm, sglang, trtllm, llamacpp), which takes the capability-level servingModes/gpuSupport/cpuSupport, or an object {name, servingModes, gpuSupport, cpuSupport, apiFormats, requiresCRD, gateway, loraSupport, toolCallingSupport} for that engine alone.",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Removes the type-level `description` of an enum's schema, so the description of the field
/// using it is what `kubectl explain` shows (kube's optional-enum hoisting would otherwise let
/// the type's text replace the field's).
pub fn without_description(schema: &mut Schema) {
    if let Some(object) = schema.as_object_mut() {
        object.remove("description");
    }
}

/// Keeps unknown fields at every object of the schema that declares properties
/// (`x-kubernetes-preserve-unknown-fields: true`), so the API server stores a misspelt or newer
/// field instead of pruning it silently, and the validating webhook can refuse it by name.
/// Applied to `ModelDeployment.spec`.
pub fn keep_unknown_fields(schema: &mut Schema) {
    fn walk(value: &mut serde_json::Value, depth: usize) {
        // The schema is ours and shallow; the bound only guards against a recursive type.
        if depth > 32 {
            return;
        }
        let Some(object) = value.as_object_mut() else {
            return;
        };
        if object.contains_key("properties") {
            object.insert(
                "x-kubernetes-preserve-unknown-fields".into(),
                serde_json::Value::Bool(true),
            );
        }
        for key in [
            "properties",
            "items",
            "additionalProperties",
            "allOf",
            "anyOf",
            "oneOf",
        ] {
            match object.get_mut(key) {
                Some(serde_json::Value::Object(children)) if key == "properties" => {
                    for child in children.values_mut() {
                        walk(child, depth + 1);
                    }
                }
                Some(serde_json::Value::Array(children)) => {
                    for child in children {
                        walk(child, depth + 1);
                    }
                }
                Some(child @ serde_json::Value::Object(_)) => walk(child, depth + 1),
                _ => {}
            }
        }
    }
    let mut value = serde_json::Value::Object(std::mem::take(schema.ensure_object()));
    walk(&mut value, 0);
    if let serde_json::Value::Object(object) = value {
        *schema.ensure_object() = object;
    }
}
