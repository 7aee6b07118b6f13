//! The pure part of a direct vLLM provider reconcile, per deployment: compatibility, render of
//! the Deployment and Service, the objects to apply, the drift check of both against their live
//! copies, and the status from the live Deployment; then the status translation alone. Sizes:
//! a one-GPU deployment with no user flags, and an eight-GPU one whose user flags override
//! derived ones (the suppression path). Prints time and allocations.
//!
//! `cargo bench -p airunway-provider-vllm --bench provider_cycle`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::{Provider, cycle};
use airunway_api::serde_json::{self, Value, json};
use airunway_api::v1alpha1::ModelDeployment;
use airunway_provider_vllm::VllmProvider;
use divan::{AllocProfiler, Bencher, black_box};

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

fn main() {
    divan::main();
}

fn now() -> airunway_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    airunway_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        "2026-01-01T00:00:00Z".parse().unwrap(),
    )
}

const SIZES: [&str; 2] = ["1-gpu", "8-gpu-user-flags"];

fn model_deployment(size: &str) -> ModelDeployment {
    let engine = if size == "1-gpu" {
        json!({"type": "vllm"})
    } else {
        json!({"type": "vllm", "contextLength": 32768,
               "args": {"max-model-len": "16384", "gpu-memory-utilization": "0.92", "kv-cache-dtype": "fp8"},
               "extraArgs": ["--tensor-parallel-size=8", "--seed", "1"]})
    };
    let gpus = if size == "1-gpu" { 1 } else { 8 };
    serde_json::from_value(
        json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "bench", "namespace": "default", "uid": "u", "generation": 1},
        "spec": {"model": {"id": "Qwen/Qwen3-8B", "servedName": "qwen3"}, "engine": engine,
                 "resources": {"gpu": {"count": gpus}, "memory": "64Gi"},
                 "provider": {"name": "vllm"}, "secrets": {"huggingFaceToken": "hf-token"}},
        "status": {"provider": {"name": "vllm"}}}),
    )
    .unwrap()
}

fn deployment_status() -> Value {
    json!({"replicas": 1, "readyReplicas": 1, "availableReplicas": 1, "conditions": [
        {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "ok"}]})
}

/// The deployment with its two objects as the API server holds them once Available.
fn settled(size: &str) -> (ModelDeployment, Vec<DynamicObject>) {
    let md = model_deployment(size);
    let schema = VllmProvider::default()
        .detect_schema(None)
        .schema()
        .cloned()
        .unwrap();
    let created = cycle::apply_set(&VllmProvider::default(), &md, &schema, &[], &now()).unwrap();
    let mut live = Vec::new();
    for (desired, _) in &created.objects {
        let is_deployment = desired.kind() == "Deployment";
        let status = if is_deployment {
            deployment_status()
        } else {
            json!({})
        };
        live.push(cycle::served(desired, status).unwrap());
    }
    (md, live)
}

/// A reconcile of a settled deployment, from the deployment to the status.
#[divan::bench(args = SIZES)]
fn set_cycle(bencher: Bencher<'_, '_>, size: &str) {
    let (md, objects) = settled(size);
    let refs: Vec<Option<&DynamicObject>> = objects.iter().map(Some).collect();
    let schema = VllmProvider::default()
        .detect_schema(None)
        .schema()
        .cloned()
        .unwrap();
    let now = now();
    bencher.bench_local(|| {
        cycle::apply_set(
            &VllmProvider::default(),
            black_box(&md),
            &schema,
            &refs,
            &now,
        )
    });
}

/// The status translation alone (run on every Deployment status change).
#[divan::bench(args = SIZES)]
fn status_translation(bencher: Bencher<'_, '_>, size: &str) {
    let (md, objects) = settled(size);
    bencher.bench_local(|| {
        VllmProvider::default().translate_status(black_box(&md), &[objects.first()])
    });
}
