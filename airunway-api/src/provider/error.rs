//! The provider reconcile's error: what failed, its metrics label and whether a retry on a
//! timer can help (see [`crate::kube_error`]).

use super::kinds::KindId;
use crate::kube_error::ErrorClass;

/// A provider reconcile failure. [`category`](ReconcileError::category) labels metrics.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// An API call failed.
    #[error("{action}: {source}")]
    Api {
        /// What was being done.
        action: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// The object lacks a name or namespace: nothing to retry until it changes.
    #[error("object without {0}")]
    MissingField(&'static str),
    /// A JSON patch the SDK builds could not be built (a bug, not the object's fault).
    #[error("building {0}")]
    Patch(&'static str),
    /// A kind id from another table (a bug, not the object's fault).
    #[error("{0:?} is not in the provider's kind table")]
    UnknownKind(KindId),
    /// The cached deployment did not decode (a bug: the cache holds what the watch decoded).
    #[error("decoding the cached deployment: {0}")]
    Decode(String),
}

impl ReconcileError {
    /// A short, static label.
    pub fn category(&self) -> &'static str {
        match self {
            ReconcileError::Api { source, .. } => ErrorClass::of(source).category(),
            ReconcileError::MissingField(_) => "invalid_object",
            ReconcileError::Patch(_)
            | ReconcileError::UnknownKind(_)
            | ReconcileError::Decode(_) => "internal",
        }
    }

    /// Whether retrying on a timer (with backoff) can help; otherwise the reconcile waits for
    /// a change of the deployment.
    pub fn is_transient(&self) -> bool {
        match self {
            ReconcileError::Api { source, .. } => ErrorClass::of(source).is_transient(),
            ReconcileError::MissingField(_)
            | ReconcileError::Patch(_)
            | ReconcileError::UnknownKind(_)
            | ReconcileError::Decode(_) => false,
        }
    }
}

/// Wraps a [`kube::Error`] with what was being done.
pub(super) fn api_error(action: impl Into<String>) -> impl FnOnce(kube::Error) -> ReconcileError {
    let action = action.into();
    move |source| ReconcileError::Api { action, source }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invalid_object_waits_and_a_bug_is_not_the_objects_fault() {
        let invalid = ReconcileError::MissingField("metadata.name");
        assert_eq!(invalid.category(), "invalid_object");
        assert!(!invalid.is_transient());
        let bug = ReconcileError::Patch("the finalizer patch");
        assert_eq!(bug.category(), "internal");
        assert!(!bug.is_transient());
    }
}
