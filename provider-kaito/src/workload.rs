//! Where a Workspace's serving pods are, and why its replicas cannot change in place (pure),
//! from what the KAITO workspace controller v0.10 does:
//!
//! - KAITO runs an inference Workspace as one **StatefulSet** named like the Workspace (a
//!   preset and, since v0.8, a pod template alike; an old Deployment of that name is deleted),
//!   with `resource.count` (vLLM presets: the node estimate, `status.targetNodeCount`) pods
//!   labelled `kaito.sh/workspace: <name>`, which is also the StatefulSet's selector. The
//!   preset's container is named like the Workspace, the template's is ours (`model`); both
//!   serve on port 5000 (KAITO's Service `<name>` maps port 80 to it).
//! - `resource.count` is fixed once the Workspace exists: KAITO's admission webhook refuses a
//!   change (`field is immutable`), and the controller never resizes the StatefulSet. So the
//!   provider does not apply a changed `scaling.replicas` to a live Workspace: it holds the
//!   deployment with a condition naming KAITO and the count the Workspace keeps
//!   ([`scale_hold`]), and applies nothing until `scaling.replicas` is back (or the deployment
//!   is re-created). Zero is refused by the compatibility check.
//! - KAITO reports a Workspace ready only when every pod of its StatefulSet is ready, so the
//!   translated counts are all or nothing and `Degraded` stays `False`.

use std::collections::BTreeMap;

use airunway_api::constants::reasons;
use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::{PreparationHold, replica_count};
use airunway_api::serde_json::Value;
use airunway_api::v1alpha1::{EngineType, ModelDeployment, WorkloadReference, WorkloadStatus};

use crate::WORKSPACE_LABEL;
use crate::render::{LLAMACPP_PORT, TEMPLATE_CONTAINER};

/// `status.workload` of deployment `md`: the Workspace's StatefulSet and its pods.
pub fn workload(md: &ModelDeployment, workspace: Option<&DynamicObject>) -> Option<WorkloadStatus> {
    let name = md.metadata.name.clone()?;
    let template = workspace.map_or_else(
        || md.resolved_engine() == Some(EngineType::Llamacpp),
        |w| w.data["inference"]["template"].is_object(),
    );
    Some(WorkloadStatus {
        upstream: None,
        workloads: Some(vec![WorkloadReference {
            api_version: "apps/v1".into(),
            kind: "StatefulSet".into(),
            name: name.clone(),
            uid: None,
            role: None,
        }]),
        pod_selector: Some(BTreeMap::from([(
            WORKSPACE_LABEL.to_string(),
            name.clone(),
        )])),
        container: Some(if template {
            TEMPLATE_CONTAINER.to_string()
        } else {
            name
        }),
        port: Some(LLAMACPP_PORT),
    })
}

/// Whether `live` (a Workspace as served) was created for `md` (its owner reference).
fn owned_by(live: &Value, md: &ModelDeployment) -> bool {
    let Some(uid) = md.metadata.uid.as_deref() else {
        return false;
    };
    live["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|o| o["uid"] == uid)
}

/// The hold of a deployment whose `scaling.replicas` differs from the `resource.count` of its
/// live Workspace `live` (see the module documentation); `None` when they agree, when the
/// Workspace is not the deployment's, or for zero (the compatibility check refuses it).
pub fn scale_hold(md: &ModelDeployment, live: &Value) -> Option<PreparationHold> {
    let wanted = md.spec.replicas();
    if wanted == 0 || !owned_by(live, md) {
        return None;
    }
    let count = replica_count(&live["resource"]["count"])?;
    let name = md.metadata.name.as_deref().unwrap_or_default();
    (count != wanted).then(|| PreparationHold {
        reason: reasons::INCOMPATIBLE_CONFIGURATION,
        message: format!(
            "KAITO cannot change the replicas of a Workspace in place: resource.count stays as the Workspace was created (KAITO's webhook refuses a change, \"field is immutable\"), so Workspace {name} keeps {count}; set scaling.replicas back to {count}, or delete and re-create the ModelDeployment to run {wanted}"
        ),
    })
}

/// Whether the Workspace must be read to check the replicas: not when the last status already
/// reported the count asked for (the steady state).
pub fn needs_count_check(md: &ModelDeployment) -> bool {
    let reported = md
        .status
        .as_ref()
        .and_then(|s| s.replicas.as_ref())
        .and_then(|r| r.desired);
    md.spec.replicas() > 0 && reported != Some(md.spec.replicas())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use airunway_api::serde_json::{self, json};

    fn md(spec: Value, status: Value) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "gemma", "namespace": "ns", "uid": "md-uid"},
            "spec": spec, "status": status,
        }))
        .unwrap()
    }

    fn llamacpp(replicas: i32) -> Value {
        json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "image": "i",
               "scaling": {"replicas": replicas}})
    }

    fn workspace(count: i32, owner: &str) -> Value {
        json!({"apiVersion": "kaito.sh/v1beta1", "kind": "Workspace",
               "metadata": {"name": "gemma", "ownerReferences": [{"uid": owner}]},
               "resource": {"count": count}, "inference": {"template": {}}})
    }

    #[test]
    fn the_statefulset_and_its_pods_are_the_workload() {
        let live: DynamicObject = serde_json::from_value(workspace(1, "md-uid")).unwrap();
        let template = workload(&md(llamacpp(1), json!({})), Some(&live)).unwrap();
        assert_eq!(
            template.selector_string().as_deref(),
            Some("kaito.sh/workspace=gemma")
        );
        let workloads = template.workloads.unwrap();
        assert_eq!(
            (workloads[0].kind.as_str(), workloads[0].name.as_str()),
            ("StatefulSet", "gemma")
        );
        assert_eq!(
            (template.container.as_deref(), template.port),
            (Some("model"), Some(5000))
        );
        // A preset's container is named like the Workspace.
        let preset = workload(
            &md(
                json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}}),
                json!({}),
            ),
            None,
        )
        .unwrap();
        assert_eq!(preset.container.as_deref(), Some("gemma"));
    }

    #[test]
    fn a_changed_count_on_a_live_workspace_is_held_with_the_count_it_keeps() {
        let held = scale_hold(&md(llamacpp(3), json!({})), &workspace(1, "md-uid")).unwrap();
        assert_eq!(held.reason, reasons::INCOMPATIBLE_CONFIGURATION);
        assert!(
            held.message
                .starts_with("KAITO cannot change the replicas of a Workspace in place"),
            "{}",
            held.message
        );
        assert!(
            held.message
                .contains("Workspace gemma keeps 1; set scaling.replicas back to 1")
        );
        assert!(held.message.ends_with("to run 3"));
        // The same count, zero (refused elsewhere), another owner's Workspace: no hold.
        assert_eq!(
            scale_hold(&md(llamacpp(1), json!({})), &workspace(1, "md-uid")),
            None
        );
        assert_eq!(
            scale_hold(&md(llamacpp(0), json!({})), &workspace(1, "md-uid")),
            None
        );
        assert_eq!(
            scale_hold(&md(llamacpp(3), json!({})), &workspace(1, "other")),
            None
        );
    }

    #[test]
    fn the_workspace_is_read_only_when_the_reported_count_differs() {
        let reported = |desired: i32| json!({"replicas": {"desired": desired, "ready": desired}});
        assert!(!needs_count_check(&md(llamacpp(1), reported(1))));
        assert!(needs_count_check(&md(llamacpp(3), reported(1))));
        assert!(needs_count_check(&md(llamacpp(1), json!({}))));
        assert!(!needs_count_check(&md(llamacpp(0), json!({}))));
    }
}
