//! The check every provider's `render` test makes (issue 40): an example manifest, rendered by
//! the SDK's offline command, gives the provider's own render of the deployment (the one its
//! unit tests check), with the SDK's labels and hashes around it.
#![allow(clippy::panic)]

use serde_json::{Value, json};

use crate::offline::{self, Severity};
use crate::pod_security::Policy;
use crate::provider::Provider;
use crate::provider::offline_render::{offline_schema, render_documents};
use crate::v1alpha1::ModelDeployment;

/// The deployment as the reconcile gives it to the render (what `render` takes offline).
fn reconciled(document: &offline::Document, provider: &str) -> ModelDeployment {
    let mut object = document.value.clone();
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    crate::resolve::apply_spec_defaults_named(&mut object["spec"], Some(&name));
    let engine = object["spec"]["engine"]["type"].clone();
    object["metadata"]["generation"] = json!(1);
    object["status"] = json!({"provider": {"name": provider}, "engine": {"type": engine}});
    serde_json::from_value(object).unwrap_or_else(|e| panic!("the example: {e}"))
}

fn without_metadata(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(map) = object.as_object_mut() {
        map.remove("metadata");
    }
    object
}

/// Panics unless `render` of the example `examples/<example>` (from the crate at
/// `manifest_dir`) gives, without errors, `kind` first, labelled with the provider's name, and
/// each object equal to `provider`'s own render but for the metadata.
pub fn assert_render_is_the_providers_own(
    provider: &impl Provider,
    manifest_dir: &str,
    example: &str,
    kind: &str,
) {
    let path = format!("{manifest_dir}/../examples/{example}");
    let mut documents = offline::read_documents(&[path.into()])
        .unwrap_or_else(|e| panic!("examples/{example}: {e}"));
    documents[0].default_namespace("default");
    let report = render_documents(provider, &documents, None, &Policy::default());
    let errors: Vec<String> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.line())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let objects = &report.deployments[0].objects;
    assert_eq!(objects[0]["kind"], kind);
    assert_eq!(
        objects[0]["metadata"]["labels"]["airunway.ai/provider"],
        provider.name()
    );
    let schema = offline_schema(provider);
    let own = provider
        .render(
            &reconciled(&documents[0], provider.name()),
            schema
                .schema()
                .unwrap_or_else(|| panic!("no offline schema")),
        )
        .unwrap_or_else(|e| panic!("the provider's own render: {e:?}"));
    assert_eq!(objects.len(), own.objects.len());
    for (offline, own) in objects.iter().zip(&own.objects) {
        assert_eq!(without_metadata(offline), without_metadata(own));
    }
}

/// Panics unless the shipped registration fixture `<name>.yaml` (what `airunway-core` decides
/// with offline) is `provider`'s registration.
pub fn assert_registration_is_the_shipped_fixture(provider: &impl Provider, manifest_dir: &str) {
    let path = format!(
        "{manifest_dir}/../core-controller/tests/fixtures/shipped-providers/{}.yaml",
        provider.name()
    );
    let fixture = offline::read_documents(&[path.clone().into()])
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .remove(0)
        .value;
    assert_eq!(
        serde_json::to_value(crate::provider::registration_spec(provider))
            .unwrap_or_else(|e| panic!("{e}")),
        fixture["spec"]
    );
}
