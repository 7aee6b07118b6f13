//! The provider reconcile: observe (the watch caches, [`Provider::prepare`]'s I/O) →
//! [`triage`](super::plan::triage) → [`plan`](super::plan::plan) (pure, the function the
//! offline [`cycle`](super::cycle) runs too) → act (fresh reads when the plan asks to confirm
//! a cache entry, then server-side applies and deletions only where the plan says) → report
//! ([`plan::report`], the status written only when it changed). Nothing is polled: a change of
//! the deployment or of its objects (status written by the upstream operator, an edit, a
//! deletion) wakes the reconcile.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::api::{DynamicObject, PatchParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use tracing::Instrument;

use super::HeldDeployment;
use super::checked_render;
use super::context::Context;
use super::desired::ProviderStatus;
use super::dry_run;
use super::error::{ReconcileError, api_error};
use super::finalizer;
use super::kinds::KindId;
use super::plan::{self, Observed, Plan, Rollout, Seen, Triage, Write};
use super::preparation;
use super::rendered::RenderWarning;
use super::staleness;
use super::status_write;
use super::statuses::{self, Hold};
use super::storage_gate;
use super::traits::{PreparationHold, Provider};
use crate::apply_body;
use crate::constants::{event_actions, event_reasons, traces};
use crate::kube_error::{self, ErrorClass};
use crate::metric_names::apply_results;
use crate::runtime::trace_context;
use crate::v1alpha1::ModelDeployment;

/// How long a reconcile waits for the upstream watch's first listing before trying later.
const CACHE_SYNC_WAIT: Duration = Duration::from_secs(10);

/// Reconciles one ModelDeployment for this provider, in a span of its own (one trace per
/// reconcile) linked to the core's decision the deployment carries (docs/observability.md
/// "Traces").
pub async fn reconcile<P: Provider>(
    md: Arc<ModelDeployment>,
    ctx: Arc<Context<P>>,
) -> Result<Action, ReconcileError> {
    let span = tracing::info_span!(traces::RECONCILE_SPAN);
    trace_context::record(&span, traces::COMPONENT, ctx.provider.name());
    if let (Some(namespace), Some(name)) = (md.namespace(), md.metadata.name.as_deref()) {
        trace_context::record(&span, traces::DEPLOYMENT, format!("{namespace}/{name}"));
    }
    trace_context::link_to_decision(&span, &md);
    reconcile_deployment(md, ctx).instrument(span).await
}

/// [`reconcile`] of a deployment as the watch cache holds it (decoded here, once).
pub(super) async fn reconcile_held<P: Provider>(
    held: Arc<HeldDeployment>,
    ctx: Arc<Context<P>>,
) -> Result<Action, ReconcileError> {
    let md = held
        .decode()
        .map_err(|e| ReconcileError::Decode(e.to_string()))?;
    reconcile(Arc::new(md), ctx).await
}

async fn reconcile_deployment<P: Provider>(
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
    if result.is_ok() {
        ctx.failures
            .succeeded(md.metadata.uid.as_deref().unwrap_or_default());
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
        Triage::AwaitValidSpec => {
            // Nothing is deployed for a refused generation; once the provider holds the
            // phase it still says it saw it (kstatus: Failed, not InProgress for good).
            if let Some(status) = super::invalid_generation::status(md, &ctx.manager()) {
                status_write::write(md, ctx, &status).await?;
            }
            Ok(Action::await_change())
        }
        Triage::Deploy => {
            finalizer::forget_move(md, ctx);
            deploy(md, ctx, &namespace).await
        }
    }
}

/// A deployment to deploy: its runtime configuration applied (or a wait for it, see
/// [`super::runtime_configs::effective`]), observe → [`plan::plan`] (pure; once more after
/// confirming what the caches suggest with fresh reads) → [`act`].
async fn deploy<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    namespace: &str,
) -> Result<Action, ReconcileError> {
    let effective = match ctx.runtime_configs.effective(md) {
        Ok(effective) => effective,
        Err(wait) => return act(md, ctx, namespace, Plan::AwaitRuntimeConfig(wait)).await,
    };
    let (md, prepare_hold) = prepare(&effective.deployment, ctx).await?;
    let detection = ctx.detection();
    if dry_run::requested(&md) {
        // A preview: rendered and checked, nothing applied, pruned or recreated upstream.
        let checked = checked_render::checked_render(
            ctx.provider.as_ref(),
            &md,
            &effective.propagated_labels,
            &detection,
            &ctx.pod_security,
        );
        let decision = dry_run::decide(ctx.provider.as_ref(), &md, prepare_hold.as_ref(), checked);
        return dry_run::act(&md, ctx, namespace, decision).await;
    }
    dry_run::remove_preview(&md, ctx, namespace).await?;
    let mut objects: Vec<Seen> = ctx
        .observed(&md)
        .into_iter()
        .map(|(kind, object)| Seen::cached(kind, object))
        .collect();
    let observe = |objects: &[Seen]| {
        plan::plan(
            ctx.provider.as_ref(),
            &Observed {
                deployment: &md,
                propagated: &effective.propagated_labels,
                detection: &detection,
                policy: &ctx.pod_security,
                kinds: ctx.kinds.table(),
                prepare_hold: prepare_hold.as_ref(),
                objects,
                authoritative: false,
            },
        )
    };
    let mut planned = observe(&objects);
    if let Plan::Confirm(unconfirmed) = &planned {
        for (kind, name) in unconfirmed {
            let fresh = ctx
                .api(*kind, namespace)?
                .get_opt(name)
                .await
                .map_err(api_error(format!(
                    "reading {} {namespace}/{name}",
                    ctx.kinds.kind(*kind)?.kind
                )))?;
            objects.push(Seen::fresh(*kind, name.clone(), fresh.map(Arc::new)));
        }
        planned = observe(&objects);
    }
    act(&md, ctx, namespace, planned).await
}

/// [`Provider::prepare`]'s I/O for a compatible deployment: its status fields and conditions
/// written, and the deployment as the render sees it, with the hold if any.
async fn prepare<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
) -> Result<(ModelDeployment, Option<PreparationHold>), ReconcileError> {
    let provider = ctx.provider.as_ref();
    // Nothing to prepare for a deployment that is not rendered: incompatible, or waiting for
    // its storage (the plan holds it either way).
    if provider.check_compatibility(md).is_err()
        || storage_gate::gate(md) != storage_gate::StorageGate::Open
    {
        return Ok((md.clone(), None));
    }
    let preparation = provider.prepare(md).await;
    preparation::write(md, ctx, &preparation).await?;
    Ok((
        preparation::with_status(md, &preparation),
        preparation.hold.clone(),
    ))
}

/// Carries out `plan`: writes the hold's status, waits, deletes for a recreation, or rolls
/// out and reports.
async fn act<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    namespace: &str,
    plan: Plan,
) -> Result<Action, ReconcileError> {
    match plan {
        // The watch reports the deletion; the timer is only a safety net. (A second
        // confirmation cannot be asked for: fresh reads are not confirmed again.)
        Plan::AwaitDeletion | Plan::Confirm(_) => Ok(Action::requeue(ctx.resync)),
        // An event of the config (the cache catching up) or of the deployment (the core
        // publishing the new hash) wakes it; the timer is only a safety net.
        Plan::AwaitRuntimeConfig(wait) => {
            tracing::debug!(object = %md.name_any(), reason = wait.category(), %wait, "waiting for the published runtime configuration");
            Ok(Action::requeue(ctx.resync))
        }
        Plan::Hold(Hold { cause, status }) => {
            if let Some(category) = cause.error_category() {
                ctx.metrics.error(category);
            }
            status_write::write(md, ctx, &status).await?;
            Ok(Action::requeue(ctx.resync))
        }
        Plan::Recreate { objects, status } => {
            for (kind, kind_name, name) in &objects {
                ctx.events
                    .normal(&md.object_ref(&()), event_reasons::RESOURCE_RECREATED, event_actions::RECREATE,
                        format!("Deleting {kind_name} '{name}' to recreate it: an identity field (model.id, model.source, engine.type, provider.name or serving.mode) changed"))
                    .await;
                ctx.delete_object(*kind, namespace, name).await?;
            }
            status_write::write(md, ctx, &status).await?;
            Ok(Action::requeue(ctx.resync))
        }
        Plan::Apply(rollout) => roll_out(md, ctx, namespace, rollout).await,
    }
}

/// Deletes the objects of an old shape, applies what the rollout says, then writes the status
/// [`plan::report`] derives from the objects as applied.
async fn roll_out<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    namespace: &str,
    rollout: Rollout,
) -> Result<Action, ReconcileError> {
    let provider = ctx.provider.as_ref();
    publish_render_warnings(md, ctx, &rollout.warnings).await;
    let reference = md.object_ref(&());
    for (kind, name) in &rollout.prune {
        let kind_name = ctx.kinds.kind(*kind)?.kind.clone();
        ctx.delete_object(*kind, namespace, name).await?;
        ctx.events
            .normal(
                &reference,
                event_reasons::RESOURCE_DELETED,
                event_actions::DELETE,
                format!("Deleted {kind_name} '{name}': the deployment no longer needs it"),
            )
            .await;
    }
    let desired = rollout.desired();
    let mut live: Vec<Option<Arc<DynamicObject>>> = Vec::with_capacity(rollout.steps.len());
    for step in rollout.steps {
        let (kind, object) = (step.desired.kind(), step.desired.name());
        let (creating, drifted) = match step.write {
            Write::Create => (true, false),
            Write::Update { drifted } => (false, drifted),
            Write::InSync => {
                ctx.metrics.applied(kind, apply_results::UNCHANGED);
                live.push(step.live);
                continue;
            }
        };
        if drifted {
            ctx.events
                .warning(&reference, event_reasons::DRIFT_DETECTED, event_actions::RECONCILE,
                    format!("Provider resource was modified directly, reconciling ({kind} '{object}' is restored from the ModelDeployment)"))
                .await;
        }
        let apply_span = tracing::info_span!(traces::APPLY_SPAN);
        trace_context::record(&apply_span, traces::UPSTREAM_KIND, kind);
        trace_context::record(&apply_span, traces::UPSTREAM_NAME, object);
        trace_context::record(
            &apply_span,
            traces::UPSTREAM_WRITE,
            if creating {
                traces::WRITE_CREATE
            } else {
                traces::WRITE_UPDATE
            },
        );
        let applied = ctx
            .api(step.kind, namespace)?
            .patch(
                object,
                &PatchParams::apply(&ctx.manager())
                    .force()
                    .validation_strict(),
                &apply_body::apply(&step.desired.object),
            )
            .instrument(apply_span)
            .await;
        ctx.metrics.applied(
            kind,
            match applied {
                Ok(_) => apply_results::APPLIED,
                Err(_) => apply_results::ERROR,
            },
        );
        match applied {
            Ok(mut applied) => {
                if creating {
                    ctx.events
                        .normal(
                            &reference,
                            event_reasons::RESOURCE_CREATED,
                            event_actions::CREATE,
                            format!("Created {kind} '{object}'"),
                        )
                        .await;
                }
                staleness::keep_update_times(&mut applied.metadata, &ctx.manager());
                ctx.kinds.cache(step.kind)?.remember(applied.clone());
                live.push(Some(Arc::new(applied)));
            }
            Err(error) => {
                if let Some(fields) = kube_error::undeclared_fields(&error) {
                    let upstream = ctx.kinds.kind(step.kind)?;
                    let api_version = match ctx.detection().schema() {
                        Some(schema) if step.kind == KindId::PRIMARY => schema.api_version.clone(),
                        _ => upstream.api_version(&upstream.default_version),
                    };
                    let refused = statuses::RefusedObject {
                        kind,
                        api_version: &api_version,
                        name: object,
                        from_crd: upstream.from_crd,
                    };
                    tracing::warn!(object = %format!("{namespace}/{object}"), %kind, ?fields, error = %kube_error::message(&error), "the installed upstream schema does not declare a field of the rendered object");
                    let status = statuses::incompatible_upstream(provider, refused, &fields);
                    incompatible_upstream(md, ctx, &status, &fields).await?;
                    return Ok(Action::requeue(ctx.resync));
                }
                let Some(status) = apply_refused(provider, kind, object, &error) else {
                    return Err(api_error(format!("applying {kind} {namespace}/{object}"))(
                        error,
                    ));
                };
                if ErrorClass::of(&error) == ErrorClass::Rejected {
                    ctx.metrics.error("apply_rejected");
                }
                status_write::write(md, ctx, &status).await?;
                return Ok(Action::requeue(ctx.resync));
            }
        }
    }
    let live: Vec<Option<&DynamicObject>> = live.iter().map(Option::as_deref).collect();
    let now = jiff::Timestamp::now();
    let pods = ctx.pods_in(namespace);
    let pods: Vec<&k8s_openapi::api::core::v1::Pod> = pods.iter().map(Arc::as_ref).collect();
    let report = plan::report(
        provider,
        md,
        ctx.kinds.table(),
        &desired,
        &live,
        &pods,
        now,
        ctx.stale_threshold,
    );
    status_write::write(md, ctx, &report.status).await?;
    Ok(Action::requeue(report.requeue_after(now, ctx.resync)))
}

/// Shows a strict-write refusal of `fields` ([`statuses::incompatible_upstream`]): counted, the
/// status written and, when the deployment did not show it already, a Warning event naming the
/// fields. The same refusal again writes nothing, also when the API server names only some of
/// the fields shown (the reconcile then waits for a change of the deployment or of the upstream
/// schema, or the resync).
async fn incompatible_upstream<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    status: &ProviderStatus,
    fields: &[String],
) -> Result<(), ReconcileError> {
    ctx.metrics.error("incompatible_upstream");
    if status.is_current(md, &ctx.manager()) || statuses::shows_incompatible_upstream(md, fields) {
        return Ok(());
    }
    status_write::write(md, ctx, status).await?;
    ctx.events
        .warning(
            &md.object_ref(&()),
            event_reasons::INCOMPATIBLE_UPSTREAM,
            event_actions::RECONCILE,
            status.message.clone(),
        )
        .await;
    Ok(())
}

/// The status for an apply the API server refused for good: the CRD went away after
/// detection (404), or the object is invalid (another 4xx). `None`: retry with backoff
/// (conflicts, throttling, not-yet-granted RBAC, server and transport failures).
fn apply_refused<P: Provider>(
    provider: &P,
    kind: &str,
    object: &str,
    error: &kube::Error,
) -> Option<ProviderStatus> {
    let kube::Error::Api(status) = error else {
        return None;
    };
    match ErrorClass::of(error) {
        ErrorClass::NotFound => Some(statuses::crd_gone(provider, &status.message)),
        ErrorClass::Rejected => Some(statuses::apply_rejected(
            provider,
            kind,
            object,
            &status.message,
        )),
        _ => None,
    }
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
                event_actions::RENDER,
                warning.message.clone(),
            )
            .await;
    }
}

/// Counts the error; a transient one is retried with backoff (5 s, doubling to 60 s), any
/// other (an invalid object) waits for a change of the deployment. Reads only the cached
/// deployment's identity.
pub(super) fn error_policy<P: Provider>(
    held: Arc<HeldDeployment>,
    error: &ReconcileError,
    ctx: Arc<Context<P>>,
) -> Action {
    ctx.metrics.error(error.category());
    let meta = held.meta();
    let object = meta.name.as_deref().unwrap_or_default();
    tracing::warn!(error = %error, category = error.category(), object, "reconcile failed");
    if !error.is_transient() {
        return Action::await_change();
    }
    Action::requeue(ctx.failures.failed(meta.uid.as_deref().unwrap_or_default()))
}
