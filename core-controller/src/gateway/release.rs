//! Taking back a namespace's allowance on the Gateways when its last routed deployment went
//! away without the core reconciling it while it was being deleted.
//!
//! A reconcile sees a deletion only while a finalizer holds the deployment. With no finalizer
//! left (the provider removed its own quickly, or it was removed by hand) the deployment is gone
//! from the cache before its reconcile runs, and kube-runtime skips a reconcile whose object is
//! not cached; a deployment deleted while the core was not running is never seen at all. So the
//! deployment watch records, besides what the controller gets:
//! - the namespace of every deployment it reports deleted;
//! - a full sweep each time its cache is listed again (at start, and after a watch gap, where
//!   deletions leave the cache without an event): every namespace a Gateway's
//!   `airunway.ai/allowed-route-namespaces` annotation names.
//!
//! A worker on the leader then asks for each recorded namespace whether any routed deployment is
//! left in it and, if none, takes its allowance back. The set of pending namespaces is bounded
//! by the number of namespaces: a namespace recorded twice before the worker runs is looked at
//! once.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use kube::ResourceExt;
use kube::runtime::watcher;
use tokio::sync::Notify;

use airunway_api::v1alpha1::ModelDeployment;

/// The Gateways whose allowance for `namespace` is taken back: those that carry it
/// (`managed`: each Gateway with the namespaces its annotation names) and that no deployment of
/// the namespace still routes through (`routed_through`: the Gateway each routed deployment of
/// the namespace uses, its own `spec.gateway.gatewayRef` or the cluster-wide choice).
pub fn gateways_to_release<'a>(
    namespace: &str,
    managed: impl IntoIterator<Item = (&'a super::select::GatewayRef, &'a BTreeSet<String>)>,
    routed_through: &BTreeSet<super::select::GatewayRef>,
) -> Vec<super::select::GatewayRef> {
    managed
        .into_iter()
        .filter(|(gateway, namespaces)| {
            namespaces.contains(namespace) && !routed_through.contains(*gateway)
        })
        .map(|(gateway, _)| gateway.clone())
        .collect()
}

/// What the worker has to look at next.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pending {
    /// Every namespace the Gateways' annotations name.
    pub sweep: bool,
    /// Namespaces a deployment was deleted from.
    pub namespaces: BTreeSet<String>,
}

impl Pending {
    /// Whether there is nothing to look at.
    pub fn is_empty(&self) -> bool {
        !self.sweep && self.namespaces.is_empty()
    }
}

/// Namespaces whose allowance may have to be taken back, recorded from the deployment watch.
#[derive(Debug, Default)]
pub struct GoneDeployments {
    pending: Mutex<Pending>,
    wake: Notify,
}

impl GoneDeployments {
    /// An empty record, shared by the watch and the worker.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Records what a deployment watch event means for the allowances: a deletion names its
    /// namespace; the end of a (re)list asks for a full sweep.
    pub fn observe(&self, event: &watcher::Event<ModelDeployment>) {
        match event {
            watcher::Event::Delete(md) => {
                if let Some(namespace) = md.namespace() {
                    self.record(|pending| {
                        pending.namespaces.insert(namespace);
                    });
                }
            }
            watcher::Event::InitDone => self.record(|pending| pending.sweep = true),
            watcher::Event::Apply(_) | watcher::Event::Init | watcher::Event::InitApply(_) => {}
        }
    }

    fn record(&self, change: impl FnOnce(&mut Pending)) {
        change(&mut self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        self.wake.notify_one();
    }

    /// Waits until something is recorded, then takes all of it.
    pub async fn next(&self) -> Pending {
        loop {
            let taken =
                std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
            if !taken.is_empty() {
                return taken;
            }
            self.wake.notified().await;
        }
    }
}

/// The namespaces to look at for `pending`, given the namespaces the Gateways' annotations
/// name (`managed`).
pub fn namespaces_to_check(
    pending: Pending,
    managed: impl IntoIterator<Item = String>,
) -> BTreeSet<String> {
    let mut namespaces = pending.namespaces;
    if pending.sweep {
        namespaces.extend(managed);
    }
    namespaces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(namespace: &str, name: &str) -> ModelDeployment {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"model": {"id": "Qwen/Qwen3-0.6B"}},
        }))
        .expect("a valid deployment")
    }

    #[tokio::test]
    async fn deletions_record_their_namespace_once_and_a_relist_asks_for_a_sweep() {
        let gone = GoneDeployments::new();
        gone.observe(&watcher::Event::Apply(md("a", "x")));
        gone.observe(&watcher::Event::InitApply(md("a", "x")));
        gone.observe(&watcher::Event::Init);
        gone.observe(&watcher::Event::Delete(md("b", "x")));
        gone.observe(&watcher::Event::Delete(md("b", "y")));
        gone.observe(&watcher::Event::Delete(md("c", "x")));
        let pending = gone.next().await;
        assert!(!pending.sweep);
        assert_eq!(
            pending.namespaces.into_iter().collect::<Vec<_>>(),
            ["b", "c"]
        );

        gone.observe(&watcher::Event::InitDone);
        let pending = gone.next().await;
        assert!(pending.sweep);
        assert!(pending.namespaces.is_empty());
    }

    #[tokio::test]
    async fn the_worker_waits_until_something_is_recorded() {
        let gone = GoneDeployments::new();
        let waiting = tokio::time::timeout(std::time::Duration::from_millis(20), gone.next());
        assert!(waiting.await.is_err(), "nothing recorded: still waiting");
        let worker = {
            let gone = gone.clone();
            tokio::spawn(async move { gone.next().await })
        };
        tokio::task::yield_now().await;
        gone.observe(&watcher::Event::Delete(md("d", "x")));
        let pending = worker.await.expect("the worker ends");
        assert_eq!(pending.namespaces.into_iter().collect::<Vec<_>>(), ["d"]);
    }

    #[test]
    fn a_sweep_adds_every_managed_namespace() {
        let deleted = Pending {
            sweep: false,
            namespaces: ["b".to_string()].into(),
        };
        assert_eq!(
            namespaces_to_check(deleted, ["a".to_string()]),
            ["b".to_string()].into()
        );
        let sweep = Pending {
            sweep: true,
            namespaces: ["b".to_string()].into(),
        };
        assert_eq!(
            namespaces_to_check(sweep, ["a".to_string(), "b".to_string()]),
            ["a".to_string(), "b".to_string()].into()
        );
    }

    /// Per Gateway: a namespace keeps its allowance on the Gateways its routed deployments
    /// use, and loses it on one none of them uses any more (a deployment moved to its own
    /// Gateway, or left).
    #[test]
    fn the_allowance_goes_only_where_no_deployment_routes() {
        use crate::gateway::select::GatewayRef;
        let gateway = |name: &str| GatewayRef {
            namespace: "gw".into(),
            name: name.into(),
        };
        let (shared, own, other) = (gateway("shared"), gateway("own"), gateway("other"));
        let carries = BTreeSet::from(["team-a".to_string()]);
        let elsewhere = BTreeSet::from(["team-b".to_string()]);
        let managed = [(&shared, &carries), (&own, &carries), (&other, &elsewhere)];
        let through = BTreeSet::from([shared.clone()]);
        assert_eq!(
            gateways_to_release("team-a", managed, &through),
            std::slice::from_ref(&own)
        );
        assert_eq!(
            gateways_to_release("team-a", managed, &BTreeSet::new()),
            [shared.clone(), own.clone()]
        );
        assert!(gateways_to_release("team-c", managed, &BTreeSet::new()).is_empty());
    }
}
