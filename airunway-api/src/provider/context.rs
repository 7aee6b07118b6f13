//! The state every step of a provider reconcile shares: the provider, the client, the kind
//! kind table (see [`super::kinds`]) with each kind's read-your-writes cache and the bookkeeping between reconciles. The steps
//! ([`super::reconcile`], [`super::finalizer`], [`super::preparation`],
//! [`super::status_write`]) depend on this module; it depends on none of them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, PropagationPolicy};
use kube::{Client, ResourceExt};

use super::error::{ReconcileError, api_error};
use super::kinds::{KindId, KindTable};
use super::metrics::ProviderMetrics;
use super::read_your_writes::{LiveObjects, RecentDeployments};
use super::runtime_configs::ConfigStores;
use super::traits::{Provider, SchemaDetection, UpstreamKind};
use crate::constants::{field_managers, finalizers};
use crate::runtime::EventPublisher;
use crate::v1alpha1::ModelDeployment;

/// The kind table with the cache of each kind's objects (as the watch and this provider's own
/// writes show them), in the table's order.
pub struct Kinds {
    table: KindTable,
    caches: Vec<LiveObjects>,
}

impl Kinds {
    /// `table` with `caches`, one per kind in the table's order.
    pub fn new(table: KindTable, caches: Vec<LiveObjects>) -> Kinds {
        Kinds { table, caches }
    }

    /// The kind table.
    pub fn table(&self) -> &KindTable {
        &self.table
    }

    /// The kind of `id`.
    pub fn kind(&self, id: KindId) -> Result<&UpstreamKind, ReconcileError> {
        self.table.get(id).ok_or(ReconcileError::UnknownKind(id))
    }

    /// The cache of kind `id`.
    pub fn cache(&self, id: KindId) -> Result<&LiveObjects, ReconcileError> {
        self.table
            .iter()
            .position(|(i, _)| i == id)
            .and_then(|i| self.caches.get(i))
            .ok_or(ReconcileError::UnknownKind(id))
    }

    /// Every kind's id with its cache.
    fn caches(&self) -> impl Iterator<Item = (KindId, &LiveObjects)> {
        self.table.iter().map(|(id, _)| id).zip(&self.caches)
    }
}

/// Everything the reconcile needs.
pub struct Context<P: Provider> {
    /// The provider's pure functions.
    pub provider: Arc<P>,
    /// API client.
    pub client: Client,
    /// The latest upstream detection (refreshed when the CRD changes).
    pub detection: Arc<RwLock<SchemaDetection>>,
    /// The kinds this provider writes, each with its cache.
    pub kinds: Kinds,
    /// Events.
    pub events: EventPublisher,
    /// `--finalizer-timeout`.
    pub finalizer_timeout: Duration,
    /// `--resync-interval`: a periodic re-check from the caches (no API call unless a write is
    /// due).
    pub resync: Duration,
    /// Metrics.
    pub metrics: ProviderMetrics,
    /// When each deployment that moved to another provider was first seen (cleanup timeout).
    pub moved_since: Mutex<HashMap<String, Instant>>,
    /// The generation whose render warnings were already published, per deployment.
    pub warned: Mutex<HashMap<String, i64>>,
    /// Consecutive failed reconciles per deployment (the retry backoff).
    pub failures: crate::runtime::FailureCounts,
    /// The deployments as this provider's own writes returned them (see [`RecentDeployments`]).
    pub recent: RecentDeployments,
    /// What rendered objects are checked against before they are applied.
    pub pod_security: crate::pod_security::Policy,
    /// `--stale-status-threshold` (see [`super::staleness`]).
    pub stale_threshold: Duration,
    /// The watched Pods, trimmed ([`crate::cache_trim::trim_pod`]), when the provider declares
    /// [`Provider::pod_watch_selector`].
    pub pods: Option<kube::runtime::reflector::Store<k8s_openapi::api::core::v1::Pod>>,
    /// The watched runtime configurations (see [`super::runtime_configs`]).
    pub runtime_configs: ConfigStores,
}

impl<P: Provider> Context<P> {
    /// Field manager `<name>-provider`.
    pub(super) fn manager(&self) -> String {
        field_managers::provider(self.provider.name())
    }

    /// Finalizer `airunway.ai/<name>-provider`.
    pub(super) fn finalizer(&self) -> String {
        finalizers::provider(self.provider.name())
    }

    /// The current detection.
    pub(super) fn detection(&self) -> SchemaDetection {
        self.detection
            .read()
            .map(|d| d.clone())
            .unwrap_or(SchemaDetection::NotEstablished {
                crd: self.kinds.table.primary().crd_name(),
            })
    }

    /// The API of kind `id` in `namespace` (the upstream kind at its detected version, the
    /// secondary kinds at their default version).
    pub(super) fn api(
        &self,
        id: KindId,
        namespace: &str,
    ) -> Result<Api<DynamicObject>, ReconcileError> {
        let kind = self.kinds.kind(id)?;
        let version = if id == KindId::PRIMARY {
            self.detection()
                .schema()
                .map(|s| s.version.clone())
                .unwrap_or_else(|| kind.default_version.clone())
        } else {
            kind.default_version.clone()
        };
        let resource = ApiResource {
            group: kind.group.clone(),
            version: version.clone(),
            api_version: kind.api_version(&version),
            kind: kind.kind.clone(),
            plural: kind.plural.clone(),
        };
        Ok(Api::namespaced_with(
            self.client.clone(),
            namespace,
            &resource,
        ))
    }

    /// The cached objects that may be `md`'s, by kind: with secondary kinds, every cached
    /// object labelled for it; else its one upstream object (of its name). Not filtered by
    /// ownership: the planner tells a foreign object from an owned one.
    pub(super) fn observed(&self, md: &ModelDeployment) -> Vec<(KindId, Arc<DynamicObject>)> {
        let namespace = md.namespace().unwrap_or_default();
        let name = md.name_any();
        if !self.kinds.table.has_secondary() {
            return self
                .kinds
                .cache(KindId::PRIMARY)
                .ok()
                .and_then(|cache| cache.get(&namespace, &name))
                .map(|o| (KindId::PRIMARY, o))
                .into_iter()
                .collect();
        }
        self.kinds
            .caches()
            .flat_map(|(id, cache)| {
                cache
                    .labelled_for(&namespace, &name)
                    .into_iter()
                    .map(move |o| (id, o))
            })
            .collect()
    }

    /// The live objects this provider created for `md` (see [`Context::observed`]), owned by
    /// it.
    pub(super) fn owned_objects(&self, md: &ModelDeployment) -> Vec<(KindId, Arc<DynamicObject>)> {
        self.observed(md)
            .into_iter()
            .filter(|(_, o)| {
                serde_json::to_value(o.as_ref())
                    .is_ok_and(|value| super::desired::owned_by(&value, md))
            })
            .collect()
    }

    /// [`Context::owned_objects`] read from the API server instead of the caches: what a
    /// deletion confirms before it releases the finalizer, since a watch that is re-listing (its
    /// CRD deleted and re-created, say) can briefly miss an object that is there. A kind whose
    /// resource is not served (its CRD gone) has no objects.
    pub(super) async fn owned_objects_live(
        &self,
        md: &ModelDeployment,
    ) -> Result<Vec<(KindId, DynamicObject)>, ReconcileError> {
        let namespace = md.namespace().unwrap_or_default();
        let name = md.name_any();
        let mut found = Vec::new();
        for (id, kind) in self.kinds.table.iter() {
            let api = self.api(id, &namespace)?;
            let objects = if self.kinds.table.has_secondary() {
                let selector = format!("{}={name}", crate::constants::labels::DEPLOYMENT);
                match api.list(&ListParams::default().labels(&selector)).await {
                    Ok(list) => list.items,
                    Err(kube::Error::Api(status)) if status.code == 404 => Vec::new(),
                    Err(e) => {
                        let kind = &kind.kind;
                        return Err(api_error(format!("listing {kind} of {namespace}/{name}"))(
                            e,
                        ));
                    }
                }
            } else if id == KindId::PRIMARY {
                match api.get_opt(&name).await {
                    Ok(object) => object.into_iter().collect(),
                    Err(kube::Error::Api(status)) if status.code == 404 => Vec::new(),
                    Err(e) => {
                        let kind = &kind.kind;
                        return Err(api_error(format!("reading {kind} {namespace}/{name}"))(e));
                    }
                }
            } else {
                Vec::new()
            };
            found.extend(
                objects
                    .into_iter()
                    .filter(|o| {
                        serde_json::to_value(o).is_ok_and(|v| super::desired::owned_by(&v, md))
                    })
                    .map(|o| (id, o)),
            );
        }
        Ok(found)
    }

    /// The watched Pods of `namespace` (none without a Pod watch).
    pub(super) fn pods_in(&self, namespace: &str) -> Vec<Arc<k8s_openapi::api::core::v1::Pod>> {
        self.pods
            .as_ref()
            .map(|store| {
                store
                    .state()
                    .into_iter()
                    .filter(|pod| pod.metadata.namespace.as_deref() == Some(namespace))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Waits (at most `limit`) until every watch has listed its objects once.
    pub(super) async fn caches_ready(&self, limit: Duration) -> bool {
        for (_, cache) in self.kinds.caches() {
            if !cache.ready(limit).await {
                return false;
            }
        }
        true
    }

    /// Deletes object `namespace/name` of kind `id` (gone already is fine).
    pub(super) async fn delete_object(
        &self,
        id: KindId,
        namespace: &str,
        name: &str,
    ) -> Result<(), ReconcileError> {
        let (kind, cache) = (self.kinds.kind(id)?, self.kinds.cache(id)?);
        let result = self
            .api(id, namespace)?
            .delete(
                name,
                &DeleteParams {
                    propagation_policy: Some(PropagationPolicy::Background),
                    ..Default::default()
                },
            )
            .await;
        match result {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => {
                let kind = &kind.kind;
                return Err(api_error(format!("deleting {kind} {namespace}/{name}"))(e));
            }
        }
        cache.forget(namespace, name);
        Ok(())
    }
}
