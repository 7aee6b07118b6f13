//! Engine and provider selection (pure): what the core decides for a deployment from its spec
//! and the registered providers.

pub mod availability;
pub mod cost;
pub mod engine;
pub mod provider;
pub mod rules;

pub use availability::{Availability, HealthPolicy, ProviderView, provider_views};
pub use engine::{EngineDecision, select_engine};
pub use provider::{ProviderDecision, ProviderSelection, select_provider};
pub use rules::{RuleError, RuleSet};
