//! Decoding one watched object at a time (pure): an object that does not decode becomes an
//! [`InvalidObject`] instead of failing the list or watch response it arrived in.
//!
//! The API server stores what its schema admits; the Rust types can refuse more. Two ways
//! it happens: a free-form field (`spec.provider.overrides`, and with it
//! `metadata.managedFields[].fieldsV1`) nested deeper than serde_json's recursion limit of
//! 128, stored while the webhook was unreachable and no admission policy bounds the depth;
//! or a value of a type the Rust field does not take in a part the CRD schema leaves open.
//! kube's `DeserializeGuard` isolates the second but not the first: it buffers the object
//! through the same serde_json deserializer, which stops at the recursion limit and fails
//! the whole list. [`Guarded`] instead captures each object's text as a
//! [`RawValue`](serde_json::value::RawValue) (serde_json skips a value iteratively, with no
//! depth limit), then decodes that text on its own, so its depth counts from the object's
//! root; a failure is kept with the object's identity, read by skipping every other field.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::Resource;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};

/// How many segments of the failing field's path an [`InvalidObject`] keeps (a path through
/// 128 levels of overrides is shortened to its start and its depth).
const PATH_SEGMENTS_KEPT: usize = 8;

/// A watched object: decoded, or kept as the identity and error of one that did not decode.
#[derive(Debug, Clone)]
pub enum Guarded<K> {
    /// The object decoded.
    Valid(K),
    /// The object did not decode (boxed: most objects decode, and the variant is large).
    Invalid(Box<InvalidObject>),
}

/// An object the API server holds that the Rust type refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct InvalidObject {
    /// The object's identity (name, namespace, uid, resourceVersion, generation, deletion
    /// time and finalizers) as far as it could be read.
    pub metadata: ObjectMeta,
    /// The decode error, as serde_json says it.
    pub error: String,
    /// The path of the field the decode stopped at (e.g. `spec.engine.replicas`), when known,
    /// shortened past [`PATH_SEGMENTS_KEPT`] segments.
    pub path: Option<String>,
}

impl InvalidObject {
    /// The field and error in one sentence (the note of the event reporting it).
    pub fn describe(&self) -> String {
        match &self.path {
            Some(path) => format!("field {path}: {}", self.error),
            None => self.error.clone(),
        }
    }

    /// Whether the error is serde_json's recursion limit (a free-form field nested too deep).
    pub fn is_too_deep(&self) -> bool {
        self.error.contains("recursion limit exceeded")
    }
}

impl<K> Guarded<K> {
    /// The decoded object, if it decoded.
    pub fn into_valid(self) -> Result<K, Box<InvalidObject>> {
        match self {
            Guarded::Valid(k) => Ok(k),
            Guarded::Invalid(invalid) => Err(invalid),
        }
    }
}

/// Decodes one object's JSON text into `K`, or into an [`InvalidObject`] naming what failed.
pub fn decode<K: DeserializeOwned>(text: &str) -> Guarded<K> {
    let error = match serde_json::from_str::<K>(text) {
        Ok(k) => return Guarded::Valid(k),
        Err(error) => error,
    };
    // Only a refused object pays for the path: decoded again, tracking it.
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let path = match serde_path_to_error::deserialize::<_, K>(&mut deserializer) {
        Err(e) => Some(shorten(e.path())).filter(|p| !p.is_empty() && p != "."),
        Ok(_) => None,
    };
    Guarded::Invalid(Box::new(InvalidObject {
        metadata: identity(text),
        error: error.to_string(),
        path,
    }))
}

/// The first [`PATH_SEGMENTS_KEPT`] segments of `path`, and how deep it goes when longer.
fn shorten(path: &serde_path_to_error::Path) -> String {
    let segments: Vec<String> = path.iter().map(|s| s.to_string()).collect();
    let mut out = String::new();
    for segment in segments.iter().take(PATH_SEGMENTS_KEPT) {
        if !out.is_empty() && !segment.starts_with('[') {
            out.push('.');
        }
        out.push_str(segment);
    }
    if segments.len() > PATH_SEGMENTS_KEPT {
        out.push_str(&format!("... ({} levels)", segments.len()));
    }
    out
}

/// What an invalid object's identity is read from: every other field is skipped (serde's
/// `IgnoredAny`, which serde_json parses without recursion).
#[derive(Deserialize, Default)]
struct Identity {
    #[serde(default)]
    metadata: IdentityMeta,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct IdentityMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    generation: Option<i64>,
    deletion_timestamp: Option<Time>,
    finalizers: Option<Vec<String>>,
}

fn identity(text: &str) -> ObjectMeta {
    let meta = serde_json::from_str::<Identity>(text)
        .unwrap_or_default()
        .metadata;
    ObjectMeta {
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resource_version: meta.resource_version,
        generation: meta.generation,
        deletion_timestamp: meta.deletion_timestamp,
        finalizers: meta.finalizers,
        ..ObjectMeta::default()
    }
}

impl<'de, K: DeserializeOwned> Deserialize<'de> for Guarded<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Only serde_json's deserializer yields a RawValue: kube decodes list and watch
        // responses with it, the object as it arrived (the watch event's `type` before its
        // `object`, as the API server writes it).
        let raw = Box::<serde_json::value::RawValue>::deserialize(deserializer)?;
        Ok(decode(raw.get()))
    }
}

impl<K: Resource> Resource for Guarded<K> {
    type DynamicType = K::DynamicType;
    type Scope = K::Scope;

    fn kind(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::kind(dt)
    }

    fn group(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::group(dt)
    }

    fn version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::version(dt)
    }

    fn plural(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        match self {
            Guarded::Valid(k) => k.meta(),
            Guarded::Invalid(invalid) => &invalid.metadata,
        }
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Guarded::Valid(k) => k.meta_mut(),
            Guarded::Invalid(invalid) => &mut invalid.metadata,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1alpha1::ModelDeployment;
    use kube::core::{ObjectList, WatchEvent};
    use serde_json::json;

    fn deployment(name: &str, overrides: serde_json::Value) -> serde_json::Value {
        json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                "resourceVersion": "7", "generation": 2,
                "finalizers": ["airunway.ai/kaito"]},
            "spec": {"model": {"id": "Qwen/Qwen3-0.6B"},
                "provider": {"name": "kaito", "overrides": overrides}},
        })
    }

    /// Overrides nested `depth` levels, written as text (serde_json's own `Value` would hit
    /// its recursion limit building it).
    fn nested(depth: usize) -> String {
        format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth))
    }

    fn list_text(items: &[String]) -> String {
        format!(
            r#"{{"apiVersion":"airunway.ai/v1alpha1","kind":"ModelDeploymentList","metadata":{{"resourceVersion":"9"}},"items":[{}]}}"#,
            items.join(",")
        )
    }

    fn deep_deployment(name: &str, depth: usize) -> String {
        deployment(name, json!("OVERRIDES"))
            .to_string()
            .replace("\"OVERRIDES\"", &nested(depth))
    }

    #[test]
    fn a_list_with_an_object_nested_past_the_recursion_limit_still_decodes() {
        let good = deployment("good", json!({"x": 1})).to_string();
        let deep = deep_deployment("deep", 1000);
        let text = list_text(&[good.clone(), deep.clone()]);
        // The plain type fails the whole list: the failure this module exists for.
        let plain = serde_json::from_str::<ObjectList<ModelDeployment>>(&text).unwrap_err();
        assert!(plain.to_string().contains("recursion limit exceeded"));

        let list: ObjectList<Guarded<ModelDeployment>> = serde_json::from_str(&text).unwrap();
        let mut items = list.items.into_iter();
        let good = items.next().unwrap().into_valid().unwrap();
        assert_eq!(good.metadata.name.as_deref(), Some("good"));
        let deep = items.next().unwrap().into_valid().unwrap_err();
        assert!(deep.is_too_deep(), "{deep:?}");
        assert_eq!(deep.metadata.name.as_deref(), Some("deep"));
        assert_eq!(deep.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(deep.metadata.uid.as_deref(), Some("uid-deep"));
        assert_eq!(deep.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(deep.metadata.generation, Some(2));
        assert_eq!(
            deep.metadata.finalizers.as_deref(),
            Some(&["airunway.ai/kaito".to_string()][..])
        );
        let path = deep.path.as_deref().unwrap();
        assert!(
            path.starts_with("spec.provider.overrides.a.a") && path.ends_with("levels)"),
            "{path}"
        );
        assert!(
            deep.describe()
                .starts_with("field spec.provider.overrides.")
        );
    }

    #[test]
    fn a_watch_event_of_an_object_nested_past_the_limit_decodes_as_invalid() {
        let text = format!(
            r#"{{"type":"MODIFIED","object":{}}}"#,
            deep_deployment("deep", 300)
        );
        let event: WatchEvent<Guarded<ModelDeployment>> = serde_json::from_str(&text).unwrap();
        let WatchEvent::Modified(Guarded::Invalid(invalid)) = event else {
            panic!("not an invalid MODIFIED event");
        };
        assert_eq!(invalid.metadata.name.as_deref(), Some("deep"));
        assert!(invalid.is_too_deep());
    }

    #[test]
    fn depth_counts_from_the_object_not_the_list() {
        // Within the limit on its own, though deeper than 128 counted from the list's root.
        let near = deep_deployment("near", 120);
        let text = list_text(&[near]);
        let list: ObjectList<Guarded<ModelDeployment>> = serde_json::from_str(&text).unwrap();
        assert!(matches!(list.items[0], Guarded::Valid(_)));
    }

    #[test]
    fn a_wrong_type_names_the_field() {
        let mut object = deployment("typed", json!({}));
        object["spec"]["model"]["id"] = json!(42);
        let invalid = decode::<ModelDeployment>(&object.to_string())
            .into_valid()
            .unwrap_err();
        assert_eq!(invalid.path.as_deref(), Some("spec.model.id"));
        assert!(invalid.error.contains("invalid type"), "{}", invalid.error);
        assert!(!invalid.is_too_deep());
        assert_eq!(invalid.metadata.name.as_deref(), Some("typed"));
    }

    #[test]
    fn identity_is_read_past_deep_managed_fields() {
        let mut object = deployment("managed", json!({}));
        object["metadata"]["managedFields"] = json!([{"manager": "kubectl", "fieldsV1": "DEEP"}]);
        let text = object.to_string().replace("\"DEEP\"", &nested(2000));
        let invalid = decode::<ModelDeployment>(&text).into_valid().unwrap_err();
        assert_eq!(invalid.metadata.name.as_deref(), Some("managed"));
        assert!(invalid.is_too_deep());
    }

    #[test]
    fn a_valid_object_is_as_the_plain_type_decodes_it() {
        let text = deployment("ok", json!({"a": {"b": [1, 2]}})).to_string();
        let guarded = decode::<ModelDeployment>(&text).into_valid().unwrap();
        let plain: ModelDeployment = serde_json::from_str(&text).unwrap();
        assert_eq!(
            serde_json::to_value(&guarded).unwrap(),
            serde_json::to_value(&plain).unwrap()
        );
        assert_eq!(
            Guarded::Valid(plain).meta().name.as_deref(),
            Some("ok"),
            "meta of a valid object"
        );
    }

    #[test]
    fn text_that_is_not_an_object_has_no_identity() {
        let invalid = decode::<ModelDeployment>("[1,2]").into_valid().unwrap_err();
        assert_eq!(invalid.metadata, ObjectMeta::default());
        assert!(!invalid.error.is_empty());
    }
}
