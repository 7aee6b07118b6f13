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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
