//! The pure part of an llm-d provider reconcile, per deployment: compatibility, render of the
//! Deployments and Services, the objects to apply, the drift check of every object against its
//! live copy and the status translated from the live Deployments (aggregated: two objects;
//! disaggregated: four). Prints time and allocations.
//!
//! `cargo bench -p airunway-provider-llmd --bench provider_cycle`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::{Provider, UpstreamSchema, cycle};
use airunway_api::serde_json::{self, json};
use airunway_api::v1alpha1::ModelDeployment;
use airunway_provider_llmd::LlmdProvider;
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

fn schema() -> UpstreamSchema {
    LlmdProvider.detect_schema(None).schema().cloned().unwrap()
}

/// An aggregated GPU vLLM deployment with the usual settings, or a disaggregated one.
fn deployment(mode: &str) -> ModelDeployment {
    let mut spec = json!({"model": {"id": "Qwen/Qwen3-8B", "servedName": "qwen3"},
        "engine": {"type": "vllm", "contextLength": 8192, "args": {"gpu-memory-utilization": "0.9"}},
        "provider": {"name": "llmd", "overrides": {"spec": {"progressDeadlineSeconds": 1800}}},
        "secrets": {"huggingFaceToken": "hf-token"}, "env": [{"name": "VLLM_LOGGING_LEVEL", "value": "INFO"}]});
    if mode == "disaggregated" {
        spec["serving"] = json!({"mode": "disaggregated"});
        spec["scaling"] = json!({"prefill": {"replicas": 2, "gpu": {"count": 2}}, "decode": {"replicas": 2, "gpu": {"count": 2}}});
    } else {
        spec["resources"] = json!({"gpu": {"count": 1}, "memory": "32Gi"});
    }
    serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "qwen3", "namespace": "default", "uid": "u", "generation": 1, "labels": {"airunway.ai/team": "search"}},
        "spec": spec, "status": {"provider": {"name": "llmd"}}}))
    .unwrap()
}

/// The deployment and its objects as the API server returns them once every Deployment is
/// Available.
fn settled(mode: &str) -> (ModelDeployment, Vec<DynamicObject>) {
    let md = deployment(mode);
    let first = cycle::apply_set(&LlmdProvider, &md, &schema(), &[], &now()).unwrap();
    let live = first
        .objects
        .iter()
        .map(|(desired, _)| {
            let status = if desired.kind() == "Deployment" {
                json!({"replicas": 2, "readyReplicas": 2, "availableReplicas": 2, "conditions": [
                    {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."},
                    {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": "ReplicaSet has successfully progressed."}]})
            } else {
                json!({"loadBalancer": {}})
            };
            cycle::served(desired, status).unwrap()
        })
        .collect();
    (md, live)
}

/// A reconcile of a settled deployment: every pure step from the deployment to the status.
#[divan::bench(args = ["aggregated", "disaggregated"])]
fn set_cycle(bencher: Bencher<'_, '_>, mode: &str) {
    let (md, live) = settled(mode);
    let live: Vec<Option<&DynamicObject>> = live.iter().map(Some).collect();
    let schema = schema();
    let now = now();
    bencher.bench_local(|| cycle::apply_set(&LlmdProvider, black_box(&md), &schema, &live, &now));
}

/// Status translation alone (on every Deployment status change).
#[divan::bench(args = ["aggregated", "disaggregated"])]
fn status_translation(bencher: Bencher<'_, '_>, mode: &str) {
    let (md, live) = settled(mode);
    let live: Vec<Option<&DynamicObject>> = live.iter().map(Some).collect();
    bencher.bench_local(|| LlmdProvider.translate_status(black_box(&md), &live));
}
