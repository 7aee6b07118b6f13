//! The pure half of a provider reconcile: what to do with a deployment ([`triage`]) and, for
//! one to deploy, what to write ([`plan`]), from values only — the deployment as the watch
//! cache holds it, the upstream detection and the live upstream object from the cache. The SDK's
//! reconcile ([`super::reconcile`]) carries out the result; [`super::cycle`] runs the same
//! functions without an API server for tests and benchmarks.

use kube::core::DynamicObject;
use serde_json::Value;

use super::desired::{self, DesiredUpstream, ProviderStatus};
use super::traits::{Provider, RenderError, RenderWarning, SchemaDetection, UpstreamSchema};
use crate::constants::{condition_types, finalizers, messages, reasons};
use crate::pod_security;
use crate::v1alpha1::{ConditionStatus, ModelDeployment, Phase};

/// What the reconcile does with a deployment it was woken for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Triage {
    /// Neither assigned to this provider nor carrying its finalizer: not ours.
    Ignore,
    /// `airunway.ai/reconcile-paused` is set: no reads, no writes.
    Paused,
    /// Being deleted with our finalizer: delete the upstream object, then release.
    Delete,
    /// Assigned to another provider but still carrying our finalizer: clean up, hand over our
    /// status fields, release.
    MovedAway,
    /// Assigned to us without our finalizer yet: add it (the update wakes us again).
    AddFinalizer,
    /// The core found the current spec invalid: deploy nothing until it is fixed.
    AwaitValidSpec,
    /// Deploy it: [`plan`].
    Deploy,
}

/// Decides what to do with `md` for provider `provider_name` (pure).
pub fn triage(md: &ModelDeployment, provider_name: &str) -> Triage {
    let ours = md.selected_provider() == Some(provider_name);
    let has_finalizer = md
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| *f == finalizers::provider(provider_name));
    if !ours && !has_finalizer {
        return Triage::Ignore;
    }
    if md.is_reconcile_paused() {
        return Triage::Paused;
    }
    if md.metadata.deletion_timestamp.is_some() {
        return if has_finalizer {
            Triage::Delete
        } else {
            Triage::Ignore
        };
    }
    if !ours {
        return Triage::MovedAway;
    }
    if !has_finalizer {
        return Triage::AddFinalizer;
    }
    let invalid = md.condition(condition_types::VALIDATED).is_some_and(|c| {
        c.status == ConditionStatus::False && c.observed_generation == md.metadata.generation
    });
    if invalid {
        Triage::AwaitValidSpec
    } else {
        Triage::Deploy
    }
}

/// Why a deployment is held without an upstream object; also the metrics label of the hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldCause {
    /// [`Provider::check_compatibility`] refused it.
    Incompatible,
    /// The upstream CRD is missing or not Established.
    CrdUnavailable,
    /// The installed upstream schema is unknown to this provider version.
    UnsupportedSchema,
    /// [`Provider::render`] failed.
    Render(&'static str),
    /// An object of the same name exists and belongs to someone else.
    NotOwned,
}

impl HoldCause {
    /// A short, static label for metrics (`None`: not an error, e.g. waiting for a CRD).
    pub fn error_category(&self) -> Option<&'static str> {
        match self {
            HoldCause::Incompatible | HoldCause::CrdUnavailable => None,
            HoldCause::UnsupportedSchema => Some("unsupported_schema"),
            HoldCause::Render(category) => Some(category),
            HoldCause::NotOwned => Some("not_owned"),
        }
    }
}

/// What to write for a deployment to deploy.
#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    /// Nothing can be deployed: write `status` (and keep whatever exists untouched).
    Hold {
        /// Why.
        cause: HoldCause,
        /// The provider-owned status to show.
        status: ProviderStatus,
    },
    /// The live object is being deleted (an identity change): wait until it is gone.
    AwaitDeletion,
    /// An identity field changed: delete the live object (it is created anew once gone) and
    /// show `status`.
    Recreate {
        /// The object's name.
        name: String,
        /// The provider-owned status to show meanwhile.
        status: ProviderStatus,
    },
    /// Apply `desired`: it does not exist yet, its spec changed, or someone edited it.
    Apply {
        /// The object to apply.
        desired: DesiredUpstream,
        /// Whether the live object was edited by hand (a `DriftDetected` event).
        drifted: bool,
        /// Whether it is created (no live object).
        creating: bool,
        /// Notes for the user from the render.
        warnings: Vec<RenderWarning>,
    },
    /// The live object is as desired: only the status translated from it may need writing.
    InSync {
        /// The object as desired (what the live one already is).
        desired: DesiredUpstream,
        /// The provider-owned status translated from the live object.
        status: ProviderStatus,
        /// Notes for the user from the render.
        warnings: Vec<RenderWarning>,
    },
}

impl Plan {
    /// A hold whose `ResourceCreated` condition says `message` instead of the phase message.
    fn with_resource_message(mut self, message: String) -> Plan {
        if let Plan::Hold { status, .. } = &mut self
            && let Some(condition) = status
                .conditions
                .iter_mut()
                .find(|c| c.type_ == condition_types::RESOURCE_CREATED)
        {
            condition.message = message;
        }
        self
    }
}

/// `ProviderCompatible=True` as `(status, reason, message)`.
fn compatible<P: Provider>(provider: &P) -> (bool, &'static str, String) {
    (
        true,
        reasons::COMPATIBILITY_VERIFIED,
        format!("Configuration compatible with {}", provider.display_name()),
    )
}

fn hold(
    cause: HoldCause,
    phase: Phase,
    compatible: (bool, &str, String),
    reason: &str,
    message: String,
) -> Plan {
    Plan::Hold {
        cause,
        status: ProviderStatus::not_deployed(phase, message.clone(), compatible, (reason, message)),
    }
}

fn hold_incompatible(cause: HoldCause, reason: &str, message: String) -> Plan {
    hold(
        cause,
        Phase::Failed,
        (false, reason, message.clone()),
        reason,
        message,
    )
}

/// The schema to render for, or the plan that holds the deployment until there is one.
fn usable_schema<P: Provider>(
    provider: &P,
    detection: &SchemaDetection,
) -> Result<UpstreamSchema, Box<Plan>> {
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

/// The status for a deployment whose upstream object could not be applied because the CRD
/// went away after detection (`detail`: the API server's message).
pub fn crd_gone<P: Provider>(provider: &P, detail: &str) -> ProviderStatus {
    let message = format!(
        "{} ({detail})",
        messages::provider_crd_not_installed(provider.name())
    );
    ProviderStatus::not_deployed(
        Phase::Pending,
        message.clone(),
        compatible(provider),
        (reasons::UPSTREAM_CRD_NOT_INSTALLED, message),
    )
}

/// The status for an upstream object the API server refused (`detail`: its message).
pub fn apply_rejected<P: Provider>(
    provider: &P,
    kind: &str,
    name: &str,
    detail: &str,
) -> ProviderStatus {
    let message = format!("The API server rejected {kind} {name}: {detail}");
    ProviderStatus::not_deployed(
        Phase::Failed,
        message.clone(),
        compatible(provider),
        (reasons::APPLY_FAILED, message),
    )
}

/// The provider-owned status translated from the live (or just applied) object.
pub fn status_from_live<P: Provider>(
    provider: &P,
    md: &ModelDeployment,
    desired: &DesiredUpstream,
    live: Option<&DynamicObject>,
) -> ProviderStatus {
    let translated = provider.translate_status(md, live);
    ProviderStatus::from_translation(
        provider.display_name(),
        (desired.name().to_string(), desired.kind().to_string()),
        &translated,
    )
}

/// The provider-owned status translated from the live (or just applied) objects of a set, in
/// the order of `desired` (the primary first).
pub fn status_from_set<P: Provider>(
    provider: &P,
    md: &ModelDeployment,
    desired: &[DesiredUpstream],
    live: &[Option<&DynamicObject>],
) -> ProviderStatus {
    let translated = provider.translate_set_status(md, live);
    let resource = desired
        .first()
        .map(|d| (d.name().to_string(), d.kind().to_string()))
        .unwrap_or_default();
    let mut status =
        ProviderStatus::from_translation(provider.display_name(), resource, &translated);
    if desired.len() > 1
        && let Some(created) = status
            .conditions
            .iter_mut()
            .find(|c| c.type_ == condition_types::RESOURCE_CREATED)
    {
        created.message = format!("{} created successfully", kinds_created(desired));
    }
    status
}

/// `Deployments and Services`, `Deployment and Service`: the kinds of a set, in order, plural
/// when there are several of a kind.
fn kinds_created(desired: &[DesiredUpstream]) -> String {
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for object in desired {
        match kinds.iter_mut().find(|(k, _)| *k == object.kind()) {
            Some((_, count)) => *count += 1,
            None => kinds.push((object.kind(), 1)),
        }
    }
    let names: Vec<String> = kinds
        .iter()
        .map(|(kind, count)| {
            if *count > 1 {
                format!("{kind}s")
            } else {
                kind.to_string()
            }
        })
        .collect();
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The desired objects of a deployment to deploy (the primary first) and the render's notes.
#[derive(Clone, Debug, PartialEq)]
pub struct Prepared {
    /// The objects to apply, completed by [`desired::desired_object`].
    pub desired: Vec<DesiredUpstream>,
    /// Notes for the user from the render.
    pub warnings: Vec<RenderWarning>,
}

/// [`prepare_with`] the default pod security policy (baseline, no exemptions).
pub fn prepare<P: Provider>(
    provider: &P,
    md: &ModelDeployment,
    detection: &SchemaDetection,
) -> Result<Prepared, Box<Plan>> {
    prepare_with(provider, md, detection, &pod_security::Policy::default())
}

/// The half of [`plan`] before any live object is looked at: compatibility, schema, render,
/// and the Pod Security check of every rendered object (`policy`). `Err`: the [`Plan::Hold`]
/// to show instead; nothing of a set is applied when one object breaks the policy.
pub fn prepare_with<P: Provider>(
    provider: &P,
    md: &ModelDeployment,
    detection: &SchemaDetection,
    policy: &pod_security::Policy,
) -> Result<Prepared, Box<Plan>> {
    if let Err(message) = provider.check_compatibility(md) {
        let kind = provider.upstream().kind;
        return Err(Box::new(
            hold(
                HoldCause::Incompatible,
                Phase::Failed,
                (false, reasons::INCOMPATIBLE_CONFIGURATION, message.clone()),
                reasons::INCOMPATIBLE_CONFIGURATION,
                message,
            )
            .with_resource_message(format!(
                "No {kind} is created for an incompatible configuration"
            )),
        ));
    }
    let schema = usable_schema(provider, detection)?;
    let rendered = match provider.render_set(md, &schema) {
        Ok(rendered) if !rendered.objects.is_empty() => rendered,
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
    Ok(Prepared {
        desired: rendered
            .objects
            .iter()
            .map(|object| desired::desired_object(md, object))
            .collect(),
        warnings: rendered.warnings,
    })
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

/// What to write for a deployment [`triage`] said to deploy: compatibility, schema, render,
/// then the comparison of the primary object with `live` (the cached upstream object of the
/// same name, if any). An object is applied only when it is missing, its spec changed or it
/// was edited by hand. (The SDK's reconcile compares every object of a set the same way, with
/// [`compare_object`].)
pub fn plan<P: Provider>(
    provider: &P,
    md: &ModelDeployment,
    detection: &SchemaDetection,
    live: Option<&DynamicObject>,
) -> Plan {
    let prepared = match prepare(provider, md, detection) {
        Ok(prepared) => prepared,
        Err(held) => return *held,
    };
    let Some(primary) = prepared.desired.into_iter().next() else {
        return hold_incompatible(
            HoldCause::Render("unsupported"),
            reasons::INCOMPATIBLE_CONFIGURATION,
            format!("{} rendered no object", provider.display_name()),
        );
    };
    compare(provider, md, primary, prepared.warnings, live)
}

/// How one desired object compares with its live copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjectPlan {
    /// No live object: create it.
    Create,
    /// Its spec changed, or someone edited it (`drifted`, a `DriftDetected` event): apply it.
    Update {
        /// Whether the live object was edited by hand.
        drifted: bool,
    },
    /// As desired.
    InSync,
    /// Being deleted (an identity change): wait until it is gone.
    AwaitDeletion,
    /// An identity field changed: delete it (it is created anew once gone).
    Recreate,
    /// An object of that name belongs to someone else: the message.
    NotOwned(String),
}

/// Compares one desired object with its live copy (pure).
pub fn compare_object(
    md: &ModelDeployment,
    desired: &DesiredUpstream,
    live: Option<&DynamicObject>,
) -> ObjectPlan {
    let Some(live) = live else {
        return ObjectPlan::Create;
    };
    let live_value = serde_json::to_value(live).unwrap_or(Value::Null);
    if !desired::owned_by(&live_value, md) {
        let namespace = md.metadata.namespace.clone().unwrap_or_default();
        return ObjectPlan::NotOwned(format!(
            "{} {namespace}/{} already exists and is not owned by this ModelDeployment; delete or rename it",
            desired.kind(),
            desired.name()
        ));
    }
    if live.metadata.deletion_timestamp.is_some() {
        return ObjectPlan::AwaitDeletion;
    }
    if desired::live_identity_hash(&live_value) != Some(desired.identity_hash.as_str()) {
        return ObjectPlan::Recreate;
    }
    let same_spec = live_value["metadata"]["annotations"][crate::constants::annotations::SPEC_HASH]
        .as_str()
        == Some(desired.spec_hash.as_str());
    let drifted = desired::drifted(desired, &live_value);
    if !same_spec || drifted {
        ObjectPlan::Update { drifted }
    } else {
        ObjectPlan::InSync
    }
}

/// The objects of `owned` (kind index and name: what the provider created for a deployment)
/// that `wanted` (the rendered set) no longer has: the old shape to delete.
pub fn stale<'a, K: PartialEq>(
    wanted: &[(K, &str)],
    owned: &'a [(K, String)],
) -> Vec<&'a (K, String)> {
    owned
        .iter()
        .filter(|(index, name)| !wanted.iter().any(|(i, n)| i == index && n == name))
        .collect()
}

/// The status of a deployment whose object `message` describes belongs to someone else.
pub fn not_owned<P: Provider>(provider: &P, message: String) -> ProviderStatus {
    ProviderStatus::not_deployed(
        Phase::Failed,
        message.clone(),
        compatible(provider),
        (reasons::APPLY_FAILED, message),
    )
}

/// The status of a deployment whose `kind` `name` is deleted to be created anew.
pub fn recreating<P: Provider>(provider: &P, kind: &str, name: &str) -> ProviderStatus {
    let message = format!("Recreating {kind} {name} after an identity change");
    ProviderStatus::not_deployed(
        Phase::Deploying,
        message.clone(),
        compatible(provider),
        (reasons::RECREATING, message),
    )
}

/// The live-object half of [`plan`].
fn compare<P: Provider>(
    provider: &P,
    md: &ModelDeployment,
    desired: DesiredUpstream,
    warnings: Vec<RenderWarning>,
    live: Option<&DynamicObject>,
) -> Plan {
    match compare_object(md, &desired, live) {
        ObjectPlan::Create => Plan::Apply {
            desired,
            drifted: false,
            creating: true,
            warnings,
        },
        ObjectPlan::Update { drifted } => Plan::Apply {
            desired,
            drifted,
            creating: false,
            warnings,
        },
        ObjectPlan::InSync => Plan::InSync {
            status: status_from_live(provider, md, &desired, live),
            desired,
            warnings,
        },
        ObjectPlan::AwaitDeletion => Plan::AwaitDeletion,
        ObjectPlan::Recreate => Plan::Recreate {
            status: recreating(provider, desired.kind(), desired.name()),
            name: desired.name().to_string(),
        },
        ObjectPlan::NotOwned(message) => Plan::Hold {
            cause: HoldCause::NotOwned,
            status: not_owned(provider, message),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn md(value: Value) -> ModelDeployment {
        serde_json::from_value(value).unwrap()
    }

    fn base() -> Value {
        json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns", "uid": "u", "generation": 2},
            "spec": {"model": {"id": "a/b"}},
            "status": {"provider": {"name": "echo"}}})
    }

    #[test]
    fn triage_follows_assignment_finalizer_pause_and_deletion() {
        let mut value = base();
        assert_eq!(triage(&md(value.clone()), "other"), Triage::Ignore);
        assert_eq!(triage(&md(value.clone()), "echo"), Triage::AddFinalizer);
        value["metadata"]["finalizers"] = json!(["airunway.ai/echo-provider"]);
        assert_eq!(triage(&md(value.clone()), "echo"), Triage::Deploy);
        value["status"]["provider"]["name"] = json!("other");
        assert_eq!(triage(&md(value.clone()), "echo"), Triage::MovedAway);
        value["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(triage(&md(value.clone()), "echo"), Triage::Delete);
        value["metadata"]["annotations"] = json!({"airunway.ai/reconcile-paused": "true"});
        assert_eq!(triage(&md(value), "echo"), Triage::Paused);
    }

    #[test]
    fn objects_of_an_old_shape_are_stale() {
        let owned = vec![
            (0, "m".to_string()),
            (1, "m".to_string()),
            (0, "m-decode".to_string()),
        ];
        let wanted = [(0, "m-decode"), (0, "m-prefill"), (1, "m-decode")];
        assert_eq!(
            stale(&wanted, &owned),
            [&(0, "m".to_string()), &(1, "m".to_string())]
        );
        assert!(stale(&[(0, "m"), (1, "m")], &owned[..2]).is_empty());
        assert_eq!(
            stale(&[(1, "m")], &owned[..2]),
            [&(0, "m".to_string())],
            "a name is matched within its kind"
        );
    }

    #[test]
    fn triage_waits_for_a_valid_spec_of_this_generation() {
        let mut value = base();
        value["metadata"]["finalizers"] = json!(["airunway.ai/echo-provider"]);
        value["status"]["conditions"] = json!([{"type": "Validated", "status": "False",
            "reason": "ValidationFailed", "message": "bad", "lastTransitionTime": "2026-01-01T00:00:00Z",
            "observedGeneration": 2}]);
        assert_eq!(triage(&md(value.clone()), "echo"), Triage::AwaitValidSpec);
        value["status"]["conditions"][0]["observedGeneration"] = json!(1);
        assert_eq!(
            triage(&md(value), "echo"),
            Triage::Deploy,
            "a verdict on an older generation does not hold the new one"
        );
    }
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
