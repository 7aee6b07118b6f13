//! `status.notReady` and the `Ready=False` reasons: one closed vocabulary every provider maps its
//! upstream state to, so users, alerts and dashboards can tell capacity from quota from a bad
//! image whichever serving stack runs the model (docs/concepts.md "Why a deployment is not
//! ready").

use serde::{Deserialize, Serialize};

/// Why a deployment is not ready: the `Ready=False` reason and `status.notReady.reason`. A
/// closed set; a provider that cannot tell says [`NotReadyReason::Unclassified`].
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NotReadyReason {
    /// Work in progress and nothing wrong seen: objects being created, pods starting, the
    /// model loading (the Go AI Runway's reason).
    #[serde(rename = "DeploymentInProgress")]
    InProgress,
    /// A new generation is rolling out (the old one may still serve).
    Updating,
    /// Pods cannot be scheduled: no node has the GPUs, memory or CPU they ask for (the message
    /// names what is missing).
    InsufficientCapacity,
    /// A ResourceQuota refused the pods.
    QuotaExceeded,
    /// The image cannot be pulled (or resolved).
    ImagePullFailed,
    /// The model weights could not be downloaded.
    ModelDownloadFailed,
    /// The model source refused the credentials: a gated model, a missing or bad token.
    ModelAuthFailed,
    /// The engine was killed for using more memory than its limit.
    #[serde(rename = "OOMKilled")]
    OomKilled,
    /// The engine keeps crashing (the message carries its last termination message).
    EngineCrashLoop,
    /// A new generation makes no progress while the old one keeps serving: not Ready for the
    /// new generation.
    RolloutStalled,
    /// The upstream operator reports an error reconciling the object it was given.
    UpstreamReconcileError,
    /// The upstream operator (its CRD or its controller) is not installed or not running.
    UpstreamOperatorMissing,
    /// The provider cannot deploy the spec (incompatible, refused by the API server, an
    /// object of the name belongs to someone else); `ProviderCompatible` and
    /// `ResourceCreated` say more.
    NotDeployed,
    /// The installed upstream schema does not declare a field the provider renders (an older
    /// upstream than the provider needs, or an override it does not know): the API server
    /// refused the write and nothing was changed; the message names the field (the Go AI
    /// Runway's reason).
    IncompatibleUpstream,
    /// The current generation failed the core's validation (`Validated=False`); whatever ran
    /// before keeps running.
    ValidationFailed,
    /// The serving pods are ready but the gateway route the deployment asked for is not
    /// accepted (`GatewayReady` says why).
    GatewayNotReady,
    /// The deployment has the `airunway.ai/dry-run` annotation: the provider rendered it into
    /// the preview ConfigMap and applied nothing; remove the annotation to deploy.
    DryRun,
    /// None of the above: the upstream reports a problem AI Runway has no reason for; the
    /// message carries the upstream's words.
    Unclassified,
}

impl NotReadyReason {
    /// Every reason, in documentation order.
    pub const ALL: [NotReadyReason; 18] = [
        NotReadyReason::InProgress,
        NotReadyReason::Updating,
        NotReadyReason::InsufficientCapacity,
        NotReadyReason::QuotaExceeded,
        NotReadyReason::ImagePullFailed,
        NotReadyReason::ModelDownloadFailed,
        NotReadyReason::ModelAuthFailed,
        NotReadyReason::OomKilled,
        NotReadyReason::EngineCrashLoop,
        NotReadyReason::RolloutStalled,
        NotReadyReason::UpstreamReconcileError,
        NotReadyReason::UpstreamOperatorMissing,
        NotReadyReason::NotDeployed,
        NotReadyReason::IncompatibleUpstream,
        NotReadyReason::ValidationFailed,
        NotReadyReason::GatewayNotReady,
        NotReadyReason::DryRun,
        NotReadyReason::Unclassified,
    ];

    /// The reason as written in conditions and `status.notReady.reason`.
    pub fn as_str(self) -> &'static str {
        match self {
            NotReadyReason::InProgress => "DeploymentInProgress",
            NotReadyReason::Updating => "Updating",
            NotReadyReason::InsufficientCapacity => "InsufficientCapacity",
            NotReadyReason::QuotaExceeded => "QuotaExceeded",
            NotReadyReason::ImagePullFailed => "ImagePullFailed",
            NotReadyReason::ModelDownloadFailed => "ModelDownloadFailed",
            NotReadyReason::ModelAuthFailed => "ModelAuthFailed",
            NotReadyReason::OomKilled => "OOMKilled",
            NotReadyReason::EngineCrashLoop => "EngineCrashLoop",
            NotReadyReason::RolloutStalled => "RolloutStalled",
            NotReadyReason::UpstreamReconcileError => "UpstreamReconcileError",
            NotReadyReason::UpstreamOperatorMissing => "UpstreamOperatorMissing",
            NotReadyReason::NotDeployed => "NotDeployed",
            NotReadyReason::IncompatibleUpstream => "IncompatibleUpstream",
            NotReadyReason::ValidationFailed => "ValidationFailed",
            NotReadyReason::GatewayNotReady => "GatewayNotReady",
            NotReadyReason::DryRun => "DryRun",
            NotReadyReason::Unclassified => "Unclassified",
        }
    }

    /// The reason named `reason` (as [`as_str`](Self::as_str) writes it).
    pub fn parse(reason: &str) -> Option<NotReadyReason> {
        NotReadyReason::ALL
            .into_iter()
            .find(|r| r.as_str() == reason)
    }

    /// Whether the state waits for someone to act rather than for time to pass: a deployment
    /// not ready for such a reason is `Stalled` (kstatus Failed) even while an older
    /// generation keeps serving.
    pub fn is_stalled(self) -> bool {
        matches!(
            self,
            NotReadyReason::RolloutStalled
                | NotReadyReason::ValidationFailed
                | NotReadyReason::DryRun
        )
    }

    /// Whether more specific evidence (e.g. the pods' own state) may replace this reason: the
    /// reasons that say only that something is under way or unknown.
    pub fn is_generic(self) -> bool {
        matches!(
            self,
            NotReadyReason::InProgress | NotReadyReason::Updating | NotReadyReason::Unclassified
        )
    }
}

impl std::fmt::Display for NotReadyReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `status.notReady`: why the deployment is not ready, and the object that says so. Written
/// by the provider with `Ready=False`, absent while `Ready=True`.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct NotReadyStatus {
    /// The reason, also `Ready`'s reason.
    pub reason: NotReadyReason,
    /// What the user reads, in the upstream's words where it has any.
    #[schemars(length(max = 1024))]
    pub message: String,
    /// The object the reason was read from (a Pod, the upstream object, ...), in the
    /// deployment's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<NotReadySource>,
}

impl NotReadyStatus {
    /// A reason with its message, from no particular object.
    pub fn new(reason: NotReadyReason, message: impl Into<String>) -> NotReadyStatus {
        NotReadyStatus {
            reason,
            message: bounded_message(message.into()),
            object: None,
        }
    }

    /// The same, read from `object`.
    pub fn from_object(mut self, object: NotReadySource) -> NotReadyStatus {
        self.object = Some(object);
        self
    }
}

/// The longest `status.notReady.message` kept (longer upstream messages are cut, on a
/// character boundary, with `…`).
pub const NOT_READY_MESSAGE_MAX: usize = 1024;

fn bounded_message(message: String) -> String {
    if message.len() <= NOT_READY_MESSAGE_MAX {
        return message;
    }
    let mut end = NOT_READY_MESSAGE_MAX - '…'.len_utf8();
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &message[..end])
}

/// The object a not-ready reason was read from.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct NotReadySource {
    /// `apiVersion`, e.g. `v1`.
    pub api_version: String,
    /// `kind`, e.g. `Pod`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
}

impl NotReadySource {
    /// `kind`/`apiVersion` `name`.
    pub fn new(
        api_version: impl Into<String>,
        kind: impl Into<String>,
        name: impl Into<String>,
    ) -> NotReadySource {
        NotReadySource {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_round_trips_through_its_name_and_serde() {
        for reason in NotReadyReason::ALL {
            assert_eq!(NotReadyReason::parse(reason.as_str()), Some(reason));
            assert_eq!(
                serde_json::to_value(reason).unwrap(),
                serde_json::json!(reason.as_str())
            );
        }
        assert_eq!(NotReadyReason::parse("DeploymentFailed"), None);
    }

    #[test]
    fn long_messages_are_cut_on_a_character_boundary() {
        let status = NotReadyStatus::new(NotReadyReason::Unclassified, "é".repeat(2000));
        assert!(status.message.len() <= NOT_READY_MESSAGE_MAX);
        assert!(status.message.ends_with('…'));
    }
}
