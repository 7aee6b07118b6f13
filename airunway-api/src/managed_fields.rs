//! Reading `metadata.managedFields`: which status fields a field manager owns (pure).
//!
//! The core uses it to apply exactly the fields it owns, to stop writing `phase`/`message` once
//! a provider has taken them, and to leave `status.provider.name` alone when a custom selector
//! set it; providers use it to release what they own.
//!
//! A watch cache holds each status entry in a compact form ([`compact_status_ownership`]): the
//! owned paths as one line of text each instead of the `fieldsV1` tree, which as
//! `serde_json::Value` maps costs several kilobytes per deployment. Readers see no difference:
//! [`OwnedFields`] answers the same questions from either form.

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry, ObjectMeta};
use serde_json::Value;

/// `fieldsType` of an entry compacted by [`compact_status_ownership`]; its `fieldsV1` is then
/// a string of owned paths, one per line. Only ever held in memory: the API server never sees
/// it (nothing sends a cached object's `managedFields` back).
pub const COMPACT_FIELDS_TYPE: &str = "airunway.ai/OwnedPaths";

/// Separates the segments of a compact path (`status/provider/name`).
const SEGMENT_SEPARATOR: char = '/';

/// Prefixes a compact line naming an owned condition type (`condition:Ready`).
const CONDITION_PREFIX: &str = "condition:";

/// How deep below the root a compact path goes; deeper fields are not recorded (nothing asks
/// about them, and a walk over user-shaped data stays bounded).
const MAX_COMPACT_DEPTH: usize = 6;

/// How many lines one compact entry keeps at most.
const MAX_COMPACT_LINES: usize = 512;

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
        self.sets.iter().any(|set| match set {
            Value::String(lines) => lines.lines().any(|line| {
                !line.starts_with(CONDITION_PREFIX)
                    && line.split(SEGMENT_SEPARATOR).eq(path.iter().copied())
            }),
            tree => {
                let mut node = tree;
                for segment in path {
                    match node.get(format!("f:{segment}")) {
                        Some(next) => node = next,
                        None => return false,
                    }
                }
                true
            }
        })
    }

    /// Condition types owned in `status.conditions`.
    pub fn condition_types(&self) -> BTreeSet<String> {
        let mut types = BTreeSet::new();
        for set in &self.sets {
            match set {
                Value::String(lines) => types.extend(
                    lines
                        .lines()
                        .filter_map(|line| line.strip_prefix(CONDITION_PREFIX))
                        .map(str::to_string),
                ),
                tree => types.extend(tree_condition_types(tree)),
            }
        }
        types
    }
}

/// The condition types a `fieldsV1` tree names under `f:status.f:conditions`.
fn tree_condition_types(tree: &Value) -> impl Iterator<Item = String> + '_ {
    tree.get("f:status")
        .and_then(|s| s.get("f:conditions"))
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|conds| conds.keys())
        .filter_map(|key| key.strip_prefix("k:"))
        .filter_map(|json| serde_json::from_str::<Value>(json).ok())
        .filter_map(|k| k.get("type").and_then(Value::as_str).map(str::to_string))
}

/// Replaces each status entry's `fieldsV1` tree with its compact form (a line per owned field
/// path, a line per owned condition type) and drops what no reader asks about (`time`,
/// `apiVersion`, `operation`). Entries already compact, and entries of the object itself
/// (which a cache drops anyway), are left as they are.
pub fn compact_status_ownership(meta: &mut ObjectMeta) {
    for entry in meta.managed_fields.iter_mut().flatten() {
        if entry.subresource.as_deref() == Some("status") {
            compact_entry(entry);
        }
    }
}

fn compact_entry(entry: &mut ManagedFieldsEntry) {
    if entry.fields_type.as_deref() == Some(COMPACT_FIELDS_TYPE) {
        return;
    }
    let mut lines = String::new();
    if let Some(FieldsV1(tree)) = &entry.fields_v1 {
        let mut count = 0;
        let mut path = Vec::new();
        write_paths(tree, &mut path, &mut lines, &mut count);
        for condition in tree_condition_types(tree) {
            if count >= MAX_COMPACT_LINES || condition.contains('\n') {
                break;
            }
            push_line(&mut lines, &format!("{CONDITION_PREFIX}{condition}"));
            count += 1;
        }
    }
    lines.shrink_to_fit();
    entry.fields_v1 = Some(FieldsV1(Value::String(lines)));
    entry.fields_type = Some(COMPACT_FIELDS_TYPE.to_string());
    entry.time = None;
    entry.api_version = None;
    entry.operation = None;
}

/// Writes every `f:` path of `node` below `path`, depth first; list items (`k:`, `v:`, `i:`)
/// and the `.` marker are not paths anyone asks about. A name holding the separator or a line
/// break cannot be written as a line and is left out with what lies below it.
fn write_paths(node: &Value, path: &mut Vec<String>, lines: &mut String, count: &mut usize) {
    let Some(fields) = node.as_object() else {
        return;
    };
    for (key, child) in fields {
        let Some(name) = key.strip_prefix("f:") else {
            continue;
        };
        if *count >= MAX_COMPACT_LINES || path.len() >= MAX_COMPACT_DEPTH {
            return;
        }
        if name.contains(SEGMENT_SEPARATOR) || name.contains('\n') {
            continue;
        }
        path.push(name.to_string());
        push_line(lines, &path.join("/"));
        *count += 1;
        write_paths(child, path, lines, count);
        path.pop();
    }
}

fn push_line(lines: &mut String, line: &str) {
    if !lines.is_empty() {
        lines.push('\n');
    }
    lines.push_str(line);
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

    fn compacted() -> ObjectMeta {
        let mut meta = meta();
        compact_status_ownership(&mut meta);
        meta
    }

    #[test]
    fn the_compact_form_answers_as_the_tree_does() {
        let paths: &[&[&str]] = &[
            &["status"],
            &["status", "phase"],
            &["status", "provider"],
            &["status", "provider", "name"],
            &["status", "provider", "resourceName"],
            &["status", "observedGeneration"],
            &["status", "conditions"],
            &["spec", "model"],
            &["status", "phase", "x"],
        ];
        for manager in ["airunway-core", "kaito-provider", "kubectl"] {
            for (tree, compact) in [
                (
                    OwnedFields::of(&meta(), manager),
                    OwnedFields::of(&compacted(), manager),
                ),
                (
                    OwnedFields::of_others(&meta(), manager),
                    OwnedFields::of_others(&compacted(), manager),
                ),
            ] {
                for path in paths {
                    assert_eq!(tree.owns(path), compact.owns(path), "{manager} {path:?}");
                }
                assert_eq!(
                    tree.condition_types(),
                    compact.condition_types(),
                    "{manager}"
                );
            }
        }
    }

    #[test]
    fn compacting_keeps_only_lines_and_the_marker() {
        let meta = compacted();
        let entries = meta.managed_fields.unwrap();
        let core = &entries[0];
        assert_eq!(core.fields_type.as_deref(), Some(COMPACT_FIELDS_TYPE));
        assert_eq!(
            core.fields_v1.as_ref().map(|f| f.0.clone()),
            Some(Value::String(
                "status\nstatus/conditions\nstatus/observedGeneration\nstatus/provider\nstatus/provider/name\ncondition:Validated"
                    .to_string()
            ))
        );
        assert!(core.time.is_none() && core.operation.is_none());
        assert_eq!(core.manager.as_deref(), Some("airunway-core"));
        assert_eq!(
            entries[2].fields_type.as_deref(),
            Some("FieldsV1"),
            "the object's own entries are left alone"
        );
        // Twice is once.
        let mut again = compacted();
        compact_status_ownership(&mut again);
        assert_eq!(again, compacted());
    }

    #[test]
    fn compacting_a_deep_or_odd_tree_is_bounded() {
        let mut deep = json!({});
        for _ in 0..50 {
            deep = json!({"f:a": deep, "f:odd/name": {}, "k:{\"type\":\"X\"}": {}});
        }
        let mut meta: ObjectMeta = serde_json::from_value(json!({"managedFields": [
            {"manager": "m", "subresource": "status", "fieldsType": "FieldsV1", "fieldsV1": deep}
        ]}))
        .unwrap();
        compact_status_ownership(&mut meta);
        let owned = OwnedFields::of(&meta, "m");
        assert!(owned.owns(&["a", "a", "a", "a", "a", "a"]));
        assert!(
            !owned.owns(&["a", "a", "a", "a", "a", "a", "a"]),
            "depth bound"
        );
        assert!(!owned.owns(&["odd/name"]));
    }
}
