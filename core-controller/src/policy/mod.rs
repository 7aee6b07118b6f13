//! ModelDeploymentPolicy enforcement (docs/policy.md): guardrails per namespace and the GPU
//! quota, at admission and at reconcile time. The rules and the GPU accounting are pure
//! ([`airunway_api::policy`]); this module holds the caches they read and the I/O:
//!
//! - [`Policies`]: the caches every replica keeps (policies, namespace labels, runtime
//!   configs) and the effective deployment they give;
//! - [`ledger`] (pure): the per-namespace GPU ledger, a ConfigMap in the core's namespace;
//! - [`admission`]: the validating webhook's check, with the ledger written under optimistic
//!   concurrency so a burst of creates cannot overrun a quota;
//! - [`reconcile`]: `PolicyCompliant` and the hold of a deployment no provider serves yet;
//! - [`sync`] (leader): the ledger kept in step with the deployments, and the deployments to
//!   look at again when a policy, a namespace's labels or a neighbour change.

pub mod admission;
pub mod ledger;
pub mod reconcile;
pub mod sync;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use airunway_api::kube_error::ErrorClass;
use airunway_api::runtime::{InvalidObjects, WatchBackoff, guarded_watcher, touched_once_stored};
use airunway_api::runtime_config;
use airunway_api::v1alpha1::{
    ClusterRuntimeConfig, ModelDeployment, ModelDeploymentPolicy, RuntimeConfig,
};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Client, ResourceExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use reconcile::Enforcement;

/// How long the caches may take to fill at start.
const CACHE_SYNC_TIMEOUT: Duration = Duration::from_secs(60);

/// Policy and namespace changes waiting for the leader's trigger task.
const CHANGES_BUFFER: usize = 1024;

/// Errors of policy enforcement.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// A Kubernetes request failed.
    #[error("{action} {object}: {source}")]
    Api {
        /// What was being done.
        action: &'static str,
        /// The object.
        object: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// A cache did not fill in time.
    #[error("the {0} cache did not fill within 60 s")]
    NotSynced(&'static str),
}

impl PolicyError {
    /// A short, static label for metrics and logs.
    pub fn category(&self) -> &'static str {
        match self {
            PolicyError::Api { source, .. } => ErrorClass::of(source).category(),
            PolicyError::NotSynced(_) => "not_synced",
        }
    }
}

/// A policy or a namespace changed (for the leader's triggers).
#[derive(Clone, Debug)]
pub enum Change {
    /// A policy was created, changed or deleted.
    Policy(String),
    /// A namespace was created, relabelled or deleted.
    Namespace(String),
}

/// The caches policy enforcement reads, on every replica (the webhooks serve on all).
pub struct Policies {
    /// The policies.
    pub policies: Store<ModelDeploymentPolicy>,
    /// Namespaces (metadata only: their labels).
    pub namespaces: Store<PartialObjectMeta<Namespace>>,
    /// RuntimeConfigs (a deployment's defaults count in its GPU demand and image).
    pub runtime_configs: Store<RuntimeConfig>,
    /// ClusterRuntimeConfigs.
    pub cluster_runtime_configs: Store<ClusterRuntimeConfig>,
    /// API client (the ledger).
    pub client: Client,
    /// Where the GPU ledgers live: the core's own namespace.
    pub ledger_namespace: String,
}

/// Where a cache announces its changes, and how an object becomes a [`Change`].
type Announce<K> = (mpsc::Sender<Change>, fn(&K) -> Change);

fn spawn_reflector<K>(
    client: Client,
    invalid: InvalidObjects,
    shutdown: CancellationToken,
    changes: Option<Announce<K>>,
) -> Store<K>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let (store, writer) = reflector::store();
    // Each object decoded on its own: one that does not decode is reported and skipped.
    let stream = guarded_watcher(client, watcher::Config::default(), invalid, store.clone())
        .backoff(WatchBackoff::default())
        .reflect(writer);
    // A re-list's triggers once the store holds it (`stored_triggers`).
    let stream = touched_once_stored(stream, store.clone());
    tokio::spawn(async move {
        futures::pin_mut!(stream);
        loop {
            let item = tokio::select! {
                _ = shutdown.cancelled() => return,
                item = stream.next() => item,
            };
            match item {
                Some(Ok(object)) => {
                    if let Some((sender, change)) = &changes {
                        // A full buffer means a burst is queued; the resync covers the rest.
                        let _ = sender.try_send(change(&object));
                    }
                }
                Some(Err(e)) => tracing::warn!(error = %e, "policy cache watch failed; retrying"),
                None => return,
            }
        }
    });
    store
}

/// Waits until `store` is filled, at most [`CACHE_SYNC_TIMEOUT`].
async fn wait_ready<K>(store: &Store<K>, what: &'static str) -> Result<(), PolicyError>
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    match tokio::time::timeout(CACHE_SYNC_TIMEOUT, store.wait_until_ready()).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(PolicyError::NotSynced(what)),
    }
}

impl Policies {
    /// Starts the caches and waits until they are filled. The returned receiver tells the
    /// leader's trigger task of policy and namespace changes.
    pub async fn start(
        client: Client,
        ledger_namespace: String,
        invalid: InvalidObjects,
        shutdown: CancellationToken,
    ) -> Result<(Arc<Policies>, mpsc::Receiver<Change>), PolicyError> {
        let (sender, receiver) = mpsc::channel(CHANGES_BUFFER);
        let policies = spawn_reflector::<ModelDeploymentPolicy>(
            client.clone(),
            invalid.clone(),
            shutdown.clone(),
            Some((sender.clone(), |p: &ModelDeploymentPolicy| {
                Change::Policy(p.name_any())
            })),
        );
        let runtime_configs = spawn_reflector::<RuntimeConfig>(
            client.clone(),
            invalid.clone(),
            shutdown.clone(),
            None,
        );
        let cluster_runtime_configs = spawn_reflector::<ClusterRuntimeConfig>(
            client.clone(),
            invalid.clone(),
            shutdown.clone(),
            None,
        );
        let (namespaces, writer) = reflector::store();
        let stream = watcher(
            Api::<PartialObjectMeta<Namespace>>::all(client.clone()),
            watcher::Config::default(),
        )
        .backoff(WatchBackoff::default())
        .reflect(writer);
        let stream = touched_once_stored(stream, namespaces.clone());
        let stop = shutdown.clone();
        tokio::spawn(async move {
            futures::pin_mut!(stream);
            let mut seen: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
            loop {
                let item = tokio::select! {
                    _ = stop.cancelled() => return,
                    item = stream.next() => item,
                };
                match item {
                    Some(Ok(namespace)) => {
                        // Only a change of labels can change which policies select it.
                        let name = namespace.name_any();
                        let labels = namespace.labels().clone();
                        if seen.get(&name) != Some(&labels) {
                            seen.insert(name.clone(), labels);
                            let _ = sender.try_send(Change::Namespace(name));
                        }
                    }
                    Some(Err(e)) => {
                        tracing::warn!(error = %e, "namespace watch failed; retrying")
                    }
                    None => return,
                }
            }
        });
        wait_ready(&policies, "ModelDeploymentPolicy").await?;
        wait_ready(&namespaces, "Namespace").await?;
        wait_ready(&runtime_configs, "RuntimeConfig").await?;
        wait_ready(&cluster_runtime_configs, "ClusterRuntimeConfig").await?;
        Ok((
            Arc::new(Policies {
                policies,
                namespaces,
                runtime_configs,
                cluster_runtime_configs,
                client,
                ledger_namespace,
            }),
            receiver,
        ))
    }

    /// The labels of `namespace` (none when it is not cached).
    pub fn namespace_labels(&self, namespace: &str) -> BTreeMap<String, String> {
        self.namespaces
            .get(&ObjectRef::new(namespace))
            .map(|n| n.labels().clone())
            .unwrap_or_default()
    }

    /// The policies selecting `namespace`, by name.
    pub fn selecting(&self, namespace: &str) -> Vec<Arc<ModelDeploymentPolicy>> {
        if self.policies.is_empty() {
            return vec![];
        }
        let labels = self.namespace_labels(namespace);
        let mut selecting: Vec<_> = self
            .policies
            .state()
            .into_iter()
            .filter(|p| airunway_api::policy::selects(p, &labels))
            .collect();
        selecting.sort_by_key(|p| p.name_any());
        selecting
    }

    /// The deployment as the rules judge it: its runtime configuration's defaults applied
    /// (from the caches; a missing config applies nothing).
    pub fn effective(&self, md: &ModelDeployment) -> ModelDeployment {
        let resolution = runtime_config::resolve(
            md,
            |namespace, name| {
                self.runtime_configs
                    .get(&ObjectRef::new(name).within(namespace))
            },
            |name| self.cluster_runtime_configs.get(&ObjectRef::new(name)),
        );
        runtime_config::apply(md, resolution.defaults()).deployment
    }
}
