//! What one `ModelCache` needs, decided from what the watch caches hold (pure).
//!
//! The phases: `Pending` (the claim is missing, or the download Job has not started),
//! `Downloading` (the Job is active; the message is the downloader's progress), `Ready` (the Job
//! completed; a Ready cache whose Job was deleted stays Ready and gets no new Job), `Failed` (the
//! claim is lost, or the Job failed for good, with the Go AI Runway's texts). A claim `Pending`
//! counts as ready: with `WaitForFirstConsumer` binding, the Job's Pod is what binds it (the Go
//! AI Runway's rule for the claims it makes).
//!
//! Users are the deployments that name the cache; while one exists the finalizer
//! [`MODEL_CACHE_IN_USE`] holds a deletion. Once none does, `retention` applies: `Delete` deletes
//! the cache `period` after `status.unusedSince` (the plan says when to look again), `Retain`
//! (the default) never.

use std::time::Duration;

use airunway_api::conditions::{self, DesiredCondition};
use airunway_api::constants::finalizers::MODEL_CACHE_IN_USE;
use airunway_api::constants::{condition_types, reasons};
use airunway_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use airunway_api::storage::download_job_name;
use airunway_api::v1alpha1::{
    CachePhase, DownloadProgress, ModelCache, ModelCacheStatus, RetentionPolicy,
};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use serde_json::{Value, json};

use super::format_bytes;

/// The cache's claim as the watch cache holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimState {
    /// No such claim.
    Absent,
    /// `Pending` (counts as ready: the Job's Pod binds a `WaitForFirstConsumer` claim).
    Pending,
    /// `Bound`.
    Bound,
    /// `Lost`: its volume is gone.
    Lost,
}

impl ClaimState {
    /// The state of `claim`.
    pub fn of(claim: Option<&PersistentVolumeClaim>) -> ClaimState {
        let Some(claim) = claim else {
            return ClaimState::Absent;
        };
        match claim.status.as_ref().and_then(|s| s.phase.as_deref()) {
            Some("Bound") => ClaimState::Bound,
            Some("Lost") => ClaimState::Lost,
            _ => ClaimState::Pending,
        }
    }
}

/// The download Job as the watch cache holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobState {
    /// Pods running.
    pub active: i32,
    /// Pods that succeeded.
    pub succeeded: i32,
    /// Pods that failed.
    pub failed: i32,
    /// Its `backoffLimit`.
    pub backoff_limit: i32,
    /// `Complete=True`.
    pub complete: bool,
    /// `Failed=True`, with the condition's message.
    pub failure: Option<String>,
}

impl JobState {
    /// The state of `job`.
    pub fn of(job: &Job) -> JobState {
        let status = job.status.clone().unwrap_or_default();
        let condition = |type_: &str| {
            status
                .conditions
                .iter()
                .flatten()
                .find(|c| c.type_ == type_ && c.status == "True")
        };
        JobState {
            active: status.active.unwrap_or(0),
            succeeded: status.succeeded.unwrap_or(0),
            failed: status.failed.unwrap_or(0),
            backoff_limit: job
                .spec
                .as_ref()
                .and_then(|s| s.backoff_limit)
                .unwrap_or(super::JOB_BACKOFF_LIMIT),
            complete: condition("Complete").is_some(),
            failure: condition("Failed").map(|c| {
                c.message
                    .clone()
                    .or_else(|| c.reason.clone())
                    .unwrap_or_default()
            }),
        }
    }
}

/// What the plan is decided from.
#[derive(Clone, Debug)]
pub struct CacheInputs<'a> {
    /// The cache.
    pub cache: &'a ModelCache,
    /// Its claim.
    pub claim: ClaimState,
    /// Its download Job, if one exists.
    pub job: Option<JobState>,
    /// The deployments that use it (names, sorted).
    pub users: Vec<String>,
    /// The time.
    pub now: Timestamp,
}

/// What to do for one cache.
#[derive(Clone, Debug, PartialEq)]
pub struct CachePlan {
    /// The claim that holds the weights.
    pub claim_name: String,
    /// The controller creates the claim (named after the cache; it is missing).
    pub create_claim: bool,
    /// Create the downloader's identity and the download Job (missing, and the cache is not
    /// Ready).
    pub create_job: bool,
    /// Add the finalizer [`MODEL_CACHE_IN_USE`].
    pub add_finalizer: bool,
    /// Remove it: the cache is being deleted and no deployment uses it.
    pub release_finalizer: bool,
    /// Delete the cache: its retention period ran out.
    pub delete: bool,
    /// The status.
    pub status: DesiredCacheStatus,
    /// When to look again (the retention deadline), if something is due.
    pub requeue_after: Option<Duration>,
}

/// The status fields the controller owns (everything but `download`, the downloader's).
#[derive(Clone, Debug, PartialEq)]
pub struct DesiredCacheStatus {
    /// Phase.
    pub phase: CachePhase,
    /// Why.
    pub message: String,
    /// The claim.
    pub claim_name: String,
    /// The download Job.
    pub job_name: String,
    /// Deployments using it.
    pub users: i32,
    /// Since when none does.
    pub unused_since: Option<Timestamp>,
    /// `StorageReady`, `ModelDownloaded`, `Ready`.
    pub conditions: Vec<DesiredCondition>,
    /// `metadata.generation`.
    pub observed_generation: Option<i64>,
}

/// The claim of `cache`: `spec.claimName`, else one named after the cache.
pub fn claim_name(cache: &ModelCache) -> String {
    cache
        .spec
        .claim_name
        .clone()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| cache.metadata.name.clone().unwrap_or_default())
}

/// The retention of `cache`: its policy (`Retain` when omitted) and period (zero when omitted).
/// A period that does not parse keeps the cache (never delete on a doubt).
pub fn retention(cache: &ModelCache) -> (RetentionPolicy, Duration) {
    let retention = cache.spec.retention.clone().unwrap_or_default();
    let policy = retention.policy.unwrap_or(RetentionPolicy::Retain);
    let period = match retention.period.as_deref() {
        None | Some("") => Some(Duration::ZERO),
        Some(text) => parse_period(text),
    };
    match period {
        Some(period) => (policy, period),
        None => (RetentionPolicy::Retain, Duration::ZERO),
    }
}

/// A Go-style duration (`24h`, `1h30m`, `90s`).
pub fn parse_period(text: &str) -> Option<Duration> {
    let parsed: SignedDuration = text.parse().ok()?;
    Duration::try_from(parsed).ok()
}

/// The download's progress in a line that changes only when the whole percentage or the files
/// done change: `42% (3/5 files, 4.0 GiB)` (total size). `None` before the first report.
pub fn progress_summary(download: &DownloadProgress) -> Option<String> {
    let percentage = download.percentage?;
    let files = match (download.files_done, download.files_total) {
        (Some(done), Some(total)) => format!("{done}/{total} files"),
        (None, Some(total)) => format!("0/{total} files"),
        _ => "0 files".to_string(),
    };
    let bytes = download
        .bytes_total
        .map(|b| format!(", {}", format_bytes(b)))
        .unwrap_or_default();
    Some(format!("{percentage}% ({files}{bytes})"))
}

/// The message of a Job that failed for good (the Go AI Runway's texts): the downloader's own
/// reason when it reported one, else the Job's condition.
fn failure_message(job_name: &str, job: &JobState, download: Option<&DownloadProgress>) -> String {
    let reported = download
        .filter(|d| d.phase.as_deref() == Some("Failed"))
        .and_then(|d| d.message.clone())
        .filter(|m| !m.is_empty());
    match (reported, &job.failure) {
        (Some(reason), _) => format!("model download Job {job_name} failed permanently: {reason}"),
        (None, Some(message)) if !message.is_empty() => {
            format!("model download Job {job_name} failed permanently: {message}")
        }
        _ => format!(
            "model download Job {job_name} failed permanently (failed={}, backoffLimit={})",
            job.failed, job.backoff_limit
        ),
    }
}

/// Decides for one cache.
pub fn plan(inputs: &CacheInputs<'_>) -> CachePlan {
    let cache = inputs.cache;
    let name = cache.metadata.name.clone().unwrap_or_default();
    let status = cache.status.clone().unwrap_or_default();
    let claim = claim_name(cache);
    let job_name = download_job_name(&name);
    let deleting = cache.metadata.deletion_timestamp.is_some();
    let owns_claim = cache.spec.claim_name.as_deref().is_none_or(str::is_empty);
    let was_ready = status.phase == Some(CachePhase::Ready);

    // The claim.
    let storage = match inputs.claim {
        ClaimState::Absent if owns_claim => Err((
            false,
            reasons::PVCS_PENDING,
            format!("Waiting for PersistentVolumeClaim {claim} to be created"),
        )),
        ClaimState::Absent => Err((
            false,
            reasons::PVC_FAILED,
            format!("PersistentVolumeClaim {claim} (spec.claimName) not found"),
        )),
        ClaimState::Lost => Err((
            true,
            reasons::PVC_FAILED,
            format!("PersistentVolumeClaim {claim} is in Lost phase"),
        )),
        ClaimState::Pending => Ok(format!(
            "PersistentVolumeClaim {claim} is pending; the download Job's Pod binds it"
        )),
        ClaimState::Bound => Ok(format!("PersistentVolumeClaim {claim} is bound")),
    };
    let storage_condition = match &storage {
        Ok(message) => DesiredCondition::new(
            condition_types::STORAGE_READY,
            true,
            reasons::PVCS_BOUND,
            message.clone(),
        ),
        Err((_, reason, message)) => DesiredCondition::new(
            condition_types::STORAGE_READY,
            false,
            *reason,
            message.clone(),
        ),
    };

    // The download.
    let mut create_job = false;
    let (phase, reason, message) = match (&storage, &inputs.job) {
        (Err((true, reason, message)), _) => (CachePhase::Failed, *reason, message.clone()),
        (_, None) if was_ready => (
            CachePhase::Ready,
            reasons::DOWNLOAD_COMPLETE,
            "Model downloaded".to_string(),
        ),
        (Err((_, reason, message)), None) => (CachePhase::Pending, *reason, message.clone()),
        (Ok(_), None) => {
            create_job = !deleting;
            (
                CachePhase::Pending,
                reasons::DOWNLOAD_IN_PROGRESS,
                format!("Waiting for the download Job {job_name} to start"),
            )
        }
        (_, Some(job)) if job.complete || (job.succeeded >= 1 && job.active == 0) => (
            CachePhase::Ready,
            reasons::DOWNLOAD_COMPLETE,
            "Model downloaded".to_string(),
        ),
        (_, Some(job))
            if job.failure.is_some() || (job.failed >= job.backoff_limit && job.active == 0) =>
        {
            (
                CachePhase::Failed,
                reasons::DOWNLOAD_FAILED,
                failure_message(&job_name, job, status.download.as_ref()),
            )
        }
        (_, Some(job)) if job.active > 0 => {
            let progress = status
                .download
                .as_ref()
                .and_then(progress_summary)
                .map(|p| format!("Downloading: {p}"))
                .unwrap_or_else(|| "Downloading".to_string());
            (
                CachePhase::Downloading,
                reasons::DOWNLOAD_IN_PROGRESS,
                progress,
            )
        }
        (_, Some(_)) => (
            CachePhase::Pending,
            reasons::DOWNLOAD_IN_PROGRESS,
            format!("Waiting for the download Job {job_name} to start"),
        ),
    };
    let downloaded = DesiredCondition::new(
        condition_types::MODEL_DOWNLOADED,
        phase == CachePhase::Ready,
        reason,
        message.clone(),
    );

    // Users, deletion and retention.
    let users = inputs.users.len() as i32;
    let unused_since = (users == 0).then(|| {
        status
            .unused_since
            .as_ref()
            .map(|t| t.0)
            .unwrap_or(inputs.now)
    });
    let mut message = message;
    if deleting && users > 0 {
        message = format!(
            "Deletion waits until no deployment uses the cache: {}",
            inputs.users.join(", ")
        );
    }
    let ready = DesiredCondition::new(
        condition_types::READY,
        phase == CachePhase::Ready,
        reason,
        message.clone(),
    );
    let finalized = cache
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == MODEL_CACHE_IN_USE);
    let (policy, period) = retention(cache);
    let mut delete = false;
    let mut requeue_after = None;
    if let (false, Some(since), RetentionPolicy::Delete) = (deleting, unused_since, policy) {
        // A deadline past the end of time never comes.
        let deadline = SignedDuration::try_from(period)
            .ok()
            .and_then(|p| since.checked_add(p).ok());
        if let Some(deadline) = deadline {
            let left = inputs.now.duration_until(deadline);
            if left > SignedDuration::ZERO {
                requeue_after = Duration::try_from(left).ok();
            } else {
                delete = true;
            }
        }
    }
    CachePlan {
        create_claim: owns_claim && inputs.claim == ClaimState::Absent && !deleting,
        claim_name: claim.clone(),
        create_job,
        add_finalizer: !deleting && !finalized,
        release_finalizer: deleting && finalized && users == 0,
        delete,
        status: DesiredCacheStatus {
            phase,
            message,
            claim_name: claim,
            job_name,
            users,
            unused_since,
            conditions: vec![storage_condition, downloaded, ready],
            observed_generation: cache.metadata.generation,
        },
        requeue_after,
    }
}

/// Whether `cache` already carries `desired` (nothing to write).
pub fn is_current(cache: &ModelCache, desired: &DesiredCacheStatus) -> bool {
    let status: ModelCacheStatus = cache.status.clone().unwrap_or_default();
    status.phase == Some(desired.phase)
        && status.message.as_deref() == Some(desired.message.as_str())
        && status.claim_name.as_deref() == Some(desired.claim_name.as_str())
        && status.job_name.as_deref() == Some(desired.job_name.as_str())
        && status.users == Some(desired.users)
        && status.unused_since.as_ref().map(|t| t.0) == desired.unused_since
        && status.observed_generation == desired.observed_generation
        && conditions::all_current(
            status.conditions.as_deref(),
            &desired.conditions,
            desired.observed_generation,
        )
}

/// The server-side apply body of the controller's status fields (never `download`).
pub fn status_patch(cache: &ModelCache, desired: &DesiredCacheStatus, now: Timestamp) -> Value {
    let existing = cache.status.as_ref().and_then(|s| s.conditions.as_deref());
    let conditions = conditions::materialize(
        existing,
        &desired.conditions,
        desired.observed_generation,
        &Time(now),
    );
    let mut status = json!({
        "phase": desired.phase.as_str(),
        "message": desired.message,
        "claimName": desired.claim_name,
        "jobName": desired.job_name,
        "users": desired.users,
        "conditions": conditions,
    });
    if let Some(since) = desired.unused_since {
        status["unusedSince"] = json!(Time(since));
    }
    if let Some(generation) = desired.observed_generation {
        status["observedGeneration"] = json!(generation);
    }
    json!({
        "apiVersion": airunway_api::constants::API_VERSION,
        "kind": "ModelCache",
        "metadata": {"name": cache.metadata.name, "namespace": cache.metadata.namespace},
        "status": status,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const NOW: &str = "2026-01-01T12:00:00Z";

    fn now() -> Timestamp {
        NOW.parse().unwrap()
    }

    fn cache(extra: Value) -> ModelCache {
        let mut object = json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelCache",
            "metadata": {"name": "qwen", "namespace": "ns", "generation": 1,
                "finalizers": [MODEL_CACHE_IN_USE]},
            "spec": {"source": "huggingface", "modelId": "Qwen/Qwen3-0.6B", "size": "10Gi"},
        });
        json_patch::merge(&mut object, &extra);
        serde_json::from_value(object).unwrap()
    }

    fn inputs<'a>(
        cache: &'a ModelCache,
        claim: ClaimState,
        job: Option<JobState>,
        users: &[&str],
    ) -> CacheInputs<'a> {
        CacheInputs {
            cache,
            claim,
            job,
            users: users.iter().map(|u| u.to_string()).collect(),
            now: now(),
        }
    }

    fn active() -> JobState {
        JobState {
            active: 1,
            backoff_limit: 6,
            ..JobState::default()
        }
    }

    #[test]
    fn a_new_cache_creates_its_claim_then_its_job() {
        let fresh = cache(json!({"metadata": {"finalizers": null}}));
        let p = plan(&inputs(&fresh, ClaimState::Absent, None, &["a"]));
        assert!(p.create_claim && p.add_finalizer && !p.create_job);
        assert_eq!(p.claim_name, "qwen");
        assert_eq!(p.status.phase, CachePhase::Pending);
        assert_eq!(p.status.conditions[0].reason, reasons::PVCS_PENDING);
        // A Pending claim counts as ready (WaitForFirstConsumer): the Job is created.
        let p = plan(&inputs(&fresh, ClaimState::Pending, None, &["a"]));
        assert!(!p.create_claim && p.create_job);
        assert_eq!(p.status.job_name, "qwen-download");
        assert_eq!(
            p.status.message,
            "Waiting for the download Job qwen-download to start"
        );
        assert_eq!(p.status.conditions[0].reason, reasons::PVCS_BOUND);
    }

    #[test]
    fn a_named_claim_must_exist_and_is_never_created() {
        let named = cache(json!({"spec": {"claimName": "team-weights", "size": null}}));
        let p = plan(&inputs(&named, ClaimState::Absent, None, &["a"]));
        assert!(!p.create_claim && !p.create_job);
        assert_eq!(p.claim_name, "team-weights");
        assert_eq!(p.status.phase, CachePhase::Pending);
        assert_eq!(p.status.conditions[0].reason, reasons::PVC_FAILED);
        let lost = plan(&inputs(&named, ClaimState::Lost, None, &["a"]));
        assert_eq!(lost.status.phase, CachePhase::Failed);
        assert_eq!(
            lost.status.message,
            "PersistentVolumeClaim team-weights is in Lost phase"
        );
    }

    #[test]
    fn every_phase_of_the_job() {
        let mut c = cache(json!({}));
        let waiting = JobState {
            backoff_limit: 6,
            ..JobState::default()
        };
        let p = plan(&inputs(&c, ClaimState::Bound, Some(waiting), &["a"]));
        assert_eq!(p.status.phase, CachePhase::Pending);
        assert!(!p.create_job, "the Job exists");

        let p = plan(&inputs(&c, ClaimState::Bound, Some(active()), &["a"]));
        assert_eq!(
            (p.status.phase, p.status.message.as_str()),
            (CachePhase::Downloading, "Downloading")
        );
        c.status = Some(ModelCacheStatus {
            download: Some(DownloadProgress {
                phase: Some("Downloading".into()),
                files_done: Some(3),
                files_total: Some(5),
                bytes_done: Some(1 << 30),
                bytes_total: Some(4 << 30),
                percentage: Some(25),
                ..Default::default()
            }),
            ..Default::default()
        });
        let p = plan(&inputs(&c, ClaimState::Bound, Some(active()), &["a"]));
        assert_eq!(p.status.message, "Downloading: 25% (3/5 files, 4.0 GiB)");
        assert_eq!(p.status.conditions[1].reason, reasons::DOWNLOAD_IN_PROGRESS);
        assert_eq!(p.status.conditions[2].status.as_str(), "False");

        let done = JobState {
            succeeded: 1,
            complete: true,
            ..active()
        };
        let done = JobState { active: 0, ..done };
        let p = plan(&inputs(&c, ClaimState::Bound, Some(done), &["a"]));
        assert_eq!(p.status.phase, CachePhase::Ready);
        assert!(
            p.status
                .conditions
                .iter()
                .all(|c| c.status.as_str() == "True")
        );

        let failed = JobState {
            active: 0,
            failed: 7,
            failure: Some("Job has reached the specified backoff limit".into()),
            ..active()
        };
        let p = plan(&inputs(&c, ClaimState::Bound, Some(failed.clone()), &["a"]));
        assert_eq!(p.status.phase, CachePhase::Failed);
        assert_eq!(
            p.status.message,
            "model download Job qwen-download failed permanently: Job has reached the specified backoff limit"
        );
        // The downloader's own reason wins over the Job's.
        c.status.as_mut().unwrap().download = Some(DownloadProgress {
            phase: Some("Failed".into()),
            message: Some("HTTP 404 for config.json".into()),
            ..Default::default()
        });
        let p = plan(&inputs(&c, ClaimState::Bound, Some(failed), &["a"]));
        assert_eq!(
            p.status.message,
            "model download Job qwen-download failed permanently: HTTP 404 for config.json"
        );
        assert_eq!(p.status.conditions[1].reason, reasons::DOWNLOAD_FAILED);
        // Without a condition: the counts.
        let counted = JobState {
            active: 0,
            failed: 7,
            ..active()
        };
        c.status.as_mut().unwrap().download = None;
        let p = plan(&inputs(&c, ClaimState::Bound, Some(counted), &["a"]));
        assert_eq!(
            p.status.message,
            "model download Job qwen-download failed permanently (failed=7, backoffLimit=6)"
        );
    }

    #[test]
    fn a_ready_cache_does_not_download_again() {
        let ready = cache(json!({"status": {"phase": "Ready"}}));
        let p = plan(&inputs(&ready, ClaimState::Bound, None, &["a"]));
        assert_eq!(p.status.phase, CachePhase::Ready);
        assert!(!p.create_job);
    }

    #[test]
    fn users_hold_a_deletion_until_the_last_goes() {
        let deleting = cache(json!({"metadata": {"deletionTimestamp": NOW}}));
        let p = plan(&inputs(&deleting, ClaimState::Bound, None, &["a", "b"]));
        assert!(!p.release_finalizer && !p.create_job && !p.delete);
        assert_eq!(
            p.status.message,
            "Deletion waits until no deployment uses the cache: a, b"
        );
        assert_eq!(p.status.users, 2);
        assert_eq!(p.status.unused_since, None);
        let p = plan(&inputs(&deleting, ClaimState::Bound, None, &[]));
        assert!(p.release_finalizer);
    }

    #[test]
    fn retention_deletes_an_unused_cache_after_its_period_only_when_asked() {
        let retained = cache(json!({}));
        let p = plan(&inputs(&retained, ClaimState::Bound, None, &[]));
        assert_eq!(p.status.unused_since, Some(now()), "unused from now");
        assert!(!p.delete && p.requeue_after.is_none(), "Retain by default");

        let delete = |since: &str| {
            cache(
                json!({"spec": {"retention": {"policy": "Delete", "period": "1h30m"}},
                "status": {"unusedSince": since}}),
            )
        };
        let recent = delete("2026-01-01T11:00:00Z");
        let p = plan(&inputs(&recent, ClaimState::Bound, None, &[]));
        assert!(!p.delete);
        assert_eq!(p.requeue_after, Some(Duration::from_secs(30 * 60)));
        assert_eq!(
            p.status.unused_since,
            Some("2026-01-01T11:00:00Z".parse().unwrap())
        );
        let old = delete("2026-01-01T10:30:00Z");
        assert!(plan(&inputs(&old, ClaimState::Bound, None, &[])).delete);
        // In use: no deadline, and unusedSince is cleared.
        let p = plan(&inputs(&old, ClaimState::Bound, None, &["a"]));
        assert!(!p.delete && p.requeue_after.is_none());
        assert_eq!(p.status.unused_since, None);
        // A period of zero: at once.
        let at_once = cache(json!({"spec": {"retention": {"policy": "Delete", "period": "0s"}}}));
        assert!(plan(&inputs(&at_once, ClaimState::Bound, None, &[])).delete);
    }

    #[test]
    fn periods_read_like_go_durations() {
        assert_eq!(parse_period("24h"), Some(Duration::from_secs(86400)));
        assert_eq!(parse_period("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_period("90s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_period("soon"), None);
    }

    #[test]
    fn the_same_status_is_not_written_again() {
        let mut c = cache(json!({}));
        let p = plan(&inputs(&c, ClaimState::Bound, Some(active()), &["a"]));
        assert!(!is_current(&c, &p.status));
        let body = status_patch(&c, &p.status, now());
        assert!(
            body["status"].get("download").is_none(),
            "never the downloader's"
        );
        c.status = Some(serde_json::from_value(body["status"].clone()).unwrap());
        assert!(is_current(
            &c,
            &plan(&inputs(&c, ClaimState::Bound, Some(active()), &["a"])).status
        ));
        // A progress report that moves neither the percentage nor the files changes nothing.
        c.status.as_mut().unwrap().download = Some(DownloadProgress {
            percentage: Some(10),
            files_done: Some(0),
            files_total: Some(2),
            bytes_done: Some(100),
            bytes_total: Some(1000),
            ..Default::default()
        });
        let first = plan(&inputs(&c, ClaimState::Bound, Some(active()), &["a"])).status;
        c.status
            .as_mut()
            .unwrap()
            .download
            .as_mut()
            .unwrap()
            .bytes_done = Some(101);
        assert_eq!(
            first,
            plan(&inputs(&c, ClaimState::Bound, Some(active()), &["a"])).status
        );
    }
}
