//! The provider health monitor (leader only): every `--provider-probe-interval` it probes each
//! provider's gRPC endpoint (standard health check, then `GetInfo`) and reads its heartbeat,
//! and records the verdict in the provider's core-owned `Available` condition. Selection skips
//! unavailable providers; deployments of a stale provider get `ProviderHealthy=False` (their
//! reconcile is triggered by the condition change).

use std::collections::HashMap;
use std::time::Duration;

use airunway_api::apply_body;
use airunway_api::conditions::{self, DesiredCondition};
use airunway_api::constants::{API_VERSION, condition_types, field_managers, reasons};
use airunway_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use airunway_api::probe::health::HealthCheckRequest;
use airunway_api::probe::health::health_check_response::ServingStatus;
use airunway_api::probe::health::health_client::HealthClient;
use airunway_api::probe::v1::GetInfoRequest;
use airunway_api::probe::v1::provider_service_client::ProviderServiceClient;
use airunway_api::v1alpha1::InferenceProviderConfig;
use jiff::Timestamp;
use kube::Client;
use kube::ResourceExt;
use kube::api::{Api, PatchParams};
use kube::runtime::reflector::Store;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::selection::HealthPolicy;
use crate::selection::availability::heartbeat_staleness;

/// The probe history of one provider.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProbeState {
    /// Failed probes in a row.
    pub consecutive_failures: u32,
    /// When the current run of failures started.
    pub failing_since: Option<Timestamp>,
    /// The last error.
    pub last_error: String,
}

impl ProbeState {
    /// Records a probe outcome at `now`.
    pub fn record(&mut self, outcome: Result<(), String>, now: Timestamp) {
        match outcome {
            Ok(()) => *self = ProbeState::default(),
            Err(error) => {
                self.consecutive_failures += 1;
                self.failing_since.get_or_insert(now);
                self.last_error = error;
            }
        }
    }
}

/// The probe histories of the provider configurations the monitor sees, keyed by the
/// configuration's identity (`metadata.uid`), not its name: a configuration deleted and
/// created again under the same name, even within one probe interval, starts clean.
#[derive(Clone, Debug, Default)]
pub struct ProbeStates {
    by_uid: HashMap<String, ProbeState>,
}

impl ProbeStates {
    /// Forgets the histories of configurations no longer among `live`.
    pub fn retain_live(&mut self, live: &[std::sync::Arc<InferenceProviderConfig>]) {
        self.by_uid.retain(|uid, _| {
            live.iter()
                .any(|ipc| ipc.metadata.uid.as_deref() == Some(uid.as_str()))
        });
    }

    /// The history of `ipc` (a new, empty one for a configuration not seen before; `None`
    /// for one without a uid, which the API server always sets).
    pub fn of(&mut self, ipc: &InferenceProviderConfig) -> Option<&mut ProbeState> {
        let uid = ipc.metadata.uid.clone()?;
        Some(self.by_uid.entry(uid).or_default())
    }
}

/// The core's `Available` verdict on a provider (pure). Messages do not change from one probe
/// to the next while the verdict holds, so nothing is rewritten needlessly.
pub fn available_condition(
    ipc: &InferenceProviderConfig,
    now: Timestamp,
    policy: HealthPolicy,
    probe: &ProbeState,
    failure_threshold: u32,
) -> DesiredCondition {
    let t = condition_types::AVAILABLE;
    let status = ipc.status.as_ref();
    if status.and_then(|s| s.ready) != Some(true) {
        let detail = conditions::find(
            status.and_then(|s| s.conditions.as_deref()),
            condition_types::UPSTREAM_AVAILABLE,
        )
        .and_then(|c| c.message.clone())
        .unwrap_or_else(|| "it has not reported ready".to_string());
        return DesiredCondition::new(
            t,
            false,
            reasons::NOT_READY,
            format!("The provider reports ready=false: {detail}"),
        );
    }
    if heartbeat_staleness(ipc, now, policy).is_some() {
        let last = status
            .and_then(|s| s.last_heartbeat.as_ref())
            .map(|t| t.0.to_string())
            .unwrap_or_else(|| "never".into());
        return DesiredCondition::new(
            t,
            false,
            reasons::HEARTBEAT_STALE,
            format!(
                "No heartbeat since {last} (stale after {}s)",
                policy.stale_after.as_secs()
            ),
        );
    }
    let endpoint = ipc.spec.probe.as_ref().and_then(|p| p.endpoint.clone());
    if probe.consecutive_failures >= failure_threshold {
        let since = probe
            .failing_since
            .map(|t| t.to_string())
            .unwrap_or_default();
        return DesiredCondition::new(
            t,
            false,
            reasons::PROBE_FAILED,
            format!(
                "Probe of {} failing since {since}: {}",
                endpoint.unwrap_or_default(),
                probe.last_error
            ),
        );
    }
    let message = match endpoint {
        Some(endpoint) => format!("Heartbeat is fresh and the probe at {endpoint} answers"),
        None => "Heartbeat is fresh (the provider advertises no probe endpoint)".to_string(),
    };
    DesiredCondition::new(t, true, reasons::HEALTHY, message)
}

/// Probes `endpoint`: the standard health check must report SERVING and `GetInfo` must answer
/// with the provider's own name.
pub async fn probe(endpoint: &str, name: &str, timeout: Duration) -> Result<(), String> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{endpoint}"))
        .map_err(|e| format!("invalid probe endpoint {endpoint}: {e}"))?
        .connect_timeout(timeout)
        .timeout(timeout)
        .connect()
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    let health = HealthClient::new(channel.clone())
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .map_err(|e| format!("health check failed: {}", e.message()))?;
    if health.into_inner().status != ServingStatus::Serving as i32 {
        return Err("health check reports NOT_SERVING".to_string());
    }
    let info = ProviderServiceClient::new(channel)
        .get_info(GetInfoRequest {})
        .await
        .map_err(|e| format!("GetInfo failed: {}", e.message()))?
        .into_inner();
    if info.name != name {
        return Err(format!(
            "the endpoint answers as provider {:?}, not {name:?}",
            info.name
        ));
    }
    Ok(())
}

/// Options of the monitor.
#[derive(Clone, Copy, Debug)]
pub struct MonitorOptions {
    /// `--provider-probe-interval`.
    pub interval: Duration,
    /// `--provider-probe-failure-threshold`.
    pub failure_threshold: u32,
    /// Heartbeat staleness.
    pub policy: HealthPolicy,
}

/// The provider config to judge: the cached copy, unless its heartbeat looks stale — the
/// watch cache lags behind the API server after a watch broke, so a stale look is confirmed on
/// a fresh read (one GET per stale-looking provider per interval) before the verdict. A failed
/// read keeps the cached copy.
async fn confirmed(
    api: &Api<InferenceProviderConfig>,
    cached: std::sync::Arc<InferenceProviderConfig>,
    policy: HealthPolicy,
) -> std::sync::Arc<InferenceProviderConfig> {
    if heartbeat_staleness(&cached, Timestamp::now(), policy).is_none() {
        return cached;
    }
    match api.get(&cached.name_any()).await {
        Ok(fresh) => {
            if heartbeat_staleness(&fresh, Timestamp::now(), policy).is_none() {
                tracing::info!(provider = %cached.name_any(), "heartbeat looked stale in the cache but is fresh: the watch lags");
            }
            std::sync::Arc::new(fresh)
        }
        Err(e) => {
            tracing::debug!(provider = %cached.name_any(), error = %e, "could not re-read the provider config");
            cached
        }
    }
}

/// Runs the monitor until `shutdown`.
pub async fn run_monitor(
    client: Client,
    providers: Store<InferenceProviderConfig>,
    options: MonitorOptions,
    shutdown: CancellationToken,
) {
    let api: Api<InferenceProviderConfig> = Api::all(client);
    let mut states = ProbeStates::default();
    let timeout = (options.interval / 2).clamp(Duration::from_millis(500), Duration::from_secs(5));
    loop {
        let ipcs = providers.state();
        states.retain_live(&ipcs);
        for cached in ipcs {
            let Some(name) = cached.metadata.name.clone() else {
                continue;
            };
            let ipc = confirmed(&api, cached, options.policy).await;
            let Some(state) = states.of(&ipc) else {
                continue;
            };
            if let Some(endpoint) = ipc.spec.probe.as_ref().and_then(|p| p.endpoint.as_deref()) {
                let outcome = probe(endpoint, &name, timeout).await;
                if let Err(e) = &outcome {
                    tracing::debug!(provider = %name, error = %e, "probe failed");
                }
                state.record(outcome, Timestamp::now());
            }
            let desired = available_condition(
                &ipc,
                Timestamp::now(),
                options.policy,
                state,
                options.failure_threshold,
            );
            let existing = ipc.status.as_ref().and_then(|s| s.conditions.as_deref());
            if conditions::all_current(
                existing,
                std::slice::from_ref(&desired),
                ipc.metadata.generation,
            ) {
                continue;
            }
            let now = Time(Timestamp::now());
            let materialized = conditions::materialize(
                existing,
                std::slice::from_ref(&desired),
                ipc.metadata.generation,
                &now,
            );
            // The uid makes the write a precondition: a verdict on a configuration deleted
            // meanwhile is refused rather than written onto its successor of the same name.
            let body = json!({"apiVersion": API_VERSION, "kind": "InferenceProviderConfig", "metadata": {"name": name, "uid": ipc.metadata.uid},
                "status": {"conditions": materialized}});
            match api
                .patch_status(
                    &name,
                    &PatchParams::apply(field_managers::CORE).force(),
                    &apply_body::apply(&body),
                )
                .await
            {
                Ok(_) => {
                    tracing::info!(provider = %name, available = desired.status.as_str(), reason = %desired.reason, message = %desired.message, "provider availability changed")
                }
                Err(e) => {
                    tracing::warn!(provider = %name, error = %e, "could not record provider availability")
                }
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(options.interval) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipc(status: serde_json::Value) -> InferenceProviderConfig {
        serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig",
            "metadata": {"name": "p", "generation": 1}, "spec": {"probe": {"endpoint": "10.0.0.1:9090"}}, "status": status}))
        .unwrap()
    }

    const POLICY: HealthPolicy = HealthPolicy {
        stale_after: Duration::from_secs(90),
    };

    fn with_uid(uid: &str) -> std::sync::Arc<InferenceProviderConfig> {
        let mut config = ipc(json!({"ready": true}));
        config.metadata.uid = Some(uid.to_string());
        std::sync::Arc::new(config)
    }

    #[test]
    fn a_configuration_created_again_under_its_name_starts_clean() {
        let now: Timestamp = "2026-01-01T00:10:00Z".parse().unwrap();
        let mut states = ProbeStates::default();
        let old = with_uid("uid-1");
        for _ in 0..3 {
            states
                .of(&old)
                .unwrap()
                .record(Err("cannot connect".into()), now);
        }
        assert_eq!(states.of(&old).unwrap().consecutive_failures, 3);
        // Deleted and created again within one probe interval: the monitor never saw the
        // name missing, but the new configuration has another uid.
        let new = with_uid("uid-2");
        assert_eq!(new.metadata.name, old.metadata.name);
        states.retain_live(std::slice::from_ref(&new));
        assert_eq!(*states.of(&new).unwrap(), ProbeState::default());
        states
            .of(&new)
            .unwrap()
            .record(Err("cannot connect".into()), now);
        assert_eq!(states.of(&new).unwrap().consecutive_failures, 1);
        // The old history is gone with its configuration.
        states.retain_live(std::slice::from_ref(&new));
        assert_eq!(*states.of(&old).unwrap(), ProbeState::default());
        // A configuration without a uid (never from the API server) has no history.
        assert!(states.of(&ipc(json!({}))).is_none());
    }

    #[test]
    fn verdicts() {
        let now: Timestamp = "2026-01-01T00:10:00Z".parse().unwrap();
        let fresh = ipc(json!({"ready": true, "lastHeartbeat": "2026-01-01T00:09:50Z"}));
        let mut probe = ProbeState::default();
        assert_eq!(
            available_condition(&fresh, now, POLICY, &probe, 3).reason,
            reasons::HEALTHY
        );
        for _ in 0..2 {
            probe.record(Err("cannot connect: refused".into()), now);
        }
        assert_eq!(
            available_condition(&fresh, now, POLICY, &probe, 3).reason,
            reasons::HEALTHY,
            "below the threshold"
        );
        probe.record(
            Err("cannot connect: refused".into()),
            "2026-01-01T00:10:05Z".parse().unwrap(),
        );
        let failing = available_condition(&fresh, now, POLICY, &probe, 3);
        assert_eq!(failing.reason, reasons::PROBE_FAILED);
        assert_eq!(
            failing.message,
            "Probe of 10.0.0.1:9090 failing since 2026-01-01T00:10:00Z: cannot connect: refused"
        );
        probe.record(Err("cannot connect: refused".into()), now);
        assert_eq!(
            available_condition(&fresh, now, POLICY, &probe, 3),
            failing,
            "stable message while failing"
        );
        probe.record(Ok(()), now);
        assert_eq!(probe, ProbeState::default());

        let stale = ipc(json!({"ready": true, "lastHeartbeat": "2026-01-01T00:00:00Z"}));
        let verdict = available_condition(&stale, now, POLICY, &ProbeState::default(), 3);
        assert_eq!(
            (verdict.reason.as_str(), verdict.message.as_str()),
            (
                reasons::HEARTBEAT_STALE,
                "No heartbeat since 2026-01-01T00:00:00Z (stale after 90s)"
            )
        );
        let not_ready = available_condition(
            &ipc(json!({"ready": false})),
            now,
            POLICY,
            &ProbeState::default(),
            3,
        );
        assert_eq!(not_ready.reason, reasons::NOT_READY);
    }
}
