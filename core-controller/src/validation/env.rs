//! `spec.env`: every entry is copied into the model server containers, so it must pass the API
//! server's own validation of a container's `EnvVar` (Kubernetes 1.36,
//! `pkg/apis/core/validation` `ValidateEnv`): a name in the relaxed grammar, and a `valueFrom`
//! with exactly one source, not beside a non-empty `value`, whose references are well formed.
//! What the API server would refuse in the provider's Deployment (and turn into a `Failed`
//! deployment with its raw error) is refused here, with the field and the fix.

use airunway_api::k8s_openapi::api::core::v1::{EnvVar, EnvVarSource};
use airunway_api::kubernetes_names::{is_dns1123_subdomain, is_qualified_name};
use airunway_api::v1alpha1::ModelDeploymentSpec;

use super::{FieldError, MAX_ENV_TOTAL_BYTES, MAX_ENV_VALUE_BYTES};

/// The pod fields `valueFrom.fieldRef.fieldPath` may name in an environment variable (besides
/// `metadata.labels['<key>']` and `metadata.annotations['<key>']`).
const FIELD_PATHS: [&str; 9] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// The container resources `valueFrom.resourceFieldRef.resource` may name (besides
/// `requests.hugepages-<size>` and `limits.hugepages-<size>`).
const RESOURCES: [&str; 6] = [
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
];

/// Divisors the API server accepts for a CPU resource.
const CPU_DIVISORS: [&str; 2] = ["1m", "1"];
/// Divisors the API server accepts for memory, ephemeral storage and huge pages.
const BYTE_DIVISORS: [&str; 13] = [
    "1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei",
];

/// Checks `spec.env`: names, values, sizes and `valueFrom`.
pub(super) fn validate_env(spec: &ModelDeploymentSpec, errors: &mut Vec<FieldError>) {
    let mut env_bytes = 0usize;
    for (i, var) in spec.env.iter().flatten().enumerate() {
        let field = format!("spec.env[{i}]");
        if !is_env_name(&var.name) {
            errors.push(FieldError::new(
                format!("{field}.name"),
                "must be 1 to 256 printable ASCII characters other than '='",
            ));
        }
        let value = var.value.as_deref().unwrap_or_default();
        env_bytes += var.name.len() + value.len();
        if value.len() > MAX_ENV_VALUE_BYTES {
            errors.push(FieldError::new(
                format!("{field}.value"),
                format!(
                    "must be at most {MAX_ENV_VALUE_BYTES} bytes (is {}); mount large data from a ConfigMap or volume instead",
                    value.len()
                ),
            ));
        }
        if let Some(source) = &var.value_from {
            validate_value_from(var, source, &format!("{field}.valueFrom"), errors);
        }
    }
    if env_bytes > MAX_ENV_TOTAL_BYTES {
        errors.push(FieldError::new(
            "spec.env",
            format!(
                "names and values must total at most {MAX_ENV_TOTAL_BYTES} bytes (is {env_bytes})"
            ),
        ));
    }
}

/// `valueFrom`: exactly one source, no non-empty `value` beside it, each reference valid.
fn validate_value_from(
    var: &EnvVar,
    source: &EnvVarSource,
    field: &str,
    errors: &mut Vec<FieldError>,
) {
    let sources = [
        source.config_map_key_ref.is_some(),
        source.secret_key_ref.is_some(),
        source.field_ref.is_some(),
        source.resource_field_ref.is_some(),
    ]
    .into_iter()
    .filter(|set| *set)
    .count();
    if sources == 0 {
        errors.push(FieldError::new(
            field,
            "must name one source: configMapKeyRef, secretKeyRef, fieldRef or resourceFieldRef; or remove valueFrom and set value",
        ));
    } else if var.value.as_deref().is_some_and(|v| !v.is_empty()) {
        errors.push(FieldError::new(
            field,
            "may not be specified when value is not empty: set either value (a literal) or valueFrom (read from a source), not both",
        ));
    } else if sources > 1 {
        errors.push(FieldError::new(
            field,
            "may name only one source (configMapKeyRef, secretKeyRef, fieldRef or resourceFieldRef); one environment variable reads one value",
        ));
    }
    for (child, reference) in [
        (
            "configMapKeyRef",
            source
                .config_map_key_ref
                .as_ref()
                .map(|r| (r.name.as_str(), r.key.as_str())),
        ),
        (
            "secretKeyRef",
            source
                .secret_key_ref
                .as_ref()
                .map(|r| (r.name.as_str(), r.key.as_str())),
        ),
    ] {
        let Some((name, key)) = reference else {
            continue;
        };
        if !is_dns1123_subdomain(name) {
            errors.push(FieldError::new(
                format!("{field}.{child}.name"),
                format!("{name:?} is not a valid object name: a DNS subdomain (lower-case letters, digits, '-' and '.', at most 253 characters) in this namespace"),
            ));
        }
        if !is_config_map_key(key) {
            errors.push(FieldError::new(
                format!("{field}.{child}.key"),
                format!("{key:?} is not a valid key: 1 to 253 letters, digits, '-', '_' or '.', not '.' or '..' and not starting with '..'"),
            ));
        }
    }
    if let Some(reference) = &source.field_ref {
        let version = reference.api_version.as_deref().unwrap_or_default();
        if !version.is_empty() && version != "v1" {
            errors.push(FieldError::new(
                format!("{field}.fieldRef.apiVersion"),
                format!("{version:?} is not supported: a pod's fields are named in v1 (or leave it empty)"),
            ));
        } else if !is_env_field_path(&reference.field_path) {
            errors.push(FieldError::new(
                format!("{field}.fieldRef.fieldPath"),
                format!(
                    "{:?} is not a pod field an environment variable can read: use one of {}, metadata.labels['<key>'] or metadata.annotations['<key>']",
                    reference.field_path,
                    FIELD_PATHS.join(", ")
                ),
            ));
        }
    }
    if let Some(reference) = &source.resource_field_ref {
        let resource = reference.resource.as_str();
        let hugepages = resource.starts_with("requests.hugepages-")
            || resource.starts_with("limits.hugepages-");
        if !hugepages && !RESOURCES.contains(&resource) {
            errors.push(FieldError::new(
                format!("{field}.resourceFieldRef.resource"),
                format!(
                    "{resource:?} is not supported: use one of {}, requests.hugepages-<size> or limits.hugepages-<size>",
                    RESOURCES.join(", ")
                ),
            ));
        }
        if let Some(divisor) = reference.divisor.as_ref().map(|d| d.0.as_str()) {
            let allowed: &[&str] = if resource.ends_with(".cpu") {
                &CPU_DIVISORS
            } else {
                &BYTE_DIVISORS
            };
            if !is_zero_quantity(divisor) && !allowed.contains(&divisor) {
                errors.push(FieldError::new(
                    format!("{field}.resourceFieldRef.divisor"),
                    format!(
                        "{divisor:?} is not supported for {resource}: use one of {}",
                        allowed.join(", ")
                    ),
                ));
            }
        }
    }
}

/// An environment variable name Kubernetes accepts: printable ASCII other than `=` (the
/// relaxed grammar, on by default since Kubernetes 1.32), at most 256 characters here.
pub(super) fn is_env_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 256 && s.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'=')
}

/// A ConfigMap or Secret key: 1 to 253 of `[-._a-zA-Z0-9]`, not `.` or `..`, not starting
/// with `..`.
fn is_config_map_key(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && s != "."
        && !s.starts_with("..")
}

/// A `fieldRef.fieldPath` the API server accepts for an environment variable (`spec.host` is
/// its old name of `spec.nodeName`).
fn is_env_field_path(path: &str) -> bool {
    if FIELD_PATHS.contains(&path) || path == "spec.host" {
        return true;
    }
    let Some((base, key)) = path
        .strip_suffix("']")
        .and_then(|p| p.split_once("['"))
        .filter(|(base, _)| !base.is_empty())
    else {
        return false;
    };
    match base {
        "metadata.labels" => is_qualified_name(key),
        "metadata.annotations" => is_qualified_name(&key.to_ascii_lowercase()),
        _ => false,
    }
}

/// A quantity of zero (`0`, `0.0`, `0Mi`...): the API server treats it as an unset divisor.
fn is_zero_quantity(s: &str) -> bool {
    let number: String = s
        .trim_start_matches(['+', '-'])
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    number.chars().any(|c| c.is_ascii_digit()) && number.chars().all(|c| c == '0' || c == '.')
}

#[cfg(test)]
mod tests {
    use super::super::tests::errors;
    use serde_json::{Value, json};

    fn env(entries: Value) -> Vec<(String, String)> {
        errors(json!({"model": {"id": "a/b"}, "env": entries}))
            .into_iter()
            .map(|e| (e.field, e.message))
            .collect()
    }

    fn fields(entries: Value) -> Vec<String> {
        env(entries).into_iter().map(|(f, _)| f).collect()
    }

    #[test]
    fn value_and_value_from_together_are_refused_with_the_field() {
        let found = env(json!([
            {"name": "A", "value": "1"},
            {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
            {"name": "C", "value": "x", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        ]));
        assert_eq!(
            found,
            [(
                "spec.env[2].valueFrom".to_string(),
                "may not be specified when value is not empty: set either value (a literal) or valueFrom (read from a source), not both".to_string()
            )]
        );
        // An empty value beside valueFrom is what the API server takes too.
        assert!(fields(json!([{"name": "C", "value": "", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}])).is_empty());
    }

    #[test]
    fn value_from_names_exactly_one_source() {
        assert_eq!(
            fields(json!([{"name": "A", "valueFrom": {}}])),
            ["spec.env[0].valueFrom"]
        );
        assert_eq!(
            fields(json!([{"name": "A", "valueFrom": {
                "configMapKeyRef": {"name": "c", "key": "k"},
                "fieldRef": {"fieldPath": "metadata.name"}}}])),
            ["spec.env[0].valueFrom"]
        );
        // No source and a value: the missing source is what is said (as the API server does).
        let found = env(json!([{"name": "A", "value": "v", "valueFrom": {}}]));
        assert_eq!(found.len(), 1);
        assert!(found[0].1.starts_with("must name one source"), "{found:?}");
    }

    #[test]
    fn references_are_checked_as_the_api_server_does() {
        let ok = json!([
            {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cfg.v1", "key": "model_path.txt"}}},
            {"name": "B", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "HF_TOKEN", "optional": true}}},
            {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "D", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels['app.kubernetes.io/name']"}}},
            {"name": "E", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['Example.com/Key']"}}},
            {"name": "F", "valueFrom": {"fieldRef": {"fieldPath": "spec.host"}}},
            {"name": "G", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
            {"name": "H", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1m"}}},
            {"name": "I", "valueFrom": {"resourceFieldRef": {"resource": "limits.hugepages-2Mi", "divisor": "0"}}},
            {"name": "weird.name-1 ok", "value": "printable ASCII is fine"},
        ]);
        assert_eq!(fields(ok), Vec::<String>::new());
        let bad = json!([
            {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "Bad_Name", "key": "../k"}}},
            {"name": "B", "valueFrom": {"secretKeyRef": {"name": "", "key": ""}}},
            {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "spec.restartPolicy"}}},
            {"name": "D", "valueFrom": {"fieldRef": {"apiVersion": "v2", "fieldPath": "metadata.name"}}},
            {"name": "E", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['bad key']"}}},
            {"name": "F", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels"}}},
            {"name": "G", "valueFrom": {"resourceFieldRef": {"resource": "limits.nvidia.com/gpu"}}},
            {"name": "H", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1Mi"}}},
            {"name": "I", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "3"}}},
        ]);
        assert_eq!(
            fields(bad),
            [
                "spec.env[0].valueFrom.configMapKeyRef.name",
                "spec.env[0].valueFrom.configMapKeyRef.key",
                "spec.env[1].valueFrom.secretKeyRef.name",
                "spec.env[1].valueFrom.secretKeyRef.key",
                "spec.env[2].valueFrom.fieldRef.fieldPath",
                "spec.env[3].valueFrom.fieldRef.apiVersion",
                "spec.env[4].valueFrom.fieldRef.fieldPath",
                "spec.env[5].valueFrom.fieldRef.fieldPath",
                "spec.env[6].valueFrom.resourceFieldRef.resource",
                "spec.env[7].valueFrom.resourceFieldRef.divisor",
                "spec.env[8].valueFrom.resourceFieldRef.divisor",
            ]
        );
    }

    #[test]
    fn keys_and_zero_quantities() {
        for good in ["a", "A.b-c_d", ".a", "a..b", &"k".repeat(253)] {
            assert!(super::is_config_map_key(good), "{good}");
        }
        for bad in ["", ".", "..", "..a", "a/b", "a b", &"k".repeat(254)] {
            assert!(!super::is_config_map_key(bad), "{bad}");
        }
        for zero in ["0", "0.0", "0Mi", "-0", "0m"] {
            assert!(super::is_zero_quantity(zero), "{zero}");
        }
        for nonzero in ["1", "0.5", "", "Mi", "10"] {
            assert!(!super::is_zero_quantity(nonzero), "{nonzero}");
        }
    }
}
