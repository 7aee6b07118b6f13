//! The checked render (pure): compatibility, the [storage gate](super::storage_gate), the upstream schema, the provider's declared
//! overrides, the provider's render of the whole set, and the Pod Security check of every rendered object. Either the desired
//! objects (completed with owner reference, labels and hashes) or the [`Hold`] to show.

use std::collections::BTreeMap;

use super::desired::{self, DesiredUpstream};
use super::engine_features;
use super::rendered::{RenderError, RenderWarning};
use super::statuses::{Hold, HoldCause, compatible, hold, hold_incompatible, storage_held};
use super::storage_gate;
use super::traits::{Provider, SchemaDetection, UpstreamSchema};
use crate::constants::{condition_types, messages, reasons};
use crate::pod_security;
use crate::v1alpha1::{ModelDeployment, Phase};

/// The desired objects of a deployment to deploy (the primary first) and the render's notes.
#[derive(Clone, Debug, PartialEq)]
pub struct Checked {
    /// The objects to apply, completed by [`desired::desired_object`].
    pub desired: Vec<DesiredUpstream>,
    /// Notes for the user from the render.
    pub warnings: Vec<RenderWarning>,
}

/// Compatibility, the storage gate, schema, overrides, render, and the Pod Security check of every rendered object
/// (`policy`): the objects to apply (labelled with `propagated` besides the SDK's labels, see
/// [`desired::desired_object`]), or the hold to show instead (nothing of a set is applied
/// when one object breaks the policy).
pub fn checked_render<P: Provider>(
    provider: &P,
    md: &ModelDeployment,
    propagated: &BTreeMap<String, String>,
    detection: &SchemaDetection,
    policy: &pod_security::Policy,
) -> Result<Checked, Box<Hold>> {
    let declared = provider
        .check_compatibility(md)
        .map_err(|e| e.to_string())
        .and_then(|()| {
            engine_features::check_declared(provider.display_name(), &provider.registration(), md)
        });
    if let Err(message) = declared {
        let kind = provider.upstream().kind;
        let mut held = hold(
            HoldCause::Incompatible,
            Phase::Failed,
            (false, reasons::INCOMPATIBLE_CONFIGURATION, message.clone()),
            reasons::INCOMPATIBLE_CONFIGURATION,
            message,
        );
        if let Some(condition) = held
            .status
            .conditions
            .iter_mut()
            .find(|c| c.type_ == condition_types::RESOURCE_CREATED)
        {
            condition.message = format!("No {kind} is created for an incompatible configuration");
        }
        return Err(Box::new(held));
    }
    if let Some(held) = storage_held(provider, storage_gate::gate(md)) {
        return Err(Box::new(held));
    }
    let schema = usable_schema(provider, detection)?;
    let overrides = md.spec.provider.as_ref().and_then(|p| p.overrides.as_ref());
    let checked = provider
        .overrides()
        .check(overrides, provider.display_name())
        .and_then(|warnings| Ok((warnings, provider.render(md, &schema)?)));
    let rendered = match checked {
        Ok((mut warnings, mut rendered)) if !rendered.objects.is_empty() => {
            warnings.append(&mut rendered.warnings);
            rendered.warnings = warnings;
            rendered
        }
        Ok(_) => {
            return Err(Box::new(hold_incompatible(
                HoldCause::Render("unsupported"),
                reasons::INCOMPATIBLE_CONFIGURATION,
                format!("{} rendered no object", provider.display_name()),
            )));
        }
        Err(error) => {
            let reason = match error {
                RenderError::InvalidOverrides(_) => reasons::INVALID_OVERRIDES,
                RenderError::Unsupported(_) => reasons::INCOMPATIBLE_CONFIGURATION,
            };
            return Err(Box::new(hold_incompatible(
                HoldCause::Render(error.category()),
                reason,
                error.to_string(),
            )));
        }
    };
    if let Some(message) = pod_security_message(md, &rendered.objects, policy) {
        return Err(Box::new(hold_incompatible(
            HoldCause::Render("pod_security"),
            reasons::POD_SECURITY_VIOLATION,
            message,
        )));
    }
    Ok(Checked {
        desired: rendered
            .objects
            .iter()
            .map(|object| desired::desired_object(md, provider.name(), propagated, object))
            .collect(),
        warnings: rendered.warnings,
    })
}

/// The schema to render for, or the plan that holds the deployment until there is one.
fn usable_schema<P: Provider>(
    provider: &P,
    detection: &SchemaDetection,
) -> Result<UpstreamSchema, Box<Hold>> {
    let waiting = match detection {
        SchemaDetection::Supported(schema) => return Ok(schema.clone()),
        SchemaDetection::CrdNotInstalled { crd } => format!(
            "{} ({crd} is missing)",
            messages::provider_crd_not_installed(provider.name())
        ),
        SchemaDetection::NotEstablished { crd } => {
            format!("Waiting for CRD {crd} to be Established")
        }
        SchemaDetection::Unsupported { message, .. } => {
            return Err(Box::new(hold_incompatible(
                HoldCause::UnsupportedSchema,
                reasons::UNSUPPORTED_SCHEMA,
                message.clone(),
            )));
        }
    };
    Err(Box::new(hold(
        HoldCause::CrdUnavailable,
        Phase::Pending,
        compatible(provider),
        reasons::UPSTREAM_CRD_NOT_INSTALLED,
        waiting,
    )))
}

/// Most violations named in one message.
const MAX_VIOLATIONS_NAMED: usize = 5;

/// The message for rendered objects that break `policy`, or `None` when they pass: each
/// violation with the rendered object and field, the rule, and the override path it came from.
fn pod_security_message(
    md: &ModelDeployment,
    objects: &[serde_json::Value],
    policy: &pod_security::Policy,
) -> Option<String> {
    let overrides = md
        .spec
        .provider
        .as_ref()
        .and_then(|p| p.overrides.as_ref())
        .map(|o| serde_json::Value::Object(o.clone()));
    let mut found = Vec::new();
    for object in objects {
        let kind = object["kind"].as_str().unwrap_or("object");
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        for violation in pod_security::check(object, policy.profile, &policy.exemptions) {
            let origin = overrides
                .as_ref()
                .and_then(|o| pod_security::override_origin(o, &violation))
                .map(|path| format!(" (from {path})"))
                .unwrap_or_default();
            found.push(format!("{kind} {name} {violation}{origin}"));
        }
    }
    if found.is_empty() {
        return None;
    }
    let total = found.len();
    found.truncate(MAX_VIOLATIONS_NAMED);
    let more = if total > MAX_VIOLATIONS_NAMED {
        format!("; and {} more", total - MAX_VIOLATIONS_NAMED)
    } else {
        String::new()
    };
    Some(format!(
        "Nothing is applied: the rendered objects break pod security: {}{more}",
        found.join("; ")
    ))
}

#[cfg(test)]
mod pod_security_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rendered_violations_name_the_object_the_field_the_rule_and_the_override() {
        let md: ModelDeployment = serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns"},
            "spec": {"model": {"id": "a/b"}, "provider": {"overrides": {
                "deployment": {"spec": {"template": {"spec": {"containers": [{"securityContext": {"Privileged": true}}]}}}}}}},
        }))
        .unwrap();
        // As a provider that deep-merges overrides into its Deployment would render it.
        let rendered = vec![
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "m"},
            "spec": {"template": {"spec": {"containers": [{"name": "vllm", "securityContext": {"Privileged": true}}]}}}}),
        ];
        let message =
            pod_security_message(&md, &rendered, &pod_security::Policy::default()).unwrap();
        assert_eq!(
            message,
            "Nothing is applied: the rendered objects break pod security: Deployment m spec.template.spec.containers[0].securityContext.Privileged: privileged containers are not allowed (Pod Security baseline) (from spec.provider.overrides.deployment.spec.template.spec.containers[0].securityContext.Privileged)"
        );
        let clean = vec![
            json!({"kind": "Service", "metadata": {"name": "m"}, "spec": {"ports": [{"port": 8000}]}}),
        ];
        assert_eq!(
            pod_security_message(&md, &clean, &pod_security::Policy::default()),
            None
        );
    }
}
