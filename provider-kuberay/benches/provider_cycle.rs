//! The pure part of a KubeRay provider reconcile, per deployment: compatibility, render (with
//! the serveConfigV2 YAML text), the object to apply, the drift check against the live
//! RayService, status translation and the status patch; the periodic status sync alone; and
//! schema detection of the installed RayService CRD (936 kB of YAML). Prints time and
//! allocations.
//!
//! `cargo bench -p airunway-provider-kuberay --bench provider_cycle`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use airunway_api::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use airunway_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::desired::DesiredUpstream;
use airunway_api::provider::{Provider, UpstreamSchema, cycle, testing};
use airunway_api::serde_json::{self, Value, json};
use airunway_api::v1alpha1::ModelDeployment;
use airunway_provider_kuberay::KubeRayProvider;
use divan::{AllocProfiler, Bencher, black_box};

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

fn main() {
    divan::main();
}

fn installed_crd() -> CustomResourceDefinition {
    testing::established_crd(
        env!("CARGO_MANIFEST_DIR"),
        "kuberay/ray.io_rayservices.yaml",
    )
    .unwrap()
}

fn detected_schema() -> UpstreamSchema {
    let detection = KubeRayProvider.detect_schema(Some(&installed_crd()));
    detection
        .schema()
        .cloned()
        .expect("the shipped CRD is supported")
}

/// An aggregated GPU vLLM deployment with the usual settings, or a disaggregated one.
fn deployment(mode: &str) -> ModelDeployment {
    let mut spec = json!({"model": {"id": "Qwen/Qwen3-8B", "servedName": "qwen3"},
        "engine": {"type": "vllm", "contextLength": 8192, "args": {"enable-prefix-caching": "true", "gpu-memory-utilization": "0.9"}},
        "provider": {"name": "kuberay", "overrides": {"head": {"rayStartParams": {"num-cpus": "0"}}}},
        "secrets": {"huggingFaceToken": "hf-token"}, "env": [{"name": "VLLM_LOGGING_LEVEL", "value": "INFO"}]});
    if mode == "disaggregated" {
        spec["serving"] = json!({"mode": "disaggregated"});
        spec["scaling"] = json!({"prefill": {"replicas": 2, "gpu": {"count": 2}}, "decode": {"replicas": 2, "gpu": {"count": 2}}});
    } else {
        spec["resources"] = json!({"gpu": {"count": 1}, "memory": "32Gi"});
    }
    serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "qwen3", "namespace": "default", "uid": "u", "generation": 1, "labels": {"airunway.ai/team": "search"}},
        "spec": spec, "status": {"provider": {"name": "kuberay"}}}))
    .unwrap()
}

/// The deployment, the RayService to apply for it, and that object as the API server returns
/// it once the KubeRay operator reports it serving.
fn settled(
    mode: &str,
) -> (
    ModelDeployment,
    UpstreamSchema,
    DesiredUpstream,
    DynamicObject,
) {
    let (md, schema) = (deployment(mode), detected_schema());
    let applied = cycle::apply(&KubeRayProvider, &md, &schema, None, &now()).unwrap();
    let sample: Value = testing::upstream(
        env!("CARGO_MANIFEST_DIR"),
        "status-samples/rayservice-running.yaml",
    )
    .unwrap();
    let live = cycle::served(&applied.desired, sample["status"].clone()).unwrap();
    (md, schema, applied.desired, live)
}

fn now() -> Time {
    Time("2026-06-01T12:00:00Z".parse().unwrap())
}

/// A reconcile that applies: every pure step from the deployment to the status patch.
#[divan::bench(args = ["aggregated", "disaggregated"])]
fn apply_cycle(bencher: Bencher<'_, '_>, mode: &str) {
    let (md, schema, _, live) = settled(mode);
    let now = now();
    bencher
        .bench_local(|| cycle::apply(&KubeRayProvider, black_box(&md), &schema, Some(&live), &now));
}

/// The periodic status sync of a settled deployment: translate and compare, no write.
#[divan::bench(args = ["aggregated", "disaggregated"])]
fn status_sync(bencher: Bencher<'_, '_>, mode: &str) {
    let (md, _, desired, live) = settled(mode);
    bencher.bench_local(|| cycle::status_sync(&KubeRayProvider, black_box(&md), &desired, &live));
}

/// Schema detection of the installed RayService CRD (on start and on every heartbeat).
#[divan::bench]
fn detect_schema(bencher: Bencher<'_, '_>) {
    let crd = installed_crd();
    bencher.bench_local(|| KubeRayProvider.detect_schema(black_box(Some(&crd))));
}
