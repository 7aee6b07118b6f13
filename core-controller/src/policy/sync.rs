//! The leader's policy task (watch-driven, no polling):
//! - a policy change re-queues exactly the deployments of the namespaces it selects now or
//!   selected before; a namespace whose labels change re-queues its deployments;
//! - a deployment change in a namespace under a quota re-queues the neighbours whose quota
//!   verdict may change (those over the quota in creation order, and those reported over it);
//! - the namespace's GPU ledger is brought in step with the deployments
//!   ([`Ledger::sync`]): deleted deployments and never-created ones (after the grace) pruned,
//!   deployments admitted while the webhook was down added; a ledger no quota needs any more
//!   is deleted.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use airunway_api::constants::{condition_types, reasons};
use airunway_api::policy;
use airunway_api::v1alpha1::ModelDeployment;
use futures::Stream;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::ledger::{self, IN_FLIGHT_GRACE, Ledger, Live};
use super::{Change, Enforcement, PolicyError};

/// Deployment events waiting for the policy task.
const EVENTS_BUFFER: usize = 4096;

/// Events of one burst handled together.
const DEBOUNCE: Duration = Duration::from_millis(200);

/// A deployment the watch saw change or go.
#[derive(Clone, Debug)]
pub struct Touched {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its uid, when it was deleted.
    pub deleted_uid: Option<String>,
}

/// The deployment watch's events for the policy task (fed from the core's one deployment
/// watch; nothing is sent while nobody leads).
#[derive(Clone, Debug)]
pub struct DeploymentEvents {
    sender: mpsc::Sender<Touched>,
}

impl DeploymentEvents {
    /// A channel; the receiver goes to [`start`].
    pub fn new() -> (DeploymentEvents, mpsc::Receiver<Touched>) {
        let (sender, receiver) = mpsc::channel(EVENTS_BUFFER);
        (DeploymentEvents { sender }, receiver)
    }

    /// Records a watch event (a full buffer drops it: the reconcile's resync covers it).
    pub fn observe(&self, event: &watcher::Event<ModelDeployment>) {
        let (md, deleted) = match event {
            watcher::Event::Apply(md) | watcher::Event::InitApply(md) => (md, false),
            watcher::Event::Delete(md) => (md, true),
            watcher::Event::Init | watcher::Event::InitDone => return,
        };
        let _ = self.sender.try_send(Touched {
            namespace: md.namespace().unwrap_or_default(),
            name: md.name_any(),
            deleted_uid: deleted.then(|| md.metadata.uid.clone().unwrap_or_default()),
        });
    }
}

/// Starts the task; returns the deployments to reconcile again.
pub fn start(
    enforcement: Arc<Enforcement>,
    mut changes: mpsc::Receiver<Change>,
    mut events: mpsc::Receiver<Touched>,
    shutdown: CancellationToken,
) -> impl Stream<Item = ObjectRef<ModelDeployment>> + Send + 'static {
    let (triggers, receiver) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut task = Task {
            enforcement,
            triggers,
            selected_by: HashMap::new(),
            deleted: HashMap::new(),
            known_ledgers: BTreeSet::new(),
            due: BTreeMap::new(),
        };
        let mut dirty: BTreeSet<String> = task.existing_ledgers().await;
        // Every policy once: what each selects (so a later change knows what it selected).
        let names: Vec<String> = task
            .enforcement
            .policies
            .policies
            .state()
            .iter()
            .map(|p| p.name_any())
            .collect();
        for name in names {
            dirty.extend(task.policy_changed(&name));
        }
        loop {
            let wait = if dirty.is_empty() {
                task.next_due().unwrap_or(Duration::from_secs(3600))
            } else {
                DEBOUNCE
            };
            tokio::select! {
                _ = shutdown.cancelled() => return,
                Some(change) = changes.recv() => match change {
                    Change::Policy(name) => dirty.extend(task.policy_changed(&name)),
                    Change::Namespace(namespace) => {
                        task.trigger_namespace(&namespace);
                        dirty.insert(namespace);
                    }
                },
                Some(touched) = events.recv() => {
                    if let Some(uid) = touched.deleted_uid {
                        task.deleted
                            .entry(touched.namespace.clone())
                            .or_default()
                            .insert(touched.name, uid);
                    }
                    dirty.insert(touched.namespace);
                }
                _ = tokio::time::sleep(wait) => {
                    let now = Timestamp::now();
                    let due: Vec<String> = task
                        .due
                        .iter()
                        .filter(|(_, at)| **at <= now)
                        .map(|(n, _)| n.clone())
                        .collect();
                    dirty.extend(due);
                    for namespace in std::mem::take(&mut dirty) {
                        if !task.namespace_changed(&namespace).await {
                            dirty.insert(namespace);
                        }
                    }
                }
            }
        }
    });
    futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|r| (r, receiver))
    })
}

struct Task {
    enforcement: Arc<Enforcement>,
    triggers: mpsc::UnboundedSender<ObjectRef<ModelDeployment>>,
    /// The namespaces each policy selected when last seen.
    selected_by: HashMap<String, BTreeSet<String>>,
    /// Deployments seen deleted, by namespace: name → uid (cleared by the namespace's sync).
    deleted: HashMap<String, HashMap<String, String>>,
    /// Namespaces that have (or may have) a ledger.
    known_ledgers: BTreeSet<String>,
    /// When a namespace's ledger is to be looked at again (an in-flight entry's expiry).
    due: BTreeMap<String, Timestamp>,
}

impl Task {
    fn next_due(&self) -> Option<Duration> {
        let now = Timestamp::now();
        self.due
            .values()
            .min()
            .map(|at| Duration::try_from(at.duration_since(now)).unwrap_or(Duration::ZERO))
    }

    /// The namespaces whose ledgers exist (at the start of leadership).
    async fn existing_ledgers(&mut self) -> BTreeSet<String> {
        let policies = &self.enforcement.policies;
        let api: Api<ConfigMap> =
            Api::namespaced(policies.client.clone(), &policies.ledger_namespace);
        match api
            .list(&ListParams::default().labels(ledger::LEDGER_OF_LABEL))
            .await
        {
            Ok(list) => {
                let namespaces: BTreeSet<String> = list
                    .items
                    .iter()
                    .filter_map(|c| c.labels().get(ledger::LEDGER_OF_LABEL).cloned())
                    .collect();
                self.known_ledgers.extend(namespaces.iter().cloned());
                namespaces
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not list the GPU ledgers; each is looked at on its namespace's next change");
                BTreeSet::new()
            }
        }
    }

    fn trigger_namespace(&self, namespace: &str) {
        for md in self.enforcement.deployments.state() {
            if md.namespace().as_deref() == Some(namespace) {
                let _ = self.triggers.send(ObjectRef::from_obj(&*md));
            }
        }
    }

    /// Re-queues the deployments of the namespaces `policy` selects now or selected; returns
    /// those namespaces.
    fn policy_changed(&mut self, policy: &str) -> BTreeSet<String> {
        let policies = &self.enforcement.policies;
        let now: BTreeSet<String> = match policies.policies.get(&ObjectRef::new(policy)) {
            Some(p) => policies
                .namespaces
                .state()
                .iter()
                .filter(|n| policy::selects(&p, n.labels()))
                .map(|n| n.name_any())
                .collect(),
            None => BTreeSet::new(),
        };
        let before = self.selected_by.remove(policy).unwrap_or_default();
        let affected: BTreeSet<String> = now.union(&before).cloned().collect();
        if !now.is_empty() {
            self.selected_by.insert(policy.to_string(), now);
        }
        for namespace in &affected {
            self.trigger_namespace(namespace);
        }
        affected
    }

    /// A namespace's deployments changed (or its policies): re-queue the neighbours whose
    /// quota verdict may change, and sync its ledger. `false`: try again (a write conflicted).
    async fn namespace_changed(&mut self, namespace: &str) -> bool {
        self.due.remove(namespace);
        let selecting = self.enforcement.policies.selecting(namespace);
        let quotas: Vec<i64> = selecting
            .iter()
            .filter_map(|p| p.spec.gpu_quota.map(i64::from))
            .collect();
        if quotas.is_empty() {
            self.deleted.remove(namespace);
            if self.known_ledgers.remove(namespace) {
                self.delete_ledger(namespace).await;
            }
            return true;
        }
        let claims = self.enforcement.claims(namespace);
        let mut over: BTreeSet<String> = BTreeSet::new();
        for quota in &quotas {
            for (name, fit) in policy::fit_in_order(*quota, &claims) {
                if fit.is_some() {
                    over.insert(name);
                }
            }
        }
        for md in self.enforcement.deployments.state() {
            if md.namespace().as_deref() != Some(namespace) {
                continue;
            }
            let reported = md
                .condition(condition_types::POLICY_COMPLIANT)
                .is_some_and(|c| {
                    !c.is_true() && c.reason.as_deref() == Some(reasons::policy::VIOLATION)
                });
            if reported || over.contains(&md.name_any()) {
                let _ = self.triggers.send(ObjectRef::from_obj(&*md));
            }
        }
        match self.sync_ledger(namespace).await {
            Ok(true) => true,
            Ok(false) => false,
            Err(e) => {
                tracing::warn!(%namespace, error = %e, category = e.category(), "could not sync the GPU ledger");
                false
            }
        }
    }

    async fn delete_ledger(&self, namespace: &str) {
        let policies = &self.enforcement.policies;
        let api: Api<ConfigMap> =
            Api::namespaced(policies.client.clone(), &policies.ledger_namespace);
        match api
            .delete(&ledger::configmap_name(namespace), &DeleteParams::default())
            .await
        {
            Ok(_) => {
                tracing::info!(%namespace, "deleted the GPU ledger: no quota selects the namespace")
            }
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => tracing::warn!(%namespace, error = %e, "could not delete the GPU ledger"),
        }
    }

    /// `Ok(false)`: the write conflicted.
    async fn sync_ledger(&mut self, namespace: &str) -> Result<bool, PolicyError> {
        let policies = &self.enforcement.policies;
        let api: Api<ConfigMap> =
            Api::namespaced(policies.client.clone(), &policies.ledger_namespace);
        let name = ledger::configmap_name(namespace);
        let api_error = |action: &'static str| {
            let name = name.clone();
            move |source| PolicyError::Api {
                action,
                object: name,
                source,
            }
        };
        // No ledger yet: the webhook creates it, seeded from the namespace, on the first
        // create or raise that needs it.
        let Some(configmap) = api.get_opt(&name).await.map_err(api_error("reading"))? else {
            self.deleted.remove(namespace);
            return Ok(true);
        };
        self.known_ledgers.insert(namespace.to_string());
        let mut ledger = Ledger::from_data(&configmap.data.clone().unwrap_or_default());
        let live: Vec<Live> = self
            .enforcement
            .deployments
            .state()
            .iter()
            .filter(|md| md.namespace().as_deref() == Some(namespace))
            .map(|md| Live {
                name: md.name_any(),
                uid: md.metadata.uid.clone().unwrap_or_default(),
                gpus: policy::gpu_demand(&policies.effective(md).spec).total,
            })
            .collect();
        let deleted = self.deleted.get(namespace).cloned().unwrap_or_default();
        let before = ledger.clone();
        let next = ledger.sync(&live, &deleted, Timestamp::now(), IN_FLIGHT_GRACE);
        if let Some(next) = next {
            self.due.insert(namespace.to_string(), next);
        }
        if ledger != before {
            let mut desired = configmap.clone();
            desired.data = Some(ledger.to_data());
            match api.replace(&name, &PostParams::default(), &desired).await {
                Ok(_) => {
                    tracing::debug!(%namespace, gpus = ledger.total(), "GPU ledger in step")
                }
                Err(kube::Error::Api(status)) if status.code == 409 => return Ok(false),
                Err(source) => return Err(api_error("writing")(source)),
            }
        }
        self.deleted.remove(namespace);
        Ok(true)
    }
}
