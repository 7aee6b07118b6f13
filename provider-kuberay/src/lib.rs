//! # airunway-provider-kuberay
//!
//! The AI Runway provider for [KubeRay](https://github.com/ray-project/kuberay): each
//! ModelDeployment assigned to `kuberay` becomes a `ray.io` RayService running a Ray Serve LLM
//! application on vLLM. KubeRay is explicit-only: it registers no selection rule, so the core
//! gives it only the deployments that name it in `spec.provider.name`. The pure parts are
//! [`compat`], [`render`] (with [`overrides`], [`parsers`] and [`lora`]), [`status`] and
//! [`schema`]; the SDK in
//! `airunway-api` does the rest.

pub mod compat;
pub mod lora;
pub mod overrides;
pub mod parsers;
pub mod render;
pub mod scale;
pub mod schema;
pub mod status;
pub mod workload;

use airunway_api::kube::api::{Api, ApiResource, Patch, PatchParams};
use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::{
    Degradation, Incompatible, Preparation, Provider, RenderError, Rendered, TranslatedStatus,
    UpstreamKind, UpstreamSchema, primary,
};
use airunway_api::provider::{OverrideSchema, SchemaAdapter};
use airunway_api::v1alpha1::{
    ApiFormat, EngineCapability, EngineCapabilityEntry, EngineType, GatewayCapability,
    InferenceProviderConfigSpec, ModelDeployment, ProviderCapabilities, ServingMode,
    WorkloadStatus,
};

/// The provider name (and InferenceProviderConfig name).
pub const NAME: &str = "kuberay";
/// The upstream API group.
pub const GROUP: &str = "ray.io";
/// The upstream kind.
pub const KIND: &str = "RayService";
/// The upstream plural.
pub const PLURAL: &str = "rayservices";
/// The upstream CRD.
pub const CRD_NAME: &str = "rayservices.ray.io";

/// The client [`sync_cluster_replicas`] reads and patches with (`None`: no Kubernetes
/// configuration).
static CLIENT: airunway_api::provider::tokio::sync::OnceCell<Option<airunway_api::kube::Client>> =
    airunway_api::provider::tokio::sync::OnceCell::const_new();

fn ray_resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: "v1".into(),
        api_version: format!("{GROUP}/v1"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// Sets the worker replicas of the deployment's running RayClusters to what it asks for
/// ([`scale`]): KubeRay leaves them to Ray's autoscaler. Best effort (a failure is logged and
/// retried on the next reconcile); skipped while the last status shows every replica ready.
async fn sync_cluster_replicas(deployment: &ModelDeployment) {
    let groups = scale::desired_groups(deployment);
    let wanted: i32 = groups.iter().map(|(_, r)| *r).fold(0, i32::saturating_add);
    let ready = deployment
        .status
        .as_ref()
        .and_then(|s| s.replicas.as_ref())
        .and_then(|r| r.ready);
    if ready == Some(wanted) {
        return;
    }
    let Some(client) = CLIENT
        .get_or_init(|| async { airunway_api::runtime::kube_client().await.ok() })
        .await
        .clone()
    else {
        return;
    };
    let (Some(namespace), Some(name)) = (
        deployment.metadata.namespace.as_deref(),
        deployment.metadata.name.as_deref(),
    ) else {
        return;
    };
    let services: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &ray_resource(KIND, PLURAL));
    let clusters: Api<DynamicObject> = Api::namespaced_with(
        client,
        namespace,
        &ray_resource("RayCluster", "rayclusters"),
    );
    let Ok(Some(ray_service)) = services.get_opt(name).await else {
        return;
    };
    let Some(uid) = ray_service.metadata.uid.clone() else {
        return;
    };
    let ray_service = airunway_api::serde_json::to_value(&ray_service).unwrap_or_default();
    // The provider's field manager, so the cluster's managedFields say who scaled it.
    let params = PatchParams {
        field_manager: Some(format!("{NAME}-provider")),
        ..PatchParams::default()
    };
    for cluster_name in scale::cluster_names(&ray_service) {
        let cluster = match clusters.get_opt(&cluster_name).await {
            Ok(Some(cluster)) => airunway_api::serde_json::to_value(&cluster).unwrap_or_default(),
            Ok(None) => continue,
            Err(error) => {
                tracing::warn!(%error, namespace, cluster = cluster_name, "reading the RayCluster to scale it failed; retried on the next reconcile");
                continue;
            }
        };
        let Some(patch) = scale::replicas_patch(&cluster, &uid, &groups) else {
            continue;
        };
        let patch: json_patch::Patch = match airunway_api::serde_json::from_value(patch) {
            Ok(patch) => patch,
            Err(_) => continue,
        };
        match clusters
            .patch(&cluster_name, &params, &Patch::Json::<()>(patch))
            .await
        {
            Ok(_) => tracing::info!(
                namespace,
                cluster = cluster_name,
                ?groups,
                "scaled the RayCluster's worker groups"
            ),
            Err(error) => {
                tracing::warn!(%error, namespace, cluster = cluster_name, "scaling the RayCluster's worker groups failed; retried on the next reconcile")
            }
        }
    }
}

/// The KubeRay provider.
#[derive(Clone, Copy, Debug, Default)]
pub struct KubeRayProvider;

impl Provider for KubeRayProvider {
    fn name(&self) -> &str {
        NAME
    }

    fn display_name(&self) -> &str {
        "KubeRay"
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn registration(&self) -> InferenceProviderConfigSpec {
        InferenceProviderConfigSpec {
            capabilities: Some(ProviderCapabilities {
                engines: Some(vec![EngineCapabilityEntry::Detailed(EngineCapability {
                    // Ray Serve LLM's OpenAI app serves chat and completions only: no Responses
                    // or Anthropic Messages API (the Go AI Runway advertises the same).
                    api_formats: vec![ApiFormat::OpenaiChat],
                    // Parsers as vLLM engine keyword arguments (`parsers`).
                    tool_calling_support: true,
                    // Adapters from one s3:// or gs:// prefix through Ray Serve LLM's
                    // `lora_config` (`lora`); other sources are refused with a message.
                    lora_support: true,
                    // ... served as `<model>:<adapter>`, which the core's route matches.
                    gateway: Some(GatewayCapability {
                        adapter_model_pattern: Some(lora::ADAPTER_MODEL_PATTERN.into()),
                        ..Default::default()
                    }),
                    ..EngineCapability::new(
                        EngineType::Vllm,
                        vec![ServingMode::Aggregated, ServingMode::Disaggregated],
                        true,
                        false,
                    )
                })]),
                // Mounts model.storage volumes where the engine runs and waits for the model cache.
                model_storage: Some(true),
                ..Default::default()
            }),
            // Explicit-only (design doc §4.5): no selection rule, so the core never picks
            // KubeRay on its own.
            selection_rules: None,
            documentation: Some(
                "https://github.com/airunway/airunway/blob/main/docs/providers/kuberay.md".into(),
            ),
            // The SDK adds the probe endpoint and the override paths (`overrides`).
            ..Default::default()
        }
    }

    fn upstream(&self) -> UpstreamKind {
        UpstreamKind {
            group: GROUP.into(),
            kind: KIND.into(),
            plural: PLURAL.into(),
            default_version: "v1".into(),
            from_crd: true,
        }
    }

    fn schema_adapters(&self) -> &'static [SchemaAdapter] {
        schema::ADAPTERS
    }

    /// The Ray Pods carry the labels of the RayCluster's templates, `airunway.ai/deployment`
    /// among them: their state says why a deployment is not ready (capacity, image, crash; see
    /// `airunway_api::provider::pod_state`).
    fn pod_watch_selector(&self) -> Option<String> {
        Some(airunway_api::constants::labels::DEPLOYMENT.to_string())
    }

    fn overrides(&self) -> OverrideSchema {
        overrides::SCHEMA
    }

    fn check_compatibility(&self, deployment: &ModelDeployment) -> Result<(), Incompatible> {
        compat::check(deployment)
    }

    fn render(
        &self,
        deployment: &ModelDeployment,
        schema: &UpstreamSchema,
    ) -> Result<Rendered, RenderError> {
        render::render(deployment, schema)
    }

    fn translate_status(
        &self,
        deployment: &ModelDeployment,
        upstream: &[Option<&DynamicObject>],
    ) -> TranslatedStatus {
        status::translate(deployment, primary(upstream))
    }

    /// Scales the running RayClusters in place ([`scale`]); nothing is derived or held.
    async fn prepare(&self, deployment: &ModelDeployment) -> Preparation {
        sync_cluster_replicas(deployment).await;
        Preparation::default()
    }

    /// The serving RayCluster and its worker pods ([`workload`]).
    fn workload(
        &self,
        _deployment: &ModelDeployment,
        upstream: &[Option<&DynamicObject>],
    ) -> Option<WorkloadStatus> {
        workload::workload(primary(upstream))
    }

    /// A Serve application failed while the cluster serves ([`workload::degradation`]).
    fn degradation(
        &self,
        _deployment: &ModelDeployment,
        upstream: &[Option<&DynamicObject>],
    ) -> Option<Degradation> {
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
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/providers/kuberay.md");
        let page = std::fs::read_to_string(path).unwrap();
        let table = KubeRayProvider.overrides().markdown();
        assert!(
            page.contains(&table),
            "docs/providers/kuberay.md must contain the declared overrides:\n{table}"
        );
    }
}
