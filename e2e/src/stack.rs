//! Starting the core and providers for a test, each on free ports, waiting until ready.

use std::path::Path;
use std::time::Duration;

use crate::binaries::{free_port, start_binary_with_env};
use crate::env::TestEnv;
use crate::http;
use crate::process::ProcessHandle;
use crate::wait::eventually;

/// A running binary with its ports.
pub struct Running {
    /// The process.
    pub process: ProcessHandle,
    /// `/metrics` port.
    pub metrics: u16,
    /// `/healthz`, `/readyz` port.
    pub health: u16,
    /// gRPC probe port (providers).
    pub probe: Option<u16>,
}

impl Running {
    /// `http://127.0.0.1:<metrics>/metrics`.
    pub fn metrics_url(&self) -> String {
        format!("http://127.0.0.1:{}/metrics", self.metrics)
    }
}

async fn start(
    env: &TestEnv,
    binary: &str,
    kubeconfig: &Path,
    mut args: Vec<String>,
    pod_name: &str,
    probe: Option<u16>,
) -> Running {
    let metrics = free_port();
    let health = free_port();
    args.push(format!("--metrics-bind-address=127.0.0.1:{metrics}"));
    args.push(format!("--health-probe-bind-address=127.0.0.1:{health}"));
    let process = start_binary_with_env(env, binary, kubeconfig, &args, &[("POD_NAME", pod_name)]);
    eventually(
        &format!("{binary} to be ready"),
        Duration::from_secs(60),
        || async {
            if let Some(status) = process.exit_status() {
                panic!(
                    "{binary} exited during startup ({status}):\n{}",
                    process.log_tail(30)
                );
            }
            match http::get(&format!("http://127.0.0.1:{health}/readyz")).await {
                Ok((200, _)) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    Running {
        process,
        metrics,
        health,
        probe,
    }
}

/// Starts `airunway-core` with `extra` flags (webhooks off unless `extra` sets
/// `--webhook-bind-address`).
pub async fn start_core(
    env: &TestEnv,
    kubeconfig: &Path,
    extra: &[&str],
    pod_name: &str,
) -> Running {
    let mut args: Vec<String> = Vec::new();
    if !extra
        .iter()
        .any(|a| a.starts_with("--webhook-bind-address"))
    {
        args.push("--webhook-bind-address=127.0.0.1:0".to_string());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    start(env, "airunway-core", kubeconfig, args, pod_name, None).await
}

/// Starts a provider binary with its probe on a free port and `extra` flags.
pub async fn start_provider(
    env: &TestEnv,
    binary: &str,
    kubeconfig: &Path,
    extra: &[&str],
    pod_name: &str,
) -> Running {
    let probe = free_port();
    let mut args = vec![format!("--probe-bind-address=127.0.0.1:{probe}")];
    args.extend(extra.iter().map(|s| s.to_string()));
    start(env, binary, kubeconfig, args, pod_name, Some(probe)).await
}

/// Flags that make the core notice dead providers within a few seconds.
pub const FAST_HEALTH: [&str; 3] = [
    "--provider-probe-interval=1s",
    "--provider-probe-failure-threshold=2",
    "--provider-stale-threshold=10s",
];

/// Applies the shipped RBAC manifest `rbac` (relative to the workspace root) into the test
/// namespace and returns a kubeconfig that authenticates as its ServiceAccount
/// `service_account`, so the binary runs with exactly the permissions users install.
pub async fn service_account_identity(
    env: &TestEnv,
    rbac: &str,
    service_account: &str,
) -> std::path::PathBuf {
    let mut objects = crate::manifests::read(&crate::paths::workspace_root().join(rbac));
    crate::manifests::retarget_namespace(&mut objects, &env.namespace);
    crate::manifests::apply(&env.client, &objects).await;
    let user = format!("system:serviceaccount:{}:{service_account}", env.namespace);
    let namespace_group = format!("system:serviceaccounts:{}", env.namespace);
    env.control_plane
        .kubeconfig_for(&user, &["system:serviceaccounts", &namespace_group])
        .unwrap_or_else(|e| panic!("kubeconfig for {user}: {e:#}"))
}
