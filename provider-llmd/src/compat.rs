//! What llm-d can serve (pure), with the spec's messages.

use airunway_api::v1alpha1::{ComponentScaling, EngineType, ModelDeployment, ServingMode};

/// Any engine but vLLM (spec: provider compatibility table).
pub const ONLY_VLLM: &str = "llm-d only supports vllm engine";

/// An aggregated deployment without GPUs (spec: provider compatibility table).
pub const REQUIRES_GPU: &str = "llm-d requires GPU";

/// A deployment without a model id (vLLM's `--model`).
pub const REQUIRES_MODEL_ID: &str = "llm-d requires model.id (the model vLLM serves)";

/// A disaggregated deployment without `scaling.<role>`.
pub fn component_required(role: &str) -> String {
    format!("spec.scaling.{role} is required for disaggregated serving mode")
}

/// A disaggregated deployment without GPUs for `role`.
pub fn component_requires_gpu(role: &str) -> String {
    format!("{REQUIRES_GPU} for {role} (spec.scaling.{role}.gpu.count > 0)")
}

fn gpus(component: &ComponentScaling) -> i32 {
    component.gpu.as_ref().and_then(|g| g.count).unwrap_or(0)
}

/// `Ok` when llm-d can serve `md`, else the user-facing reason.
pub fn check(md: &ModelDeployment) -> Result<(), String> {
    let spec = &md.spec;
    let engine = md
        .resolved_engine()
        .ok_or_else(|| "No engine selected yet".to_string())?;
    if engine != EngineType::Vllm {
        return Err(ONLY_VLLM.to_string());
    }
    match spec.serving_mode() {
        ServingMode::Aggregated => {
            if spec.gpu_count() <= 0 {
                return Err(REQUIRES_GPU.to_string());
            }
        }
        ServingMode::Disaggregated => {
            let scaling = spec.scaling.as_ref();
            for (role, component) in [
                ("prefill", scaling.and_then(|s| s.prefill.as_ref())),
                ("decode", scaling.and_then(|s| s.decode.as_ref())),
            ] {
                let Some(component) = component else {
                    return Err(component_required(role));
                };
                if gpus(component) <= 0 {
                    return Err(component_requires_gpu(role));
                }
            }
        }
    }
    if spec.model.id.as_deref().is_none_or(str::is_empty) {
        return Err(REQUIRES_MODEL_ID.to_string());
    }
    Ok(())
}
