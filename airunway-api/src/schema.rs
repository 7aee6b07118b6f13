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

/// One entry of `capabilities.engines`: an engine name (shorthand that inherits the
/// capability-level `servingModes`, `gpuSupport` and `cpuSupport`) or a per-engine object.
pub fn engine_capability_entry(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "An engine this provider serves: either its name (vllm, sglang, trtllm, llamacpp), which takes the capability-level servingModes/gpuSupport/cpuSupport, or an object {name, servingModes, gpuSupport, cpuSupport} for that engine alone.",
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
