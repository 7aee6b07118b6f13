//! The pure part of a KAITO provider reconcile, per deployment: compatibility, render, the
//! object to apply, the drift check against the live Workspace, status translation and the
//! status patch; the periodic status sync alone; and schema detection of the installed
//! Workspace CRD. Prints time and allocations.
//!
//! `cargo bench -p airunway-provider-kaito --bench provider_cycle`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use airunway_api::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use airunway_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::desired::DesiredUpstream;
use airunway_api::provider::{Provider, UpstreamSchema, cycle, testing};
use airunway_api::serde_json::{self, Value, json};
use airunway_api::v1alpha1::ModelDeployment;
use airunway_provider_kaito::KaitoProvider;
use divan::{AllocProfiler, Bencher, black_box};

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

fn main() {
    divan::main();
}

fn installed_crd() -> CustomResourceDefinition {
    testing::established_crd(env!("CARGO_MANIFEST_DIR"), "kaito/kaito.sh_workspaces.yaml").unwrap()
}

fn detected_schema() -> UpstreamSchema {
    let detection = KaitoProvider::default().detect_schema(Some(&installed_crd()));
    detection
        .schema()
        .cloned()
        .expect("the shipped CRD is supported")
}

/// The deployments of the docs: llama.cpp on CPU (design doc example 2) and vLLM on a GPU.
fn deployment(engine: &str) -> ModelDeployment {
    let spec = match engine {
        "llamacpp" => json!({
            "model": {"id": "ggml-org/gemma-3-1b-it-GGUF", "servedName": "gemma-3-1b"},
            "engine": {"type": "llamacpp", "args": {"model-file": "gemma-3-1b-it-q8_0.gguf"}},
            "image": "ghcr.io/ggml-org/llama.cpp:server",
            "resources": {"cpu": "4", "memory": "8Gi"},
            "env": [{"name": "LLAMA_LOG_LEVEL", "value": "info"}],
            "secrets": {"huggingFaceToken": "hf-token"},
        }),
        _ => json!({
            "model": {"id": "microsoft/phi-4"},
            "engine": {"type": "vllm"},
            "resources": {"gpu": {"count": 1}},
            "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        }),
    };
    serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "m", "namespace": "default", "uid": "u", "generation": 1,
                     "labels": {"airunway.ai/team": "search"}},
        "spec": spec,
        "status": {"provider": {"name": "kaito"}},
    }))
    .unwrap()
}

/// The deployment, the Workspace to apply for it, and the Workspace as the API server
/// returns it once the upstream operator reports it ready.
fn settled(
    engine: &str,
) -> (
    ModelDeployment,
    UpstreamSchema,
    DesiredUpstream,
    DynamicObject,
) {
    let (md, schema) = (deployment(engine), detected_schema());
    let applied = cycle::apply(&KaitoProvider::default(), &md, &schema, None, &now()).unwrap();
    let sample: Value = testing::upstream(
        env!("CARGO_MANIFEST_DIR"),
        "status-samples/workspace-ready.yaml",
    )
    .unwrap();
    let live = cycle::served(&applied.desired, sample["status"].clone()).unwrap();
    (md, schema, applied.desired, live)
}

fn now() -> Time {
    Time("2026-06-01T12:00:00Z".parse().unwrap())
}

/// A reconcile that applies: every pure step from the deployment to the status patch.
#[divan::bench(args = ["llamacpp", "vllm"])]
fn apply_cycle(bencher: Bencher<'_, '_>, engine: &str) {
    let (md, schema, _, live) = settled(engine);
    let now = now();
    bencher.bench_local(|| {
        cycle::apply(
            &KaitoProvider::default(),
            black_box(&md),
            &schema,
            Some(&live),
            &now,
        )
    });
}

/// The periodic status sync of a settled deployment: translate and compare, no write.
#[divan::bench(args = ["llamacpp", "vllm"])]
fn status_sync(bencher: Bencher<'_, '_>, engine: &str) {
    let (md, _, desired, live) = settled(engine);
    bencher.bench_local(|| {
        cycle::status_sync(&KaitoProvider::default(), black_box(&md), &desired, &live)
    });
}

/// Schema detection of the installed Workspace CRD (on start and on every heartbeat).
#[divan::bench]
fn detect_schema(bencher: Bencher<'_, '_>) {
    let crd = installed_crd();
    bencher.bench_local(|| KaitoProvider::default().detect_schema(black_box(Some(&crd))));
}
