//! Version `v1alpha1` of the `airunway.ai` API.

mod condition;
mod model_cache;
mod model_deployment;
mod provider_config;

pub use condition::{Condition, ConditionStatus};
pub use model_cache::*;
pub use model_deployment::*;
pub use provider_config::*;
