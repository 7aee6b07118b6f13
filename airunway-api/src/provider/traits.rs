//! What a provider implements: pure functions from values to values.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::DynamicObject;

use super::overrides::OverrideSchema;
use super::rendered::{RenderError, Rendered};
use super::schema::SchemaAdapter;
use super::workload::Degradation;
use crate::v1alpha1::{
    EndpointStatus, InferenceProviderConfigSpec, ModelDeployment, NotReadyStatus, Phase,
    ReplicaStatus, WorkloadStatus,
};

/// The upstream kind a provider creates one object of per deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamKind {
    /// API group (`""` for the core group).
    pub group: String,
    /// Kind, e.g. `Workspace`.
    pub kind: String,
    /// Plural resource name, e.g. `workspaces`.
    pub plural: String,
    /// The version to watch when nothing is detected yet (e.g. the CRD is not installed).
    pub default_version: String,
    /// Whether the kind comes from a CRD (false for built-in kinds such as ConfigMap).
    pub from_crd: bool,
}

impl UpstreamKind {
    /// The CRD name, `<plural>.<group>`.
    pub fn crd_name(&self) -> String {
        format!("{}.{}", self.plural, self.group)
    }

    /// `<group>/<version>` (or just the version for the core group).
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.group)
        }
    }
}

/// The Deployments running the upstream operator, for providers whose readiness is the
/// operator's availability and not only its CRD (see [`Provider::upstream_controller`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamController {
    /// Label selector of the operator's Deployments, looked up in every namespace, e.g.
    /// `app.kubernetes.io/name in (workspace, ai-toolchain-operator)`.
    pub label_selector: String,
    /// What the operator is called in messages, e.g. `KAITO workspace controller`.
    pub description: String,
    /// How to install it, for the message when none is found.
    pub install_hint: String,
}

/// The upstream schema a provider renders for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamSchema {
    /// The served version rendered for, e.g. `v1beta1`.
    pub version: String,
    /// `<group>/<version>`.
    pub api_version: String,
    /// Fingerprint of the installed schema: a hash of the types of the paths the provider writes.
    pub fingerprint: String,
}

/// Result of looking at the installed upstream CRD.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemaDetection {
    /// A known schema: render for it.
    Supported(UpstreamSchema),
    /// The CRD does not exist.
    CrdNotInstalled {
        /// The CRD name.
        crd: String,
    },
    /// The CRD exists but is not Established yet.
    NotEstablished {
        /// The CRD name.
        crd: String,
    },
    /// The CRD exists with a schema this provider version does not know.
    Unsupported {
        /// The version found (or `none`).
        api_version: String,
        /// Its fingerprint.
        fingerprint: String,
        /// What is wrong and what to do.
        message: String,
    },
}

impl SchemaDetection {
    /// The schema, when supported.
    pub fn schema(&self) -> Option<&UpstreamSchema> {
        match self {
            SchemaDetection::Supported(schema) => Some(schema),
            _ => None,
        }
    }
}

/// Why a provider cannot serve a deployment (`ProviderCompatible=False`, phase `Failed`): the
/// message the user reads, e.g. `KAITO does not support sglang engine`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Incompatible {
    message: String,
}

impl Incompatible {
    /// The failure with its user-facing message.
    pub fn new(message: impl Into<String>) -> Self {
        Incompatible {
            message: message.into(),
        }
    }

    /// The user-facing message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// The deployment status derived from the upstream object.
#[derive(Clone, Debug, PartialEq)]
pub struct TranslatedStatus {
    /// Phase.
    pub phase: Phase,
    /// Message (the upstream error or progress detail).
    pub message: Option<String>,
    /// Replica counts.
    pub replicas: Option<ReplicaStatus>,
    /// The Service serving the model.
    pub endpoint: Option<EndpointStatus>,
    /// Whether the deployment serves (the `Ready` condition).
    pub ready: bool,
    /// Why it does not serve (`Ready=False` with this reason, and `status.notReady`), from the
    /// vocabulary every provider maps its upstream state to. `None`: `DeploymentInProgress`
    /// (or `Unclassified` when the phase is `Failed`), unless the pods tell more.
    pub not_ready: Option<NotReadyStatus>,
}

/// What a provider derives with I/O before rendering (see [`Provider::prepare`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Preparation {
    /// Provider-specific `status` fields (e.g. `image`), written with the field manager
    /// `<name>-provider-prepare` and visible to the render in `deployment.status`.
    pub status: serde_json::Map<String, serde_json::Value>,
    /// Provider-specific conditions (e.g. `ImageResolved`), written with them.
    pub conditions: Vec<crate::conditions::DesiredCondition>,
    /// A fatal problem: nothing is rendered or applied; phase `Failed` with its message (the
    /// reconcile retries at the resync interval).
    pub hold: Option<PreparationHold>,
}

/// Why a [`Preparation`] holds a deployment: phase `Failed` with the message, and
/// `ResourceCreated=False` and `Ready=False` with the reason and the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreparationHold {
    /// The reason, a constant of `airunway_api::constants::reasons` (e.g.
    /// `UpstreamControllerMissing`, `ImageResolutionFailed`).
    pub reason: &'static str,
    /// What the user reads.
    pub message: String,
}

/// A provider shim: a set of pure functions. The SDK ([`super::run`]) does registration, the
/// probe, the reconcile loop, finalizers, server-side apply, drift, events and metrics.
pub trait Provider: Send + Sync + 'static {
    /// Provider name: the InferenceProviderConfig name, field manager `<name>-provider` and
    /// finalizer `airunway.ai/<name>-provider`.
    fn name(&self) -> &str;

    /// Name used in messages, e.g. `KAITO`.
    fn display_name(&self) -> &str;

    /// The provider's version (reported as `<name>-provider:<version>`).
    fn version(&self) -> &str;

    /// The registration: capabilities, selection rules, documentation (the SDK adds the probe
    /// endpoint and the `overridePaths` of [`overrides`](Provider::overrides), see
    /// [`registration_spec`](super::registration_spec)).
    fn registration(&self) -> InferenceProviderConfigSpec;

    /// The upstream kind.
    fn upstream(&self) -> UpstreamKind;

    /// The upstream operator's Deployments. When set, the SDK reports the provider ready
    /// (InferenceProviderConfig `status.ready`, the `UpstreamAvailable` condition and the
    /// probe's upstream health) only while one of them has a ready replica, besides the CRD
    /// being installed and supported; the provider's RBAC must allow listing Deployments.
    /// Default `None`: the CRD alone decides.
    fn upstream_controller(&self) -> Option<UpstreamController> {
        None
    }

    /// Further kinds a provider creates besides [`upstream`](Provider::upstream), e.g. the
    /// `v1 Service`s next to `apps/v1 Deployment`s, or Dynamo's request kind. No schema
    /// detection: each is watched and written at its `default_version`; one from a CRD
    /// (`from_crd`) the cluster does not have when the provider starts is not watched (its
    /// writes are refused as for a CRD gone, `UpstreamCRDNotInstalled`). Default: none, the
    /// provider manages one object per deployment.
    fn secondary_kinds(&self) -> Vec<UpstreamKind> {
        Vec::new()
    }

    /// The label selector (`kubectl`'s syntax, e.g. `airunway.ai/deployment`) of the Pods this
    /// provider's deployments run, watched in every namespace so that `Ready=False` names what
    /// the Pods report (no node with the GPUs asked for, an image that cannot be pulled, a
    /// crashing engine; see [`pod_state`](super::pod_state)). The SDK keeps only what that
    /// mapping reads of each Pod, finds a Pod's deployments through their
    /// `status.workload.podSelector` (same namespace; see [`workload`](Provider::workload)),
    /// and uses the Pods' reason only while the deployment is not ready and the translated
    /// reason is missing or generic. The provider's RBAC must allow `get`, `list` and `watch`
    /// on `pods`. Default `None`: no Pod is watched.
    fn pod_watch_selector(&self) -> Option<String> {
        None
    }

    /// Objects of the [upstream kind](Provider::upstream) the upstream operator created for
    /// the deployment from one of the provider's objects (e.g. the graph a Dynamo request
    /// generated), named from the deployment's status: the provider does not own them, so the
    /// SDK deletes them (by name, in the deployment's namespace) with the deployment's own
    /// objects when the deployment is deleted or moves away. Default: none.
    fn created_upstream(&self, _deployment: &ModelDeployment) -> Vec<String> {
        Vec::new()
    }

    /// The upstream versions this provider renders for, preferred first, with the schema paths
    /// it writes and the fingerprints it was tested against (see `SchemaAdapter`).
    /// Only read for an [upstream kind](Provider::upstream) from a CRD. Default: none.
    fn schema_adapters(&self) -> &'static [SchemaAdapter] {
        &[]
    }

    /// The schema to render for, from the installed CRD (`None`: not installed): derived from
    /// [`upstream`](Provider::upstream) and [`schema_adapters`](Provider::schema_adapters). A
    /// built-in kind is always supported at its `default_version`.
    fn detect_schema(&self, crd: Option<&CustomResourceDefinition>) -> SchemaDetection {
        super::schema::detect(&self.upstream(), crd, self.schema_adapters())
    }

    /// How the provider reads `spec.provider.overrides`, declared once: the SDK derives the
    /// registration's `overridePaths`, checks every deployment's overrides before
    /// [`render`](Provider::render) (unknown keys: `UnknownOverride` warnings; wrong types and
    /// refused keys: `InvalidOverrides`, nothing rendered) and the docs' table
    /// ([`OverrideSchema::markdown`]) from it. Default: [`OverrideSchema::UNDECLARED`].
    fn overrides(&self) -> OverrideSchema {
        OverrideSchema::UNDECLARED
    }

    /// Whether this provider can serve the deployment; the failure carries the user-facing
    /// message.
    fn check_compatibility(&self, deployment: &ModelDeployment) -> Result<(), Incompatible>;

    /// Every object the deployment needs, the primary first (a single object is a set of one:
    /// [`Rendered::one`]). The SDK applies each (server-side apply, owner reference, labels,
    /// drift, identity recreation) and deletes the objects it created for the deployment that
    /// are no longer rendered (a changed shape leaves no orphan).
    fn render(
        &self,
        deployment: &ModelDeployment,
        schema: &UpstreamSchema,
    ) -> Result<Rendered, RenderError>;

    /// The deployment status from the live objects, in the order of
    /// [`render`](Provider::render) (`None`: not created yet; a provider of one object reads
    /// `upstream[0]`, see [`primary`]).
    fn translate_status(
        &self,
        deployment: &ModelDeployment,
        upstream: &[Option<&DynamicObject>],
    ) -> TranslatedStatus;

    /// Where the deployment's serving pods are, from the live objects in the order of
    /// [`render`](Provider::render): `status.workload` and, from its `pod_selector`,
    /// `status.selector` (the scale subresource's selector, which HPA and KEDA read). The
    /// contract tools bind to (docs/integrations.md): the workloads that run the pods, labels
    /// that select exactly the serving pods, the serving container and its port. The SDK fills
    /// `upstream` from the primary live object when left out. Default: only that.
    fn workload(
        &self,
        _deployment: &ModelDeployment,
        _upstream: &[Option<&DynamicObject>],
    ) -> Option<WorkloadStatus> {
        None
    }

    /// A partial failure the replica counts do not show, e.g. a Ray Serve application failed
    /// on a ready cluster: `Degraded=True` with its reason and message. Default `None`:
    /// `Degraded` follows the translated replica counts (`True` while some but not all are
    /// ready).
    fn degradation(
        &self,
        _deployment: &ModelDeployment,
        _upstream: &[Option<&DynamicObject>],
    ) -> Option<Degradation> {
        None
    }

    /// I/O before the render, once per reconcile of a deployment to deploy (after the
    /// compatibility check passed), e.g. resolving an image to a digest: its
    /// [`Preparation`] is written to the deployment's status and the render sees it. It must
    /// bound its own time and reuse what the deployment's status already shows where it can
    /// (it runs on every reconcile). Default: nothing.
    fn prepare(
        &self,
        _deployment: &ModelDeployment,
    ) -> impl std::future::Future<Output = Preparation> + Send {
        std::future::ready(Preparation::default())
    }
}

/// The primary (first) live object of a set, for providers that render one object.
pub fn primary<'a>(upstream: &[Option<&'a DynamicObject>]) -> Option<&'a DynamicObject> {
    upstream.first().copied().flatten()
}
