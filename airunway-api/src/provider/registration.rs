//! Registration (the InferenceProviderConfig spec) and the heartbeat (its status).
//!
//! The spec is applied with field manager `<name>-provider` **without force**. When an admin
//! takes over a field (e.g. `kubectl apply --server-side --force-conflicts` of their own
//! `selectionRules`, or a `kubectl edit`), the provider's next apply conflicts on that field;
//! the provider then drops the field from its apply and leaves it to the admin. To hand it back,
//! the admin removes their manager's ownership (apply a config without the field) and restarts
//! the provider.

use std::collections::BTreeMap;

use crate::apply_body;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Client;
use kube::api::{Api, PatchParams};
use serde_json::{Value, json};

use k8s_openapi::api::apps::v1::Deployment;

use super::traits::{Provider, SchemaDetection, UpstreamController};
use crate::conditions::{self, DesiredCondition};
use crate::constants::{API_VERSION, annotations, condition_types, field_managers, reasons};
use crate::runtime::watch_health::Stalled;
use crate::v1alpha1::{InferenceProviderConfig, InferenceProviderConfigSpec, UpstreamResource};

/// The registration the SDK applies (without the probe endpoint, added at run time): the
/// provider's [`registration`](Provider::registration) with the `overridePaths` derived from
/// its [override declaration](Provider::overrides) and the `upstreamResources` from its
/// [kinds](super::kinds::KindTable).
pub fn registration_spec<P: Provider>(provider: &P) -> InferenceProviderConfigSpec {
    InferenceProviderConfigSpec {
        override_paths: provider.overrides().paths(),
        upstream_resources: Some(upstream_resources(&super::kinds::KindTable::of(provider))),
        ..provider.registration()
    }
}

/// The resources of `kinds` (the upstream kind first), each once.
pub fn upstream_resources(kinds: &super::kinds::KindTable) -> Vec<UpstreamResource> {
    let mut resources: Vec<UpstreamResource> = Vec::new();
    for (_, kind) in kinds.iter() {
        let resource = UpstreamResource {
            group: kind.group.clone(),
            resource: kind.plural.clone(),
        };
        if !resources.contains(&resource) {
            resources.push(resource);
        }
    }
    resources
}

/// The annotations the SDK writes on the registration, as the Go AI Runway writes them for its
/// dashboard: the display name and, when the registration has one, the documentation URL.
pub fn registration_annotations(
    display_name: &str,
    spec: &InferenceProviderConfigSpec,
) -> BTreeMap<String, String> {
    let mut annotations = BTreeMap::from([(
        annotations::DISPLAY_NAME.to_string(),
        display_name.to_string(),
    )]);
    if let Some(url) = spec.documentation.as_ref().filter(|u| !u.is_empty()) {
        annotations.insert(annotations::DOCUMENTATION_URL.to_string(), url.clone());
    }
    annotations
}

/// A registration or heartbeat failure.
#[derive(Debug, thiserror::Error)]
pub enum RegistrationError {
    /// The API call failed.
    #[error("{action} InferenceProviderConfig {name}: {source}")]
    Api {
        /// What was being done.
        action: &'static str,
        /// The provider.
        name: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// The spec could not be serialised.
    #[error("serialising the registration: {0}")]
    Serialize(#[from] serde_json::Error),
}

impl RegistrationError {
    /// A short, static label for logs.
    pub fn category(&self) -> &'static str {
        match self {
            RegistrationError::Api { .. } => "api_error",
            RegistrationError::Serialize(_) => "serialization",
        }
    }
}

/// Removes the JSON path `.spec.a.b` (as reported in a conflict cause) from `body`; an
/// annotation (`.metadata.annotations.<key>`, whose key may hold dots) by its whole key.
fn remove_path(body: &mut Value, field: &str) -> bool {
    if let Some(key) = field.strip_prefix(".metadata.annotations.") {
        return body["metadata"]["annotations"]
            .as_object_mut()
            .is_some_and(|m| m.remove(key).is_some());
    }
    let parts: Vec<&str> = field
        .trim_start_matches('.')
        .split('.')
        .filter(|p| !p.is_empty())
        .collect();
    let Some((last, parents)) = parts.split_last() else {
        return false;
    };
    let mut node = &mut *body;
    for part in parents {
        match node.get_mut(*part) {
            Some(next) => node = next,
            None => return false,
        }
    }
    node.as_object_mut()
        .is_some_and(|m| m.remove(*last).is_some())
}

/// Applies the registration spec, leaving fields an admin took over to the admin. Returns the
/// fields left out.
pub async fn register(
    client: &Client,
    name: &str,
    spec: &InferenceProviderConfigSpec,
    annotations: &BTreeMap<String, String>,
) -> Result<Vec<String>, RegistrationError> {
    let api: Api<InferenceProviderConfig> = Api::all(client.clone());
    let manager = field_managers::provider(name);
    let mut body = json!({"apiVersion": API_VERSION, "kind": "InferenceProviderConfig",
        "metadata": {"name": name, "annotations": annotations}, "spec": serde_json::to_value(spec)?});
    let mut left_out = Vec::new();
    for _ in 0..8 {
        match api
            .patch(
                name,
                &PatchParams::apply(&manager),
                &apply_body::apply(&body),
            )
            .await
        {
            Ok(_) => return Ok(left_out),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                let fields: Vec<String> = status
                    .details
                    .iter()
                    .flat_map(|d| d.causes.iter())
                    .map(|c| c.field.clone())
                    .collect();
                let removed: Vec<String> = fields
                    .into_iter()
                    .filter(|f| remove_path(&mut body, f))
                    .collect();
                if removed.is_empty() {
                    return Err(RegistrationError::Api {
                        action: "registering",
                        name: name.to_string(),
                        source: kube::Error::Api(status),
                    });
                }
                tracing::info!(fields = ?removed, "leaving registration fields managed by someone else as they are");
                left_out.extend(removed);
            }
            Err(source) => {
                return Err(RegistrationError::Api {
                    action: "registering",
                    name: name.to_string(),
                    source,
                });
            }
        }
    }
    Ok(left_out)
}

/// The `UpstreamAvailable` condition and readiness for a detection.
pub fn upstream_condition(
    detection: &SchemaDetection,
    display_name: &str,
    kind: &str,
) -> (bool, DesiredCondition) {
    let t = condition_types::UPSTREAM_AVAILABLE;
    match detection {
        SchemaDetection::Supported(schema)
            if schema.fingerprint == super::schema::BUILTIN_FINGERPRINT =>
        {
            (
                true,
                DesiredCondition::new(
                    t,
                    true,
                    reasons::UPSTREAM_CRD_ESTABLISHED,
                    format!(
                        "{kind} is a built-in Kubernetes kind ({}): no CRD is needed, always ready",
                        schema.api_version
                    ),
                ),
            )
        }
        SchemaDetection::Supported(schema) => (
            true,
            DesiredCondition::new(
                t,
                true,
                reasons::UPSTREAM_CRD_ESTABLISHED,
                format!(
                    "{kind} API {} is installed and supported (schema {})",
                    schema.api_version, schema.fingerprint
                ),
            ),
        ),
        SchemaDetection::CrdNotInstalled { crd } => (
            false,
            DesiredCondition::new(
                t,
                false,
                reasons::UPSTREAM_CRD_NOT_INSTALLED,
                format!("CRD {crd} is not installed: install {display_name} in the cluster"),
            ),
        ),
        SchemaDetection::NotEstablished { crd } => (
            false,
            DesiredCondition::new(
                t,
                false,
                reasons::UPSTREAM_CRD_NOT_ESTABLISHED,
                format!("CRD {crd} is not Established yet"),
            ),
        ),
        SchemaDetection::Unsupported { message, .. } => (
            false,
            DesiredCondition::new(t, false, reasons::UNSUPPORTED_SCHEMA, message.clone()),
        ),
    }
}

/// What the lookup of the upstream operator's Deployments found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControllerHealth {
    /// Deployment `<namespace>/<name>` has a ready replica.
    Ready(String),
    /// Deployments exist, none with a ready replica (the first, `<namespace>/<name>`).
    NotReady(String),
    /// No Deployment matches.
    Missing,
    /// The lookup failed (the error).
    LookupFailed(String),
}

/// The operator's health from its Deployments (pure).
pub fn controller_health(deployments: &[Deployment]) -> ControllerHealth {
    let name = |d: &Deployment| {
        format!(
            "{}/{}",
            d.metadata.namespace.as_deref().unwrap_or_default(),
            d.metadata.name.as_deref().unwrap_or_default()
        )
    };
    let mut sorted: Vec<&Deployment> = deployments.iter().collect();
    sorted.sort_by_key(|d| name(d));
    if let Some(ready) = sorted.iter().find(|d| {
        d.status
            .as_ref()
            .and_then(|s| s.ready_replicas)
            .unwrap_or(0)
            > 0
    }) {
        return ControllerHealth::Ready(name(ready));
    }
    match sorted.first() {
        Some(first) => ControllerHealth::NotReady(name(first)),
        None => ControllerHealth::Missing,
    }
}

/// Readiness and the `UpstreamAvailable` condition: the CRD's ([`upstream_condition`]) and,
/// when the provider names its operator, the operator's Deployment.
pub fn upstream_readiness(
    detection: &SchemaDetection,
    controller: Option<(&UpstreamController, &ControllerHealth)>,
    display_name: &str,
    kind: &str,
) -> (bool, DesiredCondition) {
    let (ready, condition) = upstream_condition(detection, display_name, kind);
    let Some((controller, health)) = controller.filter(|_| ready) else {
        return (ready, condition);
    };
    let t = condition_types::UPSTREAM_AVAILABLE;
    let what = &controller.description;
    match health {
        ControllerHealth::Ready(name) => (
            true,
            DesiredCondition::new(
                t,
                true,
                condition.reason.clone(),
                format!("{}; the {what} {name} is ready", condition.message),
            ),
        ),
        ControllerHealth::NotReady(name) => (
            false,
            DesiredCondition::new(
                t,
                false,
                reasons::UPSTREAM_CONTROLLER_NOT_READY,
                format!("The {what} Deployment {name} exists but has no ready replicas"),
            ),
        ),
        ControllerHealth::Missing => (
            false,
            DesiredCondition::new(
                t,
                false,
                reasons::UPSTREAM_CONTROLLER_MISSING,
                format!(
                    "The {what} is not running (no Deployment labelled {} in any namespace). {}",
                    controller.label_selector, controller.install_hint
                ),
            ),
        ),
        ControllerHealth::LookupFailed(error) => (
            false,
            DesiredCondition::new(
                t,
                false,
                reasons::PROBE_FAILED,
                format!("Could not look up the {what}: {error}"),
            ),
        ),
    }
}

/// What a heartbeat reports.
pub struct Heartbeat<'a> {
    /// Provider name.
    pub name: &'a str,
    /// `<name>-provider:<version>`.
    pub version: String,
    /// The upstream detection.
    pub detection: &'a SchemaDetection,
    /// Whether the provider is shutting down (reports `ready: false`).
    pub shutting_down: bool,
    /// Display name and upstream kind, for the condition message.
    pub display: (&'a str, &'a str),
    /// The upstream operator and what its lookup found, for providers that name it.
    pub controller: Option<(&'a UpstreamController, &'a ControllerHealth)>,
    /// Why the provider cannot make progress (a watch failing, the queue not draining), if so.
    pub stalled: Option<&'a Stalled>,
}

/// The readiness a heartbeat reports and its `UpstreamAvailable` condition (pure): the
/// upstream's ([`upstream_readiness`]), unless the provider cannot make progress (not ready,
/// saying why) or is shutting down.
pub fn reported_readiness(beat: &Heartbeat<'_>) -> (bool, DesiredCondition) {
    if beat.shutting_down {
        return (
            false,
            DesiredCondition::new(
                condition_types::UPSTREAM_AVAILABLE,
                false,
                reasons::SHUTTING_DOWN,
                "The provider is shutting down",
            ),
        );
    }
    if let Some(stalled) = beat.stalled {
        return (
            false,
            DesiredCondition::new(
                condition_types::UPSTREAM_AVAILABLE,
                false,
                stalled.reason(),
                stalled.message(),
            ),
        );
    }
    upstream_readiness(
        beat.detection,
        beat.controller,
        beat.display.0,
        beat.display.1,
    )
}

/// Writes the heartbeat: `ready`, `version`, `lastHeartbeat`, upstream version and schema hash,
/// and the `UpstreamAvailable` condition (manager `<name>-provider`).
pub async fn heartbeat(client: &Client, beat: &Heartbeat<'_>) -> Result<(), RegistrationError> {
    let api: Api<InferenceProviderConfig> = Api::all(client.clone());
    let current = api
        .get_opt(beat.name)
        .await
        .map_err(|source| RegistrationError::Api {
            action: "reading",
            name: beat.name.to_string(),
            source,
        })?;
    let (ready, condition) = reported_readiness(beat);
    let now = Time(jiff::Timestamp::now());
    let existing = current
        .as_ref()
        .and_then(|c| c.status.as_ref())
        .and_then(|s| s.conditions.clone());
    let conditions = conditions::materialize(
        existing.as_deref(),
        &[condition],
        current.as_ref().and_then(|c| c.metadata.generation),
        &now,
    );
    let (version, hash) = match beat.detection {
        SchemaDetection::Supported(schema) => {
            (schema.api_version.clone(), schema.fingerprint.clone())
        }
        SchemaDetection::Unsupported {
            api_version,
            fingerprint,
            ..
        } => (api_version.clone(), fingerprint.clone()),
        _ => (String::new(), String::new()),
    };
    let body = json!({
        "apiVersion": API_VERSION, "kind": "InferenceProviderConfig", "metadata": {"name": beat.name},
        "status": {"ready": ready, "version": beat.version, "lastHeartbeat": now, "upstreamCRDVersion": version,
                   "upstreamSchemaHash": hash, "conditions": conditions},
    });
    api.patch_status(
        beat.name,
        &PatchParams::apply(&field_managers::provider(beat.name)).force(),
        &apply_body::apply(&body),
    )
    .await
    .map_err(|source| RegistrationError::Api {
        action: "writing the heartbeat of",
        name: beat.name.to_string(),
        source,
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflicting_fields_are_removed() {
        let mut body = json!({"spec": {"selectionRules": [], "capabilities": {"gpuSupport": true, "engines": []}}});
        assert!(remove_path(&mut body, ".spec.selectionRules"));
        assert!(remove_path(&mut body, ".spec.capabilities.gpuSupport"));
        assert!(!remove_path(&mut body, ".spec.documentation"));
        assert_eq!(body, json!({"spec": {"capabilities": {"engines": []}}}));
        // An annotation key holds dots: removed whole.
        let mut body = json!({"metadata": {"annotations": {"airunway.ai/display-name": "X"}}});
        assert!(remove_path(
            &mut body,
            ".metadata.annotations.airunway.ai/display-name"
        ));
        assert_eq!(body, json!({"metadata": {"annotations": {}}}));
    }

    #[test]
    fn upstream_resources_come_from_the_kind_table_each_once() {
        use super::super::kinds::KindTable;
        use super::super::vllm_kit::{deployment_kind, service_kind};
        let table = KindTable::new(deployment_kind(), vec![service_kind(), deployment_kind()]);
        let resources = upstream_resources(&table);
        assert_eq!(
            resources
                .iter()
                .map(UpstreamResource::qualified)
                .collect::<Vec<_>>(),
            ["deployments.apps", "services"]
        );
        assert_eq!(
            serde_json::to_value(&resources).unwrap(),
            json!([{"group": "apps", "resource": "deployments"}, {"group": "", "resource": "services"}])
        );
    }

    #[test]
    fn the_go_dashboard_annotations() {
        let spec = InferenceProviderConfigSpec {
            documentation: Some("https://example.com/kaito".into()),
            ..Default::default()
        };
        assert_eq!(
            registration_annotations("KAITO", &spec),
            BTreeMap::from([
                ("airunway.ai/display-name".to_string(), "KAITO".to_string()),
                (
                    "airunway.ai/documentation-url".to_string(),
                    "https://example.com/kaito".to_string()
                ),
            ])
        );
        assert_eq!(
            registration_annotations("vLLM", &InferenceProviderConfigSpec::default()).len(),
            1
        );
    }

    #[test]
    fn a_provider_that_cannot_make_progress_reports_not_ready_and_why() {
        let detection = SchemaDetection::CrdNotInstalled { crd: "x".into() };
        let supported =
            super::super::schema::detect(&super::super::vllm_kit::deployment_kind(), None, &[]);
        let stalled = Stalled::WatchFailing {
            watch: "workspaces.kaito.sh".into(),
            since: "2026-01-01T00:00:00Z".parse().unwrap(),
            error: "403 forbidden".into(),
        };
        let beat = |detection, stalled, shutting_down| Heartbeat {
            name: "kaito",
            version: "kaito-provider:1".into(),
            detection,
            shutting_down,
            display: ("KAITO", "Workspace"),
            controller: None,
            stalled,
        };
        assert!(reported_readiness(&beat(&supported, None, false)).0);
        let (ready, condition) = reported_readiness(&beat(&supported, Some(&stalled), false));
        assert!(!ready);
        assert_eq!(condition.reason, "WatchFailing");
        assert_eq!(
            condition.message,
            "The provider cannot make progress: its watch of workspaces.kaito.sh has been failing since 2026-01-01T00:00:00Z: 403 forbidden"
        );
        // Shutting down says so first; a missing CRD is still reported when nothing stalls.
        assert_eq!(
            reported_readiness(&beat(&supported, Some(&stalled), true))
                .1
                .reason,
            reasons::SHUTTING_DOWN
        );
        assert_eq!(
            reported_readiness(&beat(&detection, None, false)).1.reason,
            reasons::UPSTREAM_CRD_NOT_INSTALLED
        );
    }
}
