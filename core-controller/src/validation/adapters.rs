//! `spec.adapters` (LoRA, docs/lora.md): names, sources, revisions, ranks and the engines that
//! serve adapters, as [`airunway_api::lora::adapter_errors`] words them (the providers read the
//! same definition when they render).

use airunway_api::v1alpha1::ModelDeployment;

use super::FieldError;

/// Appends the errors of `spec.adapters`.
pub(super) fn validate_adapters(md: &ModelDeployment, errors: &mut Vec<FieldError>) {
    errors.extend(
        airunway_api::lora::adapter_errors(md)
            .into_iter()
            .map(|e| FieldError::new(e.field, e.message)),
    );
}

#[cfg(test)]
mod tests {
    use super::super::validate_spec;
    use airunway_api::serde_json::{self, json};
    use airunway_api::v1alpha1::ModelDeployment;

    fn md(spec: serde_json::Value) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "n"}, "spec": spec
        }))
        .unwrap()
    }

    #[test]
    fn adapters_are_part_of_the_spec_validation() {
        let valid = md(
            json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"},
            "resources": {"gpu": {"count": 1}},
            "adapters": [{"name": "sql", "source": "hf://org/sql-lora", "revision": "v1", "maxRank": 16},
                         {"name": "chat", "source": "pvc://loras/chat"}]}),
        );
        assert_eq!(validate_spec(&valid), vec![]);
        let invalid = md(
            json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"},
            "resources": {"gpu": {"count": 1}},
            "adapters": [{"name": "sql", "source": "ftp://host/sql"}]}),
        );
        let errors = validate_spec(&invalid);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].field, "spec.adapters[0].source");
        assert_eq!(
            errors[0].message,
            format!("unknown scheme: use {}", airunway_api::lora::SOURCE_FORMS)
        );
    }
}
