//! The real `airunway-provider-llmd` (running as its ServiceAccount with the shipped RBAC) and
//! the real core, on the harness's cluster: kube-scheduler places the vLLM Pods on KWOK's
//! simulated GPU nodes, KWOK runs them, and the real deployment and replicaset controllers
//! write the Deployment conditions the provider translates. No test writes a Deployment
//! status; the scale test plays a kubelet whose readiness probe fails on one pod (that pod's
//! `Ready` condition), which is all a node reports when a replica stops serving.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use airunway_api::apply_body;
use airunway_api::constants::{condition_types, labels, messages, reasons};
use airunway_api::v1alpha1::{ConditionStatus, InferenceProviderConfig, ModelDeployment, Phase};
use airunway_e2e::stack::{self, FAST_HEALTH, Running};
use airunway_e2e::wait::{eventually, wait_deleted, wait_for, wait_for_condition};
use airunway_e2e::{TestEnv, cluster_lock};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

async fn start(env: &TestEnv, heartbeat: &str) -> (Running, Running) {
    airunway_e2e::providers::delete_all(&env.client).await;
    let core = stack::start_core(env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let provider = start_provider(env, heartbeat).await;
    (core, provider)
}

async fn start_provider(env: &TestEnv, heartbeat: &str) -> Running {
    let identity = stack::service_account_identity(
        env,
        "deploy/providers/llmd/rbac.yaml",
        "airunway-provider-llmd",
    )
    .await;
    let provider = stack::start_provider(
        env,
        "airunway-provider-llmd",
        &identity,
        &[heartbeat, "--finalizer-timeout=30s"],
        "llmd-0",
    )
    .await;
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, "llmd", WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    provider
}

fn deployment(name: &str, spec: Value) -> ModelDeployment {
    serde_json::from_value(
        json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": name, "labels": {"airunway.ai/team": "e2e"}}, "spec": spec}),
    )
    .unwrap()
}

fn aggregated_on_llmd() -> Value {
    json!({"model": {"id": "Qwen/Qwen3-0.6B", "servedName": "qwen3"},
           "engine": {"type": "vllm", "enablePrefixCaching": false, "args": {"gpu-memory-utilization": "0.9"},
                      "extraArgs": ["--seed", "7"]},
           "resources": {"gpu": {"count": 2}, "memory": "8Gi"},
           "secrets": {"huggingFaceToken": "hf-token"},
           "podTemplate": {"metadata": {"labels": {"team": "e2e"}}},
           "provider": {"name": "llmd", "overrides": {"spec": {"minReadySeconds": 2}}}})
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

fn is_available(deployment: &Deployment) -> bool {
    deployment
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| {
            c.iter()
                .any(|c| c.type_ == "Available" && c.status == "True")
        })
}

/// Objects of `kind` labelled for deployment `name` in the test namespace.
async fn labelled<K>(api: &Api<K>, name: &str) -> Vec<String>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut names: Vec<String> = api
        .list(&ListParams::default().labels(&format!("{}={name}", labels::DEPLOYMENT)))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|o| o.meta().deletion_timestamp.is_none())
        .filter_map(|o| o.meta().name.clone())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn aggregated_and_disaggregated_on_simulated_gpu_nodes_drift_switch_and_deletion() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("llmd-lifecycle").await;
    let (core, provider) = start(&env, "--heartbeat-interval=1s").await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let services: Api<Service> = Api::namespaced(env.client.clone(), &env.namespace);

    // Aggregated: one Deployment and one Service named after the deployment.
    let started = std::time::Instant::now();
    mds.create(
        &PostParams::default(),
        &deployment("agg", aggregated_on_llmd()),
    )
    .await
    .unwrap();
    // The pods are Ready at once on KWOK, but count as available only after minReadySeconds
    // (2 s, an override): the Deployment is Progressing meanwhile.
    // First `Deployments created, waiting for pods to be ready` (Go's text, parity S3) while
    // the Deployment has no conditions, then the Progressing condition's message, naming the
    // ReplicaSet.
    let deploying = wait_for(&mds, "agg", WAIT, "Deploying (Progressing)", |md| {
        md.phase() == Some(Phase::Deploying)
            && md
                .status
                .as_ref()
                .and_then(|s| s.message.as_deref())
                .is_some_and(|m| m.contains("\"agg-"))
    })
    .await;
    assert_eq!(
        deploying
            .condition(condition_types::READY)
            .and_then(|c| c.reason.clone()),
        Some(reasons::DEPLOYMENT_IN_PROGRESS.to_string())
    );
    let md = wait_for(&mds, "agg", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    eprintln!(
        "aggregated deployment Running {:.1}s after creation",
        started.elapsed().as_secs_f64()
    );
    let status = md.status.clone().unwrap();
    // Go's text while Running (parity S1).
    assert_eq!(
        status.message.as_deref(),
        Some("Deployments created, pods are ready")
    );
    let provider_status = status.provider.clone().unwrap();
    assert_eq!(provider_status.name.as_deref(), Some("llmd"));
    assert_eq!(provider_status.resource_name.as_deref(), Some("agg"));
    assert_eq!(provider_status.resource_kind.as_deref(), Some("Deployment"));
    let endpoint = status.endpoint.clone().unwrap();
    assert_eq!(
        (endpoint.service.as_deref(), endpoint.port),
        (Some("agg"), Some(8000))
    );
    let replicas = status.replicas.clone().unwrap();
    assert_eq!(
        (replicas.desired, replicas.ready, replicas.available),
        (Some(1), Some(1), Some(1))
    );
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
    assert_eq!(
        md.condition(condition_types::RESOURCE_CREATED)
            .and_then(|c| c.message.as_deref()),
        Some("Deployment and Service created successfully")
    );
    let live = deployments.get("agg").await.unwrap();
    assert!(
        is_available(&live),
        "the deployment controller's own verdict"
    );
    let meta = &live.metadata;
    let owner = &meta.owner_references.clone().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("ModelDeployment", "agg", Some(true))
    );
    let object_labels = meta.labels.clone().unwrap();
    for (key, value) in [
        ("airunway.ai/managed-by", "airunway"),
        ("airunway.ai/deployment", "agg"),
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
        managers.contains(&"llmd-provider".to_string()),
        "{managers:?}"
    );
    let spec = live.spec.clone().unwrap();
    assert_eq!(spec.replicas, Some(1));
    let pod = spec.template.clone();
    let pod_labels = pod.metadata.clone().unwrap().labels.unwrap();
    for (key, value) in [
        ("team", "e2e"),
        ("app", "agg"),
        ("airunway.ai/deployment", "agg"),
        ("airunway.ai/model-deployment", "agg"),
        ("llm-d.ai/role", "both"),
    ] {
        assert_eq!(
            pod_labels.get(key).map(String::as_str),
            Some(value),
            "{key}"
        );
    }
    let container = &pod.spec.clone().unwrap().containers[0];
    assert_eq!(container.name, "vllm");
    assert_eq!(container.image.as_deref(), Some("vllm/vllm-openai:v0.9.1"));
    let port = &container.ports.clone().unwrap()[0];
    assert_eq!(
        (port.name.as_deref(), port.container_port),
        (Some("http"), 8000)
    );
    let limits = container.resources.clone().unwrap().limits.unwrap();
    assert_eq!(limits["nvidia.com/gpu"].0, "2");
    assert_eq!(limits["memory"].0, "8Gi");
    assert_eq!(
        args(&live),
        [
            "--model",
            "Qwen/Qwen3-0.6B",
            "--served-model-name",
            "qwen3",
            "--no-enable-prefix-caching",
            "--tensor-parallel-size",
            "2",
            "--gpu-memory-utilization",
            "0.9",
            "--seed",
            "7"
        ]
    );
    let env_vars = container.env.clone().unwrap();
    let token = env_vars.iter().find(|e| e.name == "HF_TOKEN").unwrap();
    let secret = token.value_from.clone().unwrap().secret_key_ref.unwrap();
    assert_eq!(
        (secret.name.as_str(), secret.key.as_str()),
        ("hf-token", "HF_TOKEN")
    );
    assert_eq!(
        container
            .readiness_probe
            .clone()
            .unwrap()
            .http_get
            .unwrap()
            .path
            .as_deref(),
        Some("/health")
    );
    let mounts = container.volume_mounts.clone().unwrap();
    assert_eq!(mounts[0].mount_path, "/dev/shm");
    let service = services.get("agg").await.unwrap();
    let service_spec = service.spec.unwrap();
    assert_eq!(service_spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(
        service_spec.selector.unwrap(),
        [
            ("airunway.ai/deployment".to_string(), "agg".to_string()),
            ("app".to_string(), "agg".to_string())
        ]
        .into()
    );
    assert_eq!(service_spec.ports.unwrap()[0].port, 8000);

    // Drift on either object is restored, with DriftDetected.
    deployments
        .patch(
            "agg",
            &PatchParams::apply("someone-else").force(),
            &apply_body::apply(&json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "agg"}, "spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    wait_for(&deployments, "agg", WAIT, "replicas restored to 1", |d| {
        d.spec.as_ref().and_then(|s| s.replicas) == Some(1)
    })
    .await;
    services
        .patch(
            "agg",
            &PatchParams::apply("someone-else").force(),
            &apply_body::apply(&json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "agg"}, "spec": {"selector": {"app": "elsewhere"}}})),
        )
        .await
        .unwrap();
    wait_for(&services, "agg", WAIT, "selector restored", |s| {
        s.spec
            .as_ref()
            .and_then(|s| s.selector.as_ref())
            .and_then(|s| s.get("app"))
            .map(String::as_str)
            == Some("agg")
    })
    .await;
    // Both restorations are DriftDetected events on the deployment (one event series: the
    // event key has no room for the object, so the series keeps the first note).
    eventually("two DriftDetected occurrences", WAIT, || async {
        let events: Api<Event> = Api::namespaced(env.client.clone(), &env.namespace);
        let drift: Vec<Event> = events
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("DriftDetected"))
            .collect();
        let occurrences: i32 = drift
            .iter()
            .map(|e| e.series.as_ref().map_or(1, |s| s.count))
            .sum();
        let first = drift
            .first()
            .and_then(|e| e.note.clone())
            .unwrap_or_default();
        if occurrences >= 2 && first.contains("Deployment 'agg'") {
            Ok(())
        } else {
            Err(format!("{occurrences} occurrence(s): {first}"))
        }
    })
    .await;

    // An identity field (the model) changed: the objects are deleted and created anew. With
    // `servedName` dropped as well, vLLM gets no `--served-model-name` and serves the model under
    // `model.id`, the name the gateway routes on (the Go AI Runway's render).
    let old_uid = deployments.get("agg").await.unwrap().metadata.uid;
    mds.patch(
        "agg",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"model": {"id": "Qwen/Qwen3-1.7B", "servedName": null}}})),
    )
    .await
    .unwrap();
    let recreated = wait_for(
        &deployments,
        "agg",
        WAIT,
        "recreated for the new model",
        |d| d.metadata.uid != old_uid && args(d).contains(&"Qwen/Qwen3-1.7B".to_string()),
    )
    .await;
    assert!(
        !args(&recreated).contains(&"--served-model-name".to_string()),
        "{:?}",
        args(&recreated)
    );
    assert_eq!(recreated.spec.unwrap().replicas, Some(1));
    wait_for(&mds, "agg", WAIT, "Running the new model", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    env.wait_for_event("ResourceRecreated", |n| n.contains("'agg'"))
        .await;

    // Aggregated -> disaggregated: prefill and decode objects, none of the old shape left.
    mds.patch(
        "agg",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"spec": {"resources": null, "serving": {"mode": "disaggregated"},
            "scaling": {"prefill": {"replicas": 2, "gpu": {"count": 1}},
                        "decode": {"replicas": 1, "gpu": {"count": 2}}}}}),
        ),
    )
    .await
    .unwrap();
    let md = wait_for(&mds, "agg", WAIT, "Running disaggregated", |md| {
        md.phase() == Some(Phase::Running)
            && md
                .status
                .as_ref()
                .and_then(|s| s.endpoint.as_ref())
                .and_then(|e| e.service.as_deref())
                == Some("agg-decode")
    })
    .await;
    let replicas = md.status.clone().unwrap().replicas.unwrap();
    assert_eq!(
        (replicas.desired, replicas.ready),
        (Some(3), Some(3)),
        "prefill and decode summed"
    );
    eventually("only the disaggregated objects", WAIT, || async {
        let d = labelled(&deployments, "agg").await;
        let s = labelled(&services, "agg").await;
        let wanted = vec!["agg-decode".to_string(), "agg-prefill".to_string()];
        if d == wanted && s == wanted {
            Ok(())
        } else {
            Err(format!("deployments {d:?}, services {s:?}"))
        }
    })
    .await;
    let decode = deployments.get("agg-decode").await.unwrap();
    assert!(is_available(&decode));
    assert!(
        args(&decode)
            .contains(&r#"{"kv_connector":"PyNcclConnector","kv_role":"kv_consumer"}"#.to_string())
    );
    let prefill = deployments.get("agg-prefill").await.unwrap();
    assert_eq!(prefill.spec.clone().unwrap().replicas, Some(2));
    assert!(
        args(&prefill)
            .contains(&r#"{"kv_connector":"PyNcclConnector","kv_role":"kv_producer"}"#.to_string())
    );

    // Deletion removes every object and releases the deployment.
    mds.delete("agg", &DeleteParams::default()).await.unwrap();
    wait_deleted(&mds, "agg", WAIT).await;
    for name in ["agg-decode", "agg-prefill"] {
        wait_deleted(&deployments, name, WAIT).await;
        wait_deleted(&services, name, WAIT).await;
    }
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}

#[tokio::test]
async fn selection_compatibility_deadline_and_registration() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("llmd-compat").await;
    let (core, provider) = start(&env, "--heartbeat-interval=1s").await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);

    // llm-d is explicit-only: a deployment that does not name it is never given to it.
    let mut unnamed = aggregated_on_llmd();
    unnamed["provider"] = json!(null);
    mds.create(&PostParams::default(), &deployment("unnamed", unnamed))
        .await
        .unwrap();
    wait_for(&mds, "unnamed", WAIT, "a selection verdict", |md| {
        md.status.as_ref().and_then(|s| s.phase).is_some()
    })
    .await;

    // An engine llm-d does not register: the core checks its registered capabilities at
    // reconcile, as the Go AI Runway does (issue 32, V1); the provider's own text ("llm-d only
    // supports vllm engine") is its second line (unit-tested).
    for (name, spec, message) in [(
        "sgl",
        json!({"model": {"id": "a/b"}, "engine": {"type": "sglang"}, "resources": {"gpu": {"count": 1}}, "provider": {"name": "llmd"}}),
        "spec.engine.type: provider llmd does not support engine sglang",
    )] {
        mds.create(&PostParams::default(), &deployment(name, spec))
            .await
            .unwrap();
        let (md, validated) = wait_for_condition(
            &mds,
            name,
            WAIT,
            condition_types::VALIDATED,
            ConditionStatus::False,
        )
        .await;
        assert_eq!(validated.message.as_deref(), Some(message), "{name}");
        assert_eq!(md.phase(), Some(Phase::Failed), "{name}");
        assert!(labelled(&deployments, name).await.is_empty(), "{name}");
        env.wait_for_event("ValidationFailed", |n| n == message)
            .await;
    }
    // vLLM without GPUs never reaches the provider: the API server refuses it with the CRD's
    // own rule, and the core's engine selection finds no engine llm-d offers without GPUs (the
    // provider's "llm-d requires GPU" is its last line, unit-tested).
    for spec in [
        json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 0}}, "provider": {"name": "llmd"}}),
        json!({"model": {"id": "a/b"}, "engine": {"type": "vllm", "image": "vllm/vllm-openai:v0.9.1"}, "provider": {"name": "llmd"}}),
    ] {
        match mds
            .create(&PostParams::default(), &deployment("cpu", spec))
            .await
        {
            Err(kube::Error::Api(status)) => assert!(
                status.code == 422 && status.message.contains(messages::VLLM_REQUIRES_GPU),
                "{status:?}"
            ),
            other => panic!("a vLLM deployment without GPUs was not refused: {other:?}"),
        }
    }

    // A rollout that cannot progress: Failed once the deployment controller gives up.
    let mut stuck = aggregated_on_llmd();
    stuck["nodeSelector"] = json!({"airunway.ai/e2e-pool": "no-such-nodes"});
    stuck["provider"]["overrides"] = json!({"spec": {"progressDeadlineSeconds": 3}});
    mds.create(&PostParams::default(), &deployment("stuck", stuck))
        .await
        .unwrap();
    wait_for(&mds, "stuck", WAIT, "Deploying", |md| {
        md.phase() == Some(Phase::Deploying)
    })
    .await;
    let md = wait_for(&mds, "stuck", WAIT, "Failed", |md| {
        md.phase() == Some(Phase::Failed)
    })
    .await;
    let live = deployments.get("stuck").await.unwrap();
    let progressing = live
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Progressing")
        .unwrap();
    assert_eq!(
        progressing.reason.as_deref(),
        Some("ProgressDeadlineExceeded")
    );
    assert_eq!(md.status.clone().unwrap().message, progressing.message);
    assert_eq!(
        md.condition(condition_types::READY).map(|c| c.status),
        Some(ConditionStatus::False)
    );

    // The unnamed deployment never reached llm-d.
    let unnamed = mds.get("unnamed").await.unwrap();
    assert_ne!(unnamed.selected_provider(), Some("llmd"));
    assert!(labelled(&deployments, "unnamed").await.is_empty());
    assert!(
        !unnamed
            .metadata
            .finalizers
            .unwrap_or_default()
            .contains(&"airunway.ai/llmd-provider".to_string())
    );

    // The registration: always ready with no CRD, explicit-only, the endpoint picker as data.
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    let ipc = ipcs.get("llmd").await.unwrap();
    assert!(ipc.spec.selection_rules.as_ref().is_none_or(Vec::is_empty));
    let status = ipc.status.clone().unwrap();
    assert_eq!(status.ready, Some(true));
    assert_eq!(status.upstream_crd_version.as_deref(), Some("apps/v1"));
    let available = status
        .conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "UpstreamAvailable")
        .unwrap();
    assert!(
        available
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("no CRD is needed"),
        "{available:?}"
    );
    let engines = serde_json::to_value(&ipc.spec.capabilities).unwrap()["engines"].clone();
    assert_eq!(engines[0]["requiresCRD"], false);
    assert_eq!(
        engines[0]["gateway"]["endpointPicker"]["image"],
        "ghcr.io/llm-d/llm-d-inference-scheduler:v0.6.0"
    );

    // An admin's endpoint picker stays theirs, across a provider restart.
    let mut admin = engines.clone();
    admin[0]["gateway"]["endpointPicker"]["image"] = json!("registry.example/epp:admin");
    ipcs.patch(
        "llmd",
        &PatchParams::apply("cluster-admin").force(),
        &apply_body::apply(
            &json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig",
            "metadata": {"name": "llmd"}, "spec": {"capabilities": {"engines": admin}}}),
        ),
    )
    .await
    .unwrap();
    provider.process.terminate(Duration::from_secs(10));
    let provider = start_provider(&env, "--heartbeat-interval=1s").await;
    let ipc = ipcs.get("llmd").await.unwrap();
    let engines = serde_json::to_value(&ipc.spec.capabilities).unwrap()["engines"].clone();
    assert_eq!(
        engines[0]["gateway"]["endpointPicker"]["image"],
        "registry.example/epp:admin"
    );

    for name in ["unnamed", "sgl", "stuck"] {
        mds.delete(name, &DeleteParams::default()).await.unwrap();
    }
    for name in ["unnamed", "sgl", "stuck"] {
        wait_deleted(&mds, name, WAIT).await;
    }
    wait_deleted(&deployments, "stuck", WAIT).await;
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}

/// Issue 32, bug 5: an override that would replace the pod spec is refused, as the Go project
/// refuses `spec.template.spec` (`overriding "spec.template.spec" is not allowed`). Of the pod
/// spec only the scheduling keys stay open (the Pod Security check judges what they merge
/// into); any other key is named in the status and a `ProviderIncompatible` event, and nothing
/// is applied. An open key reaches the Deployment.
#[tokio::test]
async fn overrides_that_replace_the_pod_spec_are_refused_naming_the_key() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("llmd-pod-spec").await;
    let (core, provider) = start(&env, "--heartbeat-interval=1s").await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);

    let message = "invalid provider.overrides: overriding \"spec.template.spec.hostAliases\" is not allowed: only affinity, nodeSelector, schedulerName, terminationGracePeriodSeconds, tolerations, topologySpreadConstraints of the pod spec may be overridden";
    let mut refused = aggregated_on_llmd();
    refused["provider"]["overrides"] = json!({"spec": {"template": {"spec": {
        "tolerations": [{"key": "airunway.ai/e2e", "operator": "Exists"}],
        "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["huggingface.co"]}]}}}});
    mds.create(&PostParams::default(), &deployment("aliases", refused))
        .await
        .unwrap();
    let (md, compatible) = wait_for_condition(
        &mds,
        "aliases",
        WAIT,
        condition_types::PROVIDER_COMPATIBLE,
        ConditionStatus::False,
    )
    .await;
    assert_eq!(compatible.reason.as_deref(), Some("InvalidOverrides"));
    assert_eq!(compatible.message.as_deref(), Some(message));
    assert_eq!(md.phase(), Some(Phase::Failed));
    assert_eq!(md.status.clone().unwrap().message.as_deref(), Some(message));
    env.wait_for_event("ProviderIncompatible", |n| n == message)
        .await;
    assert!(labelled(&deployments, "aliases").await.is_empty());

    // The open keys are merged into the Deployment.
    let mut open = aggregated_on_llmd();
    open["provider"]["overrides"] = json!({"spec": {"template": {"spec": {
        "tolerations": [{"key": "airunway.ai/e2e", "operator": "Exists"}],
        "terminationGracePeriodSeconds": 45}}}});
    mds.create(&PostParams::default(), &deployment("open", open))
        .await
        .unwrap();
    let live = wait_for(&deployments, "open", WAIT, "the Deployment", |_| true).await;
    let pod = live.spec.unwrap().template.spec.unwrap();
    assert_eq!(pod.termination_grace_period_seconds, Some(45));
    assert_eq!(
        pod.tolerations.unwrap()[0].key.as_deref(),
        Some("airunway.ai/e2e")
    );
    // Removing the refused key lets the first deployment through.
    mds.patch(
        "aliases",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"provider": {"overrides": {"spec": {"template": {"spec": {"hostAliases": null}}}}}}})),
    )
    .await
    .unwrap();
    wait_for(&deployments, "aliases", WAIT, "the Deployment", |_| true).await;

    for name in ["aliases", "open"] {
        mds.delete(name, &DeleteParams::default()).await.unwrap();
    }
    for name in ["aliases", "open"] {
        wait_deleted(&mds, name, WAIT).await;
    }
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}

/// The llm-d examples (`examples/*-llmd.yaml`, which the sandbox applies too) as a user applies
/// them: both reach Running on the simulated GPU nodes, with the objects their comments promise.
#[tokio::test]
async fn the_examples_run() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("llmd-examples").await;
    let (core, provider) = start(&env, "--heartbeat-interval=1s").await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let services: Api<Service> = Api::namespaced(env.client.clone(), &env.namespace);
    for (file, name, objects, endpoint) in [
        (
            "gpu-vllm-llmd.yaml",
            "qwen3-llmd",
            vec!["qwen3-llmd"],
            "qwen3-llmd",
        ),
        (
            "disaggregated-vllm-llmd.yaml",
            "qwen3-pd",
            vec!["qwen3-pd-decode", "qwen3-pd-prefill"],
            "qwen3-pd-decode",
        ),
    ] {
        let path = airunway_e2e::paths::workspace_root()
            .join("examples")
            .join(file);
        let mut manifests = airunway_e2e::manifests::read(&path);
        for manifest in &mut manifests {
            manifest["metadata"]["namespace"] = json!(env.namespace);
        }
        airunway_e2e::manifests::apply(&env.client, &manifests).await;
        let md = wait_for(&mds, name, WAIT, "Running", |md| {
            md.phase() == Some(Phase::Running)
        })
        .await;
        assert_eq!(
            md.status.unwrap().endpoint.unwrap().service.as_deref(),
            Some(endpoint),
            "{file}"
        );
        let wanted: Vec<String> = objects.iter().map(|s| s.to_string()).collect();
        assert_eq!(labelled(&deployments, name).await, wanted, "{file}");
        assert_eq!(labelled(&services, name).await, wanted, "{file}");
        mds.delete(name, &DeleteParams::default()).await.unwrap();
        wait_deleted(&mds, name, WAIT).await;
    }
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

fn replica_counts(md: &ModelDeployment) -> (Option<i32>, Option<i32>) {
    let r = md
        .status
        .as_ref()
        .and_then(|s| s.replicas.clone())
        .unwrap_or_default();
    (r.desired, r.ready)
}

fn deployment_replicas(deployment: &Deployment) -> Option<i32> {
    deployment.spec.as_ref().and_then(|s| s.replicas)
}

#[tokio::test]
async fn kubectl_scale_scales_both_roles_in_place_by_their_ratio_to_zero_and_back() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("llmd-scale").await;
    let (core, provider) = start(&env, "--heartbeat-interval=1s").await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    let started = std::time::Instant::now();
    let name = "pd";
    let roles = ["pd-decode", "pd-prefill"];
    // Prefill:decode 1:2, so a unit of the scale subresource is three pods.
    mds.create(
        &PostParams::default(),
        &deployment(
            name,
            json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"},
                   "serving": {"mode": "disaggregated"},
                   "scaling": {"prefill": {"replicas": 1, "gpu": {"count": 1}},
                               "decode": {"replicas": 2, "gpu": {"count": 1}}},
                   "provider": {"name": "llmd"}}),
        ),
    )
    .await
    .unwrap();
    // Another deployment in the namespace: its pods are never selected.
    let mut other = aggregated_on_llmd();
    other["resources"] = json!({"gpu": {"count": 1}});
    mds.create(&PostParams::default(), &deployment("other", other))
        .await
        .unwrap();
    let md = wait_for(&mds, name, WAIT, "Running with 3 ready", |md| {
        md.phase() == Some(Phase::Running) && replica_counts(md) == (Some(3), Some(3))
    })
    .await;
    wait_for(&mds, "other", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    let mut uids = Vec::new();
    for role in roles {
        uids.push(deployments.get(role).await.unwrap().metadata.uid.unwrap());
    }

    // status.workload: the decode Deployment as upstream, both Deployments with their roles
    // and uids, one selector for the pods of both, container and port.
    let status = md.status.clone().unwrap();
    let workload = status.workload.clone().unwrap();
    let upstream = workload.upstream.clone().unwrap();
    assert_eq!(
        (
            upstream.kind.as_str(),
            upstream.name.as_str(),
            upstream.uid.as_deref()
        ),
        ("Deployment", "pd-decode", Some(uids[0].as_str()))
    );
    let listed: Vec<(String, Option<String>, Option<String>)> = workload
        .workloads
        .clone()
        .unwrap()
        .into_iter()
        .map(|w| (w.name, w.uid, w.role))
        .collect();
    assert_eq!(
        listed,
        [
            (
                "pd-decode".to_string(),
                Some(uids[0].clone()),
                Some("decode".to_string())
            ),
            (
                "pd-prefill".to_string(),
                Some(uids[1].clone()),
                Some("prefill".to_string())
            )
        ]
    );
    assert_eq!(
        (workload.container.as_deref(), workload.port),
        (Some("vllm"), Some(8000))
    );
    assert_eq!(
        status.selector.as_deref(),
        Some("airunway.ai/deployment=pd")
    );

    // kubectl scale md/pd --replicas=3: three units, 3 prefill and 6 decode, the same
    // Deployments; the selector selects exactly their 9 pods (not the other deployment's).
    let output = airunway_e2e::scale::kubectl_scale(&env, name, 3).await;
    eprintln!("kubectl: {output}");
    for (role, (uid, want)) in roles.iter().zip(uids.iter().zip([6, 3])) {
        let live = wait_for(&deployments, role, WAIT, &format!("{want} replicas"), |d| {
            deployment_replicas(d) == Some(want)
        })
        .await;
        assert_eq!(live.metadata.uid.as_ref(), Some(uid), "{role} in place");
    }
    let md = wait_for(&mds, name, WAIT, "Running with 9 ready", |md| {
        md.phase() == Some(Phase::Running) && replica_counts(md) == (Some(9), Some(9))
    })
    .await;
    let scaling = md.spec.scaling.clone().unwrap();
    assert_eq!(
        (
            scaling.replicas,
            scaling.prefill.and_then(|p| p.replicas),
            scaling.decode.and_then(|d| d.replicas)
        ),
        (Some(3), Some(1), Some(2)),
        "the ratio is kept; only scaling.replicas changed"
    );
    let selector = airunway_e2e::scale::wait_selector_selects(
        &env,
        name,
        |all| pods_run_by(all, &roles),
        WAIT,
    )
    .await;
    let all = pods.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(pods_run_by(&all, &roles).len(), 9);
    assert!(!pods_run_by(&all, &["other"]).is_empty());
    eprintln!(
        "scaled to 3 units in place, {selector} selects exactly the 9 pods ({:.1}s)",
        started.elapsed().as_secs_f64()
    );

    // Back to one unit; a decode pod failing its readiness probe: Degraded, then cleared.
    airunway_e2e::scale::kubectl_scale(&env, name, 1).await;
    wait_for(&mds, name, WAIT, "Running with 3 ready", |md| {
        md.phase() == Some(Phase::Running) && replica_counts(md) == (Some(3), Some(3))
    })
    .await;
    let all = pods.list(&ListParams::default()).await.unwrap().items;
    let victim = all
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| p.metadata.name.clone())
        .find(|p| pods_run_by(&all, &["pd-decode"]).contains(p))
        .unwrap();
    set_pod_ready(&pods, &victim, false).await;
    let md = wait_for(&mds, name, WAIT, "Degraded", |md| {
        md.condition(condition_types::DEGRADED).is_some_and(|c| {
            c.status == ConditionStatus::True
                && c.message.as_deref()
                    == Some("2 of 3 replicas ready: serving at reduced capacity")
        })
    })
    .await;
    assert_eq!(
        md.condition(condition_types::DEGRADED)
            .and_then(|c| c.reason.as_deref()),
        Some(reasons::REPLICAS_UNAVAILABLE)
    );
    eprintln!(
        "2 of 3 ready: phase {:?}, Ready {:?}",
        md.phase(),
        md.condition(condition_types::READY).map(|c| c.status)
    );
    set_pod_ready(&pods, &victim, true).await;
    wait_for(&mds, name, WAIT, "Degraded cleared", |md| {
        md.condition(condition_types::DEGRADED).is_some_and(|c| {
            c.status == ConditionStatus::False
                && c.message.as_deref() == Some("3 of 3 replicas ready")
        }) && md.phase() == Some(Phase::Running)
    })
    .await;

    // Zero stops both roles, in place; Running but not Ready, the selector kept.
    airunway_e2e::scale::kubectl_scale(&env, name, 0).await;
    for (role, uid) in roles.iter().zip(&uids) {
        let live = wait_for(&deployments, role, WAIT, "0 replicas", |d| {
            deployment_replicas(d) == Some(0)
        })
        .await;
        assert_eq!(live.metadata.uid.as_ref(), Some(uid), "{role} in place");
    }
    eventually("no pod of either role left", WAIT, || async {
        let all = pods.list(&ListParams::default()).await.unwrap().items;
        let left = pods_run_by(&all, &roles);
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!("{left:?}"))
        }
    })
    .await;
    let md = wait_for(&mds, name, WAIT, "scaled to zero", |md| {
        replica_counts(md) == (Some(0), Some(0))
            && md
                .condition(condition_types::READY)
                .is_some_and(|c| c.reason.as_deref() == Some(reasons::SCALED_TO_ZERO))
    })
    .await;
    assert_eq!(md.phase(), Some(Phase::Running));
    assert_eq!(
        md.condition(condition_types::READY).map(|c| c.status),
        Some(ConditionStatus::True)
    );
    assert_eq!(
        md.status.as_ref().and_then(|s| s.selector.as_deref()),
        Some("airunway.ai/deployment=pd")
    );

    // And back: one unit, the same Deployments, Ready.
    airunway_e2e::scale::kubectl_scale(&env, name, 1).await;
    wait_for(&mds, name, WAIT, "Running and Ready with 3", |md| {
        replica_counts(md) == (Some(3), Some(3))
            && md.condition(condition_types::READY).map(|c| c.status) == Some(ConditionStatus::True)
    })
    .await;
    for (role, uid) in roles.iter().zip(&uids) {
        assert_eq!(
            deployments.get(role).await.unwrap().metadata.uid.as_ref(),
            Some(uid)
        );
    }
    airunway_e2e::scale::wait_selector_selects(&env, name, |all| pods_run_by(all, &roles), WAIT)
        .await;
    eprintln!("scale test done in {:.1}s", started.elapsed().as_secs_f64());
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
}
