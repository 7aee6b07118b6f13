//! The model cache's download Job played by a test: the Job's own identity (a TokenRequest
//! token of its ServiceAccount in a kubeconfig), its arguments with the claim's mount path
//! mapped to a directory, and its Pod ended the way a kubelet would report it, so the real Job
//! controller completes or fails the Job.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

use crate::env::TestEnv;
use crate::wait::eventually;

/// A kubeconfig that authenticates with a TokenRequest token of ServiceAccount
/// `service_account` in the test namespace (what the kubelet mounts into the Job's Pod).
pub async fn token_kubeconfig(env: &TestEnv, service_account: &str) -> PathBuf {
    let token = crate::images::service_account_token(&env.client, &env.namespace, service_account)
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
    let dir = &env.control_plane.dir;
    let path = dir.join(format!("{}-{service_account}.kubeconfig", env.namespace));
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: airunway-e2e\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: job\n  user:\n    token: {token}\ncontexts:\n- name: airunway-e2e\n  context:\n    cluster: airunway-e2e\n    user: job\n    namespace: {}\ncurrent-context: airunway-e2e\n",
        env.control_plane.server,
        dir.join("ca.crt").display(),
        env.namespace,
    );
    std::fs::write(&path, yaml).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    path
}

/// The Job's container arguments, with `mount_path` (where the Pod mounts the claim) replaced
/// by `dir`.
pub fn job_args(job: &Job, mount_path: &str, dir: &Path) -> Vec<String> {
    let container = job
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.containers.first())
        .unwrap_or_else(|| panic!("Job without a container: {job:?}"));
    container
        .args
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|a| {
            if a == mount_path {
                dir.display().to_string()
            } else {
                a
            }
        })
        .collect()
}

/// The Pod the Job controller made for Job `job`.
pub async fn job_pod(env: &TestEnv, job: &str) -> Pod {
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    let selector = format!("batch.kubernetes.io/job-name={job}");
    eventually(
        &format!("the Pod of Job {job}"),
        Duration::from_secs(30),
        || {
            let (pods, selector) = (pods.clone(), selector.clone());
            async move {
                let list = pods
                    .list(&ListParams::default().labels(&selector))
                    .await
                    .map_err(|e| e.to_string())?;
                list.items
                    .into_iter()
                    .next()
                    .ok_or_else(|| "no Pod yet".to_string())
            }
        },
    )
    .await
}

/// Ends `pod` as a kubelet reports a container that exited with `exit_code` (`Succeeded` for
/// 0, else `Failed`).
pub async fn end_pod(env: &TestEnv, pod: &Pod, exit_code: i32, message: &str) {
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    let name = pod.metadata.name.clone().unwrap_or_default();
    let containers = pod
        .spec
        .as_ref()
        .map(|s| s.containers.clone())
        .unwrap_or_default();
    let now = jiff::Timestamp::now().to_string();
    let statuses: Vec<_> = containers
        .iter()
        .map(|c| {
            json!({
                "name": c.name, "image": c.image, "imageID": "", "ready": false,
                "restartCount": 0, "started": false,
                "state": {"terminated": {
                    "exitCode": exit_code,
                    "reason": if exit_code == 0 { "Completed" } else { "Error" },
                    "message": message,
                    "startedAt": now, "finishedAt": now,
                }},
            })
        })
        .collect();
    let phase = if exit_code == 0 {
        "Succeeded"
    } else {
        "Failed"
    };
    let patch = json!({"status": {"phase": phase, "containerStatuses": statuses}});
    pods.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("ending Pod {name}: {e}"));
}
