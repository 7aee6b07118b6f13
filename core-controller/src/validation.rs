//! Validation of a ModelDeployment that needs no cluster state (pure).
//!
//! The same function backs the validating webhook and the reconcile-time check (for when the
//! webhook is not registered yet), so both say the same words. The rules that are also in the
//! CRD as CEL (`spec` rules of the design doc §8 table) use the same messages and field paths.
//!
//! Limits that protect the cluster (documented in `docs/validation.md`):
//!
//! | what | limit |
//! |---|---|
//! | `metadata.name` | DNS-1035 label, at most [`MAX_NAME_LENGTH`] characters (child names are derived from it) |
//! | `spec.model.id` (Hugging Face) | `<org>/<model>` characters only, at most 256 |
//! | `spec.engine.args` | at most 64 keys; keys `[A-Za-z0-9][A-Za-z0-9_.-]*` up to 63 characters; values up to [`MAX_ARG_VALUE_LENGTH`] characters, no control characters |
//! | `spec.provider.overrides` | a JSON object, at most [`MAX_OVERRIDES_BYTES`] bytes serialised, nesting at most [`MAX_OVERRIDES_DEPTH`] levels, no privilege-escalating keys ([`ESCALATING_OVERRIDE_KEYS`]) at any depth |
//! | `spec.podTemplate.metadata` | valid label keys and values; annotations at most [`MAX_POD_ANNOTATIONS_BYTES`] bytes |
//! | `spec.secrets.huggingFaceToken` | a valid Secret name (DNS subdomain) |
//! | `spec.env`, `spec.tolerations`, `spec.nodeSelector` | at most 64 entries (CRD schema) |
//! | `spec.env[].name` | 1 to 256 printable ASCII characters other than `=` |
//! | `spec.env[].value` | at most [`MAX_ENV_VALUE_BYTES`]; names and values together at most [`MAX_ENV_TOTAL_BYTES`] |
//! | `spec.nodeSelector` | valid label keys and values |
//! | `spec.tolerations[]` | a valid taint key, operator `Equal`/`Exists`, a known effect, `tolerationSeconds` only with `NoExecute` |
//! | `spec.image`, `spec.engine.image` | OCI image references |
//! | `spec.engine.contextLength` | at most [`MAX_CONTEXT_LENGTH`] |
//! | `spec.resources.gpu.type`, `spec.scaling.{prefill,decode}.gpu.type` | an extended resource name (`<domain>/<name>` outside `kubernetes.io`) |

use std::collections::BTreeMap;

use airunway_api::constants::messages;
use airunway_api::pod_security;
use airunway_api::v1alpha1::{
    EngineCapability, EngineType, ModelDeployment, ModelDeploymentSpec, ModelSource, ServingMode,
};
use serde_json::Value;

/// Longest ModelDeployment name: providers derive Service and workload names such as
/// `<name>-frontend` and `<name>-vllmdecodeworker-<hash>` from it, which must stay valid.
pub const MAX_NAME_LENGTH: usize = 45;
/// Longest value of one `engine.args` entry.
pub const MAX_ARG_VALUE_LENGTH: usize = 1024;
/// Largest `provider.overrides`, serialised as JSON.
pub const MAX_OVERRIDES_BYTES: usize = 16 * 1024;
/// Deepest nesting of `provider.overrides`.
pub const MAX_OVERRIDES_DEPTH: usize = 8;
/// Largest total size of `podTemplate.metadata.annotations` (keys and values).
pub const MAX_POD_ANNOTATIONS_BYTES: usize = 64 * 1024;

/// Largest `engine.contextLength` (2^24 tokens, far beyond any model served today).
pub const MAX_CONTEXT_LENGTH: i64 = 16_777_216;
/// Largest value of one `spec.env` entry.
pub const MAX_ENV_VALUE_BYTES: usize = 32 * 1024;
/// Largest total of `spec.env` names and values.
pub const MAX_ENV_TOTAL_BYTES: usize = 256 * 1024;

/// Override keys refused anywhere in `provider.overrides` (one list, shared with providers).
pub use airunway_api::constants::ESCALATING_OVERRIDE_KEYS;

/// One validation error: the field path and the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// Path of the offending field, e.g. `spec.resources.gpu.count`.
    pub field: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl FieldError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// Joins errors as `field: message; field: message`.
pub fn describe(errors: &[FieldError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Every error of `md` (empty when valid).
pub fn validate(md: &ModelDeployment) -> Vec<FieldError> {
    let mut errors = Vec::new();
    validate_name(md.metadata.name.as_deref().unwrap_or_default(), &mut errors);
    validate_spec(&md.spec, &mut errors);
    errors
}

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
    out
}

fn validate_name(name: &str, errors: &mut Vec<FieldError>) {
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

fn validate_spec(spec: &ModelDeploymentSpec, errors: &mut Vec<FieldError>) {
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

    validate_values(spec, errors);
    if let Some(message) = image_conflict(spec) {
        errors.push(FieldError::new("spec.engine.image", message));
    }
    if let Some(args) = spec.engine.as_ref().and_then(|e| e.args.as_ref()) {
        validate_args(args, errors);
    }
    validate_extra_args(spec, errors);
    if let Some(overrides) = spec.provider.as_ref().and_then(|p| p.overrides.as_ref()) {
        validate_overrides(overrides, errors);
    }
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
        let mut annotation_bytes = 0;
        for (key, value) in metadata.annotations.iter().flatten() {
            annotation_bytes += key.len() + value.len();
            if !is_qualified_name(key) {
                errors.push(FieldError::new(
                    format!("spec.podTemplate.metadata.annotations[{key}]"),
                    "is not a valid annotation key",
                ));
            }
        }
        if annotation_bytes > MAX_POD_ANNOTATIONS_BYTES {
            errors.push(FieldError::new(
                "spec.podTemplate.metadata.annotations",
                format!(
                    "must total at most {MAX_POD_ANNOTATIONS_BYTES} bytes (is {annotation_bytes})"
                ),
            ));
        }
    }
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

/// Checks every value that reaches a pod spec: what a kubelet or container runtime would refuse
/// is refused here, with the field, instead of being copied into an upstream object.
fn validate_values(spec: &ModelDeploymentSpec, errors: &mut Vec<FieldError>) {
    for (field, image) in [
        ("spec.image", spec.image.as_deref()),
        (
            "spec.engine.image",
            spec.engine.as_ref().and_then(|e| e.image.as_deref()),
        ),
    ] {
        if let Some(image) = image.filter(|i| !is_image_reference(i)) {
            errors.push(FieldError::new(
                field,
                format!(
                    "{image:?} is not a valid image reference (expected [registry[:port]/]name[:tag][@digest], lower-case name)"
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
    let mut env_bytes = 0usize;
    for (i, var) in spec.env.iter().flatten().enumerate() {
        if !is_env_name(&var.name) {
            errors.push(FieldError::new(
                format!("spec.env[{i}].name"),
                "must be 1 to 256 printable ASCII characters other than '='",
            ));
        }
        let value = var.value.as_deref().unwrap_or_default();
        env_bytes += var.name.len() + value.len();
        if value.len() > MAX_ENV_VALUE_BYTES {
            errors.push(FieldError::new(
                format!("spec.env[{i}].value"),
                format!(
                    "must be at most {MAX_ENV_VALUE_BYTES} bytes (is {}); mount large data from a ConfigMap or volume instead",
                    value.len()
                ),
            ));
        }
    }
    if env_bytes > MAX_ENV_TOTAL_BYTES {
        errors.push(FieldError::new(
            "spec.env",
            format!(
                "names and values must total at most {MAX_ENV_TOTAL_BYTES} bytes (is {env_bytes})"
            ),
        ));
    }
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

/// The flag name of a raw `engine.extraArgs` token: `--key` or `--key=value` give `key`; other
/// tokens (values, `-x`, `---x`) name no flag.
pub fn extra_arg_flag(token: &str) -> Option<&str> {
    let rest = token.strip_prefix("--")?;
    if rest.is_empty() || rest.starts_with('-') {
        return None;
    }
    Some(rest.split_once('=').map_or(rest, |(key, _)| key))
}

fn validate_extra_args(spec: &ModelDeploymentSpec, errors: &mut Vec<FieldError>) {
    let Some(engine) = spec.engine.as_ref() else {
        return;
    };
    let args = engine.args.as_ref();
    for (i, token) in engine.extra_args.iter().flatten().enumerate() {
        if token.chars().any(char::is_control) {
            errors.push(FieldError::new(
                format!("spec.engine.extraArgs[{i}]"),
                "must not contain control characters such as newlines",
            ));
        }
        if let Some(key) = extra_arg_flag(token)
            && args.is_some_and(|a| a.contains_key(key))
        {
            errors.push(FieldError::new(
                "spec.engine.extraArgs",
                messages::launch_flag_conflict(key, token),
            ));
        }
    }
}

fn validate_args(args: &BTreeMap<String, String>, errors: &mut Vec<FieldError>) {
    for (key, value) in args {
        let field = format!("spec.engine.args[{key}]");
        let valid_key = key.len() <= 63
            && key
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric())
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid_key {
            errors.push(FieldError::new(
                field.clone(),
                "argument names are written without leading dashes and use letters, digits, '-', '_' or '.' (at most 63), e.g. gpu-memory-utilization",
            ));
        }
        if value.len() > MAX_ARG_VALUE_LENGTH {
            errors.push(FieldError::new(
                field.clone(),
                format!("value must be at most {MAX_ARG_VALUE_LENGTH} characters"),
            ));
        }
        if value.chars().any(char::is_control) {
            errors.push(FieldError::new(
                field,
                "value must not contain control characters such as newlines",
            ));
        }
    }
}

/// Validates `provider.overrides`: size, depth and privilege-escalating keys anywhere.
pub fn validate_overrides(
    overrides: &serde_json::Map<String, Value>,
    errors: &mut Vec<FieldError>,
) {
    let size = serde_json::to_string(overrides)
        .map(|s| s.len())
        .unwrap_or(usize::MAX);
    if size > MAX_OVERRIDES_BYTES {
        errors.push(FieldError::new(
            "spec.provider.overrides",
            format!("must be at most {MAX_OVERRIDES_BYTES} bytes as JSON (is {size})"),
        ));
    }
    let before = errors.len();
    for (key, value) in overrides {
        walk_overrides(
            &format!("spec.provider.overrides.{key}"),
            key,
            value,
            1,
            errors,
        );
    }
    // The keys above are refused wherever they are; what else would loosen the pods (privileged,
    // capabilities, hostPath, host ports, any spelling and depth) is found by the same Pod
    // Security check the providers run on what they render. Skipped when the walk already
    // stopped at the depth limit (the check would only repeat it).
    if errors[before..]
        .iter()
        .any(|e| e.message.contains("may nest at most"))
    {
        return;
    }
    let reported: Vec<String> = errors[before..].iter().map(|e| e.field.clone()).collect();
    for violation in pod_security::check(
        &Value::Object(overrides.clone()),
        pod_security::Profile::Baseline,
        &pod_security::Exemptions::default(),
    ) {
        let field = format!("spec.provider.overrides.{}", violation.field);
        if !reported.iter().any(|r| field.starts_with(r.as_str())) {
            errors.push(FieldError::new(
                field,
                format!(
                    "{}: provider.overrides may not loosen the security of the model server pods",
                    violation.rule
                ),
            ));
        }
    }
}

fn walk_overrides(
    path: &str,
    key: &str,
    value: &Value,
    depth: usize,
    errors: &mut Vec<FieldError>,
) {
    if ESCALATING_OVERRIDE_KEYS.contains(&key) {
        errors.push(FieldError::new(
            path,
            format!("key '{key}' is not allowed in provider.overrides: it would escalate the privileges of the model server pods"),
        ));
    }
    if depth > MAX_OVERRIDES_DEPTH {
        errors.push(FieldError::new(
            path,
            format!("provider.overrides may nest at most {MAX_OVERRIDES_DEPTH} levels"),
        ));
        return;
    }
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                walk_overrides(&format!("{path}.{k}"), k, v, depth + 1, errors);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                if let Value::Object(map) = v {
                    for (k, v) in map {
                        walk_overrides(&format!("{path}[{i}].{k}"), k, v, depth + 1, errors);
                    }
                }
            }
        }
        _ => {}
    }
}

/// An environment variable name Kubernetes accepts: printable ASCII other than `=`.
fn is_env_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 256 && s.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'=')
}

/// An OCI image reference: `[domain[:port]/]path[:tag][@algorithm:hex]` with lower-case path
/// components (the distribution reference grammar, without IPv6 literals).
pub fn is_image_reference(s: &str) -> bool {
    if s.is_empty() || s.len() > 512 {
        return false;
    }
    let (name_and_tag, digest) = match s.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (s, None),
    };
    if let Some(digest) = digest {
        let Some((algorithm, hex)) = digest.split_once(':') else {
            return false;
        };
        let algorithm_ok = algorithm.starts_with(|c: char| c.is_ascii_alphabetic())
            && algorithm
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+' | '.'));
        if !algorithm_ok || hex.len() < 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return false;
        }
    }
    // A tag is after the last ':' that follows the last '/'.
    let last_slash = name_and_tag.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match name_and_tag[last_slash..].rfind(':') {
        Some(i) => (
            &name_and_tag[..last_slash + i],
            Some(&name_and_tag[last_slash + i + 1..]),
        ),
        None => (name_and_tag, None),
    };
    if let Some(tag) = tag {
        let ok = !tag.is_empty()
            && tag.len() <= 128
            && tag.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            && tag
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !ok {
            return false;
        }
    }
    let mut components: Vec<&str> = name.split('/').collect();
    // The first component is a registry when it has a '.' or ':' or is `localhost`.
    if components.len() > 1 {
        let first = components[0];
        if first.contains('.') || first.contains(':') || first == "localhost" {
            let (host, port) = match first.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (first, None),
            };
            let host_ok = host.split('.').all(|label| {
                !label.is_empty()
                    && label.starts_with(|c: char| c.is_ascii_alphanumeric())
                    && label.ends_with(|c: char| c.is_ascii_alphanumeric())
                    && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            });
            let port_ok = port.is_none_or(|p| {
                !p.is_empty() && p.len() <= 5 && p.chars().all(|c| c.is_ascii_digit())
            });
            if !host_ok || !port_ok {
                return false;
            }
            components.remove(0);
        }
    }
    !components.is_empty() && components.iter().all(|c| is_path_component(c))
}

/// One path component of an image name: lower-case alphanumerics separated by `.`, `_`, `__` or
/// runs of `-`.
fn is_path_component(s: &str) -> bool {
    let bytes = s.as_bytes();
    if bytes.is_empty()
        || !bytes[0].is_ascii_lowercase() && !bytes[0].is_ascii_digit()
        || !bytes[bytes.len() - 1].is_ascii_lowercase() && !bytes[bytes.len() - 1].is_ascii_digit()
    {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_lowercase() || b.is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && matches!(bytes[i], b'.' | b'_' | b'-') {
            i += 1;
        }
        if i == start {
            // Neither a name character nor a separator (upper case, '%', non-ASCII...). Without
            // this the loop did not advance: `aXb` never returned (found by the generated
            // long run, a hang of the webhook and the controller).
            return false;
        }
        let separator = &s[start..i];
        let ok = matches!(separator, "." | "_" | "__") || separator.bytes().all(|b| b == b'-');
        if !ok {
            return false;
        }
    }
    true
}

/// DNS-1035 label: `[a-z]([-a-z0-9]*[a-z0-9])?`, at most 63 characters.
pub fn is_dns1035_label(s: &str) -> bool {
    s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

fn is_model_id(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/'))
        && !s.contains("//")
        && !s.contains("..")
}

fn is_label_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        Some((prefix, name)) => is_dns1123_subdomain(prefix) && is_label_name(name),
        None => is_label_name(s),
    }
}

/// An extended resource name as the API server accepts in resource limits: a qualified name
/// with a domain prefix outside `kubernetes.io` (found by the e2e dry-run of generated renders).
fn is_extended_resource_name(s: &str) -> bool {
    match s.split_once('/') {
        Some((prefix, _)) => {
            is_qualified_name(s)
                && prefix != "kubernetes.io"
                && !prefix.ends_with(".kubernetes.io")
                && !prefix.starts_with("requests.")
        }
        None => false,
    }
}

fn is_label_value(s: &str) -> bool {
    s.is_empty() || is_label_name(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn md(name: &str, spec: Value) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": "ns"}, "spec": spec,
        }))
        .unwrap()
    }

    fn errors(spec: Value) -> Vec<FieldError> {
        validate(&md("valid-name", spec))
    }

    fn one(field: &str, message: &str) -> Vec<FieldError> {
        vec![FieldError::new(field, message)]
    }

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
    fn extra_args_may_not_repeat_args() {
        assert_eq!(extra_arg_flag("--max-num-seqs=8"), Some("max-num-seqs"));
        assert_eq!(extra_arg_flag("--max-num-seqs"), Some("max-num-seqs"));
        assert_eq!(extra_arg_flag("8"), None);
        assert_eq!(extra_arg_flag("--"), None);
        assert_eq!(extra_arg_flag("---x"), None);
        assert_eq!(extra_arg_flag("-x"), None);
        for token in ["--max-num-seqs=8", "--max-num-seqs"] {
            let spec = json!({"model": {"id": "a/b"}, "engine": {"type": "vllm",
                "args": {"max-num-seqs": "4"}, "extraArgs": [token, "8"]}});
            assert_eq!(
                errors(spec),
                one(
                    "spec.engine.extraArgs",
                    &format!(
                        "launch flag \"max-num-seqs\" is set in both spec.engine.args and spec.engine.extraArgs (\"{token}\"); set it in exactly one place so the engine does not receive conflicting values"
                    )
                )
            );
        }
        let bare = json!({"model": {"id": "a/b"}, "engine": {"type": "vllm",
            "args": {"max-num-seqs": "4"}, "extraArgs": ["max-num-seqs", "--other=1"]}});
        assert_eq!(errors(bare), vec![]);
        let control =
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm", "extraArgs": ["--a\nb"]}});
        assert_eq!(errors(control)[0].field, "spec.engine.extraArgs[0]");
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
    fn overrides_that_loosen_pod_security_are_refused_whatever_the_key() {
        let spec = json!({"model": {"id": "a/b"}, "provider": {"overrides": {
            "worker": {"podSpec": {"HostNetwork": true, "volumes": [{"name": "r", "hostPath": {"path": "/"}}],
                "containers": [{"securityContext": {"privileged": true, "capabilities": {"add": ["SYS_ADMIN"]}}}]}}}}});
        let fields: Vec<String> = errors(spec).into_iter().map(|e| e.field).collect();
        assert_eq!(
            fields,
            [
                // `securityContext` is refused as a key wherever it is; what is inside it is not
                // reported again.
                "spec.provider.overrides.worker.podSpec.containers[0].securityContext",
                "spec.provider.overrides.worker.podSpec.HostNetwork",
                "spec.provider.overrides.worker.podSpec.volumes[0].hostPath",
            ]
        );
    }

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

    #[test]
    fn all_errors_are_reported_at_once() {
        let found = validate(&md(
            "Bad.Name",
            json!({"model": {}, "engine": {"type": "vllm"}, "resources": {}, "provider": {"overrides": {"hostNetwork": true}}}),
        ));
        let fields: Vec<&str> = found.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "metadata.name",
                "spec.resources.gpu.count",
                "spec.model.id",
                "spec.provider.overrides.hostNetwork"
            ]
        );
    }

    #[test]
    fn valid_specs_pass() {
        for spec in [
            json!({"model": {"id": "google/gemma-3-1b-it-qat-q8_0-gguf"}, "engine": {"type": "llamacpp"}, "resources": {"gpu": {"count": 0}}}),
            json!({"model": {"id": "meta-llama/Llama-3.1-8B-Instruct"}, "engine": {"type": "vllm", "args": {"gpu-memory-utilization": "0.9", "enable_block_reuse": "true"}}, "resources": {"gpu": {"count": 1}}}),
            json!({"model": {"source": "custom"}, "image": "example/x:1"}),
            json!({"model": {"id": "a/b"}}),
            json!({"model": {"id": "a/b"}, "serving": {"mode": "disaggregated"}, "scaling": {"prefill": {"gpu": {"count": 4}}, "decode": {"gpu": {"count": 2}}}}),
        ] {
            assert_eq!(errors(spec.clone()), vec![], "{spec}");
        }
    }

    #[test]
    fn escalating_override_keys_are_refused_at_any_depth() {
        for key in ESCALATING_OVERRIDE_KEYS {
            let found = errors(
                json!({"model": {"id": "a/b"}, "provider": {"overrides": {"frontend": {"pods": [{key: "x"}]}}}}),
            );
            assert_eq!(found.len(), 1, "{key}");
            assert_eq!(
                found[0].field,
                format!("spec.provider.overrides.frontend.pods[0].{key}")
            );
            assert!(
                found[0]
                    .message
                    .contains(&format!("key '{key}' is not allowed")),
                "{}",
                found[0].message
            );
        }
        // Harmless keys pass.
        assert!(errors(json!({"model": {"id": "a/b"}, "provider": {"overrides": {"routerMode": "kv", "frontend": {"replicas": 2}}}})).is_empty());
    }

    #[test]
    fn size_limits() {
        let big = "x".repeat(MAX_OVERRIDES_BYTES);
        let found =
            errors(json!({"model": {"id": "a/b"}, "provider": {"overrides": {"blob": big}}}));
        assert_eq!(found[0].field, "spec.provider.overrides");
        let mut deep = json!(1);
        for _ in 0..10 {
            deep = json!({"n": deep});
        }
        let found = errors(json!({"model": {"id": "a/b"}, "provider": {"overrides": {"n": deep}}}));
        assert!(
            found.iter().any(|e| e.message.contains("nest at most")),
            "{found:?}"
        );
        let found = errors(
            json!({"model": {"id": "a/b"}, "engine": {"args": {"--flag": "x", "ok": "a\nb"}}}),
        );
        assert_eq!(found.len(), 2, "{found:?}");
        let found = validate(&md(
            &"a".repeat(MAX_NAME_LENGTH + 1),
            json!({"model": {"id": "a/b"}}),
        ));
        assert_eq!(found[0].field, "metadata.name");
    }

    #[test]
    fn model_ids_labels_and_secrets() {
        assert_eq!(
            errors(json!({"model": {"id": "a b; rm"}}))[0].field,
            "spec.model.id"
        );
        let found = errors(
            json!({"model": {"id": "a/b"}, "podTemplate": {"metadata": {"labels": {"bad key!": "v", "ok": "not valid value!"}}}, "secrets": {"huggingFaceToken": "Bad_Name"}}),
        );
        let fields: Vec<&str> = found.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.podTemplate.metadata.labels[bad key!]",
                "spec.podTemplate.metadata.labels[ok]",
                "spec.secrets.huggingFaceToken"
            ]
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
}
