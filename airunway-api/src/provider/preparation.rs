//! What a provider derives with I/O before its pure render ([`Provider::prepare`], e.g. the
//! direct vLLM provider resolving its image to a digest): provider-specific `status` fields and
//! conditions, written with server-side apply under the provider's own second field manager
//! `<name>-provider-prepare` (only when they changed), and shown to the render in
//! `deployment.status`; or a hold (phase `Failed` with the message, nothing rendered).

use crate::apply_body;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::{Api, PatchParams};
use serde_json::{Value, json};

use super::context::Context;
use super::error::{ReconcileError, api_error};
use super::traits::{Preparation, Provider};
use crate::conditions;
use crate::v1alpha1::ModelDeployment;

/// The field manager of the prepared status: `<name>-provider-prepare`.
pub fn manager(provider: &str) -> String {
    format!(
        "{}-prepare",
        crate::constants::field_managers::provider(provider)
    )
}

/// `md` with the prepared status fields set, as the render sees it (pure).
pub fn with_status(md: &ModelDeployment, preparation: &Preparation) -> ModelDeployment {
    if preparation.status.is_empty() {
        return md.clone();
    }
    let Ok(mut value) = serde_json::to_value(md) else {
        return md.clone();
    };
    if !value["status"].is_object() {
        value["status"] = json!({});
    }
    for (key, field) in &preparation.status {
        merge_field(&mut value["status"][key], field);
    }
    serde_json::from_value(value).unwrap_or_else(|_| md.clone())
}

/// Sets a prepared field: an object's keys into the object already there (a provider prepares
/// some of `status.provider`'s fields, the core writes others), anything else whole.
fn merge_field(target: &mut Value, field: &Value) {
    match (target.as_object_mut(), field.as_object()) {
        (Some(target), Some(field)) => {
            for (key, value) in field {
                target.insert(key.clone(), value.clone());
            }
        }
        _ => *target = field.clone(),
    }
}

/// Whether `status` shows the prepared `field`: equal, or for an object each of its keys equal.
fn shows(status: &Value, field: &Value) -> bool {
    match (status.as_object(), field.as_object()) {
        (Some(status), Some(field)) => field
            .iter()
            .all(|(key, value)| status.get(key).unwrap_or(&Value::Null) == value),
        _ => status == field,
    }
}

/// Whether `md` shows the prepared fields and conditions already (pure).
pub fn is_current(md: &ModelDeployment, preparation: &Preparation) -> bool {
    let status = serde_json::to_value(md.status.clone().unwrap_or_default()).unwrap_or(Value::Null);
    preparation
        .status
        .iter()
        .all(|(key, field)| shows(&status[key], field))
        && conditions::all_current(
            md.status.as_ref().and_then(|s| s.conditions.as_deref()),
            &preparation.conditions,
            md.metadata.generation,
        )
}

/// The server-side apply body of the prepared fields (pure).
pub fn patch(md: &ModelDeployment, preparation: &Preparation, now: &Time) -> Value {
    let mut status = Value::Object(preparation.status.clone());
    status["conditions"] = json!(conditions::materialize(
        md.status.as_ref().and_then(|s| s.conditions.as_deref()),
        &preparation.conditions,
        md.metadata.generation,
        now
    ));
    json!({
        "apiVersion": crate::constants::API_VERSION,
        "kind": "ModelDeployment",
        "metadata": {"name": md.metadata.name, "namespace": md.metadata.namespace},
        "status": status,
    })
}

/// Writes the prepared fields unless `md` shows them already.
pub(super) async fn write<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    preparation: &Preparation,
) -> Result<(), ReconcileError> {
    if (preparation.status.is_empty() && preparation.conditions.is_empty())
        || is_current(md, preparation)
    {
        return Ok(());
    }
    let name = md.name_any();
    let api: Api<ModelDeployment> =
        Api::namespaced(ctx.client.clone(), &md.namespace().unwrap_or_default());
    let body = patch(md, preparation, &Time(jiff::Timestamp::now()));
    let written = api
        .patch_status(
            &name,
            &PatchParams::apply(&manager(ctx.provider.name())).force(),
            &apply_body::apply(&body),
        )
        .await
        .map_err(api_error(format!("writing the prepared status of {name}")))?;
    ctx.recent.record(written);
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::conditions::DesiredCondition;
    use crate::v1alpha1::Phase;

    fn md(status: Value) -> ModelDeployment {
        serde_json::from_value(
            json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns", "generation": 3},
            "spec": {"model": {"id": "a/b"}}, "status": status}),
        )
        .unwrap()
    }

    #[test]
    fn prepared_fields_are_shown_to_the_render_and_written_once() {
        let mut preparation = Preparation::default();
        preparation.status.insert(
            "image".into(),
            json!({"requested": "r:1", "resolved": "r@sha256:1"}),
        );
        preparation.conditions.push(DesiredCondition::new(
            "ImageResolved",
            true,
            "ImageResolved",
            "resolved",
        ));
        let before = md(json!({"phase": "Running"}));
        let seen = with_status(&before, &preparation);
        assert_eq!(
            seen.status
                .as_ref()
                .unwrap()
                .image
                .as_ref()
                .unwrap()
                .resolved
                .as_deref(),
            Some("r@sha256:1")
        );
        assert_eq!(seen.phase(), Some(Phase::Running));
        assert!(!is_current(&before, &preparation));
        let body = patch(&before, &preparation, &Time(jiff::Timestamp::UNIX_EPOCH));
        assert_eq!(body["status"]["image"]["requested"], "r:1");
        assert_eq!(body["status"]["conditions"][0]["observedGeneration"], 3);
        let after = md(body["status"].clone());
        assert!(is_current(&after, &preparation));
        assert!(is_current(&before, &Preparation::default()));
    }

    #[test]
    fn prepared_keys_of_an_object_join_the_fields_already_there() {
        let mut preparation = Preparation::default();
        preparation
            .status
            .insert("provider".into(), json!({"intent": {"attempt": "2"}}));
        let before = md(json!({"provider": {"name": "dynamo"}}));
        let seen = with_status(&before, &preparation);
        let provider = seen.status.unwrap().provider.unwrap();
        assert_eq!(provider.name.as_deref(), Some("dynamo"));
        assert_eq!(provider.intent.unwrap().attempt.as_deref(), Some("2"));
        assert!(!is_current(&before, &preparation));
        let after = md(json!({"provider": {"name": "dynamo", "intent": {"attempt": "2"}}}));
        assert!(is_current(&after, &preparation));
    }
}
