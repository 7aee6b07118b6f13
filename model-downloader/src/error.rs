//! The downloader's error type: one enum for the whole program, each variant with a static
//! category and an exit code, and a message that is safe to show (it never carries the token).

use std::path::PathBuf;

/// Everything that can stop a download.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag or its value is not usable.
    #[error("invalid argument: {0}")]
    Config(String),
    /// An `--include`/`--exclude` pattern does not parse.
    #[error("invalid glob pattern {pattern:?}: {source}")]
    Pattern {
        /// The pattern as given.
        pattern: String,
        /// Why it does not parse.
        source: glob::PatternError,
    },
    /// The server refused the credentials (HTTP 401 or 403).
    #[error(
        "access to model {model} refused (HTTP {status}); {}",
        if *token_given { "HF_TOKEN was set but is not accepted for this model" }
        else if *token_withheld { "HF_TOKEN is set but is sent only to the Hub's origin (--endpoint), not to this URI" }
        else { "HF_TOKEN is not set: the model may be gated or private" }
    )]
    Unauthorized {
        /// The model id (or URI) asked for.
        model: String,
        /// The HTTP status.
        status: u16,
        /// Whether a token was sent.
        token_given: bool,
        /// Whether a token was set but not sent (a URI on another origin than the Hub's).
        token_withheld: bool,
    },
    /// The model, its revision or one of its files does not exist (HTTP 404).
    #[error("{what} not found (HTTP 404)")]
    NotFound {
        /// What was asked for: the model and revision, or the file.
        what: String,
    },
    /// The server answered with a status the downloader does not handle.
    #[error("unexpected HTTP {status} for {what}")]
    HttpStatus {
        /// What was asked for.
        what: String,
        /// The HTTP status.
        status: u16,
    },
    /// The connection failed or broke (after the retries).
    #[error("transfer of {what} failed: {}", chain(source))]
    Transport {
        /// What was being fetched.
        what: String,
        /// The client's error.
        source: reqwest::Error,
    },
    /// The server's answer is not what the file API promises.
    #[error("invalid answer from the server for {what}: {reason}")]
    Protocol {
        /// What was asked for.
        what: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A path from the server is not a safe relative path.
    #[error("refusing file path {path:?} from the server: {reason}")]
    UnsafePath {
        /// The path as the server sent it.
        path: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A file has the wrong size once complete.
    #[error("file {file}: expected {expected} bytes, got {actual}")]
    SizeMismatch {
        /// The file's path in the model.
        file: String,
        /// The size the listing gives.
        expected: u64,
        /// The size received.
        actual: u64,
    },
    /// A file's sha256 is wrong twice in a row.
    #[error(
        "file {file}: sha256 mismatch after a fresh download: expected {expected}, got {actual}"
    )]
    HashMismatch {
        /// The file's path in the model.
        file: String,
        /// The sha256 the listing gives.
        expected: String,
        /// The sha256 of the bytes received.
        actual: String,
    },
    /// A local file operation failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// On which path.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// The process was asked to stop (SIGTERM) before the download finished.
    #[error("interrupted by SIGTERM before the download finished; a restart resumes it")]
    Interrupted,
    /// The progress could not be written to the object's status.
    #[error("status report to {target}: {source}")]
    Status {
        /// The object, as `<group>/<version>/<plural>/<namespace>/<name>`.
        target: String,
        /// The client's error.
        source: Box<kube::Error>,
    },
}

/// An error and its causes, `: `-separated (reqwest's own message is only the outermost one).
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        let next = e.to_string();
        if !text.ends_with(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        cause = e.source();
    }
    text
}

impl Error {
    /// A stable, low-cardinality name for the kind of error (logs, metrics, status reasons).
    pub fn category(&self) -> &'static str {
        match self {
            Self::Config(_) | Self::Pattern { .. } => "config",
            Self::Unauthorized { .. } => "unauthorized",
            Self::NotFound { .. } => "not-found",
            Self::HttpStatus { .. } => "http-status",
            Self::Transport { .. } => "transport",
            Self::Protocol { .. } => "protocol",
            Self::UnsafePath { .. } => "unsafe-path",
            Self::SizeMismatch { .. } | Self::HashMismatch { .. } => "integrity",
            Self::Io { .. } => "io",
            Self::Status { .. } => "status",
            Self::Interrupted => "interrupted",
        }
    }

    /// The process exit code for this error (documented in docs/model-cache.md).
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Config(_) | Self::Pattern { .. } => 2,
            Self::Unauthorized { .. } => 3,
            Self::NotFound { .. } => 4,
            Self::SizeMismatch { .. } | Self::HashMismatch { .. } => 5,
            Self::UnsafePath { .. } | Self::Protocol { .. } => 6,
            Self::HttpStatus { .. } | Self::Transport { .. } => 7,
            Self::Io { .. } => 8,
            Self::Status { .. } => 9,
            // 128 + SIGTERM, as a shell reports a process ended by it.
            Self::Interrupted => 143,
        }
    }

    /// Whether trying again later may succeed (server errors, broken connections).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::HttpStatus { status, .. } => *status >= 500 || *status == 429 || *status == 408,
            Self::Transport { source, .. } => !source.is_builder() && !source.is_redirect(),
            // A short body (the connection ended early) is resumed like a broken connection.
            Self::SizeMismatch {
                expected, actual, ..
            } => actual < expected,
            _ => false,
        }
    }

    /// A transport error, without the URL (a presigned URL carries credentials in its query).
    pub fn transport(what: impl Into<String>, source: reqwest::Error) -> Self {
        Self::Transport {
            what: what.into(),
            source: source.without_url(),
        }
    }

    /// An I/O error on `path` while doing `op`.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unauthorized_says_whether_a_token_was_given() {
        let without = Error::Unauthorized {
            model: "org/m".into(),
            status: 401,
            token_given: false,
            token_withheld: false,
        };
        assert_eq!(
            without.to_string(),
            "access to model org/m refused (HTTP 401); HF_TOKEN is not set: the model may be gated or private"
        );
        let with = Error::Unauthorized {
            model: "org/m".into(),
            status: 403,
            token_given: true,
            token_withheld: false,
        };
        assert!(
            with.to_string()
                .contains("HF_TOKEN was set but is not accepted")
        );
        assert_eq!(with.exit_code(), 3);
        assert_eq!(with.category(), "unauthorized");
    }

    #[test]
    fn transient_errors_are_server_errors_and_short_bodies() {
        let e500 = Error::HttpStatus {
            what: "f".into(),
            status: 503,
        };
        assert!(e500.is_transient());
        let e400 = Error::HttpStatus {
            what: "f".into(),
            status: 400,
        };
        assert!(!e400.is_transient());
        let short = Error::SizeMismatch {
            file: "f".into(),
            expected: 10,
            actual: 3,
        };
        assert!(short.is_transient());
        let long = Error::SizeMismatch {
            file: "f".into(),
            expected: 3,
            actual: 10,
        };
        assert!(!long.is_transient());
        assert!(!Error::NotFound { what: "f".into() }.is_transient());
    }
}
