//! The test control plane itself: CRDs Established, schema defaults, CRD CEL rules with the
//! spec's messages, garbage collection, upstream status samples, and the webhook helper.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use airunway_api::apply_body;
use airunway_api::constants::messages;
use airunway_api::v1alpha1::{ModelDeployment, ModelSource, ServingMode};
use airunway_e2e::control_plane::{crd_files, read_crds};
use airunway_e2e::wait::{eventually, wait_deleted};
use airunway_e2e::webhook::TestWebhook;
use airunway_e2e::{ControlPlane, TestEnv};
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    RuleWithOperations, ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use kube::api::{Api, DeleteParams, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

fn model_deployment(name: &str, spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": name},
        "spec": spec,
    }))
    .unwrap()
}

#[tokio::test]
async fn all_crds_are_established() {
    let env = TestEnv::new("crds-established").await;
    let cp = ControlPlane::shared();
    eprintln!("control plane start timings: {:?}", cp.timings);
    let api: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let mut expected = Vec::new();
    for file in crd_files().unwrap() {
        for crd in read_crds(&file).unwrap() {
            expected.push(crd.name_any());
        }
    }
    assert!(expected.contains(&"modeldeployments.airunway.ai".to_string()));
    assert!(expected.contains(&"inferenceproviderconfigs.airunway.ai".to_string()));
    for upstream in [
        "workspaces.kaito.sh",
        "inferencesets.kaito.sh",
        "dynamographdeployments.nvidia.com",
        "rayservices.ray.io",
        "rayclusters.ray.io",
        "httproutes.gateway.networking.k8s.io",
        "inferencepools.inference.networking.k8s.io",
        "destinationrules.networking.istio.io",
    ] {
        assert!(
            expected.contains(&upstream.to_string()),
            "{upstream} not among the installed CRD files"
        );
    }
    for name in &expected {
        let crd = api.get(name).await.unwrap();
        let established = crd
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True");
        assert!(established, "{name} is not Established");
    }
    eprintln!("{} CRDs Established", expected.len());
}

#[tokio::test]
async fn model_deployment_is_stored_with_schema_defaults() {
    let env = TestEnv::new("schema-defaults").await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let md = model_deployment(
        "defaults",
        json!({"model": {"id": "org/model"}, "resources": {"gpu": {"count": 1}}}),
    );
    let stored = api.create(&PostParams::default(), &md).await.unwrap();
    assert_eq!(stored.spec.model.source, Some(ModelSource::Huggingface));
    assert_eq!(
        stored.spec.serving.as_ref().and_then(|s| s.mode),
        Some(ServingMode::Aggregated)
    );
    assert_eq!(
        stored.spec.scaling.as_ref().and_then(|s| s.replicas),
        Some(1)
    );
    let gpu = stored
        .spec
        .resources
        .as_ref()
        .and_then(|r| r.gpu.as_ref())
        .unwrap();
    assert_eq!(gpu.gpu_type.as_deref(), Some("nvidia.com/gpu"));

    // Explicit zero and false survive the API server.
    let md = model_deployment(
        "zeros",
        json!({"model": {"id": "org/model"}, "engine": {"type": "llamacpp", "trustRemoteCode": false},
               "scaling": {"replicas": 0}, "resources": {"gpu": {"count": 0}}}),
    );
    let stored = api.create(&PostParams::default(), &md).await.unwrap();
    assert_eq!(
        stored.spec.scaling.as_ref().and_then(|s| s.replicas),
        Some(0)
    );
    assert_eq!(
        stored
            .spec
            .engine
            .as_ref()
            .and_then(|e| e.trust_remote_code),
        Some(false)
    );
    assert_eq!(stored.spec.gpu_count(), 0);
}

/// The API server's Table of deployments in `namespace` (what `kubectl get md` prints; kubectl
/// shows the priority-1 columns with `-o wide`).
async fn table(client: &kube::Client, namespace: &str) -> Value {
    let request = http::Request::get(format!(
        "/apis/airunway.ai/v1alpha1/namespaces/{namespace}/modeldeployments"
    ))
    .header(
        "Accept",
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
    )
    .body(Vec::new())
    .unwrap();
    client.request(request).await.unwrap()
}

#[tokio::test]
async fn kubectl_get_md_wide_shows_replicas_gateway_endpoint_and_message() {
    let env = TestEnv::new("wide-columns").await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    for name in ["serving", "waiting"] {
        api.create(
            &PostParams::default(),
            &model_deployment(name, json!({"model": {"id": "org/model"}})),
        )
        .await
        .unwrap();
    }
    // The status subresource as the core and a provider write it.
    api.patch_status(
        "serving",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {
            "phase": "Running",
            "replicas": {"desired": 3, "ready": 2, "available": 2},
            "gateway": {"endpoint": "172.18.255.200", "modelName": "org/model"},
            "message": "2 of 3 replicas ready"}})),
    )
    .await
    .unwrap();
    api.patch_status(
        "waiting",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Pending",
            "message": "Provider 'ghost' is not registered"}})),
    )
    .await
    .unwrap();

    let table = table(&env.client, &env.namespace).await;
    assert_eq!(table["kind"], "Table", "{table}");
    let columns: Vec<(&str, i64)> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap(),
                c["priority"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        columns,
        [
            ("Name", 0),
            ("Phase", 0),
            ("Provider", 0),
            ("Engine", 0),
            ("Ready", 0),
            ("Age", 0),
            ("Replicas-Ready", 1),
            ("Replicas-Desired", 1),
            ("Gateway-Endpoint", 1),
            ("Message", 1),
        ]
    );
    let rows: Vec<Vec<Value>> = table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let mut cells = r["cells"].as_array().unwrap().clone();
            cells.remove(5); // Age
            cells
        })
        .collect();
    assert_eq!(
        rows,
        [
            vec![
                json!("serving"),
                json!("Running"),
                Value::Null,
                Value::Null,
                Value::Null,
                json!(2),
                json!(3),
                json!("172.18.255.200"),
                json!("2 of 3 replicas ready"),
            ],
            // Fields not set yet are empty cells (kubectl prints <none>).
            vec![
                json!("waiting"),
                json!("Pending"),
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                json!("Provider 'ghost' is not registered"),
            ],
        ]
    );
}

#[tokio::test]
async fn crd_cel_rules_reject_with_the_spec_messages() {
    let env = TestEnv::new("crd-cel-rules").await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let disaggregated = |scaling: Value| json!({"model": {"id": "m/m"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"}, "scaling": scaling});
    let gpu1 = json!({"gpu": {"count": 1}});
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "vllm-no-gpu",
            json!({"model": {"id": "m/m"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 0}}}),
            "spec.resources.gpu.count",
            messages::VLLM_REQUIRES_GPU,
        ),
        (
            "sglang-no-gpu",
            // Resources given without a GPU (with no resources at all, one GPU is defaulted).
            json!({"model": {"id": "m/m"}, "engine": {"type": "sglang"}, "resources": {"cpu": "4"}}),
            "spec.resources.gpu.count",
            messages::SGLANG_REQUIRES_GPU,
        ),
        (
            "trtllm-no-gpu",
            json!({"model": {"id": "m/m"}, "engine": {"type": "trtllm"}, "resources": {"cpu": "4"}}),
            "spec.resources.gpu.count",
            messages::TRTLLM_REQUIRES_GPU,
        ),
        (
            "disagg-resources-gpu",
            {
                let mut v = disaggregated(json!({"prefill": gpu1, "decode": gpu1}));
                v["resources"] = json!({"gpu": {"count": 1}});
                v
            },
            "spec.resources.gpu",
            messages::DISAGGREGATED_GPU_CONFLICT,
        ),
        (
            "disagg-no-components",
            disaggregated(json!({"prefill": gpu1})),
            "spec.scaling",
            messages::DISAGGREGATED_REQUIRES_COMPONENTS,
        ),
        (
            "disagg-no-prefill-gpu",
            disaggregated(json!({"prefill": {"replicas": 1}, "decode": gpu1})),
            "spec.scaling.prefill.gpu.count",
            messages::DISAGGREGATED_REQUIRES_PREFILL_GPU,
        ),
        (
            "disagg-no-decode-gpu",
            disaggregated(json!({"prefill": gpu1, "decode": {"gpu": {"count": 0}}})),
            "spec.scaling.decode.gpu.count",
            messages::DISAGGREGATED_REQUIRES_DECODE_GPU,
        ),
        (
            "hf-no-id",
            json!({"model": {"source": "huggingface"}, "engine": {"type": "llamacpp"}}),
            "spec.model.id",
            messages::MODEL_ID_REQUIRED,
        ),
        (
            "bad-quantity",
            json!({"model": {"id": "m/m"}, "resources": {"memory": "lots"}}),
            "spec.resources.memory",
            "must be a Kubernetes quantity",
        ),
    ];
    for (name, spec, field, message) in cases {
        let err = api
            .create(&PostParams::default(), &model_deployment(name, spec))
            .await
            .expect_err(&format!("{name} should be rejected"));
        let text = err.to_string();
        assert!(
            text.contains(message),
            "{name}: {text:?} does not contain {message:?}"
        );
        assert!(
            text.contains(field),
            "{name}: {text:?} does not name the field {field}"
        );
    }

    // Valid shapes pass: CPU llama.cpp, custom source without id, full disaggregated.
    for (name, spec) in [
        (
            "cpu-llamacpp",
            json!({"model": {"id": "m/m"}, "engine": {"type": "llamacpp"}, "resources": {"memory": "16Gi", "cpu": "8"}}),
        ),
        (
            "custom-no-id",
            json!({"model": {"source": "custom"}, "image": "example/model:1"}),
        ),
        (
            "disagg-ok",
            disaggregated(
                json!({"prefill": {"gpu": {"count": 4}, "memory": "128Gi"}, "decode": gpu1}),
            ),
        ),
    ] {
        api.create(&PostParams::default(), &model_deployment(name, spec))
            .await
            .unwrap_or_else(|e| panic!("{name} should be accepted: {e}"));
    }
}

#[tokio::test]
async fn garbage_collection_deletes_dependents_of_a_model_deployment() {
    let env = TestEnv::new("garbage-collection").await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), &env.namespace);
    let md = mds
        .create(
            &PostParams::default(),
            &model_deployment("owner", json!({"model": {"id": "m/m"}})),
        )
        .await
        .unwrap();
    let owner = OwnerReference {
        api_version: ModelDeployment::api_version(&()).to_string(),
        kind: ModelDeployment::kind(&()).to_string(),
        name: md.name_any(),
        uid: md.uid().unwrap(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    cms.create(
        &PostParams::default(),
        &ConfigMap {
            metadata: ObjectMeta {
                name: Some("dependent".into()),
                owner_references: Some(vec![owner]),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .await
    .unwrap();
    mds.delete("owner", &DeleteParams::default()).await.unwrap();
    wait_deleted(&cms, "dependent", Duration::from_secs(60)).await;
}

#[tokio::test]
async fn upstream_status_samples_are_valid_against_the_real_schemas() {
    let env = TestEnv::new("status-samples").await;
    let dir = airunway_e2e::paths::status_samples_dir();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 19,
        "expected the status samples in {}",
        dir.display()
    );
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut sample: Value = serde_saphyr::from_str(&text).unwrap();
        let status = sample.as_object_mut().unwrap().remove("status").unwrap();
        let (group, version) = match sample["apiVersion"].as_str().unwrap().split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (
                String::new(),
                sample["apiVersion"].as_str().unwrap().to_string(),
            ),
        };
        let gvk = GroupVersionKind::gvk(&group, &version, sample["kind"].as_str().unwrap());
        let (resource, _caps) = kube::discovery::pinned_kind(&env.client, &gvk)
            .await
            .unwrap();
        let api: Api<DynamicObject> =
            Api::namespaced_with(env.client.clone(), &env.namespace, &resource);
        sample["metadata"]["namespace"] = json!(env.namespace);
        let name = format!(
            "{}-{}",
            sample["metadata"]["name"].as_str().unwrap(),
            file.file_stem()
                .unwrap()
                .to_string_lossy()
                .replace('_', "-")
        );
        sample["metadata"]["name"] = json!(name);
        let object: DynamicObject = serde_json::from_value(sample).unwrap();
        api.create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("{}: creating the object: {e}", file.display()));
        let patched = api
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await
            .unwrap_or_else(|e| panic!("{}: writing the status: {e}", file.display()));
        let stored = serde_json::to_value(&patched).unwrap()["status"].clone();
        assert_subset(&status, &stored, &file.display().to_string());
    }
}

/// Every field of `expected` is in `actual` with the same value (the server may add defaults).
fn assert_subset(expected: &Value, actual: &Value, context: &str) {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, v) in e {
                let other = a
                    .get(k)
                    .unwrap_or_else(|| panic!("{context}: field {k} was pruned"));
                assert_subset(v, other, &format!("{context}.{k}"));
            }
        }
        (Value::Array(e), Value::Array(a)) => {
            assert_eq!(e.len(), a.len(), "{context}: list length");
            for (i, (x, y)) in e.iter().zip(a).enumerate() {
                assert_subset(x, y, &format!("{context}[{i}]"));
            }
        }
        _ => assert_eq!(expected, actual, "{context}"),
    }
}

#[tokio::test]
async fn a_test_can_serve_an_admission_webhook() {
    let _lock = airunway_e2e::cluster_lock().await;
    let env = TestEnv::new("webhook-helper").await;
    let router = axum::Router::new().route(
        "/deny",
        axum::routing::post(
            |axum::Json(review): axum::Json<AdmissionReview<DynamicObject>>| async move {
                let request: AdmissionRequest<DynamicObject> = review.try_into().unwrap();
                axum::Json(
                    AdmissionResponse::from(&request)
                        .deny("denied by the e2e test webhook")
                        .into_review(),
                )
            },
        ),
    );
    let webhook = TestWebhook::serve(env.control_plane, router).await.unwrap();
    let name = format!("airunway-e2e-deny-{}", env.namespace);
    let configs: Api<ValidatingWebhookConfiguration> = Api::all(env.client.clone());
    configs
        .create(
            &PostParams::default(),
            &ValidatingWebhookConfiguration {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    ..Default::default()
                },
                webhooks: Some(vec![ValidatingWebhook {
                    name: "deny.e2e.airunway.ai".into(),
                    admission_review_versions: vec!["v1".into()],
                    side_effects: "None".into(),
                    failure_policy: Some("Fail".into()),
                    client_config: WebhookClientConfig {
                        url: Some(format!("{}/deny", webhook.base_url)),
                        ca_bundle: Some(ByteString(webhook.ca_bundle.clone())),
                        service: None,
                    },
                    rules: Some(vec![RuleWithOperations {
                        api_groups: Some(vec!["".into()]),
                        api_versions: Some(vec!["v1".into()]),
                        operations: Some(vec!["CREATE".into()]),
                        resources: Some(vec!["configmaps".into()]),
                        scope: Some("Namespaced".into()),
                    }]),
                    namespace_selector: Some(LabelSelector {
                        match_labels: Some(
                            [(
                                "kubernetes.io/metadata.name".to_string(),
                                env.namespace.clone(),
                            )]
                            .into(),
                        ),
                        ..Default::default()
                    }),
                    ..Default::default()
                }]),
            },
        )
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), &env.namespace);
    let message = eventually(
        "the webhook to deny ConfigMaps",
        Duration::from_secs(30),
        || async {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    generate_name: Some("probe-".into()),
                    ..Default::default()
                },
                ..Default::default()
            };
            match cms.create(&PostParams::default(), &cm).await {
                Ok(created) => {
                    let _ = cms
                        .delete(&created.name_any(), &DeleteParams::default())
                        .await;
                    Err("a ConfigMap was admitted".to_string())
                }
                Err(e) => Ok(e.to_string()),
            }
        },
    )
    .await;
    assert!(
        message.contains("denied by the e2e test webhook"),
        "{message}"
    );
    configs
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
}

/// The harness runs a cluster, not only an API server: a plain Deployment asking for a GPU is
/// scheduled by kube-scheduler onto a simulated GPU node, KWOK reports its Pods Running and
/// Ready, the deployment controller marks it Available, and the endpoints controllers fill the
/// Service's Endpoints and EndpointSlices. Nothing in the test writes a status.
#[tokio::test]
async fn deployment_pods_run_on_simulated_gpu_nodes() {
    use airunway_e2e::control_plane::workloads::{GPU_NODES, GPU_RESOURCE};
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Endpoints, Node, Pod, Service};
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    use kube::api::ListParams;

    let env = TestEnv::new("deployment-on-gpu-nodes").await;
    let nodes: Api<Node> = Api::all(env.client.clone());
    for name in GPU_NODES {
        let node = nodes.get(name).await.unwrap();
        let labels = node.labels();
        assert_eq!(
            labels.get("nvidia.com/gpu.present").map(String::as_str),
            Some("true")
        );
        assert_eq!(
            labels.get("kubernetes.io/os").map(String::as_str),
            Some("linux")
        );
        assert!(labels.contains_key("node.kubernetes.io/instance-type"));
        let allocatable = node.status.unwrap().allocatable.unwrap();
        assert!(
            allocatable.contains_key(GPU_RESOURCE),
            "{name} advertises no GPU"
        );
    }

    let started = std::time::Instant::now();
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "gpu-probe"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "gpu-probe"}},
            "template": {
                "metadata": {"labels": {"app": "gpu-probe"}},
                "spec": {
                    "nodeSelector": {"nvidia.com/gpu.present": "true"},
                    "containers": [{
                        "name": "server",
                        "image": "registry.invalid/never-pulled:1",
                        "ports": [{"name": "http", "containerPort": 8000}],
                        "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "1", "memory": "1Gi"}},
                    }],
                },
            },
        },
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    let services: Api<Service> = Api::namespaced(env.client.clone(), &env.namespace);
    let service: Service = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "gpu-probe"},
        "spec": {"selector": {"app": "gpu-probe"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
    }))
    .unwrap();
    services
        .create(&PostParams::default(), &service)
        .await
        .unwrap();

    airunway_e2e::wait::wait_for(
        &deployments,
        "gpu-probe",
        Duration::from_secs(60),
        "Available with 2 ready replicas",
        |d| {
            let status = d.status.clone().unwrap_or_default();
            status.ready_replicas == Some(2)
                && status.available_replicas == Some(2)
                && status
                    .conditions
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.type_ == "Available" && c.status == "True")
        },
    )
    .await;
    eprintln!(
        "Deployment Available {:.1}s after creation",
        started.elapsed().as_secs_f64()
    );

    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    let list = pods
        .list(&ListParams::default().labels("app=gpu-probe"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 2);
    let mut pod_ips = Vec::new();
    for pod in &list.items {
        let spec = pod.spec.clone().unwrap();
        let node = spec.node_name.clone().unwrap_or_default();
        assert!(
            GPU_NODES.contains(&node.as_str()),
            "{} scheduled on {node:?}, not a GPU node",
            pod.name_any()
        );
        let status = pod.status.clone().unwrap();
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert!(
            status
                .conditions
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        );
        pod_ips.push(status.pod_ip.expect("a pod IP"));
    }
    pod_ips.sort();

    let endpoints: Api<Endpoints> = Api::namespaced(env.client.clone(), &env.namespace);
    let ips = pod_ips.clone();
    eventually(
        "Endpoints with both pod IPs",
        Duration::from_secs(30),
        || {
            let endpoints = endpoints.clone();
            let ips = ips.clone();
            async move {
                let e = endpoints
                    .get_opt("gpu-probe")
                    .await
                    .map_err(|e| e.to_string())?;
                let mut seen: Vec<String> = e
                    .iter()
                    .flat_map(|e| e.subsets.clone().unwrap_or_default())
                    .flat_map(|s| s.addresses.unwrap_or_default())
                    .map(|a| a.ip)
                    .collect();
                seen.sort();
                if seen == ips {
                    Ok(())
                } else {
                    Err(format!("{seen:?}"))
                }
            }
        },
    )
    .await;
    let slices: Api<EndpointSlice> = Api::namespaced(env.client.clone(), &env.namespace);
    eventually(
        "an EndpointSlice with both pod IPs, ready",
        Duration::from_secs(30),
        || {
            let slices = slices.clone();
            let ips = pod_ips.clone();
            async move {
                let list = slices
                    .list(&ListParams::default().labels("kubernetes.io/service-name=gpu-probe"))
                    .await
                    .map_err(|e| e.to_string())?;
                let mut seen: Vec<String> = list
                    .items
                    .iter()
                    .flat_map(|s| s.endpoints.clone())
                    .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true))
                    .flat_map(|e| e.addresses)
                    .collect();
                seen.sort();
                if seen == ips {
                    Ok(())
                } else {
                    Err(format!("{seen:?}"))
                }
            }
        },
    )
    .await;

    // Deleting the Deployment takes its ReplicaSet and Pods with it (KWOK finalises the Pods).
    deployments
        .delete("gpu-probe", &DeleteParams::foreground())
        .await
        .unwrap();
    wait_deleted(&deployments, "gpu-probe", Duration::from_secs(60)).await;
    eventually(
        "the probe's Pods to be gone",
        Duration::from_secs(30),
        || async {
            let left = pods
                .list(&ListParams::default().labels("app=gpu-probe"))
                .await
                .map_err(|e| e.to_string())?
                .items
                .len();
            if left == 0 {
                Ok(())
            } else {
                Err(format!("{left} left"))
            }
        },
    )
    .await;
}

/// Server-side dry-run of generated renders (issue 23): seeded generated specs
/// (`airunway_api::generate`, the generators of the property tests), each assigned to every
/// provider (KAITO, Dynamo, KubeRay, llm-d, vLLM); those our CRD's schema admits (offline) and
/// the core's validation passes, as in the pipeline, are rendered by that provider's pure
/// render through the SDK's plan (schema detection from the CRDs installed on this API server,
/// Pod Security checked), and every object it would apply is sent with server-side apply,
/// `dryRun=All` and strict field validation to the real API server with the real upstream
/// CRDs. Each is admitted, or refused where our offline check of the upstream schema refuses
/// it too: the two never disagree. Specs are drawn until every provider has rendered
/// `AIRUNWAY_GENERATED_DRY_RUN_RENDERS` (default 40) of them (at most 100 times as many
/// specs); `PROPTEST_RNG_SEED` sets the seed.
#[tokio::test]
async fn generated_renders_pass_server_side_dry_run() {
    use airunway_api::generate;
    use airunway_api::pod_security::Policy;
    use airunway_api::provider::testing::hostile::{self, Outcome};
    use airunway_api::provider::testing::upstream_schema::{
        UpstreamValidator, model_deployment_validator,
    };
    use airunway_api::provider::{Provider, SchemaDetection};
    use kube::discovery::{Discovery, Scope};
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::{Config, RngSeed, TestRunner};
    use std::collections::BTreeMap;

    let env = TestEnv::new("generated-dry-run").await;
    let started = std::time::Instant::now();
    let wanted: usize = std::env::var("AIRUNWAY_GENERATED_DRY_RUN_RENDERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let seed: u64 = std::env::var("PROPTEST_RNG_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(23);

    // The upstream CRDs as this API server serves them: for schema detection and the offline
    // check of every custom kind.
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let mut installed: BTreeMap<(String, String), CustomResourceDefinition> = BTreeMap::new();
    for crd in crds.list(&Default::default()).await.unwrap() {
        installed.insert((crd.spec.group.clone(), crd.spec.names.kind.clone()), crd);
    }
    let crd = |group: &str, kind: &str| installed.get(&(group.to_string(), kind.to_string()));
    let mut validators: BTreeMap<(String, String), Option<UpstreamValidator>> = BTreeMap::new();
    let discovery = Discovery::new(env.client.clone()).run().await.unwrap();
    let ours = model_deployment_validator().unwrap();

    let kaito = airunway_provider_kaito::KaitoProvider::default();
    let dynamo = airunway_provider_dynamo::DynamoProvider;
    let kuberay = airunway_provider_kuberay::KubeRayProvider;
    let llmd = airunway_provider_llmd::LlmdProvider;
    let vllm = airunway_provider_vllm::VllmProvider::default();
    let detections: Vec<(&str, SchemaDetection)> = vec![
        ("kaito", kaito.detect_schema(crd("kaito.sh", "Workspace"))),
        (
            "dynamo",
            dynamo.detect_schema(crd("nvidia.com", "DynamoGraphDeployment")),
        ),
        (
            "kuberay",
            kuberay.detect_schema(crd("ray.io", "RayService")),
        ),
        ("llmd", llmd.detect_schema(None)),
        ("vllm", vllm.detect_schema(None)),
    ];
    for (name, detection) in &detections {
        assert!(
            matches!(detection, SchemaDetection::Supported(_)),
            "{name}: {detection:?}"
        );
    }

    let mut runner = TestRunner::new(Config {
        rng_seed: RngSeed::Fixed(seed),
        ..Config::default()
    });
    let generator = generate::spec();
    let params = PatchParams::apply("airunway-e2e-dry-run")
        .force()
        .dry_run()
        .validation_strict();
    #[derive(Debug, Default)]
    struct Tally {
        not_admitted: usize,
        invalid: usize,
        held: usize,
        rendered: usize,
        objects: usize,
        admitted: usize,
        refused_both: usize,
        offline_only: usize,
        disagreements: Vec<String>,
    }
    let mut tallies: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    let mut specs = 0;
    while specs < wanted * 400
        && (tallies.len() < detections.len() || tallies.values().any(|t| t.rendered < wanted))
    {
        let i = specs;
        specs += 1;
        let generated = generator.new_tree(&mut runner).unwrap().current();
        for (name, detection) in &detections {
            let tally = tallies.entry(name).or_default();
            if tally.rendered >= wanted {
                continue;
            }
            let mut spec = generated.clone();
            // The spec's own overrides (if any) stay: they are what reaches upstream objects.
            if !spec["provider"].is_object() {
                spec["provider"] = json!({});
            }
            spec["provider"]["name"] = json!(name);
            let object = json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
                "metadata": {"name": format!("gen-{i}"), "namespace": env.namespace, "uid": format!("00000000-0000-0000-0000-{i:012}")},
                "spec": spec, "status": {"provider": {"name": name}}});
            let mut unassigned = object.clone();
            unassigned.as_object_mut().unwrap().remove("status");
            if !ours.errors(&unassigned).is_empty() {
                tally.not_admitted += 1;
                continue;
            }
            let Ok(md) = serde_json::from_value::<ModelDeployment>(object) else {
                tally.not_admitted += 1;
                continue;
            };
            if !airunway_core::validation::validate(&md).is_empty() {
                tally.invalid += 1;
                continue;
            }
            let outcome = match *name {
                "kaito" => hostile::outcome(&kaito, &md, detection, &Policy::default(), None),
                "dynamo" => hostile::outcome(&dynamo, &md, detection, &Policy::default(), None),
                "kuberay" => hostile::outcome(&kuberay, &md, detection, &Policy::default(), None),
                "llmd" => hostile::outcome(&llmd, &md, detection, &Policy::default(), None),
                _ => hostile::outcome(&vllm, &md, detection, &Policy::default(), None),
            };
            let objects = match outcome {
                Outcome::Held { .. } => {
                    tally.held += 1;
                    continue;
                }
                Outcome::Applied(objects) => objects,
            };
            tally.rendered += 1;
            for object in objects {
                tally.objects += 1;
                let api_version = object["apiVersion"].as_str().unwrap_or_default();
                let kind = object["kind"].as_str().unwrap_or_default().to_string();
                *kinds.entry(format!("{api_version} {kind}")).or_default() += 1;
                let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
                let validator = validators
                    .entry((api_version.to_string(), kind.clone()))
                    .or_insert_with(|| {
                        let crd = crd(group, &kind)?;
                        UpstreamValidator::new(&serde_json::to_value(crd).unwrap(), version).ok()
                    });
                let offline = validator
                    .as_ref()
                    .map(|v| v.errors(&object))
                    .unwrap_or_default();
                let gvk = GroupVersionKind::gvk(group, version, &kind);
                let (resource, capabilities) = discovery.resolve_gvk(&gvk).unwrap_or_else(|| {
                    panic!("{name} renders {gvk:?}, which this API server does not serve")
                });
                let api: Api<DynamicObject> = if capabilities.scope == Scope::Namespaced {
                    Api::namespaced_with(env.client.clone(), &env.namespace, &resource)
                } else {
                    Api::all_with(env.client.clone(), &resource)
                };
                let object_name = object["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                match api
                    .patch(&object_name, &params, &apply_body::apply(&object))
                    .await
                {
                    Ok(_) if offline.is_empty() => tally.admitted += 1,
                    Ok(_) => tally.offline_only += 1,
                    Err(_) if !offline.is_empty() => tally.refused_both += 1,
                    Err(e) => {
                        eprintln!(
                            "{name}: the API server refused {kind} {object_name} that our offline check admits: {e}\n  spec: {}\n  object: {object}",
                            serde_json::to_value(&md.spec).unwrap()
                        );
                        tally
                            .disagreements
                            .push(format!("{name} {kind} {object_name}: {e}"));
                    }
                }
            }
        }
    }
    let took = started.elapsed();
    eprintln!(
        "server-side dry-run of generated renders: {specs} specs x {} providers, seed {seed}, {took:?}",
        detections.len()
    );
    for (name, t) in &tallies {
        eprintln!(
            "  {name}: {} not admitted by our CRD, {} refused by the core's validation, {} held, {} rendered -> {} objects: {} admitted, {} refused by both, {} refused offline only, {} disagreements",
            t.not_admitted,
            t.invalid,
            t.held,
            t.rendered,
            t.objects,
            t.admitted,
            t.refused_both,
            t.offline_only,
            t.disagreements.len()
        );
    }
    eprintln!("  kinds sent: {kinds:?}");
    let disagreements: Vec<&String> = tallies.values().flat_map(|t| &t.disagreements).collect();
    assert!(
        disagreements.is_empty(),
        "{} disagreements: {disagreements:#?}",
        disagreements.len()
    );
    let total_objects: usize = tallies.values().map(|t| t.objects).sum();
    for (name, t) in &tallies {
        assert!(t.rendered >= wanted, "{name} rendered too few: {t:?}");
    }
    assert!(total_objects > 0);
}

/// The API server reads apply bodies as YAML, which refuses U+007F–U+0084, U+0086–U+009F,
/// U+FFFE and U+FFFF even inside quoted strings; a user's env value may hold them (a
/// ModelDeployment is stored from JSON), and it reads U+0085, U+2028 and U+2029 as line
/// breaks. Plain serde_json output is refused with 400; the bodies of `airunway_api::apply_body` (what every controller sends) are admitted and the
/// value is stored unchanged.
#[tokio::test]
async fn apply_bodies_carry_characters_the_yaml_reader_refuses() {
    let env = TestEnv::new("apply-yaml-readable").await;
    let value = "tab\there\u{0}nul\u{7f}del\u{80}\u{84}\u{85}nel\u{86}\u{9f}\u{2028}ls\u{2029}ps\u{feff}bom\u{fffe}\u{ffff}模型🚀";
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "hostile", "namespace": env.namespace},
        "data": {"value": value}});
    let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), &env.namespace);
    let params = PatchParams::apply("airunway-e2e");
    let refused = api
        .patch("hostile", &params, &Patch::Apply(&body))
        .await
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("control characters are not allowed"),
        "{refused}"
    );
    let stored = api
        .patch("hostile", &params, &apply_body::apply(&body))
        .await
        .unwrap();
    assert_eq!(
        stored
            .data
            .unwrap_or_default()
            .get("value")
            .map(String::as_str),
        Some(value)
    );
    // Applying it again changes nothing (the same fields, the same value).
    let again = api
        .patch("hostile", &params, &apply_body::apply(&body))
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version,
        stored.metadata.resource_version
    );
}
