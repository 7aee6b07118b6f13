//! What KubeRay can serve (pure), with the spec's messages: the SDK's
//! [`vllm_kit::compat`](airunway_api::provider::vllm_kit::compat) check (a Ray Serve vLLM
//! application), aggregated or disaggregated.

use airunway_api::provider::Incompatible;
use airunway_api::provider::vllm_kit::compat::{self, Disaggregation, VllmGap};
use airunway_api::v1alpha1::{EngineType, ModelDeployment};

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

/// The message for `scaling.replicas: 0`: a RayCluster always runs its head pod, so KubeRay
/// has no zero (its workers at 0 would still hold the head); the minimum is 1.
pub const NO_ZERO: &str = "KubeRay cannot scale a RayService to zero: the Ray head pod always runs (workers at 0 would still hold it and serve nothing); set scaling.replicas to 1 or more (or delete the ModelDeployment)";

/// `Ok` when KubeRay can serve `md`, else the user-facing reason.
pub fn check(md: &ModelDeployment) -> Result<(), Incompatible> {
    compat::check(md, Disaggregation::Served).map_err(|gap| {
        Incompatible::new(match gap {
            VllmGap::NoEngine => compat::NO_ENGINE.to_string(),
            VllmGap::OtherEngine(engine) => unsupported_engine(engine),
            VllmGap::NoGpu | VllmGap::Disaggregated => REQUIRES_GPU.to_string(),
            VllmGap::NoComponent(role) | VllmGap::NoComponentGpu(role) => {
                disaggregated_requires_gpu(role.as_str())
            }
            VllmGap::NoModelId => REQUIRES_MODEL_ID.to_string(),
        })
    })?;
    if md.spec.replicas() == 0 {
        return Err(Incompatible::new(NO_ZERO));
    }
    // LoRA adapters render through Ray Serve LLM's `lora_config` only from one storage
    // prefix (`crate::lora`).
    crate::lora::check(md).map_err(Incompatible::new)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use airunway_api::serde_json::{self, json};

    fn md(adapters: airunway_api::serde_json::Value) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns"},
            "spec": {"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"},
                     "resources": {"gpu": {"count": 1}}, "adapters": adapters}}))
        .unwrap()
    }

    #[test]
    fn adapters_under_one_prefix_are_served_and_others_refused_with_the_reason() {
        assert_eq!(
            check(&md(
                json!([{"name": "sql", "source": "s3://bucket/loras/sql"}])
            )),
            Ok(())
        );
        assert_eq!(
            check(&md(json!([{"name": "sql", "source": "hf://org/sql-lora"}]))),
            Err(Incompatible::new(crate::lora::source_refused(
                0,
                "Hugging Face",
                "sql"
            )))
        );
    }
}
