//! A vLLM serving component as a Deployment and a Service (pure).
//!
//! - Deployment `<component name>`: `replicas`; selector `{airunway.ai/deployment: <md>, app:
//!   <component name>}`; pod labels: `podTemplate.metadata.labels`, the component's own labels,
//!   `airunway.ai/model-deployment: <md>` (what the gateway's InferencePool selects) and the
//!   two selector labels (re-applied last, so a pod label cannot break the selector); pod
//!   annotations from `podTemplate.metadata.annotations`; `nodeSelector`, `tolerations`. The
//!   Deployment's own labels: `podTemplate.metadata.labels` without `airunway.ai/` keys, then
//!   the model-source and engine-type labels; its annotations: `podTemplate.metadata.annotations`
//!   without `airunway.ai/` keys. The Service carries only the latter two labels.
//! - Container `vllm`: the image given, port `http` 8000/TCP, GPUs (`<gpu type>: N`) and memory
//!   as limits and requests, CPU as a request; [`vllm_args`]; HTTP probes on `/health`
//!   (startup 15 s/10 s/60, liveness 15 s/10 s/3, readiness 15 s/5 s/3: initial delay,
//!   period, failure threshold); `env` (user `HF_TOKEN` dropped when the secret is set) then
//!   `HF_TOKEN` from a `secretKeyRef` to `secrets.huggingFaceToken` (key `HF_TOKEN`: a
//!   reference, never read), then `HF_HOME` at the `modelCache` volume and `VLLM_CACHE_ROOT`
//!   at the `compilationCache` volume unless the user's `env` sets them; `/dev/shm` as a memory
//!   `emptyDir` (20Gi) with more than one GPU; every `model.storage` volume as a PVC volume
//!   mounted at its path (`storage::resolved_volumes`: the user's claim, the managed
//!   `<md>-<volume>` or the shared cache's).
//! - Service `<component name>`: ClusterIP, the same selector, port `http` 8000 → `http`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::provider::cache_mounts::{cache_env, cache_volumes};
use crate::v1alpha1::{EngineType, ModelDeployment, ModelSource};

/// The container name.
pub const CONTAINER: &str = "vllm";
/// The port vLLM serves on, and the Service's.
pub const PORT: i32 = 8000;
/// The port name.
pub const PORT_NAME: &str = "http";
/// The health endpoint.
pub const HEALTH_PATH: &str = "/health";
/// The per-component selector label (its value: the component's object name).
pub const APP_LABEL: &str = "app";
/// The model source label on the objects.
pub const MODEL_SOURCE_LABEL: &str = "airunway.ai/model-source";
/// The engine label on the objects.
pub const ENGINE_TYPE_LABEL: &str = "airunway.ai/engine-type";
/// The size of the `/dev/shm` memory volume with more than one GPU.
pub const SHM_SIZE: &str = "20Gi";
/// vLLM's cache directory (compiled graphs and kernels), set to the `compilationCache`
/// volume's mount path.
pub const COMPILATION_CACHE_ENV: &str = "VLLM_CACHE_ROOT";

/// One serving component: the aggregated server, or the prefill or decode workers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Component {
    /// Object name of its Deployment and Service.
    pub name: String,
    /// Replicas.
    pub replicas: i32,
    /// GPUs per replica.
    pub gpus: i32,
    /// The GPU extended resource name.
    pub gpu_type: String,
    /// Memory (limit and request).
    pub memory: Option<String>,
    /// CPU (request).
    pub cpu: Option<String>,
    /// Arguments of this component (e.g. a KV-transfer role), after the derived flags and
    /// before `engine.args`.
    pub args: Vec<String>,
    /// Pod labels of this component (e.g. its role), besides the shared ones.
    pub pod_labels: BTreeMap<String, String>,
    /// What it does for the deployment: [`AGGREGATED_ROLE`], `prefill` or `decode` (its
    /// `role` in `status.workload.workloads`).
    pub role: String,
}

/// The role of the one component of an aggregated deployment.
pub const AGGREGATED_ROLE: &str = "aggregated";

impl Component {
    /// The aggregated component of `md`, named after it.
    pub fn aggregated(md: &ModelDeployment) -> Component {
        let spec = &md.spec;
        let resources = spec.resources.as_ref();
        Component {
            name: md.metadata.name.clone().unwrap_or_default(),
            replicas: spec.replicas(),
            gpus: spec.gpu_count(),
            gpu_type: spec.gpu_type().to_string(),
            memory: resources.and_then(|r| r.memory.clone()),
            cpu: resources.and_then(|r| r.cpu.clone()),
            args: Vec::new(),
            pod_labels: BTreeMap::new(),
            role: AGGREGATED_ROLE.to_string(),
        }
    }
}

/// How a provider wants the vLLM command line built (the default is llm-d's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArgsStyle {
    /// Arguments before everything else (e.g. `--host 0.0.0.0 --port 8000`).
    pub leading: Vec<String>,
    /// Write `--enable-prefix-caching` only when on (no `--no-enable-prefix-caching`).
    pub prefix_caching_only_when_on: bool,
    /// Leave out a derived flag whose key the user sets in `engine.args` or as a
    /// `--key`/`--key=value` token of `engine.extraArgs` (the user's value wins).
    pub user_keys_win: bool,
}

/// The flag keys (without dashes) the user sets: `engine.args` keys and the `--key` /
/// `--key=value` tokens of `engine.extraArgs`.
pub fn user_flag_keys(md: &ModelDeployment) -> Vec<String> {
    let engine = md.spec.engine.as_ref();
    let mut keys: Vec<String> = engine
        .and_then(|e| e.args.as_ref())
        .into_iter()
        .flatten()
        .map(|(k, _)| k.trim_start_matches('-').to_string())
        .collect();
    keys.extend(md.spec.extra_args().iter().filter_map(|token| {
        let key = token.strip_prefix("--")?;
        Some(key.split_once('=').map_or(key, |(k, _)| k).to_string())
    }));
    keys
}

/// The vLLM command line after the image's entrypoint, llm-d's way ([`vllm_args_with`] and the
/// default [`ArgsStyle`]).
pub fn vllm_args(md: &ModelDeployment, component: &Component) -> Vec<String> {
    vllm_args_with(md, component, &ArgsStyle::default())
}

/// The vLLM command line: `style.leading`, `--model`, `--served-model-name` (only when
/// `model.servedName` is set: vLLM then serves the model under `model.id`, the name the gateway
/// routes on, as the Go AI Runway does),
/// `--max-model-len`, `--trust-remote-code`, `--enable-prefix-caching` or
/// `--no-enable-prefix-caching`, `--enforce-eager`, `--tensor-parallel-size` (more than one
/// GPU), the parser flags ([`super::parsers`]), the component's arguments, `engine.args` in key order (`""`/`"true"` → `--key`,
/// `"false"` → `--no-key`, else `--key value`), then `engine.extraArgs` verbatim.
pub fn vllm_args_with(
    md: &ModelDeployment,
    component: &Component,
    style: &ArgsStyle,
) -> Vec<String> {
    let spec = &md.spec;
    let engine = spec.engine.as_ref();
    let user_keys = if style.user_keys_win {
        user_flag_keys(md)
    } else {
        Vec::new()
    };
    let mut args: Vec<String> = style.leading.clone();
    let mut derived = |key: &str, value: Option<String>| {
        if user_keys.iter().any(|k| k == key) {
            return;
        }
        args.push(format!("--{key}"));
        args.extend(value);
    };
    if let Some(id) = spec.model.id.as_ref().filter(|id| !id.is_empty()) {
        derived("model", Some(id.clone()));
    }
    if let Some(name) = spec.model.served_name.as_ref().filter(|n| !n.is_empty()) {
        derived("served-model-name", Some(name.clone()));
    }
    if let Some(length) = engine.and_then(|e| e.context_length) {
        derived("max-model-len", Some(length.to_string()));
    }
    if engine.and_then(|e| e.trust_remote_code) == Some(true) {
        derived("trust-remote-code", None);
    }
    if spec.prefix_caching() {
        derived("enable-prefix-caching", None);
    } else if !style.prefix_caching_only_when_on {
        derived("no-enable-prefix-caching", None);
    }
    if spec.enforce_eager() {
        derived("enforce-eager", None);
    }
    if component.gpus > 1 {
        derived("tensor-parallel-size", Some(component.gpus.to_string()));
    }
    super::parsers::derived_flags(md)
        .into_iter()
        .for_each(|(k, v)| derived(k, v));
    args.extend(super::lora::args(md, &user_keys));
    args.extend(component.args.iter().cloned());
    for (key, value) in engine.and_then(|e| e.args.as_ref()).into_iter().flatten() {
        match value.as_str() {
            "" | "true" => args.push(format!("--{key}")),
            "false" => args.push(format!("--no-{key}")),
            other => args.extend([format!("--{key}"), other.to_string()]),
        }
    }
    args.extend(spec.extra_args().iter().cloned());
    args
}

/// The labels on every object of `md`: model source and engine.
pub fn object_labels(md: &ModelDeployment) -> BTreeMap<String, String> {
    let source = match md.spec.model_source() {
        ModelSource::Huggingface => "huggingface",
        ModelSource::Custom => "custom",
    };
    let mut labels = BTreeMap::from([(MODEL_SOURCE_LABEL.to_string(), source.to_string())]);
    let engine = md.resolved_engine().unwrap_or(EngineType::Vllm);
    labels.insert(ENGINE_TYPE_LABEL.to_string(), engine.as_str().to_string());
    labels
}

/// The selector of a component's pods.
pub fn selector(md: &ModelDeployment, component: &Component) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            crate::constants::labels::DEPLOYMENT.to_string(),
            md.metadata.name.clone().unwrap_or_default(),
        ),
        (APP_LABEL.to_string(), component.name.clone()),
    ])
}

fn probe(initial_delay: i32, period: i32, failure_threshold: i32) -> Value {
    json!({"httpGet": {"path": HEALTH_PATH, "port": PORT_NAME},
           "initialDelaySeconds": initial_delay, "periodSeconds": period,
           "failureThreshold": failure_threshold})
}

/// The container's environment: the deployment's ([`container_env`]), then [`cache_env`]
/// (`HF_HOME` and [`COMPILATION_CACHE_ENV`] at the caches, unless the user sets them).
///
/// [`container_env`]: crate::v1alpha1::ModelDeploymentSpec::container_env
fn env(md: &ModelDeployment) -> Vec<Value> {
    md.spec
        .container_env()
        .iter()
        .chain(&cache_env(md, Some(COMPILATION_CACHE_ENV)))
        .filter_map(|var| serde_json::to_value(var).ok())
        .collect()
}

/// The volumes and mounts: `/dev/shm` with more than one GPU, then every `model.storage`
/// volume ([`cache_volumes`]: prefill and decode workers mount the same claims).
fn volumes(md: &ModelDeployment, component: &Component) -> (Vec<Value>, Vec<Value>) {
    let mut volumes = Vec::new();
    let mut mounts = Vec::new();
    if component.gpus > 1 {
        volumes
            .push(json!({"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": SHM_SIZE}}));
        mounts.push(json!({"name": "shm", "mountPath": "/dev/shm"}));
    }
    let (claims, claim_mounts) = cache_volumes(md);
    volumes.extend(claims);
    mounts.extend(claim_mounts);
    super::lora::add_volumes(md, &mut volumes, &mut mounts);
    (volumes, mounts)
}

/// The Deployment of `component` running `image` with llm-d's command line ([`vllm_args`]).
pub fn deployment(md: &ModelDeployment, component: &Component, image: &str) -> Value {
    deployment_with_args(md, component, image, vllm_args(md, component))
}

/// The Deployment of `component` running `image` with the command line `args`.
pub fn deployment_with_args(
    md: &ModelDeployment,
    component: &Component,
    image: &str,
    args: Vec<String>,
) -> Value {
    let spec = &md.spec;
    let name = md.metadata.name.clone().unwrap_or_default();
    let template = spec.pod_template.as_ref().and_then(|t| t.metadata.as_ref());
    let selector = selector(md, component);
    let mut pod_labels: BTreeMap<String, String> =
        template.and_then(|m| m.labels.clone()).unwrap_or_default();
    pod_labels.extend(component.pod_labels.clone());
    pod_labels.insert(crate::constants::labels::MODEL_DEPLOYMENT.to_string(), name);
    pod_labels.extend(selector.clone());
    let pod_annotations = template
        .and_then(|m| m.annotations.clone())
        .unwrap_or_default();
    // The Deployment's own metadata carries the podTemplate's labels and annotations as well
    // (the Go AI Runway's render), except `airunway.ai/` keys, which stay AI Runway's.
    let mut own_labels = user_keys_only(template.and_then(|m| m.labels.as_ref()));
    own_labels.extend(object_labels(md));
    let own_annotations = user_keys_only(Some(&pod_annotations));
    let mut limits = serde_json::Map::new();
    let mut requests = serde_json::Map::new();
    if component.gpus > 0 {
        limits.insert(
            component.gpu_type.clone(),
            json!(component.gpus.to_string()),
        );
        requests.insert(
            component.gpu_type.clone(),
            json!(component.gpus.to_string()),
        );
    }
    if let Some(memory) = &component.memory {
        limits.insert("memory".into(), json!(memory));
        requests.insert("memory".into(), json!(memory));
    }
    if let Some(cpu) = &component.cpu {
        requests.insert("cpu".into(), json!(cpu));
    }
    let (volumes, mounts) = volumes(md, component);
    // Empty maps are left out: the API server drops them, and the drift check would then find
    // them missing forever.
    let mut resources = serde_json::Map::new();
    if !limits.is_empty() {
        resources.insert("limits".into(), Value::Object(limits));
    }
    if !requests.is_empty() {
        resources.insert("requests".into(), Value::Object(requests));
    }
    let mut container = json!({
        "name": CONTAINER,
        "image": image,
        "args": args,
        "ports": [{"name": PORT_NAME, "containerPort": PORT, "protocol": "TCP"}],
        "resources": resources,
        "startupProbe": probe(15, 10, 60),
        "livenessProbe": probe(15, 10, 3),
        "readinessProbe": probe(15, 5, 3),
    });
    let env = env(md);
    if !env.is_empty() {
        container["env"] = json!(env);
    }
    if !mounts.is_empty() {
        container["volumeMounts"] = json!(mounts);
    }
    let mut pod_spec = json!({"containers": [container]});
    if !volumes.is_empty() {
        pod_spec["volumes"] = json!(volumes);
    }
    if let Some(selector) = spec.node_selector.as_ref().filter(|s| !s.is_empty()) {
        pod_spec["nodeSelector"] = json!(selector);
    }
    if let Some(tolerations) = spec.tolerations.as_ref().filter(|t| !t.is_empty()) {
        pod_spec["tolerations"] = serde_json::to_value(tolerations).unwrap_or(Value::Null);
    }
    let mut pod_metadata = json!({"labels": pod_labels});
    if !pod_annotations.is_empty() {
        pod_metadata["annotations"] = json!(pod_annotations);
    }
    let mut metadata = json!({"name": component.name, "labels": own_labels});
    if !own_annotations.is_empty() {
        metadata["annotations"] = json!(own_annotations);
    }
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "replicas": component.replicas,
            "selector": {"matchLabels": selector},
            "template": {"metadata": pod_metadata, "spec": pod_spec},
        },
    })
}

/// The entries of `map` whose keys are not AI Runway's (`airunway.ai/`).
pub fn user_keys_only(map: Option<&BTreeMap<String, String>>) -> BTreeMap<String, String> {
    map.into_iter()
        .flatten()
        .filter(|(k, _)| !k.starts_with(crate::constants::labels::PROPAGATED_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The Service in front of `component`'s pods.
pub fn service(md: &ModelDeployment, component: &Component) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": component.name, "labels": object_labels(md)},
        "spec": {
            "type": "ClusterIP",
            "selector": selector(md, component),
            "ports": [{"name": PORT_NAME, "port": PORT, "targetPort": PORT_NAME, "protocol": "TCP"}],
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(spec: Value) -> ModelDeployment {
        serde_json::from_value(
            json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns", "uid": "u"}, "spec": spec}),
        )
        .unwrap()
    }

    #[test]
    fn args_in_order_with_prefix_caching_on_and_off() {
        let on = md(json!({"model": {"id": "org/model", "servedName": "served"},
            "engine": {"type": "vllm", "contextLength": 4096, "trustRemoteCode": true,
                       "enforceEager": true, "args": {"quantization": "fp8", "b-flag": "", "a-off": "false"},
                       "extraArgs": ["--x", "1"]},
            "resources": {"gpu": {"count": 2}}}));
        let mut component = Component::aggregated(&on);
        component.args = vec!["--role".into()];
        assert_eq!(
            vllm_args(&on, &component),
            [
                "--model",
                "org/model",
                "--served-model-name",
                "served",
                "--max-model-len",
                "4096",
                "--trust-remote-code",
                "--enable-prefix-caching",
                "--enforce-eager",
                "--tensor-parallel-size",
                "2",
                "--role",
                "--no-a-off",
                "--b-flag",
                "--quantization",
                "fp8",
                "--x",
                "1"
            ]
        );
        let off = md(json!({"model": {"id": "org/model"},
            "engine": {"type": "vllm", "enablePrefixCaching": false}}));
        let args = vllm_args(&off, &Component::aggregated(&off));
        assert_eq!(
            args,
            ["--model", "org/model", "--no-enable-prefix-caching"],
            "no --served-model-name without servedName: vLLM serves model.id, as the gateway routes"
        );
    }

    #[test]
    fn the_direct_vllm_style_leads_with_networking_and_lets_user_keys_win() {
        let md = md(json!({"model": {"id": "org/model"},
            "engine": {"type": "vllm", "contextLength": 4096, "enablePrefixCaching": false,
                       "args": {"max-model-len": "2048"}, "extraArgs": ["--served-model-name=x"]}}));
        let style = ArgsStyle {
            leading: vec![
                "--host".into(),
                "0.0.0.0".into(),
                "--port".into(),
                "8000".into(),
            ],
            prefix_caching_only_when_on: true,
            user_keys_win: true,
        };
        assert_eq!(
            vllm_args_with(&md, &Component::aggregated(&md), &style),
            [
                "--host",
                "0.0.0.0",
                "--port",
                "8000",
                "--model",
                "org/model",
                "--max-model-len",
                "2048",
                "--served-model-name=x"
            ]
        );
        assert_eq!(user_flag_keys(&md), ["max-model-len", "served-model-name"]);
    }

    #[test]
    fn deployment_and_service_shape() {
        let md = md(json!({"model": {"id": "org/model"},
            "engine": {"type": "vllm"},
            "resources": {"gpu": {"count": 2}, "memory": "64Gi", "cpu": "8"},
            "env": [{"name": "A", "value": "1"}, {"name": "HF_TOKEN", "value": "leak"}],
            "secrets": {"huggingFaceToken": "hf"},
            "podTemplate": {"metadata": {"labels": {"team": "a", "app": "x"}, "annotations": {"n": "v"}}},
            "nodeSelector": {"pool": "gpu"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}));
        let component = Component::aggregated(&md);
        let deployment = deployment(&md, &component, "img:1");
        let spec = &deployment["spec"];
        assert_eq!(spec["replicas"], 1);
        assert_eq!(
            spec["selector"]["matchLabels"],
            json!({"airunway.ai/deployment": "m", "app": "m"})
        );
        assert_eq!(
            spec["template"]["metadata"]["labels"],
            json!({"team": "a", "app": "m", "airunway.ai/deployment": "m", "airunway.ai/model-deployment": "m"}),
            "the selector labels win over pod template labels"
        );
        assert_eq!(
            spec["template"]["metadata"]["annotations"],
            json!({"n": "v"})
        );
        assert_eq!(
            deployment["metadata"],
            json!({"name": "m",
                   "labels": {"team": "a", "app": "x", "airunway.ai/model-source": "huggingface",
                              "airunway.ai/engine-type": "vllm"},
                   "annotations": {"n": "v"}}),
            "the podTemplate's metadata on the Deployment too, as the Go project renders it"
        );
        let owned = super::tests::md(
            json!({"model": {"id": "org/model"}, "engine": {"type": "vllm"},
            "podTemplate": {"metadata": {"labels": {"airunway.ai/deployment": "other", "team": "a"},
                                         "annotations": {"airunway.ai/spec-hash": "x"}}}}),
        );
        let owned = super::deployment(&owned, &Component::aggregated(&owned), "img:1");
        assert_eq!(owned["metadata"]["labels"]["team"], "a");
        assert!(owned["metadata"]["labels"]["airunway.ai/deployment"].is_null());
        assert!(
            owned["metadata"]["annotations"].is_null(),
            "airunway.ai/ keys stay ours"
        );
        assert!(service(&md, &component)["metadata"]["labels"]["team"].is_null());
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["nodeSelector"], json!({"pool": "gpu"}));
        assert_eq!(pod["tolerations"][0]["key"], "nvidia.com/gpu");
        assert_eq!(
            pod["volumes"],
            json!([{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "20Gi"}}])
        );
        let container = &pod["containers"][0];
        assert_eq!(container["name"], "vllm");
        assert_eq!(container["image"], "img:1");
        assert_eq!(
            container["ports"],
            json!([{"name": "http", "containerPort": 8000, "protocol": "TCP"}])
        );
        assert_eq!(
            container["resources"],
            json!({"limits": {"nvidia.com/gpu": "2", "memory": "64Gi"},
                   "requests": {"nvidia.com/gpu": "2", "memory": "64Gi", "cpu": "8"}})
        );
        assert_eq!(
            container["env"],
            json!([{"name": "A", "value": "1"},
                   {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "HF_TOKEN"}}}])
        );
        assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/health");
        assert_eq!(container["startupProbe"]["failureThreshold"], 60);
        assert_eq!(
            container["volumeMounts"],
            json!([{"name": "shm", "mountPath": "/dev/shm"}])
        );

        let service = service(&md, &component);
        assert_eq!(service["spec"]["type"], "ClusterIP");
        assert_eq!(
            service["spec"]["selector"],
            json!({"airunway.ai/deployment": "m", "app": "m"})
        );
        assert_eq!(
            service["spec"]["ports"],
            json!([{"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}])
        );
    }

    #[test]
    fn one_gpu_has_no_shm_and_storage_volumes_mount_where_declared() {
        let md = md(json!({"model": {"id": "org/model", "storage": {"volumes": [
                {"name": "cache", "claimName": "models", "mountPath": "/models", "readOnly": true},
                {"name": "undeclared"}]}},
            "engine": {"type": "vllm"}}));
        let deployment = deployment(&md, &Component::aggregated(&md), "img");
        let pod = &deployment["spec"]["template"]["spec"];
        assert_eq!(
            pod["volumes"],
            json!([{"name": "cache", "persistentVolumeClaim": {"claimName": "models"}}])
        );
        assert_eq!(
            pod["containers"][0]["volumeMounts"],
            json!([{"name": "cache", "mountPath": "/models", "readOnly": true}])
        );
        assert_eq!(
            pod["containers"][0]["resources"]["limits"],
            json!({"nvidia.com/gpu": "1"}),
            "one GPU by default for {{engine: vllm}}"
        );
    }

    /// The model cache and the compilation cache are mounted where `storage` resolves them and
    /// vLLM is pointed at them; a second component (prefill beside decode) mounts the same
    /// claims, and the user's own `HF_HOME` wins.
    #[test]
    fn caches_mounted_and_the_engine_pointed_at_them() {
        let spec = json!({"model": {"id": "Qwen/Qwen3-0.6B", "storage": {"volumes": [
                {"name": "weights", "purpose": "modelCache"},
                {"name": "compiled", "purpose": "compilationCache", "size": "10Gi"}]}},
            "engine": {"type": "vllm"}, "env": [{"name": "A", "value": "1"}]});
        let cached = md(spec.clone());
        let shared = crate::storage::volume_for(&cached, crate::storage::VolumePurpose::ModelCache)
            .unwrap()
            .claim_name;
        let mut prefill = Component::aggregated(&cached);
        prefill.name = "m-prefill".into();
        let pods: Vec<Value> = [Component::aggregated(&cached), prefill]
            .iter()
            .map(|c| deployment(&cached, c, "img")["spec"]["template"]["spec"].clone())
            .collect();
        for pod in &pods {
            assert_eq!(
                pod["volumes"],
                json!([{"name": "weights", "persistentVolumeClaim": {"claimName": shared}},
                       {"name": "compiled", "persistentVolumeClaim": {"claimName": "m-compiled"}}])
            );
            assert_eq!(
                pod["containers"][0]["volumeMounts"],
                json!([{"name": "weights", "mountPath": "/model-cache"},
                       {"name": "compiled", "mountPath": "/compilation-cache"}])
            );
            assert_eq!(
                pod["containers"][0]["env"],
                json!([{"name": "A", "value": "1"},
                       {"name": "HF_HOME", "value": "/model-cache"},
                       {"name": "VLLM_CACHE_ROOT", "value": "/compilation-cache"}])
            );
        }
        let mut own = spec;
        own["env"] = json!([{"name": "HF_HOME", "value": "/mine"}]);
        let own = md(own);
        assert_eq!(
            deployment(&own, &Component::aggregated(&own), "img")["spec"]["template"]["spec"]["containers"]
                [0]["env"],
            json!([{"name": "HF_HOME", "value": "/mine"},
                   {"name": "VLLM_CACHE_ROOT", "value": "/compilation-cache"}])
        );
    }
}
