//! What a provider's render returns: the objects, its notes, or why it cannot render.

/// A provider-specific note on a rendered deployment (an event on the deployment).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderWarning {
    /// Event reason, e.g. `UnknownOverride`.
    pub reason: &'static str,
    /// Message, e.g. `unknown key provider.overrides.routrMode is ignored`.
    pub message: String,
}

/// The desired upstream objects of a deployment: one, or a set (e.g. llm-d's Deployments and
/// Services).
#[derive(Clone, Debug, PartialEq)]
pub struct Rendered {
    /// The objects as JSON (`apiVersion`, `kind`, `metadata.name` and the kind's fields), each
    /// of the provider's [upstream kind](super::Provider::upstream) or one of its
    /// [secondary kinds](super::Provider::secondary_kinds). The first is the primary object: the one
    /// `status.provider.resourceName`/`resourceKind` name. Names must be unique per kind. The
    /// SDK adds the namespace, owner reference, labels and annotations.
    pub objects: Vec<serde_json::Value>,
    /// Notes for the user (unknown override keys, ignored settings).
    pub warnings: Vec<RenderWarning>,
}

impl Rendered {
    /// A set of one object, without notes.
    pub fn one(object: serde_json::Value) -> Self {
        Rendered {
            objects: vec![object],
            warnings: Vec::new(),
        }
    }
}

/// Why a deployment cannot be rendered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// `provider.overrides` has a value of the wrong type.
    #[error("{0}")]
    InvalidOverrides(String),
    /// A required setting is missing or cannot be expressed upstream.
    #[error("{0}")]
    Unsupported(String),
}

impl RenderError {
    /// A short, static label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            RenderError::InvalidOverrides(_) => "invalid_overrides",
            RenderError::Unsupported(_) => "unsupported",
        }
    }
}
