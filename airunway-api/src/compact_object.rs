//! An object of any kind held compactly: its metadata parsed, everything else (`spec`,
//! `status`, …) as compact JSON text, decoded when a reconcile reads it.
//!
//! A [`DynamicObject`] holds its body as a `serde_json::Value` tree, whose small maps cost
//! about ten times the object's JSON (a KubeRay `RayService` of 3.2 KB of JSON is 30 KB as a
//! `Value`, a Dynamo graph of 1.2 KB is 12 KB). A watch cache of thousands of upstream objects
//! is read once per reconcile of one object, so it keeps them as [`CompactObject`]s and
//! decodes the one it reads ([`CompactObject::to_dynamic`]); the metadata stays parsed for the
//! cache's own lookups (name, namespace, labels, owners, resource version).

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::{ApiResource, DynamicObject, DynamicResourceScope, Resource, TypeMeta};
use serde_json::Value;

/// An object with its metadata parsed and the rest of it kept as compact JSON text.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactObject {
    /// `apiVersion` and `kind`, when the API server sent them.
    pub types: Option<TypeMeta>,
    /// `metadata`, parsed.
    pub metadata: ObjectMeta,
    /// Every other top-level field, as one JSON object.
    body: Box<str>,
}

impl CompactObject {
    /// `object` kept compactly.
    pub fn from_dynamic(object: DynamicObject) -> CompactObject {
        // Serializing a `Value` cannot fail (its map keys are strings).
        let body = serde_json::to_string(&object.data).unwrap_or_else(|_| "null".to_string());
        CompactObject {
            types: object.types,
            metadata: object.metadata,
            body: body.into_boxed_str(),
        }
    }

    /// The whole object, its body decoded.
    pub fn to_dynamic(&self) -> DynamicObject {
        DynamicObject {
            types: self.types.clone(),
            metadata: self.metadata.clone(),
            data: self.data(),
        }
    }

    /// The body (every top-level field but `apiVersion`, `kind` and `metadata`), decoded.
    pub fn data(&self) -> Value {
        // The text is this type's own serialization of a `Value`: it always decodes.
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// The length of the body's JSON text, in bytes.
    pub fn body_len(&self) -> usize {
        self.body.len()
    }
}

impl From<DynamicObject> for CompactObject {
    fn from(object: DynamicObject) -> CompactObject {
        CompactObject::from_dynamic(object)
    }
}

impl Resource for CompactObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// A watch event of dynamic objects as the same event of compact ones.
#[cfg(feature = "runtime")]
pub fn compact_event(
    event: kube::runtime::watcher::Event<DynamicObject>,
) -> kube::runtime::watcher::Event<CompactObject> {
    use kube::runtime::watcher::Event;
    match event {
        Event::Apply(object) => Event::Apply(object.into()),
        Event::Delete(object) => Event::Delete(object.into()),
        Event::Init => Event::Init,
        Event::InitApply(object) => Event::InitApply(object.into()),
        Event::InitDone => Event::InitDone,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn ray_service() -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "ray.io/v1", "kind": "RayService",
            "metadata": {"name": "m", "namespace": "ns", "resourceVersion": "7",
                "labels": {"airunway.ai/deployment": "m"},
                "annotations": {"airunway.ai/spec-hash": "abc"}},
            "spec": {"rayClusterConfig": {"workerGroupSpecs": [{"replicas": 2, "groupName": "w"}]}},
            "status": {"serviceStatus": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        }))
        .unwrap()
    }

    /// What is kept is what was read: the round trip gives back the same object.
    #[test]
    fn the_round_trip_gives_back_the_same_object() {
        let object = ray_service();
        let compact = CompactObject::from(object.clone());
        assert_eq!(compact.to_dynamic(), object);
        assert_eq!(compact.metadata.name.as_deref(), Some("m"));
        assert_eq!(
            compact.data()["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["replicas"],
            2
        );
        // The body is the compact JSON of everything but the identity and metadata.
        assert_eq!(
            compact.body_len(),
            serde_json::to_string(&object.data).unwrap().len()
        );
    }

    /// An object without a body (only metadata) stays one.
    #[test]
    fn an_object_without_a_body_round_trips() {
        let object: DynamicObject =
            serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap();
        assert_eq!(CompactObject::from(object.clone()).to_dynamic(), object);
    }

    /// The resource identity is the dynamic type's, as for `DynamicObject`.
    #[test]
    fn the_resource_identity_is_the_api_resources() {
        let resource = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        assert_eq!(CompactObject::kind(&resource), "ConfigMap");
        assert_eq!(CompactObject::plural(&resource), "configmaps");
        assert_eq!(CompactObject::api_version(&resource), "v1");
    }
}
