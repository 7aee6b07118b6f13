//! The live upstream objects a provider manages: its watch cache, plus the objects it applied
//! that the watch has not delivered yet. Without the second part a reconcile woken right after
//! an apply (by the deployment's own status write, say) would find no object in the cache and
//! create it again.
//!
//! The watch cache holds [`CompactObject`]s (metadata parsed, the rest as JSON text); an object
//! read is decoded whole, so readers see [`DynamicObject`]s.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::{ObjectRef, Store};

use super::older;
use crate::compact_object::CompactObject;

/// Objects applied and not yet seen by the watch, by namespace and name.
type AppliedObjects = HashMap<(String, String), Arc<DynamicObject>>;

/// Cached upstream objects by namespace and name.
#[derive(Clone)]
pub struct LiveObjects {
    store: Store<CompactObject>,
    resource: ApiResource,
    applied: Arc<Mutex<AppliedObjects>>,
}

impl LiveObjects {
    /// Reads `store`, the reflector of the provider's upstream watch of `resource`.
    pub fn new(store: Store<CompactObject>, resource: ApiResource) -> LiveObjects {
        LiveObjects {
            store,
            resource,
            applied: Arc::default(),
        }
    }

    /// The newest known object `namespace/name`.
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<DynamicObject>> {
        let cached = self
            .store
            .get(&ObjectRef::new_with(name, self.resource.clone()).within(namespace));
        let decoded = |cached: Arc<CompactObject>| Arc::new(cached.to_dynamic());
        let key = (namespace.to_string(), name.to_string());
        let Ok(mut applied) = self.applied.lock() else {
            return cached.map(decoded);
        };
        match (applied.get(&key), cached) {
            (Some(mine), Some(cached)) => {
                if older(
                    cached.metadata.resource_version.as_deref(),
                    mine.metadata.resource_version.as_deref(),
                ) {
                    Some(mine.clone())
                } else {
                    // The watch caught up.
                    applied.remove(&key);
                    Some(decoded(cached))
                }
            }
            (Some(mine), None) => Some(mine.clone()),
            (None, cached) => cached.map(decoded),
        }
    }

    /// Every known object in `namespace` labelled `airunway.ai/deployment: <deployment>` (a scan
    /// of the cache: for providers managing sets of objects).
    pub fn labelled_for(&self, namespace: &str, deployment: &str) -> Vec<Arc<DynamicObject>> {
        let matches = |o: &ObjectMeta| {
            o.namespace.as_deref() == Some(namespace)
                && o.labels
                    .as_ref()
                    .and_then(|l| l.get(crate::constants::labels::DEPLOYMENT))
                    .map(String::as_str)
                    == Some(deployment)
        };
        let mut names: Vec<String> = self
            .store
            .state()
            .iter()
            .filter(|o| matches(&o.metadata))
            .filter_map(|o| o.metadata.name.clone())
            .collect();
        if let Ok(applied) = self.applied.lock() {
            names.extend(
                applied
                    .iter()
                    .filter(|(_, o)| matches(&o.metadata))
                    .map(|((_, name), _)| name.clone()),
            );
        }
        names.sort();
        names.dedup();
        names
            .iter()
            .filter_map(|name| self.get(namespace, name))
            .collect()
    }

    /// Waits (at most `limit`) until the watch has listed every object once; `false` if it has
    /// not. Before that, a missing object may merely not be listed yet.
    pub async fn ready(&self, limit: std::time::Duration) -> bool {
        matches!(
            tokio::time::timeout(limit, self.store.wait_until_ready()).await,
            Ok(Ok(()))
        )
    }

    /// Records an object this provider just applied.
    pub fn remember(&self, object: DynamicObject) {
        let (Some(namespace), Some(name)) = (
            object.metadata.namespace.clone(),
            object.metadata.name.clone(),
        ) else {
            return;
        };
        if let Ok(mut applied) = self.applied.lock() {
            applied.insert((namespace, name), Arc::new(object));
        }
    }

    /// Forgets what this provider applied to `namespace/name` (it deleted it).
    pub fn forget(&self, namespace: &str, name: &str) {
        if let Ok(mut applied) = self.applied.lock() {
            applied.remove(&(namespace.to_string(), name.to_string()));
        }
    }
}
