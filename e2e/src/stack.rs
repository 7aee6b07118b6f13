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
    extra_env: &[(&str, &str)],
) -> Running {
    let metrics = free_port();
    let health = free_port();
    args.push(format!("--metrics-bind-address=127.0.0.1:{metrics}"));
    args.push(format!("--health-probe-bind-address=127.0.0.1:{health}"));
    // As in a Pod: POD_NAMESPACE is where its Role (leases, the webhook Secret) is bound.
    let mut process_env = vec![("POD_NAME", pod_name), ("POD_NAMESPACE", &env.namespace)];
    process_env.extend_from_slice(extra_env);
    let process = start_binary_with_env(env, binary, kubeconfig, &args, &process_env);
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

/// The shipped RBAC manifest and ServiceAccount of one of our binaries (`None` for a binary
/// without one).
pub fn shipped_rbac(binary: &str) -> Option<(String, String)> {
    match binary {
        "airunway-core" => Some(("deploy/core/rbac.yaml".into(), binary.into())),
        "configmap-provider" => Some((
            "examples/configmap-provider/deploy/rbac.yaml".into(),
            binary.into(),
        )),
        _ => {
            let provider = binary.strip_prefix("airunway-provider-")?;
            let rbac = format!("deploy/providers/{provider}/rbac.yaml");
            crate::paths::workspace_root()
                .join(&rbac)
                .is_file()
                .then(|| (rbac, binary.to_string()))
        }
    }
}

/// The identity a binary runs with: given the admin kubeconfig of the control plane, the
/// binary's own ServiceAccount with its shipped RBAC (so every suite runs the core and the
/// providers with exactly the permissions users install); any other kubeconfig as given.
/// `AIRUNWAY_E2E_ADMIN_BINARIES=1` keeps the admin identity (for debugging an RBAC failure).
pub async fn identity_for(env: &TestEnv, binary: &str, kubeconfig: &Path) -> std::path::PathBuf {
    let admin = kubeconfig == env.control_plane.kubeconfig.as_path();
    let keep_admin = std::env::var("AIRUNWAY_E2E_ADMIN_BINARIES").is_ok_and(|v| v == "1");
    match shipped_rbac(binary) {
        Some((rbac, account)) if admin && !keep_admin => {
            service_account_identity(env, &rbac, &account).await
        }
        _ => kubeconfig.to_path_buf(),
    }
}

/// Starts `airunway-core` with `extra` flags (webhooks off unless `extra` sets
/// `--webhook-bind-address`). Given the admin kubeconfig it runs as its ServiceAccount
/// ([`identity_for`]).
pub async fn start_core(
    env: &TestEnv,
    kubeconfig: &Path,
    extra: &[&str],
    pod_name: &str,
) -> Running {
    start_core_with_env(env, kubeconfig, extra, pod_name, &[]).await
}

/// [`start_core`] with extra environment variables (e.g. `OTEL_EXPORTER_OTLP_ENDPOINT`).
pub async fn start_core_with_env(
    env: &TestEnv,
    kubeconfig: &Path,
    extra: &[&str],
    pod_name: &str,
    extra_env: &[(&str, &str)],
) -> Running {
    let mut args: Vec<String> = Vec::new();
    if !extra
        .iter()
        .any(|a| a.starts_with("--webhook-bind-address"))
    {
        args.push("--webhook-bind-address=127.0.0.1:0".to_string());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let identity = identity_for(env, "airunway-core", kubeconfig).await;
    start(
        env,
        "airunway-core",
        &identity,
        args,
        pod_name,
        None,
        extra_env,
    )
    .await
}

/// Starts a provider binary with its probe on a free port and `extra` flags. Given the admin
/// kubeconfig it runs as its ServiceAccount ([`identity_for`]).
pub async fn start_provider(
    env: &TestEnv,
    binary: &str,
    kubeconfig: &Path,
    extra: &[&str],
    pod_name: &str,
) -> Running {
    start_provider_with_env(env, binary, kubeconfig, extra, pod_name, &[]).await
}

/// [`start_provider`] with extra environment variables (e.g. `OTEL_EXPORTER_OTLP_ENDPOINT`).
pub async fn start_provider_with_env(
    env: &TestEnv,
    binary: &str,
    kubeconfig: &Path,
    extra: &[&str],
    pod_name: &str,
    extra_env: &[(&str, &str)],
) -> Running {
    let probe = free_port();
    let mut args = vec![format!("--probe-bind-address=127.0.0.1:{probe}")];
    args.extend(extra.iter().map(|s| s.to_string()));
    let identity = identity_for(env, binary, kubeconfig).await;
    start(
        env,
        binary,
        &identity,
        args,
        pod_name,
        Some(probe),
        extra_env,
    )
    .await
}

/// Flags that make the core notice dead providers within a few seconds.
pub const FAST_HEALTH: [&str; 3] = [
    "--provider-probe-interval=1s",
    "--provider-probe-failure-threshold=2",
    "--provider-stale-threshold=10s",
];

/// Applies the shipped RBAC manifest `rbac` (relative to the workspace root) into the test
/// namespace and returns a kubeconfig that authenticates as its ServiceAccount
/// `service_account`, so the binary runs with exactly the permissions users install. Each
/// ClusterRoleBinding gets the namespace in its name, so tests running at the same time each
/// keep their own binding (the ClusterRoles are the same for all).
pub async fn service_account_identity(
    env: &TestEnv,
    rbac: &str,
    service_account: &str,
) -> std::path::PathBuf {
    let mut objects = crate::manifests::read(&crate::paths::workspace_root().join(rbac));
    crate::manifests::retarget_namespace(&mut objects, &env.namespace);
    for object in &mut objects {
        if object["kind"] == "ClusterRoleBinding"
            && let Some(name) = object["metadata"]["name"].as_str()
        {
            object["metadata"]["name"] =
                serde_json::Value::String(format!("{name}-{}", env.namespace));
        }
    }
    crate::manifests::apply(&env.client, &objects).await;
    let user = format!("system:serviceaccount:{}:{service_account}", env.namespace);
    let namespace_group = format!("system:serviceaccounts:{}", env.namespace);
    env.control_plane
        .kubeconfig_for(&user, &["system:serviceaccounts", &namespace_group])
        .unwrap_or_else(|e| panic!("kubeconfig for {user}: {e:#}"))
}
