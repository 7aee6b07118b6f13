//! `status.workload`: what a provider created for a deployment and where its serving pods are
//! — the contract tools bind to (docs/integrations.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What the provider created and where the serving pods are. Written by the provider through
/// the SDK; `status.selector` is [`WorkloadStatus::pod_selector`] in string form.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadStatus {
    /// The upstream object the provider created for the deployment (its primary object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<WorkloadReference>,

    /// The objects that run the serving pods, when known: the Deployments the provider
    /// created, the RayCluster of a RayService, the workload KAITO created, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16))]
    pub workloads: Option<Vec<WorkloadReference>>,

    /// Labels every serving pod of the deployment carries (and no other pod carries all of).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 16))]
    pub pod_selector: Option<BTreeMap<String, String>>,

    /// The name of the container serving the OpenAI-compatible API in those pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,

    /// The port that container serves the API on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
}

impl WorkloadStatus {
    /// `pod_selector` in the label selector string form (`k=v,k2=v2`, keys sorted), as
    /// `status.selector` and the scale subresource carry it.
    pub fn selector_string(&self) -> Option<String> {
        let selector = self.pod_selector.as_ref().filter(|s| !s.is_empty())?;
        Some(
            selector
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(","),
        )
    }
}

/// A Kubernetes object in the deployment's namespace.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadReference {
    /// `apiVersion`, e.g. `apps/v1`.
    pub api_version: String,
    /// `kind`, e.g. `Deployment`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`, when the object exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// What the object does for the deployment when there are several: `prefill`, `decode`,
    /// `frontend`, `router`, `head`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selector_string_sorts_keys_and_skips_an_empty_selector() {
        let workload = WorkloadStatus {
            pod_selector: Some(BTreeMap::from([
                ("b".to_string(), "2".to_string()),
                ("a".to_string(), "1".to_string()),
            ])),
            ..Default::default()
        };
        assert_eq!(workload.selector_string().as_deref(), Some("a=1,b=2"));
        let empty = WorkloadStatus {
            pod_selector: Some(BTreeMap::new()),
            ..Default::default()
        };
        assert_eq!(empty.selector_string(), None);
        assert_eq!(WorkloadStatus::default().selector_string(), None);
    }
}
