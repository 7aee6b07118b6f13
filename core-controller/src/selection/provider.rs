//! Provider selection (design doc §3.5.2, §4.4): capability filter (engine, GPU/CPU, serving
//! mode, `modelStorage` for a deployment with `model.storage` volumes, `loraSupport` for one
//! with adapters, `toolCallingSupport` for one asking for parsers), CEL rules, highest
//! priority wins, ties go to the alphabetically first name; a provider with no matching rule is
//! only used when named. One-time: once `status.provider.name` is set it is kept, unless
//! `spec.provider.name` names another provider.

use airunway_api::constants::messages;
use airunway_api::v1alpha1::{EngineType, ModelDeployment};

use super::ProviderView;
use super::rules::{RuleError, RuleInput, RuleSet, Spent};

/// `status.provider.selectedReason` for a named provider.
pub const EXPLICIT_PROVIDER_REASON: &str = "explicit provider selection";

/// The provider decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProviderDecision {
    /// `spec.provider.name`.
    Explicit {
        /// The provider.
        provider: String,
    },
    /// `status.provider.name` was set before (by the core or a custom selector) and is kept.
    Kept {
        /// The provider.
        provider: String,
    },
    /// Selected now by the rules.
    Selected {
        /// The provider.
        provider: String,
        /// `matched capabilities: engine=<e>, gpu=<g>, mode=<m>`.
        reason: String,
        /// The winning priority.
        priority: i32,
    },
    /// Selector disabled and nothing named.
    SelectorDisabled,
    /// No engine yet, so nothing to match.
    WaitingForEngine,
    /// No provider is ready.
    NoHealthyProviders,
    /// Providers are ready but none fits; why each was rejected, by name.
    NoCompatibleProvider {
        /// `(provider, reason)`.
        rejections: Vec<(String, String)>,
    },
    /// Decided, but the spec author may not create its upstream resources
    /// (`--check-upstream-access`, [`crate::access`]).
    AccessDenied {
        /// The provider that was decided.
        provider: String,
        /// The reason of `ProviderSelected=False`.
        reason: &'static str,
        /// What is missing and how to fix it.
        message: String,
    },
}

impl ProviderDecision {
    /// The provider that serves the deployment, if decided.
    pub fn provider(&self) -> Option<&str> {
        match self {
            ProviderDecision::Explicit { provider }
            | ProviderDecision::Kept { provider }
            | ProviderDecision::Selected { provider, .. } => Some(provider),
            _ => None,
        }
    }

    /// The message for `ProviderSelected=False` and the `Pending` phase.
    pub fn failure_message(&self) -> Option<String> {
        match self {
            ProviderDecision::SelectorDisabled => Some(messages::SELECTOR_DISABLED.to_string()),
            ProviderDecision::WaitingForEngine => {
                Some("Waiting for an engine to be selected".to_string())
            }
            ProviderDecision::NoHealthyProviders => {
                Some(messages::NO_HEALTHY_PROVIDERS.to_string())
            }
            ProviderDecision::NoCompatibleProvider { rejections } => Some(format!(
                "{}: {}",
                messages::NO_COMPATIBLE_PROVIDER,
                rejections
                    .iter()
                    .map(|(p, why)| format!("{p}: {why}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
            ProviderDecision::AccessDenied { message, .. } => Some(message.clone()),
            _ => None,
        }
    }
}

/// What selection made of one provider (the offline `explain` prints these).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProviderOutcome {
    /// Chosen, with the priority of its best matching rule.
    Chosen {
        /// The winning priority.
        priority: i32,
    },
    /// Not ready or stale ([`super::Availability::describe`]).
    NotAvailable(String),
    /// Its capabilities do not fit the deployment (engine, GPU/CPU, serving mode, storage,
    /// adapters, parsers).
    Incapable(String),
    /// None of its rules matched (a rule that failed to evaluate counts as not matching: see
    /// [`ProviderSelection::rule_errors`]); such a provider is only used when named.
    NoRuleMatched,
    /// A rule matched, at a priority below the winner's.
    LowerPriority {
        /// Its best matching priority.
        priority: i32,
        /// The winner's.
        winner_priority: i32,
    },
    /// A rule matched at the winner's priority; the alphabetically first name won.
    TieLost {
        /// The shared priority.
        priority: i32,
        /// The provider that won the tie.
        winner: String,
    },
}

impl ProviderOutcome {
    /// A short, static label (`chosen`, `not_available`, `incapable`, `no_rule_matched`,
    /// `lower_priority`, `tie_lost`).
    pub fn category(&self) -> &'static str {
        match self {
            ProviderOutcome::Chosen { .. } => "chosen",
            ProviderOutcome::NotAvailable(_) => "not_available",
            ProviderOutcome::Incapable(_) => "incapable",
            ProviderOutcome::NoRuleMatched => "no_rule_matched",
            ProviderOutcome::LowerPriority { .. } => "lower_priority",
            ProviderOutcome::TieLost { .. } => "tie_lost",
        }
    }

    /// A sentence for people.
    pub fn describe(&self) -> String {
        match self {
            ProviderOutcome::Chosen { priority } => {
                format!("chosen: its best matching rule has priority {priority}")
            }
            ProviderOutcome::NotAvailable(why) | ProviderOutcome::Incapable(why) => why.clone(),
            ProviderOutcome::NoRuleMatched => {
                "no selection rule matched (it is only used when named in spec.provider.name)"
                    .to_string()
            }
            ProviderOutcome::LowerPriority {
                priority,
                winner_priority,
            } => format!(
                "lower priority: its best matching rule has priority {priority}, the chosen provider's {winner_priority}"
            ),
            ProviderOutcome::TieLost { priority, winner } => format!(
                "tie lost: {winner} matched at the same priority ({priority}) and comes first by name"
            ),
        }
    }
}

/// The outcome of provider selection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderSelection {
    /// The decision.
    pub decision: ProviderDecision,
    /// Rules that failed to evaluate (they counted as false).
    pub rule_errors: Vec<RuleError>,
    /// Providers whose rules were evaluated.
    pub evaluated: Vec<String>,
    /// What became of each provider, in the order given (empty when no rule was evaluated: a
    /// named or kept provider, the selector off, no engine, no provider ready).
    pub outcomes: Vec<(String, ProviderOutcome)>,
}

impl ProviderSelection {
    fn only(decision: ProviderDecision) -> Self {
        ProviderSelection {
            decision,
            rule_errors: vec![],
            evaluated: vec![],
            outcomes: vec![],
        }
    }
}

/// Decides the provider of `md` given its resolved `engine`.
pub fn select_provider(
    md: &ModelDeployment,
    engine: Option<EngineType>,
    providers: &[ProviderView],
    selector_enabled: bool,
    rules: &RuleSet,
) -> ProviderSelection {
    if let Some(provider) = md.spec.explicit_provider() {
        return ProviderSelection::only(ProviderDecision::Explicit {
            provider: provider.to_string(),
        });
    }
    if let Some(provider) = md.selected_provider() {
        return ProviderSelection::only(ProviderDecision::Kept {
            provider: provider.to_string(),
        });
    }
    if !selector_enabled {
        return ProviderSelection::only(ProviderDecision::SelectorDisabled);
    }
    let Some(engine) = engine else {
        return ProviderSelection::only(ProviderDecision::WaitingForEngine);
    };
    if !providers.iter().any(|p| p.availability.is_available()) {
        return ProviderSelection::only(ProviderDecision::NoHealthyProviders);
    }
    let gpu = md.spec.gpu_requested();
    let mode = md.spec.serving_mode();
    let has_volumes = !airunway_api::storage::resolved_volumes(md).is_empty();
    let has_adapters = !md.spec.lora_adapters().is_empty();
    let wants_parsers = md.spec.wants_engine_parsers();
    let need = Need {
        gpu,
        mode,
        has_volumes,
        has_adapters,
        wants_parsers,
    };
    let input = match RuleInput::new(md, Some(engine)) {
        Ok(input) => input,
        Err(e) => {
            return ProviderSelection::only(ProviderDecision::NoCompatibleProvider {
                rejections: vec![("*".into(), format!("rule input: {e}"))],
            });
        }
    };
    let mut spent = Spent::default();
    let mut errors = Vec::new();
    let mut rejections = Vec::new();
    let mut candidates: Vec<(i32, &str)> = Vec::new();
    let mut evaluated = Vec::new();
    for provider in providers {
        if !provider.availability.is_available() {
            rejections.push((provider.name.clone(), provider.availability.describe()));
            continue;
        }
        let Some(why) = capability_mismatch(provider, engine, &need) else {
            evaluated.push(provider.name.clone());
            let mut best: Option<i32> = None;
            for (index, rule) in provider.rules.iter().enumerate() {
                let outcome = match rules.compile(&rule.condition).as_ref() {
                    Ok(program) => input.evaluate_within_budget(program, &mut spent),
                    Err(e) => Err(format!("does not compile: {e}")),
                };
                match outcome {
                    Ok(true) => best = best.max(Some(rule.priority)),
                    Ok(false) => {}
                    Err(message) => errors.push(RuleError {
                        provider: provider.name.clone(),
                        index,
                        condition: rule.condition.clone(),
                        message,
                    }),
                }
            }
            match best {
                Some(priority) => candidates.push((priority, provider.name.as_str())),
                None => rejections.push((
                    provider.name.clone(),
                    ProviderOutcome::NoRuleMatched.describe(),
                )),
            }
            continue;
        };
        rejections.push((provider.name.clone(), why));
    }
    // Highest priority first, then the alphabetically first name.
    candidates.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    let outcomes = providers
        .iter()
        .map(|provider| {
            let name = provider.name.as_str();
            let outcome = match (candidates.first(), candidates.iter().find(|c| c.1 == name)) {
                (Some(winner), Some(_)) if winner.1 == name => {
                    ProviderOutcome::Chosen { priority: winner.0 }
                }
                (Some(winner), Some(own)) if own.0 == winner.0 => ProviderOutcome::TieLost {
                    priority: own.0,
                    winner: winner.1.to_string(),
                },
                (Some(winner), Some(own)) => ProviderOutcome::LowerPriority {
                    priority: own.0,
                    winner_priority: winner.0,
                },
                _ if !provider.availability.is_available() => {
                    ProviderOutcome::NotAvailable(provider.availability.describe())
                }
                _ => match capability_mismatch(provider, engine, &need) {
                    Some(why) => ProviderOutcome::Incapable(why),
                    None => ProviderOutcome::NoRuleMatched,
                },
            };
            (provider.name.clone(), outcome)
        })
        .collect();
    let decision = match candidates.first() {
        Some((priority, provider)) => ProviderDecision::Selected {
            provider: provider.to_string(),
            reason: format!("matched capabilities: engine={engine}, gpu={gpu}, mode={mode}"),
            priority: *priority,
        },
        None => ProviderDecision::NoCompatibleProvider { rejections },
    };
    ProviderSelection {
        decision,
        rule_errors: errors,
        evaluated,
        outcomes,
    }
}

/// What the deployment needs of a provider's capabilities.
struct Need {
    gpu: bool,
    mode: airunway_api::v1alpha1::ServingMode,
    has_volumes: bool,
    has_adapters: bool,
    wants_parsers: bool,
}

/// Why `provider` cannot serve a deployment with `need` on `engine` (`None`: it can).
fn capability_mismatch(provider: &ProviderView, engine: EngineType, need: &Need) -> Option<String> {
    let Need {
        gpu,
        mode,
        has_volumes,
        has_adapters,
        wants_parsers,
    } = *need;
    let Some(capability) = provider.engines.iter().find(|c| c.name == engine) else {
        return Some(format!("does not offer engine {engine}"));
    };
    if gpu && !capability.gpu_support {
        return Some(format!("engine {engine} does not support GPU workers"));
    }
    if !gpu && !capability.cpu_support {
        return Some(format!(
            "engine {engine} does not support CPU-only deployments"
        ));
    }
    if !capability.serving_modes.contains(&mode) {
        return Some(format!("engine {engine} does not support {mode} mode"));
    }
    if has_volumes && provider.model_storage == Some(false) {
        return Some(format!(
            "{} does not mount model.storage volumes",
            provider.name
        ));
    }
    if has_adapters && !capability.lora_support {
        return Some(format!(
            "engine {engine} does not serve LoRA adapters (spec.adapters)"
        ));
    }
    if wants_parsers && !capability.tool_calling_support {
        return Some(format!(
            "engine {engine} does not render tool calling or reasoning parsers (spec.engine.toolCalling, toolCallParser, reasoningParser)"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::Availability;
    use airunway_api::v1alpha1::{EngineCapability, SelectionRule, ServingMode};
    use serde_json::json;

    fn provider(name: &str, model_storage: Option<bool>) -> ProviderView {
        ProviderView {
            name: name.into(),
            engines: vec![EngineCapability::new(
                EngineType::Vllm,
                vec![ServingMode::Aggregated],
                true,
                false,
            )],
            rules: vec![SelectionRule {
                condition: "true".into(),
                priority: 100,
            }],
            availability: Availability::Available,
            model_storage,
            generation: Some(1),
        }
    }

    fn md(storage: serde_json::Value) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns"},
            "spec": {"model": {"id": "a/b", "storage": storage}, "engine": {"type": "vllm"},
                     "resources": {"gpu": {"count": 1}}},
        }))
        .unwrap()
    }

    fn decide(md: &ModelDeployment, providers: &[ProviderView]) -> ProviderDecision {
        select_provider(
            md,
            Some(EngineType::Vllm),
            providers,
            true,
            &RuleSet::default(),
        )
        .decision
    }

    #[test]
    fn a_provider_that_mounts_no_storage_is_passed_over_for_volumes() {
        let volumes = md(json!({"volumes": [{"name": "weights", "purpose": "modelCache"}]}));
        let providers = [provider("a", Some(false)), provider("b", None)];
        // Without volumes the alphabetically first wins; with them, `a` declares it cannot.
        assert_eq!(decide(&md(json!({})), &providers).provider(), Some("a"));
        assert_eq!(decide(&volumes, &providers).provider(), Some("b"));
        assert_eq!(
            decide(
                &volumes,
                &[provider("b", Some(true)), provider("a", Some(false))]
            )
            .provider(),
            Some("b")
        );
        let alone = decide(&volumes, &providers[..1]);
        assert_eq!(
            alone,
            ProviderDecision::NoCompatibleProvider {
                rejections: vec![("a".into(), "a does not mount model.storage volumes".into())]
            }
        );
        assert!(
            alone
                .failure_message()
                .unwrap()
                .ends_with("a: a does not mount model.storage volumes")
        );
    }

    #[test]
    fn every_provider_gets_an_outcome() {
        let mut low = provider("low", None);
        low.rules[0].priority = 10;
        let mut erring = provider("erring", None);
        erring.rules[0].condition = "metadata.labels.team == 'a'".into();
        let mut stale = provider("stale", None);
        stale.availability = Availability::NotReady {
            detail: "CRD missing".into(),
        };
        let mut cpu_only = provider("cpu", None);
        cpu_only.engines[0].gpu_support = false;
        let providers = [
            provider("b", None),
            provider("a", None),
            low,
            erring,
            stale,
            cpu_only,
        ];
        let selection = select_provider(
            &md(json!({})),
            Some(EngineType::Vllm),
            &providers,
            true,
            &RuleSet::default(),
        );
        assert_eq!(selection.decision.provider(), Some("a"));
        let outcomes: Vec<(&str, &str)> = selection
            .outcomes
            .iter()
            .map(|(p, o)| (p.as_str(), o.category()))
            .collect();
        assert_eq!(
            outcomes,
            [
                ("b", "tie_lost"),
                ("a", "chosen"),
                ("low", "lower_priority"),
                ("erring", "no_rule_matched"),
                ("stale", "not_available"),
                ("cpu", "incapable"),
            ]
        );
        assert_eq!(
            selection.outcomes[0].1.describe(),
            "tie lost: a matched at the same priority (100) and comes first by name"
        );
        assert_eq!(selection.rule_errors.len(), 1);
        assert_eq!(selection.rule_errors[0].provider, "erring");
        assert_eq!(
            selection.outcomes[5].1.describe(),
            "engine vllm does not support GPU workers"
        );
    }
}
