//! Watches that survive an object they cannot decode: each object is decoded on its own
//! ([`Guarded`]); one that does not decode is reported on the object (a Warning event
//! [`INVALID_OBJECT`], once per resourceVersion) and in the log, and skipped. The list or
//! watch it arrived in goes on; the rest of the kind keeps reconciling.
//!
//! Skipped means: a store keeps the last version of the object that decoded (a controller
//! goes on serving what it served; a deletion, or a deletion time and finalizers, still
//! reach it), and holds nothing for an object that never decoded. docs/reliability.md.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::compact_resource::CompactResource;
use crate::constants::event_actions::DECODE;
use crate::constants::event_reasons::INVALID_OBJECT;
use crate::guarded_decode::{Guarded, InvalidObject};
use crate::runtime::EventPublisher;

/// Reports the objects the watches of one process could not decode: a Warning event on the
/// object and a log line, once per object and resourceVersion (a relist, or a second watch of
/// the same kind, reports nothing new). Cheap to clone; clones share what was reported.
#[derive(Clone)]
pub struct InvalidObjects {
    events: EventPublisher,
    reported: Arc<Mutex<Reported>>,
}

/// The resourceVersion last reported for each object (by uid, or namespace/name without one).
#[derive(Default, Debug)]
pub struct Reported(HashMap<String, String>);

impl Reported {
    /// Whether `invalid` is news: not reported at its resourceVersion before. Records it.
    pub fn first_report(&mut self, kind: &str, invalid: &InvalidObject) -> bool {
        let key = key(kind, &invalid.metadata);
        let version = invalid
            .metadata
            .resource_version
            .clone()
            .unwrap_or_default();
        self.0.insert(key, version.clone()).as_deref() != Some(version.as_str())
    }

    /// Forgets the object with `meta` (it decodes again, or is gone): a later failure is
    /// reported again.
    pub fn forget(&mut self, kind: &str, meta: &ObjectMeta) {
        if !self.0.is_empty() {
            self.0.remove(&key(kind, meta));
        }
    }
}

fn key(kind: &str, meta: &ObjectMeta) -> String {
    match &meta.uid {
        Some(uid) => format!("{kind}/{uid}"),
        None => format!(
            "{kind}/{}/{}",
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default()
        ),
    }
}

impl InvalidObjects {
    /// A reporter publishing through `events`.
    pub fn new(events: EventPublisher) -> Self {
        InvalidObjects {
            events,
            reported: Arc::default(),
        }
    }

    /// Logs `invalid` (an object of kind `K`) and publishes its event, unless reported at
    /// this resourceVersion already.
    fn report<K: Resource<DynamicType = ()>>(&self, invalid: &InvalidObject) {
        let kind = K::kind(&());
        let news = self
            .reported
            .lock()
            .map(|mut r| r.first_report(&kind, invalid))
            .unwrap_or(true);
        if !news {
            return;
        }
        let meta = &invalid.metadata;
        tracing::warn!(
            kind = %kind,
            namespace = meta.namespace.as_deref().unwrap_or_default(),
            name = meta.name.as_deref().unwrap_or_default(),
            resource_version = meta.resource_version.as_deref().unwrap_or_default(),
            field = invalid.path.as_deref().unwrap_or_default(),
            error = %invalid.error,
            "object does not decode: skipped"
        );
        let regarding = ObjectReference {
            api_version: Some(K::api_version(&()).into_owned()),
            kind: Some(kind.into_owned()),
            name: meta.name.clone(),
            namespace: meta.namespace.clone(),
            uid: meta.uid.clone(),
            resource_version: meta.resource_version.clone(),
            ..ObjectReference::default()
        };
        let note = note(invalid);
        let events = self.events.clone();
        tokio::spawn(async move {
            events
                .warning(&regarding, INVALID_OBJECT, DECODE, note)
                .await;
        });
    }

    fn forget<K: Resource<DynamicType = ()>>(&self, meta: &ObjectMeta) {
        if let Ok(mut reported) = self.reported.lock() {
            reported.forget(&K::kind(&()), meta);
        }
    }
}

/// The note of an [`INVALID_OBJECT`] event: what failed, and what to do.
pub fn note(invalid: &InvalidObject) -> String {
    let fix = if invalid.is_too_deep() {
        "nest the field less deeply (the admission webhook and policy refuse more than 15 \
         levels of provider.overrides)"
    } else {
        "correct the field's type"
    };
    format!(
        "Object cannot be decoded and is skipped until it changes: {}; {fix}",
        invalid.describe()
    )
}

/// What a watch event of a guarded object becomes for a store of `K`: a decoded object as it
/// is; an invalid one as the last decoded version of the same object in `last` (uid equal),
/// with the invalid one's deletion time and finalizers, or nothing when there is none.
pub fn resolve<K>(
    event: Event<Guarded<K>>,
    last: impl Fn(&InvalidObject) -> Option<Arc<K>>,
) -> Option<Event<K>>
where
    K: Resource + Clone,
{
    let substitute = |guarded: Guarded<K>| match guarded {
        Guarded::Valid(k) => Some(k),
        Guarded::Invalid(invalid) => last(&invalid)
            .filter(|k| k.meta().uid == invalid.metadata.uid)
            .map(|k| {
                let mut k = (*k).clone();
                let meta = k.meta_mut();
                meta.deletion_timestamp = invalid.metadata.deletion_timestamp.clone();
                meta.finalizers = invalid.metadata.finalizers.clone();
                k
            }),
    };
    match event {
        Event::Apply(g) => substitute(g).map(Event::Apply),
        Event::InitApply(g) => substitute(g).map(Event::InitApply),
        Event::Delete(g) => substitute(g).map(Event::Delete),
        Event::Init => Some(Event::Init),
        Event::InitDone => Some(Event::InitDone),
    }
}

/// Where [`guarded_watcher`] finds the last decoded version of an object: the store its
/// stream feeds, typed or compact.
pub trait LastDecoded<K>: Send + Sync + 'static {
    /// The stored version of `name` in `namespace`, as a `K`.
    fn last_decoded(&self, name: &str, namespace: Option<&str>) -> Option<Arc<K>>;
}

impl<K> LastDecoded<K> for Store<K>
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    fn last_decoded(&self, name: &str, namespace: Option<&str>) -> Option<Arc<K>> {
        let at = ObjectRef::<K>::new(name);
        self.get(&match namespace {
            Some(namespace) => at.within(namespace),
            None => at,
        })
    }
}

impl<K> LastDecoded<K> for Store<CompactResource<K>>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    fn last_decoded(&self, name: &str, namespace: Option<&str>) -> Option<Arc<K>> {
        let at = ObjectRef::<CompactResource<K>>::new(name);
        let held = self.get(&match namespace {
            Some(namespace) => at.within(namespace),
            None => at,
        })?;
        held.decode().ok().map(Arc::new)
    }
}

/// A watcher of every `K` in the cluster (`config` as for kube's `watcher`) that decodes each
/// object on its own: objects that do not decode are reported through `invalid` and replaced
/// as [`resolve`] says, `last` being the store the stream then feeds. Apply backoff, trimming
/// and `reflect` to the result as to a plain watcher.
pub fn guarded_watcher<K>(
    client: Client,
    config: watcher::Config,
    invalid: InvalidObjects,
    last: impl LastDecoded<K>,
) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static
where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    kube::runtime::watcher(Api::<Guarded<K>>::all(client), config).filter_map(move |item| {
        let out = match item {
            Err(e) => Some(Err(e)),
            Ok(event) => {
                observe(&event, &invalid);
                resolve(event, |bad| {
                    let name = bad.metadata.name.as_deref()?;
                    last.last_decoded(name, bad.metadata.namespace.as_deref())
                })
                .map(Ok)
            }
        };
        std::future::ready(out)
    })
}

/// Reports the invalid object of `event`, or forgets a decoded (or deleted) one.
fn observe<K: Resource<DynamicType = ()>>(event: &Event<Guarded<K>>, invalid: &InvalidObjects) {
    match event {
        Event::Apply(Guarded::Invalid(bad)) | Event::InitApply(Guarded::Invalid(bad)) => {
            invalid.report::<K>(bad)
        }
        Event::Apply(Guarded::Valid(k)) | Event::InitApply(Guarded::Valid(k)) => {
            invalid.forget::<K>(k.meta())
        }
        Event::Delete(g) => invalid.forget::<K>(g.meta()),
        Event::Init | Event::InitDone => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guarded_decode::decode;
    use crate::v1alpha1::ModelDeployment;
    use serde_json::json;

    fn text(rv: &str, model: serde_json::Value, deleting: bool) -> String {
        let mut object = json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns", "uid": "u1", "resourceVersion": rv},
            "spec": {"model": {"id": model}},
        });
        if deleting {
            object["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
            object["metadata"]["finalizers"] = json!(["airunway.ai/x"]);
        }
        object.to_string()
    }

    #[test]
    fn an_invalid_object_without_a_decoded_version_is_skipped() {
        let bad = decode::<ModelDeployment>(&text("2", json!(7), false));
        assert!(resolve(Event::Apply(bad.clone()), |_| None).is_none());
        assert!(resolve(Event::InitApply(bad.clone()), |_| None).is_none());
        assert!(resolve(Event::Delete(bad), |_| None).is_none());
        assert!(matches!(
            resolve::<ModelDeployment>(Event::InitDone, |_| None),
            Some(Event::InitDone)
        ));
    }

    #[test]
    fn an_invalid_object_keeps_its_last_decoded_version_with_its_deletion() {
        let good = decode::<ModelDeployment>(&text("1", json!("org/model"), false))
            .into_valid()
            .unwrap();
        let last = Arc::new(good.clone());
        let bad = decode::<ModelDeployment>(&text("2", json!(7), true));
        let Some(Event::Apply(kept)) = resolve(Event::Apply(bad.clone()), |_| Some(last.clone()))
        else {
            panic!("not kept");
        };
        assert_eq!(kept.spec.model.id.as_deref(), Some("org/model"));
        assert!(kept.metadata.deletion_timestamp.is_some());
        assert_eq!(
            kept.metadata.finalizers.as_deref(),
            Some(&["airunway.ai/x".to_string()][..])
        );
        assert!(matches!(
            resolve(Event::Delete(bad.clone()), |_| Some(last.clone())),
            Some(Event::Delete(_))
        ));
        // Another object of the same name (a new uid) is not the one kept.
        let mut other = good;
        other.metadata.uid = Some("u0".into());
        assert!(resolve(Event::Apply(bad), |_| Some(Arc::new(other.clone()))).is_none());
    }

    #[test]
    fn each_resource_version_is_reported_once() {
        let mut reported = Reported::default();
        let bad = |rv| {
            decode::<ModelDeployment>(&text(rv, json!(7), false))
                .into_valid()
                .unwrap_err()
        };
        assert!(reported.first_report("ModelDeployment", &bad("2")));
        assert!(!reported.first_report("ModelDeployment", &bad("2")));
        assert!(reported.first_report("ModelDeployment", &bad("3")));
        reported.forget("ModelDeployment", &bad("3").metadata);
        assert!(reported.first_report("ModelDeployment", &bad("3")));
    }

    #[test]
    fn the_note_names_the_field_and_the_fix() {
        let bad = decode::<ModelDeployment>(&text("2", json!(7), false))
            .into_valid()
            .unwrap_err();
        let note = note(&bad);
        assert!(note.contains("field spec.model.id: invalid type"), "{note}");
        assert!(note.contains("correct the field's type"), "{note}");
    }
}
