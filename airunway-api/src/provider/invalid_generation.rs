//! The status of a generation the core's validation refused after the provider took the
//! deployment (pure). The provider deploys nothing for it and leaves what runs alone, but it
//! holds `phase`, so it must say it has seen the generation: `observedGeneration` current,
//! `Ready=False` `ValidationFailed` (with the core's `Validated` message) and therefore
//! `Stalled=True`, which kstatus reads as Failed rather than InProgress for good.

use crate::conditions::DesiredCondition;
use crate::constants::condition_types;
use crate::managed_fields::OwnedFields;
use crate::v1alpha1::{ConditionStatus, ModelDeployment, NotReadyReason, NotReadyStatus, Phase};

use super::desired::ProviderStatus;

/// The provider-owned status of `md`, whose current generation failed validation: what the
/// deployment shows now (phase, replicas, endpoint, workload, the provider's conditions) with
/// `Ready=False` `ValidationFailed`. `None` while `manager` does not hold `phase` (the core
/// still does, and writes `Failed` itself) or while the deployment is valid.
pub fn status(md: &ModelDeployment, manager: &str) -> Option<ProviderStatus> {
    let validated = md
        .condition(condition_types::VALIDATED)
        .filter(|c| c.status == ConditionStatus::False)?;
    if !OwnedFields::of(&md.metadata, manager).owns(&["status", "phase"]) {
        return None;
    }
    let shown = md.status.as_ref()?;
    let generation = md.metadata.generation.unwrap_or_default();
    // (Not the number of the generation that serves: `observedGeneration` moves to this one
    // with the write, and the message must not change with it.)
    let serving = match shown.phase {
        Some(Phase::Running) => "; the previous generation keeps serving",
        _ => "",
    };
    let not_ready = NotReadyStatus::new(
        NotReadyReason::ValidationFailed,
        format!(
            "Generation {generation} is not deployed: {}{serving}",
            validated
                .message
                .as_deref()
                .unwrap_or("see the Validated condition")
        ),
    );
    let conditions = shown
        .conditions
        .iter()
        .flatten()
        .filter(|c| condition_types::PROVIDER_OWNED.contains(&c.type_.as_str()))
        .filter(|c| c.type_ != condition_types::READY)
        .map(|c| {
            DesiredCondition::new(
                c.type_.clone(),
                c.status == ConditionStatus::True,
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
        .collect();
    let mut status = ProviderStatus {
        phase: shown.phase.unwrap_or(Phase::Pending),
        message: not_ready.message.clone(),
        resource: shown
            .provider
            .as_ref()
            .and_then(|p| Some((p.resource_name.clone()?, p.resource_kind.clone()?))),
        replicas: shown.replicas.clone(),
        endpoint: shown.endpoint.clone(),
        workload: shown.workload.as_deref().cloned(),
        not_ready: None,
        conditions,
    };
    status.set_not_ready(not_ready);
    Some(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conditions::Progress;
    use serde_json::json;

    fn md(owner: &str) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns", "generation": 3,
                "managedFields": [{"manager": owner, "operation": "Apply", "subresource": "status",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:phase": {}, "f:message": {}}}}]},
            "spec": {"model": {"id": "a/b"}},
            "status": {
                "phase": "Running", "message": "Deployments created, pods are ready",
                "observedGeneration": 2,
                "provider": {"name": "vllm", "resourceName": "m", "resourceKind": "Deployment"},
                "replicas": {"desired": 1, "ready": 1, "available": 1},
                "conditions": [
                    {"type": "Validated", "status": "False", "reason": "ValidationFailed",
                     "message": "spec.resources.gpu.count: must be at least 1", "observedGeneration": 3,
                     "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    {"type": "Ready", "status": "True", "reason": "DeploymentReady",
                     "message": "All replicas are ready", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    {"type": "ResourceCreated", "status": "True", "reason": "ResourceCreated",
                     "message": "Deployment created successfully", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                ]
            },
        }))
        .unwrap()
    }

    #[test]
    fn a_refused_generation_is_stalled_with_the_validation_message_and_the_old_one_serving() {
        let status = status(&md("vllm-provider"), "vllm-provider").unwrap();
        assert_eq!(status.phase, Phase::Running);
        assert!(!status.is_ready());
        let not_ready = status.not_ready.clone().unwrap();
        assert_eq!(not_ready.reason, NotReadyReason::ValidationFailed);
        assert_eq!(
            not_ready.message,
            "Generation 3 is not deployed: spec.resources.gpu.count: must be at least 1; the previous generation keeps serving"
        );
        assert!(matches!(
            status.progress(),
            Progress::Stalled { ref reason, .. } if reason == "ValidationFailed"
        ));
        // The provider's other conditions stay as shown.
        assert!(
            status
                .conditions
                .iter()
                .any(|c| c.type_ == condition_types::RESOURCE_CREATED
                    && c.status == ConditionStatus::True)
        );
        // Written once: the status it leads to gives the same status.
        let mut written = md("vllm-provider");
        let body = status.patch(
            &written,
            &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
        );
        let mut shown = serde_json::to_value(written.status.clone().unwrap()).unwrap();
        for key in ["phase", "message", "observedGeneration", "notReady"] {
            shown[key] = body["status"][key].clone();
        }
        written.status = Some(serde_json::from_value(shown).unwrap());
        assert_eq!(
            super::status(&written, "vllm-provider").unwrap().not_ready,
            status.not_ready
        );
        // observedGeneration becomes the deployment's generation.
        let patch = status.patch(
            &md("vllm-provider"),
            &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
        );
        assert_eq!(patch["status"]["observedGeneration"], 3);
        assert_eq!(patch["status"]["notReady"]["reason"], "ValidationFailed");
    }

    #[test]
    fn nothing_while_the_core_holds_the_phase() {
        assert!(status(&md("airunway-core"), "vllm-provider").is_none());
    }
}
