//! The floor: the least a perfect controller pair would have to write for N deployments —
//! create each upstream object and write each deployment's status twice (selection, then
//! readiness) — issued by a plain client over a few connections with no controller running,
//! on the same API server. Our time to all-Running is reported as a multiple of it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use airunway_api::v1alpha1::ModelDeployment;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::workload::BENCH_LABEL;

/// What the floor writes for one deployment: its upstream object and its final status.
#[derive(Clone, Debug)]
pub struct FloorItem {
    /// The upstream kind.
    pub resource: ApiResource,
    /// The upstream object as a provider created it (metadata reduced to name and labels).
    pub upstream: Value,
    /// The deployment's final status.
    pub status: Value,
}

/// The object with only what a create needs: name, labels, annotations, spec-like fields.
pub fn creatable(mut object: Value) -> Value {
    let metadata = json!({
        "name": object["metadata"]["name"],
        "labels": object["metadata"]["labels"],
        "annotations": object["metadata"]["annotations"],
    });
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
        map.insert("metadata".into(), metadata);
    }
    object
}

/// Writes the floor for `items` in namespace `namespace` (created here) with `connections`
/// concurrent requests; returns the time the writes took (the deployments are created first,
/// untimed).
pub async fn measure(
    client: &Client,
    namespace: &str,
    items: &[FloorItem],
    connections: usize,
) -> anyhow::Result<Duration> {
    let deployments: Api<ModelDeployment> = Api::namespaced(client.clone(), namespace);
    for (index, _) in items.iter().enumerate() {
        let md: ModelDeployment = serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": format!("floor-{index:05}"), "labels": {BENCH_LABEL: "floor"}},
            "spec": {"model": {"id": "meta-llama/Llama-3.1-8B-Instruct"}, "engine": {"type": "vllm"},
                "resources": {"gpu": {"count": 1}}},
        }))?;
        deployments.create(&PostParams::default(), &md).await?;
    }
    let items = Arc::new(items.to_vec());
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..connections.max(1) {
        let (client, items, next, namespace) = (
            client.clone(),
            items.clone(),
            next.clone(),
            namespace.to_string(),
        );
        tasks.push(tokio::spawn(async move {
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(index) else {
                    return Ok::<(), kube::Error>(());
                };
                let name = format!("floor-{index:05}");
                let mut upstream = item.upstream.clone();
                upstream["metadata"]["name"] = json!(name);
                let upstream: DynamicObject =
                    serde_json::from_value(upstream).map_err(kube::Error::SerdeError)?;
                Api::<DynamicObject>::namespaced_with(client.clone(), &namespace, &item.resource)
                    .create(&PostParams::default(), &upstream)
                    .await?;
                let deployments: Api<ModelDeployment> = Api::namespaced(client.clone(), &namespace);
                let mut selected = item.status.clone();
                selected["phase"] = json!("Pending");
                for status in [selected, item.status.clone()] {
                    deployments
                        .patch_status(
                            &name,
                            &PatchParams::default(),
                            &Patch::Merge(json!({"status": status})),
                        )
                        .await?;
                }
            }
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(started.elapsed())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn creatable_keeps_what_a_create_needs() {
        let object = json!({"apiVersion": "v1", "kind": "X", "spec": {"a": 1}, "status": {"b": 2},
            "metadata": {"name": "n", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                "labels": {"l": "v"}, "managedFields": []}});
        let c = creatable(object);
        assert_eq!(
            c["metadata"],
            json!({"name": "n", "labels": {"l": "v"}, "annotations": null})
        );
        assert!(c.get("status").is_none());
        assert_eq!(c["spec"]["a"], 1);
    }
}
