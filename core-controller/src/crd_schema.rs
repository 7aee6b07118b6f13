//! The CRD's own checks of an AI Runway object, offline (pure): what the API server does with
//! a create before any validating webhook sees it: the structural schema's defaults, then its
//! types, enums, required fields, bounds, patterns and the CEL rules
//! (`x-kubernetes-validations`), each error with its field path and the API server's wording
//! (`Required value`, `Unsupported value: ...`, `Invalid value: ...`).
//!
//! The schemas are the generated CRDs of [`airunway_api::v1alpha1`] (the ones `deploy/crds`
//! holds, checked there by airunway-api's tests). Not checked here (docs/gitops.md): rules that
//! compare with the stored object (`oldSelf`, transition rules; offline every object is a
//! create), `messageExpression` (the static `message` is used), formats other than the integer
//! sizes, and the API server's CEL cost limits.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use airunway_api::kube::CustomResourceExt;
use airunway_api::v1alpha1::{
    ClusterRuntimeConfig, InferenceProviderConfig, ModelCache, ModelDeployment,
    ModelDeploymentPolicy, RuntimeConfig,
};
use kube::core::cel::{KubeCelExt, cel};
use serde_json::{Map, Value};

use crate::selection::rules::json_to_cel;
use crate::validation::FieldError;

/// Deepest schema walked (the CRDs nest far less).
const MAX_DEPTH: usize = 64;

/// The `openAPIV3Schema` of every AI Runway kind, by kind.
static SCHEMAS: LazyLock<HashMap<&'static str, Value>> = LazyLock::new(|| {
    let crds = [
        (
            "ModelDeployment",
            serde_json::to_value(ModelDeployment::crd()),
        ),
        (
            "InferenceProviderConfig",
            serde_json::to_value(InferenceProviderConfig::crd()),
        ),
        ("ModelCache", serde_json::to_value(ModelCache::crd())),
        (
            "ModelDeploymentPolicy",
            serde_json::to_value(ModelDeploymentPolicy::crd()),
        ),
        ("RuntimeConfig", serde_json::to_value(RuntimeConfig::crd())),
        (
            "ClusterRuntimeConfig",
            serde_json::to_value(ClusterRuntimeConfig::crd()),
        ),
    ];
    crds.into_iter()
        .filter_map(|(kind, crd)| {
            let schema = crd
                .ok()?
                .pointer("/spec/versions/0/schema/openAPIV3Schema")
                .cloned()?;
            Some((kind, schema))
        })
        .collect()
});

/// The Kubernetes CEL library (quantities, `matches`, lists, ...), as the API server has it.
static KUBERNETES_CEL: LazyLock<cel::Context<'static>> =
    LazyLock::new(|| cel::Context::default().with_all());

/// The `openAPIV3Schema` of AI Runway kind `kind` (`None`: not an AI Runway kind).
pub fn schema_of(kind: &str) -> Option<&'static Value> {
    SCHEMAS.get(kind)
}

/// The kinds [`check`] knows.
pub fn kinds() -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = SCHEMAS.keys().copied().collect();
    kinds.sort_unstable();
    kinds
}

/// Applies the schema's `default`s to `object` (kind `kind`) as the API server does when it
/// reads an object: a missing property with a default gets it, at every level that exists.
pub fn apply_schema_defaults(kind: &str, object: &mut Value) {
    if let Some(schema) = schema_of(kind) {
        defaults(object, schema, 0);
    }
}

fn defaults(value: &mut Value, schema: &Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    if let (Some(object), Some(properties)) = (
        value.as_object_mut(),
        schema.get("properties").and_then(Value::as_object),
    ) {
        for (key, child) in properties {
            if !object.contains_key(key)
                && let Some(default) = child.get("default")
            {
                object.insert(key.clone(), default.clone());
            }
            if let Some(inner) = object.get_mut(key) {
                defaults(inner, child, depth + 1);
            }
        }
        return;
    }
    if let (Some(items), Some(list)) = (schema.get("items"), value.as_array_mut()) {
        for item in list {
            defaults(item, items, depth + 1);
        }
        return;
    }
    if let (Some(values), Some(map)) = (
        schema.get("additionalProperties").filter(|s| s.is_object()),
        value.as_object_mut(),
    ) {
        for inner in map.values_mut() {
            defaults(inner, values, depth + 1);
        }
    }
}

/// The errors the API server's schema validation gives `object` (kind `kind`, defaults
/// applied): empty when the CRD admits it, or when `kind` is not an AI Runway kind.
pub fn check(kind: &str, object: &Value) -> Vec<FieldError> {
    let Some(schema) = schema_of(kind) else {
        return vec![];
    };
    let mut errors = Vec::new();
    // The root: only `metadata` is the API server's; `apiVersion` and `kind` are known here.
    if let (Some(object), Some(properties)) = (
        object.as_object(),
        schema.get("properties").and_then(Value::as_object),
    ) {
        for (key, child) in properties {
            if key == "metadata" || key == "apiVersion" || key == "kind" {
                continue;
            }
            if let Some(value) = object.get(key) {
                walk(value, child, key, &mut errors, 1);
            }
        }
        required(object, schema, "", &mut errors);
    }
    rules(object, schema, "", &mut errors);
    errors
}

fn walk(value: &Value, schema: &Value, path: &str, errors: &mut Vec<FieldError>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    if value.is_null() {
        if schema.get("nullable") != Some(&Value::Bool(true)) {
            // The API server drops a null it cannot keep; nothing else applies to it.
            return;
        }
        return;
    }
    if let Some(expected) = type_error(value, schema) {
        errors.push(FieldError::new(
            path,
            format!(
                "Invalid value: \"{}\": {path} in body must be of type {expected}: \"{}\"",
                json_type(value),
                json_type(value)
            ),
        ));
        return;
    }
    let before = errors.len();
    scalar_checks(value, schema, path, errors);
    if let Some(object) = value.as_object() {
        if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
            for (key, child) in properties {
                if let Some(inner) = object.get(key) {
                    walk(inner, child, &join(path, key), errors, depth + 1);
                }
            }
            required(object, schema, path, errors);
        } else if let Some(values) = schema.get("additionalProperties").filter(|s| s.is_object()) {
            for (key, inner) in object {
                walk(inner, values, &format!("{path}[{key}]"), errors, depth + 1);
            }
        }
        if let Some(max) = schema.get("maxProperties").and_then(Value::as_u64)
            && object.len() as u64 > max
        {
            errors.push(FieldError::new(
                path,
                format!("Too many: {}: must have at most {max} items", object.len()),
            ));
        }
    }
    if let Some(list) = value.as_array() {
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
            && list.len() as u64 > max
        {
            errors.push(FieldError::new(
                path,
                format!("Too many: {}: must have at most {max} items", list.len()),
            ));
        }
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
            && (list.len() as u64) < min
        {
            errors.push(FieldError::new(
                path,
                format!(
                    "Invalid value: {}: {path} in body should have at least {min} items",
                    list.len()
                ),
            ));
        }
        if let Some(items) = schema.get("items") {
            for (i, item) in list.iter().enumerate() {
                walk(item, items, &format!("{path}[{i}]"), errors, depth + 1);
            }
        }
    }
    // The API server evaluates a node's CEL rules only when its schema checks passed.
    if errors.len() == before {
        rules(value, schema, path, errors);
    }
}

fn required(object: &Map<String, Value>, schema: &Value, path: &str, errors: &mut Vec<FieldError>) {
    for key in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if object.get(key).is_none_or(Value::is_null) {
            errors.push(FieldError::new(join(path, key), "Required value"));
        }
    }
}

/// `None` when `value` has the schema's type (or the schema names none), else the type.
fn type_error(value: &Value, schema: &Value) -> Option<String> {
    if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        return (!(value.is_string() || value.is_i64() || value.is_u64()))
            .then(|| "integer or string".to_string());
    }
    let expected = schema.get("type").and_then(Value::as_str)?;
    let fits = match expected {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        _ => true,
    };
    (!fits).then(|| expected.to_string())
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn scalar_checks(value: &Value, schema: &Value, path: &str, errors: &mut Vec<FieldError>) {
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let supported: Vec<String> = allowed.iter().map(Value::to_string).collect();
        errors.push(FieldError::new(
            path,
            format!(
                "Unsupported value: {value}: supported values: {}",
                supported.join(", ")
            ),
        ));
        return;
    }
    if let Some(number) = value.as_f64() {
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
            && number < min
        {
            errors.push(FieldError::new(
                path,
                format!(
                    "Invalid value: {value}: {path} in body should be greater than or equal to {}",
                    schema["minimum"]
                ),
            ));
        }
        if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
            && number > max
        {
            errors.push(FieldError::new(
                path,
                format!(
                    "Invalid value: {value}: {path} in body should be less than or equal to {}",
                    schema["maximum"]
                ),
            ));
        }
        if let Some(format) = schema.get("format").and_then(Value::as_str) {
            let fits = match format {
                "int32" => value.as_i64().is_some_and(|i| i32::try_from(i).is_ok()),
                "int64" => value.as_i64().is_some(),
                _ => true,
            };
            if !fits && value.as_i64().is_some() {
                errors.push(FieldError::new(
                    path,
                    format!("Invalid value: {value}: {path} in body must be of type {format}"),
                ));
            }
        }
    }
    if let Some(text) = value.as_str() {
        let length = text.chars().count() as u64;
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
            && length > max
        {
            errors.push(FieldError::new(
                path,
                format!("Too long: may not be more than {max} bytes"),
            ));
        }
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
            && length < min
        {
            errors.push(FieldError::new(
                path,
                format!(
                    "Invalid value: {value}: {path} in body should be at least {min} chars long"
                ),
            ));
        }
        if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
            && !matches_pattern(text, pattern)
        {
            errors.push(FieldError::new(
                path,
                format!("Invalid value: {value}: {path} in body should match '{pattern}'"),
            ));
        }
    }
}

/// Whether `text` matches the schema `pattern` (evaluated with CEL's `matches`, the RE2
/// dialect both the API server's OpenAPI patterns and its CEL use); a pattern that does not
/// compile matches everything (the API server would have refused the CRD).
fn matches_pattern(text: &str, pattern: &str) -> bool {
    let Ok(program) = cel::Program::compile("self.matches(pattern)") else {
        return true;
    };
    let mut context = KUBERNETES_CEL.new_inner_scope();
    context.add_variable_from_value("self", cel::Value::String(Arc::new(text.to_string())));
    context.add_variable_from_value("pattern", cel::Value::String(Arc::new(pattern.to_string())));
    !matches!(program.execute(&context), Ok(cel::Value::Bool(false)))
}

/// The node's `x-kubernetes-validations`, with `self` bound to `value`.
fn rules(value: &Value, schema: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let Some(rules) = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
    else {
        return;
    };
    for rule in rules {
        let Some(text) = rule.get("rule").and_then(Value::as_str) else {
            continue;
        };
        if text.contains("oldSelf") {
            continue;
        }
        let Ok(program) = cel::Program::compile(text) else {
            continue;
        };
        let mut context = KUBERNETES_CEL.new_inner_scope();
        context.add_variable_from_value("self", json_to_cel(value));
        let failed = match program.execute(&context) {
            Ok(cel::Value::Bool(passed)) => !passed,
            // An evaluation error (a missing field the rule did not guard with `has`) is a
            // failure in the API server too, reported with the rule.
            Ok(_) | Err(_) => true,
        };
        if !failed {
            continue;
        }
        let field_path = rule.get("fieldPath").and_then(Value::as_str);
        let field = match field_path {
            Some(relative) => format!("{path}{relative}")
                .trim_start_matches('.')
                .to_string(),
            None => path.to_string(),
        };
        let message = rule
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("failed rule: {text}"));
        let message = match rule.get("reason").and_then(Value::as_str) {
            Some("FieldValueRequired") => format!("Required value: {message}"),
            Some("FieldValueForbidden") => format!("Forbidden: {message}"),
            Some("FieldValueDuplicate") => format!("Duplicate value: {message}"),
            // With a fieldPath the value is not the one at that path: the API server leaves
            // it out (kube-apiserver v1.36: `<field>: Invalid value: <message>`).
            _ if field_path.is_some() => format!("Invalid value: {message}"),
            _ => format!("Invalid value: \"{}\": {message}", json_type(value)),
        };
        errors.push(FieldError::new(field, message));
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn md(spec: Value) -> Value {
        json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns"}, "spec": spec})
    }

    fn errors(object: &Value) -> Vec<String> {
        let mut object = object.clone();
        apply_schema_defaults("ModelDeployment", &mut object);
        check("ModelDeployment", &object)
            .into_iter()
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn every_kind_has_its_schema() {
        assert_eq!(
            kinds(),
            [
                "ClusterRuntimeConfig",
                "InferenceProviderConfig",
                "ModelCache",
                "ModelDeployment",
                "ModelDeploymentPolicy",
                "RuntimeConfig"
            ]
        );
    }

    #[test]
    fn a_valid_deployment_passes() {
        let valid = md(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"},
            "resources": {"gpu": {"count": 1}, "memory": "16Gi"}}));
        assert_eq!(errors(&valid), Vec::<String>::new());
    }

    #[test]
    fn types_enums_and_required_fields_read_as_the_api_server_says_them() {
        let found = errors(&md(json!({"engine": {"type": "tensorflow"},
            "resources": {"gpu": {"count": "one"}}})));
        assert!(
            found.contains(&"spec.model: Required value".to_string()),
            "{found:?}"
        );
        assert!(
            found.iter().any(|e| e.starts_with(
                "spec.engine.type: Unsupported value: \"tensorflow\": supported values: \"vllm\""
            )),
            "{found:?}"
        );
        assert!(
            found.contains(&"spec.resources.gpu.count: Invalid value: \"string\": spec.resources.gpu.count in body must be of type integer: \"string\"".to_string()),
            "{found:?}"
        );
    }

    #[test]
    fn cel_rules_of_the_crd_are_evaluated() {
        // The CRD's rule: vLLM needs GPUs in aggregated mode.
        let found = errors(&md(
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 0}}}),
        ));
        assert_eq!(
            found,
            [
                "spec.resources.gpu.count: Invalid value: vLLM engine requires GPU (set resources.gpu.count > 0)"
            ]
        );
        // Quantities, through the Kubernetes CEL library.
        let found = errors(&md(
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "resources": {"memory": "lots"}}),
        ));
        assert!(
            found.iter().any(|e| e.starts_with(
                "spec.resources.memory: Invalid value: \"string\": must be a Kubernetes quantity"
            )),
            "{found:?}"
        );
    }

    #[test]
    fn provider_config_rules_on_the_root() {
        let mut ipc = json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig",
            "metadata": {"name": "Not_A_Label"}, "spec": {}});
        apply_schema_defaults("InferenceProviderConfig", &mut ipc);
        let found: Vec<String> = check("InferenceProviderConfig", &ipc)
            .into_iter()
            .map(|e| e.to_string())
            .collect();
        // A rule of the root has no field path (the API server prints `<nil>`).
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with(": Invalid value: \"object\": metadata.name must be a DNS label"),
            "{found:?}"
        );
    }
}
