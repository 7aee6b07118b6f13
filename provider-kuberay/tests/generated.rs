//! Generated input for the KubeRay provider (issue 23): for any generated ModelDeployment spec
//! the API server would admit (our CRD's schema), the render never panics, a hold carries a
//! message, and every object it would apply passes the Pod Security baseline and the real upstream CRD's openAPIV3Schema (checked offline);
//! overrides with privilege-escalating keys at any depth and in any spelling never reach an
//! applied object; adapters Ray Serve LLM can load (one `s3://`/`gs://` prefix) render as
//! `lora_config` and keep an applied render applied; status translation from any generated
//! upstream status never panics and yields a phase. Case counts: `PROPTEST_CASES` (default 256); the long run is in
//! docs/reliability.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::LazyLock;

use airunway_api::generate;
use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::testing::hostile::{self, Generated};
use airunway_api::provider::testing::upstream_schema::{self, UpstreamValidator};
use airunway_api::provider::{Provider, SchemaDetection, UpstreamSchema, testing};
use airunway_api::serde_json::{self, Value, json};
use airunway_provider_kuberay::KubeRayProvider;
use proptest::prelude::*;
use proptest::strategy::ValueTree;

static OURS: LazyLock<UpstreamValidator> =
    LazyLock::new(|| upstream_schema::model_deployment_validator().unwrap());
static DETECTION: LazyLock<SchemaDetection> = LazyLock::new(|| {
    KubeRayProvider.detect_schema(Some(
        &testing::established_crd(
            env!("CARGO_MANIFEST_DIR"),
            "kuberay/ray.io_rayservices.yaml",
        )
        .unwrap(),
    ))
});
static UPSTREAM: LazyLock<UpstreamValidator> = LazyLock::new(|| {
    upstream_schema::upstream_validator(
        env!("CARGO_MANIFEST_DIR"),
        "kuberay/ray.io_rayservices.yaml",
        &schema().version,
    )
    .unwrap()
});

/// Adapters shaped as Ray Serve LLM loads them: one to four unique names, one `s3://` or
/// `gs://` prefix, each source `<prefix>/<name>` (sometimes with a trailing `/`), ranks across
/// vLLM's range or none.
fn ray_adapters() -> impl Strategy<Value = Value> {
    (
        prop_oneof![Just("s3"), Just("gs")],
        "[a-z0-9][a-z0-9.-]{1,20}[a-z0-9]",
        "(/[a-z0-9_-]{1,8}){0,3}",
        proptest::collection::btree_set("[a-z0-9][a-z0-9._-]{0,10}[a-z0-9]", 1..=4),
        proptest::collection::vec(proptest::option::of(1i64..=512), 4),
        any::<bool>(),
    )
        .prop_map(|(scheme, bucket, path, names, ranks, slash)| {
            let prefix = format!("{scheme}://{bucket}{path}");
            let adapters: Vec<Value> = names
                .iter()
                .zip(ranks)
                .map(|(name, rank)| {
                    let tail = if slash { "/" } else { "" };
                    let mut a = json!({"name": name, "source": format!("{prefix}/{name}{tail}")});
                    if let Some(rank) = rank {
                        a["maxRank"] = json!(rank);
                    }
                    a
                })
                .collect();
            json!({"prefix": prefix, "adapters": adapters})
        })
}

/// The model names clients use for the base model of `spec` (adapters may not take them).
fn base_names(spec: &Value) -> Vec<String> {
    let model = &spec["model"];
    let mut names: Vec<String> = ["id", "servedName"]
        .iter()
        .filter_map(|k| model[*k].as_str().map(str::to_string))
        .collect();
    if let Some(id) = model["id"].as_str() {
        names.extend(id.rsplit('/').next().map(str::to_string));
    }
    names
}

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
        spec["provider"] = json!({"name": "kuberay"});
        hostile::generated_render(&KubeRayProvider, &DETECTION, &spec, &OURS, Some(&UPSTREAM));
    }

    #[test]
    fn escalating_overrides_never_reach_an_applied_object(
        spec in generate::spec(),
        overrides in generate::overrides(),
    ) {
        let mut spec = spec;
        spec["provider"] = json!({"name": "kuberay", "overrides": overrides});
        // generated_render asserts pod security on every object it would apply.
        hostile::generated_render(&KubeRayProvider, &DETECTION, &spec, &OURS, Some(&UPSTREAM));
    }

    #[test]
    fn ray_shaped_adapters_render_as_lora_config(
        adapters in ray_adapters(),
        gpus in 1i64..=4,
        disaggregated in any::<bool>(),
    ) {
        let mut spec = json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"},
            "provider": {"name": "kuberay"}, "adapters": adapters["adapters"]});
        if disaggregated {
            spec["serving"] = json!({"mode": "disaggregated"});
            spec["scaling"] = json!({"prefill": {"gpu": {"count": gpus}}, "decode": {"gpu": {"count": gpus}}});
        } else {
            spec["resources"] = json!({"gpu": {"count": gpus}});
        }
        let outcome = hostile::generated_render(&KubeRayProvider, &DETECTION, &spec, &OURS, Some(&UPSTREAM));
        prop_assert_eq!(outcome, Generated::Applied, "{}", spec);
        let md = generate::model_deployment("m", &spec, Some("kuberay")).unwrap();
        let object = KubeRayProvider.render(&md, &schema()).unwrap().objects[0].clone();
        let text = object["spec"]["serveConfigV2"].as_str().unwrap();
        let config: Value = serde_saphyr::from_str(text).unwrap();
        let args = &config["applications"][0]["args"];
        let configs: Vec<&Value> = if disaggregated {
            vec![&args["prefill_config"], &args["decode_config"]]
        } else {
            vec![&args["llm_configs"][0]]
        };
        let count = adapters["adapters"].as_array().unwrap().len();
        for config in configs {
            prop_assert_eq!(
                &config["lora_config"],
                &json!({"dynamic_lora_loading_path": adapters["prefix"], "max_num_adapters_per_replica": count})
            );
            prop_assert_eq!(&config["engine_kwargs"]["enable_lora"], &json!(true));
            prop_assert_eq!(&config["engine_kwargs"]["max_loras"], &json!(count));
        }
    }

    #[test]
    fn ray_shaped_adapters_keep_any_render_accepted(spec in generate::spec(), adapters in ray_adapters()) {
        // Whatever a generated spec comes to on KubeRay without adapters, it comes to with
        // adapters Ray Serve LLM can load: an applied render stays applied.
        let mut spec = spec;
        spec["provider"] = json!({"name": "kuberay"});
        if let Some(map) = spec.as_object_mut() {
            map.remove("adapters");
        }
        let without = hostile::generated_render(&KubeRayProvider, &DETECTION, &spec, &OURS, Some(&UPSTREAM));
        let base = base_names(&spec);
        let collides = adapters["adapters"].as_array().unwrap().iter()
            .any(|a| base.iter().any(|b| a["name"].as_str() == Some(b.as_str())));
        let separator = base.iter().any(|b| b.contains(':'));
        if spec.is_object() && !collides && !separator {
            spec["adapters"] = adapters["adapters"].clone();
            let with = hostile::generated_render(&KubeRayProvider, &DETECTION, &spec, &OURS, Some(&UPSTREAM));
            if without == Generated::Applied {
                prop_assert_eq!(with, Generated::Applied, "{}", spec);
            }
        }
    }

    #[test]
    fn status_translation_always_yields_a_phase(spec in generate::spec(), status in generate::upstream_status()) {
        let Some(md) = generate::model_deployment("m", &spec, Some("kuberay")) else { return Ok(()) };
        let object = match KubeRayProvider.render(&md, &schema()) {
            Ok(set) => set.objects[0].clone(),
            Err(_) => json!({"apiVersion": "v1", "kind": "Unknown", "metadata": {"name": "m"}}),
        };
        let mut live = object;
        live["metadata"]["namespace"] = json!("ns");
        live["status"] = status;
        let live: DynamicObject = serde_json::from_value(live).unwrap();
        let translated = KubeRayProvider.translate_status(&md, &[Some(&live)]);
        let phase = serde_json::to_value(translated.phase).unwrap();
        prop_assert!(["Pending", "Deploying", "Running", "Failed", "Terminating"].contains(&phase.as_str().unwrap()), "{phase}");
        let missing = KubeRayProvider.translate_status(&md, &[None]);
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
        let outcome =
            hostile::generated_render(&KubeRayProvider, &DETECTION, &spec, &OURS, Some(&UPSTREAM));
        *seen.entry(format!("{outcome:?}")).or_insert(0) += 1;
    }
    println!("KubeRay over 2000 generated specs: {seen:?}");
    for outcome in [Generated::NotAdmitted, Generated::Held, Generated::Applied] {
        assert!(seen.contains_key(&format!("{outcome:?}")), "{seen:?}");
    }
}

#[test]
fn ray_shaped_adapters_are_applied_on_generated_specs() {
    // Not vacuous: over a fixed seed, generated specs applied without adapters are applied with
    // Ray-shaped ones too.
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut applied = 0;
    for _ in 0..1000 {
        let mut spec = generate::spec().new_tree(&mut runner).unwrap().current();
        let adapters = ray_adapters().new_tree(&mut runner).unwrap().current();
        let Some(map) = spec.as_object_mut() else {
            continue;
        };
        map.remove("adapters");
        map.insert("provider".into(), json!({"name": "kuberay"}));
        let without =
            hostile::generated_render(&KubeRayProvider, &DETECTION, &spec, &OURS, Some(&UPSTREAM));
        spec["adapters"] = adapters["adapters"].clone();
        let with =
            hostile::generated_render(&KubeRayProvider, &DETECTION, &spec, &OURS, Some(&UPSTREAM));
        if without == Generated::Applied && with == Generated::Applied {
            applied += 1;
        }
    }
    println!("KubeRay: {applied} of 1000 generated specs applied with Ray-shaped adapters");
    assert!(applied > 0);
}
