//! # airunway-provider-llmd
//!
//! The AI Runway provider for [llm-d](https://github.com/llm-d/llm-d): each ModelDeployment
//! assigned to `llmd` becomes vLLM `apps/v1 Deployment`s and `v1 Service`s (one of each when
//! aggregated; prefill and decode ones when disaggregated), which the Gateway API Inference
//! Extension's scheduler (the llm-d endpoint picker named in the registration) routes to.
//! llm-d has no CRD: its "upstream operator" is Kubernetes itself, so the provider is always
//! ready and its status comes from the real Deployment conditions. It is explicit-only (no
//! selection rule). The pure parts are [`compat`], [`render`] (with [`overrides`]) and
//! [`status`]; the vLLM compatibility checks, the Deployment/Service render, the overrides and
//! the Deployment status translator are the SDK's [`vllm_kit`] (shared with the direct vLLM
//! provider).

pub mod compat;
pub mod overrides;
pub mod render;
pub mod status;

use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::vllm_kit;
use airunway_api::provider::{
    Incompatible, OverrideSchema, Provider, RenderError, Rendered, TranslatedStatus, UpstreamKind,
    UpstreamSchema,
};
use airunway_api::v1alpha1::{
    EndpointPicker, EngineCapability, EngineCapabilityEntry, EngineType, GatewayCapability,
    InferenceProviderConfigSpec, ModelDeployment, ProviderCapabilities, ServingMode,
    WorkloadStatus,
};

/// The provider name (and InferenceProviderConfig name).
pub const NAME: &str = "llmd";

/// The endpoint picker the gateway runs for llm-d deployments.
pub const ENDPOINT_PICKER_IMAGE: &str = "ghcr.io/llm-d/llm-d-inference-scheduler:v0.6.0";

/// The endpoint picker's plugin configuration: prefix-cache aware scoring among decode pods.
pub const ENDPOINT_PICKER_CONFIG: &str = "\
apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: prefix-cache-scorer
- type: decode-filter
- type: max-score-picker
- type: single-profile-handler
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: decode-filter
  - pluginRef: max-score-picker
  - pluginRef: prefix-cache-scorer
    weight: 2
";

/// The llm-d provider.
#[derive(Clone, Copy, Debug, Default)]
pub struct LlmdProvider;

impl Provider for LlmdProvider {
    fn name(&self) -> &str {
        NAME
    }

    fn display_name(&self) -> &str {
        "llm-d"
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn registration(&self) -> InferenceProviderConfigSpec {
        let mut vllm = EngineCapability::new(
            EngineType::Vllm,
            vec![ServingMode::Aggregated, ServingMode::Disaggregated],
            true,
            false,
        );
        vllm.requires_crd = Some(false);
        // Tool calling and reasoning parsers as vLLM flags (`vllm_kit::parsers`).
        vllm.tool_calling_support = true;
        // spec.adapters: loaded at start with --enable-lora/--lora-modules (docs/lora.md).
        vllm.lora_support = true;
        vllm.gateway = Some(GatewayCapability {
            endpoint_picker: Some(EndpointPicker {
                image: Some(ENDPOINT_PICKER_IMAGE.into()),
                config_data: Some(ENDPOINT_PICKER_CONFIG.into()),
            }),
            ..Default::default()
        });
        InferenceProviderConfigSpec {
            capabilities: Some(ProviderCapabilities {
                engines: Some(vec![EngineCapabilityEntry::Detailed(vllm)]),
                // Mounts model.storage volumes where the engine runs and waits for the model cache.
                model_storage: Some(true),
                ..Default::default()
            }),
            // Explicit-only: no selection rule, so the core never picks llm-d on its own.
            selection_rules: None,
            documentation: Some(
                "https://github.com/airunway/airunway/blob/main/docs/providers/llmd.md".into(),
            ),
            // The SDK adds the probe endpoint and the override paths (`overrides`).
            ..Default::default()
        }
    }

    fn upstream(&self) -> UpstreamKind {
        vllm_kit::deployment_kind()
    }

    fn secondary_kinds(&self) -> Vec<UpstreamKind> {
        vec![vllm_kit::service_kind()]
    }

    /// The Deployments' Pods carry `airunway.ai/deployment`: their state says why a deployment
    /// is not ready (capacity, image, crash; see `airunway_api::provider::pod_state`).
    fn pod_watch_selector(&self) -> Option<String> {
        Some(airunway_api::constants::labels::DEPLOYMENT.to_string())
    }

    fn overrides(&self) -> OverrideSchema {
        vllm_kit::overrides::SCHEMA
    }

    fn check_compatibility(&self, deployment: &ModelDeployment) -> Result<(), Incompatible> {
        compat::check(deployment)
    }

    fn render(
        &self,
        deployment: &ModelDeployment,
        _schema: &UpstreamSchema,
    ) -> Result<Rendered, RenderError> {
        render::render(deployment)
    }

    fn translate_status(
        &self,
        deployment: &ModelDeployment,
        upstream: &[Option<&DynamicObject>],
    ) -> TranslatedStatus {
        status::translate(deployment, upstream)
    }

    fn workload(
        &self,
        deployment: &ModelDeployment,
        upstream: &[Option<&DynamicObject>],
    ) -> Option<WorkloadStatus> {
        Some(status::workload(deployment, upstream))
    }
}

#[cfg(test)]
mod docs_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The page shows the declared overrides exactly as the SDK renders them.
    #[test]
    fn the_docs_show_the_declared_overrides() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/providers/llmd.md");
        let page = std::fs::read_to_string(path).unwrap();
        let table = LlmdProvider.overrides().markdown();
        assert!(
            page.contains(&table),
            "docs/providers/llmd.md must contain the declared overrides:\n{table}"
        );
    }
}
