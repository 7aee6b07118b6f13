//! The Secrets a ModelDeployment references, and whether they exist: the `SecretsFound`
//! condition and one `SecretNotFound` warning event per missing Secret (spec 001 §9).
//!
//! Existence only: each Secret is read with a metadata-only GET (`PartialObjectMetadata`), so
//! no Secret data ever reaches the core's memory. The core holds `get` on Secrets for it (no
//! `list`, no `watch`: no cluster-wide Secret cache), so a missing Secret is not watched for;
//! the deployment is looked at again with the retry backoff (5 s doubling to a minute, never
//! longer than the resync) while a Secret is missing, and at the resync once all exist.
//! Without the permission (an install that removed the `airunway-core-secret-references`
//! ClusterRole) the check says nothing: no condition, no event, one log line.
//!
//! A Secret found is remembered for [`FOUND_TTL`], so a burst of deployments naming the same
//! token costs one GET per Secret, not one per reconcile (at 1,000 deployments the uncached
//! check made about 2,900 GETs during the create burst). A Secret deleted meanwhile is noticed
//! by the first reconcile after that.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use airunway_api::conditions::DesiredCondition;
use airunway_api::constants::{HF_TOKEN_ENV, condition_types, reasons};
use airunway_api::kube_error::ErrorClass;
use airunway_api::v1alpha1::ModelDeployment;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::Api;

/// One Secret a deployment references.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretReference {
    /// The Secret's name (in the deployment's namespace).
    pub name: String,
    /// Where the deployment names it (e.g. `spec.secrets.huggingFaceToken`).
    pub field: String,
    /// The key the deployment reads from it, when one is named.
    pub key: Option<String>,
}

/// Every Secret `effective` (the deployment with its runtime configuration's defaults)
/// references, in spec order, each name once (pure): `spec.secrets.huggingFaceToken` and the
/// `spec.env[].valueFrom.secretKeyRef` that are not `optional`. `own` (the deployment as
/// written) tells a name the runtime configuration brought.
pub fn references(own: &ModelDeployment, effective: &ModelDeployment) -> Vec<SecretReference> {
    let mut out: Vec<SecretReference> = Vec::new();
    let mut add = |reference: SecretReference| {
        if !reference.name.is_empty() && !out.iter().any(|r| r.name == reference.name) {
            out.push(reference);
        }
    };
    let token = |md: &ModelDeployment| {
        md.spec
            .secrets
            .as_ref()
            .and_then(|s| s.hugging_face_token.clone())
    };
    if let Some(name) = token(effective) {
        let field = if token(own).as_deref() == Some(name.as_str()) {
            "spec.secrets.huggingFaceToken".to_string()
        } else {
            "spec.secrets.huggingFaceToken of the runtime configuration".to_string()
        };
        add(SecretReference {
            name,
            field,
            key: Some(HF_TOKEN_ENV.to_string()),
        });
    }
    for (i, var) in effective.spec.env.iter().flatten().enumerate() {
        let Some(selector) = var
            .value_from
            .as_ref()
            .and_then(|v| v.secret_key_ref.as_ref())
        else {
            continue;
        };
        if selector.optional == Some(true) {
            continue;
        }
        add(SecretReference {
            name: selector.name.clone(),
            field: format!("spec.env[{i}].valueFrom.secretKeyRef ({})", var.name),
            key: Some(selector.key.clone()),
        });
    }
    out
}

/// The warning event's note for a missing Secret (the spec's wording).
pub fn missing_note(name: &str, namespace: &str) -> String {
    format!("Secret '{name}' not found in namespace '{namespace}'")
}

/// What the check found for one reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The Secret exists.
    Found,
    /// The API server answered 404.
    Missing,
    /// Not known (no permission, or the read failed): says nothing.
    Unknown,
}

/// The `SecretsFound` condition for `found` (pure): `None` without references or when any
/// lookup is unknown; else `True`, or `False` with reason `SecretNotFound` naming each missing
/// Secret, where the deployment names it and how to create it.
pub fn condition(namespace: &str, found: &[(SecretReference, Lookup)]) -> Option<DesiredCondition> {
    if found.is_empty() || found.iter().any(|(_, l)| *l == Lookup::Unknown) {
        return None;
    }
    let t = condition_types::SECRETS_FOUND;
    let missing: Vec<String> = found
        .iter()
        .filter(|(_, l)| *l == Lookup::Missing)
        .map(|(r, _)| {
            let key = r.key.as_deref().unwrap_or(HF_TOKEN_ENV);
            format!(
                "{} (named by {}): create it (kubectl create secret generic {} -n {namespace} --from-literal={key}=<value>) or correct {}",
                missing_note(&r.name, namespace),
                r.field,
                r.name,
                r.field.split(' ').next().unwrap_or(&r.field),
            )
        })
        .collect();
    Some(if missing.is_empty() {
        let names: Vec<&str> = found.iter().map(|(r, _)| r.name.as_str()).collect();
        DesiredCondition::new(
            t,
            true,
            reasons::SECRETS_FOUND,
            format!("Referenced Secrets exist: {}", names.join(", ")),
        )
    } else {
        DesiredCondition::new(
            t,
            false,
            reasons::SECRET_NOT_FOUND,
            format!(
                "{}; the model server cannot start until it exists",
                missing.join("; ")
            ),
        )
    })
}

/// The outcome of one check.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SecretCheck {
    /// `SecretsFound`, when it applies.
    pub condition: Option<DesiredCondition>,
    /// The event notes of the missing Secrets ([`missing_note`]).
    pub missing: Vec<String>,
}

/// How long a Secret found is taken to exist without asking again.
pub const FOUND_TTL: Duration = Duration::from_secs(300);

/// How many found Secrets are remembered at most (past it, the expired are dropped first,
/// then all).
const FOUND_CAPACITY: usize = 20_000;

/// The Secrets found recently, by namespace and name, with when.
#[derive(Debug, Default)]
struct FoundSecrets {
    at: Mutex<HashMap<(String, String), Instant>>,
}

impl FoundSecrets {
    /// Whether `namespace/name` was found less than [`FOUND_TTL`] before `now`.
    fn fresh(&self, namespace: &str, name: &str, now: Instant) -> bool {
        self.at.lock().is_ok_and(|at| {
            at.get(&(namespace.to_string(), name.to_string()))
                .is_some_and(|found| now.duration_since(*found) < FOUND_TTL)
        })
    }

    /// Remembers `namespace/name` as found at `now`, or forgets it.
    fn record(&self, namespace: &str, name: &str, found: bool, now: Instant) {
        let Ok(mut at) = self.at.lock() else {
            return;
        };
        let key = (namespace.to_string(), name.to_string());
        if !found {
            at.remove(&key);
            return;
        }
        if at.len() >= FOUND_CAPACITY {
            at.retain(|_, found| now.duration_since(*found) < FOUND_TTL);
            if at.len() >= FOUND_CAPACITY {
                at.clear();
            }
        }
        at.insert(key, now);
    }
}

/// Looks up the Secrets a deployment references (metadata only).
pub struct Check {
    client: Client,
    forbidden_logged: AtomicBool,
    found: FoundSecrets,
}

impl Check {
    /// A check reading with `client`.
    pub fn new(client: Client) -> Check {
        Check {
            client,
            forbidden_logged: AtomicBool::new(false),
            found: FoundSecrets::default(),
        }
    }

    /// Checks the Secrets `effective` references in `namespace`.
    pub async fn check(
        &self,
        namespace: &str,
        own: &ModelDeployment,
        effective: &ModelDeployment,
    ) -> SecretCheck {
        let refs = references(own, effective);
        if refs.is_empty() {
            return SecretCheck::default();
        }
        let api: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
        let mut found = Vec::with_capacity(refs.len());
        for reference in refs {
            if self.found.fresh(namespace, &reference.name, Instant::now()) {
                found.push((reference, Lookup::Found));
                continue;
            }
            let lookup = match api.get_metadata_opt(&reference.name).await {
                Ok(Some(_)) => {
                    self.found
                        .record(namespace, &reference.name, true, Instant::now());
                    Lookup::Found
                }
                Ok(None) => {
                    self.found
                        .record(namespace, &reference.name, false, Instant::now());
                    Lookup::Missing
                }
                Err(e) if ErrorClass::of(&e) == ErrorClass::Forbidden => {
                    if !self.forbidden_logged.swap(true, Ordering::Relaxed) {
                        tracing::warn!(error = %e, "may not get Secrets: referenced Secrets are not checked (SecretsFound, SecretNotFound); see docs/security.md");
                    }
                    Lookup::Unknown
                }
                Err(e) => {
                    tracing::debug!(error = %e, secret = %reference.name, %namespace, "could not look up a referenced Secret");
                    Lookup::Unknown
                }
            };
            found.push((reference, lookup));
        }
        let missing = found
            .iter()
            .filter(|(_, l)| *l == Lookup::Missing)
            .map(|(r, _)| missing_note(&r.name, namespace))
            .collect();
        SecretCheck {
            condition: condition(namespace, &found),
            missing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airunway_api::v1alpha1::ConditionStatus;
    use serde_json::json;

    fn md(spec: serde_json::Value) -> ModelDeployment {
        serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1",
            "kind": "ModelDeployment", "metadata": {"name": "llm", "namespace": "team"},
            "spec": spec}))
        .unwrap()
    }

    fn base() -> serde_json::Value {
        json!({"model": {"id": "Qwen/Qwen3-0.6B"}})
    }

    #[test]
    fn the_walk_finds_the_token_and_required_env_secrets_once_each() {
        let mut spec = base();
        spec["secrets"] = json!({"huggingFaceToken": "hf"});
        spec["env"] = json!([
            {"name": "PLAIN", "value": "x"},
            {"name": "API_KEY", "valueFrom": {"secretKeyRef": {"name": "api", "key": "key"}}},
            {"name": "MAYBE", "valueFrom": {"secretKeyRef": {"name": "opt", "key": "k", "optional": true}}},
            {"name": "AGAIN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "HF_TOKEN"}}},
            {"name": "CM", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
        ]);
        let d = md(spec);
        let refs = references(&d, &d);
        assert_eq!(
            refs,
            [
                SecretReference {
                    name: "hf".into(),
                    field: "spec.secrets.huggingFaceToken".into(),
                    key: Some("HF_TOKEN".into()),
                },
                SecretReference {
                    name: "api".into(),
                    field: "spec.env[1].valueFrom.secretKeyRef (API_KEY)".into(),
                    key: Some("key".into()),
                },
            ]
        );
        assert!(references(&md(base()), &md(base())).is_empty());
    }

    #[test]
    fn a_token_from_the_runtime_configuration_says_so() {
        let own = md(base());
        let mut spec = base();
        spec["secrets"] = json!({"huggingFaceToken": "team-hf"});
        let effective = md(spec);
        let refs = references(&own, &effective);
        assert_eq!(refs.len(), 1);
        assert_eq!(
            refs[0].field,
            "spec.secrets.huggingFaceToken of the runtime configuration"
        );
    }

    fn reference(name: &str) -> SecretReference {
        SecretReference {
            name: name.into(),
            field: "spec.secrets.huggingFaceToken".into(),
            key: Some("HF_TOKEN".into()),
        }
    }

    #[test]
    fn the_condition_names_each_missing_secret_and_the_fix() {
        let c = condition("team", &[(reference("hf"), Lookup::Missing)]).unwrap();
        assert_eq!(c.type_, "SecretsFound");
        assert_eq!(c.status, ConditionStatus::False);
        assert_eq!(c.reason, "SecretNotFound");
        assert_eq!(
            c.message,
            "Secret 'hf' not found in namespace 'team' (named by spec.secrets.huggingFaceToken): create it (kubectl create secret generic hf -n team --from-literal=HF_TOKEN=<value>) or correct spec.secrets.huggingFaceToken; the model server cannot start until it exists"
        );
        let c = condition(
            "team",
            &[
                (reference("hf"), Lookup::Found),
                (reference("other"), Lookup::Found),
            ],
        )
        .unwrap();
        assert_eq!(
            (c.status, c.reason.as_str(), c.message.as_str()),
            (
                ConditionStatus::True,
                "SecretsFound",
                "Referenced Secrets exist: hf, other"
            )
        );
    }

    #[test]
    fn nothing_is_said_without_references_or_with_an_unknown_lookup() {
        assert_eq!(condition("team", &[]), None);
        assert_eq!(
            condition(
                "team",
                &[
                    (reference("hf"), Lookup::Missing),
                    (reference("b"), Lookup::Unknown)
                ]
            ),
            None
        );
    }

    #[test]
    fn the_note_is_the_specs_wording() {
        assert_eq!(
            missing_note("hf-token-secret", "default"),
            "Secret 'hf-token-secret' not found in namespace 'default'"
        );
    }

    #[test]
    fn a_found_secret_is_remembered_for_a_while_and_a_missing_one_never() {
        let found = FoundSecrets::default();
        let t0 = Instant::now();
        assert!(!found.fresh("team", "hf", t0));
        found.record("team", "hf", true, t0);
        assert!(found.fresh("team", "hf", t0 + Duration::from_secs(10)));
        assert!(!found.fresh("other", "hf", t0), "per namespace");
        assert!(!found.fresh("team", "hf", t0 + FOUND_TTL), "expired");
        found.record("team", "hf", false, t0 + Duration::from_secs(20));
        assert!(
            !found.fresh("team", "hf", t0 + Duration::from_secs(21)),
            "forgotten when missing"
        );
    }
}
