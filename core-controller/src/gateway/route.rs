//! What routing a `Running` deployment takes, decided in one pure function ([`plan`]).
//!
//! The shell ([`super::reconcile`]) drives it: it puts what it knows into an [`Observed`]
//! (the deployment, the provider's capability, the core's flags, the Gateways of the watch
//! cache) and calls [`plan`]. The plan either asks for one more [`Read`] (an object from a
//! watch cache or the API server, or the model the server reports on `/v1/models`), which the
//! shell answers into [`Observed::answers`] before calling [`plan`] again, or returns a
//! [`RoutePlan`]: everything the shell then does, in order, and the status that follows.
//! Asking step by step means nothing is read that the decision does not need (the Service
//! only when the pool is applied, the server only when the spec names no model).
//!
//! The decisions, in the order they are taken:
//! 1. the Gateway: the deployment's `spec.gateway.gatewayRef`, else the cluster-wide choice
//!    ([`select_for`]); none: `NoGateway` (the deployment's objects removed);
//! 2. the model name ([`model::resolve`], asking the server when the spec names none);
//!    unknown: `ModelNameUnknown`;
//! 3. the namespace's allowance on the Gateway's listeners (`--patch-gateway-allowed-routes`);
//! 4. the pool: the user's (`spec.gateway.poolRef`, which must exist and not be one AI Runway
//!    created; our own stack, if the deployment had one, is removed), the provider's (it must
//!    exist, in the deployment's namespace), or ours with its endpoint picker, applied when the
//!    inputs' hash on the pool differs or a picker object is gone;
//!    then the InferenceModelRewrite naming the deployment's LoRA adapters for that pool
//!    (where the kind is served; removed when the adapters are);
//! 5. the route: the user's (`spec.gateway.httpRouteRef`, which must exist), or ours (matching
//!    the model name and each adapter's), applied when its inputs' hash differs, and not
//!    recreated when the user deleted it
//!    ([`plan::route_deleted`]);
//! 6. `GatewayReady` from the route's status ([`plan::route_condition`]) once the applies
//!    succeeded, with the allowance's failure when the route is not accepted.

use std::collections::BTreeMap;

use airunway_api::constants::condition_types::GATEWAY_READY;
use airunway_api::constants::{event_actions, event_reasons};
use airunway_api::v1alpha1::{ConditionStatus, GatewayCapability, ModelDeployment};
use kube::ResourceExt;
use serde_json::Value;

use super::names::{self, Names};
use super::plan::{self, DesiredGateway, GatewayFields};
use super::reasons;
use super::render::{self, Owner, PoolRef};
use super::select::{self, GatewayRef, GatewayView, select_for};
use super::{INPUTS_HASH_ANNOTATION, allowed, discover, model};

/// The metric action counted when a user deleted the route the core created.
pub const ROUTE_DELETED_BY_USER: &str = "route_deleted_by_user";

/// The integration's options (core flags).
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    /// The Gateway named by `--gateway-name` / `--gateway-namespace`.
    pub gateway: Option<GatewayRef>,
    /// `--epp-image`: the endpoint picker image when the provider names none.
    pub epp_image: String,
    /// `--patch-gateway-allowed-routes`: let other namespaces' routes attach.
    pub patch_allowed_routes: bool,
}

/// The kinds the plan reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `inferencepools.inference.networking.k8s.io` (watched).
    InferencePool,
    /// The endpoint picker stack, found by its `apps/v1` Deployment (watched by its label):
    /// the shell answers the Deployment only when the stack's ServiceAccount, Role,
    /// RoleBinding, ConfigMap and Service are in their watch caches too.
    PickerStack,
    /// `inferencemodelrewrites.inference.networking.x-k8s.io` (ours watched by their label).
    ModelRewrite,
    /// `httproutes.gateway.networking.k8s.io` (ours watched by their label).
    HttpRoute,
    /// The provider's endpoint `v1` Service (not watched).
    Service,
}

/// Where an object is looked up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lookup {
    /// The watch cache only (absent when not there).
    Cache,
    /// The API server only.
    Server,
    /// The watch cache, else the API server (the cache may lag a create).
    CacheThenServer,
}

/// One read the plan needs before it can decide.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Read {
    /// The model the server at `url` reports on `/v1/models`.
    ServedModel {
        /// The in-cluster URL ([`discover::models_url`]).
        url: String,
    },
    /// An object.
    Object {
        /// Its kind.
        kind: Kind,
        /// Where it is looked up.
        lookup: Lookup,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
}

impl Read {
    fn object(kind: Kind, lookup: Lookup, namespace: &str, name: &str) -> Read {
        Read::Object {
            kind,
            lookup,
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }
}

/// The answer to a [`Read`].
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// The served model (`None`: unknown, for whatever reason).
    Model(Option<String>),
    /// The object (`None`: it does not exist).
    Object(Option<Value>),
    /// The API server refused the read (the error, as the condition message shows it).
    Failed(String),
}

/// Everything the plan decides from: what the shell gathered so far.
#[derive(Clone, Debug)]
pub struct Observed<'a> {
    /// The deployment (`Running`, routed: [`plan::intent`] said so).
    pub md: &'a ModelDeployment,
    /// The labels its runtime configuration propagates to the objects.
    pub labels: BTreeMap<String, String>,
    /// The provider's gateway capability for the resolved engine.
    pub capability: Option<&'a GatewayCapability>,
    /// The core's flags.
    pub config: &'a GatewayConfig,
    /// The Gateways of the watch cache, sorted by reference.
    pub gateways: Vec<GatewayView>,
    /// Istio's DestinationRule is served: the endpoint picker gets one (as in the Go AI Runway).
    pub destination_rules: bool,
    /// The InferenceModelRewrite kind is served: LoRA adapters get one.
    pub model_rewrites: bool,
    /// The reads the plan asked for, answered.
    pub answers: BTreeMap<Read, Answer>,
}

/// An event on the deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Warning (else Normal).
    pub warning: bool,
    /// The reason ([`event_reasons`]).
    pub reason: &'static str,
    /// The action ([`event_actions`]).
    pub action: &'static str,
    /// The note.
    pub note: String,
}

/// One thing the shell does, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Server-side apply `object`; if the API server refuses it, nothing after it is done and
    /// `GatewayReady` is False with reason `failure` and the error.
    Apply {
        /// The body.
        object: Value,
        /// The reason when it fails.
        failure: &'static str,
    },
    /// Delete `namespace/name` of `kind` (a kind [`render`] writes) if the deployment owns it
    /// (an owner reference with its UID).
    Delete {
        /// The kind (`InferencePool`, `Deployment`, ...).
        kind: &'static str,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// Publish an event.
    Event(Event),
    /// Count a gateway action (metric `airunway_gateway_actions_total`, result ok).
    Count(&'static str),
}

/// Where `GatewayReady` is read from once every step succeeded.
#[derive(Clone, Debug, PartialEq)]
pub enum RouteSource {
    /// The route as it is (nothing applied).
    Live(Value),
    /// The route the HTTPRoute apply step returned.
    Applied,
}

/// The status once every step succeeded.
#[derive(Clone, Debug, PartialEq)]
pub enum Report {
    /// This status (a failed allowance change is not reported).
    Fixed(DesiredGateway),
    /// `GatewayReady` from the route's status for `gateway`, `status.gateway` = `fields`.
    Route {
        /// Which route.
        route: RouteSource,
        /// The route's parent.
        gateway: GatewayRef,
        /// The pool and route, for the True message.
        what: String,
        /// `status.gateway`.
        fields: GatewayFields,
    },
}

impl Report {
    /// The status, given the route an apply step returned and the allowance change's error: a
    /// route not accepted (yet) says the listeners could not be changed, since that may be why.
    pub fn finish(
        self,
        applied_route: Option<Value>,
        allowance_error: Option<String>,
    ) -> DesiredGateway {
        match self {
            Report::Fixed(status) => status,
            Report::Route {
                route,
                gateway,
                what,
                fields,
            } => {
                let route = match route {
                    RouteSource::Live(route) => route,
                    RouteSource::Applied => applied_route.unwrap_or(Value::Null),
                };
                let mut condition = plan::route_condition(&route, &gateway, &what);
                if let Some(message) = allowance_error
                    && condition.status != ConditionStatus::True
                {
                    condition.reason = reasons::GATEWAY_PATCH_FAILED.to_string();
                    condition.message = format!("{}; {message}", condition.message);
                }
                DesiredGateway {
                    condition: Some(condition),
                    fields: Some(fields),
                }
            }
        }
    }
}

/// Everything routing a deployment takes, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct RoutePlan {
    /// First remove the deployment's gateway objects (no Gateway to route through).
    pub clean: bool,
    /// Add the deployment's namespace to this Gateway's listeners.
    pub allow: Option<GatewayRef>,
    /// The deployment was routed through another Gateway before (`status.gateway` names it):
    /// once the steps succeeded, the namespace's allowance there is taken back unless another
    /// deployment of the namespace still routes through it.
    pub moved_from: Option<GatewayRef>,
    /// Then these, in order; the first apply that fails ends the reconcile.
    pub steps: Vec<Step>,
    /// The status once every step succeeded.
    pub report: Report,
}

impl RoutePlan {
    fn status(status: DesiredGateway) -> RoutePlan {
        RoutePlan {
            clean: false,
            allow: None,
            moved_from: None,
            steps: Vec::new(),
            report: Report::Fixed(status),
        }
    }
}

/// What the plan needs next.
#[derive(Clone, Debug, PartialEq)]
pub enum Next {
    /// This read first (then [`plan`] again).
    Read(Read),
    /// Everything is known: do this.
    Act(Box<RoutePlan>),
}

/// Why a step of the plan stops early: a read it needs first, or the status it ends with
/// (after the steps decided so far).
enum Stop {
    Read(Read),
    Status(Box<DesiredGateway>),
}

/// `GatewayReady=False` with `reason` and `message`, and nothing after it.
fn stop(reason: &str, message: String) -> Stop {
    Stop::Status(Box::new(DesiredGateway::condition(false, reason, message)))
}

/// An unanswered read stops the plan: `need!(observed, read)` is the answer, or returns
/// `Err(Stop::Read(read))`.
macro_rules! need {
    ($observed:expr, $read:expr) => {{
        let read = $read;
        match $observed.answers.get(&read) {
            Some(answer) => answer.clone(),
            None => return Err(Stop::Read(read)),
        }
    }};
}

/// The model name `status.gateway.modelName` already carries for this generation (the server
/// is asked once per spec).
fn known_model(md: &ModelDeployment) -> Option<String> {
    let same_generation = md.condition(GATEWAY_READY).is_some_and(|c| {
        c.observed_generation.is_some() && c.observed_generation == md.metadata.generation
    });
    if !same_generation {
        return None;
    }
    md.status
        .as_ref()?
        .gateway
        .as_ref()
        .and_then(|g| g.model_name.clone())
}

/// The URL of the deployment's `/v1/models` (`None`: no endpoint Service in the status).
fn models_url(md: &ModelDeployment, namespace: &str) -> Option<String> {
    let endpoint = md.status.as_ref()?.endpoint.as_ref()?;
    let service = endpoint.service.as_deref().filter(|s| !s.is_empty())?;
    Some(discover::models_url(
        service,
        namespace,
        endpoint.port.unwrap_or(8000),
    ))
}

/// The hash annotation of an object.
fn inputs_hash(object: Option<&Value>) -> Option<&str> {
    object
        .and_then(|o| {
            o.pointer(&format!(
                "/metadata/annotations/{}",
                INPUTS_HASH_ANNOTATION.replace('/', "~1")
            ))
        })
        .and_then(Value::as_str)
}

/// The object a read found (`None`: absent, or the read failed).
fn existing(answer: Answer) -> Option<Value> {
    match answer {
        Answer::Object(object) => object,
        Answer::Model(_) | Answer::Failed(_) => None,
    }
}

fn event(warning: bool, reason: &'static str, action: &'static str, note: String) -> Step {
    Step::Event(Event {
        warning,
        reason,
        action,
        note,
    })
}

/// The deployment being routed: who owns the objects and their names.
struct Target {
    namespace: String,
    owner: Owner,
    names: Names,
}

impl Target {
    fn of(md: &ModelDeployment, labels: &BTreeMap<String, String>) -> Target {
        let name = md.name_any();
        let namespace = md.namespace().unwrap_or_default();
        Target {
            names: Names::of(&name),
            owner: Owner {
                name,
                namespace: namespace.clone(),
                uid: md.uid().unwrap_or_default(),
                propagated: labels.clone(),
            },
            namespace,
        }
    }
}

/// Decides everything routing `observed.md` takes (see the module docs), or the read it
/// needs first.
pub fn plan(observed: &Observed<'_>) -> Next {
    let md = observed.md;
    let target = Target::of(md, &observed.labels);
    // 1. The Gateway.
    let own = select::requested(md);
    let gateway = match select_for(
        own.as_ref(),
        observed.config.gateway.as_ref(),
        &observed.gateways,
    ) {
        Ok(gateway) => gateway,
        Err(message) => {
            return Next::Act(Box::new(RoutePlan {
                clean: plan::may_have_objects(md),
                ..RoutePlan::status(DesiredGateway::condition(
                    false,
                    reasons::NO_GATEWAY,
                    message,
                ))
            }));
        }
    };
    // 2. The model name.
    let model_name = match model_name(observed, &target) {
        Ok(model_name) => model_name,
        Err(Stop::Read(read)) => return Next::Read(read),
        Err(Stop::Status(status)) => return Next::Act(Box::new(RoutePlan::status(*status))),
    };
    // 3. The namespace's allowance on the Gateway's listeners.
    let allow = (observed.config.patch_allowed_routes
        && !allowed::is_allowed(
            &gateway.listeners,
            &gateway.reference.namespace,
            &target.namespace,
        ))
    .then(|| gateway.reference.clone());
    // 4. and 5. The pool and the route, with the steps they take.
    let mut steps = Vec::new();
    let adapter_models = adapter_models(observed, &model_name);
    let report = pool(observed, &target, &mut steps).and_then(|pool| {
        adapters(observed, &target, &pool, &adapter_models, &mut steps)?;
        route(
            observed,
            &target,
            gateway,
            &model_name,
            &adapter_models,
            &pool,
            &mut steps,
        )
    });
    let report = match report {
        Ok(report) => report,
        Err(Stop::Read(read)) => return Next::Read(read),
        Err(Stop::Status(status)) => Report::Fixed(*status),
    };
    Next::Act(Box::new(RoutePlan {
        clean: false,
        allow,
        moved_from: moved_from(md, &gateway.reference),
        steps,
        report,
    }))
}

/// The Gateway `status.gateway` names when it is not `now` (the deployment moved; a status
/// written without `gatewayName` cannot tell).
fn moved_from(md: &ModelDeployment, now: &GatewayRef) -> Option<GatewayRef> {
    let status = md.status.as_ref()?.gateway.as_ref()?;
    let before = GatewayRef {
        namespace: status.gateway_namespace.clone().filter(|n| !n.is_empty())?,
        name: status.gateway_name.clone().filter(|n| !n.is_empty())?,
    };
    (&before != now).then_some(before)
}

/// The routed model name ([`model::resolve`]), asking the server only when the spec names
/// none and this generation has not asked yet.
fn model_name(observed: &Observed<'_>, target: &Target) -> Result<String, Stop> {
    let md = observed.md;
    let ignores_served_name = observed.capability.and_then(|c| c.ignores_served_name) == Some(true);
    let discovered = if model::needs_discovery(&md.spec, ignores_served_name) {
        match (known_model(md), models_url(md, &target.namespace)) {
            (Some(known), _) => Some(known),
            (None, Some(url)) => match need!(observed, Read::ServedModel { url }) {
                Answer::Model(model) => model,
                Answer::Object(_) | Answer::Failed(_) => None,
            },
            (None, None) => None,
        }
    } else {
        None
    };
    model::resolve(&md.spec, ignores_served_name, discovered.as_deref())
        .map(|(model_name, _)| model_name)
        .map_err(|message| stop(reasons::NO_MODEL_NAME, message))
}

/// The pool the route points at: the provider's (it must exist, in the deployment's
/// namespace), or ours, whose endpoint picker stack and pool are applied when the pool's
/// inputs hash differs or the picker Deployment is gone.
fn pool(observed: &Observed<'_>, target: &Target, steps: &mut Vec<Step>) -> Result<PoolRef, Stop> {
    let md = observed.md;
    let capability = observed.capability;
    let (namespace, names, owner) = (&target.namespace, &target.names, &target.owner);
    if let Some(pool_name) = md.spec.gateway.as_ref().and_then(|g| g.pool_ref.as_deref()) {
        return users_pool(observed, target, pool_name, steps);
    }
    if capability.and_then(|c| c.manages_inference_pool) == Some(true) {
        let (pool_namespace, pool_name) = names::provider_pool(
            capability.and_then(|c| c.inference_pool_name_pattern.as_deref()),
            capability.and_then(|c| c.inference_pool_namespace.as_deref()),
            &owner.name,
            namespace,
        );
        let found = need!(
            observed,
            Read::object(
                Kind::InferencePool,
                Lookup::CacheThenServer,
                &pool_namespace,
                &pool_name
            )
        );
        if existing(found).is_none() {
            let provider = md.selected_provider().unwrap_or("the provider");
            return Err(stop(
                reasons::POOL_NOT_FOUND,
                format!(
                    "waiting for {provider} to create InferencePool {pool_namespace}/{pool_name} (it manages the pool and endpoint picker of this engine)"
                ),
            ));
        }
        if &pool_namespace != namespace {
            return Err(stop(
                reasons::POOL_FAILED,
                format!(
                    "InferencePool {pool_namespace}/{pool_name} is in another namespace than the deployment; routes to pools in other namespaces (ReferenceGrant) are not supported yet"
                ),
            ));
        }
        return Ok(PoolRef {
            namespace: pool_namespace,
            name: pool_name,
        });
    }
    let picker = capability.and_then(|c| c.endpoint_picker.as_ref());
    let image = picker
        .and_then(|p| p.image.clone())
        .filter(|i| !i.is_empty())
        .unwrap_or_else(|| observed.config.epp_image.clone());
    let default_config = if md.spec.lora_adapters().is_empty() {
        render::DEFAULT_EPP_CONFIG
    } else {
        render::DEFAULT_EPP_CONFIG_WITH_LORA
    };
    let config = picker
        .and_then(|p| p.config_data.clone())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| default_config.to_string());
    let endpoint = md.status.as_ref().and_then(|s| s.endpoint.as_ref());
    let service_name = endpoint.and_then(|e| e.service.clone()).unwrap_or_default();
    let service_port = endpoint.and_then(|e| e.port);
    let provider_selector = capability
        .and_then(|c| c.pool_selector.as_ref())
        .filter(|labels| !labels.is_empty());
    let selector = render::pool_selector(provider_selector, &owner.name);
    let mut inputs = vec![
        owner.uid.clone(),
        service_name.clone(),
        service_port.map(|p| p.to_string()).unwrap_or_default(),
        image.clone(),
        config.clone(),
        // The stack's render revision: a render change (here the picker's plain metrics)
        // applies every stack once after an upgrade.
        PICKER_REVISION.to_string(),
    ];
    // Only a provider's selector is an input (the default one leaves the hashes of existing
    // pools as they were); likewise Istio's DestinationRule, so the stack is applied again
    // when Istio is installed or removed.
    if provider_selector.is_some() {
        inputs.extend(selector.iter().map(|(key, value)| format!("{key}={value}")));
    }
    if observed.destination_rules {
        inputs.push("istio-destination-rule".to_string());
    }
    inputs.extend(owner.label_inputs());
    let hash = render::inputs_hash(&inputs.iter().map(String::as_str).collect::<Vec<_>>());
    let ours = PoolRef {
        namespace: namespace.clone(),
        name: names.pool.clone(),
    };
    let live_pool = existing(need!(
        observed,
        Read::object(Kind::InferencePool, Lookup::Cache, namespace, &names.pool)
    ));
    if inputs_hash(live_pool.as_ref()) == Some(hash.as_str()) {
        let picker = need!(
            observed,
            Read::object(Kind::PickerStack, Lookup::Cache, namespace, &names.epp)
        );
        if existing(picker).is_some() {
            return Ok(ours);
        }
    }
    let service = if service_name.is_empty() {
        None
    } else {
        existing(need!(
            observed,
            Read::object(Kind::Service, Lookup::Server, namespace, &service_name)
        ))
    };
    let port = render::target_port(service.as_ref(), service_port);
    for object in render::endpoint_picker(owner, names, &image, &config) {
        steps.push(Step::Apply {
            object,
            failure: reasons::EPP_FAILED,
        });
    }
    let mut istio = String::new();
    if observed.destination_rules {
        steps.push(Step::Apply {
            object: render::destination_rule(owner, names),
            failure: reasons::EPP_FAILED,
        });
        istio = format!(", Istio DestinationRule {}", names.epp);
    }
    // The pool last: its hash says the whole stack is applied.
    steps.push(Step::Apply {
        object: render::pool(owner, names, &selector, port, &hash),
        failure: reasons::POOL_FAILED,
    });
    steps.push(event(
        false,
        event_reasons::GATEWAY_RESOURCES_APPLIED,
        event_actions::APPLY_INFERENCE_POOL,
        format!(
            "InferencePool {namespace}/{} and endpoint picker {} applied (target port {port}, image {image}{istio})",
            names.pool, names.epp
        ),
    ));
    Ok(ours)
}

/// The endpoint picker stack's render revision, one of the pool's inputs (see [`pool`]).
const PICKER_REVISION: &str = "picker-2";

/// Whether `object` carries an owner reference with `uid`.
fn owned_by(object: &Value, uid: &str) -> bool {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| {
            refs.iter()
                .any(|r| r.get("uid").and_then(Value::as_str) == Some(uid))
        })
}

/// The kinds of our own pool and picker stack, in the order they are removed.
const STACK_KINDS: [&str; 6] = [
    "Service",
    "Deployment",
    "ConfigMap",
    "RoleBinding",
    "Role",
    "ServiceAccount",
];

/// The user's pool (`spec.gateway.poolRef`): it must exist in the deployment's namespace and
/// not be one AI Runway created; it is only read (its selector and picker are the user's). Our
/// own pool and picker, if the deployment had them before, are removed.
fn users_pool(
    observed: &Observed<'_>,
    target: &Target,
    pool_name: &str,
    steps: &mut Vec<Step>,
) -> Result<PoolRef, Stop> {
    let (namespace, names, owner) = (&target.namespace, &target.names, &target.owner);
    let found = match need!(
        observed,
        Read::object(
            Kind::InferencePool,
            Lookup::CacheThenServer,
            namespace,
            pool_name
        )
    ) {
        Answer::Object(found) => found,
        Answer::Model(_) => None,
        Answer::Failed(error) => return Err(stop(reasons::POOL_FAILED, error)),
    };
    let Some(pool) = found else {
        return Err(stop(
            reasons::POOL_NOT_FOUND,
            format!(
                "spec.gateway.poolRef names InferencePool {namespace}/{pool_name}, which does not exist; create it (inference.networking.k8s.io/v1, selecting this deployment's pods) or remove poolRef to have AI Runway create one"
            ),
        ));
    };
    let creator = pool
        .pointer(&format!(
            "/metadata/labels/{}",
            render::GATEWAY_OF_LABEL.replace('/', "~1")
        ))
        .and_then(Value::as_str);
    if let Some(creator) = creator {
        return Err(stop(
            reasons::POOL_REF_INVALID,
            format!(
                "spec.gateway.poolRef names InferencePool {namespace}/{pool_name}, which AI Runway created for deployment {creator}; name a pool you manage, or remove poolRef to have AI Runway create this deployment's own"
            ),
        ));
    }
    // Our own stack from before poolRef was set: removed (only what the deployment owns).
    let own = existing(need!(
        observed,
        Read::object(Kind::InferencePool, Lookup::Cache, namespace, &names.pool)
    ));
    if own.as_ref().is_some_and(|own| owned_by(own, &owner.uid)) {
        let delete = |kind: &'static str, name: &str| Step::Delete {
            kind,
            namespace: namespace.clone(),
            name: name.to_string(),
        };
        steps.push(delete("InferencePool", &names.pool));
        if observed.destination_rules {
            steps.push(delete("DestinationRule", &names.epp));
        }
        for kind in STACK_KINDS {
            steps.push(delete(kind, &names.epp));
        }
        steps.push(event(
            false,
            event_reasons::GATEWAY_RESOURCES_REMOVED,
            event_actions::CLEAN_GATEWAY,
            format!(
                "InferencePool {namespace}/{} and endpoint picker {} removed: spec.gateway.poolRef names InferencePool {pool_name}",
                names.pool, names.epp
            ),
        ));
    }
    Ok(PoolRef {
        namespace: namespace.clone(),
        name: pool_name.to_string(),
    })
}

/// The model names clients request the deployment's LoRA adapters under, in list order: each
/// adapter's name by the provider's `gateway.adapterModelPattern` (default the bare name), the
/// base model being `model_name`.
fn adapter_models(observed: &Observed<'_>, model_name: &str) -> Vec<String> {
    let pattern = observed
        .capability
        .and_then(|c| c.adapter_model_pattern.as_deref());
    observed
        .md
        .spec
        .lora_adapters()
        .iter()
        .map(|a| airunway_api::lora::adapter_model_name(pattern, model_name, &a.name))
        .collect()
}

/// The InferenceModelRewrite of the deployment's LoRA adapters for `pool`'s endpoint picker
/// ([`render::model_rewrite`]), where the cluster serves the kind: applied when its inputs'
/// hash differs (or it is gone), removed when the deployment has no adapters left.
fn adapters(
    observed: &Observed<'_>,
    target: &Target,
    pool: &PoolRef,
    adapter_models: &[String],
    steps: &mut Vec<Step>,
) -> Result<(), Stop> {
    if !observed.model_rewrites {
        return Ok(());
    }
    let (namespace, names, owner) = (&target.namespace, &target.names, &target.owner);
    let adapters: Vec<&str> = adapter_models.iter().map(String::as_str).collect();
    let lookup = if adapters.is_empty() {
        Lookup::Cache
    } else {
        Lookup::CacheThenServer
    };
    let live = match need!(
        observed,
        Read::object(Kind::ModelRewrite, lookup, namespace, &names.rewrite)
    ) {
        Answer::Object(live) => live,
        Answer::Model(_) => None,
        Answer::Failed(error) => return Err(stop(reasons::MODEL_REWRITE_FAILED, error)),
    };
    if adapters.is_empty() {
        if live.as_ref().is_some_and(|live| owned_by(live, &owner.uid)) {
            steps.push(Step::Delete {
                kind: "InferenceModelRewrite",
                namespace: namespace.clone(),
                name: names.rewrite.clone(),
            });
        }
        return Ok(());
    }
    let mut inputs = vec![owner.uid.clone(), pool.name.clone()];
    inputs.extend(adapters.iter().map(|a| format!("adapter:{a}")));
    inputs.extend(owner.label_inputs());
    let hash = render::inputs_hash(&inputs.iter().map(String::as_str).collect::<Vec<_>>());
    if inputs_hash(live.as_ref()) == Some(hash.as_str()) {
        return Ok(());
    }
    steps.push(Step::Apply {
        object: render::model_rewrite(owner, names, pool, &adapters, &hash),
        failure: reasons::MODEL_REWRITE_FAILED,
    });
    steps.push(event(
        false,
        event_reasons::GATEWAY_RESOURCES_APPLIED,
        event_actions::APPLY_MODEL_REWRITE,
        format!(
            "InferenceModelRewrite {namespace}/{} names the LoRA adapters {} for InferencePool {}",
            names.rewrite,
            adapters.join(", "),
            pool.name
        ),
    ));
    Ok(())
}

/// The route: the user's (`spec.gateway.httpRouteRef`, which must exist), or ours, applied
/// when its inputs hash differs and left deleted when the user deleted it.
fn route(
    observed: &Observed<'_>,
    target: &Target,
    gateway: &GatewayView,
    model_name: &str,
    adapter_models: &[String],
    pool: &PoolRef,
    steps: &mut Vec<Step>,
) -> Result<Report, Stop> {
    let md = observed.md;
    let (namespace, names, owner) = (&target.namespace, &target.names, &target.owner);
    let report = |route: RouteSource, what: String| Report::Route {
        route,
        gateway: gateway.reference.clone(),
        what,
        fields: GatewayFields {
            endpoint: gateway.endpoint(),
            model_name: model_name.to_string(),
            gateway_name: gateway.reference.name.clone(),
            gateway_namespace: gateway.reference.namespace.clone(),
        },
    };
    if let Some(route_name) = md
        .spec
        .gateway
        .as_ref()
        .and_then(|g| g.http_route_ref.as_ref())
    {
        return match need!(
            observed,
            Read::object(Kind::HttpRoute, Lookup::Server, namespace, route_name)
        ) {
            Answer::Object(Some(route)) => Ok(report(
                RouteSource::Live(route),
                format!(
                    "InferencePool {}/{} exists; HTTPRoute {namespace}/{route_name} is the user's (spec.gateway.httpRouteRef)",
                    pool.namespace, pool.name
                ),
            )),
            Answer::Object(None) | Answer::Model(_) => Err(stop(
                reasons::ROUTE_NOT_FOUND,
                format!(
                    "spec.gateway.httpRouteRef names HTTPRoute {namespace}/{route_name}, which does not exist; create it (backend InferencePool {}/{}) or remove httpRouteRef",
                    pool.namespace, pool.name
                ),
            )),
            Answer::Failed(error) => Err(stop(reasons::ROUTE_FAILED, error)),
        };
    }
    let mut model_names = vec![model_name];
    model_names.extend(
        adapter_models
            .iter()
            .map(String::as_str)
            .filter(|name| *name != model_name),
    );
    let mut inputs = vec![
        gateway.reference.to_string(),
        pool.namespace.clone(),
        pool.name.clone(),
        model_name.to_string(),
    ];
    // Adapter names only when there are any (the hashes of existing routes stay as they were).
    inputs.extend(model_names[1..].iter().map(|a| format!("adapter:{a}")));
    inputs.extend(owner.label_inputs());
    let hash = render::inputs_hash(&inputs.iter().map(String::as_str).collect::<Vec<_>>());
    let live = match need!(
        observed,
        Read::object(
            Kind::HttpRoute,
            Lookup::CacheThenServer,
            namespace,
            &names.route
        )
    ) {
        Answer::Object(live) => live,
        Answer::Model(_) => None,
        Answer::Failed(error) => return Err(stop(reasons::ROUTE_FAILED, error)),
    };
    if plan::route_deleted(md, live.is_some()) {
        // Told once: the condition remembers it.
        if md
            .condition(GATEWAY_READY)
            .and_then(|c| c.reason.as_deref())
            != Some(reasons::ROUTE_DELETED)
        {
            steps.push(Step::Count(ROUTE_DELETED_BY_USER));
            steps.push(event(
                true,
                event_reasons::HTTP_ROUTE_DELETED,
                event_actions::APPLY_HTTP_ROUTE,
                format!(
                    "HTTPRoute {namespace}/{} was deleted; it is not recreated for this spec",
                    names.route
                ),
            ));
        }
        return Err(stop(
            reasons::ROUTE_DELETED,
            format!(
                "HTTPRoute {namespace}/{} was deleted by someone else and is not recreated for this spec; change the spec (for example spec.gateway.enabled false, then true) to create it again, or name your own route in spec.gateway.httpRouteRef",
                names.route
            ),
        ));
    }
    let what = format!(
        "InferencePool {}/{} and HTTPRoute {namespace}/{} exist",
        pool.namespace, pool.name, names.route
    );
    if let Some(route) = live
        && inputs_hash(Some(&route)) == Some(hash.as_str())
    {
        return Ok(report(RouteSource::Live(route), what));
    }
    steps.push(Step::Apply {
        object: render::route(owner, names, &gateway.reference, pool, &model_names, &hash),
        failure: reasons::ROUTE_FAILED,
    });
    steps.push(event(
        false,
        event_reasons::GATEWAY_RESOURCES_APPLIED,
        event_actions::APPLY_HTTP_ROUTE,
        if model_names.len() > 1 {
            format!(
                "HTTPRoute {namespace}/{} routes model {model_name:?} and its adapters {} through Gateway {}",
                names.route,
                model_names[1..].join(", "),
                gateway.reference
            )
        } else {
            format!(
                "HTTPRoute {namespace}/{} routes model {model_name:?} through Gateway {}",
                names.route, gateway.reference
            )
        },
    ));
    Ok(report(RouteSource::Applied, what))
}

#[cfg(test)]
mod tests {
    //! Every path the gateway e2e suite drives (e2e/tests/gateway.rs), through [`plan`] with
    //! the reads answered from a map of objects, as the shell answers them from the caches and
    //! the API server.
    use super::*;
    use serde_json::json;

    const NS: &str = "team-a";
    const GATEWAY_NS: &str = "gateway-system";

    fn md(patch: Value) -> ModelDeployment {
        let mut object = json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "qwen", "namespace": NS, "uid": "uid-1", "generation": 2},
            "spec": {"model": {"id": "Qwen/Qwen3-0.6B", "servedName": "qwen3"}, "provider": {"name": "llmd"}},
            "status": {"phase": "Running", "provider": {"name": "llmd"},
                       "endpoint": {"service": "qwen", "port": 8000}}});
        json_patch::merge(&mut object, &patch);
        serde_json::from_value(object).unwrap()
    }

    fn gateway_object(namespace: &str, name: &str, labelled: bool) -> Value {
        let mut labels = json!({});
        if labelled {
            labels["airunway.ai/inference-gateway"] = json!("true");
        }
        json!({"metadata": {"name": name, "namespace": namespace, "labels": labels},
               "spec": {"listeners": [{"name": "http", "port": 80, "protocol": "HTTP",
                                       "allowedRoutes": {"namespaces": {"from": "Same"}}}]},
               "status": {"addresses": [{"value": "10.0.0.1"}]}})
    }

    fn gateway(namespace: &str, name: &str, labelled: bool) -> GatewayView {
        GatewayView::from_object(&gateway_object(namespace, name, labelled)).unwrap()
    }

    fn config() -> GatewayConfig {
        GatewayConfig {
            gateway: None,
            epp_image: "epp:default".into(),
            patch_allowed_routes: true,
        }
    }

    fn capability(value: Value) -> GatewayCapability {
        serde_json::from_value(value).unwrap()
    }

    /// What the reads find: objects by kind, namespace and name, the served model, and reads
    /// the API server refuses.
    #[derive(Default)]
    struct World {
        objects: BTreeMap<(Kind, String, String), Value>,
        served: Option<String>,
        refused: Vec<Kind>,
        istio: bool,
        rewrites: bool,
    }

    impl World {
        fn with(mut self, kind: Kind, namespace: &str, name: &str, object: Value) -> World {
            self.objects
                .insert((kind, namespace.into(), name.into()), object);
            self
        }

        fn answer(&self, read: &Read) -> Answer {
            match read {
                Read::ServedModel { .. } => Answer::Model(self.served.clone()),
                Read::Object {
                    kind,
                    namespace,
                    name,
                    ..
                } if self.refused.contains(kind) => {
                    Answer::Failed(format!("get {kind:?} {namespace}/{name}: refused"))
                }
                Read::Object {
                    kind,
                    namespace,
                    name,
                    ..
                } => Answer::Object(
                    self.objects
                        .get(&(*kind, namespace.clone(), name.clone()))
                        .cloned(),
                ),
            }
        }
    }

    /// Plans to the end; returns the plan and the reads it asked for, in order.
    fn run(
        md: &ModelDeployment,
        capability: Option<&GatewayCapability>,
        config: &GatewayConfig,
        gateways: Vec<GatewayView>,
        world: &World,
    ) -> (RoutePlan, Vec<Read>) {
        run_labelled(md, capability, config, gateways, world, BTreeMap::new())
    }

    /// [`run`] with the labels a runtime configuration propagates.
    fn run_labelled(
        md: &ModelDeployment,
        capability: Option<&GatewayCapability>,
        config: &GatewayConfig,
        gateways: Vec<GatewayView>,
        world: &World,
        labels: BTreeMap<String, String>,
    ) -> (RoutePlan, Vec<Read>) {
        let mut observed = Observed {
            md,
            labels,
            capability,
            config,
            gateways,
            destination_rules: world.istio,
            model_rewrites: world.rewrites,
            answers: BTreeMap::new(),
        };
        let mut reads = Vec::new();
        loop {
            match plan(&observed) {
                Next::Read(read) => {
                    assert!(!reads.contains(&read), "asked twice: {read:?}");
                    assert!(reads.len() < 7, "too many reads: {reads:?}");
                    observed.answers.insert(read.clone(), world.answer(&read));
                    reads.push(read);
                }
                Next::Act(plan) => return (*plan, reads),
            }
        }
    }

    fn applied_kinds(plan: &RoutePlan) -> Vec<(String, &'static str)> {
        plan.steps
            .iter()
            .filter_map(|s| match s {
                Step::Apply { object, failure } => {
                    Some((object["kind"].as_str().unwrap().to_string(), *failure))
                }
                _ => None,
            })
            .collect()
    }

    fn events(plan: &RoutePlan) -> Vec<&Event> {
        plan.steps
            .iter()
            .filter_map(|s| match s {
                Step::Event(e) => Some(e),
                _ => None,
            })
            .collect()
    }

    fn applied(plan: &RoutePlan, kind: &str) -> Value {
        plan.steps
            .iter()
            .find_map(|s| match s {
                Step::Apply { object, .. } if object["kind"] == kind => Some(object.clone()),
                _ => None,
            })
            .unwrap()
    }

    fn fixed_reason(plan: &RoutePlan) -> &str {
        match &plan.report {
            Report::Fixed(status) => &status.condition.as_ref().unwrap().reason,
            other => panic!("not a fixed status: {other:?}"),
        }
    }

    fn with_status(route: &Value, accepted: Option<(&str, &str)>) -> Value {
        let mut route = route.clone();
        route["metadata"]["generation"] = json!(1);
        let (status, reason) = accepted.unwrap_or(("True", "Accepted"));
        route["status"] = json!({"parents": [{
            "parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway",
                          "name": "inference-gateway", "namespace": GATEWAY_NS},
            "controllerName": "istio.io/gateway-controller",
            "conditions": [
                {"type": "Accepted", "status": status, "reason": reason,
                 "message": "listener http does not allow this namespace", "observedGeneration": 1},
                {"type": "ResolvedRefs", "status": "True", "reason": "ResolvedRefs",
                 "message": "ok", "observedGeneration": 1}]}]});
        route
    }

    /// The world after a first plan was carried out: its applied objects exist (the picker
    /// Deployment with them).
    fn world_after(plan: &RoutePlan) -> World {
        let mut world = World::default();
        for step in &plan.steps {
            if let Step::Apply { object, .. } = step {
                let kind = match object["kind"].as_str().unwrap() {
                    "InferencePool" => Kind::InferencePool,
                    "HTTPRoute" => Kind::HttpRoute,
                    "Deployment" => Kind::PickerStack,
                    "InferenceModelRewrite" => Kind::ModelRewrite,
                    _ => continue,
                };
                let meta = &object["metadata"];
                world = world.with(
                    kind,
                    meta["namespace"].as_str().unwrap(),
                    meta["name"].as_str().unwrap(),
                    object.clone(),
                );
            }
        }
        world
    }

    /// Propagated labels (docs/platform.md) go on every object of the stack and the route;
    /// unchanged they cost nothing, a changed value applies the stack and the route again.
    #[test]
    fn propagated_labels_are_applied_and_a_change_applies_again() {
        let md = md(json!({}));
        let gateways = vec![gateway(GATEWAY_NS, "inference-gateway", true)];
        let world = World {
            served: Some("qwen3".into()),
            ..World::default()
        };
        let team = |v: &str| BTreeMap::from([("org.example/team".to_string(), v.to_string())]);
        let (first, _) = run_labelled(&md, None, &config(), gateways.clone(), &world, team("ml"));
        for step in &first.steps {
            if let Step::Apply { object, .. } = step {
                assert_eq!(
                    object["metadata"]["labels"]["org.example/team"], "ml",
                    "{}",
                    object["kind"]
                );
            }
        }
        let after = world_after(&first);
        let (same, _) = run_labelled(&md, None, &config(), gateways.clone(), &after, team("ml"));
        assert!(
            applied_kinds(&same).is_empty(),
            "{:?}",
            applied_kinds(&same)
        );
        let (changed, _) = run_labelled(&md, None, &config(), gateways, &after, team("infra"));
        let kinds: Vec<String> = applied_kinds(&changed)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert!(kinds.contains(&"InferencePool".to_string()), "{kinds:?}");
        assert!(kinds.contains(&"HTTPRoute".to_string()), "{kinds:?}");
        assert_eq!(
            applied(&changed, "HTTPRoute")["metadata"]["labels"]["org.example/team"],
            "infra"
        );
    }

    /// G4: with Istio's DestinationRule served, the picker stack carries the Go AI Runway's
    /// DestinationRule, and the pool's hash differs from the one without (Istio installed later
    /// applies the stack again).
    #[test]
    fn with_istio_the_picker_gets_a_destination_rule() {
        let md = md(json!({}));
        let gateways = vec![gateway(GATEWAY_NS, "inference-gateway", true)];
        let plain = World::default();
        let istio = World {
            istio: true,
            ..World::default()
        };
        let (without, _) = run(&md, None, &config(), gateways.clone(), &plain);
        let (with, _) = run(&md, None, &config(), gateways, &istio);
        let kinds = |plan: &RoutePlan| -> Vec<String> {
            applied_kinds(plan).into_iter().map(|(k, _)| k).collect()
        };
        assert!(!kinds(&without).contains(&"DestinationRule".to_string()));
        assert_eq!(
            kinds(&with),
            [
                "ServiceAccount",
                "Role",
                "RoleBinding",
                "ConfigMap",
                "Deployment",
                "Service",
                "DestinationRule",
                "InferencePool",
                "HTTPRoute"
            ]
        );
        let rule = applied(&with, "DestinationRule");
        assert_eq!(
            rule["spec"]["host"],
            format!("qwen-epp.{NS}.svc.cluster.local")
        );
        let hash = |plan: &RoutePlan| {
            applied(plan, "InferencePool")["metadata"]["annotations"][INPUTS_HASH_ANNOTATION]
                .clone()
        };
        assert_ne!(hash(&without), hash(&with));
    }

    /// e2e `a_running_deployment_is_routed_through_the_gateway_and_cleaned_up`: the first
    /// route, then nothing to do, then the route's own status.
    #[test]
    fn a_first_route_applies_the_stack_and_route_then_nothing() {
        let md = md(json!({}));
        let llmd = capability(json!({"endpointPicker": {"image": "epp:llmd"}}));
        let gateways = vec![gateway(GATEWAY_NS, "inference-gateway", true)];
        let world = World::default().with(
            Kind::Service,
            NS,
            "qwen",
            json!({"spec": {"ports": [{"name": "http", "port": 8000, "targetPort": 8000}]}}),
        );
        let (first, reads) = run(&md, Some(&llmd), &config(), gateways.clone(), &world);
        assert_eq!(
            reads,
            [
                Read::object(Kind::InferencePool, Lookup::Cache, NS, "qwen"),
                Read::object(Kind::Service, Lookup::Server, NS, "qwen"),
                Read::object(Kind::HttpRoute, Lookup::CacheThenServer, NS, "qwen"),
            ],
            "the picker is not looked up when the pool's hash already differs"
        );
        assert!(!first.clean);
        assert_eq!(
            first.allow,
            Some(GatewayRef {
                namespace: GATEWAY_NS.into(),
                name: "inference-gateway".into()
            }),
            "another namespace's Gateway whose listener allows only its own"
        );
        assert_eq!(
            applied_kinds(&first),
            [
                ("ServiceAccount".to_string(), reasons::EPP_FAILED),
                ("Role".to_string(), reasons::EPP_FAILED),
                ("RoleBinding".to_string(), reasons::EPP_FAILED),
                ("ConfigMap".to_string(), reasons::EPP_FAILED),
                ("Deployment".to_string(), reasons::EPP_FAILED),
                ("Service".to_string(), reasons::EPP_FAILED),
                ("InferencePool".to_string(), reasons::POOL_FAILED),
                ("HTTPRoute".to_string(), reasons::ROUTE_FAILED),
            ]
        );
        let pool = applied(&first, "InferencePool");
        assert_eq!(
            pool["spec"]["selector"],
            json!({"matchLabels": {"airunway.ai/model-deployment": "qwen"}})
        );
        assert_eq!(pool["spec"]["targetPorts"], json!([{"number": 8000}]));
        let picker = applied(&first, "Deployment");
        assert_eq!(
            picker["spec"]["template"]["spec"]["containers"][0]["image"],
            "epp:llmd"
        );
        let route = applied(&first, "HTTPRoute");
        assert_eq!(
            route["spec"]["rules"][0]["matches"][0]["headers"][0]["value"],
            "qwen3"
        );
        assert_eq!(
            route["spec"]["parentRefs"][0]["namespace"], GATEWAY_NS,
            "the chosen Gateway"
        );
        let told: Vec<(&str, &str)> = events(&first)
            .iter()
            .map(|e| (e.reason, e.action))
            .collect();
        assert_eq!(
            told,
            [
                (
                    event_reasons::GATEWAY_RESOURCES_APPLIED,
                    event_actions::APPLY_INFERENCE_POOL
                ),
                (
                    event_reasons::GATEWAY_RESOURCES_APPLIED,
                    event_actions::APPLY_HTTP_ROUTE
                ),
            ]
        );
        assert_eq!(
            events(&first)[0].note,
            "InferencePool team-a/qwen and endpoint picker qwen-epp applied (target port 8000, image epp:llmd)"
        );
        assert_eq!(
            events(&first)[1].note,
            "HTTPRoute team-a/qwen routes model \"qwen3\" through Gateway gateway-system/inference-gateway"
        );
        // The apply returns the new route, without status: pending, with status.gateway.
        let status = first.report.clone().finish(Some(route.clone()), None);
        let condition = status.condition.unwrap();
        assert_eq!(condition.reason, reasons::ROUTE_PENDING);
        assert_eq!(
            status.fields,
            Some(GatewayFields {
                endpoint: "10.0.0.1".into(),
                model_name: "qwen3".into(),
                gateway_name: "inference-gateway".into(),
                gateway_namespace: GATEWAY_NS.into(),
            })
        );

        // Next reconcile: everything current, nothing applied, nothing told; the Gateway
        // accepted the route.
        let mut world = world_after(&first);
        let accepted = with_status(&route, None);
        world = world.with(Kind::HttpRoute, NS, "qwen", accepted.clone());
        let mut allowed_gateway = gateway_object(GATEWAY_NS, "inference-gateway", true);
        allowed_gateway["spec"]["listeners"][0]["allowedRoutes"]["namespaces"] =
            json!({"from": "All"});
        let gateways = vec![GatewayView::from_object(&allowed_gateway).unwrap()];
        let (second, _) = run(&md, Some(&llmd), &config(), gateways.clone(), &world);
        assert!(second.steps.is_empty(), "no write when nothing changed");
        assert_eq!(second.allow, None, "already allowed");
        let status = second.report.finish(None, None);
        let condition = status.condition.unwrap();
        assert_eq!(condition.status, ConditionStatus::True);
        assert_eq!(condition.reason, reasons::CONFIGURED);
        assert_eq!(
            condition.message,
            "InferencePool team-a/qwen and HTTPRoute team-a/qwen exist; Gateway gateway-system/inference-gateway accepted the route"
        );

        // The picker Deployment deleted by hand: the stack is applied again, not the route.
        let mut without_picker = world_after(&first).with(Kind::HttpRoute, NS, "qwen", accepted);
        without_picker
            .objects
            .remove(&(Kind::PickerStack, NS.into(), "qwen-epp".into()));
        let (third, _) = run(
            &md,
            Some(&llmd),
            &config(),
            gateways.clone(),
            &without_picker,
        );
        let kinds: Vec<String> = applied_kinds(&third).into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            kinds,
            [
                "ServiceAccount",
                "Role",
                "RoleBinding",
                "ConfigMap",
                "Deployment",
                "Service",
                "InferencePool"
            ]
        );

        // Refused by its parent: the route's own reason; with the allowance change failed,
        // that failure is said too.
        let refused = with_status(&route, Some(("False", "NotAllowedByListeners")));
        let world = world_after(&first).with(Kind::HttpRoute, NS, "qwen", refused);
        let (fourth, _) = run(&md, Some(&llmd), &config(), gateways, &world);
        let condition = fourth.report.clone().finish(None, None).condition.unwrap();
        assert_eq!(condition.reason, "NotAllowedByListeners");
        assert!(
            condition
                .message
                .ends_with("listener http does not allow this namespace")
        );
        let condition = fourth
            .report
            .finish(None, Some("update Gateway: forbidden".into()))
            .condition
            .unwrap();
        assert_eq!(condition.reason, reasons::GATEWAY_PATCH_FAILED);
        assert!(
            condition.message.ends_with("; update Gateway: forbidden"),
            "{}",
            condition.message
        );
    }

    /// e2e: "A user deletes the route: it is not recreated for this spec", told once; a spec
    /// change creates it again.
    #[test]
    fn a_route_the_user_deleted_stays_deleted_for_the_same_spec() {
        let created = md(json!({"status": {"gateway": {"modelName": "qwen3"},
            "conditions": [{"type": "GatewayReady", "status": "True", "reason": "GatewayConfigured",
                            "message": "m", "observedGeneration": 2,
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}));
        let gateways = vec![gateway(NS, "inference-gateway", false)];
        let (first, _) = run(
            &created,
            None,
            &config(),
            gateways.clone(),
            &World::default(),
        );
        let first_applies: Vec<String> =
            applied_kinds(&first).into_iter().map(|(k, _)| k).collect();
        assert!(
            !first_applies.contains(&"HTTPRoute".to_string()),
            "not recreated: {first_applies:?}"
        );
        assert!(first.steps.contains(&Step::Count(ROUTE_DELETED_BY_USER)));
        let warning = events(&first)
            .into_iter()
            .find(|e| e.warning)
            .unwrap()
            .clone();
        assert_eq!(
            (warning.reason, warning.action),
            (
                event_reasons::HTTP_ROUTE_DELETED,
                event_actions::APPLY_HTTP_ROUTE
            )
        );
        assert_eq!(fixed_reason(&first), reasons::ROUTE_DELETED);
        let status = first.report.finish(None, None);
        assert_eq!(status.fields, None, "status.gateway removed");

        // Remembered by the condition: not told again.
        let remembered = md(json!({"status": {
            "conditions": [{"type": "GatewayReady", "status": "False", "reason": "HTTPRouteDeleted",
                            "message": "m", "observedGeneration": 2,
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}));
        let (again, _) = run(
            &remembered,
            None,
            &config(),
            gateways.clone(),
            &World::default(),
        );
        assert_eq!(fixed_reason(&again), reasons::ROUTE_DELETED);
        assert!(events(&again).iter().all(|e| !e.warning));
        assert!(!again.steps.contains(&Step::Count(ROUTE_DELETED_BY_USER)));

        // A spec change (generation 3): the route is created again.
        let mut changed = remembered.clone();
        changed.metadata.generation = Some(3);
        let (recreated, _) = run(&changed, None, &config(), gateways, &World::default());
        assert!(matches!(
            recreated.report,
            Report::Route {
                route: RouteSource::Applied,
                ..
            }
        ));
        assert_eq!(applied(&recreated, "HTTPRoute")["metadata"]["name"], "qwen");
    }

    /// e2e `several_gateways_own_routes_and_provider_managed_pools` and
    /// `without_a_gateway_only_a_deployment_that_asked_gets_a_condition`: which Gateway.
    #[test]
    fn the_gateway_choice() {
        let fresh = md(json!({}));
        let two = vec![gateway(NS, "gw-a", false), gateway(NS, "gw-b", false)];
        let (plan, reads) = run(&fresh, None, &config(), two, &World::default());
        assert!(reads.is_empty(), "nothing read without a Gateway");
        assert_eq!(fixed_reason(&plan), reasons::NO_GATEWAY);
        assert!(!plan.clean, "nothing of a never-routed deployment to clean");
        assert!(plan.steps.is_empty());
        let Report::Fixed(status) = &plan.report else {
            panic!()
        };
        let message = &status.condition.as_ref().unwrap().message;
        assert!(
            message.contains("team-a/gw-a") && message.contains("team-a/gw-b"),
            "{message}"
        );

        let routed = md(json!({"status": {"gateway": {"modelName": "qwen3"}}}));
        let (plan, _) = run(&routed, None, &config(), vec![], &World::default());
        assert_eq!(fixed_reason(&plan), reasons::NO_GATEWAY);
        assert!(plan.clean, "the Gateway went: what was routed is removed");

        // Labelling one chooses it; in the deployment's namespace the listener is left alone.
        let labelled = vec![gateway(NS, "gw-a", false), gateway(NS, "gw-b", true)];
        let (plan, _) = run(&fresh, None, &config(), labelled, &World::default());
        assert_eq!(plan.allow, None);
        assert_eq!(
            applied(&plan, "HTTPRoute")["spec"]["parentRefs"][0]["name"],
            "gw-b"
        );

        // Named by the flags, it wins; patching listeners off: no allowance.
        let named = GatewayConfig {
            gateway: Some(GatewayRef {
                namespace: GATEWAY_NS.into(),
                name: "chosen".into(),
            }),
            patch_allowed_routes: false,
            ..config()
        };
        let gateways = vec![
            gateway(GATEWAY_NS, "chosen", false),
            gateway(GATEWAY_NS, "other", true),
        ];
        let (plan, _) = run(&fresh, None, &named, gateways, &World::default());
        assert_eq!(plan.allow, None);
        assert_eq!(
            applied(&plan, "HTTPRoute")["spec"]["parentRefs"][0]["name"],
            "chosen"
        );
    }

    /// e2e: bring your own route (`spec.gateway.httpRouteRef`).
    #[test]
    fn the_users_route() {
        let byo = md(
            json!({"spec": {"gateway": {"httpRouteRef": "my-route", "modelName": "byo-model"}}}),
        );
        let gateways = vec![gateway(NS, "inference-gateway", true)];
        let (missing, reads) = run(&byo, None, &config(), gateways.clone(), &World::default());
        assert_eq!(
            reads.last(),
            Some(&Read::object(
                Kind::HttpRoute,
                Lookup::Server,
                NS,
                "my-route"
            ))
        );
        assert_eq!(fixed_reason(&missing), reasons::ROUTE_NOT_FOUND);
        let kinds: Vec<String> = applied_kinds(&missing)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert!(
            kinds.contains(&"InferencePool".to_string()),
            "the pool first"
        );
        assert!(
            !kinds.contains(&"HTTPRoute".to_string()),
            "no route of ours"
        );
        let Report::Fixed(status) = &missing.report else {
            panic!()
        };
        assert!(
            status
                .condition
                .as_ref()
                .unwrap()
                .message
                .contains("HTTPRoute team-a/my-route")
        );

        let mut mine = with_status(
            &json!({"metadata": {"name": "my-route", "namespace": NS}}),
            None,
        );
        mine["status"]["parents"][0]["parentRef"]["namespace"] = json!(NS);
        let world = World::default().with(Kind::HttpRoute, NS, "my-route", mine);
        let (found, _) = run(&byo, None, &config(), gateways, &world);
        let status = found.report.finish(None, None);
        let condition = status.condition.unwrap();
        assert_eq!(condition.reason, reasons::CONFIGURED);
        assert!(
            condition
                .message
                .contains("HTTPRoute team-a/my-route is the user's"),
            "{}",
            condition.message
        );
        assert_eq!(status.fields.unwrap().model_name, "byo-model");
    }

    /// e2e: a provider that manages its pool (Dynamo's way): only the route, once the pool
    /// exists.
    #[test]
    fn a_provider_managed_pool() {
        let managed = md(json!({"spec": {"gateway": {"enabled": true}}}));
        let dynamo = capability(
            json!({"managesInferencePool": true, "inferencePoolNamePattern": "{name}-pool"}),
        );
        let gateways = vec![gateway(GATEWAY_NS, "inference-gateway", true)];
        let (waiting, reads) = run(
            &managed,
            Some(&dynamo),
            &config(),
            gateways.clone(),
            &World::default(),
        );
        assert_eq!(
            reads,
            [Read::object(
                Kind::InferencePool,
                Lookup::CacheThenServer,
                NS,
                "qwen-pool"
            )]
        );
        assert_eq!(fixed_reason(&waiting), reasons::POOL_NOT_FOUND);
        assert!(waiting.allow.is_some(), "the listener is opened meanwhile");
        assert!(waiting.steps.is_empty());
        let Report::Fixed(status) = &waiting.report else {
            panic!()
        };
        assert_eq!(
            status.condition.as_ref().unwrap().message,
            "waiting for llmd to create InferencePool team-a/qwen-pool (it manages the pool and endpoint picker of this engine)"
        );

        let world = World::default().with(Kind::InferencePool, NS, "qwen-pool", json!({}));
        let (routed, _) = run(&managed, Some(&dynamo), &config(), gateways.clone(), &world);
        assert_eq!(
            applied_kinds(&routed),
            [("HTTPRoute".to_string(), reasons::ROUTE_FAILED)],
            "no pool or picker of ours"
        );
        assert_eq!(
            applied(&routed, "HTTPRoute")["spec"]["rules"][0]["backendRefs"][0]["name"],
            "qwen-pool"
        );

        let elsewhere = capability(
            json!({"managesInferencePool": true, "inferencePoolNamespace": "dynamo-system"}),
        );
        let world = World::default().with(Kind::InferencePool, "dynamo-system", "qwen", json!({}));
        let (refused, _) = run(&managed, Some(&elsewhere), &config(), gateways, &world);
        assert_eq!(fixed_reason(&refused), reasons::POOL_FAILED);
    }

    /// e2e `a_kaito_pool_selects_the_workspace_pods_and_the_real_picker_loads_them`: the
    /// provider's pool selector, which is one of the pool's inputs.
    #[test]
    fn a_provider_pool_selector() {
        let md = md(json!({}));
        let kaito = capability(json!({"poolSelector": {"kaito.sh/workspace": "{name}"}}));
        let gateways = vec![gateway(NS, "inference-gateway", true)];
        let (plan, _) = run(
            &md,
            Some(&kaito),
            &config(),
            gateways.clone(),
            &World::default(),
        );
        let pool = applied(&plan, "InferencePool");
        assert_eq!(
            pool["spec"]["selector"],
            json!({"matchLabels": {"kaito.sh/workspace": "qwen"}})
        );
        assert_eq!(
            applied(&plan, "Deployment")["spec"]["template"]["spec"]["containers"][0]["image"],
            "epp:default",
            "the core's image when the provider names none"
        );
        // The default selector's hash differs: changing the selector re-applies the pool.
        let (default, _) = run(&md, None, &config(), gateways, &World::default());
        assert_ne!(
            inputs_hash(Some(&pool)),
            inputs_hash(Some(&applied(&default, "InferencePool")))
        );
    }

    /// The model name: the server is asked only when the spec names none and the model comes
    /// with the container, and once per generation.
    #[test]
    fn the_model_name_and_discovery() {
        let gateways = vec![gateway(NS, "inference-gateway", true)];
        let custom =
            md(json!({"spec": {"model": {"id": null, "servedName": null, "source": "custom"}}}));
        let served = World {
            served: Some("served-model".into()),
            ..World::default()
        };
        let (plan, reads) = run(&custom, None, &config(), gateways.clone(), &served);
        assert_eq!(
            reads[0],
            Read::ServedModel {
                url: "http://qwen.team-a.svc:8000/v1/models".into()
            }
        );
        assert_eq!(
            applied(&plan, "HTTPRoute")["spec"]["rules"][0]["matches"][0]["headers"][0]["value"],
            "served-model"
        );

        let (unknown, _) = run(
            &custom,
            None,
            &config(),
            gateways.clone(),
            &World::default(),
        );
        assert_eq!(fixed_reason(&unknown), reasons::NO_MODEL_NAME);
        assert_eq!(unknown.allow, None, "nothing done without a model name");
        assert!(unknown.steps.is_empty());

        let mut known = custom.clone();
        known.status = serde_json::from_value(json!({"phase": "Running",
            "endpoint": {"service": "qwen", "port": 8000},
            "gateway": {"modelName": "asked-before"},
            "conditions": [{"type": "GatewayReady", "status": "False", "reason": "RoutePending",
                            "message": "m", "observedGeneration": 2,
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}))
        .unwrap();
        // (The route exists, rendered for an older name: it is applied again.)
        let stale = World::default().with(
            Kind::HttpRoute,
            NS,
            "qwen",
            json!({"metadata": {"name": "qwen", "namespace": NS}}),
        );
        let (plan, reads) = run(&known, None, &config(), gateways, &stale);
        assert!(
            !reads.iter().any(|r| matches!(r, Read::ServedModel { .. })),
            "asked once per generation"
        );
        assert_eq!(
            applied(&plan, "HTTPRoute")["spec"]["rules"][0]["matches"][0]["headers"][0]["value"],
            "asked-before"
        );
    }

    fn deletes(plan: &RoutePlan) -> Vec<(&'static str, String)> {
        plan.steps
            .iter()
            .filter_map(|s| match s {
                Step::Delete { kind, name, .. } => Some((*kind, name.clone())),
                _ => None,
            })
            .collect()
    }

    /// e2e `routing_control_pool_ref_gateway_ref_and_adapters`: `spec.gateway.gatewayRef` routes
    /// through that Gateway (over the labelled one), opens its listeners to the namespace and
    /// names it in `status.gateway`; a missing one says so.
    #[test]
    fn a_deployments_own_gateway() {
        let md = md(
            json!({"spec": {"gateway": {"gatewayRef": {"name": "team-gw", "namespace": "edge"}}}}),
        );
        let gateways = vec![
            gateway(GATEWAY_NS, "inference-gateway", true),
            gateway("edge", "team-gw", false),
        ];
        let (plan, _) = run(&md, None, &config(), gateways.clone(), &World::default());
        assert_eq!(
            plan.allow,
            Some(GatewayRef {
                namespace: "edge".into(),
                name: "team-gw".into()
            })
        );
        let route = applied(&plan, "HTTPRoute");
        assert_eq!(
            route["spec"]["parentRefs"],
            json!([{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "team-gw", "namespace": "edge"}])
        );
        let status = plan.report.finish(Some(route), None);
        let fields = status.fields.unwrap();
        assert_eq!(
            (
                fields.gateway_name.as_str(),
                fields.gateway_namespace.as_str()
            ),
            ("team-gw", "edge")
        );
        assert_eq!(
            status.condition.unwrap().message,
            "HTTPRoute team-a/qwen is waiting for Gateway edge/team-gw to accept it"
        );

        assert_eq!(plan.moved_from, None, "never routed before");

        // Routed through the cluster-wide Gateway before: that one is named for the release
        // of the namespace's allowance there.
        let moved = crate::gateway::route::tests::md(json!({
            "spec": {"gateway": {"gatewayRef": {"name": "team-gw", "namespace": "edge"}}},
            "status": {"gateway": {"modelName": "qwen3", "gatewayName": "inference-gateway",
                                   "gatewayNamespace": GATEWAY_NS}}}));
        let (plan, _) = run(&moved, None, &config(), gateways.clone(), &World::default());
        assert_eq!(
            plan.moved_from,
            Some(GatewayRef {
                namespace: GATEWAY_NS.into(),
                name: "inference-gateway".into()
            })
        );

        // Omitted namespace: the deployment's.
        let local = crate::gateway::route::tests::md(
            json!({"spec": {"gateway": {"gatewayRef": {"name": "team-gw"}}}}),
        );
        let (missing, reads) = run(&local, None, &config(), gateways, &World::default());
        assert!(reads.is_empty());
        assert_eq!(fixed_reason(&missing), reasons::NO_GATEWAY);
        let Report::Fixed(status) = &missing.report else {
            panic!()
        };
        assert_eq!(
            status.condition.as_ref().unwrap().message,
            "spec.gateway.gatewayRef names Gateway team-a/team-gw, which does not exist; create it, or correct or remove spec.gateway.gatewayRef (without it the cluster-wide Gateway is used)"
        );
    }

    /// e2e `routing_control_pool_ref_gateway_ref_and_adapters`: `spec.gateway.poolRef` gets only
    /// the route to that pool; missing, or one AI Runway created, it says so; our own stack from
    /// before is removed.
    #[test]
    fn the_users_pool() {
        let md = md(json!({"spec": {"gateway": {"poolRef": "shared-pool"}}}));
        let gateways = vec![gateway(NS, "inference-gateway", true)];
        let (missing, reads) = run(&md, None, &config(), gateways.clone(), &World::default());
        assert_eq!(
            reads,
            [Read::object(
                Kind::InferencePool,
                Lookup::CacheThenServer,
                NS,
                "shared-pool"
            )]
        );
        assert_eq!(fixed_reason(&missing), reasons::POOL_NOT_FOUND);
        assert!(missing.steps.is_empty());
        let Report::Fixed(status) = &missing.report else {
            panic!()
        };
        assert_eq!(
            status.condition.as_ref().unwrap().message,
            "spec.gateway.poolRef names InferencePool team-a/shared-pool, which does not exist; create it (inference.networking.k8s.io/v1, selecting this deployment's pods) or remove poolRef to have AI Runway create one"
        );

        let users = json!({"metadata": {"name": "shared-pool", "namespace": NS},
                           "spec": {"selector": {"matchLabels": {"app": "mine"}}}});
        let world = World::default().with(Kind::InferencePool, NS, "shared-pool", users.clone());
        let (routed, _) = run(&md, None, &config(), gateways.clone(), &world);
        assert_eq!(
            applied_kinds(&routed),
            [("HTTPRoute".to_string(), reasons::ROUTE_FAILED)],
            "no pool or picker of ours, the user's pool untouched"
        );
        assert!(deletes(&routed).is_empty(), "nothing of ours to remove");
        assert_eq!(
            applied(&routed, "HTTPRoute")["spec"]["rules"][0]["backendRefs"],
            json!([{"group": "inference.networking.k8s.io", "kind": "InferencePool",
                    "name": "shared-pool", "namespace": NS, "weight": 1}])
        );
        let Report::Route { what, .. } = &routed.report else {
            panic!()
        };
        assert_eq!(
            what,
            "InferencePool team-a/shared-pool and HTTPRoute team-a/qwen exist"
        );

        // The deployment had its own stack before poolRef was set: removed, the user's pool kept.
        let plain = crate::gateway::route::tests::md(json!({}));
        let (first, _) = run(&plain, None, &config(), gateways.clone(), &World::default());
        let mut before = world_after(&first);
        before = before.with(Kind::InferencePool, NS, "shared-pool", users);
        let (switched, _) = run(&md, None, &config(), gateways.clone(), &before);
        assert_eq!(
            deletes(&switched),
            [
                ("InferencePool", "qwen".to_string()),
                ("Service", "qwen-epp".to_string()),
                ("Deployment", "qwen-epp".to_string()),
                ("ConfigMap", "qwen-epp".to_string()),
                ("RoleBinding", "qwen-epp".to_string()),
                ("Role", "qwen-epp".to_string()),
                ("ServiceAccount", "qwen-epp".to_string()),
            ]
        );
        assert_eq!(
            events(&switched)[0].note,
            "InferencePool team-a/qwen and endpoint picker qwen-epp removed: spec.gateway.poolRef names InferencePool shared-pool"
        );
        assert_eq!(
            applied(&switched, "HTTPRoute")["spec"]["rules"][0]["backendRefs"][0]["name"],
            "shared-pool"
        );

        // A pool AI Runway created (here another deployment's): refused.
        let theirs = json!({"metadata": {"name": "other", "namespace": NS,
                                         "labels": {"airunway.ai/gateway-of": "other"}}});
        let pointing =
            crate::gateway::route::tests::md(json!({"spec": {"gateway": {"poolRef": "other"}}}));
        let world = World::default().with(Kind::InferencePool, NS, "other", theirs);
        let (refused, _) = run(&pointing, None, &config(), gateways, &world);
        assert_eq!(fixed_reason(&refused), reasons::POOL_REF_INVALID);
        let Report::Fixed(status) = &refused.report else {
            panic!()
        };
        assert_eq!(
            status.condition.as_ref().unwrap().message,
            "spec.gateway.poolRef names InferencePool team-a/other, which AI Runway created for deployment other; name a pool you manage, or remove poolRef to have AI Runway create this deployment's own"
        );
        assert!(refused.steps.is_empty());
    }

    /// e2e `routing_control_pool_ref_gateway_ref_and_adapters`: LoRA adapters are routed by
    /// name (the route matches each), named to the picker by an InferenceModelRewrite where the
    /// kind is served, and scored by the picker's LoRA affinity scorer; the rewrite follows the
    /// adapters and goes with them.
    #[test]
    fn adapters_are_routed_by_the_providers_adapter_model_pattern() {
        let md = md(json!({"spec": {"adapters": [
            {"name": "sql", "source": "s3://b/loras/sql"}]}}));
        let ray = capability(json!({"adapterModelPattern": "{model}:{adapter}"}));
        let served = World {
            rewrites: true,
            ..World::default()
        };
        let (plan, _) = run(
            &md,
            Some(&ray),
            &config(),
            vec![gateway(NS, "inference-gateway", true)],
            &served,
        );
        let route = applied(&plan, "HTTPRoute");
        let names: Vec<&Value> = route["spec"]["rules"][0]["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| &m["headers"][0]["value"])
            .collect();
        assert_eq!(names, [&json!("qwen3"), &json!("qwen3:sql")]);
        let rewrite = applied(&plan, "InferenceModelRewrite");
        assert_eq!(
            rewrite["spec"]["rules"][0]["matches"][0]["model"]["value"],
            "qwen3:sql"
        );
        assert_eq!(
            rewrite["spec"]["rules"][0]["targets"][0]["modelRewrite"],
            "qwen3:sql"
        );
    }

    #[test]
    fn lora_adapters_are_routed_by_name() {
        let adapters = json!({"spec": {"adapters": [
            {"name": "sql-lora", "source": "hf://org/sql-lora"},
            {"name": "chat-lora", "source": "org/chat-lora"}]}});
        let md = md(adapters.clone());
        let gateways = vec![gateway(NS, "inference-gateway", true)];
        let served = World {
            rewrites: true,
            ..World::default()
        };
        let (first, reads) = run(&md, None, &config(), gateways.clone(), &served);
        assert!(reads.contains(&Read::object(
            Kind::ModelRewrite,
            Lookup::CacheThenServer,
            NS,
            "qwen-adapters"
        )));
        let route = applied(&first, "HTTPRoute");
        let names: Vec<&Value> = route["spec"]["rules"][0]["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| &m["headers"][0]["value"])
            .collect();
        assert_eq!(
            names,
            [&json!("qwen3"), &json!("sql-lora"), &json!("chat-lora")]
        );
        let rewrite = applied(&first, "InferenceModelRewrite");
        assert_eq!(rewrite["spec"]["poolRef"]["name"], "qwen");
        assert_eq!(rewrite["spec"]["rules"].as_array().unwrap().len(), 2);
        assert!(applied_kinds(&first).contains(&(
            "InferenceModelRewrite".to_string(),
            reasons::MODEL_REWRITE_FAILED
        )));
        assert_eq!(
            applied(&first, "ConfigMap")["data"]["default-plugins.yaml"],
            render::DEFAULT_EPP_CONFIG_WITH_LORA
        );
        let told: Vec<String> = events(&first).iter().map(|e| e.note.clone()).collect();
        assert!(
            told.contains(&"InferenceModelRewrite team-a/qwen-adapters names the LoRA adapters sql-lora, chat-lora for InferencePool qwen".to_string()),
            "{told:?}"
        );
        assert!(
            told.contains(&"HTTPRoute team-a/qwen routes model \"qwen3\" and its adapters sql-lora, chat-lora through Gateway team-a/inference-gateway".to_string()),
            "{told:?}"
        );

        // Carried out: nothing more to do.
        let mut after = world_after(&first);
        after.rewrites = true;
        let (same, _) = run(&md, None, &config(), gateways.clone(), &after);
        assert!(
            applied_kinds(&same).is_empty(),
            "{:?}",
            applied_kinds(&same)
        );
        assert!(deletes(&same).is_empty());

        // Deleted by hand: applied again (and only it).
        let mut gone = world_after(&first);
        gone.rewrites = true;
        gone.objects
            .remove(&(Kind::ModelRewrite, NS.into(), "qwen-adapters".into()));
        let (again, _) = run(&md, None, &config(), gateways.clone(), &gone);
        assert_eq!(
            applied_kinds(&again),
            [(
                "InferenceModelRewrite".to_string(),
                reasons::MODEL_REWRITE_FAILED
            )]
        );

        // One adapter more: the rewrite and the route follow, not the picker (its scorer is
        // already there).
        let three = crate::gateway::route::tests::md(json!({"spec": {"adapters": [
            {"name": "sql-lora", "source": "hf://org/sql-lora"},
            {"name": "chat-lora", "source": "org/chat-lora"},
            {"name": "math-lora", "source": "org/math-lora", "maxRank": 16}]}}));
        let (more, _) = run(&three, None, &config(), gateways.clone(), &after);
        let kinds: Vec<String> = applied_kinds(&more).into_iter().map(|(k, _)| k).collect();
        assert_eq!(kinds, ["InferenceModelRewrite", "HTTPRoute"]);

        // No adapters left: the rewrite is removed, the route matches the model alone, and the
        // picker goes back to the default configuration.
        let none = crate::gateway::route::tests::md(json!({}));
        let (removed, _) = run(&none, None, &config(), gateways.clone(), &after);
        assert_eq!(
            deletes(&removed),
            [("InferenceModelRewrite", "qwen-adapters".to_string())]
        );
        assert_eq!(
            applied(&removed, "HTTPRoute")["spec"]["rules"][0]["matches"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            applied(&removed, "ConfigMap")["data"]["default-plugins.yaml"],
            render::DEFAULT_EPP_CONFIG
        );

        // Without the kind served: routed by the route alone, nothing read or written for it.
        let (plain, reads) = run(&md, None, &config(), gateways, &World::default());
        assert!(!reads.iter().any(|r| matches!(
            r,
            Read::Object {
                kind: Kind::ModelRewrite,
                ..
            }
        )));
        let kinds: Vec<String> = applied_kinds(&plain).into_iter().map(|(k, _)| k).collect();
        assert!(!kinds.contains(&"InferenceModelRewrite".to_string()));
        assert_eq!(
            applied(&plain, "HTTPRoute")["spec"]["rules"][0]["matches"]
                .as_array()
                .unwrap()
                .len(),
            3
        );
    }

    /// The API server refusing the route's read: `HTTPRouteFailed` with its error.
    #[test]
    fn a_refused_route_read() {
        let world = World {
            refused: vec![Kind::HttpRoute],
            ..World::default()
        };
        let gateways = vec![gateway(NS, "inference-gateway", true)];
        let (plan, _) = run(&md(json!({})), None, &config(), gateways, &world);
        assert_eq!(fixed_reason(&plan), reasons::ROUTE_FAILED);
        let Report::Fixed(status) = &plan.report else {
            panic!()
        };
        assert_eq!(
            status.condition.as_ref().unwrap().message,
            "get HttpRoute team-a/qwen: refused"
        );
    }
}
