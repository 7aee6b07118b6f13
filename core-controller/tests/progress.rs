//! `Reconciling`, `Stalled` and `status.observedGeneration` as the core writes them (pure):
//! stalled when a change is needed, in progress while waiting for something that happens by
//! itself, and handed to the provider together with the phase.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airunway_api::constants::{condition_types, reasons};
use airunway_api::v1alpha1::{ConditionStatus, InferenceProviderConfig, ModelDeployment, Phase};
use airunway_core::selection::Availability;
use airunway_core::selection::{ProviderView, RuleSet, provider_views};
use airunway_core::status::{
    DesiredCoreStatus, decide, desired_status, is_current, status_patch, unhealthy_message,
};
use serde_json::{Value, json};

const NOW: &str = "2026-06-01T12:00:00Z";

fn kaito(ready: bool) -> InferenceProviderConfig {
    let path = format!(
        "{}/tests/fixtures/shipped-providers/kaito.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut value: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    value["metadata"]["generation"] = json!(1);
    value["status"] = json!({"ready": ready, "lastHeartbeat": "2026-06-01T11:59:40Z"});
    serde_json::from_value(value).unwrap()
}

fn views(ipcs: &[InferenceProviderConfig]) -> Vec<ProviderView> {
    provider_views(ipcs)
}

fn md(spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "m", "namespace": "default", "generation": 3}, "spec": spec,
    }))
    .unwrap()
}

fn desired(md: &ModelDeployment, providers: &[ProviderView], selector: bool) -> DesiredCoreStatus {
    desired_status(md, &decide(md, providers, selector, &RuleSet::default()))
}

/// (Reconciling, Stalled) as (status, reason) pairs.
fn progress(d: &DesiredCoreStatus) -> ((ConditionStatus, String), (ConditionStatus, String)) {
    let get = |t: &str| {
        let c = d.conditions.iter().find(|c| c.type_ == t).unwrap();
        (c.status, c.reason.clone())
    };
    (
        get(condition_types::RECONCILING),
        get(condition_types::STALLED),
    )
}

fn in_progress(reason: &str) -> ((ConditionStatus, String), (ConditionStatus, String)) {
    (
        (ConditionStatus::True, reason.into()),
        (ConditionStatus::False, reasons::PROGRESSING.into()),
    )
}

fn stalled(reason: &str) -> ((ConditionStatus, String), (ConditionStatus, String)) {
    (
        (ConditionStatus::False, reasons::STALLED.into()),
        (ConditionStatus::True, reason.into()),
    )
}

#[test]
fn waiting_for_the_provider_is_in_progress_with_the_generation_observed() {
    let d = desired(
        &md(json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}})),
        &views(&[kaito(true)]),
        true,
    );
    assert_eq!(
        d.phase,
        Some((
            Phase::Pending,
            "Waiting for provider kaito to reconcile".into()
        ))
    );
    assert_eq!(progress(&d), in_progress(reasons::WAITING_FOR_PROVIDER));
    assert_eq!(d.observed_generation, Some(3));
    let reconciling = d
        .conditions
        .iter()
        .find(|c| c.type_ == condition_types::RECONCILING)
        .unwrap();
    assert_eq!(
        reconciling.message,
        "Waiting for provider kaito to reconcile"
    );
}

#[test]
fn a_provider_not_registered_or_not_ready_is_waited_for() {
    let spec = json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "provider": {"name": "kaito"}});
    let d = desired(&md(spec.clone()), &views(&[]), true);
    assert_eq!(progress(&d), in_progress(reasons::PROVIDER_NOT_REGISTERED));
    assert!(d.phase.unwrap().1.contains("not registered"));
    let d = desired(&md(spec), &views(&[kaito(false)]), true);
    assert_eq!(progress(&d), in_progress(reasons::PROVIDER_NOT_READY));
}

#[test]
fn what_needs_a_change_is_stalled() {
    let providers = views(&[kaito(true)]);
    // An invalid spec.
    let d = desired(
        &md(
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 0}}}),
        ),
        &providers,
        true,
    );
    // Failed, with the Go AI Runway's prefix (V4); the condition keeps the bare message.
    let (phase, message) = d.phase.clone().unwrap();
    assert_eq!(phase, Phase::Failed);
    assert_eq!(
        message,
        "Validation failed: spec.resources.gpu.count: vLLM engine requires GPU (set resources.gpu.count > 0)"
    );
    assert_eq!(progress(&d), stalled(reasons::VALIDATION_FAILED));
    let stalled_message = d
        .conditions
        .iter()
        .find(|c| c.type_ == condition_types::STALLED)
        .map(|c| c.message.clone());
    assert_eq!(
        stalled_message.as_deref(),
        Some("spec.resources.gpu.count: vLLM engine requires GPU (set resources.gpu.count > 0)")
    );
    // Conflicting image fields: Failed.
    let d = desired(
        &md(json!({"model": {"id": "a/b"}, "image": "a:1",
            "engine": {"type": "llamacpp", "image": "b:2"}, "provider": {"name": "kaito"}})),
        &providers,
        true,
    );
    assert_eq!(d.phase.as_ref().unwrap().0, Phase::Failed);
    assert_eq!(progress(&d), stalled(reasons::VALIDATION_FAILED));
    // No provider named and the selector disabled.
    let d = desired(
        &md(json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}})),
        &providers,
        false,
    );
    assert_eq!(progress(&d), stalled(reasons::NO_PROVIDER));
    // No provider fits (KAITO serves no disaggregated vLLM).
    let d = desired(
        &md(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"},
            "serving": {"mode": "disaggregated"},
            "scaling": {"prefill": {"replicas": 1, "gpu": {"count": 1}}, "decode": {"replicas": 1, "gpu": {"count": 1}}}})),
        &providers,
        true,
    );
    assert_eq!(progress(&d), stalled(reasons::SELECTION_FAILED));
    assert_eq!(d.observed_generation, Some(3));
    // Pending (as in the Go AI Runway), with its prefix and text before our reasons (V8).
    let (phase, message) = d.phase.unwrap();
    assert_eq!(phase, Phase::Pending);
    assert!(
        message.starts_with(
            "Provider selection failed: no compatible provider found for this configuration: kaito: "
        ),
        "{message}"
    );
}

#[test]
fn a_named_provider_that_does_not_fit_fails_validation_at_reconcile() {
    // V1: the Go AI Runway's `validateSpec` checks the named provider's registered capabilities
    // at reconcile, ready or not; so does the core now, with its texts.
    for ready in [true, false] {
        let d = desired(
            &md(json!({"model": {"id": "a/b"}, "engine": {"type": "sglang"},
                "resources": {"gpu": {"count": 1}}, "provider": {"name": "kaito"}})),
            &views(&[kaito(ready)]),
            true,
        );
        let (phase, message) = d.phase.clone().unwrap();
        assert_eq!(phase, Phase::Failed);
        assert_eq!(
            message,
            "Validation failed: spec.engine.type: provider kaito does not support engine sglang"
        );
        assert_eq!(progress(&d), stalled(reasons::VALIDATION_FAILED));
        let validated = d
            .conditions
            .iter()
            .find(|c| c.type_ == condition_types::VALIDATED)
            .unwrap();
        assert_eq!(validated.status, ConditionStatus::False);
        assert_eq!(
            validated.message,
            "spec.engine.type: provider kaito does not support engine sglang"
        );
    }
    // Fits: nothing held by validation. Not registered: nothing to check against (it waits).
    let fits = json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "provider": {"name": "kaito"}});
    let d = desired(&md(fits.clone()), &views(&[kaito(true)]), true);
    assert_eq!(d.phase.unwrap().0, Phase::Pending);
    let d = desired(
        &md(json!({"model": {"id": "a/b"}, "engine": {"type": "sglang"},
            "resources": {"gpu": {"count": 1}}, "provider": {"name": "kaito"}})),
        &views(&[]),
        true,
    );
    assert_eq!(progress(&d), in_progress(reasons::PROVIDER_NOT_REGISTERED));
}

/// `md` as it reads after the core wrote `d`, then a provider took the phase with `provider`
/// (its managed fields); `shared` lists what both wrote with the same value.
fn taken_over(md: &ModelDeployment, d: &DesiredCoreStatus, shared: bool) -> ModelDeployment {
    let patch = status_patch(md, d, NOW.parse().unwrap());
    let mut value = serde_json::to_value(md).unwrap();
    let mut status = patch["status"].clone();
    status["phase"] = json!("Deploying");
    status["message"] = json!("Workspace created");
    value["status"] = status;
    let core_conditions: serde_json::Map<String, Value> = d
        .conditions
        .iter()
        .map(|c| (format!("k:{{\"type\":\"{}\"}}", c.type_), json!({".": {}})))
        .collect();
    let mut provider_fields = json!({"f:phase": {}, "f:message": {}});
    if shared {
        provider_fields["f:observedGeneration"] = json!({});
        provider_fields["f:conditions"] = json!({
            "k:{\"type\":\"Reconciling\"}": {".": {}, "f:type": {}},
            "k:{\"type\":\"Stalled\"}": {".": {}, "f:type": {}},
        });
    }
    value["metadata"]["managedFields"] = json!([
        {"manager": "airunway-core", "operation": "Apply", "subresource": "status",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {
            "f:conditions": core_conditions, "f:engine": {}, "f:observedGeneration": {},
            "f:provider": {"f:name": {}, "f:selectedReason": {}}}}},
        {"manager": "kaito-provider", "operation": "Apply", "subresource": "status",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:status": provider_fields}},
    ]);
    serde_json::from_value(value).unwrap()
}

#[test]
fn the_provider_takes_reconciling_stalled_and_observed_generation_with_the_phase() {
    let providers = views(&[kaito(true)]);
    let spec = json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "provider": {"name": "kaito"}});
    let before = md(spec);
    let d = desired(&before, &providers, true);
    let patch = status_patch(&before, &d, NOW.parse().unwrap());
    assert_eq!(patch["status"]["observedGeneration"], 3);
    let types: Vec<&str> = patch["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert!(types.contains(&"Reconciling") && types.contains(&"Stalled"));

    // A provider that writes the same three fields too (the SDK's): shared ownership, no write.
    let after = taken_over(&before, &d, true);
    let d2 = desired(&after, &providers, true);
    assert_eq!(d2.phase, None);
    assert_eq!(d2.observed_generation, None);
    assert!(
        !d2.conditions
            .iter()
            .any(|c| condition_types::WITH_PHASE.contains(&c.type_.as_str()))
    );
    assert!(
        is_current(&after, &d2),
        "nothing to write after the hand-over"
    );
    let patch = status_patch(&after, &d2, NOW.parse().unwrap());
    assert!(patch["status"].get("observedGeneration").is_none());
    assert!(patch["status"].get("phase").is_none());

    // A provider that does not write them: the core lets go of them (one write), so no stale
    // `Reconciling=True` outlives the hand-over.
    let after = taken_over(&before, &d, false);
    let d3 = desired(&after, &providers, true);
    assert!(!is_current(&after, &d3));
}

#[test]
fn no_ready_provider_at_all_is_waited_for() {
    let d = desired(
        &md(json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}})),
        &views(&[kaito(false)]),
        true,
    );
    assert_eq!(progress(&d), in_progress(reasons::SELECTION_FAILED));
    assert_eq!(d.phase.unwrap().1, "No healthy providers available");
}

/// `kubectl describe md` shows `ProviderHealthy=False` with a message that says what is wrong,
/// what to do, and that the deployment goes on by itself once it is fixed.
#[test]
fn provider_healthy_messages_say_what_to_do() {
    assert_eq!(
        unhealthy_message("kaito", Some(&Availability::Available)),
        None
    );
    assert_eq!(
        unhealthy_message("ghost", None),
        Some((
            reasons::PROVIDER_NOT_REGISTERED,
            "Provider 'ghost' is not registered: no InferenceProviderConfig named ghost; install \
             that provider or set spec.provider.name to a registered one (kubectl get \
             inferenceproviderconfigs); the deployment goes on by itself once ghost registers"
                .to_string()
        ))
    );
    assert_eq!(
        unhealthy_message(
            "kaito",
            Some(&Availability::NotReady {
                detail: "CRD workspaces.kaito.sh is not installed".into()
            })
        ),
        Some((
            reasons::PROVIDER_NOT_READY,
            "Provider kaito is not ready: CRD workspaces.kaito.sh is not installed; kubectl get \
             inferenceproviderconfig kaito -o yaml shows its conditions; the deployment goes on \
             by itself once the provider is ready"
                .to_string()
        ))
    );
    assert_eq!(
        unhealthy_message(
            "vllm",
            Some(&Availability::Stale {
                since: "2026-01-01T00:01:30Z".parse().unwrap(),
                detail: "No heartbeat since 2026-01-01T00:00:00Z (stale after 90s)".into()
            })
        ),
        Some((
            reasons::PROVIDER_STALE,
            "Provider vllm is stale since 2026-01-01T00:01:30Z: No heartbeat since \
             2026-01-01T00:00:00Z (stale after 90s); check that the provider's pods run and \
             reach the API server (kubectl get inferenceproviderconfig vllm -o yaml shows its \
             Available condition); the deployment goes on by itself once the provider \
             heartbeats again"
                .to_string()
        ))
    );
}
