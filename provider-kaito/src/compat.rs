//! What KAITO can serve (pure), with the spec's messages.

use airunway_api::v1alpha1::{EngineType, ModelDeployment, ModelSource, ServingMode};

/// Why a deployment with `model.storage` volumes is refused: a Workspace cannot mount a claim
/// on the pods that run the model (the registration says `modelStorage: false`).
pub const NO_STORAGE: &str = "KAITO cannot mount model.storage volumes: a vLLM preset Workspace has no field for volumes on its inference pods (KAITO builds those pods and downloads the weights itself), and the llama.cpp template's server loads its model from its huggingface:// URL, not from a Hugging Face cache; remove spec.model.storage, or name a provider that mounts it in spec.provider.name (llmd, vllm, dynamo or kuberay)";

/// Why KAITO refuses tool calling and reasoning parsers with vLLM: a preset Workspace takes no
/// vLLM flags (the registration does not declare `toolCallingSupport`).
pub const NO_PARSERS_VLLM: &str = "KAITO does not render spec.engine.toolCalling, toolCallParser or reasoningParser: its vLLM presets take no vLLM flags; remove them and pass vLLM's --enable-auto-tool-choice, --tool-call-parser and --reasoning-parser through a KAITO inference ConfigMap (provider.overrides inference.config), or name a provider that renders them in spec.provider.name (llmd, vllm, dynamo or kuberay)";

/// Why KAITO refuses parsers with llama.cpp.
pub const NO_PARSERS_LLAMACPP: &str = "engine llamacpp has no tool-call or reasoning parser to choose: remove spec.engine.toolCalling, toolCallParser and reasoningParser";
/// The most adapters a Workspace takes (KAITO's `MaxAdaptersNumber`).
pub const MAX_ADAPTERS: usize = 10;

/// The longest adapter name on KAITO: its volume is named `adapter-volume-<name>`, a DNS-1123
/// label of at most 63 characters.
pub const MAX_ADAPTER_NAME_LENGTH: usize = 48;

/// Why KAITO cannot serve `md`'s adapters (docs/lora.md): KAITO loads them into vLLM presets
/// only, at most [`MAX_ADAPTERS`], each from an image or a volume mounted whole at
/// `/mnt/adapter/<name>` (not from URLs), so here from the root of a claim (`pvc://<claim>`),
/// named as a DNS-1123 label of at most [`MAX_ADAPTER_NAME_LENGTH`] characters.
pub fn check_adapters(md: &ModelDeployment) -> Result<(), String> {
    let adapters = md.spec.lora_adapters();
    if adapters.is_empty() {
        return Ok(());
    }
    if md.resolved_engine() != Some(EngineType::Vllm) {
        return Err("KAITO loads LoRA adapters into vLLM presets only: remove spec.adapters, or use engine vllm".to_string());
    }
    if adapters.len() > MAX_ADAPTERS {
        return Err(format!(
            "KAITO takes at most {MAX_ADAPTERS} adapters per Workspace, spec.adapters lists {}: remove some, or name provider vllm or llmd",
            adapters.len()
        ));
    }
    for (index, adapter) in adapters.iter().enumerate() {
        if !airunway_api::kubernetes_names::is_dns1123_label(&adapter.name)
            || adapter.name.len() > MAX_ADAPTER_NAME_LENGTH
        {
            return Err(format!(
                "spec.adapters[{index}].name: KAITO names the adapter's volume adapter-volume-<name>: use lower-case letters, digits and '-', at most {MAX_ADAPTER_NAME_LENGTH} characters"
            ));
        }
        match airunway_api::lora::parse_source(&adapter.source) {
            Ok(airunway_api::lora::AdapterSource::Pvc { path: "", .. }) | Err(_) => {}
            Ok(airunway_api::lora::AdapterSource::Pvc { claim, .. }) => {
                return Err(format!(
                    "spec.adapters[{index}].source: KAITO mounts a volume adapter whole as the adapter's directory, so it cannot pick a directory inside claim {claim}: put the adapter at the claim's root and use pvc://{claim}"
                ));
            }
            Ok(other) => {
                return Err(format!(
                    "spec.adapters[{index}].source: KAITO loads adapters from an image or a volume, not from a {} source: copy the adapter to the root of a PersistentVolumeClaim and use pvc://<claim>, or name provider vllm or llmd",
                    other.kind()
                ));
            }
        }
    }
    Ok(())
}

/// `Ok` when KAITO can serve `md`, else the user-facing reason.
pub fn check(md: &ModelDeployment) -> Result<(), String> {
    let spec = &md.spec;
    if spec.serving_mode() == ServingMode::Disaggregated {
        return Err("KAITO does not support disaggregated mode".to_string());
    }
    check_adapters(md)?;
    if !airunway_api::storage::resolved_volumes(md).is_empty() {
        return Err(NO_STORAGE.to_string());
    }
    match md.resolved_engine() {
        None => Err("No engine selected yet".to_string()),
        Some(EngineType::Sglang) => Err("KAITO does not support sglang engine".to_string()),
        Some(EngineType::Trtllm) => Err("KAITO does not support trtllm engine".to_string()),
        // engine.image counts as well as the legacy spec.image (the Go AI Runway looks at
        // spec.image only, so an engine.image-only manifest is refused there: not copied).
        Some(EngineType::Llamacpp) if spec.image_override().is_none() => Err(
            "engine.image (or the legacy spec.image) is required for the llamacpp engine on KAITO (a llama.cpp server image, e.g. ghcr.io/sozercan/llama-cpp-runner:latest)"
                .to_string(),
        ),
        Some(EngineType::Llamacpp)
            if spec.engine.as_ref().and_then(|e| e.args.as_ref()).is_some_and(|a| {
                a.contains_key(crate::render::GGUF_URL_ARG)
                    && a.contains_key(crate::render::MODEL_FILE_ARG)
            }) =>
        {
            Err("engine.args.ggufUrl and engine.args.model-file both name the model file: set one".to_string())
        }
        Some(EngineType::Vllm) if !spec.gpu_requested() => {
            Err("KAITO serves vLLM on GPU only (set resources.gpu.count > 0)".to_string())
        }
        Some(EngineType::Vllm) if spec.model_source() == ModelSource::Custom => Err(
            "KAITO serves vLLM from presets, which load the model from Hugging Face: set model.source to huggingface or use the llamacpp engine with spec.image"
                .to_string(),
        ),
        Some(EngineType::Llamacpp) if spec.wants_engine_parsers() => {
            Err(NO_PARSERS_LLAMACPP.to_string())
        }
        Some(EngineType::Vllm) if spec.wants_engine_parsers() => Err(NO_PARSERS_VLLM.to_string()),
        _ if spec.replicas() == 0 => Err(
            "KAITO cannot scale a Workspace to zero: set scaling.replicas to 1 or more (or delete the ModelDeployment)".to_string(),
        ),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use airunway_api::serde_json::{self, json};

    fn md(engine: serde_json::Value, gpus: i64) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "n"},
            "spec": {"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": engine,
                     "image": "example/llama:1", "resources": {"gpu": {"count": gpus}}}
        }))
        .unwrap()
    }

    #[test]
    fn parsers_are_refused_naming_the_way_out() {
        assert_eq!(
            check(&md(json!({"type": "vllm", "toolCalling": true}), 1)),
            Err(NO_PARSERS_VLLM.to_string())
        );
        assert_eq!(
            check(&md(json!({"type": "vllm", "reasoningParser": "qwen3"}), 1)),
            Err(NO_PARSERS_VLLM.to_string())
        );
        assert_eq!(
            check(&md(
                json!({"type": "llamacpp", "reasoningParser": "qwen3"}),
                0
            )),
            Err(NO_PARSERS_LLAMACPP.to_string())
        );
        assert_eq!(
            check(&md(json!({"type": "vllm", "toolCalling": false}), 1)),
            Ok(())
        );
    }
}
