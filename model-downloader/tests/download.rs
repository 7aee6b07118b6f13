//! The downloader against a real local HTTP server serving the Hub's file API from generated
//! files. The large file is 64 MiB by default; `AIRUNWAY_DOWNLOADER_LARGE=1` makes it
//! 1 GiB + 1 MiB (`AIRUNWAY_DOWNLOADER_LARGE=1 cargo test -p airunway-model-downloader --test download`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airunway_model_downloader::fetch::{RetryPolicy, Timeouts, Token};
use airunway_model_downloader::hub::FileFilter;
use airunway_model_downloader::progress::{DownloadStatus, Phase, ProgressSink};
use airunway_model_downloader::{Config, Error, Source, run};
use bytes::Bytes;
use common::{Content, Fault, Hub, Server, sha256_file};
use futures::future::BoxFuture;

const LARGE: &str = "weights/large/model-00001.safetensors";

fn large_size() -> u64 {
    if std::env::var_os("AIRUNWAY_DOWNLOADER_LARGE").is_some() {
        (1 << 30) + (1 << 20)
    } else {
        64 << 20
    }
}

fn model_files() -> Vec<(&'static str, Content, bool)> {
    vec![
        (
            "config.json",
            Content::Literal(Bytes::from_static(br#"{"architectures":["Tiny"]}"#)),
            false,
        ),
        (
            "tokenizer/vocab.txt",
            Content::Literal(Bytes::from(vec![b'a'; 5000])),
            false,
        ),
        (
            "weights/small.safetensors",
            Content::Generated {
                size: 3 * common::BLOCK + 17,
                seed: 1,
            },
            true,
        ),
        (
            "weights/nested/deep/extra.bin",
            Content::Generated {
                size: 100_000,
                seed: 2,
            },
            true,
        ),
        (
            LARGE,
            Content::Generated {
                size: large_size(),
                seed: 3,
            },
            true,
        ),
    ]
}

#[derive(Default, Clone)]
struct Recorder(Arc<Mutex<Vec<DownloadStatus>>>);

impl Recorder {
    fn all(&self) -> Vec<DownloadStatus> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

impl ProgressSink for Recorder {
    fn report<'a>(&'a self, status: &'a DownloadStatus) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            if let Ok(mut v) = self.0.lock() {
                v.push(status.clone());
            }
            Ok(())
        })
    }
}

fn config(server: &Server, dir: &Path, token: Option<&str>) -> Config {
    Config {
        source: Source::Hub {
            endpoint: reqwest::Url::parse(&server.endpoint).unwrap_or_else(|e| panic!("{e}")),
            model: "org/model".into(),
            revision: "main".into(),
            filter: FileFilter::default(),
        },
        target_dir: dir.to_path_buf(),
        layout: airunway_model_downloader::Layout::Flat,
        parallel: 4,
        token: token.and_then(|t| Token::new(t.to_owned())),
        retry: RetryPolicy {
            attempts: 4,
            base_delay: Duration::from_millis(20),
            max_delay: Duration::from_millis(200),
        },
        timeouts: Timeouts {
            connect: Duration::from_secs(5),
            read: Duration::from_secs(10),
        },
        progress_interval: Duration::from_millis(100),
    }
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"))
}

fn assert_all_verified(server: &Server, dir: &Path) {
    for (path, file) in &server.hub.files {
        let local = dir.join(path);
        assert!(local.is_file(), "{path} missing");
        assert_eq!(
            sha256_file(&local),
            file.sha256,
            "{path} has the wrong content"
        );
    }
    let parts: Vec<_> = walk(dir)
        .into_iter()
        .filter(|p| p.ends_with(".part"))
        .collect();
    assert!(parts.is_empty(), "partial files left: {parts:?}");
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path.display().to_string());
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_download_verifies_every_file_and_a_second_run_fetches_nothing() {
    let server = common::start(Hub::new(model_files())).await;
    let dir = tempdir();
    let recorder = Recorder::default();
    let summary = run(
        config(&server, dir.path(), None),
        vec![Box::new(recorder.clone())],
    )
    .await
    .unwrap_or_else(|e| panic!("download failed: {e}"));
    assert_all_verified(&server, dir.path());
    let total: u64 = server.hub.files.values().map(|f| f.content.size()).sum();
    assert_eq!(
        (
            summary.files,
            summary.files_present,
            summary.bytes_total,
            summary.bytes_fetched
        ),
        (5, 0, total, total)
    );

    let reports = recorder.all();
    let last = reports.last().unwrap_or_else(|| panic!("no report"));
    assert_eq!(
        (
            last.phase,
            last.files_done,
            last.files_total,
            last.percentage
        ),
        (Phase::Ready, 5, 5, 100)
    );
    assert_eq!((last.bytes_done, last.bytes_total), (total, total));
    assert!(last.bytes_per_second > 0);
    assert!(
        reports.iter().any(|r| r.phase == Phase::Downloading),
        "no Downloading report"
    );
    assert!(
        reports
            .windows(2)
            .all(|w| w[0].bytes_done <= w[1].bytes_done),
        "bytes done went down: {:?}",
        reports.iter().map(|r| r.bytes_done).collect::<Vec<_>>()
    );
    // The LFS files came through the redirect; every file was asked for once, from byte 0.
    assert_eq!(server.hub.all_requests().len(), 5);
    assert!(
        server
            .hub
            .all_requests()
            .iter()
            .all(|r| r.start == 0 && !r.partial)
    );

    let again = run(config(&server, dir.path(), None), Vec::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((again.files_present, again.bytes_fetched), (5, 0));
    assert_eq!(
        server.hub.all_requests().len(),
        5,
        "the second run fetched again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_cache_layout_is_what_huggingface_hub_reads() {
    let server = common::start(Hub::new(model_files())).await;
    let home = tempdir();
    let mut hub_cache = config(&server, home.path(), None);
    hub_cache.layout = airunway_model_downloader::Layout::HubCache;
    run(hub_cache.clone(), Vec::new())
        .await
        .unwrap_or_else(|e| panic!("download failed: {e}"));
    // `huggingface_hub` looks for `hub/models--<ns>--<name>/refs/<revision>` (the commit) and
    // then `snapshots/<commit>/<file>`.
    let repo = home.path().join("hub/models--org--model");
    let commit = std::fs::read_to_string(repo.join("refs/main")).unwrap();
    assert_eq!(commit, common::COMMIT);
    assert_all_verified(&server, &repo.join("snapshots").join(&commit));
    let written: Vec<String> = walk(home.path());
    assert!(
        written
            .iter()
            .all(|p| p.contains("hub/models--org--model/")),
        "a file outside the repository's cache: {written:?}"
    );
    // A second run finds everything in place.
    let again = run(hub_cache, Vec::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((again.files_present, again.bytes_fetched), (5, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_half_way_and_restarted_fetches_only_the_remainder() {
    let size = large_size();
    let hub = Hub::new(model_files());
    hub.fault(LARGE, Fault::StallAfter(size / 2));
    let server = common::start(hub).await;
    let dir = tempdir();
    let binary = env!("CARGO_BIN_EXE_airunway-model-downloader");
    let args = |dir: &Path| {
        let mut c = tokio::process::Command::new(binary);
        c.args([
            "--endpoint",
            &server.endpoint,
            "--model-id",
            "org/model",
            "--target-dir",
        ])
        .arg(dir)
        .args([
            "--progress-interval-ms",
            "200",
            "--termination-log",
            "/nonexistent/termination-log",
        ])
        .env_remove("HF_TOKEN")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
        c
    };
    let mut first = args(dir.path())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    let part = dir.path().join(format!("{LARGE}.part"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    // Wait until the server has sent the first half and the other files are complete.
    loop {
        let others_done = server
            .hub
            .files
            .keys()
            .filter(|p| p.as_str() != LARGE)
            .all(|p| dir.path().join(p).is_file());
        if server.hub.sent(LARGE) >= size / 2 && others_done {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the first run did not reach half-way"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    first.kill().await.unwrap_or_else(|e| panic!("kill: {e}"));
    let on_disk = std::fs::metadata(&part)
        .unwrap_or_else(|e| panic!("no partial file: {e}"))
        .len();
    assert!(
        on_disk > 0 && on_disk <= size / 2,
        "partial file of {on_disk} bytes"
    );
    assert!(!dir.path().join(LARGE).exists());
    let sent_before = server.hub.sent(LARGE);

    let second = args(dir.path())
        .output()
        .await
        .unwrap_or_else(|e| panic!("run: {e}"));
    assert!(
        second.status.success(),
        "restart failed: {}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert_all_verified(&server, dir.path());
    let requests = server.hub.requests(LARGE);
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!((requests[1].start, requests[1].partial), (on_disk, true));
    assert_eq!(
        server.hub.sent(LARGE) - sent_before,
        size - on_disk,
        "the restart fetched more than the remainder"
    );
    for other in server.hub.files.keys().filter(|p| p.as_str() != LARGE) {
        assert_eq!(server.hub.requests(other).len(), 1, "{other} fetched again");
    }
    // The last progress line on stdout says Ready with every byte.
    let stdout = String::from_utf8_lossy(&second.stdout);
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("last stdout line is not JSON: {e}: {stdout}"));
    assert_eq!(last["phase"], "Ready");
    assert_eq!(last["filesDone"], 5);
    assert_eq!(last["percentage"], 100);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_connection_is_resumed_in_the_same_run() {
    let hub = Hub::new(model_files());
    hub.fault(
        "weights/small.safetensors",
        Fault::ResetAfter(common::BLOCK + 5),
    );
    let server = common::start(hub).await;
    let dir = tempdir();
    run(config(&server, dir.path(), None), Vec::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_all_verified(&server, dir.path());
    let requests = server.hub.requests("weights/small.safetensors");
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert!(
        requests[1].partial && requests[1].start > 0 && requests[1].start <= common::BLOCK + 5,
        "{requests:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupted_file_is_detected_and_fetched_again() {
    let server = common::start(Hub::new(model_files())).await;
    let dir = tempdir();
    run(config(&server, dir.path(), None), Vec::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // Corrupt one byte of a complete file on disk (same size).
    let victim = dir.path().join("weights/nested/deep/extra.bin");
    let mut bytes = std::fs::read(&victim).unwrap_or_else(|e| panic!("{e}"));
    bytes[1234] ^= 0x01;
    std::fs::write(&victim, &bytes).unwrap_or_else(|e| panic!("{e}"));
    let summary = run(config(&server, dir.path(), None), Vec::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_all_verified(&server, dir.path());
    assert_eq!(summary.files_present, 4);
    assert_eq!(summary.bytes_fetched, 100_000);
    assert_eq!(
        server.hub.requests("weights/nested/deep/extra.bin").len(),
        2
    );

    // Corrupted in transit once: deleted and fetched again in the same run.
    let hub = Hub::new(model_files());
    hub.fault("weights/small.safetensors", Fault::Corrupt);
    let server = common::start(hub).await;
    let dir = tempdir();
    run(config(&server, dir.path(), None), Vec::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_all_verified(&server, dir.path());
    let requests = server.hub.requests("weights/small.safetensors");
    assert_eq!(requests.len(), 2);
    assert!(!requests[1].partial && requests[1].start == 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupted_twice_fails_naming_the_file_and_both_hashes() {
    let hub = Hub::new(model_files());
    hub.fault("weights/small.safetensors", Fault::Corrupt);
    hub.fault("weights/small.safetensors", Fault::Corrupt);
    let expected = hub.files["weights/small.safetensors"].sha256.clone();
    let server = common::start(hub).await;
    let dir = tempdir();
    let recorder = Recorder::default();
    let err = run(
        config(&server, dir.path(), None),
        vec![Box::new(recorder.clone())],
    )
    .await
    .err();
    match &err {
        Some(Error::HashMismatch {
            file,
            expected: e,
            actual,
        }) => {
            assert_eq!(file, "weights/small.safetensors");
            assert_eq!(e, &expected);
            assert_ne!(actual, &expected);
            assert_eq!(actual.len(), 64);
        }
        other => panic!("expected a hash mismatch, got {other:?}"),
    }
    let Some(err) = err else { return };
    assert_eq!((err.category(), err.exit_code()), ("integrity", 5));
    let last = recorder.all().pop().unwrap_or_else(|| panic!("no report"));
    assert_eq!(last.phase, Phase::Failed);
    assert!(
        last.message.contains("weights/small.safetensors") && last.message.contains(&expected),
        "{}",
        last.message
    );
    assert!(!dir.path().join("weights/small.safetensors").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthorized_without_the_token_and_success_with_it() {
    let mut hub = Hub::new(model_files());
    hub.token = Some("hf_test_token".into());
    let server = common::start(hub).await;
    let dir = tempdir();
    let binary = env!("CARGO_BIN_EXE_airunway-model-downloader");
    let termination = dir.path().join("termination-log");
    std::fs::write(&termination, "").unwrap_or_else(|e| panic!("{e}"));
    let target = dir.path().join("model");
    let command = |token: Option<&str>| {
        let mut c = tokio::process::Command::new(binary);
        c.args([
            "--endpoint",
            &server.endpoint,
            "--model-id",
            "org/model",
            "--target-dir",
        ])
        .arg(&target)
        .arg("--termination-log")
        .arg(&termination)
        .env_remove("HF_TOKEN");
        if let Some(t) = token {
            c.env("HF_TOKEN", t);
        }
        c
    };

    let without = command(None)
        .output()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(without.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&without.stderr);
    let reason = stderr.lines().last().unwrap_or_default();
    assert_eq!(
        reason,
        "access to model org/model refused (HTTP 401); HF_TOKEN is not set: the model may be gated or private (unauthorized)"
    );
    let written = std::fs::read_to_string(&termination).unwrap_or_default();
    assert_eq!(written.trim_end(), reason);

    let wrong = command(Some("hf_wrong"))
        .output()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(wrong.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        stderr.contains("HF_TOKEN was set but is not accepted"),
        "{stderr}"
    );
    assert!(!stderr.contains("hf_wrong"), "the token was logged");

    let with = command(Some("hf_test_token"))
        .output()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        with.status.success(),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
    assert_all_verified(&server, &target);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&with.stdout),
        String::from_utf8_lossy(&with.stderr)
    );
    assert!(!all.contains("hf_test_token"), "the token was logged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_file_fails_naming_it() {
    let mut hub = Hub::new(model_files());
    hub.missing.push("weights/missing.safetensors".into());
    let server = common::start(hub).await;
    let dir = tempdir();
    let err = run(config(&server, dir.path(), None), Vec::new())
        .await
        .err();
    let Some(err) = err else {
        panic!("a missing file was not reported")
    };
    assert_eq!(
        err.to_string(),
        "file weights/missing.safetensors of org/model not found (HTTP 404)"
    );
    assert_eq!(err.exit_code(), 4);

    // An unknown model names the model and revision.
    let mut c = config(&server, dir.path(), None);
    if let Source::Hub { model, .. } = &mut c.source {
        *model = "org/other".into();
    }
    let err = run(c, Vec::new()).await.err().map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("model org/other at revision main not found (HTTP 404)")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_file_list_is_refused_before_anything_is_written() {
    for name in ["../x", "/etc/passwd", "a/../../x", "weights/./x"] {
        let mut hub = Hub::new(model_files());
        hub.hostile.push(name.into());
        let server = common::start(hub).await;
        let dir = tempdir();
        let target = dir.path().join("model");
        let err = run(config(&server, &target, None), Vec::new()).await.err();
        assert!(
            matches!(err, Some(Error::UnsafePath { .. })),
            "{name}: {err:?}"
        );
        assert!(
            walk(dir.path()).is_empty(),
            "{name}: files written: {:?}",
            walk(dir.path())
        );
        assert!(server.hub.all_requests().is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_ignores_ranges_restarts_the_file_cleanly() {
    let hub = Hub::new(model_files());
    hub.ignore_range
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let server = common::start(hub).await;
    let dir = tempdir();
    // A stale partial file with garbage.
    let part = dir.path().join("weights/small.safetensors.part");
    std::fs::create_dir_all(part.parent().unwrap_or(dir.path())).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&part, vec![0xAA; 777_777]).unwrap_or_else(|e| panic!("{e}"));
    let recorder = Recorder::default();
    run(
        config(&server, dir.path(), None),
        vec![Box::new(recorder.clone())],
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_all_verified(&server, dir.path());
    let requests = server.hub.requests("weights/small.safetensors");
    assert_eq!(requests.len(), 1);
    let last = recorder.all().pop().unwrap_or_else(|| panic!("no report"));
    let total: u64 = server.hub.files.values().map(|f| f.content.size()).sum();
    assert_eq!(
        last.bytes_done, total,
        "the discarded partial bytes are still counted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn include_and_exclude_select_files() {
    let server = common::start(Hub::new(model_files())).await;
    let dir = tempdir();
    let mut c = config(&server, dir.path(), None);
    if let Source::Hub { filter, .. } = &mut c.source {
        *filter = FileFilter::new(&["*.json".into(), "weights/*".into()], &["*large*".into()])
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let summary = run(c, Vec::new()).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(summary.files, 3);
    let mut files: Vec<String> = walk(dir.path())
        .into_iter()
        .map(|p| {
            p.trim_start_matches(&format!("{}/", dir.path().display()))
                .to_owned()
        })
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "config.json",
            "weights/nested/deep/extra.bin",
            "weights/small.safetensors"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_uri_downloads_one_file_verified_and_resumes() {
    let server = common::start(Hub::new(model_files())).await;
    let dir = tempdir();
    let sha = server.hub.files["weights/small.safetensors"].sha256.clone();
    let uri = format!(
        "{}/files/weights/small.safetensors?signature=secret",
        server.endpoint
    );
    let mut c = config(&server, dir.path(), None);
    c.source = Source::Uri {
        endpoint: reqwest::Url::parse(&server.endpoint).unwrap(),
        uri: uri.clone(),
        sha256: Some(sha.clone()),
    };
    let summary = run(c.clone(), Vec::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(summary.files, 1);
    assert_eq!(sha256_file(&dir.path().join("small.safetensors")), sha);

    // Present: no bytes again (checked by hash, the size being unknown without a listing).
    let again = run(c.clone(), Vec::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((again.files_present, again.bytes_fetched), (1, 0));

    // A wrong hash fails naming the file; the signature in the query never shows.
    c.source = Source::Uri {
        endpoint: reqwest::Url::parse(&server.endpoint).unwrap(),
        uri,
        sha256: Some("0".repeat(64)),
    };
    let dir = tempdir();
    c.target_dir = dir.path().to_path_buf();
    let err = run(c, Vec::new())
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("small.safetensors") && err.contains(&sha),
        "{err}"
    );
    assert!(!err.contains("secret"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_are_retried_and_fail_after_the_retries() {
    let hub = Hub::new(model_files());
    hub.fault("config.json", Fault::Status(503));
    hub.fault("config.json", Fault::Status(502));
    let server = common::start(hub).await;
    let dir = tempdir();
    run(config(&server, dir.path(), None), Vec::new())
        .await
        .unwrap();
    assert_all_verified(&server, dir.path());
    assert_eq!(server.hub.requests("config.json").len(), 3);

    // Always failing: the attempts (4 here) and then the status, naming the file.
    let hub = Hub::new(model_files());
    for _ in 0..10 {
        hub.fault("config.json", Fault::Status(500));
    }
    let server = common::start(hub).await;
    let dir = tempdir();
    let err = run(config(&server, dir.path(), None), Vec::new())
        .await
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "unexpected HTTP 500 for file config.json of org/model"
    );
    assert_eq!(err.exit_code(), 7);
    assert_eq!(server.hub.requests("config.json").len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_transfer_times_out_and_resumes_with_reports_meanwhile() {
    let hub = Hub::new(model_files());
    hub.fault(
        "weights/small.safetensors",
        Fault::StallAfter(2 * common::BLOCK),
    );
    let server = common::start(hub).await;
    let dir = tempdir();
    let mut c = config(&server, dir.path(), None);
    c.timeouts.read = Duration::from_millis(1500);
    let recorder = Recorder::default();
    run(c, vec![Box::new(recorder.clone())]).await.unwrap();
    assert_all_verified(&server, dir.path());
    let requests = server.hub.requests("weights/small.safetensors");
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(
        (requests[1].start, requests[1].partial),
        (2 * common::BLOCK, true)
    );
    // Reports kept coming while the transfer stalled (every 100 ms here).
    let downloading = recorder
        .all()
        .iter()
        .filter(|r| r.phase == Phase::Downloading)
        .count();
    assert!(downloading >= 10, "{downloading} reports in 1.5 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_goes_to_a_uri_only_on_the_hub_origin() {
    let mut hub = Hub::new(model_files());
    hub.token = Some("hf_test_token".into());
    let server = common::start(hub).await;
    let uri = format!("{}/files/config.json", server.endpoint);
    let dir = tempdir();
    let mut c = config(&server, dir.path(), Some("hf_test_token"));
    // Another origin as the Hub: the token is withheld, so this server refuses.
    c.source = Source::Uri {
        endpoint: reqwest::Url::parse("https://huggingface.co").unwrap(),
        uri: uri.clone(),
        sha256: None,
    };
    let err = run(c.clone(), Vec::new()).await.err().unwrap();
    assert!(
        matches!(
            err,
            Error::Unauthorized {
                token_given: false,
                token_withheld: true,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string().ends_with(
            "HF_TOKEN is set but is sent only to the Hub's origin (--endpoint), not to this URI"
        ),
        "{err}"
    );
    // The same origin: sent.
    c.source = Source::Uri {
        endpoint: reqwest::Url::parse(&server.endpoint).unwrap(),
        uri,
        sha256: None,
    };
    run(c, Vec::new()).await.unwrap();
    assert!(dir.path().join("config.json").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_with_a_failed_report_and_keeps_the_partial_file() {
    let size = large_size();
    let hub = Hub::new(model_files());
    hub.fault(LARGE, Fault::StallAfter(size / 4));
    let server = common::start(hub).await;
    let dir = tempdir();
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_airunway-model-downloader"))
        .args([
            "--endpoint",
            &server.endpoint,
            "--model-id",
            "org/model",
            "--target-dir",
        ])
        .arg(dir.path())
        .args(["--termination-log", "/nonexistent/termination-log"])
        .env_remove("HF_TOKEN")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while server.hub.sent(LARGE) < size / 4 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the download did not reach a quarter"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pid = child.id().unwrap().to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    let output = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("no exit within 20 s of SIGTERM")
        .unwrap();
    assert_eq!(output.status.code(), Some(143));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.lines().last().unwrap_or_default(),
        "interrupted by SIGTERM before the download finished; a restart resumes it (interrupted)"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last: serde_json::Value =
        serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    assert_eq!(last["phase"], "Failed");
    assert!(dir.path().join(format!("{LARGE}.part")).is_file());
}
