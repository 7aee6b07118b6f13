//! What a ModelDeployment's `model.storage.volumes` need, and the `StorageReady` and
//! `ModelDownloaded` conditions the core writes on it (pure).
//!
//! - A shared `modelCache` volume: the namespace's cache of the model
//!   ([`airunway_api::storage::ModelCacheKey::cache_name`]), created when missing (with the
//!   deployment's token Secret name, the core's default size and retention) and never changed
//!   once it exists; no deployment owns it.
//! - A writable managed or existing `modelCache` volume of a Hugging Face model: a cache of its
//!   own named after its claim, owned by the deployment, downloading into that claim.
//! - A managed volume (`size`): the claim `<deployment>-<volume>`, owned by the deployment, with
//!   the Go AI Runway's labels; one of that name without the `managed-by` label is refused with
//!   its message, one with the label owned by another deployment (a recreated one) is deleted.
//! - A pre-existing claim (`claimName`) must exist (the Go AI Runway's messages).
//!
//! `StorageReady` (whenever there are volumes) and `ModelDownloaded` (whenever there is a
//! download) carry the Go AI Runway's reasons; the progress in the message changes only with
//! the whole percentage or the files done, so a download does not rewrite the deployment every
//! report.

use std::sync::Arc;
use std::time::Duration;

use airunway_api::conditions::DesiredCondition;
use airunway_api::constants::{API_VERSION, condition_types, labels, reasons};
use airunway_api::storage::{
    self, ClaimSource, DEFAULT_ACCESS_MODE, DEFAULT_REVISION, ModelCacheKey, ResolvedVolume,
};
use airunway_api::v1alpha1::{
    CachePhase, ModelCache, ModelDeployment, RetentionPolicy, StorageVolume,
};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use serde_json::{Value, json};

use super::CacheConfig;
use super::plan::progress_summary;
use crate::runtime_config;
use std::collections::BTreeMap;

/// What the deployment's storage needs and how it stands.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StoragePlan {
    /// A `ModelCache` to create (it is missing).
    pub create_cache: Option<Value>,
    /// The deployment's own cache to delete: it holds the model the deployment served before
    /// (a cache's model is immutable); a new one is created once it is gone.
    pub delete_cache: Option<String>,
    /// Managed claims to create.
    pub create_claims: Vec<Value>,
    /// Managed claims left by an earlier deployment of the same name, to delete.
    pub delete_claims: Vec<String>,
    /// `StorageReady` and `ModelDownloaded`, as they apply.
    pub conditions: Vec<DesiredCondition>,
    /// Merge patches of the propagated labels of the deployment's own claims and cache that
    /// exist with others (`(kind, name, patch)`; docs/platform.md).
    pub relabel: Vec<(Relabel, String, Value)>,
}

/// What a label patch is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relabel {
    /// A managed PersistentVolumeClaim of the deployment.
    Claim,
    /// The deployment's own ModelCache.
    Cache,
}

/// Where one claim stands.
enum ClaimCheck {
    Ready,
    Pending,
    Failed(String),
}

fn declared<'a>(md: &'a ModelDeployment, name: &str) -> Option<&'a StorageVolume> {
    md.spec
        .model
        .storage
        .as_ref()?
        .volumes
        .as_ref()?
        .iter()
        .find(|v| v.name == name)
}

fn owned_by(claim: &PersistentVolumeClaim, uid: Option<&str>) -> bool {
    claim
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| Some(o.uid.as_str()) == uid)
}

fn has_managed_label(claim: &PersistentVolumeClaim) -> bool {
    claim
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(labels::MANAGED_BY))
        .is_some_and(|v| v == labels::MANAGED_BY_VALUE)
}

fn phase(claim: &PersistentVolumeClaim) -> &str {
    claim
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
}

fn owner(md: &ModelDeployment) -> Value {
    json!([{
        "apiVersion": API_VERSION,
        "kind": "ModelDeployment",
        "name": md.metadata.name,
        "uid": md.metadata.uid,
        "controller": true,
        "blockOwnerDeletion": true,
    }])
}

fn deployment_labels(md: &ModelDeployment) -> Value {
    json!({
        labels::MANAGED_BY: labels::MANAGED_BY_VALUE,
        labels::MODEL_DEPLOYMENT: md.metadata.name,
    })
}

/// The claim of a managed volume (the Go AI Runway's shape).
pub fn managed_claim(md: &ModelDeployment, volume: &ResolvedVolume) -> Value {
    managed_claim_labeled(md, volume, &BTreeMap::new())
}

/// [`managed_claim`] with the labels the runtime configuration propagates.
pub fn managed_claim_labeled(
    md: &ModelDeployment,
    volume: &ResolvedVolume,
    propagated: &BTreeMap<String, String>,
) -> Value {
    let declared = declared(md, &volume.name);
    let access = declared
        .and_then(|v| v.access_mode.as_deref())
        .filter(|m| !m.is_empty())
        .unwrap_or(DEFAULT_ACCESS_MODE);
    let mut spec = json!({
        "accessModes": [access],
        "resources": {"requests": {"storage": declared.and_then(|v| v.size.clone())}},
    });
    if let Some(class) = declared.and_then(|v| v.storage_class_name.as_ref()) {
        spec["storageClassName"] = json!(class);
    }
    let mut metadata = json!({
        "name": volume.claim_name,
        "namespace": md.metadata.namespace,
        "labels": deployment_labels(md),
        "ownerReferences": owner(md),
    });
    runtime_config::stamp(&mut metadata, propagated);
    json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": spec,
    })
}

/// A period as a Go duration (`24h`, `30m`, `90s`).
pub fn format_period(period: Duration) -> String {
    let seconds = period.as_secs();
    if seconds > 0 && seconds.is_multiple_of(3600) {
        format!("{}h", seconds / 3600)
    } else if seconds > 0 && seconds.is_multiple_of(60) {
        format!("{}m", seconds / 60)
    } else {
        format!("{seconds}s")
    }
}

/// `spec.retention` of a shared cache the core creates: the core's (or the runtime
/// configuration's) policy and period.
pub fn retention(config: &CacheConfig) -> Value {
    let policy = match config.retention {
        RetentionPolicy::Delete => "Delete",
        RetentionPolicy::Retain => "Retain",
    };
    json!({"policy": policy, "period": format_period(config.retention_period)})
}

/// The namespace's shared cache of `md`'s model, as the core creates it.
pub fn shared_cache(
    md: &ModelDeployment,
    volume: &ResolvedVolume,
    config: &CacheConfig,
) -> Option<Value> {
    let key = ModelCacheKey::of(&md.spec)?;
    let declared = declared(md, &volume.name);
    let mut spec = json!({
        "source": "huggingface",
        "modelId": key.model_id,
        "revision": key.revision,
        "size": config.size,
        "retention": retention(config),
    });
    if let Some(class) = declared.and_then(|v| v.storage_class_name.as_ref()) {
        spec["storageClassName"] = json!(class);
    }
    if let Some(mode) = declared
        .and_then(|v| v.access_mode.as_ref())
        .filter(|m| !m.is_empty())
    {
        spec["accessMode"] = json!(mode);
    }
    if let Some(secret) = token_secret(md) {
        spec["tokenSecretName"] = json!(secret);
    }
    Some(json!({
        "apiVersion": API_VERSION, "kind": "ModelCache",
        "metadata": {
            "name": key.cache_name(),
            "namespace": md.metadata.namespace,
            "labels": {
                labels::MANAGED_BY: labels::MANAGED_BY_VALUE,
                labels::MODEL_CACHE_KEY: key.hash(),
            },
        },
        "spec": spec,
    }))
}

/// The deployment's own cache, downloading into its (managed or existing) claim.
pub fn private_cache(md: &ModelDeployment, volume: &ResolvedVolume) -> Value {
    private_cache_labeled(md, volume, &BTreeMap::new())
}

/// [`private_cache`] with the labels the runtime configuration propagates (its Job and the
/// Job's Pod get them from it).
pub fn private_cache_labeled(
    md: &ModelDeployment,
    volume: &ResolvedVolume,
    propagated: &BTreeMap<String, String>,
) -> Value {
    let mut spec = json!({
        "source": "huggingface",
        "modelId": md.spec.model.id,
        "revision": DEFAULT_REVISION,
        "claimName": volume.claim_name,
    });
    if let Some(secret) = token_secret(md) {
        spec["tokenSecretName"] = json!(secret);
    }
    let mut metadata = json!({
        "name": volume.claim_name,
        "namespace": md.metadata.namespace,
        "labels": deployment_labels(md),
        "ownerReferences": owner(md),
    });
    runtime_config::stamp(&mut metadata, propagated);
    json!({
        "apiVersion": API_VERSION, "kind": "ModelCache",
        "metadata": metadata,
        "spec": spec,
    })
}

/// Whether `cache` is `md`'s own and holds another model than `md` serves now.
fn stale(md: &ModelDeployment, cache: &ModelCache) -> bool {
    let own = cache
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && Some(&o.uid) == md.metadata.uid.as_ref());
    own && !serves(md, cache)
}

/// Whether `md`'s model is the one `cache` holds (source and id; revision `main`).
pub fn serves(md: &ModelDeployment, cache: &ModelCache) -> bool {
    cache.spec.source == md.spec.model_source()
        && cache.spec.model_id.as_deref() == md.spec.model.id.as_deref()
        && cache
            .spec
            .revision
            .as_deref()
            .filter(|r| !r.is_empty())
            .unwrap_or(DEFAULT_REVISION)
            == DEFAULT_REVISION
}

/// The Secret of `md`'s Hugging Face token (`spec.secrets.huggingFaceToken`), if any.
pub fn token_secret(md: &ModelDeployment) -> Option<String> {
    md.spec
        .secrets
        .as_ref()
        .and_then(|s| s.hugging_face_token.clone())
        .filter(|s| !s.is_empty())
}

/// Decides for `md`'s storage from the claims and the cache the watch caches hold.
pub fn plan(
    md: &ModelDeployment,
    claims: &dyn Fn(&str) -> Option<Arc<PersistentVolumeClaim>>,
    cache: Option<&ModelCache>,
    config: &CacheConfig,
) -> StoragePlan {
    plan_labeled(md, claims, cache, config, &BTreeMap::new())
}

/// [`plan`], with the labels the deployment's runtime configuration propagates to its own
/// claims and cache (a shared cache gets none: it serves every deployment of the namespace
/// that uses the model, docs/platform.md).
pub fn plan_labeled(
    md: &ModelDeployment,
    claims: &dyn Fn(&str) -> Option<Arc<PersistentVolumeClaim>>,
    cache: Option<&ModelCache>,
    config: &CacheConfig,
    propagated: &BTreeMap<String, String>,
) -> StoragePlan {
    let volumes = storage::resolved_volumes(md);
    let mut out = StoragePlan::default();
    if volumes.is_empty() {
        return out;
    }
    let namespace = md.metadata.namespace.clone().unwrap_or_default();
    let uid = md.metadata.uid.as_deref();
    let mut checks = Vec::new();
    for volume in &volumes {
        let claim = claims(&volume.claim_name);
        let c = &volume.claim_name;
        let check = match (volume.source, claim) {
            (ClaimSource::Existing, None) => ClaimCheck::Failed(format!(
                "pre-existing PVC \"{c}\" not found in namespace \"{namespace}\" (referenced by volume \"{}\"); ensure the PVC exists before creating the ModelDeployment",
                volume.name
            )),
            (ClaimSource::Existing, Some(claim)) => match phase(&claim) {
                "Bound" => ClaimCheck::Ready,
                "Lost" => ClaimCheck::Failed(format!("pre-existing PVC \"{c}\" is in Lost phase")),
                _ => ClaimCheck::Pending,
            },
            (ClaimSource::Managed, None) => {
                out.create_claims
                    .push(managed_claim_labeled(md, volume, propagated));
                ClaimCheck::Pending
            }
            (ClaimSource::Managed, Some(claim)) if !owned_by(&claim, uid) => {
                if has_managed_label(&claim) {
                    out.delete_claims.push(c.clone());
                    ClaimCheck::Pending
                } else {
                    ClaimCheck::Failed(format!(
                        "PVC {c} exists but was not created by airunway (missing airunway.ai/managed-by label); refusing to delete — remove the PVC manually or change the volume claimName"
                    ))
                }
            }
            // The claims AI Runway makes count as ready while Pending (WaitForFirstConsumer).
            (ClaimSource::Managed | ClaimSource::Shared, Some(claim)) => {
                if volume.source == ClaimSource::Managed
                    && let Some(patch) = runtime_config::relabel_patch(&claim.metadata, propagated)
                {
                    out.relabel.push((Relabel::Claim, c.clone(), patch));
                }
                match phase(&claim) {
                    "Lost" => ClaimCheck::Failed(format!("PVC \"{c}\" is in Lost phase")),
                    _ => ClaimCheck::Ready,
                }
            }
            (ClaimSource::Shared, None) => ClaimCheck::Pending,
        };
        checks.push(check);
    }
    let failed = checks.iter().find_map(|c| match c {
        ClaimCheck::Failed(message) => Some(message.clone()),
        _ => None,
    });
    let t = condition_types::STORAGE_READY;
    out.conditions.push(match failed {
        Some(message) => DesiredCondition::new(t, false, reasons::PVC_FAILED, message),
        None if checks.iter().any(|c| matches!(c, ClaimCheck::Pending)) => DesiredCondition::new(
            t,
            false,
            reasons::PVCS_PENDING,
            "Waiting for PVCs to be bound",
        ),
        None => DesiredCondition::new(t, true, reasons::PVCS_BOUND, "All managed PVCs are bound"),
    });

    let Some(download) = storage::download(md) else {
        return out;
    };
    let t = condition_types::MODEL_DOWNLOADED;
    let downloading =
        |message: String| DesiredCondition::new(t, false, reasons::DOWNLOAD_IN_PROGRESS, message);
    let condition = match cache {
        None => {
            out.create_cache = if download.shared {
                shared_cache(md, &download.volume, config)
            } else {
                Some(private_cache_labeled(md, &download.volume, propagated))
            };
            downloading("Model download in progress".to_string())
        }
        Some(cache) if !download.shared && stale(md, cache) => {
            out.delete_cache = Some(download.cache_name.clone());
            downloading(format!(
                "Model download in progress: replacing ModelCache {}, which holds the previous model",
                download.cache_name
            ))
        }
        Some(cache) => {
            if !download.shared
                && let Some(patch) = runtime_config::relabel_patch(&cache.metadata, propagated)
            {
                out.relabel
                    .push((Relabel::Cache, download.cache_name.clone(), patch));
            }
            let status = cache.status.clone().unwrap_or_default();
            match status.phase {
                Some(CachePhase::Ready) => DesiredCondition::new(
                    t,
                    true,
                    reasons::DOWNLOAD_COMPLETE,
                    "Model download completed",
                ),
                Some(CachePhase::Failed) => DesiredCondition::new(
                    t,
                    false,
                    reasons::DOWNLOAD_FAILED,
                    format!(
                        "Model download failed: {}",
                        status.message.unwrap_or_default()
                    ),
                ),
                _ => downloading(match status.download.as_ref().and_then(progress_summary) {
                    Some(progress) => format!("Model download in progress: {progress}"),
                    None => "Model download in progress".to_string(),
                }),
            }
        }
    };
    out.conditions.push(condition);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::collections::BTreeMap;

    fn md(volumes: Value) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "qwen", "namespace": "ns", "uid": "md-uid"},
            "spec": {"model": {"id": "Qwen/Qwen3-0.6B", "storage": {"volumes": volumes}},
                "secrets": {"huggingFaceToken": "hf"}},
        }))
        .unwrap()
    }

    fn claim(
        name: &str,
        phase: &str,
        owner: Option<&str>,
        managed: bool,
    ) -> Arc<PersistentVolumeClaim> {
        let mut c =
            json!({"metadata": {"name": name, "namespace": "ns"}, "status": {"phase": phase}});
        if let Some(uid) = owner {
            c["metadata"]["ownerReferences"] = json!([{"apiVersion": "airunway.ai/v1alpha1",
                "kind": "ModelDeployment", "name": "qwen", "uid": uid}]);
        }
        if managed {
            c["metadata"]["labels"] = json!({"airunway.ai/managed-by": "airunway"});
        }
        Arc::new(serde_json::from_value(c).unwrap())
    }

    fn lookup(
        claims: Vec<Arc<PersistentVolumeClaim>>,
    ) -> impl Fn(&str) -> Option<Arc<PersistentVolumeClaim>> {
        let map: BTreeMap<String, Arc<PersistentVolumeClaim>> = claims
            .into_iter()
            .map(|c| (c.metadata.name.clone().unwrap(), c))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn cache(status: Value) -> ModelCache {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelCache",
            "metadata": {"name": "c", "namespace": "ns"},
            "spec": {"source": "huggingface", "modelId": "Qwen/Qwen3-0.6B", "size": "1Gi"},
            "status": status,
        }))
        .unwrap()
    }

    fn reason(plan: &StoragePlan, type_: &str) -> (String, String) {
        let c = plan.conditions.iter().find(|c| c.type_ == type_).unwrap();
        (c.reason.clone(), c.message.clone())
    }

    #[test]
    fn no_volumes_no_conditions() {
        let plain: ModelDeployment = serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "qwen", "namespace": "ns"},
            "spec": {"model": {"id": "Qwen/Qwen3-0.6B"}}}))
        .unwrap();
        assert_eq!(
            plan(&plain, &lookup(vec![]), None, &CacheConfig::default()),
            StoragePlan::default()
        );
    }

    #[test]
    fn a_shared_volume_creates_the_namespaces_cache_once() {
        let md = md(json!([{"name": "weights", "purpose": "modelCache"}]));
        let p = plan(&md, &lookup(vec![]), None, &CacheConfig::default());
        let body = p.create_cache.clone().unwrap();
        let key = ModelCacheKey::of(&md.spec).unwrap();
        assert_eq!(body["metadata"]["name"], key.cache_name());
        assert_eq!(
            body["metadata"]["labels"]["airunway.ai/model-cache-key"],
            key.hash()
        );
        assert!(
            body["metadata"].get("ownerReferences").is_none(),
            "no deployment owns it"
        );
        assert_eq!(
            body["spec"],
            json!({"source": "huggingface", "modelId": "Qwen/Qwen3-0.6B", "revision": "main",
                "size": "100Gi", "retention": {"policy": "Delete", "period": "24h"},
                "tokenSecretName": "hf"})
        );
        assert_eq!(
            reason(&p, condition_types::STORAGE_READY),
            ("PVCsPending".into(), "Waiting for PVCs to be bound".into())
        );
        assert_eq!(
            reason(&p, condition_types::MODEL_DOWNLOADED),
            (
                "DownloadInProgress".into(),
                "Model download in progress".into()
            )
        );
        // Existing: never created or changed again; its progress and phase are read.
        let claims = lookup(vec![claim(&key.cache_name(), "Pending", None, true)]);
        let downloading = cache(json!({"phase": "Downloading", "download":
            {"percentage": 42, "filesDone": 3, "filesTotal": 5, "bytesTotal": 4294967296i64}}));
        let p = plan(&md, &claims, Some(&downloading), &CacheConfig::default());
        assert_eq!(p.create_cache, None);
        assert_eq!(reason(&p, condition_types::STORAGE_READY).0, "PVCsBound");
        assert_eq!(
            reason(&p, condition_types::MODEL_DOWNLOADED).1,
            "Model download in progress: 42% (3/5 files, 4.0 GiB)"
        );
        let ready = cache(json!({"phase": "Ready"}));
        let p = plan(&md, &claims, Some(&ready), &CacheConfig::default());
        assert_eq!(
            reason(&p, condition_types::MODEL_DOWNLOADED),
            ("DownloadComplete".into(), "Model download completed".into())
        );
        let failed = cache(json!({"phase": "Failed",
            "message": "model download Job c-download failed permanently: HTTP 404"}));
        let p = plan(&md, &claims, Some(&failed), &CacheConfig::default());
        assert_eq!(
            reason(&p, condition_types::MODEL_DOWNLOADED),
            (
                "DownloadFailed".into(),
                "Model download failed: model download Job c-download failed permanently: HTTP 404"
                    .into()
            )
        );
    }

    #[test]
    fn a_managed_model_cache_gets_its_own_cache_and_claim() {
        let md = md(
            json!([{"name": "cache", "purpose": "modelCache", "size": "50Gi",
            "storageClassName": "fast"}]),
        );
        let p = plan(&md, &lookup(vec![]), None, &CacheConfig::default());
        let claim_body = &p.create_claims[0];
        assert_eq!(claim_body["metadata"]["name"], "qwen-cache");
        assert_eq!(
            claim_body["metadata"]["labels"]["airunway.ai/model-deployment"],
            "qwen"
        );
        assert_eq!(
            claim_body["metadata"]["ownerReferences"][0]["uid"],
            "md-uid"
        );
        assert_eq!(claim_body["spec"]["accessModes"], json!(["ReadWriteMany"]));
        assert_eq!(claim_body["spec"]["storageClassName"], "fast");
        assert_eq!(
            claim_body["spec"]["resources"]["requests"]["storage"],
            "50Gi"
        );
        let cache_body = p.create_cache.unwrap();
        assert_eq!(cache_body["metadata"]["name"], "qwen-cache");
        assert_eq!(cache_body["spec"]["claimName"], "qwen-cache");
        assert_eq!(
            cache_body["metadata"]["ownerReferences"][0]["controller"],
            true
        );
    }

    #[test]
    fn a_private_cache_of_the_previous_model_is_replaced() {
        let md = md(json!([{"name": "cache", "purpose": "modelCache", "size": "50Gi"}]));
        let mut old: ModelCache =
            serde_json::from_value(private_cache(&md, &storage::download(&md).unwrap().volume))
                .unwrap();
        let claims = lookup(vec![claim("qwen-cache", "Bound", Some("md-uid"), true)]);
        let p = plan(&md, &claims, Some(&old), &CacheConfig::default());
        assert_eq!(p.delete_cache, None, "the same model");
        old.spec.model_id = Some("Qwen/Qwen2.5-7B".into());
        let p = plan(&md, &claims, Some(&old), &CacheConfig::default());
        assert_eq!(p.delete_cache.as_deref(), Some("qwen-cache"));
        assert_eq!(
            reason(&p, condition_types::MODEL_DOWNLOADED).0,
            "DownloadInProgress"
        );
        // Not the deployment's own (another deployment's, or the user's): never deleted.
        old.metadata.owner_references = None;
        let p = plan(&md, &claims, Some(&old), &CacheConfig::default());
        assert_eq!(p.delete_cache, None);
    }

    #[test]
    fn managed_claims_follow_the_go_rules() {
        let md = md(json!([{"name": "compiled", "purpose": "compilationCache", "size": "5Gi"}]));
        let ours = lookup(vec![claim(
            "qwen-compiled",
            "Pending",
            Some("md-uid"),
            true,
        )]);
        let p = plan(&md, &ours, None, &CacheConfig::default());
        assert!(p.create_claims.is_empty() && p.create_cache.is_none());
        assert_eq!(
            reason(&p, condition_types::STORAGE_READY).0,
            "PVCsBound",
            "Pending counts"
        );
        assert!(
            p.conditions
                .iter()
                .all(|c| c.type_ != condition_types::MODEL_DOWNLOADED)
        );
        let stale = lookup(vec![claim("qwen-compiled", "Bound", Some("old-uid"), true)]);
        let p = plan(&md, &stale, None, &CacheConfig::default());
        assert_eq!(p.delete_claims, ["qwen-compiled"]);
        let foreign = lookup(vec![claim("qwen-compiled", "Bound", None, false)]);
        let p = plan(&md, &foreign, None, &CacheConfig::default());
        assert_eq!(
            reason(&p, condition_types::STORAGE_READY),
            ("PVCFailed".into(), "PVC qwen-compiled exists but was not created by airunway (missing airunway.ai/managed-by label); refusing to delete — remove the PVC manually or change the volume claimName".into())
        );
    }

    #[test]
    fn pre_existing_claims_must_exist_and_be_bound() {
        let md = md(json!([{"name": "data", "claimName": "team-data", "mountPath": "/data"}]));
        let p = plan(&md, &lookup(vec![]), None, &CacheConfig::default());
        assert_eq!(
            reason(&p, condition_types::STORAGE_READY),
            ("PVCFailed".into(), "pre-existing PVC \"team-data\" not found in namespace \"ns\" (referenced by volume \"data\"); ensure the PVC exists before creating the ModelDeployment".into())
        );
        let pending = lookup(vec![claim("team-data", "Pending", None, false)]);
        assert_eq!(
            reason(
                &plan(&md, &pending, None, &CacheConfig::default()),
                condition_types::STORAGE_READY
            )
            .0,
            "PVCsPending"
        );
        let lost = lookup(vec![claim("team-data", "Lost", None, false)]);
        assert_eq!(
            reason(
                &plan(&md, &lost, None, &CacheConfig::default()),
                condition_types::STORAGE_READY
            )
            .1,
            "pre-existing PVC \"team-data\" is in Lost phase"
        );
        let bound = lookup(vec![claim("team-data", "Bound", None, false)]);
        assert_eq!(
            reason(
                &plan(&md, &bound, None, &CacheConfig::default()),
                condition_types::STORAGE_READY
            ),
            ("PVCsBound".into(), "All managed PVCs are bound".into())
        );
    }

    #[test]
    fn periods_are_written_as_go_durations() {
        assert_eq!(format_period(Duration::from_secs(86400)), "24h");
        assert_eq!(format_period(Duration::from_secs(90 * 60)), "90m");
        assert_eq!(format_period(Duration::from_secs(45)), "45s");
        assert_eq!(format_period(Duration::ZERO), "0s");
        for text in ["24h", "90m", "45s", "0s"] {
            assert!(super::super::plan::parse_period(text).is_some());
        }
    }
}
