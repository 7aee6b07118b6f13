//! What a vLLM server needs (pure), checked once for every provider that runs one: each
//! provider words the [`VllmGap`] in its own messages.

use crate::v1alpha1::{ComponentScaling, EngineType, ModelDeployment, ServingMode};

/// Whether a provider serves disaggregated (prefill and decode) deployments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disaggregation {
    /// Prefill and decode components, each needing `scaling.<role>` with GPUs.
    Served,
    /// Aggregated only.
    NotServed,
}

/// A disaggregated component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// `scaling.prefill`.
    Prefill,
    /// `scaling.decode`.
    Decode,
}

impl Role {
    /// `prefill` or `decode`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Prefill => "prefill",
            Role::Decode => "decode",
        }
    }
}

/// The first thing a deployment lacks for a vLLM server, in the order checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VllmGap {
    /// No engine resolved yet.
    NoEngine,
    /// An engine other than vLLM.
    OtherEngine(EngineType),
    /// Disaggregated serving, which the provider does not serve.
    Disaggregated,
    /// Aggregated without GPUs.
    NoGpu,
    /// Disaggregated without `scaling.<role>`.
    NoComponent(Role),
    /// Disaggregated with no GPU for `scaling.<role>`.
    NoComponentGpu(Role),
    /// No `model.id` (vLLM's `--model`).
    NoModelId,
}

/// The message of [`VllmGap::NoEngine`], the same for every provider.
pub const NO_ENGINE: &str = "No engine selected yet";

fn gpus(component: &ComponentScaling) -> i32 {
    component.gpu.as_ref().and_then(|g| g.count).unwrap_or(0)
}

/// `Ok` when a vLLM server of a provider with `disaggregation` can serve `md`, else the first
/// gap: engine, serving mode and GPUs, then the model id.
pub fn check(md: &ModelDeployment, disaggregation: Disaggregation) -> Result<(), VllmGap> {
    let spec = &md.spec;
    let engine = md.resolved_engine().ok_or(VllmGap::NoEngine)?;
    if engine != EngineType::Vllm {
        return Err(VllmGap::OtherEngine(engine));
    }
    match (spec.serving_mode(), disaggregation) {
        (ServingMode::Disaggregated, Disaggregation::NotServed) => {
            return Err(VllmGap::Disaggregated);
        }
        (ServingMode::Disaggregated, Disaggregation::Served) => {
            let scaling = spec.scaling.as_ref();
            for (role, component) in [
                (Role::Prefill, scaling.and_then(|s| s.prefill.as_ref())),
                (Role::Decode, scaling.and_then(|s| s.decode.as_ref())),
            ] {
                let Some(component) = component else {
                    return Err(VllmGap::NoComponent(role));
                };
                if gpus(component) <= 0 {
                    return Err(VllmGap::NoComponentGpu(role));
                }
            }
        }
        (ServingMode::Aggregated, _) => {
            if spec.gpu_count() <= 0 {
                return Err(VllmGap::NoGpu);
            }
        }
    }
    if spec.model.id.as_deref().is_none_or(str::is_empty) {
        return Err(VllmGap::NoModelId);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn md(spec: serde_json::Value) -> ModelDeployment {
        serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1",
            "kind": "ModelDeployment", "metadata": {"name": "m"}, "spec": spec}))
        .unwrap()
    }

    #[test]
    fn gaps_in_the_order_checked() {
        let gpu = json!({"gpu": {"count": 1}});
        for (spec, disaggregation, expected) in [
            (
                json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": gpu}),
                Disaggregation::NotServed,
                Ok(()),
            ),
            (
                json!({"model": {"id": "a/b"}, "engine": {"type": "sglang"}, "resources": gpu}),
                Disaggregation::Served,
                Err(VllmGap::OtherEngine(EngineType::Sglang)),
            ),
            (
                json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 0}}}),
                Disaggregation::Served,
                Err(VllmGap::NoGpu),
            ),
            (
                json!({"model": {"source": "custom"}, "engine": {"type": "vllm"}, "resources": gpu}),
                Disaggregation::Served,
                Err(VllmGap::NoModelId),
            ),
            (
                json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"}}),
                Disaggregation::NotServed,
                Err(VllmGap::Disaggregated),
            ),
            (
                json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"}}),
                Disaggregation::Served,
                Err(VllmGap::NoComponent(Role::Prefill)),
            ),
            (
                json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"},
                "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"replicas": 1}}}),
                Disaggregation::Served,
                Err(VllmGap::NoComponentGpu(Role::Decode)),
            ),
            (
                json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"},
                "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}}}),
                Disaggregation::Served,
                Ok(()),
            ),
        ] {
            assert_eq!(check(&md(spec.clone()), disaggregation), expected, "{spec}");
        }
    }
}
