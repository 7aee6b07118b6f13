//! The `nvidia.com/v1beta1` writer (Dynamo ≥ 1.5): `spec.components[]`, each with its `name`,
//! its `type` (`frontend`, `epp`, `worker`, `prefill`, `decode`), `replicas` and one native
//! `podTemplate` whose container `main` carries the image, command, arguments, `env`,
//! `envFrom`, Kubernetes resource requirements and volume mounts; the claims are ordinary
//! pod volumes, a compilation cache is `compilationCache`, the gateway's frontend sidecar a
//! container named by `frontendSidecar`.
//!
//! The endpoint picker is Dynamo's native one from 1.5 on (no `eppConfig`); an `epp.image`
//! override whose tag names a release before 1.5 runs the Go picker, which needs `eppConfig`
//! (a tag naming no release is taken as current). Later Dynamo releases add a
//! `runtimeVersionOverride` for images whose tag names no release; the `v1beta1` schema this
//! provider is tested against has none, so it is not written.

use airunway_api::serde_json::{Map, Value, json};

use super::graph::{Component, ComponentType, Graph, Resources};

/// The Dynamo runtime release whose images are the defaults on `v1beta1`.
pub const RUNTIME_VERSION: &str = "1.6.1";
/// The name of the engine container in a component's pod template.
pub const MAIN_CONTAINER: &str = "main";
/// The name of the frontend sidecar container on a gateway graph's workers.
pub const SIDECAR_CONTAINER: &str = "sidecar-frontend";
/// The GPU resource when the deployment names no other.
const GPU_RESOURCE: &str = "nvidia.com/gpu";

/// The `major.minor.patch` release an image tag names (`1.6.1`, `v1.5.0`, `1.5.0-rc1`), if it
/// names one.
pub fn image_release(image: &str) -> Option<(u64, u64, u64)> {
    let image = image.split('@').next().unwrap_or(image);
    let last = image.rsplit('/').next().unwrap_or(image);
    let (_, tag) = last.rsplit_once(':')?;
    let tag = tag.strip_prefix('v').unwrap_or(tag);
    let core = tag.split(['-', '+']).next().unwrap_or(tag);
    let mut parts = core.split('.').map(|p| {
        (!p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
            .then(|| p.parse::<u64>().ok())
            .flatten()
    });
    let release = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(release)
}

fn resources(list: &Resources) -> Map<String, Value> {
    let mut out = Map::new();
    if let Some(gpu) = &list.gpu {
        let name = list.gpu_type.as_deref().unwrap_or(GPU_RESOURCE);
        out.insert(name.into(), json!(gpu));
    }
    if let Some(cpu) = &list.cpu {
        out.insert("cpu".into(), json!(cpu));
    }
    if let Some(memory) = &list.memory {
        out.insert("memory".into(), json!(memory));
    }
    out
}

fn component(c: &Component) -> Value {
    let component_type = match c.kind {
        ComponentType::Frontend => "frontend",
        ComponentType::Epp => "epp",
        ComponentType::Worker => "worker",
        ComponentType::Prefill => "prefill",
        ComponentType::Decode => "decode",
    };
    let mut main = json!({"name": MAIN_CONTAINER, "image": c.image});
    if !c.command.is_empty() {
        main["command"] = json!(c.command);
    }
    if !c.args.is_empty() {
        main["args"] = json!(c.args);
    }
    let env: Vec<&Value> = c.env.iter().chain(&c.container_env).collect();
    if !env.is_empty() {
        main["env"] = json!(env);
    }
    if let Some(secret) = &c.env_from_secret {
        main["envFrom"] = json!([{"secretRef": {"name": secret}}]);
    }
    let mut requirements = Map::new();
    let limits = resources(&c.limits);
    if !limits.is_empty() {
        requirements.insert("limits".into(), Value::Object(limits));
    }
    let requests = resources(&c.requests);
    if !requests.is_empty() {
        requirements.insert("requests".into(), Value::Object(requests));
    }
    if !requirements.is_empty() {
        main["resources"] = Value::Object(requirements);
    }
    let mut out = json!({"name": c.name, "type": component_type, "replicas": c.replicas});
    // The compilation cache is Dynamo's to mount (it sets the engine's cache variables
    // too); every other claim is a pod volume mounted in `main`.
    let mut volumes: Vec<Value> = Vec::new();
    let mut mounts: Vec<Value> = Vec::new();
    for mount in &c.mounts {
        if mount.compilation_cache && out.get("compilationCache").is_none() {
            out["compilationCache"] = json!({"pvcName": mount.claim, "mountPath": mount.path});
            continue;
        }
        mounts.push(json!({"name": mount.claim, "mountPath": mount.path}));
        let volume =
            json!({"name": mount.claim, "persistentVolumeClaim": {"claimName": mount.claim}});
        if !volumes.contains(&volume) {
            volumes.push(volume);
        }
    }
    if !mounts.is_empty() {
        main["volumeMounts"] = json!(mounts);
    }
    let mut containers = vec![main];
    if let Some(sidecar) = &c.sidecar {
        let mut container =
            json!({"name": SIDECAR_CONTAINER, "image": sidecar.image, "args": sidecar.args});
        if let Some(secret) = &sidecar.env_from_secret {
            container["envFrom"] = json!([{"secretRef": {"name": secret}}]);
        }
        containers.push(container);
        out["frontendSidecar"] = json!(SIDECAR_CONTAINER);
    }
    let mut pod_spec = json!({"containers": containers});
    if let Some(selector) = &c.node_selector {
        pod_spec["nodeSelector"] = selector.clone();
    }
    if let Some(tolerations) = &c.tolerations {
        pod_spec["tolerations"] = tolerations.clone();
    }
    if !volumes.is_empty() {
        pod_spec["volumes"] = json!(volumes);
    }
    let mut template = json!({"spec": pod_spec});
    let mut meta = Map::new();
    if let Some(labels) = &c.pod_labels {
        meta.insert("labels".into(), labels.clone());
    }
    if let Some(annotations) = &c.pod_annotations {
        meta.insert("annotations".into(), annotations.clone());
    }
    if !meta.is_empty() {
        template["metadata"] = Value::Object(meta);
    }
    out["podTemplate"] = template;
    // The Go endpoint picker (before 1.5) takes its configuration; the native one none.
    if let (Some(config), Some(release)) = (&c.epp_config, image_release(&c.image))
        && release < (1, 5, 0)
    {
        out["eppConfig"] = json!({"config": config});
    }
    out
}

/// The `spec` of the `v1beta1` DynamoGraphDeployment for `graph`.
pub fn spec(graph: &Graph) -> Value {
    let components: Vec<Value> = graph.components.iter().map(component).collect();
    json!({"backendFramework": graph.backend, "components": components})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_from_image_tags() {
        assert_eq!(
            image_release("nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1"),
            Some((1, 6, 1))
        );
        assert_eq!(
            image_release("registry:5000/epp:v1.5.0-rc1"),
            Some((1, 5, 0))
        );
        assert_eq!(
            image_release("registry:5000/epp:1.4.2@sha256:abc"),
            Some((1, 4, 2))
        );
        assert_eq!(image_release("registry.example/trtllm:custom"), None);
        assert_eq!(image_release("registry.example:5000/trtllm"), None);
        assert_eq!(image_release("x/y:1.2"), None);
        assert_eq!(image_release("x/y:1.2.3.4"), None);
    }
}
