//! The pure steps of one provider reconcile ([`super::plan`]) without an API server: for a
//! provider's own tests and benchmarks (the shipped providers' benchmarks use it). The SDK's
//! reconcile runs exactly these functions and carries out what they return.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::core::DynamicObject;
use serde_json::{Value, json};

use super::desired::{DesiredUpstream, ProviderStatus};
use super::plan::{self, HoldCause, Plan};
use super::traits::{Provider, SchemaDetection, UpstreamSchema};
use crate::v1alpha1::ModelDeployment;

/// Why a deployment stops before its upstream object is applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CycleError {
    /// [`Provider::check_compatibility`] refused it (`ProviderCompatible=False`).
    #[error("incompatible: {0}")]
    Incompatible(String),
    /// Held for another reason (render error, object not owned, schema); the phase message.
    #[error("held: {message}")]
    Held {
        /// Why.
        cause: HoldCause,
        /// The message the deployment shows.
        message: String,
    },
}

impl CycleError {
    /// A short, static label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            CycleError::Incompatible(_) => "incompatible",
            CycleError::Held { cause, .. } => cause.error_category().unwrap_or("held"),
        }
    }
}

/// What a deploying reconcile computes.
#[derive(Clone, Debug, PartialEq)]
pub struct AppliedCycle {
    /// The object to apply, with owner reference, labels and hash annotations.
    pub desired: DesiredUpstream,
    /// Whether the SDK writes the object (missing, changed or edited); `false`: in sync.
    pub applies: bool,
    /// Whether the live object was edited by hand (a `DriftDetected` event).
    pub drifted: bool,
    /// The provider-owned status derived from the live object.
    pub status: ProviderStatus,
    /// The status apply body.
    pub status_patch: Value,
}

/// [`plan::plan`] for a supported `schema` and `live` (the cached object, `None` before it
/// exists), with the status translated from `live` (and `StaleStatus` judged at `now` with the
/// default threshold) and its patch at `now`.
pub fn apply<P: Provider>(
    provider: &P,
    md: &ModelDeployment,
    schema: &UpstreamSchema,
    live: Option<&DynamicObject>,
    now: &Time,
) -> Result<AppliedCycle, CycleError> {
    let detection = SchemaDetection::Supported(schema.clone());
    let (desired, applies, drifted, status) = match plan::plan(provider, md, &detection, live) {
        Plan::Apply {
            desired, drifted, ..
        } => {
            let status = plan::status_from_live(provider, md, &desired, live);
            (desired, true, drifted, status)
        }
        Plan::InSync {
            desired, status, ..
        } => (desired, false, false, status),
        Plan::Hold { cause, status } => {
            return Err(match cause {
                HoldCause::Incompatible => CycleError::Incompatible(status.message),
                cause => CycleError::Held {
                    cause,
                    message: status.message,
                },
            });
        }
        Plan::AwaitDeletion | Plan::Recreate { .. } => {
            return Err(CycleError::Held {
                cause: HoldCause::NotOwned,
                message: "the live object is being replaced".into(),
            });
        }
    };
    let mut status = status;
    // As the SDK does: `StaleStatus` with the default threshold (see `super::staleness`).
    super::staleness::mark(
        &mut status,
        md,
        live.map(|live| (live, provider.upstream().from_crd)),
        &crate::constants::field_managers::provider(provider.name()),
        now.0,
        super::staleness::DEFAULT_THRESHOLD,
    );
    let status_patch = status.patch(md, now);
    Ok(AppliedCycle {
        desired,
        applies,
        drifted,
        status,
        status_patch,
    })
}

/// What a deploying reconcile computes for a provider managing a set of objects.
#[derive(Clone, Debug, PartialEq)]
pub struct AppliedSet {
    /// The objects to apply (the primary first), each with what the SDK does with it.
    pub objects: Vec<(DesiredUpstream, plan::ObjectPlan)>,
    /// The provider-owned status derived from the live objects.
    pub status: ProviderStatus,
}

/// The set counterpart of [`apply`]: [`plan::prepare`], then [`plan::compare_object`] of every
/// object with its live copy (`live`, in the order of the rendered set; `None` before it
/// exists), and the status translated from `live`.
pub fn apply_set<P: Provider>(
    provider: &P,
    md: &ModelDeployment,
    schema: &UpstreamSchema,
    live: &[Option<&DynamicObject>],
) -> Result<AppliedSet, CycleError> {
    let detection = SchemaDetection::Supported(schema.clone());
    let prepared = match plan::prepare(provider, md, &detection) {
        Ok(prepared) => prepared,
        Err(held) => {
            return Err(match *held {
                Plan::Hold {
                    cause: HoldCause::Incompatible,
                    status,
                } => CycleError::Incompatible(status.message),
                Plan::Hold { cause, status } => CycleError::Held {
                    cause,
                    message: status.message,
                },
                _ => CycleError::Held {
                    cause: HoldCause::Render("unsupported"),
                    message: "nothing to render".into(),
                },
            });
        }
    };
    let status = plan::status_from_set(provider, md, &prepared.desired, live);
    let objects = prepared
        .desired
        .into_iter()
        .enumerate()
        .map(|(i, desired)| {
            let step = plan::compare_object(md, &desired, live.get(i).copied().flatten());
            (desired, step)
        })
        .collect();
    Ok(AppliedSet { objects, status })
}

/// The status sync of a deployment whose object exists (what the SDK does when the upstream
/// watch reports a change): the status translated from `live`, and whether the deployment
/// already shows it (then nothing is written).
pub fn status_sync<P: Provider>(
    provider: &P,
    md: &ModelDeployment,
    desired: &DesiredUpstream,
    live: &DynamicObject,
) -> (ProviderStatus, bool) {
    let status = plan::status_from_live(provider, md, desired, Some(live));
    let current = status.is_current(
        md,
        &crate::constants::field_managers::provider(provider.name()),
    );
    (status, current)
}

/// The object as the API server would return it after the apply: `desired` with a uid, a
/// resourceVersion and the upstream operator's `status` (e.g. one of the status samples).
pub fn served(
    desired: &DesiredUpstream,
    status: Value,
) -> Result<DynamicObject, serde_json::Error> {
    let mut object = desired.object.clone();
    object["metadata"]["uid"] = json!("00000000-0000-0000-0000-000000000001");
    object["metadata"]["resourceVersion"] = json!("1");
    object["status"] = status;
    serde_json::from_value(object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::SchemaDetection;
    use crate::provider::traits::{RenderError, Rendered, TranslatedStatus, UpstreamKind};
    use crate::v1alpha1::{InferenceProviderConfigSpec, Phase};
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    /// Renders a ConfigMap; ready when the live object's status says so.
    struct Echo;

    impl Provider for Echo {
        fn name(&self) -> &str {
            "echo"
        }
        fn display_name(&self) -> &str {
            "Echo"
        }
        fn version(&self) -> &str {
            "0.0.1"
        }
        fn registration(&self) -> InferenceProviderConfigSpec {
            InferenceProviderConfigSpec::default()
        }
        fn upstream(&self) -> UpstreamKind {
            UpstreamKind {
                group: String::new(),
                kind: "ConfigMap".into(),
                plural: "configmaps".into(),
                default_version: "v1".into(),
                from_crd: false,
            }
        }
        fn detect_schema(&self, _: Option<&CustomResourceDefinition>) -> SchemaDetection {
            SchemaDetection::Supported(schema())
        }
        fn check_compatibility(&self, md: &ModelDeployment) -> Result<(), String> {
            match md.spec.model.id.as_deref() {
                Some("refused/model") => Err("Echo does not serve refused/model".into()),
                _ => Ok(()),
            }
        }
        fn render(
            &self,
            md: &ModelDeployment,
            _: &UpstreamSchema,
        ) -> Result<Rendered, RenderError> {
            Ok(Rendered {
                object: json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": md.metadata.name}, "data": {"model": md.spec.model.id}}),
                warnings: vec![],
            })
        }
        fn translate_status(
            &self,
            _: &ModelDeployment,
            live: Option<&DynamicObject>,
        ) -> TranslatedStatus {
            let ready = live.is_some_and(|l| l.data["status"]["ready"] == json!(true));
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
            }
        }
    }

    fn schema() -> UpstreamSchema {
        UpstreamSchema {
            version: "v1".into(),
            api_version: "v1".into(),
            fingerprint: "builtin".into(),
        }
    }

    fn md(model: &str) -> ModelDeployment {
        serde_json::from_value(
            json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns", "uid": "u", "generation": 1},
            "spec": {"model": {"id": model}}}),
        )
        .unwrap()
    }

    fn now() -> Time {
        Time("2026-01-01T00:00:00Z".parse().unwrap())
    }

    #[test]
    fn first_apply_then_ready_then_drift() {
        let md = md("a/b");
        let first = apply(&Echo, &md, &schema(), None, &now()).unwrap();
        assert!(first.applies, "a missing object is created");
        assert!(!first.drifted);
        assert_eq!(first.status.phase, Phase::Deploying);
        assert_eq!(
            first.status.resource,
            Some(("m".to_string(), "ConfigMap".to_string()))
        );
        assert_eq!(first.status_patch["status"]["phase"], "Deploying");

        let live = served(&first.desired, json!({"ready": true})).unwrap();
        let settled = apply(&Echo, &md, &schema(), Some(&live), &now()).unwrap();
        assert!(
            !settled.applies,
            "an object as desired is not written again"
        );
        assert!(!settled.drifted);
        assert_eq!(settled.status.phase, Phase::Running);

        let mut edited = serde_json::to_value(&live).unwrap();
        edited["data"]["model"] = json!("edited/by-hand");
        let edited: DynamicObject = serde_json::from_value(edited).unwrap();
        let restored = apply(&Echo, &md, &schema(), Some(&edited), &now()).unwrap();
        assert!(
            restored.drifted && restored.applies,
            "an edited object is restored"
        );

        let changed = apply(&Echo, &self::md("a/c"), &schema(), Some(&live), &now());
        assert!(
            matches!(changed, Err(CycleError::Held { .. })),
            "a changed identity field replaces the object: {changed:?}"
        );
    }

    #[test]
    fn status_sync_is_current_once_written() {
        let md = md("a/b");
        let first = apply(&Echo, &md, &schema(), None, &now()).unwrap();
        let live = served(&first.desired, json!({"ready": true})).unwrap();
        let (status, current) = status_sync(&Echo, &md, &first.desired, &live);
        assert!(!current, "nothing written yet");
        assert_eq!(status.phase, Phase::Running);
        // The deployment as it reads after the provider wrote that status.
        let mut written = serde_json::to_value(&md).unwrap();
        written["status"] = status.patch(&md, &now())["status"].clone();
        let written: ModelDeployment = serde_json::from_value(written).unwrap();
        assert!(status_sync(&Echo, &written, &first.desired, &live).1);
    }

    #[test]
    fn incompatible_and_render_errors_stop_the_cycle() {
        let refused = apply(&Echo, &md("refused/model"), &schema(), None, &now()).unwrap_err();
        assert_eq!(
            refused,
            CycleError::Incompatible("Echo does not serve refused/model".into())
        );
        assert_eq!(refused.category(), "incompatible");
    }
}
