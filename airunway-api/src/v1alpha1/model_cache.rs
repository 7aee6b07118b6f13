//! `ModelCache`: one model's weights on one PersistentVolumeClaim in a namespace, downloaded once
//! by a Job and shared by every deployment of that model (docs/model-cache.md).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use super::{Condition, ModelSource};

/// A model's weights in a namespace: the claim they live on, the download that fills it, and how
/// long it is kept once no deployment uses it. The core creates one per model (source, id,
/// revision) when a deployment asks for a shared model cache, and one per deployment for a
/// Go-style managed `modelCache` volume (owned by that deployment); users may create their own.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "airunway.ai",
    version = "v1alpha1",
    kind = "ModelCache",
    doc = "A model's weights downloaded once onto a PersistentVolumeClaim in a namespace and shared by the ModelDeployments that serve that model. The core controller owns the claim and the download Job, reports the download's progress in status, and keeps the cache while any deployment uses it.",
    namespaced,
    status = "ModelCacheStatus",
    shortname = "mc",
    category = "airunway",
    printcolumn = r#"{"name":"Model","type":"string","jsonPath":".spec.modelId","description":"Model id"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase","description":"Pending, Downloading, Ready or Failed"}"#,
    printcolumn = r#"{"name":"Progress","type":"string","jsonPath":".status.download.message","description":"Files and bytes downloaded"}"#,
    printcolumn = r#"{"name":"Users","type":"integer","jsonPath":".status.users","description":"Deployments using the cache"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[x_kube(validation = kube::core::Rule::new("self.source != 'huggingface' || (has(self.modelId) && self.modelId != '')").message("modelId is required when source is huggingface").field_path(".modelId"))]
#[x_kube(validation = kube::core::Rule::new("self.source != 'custom' || (has(self.uri) && self.uri != '')").message("uri is required when source is custom").field_path(".uri"))]
#[x_kube(validation = kube::core::Rule::new("has(self.claimName) || has(self.size)").message("size is required unless claimName names an existing PersistentVolumeClaim").field_path(".size"))]
#[x_kube(validation = kube::core::Rule::new("self.source == oldSelf.source && (has(self.modelId) ? has(oldSelf.modelId) && self.modelId == oldSelf.modelId : !has(oldSelf.modelId)) && (has(self.revision) ? has(oldSelf.revision) && self.revision == oldSelf.revision : !has(oldSelf.revision)) && (has(self.uri) ? has(oldSelf.uri) && self.uri == oldSelf.uri : !has(oldSelf.uri))").message("source, modelId, revision and uri are immutable (they name what the cache holds); create another ModelCache"))]
#[x_kube(validation = kube::core::Rule::new("(has(self.claimName) ? has(oldSelf.claimName) && self.claimName == oldSelf.claimName : !has(oldSelf.claimName))").message("claimName is immutable"))]
#[serde(rename_all = "camelCase")]
pub struct ModelCacheSpec {
    /// Where the weights come from: `huggingface` (by `modelId` and `revision`) or `custom` (one
    /// file at `uri`).
    pub source: ModelSource,

    /// Hugging Face model id, e.g. `Qwen/Qwen3-0.6B`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub model_id: Option<String>,

    /// Branch, tag or commit of the model; `main` when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub revision: Option<String>,

    /// The one http(s) file of a `custom` source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub uri: Option<String>,

    /// The sha256 of the file at `uri`, verified after the download.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub sha256: Option<String>,

    /// An existing PersistentVolumeClaim to download into. Omitted: the controller creates a
    /// claim named after the cache, of `size`, owned by the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub claim_name: Option<String>,

    /// Size of the claim the controller creates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::quantity")]
    pub size: Option<String>,

    /// Storage class of the created claim; omitted: the cluster's default; `""`: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub storage_class_name: Option<String>,

    /// Access mode of the created claim; `ReadWriteMany` when omitted (pods of several
    /// deployments on several nodes mount it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_mode: Option<AccessMode>,

    /// A Secret in the namespace whose `HF_TOKEN` key the download Job's Pod gets in its
    /// environment (the controllers never read it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub token_secret_name: Option<String>,

    /// What happens once no deployment uses the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<CacheRetention>,
}

/// A PersistentVolumeClaim access mode.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[schemars(transform = crate::schema::without_description)]
pub enum AccessMode {
    /// One node.
    ReadWriteOnce,
    /// Many nodes, read and write.
    ReadWriteMany,
    /// Many nodes, read only.
    ReadOnlyMany,
    /// One Pod.
    ReadWriteOncePod,
}

impl AccessMode {
    /// The Kubernetes spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            AccessMode::ReadWriteOnce => "ReadWriteOnce",
            AccessMode::ReadWriteMany => "ReadWriteMany",
            AccessMode::ReadOnlyMany => "ReadOnlyMany",
            AccessMode::ReadWriteOncePod => "ReadWriteOncePod",
        }
    }
}

/// How long an unused cache is kept.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CacheRetention {
    /// `Retain` (the default): the controller never deletes the cache; `Delete`: it deletes the
    /// cache (and its claim) once no deployment has used it for `period`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<RetentionPolicy>,
    /// How long a cache is unused before `Delete` applies, e.g. `24h`, `30m` (`0s`: at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 32),
        regex(pattern = r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")
    )]
    pub period: Option<String>,
}

/// What the controller does with an unused cache.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[schemars(transform = crate::schema::without_description)]
pub enum RetentionPolicy {
    /// Keep it until someone deletes it.
    Retain,
    /// Delete it once unused for the retention period.
    Delete,
}

/// What the cache holds and how far its download is.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ModelCacheStatus {
    /// `Pending`, `Downloading`, `Ready` or `Failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<CachePhase>,
    /// Why the cache is in its phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The claim holding the weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_name: Option<String>,
    /// The download Job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_name: Option<String>,
    /// How many deployments use the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<i32>,
    /// Since when no deployment uses the cache (absent while one does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unused_since: Option<Time>,
    /// The download's progress, reported by the download Job's Pod itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub download: Option<DownloadProgress>,
    /// `StorageReady`, `ModelDownloaded`, `Ready`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(merge_strategy = kube::core::ListMerge::Map(vec!["type".into()]))]
    pub conditions: Option<Vec<Condition>>,
    /// The `metadata.generation` the controller last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// A cache's phase.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[schemars(transform = crate::schema::without_description)]
pub enum CachePhase {
    /// Waiting for the claim or for the Job to start.
    Pending,
    /// The Job is downloading.
    Downloading,
    /// Every file is present and verified.
    Ready,
    /// The download failed; the message says why.
    Failed,
}

impl CachePhase {
    /// The spelling in status.
    pub fn as_str(self) -> &'static str {
        match self {
            CachePhase::Pending => "Pending",
            CachePhase::Downloading => "Downloading",
            CachePhase::Ready => "Ready",
            CachePhase::Failed => "Failed",
        }
    }
}

/// The download's progress as `airunway-model-downloader` reports it (`--report-status`).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DownloadProgress {
    /// `Downloading`, `Ready` or `Failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Files complete and verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_done: Option<i64>,
    /// Files to download.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_total: Option<i64>,
    /// Bytes on disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_done: Option<i64>,
    /// Bytes in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_total: Option<i64>,
    /// `bytesDone` of `bytesTotal`, 0 to 100 (100 only when `Ready`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentage: Option<i64>,
    /// Average rate of this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_second: Option<i64>,
    /// Seconds left at that rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta_seconds: Option<i64>,
    /// e.g. `3/5 files, 1.5 GiB of 4.0 GiB`, or the error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub message: Option<String>,
}
