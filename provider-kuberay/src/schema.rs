//! The RayService versions this provider renders for, and the schema paths it writes.

use airunway_api::provider::SchemaAdapter;

/// The paths written (the same in `ray.io/v1` and `ray.io/v1alpha1`).
pub const PATHS: &[&str] = &[
    "spec.serveConfigV2",
    "spec.rayClusterConfig.rayVersion",
    "spec.rayClusterConfig.headGroupSpec.rayStartParams",
    "spec.rayClusterConfig.headGroupSpec.template.metadata",
    "spec.rayClusterConfig.headGroupSpec.template.spec.containers[].name",
    "spec.rayClusterConfig.headGroupSpec.template.spec.containers[].image",
    "spec.rayClusterConfig.headGroupSpec.template.spec.containers[].env",
    "spec.rayClusterConfig.headGroupSpec.template.spec.containers[].ports",
    "spec.rayClusterConfig.headGroupSpec.template.spec.containers[].resources.limits",
    "spec.rayClusterConfig.headGroupSpec.template.spec.containers[].resources.requests",
    "spec.rayClusterConfig.headGroupSpec.template.spec.nodeSelector",
    "spec.rayClusterConfig.headGroupSpec.template.spec.tolerations",
    "spec.rayClusterConfig.headGroupSpec.template.spec.volumes",
    "spec.rayClusterConfig.headGroupSpec.template.spec.containers[].volumeMounts",
    "spec.rayClusterConfig.workerGroupSpecs[].groupName",
    "spec.rayClusterConfig.workerGroupSpecs[].replicas",
    "spec.rayClusterConfig.workerGroupSpecs[].minReplicas",
    "spec.rayClusterConfig.workerGroupSpecs[].maxReplicas",
    "spec.rayClusterConfig.workerGroupSpecs[].rayStartParams",
    "spec.rayClusterConfig.workerGroupSpecs[].template.metadata",
    "spec.rayClusterConfig.workerGroupSpecs[].template.spec.containers[].name",
    "spec.rayClusterConfig.workerGroupSpecs[].template.spec.containers[].image",
    "spec.rayClusterConfig.workerGroupSpecs[].template.spec.containers[].env",
    "spec.rayClusterConfig.workerGroupSpecs[].template.spec.containers[].resources.limits",
    "spec.rayClusterConfig.workerGroupSpecs[].template.spec.containers[].resources.requests",
    "spec.rayClusterConfig.workerGroupSpecs[].template.spec.nodeSelector",
    "spec.rayClusterConfig.workerGroupSpecs[].template.spec.tolerations",
    "spec.rayClusterConfig.workerGroupSpecs[].template.spec.volumes",
    "spec.rayClusterConfig.workerGroupSpecs[].template.spec.containers[].volumeMounts",
];

/// Supported versions, preferred first, with the fingerprints of the KubeRay releases this
/// provider was tested against (KubeRay v1.3.0).
pub const ADAPTERS: &[SchemaAdapter] = &[
    SchemaAdapter {
        version: "v1",
        paths: PATHS,
        known_fingerprints: &[V1_KUBERAY_1_3],
    },
    SchemaAdapter {
        version: "v1alpha1",
        paths: PATHS,
        known_fingerprints: &[V1ALPHA1_KUBERAY_1_3],
    },
];

/// Fingerprint of `ray.io/v1` RayService in KubeRay v1.3.0.
pub const V1_KUBERAY_1_3: &str = "7cdae45a72e929fd";
/// Fingerprint of `ray.io/v1alpha1` RayService in KubeRay v1.3.0.
pub const V1ALPHA1_KUBERAY_1_3: &str = "7cdae45a72e929fd";
