//! The deployment status from the live vLLM Deployments (pure): the SDK's Deployment
//! translator ([`vllm_kit::status`](airunway_api::provider::vllm_kit::status)) over the
//! aggregated Deployment, or the decode and prefill ones (replicas summed), with the primary
//! Service (`<name>` or `<name>-decode`) as the endpoint on port 8000; and `status.workload`
//! ([`workload`]).

use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::TranslatedStatus;
use airunway_api::provider::vllm_kit::{status, workload};
use airunway_api::v1alpha1::{ModelDeployment, WorkloadStatus};

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

/// `status.workload` from `live` (render order): the decode and prefill Deployments (or the
/// aggregated one) with their roles, the pods selected by `airunway.ai/deployment: <name>`
/// (and `app: <name>` when aggregated), container `vllm`, port 8000.
pub fn workload(md: &ModelDeployment, live: &[Option<&DynamicObject>]) -> WorkloadStatus {
    workload::workload(md, &components(md), live)
}
