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

/// The outcome of provider selection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderSelection {
    /// The decision.
    pub decision: ProviderDecision,
    /// Rules that failed to evaluate (they counted as false).
    pub rule_errors: Vec<RuleError>,
    /// Providers whose rules were evaluated.
    pub evaluated: Vec<String>,
}

impl ProviderSelection {
    fn only(decision: ProviderDecision) -> Self {
        ProviderSelection {
            decision,
            rule_errors: vec![],
            evaluated: vec![],
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
        let Some(capability) = provider.engines.iter().find(|c| c.name == engine) else {
            rejections.push((
                provider.name.clone(),
                format!("does not offer engine {engine}"),
            ));
            continue;
        };
        if gpu && !capability.gpu_support {
            rejections.push((
                provider.name.clone(),
                format!("engine {engine} does not support GPU workers"),
            ));
            continue;
        }
        if !gpu && !capability.cpu_support {
            rejections.push((
                provider.name.clone(),
                format!("engine {engine} does not support CPU-only deployments"),
            ));
            continue;
        }
        if !capability.serving_modes.contains(&mode) {
            rejections.push((
                provider.name.clone(),
                format!("engine {engine} does not support {mode} mode"),
            ));
            continue;
        }
        if has_volumes && provider.model_storage == Some(false) {
            rejections.push((
                provider.name.clone(),
                format!("{} does not mount model.storage volumes", provider.name),
            ));
            continue;
        }
        if has_adapters && !capability.lora_support {
            rejections.push((
                provider.name.clone(),
                format!("engine {engine} does not serve LoRA adapters (spec.adapters)"),
            ));
            continue;
        }
        if wants_parsers && !capability.tool_calling_support {
            rejections.push((
                provider.name.clone(),
                format!(
                    "engine {engine} does not render tool calling or reasoning parsers (spec.engine.toolCalling, toolCallParser, reasoningParser)"
                ),
            ));
            continue;
        }
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
                "no selection rule matched (it is only used when named in spec.provider.name)"
                    .to_string(),
            )),
        }
    }
    // Highest priority first, then the alphabetically first name.
    candidates.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
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
    }
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
}
