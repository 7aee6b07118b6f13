//! One provider reconcile without an API server, for a provider's own tests and benchmarks
//! (the shipped providers' benchmarks use it): the same [`plan::plan`] and [`plan::report`]
//! the SDK's reconcile runs, over objects given as what the API server has.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::core::DynamicObject;
use serde_json::{Value, json};

use super::checked_render::{self, Checked};
use super::desired::{DesiredUpstream, ProviderStatus};
use super::kinds::{KindId, KindTable};
use super::plan::{self, Observed, Plan, Report, Seen, Write};
use super::runtime_configs::{self, ConfigWait};
use super::statuses::{Hold, HoldCause};
use super::traits::{Provider, SchemaDetection, UpstreamSchema};
use crate::runtime_config::Effective;
use crate::v1alpha1::{ClusterRuntimeConfig, ModelDeployment, RuntimeConfig};

/// Why a deployment stops before its objects are applied.
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
    /// An object is being deleted or is to be deleted and created anew (an identity change).
    #[error("an object is being replaced")]
    Replacing,
    /// The runtime configuration the status names is not among those given as published.
    #[error("waiting for the runtime configuration: {0}")]
    AwaitingRuntimeConfig(ConfigWait),
}

impl CycleError {
    /// A short, static label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            CycleError::Incompatible(_) => "incompatible",
            CycleError::Held { cause, .. } => cause.error_category().unwrap_or("held"),
            CycleError::Replacing => "replacing",
            CycleError::AwaitingRuntimeConfig(wait) => wait.category(),
        }
    }

    fn of(plan: Plan) -> CycleError {
        match plan {
            Plan::Hold(Hold {
                cause: HoldCause::Incompatible,
                status,
            }) => CycleError::Incompatible(status.message),
            Plan::Hold(Hold { cause, status }) => CycleError::Held {
                cause,
                message: status.message,
            },
            Plan::AwaitRuntimeConfig(wait) => CycleError::AwaitingRuntimeConfig(wait),
            Plan::AwaitDeletion | Plan::Recreate { .. } | Plan::Confirm(_) | Plan::Apply(_) => {
                CycleError::Replacing
            }
        }
    }
}

/// One offline reconcile: the plan and, for a rollout, its report.
#[derive(Clone, Debug, PartialEq)]
pub struct Cycle {
    /// What the SDK would do.
    pub plan: Plan,
    /// The status written after a rollout (translated from the objects given, `StaleStatus`
    /// judged with the default threshold); `None` for any other plan.
    pub report: Option<Report>,
}

/// The runtime configurations an offline cycle finds a deployment's published config among
/// (what the SDK's watch caches hold in a cluster).
#[derive(Clone, Debug, Default)]
pub struct RuntimeConfigs {
    /// The `RuntimeConfig`s.
    pub namespaced: Vec<RuntimeConfig>,
    /// The `ClusterRuntimeConfig`s.
    pub cluster: Vec<ClusterRuntimeConfig>,
}

impl RuntimeConfigs {
    /// The deployment as the provider renders it, as the SDK computes it in a cluster (see
    /// [`runtime_configs::effective`]).
    pub fn effective(&self, md: &ModelDeployment) -> Result<Effective, ConfigWait> {
        runtime_configs::effective(
            md,
            |namespace, name| {
                self.namespaced
                    .iter()
                    .find(|c| {
                        c.metadata.namespace.as_deref() == Some(namespace)
                            && c.metadata.name.as_deref() == Some(name)
                    })
                    .cloned()
                    .map(Arc::new)
            },
            |name| {
                self.cluster
                    .iter()
                    .find(|c| c.metadata.name.as_deref() == Some(name))
                    .cloned()
                    .map(Arc::new)
            },
        )
    }
}

/// [`plan::plan`] for `md` with the upstream `schema`, the default pod security policy and
/// `live` as the objects the API server has (an object not among them does not exist), then
/// [`plan::report`] at `now` for a rollout. No runtime configuration is given: a deployment
/// whose status names one waits ([`Plan::AwaitRuntimeConfig`]); see [`run_with_configs`].
pub fn run<P: Provider>(
    provider: &P,
    md: &ModelDeployment,
    schema: &UpstreamSchema,
    live: &[&DynamicObject],
    now: &Time,
) -> Cycle {
    run_with_configs(provider, md, &RuntimeConfigs::default(), schema, live, now)
}

/// [`run`] with `configs` as the runtime configurations the caches hold: the deployment is
/// rendered with the config its status names applied, as the SDK does in a cluster.
pub fn run_with_configs<P: Provider>(
    provider: &P,
    md: &ModelDeployment,
    configs: &RuntimeConfigs,
    schema: &UpstreamSchema,
    live: &[&DynamicObject],
    now: &Time,
) -> Cycle {
    let effective = match configs.effective(md) {
        Ok(effective) => effective,
        Err(wait) => {
            return Cycle {
                plan: Plan::AwaitRuntimeConfig(wait),
                report: None,
            };
        }
    };
    let md = &effective.deployment;
    let kinds = KindTable::of(provider);
    let objects: Vec<Seen> = live
        .iter()
        .filter_map(|object| {
            let kind = kind_of(&kinds, object)?;
            Some(Seen::fresh(
                kind,
                object.metadata.name.clone().unwrap_or_default(),
                Some(Arc::new((*object).clone())),
            ))
        })
        .collect();
    let detection = SchemaDetection::Supported(schema.clone());
    let policy = crate::pod_security::Policy::default();
    let plan = plan::plan(
        provider,
        &Observed {
            deployment: md,
            propagated: &effective.propagated_labels,
            detection: &detection,
            policy: &policy,
            kinds: &kinds,
            prepare_hold: None,
            objects: &objects,
            authoritative: true,
        },
    );
    let report = match &plan {
        Plan::Apply(rollout) => {
            let live: Vec<Option<&DynamicObject>> =
                rollout.steps.iter().map(|s| s.live.as_deref()).collect();
            Some(plan::report(
                provider,
                md,
                &kinds,
                &rollout.desired(),
                &live,
                &[],
                now.0,
                super::staleness::DEFAULT_THRESHOLD,
            ))
        }
        _ => None,
    };
    Cycle { plan, report }
}

/// The kind of `object` in `kinds`, by its `apiVersion` group and `kind`.
fn kind_of(kinds: &KindTable, object: &DynamicObject) -> Option<KindId> {
    let types = object.types.as_ref()?;
    let group = types.api_version.rsplit_once('/').map_or("", |(g, _)| g);
    kinds
        .iter()
        .find(|(_, k)| k.kind == types.kind && k.group == group)
        .map(|(id, _)| id)
}

/// The [checked render](checked_render::checked_render) with the default pod security policy.
pub fn checked<P: Provider>(
    provider: &P,
    md: &ModelDeployment,
    detection: &SchemaDetection,
) -> Result<Checked, Box<Hold>> {
    checked_render::checked_render(
        provider,
        md,
        &Default::default(),
        detection,
        &crate::pod_security::Policy::default(),
    )
}

/// What a deploying reconcile computes for a provider's primary object.
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

/// [`run`] for a provider with one object per deployment: `live` is its object (`None` before
/// it exists).
pub fn apply<P: Provider>(
    provider: &P,
    md: &ModelDeployment,
    schema: &UpstreamSchema,
    live: Option<&DynamicObject>,
    now: &Time,
) -> Result<AppliedCycle, CycleError> {
    let set = apply_set(provider, md, schema, &[live], now)?;
    let Some((desired, write)) = set.objects.into_iter().next() else {
        return Err(CycleError::Held {
            cause: HoldCause::Render("unsupported"),
            message: "nothing rendered".into(),
        });
    };
    Ok(AppliedCycle {
        desired,
        applies: write != Write::InSync,
        drifted: write == Write::Update { drifted: true },
        status: set.status,
        status_patch: set.status_patch,
    })
}

/// What a deploying reconcile computes for a provider managing a set of objects.
#[derive(Clone, Debug, PartialEq)]
pub struct AppliedSet {
    /// The objects to apply (the primary first), each with what the SDK writes.
    pub objects: Vec<(DesiredUpstream, Write)>,
    /// The objects of an old shape the SDK deletes.
    pub prune: Vec<(KindId, String)>,
    /// The provider-owned status derived from the live objects (`StaleStatus` included).
    pub status: ProviderStatus,
    /// The status apply body.
    pub status_patch: Value,
}

/// [`run`] for the objects `live` (any order; `None` entries are ignored), as a rollout.
pub fn apply_set<P: Provider>(
    provider: &P,
    md: &ModelDeployment,
    schema: &UpstreamSchema,
    live: &[Option<&DynamicObject>],
    now: &Time,
) -> Result<AppliedSet, CycleError> {
    let live: Vec<&DynamicObject> = live.iter().copied().flatten().collect();
    let cycle = run(provider, md, schema, &live, now);
    match (cycle.plan, cycle.report) {
        (Plan::Apply(rollout), Some(report)) => Ok(AppliedSet {
            status_patch: report.status.patch(md, now),
            status: report.status,
            prune: rollout.prune,
            objects: rollout
                .steps
                .into_iter()
                .map(|s| (s.desired, s.write))
                .collect(),
        }),
        (plan, _) => Err(CycleError::of(plan)),
    }
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
    let status = super::statuses::status_from_set(
        provider,
        md,
        std::slice::from_ref(desired),
        &[Some(live)],
        &[],
    );
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
    use crate::provider::rendered::{RenderError, Rendered};
    use crate::provider::test_support::{compatibility, deployment, kind, translated};
    use crate::provider::traits::{Incompatible, TranslatedStatus, UpstreamKind};
    use crate::runtime_config::Source;
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
            kind("", "ConfigMap", "configmaps", "v1")
        }
        fn detect_schema(&self, _: Option<&CustomResourceDefinition>) -> SchemaDetection {
            SchemaDetection::Supported(schema())
        }
        fn check_compatibility(&self, md: &ModelDeployment) -> Result<(), Incompatible> {
            compatibility("Echo", md)
        }
        fn render(
            &self,
            md: &ModelDeployment,
            _: &UpstreamSchema,
        ) -> Result<Rendered, RenderError> {
            Ok(Rendered::one(
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": md.metadata.name}, "data": {"model": md.spec.model.id}}),
            ))
        }
        fn translate_status(
            &self,
            _: &ModelDeployment,
            live: &[Option<&DynamicObject>],
        ) -> TranslatedStatus {
            translated(live, "ready", json!(true))
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
        deployment(model)
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
            matches!(changed, Err(CycleError::Replacing)),
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
    fn the_published_runtime_config_is_rendered_and_a_change_nothing_renders_writes_nothing() {
        let config = |size: &str| -> RuntimeConfig {
            serde_json::from_value(json!({
                "apiVersion": "airunway.ai/v1alpha1", "kind": "RuntimeConfig",
                "metadata": {"name": "team", "namespace": "ns"},
                "spec": {"labelPropagation": {"enabled": true, "match": ["org.example/*"]},
                         "modelCache": {"size": size}},
            }))
            .unwrap()
        };
        let published = |config: &RuntimeConfig| -> ModelDeployment {
            let mut md = serde_json::to_value(md("a/b")).unwrap();
            md["metadata"]["labels"] = json!({"org.example/cost-center": "ml-42"});
            md["status"]["effectiveRuntimeConfig"] =
                serde_json::to_value(Source::Namespace(Arc::new(config.clone())).effective())
                    .unwrap();
            serde_json::from_value(md).unwrap()
        };
        let (small, large) = (config("10Gi"), config("20Gi"));
        let configs = |c: &RuntimeConfig| RuntimeConfigs {
            namespaced: vec![c.clone()],
            cluster: vec![],
        };
        let md = published(&small);
        let first = run_with_configs(&Echo, &md, &configs(&small), &schema(), &[], &now());
        let Plan::Apply(rollout) = &first.plan else {
            panic!("{:?}", first.plan)
        };
        let desired = &rollout.steps[0].desired;
        assert_eq!(rollout.steps[0].write, Write::Create);
        let labels = &desired.object["metadata"]["labels"];
        assert_eq!(labels["org.example/cost-center"], "ml-42");
        assert_eq!(labels["airunway.ai/provider"], "echo");
        let live = served(desired, json!({"ready": true})).unwrap();

        // Without the config in the caches (or with another spec than published): wait.
        assert!(matches!(
            run(&Echo, &md, &schema(), &[&live], &now()).plan,
            Plan::AwaitRuntimeConfig(ConfigWait::Missing(_))
        ));
        assert!(matches!(
            run_with_configs(&Echo, &md, &configs(&large), &schema(), &[&live], &now()).plan,
            Plan::AwaitRuntimeConfig(ConfigWait::HashMismatch { .. })
        ));
        // A change of a field Echo does not render, once published: nothing is written.
        let changed = published(&large);
        let again = run_with_configs(
            &Echo,
            &changed,
            &configs(&large),
            &schema(),
            &[&live],
            &now(),
        );
        let Plan::Apply(rollout) = &again.plan else {
            panic!("{:?}", again.plan)
        };
        assert!(!rollout.writes(), "{rollout:?}");
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
