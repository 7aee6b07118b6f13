//! The core's provider health monitor against the real API server: what it remembers of a
//! provider's failed probes belongs to one provider configuration (its uid), not to its name.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use airunway_api::constants::{condition_types, reasons};
use airunway_api::v1alpha1::{ConditionStatus, InferenceProviderConfig};
use airunway_e2e::binaries::free_port;
use airunway_e2e::providers::{delete_all, register, shipped_registration};
use airunway_e2e::stack;
use airunway_e2e::wait::{eventually, wait_deleted, wait_for};
use airunway_e2e::{TestEnv, cluster_lock};
use kube::api::{Api, DeleteParams};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);

/// The interval is long enough that deleting and creating the configuration again falls
/// between two rounds of the monitor; the threshold leaves room for a first probe of the new
/// configuration that runs before its status says `ready`.
const MONITOR: [&str; 3] = [
    "--provider-probe-interval=4s",
    "--provider-probe-failure-threshold=3",
    "--provider-stale-threshold=10m",
];

fn available(ipc: &InferenceProviderConfig) -> Option<(ConditionStatus, String)> {
    ipc.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == condition_types::AVAILABLE))
        .map(|c| (c.status, c.reason.clone().unwrap_or_default()))
}

/// A provider configuration whose probe fails is reported `ProbeFailed`; deleted and created
/// again under the same name within one probe interval (a provider reinstalled), the new
/// configuration starts with no failures: its first verdict is `Healthy`, not the old
/// configuration's `ProbeFailed` (issue 32, bug 3).
#[tokio::test]
async fn a_provider_config_created_again_starts_with_a_clean_probe_history() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("health-recreated").await;
    delete_all(&env.client).await;
    let core = stack::start_core(&env, &env.control_plane.kubeconfig, &MONITOR, "core").await;
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    // Nothing listens on this port: every probe fails with "cannot connect".
    let mut registration = shipped_registration("llmd");
    registration["metadata"] = json!({"name": "flaky"});
    registration["spec"]["probe"] = json!({"endpoint": format!("127.0.0.1:{}", free_port())});
    register(&env.client, &registration, true).await;
    let failed = wait_for(&ipcs, "flaky", WAIT, "Available=False/ProbeFailed", |ipc| {
        available(ipc).is_some_and(|(_, r)| r == reasons::PROBE_FAILED)
    })
    .await;
    let old_uid = failed.metadata.uid.clone().unwrap();

    // Reinstalled: deleted and created again at once, with a fresh heartbeat.
    ipcs.delete("flaky", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&ipcs, "flaky", WAIT).await;
    register(&env.client, &registration, true).await;
    let recreated = ipcs.get("flaky").await.unwrap();
    assert_ne!(recreated.metadata.uid.as_deref(), Some(old_uid.as_str()));

    // Its first verdict with `ready: true`, watched closely (every 200 ms; the monitor writes
    // once per 4 s round): Healthy while its own failures are below the threshold.
    let first = eventually(
        "the core's first verdict on the new configuration",
        WAIT,
        || async {
            let ipc = ipcs.get("flaky").await.map_err(|e| e.to_string())?;
            match available(&ipc) {
                Some((status, reason)) if reason != reasons::NOT_READY => Ok((status, reason)),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    assert_eq!(
        first,
        (ConditionStatus::True, reasons::HEALTHY.to_string()),
        "the new configuration inherited the old one's probe failures"
    );
    // Its own failures then count from zero up to the threshold.
    wait_for(
        &ipcs,
        "flaky",
        WAIT,
        "Available=False/ProbeFailed again",
        |ipc| available(ipc).is_some_and(|(_, r)| r == reasons::PROBE_FAILED),
    )
    .await;

    core.process.terminate(Duration::from_secs(10));
    delete_all(&env.client).await;
}
