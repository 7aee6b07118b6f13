//! The Gateway listeners' `allowedRoutes.namespaces` arithmetic (pure).
//!
//! A route in another namespace than its Gateway attaches only if the listener allows that
//! namespace. AI Runway adds a deployment's namespace when it routes the first deployment
//! there and removes it when the last one leaves, and only ever removes what it added (the
//! Gateway annotation [`super::ALLOWED_NAMESPACES_ANNOTATION`] lists those namespaces):
//!
//! | listener allows | allow `ns` | disallow `ns` (added by AI Runway) |
//! |---|---|---|
//! | `from: All` | nothing to do | nothing to do |
//! | `from: Same` (or nothing) | `from: Selector`, `kubernetes.io/metadata.name In [gateway ns, ns]` | — |
//! | our selector (one `In` expression on `kubernetes.io/metadata.name`, or the same as `matchLabels`) | `ns` and the Gateway's own namespace added to the values | `ns` removed, the Gateway's own namespace kept; only that one left ⇒ back to `from: Same` |
//! | any other selector | left alone (the route's status says whether it attached) | left alone |
//!
//! Every selector AI Runway writes lists the Gateway's own namespace, also when the listener
//! it edits did not (a selector of other namespaces, in either form): turning a listener into a
//! selector of the namespaces routed to must not evict the routes that live beside the
//! Gateway. This is the rule the Go AI Runway adopted after its issue #333.

use std::collections::BTreeSet;

use serde_json::{Value, json};

/// The label every namespace carries with its own name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Parses the annotation value (comma-separated namespaces).
pub fn parse_managed(value: &str) -> BTreeSet<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The annotation value for `managed`.
pub fn format_managed(managed: &BTreeSet<String>) -> String {
    managed.iter().cloned().collect::<Vec<_>>().join(",")
}

/// What one listener allows.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Allows {
    All,
    Same,
    /// Namespaces listed by name (our selector shape).
    Names(BTreeSet<String>),
    /// A selector AI Runway does not edit.
    Other,
}

fn allows(listener: &Value) -> Allows {
    let namespaces = listener.pointer("/allowedRoutes/namespaces");
    let from = namespaces
        .and_then(|n| n.get("from"))
        .and_then(Value::as_str)
        .unwrap_or("Same");
    match from {
        "All" => Allows::All,
        "Same" => Allows::Same,
        "Selector" => {
            let selector = namespaces.and_then(|n| n.get("selector"));
            names_of(selector).map_or(Allows::Other, Allows::Names)
        }
        _ => Allows::Other,
    }
}

/// The names a selector lists when it is one `In` expression on the namespace name label, or
/// a `matchLabels` of that label alone (the older form).
fn names_of(selector: Option<&Value>) -> Option<BTreeSet<String>> {
    let selector = selector?.as_object()?;
    let labels = selector.get("matchLabels").and_then(Value::as_object);
    let expressions = selector.get("matchExpressions").and_then(Value::as_array);
    match (
        labels.filter(|l| !l.is_empty()),
        expressions.filter(|e| !e.is_empty()),
    ) {
        (Some(labels), None) if labels.len() == 1 => {
            let value = labels.get(NAMESPACE_NAME_LABEL)?.as_str()?;
            Some(BTreeSet::from([value.to_string()]))
        }
        (None, Some(expressions)) if expressions.len() == 1 => {
            let e = &expressions[0];
            if e.get("key").and_then(Value::as_str) != Some(NAMESPACE_NAME_LABEL)
                || e.get("operator").and_then(Value::as_str) != Some("In")
            {
                return None;
            }
            e.get("values")?
                .as_array()?
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect()
        }
        _ => None,
    }
}

fn selector_for(names: &BTreeSet<String>) -> Value {
    json!({"from": "Selector", "selector": {"matchExpressions": [{
        "key": NAMESPACE_NAME_LABEL, "operator": "In",
        "values": names.iter().collect::<Vec<_>>(),
    }]}})
}

/// Listeners and the annotation after a change; `None` when nothing changes.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// The new `spec.listeners`.
    pub listeners: Vec<Value>,
    /// The namespaces AI Runway now manages (the annotation).
    pub managed: BTreeSet<String>,
}

/// Whether `namespace` may attach routes to every listener (as far as AI Runway can tell:
/// listeners with a selector it does not edit count as allowing).
pub fn is_allowed(listeners: &[Value], gateway_namespace: &str, namespace: &str) -> bool {
    namespace == gateway_namespace
        || listeners.iter().all(|l| match allows(l) {
            Allows::All | Allows::Other => true,
            Allows::Same => false,
            Allows::Names(names) => names.contains(namespace),
        })
}

/// Lets `namespace` attach routes to every listener of a Gateway in `gateway_namespace`.
pub fn allow(
    listeners: &[Value],
    managed: &BTreeSet<String>,
    gateway_namespace: &str,
    namespace: &str,
) -> Option<Change> {
    if namespace == gateway_namespace {
        return None;
    }
    let mut changed = false;
    let listeners = listeners
        .iter()
        .map(|listener| {
            let names = match allows(listener) {
                Allows::All | Allows::Other => return listener.clone(),
                Allows::Same => BTreeSet::from([gateway_namespace.to_string()]),
                Allows::Names(names) if names.contains(namespace) => return listener.clone(),
                Allows::Names(names) => names,
            };
            let mut names = names;
            names.insert(namespace.to_string());
            names.insert(gateway_namespace.to_string());
            changed = true;
            with_namespaces(listener, selector_for(&names))
        })
        .collect();
    if !changed {
        return None;
    }
    let mut managed = managed.clone();
    managed.insert(namespace.to_string());
    Some(Change { listeners, managed })
}

/// Takes back what [`allow`] added for `namespace` (nothing if AI Runway did not add it).
pub fn disallow(
    listeners: &[Value],
    managed: &BTreeSet<String>,
    gateway_namespace: &str,
    namespace: &str,
) -> Option<Change> {
    if !managed.contains(namespace) {
        return None;
    }
    let listeners = listeners
        .iter()
        .map(|listener| match allows(listener) {
            Allows::Names(names) if names.contains(namespace) => {
                let mut names = names;
                names.remove(namespace);
                names.insert(gateway_namespace.to_string());
                let only_own = names.iter().all(|n| n == gateway_namespace);
                if only_own {
                    with_namespaces(listener, json!({"from": "Same"}))
                } else {
                    with_namespaces(listener, selector_for(&names))
                }
            }
            _ => listener.clone(),
        })
        .collect();
    let mut managed = managed.clone();
    managed.remove(namespace);
    Some(Change { listeners, managed })
}

fn with_namespaces(listener: &Value, namespaces: Value) -> Value {
    let mut listener = listener.clone();
    if let Some(object) = listener.as_object_mut() {
        let allowed = object.entry("allowedRoutes").or_insert_with(|| json!({}));
        if let Some(allowed) = allowed.as_object_mut() {
            allowed.insert("namespaces".into(), namespaces);
        }
    }
    listener
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn listener(namespaces: Value) -> Value {
        json!({"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": namespaces}})
    }

    fn values(listener: &Value) -> Vec<String> {
        listener
            .pointer("/allowedRoutes/namespaces/selector/matchExpressions/0/values")
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn same_becomes_a_selector_and_back() {
        let listeners = vec![listener(json!({"from": "Same"}))];
        assert!(!is_allowed(&listeners, "gw", "team-a"));
        assert!(is_allowed(&listeners, "gw", "gw"));
        let added = allow(&listeners, &set(&[]), "gw", "team-a").unwrap();
        assert_eq!(values(&added.listeners[0]), ["gw", "team-a"]);
        assert_eq!(added.managed, set(&["team-a"]));
        assert!(is_allowed(&added.listeners, "gw", "team-a"));
        // Other listener fields are kept.
        assert_eq!(added.listeners[0]["port"], 80);
        // Idempotent.
        assert_eq!(
            allow(&added.listeners, &added.managed, "gw", "team-a"),
            None
        );

        let second = allow(&added.listeners, &added.managed, "gw", "team-b").unwrap();
        assert_eq!(values(&second.listeners[0]), ["gw", "team-a", "team-b"]);
        let one_left = disallow(&second.listeners, &second.managed, "gw", "team-a").unwrap();
        assert_eq!(values(&one_left.listeners[0]), ["gw", "team-b"]);
        assert_eq!(one_left.managed, set(&["team-b"]));
        let none_left = disallow(&one_left.listeners, &one_left.managed, "gw", "team-b").unwrap();
        assert_eq!(
            none_left.listeners[0]["allowedRoutes"]["namespaces"],
            json!({"from": "Same"})
        );
        assert!(none_left.managed.is_empty());
    }

    #[test]
    fn a_listener_without_allowed_routes_is_same() {
        let listeners = vec![json!({"name": "http", "port": 80, "protocol": "HTTP"})];
        let added = allow(&listeners, &set(&[]), "gw", "team-a").unwrap();
        assert_eq!(values(&added.listeners[0]), ["gw", "team-a"]);
    }

    #[test]
    fn all_and_foreign_selectors_are_left_alone() {
        let all = vec![listener(json!({"from": "All"}))];
        assert!(is_allowed(&all, "gw", "team-a"));
        assert_eq!(allow(&all, &set(&[]), "gw", "team-a"), None);
        let foreign = vec![listener(
            json!({"from": "Selector", "selector": {"matchLabels": {"inference": "yes"}}}),
        )];
        assert_eq!(allow(&foreign, &set(&[]), "gw", "team-a"), None);
        assert_eq!(
            disallow(&foreign, &set(&["team-a"]), "gw", "team-a")
                .unwrap()
                .listeners,
            foreign
        );
    }

    #[test]
    fn namespaces_an_admin_listed_are_never_taken_back() {
        let listeners = vec![listener(
            json!({"from": "Selector", "selector": {"matchExpressions": [
            {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": ["gw", "admin-ns"]}]}}),
        )];
        assert!(is_allowed(&listeners, "gw", "admin-ns"));
        assert_eq!(
            allow(&listeners, &set(&[]), "gw", "admin-ns"),
            None,
            "already allowed, not ours"
        );
        assert_eq!(disallow(&listeners, &set(&[]), "gw", "admin-ns"), None);
    }

    #[test]
    fn the_match_labels_form_is_read_and_rewritten() {
        let listeners = vec![listener(
            json!({"from": "Selector", "selector": {"matchLabels": {NAMESPACE_NAME_LABEL: "gw"}}}),
        )];
        let added = allow(&listeners, &set(&[]), "gw", "team-a").unwrap();
        assert_eq!(values(&added.listeners[0]), ["gw", "team-a"]);
    }

    /// Go AI Runway issue #333: a listener that already selects namespaces keeps (or gets)
    /// the Gateway's own one when a deployment's namespace is added, in both selector forms,
    /// and keeps it when that namespace is taken back.
    #[test]
    fn a_selector_listener_keeps_the_gateway_namespace() {
        for namespaces in [
            json!({"from": "Selector", "selector": {"matchExpressions": [
                {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": ["team-x"]}]}}),
            json!({"from": "Selector", "selector": {"matchLabels": {NAMESPACE_NAME_LABEL: "team-x"}}}),
        ] {
            let listeners = vec![listener(namespaces.clone())];
            let added = allow(&listeners, &set(&[]), "gw", "team-a").unwrap();
            assert_eq!(
                values(&added.listeners[0]),
                ["gw", "team-a", "team-x"],
                "{namespaces}"
            );
            assert!(is_allowed(&added.listeners, "gw", "gw"));
            assert_eq!(added.managed, set(&["team-a"]));
            let removed = disallow(&added.listeners, &added.managed, "gw", "team-a").unwrap();
            assert_eq!(
                values(&removed.listeners[0]),
                ["gw", "team-x"],
                "{namespaces}"
            );
            assert!(removed.managed.is_empty());
        }
    }

    #[test]
    fn several_listeners_each_change() {
        let listeners = vec![
            listener(json!({"from": "Same"})),
            listener(json!({"from": "All"})),
        ];
        let added = allow(&listeners, &set(&[]), "gw", "team-a").unwrap();
        assert_eq!(values(&added.listeners[0]), ["gw", "team-a"]);
        assert_eq!(added.listeners[1], listeners[1]);
    }

    #[test]
    fn annotation_round_trip() {
        let managed = parse_managed(" b, a,,c ");
        assert_eq!(format_managed(&managed), "a,b,c");
        assert!(parse_managed("").is_empty());
    }
}
