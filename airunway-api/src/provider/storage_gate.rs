//! The storage gate (pure): what the core's storage conditions on a deployment let every
//! provider do before its render. A deployment with `model.storage` volumes renders nothing
//! until the core reports its claims bound (`StorageReady=True`), and one that downloads its
//! model into a cache ([`storage::download`]) nothing until the download is complete
//! (`ModelDownloaded=True`): the engine would otherwise start on an empty cache and download
//! the weights itself. Meanwhile the deployment is `Pending` with the condition's reason and
//! message; the core's failure reasons (`PVCFailed`, `DownloadFailed`) hold it `Failed`.
//!
//! A deployment whose Hugging Face adapters are fetched through the shared model cache
//! ([`storage::adapter_downloads`]) then waits for `AdaptersDownloaded=True` as well, naming
//! every such adapter: an adapter added by a new generation keeps the gate shut until the core
//! has reported it downloaded too (the engine would otherwise fetch it itself, or, for a path
//! into the cache, fail to find it).
//!
//! The core rewrites its conditions at every generation; until it has, a condition of an
//! earlier generation is honoured as it stands, so a spec change that does not touch storage
//! (a scale) never turns a running deployment back to `Pending`.

use crate::constants::{condition_types, reasons};
use crate::v1alpha1::{ConditionStatus, ModelDeployment};
use crate::{lora, storage};

/// What the storage conditions let the provider do with a deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum StorageGate {
    /// No volumes, or the claims are bound and the model (if it is downloaded) is in the cache:
    /// render.
    Open,
    /// Not yet: phase `Pending`, `ResourceCreated=False` with this reason and message; the
    /// deployment is reconciled again when the core changes the condition.
    Wait {
        /// The condition's reason (e.g. `PVCsPending`, `DownloadInProgress`).
        reason: String,
        /// The condition's message, which the deployment shows.
        message: String,
    },
    /// The storage failed: phase `Failed`, `ResourceCreated=False` with this reason and message.
    Failed {
        /// `PVCFailed` or `DownloadFailed`.
        reason: String,
        /// The condition's message.
        message: String,
    },
}

/// The message while the core has not written `StorageReady` yet.
const NO_STORAGE_CONDITION: &str =
    "Waiting for the model.storage volumes: the core has not reported StorageReady yet";
/// The message while the core has not written `ModelDownloaded` yet.
const NO_DOWNLOAD_CONDITION: &str =
    "Waiting for the model download: the core has not reported ModelDownloaded yet";

/// The message while the core has not written `AdaptersDownloaded` yet.
const NO_ADAPTERS_CONDITION: &str =
    "Waiting for the adapter downloads: the core has not reported AdaptersDownloaded yet";

/// The gate of `md`: `StorageReady` first (when it has volumes), then `ModelDownloaded` (when
/// it downloads its model), then `AdaptersDownloaded` (when adapters are fetched through the
/// model cache). A dry run ([`ModelDeployment::is_dry_run`]) never waits: the core creates no
/// storage for a preview (its conditions say `DryRun`), and the preview shows the render as it
/// will be once the storage is ready; failed storage still holds it.
pub(crate) fn gate(md: &ModelDeployment) -> StorageGate {
    match conditions_gate(md) {
        StorageGate::Wait { .. } if md.is_dry_run() => StorageGate::Open,
        gate => gate,
    }
}

/// The gate the storage conditions of `md` make.
fn conditions_gate(md: &ModelDeployment) -> StorageGate {
    if storage::resolved_volumes(md).is_empty() {
        return StorageGate::Open;
    }
    let storage = judge(
        md,
        condition_types::STORAGE_READY,
        (reasons::PVCS_PENDING, NO_STORAGE_CONDITION),
        reasons::PVC_FAILED,
    );
    if storage != StorageGate::Open || storage::download(md).is_none() {
        return storage;
    }
    let model = judge(
        md,
        condition_types::MODEL_DOWNLOADED,
        (reasons::DOWNLOAD_IN_PROGRESS, NO_DOWNLOAD_CONDITION),
        reasons::DOWNLOAD_FAILED,
    );
    if model != StorageGate::Open {
        return model;
    }
    adapters_gate(md)
}

/// `AdaptersDownloaded` for the adapters of `md` fetched through the model cache (open when
/// there are none): `True` opens only when its message names every one of them.
fn adapters_gate(md: &ModelDeployment) -> StorageGate {
    let cached = storage::adapter_downloads(md);
    if cached.is_empty() {
        return StorageGate::Open;
    }
    let gate = judge(
        md,
        condition_types::ADAPTERS_DOWNLOADED,
        (reasons::DOWNLOAD_IN_PROGRESS, NO_ADAPTERS_CONDITION),
        reasons::DOWNLOAD_FAILED,
    );
    if gate != StorageGate::Open {
        return gate;
    }
    let message = md
        .condition(condition_types::ADAPTERS_DOWNLOADED)
        .and_then(|c| c.message.as_deref())
        .unwrap_or_default();
    let reported = lora::downloaded_adapters(message);
    let missing: Vec<&str> = cached
        .iter()
        .map(|d| d.name.as_str())
        .filter(|name| !reported.contains(name))
        .collect();
    if missing.is_empty() {
        return StorageGate::Open;
    }
    StorageGate::Wait {
        reason: reasons::DOWNLOAD_IN_PROGRESS.to_string(),
        message: format!(
            "Waiting for the adapter downloads: the core has not reported {} downloaded yet",
            missing.join(", ")
        ),
    }
}

/// One condition: `True` opens; `failed` as its reason fails; anything else (absent, `False`,
/// `Unknown`) waits, with `absent`'s reason and message where the condition has none.
fn judge(md: &ModelDeployment, type_: &str, absent: (&str, &str), failed: &str) -> StorageGate {
    let Some(condition) = md.condition(type_) else {
        return StorageGate::Wait {
            reason: absent.0.to_string(),
            message: absent.1.to_string(),
        };
    };
    if condition.status == ConditionStatus::True {
        return StorageGate::Open;
    }
    let reason = condition
        .reason
        .clone()
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| absent.0.to_string());
    let message = condition
        .message
        .clone()
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| absent.1.to_string());
    if reason == failed {
        StorageGate::Failed { reason, message }
    } else {
        StorageGate::Wait { reason, message }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::{Value, json};

    fn md(volumes: Value, conditions: Value) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns", "generation": 2},
            "spec": {"model": {"id": "Qwen/Qwen3-0.6B", "storage": {"volumes": volumes}}},
            "status": {"conditions": conditions},
        }))
        .unwrap()
    }

    fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Value {
        json!({"type": type_, "status": status, "reason": reason, "message": message,
               "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1})
    }

    fn shared() -> Value {
        json!([{"name": "weights", "purpose": "modelCache"}])
    }

    fn bound() -> Value {
        condition("StorageReady", "True", "PVCsBound", "All PVCs are bound")
    }

    fn wait(reason: &str, message: &str) -> StorageGate {
        StorageGate::Wait {
            reason: reason.into(),
            message: message.into(),
        }
    }

    #[test]
    fn no_volumes_no_gate() {
        let none: ModelDeployment = serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns"}, "spec": {"model": {"id": "a/b"}}}))
        .unwrap();
        assert_eq!(gate(&none), StorageGate::Open);
        assert_eq!(gate(&md(json!([]), json!([]))), StorageGate::Open);
    }

    #[test]
    fn waits_for_the_claims_then_for_the_download() {
        assert_eq!(
            gate(&md(shared(), json!([]))),
            wait("PVCsPending", NO_STORAGE_CONDITION)
        );
        let pending = condition(
            "StorageReady",
            "False",
            "PVCsPending",
            "Waiting for PVCs to be bound: m-weights",
        );
        assert_eq!(
            gate(&md(shared(), json!([pending]))),
            wait("PVCsPending", "Waiting for PVCs to be bound: m-weights")
        );
        assert_eq!(
            gate(&md(shared(), json!([bound()]))),
            wait("DownloadInProgress", NO_DOWNLOAD_CONDITION)
        );
        let progress = "Model download in progress: 42% (3 files, 1.2 GiB)";
        let downloading = condition("ModelDownloaded", "False", "DownloadInProgress", progress);
        assert_eq!(
            gate(&md(shared(), json!([bound(), downloading]))),
            wait("DownloadInProgress", progress)
        );
        let done = condition(
            "ModelDownloaded",
            "True",
            "DownloadComplete",
            "Model download completed",
        );
        assert_eq!(
            gate(&md(shared(), json!([done.clone(), bound()]))),
            StorageGate::Open
        );
        // The download waits for the claims: a stale ModelDownloaded does not open the gate.
        let unbound = condition("StorageReady", "Unknown", "", "");
        assert_eq!(
            gate(&md(shared(), json!([done, unbound]))),
            wait("PVCsPending", NO_STORAGE_CONDITION)
        );
    }

    #[test]
    fn failures_hold_the_deployment_failed() {
        let missing = "pre-existing PVC \"team\" not found in namespace \"ns\" (referenced by volume \"w\"); ensure the PVC exists before creating the ModelDeployment";
        let lost = condition("StorageReady", "False", "PVCFailed", missing);
        assert_eq!(
            gate(&md(shared(), json!([lost]))),
            StorageGate::Failed {
                reason: "PVCFailed".into(),
                message: missing.into()
            }
        );
        let failed = condition(
            "ModelDownloaded",
            "False",
            "DownloadFailed",
            "Model download failed: 404 for config.json",
        );
        assert_eq!(
            gate(&md(shared(), json!([bound(), failed]))),
            StorageGate::Failed {
                reason: "DownloadFailed".into(),
                message: "Model download failed: 404 for config.json".into()
            }
        );
    }

    fn with_adapters(conditions: Value) -> ModelDeployment {
        let mut md = md(shared(), conditions);
        md.spec.adapters = Some(
            serde_json::from_value(json!([
                {"name": "sql", "source": "hf://org/sql-lora"},
                {"name": "tone", "source": "pvc://loras/tone"},
                {"name": "chat", "source": "org/chat-lora"}]))
            .unwrap(),
        );
        md
    }

    fn downloaded() -> Value {
        condition(
            "ModelDownloaded",
            "True",
            "DownloadComplete",
            "Model download completed",
        )
    }

    #[test]
    fn adapters_fetched_through_the_cache_hold_the_deployment_until_all_are_downloaded() {
        // The model first.
        assert_eq!(
            gate(&with_adapters(json!([bound()]))),
            wait("DownloadInProgress", NO_DOWNLOAD_CONDITION)
        );
        assert_eq!(
            gate(&with_adapters(json!([bound(), downloaded()]))),
            wait("DownloadInProgress", NO_ADAPTERS_CONDITION)
        );
        let progress = "Adapter download in progress: sql: 42% (3/5 files, 4.0 GiB)";
        let downloading = condition(
            "AdaptersDownloaded",
            "False",
            "DownloadInProgress",
            progress,
        );
        assert_eq!(
            gate(&with_adapters(json!([bound(), downloaded(), downloading]))),
            wait("DownloadInProgress", progress)
        );
        let failed = condition(
            "AdaptersDownloaded",
            "False",
            "DownloadFailed",
            "Adapter download failed: chat: HTTP 404",
        );
        assert_eq!(
            gate(&with_adapters(json!([bound(), downloaded(), failed]))),
            StorageGate::Failed {
                reason: "DownloadFailed".into(),
                message: "Adapter download failed: chat: HTTP 404".into()
            }
        );
        let all = condition(
            "AdaptersDownloaded",
            "True",
            "DownloadComplete",
            "Adapters downloaded: sql, chat",
        );
        assert_eq!(
            gate(&with_adapters(json!([bound(), downloaded(), all]))),
            StorageGate::Open
        );
        // An adapter added since the core last wrote the condition: still shut.
        let earlier = condition(
            "AdaptersDownloaded",
            "True",
            "DownloadComplete",
            "Adapters downloaded: sql",
        );
        assert_eq!(
            gate(&with_adapters(json!([bound(), downloaded(), earlier]))),
            wait(
                "DownloadInProgress",
                "Waiting for the adapter downloads: the core has not reported chat downloaded yet"
            )
        );
        // Only pvc:// adapters, or no shared cache: nothing to wait for.
        let mut pvc_only = md(shared(), json!([bound(), downloaded()]));
        pvc_only.spec.adapters = Some(
            serde_json::from_value(json!([{"name": "tone", "source": "pvc://loras/tone"}]))
                .unwrap(),
        );
        assert_eq!(gate(&pvc_only), StorageGate::Open);
        let mut own = with_adapters(json!([bound(), downloaded()]));
        own.spec.model.storage = Some(
            serde_json::from_value(
                json!({"volumes": [{"name": "w", "purpose": "modelCache", "size": "1Gi"}]}),
            )
            .unwrap(),
        );
        assert_eq!(gate(&own), StorageGate::Open);
    }

    #[test]
    fn only_a_writable_hugging_face_cache_waits_for_a_download() {
        let read_only = json!([{"name": "w", "purpose": "modelCache", "claimName": "pre", "readOnly": true},
                               {"name": "c", "purpose": "compilationCache", "size": "1Gi"}]);
        assert_eq!(gate(&md(read_only, json!([bound()]))), StorageGate::Open);
        let custom_only = json!([{"name": "d", "claimName": "data", "mountPath": "/data"}]);
        assert_eq!(
            gate(&md(custom_only.clone(), json!([]))),
            wait("PVCsPending", NO_STORAGE_CONDITION)
        );
        assert_eq!(gate(&md(custom_only, json!([bound()]))), StorageGate::Open);
    }

    #[test]
    fn a_dry_run_renders_while_the_core_creates_nothing_but_failed_storage_holds_it() {
        let dry = |conditions: Value| {
            let mut md = md(shared(), conditions);
            md.metadata.annotations = Some(
                [(
                    crate::constants::annotations::DRY_RUN.to_string(),
                    "true".to_string(),
                )]
                .into(),
            );
            md
        };
        let dry_run = condition(
            "StorageReady",
            "False",
            "DryRun",
            "Dry run: nothing created",
        );
        assert_eq!(gate(&dry(json!([]))), StorageGate::Open);
        assert_eq!(gate(&dry(json!([dry_run.clone()]))), StorageGate::Open);
        // Without the annotation, the same DryRun condition (of the same generation: removing
        // an annotation changes none) waits for the core.
        assert_eq!(
            gate(&md(shared(), json!([dry_run]))),
            wait("DryRun", "Dry run: nothing created")
        );
        let lost = condition("StorageReady", "False", "PVCFailed", "claim gone");
        assert_eq!(
            gate(&dry(json!([lost]))),
            StorageGate::Failed {
                reason: "PVCFailed".into(),
                message: "claim gone".into(),
            }
        );
    }
}
