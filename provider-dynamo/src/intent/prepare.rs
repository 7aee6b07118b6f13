//! What an intent deployment reads before its render (I/O, [`Provider::prepare`]): whether
//! the cluster has the request API, the live request of the current attempt (its phase, and
//! the inputs and attempt it accepted, which lock changed inputs), the graph it created, and
//! the graph an earlier attempt's request created (deleted: Dynamo gives generated graphs no
//! owner, and the SDK prunes the earlier request itself). The result is `status.provider`'s
//! `requestRef`, `workloadRef` and `intent`, or a hold.
//!
//! [`Provider::prepare`]: airunway_api::provider::Provider::prepare

use std::time::Duration;

use airunway_api::constants::reasons::dynamo::{INTENT_LOCKED, REQUEST_API_MISSING};
use airunway_api::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use airunway_api::kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind};
use airunway_api::kube::{Client, ResourceExt};
use airunway_api::provider::tokio::sync::OnceCell;
use airunway_api::provider::tokio::time::timeout;
use airunway_api::provider::{Preparation, PreparationHold};
use airunway_api::serde_json::{self, Map, Value, json};
use airunway_api::v1alpha1::{ModelDeployment, ProviderResourceReference};

use super::attempt::{self, Accepted};
use super::{GROUP, REQUEST_KIND, REQUEST_PLURAL, REQUEST_VERSION, spec, status};

/// How long one read or deletion may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// The label Dynamo puts on a graph a request created: the request's name.
pub const REQUEST_NAME_LABEL: &str = "dgdr.nvidia.com/name";
/// The label Dynamo puts on a graph a request created: the request's namespace.
pub const REQUEST_NAMESPACE_LABEL: &str = "dgdr.nvidia.com/namespace";
/// The graph kind and the versions a generated graph is read at, preferred first.
const GRAPH_KIND: &str = "DynamoGraphDeployment";
const GRAPH_PLURAL: &str = "dynamographdeployments";
const GRAPH_VERSIONS: &[&str] = &["v1beta1", "v1alpha1"];

static CLIENT: OnceCell<Client> = OnceCell::const_new();

async fn client() -> Option<Client> {
    CLIENT
        .get_or_try_init(Client::try_default)
        .await
        .ok()
        .cloned()
}

fn resource(version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, version, kind), plural)
}

fn hold(reason: &'static str, message: impl Into<String>) -> Preparation {
    Preparation {
        hold: Some(PreparationHold {
            reason,
            message: message.into(),
        }),
        ..Preparation::default()
    }
}

/// A reference to `object` of `api_version`/`kind`.
fn reference(object: &DynamicObject, api_version: &str, kind: &str) -> ProviderResourceReference {
    ProviderResourceReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: object.name_any(),
        namespace: object.namespace().unwrap_or_default(),
        uid: object.metadata.uid.clone(),
    }
}

/// Whether `graph` was created by the request `request` in `namespace` (Dynamo's labels).
pub fn created_by(graph: &DynamicObject, request: &str, namespace: &str) -> bool {
    let labels = graph.labels();
    labels.get(REQUEST_NAME_LABEL).map(String::as_str) == Some(request)
        && labels
            .get(REQUEST_NAMESPACE_LABEL)
            .is_none_or(|n| n.is_empty() || n == namespace)
}

/// The graph `name` in `namespace`, at the first version served, with its apiVersion.
async fn graph(client: &Client, namespace: &str, name: &str) -> Option<(DynamicObject, String)> {
    for version in GRAPH_VERSIONS {
        let api: Api<DynamicObject> = Api::namespaced_with(
            client.clone(),
            namespace,
            &resource(version, GRAPH_KIND, GRAPH_PLURAL),
        );
        if let Ok(Ok(Some(object))) = timeout(CALL_TIMEOUT, api.get_opt(name)).await {
            return Some((object, format!("{GROUP}/{version}")));
        }
    }
    None
}

/// Deletes the graph an earlier attempt's request created, if it is still there.
async fn delete_earlier_graph(client: &Client, earlier: &ProviderResourceReference, request: &str) {
    let Some((object, version)) = graph(client, &earlier.namespace, &earlier.name).await else {
        return;
    };
    if !created_by(&object, request, &earlier.namespace)
        || earlier
            .uid
            .as_ref()
            .is_some_and(|uid| object.metadata.uid.as_ref() != Some(uid))
    {
        return;
    }
    let version = version.trim_start_matches(&format!("{GROUP}/")).to_string();
    let api: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &earlier.namespace,
        &resource(&version, GRAPH_KIND, GRAPH_PLURAL),
    );
    // Gone already, or refused: tried again on the next reconcile while the status names it.
    let _ = timeout(
        CALL_TIMEOUT,
        api.delete(&earlier.name, &DeleteParams::background()),
    )
    .await;
}

/// `status.provider`'s prepared fields.
fn provider_status(
    request: ProviderResourceReference,
    workload: Option<ProviderResourceReference>,
    intent: Value,
) -> Preparation {
    let mut provider = Map::new();
    provider.insert(
        "requestRef".into(),
        serde_json::to_value(request).unwrap_or(Value::Null),
    );
    if let Some(workload) = workload {
        provider.insert(
            "workloadRef".into(),
            serde_json::to_value(workload).unwrap_or(Value::Null),
        );
    }
    provider.insert("intent".into(), intent);
    let mut preparation = Preparation::default();
    preparation
        .status
        .insert("provider".into(), Value::Object(provider));
    preparation
}

/// Reads what `md`'s intent depends on (nothing for a manual or refused deployment).
pub async fn prepare(md: &ModelDeployment) -> Preparation {
    let Ok(Some(intent)) = spec::validate(md) else {
        return Preparation::default();
    };
    let Some(client) = client().await else {
        return Preparation::default();
    };
    let namespace = md.namespace().unwrap_or_default();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    if let Ok(Ok(None)) = timeout(
        CALL_TIMEOUT,
        crds.get_opt(&format!("{REQUEST_PLURAL}.{GROUP}")),
    )
    .await
    {
        return hold(REQUEST_API_MISSING, status::REQUEST_API_MISSING);
    }
    let name = attempt::request_name(md);
    let token = attempt::attempt(md);
    let hash = attempt::input_hash(md, &intent);
    let recorded = md.status.as_ref().and_then(|s| s.provider.as_ref());
    if let (Some(request), Some(workload)) = (
        recorded.and_then(|p| p.request_ref.as_ref()),
        recorded.and_then(|p| p.workload_ref.as_ref()),
    ) && request.name != name
    {
        delete_earlier_graph(&client, workload, &request.name).await;
    }
    let requests: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &namespace,
        &resource(REQUEST_VERSION, REQUEST_KIND, REQUEST_PLURAL),
    );
    let api_version = format!("{GROUP}/{REQUEST_VERSION}");
    let live = match timeout(CALL_TIMEOUT, requests.get_opt(&name)).await {
        Ok(Ok(live)) => live,
        // Unknown: the render and the apply go on; the next reconcile reads again.
        _ => return Preparation::default(),
    };
    let Some(live) = live else {
        let request = ProviderResourceReference {
            api_version,
            kind: REQUEST_KIND.into(),
            name,
            namespace,
            uid: None,
        };
        return provider_status(request, None, json!({"inputHash": hash, "attempt": token}));
    };
    let state = status::state(&live);
    let accepted = Accepted {
        attempt: &state.attempt,
        input_hash: &state.input_hash,
        phase: &state.phase,
    };
    let mut workload = None;
    if let Some(graph_name) = &state.workload
        && let Some((object, version)) = graph(&client, &namespace, graph_name).await
        && created_by(&object, &state.request, &namespace)
    {
        workload = Some(reference(&object, &version, GRAPH_KIND));
    }
    let mut intent_status = Map::new();
    for (key, value) in [
        ("phase", &state.phase),
        ("profilingPhase", &state.profiling_phase),
        ("inputHash", &state.input_hash),
        ("attempt", &state.attempt),
    ] {
        if !value.is_empty() {
            intent_status.insert(key.into(), json!(value));
        }
    }
    let mut preparation = provider_status(
        reference(&live, &api_version, REQUEST_KIND),
        workload,
        Value::Object(intent_status),
    );
    if let Err(locked) = attempt::check_unchanged(Some(accepted), token, &hash) {
        preparation.hold = Some(PreparationHold {
            reason: INTENT_LOCKED,
            message: locked.to_string(),
        });
    }
    preparation
}
