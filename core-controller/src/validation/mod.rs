//! Validation of a ModelDeployment that needs no cluster state (pure).
//!
//! By concern: `spec` (the name and the rules of the design doc's §8 table: GPUs per engine,
//! disaggregated serving, the model id), `values` (values that reach a pod spec: images,
//! GPU types, node selectors, tolerations, pod metadata, the token Secret), `env` (`spec.env`
//! as the API server checks a container's environment), `args` (engine
//! arguments), `engine_parsers` (tool calling and reasoning parsers), `overrides` (`provider.overrides`), `storage` (`model.storage.volumes`, the Go
//! AI Runway's rules and texts, and its update rules for managed volumes), `go_compat` (the Go
//! AI Runway's texts: warnings, the image conflict, a named provider's capabilities). The generic grammars (image
//! references, Kubernetes names and labels) are `airunway_api`'s [`image_reference`] and
//! [`kubernetes_names`].
//!
//! [`image_reference`]: airunway_api::image_reference
//! [`kubernetes_names`]: airunway_api::kubernetes_names
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
//! | `spec.env[].valueFrom` | exactly one source and no non-empty `value` beside it; ConfigMap/Secret names and keys, `fieldRef` paths, `resourceFieldRef` resources and divisors as the API server checks a container's `EnvVar` (`env`) |
//! | `spec.nodeSelector` | valid label keys and values |
//! | `spec.tolerations[]` | a valid taint key, operator `Equal`/`Exists`, a known effect, `tolerationSeconds` only with `NoExecute` |
//! | `spec.image`, `spec.engine.image` | image references as a container runtime reads them ([`airunway_api::image_reference`]) |
//! | `spec.engine.toolCallParser`, `reasoningParser` | not empty, `auto` or `none`; at most 64 characters of `[a-z0-9_.-]`; `toolCallParser` only with `toolCalling: true`; with tool calling, a parser named or known for the model; none with llama.cpp; no flag in `args`/`extraArgs` the render derives from them (`engine_parsers`) |
//! | `spec.engine.contextLength` | at most [`MAX_CONTEXT_LENGTH`] |
//! | `spec.resources.gpu.type`, `spec.scaling.{prefill,decode}.gpu.type` | an extended resource name (`<domain>/<name>` outside `kubernetes.io`) |
//! | `spec.gateway.poolRef`, `spec.gateway.gatewayRef` | object names (a namespace a DNS label); `poolRef` not with `httpRouteRef`; neither with `enabled: false` (`gateway`) |
//! | `spec.scaling.autoscaling` | `minReplicas <= maxReplicas`; `target` a positive and `activationTarget` a non-negative decimal; `query` for `type: prometheus` only and always; each metric type once; pool metrics not with `spec.gateway.enabled: false`; a named metric the explicit engine exports (`autoscaling`) |

mod adapters;
mod args;
mod autoscaling;
mod engine_parsers;
mod env;
mod gateway;
mod go_compat;
mod overrides;
mod spec;
mod storage;
mod values;

use airunway_api::v1alpha1::ModelDeployment;

pub use args::extra_arg_flag;
pub use go_compat::{image_conflict, pinned_provider_mismatch, warnings};
pub use overrides::validate_overrides;
pub use storage::validate_storage_update;

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
    pub(crate) fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
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

/// Every error of `md` (empty when valid), as reconcile sees it: the spec's errors and, for a
/// name providers cannot derive valid object names and label values from (stored under the Go
/// AI Runway, which checked names on create only, or while the webhook was away), the name's,
/// saying how to get a usable one (the name cannot change).
pub fn validate(md: &ModelDeployment) -> Vec<FieldError> {
    let mut errors: Vec<FieldError> = validate_name(md.metadata.name.as_deref().unwrap_or_default())
        .into_iter()
        .map(|e| FieldError {
            message: format!(
                "{}; a name cannot change: delete the ModelDeployment and create it again under a DNS-1035 name of at most {MAX_NAME_LENGTH} characters",
                e.message
            ),
            ..e
        })
        .collect();
    errors.extend(validate_spec(md));
    errors
}

/// The errors of `metadata.name` (checked at admission on create only, as the Go AI Runway
/// does: the name of a stored deployment cannot change, so refusing its updates helps nobody).
pub fn validate_name(name: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    spec::validate_name(name, &mut errors);
    errors
}

/// The errors of `md`'s spec (empty when valid), its name aside.
pub fn validate_spec(md: &ModelDeployment) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let spec = &md.spec;
    spec::validate_rules(spec, &mut errors);
    storage::validate_storage(md, &mut errors);
    values::validate_values(spec, &mut errors);
    if let Some(message) = image_conflict(spec) {
        errors.push(FieldError::new("spec.engine.image", message));
    }
    if let Some(args) = spec.engine.as_ref().and_then(|e| e.args.as_ref()) {
        args::validate_args(args, &mut errors);
    }
    args::validate_extra_args(spec, &mut errors);
    engine_parsers::validate_engine_parsers(spec, &mut errors);
    if let Some(overrides) = spec.provider.as_ref().and_then(|p| p.overrides.as_ref()) {
        validate_overrides(overrides, &mut errors);
    }
    values::validate_pod_metadata(spec, &mut errors);
    values::validate_secrets(spec, &mut errors);
    autoscaling::validate_autoscaling(spec, &mut errors);
    gateway::validate_gateway(spec, &mut errors);
    adapters::validate_adapters(md, &mut errors);
    errors
}

#[cfg(test)]
mod tests;
