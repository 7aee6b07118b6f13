//! The autoscaling shell: KEDA's CRD detection, the watches on the autoscalers, server-side
//! apply, deletion and events. Decisions are [`super::plan`]'s.

use std::sync::Arc;
use std::time::Duration;

use airunway_api::apply_body;
use airunway_api::cache_trim;
use airunway_api::compact_object::{CompactObject, compact_event};
use airunway_api::constants::field_managers::CORE_AUTOSCALING;
use airunway_api::constants::{event_actions, event_reasons, labels};
use airunway_api::kube_error::ErrorClass;
use airunway_api::runtime::{EventPublisher, touched_once_stored};
use airunway_api::v1alpha1::{EngineType, InferenceProviderConfig, ModelDeployment};
use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PatchParams};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::plan::{self, DesiredAutoscaling, Inputs, Kind, Live};
use super::{
    AutoscalingConfig, AutoscalingError, HPA_KIND, KEDA_GROUP, KEDA_VERSION, SCALED_OBJECT_KIND,
    SCALED_OBJECTS_CRD,
};
use crate::gateway::detect::serves;
use crate::gateway::names::{Names, provider_pool};

/// How long a reconcile waits for the autoscaler caches to fill.
const CACHE_SYNC_WAIT: Duration = Duration::from_secs(10);
/// Deployments queued for a reconcile by autoscaler changes before events are dropped (the
/// periodic resync covers a dropped one).
const TRIGGER_BUFFER: usize = 4096;

/// The ScaledObject resource.
pub fn scaled_objects_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(KEDA_GROUP, KEDA_VERSION, SCALED_OBJECT_KIND),
        "scaledobjects",
    )
}

/// The HorizontalPodAutoscaler resource.
pub fn hpas_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("autoscaling", "v2", HPA_KIND),
        "horizontalpodautoscalers",
    )
}

fn resource(kind: Kind) -> ApiResource {
    match kind {
        Kind::ScaledObject => scaled_objects_resource(),
        Kind::Hpa => hpas_resource(),
    }
}

/// The autoscaling of a running core.
pub struct Integration {
    client: Client,
    config: AutoscalingConfig,
    keda: watch::Receiver<bool>,
    /// Cached compactly (`CompactObject`), as every per-deployment cache.
    scaled_objects: Store<CompactObject>,
    hpas: Store<CompactObject>,
    events: EventPublisher,
    gateway: bool,
}

/// The deployment an autoscaler (ours, or the HPA KEDA made from ours, which carries its
/// labels) belongs to: by the `airunway.ai/model-deployment` label.
fn deployment_of(object: &impl ResourceExt) -> Option<ObjectRef<ModelDeployment>> {
    let namespace = object.namespace()?;
    let name = object.labels().get(labels::MODEL_DEPLOYMENT)?;
    Some(ObjectRef::new(name).within(&namespace))
}

fn autoscaled(md: &ModelDeployment) -> bool {
    md.spec
        .scaling
        .as_ref()
        .is_some_and(|s| s.autoscaling.is_some())
}

/// Watches `api` (objects labelled `airunway.ai/model-deployment`) into `writer`, sending the
/// deployment of every changed object.
fn spawn_watch(
    api: Api<DynamicObject>,
    writer: reflector::store::Writer<CompactObject>,
    sender: mpsc::Sender<ObjectRef<ModelDeployment>>,
    shutdown: CancellationToken,
    kind: &'static str,
) {
    let store = writer.as_reader();
    let stream = watcher(
        api,
        watcher::Config::default().labels(&format!(
            "{},{}",
            labels::MANAGED_BY,
            labels::MODEL_DEPLOYMENT
        )),
    )
    .default_backoff()
    .modify(|o: &mut DynamicObject| cache_trim::drop_ownership(&mut o.metadata))
    .map_ok(compact_event);
    // A re-list's triggers once the store holds it (`stored_triggers`).
    let stream = touched_once_stored(stream.reflect(writer), store);
    tokio::spawn(async move {
        futures::pin_mut!(stream);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                event = stream.next() => match event {
                    None => return,
                    Some(Ok(object)) => {
                        if let Some(owner) = deployment_of(&object) {
                            let _ = sender.try_send(owner);
                        }
                    }
                    Some(Err(e)) => tracing::debug!(kind, error = %e, "autoscaler watch error"),
                },
            }
        }
    });
}

/// Keeps `sender` at whether KEDA's ScaledObject CRD is served (a watch on that one CRD).
fn spawn_keda_detection(client: Client, sender: watch::Sender<bool>, shutdown: CancellationToken) {
    tokio::spawn(async move {
        let api: Api<CustomResourceDefinition> = Api::all(client);
        let (store, writer) = reflector::store();
        let config =
            watcher::Config::default().fields(&format!("metadata.name={SCALED_OBJECTS_CRD}"));
        let stream = watcher(api, config)
            .default_backoff()
            .modify(cache_trim::crd_availability)
            .reflect(writer);
        futures::pin_mut!(stream);
        loop {
            let event = tokio::select! {
                _ = shutdown.cancelled() => return,
                event = stream.next() => event,
            };
            match event {
                None => return,
                Some(Err(e)) => {
                    tracing::debug!(crd = SCALED_OBJECTS_CRD, error = %e, "CRD watch error");
                    continue;
                }
                Some(Ok(_)) => {}
            }
            let served = store.state().iter().any(|crd| serves(crd, KEDA_VERSION));
            sender.send_if_modified(|current| {
                let changed = *current != served;
                if changed {
                    tracing::info!(served, "KEDA ScaledObject CRD availability changed");
                }
                *current = served;
                changed
            });
        }
    });
}

impl Integration {
    /// Starts the KEDA CRD detection, the HorizontalPodAutoscaler watch and, once KEDA's CRD is
    /// served, the ScaledObject watch. Returns the integration and the stream of deployments to
    /// reconcile because an autoscaler or KEDA's availability changed. `gateway`: whether the
    /// core's gateway integration runs (pool metrics need it).
    pub fn start(
        client: Client,
        config: AutoscalingConfig,
        deployments: Store<ModelDeployment>,
        events: EventPublisher,
        gateway: bool,
        shutdown: CancellationToken,
    ) -> (
        Arc<Integration>,
        impl Stream<Item = ObjectRef<ModelDeployment>> + Send + 'static,
    ) {
        let (sender, receiver) = mpsc::channel(TRIGGER_BUFFER);
        let (keda_sender, keda) = watch::channel(false);
        spawn_keda_detection(client.clone(), keda_sender, shutdown.clone());
        let hpa_writer = reflector::store::Writer::<CompactObject>::new(hpas_resource());
        let hpas = hpa_writer.as_reader();
        spawn_watch(
            Api::all_with(client.clone(), &hpas_resource()),
            hpa_writer,
            sender.clone(),
            shutdown.clone(),
            HPA_KIND,
        );
        let so_writer = reflector::store::Writer::<CompactObject>::new(scaled_objects_resource());
        let scaled_objects = so_writer.as_reader();
        {
            // KEDA appearing or going: every autoscaled deployment is looked at again; the
            // ScaledObject watch starts the first time the CRD is served.
            let mut changes = keda.clone();
            let client = client.clone();
            let sender = sender.clone();
            let shutdown = shutdown.clone();
            tokio::spawn(async move {
                let mut writer = Some(so_writer);
                loop {
                    let served = *changes.borrow_and_update();
                    if served && let Some(writer) = writer.take() {
                        tracing::info!("KEDA served: watching ScaledObjects");
                        spawn_watch(
                            Api::all_with(client.clone(), &scaled_objects_resource()),
                            writer,
                            sender.clone(),
                            shutdown.clone(),
                            SCALED_OBJECT_KIND,
                        );
                    }
                    for md in deployments.state() {
                        if autoscaled(&md) {
                            let _ = sender.try_send(ObjectRef::from_obj(&*md));
                        }
                    }
                    tokio::select! {
                        _ = shutdown.cancelled() => return,
                        changed = changes.changed() => if changed.is_err() { return },
                    }
                }
            });
        }
        let integration = Arc::new(Integration {
            client,
            config,
            keda,
            scaled_objects,
            hpas,
            events,
            gateway,
        });
        let stream = futures::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|r| (r, receiver))
        });
        (integration, stream)
    }

    fn cached(
        store: &Store<CompactObject>,
        kind: Kind,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        let key = ObjectRef::new_with(name, resource(kind)).within(namespace);
        store
            .get(&key)
            .and_then(|o| serde_json::to_value(o.to_dynamic()).ok())
    }

    /// Whether the caches the plan reads are filled (the ScaledObject cache only while KEDA is
    /// served).
    async fn caches_ready(&self, keda: bool) -> bool {
        let wait = async {
            let _ = self.hpas.wait_until_ready().await;
            if keda {
                let _ = self.scaled_objects.wait_until_ready().await;
            }
        };
        tokio::time::timeout(CACHE_SYNC_WAIT, wait).await.is_ok()
    }

    /// The autoscaling part of `md`'s status after doing what `md` needs. `valid`: its spec
    /// passed validation; `engine`: the resolved engine; `labels`: what the runtime
    /// configuration propagates to the autoscaler.
    pub async fn reconcile(
        &self,
        md: &ModelDeployment,
        valid: bool,
        engine: Option<EngineType>,
        providers: &[InferenceProviderConfig],
        labels: &std::collections::BTreeMap<String, String>,
    ) -> DesiredAutoscaling {
        let keda = *self.keda.borrow();
        if !autoscaled(md) && !has_status(md) {
            // Nothing asked and nothing written: only a leftover object to look for.
            if self.hpas.is_empty() && self.scaled_objects.is_empty() {
                return DesiredAutoscaling::default();
            }
        }
        if !self.caches_ready(keda).await {
            tracing::debug!(deployment = %md.name_any(), "autoscaler caches not synced yet; status kept");
            return DesiredAutoscaling::current(md);
        }
        let namespace = md.namespace().unwrap_or_default();
        let name = md.name_any();
        let live = |store: &Store<CompactObject>, kind: Kind| {
            Self::cached(store, kind, &namespace, &name).map(|o| Live::of(&o, md))
        };
        let scaled_object = live(&self.scaled_objects, Kind::ScaledObject);
        let keda_hpa_name = scaled_object
            .as_ref()
            .and_then(|so| so.status.get("hpaName"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("keda-hpa-{name}"));
        let keda_hpa = Self::cached(&self.hpas, Kind::Hpa, &namespace, &keda_hpa_name)
            .and_then(|o| o.get("status").cloned());
        let inputs = Inputs {
            md,
            valid,
            engine,
            keda,
            prometheus_address: &self.config.prometheus_address,
            pool: self.gateway.then(|| pool_of(md, providers)),
            scaled_object,
            hpa: live(&self.hpas, Kind::Hpa),
            keda_hpa,
            labels: labels.clone(),
        };
        let mut plan = plan::plan(&inputs);
        // The watches see only labelled objects: before creating one, ask the API server
        // whether an object of the name exists that is not ours (never take it over).
        if let Some((kind, _)) = &plan.apply {
            let cached = match kind {
                Kind::ScaledObject => &inputs.scaled_object,
                Kind::Hpa => &inputs.hpa,
            };
            if cached.is_none() {
                match self.get(*kind, &namespace, &name).await {
                    Ok(Some(object)) => {
                        let live = Some(Live::of(&object, md));
                        let mut fresh = inputs.clone();
                        match kind {
                            Kind::ScaledObject => fresh.scaled_object = live,
                            Kind::Hpa => fresh.hpa = live,
                        }
                        plan = plan::plan(&fresh);
                    }
                    Ok(None) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, category = e.category(), "autoscaler read failed");
                        return plan::apply_failed(*kind, md, &e.to_string());
                    }
                }
            }
        }
        // A dry run writes nothing: its status names what would be written.
        if md.is_dry_run() {
            return crate::dry_run::autoscaling(plan, &name);
        }
        let reference = md.object_ref(&());
        for kind in &plan.delete {
            if let Err(e) = self.delete(*kind, &namespace, &name).await {
                tracing::warn!(error = %e, category = e.category(), "autoscaler clean-up failed");
            }
        }
        if let Some((kind, body)) = &plan.apply
            && let Err(e) = self.apply(*kind, body, &namespace, &name).await
        {
            tracing::warn!(error = %e, category = e.category(), "autoscaler apply failed");
            let status = plan::apply_failed(*kind, md, &e.to_string());
            if !md
                .condition(airunway_api::constants::condition_types::SCALING_READY)
                .is_some_and(|c| {
                    c.reason.as_deref()
                        == Some(airunway_api::constants::reasons::autoscaling::APPLY_FAILED)
                })
            {
                self.events
                    .warning(
                        &reference,
                        event_reasons::AUTOSCALER_FAILED,
                        event_actions::APPLY_AUTOSCALER,
                        status.conditions[0].message.clone(),
                    )
                    .await;
            }
            return status;
        }
        for event in &plan.events {
            self.events
                .normal(
                    &reference,
                    event.reason,
                    event_actions::APPLY_AUTOSCALER,
                    event.note.clone(),
                )
                .await;
        }
        plan.status
    }

    async fn get(
        &self,
        kind: Kind,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, AutoscalingError> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, &resource(kind));
        match api.get_opt(name).await {
            Ok(found) => Ok(found.and_then(|o| serde_json::to_value(o).ok())),
            Err(source) => Err(AutoscalingError::Api {
                action: format!("get {}", kind.as_str()),
                object: format!("{namespace}/{name}"),
                source,
            }),
        }
    }

    async fn apply(
        &self,
        kind: Kind,
        body: &Value,
        namespace: &str,
        name: &str,
    ) -> Result<(), AutoscalingError> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, &resource(kind));
        api.patch(
            name,
            &PatchParams::apply(CORE_AUTOSCALING)
                .force()
                .validation_strict(),
            &apply_body::apply(body),
        )
        .await
        .map(|_| ())
        .map_err(|source| AutoscalingError::Api {
            action: format!("apply {}", kind.as_str()),
            object: format!("{namespace}/{name}"),
            source,
        })
    }

    async fn delete(
        &self,
        kind: Kind,
        namespace: &str,
        name: &str,
    ) -> Result<(), AutoscalingError> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, &resource(kind));
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => Ok(()),
            Err(e) if ErrorClass::of(&e) == ErrorClass::NotFound => Ok(()),
            Err(source) => Err(AutoscalingError::Api {
                action: format!("delete {}", kind.as_str()),
                object: format!("{namespace}/{name}"),
                source,
            }),
        }
    }
}

/// Whether `md` carries autoscaling status the core wrote.
fn has_status(md: &ModelDeployment) -> bool {
    md.status.as_ref().is_some_and(|s| s.autoscaling.is_some())
        || md
            .condition(airunway_api::constants::condition_types::SCALING_READY)
            .is_some()
}

/// The deployment's InferencePool: the provider's (its capability's patterns) when the
/// provider manages it, else the core's (named after the deployment).
fn pool_of(md: &ModelDeployment, providers: &[InferenceProviderConfig]) -> (String, String) {
    let namespace = md.namespace().unwrap_or_default();
    let name = md.name_any();
    match crate::gateway::reconcile::capability(md, providers) {
        Some(c) if c.manages_inference_pool == Some(true) => provider_pool(
            c.inference_pool_name_pattern.as_deref(),
            c.inference_pool_namespace.as_deref(),
            &name,
            &namespace,
        ),
        _ => (namespace, Names::of(&name).pool),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airunway_api::constants::API_VERSION;
    use serde_json::json;

    #[test]
    fn autoscalers_map_to_their_deployment_by_label() {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "keda-hpa-qwen", "namespace": "team-a",
                         "labels": {labels::MODEL_DEPLOYMENT: "qwen", labels::MANAGED_BY: "airunway"}},
        }))
        .unwrap();
        assert_eq!(
            deployment_of(&object),
            Some(ObjectRef::new("qwen").within("team-a"))
        );
        let unlabelled: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "x", "namespace": "team-a"},
        }))
        .unwrap();
        assert_eq!(deployment_of(&unlabelled), None);
    }

    #[test]
    fn the_pool_is_the_core_s_unless_the_provider_manages_it() {
        let md: ModelDeployment = serde_json::from_value(json!({
            "apiVersion": API_VERSION, "kind": "ModelDeployment",
            "metadata": {"name": "qwen", "namespace": "team-a"},
            "spec": {"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "provider": {"name": "dynamo"}},
        }))
        .unwrap();
        assert_eq!(pool_of(&md, &[]), ("team-a".into(), "qwen".into()));
        let ipc: InferenceProviderConfig = serde_json::from_value(json!({
            "apiVersion": API_VERSION, "kind": "InferenceProviderConfig",
            "metadata": {"name": "dynamo"},
            "spec": {"capabilities": {"engines": [{"name": "vllm", "servingModes": ["aggregated"],
                "gateway": {"managesInferencePool": true, "inferencePoolNamePattern": "{name}-pool"}}]}},
        }))
        .unwrap();
        assert_eq!(pool_of(&md, &[ipc]), ("team-a".into(), "qwen-pool".into()));
    }
}
