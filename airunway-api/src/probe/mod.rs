//! The provider probe (feature `probe`): the gRPC bindings generated from
//! `proto/airunway/provider/v1/provider.proto`, and the standard `grpc.health.v1` types.
//!
//! A provider serves `grpc.health.v1.Health` and [`v1::provider_service_server`] on the endpoint
//! it advertises in `spec.probe.endpoint`; the core calls both (see the proto for the contract).

/// `airunway.provider.v1`: `ProviderService` and its messages (generated, checked in; CI fails
/// when it drifts from the proto).
#[allow(missing_docs, clippy::all, clippy::pedantic, rust_2018_idioms)]
pub mod v1 {
    include!("generated/airunway.provider.v1.rs");
}

/// The standard gRPC health service types (`grpc.health.v1`), from `tonic-health`.
pub use tonic_health::pb as health;
