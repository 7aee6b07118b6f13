//! `provider.overrides` for vLLM Deployments (pure), shared by llm-d and the direct vLLM
//! provider: deep-merged into every Deployment (not the Services). Objects merge key by key, a
//! JSON `null` deletes the key, scalars and lists replace. Refused, naming the key:
//! - the object's identity and status: `apiVersion`, `kind`, `metadata`, `status` at the root;
//! - replacing the pod spec or the vLLM container wholesale: `spec`, `spec.template` or
//!   `spec.template.spec` given as anything but an object (`null` included), or
//!   `spec.template.spec.containers`/`initContainers` (a list replaces the container the
//!   provider renders);
//! - any other key of the pod spec (`spec.template.spec.<key>`) but the scheduling ones
//!   (`affinity`, `nodeSelector`, `schedulerName`, `terminationGracePeriodSeconds`,
//!   `tolerations`, `topologySpreadConstraints`): `volumes` (a list replaces the volumes the container mounts),
//!   `hostAliases`, `dnsConfig`, `restartPolicy`, ... (`overriding "spec.template.spec.<key>" is
//!   not allowed`, as the Go project refuses `spec.template.spec`). The open keys say only where
//!   the pods run and how long they take to stop; what they merge into is still checked
//!   against the Pod Security profile on the rendered Deployment;
//! - the selector (`spec.selector`): the Services and the gateway's InferencePool find the
//!   pods by it;
//! - privilege escalation, at any depth: [`ESCALATING_OVERRIDE_KEYS`] (`securityContext`,
//!   `hostNetwork`, `hostPID`, `hostIPC`, `serviceAccountName`, …) and `hostPath`,
//!   `privileged`, `capabilities`.
//!
//! The merged Deployment must then be an `apps/v1 Deployment` field by field ([`apply`]): a key
//! the kind does not declare (`spec.replica`) or a value of the wrong type (`spec.replicas:
//! "two"`) is refused naming its path, instead of the API server refusing the whole apply.

use k8s_openapi::api::apps::v1::Deployment;
use serde_json::{Map, Value};

use crate::constants::ESCALATING_OVERRIDE_KEYS;
use crate::provider::RenderError;
use crate::provider::overrides::{OverrideSchema, OverrideType, deep_merge};

/// Keys refused at any depth besides [`ESCALATING_OVERRIDE_KEYS`].
pub const ALSO_ESCALATING: [&str; 3] = ["hostPath", "privileged", "capabilities"];

const SET_BY_PROVIDER: OverrideType = OverrideType::Refused("is set by the provider");
const WHOLESALE: &str = "would replace the pod spec wholesale";
const CONTAINER: OverrideType = OverrideType::Refused("would replace the vLLM container wholesale");

/// The vLLM Deployments' overrides, declared once (both providers'
/// [`Provider::overrides`](crate::provider::Provider::overrides)): any Deployment field is
/// taken as given (then [`apply`]), but the object's identity and status, the selector, the
/// containers and the pod spec keys other than the scheduling ones are refused, and so are the
/// privilege-escalating keys at any depth.
pub const SCHEMA: OverrideSchema = OverrideSchema::open(&[
    ("apiVersion", SET_BY_PROVIDER),
    ("kind", SET_BY_PROVIDER),
    ("metadata", SET_BY_PROVIDER),
    ("status", SET_BY_PROVIDER),
    (
        "spec",
        OverrideType::Open {
            keys: &[
                (
                    "selector",
                    OverrideType::Refused("would detach the pods from their Service"),
                ),
                (
                    "template",
                    OverrideType::Open {
                        keys: &[(
                            "spec",
                            OverrideType::Closed {
                                keys: &[
                                    ("containers", CONTAINER),
                                    ("initContainers", CONTAINER),
                                    ("affinity", OverrideType::Any),
                                    ("nodeSelector", OverrideType::Any),
                                    ("schedulerName", OverrideType::Any),
                                    ("terminationGracePeriodSeconds", OverrideType::Any),
                                    ("tolerations", OverrideType::Any),
                                    ("topologySpreadConstraints", OverrideType::Any),
                                ],
                                what: "the pod spec",
                                whole: WHOLESALE,
                            },
                        )],
                        whole: WHOLESALE,
                    },
                ),
            ],
            whole: WHOLESALE,
        },
    ),
])
.refusing_anywhere(
    &[&ESCALATING_OVERRIDE_KEYS, &ALSO_ESCALATING],
    "the vLLM pods",
);

/// Deepest level of the merged Deployment compared with its typed form; deeper levels are
/// left to the API server (admission already bounds the overrides' nesting far below this).
const MAX_COMPARED_DEPTH: usize = 64;

/// Merges `overrides` (already checked against [`SCHEMA`] by the SDK) into `deployment`, then checks the result is an
/// `apps/v1 Deployment` field by field (an error names the first undeclared key or mistyped
/// value as a `provider.overrides` path).
pub fn apply(
    deployment: &mut Value,
    overrides: Option<&Map<String, Value>>,
) -> Result<(), RenderError> {
    let Some(map) = overrides else {
        return Ok(());
    };
    deep_merge(deployment, &Value::Object(map.clone()));
    check_declared(deployment)
}

fn check_declared(deployment: &Value) -> Result<(), RenderError> {
    let typed: Deployment = serde_path_to_error::deserialize(deployment).map_err(|e| {
        RenderError::InvalidOverrides(format!(
            "invalid provider.overrides: provider.overrides.{} does not fit an apps/v1 Deployment ({}); fix or remove it",
            e.path(),
            e.inner()
        ))
    })?;
    let declared = serde_json::to_value(&typed)
        .map_err(|e| RenderError::InvalidOverrides(format!("invalid provider.overrides: {e}")))?;
    match first_undeclared(deployment, &declared, 0) {
        Some(path) => Err(RenderError::InvalidOverrides(format!(
            "invalid provider.overrides: provider.overrides.{path} is not a field of an apps/v1 Deployment; check its spelling and place, or remove it"
        ))),
        None => Ok(()),
    }
}

/// The path of the first key of `merged` (not `null`) that its typed form `declared` lost.
fn first_undeclared(merged: &Value, declared: &Value, depth: usize) -> Option<String> {
    if depth >= MAX_COMPARED_DEPTH {
        return None;
    }
    match (merged, declared) {
        (Value::Object(merged), Value::Object(declared)) => merged
            .iter()
            .filter(|(_, v)| !v.is_null())
            .find_map(|(key, value)| match declared.get(key) {
                None => Some(key.clone()),
                Some(inner) => first_undeclared(value, inner, depth + 1).map(|rest| {
                    format!(
                        "{key}{}{rest}",
                        if rest.starts_with('[') { "" } else { "." }
                    )
                }),
            }),
        (Value::Array(merged), Value::Array(declared)) => merged
            .iter()
            .zip(declared)
            .enumerate()
            .find_map(|(i, (m, d))| {
                first_undeclared(m, d, depth + 1).map(|rest| {
                    format!(
                        "[{i}]{}{rest}",
                        if rest.is_empty() || rest.starts_with('[') {
                            ""
                        } else {
                            "."
                        }
                    )
                })
            }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    fn deployment() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "m"},
            "spec": {"selector": {"matchLabels": {"app": "m"}},
                "template": {"metadata": {"labels": {"app": "m"}},
                    "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v1",
                        "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}})
    }

    fn merged(overrides: Value) -> Result<Value, String> {
        let Value::Object(map) = overrides else {
            panic!("overrides must be an object")
        };
        let mut d = deployment();
        SCHEMA
            .check(Some(&map), "vLLM")
            .map_err(|e| e.to_string())?;
        apply(&mut d, Some(&map)).map_err(|e| e.to_string())?;
        Ok(d)
    }

    #[test]
    fn declared_fields_of_every_shape_are_merged() {
        let d = merged(json!({"spec": {"replicas": 3, "revisionHistoryLimit": 2,
            "template": {"metadata": {"annotations": {"a": "b"}},
                "spec": {"tolerations": [{"key": "gpu", "operator": "Exists"}],
                    "nodeSelector": {"pool": "a100"}, "terminationGracePeriodSeconds": 30,
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                        {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}}}}}))
        .unwrap();
        assert_eq!(d["spec"]["replicas"], 3);
        assert_eq!(
            d["spec"]["template"]["spec"]["nodeSelector"]["pool"],
            "a100"
        );
        assert_eq!(
            d["spec"]["template"]["spec"]["terminationGracePeriodSeconds"],
            30
        );
    }

    #[test]
    fn pod_spec_keys_but_the_scheduling_ones_are_refused_naming_the_key() {
        for (key, value) in [
            ("volumes", json!([{"name": "scratch", "emptyDir": {}}])),
            (
                "hostAliases",
                json!([{"ip": "10.0.0.1", "hostnames": ["huggingface.co"]}]),
            ),
            ("dnsPolicy", json!("None")),
            ("dnsConfig", json!({"nameservers": ["10.0.0.1"]})),
            ("restartPolicy", json!("Never")),
            ("shareProcessNamespace", json!(true)),
            ("imagePullSecrets", json!([{"name": "someone-elses"}])),
            ("readinessGates", json!([{"conditionType": "x"}])),
        ] {
            let error = merged(json!({"spec": {"template": {"spec": {key: value}}}})).unwrap_err();
            assert_eq!(
                error,
                format!(
                    "invalid provider.overrides: overriding \"spec.template.spec.{key}\" is not allowed: only affinity, nodeSelector, schedulerName, terminationGracePeriodSeconds, tolerations, topologySpreadConstraints of the pod spec may be overridden"
                )
            );
        }
        // Beside an open key, the refused one is still named.
        let error = merged(json!({"spec": {"template": {"spec": {
            "tolerations": [], "hostAliases": []}}}}))
        .unwrap_err();
        assert!(
            error.contains("\"spec.template.spec.hostAliases\""),
            "{error}"
        );
        for key in [
            "affinity",
            "nodeSelector",
            "schedulerName",
            "terminationGracePeriodSeconds",
            "tolerations",
            "topologySpreadConstraints",
        ] {
            let value = match key {
                "schedulerName" => json!("default-scheduler"),
                "terminationGracePeriodSeconds" => json!(30),
                "nodeSelector" | "affinity" => json!({}),
                _ => json!([]),
            };
            assert!(
                merged(json!({"spec": {"template": {"spec": {key: value}}}})).is_ok(),
                "{key}"
            );
        }
    }

    #[test]
    fn an_undeclared_key_is_refused_naming_its_path() {
        for (overrides, path) in [
            (
                json!({"spec": {"replica": 2}}),
                "provider.overrides.spec.replica ",
            ),
            (
                json!({"spec": {"template": {"spec": {"tolerations": [{"key": "g", "operatorr": "Exists"}]}}}}),
                "provider.overrides.spec.template.spec.tolerations[0].operatorr ",
            ),
            (json!({"extra": {"a": 1}}), "provider.overrides.extra "),
        ] {
            let error = merged(overrides).unwrap_err();
            assert!(error.contains(path), "{error}");
            assert!(
                error.contains("is not a field of an apps/v1 Deployment"),
                "{error}"
            );
        }
    }

    #[test]
    fn a_mistyped_value_is_refused_naming_its_path() {
        let error = merged(json!({"spec": {"replicas": "two"}})).unwrap_err();
        assert!(
            error.contains("provider.overrides.spec.replicas does not fit"),
            "{error}"
        );
        let error =
            merged(json!({"spec": {"template": {"spec": {"nodeSelector": ["a"]}}}})).unwrap_err();
        assert!(
            error.contains("provider.overrides.spec.template.spec.nodeSelector"),
            "{error}"
        );
    }

    #[test]
    fn no_overrides_leaves_the_render_alone() {
        let mut d = deployment();
        apply(&mut d, None).unwrap();
        assert_eq!(d, deployment());
    }
}
