//! The Go AI Runway's texts, so filters and scripts written against it keep working: warnings,
//! the `spec.image`/`spec.engine.image` conflict, and a named provider's capability checks.

use airunway_api::constants::messages;
use airunway_api::storage::VolumePurpose;
use airunway_api::v1alpha1::{
    EngineCapability, EngineType, ModelDeployment, ModelDeploymentSpec, ModelSource, ServingMode,
};

use super::FieldError;

/// Warnings for `md`: settings that are accepted but ignored or risky.
pub fn warnings(md: &ModelDeployment) -> Vec<String> {
    let spec = &md.spec;
    let mut out = Vec::new();
    if spec.model_source() == ModelSource::Custom
        && spec
            .model
            .served_name
            .as_deref()
            .is_some_and(|n| !n.is_empty())
    {
        out.push(messages::SERVED_NAME_IGNORED.to_string());
    }
    let engine = spec.engine.as_ref();
    if engine.and_then(|e| e.trust_remote_code) == Some(true) {
        // The Go AI Runway's text (the spec gives none), so filters on it keep working.
        out.push(
            "trustRemoteCode=true allows execution of arbitrary code from HuggingFace".to_string(),
        );
    }
    if spec.explicit_engine() == Some(EngineType::Trtllm)
        && engine.and_then(|e| e.context_length).is_some()
    {
        out.push(
            "contextLength is ignored for TensorRT-LLM (must be configured at engine build time)"
                .to_string(),
        );
    }
    let volumes = spec
        .model
        .storage
        .as_ref()
        .and_then(|s| s.volumes.as_deref())
        .unwrap_or_default();
    let read_only = |purpose: VolumePurpose| {
        volumes
            .iter()
            .filter(move |v| v.read_only == Some(true) && VolumePurpose::of(v) == Some(purpose))
    };
    out.extend(
        read_only(VolumePurpose::CompilationCache)
            .map(|v| messages::storage_read_only_compilation_cache(&v.name)),
    );
    if spec.model_source() == ModelSource::Huggingface {
        out.extend(
            read_only(VolumePurpose::ModelCache)
                .map(|v| messages::storage_read_only_model_cache(&v.name)),
        );
    }
    out
}

/// The conflict message when `spec.image` and `spec.engine.image` are both set and differ (the
/// Go AI Runway's text). Such a deployment is `Failed` at reconcile time.
pub fn image_conflict(spec: &ModelDeploymentSpec) -> Option<String> {
    let legacy = spec.image.as_deref().filter(|i| !i.is_empty())?;
    let engine = spec
        .engine
        .as_ref()
        .and_then(|e| e.image.as_deref())
        .filter(|i| !i.is_empty())?;
    (legacy != engine).then(|| messages::image_conflict(legacy, engine))
}

/// Whether a named provider's registered capabilities fit the deployment (the Go AI Runway's
/// checks and texts): the engine is listed, with the serving mode, and with CPU support when no
/// GPU is requested. `None` when they fit. The error carries the field to change.
pub fn pinned_provider_mismatch(
    spec: &ModelDeploymentSpec,
    provider: &str,
    engine: EngineType,
    capabilities: &[EngineCapability],
) -> Option<FieldError> {
    let Some(capability) = capabilities.iter().find(|c| c.name == engine) else {
        return Some(FieldError::new(
            "spec.engine.type",
            format!("provider {provider} does not support engine {engine}"),
        ));
    };
    let mode = spec.serving_mode();
    if !capability.serving_modes.contains(&mode) {
        return Some(FieldError::new(
            "spec.serving.mode",
            format!("provider {provider} does not support {mode} mode for engine {engine}"),
        ));
    }
    if mode == ServingMode::Aggregated && spec.gpu_count() == 0 && !capability.cpu_support {
        return Some(FieldError::new(
            "spec.resources.gpu.count",
            format!(
                "{engine} engine on provider {provider} requires GPU (set resources.gpu.count > 0)"
            ),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::tests::{errors, md, one};
    use super::*;
    use serde_json::json;

    #[test]
    fn conflicting_images_are_refused_with_the_go_text() {
        let spec = json!({"model": {"id": "a/b"}, "image": "a:1", "engine": {"type": "llamacpp", "image": "b:2"}});
        assert_eq!(
            errors(spec),
            one(
                "spec.engine.image",
                r#"spec.image "a:1" conflicts with spec.engine.image "b:2"; remove spec.image or set both fields to the same value (spec.engine.image is preferred)"#
            )
        );
        let same = json!({"model": {"id": "a/b"}, "image": "a:1", "engine": {"type": "llamacpp", "image": "a:1"}});
        assert_eq!(errors(same), vec![]);
    }

    #[test]
    fn a_named_provider_that_does_not_fit_gets_the_go_texts() {
        use airunway_api::v1alpha1::EngineCapability;
        let kaito = [
            EngineCapability::new(EngineType::Vllm, vec![ServingMode::Aggregated], true, false),
            EngineCapability::new(
                EngineType::Llamacpp,
                vec![ServingMode::Aggregated],
                true,
                true,
            ),
        ];
        let gpu = json!({"gpu": {"count": 1}});
        for (spec, engine, field, message) in [
            (
                json!({"model": {"id": "a/b"}, "serving": {"mode": "disaggregated"}, "scaling": {"prefill": gpu, "decode": gpu}}),
                EngineType::Vllm,
                "spec.serving.mode",
                "provider kaito does not support disaggregated mode for engine vllm",
            ),
            (
                json!({"model": {"id": "a/b"}, "resources": gpu}),
                EngineType::Sglang,
                "spec.engine.type",
                "provider kaito does not support engine sglang",
            ),
            (
                json!({"model": {"id": "a/b"}, "resources": {"cpu": "2"}}),
                EngineType::Vllm,
                "spec.resources.gpu.count",
                "vllm engine on provider kaito requires GPU (set resources.gpu.count > 0)",
            ),
        ] {
            let spec: ModelDeploymentSpec = serde_json::from_value(spec).unwrap();
            assert_eq!(
                pinned_provider_mismatch(&spec, "kaito", engine, &kaito),
                Some(FieldError::new(field, message))
            );
        }
        let fits: ModelDeploymentSpec =
            serde_json::from_value(json!({"model": {"id": "a/b"}, "resources": {"cpu": "2"}}))
                .unwrap();
        assert_eq!(
            pinned_provider_mismatch(&fits, "kaito", EngineType::Llamacpp, &kaito),
            None
        );
    }

    #[test]
    fn warnings_are_given() {
        let w = warnings(&md(
            "x",
            json!({"model": {"source": "custom", "servedName": "n"}, "engine": {"type": "trtllm", "contextLength": 4096, "trustRemoteCode": true}}),
        ));
        assert_eq!(w[0], messages::SERVED_NAME_IGNORED);
        assert_eq!(
            w[1],
            "trustRemoteCode=true allows execution of arbitrary code from HuggingFace"
        );
        assert_eq!(
            w[2],
            "contextLength is ignored for TensorRT-LLM (must be configured at engine build time)"
        );
        assert!(warnings(&md("x", json!({"model": {"id": "a/b"}}))).is_empty());
    }

    #[test]
    fn read_only_caches_are_warned_about_with_the_go_texts() {
        let volumes = json!([
            {"name": "weights", "purpose": "modelCache", "claimName": "w", "readOnly": true},
            {"name": "compiled", "purpose": "compilationCache", "claimName": "c", "readOnly": true},
            {"name": "data", "claimName": "d", "mountPath": "/data", "readOnly": true},
        ]);
        assert_eq!(
            warnings(&md(
                "x",
                json!({"model": {"id": "a/b", "storage": {"volumes": volumes}}})
            )),
            [
                r#"storage volume "compiled" has purpose=compilationCache with readOnly=true; compilation cache requires write access"#,
                r#"storage volume "weights" has purpose=modelCache with readOnly=true; model download will be skipped (ensure the PVC already contains the model data)"#,
            ]
        );
        // A custom source downloads nothing: no model cache warning.
        assert_eq!(
            warnings(&md(
                "x",
                json!({"model": {"source": "custom", "storage": {"volumes": volumes}}})
            )),
            [
                r#"storage volume "compiled" has purpose=compilationCache with readOnly=true; compilation cache requires write access"#
            ]
        );
    }
}
