//! Which caches a deployment change concerns, from the deployment watch's own events (no list
//! of deployments per cache reconcile): a deployment that starts or stops naming a cache, or
//! goes, re-queues that cache, which then counts its users from the deployment cache.

use std::collections::HashMap;

use airunway_api::storage;
use airunway_api::v1alpha1::{ModelCache, ModelDeployment};
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;

/// The cache a deployment names (`None`: it downloads nothing).
pub fn cache_of(md: &ModelDeployment) -> Option<ObjectRef<ModelCache>> {
    let download = storage::download(md)?;
    Some(ObjectRef::new(&download.cache_name).within(&md.namespace()?))
}

/// Every cache a deployment uses: its model's ([`cache_of`]), then its adapters'
/// ([`super::adapters::cache_names`]).
pub fn caches_of(md: &ModelDeployment) -> Vec<ObjectRef<ModelCache>> {
    let Some(namespace) = md.namespace() else {
        return Vec::new();
    };
    cache_of(md)
        .into_iter()
        .chain(
            super::adapters::cache_names(md)
                .iter()
                .map(|name| ObjectRef::new(name).within(&namespace)),
        )
        .collect()
}

/// What each deployment named when last seen.
#[derive(Debug, Default)]
pub struct UseTracker {
    named: HashMap<ObjectRef<ModelDeployment>, Vec<ObjectRef<ModelCache>>>,
    relisted: Vec<ObjectRef<ModelCache>>,
}

impl UseTracker {
    /// The caches whose users may have changed with `event` (each at most once).
    pub fn observe(
        &mut self,
        event: &watcher::Event<ModelDeployment>,
    ) -> Vec<ObjectRef<ModelCache>> {
        match event {
            watcher::Event::Apply(md) => self.seen(md),
            watcher::Event::Delete(md) => self
                .named
                .remove(&ObjectRef::from_obj(md))
                .unwrap_or_default(),
            watcher::Event::Init => {
                // A relist: deletions missed meanwhile show only as absence; remember what was
                // named so the end of the relist looks at those caches too.
                self.relisted = self.named.drain().flat_map(|(_, c)| c).collect();
                vec![]
            }
            watcher::Event::InitApply(md) => {
                self.seen(md);
                vec![]
            }
            watcher::Event::InitDone => {
                let mut all: Vec<_> = std::mem::take(&mut self.relisted);
                all.extend(self.named.values().flatten().cloned());
                all.sort_by_key(|c| c.to_string());
                all.dedup();
                all
            }
        }
    }

    fn seen(&mut self, md: &ModelDeployment) -> Vec<ObjectRef<ModelCache>> {
        let key = ObjectRef::from_obj(md);
        let now = caches_of(md);
        let before = if now.is_empty() {
            self.named.remove(&key)
        } else {
            self.named.insert(key, now.clone())
        }
        .unwrap_or_default();
        // The caches it started or stopped naming; those it still names need only their own
        // events (a deployment being deleted still counts as a user until it is gone).
        let stopped = before.iter().filter(|c| !now.contains(c));
        let started = now.iter().filter(|c| !before.contains(c));
        stopped.chain(started).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn md(name: &str, model: &str, shared: bool) -> ModelDeployment {
        let volumes = if shared {
            json!([{"name": "w", "purpose": "modelCache"}])
        } else {
            json!([])
        };
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"model": {"id": model, "storage": {"volumes": volumes}}},
        }))
        .unwrap()
    }

    #[test]
    fn starting_switching_and_stopping_use_requeue_the_caches_concerned() {
        let mut tracker = UseTracker::default();
        let a = md("a", "org/one", true);
        let one = cache_of(&a).unwrap();
        assert_eq!(
            tracker.observe(&watcher::Event::Apply(a.clone())),
            vec![one.clone()]
        );
        assert!(
            tracker
                .observe(&watcher::Event::Apply(a.clone()))
                .is_empty(),
            "no change"
        );
        let switched = md("a", "org/two", true);
        let two = cache_of(&switched).unwrap();
        assert_eq!(
            tracker.observe(&watcher::Event::Apply(switched.clone())),
            [one.clone(), two.clone()]
        );
        assert_eq!(
            tracker.observe(&watcher::Event::Apply(md("a", "org/two", false))),
            vec![two.clone()]
        );
        tracker.observe(&watcher::Event::Apply(switched.clone()));
        assert_eq!(
            tracker.observe(&watcher::Event::Delete(switched)),
            vec![two.clone()]
        );
    }

    #[test]
    fn adapters_added_and_removed_requeue_their_caches_only() {
        let mut tracker = UseTracker::default();
        let mut a = md("a", "org/one", true);
        let model = cache_of(&a).unwrap();
        assert_eq!(
            tracker.observe(&watcher::Event::Apply(a.clone())),
            vec![model.clone()]
        );
        a.spec.adapters = Some(
            serde_json::from_value(json!([{"name": "sql", "source": "org/sql-lora"},
                {"name": "tone", "source": "pvc://loras/tone"}]))
            .unwrap(),
        );
        let all = caches_of(&a);
        assert_eq!(all.len(), 2, "the model's and one adapter's");
        let adapter = all[1].clone();
        assert_eq!(
            tracker.observe(&watcher::Event::Apply(a.clone())),
            vec![adapter.clone()]
        );
        a.spec.adapters = None;
        assert_eq!(
            tracker.observe(&watcher::Event::Apply(a.clone())),
            [adapter]
        );
        assert_eq!(tracker.observe(&watcher::Event::Delete(a)), [model]);
    }

    #[test]
    fn a_relist_requeues_every_cache_named_before_or_after() {
        let mut tracker = UseTracker::default();
        tracker.observe(&watcher::Event::Apply(md("a", "org/one", true)));
        assert!(tracker.observe(&watcher::Event::Init).is_empty());
        assert!(
            tracker
                .observe(&watcher::Event::InitApply(md("b", "org/two", true)))
                .is_empty()
        );
        let all = tracker.observe(&watcher::Event::InitDone);
        assert_eq!(all.len(), 2);
    }
}
