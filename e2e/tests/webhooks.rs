//! The core's admission webhooks through the real API server: the shipped webhook
//! configurations (clientConfig switched to a 127.0.0.1 URL), the core running as its
//! ServiceAccount with the shipped RBAC, certificates managed in process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use airunway_api::apply_body;
use airunway_api::constants::{annotations, messages};
use airunway_api::v1alpha1::{InferenceProviderConfig, ModelDeployment};
use airunway_e2e::admission::{
    self, core_identity, create_raw, deployment, install_webhooks, rejection, remove_webhooks,
    start_core, wait_webhook_active,
};
use airunway_e2e::binaries::free_port;
use airunway_e2e::providers::{delete_all, register, register_shipped, shipped_registration};
use airunway_e2e::stack;
use airunway_e2e::wait::{eventually, wait_for};
use airunway_e2e::{TestEnv, cluster_lock, manifests, paths};
use http_body_util::BodyExt;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);
const CONFIG: &str = admission::CONFIGURATION;

#[tokio::test]
async fn model_deployment_admission() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("webhook-md").await;
    delete_all(&env.client).await;
    register_shipped(&env.client, &["kaito"], true).await;
    // A provider that reports its upstream CRD missing, as a provider writes it.
    let mut nocrd = shipped_registration("kaito");
    nocrd["metadata"]["name"] = json!("nocrd");
    register(&env.client, &nocrd, false).await;
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    let condition = json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig", "metadata": {"name": "nocrd"},
        "status": {"ready": false, "conditions": [{"type": "UpstreamAvailable", "status": "False", "reason": "UpstreamCRDNotInstalled",
            "message": "CRD workspaces.kaito.sh is not installed", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    ipcs.patch_status(
        "nocrd",
        &PatchParams::apply("nocrd-provider").force(),
        &apply_body::apply(&condition),
    )
    .await
    .unwrap();

    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let core = start_core(&env, &kubeconfig, port, &[]).await;
    wait_webhook_active(&env).await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);

    // A provider not registered yet (a GitOps wave applying both at once): admitted with a
    // warning, Pending with a message naming it, and processed once it registers.
    let (code, warnings, body) = create_raw(&env.client, &env.namespace, &deployment("ghost", json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "provider": {"name": "ghost"}}))).await;
    assert_eq!(code, 201, "{body}");
    assert!(
        warnings.iter().any(|w| w.contains("spec.provider.name: provider 'ghost' is not registered: there is no InferenceProviderConfig named 'ghost'")),
        "{warnings:?}"
    );
    wait_for(
        &api,
        "ghost",
        WAIT,
        "Pending, naming the missing provider",
        |md| {
            md.status.as_ref().and_then(|s| s.message.as_deref())
                == Some(
                    "Provider 'ghost' is not registered: no InferenceProviderConfig named ghost; install that provider or set spec.provider.name to a registered one (kubectl get inferenceproviderconfigs); the deployment goes on by itself once ghost registers",
                )
        },
    )
    .await;
    let mut ghost = shipped_registration("kaito");
    ghost["metadata"]["name"] = json!("ghost");
    register(&env.client, &ghost, true).await;
    wait_for(&api, "ghost", WAIT, "the provider registered", |md| {
        md.condition("ProviderHealthy").is_some_and(|c| c.is_true())
    })
    .await;

    // Upstream CRD not installed, as the provider reports it.
    let (message, _) = rejection(&api, deployment("nocrd", json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "provider": {"name": "nocrd"}}))).await;
    assert!(
        message.contains(&format!(
            "spec.provider.name: {}",
            messages::provider_crd_not_installed("nocrd")
        )),
        "{message}"
    );

    // Privilege-escalating override keys, at any depth.
    let (message, fields) = rejection(
        &api,
        deployment(
            "escalate",
            json!({"model": {"id": "a/b"},
        "provider": {"overrides": {"frontend": {"podSpec": {"serviceAccountName": "admin"}}}}}),
        ),
    )
    .await;
    assert!(message.contains("spec.provider.overrides.frontend.podSpec.serviceAccountName: key 'serviceAccountName' is not allowed in provider.overrides"), "{message}");
    assert_eq!(
        fields,
        ["spec.provider.overrides.frontend.podSpec.serviceAccountName"]
    );

    // Overrides must be an object (the CRD schema says so first).
    let (message, _) = rejection(
        &api,
        deployment(
            "not-object",
            json!({"model": {"id": "a/b"}, "provider": {"overrides": "kv"}}),
        ),
    )
    .await;
    assert!(
        message.contains("spec.provider.overrides") && message.contains("object"),
        "{message}"
    );

    // Size limits and child-name rules; all errors reported at once.
    let long_name = "a-very-long-model-deployment-name-that-is-too-long";
    let big = "x".repeat(20_000);
    let (message, fields) = rejection(
        &api,
        deployment(
            long_name,
            json!({"model": {"id": "a/b"},
        "engine": {"args": {"--max-model-len": "8192"}}, "provider": {"overrides": {"blob": big}}}),
        ),
    )
    .await;
    assert_eq!(
        fields,
        [
            "metadata.name",
            "spec.engine.args[--max-model-len]",
            "spec.provider.overrides"
        ],
        "{message}"
    );
    assert!(
        message.contains("metadata.name: must be at most 45 characters"),
        "{message}"
    );
    assert!(
        message.contains("spec.provider.overrides: must be at most 16384 bytes"),
        "{message}"
    );

    // Update path: adding an escalating key to an admitted deployment is refused.
    let ok: ModelDeployment = serde_json::from_value(deployment(
        "admitted",
        json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}}),
    ))
    .unwrap();
    api.create(&PostParams::default(), &ok).await.unwrap();
    let err = api
        .patch(
            "admitted",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"provider": {"overrides": {"hostNetwork": true}}}})),
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("spec.provider.overrides.hostNetwork: key 'hostNetwork' is not allowed"),
        "{err}"
    );
    // Metadata-only updates always pass (finalizers must be removable).
    api.patch(
        "admitted",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"airunway.ai/team": "a"}}})),
    )
    .await
    .unwrap();

    // Warnings reach the client, the object is admitted.
    let (code, warnings, _) = create_raw(&env.client, &env.namespace, &deployment("warned", json!({
        "model": {"source": "custom", "servedName": "mine"}, "image": "example/model:1",
        "engine": {"type": "trtllm", "contextLength": 4096, "trustRemoteCode": true}, "resources": {"gpu": {"count": 1}}}))).await;
    assert_eq!(code, 201);
    let joined = warnings.join("\n");
    assert!(joined.contains(messages::SERVED_NAME_IGNORED), "{joined}");
    assert!(
        joined.contains("trustRemoteCode=true allows execution of arbitrary code from HuggingFace"),
        "{joined}"
    );
    assert!(
        joined.contains(
            "contextLength is ignored for TensorRT-LLM (must be configured at engine build time)"
        ),
        "{joined}"
    );

    // Defaults are visible on the stored object.
    api.create(&PostParams::default(), &serde_json::from_value(deployment("defaulted", json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"},
        "serving": {"mode": "disaggregated"}, "scaling": {"prefill": {"gpu": {"count": 2}}, "decode": {"gpu": {"count": 1}}}}))).unwrap())
        .await
        .unwrap();
    let stored = api.get("defaulted").await.unwrap();
    let scaling = stored.spec.scaling.unwrap();
    assert_eq!(scaling.replicas, Some(1));
    let prefill = scaling.prefill.unwrap();
    assert_eq!(
        (prefill.replicas, prefill.gpu.unwrap().gpu_type.as_deref()),
        (Some(1), Some("nvidia.com/gpu"))
    );
    assert_eq!(
        stored.spec.model.source,
        Some(airunway_api::v1alpha1::ModelSource::Huggingface)
    );

    core.terminate(Duration::from_secs(10));
    remove_webhooks(&env.client).await;
    delete_all(&env.client).await;
}

#[tokio::test]
async fn provider_config_admission() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("webhook-ipc").await;
    delete_all(&env.client).await;
    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let core = start_core(&env, &kubeconfig, port, &[]).await;
    wait_webhook_active(&env).await;
    let api: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    let config = |name: &str, spec: Value| -> InferenceProviderConfig {
        serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig", "metadata": {"name": name}, "spec": spec}))
            .unwrap()
    };

    let err = api
        .create(
            &PostParams::default(),
            &config(
                "broken-cel",
                json!({"selectionRules": [
            {"condition": "spec.engine.type == 'vllm'", "priority": 1},
            {"condition": "spec.engine.type == ", "priority": 2}]}),
            ),
        )
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("spec.selectionRules[1].condition: selection rule 1 does not compile as CEL"),
        "{text}"
    );

    let err = api
        .create(&PostParams::default(), &config("non-bool", json!({"selectionRules": [{"condition": "spec.scaling.replicas + 1", "priority": 1}]})))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("selection rule 0 must return a bool"),
        "{err}"
    );

    let raw = json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig", "metadata": {"name": "bad-engine"},
        "spec": {"capabilities": {"engines": ["vllm", "tensorrt"]}}});
    let request = kube::core::Request::new("/apis/airunway.ai/v1alpha1/inferenceproviderconfigs")
        .create(&PostParams::default(), serde_json::to_vec(&raw).unwrap())
        .unwrap();
    let response = env
        .client
        .send(request.map(kube::client::Body::from))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 422);
    let body = String::from_utf8(
        response
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec(),
    )
    .unwrap();
    assert!(
        body.contains("spec.capabilities.engines[1]: unknown engine"),
        "{body}"
    );

    // The shipped registrations are admitted.
    for name in ["kaito", "dynamo", "kuberay", "llmd"] {
        register(&env.client, &shipped_registration(name), true).await;
    }
    core.terminate(Duration::from_secs(10));
    remove_webhooks(&env.client).await;
    delete_all(&env.client).await;
}

fn ca_bundle(config: &ValidatingWebhookConfiguration) -> Vec<u8> {
    config
        .webhooks
        .as_ref()
        .and_then(|w| w.first())
        .and_then(|w| w.client_config.ca_bundle.clone())
        .map(|b| b.0)
        .unwrap_or_default()
}

#[tokio::test]
async fn certificate_rotation_keeps_admission_working() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("webhook-rotation").await;
    delete_all(&env.client).await;
    register_shipped(&env.client, &["kaito"], true).await;
    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let core = start_core(
        &env,
        &kubeconfig,
        port,
        &[
            "--webhook-cert-lifetime=16s",
            "--webhook-cert-rotation-margin=8s",
        ],
    )
    .await;
    wait_webhook_active(&env).await;
    let configs: Api<ValidatingWebhookConfiguration> = Api::all(env.client.clone());
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);

    // Admit (and reject) continuously for 30 s while the certificate rotates.
    let mut bundles = vec![ca_bundle(&configs.get(CONFIG).await.unwrap())];
    let (mut admitted, mut rejected_by_rule, mut failures) = (0, 0, Vec::new());
    let started = Instant::now();
    let mut n = 0;
    while started.elapsed() < Duration::from_secs(30) {
        n += 1;
        let good: ModelDeployment = serde_json::from_value(deployment(
            &format!("rot-{n}"),
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}}),
        ))
        .unwrap();
        match api
            .create(
                &PostParams {
                    dry_run: true,
                    ..Default::default()
                },
                &good,
            )
            .await
        {
            Ok(_) => admitted += 1,
            Err(e) => failures.push(format!("valid object refused: {e}")),
        }
        let bad: ModelDeployment = serde_json::from_value(deployment(
            &format!("rot-bad-{n}"),
            json!({"model": {"id": "a/b"}, "provider": {"overrides": {"hostIPC": true}}}),
        ))
        .unwrap();
        match api
            .create(
                &PostParams {
                    dry_run: true,
                    ..Default::default()
                },
                &bad,
            )
            .await
        {
            Err(e) if e.to_string().contains("key 'hostIPC' is not allowed") => {
                rejected_by_rule += 1
            }
            other => failures.push(format!("escalation not refused by the webhook: {other:?}")),
        }
        let bundle = ca_bundle(&configs.get(CONFIG).await.unwrap());
        if bundles.last() != Some(&bundle) {
            bundles.push(bundle);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    eprintln!(
        "rotation: {} distinct caBundles in 30s; {admitted} admitted, {rejected_by_rule} refused by rule, {} failures",
        bundles.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "admission failed during rotation: {failures:?}"
    );
    assert!(
        bundles.len() >= 3,
        "expected at least two rotations, saw {} caBundles",
        bundles.len()
    );
    let secret: Api<Secret> = Api::namespaced(env.client.clone(), &env.namespace);
    let stored = secret.get("airunway-core-webhook-tls").await.unwrap();
    let stored_bundle = stored.data.unwrap()["ca.crt"].0.clone();
    assert_eq!(
        String::from_utf8_lossy(&stored_bundle)
            .matches("BEGIN CERTIFICATE")
            .count(),
        2,
        "new CA + previous CA"
    );
    core.terminate(Duration::from_secs(10));
    remove_webhooks(&env.client).await;
    delete_all(&env.client).await;
}

#[tokio::test]
async fn a_restarted_core_reuses_the_secret() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("webhook-restart").await;
    delete_all(&env.client).await;
    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let flags = [
        "--webhook-cert-lifetime=1h",
        "--webhook-cert-rotation-margin=10s",
    ];
    let core = start_core(&env, &kubeconfig, port, &flags).await;
    wait_webhook_active(&env).await;
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), &env.namespace);
    let before = secrets.get("airunway-core-webhook-tls").await.unwrap();
    core.terminate(Duration::from_secs(10));
    let core = start_core(&env, &kubeconfig, port, &flags).await;
    wait_webhook_active(&env).await;
    let after = secrets.get("airunway-core-webhook-tls").await.unwrap();
    assert_eq!(
        before.metadata.resource_version, after.metadata.resource_version,
        "the restarted core rewrote the Secret"
    );
    assert_eq!(before.data, after.data);
    core.terminate(Duration::from_secs(10));
    remove_webhooks(&env.client).await;
}

#[tokio::test]
async fn without_webhook_configurations_invalid_deployments_are_held() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("webhook-absent").await;
    delete_all(&env.client).await;
    register_shipped(&env.client, &["kaito"], true).await;
    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    remove_webhooks(&env.client).await;
    let core = start_core(
        &env,
        &kubeconfig,
        port,
        &[
            "--webhook-cert-lifetime=1h",
            "--webhook-cert-rotation-margin=10s",
        ],
    )
    .await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    // Passes the CRD rules, fails the core's: stored, then Failed (as in the Go AI Runway) with
    // `Validation failed: ` and what to fix.
    let md: ModelDeployment = serde_json::from_value(deployment(
        "early",
        json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"},
        "provider": {"overrides": {"runtimeClassName": "nvidia"}}}),
    ))
    .unwrap();
    api.create(&PostParams::default(), &md).await.unwrap();
    let stored = wait_for(
        &api,
        "early",
        WAIT,
        "Failed with a validation message",
        |md| {
            md.status
                .as_ref()
                .and_then(|s| s.message.as_deref())
                .is_some_and(|m| m.contains("key 'runtimeClassName' is not allowed"))
        },
    )
    .await;
    let status = stored.status.unwrap();
    assert_eq!(status.phase, Some(airunway_api::v1alpha1::Phase::Failed));
    assert!(
        status.message.as_deref().is_some_and(
            |m| m.starts_with("Validation failed: spec.provider.overrides.runtimeClassName: ")
        ),
        "{:?}",
        status.message
    );

    // Registering the webhooks later: the core injects its CA and admission starts working.
    install_webhooks(&env, port).await;
    wait_webhook_active(&env).await;
    core.terminate(Duration::from_secs(10));
    remove_webhooks(&env.client).await;
    delete_all(&env.client).await;
}

#[tokio::test]
async fn selector_disabled_requires_an_engine() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("webhook-selector-off").await;
    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let core = start_core(
        &env,
        &kubeconfig,
        port,
        &["--enable-provider-selector=false"],
    )
    .await;
    wait_webhook_active(&env).await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let (message, fields) = rejection(
        &api,
        deployment("no-engine", json!({"model": {"id": "a/b"}})),
    )
    .await;
    assert!(
        message.contains("spec.engine.type: engine.type is required"),
        "{message}"
    );
    assert_eq!(fields, ["spec.engine.type"]);
    core.terminate(Duration::from_secs(10));
    remove_webhooks(&env.client).await;
}

// ---- Drop-in for manifests written for the Go AI Runway (issue 15) ----

/// Sends `object` as a create with `fieldValidation=<validation>`, the parameter `kubectl apply`
/// sends for `--validate=strict` (`Strict`) and `--validate=false` (`Ignore`). Returns the
/// status code and the response body.
async fn create_with_validation(
    client: &Client,
    namespace: &str,
    validation: &str,
    object: &Value,
) -> (u16, Value) {
    let request = http::Request::post(format!(
        "/apis/airunway.ai/v1alpha1/namespaces/{namespace}/modeldeployments?fieldValidation={validation}"
    ))
    .header("content-type", "application/json")
    .body(kube::client::Body::from(serde_json::to_vec(object).unwrap()))
    .unwrap();
    let response = client.send(request).await.unwrap();
    let code = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// Asserts that every field of `written` is in `stored` with the same value (`stored` may have
/// more: defaults). Quantities are compared as written (the API server keeps strings).
fn assert_kept(written: &Value, stored: &Value, path: &str) {
    match (written, stored) {
        (Value::Object(w), Value::Object(s)) => {
            for (key, value) in w {
                let child = format!("{path}.{key}");
                let kept = s.get(key).unwrap_or_else(|| panic!("{child} was lost"));
                assert_kept(value, kept, &child);
            }
        }
        (Value::Array(w), Value::Array(s)) => {
            assert_eq!(w.len(), s.len(), "{path}: list length changed");
            for (i, (w, s)) in w.iter().zip(s).enumerate() {
                assert_kept(w, s, &format!("{path}[{i}]"));
            }
        }
        (w, s) => assert_eq!(w, s, "{path} changed"),
    }
}

fn parity_samples() -> Vec<(String, Value)> {
    let dir = paths::workspace_root().join("e2e/samples/go-parity");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .flat_map(|path| {
            let file = path.file_name().unwrap().to_string_lossy().to_string();
            manifests::read(&path)
                .into_iter()
                .map(move |object| (file.clone(), object))
        })
        .collect()
}

#[tokio::test]
async fn go_project_manifests_apply_unchanged() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("webhook-parity").await;
    delete_all(&env.client).await;
    register_shipped(&env.client, &["kaito", "dynamo"], true).await;
    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let core = start_core(&env, &kubeconfig, port, &[]).await;
    wait_webhook_active(&env).await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);

    // Every sample is admitted with strict field validation and read back with nothing lost.
    let samples = parity_samples();
    assert!(samples.len() >= 5, "samples: {}", samples.len());
    for (file, object) in &samples {
        let (code, body) =
            create_with_validation(&env.client, &env.namespace, "Strict", object).await;
        assert_eq!(code, 201, "{file}: {body}");
        let name = object["metadata"]["name"].as_str().unwrap();
        let stored = serde_json::to_value(api.get(name).await.unwrap()).unwrap();
        assert_kept(&object["spec"], &stored["spec"], "spec");
        assert_kept(
            &object["metadata"]["labels"],
            &stored["metadata"]["labels"],
            "metadata.labels",
        );
    }

    // Defaulting like the Go project: `{engine: vllm}` gets one GPU and prefix caching on.
    let minimal = serde_json::to_value(api.get("qwen-minimal").await.unwrap()).unwrap();
    assert_eq!(
        minimal["spec"]["resources"],
        json!({"gpu": {"count": 1, "type": "nvidia.com/gpu"}})
    );
    assert_eq!(minimal["spec"]["engine"]["enablePrefixCaching"], true);
    assert_eq!(minimal["spec"]["serving"]["mode"], "aggregated");
    assert_eq!(minimal["spec"]["scaling"]["replicas"], 1);
    // Storage defaults like the Go project: the purpose's mount path; a managed volume's claim
    // `<deployment>-<volume>` and `ReadWriteMany`; a volume without a purpose is `custom`.
    let managed = serde_json::to_value(api.get("llama-managed-cache").await.unwrap()).unwrap();
    assert_eq!(
        managed["spec"]["model"]["storage"]["volumes"],
        json!([
            {"name": "weights", "purpose": "modelCache", "size": "100Gi", "storageClassName": "azurefile-premium",
             "accessMode": "ReadWriteMany", "mountPath": "/model-cache", "readOnly": false,
             "claimName": "llama-managed-cache-weights"},
            {"name": "compiled", "purpose": "compilationCache", "size": "20Gi", "mountPath": "/compilation-cache",
             "claimName": "llama-managed-cache-compiled", "accessMode": "ReadWriteMany"},
            {"name": "eval-data", "purpose": "custom", "claimName": "eval-datasets", "mountPath": "/data/eval", "readOnly": true},
        ])
    );
    let cached = serde_json::to_value(api.get("qwen-coder-cached").await.unwrap()).unwrap();
    assert_eq!(
        cached["spec"]["model"]["storage"]["volumes"],
        json!([{"name": "model-cache", "claimName": "team-model-pvc", "purpose": "modelCache", "mountPath": "/model-cache"}])
    );
    let disagg = serde_json::to_value(api.get("qwen-disagg").await.unwrap()).unwrap();
    assert_eq!(
        disagg["spec"]["scaling"]["decode"]["gpu"]["type"],
        "nvidia.com/gpu"
    );

    // `enablePrefixCaching: false` survives an update of another field and a server-side apply.
    api.patch(
        "llama-full",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"scaling": {"replicas": 3}}})),
    )
    .await
    .unwrap();
    api.patch(
        "llama-full",
        &PatchParams::apply("gitops").force(),
        &apply_body::apply(
            &json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment", "metadata": {"name": "llama-full"},
            "spec": {"model": {"id": "meta-llama/Llama-3.1-8B-Instruct"}, "engine": {"enablePrefixCaching": false}}}),
        ),
    )
    .await
    .unwrap();
    let full = api.get("llama-full").await.unwrap();
    assert_eq!(full.spec.engine.unwrap().enable_prefix_caching, Some(false));

    // Selected, validated: the core accepts what it admitted.
    let selected = wait_for(&api, "qwen-minimal", WAIT, "Validated=True", |md| {
        md.condition("Validated").is_some_and(|c| c.is_true())
    })
    .await;
    // `{engine: vllm}` without resources runs on one GPU (the defaulting the webhook would have
    // written), so Dynamo's GPU rule picks it.
    assert_eq!(selected.resolved_engine().map(|e| e.as_str()), Some("vllm"));
    assert_eq!(selected.selected_provider(), Some("dynamo"));

    api.delete_collection(&DeleteParams::default(), &Default::default())
        .await
        .unwrap();
    core.terminate(Duration::from_secs(10));
    remove_webhooks(&env.client).await;
    delete_all(&env.client).await;
}

/// The Go project's storage test deployment: `spec.model.storage` set to `storage`, Dynamo, vLLM,
/// one GPU.
fn storage_deployment(name: &str, volumes: Value) -> Value {
    deployment(
        name,
        json!({"model": {"id": "Qwen/Qwen3-0.6B", "source": "huggingface", "storage": {"volumes": volumes}},
            "provider": {"name": "dynamo"}, "engine": {"type": "vllm"},
            "resources": {"gpu": {"count": 1, "type": "nvidia.com/gpu"}}, "scaling": {"replicas": 1}}),
    )
}

/// The text of each `Warning` header (`299 - "<text>"`, quotes escaped), as kubectl prints it.
fn warning_texts(headers: &[String]) -> Vec<String> {
    headers
        .iter()
        .map(|h| {
            let text = h.strip_prefix("299 - \"").unwrap_or(h);
            let text = text.strip_suffix('"').unwrap_or(text);
            text.replace("\\\"", "\"").replace("\\\\", "\\")
        })
        .collect()
}

#[tokio::test]
async fn model_storage_is_defaulted_enforced_and_warned_about_like_the_go_project() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("webhook-storage").await;
    delete_all(&env.client).await;
    register_shipped(&env.client, &["dynamo"], true).await;
    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let core = start_core(&env, &kubeconfig, port, &[]).await;
    wait_webhook_active(&env).await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let denied = |field: &str, message: &str| {
        format!(
            "admission webhook \"validate.modeldeployments.airunway.ai\" denied the request: {field}: {message}"
        )
    };
    let path = |i: usize, field: &str| format!("spec.model.storage.volumes[{i}].{field}");

    // Every rejection of the Go project's storage e2e tests (and the rest of its rules), with
    // the message as kubectl prints it.
    let rejections: Vec<(&str, Value, String)> = vec![
        (
            "val-pre-no-claim",
            json!([{"name": "vol", "purpose": "compilationCache"}]),
            denied(&path(0, "claimName"), messages::STORAGE_CLAIM_NAME_REQUIRED),
        ),
        (
            "val-ro-managed",
            json!([{"name": "model-cache", "purpose": "modelCache", "size": "2Gi", "readOnly": true}]),
            denied(&path(0, "readOnly"), messages::STORAGE_READ_ONLY_WITH_SIZE),
        ),
        (
            "val-custom-claim",
            json!([{"name": "model-cache", "purpose": "modelCache", "size": "2Gi", "claimName": "my-custom-pvc"}]),
            denied(
                &path(0, "claimName"),
                r#"claimName must not be set when size is set (auto-generated as "val-custom-claim-model-cache")"#,
            ),
        ),
        (
            "val-access-no-size",
            json!([{"name": "vol", "purpose": "modelCache", "claimName": "some-pvc", "accessMode": "ReadWriteOnce"}]),
            denied(
                &path(0, "accessMode"),
                messages::STORAGE_ACCESS_MODE_WITHOUT_SIZE,
            ),
        ),
        (
            "val-sc-no-size",
            json!([{"name": "vol", "purpose": "modelCache", "claimName": "some-pvc", "storageClassName": "azurefile-premium"}]),
            denied(
                &path(0, "storageClassName"),
                messages::STORAGE_CLASS_WITHOUT_SIZE,
            ),
        ),
        (
            "val-dup-mounts",
            json!([{"name": "vol-a", "purpose": "custom", "claimName": "pvc-a", "mountPath": "/shared-path"},
                {"name": "vol-b", "purpose": "custom", "claimName": "pvc-b", "mountPath": "/shared-path"}]),
            denied(
                &path(1, "mountPath"),
                messages::STORAGE_DUPLICATE_MOUNT_PATH,
            ),
        ),
        (
            "val-dup-claims",
            json!([{"name": "vol-a", "claimName": "pvc-a", "mountPath": "/a"},
                {"name": "vol-b", "claimName": "pvc-a", "mountPath": "/b"}]),
            denied(
                &path(1, "claimName"),
                messages::STORAGE_DUPLICATE_CLAIM_NAME,
            ),
        ),
        (
            "val-sys-path",
            json!([{"name": "vol", "purpose": "custom", "claimName": "some-pvc", "mountPath": "/proc/data"}]),
            denied(
                &path(0, "mountPath"),
                "mountPath must not overlap with system path /proc",
            ),
        ),
        (
            "val-rel-path",
            json!([{"name": "vol", "purpose": "custom", "claimName": "some-pvc", "mountPath": "data/models"}]),
            denied(&path(0, "mountPath"), messages::STORAGE_MOUNT_PATH_RELATIVE),
        ),
        (
            "val-custom-no-mp",
            json!([{"name": "vol", "purpose": "custom", "claimName": "some-pvc"}]),
            denied(&path(0, "mountPath"), messages::STORAGE_MOUNT_PATH_REQUIRED),
        ),
        (
            "val-multi-cache",
            json!([{"name": "cache-a", "purpose": "modelCache", "claimName": "pvc-a"},
                {"name": "cache-b", "purpose": "modelCache", "claimName": "pvc-b", "mountPath": "/model-cache-b"}]),
            denied(
                "spec.model.storage.volumes",
                "at most one volume with purpose=modelCache is allowed",
            ),
        ),
        (
            "val-multi-compile",
            json!([{"name": "a", "purpose": "compilationCache", "size": "1Gi"},
                {"name": "b", "purpose": "compilationCache", "size": "1Gi", "mountPath": "/b"}]),
            denied(
                "spec.model.storage.volumes",
                "at most one volume with purpose=compilationCache is allowed",
            ),
        ),
    ];
    for (name, volumes, expected) in rejections {
        let (message, _) = rejection(&api, storage_deployment(name, volumes)).await;
        assert_eq!(message, expected, "{name}");
    }
    // The CRD's enums refuse these before the webhook, in the API server's words, which are
    // the Go project's (its CRD has the same enums); the API server adds that the CEL rules
    // were not checked.
    for (name, volumes, field, expected) in [
        (
            "val-bad-mode",
            json!([{"name": "vol", "purpose": "modelCache", "size": "1Gi", "accessMode": "ReadWriteSometimes"}]),
            path(0, "accessMode"),
            r#"Unsupported value: "ReadWriteSometimes": supported values: "ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany", "ReadWriteOncePod""#,
        ),
        (
            "val-bad-purpose",
            json!([{"name": "vol", "purpose": "scratch", "claimName": "c", "mountPath": "/s"}]),
            path(0, "purpose"),
            r#"Unsupported value: "scratch": supported values: "modelCache", "compilationCache", "custom""#,
        ),
    ] {
        let (message, _) = rejection(&api, storage_deployment(name, volumes)).await;
        assert!(
            message.starts_with(&format!(
                r#"ModelDeployment.airunway.ai "{name}" is invalid: [{field}: {expected}, "#
            )),
            "{name}: {message}"
        );
    }
    // Duplicate names: the list's key (the API server) refuses them first, as in the Go project.
    let (message, _) = rejection(
        &api,
        storage_deployment(
            "val-dup-names",
            json!([{"name": "model-cache", "purpose": "modelCache", "claimName": "pvc-a"},
                {"name": "model-cache", "purpose": "custom", "claimName": "pvc-b", "mountPath": "/data"}]),
        ),
    )
    .await;
    assert!(
        message.contains("spec.model.storage.volumes[1]: Duplicate value"),
        "{message}"
    );
    let nine: Vec<Value> = (0..9)
        .map(|i| json!({"name": format!("v{i}"), "claimName": format!("c{i}"), "mountPath": format!("/v{i}")}))
        .collect();
    let (message, _) = rejection(&api, storage_deployment("val-nine", json!(nine))).await;
    assert!(
        message.contains("spec.model.storage.volumes: Too many: 9: must have at most 8 items"),
        "{message}"
    );

    // Admitted: the defaults are written; the shared cache needs neither size nor claim (our
    // one departure: the Go project asks for a claimName there).
    let (code, warnings, body) = create_raw(
        &env.client,
        &env.namespace,
        &storage_deployment(
            "val-managed",
            json!([{"name": "model-cache", "purpose": "modelCache", "size": "2Gi"},
                {"name": "compile", "purpose": "compilationCache", "claimName": "pvc-compile"},
                {"name": "data", "claimName": "pvc-data", "mountPath": "/data"}]),
        ),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        body["spec"]["model"]["storage"]["volumes"],
        json!([
            {"name": "model-cache", "purpose": "modelCache", "size": "2Gi", "mountPath": "/model-cache",
             "claimName": "val-managed-model-cache", "accessMode": "ReadWriteMany"},
            {"name": "compile", "purpose": "compilationCache", "claimName": "pvc-compile", "mountPath": "/compilation-cache"},
            {"name": "data", "purpose": "custom", "claimName": "pvc-data", "mountPath": "/data"},
        ])
    );
    let (code, _, body) = create_raw(
        &env.client,
        &env.namespace,
        &storage_deployment(
            "val-shared",
            json!([{"name": "cache", "purpose": "modelCache"}]),
        ),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body["spec"]["model"]["storage"]["volumes"],
        json!([{"name": "cache", "purpose": "modelCache", "mountPath": "/model-cache"}])
    );

    // Update only: a managed volume can be neither removed nor changed; a size in other units
    // is the same size; other volumes change freely.
    let volumes = |managed: Value, data_path: &str| {
        json!({"spec": {"model": {"storage": {"volumes": [managed,
            {"name": "compile", "purpose": "compilationCache", "claimName": "pvc-compile"},
            {"name": "data", "claimName": "pvc-data", "mountPath": data_path}]}}}})
    };
    let refused = |result: Result<ModelDeployment, kube::Error>| match result {
        Err(kube::Error::Api(status)) => status.message,
        other => panic!("admitted: {other:?}"),
    };
    let message = refused(
        api.patch(
            "val-managed",
            &PatchParams::default(),
            &Patch::Merge(volumes(
                json!({"name": "model-cache", "purpose": "modelCache", "size": "10Gi"}),
                "/data",
            )),
        )
        .await,
    );
    assert_eq!(
        message,
        denied(
            "spec.model.storage.volumes[0]",
            messages::STORAGE_MANAGED_VOLUME_IMMUTABLE
        )
    );
    let message = refused(
        api.patch(
            "val-managed",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"model": {"storage": {"volumes": [
                {"name": "data", "claimName": "pvc-data", "mountPath": "/data"}]}}}})),
        )
        .await,
    );
    assert_eq!(
        message,
        denied(
            "spec.model.storage.volumes",
            &messages::storage_managed_volume_removed("model-cache")
        )
    );
    let updated = api
        .patch(
            "val-managed",
            &PatchParams::default(),
            &Patch::Merge(volumes(
                json!({"name": "model-cache", "purpose": "modelCache", "size": "2048Mi"}),
                "/datasets",
            )),
        )
        .await
        .unwrap();
    let stored = updated.spec.model.storage.unwrap().volumes.unwrap();
    assert_eq!(stored[0].size.as_deref(), Some("2048Mi"));
    assert_eq!(
        stored[0].claim_name.as_deref(),
        Some("val-managed-model-cache")
    );
    assert_eq!(stored[2].mount_path.as_deref(), Some("/datasets"));

    // The two warnings, as kubectl prints them.
    let (code, warnings, body) = create_raw(
        &env.client,
        &env.namespace,
        &storage_deployment(
            "val-read-only",
            json!([{"name": "weights", "purpose": "modelCache", "claimName": "pvc-weights", "readOnly": true},
                {"name": "kernels", "purpose": "compilationCache", "claimName": "pvc-kernels", "readOnly": true}]),
        ),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        warning_texts(&warnings),
        [
            messages::storage_read_only_compilation_cache("kernels"),
            messages::storage_read_only_model_cache("weights"),
        ]
    );

    api.delete_collection(&DeleteParams::default(), &Default::default())
        .await
        .unwrap();
    core.terminate(Duration::from_secs(10));
    remove_webhooks(&env.client).await;
    delete_all(&env.client).await;
}

#[tokio::test]
async fn unknown_fields_limits_and_conflicts_are_refused_by_name() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("webhook-refusals").await;
    delete_all(&env.client).await;
    register_shipped(&env.client, &["kaito"], true).await;
    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let core = start_core(&env, &kubeconfig, port, &[]).await;
    wait_webhook_active(&env).await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);

    // Unknown fields: refused by name whether the client validates strictly (kubectl apply
    // --validate=strict) or not at all (--validate=false); never pruned silently.
    let typo = deployment(
        "typo",
        json!({"model": {"id": "a/b", "revison": "main"}, "engine": {"type": "vllm", "enablePrefixCachng": false}}),
    );
    for validation in ["Strict", "Ignore"] {
        let (code, body) =
            create_with_validation(&env.client, &env.namespace, validation, &typo).await;
        assert_eq!(code, 422, "{validation}: {body}");
        let message = body["message"].as_str().unwrap();
        assert!(
            message.contains("spec.engine.enablePrefixCachng: unknown field")
                && message.contains("spec.model.revison: unknown field")
                && message.contains("enablePrefixCaching"),
            "{validation}: {message}"
        );
    }

    // Ceilings and conflicts, each naming the field and the limit or the fix.
    let gpu = json!({"gpu": {"count": 1}});
    let cases: Vec<(&str, Value, &str, String)> = vec![
        (
            "cpu",
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}, "cpu": "513"}}),
            "spec.resources.cpu",
            "exceeds maximum allowed (512)".into(),
        ),
        (
            "cpu-negative",
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}, "cpu": "-1"}}),
            "spec.resources.cpu",
            "must be greater than zero".into(),
        ),
        (
            "memory",
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}, "memory": "5Ti"}}),
            "spec.resources.memory",
            "exceeds maximum allowed (4Ti)".into(),
        ),
        (
            "prefill-memory",
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"},
            "scaling": {"prefill": {"gpu": {"count": 1}, "memory": "8Ti"}, "decode": gpu}}),
            "spec.scaling.prefill.memory",
            "exceeds maximum allowed (4Ti)".into(),
        ),
        (
            "gpus",
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 65}}}),
            "spec.resources.gpu.count",
            "less than or equal to 64".into(),
        ),
        (
            "replicas",
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "scaling": {"replicas": 33}}),
            "spec.scaling.replicas",
            "less than or equal to 32".into(),
        ),
        (
            "images",
            json!({"model": {"id": "a/b"}, "image": "a:1", "engine": {"type": "vllm", "image": "b:2"}, "resources": {"gpu": {"count": 1}}}),
            "spec.engine.image",
            messages::image_conflict("a:1", "b:2"),
        ),
        (
            "flags",
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm", "args": {"max-num-seqs": "8"}, "extraArgs": ["--max-num-seqs=4"]}}),
            "spec.engine.extraArgs",
            messages::launch_flag_conflict("max-num-seqs", "--max-num-seqs=4"),
        ),
        (
            "mode",
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "provider": {"name": "kaito"}, "serving": {"mode": "disaggregated"},
            "scaling": {"prefill": gpu, "decode": gpu}}),
            "spec.serving.mode",
            "provider kaito does not support disaggregated mode for engine vllm".into(),
        ),
    ];
    // Hostile sizes and depths get a message naming the field, not a failed webhook call.
    let mut deep = json!(1);
    for _ in 0..1000 {
        deep = json!({"a": deep});
    }
    let cases = cases.into_iter().chain([
        ("pss", json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "provider": {"overrides": {"worker": {"extraPodSpec": {
                "HostNetwork": true, "volumes": [{"name": "r", "hostPath": {"path": "/"}}],
                "mainContainer": {"ports": [{"containerPort": 1, "hostPort": 1}]}}}}}}),
            "spec.provider.overrides.worker.extraPodSpec.HostNetwork", "host namespaces are not allowed (Pod Security baseline)".to_string()),
        ("pss-volume", json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "provider": {"overrides": {"volumes": [{"name": "r", "hostPath": {"path": "/"}}]}}}),
            "spec.provider.overrides.volumes[0].hostPath", "hostPath volumes are not allowed (Pod Security baseline)".to_string()),
        ("deep", json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "provider": {"overrides": deep}}),
            "spec.provider.overrides.a.a.a", "nested deeper than 64 levels; provider.overrides may nest at most 8 levels".to_string()),
        ("big-env", json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "env": [{"name": "BIG", "value": "x".repeat(1_400_000)}]}),
            // The CRD's maxLength refuses it before the webhook (holds with the webhook down).
            "spec.env[0].value", "32768 bytes".to_string()),
        ("bad-values", json!({"model": {"id": "a/b"}, "engine": {"type": "vllm", "image": "Not A Ref", "contextLength": 4_611_686_018_427_387_904_i64},
            "resources": {"gpu": {"count": 1}}, "nodeSelector": {"bad key": "v"}, "env": [{"name": "A=B", "value": "x"}]}),
            "spec.engine.contextLength", "less than or equal to 16777216".to_string()),
        ("bad-values-2", json!({"model": {"id": "a/b"}, "engine": {"type": "vllm", "image": "Not A Ref"},
            "resources": {"gpu": {"count": 1}}, "nodeSelector": {"bad key": "v"}}),
            "spec.engine.image", "is not a valid image reference".to_string()),
        // Refused by the CRD itself (env name rule, toleration operator enum).
        ("bad-env-name", json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}},
            "env": [{"name": "A=B", "value": "x"}]}),
            "spec.env[0].name", "must be 1 to 256 printable ASCII characters other than '='".to_string()),
        ("bad-toleration", json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}},
            "tolerations": [{"key": "k", "operator": "Sometimes"}]}),
            "spec.tolerations[0].operator", "Equal".to_string()),
    ]);
    for (name, spec, field, expected) in cases {
        let (message, _) = rejection(&api, deployment(name, spec)).await;
        assert!(
            message.contains(field) && message.contains(&expected),
            "{name}: expected {field}: {expected}; got {message}"
        );
    }

    // Overrides the named provider does not use: admitted, with a warning naming the path.
    let (code, warnings, body) = create_raw(
        &env.client,
        &env.namespace,
        &deployment(
            "unused-override",
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "provider": {"name": "kaito", "overrides": {"routerMode": "kv"}}}),
        ),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert!(
        warnings.iter().any(|w| w.contains(
            "provider.overrides.routerMode is not used by provider kaito and is ignored (it uses: resource.instanceType, resource.labelSelector.matchLabels, inference.config, inference.preset.presetOptions.modelAccessSecret)"
        )),
        "{warnings:?}"
    );

    // With the webhooks gone (core down, GitOps wave ordering), what the CRD cannot check is
    // caught at reconcile time: the deployment is stored and `Failed` with the same text. (A
    // provider that does not fit is then reported by the provider itself, with the spec's
    // compatibility texts: see the provider suites.)
    remove_webhooks(&env.client).await;
    let webhook_gone = || async {
        let probe: ModelDeployment = serde_json::from_value(deployment(
            "probe",
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "provider": {"overrides": {"hostPID": true}}}),
        ))
        .unwrap();
        match api
            .create(
                &PostParams {
                    dry_run: true,
                    ..Default::default()
                },
                &probe,
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    };
    eventually("the webhooks to be gone", WAIT, webhook_gone).await;
    for (name, spec, expected) in [
        (
            "images",
            json!({"model": {"id": "a/b"}, "image": "a:1", "engine": {"type": "llamacpp", "image": "b:2"}}),
            messages::image_conflict("a:1", "b:2"),
        ),
        (
            // The CRD writes `purpose: custom`; the core says what the webhook would have.
            "storage",
            json!({"model": {"id": "a/b", "storage": {"volumes": [{"name": "data", "claimName": "c"}]}}, "engine": {"type": "llamacpp"}}),
            format!(
                "spec.model.storage.volumes[0].mountPath: {}",
                messages::STORAGE_MOUNT_PATH_REQUIRED
            ),
        ),
    ] {
        let md: ModelDeployment = serde_json::from_value(deployment(name, spec)).unwrap();
        api.create(&PostParams::default(), &md).await.unwrap();
        let want = format!("Validation failed: {expected}");
        let failed = wait_for(&api, name, WAIT, "Failed with the Go message", |md| {
            md.status.as_ref().and_then(|s| s.message.as_deref()) == Some(want.as_str())
        })
        .await;
        assert_eq!(
            failed.status.unwrap().phase,
            Some(airunway_api::v1alpha1::Phase::Failed)
        );
    }
    // An unknown field admitted without the webhook is kept, not pruned.
    let (code, body) = create_with_validation(&env.client, &env.namespace, "Ignore", &typo).await;
    assert_eq!(code, 201, "{body}");
    let stored: Value = serde_json::to_value(api.get("typo").await.unwrap()).unwrap();
    let raw = kube::Api::<kube::core::DynamicObject>::namespaced_with(
        env.client.clone(),
        &env.namespace,
        &kube::discovery::ApiResource::erase::<ModelDeployment>(&()),
    )
    .get("typo")
    .await
    .unwrap();
    assert_eq!(
        raw.data["spec"]["engine"]["enablePrefixCachng"], false,
        "{stored}"
    );

    api.delete_collection(&DeleteParams::default(), &Default::default())
        .await
        .unwrap();
    core.terminate(Duration::from_secs(10));
    delete_all(&env.client).await;
}

// ---- Environment entries (issue 32, bug 1) ----

/// An env entry with both `value` and `valueFrom` (and the other `EnvVar` rules the API server
/// applies to a container) is refused at the edge with the field, instead of being copied into
/// the provider's Deployment, which the API server refuses (`Failed` with its raw error). The
/// API server's own verdict on the same entries in a Deployment is the reference.
#[tokio::test]
async fn env_entries_are_checked_as_the_api_server_checks_a_container() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("webhook-env").await;
    delete_all(&env.client).await;
    register_shipped(&env.client, &["kaito"], true).await;
    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let core = start_core(&env, &kubeconfig, port, &[]).await;
    wait_webhook_active(&env).await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let ok = json!({"name": "OK", "value": "1"});
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "both",
            json!({"name": "HF_TOKEN", "value": "x", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}),
            "spec.env[1].valueFrom",
            "may not be specified when value is not empty",
        ),
        (
            "no-source",
            json!({"name": "A", "valueFrom": {}}),
            "spec.env[1].valueFrom",
            "must name one source",
        ),
        (
            "two-sources",
            json!({"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"},
                "configMapKeyRef": {"name": "c", "key": "k"}}}),
            "spec.env[1].valueFrom",
            "may name only one source",
        ),
        (
            "field-path",
            json!({"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "spec.restartPolicy"}}}),
            "spec.env[1].valueFrom.fieldRef.fieldPath",
            "is not a pod field an environment variable can read",
        ),
        (
            "secret-key",
            json!({"name": "A", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "a/b"}}}),
            "spec.env[1].valueFrom.secretKeyRef.key",
            "is not a valid key",
        ),
        (
            "resource",
            json!({"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.nvidia.com/gpu"}}}),
            "spec.env[1].valueFrom.resourceFieldRef.resource",
            "is not supported",
        ),
    ];
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(env.client.clone(), &env.namespace);
    for (name, entry, field, text) in &cases {
        // The reference: the API server refuses the entry in a container.
        let workload: k8s_openapi::api::apps::v1::Deployment = serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox", "env": [ok, entry]}]}}}}))
        .unwrap();
        let refused = deployments
            .create(
                &PostParams {
                    dry_run: true,
                    ..Default::default()
                },
                &workload,
            )
            .await
            .expect_err("the API server takes the entry in a container");
        let expected = field.replace("spec.env[1]", "spec.template.spec.containers[0].env[1]");
        assert!(refused.to_string().contains(&expected), "{name}: {refused}");

        // The edge: refused by the webhook with the field and the fix.
        let (message, _) = rejection(
            &api,
            deployment(
                name,
                json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "env": [ok, entry]}),
            ),
        )
        .await;
        assert!(
            message.contains(&format!("{field}: ")) && message.contains(text),
            "{name}: {message}"
        );
    }
    // Entries the API server takes pass.
    let fine: ModelDeployment = serde_json::from_value(deployment(
        "fine",
        json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "env": [ok,
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "TOKEN", "value": "", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
            {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}}]}),
    ))
    .unwrap();
    api.create(
        &PostParams {
            dry_run: true,
            ..Default::default()
        },
        &fine,
    )
    .await
    .unwrap();

    // Without the webhook: stored (the CRD cannot express the rule), then held (Failed, as in
    // the Go AI Runway) by the core's reconcile-time validation with the same words, never
    // handed to a provider.
    remove_webhooks(&env.client).await;
    eventually("the webhook to stop acting", WAIT, || async {
        let (code, _, body) = create_raw(
            &env.client,
            &env.namespace,
            &deployment(
                "both",
                json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "env": [ok, &cases[0].1]}),
            ),
        )
        .await;
        if code == 201 { Ok(()) } else { Err(format!("{code}: {body}")) }
    })
    .await;
    let held = wait_for(&api, "both", WAIT, "Failed with the env message", |md| {
        md.status
            .as_ref()
            .and_then(|s| s.message.as_deref())
            .is_some_and(|m| {
                m.contains("spec.env[1].valueFrom: may not be specified when value is not empty")
            })
    })
    .await;
    let status = held.status.unwrap();
    assert_eq!(status.phase, Some(airunway_api::v1alpha1::Phase::Failed));
    assert!(
        status.provider.and_then(|p| p.name).is_none(),
        "handed to a provider"
    );

    api.delete_collection(&DeleteParams::default(), &Default::default())
        .await
        .unwrap();
    core.terminate(Duration::from_secs(10));
    delete_all(&env.client).await;
}

// ---- Bounded selection rules (issue 16) ----

/// A rule whose cost explodes with the deployment's size: four nested comprehensions over
/// `spec.env` (64^4 rounds at the CRD's limit), true whenever it can run.
const GREEDY_RULE: &str =
    "spec.env.all(a, spec.env.all(b, spec.env.all(c, spec.env.all(d, d.name != ''))))";

#[tokio::test]
async fn a_pathological_selection_rule_is_bounded() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("webhook-greedy").await;
    delete_all(&env.client).await;
    remove_webhooks(&env.client).await;
    register_shipped(&env.client, &["kaito"], true).await;
    // Forced in past admission (registered while no webhook is configured, as during an
    // install or with the core down).
    let mut greedy = shipped_registration("kaito");
    greedy["metadata"]["name"] = json!("greedy");
    greedy["spec"]["selectionRules"] = json!([{"condition": GREEDY_RULE, "priority": 1000}]);
    register(&env.client, &greedy, true).await;

    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let core = start_core(&env, &kubeconfig, port, &[]).await;
    wait_webhook_active(&env).await;

    // The same rule is refused at admission, naming the rule and the budget.
    greedy["metadata"]["name"] = json!("greedy-again");
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    let err = ipcs
        .create(
            &PostParams::default(),
            &serde_json::from_value(greedy.clone()).unwrap(),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("spec.selectionRules[0].condition: selection rule 0 may take up to")
            && err.contains("over the budget of 1000000 per rule"),
        "{err}"
    );

    // Deployments as large as the CRD allows (64 env entries) next to ordinary ones: admission
    // stays fast and every deployment is selected promptly.
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let env_vars: Vec<Value> = (0..64)
        .map(|i| json!({"name": format!("VAR_{i}"), "value": "x"}))
        .collect();
    let mut admission = Vec::new();
    let started = Instant::now();
    for i in 0..40 {
        let spec = if i % 2 == 0 {
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "resources": {"cpu": "1"}, "env": env_vars})
        } else {
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "resources": {"cpu": "1"}, "env": env_vars[..2]})
        };
        let md: ModelDeployment =
            serde_json::from_value(deployment(&format!("md-{i}"), spec)).unwrap();
        let t = Instant::now();
        api.create(&PostParams::default(), &md).await.unwrap();
        admission.push(t.elapsed());
    }
    admission.sort();
    let selected = eventually(
        "every deployment selected",
        Duration::from_secs(60),
        || async {
            let list = api
                .list(&Default::default())
                .await
                .map_err(|e| e.to_string())?;
            let done = list
                .items
                .iter()
                .filter(|md| md.selected_provider().is_some())
                .count();
            if done == 40 {
                Ok(started.elapsed())
            } else {
                Err(format!("{done}/40 selected"))
            }
        },
    )
    .await;
    // The large deployments were not evaluated by the greedy rule (an error, counted as false):
    // they went to kaito; the small ones fit the budget and matched greedy (priority 1000).
    let large = api.get("md-0").await.unwrap();
    let small = api.get("md-1").await.unwrap();
    assert_eq!(large.selected_provider(), Some("kaito"));
    assert_eq!(small.selected_provider(), Some("greedy"));
    let rules_valid = ipcs.get("greedy").await.unwrap();
    let condition = rules_valid
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "SelectionRulesValid"))
        .cloned();
    assert!(
        condition
            .as_ref()
            .and_then(|c| c.message.as_deref())
            .is_some_and(|m| m.contains("not evaluated: it may take up to")),
        "{condition:?}"
    );
    eprintln!(
        "pathological rule present: admission p50 {:?}, max {:?} over 40 creates; all 40 selected {:?} after the first create",
        admission[admission.len() / 2],
        admission[admission.len() - 1],
        selected
    );
    assert!(
        admission[admission.len() - 1] < Duration::from_secs(2),
        "admission slowed down: {admission:?}"
    );

    api.delete_collection(&DeleteParams::default(), &Default::default())
        .await
        .unwrap();
    core.terminate(Duration::from_secs(10));
    remove_webhooks(&env.client).await;
    delete_all(&env.client).await;
}

#[tokio::test]
async fn with_the_core_stopped_writes_are_accepted_and_checked_when_it_returns() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("webhook-core-down").await;
    delete_all(&env.client).await;
    register_shipped(&env.client, &["kaito", "dynamo"], true).await;
    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let core = start_core(&env, &kubeconfig, port, &[]).await;
    wait_webhook_active(&env).await;
    core.terminate(Duration::from_secs(10));

    // The webhook process is gone (the configurations stay): failurePolicy Ignore admits both.
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let valid: ModelDeployment = serde_json::from_value(deployment(
        "valid",
        json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}}),
    ))
    .unwrap();
    let invalid: ModelDeployment = serde_json::from_value(deployment(
        "loosened",
        json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "resources": {"cpu": "1"},
            "provider": {"overrides": {"worker": {"volumes": [{"name": "r", "hostPath": {"path": "/"}}]}}}}),
    ))
    .unwrap();
    let started = Instant::now();
    api.create(&PostParams::default(), &valid).await.unwrap();
    api.create(&PostParams::default(), &invalid).await.unwrap();
    let admitted_in = started.elapsed();

    // The core returns: the valid one is defaulted at reconcile time and selected; the other is
    // held (Failed, as in the Go AI Runway) with the message the webhook would have given.
    let core = start_core(&env, &kubeconfig, port, &[]).await;
    let selected = wait_for(&api, "valid", WAIT, "selected", |md| {
        md.selected_provider().is_some()
    })
    .await;
    // `{engine: vllm}` without resources runs on one GPU (the defaulting the webhook would have
    // written), so Dynamo's GPU rule picks it.
    assert_eq!(selected.resolved_engine().map(|e| e.as_str()), Some("vllm"));
    assert_eq!(selected.selected_provider(), Some("dynamo"));
    let held = wait_for(&api, "loosened", WAIT, "Validated=False", |md| {
        md.condition("Validated").is_some_and(|c| !c.is_true())
    })
    .await;
    let status = held.status.unwrap();
    assert_eq!(status.phase, Some(airunway_api::v1alpha1::Phase::Failed));
    assert!(
        status.message.as_deref().is_some_and(|m| m.contains(
            "spec.provider.overrides.worker.volumes[0].hostPath: hostPath volumes are not allowed (Pod Security baseline)"
        )),
        "{:?}",
        status.message
    );
    eprintln!("with the core stopped, two creates were admitted in {admitted_in:?}");

    api.delete_collection(&DeleteParams::default(), &Default::default())
        .await
        .unwrap();
    core.terminate(Duration::from_secs(10));
    remove_webhooks(&env.client).await;
    delete_all(&env.client).await;
}

// ---- Hostile corpus, with and without the webhook (issue 16) ----

/// Hostile specs: (name, spec, field named in the refusal, words of the message).
fn hostile_corpus() -> Vec<(&'static str, Value, &'static str, &'static str)> {
    let gpu = || json!({"gpu": {"count": 1}});
    let md = |extra: Value| {
        let mut spec = json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "resources": {"cpu": "1"}});
        for (k, v) in extra.as_object().unwrap() {
            spec[k] = v.clone();
        }
        spec
    };
    let overrides = |o: Value| md(json!({"provider": {"overrides": o}}));
    let mut deep = json!(1);
    for _ in 0..1000 {
        deep = json!({"a": deep});
    }
    vec![
        (
            "privileged",
            overrides(
                json!({"worker": {"containers": [{"securityContext": {"privileged": true}}]}}),
            ),
            "spec.provider.overrides.worker.containers[0].securityContext",
            "is not allowed in provider.overrides",
        ),
        (
            "capabilities",
            overrides(
                json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "SecurityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]}}}}),
            ),
            "spec.provider.overrides.spec.template.spec.containers[0].SecurityContext.capabilities.add[0]",
            "adding capability SYS_ADMIN is not allowed",
        ),
        (
            "escalation",
            overrides(json!({"head": {"securityContext": {"allowPrivilegeEscalation": true}}})),
            "spec.provider.overrides.head.securityContext",
            "is not allowed in provider.overrides",
        ),
        (
            "host-path",
            overrides(json!({"volumes": [{"name": "root", "hostPath": {"path": "/"}}]})),
            "spec.provider.overrides.volumes[0].hostPath",
            "hostPath volumes are not allowed",
        ),
        (
            "host-network-capitalised",
            overrides(json!({"podSpec": {"HostNetwork": true}})),
            "spec.provider.overrides.podSpec.HostNetwork",
            "host namespaces are not allowed",
        ),
        (
            "host-port",
            overrides(json!({"containers": [{"ports": [{"containerPort": 80, "hostPort": 80}]}]})),
            "spec.provider.overrides.containers[0].ports[0].hostPort",
            "host ports are not allowed",
        ),
        (
            "service-account",
            overrides(json!({"a": {"b": {"serviceAccountName": "admin"}}})),
            "spec.provider.overrides.a.b.serviceAccountName",
            "is not allowed in provider.overrides",
        ),
        (
            "deep-overrides",
            overrides(deep),
            "spec.provider.overrides",
            "nest",
        ),
        (
            "env-name",
            md(json!({"env": [{"name": "BAD\u{7}NAME", "value": "x"}]})),
            "spec.env[0].name",
            "printable ASCII",
        ),
        (
            "env-huge",
            md(json!({"env": [{"name": "BIG", "value": "x".repeat(1_100_000)}]})),
            "spec.env[0].value",
            "32768 bytes",
        ),
        (
            "node-selector",
            md(json!({"nodeSelector": {"bad\nkey": "v"}})),
            "spec.nodeSelector[bad\nkey]",
            "is not a valid label key",
        ),
        (
            "image",
            md(json!({"image": "NOT a ref"})),
            "spec.image",
            "is not a valid image reference",
        ),
        (
            "toleration",
            md(json!({"tolerations": [{"key": "k", "operator": "Sometimes"}]})),
            "spec.tolerations[0].operator",
            "Equal",
        ),
        (
            "negative-cpu",
            md(json!({"resources": {"cpu": "-2"}})),
            "spec.resources.cpu",
            "must be greater than zero",
        ),
        (
            "huge-memory",
            md(json!({"resources": {"cpu": "1", "memory": "1e100"}})),
            "spec.resources.memory",
            "exceeds maximum allowed (4Ti)",
        ),
        (
            "context-length",
            md(
                json!({"engine": {"type": "llamacpp", "contextLength": 4_611_686_018_427_387_904_i64}}),
            ),
            "spec.engine.contextLength",
            "16777216",
        ),
        (
            "too-many-gpus",
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1000}}}),
            "spec.resources.gpu.count",
            "64",
        ),
        (
            "replicas",
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": gpu(), "scaling": {"replicas": 100000}}),
            "spec.scaling.replicas",
            "32",
        ),
    ]
}

#[tokio::test]
async fn a_hostile_corpus_is_refused_with_and_without_the_webhook() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("webhook-hostile").await;
    delete_all(&env.client).await;
    register_shipped(&env.client, &["kaito"], true).await;
    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let core = start_core(&env, &kubeconfig, port, &[]).await;
    wait_webhook_active(&env).await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);

    // A normal deployment before the corpus: the reference time to selection.
    let normal = |name: &str| -> ModelDeployment {
        serde_json::from_value(deployment(
            name,
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "resources": {"cpu": "1"}}),
        ))
        .unwrap()
    };
    let t = Instant::now();
    api.create(&PostParams::default(), &normal("before"))
        .await
        .unwrap();
    wait_for(&api, "before", WAIT, "selected", |md| {
        md.selected_provider().is_some()
    })
    .await;
    let before = t.elapsed();

    // With the webhook: every entry refused, naming the field.
    let corpus = hostile_corpus();
    for (name, spec, field, words) in &corpus {
        let (message, _) = rejection(&api, deployment(name, spec.clone())).await;
        assert!(
            message.contains(field) && message.contains(words),
            "{name}: expected {field} … {words}; got {}",
            message.chars().take(600).collect::<String>()
        );
    }

    // Without the webhook: refused by the CRD with the same field, or stored and held
    // (Validated=False, Failed as in the Go AI Runway, nothing selected) with the webhook's words.
    remove_webhooks(&env.client).await;
    let gone = || async {
        let probe: ModelDeployment = serde_json::from_value(deployment(
            "probe",
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "provider": {"overrides": {"hostPID": true}}}),
        ))
        .unwrap();
        match api
            .create(
                &PostParams {
                    dry_run: true,
                    ..Default::default()
                },
                &probe,
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    };
    eventually("the webhooks to be gone", WAIT, gone).await;
    let (mut refused_by_crd, mut held) = (0, 0);
    // Not the deep overrides: without the webhook the API server stores them, and no client
    // with serde_json's default recursion limit (the core's, the providers', this test's) can
    // then read the object — a known gap (docs/notes.md), so it is not stored here.
    for (name, spec, field, words) in corpus.iter().filter(|c| c.0 != "deep-overrides") {
        let (code, _, body) =
            create_raw(&env.client, &env.namespace, &deployment(name, spec.clone())).await;
        if code >= 400 {
            let message = body["message"].as_str().unwrap_or_default();
            assert!(
                message.contains(field),
                "{name}: the CRD refused it without naming {field}: {message}"
            );
            refused_by_crd += 1;
            continue;
        }
        let stored = wait_for(
            &api,
            name,
            WAIT,
            "held by reconcile-time validation",
            |md| md.condition("Validated").is_some_and(|c| !c.is_true()),
        )
        .await;
        let message = stored
            .condition("Validated")
            .and_then(|c| c.message.clone())
            .unwrap_or_default();
        assert!(
            message.contains(field) && message.contains(words),
            "{name}: expected {field} … {words}; got {message}"
        );
        assert_eq!(
            stored.phase(),
            Some(airunway_api::v1alpha1::Phase::Failed),
            "{name}"
        );
        assert_eq!(
            stored.selected_provider(),
            None,
            "{name}: nothing is selected"
        );
        held += 1;
    }

    // The core is still healthy and as fast as before the corpus.
    let t = Instant::now();
    api.create(&PostParams::default(), &normal("after"))
        .await
        .unwrap();
    wait_for(&api, "after", WAIT, "selected", |md| {
        md.selected_provider().is_some()
    })
    .await;
    let after = t.elapsed();
    let log = std::fs::read_to_string(core.log()).unwrap_or_default();
    assert!(!log.contains("panicked"), "the core panicked");
    assert!(core.exit_status().is_none(), "the core exited");
    eprintln!(
        "hostile corpus: {} entries refused with the webhook; without it {refused_by_crd} refused by the CRD and {held} held by the core; a normal deployment was selected in {before:?} before and {after:?} after",
        corpus.len()
    );

    api.delete_collection(&DeleteParams::default(), &Default::default())
        .await
        .unwrap();
    core.terminate(Duration::from_secs(10));
    delete_all(&env.client).await;
}

#[tokio::test]
async fn the_overrides_depth_policy_holds_without_the_core() {
    use k8s_openapi::api::admissionregistration::v1::{
        ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
    };
    let _lock = cluster_lock().await;
    let env = TestEnv::new("webhook-depth-policy").await;
    remove_webhooks(&env.client).await;
    let policy =
        manifests::read(&paths::workspace_root().join("deploy/core/admission-policy.yaml"));
    manifests::apply(&env.client, &policy).await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let mut deep = json!(1);
    for _ in 0..1000 {
        deep = json!({"a": deep});
    }
    let spec = |overrides: Value| json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "resources": {"cpu": "1"}, "provider": {"overrides": overrides}});
    // No core, no webhook: the API server's own policy refuses the deep object (the policy
    // takes effect a moment after it is created).
    let message = eventually("the policy to refuse deep overrides", WAIT, || async {
        let (code, _, body) = create_raw(
            &env.client,
            &env.namespace,
            &deployment("deep", spec(deep.clone())),
        )
        .await;
        if code == 201 {
            let _ = api.delete("deep", &DeleteParams::default()).await;
            return Err("admitted".to_string());
        }
        // A cluster-scoped policy an earlier test of this shared control plane deleted (the
        // spec-author one) leaves the API server's policy cache a moment later: wait it out.
        let message = body["message"].as_str().unwrap_or_default().to_string();
        if message.contains("spec.provider.overrides") {
            Ok(message)
        } else {
            Err(message)
        }
    })
    .await;
    assert!(
        message.contains("spec.provider.overrides: nested more than 15 levels deep"),
        "{message}"
    );
    // Ordinary overrides pass.
    eventually("ordinary overrides to be admitted", WAIT, || async {
        let (code, _, body) = create_raw(
            &env.client,
            &env.namespace,
            &deployment(
                "shallow",
                spec(json!({"worker": {"resources": {"cpu": "2"}}, "list": [1, [2, {"x": 3}]]})),
            ),
        )
        .await;
        if code == 201 {
            Ok(())
        } else {
            Err(body.to_string())
        }
    })
    .await;

    api.delete_collection(&DeleteParams::default(), &Default::default())
        .await
        .unwrap();
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(env.client.clone());
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(env.client.clone());
    let _ = bindings
        .delete("airunway-overrides-depth", &DeleteParams::default())
        .await;
    let _ = policies
        .delete("airunway-overrides-depth", &DeleteParams::default())
        .await;
}

/// The path of the `e2e/go/reference` program (github.com/distribution/reference), built and
/// cached by its build script on first use.
fn reference_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("AIRUNWAY_REFERENCE_BIN") {
        return PathBuf::from(path);
    }
    let script = paths::workspace_root().join("e2e/go/reference/build.sh");
    let output = std::process::Command::new(&script).output().unwrap();
    assert!(
        output.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
}

/// Every edge case of the two grammars the shared parser replaced (the core's: at most 512
/// characters, any digest algorithm, no tag starting with `.`/`-`; the vLLM provider's: at most
/// 4,096 characters, sha256 only, a tag may start with `.`) and of distribution/reference.
fn image_reference_edge_cases() -> Vec<String> {
    let hex = |n: usize| {
        "0123456789abcdef"
            .chars()
            .cycle()
            .take(n)
            .collect::<String>()
    };
    let mut cases: Vec<String> = [
        "",
        "a",
        "A",
        "busybox",
        "busybox:latest",
        "library/busybox",
        "docker.io/busybox",
        "docker.io/library/busybox",
        "index.docker.io/busybox",
        "index.docker.io/a/b",
        "registry-1.docker.io/a",
        "Docker.io/a",
        "DOCKER.IO/a",
        "vllm/vllm-openai:cu130-nightly",
        "localhost",
        "localhost:5000",
        "localhost/a",
        "localhost:5000/a:v1",
        "LOCALHOST/a",
        "localhost:/a",
        "localhost:x/a",
        "localhost.localdomain/a",
        "127.0.0.1/a",
        "127.0.0.1:5000/a/b:c",
        "1.2.3.4.5/a",
        "host:0/a",
        "host:65535/a",
        "host:65536/a",
        "host:99999999999/a",
        "host:/a",
        "host:-1/a",
        "host:1:2/a",
        "ho_st.io/a",
        "-host.io/a",
        "host-.io/a",
        "host..io/a",
        ".host.io/a",
        "host.io./a",
        "h.io/a",
        "Upper/a",
        "Upper/A",
        "UPPER:5000/a",
        "Upper.Case.IO/a",
        "a/Upper",
        "a/b/C",
        "a:UPPER",
        "a:Tag_1.x-y",
        "[::1]/a",
        "[::1]:5000/a",
        "[::1]",
        "[::1]:5000",
        "[fe80::1%eth0]/a",
        "[::ffff:1.2.3.4]/a",
        "[]/a",
        "[::g]/a",
        "[::1/a",
        "::1/a",
        "[::1]x/a",
        "[::1]:/a",
        "[2001:db8::1]:443/x/y:z",
        "[FE80::1]/a",
        "a_b.c/d",
        "a_b:5000/c",
        "a__b",
        "a___b",
        "a--b",
        "a---b",
        "a..b",
        "a.b",
        "a._b",
        "a_.b",
        "a-_b",
        "a/_b",
        "a/.b",
        "a/-b",
        "_a",
        ".a",
        "-a",
        "a_",
        "a.",
        "a-",
        "a//b",
        "a/",
        "/a",
        "a/b/",
        "a::b",
        "a:b:c",
        "a:",
        ":a",
        ":",
        "/",
        "@",
        "a@",
        "@sha256:x",
        "a:.tag",
        "a:-tag",
        "a:_tag",
        "a:tag.",
        "a:tag-",
        "a:ta/g",
        "a:ta g",
        "a b",
        " a",
        "a ",
        "a\n",
        "a\tb",
        "aüb",
        "a:ü",
        "ü/a",
        "a%b",
        "a+b",
        "a/b@",
        "a:tag@",
        "a@:",
        "a@sha256:",
        "a@sha256",
        "a@@sha256:0",
        "sha256:abc",
        "a/b:c/d",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for (algorithm, lengths) in [
        ("sha256", [31, 32, 63, 64, 65, 128]),
        ("sha384", [64, 95, 96, 97, 128, 32]),
        ("sha512", [64, 127, 128, 129, 96, 256]),
        ("sha1", [40, 32, 64, 31, 0, 1]),
        ("md5", [32, 31, 64, 0, 1, 2]),
        ("sha256+b64", [64, 32, 43, 44, 0, 1]),
        ("SHA256", [64, 32, 1, 0, 2, 3]),
        ("sha-256", [64, 32, 0, 1, 2, 3]),
        ("blake3", [64, 32, 0, 1, 2, 3]),
        ("1sha", [64, 32, 0, 1, 2, 3]),
    ] {
        for n in lengths {
            let digest = format!("{algorithm}:{}", hex(n));
            for name in ["a", "a:v1", "ghcr.io/x/y", "ghcr.io/x/y:v1", "a:.v", "a:"] {
                cases.push(format!("{name}@{digest}"));
            }
            cases.push(digest.to_uppercase());
            cases.push(format!("a@{}", digest.to_uppercase()));
        }
    }
    cases.push(hex(64));
    cases.push(hex(63));
    cases.push(hex(65));
    cases.push(hex(64).to_uppercase());
    cases.push(format!("{}:v1", hex(64)));
    cases.push(format!("a/{}", hex(64)));
    for n in [127, 128, 129, 130] {
        for first in ["t", ".", "-", "_", "T", "0"] {
            let tag = format!("{first}{}", "t".repeat(n - 1));
            cases.push(format!("a:{tag}"));
            cases.push(format!("127.0.0.1:5000/a/b:{tag}@sha256:{}", hex(64)));
        }
    }
    // Path lengths around 255 (with and without `library/`), total lengths around 255, 256,
    // 512 and 4096 (the path is at most 255, so long references have long domains).
    for n in [246, 247, 248, 253, 254, 255, 256, 257] {
        cases.push("p".repeat(n));
        cases.push(format!("x/{}", "p".repeat(n - 2)));
        cases.push(format!("ghcr.io/{}", "p".repeat(n)));
        cases.push(format!(
            "ghcr.io/{}/{}",
            "p".repeat(n / 2),
            "q".repeat(n - n / 2 - 1)
        ));
    }
    for total in [255, 256, 257, 511, 512, 513, 4095, 4096, 4097, 8192] {
        let rest = format!("/a/b:v1@sha256:{}", hex(64));
        let mut domain: String =
            vec!["d".repeat(63); total / 64 + 1].join(".")[..total - rest.len()].to_string();
        if domain.ends_with('.') {
            domain.replace_range(domain.len() - 1.., "d");
        }
        assert_eq!(domain.len() + rest.len(), total);
        cases.push(format!("{domain}{rest}"));
        cases.push(format!("{domain}:5000{rest}"));
        let tagged = format!(
            "ghcr.io/{}:{}",
            "p".repeat(200),
            "t".repeat(total.saturating_sub(209))
        );
        cases.push(tagged);
        cases.push(format!("a:{}", "t".repeat(total)));
    }
    cases
}

/// A generator of strings that follow the grammar, break it in one place, or are mutated.
fn image_reference_generator() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    // Compiled once (a `&str` strategy parses its expression on every draw).
    let re = |pattern: &str| proptest::string::string_regex(pattern).unwrap();
    let domain = prop_oneof![
        4 => Just(String::new()),
        1 => Just("localhost/".to_string()),
        1 => re("localhost:[0-9]{1,6}/"),
        1 => prop::sample::select(vec!["docker.io/", "index.docker.io/", "Docker.io/", "ghcr.io/"])
            .prop_map(str::to_string),
        3 => re("[a-zA-Z0-9]([a-zA-Z0-9-]{0,6}[a-zA-Z0-9])?(\\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,4}[a-zA-Z0-9])?){0,3}(:[0-9]{1,6})?/"),
        1 => re("[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}(:[0-9]{1,5})?/"),
        1 => re("\\[[0-9a-fA-F:]{1,10}\\](:[0-9]{1,5})?/"),
        1 => re("[A-Za-z_.-]{1,8}(:[0-9a-z]{0,3})?/"),
    ];
    let component = prop_oneof![
        8 => re("[a-z0-9]{1,6}(([._]|__|-{1,3})[a-z0-9]{1,5}){0,3}"),
        1 => re("[a-z0-9._-]{1,8}"),
        1 => re("[a-z]{100,140}"),
    ];
    let path = prop::collection::vec(component, 1..4).prop_map(|c| c.join("/"));
    let tag = prop_oneof![
        3 => Just(String::new()),
        4 => re("[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}").prop_map(|t| format!(":{t}")),
        1 => re("[A-Za-z0-9_.-]{0,4}").prop_map(|t| format!(":{t}")),
        1 => re("[a-z]{125,131}").prop_map(|t| format!(":{t}")),
    ];
    let digest = prop_oneof![
        4 => Just(String::new()),
        2 => re("[0-9a-f]{64}").prop_map(|h| format!("@sha256:{h}")),
        1 => re("[0-9a-f]{96}").prop_map(|h| format!("@sha384:{h}")),
        1 => re("[0-9a-f]{128}").prop_map(|h| format!("@sha512:{h}")),
        1 => re("[A-Za-z][A-Za-z0-9+._-]{0,7}:[0-9a-fA-F]{30,70}").prop_map(|d| format!("@{d}")),
        1 => re("sha(256|384|512):[0-9a-fA-F]{60,130}").prop_map(|d| format!("@{d}")),
    ];
    let well_formed = (domain, path, tag, digest).prop_map(|(d, p, t, g)| format!("{d}{p}{t}{g}"));
    let mutation = prop_oneof![
        Just(None),
        Just(None),
        prop::sample::select(vec![
            'A', 'Z', ':', '/', '@', '.', '-', '_', ' ', '[', ']', 'ü', '%', '+', '0', 'f'
        ])
        .prop_map(Some),
    ];
    (
        well_formed,
        prop::collection::vec((any::<prop::sample::Index>(), mutation, 0u8..4), 0..3),
    )
        .prop_map(|(mut s, edits)| {
            for (at, insert, kind) in edits {
                let chars: Vec<char> = s.chars().collect();
                let i = at.index(chars.len() + 1);
                s = match (kind, insert) {
                    (0, Some(c)) => chars[..i].iter().chain([&c]).chain(&chars[i..]).collect(),
                    (1, _) if i < chars.len() => chars[..i].iter().chain(&chars[i + 1..]).collect(),
                    (2, _) if i < chars.len() => chars[..i]
                        .iter()
                        .chain([&chars[i].to_ascii_uppercase()])
                        .chain(&chars[i + 1..])
                        .collect(),
                    (3, _) => chars[..i].iter().collect(),
                    _ => s,
                };
            }
            s
        })
}

/// The shared image-reference parser (`airunway_api::image_reference`) agrees with
/// github.com/distribution/reference's `ParseNormalizedNamed` on the edge cases of both old
/// grammars and on generated and mutated strings: valid or not, and on valid ones the domain,
/// path, tag and digest. Needs Go (to build `e2e/go/reference`), no cluster.
#[test]
fn image_references_agree_with_distribution_reference() {
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::{Config, RngSeed, TestRunner};
    use std::io::Write;

    let binary = reference_binary();
    let started = Instant::now();
    let mut corpus = image_reference_edge_cases();
    let edge_cases = corpus.len();
    let mut runner = TestRunner::new(Config {
        rng_seed: RngSeed::Fixed(31),
        ..Config::default()
    });
    let generator = image_reference_generator();
    while corpus.len() < edge_cases + 100_000 {
        corpus.push(generator.new_tree(&mut runner).unwrap().current());
    }
    let generated_in = started.elapsed();

    let started = Instant::now();
    let mut child = std::process::Command::new(&binary)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let input = serde_json::to_vec(&corpus).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        output.status.success(),
        "{} failed: {}",
        binary.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let verdicts: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(verdicts.len(), corpus.len());
    let go_in = started.elapsed();

    let started = Instant::now();
    let field = |v: &Value, name: &str| v[name].as_str().unwrap_or_default().to_string();
    let mut valid = 0;
    let mut disagreements = Vec::new();
    for (s, verdict) in corpus.iter().zip(&verdicts) {
        let go_ok = verdict["ok"].as_bool().unwrap();
        let ours = airunway_api::image_reference::parse(s);
        let agree = match &ours {
            Ok(r) => {
                go_ok
                    && r.domain == field(verdict, "domain")
                    && r.path == field(verdict, "path")
                    && r.tag.clone().unwrap_or_default() == field(verdict, "tag")
                    && r.digest.clone().unwrap_or_default() == field(verdict, "digest")
            }
            Err(_) => !go_ok,
        };
        valid += usize::from(go_ok);
        if !agree {
            disagreements.push(format!("{s:?}: ours {ours:?}, Go {verdict}"));
        }
    }
    eprintln!(
        "{} strings ({edge_cases} edge cases, {valid} valid): generated in {:.2}s, Go verdicts in {:.2}s, ours compared in {:.2}s",
        corpus.len(),
        generated_in.as_secs_f64(),
        go_in.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        disagreements.is_empty(),
        "{} disagreements, the first: {:#?}",
        disagreements.len(),
        &disagreements[..disagreements.len().min(20)]
    );
    // The corpus exercises both verdicts in numbers.
    assert!(
        valid > corpus.len() / 5 && valid < corpus.len() * 4 / 5,
        "{valid}"
    );
}

/// References the two old grammars judged differently are now judged alike by admission, the
/// core's reconcile-time validation and the vLLM provider's render:
///
/// - a `sha512` digest: the old core admitted it, the old vLLM provider refused it (sha256
///   only; its image was then `ImageResolved=False`, "invalid digest"): admitted, pinned and
///   rendered as written;
/// - an IPv6 registry `[::1]:port`: the old vLLM provider took it, the old core refused it
///   (no bracketed hosts): admitted and rendered (its registry is closed: unresolved, run as
///   written);
/// - a tag starting with `.` (the old vLLM provider took it) and a 40-digit sha256 digest (the
///   old core took it): refused by the webhook with the field and the fix, and, written while
///   the webhook is away, kept `Pending` by the core with the same words; the provider renders
///   nothing for them.
#[tokio::test]
async fn image_references_are_judged_alike_by_admission_reconcile_and_the_vllm_provider() {
    use airunway_api::constants::{condition_types, labels};
    use airunway_api::v1alpha1::{ConditionStatus, Phase};
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::api::ListParams;

    let _lock = cluster_lock().await;
    let env = TestEnv::new("image-references").await;
    delete_all(&env.client).await;
    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let core = start_core(&env, &kubeconfig, port, &[]).await;
    wait_webhook_active(&env).await;
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
        &["--heartbeat-interval=1s", "--finalizer-timeout=30s"],
        "vllm-0",
    )
    .await;
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, "vllm", WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let on_vllm = |image: &str| {
        json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm", "image": image},
               "resources": {"gpu": {"count": 1}}, "provider": {"name": "vllm"}})
    };
    let closed = free_port();
    let sha512 = format!(
        "127.0.0.1:{closed}/vllm/vllm-openai@sha512:{}",
        "0123456789abcdef".repeat(8)
    );
    let ipv6 = format!("[::1]:{closed}/vllm/vllm-openai:v1");
    let dot_tag = format!("127.0.0.1:{closed}/vllm/vllm-openai:.v1");
    let short_digest = format!("vllm/vllm-openai@sha256:{}", "ab".repeat(20));

    // What the core's validation and the provider's parser say, in process: the same.
    for (image, valid) in [
        (&sha512, true),
        (&ipv6, true),
        (&dot_tag, false),
        (&short_digest, false),
    ] {
        let md: ModelDeployment = serde_json::from_value(deployment("x", on_vllm(image))).unwrap();
        assert_eq!(
            airunway_core::validation::validate(&md).is_empty(),
            valid,
            "{image}"
        );
        assert_eq!(
            airunway_provider_vllm::image::parse(image).is_ok(),
            valid,
            "{image}"
        );
    }

    // Admitted, handed to the provider, rendered with the reference as written.
    for (name, image) in [("sha512", &sha512), ("ipv6", &ipv6)] {
        let (code, _, body) = create_raw(
            &env.client,
            &env.namespace,
            &deployment(name, on_vllm(image)),
        )
        .await;
        assert_eq!(code, 201, "{image}: {body}");
    }
    for (name, image) in [("sha512", &sha512), ("ipv6", &ipv6)] {
        let selector = format!("{}={name}", labels::DEPLOYMENT);
        let rendered = eventually("the vLLM provider's Deployment", WAIT, || async {
            let found = deployments
                .list(&ListParams::default().labels(&selector))
                .await
                .map_err(|e| e.to_string())?;
            found.items.into_iter().next().ok_or("none yet".to_string())
        })
        .await;
        let container = &rendered.spec.unwrap().template.spec.unwrap().containers[0];
        assert_eq!(container.image.as_deref(), Some(image.as_str()), "{name}");
        let md = wait_for(&api, name, WAIT, "the image condition", |md| {
            md.condition(condition_types::IMAGE_RESOLVED).is_some()
        })
        .await;
        let resolved = md.condition(condition_types::IMAGE_RESOLVED).unwrap();
        let status = md.status.clone().unwrap().image.unwrap();
        if name == "sha512" {
            // Pinned: no registry asked, the digest taken as written.
            assert_eq!(resolved.status, ConditionStatus::True, "{resolved:?}");
            assert_eq!(status.resolved.as_deref(), Some(sha512.as_str()));
        } else {
            // Parsed (the registry is closed): run as written.
            assert_eq!(resolved.status, ConditionStatus::False, "{resolved:?}");
            let message = resolved.message.clone().unwrap_or_default();
            assert!(
                message.contains("Continuing with the user-specified image reference")
                    && !message.contains("is not valid"),
                "{message}"
            );
            assert_eq!(
                (status.repository.as_deref(), status.tag.as_deref()),
                (
                    Some(format!("[::1]:{closed}/vllm/vllm-openai").as_str()),
                    Some("v1")
                )
            );
        }
        assert_ne!(md.phase(), Some(Phase::Failed), "{name}");
    }

    // Refused at admission with the field and the fix.
    let mut expected = Vec::new();
    for (name, image, why) in [
        ("dot-tag", &dot_tag, "not starting with '.' or '-'"),
        ("short-digest", &short_digest, "sha256:<64>"),
    ] {
        let (message, fields) = rejection(&api, deployment(name, on_vllm(image))).await;
        assert!(
            message.contains(&format!(
                "spec.engine.image: \"{image}\" is not a valid image reference"
            )) && message.contains(why)
                && message.contains("write [registry[:port]/]path[:tag][@digest]"),
            "{message}"
        );
        assert!(
            fields.iter().any(|f| f == "spec.engine.image"),
            "{fields:?}"
        );
        expected.push((name, image, why));
    }

    // Written while the webhook is away: the core holds them (Failed, as in the Go AI Runway)
    // with the same words, and the provider is never given them.
    remove_webhooks(&env.client).await;
    for (name, image, why) in expected {
        let md: ModelDeployment = serde_json::from_value(deployment(name, on_vllm(image))).unwrap();
        eventually("the webhook configuration to be gone", WAIT, || async {
            match api.create(&PostParams::default(), &md).await {
                Ok(_) => Ok(()),
                Err(e) => Err(e.to_string()),
            }
        })
        .await;
        let stored = wait_for(&api, name, WAIT, "Failed with the image message", |md| {
            md.status
                .as_ref()
                .and_then(|s| s.message.as_deref())
                .is_some_and(|m| m.contains("is not a valid image reference") && m.contains(why))
        })
        .await;
        assert_eq!(stored.phase(), Some(Phase::Failed), "{name}");
        let selector = format!("{}={name}", labels::DEPLOYMENT);
        let rendered = deployments
            .list(&ListParams::default().labels(&selector))
            .await
            .unwrap();
        assert!(rendered.items.is_empty(), "{name} was rendered");
    }

    api.delete_collection(&DeleteParams::default(), &Default::default())
        .await
        .unwrap();
    for name in ["sha512", "ipv6", "dot-tag", "short-digest"] {
        airunway_e2e::wait::wait_deleted(&api, name, WAIT).await;
    }
    provider.process.terminate(Duration::from_secs(10));
    core.terminate(Duration::from_secs(10));
    delete_all(&env.client).await;
}

// ---- The mutating admission policy in place of the mutating webhook (issue 41 item 2) ----

/// The deployments both paths default: the Go-parity samples, the examples that are admitted,
/// and the cases at the edges of each conditional default.
fn defaulting_corpus() -> Vec<Value> {
    let mut corpus: Vec<Value> = parity_samples().into_iter().map(|(_, o)| o).collect();
    let examples = paths::workspace_root().join("examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&examples)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .filter(|p| {
            !p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("invalid-")
        })
        .collect();
    files.sort();
    corpus.extend(
        files
            .iter()
            .flat_map(|f| manifests::read(f))
            .filter(|o| o["kind"] == "ModelDeployment"),
    );
    let vllm = json!({"type": "vllm"});
    let cases = [
        (
            "gpu-default",
            json!({"model": {"id": "a/b"}, "engine": vllm}),
        ),
        (
            "gpu-llamacpp",
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}}),
        ),
        ("gpu-no-engine", json!({"model": {"id": "a/b"}})),
        // An image override keeps a deployment off the default GPU (a GPU engine without one
        // is refused by the validating webhook, which acts in the webhook's namespace).
        (
            "gpu-llamacpp-image",
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp", "image": "r/llama:1"}, "image": "r/llama:1"}),
        ),
        (
            "gpu-null-image",
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm", "image": null}}),
        ),
        (
            "gpu-resources-given",
            json!({"model": {"id": "a/b"}, "engine": vllm, "resources": {"gpu": {"count": 2}}}),
        ),
        (
            "gpu-disaggregated",
            json!({"model": {"id": "a/b"}, "engine": vllm, "serving": {"mode": "disaggregated"},
            "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"replicas": 2, "gpu": {"count": 1}}}}),
        ),
        (
            "serving-null",
            json!({"model": {"id": "a/b"}, "engine": vllm, "serving": null, "scaling": null}),
        ),
        (
            "volumes",
            json!({"model": {"id": "a/b", "storage": {"volumes": [
            {"name": "weights", "purpose": "modelCache", "size": "10Gi"},
            {"name": "compiled", "purpose": "compilationCache", "size": "2Gi", "mountPath": "", "claimName": "", "accessMode": ""},
            {"name": "scratch", "purpose": "", "mountPath": "/scratch", "size": "1Gi", "accessMode": "ReadWriteOnce"},
            {"name": "data", "mountPath": "/data", "claimName": "team-data", "readOnly": true},
        ]}}, "engine": vllm}),
        ),
        (
            "volumes-existing-cache",
            json!({"model": {"id": "a/b", "storage": {"volumes": [
                {"name": "cache", "purpose": "modelCache", "claimName": "shared-cache", "mountPath": ""},
            ]}}}),
        ),
    ];
    corpus.extend(cases.into_iter().map(|(name, spec)| {
        let mut object = deployment(name, spec);
        if name == "gpu-default" {
            // A forged author is replaced on both paths.
            object["metadata"]["annotations"] =
                json!({"team": "a", "airunway.ai/spec-author": "mallory"});
        }
        object
    }));
    corpus
}

/// The stored spec and spec-author annotations of `name`.
async fn defaulted(api: &Api<ModelDeployment>, name: &str) -> (Value, Value) {
    let stored = serde_json::to_value(api.get(name).await.unwrap()).unwrap();
    let annotations = &stored["metadata"]["annotations"];
    let author = json!([
        annotations[annotations::access::SPEC_AUTHOR],
        annotations[annotations::access::SPEC_AUTHOR_GROUPS],
        annotations["team"],
    ]);
    (stored["spec"].clone(), author)
}

/// A dry-run create of a minimal vLLM deployment through `api`: what admission makes of it.
async fn dry_run_probe(api: &Api<ModelDeployment>) -> kube::Result<ModelDeployment> {
    let probe: ModelDeployment = serde_json::from_value(deployment(
        "probe",
        json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}}),
    ))
    .unwrap();
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    api.create(&dry, &probe).await
}

#[tokio::test]
async fn the_mutating_admission_policy_writes_what_the_mutating_webhook_writes() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("mutating-policy").await;
    delete_all(&env.client).await;
    register_shipped(
        &env.client,
        &["kaito", "dynamo", "kuberay", "llmd", "vllm"],
        true,
    )
    .await;
    // The webhooks (the core's) act in the test namespace; the policy in a second one.
    let by_policy = format!("{}-policy", env.namespace);
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(env.client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": by_policy}})).unwrap(),
        )
        .await
        .unwrap();
    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let core = start_core(&env, &kubeconfig, port, &[]).await;
    wait_webhook_active(&env).await;
    let component = paths::workspace_root().join("deploy/components/mutating-admission-policy");
    let mut policy = manifests::read(&component.join("defaults-policy.yaml"));
    for object in &mut policy {
        if object["kind"] == "MutatingAdmissionPolicyBinding" {
            object["spec"]["matchResources"] = json!({"namespaceSelector":
                {"matchLabels": {"kubernetes.io/metadata.name": by_policy}}});
        }
    }
    manifests::apply(&env.client, &policy).await;
    // The spec-author policy of the upstream-access-check component holds on both paths.
    let spec_author_policy = manifests::read(
        &paths::workspace_root()
            .join("deploy/components/upstream-access-check/spec-author-policy.yaml"),
    );
    manifests::apply(&env.client, &spec_author_policy).await;
    // The component removes exactly the mutating webhook configuration.
    let kustomization = std::fs::read_to_string(component.join("kustomization.yaml")).unwrap();
    assert!(
        kustomization.contains("$patch: delete")
            && kustomization.contains("kind: MutatingWebhookConfiguration")
            && kustomization.contains(&format!("name: {CONFIG}")),
        "{kustomization}"
    );

    let alice = env
        .impersonating("alice", &["system:masters", "team-a"])
        .await;
    let by_webhook: Api<ModelDeployment> = Api::namespaced(alice.clone(), &env.namespace);
    let by_policy_api: Api<ModelDeployment> = Api::namespaced(alice.clone(), &by_policy);
    // Policies take effect asynchronously: wait until a dry-run create is defaulted.
    eventually("the mutating admission policy to act", WAIT, || async {
        match dry_run_probe(&by_policy_api).await {
            Ok(md) if md.spec.resources.is_some() => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    let corpus = defaulting_corpus();
    assert!(corpus.len() >= 20, "corpus: {}", corpus.len());
    for object in &corpus {
        let md: ModelDeployment = serde_json::from_value(object.clone()).unwrap();
        by_webhook
            .create(&PostParams::default(), &md)
            .await
            .unwrap();
        by_policy_api
            .create(&PostParams::default(), &md)
            .await
            .unwrap();
    }
    let mut differing = Vec::new();
    for object in &corpus {
        let name = object["metadata"]["name"].as_str().unwrap();
        let webhook = defaulted(&by_webhook, name).await;
        let policy = defaulted(&by_policy_api, name).await;
        if webhook != policy {
            differing.push(format!(
                "{name}:\n  webhook {}\n  policy  {}",
                serde_json::to_string(&webhook).unwrap(),
                serde_json::to_string(&policy).unwrap()
            ));
        }
    }
    assert!(differing.is_empty(), "{}", differing.join("\n"));
    // And what both wrote is the defaulting (not two paths that both did nothing).
    let (spec, author) = defaulted(&by_policy_api, "gpu-default").await;
    assert_eq!(
        spec["resources"],
        json!({"gpu": {"count": 1, "type": "nvidia.com/gpu"}})
    );
    assert_eq!(
        author,
        json!(["alice", "system:masters,team-a,system:authenticated", "a"])
    );
    let (spec, _) = defaulted(&by_policy_api, "volumes").await;
    assert_eq!(
        spec["model"]["storage"]["volumes"][1],
        json!({"name": "compiled", "purpose": "compilationCache", "size": "2Gi",
            "mountPath": "/compilation-cache", "claimName": "volumes-compiled", "accessMode": "ReadWriteMany"})
    );

    // Updates: a metadata-only change keeps the author; a spec change by another user records
    // them, and is defaulted again. The same on both paths.
    let bob = env
        .impersonating("bob", &["system:masters", "team-b"])
        .await;
    for namespace in [env.namespace.as_str(), by_policy.as_str()] {
        let api: Api<ModelDeployment> = Api::namespaced(bob.clone(), namespace);
        api.patch(
            "gpu-llamacpp",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
        )
        .await
        .unwrap();
        api.patch(
            "gpu-no-engine",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"engine": {"type": "vllm"}}})),
        )
        .await
        .unwrap();
    }
    for (name, author) in [("gpu-llamacpp", "alice"), ("gpu-no-engine", "bob")] {
        let webhook = defaulted(&by_webhook, name).await;
        let policy = defaulted(&by_policy_api, name).await;
        assert_eq!(webhook, policy, "{name} after the updates");
        assert_eq!(policy.1[0], author, "{name}: {policy:?}");
    }
    assert_eq!(
        defaulted(&by_policy_api, "gpu-no-engine").await.0["resources"],
        json!({"gpu": {"count": 1, "type": "nvidia.com/gpu"}})
    );

    for api in [&by_webhook, &by_policy_api] {
        api.delete_collection(&DeleteParams::default(), &Default::default())
            .await
            .unwrap();
    }
    manifests::delete(&env.client, &policy).await;
    manifests::delete(&env.client, &spec_author_policy).await;
    // The policies are cluster-scoped and leave the API server's cache a moment after they are
    // deleted: the next test of this control plane must not meet them. Without the mutating
    // policy nothing records the author in the policy namespace, so a dry-run create there is
    // admitted only once the spec-author policy is gone too.
    eventually("the deleted policies to stop acting", WAIT, || async {
        match dry_run_probe(&by_policy_api).await {
            Ok(md) if md.spec.resources.is_none() => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    namespaces
        .delete(&by_policy, &DeleteParams::default())
        .await
        .unwrap();
    core.terminate(Duration::from_secs(10));
    delete_all(&env.client).await;
}
