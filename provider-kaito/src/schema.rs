//! The Workspace versions this provider renders for, and the schema paths it writes.

use airunway_api::provider::SchemaAdapter;

/// The paths written for `kaito.sh/v1beta1`.
pub const V1BETA1_PATHS: &[&str] = &[
    "resource.count",
    "resource.labelSelector.matchLabels",
    "inference.preset.name",
    "inference.preset.presetOptions.modelAccessSecret",
    "inference.template",
];

/// The paths written for `kaito.sh/v1alpha1` (no `modelAccessSecret` there).
pub const V1ALPHA1_PATHS: &[&str] = &[
    "resource.count",
    "resource.labelSelector.matchLabels",
    "inference.preset.name",
    "inference.template",
];

/// Supported versions, preferred first, with the fingerprints of the KAITO releases this
/// provider was tested against (KAITO v0.10.0).
pub const ADAPTERS: &[SchemaAdapter] = &[
    SchemaAdapter {
        version: "v1beta1",
        paths: V1BETA1_PATHS,
        known_fingerprints: &[V1BETA1_KAITO_0_10],
    },
    SchemaAdapter {
        version: "v1alpha1",
        paths: V1ALPHA1_PATHS,
        known_fingerprints: &[V1ALPHA1_KAITO_0_10],
    },
];

/// Fingerprint of `kaito.sh/v1beta1` Workspace in KAITO v0.10.0.
pub const V1BETA1_KAITO_0_10: &str = "c122e829f70c5bc8";
/// Fingerprint of `kaito.sh/v1alpha1` Workspace in KAITO v0.10.0.
pub const V1ALPHA1_KAITO_0_10: &str = "703bc6cd5e6e9453";
