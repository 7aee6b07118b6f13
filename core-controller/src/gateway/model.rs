//! The model name the route matches on (pure).
//!
//! `spec.gateway.modelName`, else `spec.model.servedName` (unless the provider's capability
//! says the engine ignores it), else what the model server reports on `/v1/models`, else
//! `spec.model.id`. The server is asked only when the first two are absent and the model comes
//! with the container (`source: custom`): for a Hugging Face model the server reports the id.

use airunway_api::v1alpha1::{ModelDeploymentSpec, ModelSource};
use serde_json::Value;

/// Most bytes read from `/v1/models`.
pub const DISCOVERY_MAX_BYTES: usize = 1 << 20;
/// How long the `/v1/models` request may take (5 s, as the Go AI Runway: a loaded server's
/// first answer can be slow).
pub const DISCOVERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Where the model name came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `spec.gateway.modelName`.
    GatewayModelName,
    /// `spec.model.servedName`.
    ServedName,
    /// The server's `/v1/models`.
    Discovered,
    /// `spec.model.id`.
    ModelId,
}

/// Whether the server should be asked (the name is not in the spec).
pub fn needs_discovery(spec: &ModelDeploymentSpec, ignores_served_name: bool) -> bool {
    from_spec(spec, ignores_served_name).is_none() && spec.model.source == Some(ModelSource::Custom)
}

fn non_empty(s: Option<&String>) -> Option<&str> {
    s.map(String::as_str).filter(|s| !s.trim().is_empty())
}

fn from_spec(spec: &ModelDeploymentSpec, ignores_served_name: bool) -> Option<(String, Source)> {
    if let Some(name) = non_empty(spec.gateway.as_ref().and_then(|g| g.model_name.as_ref())) {
        return Some((name.to_string(), Source::GatewayModelName));
    }
    if !ignores_served_name && let Some(name) = non_empty(spec.model.served_name.as_ref()) {
        return Some((name.to_string(), Source::ServedName));
    }
    None
}

/// The routed model name, or the message saying how to give one.
pub fn resolve(
    spec: &ModelDeploymentSpec,
    ignores_served_name: bool,
    discovered: Option<&str>,
) -> Result<(String, Source), String> {
    if let Some(found) = from_spec(spec, ignores_served_name) {
        return Ok(found);
    }
    if let Some(name) = discovered.filter(|s| !s.trim().is_empty()) {
        return Ok((name.to_string(), Source::Discovered));
    }
    if let Some(id) = non_empty(spec.model.id.as_ref()) {
        return Ok((id.to_string(), Source::ModelId));
    }
    Err("no model name to route on: the model server did not report one on /v1/models and the spec names none; set spec.gateway.modelName".to_string())
}

/// The first model id in an OpenAI `/v1/models` answer (`{"data": [{"id": ...}]}`).
pub fn first_model_id(body: &[u8]) -> Option<String> {
    if body.len() > DISCOVERY_MAX_BYTES {
        return None;
    }
    let value: Value = serde_json::from_slice(body).ok()?;
    value
        .get("data")?
        .as_array()?
        .iter()
        .find_map(|m| m.get("id").and_then(Value::as_str))
        .filter(|id| !id.is_empty() && id.len() <= 256)
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn discovery_waits_five_seconds_as_the_go_project() {
        assert_eq!(DISCOVERY_TIMEOUT, std::time::Duration::from_secs(5));
    }

    fn spec(value: Value) -> ModelDeploymentSpec {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn precedence() {
        let all = spec(
            json!({"model": {"id": "Qwen/Qwen3-0.6B", "servedName": "qwen3"}, "gateway": {"modelName": "chat"}}),
        );
        assert_eq!(
            resolve(&all, false, Some("found")).unwrap(),
            ("chat".into(), Source::GatewayModelName)
        );
        let served = spec(json!({"model": {"id": "Qwen/Qwen3-0.6B", "servedName": "qwen3"}}));
        assert_eq!(
            resolve(&served, false, Some("found")).unwrap(),
            ("qwen3".into(), Source::ServedName)
        );
        assert_eq!(
            resolve(&served, true, Some("found")).unwrap(),
            ("found".into(), Source::Discovered),
            "the provider ignores servedName"
        );
        assert_eq!(
            resolve(&served, true, None).unwrap(),
            ("Qwen/Qwen3-0.6B".into(), Source::ModelId)
        );
        let blank =
            spec(json!({"model": {"id": "m", "servedName": " "}, "gateway": {"modelName": ""}}));
        assert_eq!(
            resolve(&blank, false, None).unwrap(),
            ("m".into(), Source::ModelId)
        );
    }

    #[test]
    fn nothing_to_route_on_says_what_to_set() {
        let custom = spec(json!({"model": {"source": "custom"}}));
        let message = resolve(&custom, false, None).unwrap_err();
        assert!(message.ends_with("set spec.gateway.modelName"), "{message}");
    }

    #[test]
    fn the_server_is_asked_only_for_custom_models_without_a_name() {
        assert!(needs_discovery(
            &spec(json!({"model": {"source": "custom"}})),
            false
        ));
        assert!(!needs_discovery(
            &spec(json!({"model": {"source": "custom", "servedName": "x"}})),
            false
        ));
        assert!(needs_discovery(
            &spec(json!({"model": {"source": "custom", "servedName": "x"}})),
            true
        ));
        assert!(!needs_discovery(
            &spec(json!({"model": {"id": "a/b"}})),
            false
        ));
    }

    #[test]
    fn models_answer_is_read_within_bounds() {
        let body =
            br#"{"object":"list","data":[{"id":"my-model","object":"model"},{"id":"other"}]}"#;
        assert_eq!(first_model_id(body).as_deref(), Some("my-model"));
        assert_eq!(first_model_id(b"{\"data\": []}"), None);
        assert_eq!(first_model_id(b"not json"), None);
        let huge = vec![b' '; DISCOVERY_MAX_BYTES + 1];
        assert_eq!(first_model_id(&huge), None);
        let long_id = format!("{{\"data\":[{{\"id\":\"{}\"}}]}}", "x".repeat(300));
        assert_eq!(first_model_id(long_id.as_bytes()), None);
    }
}
