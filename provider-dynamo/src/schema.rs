//! The DynamoGraphDeployment version this provider renders for, and the schema paths it writes.

use airunway_api::provider::SchemaAdapter;

/// The paths written for `nvidia.com/v1alpha1`.
pub const V1ALPHA1_PATHS: &[&str] = &[
    "spec.backendFramework",
    "spec.services.*.componentType",
    "spec.services.*.subComponentType",
    "spec.services.*.dynamoNamespace",
    "spec.services.*.replicas",
    "spec.services.*.envFromSecret",
    "spec.services.*.envs",
    "spec.services.*.resources.limits.gpu",
    "spec.services.*.resources.limits.gpuType",
    "spec.services.*.resources.limits.memory",
    "spec.services.*.resources.requests.cpu",
    "spec.services.*.resources.requests.memory",
    "spec.services.*.extraPodMetadata.labels",
    "spec.services.*.extraPodMetadata.annotations",
    "spec.services.*.extraPodSpec.nodeSelector",
    "spec.services.*.extraPodSpec.tolerations",
    "spec.services.*.extraPodSpec.mainContainer.image",
    "spec.services.*.extraPodSpec.mainContainer.command",
    "spec.services.*.extraPodSpec.mainContainer.args",
    "spec.services.*.volumeMounts[].name",
    "spec.services.*.volumeMounts[].mountPoint",
    "spec.services.*.volumeMounts[].useAsCompilationCache",
    "spec.pvcs[].name",
    "spec.pvcs[].create",
];

/// Supported versions with the fingerprints of the Dynamo releases this provider was tested
/// against (the Dynamo 1.1 line).
pub const ADAPTERS: &[SchemaAdapter] = &[SchemaAdapter {
    version: "v1alpha1",
    paths: V1ALPHA1_PATHS,
    known_fingerprints: &[V1ALPHA1_DYNAMO_1_1],
}];

/// Fingerprint of `nvidia.com/v1alpha1` DynamoGraphDeployment in Dynamo 1.1.
pub const V1ALPHA1_DYNAMO_1_1: &str = "b988c5e17d5c5ec9";
