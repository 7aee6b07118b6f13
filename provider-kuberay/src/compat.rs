//! What KubeRay can serve (pure), with the spec's messages.

use airunway_api::v1alpha1::{ComponentScaling, EngineType, ModelDeployment, ServingMode};

/// The message for an engine KubeRay does not run (design doc §8 compatibility table).
pub fn unsupported_engine(engine: EngineType) -> String {
    format!("KubeRay does not support {} engine", engine.as_str())
}

/// The message for a deployment without GPUs.
pub const REQUIRES_GPU: &str = "KubeRay requires GPU (set resources.gpu.count > 0)";

/// The message for a deployment without a model id (the Serve application loads it).
pub const REQUIRES_MODEL_ID: &str =
    "KubeRay requires model.id (the model the Ray Serve application loads)";

/// The message for a disaggregated deployment missing the GPU count of `role`
/// (`prefill` or `decode`).
pub fn disaggregated_requires_gpu(role: &str) -> String {
    format!("KubeRay disaggregated mode requires scaling.{role}.gpu.count > 0")
}

fn component_gpus(component: Option<&ComponentScaling>) -> i32 {
    component
        .and_then(|c| c.gpu.as_ref())
        .and_then(|g| g.count)
        .unwrap_or(0)
}

/// `Ok` when KubeRay can serve `md`, else the user-facing reason.
pub fn check(md: &ModelDeployment) -> Result<(), String> {
    let spec = &md.spec;
    let engine = md
        .resolved_engine()
        .ok_or_else(|| "No engine selected yet".to_string())?;
    if engine != EngineType::Vllm {
        return Err(unsupported_engine(engine));
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
                if component_gpus(component) <= 0 {
                    return Err(disaggregated_requires_gpu(role));
                }
            }
        }
    }
    if spec.model.id.as_deref().is_none_or(str::is_empty) {
        return Err(REQUIRES_MODEL_ID.to_string());
    }
    Ok(())
}
