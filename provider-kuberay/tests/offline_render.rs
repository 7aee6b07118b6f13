//! `render`, the SDK's offline command, for this provider (issue 40): the example
//! `examples/gpu-vllm-kuberay.yaml` renders to the provider's own render of the deployment (the one its
//! unit tests check), with the SDK's labels and hashes around it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airunway_api::offline::{self, Severity};
use airunway_api::pod_security::Policy;
use airunway_api::provider::Provider;
use airunway_api::provider::offline_render::{offline_schema, render_documents};
use airunway_api::serde_json::{Value, json};
use airunway_api::v1alpha1::ModelDeployment;
use airunway_provider_kuberay::KubeRayProvider;

fn example() -> Vec<offline::Document> {
    let path = format!(
        "{}/../examples/gpu-vllm-kuberay.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut documents = offline::read_documents(&[path.into()]).unwrap();
    documents[0].default_namespace("default");
    documents
}

/// The deployment as the reconcile gives it to the render (what `render` takes offline).
fn reconciled(document: &offline::Document, provider: &str) -> ModelDeployment {
    let mut object = document.value.clone();
    let name = object["metadata"]["name"].as_str().unwrap().to_string();
    airunway_api::resolve::apply_spec_defaults_named(&mut object["spec"], Some(&name));
    let engine = object["spec"]["engine"]["type"].clone();
    object["metadata"]["generation"] = json!(1);
    object["status"] = json!({"provider": {"name": provider}, "engine": {"type": engine}});
    airunway_api::serde_json::from_value(object).unwrap()
}

fn without_metadata(object: &Value) -> Value {
    let mut object = object.clone();
    object.as_object_mut().unwrap().remove("metadata");
    object
}

#[test]
fn render_gives_the_providers_own_render() {
    let provider = KubeRayProvider;
    let documents = example();
    let report = render_documents(&provider, &documents, None, &Policy::default());
    let errors: Vec<String> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.line())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let objects = &report.deployments[0].objects;
    assert_eq!(objects[0]["kind"], "RayService");
    assert_eq!(
        objects[0]["metadata"]["labels"]["airunway.ai/provider"],
        provider.name()
    );
    let schema = offline_schema(&provider);
    let own = provider
        .render(
            &reconciled(&documents[0], provider.name()),
            schema.schema().unwrap(),
        )
        .unwrap();
    assert_eq!(objects.len(), own.objects.len());
    for (offline, own) in objects.iter().zip(&own.objects) {
        assert_eq!(without_metadata(offline), without_metadata(own));
    }
}
