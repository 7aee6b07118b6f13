//! # airunway-core
//!
//! The AI Runway core controller. It has no provider knowledge: it reads ModelDeployments and
//! InferenceProviderConfigs only, and writes the status fields the core owns.
//!
//! The reconcile is a pipeline whose middle is pure:
//! fetch (from the watch caches) → [`validation`] → [`selection`] (engine, then provider) →
//! [`status::desired_status`] → server-side apply of the core's status fields (skipped when
//! nothing changed) → events and metrics.

pub mod access;
pub mod args;
pub mod autoscaling;
pub mod controller;
pub mod crd_schema;
pub mod dry_run;
pub mod error;
pub mod gateway;
pub mod health;
pub mod metrics;
pub mod model_cache;
pub mod offline;
pub mod policy;
pub mod run;
pub mod runtime_config;
pub mod secret_references;
pub mod selection;
pub mod status;
pub mod traces;
pub mod unknown_fields;
pub mod validation;
pub mod webhook;

pub use airunway_api::runtime::parse_duration;
