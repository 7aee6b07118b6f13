//! The `nvidia.com/v1alpha1` writer: `spec.services` keyed by component name, the per-service
//! fields of Dynamo 1.1 (`envs`, `envFromSecret`, `resources` in Dynamo's terms,
//! `extraPodSpec.mainContainer`, `extraPodMetadata`, `volumeMounts` over `spec.pvcs`,
//! `frontendSidecar`, `eppConfig`).

use airunway_api::serde_json::{Map, Value, json};

use super::graph::{Component, ComponentType, Graph, Resources};

fn resources(list: &Resources) -> Map<String, Value> {
    let mut out = Map::new();
    if let Some(gpu) = &list.gpu {
        out.insert("gpu".into(), json!(gpu));
    }
    if let Some(gpu_type) = &list.gpu_type {
        out.insert("gpuType".into(), json!(gpu_type));
    }
    if let Some(memory) = &list.memory {
        out.insert("memory".into(), json!(memory));
    }
    if let Some(cpu) = &list.cpu {
        out.insert("cpu".into(), json!(cpu));
    }
    out
}

fn service(graph: &Graph, c: &Component) -> Value {
    let component_type = match c.kind {
        ComponentType::Frontend => "frontend",
        ComponentType::Epp => "epp",
        ComponentType::Worker | ComponentType::Prefill | ComponentType::Decode => "worker",
    };
    let mut service = json!({
        "componentType": component_type,
        "replicas": c.replicas,
        "dynamoNamespace": graph.name,
    });
    match c.kind {
        ComponentType::Prefill => service["subComponentType"] = json!("prefill"),
        ComponentType::Decode => service["subComponentType"] = json!("decode"),
        _ => {}
    }
    if let Some(secret) = &c.env_from_secret {
        service["envFromSecret"] = json!(secret);
    }
    if !c.env.is_empty() {
        service["envs"] = json!(c.env);
    }
    let mut list = Map::new();
    let limits = resources(&c.limits);
    if !limits.is_empty() {
        list.insert("limits".into(), Value::Object(limits));
    }
    let requests = resources(&c.requests);
    if !requests.is_empty() {
        list.insert("requests".into(), Value::Object(requests));
    }
    // Workers always carry `resources` (Dynamo 1.1 defaults nothing for them).
    if !list.is_empty() || c.kind.is_worker() {
        service["resources"] = Value::Object(list);
    }
    let mut main = json!({"image": c.image});
    if !c.command.is_empty() {
        main["command"] = json!(c.command);
    }
    if !c.args.is_empty() {
        main["args"] = json!(c.args);
    }
    if !c.container_env.is_empty() {
        main["env"] = json!(c.container_env);
    }
    let mut pod_spec = json!({"mainContainer": main});
    if let Some(selector) = &c.node_selector {
        pod_spec["nodeSelector"] = selector.clone();
    }
    if let Some(tolerations) = &c.tolerations {
        pod_spec["tolerations"] = tolerations.clone();
    }
    service["extraPodSpec"] = pod_spec;
    let mut meta = Map::new();
    if let Some(labels) = &c.pod_labels {
        meta.insert("labels".into(), labels.clone());
    }
    if let Some(annotations) = &c.pod_annotations {
        meta.insert("annotations".into(), annotations.clone());
    }
    if !meta.is_empty() {
        service["extraPodMetadata"] = Value::Object(meta);
    }
    if !c.mounts.is_empty() {
        let mounts: Vec<Value> = c
            .mounts
            .iter()
            .map(|m| {
                let mut mount = json!({"name": m.claim, "mountPoint": m.path});
                if m.compilation_cache {
                    mount["useAsCompilationCache"] = json!(true);
                }
                mount
            })
            .collect();
        service["volumeMounts"] = json!(mounts);
    }
    if let Some(sidecar) = &c.sidecar {
        let mut value = json!({"image": sidecar.image, "args": sidecar.args});
        if let Some(secret) = &sidecar.env_from_secret {
            value["envFromSecret"] = json!(secret);
        }
        service["frontendSidecar"] = value;
    }
    if let Some(config) = &c.epp_config {
        service["eppConfig"] = json!({"config": config});
    }
    service
}

/// The `spec` of the `v1alpha1` DynamoGraphDeployment for `graph`.
pub fn spec(graph: &Graph) -> Value {
    let services: Map<String, Value> = graph
        .components
        .iter()
        .map(|c| (c.name.clone(), service(graph, c)))
        .collect();
    let mut spec = json!({"backendFramework": graph.backend, "services": services});
    if !graph.claims.is_empty() {
        let pvcs: Vec<Value> = graph
            .claims
            .iter()
            .map(|claim| json!({"name": claim, "create": false}))
            .collect();
        spec["pvcs"] = json!(pvcs);
    }
    spec
}
