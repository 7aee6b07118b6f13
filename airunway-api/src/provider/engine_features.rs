//! The engine features a deployment asks for (LoRA adapters, tool calling and reasoning
//! parsers) checked against what the provider's registration declares for the engine, so a
//! provider named explicitly never ignores them silently.

use crate::v1alpha1::{InferenceProviderConfigSpec, ModelDeployment};

/// `Err(message)` when `md` asks for a feature `registration` does not declare for the
/// deployment's engine; `Ok` when it asks for none, or no engine is resolved yet.
pub fn check_declared(
    display_name: &str,
    registration: &InferenceProviderConfigSpec,
    md: &ModelDeployment,
) -> Result<(), String> {
    let adapters = !md.spec.lora_adapters().is_empty();
    let parsers = md.spec.wants_engine_parsers();
    if !adapters && !parsers {
        return Ok(());
    }
    let Some(engine) = md.resolved_engine() else {
        return Ok(());
    };
    let capability = registration
        .capabilities
        .as_ref()
        .map(|c| c.engine_capabilities())
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.name == engine);
    let (lora, tools) = capability
        .map(|c| (c.lora_support, c.tool_calling_support))
        .unwrap_or((false, false));
    if adapters && !lora {
        return Err(format!(
            "{display_name} does not serve LoRA adapters with engine {engine}: remove spec.adapters, or choose a provider that declares loraSupport for {engine}"
        ));
    }
    if parsers && !tools {
        return Err(format!(
            "{display_name} does not render tool calling or reasoning parsers with engine {engine}: remove spec.engine.toolCalling, toolCallParser and reasoningParser, or choose a provider that declares toolCallingSupport for {engine}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1alpha1::{
        EngineCapability, EngineCapabilityEntry, EngineType, ProviderCapabilities, ServingMode,
    };
    use serde_json::json;

    fn registration(lora: bool, tools: bool) -> InferenceProviderConfigSpec {
        InferenceProviderConfigSpec {
            capabilities: Some(ProviderCapabilities {
                engines: Some(vec![EngineCapabilityEntry::Detailed(EngineCapability {
                    lora_support: lora,
                    tool_calling_support: tools,
                    ..EngineCapability::new(
                        EngineType::Vllm,
                        vec![ServingMode::Aggregated],
                        true,
                        false,
                    )
                })]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn md(spec: serde_json::Value) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "n"}, "spec": spec
        }))
        .unwrap()
    }

    #[test]
    fn adapters_need_lora_support_for_the_engine() {
        let with_adapters = md(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"},
            "adapters": [{"name": "sql", "source": "hf://org/sql-lora"}]}));
        assert_eq!(
            check_declared("Example", &registration(false, true), &with_adapters),
            Err("Example does not serve LoRA adapters with engine vllm: remove spec.adapters, or choose a provider that declares loraSupport for vllm".into())
        );
        assert_eq!(
            check_declared("Example", &registration(true, false), &with_adapters),
            Ok(())
        );
    }

    #[test]
    fn parsers_need_tool_calling_support_for_the_engine() {
        let reasoning = md(
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm", "reasoningParser": "qwen3"}}),
        );
        let refused = check_declared("Example", &registration(true, false), &reasoning);
        assert!(refused.unwrap_err().starts_with(
            "Example does not render tool calling or reasoning parsers with engine vllm"
        ));
        assert_eq!(
            check_declared("Example", &registration(false, true), &reasoning),
            Ok(())
        );
        let plain =
            md(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm", "toolCalling": false}}));
        assert_eq!(
            check_declared("Example", &registration(false, false), &plain),
            Ok(())
        );
    }
}
