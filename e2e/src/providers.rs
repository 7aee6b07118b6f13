//! Provider registrations written the way a provider writes them: the spec by server-side
//! apply with field manager `<name>-provider`, then the status (ready, version, heartbeat).

use airunway_api::apply_body;
use airunway_api::v1alpha1::InferenceProviderConfig;
use kube::Client;
use kube::api::{Api, DeleteParams, PatchParams};
use serde_json::{Value, json};

use crate::paths;

/// The registration of shipped provider `name` (kaito, dynamo, kuberay, llmd), as the core's
/// test fixtures hold it.
pub fn shipped_registration(name: &str) -> Value {
    let path = paths::workspace_root().join(format!(
        "core-controller/tests/fixtures/shipped-providers/{name}.yaml"
    ));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// Applies `registration` (an InferenceProviderConfig as JSON) and sets its status: `ready`,
/// a version and a fresh heartbeat.
pub async fn register(client: &Client, registration: &Value, ready: bool) {
    let name = registration["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let api: Api<InferenceProviderConfig> = Api::all(client.clone());
    let manager = format!("{name}-provider");
    api.patch(
        &name,
        &PatchParams::apply(&manager).force(),
        &apply_body::apply(registration),
    )
    .await
    .unwrap_or_else(|e| panic!("registering provider {name}: {e}"));
    heartbeat(client, &name, ready).await;
}

/// Writes a fresh heartbeat with `ready` for provider `name`.
pub async fn heartbeat(client: &Client, name: &str, ready: bool) {
    let api: Api<InferenceProviderConfig> = Api::all(client.clone());
    let status = json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig", "metadata": {"name": name},
        "status": {"ready": ready, "version": format!("{name}-provider:test"), "lastHeartbeat": jiff::Timestamp::now().to_string()},
    });
    api.patch_status(
        name,
        &PatchParams::apply(&format!("{name}-provider")).force(),
        &apply_body::apply(&status),
    )
    .await
    .unwrap_or_else(|e| panic!("heartbeat of provider {name}: {e}"));
}

/// Registers shipped providers by name.
pub async fn register_shipped(client: &Client, names: &[&str], ready: bool) {
    for name in names {
        register(client, &shipped_registration(name), ready).await;
    }
}

/// Deletes every InferenceProviderConfig.
pub async fn delete_all(client: &Client) {
    let api: Api<InferenceProviderConfig> = Api::all(client.clone());
    let _ = api
        .delete_collection(&DeleteParams::default(), &Default::default())
        .await;
}
