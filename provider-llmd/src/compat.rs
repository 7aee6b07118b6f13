//! What llm-d can serve (pure), with the spec's messages: the SDK's
//! [`vllm_kit::compat`](airunway_api::provider::vllm_kit::compat) check, aggregated or
//! disaggregated.

use airunway_api::provider::Incompatible;
use airunway_api::provider::vllm_kit;
use airunway_api::provider::vllm_kit::compat::{self, Disaggregation, VllmGap};
use airunway_api::v1alpha1::ModelDeployment;

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

/// `Ok` when llm-d can serve `md`, else the user-facing reason.
pub fn check(md: &ModelDeployment) -> Result<(), Incompatible> {
    compat::check(md, Disaggregation::Served).map_err(|gap| {
        Incompatible::new(match gap {
            VllmGap::NoEngine => compat::NO_ENGINE.to_string(),
            VllmGap::OtherEngine(_) => ONLY_VLLM.to_string(),
            VllmGap::NoGpu | VllmGap::Disaggregated => REQUIRES_GPU.to_string(),
            VllmGap::NoComponent(role) => component_required(role.as_str()),
            VllmGap::NoComponentGpu(role) => component_requires_gpu(role.as_str()),
            VllmGap::NoModelId => REQUIRES_MODEL_ID.to_string(),
        })
    })?;
    // The adapters' sources vLLM can load (docs/lora.md).
    vllm_kit::lora::check(md).map_err(Incompatible::new)
}
