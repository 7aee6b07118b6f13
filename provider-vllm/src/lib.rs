//! # airunway-provider-vllm
//!
//! The AI Runway direct vLLM provider: each ModelDeployment that names `vllm` becomes one plain
//! vLLM `apps/v1 Deployment` and one `v1 Service` named after it, the way to serve a model on a
//! cluster with no KAITO, Dynamo, Ray or llm-d installed. Its "upstream operator" is Kubernetes
//! itself: the provider is always ready, needs no CRD, and its status comes from the real
//! Deployment conditions. It is explicit-only (no selection rule), vLLM on GPUs, aggregated.
//!
//! Thin over the SDK: the vLLM compatibility checks, the Deployment/Service render, the
//! overrides and the Deployment status translator are the SDK's [`vllm_kit`] (llm-d uses the
//! same); this crate adds its messages ([`compat`]), the direct vLLM command line and
//! networking rule ([`render`]) and the image reference rules ([`image`]).

pub mod compat;
pub mod image;
pub mod prepare;
pub mod registry;
pub mod render;

use std::sync::OnceLock;

use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::vllm_kit::render::Component;
use airunway_api::provider::vllm_kit::{self, status, workload};
use airunway_api::provider::{
    Incompatible, OverrideSchema, Preparation, Provider, RenderError, Rendered, TranslatedStatus,
    UpstreamKind, UpstreamSchema, primary,
};
use airunway_api::v1alpha1::{
    EngineCapability, EngineCapabilityEntry, EngineType, InferenceProviderConfigSpec,
    ModelDeployment, ProviderCapabilities, ServingMode, WorkloadStatus,
};

/// The provider name (and InferenceProviderConfig name).
pub const NAME: &str = "vllm";

/// The documentation link in the registration.
pub const DOCUMENTATION: &str =
    "https://github.com/airunway/airunway/blob/main/docs/providers/vllm.md";

/// The direct vLLM provider.
#[derive(Clone, Debug)]
pub struct VllmProvider {
    default_image: String,
}

impl Default for VllmProvider {
    /// The provider with the reference's default image, [`image::DEFAULT_IMAGE`].
    fn default() -> VllmProvider {
        VllmProvider::with_default_image(image::DEFAULT_IMAGE)
    }
}

impl VllmProvider {
    /// The provider running `default_image` for deployments that name no image
    /// (`--default-image`).
    pub fn with_default_image(default_image: impl Into<String>) -> VllmProvider {
        VllmProvider {
            default_image: default_image.into(),
        }
    }

    /// The image deployments that name none run (before resolution).
    pub fn default_image(&self) -> &str {
        &self.default_image
    }

    /// The image `md` runs: `engine.image` (or the legacy `spec.image`), else the default image
    /// pinned to the digest `status.image` resolved for it, else its tag.
    pub fn image_for(&self, md: &ModelDeployment) -> String {
        prepare::image_to_run(md, &self.default_image)
    }

    /// Resolves `md`'s image (reusing `status.image` when the requested reference is
    /// unchanged).
    pub async fn resolve_image(&self, md: &ModelDeployment) -> Preparation {
        let default_image = self.default_image.as_str();
        let outcome = match prepare::next_step(md, default_image) {
            prepare::Step::Reuse(previous) => prepare::Outcome::Reused(previous),
            prepare::Step::Pinned(parsed) => {
                let digest = parsed.digest.clone().unwrap_or_default();
                prepare::Outcome::Resolved(parsed, digest.as_str().into())
            }
            prepare::Step::Invalid(message) => prepare::Outcome::Failed(None, message),
            prepare::Step::Resolve(parsed) => match resolver() {
                Err(message) => prepare::Outcome::Failed(Some(parsed), message),
                Ok(resolver) => match resolver.resolve(&parsed).await {
                    Ok(found) => prepare::Outcome::Resolved(parsed, found),
                    Err(error) => prepare::Outcome::Failed(Some(parsed), error.to_string()),
                },
            },
        };
        prepare::preparation(md, default_image, &outcome)
    }
}

/// The process's registry client (built once; `None` when no trust roots could be loaded).
fn resolver() -> Result<&'static registry::Resolver, String> {
    static RESOLVER: OnceLock<Result<registry::Resolver, String>> = OnceLock::new();
    RESOLVER
        .get_or_init(|| {
            registry::Resolver::new(registry::DEFAULT_TIMEOUT).map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(Clone::clone)
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
        // Tool calling and reasoning parsers as vLLM flags (`vllm_kit::parsers`).
        vllm.tool_calling_support = true;
        // spec.adapters: loaded at start with --enable-lora/--lora-modules (docs/lora.md).
        vllm.lora_support = true;
        InferenceProviderConfigSpec {
            capabilities: Some(ProviderCapabilities {
                engines: Some(vec![EngineCapabilityEntry::Detailed(vllm)]),
                // Mounts model.storage volumes where the engine runs and waits for the model cache.
                model_storage: Some(true),
                ..Default::default()
            }),
            // Explicit-only: no selection rule, so the core never picks vLLM on its own.
            selection_rules: None,
            documentation: Some(DOCUMENTATION.into()),
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
        render::render(deployment, &self.image_for(deployment))
    }

    fn prepare(
        &self,
        deployment: &ModelDeployment,
    ) -> impl std::future::Future<Output = Preparation> + Send {
        self.resolve_image(deployment)
    }

    fn translate_status(
        &self,
        deployment: &ModelDeployment,
        upstream: &[Option<&DynamicObject>],
    ) -> TranslatedStatus {
        let name = deployment.metadata.name.as_deref().unwrap_or_default();
        status::translate(&[(name, primary(upstream))], name)
    }

    /// The Deployment (role `aggregated`), its pods selected by its own selector
    /// (`airunway.ai/deployment: <name>, app: <name>`), container `vllm`, port 8000.
    fn workload(
        &self,
        deployment: &ModelDeployment,
        upstream: &[Option<&DynamicObject>],
    ) -> Option<WorkloadStatus> {
        Some(workload::workload(
            deployment,
            &[Component::aggregated(deployment)],
            upstream,
        ))
    }
}

#[cfg(test)]
mod docs_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The page shows the declared overrides exactly as the SDK renders them.
    #[test]
    fn the_docs_show_the_declared_overrides() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/providers/vllm.md");
        let page = std::fs::read_to_string(path).unwrap();
        let table = VllmProvider::default().overrides().markdown();
        assert!(
            page.contains(&table),
            "docs/providers/vllm.md must contain the declared overrides:\n{table}"
        );
    }
}
