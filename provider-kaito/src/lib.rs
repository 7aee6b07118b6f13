//! # airunway-provider-kaito
//!
//! The AI Runway provider for [KAITO](https://github.com/kaito-project/kaito): each
//! ModelDeployment assigned to `kaito` becomes a `kaito.sh` Workspace. CPU and llama.cpp
//! deployments go here; vLLM on GPU when named. The pure parts are [`compat`], [`render`],
//! [`status`] and [`schema`]; the SDK in `airunway-api` does the rest.

pub mod compat;
pub mod render;
pub mod schema;
pub mod status;

use std::time::Duration;

use airunway_api::k8s_openapi::api::apps::v1::Deployment;
use airunway_api::kube::api::{Api, ListParams};
use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::{
    ControllerHealth, Incompatible, Preparation, Provider, RenderError, Rendered, SchemaAdapter,
    TranslatedStatus, UpstreamController, UpstreamKind, UpstreamSchema, controller_health,
    controller_missing_hold, primary, tokio,
};
use airunway_api::v1alpha1::{
    EngineCapability, EngineCapabilityEntry, EngineType, GatewayCapability,
    InferenceProviderConfigSpec, ModelDeployment, ProviderCapabilities, SelectionRule, ServingMode,
};

/// The provider name (and InferenceProviderConfig name).
pub const NAME: &str = "kaito";

/// The labels of the KAITO workspace controller's Deployment: the Helm chart's
/// (`workspace`) and the AKS add-on's (`ai-toolchain-operator`).
pub const CONTROLLER_SELECTOR: &str =
    "app.kubernetes.io/name in (workspace, ai-toolchain-operator)";

/// The label KAITO puts on every Pod of a Workspace's workload (value: the Workspace's name,
/// which is the deployment's): what the core's InferencePool selects for KAITO, whose preset
/// Pods KAITO builds itself.
pub const WORKSPACE_LABEL: &str = "kaito.sh/workspace";

/// Bound of one lookup of the controller's Deployments.
const CONTROLLER_LOOKUP_TIMEOUT: Duration = Duration::from_secs(10);

/// The KAITO workspace controller's Deployments, how they are found and how to install it
/// (the install hint in the Go AI Runway's words, with the chart's repository and version).
pub fn workspace_controller() -> UpstreamController {
    UpstreamController {
        label_selector: CONTROLLER_SELECTOR.into(),
        description: "KAITO workspace controller".into(),
        install_hint: "Install it with: helm repo add kaito https://kaito-project.github.io/kaito/charts/kaito && helm install kaito-workspace kaito/workspace --version 0.10.0 --namespace kaito-workspace --create-namespace (check the kaito-workspace namespace), or via the AKS AI toolchain operator add-on `az aks update --enable-ai-toolchain-operator ...` (check the kube-system namespace)".into(),
    }
}

/// The client of the controller lookup, made once from the environment the SDK reads too
/// (`None`: no configuration, as in offline runs; nothing is held then).
static LOOKUP_CLIENT: tokio::sync::OnceCell<Option<airunway_api::kube::Client>> =
    tokio::sync::OnceCell::const_new();

/// Looks up the workspace controller's Deployments (in every namespace, bounded in time), on
/// every reconcile as the Go AI Runway does: a verdict kept from an earlier reconcile would
/// let Workspaces be created for a while after the controller went. `None` when the lookup
/// could not be made (the heartbeat reports that).
async fn look_up_controller() -> Option<ControllerHealth> {
    let client = LOOKUP_CLIENT
        .get_or_init(|| async { airunway_api::runtime::kube_client().await.ok() })
        .await
        .clone()?;
    let deployments: Api<Deployment> = Api::all(client);
    let params = ListParams::default().labels(CONTROLLER_SELECTOR);
    let listed = tokio::time::timeout(CONTROLLER_LOOKUP_TIMEOUT, deployments.list(&params))
        .await
        .ok()?
        .ok()?;
    Some(controller_health(&listed.items))
}

/// The KAITO provider.
#[derive(Clone, Copy, Debug, Default)]
pub struct KaitoProvider;

impl Provider for KaitoProvider {
    fn name(&self) -> &str {
        NAME
    }

    fn display_name(&self) -> &str {
        "KAITO"
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn registration(&self) -> InferenceProviderConfigSpec {
        let engine = |name, cpu_support| {
            let mut capability =
                EngineCapability::new(name, vec![ServingMode::Aggregated], true, cpu_support);
            capability.gateway = Some(GatewayCapability {
                pool_selector: Some([(WORKSPACE_LABEL.to_string(), "{name}".to_string())].into()),
                // KAITO's llama.cpp template passes no served name to llama-server, so the
                // gateway must not route on `servedName` (the Go AI Runway's registration).
                ignores_served_name: (name == EngineType::Llamacpp).then_some(true),
                ..Default::default()
            });
            EngineCapabilityEntry::Detailed(capability)
        };
        InferenceProviderConfigSpec {
            capabilities: Some(ProviderCapabilities {
                engines: Some(vec![
                    engine(EngineType::Vllm, false),
                    engine(EngineType::Llamacpp, true),
                ]),
                ..Default::default()
            }),
            selection_rules: Some(vec![
                // The only CPU provider.
                SelectionRule {
                    condition: "!has(spec.resources.gpu) || spec.resources.gpu.count == 0".into(),
                    priority: 100,
                },
                // The only llama.cpp provider.
                SelectionRule {
                    condition: "spec.engine.type == 'llamacpp'".into(),
                    priority: 100,
                },
            ]),
            documentation: Some(
                "https://github.com/airunway/airunway/blob/main/docs/providers/kaito.md".into(),
            ),
            probe: None,
            // KAITO takes no overrides: everything in provider.overrides is reported unused.
            override_paths: Some(Vec::new()),
        }
    }

    fn upstream(&self) -> UpstreamKind {
        UpstreamKind {
            group: "kaito.sh".into(),
            kind: "Workspace".into(),
            plural: "workspaces".into(),
            default_version: "v1beta1".into(),
            from_crd: true,
        }
    }

    /// KAITO is ready when its workspace controller is, not only its CRD (a Workspace nobody
    /// reconciles would wait forever): the Go AI Runway's upstream probe.
    fn upstream_controller(&self) -> Option<UpstreamController> {
        Some(workspace_controller())
    }

    /// Refuses fast, as the Go AI Runway does: without a workspace controller no Workspace is
    /// created (nobody would reconcile it); the deployment is held with
    /// `UpstreamControllerMissing` and how to install the controller, and proceeds once it
    /// runs (the core's `ProviderHealthy` change wakes it).
    async fn prepare(&self, _deployment: &ModelDeployment) -> Preparation {
        match look_up_controller().await {
            Some(ControllerHealth::Missing) => Preparation {
                hold: Some(controller_missing_hold(&workspace_controller())),
                ..Preparation::default()
            },
            _ => Preparation::default(),
        }
    }

    fn schema_adapters(&self) -> &'static [SchemaAdapter] {
        schema::ADAPTERS
    }

    fn check_compatibility(&self, deployment: &ModelDeployment) -> Result<(), Incompatible> {
        compat::check(deployment).map_err(Incompatible::new)
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
}
