//! The pure half of a provider reconcile: what to do with a deployment ([`triage`]) and, for
//! one to deploy, everything the act step does ([`plan`]), from values only: the deployment,
//! the upstream detection, the kind table and the objects that may be the deployment's (from
//! the watch caches, and from fresh reads the plan asked for). One object is a set of one. The
//! SDK's reconcile ([`super::reconcile`]) carries out the [`Plan`] and then [`report`]s;
//! [`super::cycle`] runs the same two functions without an API server for tests and
//! benchmarks.

use std::sync::Arc;
use std::time::Duration;

use kube::core::DynamicObject;
use serde_json::Value;

use super::checked_render::checked_render;
use super::desired::{self, DesiredUpstream, ProviderStatus};
use super::kinds::{KindId, KindTable};
use super::rendered::RenderWarning;
use super::runtime_configs::ConfigWait;
use super::staleness::{self, Staleness};
use super::statuses::{self, Hold, HoldCause};
use super::traits::{PreparationHold, Provider, SchemaDetection};
use crate::constants::{condition_types, finalizers, reasons};
use crate::pod_security;
use crate::v1alpha1::{ConditionStatus, ModelDeployment};

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

/// An object that may be the deployment's, as the planner sees it.
#[derive(Clone, Debug)]
pub struct Seen {
    /// Its kind.
    pub kind: KindId,
    /// Its name.
    pub name: String,
    /// The object (`None`: a fresh read found none).
    pub object: Option<Arc<DynamicObject>>,
    /// Read from the API server just now (else: from a watch cache, which may lag behind).
    pub fresh: bool,
}

impl Seen {
    /// `object` as a watch cache holds it.
    pub fn cached(kind: KindId, object: Arc<DynamicObject>) -> Seen {
        Seen {
            kind,
            name: object.metadata.name.clone().unwrap_or_default(),
            object: Some(object),
            fresh: false,
        }
    }

    /// What a fresh read of `kind` `name` returned.
    pub fn fresh(kind: KindId, name: String, object: Option<Arc<DynamicObject>>) -> Seen {
        Seen {
            kind,
            name,
            object,
            fresh: true,
        }
    }
}

/// Everything the planner looks at.
#[derive(Clone, Copy, Debug)]
pub struct Observed<'a> {
    /// The deployment as the render sees it: its runtime configuration applied (see
    /// [`super::runtime_configs::effective`]), with the fields [`Provider::prepare`] derived.
    pub deployment: &'a ModelDeployment,
    /// The labels its runtime configuration propagates to every object it causes.
    pub propagated: &'a std::collections::BTreeMap<String, String>,
    /// The upstream detection.
    pub detection: &'a SchemaDetection,
    /// What rendered objects are checked against.
    pub policy: &'a pod_security::Policy,
    /// The provider's kinds.
    pub kinds: &'a KindTable,
    /// The hold [`Provider::prepare`] returned, if any.
    pub prepare_hold: Option<&'a PreparationHold>,
    /// The objects that may be the deployment's: with secondary kinds every cached object
    /// labelled for it, else its one upstream object of its name; and the fresh reads.
    pub objects: &'a [Seen],
    /// Whether `objects` is what the API server has (an object not among them does not exist,
    /// nothing needs confirming): offline runs.
    pub authoritative: bool,
}

/// What the act step writes for one desired object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Write {
    /// No live object: create it (a `ResourceCreated` event).
    Create,
    /// Its spec changed, or someone edited it (`drifted`: a `DriftDetected` event): apply it.
    Update {
        /// Whether the live object was edited by hand.
        drifted: bool,
    },
    /// As desired: nothing to write.
    InSync,
}

/// One desired object and what to do with it.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// Its kind.
    pub kind: KindId,
    /// The object to apply, with owner reference, labels and hash annotations.
    pub desired: DesiredUpstream,
    /// What to write.
    pub write: Write,
    /// The live object it was compared with.
    pub live: Option<Arc<DynamicObject>>,
}

/// The objects to apply (server-side apply, in render order, the primary first) and delete.
#[derive(Clone, Debug, PartialEq)]
pub struct Rollout {
    /// Every desired object with what to write.
    pub steps: Vec<Step>,
    /// Objects created for the deployment that the render no longer produces (the old shape
    /// after a change of serving mode): delete them (a `ResourceDeleted` event each).
    pub prune: Vec<(KindId, String)>,
    /// Notes for the user from the render (events, once per generation).
    pub warnings: Vec<RenderWarning>,
}

impl Rollout {
    /// The desired objects in render order.
    pub fn desired(&self) -> Vec<DesiredUpstream> {
        self.steps.iter().map(|s| s.desired.clone()).collect()
    }

    /// Whether anything is written.
    pub fn writes(&self) -> bool {
        !self.prune.is_empty() || self.steps.iter().any(|s| s.write != Write::InSync)
    }
}

/// Everything the act step does for a deployment to deploy.
#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    /// A watch cache suggests a write (an object missing, or edited): read these objects from
    /// the API server and plan again with what the reads return. A lagging cache costs a
    /// read, not a false `DriftDetected` and an apply; a missing object may be someone
    /// else's, which the forced apply would take over.
    Confirm(Vec<(KindId, String)>),
    /// The runtime configuration the deployment's status names is not in the caches as the
    /// core published it: write nothing, wait for the next event of the config or of the
    /// deployment.
    AwaitRuntimeConfig(ConfigWait),
    /// Nothing can be applied: show the status, touch nothing.
    Hold(Hold),
    /// An object is being deleted (an identity change): wait until the watch reports it gone.
    AwaitDeletion,
    /// Identity fields changed: delete these objects (they are created anew once gone), show
    /// `status`.
    Recreate {
        /// The objects to delete, each with its kind name for the event.
        objects: Vec<(KindId, String, String)>,
        /// The provider-owned status meanwhile.
        status: ProviderStatus,
    },
    /// Apply, delete, then [`report`].
    Apply(Rollout),
}

/// How one desired object compares with its live copy.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Comparison {
    Create,
    Update { drifted: bool },
    InSync,
    AwaitDeletion,
    Recreate,
    NotOwned(String),
}

/// Everything the act step does for a deployment [`triage`] said to deploy (pure): the
/// preparation's hold, the [checked render](checked_render), then every desired object compared
/// with its live copy; a hold (the first foreign object), a wait for a deletion, a recreation,
/// or the rollout with the objects of an old shape to prune. Cached objects that suggest a
/// write are first [confirmed](Plan::Confirm).
pub fn plan<P: Provider>(provider: &P, observed: &Observed<'_>) -> Plan {
    let md = observed.deployment;
    if let Some(hold) = observed.prepare_hold {
        return Plan::Hold(Hold {
            cause: HoldCause::Prepare,
            status: statuses::prepare_held(provider, hold),
        });
    }
    let checked = match checked_render(
        provider,
        md,
        observed.propagated,
        observed.detection,
        observed.policy,
    ) {
        Ok(checked) => checked,
        Err(held) => return Plan::Hold(*held),
    };
    let mut compared = Vec::with_capacity(checked.desired.len());
    for desired in checked.desired {
        let Some(kind) = observed.kinds.id_of(&desired) else {
            let message = format!(
                "{} rendered a {} {}, a kind it does not declare",
                provider.display_name(),
                desired.kind(),
                desired.name()
            );
            return Plan::Hold(Hold {
                cause: HoldCause::UndeclaredKind,
                status: statuses::apply_rejected(
                    provider,
                    desired.kind(),
                    desired.name(),
                    &message,
                ),
            });
        };
        let seen = lookup(observed.objects, kind, desired.name());
        let live = seen.and_then(|s| s.object.clone());
        let comparison = compare(md, &desired, live.as_deref());
        let confirmed = observed.authoritative || seen.is_some_and(|s| s.fresh);
        compared.push((kind, desired, live, comparison, confirmed));
    }
    let unconfirmed: Vec<(KindId, String)> = compared
        .iter()
        .filter(|(.., comparison, confirmed)| {
            !confirmed
                && matches!(
                    comparison,
                    Comparison::Create | Comparison::Update { drifted: true }
                )
        })
        .map(|(kind, desired, ..)| (*kind, desired.name().to_string()))
        .collect();
    if !unconfirmed.is_empty() {
        return Plan::Confirm(unconfirmed);
    }
    if let Some(message) = compared
        .iter()
        .find_map(|(.., comparison, _)| match comparison {
            Comparison::NotOwned(message) => Some(message.clone()),
            _ => None,
        })
    {
        return Plan::Hold(Hold {
            cause: HoldCause::NotOwned,
            status: conflict(statuses::not_owned(provider, message)),
        });
    }
    if compared
        .iter()
        .any(|(.., comparison, _)| *comparison == Comparison::AwaitDeletion)
    {
        return Plan::AwaitDeletion;
    }
    let recreated: Vec<(KindId, String, String)> = compared
        .iter()
        .filter(|(.., comparison, _)| *comparison == Comparison::Recreate)
        .map(|(kind, desired, ..)| {
            (
                *kind,
                desired.kind().to_string(),
                desired.name().to_string(),
            )
        })
        .collect();
    if let Some((_, kind, name)) = recreated.first() {
        return Plan::Recreate {
            status: statuses::recreating(provider, kind, name),
            objects: recreated,
        };
    }
    let wanted: Vec<(KindId, &str)> = compared
        .iter()
        .map(|(kind, desired, ..)| (*kind, desired.name()))
        .collect();
    let owned: Vec<(KindId, String)> = if observed.kinds.has_secondary() {
        observed
            .objects
            .iter()
            .filter(|s| !s.fresh)
            .filter_map(|s| s.object.as_ref().map(|o| (s.kind, o)))
            .filter(|(_, o)| o.metadata.deletion_timestamp.is_none())
            .filter(|(_, o)| {
                serde_json::to_value(o.as_ref()).is_ok_and(|value| desired::owned_by(&value, md))
            })
            .map(|(kind, o)| (kind, o.metadata.name.clone().unwrap_or_default()))
            .collect()
    } else {
        Vec::new()
    };
    let prune = stale(&wanted, &owned).into_iter().cloned().collect();
    let steps = compared
        .into_iter()
        .map(|(kind, desired, live, comparison, _)| Step {
            kind,
            desired,
            live,
            write: match comparison {
                Comparison::Create => Write::Create,
                Comparison::Update { drifted } => Write::Update { drifted },
                _ => Write::InSync,
            },
        })
        .collect();
    Plan::Apply(Rollout {
        steps,
        prune,
        warnings: checked.warnings,
    })
}

/// The object `kind` `name` among `objects`: a fresh read wins over a cache entry.
fn lookup<'a>(objects: &'a [Seen], kind: KindId, name: &str) -> Option<&'a Seen> {
    let mut matching = objects.iter().filter(|s| s.kind == kind && s.name == name);
    let first = matching.next()?;
    if first.fresh {
        return Some(first);
    }
    Some(matching.find(|s| s.fresh).unwrap_or(first))
}

/// Compares one desired object with its live copy (pure).
fn compare(
    md: &ModelDeployment,
    desired: &DesiredUpstream,
    live: Option<&DynamicObject>,
) -> Comparison {
    let Some(live) = live else {
        return Comparison::Create;
    };
    let live_value = serde_json::to_value(live).unwrap_or(Value::Null);
    if !desired::owned_by(&live_value, md) {
        let namespace = md.metadata.namespace.clone().unwrap_or_default();
        return Comparison::NotOwned(format!(
            "{} {namespace}/{} exists but is not managed by this ModelDeployment ({}); delete or rename it",
            desired.kind(),
            desired.name(),
            owners(live)
        ));
    }
    if live.metadata.deletion_timestamp.is_some() {
        return Comparison::AwaitDeletion;
    }
    if desired::live_identity_hash(&live_value) != Some(desired.identity_hash.as_str()) {
        return Comparison::Recreate;
    }
    let same_spec = live_value["metadata"]["annotations"][crate::constants::annotations::SPEC_HASH]
        .as_str()
        == Some(desired.spec_hash.as_str());
    let drifted = desired::drifted(desired, &live_value);
    if !same_spec || drifted {
        Comparison::Update { drifted }
    } else {
        Comparison::InSync
    }
}

/// Who holds a foreign object, in the Go AI Runway's words: `owned by <Kind>/<name> (uid
/// <uid>), ...` or `no owner references`.
fn owners(live: &DynamicObject) -> String {
    let owners: Vec<String> = live
        .metadata
        .owner_references
        .iter()
        .flatten()
        .map(|o| format!("{}/{} (uid {})", o.kind, o.name, o.uid))
        .collect();
    if owners.is_empty() {
        "no owner references".to_string()
    } else {
        format!("owned by {}", owners.join(", "))
    }
}

/// A foreign object's hold status with the Go AI Runway's reason, `ResourceConflict`, on
/// `ResourceCreated` and `Ready`.
fn conflict(mut status: ProviderStatus) -> ProviderStatus {
    with_reason(&mut status, reasons::RESOURCE_CONFLICT);
    status
}

/// Sets `reason` on a hold status's `ResourceCreated` and `Ready` conditions.
fn with_reason(status: &mut ProviderStatus, reason: &str) {
    for condition in &mut status.conditions {
        if condition.type_ == condition_types::RESOURCE_CREATED
            || condition.type_ == condition_types::READY
        {
            condition.reason = reason.to_string();
        }
    }
}

/// The hold of a provider whose upstream operator is not running: a [`Provider::prepare`]
/// that looked the operator up and found no Deployment of it holds the deployment with it
/// (nothing is created that nobody would reconcile): reason `UpstreamControllerMissing` (the
/// Go AI Runway's refuse-fast path) and a message with the install hint.
pub fn controller_missing_hold(controller: &super::traits::UpstreamController) -> PreparationHold {
    PreparationHold {
        reason: reasons::UPSTREAM_CONTROLLER_MISSING,
        message: format!(
            "The {} is not running (no Deployment labelled {} in any namespace), so nothing is created for this deployment until it is. {}",
            controller.description, controller.label_selector, controller.install_hint
        ),
    }
}

/// The objects of `owned` (kind and name: what the provider created for a deployment) that
/// `wanted` (the rendered set) no longer has: the old shape to delete.
pub(crate) fn stale<'a, K: PartialEq>(
    wanted: &[(K, &str)],
    owned: &'a [(K, String)],
) -> Vec<&'a (K, String)> {
    owned
        .iter()
        .filter(|(kind, name)| !wanted.iter().any(|(k, n)| k == kind && n == name))
        .collect()
}

/// What the report step writes after a rollout.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The provider-owned status, translated from the live objects, with `StaleStatus` when
    /// the upstream operator is behind on the primary object.
    pub status: ProviderStatus,
    /// The staleness verdict on the primary object.
    pub staleness: Staleness,
}

impl Report {
    /// When to look again: when a waiting object turns stale, if before `resync`.
    pub fn requeue_after(&self, now: jiff::Timestamp, resync: Duration) -> Duration {
        staleness::requeue_after(&self.staleness, now, resync)
    }
}

/// The status after a rollout (pure): translated from `live` (the objects as applied or as
/// they were, in the order of `desired`) and judged for staleness on the primary object at
/// `now` (`threshold`: `--stale-status-threshold`); `pods`: the watched Pods of `md`'s
/// namespace (see [`statuses::status_from_set`]).
#[allow(
    clippy::too_many_arguments,
    reason = "the observed state of one reconcile, each part from another source"
)]
pub fn report<P: Provider>(
    provider: &P,
    md: &ModelDeployment,
    kinds: &KindTable,
    desired: &[DesiredUpstream],
    live: &[Option<&DynamicObject>],
    pods: &[&k8s_openapi::api::core::v1::Pod],
    now: jiff::Timestamp,
    threshold: Duration,
) -> Report {
    let mut status = statuses::status_from_set(provider, md, desired, live, pods);
    let primary_from_crd = desired
        .first()
        .and_then(|d| kinds.id_of(d))
        .and_then(|id| kinds.get(id))
        .map(|kind| kind.from_crd);
    let staleness = staleness::mark(
        &mut status,
        md,
        live.first().copied().flatten().zip(primary_from_crd),
        &crate::constants::field_managers::provider(provider.name()),
        now,
        threshold,
    );
    Report { status, staleness }
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

/// The planner on every path the SDK's e2e suites drive (see the table in
/// docs/providers/authoring.md): a provider managing a Deployment and a Service per
/// deployment, or three objects for model ids ending in `-split` (a changed shape).
#[cfg(test)]
mod planner_tests {
    use super::*;
    use crate::provider::rendered::{RenderError, Rendered};
    use crate::provider::test_support::{compatibility, deployment, kind, translated};
    use crate::provider::traits::{Incompatible, TranslatedStatus, UpstreamKind};
    use crate::v1alpha1::{InferenceProviderConfigSpec, Phase};
    use serde_json::json;

    struct Pair;

    /// Pair's detection: its kinds are built-in.
    fn builtin() -> SchemaDetection {
        Pair.detect_schema(None)
    }

    /// Pair's operator, for the controller-missing hold.
    fn pair_operator() -> crate::provider::traits::UpstreamController {
        crate::provider::traits::UpstreamController {
            label_selector: "app=pair-operator".into(),
            description: "pair operator".into(),
            install_hint: "Install it with the pair chart.".into(),
        }
    }

    impl Provider for Pair {
        fn name(&self) -> &str {
            "pair"
        }

        fn upstream_controller(&self) -> Option<crate::provider::traits::UpstreamController> {
            Some(pair_operator())
        }
        fn display_name(&self) -> &str {
            "Pair"
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
        fn secondary_kinds(&self) -> Vec<UpstreamKind> {
            vec![kind("", "Service", "services", "v1")]
        }
        fn check_compatibility(&self, md: &ModelDeployment) -> Result<(), Incompatible> {
            compatibility("Pair", md)
        }
        fn render(
            &self,
            md: &ModelDeployment,
            _: &crate::provider::UpstreamSchema,
        ) -> Result<Rendered, RenderError> {
            let model = md.spec.model.id.clone().unwrap_or_default();
            let deployment = |name: &str| {
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                    "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i", "args": [model]}]}}}})
            };
            let service = |name: &str| {
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
                    "spec": {"ports": [{"port": 8000}]}})
            };
            let objects = match model.as_str() {
                "bad/overrides" => {
                    return Err(RenderError::InvalidOverrides(
                        "replicas must be a number".into(),
                    ));
                }
                "undeclared/kind" => vec![
                    deployment("m"),
                    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"}}),
                ],
                m if m.ends_with("-split") => {
                    vec![deployment("m-a"), deployment("m-b"), service("m-a")]
                }
                _ => vec![deployment("m"), service("m")],
            };
            Ok(Rendered {
                objects,
                warnings: vec![],
            })
        }
        fn translate_status(
            &self,
            _: &ModelDeployment,
            live: &[Option<&DynamicObject>],
        ) -> TranslatedStatus {
            translated(live, "readyReplicas", json!(1))
        }
    }

    fn table() -> KindTable {
        KindTable::of(&Pair)
    }

    const SERVICE: usize = 1;

    /// `desired` as the API server returns it, with `status`.
    fn served(desired: &DesiredUpstream, status: Value) -> Arc<DynamicObject> {
        Arc::new(crate::provider::cycle::served(desired, status).unwrap())
    }

    fn plan_of(md: &ModelDeployment, objects: &[Seen], authoritative: bool) -> Plan {
        plan_with(md, objects, authoritative, &builtin(), None)
    }

    fn plan_with(
        md: &ModelDeployment,
        objects: &[Seen],
        authoritative: bool,
        detection: &SchemaDetection,
        prepare_hold: Option<&PreparationHold>,
    ) -> Plan {
        plan(
            &Pair,
            &Observed {
                deployment: md,
                propagated: &Default::default(),
                detection,
                policy: &pod_security::Policy::default(),
                kinds: &table(),
                prepare_hold,
                objects,
                authoritative,
            },
        )
    }

    fn rollout(plan: Plan) -> Rollout {
        match plan {
            Plan::Apply(rollout) => rollout,
            other => panic!("not a rollout: {other:?}"),
        }
    }

    /// The objects of `md`'s set as served (cached) after its rollout.
    fn settled(md: &ModelDeployment) -> Vec<Seen> {
        rollout(plan_of(md, &[], true))
            .steps
            .iter()
            .map(|s| Seen::cached(s.kind, served(&s.desired, json!({"readyReplicas": 1}))))
            .collect()
    }

    fn writes(rollout: &Rollout) -> Vec<(String, Write)> {
        rollout
            .steps
            .iter()
            .map(|s| {
                (
                    format!("{} {}", s.desired.kind(), s.desired.name()),
                    s.write,
                )
            })
            .collect()
    }

    fn hold_of(plan: Plan) -> Hold {
        match plan {
            Plan::Hold(hold) => hold,
            other => panic!("not a hold: {other:?}"),
        }
    }

    #[test]
    fn a_new_deployment_creates_every_object_once_the_api_confirms_none_exists() {
        let md = deployment("a/b");
        let confirm = plan_of(&md, &[], false);
        let kinds = table();
        let service = kinds.iter().nth(SERVICE).unwrap().0;
        assert_eq!(
            confirm,
            Plan::Confirm(vec![
                (KindId::PRIMARY, "m".to_string()),
                (service, "m".to_string())
            ]),
            "a cache miss is confirmed before creating"
        );
        let fresh = [
            Seen::fresh(KindId::PRIMARY, "m".into(), None),
            Seen::fresh(service, "m".into(), None),
        ];
        let created = rollout(plan_of(&md, &fresh, false));
        assert_eq!(
            writes(&created),
            [
                ("Deployment m".to_string(), Write::Create),
                ("Service m".to_string(), Write::Create)
            ]
        );
        assert!(created.prune.is_empty());
    }

    #[test]
    fn a_settled_set_writes_nothing() {
        let md = deployment("a/b");
        let settled = rollout(plan_of(&md, &settled(&md), false));
        assert!(!settled.writes(), "{settled:?}");
    }

    #[test]
    fn drift_in_the_cache_is_confirmed_and_a_lagging_cache_costs_no_write() {
        let md = deployment("a/b");
        let mut objects = settled(&md);
        let mut edited = serde_json::to_value(objects[0].object.as_deref().unwrap()).unwrap();
        edited["spec"]["replicas"] = json!(5);
        let edited: DynamicObject = serde_json::from_value(edited).unwrap();
        let in_sync = objects[0].object.clone();
        objects[0].object = Some(Arc::new(edited.clone()));
        assert_eq!(
            plan_of(&md, &objects, false),
            Plan::Confirm(vec![(KindId::PRIMARY, "m".to_string())])
        );
        let mut lagging = objects.clone();
        lagging.push(Seen::fresh(KindId::PRIMARY, "m".into(), in_sync));
        assert!(!rollout(plan_of(&md, &lagging, false)).writes());
        let mut drifted = objects;
        drifted.push(Seen::fresh(
            KindId::PRIMARY,
            "m".into(),
            Some(Arc::new(edited)),
        ));
        assert_eq!(
            writes(&rollout(plan_of(&md, &drifted, false)))[0].1,
            Write::Update { drifted: true }
        );
    }

    #[test]
    fn a_changed_shape_prunes_the_objects_the_render_no_longer_produces() {
        // The objects of the old shape, cached; the new shape's names are not taken.
        let mut objects = settled(&deployment("a/b"));
        let md = deployment("a/b-split");
        objects.extend(
            ["m-a", "m-b"]
                .iter()
                .map(|n| Seen::fresh(KindId::PRIMARY, n.to_string(), None)),
        );
        let service = table().iter().nth(SERVICE).unwrap().0;
        objects.push(Seen::fresh(service, "m-a".into(), None));
        let reshaped = rollout(plan_of(&md, &objects, false));
        assert_eq!(
            reshaped.prune,
            [
                (KindId::PRIMARY, "m".to_string()),
                (service, "m".to_string())
            ]
        );
        assert!(writes(&reshaped).iter().all(|(_, w)| *w == Write::Create));
    }

    #[test]
    fn one_object_of_several_with_a_changed_identity_is_recreated_alone() {
        let md = deployment("a/b");
        let mut objects = settled(&md);
        let mut old = serde_json::to_value(objects[1].object.as_deref().unwrap()).unwrap();
        let previous =
            desired::desired_object(&deployment("old/model"), "pair", &Default::default(), &old);
        old["metadata"]["annotations"] = previous.object["metadata"]["annotations"].clone();
        objects[1].object = Some(Arc::new(serde_json::from_value(old).unwrap()));
        let Plan::Recreate { objects, status } = plan_of(&md, &objects, false) else {
            panic!("not recreated")
        };
        let service = table().iter().nth(SERVICE).unwrap().0;
        assert_eq!(objects, [(service, "Service".to_string(), "m".to_string())]);
        assert_eq!(status.phase, Phase::Deploying);
        assert_eq!(
            status.message,
            "Recreating Service m after an identity change"
        );
    }

    #[test]
    fn an_object_being_deleted_is_awaited() {
        let md = deployment("a/b");
        let mut objects = settled(&md);
        let mut deleting = serde_json::to_value(objects[0].object.as_deref().unwrap()).unwrap();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        objects[0].object = Some(Arc::new(serde_json::from_value(deleting).unwrap()));
        assert_eq!(plan_of(&md, &objects, false), Plan::AwaitDeletion);
    }

    #[test]
    fn a_foreign_object_of_a_desired_name_holds_the_deployment() {
        let md = deployment("a/b");
        let foreign: DynamicObject =
            serde_json::from_value(json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "m", "namespace": "ns", "uid": "x"}}))
            .unwrap();
        let service = table().iter().nth(SERVICE).unwrap().0;
        let objects = [
            Seen::fresh(KindId::PRIMARY, "m".into(), None),
            Seen::fresh(service, "m".into(), Some(Arc::new(foreign))),
        ];
        let held = hold_of(plan_of(&md, &objects, false));
        assert_eq!(held.cause, HoldCause::NotOwned);
        assert_eq!(
            held.status.message,
            "Service ns/m exists but is not managed by this ModelDeployment (no owner references); delete or rename it"
        );
        // The Go AI Runway's reason on ResourceCreated and Ready.
        let reason_of = |t: &str| {
            held.status
                .conditions
                .iter()
                .find(|c| c.type_ == t)
                .map(|c| c.reason.clone())
        };
        for t in [condition_types::RESOURCE_CREATED, condition_types::READY] {
            assert_eq!(
                reason_of(t).as_deref(),
                Some(crate::constants::reasons::RESOURCE_CONFLICT),
                "{t}"
            );
        }

        // An object another owner holds: its kind, name and uid are named.
        let owned: DynamicObject =
            serde_json::from_value(json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "m", "namespace": "ns", "uid": "x", "ownerReferences": [
                {"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment", "name": "other", "uid": "u-other"},
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u-web"}]}}))
            .unwrap();
        let objects = [
            Seen::fresh(KindId::PRIMARY, "m".into(), None),
            Seen::fresh(service, "m".into(), Some(Arc::new(owned))),
        ];
        assert_eq!(
            hold_of(plan_of(&md, &objects, false)).status.message,
            "Service ns/m exists but is not managed by this ModelDeployment (owned by ModelDeployment/other (uid u-other), Deployment/web (uid u-web)); delete or rename it"
        );
    }

    #[test]
    fn holds_say_why_nothing_is_applied() {
        let no_image = PreparationHold {
            reason: reasons::IMAGE_RESOLUTION_FAILED,
            message: "no image".into(),
        };
        let cases = [
            (
                deployment("refused/model"),
                builtin(),
                None,
                HoldCause::Incompatible,
                "Pair does not serve refused/model",
            ),
            (
                deployment("a/b"),
                builtin(),
                Some(&no_image),
                HoldCause::Prepare,
                "no image",
            ),
            (
                deployment("a/b"),
                SchemaDetection::CrdNotInstalled {
                    crd: "x.example.com".into(),
                },
                None,
                HoldCause::CrdUnavailable,
                "x.example.com is missing",
            ),
            (
                deployment("a/b"),
                SchemaDetection::Unsupported {
                    api_version: "v9".into(),
                    fingerprint: "f".into(),
                    message: "unknown schema v9".into(),
                },
                None,
                HoldCause::UnsupportedSchema,
                "unknown schema v9",
            ),
            (
                deployment("bad/overrides"),
                builtin(),
                None,
                HoldCause::Render("invalid_overrides"),
                "replicas must be a number",
            ),
            (
                deployment("undeclared/kind"),
                builtin(),
                None,
                HoldCause::UndeclaredKind,
                "a kind it does not declare",
            ),
        ];
        for (md, detection, prepare_hold, cause, message) in cases {
            let held = hold_of(plan_with(&md, &[], true, &detection, prepare_hold));
            assert_eq!(held.cause, cause);
            assert!(
                held.status.message.contains(message),
                "{}",
                held.status.message
            );
        }
    }

    /// A deployment with a model cache renders nothing until the core's storage conditions say
    /// so: `Pending` (`Reconciling` with the condition's reason) while the claims bind and the
    /// model downloads, `Failed` (`Stalled`) when the download failed, and the same conditions
    /// give the same status (written once). An incompatible deployment is refused at once.
    #[test]
    fn storage_holds_the_render_until_the_cache_is_ready() {
        use crate::conditions::Progress;
        let with = |model: &str, conditions: Value| {
            let mut value = serde_json::to_value(deployment(model)).unwrap();
            value["spec"]["model"]["storage"] =
                json!({"volumes": [{"name": "weights", "purpose": "modelCache"}]});
            value["status"] = json!({"conditions": conditions});
            serde_json::from_value::<ModelDeployment>(value).unwrap()
        };
        let condition = |type_: &str, status: &str, reason: &str, message: &str| {
            json!({"type": type_, "status": status, "reason": reason, "message": message,
                   "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1})
        };
        let bound = condition("StorageReady", "True", "PVCsBound", "All PVCs are bound");
        let progress = "Model download in progress: 42% (3 files, 1.2 GiB)";
        let downloading = with(
            "a/b",
            json!([
                bound.clone(),
                condition("ModelDownloaded", "False", "DownloadInProgress", progress)
            ]),
        );
        let held = hold_of(plan_of(&downloading, &[], true));
        assert_eq!(held.cause, HoldCause::Storage { failed: false });
        assert_eq!(held.cause.error_category(), None);
        assert_eq!(held.status.phase, Phase::Pending);
        assert_eq!(held.status.message, progress);
        assert_eq!(
            held.status.progress(),
            Progress::InProgress {
                reason: "DownloadInProgress".into(),
                message: progress.into()
            }
        );
        assert_eq!(
            hold_of(plan_of(&downloading, &[], true)),
            held,
            "same conditions, same status"
        );
        // Written once: the deployment showing the hold's status needs no second write; the
        // next progress message does.
        let patch = held.status.patch(
            &downloading,
            &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
        );
        let mut shown = serde_json::to_value(&downloading).unwrap();
        for (key, value) in patch["status"].as_object().unwrap() {
            shown["status"][key] = value.clone();
        }
        let shown: ModelDeployment = serde_json::from_value(shown).unwrap();
        assert!(!held.status.is_current(&downloading, "pair-provider"));
        assert!(held.status.is_current(&shown, "pair-provider"));
        let further = with(
            "a/b",
            json!([
                bound.clone(),
                condition(
                    "ModelDownloaded",
                    "False",
                    "DownloadInProgress",
                    "Model download in progress: 43% (3 files, 1.3 GiB)"
                )
            ]),
        );
        assert!(
            !hold_of(plan_of(&further, &[], true))
                .status
                .is_current(&shown, "pair-provider")
        );

        let failed = with(
            "a/b",
            json!([
                bound.clone(),
                condition(
                    "ModelDownloaded",
                    "False",
                    "DownloadFailed",
                    "Model download failed: 404"
                )
            ]),
        );
        let held = hold_of(plan_of(&failed, &[], true));
        assert_eq!(held.cause.error_category(), Some("storage"));
        assert_eq!(held.status.phase, Phase::Failed);
        assert_eq!(
            held.status.progress(),
            Progress::Stalled {
                reason: "DownloadFailed".into(),
                message: "Model download failed: 404".into()
            }
        );

        let ready = with(
            "a/b",
            json!([
                bound,
                condition(
                    "ModelDownloaded",
                    "True",
                    "DownloadComplete",
                    "Model download completed"
                )
            ]),
        );
        assert_eq!(rollout(plan_of(&ready, &[], true)).steps.len(), 2);
        assert_eq!(
            hold_of(plan_of(&with("refused/model", json!([])), &[], true)).cause,
            HoldCause::Incompatible
        );
    }

    /// A preparation that found the provider's operator missing holds with the reason the Go
    /// AI Runway gives (`UpstreamControllerMissing`) and the install hint; nothing is applied.
    #[test]
    fn a_missing_operator_holds_with_its_reason() {
        let hold = controller_missing_hold(&pair_operator());
        let message = hold.message.clone();
        assert_eq!(
            message,
            "The pair operator is not running (no Deployment labelled app=pair-operator in any namespace), so nothing is created for this deployment until it is. Install it with the pair chart."
        );
        let held = hold_of(plan_with(
            &deployment("a/b"),
            &[],
            true,
            &builtin(),
            Some(&hold),
        ));
        assert_eq!(held.cause, HoldCause::Prepare);
        assert_eq!(held.status.message, message);
        // ResourceCreated says why nothing was created; Ready says it in the vocabulary of
        // not-ready reasons.
        for (t, reason) in [
            (
                condition_types::RESOURCE_CREATED,
                reasons::UPSTREAM_CONTROLLER_MISSING,
            ),
            (condition_types::READY, "UpstreamOperatorMissing"),
        ] {
            let condition = held
                .status
                .conditions
                .iter()
                .find(|c| c.type_ == t)
                .unwrap();
            assert_eq!(condition.reason, reason, "{t}");
            assert_eq!(condition.message, message, "{t}");
        }
        // Any other preparation hold carries its own reason on the same conditions.
        let other = hold_of(plan_with(
            &deployment("a/b"),
            &[],
            true,
            &builtin(),
            Some(&PreparationHold {
                reason: reasons::IMAGE_RESOLUTION_FAILED,
                message: "no image".into(),
            }),
        ));
        for (t, reason) in [
            (
                condition_types::RESOURCE_CREATED,
                reasons::IMAGE_RESOLUTION_FAILED,
            ),
            (condition_types::READY, "ImagePullFailed"),
        ] {
            let condition = other
                .status
                .conditions
                .iter()
                .find(|c| c.type_ == t)
                .unwrap();
            assert_eq!(condition.reason, reason, "{t}");
        }
    }

    #[test]
    fn the_report_marks_a_primary_object_its_operator_is_behind_on_as_stale() {
        let md = deployment("a/b");
        let planned = rollout(plan_of(&md, &settled(&md), true));
        let mut primary = serde_json::to_value(planned.steps[0].live.as_deref().unwrap()).unwrap();
        primary["metadata"]["generation"] = json!(2);
        primary["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
        primary["status"] = json!({"observedGeneration": 1});
        let primary: DynamicObject = serde_json::from_value(primary).unwrap();
        let service = planned.steps[1].live.as_deref();
        let now: jiff::Timestamp = "2026-01-01T00:10:00Z".parse().unwrap();
        let report = report(
            &Pair,
            &md,
            &table(),
            &planned.desired(),
            &[Some(&primary), service],
            &[],
            now,
            staleness::DEFAULT_THRESHOLD,
        );
        assert!(
            matches!(report.staleness, Staleness::Stale(_)),
            "{report:?}"
        );
        assert!(
            report
                .status
                .conditions
                .iter()
                .any(|c| c.type_ == condition_types::STALE_STATUS
                    && c.status == ConditionStatus::True)
        );
        let early: jiff::Timestamp = "2026-01-01T00:01:00Z".parse().unwrap();
        let waiting = super::report(
            &Pair,
            &md,
            &table(),
            &planned.desired(),
            &[Some(&primary), service],
            &[],
            early,
            staleness::DEFAULT_THRESHOLD,
        );
        assert_eq!(
            waiting.requeue_after(early, Duration::from_secs(600)),
            Duration::from_secs(241),
            "looked at again when it would turn stale"
        );
    }
}
