//! KubeRay reads only `head`/`worker` `resources.cpu|memory` and `rayStartParams` (strings):
//! every forbidden pod setting tried through `provider.overrides` (at those paths, the root, a
//! group's pod template, in containers, init and ephemeral containers, other spellings and
//! nested deeper) is refused naming the override (an escalating key, or a wrong type), or leaves
//! the applied RayService exactly as without overrides. The SDK's Pod Security check finds each
//! setting in the head's and every worker group's pod template.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airunway_api::provider::testing::hostile::{self, Outcome};
use airunway_api::provider::{Provider, SchemaDetection, UpstreamSchema};
use airunway_api::serde_json::{self, Value, json};
use airunway_api::v1alpha1::ModelDeployment;
use airunway_provider_kuberay::KubeRayProvider;
use airunway_provider_kuberay::schema::V1_KUBERAY_1_3;

fn md(spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "m", "namespace": "ns", "uid": "u"}, "spec": spec, "status": {"provider": {"name": "kuberay"}}}))
    .unwrap()
}

fn schema() -> UpstreamSchema {
    UpstreamSchema {
        version: "v1".into(),
        api_version: "ray.io/v1".into(),
        fingerprint: V1_KUBERAY_1_3.into(),
    }
}

fn bases() -> Vec<ModelDeployment> {
    vec![
        md(
            json!({"model": {"id": "Qwen/Qwen3-8B"}, "engine": {"type": "vllm"},
            "resources": {"gpu": {"count": 1}}, "provider": {"name": "kuberay"}}),
        ),
        md(
            json!({"model": {"id": "Qwen/Qwen3-8B"}, "engine": {"type": "vllm"},
            "serving": {"mode": "disaggregated"},
            "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}},
            "provider": {"name": "kuberay"}}),
        ),
    ]
}

const POD_PATHS: &[&str] = &[
    "",
    "head",
    "worker",
    "head.resources",
    "worker.rayStartParams",
    "head.template.spec",
    "worker.template.spec",
    "rayClusterConfig.headGroupSpec.template.spec",
    "spec.rayClusterConfig.workerGroupSpecs",
];

#[test]
fn no_override_reaches_an_applied_ray_service() {
    let detection = SchemaDetection::Supported(schema());
    for base in bases() {
        let Outcome::Applied(clean) = hostile::outcome(
            &KubeRayProvider,
            &base,
            &detection,
            &Default::default(),
            None,
        ) else {
            panic!("the base deployment is held")
        };
        let tally = hostile::run_corpus(
            &KubeRayProvider,
            &detection,
            &base,
            POD_PATHS,
            |_, placement, outcome| match outcome {
                Outcome::Applied(objects) => assert_eq!(
                    objects, &clean,
                    "{}: KubeRay reads only typed overrides, yet the object changed",
                    placement.description
                ),
                Outcome::Held { reason, message } => assert!(
                    reason == "InvalidOverrides" && message.contains("provider.overrides"),
                    "{}: {reason}: {message}",
                    placement.description
                ),
            },
        );
        println!("KubeRay: {tally:?}");
        assert_eq!(tally.refused_by_pod_security, 0);
        assert!(tally.refused_by_render > 0, "{tally:?}");
        assert!(tally.applied_clean > 0, "{tally:?}");
    }
}

#[test]
fn the_check_finds_each_setting_in_every_group_pod_template() {
    for base in bases() {
        let rendered = KubeRayProvider
            .render(&base, &schema())
            .unwrap()
            .objects
            .remove(0);
        assert!(
            airunway_api::pod_security::check(&rendered, Default::default(), &Default::default())
                .is_empty()
        );
        let cluster = "/spec/rayClusterConfig";
        let mut templates = vec![format!("{cluster}/headGroupSpec/template/spec")];
        let workers = rendered["spec"]["rayClusterConfig"]["workerGroupSpecs"]
            .as_array()
            .unwrap();
        assert!(!workers.is_empty());
        templates.extend(
            (0..workers.len()).map(|i| format!("{cluster}/workerGroupSpecs/{i}/template/spec")),
        );
        for template in templates {
            assert_eq!(
                hostile::assert_check_finds_each_at(&rendered, &template),
                hostile::forbidden_settings().len()
            );
        }
    }
}
