//! The ModelDeployment reconcile: fetch (watch caches) → decide (pure) → apply the core's status
//! with server-side apply when it changed → events, metrics, rule error reports.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use airunway_api::apply_body;
use airunway_api::conditions;
use airunway_api::constants::traces;
use airunway_api::constants::{
    condition_types, event_actions, event_reasons, field_managers, reasons,
};
use airunway_api::kube_error::ErrorClass;
use airunway_api::runtime::{EventPublisher, FailureCounts, trace_context};
use airunway_api::v1alpha1::{ConditionStatus, InferenceProviderConfig, ModelDeployment};
use futures::{Stream, StreamExt, stream};
use jiff::Timestamp;
use kube::api::{Api, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use serde_json::json;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::error::ReconcileError;
use crate::metrics::{CoreMetrics, ErrorLabels, ProviderLabel, SelectionLabels};
use crate::runtime_config::{self, Plan, RuntimeConfigs};
use crate::selection::{ProviderDecision, ProviderView, RuleError, RuleSet, provider_views};
use crate::status::{self, CoreDecision, DesiredCoreStatus};
use airunway_api::metric_names::selection_reasons;

/// Field manager of the core's `SelectionRulesValid` condition on InferenceProviderConfigs.
pub const RULES_FIELD_MANAGER: &str = "airunway-core-rules";

/// What the reconcile needs.
pub struct Context {
    /// API client.
    pub client: Client,
    /// Cache of InferenceProviderConfigs.
    pub providers: Store<InferenceProviderConfig>,
    /// `--enable-provider-selector`.
    pub selector_enabled: bool,
    /// Compiled selection rules.
    pub rules: RuleSet,
    /// Events.
    pub events: EventPublisher,
    /// Metrics.
    pub metrics: CoreMetrics,
    /// Periodic re-check.
    pub resync: Duration,
    /// Selection decisions running at once, on blocking threads (never on the async workers
    /// that answer admission requests). Waiting is first come, first served.
    pub selection_slots: Arc<tokio::sync::Semaphore>,
    /// The gateway integration (`None`: turned off with `--enable-gateway=false`).
    pub gateway: Option<Arc<crate::gateway::Integration>>,
    /// The model cache (`None` only where no cache controller runs, e.g. a bench).
    pub model_cache: Option<Arc<crate::model_cache::Integration>>,
    /// Autoscaling (`None` only where no autoscaling runs, e.g. a bench).
    pub autoscaling: Option<Arc<crate::autoscaling::Integration>>,
    /// Consecutive reconcile failures per deployment, for the retry backoff.
    pub failures: FailureCounts,
    /// The upstream access check (`None`: `--check-upstream-access` is off).
    pub access: Option<Arc<crate::access::Check>>,
    /// ModelDeploymentPolicy enforcement (`None` only where none runs, e.g. a bench).
    pub policy: Option<Arc<crate::policy::Enforcement>>,
    /// The runtime configuration caches (docs/platform.md).
    pub runtime_configs: Arc<RuntimeConfigs>,
    /// The referenced-Secret existence check (`None` only where none runs, e.g. a bench).
    pub secrets: Option<Arc<crate::secret_references::Check>>,
    /// Consecutive reconciles that found a referenced Secret missing, per deployment: the
    /// re-check backoff (no Secret watch; see [`crate::secret_references`]).
    pub secret_misses: FailureCounts,
}

/// Decides for `md` on a blocking thread, holding one of the selection slots.
async fn decide_off_runtime(
    ctx: &Arc<Context>,
    md: &ModelDeployment,
    providers: &[InferenceProviderConfig],
    object: &str,
) -> Result<(Vec<ProviderView>, CoreDecision), ReconcileError> {
    let failed = |reason: String| ReconcileError::Selection {
        object: object.to_string(),
        reason,
    };
    let _slot = ctx
        .selection_slots
        .acquire()
        .await
        .map_err(|e| failed(e.to_string()))?;
    let task_ctx = ctx.clone();
    let md = md.clone();
    let providers = providers.to_vec();
    tokio::task::spawn_blocking(move || {
        let views = provider_views(&providers);
        let decision = status::decide(&md, &views, task_ctx.selector_enabled, &task_ctx.rules);
        (views, decision)
    })
    .await
    .map_err(|e| failed(e.to_string()))
}

/// Reconciles one ModelDeployment, in a span of its own (one trace per reconcile, see
/// docs/observability.md "Traces").
pub async fn reconcile(
    md: Arc<ModelDeployment>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    let span = tracing::info_span!(traces::RECONCILE_SPAN);
    trace_context::record(&span, traces::COMPONENT, traces::CORE_COMPONENT);
    if let (Some(namespace), Some(name)) = (md.namespace(), md.metadata.name.as_deref()) {
        trace_context::record(&span, traces::DEPLOYMENT, format!("{namespace}/{name}"));
    }
    reconcile_deployment(md, ctx).instrument(span).await
}

async fn reconcile_deployment(
    md: Arc<ModelDeployment>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    let started = Instant::now();
    let namespace = md
        .namespace()
        .ok_or(ReconcileError::MissingField("metadata.namespace"))?;
    let name = md
        .metadata
        .name
        .clone()
        .ok_or(ReconcileError::MissingField("metadata.name"))?;
    // Paused or being deleted: no writes at all.
    if md.is_reconcile_paused() {
        tracing::debug!(%namespace, %name, "reconcile paused by annotation");
        return Ok(Action::await_change());
    }
    if md.metadata.deletion_timestamp.is_some() {
        // Being deleted: the gateway objects go with it (owner references); the namespace's
        // allowance on the Gateway is taken back here. No status write.
        if let Some(gateway) = &ctx.gateway {
            let providers: Vec<InferenceProviderConfig> = ctx
                .providers
                .state()
                .iter()
                .map(|p| (**p).clone())
                .collect();
            gateway.reconcile(&md, &providers).await;
        }
        ctx.failures
            .succeeded(md.metadata.uid.as_deref().unwrap_or_default());
        return Ok(Action::await_change());
    }
    let api: Api<ModelDeployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let object = format!("{namespace}/{name}");

    // The runtime configuration first (pure, from the caches): everything after reads the
    // effective deployment, the deployment with its config's defaults.
    ctx.runtime_configs
        .wait_synced()
        .await
        .map_err(ReconcileError::RuntimeConfig)?;
    let resolution = ctx.runtime_configs.resolve(&md);
    let first = runtime_config::plan(&md, &resolution);
    let labels = runtime_config::propagated(&first);
    let effective = match &first {
        Plan::Proceed { effective, .. } => Some(effective.clone()),
        Plan::Wait { .. } | Plan::Keep { .. } => None,
    };

    let mut current = (*md).clone();
    let mut force = false;
    let providers: Vec<InferenceProviderConfig> = ctx
        .providers
        .state()
        .iter()
        .map(|p| (**p).clone())
        .collect();
    // The gateway part (applies pools, pickers and routes; pure decisions inside). A
    // deployment whose named config is gone keeps what it has; one waiting for its config has
    // nothing routed.
    let gateway = match (&ctx.gateway, &first) {
        (Some(gateway), Plan::Proceed { effective, .. }) => {
            gateway
                .reconcile_with_labels(&effective.deployment, &providers, &labels)
                .await
        }
        (Some(_), Plan::Keep { .. }) => crate::gateway::DesiredGateway {
            condition: None,
            ..crate::gateway::DesiredGateway::current(&md)
        },
        _ => crate::gateway::DesiredGateway::default(),
    };
    // The referenced Secrets, once per reconcile (metadata-only reads): `SecretsFound`.
    let secrets = match (&ctx.secrets, &effective) {
        (Some(check), Some(effective)) => check.check(&namespace, &md, &effective.deployment).await,
        _ => crate::secret_references::SecretCheck::default(),
    };
    // The storage part, once per reconcile: `StorageReady` and `ModelDownloaded` travel in the
    // core's one status apply.
    let mut storage: Option<Vec<conditions::DesiredCondition>> = None;
    // The autoscaling part, once per reconcile: `ScalingReady`, `ScalingActive` and
    // `status.autoscaling` travel in the same apply.
    let mut autoscaling: Option<crate::autoscaling::DesiredAutoscaling> = None;
    let (views, decision, desired) = loop {
        // The decision's span: selection and everything the status is derived from; its
        // context travels to the provider in the status apply below.
        let decide_span = tracing::info_span!(traces::DECIDE_SPAN);
        let plan = runtime_config::plan(&current, &resolution);
        let (views, decision) = match &plan {
            Plan::Proceed {
                effective, source, ..
            } => {
                let (views, mut decision) =
                    decide_off_runtime(&ctx, &effective.deployment, &providers, &object)
                        .instrument(decide_span.clone())
                        .await?;
                // Errors the config's defaults brought name the config.
                if let Some(source) = source
                    && !decision.validation_errors.is_empty()
                {
                    let (_, own) = decide_off_runtime(&ctx, &current, &providers, &object)
                        .instrument(decide_span.clone())
                        .await?;
                    runtime_config::attribute(
                        &mut decision.validation_errors,
                        &own.validation_errors,
                        source,
                    );
                }
                if let Some(access) = &ctx.access {
                    access.gate(&current, &providers, &mut decision).await?;
                }
                (views, Some(decision))
            }
            Plan::Wait { .. } | Plan::Keep { .. } => (Vec::new(), None),
        };
        if storage.is_none() {
            // Only a spec that passes validation gets caches, claims and a download (no
            // download of a model for a deployment that cannot run as it is).
            storage = Some(match (&ctx.model_cache, &effective, &decision) {
                (Some(model_cache), Some(effective), Some(decision))
                    if decision.validation_errors.is_empty() =>
                {
                    model_cache
                        .reconcile_deployment(
                            &effective.deployment,
                            effective.model_cache.as_ref(),
                            &labels,
                        )
                        .await?
                }
                _ => Vec::new(),
            });
        }
        if autoscaling.is_none() {
            autoscaling = Some(match (&ctx.autoscaling, &effective, &decision) {
                (Some(integration), Some(effective), Some(decision)) => {
                    let engine = decision
                        .engine
                        .as_ref()
                        .and_then(crate::selection::EngineDecision::engine);
                    integration
                        .reconcile(
                            &effective.deployment,
                            decision.validation_errors.is_empty(),
                            engine,
                            &providers,
                            &labels,
                        )
                        .await
                }
                (_, _, None) if matches!(first, Plan::Keep { .. }) => {
                    crate::autoscaling::DesiredAutoscaling {
                        conditions: Vec::new(),
                        ..crate::autoscaling::DesiredAutoscaling::current(&md)
                    }
                }
                _ => crate::autoscaling::DesiredAutoscaling::default(),
            });
        }
        let autoscaling = autoscaling.clone().unwrap_or_default();
        let mut desired = status::desired_with_runtime_config(&current, &plan, decision.as_ref());
        if let (Some(policy), Some(decision)) = (&ctx.policy, &decision) {
            let verdict = policy.verdict(&current, decision);
            crate::policy::reconcile::adjust(&current, verdict.as_ref(), &mut desired);
        }
        if decision.is_some() {
            desired.conditions.extend(gateway.condition.clone());
            desired.conditions.extend(secrets.condition.clone());
            desired.conditions.extend(storage.iter().flatten().cloned());
            desired
                .conditions
                .extend(autoscaling.conditions.iter().cloned());
        }
        crate::traces::record_decision(&decide_span, &desired);
        let traceparent = trace_context::traceparent(&decide_span);
        drop(decide_span);
        if status::is_current(&current, &desired)
            && gateway.fields_current(&current)
            && autoscaling.fields_current(&current)
        {
            break (views, decision, desired);
        }
        let mut body = status::status_patch(&current, &desired, Timestamp::now());
        gateway.add_to_patch(&mut body);
        autoscaling.add_to_patch(&mut body);
        crate::traces::carry_traceparent(&mut body, traceparent.as_deref());
        let mut params = PatchParams::apply(field_managers::CORE);
        params.force = force;
        match api
            .patch_status(&name, &params, &apply_body::apply(&body))
            .instrument(tracing::info_span!(traces::APPLY_STATUS_SPAN))
            .await
        {
            Ok(_) => {
                if let Some(decision) = &decision {
                    publish_events(&ctx, &current, decision, &desired, &secrets.missing).await;
                }
                publish_runtime_config_events(&ctx, &current, &plan).await;
                break (views, decision, desired);
            }
            // Another manager owns a field the core sent (a provider took `phase`, or someone
            // edited the status): re-read, recompute from the fresh ownership, then force the
            // fields that are the core's.
            Err(e) if ErrorClass::of(&e) == ErrorClass::Conflict && !force => {
                tracing::info!(%object, "status apply conflicted; recomputing from a fresh read");
                current =
                    api.get_status(&name)
                        .await
                        .map_err(|source| ReconcileError::Refetch {
                            object: object.clone(),
                            source,
                        })?;
                force = true;
            }
            Err(source) => return Err(ReconcileError::ApplyStatus { object, source }),
        }
    };
    let Some(decision) = decision else {
        tracing::debug!(%object, phase = ?desired.phase, "reconciled; runtime configuration missing");
        ctx.failures
            .succeeded(md.metadata.uid.as_deref().unwrap_or_default());
        return Ok(Action::requeue(ctx.resync));
    };
    report_rule_errors(&ctx, &current, &views, &decision).await;
    let provider = decision
        .provider
        .as_ref()
        .and_then(ProviderDecision::provider)
        .unwrap_or("none")
        .to_string();
    ctx.metrics
        .reconcile_duration
        .get_or_create(&ProviderLabel { provider })
        .observe(started.elapsed().as_secs_f64());
    tracing::debug!(%object, phase = ?desired.phase, "reconciled");
    let uid = md.metadata.uid.as_deref().unwrap_or_default();
    ctx.failures.succeeded(uid);
    // A denied deployment is looked at again once the cached answer expires.
    let requeue = match (&ctx.access, &decision.provider) {
        (Some(access), Some(ProviderDecision::AccessDenied { .. })) => access.ttl().min(ctx.resync),
        _ => ctx.resync,
    };
    // A missing Secret is not watched for: looked at again with the retry backoff.
    let requeue = if secrets.missing.is_empty() {
        ctx.secret_misses.succeeded(uid);
        requeue
    } else {
        ctx.secret_misses.failed(uid).min(requeue)
    };
    Ok(Action::requeue(requeue))
}

/// Counts the error; a transient one is retried with backoff (5 s, doubling to 60 s), any other
/// (an object the API server refuses as it is) waits for a change of the deployment.
pub fn error_policy(md: Arc<ModelDeployment>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    let provider = md
        .selected_provider()
        .or_else(|| md.spec.explicit_provider())
        .unwrap_or("none")
        .to_string();
    ctx.metrics
        .reconcile_errors
        .get_or_create(&ErrorLabels {
            provider,
            error_type: error.category().to_string(),
        })
        .inc();
    tracing::warn!(error = %error, category = error.category(), object = %md.name_any(), "reconcile failed");
    if !error.is_transient() {
        return Action::await_change();
    }
    Action::requeue(
        ctx.failures
            .failed(md.metadata.uid.as_deref().unwrap_or_default()),
    )
}

/// The runtime configuration events the write that just succeeded carried (each once).
async fn publish_runtime_config_events(ctx: &Context, before: &ModelDeployment, plan: &Plan) {
    let reference = before.object_ref(&());
    for event in runtime_config::events(before, plan) {
        let action = event_actions::runtime_config::RESOLVE;
        if event.warning {
            ctx.events
                .warning(&reference, event.reason, action, event.note)
                .await;
        } else {
            ctx.events
                .normal(&reference, event.reason, action, event.note)
                .await;
        }
    }
}

/// Events for what changed (only after a successful write, so each transition is told once).
async fn publish_events(
    ctx: &Context,
    before: &ModelDeployment,
    decision: &CoreDecision,
    desired: &DesiredCoreStatus,
    missing_secrets: &[String],
) {
    let reference = before.object_ref(&());
    let old = before.status.as_ref().and_then(|s| s.conditions.as_deref());
    let changed = |type_: &str| {
        let new = desired.conditions.iter().find(|c| c.type_ == type_)?;
        let previous = conditions::find(old, type_);
        let same = previous.is_some_and(|p| {
            p.status == new.status && p.message.as_deref() == Some(new.message.as_str())
        });
        (!same).then_some(new)
    };
    if let Some((provider, reason)) = &desired.provider
        && before.selected_provider() != Some(provider.as_str())
    {
        ctx.events
            .normal(
                &reference,
                event_reasons::PROVIDER_SELECTED,
                event_actions::SELECT_PROVIDER,
                format!("Selected provider '{provider}': {reason}"),
            )
            .await;
        // `manual` / `auto`: the Go AI Runway's label values, so its dashboards keep working.
        let label = match decision.provider {
            Some(ProviderDecision::Explicit { .. }) => selection_reasons::MANUAL,
            _ => selection_reasons::AUTO,
        };
        ctx.metrics
            .provider_selections
            .get_or_create(&SelectionLabels {
                provider: provider.clone(),
                reason: label.to_string(),
            })
            .inc();
        if before.selected_provider().is_none() {
            ctx.metrics
                .selected(before, provider, jiff::Timestamp::now());
        }
    }
    for (type_, reason) in [
        (condition_types::VALIDATED, event_reasons::VALIDATION_FAILED),
        (
            condition_types::ENGINE_SELECTED,
            event_reasons::ENGINE_SELECTION_FAILED,
        ),
        (
            condition_types::PROVIDER_SELECTED,
            event_reasons::PROVIDER_SELECTION_FAILED,
        ),
        (
            condition_types::PROVIDER_HEALTHY,
            event_reasons::PROVIDER_UNHEALTHY,
        ),
        (
            condition_types::POLICY_COMPLIANT,
            event_reasons::POLICY_VIOLATION,
        ),
    ] {
        if let Some(condition) = changed(type_)
            && condition.status == ConditionStatus::False
            && condition.reason != reasons::WAITING_FOR_VALIDATION
        {
            ctx.events
                .warning(&reference, reason, type_, condition.message.clone())
                .await;
        }
    }
    // One warning per missing Secret, each naming it, when `SecretsFound` turns False or its
    // message changes (another Secret went missing).
    if let Some(condition) = changed(condition_types::SECRETS_FOUND)
        && condition.status == ConditionStatus::False
    {
        for note in missing_secrets {
            ctx.events
                .warning(
                    &reference,
                    event_reasons::SECRET_NOT_FOUND,
                    event_actions::CHECK_SECRETS,
                    note.clone(),
                )
                .await;
        }
    }
    if let Some(condition) = changed(condition_types::PROVIDER_HEALTHY)
        && condition.status == ConditionStatus::True
        && conditions::find(old, condition_types::PROVIDER_HEALTHY)
            .is_some_and(|c| c.status == ConditionStatus::False)
    {
        ctx.events
            .normal(
                &reference,
                event_reasons::PROVIDER_RECOVERED,
                event_actions::PROVIDER_HEALTH,
                condition.message.clone(),
            )
            .await;
    }
}

/// Surfaces selection rules that failed to evaluate: a log line, a metric, a warning event on
/// the deployment, and the provider's `SelectionRulesValid` condition (False until the rules
/// change; True again once the current rules evaluate without error).
async fn report_rule_errors(
    ctx: &Context,
    md: &ModelDeployment,
    views: &[ProviderView],
    decision: &CoreDecision,
) {
    for error in &decision.rule_errors {
        tracing::warn!(provider = %error.provider, rule = error.index, condition = %error.condition, error = %error.message,
            deployment = %md.name_any(), "selection rule failed to evaluate; it counts as false");
        ctx.metrics
            .rule_errors
            .get_or_create(&ProviderLabel {
                provider: error.provider.clone(),
            })
            .inc();
    }
    for name in &decision.rules_evaluated {
        let Some(view) = views.iter().find(|v| &v.name == name) else {
            continue;
        };
        let errors: Vec<&RuleError> = decision
            .rule_errors
            .iter()
            .filter(|e| &e.provider == name)
            .collect();
        let Some(ipc) = ctx.providers.get(&ObjectRef::new(name)) else {
            continue;
        };
        let existing = conditions::find(
            ipc.status.as_ref().and_then(|s| s.conditions.as_deref()),
            condition_types::SELECTION_RULES_VALID,
        );
        let (valid, reason, message) = match errors.first() {
            Some(e) => (
                false,
                reasons::RULE_RUNTIME_ERROR,
                format!(
                    "selection rule {} (`{}`) failed for ModelDeployment {}/{}: {} (a failing rule counts as false)",
                    e.index,
                    e.condition,
                    md.namespace().unwrap_or_default(),
                    md.name_any(),
                    e.message
                ),
            ),
            None => (
                true,
                reasons::RULES_EVALUATED,
                "Selection rules evaluate without errors".to_string(),
            ),
        };
        let current_generation = existing.is_some_and(|c| c.observed_generation == view.generation);
        // Keep a reported error until the rules change; do not rewrite a True condition.
        let skip = match existing {
            Some(c) if current_generation && c.status == ConditionStatus::False => true,
            Some(c) if current_generation && valid => c.status == ConditionStatus::True,
            _ => false,
        };
        if skip {
            continue;
        }
        if !valid {
            ctx.events
                .warning(
                    &md.object_ref(&()),
                    event_reasons::SELECTION_RULE_ERROR,
                    event_actions::EVALUATE_RULES,
                    message.clone(),
                )
                .await;
        }
        let body = json!({
            "apiVersion": airunway_api::constants::API_VERSION,
            "kind": "InferenceProviderConfig",
            "metadata": {"name": name},
            "status": {"conditions": [{
                "type": condition_types::SELECTION_RULES_VALID,
                "status": if valid { "True" } else { "False" },
                "reason": reason,
                "message": message,
                "lastTransitionTime": Timestamp::now().to_string(),
                "observedGeneration": view.generation,
            }]},
        });
        let api: Api<InferenceProviderConfig> = Api::all(ctx.client.clone());
        if let Err(e) = api
            .patch_status(
                name,
                &PatchParams::apply(RULES_FIELD_MANAGER).force(),
                &apply_body::apply(&body),
            )
            .await
        {
            tracing::warn!(provider = %name, error = %e, "could not record the SelectionRulesValid condition");
        }
    }
}

/// What the core last saw of each provider's selection inputs: its spec generation, `ready`,
/// and its conditions (type, status, reason, message) — everything but the heartbeat time.
#[derive(Debug, Default)]
pub struct SelectionInputs {
    seen: HashMap<String, u64>,
}

impl SelectionInputs {
    fn fingerprint(ipc: &InferenceProviderConfig) -> u64 {
        let status = ipc.status.as_ref();
        let conditions: Vec<_> = status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    &c.type_,
                    &c.status,
                    &c.reason,
                    &c.message,
                    c.observed_generation,
                )
            })
            .collect();
        let mut hasher = DefaultHasher::new();
        (
            ipc.metadata.generation,
            ipc.metadata.deletion_timestamp.is_some(),
            status.and_then(|s| s.ready),
            format!("{conditions:?}"),
        )
            .hash(&mut hasher);
        hasher.finish()
    }

    /// Whether `ipc` (just seen by the watch; `deleted` when it left the cache) differs from
    /// what was seen last in anything but its heartbeat; records it.
    pub fn changed(&mut self, ipc: &InferenceProviderConfig, deleted: bool) -> bool {
        let name = ipc.name_any();
        if deleted {
            self.seen.remove(&name);
            return true;
        }
        let fingerprint = Self::fingerprint(ipc);
        self.seen.insert(name, fingerprint) != Some(fingerprint)
    }
}

/// How many provider changes wait for the controller before it is considered lagging.
const PROVIDER_CHANGES_BUFFER: usize = 1024;

/// InferenceProviderConfig changes as the provider cache sees them. The watch that fills the
/// cache announces each change after the cache holds it, so the reconciles it triggers read
/// the new state. (A second watch as the trigger could deliver the change first: the reconcile
/// would decide on the old provider state, and nothing would trigger it again.)
#[derive(Clone, Debug)]
pub struct ProviderChanges {
    sender: broadcast::Sender<InferenceProviderConfig>,
}

impl Default for ProviderChanges {
    fn default() -> Self {
        Self::new()
    }
}

impl ProviderChanges {
    /// A channel with no listener yet.
    pub fn new() -> Self {
        let (sender, _) = broadcast::channel(PROVIDER_CHANGES_BUFFER);
        ProviderChanges { sender }
    }

    /// Announces a change (created, updated or deleted provider); nobody listening is fine.
    pub fn announce(&self, ipc: InferenceProviderConfig) {
        // An error only means no controller is running (not the leader): nothing to trigger.
        let _ = self.sender.send(ipc);
    }

    /// A listener for changes announced from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<InferenceProviderConfig> {
        self.sender.subscribe()
    }
}

/// The changes as a controller trigger stream. A listener that fell behind gets every cached
/// provider instead of the changes it missed.
fn provider_trigger(
    changes: broadcast::Receiver<InferenceProviderConfig>,
    providers: Store<InferenceProviderConfig>,
) -> impl Stream<Item = Result<InferenceProviderConfig, watcher::Error>> + Send + 'static {
    stream::unfold(
        (changes, providers),
        |(mut changes, providers)| async move {
            let batch: Vec<InferenceProviderConfig> = match changes.recv().await {
                Ok(ipc) => vec![ipc],
                Err(RecvError::Lagged(missed)) => {
                    tracing::warn!(
                        missed,
                        "provider changes overflowed; re-queueing the deployments of every provider"
                    );
                    providers
                        .state()
                        .iter()
                        .map(|ipc| (**ipc).clone())
                        .collect()
                }
                Err(RecvError::Closed) => return None,
            };
            Some((
                stream::iter(batch.into_iter().map(Ok)),
                (changes, providers),
            ))
        },
    )
    .flatten()
}

/// Runs the controller until `shutdown`.
pub async fn run_controller(
    ctx: Arc<Context>,
    controller: Controller<ModelDeployment>,
    provider_changes: broadcast::Receiver<InferenceProviderConfig>,
    shutdown: CancellationToken,
) {
    let store = controller.store();
    let trigger = provider_trigger(provider_changes, ctx.providers.clone());
    let first_done = AtomicBool::new(false);
    tracing::info!("controller running: waiting for the deployment cache, then reconciling");
    controller
        // A provider appearing, changing its rules or its health, or going away re-queues the
        // deployments still waiting for selection and those it serves.
        .watches_stream(trigger, move |ipc: InferenceProviderConfig| {
            let provider = ipc.name_any();
            store
                .state()
                .into_iter()
                .filter(|md| {
                    let selected = md.selected_provider();
                    selected.is_none()
                        || selected == Some(provider.as_str())
                        || md.spec.explicit_provider() == Some(provider.as_str())
                })
                .map(|md| ObjectRef::from_obj(&*md))
                .collect::<Vec<_>>()
        })
        .graceful_shutdown_on(shutdown.cancelled_owned())
        .run(reconcile, error_policy, ctx)
        .for_each(|result| {
            // The first reconcile after a start says so at info: a silent start-up (caches not
            // synced, nothing queued) can then be told apart from a trigger that never came.
            match &result {
                Ok((object, _)) if !first_done.swap(true, Ordering::Relaxed) => {
                    tracing::info!(%object, "first reconcile done");
                }
                Err(e) => tracing::debug!(error = %e, "controller event"),
                Ok(_) => {}
            }
            async {}
        })
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::reflector;

    fn ipc(name: &str) -> InferenceProviderConfig {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig",
            "metadata": {"name": name}, "spec": {},
        }))
        .unwrap()
    }

    fn names(ipcs: &[Result<InferenceProviderConfig, watcher::Error>]) -> Vec<String> {
        ipcs.iter()
            .map(|r| r.as_ref().unwrap().name_any())
            .collect()
    }

    #[test]
    fn heartbeats_alone_are_not_selection_changes() {
        let mut seen = SelectionInputs::default();
        let mut provider = ipc("kaito");
        provider.status =
            serde_json::from_value(json!({"ready": true, "lastHeartbeat": "2026-01-01T00:00:00Z"}))
                .unwrap();
        assert!(seen.changed(&provider, false), "first sight");
        provider.status.as_mut().unwrap().last_heartbeat =
            serde_json::from_value(json!("2026-01-01T00:00:30Z")).unwrap();
        assert!(!seen.changed(&provider, false), "a heartbeat");
        provider.status.as_mut().unwrap().ready = Some(false);
        assert!(seen.changed(&provider, false), "readiness");
        assert!(seen.changed(&provider, true), "deletion");
    }

    #[tokio::test]
    async fn announced_changes_trigger_in_order() {
        let (store, _writer) = reflector::store();
        let changes = ProviderChanges::new();
        let trigger = provider_trigger(changes.subscribe(), store);
        changes.announce(ipc("kaito"));
        changes.announce(ipc("dynamo"));
        drop(changes);
        let seen: Vec<_> = trigger.collect().await;
        assert_eq!(names(&seen), ["kaito", "dynamo"]);
    }

    #[tokio::test]
    async fn a_lagging_listener_gets_every_cached_provider() {
        let (store, mut writer) = reflector::store();
        for name in ["dynamo", "kaito"] {
            writer.apply_watcher_event(&watcher::Event::Apply(ipc(name)));
        }
        let changes = ProviderChanges::new();
        let trigger = provider_trigger(changes.subscribe(), store);
        let overflow = 10;
        for i in 0..PROVIDER_CHANGES_BUFFER + overflow {
            changes.announce(ipc(&format!("p{i}")));
        }
        drop(changes);
        let seen = names(&trigger.collect::<Vec<_>>().await);
        let mut cached = seen[..2].to_vec();
        cached.sort();
        assert_eq!(cached, ["dynamo", "kaito"], "the cache first");
        assert_eq!(seen.len(), 2 + PROVIDER_CHANGES_BUFFER);
        assert_eq!(
            seen[2],
            format!("p{overflow}"),
            "then what is still buffered"
        );
    }
}
