//! # airunway-provider-dynamo
//!
//! The AI Runway provider for [NVIDIA Dynamo](https://github.com/ai-dynamo/dynamo): each
//! ModelDeployment assigned to `dynamo` becomes a `nvidia.com` DynamoGraphDeployment. Dynamo is
//! the GPU default, the only SGLang and TensorRT-LLM provider, and the disaggregated
//! prefill/decode provider. The pure parts are [`compat`], [`render`], [`status`] and [`schema`].

pub mod compat;
pub mod intent;
pub mod parsers;
pub mod render;
pub mod schema;
pub mod status;
pub mod workload;

use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::{
    Degradation, Incompatible, Preparation, Provider, RenderError, Rendered, TranslatedStatus,
    UpstreamKind, UpstreamSchema, primary,
};
use airunway_api::provider::{OverrideSchema, SchemaAdapter};
use airunway_api::v1alpha1::{
    EngineCapability, EngineCapabilityEntry, EngineType, GatewayCapability,
    InferenceProviderConfigSpec, ModelDeployment, ProviderCapabilities, SelectionRule, ServingMode,
    WorkloadStatus,
};

/// The provider name (and InferenceProviderConfig name).
pub const NAME: &str = "dynamo";

/// The Dynamo provider.
#[derive(Clone, Copy, Debug, Default)]
pub struct DynamoProvider;

impl Provider for DynamoProvider {
    fn name(&self) -> &str {
        NAME
    }

    fn display_name(&self) -> &str {
        "Dynamo"
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn registration(&self) -> InferenceProviderConfigSpec {
        // Asked for the gateway (`spec.gateway.enabled: true`), the graph gets an endpoint
        // picker service and Dynamo's operator creates the InferencePool `<name>-pool`: the
        // core then creates only the route (docs/gateway.md).
        let engine = |name, serving_modes| {
            let mut capability = EngineCapability::new(name, serving_modes, true, false);
            // `--dyn-tool-call-parser`/`--dyn-reasoning-parser` on every worker (`parsers`).
            capability.tool_calling_support = true;
            capability.gateway = Some(GatewayCapability {
                manages_inference_pool: Some(true),
                inference_pool_name_pattern: Some(render::POOL_NAME_PATTERN.into()),
                ..Default::default()
            });
            EngineCapabilityEntry::Detailed(capability)
        };
        let both = || vec![ServingMode::Aggregated, ServingMode::Disaggregated];
        InferenceProviderConfigSpec {
            capabilities: Some(ProviderCapabilities {
                engines: Some(vec![
                    engine(EngineType::Vllm, both()),
                    engine(EngineType::Sglang, both()),
                    engine(EngineType::Trtllm, vec![ServingMode::Aggregated]),
                ]),
                // Mounts model.storage volumes where the engine runs and waits for the model cache.
                model_storage: Some(true),
                ..Default::default()
            }),
            selection_rules: Some(vec![
                // The only SGLang and TensorRT-LLM provider.
                SelectionRule {
                    condition: "spec.engine.type == 'trtllm' || spec.engine.type == 'sglang'"
                        .into(),
                    priority: 100,
                },
                // The disaggregated provider.
                SelectionRule {
                    condition: "spec.serving.mode == 'disaggregated'".into(),
                    priority: 90,
                },
                // The GPU default (CPU and llama.cpp work goes to KAITO at 100).
                SelectionRule {
                    condition: "has(spec.resources.gpu) && spec.resources.gpu.count > 0".into(),
                    priority: 50,
                },
            ]),
            documentation: Some(
                "https://github.com/airunway/airunway/blob/main/docs/providers/dynamo.md".into(),
            ),
            // The SDK adds the probe endpoint and the override paths (`overrides`).
            ..Default::default()
        }
    }

    fn upstream(&self) -> UpstreamKind {
        UpstreamKind {
            group: "nvidia.com".into(),
            kind: "DynamoGraphDeployment".into(),
            plural: "dynamographdeployments".into(),
            default_version: "v1alpha1".into(),
            from_crd: true,
        }
    }

    /// Intent mode's DynamoGraphDeploymentRequest ([`intent`]).
    fn secondary_kinds(&self) -> Vec<UpstreamKind> {
        vec![UpstreamKind {
            group: intent::GROUP.into(),
            kind: intent::REQUEST_KIND.into(),
            plural: intent::REQUEST_PLURAL.into(),
            default_version: intent::REQUEST_VERSION.into(),
            from_crd: true,
        }]
    }

    /// The graph an intent deployment's request created (`status.provider.workloadRef`):
    /// Dynamo gives it no owner.
    fn created_upstream(&self, deployment: &ModelDeployment) -> Vec<String> {
        deployment
            .status
            .as_ref()
            .and_then(|s| s.provider.as_ref())
            .and_then(|p| p.workload_ref.as_ref())
            .filter(|w| w.kind == "DynamoGraphDeployment")
            .map(|w| w.name.clone())
            .into_iter()
            .collect()
    }

    fn schema_adapters(&self) -> &'static [SchemaAdapter] {
        schema::ADAPTERS
    }

    fn overrides(&self) -> OverrideSchema {
        render::OVERRIDES
    }

    fn check_compatibility(&self, deployment: &ModelDeployment) -> Result<(), Incompatible> {
        if intent::applies(deployment) {
            return intent::spec::validate(deployment)
                .and_then(|_| intent::attempt::check_attempt(intent::attempt::attempt(deployment)))
                .map_err(|e| Incompatible::new(e.to_string()))
                .and_then(|_| parsers::check_intent(deployment).map_err(Incompatible::new));
        }
        compat::check(deployment).map_err(Incompatible::new)
    }

    /// An intent deployment's request, its graph and its lock ([`intent::prepare`]).
    fn prepare(
        &self,
        deployment: &ModelDeployment,
    ) -> impl std::future::Future<Output = Preparation> + Send {
        intent::prepare::prepare(deployment)
    }

    fn render(
        &self,
        deployment: &ModelDeployment,
        schema: &UpstreamSchema,
    ) -> Result<Rendered, RenderError> {
        if intent::applies(deployment) {
            return match intent::spec::validate(deployment) {
                Ok(Some(checked)) => {
                    Ok(Rendered::one(intent::request::render(deployment, &checked)))
                }
                Ok(None) => Err(RenderError::Unsupported(
                    "deploymentMode: intent requires provider.overrides.intent".into(),
                )),
                Err(e) => Err(RenderError::Unsupported(e.to_string())),
            };
        }
        render::render(deployment, schema)
    }

    fn translate_status(
        &self,
        deployment: &ModelDeployment,
        upstream: &[Option<&DynamicObject>],
    ) -> TranslatedStatus {
        if intent::applies(deployment) {
            return intent::status::translate(primary(upstream));
        }
        status::translate(deployment, primary(upstream))
    }

    /// The graph's component workloads and its worker pods ([`workload`]).
    fn workload(
        &self,
        deployment: &ModelDeployment,
        upstream: &[Option<&DynamicObject>],
    ) -> Option<WorkloadStatus> {
        if intent::applies(deployment) {
            // Dynamo chose the graph: its pods are not known from the request.
            return None;
        }
        workload::workload(deployment, primary(upstream))
    }

    /// A worker service down while the graph serves ([`workload::degradation`]).
    fn degradation(
        &self,
        deployment: &ModelDeployment,
        upstream: &[Option<&DynamicObject>],
    ) -> Option<Degradation> {
        if intent::applies(deployment) {
            return None;
        }
        workload::degradation(primary(upstream))
    }
}

#[cfg(test)]
mod docs_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The page shows the declared overrides exactly as the SDK renders them.
    #[test]
    fn the_docs_show_the_declared_overrides() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/providers/dynamo.md");
        let page = std::fs::read_to_string(path).unwrap();
        let table = DynamoProvider.overrides().markdown();
        assert!(
            page.contains(&table),
            "docs/providers/dynamo.md must contain the declared overrides:\n{table}"
        );
    }
}
