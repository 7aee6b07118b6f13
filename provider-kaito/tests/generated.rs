//! Generated input for the KAITO provider (issue 23): for any generated ModelDeployment spec
//! the API server would admit (our CRD's schema), the render never panics, a hold carries a
//! message, and every object it would apply passes the Pod Security baseline and the real upstream CRD's openAPIV3Schema (checked offline);
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
use airunway_provider_kaito::KaitoProvider;
use proptest::prelude::*;
use proptest::strategy::ValueTree;

static OURS: LazyLock<UpstreamValidator> =
    LazyLock::new(|| upstream_schema::model_deployment_validator().unwrap());
static DETECTION: LazyLock<SchemaDetection> = LazyLock::new(|| {
    KaitoProvider::default().detect_schema(Some(
        &testing::established_crd(env!("CARGO_MANIFEST_DIR"), "kaito/kaito.sh_workspaces.yaml")
            .unwrap(),
    ))
});
static UPSTREAM: LazyLock<UpstreamValidator> = LazyLock::new(|| {
    upstream_schema::upstream_validator(
        env!("CARGO_MANIFEST_DIR"),
        "kaito/kaito.sh_workspaces.yaml",
        &schema().version,
    )
    .unwrap()
});

fn schema() -> UpstreamSchema {
    match &*DETECTION {
        SchemaDetection::Supported(schema) => schema.clone(),
        other => panic!("{other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn render_of_any_admitted_spec_is_safe_and_schema_valid(spec in generate::spec()) {
        // Without overrides (the next property has them): more specs get as far as applying.
        let mut spec = spec;
        spec["provider"] = json!({"name": "kaito"});
        hostile::generated_render(&KaitoProvider::default(), &DETECTION, &spec, &OURS, Some(&UPSTREAM));
    }

    #[test]
    fn escalating_overrides_never_reach_an_applied_object(
        spec in generate::spec(),
        overrides in generate::overrides(),
    ) {
        let mut spec = spec;
        spec["provider"] = json!({"name": "kaito", "overrides": overrides});
        // generated_render asserts pod security on every object it would apply.
        hostile::generated_render(&KaitoProvider::default(), &DETECTION, &spec, &OURS, Some(&UPSTREAM));
    }

    #[test]
    fn status_translation_always_yields_a_phase(spec in generate::spec(), status in generate::upstream_status()) {
        let Some(md) = generate::model_deployment("m", &spec, Some("kaito")) else { return Ok(()) };
        let object = match KaitoProvider::default().render(&md, &schema()) {
            Ok(set) => set.objects[0].clone(),
            Err(_) => json!({"apiVersion": "v1", "kind": "Unknown", "metadata": {"name": "m"}}),
        };
        let mut live = object;
        live["metadata"]["namespace"] = json!("ns");
        live["status"] = status;
        let live: DynamicObject = serde_json::from_value(live).unwrap();
        let translated = KaitoProvider::default().translate_status(&md, &[Some(&live)]);
        let phase = serde_json::to_value(translated.phase).unwrap();
        prop_assert!(["Pending", "Deploying", "Running", "Failed", "Terminating"].contains(&phase.as_str().unwrap()), "{phase}");
        let missing = KaitoProvider::default().translate_status(&md, &[None]);
        prop_assert!(serde_json::to_value(missing.phase).unwrap().is_string());
    }
}

#[test]
fn the_generators_reach_every_outcome() {
    // Not vacuous: over a fixed seed, generated specs are refused by the schema, held and applied.
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut seen = std::collections::BTreeMap::new();
    for _ in 0..2000 {
        let spec = generate::spec().new_tree(&mut runner).unwrap().current();
        let outcome = hostile::generated_render(
            &KaitoProvider::default(),
            &DETECTION,
            &spec,
            &OURS,
            Some(&UPSTREAM),
        );
        *seen.entry(format!("{outcome:?}")).or_insert(0) += 1;
    }
    println!("KAITO over 2000 generated specs: {seen:?}");
    for outcome in [Generated::NotAdmitted, Generated::Held, Generated::Applied] {
        assert!(seen.contains_key(&format!("{outcome:?}")), "{seen:?}");
    }
}
