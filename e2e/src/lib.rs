//! # airunway-e2e
//!
//! The real control plane harness and the end-to-end scenarios of AI Runway.
//!
//! - [`control_plane`]: etcd, kube-apiserver and kube-controller-manager built from Go modules
//!   (`e2e/control-plane/build.sh`), started on free ports with our CRDs and every upstream CRD
//!   installed; one per test binary ([`ControlPlane::shared`]).
//! - [`env::TestEnv`]: a client and a namespace per test; failure reports with log tails.
//! - [`binaries`]: our real binaries as child processes; [`stack`]: the core and providers
//!   started on free ports and waited for.
//! - [`wait`]: waiting with timeouts and useful failure messages.
//! - [`webhook`]: serving an admission webhook from a test; [`admission`]: the core's own
//!   webhooks in a test, and requests whose warnings and causes are read.
//! - [`providers`]: provider registrations written as a provider writes them.
//! - [`manifests`]: the shipped `deploy/` manifests applied to the test control plane.
//! - [`kustomize`]: the kustomize subset `deploy/` uses, rendered without a kustomize binary.
//! - [`images`]: our images unpacked and their entrypoints run as their ServiceAccounts.
//! - [`http`]: GET for metrics and health endpoints.
//! - [`registry`]: a real OCI registry on loopback, with images pushed by the image tool
//!   (`airunway-images`, deploy/images/oci).
//! - [`sandbox`]: the local sandbox (`e2e/sandbox up`).
//! - [`bench`]: the scale benchmark (`e2e/bench`).
//! - [`chaos`]: faults injected while work is in flight (`e2e/tests/chaos.rs`).
//! - [`model_cache`]: the model cache's download Job played by a test (its identity, its
//!   arguments, its Pod's end).
//! - [`autoscaling`]: KEDA (operator and external metrics server) and Prometheus beside the
//!   control plane, and a played model server whose `/metrics` the test sets.
//! - [`dynamo_conversion`]: Dynamo's DynamoGraphDeployment conversion webhook (`v1alpha1` <->
//!   `v1beta1`), played: registered in the CRD by the control plane.
//! - [`traces`]: a real OpenTelemetry Collector (OTLP receiver, debug exporter; built by
//!   `e2e/go/otelcol/build.sh`) and the spans it received, read back.
//! - [`process`]: child process supervision (teardown even on panic, Ctrl-C or SIGKILL).

// The harness is test support: it fails a test by panicking with a message that says what was
// expected and what was seen (the way assertions do), so `panic!` is its reporting channel.
#![allow(clippy::panic)]

pub mod admission;
pub mod autoscaling;
pub mod bench;
pub mod binaries;
pub mod chaos;
pub mod control_plane;
pub mod dynamo_conversion;
pub mod dynamo_graph;
pub mod env;
pub mod http;
pub mod images;
pub mod kustomize;
pub mod manifests;
pub mod model_cache;
pub mod paths;
pub mod pki;
pub mod process;
pub mod providers;
pub mod registry;
pub mod sandbox;
pub mod scale;
pub mod stack;
pub mod traces;
pub mod wait;
pub mod webhook;

pub use control_plane::{ControlPlane, ControlPlaneOptions};
pub use env::{TestEnv, cluster_lock};
