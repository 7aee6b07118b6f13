//! Errors of the core's reconcile.

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
}

impl ReconcileError {
    /// A short, static label for metrics and events.
    pub fn category(&self) -> &'static str {
        match self {
            ReconcileError::ApplyStatus { source, .. } | ReconcileError::Refetch { source, .. } => {
                match source {
                    kube::Error::Api(status) if status.code == 409 => "conflict",
                    kube::Error::Api(status) if status.code == 404 => "not_found",
                    kube::Error::Api(status) if status.code == 403 => "forbidden",
                    kube::Error::Api(_) => "api_error",
                    _ => "transport",
                }
            }
            ReconcileError::MissingField(_) => "invalid_object",
            ReconcileError::Selection { .. } => "selection",
        }
    }
}
