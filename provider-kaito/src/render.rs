//! ModelDeployment → KAITO Workspace (pure).
//!
//! - llama.cpp: the template form (design doc §4.2 example 2): one container `model` with
//!   `spec.image`, the `huggingface://<model.id>[/<file>]` argument (the GGUF file from
//!   `engine.args.model-file`), `--address=:5000`, port 5000, requests from `resources`,
//!   limits for GPUs, `env`, the Hugging Face token Secret as `envFrom` (a reference; never
//!   read), tolerations and pod labels/annotations from `podTemplate.metadata`.
//! - vLLM on GPU: the preset form, `inference.preset.name` = the lowercased last segment of
//!   `model.id` (KAITO's preset naming), `presetOptions.modelAccessSecret` = the token Secret
//!   (v1beta1). Settings a preset cannot take are reported as warnings.
//! - `resource.count` = `scaling.replicas` (0 is refused by the compatibility check);
//!   `resource.labelSelector.matchLabels` = `nodeSelector`, else `nvidia.com/gpu.present: "true"`
//!   for NVIDIA GPUs, else `kubernetes.io/os: linux`.

use std::collections::BTreeMap;

use airunway_api::constants::event_reasons;
use airunway_api::provider::{RenderError, RenderWarning, Rendered, UpstreamSchema};
use airunway_api::resolve::DEFAULT_GPU_TYPE;
use airunway_api::serde_json::{self, Value, json};
use airunway_api::v1alpha1::{EngineType, ModelDeployment};

/// The llama.cpp server port inside the pod (KAITO's Service maps port 80 to it).
pub const LLAMACPP_PORT: i32 = 5000;
/// `engine.args` key naming the GGUF file inside the Hugging Face repository.
pub const MODEL_FILE_ARG: &str = "model-file";

fn warn(message: impl Into<String>) -> RenderWarning {
    RenderWarning {
        reason: event_reasons::SETTING_IGNORED,
        message: message.into(),
    }
}

/// Renders the Workspace for `md` against `schema`.
pub fn render(md: &ModelDeployment, schema: &UpstreamSchema) -> Result<Rendered, RenderError> {
    let spec = &md.spec;
    let name = md.metadata.name.clone().unwrap_or_default();
    let mut warnings: Vec<RenderWarning> = spec
        .provider
        .as_ref()
        .and_then(|p| p.overrides.as_ref())
        .into_iter()
        .flat_map(|o| o.keys())
        .map(|key| RenderWarning {
            reason: event_reasons::UNKNOWN_OVERRIDE,
            message: format!("unknown key provider.overrides.{key} is ignored: KAITO currently has no supported overrides"),
        })
        .collect();

    let match_labels: BTreeMap<String, String> =
        match spec.node_selector.as_ref().filter(|s| !s.is_empty()) {
            Some(selector) => selector.clone(),
            None if spec.gpu_requested() && spec.gpu_type() == DEFAULT_GPU_TYPE => {
                [("nvidia.com/gpu.present".to_string(), "true".to_string())].into()
            }
            None => [("kubernetes.io/os".to_string(), "linux".to_string())].into(),
        };
    let resource =
        json!({"count": spec.replicas(), "labelSelector": {"matchLabels": match_labels}});
    let secret = spec
        .secrets
        .as_ref()
        .and_then(|s| s.hugging_face_token.clone());

    let inference = match md.resolved_engine() {
        Some(EngineType::Llamacpp) => llamacpp_template(md, secret.as_deref())?,
        Some(EngineType::Vllm) => {
            let preset_name = spec
                .model
                .id
                .as_deref()
                .and_then(|id| id.rsplit('/').next())
                .unwrap_or_default()
                .to_lowercase();
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
            if spec.image.as_deref().is_some_and(|i| !i.is_empty()) {
                warnings.push(warn(
                    "spec.image is ignored for KAITO vLLM presets: KAITO runs the preset's image",
                ));
            }
            if spec.env.as_ref().is_some_and(|e| !e.is_empty())
                || spec.tolerations.as_ref().is_some_and(|t| !t.is_empty())
                || spec.pod_template.is_some()
            {
                warnings.push(warn("env, tolerations and podTemplate.metadata are not supported by KAITO vLLM presets and are ignored"));
            }
            json!({"preset": preset})
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
    Ok(Rendered {
        object: json!({
            "apiVersion": schema.api_version,
            "kind": "Workspace",
            "metadata": {"name": name, "labels": {"airunway.ai/model-source": source}},
            "resource": resource,
            "inference": inference,
        }),
        warnings,
    })
}

fn llamacpp_template(md: &ModelDeployment, secret: Option<&str>) -> Result<Value, RenderError> {
    let spec = &md.spec;
    let engine_args = spec
        .engine
        .as_ref()
        .and_then(|e| e.args.clone())
        .unwrap_or_default();
    let mut model = match spec.model.id.as_deref() {
        Some(id) if !id.is_empty() => format!("huggingface://{id}"),
        _ => String::new(),
    };
    if let Some(file) = engine_args.get(MODEL_FILE_ARG) {
        model = format!("{model}/{file}");
    }
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
        .filter(|(k, _)| k.as_str() != MODEL_FILE_ARG)
    {
        args.push(format!("--{key}"));
        args.push(value.clone());
    }
    let resources = spec.resources.as_ref();
    let mut requests = serde_json::Map::new();
    if let Some(memory) = resources.and_then(|r| r.memory.clone()) {
        requests.insert("memory".into(), json!(memory));
    }
    if let Some(cpu) = resources.and_then(|r| r.cpu.clone()) {
        requests.insert("cpu".into(), json!(cpu));
    }
    let mut container = json!({
        "name": "model",
        "image": spec.image,
        "args": args,
        "ports": [{"containerPort": LLAMACPP_PORT}],
        "resources": {"requests": requests},
    });
    if spec.gpu_count() > 0 {
        container["resources"]["limits"] = json!({spec.gpu_type(): spec.gpu_count().to_string()});
    }
    if let Some(env) = spec.env.as_ref().filter(|e| !e.is_empty()) {
        container["env"] =
            serde_json::to_value(env).map_err(|e| RenderError::Unsupported(e.to_string()))?;
    }
    if let Some(secret) = secret {
        container["envFrom"] = json!([{"secretRef": {"name": secret}}]);
    }
    let mut template = json!({"spec": {"containers": [container]}});
    if let Some(tolerations) = spec.tolerations.as_ref().filter(|t| !t.is_empty()) {
        template["spec"]["tolerations"] = serde_json::to_value(tolerations)
            .map_err(|e| RenderError::Unsupported(e.to_string()))?;
    }
    if let Some(metadata) = spec.pod_template.as_ref().and_then(|t| t.metadata.as_ref()) {
        let mut meta = json!({});
        if let Some(labels) = metadata.labels.as_ref().filter(|l| !l.is_empty()) {
            meta["labels"] = json!(labels);
        }
        if let Some(annotations) = metadata.annotations.as_ref().filter(|a| !a.is_empty()) {
            meta["annotations"] = json!(annotations);
        }
        if meta.as_object().is_some_and(|m| !m.is_empty()) {
            template["metadata"] = meta;
        }
    }
    Ok(json!({"template": template}))
}
