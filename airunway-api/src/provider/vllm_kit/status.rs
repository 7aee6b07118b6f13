//! The deployment status from real `apps/v1 Deployment`s (pure), as the deployment controller
//! writes them.
//!
//! One Deployment ([`deployment_phase`]):
//! - not created yet → `Pending` (`Waiting for Deployment <name> to be created`);
//! - no conditions yet → `Pending`;
//! - `Available` True → `Running`;
//! - `Available` False (below the Deployment's minimum availability: during a scale-up, or a
//!   replica lost) while at least one replica is available → `Running`,
//!   `<available> of <desired> replicas available` (then `: <why>` when the Deployment also
//!   reports a progress deadline exceeded or a replica failure) — it serves, so the gateway
//!   keeps its route, and the SDK's `Degraded` says it serves at reduced capacity (the Go AI
//!   Runway shows `Deploying` or `Failed` here, and its route goes until every replica is back:
//!   a departure on purpose);
//! - `Progressing` False with reason `ProgressDeadlineExceeded` → `Failed` with its message
//!   (`Deployment <name> exceeded its progress deadline` when it has none);
//! - `ReplicaFailure` True (pods cannot be created: quota, admission) → `Failed` with its
//!   message;
//! - `Progressing` True → `Deploying` with its message;
//! - `Available` False with a message → `Failed` with it;
//! - else `Pending`.
//!
//! Several Deployments ([`translate`], e.g. prefill and decode): `Failed` when one failed,
//! `Running` when all run, `Pending` when all are pending, else `Deploying`; the message is
//! the first one's that is not running, prefixed with its name. Replicas are summed: desired
//! `spec.replicas`, ready `status.readyReplicas`, available `status.availableReplicas`.
//! Endpoint: the given Service, port 8000.
//!
//! Rollouts ([`crate::provider::pod_state::deployment_not_ready`]): while a Deployment that
//! serves (`Running` above) rolls out a new generation, the deployment stays `Running` (the
//! old replicas serve, the gateway keeps its route) but is not ready for the new generation:
//! `Ready=False` with `Updating`, then `RolloutStalled` once the Deployment's progress
//! deadline passes (`Stalled=True`); `Degraded` follows the ready replicas. Pods a quota
//! refuses give `QuotaExceeded` whatever the phase (Go AI Runway #422: Ready was True during
//! a rollout whose new replicas never came).
//!
//! Scaled to zero (every Deployment exists and asks for 0 replicas, e.g. `kubectl scale
//! md/<name> --replicas=0`): the deployment controller reports such a Deployment `Available`,
//! so the phase stays `Running` — the deployment is as its spec asks, kstatus reads it as
//! current and the gateway keeps its route — with `Ready=True` reason `ScaledToZero` and the
//! message [`SCALED_TO_ZERO`] (the SDK turns `ready: false` at zero replicas into that):
//! ready to be scaled up, though no replica serves.

use k8s_openapi::api::apps::v1::Deployment;
use kube::core::DynamicObject;
use serde_json::Value;

use super::render::PORT;
use crate::provider::pod_state::{self, PRECEDENCE};
use crate::provider::{TranslatedStatus, replica_count, sum_replicas};
use crate::v1alpha1::{EndpointStatus, NotReadyReason, NotReadyStatus, Phase, ReplicaStatus};

/// The phase and message of one Deployment (`None`: not created yet).
pub fn deployment_phase(name: &str, live: Option<&DynamicObject>) -> (Phase, Option<String>) {
    let Some(live) = live else {
        return (
            Phase::Pending,
            Some(format!("Waiting for Deployment {name} to be created")),
        );
    };
    let conditions: &[Value] = live.data["status"]["conditions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let find = |type_: &str| conditions.iter().find(|c| c["type"] == type_);
    let message = |c: &Value| {
        c["message"]
            .as_str()
            .filter(|m| !m.is_empty())
            .map(str::to_string)
    };
    // Created but not yet reporting (no conditions): Deploying, as in the Go AI Runway.
    if conditions.is_empty() {
        return (Phase::Deploying, None);
    }
    let available = find("Available");
    let progressing = find("Progressing");
    if available.is_some_and(|c| c["status"] == "True") {
        return (Phase::Running, None);
    }
    let failure = if let Some(p) = progressing
        && p["status"] == "False"
        && p["reason"] == "ProgressDeadlineExceeded"
    {
        Some(
            message(p)
                .unwrap_or_else(|| format!("Deployment {name} exceeded its progress deadline")),
        )
    } else {
        find("ReplicaFailure")
            .filter(|c| c["status"] == "True")
            .map(|f| {
                message(f).unwrap_or_else(|| format!("Deployment {name} cannot create its pods"))
            })
    };
    // Below the minimum availability but serving: Running (the gateway keeps its route), the
    // message says how many serve and why the others do not, when the Deployment says.
    let available_replicas = count(&live.data["status"]["availableReplicas"]);
    if available_replicas > 0 {
        let desired = count(&live.data["spec"]["replicas"]);
        let serving = format!("{available_replicas} of {desired} replicas available");
        return (
            Phase::Running,
            Some(match failure {
                Some(why) => format!("{serving}: {why}"),
                None => serving,
            }),
        );
    }
    if let Some(why) = failure {
        return (Phase::Failed, Some(why));
    }
    if let Some(p) = progressing.filter(|c| c["status"] == "True") {
        return (Phase::Deploying, message(p));
    }
    if let Some(a) = available.filter(|c| c["status"] == "False")
        && let Some(text) = message(a)
    {
        return (Phase::Failed, Some(text));
    }
    (Phase::Deploying, None)
}

/// `status.message` while Deployments exist but say nothing more specific (Go's text).
pub const CREATED_WAITING: &str = "Deployments created, waiting for pods to be ready";

/// `status.message` (and `Ready`'s) of a deployment scaled to zero.
pub const SCALED_TO_ZERO: &str =
    "Scaled to zero (spec.scaling.replicas is 0): no replica serves until it is scaled up";

fn count(value: &Value) -> i32 {
    replica_count(value).unwrap_or(0)
}

/// The status of the Deployments `deployments` (name and live object; the first is the
/// primary) served by Service `service`.
pub fn translate(
    deployments: &[(&str, Option<&DynamicObject>)],
    service: &str,
) -> TranslatedStatus {
    let phases: Vec<(Phase, Option<String>)> = deployments
        .iter()
        .map(|(name, live)| deployment_phase(name, *live))
        .collect();
    let phase = if phases.iter().any(|(p, _)| *p == Phase::Failed) {
        Phase::Failed
    } else if !phases.is_empty() && phases.iter().all(|(p, _)| *p == Phase::Running) {
        Phase::Running
    } else if phases.iter().all(|(p, _)| *p == Phase::Pending) {
        Phase::Pending
    } else {
        Phase::Deploying
    };
    let several = deployments.len() > 1;
    let message = deployments
        .iter()
        .zip(&phases)
        .filter(|(_, (p, _))| *p == phase || (phase == Phase::Deploying && *p != Phase::Running))
        .find_map(|((name, _), (_, message))| {
            message.as_ref().map(|m| {
                if several && !m.contains(name) {
                    format!("{name}: {m}")
                } else {
                    m.clone()
                }
            })
        })
        .or_else(|| (phase == Phase::Deploying).then(|| CREATED_WAITING.to_string()));
    let (mut desired, mut ready, mut available) = (0, 0, 0);
    for (_, live) in deployments {
        if let Some(live) = live {
            desired = sum_replicas([desired, count(&live.data["spec"]["replicas"])]);
            ready = sum_replicas([ready, count(&live.data["status"]["readyReplicas"])]);
            available = sum_replicas([available, count(&live.data["status"]["availableReplicas"])]);
        }
    }
    // Running with nothing asked for: settled, but nothing serves.
    let all_live = !deployments.is_empty() && deployments.iter().all(|(_, live)| live.is_some());
    let scaled_to_zero = phase == Phase::Running && all_live && desired == 0;
    let message = if scaled_to_zero {
        Some(SCALED_TO_ZERO.to_string())
    } else {
        message
    };
    let not_ready = if scaled_to_zero {
        None
    } else {
        rollout_not_ready(deployments, &phases)
    };
    // Serving the old generation while the new one rolls out (or stalls): the message says so.
    let message = match (&not_ready, phase) {
        (Some(not_ready), Phase::Running) => Some(not_ready.message.clone()),
        _ => message,
    };
    TranslatedStatus {
        phase,
        message,
        replicas: Some(ReplicaStatus {
            desired: Some(desired),
            ready: Some(ready),
            available: Some(available),
        }),
        endpoint: Some(EndpointStatus {
            service: Some(service.to_string()),
            port: Some(PORT),
        }),
        ready: phase == Phase::Running && !scaled_to_zero && not_ready.is_none(),
        not_ready,
    }
}

/// What the Deployments say of their rollouts ([`pod_state::deployment_not_ready`]), the
/// reason of highest precedence, the first Deployment on a tie: `QuotaExceeded` whatever the
/// phase; `RolloutStalled` and `Updating` only from a Deployment that serves (its phase is
/// `Running`), so Ready is not True while a new generation has not come (Go AI Runway #422)
/// though the old replicas keep the phase `Running` and the gateway route. While nothing
/// serves, the Pods say more than "a rollout" (see [`pod_state`]).
fn rollout_not_ready(
    deployments: &[(&str, Option<&DynamicObject>)],
    phases: &[(Phase, Option<String>)],
) -> Option<NotReadyStatus> {
    let rank = |reason: NotReadyReason| PRECEDENCE.iter().position(|r| *r == reason);
    deployments
        .iter()
        .zip(phases)
        .filter_map(|((_, live), (phase, _))| {
            let deployment: Deployment = (*live)?.clone().try_parse().ok()?;
            let found = pod_state::deployment_not_ready(&deployment)?;
            (found.reason == NotReadyReason::QuotaExceeded || *phase == Phase::Running)
                .then_some(found)
        })
        .fold(None, |best: Option<NotReadyStatus>, next| match best {
            Some(best) if rank(best.reason) <= rank(next.reason) => Some(best),
            _ => Some(next),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Deployment `d` asking for `replicas`, with `status` (a settled rollout unless it says
    /// otherwise: every replica of the newest ReplicaSet, the generation observed).
    fn live(replicas: i64, mut status: Value) -> DynamicObject {
        for key in ["replicas", "updatedReplicas"] {
            if status.get(key).is_none() {
                status[key] = json!(replicas);
            }
        }
        if status.get("observedGeneration").is_none() {
            status["observedGeneration"] = json!(1);
        }
        serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "generation": 1}, "spec": {"replicas": replicas}, "status": status}))
        .unwrap()
    }

    /// Go AI Runway #422: a new generation whose replicas never come is not Ready, while the
    /// old replicas keep the deployment `Running`; `Updating` first, `RolloutStalled` after the
    /// progress deadline.
    #[test]
    fn a_rollout_is_not_ready_for_the_new_generation_while_the_old_one_serves() {
        let rolling = |progressing: Value| {
            live(
                1,
                json!({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 1,
                    "readyReplicas": 1, "availableReplicas": 1, "unavailableReplicas": 1,
                    "conditions": [
                    condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
                    progressing]}),
            )
        };
        let updating = translate(
            &[(
                "d",
                Some(&rolling(condition(
                    "Progressing",
                    "True",
                    "ReplicaSetUpdated",
                    "ReplicaSet \"d-2\" is progressing.",
                ))),
            )],
            "d",
        );
        assert_eq!((updating.phase, updating.ready), (Phase::Running, false));
        let not_ready = updating.not_ready.unwrap();
        assert_eq!(not_ready.reason, NotReadyReason::Updating);
        assert_eq!(
            updating.message.as_deref(),
            Some(not_ready.message.as_str())
        );
        let stalled = translate(
            &[(
                "d",
                Some(&rolling(condition(
                    "Progressing",
                    "False",
                    "ProgressDeadlineExceeded",
                    "ReplicaSet \"d-2\" has timed out progressing.",
                ))),
            )],
            "d",
        );
        assert_eq!((stalled.phase, stalled.ready), (Phase::Running, false));
        assert_eq!(
            stalled.not_ready.unwrap().reason,
            NotReadyReason::RolloutStalled
        );
        assert_eq!(
            stalled.replicas.unwrap().ready,
            Some(1),
            "Degraded follows the counts"
        );
    }

    /// Pods a quota refuses: `QuotaExceeded`, serving or not; a first rollout that has nothing
    /// serving leaves the reason to the Pods.
    #[test]
    fn quota_whatever_the_phase_and_no_rollout_reason_while_nothing_serves() {
        let refused = live(
            1,
            json!({"replicas": 0, "updatedReplicas": 0, "conditions": [
                condition("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
                condition("ReplicaFailure", "True", "FailedCreate", "pods \"d-1-x\" is forbidden: exceeded quota: q, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=0")]}),
        );
        let status = translate(&[("d", Some(&refused))], "d");
        assert_eq!(status.phase, Phase::Failed);
        assert_eq!(
            status.not_ready.unwrap().reason,
            NotReadyReason::QuotaExceeded
        );
        let first = live(
            1,
            json!({"generation": 1, "replicas": 1, "updatedReplicas": 0, "conditions": [
                condition("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
                condition("Progressing", "True", "ReplicaSetUpdated", "ReplicaSet \"d-1\" is progressing.")]}),
        );
        let status = translate(&[("d", Some(&first))], "d");
        assert_eq!(status.phase, Phase::Deploying);
        assert_eq!(status.not_ready, None);
    }

    fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Value {
        json!({"type": type_, "status": status, "reason": reason, "message": message})
    }

    #[test]
    fn one_deployment_through_its_conditions() {
        assert_eq!(
            deployment_phase("d", None),
            (
                Phase::Pending,
                Some("Waiting for Deployment d to be created".into())
            )
        );
        assert_eq!(
            deployment_phase("d", Some(&live(1, json!({})))),
            (Phase::Deploying, None)
        );
        assert_eq!(
            translate(&[("d", Some(&live(1, json!({}))))], "svc")
                .message
                .as_deref(),
            Some(CREATED_WAITING)
        );
        let progressing = live(
            1,
            json!({"conditions": [
                condition("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
                condition("Progressing", "True", "ReplicaSetUpdated", "ReplicaSet \"d-1\" is progressing.")]}),
        );
        assert_eq!(
            deployment_phase("d", Some(&progressing)),
            (
                Phase::Deploying,
                Some("ReplicaSet \"d-1\" is progressing.".into())
            )
        );
        let available = live(
            1,
            json!({"readyReplicas": 1, "availableReplicas": 1, "conditions": [
                condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
                condition("Progressing", "True", "NewReplicaSetAvailable", "ReplicaSet \"d-1\" has successfully progressed.")]}),
        );
        assert_eq!(
            deployment_phase("d", Some(&available)),
            (Phase::Running, None)
        );
        let deadline = live(
            1,
            json!({"conditions": [
                condition("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
                condition("Progressing", "False", "ProgressDeadlineExceeded", "ReplicaSet \"d-1\" has timed out progressing.")]}),
        );
        assert_eq!(
            deployment_phase("d", Some(&deadline)),
            (
                Phase::Failed,
                Some("ReplicaSet \"d-1\" has timed out progressing.".into())
            )
        );
        let quota = live(
            1,
            json!({"conditions": [
                condition("Progressing", "True", "ReplicaSetUpdated", "progressing"),
                condition("ReplicaFailure", "True", "FailedCreate", "pods \"d-1-x\" is forbidden: exceeded quota")]}),
        );
        assert_eq!(
            deployment_phase("d", Some(&quota)).0,
            Phase::Failed,
            "pods that cannot be created fail the deployment"
        );
        let unavailable = live(
            1,
            json!({"conditions": [condition("Available", "False", "MinimumReplicasUnavailable", "no pods")]}),
        );
        assert_eq!(
            deployment_phase("d", Some(&unavailable)),
            (Phase::Failed, Some("no pods".into()))
        );
    }

    #[test]
    fn several_deployments_sum_replicas_and_take_the_worst_phase() {
        let running = live(
            2,
            json!({"readyReplicas": 2, "availableReplicas": 2, "conditions": [
                condition("Available", "True", "MinimumReplicasAvailable", "ok")]}),
        );
        let progressing = live(
            3,
            json!({"readyReplicas": 0, "availableReplicas": 0, "conditions": [
                condition("Progressing", "True", "ReplicaSetUpdated", "rolling")]}),
        );
        let status = translate(
            &[
                ("m-decode", Some(&running)),
                ("m-prefill", Some(&progressing)),
            ],
            "m-decode",
        );
        assert_eq!(status.phase, Phase::Deploying);
        assert_eq!(status.message.as_deref(), Some("m-prefill: rolling"));
        assert_eq!(
            status.replicas,
            Some(ReplicaStatus {
                desired: Some(5),
                ready: Some(2),
                available: Some(2)
            })
        );
        assert_eq!(
            status.endpoint,
            Some(EndpointStatus {
                service: Some("m-decode".into()),
                port: Some(8000)
            })
        );
        assert!(!status.ready);
        let both = translate(
            &[("m-decode", Some(&running)), ("m-prefill", Some(&running))],
            "m-decode",
        );
        assert_eq!((both.phase, both.ready), (Phase::Running, true));
        let missing = translate(
            &[("m-decode", Some(&running)), ("m-prefill", None)],
            "m-decode",
        );
        assert_eq!(missing.phase, Phase::Deploying);
        assert_eq!(
            missing.message.as_deref(),
            Some("Waiting for Deployment m-prefill to be created")
        );
        let failed = live(
            1,
            json!({"conditions": [condition("Progressing", "False", "ProgressDeadlineExceeded", "timed out")]}),
        );
        let status = translate(
            &[("m-decode", Some(&running)), ("m-prefill", Some(&failed))],
            "m-decode",
        );
        assert_eq!(status.phase, Phase::Failed);
        assert_eq!(status.message.as_deref(), Some("m-prefill: timed out"));
    }

    /// A Deployment the controller reports `Available` with a replica down is `Running`, and
    /// the SDK's `Degraded` says so from the counts; it clears when all are ready.
    #[test]
    fn available_with_a_replica_down_is_running_and_degraded() {
        let three_of_four = live(
            4,
            json!({"replicas": 4, "readyReplicas": 3, "availableReplicas": 3, "conditions": [
                condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
                condition("Progressing", "True", "NewReplicaSetAvailable", "ok")]}),
        );
        let status = translate(&[("d", Some(&three_of_four))], "d");
        assert_eq!((status.phase, status.ready), (Phase::Running, true));
        let degraded =
            crate::provider::workload::degraded_condition(status.replicas.as_ref(), None);
        assert_eq!(degraded.status, crate::v1alpha1::ConditionStatus::True);
        assert_eq!(
            degraded.message,
            "3 of 4 replicas ready: serving at reduced capacity"
        );
        let all = live(
            4,
            json!({"readyReplicas": 4, "availableReplicas": 4, "conditions": [
                condition("Available", "True", "MinimumReplicasAvailable", "ok")]}),
        );
        let status = translate(&[("d", Some(&all))], "d");
        let cleared = crate::provider::workload::degraded_condition(status.replicas.as_ref(), None);
        assert_eq!(cleared.status, crate::v1alpha1::ConditionStatus::False);
        // One of two ready: the controller's minimum availability is not met (maxUnavailable
        // rounds down to 0) and the Go mapping would say `Deploying`, taking the gateway route
        // away from the replica that serves; here it is `Running` and `Degraded` is True.
        let one_of_two = live(
            2,
            json!({"readyReplicas": 1, "availableReplicas": 1, "conditions": [
                condition("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
                condition("Progressing", "True", "NewReplicaSetAvailable", "ok")]}),
        );
        let status = translate(&[("d", Some(&one_of_two))], "d");
        assert_eq!((status.phase, status.ready), (Phase::Running, true));
        assert_eq!(status.message.as_deref(), Some("1 of 2 replicas available"));
        // The same with no GPU left for the second replica: still serving, the reason said.
        let stuck = live(
            2,
            json!({"readyReplicas": 1, "availableReplicas": 1, "conditions": [
                condition("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
                condition("Progressing", "False", "ProgressDeadlineExceeded", "ReplicaSet \"d-1\" has timed out progressing.")]}),
        );
        assert_eq!(
            deployment_phase("d", Some(&stuck)),
            (
                Phase::Running,
                Some(
                    "1 of 2 replicas available: ReplicaSet \"d-1\" has timed out progressing."
                        .into()
                )
            )
        );
        let degraded =
            crate::provider::workload::degraded_condition(status.replicas.as_ref(), None);
        assert_eq!(
            (degraded.status, degraded.message.as_str()),
            (
                crate::v1alpha1::ConditionStatus::True,
                "1 of 2 replicas ready: serving at reduced capacity"
            )
        );
    }

    /// Every Deployment at 0 replicas: `Running` (settled) but not ready, with its message;
    /// one Deployment still missing is not "scaled to zero".
    #[test]
    fn scaled_to_zero_is_running_but_not_ready() {
        let zero = live(
            0,
            json!({"conditions": [
                condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
                condition("Progressing", "True", "NewReplicaSetAvailable", "ok")]}),
        );
        let status = translate(
            &[("m-decode", Some(&zero)), ("m-prefill", Some(&zero))],
            "m-decode",
        );
        assert_eq!(status.phase, Phase::Running);
        assert!(!status.ready, "no replica serves");
        assert_eq!(status.message.as_deref(), Some(SCALED_TO_ZERO));
        assert_eq!(
            status.replicas,
            Some(ReplicaStatus {
                desired: Some(0),
                ready: Some(0),
                available: Some(0)
            })
        );
        let one = live(
            1,
            json!({"readyReplicas": 1, "availableReplicas": 1, "conditions": [
                condition("Available", "True", "MinimumReplicasAvailable", "ok")]}),
        );
        let serving = translate(&[("d", Some(&one))], "d");
        assert_eq!(
            (serving.phase, serving.ready, serving.message),
            (Phase::Running, true, None)
        );
        let missing = translate(
            &[("m-decode", Some(&zero)), ("m-prefill", None)],
            "m-decode",
        );
        assert_eq!(missing.phase, Phase::Deploying);
        assert_ne!(missing.message.as_deref(), Some(SCALED_TO_ZERO));
    }
}
