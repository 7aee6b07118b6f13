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
pub mod workload;

use std::time::Duration;

use airunway_api::k8s_openapi::api::apps::v1::Deployment;
use airunway_api::kube::api::{Api, ApiResource};
use airunway_api::kube::core::DynamicObject;
use airunway_api::kube::runtime::{WatchStreamExt, reflector, watcher};
use airunway_api::provider::{
    ControllerHealth, Incompatible, OverrideSchema, Preparation, Provider, RenderError, Rendered,
    SchemaAdapter, TranslatedStatus, UpstreamController, UpstreamKind, UpstreamSchema,
    controller_health, controller_missing_hold, primary, tokio,
};
use airunway_api::runtime::WatchBackoff;
use airunway_api::v1alpha1::{
    EngineCapability, EngineCapabilityEntry, EngineType, GatewayCapability,
    InferenceProviderConfigSpec, ModelDeployment, ProviderCapabilities, SelectionRule, ServingMode,
    WorkloadStatus,
};
use futures::StreamExt;

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

/// How long a reconcile waits, counted from the start of the watch of the controller's
/// Deployments, for that watch's first list; after that a watch not yet listed is not waited for.
const CONTROLLER_FIRST_LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// The KAITO workspace controller's Deployments, how they are found and how to install it
/// (the install hint in the Go AI Runway's words, with the chart's repository and version).
pub fn workspace_controller() -> UpstreamController {
    UpstreamController {
        label_selector: CONTROLLER_SELECTOR.into(),
        description: "KAITO workspace controller".into(),
        install_hint: "Install it with: helm repo add kaito https://kaito-project.github.io/kaito/charts/kaito && helm install kaito-workspace kaito/workspace --version 0.10.0 --namespace kaito-workspace --create-namespace (check the kaito-workspace namespace), or via the AKS AI toolchain operator add-on `az aks update --enable-ai-toolchain-operator ...` (check the kube-system namespace)".into(),
    }
}

/// The watch of the workspace controller's Deployments: the store its reflector keeps and the
/// instant until which a reconcile waits for its first list.
struct ControllerWatch {
    store: reflector::Store<Deployment>,
    first_list_by: tokio::time::Instant,
}

/// The watch of the controller's Deployments, started by the first reconcile that needs it
/// (`None`: no Kubernetes configuration, as in offline runs; nothing is held then).
static CONTROLLER_WATCH: tokio::sync::OnceCell<Option<ControllerWatch>> =
    tokio::sync::OnceCell::const_new();

/// Starts the watch of the Deployments matching [`CONTROLLER_SELECTOR`] in every namespace
/// (label-selected: a handful of objects, kept with only what the health verdict reads) and
/// returns its store; the watch runs, restarting with [`WatchBackoff`], for the process's life.
fn watch_controller(client: airunway_api::kube::Client) -> ControllerWatch {
    let (store, writer) = reflector::store::<Deployment>();
    let changes = watcher(
        Api::<Deployment>::all(client),
        watcher::Config::default().labels(CONTROLLER_SELECTOR),
    )
    .backoff(WatchBackoff::default())
    .modify(trim_controller)
    .reflect(writer);
    tokio::spawn(changes.for_each(|change| {
        if let Err(error) = change {
            tracing::warn!(%error, selector = CONTROLLER_SELECTOR, "watch of the KAITO workspace controller's Deployments failed; retrying");
        }
        std::future::ready(())
    }));
    ControllerWatch {
        store,
        first_list_by: tokio::time::Instant::now() + CONTROLLER_FIRST_LIST_TIMEOUT,
    }
}

/// Keeps of a controller Deployment what [`controller_health`] reads: its name,
/// namespace and status.
fn trim_controller(deployment: &mut Deployment) {
    deployment.spec = None;
    deployment.metadata.managed_fields = None;
    deployment.metadata.annotations = None;
}

/// The controller's health from the watched Deployments, once the watch has listed them
/// (waiting until `first_list_by` at most; `None` when it has not by then).
async fn health_from(
    store: &reflector::Store<Deployment>,
    first_list_by: tokio::time::Instant,
) -> Option<ControllerHealth> {
    tokio::time::timeout_at(first_list_by, store.wait_until_ready())
        .await
        .ok()?
        .ok()?;
    let deployments: Vec<Deployment> = store.state().iter().map(|d| (**d).clone()).collect();
    Some(controller_health(&deployments))
}

/// The workspace controller's health on every reconcile, as the Go AI Runway looks it up
/// (a verdict kept from an earlier reconcile would let Workspaces be created after the
/// controller went), read from a watch of its Deployments rather than a list per reconcile:
/// the watch sees a deletion within milliseconds. `None` when the watch could not be started
/// or has not listed yet (the heartbeat reports that).
async fn look_up_controller() -> Option<ControllerHealth> {
    let watch = CONTROLLER_WATCH
        .get_or_init(|| async {
            let client = airunway_api::runtime::kube_client().await.ok()?;
            Some(watch_controller(client))
        })
        .await
        .as_ref()?;
    health_from(&watch.store, watch.first_list_by).await
}

/// The client [`live_workspace`] reads with (`None`: no Kubernetes configuration).
static WORKSPACE_CLIENT: tokio::sync::OnceCell<Option<airunway_api::kube::Client>> =
    tokio::sync::OnceCell::const_new();

/// The live Workspace of `deployment` as the API server serves it (`v1beta1`), for the replica
/// check ([`workload::scale_hold`]); `None` when there is none or it cannot be read (logged).
async fn live_workspace(deployment: &ModelDeployment) -> Option<airunway_api::serde_json::Value> {
    let client = WORKSPACE_CLIENT
        .get_or_init(|| async { airunway_api::runtime::kube_client().await.ok() })
        .await
        .clone()?;
    let namespace = deployment.metadata.namespace.as_deref()?;
    let name = deployment.metadata.name.as_deref()?;
    let kind = KaitoProvider::default().upstream();
    let resource = ApiResource {
        api_version: kind.api_version(&kind.default_version),
        group: kind.group,
        version: kind.default_version,
        kind: kind.kind,
        plural: kind.plural,
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client, namespace, &resource);
    match api.get_opt(name).await {
        Ok(live) => live.and_then(|w| airunway_api::serde_json::to_value(w).ok()),
        Err(error) => {
            tracing::warn!(%error, namespace, name, "reading the Workspace to check its replicas failed; not checked this time");
            None
        }
    }
}

/// The KAITO provider.
#[derive(Clone, Debug, Default)]
pub struct KaitoProvider {
    /// Node auto-provisioning: `Some` names the instance types Workspaces ask for.
    pub node_provisioning: Option<NodeProvisioning>,
}

/// The instance types Workspaces name under node auto-provisioning (the Go AI Runway's
/// `AIRUNWAY_KAITO_GPU_INSTANCE_TYPE` and `AIRUNWAY_KAITO_CPU_INSTANCE_TYPE`): KAITO creates
/// nodes of `resource.instanceType` for a Workspace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeProvisioning {
    /// For deployments with GPUs.
    pub gpu_instance_type: Option<String>,
    /// For CPU-only deployments.
    pub cpu_instance_type: Option<String>,
}

/// The Go AI Runway's reading of a boolean setting: `1`, `t`, `true`, `y`, `yes`, `on`,
/// `enabled` (any case, surrounding spaces ignored) are true; anything else is false.
pub fn truthy(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "1" | "t" | "true" | "y" | "yes" | "on" | "enabled"
    )
}

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
            // spec.adapters: vLLM presets take `inference.adapters` (docs/lora.md).
            capability.lora_support = name == EngineType::Vllm;
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
                // A Workspace cannot mount model.storage volumes on KAITO's inference pods (docs/providers/kaito.md).
                model_storage: Some(false),
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
            // The SDK adds the probe endpoint and the override paths (`overrides`).
            ..Default::default()
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
    ///
    /// A changed `scaling.replicas` is held the same way when the Workspace exists with
    /// another `resource.count`, which KAITO cannot change ([`workload::scale_hold`]; the
    /// Workspace is read only when the last status reported another count).
    async fn prepare(&self, deployment: &ModelDeployment) -> Preparation {
        if let Some(ControllerHealth::Missing) = look_up_controller().await {
            return Preparation {
                hold: Some(controller_missing_hold(&workspace_controller())),
                ..Preparation::default()
            };
        }
        if workload::needs_count_check(deployment)
            && let Some(live) = live_workspace(deployment).await
            && let Some(hold) = workload::scale_hold(deployment, &live)
        {
            return Preparation {
                hold: Some(hold),
                ..Preparation::default()
            };
        }
        Preparation::default()
    }

    fn schema_adapters(&self) -> &'static [SchemaAdapter] {
        schema::ADAPTERS
    }

    /// KAITO labels its workload's Pods `kaito.sh/workspace: <workspace>` (the StatefulSet's or
    /// Deployment's selector): their state says why a deployment is not ready (capacity,
    /// image, crash; see `airunway_api::provider::pod_state`).
    fn pod_watch_selector(&self) -> Option<String> {
        Some(WORKSPACE_LABEL.to_string())
    }

    fn overrides(&self) -> OverrideSchema {
        render::OVERRIDES
    }

    fn check_compatibility(&self, deployment: &ModelDeployment) -> Result<(), Incompatible> {
        compat::check(deployment).map_err(Incompatible::new)
    }

    fn render(
        &self,
        deployment: &ModelDeployment,
        schema: &UpstreamSchema,
    ) -> Result<Rendered, RenderError> {
        render::render(deployment, schema, self.node_provisioning.as_ref())
    }

    fn translate_status(
        &self,
        deployment: &ModelDeployment,
        upstream: &[Option<&DynamicObject>],
    ) -> TranslatedStatus {
        status::translate(deployment, primary(upstream))
    }

    /// The Workspace's StatefulSet and its pods ([`workload`]).
    fn workload(
        &self,
        deployment: &ModelDeployment,
        upstream: &[Option<&DynamicObject>],
    ) -> Option<WorkloadStatus> {
        workload::workload(deployment, primary(upstream))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airunway_api::kube::runtime::watcher::Event;

    fn controller(namespace: &str, ready_replicas: i32) -> Deployment {
        airunway_api::serde_json::from_value(airunway_api::serde_json::json!({
            "metadata": {
                "name": "kaito-workspace",
                "namespace": namespace,
                "labels": {"app.kubernetes.io/name": "workspace"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
                "managedFields": [{"manager": "helm", "operation": "Apply"}],
            },
            "spec": {"selector": {}, "template": {}},
            "status": {"readyReplicas": ready_replicas},
        }))
        .unwrap()
    }

    fn listed(writer: &mut reflector::store::Writer<Deployment>, deployments: &[Deployment]) {
        writer.apply_watcher_event(&Event::Init);
        for deployment in deployments {
            writer.apply_watcher_event(&Event::InitApply(deployment.clone()));
        }
        writer.apply_watcher_event(&Event::InitDone);
    }

    fn soon() -> tokio::time::Instant {
        tokio::time::Instant::now() + Duration::from_secs(5)
    }

    #[tokio::test(crate = "airunway_api::provider::tokio")]
    async fn a_watch_that_has_not_listed_by_its_deadline_gives_no_verdict() {
        let (store, _writer) = reflector::store::<Deployment>();
        let deadline = tokio::time::Instant::now() + Duration::from_millis(50);
        assert_eq!(health_from(&store, deadline).await, None);
        // Past the deadline it is not waited for again.
        let started = std::time::Instant::now();
        assert_eq!(health_from(&store, deadline).await, None);
        assert!(started.elapsed() < Duration::from_millis(40));
    }

    #[tokio::test(crate = "airunway_api::provider::tokio")]
    async fn the_verdict_follows_the_watched_deployments() {
        let (store, mut writer) = reflector::store::<Deployment>();
        listed(&mut writer, &[]);
        assert_eq!(
            health_from(&store, soon()).await,
            Some(ControllerHealth::Missing)
        );
        let not_ready = controller("kaito-workspace", 0);
        writer.apply_watcher_event(&Event::Apply(not_ready.clone()));
        assert_eq!(
            health_from(&store, soon()).await,
            Some(ControllerHealth::NotReady(
                "kaito-workspace/kaito-workspace".into()
            ))
        );
        writer.apply_watcher_event(&Event::Apply(controller("kaito-workspace", 1)));
        assert_eq!(
            health_from(&store, soon()).await,
            Some(ControllerHealth::Ready(
                "kaito-workspace/kaito-workspace".into()
            ))
        );
        // Deleted: missing on the next reconcile, with no lookup of its own.
        writer.apply_watcher_event(&Event::Delete(not_ready));
        assert_eq!(
            health_from(&store, soon()).await,
            Some(ControllerHealth::Missing)
        );
        // A re-list replaces what was there (the AKS add-on's controller in kube-system).
        listed(&mut writer, &[controller("kube-system", 1)]);
        assert_eq!(
            health_from(&store, soon()).await,
            Some(ControllerHealth::Ready(
                "kube-system/kaito-workspace".into()
            ))
        );
    }

    #[tokio::test(crate = "airunway_api::provider::tokio")]
    async fn a_reconcile_waits_for_the_first_list() {
        let (store, mut writer) = reflector::store::<Deployment>();
        let lister = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            listed(&mut writer, &[controller("kaito-workspace", 1)]);
            writer
        });
        assert_eq!(
            health_from(&store, soon()).await,
            Some(ControllerHealth::Ready(
                "kaito-workspace/kaito-workspace".into()
            ))
        );
        lister.await.unwrap();
    }

    #[test]
    fn a_watched_controller_keeps_only_what_the_verdict_reads() {
        let mut deployment = controller("kaito-workspace", 1);
        trim_controller(&mut deployment);
        assert_eq!(deployment.spec, None);
        assert_eq!(deployment.metadata.managed_fields, None);
        assert_eq!(deployment.metadata.annotations, None);
        assert_eq!(deployment.metadata.name.as_deref(), Some("kaito-workspace"));
        assert_eq!(
            deployment.metadata.namespace.as_deref(),
            Some("kaito-workspace")
        );
        assert_eq!(
            controller_health(&[deployment]),
            ControllerHealth::Ready("kaito-workspace/kaito-workspace".into())
        );
    }
}

#[cfg(test)]
mod docs_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The page shows the declared overrides exactly as the SDK renders them.
    #[test]
    fn the_docs_show_the_declared_overrides() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/providers/kaito.md");
        let page = std::fs::read_to_string(path).unwrap();
        let table = KaitoProvider::default().overrides().markdown();
        assert!(
            page.contains(&table),
            "docs/providers/kaito.md must contain the declared overrides:\n{table}"
        );
    }
}
