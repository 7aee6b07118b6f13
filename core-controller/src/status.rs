//! The core's decision for one deployment and the status it implies (pure).
//!
//! Field ownership (ARCHITECTURE §3): the core applies, with field manager `airunway-core`,
//! `status.engine.*`, `status.provider.name`, `status.provider.selectedReason`,
//! and the conditions `Validated`, `EngineSelected`, `ProviderSelected` and `ProviderHealthy`.
//! It writes `status.phase`, `status.message`, `status.observedGeneration` and the conditions
//! `Reconciling` and `Stalled` only until a provider has taken the phase (another manager owns
//! `status.phase`); from then on they belong to the provider (docs/status-ownership.md). It
//! never writes `status.provider.name` (nor `ProviderSelected`) that another selector set.

use airunway_api::conditions::{self, DesiredCondition, Progress};
use airunway_api::constants::{condition_types, field_managers, messages, reasons};
use airunway_api::v1alpha1::{EffectiveRuntimeConfig, EngineType, ModelDeployment, Phase};
use jiff::Timestamp;
use serde_json::{Value, json};

use crate::runtime_config::Plan;
use crate::selection::engine::EXPLICIT_ENGINE_REASON;
use crate::selection::provider::EXPLICIT_PROVIDER_REASON;
use crate::selection::provider::ProviderOutcome;
use crate::selection::{
    Availability, EngineDecision, ProviderDecision, ProviderView, RuleError, RuleSet,
    select_engine, select_provider,
};
use crate::validation::{self, FieldError};
use airunway_api::managed_fields::OwnedFields;

/// Everything the core decided for a deployment.
#[derive(Clone, Debug)]
pub struct CoreDecision {
    /// Validation errors (empty when valid), including a named provider's capability check:
    /// the phase is then `Failed` with `Validation failed: <errors>`, as in the Go AI Runway.
    pub validation_errors: Vec<FieldError>,
    /// Conflicting image fields (also among the validation errors): the phase's message is then
    /// the Go AI Runway's exact `Validation failed: <conflict>`.
    pub failure: Option<String>,
    /// The engine decision; `None` while the spec is invalid and no engine is known.
    pub engine: Option<EngineDecision>,
    /// The provider decision; `None` while the spec is invalid and no provider is known.
    pub provider: Option<ProviderDecision>,
    /// The decided provider's availability (`None` inside: no InferenceProviderConfig).
    pub provider_availability: Option<(String, Option<Availability>)>,
    /// Selection rules that failed to evaluate.
    pub rule_errors: Vec<RuleError>,
    /// Providers whose rules were evaluated.
    pub rules_evaluated: Vec<String>,
    /// What selection made of each provider (see [`ProviderOutcome`]; empty when no rule was
    /// evaluated).
    pub provider_outcomes: Vec<(String, ProviderOutcome)>,
}

/// Decides validation, engine, provider and provider health for `md`.
pub fn decide(
    md: &ModelDeployment,
    providers: &[ProviderView],
    selector_enabled: bool,
    rules: &RuleSet,
) -> CoreDecision {
    let mut validation_errors = validation::validate(md);
    // Conflicting image fields cannot be fixed by waiting: `Failed`, as in the Go AI Runway.
    let failure = validation::image_conflict(&md.spec);
    let engine_decision = select_engine(md, providers, selector_enabled);
    validation_errors.extend(named_provider_mismatch(md, &engine_decision, providers));
    let valid = validation_errors.is_empty();
    let engine = match (&engine_decision, valid) {
        (_, true) | (EngineDecision::Explicit(_), false) => Some(engine_decision.clone()),
        // Invalid spec: keep an engine chosen earlier, select nothing new.
        (EngineDecision::Auto { .. }, false) if recorded_engine(md).is_some() => {
            Some(engine_decision.clone())
        }
        _ => None,
    };
    let (provider, rule_errors, rules_evaluated, provider_outcomes) =
        if valid || md.spec.explicit_provider().is_some() || md.selected_provider().is_some() {
            let selection = select_provider(
                md,
                engine.as_ref().and_then(EngineDecision::engine),
                providers,
                selector_enabled,
                rules,
            );
            (
                Some(selection.decision),
                selection.rule_errors,
                selection.evaluated,
                selection.outcomes,
            )
        } else {
            (None, vec![], vec![], vec![])
        };
    let provider_availability =
        provider
            .as_ref()
            .and_then(ProviderDecision::provider)
            .map(|name| {
                let availability = providers
                    .iter()
                    .find(|p| p.name == name)
                    .map(|p| p.availability.clone());
                (name.to_string(), availability)
            });
    CoreDecision {
        validation_errors,
        failure,
        engine,
        provider,
        provider_availability,
        rule_errors,
        rules_evaluated,
        provider_outcomes,
    }
}

/// A named provider's capability check at reconcile (the Go AI Runway's `validateSpec`, with
/// its texts): when `spec.provider.name` names a registered provider, ready or not, that lists
/// capabilities, the resolved engine must be among them with the serving mode and, without
/// GPUs, CPU support. The same check as at admission, for deployments the webhook never saw.
fn named_provider_mismatch(
    md: &ModelDeployment,
    engine: &EngineDecision,
    providers: &[ProviderView],
) -> Option<FieldError> {
    let provider = md.spec.explicit_provider()?;
    let engine = engine.engine()?;
    let view = providers.iter().find(|p| p.name == provider)?;
    if view.engines.is_empty() {
        return None;
    }
    validation::pinned_provider_mismatch(&md.spec, provider, engine, &view.engines)
}

fn recorded_engine(md: &ModelDeployment) -> Option<EngineType> {
    md.status
        .as_ref()
        .and_then(|s| s.engine.as_ref())
        .and_then(|e| e.engine_type)
}

/// The status the core wants, limited to the fields it owns.
#[derive(Clone, Debug, PartialEq)]
pub struct DesiredCoreStatus {
    /// `status.engine` (type, selectedReason).
    pub engine: Option<(EngineType, String)>,
    /// `status.provider` (name, selectedReason), when the core owns them.
    pub provider: Option<(String, String)>,
    /// `status.phase` and `status.message`, while no provider has taken them.
    pub phase: Option<(Phase, String)>,
    /// The core's conditions (with `Reconciling` and `Stalled` while it holds the phase).
    pub conditions: Vec<DesiredCondition>,
    /// The generation the conditions describe (`metadata.generation`).
    pub generation: Option<i64>,
    /// `status.observedGeneration`, while the core holds the phase (`None`: the provider's).
    pub observed_generation: Option<i64>,
    /// `status.effectiveRuntimeConfig` (`None`: no config applies; removed if the core wrote one).
    pub runtime_config: Option<EffectiveRuntimeConfig>,
}

/// The message of `ProviderHealthy=False`, or `None` when the provider is available: what is
/// wrong, what to do or look at, and that the deployment goes on by itself once it is fixed.
pub fn unhealthy_message(
    provider: &str,
    availability: Option<&Availability>,
) -> Option<(&'static str, String)> {
    match availability {
        None => Some((
            reasons::PROVIDER_NOT_REGISTERED,
            format!(
                "Provider '{provider}' is not registered: no InferenceProviderConfig named \
                 {provider}; install that provider or set spec.provider.name to a registered one \
                 (kubectl get inferenceproviderconfigs); the deployment goes on by itself once \
                 {provider} registers"
            ),
        )),
        Some(Availability::Available) => None,
        Some(Availability::NotReady { detail }) => Some((
            reasons::PROVIDER_NOT_READY,
            format!(
                "Provider {provider} is not ready: {detail}; kubectl get \
                 inferenceproviderconfig {provider} -o yaml shows its conditions; the deployment \
                 goes on by itself once the provider is ready"
            ),
        )),
        Some(Availability::Stale { since, detail }) => Some((
            reasons::PROVIDER_STALE,
            format!(
                "Provider {provider} is stale since {since}: {detail}; check that the provider's \
                 pods run and reach the API server (kubectl get inferenceproviderconfig \
                 {provider} -o yaml shows its Available condition); the deployment goes on by \
                 itself once the provider heartbeats again"
            ),
        )),
    }
}

/// A condition the core writes and, when it holds the deployment back, why (the first
/// condition that holds it back gives the phase's message and `Reconciling`/`Stalled`).
struct Verdict {
    condition: DesiredCondition,
    holds: Option<Progress>,
    /// Put before the message in `status.message` when this verdict gives the phase (the Go
    /// AI Runway's `Validation failed: `, `Engine selection failed: `, ...).
    phase_prefix: &'static str,
}

impl Verdict {
    fn passes(type_: &str, reason: &str, message: impl Into<String>) -> Verdict {
        Verdict {
            condition: DesiredCondition::new(type_, true, reason, message),
            holds: None,
            phase_prefix: "",
        }
    }

    /// False, holding nothing back by itself (it waits for another condition).
    fn waits(type_: &str, reason: &str, message: impl Into<String>) -> Verdict {
        Verdict {
            condition: DesiredCondition::new(type_, false, reason, message),
            holds: None,
            phase_prefix: "",
        }
    }

    /// False, and the deployment cannot go on without a change.
    fn stalls(type_: &str, reason: &str, message: String) -> Verdict {
        Verdict {
            holds: Some(stalled(reason, &message)),
            condition: DesiredCondition::new(type_, false, reason, message),
            phase_prefix: "",
        }
    }

    /// False, and the deployment goes on by itself once that changes.
    fn in_progress(type_: &str, reason: &str, message: String) -> Verdict {
        Verdict {
            holds: Some(in_progress(reason, &message)),
            condition: DesiredCondition::new(type_, false, reason, message),
            phase_prefix: "",
        }
    }

    /// The same verdict, with `prefix` before its message in `status.message`.
    fn phase_prefixed(self, prefix: &'static str) -> Verdict {
        Verdict {
            phase_prefix: prefix,
            ..self
        }
    }
}

fn stalled(reason: &str, message: &str) -> Progress {
    Progress::Stalled {
        reason: reason.to_string(),
        message: message.to_string(),
    }
}

fn in_progress(reason: &str, message: &str) -> Progress {
    Progress::InProgress {
        reason: reason.to_string(),
        message: message.to_string(),
    }
}

/// `Validated`.
fn validated(decision: &CoreDecision) -> Verdict {
    let t = condition_types::VALIDATED;
    if decision.validation_errors.is_empty() {
        Verdict::passes(t, reasons::VALIDATION_PASSED, "Schema validation passed")
    } else {
        let message = validation::describe(&decision.validation_errors);
        Verdict::stalls(t, reasons::VALIDATION_FAILED, message)
            .phase_prefixed(messages::VALIDATION_FAILED_PREFIX)
    }
}

/// `EngineSelected` and `status.engine` (type, selectedReason).
fn engine_selected(decision: &CoreDecision) -> (Verdict, Option<(EngineType, String)>) {
    let t = condition_types::ENGINE_SELECTED;
    match &decision.engine {
        Some(EngineDecision::Explicit(e)) => (
            Verdict::passes(
                t,
                reasons::EXPLICIT_SELECTION,
                "Engine explicitly specified in spec",
            ),
            Some((*e, EXPLICIT_ENGINE_REASON.to_string())),
        ),
        Some(EngineDecision::Auto { engine, reason }) => (
            Verdict::passes(
                t,
                reasons::AUTO_SELECTED,
                format!("Engine {engine} auto-selected from provider capabilities"),
            ),
            Some((*engine, reason.clone())),
        ),
        Some(EngineDecision::Unavailable { message }) => (
            Verdict::stalls(t, reasons::SELECTION_FAILED, message.clone())
                .phase_prefixed(messages::ENGINE_SELECTION_FAILED_PREFIX),
            None,
        ),
        None => (
            Verdict::waits(
                t,
                reasons::WAITING_FOR_VALIDATION,
                "Waiting for the spec to pass validation",
            ),
            None,
        ),
    }
}

/// `ProviderSelected` and `status.provider` (name, selectedReason); neither when another
/// selector set the provider.
fn provider_selected(
    md: &ModelDeployment,
    decision: &CoreDecision,
) -> (Option<Verdict>, Option<(String, String)>) {
    let t = condition_types::PROVIDER_SELECTED;
    let auto_selected = |provider: &str| {
        Verdict::passes(
            t,
            reasons::AUTO_SELECTED,
            format!("Provider {provider} auto-selected"),
        )
    };
    match &decision.provider {
        Some(ProviderDecision::Explicit { provider }) => (
            Some(Verdict::passes(
                t,
                reasons::EXPLICIT_SELECTION,
                "Provider explicitly specified in spec",
            )),
            Some((provider.clone(), EXPLICIT_PROVIDER_REASON.to_string())),
        ),
        Some(ProviderDecision::Selected {
            provider, reason, ..
        }) => (
            Some(auto_selected(provider)),
            Some((provider.clone(), reason.clone())),
        ),
        Some(ProviderDecision::Kept { provider })
            if OwnedFields::of(&md.metadata, field_managers::CORE)
                .owns(&["status", "provider", "name"]) =>
        {
            // The core's own earlier choice: kept with its reason and condition.
            let reason = md
                .status
                .as_ref()
                .and_then(|s| s.provider.as_ref())
                .and_then(|p| p.selected_reason.clone())
                .unwrap_or_default();
            let verdict = match md.condition(t).filter(|c| c.is_true()) {
                Some(c) => Verdict::passes(
                    t,
                    c.reason.as_deref().unwrap_or(reasons::AUTO_SELECTED),
                    c.message.clone().unwrap_or_default(),
                ),
                None => auto_selected(provider),
            };
            (Some(verdict), Some((provider.clone(), reason)))
        }
        // Set by a custom selector: not ours to write.
        Some(ProviderDecision::Kept { .. }) => (None, None),
        Some(failed) => {
            let reason = match failed {
                ProviderDecision::SelectorDisabled => reasons::NO_PROVIDER,
                ProviderDecision::WaitingForEngine => reasons::WAITING_FOR_ENGINE,
                ProviderDecision::AccessDenied { reason, .. } => *reason,
                _ => reasons::SELECTION_FAILED,
            };
            let message = failed.failure_message().unwrap_or_default();
            // No provider is ready yet: that changes by itself (a provider registers or
            // recovers and selection runs again). Anything else needs a change.
            // `status.message` carries the Go AI Runway's prefix when no provider fits; the
            // spec gives the bare texts for no ready provider and the disabled selector.
            let verdict = match failed {
                ProviderDecision::NoHealthyProviders => Verdict::in_progress(t, reason, message),
                ProviderDecision::NoCompatibleProvider { .. } => {
                    Verdict::stalls(t, reason, message)
                        .phase_prefixed(messages::PROVIDER_SELECTION_FAILED_PREFIX)
                }
                _ => Verdict::stalls(t, reason, message),
            };
            (Some(verdict), None)
        }
        None => (
            Some(Verdict::waits(
                t,
                reasons::WAITING_FOR_VALIDATION,
                "Waiting for the spec to pass validation",
            )),
            None,
        ),
    }
}

/// `ProviderHealthy`, once a provider is decided. It always holds the deployment back: the
/// provider is unhealthy (it goes on once the provider registers or recovers), or the
/// provider has yet to take it over.
fn provider_healthy(decision: &CoreDecision) -> Option<Verdict> {
    let t = condition_types::PROVIDER_HEALTHY;
    let (name, availability) = decision.provider_availability.as_ref()?;
    Some(match unhealthy_message(name, availability.as_ref()) {
        None => Verdict {
            holds: Some(in_progress(
                reasons::WAITING_FOR_PROVIDER,
                &format!("Waiting for provider {name} to reconcile"),
            )),
            phase_prefix: "",
            ..Verdict::passes(
                t,
                reasons::PROVIDER_AVAILABLE,
                format!("Provider {name} is available"),
            )
        },
        Some((reason, message)) => Verdict::in_progress(t, reason, message),
    })
}

/// The phase the core holds the deployment in, its message, and why, while no provider took the
/// phase: `Failed` for a spec that fails validation (as in the Go AI Runway: it cannot run
/// without a change), else `Pending` for the first condition that holds it back. The message is
/// the holding condition's, after the Go AI Runway's prefix (`Validation failed: `, ...).
fn held(
    md: &ModelDeployment,
    decision: &CoreDecision,
    holds: Option<(Progress, &'static str)>,
) -> Option<(Phase, String, Progress)> {
    let others = OwnedFields::of_others(&md.metadata, field_managers::CORE);
    if others.owns(&["status", "phase"]) {
        return None;
    }
    let (progress, prefix) = holds?;
    let cause = progress.cause().map(|(_, m)| m).unwrap_or_default();
    if let Some(failure) = &decision.failure {
        let message = format!("{}{failure}", messages::VALIDATION_FAILED_PREFIX);
        return Some((Phase::Failed, message, progress));
    }
    let message = format!("{prefix}{cause}");
    if decision.validation_errors.is_empty() {
        Some((Phase::Pending, message, progress))
    } else {
        Some((Phase::Failed, message, progress))
    }
}

/// Computes the core's desired status for `md` from `decision`: its conditions in order
/// (`Validated`, `EngineSelected`, `ProviderSelected`, `ProviderHealthy`), the fields they
/// come with, and the phase while the core holds it.
pub fn desired_status(md: &ModelDeployment, decision: &CoreDecision) -> DesiredCoreStatus {
    let generation = md.metadata.generation;
    let (engine_verdict, engine) = engine_selected(decision);
    let (provider_verdict, provider) = provider_selected(md, decision);
    let verdicts: Vec<Verdict> = [
        Some(validated(decision)),
        Some(engine_verdict),
        provider_verdict,
        provider_healthy(decision),
    ]
    .into_iter()
    .flatten()
    .collect();
    let holds = verdicts
        .iter()
        .find_map(|v| v.holds.clone().map(|p| (p, v.phase_prefix)));
    let mut conditions: Vec<DesiredCondition> = verdicts.into_iter().map(|v| v.condition).collect();
    let held = held(md, decision, holds);
    let phase = held
        .as_ref()
        .map(|(phase, message, _)| (*phase, message.clone()));
    if let Some((_, _, progress)) = &held {
        conditions.extend(progress.conditions());
    }
    DesiredCoreStatus {
        engine,
        provider,
        conditions,
        generation,
        // The phase and observedGeneration go together: the core has acted on this generation
        // and `Reconciling`/`Stalled` say what is left.
        observed_generation: phase.as_ref().and(generation),
        phase,
        runtime_config: None,
    }
}

/// The core's desired status with the runtime configuration ([`crate::runtime_config::plan`]):
/// - [`Plan::Proceed`]: [`desired_status`] of `decision` (made on the effective deployment),
///   with `RuntimeConfigResolved` first and `status.effectiveRuntimeConfig`;
/// - [`Plan::Wait`]: `RuntimeConfigResolved=False` and, while the core holds the phase,
///   `Pending` with its message and `Reconciling=True` (it goes on once the config appears);
///   no engine, no provider;
/// - [`Plan::Keep`] (or `Proceed` without a decision): everything the core owns as it is, with
///   only `RuntimeConfigResolved` changed.
pub fn desired_with_runtime_config(
    md: &ModelDeployment,
    plan: &Plan,
    decision: Option<&CoreDecision>,
) -> DesiredCoreStatus {
    match (plan, decision) {
        (
            Plan::Proceed {
                reference,
                condition,
                ..
            },
            Some(decision),
        ) => {
            let mut desired = desired_status(md, decision);
            desired.conditions.insert(0, condition.clone());
            desired.runtime_config.clone_from(reference);
            desired
        }
        (Plan::Wait { condition }, _) => waiting(md, condition),
        (Plan::Keep { condition } | Plan::Proceed { condition, .. }, _) => kept(md, condition),
    }
}

/// `Pending` for a named runtime configuration that does not exist.
fn waiting(md: &ModelDeployment, condition: &DesiredCondition) -> DesiredCoreStatus {
    let generation = md.metadata.generation;
    let mut conditions = vec![condition.clone()];
    let holds_phase =
        !OwnedFields::of_others(&md.metadata, field_managers::CORE).owns(&["status", "phase"]);
    let phase = holds_phase.then(|| {
        conditions.extend(in_progress(&condition.reason, &condition.message).conditions());
        (Phase::Pending, condition.message.clone())
    });
    DesiredCoreStatus {
        engine: None,
        provider: None,
        conditions,
        generation,
        observed_generation: phase.as_ref().and(generation),
        phase,
        runtime_config: None,
    }
}

/// Everything the core owns on `md` as it is, `condition` replacing `RuntimeConfigResolved`.
fn kept(md: &ModelDeployment, condition: &DesiredCondition) -> DesiredCoreStatus {
    let status = md.status.clone().unwrap_or_default();
    let own = OwnedFields::of(&md.metadata, field_managers::CORE);
    let others = OwnedFields::of_others(&md.metadata, field_managers::CORE);
    let engine = status
        .engine
        .as_ref()
        .filter(|_| own.owns(&["status", "engine"]))
        .and_then(|e| {
            Some((
                e.engine_type?,
                e.selected_reason.clone().unwrap_or_default(),
            ))
        });
    let provider = status
        .provider
        .as_ref()
        .filter(|_| own.owns(&["status", "provider", "name"]))
        .and_then(|p| {
            Some((
                p.name.clone()?,
                p.selected_reason.clone().unwrap_or_default(),
            ))
        });
    let phase = status
        .phase
        .filter(|_| own.owns(&["status", "phase"]) && !others.owns(&["status", "phase"]))
        .map(|phase| (phase, status.message.clone().unwrap_or_default()));
    let owned = own.condition_types();
    let mut conditions = vec![condition.clone()];
    conditions.extend(
        status
            .conditions
            .iter()
            .flatten()
            .filter(|c| c.type_ != condition.type_ && owned.contains(&c.type_))
            .map(|c| {
                DesiredCondition::new(
                    c.type_.clone(),
                    c.is_true(),
                    c.reason.clone().unwrap_or_default(),
                    c.message.clone().unwrap_or_default(),
                )
            }),
    );
    let observed_path = ["status", "observedGeneration"];
    DesiredCoreStatus {
        engine,
        provider,
        observed_generation: status
            .observed_generation
            .filter(|_| own.owns(&observed_path) && !others.owns(&observed_path)),
        phase,
        conditions,
        generation: md.metadata.generation,
        runtime_config: status
            .effective_runtime_config
            .map(|r| *r)
            .filter(|_| own.owns(&["status", "effectiveRuntimeConfig"])),
    }
}

/// Whether `md` already carries `desired` and the core owns nothing beyond it (no write needed).
pub fn is_current(md: &ModelDeployment, desired: &DesiredCoreStatus) -> bool {
    let status = md.status.clone().unwrap_or_default();
    let own = OwnedFields::of(&md.metadata, field_managers::CORE);
    // What goes with the phase and the provider also owns since it took it (both wrote the same
    // value): shared, not the core's alone; the core's next write for another reason drops it.
    let others = OwnedFields::of_others(&md.metadata, field_managers::CORE);
    let shared_with_phase = |type_: &str| {
        desired.phase.is_none()
            && condition_types::WITH_PHASE.contains(&type_)
            && others.condition_types().contains(type_)
    };
    let engine_ok = match &desired.engine {
        Some((e, r)) => status
            .engine
            .as_ref()
            .is_some_and(|s| s.engine_type == Some(*e) && s.selected_reason.as_deref() == Some(r)),
        None => !own.owns(&["status", "engine"]),
    };
    let provider_ok = match &desired.provider {
        Some((p, r)) => status.provider.as_ref().is_some_and(|s| {
            s.name.as_deref() == Some(p) && s.selected_reason.as_deref() == Some(r)
        }),
        None => {
            !own.owns(&["status", "provider", "name"])
                && !own.owns(&["status", "provider", "selectedReason"])
        }
    };
    let phase_ok = match &desired.phase {
        Some((phase, message)) => {
            status.phase == Some(*phase) && status.message.as_deref() == Some(message)
        }
        None => !own.owns(&["status", "phase"]) && !own.owns(&["status", "message"]),
    };
    let desired_types: Vec<&str> = desired
        .conditions
        .iter()
        .map(|c| c.type_.as_str())
        .collect();
    let conditions_ok = conditions::all_current(
        status.conditions.as_deref(),
        &desired.conditions,
        desired.generation,
    ) && own
        .condition_types()
        .iter()
        .all(|t| desired_types.contains(&t.as_str()) || shared_with_phase(t));
    let observed_path = ["status", "observedGeneration"];
    let observed_ok = match desired.observed_generation {
        Some(generation) => status.observed_generation == Some(generation),
        None => !own.owns(&observed_path) || others.owns(&observed_path),
    };
    let runtime_config_ok = match &desired.runtime_config {
        Some(reference) => status.effective_runtime_config.as_deref() == Some(reference),
        None => !own.owns(&["status", "effectiveRuntimeConfig"]),
    };
    engine_ok && provider_ok && phase_ok && conditions_ok && observed_ok && runtime_config_ok
}

/// The server-side apply body for the core's status (only the fields the core owns).
pub fn status_patch(md: &ModelDeployment, desired: &DesiredCoreStatus, now: Timestamp) -> Value {
    let existing = md.status.as_ref().and_then(|s| s.conditions.as_deref());
    let conditions = conditions::materialize(
        existing,
        &desired.conditions,
        desired.generation,
        &airunway_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now),
    );
    let mut status = json!({ "conditions": conditions });
    if let Some(generation) = desired.observed_generation {
        status["observedGeneration"] = json!(generation);
    }
    if let Some((engine, reason)) = &desired.engine {
        status["engine"] = json!({"type": engine.as_str(), "selectedReason": reason});
    }
    if let Some((provider, reason)) = &desired.provider {
        status["provider"] = json!({"name": provider, "selectedReason": reason});
    }
    if let Some((phase, message)) = &desired.phase {
        status["phase"] = json!(phase.as_str());
        status["message"] = json!(message);
    }
    if let Some(reference) = &desired.runtime_config {
        status["effectiveRuntimeConfig"] = json!(reference);
    }
    json!({
        "apiVersion": airunway_api::constants::API_VERSION,
        "kind": "ModelDeployment",
        "metadata": {"name": md.metadata.name, "namespace": md.metadata.namespace},
        "status": status,
    })
}
