//! ModelDeployment → vLLM Deployments and Services (pure), on the SDK's
//! [`vllm_kit`](airunway_api::provider::vllm_kit) render.
//!
//! - Aggregated: Deployment and Service `<name>`, pods labelled `llm-d.ai/role: both`.
//! - Disaggregated: Deployments and Services `<name>-decode` and `<name>-prefill` (in that
//!   order: the decode Deployment is the primary object and `<name>-decode` the endpoint), each
//!   with its component's replicas times `scaling.replicas` (`ModelDeploymentSpec::role_replicas`:
//!   the scale subresource scales both roles in units of their ratio, 0 stops both), GPUs (`scaling.<role>.gpu`) and memory, pods labelled
//!   `llm-d.ai/role: decode|prefill` (what the llm-d inference scheduler's decode filter
//!   reads) and vLLM's KV-transfer role: `--kv-transfer-config
//!   {"kv_connector":"PyNcclConnector","kv_role":"kv_consumer"|"kv_producer"}`.
//! - Image: `engine.image`, else the legacy `spec.image`, else [`DEFAULT_IMAGE`].
//! - `provider.overrides` deep-merged into every Deployment (see [`crate::overrides`]).

use std::collections::BTreeMap;

use airunway_api::provider::vllm_kit::render::{self as workload, Component};
use airunway_api::provider::{RenderError, Rendered};
use airunway_api::serde_json::Value;
use airunway_api::v1alpha1::{ComponentScaling, ModelDeployment, ServingMode};

use crate::overrides;

/// The vLLM image when the deployment names none.
pub const DEFAULT_IMAGE: &str = "vllm/vllm-openai:v0.9.1";

/// The pod label llm-d's inference scheduler filters on.
pub const ROLE_LABEL: &str = "llm-d.ai/role";

/// The KV connector of the disaggregated roles.
pub const KV_CONNECTOR: &str = "PyNcclConnector";

/// The image to run.
pub fn image(md: &ModelDeployment) -> String {
    md.spec
        .image_override()
        .unwrap_or(DEFAULT_IMAGE)
        .to_string()
}

fn disaggregated(
    md: &ModelDeployment,
    role: &str,
    scaling: Option<&ComponentScaling>,
) -> Component {
    let name = md.metadata.name.clone().unwrap_or_default();
    let gpu = scaling.and_then(|s| s.gpu.as_ref());
    let kv_role = if role == "prefill" {
        "kv_producer"
    } else {
        "kv_consumer"
    };
    Component {
        name: format!("{name}-{role}"),
        // The role's ratio times `scaling.replicas` (the scale subresource's units).
        replicas: md.spec.role_replicas(scaling),
        gpus: gpu.and_then(|g| g.count).unwrap_or(0),
        gpu_type: gpu
            .and_then(|g| g.gpu_type.clone())
            .unwrap_or_else(|| airunway_api::resolve::DEFAULT_GPU_TYPE.to_string()),
        memory: scaling.and_then(|s| s.memory.clone()),
        cpu: None,
        args: vec![
            "--kv-transfer-config".to_string(),
            format!(r#"{{"kv_connector":"{KV_CONNECTOR}","kv_role":"{kv_role}"}}"#),
        ],
        pod_labels: BTreeMap::from([(ROLE_LABEL.to_string(), role.to_string())]),
        role: role.to_string(),
    }
}

/// The serving components of `md`: the aggregated one, or decode then prefill.
pub fn components(md: &ModelDeployment) -> Vec<Component> {
    match md.spec.serving_mode() {
        ServingMode::Aggregated => {
            let mut component = Component::aggregated(md);
            component
                .pod_labels
                .insert(ROLE_LABEL.to_string(), "both".to_string());
            vec![component]
        }
        ServingMode::Disaggregated => {
            let scaling = md.spec.scaling.as_ref();
            vec![
                disaggregated(md, "decode", scaling.and_then(|s| s.decode.as_ref())),
                disaggregated(md, "prefill", scaling.and_then(|s| s.prefill.as_ref())),
            ]
        }
    }
}

/// Every object of `md`: the Deployments (primary first), then the Services.
pub fn render(md: &ModelDeployment) -> Result<Rendered, RenderError> {
    let overrides_map = md.spec.provider.as_ref().and_then(|p| p.overrides.as_ref());
    let components = components(md);
    let image = image(md);
    let mut objects: Vec<Value> = components
        .iter()
        .map(|component| {
            let mut deployment = workload::deployment(md, component, &image);
            overrides::apply(&mut deployment, overrides_map)?;
            Ok(deployment)
        })
        .collect::<Result<_, RenderError>>()?;
    objects.extend(components.iter().map(|c| workload::service(md, c)));
    Ok(Rendered {
        objects,
        warnings: Vec::new(),
    })
}
