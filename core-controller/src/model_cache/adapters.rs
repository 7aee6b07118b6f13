//! Adapter caches (pure; docs/model-cache.md, "Adapter caches"): the Hugging Face LoRA
//! adapters of a deployment whose model downloads through the namespace's shared cache are
//! fetched through the model cache too, one `ModelCache` per adapter
//! ([`airunway_api::storage::adapter_downloads`], named by
//! [`airunway_api::storage::AdapterCacheKey::cache_name`]), shared by every deployment of that
//! adapter on that model cache.
//!
//! An adapter cache is an ordinary `ModelCache` whose `spec.claimName` is the model cache's
//! claim: the downloader writes the adapter there, in the Hugging Face hub layout under the
//! `HF_HOME` the providers set to the claim's mount, beside the model. So the cache controller
//! ([`super::plan`]) treats it as any cache on a claim it does not own (no claim created, the
//! claim watch wakes it), with the same users, finalizer and retention. It is created only
//! once the model cache exists, owned by it (not as its controller), so the garbage collector
//! removes it with the model cache and its claim: a `Ready` adapter cache never outlives the
//! files it stands for.
//!
//! The deployment's `AdaptersDownloaded` condition follows the adapter caches
//! ([`airunway_api::lora::adapter_downloads_condition`]); the provider SDK's storage gate
//! waits on it and shows each adapter's progress in `status.adapters`.

use std::sync::Arc;

use airunway_api::conditions::DesiredCondition;
use airunway_api::constants::{API_VERSION, condition_types, labels};
use airunway_api::lora::{self, AdapterFetch};
use airunway_api::storage::{self, AdapterDownload};
use airunway_api::v1alpha1::{CachePhase, ModelCache, ModelDeployment};
use serde_json::{Value, json};

use super::CacheConfig;
use super::deployment::{retention, token_secret};
use super::plan::progress_summary;

/// What a deployment's adapters need from the model cache.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AdapterPlan {
    /// Adapter caches to create (missing, and their model cache exists), each once.
    pub create: Vec<Value>,
    /// `AdaptersDownloaded`, when adapters are fetched through the model cache.
    pub condition: Option<DesiredCondition>,
}

/// The adapter caches `md` uses (names, in list order, each once).
pub fn cache_names(md: &ModelDeployment) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for download in storage::adapter_downloads(md) {
        if !names.contains(&download.cache_name) {
            names.push(download.cache_name);
        }
    }
    names
}

/// Decides for `md`'s adapters from its model cache (`model_cache`, as the watch cache holds
/// it) and the adapter caches `caches` finds by name.
pub fn plan(
    md: &ModelDeployment,
    model_cache: Option<&ModelCache>,
    caches: &dyn Fn(&str) -> Option<Arc<ModelCache>>,
    config: &CacheConfig,
) -> AdapterPlan {
    let downloads = storage::adapter_downloads(md);
    if downloads.is_empty() {
        return AdapterPlan::default();
    }
    let mut create: Vec<Value> = Vec::new();
    let mut fetches: Vec<(String, AdapterFetch)> = Vec::new();
    for download in &downloads {
        let fetch = match (caches(&download.cache_name), model_cache) {
            (Some(cache), _) => fetch_of(&cache),
            (None, Some(model)) if model.metadata.uid.is_some() => {
                if !create
                    .iter()
                    .any(|body| body["metadata"]["name"] == download.cache_name.as_str())
                {
                    create.push(adapter_cache(md, download, model, config));
                }
                AdapterFetch::Downloading(format!(
                    "waiting for its ModelCache {} to be created",
                    download.cache_name
                ))
            }
            (None, _) => AdapterFetch::Downloading(format!(
                "waiting for the model's ModelCache {} to be created",
                download.model_cache
            )),
        };
        fetches.push((download.name.clone(), fetch));
    }
    let (status, reason, message) = lora::adapter_downloads_condition(&fetches);
    AdapterPlan {
        create,
        condition: Some(DesiredCondition::new(
            condition_types::ADAPTERS_DOWNLOADED,
            status,
            reason,
            message,
        )),
    }
}

/// How far `cache` is: `Ready`, `Failed` with its message, else its download's progress (or,
/// before the first report, its message).
fn fetch_of(cache: &ModelCache) -> AdapterFetch {
    let status = cache.status.clone().unwrap_or_default();
    match status.phase {
        Some(CachePhase::Ready) => AdapterFetch::Ready,
        Some(CachePhase::Failed) => AdapterFetch::Failed(status.message.unwrap_or_default()),
        _ => AdapterFetch::Downloading(
            status
                .download
                .as_ref()
                .and_then(progress_summary)
                .or(status.message.filter(|m| !m.is_empty()))
                .unwrap_or_else(|| "waiting for the download to start".to_string()),
        ),
    }
}

/// The adapter cache of `download` as the core creates it: the adapter's repository and
/// revision, downloaded into the model cache's claim, with the retention of the core's shared
/// caches and the deployment's token Secret; labelled with its key and its model cache, and
/// owned by the model cache (`model`).
pub fn adapter_cache(
    md: &ModelDeployment,
    download: &AdapterDownload,
    model: &ModelCache,
    config: &CacheConfig,
) -> Value {
    let mut spec = json!({
        "source": "huggingface",
        "modelId": download.key.adapter_id,
        "revision": download.key.revision,
        "claimName": download.key.claim_name,
        "retention": retention(config),
    });
    if let Some(secret) = token_secret(md) {
        spec["tokenSecretName"] = json!(secret);
    }
    json!({
        "apiVersion": API_VERSION, "kind": "ModelCache",
        "metadata": {
            "name": download.cache_name,
            "namespace": md.metadata.namespace,
            "labels": {
                labels::MANAGED_BY: labels::MANAGED_BY_VALUE,
                labels::MODEL_CACHE_KEY: download.key.hash(),
                labels::ADAPTER_OF: download.model_cache,
            },
            "ownerReferences": [{
                "apiVersion": API_VERSION,
                "kind": "ModelCache",
                "name": model.metadata.name,
                "uid": model.metadata.uid,
                "blockOwnerDeletion": true,
            }],
        },
        "spec": spec,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use airunway_api::constants::reasons;
    use airunway_api::v1alpha1::ConditionStatus;
    use std::collections::BTreeMap;

    fn md(name: &str, volumes: Value, adapters: Value) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("{name}-uid")},
            "spec": {"model": {"id": "Qwen/Qwen3-0.6B", "storage": {"volumes": volumes}},
                "secrets": {"huggingFaceToken": "hf"}, "adapters": adapters},
        }))
        .unwrap()
    }

    fn shared() -> Value {
        json!([{"name": "weights", "purpose": "modelCache"}])
    }

    fn two() -> Value {
        json!([{"name": "sql", "source": "hf://org/sql-lora"},
               {"name": "chat", "source": "org/chat-lora", "revision": "v2"},
               {"name": "tone", "source": "pvc://loras/tone"}])
    }

    fn model_cache(md: &ModelDeployment) -> ModelCache {
        let name = storage::download(md).unwrap().cache_name;
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelCache",
            "metadata": {"name": name, "namespace": "ns", "uid": "model-cache-uid"},
            "spec": {"source": "huggingface", "modelId": "Qwen/Qwen3-0.6B", "size": "1Gi"},
        }))
        .unwrap()
    }

    fn cache(name: &str, status: Value) -> Arc<ModelCache> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelCache",
                "metadata": {"name": name, "namespace": "ns"},
                "spec": {"source": "huggingface", "modelId": "org/x", "claimName": "c"},
                "status": status,
            }))
            .unwrap(),
        )
    }

    fn lookup(caches: Vec<Arc<ModelCache>>) -> impl Fn(&str) -> Option<Arc<ModelCache>> {
        let map: BTreeMap<String, Arc<ModelCache>> = caches
            .into_iter()
            .map(|c| (c.metadata.name.clone().unwrap(), c))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn condition(plan: &AdapterPlan) -> (ConditionStatus, String, String) {
        let c = plan.condition.clone().unwrap();
        assert_eq!(c.type_, condition_types::ADAPTERS_DOWNLOADED);
        (c.status, c.reason, c.message)
    }

    #[test]
    fn nothing_without_a_shared_model_cache_or_hugging_face_adapters() {
        let config = CacheConfig::default();
        for volumes in [
            json!([]),
            json!([{"name": "w", "purpose": "modelCache", "size": "10Gi"}]),
            json!([{"name": "w", "purpose": "modelCache", "claimName": "mine"}]),
        ] {
            let md = md("a", volumes, two());
            assert_eq!(
                plan(&md, None, &lookup(vec![]), &config),
                AdapterPlan::default()
            );
            assert!(cache_names(&md).is_empty());
        }
        let pvc_only = md(
            "a",
            shared(),
            json!([{"name": "tone", "source": "pvc://loras/tone"}]),
        );
        assert_eq!(
            plan(
                &pvc_only,
                Some(&model_cache(&pvc_only)),
                &lookup(vec![]),
                &config
            ),
            AdapterPlan::default()
        );
    }

    #[test]
    fn one_cache_per_adapter_on_the_model_caches_claim_once_the_model_cache_exists() {
        let md = md("a", shared(), two());
        let config = CacheConfig::default();
        // The model cache is not there yet: nothing to own the adapter caches.
        let p = plan(&md, None, &lookup(vec![]), &config);
        assert!(p.create.is_empty());
        let model = model_cache(&md);
        let model_name = model.metadata.name.clone().unwrap();
        assert_eq!(
            condition(&p),
            (
                ConditionStatus::False,
                reasons::DOWNLOAD_IN_PROGRESS.into(),
                format!(
                    "Adapter download in progress: sql: waiting for the model's ModelCache {model_name} to be created; chat: waiting for the model's ModelCache {model_name} to be created"
                )
            )
        );
        let p = plan(&md, Some(&model), &lookup(vec![]), &config);
        let names = cache_names(&md);
        assert_eq!(names.len(), 2);
        assert_eq!(
            p.create
                .iter()
                .map(|b| b["metadata"]["name"].as_str().unwrap())
                .collect::<Vec<_>>(),
            names
        );
        let sql = &p.create[0];
        assert_eq!(
            sql["spec"],
            json!({"source": "huggingface", "modelId": "org/sql-lora", "revision": "main",
                "claimName": model_name, "retention": {"policy": "Delete", "period": "24h"},
                "tokenSecretName": "hf"})
        );
        assert_eq!(
            sql["metadata"]["labels"]["airunway.ai/adapter-of"],
            model_name
        );
        assert_eq!(
            sql["metadata"]["labels"]["airunway.ai/model-cache-key"],
            storage::adapter_downloads(&md)[0].key.hash()
        );
        assert_eq!(
            sql["metadata"]["ownerReferences"],
            json!([{"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelCache",
                "name": model_name, "uid": "model-cache-uid", "blockOwnerDeletion": true}])
        );
        assert_eq!(p.create[1]["spec"]["revision"], "v2");
        // The same adapter listed twice is one cache.
        let twice = super::tests::md(
            "b",
            shared(),
            json!([{"name": "one", "source": "org/sql-lora"},
                   {"name": "two", "source": "hf://org/sql-lora"}]),
        );
        assert_eq!(
            plan(&twice, Some(&model), &lookup(vec![]), &config)
                .create
                .len(),
            1
        );
        assert_eq!(cache_names(&twice).len(), 1);
    }

    #[test]
    fn two_deployments_of_one_adapter_and_model_name_one_cache() {
        let a = md("a", shared(), two());
        let b = md(
            "b",
            shared(),
            json!([{"name": "other-name", "source": "org/sql-lora"}]),
        );
        assert_eq!(cache_names(&a)[0], cache_names(&b)[0]);
        // Beside another model, the same adapter is another cache (another claim).
        let mut c = b.clone();
        c.spec.model.id = Some("Qwen/Qwen3-8B".into());
        assert_ne!(cache_names(&b), cache_names(&c));
    }

    #[test]
    fn the_condition_follows_the_adapter_caches() {
        let md = md("a", shared(), two());
        let model = model_cache(&md);
        let config = CacheConfig::default();
        let names = cache_names(&md);
        let downloading = cache(
            &names[0],
            json!({"phase": "Downloading", "download":
                {"percentage": 42, "filesDone": 3, "filesTotal": 5, "bytesTotal": 4294967296i64}}),
        );
        let pending = cache(
            &names[1],
            json!({"phase": "Pending", "message": "Waiting for the download Job x-download to start"}),
        );
        let p = plan(
            &md,
            Some(&model),
            &lookup(vec![downloading, pending]),
            &config,
        );
        assert!(p.create.is_empty(), "both exist");
        assert_eq!(
            condition(&p),
            (
                ConditionStatus::False,
                reasons::DOWNLOAD_IN_PROGRESS.into(),
                "Adapter download in progress: sql: 42% (3/5 files, 4.0 GiB); chat: Waiting for the download Job x-download to start".into()
            )
        );
        let ready = |name: &str| cache(name, json!({"phase": "Ready"}));
        let p = plan(
            &md,
            Some(&model),
            &lookup(vec![ready(&names[0]), ready(&names[1])]),
            &config,
        );
        assert_eq!(
            condition(&p),
            (
                ConditionStatus::True,
                reasons::DOWNLOAD_COMPLETE.into(),
                "Adapters downloaded: sql, chat".into()
            )
        );
        let failed = cache(
            &names[1],
            json!({"phase": "Failed", "message": "model download Job x-download failed permanently: HTTP 404"}),
        );
        let p = plan(
            &md,
            Some(&model),
            &lookup(vec![ready(&names[0]), failed]),
            &config,
        );
        assert_eq!(
            condition(&p),
            (
                ConditionStatus::False,
                reasons::DOWNLOAD_FAILED.into(),
                "Adapter download failed: chat: model download Job x-download failed permanently: HTTP 404".into()
            )
        );
    }
}
