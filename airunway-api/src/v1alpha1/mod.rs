//! Version `v1alpha1` of the `airunway.ai` API.

mod adapters;
mod autoscaling;
mod condition;
mod model_cache;
mod model_deployment;
mod not_ready;
mod policy;
mod provider_config;
mod runtime_config;
mod workload;

pub use adapters::*;
pub use autoscaling::*;
pub use condition::{Condition, ConditionStatus};
pub use model_cache::*;
pub use model_deployment::*;
pub use not_ready::*;
pub use policy::*;
pub use provider_config::*;
pub use runtime_config::*;
pub use workload::*;
