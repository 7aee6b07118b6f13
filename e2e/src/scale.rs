//! Scaling a ModelDeployment as a user does (the real `kubectl scale` through the scale
//! subresource) and checking the workload contract: `status.selector` selects exactly the
//! deployment's serving pods.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use airunway_api::v1alpha1::ModelDeployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

use crate::env::TestEnv;
use crate::paths;
use crate::wait::eventually;

/// The kstatus program (`sigs.k8s.io/cli-utils`, `e2e/go/kstatus`): `AIRUNWAY_KSTATUS_BIN`, else
/// built (or found cached) by its `build.sh`.
pub fn kstatus_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("AIRUNWAY_KSTATUS_BIN") {
        return PathBuf::from(path);
    }
    go_program("e2e/go/kstatus/build.sh", "kstatus")
}

/// Runs a program with `objects` as a JSON array on stdin and returns its stdout, a JSON array
/// (the harness's Go programs that judge objects: kstatus, the Argo CD health checks).
pub fn run_json(
    binary: &std::path::Path,
    args: &[&std::ffi::OsStr],
    objects: &[serde_json::Value],
) -> Vec<serde_json::Value> {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(binary)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running {}: {e}", binary.display()));
    let input = serde_json::to_string(objects).unwrap_or_default();
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input.as_bytes())
            .unwrap_or_else(|e| panic!("writing to {}: {e}", binary.display()));
    }
    let output = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("waiting for {}: {e}", binary.display()));
    assert!(
        output.status.success(),
        "{} failed: {}",
        binary.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{} printed no JSON array: {e}", binary.display()))
}

/// Builds (or finds cached) one of the harness's Go programs with its `build.sh` under
/// `e2e/go/`; returns the binary's path.
pub fn go_program(script: &str, name: &str) -> PathBuf {
    let script = paths::workspace_root().join(script);
    let started = Instant::now();
    let output = Command::new(&script)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
    assert!(
        output.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!(
        "{name} binary ready in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
}

/// The real kubectl (`e2e/go/kubectl`, or `$AIRUNWAY_KUBECTL_BIN`).
pub fn kubectl_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("AIRUNWAY_KUBECTL_BIN") {
        return PathBuf::from(path);
    }
    go_program("e2e/go/kubectl/build.sh", "kubectl")
}

/// Runs kubectl with `args` against the test's control plane and namespace; returns (success,
/// stdout + stderr).
pub async fn kubectl(env: &TestEnv, args: &[&str]) -> (bool, String) {
    let output = tokio::process::Command::new(kubectl_binary())
        .arg("--kubeconfig")
        .arg(&env.control_plane.kubeconfig)
        .args(["--namespace", &env.namespace])
        .args(args)
        .output()
        .await
        .unwrap_or_else(|e| panic!("running kubectl {args:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text.trim().to_string())
}

/// `kubectl scale md/<name> --replicas=<replicas>`; panics with kubectl's output unless it
/// succeeds.
pub async fn kubectl_scale(env: &TestEnv, name: &str, replicas: i32) -> String {
    let (ok, output) = kubectl(
        env,
        &[
            "scale",
            &format!("md/{name}"),
            &format!("--replicas={replicas}"),
        ],
    )
    .await;
    assert!(
        ok,
        "kubectl scale md/{name} --replicas={replicas}: {output}"
    );
    output
}

/// Waits until `status.selector` of deployment `name` selects exactly the pods `expected`
/// names (sorted), and returns the selector. `expected` is what the test knows are the
/// serving pods (e.g. the pods of the Deployments the provider created).
pub async fn wait_selector_selects(
    env: &TestEnv,
    name: &str,
    expected: impl Fn(&[Pod]) -> Vec<String>,
    timeout: Duration,
) -> String {
    let deployments: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    eventually(
        &format!("status.selector of md/{name} to select exactly its serving pods"),
        timeout,
        || async {
            let md = deployments.get(name).await.map_err(|e| e.to_string())?;
            let selector = md
                .status
                .as_ref()
                .and_then(|s| s.selector.clone())
                .ok_or_else(|| "no status.selector".to_string())?;
            let all = pods
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?
                .items;
            let mut want = expected(&all);
            want.sort();
            let mut selected: Vec<String> = pods
                .list(&ListParams::default().labels(&selector))
                .await
                .map_err(|e| e.to_string())?
                .items
                .into_iter()
                .filter_map(|p| p.metadata.name)
                .collect();
            selected.sort();
            if selected == want && !want.is_empty() {
                Ok(selector)
            } else {
                Err(format!(
                    "selector {selector:?} selects {selected:?}; the serving pods are {want:?}"
                ))
            }
        },
    )
    .await
}
