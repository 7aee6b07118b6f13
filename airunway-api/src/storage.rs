//! `model.storage.volumes` resolved, one definition for the core and every provider: the
//! purposes, the Go AI Runway's defaults (mount paths, claim names, access mode), and which
//! [`ModelCache`](crate::v1alpha1::ModelCache) a deployment's model cache volume is.
//!
//! A volume's claim comes from one of three places ([`ClaimSource`]):
//! - `claimName` without `size`: a claim the user made ([`ClaimSource::Existing`]);
//! - `size`: a claim AI Runway makes for this deployment alone, `<deployment>-<volume>` (the Go
//!   AI Runway's managed volume, [`ClaimSource::Managed`]);
//! - a `modelCache` volume with neither: the namespace's shared cache of the model
//!   ([`ClaimSource::Shared`]), a `ModelCache` named by [`ModelCacheKey::cache_name`], whose
//!   claim has the same name. (The Go AI Runway refuses such a volume; here it opts in.)
//!
//! A writable `modelCache` volume of a Hugging Face model is downloaded into before the engine
//! starts ([`download`]): through the shared cache, or through a cache of its own, named after
//! its claim and owned by the deployment. Engines find the files through `HF_HOME` set to the
//! volume's mount path ([`HF_HOME_ENV`]), laid out as the Hugging Face hub cache.

use sha2::{Digest, Sha256};

use crate::v1alpha1::{ModelDeployment, ModelDeploymentSpec, ModelSource, StorageVolume};

/// Default mount path of a `modelCache` volume.
pub const MODEL_CACHE_MOUNT_PATH: &str = "/model-cache";
/// Default mount path of a `compilationCache` volume.
pub const COMPILATION_CACHE_MOUNT_PATH: &str = "/compilation-cache";
/// Access mode of a managed claim when `accessMode` is omitted.
pub const DEFAULT_ACCESS_MODE: &str = "ReadWriteMany";
/// The access modes a managed claim may have.
pub const ACCESS_MODES: [&str; 4] = [
    "ReadWriteOnce",
    "ReadWriteMany",
    "ReadOnlyMany",
    "ReadWriteOncePod",
];
/// Most volumes per deployment.
pub const MAX_VOLUMES: usize = 8;
/// Paths a volume may not be mounted at or under.
pub const SYSTEM_PATHS: [&str; 5] = ["/dev", "/proc", "/sys", "/etc", "/var/run"];
/// The environment variable that points engines (vLLM, SGLang, TensorRT-LLM, anything on
/// `huggingface_hub`) at the model cache.
pub const HF_HOME_ENV: &str = "HF_HOME";
/// The revision a deployment's model is downloaded at (deployments name no revision).
pub const DEFAULT_REVISION: &str = "main";
/// The Go AI Runway's suffix of a deployment's download Job, used in its name-length check.
pub const GO_DOWNLOAD_JOB_SUFFIX: &str = "-model-download";
/// Suffix of a cache's download Job.
pub const DOWNLOAD_JOB_SUFFIX: &str = "-download";
/// Longest cache name whose Job name (`<cache>-download`) is still a label value (pods carry the
/// Job's name as a label).
pub const MAX_CACHE_NAME_FOR_JOB: usize = 63 - DOWNLOAD_JOB_SUFFIX.len();

/// What a volume is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VolumePurpose {
    /// Model weights (`modelCache`).
    ModelCache,
    /// Compiled kernels and graphs (`compilationCache`).
    CompilationCache,
    /// Anything else (`custom`, the default).
    Custom,
}

impl VolumePurpose {
    /// The purpose of `volume`: omitted is `custom`; `None` for an unknown value.
    pub fn of(volume: &StorageVolume) -> Option<Self> {
        match volume.purpose.as_deref().unwrap_or("") {
            "" | "custom" => Some(VolumePurpose::Custom),
            "modelCache" => Some(VolumePurpose::ModelCache),
            "compilationCache" => Some(VolumePurpose::CompilationCache),
            _ => None,
        }
    }

    /// The spelling in the spec.
    pub fn as_str(self) -> &'static str {
        match self {
            VolumePurpose::ModelCache => "modelCache",
            VolumePurpose::CompilationCache => "compilationCache",
            VolumePurpose::Custom => "custom",
        }
    }

    /// The mount path when the volume gives none (`None` for `custom`, which must give one).
    pub fn default_mount_path(self) -> Option<&'static str> {
        match self {
            VolumePurpose::ModelCache => Some(MODEL_CACHE_MOUNT_PATH),
            VolumePurpose::CompilationCache => Some(COMPILATION_CACHE_MOUNT_PATH),
            VolumePurpose::Custom => None,
        }
    }
}

/// Where a volume's claim comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClaimSource {
    /// A claim the user made (`claimName` without `size`): it must exist.
    Existing,
    /// A claim made for this deployment alone (`size`), deleted with it.
    Managed,
    /// The namespace's shared cache of the model (a `modelCache` volume with neither).
    Shared,
}

/// One volume as pods mount it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedVolume {
    /// The volume's name (the pod volume's name).
    pub name: String,
    /// The claim mounted.
    pub claim_name: String,
    /// Where it is mounted.
    pub mount_path: String,
    /// What it is for.
    pub purpose: VolumePurpose,
    /// Mounted read-only.
    pub read_only: bool,
    /// Where the claim comes from.
    pub source: ClaimSource,
}

/// The claim of a managed volume: `<deployment>-<volume>` (the Go AI Runway's).
pub fn managed_claim_name(deployment: &str, volume: &str) -> String {
    format!("{deployment}-{volume}")
}

/// The volumes of `md` as pods mount them, in spec order. A volume validation refuses (an
/// unknown purpose, a `custom` volume without a mount path, no claim and not a model cache) is
/// left out.
pub fn resolved_volumes(md: &ModelDeployment) -> Vec<ResolvedVolume> {
    let deployment = md.metadata.name.as_deref().unwrap_or_default();
    declared(&md.spec)
        .iter()
        .filter_map(|volume| resolve(deployment, &md.spec, volume))
        .collect()
}

fn declared(spec: &ModelDeploymentSpec) -> &[StorageVolume] {
    spec.model
        .storage
        .as_ref()
        .and_then(|s| s.volumes.as_deref())
        .unwrap_or_default()
}

fn resolve(
    deployment: &str,
    spec: &ModelDeploymentSpec,
    volume: &StorageVolume,
) -> Option<ResolvedVolume> {
    let purpose = VolumePurpose::of(volume)?;
    let mount_path = volume
        .mount_path
        .as_deref()
        .filter(|p| !p.is_empty())
        .or(purpose.default_mount_path())?
        .to_string();
    let claim = volume.claim_name.as_deref().filter(|c| !c.is_empty());
    let (claim_name, source) = if volume.size.is_some() {
        (
            managed_claim_name(deployment, &volume.name),
            ClaimSource::Managed,
        )
    } else if let Some(claim) = claim {
        (claim.to_string(), ClaimSource::Existing)
    } else if purpose == VolumePurpose::ModelCache {
        (ModelCacheKey::of(spec)?.cache_name(), ClaimSource::Shared)
    } else {
        return None;
    };
    Some(ResolvedVolume {
        name: volume.name.clone(),
        claim_name,
        mount_path,
        purpose,
        read_only: volume.read_only == Some(true),
        source,
    })
}

/// The first volume of `purpose`, if any (validation allows one `modelCache` and one
/// `compilationCache`).
pub fn volume_for(md: &ModelDeployment, purpose: VolumePurpose) -> Option<ResolvedVolume> {
    resolved_volumes(md)
        .into_iter()
        .find(|v| v.purpose == purpose)
}

/// The model cache a deployment downloads into before its engine starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Download {
    /// The `ModelCache` that holds the download.
    pub cache_name: String,
    /// Whether the cache is the namespace's shared one (else it is the deployment's own).
    pub shared: bool,
    /// The volume it is mounted as.
    pub volume: ResolvedVolume,
}

/// The download `md` waits for, if any: a Hugging Face model with a `modelCache` volume. A
/// shared volume downloads through the shared cache (also when the deployment mounts it
/// read-only: the cache's Job writes it, not the deployment); a managed or existing claim
/// through a cache of its own named after the claim, only when writable (the Go AI Runway's
/// rule: a read-only claim must already hold the model).
pub fn download(md: &ModelDeployment) -> Option<Download> {
    if md.spec.model_source() != ModelSource::Huggingface {
        return None;
    }
    let volume = volume_for(md, VolumePurpose::ModelCache)?;
    if volume.read_only && volume.source != ClaimSource::Shared {
        return None;
    }
    Some(Download {
        cache_name: volume.claim_name.clone(),
        shared: volume.source == ClaimSource::Shared,
        volume,
    })
}

/// What a shared cache holds: one model at one revision from one source.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ModelCacheKey {
    /// The source.
    pub source: ModelSource,
    /// The model id.
    pub model_id: String,
    /// The revision.
    pub revision: String,
}

impl ModelCacheKey {
    /// The key of a deployment's model: a Hugging Face model with an id, at [`DEFAULT_REVISION`].
    pub fn of(spec: &ModelDeploymentSpec) -> Option<Self> {
        if spec.model_source() != ModelSource::Huggingface {
            return None;
        }
        let model_id = spec.model.id.as_deref().filter(|id| !id.is_empty())?;
        Some(ModelCacheKey {
            source: ModelSource::Huggingface,
            model_id: model_id.to_string(),
            revision: DEFAULT_REVISION.to_string(),
        })
    }

    /// The first 16 hex digits of the sha256 of `<source>\n<id>\n<revision>`: the key as a label
    /// value.
    pub fn hash(&self) -> String {
        let source = match self.source {
            ModelSource::Huggingface => "huggingface",
            ModelSource::Custom => "custom",
        };
        let digest = Sha256::digest(format!("{source}\n{}\n{}", self.model_id, self.revision));
        digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
    }

    /// The shared cache's name (and its claim's): the model id in lower case with every other
    /// character a `-`, cut to 37 characters, then `-` and the first 16 hex digits of
    /// [`hash`](Self::hash); a DNS label of at most [`MAX_CACHE_NAME_FOR_JOB`] characters, so
    /// `Qwen/Qwen3-0.6B` is `qwen-qwen3-0-6b-<16 hex>`.
    pub fn cache_name(&self) -> String {
        cache_name_of(&self.model_id, &self.hash())
    }
}

/// `<id in lower case, every other character a '-', cut to 37>-<hash>` (`model-<hash>` when
/// nothing of the id is left): the one naming rule of the caches the core creates.
fn cache_name_of(id: &str, hash: &str) -> String {
    let mut slug = String::new();
    for c in id.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    let slug: String = slug.chars().take(37).collect();
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        format!("model-{hash}")
    } else {
        format!("{slug}-{hash}")
    }
}

/// What an adapter cache holds: one Hugging Face LoRA adapter at one revision, downloaded into
/// the claim of one shared model cache (docs/model-cache.md, "Adapter caches").
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AdapterCacheKey {
    /// The adapter's Hugging Face repository id (`org/name`).
    pub adapter_id: String,
    /// Its revision (branch, tag or commit).
    pub revision: String,
    /// The claim it is downloaded into: the shared model cache's.
    pub claim_name: String,
}

impl AdapterCacheKey {
    /// The first 16 hex digits of the sha256 of `huggingface\n<id>\n<revision>\n<claim>`: the key
    /// as a label value. The claim is part of it, so the same adapter beside two models (two
    /// claims) is two caches, and no adapter cache shares a name with a model cache.
    pub fn hash(&self) -> String {
        let digest = Sha256::digest(format!(
            "huggingface\n{}\n{}\n{}",
            self.adapter_id, self.revision, self.claim_name
        ));
        digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
    }

    /// The adapter cache's name, by the model cache's rule ([`ModelCacheKey::cache_name`]) on
    /// the adapter's id: `org/sql-lora` is `org-sql-lora-<16 hex>`, a DNS label of at most
    /// [`MAX_CACHE_NAME_FOR_JOB`] characters.
    pub fn cache_name(&self) -> String {
        cache_name_of(&self.adapter_id, &self.hash())
    }
}

/// One adapter of a deployment fetched through the model cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterDownload {
    /// The adapter's name (`spec.adapters[].name`).
    pub name: String,
    /// What the cache holds.
    pub key: AdapterCacheKey,
    /// The adapter cache's name ([`AdapterCacheKey::cache_name`]).
    pub cache_name: String,
    /// The shared model cache whose claim it is downloaded into (the claim has its name).
    pub model_cache: String,
    /// The deployment's `modelCache` volume, as its pods mount it.
    pub volume: ResolvedVolume,
}

/// The adapters of `md` fetched through the model cache, in list order: every Hugging Face
/// adapter (`org/name`, `hf://org/name`) of a deployment whose model downloads through the
/// namespace's shared cache ([`download`] with a shared volume, read-only mounts included: the
/// caches' Jobs write the claim, not the deployment). Empty otherwise: without a shared cache
/// the engine downloads its adapters itself, and `pvc://` adapters are mounted as they are.
pub fn adapter_downloads(md: &ModelDeployment) -> Vec<AdapterDownload> {
    let Some(download) = download(md).filter(|d| d.shared) else {
        return Vec::new();
    };
    md.spec
        .lora_adapters()
        .iter()
        .filter_map(|adapter| match crate::lora::parse_source(&adapter.source) {
            Ok(crate::lora::AdapterSource::HuggingFace(id)) => {
                let key = AdapterCacheKey {
                    adapter_id: id.to_string(),
                    revision: crate::lora::revision(adapter).to_string(),
                    claim_name: download.volume.claim_name.clone(),
                };
                Some(AdapterDownload {
                    name: adapter.name.clone(),
                    cache_name: key.cache_name(),
                    key,
                    model_cache: download.cache_name.clone(),
                    volume: download.volume.clone(),
                })
            }
            _ => None,
        })
        .collect()
}

/// Where the Hugging Face hub cache under `hf_home` keeps `repo_id` at `commit`:
/// `<hf_home>/hub/models--<org>--<name>/snapshots/<commit>` (the downloader's `--hf-home`
/// layout, and `huggingface_hub`'s).
pub fn hub_snapshot_path(hf_home: &str, repo_id: &str, commit: &str) -> String {
    format!(
        "{}/hub/models--{}/snapshots/{commit}",
        hf_home.trim_end_matches('/'),
        repo_id.replace('/', "--")
    )
}

/// Whether `revision` is a full commit id (40 lower-case hex digits), which names its snapshot
/// directory in the hub cache.
pub fn is_commit(revision: &str) -> bool {
    revision.len() == 40
        && revision
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
}

/// A cache's download Job: `<cache>-download` ([`label_value_name`]).
pub fn download_job_name(cache: &str) -> String {
    label_value_name(cache, DOWNLOAD_JOB_SUFFIX)
}

/// `<name><suffix>`, or, when that is longer than a label value (63 characters; a Job's Pods
/// carry its name as a label), the name cut and 8 hex digits of the sha256 of the whole name
/// before the suffix, so it stays unique. The names of a cache's Job and downloader identity.
pub fn label_value_name(name: &str, suffix: &str) -> String {
    if name.len() + suffix.len() <= 63 {
        return format!("{name}{suffix}");
    }
    let digest = Sha256::digest(name.as_bytes());
    let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let keep = 63usize.saturating_sub(suffix.len() + hash.len() + 1);
    let head = name
        .get(..keep.min(name.len()))
        .unwrap_or_default()
        .trim_end_matches(['-', '.']);
    format!("{head}-{hash}{suffix}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::kubernetes_names::is_dns1123_label;

    fn md(name: &str, spec: serde_json::Value) -> ModelDeployment {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": "ns"}, "spec": spec,
        }))
        .unwrap()
    }

    #[test]
    fn claims_come_from_the_three_sources() {
        let md = md(
            "qwen",
            serde_json::json!({"model": {"id": "Qwen/Qwen3-0.6B", "storage": {"volumes": [
                {"name": "weights", "purpose": "modelCache"},
                {"name": "compiled", "purpose": "compilationCache", "size": "10Gi"},
                {"name": "data", "claimName": "team-data", "mountPath": "/data", "readOnly": true},
                {"name": "dropped", "purpose": "custom"},
            ]}}}),
        );
        let volumes = resolved_volumes(&md);
        assert_eq!(volumes.len(), 3);
        let shared = ModelCacheKey::of(&md.spec).unwrap().cache_name();
        assert_eq!(
            volumes[0],
            ResolvedVolume {
                name: "weights".into(),
                claim_name: shared.clone(),
                mount_path: MODEL_CACHE_MOUNT_PATH.into(),
                purpose: VolumePurpose::ModelCache,
                read_only: false,
                source: ClaimSource::Shared,
            }
        );
        assert_eq!(volumes[1].claim_name, "qwen-compiled");
        assert_eq!(volumes[1].mount_path, COMPILATION_CACHE_MOUNT_PATH);
        assert_eq!(volumes[1].source, ClaimSource::Managed);
        assert_eq!(volumes[2].claim_name, "team-data");
        assert!(volumes[2].read_only);
        assert_eq!(volumes[2].source, ClaimSource::Existing);
        let download = download(&md).unwrap();
        assert!(download.shared);
        assert_eq!(download.cache_name, shared);
    }

    #[test]
    fn downloads_only_into_a_writable_model_cache_of_a_hugging_face_model() {
        let managed = md(
            "a",
            serde_json::json!({"model": {"id": "org/m", "storage": {"volumes": [
                {"name": "cache", "purpose": "modelCache", "size": "50Gi"}]}}}),
        );
        let d = download(&managed).unwrap();
        assert!(!d.shared);
        assert_eq!(d.cache_name, "a-cache");
        let read_only = md(
            "b",
            serde_json::json!({"model": {"id": "org/m", "storage": {"volumes": [
                {"name": "cache", "purpose": "modelCache", "claimName": "pre", "readOnly": true}]}}}),
        );
        assert_eq!(download(&read_only), None);
        // A read-only mount of the shared cache still waits for the cache's own download.
        let shared_read_only = md(
            "b",
            serde_json::json!({"model": {"id": "org/m", "storage": {"volumes": [
                {"name": "cache", "purpose": "modelCache", "readOnly": true}]}}}),
        );
        let d = download(&shared_read_only).unwrap();
        assert!(d.shared && d.volume.read_only);
        let custom = md(
            "c",
            serde_json::json!({"model": {"source": "custom", "storage": {"volumes": [
                {"name": "cache", "purpose": "modelCache", "claimName": "pre"}]}}}),
        );
        assert_eq!(download(&custom), None);
    }

    #[test]
    fn one_model_one_cache_name() {
        let key = |id: &str| ModelCacheKey {
            source: ModelSource::Huggingface,
            model_id: id.into(),
            revision: DEFAULT_REVISION.into(),
        };
        let name = key("Qwen/Qwen3-0.6B").cache_name();
        assert!(name.starts_with("qwen-qwen3-0-6b-"), "{name}");
        assert_eq!(name, key("Qwen/Qwen3-0.6B").cache_name());
        assert_ne!(name, key("qwen/qwen3-0.6b").cache_name());
        for id in [
            "Qwen/Qwen3-0.6B",
            "a/".repeat(100).as_str(),
            "___/___",
            "meta-llama/Llama-3.3-70B-Instruct-with-a-very-long-suffix-name",
        ] {
            let name = key(id).cache_name();
            assert!(is_dns1123_label(&name), "{name}");
            assert!(name.len() <= MAX_CACHE_NAME_FOR_JOB, "{name}");
            assert!(is_dns1123_label(&download_job_name(&name)));
        }
    }

    #[test]
    fn one_adapter_one_cache_name_per_claim_and_revision() {
        let key = |id: &str, revision: &str, claim: &str| AdapterCacheKey {
            adapter_id: id.into(),
            revision: revision.into(),
            claim_name: claim.into(),
        };
        let name = key("org/sql-lora", "main", "qwen-c").cache_name();
        assert!(name.starts_with("org-sql-lora-"), "{name}");
        assert_eq!(name.len(), "org-sql-lora-".len() + 16);
        assert_eq!(
            name,
            key("org/sql-lora", "main", "qwen-c").cache_name(),
            "stable"
        );
        assert_ne!(name, key("org/sql-lora", "v2", "qwen-c").cache_name());
        assert_ne!(name, key("org/sql-lora", "main", "llama-c").cache_name());
        // Never a model cache's name, even for the same repository.
        let model = ModelCacheKey {
            source: ModelSource::Huggingface,
            model_id: "org/sql-lora".into(),
            revision: "main".into(),
        };
        assert_ne!(name, model.cache_name());
        for id in [
            "org/sql-lora",
            "a/".repeat(100).as_str(),
            "___/___",
            "Some-Org/A.Very.Long.Adapter-Name-With-Many-Parts_v2-final",
        ] {
            let name = key(id, "0123456789abcdef0123456789abcdef01234567", "c").cache_name();
            assert!(is_dns1123_label(&name), "{name}");
            assert!(name.len() <= MAX_CACHE_NAME_FOR_JOB, "{name}");
            assert!(is_dns1123_label(&download_job_name(&name)));
        }
    }

    #[test]
    fn only_hugging_face_adapters_of_a_shared_cache_go_through_it() {
        let spec = |volumes: serde_json::Value| {
            serde_json::json!({"model": {"id": "Qwen/Qwen3-0.6B", "storage": {"volumes": volumes}},
                "adapters": [
                    {"name": "sql", "source": "hf://org/sql-lora"},
                    {"name": "chat", "source": "org/chat-lora", "revision": "v2"},
                    {"name": "tone", "source": "pvc://loras/tone"},
                    {"name": "web", "source": "s3://bucket/web"}]})
        };
        let shared = md(
            "q",
            spec(serde_json::json!([{"name": "w", "purpose": "modelCache"}])),
        );
        let downloads = adapter_downloads(&shared);
        let model_cache = download(&shared).unwrap().cache_name;
        assert_eq!(
            downloads
                .iter()
                .map(|d| (
                    d.name.as_str(),
                    d.key.adapter_id.as_str(),
                    d.key.revision.as_str()
                ))
                .collect::<Vec<_>>(),
            [
                ("sql", "org/sql-lora", "main"),
                ("chat", "org/chat-lora", "v2")
            ]
        );
        assert!(downloads.iter().all(|d| d.model_cache == model_cache
            && d.key.claim_name == model_cache
            && d.cache_name == d.key.cache_name()));
        // A read-only mount of the shared cache: still through the caches (their Jobs write).
        let read_only = md(
            "q",
            spec(serde_json::json!([{"name": "w", "purpose": "modelCache", "readOnly": true}])),
        );
        assert_eq!(adapter_downloads(&read_only).len(), 2);
        // No shared cache: the engine downloads them itself.
        for volumes in [
            serde_json::json!([]),
            serde_json::json!([{"name": "w", "purpose": "modelCache", "size": "10Gi"}]),
            serde_json::json!([{"name": "w", "purpose": "modelCache", "claimName": "mine"}]),
        ] {
            assert!(adapter_downloads(&md("q", spec(volumes))).is_empty());
        }
    }

    #[test]
    fn snapshot_paths_and_commits() {
        assert_eq!(
            hub_snapshot_path("/model-cache/", "org/sql-lora", "abc"),
            "/model-cache/hub/models--org--sql-lora/snapshots/abc"
        );
        assert!(is_commit("0123456789abcdef0123456789abcdef01234567"));
        assert!(!is_commit("0123456789ABCDEF0123456789abcdef01234567"));
        assert!(!is_commit("main") && !is_commit("0123456"));
    }

    #[test]
    fn job_names_stay_label_values() {
        assert_eq!(download_job_name("qwen-cache"), "qwen-cache-download");
        let long = format!("{}-cache", "d".repeat(45));
        let job = download_job_name(&long);
        assert!(job.len() <= 63 && is_dns1123_label(&job), "{job}");
        assert_ne!(job, download_job_name(&format!("{}-cachf", "d".repeat(45))));
    }
}
