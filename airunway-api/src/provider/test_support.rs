//! Builders the SDK's unit tests share (`plan.rs`, `cycle.rs`): a deployment, an upstream
//! kind, and the compatibility check and status translation of the test providers.

use kube::core::DynamicObject;
use serde_json::json;

use super::traits::{Incompatible, TranslatedStatus, UpstreamKind, primary};
use crate::v1alpha1::{ModelDeployment, Phase};

/// ModelDeployment `ns/m` (uid `u`, generation 1) of `model`.
pub(crate) fn deployment(model: &str) -> ModelDeployment {
    #[allow(clippy::unwrap_used, reason = "a fixed, valid document")]
    serde_json::from_value(
        json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "m", "namespace": "ns", "uid": "u", "generation": 1},
        "spec": {"model": {"id": model}}}),
    )
    .unwrap()
}

/// A built-in upstream kind.
pub(crate) fn kind(group: &str, kind: &str, plural: &str, version: &str) -> UpstreamKind {
    UpstreamKind {
        group: group.into(),
        kind: kind.into(),
        plural: plural.into(),
        default_version: version.into(),
        from_crd: false,
    }
}

/// The test providers' compatibility: they refuse model `refused/model`.
pub(crate) fn compatibility(display_name: &str, md: &ModelDeployment) -> Result<(), Incompatible> {
    match md.spec.model.id.as_deref() {
        Some("refused/model") => Err(Incompatible::new(format!(
            "{display_name} does not serve refused/model"
        ))),
        _ => Ok(()),
    }
}

/// The test providers' status: `Running` and ready when the primary live object's
/// `status[field]` is `value`, else `Deploying`.
pub(crate) fn translated(
    live: &[Option<&DynamicObject>],
    field: &str,
    value: serde_json::Value,
) -> TranslatedStatus {
    let ready = primary(live).is_some_and(|l| l.data["status"][field] == value);
    TranslatedStatus {
        phase: if ready {
            Phase::Running
        } else {
            Phase::Deploying
        },
        message: None,
        replicas: None,
        endpoint: None,
        ready,
        not_ready: None,
    }
}
