//! The deployments a benchmark creates, the burst that creates them, and the simulated
//! upstream operators that make them Ready.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use airunway_api::v1alpha1::ModelDeployment;
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::observe::Timeline;
use crate::sandbox::simulate::{self, Stage};

/// The Hugging Face token Secret the GPU deployments name; the benchmark creates it in each
/// namespace.
pub const TOKEN_SECRET: &str = "hf-token";

/// The label every benchmark object carries (propagated by the providers to upstream objects).
pub const BENCH_LABEL: &str = "airunway.ai/bench";

/// A shipped provider the benchmark exercises, with the deployment shape that reaches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// CPU llama.cpp, auto-selected to KAITO.
    Kaito,
    /// GPU vLLM, auto-selected to Dynamo.
    Dynamo,
    /// GPU vLLM naming KubeRay (never auto-selected).
    Kuberay,
    /// GPU vLLM naming llm-d: a Deployment whose Pods run on KWOK's simulated GPU nodes (the
    /// real deployment controller writes its status; not in [`Target::ALL`]: the chaos suite's).
    Llmd,
    /// GPU vLLM naming the direct vLLM provider, its image pinned to a digest (no registry
    /// lookup): a Deployment like llm-d's (not in [`Target::ALL`]: the chaos suite's).
    Vllm,
}

impl Target {
    /// Every target, in their default order.
    pub const ALL: [Target; 3] = [Target::Kaito, Target::Dynamo, Target::Kuberay];

    /// Every shipped provider (the chaos suite's burst): [`Target::ALL`] plus llm-d and vLLM.
    pub const EVERY_PROVIDER: [Target; 5] = [
        Target::Kaito,
        Target::Dynamo,
        Target::Kuberay,
        Target::Llmd,
        Target::Vllm,
    ];

    /// Parses a provider name.
    pub fn parse(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The provider name.
    pub fn name(self) -> &'static str {
        match self {
            Target::Kaito => "kaito",
            Target::Dynamo => "dynamo",
            Target::Kuberay => "kuberay",
            Target::Llmd => "llmd",
            Target::Vllm => "vllm",
        }
    }

    /// The upstream kind its provider creates.
    pub fn upstream(self) -> ApiResource {
        match self {
            Target::Kaito => ApiResource {
                group: "kaito.sh".into(),
                version: "v1beta1".into(),
                api_version: "kaito.sh/v1beta1".into(),
                kind: "Workspace".into(),
                plural: "workspaces".into(),
            },
            // The storage version of the Dynamo >= 1.5 CRD installed by default.
            Target::Dynamo => crate::dynamo_graph::resource(crate::dynamo_graph::V1BETA1),
            Target::Kuberay => ApiResource {
                group: "ray.io".into(),
                version: "v1".into(),
                api_version: "ray.io/v1".into(),
                kind: "RayService".into(),
                plural: "rayservices".into(),
            },
            Target::Llmd | Target::Vllm => ApiResource {
                group: "apps".into(),
                version: "v1".into(),
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                plural: "deployments".into(),
            },
        }
    }

    /// Whether its upstream status must be simulated (KAITO, Dynamo, KubeRay); llm-d's and
    /// vLLM's Deployments are run by the real controllers and KWOK.
    pub fn simulated(self) -> bool {
        matches!(self, Target::Kaito | Target::Dynamo | Target::Kuberay)
    }

    /// GPUs one Pod of its deployment requests on the simulated nodes (0: no Pod runs here).
    pub fn pod_gpus(self) -> usize {
        usize::from(!self.simulated())
    }

    /// The status its upstream operator writes once `object` is ready (the real samples).
    pub fn ready_status(self, object: &Value) -> anyhow::Result<Value> {
        match self {
            Target::Kaito => simulate::workspace_status(Stage::Ready),
            Target::Dynamo => simulate::dgd_status(object, Stage::Ready),
            Target::Kuberay => simulate::rayservice_status(object, Stage::Ready),
            Target::Llmd | Target::Vllm => anyhow::bail!(
                "{}: the deployment controller writes the Deployment's status",
                self.name()
            ),
        }
    }

    /// The deployment spec that goes to this provider.
    fn spec(self) -> Value {
        match self {
            Target::Kaito => json!({
                "model": {"id": "google/gemma-3-1b-it-qat-q8_0-gguf"},
                "engine": {"type": "llamacpp", "args": {"model-file": "gemma-3-1b-it-q8_0.gguf"}},
                "resources": {"gpu": {"count": 0}, "memory": "16Gi", "cpu": "8"},
                "image": "ghcr.io/sozercan/llama-cpp-runner:latest",
            }),
            Target::Dynamo => json!({
                "model": {"id": "meta-llama/Llama-3.1-8B-Instruct"},
                "engine": {"type": "vllm", "contextLength": 8192},
                "resources": {"gpu": {"count": 1}, "memory": "32Gi"},
                "secrets": {"huggingFaceToken": TOKEN_SECRET},
            }),
            Target::Kuberay => json!({
                "model": {"id": "Qwen/Qwen3-8B", "servedName": "qwen3"},
                "provider": {"name": "kuberay"},
                "engine": {"type": "vllm", "contextLength": 8192},
                "resources": {"gpu": {"count": 1}, "memory": "32Gi"},
                "secrets": {"huggingFaceToken": TOKEN_SECRET},
            }),
            Target::Llmd => json!({
                "model": {"id": "Qwen/Qwen3-0.6B", "servedName": "qwen3"},
                "provider": {"name": "llmd"},
                "engine": {"type": "vllm", "contextLength": 4096},
                "resources": {"gpu": {"count": 1}, "memory": "8Gi"},
                "secrets": {"huggingFaceToken": TOKEN_SECRET},
            }),
            Target::Vllm => json!({
                "model": {"id": "Qwen/Qwen3-0.6B", "servedName": "qwen3"},
                "provider": {"name": "vllm"},
                "engine": {"type": "vllm", "contextLength": 4096,
                    "image": format!("vllm/vllm-openai:v0.10.1@sha256:{}", "0".repeat(64))},
                "resources": {"gpu": {"count": 1}, "memory": "8Gi"},
                "secrets": {"huggingFaceToken": TOKEN_SECRET},
            }),
        }
    }
}

/// The `index`th deployment of run `run` in `namespace`, cycling through `targets`.
pub fn deployment(run: &str, index: usize, namespace: &str, targets: &[Target]) -> Value {
    let target = targets[index % targets.len()];
    json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": format!("md-{index:05}"), "namespace": namespace,
            "labels": {BENCH_LABEL: run}},
        "spec": target.spec(),
    })
}

/// The namespace of the `index`th deployment.
pub fn namespace_of(index: usize, namespaces: usize) -> String {
    format!("bench-{}", index % namespaces.max(1))
}

/// Creates `count` deployments with `clients` concurrent requests; returns how many failed
/// (each failure printed once).
pub async fn burst(
    client: &Client,
    run: &str,
    count: usize,
    clients: usize,
    namespaces: usize,
    targets: &[Target],
    timeline: &Timeline,
) -> usize {
    let next = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..clients.max(1) {
        let (client, next, failed, timeline, run, targets) = (
            client.clone(),
            next.clone(),
            failed.clone(),
            timeline.clone(),
            run.to_string(),
            targets.to_vec(),
        );
        tasks.push(tokio::spawn(async move {
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= count {
                    return;
                }
                let namespace = namespace_of(index, namespaces);
                let body = deployment(&run, index, &namespace, &targets);
                let Ok(md) = serde_json::from_value::<ModelDeployment>(body) else {
                    failed.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                let api: Api<ModelDeployment> = Api::namespaced(client.clone(), &namespace);
                timeline.sent(&namespace, &md.name_any());
                if let Err(e) = api.create(&PostParams::default(), &md).await
                    && failed.fetch_add(1, Ordering::Relaxed) == 0
                {
                    eprintln!("create {namespace}/{} failed: {e}", md.name_any());
                }
            }
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
    failed.load(Ordering::Relaxed)
}

/// Plays the upstream operator of `target`: every object labelled for run `run` gets the ready
/// status the real operator writes, once, as soon as it appears (4 writes at a time).
pub fn simulate_operator(client: Client, target: Target, run: String) {
    tokio::spawn(async move {
        let resource = target.upstream();
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let config = watcher::Config::default().labels(&format!("{BENCH_LABEL}={run}"));
        let stream = watcher(api, config).default_backoff().applied_objects();
        futures::pin_mut!(stream);
        let permits = Arc::new(Semaphore::new(4));
        let mut done = std::collections::HashSet::new();
        while let Some(object) = stream.next().await {
            let Ok(object) = object else { continue };
            let Some(uid) = object.metadata.uid.clone() else {
                continue;
            };
            if done.contains(&uid) || object.metadata.deletion_timestamp.is_some() {
                continue;
            }
            done.insert(uid);
            let Ok(value) = serde_json::to_value(&object) else {
                continue;
            };
            let Ok(status) = target.ready_status(&value) else {
                eprintln!("no status sample for {}", resource.kind);
                continue;
            };
            let Ok(permit) = permits.clone().acquire_owned().await else {
                return;
            };
            let namespaced: Api<DynamicObject> = Api::namespaced_with(
                client.clone(),
                &object.namespace().unwrap_or_default(),
                &resource,
            );
            let name = object.name_any();
            tokio::spawn(async move {
                let patch = Patch::Merge(json!({"status": status}));
                if let Err(e) = namespaced
                    .patch_status(&name, &PatchParams::default(), &patch)
                    .await
                {
                    eprintln!("simulating {name}: {e}");
                }
                drop(permit);
            });
        }
    });
}
