//! The workload contract from a tool's side (docs/integrations.md): the example tool
//! `examples/workload-binding` (its real binary) binds a monitor Service to a ModelDeployment
//! served by the real direct vLLM provider; kube-scheduler places the pods on KWOK's GPU
//! nodes, KWOK runs them, the real EndpointSlice controller fills the Service's endpoints.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use airunway_api::v1alpha1::{InferenceProviderConfig, ModelDeployment, Phase};
use airunway_e2e::binaries::start_binary;
use airunway_e2e::registry::LocalRegistry;
use airunway_e2e::scale::kubectl_scale;
use airunway_e2e::stack::{self, FAST_HEALTH};
use airunway_e2e::wait::{eventually, wait_deleted, wait_for};
use airunway_e2e::{TestEnv, cluster_lock};
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);

/// The names of the pods the Service's EndpointSlices point at, sorted.
async fn endpoint_pods(env: &TestEnv, service: &str) -> Vec<String> {
    let slices: Api<EndpointSlice> = Api::namespaced(env.client.clone(), &env.namespace);
    let mut names: Vec<String> = slices
        .list(&ListParams::default().labels(&format!("kubernetes.io/service-name={service}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .flat_map(|s| s.endpoints)
        .filter_map(|e| e.target_ref.and_then(|r| r.name))
        .collect();
    names.sort();
    names
}

/// The running pods of the provider's Deployment `name` (by its own selector), sorted.
async fn deployment_pods(env: &TestEnv, name: &str) -> Vec<String> {
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(env.client.clone(), &env.namespace);
    let selector = deployments
        .get(name)
        .await
        .unwrap()
        .spec
        .unwrap()
        .selector
        .match_labels
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    let mut names: Vec<String> = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| p.metadata.name)
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn the_binding_example_follows_the_serving_pods_through_a_scale_and_goes_with_the_deployment()
{
    let _lock = cluster_lock().await;
    let started = Instant::now();
    let env = TestEnv::new("integrations").await;
    airunway_e2e::providers::delete_all(&env.client).await;
    let core = stack::start_core(&env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let identity = stack::service_account_identity(
        &env,
        "deploy/providers/vllm/rbac.yaml",
        "airunway-provider-vllm",
    )
    .await;
    let provider = stack::start_provider(
        &env,
        "airunway-provider-vllm",
        &identity,
        &["--heartbeat-interval=1s"],
        "vllm-0",
    )
    .await;
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, "vllm", WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    let registry = LocalRegistry::start(
        &env.control_plane
            .dir
            .join(format!("registry-{}", env.namespace)),
    )
    .unwrap();
    registry
        .push_image("vllm/vllm-openai", "e2e", None, &[])
        .unwrap();
    let image = format!("{}/vllm/vllm-openai:e2e", registry.address);

    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let md: ModelDeployment = serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "bound"},
        "spec": {"model": {"id": "Qwen/Qwen3-0.6B"},
                 "engine": {"type": "vllm", "image": image},
                 "resources": {"gpu": {"count": 1}},
                 "provider": {"name": "vllm"}}}))
    .unwrap();
    mds.create(&PostParams::default(), &md).await.unwrap();
    let running = wait_for(&mds, "bound", WAIT, "Running with a workload", |md| {
        md.phase() == Some(Phase::Running)
            && md
                .status
                .as_ref()
                .and_then(|s| s.workload.as_ref())
                .is_some_and(|w| w.pod_selector.is_some() && w.port.is_some())
    })
    .await;
    let workload = running.status.clone().unwrap().workload.unwrap();
    eprintln!(
        "md/bound Running with status.workload {:.1}s after creation: {}",
        started.elapsed().as_secs_f64(),
        serde_json::to_string(&workload).unwrap()
    );

    // The tool, as a user runs it: the real binary, with a kubeconfig.
    let tool = start_binary(
        &env,
        "workload-binding",
        &env.control_plane.kubeconfig,
        &[
            "--namespace".into(),
            env.namespace.clone(),
            "--deployment".into(),
            "bound".into(),
        ],
    );
    let services: Api<Service> = Api::namespaced(env.client.clone(), &env.namespace);
    let bound = Instant::now();
    let service = wait_for(&services, "bound-monitor", WAIT, "created", |_| true).await;
    let spec = service.spec.clone().unwrap();
    assert_eq!(spec.selector, workload.pod_selector);
    assert_eq!(spec.ports.unwrap()[0].port, workload.port.unwrap());
    let owner = &service.metadata.owner_references.clone().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("ModelDeployment", running.metadata.uid.as_deref().unwrap())
    );
    let one = eventually(
        "the monitor's endpoints = the serving pod",
        WAIT,
        || async {
            let (endpoints, pods) = (
                endpoint_pods(&env, "bound-monitor").await,
                deployment_pods(&env, "bound").await,
            );
            (endpoints == pods && pods.len() == 1)
                .then_some(endpoints.clone())
                .ok_or(format!("endpoints {endpoints:?}, pods {pods:?}"))
        },
    )
    .await;
    eprintln!(
        "bound: endpoints {one:?} {:.1}s after the tool started",
        bound.elapsed().as_secs_f64()
    );

    // A user scales the deployment; the monitor follows the pods, not the tool.
    let scaled = Instant::now();
    kubectl_scale(&env, "bound", 3).await;
    let three = eventually(
        "the monitor's endpoints = three serving pods",
        WAIT,
        || async {
            let (endpoints, pods) = (
                endpoint_pods(&env, "bound-monitor").await,
                deployment_pods(&env, "bound").await,
            );
            (endpoints == pods && pods.len() == 3)
                .then_some(endpoints.clone())
                .ok_or(format!("endpoints {endpoints:?}, pods {pods:?}"))
        },
    )
    .await;
    eprintln!(
        "scaled to 3: endpoints {three:?} {:.1}s after kubectl scale",
        scaled.elapsed().as_secs_f64()
    );

    // The Service goes with the deployment (garbage collection of the owner reference).
    mds.delete("bound", &DeleteParams::default()).await.unwrap();
    wait_deleted(&services, "bound-monitor", WAIT).await;
    wait_deleted(&mds, "bound", WAIT).await;

    tool.terminate(Duration::from_secs(5));
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
    airunway_e2e::providers::delete_all(&env.client).await;
    eprintln!(
        "integrations suite: {:.1}s",
        started.elapsed().as_secs_f64()
    );
}
