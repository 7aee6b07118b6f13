//! The provider-owned statuses of every outcome the planner and the act step report (pure):
//! the holds (nothing applied, and why), recreation, and the status translated from the live
//! objects of a set.

use k8s_openapi::api::core::v1::Pod;
use kube::core::DynamicObject;

use super::desired::{DesiredUpstream, ProviderStatus};
use super::storage_gate::StorageGate;
use super::traits::{PreparationHold, Provider};
use crate::constants::{condition_types, reasons};
use crate::v1alpha1::{ModelDeployment, Phase};

/// Why a deployment is held without its objects being applied; also the metrics label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldCause {
    /// [`Provider::check_compatibility`] refused it.
    Incompatible,
    /// [`Provider::prepare`] returned a hold.
    Prepare,
    /// The deployment's storage is not ready (`failed`: it failed for good), see
    /// [`storage_gate`](super::storage_gate).
    Storage {
        /// `PVCFailed` or `DownloadFailed` (else: waiting).
        failed: bool,
    },
    /// The upstream CRD is missing or not Established.
    CrdUnavailable,
    /// The installed upstream schema is unknown to this provider version.
    UnsupportedSchema,
    /// [`Provider::render`] failed, rendered nothing, or broke pod security.
    Render(&'static str),
    /// The render produced an object of a kind the provider does not declare.
    UndeclaredKind,
    /// An object of the same name exists and belongs to someone else.
    NotOwned,
}

impl HoldCause {
    /// A short, static label for metrics (`None`: not an error, e.g. waiting for a CRD).
    pub fn error_category(&self) -> Option<&'static str> {
        match self {
            HoldCause::Incompatible
            | HoldCause::CrdUnavailable
            | HoldCause::Storage { failed: false } => None,
            HoldCause::Storage { failed: true } => Some("storage"),
            HoldCause::Prepare => Some("prepare"),
            HoldCause::UnsupportedSchema => Some("unsupported_schema"),
            HoldCause::Render(category) => Some(category),
            HoldCause::UndeclaredKind => Some("unsupported"),
            HoldCause::NotOwned => Some("not_owned"),
        }
    }
}

/// A deployment held: nothing is applied (whatever exists stays untouched), `status` is shown.
#[derive(Clone, Debug, PartialEq)]
pub struct Hold {
    /// Why.
    pub cause: HoldCause,
    /// The provider-owned status to show.
    pub status: ProviderStatus,
}

/// `ProviderCompatible=True` as `(status, reason, message)`.
pub(crate) fn compatible<P: Provider>(provider: &P) -> (bool, &'static str, String) {
    (
        true,
        reasons::COMPATIBILITY_VERIFIED,
        format!("Configuration compatible with {}", provider.display_name()),
    )
}

/// A hold with `phase`, the compatibility verdict and `ResourceCreated=False` for `reason`.
pub(crate) fn hold(
    cause: HoldCause,
    phase: Phase,
    compatible: (bool, &str, String),
    reason: &str,
    message: String,
) -> Hold {
    Hold {
        cause,
        status: ProviderStatus::not_deployed(phase, message.clone(), compatible, (reason, message)),
    }
}

/// A `Failed` hold with `ProviderCompatible=False` for `reason`.
pub(crate) fn hold_incompatible(cause: HoldCause, reason: &str, message: String) -> Hold {
    hold(
        cause,
        Phase::Failed,
        (false, reason, message.clone()),
        reason,
        message,
    )
}

/// The hold of a deployment whose storage is not ready ([`StorageGate::Wait`]: `Pending`) or
/// failed ([`StorageGate::Failed`]: `Failed`), compatible, nothing created; `None` when the
/// gate is open.
pub(crate) fn storage_held<P: Provider>(provider: &P, gate: StorageGate) -> Option<Hold> {
    let (failed, reason, message) = match gate {
        StorageGate::Open => return None,
        StorageGate::Wait { reason, message } => (false, reason, message),
        StorageGate::Failed { reason, message } => (true, reason, message),
    };
    let phase = if failed {
        Phase::Failed
    } else {
        Phase::Pending
    };
    Some(hold(
        HoldCause::Storage { failed },
        phase,
        compatible(provider),
        &reason,
        message,
    ))
}

/// The status for a deployment whose upstream object could not be applied because the CRD
/// went away after detection (`detail`: the API server's message).
pub fn crd_gone<P: Provider>(provider: &P, detail: &str) -> ProviderStatus {
    let message = format!(
        "{} ({detail})",
        crate::constants::messages::provider_crd_not_installed(provider.name())
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

/// An upstream object as a refusal names it.
#[derive(Clone, Copy, Debug)]
pub struct RefusedObject<'a> {
    /// Its kind, e.g. `DynamoGraphDeployment`.
    pub kind: &'a str,
    /// The `apiVersion` it was written as, e.g. `nvidia.com/v1alpha1`.
    pub api_version: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Whether the kind comes from a CRD (an upstream operator's schema) rather than
    /// Kubernetes itself.
    pub from_crd: bool,
}

/// The status for an upstream object the API server refused because the installed schema
/// does not declare `fields` (read by [`crate::kube_error::undeclared_fields`], sorted):
/// `Failed`, still compatible (the configuration is fine, the installed upstream is not what
/// the render needs), `ResourceCreated=False` with [`reasons::INCOMPATIBLE_UPSTREAM`] and a
/// message naming the fields. Nothing was written: the object, if it exists, is as it was. The
/// API server's own text is not part of the message (it lists the fields in no fixed order,
/// and the status must not change between two answers to the same write).
pub fn incompatible_upstream<P: Provider>(
    provider: &P,
    object: RefusedObject<'_>,
    fields: &[String],
) -> ProviderStatus {
    let message = incompatible_upstream_message(provider.display_name(), object, fields);
    ProviderStatus::not_deployed(
        Phase::Failed,
        message.clone(),
        compatible(provider),
        (reasons::INCOMPATIBLE_UPSTREAM, message),
    )
}

/// Whether `md` shows an [`incompatible_upstream`] refusal of its current generation that
/// names every one of `fields` already: the API server may name one undeclared field in one
/// answer and all of them in the next, and the status should not flip between the two.
pub fn shows_incompatible_upstream(md: &ModelDeployment, fields: &[String]) -> bool {
    let Some(status) = md.status.as_ref() else {
        return false;
    };
    crate::conditions::find(
        status.conditions.as_deref(),
        condition_types::RESOURCE_CREATED,
    )
    .is_some_and(|c| {
        c.status == crate::v1alpha1::ConditionStatus::False
            && c.reason.as_deref() == Some(reasons::INCOMPATIBLE_UPSTREAM)
            && c.observed_generation == md.metadata.generation
            && c.message.as_deref().is_some_and(|message| {
                fields.iter().all(|f| {
                    message.contains(&format!(" {f},")) || message.contains(&format!(" {f} "))
                })
            })
    }) && status.phase == Some(Phase::Failed)
}

/// The message of [`incompatible_upstream`] (the Go AI Runway's wording, with the field named).
fn incompatible_upstream_message(
    display_name: &str,
    object: RefusedObject<'_>,
    fields: &[String],
) -> String {
    let RefusedObject {
        kind,
        api_version,
        name,
        from_crd,
    } = object;
    let fields = match fields {
        [one] => format!("field {one}"),
        many => format!("fields {}", many.join(", ")),
    };
    let upstream = if from_crd { display_name } else { "Kubernetes" };
    format!(
        "Incompatible with the installed upstream: the installed {kind} schema ({api_version}) does not declare {fields}, which this provider renders; nothing was written to {kind} {name}. This usually means the cluster's {upstream} is older than this provider requires, or that spec.provider.overrides sets a key it does not support."
    )
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

/// The status of a deployment [`Provider::prepare`] held: `Failed` with `message`, compatible,
/// nothing created.
pub fn prepare_held<P: Provider>(provider: &P, hold: &PreparationHold) -> ProviderStatus {
    ProviderStatus::not_deployed(
        Phase::Failed,
        hold.message.clone(),
        compatible(provider),
        (hold.reason, hold.message.clone()),
    )
}

/// The provider-owned status translated from the live (or just applied) objects of a set, in
/// the order of `desired` (the primary first). `pods`: the watched Pods of the deployment's
/// namespace (see [`Provider::pod_watch_selector`]); those `status.workload.podSelector`
/// selects say why the deployment is not ready when the translation gives no reason or a
/// generic one ([`from_pods`]).
pub fn status_from_set<P: Provider>(
    provider: &P,
    md: &ModelDeployment,
    desired: &[DesiredUpstream],
    live: &[Option<&DynamicObject>],
    pods: &[&Pod],
) -> ProviderStatus {
    let translated = provider.translate_status(md, live);
    let resource = desired
        .first()
        .map(|d| (d.name().to_string(), d.kind().to_string()))
        .unwrap_or_default();
    let mut status =
        ProviderStatus::from_translation(provider.display_name(), resource, &translated);
    status.workload =
        super::workload::observed_workload(provider.workload(md, live), super::primary(live));
    if let Some(degradation) = provider.degradation(md, live)
        && let Some(degraded) = status
            .conditions
            .iter_mut()
            .find(|c| c.type_ == condition_types::DEGRADED)
    {
        *degraded =
            super::workload::degraded_condition(translated.replicas.as_ref(), Some(&degradation));
    }
    if desired.len() > 1
        && let Some(created) = status
            .conditions
            .iter_mut()
            .find(|c| c.type_ == condition_types::RESOURCE_CREATED)
    {
        created.message = format!("{} created successfully", kinds_created(desired));
    }
    if let Some(found) = from_pods(&status, md, pods) {
        status.set_not_ready(found);
    }
    fold_serving_path(&mut status, md);
    status
}

/// The reason the deployment's Pods give (see [`pod_state`](super::pod_state)) when `status`
/// is not ready for no reason or a generic one (`DeploymentInProgress`, `Updating`,
/// `Unclassified`): a provider's specific reason, read from what the upstream operator
/// writes, wins. The Pods are those of `md`'s namespace that `status.workload.podSelector`
/// selects; none without a selector.
fn from_pods(
    status: &ProviderStatus,
    md: &ModelDeployment,
    pods: &[&Pod],
) -> Option<crate::v1alpha1::NotReadyStatus> {
    if status.is_ready()
        || status
            .not_ready
            .as_ref()
            .is_some_and(|n| !n.reason.is_generic())
    {
        return None;
    }
    let selector = status.workload.as_ref()?.pod_selector.as_ref()?;
    let namespace = md.metadata.namespace.as_deref();
    super::pod_state::pods_not_ready(pods.iter().copied().filter(|pod| {
        pod.metadata.namespace.as_deref() == namespace && super::pod_state::selects(selector, pod)
    }))
}

/// `Ready` is never `True` while the gateway route the deployment asked for is known broken
/// ([`serving_path::gateway_blocks`](super::serving_path::gateway_blocks)).
fn fold_serving_path(status: &mut ProviderStatus, md: &ModelDeployment) {
    if status.is_ready()
        && let Some(blocked) = super::serving_path::gateway_blocks(md)
    {
        status.set_not_ready(blocked);
    }
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::provider::rendered::{RenderError, Rendered};
    use crate::provider::test_support::{compatibility, deployment, kind};
    use crate::provider::traits::{Incompatible, TranslatedStatus, UpstreamKind, UpstreamSchema};
    use crate::v1alpha1::{
        ConditionStatus, InferenceProviderConfigSpec, NotReadyReason, NotReadyStatus,
        WorkloadStatus,
    };
    use serde_json::json;

    /// Translates to the status it is built with; its pods are labelled `app: m`.
    struct Fixed(TranslatedStatus);

    impl Provider for Fixed {
        fn name(&self) -> &str {
            "fixed"
        }
        fn display_name(&self) -> &str {
            "Fixed"
        }
        fn version(&self) -> &str {
            "0.0.1"
        }
        fn registration(&self) -> InferenceProviderConfigSpec {
            InferenceProviderConfigSpec::default()
        }
        fn upstream(&self) -> UpstreamKind {
            kind("apps", "Deployment", "deployments", "v1")
        }
        fn check_compatibility(&self, md: &ModelDeployment) -> Result<(), Incompatible> {
            compatibility("Fixed", md)
        }
        fn render(&self, _: &ModelDeployment, _: &UpstreamSchema) -> Result<Rendered, RenderError> {
            Ok(Rendered::one(json!({})))
        }
        fn translate_status(
            &self,
            _: &ModelDeployment,
            _: &[Option<&DynamicObject>],
        ) -> TranslatedStatus {
            self.0.clone()
        }
        fn workload(
            &self,
            _: &ModelDeployment,
            _: &[Option<&DynamicObject>],
        ) -> Option<WorkloadStatus> {
            Some(WorkloadStatus {
                pod_selector: Some(BTreeMap::from([("app".to_string(), "m".to_string())])),
                ..WorkloadStatus::default()
            })
        }
    }

    fn translated(
        phase: Phase,
        ready: bool,
        not_ready: Option<NotReadyStatus>,
    ) -> TranslatedStatus {
        TranslatedStatus {
            phase,
            message: None,
            replicas: None,
            endpoint: None,
            ready,
            not_ready,
        }
    }

    fn pod(namespace: &str, app: &str) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "m-1", "namespace": namespace,
            "labels": {"app": app}},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                "reason": "Unschedulable",
                "message": "0/4 nodes are available: 2 Insufficient nvidia.com/gpu."}]}}))
        .unwrap()
    }

    fn status(provider: &Fixed, pods: &[&Pod]) -> ProviderStatus {
        status_from_set(provider, &deployment("a/b"), &[], &[], pods)
    }

    #[test]
    fn the_pods_replace_a_missing_or_generic_reason() {
        let unschedulable = pod("ns", "m");
        let waiting = status(
            &Fixed(translated(Phase::Deploying, false, None)),
            &[&unschedulable],
        );
        let not_ready = waiting.not_ready.clone().unwrap();
        assert_eq!(not_ready.reason, NotReadyReason::InsufficientCapacity);
        assert_eq!(not_ready.object.unwrap().name, "m-1");
        let ready = waiting
            .conditions
            .iter()
            .find(|c| c.type_ == condition_types::READY)
            .unwrap();
        assert_eq!(ready.reason, "InsufficientCapacity");
        assert!(ready.message.contains("nvidia.com/gpu"));
        assert_eq!(
            waiting.phase,
            Phase::Deploying,
            "the phase is the provider's"
        );

        let updating = Fixed(translated(
            Phase::Running,
            false,
            Some(NotReadyStatus::new(NotReadyReason::Updating, "rolling out")),
        ));
        assert_eq!(
            status(&updating, &[&unschedulable])
                .not_ready
                .unwrap()
                .reason,
            NotReadyReason::InsufficientCapacity
        );
    }

    #[test]
    fn a_strict_write_refusal_fails_the_deployment_naming_the_field() {
        let provider = Fixed(translated(Phase::Running, true, None));
        let object = RefusedObject {
            kind: "DynamoGraphDeployment",
            api_version: "nvidia.com/v1alpha1",
            name: "m",
            from_crd: true,
        };
        let status = incompatible_upstream(
            &provider,
            object,
            &["spec.services.Epp.eppConfig".to_string()],
        );
        assert_eq!(status.phase, Phase::Failed);
        assert_eq!(
            status.message,
            "Incompatible with the installed upstream: the installed DynamoGraphDeployment schema (nvidia.com/v1alpha1) does not declare field spec.services.Epp.eppConfig, which this provider renders; nothing was written to DynamoGraphDeployment m. This usually means the cluster's Fixed is older than this provider requires, or that spec.provider.overrides sets a key it does not support."
        );
        let condition = |type_: &str| {
            let c = status.conditions.iter().find(|c| c.type_ == type_).unwrap();
            (c.status, c.reason.clone())
        };
        assert_eq!(
            condition(condition_types::RESOURCE_CREATED),
            (
                ConditionStatus::False,
                reasons::INCOMPATIBLE_UPSTREAM.to_string()
            )
        );
        // Ready says the same (the Go AI Runway's reason); the configuration itself is
        // compatible.
        assert_eq!(
            condition(condition_types::READY),
            (
                ConditionStatus::False,
                reasons::INCOMPATIBLE_UPSTREAM.to_string()
            )
        );
        assert_eq!(
            condition(condition_types::PROVIDER_COMPATIBLE),
            (
                ConditionStatus::True,
                reasons::COMPATIBILITY_VERIFIED.to_string()
            )
        );
        assert_eq!(
            status.not_ready.unwrap().reason,
            NotReadyReason::IncompatibleUpstream
        );
        assert!(status.endpoint.is_none() && status.replicas.is_none());

        let built_in = RefusedObject {
            kind: "Deployment",
            api_version: "apps/v1",
            name: "m-decode",
            from_crd: false,
        };
        let fields = ["spec.a".to_string(), "spec.b".to_string()];
        let message = incompatible_upstream(&provider, built_in, &fields).message;
        assert!(
            message.contains(
                "the installed Deployment schema (apps/v1) does not declare fields spec.a, spec.b,"
            ) && message.contains("the cluster's Kubernetes is older"),
            "{message}"
        );
    }

    #[test]
    fn a_refusal_naming_fewer_fields_than_shown_is_the_same_refusal() {
        let shown = |generation: i64, observed: i64, message: &str| -> ModelDeployment {
            serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
                "metadata": {"name": "m", "namespace": "ns", "generation": generation},
                "spec": {"model": {"id": "a/b"}},
                "status": {"phase": "Failed", "conditions": [{"type": "ResourceCreated", "status": "False",
                    "reason": "IncompatibleUpstream", "message": message, "observedGeneration": observed,
                    "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}))
            .unwrap()
        };
        let both = "Incompatible with the installed upstream: the installed X schema (g/v1) does not declare fields spec.a, spec.b, which this provider renders; ...";
        let field = |f: &str| vec![f.to_string()];
        assert!(shows_incompatible_upstream(
            &shown(2, 2, both),
            &field("spec.a")
        ));
        assert!(shows_incompatible_upstream(
            &shown(2, 2, both),
            &["spec.a".to_string(), "spec.b".to_string()]
        ));
        assert!(!shows_incompatible_upstream(
            &shown(2, 2, both),
            &field("spec.c")
        ));
        assert!(!shows_incompatible_upstream(
            &shown(2, 2, both),
            &field("spec")
        ));
        assert!(
            !shows_incompatible_upstream(&shown(3, 2, both), &field("spec.a")),
            "a new generation is shown anew"
        );
        assert!(!shows_incompatible_upstream(
            &deployment("a/b"),
            &field("spec.a")
        ));
    }

    #[test]
    fn a_specific_reason_a_ready_deployment_and_other_pods_are_left_alone() {
        let unschedulable = pod("ns", "m");
        let stalled = Fixed(translated(
            Phase::Running,
            false,
            Some(NotReadyStatus::new(
                NotReadyReason::RolloutStalled,
                "no progress",
            )),
        ));
        assert_eq!(
            status(&stalled, &[&unschedulable])
                .not_ready
                .unwrap()
                .reason,
            NotReadyReason::RolloutStalled
        );
        let serving = status(
            &Fixed(translated(Phase::Running, true, None)),
            &[&unschedulable],
        );
        assert!(serving.is_ready() && serving.not_ready.is_none());
        let deploying = Fixed(translated(Phase::Deploying, false, None));
        for other in [pod("elsewhere", "m"), pod("ns", "other")] {
            assert_eq!(
                status(&deploying, &[&other]).not_ready.unwrap().reason,
                NotReadyReason::InProgress,
                "{other:?}"
            );
        }
    }
}
