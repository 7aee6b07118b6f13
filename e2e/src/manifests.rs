//! Applying the shipped manifests (`deploy/`) to the test control plane, adjusted for the test
//! (namespace, names, webhook URLs), so the tests exercise what users install.

use std::path::Path;

use airunway_api::apply_body;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery;
use serde_json::Value;

use crate::control_plane::HARNESS_FIELD_MANAGER;

/// Reads every document of a multi-document YAML file.
pub fn read(path: &Path) -> Vec<Value> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
        .unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    docs.into_iter().filter(|d| d.is_object()).collect()
}

/// The API of `object`'s kind (discovered), in its namespace when it is namespaced.
async fn api_for(client: &Client, object: &Value) -> Api<DynamicObject> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (resource, capabilities) = discovery::pinned_kind(client, &gvk)
        .await
        .unwrap_or_else(|e| panic!("discovering {api_version} {kind}: {e}"));
    match (
        &capabilities.scope,
        object["metadata"]["namespace"].as_str(),
    ) {
        (discovery::Scope::Namespaced, Some(ns)) => {
            Api::namespaced_with(client.clone(), ns, &resource)
        }
        (discovery::Scope::Namespaced, None) => {
            Api::default_namespaced_with(client.clone(), &resource)
        }
        (discovery::Scope::Cluster, _) => Api::all_with(client.clone(), &resource),
    }
}

/// Applies `objects` with server-side apply (namespaced objects into their own namespace).
pub async fn apply(client: &Client, objects: &[Value]) {
    for object in objects {
        let kind = object["kind"].as_str().unwrap_or_default();
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        api_for(client, object)
            .await
            .patch(
                name,
                &PatchParams::apply(HARNESS_FIELD_MANAGER).force(),
                &apply_body::apply(object),
            )
            .await
            .unwrap_or_else(|e| panic!("applying {kind} {name}: {e}"));
    }
}

/// Deletes `objects` (absent ones are fine).
pub async fn delete(client: &Client, objects: &[Value]) {
    for object in objects {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let _ = api_for(client, object)
            .await
            .delete(name, &DeleteParams::default())
            .await;
    }
}

/// Sets `metadata.namespace` of namespaced objects and the namespace of ServiceAccount
/// subjects to `namespace`.
pub fn retarget_namespace(objects: &mut [Value], namespace: &str) {
    for object in objects.iter_mut() {
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
            && meta.contains_key("namespace")
        {
            meta.insert(
                "namespace".to_string(),
                Value::String(namespace.to_string()),
            );
        }
        // `get_mut`, not indexing: indexing a missing key inserts a null.
        for subject in object
            .get_mut("subjects")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if subject["kind"] == "ServiceAccount" {
                subject["namespace"] = Value::String(namespace.to_string());
            }
        }
    }
}
