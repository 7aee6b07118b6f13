//! The provider reconcile: fetch (watch caches) → [`triage`](super::plan::triage) →
//! [`plan`](super::plan::plan) (pure) → apply the upstream object only when the plan says so
//! (server-side apply) → write the provider-owned status only when it changed. Every read comes
//! from the watch caches; nothing is polled: a change of the deployment or of its upstream
//! object (status written by the upstream operator, an edit, a deletion) wakes the reconcile.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, PatchParams, PropagationPolicy};
use kube::runtime::controller::Action;
use kube::{Client, Resource, ResourceExt};

use super::cleanup;
use super::desired::DesiredUpstream;
use super::live::LiveObjects;
use super::plan::{self, ObjectPlan, Plan, Triage};
use super::recent::RecentDeployments;
use super::staleness;
use super::status_write;
use super::traits::{Provider, RenderWarning, SchemaDetection, UpstreamKind};
use crate::apply_body;
use crate::constants::{event_reasons, field_managers, finalizers};
use crate::runtime::EventPublisher;
use crate::v1alpha1::ModelDeployment;

/// How long a reconcile waits for the upstream watch's first listing before trying later.
const CACHE_SYNC_WAIT: Duration = Duration::from_secs(10);

/// A provider reconcile failure. [`category`](ReconcileError::category) labels metrics.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// An API call failed.
    #[error("{action}: {source}")]
    Api {
        /// What was being done.
        action: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// The object lacks a name or namespace.
    #[error("object without {0}")]
    MissingField(&'static str),
}

impl ReconcileError {
    /// A short, static label.
    pub fn category(&self) -> &'static str {
        match self {
            ReconcileError::Api {
                source: kube::Error::Api(s),
                ..
            } if s.code == 409 => "conflict",
            ReconcileError::Api {
                source: kube::Error::Api(s),
                ..
            } if s.code == 403 => "forbidden",
            ReconcileError::Api {
                source: kube::Error::Api(_),
                ..
            } => "api_error",
            ReconcileError::Api { .. } => "transport",
            ReconcileError::MissingField(_) => "invalid_object",
        }
    }
}

/// Wraps a [`kube::Error`] with what was being done.
pub(super) fn api_error(action: impl Into<String>) -> impl FnOnce(kube::Error) -> ReconcileError {
    let action = action.into();
    move |source| ReconcileError::Api { action, source }
}

/// Everything the reconcile needs.
pub struct Context<P: Provider> {
    /// The provider's pure functions.
    pub provider: Arc<P>,
    /// API client.
    pub client: Client,
    /// The upstream kind.
    pub upstream: UpstreamKind,
    /// The latest upstream detection (refreshed when the CRD changes).
    pub detection: Arc<RwLock<SchemaDetection>>,
    /// The upstream objects this provider manages, as its watch sees them (plus what it just
    /// applied and the watch has not delivered yet).
    pub live: LiveObjects,
    /// The provider's [secondary kinds](Provider::secondary_kinds), each with its own watch.
    pub secondary: Vec<(UpstreamKind, LiveObjects)>,
    /// Events.
    pub events: EventPublisher,
    /// `--finalizer-timeout`.
    pub finalizer_timeout: Duration,
    /// `--resync-interval`: a periodic re-check from the caches (no API call unless a write is
    /// due).
    pub resync: Duration,
    /// Metrics.
    pub metrics: super::metrics::ProviderMetrics,
    /// When each deployment that moved to another provider was first seen (cleanup timeout).
    pub moved_since: std::sync::Mutex<std::collections::HashMap<String, Instant>>,
    /// The generation whose render warnings were already published, per deployment.
    pub warned: std::sync::Mutex<std::collections::HashMap<String, i64>>,
    /// The deployments as this provider's own writes returned them (see [`RecentDeployments`]).
    pub recent: RecentDeployments,
    /// What rendered objects are checked against before they are applied.
    pub pod_security: crate::pod_security::Policy,
    /// `--stale-status-threshold` (see [`super::staleness`]).
    pub stale_threshold: Duration,
}

impl<P: Provider> Context<P> {
    /// Field manager `<name>-provider`.
    pub(super) fn manager(&self) -> String {
        field_managers::provider(self.provider.name())
    }

    /// Finalizer `airunway.ai/<name>-provider`.
    pub(super) fn finalizer(&self) -> String {
        finalizers::provider(self.provider.name())
    }

    /// The current detection.
    pub(super) fn detection(&self) -> SchemaDetection {
        self.detection
            .read()
            .map(|d| d.clone())
            .unwrap_or(SchemaDetection::NotEstablished {
                crd: self.upstream.crd_name(),
            })
    }

    /// The upstream API in `namespace`, for the detected version.
    pub(super) fn upstream_api(&self, namespace: &str) -> Api<DynamicObject> {
        let version = self
            .detection()
            .schema()
            .map(|s| s.version.clone())
            .unwrap_or_else(|| self.upstream.default_version.clone());
        let resource = ApiResource {
            group: self.upstream.group.clone(),
            version: version.clone(),
            api_version: self.upstream.api_version(&version),
            kind: self.upstream.kind.clone(),
            plural: self.upstream.plural.clone(),
        };
        Api::namespaced_with(self.client.clone(), namespace, &resource)
    }

    /// The cached upstream object `namespace/name`.
    pub(super) fn live(&self, namespace: &str, name: &str) -> Option<Arc<DynamicObject>> {
        self.live.get(namespace, name)
    }

    /// Kind `index`: 0 the upstream kind, then the secondary kinds.
    pub(super) fn kind(&self, index: usize) -> &UpstreamKind {
        match index.checked_sub(1) {
            None => &self.upstream,
            Some(i) => self
                .secondary
                .get(i)
                .map(|(k, _)| k)
                .unwrap_or(&self.upstream),
        }
    }

    /// The cache of kind `index`.
    pub(super) fn cache(&self, index: usize) -> &LiveObjects {
        match index.checked_sub(1) {
            None => &self.live,
            Some(i) => self.secondary.get(i).map(|(_, l)| l).unwrap_or(&self.live),
        }
    }

    /// The index of the declared kind of `desired`, if it is one.
    pub(super) fn kind_index(&self, desired: &DesiredUpstream) -> Option<usize> {
        std::iter::once(&self.upstream)
            .chain(self.secondary.iter().map(|(k, _)| k))
            .position(|k| k.kind == desired.kind() && k.group == desired.group())
    }

    /// The API of kind `index` in `namespace` (the upstream kind at its detected version).
    pub(super) fn api(&self, index: usize, namespace: &str) -> Api<DynamicObject> {
        if index == 0 {
            return self.upstream_api(namespace);
        }
        let kind = self.kind(index);
        let resource = ApiResource {
            group: kind.group.clone(),
            version: kind.default_version.clone(),
            api_version: kind.api_version(&kind.default_version),
            kind: kind.kind.clone(),
            plural: kind.plural.clone(),
        };
        Api::namespaced_with(self.client.clone(), namespace, &resource)
    }

    /// The live objects this provider created for `md` (by kind index): with secondary kinds,
    /// every cached object labelled for it and owned by it; else its one upstream object.
    pub(super) fn owned_objects(&self, md: &ModelDeployment) -> Vec<(usize, Arc<DynamicObject>)> {
        let namespace = md.namespace().unwrap_or_default();
        let name = md.name_any();
        let candidates: Vec<(usize, Arc<DynamicObject>)> = if self.secondary.is_empty() {
            self.live(&namespace, &name)
                .map(|o| (0, o))
                .into_iter()
                .collect()
        } else {
            (0..=self.secondary.len())
                .flat_map(|i| {
                    self.cache(i)
                        .labelled_for(&namespace, &name)
                        .into_iter()
                        .map(move |o| (i, o))
                })
                .collect()
        };
        candidates
            .into_iter()
            .filter(|(_, o)| {
                serde_json::to_value(o.as_ref())
                    .is_ok_and(|value| super::desired::owned_by(&value, md))
            })
            .collect()
    }

    /// Waits (at most `limit`) until every watch has listed its objects once.
    async fn caches_ready(&self, limit: Duration) -> bool {
        if !self.live.ready(limit).await {
            return false;
        }
        for (_, cache) in &self.secondary {
            if !cache.ready(limit).await {
                return false;
            }
        }
        true
    }
}

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
        Triage::Delete => cleanup::on_delete(md, ctx).await,
        Triage::MovedAway => cleanup::on_moved_away(md, ctx).await,
        Triage::AddFinalizer => {
            // Deploy in the same pass, from the deployment as the API server returned it.
            let md = cleanup::add_finalizer(md, ctx).await?;
            ctx.recent.record(md.clone());
            if plan::triage(&md, ctx.provider.name()) == Triage::Deploy {
                deploy(&md, ctx, &namespace).await
            } else {
                Ok(Action::await_change())
            }
        }
        Triage::AwaitValidSpec => Ok(Action::await_change()),
        Triage::Deploy => {
            cleanup::forget_move(md, ctx);
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
        super::prepare::write(md, ctx, &preparation).await?;
        if let Some(message) = &preparation.hold {
            ctx.metrics.error("prepare");
            status_write::write(md, ctx, &super::prepare::held(provider, message)).await?;
            return Ok(Action::requeue(ctx.resync));
        }
        with_preparation = super::prepare::with_status(md, &preparation);
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
    let mut objects: Vec<(usize, &DesiredUpstream, ObjectPlan)> = Vec::new();
    for desired in &prepared.desired {
        let Some(index) = ctx.kind_index(desired) else {
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
            ctx.cache(index).get(namespace, object).as_deref(),
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
                .api(index, namespace)
                .get_opt(object)
                .await
                .map_err(api_error(format!("reading {kind} {namespace}/{object}")))?;
            step = plan::compare_object(md, desired, fresh.as_ref());
        }
        objects.push((index, desired, step));
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
    let recreated: Vec<&(usize, &DesiredUpstream, ObjectPlan)> = objects
        .iter()
        .filter(|(_, _, step)| *step == ObjectPlan::Recreate)
        .collect();
    if let Some((_, first, _)) = recreated.first() {
        for (index, desired, _) in &recreated {
            recreate(md, ctx, *index, namespace, desired.name()).await?;
        }
        let status = plan::recreating(provider, first.kind(), first.name());
        status_write::write(md, ctx, &status).await?;
        return Ok(Action::requeue(ctx.resync));
    }
    publish_render_warnings(md, ctx, &prepared.warnings).await;
    if !ctx.secondary.is_empty() {
        prune(md, ctx, &objects).await?;
    }
    let reference = md.object_ref(&());
    let mut live: Vec<Option<Arc<DynamicObject>>> = Vec::new();
    for (index, desired, step) in &objects {
        let (kind, object) = (desired.kind(), desired.name());
        let (creating, drifted) = match step {
            ObjectPlan::Create => (true, false),
            ObjectPlan::Update { drifted } => (false, *drifted),
            _ => {
                live.push(ctx.cache(*index).get(namespace, object));
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
            .api(*index, namespace)
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
                ctx.cache(*index).remember(applied.clone());
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
            .zip(objects.first())
            .map(|(primary, (index, ..))| (primary, ctx.kind(*index).from_crd)),
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
    wanted: &[(usize, &DesiredUpstream, ObjectPlan)],
) -> Result<(), ReconcileError> {
    let namespace = md.namespace().unwrap_or_default();
    let owned: Vec<(usize, String)> = ctx
        .owned_objects(md)
        .into_iter()
        .filter(|(_, object)| object.metadata.deletion_timestamp.is_none())
        .map(|(index, object)| (index, object.name_any()))
        .collect();
    let wanted: Vec<(usize, &str)> = wanted
        .iter()
        .map(|(index, desired, _)| (*index, desired.name()))
        .collect();
    for (index, name) in plan::stale(&wanted, &owned) {
        let (index, name) = (*index, name.as_str());
        let kind = ctx.kind(index).kind.clone();
        delete_object(ctx, index, &namespace, name).await?;
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

/// Deletes object `namespace/name` of kind `index` (gone already is fine).
pub(super) async fn delete_object<P: Provider>(
    ctx: &Context<P>,
    index: usize,
    namespace: &str,
    name: &str,
) -> Result<(), ReconcileError> {
    let kind = ctx.kind(index).kind.clone();
    match ctx
        .api(index, namespace)
        .delete(
            name,
            &DeleteParams {
                propagation_policy: Some(PropagationPolicy::Background),
                ..Default::default()
            },
        )
        .await
    {
        Ok(_) => {
            ctx.cache(index).forget(namespace, name);
            Ok(())
        }
        Err(kube::Error::Api(status)) if status.code == 404 => {
            ctx.cache(index).forget(namespace, name);
            Ok(())
        }
        Err(e) => Err(api_error(format!("deleting {kind} {namespace}/{name}"))(e)),
    }
}

/// Deletes a live object after an identity change (it is created anew once gone).
async fn recreate<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    index: usize,
    namespace: &str,
    name: &str,
) -> Result<(), ReconcileError> {
    let kind = ctx.kind(index).kind.clone();
    ctx.events
        .normal(&md.object_ref(&()), event_reasons::RESOURCE_RECREATED, "Recreate",
            format!("Deleting {kind} '{name}' to recreate it: an identity field (model.id, model.source, engine.type, provider.name or serving.mode) changed"))
        .await;
    delete_object(ctx, index, namespace, name).await
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

/// Requeues with a short backoff and counts the error.
pub fn error_policy<P: Provider>(
    md: Arc<ModelDeployment>,
    error: &ReconcileError,
    ctx: Arc<Context<P>>,
) -> Action {
    ctx.metrics.error(error.category());
    tracing::warn!(error = %error, category = error.category(), object = %md.name_any(), "reconcile failed");
    Action::requeue(Duration::from_secs(5))
}
