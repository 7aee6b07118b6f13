//! The pure part of a core reconcile: validation, engine and provider selection (with the CEL
//! rules of the shipped providers), the desired status and the status patch. Prints time and
//! allocations per deployment, for 4 providers and for many.
//!
//! `cargo bench -p airunway-core --bench reconcile_decision`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use airunway_api::v1alpha1::{InferenceProviderConfig, ModelDeployment};
use airunway_core::selection::{ProviderView, RuleSet, provider_views};
use airunway_core::status::{decide, desired_status, status_patch};
use divan::{AllocProfiler, Bencher, black_box};
use serde_json::{Value, json};

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

const NOW: &str = "2026-06-01T12:00:00Z";
const SHIPPED: [&str; 4] = ["dynamo", "kaito", "kuberay", "llmd"];

fn main() {
    divan::main();
}

fn shipped(name: &str, copy: usize) -> InferenceProviderConfig {
    let path = format!(
        "{}/tests/fixtures/shipped-providers/{name}.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut value: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    if copy > 0 {
        value["metadata"]["name"] = json!(format!("{name}-{copy}"));
    }
    value["metadata"]["generation"] = json!(1);
    value["status"] = json!({"ready": true, "lastHeartbeat": "2026-06-01T11:59:40Z"});
    serde_json::from_value(value).unwrap()
}

/// `count` ready providers: the four shipped registrations, repeated under other names.
fn providers(count: usize) -> Vec<ProviderView> {
    let ipcs: Vec<InferenceProviderConfig> = (0..count)
        .map(|i| shipped(SHIPPED[i % SHIPPED.len()], i / SHIPPED.len()))
        .collect();
    provider_views(&ipcs)
}

fn deployment(spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "m", "namespace": "default", "generation": 1, "uid": "u"},
        "spec": spec,
    }))
    .unwrap()
}

/// A GPU deployment with nothing chosen: every provider's rules are evaluated.
fn auto_gpu() -> ModelDeployment {
    deployment(json!({"model": {"id": "meta-llama/Llama-3.1-8B-Instruct"},
        "resources": {"gpu": {"count": 1}}}))
}

/// Decide, build the desired status and the patch, with the rule cache warm (steady state).
#[divan::bench(args = [4, 16, 64])]
fn warm_rules(bencher: Bencher<'_, '_>, provider_count: usize) {
    let providers = providers(provider_count);
    let rules = RuleSet::default();
    let md = auto_gpu();
    let now = NOW.parse().unwrap();
    let first = decide(&md, &providers, true, &rules);
    assert!(
        first.provider.is_some() && first.rule_errors.is_empty(),
        "{first:?}"
    );
    bencher.bench_local(|| {
        let decision = decide(black_box(&md), &providers, true, &rules);
        let desired = desired_status(&md, &decision);
        black_box(status_patch(&md, &desired, now))
    });
}

/// The same with a cold rule cache: every CEL rule is compiled (a core that just started, or
/// providers that just changed their rules).
#[divan::bench(args = [4, 16])]
fn cold_rules(bencher: Bencher<'_, '_>, provider_count: usize) {
    let providers = providers(provider_count);
    let md = auto_gpu();
    bencher.bench_local(|| {
        let rules = RuleSet::default();
        black_box(decide(black_box(&md), &providers, true, &rules))
    });
}

/// Validation alone, on a deployment that uses most of the spec.
#[divan::bench]
fn validate_full_spec(bencher: Bencher<'_, '_>) {
    let md = deployment(json!({
        "model": {"id": "Qwen/Qwen3-0.6B", "servedName": "qwen"},
        "engine": {"type": "vllm", "contextLength": 8192, "args": {"enable-prefix-caching": ""}},
        "serving": {"mode": "disaggregated"},
        "scaling": {"prefill": {"replicas": 1, "gpu": {"count": 1}, "memory": "32Gi"},
                    "decode": {"replicas": 2, "gpu": {"count": 1}, "memory": "32Gi"}},
        "env": [{"name": "VLLM_LOGGING_LEVEL", "value": "INFO"}],
        "secrets": {"huggingFaceToken": "hf-token"},
        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "provider": {"overrides": {"frontend": {"replicas": 2}}},
    }));
    let errors = airunway_core::validation::validate(&md);
    assert!(
        errors.is_empty(),
        "the benchmark spec must be valid: {errors:?}"
    );
    bencher.bench_local(|| black_box(airunway_core::validation::validate(black_box(&md))));
}
