//! llm-d deep-merges `provider.overrides` into every vLLM Deployment, so every forbidden pod
//! setting is tried through it: at the pod spec, the template, the Deployment's spec and root,
//! in containers, init and ephemeral containers, in other spellings (`HostNetwork`,
//! `HOSTNETWORK`, `hostnetwork`, also of the path) and nested deeper. Nothing may ever be
//! applied: each is refused by the render (naming the override) or held by the SDK's Pod
//! Security check of the merged Deployment (naming the rendered field and the override path).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airunway_api::provider::testing::hostile::{self, Outcome};
use airunway_api::provider::{Provider, Rendered};
use airunway_api::serde_json::{self, Value, json};
use airunway_api::v1alpha1::ModelDeployment;
use airunway_provider_llmd::LlmdProvider;

fn md(spec: Value) -> ModelDeployment {
    serde_json::from_value(
        json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "m", "namespace": "ns", "uid": "u"},
        "spec": spec, "status": {"provider": {"name": "llmd"}}}),
    )
    .unwrap()
}

fn aggregated() -> ModelDeployment {
    md(
        json!({"model": {"id": "Qwen/Qwen3-8B"}, "engine": {"type": "vllm"},
        "resources": {"gpu": {"count": 1}}, "provider": {"name": "llmd"}}),
    )
}

fn disaggregated() -> ModelDeployment {
    md(
        json!({"model": {"id": "Qwen/Qwen3-8B"}, "engine": {"type": "vllm"},
        "serving": {"mode": "disaggregated"},
        "scaling": {"prefill": {"replicas": 1, "gpu": {"count": 1}}, "decode": {"replicas": 1, "gpu": {"count": 1}}},
        "provider": {"name": "llmd"}}),
    )
}

/// Where a merged override could reach a pod spec of the Deployment.
const POD_PATHS: &[&str] = &["spec.template.spec", "spec.template", "spec", ""];

#[test]
fn no_override_reaches_an_applied_deployment() {
    let detection = LlmdProvider.detect_schema(None);
    for base in [aggregated(), disaggregated()] {
        let tally = hostile::run_corpus(
            &LlmdProvider,
            &detection,
            &base,
            POD_PATHS,
            |setting, placement, outcome| match outcome {
                Outcome::Applied(_) => panic!(
                    "llm-d merges overrides, yet {} was neither refused nor held",
                    placement.description
                ),
                Outcome::Held { reason, message } => {
                    assert!(
                        reason == "InvalidOverrides" || reason == "PodSecurityViolation",
                        "{}: {reason}: {message}",
                        placement.description
                    );
                    // Either way the user is told which override did it.
                    assert!(
                        message.contains("provider.overrides"),
                        "{} ({}): the message names no override: {message}",
                        placement.description,
                        setting.what
                    );
                }
            },
        );
        println!(
            "llm-d {:?}: {tally:?}",
            base.spec.serving.as_ref().map(|s| s.mode)
        );
        assert_eq!(tally.applied_clean, 0);
        // The render refuses what it names and every key an apps/v1 Deployment does not
        // declare (other spellings); what is declared but forbidden (AppArmor annotations,
        // ...) is held by the check.
        assert_eq!(
            tally.refused_by_render + tally.refused_by_pod_security,
            tally.tried,
            "{tally:?}"
        );
        assert!(tally.refused_by_pod_security > 0, "{tally:?}");
        assert!(tally.refused_by_render > 100, "{tally:?}");
    }
}

#[test]
fn a_violation_is_named_by_rendered_field_rule_and_override_path() {
    let mut base = aggregated();
    base.spec.provider.as_mut().unwrap().overrides =
        json!({"spec": {"template": {"metadata": {"annotations": {
        "container.apparmor.security.beta.kubernetes.io/vllm": "unconfined"}}}}})
        .as_object()
        .cloned();
    let outcome = hostile::outcome(
        &LlmdProvider,
        &base,
        &LlmdProvider.detect_schema(None),
        &Default::default(),
        None,
    );
    let Outcome::Held { reason, message } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(reason, "PodSecurityViolation");
    assert!(
        message.contains("Deployment m spec.template.metadata.annotations")
            && message.contains("(from spec.provider.overrides.spec.template.metadata.annotations"),
        "{message}"
    );
}

#[test]
fn a_key_a_deployment_does_not_declare_is_refused_naming_it() {
    let mut base = aggregated();
    base.spec.provider.as_mut().unwrap().overrides =
        json!({"Spec": {"Template": {"Spec": {"HostNetwork": true}}}})
            .as_object()
            .cloned();
    let outcome = hostile::outcome(
        &LlmdProvider,
        &base,
        &LlmdProvider.detect_schema(None),
        &Default::default(),
        None,
    );
    let Outcome::Held { reason, message } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(reason, "InvalidOverrides");
    assert!(
        message.contains("provider.overrides.Spec is not a field of an apps/v1 Deployment"),
        "{message}"
    );
}

#[test]
fn the_check_finds_each_setting_in_every_rendered_deployment() {
    let schema = match LlmdProvider.detect_schema(None) {
        airunway_api::provider::SchemaDetection::Supported(schema) => schema,
        other => panic!("{other:?}"),
    };
    for base in [aggregated(), disaggregated()] {
        let Rendered { objects, .. } = LlmdProvider.render(&base, &schema).unwrap();
        let mut deployments = 0;
        for object in objects.iter().filter(|o| o["kind"] == "Deployment") {
            assert!(
                airunway_api::pod_security::check(object, Default::default(), &Default::default())
                    .is_empty(),
                "the rendered Deployment itself passes"
            );
            assert_eq!(
                hostile::assert_check_finds_each_at(object, "/spec/template/spec"),
                hostile::forbidden_settings().len()
            );
            deployments += 1;
        }
        assert!(deployments >= 1);
    }
}
