//! Reading `metadata.managedFields`: which status fields a field manager owns (pure).
//!
//! The core uses it to apply exactly the fields it owns, to stop writing `phase`/`message` once
//! a provider has taken them, and to leave `status.provider.name` alone when a custom selector
//! set it; providers use it to release what they own.

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

/// The status fields one or more managers own.
#[derive(Clone, Debug, Default)]
pub struct OwnedFields {
    sets: Vec<Value>,
}

impl OwnedFields {
    /// Fields of the status subresource owned by `manager`.
    pub fn of(meta: &ObjectMeta, manager: &str) -> OwnedFields {
        Self::matching(meta, |m| m == manager)
    }

    /// Fields of the status subresource owned by any manager except `manager`.
    pub fn of_others(meta: &ObjectMeta, manager: &str) -> OwnedFields {
        Self::matching(meta, |m| m != manager)
    }

    fn matching(meta: &ObjectMeta, accept: impl Fn(&str) -> bool) -> OwnedFields {
        let sets = meta
            .managed_fields
            .iter()
            .flatten()
            .filter(|e| e.manager.as_deref().is_some_and(&accept))
            .filter(|e| e.subresource.as_deref() == Some("status"))
            .filter_map(|e| e.fields_v1.as_ref().map(|f| f.0.clone()))
            .collect();
        OwnedFields { sets }
    }

    /// Whether the path (e.g. `["status", "phase"]`) is owned.
    pub fn owns(&self, path: &[&str]) -> bool {
        self.sets.iter().any(|set| {
            let mut node = set;
            for segment in path {
                match node.get(format!("f:{segment}")) {
                    Some(next) => node = next,
                    None => return false,
                }
            }
            true
        })
    }

    /// Condition types owned in `status.conditions`.
    pub fn condition_types(&self) -> BTreeSet<String> {
        self.sets
            .iter()
            .filter_map(|set| {
                set.get("f:status")
                    .and_then(|s| s.get("f:conditions"))
                    .and_then(Value::as_object)
            })
            .flat_map(|conds| conds.keys())
            .filter_map(|key| key.strip_prefix("k:"))
            .filter_map(|json| serde_json::from_str::<Value>(json).ok())
            .filter_map(|k| k.get("type").and_then(Value::as_str).map(str::to_string))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta() -> ObjectMeta {
        serde_json::from_value(json!({
            "name": "m",
            "managedFields": [
                {"manager": "airunway-core", "operation": "Apply", "subresource": "status", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:status": {"f:observedGeneration": {}, "f:provider": {"f:name": {}},
                              "f:conditions": {"k:{\"type\":\"Validated\"}": {".": {}, "f:status": {}}}}}},
                {"manager": "kaito-provider", "operation": "Apply", "subresource": "status", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:status": {"f:phase": {}, "f:conditions": {"k:{\"type\":\"Ready\"}": {}}}}},
                {"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:model": {}}}}
            ]
        }))
        .unwrap()
    }

    #[test]
    fn ownership_by_manager() {
        let core = OwnedFields::of(&meta(), "airunway-core");
        assert!(core.owns(&["status", "provider", "name"]));
        assert!(!core.owns(&["status", "phase"]));
        assert_eq!(
            core.condition_types(),
            BTreeSet::from(["Validated".to_string()])
        );
        let others = OwnedFields::of_others(&meta(), "airunway-core");
        assert!(others.owns(&["status", "phase"]));
        assert!(
            !others.owns(&["spec", "model"]),
            "only the status subresource counts"
        );
    }
}
