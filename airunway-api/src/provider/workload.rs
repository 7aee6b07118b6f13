//! The workload contract and partial health of a deployment (pure): `status.workload` and
//! `status.selector` from what the provider reports, with the upstream object filled in from
//! the live object, and the `Degraded` condition from the replica counts unless the provider
//! reports a degradation of its own.

use kube::core::DynamicObject;

use crate::conditions::DesiredCondition;
use crate::constants::{condition_types, reasons};
use crate::v1alpha1::{ReplicaStatus, WorkloadReference, WorkloadStatus};

/// A partial failure the replica counts do not show (see
/// [`Provider::degradation`](super::Provider::degradation)): `Degraded=True` with `reason`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Degradation {
    /// A constant of `airunway_api::constants::reasons`, e.g. `ApplicationUnhealthy`.
    pub reason: &'static str,
    /// What the user reads.
    pub message: String,
}

/// A reference to a live object, with an optional `role` (see [`WorkloadReference`]).
pub fn reference_to(object: &DynamicObject, role: Option<&str>) -> WorkloadReference {
    let (api_version, kind) = object
        .types
        .as_ref()
        .map(|t| (t.api_version.clone(), t.kind.clone()))
        .unwrap_or_default();
    WorkloadReference {
        api_version,
        kind,
        name: object.metadata.name.clone().unwrap_or_default(),
        uid: object.metadata.uid.clone(),
        role: role.map(str::to_string),
    }
}

/// `status.workload`: what the provider reports, with `upstream` set to the primary live
/// object when the provider leaves it out; `None` when neither says anything.
pub fn observed_workload(
    reported: Option<WorkloadStatus>,
    primary: Option<&DynamicObject>,
) -> Option<WorkloadStatus> {
    let mut workload = reported.unwrap_or_default();
    if workload.upstream.is_none() {
        workload.upstream = primary.map(|object| reference_to(object, None));
    }
    (workload != WorkloadStatus::default()).then_some(workload)
}

/// `Degraded`: `True` with the provider's `explicit` degradation, else `True` while some but
/// not all of the replicas asked for are ready, else `False`.
pub fn degraded_condition(
    replicas: Option<&ReplicaStatus>,
    explicit: Option<&Degradation>,
) -> DesiredCondition {
    if let Some(degradation) = explicit {
        return DesiredCondition::new(
            condition_types::DEGRADED,
            true,
            degradation.reason,
            degradation.message.clone(),
        );
    }
    let desired = replicas.and_then(|r| r.desired);
    let ready = replicas.and_then(|r| r.ready);
    match (ready, desired) {
        (Some(ready), Some(desired)) if ready > 0 && ready < desired => DesiredCondition::new(
            condition_types::DEGRADED,
            true,
            reasons::REPLICAS_UNAVAILABLE,
            format!("{ready} of {desired} replicas ready: serving at reduced capacity"),
        ),
        (Some(ready), Some(desired)) if ready > desired => DesiredCondition::new(
            condition_types::DEGRADED,
            false,
            reasons::NOT_DEGRADED,
            format!("{ready} replicas ready, scaling down to {desired}"),
        ),
        (Some(ready), Some(desired)) => DesiredCondition::new(
            condition_types::DEGRADED,
            false,
            reasons::NOT_DEGRADED,
            format!("{ready} of {desired} replicas ready"),
        ),
        _ => DesiredCondition::new(
            condition_types::DEGRADED,
            false,
            reasons::NOT_DEGRADED,
            "Replica counts not reported yet",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1alpha1::ConditionStatus;
    use serde_json::json;

    fn counts(desired: i32, ready: i32) -> ReplicaStatus {
        ReplicaStatus {
            desired: Some(desired),
            ready: Some(ready),
            available: Some(ready),
        }
    }

    #[test]
    fn degraded_while_some_but_not_all_replicas_are_ready() {
        let one_of_two = degraded_condition(Some(&counts(2, 1)), None);
        assert_eq!(one_of_two.status, ConditionStatus::True);
        assert_eq!(one_of_two.reason, reasons::REPLICAS_UNAVAILABLE);
        assert_eq!(
            one_of_two.message,
            "1 of 2 replicas ready: serving at reduced capacity"
        );
        let shrinking = degraded_condition(Some(&counts(1, 3)), None);
        assert_eq!(
            (shrinking.status, shrinking.message.as_str()),
            (
                ConditionStatus::False,
                "3 replicas ready, scaling down to 1"
            )
        );
        for (desired, ready) in [(2, 2), (2, 0), (0, 0)] {
            let condition = degraded_condition(Some(&counts(desired, ready)), None);
            assert_eq!(
                condition.status,
                ConditionStatus::False,
                "{ready}/{desired}"
            );
            assert_eq!(
                condition.message,
                format!("{ready} of {desired} replicas ready")
            );
        }
        let unknown = degraded_condition(None, None);
        assert_eq!(
            (unknown.status, unknown.message.as_str()),
            (ConditionStatus::False, "Replica counts not reported yet")
        );
    }

    #[test]
    fn a_providers_degradation_wins_over_the_counts() {
        let explicit = Degradation {
            reason: reasons::APPLICATION_UNHEALTHY,
            message: "Serve application llm: DEPLOY_FAILED".into(),
        };
        let condition = degraded_condition(Some(&counts(2, 2)), Some(&explicit));
        assert_eq!(condition.status, ConditionStatus::True);
        assert_eq!(condition.reason, reasons::APPLICATION_UNHEALTHY);
        assert_eq!(condition.message, explicit.message);
    }

    #[test]
    fn the_upstream_reference_comes_from_the_live_primary() {
        let live: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "m", "namespace": "ns", "uid": "u-9"},
        }))
        .unwrap();
        let workload = observed_workload(None, Some(&live)).unwrap();
        let upstream = workload.upstream.unwrap();
        assert_eq!(
            (
                upstream.api_version.as_str(),
                upstream.kind.as_str(),
                upstream.name.as_str()
            ),
            ("apps/v1", "Deployment", "m")
        );
        assert_eq!(upstream.uid.as_deref(), Some("u-9"));
        assert_eq!(observed_workload(None, None), None);
        let reported = WorkloadStatus {
            upstream: Some(WorkloadReference {
                name: "other".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let kept = observed_workload(Some(reported.clone()), Some(&live)).unwrap();
        assert_eq!(kept, reported);
    }
}
