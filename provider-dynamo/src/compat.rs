//! What Dynamo can serve (pure), with the spec's messages.

use airunway_api::v1alpha1::{ComponentScaling, EngineType, ModelDeployment, ServingMode};

/// Why a deployment with `spec.adapters` is refused: Dynamo loads LoRA adapters through its own
/// `DynamoModel` resource (`modelType: lora`, a `source.uri`, the base model named by a
/// `modelRef` on the workers, which run with `--enable-lora`), which this provider does not
/// render yet (docs/lora.md); its registration does not declare `loraSupport`, so selection
/// passes it over for a deployment with adapters.
pub const NO_ADAPTERS: &str = "Dynamo serves LoRA adapters through its DynamoModel resource (modelType: lora), which this provider does not create yet: remove spec.adapters, or name a provider that loads them in spec.provider.name (vllm, llmd or kaito)";

/// `Ok` when Dynamo can serve `md`, else the user-facing reason.
pub fn check(md: &ModelDeployment) -> Result<(), String> {
    let spec = &md.spec;
    let engine = md
        .resolved_engine()
        .ok_or_else(|| "No engine selected yet".to_string())?;
    if engine == EngineType::Llamacpp {
        return Err("Dynamo does not support llamacpp engine".to_string());
    }
    if !spec.lora_adapters().is_empty() {
        return Err(NO_ADAPTERS.to_string());
    }
    match spec.serving_mode() {
        ServingMode::Aggregated => {
            if spec.gpu_count() == 0 {
                return Err("Dynamo requires GPU (set resources.gpu.count > 0)".to_string());
            }
        }
        ServingMode::Disaggregated => {
            if engine == EngineType::Trtllm {
                return Err("Dynamo does not support disaggregated mode with the trtllm engine in this provider version".to_string());
            }
            let scaling = spec.scaling.as_ref();
            let gpus = |c: Option<&ComponentScaling>| {
                c.and_then(|c| c.gpu.as_ref())
                    .and_then(|g| g.count)
                    .unwrap_or(0)
            };
            if gpus(scaling.and_then(|s| s.prefill.as_ref())) == 0 {
                return Err(
                    "Dynamo disaggregated mode requires scaling.prefill.gpu.count > 0".to_string(),
                );
            }
            if gpus(scaling.and_then(|s| s.decode.as_ref())) == 0 {
                return Err(
                    "Dynamo disaggregated mode requires scaling.decode.gpu.count > 0".to_string(),
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use airunway_api::serde_json::{self, json};

    #[test]
    fn adapters_are_refused_with_the_reason_and_the_providers_that_load_them() {
        let md: ModelDeployment = serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns"},
            "spec": {"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"},
                     "resources": {"gpu": {"count": 1}},
                     "adapters": [{"name": "sql", "source": "hf://org/sql"}]}}))
        .unwrap();
        assert_eq!(check(&md), Err(NO_ADAPTERS.to_string()));
        let mut plain = md;
        plain.spec.adapters = None;
        assert_eq!(check(&plain), Ok(()));
    }
}
