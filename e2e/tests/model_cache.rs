//! The model cache (issue 33), first step: the real `airunway-model-downloader` binary reports
//! its progress to an object's `status` on the real API server, as an identity whose only
//! permission is a Role limited by `resourceNames` to that one object's status (the narrowest
//! permission a download Job's Pod gets). A local HTTP server plays the model source (`--uri`),
//! streaming the file slowly enough that several reports land before the end.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use airunway_e2e::control_plane::wait_crd_established;
use airunway_e2e::paths;
use airunway_e2e::wait::eventually;
use airunway_e2e::{TestEnv, cluster_lock};
use axum::Router;
use axum::body::Body;
use axum::routing::get;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use serde_json::{Value, json};

const CHUNK: usize = 512 * 1024;
const CHUNKS: usize = 48;

fn caches(env: &TestEnv) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "e2e.airunway.ai".into(),
        version: "v1".into(),
        api_version: "e2e.airunway.ai/v1".into(),
        kind: "TestCache".into(),
        plural: "testcaches".into(),
    };
    Api::namespaced_with(env.client.clone(), &env.namespace, &resource)
}

/// Serves `/model.bin`: `CHUNKS` chunks of `CHUNK` bytes, 40 ms apart (about 2 s in all).
async fn slow_source() -> String {
    let app = Router::new().route(
        "/model.bin",
        get(|| async {
            let chunks = futures::stream::unfold(0usize, |sent| async move {
                if sent == CHUNKS {
                    return None;
                }
                tokio::time::sleep(Duration::from_millis(40)).await;
                Some((Ok::<_, std::io::Error>(vec![b'w'; CHUNK]), sent + 1))
            });
            axum::response::Response::builder()
                .header("content-length", (CHUNK * CHUNKS).to_string())
                .body(Body::from_stream(chunks))
                .unwrap()
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}/model.bin")
}

#[tokio::test]
async fn the_downloader_reports_progress_to_one_objects_status_with_a_role_limited_to_it() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("model-cache").await;
    // A kind with a status subresource, standing in for the cache kind to come.
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "testcaches.e2e.airunway.ai"},
        "spec": {"group": "e2e.airunway.ai", "scope": "Namespaced",
            "names": {"plural": "testcaches", "singular": "testcache", "kind": "TestCache"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    if let Err(kube::Error::Api(status)) = crds.create(&PostParams::default(), &crd).await {
        assert_eq!(status.code, 409, "creating the CRD: {status:?}");
    }
    wait_crd_established(
        &env.client,
        "testcaches.e2e.airunway.ai",
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    let api = caches(&env);
    for name in ["qwen", "other"] {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "e2e.airunway.ai/v1", "kind": "TestCache", "metadata": {"name": name}}))
        .unwrap();
        eventually(
            &format!("creating TestCache {name}"),
            Duration::from_secs(30),
            || {
                let (api, object) = (api.clone(), object.clone());
                async move {
                    api.create(&PostParams::default(), &object)
                        .await
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                }
            },
        )
        .await;
    }
    // The Job Pod's identity: patch of `testcaches/status`, for `qwen` only.
    airunway_e2e::manifests::apply(
        &env.client,
        &[
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "downloader-qwen", "namespace": env.namespace},
                "rules": [{"apiGroups": ["e2e.airunway.ai"], "resources": ["testcaches/status"],
                    "resourceNames": ["qwen"], "verbs": ["get", "patch"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "downloader-qwen", "namespace": env.namespace},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "downloader-qwen"},
                "subjects": [{"kind": "ServiceAccount", "name": "downloader", "namespace": env.namespace}]}),
        ],
    )
    .await;
    let user = format!("system:serviceaccount:{}:downloader", env.namespace);
    let kubeconfig = env
        .control_plane
        .kubeconfig_for(&user, &["system:serviceaccounts"])
        .unwrap();
    let uri = slow_source().await;
    let binary = paths::our_binary("airunway-model-downloader").unwrap();
    let target = std::env::temp_dir().join(format!("airunway-{}-cache", env.namespace));

    // Every status the object goes through while the real binary downloads.
    let watcher = {
        let api = api.clone();
        tokio::spawn(async move {
            let mut seen: Vec<Value> = Vec::new();
            for _ in 0..400 {
                if let Ok(object) = api.get_status("qwen").await {
                    let download = object.data["status"]["download"].clone();
                    if !download.is_null() && seen.last() != Some(&download) {
                        let done = download["phase"] == "Ready";
                        seen.push(download);
                        if done {
                            break;
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            seen
        })
    };
    // Runs the real binary reporting to `object`; it must succeed either way.
    let run = |object: &'static str| {
        let (binary, uri, target, kubeconfig) = (
            binary.clone(),
            uri.clone(),
            target.clone(),
            kubeconfig.clone(),
        );
        let report = format!("e2e.airunway.ai/v1/testcaches/{}/{object}", env.namespace);
        async move {
            let output = tokio::process::Command::new(&binary)
                .args([
                    "--uri",
                    &uri,
                    "--target-dir",
                    &target.display().to_string(),
                    "--report-status",
                    &report,
                    "--progress-interval-ms",
                    "250",
                    "--termination-log",
                    &target.join("termination-log").display().to_string(),
                ])
                .env("KUBECONFIG", &kubeconfig)
                .output()
                .await
                .unwrap();
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
    };
    run("qwen").await;
    let seen = watcher.await.unwrap();
    let last = seen.last().cloned().unwrap_or(Value::Null);
    assert_eq!(last["phase"], "Ready", "{seen:?}");
    assert_eq!(last["bytesDone"], json!(CHUNK * CHUNKS), "{last}");
    assert_eq!(last["percentage"], json!(100), "{last}");
    let downloading: Vec<&Value> = seen
        .iter()
        .filter(|d| d["phase"] == "Downloading")
        .collect();
    assert!(
        downloading.len() >= 2,
        "progress reported during the download: {seen:?}"
    );
    let bytes: Vec<u64> = downloading
        .iter()
        .filter_map(|d| d["bytesDone"].as_u64())
        .collect();
    assert!(
        bytes.windows(2).all(|w| w[0] <= w[1]) && bytes.first() < bytes.last(),
        "progress rises: {bytes:?}"
    );
    assert_eq!(
        std::fs::metadata(target.join("model.bin")).unwrap().len(),
        (CHUNK * CHUNKS) as u64
    );

    // The same identity may not write another object's status: the report is refused and
    // the download still succeeds (the file is already there and complete).
    run("other").await;
    let other = api.get_status("other").await.unwrap();
    assert!(
        other.data["status"]["download"].is_null(),
        "{:?}",
        other.data["status"]
    );
    let _ = std::fs::remove_dir_all(&target);
}
