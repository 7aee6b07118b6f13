//! The model cache (docs/model-cache.md): the `ModelCache` controller and the storage a
//! ModelDeployment asks for.
//!
//! Laid out like the gateway integration, decisions pure and I/O beside them:
//! - [`plan`] (pure): what one `ModelCache` needs — its claim, the download Job, the finalizer,
//!   retention — and the status that says where it stands.
//! - [`render`] (pure): the claim, the downloader's ServiceAccount, Role and RoleBinding, and the
//!   download Job.
//! - [`deployment`] (pure): what a deployment's `model.storage.volumes` need — the shared or
//!   private `ModelCache`, the managed claims — and its `StorageReady` and `ModelDownloaded`
//!   conditions.
//! - [`adapters`] (pure): the adapter caches of a deployment's Hugging Face LoRA adapters on
//!   its shared model cache's claim, and its `AdaptersDownloaded` condition.
//! - [`users`]: which caches a deployment change concerns, so the cache controller hears of
//!   its users coming and going without listing deployments.
//! - [`reconcile`]: the shell: watch caches, the `ModelCache` controller, creation and
//!   server-side apply under [`airunway_api::constants::field_managers::CORE_MODEL_CACHE`].
//!
//! Names come from [`airunway_api::storage`] only.

pub mod adapters;
pub mod deployment;
pub mod plan;
pub mod reconcile;
pub mod render;
pub mod users;

use std::time::Duration;

use airunway_api::kube_error::ErrorClass;
use airunway_api::v1alpha1::RetentionPolicy;

pub use reconcile::Integration;

/// The downloader image when `--model-downloader-image` is not given: the image of this
/// release.
pub const DEFAULT_DOWNLOADER_IMAGE: &str = concat!(
    "ghcr.io/airunway/airunway-model-downloader:",
    env!("CARGO_PKG_VERSION")
);

/// The path the download Job mounts the cache's claim at.
pub const JOB_MOUNT_PATH: &str = airunway_api::storage::MODEL_CACHE_MOUNT_PATH;

/// The download Job's retries (the Go AI Runway's `backoffLimit`).
pub const JOB_BACKOFF_LIMIT: i32 = 6;

/// The download Job's container.
pub const JOB_CONTAINER: &str = "model-download";

/// The uid and gid the download Job's Pod runs as (the images' non-root user).
pub const JOB_USER: i64 = 65532;

/// The options of the model cache, from the core's flags.
#[derive(Clone, Debug, PartialEq)]
pub struct CacheConfig {
    /// The downloader image (`--model-downloader-image`).
    pub downloader_image: String,
    /// The Hugging Face endpoint the downloader uses (`--model-cache-endpoint`; `None`: its
    /// default, `https://huggingface.co`).
    pub endpoint: Option<String>,
    /// The claim size of a shared cache the core creates (`--model-cache-size`).
    pub size: String,
    /// What happens to a shared cache the core created once unused (`--model-cache-retention`).
    pub retention: RetentionPolicy,
    /// How long it is kept unused first (`--model-cache-retention-period`).
    pub retention_period: Duration,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            downloader_image: DEFAULT_DOWNLOADER_IMAGE.to_string(),
            endpoint: None,
            size: "100Gi".to_string(),
            retention: RetentionPolicy::Delete,
            retention_period: Duration::from_secs(24 * 3600),
        }
    }
}

/// Errors of the model cache layer.
#[derive(Debug, thiserror::Error)]
pub enum ModelCacheError {
    /// The API server refused a request.
    #[error("{action} {object}: {source}")]
    Api {
        /// What was attempted (`create Job`, `apply status`, ...).
        action: &'static str,
        /// `<namespace>/<name>`.
        object: String,
        /// The error.
        #[source]
        source: kube::Error,
    },
    /// The object has no name or namespace.
    #[error("ModelCache without {0}")]
    MissingField(&'static str),
    /// The claim and cache watches were not filled in time (the core is starting).
    #[error("the PersistentVolumeClaim and ModelCache watches are not filled yet")]
    NotSynced,
    /// A rendered object is not of its kind (a bug).
    #[error("rendering {object}: {reason}")]
    Render {
        /// `<namespace>/<name>`.
        object: String,
        /// Why.
        reason: String,
    },
}

impl ModelCacheError {
    /// A static label for metrics and logs.
    pub fn category(&self) -> &'static str {
        match self {
            ModelCacheError::Api { source, .. } => ErrorClass::of(source).category(),
            ModelCacheError::MissingField(_) => "invalid_object",
            ModelCacheError::Render { .. } => "render",
            ModelCacheError::NotSynced => "not_synced",
        }
    }

    /// Whether the same reconcile may succeed later without a change.
    pub fn is_transient(&self) -> bool {
        match self {
            ModelCacheError::Api { source, .. } => ErrorClass::of(source).is_transient(),
            ModelCacheError::MissingField(_) | ModelCacheError::Render { .. } => false,
            ModelCacheError::NotSynced => true,
        }
    }
}

/// Human-readable bytes in binary units with one decimal (`4.0 GiB`), as the downloader
/// writes them.
pub fn format_bytes(bytes: i64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{} B", bytes.max(0));
    }
    let mut value = bytes as f64;
    let mut unit = "B";
    for next in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = next;
    }
    format!("{value:.1} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_like_the_downloaders() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(1023), "1023 B");
        assert_eq!(format_bytes(1536), "1.5 KiB");
        assert_eq!(format_bytes(4 * 1024 * 1024 * 1024), "4.0 GiB");
    }

    #[test]
    fn a_core_still_starting_is_retried_a_broken_render_is_not() {
        assert!(ModelCacheError::NotSynced.is_transient());
        assert_eq!(ModelCacheError::NotSynced.category(), "not_synced");
        let render = ModelCacheError::Render {
            object: "ns/c".into(),
            reason: "x".into(),
        };
        assert!(!render.is_transient());
        assert_eq!(render.category(), "render");
    }

    #[test]
    fn the_default_image_is_this_release() {
        assert!(DEFAULT_DOWNLOADER_IMAGE.ends_with(env!("CARGO_PKG_VERSION")));
    }
}
