//! ModelDeployment → RayService (pure), for KubeRay 1.3 and Ray Serve LLM.
//!
//! - `spec.serveConfigV2` (YAML text): one Serve application [`APP_NAME`] at `/`, built by Ray
//!   Serve LLM's OpenAI-compatible builder on vLLM: `ray.serve.llm:build_openai_app` with one
//!   LLM config (aggregated), or `ray.serve.llm:build_pd_openai_app` with a prefill and a
//!   decode config (disaggregated, vLLM's NIXL KV connector). Each config carries the model
//!   (`model_loading_config.model_source` = `model.id`, `model_id` = `model.servedName` or
//!   `model.id`), `deployment_config.num_replicas` (`scaling.replicas`; when disaggregated, the prefill and
//!   decode replicas times `scaling.replicas`: the deployment scales in units of its ratio;
//!   0 is refused by the compatibility check, the Ray head always runs) and vLLM `engine_kwargs`: `max_model_len`
//!   (`engine.contextLength`), `trust_remote_code`, `tensor_parallel_size` (GPUs > 1), then
//!   `engine.args` in key order with `-` turned into `_` and values typed (`""`/`"true"` →
//!   true, `"false"` → false, numbers → numbers), then `enable_prefix_caching` from
//!   `engine.enablePrefixCaching` (default true) and `enforce_eager: true` from
//!   `engine.enforceEager`, unless `engine.args` set them (the user's value is kept; a field
//!   saying otherwise is reported), then the parsers (`enable_auto_tool_choice`,
//!   `tool_call_parser`, `reasoning_parser`: [`crate::parsers`]), then with `spec.adapters`
//!   `enable_lora`, `max_loras` and `max_lora_rank` unless `engine.args` set them, and the
//!   config's `lora_config` (`dynamic_lora_loading_path`, `max_num_adapters_per_replica`:
//!   [`crate::lora`]). `engine.extraArgs` are raw command-line tokens and Ray
//!   Serve LLM takes keyword arguments, not a command line: they are ignored with a warning.
//! - `headGroupSpec`: container `ray-head` (the image: `engine.image`, else the legacy
//!   `spec.image`, else [`default_image`]), the
//!   Ray ports, CPU/memory from `provider.overrides.head.resources` (defaults `"4"`, `"16Gi"`),
//!   `rayStartParams` `{dashboard-host: 0.0.0.0}` merged with `head.rayStartParams`.
//! - `workerGroupSpecs`: `gpu-workers` (aggregated) or `prefill-workers` and `decode-workers`,
//!   `replicas` = `minReplicas` = `maxReplicas`, container `ray-worker` with the GPUs
//!   (`<gpu type>: <count>`), memory (`resources.memory` or the component's, default `"32Gi"`,
//!   else `worker.resources.memory`) and CPU (`resources.cpu`, else `worker.resources.cpu`).
//! - Every Ray pod: `env`, the Hugging Face token as `HF_TOKEN` from a `secretKeyRef` to the
//!   Secret named in `secrets.huggingFaceToken` (key `HF_TOKEN`; a reference, never read),
//!   `nodeSelector`, `tolerations`, the pod labels/annotations of `podTemplate.metadata` and
//!   `airunway.ai/deployment: <name>`; every `model.storage` volume as a PVC volume mounted at
//!   its path in the Ray container (head and workers alike: vLLM runs in the workers, Serve
//!   may load on the head), `HF_HOME` at the `modelCache` volume and `VLLM_CACHE_ROOT` at the
//!   `compilationCache` volume unless `env` sets them.

use std::collections::BTreeMap;

use airunway_api::constants::{event_reasons, labels};
use airunway_api::provider::vllm_kit::render::COMPILATION_CACHE_ENV;
use airunway_api::provider::{
    RenderError, RenderWarning, Rendered, UpstreamSchema, cache_env, cache_volumes,
};
use airunway_api::resolve::DEFAULT_GPU_TYPE;
use airunway_api::serde_json::{self, Map, Value, json};
use airunway_api::v1alpha1::{ComponentScaling, ModelDeployment, ServingMode};

use crate::lora::{LORA_CONFIG, LoraPlan, lora_config};
use crate::overrides::{self, GroupOverrides};

/// The Ray release the default image and `rayVersion` are for.
pub const RAY_VERSION: &str = "2.55.0";
/// The Serve port of the `<name>-serve-svc` Service KubeRay creates.
pub const SERVE_PORT: i32 = 8000;
/// The Serve application name.
pub const APP_NAME: &str = "llm";
/// The head container name.
pub const HEAD_CONTAINER: &str = "ray-head";
/// The worker container name.
pub const WORKER_CONTAINER: &str = "ray-worker";
/// The aggregated worker group.
pub const GPU_GROUP: &str = "gpu-workers";
/// The disaggregated prefill worker group.
pub const PREFILL_GROUP: &str = "prefill-workers";
/// The disaggregated decode worker group.
pub const DECODE_GROUP: &str = "decode-workers";
/// Ray Serve LLM's OpenAI-compatible application builder.
pub const AGGREGATED_IMPORT_PATH: &str = "ray.serve.llm:build_openai_app";
/// Ray Serve LLM's prefill/decode application builder.
pub const DISAGGREGATED_IMPORT_PATH: &str = "ray.serve.llm:build_pd_openai_app";
/// Head CPU default (design doc §4.15).
pub const HEAD_CPU: &str = "4";
/// Head memory default (design doc §4.15).
pub const HEAD_MEMORY: &str = "16Gi";
/// Worker memory default (design doc §4.15).
pub const WORKER_MEMORY: &str = "32Gi";
/// Label carrying `model.source` on the RayService.
pub const MODEL_SOURCE_LABEL: &str = "airunway.ai/model-source";
/// Label carrying the engine on the RayService.
pub const ENGINE_TYPE_LABEL: &str = "airunway.ai/engine-type";

/// `engine.args` the provider sets itself from the ModelDeployment spec.
const RESERVED_ARGS: &[&str] = &[
    "model",
    "served-model-name",
    "max-model-len",
    "trust-remote-code",
    "tensor-parallel-size",
    "kv-transfer-config",
];

/// `engine.args` of the `vllm serve` HTTP server: Ray Serve's OpenAI ingress replaces that
/// server, so they have no KubeRay equivalent (a warning, not passed on).
pub const SERVER_ONLY_ARGS: &[&str] = &[
    "host",
    "port",
    "api-key",
    "root-path",
    "ssl-keyfile",
    "ssl-certfile",
    "ssl-ca-certs",
    "allowed-origins",
    "uvicorn-log-level",
];

/// The default image: Ray with Ray Serve LLM and vLLM.
pub fn default_image() -> String {
    format!("rayproject/ray-llm:{RAY_VERSION}-py311-cu128")
}

fn ignored(message: impl Into<String>) -> RenderWarning {
    RenderWarning {
        reason: event_reasons::SETTING_IGNORED,
        message: message.into(),
    }
}

fn to_value<T: airunway_api::k8s_openapi::serde::Serialize>(
    value: &T,
) -> Result<Value, RenderError> {
    serde_json::to_value(value).map_err(|e| RenderError::Unsupported(e.to_string()))
}

/// An `engine.args` value as a typed engine keyword argument.
pub fn typed_arg(value: &str) -> Value {
    match value {
        "" | "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        other => other
            .parse::<i64>()
            .map(Value::from)
            .ok()
            .or_else(|| {
                other
                    .parse::<f64>()
                    .ok()
                    .filter(|f| f.is_finite())
                    .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
            })
            .unwrap_or_else(|| Value::String(other.to_string())),
    }
}

/// The vLLM engine keyword arguments, and warnings for arguments with no equivalent.
fn engine_kwargs(
    md: &ModelDeployment,
    gpus: i32,
    lora: Option<&LoraPlan>,
    warnings: &mut Vec<RenderWarning>,
) -> Result<Map<String, Value>, RenderError> {
    let engine = md.spec.engine.as_ref();
    let mut kwargs = Map::new();
    if let Some(length) = engine.and_then(|e| e.context_length) {
        kwargs.insert("max_model_len".into(), json!(length));
    }
    if engine.and_then(|e| e.trust_remote_code) == Some(true) {
        kwargs.insert("trust_remote_code".into(), json!(true));
    }
    if gpus > 1 {
        kwargs.insert("tensor_parallel_size".into(), json!(gpus));
    }
    for (key, value) in engine.and_then(|e| e.args.as_ref()).into_iter().flatten() {
        if RESERVED_ARGS.contains(&key.as_str()) {
            return Err(RenderError::Unsupported(format!(
                "engine.args.{key} is set by the KubeRay provider from the ModelDeployment spec; remove it from engine.args"
            )));
        }
        if SERVER_ONLY_ARGS.contains(&key.as_str()) {
            let message = format!(
                "engine.args.{key} is ignored: it configures the vLLM HTTP server, which Ray Serve's OpenAI ingress replaces on KubeRay"
            );
            if !warnings.iter().any(|w| w.message == message) {
                warnings.push(ignored(message));
            }
            continue;
        }
        kwargs.insert(key.replace('-', "_"), typed_arg(value));
    }
    crate::parsers::add_engine_kwargs(md, &mut kwargs).map_err(RenderError::Unsupported)?;
    if let Some(plan) = lora
        && let Some(message) = crate::lora::add_engine_kwargs(plan, &mut kwargs)
        && !warnings.iter().any(|w| w.message == message)
    {
        warnings.push(ignored(message));
    }
    let explicit_caching = engine.and_then(|e| e.enable_prefix_caching);
    let explicit_eager = engine.and_then(|e| e.enforce_eager);
    for (kwarg, field, wanted, explicit, write_false) in [
        (
            "enable_prefix_caching",
            "enablePrefixCaching",
            md.spec.prefix_caching(),
            explicit_caching,
            true,
        ),
        (
            "enforce_eager",
            "enforceEager",
            md.spec.enforce_eager(),
            explicit_eager,
            false,
        ),
    ] {
        match kwargs.get(kwarg) {
            Some(user) if explicit.is_some_and(|e| Some(e) != user.as_bool()) => {
                let message = format!(
                    "engine.{field}: {wanted} is ignored: engine.args.{} sets {kwarg} to {user}",
                    kwarg.replace('_', "-")
                );
                if !warnings.iter().any(|w| w.message == message) {
                    warnings.push(ignored(message));
                }
            }
            Some(_) => {}
            None if wanted || write_false => {
                kwargs.insert(kwarg.into(), json!(wanted));
            }
            None => {}
        }
    }
    Ok(kwargs)
}

/// One Ray Serve LLM config.
fn llm_config(
    md: &ModelDeployment,
    replicas: i32,
    gpus: i32,
    disaggregated: bool,
    lora: Option<&LoraPlan>,
    warnings: &mut Vec<RenderWarning>,
) -> Result<Value, RenderError> {
    let model = md.spec.model.id.clone().unwrap_or_default();
    let served = crate::lora::model_id(md);
    let mut kwargs = engine_kwargs(md, gpus, lora, warnings)?;
    if disaggregated {
        kwargs.insert(
            "kv_transfer_config".into(),
            json!({"kv_connector": "NixlConnector", "kv_role": "kv_both"}),
        );
    }
    let mut config = json!({
        "model_loading_config": {"model_id": served, "model_source": model},
        "deployment_config": {"num_replicas": replicas},
        "engine_kwargs": kwargs,
    });
    if let Some(plan) = lora {
        config[LORA_CONFIG] = lora_config(plan);
    }
    Ok(config)
}

/// The `serveConfigV2` text.
fn serve_config(
    md: &ModelDeployment,
    warnings: &mut Vec<RenderWarning>,
) -> Result<String, RenderError> {
    let spec = &md.spec;
    // Refused by the compatibility check before a render; checked again so a render never
    // drops adapters silently.
    let lora = crate::lora::check(md).map_err(RenderError::Unsupported)?;
    let lora = lora.as_ref();
    let (import_path, args) = match spec.serving_mode() {
        ServingMode::Aggregated => (
            AGGREGATED_IMPORT_PATH,
            json!({"llm_configs": [llm_config(md, spec.replicas(), spec.gpu_count(), false, lora, warnings)?]}),
        ),
        ServingMode::Disaggregated => {
            let (prefill, decode) = components(md);
            (
                DISAGGREGATED_IMPORT_PATH,
                json!({
                    "prefill_config": llm_config(md, prefill.replicas, prefill.gpus, true, lora, warnings)?,
                    "decode_config": llm_config(md, decode.replicas, decode.gpus, true, lora, warnings)?,
                }),
            )
        }
    };
    let config = json!({"applications": [{
        "name": APP_NAME,
        "route_prefix": "/",
        "import_path": import_path,
        "args": args,
    }]});
    serde_saphyr::to_string(&config)
        .map_err(|e| RenderError::Unsupported(format!("cannot write serveConfigV2 as YAML: {e}")))
}

/// The sizing of one worker group.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Component {
    replicas: i32,
    gpus: i32,
    memory: Option<String>,
}

/// One role's sizing: its replicas times `scaling.replicas` (the scale subresource scales a
/// disaggregated deployment in units of its prefill:decode ratio).
fn component(md: &ModelDeployment, c: Option<&ComponentScaling>) -> Component {
    Component {
        replicas: md.spec.role_replicas(c),
        gpus: c
            .and_then(|c| c.gpu.as_ref())
            .and_then(|g| g.count)
            .unwrap_or(0),
        memory: c.and_then(|c| c.memory.clone()),
    }
}

fn components(md: &ModelDeployment) -> (Component, Component) {
    let scaling = md.spec.scaling.as_ref();
    (
        component(md, scaling.and_then(|s| s.prefill.as_ref())),
        component(md, scaling.and_then(|s| s.decode.as_ref())),
    )
}

/// The container environment: `env`, then the token reference (which replaces a user
/// `HF_TOKEN`), then `HF_HOME` and `VLLM_CACHE_ROOT` at the caches unless `env` sets them.
fn environment(md: &ModelDeployment) -> Result<Vec<Value>, RenderError> {
    md.spec
        .container_env()
        .iter()
        .chain(&cache_env(md, Some(COMPILATION_CACHE_ENV)))
        .map(to_value)
        .collect()
}

/// CPU and memory as equal requests and limits, plus extra limits (GPUs).
fn resources(cpu: Option<String>, memory: Option<String>, extra: &[(&str, String)]) -> Value {
    let mut amounts = Map::new();
    if let Some(cpu) = cpu {
        amounts.insert("cpu".into(), json!(cpu));
    }
    if let Some(memory) = memory {
        amounts.insert("memory".into(), json!(memory));
    }
    for (name, amount) in extra {
        amounts.insert((*name).to_string(), json!(amount));
    }
    if amounts.is_empty() {
        return json!({});
    }
    json!({"limits": amounts.clone(), "requests": amounts})
}

/// Everything every Ray pod of the deployment shares.
struct PodCommon {
    image: String,
    env: Vec<Value>,
    metadata: Value,
    node_selector: Option<Value>,
    tolerations: Option<Value>,
    /// The `model.storage` claims as pod volumes, and their mounts.
    volumes: (Vec<Value>, Vec<Value>),
}

impl PodCommon {
    fn new(md: &ModelDeployment) -> Result<PodCommon, RenderError> {
        let spec = &md.spec;
        let name = md.metadata.name.clone().unwrap_or_default();
        let mut pod_labels: BTreeMap<String, String> = BTreeMap::new();
        let mut annotations: BTreeMap<String, String> = BTreeMap::new();
        if let Some(metadata) = spec.pod_template.as_ref().and_then(|t| t.metadata.as_ref()) {
            pod_labels.extend(metadata.labels.clone().unwrap_or_default());
            annotations.extend(metadata.annotations.clone().unwrap_or_default());
        }
        // The label the gateway's InferencePool selects (as the Go AI Runway's core labels
        // the serve Service's pods): every Ray pod runs a Serve proxy on the serve port.
        pod_labels.insert(labels::MODEL_DEPLOYMENT.to_string(), name.clone());
        pod_labels.insert(labels::DEPLOYMENT.to_string(), name);
        let mut metadata = json!({"labels": pod_labels});
        if !annotations.is_empty() {
            metadata["annotations"] = json!(annotations);
        }
        Ok(PodCommon {
            image: spec
                .image_override()
                .map(str::to_string)
                .unwrap_or_else(default_image),
            env: environment(md)?,
            metadata,
            node_selector: spec
                .node_selector
                .as_ref()
                .filter(|s| !s.is_empty())
                .map(|s| json!(s)),
            tolerations: match spec.tolerations.as_ref().filter(|t| !t.is_empty()) {
                Some(t) => Some(to_value(t)?),
                None => None,
            },
            volumes: cache_volumes(md),
        })
    }

    fn template(&self, mut container: Value) -> Value {
        container["image"] = json!(self.image);
        if !self.env.is_empty() {
            container["env"] = json!(self.env);
        }
        let (volumes, mounts) = &self.volumes;
        if !mounts.is_empty() {
            container["volumeMounts"] = json!(mounts);
        }
        let mut pod = json!({"containers": [container]});
        if !volumes.is_empty() {
            pod["volumes"] = json!(volumes);
        }
        if let Some(selector) = &self.node_selector {
            pod["nodeSelector"] = selector.clone();
        }
        if let Some(tolerations) = &self.tolerations {
            pod["tolerations"] = tolerations.clone();
        }
        json!({"metadata": self.metadata, "spec": pod})
    }
}

fn head_group(common: &PodCommon, head: &GroupOverrides) -> Value {
    let container = json!({
        "name": HEAD_CONTAINER,
        "ports": [
            {"containerPort": 6379, "name": "gcs-server"},
            {"containerPort": 8265, "name": "dashboard"},
            {"containerPort": 10001, "name": "client"},
            {"containerPort": SERVE_PORT, "name": "serve"},
        ],
        "resources": resources(head.cpu.or(Some(HEAD_CPU)), head.memory.or(Some(HEAD_MEMORY)), &[]),
    });
    json!({
        "rayStartParams": head.ray_start_params(&[("dashboard-host", "0.0.0.0".to_string())]),
        "template": common.template(container),
    })
}

fn worker_group(
    md: &ModelDeployment,
    common: &PodCommon,
    worker: &GroupOverrides,
    name: &str,
    sizing: &Component,
    cpu: Option<String>,
) -> Value {
    let gpu_type = md.spec.gpu_type().to_string();
    let memory = sizing
        .memory
        .clone()
        .or_else(|| worker.memory.or(Some(WORKER_MEMORY)));
    let cpu = cpu.or_else(|| worker.cpu.or(None));
    let mut default_params: Vec<(&str, String)> = Vec::new();
    if gpu_type != DEFAULT_GPU_TYPE {
        // Ray detects NVIDIA GPUs itself; other accelerators are declared.
        default_params.push(("num-gpus", sizing.gpus.to_string()));
    }
    let container = json!({
        "name": WORKER_CONTAINER,
        "resources": resources(cpu, memory, &[(gpu_type.as_str(), sizing.gpus.to_string())]),
    });
    json!({
        "groupName": name,
        "replicas": sizing.replicas,
        "minReplicas": sizing.replicas,
        "maxReplicas": sizing.replicas,
        "rayStartParams": worker.ray_start_params(&default_params),
        "template": common.template(container),
    })
}

/// Warnings for settings the deployment carries that KubeRay has no place for.
fn unmapped(md: &ModelDeployment, warnings: &mut Vec<RenderWarning>) {
    let spec = &md.spec;
    if !spec.extra_args().is_empty() {
        warnings.push(ignored(format!(
            "engine.extraArgs ({}) is ignored: Ray Serve LLM takes vLLM engine keyword arguments, not a command line (set them in engine.args, e.g. kv-cache-dtype: fp8)",
            spec.extra_args().join(" ")
        )));
    }
    let scaling = spec.scaling.as_ref();
    let resources = spec.resources.as_ref();
    match spec.serving_mode() {
        ServingMode::Aggregated => {
            if scaling.is_some_and(|s| s.prefill.is_some() || s.decode.is_some()) {
                warnings.push(ignored("scaling.prefill and scaling.decode are ignored in aggregated mode on KubeRay: the gpu-workers group takes scaling.replicas and resources"));
            }
        }
        ServingMode::Disaggregated => {
            if resources.is_some_and(|r| r.cpu.is_some() || r.memory.is_some()) {
                warnings.push(ignored("resources.cpu and resources.memory are ignored in disaggregated mode on KubeRay: set scaling.prefill.memory and scaling.decode.memory (worker CPU: provider.overrides.worker.resources.cpu)"));
            }
        }
    }
}

/// Renders the RayService for `md` against `schema`.
pub fn render(md: &ModelDeployment, schema: &UpstreamSchema) -> Result<Rendered, RenderError> {
    let spec = &md.spec;
    let name = md.metadata.name.clone().unwrap_or_default();
    let parsed = overrides::parse(spec.provider.as_ref().and_then(|p| p.overrides.as_ref()));
    let mut warnings = Vec::new();
    unmapped(md, &mut warnings);
    let serve_config_v2 = serve_config(md, &mut warnings)?;
    let common = PodCommon::new(md)?;
    let workers = match spec.serving_mode() {
        ServingMode::Aggregated => {
            let sizing = Component {
                replicas: spec.replicas(),
                gpus: spec.gpu_count(),
                memory: spec.resources.as_ref().and_then(|r| r.memory.clone()),
            };
            let cpu = spec.resources.as_ref().and_then(|r| r.cpu.clone());
            vec![worker_group(
                md,
                &common,
                &parsed.worker,
                GPU_GROUP,
                &sizing,
                cpu,
            )]
        }
        ServingMode::Disaggregated => {
            let (prefill, decode) = components(md);
            vec![
                worker_group(md, &common, &parsed.worker, PREFILL_GROUP, &prefill, None),
                worker_group(md, &common, &parsed.worker, DECODE_GROUP, &decode, None),
            ]
        }
    };
    let source = match spec.model_source() {
        airunway_api::v1alpha1::ModelSource::Huggingface => "huggingface",
        airunway_api::v1alpha1::ModelSource::Custom => "custom",
    };
    let engine = md.resolved_engine().map(|e| e.as_str()).unwrap_or("vllm");
    // The RayService's own metadata carries the podTemplate's labels and annotations as well
    // (the Go AI Runway's render), except `airunway.ai/` keys, which stay AI Runway's.
    let template = spec.pod_template.as_ref().and_then(|t| t.metadata.as_ref());
    let user_keys = |map: Option<&BTreeMap<String, String>>| -> BTreeMap<String, String> {
        map.into_iter()
            .flatten()
            .filter(|(k, _)| !k.starts_with(airunway_api::constants::labels::PROPAGATED_PREFIX))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let mut own_labels = user_keys(template.and_then(|m| m.labels.as_ref()));
    own_labels.extend([
        (
            airunway_api::constants::labels::MODEL_DEPLOYMENT.to_string(),
            name.to_string(),
        ),
        (MODEL_SOURCE_LABEL.to_string(), source.to_string()),
        (ENGINE_TYPE_LABEL.to_string(), engine.to_string()),
    ]);
    let mut metadata = json!({"name": name, "labels": own_labels});
    let own_annotations = user_keys(template.and_then(|m| m.annotations.as_ref()));
    if !own_annotations.is_empty() {
        metadata["annotations"] = json!(own_annotations);
    }
    Ok(Rendered {
        objects: vec![json!({
            "apiVersion": schema.api_version,
            "kind": "RayService",
            "metadata": metadata,
            "spec": {
                "serveConfigV2": serve_config_v2,
                "rayClusterConfig": {
                    "rayVersion": RAY_VERSION,
                    "headGroupSpec": head_group(&common, &parsed.head),
                    "workerGroupSpecs": workers,
                },
            },
        })],
        warnings,
    })
}
