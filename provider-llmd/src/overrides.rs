//! `provider.overrides` for llm-d: deep-merged into every vLLM Deployment (not the Services),
//! with the refusals of the SDK's [`vllm_kit::overrides`](airunway_api::provider::vllm_kit::overrides)
//! (the same for the direct vLLM provider).

pub use airunway_api::provider::vllm_kit::overrides::{ALSO_ESCALATING, SCHEMA, apply};
