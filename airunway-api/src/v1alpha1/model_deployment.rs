//! `ModelDeployment`: one LLM inference deployment, served by whichever provider is selected.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{EnvVar, Toleration};
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use super::Condition;
use crate::constants::messages;

/// CEL fragments shared by the spec-level rules below. Every access is guarded with `has()` so
/// the rules also hold for objects stored before a default existed.
macro_rules! cel {
    (engine_is $e:literal) => {
        concat!("has(self.engine) && has(self.engine.type) && self.engine.type == '", $e, "'")
    };
    (aggregated) => {
        "(!has(self.serving) || !has(self.serving.mode) || self.serving.mode == 'aggregated')"
    };
    (disaggregated) => {
        "(has(self.serving) && has(self.serving.mode) && self.serving.mode == 'disaggregated')"
    };
    // Without `resources`, an explicit engine other than llama.cpp and no image override get
    // one GPU by default (the mutating webhook writes it; `gpu_count()` agrees).
    (no_gpu) => {
        "(has(self.resources) ? (!has(self.resources.gpu) || !has(self.resources.gpu.count) || self.resources.gpu.count == 0) : (has(self.image) || (has(self.engine) && has(self.engine.image))))"
    };
    (engine_needs_gpu $e:literal) => {
        concat!("!(", cel!(engine_is $e), " && ", cel!(aggregated), " && ", cel!(no_gpu), ")")
    };
    (component_gpu $c:literal) => {
        concat!(
            "!", cel!(disaggregated), " || !has(self.scaling) || !has(self.scaling.", $c, ") || ",
            "(has(self.scaling.", $c, ".gpu) && has(self.scaling.", $c, ".gpu.count) && self.scaling.", $c, ".gpu.count > 0)"
        )
    };
    // A parser field absent, or set and satisfying `$test` (CEL over `self.engine.<field>`).
    (parser $f:literal $test:literal) => {
        concat!("!has(self.engine) || !has(self.engine.", $f, ") || ", $test)
    };
}

/// The desired state of a model deployment: what to serve and with what resources. The engine
/// and the provider are optional: the core selects them when they are omitted.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "airunway.ai",
    version = "v1alpha1",
    kind = "ModelDeployment",
    doc = "A model served for LLM inference on Kubernetes. The core controller validates it and selects the engine and provider; the selected provider creates the upstream resource (KAITO Workspace, Dynamo DynamoGraphDeployment, ...) and reports status back.",
    namespaced,
    status = "ModelDeploymentStatus",
    shortname = "md",
    category = "airunway",
    scale(
        spec_replicas_path = ".spec.scaling.replicas",
        status_replicas_path = ".status.replicas.ready",
        label_selector_path = ".status.selector"
    ),
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase","description":"Lifecycle phase"}"#,
    printcolumn = r#"{"name":"Provider","type":"string","jsonPath":".status.provider.name","description":"Selected provider"}"#,
    printcolumn = r#"{"name":"Engine","type":"string","jsonPath":".status.engine.type","description":"Resolved inference engine"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status","description":"Ready condition"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"Replicas-Ready","type":"integer","priority":1,"jsonPath":".status.replicas.ready","description":"Workers ready (kubectl get md -o wide)"}"#,
    printcolumn = r#"{"name":"Replicas-Desired","type":"integer","priority":1,"jsonPath":".status.replicas.desired","description":"Workers requested (kubectl get md -o wide)"}"#,
    printcolumn = r#"{"name":"Gateway-Endpoint","type":"string","priority":1,"jsonPath":".status.gateway.endpoint","description":"URL of the gateway route (kubectl get md -o wide)"}"#,
    printcolumn = r#"{"name":"Message","type":"string","priority":1,"jsonPath":".status.message","description":"What the phase means and what to do (kubectl get md -o wide)"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::keep_unknown_fields)]
#[schemars(transform = value_limits)]
#[x_kube(validation = kube::core::Rule::new(cel!(engine_needs_gpu "vllm")).message(messages::VLLM_REQUIRES_GPU).field_path(".resources.gpu.count"))]
#[x_kube(validation = kube::core::Rule::new(cel!(engine_needs_gpu "sglang")).message(messages::SGLANG_REQUIRES_GPU).field_path(".resources.gpu.count"))]
#[x_kube(validation = kube::core::Rule::new(cel!(engine_needs_gpu "trtllm")).message(messages::TRTLLM_REQUIRES_GPU).field_path(".resources.gpu.count"))]
#[x_kube(validation = kube::core::Rule::new(concat!("!(", cel!(disaggregated), " && has(self.resources) && has(self.resources.gpu))")).message(messages::DISAGGREGATED_GPU_CONFLICT).field_path(".resources.gpu"))]
#[x_kube(validation = kube::core::Rule::new(concat!("!", cel!(disaggregated), " || (has(self.scaling) && has(self.scaling.prefill) && has(self.scaling.decode))")).message(messages::DISAGGREGATED_REQUIRES_COMPONENTS).field_path(".scaling"))]
#[x_kube(validation = kube::core::Rule::new(cel!(component_gpu "prefill")).message(messages::DISAGGREGATED_REQUIRES_PREFILL_GPU).field_path(".scaling.prefill.gpu.count"))]
#[x_kube(validation = kube::core::Rule::new(cel!(component_gpu "decode")).message(messages::DISAGGREGATED_REQUIRES_DECODE_GPU).field_path(".scaling.decode.gpu.count"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.engine) || !has(self.engine.toolCallParser) || (has(self.engine.toolCalling) && self.engine.toolCalling)").message(crate::engine_parsers::TOOL_CALL_PARSER_NEEDS_TOOL_CALLING).field_path(".engine.toolCallParser"))]
#[x_kube(validation = kube::core::Rule::new(cel!(parser "toolCallParser" "self.engine.toolCallParser != ''")).message(crate::engine_parsers::PARSER_EMPTY).field_path(".engine.toolCallParser"))]
#[x_kube(validation = kube::core::Rule::new(cel!(parser "toolCallParser" "(self.engine.toolCallParser != 'auto' && self.engine.toolCallParser != 'none')")).message(crate::engine_parsers::PARSER_RESERVED).field_path(".engine.toolCallParser"))]
#[x_kube(validation = kube::core::Rule::new(cel!(parser "toolCallParser" "self.engine.toolCallParser == self.engine.toolCallParser.lowerAscii()")).message(crate::engine_parsers::PARSER_LOWER_CASE).field_path(".engine.toolCallParser"))]
#[x_kube(validation = kube::core::Rule::new(cel!(parser "toolCallParser" "self.engine.toolCallParser.lowerAscii().matches('^[a-z0-9_.-]*$')")).message(crate::engine_parsers::PARSER_CHARACTERS).field_path(".engine.toolCallParser"))]
#[x_kube(validation = kube::core::Rule::new(cel!(parser "reasoningParser" "self.engine.reasoningParser != ''")).message(crate::engine_parsers::PARSER_EMPTY).field_path(".engine.reasoningParser"))]
#[x_kube(validation = kube::core::Rule::new(cel!(parser "reasoningParser" "(self.engine.reasoningParser != 'auto' && self.engine.reasoningParser != 'none')")).message(crate::engine_parsers::PARSER_RESERVED).field_path(".engine.reasoningParser"))]
#[x_kube(validation = kube::core::Rule::new(cel!(parser "reasoningParser" "self.engine.reasoningParser == self.engine.reasoningParser.lowerAscii()")).message(crate::engine_parsers::PARSER_LOWER_CASE).field_path(".engine.reasoningParser"))]
#[x_kube(validation = kube::core::Rule::new(cel!(parser "reasoningParser" "self.engine.reasoningParser.lowerAscii().matches('^[a-z0-9_.-]*$')")).message(crate::engine_parsers::PARSER_CHARACTERS).field_path(".engine.reasoningParser"))]
pub struct ModelDeploymentSpec {
    /// The model to serve.
    pub model: ModelSpec,

    /// Which provider serves the model. Omit `provider.name` to let the core select one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<ProviderSpec>,

    /// The inference engine. Omit `engine.type` to let the core select one from the ready
    /// providers' capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineSpec>,

    /// How requests are served: one aggregated worker pool, or separate prefill and decode
    /// workers (disaggregated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {}))]
    pub serving: Option<ServingSpec>,

    /// Replica counts. `scaling.replicas` applies to aggregated mode; `scaling.prefill` and
    /// `scaling.decode` describe the workers of disaggregated mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {}))]
    pub scaling: Option<Box<ScalingSpec>>,

    /// Compute resources of each aggregated worker. GPU use is inferred from
    /// `resources.gpu.count > 0`; an omitted `resources.gpu` means CPU only. Not allowed to carry
    /// `gpu` in disaggregated mode (use `scaling.prefill`/`scaling.decode`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceSpec>,

    /// Container image to run instead of the provider's default for the engine. Required for
    /// llama.cpp on KAITO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 512))]
    pub image: Option<String>,

    /// Environment variables for the model server containers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub env: Option<Vec<EnvVar>>,

    /// Metadata for the pods the provider creates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template: Option<PodTemplate>,

    /// References to Secrets. AI Runway never reads Secret contents; it passes names on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secrets: Option<SecretsSpec>,

    /// Node labels the model server pods must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 64))]
    pub node_selector: Option<BTreeMap<String, String>>,

    /// Tolerations for the model server pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub tolerations: Option<Vec<Toleration>>,

    /// Routing through the cluster's inference gateway (InferencePool and HTTPRoute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<Box<GatewaySpec>>,

    /// The runtime configuration whose defaults apply: the `RuntimeConfig` of this name in the
    /// namespace, else the `ClusterRuntimeConfig` of this name. Omitted: `default`, and no
    /// error when neither exists; a name given must exist (the deployment waits for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
    )]
    pub runtime_config_name: Option<String>,

    /// LoRA adapters served beside the base model, each under its own model name. Only a
    /// provider whose engine declares `loraSupport` is selected for a deployment with adapters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub adapters: Option<Vec<super::LoraAdapter>>,
}

/// A label value as Kubernetes accepts it (empty, or up to 63 characters).
const LABEL_VALUE_PATTERN: &str = "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$";

/// Value checks the API server applies from the schema itself, so they hold with the webhook
/// down (issue 16): env names as a container accepts them (1 to 256 printable ASCII characters
/// other than `=`) and values of at most 32 KiB; node selector and pod template label values;
/// toleration operators and effects. Map keys (label keys) need CEL, whose cost the API server
/// estimates from the request size: they stay with the webhook and the core's reconcile-time
/// validation, which say the same for these values.
pub(crate) fn value_limits(schema: &mut schemars::Schema) {
    use serde_json::{Value, json};
    let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    // A pattern's refusal would only quote the regular expression: CEL rules (bounded by the
    // maxLength) say what is wrong in the core's words.
    let label_value = json!({"type": "string", "maxLength": 63, "x-kubernetes-validations": [{
        "rule": format!("self.matches('{LABEL_VALUE_PATTERN}')"),
        "message": "value must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
    }]});
    if let Some(item) = properties
        .get_mut("env")
        .and_then(|e| e.get_mut("items"))
        .and_then(|i| i.get_mut("properties"))
        .and_then(Value::as_object_mut)
    {
        if let Some(Value::Object(name)) = item.get_mut("name") {
            name.insert("minLength".into(), json!(1));
            name.insert("maxLength".into(), json!(256));
            name.insert(
                "x-kubernetes-validations".into(),
                json!([{"rule": "self.matches('^[ -<>-~]+$')",
                    "message": "must be 1 to 256 printable ASCII characters other than '='"}]),
            );
        }
        if let Some(Value::Object(value)) = item.get_mut("value") {
            value.insert("maxLength".into(), json!(32 * 1024));
        }
    }
    if let Some(Value::Object(selector)) = properties.get_mut("nodeSelector") {
        selector.insert("additionalProperties".into(), label_value.clone());
    }
    if let Some(Value::Object(labels)) = properties
        .get_mut("podTemplate")
        .and_then(|t| t.pointer_mut("/properties/metadata/properties/labels"))
    {
        labels.insert("additionalProperties".into(), label_value);
    }
    if let Some(item) = properties
        .get_mut("tolerations")
        .and_then(|t| t.get_mut("items"))
        .and_then(|i| i.get_mut("properties"))
        .and_then(Value::as_object_mut)
    {
        if let Some(Value::Object(operator)) = item.get_mut("operator") {
            operator.insert("enum".into(), json!(["Equal", "Exists"]));
        }
        if let Some(Value::Object(effect)) = item.get_mut("effect") {
            effect.insert(
                "enum".into(),
                json!(["", "NoSchedule", "PreferNoSchedule", "NoExecute"]),
            );
        }
        if let Some(Value::Object(key)) = item.get_mut("key") {
            key.insert("maxLength".into(), json!(317));
        }
    }
}

/// How the deployment is exposed through the cluster's inference gateway.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GatewaySpec {
    /// `false` opts out of gateway routing; omitted or `true` routes the deployment when the
    /// Gateway API Inference Extension is installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,

    /// The model name the gateway routes on, instead of the served model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub model_name: Option<String>,

    /// Name of an HTTPRoute in the deployment's namespace that the user manages; AI Runway then
    /// creates no HTTPRoute of its own.
    #[serde(
        rename = "httpRouteRef",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(length(max = 253))]
    pub http_route_ref: Option<String>,

    /// Name of an existing InferencePool in the deployment's namespace to route through,
    /// instead of one AI Runway creates: the core then creates only the route, and the pool
    /// (its selector included) stays the user's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub pool_ref: Option<String>,

    /// The Gateway this deployment is routed through, when several exist, instead of the
    /// cluster-wide choice (`--gateway-name`/`--gateway-namespace`, or the one labelled Gateway).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_ref: Option<GatewayReference>,
}

/// A reference to a Gateway (`gateway.networking.k8s.io`).
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GatewayReference {
    /// The Gateway's name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,

    /// The Gateway's namespace; omitted means the deployment's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub namespace: Option<String>,
}

/// The model to serve.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("(has(self.source) && self.source != 'huggingface') || (has(self.id) && self.id != '')").message(messages::MODEL_ID_REQUIRED).field_path(".id"))]
pub struct ModelSpec {
    /// Hugging Face model id, e.g. `meta-llama/Llama-3.1-8B-Instruct`. Required when `source`
    /// is `huggingface`; omit it for `custom`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub id: Option<String>,

    /// The model name clients use in API requests. Defaults to the basename of `id`. Ignored
    /// for `source: custom` (the image defines the name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub served_name: Option<String>,

    /// Where the weights come from: `huggingface` (downloaded by id, the default) or `custom`
    /// (pre-loaded in `spec.image`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "huggingface"))]
    pub source: Option<ModelSource>,

    /// Volumes mounted where the engine runs: the model cache (weights, downloaded once before
    /// the engine starts), a compilation cache, or anything else (`custom`). A `modelCache`
    /// volume with neither `claimName` nor `size` uses the namespace's shared cache of the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<ModelStorage>,
}

/// Model storage volumes.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ModelStorage {
    /// The volumes, keyed by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 8))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub volumes: Option<Vec<StorageVolume>>,
}

/// One storage volume (the Go AI Runway's `StorageVolume`, with its defaults and rules: see
/// docs/validation.md).
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StorageVolume {
    /// Volume name, a DNS label, unique in the deployment.
    #[schemars(length(max = 63), regex(pattern = r"^[a-z0-9]([a-z0-9\-]*[a-z0-9])?$"))]
    pub name: String,
    /// A PersistentVolumeClaim that exists (without `size`); with `size` the claim the controller
    /// creates, `<deployment>-<volume>` (written by the mutating webhook).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub claim_name: Option<String>,
    /// Where the volume is mounted where the engine runs; `/model-cache` and
    /// `/compilation-cache` by default for the two cache purposes, required for `custom`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub mount_path: Option<String>,
    /// `modelCache`, `compilationCache` or `custom` (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    #[schemars(extend("enum" = ["modelCache", "compilationCache", "custom"], "default" = "custom"))]
    pub purpose: Option<String>,
    /// Mount read-only (a read-only model cache is not downloaded into).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// Size of a PersistentVolumeClaim the controller creates for this deployment alone (and
    /// deletes with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::quantity")]
    pub size: Option<String>,
    /// Storage class of the created claim (with `size`); omitted: the cluster's default; `""`:
    /// none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub storage_class_name: Option<String>,
    /// Access mode of the created claim (with `size`); `ReadWriteMany` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    #[schemars(extend("enum" = ["ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany", "ReadWriteOncePod"]))]
    pub access_mode: Option<String>,
}

/// Where model weights come from.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[schemars(transform = crate::schema::without_description)]
#[serde(rename_all = "lowercase")]
pub enum ModelSource {
    /// Downloaded from Hugging Face by `model.id`.
    Huggingface,
    /// Pre-loaded in the container image.
    Custom,
}

/// Provider choice and provider-specific settings.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProviderSpec {
    /// Name of the provider (its InferenceProviderConfig), e.g. `kaito` or `dynamo`. Omit to
    /// let the core select one. Changing it moves the deployment to the new provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 54),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    )]
    pub name: Option<String>,

    /// Provider-specific settings the unified API does not cover (an escape hatch). Each
    /// provider documents its keys; unknown keys produce a warning event, wrong types fail the
    /// reconcile. Keys that would escalate privilege are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::free_form_object")]
    pub overrides: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Inference engine settings.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EngineSpec {
    /// The engine. Omit to let the core select one from the ready providers' capabilities.
    /// Changing it recreates the upstream resource.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub engine_type: Option<EngineType>,

    /// Maximum context length in tokens (vLLM `--max-model-len`, SGLang `--context-length`,
    /// llama.cpp `--ctx-size`; ignored with a warning for TensorRT-LLM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 16777216))]
    pub context_length: Option<i64>,

    /// Allow the model repository to run custom code (vLLM and SGLang `--trust-remote-code`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust_remote_code: Option<bool>,

    /// Engine arguments passed as `--<key> <value>`, e.g. `{quantization: awq}`. All values are
    /// strings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 64))]
    pub args: Option<BTreeMap<String, String>>,

    /// Container image of the model server, instead of the provider's default for the engine.
    /// Preferred over the legacy `spec.image`; when both are set they must be equal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 512))]
    pub image: Option<String>,

    /// Automatic prefix caching (vLLM `--enable-prefix-caching`, on by default). `false` turns
    /// it off (`--no-enable-prefix-caching`) and is kept as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub enable_prefix_caching: Option<bool>,

    /// Run the model eagerly, without CUDA graphs (vLLM `--enforce-eager`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforce_eager: Option<bool>,

    /// Raw command-line tokens appended after every derived flag, verbatim (e.g.
    /// `["--kv-cache-dtype=fp8"]`). A flag may be set here or in `args`, not in both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64), inner(length(max = 1024)))]
    pub extra_args: Option<Vec<String>>,

    /// Let the model call tools: the engine chooses tool calls itself (vLLM
    /// `--enable-auto-tool-choice`) and parses them with `toolCallParser`, or with the parser
    /// known for the model family when that is omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calling: Option<bool>,

    /// The engine's tool-call parser (vLLM `--tool-call-parser`, e.g. `hermes`); needs
    /// `toolCalling: true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub tool_call_parser: Option<String>,

    /// The engine's reasoning parser (vLLM `--reasoning-parser`, e.g. `qwen3`), which returns a
    /// reasoning model's thinking apart from its answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub reasoning_parser: Option<String>,
}

/// An inference engine.
#[derive(
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
)]
#[schemars(transform = crate::schema::without_description)]
#[serde(rename_all = "lowercase")]
pub enum EngineType {
    /// vLLM (GPU).
    Vllm,
    /// SGLang (GPU).
    Sglang,
    /// NVIDIA TensorRT-LLM (GPU).
    Trtllm,
    /// llama.cpp (CPU or GPU, GGUF models).
    Llamacpp,
}

impl EngineType {
    /// Every engine, in the core's preference order for automatic engine selection.
    pub const ALL: [EngineType; 4] = [
        EngineType::Vllm,
        EngineType::Sglang,
        EngineType::Trtllm,
        EngineType::Llamacpp,
    ];

    /// The name used in the API (`vllm`, `sglang`, `trtllm`, `llamacpp`).
    pub fn as_str(self) -> &'static str {
        match self {
            EngineType::Vllm => "vllm",
            EngineType::Sglang => "sglang",
            EngineType::Trtllm => "trtllm",
            EngineType::Llamacpp => "llamacpp",
        }
    }

    /// Parses the API name.
    pub fn parse(name: &str) -> Option<EngineType> {
        EngineType::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Whether the engine cannot run without a GPU.
    pub fn requires_gpu(self) -> bool {
        !matches!(self, EngineType::Llamacpp)
    }
}

impl std::fmt::Display for EngineType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Serving settings.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ServingSpec {
    /// `aggregated` (one worker pool, the default) or `disaggregated` (separate prefill and
    /// decode workers). Changing it recreates the upstream resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "aggregated"))]
    pub mode: Option<ServingMode>,
}

/// How requests are served.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[schemars(transform = crate::schema::without_description)]
#[serde(rename_all = "lowercase")]
pub enum ServingMode {
    /// One pool of workers does prefill and decode.
    Aggregated,
    /// Prefill and decode run on separate workers.
    Disaggregated,
}

impl ServingMode {
    /// The name used in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            ServingMode::Aggregated => "aggregated",
            ServingMode::Disaggregated => "disaggregated",
        }
    }
}

impl std::fmt::Display for ServingMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Replica counts.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ScalingSpec {
    /// Number of aggregated workers (default 1; 0 scales to zero where the provider allows it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 32), extend("default" = 1))]
    pub replicas: Option<i32>,

    /// Prefill workers (disaggregated mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill: Option<ComponentScaling>,

    /// Decode workers (disaggregated mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode: Option<ComponentScaling>,

    /// Autoscaling of `replicas` on LLM signals, to zero and back where the provider can
    /// (docs/autoscaling.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<super::AutoscalingSpec>,
}

/// One worker role in disaggregated mode.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ComponentScaling {
    /// Number of workers of this role (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 32), extend("default" = 1))]
    pub replicas: Option<i32>,

    /// GPUs per worker of this role (required in disaggregated mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuSpec>,

    /// Memory limit per worker of this role, a Kubernetes quantity such as `64Gi` (at most
    /// 4Ti).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::memory_quantity")]
    pub memory: Option<String>,
}

/// Compute resources of an aggregated worker.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpec {
    /// GPUs per worker. Omitted means CPU only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuSpec>,

    /// Memory per worker, a Kubernetes quantity such as `32Gi` (at most 4Ti).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::memory_quantity")]
    pub memory: Option<String>,

    /// CPU per worker, a Kubernetes quantity such as `4` or `500m` (at most 512).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::cpu_quantity")]
    pub cpu: Option<String>,
}

/// A GPU request.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GpuSpec {
    /// Number of GPUs per worker. 0 means CPU only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 64))]
    pub count: Option<i32>,

    /// The extended resource name of the GPU (default `nvidia.com/gpu`; e.g. `amd.com/gpu`).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253), extend("default" = "nvidia.com/gpu"))]
    pub gpu_type: Option<String>,
}

/// Metadata for the pods a provider creates.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodTemplate {
    /// Labels and annotations added to every model server pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<PodTemplateMetadata>,
}

/// Pod labels and annotations.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodTemplateMetadata {
    /// Labels for the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 64))]
    pub labels: Option<BTreeMap<String, String>>,

    /// Annotations for the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 64))]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// References to Secrets (names only; contents are never read).
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SecretsSpec {
    /// Name of a Secret in the deployment's namespace whose keys (e.g. `HF_TOKEN`) are exposed
    /// to the model server as environment variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub hugging_face_token: Option<String>,
}

/// The observed state of a model deployment. The core and the provider each write their own
/// fields with server-side apply (see the field ownership table in the docs).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ModelDeploymentStatus {
    /// Lifecycle phase: Pending, Deploying, Running, Failed or Terminating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,

    /// The runtime configuration applied (written by the core): its source and hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective_runtime_config: Option<Box<super::EffectiveRuntimeConfig>>,

    /// Human-readable detail for the phase, e.g. the upstream error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,

    /// The selected provider and the upstream resource it created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<ProviderStatus>,

    /// The resolved engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineStatus>,

    /// Worker replica counts; `replicas.ready` is the scale subresource's status replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<ReplicaStatus>,

    /// The label selector of the serving pods in string form (the scale subresource's
    /// `labelSelectorPath`), written by the provider with `workload`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,

    /// What the provider created and where the serving pods are (docs/integrations.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<Box<super::WorkloadStatus>>,

    /// Why the deployment is not ready, and the object that says so (absent while `Ready=True`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_ready: Option<Box<super::NotReadyStatus>>,

    /// The autoscaler the core created for `spec.scaling.autoscaling`, and its last decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<Box<super::AutoscalingStatus>>,

    /// The in-cluster Service serving the OpenAI-compatible API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<EndpointStatus>,

    /// Gateway routing state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<Box<GatewayStatus>>,

    /// Each adapter of `spec.adapters[]` and its state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapters: Option<Vec<super::AdapterStatus>>,

    /// The container image as resolved by the provider (the direct vLLM provider).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<Box<ImageStatus>>,

    /// Conditions; each condition type is written by exactly one controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(merge_strategy = kube::core::ListMerge::Map(vec!["type".into()]))]
    pub conditions: Option<Vec<Condition>>,

    /// The `metadata.generation` the core last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Lifecycle phase of a deployment.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[schemars(transform = crate::schema::without_description)]
pub enum Phase {
    /// Waiting for validation, selection or the provider.
    Pending,
    /// The upstream resource exists and is starting.
    Deploying,
    /// Serving.
    Running,
    /// Failed; `message` says why.
    Failed,
    /// Being deleted.
    Terminating,
}

impl Phase {
    /// Every phase.
    pub const ALL: [Phase; 5] = [
        Phase::Pending,
        Phase::Deploying,
        Phase::Running,
        Phase::Failed,
        Phase::Terminating,
    ];

    /// The name used in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "Pending",
            Phase::Deploying => "Deploying",
            Phase::Running => "Running",
            Phase::Failed => "Failed",
            Phase::Terminating => "Terminating",
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The selected provider and its upstream resource.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProviderStatus {
    /// The provider serving this deployment (written by the core or a custom selector).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,

    /// Why this provider was chosen (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected_reason: Option<String>,

    /// Name of the upstream resource the provider created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,

    /// Kind of the upstream resource the provider created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_kind: Option<String>,

    /// The upstream configuration request, when the provider works through one (Dynamo's
    /// DynamoGraphDeploymentRequest in intent mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_ref: Option<Box<ProviderResourceReference>>,

    /// The workload actually serving, when the upstream creates it (the DynamoGraphDeployment
    /// the request created).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_ref: Option<Box<ProviderResourceReference>>,

    /// The inference pool the upstream manages for the workload, once seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inference_pool_ref: Option<Box<ProviderResourceReference>>,

    /// Profiling progress and the accepted inputs of an intent deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<Box<ProviderIntentStatus>>,
    /// The W3C trace context (`traceparent`) of the core's decision that last wrote `name`,
    /// present only while traces are exported; the provider's reconcile traces link to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// One incarnation of an upstream object.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProviderResourceReference {
    /// `apiVersion`, e.g. `nvidia.com/v1beta1`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.uid`, telling this incarnation from a later one of the same name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
}

/// The accepted profiling attempt of an intent deployment.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProviderIntentStatus {
    /// The request's phase (Dynamo's: `Pending`, `Profiling`, `Ready`, `Deploying`,
    /// `Deployed`, `Failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The profiling step while profiling (e.g. `SweepingPrefill`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiling_phase: Option<String>,
    /// The hash of the inputs the request profiles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_hash: Option<String>,
    /// The attempt token the request belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<String>,
}

/// The resolved engine.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EngineStatus {
    /// The engine in use: `spec.engine.type`, or the one the core selected.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub engine_type: Option<EngineType>,

    /// Why this engine was chosen (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected_reason: Option<String>,
}

/// Worker replica counts.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaStatus {
    /// Workers requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired: Option<i32>,
    /// Workers ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<i32>,
    /// Workers available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available: Option<i32>,
}

/// The container image a provider runs, resolved from the requested reference.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ImageStatus {
    /// The reference asked for (`engine.image`, `image`, or the provider's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested: Option<String>,
    /// `<repository>@<digest>` when resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
    /// The repository, without tag or digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// The tag asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// The manifest digest (`sha256:...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Where the image comes from: `nightly`, `stable`, `launch` or `custom`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// When the image was built (its `org.opencontainers.image.created` label, else its
    /// config's `created`), RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// The source revision it was built from (its `org.opencontainers.image.revision` label).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// How old the image was when it was resolved: `<N>d`, `<N>h`, `<N>m` or `0m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age: Option<String>,
    /// Whether the image is a nightly build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_nightly: Option<bool>,
    /// Whether a signature or attestation was verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<bool>,
    /// Why the image is or is not verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification_message: Option<String>,
    /// What resolution did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The Service serving the model.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EndpointStatus {
    /// ClusterIP Service name in the deployment's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// Service port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
}

/// Gateway routing state.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GatewayStatus {
    /// URL of the gateway route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The model name routed by the gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// Whether the route is active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    /// Name of the Gateway the route is attached to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_name: Option<String>,
    /// Namespace of the Gateway the route is attached to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_namespace: Option<String>,
    /// The API formats served through the gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_formats: Option<Vec<ApiFormat>>,
}

/// An HTTP API format a model server speaks.
#[derive(
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
)]
#[schemars(transform = crate::schema::without_description)]
pub enum ApiFormat {
    /// OpenAI chat completions (`/v1/chat/completions`).
    #[serde(rename = "openai-chat")]
    OpenaiChat,
    /// OpenAI responses (`/v1/responses`).
    #[serde(rename = "openai-responses")]
    OpenaiResponses,
    /// Anthropic messages (`/v1/messages`).
    #[serde(rename = "anthropic-messages")]
    AnthropicMessages,
}

impl ApiFormat {
    /// The name used in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiFormat::OpenaiChat => "openai-chat",
            ApiFormat::OpenaiResponses => "openai-responses",
            ApiFormat::AnthropicMessages => "anthropic-messages",
        }
    }

    /// The formats an engine can serve at most (the Go AI Runway's table).
    pub fn supported_by(engine: EngineType) -> &'static [ApiFormat] {
        match engine {
            EngineType::Vllm => &[
                ApiFormat::OpenaiChat,
                ApiFormat::OpenaiResponses,
                ApiFormat::AnthropicMessages,
            ],
            EngineType::Sglang => &[ApiFormat::OpenaiChat, ApiFormat::AnthropicMessages],
            EngineType::Trtllm => &[ApiFormat::OpenaiChat, ApiFormat::OpenaiResponses],
            EngineType::Llamacpp => &[ApiFormat::OpenaiChat],
        }
    }
}
