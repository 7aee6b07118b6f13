//! `InferenceProviderConfig`: a provider's registration (capabilities, selection rules, probe
//! endpoint) and its liveness (heartbeat). Cluster-scoped, named after the provider.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use super::{ApiFormat, Condition, EngineType, ServingMode};

/// What a provider can serve and when it wants to be auto-selected. Written by the provider
/// itself on startup (server-side apply, field manager `<name>-provider`).
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "airunway.ai",
    version = "v1alpha1",
    kind = "InferenceProviderConfig",
    doc = "A provider's registration with AI Runway: its capabilities, selection rules and probe endpoint (spec), and its liveness (status). Cluster-scoped, named after the provider, written by the provider itself.",
    status = "InferenceProviderConfigStatus",
    shortname = "ipc",
    category = "airunway",
    printcolumn = r#"{"name":"Ready","type":"boolean","jsonPath":".status.ready","description":"The provider reports itself ready"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.version","description":"Provider version"}"#,
    printcolumn = r#"{"name":"Heartbeat","type":"date","jsonPath":".status.lastHeartbeat","description":"Age of the last heartbeat"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    validation = kube::core::Rule::new("self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$') && size(self.metadata.name) <= 54").message("metadata.name must be a DNS label of at most 54 characters (it names the provider, its field manager and its finalizer)")
)]
#[serde(rename_all = "camelCase")]
pub struct InferenceProviderConfigSpec {
    /// Engines, serving modes and hardware this provider supports. The core only auto-selects a
    /// provider whose capabilities fit the deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<ProviderCapabilities>,

    /// CEL rules for automatic selection. A provider's priority for a deployment is the highest
    /// priority among its rules that evaluate to true; a provider with no matching rule is only
    /// used when named explicitly. Rules see `spec` (the deployment spec with defaults applied
    /// and the resolved engine filled in) and `metadata` (name, namespace, labels, annotations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    pub selection_rules: Option<Vec<SelectionRule>>,

    /// Link to the provider's documentation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048))]
    pub documentation: Option<String>,

    /// Where the provider serves its gRPC health and capability probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<ProbeEndpoint>,

    /// The `provider.overrides` paths this provider uses, dot-separated (`frontend.replicas`); a
    /// trailing `*` covers everything below (`deployment.*`). Anything else in a deployment's
    /// overrides is ignored, and the core's admission warns about it by path. Omitted: the
    /// provider does not declare its overrides (no admission warning; the provider still reports
    /// what it ignores with `UnknownOverride` events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64), inner(length(max = 253)))]
    pub override_paths: Option<Vec<String>>,

    /// The resources the provider creates for a deployment (its upstream kind first, then the
    /// other kinds it writes), filled by the SDK from the provider's kinds. With
    /// `--check-upstream-access` the core asks whether a deployment's spec author may `create`
    /// each of them in the deployment's namespace before it selects this provider
    /// (docs/security.md). Omitted: not declared (the check denies, naming the omission).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16))]
    pub upstream_resources: Option<Vec<UpstreamResource>>,
}

/// A resource a provider creates: its API group (`""` for the core group) and its plural
/// resource name, as a `SubjectAccessReview` names it.
#[derive(
    Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq, Eq, Hash,
)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamResource {
    /// API group, e.g. `ray.io`; empty for the core group.
    #[serde(default)]
    #[schemars(length(max = 253))]
    pub group: String,
    /// Plural resource name, e.g. `rayservices`.
    #[schemars(length(min = 1, max = 63))]
    pub resource: String,
}

impl UpstreamResource {
    /// `<resource>.<group>` (`<resource>` for the core group), as `kubectl` names it.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

/// The paths of `overrides` (a deployment's `provider.overrides`) that `known` (a provider's
/// `overridePaths`) does not cover, as `provider.overrides.<path>`; each unknown subtree is
/// reported once, at its top. The walk is bounded by the overrides' validated depth.
pub fn unused_override_paths(
    overrides: &serde_json::Map<String, serde_json::Value>,
    known: &[String],
) -> Vec<String> {
    fn covered(path: &str, known: &[String]) -> bool {
        known.iter().any(|k| match k.strip_suffix('*') {
            Some(prefix) => path.starts_with(prefix) || prefix.strip_suffix('.') == Some(path),
            None => k == path,
        })
    }
    fn leads_somewhere(path: &str, known: &[String]) -> bool {
        let below = format!("{path}.");
        known.iter().any(|k| k.starts_with(&below))
    }
    fn walk(
        map: &serde_json::Map<String, serde_json::Value>,
        prefix: &str,
        known: &[String],
        depth: usize,
        out: &mut Vec<String>,
    ) {
        for (key, value) in map {
            let path = if prefix.is_empty() {
                key.clone()
            } else {
                format!("{prefix}.{key}")
            };
            if covered(&path, known) {
                continue;
            }
            match value {
                serde_json::Value::Object(inner) if depth < 16 && leads_somewhere(&path, known) => {
                    walk(inner, &path, known, depth + 1, out);
                }
                _ => out.push(format!("provider.overrides.{path}")),
            }
        }
    }
    let mut out = Vec::new();
    walk(overrides, "", known, 0, &mut out);
    out
}

/// What a provider supports.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProviderCapabilities {
    /// The engines served, each with its own serving modes and hardware support. An entry may
    /// also be just an engine name, which then takes the capability-level `servingModes`,
    /// `gpuSupport` and `cpuSupport` below.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16))]
    pub engines: Option<Vec<EngineCapabilityEntry>>,

    /// Serving modes of engines listed by name only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serving_modes: Option<Vec<ServingMode>>,

    /// GPU support of engines listed by name only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_support: Option<bool>,

    /// CPU support of engines listed by name only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_support: Option<bool>,

    /// Whether the provider mounts `model.storage` volumes where its engine runs and waits for
    /// the model cache. `false`: selection passes the provider over for a deployment with
    /// volumes; absent: not declared, not excluded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_storage: Option<bool>,
}

/// An entry of `capabilities.engines`.
// A registration holds a handful of entries, read once per selection: boxing the detailed one
// would cost every provider's registration code a `Box::new` for no measurable gain.
#[allow(clippy::large_enum_variant)]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub enum EngineCapabilityEntry {
    /// Shorthand: the engine name; serving modes and hardware come from the capability level.
    Name(EngineType),
    /// The engine with its own serving modes and hardware support.
    Detailed(EngineCapability),
}

impl schemars::JsonSchema for EngineCapabilityEntry {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "EngineCapabilityEntry".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        crate::schema::engine_capability_entry(generator)
    }

    fn inline_schema() -> bool {
        true
    }
}

/// What a provider supports for one engine.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EngineCapability {
    /// The engine.
    pub name: EngineType,
    /// Serving modes supported with this engine.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub serving_modes: Vec<ServingMode>,
    /// Whether this engine runs on GPU workers.
    #[serde(default)]
    pub gpu_support: bool,
    /// Whether this engine runs on CPU-only workers.
    #[serde(default)]
    pub cpu_support: bool,
    /// The HTTP API formats the provider serves with this engine; empty means `openai-chat`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    pub api_formats: Vec<ApiFormat>,
    /// Whether the engine needs the provider's upstream CRD (informational; omitted means
    /// true).
    #[serde(
        rename = "requiresCRD",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub requires_crd: Option<bool>,
    /// How the provider plugs this engine into the inference gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<GatewayCapability>,
    /// Whether the provider serves `spec.adapters` (LoRA) with this engine; omitted means no,
    /// and selection passes the provider over for a deployment with adapters.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lora_support: bool,
    /// Whether the provider renders `spec.engine.toolCalling` and the tool-call and reasoning
    /// parsers with this engine; omitted means no.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tool_calling_support: bool,
}

impl EngineCapability {
    /// The JSON names of an engine entry's fields, for refusing an unknown one by name (the
    /// entry's CRD schema keeps unknown fields; a test holds this list to the type's schema).
    pub const FIELDS: [&'static str; 9] = [
        "name",
        "servingModes",
        "gpuSupport",
        "cpuSupport",
        "apiFormats",
        "requiresCRD",
        "gateway",
        "loraSupport",
        "toolCallingSupport",
    ];

    /// The entry fields that hold a boolean.
    pub const BOOLEAN_FIELDS: [&'static str; 5] = [
        "gpuSupport",
        "cpuSupport",
        "requiresCRD",
        "loraSupport",
        "toolCallingSupport",
    ];

    /// A capability for `name` with every API format the engine can serve, no gateway
    /// integration and `requiresCRD` unset.
    pub fn new(
        name: EngineType,
        serving_modes: Vec<ServingMode>,
        gpu_support: bool,
        cpu_support: bool,
    ) -> Self {
        EngineCapability {
            name,
            serving_modes,
            gpu_support,
            cpu_support,
            api_formats: ApiFormat::supported_by(name).to_vec(),
            requires_crd: None,
            gateway: None,
            lora_support: false,
            tool_calling_support: false,
        }
    }

    /// The API formats served, `openai-chat` when none are listed.
    pub fn served_api_formats(&self) -> Vec<ApiFormat> {
        if self.api_formats.is_empty() {
            vec![ApiFormat::OpenaiChat]
        } else {
            self.api_formats.clone()
        }
    }
}

/// A provider's gateway integration for one engine.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GatewayCapability {
    /// The provider creates the InferencePool and endpoint picker itself; the core then only
    /// creates the HTTPRoute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manages_inference_pool: Option<bool>,
    /// Name of the provider-managed pool; `{name}` and `{namespace}` are replaced by the
    /// deployment's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub inference_pool_name_pattern: Option<String>,
    /// Namespace of the provider-managed pool (same placeholders).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub inference_pool_namespace: Option<String>,
    /// The endpoint picker the core deploys for this engine, when not the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_picker: Option<EndpointPicker>,
    /// Routing uses the model id (or discovery) rather than the served model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignores_served_name: Option<bool>,
    /// The pod labels the core's InferencePool selects, for a provider whose upstream operator
    /// builds the pods with labels of its own (`{name}` in a value is replaced by the
    /// deployment's name); default `airunway.ai/model-deployment: {name}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 8))]
    pub pool_selector: Option<std::collections::BTreeMap<String, String>>,
    /// The model name clients request a LoRA adapter under, which the core's route matches:
    /// `{model}` is replaced by the base model's name, `{adapter}` by the adapter's; default
    /// `{adapter}` (e.g. `{model}:{adapter}` for Ray Serve LLM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub adapter_model_pattern: Option<String>,
}

/// The endpoint picker (EPP) image and its plugin configuration.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EndpointPicker {
    /// The EPP container image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 512))]
    pub image: Option<String>,
    /// The EPP plugin configuration (YAML), replacing the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 65536))]
    pub config_data: Option<String>,
}

impl ProviderCapabilities {
    /// The per-engine view of these capabilities, with name-only entries expanded using the
    /// capability-level defaults (serving modes default to `aggregated`).
    pub fn engine_capabilities(&self) -> Vec<EngineCapability> {
        let default_modes = self
            .serving_modes
            .clone()
            .unwrap_or_else(|| vec![ServingMode::Aggregated]);
        self.engines
            .iter()
            .flatten()
            .map(|entry| match entry {
                EngineCapabilityEntry::Detailed(capability) => capability.clone(),
                EngineCapabilityEntry::Name(name) => EngineCapability {
                    name: *name,
                    serving_modes: default_modes.clone(),
                    gpu_support: self.gpu_support.unwrap_or(false),
                    cpu_support: self.cpu_support.unwrap_or(false),
                    api_formats: Vec::new(),
                    requires_crd: None,
                    gateway: None,
                    lora_support: false,
                    tool_calling_support: false,
                },
            })
            .collect()
    }
}

/// A CEL selection rule.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SelectionRule {
    /// CEL expression that must return a bool, e.g. `spec.engine.type == 'llamacpp'`.
    #[schemars(length(min = 1, max = 1024))]
    pub condition: String,
    /// Priority when the condition holds; the highest priority among providers wins.
    #[schemars(range(min = 0, max = 1000000))]
    pub priority: i32,
}

/// The provider's gRPC probe endpoint.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProbeEndpoint {
    /// `host:port` of the plaintext gRPC server with `grpc.health.v1.Health` and
    /// `airunway.provider.v1.ProviderService`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 512))]
    pub endpoint: Option<String>,
}

/// A provider's liveness and the upstream schema it detected. `ready`, `version`,
/// `lastHeartbeat`, `upstreamCRDVersion`, `upstreamSchemaHash` and the `UpstreamAvailable`
/// condition are written by the provider; the `Available` and `SelectionRulesValid` conditions by
/// the core.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InferenceProviderConfigStatus {
    /// The provider is running and its upstream (operator CRD) is usable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,

    /// `<name>-provider:<version>` of the running provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,

    /// Last time the provider reported in; the core marks it stale when this gets old.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_heartbeat: Option<Time>,

    /// The upstream API the provider renders for, e.g. `kaito.sh/v1beta1`.
    #[serde(
        rename = "upstreamCRDVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub upstream_crd_version: Option<String>,

    /// Fingerprint of the installed upstream schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_schema_hash: Option<String>,

    /// Conditions; each type is written by one controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(merge_strategy = kube::core::ListMerge::Map(vec!["type".into()]))]
    pub conditions: Option<Vec<Condition>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn engine_entry_field_list_matches_the_type() {
        let schema = schemars::schema_for!(EngineCapability);
        let properties = schema
            .get("properties")
            .and_then(serde_json::Value::as_object)
            .expect("an object schema");
        let mut from_schema: Vec<&str> = properties.keys().map(String::as_str).collect();
        let mut listed = EngineCapability::FIELDS.to_vec();
        from_schema.sort_unstable();
        listed.sort_unstable();
        assert_eq!(listed, from_schema);
        for field in EngineCapability::BOOLEAN_FIELDS {
            let ty = properties[field]["type"].clone();
            assert!(
                ty == json!("boolean") || ty == json!(["boolean", "null"]),
                "{field} is {ty}"
            );
        }
    }

    #[test]
    fn unused_overrides_are_found_at_the_top_of_each_unknown_subtree() {
        let known: Vec<String> = ["routerMode", "frontend.replicas", "deployment.*"]
            .map(String::from)
            .to_vec();
        let overrides = json!({
            "routerMode": "kv",
            "frontend": {"replicas": 2, "image": "x", "extra": {"a": 1}},
            "deployment": {"spec": {"template": {"metadata": {"labels": {"a": "b"}}}}},
            "typo": {"deep": {"er": 1}},
        });
        assert_eq!(
            unused_override_paths(overrides.as_object().unwrap(), &known),
            [
                "provider.overrides.frontend.extra",
                "provider.overrides.frontend.image",
                "provider.overrides.typo",
            ]
        );
        assert!(
            unused_override_paths(overrides.as_object().unwrap(), &["*".to_string()]).is_empty()
        );
    }
}
