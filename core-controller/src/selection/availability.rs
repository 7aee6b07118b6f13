//! Whether a provider can take new work: it reports `ready` and the core's health monitor
//! has not marked it stale.
//!
//! Heartbeat age is judged by the monitor alone ([`crate::health`]), which confirms a stale
//! heartbeat on a fresh read before it writes the core-owned `Available` condition. A reconcile
//! reads only that verdict: it never ages heartbeats on the watch cache itself, which lags
//! after a watch broke (an API server restart, a CRD update) and would otherwise turn every
//! deployment's `ProviderHealthy` False and back at once.

use std::time::Duration;

use airunway_api::conditions;
use airunway_api::constants::condition_types;
use airunway_api::v1alpha1::{
    ConditionStatus, EngineCapability, InferenceProviderConfig, SelectionRule,
};
use jiff::Timestamp;

/// When a provider counts as stale.
#[derive(Clone, Copy, Debug)]
pub struct HealthPolicy {
    /// A heartbeat older than this makes the provider stale.
    pub stale_after: Duration,
}

/// A provider's ability to take work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Availability {
    /// Ready, heartbeat fresh, probe answering.
    Available,
    /// The provider reports `ready: false` (e.g. its upstream CRD is missing).
    NotReady {
        /// Why, from the provider's own condition.
        detail: String,
    },
    /// Heartbeat too old or probe failing.
    Stale {
        /// Since when.
        since: Timestamp,
        /// What was seen.
        detail: String,
    },
}

impl Availability {
    /// Whether new work may go to the provider.
    pub fn is_available(&self) -> bool {
        matches!(self, Availability::Available)
    }

    /// A sentence for messages, e.g. `stale since 2026-01-01T00:00:00Z (no heartbeat for 95s)`.
    pub fn describe(&self) -> String {
        match self {
            Availability::Available => "available".to_string(),
            Availability::NotReady { detail } => format!("not ready ({detail})"),
            Availability::Stale { since, detail } => format!("stale since {since} ({detail})"),
        }
    }
}

/// What selection needs to know about one provider.
#[derive(Clone, Debug)]
pub struct ProviderView {
    /// Provider name (the InferenceProviderConfig name).
    pub name: String,
    /// Per-engine capabilities.
    pub engines: Vec<EngineCapability>,
    /// Selection rules.
    pub rules: Vec<SelectionRule>,
    /// Whether it can take work.
    pub availability: Availability,
    /// `capabilities.modelStorage`: whether it mounts `model.storage` volumes (`None`: not
    /// declared).
    pub model_storage: Option<bool>,
    /// The IPC's `metadata.generation` (rule errors are reported per generation).
    pub generation: Option<i64>,
}

/// Views of every provider, sorted by name.
pub fn provider_views(ipcs: &[InferenceProviderConfig]) -> Vec<ProviderView> {
    let mut views: Vec<ProviderView> = ipcs
        .iter()
        .filter(|ipc| ipc.metadata.deletion_timestamp.is_none())
        .map(|ipc| ProviderView {
            name: ipc.metadata.name.clone().unwrap_or_default(),
            engines: ipc
                .spec
                .capabilities
                .as_ref()
                .map(|c| c.engine_capabilities())
                .unwrap_or_default(),
            rules: ipc.spec.selection_rules.clone().unwrap_or_default(),
            availability: availability(ipc),
            model_storage: ipc.spec.capabilities.as_ref().and_then(|c| c.model_storage),
            generation: ipc.metadata.generation,
        })
        .collect();
    views.sort_by(|a, b| a.name.cmp(&b.name));
    views
}

/// The availability of one provider: its own `ready`, then the monitor's `Available` verdict.
pub fn availability(ipc: &InferenceProviderConfig) -> Availability {
    let status = ipc.status.as_ref();
    let conds = status.and_then(|s| s.conditions.as_deref());
    if status.and_then(|s| s.ready) != Some(true) {
        let detail = conditions::find(conds, condition_types::UPSTREAM_AVAILABLE)
            .filter(|c| c.status != ConditionStatus::True)
            .and_then(|c| c.message.clone())
            .unwrap_or_else(|| {
                "the provider reports ready=false or has not registered yet".to_string()
            });
        return Availability::NotReady { detail };
    }
    if let Some(c) = conditions::find(conds, condition_types::AVAILABLE)
        && c.status == ConditionStatus::False
    {
        return Availability::Stale {
            since: c
                .last_transition_time
                .as_ref()
                .map(|t| t.0)
                .unwrap_or(Timestamp::UNIX_EPOCH),
            detail: c.message.clone().unwrap_or_default(),
        };
    }
    Availability::Available
}

/// `Some(Stale)` when the heartbeat is missing or older than the policy allows.
pub fn heartbeat_staleness(
    ipc: &InferenceProviderConfig,
    now: Timestamp,
    policy: HealthPolicy,
) -> Option<Availability> {
    let allowed =
        jiff::SignedDuration::try_from(policy.stale_after).unwrap_or(jiff::SignedDuration::MAX);
    match ipc.status.as_ref().and_then(|s| s.last_heartbeat.as_ref()) {
        None => Some(Availability::Stale {
            since: now,
            detail: "no heartbeat recorded".to_string(),
        }),
        Some(beat) => {
            let age = now.duration_since(beat.0);
            (age > allowed).then(|| Availability::Stale {
                since: beat.0.checked_add(allowed).unwrap_or(beat.0),
                detail: format!("last heartbeat {} is {}s old", beat.0, age.as_secs()),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airunway_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use serde_json::json;

    fn ipc(status: serde_json::Value) -> InferenceProviderConfig {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig",
            "metadata": {"name": "p", "generation": 1}, "spec": {}, "status": status,
        }))
        .unwrap()
    }

    const POLICY: HealthPolicy = HealthPolicy {
        stale_after: Duration::from_secs(90),
    };

    #[test]
    fn heartbeat_staleness_is_judged_against_the_policy() {
        let now: Timestamp = "2026-01-01T00:10:00Z".parse().unwrap();
        let fresh = ipc(json!({"ready": true, "lastHeartbeat": "2026-01-01T00:09:30Z"}));
        assert_eq!(heartbeat_staleness(&fresh, now, POLICY), None);
        let old = ipc(json!({"ready": true, "lastHeartbeat": "2026-01-01T00:05:00Z"}));
        assert_eq!(
            heartbeat_staleness(&old, now, POLICY),
            Some(Availability::Stale {
                since: "2026-01-01T00:06:30Z".parse().unwrap(),
                detail: "last heartbeat 2026-01-01T00:05:00Z is 300s old".into()
            })
        );
    }

    #[test]
    fn readiness_then_the_monitors_verdict() {
        let now: Timestamp = "2026-01-01T00:10:00Z".parse().unwrap();
        assert_eq!(
            availability(&ipc(
                json!({"ready": true, "lastHeartbeat": "2026-01-01T00:09:30Z"})
            )),
            Availability::Available
        );
        assert!(matches!(
            availability(&ipc(json!({"ready": false}))),
            Availability::NotReady { .. }
        ));
        // An old heartbeat in the cache alone is not staleness: the cache may lag; the monitor
        // confirms on a fresh read and writes `Available=False` (below) when it is.
        assert_eq!(
            availability(&ipc(
                json!({"ready": true, "lastHeartbeat": "2026-01-01T00:05:00Z"})
            )),
            Availability::Available
        );
        let probe_failed = ipc(
            json!({"ready": true, "lastHeartbeat": "2026-01-01T00:09:50Z",
            "conditions": [{"type": "Available", "status": "False", "reason": "ProbeFailed", "message": "probe failed 3 times",
                            "lastTransitionTime": "2026-01-01T00:09:55Z"}]}),
        );
        assert_eq!(
            availability(&probe_failed),
            Availability::Stale {
                since: "2026-01-01T00:09:55Z".parse().unwrap(),
                detail: "probe failed 3 times".into()
            }
        );
        let _ = Time(now);
    }
}
