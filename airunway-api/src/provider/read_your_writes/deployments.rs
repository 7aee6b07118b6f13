//! The deployments as this provider last wrote them. A write's response is newer than the
//! watch cache until the watch delivers it; a reconcile woken meanwhile (by an upstream event,
//! say) would otherwise decide on the older copy and repeat the write (add the finalizer again,
//! write the same status again).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::cache_trim;
use crate::v1alpha1::ModelDeployment;

use super::older;

/// Deployments returned by this provider's own writes, by uid, until the cache catches up.
#[derive(Default)]
pub struct RecentDeployments {
    written: Mutex<HashMap<String, Arc<ModelDeployment>>>,
}

impl RecentDeployments {
    /// The newer of `cached` and what this provider last wrote to the same deployment.
    pub fn newest(&self, cached: Arc<ModelDeployment>) -> Arc<ModelDeployment> {
        let uid = cached.metadata.uid.clone().unwrap_or_default();
        let Ok(mut written) = self.written.lock() else {
            return cached;
        };
        match written.get(&uid) {
            Some(mine)
                if older(
                    cached.metadata.resource_version.as_deref(),
                    mine.metadata.resource_version.as_deref(),
                ) =>
            {
                mine.clone()
            }
            Some(_) => {
                // The cache caught up: it is the truth again.
                written.remove(&uid);
                cached
            }
            None => cached,
        }
    }

    /// Records the deployment as a write of this provider returned it.
    pub fn record(&self, mut deployment: ModelDeployment) {
        cache_trim::keep_status_ownership(&mut deployment.metadata);
        let uid = deployment.metadata.uid.clone().unwrap_or_default();
        if let Ok(mut written) = self.written.lock() {
            written.insert(uid, Arc::new(deployment));
        }
    }

    /// Forgets a deployment this provider let go of.
    pub fn forget(&self, deployment: &ModelDeployment) {
        if let Ok(mut written) = self.written.lock() {
            written.remove(deployment.metadata.uid.as_deref().unwrap_or_default());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn md(version: &str, phase: &str) -> Arc<ModelDeployment> {
        Arc::new(
            serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
                "metadata": {"name": "m", "namespace": "ns", "uid": "u", "resourceVersion": version},
                "spec": {"model": {"id": "a/b"}}, "status": {"phase": phase}}))
            .unwrap(),
        )
    }

    #[test]
    fn a_write_wins_until_the_cache_catches_up() {
        let recent = RecentDeployments::default();
        recent.record((*md("12", "Deploying")).clone());
        let seen = recent.newest(md("10", "Pending"));
        assert_eq!(seen.metadata.resource_version.as_deref(), Some("12"));
        let caught_up = recent.newest(md("13", "Running"));
        assert_eq!(caught_up.metadata.resource_version.as_deref(), Some("13"));
        assert_eq!(
            recent
                .newest(md("10", "Pending"))
                .metadata
                .resource_version
                .as_deref(),
            Some("10"),
            "forgotten once the cache caught up"
        );
    }
}
