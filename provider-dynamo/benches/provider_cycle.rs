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
use airunway_api::provider::desired::DesiredUpstream;
use airunway_api::provider::{Provider, UpstreamSchema, cycle, testing};
use airunway_api::serde_json::{self, Value, json};
use airunway_api::v1alpha1::ModelDeployment;
use airunway_provider_dynamo::DynamoProvider;
use divan::{AllocProfiler, Bencher, black_box};

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

fn main() {
    divan::main();
}

fn installed_crd() -> CustomResourceDefinition {
    testing::established_crd(
        env!("CARGO_MANIFEST_DIR"),
        "dynamo/nvidia.com_dynamographdeployments.yaml",
    )
    .unwrap()
}

fn detected_schema() -> UpstreamSchema {
    let detection = DynamoProvider.detect_schema(Some(&installed_crd()));
    detection
        .schema()
        .cloned()
        .expect("the shipped CRD is supported")
}

/// The design doc's Dynamo examples: aggregated vLLM (example 1) and disaggregated vLLM with
/// router overrides (example 3).
fn deployment(example: &str) -> ModelDeployment {
    let file = format!(
        "{}/../airunway-api/tests/fixtures/design-doc/modeldeployment-{example}.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut value: Value = testing::read_yaml(file.as_ref()).unwrap();
    value["metadata"]["uid"] = json!("u");
    value["metadata"]["generation"] = json!(1);
    value["metadata"]["labels"] = json!({"airunway.ai/team": "search"});
    value["status"] = json!({"provider": {"name": "dynamo"}});
    serde_json::from_value(value).unwrap()
}

/// The deployment, the DynamoGraphDeployment to apply for it, and that object as the API
/// server returns it once the upstream operator reports it ready.
fn settled(
    example: &str,
) -> (
    ModelDeployment,
    UpstreamSchema,
    DesiredUpstream,
    DynamicObject,
) {
    let (md, schema) = (deployment(example), detected_schema());
    let applied = cycle::apply(&DynamoProvider, &md, &schema, None, &now()).unwrap();
    let sample: Value = testing::upstream(
        env!("CARGO_MANIFEST_DIR"),
        "status-samples/dgd-successful.yaml",
    )
    .unwrap();
    let live = cycle::served(&applied.desired, sample["status"].clone()).unwrap();
    (md, schema, applied.desired, live)
}

fn now() -> Time {
    Time("2026-06-01T12:00:00Z".parse().unwrap())
}

/// A reconcile that applies: every pure step from the deployment to the status patch.
#[divan::bench(args = ["example1", "example3"])]
fn apply_cycle(bencher: Bencher<'_, '_>, example: &str) {
    let (md, schema, _, live) = settled(example);
    let now = now();
    bencher
        .bench_local(|| cycle::apply(&DynamoProvider, black_box(&md), &schema, Some(&live), &now));
}

/// The periodic status sync of a settled deployment: translate and compare, no write.
#[divan::bench(args = ["example1", "example3"])]
fn status_sync(bencher: Bencher<'_, '_>, example: &str) {
    let (md, _, desired, live) = settled(example);
    bencher.bench_local(|| cycle::status_sync(&DynamoProvider, black_box(&md), &desired, &live));
}

/// Schema detection of the installed DynamoGraphDeployment CRD (on start and on every heartbeat).
#[divan::bench]
fn detect_schema(bencher: Bencher<'_, '_>) {
    let crd = installed_crd();
    bencher.bench_local(|| DynamoProvider.detect_schema(black_box(Some(&crd))));
}
