//! What the direct vLLM provider can serve (pure), with the reference's messages: the SDK's
//! [`vllm_kit::compat`](airunway_api::provider::vllm_kit::compat) check, aggregated only.

use airunway_api::provider::Incompatible;
use airunway_api::provider::vllm_kit;
use airunway_api::provider::vllm_kit::compat::{self, Disaggregation, VllmGap};
use airunway_api::v1alpha1::ModelDeployment;

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
pub fn check(md: &ModelDeployment) -> Result<(), Incompatible> {
    compat::check(md, Disaggregation::NotServed).map_err(|gap| {
        Incompatible::new(match gap {
            VllmGap::NoEngine => compat::NO_ENGINE.to_string(),
            VllmGap::OtherEngine(engine) => only_vllm(engine.as_str()),
            VllmGap::Disaggregated | VllmGap::NoComponent(_) | VllmGap::NoComponentGpu(_) => {
                NO_DISAGGREGATED.to_string()
            }
            VllmGap::NoGpu => REQUIRES_GPU.to_string(),
            VllmGap::NoModelId => REQUIRES_MODEL_ID.to_string(),
        })
    })?;
    // The adapters' sources vLLM can load (docs/lora.md).
    vllm_kit::lora::check(md).map_err(Incompatible::new)
}
