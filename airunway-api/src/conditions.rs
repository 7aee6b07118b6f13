//! Pure helpers for the conditions a controller owns: build the desired set, keep
//! `lastTransitionTime` unless the status changes, and tell whether anything changed.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::v1alpha1::{Condition, ConditionStatus};

/// A condition a controller wants to be true of an object, without timestamps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DesiredCondition {
    /// Condition type.
    pub type_: String,
    /// Status.
    pub status: ConditionStatus,
    /// Reason.
    pub reason: String,
    /// Message.
    pub message: String,
}

impl DesiredCondition {
    /// A condition of `type_` with `status` true/false, `reason` and `message`.
    pub fn new(
        type_: impl Into<String>,
        status: bool,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        DesiredCondition {
            type_: type_.into(),
            status: ConditionStatus::from_bool(status),
            reason: reason.into(),
            message: message.into(),
        }
    }
}

/// Where a deployment stands, in the terms of the Kubernetes API conventions that kstatus,
/// Argo CD and `kubectl wait` read: the `Reconciling` and `Stalled` conditions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Work for this generation is under way: `Reconciling=True` with this reason and message.
    InProgress {
        /// CamelCase reason.
        reason: String,
        /// What is being waited for.
        message: String,
    },
    /// Nothing more happens without a change (spec, provider, cluster): `Stalled=True`.
    Stalled {
        /// CamelCase reason.
        reason: String,
        /// Why, and what to change.
        message: String,
    },
    /// Everything for this generation is done (`Running`): both `False`.
    Settled,
}

impl Progress {
    /// The reason and message of the `True` condition (`None` when settled).
    pub fn cause(&self) -> Option<(&str, &str)> {
        match self {
            Progress::InProgress { reason, message } | Progress::Stalled { reason, message } => {
                Some((reason, message))
            }
            Progress::Settled => None,
        }
    }

    /// The `Reconciling` and `Stalled` conditions that say this. The `False` ones carry fixed
    /// texts, so they change only when the progress does.
    pub fn conditions(&self) -> [DesiredCondition; 2] {
        use crate::constants::{condition_types::RECONCILING, condition_types::STALLED, reasons};
        match self {
            Progress::InProgress { reason, message } => [
                DesiredCondition::new(RECONCILING, true, reason.clone(), message.clone()),
                DesiredCondition::new(
                    STALLED,
                    false,
                    reasons::PROGRESSING,
                    "Work for this generation is in progress",
                ),
            ],
            Progress::Stalled { reason, message } => [
                DesiredCondition::new(
                    RECONCILING,
                    false,
                    reasons::STALLED,
                    "Nothing is in progress: the Stalled condition says what must change",
                ),
                DesiredCondition::new(STALLED, true, reason.clone(), message.clone()),
            ],
            Progress::Settled => [
                DesiredCondition::new(
                    RECONCILING,
                    false,
                    reasons::RECONCILED,
                    "Everything for this generation is done",
                ),
                DesiredCondition::new(
                    STALLED,
                    false,
                    reasons::RECONCILED,
                    "Everything for this generation is done",
                ),
            ],
        }
    }
}

/// The condition of `type_` in `conditions`.
pub fn find<'a>(conditions: Option<&'a [Condition]>, type_: &str) -> Option<&'a Condition> {
    conditions.into_iter().flatten().find(|c| c.type_ == type_)
}

/// Materialises `desired` against the `existing` conditions: `lastTransitionTime` is carried
/// over when the status did not change, and set to `now` when it did (or is new).
pub fn materialize(
    existing: Option<&[Condition]>,
    desired: &[DesiredCondition],
    observed_generation: Option<i64>,
    now: &Time,
) -> Vec<Condition> {
    desired
        .iter()
        .map(|d| {
            let previous = find(existing, &d.type_);
            let last_transition_time = match previous {
                Some(p) if p.status == d.status && p.last_transition_time.is_some() => {
                    p.last_transition_time.clone()
                }
                _ => Some(now.clone()),
            };
            Condition {
                type_: d.type_.clone(),
                status: d.status,
                reason: Some(d.reason.clone()),
                message: Some(d.message.clone()),
                last_transition_time,
                observed_generation,
            }
        })
        .collect()
}

/// Whether every desired condition already holds on the object with the same status, reason,
/// message and observed generation (so nothing needs to be written).
pub fn all_current(
    existing: Option<&[Condition]>,
    desired: &[DesiredCondition],
    observed_generation: Option<i64>,
) -> bool {
    desired.iter().all(|d| {
        find(existing, &d.type_).is_some_and(|c| {
            c.status == d.status
                && c.reason.as_deref() == Some(d.reason.as_str())
                && c.message.as_deref() == Some(d.message.as_str())
                && c.observed_generation == observed_generation
                && c.last_transition_time.is_some()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    #[test]
    fn transition_time_moves_only_on_status_change() {
        let t0 = time("2026-01-01T00:00:00Z");
        let t1 = time("2026-01-02T00:00:00Z");
        let first = materialize(
            None,
            &[DesiredCondition::new("Ready", false, "A", "a")],
            Some(1),
            &t0,
        );
        assert_eq!(first[0].last_transition_time, Some(t0.clone()));

        // Same status, new reason/message: time kept.
        let second = materialize(
            Some(&first),
            &[DesiredCondition::new("Ready", false, "B", "b")],
            Some(2),
            &t1,
        );
        assert_eq!(second[0].last_transition_time, Some(t0));
        assert_eq!(second[0].reason.as_deref(), Some("B"));

        // Status flips: time moves.
        let third = materialize(
            Some(&second),
            &[DesiredCondition::new("Ready", true, "C", "c")],
            Some(2),
            &t1,
        );
        assert_eq!(third[0].last_transition_time, Some(t1));
    }

    #[test]
    fn progress_sets_exactly_one_of_reconciling_and_stalled() {
        use crate::constants::condition_types::{RECONCILING, STALLED};
        let status = |p: &Progress| {
            let [reconciling, stalled] = p.conditions();
            assert_eq!(
                (reconciling.type_.as_str(), stalled.type_.as_str()),
                (RECONCILING, STALLED)
            );
            (reconciling.status, stalled.status)
        };
        let waiting = Progress::InProgress {
            reason: "WaitingForProvider".into(),
            message: "Waiting for provider kaito to reconcile".into(),
        };
        assert_eq!(
            status(&waiting),
            (ConditionStatus::True, ConditionStatus::False)
        );
        assert_eq!(
            waiting.conditions()[0].message,
            "Waiting for provider kaito to reconcile"
        );
        let stuck = Progress::Stalled {
            reason: "IncompatibleConfiguration".into(),
            message: "no".into(),
        };
        assert_eq!(
            status(&stuck),
            (ConditionStatus::False, ConditionStatus::True)
        );
        assert_eq!(stuck.conditions()[1].reason, "IncompatibleConfiguration");
        assert_eq!(
            status(&Progress::Settled),
            (ConditionStatus::False, ConditionStatus::False)
        );
    }

    #[test]
    fn all_current_detects_any_difference() {
        let t0 = time("2026-01-01T00:00:00Z");
        let desired = [DesiredCondition::new("Ready", true, "R", "m")];
        let existing = materialize(None, &desired, Some(3), &t0);
        assert!(all_current(Some(&existing), &desired, Some(3)));
        assert!(!all_current(Some(&existing), &desired, Some(4)));
        assert!(!all_current(
            Some(&existing),
            &[DesiredCondition::new("Ready", true, "R", "other")],
            Some(3)
        ));
        assert!(!all_current(None, &desired, Some(3)));
    }
}
