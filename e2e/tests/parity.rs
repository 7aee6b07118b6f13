//! Parity with the Go AI Runway (issue 32), grouped by component: Go-project-shaped manifests
//! applied to the real control plane with our core, each case naming its Go source, asserting
//! either the Go project's outcome (`same`) or a deliberate departure (`departure`, with the
//! decision's id in /work/parity-decisions.md and docs/migrating.md), so that ending a
//! departure or breaking parity fails here.

use std::time::Duration;

use airunway_api::v1alpha1::ModelDeployment;
use airunway_e2e::admission::{
    core_identity, create_raw, deployment, install_webhooks, rejection, remove_webhooks,
    start_core, wait_webhook_active,
};
use airunway_e2e::binaries::free_port;
use airunway_e2e::providers::{delete_all, register_shipped};
use airunway_e2e::wait::wait_for;
use airunway_e2e::{TestEnv, cluster_lock};
use kube::api::Api;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);

/// A case whose outcome is the Go project's.
fn same(id: &str, holds: bool, detail: &str) {
    assert!(holds, "parity {id}: not as the Go project does: {detail}");
}

/// A case where we depart from the Go project on purpose (decision `id`): `ours` must hold.
fn departure(id: &str, ours: bool, go: &str, detail: &str) {
    assert!(
        ours,
        "departure {id} no longer holds (the Go project: {go}): {detail}"
    );
}

/// The Go project's minimal vLLM deployment (`docs/crd-reference.md`, "Minimal example").
fn go_vllm(extra: Value) -> Value {
    let mut spec = json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"},
        "resources": {"gpu": {"count": 1}}});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        for (key, value) in extra {
            spec.insert(key.clone(), value.clone());
        }
    }
    spec
}

/// Core validation (parity-decisions §1, and issue 32's bug 1): what the admission webhook
/// answers to Go-shaped manifests, with the core and its shipped webhooks running.
#[tokio::test]
async fn core_validation() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("parity-validation").await;
    delete_all(&env.client).await;
    register_shipped(&env.client, &["kaito"], true).await;
    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let core = start_core(&env, &kubeconfig, port, &[]).await;
    wait_webhook_active(&env).await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);

    // V2 (keep ours). Go: `controller/internal/webhook/v1alpha1/modeldeployment_webhook.go`,
    // ValidateCreate: a named provider with an engine and no InferenceProviderConfig is refused
    // with `[spec.provider.name] Invalid: InferenceProviderConfig "ghost" not found`. Ours
    // admits it with a warning naming the registered providers, and holds it Pending.
    let (code, warnings, body) = create_raw(
        &env.client,
        &env.namespace,
        &deployment("ghost", go_vllm(json!({"provider": {"name": "ghost"}}))),
    )
    .await;
    departure(
        "V2",
        code == 201
            && warnings
                .iter()
                .any(|w| w.contains("spec.provider.name: provider 'ghost' is not registered")),
        "refused: InferenceProviderConfig \"ghost\" not found",
        &format!("{code} {warnings:?} {body}"),
    );
    wait_for(
        &api,
        "ghost",
        WAIT,
        "Pending, naming the missing provider",
        |md| {
            md.status.as_ref().and_then(|s| s.message.as_deref())
                == Some(
                    "Provider 'ghost' is not registered: no InferenceProviderConfig named ghost",
                )
        },
    )
    .await;

    // Issue 32 bug 1 (fixed: now as Go, which gets the API server's EnvVar verdict when it
    // creates the Deployment; we refuse at the edge). Go: `controller/api/v1alpha1`
    // EnvVar is corev1.EnvVar; value beside valueFrom is invalid.
    let (message, fields) = rejection(
        &api,
        deployment(
            "env-both",
            go_vllm(json!({"env": [{"name": "HF_TOKEN", "value": "x",
                "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}]})),
        ),
    )
    .await;
    same(
        "bug 1 (env value and valueFrom)",
        message.contains("may not be specified when value is not empty")
            && fields.iter().any(|f| f == "spec.env[0].valueFrom"),
        &format!("{message} {fields:?}"),
    );

    // V5 (same outcome for a dot). Go: modeldeployment_webhook.go ValidateCreate, `name must
    // not contain dots`. Refused here too (a DNS-1035 label).
    let (message, _) = rejection(&api, deployment("a.b", go_vllm(json!({})))).await;
    same(
        "V5 (dotted name)",
        message.contains("metadata.name"),
        &message,
    );
    // V5 (keep ours): Go admits a 50-character name (and fails later on derived names).
    let long = format!("m{}", "x".repeat(49));
    let (message, _) = rejection(&api, deployment(&long, go_vllm(json!({})))).await;
    departure(
        "V5",
        message.contains("metadata.name: must be at most 45 characters"),
        "a 50-character name is admitted",
        &message,
    );

    // V6 (same outcome). Go: modeldeployment_webhook.go validateOverrides, `overriding
    // "securityContext" is not allowed for security reasons`; ours refuses naming the key.
    let (message, _) = rejection(
        &api,
        deployment(
            "overrides-security",
            go_vllm(json!({"provider": {"name": "kaito", "overrides": {"securityContext": {}}}})),
        ),
    )
    .await;
    same(
        "V6 (security override)",
        message.contains("securityContext") && message.contains("not allowed"),
        &message,
    );

    // V3 (GPU text kept, outcome same). Go e2e `e2e-vllm-no-gpu` (controller/test/e2e):
    // vLLM with CPU only is refused; Go asserts the substring `requires GPU`.
    let (message, _) = rejection(
        &api,
        deployment(
            "vllm-no-gpu",
            json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"},
                "resources": {"cpu": "4"}}),
        ),
    )
    .await;
    same(
        "V3 (vLLM without a GPU)",
        message.contains("requires GPU"),
        &message,
    );

    remove_webhooks(&env.client).await;
    core.terminate(Duration::from_secs(10));
}
