//! How the ModelDeployment watches of the core and every provider list: at any resource
//! version (the API server's watch cache, no etcd read), in pages of
//! [`DEPLOYMENT_LIST_PAGE`]; and the pages of a provider's upstream watches
//! ([`UPSTREAM_LIST_PAGE`]).
//!
//! A re-list (after an API server restart or an expired watch) decodes each page whole before
//! its objects reach the store, and a deployment as listed is about 26 KB decoded
//! (`benches/store_memory.rs`, untrimmed), so kube's default page of 500 made each page a
//! transient of about 13 MB on top of the store; a page of 100 keeps it near 2.6 MB, at the
//! cost of one list request per 100 deployments. API servers that answer a
//! `resourceVersion=0` list from the watch cache without pagination (before
//! `ListFromCacheSnapshot`) send everything at once, as before.

use kube::runtime::watcher;

/// Deployments per list page.
pub const DEPLOYMENT_LIST_PAGE: u32 = 100;

/// Upstream objects per list page of a provider's upstream watch. Decoded whole as
/// `DynamicObject`s before they are held compactly, a page of 500 KubeRay `RayService`s was a
/// transient of about 16 MB (32 KB each, `benches/store_memory.rs`); a page of 100 is about
/// 3 MB.
pub const UPSTREAM_LIST_PAGE: u32 = 100;

/// The watch configuration of every ModelDeployment watch.
pub fn deployment_watch_config() -> watcher::Config {
    watcher::Config::default()
        .any_semantic()
        .page_size(DEPLOYMENT_LIST_PAGE)
}
