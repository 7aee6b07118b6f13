//! Reconcile triggers that never run ahead of the cache they read.
//!
//! kube's reflector buffers a re-list (`Init`, `InitApply`…, `InitDone`) and swaps the store
//! only at `InitDone`, while `touched_objects()` hands each `InitApply` object to the
//! controller at once. A reconcile triggered that way during a re-list reads the object's
//! *previous* version from the store, finds nothing to do, and is not triggered again: what
//! changed while the watch was down (after an API server restart, a deletion) waits for the
//! next resync. [`touched_once_stored`] holds the triggers of a re-list back until
//! `InitDone` and then triggers every object the store holds, so each reconcile reads what the
//! re-list found.

use std::hash::Hash;

use futures::{Stream, StreamExt, stream};
use kube::Resource;
use kube::runtime::reflector::Store;
use kube::runtime::watcher::{self, Event};

/// The objects `events` touched, as `touched_objects()` gives them, except that the objects
/// of a re-list come after its `InitDone`, read from `store` (the store `events` was reflected
/// into, which holds the re-list from then on). Nothing is kept during a re-list; at its end
/// each stored object is cloned once as it is handed on (the controller keeps its reference).
pub fn touched_once_stored<K, S>(
    events: S,
    store: Store<K>,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static
where
    K: Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone + Send + Sync,
    S: Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static,
{
    events
        .map(move |item| {
            let now: Vec<Result<K, watcher::Error>> = match item {
                Ok(Event::Apply(object) | Event::Delete(object)) => vec![Ok(object)],
                Ok(Event::Init | Event::InitApply(_)) => Vec::new(),
                Ok(Event::InitDone) => store
                    .state()
                    .into_iter()
                    .map(|object| Ok((*object).clone()))
                    .collect(),
                Err(e) => vec![Err(e)],
            };
            stream::iter(now)
        })
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1alpha1::ModelDeployment;
    use kube::runtime::WatchStreamExt;
    use kube::runtime::reflector::{self, ObjectRef};
    use serde_json::json;

    fn md(name: &str, rv: &str, deleting: bool) -> ModelDeployment {
        let mut object = json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
            "spec": {"model": {"id": "org/model"}},
        });
        if deleting {
            object["metadata"]["deletionTimestamp"] = json!("2026-11-28T01:42:11Z");
        }
        serde_json::from_value(object).unwrap()
    }

    fn rv(md: &ModelDeployment) -> String {
        md.metadata.resource_version.clone().unwrap_or_default()
    }

    #[tokio::test]
    async fn a_relisted_object_is_triggered_only_once_the_store_holds_it() {
        // Read the store at the moment each trigger comes out of the stream.
        let mut writer = reflector::store::Writer::<ModelDeployment>::default();
        writer.apply_watcher_event(&Event::Init);
        writer.apply_watcher_event(&Event::InitApply(md("a", "1", false)));
        writer.apply_watcher_event(&Event::InitApply(md("gone", "1", false)));
        writer.apply_watcher_event(&Event::InitDone);
        let store = writer.as_reader();
        // The watch was down: `a` was marked for deletion, `gone` deleted, `b` created. The
        // re-list says so; then an ordinary change of `b` follows.
        let events = vec![
            Event::Init,
            Event::InitApply(md("a", "5", true)),
            Event::InitApply(md("b", "6", false)),
            Event::InitDone,
            Event::Apply(md("b", "7", false)),
        ];
        let reflected = stream::iter(events.clone().into_iter().map(Ok)).reflect(writer);
        let mut seen = Vec::new();
        let mut triggers = std::pin::pin!(touched_once_stored(reflected, store.clone()));
        while let Some(object) = triggers.next().await {
            let object = object.unwrap();
            let stored = store
                .get(&ObjectRef::from_obj(&object))
                .map(|s| (rv(&s), s.metadata.deletion_timestamp.is_some()));
            seen.push((object.metadata.name.clone().unwrap(), rv(&object), stored));
        }
        seen.sort();
        assert_eq!(
            seen,
            vec![
                (
                    "a".to_string(),
                    "5".to_string(),
                    Some(("5".to_string(), true))
                ),
                (
                    "b".to_string(),
                    "6".to_string(),
                    Some(("6".to_string(), false))
                ),
                (
                    "b".to_string(),
                    "7".to_string(),
                    Some(("7".to_string(), false))
                ),
            ]
        );
        assert!(store.get(&ObjectRef::new("gone").within("ns")).is_none());

        // kube's `touched_objects()` on the same events triggers `a` while the store still
        // holds version 1 without the deletion: the reconcile would find nothing to do.
        let mut writer = reflector::store::Writer::<ModelDeployment>::default();
        writer.apply_watcher_event(&Event::Init);
        writer.apply_watcher_event(&Event::InitApply(md("a", "1", false)));
        writer.apply_watcher_event(&Event::InitDone);
        let store = writer.as_reader();
        let reflected = stream::iter(events.into_iter().map(Ok)).reflect(writer);
        let mut touched = std::pin::pin!(reflected.touched_objects());
        let first = touched.next().await.unwrap().unwrap();
        assert_eq!(rv(&first), "5");
        let stored = store.get(&ObjectRef::from_obj(&first)).unwrap();
        assert_eq!(
            (rv(&stored), stored.metadata.deletion_timestamp.is_some()),
            ("1".to_string(), false)
        );
    }

    #[tokio::test]
    async fn watch_errors_and_ordinary_events_pass_in_order() {
        let writer = reflector::store::Writer::<ModelDeployment>::default();
        let store = writer.as_reader();
        let items = vec![
            Ok(Event::Apply(md("a", "1", false))),
            Err(watcher::Error::NoResourceVersion),
            Ok(Event::Delete(md("a", "2", true))),
        ];
        let out: Vec<Result<String, String>> =
            touched_once_stored(stream::iter(items).reflect(writer), store)
                .map(|item| item.map(|o| rv(&o)).map_err(|e| e.to_string()))
                .collect()
                .await;
        assert_eq!(out.len(), 3);
        assert_eq!(out[0], Ok("1".to_string()));
        assert!(out[1].is_err());
        assert_eq!(out[2], Ok("2".to_string()));
    }
}
