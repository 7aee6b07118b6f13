//! The desired upstream object and the provider-owned status (pure).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Value, json};

use super::schema::short_hash;
use super::traits::TranslatedStatus;
use crate::conditions::{self, DesiredCondition, Progress};
use crate::constants::{annotations, condition_types, labels};
use crate::managed_fields::OwnedFields;
use crate::v1alpha1::{ConditionStatus, ModelDeployment, NotReadyReason, NotReadyStatus, Phase};

/// The upstream object to apply, with the hashes that tell drift from spec changes.
#[derive(Clone, Debug, PartialEq)]
pub struct DesiredUpstream {
    /// The full object (namespace, owner reference, labels, annotations added).
    pub object: Value,
    /// Hash of the rendered object (annotation `airunway.ai/spec-hash`).
    pub spec_hash: String,
    /// Hash of the deployment's identity fields (annotation `airunway.ai/identity-hash`).
    pub identity_hash: String,
}

impl DesiredUpstream {
    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.object["metadata"]["name"].as_str().unwrap_or_default()
    }

    /// `kind`.
    pub fn kind(&self) -> &str {
        self.object["kind"].as_str().unwrap_or_default()
    }

    /// The API group of `apiVersion` (`""` for the core group).
    pub fn group(&self) -> &str {
        self.object["apiVersion"]
            .as_str()
            .and_then(|v| v.rsplit_once('/'))
            .map(|(group, _)| group)
            .unwrap_or_default()
    }
}

/// Hash of a deployment's identity fields.
pub(crate) fn identity_hash(md: &ModelDeployment) -> String {
    short_hash(md.identity().to_string().as_bytes())
}

/// Completes one `rendered` object of a [`Rendered`](super::rendered::Rendered) set into the
/// object to apply: its rendered name (the deployment's when it has none) and the deployment's
/// namespace, a controller owner reference (`blockOwnerDeletion`), the labels (lowest
/// precedence first: the labels the deployment's runtime configuration propagates
/// (`propagated`, see [`crate::runtime_config::propagated_labels`]), the deployment's
/// `airunway.ai/` labels with `airunway.ai/managed-by: airunway`, `airunway.ai/deployment:
/// <name>`, the rendered object's own, and `airunway.ai/provider: <provider>`), and the hash
/// annotations. The labels are part of the spec hash: a change of the propagated labels
/// re-applies the object.
pub fn desired_object(
    md: &ModelDeployment,
    provider: &str,
    propagated: &BTreeMap<String, String>,
    rendered: &Value,
) -> DesiredUpstream {
    let name = md.metadata.name.clone().unwrap_or_default();
    let mut object = rendered.clone();
    let mut object_labels: BTreeMap<String, String> = propagated.clone();
    object_labels.extend(md.propagated_labels());
    object_labels.insert(labels::DEPLOYMENT.to_string(), name.clone());
    if let Some(extra) = object["metadata"]["labels"].as_object() {
        for (k, v) in extra {
            if let Some(v) = v.as_str() {
                object_labels.insert(k.clone(), v.to_string());
            }
        }
    }
    object_labels.insert(labels::PROVIDER.to_string(), provider.to_string());
    let spec_hash = short_hash(
        serde_json::to_string(&json!({"object": rendered, "labels": object_labels}))
            .unwrap_or_default()
            .as_bytes(),
    );
    let identity_hash = identity_hash(md);
    let mut object_annotations: BTreeMap<String, String> = object["metadata"]["annotations"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default();
    object_annotations.insert(annotations::SPEC_HASH.to_string(), spec_hash.clone());
    object_annotations.insert(
        annotations::IDENTITY_HASH.to_string(),
        identity_hash.clone(),
    );
    if !object["metadata"].is_object() {
        object["metadata"] = json!({});
    }
    let metadata = &mut object["metadata"];
    metadata["name"] = json!(
        metadata
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or(&name)
    );
    metadata["namespace"] = json!(md.metadata.namespace);
    metadata["labels"] = json!(object_labels);
    metadata["annotations"] = json!(object_annotations);
    metadata["ownerReferences"] = json!([{
        "apiVersion": crate::constants::API_VERSION,
        "kind": "ModelDeployment",
        "name": name,
        "uid": md.metadata.uid,
        "controller": true,
        "blockOwnerDeletion": true,
    }]);
    DesiredUpstream {
        object,
        spec_hash,
        identity_hash,
    }
}

/// Whether every value in `desired` is in `live` (objects: key by key; arrays: same length,
/// element by element; everything else: equal).
pub(crate) fn is_subset(desired: &Value, live: &Value) -> bool {
    match (desired, live) {
        (Value::Object(d), Value::Object(l)) => d
            .iter()
            .all(|(k, v)| l.get(k).is_some_and(|lv| is_subset(v, lv))),
        (Value::Array(d), Value::Array(l)) => {
            d.len() == l.len() && d.iter().zip(l).all(|(a, b)| is_subset(a, b))
        }
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => desired == live,
    }
}

/// Whether `live` was produced from the same spec (`airunway.ai/spec-hash` matches) but no
/// longer carries the desired values: someone edited it.
pub(crate) fn drifted(desired: &DesiredUpstream, live: &Value) -> bool {
    let same_spec = live["metadata"]["annotations"][annotations::SPEC_HASH].as_str()
        == Some(desired.spec_hash.as_str());
    if !same_spec {
        return false;
    }
    let mut wanted = desired.object.clone();
    if let Some(map) = wanted.as_object_mut() {
        map.remove("metadata");
        map.remove("status");
    }
    let meta_ok = is_subset(
        &desired.object["metadata"]["labels"],
        &live["metadata"]["labels"],
    ) && is_subset(
        &desired.object["metadata"]["annotations"],
        &live["metadata"]["annotations"],
    );
    !(meta_ok && is_subset(&wanted, live))
}

/// The identity hash recorded on a live upstream object.
pub(crate) fn live_identity_hash(live: &Value) -> Option<&str> {
    live["metadata"]["annotations"][annotations::IDENTITY_HASH].as_str()
}

/// Whether `live` is owned (as controller) by the deployment.
pub(crate) fn owned_by(live: &Value, md: &ModelDeployment) -> bool {
    let uid = md.metadata.uid.as_deref().unwrap_or_default();
    live["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|refs| {
            refs.iter()
                .any(|r| r["uid"].as_str() == Some(uid) && r["controller"] == Value::Bool(true))
        })
}

/// The status a provider wants on a deployment (only provider-owned fields).
#[derive(Clone, Debug, PartialEq)]
pub struct ProviderStatus {
    /// `status.phase`.
    pub phase: Phase,
    /// `status.message` (always written, empty when there is nothing to say, so the provider
    /// keeps owning it).
    pub message: String,
    /// `status.provider.resourceName` and `resourceKind`.
    pub resource: Option<(String, String)>,
    /// `status.replicas`.
    pub replicas: Option<crate::v1alpha1::ReplicaStatus>,
    /// `status.endpoint`.
    pub endpoint: Option<crate::v1alpha1::EndpointStatus>,
    /// `status.workload`, and from its pod selector `status.selector`.
    pub workload: Option<crate::v1alpha1::WorkloadStatus>,
    /// `status.notReady`: why `Ready` is `False` (`None` while `True`).
    pub not_ready: Option<NotReadyStatus>,
    /// `ProviderCompatible`, `ResourceCreated`, `Ready`, and `Degraded` once the resource exists. `Reconciling` and `Stalled` are
    /// derived from the phase when written ([`ProviderStatus::progress`]).
    pub conditions: Vec<DesiredCondition>,
}

/// `status.message` while `Running` when the translation gives none, in the Go AI Runway's
/// words: `<Kind> created, pods are ready`, with `Deployments` for Deployment-based providers
/// (llm-d and vLLM, which may create several).
fn running_message(kind: &str) -> String {
    let noun = if kind == "Deployment" {
        "Deployments"
    } else {
        kind
    };
    format!("{noun} created, pods are ready")
}

/// The not-ready reason of a deployment held with nothing applied, from why no resource was
/// created (the `ResourceCreated=False` reason).
fn held_reason(resource_created: &str) -> NotReadyReason {
    use crate::constants::reasons;
    match resource_created {
        reasons::UPSTREAM_CRD_NOT_INSTALLED
        | reasons::UPSTREAM_CONTROLLER_MISSING
        | reasons::UPSTREAM_CONTROLLER_NOT_READY => NotReadyReason::UpstreamOperatorMissing,
        reasons::IMAGE_RESOLUTION_FAILED => NotReadyReason::ImagePullFailed,
        reasons::DOWNLOAD_FAILED => NotReadyReason::ModelDownloadFailed,
        reasons::PVCS_PENDING | reasons::DOWNLOAD_IN_PROGRESS => NotReadyReason::InProgress,
        reasons::RECREATING => NotReadyReason::Updating,
        reasons::INCOMPATIBLE_UPSTREAM => NotReadyReason::IncompatibleUpstream,
        reasons::DRY_RUN => NotReadyReason::DryRun,
        _ => NotReadyReason::NotDeployed,
    }
}

/// `Ready=False` for `not_ready`: its reason and message.
fn not_ready_condition(not_ready: &NotReadyStatus) -> DesiredCondition {
    DesiredCondition::new(
        condition_types::READY,
        false,
        not_ready.reason.as_str(),
        not_ready.message.clone(),
    )
}

impl ProviderStatus {
    /// The status for a translated upstream status on a created resource.
    pub fn from_translation(
        display_name: &str,
        resource: (String, String),
        translated: &TranslatedStatus,
    ) -> ProviderStatus {
        let (kind, name) = (resource.1.clone(), resource.0.clone());
        // `Ready` is `True` only while `Running`, whatever the upstream says.
        let (ready, not_ready) = match (translated.ready, translated.phase) {
            (true, Phase::Running) => (
                DesiredCondition::new(
                    condition_types::READY,
                    true,
                    crate::constants::reasons::DEPLOYMENT_READY,
                    match translated.replicas.as_ref().map(|r| (r.ready, r.desired)) {
                        Some((Some(ready), Some(desired))) if ready < desired => {
                            format!("Serving: {ready} of {desired} replicas ready (see Degraded)")
                        }
                        _ => "All replicas are ready".to_string(),
                    },
                ),
                None,
            ),
            // Settled at zero replicas, as asked: ready to be scaled up (as Knative and KServe
            // say of a service at zero), so kstatus, Flux, Argo CD and `kubectl wait` read it as
            // done; the reason and the message say no replica serves.
            (false, Phase::Running)
                if translated.not_ready.is_none()
                    && translated.replicas.as_ref().and_then(|r| r.desired) == Some(0) =>
            {
                (
                    DesiredCondition::new(
                        condition_types::READY,
                        true,
                        crate::constants::reasons::SCALED_TO_ZERO,
                        translated
                            .message
                            .clone()
                            .unwrap_or_else(|| format!("{kind} {name} is scaled to zero")),
                    ),
                    None,
                )
            }
            (_, phase) => {
                let not_ready = translated.not_ready.clone().unwrap_or_else(|| {
                    if phase == Phase::Failed {
                        NotReadyStatus::new(
                            NotReadyReason::Unclassified,
                            translated
                                .message
                                .clone()
                                .unwrap_or_else(|| format!("{kind} {name} failed")),
                        )
                    } else {
                        NotReadyStatus::new(
                            NotReadyReason::InProgress,
                            translated.message.clone().unwrap_or_else(|| {
                                format!("Waiting for {kind} {name} to become ready")
                            }),
                        )
                    }
                });
                (not_ready_condition(&not_ready), Some(not_ready))
            }
        };
        ProviderStatus {
            phase: translated.phase,
            message: translated.message.clone().unwrap_or_else(|| {
                if translated.phase == Phase::Running {
                    running_message(&kind)
                } else {
                    String::new()
                }
            }),
            resource: Some(resource),
            replicas: translated.replicas.clone(),
            endpoint: translated.endpoint.clone(),
            workload: None,
            not_ready,
            conditions: vec![
                DesiredCondition::new(
                    condition_types::PROVIDER_COMPATIBLE,
                    true,
                    crate::constants::reasons::COMPATIBILITY_VERIFIED,
                    format!("Configuration compatible with {display_name}"),
                ),
                DesiredCondition::new(
                    condition_types::RESOURCE_CREATED,
                    true,
                    crate::constants::reasons::RESOURCE_CREATED,
                    format!("{kind} created successfully"),
                ),
                ready,
                super::workload::degraded_condition(translated.replicas.as_ref(), None),
            ],
        }
    }

    /// A status for a deployment the provider cannot (yet) deploy: phase and message, the
    /// compatibility verdict, why no resource exists, and `Ready=False`.
    pub fn not_deployed(
        phase: Phase,
        message: String,
        compatible: (bool, &str, String),
        resource_created: (&str, String),
    ) -> ProviderStatus {
        ProviderStatus {
            phase,
            message: message.clone(),
            resource: None,
            replicas: None,
            endpoint: None,
            workload: None,
            not_ready: Some(NotReadyStatus::new(
                held_reason(resource_created.0),
                message.clone(),
            )),
            conditions: vec![
                DesiredCondition::new(
                    condition_types::PROVIDER_COMPATIBLE,
                    compatible.0,
                    compatible.1,
                    compatible.2,
                ),
                DesiredCondition::new(
                    condition_types::RESOURCE_CREATED,
                    false,
                    resource_created.0,
                    resource_created.1,
                ),
                DesiredCondition::new(
                    condition_types::READY,
                    false,
                    held_reason(resource_created.0).as_str(),
                    message,
                ),
            ],
        }
    }

    /// Shows the deployment not ready for `not_ready`: `Ready=False` with its reason and
    /// message, and `status.notReady`.
    pub fn set_not_ready(&mut self, not_ready: NotReadyStatus) {
        let condition = not_ready_condition(&not_ready);
        match self
            .conditions
            .iter_mut()
            .find(|c| c.type_ == condition_types::READY)
        {
            Some(ready) => *ready = condition,
            None => self.conditions.push(condition),
        }
        self.not_ready = Some(not_ready);
    }

    /// Whether `Ready` is `True`.
    pub fn is_ready(&self) -> bool {
        self.conditions
            .iter()
            .any(|c| c.type_ == condition_types::READY && c.status == ConditionStatus::True)
    }

    /// `Reconciling`/`Stalled` for this status: `Running` is settled, `Failed` is stalled, any
    /// other phase is in progress. The reason is that of the first provider condition that is
    /// `False` (e.g. `IncompatibleConfiguration`, `DeploymentInProgress`), the message the
    /// phase message (or that condition's when empty).
    pub fn progress(&self) -> Progress {
        let cause = self
            .conditions
            .iter()
            .find(|c| c.status == ConditionStatus::False);
        let reason = cause
            .map(|c| c.reason.clone())
            .unwrap_or_else(|| self.phase.as_str().to_string());
        let message = if self.message.is_empty() {
            cause
                .map(|c| c.message.clone())
                .unwrap_or_else(|| format!("The deployment is {}", self.phase.as_str()))
        } else {
            self.message.clone()
        };
        let stalled = self
            .not_ready
            .as_ref()
            .is_some_and(|n| n.reason.is_stalled());
        let waiting_while_serving = self.phase == Phase::Running && self.not_ready.is_some();
        match self.phase {
            // A generation that waits for someone to act (a stalled rollout, a refused spec),
            // even while the old one serves.
            _ if stalled => Progress::Stalled {
                reason: self.not_ready_reason(reason),
                message: self.not_ready_message(message),
            },
            // Serving, but not ready for this generation yet (a rollout, the gateway route).
            _ if waiting_while_serving => Progress::InProgress {
                reason: self.not_ready_reason(reason),
                message: self.not_ready_message(message),
            },
            Phase::Running => Progress::Settled,
            Phase::Failed => Progress::Stalled { reason, message },
            Phase::Pending | Phase::Deploying | Phase::Terminating => {
                Progress::InProgress { reason, message }
            }
        }
    }

    fn not_ready_reason(&self, fallback: String) -> String {
        self.not_ready
            .as_ref()
            .map(|n| n.reason.as_str().to_string())
            .unwrap_or(fallback)
    }

    fn not_ready_message(&self, fallback: String) -> String {
        self.not_ready
            .as_ref()
            .map(|n| n.message.clone())
            .unwrap_or(fallback)
    }

    /// Every condition the provider writes: its own three, then `Reconciling` and `Stalled`.
    pub fn all_conditions(&self) -> Vec<DesiredCondition> {
        let mut all = self.conditions.clone();
        all.extend(self.progress().conditions());
        all
    }

    /// How far serving got, as `status.adapters[]` reports it for every adapter
    /// ([`crate::lora::adapter_statuses`]): refused, failed, not created, starting, scaled to
    /// zero or ready, from the phase and the provider's conditions.
    pub fn serving(&self) -> crate::lora::Serving<'_> {
        use crate::lora::Serving;
        let condition = |type_: &str| self.conditions.iter().find(|c| c.type_ == type_);
        if let Some(compatible) = condition(condition_types::PROVIDER_COMPATIBLE)
            && compatible.status == ConditionStatus::False
        {
            return Serving::Refused(&compatible.message);
        }
        if self.phase == Phase::Failed {
            return Serving::Failed(&self.message);
        }
        // A generation refused by validation after an earlier one was deployed: not served.
        if let Some(not_ready) = &self.not_ready
            && not_ready.reason == NotReadyReason::ValidationFailed
        {
            return Serving::Failed(&not_ready.message);
        }
        if !condition(condition_types::RESOURCE_CREATED)
            .is_some_and(|c| c.status == ConditionStatus::True)
        {
            return Serving::NotCreated;
        }
        match condition(condition_types::READY) {
            Some(ready)
                if ready.status == ConditionStatus::True
                    && ready.reason == crate::constants::reasons::SCALED_TO_ZERO =>
            {
                Serving::ScaledToZero
            }
            Some(ready) if ready.status == ConditionStatus::True => Serving::Ready,
            _ => Serving::Starting,
        }
    }

    /// The provider's fields besides the conditions; `observedGeneration` is the deployment's
    /// generation: the provider has acted on it. `adapters`: one entry per adapter of
    /// `spec.adapters` ([`ProviderStatus::serving`]), absent without adapters.
    fn projection(&self, md: &ModelDeployment) -> Value {
        let mut status = json!({"phase": self.phase.as_str(), "message": self.message});
        if let Some(generation) = md.metadata.generation {
            status["observedGeneration"] = json!(generation);
        }
        let adapters = crate::lora::adapter_statuses(md, &self.serving());
        if !adapters.is_empty() {
            status["adapters"] = serde_json::to_value(adapters).unwrap_or(Value::Null);
        }
        if let Some((name, kind)) = &self.resource {
            status["provider"] = json!({"resourceName": name, "resourceKind": kind});
        }
        if let Some(replicas) = &self.replicas {
            status["replicas"] = serde_json::to_value(replicas).unwrap_or(Value::Null);
        }
        if let Some(endpoint) = &self.endpoint {
            status["endpoint"] = serde_json::to_value(endpoint).unwrap_or(Value::Null);
        }
        if let Some(workload) = &self.workload {
            status["workload"] = serde_json::to_value(workload).unwrap_or(Value::Null);
            if let Some(selector) = workload.selector_string() {
                status["selector"] = json!(selector);
            }
        }
        if let Some(not_ready) = &self.not_ready {
            status["notReady"] = serde_json::to_value(not_ready).unwrap_or(Value::Null);
        }
        status
    }

    /// The server-side apply body (only provider-owned fields).
    pub fn patch(&self, md: &ModelDeployment, now: &Time) -> Value {
        let existing = md.status.as_ref().and_then(|s| s.conditions.as_deref());
        let mut status = self.projection(md);
        status["conditions"] = json!(conditions::materialize(
            existing,
            &self.all_conditions(),
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

    /// Whether the deployment already shows this status and `manager` owns nothing more.
    pub fn is_current(&self, md: &ModelDeployment, manager: &str) -> bool {
        let status =
            serde_json::to_value(md.status.clone().unwrap_or_default()).unwrap_or(Value::Null);
        let wanted = self.projection(md);
        let mut current = json!({"phase": status["phase"], "message": status["message"]});
        if !status["observedGeneration"].is_null() {
            current["observedGeneration"] = status["observedGeneration"].clone();
        }
        let provider = &status["provider"];
        if provider.get("resourceName").is_some() || provider.get("resourceKind").is_some() {
            current["provider"] = json!({"resourceName": provider["resourceName"], "resourceKind": provider["resourceKind"]});
        }
        for key in [
            "replicas", "endpoint", "workload", "selector", "notReady", "adapters",
        ] {
            if !status[key].is_null() {
                current[key] = status[key].clone();
            }
        }
        let owned = OwnedFields::of(&md.metadata, manager);
        let all = self.all_conditions();
        let types: Vec<&str> = all.iter().map(|c| c.type_.as_str()).collect();
        current == wanted
            && conditions::all_current(
                md.status.as_ref().and_then(|s| s.conditions.as_deref()),
                &all,
                md.metadata.generation,
            )
            && owned
                .condition_types()
                .iter()
                .all(|t| types.contains(&t.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1alpha1::{EndpointStatus, ReplicaStatus};

    fn md() -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns", "uid": "u-1", "generation": 2,
                         "labels": {"airunway.ai/team": "a", "app": "x"}},
            "spec": {"model": {"id": "a/b"}, "engine": {"type": "vllm"}},
            "status": {"provider": {"name": "p"}},
        }))
        .unwrap()
    }

    fn rendered() -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"}, "data": {"model": "a/b", "replicas": "1"}})
    }

    fn no_labels() -> BTreeMap<String, String> {
        BTreeMap::new()
    }

    #[test]
    fn desired_object_carries_ownership_labels_and_hashes() {
        let desired = desired_object(&md(), "p", &no_labels(), &rendered());
        let meta = &desired.object["metadata"];
        assert_eq!(meta["namespace"], "ns");
        assert_eq!(
            meta["labels"],
            json!({"airunway.ai/team": "a", "airunway.ai/managed-by": "airunway",
                   "airunway.ai/deployment": "m", "airunway.ai/provider": "p"})
        );
        assert_eq!(meta["ownerReferences"][0]["uid"], "u-1");
        assert_eq!(meta["ownerReferences"][0]["controller"], true);
        assert_eq!(meta["ownerReferences"][0]["blockOwnerDeletion"], true);
        assert_eq!(
            meta["annotations"]["airunway.ai/spec-hash"],
            desired.spec_hash.as_str()
        );
        assert_eq!(
            live_identity_hash(&desired.object),
            Some(desired.identity_hash.as_str())
        );
        assert!(owned_by(&desired.object, &md()));
    }

    #[test]
    fn propagated_labels_join_below_the_sdk_labels_and_change_the_spec_hash() {
        let propagated = BTreeMap::from([
            ("org.example/cost-center".to_string(), "ml-42".to_string()),
            // A propagated label never replaces one the SDK sets.
            ("airunway.ai/provider".to_string(), "forged".to_string()),
            ("airunway.ai/managed-by".to_string(), "forged".to_string()),
        ]);
        let plain = desired_object(&md(), "p", &no_labels(), &rendered());
        let labelled = desired_object(&md(), "p", &propagated, &rendered());
        let labels = &labelled.object["metadata"]["labels"];
        assert_eq!(labels["org.example/cost-center"], "ml-42");
        assert_eq!(labels["airunway.ai/provider"], "p");
        assert_eq!(labels["airunway.ai/managed-by"], "airunway");
        assert_ne!(
            plain.spec_hash, labelled.spec_hash,
            "a label change re-applies"
        );
        assert_eq!(
            plain.identity_hash, labelled.identity_hash,
            "but recreates nothing"
        );
        // The same inputs hash the same: a config change that changes nothing rendered
        // writes nothing.
        assert_eq!(
            labelled.spec_hash,
            desired_object(&md(), "p", &propagated, &rendered()).spec_hash
        );
        // A rendered label cannot replace the provider label either.
        let mut claims = rendered();
        claims["metadata"]["labels"] = json!({"airunway.ai/provider": "other"});
        let desired = desired_object(&md(), "p", &no_labels(), &claims);
        assert_eq!(
            desired.object["metadata"]["labels"]["airunway.ai/provider"],
            "p"
        );
    }

    #[test]
    fn drift_versus_spec_change() {
        let desired = desired_object(&md(), "p", &no_labels(), &rendered());
        let mut live = desired.object.clone();
        live["metadata"]["resourceVersion"] = json!("5");
        live["metadata"]["labels"]["extra"] = json!("added-by-someone");
        assert!(!drifted(&desired, &live), "extra fields are not drift");
        live["data"]["replicas"] = json!("7");
        assert!(drifted(&desired, &live), "an edited field is drift");
        live["metadata"]["annotations"]["airunway.ai/spec-hash"] = json!("older");
        assert!(!drifted(&desired, &live), "a spec change is not drift");
    }

    #[test]
    fn status_is_current_only_when_identical() {
        let translated = TranslatedStatus {
            phase: Phase::Running,
            message: None,
            replicas: Some(ReplicaStatus {
                desired: Some(1),
                ready: Some(1),
                available: Some(1),
            }),
            endpoint: Some(EndpointStatus {
                service: Some("m".into()),
                port: Some(80),
            }),
            ready: true,
            not_ready: None,
        };
        let desired =
            ProviderStatus::from_translation("P", ("m".into(), "ConfigMap".into()), &translated);
        let mut deployment = md();
        assert!(!desired.is_current(&deployment, "p-provider"));
        let patch = desired.patch(&deployment, &Time("2026-01-01T00:00:00Z".parse().unwrap()));
        let mut status = serde_json::to_value(&deployment.status).unwrap();
        for (k, v) in patch["status"].as_object().unwrap() {
            if k == "provider" {
                status["provider"]["resourceName"] = v["resourceName"].clone();
                status["provider"]["resourceKind"] = v["resourceKind"].clone();
            } else {
                status[k] = v.clone();
            }
        }
        deployment.status = Some(serde_json::from_value(status).unwrap());
        assert!(desired.is_current(&deployment, "p-provider"));
        assert_eq!(
            patch["status"]["conditions"][1]["message"],
            "ConfigMap created successfully"
        );
        // The provider has acted on generation 2; a new generation makes the status stale.
        assert_eq!(patch["status"]["observedGeneration"], 2);
        deployment.metadata.generation = Some(3);
        assert!(!desired.is_current(&deployment, "p-provider"));
    }

    /// `status.adapters` follows the serving workload, is written with the rest of the status
    /// and counts in `is_current`: a listed adapter changes nothing once shown, a removed one
    /// is a change (the apply then drops the field).
    #[test]
    fn adapters_follow_the_serving_workload_without_churn() {
        let mut deployment = md();
        deployment.spec.adapters = Some(vec![crate::v1alpha1::LoraAdapter {
            name: "sql".into(),
            source: "org/sql".into(),
            ..Default::default()
        }]);
        let ready = ProviderStatus::from_translation(
            "P",
            ("m".into(), "Deployment".into()),
            &translated(Phase::Running, true, None),
        );
        let now = Time("2026-01-01T00:00:00Z".parse().unwrap());
        assert_eq!(
            ready.patch(&deployment, &now)["status"]["adapters"],
            json!([{"name": "sql", "source": "org/sql", "state": "Ready"}])
        );
        let starting = ProviderStatus::from_translation(
            "P",
            ("m".into(), "Deployment".into()),
            &translated(Phase::Deploying, false, None),
        );
        assert_eq!(
            starting.patch(&deployment, &now)["status"]["adapters"][0]["state"],
            "Loading"
        );
        let refused = ProviderStatus::not_deployed(
            Phase::Failed,
            "no LoRA".into(),
            (false, "IncompatibleConfiguration", "no LoRA".into()),
            ("IncompatibleConfiguration", "no LoRA".into()),
        );
        assert_eq!(
            refused.patch(&deployment, &now)["status"]["adapters"],
            json!([{"name": "sql", "source": "org/sql", "state": "Failed", "message": "no LoRA"}])
        );
        let waiting = ProviderStatus::not_deployed(
            Phase::Pending,
            "waiting".into(),
            (true, "CompatibilityVerified", "ok".into()),
            ("UpstreamCRDNotInstalled", "waiting".into()),
        );
        assert_eq!(
            waiting.patch(&deployment, &now)["status"]["adapters"][0]["state"],
            "Pending"
        );
        let mut status = serde_json::to_value(&deployment.status).unwrap();
        for (k, v) in ready.patch(&deployment, &now)["status"]
            .as_object()
            .unwrap()
        {
            if k != "provider" {
                status[k] = v.clone();
            }
        }
        status["provider"]["resourceName"] = json!("m");
        status["provider"]["resourceKind"] = json!("Deployment");
        deployment.status = Some(serde_json::from_value(status).unwrap());
        assert!(ready.is_current(&deployment, "p-provider"));
        deployment.spec.adapters = None;
        assert!(
            !ready.is_current(&deployment, "p-provider"),
            "adapters shown but no longer listed: a write removes them"
        );
        assert!(ready.patch(&deployment, &now)["status"]["adapters"].is_null());
    }

    /// A deployment held for its adapter downloads (the storage gate's hold: nothing created)
    /// shows each adapter the core reports downloading as `Downloading` with its progress.
    #[test]
    fn adapters_held_for_their_download_show_its_progress() {
        let mut deployment = md();
        deployment.spec.adapters = Some(vec![crate::v1alpha1::LoraAdapter {
            name: "sql".into(),
            source: "org/sql".into(),
            ..Default::default()
        }]);
        let progress = "Adapter download in progress: sql: 42% (3/5 files, 4.0 GiB)";
        deployment.status = Some(
            serde_json::from_value(json!({"conditions": [{"type": "AdaptersDownloaded",
                "status": "False", "reason": "DownloadInProgress", "message": progress,
                "lastTransitionTime": "2026-01-01T00:00:00Z"}]}))
            .unwrap(),
        );
        let held = ProviderStatus::not_deployed(
            Phase::Pending,
            progress.into(),
            (true, "CompatibilityVerified", "ok".into()),
            ("DownloadInProgress", progress.into()),
        );
        let now = Time("2026-01-01T00:00:00Z".parse().unwrap());
        assert_eq!(
            held.patch(&deployment, &now)["status"]["adapters"],
            json!([{"name": "sql", "source": "org/sql", "state": "Downloading",
                    "message": "42% (3/5 files, 4.0 GiB)"}])
        );
    }

    fn translated(phase: Phase, ready: bool, message: Option<&str>) -> TranslatedStatus {
        TranslatedStatus {
            phase,
            message: message.map(str::to_string),
            replicas: None,
            endpoint: None,
            ready,
            not_ready: None,
        }
    }

    fn by_type<'a>(conditions: &'a [DesiredCondition], type_: &str) -> &'a DesiredCondition {
        conditions.iter().find(|c| c.type_ == type_).unwrap()
    }

    #[test]
    fn reconciling_stalled_and_ready_follow_the_phase() {
        use crate::constants::reasons;
        let resource = ("m".to_string(), "Workspace".to_string());
        let status = |phase, ready, message| {
            ProviderStatus::from_translation(
                "P",
                resource.clone(),
                &translated(phase, ready, message),
            )
            .all_conditions()
        };
        let truth = |c: &[DesiredCondition], t: &str| by_type(c, t).status == ConditionStatus::True;
        let (ready, reconciling, stalled) = (
            condition_types::READY,
            condition_types::RECONCILING,
            condition_types::STALLED,
        );

        let deploying = status(Phase::Deploying, false, Some("Waiting for KAITO"));
        assert!(
            !truth(&deploying, ready)
                && truth(&deploying, reconciling)
                && !truth(&deploying, stalled)
        );
        assert_eq!(
            by_type(&deploying, reconciling).reason,
            "DeploymentInProgress",
            "the Go AI Runway's in-progress reason"
        );
        assert_eq!(
            by_type(&deploying, reconciling).message,
            "Waiting for KAITO"
        );

        let running = status(Phase::Running, true, None);
        assert!(
            truth(&running, ready) && !truth(&running, reconciling) && !truth(&running, stalled)
        );

        let failed = status(Phase::Failed, false, Some("image pull failed"));
        assert!(!truth(&failed, ready) && !truth(&failed, reconciling) && truth(&failed, stalled));
        assert_eq!(
            by_type(&failed, stalled).reason,
            "Unclassified",
            "a failure the provider did not map says it is unclassified"
        );
        assert_eq!(by_type(&failed, stalled).message, "image pull failed");

        // An upstream that calls itself ready while the phase is not Running: Ready stays False.
        let early = status(Phase::Deploying, true, None);
        assert!(!truth(&early, ready) && truth(&early, reconciling));
        assert_eq!(
            by_type(&early, reconciling).message,
            "Waiting for Workspace m to become ready"
        );

        // Held: incompatible is stalled with the compatibility reason; a missing CRD waits.
        let incompatible = ProviderStatus::not_deployed(
            Phase::Failed,
            "no GPU".into(),
            (false, reasons::INCOMPATIBLE_CONFIGURATION, "no GPU".into()),
            (reasons::INCOMPATIBLE_CONFIGURATION, "no GPU".into()),
        )
        .all_conditions();
        assert!(truth(&incompatible, stalled) && !truth(&incompatible, reconciling));
        assert_eq!(
            by_type(&incompatible, stalled).reason,
            reasons::INCOMPATIBLE_CONFIGURATION
        );
        let no_crd = ProviderStatus::not_deployed(
            Phase::Pending,
            "CRD missing".into(),
            (true, reasons::COMPATIBILITY_VERIFIED, "ok".into()),
            (reasons::UPSTREAM_CRD_NOT_INSTALLED, "CRD missing".into()),
        )
        .all_conditions();
        assert!(truth(&no_crd, reconciling) && !truth(&no_crd, stalled));
        assert_eq!(
            by_type(&no_crd, reconciling).reason,
            reasons::UPSTREAM_CRD_NOT_INSTALLED
        );
    }
}
