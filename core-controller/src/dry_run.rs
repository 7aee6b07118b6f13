//! The core's side of a dry run (annotation `airunway.ai/dry-run: "true"`, docs/gitops.md): the
//! deployment is selected and validated as usual and its provider renders a preview, but the
//! core creates nothing for it either — no `ModelCache`, claim, download Job or autoscaler. Its
//! storage and autoscaling plans are still made (pure, from the watch caches); what they would
//! write is said in their conditions, with reason `DryRun`, instead of written.
//!
//! Pure: the callers ([`crate::model_cache::Integration::reconcile_deployment`],
//! [`crate::autoscaling::Integration::reconcile`]) skip their writes and return these.

use airunway_api::conditions::DesiredCondition;
use airunway_api::constants::{annotations, reasons};
use airunway_api::v1alpha1::ConditionStatus;

use crate::autoscaling::plan::{DesiredAutoscaling, Plan as AutoscalingPlan};
use crate::model_cache::adapters::AdapterPlan;
use crate::model_cache::deployment::StoragePlan;

/// The message of every condition a dry run holds back: what the core would write.
pub fn message(writes: &[String]) -> String {
    format!(
        "Dry run: the core creates nothing while the {} annotation is \"true\"; deployed, it would {}",
        annotations::DRY_RUN,
        writes.join(", ")
    )
}

/// The storage conditions of a dry run from the plans the core made for it: as planned when the
/// plans write nothing (the storage exists already: what the conditions say is true), else
/// each `False` with reason `DryRun` and [`message`] listing the writes held back.
pub fn storage_conditions(plan: StoragePlan, adapters: AdapterPlan) -> Vec<DesiredCondition> {
    let mut writes: Vec<String> = Vec::new();
    let named = |body: &serde_json::Value| {
        body["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    if let Some(name) = &plan.delete_cache {
        writes.push(format!("delete ModelCache '{name}'"));
    }
    if let Some(cache) = &plan.create_cache {
        writes.push(format!("create ModelCache '{}'", named(cache)));
    }
    for claim in &plan.create_claims {
        writes.push(format!("create PersistentVolumeClaim '{}'", named(claim)));
    }
    for name in &plan.delete_claims {
        writes.push(format!("delete PersistentVolumeClaim '{name}'"));
    }
    for (_, name, _) in &plan.relabel {
        writes.push(format!("update the labels of '{name}'"));
    }
    for cache in &adapters.create {
        writes.push(format!("create ModelCache '{}' (an adapter)", named(cache)));
    }
    let mut conditions = plan.conditions;
    conditions.extend(adapters.condition);
    if writes.is_empty() {
        return conditions;
    }
    let message = message(&writes);
    conditions
        .into_iter()
        .map(|c| DesiredCondition {
            status: ConditionStatus::False,
            reason: reasons::DRY_RUN.to_string(),
            message: message.clone(),
            ..c
        })
        .collect()
}

/// The autoscaling status of a dry run from the plan the core made for it: as planned when it
/// writes nothing, else `ScalingReady=False` and `ScalingActive=False` with reason `DryRun`
/// naming the autoscaler it would create or delete.
pub fn autoscaling(plan: AutoscalingPlan, name: &str) -> DesiredAutoscaling {
    let mut writes: Vec<String> = Vec::new();
    let mut kind = None;
    if let Some((apply, _)) = &plan.apply {
        kind = Some(*apply);
        writes.push(format!("apply {} '{name}'", apply.as_str()));
    }
    for delete in &plan.delete {
        writes.push(format!("delete {} '{name}'", delete.as_str()));
    }
    if writes.is_empty() {
        return plan.status;
    }
    DesiredAutoscaling::not_ready(kind, name, reasons::DRY_RUN, message(&writes))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::autoscaling::plan::Kind;
    use airunway_api::constants::condition_types;
    use serde_json::json;

    fn waiting() -> Vec<DesiredCondition> {
        vec![
            DesiredCondition::new(
                condition_types::STORAGE_READY,
                false,
                "PVCsPending",
                "Waiting for PVC 'c'",
            ),
            DesiredCondition::new(
                condition_types::MODEL_DOWNLOADED,
                false,
                "DownloadInProgress",
                "Waiting for the ModelCache 'c'",
            ),
        ]
    }

    #[test]
    fn held_back_storage_writes_are_named_in_every_condition() {
        let plan = StoragePlan {
            create_cache: Some(json!({"metadata": {"name": "qwen-1234"}})),
            conditions: waiting(),
            ..StoragePlan::default()
        };
        let conditions = storage_conditions(plan, AdapterPlan::default());
        assert_eq!(conditions.len(), 2);
        for condition in &conditions {
            assert_eq!(condition.status, ConditionStatus::False);
            assert_eq!(condition.reason, "DryRun");
            assert_eq!(
                condition.message,
                "Dry run: the core creates nothing while the airunway.ai/dry-run annotation is \"true\"; deployed, it would create ModelCache 'qwen-1234'"
            );
        }
        assert_eq!(conditions[0].type_, condition_types::STORAGE_READY);
        assert_eq!(conditions[1].type_, condition_types::MODEL_DOWNLOADED);
    }

    #[test]
    fn storage_that_exists_is_reported_as_it_is() {
        let ready = vec![DesiredCondition::new(
            condition_types::STORAGE_READY,
            true,
            "PVCsBound",
            "All PVCs are bound",
        )];
        let plan = StoragePlan {
            conditions: ready.clone(),
            ..StoragePlan::default()
        };
        assert_eq!(storage_conditions(plan, AdapterPlan::default()), ready);
    }

    #[test]
    fn an_autoscaler_to_apply_is_named_and_nothing_scales() {
        let plan = AutoscalingPlan {
            apply: Some((Kind::Hpa, json!({}))),
            ..AutoscalingPlan::default()
        };
        let status = autoscaling(plan, "m");
        assert_eq!(status.conditions.len(), 2);
        assert!(status.conditions.iter().all(|c| {
            c.reason == "DryRun"
                && c.status == ConditionStatus::False
                && c.message
                    .ends_with("it would apply HorizontalPodAutoscaler 'm'")
        }));
        let fields = status.fields.unwrap();
        assert_eq!(fields.kind.as_deref(), Some("HorizontalPodAutoscaler"));
        assert_eq!(fields.name.as_deref(), Some("m"));
    }

    #[test]
    fn nothing_to_write_keeps_the_planned_status() {
        let plan = AutoscalingPlan::default();
        assert_eq!(autoscaling(plan, "m"), DesiredAutoscaling::default());
    }
}
