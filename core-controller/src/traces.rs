//! The core's part of a reconcile's trace (docs/observability.md "Traces"): what its decision
//! span records, and the decision's trace context in the status apply the core makes anyway.

use airunway_api::constants::traces;
use airunway_api::runtime::trace_context;
use serde_json::{Value, json};

use crate::status::DesiredCoreStatus;

/// The attributes of the decision span: engine, provider (each with its reason) and the phase,
/// those the decision has.
pub fn decision_attributes(desired: &DesiredCoreStatus) -> Vec<(&'static str, String)> {
    let mut attributes = Vec::new();
    if let Some((engine, reason)) = &desired.engine {
        attributes.push((traces::ENGINE, engine.as_str().to_string()));
        attributes.push((traces::ENGINE_REASON, reason.clone()));
    }
    if let Some((provider, reason)) = &desired.provider {
        attributes.push((traces::PROVIDER, provider.clone()));
        attributes.push((traces::PROVIDER_REASON, reason.clone()));
    }
    if let Some((phase, _)) = &desired.phase {
        attributes.push((traces::PHASE, phase.as_str().to_string()));
    }
    attributes
}

/// Records the decision on its span.
pub fn record_decision(span: &tracing::Span, desired: &DesiredCoreStatus) {
    for (key, value) in decision_attributes(desired) {
        trace_context::record(span, key, value);
    }
}

/// Adds the decision's `traceparent` to a status apply `body` that writes `status.provider`
/// (the core's selection); a body without it, or no `traceparent` (traces not exported), stays
/// as it is.
pub fn carry_traceparent(body: &mut Value, traceparent: Option<&str>) {
    let Some(traceparent) = traceparent else {
        return;
    };
    if let Some(provider) = body
        .get_mut("status")
        .and_then(|s| s.get_mut("provider"))
        .and_then(Value::as_object_mut)
    {
        provider.insert(traces::TRACEPARENT_FIELD.to_string(), json!(traceparent));
    }
}

#[cfg(test)]
mod tests {
    use airunway_api::v1alpha1::{EngineType, Phase};

    use super::*;

    const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn desired() -> DesiredCoreStatus {
        DesiredCoreStatus {
            engine: Some((EngineType::Vllm, "explicit".into())),
            provider: Some(("kaito".into(), "matched rule 0".into())),
            phase: Some((Phase::Pending, "waiting".into())),
            conditions: Vec::new(),
            generation: Some(1),
            observed_generation: Some(1),
            runtime_config: None,
        }
    }

    #[test]
    fn the_decision_span_names_engine_provider_reasons_and_phase() {
        assert_eq!(
            decision_attributes(&desired()),
            vec![
                (traces::ENGINE, "vllm".to_string()),
                (traces::ENGINE_REASON, "explicit".to_string()),
                (traces::PROVIDER, "kaito".to_string()),
                (traces::PROVIDER_REASON, "matched rule 0".to_string()),
                (traces::PHASE, "Pending".to_string()),
            ]
        );
        let undecided = DesiredCoreStatus {
            engine: None,
            provider: None,
            phase: None,
            ..desired()
        };
        assert!(decision_attributes(&undecided).is_empty());
    }

    #[test]
    fn the_traceparent_rides_only_on_a_selection_being_written() {
        let mut body = json!({"status": {"provider": {"name": "kaito", "selectedReason": "r"}}});
        carry_traceparent(&mut body, Some(TRACEPARENT));
        assert_eq!(body["status"]["provider"]["traceparent"], TRACEPARENT);

        // No selection in the apply (another selector owns it): nothing added, nothing written.
        let mut body = json!({"status": {"phase": "Pending"}});
        let before = body.clone();
        carry_traceparent(&mut body, Some(TRACEPARENT));
        assert_eq!(body, before);

        // Traces not exported: the apply is what it was.
        let mut body = json!({"status": {"provider": {"name": "kaito"}}});
        let before = body.clone();
        carry_traceparent(&mut body, None);
        assert_eq!(body, before);
    }
}
