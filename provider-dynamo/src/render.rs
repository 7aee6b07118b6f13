//! ModelDeployment → DynamoGraphDeployment (pure), for the Dynamo 1.1 line.
//!
//! Services:
//! - `Frontend` (`componentType: frontend`): replicas, CPU/memory requests and the router mode
//!   from `provider.overrides` (defaults: 1 replica, cpu `"2"`, memory `"4Gi"`, `round-robin`).
//!   The router mode is given as `DYN_ROUTER_MODE` (Dynamo 1.x has no service-level router
//!   field; `none` leaves Dynamo's default).
//! - `Epp` (`componentType: epp`), only with `spec.gateway.enabled: true`: Dynamo's endpoint
//!   picker; its operator then creates the InferencePool `<name>-pool` the core routes to
//!   (docs/gateway.md). Every worker then gets a `frontendSidecar` serving the pool's port.
//! - aggregated: one worker (`VllmWorker`, `SglangWorker` or `TrtllmWorker`) with
//!   `scaling.replicas` (0 honoured), GPU/memory limits and CPU request from `resources`.
//! - disaggregated: `<Engine>PrefillWorker` and `<Engine>DecodeWorker`
//!   (`subComponentType: prefill|decode`), each with its own GPUs and memory and
//!   `scaling.<role>.replicas` × `scaling.replicas` replicas (the scale subresource scales the
//!   graph in units of its prefill:decode ratio; 0 stops both). Dynamo
//!   1.0 replaced the `--is-prefill-worker`/`--is-decode-worker` flags shown in the design doc
//!   with `--disaggregation-mode prefill|decode` (ai-dynamo/dynamo#6483); the vLLM prefill worker
//!   also takes the NIXL `--kv-transfer-config`; SGLang workers take
//!   `--disaggregation-transfer-backend nixl`.
//!
//! Workers run `python3 -m dynamo.<engine>` in exec form (no shell, so `engine.args` values
//! cannot inject commands) with the model, the served name, context length (vLLM
//! `--max-model-len`, SGLang `--context-length`; ignored with a warning for TensorRT-LLM),
//! `--trust-remote-code`, tensor parallelism from the GPU count, then `engine.args` in key order
//! as `--key value` (`""`/`"true"`: a bare flag; `"false"`: `--no-key`).
//! Prefix caching and eager mode come from `engine.enablePrefixCaching` (vLLM
//! `--enable-prefix-caching`/`--no-enable-prefix-caching`; SGLang `--disable-radix-cache` when
//! off) and `engine.enforceEager` (vLLM `--enforce-eager`, SGLang `--disable-cuda-graph`), unless
//! `engine.args`/`engine.extraArgs` set the flag themselves; TensorRT-LLM has no such flags
//! (warning). `engine.extraArgs` are appended verbatim after every derived flag.
//! `envFromSecret` carries the Hugging Face token Secret name (a reference; never read). `env`,
//! `nodeSelector`, `tolerations` and pod labels/annotations go to every worker; images default
//! to `nvcr.io/nvidia/ai-dynamo/<vllm|sglang|tensorrtllm>-runtime:<DYNAMO_VERSION>` unless
//! `engine.image` (or the legacy `spec.image`). Worker resources follow the Go AI Runway:
//! `limits: {gpu, gpuType?, memory?, cpu?}`, `requests: {gpu, gpuType?}` (GPU entries only when
//! the worker has GPUs). The DGD carries the labels `airunway.ai/model-deployment`,
//! `airunway.ai/model-id` (the model id made a label value) and `airunway.ai/engine-type`.

use airunway_api::constants::event_reasons;
use airunway_api::k8s_openapi::api::core::v1::EnvVar;
use airunway_api::provider::overrides::{self, OverrideSchema, OverrideType};
use airunway_api::provider::vllm_kit::render::user_flag_keys;
use airunway_api::provider::{RenderError, RenderWarning, Rendered, UpstreamSchema, cache_env};
use airunway_api::resolve::DEFAULT_GPU_TYPE;
use airunway_api::serde_json::{self, Map, Value, json};
use airunway_api::storage::{self, VolumePurpose};
use airunway_api::v1alpha1::{ComponentScaling, EngineType, ModelDeployment, ServingMode};

pub mod graph;
pub mod spec_overrides;
pub mod v1alpha1;
pub mod v1beta1;

use graph::{Component, ComponentType, Graph, Mount, Sidecar};

/// The DynamoGraphDeployment version of Dynamo ≥ 1.5 (its storage version).
pub const V1BETA1: &str = "v1beta1";
/// The DynamoGraphDeployment version of Dynamo 1.1 (served, deprecated, from 1.5 on).
pub const V1ALPHA1: &str = "v1alpha1";

/// The Dynamo release whose runtime images are the defaults.
pub const DYNAMO_VERSION: &str = "1.1.1";
/// The port of the frontend Service.
pub const FRONTEND_PORT: i32 = 8000;

/// The InferencePool the Dynamo operator creates for a graph with an `epp` service:
/// `<graph>-pool` in the graph's namespace (ai-dynamo/dynamo
/// `deploy/operator/internal/dynamo/epp/inference_pool.go`, `GetPoolName`). The graph is named
/// after the deployment, so the registration's `inferencePoolNamePattern` is `{name}-pool`.
pub const POOL_NAME_PATTERN: &str = "{name}-pool";
/// The name of the endpoint picker service in the graph.
pub const EPP_SERVICE: &str = "Epp";
/// Endpoint picker variable: route to decode workers when no prefill worker exists.
pub const EPP_DECODE_FALLBACK_ENV: &str = "DYN_DECODE_FALLBACK";
/// Endpoint picker variable: require the prefill/decode split.
pub const EPP_ENFORCE_DISAGG_ENV: &str = "DYN_ENFORCE_DISAGG";

/// The image of Dynamo's endpoint picker (the frontend image carries its `dyn-*` scorers).
pub fn epp_image() -> String {
    epp_image_at(DYNAMO_VERSION)
}

/// The endpoint picker's image at Dynamo release `release`.
pub fn epp_image_at(release: &str) -> String {
    format!("nvcr.io/nvidia/ai-dynamo/dynamo-frontend:{release}")
}

/// The endpoint picker configuration (`eppConfig.config`, an EndpointPickerConfig): Dynamo's
/// decode scorer, with its prefill profile when the graph is disaggregated.
pub fn epp_config(disaggregated: bool) -> Value {
    let filter = |name: &str, value: &str, allows_no_label: bool| {
        json!({"name": name, "type": "label-filter", "parameters": {
            "label": "nvidia.com/dynamo-sub-component-type", "validValues": [value],
            "allowsNoLabel": allows_no_label}})
    };
    let profile = |name: &str, filter: &str, scorer: &str| {
        json!({"name": name, "plugins": [{"pluginRef": filter, "weight": 1},
            {"pluginRef": scorer, "weight": 1}, {"pluginRef": "picker", "weight": 1}]})
    };
    let mut plugins = vec![
        json!({"type": "disagg-profile-handler"}),
        filter("decode-filter", "decode", !disaggregated),
        json!({"name": "picker", "type": "max-score-picker"}),
        json!({"name": "dyn-decode", "type": "dyn-decode-scorer"}),
    ];
    let mut profiles = vec![profile("decode", "decode-filter", "dyn-decode")];
    if disaggregated {
        plugins.push(filter("prefill-filter", "prefill", false));
        plugins.push(json!({"name": "dyn-prefill", "type": "dyn-prefill-scorer"}));
        profiles.insert(0, profile("prefill", "prefill-filter", "dyn-prefill"));
    }
    json!({"plugins": plugins, "schedulingProfiles": profiles})
}

/// The overrides Dynamo understands (design doc §4.15).
pub const OVERRIDES: OverrideSchema = OverrideSchema::keys(&[
    (
        "routerMode",
        OverrideType::OneOf(&["kv", "round-robin", "none"]),
    ),
    (
        "frontend",
        OverrideType::Object(&[
            ("replicas", OverrideType::Count),
            (
                "resources",
                OverrideType::Object(&[
                    ("cpu", OverrideType::Quantity),
                    ("memory", OverrideType::Quantity),
                ]),
            ),
        ]),
    ),
    // The endpoint picker (with `gateway.enabled: true`), as the Go AI Runway's typed keys.
    (
        "epp",
        OverrideType::Object(&[
            ("replicas", OverrideType::Count),
            ("image", OverrideType::String),
        ]),
    ),
    // The graph's own fields, in the served version's shape ([`spec_overrides`]).
    (
        "spec",
        OverrideType::Closed {
            keys: &[
                ("services", OverrideType::Any),
                ("components", OverrideType::Any),
            ],
            what: "the graph's spec",
            whole: "would replace the graph's spec wholesale",
        },
    ),
    // Intent mode (`crate::intent`): the typed block is decoded and checked there, unknown
    // fields refused.
    (
        crate::intent::DEPLOYMENT_MODE,
        OverrideType::OneOf(&[crate::intent::MODE_MANUAL, crate::intent::MODE_INTENT]),
    ),
    (crate::intent::INTENT, OverrideType::Any),
]);

/// Flags the provider sets itself; `engine.args` may not set them.
const RESERVED_ARGS: &[&str] = &[
    "model",
    "model-path",
    "disaggregation-mode",
    "is-prefill-worker",
    "is-decode-worker",
];

/// Label carrying the model id (as a label value) on the DGD.
pub const MODEL_ID_LABEL: &str = "airunway.ai/model-id";
/// Label carrying the engine on the DGD.
pub const ENGINE_TYPE_LABEL: &str = "airunway.ai/engine-type";

/// The default runtime image of `engine` (NVIDIA names the TensorRT-LLM image
/// `tensorrtllm-runtime`).
pub fn default_image(engine: EngineType) -> String {
    default_image_at(engine, DYNAMO_VERSION)
}

/// The runtime image of `engine` at Dynamo release `release`.
pub fn default_image_at(engine: EngineType, release: &str) -> String {
    let runtime = match engine {
        EngineType::Trtllm => "tensorrtllm",
        other => other.as_str(),
    };
    format!("nvcr.io/nvidia/ai-dynamo/{runtime}-runtime:{release}")
}

/// `id` as a label value: at most 63 characters, characters other than `[A-Za-z0-9-_.]`
/// replaced by `-`, leading and trailing `-_.` trimmed.
pub fn label_value(id: &str) -> String {
    let replaced: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(63)
        .collect();
    replaced
        .trim_matches(|c| matches!(c, '-' | '_' | '.'))
        .to_string()
}

/// What `engine.args` and `engine.extraArgs` say about the boolean flag `--<on>` (negated as
/// `--<off>`, where the engine has a negation): `Some(true)` on, `Some(false)` off, `None` when
/// they do not set it. `engine.extraArgs` come last on the command line, so they win.
fn user_flag(md: &ModelDeployment, on: &str, off: Option<&str>) -> Option<bool> {
    let from_args = md
        .spec
        .engine
        .as_ref()
        .and_then(|e| e.args.as_ref())
        .and_then(|args| {
            args.get(on)
                .map(|v| v != "false")
                .or_else(|| off.and_then(|off| args.get(off)).map(|v| v == "false"))
        });
    let from_extra = md.spec.extra_args().iter().rev().find_map(|token| {
        let (flag, value) = match token.split_once('=') {
            Some((flag, value)) => (flag, Some(value)),
            None => (token.as_str(), None),
        };
        let flag = flag.strip_prefix("--")?;
        if flag == on {
            Some(value != Some("false"))
        } else if Some(flag) == off {
            Some(value == Some("false"))
        } else {
            None
        }
    });
    from_extra.or(from_args)
}

/// The flags for `engine.enablePrefixCaching` and `engine.enforceEager`, and warnings for what
/// the engine cannot take.
fn feature_flags(
    md: &ModelDeployment,
    engine: EngineType,
    warnings: &mut Vec<RenderWarning>,
) -> Vec<String> {
    let spec = &md.spec;
    let engine_spec = spec.engine.as_ref();
    let explicit_caching = engine_spec.and_then(|e| e.enable_prefix_caching);
    let explicit_eager = engine_spec.and_then(|e| e.enforce_eager);
    let mut flags = Vec::new();
    // The flags turning each feature on and off (`None`: the engine's default, or no flag), and
    // what the user's own flags say.
    let (caching_on, caching_off, caching_user) = match engine {
        EngineType::Vllm => (
            Some("--enable-prefix-caching"),
            Some("--no-enable-prefix-caching"),
            user_flag(
                md,
                "enable-prefix-caching",
                Some("no-enable-prefix-caching"),
            ),
        ),
        EngineType::Sglang => (
            None,
            Some("--disable-radix-cache"),
            user_flag(md, "disable-radix-cache", None).map(|off| !off),
        ),
        _ => (None, None, None),
    };
    let (eager_on, eager_user) = match engine {
        EngineType::Vllm => (
            Some("--enforce-eager"),
            user_flag(md, "enforce-eager", Some("no-enforce-eager")),
        ),
        EngineType::Sglang => (
            Some("--disable-cuda-graph"),
            user_flag(md, "disable-cuda-graph", None),
        ),
        _ => (None, None),
    };
    let caching = spec.prefix_caching();
    match caching_user {
        Some(user) => {
            if explicit_caching.is_some_and(|c| c != user) {
                warnings.push(ignored(format!(
                    "engine.enablePrefixCaching: {caching} is ignored: engine.args or engine.extraArgs turn prefix caching {}",
                    if user { "on" } else { "off" }
                )));
            }
        }
        None if caching_on.is_none() && caching_off.is_none() => {
            if !caching {
                warnings.push(ignored(format!(
                    "engine.enablePrefixCaching: false is ignored: the Dynamo {} worker has no flag for it (configure KV cache block reuse in the engine configuration)",
                    engine.as_str()
                )));
            }
        }
        None => {
            if let Some(flag) = if caching { caching_on } else { caching_off } {
                flags.push(flag.to_string());
            }
        }
    }
    let eager = spec.enforce_eager();
    match (eager_user, eager_on) {
        (Some(user), _) if explicit_eager.is_some_and(|e| e != user) => {
            warnings.push(ignored(format!(
                "engine.enforceEager: {eager} is ignored: engine.args or engine.extraArgs set eager mode {}",
                if user { "on" } else { "off" }
            )))
        }
        (Some(_), _) => {}
        (None, Some(flag)) if eager => flags.push(flag.to_string()),
        (None, None) if eager => warnings.push(ignored(format!(
            "engine.enforceEager is ignored: the Dynamo {} worker has no flag for it (configure CUDA graphs in the engine configuration)",
            engine.as_str()
        ))),
        _ => {}
    }
    flags
}

fn ignored(message: String) -> RenderWarning {
    RenderWarning {
        reason: event_reasons::SETTING_IGNORED,
        message,
    }
}

fn service_prefix(engine: EngineType) -> &'static str {
    match engine {
        EngineType::Vllm => "Vllm",
        EngineType::Sglang => "Sglang",
        EngineType::Trtllm => "Trtllm",
        EngineType::Llamacpp => "Llamacpp",
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Aggregated,
    Prefill,
    Decode,
}

/// The worker command line (after `python3 -m dynamo.<engine>`).
fn worker_args(
    md: &ModelDeployment,
    engine: EngineType,
    gpus: i32,
    role: Role,
    features: &[String],
) -> Result<Vec<String>, RenderError> {
    let spec = &md.spec;
    let model = spec.model.id.clone().unwrap_or_default();
    // A derived flag the user sets in `engine.args` or `engine.extraArgs` is left out: the
    // user's value wins (as the Go AI Runway's Dynamo provider and our vLLM provider), e.g.
    // `tensor-parallel-size` for a multi-node graph.
    let user_keys = user_flag_keys(md);
    let user_sets = |keys: &[&str]| user_keys.iter().any(|k| keys.contains(&k.as_str()));
    let mut args: Vec<String> = Vec::new();
    let model_flag = if engine == EngineType::Vllm {
        "--model"
    } else {
        "--model-path"
    };
    if !model.is_empty() {
        args.extend([model_flag.to_string(), model]);
    }
    if let Some(name) = spec.model.served_name.as_ref().filter(|n| !n.is_empty())
        && !user_sets(&["served-model-name"])
    {
        args.extend(["--served-model-name".to_string(), name.clone()]);
    }
    let engine_spec = spec.engine.as_ref();
    if let Some(length) = engine_spec.and_then(|e| e.context_length)
        && !user_sets(&["max-model-len", "context-length"])
    {
        match engine {
            EngineType::Vllm => args.extend(["--max-model-len".to_string(), length.to_string()]),
            EngineType::Sglang => args.extend(["--context-length".to_string(), length.to_string()]),
            _ => {}
        }
    }
    if engine_spec.and_then(|e| e.trust_remote_code) == Some(true)
        && engine != EngineType::Trtllm
        && !user_sets(&["trust-remote-code"])
    {
        args.push("--trust-remote-code".to_string());
    }
    args.extend(features.iter().cloned());
    args.extend(crate::parsers::worker_flags(md).map_err(RenderError::Unsupported)?);
    if gpus > 1 && !user_sets(&["tensor-parallel-size", "tp"]) {
        let flag = if engine == EngineType::Sglang {
            "--tp"
        } else {
            "--tensor-parallel-size"
        };
        args.extend([flag.to_string(), gpus.to_string()]);
    }
    match (role, engine) {
        (Role::Prefill, EngineType::Vllm) => args.extend([
            "--disaggregation-mode".to_string(),
            "prefill".to_string(),
            "--kv-transfer-config".to_string(),
            r#"{"kv_connector":"NixlConnector","kv_role":"kv_both"}"#.to_string(),
        ]),
        (Role::Decode, EngineType::Vllm) => {
            args.extend(["--disaggregation-mode".to_string(), "decode".to_string()])
        }
        (Role::Prefill | Role::Decode, _) => args.extend([
            "--disaggregation-mode".to_string(),
            if role == Role::Prefill {
                "prefill"
            } else {
                "decode"
            }
            .to_string(),
            "--disaggregation-transfer-backend".to_string(),
            "nixl".to_string(),
        ]),
        (Role::Aggregated, _) => {}
    }
    for (key, value) in engine_spec
        .and_then(|e| e.args.as_ref())
        .into_iter()
        .flatten()
    {
        if RESERVED_ARGS.contains(&key.as_str()) {
            return Err(RenderError::Unsupported(format!(
                "engine.args.{key} is set by the Dynamo provider from the ModelDeployment spec; remove it from engine.args"
            )));
        }
        match value.as_str() {
            "" | "true" => args.push(format!("--{key}")),
            "false" => args.push(format!("--no-{key}")),
            other => args.extend([format!("--{key}"), other.to_string()]),
        }
    }
    args.extend(md.spec.extra_args().iter().cloned());
    Ok(args)
}

/// The claims the workers mount and each worker's mounts (the Go AI Runway's mapping), from
/// [`storage::resolved_volumes`]: every claim once (the core or the user makes the claims,
/// never Dynamo), each volume mounted at its path, a `compilationCache` one marked as the
/// engine's compilation cache. Dynamo's `v1alpha1` mounts have no read-only switch.
fn storage_mounts(md: &ModelDeployment) -> (Vec<String>, Vec<Mount>) {
    let mut claims: Vec<String> = Vec::new();
    let mut mounts = Vec::new();
    for volume in storage::resolved_volumes(md) {
        if !claims.contains(&volume.claim_name) {
            claims.push(volume.claim_name.clone());
        }
        mounts.push(Mount {
            claim: volume.claim_name,
            path: volume.mount_path,
            compilation_cache: volume.purpose == VolumePurpose::CompilationCache,
        });
    }
    (claims, mounts)
}

/// The endpoint picker's environment, as the Go AI Runway sets it: an aggregated graph falls
/// back to decode-only routing (without it the picker fails to create its routers, having no
/// prefill workers); a disaggregated one enforces the prefill/decode split.
fn epp_env(mode: ServingMode) -> Vec<Value> {
    let disaggregated = mode == ServingMode::Disaggregated;
    vec![
        json!({"name": EPP_DECODE_FALLBACK_ENV, "value": (!disaggregated).to_string()}),
        json!({"name": EPP_ENFORCE_DISAGG_ENV, "value": disaggregated.to_string()}),
    ]
}

/// An override count as a replica count.
fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Renders the DynamoGraphDeployment for `md` against `schema`: the version-free
/// [`Graph`], written by the [`v1beta1`] writer on `v1beta1`, else the [`v1alpha1`] one.
pub fn render(md: &ModelDeployment, schema: &UpstreamSchema) -> Result<Rendered, RenderError> {
    let spec = &md.spec;
    let name = md.metadata.name.clone().unwrap_or_default();
    let engine = md
        .resolved_engine()
        .ok_or_else(|| RenderError::Unsupported("No engine selected yet".into()))?;
    let overrides_map: Option<&Map<String, Value>> =
        spec.provider.as_ref().and_then(|p| p.overrides.as_ref());
    // `provider.overrides` was checked against [`OVERRIDES`] by the SDK.
    let mut warnings: Vec<RenderWarning> = Vec::new();
    if engine == EngineType::Trtllm {
        let engine_spec = spec.engine.as_ref();
        if engine_spec.and_then(|e| e.context_length).is_some() {
            warnings.push(RenderWarning {
                reason: event_reasons::SETTING_IGNORED,
                message: "engine.contextLength is ignored for TensorRT-LLM: the context length is fixed when the engine is built".into(),
            });
        }
        if engine_spec.and_then(|e| e.trust_remote_code) == Some(true) {
            warnings.push(RenderWarning {
                reason: event_reasons::SETTING_IGNORED,
                message: "engine.trustRemoteCode is ignored for TensorRT-LLM (decided when the engine is built)".into(),
            });
        }
    }

    let features = feature_flags(md, engine, &mut warnings);
    let runtime = if schema.version == V1BETA1 {
        v1beta1::RUNTIME_VERSION
    } else {
        DYNAMO_VERSION
    };
    let image = spec
        .image_override()
        .map(str::to_string)
        .unwrap_or_else(|| default_image_at(engine, runtime));
    let secret = spec
        .secrets
        .as_ref()
        .and_then(|s| s.hugging_face_token.clone());

    // Asked for the inference gateway: Dynamo's operator makes the InferencePool and endpoint
    // picker (docs/gateway.md). Only on `enabled: true`, because the operator creates the pool
    // without checking that the cluster serves InferencePools.
    let gateway = spec.gateway.as_ref().and_then(|g| g.enabled) == Some(true);

    // The endpoint picker's overridable settings; the image is checked like engine.image.
    let epp_replicas = overrides::get(overrides_map, "epp.replicas")
        .and_then(Value::as_u64)
        .unwrap_or(1);
    let epp_image = match overrides::get(overrides_map, "epp.image").and_then(Value::as_str) {
        Some(image) => {
            airunway_api::image_reference::parse(image).map_err(|e| {
                RenderError::InvalidOverrides(format!(
                    "invalid provider.overrides: provider.overrides.epp.image: {image:?} is not a valid image reference: {e}"
                ))
            })?;
            image.to_string()
        }
        None => epp_image_at(runtime),
    };

    // Frontend.
    let frontend_replicas = overrides::get(overrides_map, "frontend.replicas")
        .and_then(Value::as_u64)
        .unwrap_or(1);
    let frontend_cpu = overrides::get(overrides_map, "frontend.resources.cpu")
        .and_then(Value::as_str)
        .unwrap_or("2");
    let frontend_memory = overrides::get(overrides_map, "frontend.resources.memory")
        .and_then(Value::as_str)
        .unwrap_or("4Gi");
    let router_mode = overrides::get(overrides_map, "routerMode")
        .and_then(Value::as_str)
        .unwrap_or("round-robin");
    let mut frontend = Component::new(
        "Frontend",
        ComponentType::Frontend,
        count(frontend_replicas),
        image.clone(),
    );
    frontend.env_from_secret = secret.clone();
    frontend.requests.cpu = Some(frontend_cpu.to_string());
    frontend.requests.memory = Some(frontend_memory.to_string());
    if router_mode != "none" {
        frontend.env = vec![json!({"name": "DYN_ROUTER_MODE", "value": router_mode})];
    }

    let (claims, mounts) = storage_mounts(md);
    let worker = |name: String,
                  role: Role,
                  replicas: i32,
                  gpus: i32,
                  memory: Option<String>|
     -> Result<Component, RenderError> {
        let kind = match role {
            Role::Aggregated => ComponentType::Worker,
            Role::Prefill => ComponentType::Prefill,
            Role::Decode => ComponentType::Decode,
        };
        let mut worker = Component::new(name, kind, i64::from(replicas), image.clone());
        // The Go AI Runway's shape: GPUs as limits and requests, memory and CPU as limits.
        if gpus > 0 {
            let gpu_type =
                (spec.gpu_type() != DEFAULT_GPU_TYPE).then(|| spec.gpu_type().to_string());
            for list in [&mut worker.limits, &mut worker.requests] {
                list.gpu = Some(gpus.to_string());
                list.gpu_type = gpu_type.clone();
            }
        }
        worker.limits.memory = memory;
        if role == Role::Aggregated {
            worker.limits.cpu = spec.resources.as_ref().and_then(|r| r.cpu.clone());
        }
        worker.command = vec![
            "python3".to_string(),
            "-m".to_string(),
            format!("dynamo.{}", engine.as_str()),
        ];
        worker.args = worker_args(md, engine, gpus, role, &features)?;
        worker.node_selector = spec
            .node_selector
            .as_ref()
            .filter(|s| !s.is_empty())
            .map(|s| json!(s));
        if let Some(tolerations) = spec.tolerations.as_ref().filter(|t| !t.is_empty()) {
            worker.tolerations = Some(
                serde_json::to_value(tolerations)
                    .map_err(|e| RenderError::Unsupported(e.to_string()))?,
            );
        }
        worker.env_from_secret = secret.clone();
        let env: Vec<EnvVar> = spec
            .env
            .iter()
            .flatten()
            .cloned()
            .chain(cache_env(md, None))
            .collect();
        worker.env = env
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<_, _>>()
            .map_err(|e| RenderError::Unsupported(e.to_string()))?;
        worker.mounts = mounts.clone();
        if let Some(metadata) = spec.pod_template.as_ref().and_then(|t| t.metadata.as_ref()) {
            worker.pod_labels = metadata
                .labels
                .as_ref()
                .filter(|l| !l.is_empty())
                .map(|l| json!(l));
            worker.pod_annotations = metadata
                .annotations
                .as_ref()
                .filter(|a| !a.is_empty())
                .map(|a| json!(a));
        }
        if gateway {
            // The pool's endpoints are the workers: each serves HTTP through a frontend
            // sidecar, which the aggregated graph lets route directly to its own worker.
            let mut args = vec!["-m".to_string(), "dynamo.frontend".to_string()];
            if role == Role::Aggregated {
                args.extend(["--router-mode".to_string(), "direct".to_string()]);
            }
            worker.sidecar = Some(Sidecar {
                image: image.clone(),
                args,
                env_from_secret: secret.clone(),
            });
        }
        Ok(worker)
    };

    let prefix = service_prefix(engine);
    let mut components = vec![frontend];
    if gateway {
        let mut epp = Component::new(
            EPP_SERVICE,
            ComponentType::Epp,
            count(epp_replicas),
            epp_image,
        );
        epp.env_from_secret = secret.clone();
        epp.container_env = epp_env(spec.serving_mode());
        epp.epp_config = Some(epp_config(
            spec.serving_mode() == ServingMode::Disaggregated,
        ));
        components.push(epp);
    }
    match spec.serving_mode() {
        ServingMode::Aggregated => {
            let memory = spec.resources.as_ref().and_then(|r| r.memory.clone());
            components.push(worker(
                format!("{prefix}Worker"),
                Role::Aggregated,
                spec.replicas(),
                spec.gpu_count(),
                memory,
            )?);
        }
        ServingMode::Disaggregated => {
            let scaling = spec.scaling.clone().unwrap_or_default();
            // Each role's replicas times `scaling.replicas`: the scale subresource scales the
            // graph in units of its prefill:decode ratio (0 stops both).
            let role = |c: Option<ComponentScaling>| {
                let replicas = spec.role_replicas(c.as_ref());
                let c = c.unwrap_or_default();
                (
                    replicas,
                    c.gpu.as_ref().and_then(|g| g.count).unwrap_or(0),
                    c.memory.clone(),
                )
            };
            let (replicas, gpus, memory) = role(scaling.prefill);
            components.push(worker(
                format!("{prefix}PrefillWorker"),
                Role::Prefill,
                replicas,
                gpus,
                memory,
            )?);
            let (replicas, gpus, memory) = role(scaling.decode);
            components.push(worker(
                format!("{prefix}DecodeWorker"),
                Role::Decode,
                replicas,
                gpus,
                memory,
            )?);
        }
    }
    let mut labels = Map::new();
    labels.insert(
        airunway_api::constants::labels::MODEL_DEPLOYMENT.into(),
        json!(name),
    );
    let model_id = label_value(spec.model.id.as_deref().unwrap_or_default());
    if !model_id.is_empty() {
        labels.insert(MODEL_ID_LABEL.into(), json!(model_id));
    }
    labels.insert(ENGINE_TYPE_LABEL.into(), json!(engine.as_str()));
    let graph = Graph {
        name: name.clone(),
        labels,
        backend: engine.as_str().to_string(),
        components,
        claims,
    };
    let beta = schema.version == V1BETA1;
    let mut dgd_spec = if beta {
        v1beta1::spec(&graph)
    } else {
        v1alpha1::spec(&graph)
    };
    spec_overrides::apply(&mut dgd_spec, overrides::get(overrides_map, "spec"), beta)?;
    Ok(Rendered {
        objects: vec![json!({
            "apiVersion": schema.api_version,
            "kind": "DynamoGraphDeployment",
            "metadata": {"name": graph.name, "labels": graph.labels},
            "spec": dgd_spec,
        })],
        warnings,
    })
}
