//! When the cluster is at rest after a chaos run: the checks that decide when the "no write
//! after settle" window may start.
//!
//! Every deployment `Running` is not enough: the deployment controller may still be rolling its
//! status forward (a replica becoming available, the `Progressing` condition moving to
//! `NewReplicaSetAvailable`), and after a kube-apiserver restart kube-controller-manager retries
//! its syncs with backoff, so those last changes can come many seconds later on a slow machine.
//! Our providers rightly copy them into the deployments' status. Likewise a provider replica
//! that lost its lease while the API server was down exits, and the core rightly marks the
//! provider unavailable until the other replica's heartbeat and probe are seen. A write of ours
//! in the window is churn only when nothing moved: so the window starts once every Deployment is
//! done, every provider is available, and every deployment's status has caught up with both.

use std::collections::BTreeMap;

use airunway_api::constants::condition_types;
use airunway_api::v1alpha1::{ConditionStatus, InferenceProviderConfig, ModelDeployment};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

/// Why `deployment` is not done yet (`None`: done): its controller has seen its latest spec,
/// every replica is updated, ready and available, none is left over, and `Progressing` says
/// the new ReplicaSet is available.
pub fn deployment_unsettled(deployment: &Deployment) -> Option<String> {
    let name = deployment.metadata.name.clone().unwrap_or_default();
    let want = deployment
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1);
    let Some(status) = deployment.status.as_ref() else {
        return Some(format!("Deployment {name}: no status"));
    };
    if status.observed_generation != deployment.metadata.generation {
        return Some(format!(
            "Deployment {name}: observedGeneration {:?} of generation {:?}",
            status.observed_generation, deployment.metadata.generation
        ));
    }
    let counts = [
        ("replicas", status.replicas),
        ("updatedReplicas", status.updated_replicas),
        ("readyReplicas", status.ready_replicas),
        ("availableReplicas", status.available_replicas),
    ];
    if let Some((field, n)) = counts.iter().find(|(_, n)| n.unwrap_or(0) != want) {
        return Some(format!(
            "Deployment {name}: {field} {} of {want}",
            n.unwrap_or(0)
        ));
    }
    let progressing = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Progressing");
    match progressing.and_then(|c| c.reason.as_deref()) {
        Some("NewReplicaSetAvailable") => None,
        other => Some(format!("Deployment {name}: Progressing reason {other:?}")),
    }
}

/// Why a deployment's status has not caught up with its Deployments (`None`: it has): the
/// ready replicas it reports are the sum of theirs.
pub fn status_behind(md: &ModelDeployment, deployments: &[&Deployment]) -> Option<String> {
    let upstream_ready: i32 = deployments
        .iter()
        .filter_map(|d| d.status.as_ref()?.ready_replicas)
        .sum();
    let reported = md
        .status
        .as_ref()
        .and_then(|s| s.replicas.as_ref())
        .and_then(|r| r.ready)
        .unwrap_or(0);
    (reported != upstream_ready).then(|| {
        format!(
            "{}: status says {reported} ready, its Deployments {upstream_ready}",
            md.metadata.name.as_deref().unwrap_or_default()
        )
    })
}

/// Why a provider cannot take work yet (`None`: it can): it reports `ready` and the core's
/// health monitor has judged it `Available`.
pub fn provider_unsettled(ipc: &InferenceProviderConfig) -> Option<String> {
    let name = ipc.metadata.name.as_deref().unwrap_or_default();
    let status = ipc.status.as_ref();
    if status.and_then(|s| s.ready) != Some(true) {
        return Some(format!("provider {name}: not ready"));
    }
    let available = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == condition_types::AVAILABLE));
    match available {
        Some(c) if c.status == ConditionStatus::True => None,
        other => Some(format!(
            "provider {name}: Available {:?}",
            other.map(|c| (&c.status, &c.message))
        )),
    }
}

/// Why a deployment's `ProviderHealthy` is not `True` yet (`None`: it is, or the core has not
/// written it).
pub fn provider_health_behind(md: &ModelDeployment) -> Option<String> {
    let condition = md
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == condition_types::PROVIDER_HEALTHY)?;
    (condition.status != ConditionStatus::True).then(|| {
        format!(
            "{}: ProviderHealthy {:?}",
            md.metadata.name.as_deref().unwrap_or_default(),
            condition.message
        )
    })
}

/// The first reason the cluster is not at rest (`None`: at rest): a Deployment not done, a
/// provider not available, or a deployment whose status lags its Deployments (matched by
/// controller owner reference) or its provider's health.
pub fn unsettled(
    mds: &[ModelDeployment],
    deployments: &[Deployment],
    providers: &[InferenceProviderConfig],
) -> Option<String> {
    if let Some(why) = deployments.iter().find_map(deployment_unsettled) {
        return Some(why);
    }
    // Only the providers the deployments are assigned to (the cluster may hold others, left by
    // earlier tests, that nobody heartbeats for any more).
    let assigned: std::collections::BTreeSet<&str> =
        mds.iter().filter_map(|md| md.selected_provider()).collect();
    if let Some(why) = providers
        .iter()
        .filter(|p| assigned.contains(p.metadata.name.as_deref().unwrap_or_default()))
        .find_map(provider_unsettled)
    {
        return Some(why);
    }
    if let Some(why) = mds.iter().find_map(provider_health_behind) {
        return Some(why);
    }
    let mut by_owner: BTreeMap<&str, Vec<&Deployment>> = BTreeMap::new();
    for d in deployments {
        if let Some(owner) = controller_uid(&d.metadata) {
            by_owner.entry(owner).or_default().push(d);
        }
    }
    mds.iter().find_map(|md| {
        let uid = md.metadata.uid.as_deref()?;
        let theirs = by_owner.get(uid)?;
        status_behind(md, theirs)
    })
}

/// The Deployments (by name) that have more than one ReplicaSet: their pod template changed
/// after they were first created, i.e. their Pods were rolled.
pub fn rolled(replica_sets: &[ReplicaSet]) -> BTreeMap<String, usize> {
    let mut per_deployment: BTreeMap<String, usize> = BTreeMap::new();
    for rs in replica_sets {
        let owner = rs
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true) && o.kind == "Deployment");
        if let Some(owner) = owner {
            *per_deployment.entry(owner.name.clone()).or_default() += 1;
        }
    }
    per_deployment.retain(|_, n| *n > 1);
    per_deployment
}

/// A deployment's status in one line per part (`phase`, `message`, each condition as
/// `type=status reason: message`), for [`changed`].
pub fn status_summary(md: &ModelDeployment) -> String {
    let Some(status) = md.status.as_ref() else {
        return String::new();
    };
    let mut lines = vec![
        format!("phase={:?}", status.phase),
        format!("message={:?}", status.message),
    ];
    for c in status.conditions.iter().flatten() {
        lines.push(format!(
            "{}={:?} {}: {}",
            c.type_,
            c.status,
            c.reason.as_deref().unwrap_or_default(),
            c.message.as_deref().unwrap_or_default()
        ));
    }
    lines.join("\n")
}

/// The lines of `after` that `before` does not have, joined with ` | `.
pub fn changed(before: &str, after: &str) -> String {
    let old: std::collections::BTreeSet<&str> = before.lines().collect();
    after
        .lines()
        .filter(|l| !old.contains(l))
        .collect::<Vec<_>>()
        .join(" | ")
}

fn controller_uid(meta: &kube::api::ObjectMeta) -> Option<&str> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| o.uid.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn parse<T: serde::de::DeserializeOwned>(value: Value) -> T {
        serde_json::from_value(value).unwrap()
    }

    fn deployment(status: Value) -> Deployment {
        parse(json!({
            "metadata": {"name": "d", "generation": 2,
                "ownerReferences": [{"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
                    "name": "md", "uid": "u1", "controller": true}]},
            "spec": {"replicas": 1, "selector": {}, "template": {}},
            "status": status,
        }))
    }

    fn done() -> Value {
        json!({"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1,
            "availableReplicas": 1,
            "conditions": [{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]})
    }

    fn md(ready: i32) -> ModelDeployment {
        parse(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "md", "uid": "u1"},
            "spec": {"model": {"id": "m"}},
            "status": {"replicas": {"ready": ready}, "provider": {"name": "vllm"}},
        }))
    }

    #[test]
    fn a_done_deployment_and_a_caught_up_status_are_at_rest() {
        assert_eq!(unsettled(&[md(1)], &[deployment(done())], &[]), None);
    }

    #[test]
    fn a_deployment_still_progressing_is_not_at_rest() {
        let mut status = done();
        status["conditions"][0]["reason"] = json!("ReplicaSetUpdated");
        let why = unsettled(&[md(1)], &[deployment(status)], &[]).unwrap();
        assert!(why.contains("ReplicaSetUpdated"), "{why}");
        let mut status = done();
        status["observedGeneration"] = json!(1);
        assert!(
            deployment_unsettled(&deployment(status))
                .unwrap()
                .contains("observedGeneration")
        );
        let mut status = done();
        status["availableReplicas"] = json!(0);
        assert_eq!(
            deployment_unsettled(&deployment(status)).as_deref(),
            Some("Deployment d: availableReplicas 0 of 1")
        );
    }

    #[test]
    fn a_status_behind_its_deployment_is_not_at_rest() {
        assert_eq!(
            unsettled(&[md(0)], &[deployment(done())], &[]).as_deref(),
            Some("md: status says 0 ready, its Deployments 1")
        );
    }

    #[test]
    fn a_provider_not_yet_available_or_a_deployment_not_told_is_not_at_rest() {
        let ipc = |available: &str| -> InferenceProviderConfig {
            parse(
                json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig",
                "metadata": {"name": "vllm"}, "spec": {},
                "status": {"ready": true, "conditions": [{"type": "Available", "status": available,
                    "reason": "ProbeFailed", "message": "probe failing", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}),
            )
        };
        assert_eq!(
            unsettled(&[md(1)], &[deployment(done())], &[ipc("True")]),
            None
        );
        let why = unsettled(&[md(1)], &[deployment(done())], &[ipc("False")]).unwrap();
        assert!(why.starts_with("provider vllm: Available"), "{why}");
        let mut unhealthy = md(1);
        unhealthy.status.as_mut().unwrap().conditions = Some(vec![parse(json!({
            "type": "ProviderHealthy", "status": "False", "reason": "ProviderStale",
            "message": "stale", "lastTransitionTime": "2026-01-01T00:00:00Z"}))]);
        assert_eq!(
            unsettled(&[unhealthy], &[deployment(done())], &[ipc("True")]).as_deref(),
            Some("md: ProviderHealthy Some(\"stale\")")
        );
    }

    #[test]
    fn a_second_replica_set_is_a_roll() {
        let rs = |name: &str, owner: &str| -> ReplicaSet {
            parse(json!({"metadata": {"name": name, "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": owner, "uid": owner, "controller": true}]},
                "spec": {"selector": {}}}))
        };
        assert!(rolled(&[rs("a-1", "a"), rs("b-1", "b")]).is_empty());
        assert_eq!(
            rolled(&[rs("a-1", "a"), rs("a-2", "a"), rs("b-1", "b")]),
            BTreeMap::from([("a".to_string(), 2)])
        );
    }
}
