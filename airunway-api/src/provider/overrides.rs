//! Checking `spec.provider.overrides` against the keys a provider supports (pure): unknown keys
//! at any depth are reported (typo help, a warning event), values of the wrong type are errors
//! naming the path and the expected type.

use serde_json::{Map, Value};

/// The expected type of an override key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverrideType {
    /// A string.
    String,
    /// One of the listed strings.
    OneOf(&'static [&'static str]),
    /// A non-negative integer.
    Count,
    /// A Kubernetes quantity given as a string (`"4"`, `"8Gi"`).
    Quantity,
    /// A map of string values.
    StringMap,
    /// A nested object with these keys.
    Object(&'static [(&'static str, OverrideType)]),
}

impl OverrideType {
    fn describe(&self) -> String {
        match self {
            OverrideType::String => "a string".into(),
            OverrideType::OneOf(values) => format!("one of {}", values.join(", ")),
            OverrideType::Count => "a non-negative integer".into(),
            OverrideType::Quantity => "a quantity string such as \"4\" or \"8Gi\"".into(),
            OverrideType::StringMap => "a map of strings".into(),
            OverrideType::Object(_) => "an object".into(),
        }
    }
}

/// The outcome of [`check`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OverrideCheck {
    /// Paths of keys the provider does not know (ignored).
    pub unknown: Vec<String>,
    /// Type errors (`<path> must be <type>, got <value>`).
    pub errors: Vec<String>,
}

/// Checks `overrides` against `schema`.
pub fn check(
    overrides: Option<&Map<String, Value>>,
    schema: &'static [(&'static str, OverrideType)],
) -> OverrideCheck {
    let mut out = OverrideCheck::default();
    if let Some(map) = overrides {
        walk("provider.overrides", map, schema, &mut out);
    }
    out
}

fn walk(
    path: &str,
    map: &Map<String, Value>,
    schema: &'static [(&'static str, OverrideType)],
    out: &mut OverrideCheck,
) {
    for (key, value) in map {
        let here = format!("{path}.{key}");
        match schema.iter().find(|(k, _)| k == key) {
            None => out.unknown.push(here),
            Some((_, expected)) => {
                let ok = match (expected, value) {
                    (OverrideType::String, Value::String(_)) => true,
                    (OverrideType::OneOf(values), Value::String(s)) => values.contains(&s.as_str()),
                    (OverrideType::Count, Value::Number(n)) => n.as_u64().is_some(),
                    (OverrideType::Quantity, Value::String(s)) => is_quantity(s),
                    (OverrideType::StringMap, Value::Object(m)) => m.values().all(Value::is_string),
                    (OverrideType::Object(keys), Value::Object(m)) => {
                        walk(&here, m, keys, out);
                        true
                    }
                    _ => false,
                };
                if !ok {
                    out.errors.push(format!(
                        "{here} must be {}, got {value}",
                        expected.describe()
                    ));
                }
            }
        }
    }
}

/// A Kubernetes quantity: a decimal number with an optional suffix (`m`, `k`, `M`, `G`, `T`,
/// `P`, `E`, `Ki`, `Mi`, `Gi`, `Ti`, `Pi`, `Ei`) or exponent.
pub fn is_quantity(s: &str) -> bool {
    let number_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(number_end);
    let number_ok =
        !number.is_empty() && number.trim_start_matches(['+', '-']).parse::<f64>().is_ok();
    let suffix_ok = matches!(
        suffix,
        "" | "m" | "k" | "M" | "G" | "T" | "P" | "E" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei"
    ) || (suffix.starts_with(['e', 'E'])
        && suffix[1..]
            .trim_start_matches(['+', '-'])
            .parse::<u32>()
            .is_ok());
    number_ok && suffix_ok
}

/// The value at a dotted path in the overrides (after [`check`] passed).
pub fn get<'a>(overrides: Option<&'a Map<String, Value>>, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('.');
    let mut node = overrides?.get(parts.next()?)?;
    for part in parts {
        node = node.get(part)?;
    }
    Some(node)
}

/// Deep-merges `overrides` into `target`: objects merge key by key, a JSON `null` deletes the
/// key, any other value (a scalar, a list) replaces what is there.
pub fn deep_merge(target: &mut Value, overrides: &Value) {
    match (target, overrides) {
        (Value::Object(target), Value::Object(overrides)) => {
            for (key, value) in overrides {
                match value {
                    Value::Null => {
                        target.remove(key);
                    }
                    Value::Object(_) => {
                        let slot = target
                            .entry(key.clone())
                            .or_insert_with(|| Value::Object(Map::new()));
                        if !slot.is_object() {
                            *slot = Value::Object(Map::new());
                        }
                        deep_merge(slot, value);
                    }
                    other => {
                        target.insert(key.clone(), other.clone());
                    }
                }
            }
        }
        (target, overrides) => *target = overrides.clone(),
    }
}

/// The paths (`provider.overrides.a.b`, `…[i]` in lists) of every key in `overrides`, at any
/// depth, that is one of `keys`: for refusing overrides that would escalate the privileges of
/// the pods (see [`crate::constants::ESCALATING_OVERRIDE_KEYS`]).
pub fn find_keys(overrides: &Map<String, Value>, keys: &[&str]) -> Vec<String> {
    fn walk(path: &str, value: &Value, keys: &[&str], found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    let here = format!("{path}.{key}");
                    if keys.contains(&key.as_str()) {
                        found.push(here.clone());
                    }
                    walk(&here, child, keys, found);
                }
            }
            Value::Array(items) => {
                for (index, child) in items.iter().enumerate() {
                    walk(&format!("{path}[{index}]"), child, keys, found);
                }
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(
        "provider.overrides",
        &Value::Object(overrides.clone()),
        keys,
        &mut found,
    );
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deep_merge_merges_objects_replaces_the_rest_and_deletes_nulls() {
        let mut target = json!({"spec": {"replicas": 1, "template": {"spec": {"nodeSelector": {"a": "1"}, "containers": [{"name": "x"}]}}}, "keep": true});
        deep_merge(
            &mut target,
            &json!({"spec": {"replicas": 3, "minReadySeconds": 5, "template": {"spec": {"nodeSelector": {"a": null, "b": "2"}, "containers": []}}}, "keep": null, "scalar": {"x": 1}}),
        );
        assert_eq!(
            target,
            json!({"spec": {"replicas": 3, "minReadySeconds": 5, "template": {"spec": {"nodeSelector": {"b": "2"}, "containers": []}}}, "scalar": {"x": 1}})
        );
        let mut scalar = json!({"a": 1});
        deep_merge(&mut scalar, &json!({"a": {"b": null, "c": 2}}));
        assert_eq!(scalar, json!({"a": {"c": 2}}));
    }

    #[test]
    fn finds_keys_at_any_depth_and_in_lists() {
        let overrides = json!({"spec": {"template": {"spec": {"hostNetwork": true,
            "containers": [{"name": "c", "securityContext": {"privileged": true}}]}}}});
        assert_eq!(
            find_keys(
                overrides.as_object().unwrap(),
                &crate::constants::ESCALATING_OVERRIDE_KEYS
            ),
            [
                "provider.overrides.spec.template.spec.containers[0].securityContext",
                "provider.overrides.spec.template.spec.hostNetwork",
            ]
        );
    }

    const SCHEMA: &[(&str, OverrideType)] = &[
        (
            "routerMode",
            OverrideType::OneOf(&["kv", "round-robin", "none"]),
        ),
        (
            "frontend",
            OverrideType::Object(&[
                ("replicas", OverrideType::Count),
                (
                    "resources",
                    OverrideType::Object(&[
                        ("cpu", OverrideType::Quantity),
                        ("memory", OverrideType::Quantity),
                    ]),
                ),
            ]),
        ),
    ];

    #[test]
    fn unknown_keys_and_type_errors() {
        let overrides = json!({"routerMode": "kv", "routrMode": "kv", "frontend": {"replicsa": 2, "replicas": "two", "resources": {"cpu": 4}}});
        let result = check(overrides.as_object(), SCHEMA);
        assert_eq!(
            result.unknown,
            [
                "provider.overrides.frontend.replicsa",
                "provider.overrides.routrMode"
            ]
        );
        assert_eq!(
            result.errors,
            [
                "provider.overrides.frontend.replicas must be a non-negative integer, got \"two\"",
                "provider.overrides.frontend.resources.cpu must be a quantity string such as \"4\" or \"8Gi\", got 4",
            ]
        );
        let bad_mode = check(json!({"routerMode": "random"}).as_object(), SCHEMA);
        assert_eq!(
            bad_mode.errors,
            ["provider.overrides.routerMode must be one of kv, round-robin, none, got \"random\""]
        );
        assert_eq!(check(None, SCHEMA), OverrideCheck::default());
        assert_eq!(
            get(overrides.as_object(), "frontend.resources.cpu"),
            Some(&json!(4))
        );
    }

    #[test]
    fn quantities() {
        for ok in ["4", "0.5", "500m", "8Gi", "1e3", "16Gi"] {
            assert!(is_quantity(ok), "{ok}");
        }
        for bad in ["", "Gi", "8GB", "four", "1.2.3"] {
            assert!(!is_quantity(bad), "{bad}");
        }
    }
}
