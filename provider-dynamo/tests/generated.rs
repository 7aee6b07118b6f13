//! Generated input for the Dynamo provider (issue 23): for any generated ModelDeployment spec
//! the API server would admit (our CRD's schema), the render never panics, a hold carries a
//! message, and every object it would apply passes the Pod Security baseline and the real upstream CRD's openAPIV3Schema (checked offline),
//! on both installed CRDs: Dynamo ≥ 1.5's (`v1beta1` rendered) and Dynamo 1.1's (`v1alpha1`);
//! overrides with privilege-escalating keys at any depth and in any spelling never reach an
//! applied object; status translation from any generated upstream status never panics and
//! yields a phase. Case counts: `PROPTEST_CASES` (default 256); the long run is in
//! docs/reliability.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::LazyLock;

use airunway_api::generate;
use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::testing::hostile::{self, Generated};
use airunway_api::provider::testing::upstream_schema::{self, UpstreamValidator};
use airunway_api::provider::{Provider, SchemaDetection, UpstreamSchema, testing};
use airunway_api::serde_json::{self, json};
use airunway_provider_dynamo::DynamoProvider;
use proptest::prelude::*;
use proptest::strategy::ValueTree;

static OURS: LazyLock<UpstreamValidator> =
    LazyLock::new(|| upstream_schema::model_deployment_validator().unwrap());

/// The CRD of Dynamo ≥ 1.5 (both versions served: `v1beta1` is rendered), named under
/// `e2e/fixtures/` so that a development copy of the design material's `upstream-crds/` (Dynamo
/// 1.1's CRD at `dynamo/...`) does not stand in for it.
const DYNAMO_1_5: &str = "upstream-crds/dynamo/nvidia.com_dynamographdeployments.yaml";
/// The CRD of Dynamo 1.1 (`v1alpha1` only).
const DYNAMO_1_1: &str = "upstream-crd-versions/dynamo-1.1/nvidia.com_dynamographdeployments.yaml";

/// One installed CRD: what the provider detects on it, and its schema (of the detected
/// version) to check the renders against offline.
struct Installed {
    detection: SchemaDetection,
    upstream: UpstreamValidator,
}

fn installed(path: &str, version: &str) -> Installed {
    let detection = DynamoProvider.detect_schema(Some(
        &testing::established_crd(env!("CARGO_MANIFEST_DIR"), path).unwrap(),
    ));
    match &detection {
        SchemaDetection::Supported(schema) => assert_eq!(schema.version, version, "{path}"),
        other => panic!("{path}: {other:?}"),
    }
    let upstream =
        upstream_schema::upstream_validator(env!("CARGO_MANIFEST_DIR"), path, version).unwrap();
    Installed {
        detection,
        upstream,
    }
}

static V1BETA1: LazyLock<Installed> = LazyLock::new(|| installed(DYNAMO_1_5, "v1beta1"));
static V1ALPHA1: LazyLock<Installed> = LazyLock::new(|| installed(DYNAMO_1_1, "v1alpha1"));

fn schema(installed: &Installed) -> UpstreamSchema {
    installed.detection.schema().unwrap().clone()
}

fn both() -> [&'static Installed; 2] {
    [&V1BETA1, &V1ALPHA1]
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn render_of_any_admitted_spec_is_safe_and_schema_valid(spec in generate::spec()) {
        // Without overrides (the next property has them): more specs get as far as applying.
        let mut spec = spec;
        spec["provider"] = json!({"name": "dynamo"});
        for installed in both() {
            hostile::generated_render(&DynamoProvider, &installed.detection, &spec, &OURS, Some(&installed.upstream));
        }
    }

    #[test]
    fn escalating_overrides_never_reach_an_applied_object(
        spec in generate::spec(),
        overrides in generate::overrides(),
    ) {
        let mut spec = spec;
        spec["provider"] = json!({"name": "dynamo", "overrides": overrides});
        // generated_render asserts pod security on every object it would apply.
        for installed in both() {
            hostile::generated_render(&DynamoProvider, &installed.detection, &spec, &OURS, Some(&installed.upstream));
        }
    }

    #[test]
    fn status_translation_always_yields_a_phase(spec in generate::spec(), status in generate::upstream_status()) {
        let Some(md) = generate::model_deployment("m", &spec, Some("dynamo")) else { return Ok(()) };
        for installed in both() {
            let object = match DynamoProvider.render(&md, &schema(installed)) {
                Ok(set) => set.objects[0].clone(),
                Err(_) => json!({"apiVersion": "v1", "kind": "Unknown", "metadata": {"name": "m"}}),
            };
            let mut live = object;
            live["metadata"]["namespace"] = json!("ns");
            live["status"] = status.clone();
            let live: DynamicObject = serde_json::from_value(live).unwrap();
            let translated = DynamoProvider.translate_status(&md, &[Some(&live)]);
            let phase = serde_json::to_value(translated.phase).unwrap();
            prop_assert!(["Pending", "Deploying", "Running", "Failed", "Terminating"].contains(&phase.as_str().unwrap()), "{phase}");
        }
        let missing = DynamoProvider.translate_status(&md, &[None]);
        prop_assert!(serde_json::to_value(missing.phase).unwrap().is_string());
    }
}

#[test]
fn the_generators_reach_every_outcome() {
    // Not vacuous: over a fixed seed, generated specs are refused by the schema, held and applied.
    for installed in both() {
        let version = schema(installed).version;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let mut seen = std::collections::BTreeMap::new();
        for _ in 0..2000 {
            let spec = generate::spec().new_tree(&mut runner).unwrap().current();
            let outcome = hostile::generated_render(
                &DynamoProvider,
                &installed.detection,
                &spec,
                &OURS,
                Some(&installed.upstream),
            );
            *seen.entry(format!("{outcome:?}")).or_insert(0) += 1;
        }
        println!("Dynamo {version} over 2000 generated specs: {seen:?}");
        for outcome in [Generated::NotAdmitted, Generated::Held, Generated::Applied] {
            assert!(
                seen.contains_key(&format!("{outcome:?}")),
                "{version}: {seen:?}"
            );
        }
    }
}

/// The offline validator is sound: Dynamo's own `v1beta1` graphs (the profiler templates of the
/// ai-dynamo 1.6.1 wheel, `e2e/fixtures/upstream-samples/dynamo-1.6/`) pass it, and a field
/// the schema lacks, or a wrong type, fails it.
#[test]
fn dynamos_own_v1beta1_graphs_pass_the_validator() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../e2e/fixtures/upstream-samples/dynamo-1.6");
    let mut checked = 0;
    for engine in std::fs::read_dir(&dir).unwrap() {
        for file in std::fs::read_dir(engine.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let sample: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
            assert_eq!(
                sample["apiVersion"],
                "nvidia.com/v1beta1",
                "{}",
                path.display()
            );
            let errors = V1BETA1.upstream.errors(&sample);
            assert!(errors.is_empty(), "{}: {errors:?}", path.display());
            checked += 1;
            let mut unknown = sample.clone();
            unknown["spec"]["components"][0]["replicaz"] = json!(1);
            assert!(
                !V1BETA1.upstream.errors(&unknown).is_empty(),
                "{}",
                path.display()
            );
            let mut retyped = sample;
            retyped["spec"]["components"][0]["replicas"] = json!("one");
            assert!(
                !V1BETA1.upstream.errors(&retyped).is_empty(),
                "{}",
                path.display()
            );
        }
    }
    assert_eq!(checked, 7, "{}", dir.display());
}
