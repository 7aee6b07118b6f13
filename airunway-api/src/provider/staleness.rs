//! Stale upstream status (spec §13.4), pure: whether the upstream operator has stopped keeping
//! up with the object a provider applied, and the `StaleStatus` condition that says so.
//!
//! A converged operator does not rewrite status, so "no status write for a while" alone would
//! flag every steady deployment. Status is stale only while the operator is **behind**: the
//! object changed (it was created, or an apply raised `metadata.generation`) and the operator
//! has not reported on that change. Behind means:
//! - the status reports the generation it observed (`status.observedGeneration`, as apps/v1
//!   Deployments, KubeRay RayServices and Dynamo DynamoGraphDeployments do; else the newest
//!   `status.conditions[].observedGeneration`, as KAITO Workspaces do) and it is below
//!   `metadata.generation`; or
//! - for a kind from a CRD (its operator's own kind, which it gives a status): there is no
//!   status at all, or the status reports no generation and no other field manager wrote it
//!   (the `status` subresource entry of `managedFields`) since this provider's last apply.
//!
//! A built-in kind (a Deployment, a Service, a ConfigMap) is judged only by a reported
//! generation: many never get a status writer or a generation.
//!
//! It is behind **since** the later of this provider's last apply that changed the object (its
//! `managedFields` entry, else `metadata.creationTimestamp`) and the operator's last status
//! write; it is stale once that is longer ago than the threshold (`--stale-status-threshold`,
//! 5 minutes by default). The watch cache keeps just those `managedFields` times
//! ([`keep_update_times`]), without the field sets.
//!
//! A deployment that is not ready while its upstream status is stale is not ready because the
//! operator does not act: [`mark`] makes `Ready`'s reason (and `status.notReady`)
//! `UpstreamOperatorMissing`, naming the operator (by the object's API group), the object and
//! since when — whatever reason the stale status gave, it described an older generation.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::DynamicObject;
use serde_json::Value;

use super::desired::ProviderStatus;
use crate::conditions::{self, DesiredCondition};
use crate::constants::{condition_types, reasons};
use crate::v1alpha1::{Condition, ModelDeployment, NotReadyReason, NotReadySource, NotReadyStatus};

/// The spec's staleness threshold: 5 minutes (the default of `--stale-status-threshold`; the
/// offline cycle and the tests use it).
#[cfg(any(test, feature = "testing"))]
pub const DEFAULT_THRESHOLD: Duration = Duration::from_secs(5 * 60);

/// At most this many status conditions are read for their `observedGeneration`.
const MAX_CONDITIONS: usize = 64;

/// An upstream object whose operator has not reported on it for longer than the threshold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stale {
    /// Since when the operator has been behind.
    pub since: jiff::Timestamp,
    /// The object's `apiVersion`.
    pub api_version: String,
    /// The object's kind.
    pub kind: String,
    /// The object's name.
    pub name: String,
    /// The generation the operator has not reported on.
    pub generation: i64,
}

/// What [`judge`] finds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Staleness {
    /// The operator has reported on the current object (or it cannot be told: no generation,
    /// no time, or detection switched off).
    Current,
    /// The operator is behind, within the threshold: stale at `stale_at` unless it catches up.
    Waiting {
        /// When it becomes stale.
        stale_at: jiff::Timestamp,
    },
    /// Behind for longer than the threshold.
    Stale(Stale),
}

/// Judges the live upstream object `live` this provider (field manager `manager`) applied, at
/// `now`, with `threshold` (zero: never stale); `from_crd`: its kind comes from a CRD (see the
/// module documentation).
pub fn judge(
    live: &DynamicObject,
    manager: &str,
    from_crd: bool,
    now: jiff::Timestamp,
    threshold: Duration,
) -> Staleness {
    let meta = &live.metadata;
    if threshold.is_zero() {
        return Staleness::Current;
    }
    let Some(generation) = meta.generation else {
        return Staleness::Current;
    };
    let Some(applied) = last_apply(meta, manager).or(meta.creation_timestamp.as_ref().map(|t| t.0))
    else {
        return Staleness::Current;
    };
    let written = last_status_write(meta, manager);
    let status = live.data.get("status").filter(|s| match s {
        Value::Null => false,
        Value::Object(fields) => !fields.is_empty(),
        _ => true,
    });
    let behind = match status.map(|s| (s, observed_generation(s))) {
        Some((_, Some(observed))) => observed < generation,
        _ if !from_crd => false,
        None => true,
        Some((_, None)) => written.is_none_or(|w| w < applied),
    };
    if !behind {
        return Staleness::Current;
    }
    let since = written.map_or(applied, |w| w.max(applied));
    let Ok(stale_at) = since.checked_add(threshold) else {
        return Staleness::Current;
    };
    if now < stale_at {
        return Staleness::Waiting { stale_at };
    }
    Staleness::Stale(Stale {
        since,
        api_version: live
            .types
            .as_ref()
            .map(|t| t.api_version.clone())
            .unwrap_or_default(),
        kind: live
            .types
            .as_ref()
            .map(|t| t.kind.clone())
            .unwrap_or_default(),
        name: meta.name.clone().unwrap_or_default(),
        generation,
    })
}

/// The generation the status reports on: `observedGeneration`, else the newest of its
/// conditions' (bounded).
pub fn observed_generation(status: &Value) -> Option<i64> {
    if let Some(observed) = status.get("observedGeneration").and_then(Value::as_i64) {
        return Some(observed);
    }
    status
        .get("conditions")
        .and_then(Value::as_array)?
        .iter()
        .take(MAX_CONDITIONS)
        .filter_map(|c| c.get("observedGeneration").and_then(Value::as_i64))
        .max()
}

/// When `manager` last changed the object's own fields (its `managedFields` entry without a
/// subresource).
fn last_apply(meta: &ObjectMeta, manager: &str) -> Option<jiff::Timestamp> {
    meta.managed_fields
        .iter()
        .flatten()
        .filter(|e| e.manager.as_deref() == Some(manager) && e.subresource.is_none())
        .filter_map(|e| e.time.as_ref().map(|t| t.0))
        .max()
}

/// When a field manager other than a provider's last wrote the status subresource.
fn last_status_write(meta: &ObjectMeta, manager: &str) -> Option<jiff::Timestamp> {
    meta.managed_fields
        .iter()
        .flatten()
        .filter(|e| e.subresource.as_deref() == Some("status"))
        .filter(|e| {
            e.manager
                .as_deref()
                .is_some_and(|m| m != manager && !m.ends_with("-provider"))
        })
        .filter_map(|e| e.time.as_ref().map(|t| t.0))
        .max()
}

/// Trims a watched upstream object for the cache: no last-applied annotation, and of the
/// `managedFields` only what [`judge`] reads — `manager`'s entry for the object and other
/// managers' status entries — without their field sets.
pub fn keep_update_times(meta: &mut ObjectMeta, manager: &str) {
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.remove(crate::cache_trim::LAST_APPLIED_ANNOTATION);
        if annotations.is_empty() {
            meta.annotations = None;
        }
    }
    if let Some(entries) = meta.managed_fields.as_mut() {
        entries.retain(|e| {
            let ours = e.manager.as_deref() == Some(manager);
            match e.subresource.as_deref() {
                None => ours,
                Some(subresource) => subresource == "status" && !ours,
            }
        });
        for entry in entries.iter_mut() {
            entry.fields_v1 = None;
            entry.fields_type = None;
        }
        entries.shrink_to_fit();
    }
}

/// `5m`, `90s`, `1h`: a threshold as the flag takes it.
fn format_threshold(threshold: Duration) -> String {
    let seconds = threshold.as_secs();
    if seconds > 0 && seconds.is_multiple_of(3600) {
        format!("{}h", seconds / 3600)
    } else if seconds > 0 && seconds.is_multiple_of(60) {
        format!("{}m", seconds / 60)
    } else if threshold.subsec_millis() == 0 {
        format!("{seconds}s")
    } else {
        format!("{}ms", threshold.as_millis())
    }
}

/// The `StaleStatus` condition to write for `staleness` on a deployment whose conditions are
/// `existing`: `True` while stale; `False` once an object that was stale is current again (or
/// waiting again); none at all on a deployment that never was stale.
pub fn condition(
    staleness: &Staleness,
    existing: Option<&[Condition]>,
    threshold: Duration,
) -> Option<DesiredCondition> {
    match staleness {
        Staleness::Stale(stale) => Some(DesiredCondition::new(
            condition_types::STALE_STATUS,
            true,
            reasons::UPSTREAM_STATUS_STALE,
            format!(
                "The upstream operator has not reported status for {} {} (generation {}) since {} (threshold {})",
                stale.kind,
                stale.name,
                stale.generation,
                stale.since,
                format_threshold(threshold)
            ),
        )),
        Staleness::Current | Staleness::Waiting { .. } => {
            conditions::find(existing, condition_types::STALE_STATUS).map(|_| {
                DesiredCondition::new(
                    condition_types::STALE_STATUS,
                    false,
                    reasons::UPSTREAM_STATUS_CURRENT,
                    "The upstream operator is reporting status again",
                )
            })
        }
    }
}

/// [`judge`]s `primary` (the deployment's primary upstream object as the cache holds it, and
/// whether its kind comes from a CRD; none: nothing to judge) and adds the [`condition`] it calls for to `status`, the provider-owned
/// status about to be written for `md`. Returns the verdict (for [`requeue_after`]).
pub fn mark(
    status: &mut ProviderStatus,
    md: &ModelDeployment,
    primary: Option<(&DynamicObject, bool)>,
    manager: &str,
    now: jiff::Timestamp,
    threshold: Duration,
) -> Staleness {
    let staleness = primary.map_or(Staleness::Current, |(live, from_crd)| {
        judge(live, manager, from_crd, now, threshold)
    });
    let existing = md.status.as_ref().and_then(|s| s.conditions.as_deref());
    if let Some(condition) = condition(&staleness, existing, threshold) {
        status.conditions.push(condition);
    }
    if let Staleness::Stale(stale) = &staleness
        && !status.is_ready()
    {
        status.set_not_ready(operator_missing(stale, threshold));
    }
    staleness
}

/// The not-ready reason of a deployment whose upstream operator has not reported on its object
/// for longer than `threshold`: `UpstreamOperatorMissing`, naming the operator by the object's
/// API group, the object, and since when (a fixed time, so the message does not change while
/// nothing does).
pub fn operator_missing(stale: &Stale, threshold: Duration) -> NotReadyStatus {
    let group = stale
        .api_version
        .rsplit_once('/')
        .map_or(stale.api_version.as_str(), |(group, _)| group);
    let operator = if group.is_empty() {
        format!("The controller of {}", stale.kind)
    } else {
        format!("The {group} operator")
    };
    NotReadyStatus::new(
        NotReadyReason::UpstreamOperatorMissing,
        format!(
            "{operator} has not reported on {} {} (generation {}) since {}, more than {}: is it installed and running?",
            stale.kind,
            stale.name,
            stale.generation,
            stale.since,
            format_threshold(threshold)
        ),
    )
    .from_object(NotReadySource::new(
        stale.api_version.clone(),
        stale.kind.clone(),
        stale.name.clone(),
    ))
}

/// When to look again: at the moment a waiting object becomes stale, if that is before
/// `resync`; else `resync`.
pub fn requeue_after(staleness: &Staleness, now: jiff::Timestamp, resync: Duration) -> Duration {
    match staleness {
        Staleness::Waiting { stale_at } => {
            let until = stale_at
                .duration_since(now)
                .unsigned_abs()
                .min(resync)
                // Whole seconds (the times are), plus one so the look comes after, not before.
                .as_secs()
                .saturating_add(1);
            Duration::from_secs(until).min(resync)
        }
        _ => resync,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const MANAGER: &str = "kaito-provider";
    const MIN5: Duration = DEFAULT_THRESHOLD;

    fn ts(s: &str) -> jiff::Timestamp {
        s.parse().unwrap()
    }

    /// A Workspace at `generation`, applied by us at 12:00:00, with `status` and `entries`
    /// (`(manager, subresource, time)`).
    fn object(
        generation: i64,
        status: Value,
        entries: &[(&str, Option<&str>, &str)],
    ) -> DynamicObject {
        let managed: Vec<Value> = entries
            .iter()
            .map(|(manager, sub, time)| {
                let mut e = json!({"manager": manager, "operation": "Apply", "time": time,
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}});
                if let Some(sub) = sub {
                    e["subresource"] = json!(sub);
                }
                e
            })
            .collect();
        let mut o = json!({"apiVersion": "kaito.sh/v1beta1", "kind": "Workspace",
            "metadata": {"name": "w", "namespace": "ns", "generation": generation,
                "creationTimestamp": "2026-01-01T11:00:00Z", "managedFields": managed}});
        if !status.is_null() {
            o["status"] = status;
        }
        serde_json::from_value(o).unwrap()
    }

    const APPLIED: (&str, Option<&str>, &str) = (MANAGER, None, "2026-01-01T12:00:00Z");

    #[test]
    fn table() {
        let at = |s| ts(s);
        let waiting = |s| Staleness::Waiting { stale_at: ts(s) };
        let stale = |since, generation| {
            Staleness::Stale(Stale {
                since: ts(since),
                api_version: "kaito.sh/v1beta1".into(),
                kind: "Workspace".into(),
                name: "w".into(),
                generation,
            })
        };
        let cases: Vec<(&str, DynamicObject, jiff::Timestamp, Staleness)> = vec![
            (
                "caught up (top-level observedGeneration), long after",
                object(2, json!({"observedGeneration": 2}), &[APPLIED]),
                at("2026-01-02T00:00:00Z"),
                Staleness::Current,
            ),
            (
                "caught up (conditions' observedGeneration, as KAITO)",
                object(
                    2,
                    json!({"conditions": [{"type": "A", "observedGeneration": 1}, {"type": "B", "observedGeneration": 2}]}),
                    &[APPLIED],
                ),
                at("2026-01-02T00:00:00Z"),
                Staleness::Current,
            ),
            (
                "behind, within the threshold: waiting until apply + 5m",
                object(2, json!({"observedGeneration": 1}), &[APPLIED]),
                at("2026-01-01T12:04:59Z"),
                waiting("2026-01-01T12:05:00Z"),
            ),
            (
                "behind, at the threshold: stale since the apply",
                object(2, json!({"observedGeneration": 1}), &[APPLIED]),
                at("2026-01-01T12:05:00Z"),
                stale("2026-01-01T12:00:00Z", 2),
            ),
            (
                "behind, but the operator wrote status after the apply: since that write",
                object(
                    3,
                    json!({"observedGeneration": 2}),
                    &[
                        APPLIED,
                        ("kaito-controller", Some("status"), "2026-01-01T12:03:00Z"),
                    ],
                ),
                at("2026-01-01T12:06:00Z"),
                waiting("2026-01-01T12:08:00Z"),
            ),
            (
                "no status at all: since creation when we never applied",
                object(1, Value::Null, &[]),
                at("2026-01-01T11:06:00Z"),
                stale("2026-01-01T11:00:00Z", 1),
            ),
            (
                "empty status counts as none",
                object(1, json!({}), &[APPLIED]),
                at("2026-01-01T12:01:00Z"),
                waiting("2026-01-01T12:05:00Z"),
            ),
            (
                "status without generations, written after our apply: current",
                object(
                    1,
                    json!({"state": "ready"}),
                    &[APPLIED, ("op", Some("status"), "2026-01-01T12:00:01Z")],
                ),
                at("2026-01-02T00:00:00Z"),
                Staleness::Current,
            ),
            (
                "status without generations, written before our apply: behind",
                object(
                    2,
                    json!({"state": "ready"}),
                    &[APPLIED, ("op", Some("status"), "2026-01-01T11:59:00Z")],
                ),
                at("2026-01-01T12:10:00Z"),
                stale("2026-01-01T12:00:00Z", 2),
            ),
            (
                "another provider's status write does not count as the operator's",
                object(
                    2,
                    json!({"state": "ready"}),
                    &[
                        APPLIED,
                        ("x-provider", Some("status"), "2026-01-01T12:01:00Z"),
                    ],
                ),
                at("2026-01-01T12:10:00Z"),
                stale("2026-01-01T12:00:00Z", 2),
            ),
        ];
        for (name, live, now, expected) in cases {
            assert_eq!(judge(&live, MANAGER, true, now, MIN5), expected, "{name}");
        }
    }

    #[test]
    fn a_builtin_kind_is_judged_only_by_a_reported_generation() {
        let late = ts("2026-02-01T00:00:00Z");
        let never = [
            object(1, Value::Null, &[APPLIED]),
            object(1, json!({"loadBalancer": {}}), &[APPLIED]),
        ];
        for live in never {
            assert_eq!(judge(&live, MANAGER, false, late, MIN5), Staleness::Current);
        }
        let behind = object(2, json!({"observedGeneration": 1}), &[APPLIED]);
        assert!(matches!(
            judge(&behind, MANAGER, false, late, MIN5),
            Staleness::Stale(_)
        ));
    }

    #[test]
    fn undecidable_or_switched_off_is_current() {
        let behind = object(2, json!({"observedGeneration": 1}), &[APPLIED]);
        let late = ts("2026-02-01T00:00:00Z");
        assert_eq!(
            judge(&behind, MANAGER, true, late, Duration::ZERO),
            Staleness::Current
        );
        let mut no_generation = behind.clone();
        no_generation.metadata.generation = None;
        assert_eq!(
            judge(&no_generation, MANAGER, true, late, MIN5),
            Staleness::Current
        );
        let mut no_time = behind;
        no_time.metadata.managed_fields = None;
        no_time.metadata.creation_timestamp = None;
        assert_eq!(
            judge(&no_time, MANAGER, true, late, MIN5),
            Staleness::Current
        );
    }

    #[test]
    fn the_condition_appears_when_stale_and_turns_false_after() {
        let stale = Staleness::Stale(Stale {
            since: ts("2026-01-01T12:00:00Z"),
            api_version: "kaito.sh/v1beta1".into(),
            kind: "Workspace".into(),
            name: "w".into(),
            generation: 2,
        });
        let on = condition(&stale, None, MIN5).unwrap();
        assert_eq!(on.status, crate::v1alpha1::ConditionStatus::True);
        assert_eq!(on.reason, reasons::UPSTREAM_STATUS_STALE);
        assert_eq!(
            on.message,
            "The upstream operator has not reported status for Workspace w (generation 2) since 2026-01-01T12:00:00Z (threshold 5m)"
        );
        assert_eq!(
            condition(&Staleness::Current, None, MIN5),
            None,
            "never stale: no condition"
        );
        let shown = conditions::materialize(
            None,
            &[on],
            Some(1),
            &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts("2026-01-01T12:05:00Z")),
        );
        let off = condition(&Staleness::Current, Some(&shown), MIN5).unwrap();
        assert_eq!(off.status, crate::v1alpha1::ConditionStatus::False);
        assert_eq!(off.reason, reasons::UPSTREAM_STATUS_CURRENT);
        let waiting = Staleness::Waiting {
            stale_at: ts("2026-01-01T13:00:00Z"),
        };
        assert_eq!(condition(&waiting, Some(&shown), MIN5), Some(off));
    }

    #[test]
    fn marked_once_then_current_no_churn() {
        use crate::provider::TranslatedStatus;
        use crate::v1alpha1::Phase;
        let md: ModelDeployment = serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "w", "namespace": "ns", "generation": 1},
            "spec": {"model": {"id": "a/b"}}}))
        .unwrap();
        let translated = TranslatedStatus {
            phase: Phase::Running,
            message: None,
            replicas: None,
            endpoint: None,
            ready: true,
            not_ready: None,
        };
        let base = ProviderStatus::from_translation(
            "KAITO",
            ("w".into(), "Workspace".into()),
            &translated,
        );
        // The deployment as it reads after `status` was written at `at`.
        let shown = |md: &ModelDeployment, status: &ProviderStatus, at: &str| {
            let mut value = serde_json::to_value(md).unwrap();
            let time = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts(at));
            value["status"] = status.patch(md, &time)["status"].clone();
            let shown: ModelDeployment = serde_json::from_value(value).unwrap();
            shown
        };
        let behind = object(2, json!({"observedGeneration": 1}), &[APPLIED]);
        let caught_up = object(2, json!({"observedGeneration": 2}), &[APPLIED]);

        // Waiting: nothing added, and a look again at the threshold.
        let mut status = base.clone();
        let verdict = mark(
            &mut status,
            &md,
            Some((&behind, true)),
            MANAGER,
            ts("2026-01-01T12:01:00Z"),
            MIN5,
        );
        assert_eq!(status, base);
        assert_eq!(
            requeue_after(
                &verdict,
                ts("2026-01-01T12:01:00Z"),
                Duration::from_secs(600)
            ),
            Duration::from_secs(241)
        );

        // Stale: True; written once, the same verdict later is current (no churn).
        let mut stale = base.clone();
        mark(
            &mut stale,
            &md,
            Some((&behind, true)),
            MANAGER,
            ts("2026-01-01T12:06:00Z"),
            MIN5,
        );
        assert!(!stale.is_current(&md, MANAGER));
        let md = shown(&md, &stale, "2026-01-01T12:06:00Z");
        let mut again = base.clone();
        mark(
            &mut again,
            &md,
            Some((&behind, true)),
            MANAGER,
            ts("2026-01-01T12:30:00Z"),
            MIN5,
        );
        assert!(
            again.is_current(&md, MANAGER),
            "still stale: nothing to write"
        );

        // Caught up: False, once; then current.
        let mut current = base.clone();
        mark(
            &mut current,
            &md,
            Some((&caught_up, true)),
            MANAGER,
            ts("2026-01-01T12:31:00Z"),
            MIN5,
        );
        assert!(!current.is_current(&md, MANAGER));
        let md = shown(&md, &current, "2026-01-01T12:31:00Z");
        let shown_condition = md.condition(condition_types::STALE_STATUS).unwrap();
        assert_eq!(
            shown_condition.status,
            crate::v1alpha1::ConditionStatus::False
        );
        let mut later = base.clone();
        mark(
            &mut later,
            &md,
            Some((&caught_up, true)),
            MANAGER,
            ts("2026-01-02T00:00:00Z"),
            MIN5,
        );
        assert!(
            later.is_current(&md, MANAGER),
            "cleared stays cleared without writes"
        );
    }

    #[test]
    fn not_ready_while_stale_is_upstream_operator_missing_without_churn() {
        use crate::provider::TranslatedStatus;
        use crate::v1alpha1::{ConditionStatus, Phase};
        let md: ModelDeployment = serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "w", "namespace": "ns", "generation": 1},
            "spec": {"model": {"id": "a/b"}}}))
        .unwrap();
        let translated = |phase, ready, not_ready| TranslatedStatus {
            phase,
            message: Some("Updating".into()),
            replicas: None,
            endpoint: None,
            ready,
            not_ready,
        };
        let updating = ProviderStatus::from_translation(
            "KAITO",
            ("w".into(), "Workspace".into()),
            &translated(
                Phase::Running,
                false,
                Some(NotReadyStatus::new(
                    NotReadyReason::Updating,
                    "KAITO has not acted on generation 2",
                )),
            ),
        );
        let behind = object(2, json!({"observedGeneration": 1}), &[APPLIED]);
        let ready_condition = |status: &ProviderStatus| {
            status
                .conditions
                .iter()
                .find(|c| c.type_ == condition_types::READY)
                .cloned()
                .unwrap()
        };

        // Within the threshold: the provider's own reason stays.
        let mut waiting = updating.clone();
        mark(
            &mut waiting,
            &md,
            Some((&behind, true)),
            MANAGER,
            ts("2026-01-01T12:04:00Z"),
            MIN5,
        );
        assert_eq!(waiting, updating);

        // Stale: the operator does not act.
        let mut stale = updating.clone();
        mark(
            &mut stale,
            &md,
            Some((&behind, true)),
            MANAGER,
            ts("2026-01-01T12:06:00Z"),
            MIN5,
        );
        let ready = ready_condition(&stale);
        let expected = "The kaito.sh operator has not reported on Workspace w (generation 2) since 2026-01-01T12:00:00Z, more than 5m: is it installed and running?";
        assert_eq!(
            (ready.status, ready.reason.as_str(), ready.message.as_str()),
            (ConditionStatus::False, "UpstreamOperatorMissing", expected)
        );
        let not_ready = stale.not_ready.clone().unwrap();
        assert_eq!(not_ready.reason, NotReadyReason::UpstreamOperatorMissing);
        assert_eq!(
            not_ready.object,
            Some(NotReadySource::new("kaito.sh/v1beta1", "Workspace", "w"))
        );

        // Written once, the same verdict later writes nothing (the message names a fixed time).
        let time = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts("2026-01-01T12:06:00Z"));
        let mut value = serde_json::to_value(&md).unwrap();
        value["status"] = stale.patch(&md, &time)["status"].clone();
        let shown: ModelDeployment = serde_json::from_value(value).unwrap();
        let mut later = updating.clone();
        mark(
            &mut later,
            &shown,
            Some((&behind, true)),
            MANAGER,
            ts("2026-01-01T13:00:00Z"),
            MIN5,
        );
        assert!(later.is_current(&shown, MANAGER));

        // A ready deployment keeps its Ready=True (StaleStatus says the rest).
        let running = ProviderStatus::from_translation(
            "KAITO",
            ("w".into(), "Workspace".into()),
            &translated(Phase::Running, true, None),
        );
        let mut still = running.clone();
        mark(
            &mut still,
            &md,
            Some((&behind, true)),
            MANAGER,
            ts("2026-01-01T12:06:00Z"),
            MIN5,
        );
        assert!(still.is_ready() && still.not_ready.is_none());
    }

    #[test]
    fn requeue_at_the_moment_it_turns_stale_never_later_than_resync() {
        let now = ts("2026-01-01T12:00:00Z");
        let resync = Duration::from_secs(600);
        let waiting = Staleness::Waiting {
            stale_at: ts("2026-01-01T12:04:00Z"),
        };
        assert_eq!(
            requeue_after(&waiting, now, resync),
            Duration::from_secs(241)
        );
        let far = Staleness::Waiting {
            stale_at: ts("2026-01-01T14:00:00Z"),
        };
        assert_eq!(requeue_after(&far, now, resync), resync);
        assert_eq!(requeue_after(&Staleness::Current, now, resync), resync);
    }

    #[test]
    fn thresholds_read_as_the_flag_takes_them() {
        assert_eq!(format_threshold(MIN5), "5m");
        assert_eq!(format_threshold(Duration::from_secs(5)), "5s");
        assert_eq!(format_threshold(Duration::from_secs(7200)), "2h");
        assert_eq!(format_threshold(Duration::from_millis(1500)), "1500ms");
    }

    #[test]
    fn the_cache_keeps_only_the_times() {
        let mut live = object(
            2,
            Value::Null,
            &[
                APPLIED,
                ("kubectl", None, "2026-01-01T12:01:00Z"),
                ("op", Some("status"), "2026-01-01T12:02:00Z"),
                (MANAGER, Some("status"), "2026-01-01T12:03:00Z"),
            ],
        );
        keep_update_times(&mut live.metadata, MANAGER);
        let kept: Vec<_> = live
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .map(|e| {
                (
                    e.manager.clone().unwrap(),
                    e.subresource.clone(),
                    e.fields_v1.is_none(),
                )
            })
            .collect();
        assert_eq!(
            kept,
            [
                (MANAGER.to_string(), None, true),
                ("op".to_string(), Some("status".to_string()), true)
            ]
        );
    }
}
