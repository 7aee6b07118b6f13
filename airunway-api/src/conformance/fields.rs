//! The part of a live object a field manager owns, read from its `managedFields` entry
//! (`fieldsV1`): what the provider applied, to apply again with server-side dry-run and strict
//! field validation.

use serde_json::{Map, Value};

/// The fields of `live` that `fields` (a `fieldsV1` tree) names: `f:<name>` members, list
/// elements by `k:<keys>`, `v:<value>` and `i:<index>`; a leaf (`{}` or only `.`) takes the
/// live value whole.
pub fn owned(fields: &Value, live: &Value) -> Value {
    let Some(members) = fields.as_object() else {
        return live.clone();
    };
    if members.keys().all(|k| k == ".") {
        return live.clone();
    }
    match live {
        Value::Object(object) => {
            let mut out = Map::new();
            for (key, sub) in members {
                if let Some(name) = key.strip_prefix("f:")
                    && let Some(value) = object.get(name)
                {
                    out.insert(name.to_string(), owned(sub, value));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let mut out = Vec::new();
            for (key, sub) in members {
                if let Some(keys) = key.strip_prefix("k:") {
                    let Ok(Value::Object(keys)) = serde_json::from_str::<Value>(keys) else {
                        continue;
                    };
                    if let Some(item) = items
                        .iter()
                        .find(|item| keys.iter().all(|(k, v)| item.get(k) == Some(v)))
                    {
                        out.push(owned(sub, item));
                    }
                } else if let Some(value) = key.strip_prefix("v:") {
                    if let Ok(value) = serde_json::from_str::<Value>(value)
                        && items.contains(&value)
                    {
                        out.push(value);
                    }
                } else if let Some(index) = key.strip_prefix("i:")
                    && let Some(item) = index.parse::<usize>().ok().and_then(|i| items.get(i))
                {
                    out.push(owned(sub, item));
                }
            }
            Value::Array(out)
        }
        other => other.clone(),
    }
}

/// The object `manager` applied (operation `Apply`, main resource): its owned fields of
/// `live`, with `apiVersion`, `kind`, name and namespace. `None` when it applied nothing.
pub fn applied_by(live: &Value, manager: &str) -> Option<Value> {
    let entry = live["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|m| {
            m["manager"] == manager && m["operation"] == "Apply" && m.get("subresource").is_none()
        })?;
    let mut object = owned(&entry["fieldsV1"], live);
    let map = object.as_object_mut()?;
    map.insert("apiVersion".into(), live["apiVersion"].clone());
    map.insert("kind".into(), live["kind"].clone());
    let metadata = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(metadata) = metadata.as_object_mut() {
        metadata.insert("name".into(), live["metadata"]["name"].clone());
        if live["metadata"]["namespace"].is_string() {
            metadata.insert("namespace".into(), live["metadata"]["namespace"].clone());
        }
    }
    Some(object)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_managers_fields_are_taken() {
        let live = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {
                "name": "d", "namespace": "n", "uid": "u", "resourceVersion": "7",
                "labels": {"mine": "a", "theirs": "b"},
                "ownerReferences": [{"uid": "o1", "name": "md"}, {"uid": "o2", "name": "x"}],
                "managedFields": [
                    {"manager": "p", "operation": "Apply", "fieldsV1": {
                        "f:metadata": {"f:labels": {"f:mine": {}}, "f:ownerReferences": {"k:{\"uid\":\"o1\"}": {}}},
                        "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                            "k:{\"name\":\"c\"}": {".": {}, "f:name": {}, "f:args": {}}}}}}}},
                    {"manager": "p", "operation": "Update", "subresource": "status", "fieldsV1": {"f:status": {}}},
                ]
            },
            "spec": {"replicas": 2, "revisionHistoryLimit": 10, "template": {"spec": {"containers": [
                {"name": "c", "args": ["--x"], "imagePullPolicy": "IfNotPresent"},
                {"name": "sidecar"}]}}},
            "status": {"replicas": 2}
        });
        let applied = applied_by(&live, "p").unwrap();
        assert_eq!(
            applied,
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d", "namespace": "n", "labels": {"mine": "a"},
                             "ownerReferences": [{"uid": "o1", "name": "md"}]},
                "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "args": ["--x"]}]}}}
            })
        );
        assert_eq!(applied_by(&live, "other"), None);
    }

    #[test]
    fn set_members_and_indices() {
        let fields = json!({"f:a": {"v:\"x\"": {}, "v:\"z\"": {}}, "f:b": {"i:1": {}}});
        let live = json!({"a": ["x", "y"], "b": [1, 2, 3]});
        assert_eq!(owned(&fields, &live), json!({"a": ["x"], "b": [2]}));
    }
}
