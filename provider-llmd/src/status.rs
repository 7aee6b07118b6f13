//! The deployment status from the live vLLM Deployments (pure): the SDK's Deployment
//! translator ([`vllm_kit::status`](airunway_api::provider::vllm_kit::status)) over the
//! aggregated Deployment, or the decode and prefill ones (replicas summed), with the primary
//! Service (`<name>` or `<name>-decode`) as the endpoint on port 8000.

use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::TranslatedStatus;
use airunway_api::provider::vllm_kit::status;
use airunway_api::v1alpha1::ModelDeployment;

use crate::render::components;

/// The status from `live`: the Deployments in render order (the primary first); entries past
/// the Deployments (the Services) are not read.
pub fn translate(md: &ModelDeployment, live: &[Option<&DynamicObject>]) -> TranslatedStatus {
    let components = components(md);
    let deployments: Vec<(&str, Option<&DynamicObject>)> = components
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.as_str(), live.get(i).copied().flatten()))
        .collect();
    let service = components
        .first()
        .map(|c| c.name.as_str())
        .unwrap_or_default();
    status::translate(&deployments, service)
}
