//! What a deployment's autoscaling needs, decided from what the watch caches hold (pure).
//!
//! - No `spec.scaling.autoscaling`: the autoscalers the deployment owns are deleted and the
//!   status carries neither `status.autoscaling` nor `ScalingReady`/`ScalingActive`.
//! - An invalid spec: nothing changes (`Validated=False` says why).
//! - Every metric is mapped by [`super::metrics::query`]; one that cannot be (the engine has no
//!   such metric, the engine is not decided yet, no gateway for a pool metric) leaves the
//!   objects as they are and says why in `ScalingReady=False`.
//! - The autoscaler of the cluster's engine (a `ScaledObject` while KEDA's CRD is served, else a
//!   `HorizontalPodAutoscaler`) is applied when missing or rendered from other inputs (the hash
//!   annotation); the deployment's autoscaler of the other kind is deleted (KEDA installed
//!   later: the HPA is replaced by a ScaledObject). An object of the name that is not the
//!   deployment's is left alone (`ScalingReady=False/AutoscalerConflict`).
//! - The status comes from the autoscaler's own status: KEDA's `Ready`, `Active` and
//!   `Fallback` conditions, or the HPA's `AbleToScale`, `ScalingActive` and `ScalingLimited`,
//!   with their reasons and messages carried over.

use airunway_api::conditions::DesiredCondition;
use airunway_api::constants::condition_types::{SCALING_ACTIVE, SCALING_READY};
use airunway_api::constants::reasons::autoscaling as reasons;
use airunway_api::constants::{annotations, event_reasons, field_managers};
use airunway_api::managed_fields::OwnedFields;
use airunway_api::v1alpha1::{AutoscalingStatus, EngineType, ModelDeployment};
use serde_json::Value;

use super::metrics::{self, QueryScope};
use super::render::{self, RenderedMetric};
use super::{HPA_KIND, SCALED_OBJECT_KIND};

/// Longest message taken over from an autoscaler's status.
const MAX_FOREIGN_MESSAGE: usize = 512;

/// The two kinds of autoscaler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// KEDA `ScaledObject`.
    ScaledObject,
    /// `autoscaling/v2` `HorizontalPodAutoscaler`.
    Hpa,
}

impl Kind {
    /// The Kubernetes kind.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::ScaledObject => SCALED_OBJECT_KIND,
            Kind::Hpa => HPA_KIND,
        }
    }
}

/// An autoscaler of the deployment's name, as the watch cache holds it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Live {
    /// Whether the deployment is its controller owner (by uid).
    pub owned: bool,
    /// Its [`annotations::AUTOSCALING_INPUTS_HASH`].
    pub inputs_hash: Option<String>,
    /// Its `status`.
    pub status: Value,
}

impl Live {
    /// What `object` (JSON) is to `md`.
    pub fn of(object: &Value, md: &ModelDeployment) -> Live {
        let uid = md.metadata.uid.as_deref().unwrap_or_default();
        let owned = object
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .is_some_and(|refs| {
                refs.iter().any(|r| {
                    r.get("uid").and_then(Value::as_str) == Some(uid)
                        && r.get("controller").and_then(Value::as_bool) == Some(true)
                })
            });
        Live {
            owned: !uid.is_empty() && owned,
            inputs_hash: object
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(annotations::AUTOSCALING_INPUTS_HASH))
                .and_then(Value::as_str)
                .map(str::to_string),
            status: object.get("status").cloned().unwrap_or(Value::Null),
        }
    }
}

/// What the plan is decided from.
#[derive(Clone, Debug)]
pub struct Inputs<'a> {
    /// The deployment.
    pub md: &'a ModelDeployment,
    /// Whether its spec passed validation.
    pub valid: bool,
    /// The resolved engine.
    pub engine: Option<EngineType>,
    /// Whether KEDA's `scaledobjects.keda.sh` CRD is served.
    pub keda: bool,
    /// `--autoscaling-prometheus-address`.
    pub prometheus_address: &'a str,
    /// The deployment's InferencePool (`namespace`, `name`); `None` without the gateway
    /// integration.
    pub pool: Option<(String, String)>,
    /// The `ScaledObject` of the deployment's name.
    pub scaled_object: Option<Live>,
    /// The `HorizontalPodAutoscaler` of the deployment's name.
    pub hpa: Option<Live>,
    /// The `HorizontalPodAutoscaler` KEDA made for the ScaledObject (its `status`).
    pub keda_hpa: Option<Value>,
    /// The labels the deployment's runtime configuration propagates (docs/platform.md).
    pub labels: std::collections::BTreeMap<String, String>,
}

/// An event to publish once the plan's writes succeeded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanEvent {
    /// Event reason.
    pub reason: &'static str,
    /// Note.
    pub note: String,
}

/// What to do for one deployment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// The autoscaler to apply (server-side apply, field manager
    /// [`field_managers::CORE_AUTOSCALING`]).
    pub apply: Option<(Kind, Value)>,
    /// The deployment's autoscalers to delete.
    pub delete: Vec<Kind>,
    /// Events, after the writes.
    pub events: Vec<PlanEvent>,
    /// The status.
    pub status: DesiredAutoscaling,
}

/// The core's autoscaling part of the status: `ScalingReady`, `ScalingActive` and
/// `status.autoscaling`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DesiredAutoscaling {
    /// The conditions (empty: none, they are removed).
    pub conditions: Vec<DesiredCondition>,
    /// `status.autoscaling` (`None`: removed).
    pub fields: Option<AutoscalingStatus>,
}

impl DesiredAutoscaling {
    /// What `md` carries now (kept while the spec is invalid).
    pub fn current(md: &ModelDeployment) -> Self {
        let conditions = [SCALING_READY, SCALING_ACTIVE]
            .into_iter()
            .filter_map(|t| md.condition(t))
            .map(|c| {
                DesiredCondition::new(
                    c.type_.clone(),
                    c.is_true(),
                    c.reason.clone().unwrap_or_default(),
                    c.message.clone().unwrap_or_default(),
                )
            })
            .collect();
        DesiredAutoscaling {
            conditions,
            fields: md
                .status
                .as_ref()
                .and_then(|s| s.autoscaling.as_deref().cloned()),
        }
    }

    /// `ScalingReady=False` (and `ScalingActive=False` with the same reason: nothing scales).
    pub fn not_ready(kind: Option<Kind>, name: &str, reason: &str, message: String) -> Self {
        DesiredAutoscaling {
            conditions: vec![
                DesiredCondition::new(SCALING_READY, false, reason, message.clone()),
                DesiredCondition::new(SCALING_ACTIVE, false, reason, message),
            ],
            fields: Some(AutoscalingStatus {
                kind: kind.map(|k| k.as_str().to_string()),
                name: Some(name.to_string()),
                ..Default::default()
            }),
        }
    }

    /// Whether `md` carries these `status.autoscaling` fields and the core owns no other (the
    /// conditions are checked with the core's other conditions).
    pub fn fields_current(&self, md: &ModelDeployment) -> bool {
        let live = md.status.as_ref().and_then(|s| s.autoscaling.as_deref());
        match &self.fields {
            Some(want) => live == Some(want),
            None => !OwnedFields::of(&md.metadata, field_managers::CORE)
                .owns(&["status", "autoscaling"]),
        }
    }

    /// Adds `status.autoscaling` to the core's status apply body; left out, the apply removes
    /// what the core wrote before.
    pub fn add_to_patch(&self, body: &mut Value) {
        if let Some(fields) = &self.fields
            && let Some(status) = body.get_mut("status").and_then(Value::as_object_mut)
        {
            status.insert(
                "autoscaling".into(),
                serde_json::to_value(fields).unwrap_or(Value::Null),
            );
        }
    }
}

fn bounded(message: &str) -> String {
    if message.len() <= MAX_FOREIGN_MESSAGE {
        return message.to_string();
    }
    let mut end = MAX_FOREIGN_MESSAGE;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &message[..end])
}

/// One condition of an autoscaler's `status.conditions`: (status, reason, message).
fn condition<'v>(status: &'v Value, type_: &str) -> Option<(&'v str, &'v str, &'v str)> {
    status
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
        .map(|c| {
            let field = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
            (field("status"), field("reason"), field("message"))
        })
}

fn replicas(md: &ModelDeployment) -> Option<i32> {
    md.spec.scaling.as_ref().and_then(|s| s.replicas)
}

/// The HPA floor note: `minReplicas: 0` with a HorizontalPodAutoscaler.
pub const HPA_FLOOR_NOTE: &str = "minReplicas 0 needs KEDA: a HorizontalPodAutoscaler cannot scale to zero without the alpha HPAScaleToZero feature gate, so it keeps at least 1 replica; install KEDA to scale to zero";

/// The status a KEDA `ScaledObject` implies; `keda_hpa` is the status of the HPA KEDA made.
pub fn from_scaled_object(
    md: &ModelDeployment,
    name: &str,
    status: &Value,
    keda_hpa: Option<&Value>,
) -> DesiredAutoscaling {
    let object = format!(
        "ScaledObject {}/{name}",
        md.metadata.namespace.as_deref().unwrap_or_default()
    );
    let pending = format!("KEDA has not reported on {object} yet");
    let ready = match (condition(status, "Ready"), condition(status, "Fallback")) {
        (_, Some(("True", reason, message))) => DesiredCondition::new(
            SCALING_READY,
            false,
            reasons::FALLBACK,
            bounded(&format!("{reason}: {message}")),
        ),
        (Some((s @ ("True" | "False"), reason, message)), _) => DesiredCondition::new(
            SCALING_READY,
            s == "True",
            or(reason, reasons::PENDING),
            bounded(message),
        ),
        _ => DesiredCondition::new(SCALING_READY, false, reasons::PENDING, pending.clone()),
    };
    let active = match condition(status, "Active") {
        Some((s @ ("True" | "False"), reason, message)) => DesiredCondition::new(
            SCALING_ACTIVE,
            s == "True",
            or(reason, reasons::PENDING),
            bounded(message),
        ),
        _ => DesiredCondition::new(SCALING_ACTIVE, false, reasons::PENDING, pending),
    };
    let at_zero =
        active.status == airunway_api::v1alpha1::ConditionStatus::False && replicas(md) == Some(0);
    let desired = if at_zero {
        Some(0)
    } else {
        keda_hpa
            .and_then(|h| h.get("desiredReplicas"))
            .and_then(Value::as_i64)
            .and_then(|v| i32::try_from(v).ok())
    };
    DesiredAutoscaling {
        conditions: vec![ready, active],
        fields: Some(AutoscalingStatus {
            kind: Some(SCALED_OBJECT_KIND.to_string()),
            name: Some(name.to_string()),
            desired_replicas: desired,
            last_scale_time: keda_hpa
                .and_then(|h| h.get("lastScaleTime"))
                .and_then(Value::as_str)
                .map(str::to_string),
        }),
    }
}

fn or<'a>(value: &'a str, default: &'a str) -> &'a str {
    if value.is_empty() { default } else { value }
}

/// The status a `HorizontalPodAutoscaler` implies; `floor_note` when `minReplicas: 0` was
/// raised to 1.
pub fn from_hpa(
    md: &ModelDeployment,
    name: &str,
    status: &Value,
    floor_note: bool,
) -> DesiredAutoscaling {
    let object = format!(
        "HorizontalPodAutoscaler {}/{name}",
        md.metadata.namespace.as_deref().unwrap_or_default()
    );
    let pending =
        format!("the HorizontalPodAutoscaler controller has not reported on {object} yet");
    let able = condition(status, "AbleToScale");
    let scaling = condition(status, "ScalingActive");
    let limited = condition(status, "ScalingLimited");
    let note = |message: &str| {
        let message = bounded(message);
        if floor_note {
            format!("{message} ({HPA_FLOOR_NOTE})")
        } else {
            message
        }
    };
    let ready = match (able, scaling) {
        (Some(("False", reason, message)), _) => DesiredCondition::new(
            SCALING_READY,
            false,
            or(reason, reasons::PENDING),
            note(message),
        ),
        // Metrics cannot be read (`FailedGetExternalMetric`, ...): not ready. `ScalingDisabled`
        // (the target is at zero) is no failure.
        (_, Some(("False", reason, message))) if reason != "ScalingDisabled" => {
            DesiredCondition::new(
                SCALING_READY,
                false,
                or(reason, reasons::PENDING),
                note(message),
            )
        }
        (Some(("True", reason, message)), _) => DesiredCondition::new(
            SCALING_READY,
            true,
            or(reason, reasons::PENDING),
            note(message),
        ),
        _ => DesiredCondition::new(SCALING_READY, false, reasons::PENDING, note(&pending)),
    };
    let active = match scaling {
        Some((s @ ("True" | "False"), reason, message)) => {
            let mut message = bounded(message);
            if let Some(("True", limit_reason, limit_message)) = limited {
                message = format!("{message}; {limit_reason}: {}", bounded(limit_message));
            }
            DesiredCondition::new(
                SCALING_ACTIVE,
                s == "True",
                or(reason, reasons::PENDING),
                message,
            )
        }
        _ => DesiredCondition::new(SCALING_ACTIVE, false, reasons::PENDING, pending),
    };
    DesiredAutoscaling {
        conditions: vec![ready, active],
        fields: Some(AutoscalingStatus {
            kind: Some(HPA_KIND.to_string()),
            name: Some(name.to_string()),
            desired_replicas: status
                .get("desiredReplicas")
                .and_then(Value::as_i64)
                .and_then(|v| i32::try_from(v).ok()),
            last_scale_time: status
                .get("lastScaleTime")
                .and_then(Value::as_str)
                .map(str::to_string),
        }),
    }
}

/// Decides what `inputs.md`'s autoscaling needs.
pub fn plan(inputs: &Inputs<'_>) -> Plan {
    let md = inputs.md;
    let name = md.metadata.name.clone().unwrap_or_default();
    let namespace = md.metadata.namespace.clone().unwrap_or_default();
    let owned = |live: &Option<Live>| live.as_ref().is_some_and(|l| l.owned);
    let Some(autoscaling) = md
        .spec
        .scaling
        .as_ref()
        .and_then(|s| s.autoscaling.as_ref())
    else {
        let delete: Vec<Kind> = [
            (Kind::ScaledObject, &inputs.scaled_object),
            (Kind::Hpa, &inputs.hpa),
        ]
        .into_iter()
        .filter(|(_, live)| owned(live))
        .map(|(kind, _)| kind)
        .collect();
        let events = delete
            .iter()
            .map(|kind| PlanEvent {
                reason: event_reasons::AUTOSCALER_REMOVED,
                note: format!(
                    "{} {namespace}/{name} removed: spec.scaling.autoscaling is not set",
                    kind.as_str()
                ),
            })
            .collect();
        return Plan {
            delete,
            events,
            ..Plan::default()
        };
    };
    if !inputs.valid {
        return Plan {
            status: DesiredAutoscaling::current(md),
            ..Plan::default()
        };
    }
    let (kind, live, other_kind, other) = if inputs.keda {
        (
            Kind::ScaledObject,
            &inputs.scaled_object,
            Kind::Hpa,
            &inputs.hpa,
        )
    } else {
        (
            Kind::Hpa,
            &inputs.hpa,
            Kind::ScaledObject,
            &inputs.scaled_object,
        )
    };
    // The metrics, mapped for this deployment.
    let model_name = metrics::served_model_name(&md.spec);
    let scope = QueryScope {
        namespace: &namespace,
        model_name,
        engine: inputs.engine,
        pool: inputs
            .pool
            .as_ref()
            .map(|(ns, pool)| (ns.as_str(), pool.as_str())),
    };
    let mut rendered = Vec::with_capacity(autoscaling.metrics.len());
    for (index, metric) in autoscaling.metrics.iter().enumerate() {
        match metrics::query(metric, &scope) {
            Ok(query) => rendered.push(RenderedMetric {
                name: metric.metric_type.as_str(),
                query,
                target: metric.target.clone(),
                activation: metric.activation_target.clone(),
            }),
            Err(unavailable) => {
                let message = format!(
                    "spec.scaling.autoscaling.metrics[{index}]: {}",
                    unavailable.message
                );
                return Plan {
                    status: DesiredAutoscaling::not_ready(
                        owned(live).then_some(kind),
                        &name,
                        unavailable.reason,
                        message,
                    ),
                    ..Plan::default()
                };
            }
        }
    }
    if let Some(live) = live
        && !live.owned
    {
        return Plan {
            status: DesiredAutoscaling::not_ready(
                None,
                &name,
                reasons::CONFLICT,
                format!(
                    "{} {namespace}/{name} exists and is not this deployment's: delete it, or it stays as it is and this deployment is not autoscaled",
                    kind.as_str()
                ),
            ),
            ..Plan::default()
        };
    }
    let body = match kind {
        Kind::ScaledObject => {
            render::scaled_object(md, autoscaling, &rendered, inputs.prometheus_address)
        }
        Kind::Hpa => render::horizontal_pod_autoscaler(md, autoscaling, &rendered),
    };
    let body = render::with_labels(body, &inputs.labels);
    let hash = body
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(annotations::AUTOSCALING_INPUTS_HASH))
        .and_then(Value::as_str)
        .map(str::to_string);
    let current = live.as_ref().is_some_and(|l| l.inputs_hash == hash);
    let mut plan = Plan::default();
    let replacing = owned(other);
    if replacing {
        plan.delete.push(other_kind);
    }
    if !current {
        if live.is_none() {
            plan.events.push(if replacing {
                PlanEvent {
                    reason: event_reasons::AUTOSCALER_REPLACED,
                    note: format!(
                        "{} {namespace}/{name} replaced by a {} ({})",
                        other_kind.as_str(),
                        kind.as_str(),
                        if inputs.keda {
                            "KEDA is installed"
                        } else {
                            "KEDA is not installed"
                        }
                    ),
                }
            } else {
                PlanEvent {
                    reason: event_reasons::AUTOSCALER_CREATED,
                    note: format!(
                        "{} {namespace}/{name} created ({} to {} replicas)",
                        kind.as_str(),
                        autoscaling.min_replicas.unwrap_or(1),
                        autoscaling.max_replicas
                    ),
                }
            });
        }
        plan.apply = Some((kind, body));
    }
    let floor_note = kind == Kind::Hpa && autoscaling.min_replicas == Some(0);
    let status = live
        .as_ref()
        .map(|l| l.status.clone())
        .unwrap_or(Value::Null);
    plan.status = match kind {
        Kind::ScaledObject => from_scaled_object(md, &name, &status, inputs.keda_hpa.as_ref()),
        Kind::Hpa => from_hpa(md, &name, &status, floor_note),
    };
    plan
}

/// The status of a write the API server refused.
pub fn apply_failed(kind: Kind, md: &ModelDeployment, error: &str) -> DesiredAutoscaling {
    let name = md.metadata.name.clone().unwrap_or_default();
    DesiredAutoscaling::not_ready(
        Some(kind),
        &name,
        reasons::APPLY_FAILED,
        bounded(&format!(
            "{} {}/{name} could not be applied: {error}",
            kind.as_str(),
            md.metadata.namespace.as_deref().unwrap_or_default()
        )),
    )
}

#[cfg(test)]
mod tests;
