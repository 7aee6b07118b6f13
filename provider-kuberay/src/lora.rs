//! LoRA adapters through Ray Serve LLM's `lora_config` (pure, docs/lora.md).
//!
//! Ray Serve LLM loads adapters on demand from one storage prefix
//! (`lora_config.dynamic_lora_loading_path`, `s3://` or `gs://` in AI Runway's source grammar):
//! each adapter is the sub-directory of that prefix named by its id, and clients request it as
//! the model `<model_id>:<adapter id>`. So `spec.adapters` renders when every source is an
//! `s3://` or `gs://` URI, all under one prefix, each ending in a directory named like the
//! adapter; that prefix becomes `dynamic_lora_loading_path`, the number of adapters
//! `max_num_adapters_per_replica` (every adapter fits each replica's cache), and vLLM's engine
//! keyword arguments get `enable_lora: true`, `max_loras` (the number of adapters) and
//! `max_lora_rank` ([`vllm_max_lora_rank`]), each unless `engine.args` sets it (the user's
//! value wins). Anything else is refused by [`check`], naming the field and the fix.

use airunway_api::lora::{AdapterSource, parse_source, vllm_max_lora_rank};
use airunway_api::serde_json::{Map, Value, json};
use airunway_api::v1alpha1::{LoraAdapter, ModelDeployment};

/// The Ray Serve LLM config key holding the LoRA settings.
pub const LORA_CONFIG: &str = "lora_config";
/// The `lora_config` key naming the storage prefix the adapters are loaded from.
pub const LOADING_PATH: &str = "dynamic_lora_loading_path";
/// The `lora_config` key bounding how many adapters one replica keeps loaded.
pub const MAX_ADAPTERS_PER_REPLICA: &str = "max_num_adapters_per_replica";
/// The vLLM engine keyword argument turning LoRA on.
pub const ENABLE_LORA: &str = "enable_lora";
/// The vLLM engine keyword argument bounding the adapters in one batch.
pub const MAX_LORAS: &str = "max_loras";
/// The vLLM engine keyword argument bounding the adapters' rank.
pub const MAX_LORA_RANK: &str = "max_lora_rank";
/// What separates the model from the adapter in the model name clients request.
pub const MODEL_ADAPTER_SEPARATOR: char = ':';

/// What the render writes for `spec.adapters`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoraPlan {
    /// `dynamic_lora_loading_path`: the prefix every adapter's directory is in.
    pub loading_path: String,
    /// The number of adapters (`max_num_adapters_per_replica`, `max_loras`).
    pub adapters: usize,
    /// `max_lora_rank`, when an adapter gives a rank.
    pub max_lora_rank: Option<i32>,
}

/// The refusal of a source Ray Serve LLM cannot load adapters from (Hugging Face, `pvc://`,
/// `https://`).
pub fn source_refused(index: usize, kind: &str, name: &str) -> String {
    format!(
        "spec.adapters[{index}].source: KubeRay's Ray Serve LLM loads LoRA adapters from one s3:// or gs:// prefix (lora_config.dynamic_lora_loading_path), not from a {kind} source: copy the adapter to s3://<bucket>/<prefix>/{name} (or gs://), or name a provider that loads it in spec.provider.name (vllm, llmd or kaito)"
    )
}

/// The refusal of a `revision` (Ray Serve LLM loads what the prefix holds).
pub fn revision_refused(index: usize) -> String {
    format!(
        "spec.adapters[{index}].revision: KubeRay's Ray Serve LLM loads an adapter as its storage prefix holds it and takes no revision: remove the revision, or copy that revision to its own directory under the prefix"
    )
}

/// The refusal of a source whose last path segment is not the adapter's name (Ray Serve LLM
/// serves each directory of the prefix under the directory's name).
pub fn name_mismatch(
    index: usize,
    source: &str,
    segment: &str,
    name: &str,
    prefix: &str,
) -> String {
    format!(
        "spec.adapters[{index}].source: KubeRay's Ray Serve LLM serves the adapter in {source} under its directory's name \"{segment}\", not \"{name}\": name the adapter {segment}, or copy it to {prefix}/{name}"
    )
}

/// The refusal of a source outside the prefix of `spec.adapters[0]` (Ray Serve LLM takes one
/// prefix per model).
pub fn prefix_mismatch(index: usize, source: &str, prefix: &str, name: &str) -> String {
    format!(
        "spec.adapters[{index}].source: KubeRay's Ray Serve LLM loads all adapters of a model from one prefix (lora_config.dynamic_lora_loading_path), and {source} is not in {prefix}, the prefix of spec.adapters[0]: copy the adapter to {prefix}/{name}"
    )
}

/// The refusal of a served model name containing [`MODEL_ADAPTER_SEPARATOR`]: Ray Serve LLM
/// splits `<model>:<adapter>` at the first `:`.
pub fn separator_in_model(field: &str, model: &str) -> String {
    format!(
        "{field}: \"{model}\" contains ':', which KubeRay's Ray Serve LLM reads as the separator of <model>:<adapter>: set model.servedName to a name without ':' to serve spec.adapters"
    )
}

/// The model id Ray Serve LLM serves (`model_loading_config.model_id`): `model.servedName`,
/// else `model.id`; clients request an adapter as `<model id>:<adapter name>`.
pub fn model_id(md: &ModelDeployment) -> String {
    md.spec
        .model
        .served_name
        .clone()
        .filter(|n| !n.is_empty())
        .or_else(|| md.spec.model.id.clone())
        .unwrap_or_default()
}

/// The model name Ray Serve LLM serves an adapter under, as the registration tells the core's
/// gateway (`gateway.adapterModelPattern`).
pub const ADAPTER_MODEL_PATTERN: &str = "{model}:{adapter}";

/// The model name a client requests `adapter` under: `<model id>:<adapter name>`
/// ([`ADAPTER_MODEL_PATTERN`]).
pub fn request_model(md: &ModelDeployment, adapter: &LoraAdapter) -> String {
    airunway_api::lora::adapter_model_name(
        Some(ADAPTER_MODEL_PATTERN),
        &model_id(md),
        &adapter.name,
    )
}

/// An `s3://`/`gs://` source split at its last segment: `(prefix, segment)`, trailing `/`
/// ignored.
fn split_prefix(uri: &str) -> Option<(&str, &str)> {
    let (prefix, segment) = uri.trim_end_matches('/').rsplit_once('/')?;
    let prefix = prefix.trim_end_matches('/');
    (!segment.is_empty() && !prefix.ends_with(':')).then_some((prefix, segment))
}

/// What the render writes for `md`'s adapters: `Ok(None)` without adapters, the first refusal
/// (naming the field and the fix) when Ray Serve LLM cannot load them as listed. A source
/// that does not parse is left to validation (refused there).
pub fn check(md: &ModelDeployment) -> Result<Option<LoraPlan>, String> {
    let adapters = md.spec.lora_adapters();
    if adapters.is_empty() {
        return Ok(None);
    }
    let model = model_id(md);
    if model.contains(MODEL_ADAPTER_SEPARATOR) {
        let field = if md
            .spec
            .model
            .served_name
            .as_deref()
            .is_some_and(|n| !n.is_empty())
        {
            "model.servedName"
        } else {
            "model.id"
        };
        return Err(separator_in_model(field, &model));
    }
    let mut loading_path: Option<&str> = None;
    for (index, adapter) in adapters.iter().enumerate() {
        let Ok(source) = parse_source(&adapter.source) else {
            continue;
        };
        let uri = match source {
            AdapterSource::S3(uri) | AdapterSource::Gcs(uri) => uri,
            other => return Err(source_refused(index, other.kind(), &adapter.name)),
        };
        if adapter.revision.is_some() {
            return Err(revision_refused(index));
        }
        let Some((prefix, segment)) = split_prefix(uri) else {
            continue;
        };
        let path = *loading_path.get_or_insert(prefix);
        if prefix != path {
            return Err(prefix_mismatch(index, uri, path, &adapter.name));
        }
        if segment != adapter.name {
            return Err(name_mismatch(index, uri, segment, &adapter.name, prefix));
        }
    }
    Ok(loading_path.map(|path| LoraPlan {
        loading_path: path.to_string(),
        adapters: adapters.len(),
        max_lora_rank: vllm_max_lora_rank(adapters),
    }))
}

/// The warning when `engine.args` turns LoRA off while `spec.adapters` lists adapters.
pub const LORA_DISABLED: &str = "engine.args.enable-lora is false: vLLM will not load spec.adapters on KubeRay (requests for <model>:<adapter> fail); remove it, or remove spec.adapters";

/// The `lora_config` of `plan`.
pub fn lora_config(plan: &LoraPlan) -> Value {
    json!({LOADING_PATH: plan.loading_path, MAX_ADAPTERS_PER_REPLICA: plan.adapters})
}

/// Adds `plan`'s engine keyword arguments to `kwargs` (`enable_lora`, `max_loras`,
/// `max_lora_rank`), leaving a key `kwargs` already holds (from `engine.args`) as the user set
/// it; returns [`LORA_DISABLED`] when that leaves LoRA off.
pub fn add_engine_kwargs(plan: &LoraPlan, kwargs: &mut Map<String, Value>) -> Option<&'static str> {
    let mut derived = vec![
        (ENABLE_LORA, json!(true)),
        (MAX_LORAS, json!(plan.adapters)),
    ];
    if let Some(rank) = plan.max_lora_rank {
        derived.push((MAX_LORA_RANK, json!(rank)));
    }
    for (key, value) in derived {
        kwargs.entry(key).or_insert(value);
    }
    (kwargs.get(ENABLE_LORA) == Some(&Value::Bool(false))).then_some(LORA_DISABLED)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use airunway_api::serde_json;

    fn md(spec: Value) -> ModelDeployment {
        let mut spec = spec;
        if spec.get("model").is_none() {
            spec["model"] = json!({"id": "Qwen/Qwen3-0.6B"});
        }
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns"}, "spec": spec}))
        .unwrap()
    }

    fn with(adapters: Value) -> ModelDeployment {
        md(json!({"engine": {"type": "vllm"}, "adapters": adapters}))
    }

    #[test]
    fn one_prefix_renders_the_plan() {
        assert_eq!(check(&md(json!({"engine": {"type": "vllm"}}))), Ok(None));
        let two = with(json!([
            {"name": "sql", "source": "s3://bucket/loras/sql", "maxRank": 8},
            {"name": "support", "source": "s3://bucket/loras/support/", "maxRank": 12}]));
        assert_eq!(
            check(&two),
            Ok(Some(LoraPlan {
                loading_path: "s3://bucket/loras".into(),
                adapters: 2,
                max_lora_rank: Some(16),
            }))
        );
        let gs = with(json!([{"name": "tone", "source": "gs://b/tone"}]));
        assert_eq!(
            check(&gs),
            Ok(Some(LoraPlan {
                loading_path: "gs://b".into(),
                adapters: 1,
                max_lora_rank: None,
            }))
        );
        assert_eq!(
            request_model(&two, &two.spec.lora_adapters()[1]),
            "Qwen/Qwen3-0.6B:support"
        );
        let served = md(
            json!({"model": {"id": "Qwen/Qwen3-0.6B", "servedName": "qwen"},
            "adapters": [{"name": "sql", "source": "s3://b/sql"}]}),
        );
        assert_eq!(
            request_model(&served, &served.spec.lora_adapters()[0]),
            "qwen:sql"
        );
    }

    #[test]
    fn sources_ray_cannot_load_are_refused_naming_the_field_and_the_fix() {
        let hf = with(json!([
            {"name": "sql", "source": "s3://bucket/loras/sql"},
            {"name": "chat", "source": "hf://org/chat-lora"}]));
        assert_eq!(
            check(&hf),
            Err("spec.adapters[1].source: KubeRay's Ray Serve LLM loads LoRA adapters from one s3:// or gs:// prefix (lora_config.dynamic_lora_loading_path), not from a Hugging Face source: copy the adapter to s3://<bucket>/<prefix>/chat (or gs://), or name a provider that loads it in spec.provider.name (vllm, llmd or kaito)".into())
        );
        let pvc = with(json!([{"name": "sql", "source": "pvc://loras/sql"}]));
        assert_eq!(
            check(&pvc),
            Err("spec.adapters[0].source: KubeRay's Ray Serve LLM loads LoRA adapters from one s3:// or gs:// prefix (lora_config.dynamic_lora_loading_path), not from a pvc source: copy the adapter to s3://<bucket>/<prefix>/sql (or gs://), or name a provider that loads it in spec.provider.name (vllm, llmd or kaito)".into())
        );
        let https = with(json!([{"name": "sql", "source": "https://example.com/loras/sql"}]));
        assert_eq!(check(&https), Err(source_refused(0, "https", "sql")));
        let bare = with(json!([{"name": "sql", "source": "org/sql-lora"}]));
        assert_eq!(check(&bare), Err(source_refused(0, "Hugging Face", "sql")));
    }

    #[test]
    fn a_revision_is_refused() {
        let revision =
            with(json!([{"name": "sql", "source": "s3://b/loras/sql", "revision": "v2"}]));
        assert_eq!(
            check(&revision),
            Err("spec.adapters[0].revision: KubeRay's Ray Serve LLM loads an adapter as its storage prefix holds it and takes no revision: remove the revision, or copy that revision to its own directory under the prefix".into())
        );
    }

    #[test]
    fn another_prefix_is_refused() {
        let split = with(json!([
            {"name": "sql", "source": "s3://bucket/loras/sql"},
            {"name": "chat", "source": "s3://bucket/other/chat"}]));
        assert_eq!(
            check(&split),
            Err("spec.adapters[1].source: KubeRay's Ray Serve LLM loads all adapters of a model from one prefix (lora_config.dynamic_lora_loading_path), and s3://bucket/other/chat is not in s3://bucket/loras, the prefix of spec.adapters[0]: copy the adapter to s3://bucket/loras/chat".into())
        );
        let schemes = with(json!([
            {"name": "sql", "source": "s3://bucket/loras/sql"},
            {"name": "chat", "source": "gs://bucket/loras/chat"}]));
        assert_eq!(
            check(&schemes),
            Err(prefix_mismatch(
                1,
                "gs://bucket/loras/chat",
                "s3://bucket/loras",
                "chat"
            ))
        );
    }

    #[test]
    fn a_directory_named_otherwise_is_refused() {
        let renamed = with(json!([{"name": "sql", "source": "s3://bucket/loras/sql-v2"}]));
        assert_eq!(
            check(&renamed),
            Err("spec.adapters[0].source: KubeRay's Ray Serve LLM serves the adapter in s3://bucket/loras/sql-v2 under its directory's name \"sql-v2\", not \"sql\": name the adapter sql-v2, or copy it to s3://bucket/loras/sql".into())
        );
    }

    #[test]
    fn a_served_name_with_the_separator_is_refused() {
        let colon = md(
            json!({"model": {"id": "Qwen/Qwen3-0.6B", "servedName": "qwen:0.6b"},
            "adapters": [{"name": "sql", "source": "s3://b/sql"}]}),
        );
        assert_eq!(
            check(&colon),
            Err("model.servedName: \"qwen:0.6b\" contains ':', which KubeRay's Ray Serve LLM reads as the separator of <model>:<adapter>: set model.servedName to a name without ':' to serve spec.adapters".into())
        );
        let plain = md(json!({"model": {"id": "Qwen/Qwen3-0.6B", "servedName": "qwen:0.6b"}}));
        assert_eq!(check(&plain), Ok(None), "no adapters, no separator rule");
    }

    #[test]
    fn engine_kwargs_keep_the_users_values() {
        let plan = LoraPlan {
            loading_path: "s3://b/l".into(),
            adapters: 3,
            max_lora_rank: Some(64),
        };
        let mut kwargs = Map::new();
        assert_eq!(add_engine_kwargs(&plan, &mut kwargs), None);
        assert_eq!(
            Value::Object(kwargs),
            json!({"enable_lora": true, "max_loras": 3, "max_lora_rank": 64})
        );
        let mut user = Map::new();
        user.insert(MAX_LORAS.into(), json!(8));
        user.insert(MAX_LORA_RANK.into(), json!(128));
        assert_eq!(add_engine_kwargs(&plan, &mut user), None);
        assert_eq!(
            Value::Object(user),
            json!({"enable_lora": true, "max_loras": 8, "max_lora_rank": 128})
        );
        let mut off = Map::new();
        off.insert(ENABLE_LORA.into(), json!(false));
        assert_eq!(add_engine_kwargs(&plan, &mut off), Some(LORA_DISABLED));
        assert_eq!(
            lora_config(&plan),
            json!({"dynamic_lora_loading_path": "s3://b/l", "max_num_adapters_per_replica": 3})
        );
    }
}
