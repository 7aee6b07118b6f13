//! Engine selection: the user's engine, else (one time) the first engine in the preference
//! order `vllm, sglang, trtllm, llamacpp` that a ready provider offers for the deployment's
//! GPU/CPU need and serving mode. With a named provider, only its capabilities count.

use airunway_api::conditions;
use airunway_api::constants::{condition_types, messages, reasons};
use airunway_api::v1alpha1::{EngineType, ModelDeployment};

use super::ProviderView;

/// The engine decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineDecision {
    /// `spec.engine.type`.
    Explicit(EngineType),
    /// Chosen by the core, now or earlier (kept: engine selection runs once).
    Auto {
        /// The engine.
        engine: EngineType,
        /// Why (for `status.engine.selectedReason`).
        reason: String,
    },
    /// No engine can be chosen: `engine.type is required: ...` with the selector disabled, else
    /// the Go AI Runway's `no engines available from registered providers (...)`.
    Unavailable {
        /// What to fix.
        message: String,
    },
}

impl EngineDecision {
    /// The resolved engine, if any.
    pub fn engine(&self) -> Option<EngineType> {
        match self {
            EngineDecision::Explicit(e) | EngineDecision::Auto { engine: e, .. } => Some(*e),
            EngineDecision::Unavailable { .. } => None,
        }
    }
}

/// `status.engine.selectedReason` for an explicit engine.
pub const EXPLICIT_ENGINE_REASON: &str = "explicit engine selection";

/// Decides the engine of `md`.
pub fn select_engine(
    md: &ModelDeployment,
    providers: &[ProviderView],
    selector_enabled: bool,
) -> EngineDecision {
    if let Some(engine) = md.spec.explicit_engine() {
        return EngineDecision::Explicit(engine);
    }
    // One-time: an engine the core auto-selected earlier is kept.
    let status = md.status.as_ref();
    let recorded = status.and_then(|s| s.engine.as_ref());
    let auto_selected_before = conditions::find(
        status.and_then(|s| s.conditions.as_deref()),
        condition_types::ENGINE_SELECTED,
    )
    .is_some_and(|c| c.is_true() && c.reason.as_deref() == Some(reasons::AUTO_SELECTED));
    if auto_selected_before && let Some(engine) = recorded.and_then(|e| e.engine_type) {
        let reason = recorded
            .and_then(|e| e.selected_reason.clone())
            .unwrap_or_default();
        return EngineDecision::Auto { engine, reason };
    }
    let gpu = md.spec.gpu_requested();
    let mode = md.spec.serving_mode();
    let need = format!("gpu={gpu}, mode={mode}");
    let named = md
        .spec
        .explicit_provider()
        .or_else(|| md.selected_provider());
    if !selector_enabled && named.is_none() {
        return EngineDecision::Unavailable {
            message: format!(
                "{}: engine auto-selection is part of the provider selector, which is disabled (--enable-provider-selector=false)",
                messages::ENGINE_TYPE_REQUIRED
            ),
        };
    }
    let candidates: Vec<&ProviderView> = match named {
        Some(name) => providers.iter().filter(|p| p.name == name).collect(),
        None => providers
            .iter()
            .filter(|p| p.availability.is_available())
            .collect(),
    };
    for engine in EngineType::ALL {
        if engine.requires_gpu() && !gpu {
            continue;
        }
        let offered_by: Vec<&str> = candidates
            .iter()
            .filter(|p| {
                p.engines.iter().any(|c| {
                    c.name == engine
                        && c.serving_modes.contains(&mode)
                        && if gpu { c.gpu_support } else { c.cpu_support }
                })
            })
            .map(|p| p.name.as_str())
            .collect();
        if !offered_by.is_empty() {
            return EngineDecision::Auto {
                engine,
                reason: format!(
                    "auto-selected: {engine} is the preferred engine offered for {need} (by {})",
                    offered_by.join(", ")
                ),
            };
        }
    }
    let message = match named {
        Some(name) => format!(
            "{}: provider {name} (spec.provider.name) offers no engine for them; set spec.engine.type or name another provider",
            no_engines_available(gpu, mode, candidates.iter().copied()),
        ),
        None if providers.is_empty() => messages::NO_PROVIDERS_REGISTERED.to_string(),
        None => no_engines_available(gpu, mode, candidates.iter().copied()),
    };
    EngineDecision::Unavailable { message }
}

/// The Go AI Runway's text for no usable engine: `no engines available from registered
/// providers (hasGPU=<g>, servingMode=<m>, advertised=map[<provider>:[<engine> ...] ...])`, the
/// engines each candidate provider advertises, providers by name (as Go prints a map).
fn no_engines_available<'a>(
    gpu: bool,
    mode: airunway_api::v1alpha1::ServingMode,
    providers: impl Iterator<Item = &'a ProviderView>,
) -> String {
    let mut advertised: Vec<(&str, String)> = providers
        .map(|p| {
            let engines: Vec<&str> = p.engines.iter().map(|c| c.name.as_str()).collect();
            (p.name.as_str(), engines.join(" "))
        })
        .collect();
    advertised.sort_unstable();
    let advertised: Vec<String> = advertised
        .into_iter()
        .map(|(p, engines)| format!("{p}:[{engines}]"))
        .collect();
    format!(
        "{} (hasGPU={gpu}, servingMode={mode}, advertised=map[{}])",
        messages::NO_ENGINES_AVAILABLE,
        advertised.join(" ")
    )
}
