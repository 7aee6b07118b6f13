//! Read-your-writes caches: the watch caches of the provider's objects and deployments, each
//! completed with what the provider's own writes returned until the watch delivers it, so a
//! reconcile never decides on a copy older than its own last write.

mod deployments;
mod objects;

pub use deployments::RecentDeployments;
pub use objects::LiveObjects;

/// Whether resourceVersion `a` is older than `b`. Resource versions are opaque; the API
/// server's are etcd revisions, compared as numbers when both parse (otherwise: not older).
fn older(a: Option<&str>, b: Option<&str>) -> bool {
    match (
        a.and_then(|v| v.parse::<u64>().ok()),
        b.and_then(|v| v.parse::<u64>().ok()),
    ) {
        (Some(a), Some(b)) => a < b,
        _ => false,
    }
}
