//! The provider-owned statuses of every outcome the planner and the act step report (pure):
//! the holds (nothing applied, and why), recreation, and the status translated from the live
//! objects of a set.

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
/// the order of `desired` (the primary first).
pub fn status_from_set<P: Provider>(
    provider: &P,
    md: &ModelDeployment,
    desired: &[DesiredUpstream],
    live: &[Option<&DynamicObject>],
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
    fold_serving_path(&mut status, md);
    status
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
