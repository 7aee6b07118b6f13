//! The provider reconcile: fetch (watch caches) → [`triage`](super::plan::triage) →
//! [`plan`](super::plan::plan) (pure) → apply the upstream object only when the plan says so
//! (server-side apply) → write the provider-owned status only when it changed. Every read comes
//! from the watch caches; nothing is polled: a change of the deployment or of its upstream
//! object (status written by the upstream operator, an edit, a deletion) wakes the reconcile.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PropagationPolicy,
};
use kube::runtime::controller::Action;
use kube::{Client, Resource, ResourceExt};

use super::cleanup;
use super::live::LiveObjects;
use super::plan::{self, Plan, Triage};
use super::recent::RecentDeployments;
use super::status_write;
use super::traits::{Provider, RenderWarning, SchemaDetection, UpstreamKind};
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
    if ctx.detection().schema().is_some() && !ctx.live.ready(CACHE_SYNC_WAIT).await {
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
    let name = md
        .metadata
        .name
        .clone()
        .ok_or(ReconcileError::MissingField("metadata.name"))?;
    match plan::triage(md, ctx.provider.name()) {
        Triage::Ignore | Triage::Paused => Ok(Action::await_change()),
        Triage::Delete => cleanup::on_delete(md, ctx).await,
        Triage::MovedAway => cleanup::on_moved_away(md, ctx).await,
        Triage::AddFinalizer => {
            // Deploy in the same pass, from the deployment as the API server returned it.
            let md = cleanup::add_finalizer(md, ctx).await?;
            ctx.recent.record(md.clone());
            if plan::triage(&md, ctx.provider.name()) == Triage::Deploy {
                deploy(&md, ctx, &namespace, &name).await
            } else {
                Ok(Action::await_change())
            }
        }
        Triage::AwaitValidSpec => Ok(Action::await_change()),
        Triage::Deploy => {
            cleanup::forget_move(md, ctx);
            deploy(md, ctx, &namespace, &name).await
        }
    }
}

/// Carries out the [`Plan`] for a deployment to deploy.
async fn deploy<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    namespace: &str,
    name: &str,
) -> Result<Action, ReconcileError> {
    let provider = ctx.provider.as_ref();
    let kind = ctx.upstream.kind.clone();
    let detection = ctx.detection();
    let mut planned = plan::plan(
        provider,
        md,
        &detection,
        ctx.live(namespace, name).as_deref(),
    );
    if let Plan::Apply { creating: true, .. } = planned {
        // The watch sees only objects we label: before creating, make sure no object of that
        // name exists (a user's would be taken over by the forced apply).
        let found = ctx
            .upstream_api(namespace)
            .get_opt(name)
            .await
            .map_err(api_error(format!("reading {kind} {namespace}/{name}")))?;
        if let Some(found) = found {
            planned = plan::plan(provider, md, &detection, Some(&found));
        }
    }
    let status = match planned {
        Plan::Hold { cause, status } => {
            if let Some(category) = cause.error_category() {
                ctx.metrics.error(category);
            }
            status
        }
        Plan::AwaitDeletion => {
            // The watch reports the deletion; the timer is only a safety net.
            return Ok(Action::requeue(ctx.resync));
        }
        Plan::Recreate { name, status } => {
            recreate(md, ctx, namespace, &name).await?;
            status
        }
        Plan::InSync {
            status, warnings, ..
        } => {
            publish_render_warnings(md, ctx, &warnings).await;
            status
        }
        Plan::Apply {
            desired,
            drifted,
            creating,
            warnings,
        } => {
            publish_render_warnings(md, ctx, &warnings).await;
            let reference = md.object_ref(&());
            if drifted {
                ctx.events
                    .warning(&reference, event_reasons::DRIFT_DETECTED, "Reconcile",
                        format!("Provider resource was modified directly, reconciling ({kind} '{name}' is restored from the ModelDeployment)"))
                    .await;
            }
            let upstream = ctx.upstream_api(namespace);
            match upstream
                .patch(
                    name,
                    &PatchParams::apply(&ctx.manager()).force(),
                    &Patch::Apply(&desired.object),
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
                                format!("Created {kind} '{name}'"),
                            )
                            .await;
                    }
                    let status = plan::status_from_live(provider, md, &desired, Some(&applied));
                    crate::cache_trim::drop_ownership(&mut applied.metadata);
                    ctx.live.remember(applied);
                    status
                }
                // The CRD went away after detection.
                Err(kube::Error::Api(status)) if status.code == 404 => {
                    plan::crd_gone(provider, &status.message)
                }
                // Conflicts, throttling and not-yet-granted RBAC pass: retry with backoff.
                Err(kube::Error::Api(status))
                    if (400..500).contains(&status.code)
                        && !matches!(status.code, 403 | 409 | 429) =>
                {
                    ctx.metrics.error("apply_rejected");
                    plan::apply_rejected(provider, &kind, name, &status.message)
                }
                Err(e) => return Err(api_error(format!("applying {kind} {namespace}/{name}"))(e)),
            }
        }
    };
    status_write::write(md, ctx, &status).await?;
    Ok(Action::requeue(ctx.resync))
}

/// Deletes the live object after an identity change (it is created anew once gone).
async fn recreate<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    namespace: &str,
    name: &str,
) -> Result<(), ReconcileError> {
    let kind = &ctx.upstream.kind;
    ctx.events
        .normal(&md.object_ref(&()), event_reasons::RESOURCE_RECREATED, "Recreate",
            format!("Deleting {kind} '{name}' to recreate it: an identity field (model.id, model.source, engine.type, provider.name or serving.mode) changed"))
        .await;
    match ctx
        .upstream_api(namespace)
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
            ctx.live.forget(namespace, name);
            Ok(())
        }
        Err(kube::Error::Api(status)) if status.code == 404 => {
            ctx.live.forget(namespace, name);
            Ok(())
        }
        Err(e) => Err(api_error(format!("deleting {kind} {namespace}/{name}"))(e)),
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
