//! The cluster side of `why` and `providers`: reads the objects the reports are built from
//! ([`crate::why`]), with the kubeconfig, context and namespace the usual way. Read-only:
//! `get` and `list` only, never a Secret.

use airunway_api::constants::labels;
use airunway_api::v1alpha1::{InferenceProviderConfig, ModelDeployment};
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use kube::{Client, Config};
use serde_json::Value;

use crate::why::Inputs;

/// At most this many objects of one upstream kind are listed.
pub const UPSTREAM_LIMIT: u32 = 20;

/// Why a cluster command failed (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// No usable kubeconfig (or in-cluster configuration).
    #[error("kubeconfig: {0}")]
    Config(String),
    /// The API server refused or could not be reached.
    #[error("{what}: {source}")]
    Api {
        /// What was being read.
        what: String,
        /// The error.
        source: kube::Error,
    },
    /// The ModelDeployment does not exist.
    #[error("ModelDeployment {namespace}/{name} not found")]
    NotFound {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// An object could not be turned into JSON.
    #[error("encoding {0}")]
    Encode(String),
}

impl ClusterError {
    /// A short, static label.
    pub fn category(&self) -> &'static str {
        match self {
            ClusterError::Config(_) => "config",
            ClusterError::Api { .. } => "api",
            ClusterError::NotFound { .. } => "not_found",
            ClusterError::Encode(_) => "encode",
        }
    }
}

fn api_error(what: impl Into<String>) -> impl FnOnce(kube::Error) -> ClusterError {
    let what = what.into();
    move |source| ClusterError::Api { what, source }
}

fn json(object: &DynamicObject) -> Result<Value, ClusterError> {
    serde_json::to_value(object).map_err(|e| ClusterError::Encode(e.to_string()))
}

/// A client for `context` (the kubeconfig's current one when `None`) and the namespace to
/// use: `namespace`, else the context's.
pub async fn connect(
    context: Option<&str>,
    namespace: Option<&str>,
) -> Result<(Client, String), ClusterError> {
    let config = match context {
        Some(context) => Config::from_kubeconfig(&kube::config::KubeConfigOptions {
            context: Some(context.to_string()),
            ..Default::default()
        })
        .await
        .map_err(|e| ClusterError::Config(e.to_string()))?,
        None => Config::infer()
            .await
            .map_err(|e| ClusterError::Config(e.to_string()))?,
    };
    let namespace = namespace
        .map(str::to_string)
        .unwrap_or_else(|| config.default_namespace.clone());
    let client = Client::try_from(config).map_err(|e| ClusterError::Config(e.to_string()))?;
    Ok((client, namespace))
}

/// The objects `why` reads for deployment `namespace/name`.
pub async fn why_inputs(
    client: &Client,
    namespace: &str,
    name: &str,
) -> Result<Inputs, ClusterError> {
    let md_resource = ApiResource::erase::<ModelDeployment>(&());
    let mds: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &md_resource);
    let deployment = mds
        .get_opt(name)
        .await
        .map_err(api_error(format!(
            "reading ModelDeployment {namespace}/{name}"
        )))?
        .ok_or_else(|| ClusterError::NotFound {
            namespace: namespace.to_string(),
            name: name.to_string(),
        })?;
    let deployment = json(&deployment)?;

    let mut inputs = Inputs {
        deployment,
        ..Default::default()
    };
    if let Some(provider) = inputs.deployment["status"]["provider"]["name"]
        .as_str()
        .map(str::to_string)
    {
        let ipc_resource = ApiResource::erase::<InferenceProviderConfig>(&());
        let ipcs: Api<DynamicObject> = Api::all_with(client.clone(), &ipc_resource);
        inputs.provider = ipcs
            .get_opt(&provider)
            .await
            .map_err(api_error(format!(
                "reading InferenceProviderConfig {provider}"
            )))?
            .map(|o| json(&o))
            .transpose()?;
    }
    if let Some(ipc) = &inputs.provider {
        inputs.upstream = upstream(client, namespace, name, ipc).await?;
    }
    let object = &inputs.deployment["status"]["notReady"]["object"];
    if let (Some(api_version), Some(kind), Some(object_name)) = (
        object["apiVersion"].as_str(),
        object["kind"].as_str(),
        object["name"].as_str(),
    ) {
        inputs.source = source(client, namespace, api_version, kind, object_name).await?;
    }
    Ok(inputs)
}

/// The objects labelled with the deployment's name, of the kinds the provider's registration
/// names (`spec.upstreamResources`), at most [`UPSTREAM_LIMIT`] of each. Pods are found by
/// [`labels::MODEL_DEPLOYMENT`], everything else by [`labels::DEPLOYMENT`]. A kind the API
/// server does not serve is skipped; Secrets are never read.
async fn upstream(
    client: &Client,
    namespace: &str,
    name: &str,
    ipc: &Value,
) -> Result<Vec<Value>, ClusterError> {
    let mut objects = Vec::new();
    let kinds = ipc["spec"]["upstreamResources"].as_array().cloned();
    for kind in kinds.into_iter().flatten() {
        let group = kind["group"].as_str().unwrap_or_default();
        let Some(plural) = kind["resource"].as_str() else {
            continue;
        };
        if group.is_empty() && plural == "secrets" {
            continue;
        }
        let Ok(api_group) = kube::discovery::group(client, group).await else {
            continue;
        };
        let Some((resource, _)) = api_group
            .recommended_resources()
            .into_iter()
            .find(|(r, _)| r.plural == plural)
        else {
            continue;
        };
        let label = if group.is_empty() && plural == "pods" {
            labels::MODEL_DEPLOYMENT
        } else {
            labels::DEPLOYMENT
        };
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
        let params = ListParams::default()
            .labels(&format!("{label}={name}"))
            .limit(UPSTREAM_LIMIT);
        let list = api
            .list(&params)
            .await
            .map_err(api_error(format!("listing {plural}")))?;
        for mut item in list.items {
            // A list's items carry no apiVersion/kind: the resource's.
            item.types = Some(kube::core::TypeMeta {
                api_version: resource.api_version.clone(),
                kind: resource.kind.clone(),
            });
            objects.push(json(&item)?);
        }
    }
    Ok(objects)
}

/// The object `status.notReady.object` names, when it can be read (`None`: gone, a kind not
/// served, or a Secret).
async fn source(
    client: &Client,
    namespace: &str,
    api_version: &str,
    kind: &str,
    name: &str,
) -> Result<Option<Value>, ClusterError> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    if group.is_empty() && kind == "Secret" {
        return Ok(None);
    }
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let Ok((resource, _)) = kube::discovery::pinned_kind(client, &gvk).await else {
        return Ok(None);
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    api.get_opt(name)
        .await
        .map_err(api_error(format!("reading {kind} {name}")))?
        .map(|o| json(&o))
        .transpose()
}

/// Every InferenceProviderConfig and every ModelDeployment (all namespaces; one list each).
pub async fn providers_inputs(client: &Client) -> Result<(Vec<Value>, Vec<Value>), ClusterError> {
    let ipcs: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::erase::<InferenceProviderConfig>(&()),
    );
    let mds: Api<DynamicObject> =
        Api::all_with(client.clone(), &ApiResource::erase::<ModelDeployment>(&()));
    let ipcs = ipcs
        .list(&ListParams::default())
        .await
        .map_err(api_error("listing InferenceProviderConfigs"))?;
    let mds = mds
        .list(&ListParams::default())
        .await
        .map_err(api_error("listing ModelDeployments"))?;
    let ipcs = ipcs.items.iter().map(json).collect::<Result<_, _>>()?;
    let mds = mds.items.iter().map(json).collect::<Result<_, _>>()?;
    Ok((ipcs, mds))
}
