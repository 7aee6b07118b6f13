//! Dynamo reads its typed overrides (`routerMode`, `frontend.replicas`,
//! `frontend.resources.cpu|memory`) and the graph's own fields under `spec`: every forbidden
//! pod setting tried through `provider.overrides` (at those paths, at the root, at a service's
//! `extraPodSpec`, in containers, init and ephemeral containers, other spellings and nested
//! deeper) is refused as a wrong type naming the override, refused by the Pod Security check
//! (what `spec.services` merges into a service's pod spec), or leaves the applied
//! DynamoGraphDeployment exactly as without overrides. The SDK's Pod Security check finds each
//! setting in every service's pod spec.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airunway_api::provider::testing::hostile::{self, Outcome};
use airunway_api::provider::{Provider, SchemaDetection, UpstreamSchema};
use airunway_api::serde_json::{self, Value, json};
use airunway_api::v1alpha1::ModelDeployment;
use airunway_provider_dynamo::DynamoProvider;

fn md(spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "m", "namespace": "ns", "uid": "u"}, "spec": spec, "status": {"provider": {"name": "dynamo"}}}))
    .unwrap()
}

fn schema() -> UpstreamSchema {
    UpstreamSchema {
        version: "v1alpha1".into(),
        api_version: "nvidia.com/v1alpha1".into(),
        fingerprint: "b988c5e17d5c5ec9".into(),
    }
}

fn bases() -> Vec<ModelDeployment> {
    vec![
        md(
            json!({"model": {"id": "Qwen/Qwen3-8B"}, "engine": {"type": "vllm"},
            "resources": {"gpu": {"count": 1}}, "provider": {"name": "dynamo"}}),
        ),
        md(
            json!({"model": {"id": "Qwen/Qwen3-8B"}, "engine": {"type": "sglang"},
            "serving": {"mode": "disaggregated"},
            "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}},
            "provider": {"name": "dynamo"}}),
        ),
    ]
}

const POD_PATHS: &[&str] = &[
    "",
    "frontend",
    "frontend.resources",
    "frontend.replicas",
    "routerMode",
    "frontend.extraPodSpec",
    "spec.services.Frontend.extraPodSpec",
    "services.VllmWorker.extraPodSpec.mainContainer",
];

#[test]
fn no_override_reaches_an_applied_graph_deployment() {
    let detection = SchemaDetection::Supported(schema());
    for base in bases() {
        let Outcome::Applied(clean) = hostile::outcome(
            &DynamoProvider,
            &base,
            &detection,
            &Default::default(),
            None,
        ) else {
            panic!("the base deployment is held")
        };
        let tally = hostile::run_corpus(
            &DynamoProvider,
            &detection,
            &base,
            POD_PATHS,
            |_, placement, outcome| match outcome {
                // `spec` merges into the graph (`outcome` has checked that no forbidden
                // setting is applied); nothing else reaches it.
                Outcome::Applied(objects) => assert!(
                    objects == &clean || placement.overrides.contains_key("spec"),
                    "{}: Dynamo reads only typed overrides outside `spec`, yet the object changed",
                    placement.description
                ),
                Outcome::Held { reason, message } => assert!(
                    (reason == "InvalidOverrides" && message.contains("provider.overrides"))
                        || reason == "PodSecurityViolation",
                    "{}: {reason}: {message}",
                    placement.description
                ),
            },
        );
        println!("Dynamo: {tally:?}");
        // What `spec.services` merges into a pod spec is refused before apply.
        assert!(tally.refused_by_pod_security > 0, "{tally:?}");
        // Objects where a typed value is expected are refused as wrong types.
        assert!(tally.refused_by_render > 0, "{tally:?}");
        assert!(tally.applied_clean > 0, "{tally:?}");
    }
}

#[test]
fn the_check_finds_each_setting_in_every_service_pod_spec() {
    for base in bases() {
        let rendered = DynamoProvider
            .render(&base, &schema())
            .unwrap()
            .objects
            .remove(0);
        assert!(
            airunway_api::pod_security::check(&rendered, Default::default(), &Default::default())
                .is_empty()
        );
        let services = rendered["spec"]["services"].as_object().unwrap();
        assert!(services.len() >= 2);
        for name in services.keys() {
            assert_eq!(
                hostile::assert_check_finds_each_at(
                    &rendered,
                    &format!("/spec/services/{name}/extraPodSpec")
                ),
                hostile::forbidden_settings().len()
            );
        }
    }
}
