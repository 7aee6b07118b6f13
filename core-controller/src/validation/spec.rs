//! The name and the spec rules: GPUs per engine, disaggregated serving, the model id.

use airunway_api::constants::messages;
use airunway_api::kubernetes_names::is_dns1035_label;
use airunway_api::v1alpha1::{EngineType, ModelDeploymentSpec, ModelSource, ServingMode};

use super::{FieldError, MAX_NAME_LENGTH};

/// `metadata.name`: a DNS-1035 label short enough for the names providers derive from it.
pub(super) fn validate_name(name: &str, errors: &mut Vec<FieldError>) {
    if name.len() > MAX_NAME_LENGTH {
        errors.push(FieldError::new(
            "metadata.name",
            format!(
                "must be at most {MAX_NAME_LENGTH} characters (is {}): providers derive Service and workload names such as <name>-frontend from it",
                name.len()
            ),
        ));
    }
    if !name.is_empty() && !is_dns1035_label(name) {
        errors.push(FieldError::new(
            "metadata.name",
            "must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter and ending with a letter or digit): providers use it to name Services",
        ));
    }
}

/// The rules of the design doc's §8 table that need no cluster state (also CEL rules in the
/// CRD, with the same fields and messages): GPUs per engine, disaggregated serving, the model id.
pub(super) fn validate_rules(spec: &ModelDeploymentSpec, errors: &mut Vec<FieldError>) {
    let mode = spec.serving_mode();
    let aggregated_without_gpu = mode == ServingMode::Aggregated && spec.gpu_count() == 0;
    match spec.explicit_engine() {
        Some(EngineType::Vllm) if aggregated_without_gpu => {
            errors.push(FieldError::new(
                "spec.resources.gpu.count",
                messages::VLLM_REQUIRES_GPU,
            ));
        }
        Some(EngineType::Sglang) if aggregated_without_gpu => {
            errors.push(FieldError::new(
                "spec.resources.gpu.count",
                messages::SGLANG_REQUIRES_GPU,
            ));
        }
        Some(EngineType::Trtllm) if aggregated_without_gpu => {
            errors.push(FieldError::new(
                "spec.resources.gpu.count",
                messages::TRTLLM_REQUIRES_GPU,
            ));
        }
        _ => {}
    }

    if mode == ServingMode::Disaggregated {
        if spec.resources.as_ref().is_some_and(|r| r.gpu.is_some()) {
            errors.push(FieldError::new(
                "spec.resources.gpu",
                messages::DISAGGREGATED_GPU_CONFLICT,
            ));
        }
        let scaling = spec.scaling.as_ref();
        let prefill = scaling.and_then(|s| s.prefill.as_ref());
        let decode = scaling.and_then(|s| s.decode.as_ref());
        if prefill.is_none() || decode.is_none() {
            errors.push(FieldError::new(
                "spec.scaling",
                messages::DISAGGREGATED_REQUIRES_COMPONENTS,
            ));
        }
        let gpu_count = |c: &airunway_api::v1alpha1::ComponentScaling| {
            c.gpu.as_ref().and_then(|g| g.count).unwrap_or(0)
        };
        if prefill.is_some_and(|p| gpu_count(p) == 0) {
            errors.push(FieldError::new(
                "spec.scaling.prefill.gpu.count",
                messages::DISAGGREGATED_REQUIRES_PREFILL_GPU,
            ));
        }
        if decode.is_some_and(|d| gpu_count(d) == 0) {
            errors.push(FieldError::new(
                "spec.scaling.decode.gpu.count",
                messages::DISAGGREGATED_REQUIRES_DECODE_GPU,
            ));
        }
    }

    let id = spec.model.id.as_deref().unwrap_or_default();
    if spec.model_source() == ModelSource::Huggingface {
        if id.is_empty() {
            errors.push(FieldError::new(
                "spec.model.id",
                messages::MODEL_ID_REQUIRED,
            ));
        } else if !is_model_id(id) {
            errors.push(FieldError::new(
                "spec.model.id",
                "must look like <organization>/<model> (letters, digits, '.', '_', '-' and '/')",
            ));
        }
    }
}

/// A Hugging Face model id: `<organization>/<model>` characters.
fn is_model_id(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/'))
        && !s.contains("//")
        && !s.contains("..")
}

#[cfg(test)]
mod tests {
    use super::super::tests::{errors, one};
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn every_message_of_the_core_table() {
        let gpu1 = json!({"gpu": {"count": 1}});
        let table: Vec<(Value, Vec<FieldError>)> = vec![
            (
                json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 0}}}),
                one("spec.resources.gpu.count", messages::VLLM_REQUIRES_GPU),
            ),
            (
                json!({"model": {"id": "a/b"}, "engine": {"type": "sglang"}, "resources": {"memory": "1Gi"}}),
                one("spec.resources.gpu.count", messages::SGLANG_REQUIRES_GPU),
            ),
            (
                json!({"model": {"id": "a/b"}, "engine": {"type": "trtllm", "image": "my/trtllm:1"}}),
                one("spec.resources.gpu.count", messages::TRTLLM_REQUIRES_GPU),
            ),
            (
                json!({"model": {"id": "a/b"}, "serving": {"mode": "disaggregated"}, "resources": {"gpu": {"count": 1}},
                    "scaling": {"prefill": gpu1, "decode": gpu1}}),
                one("spec.resources.gpu", messages::DISAGGREGATED_GPU_CONFLICT),
            ),
            (
                json!({"model": {"id": "a/b"}, "serving": {"mode": "disaggregated"}, "scaling": {"decode": gpu1}}),
                one("spec.scaling", messages::DISAGGREGATED_REQUIRES_COMPONENTS),
            ),
            (
                json!({"model": {"id": "a/b"}, "serving": {"mode": "disaggregated"}, "scaling": {"prefill": {}, "decode": gpu1}}),
                one(
                    "spec.scaling.prefill.gpu.count",
                    messages::DISAGGREGATED_REQUIRES_PREFILL_GPU,
                ),
            ),
            (
                json!({"model": {"id": "a/b"}, "serving": {"mode": "disaggregated"}, "scaling": {"prefill": gpu1, "decode": {"gpu": {"count": 0}}}}),
                one(
                    "spec.scaling.decode.gpu.count",
                    messages::DISAGGREGATED_REQUIRES_DECODE_GPU,
                ),
            ),
            (
                json!({"model": {"source": "huggingface"}}),
                one("spec.model.id", messages::MODEL_ID_REQUIRED),
            ),
        ];
        for (spec, expected) in table {
            assert_eq!(errors(spec.clone()), expected, "{spec}");
        }
    }

    #[test]
    fn engine_without_resources_gets_one_gpu() {
        // The common `{engine: vllm}` manifest is valid: it runs on one GPU.
        assert_eq!(
            errors(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}})),
            vec![]
        );
        // An image override means the user chose what runs: no GPU is assumed.
        assert_eq!(
            errors(
                json!({"model": {"id": "a/b"}, "engine": {"type": "vllm", "image": "my/vllm:1"}})
            ),
            one("spec.resources.gpu.count", messages::VLLM_REQUIRES_GPU)
        );
    }
}
