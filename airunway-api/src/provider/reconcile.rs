//! The provider reconcile: fetch (watch caches) → [`triage`](super::plan::triage) →
//! [`plan`](super::plan::plan) (pure) → apply the upstream object only when the plan says so
//! (server-side apply) → write the provider-owned status only when it changed. Every read comes
//! from the watch caches; nothing is polled: a change of the deployment or of its upstream
//! object (status written by the upstream operator, an edit, a deletion) wakes the reconcile.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::api::{DynamicObject, PatchParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};

use super::context::Context;
use super::desired::DesiredUpstream;
use super::error::{ReconcileError, api_error};
use super::finalizer;
use super::kinds::KindId;
use super::plan::{self, ObjectPlan, Plan, Triage};
use super::staleness;
use super::status_write;
use super::traits::{Provider, RenderWarning};
use crate::apply_body;
use crate::constants::event_reasons;
use crate::v1alpha1::ModelDeployment;

/// How long a reconcile waits for the upstream watch's first listing before trying later.
const CACHE_SYNC_WAIT: Duration = Duration::from_secs(10);

/// Reconciles one ModelDeployment for this provider.
pub async fn reconcile<P: Provider>(
    md: Arc<ModelDeployment>,
    ctx: Arc<Context<P>>,
) -> Result<Action, ReconcileError> {
    let started = Instant::now();
    // Until the upstream watch has listed everything once, "not in the cache" proves nothing
    // (a restarted provider would re-create or release what exists).
    // Without a usable upstream kind there is nothing to list (and nothing to wait for).
    if ctx.detection().schema().is_some() && !ctx.caches_ready(CACHE_SYNC_WAIT).await {
        return Ok(Action::requeue(CACHE_SYNC_WAIT));
    }
    let md = ctx.recent.newest(md);
    let result = reconcile_inner(&md, &ctx).await;
    ctx.metrics.observe(started.elapsed());
    if result.is_ok()
        && let Ok(mut failures) = ctx.failures.lock()
    {
        failures.remove(md.metadata.uid.as_deref().unwrap_or_default());
    }
    result
}

async fn reconcile_inner<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
) -> Result<Action, ReconcileError> {
    let namespace = md
        .namespace()
        .ok_or(ReconcileError::MissingField("metadata.namespace"))?;
    if md.metadata.name.is_none() {
        return Err(ReconcileError::MissingField("metadata.name"));
    }
    match plan::triage(md, ctx.provider.name()) {
        Triage::Ignore | Triage::Paused => Ok(Action::await_change()),
        Triage::Delete => finalizer::on_delete(md, ctx).await,
        Triage::MovedAway => finalizer::on_moved_away(md, ctx).await,
        Triage::AddFinalizer => {
            // Deploy in the same pass, from the deployment as the API server returned it.
            let md = finalizer::add_finalizer(md, ctx).await?;
            ctx.recent.record(md.clone());
            if plan::triage(&md, ctx.provider.name()) == Triage::Deploy {
                deploy(&md, ctx, &namespace).await
            } else {
                Ok(Action::await_change())
            }
        }
        Triage::AwaitValidSpec => Ok(Action::await_change()),
        Triage::Deploy => {
            finalizer::forget_move(md, ctx);
            deploy(md, ctx, &namespace).await
        }
    }
}

/// Event reason: an object of an old shape (e.g. the aggregated Deployment after a switch to
/// disaggregated serving) was deleted.
const RESOURCE_DELETED: &str = "ResourceDeleted";

/// Carries out the plan for a deployment to deploy: [`plan::prepare`], then
/// [`plan::compare_object`] for every object of the set, then the writes.
async fn deploy<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    namespace: &str,
) -> Result<Action, ReconcileError> {
    let provider = ctx.provider.as_ref();
    let detection = ctx.detection();
    // The provider's I/O before the render (e.g. an image resolved to a digest), for a
    // compatible deployment: written to the status, and seen by the render.
    let with_preparation;
    let md = if provider.check_compatibility(md).is_ok() {
        let preparation = provider.prepare(md).await;
        super::preparation::write(md, ctx, &preparation).await?;
        if let Some(message) = &preparation.hold {
            ctx.metrics.error("prepare");
            status_write::write(md, ctx, &super::preparation::held(provider, message)).await?;
            return Ok(Action::requeue(ctx.resync));
        }
        with_preparation = super::preparation::with_status(md, &preparation);
        &with_preparation
    } else {
        md
    };
    let prepared = match plan::prepare_with(provider, md, &detection, &ctx.pod_security) {
        Ok(prepared) => prepared,
        Err(held) => {
            if let Plan::Hold { cause, status } = *held {
                if let Some(category) = cause.error_category() {
                    ctx.metrics.error(category);
                }
                status_write::write(md, ctx, &status).await?;
            }
            return Ok(Action::requeue(ctx.resync));
        }
    };
    let mut objects: Vec<(KindId, &DesiredUpstream, ObjectPlan)> = Vec::new();
    for desired in &prepared.desired {
        let Some(id) = ctx.kinds.table().id_of(desired) else {
            ctx.metrics.error("unsupported");
            let message = format!(
                "{} rendered a {} {}, a kind it does not declare",
                provider.display_name(),
                desired.kind(),
                desired.name()
            );
            status_write::write(
                md,
                ctx,
                &plan::apply_rejected(provider, desired.kind(), desired.name(), &message),
            )
            .await?;
            return Ok(Action::requeue(ctx.resync));
        };
        let object = desired.name();
        let mut step = plan::compare_object(
            md,
            desired,
            ctx.kinds.cache(id)?.get(namespace, object).as_deref(),
        );
        // What the watch cache suggests is confirmed on a fresh read before acting on it:
        // - missing: the watch sees only objects we label, so before creating, make sure no
        //   object of that name exists (a user's would be taken over by the forced apply);
        // - drifted: the cache lags behind the API server after a watch broke (an API server
        //   restart, a relist with backoff), and a lagging cache must cost one read, not a false
        //   `DriftDetected` warning and an apply.
        if matches!(
            step,
            ObjectPlan::Create | ObjectPlan::Update { drifted: true }
        ) {
            let kind = desired.kind();
            let fresh = ctx
                .api(id, namespace)?
                .get_opt(object)
                .await
                .map_err(api_error(format!("reading {kind} {namespace}/{object}")))?;
            step = plan::compare_object(md, desired, fresh.as_ref());
        }
        objects.push((id, desired, step));
    }
    if let Some(message) = objects.iter().find_map(|(_, _, step)| match step {
        ObjectPlan::NotOwned(message) => Some(message.clone()),
        _ => None,
    }) {
        ctx.metrics.error("not_owned");
        status_write::write(md, ctx, &plan::not_owned(provider, message)).await?;
        return Ok(Action::requeue(ctx.resync));
    }
    if objects
        .iter()
        .any(|(_, _, step)| *step == ObjectPlan::AwaitDeletion)
    {
        // The watch reports the deletion; the timer is only a safety net.
        return Ok(Action::requeue(ctx.resync));
    }
    let recreated: Vec<&(KindId, &DesiredUpstream, ObjectPlan)> = objects
        .iter()
        .filter(|(_, _, step)| *step == ObjectPlan::Recreate)
        .collect();
    if let Some((_, first, _)) = recreated.first() {
        for (id, desired, _) in &recreated {
            recreate(md, ctx, *id, namespace, desired.name()).await?;
        }
        let status = plan::recreating(provider, first.kind(), first.name());
        status_write::write(md, ctx, &status).await?;
        return Ok(Action::requeue(ctx.resync));
    }
    publish_render_warnings(md, ctx, &prepared.warnings).await;
    if ctx.kinds.table().has_secondary() {
        prune(md, ctx, &objects).await?;
    }
    let reference = md.object_ref(&());
    let mut live: Vec<Option<Arc<DynamicObject>>> = Vec::new();
    for (id, desired, step) in &objects {
        let cache = ctx.kinds.cache(*id)?;
        let (kind, object) = (desired.kind(), desired.name());
        let (creating, drifted) = match step {
            ObjectPlan::Create => (true, false),
            ObjectPlan::Update { drifted } => (false, *drifted),
            _ => {
                live.push(cache.get(namespace, object));
                continue;
            }
        };
        if drifted {
            ctx.events
                .warning(&reference, event_reasons::DRIFT_DETECTED, "Reconcile",
                    format!("Provider resource was modified directly, reconciling ({kind} '{object}' is restored from the ModelDeployment)"))
                .await;
        }
        match ctx
            .api(*id, namespace)?
            .patch(
                object,
                &PatchParams::apply(&ctx.manager()).force(),
                &apply_body::apply(&desired.object),
            )
            .await
        {
            Ok(mut applied) => {
                if creating {
                    ctx.events
                        .normal(
                            &reference,
                            event_reasons::RESOURCE_CREATED,
                            "Create",
                            format!("Created {kind} '{object}'"),
                        )
                        .await;
                }
                super::staleness::keep_update_times(&mut applied.metadata, &ctx.manager());
                cache.remember(applied.clone());
                live.push(Some(Arc::new(applied)));
            }
            // The CRD went away after detection.
            Err(kube::Error::Api(status)) if status.code == 404 => {
                status_write::write(md, ctx, &plan::crd_gone(provider, &status.message)).await?;
                return Ok(Action::requeue(ctx.resync));
            }
            // Conflicts, throttling and not-yet-granted RBAC pass: retry with backoff.
            Err(kube::Error::Api(status))
                if (400..500).contains(&status.code) && !matches!(status.code, 403 | 409 | 429) =>
            {
                ctx.metrics.error("apply_rejected");
                let status = plan::apply_rejected(provider, kind, object, &status.message);
                status_write::write(md, ctx, &status).await?;
                return Ok(Action::requeue(ctx.resync));
            }
            Err(e) => {
                return Err(api_error(format!("applying {kind} {namespace}/{object}"))(
                    e,
                ));
            }
        }
    }
    let live: Vec<Option<&DynamicObject>> = live.iter().map(Option::as_deref).collect();
    let mut status = plan::status_from_set(provider, md, &prepared.desired, &live);
    // Stale upstream status, judged on the primary object: the condition when stale (or once
    // was), and a look again exactly when a waiting object would turn stale.
    let now = jiff::Timestamp::now();
    let staleness = staleness::mark(
        &mut status,
        md,
        live.first()
            .copied()
            .flatten()
            .zip(
                objects
                    .first()
                    .and_then(|(id, ..)| ctx.kinds.kind(*id).ok()),
            )
            .map(|(primary, kind)| (primary, kind.from_crd)),
        &ctx.manager(),
        now,
        ctx.stale_threshold,
    );
    status_write::write(md, ctx, &status).await?;
    Ok(Action::requeue(staleness::requeue_after(
        &staleness, now, ctx.resync,
    )))
}

/// Deletes the objects this provider created for `md` that the render no longer produces (the
/// old shape after a change of serving mode), so none is left behind.
async fn prune<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    wanted: &[(KindId, &DesiredUpstream, ObjectPlan)],
) -> Result<(), ReconcileError> {
    let namespace = md.namespace().unwrap_or_default();
    let owned: Vec<(KindId, String)> = ctx
        .owned_objects(md)
        .into_iter()
        .filter(|(_, object)| object.metadata.deletion_timestamp.is_none())
        .map(|(id, object)| (id, object.name_any()))
        .collect();
    let wanted: Vec<(KindId, &str)> = wanted
        .iter()
        .map(|(id, desired, _)| (*id, desired.name()))
        .collect();
    for (id, name) in plan::stale(&wanted, &owned) {
        let (id, name) = (*id, name.as_str());
        let kind = ctx.kinds.kind(id)?.kind.clone();
        ctx.delete_object(id, &namespace, name).await?;
        ctx.events
            .normal(
                &md.object_ref(&()),
                RESOURCE_DELETED,
                "Delete",
                format!("Deleted {kind} '{name}': the deployment no longer needs it"),
            )
            .await;
    }
    Ok(())
}

/// Deletes a live object after an identity change (it is created anew once gone).
async fn recreate<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    id: KindId,
    namespace: &str,
    name: &str,
) -> Result<(), ReconcileError> {
    let kind = ctx.kinds.kind(id)?.kind.clone();
    ctx.events
        .normal(&md.object_ref(&()), event_reasons::RESOURCE_RECREATED, "Recreate",
            format!("Deleting {kind} '{name}' to recreate it: an identity field (model.id, model.source, engine.type, provider.name or serving.mode) changed"))
        .await;
    ctx.delete_object(id, namespace, name).await
}

async fn publish_render_warnings<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    warnings: &[RenderWarning],
) {
    if warnings.is_empty() {
        return;
    }
    let uid = md.metadata.uid.clone().unwrap_or_default();
    let generation = md.metadata.generation.unwrap_or_default();
    let fresh = ctx
        .warned
        .lock()
        .map(|mut w| w.insert(uid, generation) != Some(generation))
        .unwrap_or(true);
    if !fresh {
        return;
    }
    let reference = md.object_ref(&());
    for warning in warnings {
        ctx.events
            .warning(
                &reference,
                warning.reason,
                "Render",
                warning.message.clone(),
            )
            .await;
    }
}

/// The first retry of a failed reconcile; each further consecutive failure doubles it.
const RETRY_FIRST: Duration = Duration::from_secs(5);
/// The longest wait between retries of a failing reconcile.
const RETRY_MAX: Duration = Duration::from_secs(60);

/// The wait before retry `failures` (1: the first) of a transient failure.
pub(super) fn retry_after(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    RETRY_FIRST.saturating_mul(1 << doublings).min(RETRY_MAX)
}

/// Counts the error; a transient one is retried with backoff (5 s, doubling to 60 s), any
/// other (an invalid object) waits for a change of the deployment.
pub fn error_policy<P: Provider>(
    md: Arc<ModelDeployment>,
    error: &ReconcileError,
    ctx: Arc<Context<P>>,
) -> Action {
    ctx.metrics.error(error.category());
    tracing::warn!(error = %error, category = error.category(), object = %md.name_any(), "reconcile failed");
    if !error.is_transient() {
        return Action::await_change();
    }
    let failures = {
        let mut failures = ctx
            .failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = failures
            .entry(md.metadata.uid.clone().unwrap_or_default())
            .or_default();
        *count = count.saturating_add(1);
        *count
    };
    Action::requeue(retry_after(failures))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_failures_back_off_to_a_minute() {
        let waits: Vec<u64> = (1..=6).map(|n| retry_after(n).as_secs()).collect();
        assert_eq!(waits, [5, 10, 20, 40, 60, 60]);
        assert_eq!(retry_after(u32::MAX), RETRY_MAX);
    }
}
