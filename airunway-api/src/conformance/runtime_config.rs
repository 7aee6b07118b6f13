//! The check `runtime-config` (pure, no cluster): a provider honours a runtime
//! configuration's defaults through the SDK. The first deployment of the provider's
//! `conformance.yaml` is given a `RuntimeConfig` (a node selector, an environment variable, label
//! propagation) published in its status as the core publishes it; the SDK computes the
//! effective deployment and the provider renders it (the SDK's checked render, as in a
//! cluster). Every rendered object must carry the propagated label and `airunway.ai/provider`;
//! when the render holds a Pod template, the node selector entry (as a node selector or a
//! node label selector), the environment variable (in a container's `env`) and the propagated
//! label (in the Pod template's labels) must appear in it. A third-party provider runs it from
//! its own tests with its own type: [`check`].

use serde_json::{Map, Value, json};

use super::data::ProviderData;
use crate::constants::labels;
use crate::pod_security::Policy;
use crate::provider::{Provider, SchemaDetection, UpstreamSchema};
use crate::runtime_config::Source;
use crate::v1alpha1::{ModelDeployment, RuntimeConfig};

/// The namespace of the deployment and its config.
pub const NAMESPACE: &str = "conformance";
/// The name of the config.
pub const CONFIG_NAME: &str = "conformance-runtime-config";
/// The node selector entry the config sets.
pub const NODE_SELECTOR: (&str, &str) = ("conformance.airunway.ai/node-pool", "runtime-config");
/// The environment variable the config sets.
pub const ENV: (&str, &str) = ("AIRUNWAY_CONFORMANCE_RUNTIME_CONFIG", "honoured");
/// The deployment label the config propagates.
pub const PROPAGATED: (&str, &str) = ("conformance.airunway.ai/cost-center", "conformance");
/// The config's `labelPropagation.match` pattern.
const PATTERN: &str = "conformance.airunway.ai/cost-*";

/// The config: [`NODE_SELECTOR`], [`ENV`] and the propagation of [`PROPAGATED`].
pub fn config() -> Result<RuntimeConfig, String> {
    serde_json::from_value(json!({
        "apiVersion": crate::constants::API_VERSION, "kind": "RuntimeConfig",
        "metadata": {"name": CONFIG_NAME, "namespace": NAMESPACE},
        "spec": {
            "nodeSelector": {NODE_SELECTOR.0: NODE_SELECTOR.1},
            "env": [{"name": ENV.0, "value": ENV.1}],
            "labelPropagation": {"enabled": true, "match": [PATTERN]},
        },
    }))
    .map_err(|e| format!("the conformance RuntimeConfig: {e}"))
}

/// `manifest` (an accepted deployment) as the provider sees it once the core has assigned it to
/// `provider` and published `config` for it: labelled with [`PROPAGATED`], in [`NAMESPACE`],
/// `status.provider.name` and `status.effectiveRuntimeConfig` set, the provider's finalizer on.
pub fn deployment(
    manifest: &Value,
    provider: &str,
    config: &RuntimeConfig,
) -> Result<ModelDeployment, String> {
    let mut md = manifest.clone();
    let meta = &mut md["metadata"];
    meta["namespace"] = json!(NAMESPACE);
    meta["uid"] = json!("00000000-0000-0000-0000-0000000000c0");
    meta["generation"] = json!(1);
    meta["finalizers"] = json!([crate::constants::finalizers::provider(provider)]);
    if !meta["labels"].is_object() {
        meta["labels"] = json!({});
    }
    meta["labels"][PROPAGATED.0] = json!(PROPAGATED.1);
    if !md["spec"]["provider"].is_object() {
        md["spec"]["provider"] = json!({});
    }
    md["spec"]["provider"]["name"] = json!(provider);
    let published = Source::Namespace(std::sync::Arc::new(config.clone())).effective();
    md["status"] = json!({
        "provider": {"name": provider},
        "effectiveRuntimeConfig": published,
    });
    serde_json::from_value(md).map_err(|e| format!("the accepted deployment: {e}"))
}

/// Judges what the SDK would apply (pure): the objects as completed by the SDK.
pub fn judge(provider: &str, objects: &[Value]) -> Result<String, String> {
    if objects.is_empty() {
        return Err("nothing was rendered".into());
    }
    let mut missing = Vec::new();
    for object in objects {
        let what = format!(
            "{} {}",
            object["kind"].as_str().unwrap_or("object"),
            object["metadata"]["name"].as_str().unwrap_or_default()
        );
        let object_labels = &object["metadata"]["labels"];
        if object_labels[PROPAGATED.0] != PROPAGATED.1 {
            missing.push(format!(
                "{what} lacks the propagated label {}",
                PROPAGATED.0
            ));
        }
        if object_labels[labels::PROVIDER] != provider {
            missing.push(format!(
                "{what} lacks the label {}: {provider}",
                labels::PROVIDER
            ));
        }
    }
    let mut maps = Vec::new();
    for object in objects {
        collect(object, String::new(), &mut maps);
    }
    // A Pod spec: an object holding a `containers` array, or (Dynamo's `extraPodSpec`) a
    // `mainContainer`.
    let pod_specs = maps
        .iter()
        .filter(|(_, map)| {
            map.get("containers").is_some_and(Value::is_array)
                || map.get("mainContainer").is_some_and(Value::is_object)
        })
        .count();
    if pod_specs == 0 {
        return if missing.is_empty() {
            Ok(format!(
                "{} rendered objects carry {} and {}; no Pod template rendered, so the node selector and env were not looked for",
                objects.len(),
                PROPAGATED.0,
                labels::PROVIDER
            ))
        } else {
            Err(missing.join("; "))
        };
    }
    let has_entry = |key: &str, value: &str, under: &[&str]| {
        maps.iter().any(|(path, map)| {
            under.iter().any(|u| path.ends_with(u))
                && map.get(key).and_then(Value::as_str) == Some(value)
        })
    };
    if !has_entry(
        NODE_SELECTOR.0,
        NODE_SELECTOR.1,
        &[".nodeSelector", ".matchLabels"],
    ) {
        missing.push(format!(
            "no node selector (or node label selector) holds the config's {}: {}",
            NODE_SELECTOR.0, NODE_SELECTOR.1
        ));
    }
    // A container's `env`, or the `envs` of a Dynamo service.
    let has_env = maps.iter().any(|(_, map)| {
        ["env", "envs"].iter().any(|key| {
            map.get(*key).and_then(Value::as_array).is_some_and(|env| {
                env.iter()
                    .any(|e| e["name"] == ENV.0 && e["value"] == ENV.1)
            })
        })
    });
    if !has_env {
        missing.push(format!(
            "no container has the config's env {}={}",
            ENV.0, ENV.1
        ));
    }
    // Pod labels: a `labels` map holding the propagated label other than an object's own.
    let pod_labelled = maps.iter().any(|(path, map)| {
        path.ends_with(".labels")
            && path != ".metadata.labels"
            && map.get(PROPAGATED.0).and_then(Value::as_str) == Some(PROPAGATED.1)
    });
    if !pod_labelled {
        missing.push(format!(
            "no Pod template carries the propagated label {}",
            PROPAGATED.0
        ));
    }
    if missing.is_empty() {
        Ok(format!(
            "{} rendered objects carry {} and {}; the Pod template has the config's node selector, env and the propagated label",
            objects.len(),
            PROPAGATED.0,
            labels::PROVIDER
        ))
    } else {
        Err(missing.join("; "))
    }
}

/// Every JSON object in `value` with its path (`.a.b`, array items without an index).
fn collect<'a>(value: &'a Value, path: String, out: &mut Vec<(String, &'a Map<String, Value>)>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                collect(inner, format!("{path}.{key}"), out);
            }
            out.push((path, map));
        }
        Value::Array(items) => {
            for item in items {
                collect(item, path.clone(), out);
            }
        }
        _ => {}
    }
}

/// The check for `provider` with its conformance data (the first accepted deployment), at the
/// default version of its upstream kind: `Ok` with what was seen, or `Err` with what is missing
/// (or why nothing was rendered).
pub fn check<P: Provider>(provider: &P, data: &ProviderData) -> Result<String, String> {
    let accepted = data
        .accept
        .first()
        .ok_or("conformance.yaml accepts no deployment")?;
    let config = config()?;
    let md = deployment(&accepted.deployment, provider.name(), &config)?;
    let effective = crate::provider::runtime_configs::effective(
        &md,
        |namespace, name| {
            (namespace == NAMESPACE && name == CONFIG_NAME)
                .then(|| std::sync::Arc::new(config.clone()))
        },
        |_| None,
    )
    .map_err(|wait| format!("the SDK did not apply the config: {wait}"))?;
    let upstream = provider.upstream();
    let schema = UpstreamSchema {
        version: upstream.default_version.clone(),
        api_version: upstream.api_version(&upstream.default_version),
        fingerprint: "conformance".into(),
    };
    let checked = crate::provider::checked_render(
        provider,
        &effective.deployment,
        &effective.propagated_labels,
        &SchemaDetection::Supported(schema),
        &Policy::default(),
    )
    .map_err(|held| format!("the render was held: {}", held.status.message))?;
    let objects: Vec<Value> = checked.desired.into_iter().map(|d| d.object).collect();
    judge(provider.name(), &objects)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn labelled(extra: Value) -> Value {
        let mut object = json!({"kind": "Deployment", "metadata": {"name": "m", "labels": {
            PROPAGATED.0: PROPAGATED.1, "airunway.ai/provider": "p"}}});
        json_patch::merge(&mut object, &extra);
        object
    }

    fn pod(node_selector: Value, env: Value, pod_labels: Value) -> Value {
        labelled(json!({"spec": {"template": {
            "metadata": {"labels": pod_labels},
            "spec": {"nodeSelector": node_selector,
                     "containers": [{"name": "c", "env": env}]}}}}))
    }

    #[test]
    fn a_render_with_every_default_passes() {
        let good = pod(
            json!({NODE_SELECTOR.0: NODE_SELECTOR.1}),
            json!([{"name": ENV.0, "value": ENV.1}]),
            json!({PROPAGATED.0: PROPAGATED.1}),
        );
        let service = labelled(json!({"kind": "Service"}));
        assert!(judge("p", &[good, service]).is_ok());
        // A node label selector (KAITO's Workspace) counts as the node selector.
        let kaito = labelled(json!({
            "resource": {"labelSelector": {"matchLabels": {NODE_SELECTOR.0: NODE_SELECTOR.1}}},
            "inference": {"template": {"metadata": {"labels": {PROPAGATED.0: PROPAGATED.1}},
                "spec": {"containers": [{"name": "c", "env": [{"name": ENV.0, "value": ENV.1}]}]}}},
        }));
        assert!(judge("p", &[kaito]).is_ok(), "{:?}", judge("p", &[]));
        // No Pod template: only the labels are judged.
        let config_map = labelled(json!({"kind": "ConfigMap"}));
        assert!(
            judge("p", &[config_map])
                .unwrap()
                .contains("no Pod template rendered")
        );
    }

    #[test]
    fn a_dynamo_service_counts_as_a_pod_template() {
        let dgd = labelled(
            json!({"kind": "DynamoGraphDeployment", "spec": {"services": {"w": {
            "extraPodSpec": {"nodeSelector": {NODE_SELECTOR.0: NODE_SELECTOR.1},
                             "mainContainer": {"image": "x"}},
            "envs": [{"name": ENV.0, "value": ENV.1}],
            "extraPodMetadata": {"labels": {PROPAGATED.0: PROPAGATED.1}}}}}}),
        );
        assert!(judge("p", &[dgd]).unwrap().contains("the Pod template has"));
    }

    #[test]
    fn each_missing_default_is_named() {
        let bare = pod(json!({}), json!([]), json!({}));
        let message = judge("p", &[bare]).unwrap_err();
        for part in [
            "no node selector",
            "no container has the config's env",
            "no Pod template carries the propagated label",
        ] {
            assert!(message.contains(part), "{part}: {message}");
        }
        let unlabelled = json!({"kind": "ConfigMap", "metadata": {"name": "x", "labels": {}}});
        let message = judge("p", &[unlabelled]).unwrap_err();
        assert!(message.contains("ConfigMap x lacks the propagated label"));
        assert!(message.contains("ConfigMap x lacks the label airunway.ai/provider: p"));
        // The object's own labels are not the Pod template's.
        let own_only = pod(
            json!({NODE_SELECTOR.0: NODE_SELECTOR.1}),
            json!([{"name": ENV.0, "value": ENV.1}]),
            json!({}),
        );
        assert!(
            judge("p", &[own_only])
                .unwrap_err()
                .contains("no Pod template carries")
        );
    }
}
