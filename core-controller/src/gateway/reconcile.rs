//! The gateway integration's shell: watch caches, server-side apply, the Gateway listener
//! update with optimistic locking, clean-up, events and metrics. Decisions are the pure
//! modules'.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use airunway_api::apply_body;
use airunway_api::cache_trim;
use airunway_api::compact_object::{CompactObject, compact_event};
use airunway_api::constants::field_managers::CORE_GATEWAY;
use airunway_api::constants::{event_actions, event_reasons};
use airunway_api::kube_error::ErrorClass;
use airunway_api::runtime::{EventPublisher, touched_once_stored};
use airunway_api::v1alpha1::{GatewayCapability, InferenceProviderConfig, ModelDeployment, Phase};
use futures::{Stream, StreamExt, TryStreamExt};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PatchParams, PostParams,
};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::allowed;
use super::detect::Detector;
use super::names::Names;
use super::plan::{self, DesiredGateway, Intent};
use super::release::{self, GoneDeployments};
use super::render::{self, POOL_GROUP};
use super::route::{
    self, Answer, GatewayConfig, Kind, Lookup, Next, Observed, Read, RoutePlan, Step,
};
use super::select::{GatewayRef, GatewayView};
use super::watches::{self, PickerParts};
use super::{ALLOWED_NAMESPACES_ANNOTATION, GatewayError};
use crate::metrics::{CoreMetrics, GatewayActionLabels};

/// How often a Gateway listener update is retried after a conflict.
const GATEWAY_UPDATE_ATTEMPTS: u32 = 5;
/// How long a reconcile waits for the gateway caches to fill after the CRDs appeared.
const CACHE_SYNC_WAIT: Duration = Duration::from_secs(10);
/// Most reads one route plan may ask for (it asks for at most seven).
const MAX_READS: usize = 8;
/// Deployments queued for a reconcile by gateway-side changes before senders wait.
const TRIGGER_BUFFER: usize = 4096;

/// The API resource of `group/version` `kind` (`plural`).
pub fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn gateways_resource() -> ApiResource {
    resource(render::GATEWAY_GROUP, "v1", "Gateway", "gateways")
}
fn routes_resource() -> ApiResource {
    resource(render::GATEWAY_GROUP, "v1", "HTTPRoute", "httproutes")
}
fn pickers_resource() -> ApiResource {
    resource("apps", "v1", "Deployment", "deployments")
}
fn destination_rules_resource() -> ApiResource {
    resource(
        render::ISTIO_GROUP,
        super::detect::DESTINATION_RULE_VERSION,
        "DestinationRule",
        "destinationrules",
    )
}
fn pools_resource() -> ApiResource {
    resource(POOL_GROUP, "v1", "InferencePool", "inferencepools")
}
fn rewrites_resource() -> ApiResource {
    resource(
        render::POOL_X_GROUP,
        render::MODEL_REWRITE_VERSION,
        "InferenceModelRewrite",
        "inferencemodelrewrites",
    )
}

/// The resource of a kind the route plan reads.
fn kind_resource(kind: Kind) -> ApiResource {
    match kind {
        Kind::InferencePool => pools_resource(),
        Kind::PickerStack => pickers_resource(),
        Kind::ModelRewrite => rewrites_resource(),
        Kind::HttpRoute => routes_resource(),
        Kind::Service => resource("", "v1", "Service", "services"),
    }
}

/// The resource of a rendered object.
fn resource_of(object: &Value) -> Option<ApiResource> {
    let kind = object.get("kind")?.as_str()?;
    Some(match kind {
        "ServiceAccount" => resource("", "v1", kind, "serviceaccounts"),
        "ConfigMap" => resource("", "v1", kind, "configmaps"),
        "Service" => resource("", "v1", kind, "services"),
        "Role" => resource("rbac.authorization.k8s.io", "v1", kind, "roles"),
        "RoleBinding" => resource("rbac.authorization.k8s.io", "v1", kind, "rolebindings"),
        "Deployment" => resource("apps", "v1", kind, "deployments"),
        "InferencePool" => pools_resource(),
        "HTTPRoute" => routes_resource(),
        "DestinationRule" => destination_rules_resource(),
        "InferenceModelRewrite" => rewrites_resource(),
        _ => return None,
    })
}

/// The gateway integration of a running core.
pub struct Integration {
    client: Client,
    config: GatewayConfig,
    detector: Detector,
    gateways: Store<DynamicObject>,
    /// The objects the integration writes, one or more per routed deployment, are cached
    /// compactly (`CompactObject`: a `Value` tree is about ten times its JSON).
    routes: Store<CompactObject>,
    pools: Store<CompactObject>,
    /// The endpoint picker Deployments (labelled), so one deleted by hand is noticed.
    pickers: Store<CompactObject>,
    /// The picker's other objects (labelled, metadata only), likewise.
    parts: PickerParts,
    /// Our InferenceModelRewrites (labelled).
    rewrites: Store<CompactObject>,
    deployments: Store<ModelDeployment>,
    events: EventPublisher,
    metrics: CoreMetrics,
}

/// Whether a deployment is one the integration acts for (routed or to be cleaned).
fn concerns(md: &ModelDeployment) -> bool {
    md.status.as_ref().and_then(|s| s.phase) == Some(Phase::Running) || plan::may_have_objects(md)
}

fn send_all(
    deployments: &Store<ModelDeployment>,
    sender: &mpsc::Sender<ObjectRef<ModelDeployment>>,
    filter: impl Fn(&ModelDeployment) -> bool,
) {
    for md in deployments.state() {
        if filter(&md) && concerns(&md) {
            // A full buffer means a burst is already queued; dropping is safe because the
            // periodic resync re-checks every deployment.
            let _ = sender.try_send(ObjectRef::from_obj(&*md));
        }
    }
}

impl Integration {
    /// Starts the CRD detection and, once the kinds are served, the Gateway, HTTPRoute and
    /// InferencePool watches. Returns the integration and the stream of deployments to
    /// reconcile because something gateway-side changed (a route's status, a Gateway, a pool,
    /// the CRDs).
    pub fn start(
        client: Client,
        config: GatewayConfig,
        deployments: Store<ModelDeployment>,
        events: EventPublisher,
        metrics: CoreMetrics,
        shutdown: CancellationToken,
    ) -> (
        Arc<Integration>,
        impl Stream<Item = ObjectRef<ModelDeployment>> + Send + 'static,
    ) {
        let detector = Detector::start(client.clone(), shutdown.clone());
        let (sender, receiver) = mpsc::channel(TRIGGER_BUFFER);
        let gateway_writer = reflector::store::Writer::new(gateways_resource());
        let gateways = gateway_writer.as_reader();
        let route_writer = reflector::store::Writer::<CompactObject>::new(routes_resource());
        let routes = route_writer.as_reader();
        let pool_writer = reflector::store::Writer::<CompactObject>::new(pools_resource());
        let pools = pool_writer.as_reader();
        let picker_writer = reflector::store::Writer::<CompactObject>::new(pickers_resource());
        let pickers = picker_writer.as_reader();
        let (parts, part_writers) = PickerParts::new();
        let rewrite_writer = reflector::store::Writer::<CompactObject>::new(rewrites_resource());
        let rewrites = rewrite_writer.as_reader();

        // CRDs appearing or going: every deployment concerned is looked at again.
        {
            let mut changes = detector.changes();
            let deployments = deployments.clone();
            let sender = sender.clone();
            let shutdown = shutdown.clone();
            let client = client.clone();
            tokio::spawn(async move {
                let mut writers = Some((gateway_writer, route_writer, pool_writer, picker_writer));
                let mut part_writers = Some(part_writers);
                let mut rewrite_writer = Some(rewrite_writer);
                loop {
                    let detection = *changes.borrow_and_update();
                    if detection.available()
                        && let Some(writers) = writers.take()
                    {
                        spawn_watches(&client, writers, &deployments, &sender, &shutdown);
                        if let Some(part_writers) = part_writers.take() {
                            watches::spawn_picker_parts(&client, part_writers, &sender, &shutdown);
                        }
                        watches::spawn_user_routes(
                            &client,
                            &routes_resource(),
                            &deployments,
                            &sender,
                            &shutdown,
                        );
                    }
                    // The rewrites' kind is optional: watched once it is served.
                    if detection.available()
                        && detection.model_rewrites
                        && let Some(writer) = rewrite_writer.take()
                    {
                        spawn_rewrites(&client, writer, &sender, &shutdown);
                    }
                    send_all(&deployments, &sender, |_| true);
                    tokio::select! {
                        _ = shutdown.cancelled() => return,
                        changed = changes.changed() => if changed.is_err() { return },
                    }
                }
            });
        }
        let integration = Arc::new(Integration {
            client: client.clone(),
            config,
            detector,
            gateways,
            routes,
            pools,
            pickers,
            parts,
            rewrites,
            deployments,
            events,
            metrics,
        });
        let stream = futures::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|r| (r, receiver))
        });
        (integration, stream)
    }

    fn count(&self, action: &str, ok: bool) {
        self.metrics
            .gateway_actions
            .get_or_create(&GatewayActionLabels {
                action: action.to_string(),
                result: if ok { "ok" } else { "error" }.to_string(),
            })
            .inc();
    }

    /// The gateway part of `md`'s status after doing what `md` needs; `capability` is the
    /// provider's gateway capability for the resolved engine.
    pub async fn reconcile(
        &self,
        md: &ModelDeployment,
        providers: &[InferenceProviderConfig],
    ) -> DesiredGateway {
        self.reconcile_with_labels(md, providers, &BTreeMap::new())
            .await
    }

    /// [`Integration::reconcile`] for `md` (the effective deployment), with the labels its
    /// runtime configuration propagates to the pool, the picker's objects and the route.
    pub async fn reconcile_with_labels(
        &self,
        md: &ModelDeployment,
        providers: &[InferenceProviderConfig],
        labels: &BTreeMap<String, String>,
    ) -> DesiredGateway {
        let detection = self.detector.current();
        let capability = capability(md, providers);
        // A provider that manages its pool makes it only when the deployment asks (Dynamo).
        let only_if_asked = provider_pool(&capability) || self.no_gateway(md, &detection).await;
        match plan::intent(md, &detection, only_if_asked) {
            Intent::Clean { status } => {
                if plan::may_have_objects(md) || md.metadata.deletion_timestamp.is_some() {
                    self.clean(md, &capability, providers).await;
                }
                status
            }
            Intent::Route => {
                if !self.caches_ready().await {
                    tracing::debug!(deployment = %md.name_any(), "gateway caches not synced yet; status kept");
                    return DesiredGateway::current(md);
                }
                self.route(md, &capability, providers, labels).await
            }
        }
    }

    /// Whether the cluster has no Gateway at all and no flag names one, from the Gateway
    /// watch's cache (a Gateway created later wakes the deployments through that watch). Asked
    /// only when the answer matters; `false` while the cache cannot tell.
    async fn no_gateway(&self, md: &ModelDeployment, detection: &super::Detection) -> bool {
        let enabled = md.spec.gateway.as_ref().and_then(|g| g.enabled);
        if enabled.is_some()
            // Naming a Gateway or a pool is asking to be routed.
            || plan::asked_by(md).is_some()
            || md.metadata.deletion_timestamp.is_some()
            || self.config.gateway.is_some()
            || !detection.available()
        {
            return false;
        }
        let ready = tokio::time::timeout(CACHE_SYNC_WAIT, self.gateways.wait_until_ready())
            .await
            .is_ok_and(|r| r.is_ok());
        ready && self.gateways.is_empty()
    }

    async fn caches_ready(&self) -> bool {
        let wait = async {
            let _ = self.gateways.wait_until_ready().await;
            let _ = self.routes.wait_until_ready().await;
            let _ = self.pools.wait_until_ready().await;
            let _ = self.pickers.wait_until_ready().await;
            self.parts.wait_until_ready().await;
        };
        tokio::time::timeout(CACHE_SYNC_WAIT, wait).await.is_ok()
    }

    fn gateway_views(&self) -> Vec<GatewayView> {
        let mut views: Vec<GatewayView> = self
            .gateways
            .state()
            .iter()
            .filter_map(|g| serde_json::to_value(&**g).ok())
            .filter_map(|g| GatewayView::from_object(&g))
            .collect();
        views.sort_by(|a, b| a.reference.cmp(&b.reference));
        views
    }

    fn cached(
        store: &Store<CompactObject>,
        resource: &ApiResource,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        let key = ObjectRef::new_with(name, resource.clone()).within(namespace);
        store
            .get(&key)
            .and_then(|o| serde_json::to_value(o.to_dynamic()).ok())
    }

    async fn get(
        &self,
        resource: &ApiResource,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, GatewayError> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, resource);
        match api.get_opt(name).await {
            Ok(found) => Ok(found.and_then(|o| serde_json::to_value(o).ok())),
            Err(source) => Err(GatewayError::Api {
                action: format!("get {}", resource.kind),
                object: format!("{namespace}/{name}"),
                source,
            }),
        }
    }

    async fn apply(&self, object: &Value) -> Result<Value, GatewayError> {
        let namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let resource = resource_of(object).ok_or_else(|| GatewayError::Invalid {
            object: format!("{namespace}/{name}"),
            message: format!("no resource for kind {kind}"),
        })?;
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, &resource);
        let result = api
            .patch(
                name,
                &PatchParams::apply(CORE_GATEWAY).force().validation_strict(),
                &apply_body::apply(object),
            )
            .await;
        self.count("apply", result.is_ok());
        match result {
            Ok(applied) => Ok(serde_json::to_value(applied).unwrap_or(Value::Null)),
            Err(source) => Err(GatewayError::Api {
                action: format!("apply {kind}"),
                object: format!("{namespace}/{name}"),
                source,
            }),
        }
    }

    async fn delete(&self, resource: &ApiResource, namespace: &str, name: &str) -> bool {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, resource);
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => {
                self.count("delete", true);
                true
            }
            Err(e) if ErrorClass::of(&e) == ErrorClass::NotFound => false,
            Err(e) => {
                self.count("delete", false);
                tracing::warn!(kind = %resource.kind, object = %format!("{namespace}/{name}"), error = %e, "gateway clean-up: delete failed");
                false
            }
        }
    }

    /// Routes a running deployment: gathers what [`route::plan`] asks for (watch caches, the
    /// API server, the model server), then does what it decided.
    async fn route(
        &self,
        md: &ModelDeployment,
        capability: &Option<GatewayCapability>,
        providers: &[InferenceProviderConfig],
        labels: &BTreeMap<String, String>,
    ) -> DesiredGateway {
        let mut observed = Observed {
            md,
            labels: labels.clone(),
            capability: capability.as_ref(),
            config: &self.config,
            gateways: self.gateway_views(),
            destination_rules: self.detector.current().destination_rules,
            model_rewrites: self.detector.current().model_rewrites,
            answers: BTreeMap::new(),
        };
        for _ in 0..MAX_READS {
            match route::plan(&observed) {
                Next::Read(read) => {
                    let answer = self.read(&read).await;
                    observed.answers.insert(read, answer);
                }
                Next::Act(plan) => return self.act(md, capability, providers, *plan).await,
            }
        }
        tracing::error!(deployment = %md.name_any(), "gateway plan asked for more than {MAX_READS} reads; status kept");
        DesiredGateway::current(md)
    }

    /// Answers one of the plan's reads.
    async fn read(&self, read: &Read) -> Answer {
        match read {
            Read::ServedModel { url } => Answer::Model(super::discover::served_model(url).await),
            Read::Object {
                kind,
                lookup,
                namespace,
                name,
            } => {
                let resource = kind_resource(*kind);
                let store = match kind {
                    Kind::InferencePool => Some(&self.pools),
                    Kind::PickerStack => Some(&self.pickers),
                    Kind::HttpRoute => Some(&self.routes),
                    Kind::ModelRewrite => Some(&self.rewrites),
                    Kind::Service => None,
                };
                if *lookup != Lookup::Server {
                    let pools_since = self.detector.current().inference_pools_since;
                    let cached = store
                        .and_then(|store| Self::cached(store, &resource, namespace, name))
                        // A pool kept from an InferencePool CRD deleted since is gone.
                        .filter(|o| {
                            *kind != Kind::InferencePool
                                || !super::detect::predates_crd(o, pools_since)
                        })
                        // The stack counts as there only when all of it is.
                        .filter(|_| {
                            *kind != Kind::PickerStack || self.parts.complete(namespace, name)
                        });
                    if cached.is_some() || *lookup == Lookup::Cache {
                        return Answer::Object(cached);
                    }
                }
                match self.get(&resource, namespace, name).await {
                    Ok(found) => Answer::Object(found),
                    Err(e) => Answer::Failed(e.to_string()),
                }
            }
        }
    }

    /// Does what the plan decided and returns the status that follows.
    async fn act(
        &self,
        md: &ModelDeployment,
        capability: &Option<GatewayCapability>,
        providers: &[InferenceProviderConfig],
        plan: RoutePlan,
    ) -> DesiredGateway {
        if plan.clean {
            self.clean(md, capability, providers).await;
        }
        let namespace = md.namespace().unwrap_or_default();
        let mut allowance_error = None;
        if let Some(gateway) = &plan.allow
            && let Err(e) = self.change_allowance(gateway, &namespace, true).await
        {
            allowance_error = Some(e.to_string());
        }
        let reference = md.object_ref(&());
        let mut applied_route = None;
        for step in plan.steps {
            match step {
                Step::Apply { object, failure } => match self.apply(&object).await {
                    Ok(applied) => {
                        if object["kind"] == "HTTPRoute" {
                            applied_route = Some(applied);
                        }
                    }
                    Err(e) => return DesiredGateway::condition(false, failure, e.to_string()),
                },
                Step::Event(event) => {
                    if event.warning {
                        self.events
                            .warning(&reference, event.reason, event.action, event.note)
                            .await;
                    } else {
                        self.events
                            .normal(&reference, event.reason, event.action, event.note)
                            .await;
                    }
                }
                Step::Delete {
                    kind,
                    namespace,
                    name,
                } => {
                    if let Some(resource) = resource_of(&json!({"kind": kind})) {
                        self.delete_owned(&resource, &namespace, &name, md).await;
                    }
                }
                Step::Count(action) => self.count(action, true),
            }
        }
        if let Some(before) = &plan.moved_from {
            tracing::info!(deployment = %md.name_any(), gateway = %before, "routed through another Gateway now");
            self.release_allowance(&namespace, None, providers).await;
        }
        plan.report.finish(applied_route, allowance_error)
    }

    /// Removes what the integration created for `md` and, when it was the last routed
    /// deployment of its namespace, the namespace's allowance on the Gateway.
    async fn clean(
        &self,
        md: &ModelDeployment,
        capability: &Option<GatewayCapability>,
        providers: &[InferenceProviderConfig],
    ) {
        let namespace = md.namespace().unwrap_or_default();
        let name = md.name_any();
        let names = Names::of(&name);
        let detection = self.detector.current();
        let mut removed = 0;
        if detection.http_routes
            && md
                .spec
                .gateway
                .as_ref()
                .and_then(|g| g.http_route_ref.as_ref())
                .is_none()
        {
            removed += usize::from(
                self.delete_owned(&routes_resource(), &namespace, &names.route, md)
                    .await,
            );
        }
        if detection.model_rewrites {
            removed += usize::from(
                self.delete_owned(&rewrites_resource(), &namespace, &names.rewrite, md)
                    .await,
            );
        }
        let manages_pool = capability.as_ref().and_then(|c| c.manages_inference_pool) == Some(true);
        if !manages_pool {
            if detection.inference_pools {
                removed += usize::from(
                    self.delete_owned(&pools_resource(), &namespace, &names.pool, md)
                        .await,
                );
            }
            if detection.destination_rules {
                removed += usize::from(
                    self.delete_owned(&destination_rules_resource(), &namespace, &names.epp, md)
                        .await,
                );
            }
            for kind in [
                "Service",
                "Deployment",
                "ConfigMap",
                "RoleBinding",
                "Role",
                "ServiceAccount",
            ] {
                if let Some(resource) = resource_of(&json!({"kind": kind})) {
                    removed += usize::from(
                        self.delete_owned(&resource, &namespace, &names.epp, md)
                            .await,
                    );
                }
            }
        }
        if removed > 0 {
            self.events
                .normal(
                    &md.object_ref(&()),
                    event_reasons::GATEWAY_RESOURCES_REMOVED,
                    event_actions::CLEAN_GATEWAY,
                    format!("{removed} gateway object(s) of this deployment removed"),
                )
                .await;
        }
        self.release_allowance(&namespace, Some(&name), providers)
            .await;
    }

    /// Takes `namespace`'s allowance back from every Gateway that carries it when no
    /// deployment of the namespace other than `leaving` is routed (from the caches).
    async fn release_allowance(
        &self,
        namespace: &str,
        leaving: Option<&str>,
        providers: &[InferenceProviderConfig],
    ) {
        let detection = self.detector.current();
        if !self.config.patch_allowed_routes || !detection.gateways {
            return;
        }
        let no_gateway = self.config.gateway.is_none() && self.gateways.is_empty();
        let views = self.gateway_views();
        let cluster_choice = super::select::select_gateway(self.config.gateway.as_ref(), &views)
            .ok()
            .map(|g| g.reference.clone());
        // The Gateway each other routed deployment of the namespace uses.
        let routed_through: std::collections::BTreeSet<GatewayRef> = self
            .deployments
            .state()
            .iter()
            .filter(|other| {
                other.namespace().as_deref() == Some(namespace)
                    && Some(other.name_any().as_str()) != leaving
                    && other.metadata.deletion_timestamp.is_none()
                    && matches!(
                        plan::intent(
                            other,
                            &detection,
                            no_gateway || provider_pool(&self::capability(other, providers)),
                        ),
                        Intent::Route
                    )
            })
            .filter_map(|other| super::select::requested(other).or_else(|| cluster_choice.clone()))
            .collect();
        let release = release::gateways_to_release(
            namespace,
            views
                .iter()
                .map(|view| (&view.reference, &view.managed_namespaces)),
            &routed_through,
        );
        for gateway in release {
            if let Err(e) = self.change_allowance(&gateway, namespace, false).await {
                tracing::warn!(%gateway, %namespace, error = %e, "could not take back the namespace's allowance");
            }
        }
    }

    /// Runs until `shutdown`: takes back the allowance of the namespaces `gone` records
    /// (deployments deleted without a reconcile seeing them being deleted; every annotated
    /// namespace after a relist), once the Gateway cache holds the Gateways.
    pub async fn release_gone(
        self: Arc<Self>,
        gone: Arc<GoneDeployments>,
        providers: Store<InferenceProviderConfig>,
        shutdown: CancellationToken,
    ) {
        loop {
            let pending = tokio::select! {
                _ = shutdown.cancelled() => return,
                pending = gone.next() => pending,
            };
            // The Gateway watch starts when the CRDs are served; until its first list nothing
            // can carry an allowance of ours (what was recorded waits, a bounded set).
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = self.gateways.wait_until_ready() => {}
            }
            let managed = self
                .gateway_views()
                .into_iter()
                .flat_map(|view| view.managed_namespaces);
            let namespaces = release::namespaces_to_check(pending, managed);
            let providers: Vec<InferenceProviderConfig> =
                providers.state().iter().map(|p| (**p).clone()).collect();
            for namespace in namespaces {
                self.release_allowance(&namespace, None, &providers).await;
            }
        }
    }

    /// Deletes `namespace/name` if it belongs to `md` (owner reference with its UID).
    async fn delete_owned(
        &self,
        resource: &ApiResource,
        namespace: &str,
        name: &str,
        md: &ModelDeployment,
    ) -> bool {
        let uid = md.uid().unwrap_or_default();
        let cached = match resource.kind.as_str() {
            "HTTPRoute" => Self::cached(&self.routes, resource, namespace, name),
            "InferencePool" => Self::cached(&self.pools, resource, namespace, name),
            "InferenceModelRewrite" => Self::cached(&self.rewrites, resource, namespace, name),
            _ => None,
        };
        let live = match cached {
            Some(object) => Some(object),
            None => self.get(resource, namespace, name).await.ok().flatten(),
        };
        let owned = live
            .as_ref()
            .and_then(|o| o.pointer("/metadata/ownerReferences"))
            .and_then(Value::as_array)
            .is_some_and(|refs| {
                refs.iter()
                    .any(|r| r.get("uid").and_then(Value::as_str) == Some(uid.as_str()))
            });
        owned && self.delete(resource, namespace, name).await
    }

    /// Adds (`allow`) or removes `namespace` on the Gateway's listeners: read, compute, replace
    /// with the read `resourceVersion`; a conflict re-reads.
    async fn change_allowance(
        &self,
        gateway: &GatewayRef,
        namespace: &str,
        allow: bool,
    ) -> Result<(), GatewayError> {
        let api: Api<DynamicObject> = Api::namespaced_with(
            self.client.clone(),
            &gateway.namespace,
            &gateways_resource(),
        );
        let action = if allow {
            "allow_namespace"
        } else {
            "disallow_namespace"
        };
        for _ in 0..GATEWAY_UPDATE_ATTEMPTS {
            let live = api
                .get(&gateway.name)
                .await
                .map_err(|source| GatewayError::Api {
                    action: "get Gateway".into(),
                    object: gateway.to_string(),
                    source,
                })?;
            let mut object = serde_json::to_value(&live).unwrap_or(Value::Null);
            let Some(view) = GatewayView::from_object(&object) else {
                return Err(GatewayError::Invalid {
                    object: gateway.to_string(),
                    message: "no name or namespace".into(),
                });
            };
            let change = if allow {
                allowed::allow(
                    &view.listeners,
                    &view.managed_namespaces,
                    &gateway.namespace,
                    namespace,
                )
            } else {
                allowed::disallow(
                    &view.listeners,
                    &view.managed_namespaces,
                    &gateway.namespace,
                    namespace,
                )
            };
            let Some(change) = change else {
                return Ok(());
            };
            object["spec"]["listeners"] = json!(change.listeners);
            let annotations = &mut object["metadata"]["annotations"];
            if !annotations.is_object() {
                *annotations = json!({});
            }
            if change.managed.is_empty() {
                if let Some(map) = annotations.as_object_mut() {
                    map.remove(ALLOWED_NAMESPACES_ANNOTATION);
                }
            } else {
                annotations[ALLOWED_NAMESPACES_ANNOTATION] =
                    json!(allowed::format_managed(&change.managed));
            }
            // Only what the update needs (the Gateway's status is its controller's).
            if let Some(map) = object.as_object_mut() {
                map.remove("status");
            }
            let body: DynamicObject =
                serde_json::from_value(object).map_err(|e| GatewayError::Invalid {
                    object: gateway.to_string(),
                    message: e.to_string(),
                })?;
            match api
                .replace(&gateway.name, &PostParams::default(), &body)
                .await
            {
                Ok(_) => {
                    self.count(action, true);
                    tracing::info!(%gateway, %namespace, allow, "Gateway listeners updated");
                    return Ok(());
                }
                Err(e) if ErrorClass::of(&e) == ErrorClass::Conflict => continue,
                Err(source) => {
                    self.count(action, false);
                    return Err(GatewayError::Api {
                        action: "update Gateway".into(),
                        object: gateway.to_string(),
                        source,
                    });
                }
            }
        }
        self.count(action, false);
        Err(GatewayError::Conflict {
            object: gateway.to_string(),
            attempts: GATEWAY_UPDATE_ATTEMPTS,
        })
    }
}

/// Whether the provider builds the pool itself (and so only when the deployment asks).
fn provider_pool(capability: &Option<GatewayCapability>) -> bool {
    capability.as_ref().and_then(|c| c.manages_inference_pool) == Some(true)
}

/// The provider's gateway capability for `md`'s provider and resolved engine.
pub fn capability(
    md: &ModelDeployment,
    providers: &[InferenceProviderConfig],
) -> Option<GatewayCapability> {
    let provider = md
        .selected_provider()
        .or_else(|| md.spec.explicit_provider())?;
    let engine = md.resolved_engine()?;
    providers
        .iter()
        .find(|p| p.name_any() == provider)?
        .spec
        .capabilities
        .as_ref()?
        .engine_capabilities()
        .into_iter()
        .find(|c| c.name == engine)?
        .gateway
}

/// The deployment an owned object belongs to.
fn owner_of(object: &impl ResourceExt) -> Option<ObjectRef<ModelDeployment>> {
    let namespace = object.namespace()?;
    object
        .owner_references()
        .iter()
        .find(|r| {
            r.kind == "ModelDeployment" && r.api_version == airunway_api::constants::API_VERSION
        })
        .map(|r| ObjectRef::new(&r.name).within(&namespace))
}

/// Watches our InferenceModelRewrites (labelled) into `writer`: a change or deletion wakes the
/// owner.
fn spawn_rewrites(
    client: &Client,
    writer: reflector::store::Writer<CompactObject>,
    sender: &mpsc::Sender<ObjectRef<ModelDeployment>>,
    shutdown: &CancellationToken,
) {
    let store = writer.as_reader();
    let stream = watcher(
        Api::<DynamicObject>::all_with(client.clone(), &rewrites_resource()),
        watcher::Config::default().labels(render::GATEWAY_OF_LABEL),
    )
    .default_backoff()
    .modify(|o: &mut DynamicObject| cache_trim::drop_ownership(&mut o.metadata))
    .map_ok(compact_event);
    let stream = touched_once_stored(stream.reflect(writer), store);
    let sender = sender.clone();
    let shutdown = shutdown.clone();
    tokio::spawn(async move {
        futures::pin_mut!(stream);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                event = stream.next() => match event {
                    None => return,
                    Some(Ok(object)) => {
                        if let Some(owner) = owner_of(&object) {
                            let _ = sender.try_send(owner);
                        }
                    }
                    Some(Err(e)) => tracing::debug!(error = %e, "InferenceModelRewrite watch error"),
                },
            }
        }
    });
}

fn spawn_watches(
    client: &Client,
    (gateway_writer, route_writer, pool_writer, picker_writer): (
        reflector::store::Writer<DynamicObject>,
        reflector::store::Writer<CompactObject>,
        reflector::store::Writer<CompactObject>,
        reflector::store::Writer<CompactObject>,
    ),
    deployments: &Store<ModelDeployment>,
    sender: &mpsc::Sender<ObjectRef<ModelDeployment>>,
    shutdown: &CancellationToken,
) {
    tracing::info!(
        "gateway CRDs served: watching Gateways, HTTPRoutes, InferencePools and endpoint picker Deployments"
    );
    // Gateways: a change (status addresses, listeners, labels, a Gateway added or removed)
    // can change every routed deployment's status.
    let gateways = watcher(
        Api::<DynamicObject>::all_with(client.clone(), &gateways_resource()),
        watcher::Config::default(),
    )
    .default_backoff()
    .modify(|o: &mut DynamicObject| cache_trim::drop_ownership(&mut o.metadata));
    let store = gateway_writer.as_reader();
    let gateways = touched_once_stored(gateways.reflect(gateway_writer), store);
    {
        let deployments = deployments.clone();
        let sender = sender.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            futures::pin_mut!(gateways);
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    event = gateways.next() => match event {
                        None => return,
                        Some(Ok(_)) => send_all(&deployments, &sender, |_| true),
                        Some(Err(e)) => tracing::debug!(error = %e, "Gateway watch error"),
                    },
                }
            }
        });
    }
    // Routes AI Runway created (labelled): their owner is looked at again.
    let routes = watcher(
        Api::<DynamicObject>::all_with(client.clone(), &routes_resource()),
        watcher::Config::default().labels(render::GATEWAY_OF_LABEL),
    )
    .default_backoff()
    .modify(|o: &mut DynamicObject| cache_trim::drop_ownership(&mut o.metadata))
    .map_ok(compact_event);
    let store = route_writer.as_reader();
    let routes = touched_once_stored(routes.reflect(route_writer), store);
    // Pools: ours go to their owner; a provider's to the deployments of its namespace.
    let pools = watcher(
        Api::<DynamicObject>::all_with(client.clone(), &pools_resource()),
        watcher::Config::default(),
    )
    .default_backoff()
    .modify(|o: &mut DynamicObject| cache_trim::drop_ownership(&mut o.metadata))
    .map_ok(compact_event);
    let store = pool_writer.as_reader();
    let pools = touched_once_stored(pools.reflect(pool_writer), store);
    // Endpoint picker Deployments (labelled): one deleted or changed wakes its owner.
    let pickers = watcher(
        Api::<DynamicObject>::all_with(client.clone(), &pickers_resource()),
        watcher::Config::default().labels(render::GATEWAY_OF_LABEL),
    )
    .default_backoff()
    .modify(|o: &mut DynamicObject| cache_trim::drop_ownership(&mut o.metadata))
    .map_ok(compact_event);
    let store = picker_writer.as_reader();
    let pickers = touched_once_stored(pickers.reflect(picker_writer), store);
    for (kind, stream) in [
        ("HTTPRoute", routes.boxed()),
        ("InferencePool", pools.boxed()),
        ("Deployment", pickers.boxed()),
    ] {
        let deployments = deployments.clone();
        let sender = sender.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let mut stream = stream;
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    event = stream.next() => match event {
                        None => return,
                        Some(Ok(object)) => match owner_of(&object) {
                            Some(owner) => { let _ = sender.try_send(owner); }
                            None => {
                                let namespace = object.namespace();
                                send_all(&deployments, &sender, |md| md.namespace() == namespace);
                            }
                        },
                        Some(Err(e)) => tracing::debug!(kind, error = %e, "gateway watch error"),
                    },
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::render::Owner;

    fn md(value: serde_json::Value) -> ModelDeployment {
        serde_json::from_value(value).unwrap()
    }

    fn ipc(name: &str, engines: serde_json::Value) -> InferenceProviderConfig {
        serde_json::from_value(
            json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig",
            "metadata": {"name": name}, "spec": {"capabilities": {"engines": engines}}}),
        )
        .unwrap()
    }

    #[test]
    fn the_capability_of_the_provider_and_resolved_engine() {
        let providers = [
            ipc(
                "llmd",
                json!([{"name": "vllm", "servingModes": ["aggregated"], "gpuSupport": true, "cpuSupport": false,
                "gateway": {"endpointPicker": {"image": "epp:llmd"}}}]),
            ),
            ipc(
                "dynamo",
                json!([{"name": "vllm", "servingModes": ["aggregated"], "gpuSupport": true, "cpuSupport": false,
                "gateway": {"managesInferencePool": true, "inferencePoolNamePattern": "{name}-pool"}}]),
            ),
            ipc("kaito", json!(["vllm", "llamacpp"])),
        ];
        let named = |provider: &str| {
            md(
                json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
                "metadata": {"name": "m", "namespace": "n"},
                "spec": {"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "provider": {"name": provider}}}),
            )
        };
        let llmd = capability(&named("llmd"), &providers).unwrap();
        assert_eq!(
            llmd.endpoint_picker.unwrap().image.as_deref(),
            Some("epp:llmd")
        );
        let dynamo = capability(&named("dynamo"), &providers).unwrap();
        assert_eq!(dynamo.manages_inference_pool, Some(true));
        assert_eq!(
            capability(&named("kaito"), &providers),
            None,
            "name-only engines have none"
        );
        assert_eq!(capability(&named("absent"), &providers), None);
    }

    #[test]
    fn only_running_or_routed_deployments_are_woken() {
        let base = json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "n", "generation": 1}, "spec": {"model": {"id": "a/b"}}});
        let mut running = base.clone();
        running["status"] = json!({"phase": "Running"});
        assert!(concerns(&md(running)));
        let mut pending = base.clone();
        pending["status"] = json!({"phase": "Pending"});
        assert!(!concerns(&md(pending)));
        let mut was_routed = base;
        was_routed["status"] = json!({"phase": "Deploying", "gateway": {"modelName": "x"}});
        assert!(concerns(&md(was_routed)), "its objects must be cleaned up");
    }

    #[test]
    fn every_rendered_kind_has_a_resource() {
        let owner = Owner {
            name: "m".into(),
            namespace: "n".into(),
            uid: "u".into(),
            propagated: BTreeMap::new(),
        };
        let names = Names::of("m");
        for object in render::endpoint_picker(&owner, &names, "i", "c")
            .into_iter()
            .chain([render::destination_rule(&owner, &names)])
        {
            assert!(resource_of(&object).is_some(), "{}", object["kind"]);
        }
        assert_eq!(
            resource_of(&json!({"kind": "InferencePool"}))
                .unwrap()
                .plural,
            "inferencepools"
        );
        assert_eq!(
            resource_of(&json!({"kind": "HTTPRoute"})).unwrap().group,
            "gateway.networking.k8s.io"
        );
        let rewrite = render::model_rewrite(
            &owner,
            &names,
            &render::PoolRef {
                namespace: "n".into(),
                name: "m".into(),
            },
            &["a"],
            "h",
        );
        let resource = resource_of(&rewrite).unwrap();
        assert_eq!(
            (
                resource.group.as_str(),
                resource.version.as_str(),
                resource.plural.as_str()
            ),
            (
                "inference.networking.x-k8s.io",
                "v1alpha2",
                "inferencemodelrewrites"
            )
        );
        assert!(
            resource_of(&json!({"kind": "Secret"})).is_none(),
            "never a Secret"
        );
    }
}
