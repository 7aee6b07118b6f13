//! `spec.provider.overrides`, declared once per provider as data ([`OverrideSchema`], from
//! [`Provider::overrides`](super::Provider::overrides)). From the one declaration the SDK
//! derives the registration's `overridePaths` (the core's admission warning), the check before
//! the render (unknown keys at any depth: an `UnknownOverride` warning event; values of the
//! wrong type and refused keys: `InvalidOverrides`, nothing rendered) and the text the docs
//! show ([`OverrideSchema::markdown`]). A render then only reads values the check accepted
//! ([`get`]).

use serde_json::{Map, Value};

use super::rendered::{RenderError, RenderWarning};
use crate::constants::event_reasons;

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
    /// A nested object with these keys; any other key is unknown (ignored, with a warning).
    Object(&'static [(&'static str, OverrideType)]),
    /// Any value, taken as given (e.g. deep-merged into the rendered object).
    Any,
    /// An object with these keys; any other key is taken as given. Anything but an object
    /// (`null` included) is refused: `<path> <whole> and is not allowed`.
    Open {
        /// The keys checked.
        keys: &'static [(&'static str, OverrideType)],
        /// Why a value that is not an object is refused, e.g. `would replace the pod spec
        /// wholesale`.
        whole: &'static str,
    },
    /// An object with only these keys; any other key is refused (`overriding "<path>" is not
    /// allowed: only <keys> of <what> may be overridden`), as is anything but an object.
    Closed {
        /// The keys allowed.
        keys: &'static [(&'static str, OverrideType)],
        /// What the object is, e.g. `the pod spec`.
        what: &'static str,
        /// Why a value that is not an object is refused.
        whole: &'static str,
    },
    /// Refused wherever given: `<path> <why> and is not allowed`.
    Refused(&'static str),
}

impl OverrideType {
    fn describe(&self) -> String {
        match self {
            OverrideType::String => "a string".into(),
            OverrideType::OneOf(values) => format!("one of {}", values.join(", ")),
            OverrideType::Count => "a non-negative integer".into(),
            OverrideType::Quantity => "a quantity string such as \"4\" or \"8Gi\"".into(),
            OverrideType::StringMap => "a map of strings".into(),
            OverrideType::Object(_) | OverrideType::Open { .. } | OverrideType::Closed { .. } => {
                "an object".into()
            }
            OverrideType::Any => "any value".into(),
            OverrideType::Refused(why) => format!("refused ({why})"),
        }
    }
}

/// How a provider reads `spec.provider.overrides`: the keys it takes (a tree of
/// [`OverrideType`]s), the keys refused at any depth, and what a JSON `null` means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverrideSchema {
    root: OverrideType,
    refused_anywhere: &'static [&'static [&'static str]],
    pods: &'static str,
    nulls_delete: bool,
}

impl OverrideSchema {
    /// Not declared (the default): every key is taken as given, nothing is checked, the
    /// registration carries no `overridePaths` (no admission warning).
    pub const UNDECLARED: OverrideSchema = OverrideSchema {
        root: OverrideType::Open {
            keys: &[],
            whole: "",
        },
        refused_anywhere: &[],
        pods: "",
        nulls_delete: true,
    };

    /// No overrides: every key is reported unknown and ignored.
    pub const NONE: OverrideSchema = OverrideSchema::keys(&[]);

    /// These keys, typed; any other key is unknown (ignored, with a warning).
    pub const fn keys(keys: &'static [(&'static str, OverrideType)]) -> OverrideSchema {
        OverrideSchema {
            root: OverrideType::Object(keys),
            refused_anywhere: &[],
            pods: "",
            nulls_delete: false,
        }
    }

    /// An object merged into what the provider renders: these keys checked, any other key
    /// taken as given.
    pub const fn open(keys: &'static [(&'static str, OverrideType)]) -> OverrideSchema {
        OverrideSchema {
            root: OverrideType::Open { keys, whole: "" },
            refused_anywhere: &[],
            pods: "",
            nulls_delete: true,
        }
    }

    /// Refuses the keys of `lists` at any depth, whatever their value: `<paths> would escalate
    /// the privileges of <pods> and is not allowed` (e.g. `the Ray pods`).
    pub const fn refusing_anywhere(
        self,
        lists: &'static [&'static [&'static str]],
        pods: &'static str,
    ) -> OverrideSchema {
        OverrideSchema {
            refused_anywhere: lists,
            pods,
            ..self
        }
    }

    /// A JSON `null` for a declared key (or an entry of a map of strings) deletes the
    /// provider's default instead of being a type error.
    pub const fn nulls_delete_defaults(self) -> OverrideSchema {
        OverrideSchema {
            nulls_delete: true,
            ..self
        }
    }

    /// The registration's `overridePaths`: every declared leaf, dot-separated, in declaration
    /// order (`<path>.*` for an open object below the root); `None` when the root takes any
    /// key (nothing is unused).
    pub fn paths(&self) -> Option<Vec<String>> {
        fn walk(keys: &[(&str, OverrideType)], prefix: &str, out: &mut Vec<String>) {
            for (key, kind) in keys {
                let path = if prefix.is_empty() {
                    (*key).to_string()
                } else {
                    format!("{prefix}.{key}")
                };
                match kind {
                    OverrideType::Object(inner) => walk(inner, &path, out),
                    OverrideType::Open { .. } => out.push(format!("{path}.*")),
                    OverrideType::Refused(_) => {}
                    _ => out.push(path),
                }
            }
        }
        match self.root {
            OverrideType::Object(keys) | OverrideType::Closed { keys, .. } => {
                let mut out = Vec::new();
                walk(keys, "", &mut out);
                Some(out)
            }
            _ => None,
        }
    }

    /// Checks a deployment's overrides: the warnings (`UnknownOverride`, naming each unknown
    /// key and what `display_name` supports), or the `InvalidOverrides` error (a key refused
    /// at any depth; else the first refused key; else every type error).
    pub fn check(
        &self,
        overrides: Option<&Map<String, Value>>,
        display_name: &str,
    ) -> Result<Vec<RenderWarning>, RenderError> {
        let Some(map) = overrides else {
            return Ok(Vec::new());
        };
        let keys: Vec<&str> = self
            .refused_anywhere
            .iter()
            .flat_map(|l| l.iter())
            .copied()
            .collect();
        let escalating = find_keys(map, &keys);
        if !escalating.is_empty() {
            return Err(RenderError::InvalidOverrides(format!(
                "invalid provider.overrides: {} would escalate the privileges of {} and is not allowed",
                escalating.join(", "),
                self.pods
            )));
        }
        let mut found = Found::default();
        let (keys, policy) = match self.root {
            OverrideType::Object(keys) => (keys, Others::Unknown),
            OverrideType::Open { keys, .. } => (keys, Others::Taken),
            OverrideType::Closed { keys, what, .. } => (keys, Others::Refused(what)),
            _ => (&[][..], Others::Taken),
        };
        walk_object(
            "provider.overrides",
            map,
            keys,
            policy,
            self.nulls_delete,
            &mut found,
        );
        if let Some(refused) = found.refused.first() {
            return Err(RenderError::InvalidOverrides(format!(
                "invalid provider.overrides: {refused}"
            )));
        }
        if !found.errors.is_empty() {
            return Err(RenderError::InvalidOverrides(format!(
                "invalid provider.overrides: {}",
                found.errors.join("; ")
            )));
        }
        let paths = self.paths().unwrap_or_default();
        let supported = if paths.is_empty() {
            format!(": {display_name} currently has no supported overrides")
        } else {
            format!(" ({display_name} supports {})", paths.join(", "))
        };
        Ok(found
            .unknown
            .iter()
            .map(|path| RenderWarning {
                reason: event_reasons::UNKNOWN_OVERRIDE,
                message: format!("unknown key {path} is ignored{supported}"),
            })
            .collect())
    }

    /// What the docs show: a Markdown table of the keys (path and value), then the keys
    /// refused at any depth and what `null` means. Each provider's page contains it exactly
    /// (a unit test per provider).
    pub fn markdown(&self) -> String {
        fn rows(keys: &[(&str, OverrideType)], prefix: &str, out: &mut Vec<String>) {
            for (key, kind) in keys {
                let path = format!("{prefix}{key}");
                match kind {
                    OverrideType::Object(inner) => rows(inner, &format!("{path}."), out),
                    OverrideType::Open { keys, whole } => {
                        out.push(format!("| `{path}` | an object; anything else {whole} |"));
                        rows(keys, &format!("{path}."), out);
                        out.push(format!("| `{path}.<other>` | taken as given |"));
                    }
                    OverrideType::Closed { keys, what, whole } => {
                        out.push(format!("| `{path}` | an object; anything else {whole} |"));
                        rows(keys, &format!("{path}."), out);
                        out.push(format!(
                            "| `{path}.<other>` | refused: only {} of {what} may be overridden |",
                            allowed(keys)
                        ));
                    }
                    OverrideType::Refused(why) => {
                        out.push(format!("| `{path}` | refused: {why} |"))
                    }
                    OverrideType::Any => out.push(format!("| `{path}` | taken as given |")),
                    other => out.push(format!("| `{path}` | {} |", other.describe())),
                }
            }
        }
        let mut out = vec!["| Key | Value |".to_string(), "|---|---|".to_string()];
        match self.root {
            OverrideType::Object(keys) => {
                if keys.is_empty() {
                    return "No key is supported: every key of `provider.overrides` is reported \
                            (`UnknownOverride`) and ignored.\n"
                        .to_string();
                }
                rows(keys, "", &mut out);
                out.push("| any other key | ignored, with an `UnknownOverride` warning |".into());
            }
            OverrideType::Open { keys, .. } => {
                rows(keys, "", &mut out);
                out.push("| any other key | taken as given |".into());
            }
            OverrideType::Closed { keys, what, .. } => {
                rows(keys, "", &mut out);
                out.push(format!(
                    "| any other key | refused: only {} of {what} may be overridden |",
                    allowed(keys)
                ));
            }
            _ => {}
        }
        let mut text = out.join("\n");
        text.push('\n');
        let refused: Vec<String> = self
            .refused_anywhere
            .iter()
            .flat_map(|l| l.iter())
            .map(|k| format!("`{k}`"))
            .collect();
        if !refused.is_empty() {
            text.push_str(&format!(
                "\nRefused at any depth (they would escalate the privileges of {}): {}.\n",
                self.pods,
                refused.join(", ")
            ));
        }
        if self.nulls_delete {
            text.push_str("\nA JSON `null` deletes the key (the provider's default).\n");
        }
        text
    }
}

/// The keys of a closed object that are not refused, for messages.
fn allowed(keys: &[(&str, OverrideType)]) -> String {
    keys.iter()
        .filter(|(_, kind)| !matches!(kind, OverrideType::Refused(_)))
        .map(|(key, _)| *key)
        .collect::<Vec<_>>()
        .join(", ")
}

/// What an object does with keys it does not declare.
#[derive(Clone, Copy)]
enum Others {
    Unknown,
    Taken,
    Refused(&'static str),
}

/// The findings of one walk over the overrides.
#[derive(Default)]
struct Found {
    unknown: Vec<String>,
    refused: Vec<String>,
    errors: Vec<String>,
}

/// Walks `map` against `keys`: the declared keys in declaration order, then the others.
fn walk_object(
    path: &str,
    map: &Map<String, Value>,
    keys: &[(&str, OverrideType)],
    others: Others,
    nulls_delete: bool,
    found: &mut Found,
) {
    for (key, expected) in keys {
        if let Some(value) = map.get(*key) {
            walk_value(
                &format!("{path}.{key}"),
                value,
                expected,
                nulls_delete,
                found,
            );
        }
    }
    for key in map.keys() {
        if keys.iter().any(|(k, _)| k == key) {
            continue;
        }
        let here = format!("{path}.{key}");
        match others {
            Others::Unknown => found.unknown.push(here),
            Others::Taken => {}
            Others::Refused(what) => found.refused.push(format!(
                "overriding \"{}\" is not allowed: only {} of {what} may be overridden",
                here.trim_start_matches("provider.overrides."),
                allowed(keys)
            )),
        }
    }
}

fn walk_value(
    here: &str,
    value: &Value,
    expected: &OverrideType,
    nulls_delete: bool,
    found: &mut Found,
) {
    let ok = match (expected, value) {
        (OverrideType::Refused(why), _) => {
            found
                .refused
                .push(format!("{here} {why} and is not allowed"));
            return;
        }
        (OverrideType::Open { keys, .. }, Value::Object(m)) => {
            walk_object(here, m, keys, Others::Taken, nulls_delete, found);
            return;
        }
        (OverrideType::Closed { keys, what, .. }, Value::Object(m)) => {
            walk_object(here, m, keys, Others::Refused(what), nulls_delete, found);
            return;
        }
        (OverrideType::Open { whole, .. } | OverrideType::Closed { whole, .. }, _) => {
            found
                .refused
                .push(format!("{here} {whole} and is not allowed"));
            return;
        }
        (OverrideType::Any, _) => true,
        (_, Value::Null) if nulls_delete => true,
        (OverrideType::String, Value::String(_)) => true,
        (OverrideType::OneOf(values), Value::String(s)) => values.contains(&s.as_str()),
        (OverrideType::Count, Value::Number(n)) => n.as_u64().is_some(),
        (OverrideType::Quantity, Value::String(s)) => is_quantity(s),
        (OverrideType::StringMap, Value::Object(m)) => m
            .values()
            .all(|v| v.is_string() || (nulls_delete && v.is_null())),
        (OverrideType::Object(keys), Value::Object(m)) => {
            walk_object(here, m, keys, Others::Unknown, nulls_delete, found);
            true
        }
        _ => false,
    };
    if !ok {
        found.errors.push(format!(
            "{here} must be {}, got {value}",
            expected.describe()
        ));
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

/// The value at a dotted path in the overrides (after [`OverrideSchema::check`] passed).
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
    #![allow(clippy::panic)]
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

    fn messages(warnings: &[RenderWarning]) -> Vec<&str> {
        warnings.iter().map(|w| w.message.as_str()).collect()
    }

    fn error(result: Result<Vec<RenderWarning>, RenderError>) -> String {
        match result {
            Err(RenderError::InvalidOverrides(message)) => message,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unknown_keys_and_type_errors() {
        let schema = OverrideSchema::keys(SCHEMA);
        let overrides = json!({"routerMode": "kv", "routrMode": "kv", "frontend": {"replicsa": 2, "resources": {"cpu": "4"}}});
        let warnings = schema.check(overrides.as_object(), "Dynamo").unwrap();
        assert_eq!(
            messages(&warnings),
            [
                "unknown key provider.overrides.frontend.replicsa is ignored (Dynamo supports routerMode, frontend.replicas, frontend.resources.cpu, frontend.resources.memory)",
                "unknown key provider.overrides.routrMode is ignored (Dynamo supports routerMode, frontend.replicas, frontend.resources.cpu, frontend.resources.memory)",
            ]
        );
        assert!(warnings.iter().all(|w| w.reason == "UnknownOverride"));
        let bad = json!({"frontend": {"replicas": "two", "resources": {"cpu": 4}}});
        assert_eq!(
            error(schema.check(bad.as_object(), "Dynamo")),
            "invalid provider.overrides: provider.overrides.frontend.replicas must be a non-negative integer, got \"two\"; provider.overrides.frontend.resources.cpu must be a quantity string such as \"4\" or \"8Gi\", got 4"
        );
        assert_eq!(
            error(schema.check(json!({"routerMode": "random"}).as_object(), "Dynamo")),
            "invalid provider.overrides: provider.overrides.routerMode must be one of kv, round-robin, none, got \"random\""
        );
        assert_eq!(
            error(schema.check(json!({"routerMode": null}).as_object(), "Dynamo")),
            "invalid provider.overrides: provider.overrides.routerMode must be one of kv, round-robin, none, got null"
        );
        assert_eq!(schema.check(None, "Dynamo"), Ok(Vec::new()));
        assert_eq!(
            get(overrides.as_object(), "frontend.resources.cpu"),
            Some(&json!("4"))
        );
        assert_eq!(
            schema.paths().unwrap(),
            [
                "routerMode",
                "frontend.replicas",
                "frontend.resources.cpu",
                "frontend.resources.memory"
            ]
        );
    }

    #[test]
    fn no_overrides_undeclared_nulls_and_keys_refused_anywhere() {
        let none = OverrideSchema::NONE;
        assert_eq!(none.paths(), Some(Vec::new()));
        assert_eq!(
            messages(
                &none
                    .check(json!({"a": {"b": 1}}).as_object(), "KAITO")
                    .unwrap()
            ),
            [
                "unknown key provider.overrides.a is ignored: KAITO currently has no supported overrides"
            ]
        );
        let undeclared = OverrideSchema::UNDECLARED;
        assert_eq!(undeclared.paths(), None);
        assert_eq!(
            undeclared.check(json!({"a": null, "securityContext": {}}).as_object(), "X"),
            Ok(Vec::new())
        );
        let deleting = OverrideSchema::keys(SCHEMA)
            .nulls_delete_defaults()
            .refusing_anywhere(&[&["securityContext"], &["hostPath"]], "the Ray pods");
        assert_eq!(
            messages(
                &deleting
                    .check(
                        json!({"routerMode": null, "frontend": {"resources": {"gpu": null}}})
                            .as_object(),
                        "KubeRay"
                    )
                    .unwrap()
            ),
            [
                "unknown key provider.overrides.frontend.resources.gpu is ignored (KubeRay supports routerMode, frontend.replicas, frontend.resources.cpu, frontend.resources.memory)"
            ]
        );
        assert_eq!(
            error(deleting.check(
                json!({"frontend": {"x": [{"hostPath": null}], "securityContext": 1}}).as_object(),
                "KubeRay"
            )),
            "invalid provider.overrides: provider.overrides.frontend.securityContext, provider.overrides.frontend.x[0].hostPath would escalate the privileges of the Ray pods and is not allowed"
        );
    }

    const POD: OverrideSchema = OverrideSchema::open(&[
        ("metadata", OverrideType::Refused("is set by the provider")),
        (
            "spec",
            OverrideType::Open {
                keys: &[(
                    "template",
                    OverrideType::Closed {
                        keys: &[
                            (
                                "containers",
                                OverrideType::Refused("would replace the container"),
                            ),
                            ("tolerations", OverrideType::Any),
                            ("nodeSelector", OverrideType::Any),
                        ],
                        what: "the template",
                        whole: "would replace the template wholesale",
                    },
                )],
                whole: "would replace the spec wholesale",
            },
        ),
    ]);

    #[test]
    fn open_and_closed_objects_refuse_the_first_refused_key_in_declaration_order() {
        assert_eq!(POD.paths(), None);
        assert_eq!(
            POD.check(
                json!({"spec": {"replicas": 2, "template": {"tolerations": null}}, "extra": 1})
                    .as_object(),
                "vLLM"
            ),
            Ok(Vec::new())
        );
        for (overrides, message) in [
            (
                json!({"spec": null}),
                "provider.overrides.spec would replace the spec wholesale and is not allowed",
            ),
            (
                json!({"spec": {"template": []}}),
                "provider.overrides.spec.template would replace the template wholesale and is not allowed",
            ),
            (
                json!({"spec": {"template": {"affinity": {}, "containers": []}}}),
                "provider.overrides.spec.template.containers would replace the container and is not allowed",
            ),
            (
                json!({"spec": {"template": {"affinity": {}}}}),
                "overriding \"spec.template.affinity\" is not allowed: only tolerations, nodeSelector of the template may be overridden",
            ),
            (
                json!({"metadata": {}, "spec": {"template": {"affinity": {}}}}),
                "provider.overrides.metadata is set by the provider and is not allowed",
            ),
        ] {
            assert_eq!(
                error(POD.check(overrides.as_object(), "vLLM")),
                format!("invalid provider.overrides: {message}"),
                "{overrides}"
            );
        }
    }

    #[test]
    fn markdown_lists_every_key() {
        assert_eq!(
            OverrideSchema::keys(SCHEMA).markdown(),
            "| Key | Value |\n|---|---|\n| `routerMode` | one of kv, round-robin, none |\n| `frontend.replicas` | a non-negative integer |\n| `frontend.resources.cpu` | a quantity string such as \"4\" or \"8Gi\" |\n| `frontend.resources.memory` | a quantity string such as \"4\" or \"8Gi\" |\n| any other key | ignored, with an `UnknownOverride` warning |\n"
        );
        let text = POD.markdown();
        assert!(text.contains("| `spec.template.<other>` | refused: only tolerations, nodeSelector of the template may be overridden |"), "{text}");
        assert!(text.ends_with("| any other key | taken as given |\n\nA JSON `null` deletes the key (the provider's default).\n"), "{text}");
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
