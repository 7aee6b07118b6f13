//! The real `airunway-provider-vllm` (running as its ServiceAccount with the shipped RBAC) and
//! the real core, on the harness's cluster: kube-scheduler places the vLLM Pods on KWOK's
//! simulated GPU nodes, KWOK runs them, and the real deployment and replicaset controllers
//! write the Deployment conditions the provider translates. No test writes a Deployment
//! status; the scale test plays a kubelet whose readiness probe fails on one pod (that pod's
//! `Ready` condition), which is all a node reports when a replica stops serving.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use airunway_api::apply_body;
use airunway_api::constants::{condition_types, labels, reasons};
use airunway_api::v1alpha1::{ConditionStatus, InferenceProviderConfig, ModelDeployment, Phase};
use airunway_e2e::registry::LocalRegistry;
use airunway_e2e::stack::{self, FAST_HEALTH, Running};
use airunway_e2e::wait::{eventually, wait_deleted, wait_for, wait_for_condition};
use airunway_e2e::{TestEnv, cluster_lock};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

async fn start(env: &TestEnv) -> (Running, Running) {
    start_with(env, &[]).await
}

/// The core and the provider, the provider with `extra` flags besides the suite's.
async fn start_with(env: &TestEnv, extra: &[&str]) -> (Running, Running) {
    airunway_e2e::providers::delete_all(&env.client).await;
    let core = stack::start_core(env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let identity = stack::service_account_identity(
        env,
        "deploy/providers/vllm/rbac.yaml",
        "airunway-provider-vllm",
    )
    .await;
    let mut flags = vec!["--heartbeat-interval=1s", "--finalizer-timeout=30s"];
    flags.extend_from_slice(extra);
    let provider =
        stack::start_provider(env, "airunway-provider-vllm", &identity, &flags, "vllm-0").await;
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, "vllm", WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    (core, provider)
}

fn deployment(name: &str, spec: Value) -> ModelDeployment {
    serde_json::from_value(
        json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": name, "labels": {"airunway.ai/team": "e2e"}}, "spec": spec}),
    )
    .unwrap()
}

/// An image reference on a loopback port nothing listens on: resolution fails at once, and
/// no request leaves the machine.
fn unreachable_image() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("127.0.0.1:{port}/vllm/vllm-openai:offline")
}

fn on_vllm(image: &str) -> Value {
    json!({"model": {"id": "Qwen/Qwen3-0.6B", "servedName": "qwen3"},
           "engine": {"type": "vllm", "contextLength": 4096, "image": image,
                      "args": {"gpu-memory-utilization": "0.9", "max-model-len": "2048"},
                      "extraArgs": ["--seed", "7"]},
           "resources": {"gpu": {"count": 2}, "memory": "8Gi"},
           "secrets": {"huggingFaceToken": "hf-token"},
           "provider": {"name": "vllm"}})
}

fn args(deployment: &Deployment) -> Vec<String> {
    deployment
        .spec
        .clone()
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers[0]
        .args
        .clone()
        .unwrap_or_default()
}

fn replicas(md: &ModelDeployment) -> (Option<i32>, Option<i32>) {
    let r = md
        .status
        .as_ref()
        .and_then(|s| s.replicas.clone())
        .unwrap_or_default();
    (r.desired, r.ready)
}

async fn labelled<K>(api: &Api<K>, name: &str) -> Vec<String>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.list(&ListParams::default().labels(&format!("{}={name}", labels::DEPLOYMENT)))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|o| o.meta().name.clone())
        .collect()
}

#[tokio::test]
async fn runs_on_simulated_gpu_nodes_scales_to_zero_and_back_drift_and_deletion() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("vllm-lifecycle").await;
    let (core, provider) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let services: Api<Service> = Api::namespaced(env.client.clone(), &env.namespace);

    // A real OCI registry on loopback with a tiny image pushed by the image tool.
    let registry = LocalRegistry::start(
        &env.control_plane
            .dir
            .join(format!("registry-{}", env.namespace)),
    )
    .unwrap();
    // Built "3 days 2 hours ago" by its OCI label (its config's `created` says otherwise:
    // the label wins), with a revision label.
    let built = jiff::Timestamp::now()
        .checked_sub(jiff::SignedDuration::from_hours(74))
        .unwrap()
        .round(jiff::Unit::Second)
        .unwrap()
        .to_string();
    let digest = registry
        .push_image(
            "vllm/vllm-openai",
            "e2e",
            Some("2020-01-02T03:04:05Z"),
            &[
                ("org.opencontainers.image.created", built.as_str()),
                ("org.opencontainers.image.revision", "4f2c9e1"),
            ],
        )
        .unwrap();
    let image = format!("{}/vllm/vllm-openai:e2e", registry.address);
    let agent = "airunway-provider-vllm/";

    let started = Instant::now();
    mds.create(
        &PostParams::default(),
        &deployment("direct", on_vllm(&image)),
    )
    .await
    .unwrap();
    let md = wait_for(&mds, "direct", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    eprintln!(
        "vLLM deployment Running {:.1}s after creation",
        started.elapsed().as_secs_f64()
    );
    let status = md.status.clone().unwrap();
    let provider_status = status.provider.clone().unwrap();
    assert_eq!(provider_status.name.as_deref(), Some("vllm"));
    assert_eq!(
        (
            provider_status.resource_name.as_deref(),
            provider_status.resource_kind.as_deref()
        ),
        (Some("direct"), Some("Deployment"))
    );
    let endpoint = status.endpoint.clone().unwrap();
    assert_eq!(
        (endpoint.service.as_deref(), endpoint.port),
        (Some("direct"), Some(8000))
    );
    assert_eq!(replicas(&md), (Some(1), Some(1)));

    // status.image: resolved to the digest the registry holds, by one manifest request.
    let resolved = status.image.clone().unwrap();
    assert_eq!(resolved.requested.as_deref(), Some(image.as_str()));
    assert_eq!(resolved.digest.as_deref(), Some(digest.as_str()));
    assert_eq!(
        resolved.resolved,
        Some(format!("{}/vllm/vllm-openai@{digest}", registry.address))
    );
    assert_eq!(resolved.source.as_deref(), Some("custom"));
    // The build metadata, from the image config blob the registry served.
    assert_eq!(
        (
            resolved.created_at.as_deref(),
            resolved.revision.as_deref(),
            resolved.age.as_deref()
        ),
        (Some(built.as_str()), Some("4f2c9e1"), Some("3d"))
    );
    let image_resolved = md.condition(condition_types::IMAGE_RESOLVED).unwrap();
    // (Resolved on the first reconcile; the ones since reused it.)
    assert_eq!(image_resolved.status, ConditionStatus::True);
    assert!(
        matches!(
            image_resolved.reason.as_deref(),
            Some("ImageResolved" | "ImageResolutionReused")
        ),
        "{image_resolved:?}"
    );
    assert_eq!(
        md.condition(condition_types::IMAGE_VERIFIED)
            .map(|c| c.status),
        Some(ConditionStatus::Unknown)
    );
    assert_eq!(
        md.condition(condition_types::UNSUPPORTED_IMAGE)
            .and_then(|c| c.reason.clone())
            .as_deref(),
        Some("CustomImage")
    );
    // HEAD of the tag for the digest, GET of the manifest by digest (then its config blob).
    assert_eq!(registry.manifest_requests("vllm/vllm-openai", agent), 2);
    assert_eq!(registry.blob_requests("vllm/vllm-openai", agent), 1);
    for type_ in [
        condition_types::PROVIDER_COMPATIBLE,
        condition_types::RESOURCE_CREATED,
        condition_types::READY,
    ] {
        assert_eq!(
            md.condition(type_).map(|c| c.status),
            Some(ConditionStatus::True),
            "{type_}"
        );
    }

    // The Deployment: owned, labelled, applied by vllm-provider, the direct vLLM command line.
    let live = deployments.get("direct").await.unwrap();
    let meta = &live.metadata;
    let owner = &meta.owner_references.clone().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("ModelDeployment", "direct", Some(true))
    );
    let object_labels = meta.labels.clone().unwrap();
    for (key, value) in [
        ("airunway.ai/managed-by", "airunway"),
        ("airunway.ai/deployment", "direct"),
        ("airunway.ai/team", "e2e"),
        ("airunway.ai/engine-type", "vllm"),
    ] {
        assert_eq!(
            object_labels.get(key).map(String::as_str),
            Some(value),
            "{key}"
        );
    }
    let managers: Vec<String> = meta
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert!(
        managers.contains(&"vllm-provider".to_string()),
        "{managers:?}"
    );
    assert_eq!(
        args(&live),
        [
            "--host",
            "0.0.0.0",
            "--port",
            "8000",
            "--model",
            "Qwen/Qwen3-0.6B",
            "--served-model-name",
            "qwen3",
            "--enable-prefix-caching",
            "--tensor-parallel-size",
            "2",
            "--gpu-memory-utilization",
            "0.9",
            "--max-model-len",
            "2048",
            "--seed",
            "7"
        ],
        "--max-model-len from contextLength is left out: engine.args sets it"
    );
    let pod = live.spec.clone().unwrap().template;
    let container = &pod.spec.clone().unwrap().containers[0];
    assert_eq!(
        container.image.as_deref(),
        Some(image.as_str()),
        "a user image runs as given"
    );
    let limits = container.resources.clone().unwrap().limits.unwrap();
    assert_eq!(limits["nvidia.com/gpu"].0, "2");
    let token = container
        .env
        .clone()
        .unwrap()
        .into_iter()
        .find(|e| e.name == "HF_TOKEN")
        .unwrap();
    assert_eq!(
        token.value_from.unwrap().secret_key_ref.unwrap().name,
        "hf-token"
    );
    let startup = container.startup_probe.clone().unwrap();
    assert_eq!(
        (
            startup.initial_delay_seconds,
            startup.period_seconds,
            startup.failure_threshold
        ),
        (Some(15), Some(10), Some(60))
    );
    assert_eq!(
        container.volume_mounts.clone().unwrap()[0].mount_path,
        "/dev/shm"
    );
    let service = services.get("direct").await.unwrap().spec.unwrap();
    assert_eq!(service.ports.unwrap()[0].port, 8000);
    assert_eq!(
        service.selector.unwrap(),
        live.spec.clone().unwrap().selector.match_labels.unwrap()
    );

    // Scale to zero: the Deployment goes to 0 replicas and the deployment stays Running with
    // none ready; then back to one.
    mds.patch(
        "direct",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"scaling": {"replicas": 0}}})),
    )
    .await
    .unwrap();
    wait_for(&deployments, "direct", WAIT, "0 replicas", |d| {
        d.spec.as_ref().and_then(|s| s.replicas) == Some(0)
    })
    .await;
    // Running with none desired and, once the pod is gone, none ready.
    wait_for(
        &mds,
        "direct",
        WAIT,
        "Running with 0 desired, 0 ready",
        |md| md.phase() == Some(Phase::Running) && replicas(md) == (Some(0), Some(0)),
    )
    .await;
    mds.patch(
        "direct",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"scaling": {"replicas": 1}}})),
    )
    .await
    .unwrap();
    wait_for(&mds, "direct", WAIT, "Running with 1 ready again", |md| {
        md.phase() == Some(Phase::Running) && replicas(md) == (Some(1), Some(1))
    })
    .await;

    // Drift on the Deployment and the Service is restored.
    deployments
        .patch(
            "direct",
            &PatchParams::apply("someone-else").force(),
            &apply_body::apply(&json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "direct"}, "spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    wait_for(
        &deployments,
        "direct",
        WAIT,
        "replicas restored to 1",
        |d| d.spec.as_ref().and_then(|s| s.replicas) == Some(1),
    )
    .await;
    services
        .patch(
            "direct",
            &PatchParams::apply("someone-else").force(),
            &apply_body::apply(&json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "direct"}, "spec": {"selector": {"app": "elsewhere"}}})),
        )
        .await
        .unwrap();
    wait_for(&services, "direct", WAIT, "selector restored", |s| {
        s.spec
            .as_ref()
            .and_then(|s| s.selector.as_ref())
            .and_then(|s| s.get("app"))
            .map(String::as_str)
            == Some("direct")
    })
    .await;
    env.wait_for_event("DriftDetected", |n| n.contains("'direct'"))
        .await;

    // Every reconcile since (scale to zero and back, two drift repairs) reused status.image:
    // still the one manifest request in the registry's access log, and the same metadata
    // (the age is the image's age at resolution: the clock does not rewrite the status).
    let md = mds.get("direct").await.unwrap();
    assert_eq!(md.status.as_ref().unwrap().image.as_ref(), Some(&resolved));
    assert_eq!(
        md.condition(condition_types::IMAGE_RESOLVED)
            .and_then(|c| c.reason.clone())
            .as_deref(),
        Some("ImageResolutionReused")
    );
    assert_eq!(
        registry.manifest_requests("vllm/vllm-openai", agent),
        2,
        "the unchanged reference is not asked again"
    );
    // Another deployment on the same image: only the HEAD for its digest, the build metadata
    // comes from the provider's cache (by digest).
    mds.create(
        &PostParams::default(),
        &deployment("same-image", on_vllm(&image)),
    )
    .await
    .unwrap();
    let same = wait_for(&mds, "same-image", WAIT, "its image resolved", |md| {
        md.status
            .as_ref()
            .and_then(|s| s.image.as_ref())
            .is_some_and(|i| i.resolved.is_some())
    })
    .await;
    let same = same.status.unwrap().image.unwrap();
    assert_eq!(
        (same.created_at.as_deref(), same.revision.as_deref()),
        (Some(built.as_str()), Some("4f2c9e1"))
    );
    assert_eq!(registry.manifest_requests("vllm/vllm-openai", agent), 3);
    assert_eq!(registry.blob_requests("vllm/vllm-openai", agent), 1);
    mds.delete("same-image", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&mds, "same-image", WAIT).await;
    // A new requested reference is resolved again, to the new image's digest: a
    // multi-platform index whose linux/amd64 entry (listed after an arm64 one) gives the
    // build metadata, from its config's `created` (no labels, so no revision).
    for (tag, created) in [
        ("e2e-v2-arm64", "2019-03-04T05:06:07Z"),
        ("e2e-v2-amd64", "2021-05-06T07:08:09Z"),
    ] {
        registry
            .push_image("vllm/vllm-openai", tag, Some(created), &[])
            .unwrap();
    }
    let digest_v2 = registry
        .push_index(
            "vllm/vllm-openai",
            "e2e-v2",
            &[
                ("e2e-v2-arm64", "linux", "arm64"),
                ("e2e-v2-amd64", "linux", "amd64"),
            ],
        )
        .await
        .unwrap();
    assert_ne!(digest_v2, digest);
    let image_v2 = format!("{}/vllm/vllm-openai:e2e-v2", registry.address);
    mds.patch(
        "direct",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"spec": {"engine": {"image": image_v2}, "model": {"servedName": null}}}),
        ),
    )
    .await
    .unwrap();
    // Without `servedName`, no `--served-model-name`: vLLM serves the model under `model.id`,
    // the name the gateway routes on (the Go AI Runway's render).
    wait_for(
        &deployments,
        "direct",
        WAIT,
        "no --served-model-name without servedName",
        |d| {
            let args = args(d);
            !args.contains(&"--served-model-name".to_string())
                && args.contains(&"Qwen/Qwen3-0.6B".to_string())
        },
    )
    .await;
    wait_for(&mds, "direct", WAIT, "the new image resolved", |md| {
        md.status
            .as_ref()
            .and_then(|s| s.image.as_ref())
            .and_then(|i| i.digest.as_deref())
            == Some(digest_v2.as_str())
    })
    .await;
    // HEAD of the tag, the index by digest, then its amd64 manifest; one config blob.
    assert_eq!(registry.manifest_requests("vllm/vllm-openai", agent), 6);
    assert_eq!(registry.blob_requests("vllm/vllm-openai", agent), 2);
    let v2 = mds
        .get("direct")
        .await
        .unwrap()
        .status
        .unwrap()
        .image
        .unwrap();
    assert_eq!(
        (v2.created_at.as_deref(), v2.revision.as_deref()),
        (Some("2021-05-06T07:08:09Z"), None)
    );
    assert!(
        v2.age.as_deref().is_some_and(|a| a.ends_with('d')),
        "{v2:?}"
    );

    // Deletion removes both objects and releases the deployment.
    mds.delete("direct", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&mds, "direct", WAIT).await;
    wait_deleted(&deployments, "direct", WAIT).await;
    wait_deleted(&services, "direct", WAIT).await;
    eprintln!("lifecycle done in {:.1}s", started.elapsed().as_secs_f64());
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}

#[tokio::test]
async fn explicit_only_compatibility_networking_and_registration() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("vllm-compat").await;
    let (core, provider) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);

    // Explicit-only: a deployment that does not name vllm is never given to it.
    let offline = unreachable_image();
    let mut unnamed = on_vllm(&offline);
    unnamed["provider"] = json!(null);
    mds.create(&PostParams::default(), &deployment("unnamed", unnamed))
        .await
        .unwrap();

    let tail = "conflicts with Direct vLLM generated networking; Direct vLLM currently requires host 0.0.0.0 and port 8000 to keep the container, Service, and probes aligned";
    let mut port = on_vllm(&offline);
    port["engine"]["args"] = json!({"port": "9000"});
    let mut host = on_vllm(&offline);
    host["engine"]["extraArgs"] = json!(["--host=127.0.0.1"]);
    // An engine the provider does not register: the core checks its registered capabilities at
    // reconcile, as the Go AI Runway does (issue 32, V1; the provider's own "vLLM provider only
    // supports vllm engine, got sglang" is its second line, unit-tested); the networking
    // arguments: the provider's check.
    for (name, spec, condition, message) in [
        (
            "sgl",
            json!({"model": {"id": "a/b"}, "engine": {"type": "sglang"}, "resources": {"gpu": {"count": 1}}, "provider": {"name": "vllm"}}),
            condition_types::VALIDATED,
            "spec.engine.type: provider vllm does not support engine sglang".to_string(),
        ),
        (
            "port",
            port,
            condition_types::PROVIDER_COMPATIBLE,
            format!("engine arg \"port\" {tail}"),
        ),
        (
            "host",
            host,
            condition_types::PROVIDER_COMPATIBLE,
            format!("engine extraArg \"--host=127.0.0.1\" {tail}"),
        ),
    ] {
        mds.create(&PostParams::default(), &deployment(name, spec))
            .await
            .unwrap();
        let (md, compatible) =
            wait_for_condition(&mds, name, WAIT, condition, ConditionStatus::False).await;
        assert_eq!(
            compatible.message.as_deref(),
            Some(message.as_str()),
            "{name}"
        );
        assert_eq!(md.phase(), Some(Phase::Failed), "{name}");
        assert!(labelled(&deployments, name).await.is_empty(), "{name}");
    }

    // The unnamed deployment got a verdict from the core and never reached vLLM.
    let unnamed = wait_for(&mds, "unnamed", WAIT, "a selection verdict", |md| {
        md.condition(condition_types::PROVIDER_SELECTED).is_some()
    })
    .await;
    assert_ne!(unnamed.selected_provider(), Some("vllm"));
    assert!(labelled(&deployments, "unnamed").await.is_empty());
    assert!(
        !unnamed
            .metadata
            .finalizers
            .unwrap_or_default()
            .contains(&"airunway.ai/vllm-provider".to_string())
    );

    // The example (the sandbox applies it too), its image on an unreachable registry: the
    // failed resolution of a user image is not fatal; it runs the tag and reaches Running,
    // with the flag engine.args sets instead of the one the provider derives.
    let mut manifests = airunway_e2e::manifests::read(
        &airunway_e2e::paths::workspace_root().join("examples/gpu-vllm-direct.yaml"),
    );
    for manifest in &mut manifests {
        manifest["metadata"]["namespace"] = json!(env.namespace);
        manifest["spec"]["engine"]["image"] = json!(offline);
    }
    airunway_e2e::manifests::apply(&env.client, &manifests).await;
    let md = wait_for(&mds, "qwen3-vllm", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    let failed = md.condition(condition_types::IMAGE_RESOLVED).unwrap();
    assert_eq!(
        (failed.status, failed.reason.as_deref()),
        (ConditionStatus::False, Some("ImageResolutionFailed"))
    );
    let text = failed.message.clone().unwrap_or_default();
    assert!(
        text.starts_with(&format!(
            "Failed to resolve Direct vLLM image \"{offline}\" from custom selection: cannot reach the registry"
        )) && text.ends_with(" Continuing with the user-specified image reference."),
        "{text}"
    );
    assert_eq!(
        md.status.unwrap().endpoint.unwrap().service.as_deref(),
        Some("qwen3-vllm")
    );
    let example_args = args(&deployments.get("qwen3-vllm").await.unwrap());
    let at = example_args
        .iter()
        .position(|a| a == "--max-model-len")
        .unwrap();
    assert_eq!(example_args[at + 1], "4096", "{example_args:?}");
    assert_eq!(
        example_args
            .iter()
            .filter(|a| *a == "--max-model-len")
            .count(),
        1
    );

    // The registration: always ready with no CRD, explicit-only, vLLM on GPUs, aggregated.
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    let ipc = ipcs.get("vllm").await.unwrap();
    assert!(ipc.spec.selection_rules.as_ref().is_none_or(Vec::is_empty));
    let status = ipc.status.clone().unwrap();
    assert_eq!(status.ready, Some(true));
    assert_eq!(status.upstream_crd_version.as_deref(), Some("apps/v1"));
    let engines = serde_json::to_value(&ipc.spec.capabilities).unwrap()["engines"].clone();
    assert_eq!(engines[0]["requiresCRD"], false);
    assert_eq!(engines[0]["servingModes"], json!(["aggregated"]));
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}

/// The default image (`--default-image`, here on the local registry) that cannot be resolved
/// holds the deployment `Failed` with the reference's message and applies nothing; once the
/// registry has it, the next attempt (at the resync interval) resolves it and the deployment
/// runs the default image pinned to its digest.
#[tokio::test]
async fn default_image_failure_holds_then_recovers() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("vllm-default").await;
    let registry = LocalRegistry::start(
        &env.control_plane
            .dir
            .join(format!("registry-{}", env.namespace)),
    )
    .unwrap();
    let default_image = format!("{}/vllm/vllm-openai:cu130-nightly", registry.address);
    let flag = format!("--default-image={default_image}");
    let (core, provider) = start_with(&env, &[&flag, "--resync-interval=2s"]).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let services: Api<Service> = Api::namespaced(env.client.clone(), &env.namespace);

    // Nothing pushed yet: the registry answers 404 for the default image's manifest.
    let mut spec = on_vllm("unused");
    spec["engine"]
        .as_object_mut()
        .unwrap()
        .remove("image")
        .unwrap();
    let started = Instant::now();
    mds.create(&PostParams::default(), &deployment("default", spec))
        .await
        .unwrap();
    let expected = format!(
        "failed to resolve default vLLM image \"{default_image}\": the registry {} answered 404 for the manifest of vllm/vllm-openai:cu130-nightly",
        registry.address
    );
    let md = wait_for(&mds, "default", WAIT, "Failed by the default image", |md| {
        md.phase() == Some(Phase::Failed)
    })
    .await;
    let status = md.status.clone().unwrap();
    assert_eq!(status.message.as_deref(), Some(expected.as_str()));
    let created = md.condition(condition_types::RESOURCE_CREATED).unwrap();
    assert_eq!(
        (created.status, created.message.as_deref()),
        (ConditionStatus::False, Some(expected.as_str()))
    );
    let image_resolved = md.condition(condition_types::IMAGE_RESOLVED).unwrap();
    assert_eq!(
        (image_resolved.status, image_resolved.reason.as_deref()),
        (ConditionStatus::False, Some("ImageResolutionFailed"))
    );
    let image = status.image.clone().unwrap();
    assert_eq!(image.requested.as_deref(), Some(default_image.as_str()));
    assert_eq!(
        (image.source.as_deref(), image.resolved),
        (Some("nightly"), None)
    );
    assert!(labelled(&deployments, "default").await.is_empty());
    assert!(labelled(&services, "default").await.is_empty());
    // Tried again at the resync interval, still held, still nothing applied.
    let agent = "airunway-provider-vllm/";
    let deadline = Instant::now() + WAIT;
    while registry.manifest_requests("vllm/vllm-openai", agent) < 2 {
        assert!(Instant::now() < deadline, "no second attempt");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        mds.get("default").await.unwrap().phase(),
        Some(Phase::Failed)
    );
    assert!(labelled(&deployments, "default").await.is_empty());

    // The registry gets the image: the deployment recovers on its own.
    let digest = registry
        .push_tiny_image("vllm/vllm-openai", "cu130-nightly")
        .unwrap();
    let md = wait_for(
        &mds,
        "default",
        WAIT,
        "Running on the default image",
        |md| md.phase() == Some(Phase::Running),
    )
    .await;
    eprintln!(
        "default-image deployment Running {:.1}s after creation",
        started.elapsed().as_secs_f64()
    );
    let pinned = format!("{}/vllm/vllm-openai@{digest}", registry.address);
    let image = md.status.clone().unwrap().image.unwrap();
    assert_eq!(image.resolved.as_deref(), Some(pinned.as_str()));
    assert_eq!(
        md.condition(condition_types::IMAGE_RESOLVED)
            .map(|c| c.status),
        Some(ConditionStatus::True)
    );
    let live = deployments.get("default").await.unwrap();
    let container = &live.spec.unwrap().template.spec.unwrap().containers[0];
    assert_eq!(container.image.as_deref(), Some(pinned.as_str()));
    assert!(services.get_opt("default").await.unwrap().is_some());

    mds.delete("default", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&mds, "default", WAIT).await;
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}

/// The pods the Deployments named `owners` run, found through ownership (each pod's
/// ReplicaSet is `<deployment>-<pod-template-hash>`), not through labels: what the selector
/// must select, and nothing else.
fn pods_run_by(pods: &[Pod], owners: &[&str]) -> Vec<String> {
    pods.iter()
        .filter(|pod| {
            pod.metadata.owner_references.iter().flatten().any(|o| {
                o.kind == "ReplicaSet"
                    && o.name
                        .rsplit_once('-')
                        .is_some_and(|(deployment, _)| owners.contains(&deployment))
            })
        })
        .filter_map(|pod| pod.metadata.name.clone())
        .collect()
}

/// Plays the kubelet's readiness probe on pod `name`: its `Ready` and `ContainersReady`
/// conditions (KWOK's pod-ready stage only acts on `Pending` pods, so the change stays until
/// the next one).
async fn set_pod_ready(pods: &Api<Pod>, name: &str, ready: bool) {
    let status = if ready { "True" } else { "False" };
    let reason = if ready { "" } else { "ReadinessProbeFailed" };
    pods.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Strategic(json!({"status": {"conditions": [
            {"type": "Ready", "status": status, "reason": reason},
            {"type": "ContainersReady", "status": status, "reason": reason}]}})),
    )
    .await
    .unwrap();
}

fn condition_of(md: &ModelDeployment, type_: &str) -> (ConditionStatus, String, String) {
    let condition = md.condition(type_).unwrap_or_else(|| panic!("no {type_}"));
    (
        condition.status,
        condition.reason.clone().unwrap_or_default(),
        condition.message.clone().unwrap_or_default(),
    )
}

/// Waits until deployment `name` is `Degraded` `status` with `message`; returns it.
async fn wait_degraded(
    mds: &Api<ModelDeployment>,
    name: &str,
    status: ConditionStatus,
    message: &str,
) -> ModelDeployment {
    wait_for(
        mds,
        name,
        WAIT,
        &format!("Degraded {status:?}: {message}"),
        |md| {
            md.condition(condition_types::DEGRADED)
                .is_some_and(|c| c.status == status && c.message.as_deref() == Some(message))
        },
    )
    .await
}

#[tokio::test]
async fn kubectl_scale_in_place_workload_selector_zero_and_degraded() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("vllm-scale").await;
    let (core, provider) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    let name = "scaled";
    let mut spec = on_vllm(&unreachable_image());
    spec["resources"] = json!({"gpu": {"count": 1}, "memory": "8Gi"});
    let started = Instant::now();
    mds.create(&PostParams::default(), &deployment(name, spec))
        .await
        .unwrap();
    let md = wait_for(&mds, name, WAIT, "Running with 1 ready", |md| {
        md.phase() == Some(Phase::Running) && replicas(md) == (Some(1), Some(1))
    })
    .await;
    let uid = deployments.get(name).await.unwrap().metadata.uid.unwrap();

    // status.workload: the Deployment (upstream and workload, with its uid), its selector,
    // the serving container and port; status.selector in string form.
    let status = md.status.clone().unwrap();
    let workload = status.workload.clone().unwrap();
    let upstream = workload.upstream.clone().unwrap();
    assert_eq!(
        (
            upstream.api_version.as_str(),
            upstream.kind.as_str(),
            upstream.name.as_str(),
            upstream.uid.as_deref()
        ),
        ("apps/v1", "Deployment", name, Some(uid.as_str()))
    );
    let workloads = workload.workloads.clone().unwrap();
    assert_eq!(workloads.len(), 1, "{workloads:?}");
    assert_eq!(
        (
            workloads[0].name.as_str(),
            workloads[0].uid.as_deref(),
            workloads[0].role.as_deref()
        ),
        (name, Some(uid.as_str()), Some("aggregated"))
    );
    assert_eq!(
        (workload.container.as_deref(), workload.port),
        (Some("vllm"), Some(8000))
    );
    assert_eq!(
        status.selector.as_deref(),
        Some("airunway.ai/deployment=scaled,app=scaled")
    );
    assert_eq!(
        condition_of(&md, condition_types::DEGRADED),
        (
            ConditionStatus::False,
            "NotDegraded".into(),
            "1 of 1 replicas ready".into()
        )
    );

    // A pod that carries some of the labels but is not served by the deployment: never
    // selected.
    let decoy: Pod = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "decoy", "labels": {"app": name, labels::MODEL_DEPLOYMENT: name}},
        "spec": {"containers": [{"name": "c", "image": "registry.example/decoy:1"}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &decoy).await.unwrap();

    // kubectl scale through the scale subresource: the same Deployment (uid) at 3 replicas,
    // and the selector selects exactly its 3 pods.
    let output = airunway_e2e::scale::kubectl_scale(&env, name, 3).await;
    eprintln!("kubectl: {output}");
    let live = wait_for(&deployments, name, WAIT, "3 replicas", |d| {
        d.spec.as_ref().and_then(|s| s.replicas) == Some(3)
    })
    .await;
    assert_eq!(live.metadata.uid.as_deref(), Some(uid.as_str()), "in place");
    wait_for(&mds, name, WAIT, "Running with 3 ready", |md| {
        md.phase() == Some(Phase::Running) && replicas(md) == (Some(3), Some(3))
    })
    .await;
    let selector = airunway_e2e::scale::wait_selector_selects(
        &env,
        name,
        |all| pods_run_by(all, &[name]),
        WAIT,
    )
    .await;
    let serving = pods_run_by(
        &pods.list(&ListParams::default()).await.unwrap().items,
        &[name],
    );
    assert_eq!(serving.len(), 3, "{serving:?}");
    eprintln!(
        "scaled to 3 in place, {selector} selects exactly {serving:?} ({:.1}s)",
        started.elapsed().as_secs_f64()
    );

    // Four replicas, one failing its readiness probe: the Deployment stays Available
    // (maxUnavailable 1 of 4), so the phase is Running and Ready True, and Degraded says it
    // serves at reduced capacity; it clears when the pod is ready again.
    airunway_e2e::scale::kubectl_scale(&env, name, 4).await;
    wait_for(&mds, name, WAIT, "Running with 4 ready", |md| {
        md.phase() == Some(Phase::Running) && replicas(md) == (Some(4), Some(4))
    })
    .await;
    let all = pods.list(&ListParams::default()).await.unwrap().items;
    let victim = pods_run_by(&all, &[name]).into_iter().next().unwrap();
    set_pod_ready(&pods, &victim, false).await;
    let md = wait_degraded(
        &mds,
        name,
        ConditionStatus::True,
        "3 of 4 replicas ready: serving at reduced capacity",
    )
    .await;
    assert_eq!(
        condition_of(&md, condition_types::DEGRADED).1,
        "ReplicasUnavailable"
    );
    assert_eq!(md.phase(), Some(Phase::Running));
    assert_eq!(
        md.condition(condition_types::READY).map(|c| c.status),
        Some(ConditionStatus::True)
    );
    set_pod_ready(&pods, &victim, true).await;
    wait_degraded(&mds, name, ConditionStatus::False, "4 of 4 replicas ready").await;

    // Two replicas, one not ready: below the controller's minimum availability (the Go mapping
    // would say Deploying and take the gateway route away), here still Running and Ready — it
    // serves — with Degraded=True; cleared once it is ready.
    airunway_e2e::scale::kubectl_scale(&env, name, 2).await;
    wait_for(&mds, name, WAIT, "Running with 2 ready", |md| {
        md.phase() == Some(Phase::Running) && replicas(md) == (Some(2), Some(2))
    })
    .await;
    let all = pods.list(&ListParams::default()).await.unwrap().items;
    let victim = pods_run_by(&all, &[name])
        .into_iter()
        .find(|pod| {
            all.iter().any(|p| {
                p.metadata.name.as_deref() == Some(pod.as_str())
                    && p.metadata.deletion_timestamp.is_none()
            })
        })
        .unwrap();
    set_pod_ready(&pods, &victim, false).await;
    let md = wait_degraded(
        &mds,
        name,
        ConditionStatus::True,
        "1 of 2 replicas ready: serving at reduced capacity",
    )
    .await;
    eprintln!(
        "1 of 2 ready: phase {:?}, Ready {:?}",
        md.phase(),
        md.condition(condition_types::READY).map(|c| c.status)
    );
    let md = wait_for(&mds, name, WAIT, "Running and Ready at 1 of 2", |md| {
        md.phase() == Some(Phase::Running)
            && md.condition(condition_types::READY).is_some_and(|c| {
                c.status == ConditionStatus::True
                    && c.message.as_deref() == Some("Serving: 1 of 2 replicas ready (see Degraded)")
            })
    })
    .await;
    assert_eq!(
        md.status.as_ref().and_then(|s| s.message.as_deref()),
        Some("1 of 2 replicas available")
    );
    set_pod_ready(&pods, &victim, true).await;
    wait_degraded(&mds, name, ConditionStatus::False, "2 of 2 replicas ready").await;

    // Zero: the same Deployment at 0, no pod left; the deployment is Running (settled) but
    // not Ready, and keeps its selector for an autoscaler to scale it up again.
    airunway_e2e::scale::kubectl_scale(&env, name, 0).await;
    let live = wait_for(&deployments, name, WAIT, "0 replicas", |d| {
        d.spec.as_ref().and_then(|s| s.replicas) == Some(0)
    })
    .await;
    assert_eq!(live.metadata.uid.as_deref(), Some(uid.as_str()), "in place");
    eventually("no pod of the Deployment left", WAIT, || async {
        let all = pods.list(&ListParams::default()).await.unwrap().items;
        let left = pods_run_by(&all, &[name]);
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!("{left:?}"))
        }
    })
    .await;
    let md = wait_for(&mds, name, WAIT, "scaled to zero", |md| {
        replicas(md) == (Some(0), Some(0))
            && md
                .condition(condition_types::READY)
                .is_some_and(|c| c.reason.as_deref() == Some(reasons::SCALED_TO_ZERO))
    })
    .await;
    assert_eq!(md.phase(), Some(Phase::Running));
    assert_eq!(
        condition_of(&md, condition_types::READY),
        (
            ConditionStatus::True,
            reasons::SCALED_TO_ZERO.into(),
            airunway_api::provider::vllm_kit::status::SCALED_TO_ZERO.into()
        )
    );
    assert_eq!(
        condition_of(&md, condition_types::DEGRADED).0,
        ConditionStatus::False
    );
    assert_eq!(
        md.status.as_ref().and_then(|s| s.selector.as_deref()),
        Some("airunway.ai/deployment=scaled,app=scaled")
    );

    // And back to one: the same Deployment serves again.
    airunway_e2e::scale::kubectl_scale(&env, name, 1).await;
    let md = wait_for(&mds, name, WAIT, "Running and Ready with 1", |md| {
        replicas(md) == (Some(1), Some(1))
            && md.condition(condition_types::READY).map(|c| c.status) == Some(ConditionStatus::True)
    })
    .await;
    assert_eq!(md.spec.scaling.as_ref().and_then(|s| s.replicas), Some(1));
    assert_eq!(
        deployments.get(name).await.unwrap().metadata.uid.as_deref(),
        Some(uid.as_str())
    );
    airunway_e2e::scale::wait_selector_selects(&env, name, |all| pods_run_by(all, &[name]), WAIT)
        .await;
    eprintln!("scale test done in {:.1}s", started.elapsed().as_secs_f64());
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}
