//! `ModelDeploymentPolicy` (cluster-scoped): guardrails a platform admin sets for the
//! ModelDeployments of the namespaces it selects (docs/policy.md). Unlike the runtime configs,
//! which a deployment chooses by name, a policy applies by namespace whatever the deployment
//! names, and only cluster administrators can write it. Every policy selecting a namespace
//! applies: each rule of each must hold. What the rules mean is [`crate::policy`]'s job.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use super::EngineType;
use crate::constants::messages::policy as messages;

/// Guardrails for the ModelDeployments of the selected namespaces. Every rule is optional; an
/// omitted rule allows everything.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "airunway.ai",
    version = "v1alpha1",
    kind = "ModelDeploymentPolicy",
    doc = "Guardrails for the ModelDeployments of the namespaces it selects (all when namespaceSelector is omitted): allowed providers, engines, images and provider.overrides paths, the most GPUs one deployment may ask for, and the most GPUs all deployments of one namespace may ask for together. Enforced at admission and reported at reconcile time (PolicyCompliant).",
    shortname = "mdpol",
    category = "airunway",
    printcolumn = r#"{"name":"GPU Quota","type":"integer","jsonPath":".spec.gpuQuota","description":"Most GPUs all deployments of one namespace may ask for"}"#,
    printcolumn = r#"{"name":"Max GPUs","type":"integer","jsonPath":".spec.maxGpusPerDeployment","description":"Most GPUs one deployment may ask for"}"#,
    printcolumn = r#"{"name":"Providers","type":"string","jsonPath":".spec.allowedProviders","description":"Allowed providers"}"#,
    printcolumn = r#"{"name":"Engines","type":"string","jsonPath":".spec.allowedEngines","description":"Allowed engines"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.gpuQuota) || !has(self.maxGpusPerDeployment) || self.maxGpusPerDeployment <= self.gpuQuota").message(messages::MAX_ABOVE_QUOTA).field_path(".maxGpusPerDeployment"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.allowedImages) || self.allowedImages.all(i, i.matches('^([^/]*[.:][^/]*|localhost)(/|$)'))").message(messages::IMAGE_PREFIX_NOT_NORMALISED).field_path(".allowedImages"))]
pub struct ModelDeploymentPolicySpec {
    /// The namespaces whose deployments the policy governs, by their labels (e.g.
    /// `kubernetes.io/metadata.name`, or a team label). Omitted: every namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,

    /// The providers a deployment may name or be given (`spec.provider.name`, or the core's
    /// automatic choice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), extend("x-kubernetes-list-type" = "set"))]
    #[schemars(extend("items" = {"type": "string", "minLength": 1, "maxLength": 54, "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"}))]
    pub allowed_providers: Option<Vec<String>>,

    /// The engines a deployment may ask for or be given (`spec.engine.type`, or the core's
    /// automatic choice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4), extend("x-kubernetes-list-type" = "set"))]
    pub allowed_engines: Option<Vec<EngineType>>,

    /// Registry and repository prefixes the model server image must come from, written in
    /// normalised form: `registry[:port]` or `registry[:port]/path` (`docker.io/vllm`, not
    /// `vllm`). A prefix matches whole components: `ghcr.io/org` allows `ghcr.io/org/x:1`, not
    /// `ghcr.io/organisation/x`. Checked against the image the deployment or its runtime
    /// configuration names (`engine.image`, `image`, `engineImages`); a provider's built-in
    /// default image is not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64), extend("x-kubernetes-list-type" = "set"))]
    #[schemars(extend("items" = {"type": "string", "minLength": 1, "maxLength": 512, "pattern": "^[^@:/ ]+(:[0-9]+)?(/[a-z0-9._/-]+)?$"}))]
    pub allowed_images: Option<Vec<String>>,

    /// The most GPUs one deployment may ask for: GPUs per worker times workers, counting
    /// prefill and decode workers and the autoscaler's `maxReplicas` (docs/policy.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100000))]
    pub max_gpus_per_deployment: Option<i32>,

    /// The most GPUs all deployments of ONE selected namespace may ask for together (each
    /// namespace has its own quota of this size), counted as for `maxGpusPerDeployment`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1000000))]
    pub gpu_quota: Option<i32>,

    /// The `spec.provider.overrides` paths a deployment may set, dot-separated
    /// (`deployment.spec.template.spec.priorityClassName`), with a trailing `*` covering
    /// everything below (`frontend.*`) — the syntax of a provider's `overridePaths`. Omitted:
    /// any path (the core's built-in refusals still apply); empty: no overrides at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64), extend("x-kubernetes-list-type" = "set"))]
    #[schemars(extend("items" = {"type": "string", "minLength": 1, "maxLength": 253, "pattern": "^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*(\\.\\*)?$|^\\*$"}))]
    pub allowed_override_paths: Option<Vec<String>>,
}
