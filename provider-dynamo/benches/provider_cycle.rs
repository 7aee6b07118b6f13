//! The pure part of a Dynamo provider reconcile, per deployment: compatibility, render, the
//! object to apply, the drift check against the live DynamoGraphDeployment, status translation
//! and the status patch; the periodic status sync alone; and schema detection of the installed
//! DynamoGraphDeployment CRD (860 kB of YAML). Prints time and allocations.
//!
//! `cargo bench -p airunway-provider-dynamo --bench provider_cycle`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use airunway_api::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use airunway_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::desired::{ProviderStatus, desired_upstream, drifted};
use airunway_api::provider::{Provider, SchemaDetection, UpstreamSchema};
use airunway_api::serde_json::{self, Value, json};
use airunway_api::v1alpha1::ModelDeployment;
use airunway_provider_dynamo::DynamoProvider;
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
        serde_json::from_value(upstream("dynamo/nvidia.com_dynamographdeployments.yaml")).unwrap();
    crd.status = Some(
        serde_json::from_value(json!({"conditions": [{"type": "Established", "status": "True"}]}))
            .unwrap(),
    );
    crd
}

fn detected_schema() -> UpstreamSchema {
    match DynamoProvider.detect_schema(Some(&installed_crd())) {
        SchemaDetection::Supported(schema) => schema,
        other => panic!("the shipped DynamoGraphDeployment CRD must be supported: {other:?}"),
    }
}

/// The design doc's Dynamo examples: aggregated vLLM (example 1) and disaggregated vLLM with
/// router overrides (example 3).
fn deployment(example: &str) -> ModelDeployment {
    let file = format!(
        "{}/../airunway-api/tests/fixtures/design-doc/modeldeployment-{example}.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut value = yaml(&std::fs::read_to_string(&file).unwrap());
    value["metadata"]["uid"] = json!("u");
    value["metadata"]["generation"] = json!(1);
    value["metadata"]["labels"] = json!({"airunway.ai/team": "search"});
    value["status"] = json!({"provider": {"name": "dynamo"}});
    serde_json::from_value(value).unwrap()
}

/// The DynamoGraphDeployment as the API server returns it: the desired object with a ready status.
fn live(desired: &Value) -> DynamicObject {
    let mut live = desired.clone();
    live["metadata"]["uid"] = json!("w");
    live["metadata"]["resourceVersion"] = json!("42");
    live["status"] = upstream("status-samples/dgd-successful.yaml")["status"].clone();
    serde_json::from_value(live).unwrap()
}

fn now() -> Time {
    Time("2026-06-01T12:00:00Z".parse().unwrap())
}

/// A reconcile that applies: every pure step from the deployment to the status patch.
#[divan::bench(args = ["example1", "example3"])]
fn apply_cycle(bencher: Bencher<'_, '_>, example: &str) {
    let md = deployment(example);
    let schema = detected_schema();
    let first = DynamoProvider.render(&md, &schema).unwrap();
    let live = live(&desired_upstream(&md, &first).object);
    let live_value = serde_json::to_value(&live).unwrap();
    let now = now();
    bencher.bench_local(|| {
        DynamoProvider.check_compatibility(black_box(&md)).unwrap();
        let rendered = DynamoProvider.render(&md, &schema).unwrap();
        let desired = desired_upstream(&md, &rendered);
        assert!(!drifted(&desired, &live_value));
        let translated = DynamoProvider.translate_status(&md, Some(&live));
        let status = ProviderStatus::from_translation(
            DynamoProvider.display_name(),
            ("m".into(), "DynamoGraphDeployment".into()),
            &translated,
        );
        black_box(status.patch(&md, &now))
    });
}

/// The periodic status sync of a settled deployment: translate and compare, no write.
#[divan::bench(args = ["example1", "example3"])]
fn status_sync(bencher: Bencher<'_, '_>, example: &str) {
    let md = deployment(example);
    let rendered = DynamoProvider.render(&md, &detected_schema()).unwrap();
    let live = live(&desired_upstream(&md, &rendered).object);
    bencher.bench_local(|| {
        let translated = DynamoProvider.translate_status(black_box(&md), Some(&live));
        let status = ProviderStatus::from_translation(
            DynamoProvider.display_name(),
            ("m".into(), "DynamoGraphDeployment".into()),
            &translated,
        );
        black_box(status.is_current(&md, "dynamo-provider"))
    });
}

/// Schema detection of the installed DynamoGraphDeployment CRD (on start and on every CRD change).
#[divan::bench]
fn detect_schema(bencher: Bencher<'_, '_>) {
    let crd = installed_crd();
    bencher.bench_local(|| black_box(DynamoProvider.detect_schema(black_box(Some(&crd)))));
}
