//! The model cache (issue 33) on the real control plane with the real core:
//! - the real `airunway-model-downloader` reports its progress to a `ModelCache`'s
//!   `status.download` as an identity whose only permission is a Role limited by
//!   `resourceNames` to that one cache's status, and is refused for another cache;
//! - two deployments of one model share one cache, one claim and one Job; the downloader runs
//!   as a local process with the Job's arguments and a token of the Job's ServiceAccount against
//!   a local server with the Hub's file API (`model-downloader/tests/common`), the cache's status
//!   shows the progress rising, then, once the test ends the Job's Pod (KWOK cannot schedule it:
//!   its claim has no volume) and the real Job controller completes the Job, `Ready` and both
//!   deployments `ModelDownloaded=True`; deleting one keeps the cache, deleting the last deletes
//!   it after its retention period;
//! - a file answered 404 fails the download, the Job (its pod failure policy) and the cache, and
//!   the deployment shows `ModelDownloaded=False/DownloadFailed` with the reason;
//! - with the real llm-d and vLLM providers running, one deployment on each shares the cache:
//!   both are held `Pending` (`Reconciling=True/DownloadInProgress`) with no Deployment created
//!   until the cache is `Ready`, then each provider's Deployments mount the one claim at
//!   `/model-cache` with `HF_HOME` there;
//! - LoRA adapters fetched through the model cache: one cache per Hugging Face adapter on the
//!   model cache's claim, the vLLM provider's workload held (`status.adapters` `Downloading`)
//!   until the model and every adapter are `Ready`, a second deployment reusing an adapter's
//!   cache (`users: 2`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// The Hub's file API from generated files: the downloader's own test server, reused.
#[path = "../../model-downloader/tests/common/mod.rs"]
mod hub;

use std::time::Duration;

use airunway_api::constants::{condition_types, labels, reasons};
use airunway_api::storage::{self, ModelCacheKey};
use airunway_api::v1alpha1::{CachePhase, ConditionStatus, ModelCache, ModelDeployment};
use airunway_e2e::model_cache::{end_pod, job_args, job_pod, token_kubeconfig};
use airunway_e2e::paths;
use airunway_e2e::stack::start_core;
use airunway_e2e::wait::{wait_deleted, wait_for, wait_for_condition};
use airunway_e2e::{TestEnv, cluster_lock};
use axum::Router;
use axum::body::Body;
use axum::routing::get;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::{Value, json};

const CHUNK: usize = 512 * 1024;
const CHUNKS: usize = 48;

fn caches(env: &TestEnv) -> Api<ModelCache> {
    Api::namespaced(env.client.clone(), &env.namespace)
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
    // No core runs in this test: the caches are plain objects whose status the downloader
    // writes.
    let api = caches(&env);
    for name in ["qwen", "other"] {
        let object: ModelCache = serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelCache", "metadata": {"name": name},
            "spec": {"source": "custom", "uri": "http://127.0.0.1/model.bin", "size": "1Gi"}}))
        .unwrap();
        api.create(&PostParams::default(), &object).await.unwrap();
    }
    // The Job Pod's identity: patch of `modelcaches/status`, for `qwen` only.
    airunway_e2e::manifests::apply(
        &env.client,
        &[
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "downloader-qwen", "namespace": env.namespace},
                "rules": [{"apiGroups": ["airunway.ai"], "resources": ["modelcaches/status"],
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
                    let download =
                        serde_json::to_value(object.status.and_then(|s| s.download)).unwrap();
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
        let report = format!(
            "airunway.ai/v1alpha1/modelcaches/{}/{object}",
            env.namespace
        );
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
    assert_eq!(
        other.status.as_ref().and_then(|s| s.download.clone()),
        None,
        "{:?}",
        other.status
    );
    let _ = std::fs::remove_dir_all(&target);
}

const MODEL: &str = "org/model";
const WAIT: Duration = Duration::from_secs(60);
const LARGE: &str = "model.safetensors";
const LARGE_SIZE: u64 = 48 << 20;

fn deployment(name: &str) -> ModelDeployment {
    serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": name},
        "spec": {"model": {"id": MODEL, "storage": {"volumes": [
                {"name": "weights", "purpose": "modelCache"}]}},
            "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}},
    }))
    .unwrap()
}

/// A Hub serving `org/model`: a small config, a 48 MiB LFS file and a nested file.
fn model_files() -> hub::Hub {
    hub::Hub::new(vec![
        (
            "config.json",
            hub::Content::Literal(bytes::Bytes::from_static(b"{\"model_type\": \"qwen3\"}")),
            false,
        ),
        (
            LARGE,
            hub::Content::Generated {
                size: LARGE_SIZE,
                seed: 7,
            },
            true,
        ),
        (
            "tokenizer/tokenizer.json",
            hub::Content::Literal(bytes::Bytes::from_static(b"{\"version\": \"1.0\"}")),
            false,
        ),
    ])
}

/// Runs the real downloader with the Job's arguments (the claim mapped to `dir`) as the Job's
/// ServiceAccount; returns its exit code and stderr. Test-only flags: reports every 250 ms, a
/// stalled transfer retried after 2 s, the termination log in `dir`.
async fn run_job(env: &TestEnv, job: &Job, dir: &std::path::Path) -> (i32, String) {
    let account = job
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.service_account_name.clone())
        .unwrap();
    let kubeconfig = token_kubeconfig(env, &account).await;
    let mut args = job_args(job, storage::MODEL_CACHE_MOUNT_PATH, dir);
    args.extend(
        [
            "--progress-interval-ms",
            "250",
            "--read-timeout-secs",
            "2",
            "--retry-delay-ms",
            "100",
            "--termination-log",
        ]
        .map(String::from),
    );
    args.push(dir.join("termination-log").display().to_string());
    let output =
        tokio::process::Command::new(paths::our_binary("airunway-model-downloader").unwrap())
            .args(&args)
            .env("KUBECONFIG", &kubeconfig)
            .output()
            .await
            .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

async fn the_job(env: &TestEnv, cache: &str) -> Job {
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), &env.namespace);
    wait_for(
        &jobs,
        &storage::download_job_name(cache),
        WAIT,
        "the download Job",
        |_| true,
    )
    .await
}

#[tokio::test]
async fn two_deployments_share_one_cache_downloaded_once_and_released_by_its_policy() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("mc-shared").await;
    let server = hub::start(model_files()).await;
    // The large file stalls after a third: the reports during the stall show the progress
    // before the retry fetches the rest.
    server
        .hub
        .fault(LARGE, hub::Fault::StallAfter(LARGE_SIZE / 3));
    let endpoint = format!("--model-cache-endpoint={}", server.endpoint);
    let _core = start_core(
        &env,
        &env.control_plane.kubeconfig,
        &[
            &endpoint,
            "--model-cache-size=1Gi",
            "--model-cache-retention=Delete",
            "--model-cache-retention-period=3s",
        ],
        "core-model-cache",
    )
    .await;
    let deployments: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    for name in ["a", "b"] {
        deployments
            .create(&PostParams::default(), &deployment(name))
            .await
            .unwrap();
    }
    let cache_name = ModelCacheKey::of(&deployment("a").spec)
        .unwrap()
        .cache_name();
    let api = caches(&env);
    let cache = wait_for(&api, &cache_name, WAIT, "both users, downloading", |c| {
        let status = c.status.clone().unwrap_or_default();
        status.users == Some(2) && status.phase == Some(CachePhase::Downloading)
    })
    .await;
    assert_eq!(
        cache.metadata.finalizers.clone().unwrap_or_default(),
        [airunway_api::constants::finalizers::MODEL_CACHE_IN_USE]
    );
    // One cache, one claim, one Job for the two deployments.
    let list = ListParams::default();
    assert_eq!(api.list(&list).await.unwrap().items.len(), 1);
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(env.client.clone(), &env.namespace);
    let claim_names: Vec<String> = claims
        .list(&list)
        .await
        .unwrap()
        .items
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(claim_names, vec![cache_name.clone()]);
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), &env.namespace);
    let by_type = ListParams::default().labels(&format!(
        "{}={}",
        labels::JOB_TYPE,
        labels::JOB_TYPE_MODEL_DOWNLOAD
    ));
    assert_eq!(jobs.list(&by_type).await.unwrap().items.len(), 1);
    for name in ["a", "b"] {
        let (_, storage_ready) = wait_for_condition(
            &deployments,
            name,
            WAIT,
            condition_types::STORAGE_READY,
            ConditionStatus::True,
        )
        .await;
        assert_eq!(storage_ready.reason.as_deref(), Some(reasons::PVCS_BOUND));
        let md = deployments.get(name).await.unwrap();
        let downloaded = md
            .condition(condition_types::MODEL_DOWNLOADED)
            .cloned()
            .unwrap();
        assert_eq!(
            downloaded.reason.as_deref(),
            Some(reasons::DOWNLOAD_IN_PROGRESS),
            "{downloaded:?}"
        );
    }

    // The download, as the Job's Pod would run it; the cache and a deployment watched meanwhile.
    let job = the_job(&env, &cache_name).await;
    let watcher = {
        let (api, deployments, cache_name) = (api.clone(), deployments.clone(), cache_name.clone());
        tokio::spawn(async move {
            let mut reports: Vec<Value> = Vec::new();
            let mut messages: Vec<String> = Vec::new();
            for _ in 0..600 {
                if let Ok(cache) = api.get_status(&cache_name).await
                    && let Some(download) = cache.status.and_then(|s| s.download)
                {
                    let download = serde_json::to_value(download).unwrap();
                    if reports.last() != Some(&download) {
                        let done = download["phase"] == "Ready";
                        reports.push(download);
                        if done {
                            break;
                        }
                    }
                }
                if let Ok(md) = deployments.get_status("a").await
                    && let Some(c) = md.condition(condition_types::MODEL_DOWNLOADED)
                    && let Some(message) = &c.message
                    && messages.last() != Some(message)
                {
                    messages.push(message.clone());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            (reports, messages)
        })
    };
    let dir = tempfile_dir(&env);
    let (code, stderr) = run_job(&env, &job, &dir).await;
    assert_eq!(code, 0, "{stderr}");
    let (reports, messages) = watcher.await.unwrap();
    let downloading: Vec<u64> = reports
        .iter()
        .filter(|d| d["phase"] == "Downloading")
        .filter_map(|d| d["bytesDone"].as_u64())
        .collect();
    assert!(
        downloading.windows(2).all(|w| w[0] <= w[1])
            && downloading.first() < downloading.last()
            && downloading.first().is_some_and(|b| *b < LARGE_SIZE),
        "progress rises: {reports:?}"
    );
    assert_eq!(reports.last().unwrap()["percentage"], 100, "{reports:?}");
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("Model download in progress: ") && m.contains("% (")),
        "the deployment shows the progress: {messages:?}"
    );
    // The Hugging Face hub cache layout under HF_HOME, each file once.
    let snapshot = dir
        .join("hub/models--org--model/snapshots")
        .join(hub::COMMIT);
    assert_eq!(
        std::fs::metadata(snapshot.join(LARGE)).unwrap().len(),
        LARGE_SIZE
    );
    assert!(snapshot.join("tokenizer/tokenizer.json").is_file());

    // The Pod ends as the kubelet would report it; the real Job controller completes the Job.
    let pod = job_pod(&env, &job.metadata.name.clone().unwrap()).await;
    end_pod(&env, &pod, 0, "").await;
    wait_for(&api, &cache_name, WAIT, "Ready", |c| {
        c.status.as_ref().and_then(|s| s.phase) == Some(CachePhase::Ready)
    })
    .await;
    for name in ["a", "b"] {
        let (_, downloaded) = wait_for_condition(
            &deployments,
            name,
            WAIT,
            condition_types::MODEL_DOWNLOADED,
            ConditionStatus::True,
        )
        .await;
        assert_eq!(
            downloaded.message.as_deref(),
            Some("Model download completed")
        );
    }

    // One deployment goes: the cache stays, in use.
    deployments
        .delete("a", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&deployments, "a", WAIT).await;
    let kept = wait_for(&api, &cache_name, WAIT, "one user left", |c| {
        c.status.as_ref().and_then(|s| s.users) == Some(1)
    })
    .await;
    assert!(kept.metadata.deletion_timestamp.is_none());
    assert_eq!(kept.status.unwrap().unused_since, None);
    // The last goes: deleted after the retention period (3 s).
    deployments
        .delete("b", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&deployments, "b", WAIT).await;
    let unused = wait_for(&api, &cache_name, WAIT, "unused", |c| {
        c.status.as_ref().and_then(|s| s.users) == Some(0)
    })
    .await;
    assert!(unused.status.unwrap().unused_since.is_some());
    wait_deleted(&api, &cache_name, WAIT).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_file_answered_404_fails_the_cache_and_the_deployment_says_why() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("mc-failed").await;
    let mut files = model_files();
    files.missing.push("weights-00002.safetensors".into());
    let server = hub::start(files).await;
    let endpoint = format!("--model-cache-endpoint={}", server.endpoint);
    let _core = start_core(
        &env,
        &env.control_plane.kubeconfig,
        &[&endpoint, "--model-cache-size=1Gi"],
        "core-model-cache-failed",
    )
    .await;
    let deployments: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    deployments
        .create(&PostParams::default(), &deployment("c"))
        .await
        .unwrap();
    let cache_name = ModelCacheKey::of(&deployment("c").spec)
        .unwrap()
        .cache_name();
    let job = the_job(&env, &cache_name).await;
    let dir = tempfile_dir(&env);
    let (code, stderr) = run_job(&env, &job, &dir).await;
    assert_eq!(code, 4, "not found: {stderr}");
    let pod = job_pod(&env, &job.metadata.name.clone().unwrap()).await;
    end_pod(&env, &pod, code, stderr.trim()).await;
    let failed = wait_for(&caches(&env), &cache_name, WAIT, "Failed", |c| {
        c.status.as_ref().and_then(|s| s.phase) == Some(CachePhase::Failed)
    })
    .await;
    let message = failed.status.unwrap().message.unwrap();
    assert!(
        message.starts_with(&format!(
            "model download Job {} failed permanently: ",
            job.metadata.name.clone().unwrap()
        )) && message.contains("weights-00002.safetensors"),
        "{message}"
    );
    let md = wait_for(
        &deployments,
        "c",
        WAIT,
        "ModelDownloaded=False/DownloadFailed",
        |md| {
            md.condition(condition_types::MODEL_DOWNLOADED)
                .is_some_and(|c| {
                    c.status == ConditionStatus::False
                        && c.reason.as_deref() == Some(reasons::DOWNLOAD_FAILED)
                })
        },
    )
    .await;
    let downloaded = md
        .condition(condition_types::MODEL_DOWNLOADED)
        .cloned()
        .unwrap();
    assert_eq!(
        downloaded.message.as_deref(),
        Some(format!("Model download failed: {message}").as_str())
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fresh directory standing in for the claim.
fn tempfile_dir(env: &TestEnv) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("airunway-{}-claim", env.namespace));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn go_style_volumes_get_their_own_claims_and_cache_and_a_missing_claim_is_named() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("mc-go-volumes").await;
    let _core = start_core(
        &env,
        &env.control_plane.kubeconfig,
        &[],
        "core-model-cache-go-volumes",
    )
    .await;
    let deployments: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let md: ModelDeployment = serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "go"},
        "spec": {"model": {"id": MODEL, "storage": {"volumes": [
                {"name": "cache", "purpose": "modelCache", "size": "2Gi"},
                {"name": "compiled", "purpose": "compilationCache", "size": "1Gi",
                    "accessMode": "ReadWriteOnce"},
                {"name": "data", "claimName": "team-data", "mountPath": "/data"}]}},
            "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}},
    }))
    .unwrap();
    let created = deployments
        .create(&PostParams::default(), &md)
        .await
        .unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    let md = wait_for(
        &deployments,
        "go",
        WAIT,
        "StorageReady=False/PVCFailed",
        |md| {
            md.condition(condition_types::STORAGE_READY)
                .is_some_and(|c| c.reason.as_deref() == Some(reasons::PVC_FAILED))
        },
    )
    .await;
    assert_eq!(
        md.condition(condition_types::STORAGE_READY)
            .and_then(|c| c.message.clone())
            .as_deref(),
        Some(
            format!(
                "pre-existing PVC \"team-data\" not found in namespace \"{}\" (referenced by volume \"data\"); ensure the PVC exists before creating the ModelDeployment",
                env.namespace
            )
            .as_str()
        )
    );
    // The managed claims, as the Go AI Runway makes them, owned by the deployment.
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(env.client.clone(), &env.namespace);
    for (name, size, mode) in [
        ("go-cache", "2Gi", "ReadWriteMany"),
        ("go-compiled", "1Gi", "ReadWriteOnce"),
    ] {
        let claim = wait_for(&claims, name, WAIT, "created", |_| true).await;
        let labels = claim.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels[labels::MANAGED_BY], labels::MANAGED_BY_VALUE);
        assert_eq!(labels[labels::MODEL_DEPLOYMENT], "go");
        assert_eq!(claim.metadata.owner_references.unwrap()[0].uid, uid);
        let spec = claim.spec.unwrap();
        assert_eq!(spec.access_modes.unwrap(), [mode]);
        assert_eq!(spec.resources.unwrap().requests.unwrap()["storage"].0, size);
    }
    // The writable model cache volume downloads through a cache of its own, into its claim.
    let own = wait_for(&caches(&env), "go-cache", WAIT, "created", |_| true).await;
    assert_eq!(own.spec.claim_name.as_deref(), Some("go-cache"));
    assert_eq!(own.metadata.owner_references.unwrap()[0].uid, uid);
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), &env.namespace);
    let job = wait_for(&jobs, "go-cache-download", WAIT, "created", |_| true).await;
    assert_eq!(
        job.spec.unwrap().template.spec.unwrap().volumes.unwrap()[0]
            .persistent_volume_claim
            .clone()
            .unwrap()
            .claim_name,
        "go-cache"
    );

    // The pre-existing claim appears, then is bound: StorageReady follows without polling.
    let team: PersistentVolumeClaim = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "team-data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}))
    .unwrap();
    claims.create(&PostParams::default(), &team).await.unwrap();
    wait_for(
        &deployments,
        "go",
        WAIT,
        "StorageReady=False/PVCsPending",
        |md| {
            md.condition(condition_types::STORAGE_READY)
                .is_some_and(|c| c.reason.as_deref() == Some(reasons::PVCS_PENDING))
        },
    )
    .await;
    claims
        .patch_status(
            "team-data",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"status": {"phase": "Bound"}})),
        )
        .await
        .unwrap();
    let (_, ready) = wait_for_condition(
        &deployments,
        "go",
        WAIT,
        condition_types::STORAGE_READY,
        ConditionStatus::True,
    )
    .await;
    assert_eq!(ready.message.as_deref(), Some("All managed PVCs are bound"));

    // The deployment goes: its own cache goes with it (no other user holds it).
    deployments
        .delete("go", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&caches(&env), "go-cache", WAIT).await;
}

#[tokio::test]
async fn deleting_a_cache_in_use_waits_for_its_last_user() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("mc-in-use").await;
    let _core = start_core(
        &env,
        &env.control_plane.kubeconfig,
        &["--model-cache-retention=Retain"],
        "core-model-cache-in-use",
    )
    .await;
    let deployments: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    deployments
        .create(&PostParams::default(), &deployment("x"))
        .await
        .unwrap();
    let cache_name = ModelCacheKey::of(&deployment("x").spec)
        .unwrap()
        .cache_name();
    let api = caches(&env);
    let cache = wait_for(&api, &cache_name, WAIT, "one user, Retain", |c| {
        c.status.as_ref().and_then(|s| s.users) == Some(1)
    })
    .await;
    assert_eq!(
        cache.spec.retention.and_then(|r| r.policy),
        Some(airunway_api::v1alpha1::RetentionPolicy::Retain),
        "the core's flag"
    );
    api.delete(&cache_name, &DeleteParams::default())
        .await
        .unwrap();
    let held = wait_for(&api, &cache_name, WAIT, "held by its user", |c| {
        c.metadata.deletion_timestamp.is_some()
            && c.status.as_ref().and_then(|s| s.message.as_deref())
                == Some("Deletion waits until no deployment uses the cache: x")
    })
    .await;
    assert_eq!(held.status.unwrap().users, Some(1));
    // Its user goes on as before: the weights stay while it uses them.
    let md = deployments.get("x").await.unwrap();
    let downloaded = md
        .condition(condition_types::MODEL_DOWNLOADED)
        .cloned()
        .unwrap();
    assert_eq!(
        (downloaded.reason.as_deref(), downloaded.message.as_deref()),
        (
            Some(reasons::DOWNLOAD_IN_PROGRESS),
            Some("Model download in progress")
        ),
        "as the cache's phase says"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        api.get_opt(&cache_name).await.unwrap().is_some(),
        "held while in use"
    );
    deployments
        .delete("x", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&api, &cache_name, WAIT).await;
}

/// Starts a provider as its shipped ServiceAccount and waits until it is registered and ready.
async fn start_provider(env: &TestEnv, name: &str) -> airunway_e2e::stack::Running {
    let binary = format!("airunway-provider-{name}");
    let identity = airunway_e2e::stack::service_account_identity(
        env,
        &format!("deploy/providers/{name}/rbac.yaml"),
        &binary,
    )
    .await;
    let provider = airunway_e2e::stack::start_provider(
        env,
        &binary,
        &identity,
        &["--heartbeat-interval=1s", "--finalizer-timeout=30s"],
        &format!("{name}-mc"),
    )
    .await;
    let ipcs: Api<airunway_api::v1alpha1::InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, name, WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    provider
}

/// What the deployments of `owner` mount: (claim, mount path, `HF_HOME`) of each Deployment's
/// pod template, from the `vllm` container.
async fn cache_mounts(env: &TestEnv, owner: &str) -> Vec<(String, String, String)> {
    use k8s_openapi::api::apps::v1::Deployment;
    let api: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let listed = api
        .list(&ListParams::default().labels(&format!("{}={owner}", labels::DEPLOYMENT)))
        .await
        .unwrap();
    listed
        .items
        .into_iter()
        .filter_map(|d| d.spec?.template.spec)
        .map(|pod| {
            let volume = pod.volumes.unwrap_or_default().into_iter().find_map(|v| {
                v.persistent_volume_claim
                    .map(|c| (v.name.clone(), c.claim_name))
            });
            let (volume, claim) = volume.unwrap_or_default();
            let container = &pod.containers[0];
            let path = container
                .volume_mounts
                .iter()
                .flatten()
                .find(|m| m.name == volume)
                .map(|m| m.mount_path.clone())
                .unwrap_or_default();
            let home = container
                .env
                .iter()
                .flatten()
                .find(|e| e.name == storage::HF_HOME_ENV)
                .and_then(|e| e.value.clone())
                .unwrap_or_default();
            (claim, path, home)
        })
        .collect()
}

#[tokio::test]
async fn two_providers_wait_for_the_shared_cache_then_mount_it() {
    use k8s_openapi::api::apps::v1::Deployment;
    let _lock = cluster_lock().await;
    let env = TestEnv::new("mc-providers").await;
    airunway_e2e::providers::delete_all(&env.client).await;
    let server = hub::start(model_files()).await;
    let endpoint = format!("--model-cache-endpoint={}", server.endpoint);
    let _core = start_core(
        &env,
        &env.control_plane.kubeconfig,
        &[&endpoint, "--model-cache-size=1Gi"],
        "core-model-cache-providers",
    )
    .await;
    let _llmd = start_provider(&env, "llmd").await;
    let _vllm = start_provider(&env, "vllm").await;
    let deployments: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    // An image on a loopback port nothing listens on: the vLLM provider's resolution fails at
    // once (ImageResolved=False) and the tag is used; no request leaves the machine.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for (name, provider) in [("on-llmd", "llmd"), ("on-vllm", "vllm")] {
        let mut md = deployment(name);
        md.spec.provider = Some(serde_json::from_value(json!({"name": provider})).unwrap());
        md.spec.engine = Some(
            serde_json::from_value(json!({"type": "vllm",
                "image": format!("127.0.0.1:{port}/vllm/vllm-openai:offline")}))
            .unwrap(),
        );
        deployments
            .create(&PostParams::default(), &md)
            .await
            .unwrap();
    }
    let cache_name = ModelCacheKey::of(&deployment("x").spec)
        .unwrap()
        .cache_name();
    // Both providers hold their deployment Pending on the download: nothing is rendered.
    for name in ["on-llmd", "on-vllm"] {
        let held = wait_for(&deployments, name, WAIT, "held by the provider", |md| {
            md.condition(condition_types::RECONCILING)
                .is_some_and(|c| c.reason.as_deref() == Some(reasons::DOWNLOAD_IN_PROGRESS))
        })
        .await;
        let status = held.status.unwrap();
        assert_eq!(status.phase, Some(airunway_api::v1alpha1::Phase::Pending));
        assert!(
            status
                .message
                .as_deref()
                .is_some_and(|m| m.starts_with("Model download in progress")),
            "{:?}",
            status.message
        );
    }
    let all: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    assert!(
        all.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "a workload was created before the cache was Ready"
    );
    // The core counts users on its own (the deployments' events), independently of the
    // providers' holds above: follow it.
    wait_for(&caches(&env), &cache_name, WAIT, "two users", |c| {
        c.status.as_ref().and_then(|s| s.users) == Some(2)
    })
    .await;

    // The download runs (the Job's arguments and identity), the Job completes, the cache is Ready.
    let job = the_job(&env, &cache_name).await;
    let dir = tempfile_dir(&env);
    let (code, stderr) = run_job(&env, &job, &dir).await;
    assert_eq!(code, 0, "{stderr}");
    let pod = job_pod(&env, &job.metadata.name.clone().unwrap()).await;
    end_pod(&env, &pod, 0, "").await;
    wait_for(&caches(&env), &cache_name, WAIT, "Ready", |c| {
        c.status.as_ref().and_then(|s| s.phase) == Some(CachePhase::Ready)
    })
    .await;

    // Then each provider creates its workload, mounting the one claim with HF_HOME at it.
    for name in ["on-llmd", "on-vllm"] {
        let mounts = airunway_e2e::wait::eventually(&format!("{name}'s Deployment"), WAIT, || {
            let env = &env;
            async move {
                let mounts = cache_mounts(env, name).await;
                if mounts.is_empty() {
                    Err("no Deployment yet".to_string())
                } else {
                    Ok(mounts)
                }
            }
        })
        .await;
        for (claim, path, home) in mounts {
            assert_eq!(claim, cache_name, "{name}");
            assert_eq!(path, storage::MODEL_CACHE_MOUNT_PATH, "{name}");
            assert_eq!(home, storage::MODEL_CACHE_MOUNT_PATH, "{name}");
        }
    }
    for name in ["on-llmd", "on-vllm"] {
        deployments
            .delete(name, &DeleteParams::default())
            .await
            .unwrap();
    }
    for name in ["on-llmd", "on-vllm"] {
        wait_deleted(&deployments, name, WAIT).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Hub whose repositories (`org/model` and the adapters `org/sql-lora`, `org/support-lora`)
/// are each a small LoRA adapter: its config, a 2 MiB LFS weights file.
fn adapter_files() -> hub::Hub {
    let mut hub = hub::Hub::new(vec![
        (
            "adapter_config.json",
            hub::Content::Literal(bytes::Bytes::from_static(
                b"{\"r\": 8, \"peft_type\": \"LORA\"}",
            )),
            false,
        ),
        (
            "adapter_model.safetensors",
            hub::Content::Generated {
                size: 2 << 20,
                seed: 11,
            },
            true,
        ),
    ]);
    hub.also_serves = vec!["org/sql-lora".into(), "org/support-lora".into()];
    hub
}

/// `(name, state)` of every entry of `status.adapters`.
fn adapter_states(
    md: &ModelDeployment,
) -> Vec<(String, Option<airunway_api::v1alpha1::AdapterState>)> {
    md.status
        .as_ref()
        .and_then(|s| s.adapters.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|a| (a.name, a.state))
        .collect()
}

/// Runs the download of `cache` as its Job's Pod would (into `dir`, the claim), then ends the
/// Pod as the kubelet would and waits until the cache is `Ready`.
async fn download(env: &TestEnv, cache: &str, dir: &std::path::Path) {
    let job = the_job(env, cache).await;
    let (code, stderr) = run_job(env, &job, dir).await;
    assert_eq!(code, 0, "{cache}: {stderr}");
    let pod = job_pod(env, &job.metadata.name.clone().unwrap()).await;
    end_pod(env, &pod, 0, "").await;
    wait_for(&caches(env), cache, WAIT, "Ready", |c| {
        c.status.as_ref().and_then(|s| s.phase) == Some(CachePhase::Ready)
    })
    .await;
}

/// LoRA adapters fetched through the model cache (docs/model-cache.md, "Adapter caches"), with
/// the real core and the real vLLM provider: a deployment with a shared `modelCache` volume and
/// two Hugging Face adapters gets one `ModelCache` for the model and one per adapter, each
/// adapter's on the model cache's claim (owned by the model cache); `status.adapters` shows both
/// `Downloading` and no Deployment exists until the model and both adapters are `Ready`; the
/// adapters land in the hub cache layout on the claim beside the model; then the Deployment
/// mounts the claim and loads the adapters by repository id (resolved from `HF_HOME`), and the
/// adapters are `Loading` or `Ready`. A second deployment of the same model with one of the
/// adapters reuses its cache (`users: 2`): no new cache, and its workload is created without a
/// download.
#[tokio::test]
async fn adapters_are_fetched_through_the_model_cache_one_shared_cache_each() {
    use airunway_api::v1alpha1::AdapterState;
    use k8s_openapi::api::apps::v1::Deployment;
    let _lock = cluster_lock().await;
    let env = TestEnv::new("mc-adapters").await;
    airunway_e2e::providers::delete_all(&env.client).await;
    let server = hub::start(adapter_files()).await;
    let endpoint = format!("--model-cache-endpoint={}", server.endpoint);
    let _core = start_core(
        &env,
        &env.control_plane.kubeconfig,
        &[&endpoint, "--model-cache-size=1Gi"],
        "core-model-cache-adapters",
    )
    .await;
    let _vllm = start_provider(&env, "vllm").await;
    let deployments: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    // An image on a loopback port nothing listens on: the resolution fails at once and the tag
    // is used; no request leaves the machine.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let with_adapters = |name: &str, adapters: Value| {
        let mut md = deployment(name);
        md.spec.provider = Some(serde_json::from_value(json!({"name": "vllm"})).unwrap());
        md.spec.engine = Some(
            serde_json::from_value(json!({"type": "vllm",
                "image": format!("127.0.0.1:{port}/vllm/vllm-openai:offline")}))
            .unwrap(),
        );
        md.spec.adapters = Some(serde_json::from_value(adapters).unwrap());
        md
    };
    let first = with_adapters(
        "a",
        json!([{"name": "sql", "source": "hf://org/sql-lora", "maxRank": 8},
               {"name": "support", "source": "org/support-lora"}]),
    );
    deployments
        .create(&PostParams::default(), &first)
        .await
        .unwrap();
    let model_cache = storage::download(&first).unwrap().cache_name;
    let adapter_caches: Vec<String> = storage::adapter_downloads(&first)
        .into_iter()
        .map(|d| d.cache_name)
        .collect();
    assert_eq!(adapter_caches.len(), 2);

    // One cache per adapter, on the model cache's claim, owned by the model cache.
    let api = caches(&env);
    let model = wait_for(&api, &model_cache, WAIT, "the model cache", |_| true).await;
    for (cache, id) in adapter_caches
        .iter()
        .zip(["org/sql-lora", "org/support-lora"])
    {
        let adapter = wait_for(&api, cache, WAIT, "the adapter cache, in use", |c| {
            c.status.as_ref().and_then(|s| s.users) == Some(1)
        })
        .await;
        assert_eq!(adapter.spec.model_id.as_deref(), Some(id));
        assert_eq!(
            adapter.spec.claim_name.as_deref(),
            Some(model_cache.as_str())
        );
        assert_eq!(
            adapter
                .metadata
                .labels
                .clone()
                .unwrap_or_default()
                .get(labels::ADAPTER_OF),
            Some(&model_cache)
        );
        let owners = adapter
            .metadata
            .owner_references
            .clone()
            .unwrap_or_default();
        assert_eq!(owners.len(), 1);
        assert_eq!(Some(&owners[0].uid), model.metadata.uid.as_ref());
    }
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        3
    );

    // Held: both adapters Downloading, nothing rendered.
    let held = wait_for(&deployments, "a", WAIT, "adapters Downloading", |md| {
        adapter_states(md)
            == [
                ("sql".to_string(), Some(AdapterState::Downloading)),
                ("support".to_string(), Some(AdapterState::Downloading)),
            ]
    })
    .await;
    assert_eq!(
        held.status.as_ref().and_then(|s| s.phase),
        Some(airunway_api::v1alpha1::Phase::Pending)
    );
    let all: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let none_yet = || async {
        assert!(
            all.list(&ListParams::default())
                .await
                .unwrap()
                .items
                .is_empty(),
            "a workload was created before the model and its adapters were Ready"
        );
    };
    none_yet().await;

    // The model, then one adapter: still held, the other adapter still Downloading.
    let dir = tempfile_dir(&env);
    download(&env, &model_cache, &dir).await;
    download(&env, &adapter_caches[0], &dir).await;
    let md = wait_for(&deployments, "a", WAIT, "one adapter left", |md| {
        md.condition(condition_types::ADAPTERS_DOWNLOADED)
            .and_then(|c| c.message.clone())
            .is_some_and(|m| {
                m.starts_with(airunway_api::lora::ADAPTER_DOWNLOAD_IN_PROGRESS)
                    && m.contains("support: ")
                    && !m.contains("sql: ")
            })
    })
    .await;
    assert_eq!(
        md.condition(condition_types::MODEL_DOWNLOADED)
            .map(|c| c.status),
        Some(ConditionStatus::True)
    );
    wait_for(&deployments, "a", WAIT, "support still Downloading", |md| {
        adapter_states(md).get(1) == Some(&("support".to_string(), Some(AdapterState::Downloading)))
    })
    .await;
    none_yet().await;
    download(&env, &adapter_caches[1], &dir).await;

    // The adapters are on the claim, beside the model, in the hub cache layout.
    for repo in ["org--model", "org--sql-lora", "org--support-lora"] {
        let root = dir.join(format!("hub/models--{repo}"));
        let snapshot = root.join("snapshots").join(hub::COMMIT);
        assert!(snapshot.is_dir(), "{}", snapshot.display());
        assert_eq!(
            std::fs::read_to_string(root.join("refs/main"))
                .unwrap()
                .trim(),
            hub::COMMIT
        );
    }
    assert_eq!(
        std::fs::metadata(
            dir.join("hub/models--org--sql-lora/snapshots")
                .join(hub::COMMIT)
                .join("adapter_model.safetensors")
        )
        .unwrap()
        .len(),
        2 << 20
    );

    // Then the workload: the claim mounted with HF_HOME at it, the adapters by repository id.
    let (_, downloaded) = wait_for_condition(
        &deployments,
        "a",
        WAIT,
        condition_types::ADAPTERS_DOWNLOADED,
        ConditionStatus::True,
    )
    .await;
    assert_eq!(
        downloaded.message.as_deref(),
        Some("Adapters downloaded: sql, support")
    );
    let rendered = wait_for(&all, "a", WAIT, "the Deployment", |_| true).await;
    let container = &rendered.spec.unwrap().template.spec.unwrap().containers[0];
    let args = container.args.clone().unwrap_or_default();
    let modules = args
        .iter()
        .position(|a| a == "--lora-modules")
        .map(|i| args[i + 1..i + 3].to_vec());
    assert_eq!(
        modules,
        Some(vec![
            "sql=org/sql-lora".to_string(),
            "support=org/support-lora".to_string()
        ]),
        "{args:?}"
    );
    for (claim, path, home) in cache_mounts(&env, "a").await {
        assert_eq!(claim, model_cache);
        assert_eq!(path, storage::MODEL_CACHE_MOUNT_PATH);
        assert_eq!(home, storage::MODEL_CACHE_MOUNT_PATH);
    }
    wait_for(&deployments, "a", WAIT, "adapters Loading or Ready", |md| {
        let states = adapter_states(md);
        states.len() == 2
            && states
                .iter()
                .all(|(_, s)| matches!(s, Some(AdapterState::Loading) | Some(AdapterState::Ready)))
    })
    .await;

    // A second deployment of the model with one of the adapters (under another name): the
    // same cache, two users, no download, its workload created.
    let second = with_adapters("b", json!([{"name": "sql-too", "source": "org/sql-lora"}]));
    assert_eq!(
        storage::adapter_downloads(&second)[0].cache_name,
        adapter_caches[0]
    );
    deployments
        .create(&PostParams::default(), &second)
        .await
        .unwrap();
    wait_for(&api, &adapter_caches[0], WAIT, "two users", |c| {
        c.status.as_ref().and_then(|s| s.users) == Some(2)
    })
    .await;
    wait_for(&api, &model_cache, WAIT, "two users", |c| {
        c.status.as_ref().and_then(|s| s.users) == Some(2)
    })
    .await;
    wait_for(&all, "b", WAIT, "b's Deployment", |_| true).await;
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        3,
        "no new cache"
    );
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), &env.namespace);
    let by_type = ListParams::default().labels(&format!(
        "{}={}",
        labels::JOB_TYPE,
        labels::JOB_TYPE_MODEL_DOWNLOAD
    ));
    assert_eq!(
        jobs.list(&by_type).await.unwrap().items.len(),
        3,
        "one download Job per cache"
    );

    for name in ["a", "b"] {
        deployments
            .delete(name, &DeleteParams::default())
            .await
            .unwrap();
    }
    for name in ["a", "b"] {
        wait_deleted(&deployments, name, WAIT).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}
