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
use airunway_api::provider::desired::{ProviderStatus, desired_upstream, drifted};
use airunway_api::provider::{Provider, SchemaDetection, UpstreamSchema};
use airunway_api::serde_json::{self, Value, json};
use airunway_api::v1alpha1::ModelDeployment;
use airunway_provider_kaito::KaitoProvider;
use divan::{AllocProfiler, Bencher, black_box};

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

fn main() {
    divan::main();
}

fn yaml(text: &str) -> Value {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).unwrap();
    docs.into_iter().find(Value::is_object).unwrap()
}

/// A file of the upstream CRD material (`$AIRUNWAY_UPSTREAM_CRDS`, else
/// `../shared/upstream-crds` next to the workspace).
fn upstream(path: &str) -> Value {
    let dir = std::env::var("AIRUNWAY_UPSTREAM_CRDS")
        .unwrap_or_else(|_| format!("{}/../../shared/upstream-crds", env!("CARGO_MANIFEST_DIR")));
    let file = format!("{dir}/{path}");
    yaml(&std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("reading {file}: {e}")))
}

fn installed_crd() -> CustomResourceDefinition {
    let mut crd: CustomResourceDefinition =
        serde_json::from_value(upstream("kaito/kaito.sh_workspaces.yaml")).unwrap();
    crd.status = Some(
        serde_json::from_value(json!({"conditions": [{"type": "Established", "status": "True"}]}))
            .unwrap(),
    );
    crd
}

fn detected_schema() -> UpstreamSchema {
    match KaitoProvider.detect_schema(Some(&installed_crd())) {
        SchemaDetection::Supported(schema) => schema,
        other => panic!("the shipped Workspace CRD must be supported: {other:?}"),
    }
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

/// The Workspace as the API server returns it: the desired object with a ready status.
fn live(desired: &Value) -> DynamicObject {
    let mut live = desired.clone();
    live["metadata"]["uid"] = json!("w");
    live["metadata"]["resourceVersion"] = json!("42");
    live["status"] = upstream("status-samples/workspace-ready.yaml")["status"].clone();
    serde_json::from_value(live).unwrap()
}

fn now() -> Time {
    Time("2026-06-01T12:00:00Z".parse().unwrap())
}

/// A reconcile that applies: every pure step from the deployment to the status patch.
#[divan::bench(args = ["llamacpp", "vllm"])]
fn apply_cycle(bencher: Bencher<'_, '_>, engine: &str) {
    let md = deployment(engine);
    let schema = detected_schema();
    let first = KaitoProvider.render(&md, &schema).unwrap();
    let live = live(&desired_upstream(&md, &first).object);
    let live_value = serde_json::to_value(&live).unwrap();
    let now = now();
    bencher.bench_local(|| {
        KaitoProvider.check_compatibility(black_box(&md)).unwrap();
        let rendered = KaitoProvider.render(&md, &schema).unwrap();
        let desired = desired_upstream(&md, &rendered);
        assert!(!drifted(&desired, &live_value));
        let translated = KaitoProvider.translate_status(&md, Some(&live));
        let status = ProviderStatus::from_translation(
            KaitoProvider.display_name(),
            ("m".into(), "Workspace".into()),
            &translated,
        );
        black_box(status.patch(&md, &now))
    });
}

/// The periodic status sync of a settled deployment: translate and compare, no write.
#[divan::bench(args = ["llamacpp", "vllm"])]
fn status_sync(bencher: Bencher<'_, '_>, engine: &str) {
    let md = deployment(engine);
    let rendered = KaitoProvider.render(&md, &detected_schema()).unwrap();
    let live = live(&desired_upstream(&md, &rendered).object);
    bencher.bench_local(|| {
        let translated = KaitoProvider.translate_status(black_box(&md), Some(&live));
        let status = ProviderStatus::from_translation(
            KaitoProvider.display_name(),
            ("m".into(), "Workspace".into()),
            &translated,
        );
        black_box(status.is_current(&md, "kaito-provider"))
    });
}

/// Schema detection of the installed Workspace CRD (on start and on every CRD change).
#[divan::bench]
fn detect_schema(bencher: Bencher<'_, '_>) {
    let crd = installed_crd();
    bencher.bench_local(|| black_box(KaitoProvider.detect_schema(black_box(Some(&crd)))));
}
