//! The cluster side: the provider's kustomize base applied into the test namespace, a token of
//! its ServiceAccount, upstream objects found through discovery, and waiting.

use std::future::Future;
use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, PatchParams, PostParams};
use kube::config::{Kubeconfig, NamedAuthInfo};
use kube::core::GroupVersionKind;
use kube::discovery::{self, ApiCapabilities, ApiResource, Scope};
use serde_json::Value;

use super::ConformanceError;
use crate::apply_body;

/// The field manager of what the runner writes.
pub const FIELD_MANAGER: &str = "airunway-conformance";

/// The objects of a rendered kustomize base (`kustomize build` output).
pub fn read_manifests(path: &Path) -> Result<Vec<Value>, ConformanceError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConformanceError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(&text).map_err(|e| ConformanceError::Data {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    Ok(docs.into_iter().filter(|d| d.is_object()).collect())
}

/// What of a base the runner applies, adjusted to run in `namespace`: every object but the
/// provider's own Deployment (the runner runs the binary), namespaced objects moved into
/// `namespace`, ServiceAccount subjects too, and cluster-wide RBAC names suffixed with the
/// namespace (so runs of two bases side by side keep their own roles).
pub fn adjust_base(objects: &[Value], namespace: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for object in objects {
        let kind = object["kind"].as_str().unwrap_or_default();
        if kind == "Deployment" || kind == "Namespace" {
            continue;
        }
        let mut object = object.clone();
        if object["metadata"]["namespace"].is_string() {
            object["metadata"]["namespace"] = Value::String(namespace.to_string());
        }
        if matches!(kind, "ClusterRole" | "ClusterRoleBinding")
            && let Some(name) = object["metadata"]["name"].as_str()
        {
            object["metadata"]["name"] = Value::String(format!("{name}-{namespace}"));
        }
        if kind == "ClusterRoleBinding" || kind == "RoleBinding" {
            if object["roleRef"]["kind"] == "ClusterRole"
                && let Some(name) = object["roleRef"]["name"].as_str()
            {
                object["roleRef"]["name"] = Value::String(format!("{name}-{namespace}"));
            }
            if let Some(subjects) = object["subjects"].as_array_mut() {
                for subject in subjects {
                    if subject["kind"] == "ServiceAccount" {
                        subject["namespace"] = Value::String(namespace.to_string());
                    }
                }
            }
        }
        out.push(object);
    }
    out
}

/// The ApiResource and scope of `apiVersion`/`kind`.
pub async fn resource_of(
    client: &Client,
    api_version: &str,
    kind: &str,
) -> Result<(ApiResource, ApiCapabilities), ConformanceError> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    discovery::pinned_kind(client, &gvk)
        .await
        .map_err(|source| ConformanceError::Api {
            action: format!("discovering {api_version} {kind}"),
            source,
        })
}

/// An Api for objects of `resource` in `namespace` (ignored for cluster-scoped kinds).
pub fn api_for(
    client: &Client,
    resource: &ApiResource,
    capabilities: &ApiCapabilities,
    namespace: &str,
) -> Api<DynamicObject> {
    match capabilities.scope {
        Scope::Namespaced => Api::namespaced_with(client.clone(), namespace, resource),
        Scope::Cluster => Api::all_with(client.clone(), resource),
    }
}

/// Applies `objects` (server-side apply as [`FIELD_MANAGER`]).
pub async fn apply_all(
    client: &Client,
    objects: &[Value],
    namespace: &str,
) -> Result<(), ConformanceError> {
    for object in objects {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let kind = object["kind"].as_str().unwrap_or_default();
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let (resource, capabilities) = resource_of(client, api_version, kind).await?;
        api_for(client, &resource, &capabilities, namespace)
            .patch(
                name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &apply_body::apply(object),
            )
            .await
            .map_err(|source| ConformanceError::Api {
                action: format!("applying {kind} {name}"),
                source,
            })?;
        if kind == "CustomResourceDefinition" {
            wait_established(client, name).await?;
        }
    }
    Ok(())
}

/// Deletes the cluster-wide RBAC objects among `objects` (what [`adjust_base`] named after the
/// namespace); errors are ignored (cleanup).
pub async fn delete_cluster_rbac(client: &Client, objects: &[Value]) {
    for object in objects {
        let kind = object["kind"].as_str().unwrap_or_default();
        if !matches!(kind, "ClusterRole" | "ClusterRoleBinding") {
            continue;
        }
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        if let Ok((resource, capabilities)) = resource_of(client, api_version, kind).await {
            let _ = api_for(client, &resource, &capabilities, "")
                .delete(name, &DeleteParams::default())
                .await;
        }
    }
}

async fn wait_established(client: &Client, name: &str) -> Result<(), ConformanceError> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    wait_until(
        &format!("CRD {name} Established"),
        Duration::from_secs(30),
        || async {
            let crd = api.get_opt(name).await.ok().flatten()?;
            crd.status?
                .conditions?
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
                .then_some(())
        },
    )
    .await
}

/// A kubeconfig that authenticates as ServiceAccount `account` in `namespace` with a token from
/// the TokenRequest API (valid `ttl`), for the cluster of `admin`. Written to `dir`.
pub async fn service_account_kubeconfig(
    client: &Client,
    admin: &Kubeconfig,
    namespace: &str,
    account: &str,
    ttl: Duration,
    dir: &Path,
) -> Result<std::path::PathBuf, ConformanceError> {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: Some(i64::try_from(ttl.as_secs()).unwrap_or(3600)),
            ..Default::default()
        },
        ..Default::default()
    };
    let token = accounts
        .create_token_request(account, &PostParams::default(), &request)
        .await
        .map_err(|source| ConformanceError::Api {
            action: format!("requesting a token of ServiceAccount {namespace}/{account}"),
            source,
        })?
        .status
        .map(|s| s.token)
        .ok_or_else(|| {
            ConformanceError::Setup(format!(
                "the TokenRequest for {namespace}/{account} returned no token"
            ))
        })?;
    let user = format!("system:serviceaccount:{namespace}:{account}");
    let mut config = admin.clone();
    let context_name = config
        .current_context
        .clone()
        .ok_or_else(|| ConformanceError::Setup("the kubeconfig has no current context".into()))?;
    let context = config
        .contexts
        .iter_mut()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.as_mut())
        .ok_or_else(|| ConformanceError::Setup(format!("no context {context_name}")))?;
    context.user = Some(user.clone());
    context.namespace = Some(namespace.to_string());
    let auth: NamedAuthInfo =
        serde_json::from_value(serde_json::json!({"name": user, "user": {"token": token}}))
            .map_err(|e| ConformanceError::Setup(e.to_string()))?;
    config.auth_infos = vec![auth];
    let path = dir.join(format!("{account}.kubeconfig"));
    let text =
        serde_json::to_string(&config).map_err(|e| ConformanceError::Setup(e.to_string()))?;
    std::fs::write(&path, text).map_err(|source| ConformanceError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

/// Calls `probe` every 200 ms until it returns `Some`, or fails after `timeout` naming `what`.
pub async fn wait_until<T, F, Fut>(
    what: &str,
    timeout: Duration,
    mut probe: F,
) -> Result<T, ConformanceError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(value) = probe().await {
            return Ok(value);
        }
        if start.elapsed() >= timeout {
            return Err(ConformanceError::Timeout {
                what: what.to_string(),
                after: timeout,
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn the_base_moves_into_the_namespace_without_its_deployment() {
        let base = vec![
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "p", "namespace": "airunway-system"}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "p"}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "p"},
                   "roleRef": {"kind": "ClusterRole", "name": "p"}, "subjects": [{"kind": "ServiceAccount", "name": "p", "namespace": "airunway-system"}]}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "p", "namespace": "airunway-system"}}),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "p-probe", "namespace": "airunway-system"}}),
        ];
        let adjusted = adjust_base(&base, "cf-a");
        assert_eq!(adjusted.len(), 4);
        assert_eq!(adjusted[0]["metadata"]["namespace"], "cf-a");
        assert_eq!(adjusted[1]["metadata"]["name"], "p-cf-a");
        assert_eq!(adjusted[2]["metadata"]["name"], "p-cf-a");
        assert_eq!(adjusted[2]["roleRef"]["name"], "p-cf-a");
        assert_eq!(adjusted[2]["subjects"][0]["namespace"], "cf-a");
        assert_eq!(adjusted[3]["kind"], "Service");
        assert_eq!(adjusted[3]["metadata"]["namespace"], "cf-a");
    }
}
