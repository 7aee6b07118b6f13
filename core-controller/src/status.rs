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
use airunway_api::constants::{condition_types, field_managers, reasons};
use airunway_api::v1alpha1::{EngineType, ModelDeployment, Phase};
use jiff::Timestamp;
use serde_json::{Value, json};

use crate::selection::engine::EXPLICIT_ENGINE_REASON;
use crate::selection::provider::EXPLICIT_PROVIDER_REASON;
use crate::selection::{
    Availability, EngineDecision, ProviderDecision, ProviderView, RuleError, RuleSet,
    select_engine, select_provider,
};
use crate::validation::{self, FieldError};
use airunway_api::managed_fields::OwnedFields;

/// Everything the core decided for a deployment.
#[derive(Clone, Debug)]
pub struct CoreDecision {
    /// Validation errors (empty when valid).
    pub validation_errors: Vec<FieldError>,
    /// Why the deployment cannot start whatever happens next (conflicting image fields): the
    /// phase is then `Failed`.
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
}

/// Decides validation, engine, provider and provider health for `md`.
pub fn decide(
    md: &ModelDeployment,
    providers: &[ProviderView],
    selector_enabled: bool,
    rules: &RuleSet,
) -> CoreDecision {
    let validation_errors = validation::validate(md);
    // Conflicting image fields cannot be fixed by waiting: `Failed`, as in the Go AI Runway. (A
    // named provider that does not fit is refused at admission with the Go texts; at reconcile
    // time the provider's own compatibility check reports it with the spec's texts.)
    let failure = validation::image_conflict(&md.spec);
    let valid = validation_errors.is_empty();
    let engine_decision = select_engine(md, providers, selector_enabled);
    let engine = match (&engine_decision, valid) {
        (_, true) | (EngineDecision::Explicit(_), false) => Some(engine_decision.clone()),
        // Invalid spec: keep an engine chosen earlier, select nothing new.
        (EngineDecision::Auto { .. }, false) if recorded_engine(md).is_some() => {
            Some(engine_decision.clone())
        }
        _ => None,
    };
    let (provider, rule_errors, rules_evaluated) =
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
            )
        } else {
            (None, vec![], vec![])
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
    }
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
}

/// The message of `ProviderHealthy=False`, or `None` when the provider is available.
pub fn unhealthy_message(
    provider: &str,
    availability: Option<&Availability>,
) -> Option<(&'static str, String)> {
    match availability {
        None => Some((
            reasons::PROVIDER_NOT_REGISTERED,
            format!(
                "Provider '{provider}' is not registered: no InferenceProviderConfig named {provider}"
            ),
        )),
        Some(Availability::Available) => None,
        Some(Availability::NotReady { detail }) => Some((
            reasons::PROVIDER_NOT_READY,
            format!("Provider {provider} is not ready: {detail}"),
        )),
        Some(Availability::Stale { since, detail }) => Some((
            reasons::PROVIDER_STALE,
            format!("Provider {provider} is stale since {since}: {detail}"),
        )),
    }
}

/// Computes the core's desired status for `md` from `decision`.
pub fn desired_status(md: &ModelDeployment, decision: &CoreDecision) -> DesiredCoreStatus {
    let generation = md.metadata.generation;
    let own = OwnedFields::of(&md.metadata, field_managers::CORE);
    let others = OwnedFields::of_others(&md.metadata, field_managers::CORE);
    let provider_took_phase = others.owns(&["status", "phase"]);
    let mut conditions = Vec::new();
    // Why the deployment is not handed over yet: stalled (a change is needed) or in progress.
    let mut pending: Option<Progress> = None;
    let stalled = |reason: &str, message: &str| Progress::Stalled {
        reason: reason.to_string(),
        message: message.to_string(),
    };
    let in_progress = |reason: &str, message: &str| Progress::InProgress {
        reason: reason.to_string(),
        message: message.to_string(),
    };

    // Validated
    if decision.validation_errors.is_empty() {
        conditions.push(DesiredCondition::new(
            condition_types::VALIDATED,
            true,
            reasons::VALIDATION_PASSED,
            "Schema validation passed",
        ));
    } else {
        let message = validation::describe(&decision.validation_errors);
        conditions.push(DesiredCondition::new(
            condition_types::VALIDATED,
            false,
            reasons::VALIDATION_FAILED,
            message.clone(),
        ));
        pending = Some(stalled(reasons::VALIDATION_FAILED, &message));
    }

    // EngineSelected and status.engine
    let engine = match &decision.engine {
        Some(EngineDecision::Explicit(e)) => {
            conditions.push(DesiredCondition::new(
                condition_types::ENGINE_SELECTED,
                true,
                reasons::EXPLICIT_SELECTION,
                "Engine explicitly specified in spec",
            ));
            Some((*e, EXPLICIT_ENGINE_REASON.to_string()))
        }
        Some(EngineDecision::Auto { engine, reason }) => {
            conditions.push(DesiredCondition::new(
                condition_types::ENGINE_SELECTED,
                true,
                reasons::AUTO_SELECTED,
                format!("Engine {engine} auto-selected from provider capabilities"),
            ));
            Some((*engine, reason.clone()))
        }
        Some(EngineDecision::Unavailable { message }) => {
            conditions.push(DesiredCondition::new(
                condition_types::ENGINE_SELECTED,
                false,
                reasons::SELECTION_FAILED,
                message.clone(),
            ));
            pending.get_or_insert_with(|| stalled(reasons::SELECTION_FAILED, message));
            None
        }
        None => {
            conditions.push(DesiredCondition::new(
                condition_types::ENGINE_SELECTED,
                false,
                reasons::WAITING_FOR_VALIDATION,
                "Waiting for the spec to pass validation",
            ));
            None
        }
    };

    // ProviderSelected and status.provider
    let current_provider = md.status.as_ref().and_then(|s| s.provider.as_ref());
    let provider = match &decision.provider {
        Some(ProviderDecision::Explicit { provider }) => {
            conditions.push(DesiredCondition::new(
                condition_types::PROVIDER_SELECTED,
                true,
                reasons::EXPLICIT_SELECTION,
                "Provider explicitly specified in spec",
            ));
            Some((provider.clone(), EXPLICIT_PROVIDER_REASON.to_string()))
        }
        Some(ProviderDecision::Selected {
            provider, reason, ..
        }) => {
            conditions.push(DesiredCondition::new(
                condition_types::PROVIDER_SELECTED,
                true,
                reasons::AUTO_SELECTED,
                format!("Provider {provider} auto-selected"),
            ));
            Some((provider.clone(), reason.clone()))
        }
        Some(ProviderDecision::Kept { provider }) if own.owns(&["status", "provider", "name"]) => {
            let reason = current_provider
                .and_then(|p| p.selected_reason.clone())
                .unwrap_or_default();
            let previous = md
                .condition(condition_types::PROVIDER_SELECTED)
                .filter(|c| c.is_true());
            conditions.push(match previous {
                Some(c) => DesiredCondition::new(
                    condition_types::PROVIDER_SELECTED,
                    true,
                    c.reason
                        .clone()
                        .unwrap_or_else(|| reasons::AUTO_SELECTED.into()),
                    c.message.clone().unwrap_or_default(),
                ),
                None => DesiredCondition::new(
                    condition_types::PROVIDER_SELECTED,
                    true,
                    reasons::AUTO_SELECTED,
                    format!("Provider {provider} auto-selected"),
                ),
            });
            Some((provider.clone(), reason))
        }
        // Set by a custom selector: not ours to write.
        Some(ProviderDecision::Kept { .. }) => None,
        Some(failed) => {
            let reason = match failed {
                ProviderDecision::SelectorDisabled => reasons::NO_PROVIDER,
                ProviderDecision::WaitingForEngine => reasons::WAITING_FOR_ENGINE,
                _ => reasons::SELECTION_FAILED,
            };
            let message = failed.failure_message().unwrap_or_default();
            conditions.push(DesiredCondition::new(
                condition_types::PROVIDER_SELECTED,
                false,
                reason,
                message.clone(),
            ));
            // No provider is ready yet: that changes by itself (a provider registers or
            // recovers and selection runs again). Anything else needs a change.
            let progress = match failed {
                ProviderDecision::NoHealthyProviders => in_progress(reason, &message),
                _ => stalled(reason, &message),
            };
            pending.get_or_insert(progress);
            None
        }
        None => {
            conditions.push(DesiredCondition::new(
                condition_types::PROVIDER_SELECTED,
                false,
                reasons::WAITING_FOR_VALIDATION,
                "Waiting for the spec to pass validation",
            ));
            None
        }
    };

    // ProviderHealthy
    if let Some((name, availability)) = &decision.provider_availability {
        match unhealthy_message(name, availability.as_ref()) {
            None => conditions.push(DesiredCondition::new(
                condition_types::PROVIDER_HEALTHY,
                true,
                reasons::PROVIDER_AVAILABLE,
                format!("Provider {name} is available"),
            )),
            Some((reason, message)) => {
                conditions.push(DesiredCondition::new(
                    condition_types::PROVIDER_HEALTHY,
                    false,
                    reason,
                    message.clone(),
                ));
                // It proceeds by itself once the provider registers or recovers.
                pending.get_or_insert_with(|| in_progress(reason, &message));
            }
        }
        pending.get_or_insert_with(|| {
            in_progress(
                reasons::WAITING_FOR_PROVIDER,
                &format!("Waiting for provider {name} to reconcile"),
            )
        });
    }

    // What waiting cannot fix is `Failed`, as in the Go AI Runway.
    let failed = decision
        .failure
        .as_ref()
        .map(|m| format!("Validation failed: {m}"));
    let held = if provider_took_phase {
        None
    } else if let Some(message) = failed {
        Some((Phase::Failed, stalled(reasons::VALIDATION_FAILED, &message)))
    } else {
        pending.map(|p| (Phase::Pending, p))
    };
    let phase = held.as_ref().map(|(phase, progress)| {
        let message = progress.cause().map(|(_, m)| m).unwrap_or_default();
        (*phase, message.to_string())
    });
    if let Some((_, progress)) = &held {
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
    engine_ok && provider_ok && phase_ok && conditions_ok && observed_ok
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
    json!({
        "apiVersion": airunway_api::constants::API_VERSION,
        "kind": "ModelDeployment",
        "metadata": {"name": md.metadata.name, "namespace": md.metadata.namespace},
        "status": status,
    })
}
