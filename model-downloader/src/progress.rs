//! Progress: counters shared by the file tasks, the status shape reported, and the sinks it is
//! reported to (JSON lines on stdout; a merge patch of a Kubernetes object's `status.download`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde::Serialize;

use crate::error::Error;

/// The phase of a download, as written to `status.download.phase`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Phase {
    /// Files are being listed or fetched.
    Downloading,
    /// Every file is present and verified.
    Ready,
    /// The download stopped with an error (the message says which).
    Failed,
}

/// One progress report: the value of `status.download` and of each stdout JSON line.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DownloadStatus {
    /// Where the download is.
    pub phase: Phase,
    /// Files complete and verified (including files already present).
    pub files_done: u64,
    /// Files to have in the end.
    pub files_total: u64,
    /// Bytes on disk of the files to have (complete, resumed and in progress).
    pub bytes_done: u64,
    /// Bytes of all files to have (as far as known).
    pub bytes_total: u64,
    /// `bytes_done` of `bytes_total`, 0 to 100 (100 only when Ready).
    pub percentage: u32,
    /// Average transfer rate of this run, in bytes per second.
    pub bytes_per_second: u64,
    /// Seconds left at that rate; absent while the rate is unknown.
    pub eta_seconds: Option<u64>,
    /// A one-line summary, or the reason of a failure.
    pub message: String,
}

/// Counters updated by the file tasks; lock-free.
#[derive(Debug)]
pub struct Progress {
    started: Instant,
    files_done: AtomicU64,
    files_total: AtomicU64,
    bytes_done: AtomicU64,
    bytes_total: AtomicU64,
    /// Bytes received from the network in this run (the rate's numerator).
    bytes_fetched: AtomicU64,
}

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}

impl Progress {
    /// Counters at zero, the clock started now.
    pub fn new() -> Self {
        Self {
            started: Instant::now(),
            files_done: AtomicU64::new(0),
            files_total: AtomicU64::new(0),
            bytes_done: AtomicU64::new(0),
            bytes_total: AtomicU64::new(0),
            bytes_fetched: AtomicU64::new(0),
        }
    }

    /// Adds files to have, with their known total size.
    pub fn add_total(&self, files: u64, bytes: u64) {
        self.files_total.fetch_add(files, Ordering::Relaxed);
        self.bytes_total.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Adds bytes to the total (a size learned from the server's headers).
    pub fn add_total_bytes(&self, bytes: u64) {
        self.bytes_total.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Bytes found on disk (an existing file or the start of a resumed one).
    pub fn add_existing(&self, bytes: u64) {
        self.bytes_done.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Bytes received and written.
    pub fn add_fetched(&self, bytes: u64) {
        self.bytes_done.fetch_add(bytes, Ordering::Relaxed);
        self.bytes_fetched.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Bytes thrown away (a partial file restarted, a corrupted file deleted).
    pub fn discard(&self, bytes: u64) {
        // Never below zero, even if a caller over-counts.
        let _ = self
            .bytes_done
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(bytes))
            });
    }

    /// One more file complete.
    pub fn file_done(&self) {
        self.files_done.fetch_add(1, Ordering::Relaxed);
    }

    /// Bytes received from the network in this run.
    pub fn bytes_fetched(&self) -> u64 {
        self.bytes_fetched.load(Ordering::Relaxed)
    }

    /// The report at this instant.
    pub fn snapshot(&self, phase: Phase, message: Option<String>) -> DownloadStatus {
        let elapsed = self.started.elapsed();
        let files_done = self.files_done.load(Ordering::Relaxed);
        let files_total = self.files_total.load(Ordering::Relaxed);
        let bytes_total = self.bytes_total.load(Ordering::Relaxed);
        let bytes_done = self.bytes_done.load(Ordering::Relaxed);
        let fetched = self.bytes_fetched.load(Ordering::Relaxed);
        compute(
            phase,
            files_done,
            files_total,
            bytes_done,
            bytes_total,
            fetched,
            elapsed,
            message,
        )
    }
}

#[allow(clippy::too_many_arguments)]
fn compute(
    phase: Phase,
    files_done: u64,
    files_total: u64,
    bytes_done: u64,
    bytes_total: u64,
    fetched: u64,
    elapsed: Duration,
    message: Option<String>,
) -> DownloadStatus {
    let percentage = match phase {
        Phase::Ready => 100,
        _ if bytes_total == 0 => 0,
        // Floor, and below 100 until Ready (verification and renames are still to come).
        _ => ((u128::from(bytes_done) * 100 / u128::from(bytes_total)).min(99)) as u32,
    };
    let secs = elapsed.as_secs_f64();
    let bytes_per_second = if secs > 0.0 {
        (fetched as f64 / secs) as u64
    } else {
        0
    };
    let eta_seconds = match phase {
        Phase::Ready => Some(0),
        Phase::Failed => None,
        Phase::Downloading if bytes_per_second > 0 => Some(
            bytes_total
                .saturating_sub(bytes_done)
                .div_ceil(bytes_per_second),
        ),
        Phase::Downloading => None,
    };
    let message = message.unwrap_or_else(|| {
        format!(
            "{files_done}/{files_total} files, {} of {}",
            human_bytes(bytes_done),
            human_bytes(bytes_total)
        )
    });
    DownloadStatus {
        phase,
        files_done,
        files_total,
        bytes_done,
        bytes_total,
        percentage,
        bytes_per_second,
        eta_seconds,
        message,
    }
}

/// `bytes` in binary units with one decimal (`1.5 GiB`).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// Where progress reports go.
pub trait ProgressSink: Send + Sync {
    /// Delivers one report. A failure is logged by the caller and does not stop the download.
    fn report<'a>(&'a self, status: &'a DownloadStatus) -> BoxFuture<'a, Result<(), Error>>;
}

/// Writes each report as one JSON line on stdout.
#[derive(Debug, Default)]
pub struct JsonLinesSink;

impl ProgressSink for JsonLinesSink {
    fn report<'a>(&'a self, status: &'a DownloadStatus) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            use std::io::Write as _;
            let line = serde_json::to_string(status).map_err(|e| Error::Protocol {
                what: "progress report".into(),
                reason: e.to_string(),
            })?;
            let mut out = std::io::stdout().lock();
            writeln!(out, "{line}")
                .and_then(|()| out.flush())
                .map_err(|e| Error::io("write progress to", "stdout", e))
        })
    }
}

/// The object whose `status.download` receives the reports:
/// `<group>/<version>/<plural>/<namespace>/<name>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusTarget {
    /// API group (empty for the core group).
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource plural.
    pub plural: String,
    /// Namespace of the object.
    pub namespace: String,
    /// Name of the object.
    pub name: String,
}

impl std::str::FromStr for StatusTarget {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let parts: Vec<&str> = s.split('/').collect();
        let bad = || {
            Error::Config(format!(
                "--report-status {s:?} is not <group>/<version>/<plural>/<namespace>/<name>"
            ))
        };
        let [group, version, plural, namespace, name] = parts.as_slice() else {
            return Err(bad());
        };
        let dns = |v: &str| {
            !v.is_empty()
                && v.len() <= 253
                && v.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        };
        if !(group.is_empty() || dns(group))
            || !dns(version)
            || !dns(plural)
            || !dns(namespace)
            || !dns(name)
        {
            return Err(bad());
        }
        Ok(Self {
            group: (*group).into(),
            version: (*version).into(),
            plural: (*plural).into(),
            namespace: (*namespace).into(),
            name: (*name).into(),
        })
    }
}

impl std::fmt::Display for StatusTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{}/{}/{}/{}",
            self.group, self.version, self.plural, self.namespace, self.name
        )
    }
}

/// Patches `status.download` of one object through its `status` subresource (JSON merge patch),
/// with the in-cluster (or kubeconfig) client: the Pod needs only `patch` on that object's
/// status.
pub struct KubeStatusSink {
    api: kube::Api<kube::api::DynamicObject>,
    target: StatusTarget,
}

impl KubeStatusSink {
    /// A sink for `target`, with the client inferred from the environment.
    pub async fn new(target: StatusTarget) -> Result<Self, Error> {
        let client = kube::Client::try_default()
            .await
            .map_err(|e| Error::Status {
                target: target.to_string(),
                source: Box::new(e),
            })?;
        let api_version = if target.group.is_empty() {
            target.version.clone()
        } else {
            format!("{}/{}", target.group, target.version)
        };
        let resource = kube::api::ApiResource {
            group: target.group.clone(),
            version: target.version.clone(),
            api_version,
            // The kind is not part of the URL; the plural is.
            kind: String::new(),
            plural: target.plural.clone(),
        };
        let api = kube::Api::namespaced_with(client, &target.namespace, &resource);
        Ok(Self { api, target })
    }
}

/// The merge patch that sets `status.download` to `status`.
pub fn status_patch(status: &DownloadStatus) -> serde_json::Value {
    serde_json::json!({ "status": { "download": status } })
}

impl ProgressSink for KubeStatusSink {
    fn report<'a>(&'a self, status: &'a DownloadStatus) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let patch = kube::api::Patch::Merge(status_patch(status));
            self.api
                .patch_status(
                    &self.target.name,
                    &kube::api::PatchParams::default(),
                    &patch,
                )
                .await
                .map(|_| ())
                .map_err(|e| Error::Status {
                    target: self.target.to_string(),
                    source: Box::new(e),
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures() {
        let s = compute(
            Phase::Downloading,
            1,
            4,
            250,
            1000,
            200,
            Duration::from_secs(2),
            None,
        );
        assert_eq!(s.percentage, 25);
        assert_eq!(s.bytes_per_second, 100);
        assert_eq!(s.eta_seconds, Some(8));
        assert_eq!(s.message, "1/4 files, 250 B of 1000 B");
        let almost = compute(
            Phase::Downloading,
            3,
            4,
            999,
            1000,
            999,
            Duration::from_secs(1),
            None,
        );
        assert_eq!(almost.percentage, 99);
        let ready = compute(
            Phase::Ready,
            4,
            4,
            1000,
            1000,
            0,
            Duration::from_secs(1),
            None,
        );
        assert_eq!((ready.percentage, ready.eta_seconds), (100, Some(0)));
        let empty = compute(Phase::Downloading, 0, 0, 0, 0, 0, Duration::ZERO, None);
        assert_eq!(
            (empty.percentage, empty.bytes_per_second, empty.eta_seconds),
            (0, 0, None)
        );
    }

    #[test]
    fn report_shape() {
        let s = compute(
            Phase::Failed,
            0,
            2,
            0,
            10,
            0,
            Duration::from_secs(1),
            Some("file x not found (HTTP 404)".into()),
        );
        let v = status_patch(&s);
        assert_eq!(
            v,
            serde_json::json!({"status": {"download": {
                "phase": "Failed", "filesDone": 0, "filesTotal": 2, "bytesDone": 0, "bytesTotal": 10,
                "percentage": 0, "bytesPerSecond": 0, "etaSeconds": null,
                "message": "file x not found (HTTP 404)"
            }}})
        );
    }

    #[test]
    fn human() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 * 1024 * 1024 * 1024), "3.0 GiB");
    }

    #[test]
    fn targets() {
        let t: StatusTarget = "airunway.ai/v1alpha1/modelcaches/ns-1/llama"
            .parse()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.plural, "modelcaches");
        assert_eq!(t.to_string(), "airunway.ai/v1alpha1/modelcaches/ns-1/llama");
        for bad in ["a/b/c", "a/v1/p/ns/Name", "a/v1/p/ns/n/x", "a/v1//ns/n"] {
            assert!(bad.parse::<StatusTarget>().is_err(), "{bad}");
        }
    }
}
