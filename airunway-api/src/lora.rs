//! LoRA adapters (`spec.adapters[]`, docs/lora.md), pure: where an adapter's weights come from
//! ([`parse_source`]), the rules every adapter follows ([`adapter_errors`]), the rank vLLM is
//! started with ([`vllm_max_lora_rank`]) and the state each adapter shows in
//! `status.adapters[]` ([`adapter_statuses`]). The core's validation, the providers' renders
//! and the provider SDK's status all read this one definition.

use crate::kubernetes_names::is_dns1123_subdomain;
use crate::v1alpha1::{AdapterState, AdapterStatus, EngineType, LoraAdapter, ModelDeployment};

/// The ranks vLLM accepts for `--max-lora-rank` (its `MaxLoRARanks`).
pub const VLLM_LORA_RANKS: [i32; 9] = [1, 8, 16, 32, 64, 128, 256, 320, 512];

/// The longest adapter name (the CRD says the same).
pub const MAX_NAME_LENGTH: usize = 63;

/// The source forms, as messages list them.
pub const SOURCE_FORMS: &str = "a Hugging Face repository id (org/name), hf://org/name, https://<host>/<path>, s3://<bucket>/<path>, gs://<bucket>/<path> or pvc://<claim>/<path>";

/// Where an adapter's weights come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdapterSource<'a> {
    /// A Hugging Face repository (`org/name` or `hf://org/name`): the repository id.
    HuggingFace(&'a str),
    /// An `https://` URL (the whole URL).
    Https(&'a str),
    /// An `s3://` URI (the whole URI).
    S3(&'a str),
    /// A `gs://` URI (the whole URI).
    Gcs(&'a str),
    /// A directory on a PersistentVolumeClaim of the deployment's namespace.
    Pvc {
        /// The claim's name.
        claim: &'a str,
        /// The directory inside the claim, without leading or trailing `/` (empty: its root).
        path: &'a str,
    },
}

impl AdapterSource<'_> {
    /// What the source is, in messages: `Hugging Face`, `https`, `s3`, `gs` or `pvc`.
    pub fn kind(&self) -> &'static str {
        match self {
            AdapterSource::HuggingFace(_) => "Hugging Face",
            AdapterSource::Https(_) => "https",
            AdapterSource::S3(_) => "s3",
            AdapterSource::Gcs(_) => "gs",
            AdapterSource::Pvc { .. } => "pvc",
        }
    }
}

fn is_hub_part(part: &str) -> bool {
    !part.is_empty()
        && part.len() <= 96
        && part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !part.starts_with(['-', '.'])
        && !part.contains("..")
}

fn hub_repository(id: &str) -> Option<&str> {
    let (org, name) = id.split_once('/')?;
    (is_hub_part(org) && is_hub_part(name)).then_some(id)
}

/// A URI's part after the scheme: a host or bucket, then a non-empty path.
fn bucket_and_path(rest: &str) -> bool {
    rest.split_once('/').is_some_and(|(bucket, path)| {
        !bucket.is_empty()
            && !path.trim_matches('/').is_empty()
            && !rest.chars().any(|c| c.is_whitespace() || c.is_control())
    })
}

/// Parses `spec.adapters[].source`; the error says what is wrong and lists [`SOURCE_FORMS`].
pub fn parse_source(source: &str) -> Result<AdapterSource<'_>, String> {
    let refused = |why: &str| format!("{why}: use {SOURCE_FORMS}");
    if let Some(id) = source.strip_prefix("hf://") {
        return hub_repository(id)
            .map(AdapterSource::HuggingFace)
            .ok_or_else(|| refused(&format!("\"{id}\" is not a Hugging Face repository id")));
    }
    if let Some(rest) = source.strip_prefix("https://") {
        return bucket_and_path(rest)
            .then_some(AdapterSource::Https(source))
            .ok_or_else(|| refused("an https source needs a host and a path"));
    }
    if let Some(rest) = source.strip_prefix("s3://") {
        return bucket_and_path(rest)
            .then_some(AdapterSource::S3(source))
            .ok_or_else(|| refused("an s3 source needs a bucket and a path"));
    }
    if let Some(rest) = source.strip_prefix("gs://") {
        return bucket_and_path(rest)
            .then_some(AdapterSource::Gcs(source))
            .ok_or_else(|| refused("a gs source needs a bucket and a path"));
    }
    if let Some(rest) = source.strip_prefix("pvc://") {
        let (claim, path) = rest.split_once('/').unwrap_or((rest, ""));
        let path = path.trim_matches('/');
        if !is_dns1123_subdomain(claim) {
            return Err(refused(&format!(
                "\"{claim}\" is not a PersistentVolumeClaim name"
            )));
        }
        if path
            .split('/')
            .any(|segment| segment == ".." || segment == ".")
            || path.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(refused(&format!(
                "the path \"{path}\" inside claim {claim} must not contain \".\", \"..\" or spaces"
            )));
        }
        return Ok(AdapterSource::Pvc { claim, path });
    }
    if source.contains("://") {
        return Err(refused("unknown scheme"));
    }
    hub_repository(source)
        .map(AdapterSource::HuggingFace)
        .ok_or_else(|| {
            refused(&format!(
                "\"{source}\" is neither a URI nor a Hugging Face repository id"
            ))
        })
}

/// Whether `name` is an adapter name: lower-case letters, digits, `-`, `.` and `_`, starting
/// and ending with a letter or digit, at most [`MAX_NAME_LENGTH`] characters.
pub fn is_adapter_name(name: &str) -> bool {
    let edge = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !name.is_empty()
        && name.len() <= MAX_NAME_LENGTH
        && name.starts_with(edge)
        && name.ends_with(edge)
        && name
            .chars()
            .all(|c| edge(c) || matches!(c, '-' | '.' | '_'))
}

/// One broken rule of `spec.adapters`: the field path and what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterError {
    /// The field, e.g. `spec.adapters[1].source`.
    pub field: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// The names clients already use for the base model: `model.servedName` and `model.id` (vLLM
/// serves `model.id` unless `servedName` is set), and the name AI Runway derives from them.
fn base_model_names(md: &ModelDeployment) -> Vec<String> {
    let mut names: Vec<String> = [
        md.spec.model.served_name.clone(),
        md.spec.model.id.clone(),
        md.served_model_name(),
    ]
    .into_iter()
    .flatten()
    .filter(|n| !n.is_empty())
    .collect();
    names.dedup();
    names
}

/// Every broken rule of `md`'s adapters, in list order: names (form, unique, not a name of the
/// base model), sources ([`parse_source`]), a revision only on a Hugging Face source, and no
/// adapters with an engine that cannot serve them (llama.cpp, TensorRT-LLM).
pub fn adapter_errors(md: &ModelDeployment) -> Vec<AdapterError> {
    let adapters = md.spec.lora_adapters();
    let mut errors = Vec::new();
    if adapters.is_empty() {
        return errors;
    }
    let mut push = |field: String, message: String| errors.push(AdapterError { field, message });
    if let Some(engine) = md.spec.explicit_engine()
        && matches!(engine, EngineType::Llamacpp | EngineType::Trtllm)
    {
        push(
            "spec.adapters".to_string(),
            format!(
                "engine {} does not serve LoRA adapters in AI Runway: remove spec.adapters, or use engine vllm or sglang",
                engine.as_str()
            ),
        );
    }
    let base = base_model_names(md);
    for (index, adapter) in adapters.iter().enumerate() {
        let at = |field: &str| format!("spec.adapters[{index}].{field}");
        if !is_adapter_name(&adapter.name) {
            push(
                at("name"),
                format!(
                    "\"{}\" is not an adapter name: use lower-case letters, digits, '-', '.' and '_', starting and ending with a letter or digit, at most {MAX_NAME_LENGTH} characters",
                    adapter.name
                ),
            );
        }
        if adapters[..index].iter().any(|a| a.name == adapter.name) {
            push(
                at("name"),
                format!(
                    "adapter name \"{}\" is listed twice: names must be unique",
                    adapter.name
                ),
            );
        }
        if base.contains(&adapter.name) {
            push(
                at("name"),
                format!(
                    "adapter name \"{}\" is the base model's name, which clients use for the model without an adapter: choose another name",
                    adapter.name
                ),
            );
        }
        match parse_source(&adapter.source) {
            Err(message) => push(at("source"), message),
            Ok(source) => {
                if adapter.revision.is_some() && !matches!(source, AdapterSource::HuggingFace(_)) {
                    push(
                        at("revision"),
                        format!(
                            "a revision applies to a Hugging Face source only, not to a {} source: remove it, or put the version in the source",
                            source.kind()
                        ),
                    );
                }
            }
        }
        if let Some(revision) = &adapter.revision
            && (revision.is_empty()
                || revision
                    .chars()
                    .any(|c| c.is_whitespace() || c.is_control()))
        {
            push(
                at("revision"),
                "a revision is a branch, tag or commit without spaces: fix or remove it"
                    .to_string(),
            );
        }
        if let Some(rank) = adapter.max_rank
            && !(1..=512).contains(&rank)
        {
            push(
                at("maxRank"),
                format!("maxRank {rank} is out of range: use 1 to 512"),
            );
        }
    }
    errors
}

/// The placeholder of an adapter model pattern replaced by the base model's name.
pub const MODEL_PLACEHOLDER: &str = "{model}";
/// The placeholder of an adapter model pattern replaced by the adapter's name.
pub const ADAPTER_PLACEHOLDER: &str = "{adapter}";
/// The model name clients request an adapter under when a provider's registration gives no
/// pattern (`gateway.adapterModelPattern`): the adapter's name, as vLLM's `--lora-modules`
/// serves it.
pub const DEFAULT_ADAPTER_MODEL_PATTERN: &str = "{adapter}";

/// The model name clients request `adapter` under, by a provider's `pattern`
/// ([`DEFAULT_ADAPTER_MODEL_PATTERN`] when it registers none), `model` being the name the base
/// model is served under. One definition for the provider that serves the adapter and the
/// core's gateway, which routes it.
pub fn adapter_model_name(pattern: Option<&str>, model: &str, adapter: &str) -> String {
    // One pass: a placeholder inside a name is never expanded.
    pattern
        .unwrap_or(DEFAULT_ADAPTER_MODEL_PATTERN)
        .split(ADAPTER_PLACEHOLDER)
        .map(|piece| piece.replace(MODEL_PLACEHOLDER, model))
        .collect::<Vec<_>>()
        .join(adapter)
}

/// The revision a Hugging Face adapter is served at (`main` when omitted).
pub fn revision(adapter: &LoraAdapter) -> &str {
    adapter.revision.as_deref().unwrap_or("main")
}

/// vLLM's `--max-lora-rank` for `adapters`: the smallest rank vLLM accepts ([`VLLM_LORA_RANKS`])
/// at or above the largest `maxRank`; `None` when no adapter gives one (vLLM's default, 16).
pub fn vllm_max_lora_rank(adapters: &[LoraAdapter]) -> Option<i32> {
    let largest = adapters.iter().filter_map(|a| a.max_rank).max()?;
    VLLM_LORA_RANKS
        .iter()
        .copied()
        .find(|rank| *rank >= largest)
        .or(VLLM_LORA_RANKS.last().copied())
}

/// How far the deployment's serving got, as the adapters' states follow it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Serving<'a> {
    /// The provider refused the deployment (`ProviderCompatible=False`): the message.
    Refused(&'a str),
    /// The serving workload failed (phase `Failed`): the message.
    Failed(&'a str),
    /// Nothing serving created yet.
    NotCreated,
    /// Created; its pods are not (all) ready yet, or a new generation rolls out.
    Starting,
    /// Scaled to zero: no replica serves.
    ScaledToZero,
    /// The workload serving the adapters is ready.
    Ready,
}

/// Message of an adapter waiting for its workload to be created.
pub const PENDING_MESSAGE: &str = "Waiting for the serving workload to be created";
/// Message of an adapter whose workload is starting or rolling out.
pub const LOADING_MESSAGE: &str =
    "Rendered into the engine's arguments; waiting for the serving pods to become ready";
/// Message of an adapter of a deployment scaled to zero.
pub const SCALED_TO_ZERO_MESSAGE: &str = "No replica serves: the deployment is scaled to zero";

/// Start of `AdaptersDownloaded`'s message while adapters download: then `<name>: <progress>`
/// per adapter not yet downloaded, separated by `; `.
pub const ADAPTER_DOWNLOAD_IN_PROGRESS: &str = "Adapter download in progress: ";
/// Start of `AdaptersDownloaded`'s message when an adapter's cache failed: then
/// `<name>: <the cache's message>`.
pub const ADAPTER_DOWNLOAD_FAILED: &str = "Adapter download failed: ";
/// Start of `AdaptersDownloaded`'s message once every adapter is downloaded: then the names,
/// separated by `, `.
pub const ADAPTERS_DOWNLOADED: &str = "Adapters downloaded: ";
/// Separator of the entries of [`ADAPTER_DOWNLOAD_IN_PROGRESS`].
const ENTRY_SEPARATOR: &str = "; ";

/// How far one adapter's cache is, as the core reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdapterFetch {
    /// Not there yet: what it waits for, or the download's progress.
    Downloading(String),
    /// On the claim.
    Ready,
    /// The cache failed: its message.
    Failed(String),
}

/// The `AdaptersDownloaded` condition for `fetches` (adapter name, how far its cache is; in
/// list order): `(status, reason, message)`. The first failure fails it
/// (`DownloadFailed`, `Adapter download failed: sql: <why>`); otherwise any adapter not yet on
/// the claim keeps it `False` (`DownloadInProgress`, `Adapter download in progress: sql: 42%
/// (3/5 files, 4.0 GiB); chat: <what it waits for>`, naming only those); once all are, `True`
/// (`DownloadComplete`, `Adapters downloaded: sql, chat`). One definition for the core, which
/// writes it, and the provider SDK, which reads it back ([`downloading_adapters`],
/// [`downloaded_adapters`]).
pub fn adapter_downloads_condition(
    fetches: &[(String, AdapterFetch)],
) -> (bool, &'static str, String) {
    use crate::constants::reasons;
    if let Some((name, why)) = fetches.iter().find_map(|(name, fetch)| match fetch {
        AdapterFetch::Failed(why) => Some((name, why)),
        _ => None,
    }) {
        return (
            false,
            reasons::DOWNLOAD_FAILED,
            format!("{ADAPTER_DOWNLOAD_FAILED}{name}: {why}"),
        );
    }
    let downloading: Vec<String> = fetches
        .iter()
        .filter_map(|(name, fetch)| match fetch {
            // The separator never appears inside an entry, so the entries read back whole.
            AdapterFetch::Downloading(progress) => Some(format!(
                "{name}: {}",
                progress.replace(ENTRY_SEPARATOR, ", ")
            )),
            _ => None,
        })
        .collect();
    if !downloading.is_empty() {
        return (
            false,
            reasons::DOWNLOAD_IN_PROGRESS,
            format!(
                "{ADAPTER_DOWNLOAD_IN_PROGRESS}{}",
                downloading.join(ENTRY_SEPARATOR)
            ),
        );
    }
    let mut names: Vec<&str> = fetches.iter().map(|(name, _)| name.as_str()).collect();
    names.dedup();
    (
        true,
        reasons::DOWNLOAD_COMPLETE,
        format!("{ADAPTERS_DOWNLOADED}{}", names.join(", ")),
    )
}

/// The adapters an `AdaptersDownloaded` message in progress names, each with its progress
/// (empty for any other message).
pub fn downloading_adapters(message: &str) -> Vec<(&str, &str)> {
    message
        .strip_prefix(ADAPTER_DOWNLOAD_IN_PROGRESS)
        .map(|entries| {
            entries
                .split(ENTRY_SEPARATOR)
                .filter_map(|entry| entry.split_once(": "))
                .collect()
        })
        .unwrap_or_default()
}

/// The adapters a complete `AdaptersDownloaded` message names (empty for any other message).
pub fn downloaded_adapters(message: &str) -> Vec<&str> {
    message
        .strip_prefix(ADAPTERS_DOWNLOADED)
        .map(|names| names.split(", ").collect())
        .unwrap_or_default()
}

/// `status.adapters[]` for `md`: one entry per adapter of `spec.adapters`, in its order, with
/// the state `serving` gives every adapter (they are loaded together, at start). Empty when the
/// spec lists none. While nothing serves yet, an adapter the core's `AdaptersDownloaded`
/// condition names as downloading (fetched through the model cache) is `Downloading`, with its
/// cache's progress as message.
pub fn adapter_statuses(md: &ModelDeployment, serving: &Serving<'_>) -> Vec<AdapterStatus> {
    let downloading: Vec<(&str, &str)> = match serving {
        Serving::NotCreated => md
            .condition(crate::constants::condition_types::ADAPTERS_DOWNLOADED)
            .filter(|c| {
                c.status == crate::v1alpha1::ConditionStatus::False
                    && c.reason.as_deref() == Some(crate::constants::reasons::DOWNLOAD_IN_PROGRESS)
            })
            .and_then(|c| c.message.as_deref())
            .map(downloading_adapters)
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let (state, message) = match serving {
        Serving::Refused(message) | Serving::Failed(message) => {
            (AdapterState::Failed, Some(message.to_string()))
        }
        Serving::NotCreated => (AdapterState::Pending, Some(PENDING_MESSAGE.to_string())),
        Serving::Starting => (AdapterState::Loading, Some(LOADING_MESSAGE.to_string())),
        Serving::ScaledToZero => (
            AdapterState::Pending,
            Some(SCALED_TO_ZERO_MESSAGE.to_string()),
        ),
        Serving::Ready => (AdapterState::Ready, None),
    };
    md.spec
        .lora_adapters()
        .iter()
        .map(|adapter| {
            let progress = downloading
                .iter()
                .find(|(name, _)| *name == adapter.name)
                .map(|(_, progress)| progress.to_string());
            AdapterStatus {
                name: adapter.name.clone(),
                source: Some(adapter.source.clone()),
                state: Some(if progress.is_some() {
                    AdapterState::Downloading
                } else {
                    state
                }),
                message: progress.or_else(|| message.clone()),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn md(spec: serde_json::Value) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "n"}, "spec": spec
        }))
        .unwrap()
    }

    #[test]
    fn sources_parse_by_scheme() {
        assert_eq!(
            parse_source("org/sql-lora"),
            Ok(AdapterSource::HuggingFace("org/sql-lora"))
        );
        assert_eq!(
            parse_source("hf://org/sql.lora_v2"),
            Ok(AdapterSource::HuggingFace("org/sql.lora_v2"))
        );
        assert_eq!(
            parse_source("https://example.com/a/b.tar"),
            Ok(AdapterSource::Https("https://example.com/a/b.tar"))
        );
        assert_eq!(
            parse_source("s3://bucket/loras/sql"),
            Ok(AdapterSource::S3("s3://bucket/loras/sql"))
        );
        assert_eq!(
            parse_source("gs://bucket/loras/sql"),
            Ok(AdapterSource::Gcs("gs://bucket/loras/sql"))
        );
        assert_eq!(
            parse_source("pvc://adapters/sql/v1/"),
            Ok(AdapterSource::Pvc {
                claim: "adapters",
                path: "sql/v1"
            })
        );
        assert_eq!(
            parse_source("pvc://adapters"),
            Ok(AdapterSource::Pvc {
                claim: "adapters",
                path: ""
            })
        );
    }

    #[test]
    fn refused_sources_say_why_and_list_the_forms() {
        for (source, why) in [
            ("ftp://host/x", "unknown scheme"),
            ("http://host/x", "unknown scheme"),
            (
                "justaname",
                "\"justaname\" is neither a URI nor a Hugging Face repository id",
            ),
            (
                "a/b/c",
                "\"a/b/c\" is neither a URI nor a Hugging Face repository id",
            ),
            ("hf://org", "\"org\" is not a Hugging Face repository id"),
            ("s3://bucket", "an s3 source needs a bucket and a path"),
            ("gs://bucket/", "a gs source needs a bucket and a path"),
            ("https://host", "an https source needs a host and a path"),
            (
                "pvc://Claim/x",
                "\"Claim\" is not a PersistentVolumeClaim name",
            ),
            (
                "pvc://claim/../etc",
                "the path \"../etc\" inside claim claim must not contain \".\", \"..\" or spaces",
            ),
        ] {
            assert_eq!(
                parse_source(source),
                Err(format!("{why}: use {SOURCE_FORMS}")),
                "{source}"
            );
        }
    }

    #[test]
    fn names_are_checked_for_form_uniqueness_and_the_base_model() {
        let errors = adapter_errors(&md(json!({
            "model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"},
            "adapters": [
                {"name": "sql", "source": "org/sql"},
                {"name": "sql", "source": "org/sql2"},
                {"name": "Bad_Name", "source": "org/x"},
                {"name": "Qwen3-0.6B", "source": "org/y"},
                {"name": "-x", "source": "org/z"}
            ]
        })));
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.adapters[1].name",
                "spec.adapters[2].name",
                "spec.adapters[3].name",
                "spec.adapters[3].name",
                "spec.adapters[4].name"
            ]
        );
        assert_eq!(
            errors[0].message,
            "adapter name \"sql\" is listed twice: names must be unique"
        );
        assert!(
            errors[1]
                .message
                .starts_with("\"Bad_Name\" is not an adapter name")
        );
        assert!(errors[3].message.contains("is the base model's name"));
    }

    #[test]
    fn revisions_only_on_hugging_face_and_engines_that_serve_adapters() {
        let errors = adapter_errors(&md(json!({
            "model": {"id": "a/b"}, "engine": {"type": "llamacpp"},
            "adapters": [
                {"name": "one", "source": "s3://bucket/one", "revision": "v1"},
                {"name": "two", "source": "hf://org/two", "revision": "v2", "maxRank": 600}
            ]
        })));
        assert_eq!(
            errors,
            vec![
                AdapterError {
                    field: "spec.adapters".into(),
                    message: "engine llamacpp does not serve LoRA adapters in AI Runway: remove spec.adapters, or use engine vllm or sglang".into()
                },
                AdapterError {
                    field: "spec.adapters[0].revision".into(),
                    message: "a revision applies to a Hugging Face source only, not to a s3 source: remove it, or put the version in the source".into()
                },
                AdapterError {
                    field: "spec.adapters[1].maxRank".into(),
                    message: "maxRank 600 is out of range: use 1 to 512".into()
                },
            ]
        );
        assert!(
            adapter_errors(&md(
                json!({"model": {"id": "a/b"}, "engine": {"type": "trtllm"}})
            ))
            .is_empty(),
            "no adapters, nothing to say"
        );
    }

    #[test]
    fn the_rank_is_the_next_one_vllm_accepts() {
        let adapters = |ranks: &[Option<i32>]| -> Vec<LoraAdapter> {
            ranks
                .iter()
                .map(|r| LoraAdapter {
                    max_rank: *r,
                    ..LoraAdapter::default()
                })
                .collect()
        };
        assert_eq!(vllm_max_lora_rank(&adapters(&[None, None])), None);
        assert_eq!(vllm_max_lora_rank(&adapters(&[Some(4), None])), Some(8));
        assert_eq!(
            vllm_max_lora_rank(&adapters(&[Some(8), Some(16)])),
            Some(16)
        );
        assert_eq!(vllm_max_lora_rank(&adapters(&[Some(300)])), Some(320));
        assert_eq!(vllm_max_lora_rank(&adapters(&[Some(512)])), Some(512));
        assert_eq!(vllm_max_lora_rank(&adapters(&[Some(1)])), Some(1));
    }

    #[test]
    fn statuses_follow_the_serving_workload() {
        let md = md(json!({"model": {"id": "a/b"},
            "adapters": [{"name": "one", "source": "org/one"}, {"name": "two", "source": "pvc://c/two"}]}));
        let ready = adapter_statuses(&md, &Serving::Ready);
        assert_eq!(
            serde_json::to_value(&ready).unwrap(),
            json!([{"name": "one", "source": "org/one", "state": "Ready"},
                   {"name": "two", "source": "pvc://c/two", "state": "Ready"}])
        );
        let refused = adapter_statuses(&md, &Serving::Refused("no LoRA here"));
        assert_eq!(refused[1].state, Some(AdapterState::Failed));
        assert_eq!(refused[1].message.as_deref(), Some("no LoRA here"));
        assert_eq!(
            adapter_statuses(&md, &Serving::Starting)[0].state,
            Some(AdapterState::Loading)
        );
        assert_eq!(
            adapter_statuses(&md, &Serving::NotCreated)[0]
                .message
                .as_deref(),
            Some(PENDING_MESSAGE)
        );
        assert_eq!(
            adapter_statuses(&md, &Serving::ScaledToZero)[0].state,
            Some(AdapterState::Pending)
        );
        let none = super::tests::md(json!({"model": {"id": "a/b"}}));
        assert!(adapter_statuses(&none, &Serving::Ready).is_empty());
    }

    #[test]
    fn adapter_model_names_follow_the_pattern() {
        assert_eq!(adapter_model_name(None, "qwen", "sql"), "sql");
        assert_eq!(
            adapter_model_name(Some("{model}:{adapter}"), "Qwen/Qwen3-0.6B", "sql"),
            "Qwen/Qwen3-0.6B:sql"
        );
        // A placeholder in a name is not expanded again.
        assert_eq!(
            adapter_model_name(Some("{adapter}"), "m", "{model}"),
            "{model}"
        );
        assert_eq!(
            adapter_model_name(Some("{model}:{adapter}"), "{adapter}", "sql"),
            "{adapter}:sql"
        );
    }

    fn fetches(list: &[(&str, AdapterFetch)]) -> Vec<(String, AdapterFetch)> {
        list.iter()
            .map(|(name, fetch)| (name.to_string(), fetch.clone()))
            .collect()
    }

    #[test]
    fn the_downloads_condition_names_each_adapter_and_reads_back() {
        let progress = AdapterFetch::Downloading("42% (3/5 files, 4.0 GiB)".into());
        let waiting = AdapterFetch::Downloading("waiting; for the Job".into());
        let (status, reason, message) = adapter_downloads_condition(&fetches(&[
            ("sql", progress),
            ("tone", AdapterFetch::Ready),
            ("chat", waiting),
        ]));
        assert!(!status);
        assert_eq!(reason, "DownloadInProgress");
        assert_eq!(
            message,
            "Adapter download in progress: sql: 42% (3/5 files, 4.0 GiB); chat: waiting, for the Job"
        );
        assert_eq!(
            downloading_adapters(&message),
            [
                ("sql", "42% (3/5 files, 4.0 GiB)"),
                ("chat", "waiting, for the Job")
            ]
        );
        assert!(downloaded_adapters(&message).is_empty());
        let (status, reason, message) = adapter_downloads_condition(&fetches(&[
            ("sql", AdapterFetch::Ready),
            ("chat", AdapterFetch::Ready),
        ]));
        assert!(status);
        assert_eq!(reason, "DownloadComplete");
        assert_eq!(message, "Adapters downloaded: sql, chat");
        assert_eq!(downloaded_adapters(&message), ["sql", "chat"]);
        assert!(downloading_adapters(&message).is_empty());
        let (status, reason, message) = adapter_downloads_condition(&fetches(&[
            ("sql", AdapterFetch::Downloading("1%".into())),
            (
                "chat",
                AdapterFetch::Failed("HTTP 404 for adapter_config.json".into()),
            ),
        ]));
        assert!(!status);
        assert_eq!(reason, "DownloadFailed");
        assert_eq!(
            message,
            "Adapter download failed: chat: HTTP 404 for adapter_config.json"
        );
    }

    #[test]
    fn adapters_fetched_through_the_cache_show_downloading_with_their_progress() {
        let mut md = md(json!({"model": {"id": "a/b"},
            "adapters": [{"name": "one", "source": "org/one"},
                         {"name": "two", "source": "pvc://c/two"},
                         {"name": "three", "source": "org/three"}]}));
        md.status = Some(
            serde_json::from_value(json!({"conditions": [{"type": "AdaptersDownloaded",
                "status": "False", "reason": "DownloadInProgress",
                "message": "Adapter download in progress: one: 42% (3/5 files, 4.0 GiB)",
                "lastTransitionTime": "2026-01-01T00:00:00Z"}]}))
            .unwrap(),
        );
        let statuses = adapter_statuses(&md, &Serving::NotCreated);
        assert_eq!(
            serde_json::to_value(&statuses).unwrap(),
            json!([
                {"name": "one", "source": "org/one", "state": "Downloading",
                 "message": "42% (3/5 files, 4.0 GiB)"},
                {"name": "two", "source": "pvc://c/two", "state": "Pending",
                 "message": PENDING_MESSAGE},
                {"name": "three", "source": "org/three", "state": "Pending",
                 "message": PENDING_MESSAGE}
            ])
        );
        // Once the workload exists, the serving state is what counts.
        assert_eq!(
            adapter_statuses(&md, &Serving::Starting)[0].state,
            Some(AdapterState::Loading)
        );
        // A failed download fails the deployment: every adapter Failed with its message.
        assert_eq!(
            adapter_statuses(&md, &Serving::Failed("Adapter download failed: one: 404"))[0]
                .message
                .as_deref(),
            Some("Adapter download failed: one: 404")
        );
    }
}
