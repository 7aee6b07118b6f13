//! The provider conformance suite: runs a provider against a cluster where the AI Runway core
//! runs and checks, each as a named check with a message naming what was expected and seen,
//! that it keeps the provider contract: registration, acting only on its own deployments,
//! what it renders accepted by the server with strict field validation, idempotence, drift,
//! identity changes, scale, the pause annotation, the status it derives from upstream
//! fixtures, every compatibility message, deletion, stale detection and its permissions.
//!
//! The provider supplies only data ([`data::ProviderData`], its `conformance.yaml`); the
//! runner ([`run`]) applies its kustomize base, starts its binary as the base's
//! ServiceAccount and returns a [`report::Report`]. The `airunway-conformance` binary is this
//! function behind a command line (docs/providers/writing-a-provider.md).

pub mod audit;
mod checks;
pub mod cluster;
pub mod data;
pub mod fields;
pub mod process;
pub mod report;
pub mod runtime_config;

use std::path::PathBuf;
use std::time::Duration;

pub use checks::CHECKS;
pub use report::{CheckResult, Outcome, Report};

/// What a conformance run needs.
#[derive(Clone, Debug)]
pub struct Options {
    /// The cluster's admin kubeconfig (`None`: `KUBECONFIG` or `~/.kube/config`). The AI Runway
    /// core must be running there.
    pub kubeconfig: Option<PathBuf>,
    /// The provider binary the runner starts (`None`: the provider already runs, and the
    /// stale-detection check is skipped).
    pub provider_binary: Option<PathBuf>,
    /// The kubeconfig the provider runs with (`None`: a token of its base's ServiceAccount
    /// from the TokenRequest API).
    pub provider_kubeconfig: Option<PathBuf>,
    /// The provider's kustomize base, rendered (`kustomize build` output).
    pub manifests: PathBuf,
    /// The namespace to run in (created when missing).
    pub namespace: String,
    /// The provider's `conformance.yaml`.
    pub data: PathBuf,
    /// The kube-apiserver's audit log (JSON lines, `Metadata` level): with it the idempotence
    /// and permission checks count the provider's requests; without it they run in a weaker
    /// form or are skipped.
    pub audit_log: Option<PathBuf>,
    /// How long a check waits for an expected state.
    pub timeout: Duration,
    /// How long the idempotence and pause checks watch for writes that must not come.
    pub quiet_window: Duration,
    /// Where the provider's log and kubeconfig go (`None`: a temporary directory, removed).
    pub work_dir: Option<PathBuf>,
}

impl Options {
    /// Options with the default timeouts (60 s waits, a 5 s quiet window).
    pub fn new(manifests: PathBuf, data: PathBuf, namespace: &str) -> Options {
        Options {
            kubeconfig: None,
            provider_binary: None,
            provider_kubeconfig: None,
            manifests,
            namespace: namespace.to_string(),
            data,
            audit_log: None,
            timeout: Duration::from_secs(60),
            quiet_window: Duration::from_secs(5),
            work_dir: None,
        }
    }
}

/// Why a conformance run could not run (a failed check is not an error: it is in the report).
#[derive(Debug, thiserror::Error)]
pub enum ConformanceError {
    /// A file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// A file could not be written.
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The provider's data or manifests are not what the suite reads.
    #[error("{path}: {message}")]
    Data {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The kubeconfig could not be read or used.
    #[error("kubeconfig: {0}")]
    Kubeconfig(String),
    /// An API call the setup needs failed.
    #[error("{action}: {source}")]
    Api {
        /// What was being done.
        action: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// The provider binary could not be started.
    #[error("starting {binary}: {source}")]
    Spawn {
        /// The binary.
        binary: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// Something the run waited for did not come.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout {
        /// What was waited for.
        what: String,
        /// How long.
        after: Duration,
    },
    /// The setup failed otherwise.
    #[error("{0}")]
    Setup(String),
}

impl ConformanceError {
    /// A short, static label.
    pub fn category(&self) -> &'static str {
        match self {
            ConformanceError::Read { .. } | ConformanceError::Write { .. } => "io",
            ConformanceError::Data { .. } => "invalid_data",
            ConformanceError::Kubeconfig(_) => "kubeconfig",
            ConformanceError::Api { .. } => "api",
            ConformanceError::Spawn { .. } => "spawn",
            ConformanceError::Timeout { .. } => "timeout",
            ConformanceError::Setup(_) => "setup",
        }
    }
}

/// Runs the suite: applies the base, starts the provider, runs every check and cleans up.
/// Returns the report (failed checks included); an error only when the run could not start.
pub async fn run(options: &Options) -> Result<Report, ConformanceError> {
    checks::run(options).await
}
