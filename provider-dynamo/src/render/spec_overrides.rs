//! `provider.overrides.spec`: the graph's own fields, merged into the rendered spec, in the
//! shape of the version rendered: `spec.services.<name>` on `v1alpha1` (Dynamo 1.1's map),
//! `spec.components[]` by `name` on `v1beta1`, never both. The wrong shape for the served
//! version, or both at once, is refused with the Go AI Runway's messages. What is merged is
//! checked like the rest of the render: the Pod Security rules before apply, the installed
//! schema at apply (a field it lacks is refused, never pruned).
//!
//! Merging: objects merge key by key (`null` removes a key, as a JSON merge patch); lists of
//! objects that all carry a `name` (containers, env, volumes, components) merge entry by entry
//! on it, new names appended; any other value replaces the rendered one.

use airunway_api::provider::RenderError;
use airunway_api::serde_json::{Map, Value};

/// Refused on `v1alpha1`: `spec.components`.
pub const COMPONENTS_NEED_V1BETA1: &str =
    "spec.components overrides require the v1beta1 DGD API; use spec.services on v1alpha1";
/// Refused on `v1beta1`: both shapes.
pub const MIXED: &str = "cannot mix spec.services and spec.components overrides";
/// Refused on `v1beta1`: `spec.services` alone (the legacy shape is not converted).
pub const SERVICES_ON_V1BETA1: &str = "cannot render legacy DGD inputs as beta: spec.services overrides are not converted; use native spec.components overrides";

fn invalid(message: impl Into<String>) -> RenderError {
    RenderError::InvalidOverrides(message.into())
}

/// `patch` merged into `base` (see the module documentation).
pub fn merge(base: &mut Value, patch: &Value) {
    match (base, patch) {
        (Value::Object(base), Value::Object(patch)) => {
            for (key, value) in patch {
                if value.is_null() {
                    base.remove(key);
                } else if let Some(existing) = base.get_mut(key) {
                    merge(existing, value);
                } else {
                    base.insert(key.clone(), value.clone());
                }
            }
        }
        (Value::Array(base), Value::Array(patch)) if named(base) && named(patch) => {
            for entry in patch {
                match base.iter_mut().find(|e| e["name"] == entry["name"]) {
                    Some(existing) => merge(existing, entry),
                    None => base.push(entry.clone()),
                }
            }
        }
        (base, patch) => *base = patch.clone(),
    }
}

/// A non-empty list of objects each with a string `name`.
fn named(list: &[Value]) -> bool {
    !list.is_empty() && list.iter().all(|e| e["name"].is_string())
}

/// Merges `provider.overrides.spec` (`overrides`, when given) into the rendered `spec` of
/// version `version` (`v1alpha1` or `v1beta1`).
pub fn apply(
    spec: &mut Value,
    overrides: Option<&Value>,
    v1beta1: bool,
) -> Result<(), RenderError> {
    let Some(overrides) = overrides else {
        return Ok(());
    };
    let Some(overrides) = overrides.as_object() else {
        return Err(invalid("provider.overrides.spec must be an object"));
    };
    let services = overrides.get("services");
    let components = overrides.get("components");
    if !v1beta1 {
        if components.is_some() {
            return Err(invalid(COMPONENTS_NEED_V1BETA1));
        }
        if let Some(services) = services {
            if !services.is_object() {
                return Err(invalid("spec.services must be an object"));
            }
            merge(&mut spec["services"], services);
        }
        return Ok(());
    }
    match (services, components) {
        (Some(_), Some(_)) => Err(invalid(MIXED)),
        (Some(_), None) => Err(invalid(SERVICES_ON_V1BETA1)),
        (None, None) => Ok(()),
        (None, Some(components)) => {
            let entries = components
                .as_array()
                .ok_or_else(|| invalid("spec.components must be an array"))?;
            let mut seen: Vec<&str> = Vec::new();
            for entry in entries {
                let entry: &Map<String, Value> = entry
                    .as_object()
                    .ok_or_else(|| invalid("component override must be an object"))?;
                let name = entry
                    .get("name")
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty())
                    .ok_or_else(|| invalid("component override requires name"))?;
                if seen.contains(&name) {
                    return Err(invalid(format!("duplicate component override {name:?}")));
                }
                seen.push(name);
            }
            let Some(rendered) = spec["components"].as_array_mut() else {
                return Ok(());
            };
            for entry in entries {
                match rendered.iter_mut().find(|c| c["name"] == entry["name"]) {
                    Some(existing) => merge(existing, entry),
                    None => rendered.push(entry.clone()),
                }
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use airunway_api::serde_json::json;

    #[test]
    fn merge_by_key_by_name_and_replace() {
        let mut base = json!({"a": 1, "b": {"c": 2, "d": 3},
            "containers": [{"name": "main", "image": "x", "args": ["1"]}], "tolerations": [{"key": "k"}]});
        merge(
            &mut base,
            &json!({"a": null, "b": {"c": 4}, "containers": [{"name": "main", "args": ["2"]}, {"name": "side", "image": "y"}],
                "tolerations": [{"key": "j"}]}),
        );
        assert_eq!(
            base,
            json!({"b": {"c": 4, "d": 3},
                "containers": [{"name": "main", "image": "x", "args": ["2"]}, {"name": "side", "image": "y"}],
                "tolerations": [{"key": "j"}]})
        );
    }

    #[test]
    fn the_shape_must_fit_the_version() {
        let services = json!({"services": {"Frontend": {"replicas": 2}}});
        let components = json!({"components": [{"name": "Frontend", "replicas": 2}]});
        let both = json!({"services": {}, "components": []});
        let alpha =
            || json!({"services": {"Frontend": {"replicas": 1, "componentType": "frontend"}}});
        let beta =
            || json!({"components": [{"name": "Frontend", "type": "frontend", "replicas": 1}]});

        let mut spec = alpha();
        apply(&mut spec, Some(&services), false).unwrap();
        assert_eq!(
            spec["services"]["Frontend"],
            json!({"replicas": 2, "componentType": "frontend"})
        );
        let message = |r: Result<(), RenderError>| r.unwrap_err().to_string();
        assert_eq!(
            message(apply(&mut alpha(), Some(&components), false)),
            COMPONENTS_NEED_V1BETA1
        );
        assert_eq!(
            message(apply(&mut alpha(), Some(&both), false)),
            COMPONENTS_NEED_V1BETA1
        );

        let mut spec = beta();
        apply(&mut spec, Some(&components), true).unwrap();
        assert_eq!(
            spec["components"][0],
            json!({"name": "Frontend", "type": "frontend", "replicas": 2})
        );
        assert_eq!(message(apply(&mut beta(), Some(&both), true)), MIXED);
        assert_eq!(
            message(apply(&mut beta(), Some(&services), true)),
            SERVICES_ON_V1BETA1
        );
        assert_eq!(
            message(apply(
                &mut beta(),
                Some(&json!({"components": [{"replicas": 1}]})),
                true
            )),
            "component override requires name"
        );
        assert_eq!(
            message(apply(
                &mut beta(),
                Some(&json!({"components": [{"name": "a"}, {"name": "a"}]})),
                true
            )),
            "duplicate component override \"a\""
        );
        assert_eq!(
            message(apply(
                &mut beta(),
                Some(&json!({"components": {"name": "a"}})),
                true
            )),
            "spec.components must be an array"
        );
        // A new component is added.
        let mut spec = beta();
        apply(
            &mut spec,
            Some(&json!({"components": [{"name": "Planner", "type": "planner"}]})),
            true,
        )
        .unwrap();
        assert_eq!(spec["components"][1]["name"], "Planner");
    }
}
