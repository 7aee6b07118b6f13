//! The core's admission webhooks in a test: the shipped configurations pointed at a core on
//! 127.0.0.1, the core started with them, and requests sent raw so the answer's warnings and
//! causes can be read (shared by the `webhooks` and `parity` suites).

use std::path::{Path, PathBuf};
use std::time::Duration;

use airunway_api::v1alpha1::ModelDeployment;
use http_body_util::BodyExt;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

use crate::process::ProcessHandle;
use crate::wait::eventually;
use crate::{TestEnv, manifests, paths, stack};

/// The name of the shipped webhook configurations (validating and mutating).
pub const CONFIGURATION: &str = "airunway-core";

/// How long [`wait_webhook_active`] waits for the configurations to take effect.
const ACTIVE_WAIT: Duration = Duration::from_secs(30);

/// The core's shipped RBAC in the test namespace; a kubeconfig for its ServiceAccount.
pub async fn core_identity(env: &TestEnv) -> PathBuf {
    stack::service_account_identity(env, "deploy/core/rbac.yaml", "airunway-core").await
}

/// The shipped webhook configurations, pointed at `https://127.0.0.1:<port>` with an empty
/// caBundle (the core injects it); deployment webhooks scoped to the test namespace.
pub fn webhook_configurations(env: &TestEnv, port: u16) -> Vec<Value> {
    let mut objects = manifests::read(&paths::workspace_root().join("deploy/core/webhooks.yaml"));
    for object in &mut objects {
        let Some(webhooks) = object["webhooks"].as_array_mut() else {
            panic!("deploy/core/webhooks.yaml: a configuration without webhooks");
        };
        for webhook in webhooks {
            let path = webhook["clientConfig"]["service"]["path"]
                .as_str()
                .unwrap_or_else(|| {
                    panic!("deploy/core/webhooks.yaml: a webhook without a service path")
                })
                .to_string();
            webhook["clientConfig"] = json!({"url": format!("https://127.0.0.1:{port}{path}")});
            if webhook["name"]
                .as_str()
                .is_some_and(|name| name.contains("modeldeployments"))
            {
                webhook["namespaceSelector"] =
                    json!({"matchLabels": {"kubernetes.io/metadata.name": env.namespace}});
            }
        }
    }
    objects
}

/// Applies [`webhook_configurations`].
pub async fn install_webhooks(env: &TestEnv, port: u16) {
    manifests::apply(&env.client, &webhook_configurations(env, port)).await;
}

/// Deletes the webhook configurations (absent ones are fine).
pub async fn remove_webhooks(client: &Client) {
    let v: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let m: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let _ = v.delete(CONFIGURATION, &DeleteParams::default()).await;
    let _ = m.delete(CONFIGURATION, &DeleteParams::default()).await;
}

/// Starts the core with `kubeconfig`, serving its webhooks on `127.0.0.1:<port>` with its
/// certificate Secret and leader Lease in the test namespace; `extra` arguments appended.
pub async fn start_core(
    env: &TestEnv,
    kubeconfig: &Path,
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

/// A ModelDeployment named `name` with `spec`, as JSON.
pub fn deployment(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment", "metadata": {"name": name}, "spec": spec})
}

/// Waits until the validating webhook visibly acts (configurations take effect asynchronously).
pub async fn wait_webhook_active(env: &TestEnv) {
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    eventually("the validating webhook to act", ACTIVE_WAIT, || async {
        let marker: ModelDeployment = serde_json::from_value(deployment(
            "marker",
            json!({"model": {"id": "a/b"}, "provider": {"overrides": {"hostPID": true}}}),
        ))
        .unwrap_or_else(|e| panic!("the marker deployment: {e}"));
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
pub async fn create_raw(
    client: &Client,
    namespace: &str,
    object: &Value,
) -> (u16, Vec<String>, Value) {
    let request = kube::core::Request::new(format!(
        "/apis/airunway.ai/v1alpha1/namespaces/{namespace}/modeldeployments"
    ))
    .create(
        &PostParams::default(),
        serde_json::to_vec(object).unwrap_or_else(|e| panic!("serialising {object}: {e}")),
    )
    .unwrap_or_else(|e| panic!("building the create request: {e}"));
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .unwrap_or_else(|e| panic!("sending the create request: {e}"));
    let code = response.status().as_u16();
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).to_string())
        .collect();
    let bytes = response
        .into_body()
        .collect()
        .await
        .unwrap_or_else(|e| panic!("reading the create response: {e}"))
        .to_bytes();
    (
        code,
        warnings,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// Creates `object` (sent as raw JSON, so ill-typed objects reach the API server), asserts it
/// was refused and returns the error's message and the fields of its causes.
pub async fn rejection(api: &Api<ModelDeployment>, object: Value) -> (String, Vec<String>) {
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
