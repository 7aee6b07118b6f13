//! `provider.overrides` for llm-d: deep-merged into every vLLM Deployment (not the Services),
//! with the refusals of the SDK's shared [`workload::overrides`](airunway_api::provider::workload::overrides)
//! (the same for the direct vLLM provider).

pub use airunway_api::provider::workload::overrides::{
    ALSO_ESCALATING, RESERVED_ROOT, apply, check,
};
