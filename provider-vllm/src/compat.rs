//! What the direct vLLM provider can serve (pure), with the reference's messages: vLLM on GPUs,
//! aggregated.

use airunway_api::v1alpha1::{EngineType, ModelDeployment, ServingMode};

/// Disaggregated serving (prefill and decode) is llm-d's, Dynamo's or KubeRay's.
pub const NO_DISAGGREGATED: &str =
    "vLLM provider does not support disaggregated serving mode; use spec.serving.mode: aggregated";

/// No GPUs.
pub const REQUIRES_GPU: &str =
    "vLLM provider requires GPU resources (spec.resources.gpu.count > 0)";

/// No model id (vLLM's `--model`).
pub const REQUIRES_MODEL_ID: &str = "vLLM provider requires spec.model.id (the model vLLM serves)";

/// Any engine but vLLM.
pub fn only_vllm(engine: &str) -> String {
    format!("vLLM provider only supports vllm engine, got {engine}")
}

/// `Ok` when the direct vLLM provider can serve `md`, else the user-facing reason.
pub fn check(md: &ModelDeployment) -> Result<(), String> {
    let spec = &md.spec;
    let engine = md
        .resolved_engine()
        .ok_or_else(|| "No engine selected yet".to_string())?;
    if engine != EngineType::Vllm {
        return Err(only_vllm(engine.as_str()));
    }
    if spec.serving_mode() == ServingMode::Disaggregated {
        return Err(NO_DISAGGREGATED.to_string());
    }
    if spec.gpu_count() <= 0 {
        return Err(REQUIRES_GPU.to_string());
    }
    if spec.model.id.as_deref().is_none_or(str::is_empty) {
        return Err(REQUIRES_MODEL_ID.to_string());
    }
    Ok(())
}
