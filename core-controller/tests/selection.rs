//! Engine and provider selection with the four shipped providers' registrations (the §4.4
//! table), tie-breaks, readiness, explicit-only providers, and rules that fail at run time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airunway_api::constants::{condition_types, messages, reasons};
use airunway_api::v1alpha1::{EngineType, InferenceProviderConfig, ModelDeployment, Phase};
use airunway_core::selection::{
    EngineDecision, ProviderDecision, ProviderView, RuleSet, provider_views, select_engine,
    select_provider,
};
use airunway_core::status::{decide, desired_status};
use serde_json::{Value, json};

fn shipped(name: &str, ready: bool) -> InferenceProviderConfig {
    let path = format!(
        "{}/tests/fixtures/shipped-providers/{name}.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut value: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    value["metadata"]["generation"] = json!(1);
    value["status"] = json!({"ready": ready, "lastHeartbeat": "2026-06-01T11:59:40Z"});
    serde_json::from_value(value).unwrap()
}

fn all_shipped() -> Vec<InferenceProviderConfig> {
    ["dynamo", "kaito", "kuberay", "llmd"]
        .iter()
        .map(|n| shipped(n, true))
        .collect()
}

fn views(ipcs: &[InferenceProviderConfig]) -> Vec<ProviderView> {
    provider_views(ipcs)
}

fn md(spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "m", "namespace": "default", "generation": 1}, "spec": spec,
    }))
    .unwrap()
}

/// Runs engine then provider selection like the core does.
fn select(md: &ModelDeployment, providers: &[ProviderView]) -> (EngineDecision, ProviderDecision) {
    let engine = select_engine(md, providers, true);
    let selection = select_provider(md, engine.engine(), providers, true, &RuleSet::default());
    assert!(
        selection.rule_errors.is_empty(),
        "shipped rules must not error: {:?}",
        selection.rule_errors
    );
    (engine, selection.decision)
}

fn selected(decision: &ProviderDecision) -> (&str, &str) {
    match decision {
        ProviderDecision::Selected {
            provider, reason, ..
        } => (provider, reason),
        other => panic!("expected a selection, got {other:?}"),
    }
}

#[test]
fn the_section_4_4_table_with_the_shipped_rules() {
    let providers = views(&all_shipped());
    let cases = [
        // (spec, engine, provider, selectedReason)
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "resources": {"gpu": {"count": 0}}}),
            "llamacpp",
            "kaito",
            "matched capabilities: engine=llamacpp, gpu=false, mode=aggregated",
        ),
        (
            json!({"model": {"id": "a/b"}}),
            "llamacpp",
            "kaito",
            "matched capabilities: engine=llamacpp, gpu=false, mode=aggregated",
        ),
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "trtllm"}, "resources": {"gpu": {"count": 1}}}),
            "trtllm",
            "dynamo",
            "matched capabilities: engine=trtllm, gpu=true, mode=aggregated",
        ),
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "sglang"}, "resources": {"gpu": {"count": 2}}}),
            "sglang",
            "dynamo",
            "matched capabilities: engine=sglang, gpu=true, mode=aggregated",
        ),
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "resources": {"gpu": {"count": 1}}}),
            "llamacpp",
            "kaito",
            "matched capabilities: engine=llamacpp, gpu=true, mode=aggregated",
        ),
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"},
                "scaling": {"prefill": {"gpu": {"count": 4}}, "decode": {"gpu": {"count": 2}}}}),
            "vllm",
            "dynamo",
            "matched capabilities: engine=vllm, gpu=true, mode=disaggregated",
        ),
        (
            json!({"model": {"id": "a/b"}, "serving": {"mode": "disaggregated"},
                "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}}}),
            "vllm",
            "dynamo",
            "matched capabilities: engine=vllm, gpu=true, mode=disaggregated",
        ),
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}}),
            "vllm",
            "dynamo",
            "matched capabilities: engine=vllm, gpu=true, mode=aggregated",
        ),
        (
            json!({"model": {"id": "a/b"}, "resources": {"gpu": {"count": 1}}}),
            "vllm",
            "dynamo",
            "matched capabilities: engine=vllm, gpu=true, mode=aggregated",
        ),
    ];
    for (spec, engine, provider, reason) in cases {
        let (e, p) = select(&md(spec.clone()), &providers);
        assert_eq!(e.engine().map(EngineType::as_str), Some(engine), "{spec}");
        assert_eq!(selected(&p), (provider, reason), "{spec}");
    }
}

#[test]
fn kuberay_and_llmd_only_when_named() {
    // Only the explicit-only providers are ready: a GPU vLLM deployment is not auto-selected.
    let providers = views(&[
        shipped("kuberay", true),
        shipped("llmd", true),
        shipped("dynamo", false),
    ]);
    let gpu = json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}});
    let (_, decision) = select(&md(gpu.clone()), &providers);
    let message = decision.failure_message().unwrap();
    assert!(
        message.starts_with(&format!("{}: ", messages::NO_COMPATIBLE_PROVIDER)),
        "{message}"
    );
    assert!(
        message.contains("kuberay: no selection rule matched"),
        "{message}"
    );
    assert!(
        message.contains("llmd: no selection rule matched"),
        "{message}"
    );
    assert!(message.contains("dynamo: not ready"), "{message}");

    for name in ["kuberay", "llmd"] {
        let mut spec = gpu.clone();
        spec["provider"] = json!({"name": name});
        let (_, decision) = select(&md(spec), &providers);
        assert_eq!(
            decision,
            ProviderDecision::Explicit {
                provider: name.to_string()
            }
        );
    }
}

#[test]
fn ties_go_to_the_alphabetically_first_name() {
    let mut a = shipped("dynamo", true);
    a.metadata.name = Some("zeta".into());
    let mut b = shipped("dynamo", true);
    b.metadata.name = Some("alpha".into());
    let (_, decision) = select(
        &md(
            json!({"model": {"id": "a/b"}, "engine": {"type": "sglang"}, "resources": {"gpu": {"count": 1}}}),
        ),
        &views(&[a, b]),
    );
    assert_eq!(selected(&decision).0, "alpha");
}

#[test]
fn higher_priority_beats_the_name_order() {
    let mut high = shipped("dynamo", true);
    high.metadata.name = Some("zz-high".into());
    high.spec.selection_rules.as_mut().unwrap()[2].priority = 500;
    let (_, decision) = select(
        &md(
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}}),
        ),
        &views(&[shipped("dynamo", true), high]),
    );
    assert_eq!(selected(&decision).0, "zz-high");
}

#[test]
fn readiness_and_staleness_filter_candidates() {
    // kaito not ready: a CPU deployment finds no provider, and says why.
    let providers = views(&[shipped("kaito", false), shipped("dynamo", true)]);
    let (engine, decision) = select(
        &md(json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}})),
        &providers,
    );
    assert_eq!(engine, EngineDecision::Explicit(EngineType::Llamacpp));
    let message = decision.failure_message().unwrap();
    assert!(message.contains("kaito: not ready"), "{message}");
    assert!(
        message.contains("dynamo: does not offer engine llamacpp"),
        "{message}"
    );

    // Nothing ready at all.
    let providers = views(&[shipped("kaito", false), shipped("dynamo", false)]);
    let (_, decision) = select(
        &md(json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}})),
        &providers,
    );
    assert_eq!(decision, ProviderDecision::NoHealthyProviders);
    assert_eq!(
        decision.failure_message().as_deref(),
        Some(messages::NO_HEALTHY_PROVIDERS)
    );

    // A provider the health monitor marked stale (`Available=False`) counts as not available.
    let mut stale = shipped("kaito", true);
    stale.status.as_mut().unwrap().conditions = Some(vec![
        serde_json::from_value(
            json!({"type": "Available", "status": "False", "reason": "HeartbeatStale",
            "message": "No heartbeat since 2026-06-01T11:00:00Z (stale after 90s)",
            "lastTransitionTime": "2026-06-01T11:01:30Z"}),
        )
        .unwrap(),
    ]);
    let (_, decision) = select(
        &md(json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}})),
        &views(&[stale]),
    );
    assert_eq!(decision, ProviderDecision::NoHealthyProviders);
}

#[test]
fn a_rule_that_errors_counts_as_false_and_is_reported() {
    let mut broken = shipped("dynamo", true);
    broken.metadata.name = Some("broken".into());
    broken.spec.selection_rules = Some(vec![
        serde_json::from_value(
            json!({"condition": "spec.model.id.startsWith(1)", "priority": 1000}),
        )
        .unwrap(),
    ]);
    let providers = views(&[broken, shipped("dynamo", true)]);
    let spec = md(
        json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}}),
    );
    let selection = select_provider(
        &spec,
        Some(EngineType::Vllm),
        &providers,
        true,
        &RuleSet::default(),
    );
    assert_eq!(selected(&selection.decision).0, "dynamo");
    assert_eq!(selection.evaluated, ["broken", "dynamo"]);
    let errors = selection.rule_errors;
    assert_eq!(errors.len(), 1);
    assert_eq!(
        (errors[0].provider.as_str(), errors[0].index),
        ("broken", 0)
    );
}

#[test]
fn selector_disabled_and_engine_required() {
    let providers = views(&all_shipped());
    let spec = md(json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}}));
    let decision = select_provider(
        &spec,
        Some(EngineType::Llamacpp),
        &providers,
        false,
        &RuleSet::default(),
    )
    .decision;
    assert_eq!(
        decision.failure_message().as_deref(),
        Some(messages::SELECTOR_DISABLED)
    );

    let no_engine = md(json!({"model": {"id": "a/b"}}));
    match select_engine(&no_engine, &providers, false) {
        EngineDecision::Unavailable { message } => assert!(
            message.starts_with(messages::ENGINE_TYPE_REQUIRED),
            "{message}"
        ),
        other => panic!("{other:?}"),
    }
    // Disaggregated CPU work: nobody offers it.
    let nothing = md(
        json!({"model": {"id": "a/b"}, "serving": {"mode": "disaggregated"}, "scaling": {"prefill": {}, "decode": {}}}),
    );
    match select_engine(&nothing, &providers, true) {
        EngineDecision::Unavailable { message } => assert_eq!(
            message,
            "no engines available from registered providers (hasGPU=false, servingMode=disaggregated, advertised=map[dynamo:[vllm sglang trtllm] kaito:[vllm llamacpp] kuberay:[vllm] llmd:[vllm]])"
        ),
        other => panic!("{other:?}"),
    }
    // The Go AI Runway's texts: none registered; a named provider says it is the one.
    match select_engine(&nothing, &[], true) {
        EngineDecision::Unavailable { message } => {
            assert_eq!(message, messages::NO_PROVIDERS_REGISTERED)
        }
        other => panic!("{other:?}"),
    }
    let mut named = nothing.clone();
    named.spec.provider = Some(serde_json::from_value(json!({"name": "kaito"})).unwrap());
    match select_engine(&named, &providers, true) {
        EngineDecision::Unavailable { message } => assert_eq!(
            message,
            "no engines available from registered providers (hasGPU=false, servingMode=disaggregated, advertised=map[kaito:[vllm llamacpp]]): provider kaito (spec.provider.name) offers no engine for them; set spec.engine.type or name another provider"
        ),
        other => panic!("{other:?}"),
    }
    // A valid CPU deployment and only Dynamo (GPU engines): Pending, with Go's prefix.
    let cpu = md(json!({"model": {"id": "a/b"}, "resources": {"cpu": "1"}}));
    let dynamo = views(&[shipped("dynamo", true)]);
    let desired = desired_status(&cpu, &decide(&cpu, &dynamo, true, &RuleSet::default()));
    let (phase, message) = desired.phase.unwrap();
    assert_eq!(phase, Phase::Pending);
    assert_eq!(
        message,
        "Engine selection failed: no engines available from registered providers (hasGPU=false, servingMode=aggregated, advertised=map[dynamo:[vllm sglang trtllm]])"
    );
}

#[test]
fn selection_is_one_time() {
    let providers = views(&all_shipped());
    let mut deployment = md(json!({"model": {"id": "a/b"}, "resources": {"gpu": {"count": 1}}}));
    deployment.status = Some(serde_json::from_value(json!({
        "provider": {"name": "kaito", "selectedReason": "whatever"},
        "engine": {"type": "sglang", "selectedReason": "earlier"},
        "conditions": [{"type": "EngineSelected", "status": "True", "reason": "AutoSelected", "message": "x"}],
    })).unwrap());
    let (engine, provider) = select(&deployment, &providers);
    assert_eq!(
        engine.engine(),
        Some(EngineType::Sglang),
        "auto-selected engine is kept"
    );
    assert_eq!(
        provider,
        ProviderDecision::Kept {
            provider: "kaito".into()
        }
    );

    // A changed spec.provider.name moves the deployment.
    deployment.spec.provider = Some(serde_json::from_value(json!({"name": "dynamo"})).unwrap());
    let (_, provider) = select(&deployment, &providers);
    assert_eq!(
        provider,
        ProviderDecision::Explicit {
            provider: "dynamo".into()
        }
    );
}

#[test]
fn desired_status_for_an_auto_selection() {
    let providers = views(&all_shipped());
    let deployment = md(json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}}));
    let decision = decide(&deployment, &providers, true, &RuleSet::default());
    let desired = desired_status(&deployment, &decision);
    assert_eq!(
        desired.provider,
        Some((
            "kaito".into(),
            "matched capabilities: engine=llamacpp, gpu=false, mode=aggregated".into()
        ))
    );
    assert_eq!(
        desired.engine,
        Some((EngineType::Llamacpp, "explicit engine selection".into()))
    );
    assert_eq!(
        desired.phase,
        Some((
            Phase::Pending,
            "Waiting for provider kaito to reconcile".into()
        ))
    );
    let by_type = |t: &str| desired.conditions.iter().find(|c| c.type_ == t).unwrap();
    assert_eq!(
        by_type(condition_types::PROVIDER_SELECTED).reason,
        reasons::AUTO_SELECTED
    );
    assert_eq!(
        by_type(condition_types::PROVIDER_SELECTED).message,
        "Provider kaito auto-selected"
    );
    assert_eq!(
        by_type(condition_types::VALIDATED).message,
        "Schema validation passed"
    );
    assert_eq!(
        by_type(condition_types::PROVIDER_HEALTHY).reason,
        reasons::PROVIDER_AVAILABLE
    );
}

#[test]
fn desired_status_for_an_invalid_spec() {
    let deployment = md(
        json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 0}}}),
    );
    let decision = decide(
        &deployment,
        &views(&all_shipped()),
        true,
        &RuleSet::default(),
    );
    let desired = desired_status(&deployment, &decision);
    let (phase, message) = desired.phase.unwrap();
    assert_eq!(phase, Phase::Failed);
    assert_eq!(
        message,
        format!(
            "Validation failed: spec.resources.gpu.count: {}",
            messages::VLLM_REQUIRES_GPU
        )
    );
    let validated = desired
        .conditions
        .iter()
        .find(|c| c.type_ == condition_types::VALIDATED)
        .unwrap();
    assert_eq!(validated.reason, reasons::VALIDATION_FAILED);
    assert_eq!(
        desired.provider, None,
        "nothing is selected for an invalid spec"
    );
}

#[test]
fn conflicting_image_fields_fail_with_the_go_message() {
    let deployment = md(json!({"model": {"id": "a/b"}, "image": "a:1",
        "engine": {"type": "vllm", "image": "b:2"}, "provider": {"name": "kaito"}}));
    let decision = decide(
        &deployment,
        &views(&all_shipped()),
        true,
        &RuleSet::default(),
    );
    let desired = desired_status(&deployment, &decision);
    let (phase, message) = desired.phase.unwrap();
    assert_eq!(phase, Phase::Failed);
    assert_eq!(
        message,
        r#"Validation failed: spec.image "a:1" conflicts with spec.engine.image "b:2"; remove spec.image or set both fields to the same value (spec.engine.image is preferred)"#
    );
}
