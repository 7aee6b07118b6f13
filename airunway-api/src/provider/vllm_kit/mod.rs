//! **Kit**: vLLM as plain Kubernetes workloads (pure), shared by the providers whose "upstream
//! operator" is Kubernetes itself (llm-d and the direct vLLM provider; KubeRay uses
//! [`compat`]). Not part of the provider contract: a provider may use it or not.
//!
//! - [`compat`]: what a vLLM server needs (the vLLM engine, GPUs, a model id, the serving mode
//!   the provider supports), as a typed gap each provider words in its own messages;
//! - [`render`]: an `apps/v1 Deployment` and a `v1 Service` per serving component (the
//!   aggregated server, or prefill and decode components with KV-transfer roles);
//! - [`parsers`]: tool calling and reasoning parsers as vLLM flags;
//! - [`lora`]: the LoRA adapters' flags and claims, and the sources vLLM cannot load;
//! - [`overrides`]: `provider.overrides` merged into the Deployments, with the same refusals
//!   for every provider of the kit;
//! - [`status`]: the deployment status translated from the real Deployment conditions the
//!   deployment controller writes;
//! - [`workload`]: `status.workload`, the Deployments and the selector of their pods.
//!
//! What differs between the providers (extra arguments, pod labels, the default image) is
//! passed in.

pub mod compat;
pub mod lora;
pub mod overrides;
pub mod parsers;
pub mod render;
pub mod status;
pub mod workload;

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
