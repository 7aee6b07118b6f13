//! Writing the provider-owned status of a deployment: only when it differs from what the
//! deployment shows, with events for the transitions a user should hear about.

use crate::apply_body;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, PatchParams};
use kube::{Resource, ResourceExt};

use super::context::Context;
use super::desired::ProviderStatus;
use super::error::{ReconcileError, api_error};
use super::traits::Provider;
use crate::conditions;
use crate::constants::{condition_types, event_actions, event_reasons};
use crate::v1alpha1::{ConditionStatus, ModelDeployment, Phase};

/// Applies `status` (server-side apply, manager `<name>-provider`) unless the deployment shows
/// it already.
pub(super) async fn write<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    status: &ProviderStatus,
) -> Result<(), ReconcileError> {
    let manager = ctx.manager();
    if status.is_current(md, &manager) {
        return Ok(());
    }
    let name = md.name_any();
    let api: Api<ModelDeployment> =
        Api::namespaced(ctx.client.clone(), &md.namespace().unwrap_or_default());
    let body = status.patch(md, &Time(jiff::Timestamp::now()));
    let written = api
        .patch_status(
            &name,
            &PatchParams::apply(&manager).force(),
            &apply_body::apply(&body),
        )
        .await
        .map_err(api_error(format!("writing the status of {name}")))?;
    ctx.recent.record(written);
    publish_transitions(md, ctx, status).await;
    Ok(())
}

/// `ProviderIncompatible` when compatibility turns false (or its message changes) and
/// `ProviderError` on entering `Failed`.
async fn publish_transitions<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    status: &ProviderStatus,
) {
    let reference = md.object_ref(&());
    let old = md.status.as_ref().and_then(|s| s.conditions.as_deref());
    if let Some(compatible) = status
        .conditions
        .iter()
        .find(|c| c.type_ == condition_types::PROVIDER_COMPATIBLE)
        && compatible.status == ConditionStatus::False
        && !conditions::find(old, condition_types::PROVIDER_COMPATIBLE).is_some_and(|c| {
            c.status == ConditionStatus::False
                && c.message.as_deref() == Some(compatible.message.as_str())
        })
    {
        ctx.events
            .warning(
                &reference,
                event_reasons::PROVIDER_INCOMPATIBLE,
                event_actions::CHECK_COMPATIBILITY,
                compatible.message.clone(),
            )
            .await;
    }
    if status.phase == Phase::Failed && md.phase() != Some(Phase::Failed) {
        ctx.events
            .warning(
                &reference,
                event_reasons::PROVIDER_ERROR,
                event_actions::RECONCILE,
                format!("Provider resource in error state: {}", status.message),
            )
            .await;
    }
}
