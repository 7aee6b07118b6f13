//! `provider.overrides` for vLLM Deployments (pure), shared by llm-d and the direct vLLM
//! provider: deep-merged into every Deployment (not the Services). Objects merge key by key, a
//! JSON `null` deletes the key, scalars and lists replace. Refused, naming the key:
//! - the object's identity and status: `apiVersion`, `kind`, `metadata`, `status` at the root;
//! - replacing the pod spec or the vLLM container wholesale: `spec`, `spec.template` or
//!   `spec.template.spec` given as anything but an object (`null` included), or
//!   `spec.template.spec.containers` (a list replaces the container the provider renders);
//! - the selector (`spec.selector`): the Services and the gateway's InferencePool find the
//!   pods by it;
//! - privilege escalation, at any depth: [`ESCALATING_OVERRIDE_KEYS`] (`securityContext`,
//!   `hostNetwork`, `hostPID`, `hostIPC`, `serviceAccountName`, …) and `hostPath`,
//!   `privileged`, `capabilities`.

use serde_json::{Map, Value};

use crate::constants::ESCALATING_OVERRIDE_KEYS;
use crate::provider::RenderError;
use crate::provider::overrides::{deep_merge, find_keys};

/// Keys refused at any depth besides [`ESCALATING_OVERRIDE_KEYS`].
pub const ALSO_ESCALATING: [&str; 3] = ["hostPath", "privileged", "capabilities"];

/// Root keys that are not the Deployment's to override.
pub const RESERVED_ROOT: [&str; 4] = ["apiVersion", "kind", "metadata", "status"];

fn refused(path: &str, why: &str) -> RenderError {
    RenderError::InvalidOverrides(format!(
        "invalid provider.overrides: {path} {why} and is not allowed"
    ))
}

/// Checks `overrides` (an error names the first refused key).
pub fn check(overrides: Option<&Map<String, Value>>) -> Result<(), RenderError> {
    let Some(map) = overrides else {
        return Ok(());
    };
    let keys: Vec<&str> = ESCALATING_OVERRIDE_KEYS
        .iter()
        .chain(ALSO_ESCALATING.iter())
        .copied()
        .collect();
    let escalating = find_keys(map, &keys);
    if !escalating.is_empty() {
        return Err(refused(
            &escalating.join(", "),
            "would escalate the privileges of the vLLM pods",
        ));
    }
    for key in RESERVED_ROOT {
        if map.contains_key(key) {
            return Err(refused(
                &format!("provider.overrides.{key}"),
                "is set by the provider",
            ));
        }
    }
    let mut node = map;
    let mut path = String::from("provider.overrides");
    for key in ["spec", "template", "spec"] {
        path.push('.');
        path.push_str(key);
        match node.get(key) {
            None => return Ok(()),
            Some(Value::Object(inner)) => {
                if path == "provider.overrides.spec" && inner.contains_key("selector") {
                    return Err(refused(
                        "provider.overrides.spec.selector",
                        "would detach the pods from their Service",
                    ));
                }
                node = inner;
            }
            Some(_) => return Err(refused(&path, "would replace the pod spec wholesale")),
        }
    }
    for key in ["containers", "initContainers"] {
        if node.contains_key(key) {
            return Err(refused(
                &format!("{path}.{key}"),
                "would replace the vLLM container wholesale",
            ));
        }
    }
    Ok(())
}

/// Merges `overrides` (already [checked](check)) into `deployment`.
pub fn apply(deployment: &mut Value, overrides: Option<&Map<String, Value>>) {
    if let Some(map) = overrides {
        deep_merge(deployment, &Value::Object(map.clone()));
    }
}
