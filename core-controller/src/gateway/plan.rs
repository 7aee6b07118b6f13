//! What the integration does for a deployment and the status that follows (pure).
//!
//! - [`intent`]: route it, or make sure nothing is routed (and why).
//! - [`route_condition`]: `GatewayReady` from the HTTPRoute's own status as its Gateway wrote
//!   it: True only when the parent Gateway `Accepted` the current generation of the route
//!   (and did not report unresolved references); otherwise False with the route's reason.
//! - [`route_deleted`]: "a route the user deleted is not silently recreated". The core
//!   remembers it created the route by `status.gateway` (written only once the route exists)
//!   and the `GatewayReady` condition's `observedGeneration`: if the route is gone while the
//!   spec is the one it was created for, someone deleted it; the core leaves it deleted and
//!   says so (`GatewayReady=False/HTTPRouteDeleted`). Any spec change (for example
//!   `spec.gateway.enabled: false` then `true`), or the deployment leaving `Running` and coming
//!   back, creates it again.

use airunway_api::conditions::DesiredCondition;
use airunway_api::constants::condition_types::GATEWAY_READY;
use airunway_api::v1alpha1::{ModelDeployment, Phase};
use serde_json::Value;

use super::detect::Detection;
use super::reasons;
use super::select::GatewayRef;

/// Longest message taken over from a route's status.
const MAX_FOREIGN_MESSAGE: usize = 512;

/// `status.gateway` as the core writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GatewayFields {
    /// The Gateway's first status address ("" while it has none).
    pub endpoint: String,
    /// The routed model name.
    pub model_name: String,
    /// The Gateway's name.
    pub gateway_name: String,
    /// The Gateway's namespace.
    pub gateway_namespace: String,
}

/// The core's gateway part of the status: `GatewayReady` and `status.gateway`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DesiredGateway {
    /// `GatewayReady` (`None`: the core writes none, e.g. no gateway API in the cluster).
    pub condition: Option<DesiredCondition>,
    /// `status.gateway` (`None`: removed).
    pub fields: Option<GatewayFields>,
}

impl DesiredGateway {
    /// Only a condition, `status.gateway` removed.
    pub fn condition(status: bool, reason: &str, message: impl Into<String>) -> Self {
        DesiredGateway {
            condition: Some(DesiredCondition::new(
                GATEWAY_READY,
                status,
                reason,
                message,
            )),
            fields: None,
        }
    }

    /// What `md` carries now (when the integration cannot tell yet, e.g. caches syncing).
    pub fn current(md: &ModelDeployment) -> Self {
        let condition = md.condition(GATEWAY_READY).map(|c| {
            DesiredCondition::new(
                GATEWAY_READY,
                c.is_true(),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        });
        let fields = md
            .status
            .as_ref()
            .and_then(|s| s.gateway.as_ref())
            .map(|g| GatewayFields {
                endpoint: g.endpoint.clone().unwrap_or_default(),
                model_name: g.model_name.clone().unwrap_or_default(),
                gateway_name: g.gateway_name.clone().unwrap_or_default(),
                gateway_namespace: g.gateway_namespace.clone().unwrap_or_default(),
            });
        DesiredGateway { condition, fields }
    }
}

impl DesiredGateway {
    /// Whether `md` carries these `status.gateway` fields and the core owns no other
    /// (the condition is checked with the core's other conditions).
    pub fn fields_current(&self, md: &ModelDeployment) -> bool {
        let live = md.status.as_ref().and_then(|s| s.gateway.as_ref());
        match (&self.fields, live) {
            (Some(want), Some(live)) => {
                live.endpoint.as_deref().unwrap_or_default() == want.endpoint
                    && live.model_name.as_deref().unwrap_or_default() == want.model_name
                    && live.gateway_name.as_deref().unwrap_or_default() == want.gateway_name
                    && live.gateway_namespace.as_deref().unwrap_or_default()
                        == want.gateway_namespace
            }
            (Some(_), None) => false,
            (None, _) => !airunway_api::managed_fields::OwnedFields::of(
                &md.metadata,
                airunway_api::constants::field_managers::CORE,
            )
            .owns(&["status", "gateway"]),
        }
    }

    /// Adds `status.gateway` to the core's status apply body (`{"status": {...}}`); left out,
    /// the apply removes what the core wrote before.
    pub fn add_to_patch(&self, body: &mut serde_json::Value) {
        if let Some(fields) = &self.fields
            && let Some(status) = body
                .get_mut("status")
                .and_then(serde_json::Value::as_object_mut)
        {
            status.insert(
                "gateway".into(),
                serde_json::json!({"endpoint": fields.endpoint, "modelName": fields.model_name,
                                   "gatewayName": fields.gateway_name,
                                   "gatewayNamespace": fields.gateway_namespace}),
            );
        }
    }
}

/// What to do for a deployment.
#[derive(Clone, Debug, PartialEq)]
pub enum Intent {
    /// Route it through the Gateway.
    Route,
    /// Nothing may be routed: remove what exists, then report `status`.
    Clean {
        /// The status afterwards.
        status: DesiredGateway,
    },
}

/// Whether `md` should be routed, from its spec, phase, what the cluster serves and
/// `only_if_asked`: the integration acts for `md` only when it asks ([`asked_by`]:
/// `spec.gateway.enabled: true`, or a Gateway or pool named; the
/// cluster has no Gateway at all and no core flag names one, or the provider builds the pool
/// only when asked, as Dynamo's operator does).
///
/// `spec.gateway.enabled` unset means "when the cluster has the CRDs and a Gateway": in a
/// cluster without either the integration is silent (no condition, nothing written); only
/// `enabled: true` is told why it is not routed. The decision does not depend on the phase, so
/// a deployment nobody routes gets no `GatewayReady` at any point of its life.
pub fn intent(md: &ModelDeployment, detection: &Detection, only_if_asked: bool) -> Intent {
    let gateway = md.spec.gateway.as_ref();
    if md.metadata.deletion_timestamp.is_some() {
        return Intent::Clean {
            status: DesiredGateway::default(),
        };
    }
    if gateway.and_then(|g| g.enabled) == Some(false) {
        return Intent::Clean {
            status: DesiredGateway::condition(
                false,
                reasons::DISABLED,
                "spec.gateway.enabled is false: no InferencePool, endpoint picker or HTTPRoute (removed if there were)",
            ),
        };
    }
    let missing = detection.missing();
    let asked = asked_by(md);
    if !missing.is_empty() {
        let status = match asked {
            Some(field) => DesiredGateway::condition(
                false,
                reasons::CRDS_NOT_AVAILABLE,
                format!(
                    "{field} but the cluster does not serve {}; install Gateway API (v1) and the Gateway API Inference Extension (v1) CRDs",
                    missing.join(", ")
                ),
            ),
            None => DesiredGateway::default(),
        };
        return Intent::Clean { status };
    }
    let asked = asked.is_some();
    if only_if_asked && !asked {
        return Intent::Clean {
            status: DesiredGateway::default(),
        };
    }
    let phase = md.status.as_ref().and_then(|s| s.phase);
    if phase != Some(Phase::Running) {
        // The message does not name the phase: the condition would change (and the core
        // write its status) on every phase change before Running.
        return Intent::Clean {
            status: DesiredGateway::condition(
                false,
                reasons::NOT_RUNNING,
                "the deployment is not Running; it is routed through the Gateway once it is Running (nothing routes to it meanwhile)",
            ),
        };
    }
    Intent::Route
}

/// What in `md`'s spec asks to be routed, as the condition says it: `spec.gateway.enabled:
/// true`, or naming a Gateway (`gatewayRef`) or a pool (`poolRef`) to route through (`None`:
/// routed only when the cluster has what it takes).
pub fn asked_by(md: &ModelDeployment) -> Option<&'static str> {
    let gateway = md.spec.gateway.as_ref()?;
    if gateway.enabled == Some(true) {
        Some("spec.gateway.enabled is true")
    } else if gateway.gateway_ref.is_some() {
        Some("spec.gateway.gatewayRef is set")
    } else if gateway.pool_ref.is_some() {
        Some("spec.gateway.poolRef is set")
    } else {
        None
    }
}

/// Whether objects may exist that a clean-up has to remove (so a deployment that was never
/// routed costs no API request).
pub fn may_have_objects(md: &ModelDeployment) -> bool {
    let status = md.status.as_ref();
    status.and_then(|s| s.gateway.as_ref()).is_some()
        || md
            .condition(GATEWAY_READY)
            .and_then(|c| c.reason.as_deref())
            .is_some_and(|r| !reasons::CLEAN.contains(&r))
}

/// Whether the route the core created was deleted by someone else (`exists`: whether it is
/// there now). See the module docs.
pub fn route_deleted(md: &ModelDeployment, exists: bool) -> bool {
    if exists
        || md
            .spec
            .gateway
            .as_ref()
            .and_then(|g| g.http_route_ref.as_ref())
            .is_some()
    {
        return false;
    }
    let Some(condition) = md.condition(GATEWAY_READY) else {
        return false;
    };
    let same_spec = condition.observed_generation.is_some()
        && condition.observed_generation == md.metadata.generation;
    let reason = condition.reason.as_deref().unwrap_or_default();
    let created = md
        .status
        .as_ref()
        .and_then(|s| s.gateway.as_ref())
        .is_some()
        && !reasons::CLEAN.contains(&reason);
    same_spec && (created || reason == reasons::ROUTE_DELETED)
}

fn bounded(message: &str) -> String {
    if message.len() <= MAX_FOREIGN_MESSAGE {
        return message.to_string();
    }
    let mut end = MAX_FOREIGN_MESSAGE;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &message[..end])
}

/// `GatewayReady` from the route's status for parent `gateway`; `what` names the pool and
/// route for the True message.
pub fn route_condition(route: &Value, gateway: &GatewayRef, what: &str) -> DesiredCondition {
    let namespace = route
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let name = route
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let generation = route
        .pointer("/metadata/generation")
        .and_then(Value::as_i64);
    let parent = route
        .pointer("/status/parents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|p| {
            let reference = p.get("parentRef");
            let field = |k: &str| reference.and_then(|r| r.get(k)).and_then(Value::as_str);
            field("name") == Some(gateway.name.as_str())
                && field("namespace").unwrap_or(namespace) == gateway.namespace
                && field("kind").unwrap_or("Gateway") == "Gateway"
        });
    let find = |type_: &str| {
        parent
            .and_then(|p| p.get("conditions"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
    };
    let text = |c: &Value, k: &str| {
        c.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let current = |c: &Value| match (
        c.get("observedGeneration").and_then(Value::as_i64),
        generation,
    ) {
        (Some(observed), Some(generation)) => observed >= generation,
        _ => true,
    };
    let pending = || {
        DesiredCondition::new(
            GATEWAY_READY,
            false,
            reasons::ROUTE_PENDING,
            format!("HTTPRoute {namespace}/{name} is waiting for Gateway {gateway} to accept it"),
        )
    };
    let Some(accepted) = find("Accepted").filter(|c| current(c)) else {
        return pending();
    };
    match accepted.get("status").and_then(Value::as_str) {
        Some("True") => {
            if let Some(refs) = find("ResolvedRefs")
                .filter(|c| current(c) && c.get("status").and_then(Value::as_str) == Some("False"))
            {
                return DesiredCondition::new(
                    GATEWAY_READY,
                    false,
                    bounded(&text(refs, "reason")),
                    format!(
                        "Gateway {gateway} accepted HTTPRoute {namespace}/{name} but cannot resolve its references: {}",
                        bounded(&text(refs, "message"))
                    ),
                );
            }
            DesiredCondition::new(
                GATEWAY_READY,
                true,
                reasons::CONFIGURED,
                format!("{what}; Gateway {gateway} accepted the route"),
            )
        }
        Some("False") => DesiredCondition::new(
            GATEWAY_READY,
            false,
            bounded(&text(accepted, "reason")),
            format!(
                "Gateway {gateway} did not accept HTTPRoute {namespace}/{name}: {}",
                bounded(&text(accepted, "message"))
            ),
        ),
        _ => pending(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airunway_api::v1alpha1::ConditionStatus;
    use serde_json::json;

    fn md(value: Value) -> ModelDeployment {
        let mut object = json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "qwen3", "namespace": "default", "generation": 2},
            "spec": {"model": {"id": "Qwen/Qwen3-0.6B"}}});
        json_patch::merge(&mut object, &value);
        serde_json::from_value(object).unwrap()
    }

    fn all() -> Detection {
        Detection {
            inference_pools: true,
            http_routes: true,
            gateways: true,
            ..Detection::default()
        }
    }

    fn gateway() -> GatewayRef {
        GatewayRef {
            namespace: "default".into(),
            name: "inference-gateway".into(),
        }
    }

    fn sample_route() -> Value {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../e2e/fixtures/status-samples/httproute-accepted.yaml");
        serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn reason(intent: Intent) -> Option<String> {
        match intent {
            Intent::Route => Some("route".into()),
            Intent::Clean { status } => status.condition.map(|c| c.reason),
        }
    }

    #[test]
    fn intents() {
        let running = json!({"status": {"phase": "Running"}});
        assert_eq!(
            reason(intent(&md(running.clone()), &all(), false)).as_deref(),
            Some("route")
        );
        let mut disabled = running.clone();
        disabled["spec"] = json!({"gateway": {"enabled": false}});
        assert_eq!(
            reason(intent(&md(disabled), &all(), false)).as_deref(),
            Some(reasons::DISABLED)
        );
        assert_eq!(
            reason(intent(
                &md(json!({"status": {"phase": "Deploying"}})),
                &all(),
                false
            ))
            .as_deref(),
            Some(reasons::NOT_RUNNING)
        );
        let none = Detection {
            inference_pools: false,
            http_routes: true,
            gateways: true,
            ..Detection::default()
        };
        assert_eq!(
            reason(intent(&md(running.clone()), &none, false)),
            None,
            "not asked for: silent"
        );
        let mut asked = running;
        asked["spec"] = json!({"gateway": {"enabled": true}});
        match intent(&md(asked), &none, false) {
            Intent::Clean { status } => {
                let c = status.condition.unwrap();
                assert_eq!(c.reason, reasons::CRDS_NOT_AVAILABLE);
                assert!(
                    c.message
                        .contains("inferencepools.inference.networking.k8s.io"),
                    "{}",
                    c.message
                );
            }
            other => panic!("{other:?}"),
        }
        // Naming a Gateway or a pool asks too, and the message says which.
        let named = md(json!({"spec": {"gateway": {"poolRef": "shared"}},
                              "status": {"phase": "Running"}}));
        match intent(&named, &none, false) {
            Intent::Clean { status } => assert!(
                status
                    .condition
                    .unwrap()
                    .message
                    .starts_with("spec.gateway.poolRef is set but the cluster does not serve")
            ),
            other => panic!("{other:?}"),
        }
        let routed_when_asked = md(json!({"spec": {"gateway": {"gatewayRef": {"name": "gw"}}},
                                          "status": {"phase": "Running"}}));
        assert_eq!(
            reason(intent(&routed_when_asked, &all(), true)).as_deref(),
            Some("route"),
            "a named Gateway is routed where only asking deployments are"
        );
        assert_eq!(asked_by(&md(json!({}))), None);
    }

    #[test]
    fn no_gateway_is_silent_unless_asked() {
        for phase in ["Deploying", "Running"] {
            let quiet = md(json!({"status": {"phase": phase}}));
            assert_eq!(
                intent(&quiet, &all(), true),
                Intent::Clean {
                    status: DesiredGateway::default()
                },
                "{phase}: no condition and nothing written before or after Running"
            );
            let mut empty = quiet.clone();
            empty.spec.gateway = Some(serde_json::from_value(json!({})).unwrap());
            assert_eq!(reason(intent(&empty, &all(), true)), None, "{phase}");
        }
        let asked =
            md(json!({"spec": {"gateway": {"enabled": true}}, "status": {"phase": "Running"}}));
        assert_eq!(
            reason(intent(&asked, &all(), true)).as_deref(),
            Some("route"),
            "asked for: the route step says there is no Gateway"
        );
        let asked_early =
            md(json!({"spec": {"gateway": {"enabled": true}}, "status": {"phase": "Deploying"}}));
        assert_eq!(
            reason(intent(&asked_early, &all(), true)).as_deref(),
            Some(reasons::NOT_RUNNING)
        );
        let off =
            md(json!({"spec": {"gateway": {"enabled": false}}, "status": {"phase": "Running"}}));
        assert_eq!(
            reason(intent(&off, &all(), true)).as_deref(),
            Some(reasons::DISABLED)
        );
    }

    #[test]
    fn accepted_route_is_ready() {
        let c = route_condition(
            &sample_route(),
            &gateway(),
            "InferencePool default/qwen3 and HTTPRoute default/qwen3 exist",
        );
        assert_eq!(c.status, ConditionStatus::True, "{c:?}");
        assert_eq!(c.reason, reasons::CONFIGURED);
        assert_eq!(
            c.message,
            "InferencePool default/qwen3 and HTTPRoute default/qwen3 exist; Gateway default/inference-gateway accepted the route"
        );
    }

    #[test]
    fn route_not_accepted_carries_its_reason() {
        let mut route = sample_route();
        route["status"]["parents"][0]["conditions"][0] = json!({"type": "Accepted", "status": "False",
            "reason": "NotAllowedByListeners", "message": "no listener allows routes from namespace team-a"});
        let c = route_condition(&route, &gateway(), "x");
        assert_eq!(c.status, ConditionStatus::False);
        assert_eq!(c.reason, "NotAllowedByListeners");
        assert_eq!(
            c.message,
            "Gateway default/inference-gateway did not accept HTTPRoute default/qwen3: no listener allows routes from namespace team-a"
        );
    }

    #[test]
    fn unresolved_references_are_not_ready() {
        let mut route = sample_route();
        route["status"]["parents"][0]["conditions"][1] = json!({"type": "ResolvedRefs", "status": "False",
            "reason": "BackendNotFound", "message": "pool missing"});
        let c = route_condition(&route, &gateway(), "x");
        assert_eq!(c.status, ConditionStatus::False);
        assert_eq!(c.reason, "BackendNotFound");
    }

    #[test]
    fn no_status_or_stale_status_or_other_parent_is_pending() {
        let mut route = sample_route();
        route["status"] = json!({});
        assert_eq!(
            route_condition(&route, &gateway(), "x").reason,
            reasons::ROUTE_PENDING
        );
        let mut stale = sample_route();
        stale["metadata"]["generation"] = json!(2);
        assert_eq!(
            route_condition(&stale, &gateway(), "x").reason,
            reasons::ROUTE_PENDING
        );
        let other = GatewayRef {
            namespace: "default".into(),
            name: "other".into(),
        };
        let c = route_condition(&sample_route(), &other, "x");
        assert_eq!(c.reason, reasons::ROUTE_PENDING);
        assert_eq!(
            c.message,
            "HTTPRoute default/qwen3 is waiting for Gateway default/other to accept it"
        );
    }

    #[test]
    fn foreign_messages_are_bounded() {
        let mut route = sample_route();
        route["status"]["parents"][0]["conditions"][0] = json!({"type": "Accepted", "status": "False",
            "reason": "X", "message": "é".repeat(2000)});
        let c = route_condition(&route, &gateway(), "x");
        assert!(c.message.len() < 700, "{}", c.message.len());
    }

    fn condition(reason: &str, generation: i64) -> Value {
        json!({"type": "GatewayReady", "status": "False", "reason": reason, "message": "m",
               "observedGeneration": generation, "lastTransitionTime": "2026-01-01T00:00:00Z"})
    }

    #[test]
    fn a_deleted_route_stays_deleted_for_the_same_spec() {
        let created = md(
            json!({"status": {"phase": "Running", "gateway": {"modelName": "m"},
            "conditions": [condition(reasons::CONFIGURED, 2)]}}),
        );
        assert!(route_deleted(&created, false));
        assert!(!route_deleted(&created, true), "still there");
        let remembered = md(
            json!({"status": {"phase": "Running", "conditions": [condition(reasons::ROUTE_DELETED, 2)]}}),
        );
        assert!(route_deleted(&remembered, false));
        let spec_changed = md(
            json!({"status": {"phase": "Running", "conditions": [condition(reasons::ROUTE_DELETED, 1)]}}),
        );
        assert!(
            !route_deleted(&spec_changed, false),
            "a spec change creates it again"
        );
        let never = md(
            json!({"status": {"phase": "Running", "conditions": [condition(reasons::NOT_RUNNING, 2)]}}),
        );
        assert!(!route_deleted(&never, false), "first route after Running");
        let fresh = md(json!({"status": {"phase": "Running"}}));
        assert!(!route_deleted(&fresh, false));
        let mut byo = created.clone();
        byo.spec.gateway = Some(serde_json::from_value(json!({"httpRouteRef": "mine"})).unwrap());
        assert!(!route_deleted(&byo, false));
    }

    #[test]
    fn clean_up_only_when_something_may_exist() {
        assert!(!may_have_objects(&md(json!({}))));
        assert!(!may_have_objects(&md(
            json!({"status": {"conditions": [condition(reasons::NOT_RUNNING, 2)]}})
        )));
        assert!(may_have_objects(&md(
            json!({"status": {"conditions": [condition(reasons::ROUTE_PENDING, 2)]}})
        )));
        assert!(may_have_objects(&md(
            json!({"status": {"gateway": {"modelName": "m"}}})
        )));
    }

    #[test]
    fn status_gateway_in_the_apply_body_and_currency() {
        let desired = DesiredGateway {
            condition: None,
            fields: Some(GatewayFields {
                endpoint: "1.2.3.4".into(),
                model_name: "m".into(),
                gateway_name: "inference-gateway".into(),
                gateway_namespace: "gw".into(),
            }),
        };
        let mut body = json!({"status": {"conditions": []}});
        desired.add_to_patch(&mut body);
        assert_eq!(
            body["status"]["gateway"],
            json!({"endpoint": "1.2.3.4", "modelName": "m", "gatewayName": "inference-gateway",
                   "gatewayNamespace": "gw"})
        );
        let written = md(
            json!({"status": {"gateway": {"endpoint": "1.2.3.4", "modelName": "m",
                                          "gatewayName": "inference-gateway", "gatewayNamespace": "gw"}}}),
        );
        assert!(desired.fields_current(&written), "nothing to write");
        let moved = md(
            json!({"status": {"gateway": {"endpoint": "5.6.7.8", "modelName": "m",
                                          "gatewayName": "inference-gateway", "gatewayNamespace": "gw"}}}),
        );
        assert!(!desired.fields_current(&moved));
        // Written by a core without gatewayName, or routed through another Gateway of the same
        // namespace: written once more.
        let older = md(
            json!({"status": {"gateway": {"endpoint": "1.2.3.4", "modelName": "m", "gatewayNamespace": "gw"}}}),
        );
        assert!(!desired.fields_current(&older));
        let other = md(
            json!({"status": {"gateway": {"endpoint": "1.2.3.4", "modelName": "m",
                                          "gatewayName": "other", "gatewayNamespace": "gw"}}}),
        );
        assert!(!desired.fields_current(&other));
        assert!(!desired.fields_current(&md(json!({}))));
        assert!(DesiredGateway::default().fields_current(&md(json!({}))));
        // Owned by the core and no longer wanted: not current (the apply removes it).
        let owned = md(
            json!({"metadata": {"managedFields": [{"manager": "airunway-core", "operation": "Apply",
            "subresource": "status", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {"f:gateway": {"f:modelName": {}}}}}]},
            "status": {"gateway": {"modelName": "m"}}}),
        );
        assert!(!DesiredGateway::default().fields_current(&owned));
    }

    #[test]
    fn current_reads_back_what_is_there() {
        let m = md(
            json!({"status": {"gateway": {"endpoint": "1.2.3.4", "modelName": "m", "gatewayNamespace": "gw"},
            "conditions": [condition(reasons::ROUTE_PENDING, 2)]}}),
        );
        let current = DesiredGateway::current(&m);
        assert_eq!(current.fields.unwrap().endpoint, "1.2.3.4");
        assert_eq!(current.condition.unwrap().reason, reasons::ROUTE_PENDING);
    }
}
