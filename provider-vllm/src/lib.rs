//! # airunway-provider-vllm
//!
//! The AI Runway direct vLLM provider: each ModelDeployment that names `vllm` becomes one plain
//! vLLM `apps/v1 Deployment` and one `v1 Service` named after it, the way to serve a model on a
//! cluster with no KAITO, Dynamo, Ray or llm-d installed. Its "upstream operator" is Kubernetes
//! itself: the provider is always ready, needs no CRD, and its status comes from the real
//! Deployment conditions. It is explicit-only (no selection rule), vLLM on GPUs, aggregated.
//!
//! Thin over the SDK: the Deployment/Service render, the overrides and the Deployment status
//! translator are the shared [`workload`] module (llm-d uses the same); this crate adds
//! [`compat`], the direct vLLM command line and networking rule ([`render`]) and the image
//! reference rules ([`image`]).

pub mod compat;
pub mod image;
pub mod render;

use airunway_api::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::workload::{self, status};
use airunway_api::provider::{
    Provider, RenderError, Rendered, RenderedSet, SchemaDetection, TranslatedStatus, UpstreamKind,
    UpstreamSchema,
};
use airunway_api::v1alpha1::{
    EngineCapability, EngineCapabilityEntry, EngineType, InferenceProviderConfigSpec,
    ModelDeployment, ProviderCapabilities, ServingMode,
};

/// The provider name (and InferenceProviderConfig name).
pub const NAME: &str = "vllm";

/// The documentation link in the registration.
pub const DOCUMENTATION: &str =
    "https://github.com/airunway/airunway/blob/main/docs/providers/vllm.md";

/// The direct vLLM provider.
#[derive(Clone, Copy, Debug, Default)]
pub struct VllmProvider;

/// The image `md` runs: `engine.image` (or the legacy `spec.image`), else the default.
pub fn image_for(md: &ModelDeployment) -> String {
    md.spec
        .image_override()
        .unwrap_or(image::DEFAULT_IMAGE)
        .to_string()
}

impl Provider for VllmProvider {
    fn name(&self) -> &str {
        NAME
    }

    fn display_name(&self) -> &str {
        "vLLM"
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn registration(&self) -> InferenceProviderConfigSpec {
        let mut vllm =
            EngineCapability::new(EngineType::Vllm, vec![ServingMode::Aggregated], true, false);
        vllm.requires_crd = Some(false);
        InferenceProviderConfigSpec {
            capabilities: Some(ProviderCapabilities {
                engines: Some(vec![EngineCapabilityEntry::Detailed(vllm)]),
                ..Default::default()
            }),
            // Explicit-only: no selection rule, so the core never picks vLLM on its own.
            selection_rules: None,
            documentation: Some(DOCUMENTATION.into()),
            probe: None,
            override_paths: None,
        }
    }

    fn upstream(&self) -> UpstreamKind {
        workload::deployment_kind()
    }

    fn secondary_kinds(&self) -> Vec<UpstreamKind> {
        vec![workload::service_kind()]
    }

    fn detect_schema(&self, _crd: Option<&CustomResourceDefinition>) -> SchemaDetection {
        workload::builtin_schema()
    }

    fn check_compatibility(&self, deployment: &ModelDeployment) -> Result<(), String> {
        compat::check(deployment)
    }

    fn render(
        &self,
        deployment: &ModelDeployment,
        schema: &UpstreamSchema,
    ) -> Result<Rendered, RenderError> {
        workload::primary(self.render_set(deployment, schema)?, self.display_name())
    }

    fn render_set(
        &self,
        deployment: &ModelDeployment,
        _schema: &UpstreamSchema,
    ) -> Result<RenderedSet, RenderError> {
        render::render(deployment, &image_for(deployment))
    }

    fn translate_status(
        &self,
        deployment: &ModelDeployment,
        upstream: Option<&DynamicObject>,
    ) -> TranslatedStatus {
        let name = deployment.metadata.name.as_deref().unwrap_or_default();
        status::translate(&[(name, upstream)], name)
    }
}
