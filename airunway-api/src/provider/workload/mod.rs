//! vLLM as plain Kubernetes workloads (pure): an `apps/v1 Deployment` and a `v1 Service` per
//! serving component ([`render`]) and the deployment status translated from the real
//! Deployment conditions the deployment controller writes ([`status`]). Providers whose
//! "upstream operator" is Kubernetes itself build on it: llm-d (aggregated, or prefill and
//! decode components with KV-transfer roles) and the direct vLLM provider. What differs
//! between them (extra arguments, pod labels, the default image) is passed in; both merge
//! `provider.overrides` into their Deployments with the same refusals ([`overrides`]).

pub mod overrides;
pub mod render;
pub mod status;

use super::traits::UpstreamKind;

/// The `apps/v1 Deployment` kind.
pub fn deployment_kind() -> UpstreamKind {
    UpstreamKind {
        group: "apps".into(),
        kind: "Deployment".into(),
        plural: "deployments".into(),
        default_version: "v1".into(),
        from_crd: false,
    }
}

/// The `v1 Service` kind.
pub fn service_kind() -> UpstreamKind {
    UpstreamKind {
        group: String::new(),
        kind: "Service".into(),
        plural: "services".into(),
        default_version: "v1".into(),
        from_crd: false,
    }
}

/// The schema fingerprint of a built-in kind (the IPC's `upstreamSchemaHash`; its
/// `UpstreamAvailable` condition then says no CRD is needed).
pub const BUILTIN_FINGERPRINT: &str = "built-in";

/// The detection of a built-in kind: always `Supported` at `apps/v1` (no CRD involved).
pub fn builtin_schema() -> super::traits::SchemaDetection {
    super::traits::SchemaDetection::Supported(super::traits::UpstreamSchema {
        version: "v1".into(),
        api_version: "apps/v1".into(),
        fingerprint: BUILTIN_FINGERPRINT.into(),
    })
}

/// The primary object of a rendered set (its first) as the single object of
/// [`Provider::render`](super::traits::Provider::render), for providers that render a set;
/// an empty set is an error naming the provider (`display_name`).
pub fn primary(
    set: super::traits::RenderedSet,
    display_name: &str,
) -> Result<super::traits::Rendered, super::traits::RenderError> {
    let warnings = set.warnings;
    let object = set.objects.into_iter().next().ok_or_else(|| {
        super::traits::RenderError::Unsupported(format!("{display_name} rendered no object"))
    })?;
    Ok(super::traits::Rendered { object, warnings })
}
