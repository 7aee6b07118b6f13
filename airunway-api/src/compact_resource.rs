//! A typed object held compactly: its identity parsed, the whole object as compact JSON text,
//! decoded when a reconcile reads it.
//!
//! A typed `ModelDeployment` in a watch cache costs several times its JSON: every `String`,
//! map and optional part of the spec and status is an allocation of its own, and the struct
//! keeps room for every field it may have. A controller reads one deployment per reconcile, so
//! a cache of thousands keeps them as [`CompactResource`]s and decodes the one it reads
//! ([`CompactResource::decode`]); the identity (name, namespace, uid, resource version) stays
//! parsed for the cache's and the controller queue's own lookups.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::Resource;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};

/// A `K` kept as compact JSON, with its identity parsed.
pub struct CompactResource<K> {
    /// Name, namespace, uid and resource version; every other metadata field is only in the
    /// text.
    identity: ObjectMeta,
    /// The whole object, as compact JSON.
    text: Box<str>,
    kind: PhantomData<fn() -> K>,
}

impl<K> CompactResource<K>
where
    K: Resource + Serialize + DeserializeOwned,
{
    /// `object` kept compactly. Fails only when `K`'s serialization does (a map with keys
    /// that are not strings; no Kubernetes type has one).
    pub fn new(object: &K) -> Result<CompactResource<K>, serde_json::Error> {
        let meta = object.meta();
        Ok(CompactResource {
            identity: ObjectMeta {
                name: meta.name.clone(),
                namespace: meta.namespace.clone(),
                uid: meta.uid.clone(),
                resource_version: meta.resource_version.clone(),
                ..ObjectMeta::default()
            },
            text: serde_json::to_string(object)?.into_boxed_str(),
            kind: PhantomData,
        })
    }

    /// The object, decoded. The text is `K`'s own serialization, so this fails only if `K`
    /// does not read what it writes.
    pub fn decode(&self) -> Result<K, serde_json::Error> {
        serde_json::from_str(&self.text)
    }
}

impl<K> CompactResource<K> {
    /// The length of the object's JSON text, in bytes.
    pub fn text_len(&self) -> usize {
        self.text.len()
    }
}

impl<K> Clone for CompactResource<K> {
    fn clone(&self) -> Self {
        CompactResource {
            identity: self.identity.clone(),
            text: self.text.clone(),
            kind: PhantomData,
        }
    }
}

impl<K> PartialEq for CompactResource<K> {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl<K> fmt::Debug for CompactResource<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompactResource")
            .field("namespace", &self.identity.namespace)
            .field("name", &self.identity.name)
            .field("resource_version", &self.identity.resource_version)
            .field("text_len", &self.text.len())
            .finish()
    }
}

/// Read as `K` and kept compactly (what a watch of `CompactResource<K>` would list).
impl<'de, K> Deserialize<'de> for CompactResource<K>
where
    K: Resource + Serialize + DeserializeOwned,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = K::deserialize(deserializer)?;
        CompactResource::new(&object).map_err(D::Error::custom)
    }
}

/// The resource identity is `K`'s: a store, queue or owner lookup of `CompactResource<K>` is
/// one of `K`.
impl<K> Resource for CompactResource<K>
where
    K: Resource<DynamicType = ()>,
{
    type DynamicType = ();
    type Scope = K::Scope;

    fn kind(dt: &()) -> Cow<'_, str> {
        K::kind(dt)
    }

    fn group(dt: &()) -> Cow<'_, str> {
        K::group(dt)
    }

    fn version(dt: &()) -> Cow<'_, str> {
        K::version(dt)
    }

    fn api_version(dt: &()) -> Cow<'_, str> {
        K::api_version(dt)
    }

    fn plural(dt: &()) -> Cow<'_, str> {
        K::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.identity
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.identity
    }
}

/// A watch event of `K` as the same event of compact `K`s; `None` when an object does not
/// serialize (see [`CompactResource::new`]), reported in the log.
#[cfg(feature = "runtime")]
pub fn compact_resource_event<K>(
    event: kube::runtime::watcher::Event<K>,
) -> Option<kube::runtime::watcher::Event<CompactResource<K>>>
where
    K: Resource + Serialize + DeserializeOwned,
{
    use kube::runtime::watcher::Event;
    let compact = |object: K| match CompactResource::new(&object) {
        Ok(compact) => Some(compact),
        Err(error) => {
            tracing::warn!(%error, name = ?object.meta().name, "object does not serialize: not cached");
            None
        }
    };
    match event {
        Event::Apply(object) => compact(object).map(Event::Apply),
        Event::Delete(object) => compact(object).map(Event::Delete),
        Event::InitApply(object) => compact(object).map(Event::InitApply),
        Event::Init => Some(Event::Init),
        Event::InitDone => Some(Event::InitDone),
    }
}

/// A reference to a `K` as a reference to the same object held compactly.
#[cfg(feature = "runtime")]
pub fn compact_ref<K>(
    reference: &kube::runtime::reflector::ObjectRef<K>,
) -> kube::runtime::reflector::ObjectRef<CompactResource<K>>
where
    K: Resource<DynamicType = ()>,
{
    let compact = kube::runtime::reflector::ObjectRef::new(&reference.name);
    match reference.namespace.as_deref() {
        Some(namespace) => compact.within(namespace),
        None => compact,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::v1alpha1::ModelDeployment;
    use serde_json::json;

    fn deployment() -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                "labels": {"team": "a"}, "finalizers": ["airunway.ai/kaito-provider"]},
            "spec": {"model": {"id": "org/model"}, "provider": {"name": "kaito"}},
            "status": {"phase": "Running", "provider": {"name": "kaito"},
                "conditions": [{"type": "Ready", "status": "True", "reason": "DeploymentReady",
                    "message": "ready", "lastTransitionTime": "2026-11-27T12:00:00Z"}]}
        }))
        .unwrap()
    }

    /// What is kept is what was read: decoding gives back the same object.
    #[test]
    fn decoding_gives_back_the_same_object() {
        let md = deployment();
        let compact = CompactResource::new(&md).unwrap();
        assert_eq!(
            serde_json::to_value(compact.decode().unwrap()).unwrap(),
            serde_json::to_value(&md).unwrap()
        );
        assert_eq!(
            compact.text_len(),
            serde_json::to_string(&md).unwrap().len()
        );
    }

    /// The identity is parsed (name, namespace, uid, resource version) and nothing else.
    #[test]
    fn only_the_identity_is_parsed() {
        let compact = CompactResource::new(&deployment()).unwrap();
        let meta = compact.meta();
        assert_eq!(meta.name.as_deref(), Some("m"));
        assert_eq!(meta.namespace.as_deref(), Some("ns"));
        assert_eq!(meta.uid.as_deref(), Some("u1"));
        assert_eq!(meta.resource_version.as_deref(), Some("7"));
        assert_eq!(meta.labels, None);
        assert_eq!(meta.finalizers, None);
    }

    /// The resource identity is `K`'s, so owner references and queue entries match.
    #[test]
    fn the_resource_identity_is_the_typed_ones() {
        type Held = CompactResource<ModelDeployment>;
        assert_eq!(Held::kind(&()), "ModelDeployment");
        assert_eq!(Held::api_version(&()), "airunway.ai/v1alpha1");
        assert_eq!(Held::plural(&()), "modeldeployments");
    }

    /// Serde reads a `K` into the compact form.
    #[test]
    fn serde_reads_the_typed_object() {
        let md = deployment();
        let text = serde_json::to_string(&md).unwrap();
        let compact: CompactResource<ModelDeployment> = serde_json::from_str(&text).unwrap();
        assert_eq!(
            serde_json::to_value(compact.decode().unwrap()).unwrap(),
            serde_json::to_value(&md).unwrap()
        );
    }

    /// A reference keeps its name and namespace.
    #[cfg(feature = "runtime")]
    #[test]
    fn a_reference_keeps_its_name_and_namespace() {
        use kube::runtime::reflector::ObjectRef;
        let compact = compact_ref(&ObjectRef::<ModelDeployment>::new("m").within("ns"));
        assert_eq!(compact.name, "m");
        assert_eq!(compact.namespace.as_deref(), Some("ns"));
        let cluster = compact_ref(&ObjectRef::<ModelDeployment>::new("c"));
        assert_eq!(cluster.namespace, None);
    }
}
