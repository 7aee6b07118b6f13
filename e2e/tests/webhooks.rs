//! The core's admission webhooks through the real API server: the shipped webhook
//! configurations (clientConfig switched to a 127.0.0.1 URL), the core running as its
//! ServiceAccount with the shipped RBAC, certificates managed in process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use airunway_api::constants::messages;
use airunway_api::v1alpha1::{InferenceProviderConfig, ModelDeployment};
use airunway_e2e::binaries::free_port;
use airunway_e2e::process::ProcessHandle;
use airunway_e2e::providers::{delete_all, register, register_shipped, shipped_registration};
use airunway_e2e::stack;
use airunway_e2e::wait::{eventually, wait_for};
use airunway_e2e::{TestEnv, cluster_lock, manifests, paths};
use http_body_util::BodyExt;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);
const CONFIG: &str = "airunway-core";

/// The core's shipped RBAC in the test namespace; a kubeconfig for its ServiceAccount.
async fn core_identity(env: &TestEnv) -> PathBuf {
    stack::service_account_identity(env, "deploy/core/rbac.yaml", "airunway-core").await
}

/// The shipped webhook configurations, pointed at `https://127.0.0.1:<port>` with an empty
/// caBundle (the core injects it); deployment webhooks scoped to the test namespace.
fn webhook_configurations(env: &TestEnv, port: u16) -> Vec<Value> {
    let mut objects = manifests::read(&paths::workspace_root().join("deploy/core/webhooks.yaml"));
    for object in &mut objects {
        for webhook in object["webhooks"].as_array_mut().unwrap() {
            let path = webhook["clientConfig"]["service"]["path"]
                .as_str()
                .unwrap()
                .to_string();
            webhook["clientConfig"] = json!({"url": format!("https://127.0.0.1:{port}{path}")});
            if webhook["name"]
                .as_str()
                .unwrap()
                .contains("modeldeployments")
            {
                webhook["namespaceSelector"] =
                    json!({"matchLabels": {"kubernetes.io/metadata.name": env.namespace}});
            }
        }
    }
    objects
}

async fn install_webhooks(env: &TestEnv, port: u16) {
    manifests::apply(&env.client, &webhook_configurations(env, port)).await;
}

async fn remove_webhooks(client: &Client) {
    let v: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let m: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let _ = v.delete(CONFIG, &DeleteParams::default()).await;
    let _ = m.delete(CONFIG, &DeleteParams::default()).await;
}

async fn start_core(
    env: &TestEnv,
    kubeconfig: &std::path::Path,
    port: u16,
    extra: &[&str],
) -> ProcessHandle {
    let webhook = format!("--webhook-bind-address=127.0.0.1:{port}");
    let namespace = format!("--webhook-namespace={}", env.namespace);
    let lease = format!("--leader-election-namespace={}", env.namespace);
    let mut args = vec![
        webhook.as_str(),
        namespace.as_str(),
        "--webhook-extra-san=127.0.0.1",
        "--leader-elect",
        lease.as_str(),
    ];
    args.extend_from_slice(extra);
    stack::start_core(env, kubeconfig, &args, "core")
        .await
        .process
}

fn deployment(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment", "metadata": {"name": name}, "spec": spec})
}

/// Waits until the webhook visibly acts (configurations take effect asynchronously).
async fn wait_webhook_active(env: &TestEnv) {
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    eventually("the validating webhook to act", WAIT, || async {
        let marker: ModelDeployment = serde_json::from_value(deployment(
            "marker",
            json!({"model": {"id": "a/b"}, "provider": {"overrides": {"hostPID": true}}}),
        ))
        .unwrap();
        match api
            .create(
                &PostParams {
                    dry_run: true,
                    ..Default::default()
                },
                &marker,
            )
            .await
        {
            Err(e) if e.to_string().contains("admission webhook") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}

/// Creates through the raw API to read the `Warning` headers; returns (status code, warnings, body).
async fn create_raw(client: &Client, namespace: &str, object: &Value) -> (u16, Vec<String>, Value) {
    let request = kube::core::Request::new(format!(
        "/apis/airunway.ai/v1alpha1/namespaces/{namespace}/modeldeployments"
    ))
    .create(&PostParams::default(), serde_json::to_vec(object).unwrap())
    .unwrap();
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .unwrap();
    let code = response.status().as_u16();
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        code,
        warnings,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// Creates `object` (sent as raw JSON, so ill-typed objects reach the API server) and returns
/// the error's message and the fields of its causes.
async fn rejection(api: &Api<ModelDeployment>, object: Value) -> (String, Vec<String>) {
    let namespace = api.namespace().unwrap_or_default().to_string();
    let (code, _, status) = create_raw(&api.clone().into_client(), &namespace, &object).await;
    assert!(code >= 400, "{} was admitted", object["metadata"]["name"]);
    let fields = status["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["field"].as_str().map(str::to_string))
        .collect();
    (
        status["message"].as_str().unwrap_or_default().to_string(),
        fields,
    )
}

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
        &Patch::Apply(&condition),
    )
    .await
    .unwrap();

    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let core = start_core(&env, &kubeconfig, port, &[]).await;
    wait_webhook_active(&env).await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);

    // Unregistered provider.
    let (message, fields) = rejection(&api, deployment("ghost", json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "provider": {"name": "ghost"}}))).await;
    assert!(message.contains("spec.provider.name: provider 'ghost' is not registered: there is no InferenceProviderConfig named 'ghost'"), "{message}");
    assert_eq!(fields, ["spec.provider.name"]);

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
    assert!(joined.contains("trustRemoteCode: true"), "{joined}");
    assert!(
        joined.contains("engine.contextLength is ignored for TensorRT-LLM"),
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
async fn without_webhook_configurations_invalid_deployments_stay_pending() {
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
    // Passes the CRD rules, fails the core's: stored, then kept Pending with what to fix.
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
        "Pending with a validation message",
        |md| {
            md.status
                .as_ref()
                .and_then(|s| s.message.as_deref())
                .is_some_and(|m| m.contains("key 'runtimeClassName' is not allowed"))
        },
    )
    .await;
    assert_eq!(
        stored.status.unwrap().phase,
        Some(airunway_api::v1alpha1::Phase::Pending)
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
