//! Values that reach a pod spec: what a kubelet or container runtime would refuse is refused
//! here, with the field, instead of being copied into an upstream object.

use airunway_api::image_reference;
use airunway_api::kubernetes_names::{
    annotations_size, is_dns1123_subdomain, is_extended_resource_name, is_label_value,
    is_qualified_name,
};
use airunway_api::v1alpha1::ModelDeploymentSpec;

use super::{FieldError, MAX_CONTEXT_LENGTH, MAX_POD_ANNOTATIONS_BYTES};

/// Checks every value that reaches a pod spec: what a kubelet or container runtime would refuse
/// is refused here, with the field, instead of being copied into an upstream object.
pub(super) fn validate_values(spec: &ModelDeploymentSpec, errors: &mut Vec<FieldError>) {
    for (field, image) in [
        ("spec.image", spec.image.as_deref()),
        (
            "spec.engine.image",
            spec.engine.as_ref().and_then(|e| e.image.as_deref()),
        ),
    ] {
        if let Some((image, error)) =
            image.and_then(|i| image_reference::parse(i).err().map(|e| (i, e)))
        {
            errors.push(FieldError::new(
                field,
                format!(
                    "{image:?} is not a valid image reference: {error}; write [registry[:port]/]path[:tag][@digest] as a container runtime reads it, e.g. ghcr.io/org/server:v1 or docker.io/org/server@sha256:<64 hex digits>"
                ),
            ));
        }
    }
    if let Some(length) = spec.engine.as_ref().and_then(|e| e.context_length)
        && length > MAX_CONTEXT_LENGTH
    {
        errors.push(FieldError::new(
            "spec.engine.contextLength",
            format!("must be at most {MAX_CONTEXT_LENGTH} tokens (is {length})"),
        ));
    }
    let scaling = spec.scaling.as_ref();
    for (field, gpu) in [
        (
            "spec.resources.gpu.type",
            spec.resources.as_ref().and_then(|r| r.gpu.as_ref()),
        ),
        (
            "spec.scaling.prefill.gpu.type",
            scaling
                .and_then(|s| s.prefill.as_ref())
                .and_then(|c| c.gpu.as_ref()),
        ),
        (
            "spec.scaling.decode.gpu.type",
            scaling
                .and_then(|s| s.decode.as_ref())
                .and_then(|c| c.gpu.as_ref()),
        ),
    ] {
        if let Some(name) = gpu
            .and_then(|g| g.gpu_type.as_deref())
            .filter(|n| !is_extended_resource_name(n))
        {
            errors.push(FieldError::new(
                field,
                format!(
                    "{name:?} is not an extended resource name: it must be <domain>/<name> outside kubernetes.io, e.g. nvidia.com/gpu (providers put it in container resource limits)"
                ),
            ));
        }
    }
    super::env::validate_env(spec, errors);
    for (key, value) in spec.node_selector.iter().flatten() {
        if !is_qualified_name(key) {
            errors.push(FieldError::new(
                format!("spec.nodeSelector[{key}]"),
                "is not a valid label key (optional DNS prefix and '/', then up to 63 letters, digits, '-', '_' or '.')",
            ));
        }
        if !is_label_value(value) {
            errors.push(FieldError::new(
                format!("spec.nodeSelector[{key}]"),
                "value must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
            ));
        }
    }
    for (i, toleration) in spec.tolerations.iter().flatten().enumerate() {
        let field = format!("spec.tolerations[{i}]");
        let key = toleration.key.as_deref().unwrap_or_default();
        if !key.is_empty() && !is_qualified_name(key) {
            errors.push(FieldError::new(
                format!("{field}.key"),
                "is not a valid taint key (optional DNS prefix and '/', then up to 63 letters, digits, '-', '_' or '.')",
            ));
        }
        let operator = toleration.operator.as_deref().unwrap_or("Equal");
        if !matches!(operator, "Equal" | "Exists") {
            errors.push(FieldError::new(
                format!("{field}.operator"),
                "must be Equal or Exists",
            ));
        }
        let value = toleration.value.as_deref().unwrap_or_default();
        if operator == "Exists" && !value.is_empty() {
            errors.push(FieldError::new(
                format!("{field}.value"),
                "must be empty when operator is Exists",
            ));
        }
        if !is_label_value(value) {
            errors.push(FieldError::new(
                format!("{field}.value"),
                "must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
            ));
        }
        if key.is_empty() && operator != "Exists" {
            errors.push(FieldError::new(
                format!("{field}.operator"),
                "must be Exists when key is empty (a toleration of every taint)",
            ));
        }
        let effect = toleration.effect.as_deref().unwrap_or_default();
        if !matches!(effect, "" | "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
            errors.push(FieldError::new(
                format!("{field}.effect"),
                "must be NoSchedule, PreferNoSchedule or NoExecute (or empty for all)",
            ));
        }
        if toleration.toleration_seconds.is_some() && effect != "NoExecute" {
            errors.push(FieldError::new(
                format!("{field}.tolerationSeconds"),
                "is only allowed with effect NoExecute",
            ));
        }
    }
}

/// `spec.podTemplate.metadata`: label keys and values, annotation keys and their total size.
pub(super) fn validate_pod_metadata(spec: &ModelDeploymentSpec, errors: &mut Vec<FieldError>) {
    if let Some(metadata) = spec.pod_template.as_ref().and_then(|t| t.metadata.as_ref()) {
        for (key, value) in metadata.labels.iter().flatten() {
            if !is_qualified_name(key) {
                errors.push(FieldError::new(
                    format!("spec.podTemplate.metadata.labels[{key}]"),
                    "is not a valid label key (optional DNS prefix and '/', then up to 63 letters, digits, '-', '_' or '.')",
                ));
            }
            if !is_label_value(value) {
                errors.push(FieldError::new(
                    format!("spec.podTemplate.metadata.labels[{key}]"),
                    "value must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
                ));
            }
        }
        let annotations = metadata.annotations.iter().flatten();
        for (key, _) in annotations.clone() {
            if !is_qualified_name(key) {
                errors.push(FieldError::new(
                    format!("spec.podTemplate.metadata.annotations[{key}]"),
                    "is not a valid annotation key",
                ));
            }
        }
        let annotation_bytes = annotations_size(annotations);
        if annotation_bytes > MAX_POD_ANNOTATIONS_BYTES {
            errors.push(FieldError::new(
                "spec.podTemplate.metadata.annotations",
                format!(
                    "must total at most {MAX_POD_ANNOTATIONS_BYTES} bytes (is {annotation_bytes})"
                ),
            ));
        }
    }
}

/// `spec.secrets.huggingFaceToken`: a Secret name.
pub(super) fn validate_secrets(spec: &ModelDeploymentSpec, errors: &mut Vec<FieldError>) {
    if let Some(secret) = spec
        .secrets
        .as_ref()
        .and_then(|s| s.hugging_face_token.as_deref())
        && !is_dns1123_subdomain(secret)
    {
        errors.push(FieldError::new(
            "spec.secrets.huggingFaceToken",
            "must be the name of a Secret in this namespace (a DNS subdomain)",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::super::MAX_ENV_VALUE_BYTES;
    use super::super::tests::errors;
    use airunway_api::image_reference::is_valid as is_image_reference;
    use serde_json::json;

    #[test]
    fn image_references() {
        for good in [
            "vllm/vllm-openai:v0.11.0",
            "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.6.1",
            "localhost:5000/a/b",
            "registry.example.com:443/team/model__x@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "ghcr.io/ggml-org/llama.cpp:server",
            "busybox",
        ] {
            assert!(is_image_reference(good), "{good}");
        }
        for bad in [
            "",
            "Vllm/Vllm",
            "vllm:tag with space",
            "vllm\n",
            "a//b",
            "a:",
            "a@sha256:xyz",
            "-a/b",
            "a/b-",
            "a..b",
            "host:port:x/a",
            "aXb",
            "vllm/vLLm:1",
            "a%b",
            "aüb",
        ] {
            assert!(!is_image_reference(bad), "{bad}");
        }
    }

    #[test]
    fn gpu_types_must_be_extended_resource_names() {
        let gpu = |t: &str| json!({"model": {"id": "a/b"}, "resources": {"gpu": {"count": 1, "type": t}}});
        for ok in ["nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/i915"] {
            assert!(errors(gpu(ok)).is_empty(), "{ok}");
        }
        for bad in [
            "gpu",
            "",
            "kubernetes.io/gpu",
            "a.kubernetes.io/gpu",
            "nvidia.com/",
            "Nvidia.com/gpu",
            "a/b/c",
            &"a".repeat(63),
        ] {
            let fields: Vec<String> = errors(gpu(bad)).into_iter().map(|e| e.field).collect();
            assert_eq!(fields, ["spec.resources.gpu.type"], "{bad:?}");
        }
        let component = json!({"gpu": {"count": 1, "type": "gpu"}});
        let fields: Vec<String> = errors(
            json!({"model": {"id": "a/b"}, "serving": {"mode": "disaggregated"},
            "scaling": {"prefill": component, "decode": component}}),
        )
        .into_iter()
        .map(|e| e.field)
        .collect();
        assert_eq!(
            fields,
            [
                "spec.scaling.prefill.gpu.type",
                "spec.scaling.decode.gpu.type"
            ]
        );
    }

    #[test]
    fn values_that_reach_pod_specs() {
        let big = "x".repeat(MAX_ENV_VALUE_BYTES + 1);
        let spec = json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp", "contextLength": 4611686018427387904_i64,
                "image": "Not A Ref"},
            "env": [{"name": "BAD\u{0007}", "value": "v"}, {"name": "A=B"}, {"name": "BIG", "value": big}],
            "nodeSelector": {"ok/key": "v\n", "bad key": "v"},
            "tolerations": [{"key": "k", "operator": "Sometimes", "effect": "NoRun", "tolerationSeconds": 5},
                            {"operator": "Equal", "value": "x"}, {"key": "k", "operator": "Exists", "value": "v"}]});
        let fields: Vec<String> = errors(spec).into_iter().map(|e| e.field).collect();
        assert_eq!(
            fields,
            [
                "spec.engine.image",
                "spec.engine.contextLength",
                "spec.env[0].name",
                "spec.env[1].name",
                "spec.env[2].value",
                "spec.nodeSelector[bad key]",
                "spec.nodeSelector[ok/key]",
                "spec.tolerations[0].operator",
                "spec.tolerations[0].effect",
                "spec.tolerations[0].tolerationSeconds",
                "spec.tolerations[1].operator",
                "spec.tolerations[2].value",
            ]
        );
    }
}
