//! Every branch of the plan, and the status mapping from KEDA's and the HPA's own status.

use super::*;
use airunway_api::constants::API_VERSION;
use airunway_api::v1alpha1::ConditionStatus;
use serde_json::json;

fn md(spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({
        "apiVersion": API_VERSION, "kind": "ModelDeployment",
        "metadata": {"name": "qwen", "namespace": "team-a", "uid": "u-1"},
        "spec": spec,
    }))
    .unwrap()
}

fn autoscaled(min: i32) -> ModelDeployment {
    md(json!({
        "model": {"id": "Qwen/Qwen3-0.6B"},
        "scaling": {"replicas": 1, "autoscaling": {
            "minReplicas": min, "maxReplicas": 4,
            "metrics": [{"type": "queueDepth", "target": "5"}],
        }},
    }))
}

fn inputs<'a>(md: &'a ModelDeployment, keda: bool) -> Inputs<'a> {
    Inputs {
        md,
        valid: true,
        engine: Some(EngineType::Vllm),
        keda,
        prometheus_address: "http://prometheus.monitoring.svc:9090",
        pool: Some(("team-a".into(), "qwen".into())),
        scaled_object: None,
        hpa: None,
        keda_hpa: None,
        labels: Default::default(),
    }
}

fn owned(status: Value) -> Option<Live> {
    Some(Live {
        owned: true,
        inputs_hash: None,
        status,
    })
}

fn summary(status: &DesiredAutoscaling) -> Vec<String> {
    status
        .conditions
        .iter()
        .map(|c| {
            let s = match c.status {
                ConditionStatus::True => "True",
                ConditionStatus::False => "False",
                ConditionStatus::Unknown => "Unknown",
            };
            format!("{}={s}/{}", c.type_, c.reason)
        })
        .collect()
}

fn reasons_of(plan: &Plan) -> Vec<&'static str> {
    plan.events.iter().map(|e| e.reason).collect()
}

#[test]
fn keda_installed_creates_a_scaled_object() {
    let md = autoscaled(0);
    let plan = plan(&inputs(&md, true));
    let (kind, body) = plan.apply.clone().unwrap();
    assert_eq!(kind, Kind::ScaledObject);
    assert_eq!(body["kind"], "ScaledObject");
    assert_eq!(
        body["spec"]["triggers"][0]["metadata"]["query"],
        r#"sum(vllm:num_requests_waiting{namespace="team-a",model_name="Qwen/Qwen3-0.6B"})"#
    );
    assert!(plan.delete.is_empty());
    assert_eq!(reasons_of(&plan), [event_reasons::AUTOSCALER_CREATED]);
    assert_eq!(
        plan.events[0].note,
        "ScaledObject team-a/qwen created (0 to 4 replicas)"
    );
    assert_eq!(
        summary(&plan.status),
        [
            "ScalingReady=False/AutoscalerPending",
            "ScalingActive=False/AutoscalerPending"
        ]
    );
    assert_eq!(
        plan.status.conditions[0].message,
        "KEDA has not reported on ScaledObject team-a/qwen yet"
    );
    let fields = plan.status.fields.unwrap();
    assert_eq!(fields.kind.as_deref(), Some("ScaledObject"));
    assert_eq!(fields.name.as_deref(), Some("qwen"));
}

#[test]
fn without_keda_an_hpa_with_a_floor_of_one_said_out_loud() {
    let md = autoscaled(0);
    let plan = plan(&inputs(&md, false));
    let (kind, body) = plan.apply.clone().unwrap();
    assert_eq!(kind, Kind::Hpa);
    assert_eq!(body["spec"]["minReplicas"], 1);
    assert!(
        plan.status.conditions[0]
            .message
            .ends_with(&format!("({HPA_FLOOR_NOTE})"))
    );
    // With a floor of one asked for, no note.
    let md = autoscaled(1);
    let plan = super::plan(&inputs(&md, false));
    assert!(!plan.status.conditions[0].message.contains("KEDA"));
}

#[test]
fn unchanged_inputs_apply_nothing_changed_ones_apply_again() {
    let md = autoscaled(1);
    let first = plan(&inputs(&md, true));
    let (_, body) = first.apply.unwrap();
    let hash = body["metadata"]["annotations"][annotations::AUTOSCALING_INPUTS_HASH]
        .as_str()
        .map(str::to_string);
    let mut again = inputs(&md, true);
    again.scaled_object = Some(Live {
        owned: true,
        inputs_hash: hash.clone(),
        status: Value::Null,
    });
    let second = plan(&again);
    assert_eq!(second.apply, None);
    assert!(second.events.is_empty());
    // Another address (a flag changed): applied again, no "created" event.
    again.prometheus_address = "http://other:9090";
    let third = plan(&again);
    assert!(third.apply.is_some());
    assert!(third.events.is_empty());
}

#[test]
fn keda_installed_later_replaces_the_hpa() {
    let md = autoscaled(1);
    let mut i = inputs(&md, true);
    i.hpa = owned(Value::Null);
    let plan = plan(&i);
    assert_eq!(plan.apply.as_ref().unwrap().0, Kind::ScaledObject);
    assert_eq!(plan.delete, [Kind::Hpa]);
    assert_eq!(reasons_of(&plan), [event_reasons::AUTOSCALER_REPLACED]);
    assert_eq!(
        plan.events[0].note,
        "HorizontalPodAutoscaler team-a/qwen replaced by a ScaledObject (KEDA is installed)"
    );
    // And back when KEDA goes.
    let mut i = inputs(&md, false);
    i.scaled_object = owned(Value::Null);
    let back = super::plan(&i);
    assert_eq!(back.apply.as_ref().unwrap().0, Kind::Hpa);
    assert_eq!(back.delete, [Kind::ScaledObject]);
}

#[test]
fn someone_elses_object_of_the_name_is_left_alone() {
    let md = autoscaled(1);
    let mut i = inputs(&md, true);
    i.scaled_object = Some(Live {
        owned: false,
        inputs_hash: None,
        status: Value::Null,
    });
    let plan = plan(&i);
    assert_eq!(plan.apply, None);
    assert!(plan.delete.is_empty());
    assert_eq!(
        summary(&plan.status),
        [
            "ScalingReady=False/AutoscalerConflict",
            "ScalingActive=False/AutoscalerConflict"
        ]
    );
    assert!(
        plan.status.conditions[0]
            .message
            .starts_with("ScaledObject team-a/qwen exists and is not this deployment's")
    );
}

#[test]
fn autoscaling_removed_deletes_what_the_deployment_owns_only() {
    let md = md(json!({"model": {"id": "a/b"}, "scaling": {"replicas": 2}}));
    let mut i = inputs(&md, true);
    i.scaled_object = owned(Value::Null);
    i.hpa = Some(Live::default());
    let plan = plan(&i);
    assert_eq!(plan.delete, [Kind::ScaledObject]);
    assert_eq!(plan.apply, None);
    assert_eq!(reasons_of(&plan), [event_reasons::AUTOSCALER_REMOVED]);
    assert_eq!(
        plan.status,
        DesiredAutoscaling::default(),
        "no conditions, no status"
    );
    let nothing = super::plan(&inputs(&md, true));
    assert_eq!(nothing, Plan::default());
}

#[test]
fn an_invalid_spec_changes_nothing() {
    let md = autoscaled(1);
    let mut i = inputs(&md, true);
    i.valid = false;
    i.scaled_object = owned(Value::Null);
    let plan = plan(&i);
    assert_eq!(plan.apply, None);
    assert!(plan.delete.is_empty());
    assert_eq!(plan.status, DesiredAutoscaling::current(&md));
}

#[test]
fn a_metric_the_engine_lacks_or_no_engine_yet() {
    let md = autoscaled(1);
    let mut i = inputs(&md, true);
    i.engine = Some(EngineType::Llamacpp);
    let plan = plan(&i);
    assert_eq!(plan.apply, None);
    assert_eq!(
        summary(&plan.status),
        [
            "ScalingReady=False/MetricUnavailable",
            "ScalingActive=False/MetricUnavailable"
        ]
    );
    assert!(plan.status.conditions[0].message.starts_with(
        "spec.scaling.autoscaling.metrics[0]: queueDepth is not available for engine llamacpp"
    ));
    i.engine = None;
    let plan = super::plan(&i);
    assert_eq!(
        plan.status.conditions[0].reason,
        reasons::WAITING_FOR_ENGINE
    );
}

fn keda_status(ready: (&str, &str, &str), active: (&str, &str, &str)) -> Value {
    json!({"conditions": [
        {"type": "Ready", "status": ready.0, "reason": ready.1, "message": ready.2},
        {"type": "Active", "status": active.0, "reason": active.1, "message": active.2},
        {"type": "Fallback", "status": "False", "reason": "NoFallbackFound", "message": "No fallbacks are active on this scaled object"},
    ], "hpaName": "keda-hpa-qwen"})
}

#[test]
fn keda_status_is_carried_over() {
    let md = autoscaled(0);
    let status = keda_status(
        (
            "True",
            "ScaledObjectReady",
            "ScaledObject is defined correctly and is ready for scaling",
        ),
        (
            "True",
            "ScalerActive",
            "Scaling is performed because triggers are active",
        ),
    );
    let hpa = json!({"desiredReplicas": 3, "lastScaleTime": "2026-11-26T19:00:00Z"});
    let desired = from_scaled_object(&md, "qwen", &status, Some(&hpa));
    assert_eq!(
        summary(&desired),
        [
            "ScalingReady=True/ScaledObjectReady",
            "ScalingActive=True/ScalerActive"
        ]
    );
    assert_eq!(
        desired.conditions[1].message,
        "Scaling is performed because triggers are active"
    );
    let fields = desired.fields.unwrap();
    assert_eq!(fields.desired_replicas, Some(3));
    assert_eq!(
        fields.last_scale_time.as_deref(),
        Some("2026-11-26T19:00:00Z")
    );
}

#[test]
fn keda_at_zero_and_keda_failing() {
    let mut md = autoscaled(0);
    md.spec.scaling.as_mut().unwrap().replicas = Some(0);
    let idle = keda_status(
        ("True", "ScaledObjectReady", "ready"),
        (
            "False",
            "ScalerNotActive",
            "Scaling is not performed because triggers are not active",
        ),
    );
    let hpa = json!({"desiredReplicas": 1});
    let desired = from_scaled_object(&md, "qwen", &idle, Some(&hpa));
    assert_eq!(
        desired.fields.unwrap().desired_replicas,
        Some(0),
        "KEDA holds it at zero"
    );
    assert_eq!(desired.conditions[1].reason, "ScalerNotActive");

    let failing = keda_status(
        (
            "False",
            "ScaledObjectCheckFailed",
            "Failed to ensure HPA is correctly created for ScaledObject",
        ),
        ("Unknown", "", ""),
    );
    let desired = from_scaled_object(&md, "qwen", &failing, None);
    assert_eq!(
        summary(&desired),
        [
            "ScalingReady=False/ScaledObjectCheckFailed",
            "ScalingActive=False/AutoscalerPending"
        ]
    );
    let mut fallback = failing.clone();
    fallback["conditions"][2] = json!({"type": "Fallback", "status": "True", "reason": "FallbackExists", "message": "At least one trigger is falling back on this scaled object"});
    let desired = from_scaled_object(&md, "qwen", &fallback, None);
    assert_eq!(desired.conditions[0].reason, reasons::FALLBACK);
    assert_eq!(
        desired.conditions[0].message,
        "FallbackExists: At least one trigger is falling back on this scaled object"
    );
}

fn hpa_status(conditions: Value) -> Value {
    json!({"currentReplicas": 2, "desiredReplicas": 3, "lastScaleTime": "2026-11-26T19:01:00Z",
           "conditions": conditions})
}

#[test]
fn hpa_status_is_carried_over() {
    let md = autoscaled(1);
    let ok = hpa_status(json!([
        {"type": "AbleToScale", "status": "True", "reason": "SucceededRescale", "message": "the HPA controller was able to update the target scale to 3"},
        {"type": "ScalingActive", "status": "True", "reason": "ValidMetricFound", "message": "the HPA was able to successfully calculate a replica count from external metric airunway-queue-depth"},
        {"type": "ScalingLimited", "status": "True", "reason": "TooManyReplicas", "message": "the desired replica count is more than the maximum replica count"},
    ]));
    let desired = from_hpa(&md, "qwen", &ok, false);
    assert_eq!(
        summary(&desired),
        [
            "ScalingReady=True/SucceededRescale",
            "ScalingActive=True/ValidMetricFound"
        ]
    );
    assert!(desired.conditions[1].message.ends_with(
        "; TooManyReplicas: the desired replica count is more than the maximum replica count"
    ));
    let fields = desired.fields.unwrap();
    assert_eq!(fields.kind.as_deref(), Some("HorizontalPodAutoscaler"));
    assert_eq!(fields.desired_replicas, Some(3));
    assert_eq!(
        fields.last_scale_time.as_deref(),
        Some("2026-11-26T19:01:00Z")
    );
}

#[test]
fn hpa_failing_metrics_cannot_scale_or_at_zero() {
    let md = autoscaled(1);
    let no_metric = hpa_status(json!([
        {"type": "AbleToScale", "status": "True", "reason": "SucceededGetScale", "message": "the HPA controller was able to get the target's current scale"},
        {"type": "ScalingActive", "status": "False", "reason": "FailedGetExternalMetric", "message": "the HPA was unable to compute the replica count: unable to get external metric"},
    ]));
    assert_eq!(
        summary(&from_hpa(&md, "qwen", &no_metric, false)),
        [
            "ScalingReady=False/FailedGetExternalMetric",
            "ScalingActive=False/FailedGetExternalMetric"
        ]
    );
    let cannot = hpa_status(json!([
        {"type": "AbleToScale", "status": "False", "reason": "FailedGetScale", "message": "the HPA controller was unable to get the target's current scale"},
    ]));
    assert_eq!(
        summary(&from_hpa(&md, "qwen", &cannot, false)),
        [
            "ScalingReady=False/FailedGetScale",
            "ScalingActive=False/AutoscalerPending"
        ]
    );
    let zero = hpa_status(json!([
        {"type": "AbleToScale", "status": "True", "reason": "SucceededGetScale", "message": "ok"},
        {"type": "ScalingActive", "status": "False", "reason": "ScalingDisabled", "message": "scaling is disabled since the replica count of the target is zero"},
    ]));
    assert_eq!(
        summary(&from_hpa(&md, "qwen", &zero, false)),
        [
            "ScalingReady=True/SucceededGetScale",
            "ScalingActive=False/ScalingDisabled"
        ]
    );
}

#[test]
fn long_foreign_messages_are_bounded() {
    let md = autoscaled(1);
    let long = "é".repeat(600);
    let status = keda_status(("False", "X", &long), ("False", "Y", "m"));
    let desired = from_scaled_object(&md, "qwen", &status, None);
    assert!(desired.conditions[0].message.len() <= MAX_FOREIGN_MESSAGE + 3);
}

#[test]
fn ownership_is_by_controller_uid() {
    let md = autoscaled(1);
    let object = json!({"metadata": {"ownerReferences": [
        {"apiVersion": API_VERSION, "kind": "ModelDeployment", "name": "qwen", "uid": "u-1", "controller": true}],
        "annotations": {annotations::AUTOSCALING_INPUTS_HASH: "abc"}},
        "status": {"x": 1}});
    let live = Live::of(&object, &md);
    assert!(live.owned);
    assert_eq!(live.inputs_hash.as_deref(), Some("abc"));
    let other = json!({"metadata": {"ownerReferences": [
        {"apiVersion": API_VERSION, "kind": "ModelDeployment", "name": "qwen", "uid": "u-0", "controller": true}]}});
    assert!(
        !Live::of(&other, &md).owned,
        "a deleted and recreated deployment's"
    );
    assert!(!Live::of(&json!({}), &md).owned);
}

#[test]
fn status_fields_in_the_patch_and_currency() {
    let md = autoscaled(1);
    let desired = from_hpa(&md, "qwen", &Value::Null, false);
    let mut body = json!({"status": {"conditions": []}});
    desired.add_to_patch(&mut body);
    assert_eq!(
        body["status"]["autoscaling"],
        json!({"kind": "HorizontalPodAutoscaler", "name": "qwen"})
    );
    assert!(!desired.fields_current(&md));
    let mut carrying = md.clone();
    carrying.status = Some(
        serde_json::from_value(
            json!({"autoscaling": {"kind": "HorizontalPodAutoscaler", "name": "qwen"}}),
        )
        .unwrap(),
    );
    assert!(desired.fields_current(&carrying));
    assert!(DesiredAutoscaling::default().fields_current(&md));
}
