//! ModelDeployment → KAITO Workspace (pure).
//!
//! - llama.cpp: the template form (design doc §4.2 example 2): one container `model` with the
//!   image (`engine.image`, else the legacy `spec.image`), the
//!   model argument (none for `source: custom`; `engine.args.ggufUrl` verbatim when set; else
//!   `huggingface://<model.id>[/<file>]`, the GGUF file from `engine.args.model-file`),
//!   `--address=:5000`, `--ctx-size`, the other `engine.args`, then `engine.extraArgs`
//!   verbatim; port 5000, requests from `resources`, limits for GPUs, `env`, the Hugging Face
//!   token as `HF_TOKEN` from the Secret's `HF_TOKEN` key (a reference; never read),
//!   tolerations; the pod template's
//!   labels are `podTemplate.metadata.labels` plus `airunway.ai/model-deployment: <name>`, its
//!   annotations `podTemplate.metadata.annotations`. llama.cpp has no switch for
//!   `engine.enablePrefixCaching: false` or `engine.enforceEager` (warnings).
//! - vLLM on GPU: the preset form, `inference.preset.name` = `model.id` verbatim (a Hugging
//!   Face id or a built-in preset name), `presetOptions.modelAccessSecret` = the token Secret
//!   (v1beta1). KAITO builds the preset's pods itself: settings it cannot take (image, engine
//!   args and flags, env, tolerations) are reported as warnings, and `podTemplate.metadata`
//!   reaches the Workspace only (a warning says so). `spec.adapters` from `pvc://<claim>`
//!   become `inference.adapters` with the claim as `volumeSource` (docs/lora.md).
//! - `resource.count` = `scaling.replicas` (0 is refused by the compatibility check);
//!   `resource.instanceType` under node auto-provisioning (the provider's GPU or CPU instance
//!   type, `--gpu-instance-type`/`--cpu-instance-type`);
//!   `resource.labelSelector.matchLabels` = `nodeSelector` plus, always, `kubernetes.io/os:
//!   linux` and, for NVIDIA GPU workloads, `nvidia.com/gpu.present: "true"` (a node selector
//!   cannot replace them; a conflicting value is reported).
//! - Workspace labels: `podTemplate.metadata.labels` (except `airunway.ai/` keys), then
//!   `airunway.ai/model-source`, `airunway.ai/engine-type`, `airunway.ai/model-deployment`;
//!   annotations: `podTemplate.metadata.annotations` (the Go AI Runway's Workspace metadata).

use std::collections::BTreeMap;

use airunway_api::constants::event_reasons;
use airunway_api::provider::overrides::{self, OverrideSchema, OverrideType};
use airunway_api::provider::{RenderError, RenderWarning, Rendered, UpstreamSchema};
use airunway_api::resolve::DEFAULT_GPU_TYPE;
use airunway_api::serde_json::{self, Value, json};
use airunway_api::v1alpha1::{EngineType, ModelDeployment, ModelSource};

/// The llama.cpp server port inside the pod (KAITO's Service maps port 80 to it).
pub const LLAMACPP_PORT: i32 = 5000;
/// The container of the llama.cpp pod template.
pub const TEMPLATE_CONTAINER: &str = "model";
/// `engine.args` key naming the GGUF file inside the Hugging Face repository.
pub const MODEL_FILE_ARG: &str = "model-file";
/// `engine.args` key naming the GGUF file's URL: the llama.cpp model argument, verbatim (the Go
/// AI Runway's key).
pub const GGUF_URL_ARG: &str = "ggufUrl";
/// Label carrying `model.source` on the Workspace.
pub const MODEL_SOURCE_LABEL: &str = "airunway.ai/model-source";
/// Label carrying the engine on the Workspace.
pub const ENGINE_TYPE_LABEL: &str = "airunway.ai/engine-type";
/// Node label of Linux nodes.
pub const OS_LABEL: &str = "kubernetes.io/os";
/// Node label NVIDIA's GPU feature discovery puts on GPU nodes.
pub const GPU_PRESENT_LABEL: &str = "nvidia.com/gpu.present";

/// The Workspace's node label selector: the user's `nodeSelector` with `kubernetes.io/os:
/// linux` and, for an NVIDIA GPU workload, `nvidia.com/gpu.present: "true"` forced (a
/// conflicting user value is replaced and reported).
pub fn node_labels(
    md: &ModelDeployment,
    warnings: &mut Vec<RenderWarning>,
) -> BTreeMap<String, String> {
    let spec = &md.spec;
    let mut labels = spec.node_selector.clone().unwrap_or_default();
    let mut forced = vec![(OS_LABEL, "linux")];
    if spec.gpu_requested() && spec.gpu_type() == DEFAULT_GPU_TYPE {
        forced.push((GPU_PRESENT_LABEL, "true"));
    }
    for (key, value) in forced {
        if let Some(user) = labels.get(key).filter(|v| v.as_str() != value) {
            warnings.push(warn(format!(
                "nodeSelector.{key}: {user:?} is replaced by {value:?}: KAITO workloads run on {}",
                if key == OS_LABEL {
                    "Linux nodes"
                } else {
                    "NVIDIA GPU nodes"
                }
            )));
        }
        labels.insert(key.to_string(), value.to_string());
    }
    labels
}

fn warn(message: impl Into<String>) -> RenderWarning {
    RenderWarning {
        reason: event_reasons::SETTING_IGNORED,
        message: message.into(),
    }
}

/// The overrides KAITO takes, typed, of those the Go AI Runway merges into the Workspace: the
/// Workspace's `resource.instanceType` and node labels (`resource.labelSelector.matchLabels`, a
/// JSON `null` deleting a default such as `nvidia.com/gpu.present`), the KAITO inference
/// ConfigMap (`inference.config`) and the vLLM preset's `modelAccessSecret`. `resource.count` is
/// `scaling.replicas`.
pub const OVERRIDES: OverrideSchema = OverrideSchema::keys(&[
    (
        "resource",
        OverrideType::Object(&[
            (
                "count",
                OverrideType::Refused(
                    "is set from scaling.replicas (set scaling.replicas instead)",
                ),
            ),
            ("instanceType", OverrideType::String),
            (
                "labelSelector",
                OverrideType::Object(&[("matchLabels", OverrideType::StringMap)]),
            ),
        ]),
    ),
    (
        "inference",
        OverrideType::Object(&[
            ("config", OverrideType::String),
            (
                "preset",
                OverrideType::Object(&[(
                    "presetOptions",
                    OverrideType::Object(&[("modelAccessSecret", OverrideType::String)]),
                )]),
            ),
        ]),
    ),
])
.nulls_delete_defaults();

/// Renders the Workspace for `md` against `schema`.
pub fn render(
    md: &ModelDeployment,
    schema: &UpstreamSchema,
    node_provisioning: Option<&crate::NodeProvisioning>,
) -> Result<Rendered, RenderError> {
    let spec = &md.spec;
    let name = md.metadata.name.clone().unwrap_or_default();
    // `provider.overrides` was checked against [`OVERRIDES`] by the SDK; merged last.
    let mut warnings: Vec<RenderWarning> = Vec::new();

    let match_labels = node_labels(md, &mut warnings);
    let mut resource =
        json!({"count": spec.replicas(), "labelSelector": {"matchLabels": match_labels}});
    // Under node auto-provisioning, the instance type KAITO creates nodes of (as the Go AI
    // Runway: the GPU type for GPU deployments, the CPU type otherwise; none when unset).
    if let Some(instance_type) = node_provisioning.and_then(|n| {
        if spec.gpu_requested() {
            n.gpu_instance_type.as_deref()
        } else {
            n.cpu_instance_type.as_deref()
        }
    }) {
        resource["instanceType"] = json!(instance_type);
    }
    let secret = spec
        .secrets
        .as_ref()
        .and_then(|s| s.hugging_face_token.clone());

    let inference = match md.resolved_engine() {
        Some(EngineType::Llamacpp) => llamacpp_template(md, &mut warnings)?,
        Some(EngineType::Vllm) => {
            // `model.id` verbatim, as the Go AI Runway: KAITO takes a Hugging Face id as a
            // preset name and builds the preset from the model card (a built-in preset is
            // named by writing its name as `model.id`).
            let preset_name = spec.model.id.clone().unwrap_or_default();
            let mut preset = json!({"name": preset_name});
            match (secret, schema.version.as_str()) {
                (Some(secret), "v1beta1") => {
                    preset["presetOptions"] = json!({"modelAccessSecret": secret})
                }
                (Some(_), _) => warnings.push(warn(format!(
                    "secrets.huggingFaceToken is ignored: the KAITO {} API has no field for it",
                    schema.api_version
                ))),
                (None, _) => {}
            }
            let engine = spec.engine.as_ref();
            if engine.is_some_and(|e| {
                e.args.as_ref().is_some_and(|a| !a.is_empty())
                    || e.context_length.is_some()
                    || e.trust_remote_code == Some(true)
            }) {
                warnings.push(warn("engine.args, engine.contextLength and engine.trustRemoteCode are not passed to KAITO vLLM presets (configure them in a KAITO inference ConfigMap)"));
            }
            if !spec.prefix_caching() {
                warnings.push(warn("engine.enablePrefixCaching: false is ignored: KAITO vLLM presets keep vLLM's prefix caching on (configure it in a KAITO inference ConfigMap)"));
            }
            if spec.enforce_eager() {
                warnings.push(warn("engine.enforceEager is ignored: KAITO vLLM presets take no vLLM flags (configure it in a KAITO inference ConfigMap)"));
            }
            if !spec.extra_args().is_empty() {
                warnings.push(warn(format!(
                    "engine.extraArgs ({}) is ignored: KAITO vLLM presets take no command line (configure them in a KAITO inference ConfigMap)",
                    spec.extra_args().join(" ")
                )));
            }
            if spec.image_override().is_some() {
                warnings.push(warn(
                    "engine.image (or spec.image) is ignored for KAITO vLLM presets: KAITO runs the preset's image",
                ));
            }
            if spec.env.as_ref().is_some_and(|e| !e.is_empty())
                || spec.tolerations.as_ref().is_some_and(|t| !t.is_empty())
            {
                warnings.push(warn(
                    "env and tolerations are not supported by KAITO vLLM presets and are ignored",
                ));
            }
            if pod_metadata(md).is_some() {
                warnings.push(warn("podTemplate.metadata labels and annotations are set on the Workspace only: KAITO builds the preset's pods itself and gives them none of them"));
            }
            let mut inference = json!({"preset": preset});
            let adapters = adapters(md, &mut warnings);
            if !adapters.is_empty() {
                inference["adapters"] = json!(adapters);
            }
            inference
        }
        other => {
            return Err(RenderError::Unsupported(format!(
                "KAITO cannot render engine {}",
                other.map(|e| e.as_str()).unwrap_or("(none)")
            )));
        }
    };
    let source = match spec.model_source() {
        airunway_api::v1alpha1::ModelSource::Huggingface => "huggingface",
        airunway_api::v1alpha1::ModelSource::Custom => "custom",
    };
    let (pod_labels, pod_annotations) = pod_metadata(md).unwrap_or_default();
    let mut labels: BTreeMap<String, String> = pod_labels
        .into_iter()
        .filter(|(k, _)| !k.starts_with(airunway_api::constants::labels::PROPAGATED_PREFIX))
        .collect();
    labels.insert(MODEL_SOURCE_LABEL.into(), source.into());
    if let Some(engine) = md.resolved_engine() {
        labels.insert(ENGINE_TYPE_LABEL.into(), engine.as_str().into());
    }
    labels.insert(
        airunway_api::constants::labels::MODEL_DEPLOYMENT.into(),
        name.clone(),
    );
    let mut metadata = json!({"name": name, "labels": labels});
    if !pod_annotations.is_empty() {
        metadata["annotations"] = json!(pod_annotations);
    }
    let mut workspace = json!({
        "apiVersion": schema.api_version,
        "kind": "Workspace",
        "metadata": metadata,
        "resource": resource,
        "inference": inference,
    });
    apply_overrides(md, &mut workspace)?;
    Ok(Rendered {
        objects: vec![workspace],
        warnings,
    })
}

/// vLLM's default `--max-lora-rank`, which a KAITO preset keeps unless its inference
/// ConfigMap sets another.
pub const KAITO_DEFAULT_LORA_RANK: i32 = 16;

/// `inference.adapters` of a vLLM preset: each `pvc://<claim>` adapter (the only source the
/// compatibility check lets through) as `{source: {name, volumeSource: {persistentVolumeClaim:
/// {claimName, readOnly: true}}}}`; KAITO mounts it at `/mnt/adapter/<name>` and its vLLM
/// server serves it under that name. A `maxRank` above vLLM's default is reported: a preset
/// takes no flags, `max-lora-rank` goes in a KAITO inference ConfigMap.
fn adapters(md: &ModelDeployment, warnings: &mut Vec<RenderWarning>) -> Vec<Value> {
    let adapters = md.spec.lora_adapters();
    if let Some(rank) = airunway_api::lora::vllm_max_lora_rank(adapters)
        .filter(|rank| *rank > KAITO_DEFAULT_LORA_RANK)
    {
        warnings.push(warn(format!(
            "spec.adapters maxRank needs vLLM's max-lora-rank {rank}, which a KAITO vLLM preset takes only from its inference ConfigMap (max-lora-rank: {rank})"
        )));
    }
    adapters
        .iter()
        .filter_map(|adapter| match airunway_api::lora::parse_source(&adapter.source) {
            Ok(airunway_api::lora::AdapterSource::Pvc { claim, .. }) => Some(json!({"source": {
                "name": adapter.name,
                "volumeSource": {"persistentVolumeClaim": {"claimName": claim, "readOnly": true}},
            }})),
            _ => None,
        })
        .collect()
}

/// Sets the checked [`OVERRIDES`] on the Workspace (only the declared keys: an unknown key is
/// reported by the SDK and never reaches the object), as the Go AI Runway merges them.
fn apply_overrides(md: &ModelDeployment, workspace: &mut Value) -> Result<(), RenderError> {
    let map = md.spec.provider.as_ref().and_then(|p| p.overrides.as_ref());
    if let Some(instance_type) = overrides::get(map, "resource.instanceType") {
        set_or_delete(&mut workspace["resource"], "instanceType", instance_type);
    }
    if let Some(Value::Object(labels)) = overrides::get(map, "resource.labelSelector.matchLabels") {
        for (key, value) in labels {
            set_or_delete(
                &mut workspace["resource"]["labelSelector"]["matchLabels"],
                key,
                value,
            );
        }
    }
    if let Some(config) = overrides::get(map, "inference.config") {
        set_or_delete(&mut workspace["inference"], "config", config);
    }
    if let Some(secret) = overrides::get(map, "inference.preset.presetOptions.modelAccessSecret") {
        if workspace["inference"].get("preset").is_none() {
            return Err(RenderError::InvalidOverrides(
                "invalid provider.overrides: provider.overrides.inference.preset applies to vLLM presets only; the llamacpp engine runs a template".to_string(),
            ));
        }
        set_or_delete(
            &mut workspace["inference"]["preset"]["presetOptions"],
            "modelAccessSecret",
            secret,
        );
    }
    Ok(())
}

/// Sets `key` of the object `target` to `value`, or deletes it for a JSON `null`.
fn set_or_delete(target: &mut Value, key: &str, value: &Value) {
    if value.is_null() {
        if let Some(object) = target.as_object_mut() {
            object.remove(key);
        }
    } else {
        target[key] = value.clone();
    }
}

/// `podTemplate.metadata` labels and annotations, when either is set.
fn pod_metadata(
    md: &ModelDeployment,
) -> Option<(BTreeMap<String, String>, BTreeMap<String, String>)> {
    let metadata = md.spec.pod_template.as_ref()?.metadata.as_ref()?;
    let labels = metadata.labels.clone().unwrap_or_default();
    let annotations = metadata.annotations.clone().unwrap_or_default();
    (!labels.is_empty() || !annotations.is_empty()).then_some((labels, annotations))
}

fn llamacpp_template(
    md: &ModelDeployment,
    warnings: &mut Vec<RenderWarning>,
) -> Result<Value, RenderError> {
    let spec = &md.spec;
    if !spec.prefix_caching() {
        warnings.push(warn("engine.enablePrefixCaching: false is ignored: the llama.cpp server has no switch for it (clients turn prompt caching off per request with cache_prompt: false)"));
    }
    if spec.enforce_eager() {
        warnings.push(warn(
            "engine.enforceEager is ignored: it is a vLLM setting with no llama.cpp equivalent",
        ));
    }
    let engine_args = spec
        .engine
        .as_ref()
        .and_then(|e| e.args.clone())
        .unwrap_or_default();
    // The model argument, as the Go AI Runway: none for a model in the image (`source:
    // custom`); `engine.args.ggufUrl` verbatim when given; else `huggingface://<model.id>`
    // (here with the GGUF file of `engine.args.model-file` appended).
    let model = if spec.model_source() == ModelSource::Custom {
        String::new()
    } else if let Some(url) = engine_args.get(GGUF_URL_ARG) {
        url.clone()
    } else {
        let mut model = match spec.model.id.as_deref() {
            Some(id) if !id.is_empty() => format!("huggingface://{id}"),
            _ => String::new(),
        };
        if let Some(file) = engine_args.get(MODEL_FILE_ARG) {
            model = format!("{model}/{file}");
        }
        model
    };
    let mut args: Vec<String> = Vec::new();
    if !model.is_empty() {
        args.push(model);
    }
    args.push(format!("--address=:{LLAMACPP_PORT}"));
    if let Some(length) = spec.engine.as_ref().and_then(|e| e.context_length) {
        args.push("--ctx-size".into());
        args.push(length.to_string());
    }
    for (key, value) in engine_args
        .iter()
        .filter(|(k, _)| k.as_str() != MODEL_FILE_ARG && k.as_str() != GGUF_URL_ARG)
    {
        args.push(format!("--{key}"));
        args.push(value.clone());
    }
    args.extend(spec.extra_args().iter().cloned());
    let resources = spec.resources.as_ref();
    let mut requests = serde_json::Map::new();
    if let Some(memory) = resources.and_then(|r| r.memory.clone()) {
        requests.insert("memory".into(), json!(memory));
    }
    if let Some(cpu) = resources.and_then(|r| r.cpu.clone()) {
        requests.insert("cpu".into(), json!(cpu));
    }
    let mut container = json!({
        "name": TEMPLATE_CONTAINER,
        "image": spec.image_override(),
        "args": args,
        "ports": [{"containerPort": LLAMACPP_PORT}],
        "resources": {"requests": requests},
    });
    if spec.gpu_count() > 0 {
        container["resources"]["limits"] = json!({spec.gpu_type(): spec.gpu_count().to_string()});
    }
    // The user's env, then the token by reference to the Secret's `HF_TOKEN` key.
    let env = spec.container_env();
    if !env.is_empty() {
        container["env"] =
            serde_json::to_value(env).map_err(|e| RenderError::Unsupported(e.to_string()))?;
    }
    let mut template = json!({"spec": {"containers": [container]}});
    if let Some(tolerations) = spec.tolerations.as_ref().filter(|t| !t.is_empty()) {
        template["spec"]["tolerations"] = serde_json::to_value(tolerations)
            .map_err(|e| RenderError::Unsupported(e.to_string()))?;
    }
    let (mut pod_labels, pod_annotations) = pod_metadata(md).unwrap_or_default();
    pod_labels.insert(
        airunway_api::constants::labels::MODEL_DEPLOYMENT.into(),
        md.metadata.name.clone().unwrap_or_default(),
    );
    template["metadata"] = json!({"labels": pod_labels});
    if !pod_annotations.is_empty() {
        template["metadata"]["annotations"] = json!(pod_annotations);
    }
    Ok(json!({"template": template}))
}
