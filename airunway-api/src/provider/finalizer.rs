//! The provider's finalizer: added when a deployment is assigned, released once the upstream
//! object is gone (deletion, or the deployment moved to another provider), or after
//! `--finalizer-timeout` with a `FinalizerTimeout` event.

use std::time::{Duration, Instant};

use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::context::Context;
use super::error::{ReconcileError, api_error};
use super::traits::Provider;
use crate::apply_body;
use crate::constants::{event_actions, event_reasons};
use crate::v1alpha1::ModelDeployment;

/// The longest wait between two checks while an upstream object is being deleted (the watch
/// reports the deletion; this only bounds the finalizer timeout's lateness).
const CLEANUP_RECHECK: Duration = Duration::from_secs(30);

/// Adds the provider's finalizer (optimistic: fails if the list changed meanwhile); returns
/// the deployment as the API server stored it.
pub(super) async fn add_finalizer<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
) -> Result<ModelDeployment, ReconcileError> {
    let finalizer = ctx.finalizer();
    let name = md.name_any();
    let patch = match &md.metadata.finalizers {
        None => json!([{"op": "add", "path": "/metadata/finalizers", "value": [finalizer]}]),
        Some(current) => json!([
            {"op": "test", "path": "/metadata/finalizers", "value": current},
            {"op": "add", "path": "/metadata/finalizers/-", "value": finalizer},
        ]),
    };
    let patch: json_patch::Patch =
        serde_json::from_value(patch).map_err(|_| ReconcileError::Patch("the finalizer patch"))?;
    let mut updated = deployments(md, ctx)
        .patch(&name, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
        .map_err(api_error(format!("adding finalizer {finalizer} to {name}")))?;
    crate::cache_trim::keep_status_ownership(&mut updated.metadata);
    Ok(updated)
}

fn deployments<P: Provider>(md: &ModelDeployment, ctx: &Context<P>) -> Api<ModelDeployment> {
    Api::namespaced(ctx.client.clone(), &md.namespace().unwrap_or_default())
}

async fn remove_finalizer<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
) -> Result<(), ReconcileError> {
    let finalizer = ctx.finalizer();
    let name = md.name_any();
    let current = md.metadata.finalizers.clone().unwrap_or_default();
    let kept: Vec<&String> = current.iter().filter(|f| **f != finalizer).collect();
    let patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/finalizers", "value": current},
        {"op": "replace", "path": "/metadata/finalizers", "value": kept},
    ]))
    .map_err(|_| ReconcileError::Patch("the finalizer patch"))?;
    match deployments(md, ctx)
        .patch(&name, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(api_error(format!(
            "removing finalizer {finalizer} from {name}"
        ))(e)),
    }
}

/// A deployment being deleted: clean up within `--finalizer-timeout` of the deletion.
pub(super) async fn on_delete<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
) -> Result<Action, ReconcileError> {
    let since = md
        .metadata
        .deletion_timestamp
        .as_ref()
        .map(|t| t.0)
        .unwrap_or_else(jiff::Timestamp::now);
    // `deletionTimestamp` has second precision: count from the end of that second, so the
    // timeout never releases early.
    let elapsed = jiff::Timestamp::now()
        .duration_since(since)
        .checked_sub(jiff::SignedDuration::from_secs(1))
        .filter(|d| d.is_positive())
        .map(|d| d.unsigned_abs())
        .unwrap_or_default();
    cleanup(md, ctx, elapsed, false).await
}

/// A deployment now assigned to another provider: clean up within `--finalizer-timeout` of
/// first noticing.
pub(super) async fn on_moved_away<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
) -> Result<Action, ReconcileError> {
    let first_seen = {
        // The map stays consistent whatever panicked while holding it.
        let mut moved = ctx
            .moved_since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *moved
            .entry(md.metadata.uid.clone().unwrap_or_default())
            .or_insert_with(Instant::now)
    };
    cleanup(md, ctx, first_seen.elapsed(), true).await
}

/// Drops the move bookkeeping of a deployment assigned to this provider again.
pub(super) fn forget_move<P: Provider>(md: &ModelDeployment, ctx: &Context<P>) {
    if let Ok(mut moved) = ctx.moved_since.lock() {
        moved.remove(md.metadata.uid.as_deref().unwrap_or_default());
    }
}

/// Deletes the upstream object and releases the finalizer once it is gone (or on timeout:
/// `elapsed` since the cleanup started). `moved`: also release our status fields.
async fn cleanup<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    elapsed: Duration,
    moved: bool,
) -> Result<Action, ReconcileError> {
    let name = md.name_any();
    let namespace = md.namespace().unwrap_or_default();
    let kind = ctx.kinds.table().primary().kind.clone();
    for (id, live) in ctx.owned_objects(md) {
        if live.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let object = live.name_any();
        // A failure (the CRD gone, say) is retried until the finalizer timeout.
        if let Err(e) = ctx.delete_object(id, &namespace, &object).await {
            tracing::warn!(error = %e, "cleaning up {namespace}/{name}");
        }
    }
    // What the upstream operator created from them: deleted once, not waited for.
    for object in ctx.provider.created_upstream(md) {
        if let Err(e) = ctx
            .delete_object(super::kinds::KindId::PRIMARY, &namespace, &object)
            .await
        {
            tracing::warn!(error = %e, "cleaning up {namespace}/{object} created for {name}");
        }
    }
    // The caches say gone: confirm on a fresh read before releasing (a watch re-listing after
    // its CRD was re-created can miss an object that is still there), deleting what they missed.
    let mut gone = ctx.owned_objects(md).is_empty();
    if gone {
        match ctx.owned_objects_live(md).await {
            Ok(missed) => {
                for (id, live) in &missed {
                    if live.metadata.deletion_timestamp.is_none() {
                        ctx.delete_object(*id, &namespace, &live.name_any()).await?;
                    }
                }
                gone = missed.is_empty();
            }
            // Past the timeout a failed read does not hold the deployment any longer.
            Err(e) if elapsed >= ctx.finalizer_timeout => {
                tracing::warn!(error = %e, "confirming the clean-up of {namespace}/{name}");
            }
            Err(e) => return Err(e),
        }
    }
    if !gone && elapsed < ctx.finalizer_timeout {
        let remaining = ctx.finalizer_timeout - elapsed;
        return Ok(Action::requeue(remaining.min(CLEANUP_RECHECK)));
    }
    if !gone {
        tracing::warn!(object = %format!("{namespace}/{name}"), %kind, "finalizer timeout: the upstream object was not deleted and may be orphaned; delete it by hand");
        ctx.events
            .warning(&md.object_ref(&()), event_reasons::FINALIZER_TIMEOUT, event_actions::CLEANUP,
                format!("Finalizer removed after timeout, provider resource may be orphaned ({kind} '{name}')"))
            .await;
    }
    if moved {
        // Hand our status fields over: an empty apply drops what this manager owns.
        let body = json!({"apiVersion": crate::constants::API_VERSION, "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": namespace}, "status": {}});
        if let Err(e) = deployments(md, ctx)
            .patch_status(
                &name,
                &PatchParams::apply(&ctx.manager()).force(),
                &apply_body::apply(&body),
            )
            .await
        {
            tracing::warn!(error = %e, "releasing status fields of {namespace}/{name}");
        }
    }
    remove_finalizer(md, ctx).await?;
    forget_move(md, ctx);
    ctx.recent.forget(md);
    if let Ok(mut warned) = ctx.warned.lock() {
        warned.remove(md.metadata.uid.as_deref().unwrap_or_default());
    }
    Ok(Action::await_change())
}
