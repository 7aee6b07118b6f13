//! What Dynamo can serve (pure), with the spec's messages.

use airunway_api::v1alpha1::{ComponentScaling, EngineType, ModelDeployment, ServingMode};

/// `Ok` when Dynamo can serve `md`, else the user-facing reason.
pub fn check(md: &ModelDeployment) -> Result<(), String> {
    let spec = &md.spec;
    let engine = md
        .resolved_engine()
        .ok_or_else(|| "No engine selected yet".to_string())?;
    if engine == EngineType::Llamacpp {
        return Err("Dynamo does not support llamacpp engine".to_string());
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
