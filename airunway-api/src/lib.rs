//! # airunway-api
//!
//! The one crate every AI Runway binary shares, and the crate third parties build providers on.
//!
//! - [`v1alpha1`]: the `ModelDeployment`, `InferenceProviderConfig` and `ModelCache` kinds (group
//!   `airunway.ai`), with their CRD schemas, defaults and CEL validation rules.
//! - [`constants`]: annotations, labels, finalizers, field managers, condition types and
//!   reasons, event reasons and the spec's exact messages.
//! - [`resolve`] and [`conditions`]: pure helpers over the types; [`policy`]: ModelDeploymentPolicy
//!   evaluation and GPU accounting; [`storage`]: the
//!   `model.storage` volumes resolved and the shared model cache they name; [`lora`]: LoRA
//!   adapter sources, rules, engine rank and `status.adapters`.
//! - [`image_reference`] and [`kubernetes_names`]: the image-reference and Kubernetes name
//!   and label grammars, one definition for every binary.
//! - [`engine_parsers`]: tool calling and reasoning parsers: the parser-name grammar, the
//!   parsers known for model families, what a render asks the engine for.
//! - [`apply_body`]: server-side apply patches the API server's YAML reader always accepts.
//! - `probe` feature: the generated gRPC bindings of the provider probe
//!   (`proto/airunway/provider/v1/provider.proto`).
//! - `runtime` feature: operational plumbing shared by the binaries (client, telemetry,
//!   metrics, health endpoints, leader election).
//! - `offline` feature: what the offline commands share (inputs, findings, output formats,
//!   exit codes; docs/gitops.md).
//! - `provider-sdk` feature: write a provider as a handful of pure functions (see `provider`).
//!
//! The plain types need only kube's `derive` side: no client, no async runtime.
//!
//! `kube`, `k8s_openapi`, `schemars` and `serde_json` are re-exported so dependents build against exactly the
//! versions these types were built with.

pub use k8s_openapi;
pub use kube;
pub use schemars;
pub use serde_json;

pub mod apply_body;
pub mod cache_trim;
pub mod compact_object;
pub mod compact_resource;
pub mod conditions;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod constants;
pub mod engine_parsers;
#[cfg(feature = "generate")]
pub mod generate;
pub mod guarded_decode;
pub mod image_reference;
#[cfg(feature = "runtime")]
pub mod kube_error;
pub mod kubernetes_names;
pub mod lora;
pub mod managed_fields;
pub mod metric_names;
#[cfg(feature = "offline")]
pub mod offline;
pub mod pod_security;
pub mod policy;
#[cfg(feature = "probe")]
pub mod probe;
#[cfg(feature = "provider-sdk")]
pub mod provider;
pub mod resolve;
#[cfg(feature = "runtime")]
pub mod runtime;
pub mod runtime_config;
pub mod schema;
pub mod storage;
pub mod v1alpha1;
