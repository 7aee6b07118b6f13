//! Upstream schema detection (pure), derived from a provider's [upstream kind](super::UpstreamKind)
//! and the [`SchemaAdapter`]s it declares ([`Provider::schema_adapters`](super::Provider::schema_adapters)).
//!
//! A built-in kind (`from_crd: false`) is always supported at its `default_version`, with the
//! fingerprint [`BUILTIN_FINGERPRINT`]. For a CRD, a provider lists the schema paths it writes; the fingerprint is a hash of the type of each
//! path in the installed CRD. Changes elsewhere in the upstream schema do not change it; a
//! renamed, removed or retyped field the provider writes does, and the provider then refuses
//! to render (explicit failure instead of silent corruption).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionVersion,
};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The served versions of a CRD, in the order given.
pub(crate) fn served_versions(
    crd: &CustomResourceDefinition,
) -> Vec<&CustomResourceDefinitionVersion> {
    crd.spec.versions.iter().filter(|v| v.served).collect()
}

/// Whether the CRD is Established.
pub(crate) fn is_established(crd: &CustomResourceDefinition) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        })
}

/// The type of the schema node at `path` (dot-separated; `[]` steps into array items, `*` into
/// map values), or `missing`. Nodes under `x-kubernetes-preserve-unknown-fields` report
/// `preserved`.
pub(crate) fn type_at(schema: &Value, path: &str) -> String {
    let mut node = schema;
    for raw in path.split('.') {
        let (name, into_items) = match raw.strip_suffix("[]") {
            Some(name) => (name, true),
            None => (raw, false),
        };
        if node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
            && node.get("properties").is_none()
        {
            return "preserved".to_string();
        }
        node = if name == "*" {
            match node.get("additionalProperties") {
                Some(next) => next,
                None => return "missing".to_string(),
            }
        } else {
            match node.get("properties").and_then(|p| p.get(name)) {
                Some(next) => next,
                None => return "missing".to_string(),
            }
        };
        if into_items {
            node = match node.get("items") {
                Some(items) => items,
                None => return "missing".to_string(),
            };
        }
    }
    if node.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        return "int-or-string".to_string();
    }
    match node.get("type").and_then(Value::as_str) {
        Some(t) => t.to_string(),
        None if node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) => {
            "preserved".to_string()
        }
        None => "any".to_string(),
    }
}

/// Fingerprint of `version`'s schema over `paths`: 16 hex digits, and the paths that are
/// missing.
pub(crate) fn fingerprint(
    version: &CustomResourceDefinitionVersion,
    paths: &[&str],
) -> (String, Vec<String>) {
    let schema = version
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .and_then(|s| serde_json::to_value(s).ok())
        .unwrap_or(Value::Null);
    let mut hasher = Sha256::new();
    let mut missing = Vec::new();
    for path in paths {
        let t = type_at(&schema, path);
        if t == "missing" {
            missing.push((*path).to_string());
        }
        hasher.update(format!("{path}={t}\n").as_bytes());
    }
    (hex(&hasher.finalize()[..8]), missing)
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// 16 hex digits of the SHA-256 of `data`.
pub(crate) fn short_hash(data: &[u8]) -> String {
    hex(&Sha256::digest(data)[..8])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn types_along_paths() {
        let schema = json!({"type": "object", "properties": {
            "resource": {"type": "object", "properties": {"count": {"type": "integer"}}},
            "items": {"type": "array", "items": {"type": "object", "properties": {"image": {"type": "string"}}}},
            "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"n": {"type": "integer"}}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "ios": {"x-kubernetes-int-or-string": true},
        }});
        assert_eq!(type_at(&schema, "resource.count"), "integer");
        assert_eq!(type_at(&schema, "items[].image"), "string");
        assert_eq!(type_at(&schema, "map.*.n"), "integer");
        assert_eq!(type_at(&schema, "free.anything.deep"), "preserved");
        assert_eq!(type_at(&schema, "ios"), "int-or-string");
        assert_eq!(type_at(&schema, "resource.replicas"), "missing");
    }
}

/// One upstream version a provider can render for.
#[derive(Clone, Copy, Debug)]
pub struct SchemaAdapter {
    /// The version, e.g. `v1beta1`.
    pub version: &'static str,
    /// The schema paths the provider writes for this version.
    pub paths: &'static [&'static str],
    /// Fingerprints of the schemas this provider version was built and tested against.
    pub known_fingerprints: &'static [&'static str],
}

/// The schema fingerprint of a built-in kind (the IPC's `upstreamSchemaHash`; its
/// `UpstreamAvailable` condition then says no CRD is needed).
pub const BUILTIN_FINGERPRINT: &str = "built-in";

/// The detection for `kind`: a built-in kind is supported at its `default_version`; a CRD's
/// installed schema (`crd`, `None`: not installed) is checked against `adapters`.
pub(crate) fn detect(
    kind: &super::UpstreamKind,
    crd: Option<&CustomResourceDefinition>,
    adapters: &[SchemaAdapter],
) -> super::SchemaDetection {
    if !kind.from_crd {
        return super::SchemaDetection::Supported(super::UpstreamSchema {
            version: kind.default_version.clone(),
            api_version: kind.api_version(&kind.default_version),
            fingerprint: BUILTIN_FINGERPRINT.to_string(),
        });
    }
    detect_with(&kind.crd_name(), &kind.group, crd, adapters)
}

/// Detects the schema of `crd` (`None`: not installed) against `adapters`, in preference
/// order: the first adapter whose version is served decides.
pub(crate) fn detect_with(
    crd_name: &str,
    group: &str,
    crd: Option<&CustomResourceDefinition>,
    adapters: &[SchemaAdapter],
) -> super::SchemaDetection {
    use super::{SchemaDetection, UpstreamSchema};
    let Some(crd) = crd else {
        return SchemaDetection::CrdNotInstalled {
            crd: crd_name.to_string(),
        };
    };
    if !is_established(crd) {
        return SchemaDetection::NotEstablished {
            crd: crd_name.to_string(),
        };
    }
    let served = served_versions(crd);
    let served_names: Vec<&str> = served.iter().map(|v| v.name.as_str()).collect();
    for adapter in adapters {
        let Some(version) = served.iter().find(|v| v.name == adapter.version) else {
            continue;
        };
        let (fingerprint, missing) = fingerprint(version, adapter.paths);
        let api_version = format!("{group}/{}", adapter.version);
        if !missing.is_empty() {
            return SchemaDetection::Unsupported {
                message: format!(
                    "unsupported {crd_name} schema {api_version} (fingerprint {fingerprint}): fields this provider writes are missing: {}",
                    missing.join(", ")
                ),
                api_version,
                fingerprint,
            };
        }
        if !adapter.known_fingerprints.contains(&fingerprint.as_str()) {
            return SchemaDetection::Unsupported {
                message: format!(
                    "unsupported {crd_name} schema {api_version} (fingerprint {fingerprint}; this provider knows {}): upgrade the provider to one that supports the installed upstream version",
                    adapter.known_fingerprints.join(", ")
                ),
                api_version,
                fingerprint,
            };
        }
        return SchemaDetection::Supported(UpstreamSchema {
            version: adapter.version.to_string(),
            api_version,
            fingerprint,
        });
    }
    let supported: Vec<&str> = adapters.iter().map(|a| a.version).collect();
    SchemaDetection::Unsupported {
        api_version: "none".to_string(),
        fingerprint: String::new(),
        message: format!(
            "{crd_name} serves {} but this provider supports {}",
            served_names.join(", "),
            supported.join(", ")
        ),
    }
}
