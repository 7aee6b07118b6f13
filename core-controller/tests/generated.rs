//! Generated input for the core's pure layers (issue 23): defaulting and validation over any
//! generated spec, and engine/provider selection and rule admission with generated provider
//! configurations and CEL rules (valid, erroring, expensive, huge, random text). Case counts:
//! `PROPTEST_CASES` (default 256); the long run is in docs/reliability.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use airunway_api::generate;
use airunway_api::resolve::apply_spec_defaults;
use airunway_api::v1alpha1::{InferenceProviderConfig, ModelDeployment};
use airunway_core::selection::{
    ProviderDecision, RuleSet, provider_views, select_engine, select_provider,
};
use airunway_core::validation::{validate, warnings};
use airunway_core::webhook::admission::validate_provider_config;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionReview};
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{Value, json};

fn shipped(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/shipped-providers/{name}.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut value: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    value["metadata"]["generation"] = json!(1);
    value["status"] = json!({"ready": true, "lastHeartbeat": "2026-06-01T11:59:40Z"});
    value
}

static SHIPPED: LazyLock<Vec<InferenceProviderConfig>> = LazyLock::new(|| {
    ["dynamo", "kaito", "kuberay", "llmd"]
        .iter()
        .map(|n| serde_json::from_value(shipped(n)).unwrap())
        .collect()
});

/// Compiled rules shared by every case, as the controller shares them between decisions:
/// parsing a rule (above all a 2,000-term one) costs far more than deciding, so compiling the
/// same text again in every case made the long run take hours. Every distinct rule text is
/// still compiled (here on first use; `rule_admission_...` compiles every generated rule
/// afresh).
static RULES: LazyLock<RuleSet> = LazyLock::new(RuleSet::default);

/// A provider that can serve every engine, with `rules`.
fn generated_provider(rules: &[(String, i64)]) -> Value {
    let engines: Vec<Value> = ["vllm", "sglang", "trtllm", "llamacpp"]
        .iter()
        .map(|e| json!({"name": e, "servingModes": ["aggregated", "disaggregated"], "gpuSupport": true, "cpuSupport": true}))
        .collect();
    json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig",
        "metadata": {"name": "generated", "generation": 1},
        "spec": {"capabilities": {"engines": engines},
            "selectionRules": rules.iter().map(|(c, p)| json!({"condition": c, "priority": p})).collect::<Vec<_>>()},
        "status": {"ready": true, "lastHeartbeat": "2026-06-01T11:59:40Z"}})
}

fn review(object: Value) -> AdmissionRequest<DynamicObject> {
    let review: AdmissionReview<DynamicObject> = serde_json::from_value(json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "u", "kind": {"group": "airunway.ai", "version": "v1alpha1", "kind": "InferenceProviderConfig"},
            "resource": {"group": "airunway.ai", "version": "v1alpha1", "resource": "inferenceproviderconfigs"},
            "operation": "CREATE", "userInfo": {}, "object": object, "oldObject": null, "dryRun": false,
            "name": "generated",
        }
    }))
    .unwrap();
    review.try_into().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn defaulting_is_a_fixed_point_and_validation_is_idempotent(spec in generate::spec()) {
        let mut once = spec.clone();
        apply_spec_defaults(&mut once);
        let mut twice = once.clone();
        apply_spec_defaults(&mut twice);
        prop_assert_eq!(&once, &twice, "defaulting twice differs from once");
        let Some(md) = generate::model_deployment("m", &spec, None) else {
            return Ok(());
        };
        let defaulted = generate::model_deployment("m", &once, None);
        prop_assert!(defaulted.is_some(), "defaulting made a decodable spec undecodable: {}", once);
        let defaulted = defaulted.unwrap();
        // The typed defaults agree with the webhook's JSON defaults, and are a fixed point.
        prop_assert_eq!(md.spec.with_defaults(), defaulted.spec.with_defaults());
        prop_assert_eq!(md.spec.with_defaults().with_defaults(), md.spec.with_defaults());

        let errors = validate(&md);
        prop_assert_eq!(&validate(&md), &errors, "validation is not deterministic");
        let round_trip: ModelDeployment =
            serde_json::from_value(serde_json::to_value(&md).unwrap()).unwrap();
        prop_assert_eq!(&validate(&round_trip), &errors, "validation differs after a round trip");
        for error in &errors {
            prop_assert!(
                (error.field.starts_with("spec") || error.field.starts_with("metadata"))
                    && !error.message.is_empty(),
                "an error names no field: {error:?}"
            );
        }
        if errors.is_empty() {
            let after = validate(&defaulted);
            prop_assert!(after.is_empty(), "defaulting made a valid spec invalid: {after:?}");
        }
        let _ = warnings(&md);
    }

    #[test]
    fn selection_with_generated_rules_never_panics_and_is_deterministic(
        spec in generate::spec(),
        rules in vec((generate::cel_rule(), 0i64..300), 0..4),
    ) {
        let Some(md) = generate::model_deployment("m", &spec, None) else {
            return Ok(());
        };
        let mut ipcs: Vec<InferenceProviderConfig> = SHIPPED.clone();
        ipcs.push(serde_json::from_value(generated_provider(&rules)).unwrap());
        let views = provider_views(&ipcs);
        let started = Instant::now();
        let engine = select_engine(&md, &views, true);
        let selection = select_provider(&md, engine.engine(), &views, true, &RULES);
        let took = started.elapsed();
        // Bounded: a rule over its budget is not run (debug build, shared CPU: generous).
        prop_assert!(took < Duration::from_secs(5), "one decision took {took:?} with {rules:?}");
        for error in &selection.rule_errors {
            prop_assert!(!error.provider.is_empty() && !error.message.is_empty(), "{error:?}");
        }
        if let ProviderDecision::Selected { provider, .. } = &selection.decision {
            prop_assert!(views.iter().any(|v| &v.name == provider));
        }
        let again = select_provider(&md, engine.engine(), &views, true, &RULES);
        prop_assert_eq!(&again.decision, &selection.decision, "selection is not deterministic");
    }

    #[test]
    fn rule_admission_refuses_by_field_or_admits_a_bounded_rule(rule in generate::cel_rule()) {
        let ipc = generated_provider(&[(rule.clone(), 10)]);
        let started = Instant::now();
        let response = validate_provider_config(&review(ipc));
        let took = started.elapsed();
        prop_assert!(took < Duration::from_secs(5), "admission took {took:?} for {rule}");
        if !response.allowed {
            let message = response.result.message.clone();
            prop_assert!(
                message.contains("spec.selectionRules[0]"),
                "a refusal that names no rule: {message}"
            );
        }
    }
}

#[test]
fn the_generators_reach_every_kind_of_outcome() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut decoded, mut valid, mut invalid) = (0, 0, 0);
    for _ in 0..2000 {
        let spec = generate::spec().new_tree(&mut runner).unwrap().current();
        if let Some(md) = generate::model_deployment("m", &spec, None) {
            decoded += 1;
            if validate(&md).is_empty() {
                valid += 1;
            } else {
                invalid += 1;
            }
        }
    }
    let (mut admitted, mut refused) = (0, 0);
    for _ in 0..300 {
        let rule = generate::cel_rule()
            .new_tree(&mut runner)
            .unwrap()
            .current();
        if validate_provider_config(&review(generated_provider(&[(rule, 1)]))).allowed {
            admitted += 1;
        } else {
            refused += 1;
        }
    }
    println!(
        "2000 generated specs: {decoded} decode, {valid} valid, {invalid} refused by validation; 300 generated rules: {admitted} admitted, {refused} refused"
    );
    assert!(valid > 50 && invalid > 50 && admitted > 20 && refused > 20);
}
