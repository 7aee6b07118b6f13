//! Test helpers, and the tests of the whole validation (order, limits across concerns); each
//! concern's tests are in its file.

use super::*;
use serde_json::{Value, json};

pub(super) fn md(name: &str, spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": name, "namespace": "ns"}, "spec": spec,
    }))
    .unwrap()
}

pub(super) fn errors(spec: Value) -> Vec<FieldError> {
    validate(&md("valid-name", spec))
}

pub(super) fn one(field: &str, message: &str) -> Vec<FieldError> {
    vec![FieldError::new(field, message)]
}

#[test]
fn all_errors_are_reported_at_once() {
    let found = validate(&md(
        "Bad.Name",
        json!({"model": {}, "engine": {"type": "vllm"}, "resources": {}, "provider": {"overrides": {"hostNetwork": true}}}),
    ));
    let fields: Vec<&str> = found.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "metadata.name",
            "spec.resources.gpu.count",
            "spec.model.id",
            "spec.provider.overrides.hostNetwork"
        ]
    );
}

#[test]
fn valid_specs_pass() {
    for spec in [
        json!({"model": {"id": "google/gemma-3-1b-it-qat-q8_0-gguf"}, "engine": {"type": "llamacpp"}, "resources": {"gpu": {"count": 0}}}),
        json!({"model": {"id": "meta-llama/Llama-3.1-8B-Instruct"}, "engine": {"type": "vllm", "args": {"gpu-memory-utilization": "0.9", "enable_block_reuse": "true"}}, "resources": {"gpu": {"count": 1}}}),
        json!({"model": {"source": "custom"}, "image": "example/x:1"}),
        json!({"model": {"id": "a/b"}}),
        json!({"model": {"id": "a/b"}, "serving": {"mode": "disaggregated"}, "scaling": {"prefill": {"gpu": {"count": 4}}, "decode": {"gpu": {"count": 2}}}}),
    ] {
        assert_eq!(errors(spec.clone()), vec![], "{spec}");
    }
}

#[test]
fn size_limits() {
    let big = "x".repeat(MAX_OVERRIDES_BYTES);
    let found = errors(json!({"model": {"id": "a/b"}, "provider": {"overrides": {"blob": big}}}));
    assert_eq!(found[0].field, "spec.provider.overrides");
    let mut deep = json!(1);
    for _ in 0..10 {
        deep = json!({"n": deep});
    }
    let found = errors(json!({"model": {"id": "a/b"}, "provider": {"overrides": {"n": deep}}}));
    assert!(
        found.iter().any(|e| e.message.contains("nest at most")),
        "{found:?}"
    );
    let found =
        errors(json!({"model": {"id": "a/b"}, "engine": {"args": {"--flag": "x", "ok": "a\nb"}}}));
    assert_eq!(found.len(), 2, "{found:?}");
    let found = validate(&md(
        &"a".repeat(MAX_NAME_LENGTH + 1),
        json!({"model": {"id": "a/b"}}),
    ));
    assert_eq!(found[0].field, "metadata.name");
}

#[test]
fn model_ids_labels_and_secrets() {
    assert_eq!(
        errors(json!({"model": {"id": "a b; rm"}}))[0].field,
        "spec.model.id"
    );
    let found = errors(
        json!({"model": {"id": "a/b"}, "podTemplate": {"metadata": {"labels": {"bad key!": "v", "ok": "not valid value!"}}}, "secrets": {"huggingFaceToken": "Bad_Name"}}),
    );
    let fields: Vec<&str> = found.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "spec.podTemplate.metadata.labels[bad key!]",
            "spec.podTemplate.metadata.labels[ok]",
            "spec.secrets.huggingFaceToken"
        ]
    );
}

#[test]
fn at_reconcile_a_bad_name_says_how_to_get_a_usable_one() {
    let found = validate(&md("a.b", json!({"model": {"id": "a/b"}})));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].field, "metadata.name");
    assert!(
        found[0].message.ends_with(
            "; a name cannot change: delete the ModelDeployment and create it again under a DNS-1035 name of at most 45 characters"
        ),
        "{}",
        found[0].message
    );
    // At admission (create) the rule alone; the spec's errors without the name's.
    assert!(!validate_name("a.b")[0].message.contains("cannot change"));
    assert!(validate_spec(&md("a.b", json!({"model": {"id": "a/b"}}))).is_empty());
}
