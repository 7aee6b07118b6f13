//! Errors of the core's reconcile.

use airunway_api::kube_error::ErrorClass;

/// A reconcile failure. Each variant has a static [`category`](ReconcileError::category) used
/// as the `error_type` metric label.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// Writing the status failed.
    #[error("applying the status of {object}: {source}")]
    ApplyStatus {
        /// `namespace/name`.
        object: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// Reading the object again after a conflict failed.
    #[error("re-reading {object} after a conflict: {source}")]
    Refetch {
        /// `namespace/name`.
        object: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// The object has no name or namespace.
    #[error("object without {0}")]
    MissingField(&'static str),
    /// The selection task did not complete (the core is shutting down, or it panicked).
    #[error("selecting for {object}: {reason}")]
    Selection {
        /// `namespace/name`.
        object: String,
        /// What happened.
        reason: String,
    },
    /// The storage part (model caches, managed claims) failed.
    #[error(transparent)]
    Storage(#[from] crate::model_cache::ModelCacheError),
    /// The upstream access check could not ask the API server.
    #[error(transparent)]
    Access(#[from] crate::access::AccessError),
    /// The runtime configuration could not be resolved yet.
    #[error(transparent)]
    RuntimeConfig(#[from] crate::runtime_config::RuntimeConfigError),
}

impl ReconcileError {
    /// A short, static label for metrics and events (API failures labelled by
    /// [`ErrorClass::category`], as in every other binary).
    pub fn category(&self) -> &'static str {
        match self {
            ReconcileError::ApplyStatus { source, .. } | ReconcileError::Refetch { source, .. } => {
                ErrorClass::of(source).category()
            }
            ReconcileError::MissingField(_) => "invalid_object",
            ReconcileError::Selection { .. } => "selection",
            ReconcileError::Storage(e) => e.category(),
            ReconcileError::Access(e) => e.category(),
            ReconcileError::RuntimeConfig(e) => e.category(),
        }
    }

    /// Whether the same reconcile may succeed later without a change of the deployment: API
    /// failures the API server may answer differently next time (see
    /// [`ErrorClass::is_transient`]) and an interrupted selection. An object without a name or
    /// namespace, or a status the API server refuses as it is, waits for a change instead.
    pub fn is_transient(&self) -> bool {
        match self {
            ReconcileError::ApplyStatus { source, .. } | ReconcileError::Refetch { source, .. } => {
                ErrorClass::of(source).is_transient()
            }
            ReconcileError::MissingField(_) => false,
            ReconcileError::Selection { .. } => true,
            ReconcileError::Storage(e) => e.is_transient(),
            ReconcileError::Access(_) => true,
            ReconcileError::RuntimeConfig(_) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure("refused", "Reason")
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn api_failures_are_labelled_and_retried_like_every_binary() {
        let apply = |code| ReconcileError::ApplyStatus {
            object: "ns/a".into(),
            source: api_error(code),
        };
        assert_eq!(apply(409).category(), "conflict");
        assert!(apply(409).is_transient());
        assert_eq!(apply(404).category(), "not_found");
        assert_eq!(apply(422).category(), "api_error");
        assert!(
            !apply(422).is_transient(),
            "an invalid status waits for a change"
        );
        assert!(apply(503).is_transient());
        assert!(!ReconcileError::MissingField("metadata.name").is_transient());
        assert_eq!(
            ReconcileError::MissingField("metadata.name").category(),
            "invalid_object"
        );
    }
}
