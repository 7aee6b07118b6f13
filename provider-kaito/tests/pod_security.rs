//! KAITO takes no overrides: every forbidden pod setting tried through `provider.overrides`
//! (at the Workspace's pod template, its root, `resource`, in containers, init and ephemeral
//! containers, other spellings and nested deeper) leaves the applied Workspace exactly as
//! without overrides, and the user is told the override is ignored. The SDK's Pod Security check
//! finds each setting where a Workspace keeps its pod template.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airunway_api::provider::testing::hostile::{self, Outcome};
use airunway_api::provider::{Provider, SchemaDetection, UpstreamSchema, cycle};
use airunway_api::serde_json::{self, Value, json};
use airunway_api::v1alpha1::ModelDeployment;
use airunway_provider_kaito::KaitoProvider;

fn md(spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "m", "namespace": "ns", "uid": "u"}, "spec": spec, "status": {"provider": {"name": "kaito"}}}))
    .unwrap()
}

fn schema() -> UpstreamSchema {
    UpstreamSchema {
        version: "v1beta1".into(),
        api_version: "kaito.sh/v1beta1".into(),
        fingerprint: "c122e829f70c5bc8".into(),
    }
}

/// A llama.cpp Workspace (with a pod template) and a vLLM preset (without one).
fn bases() -> Vec<ModelDeployment> {
    vec![
        md(
            json!({"model": {"id": "org/model-gguf"}, "engine": {"type": "llamacpp"},
            "image": "example/llama:1", "resources": {"gpu": {"count": 0}, "cpu": "4", "memory": "8Gi"},
            "provider": {"name": "kaito"}}),
        ),
        md(
            json!({"model": {"id": "microsoft/Phi-4-mini-instruct"}, "engine": {"type": "vllm"},
            "resources": {"gpu": {"count": 1}}, "provider": {"name": "kaito"}}),
        ),
    ]
}

const POD_PATHS: &[&str] = &[
    "",
    "inference.template.spec",
    "template.spec",
    "spec.template.spec",
    "resource",
    "spec",
];

#[test]
fn no_override_reaches_an_applied_workspace() {
    let detection = SchemaDetection::Supported(schema());
    for base in bases() {
        let Outcome::Applied(clean) = hostile::outcome(
            &KaitoProvider::default(),
            &base,
            &detection,
            &Default::default(),
            None,
        ) else {
            panic!("the base deployment is held")
        };
        let tally = hostile::run_corpus(
            &KaitoProvider::default(),
            &detection,
            &base,
            POD_PATHS,
            |_, placement, outcome| match outcome {
                Outcome::Applied(objects) => assert_eq!(
                    objects, &clean,
                    "{}: KAITO takes no overrides, yet the Workspace changed",
                    placement.description
                ),
                Outcome::Held { reason, message } => {
                    panic!("{}: held {reason}: {message}", placement.description)
                }
            },
        );
        println!("KAITO: {tally:?}");
        assert_eq!(tally.applied_clean, tally.tried);
    }
}

#[test]
fn the_ignored_override_is_reported_by_path() {
    let mut base = bases().remove(0);
    base.spec.provider.as_mut().unwrap().overrides =
        json!({"inference": {"template": {"spec": {"HostNetwork": true}}}})
            .as_object()
            .cloned();
    let rendered = cycle::checked(
        &KaitoProvider::default(),
        &base,
        &SchemaDetection::Supported(schema()),
    )
    .unwrap();
    assert!(
        rendered
            .warnings
            .iter()
            .any(|w| w.reason == "UnknownOverride"
                && w.message
                    .contains("provider.overrides.inference.template is ignored")),
        "{:?}",
        rendered.warnings
    );
}

#[test]
fn the_check_finds_each_setting_in_the_workspace_pod_template() {
    let rendered = KaitoProvider::default()
        .render(&bases()[0], &schema())
        .unwrap()
        .objects
        .remove(0);
    assert!(rendered["inference"]["template"]["spec"].is_object());
    assert!(
        airunway_api::pod_security::check(&rendered, Default::default(), &Default::default())
            .is_empty()
    );
    assert_eq!(
        hostile::assert_check_finds_each_at(&rendered, "/inference/template/spec"),
        hostile::forbidden_settings().len()
    );
}
