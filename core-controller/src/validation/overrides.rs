//! `spec.provider.overrides`: size, depth, privilege-escalating keys at any depth, and the Pod
//! Security baseline the providers check their renders against.

use airunway_api::pod_security;
use serde_json::Value;

use super::{ESCALATING_OVERRIDE_KEYS, FieldError, MAX_OVERRIDES_BYTES, MAX_OVERRIDES_DEPTH};

/// Validates `provider.overrides`: size, depth and privilege-escalating keys anywhere.
pub fn validate_overrides(
    overrides: &serde_json::Map<String, Value>,
    errors: &mut Vec<FieldError>,
) {
    let size = serde_json::to_string(overrides)
        .map(|s| s.len())
        .unwrap_or(usize::MAX);
    if size > MAX_OVERRIDES_BYTES {
        errors.push(FieldError::new(
            "spec.provider.overrides",
            format!("must be at most {MAX_OVERRIDES_BYTES} bytes as JSON (is {size})"),
        ));
    }
    let before = errors.len();
    for (key, value) in overrides {
        walk_overrides(
            &format!("spec.provider.overrides.{key}"),
            key,
            value,
            1,
            errors,
        );
    }
    // The keys above are refused wherever they are; what else would loosen the pods (privileged,
    // capabilities, hostPath, host ports, any spelling and depth) is found by the same Pod
    // Security check the providers run on what they render. Skipped when the walk already
    // stopped at the depth limit (the check would only repeat it).
    if errors[before..]
        .iter()
        .any(|e| e.message.contains("may nest at most"))
    {
        return;
    }
    let reported: Vec<String> = errors[before..].iter().map(|e| e.field.clone()).collect();
    for violation in pod_security::check(
        &Value::Object(overrides.clone()),
        pod_security::Profile::Baseline,
        &pod_security::Exemptions::default(),
    ) {
        let field = format!("spec.provider.overrides.{}", violation.field);
        if !reported.iter().any(|r| field.starts_with(r.as_str())) {
            errors.push(FieldError::new(
                field,
                format!(
                    "{}: provider.overrides may not loosen the security of the model server pods",
                    violation.rule
                ),
            ));
        }
    }
}

fn walk_overrides(
    path: &str,
    key: &str,
    value: &Value,
    depth: usize,
    errors: &mut Vec<FieldError>,
) {
    if ESCALATING_OVERRIDE_KEYS.contains(&key) {
        errors.push(FieldError::new(
            path,
            format!("key '{key}' is not allowed in provider.overrides: it would escalate the privileges of the model server pods"),
        ));
    }
    if depth > MAX_OVERRIDES_DEPTH {
        errors.push(FieldError::new(
            path,
            format!("provider.overrides may nest at most {MAX_OVERRIDES_DEPTH} levels"),
        ));
        return;
    }
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                walk_overrides(&format!("{path}.{k}"), k, v, depth + 1, errors);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                if let Value::Object(map) = v {
                    for (k, v) in map {
                        walk_overrides(&format!("{path}[{i}].{k}"), k, v, depth + 1, errors);
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::errors;
    use super::*;
    use serde_json::json;

    #[test]
    fn overrides_that_loosen_pod_security_are_refused_whatever_the_key() {
        let spec = json!({"model": {"id": "a/b"}, "provider": {"overrides": {
            "worker": {"podSpec": {"HostNetwork": true, "volumes": [{"name": "r", "hostPath": {"path": "/"}}],
                "containers": [{"securityContext": {"privileged": true, "capabilities": {"add": ["SYS_ADMIN"]}}}]}}}}});
        let fields: Vec<String> = errors(spec).into_iter().map(|e| e.field).collect();
        assert_eq!(
            fields,
            [
                // `securityContext` is refused as a key wherever it is; what is inside it is not
                // reported again.
                "spec.provider.overrides.worker.podSpec.containers[0].securityContext",
                "spec.provider.overrides.worker.podSpec.HostNetwork",
                "spec.provider.overrides.worker.podSpec.volumes[0].hostPath",
            ]
        );
    }

    #[test]
    fn escalating_override_keys_are_refused_at_any_depth() {
        for key in ESCALATING_OVERRIDE_KEYS {
            let found = errors(
                json!({"model": {"id": "a/b"}, "provider": {"overrides": {"frontend": {"pods": [{key: "x"}]}}}}),
            );
            assert_eq!(found.len(), 1, "{key}");
            assert_eq!(
                found[0].field,
                format!("spec.provider.overrides.frontend.pods[0].{key}")
            );
            assert!(
                found[0]
                    .message
                    .contains(&format!("key '{key}' is not allowed")),
                "{}",
                found[0].message
            );
        }
        // Harmless keys pass.
        assert!(errors(json!({"model": {"id": "a/b"}, "provider": {"overrides": {"routerMode": "kv", "frontend": {"replicas": 2}}}})).is_empty());
    }
}
