//! The provider reconcile loop (the shell around the provider's pure functions).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PropagationPolicy,
};
use kube::runtime::controller::Action;
use kube::{Client, Resource, ResourceExt};
use serde_json::{Value, json};

use super::desired::{self, ProviderStatus};
use super::traits::{Provider, RenderError, SchemaDetection, UpstreamKind};
use crate::conditions;
use crate::constants::{
    condition_types, event_reasons, field_managers, finalizers, messages, reasons,
};
use crate::runtime::EventPublisher;
use crate::v1alpha1::{ConditionStatus, ModelDeployment, Phase};

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

fn api_error(action: impl Into<String>) -> impl FnOnce(kube::Error) -> ReconcileError {
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
    /// The latest upstream detection (refreshed with every heartbeat).
    pub detection: Arc<RwLock<SchemaDetection>>,
    /// Events.
    pub events: EventPublisher,
    /// `--finalizer-timeout`.
    pub finalizer_timeout: Duration,
    /// `--status-sync-interval`.
    pub status_sync: Duration,
    /// Metrics.
    pub metrics: super::metrics::ProviderMetrics,
    /// When each deployment that moved to another provider was first seen (cleanup timeout).
    pub moved_since: Mutex<HashMap<String, Instant>>,
    /// The generation whose render warnings were already published, per deployment.
    pub warned: Mutex<HashMap<String, i64>>,
}

impl<P: Provider> Context<P> {
    fn manager(&self) -> String {
        field_managers::provider(self.provider.name())
    }

    fn finalizer(&self) -> String {
        finalizers::provider(self.provider.name())
    }

    fn detection(&self) -> SchemaDetection {
        self.detection
            .read()
            .map(|d| d.clone())
            .unwrap_or(SchemaDetection::NotEstablished {
                crd: self.upstream.crd_name(),
            })
    }

    fn upstream_api(&self, namespace: &str) -> Api<DynamicObject> {
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
}

/// Reconciles one ModelDeployment for this provider.
pub async fn reconcile<P: Provider>(
    md: Arc<ModelDeployment>,
    ctx: Arc<Context<P>>,
) -> Result<Action, ReconcileError> {
    let started = Instant::now();
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
    let ours = md.selected_provider() == Some(ctx.provider.name());
    let finalizer = ctx.finalizer();
    let has_finalizer = md.finalizers().contains(&finalizer);
    if !ours && !has_finalizer {
        return Ok(Action::await_change());
    }
    if md.is_reconcile_paused() {
        return Ok(Action::await_change());
    }
    let uid = md.metadata.uid.clone().unwrap_or_default();
    let deployments: Api<ModelDeployment> = Api::namespaced(ctx.client.clone(), &namespace);

    if md.metadata.deletion_timestamp.is_some() {
        if !has_finalizer {
            return Ok(Action::await_change());
        }
        let since = md
            .metadata
            .deletion_timestamp
            .as_ref()
            .map(|t| t.0)
            .unwrap_or_else(jiff::Timestamp::now);
        let timed_out = jiff::Timestamp::now().duration_since(since)
            > jiff::SignedDuration::try_from(ctx.finalizer_timeout)
                .unwrap_or(jiff::SignedDuration::MAX);
        return cleanup(md, ctx, &deployments, timed_out, false).await;
    }
    if !ours {
        // Moved to another provider: clean up, release our status fields and the finalizer.
        let first_seen = {
            let mut moved = ctx
                .moved_since
                .lock()
                .map_err(|_| ReconcileError::MissingField("lock"))?;
            *moved.entry(uid.clone()).or_insert_with(Instant::now)
        };
        let result = cleanup(
            md,
            ctx,
            &deployments,
            first_seen.elapsed() > ctx.finalizer_timeout,
            true,
        )
        .await;
        return result;
    }
    if let Ok(mut moved) = ctx.moved_since.lock() {
        moved.remove(&uid);
    }

    if !has_finalizer {
        add_finalizer(md, &deployments, &finalizer).await?;
        // The update triggers the next reconcile.
        return Ok(Action::await_change());
    }

    // The core says the current spec is invalid: deploy nothing until it is fixed.
    let validated = md.condition(condition_types::VALIDATED);
    if validated.is_some_and(|c| {
        c.status == ConditionStatus::False && c.observed_generation == md.metadata.generation
    }) {
        return Ok(Action::requeue(ctx.status_sync));
    }

    let provider = &ctx.provider;
    let kind = ctx.upstream.kind.clone();
    if let Err(message) = provider.check_compatibility(md) {
        let status = ProviderStatus::not_deployed(
            Phase::Failed,
            message.clone(),
            (false, reasons::INCOMPATIBLE_CONFIGURATION, message.clone()),
            (
                reasons::INCOMPATIBLE_CONFIGURATION,
                format!("No {kind} is created for an incompatible configuration"),
            ),
        );
        write_status(md, ctx, &status).await?;
        return Ok(Action::requeue(ctx.status_sync));
    }
    let compatible = (
        true,
        reasons::COMPATIBILITY_VERIFIED,
        format!("Configuration compatible with {}", provider.display_name()),
    );
    // Without a usable upstream CRD the deployment waits in Pending, saying which CRD.
    let waiting_for_crd = match ctx.detection() {
        SchemaDetection::Supported(schema) => Ok(schema),
        SchemaDetection::CrdNotInstalled { crd } => Err(format!(
            "{} ({crd} is missing)",
            messages::provider_crd_not_installed(provider.name())
        )),
        SchemaDetection::NotEstablished { crd } => {
            Err(format!("Waiting for CRD {crd} to be Established"))
        }
        SchemaDetection::Unsupported { message, .. } => {
            return hold_incompatible(md, ctx, reasons::UNSUPPORTED_SCHEMA, message).await;
        }
    };
    let schema = match waiting_for_crd {
        Ok(schema) => schema,
        Err(message) => {
            return hold(
                md,
                ctx,
                Phase::Pending,
                compatible,
                reasons::UPSTREAM_CRD_NOT_INSTALLED,
                message,
            )
            .await;
        }
    };

    let rendered = match provider.render(md, &schema) {
        Ok(rendered) => rendered,
        Err(error) => {
            ctx.metrics.error(error.category());
            let reason = match error {
                RenderError::InvalidOverrides(_) => reasons::INVALID_OVERRIDES,
                RenderError::Unsupported(_) => reasons::INCOMPATIBLE_CONFIGURATION,
            };
            let message = error.to_string();
            return hold_incompatible(md, ctx, reason, message).await;
        }
    };
    publish_render_warnings(md, ctx, &rendered.warnings).await;

    let desired = desired::desired_upstream(md, &rendered);
    let upstream = ctx.upstream_api(&namespace);
    let live = upstream
        .get_opt(&name)
        .await
        .map_err(api_error(format!("reading {kind} {namespace}/{name}")))?;
    let reference = md.object_ref(&());
    if let Some(live) = &live {
        let live_value = serde_json::to_value(live).unwrap_or(Value::Null);
        if !desired::owned_by(&live_value, md) {
            let message = format!(
                "{kind} {namespace}/{name} already exists and is not owned by this ModelDeployment; delete or rename it"
            );
            return hold(
                md,
                ctx,
                Phase::Failed,
                compatible,
                reasons::APPLY_FAILED,
                message,
            )
            .await;
        }
        if live.metadata.deletion_timestamp.is_some() {
            // Being deleted (identity change): wait until it is gone, then create it anew.
            return Ok(Action::requeue(Duration::from_secs(2)));
        }
        if desired::live_identity_hash(&live_value) != Some(desired.identity_hash.as_str()) {
            ctx.events
                .normal(&reference, event_reasons::RESOURCE_RECREATED, "Recreate",
                    format!("Deleting {kind} '{name}' to recreate it: an identity field (model.id, model.source, engine.type, provider.name or serving.mode) changed"))
                .await;
            upstream
                .delete(
                    &name,
                    &DeleteParams {
                        propagation_policy: Some(PropagationPolicy::Background),
                        ..Default::default()
                    },
                )
                .await
                .map_err(api_error(format!("deleting {kind} {namespace}/{name}")))?;
            let message = format!("Recreating {kind} {name} after an identity change");
            let status = ProviderStatus::not_deployed(
                Phase::Deploying,
                message.clone(),
                compatible,
                (reasons::RECREATING, message),
            );
            write_status(md, ctx, &status).await?;
            return Ok(Action::requeue(Duration::from_secs(1)));
        }
        if desired::drifted(&desired, &live_value) {
            ctx.events
                .warning(&reference, event_reasons::DRIFT_DETECTED, "Reconcile",
                    format!("Provider resource was modified directly, reconciling ({kind} '{name}' is restored from the ModelDeployment)"))
                .await;
        }
    }

    let applied = match upstream
        .patch(
            &name,
            &PatchParams::apply(&ctx.manager()).force(),
            &Patch::Apply(&desired.object),
        )
        .await
    {
        Ok(applied) => applied,
        Err(kube::Error::Api(status)) if status.code == 404 => {
            // The CRD went away after detection.
            let message = format!(
                "{} ({})",
                messages::provider_crd_not_installed(provider.name()),
                status.message
            );
            return hold(
                md,
                ctx,
                Phase::Pending,
                compatible,
                reasons::UPSTREAM_CRD_NOT_INSTALLED,
                message,
            )
            .await;
        }
        Err(kube::Error::Api(status)) if (400..500).contains(&status.code) => {
            ctx.metrics.error("apply_rejected");
            let message = format!("The API server rejected {kind} {name}: {}", status.message);
            return hold(
                md,
                ctx,
                Phase::Failed,
                compatible,
                reasons::APPLY_FAILED,
                message,
            )
            .await;
        }
        Err(e) => return Err(api_error(format!("applying {kind} {namespace}/{name}"))(e)),
    };
    if live.is_none() {
        ctx.events
            .normal(
                &reference,
                event_reasons::RESOURCE_CREATED,
                "Create",
                format!("Created {kind} '{name}'"),
            )
            .await;
    }
    let translated = provider.translate_status(md, Some(&applied));
    let status =
        ProviderStatus::from_translation(provider.display_name(), (name, kind), &translated);
    write_status(md, ctx, &status).await?;
    Ok(Action::requeue(ctx.status_sync))
}

/// Reports why nothing is deployed (for `reason`, with `message` as the phase message and on
/// `ResourceCreated`) and checks again after the status sync interval.
async fn hold<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    phase: Phase,
    compatible: (bool, &str, String),
    reason: &str,
    message: String,
) -> Result<Action, ReconcileError> {
    let status =
        ProviderStatus::not_deployed(phase, message.clone(), compatible, (reason, message));
    write_status(md, ctx, &status).await?;
    Ok(Action::requeue(ctx.status_sync))
}

/// [`hold`] in `Failed` for a configuration this provider cannot serve: `ProviderCompatible`
/// is false with the same reason and message.
async fn hold_incompatible<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    reason: &str,
    message: String,
) -> Result<Action, ReconcileError> {
    let compatible = (false, reason, message.clone());
    hold(md, ctx, Phase::Failed, compatible, reason, message).await
}

async fn add_finalizer(
    md: &ModelDeployment,
    api: &Api<ModelDeployment>,
    finalizer: &str,
) -> Result<(), ReconcileError> {
    let name = md.name_any();
    let patch = match &md.metadata.finalizers {
        None => json!([{"op": "add", "path": "/metadata/finalizers", "value": [finalizer]}]),
        Some(current) => json!([
            {"op": "test", "path": "/metadata/finalizers", "value": current},
            {"op": "add", "path": "/metadata/finalizers/-", "value": finalizer},
        ]),
    };
    let patch: json_patch::Patch = serde_json::from_value(patch)
        .map_err(|_| ReconcileError::MissingField("finalizer patch"))?;
    api.patch(&name, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
        .map_err(api_error(format!("adding finalizer {finalizer} to {name}")))?;
    Ok(())
}

async fn remove_finalizer(
    md: &ModelDeployment,
    api: &Api<ModelDeployment>,
    finalizer: &str,
) -> Result<(), ReconcileError> {
    let name = md.name_any();
    let current = md.metadata.finalizers.clone().unwrap_or_default();
    let kept: Vec<&String> = current.iter().filter(|f| *f != finalizer).collect();
    let patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/finalizers", "value": current},
        {"op": "replace", "path": "/metadata/finalizers", "value": kept},
    ]))
    .map_err(|_| ReconcileError::MissingField("finalizer patch"))?;
    match api
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

/// Deletes the upstream object and releases the finalizer once it is gone (or on timeout).
/// `moved`: the deployment moved to another provider (also release our status fields).
async fn cleanup<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    deployments: &Api<ModelDeployment>,
    timed_out: bool,
    moved: bool,
) -> Result<Action, ReconcileError> {
    let name = md.name_any();
    let namespace = md.namespace().unwrap_or_default();
    let kind = ctx.upstream.kind.clone();
    let upstream = ctx.upstream_api(&namespace);
    let gone = match upstream.get_opt(&name).await {
        Ok(None) => true,
        Ok(Some(live)) => {
            let value = serde_json::to_value(&live).unwrap_or(Value::Null);
            if !desired::owned_by(&value, md) {
                true
            } else {
                if live.metadata.deletion_timestamp.is_none() {
                    match upstream
                        .delete(
                            &name,
                            &DeleteParams {
                                propagation_policy: Some(PropagationPolicy::Background),
                                ..Default::default()
                            },
                        )
                        .await
                    {
                        Ok(_) | Err(kube::Error::Api(_)) => {}
                        Err(e) => tracing::warn!(error = %e, "deleting {kind} {namespace}/{name}"),
                    }
                }
                false
            }
        }
        // 404 for the resource type: the upstream CRD is gone, nothing can be left.
        Err(kube::Error::Api(s)) if s.code == 404 => true,
        Err(e) => {
            tracing::warn!(error = %e, "reading {kind} {namespace}/{name} during cleanup");
            false
        }
    };
    if !gone && !timed_out {
        return Ok(Action::requeue(Duration::from_secs(2)));
    }
    if !gone {
        tracing::warn!(object = %format!("{namespace}/{name}"), %kind, "finalizer timeout: the upstream object was not deleted and may be orphaned; delete it by hand");
        ctx.events
            .warning(&md.object_ref(&()), event_reasons::FINALIZER_TIMEOUT, "Cleanup",
                format!("Finalizer removed after timeout, provider resource may be orphaned ({kind} '{name}')"))
            .await;
    }
    if moved {
        // Hand our status fields over: an empty apply drops what this manager owns.
        let body = json!({"apiVersion": crate::constants::API_VERSION, "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": namespace}, "status": {}});
        if let Err(e) = deployments
            .patch_status(
                &name,
                &PatchParams::apply(&ctx.manager()).force(),
                &Patch::Apply(&body),
            )
            .await
        {
            tracing::warn!(error = %e, "releasing status fields of {namespace}/{name}");
        }
    }
    remove_finalizer(md, deployments, &ctx.finalizer()).await?;
    if let Ok(mut moved_since) = ctx.moved_since.lock() {
        moved_since.remove(md.metadata.uid.as_deref().unwrap_or_default());
    }
    Ok(Action::await_change())
}

/// Writes the provider's status when it changed, with events for transitions.
async fn write_status<P: Provider>(
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
    api.patch_status(
        &name,
        &PatchParams::apply(&manager).force(),
        &Patch::Apply(&body),
    )
    .await
    .map_err(api_error(format!("writing the status of {name}")))?;

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
                "CheckCompatibility",
                compatible.message.clone(),
            )
            .await;
    }
    let was_failed = md.phase() == Some(Phase::Failed);
    if status.phase == Phase::Failed && !was_failed {
        ctx.events
            .warning(
                &reference,
                event_reasons::PROVIDER_ERROR,
                "Reconcile",
                format!("Provider resource in error state: {}", status.message),
            )
            .await;
    }
    Ok(())
}

async fn publish_render_warnings<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    warnings: &[super::traits::RenderWarning],
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
