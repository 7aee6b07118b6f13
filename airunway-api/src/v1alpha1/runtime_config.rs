//! `RuntimeConfig` (namespaced) and `ClusterRuntimeConfig` (cluster-scoped): the defaults a
//! platform team sets once so that ModelDeployments need not repeat them (docs/platform.md).
//! A deployment names one with `spec.runtimeConfigName` (`default` when omitted); the namespaced
//! config of that name wins over the cluster config of that name. How each field merges into a
//! deployment is [`crate::runtime_config`]'s job.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{EnvVar, Toleration};
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use super::{AutoscalingSpec, CacheRetention, PodTemplate, SecretsSpec};

/// The defaults of a namespace: applied to every ModelDeployment of the namespace that names
/// this config (`spec.runtimeConfigName`, `default` when omitted). Found, it is used alone: a
/// ClusterRuntimeConfig of the same name is then not consulted.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "airunway.ai",
    version = "v1alpha1",
    kind = "RuntimeConfig",
    doc = "Defaults for the ModelDeployments of a namespace that name this config (spec.runtimeConfigName, 'default' when omitted): Hugging Face token Secret, scheduling, pod metadata, env, engine images, gateway, model cache and autoscaling defaults, and which labels propagate to every object a deployment causes. A deployment's own fields win.",
    namespaced,
    shortname = "rtc",
    category = "airunway",
    printcolumn = r#"{"name":"Token Secret","type":"string","jsonPath":".spec.secrets.huggingFaceToken","description":"Default Hugging Face token Secret"}"#,
    printcolumn = r#"{"name":"Propagated Labels","type":"string","jsonPath":".spec.labelPropagation.match","description":"Label keys copied to every object a deployment causes"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeConfigSpec {
    /// The defaults.
    #[serde(flatten)]
    pub defaults: RuntimeDefaults,
}

/// Cluster-wide defaults for ModelDeployments that name this config and whose namespace has no
/// RuntimeConfig of that name. A `secrets.huggingFaceToken` here is only a name: each
/// deployment's own namespace must hold a Secret of that name.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "airunway.ai",
    version = "v1alpha1",
    kind = "ClusterRuntimeConfig",
    doc = "Cluster-wide defaults for the ModelDeployments that name this config (spec.runtimeConfigName, 'default' when omitted) in namespaces without a RuntimeConfig of that name. A deployment's own fields win.",
    shortname = "crtc",
    category = "airunway",
    printcolumn = r#"{"name":"Token Secret","type":"string","jsonPath":".spec.secrets.huggingFaceToken","description":"Default Hugging Face token Secret"}"#,
    printcolumn = r#"{"name":"Propagated Labels","type":"string","jsonPath":".spec.labelPropagation.match","description":"Label keys copied to every object a deployment causes"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterRuntimeConfigSpec {
    /// The defaults.
    #[serde(flatten)]
    pub defaults: RuntimeDefaults,
}

/// What a runtime configuration may default. Every field is optional; a deployment's own value
/// wins (per field: see [`crate::runtime_config::apply`] and docs/platform.md).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = super::model_deployment::value_limits)]
pub struct RuntimeDefaults {
    /// Secret references (names only; contents are never read), e.g. the Hugging Face token
    /// Secret in the deployment's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secrets: Option<SecretsSpec>,

    /// Node labels the model server pods must match; merged per key with the deployment's
    /// (the deployment's value wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 64))]
    pub node_selector: Option<BTreeMap<String, String>>,

    /// Tolerations for the model server pods; used when the deployment gives none (a
    /// deployment's list replaces this one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub tolerations: Option<Vec<Toleration>>,

    /// Labels and annotations for the model server pods; merged per key with the deployment's
    /// (the deployment's value wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template: Option<PodTemplate>,

    /// Environment variables for the model server; merged by name with the deployment's (the
    /// deployment's wins), the config's first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub env: Option<Vec<EnvVar>>,

    /// The model server image per engine, used when the deployment sets neither `image` nor
    /// `engine.image`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_images: Option<EngineImages>,

    /// Gateway defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<GatewayDefaults>,

    /// Defaults of the shared model caches the core creates for deployments using this config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_cache: Option<ModelCacheDefaults>,

    /// Autoscaling for deployments that give no `scaling.autoscaling` (the deployment's block
    /// replaces this one whole).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<AutoscalingSpec>,

    /// Which of a deployment's labels are copied to every object it causes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_propagation: Option<LabelPropagation>,
}

/// A model server image per engine.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EngineImages {
    /// Image for the `vllm` engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 1024))]
    pub vllm: Option<String>,
    /// Image for the `sglang` engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 1024))]
    pub sglang: Option<String>,
    /// Image for the `trtllm` engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 1024))]
    pub trtllm: Option<String>,
    /// Image for the `llamacpp` engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 1024))]
    pub llamacpp: Option<String>,
}

/// Gateway defaults.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GatewayDefaults {
    /// Whether deployments are routed through the inference gateway when they do not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// Defaults of the shared model caches the core creates (volumes with `purpose: modelCache`
/// and neither `claimName` nor `size`), and of the storage class of the claims a deployment
/// asks the controllers to create.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ModelCacheDefaults {
    /// Storage class of claims created for volumes that do not name one (`""`: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub storage_class_name: Option<String>,
    /// Size of a shared model cache's claim, instead of the core's `--model-cache-size`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::quantity")]
    pub size: Option<String>,
    /// Retention of an unused shared model cache, instead of the core's flags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<CacheRetention>,
}

/// Which labels of a deployment are copied to the objects it causes (upstream objects, their
/// Pod templates, claims, Jobs and gateway objects).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.match) || self.match.all(p, !p.contains('**'))").message("labelPropagation.match: use a single '*' (it already matches any run of characters)").field_path(".match"))]
pub struct LabelPropagation {
    /// Off unless `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Label keys, exact (`org.example/team`) or with `*` matching any run of characters
    /// (`org.example/*`, `compliance.*/severity`).
    #[serde(default, rename = "match", skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    #[schemars(extend("items" = {"type": "string", "minLength": 1, "maxLength": 317, "pattern": "^[A-Za-z0-9*]([-A-Za-z0-9_./*]*[A-Za-z0-9*])?$"}))]
    pub patterns: Vec<String>,
}

/// Where a deployment's effective runtime configuration comes from.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuntimeConfigScope {
    /// A `RuntimeConfig` in the deployment's namespace.
    Namespace,
    /// A `ClusterRuntimeConfig`.
    Cluster,
}

/// A namespaced config, by name.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct NamespacedConfigRef {
    /// `RuntimeConfig`.
    pub kind: String,
    /// Its namespace (the deployment's).
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// A cluster-scoped config, by name.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterConfigRef {
    /// `ClusterRuntimeConfig`.
    pub kind: String,
    /// Its name.
    pub name: String,
}

/// The runtime configuration applied to a deployment (`status.effectiveRuntimeConfig`): the
/// source object — exactly one of `namespaceRef` and `clusterRef` — and the hash of its spec,
/// which changes whenever the defaults do.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct EffectiveRuntimeConfig {
    /// The namespaced source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_ref: Option<NamespacedConfigRef>,
    /// The cluster-scoped source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_ref: Option<ClusterConfigRef>,
    /// `Namespace` or `Cluster`.
    pub scope: RuntimeConfigScope,
    /// The first 16 bytes of the sha256 of the source's spec, in hex.
    pub hash: String,
}
