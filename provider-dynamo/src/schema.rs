//! The DynamoGraphDeployment versions this provider renders for, and the schema paths it writes.
//!
//! `v1beta1` first: where the CRD serves both (Dynamo ≥ 1.5), `v1beta1` is rendered. It is
//! the storage version, so reads and writes need no call to Dynamo's conversion webhook and
//! carry no deprecation warning, and it is the version Dynamo keeps. Dynamo 1.1 serves
//! `v1alpha1` only.

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

/// The paths written for `nvidia.com/v1beta1`.
pub const V1BETA1_PATHS: &[&str] = &[
    "spec.backendFramework",
    "spec.components[].name",
    "spec.components[].type",
    "spec.components[].replicas",
    "spec.components[].frontendSidecar",
    "spec.components[].compilationCache.pvcName",
    "spec.components[].compilationCache.mountPath",
    "spec.components[].eppConfig.config",
    "spec.components[].podTemplate.metadata.labels",
    "spec.components[].podTemplate.metadata.annotations",
    "spec.components[].podTemplate.spec.nodeSelector",
    "spec.components[].podTemplate.spec.tolerations",
    "spec.components[].podTemplate.spec.volumes[].name",
    "spec.components[].podTemplate.spec.volumes[].persistentVolumeClaim.claimName",
    "spec.components[].podTemplate.spec.containers[].name",
    "spec.components[].podTemplate.spec.containers[].image",
    "spec.components[].podTemplate.spec.containers[].command",
    "spec.components[].podTemplate.spec.containers[].args",
    "spec.components[].podTemplate.spec.containers[].env",
    "spec.components[].podTemplate.spec.containers[].envFrom[].secretRef.name",
    "spec.components[].podTemplate.spec.containers[].resources.limits",
    "spec.components[].podTemplate.spec.containers[].resources.requests",
    "spec.components[].podTemplate.spec.containers[].volumeMounts[].name",
    "spec.components[].podTemplate.spec.containers[].volumeMounts[].mountPath",
];

/// Supported versions in preference order (`v1beta1` first: see the module documentation),
/// with the fingerprints of the Dynamo releases this provider was tested against.
pub const ADAPTERS: &[SchemaAdapter] = &[
    SchemaAdapter {
        version: "v1beta1",
        paths: V1BETA1_PATHS,
        known_fingerprints: &[V1BETA1_DYNAMO_1_5],
    },
    SchemaAdapter {
        version: "v1alpha1",
        paths: V1ALPHA1_PATHS,
        known_fingerprints: &[V1ALPHA1_DYNAMO_1_1],
    },
];

/// Fingerprint of `nvidia.com/v1alpha1` DynamoGraphDeployment in Dynamo 1.1.
pub const V1ALPHA1_DYNAMO_1_1: &str = "b988c5e17d5c5ec9";

/// Fingerprint of `nvidia.com/v1beta1` DynamoGraphDeployment in Dynamo ≥ 1.5
/// (`e2e/fixtures/upstream-crds/dynamo/`).
pub const V1BETA1_DYNAMO_1_5: &str = "d622d1fe971b40da";
