//! The runtime configuration a provider renders with (docs/platform.md). The core resolves
//! each deployment's config and publishes it in `status.effectiveRuntimeConfig` (the source
//! object and the hash of its spec). The SDK looks that object up in its own watch cache and
//! renders the deployment with the config's defaults applied only when the cached spec hashes
//! as the core published ([`effective`]): a config the core has not published yet, or a cache
//! behind the core, waits for the next event instead of rendering with other defaults. A change
//! of a config wakes exactly the deployments of this provider whose status names it
//! ([`deployments_using`]). Pure, except for the stores the runner fills.

use std::fmt;
use std::sync::Arc;

use kube::runtime::reflector::{ObjectRef, Store};

use crate::runtime_config::{self, Effective};
use crate::v1alpha1::{ClusterRuntimeConfig, ModelDeployment, RuntimeConfig};

/// A runtime configuration object, by kind and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ConfigRef {
    /// A `RuntimeConfig`.
    Namespaced {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// A `ClusterRuntimeConfig`.
    Cluster {
        /// Its name.
        name: String,
    },
}

impl ConfigRef {
    /// The config `md`'s `status.effectiveRuntimeConfig` names (`None`: it names none, or
    /// neither of its references is set).
    pub fn published(md: &ModelDeployment) -> Option<ConfigRef> {
        let effective = md.status.as_ref()?.effective_runtime_config.as_ref()?;
        if let Some(reference) = &effective.namespace_ref {
            return Some(ConfigRef::Namespaced {
                namespace: reference.namespace.clone(),
                name: reference.name.clone(),
            });
        }
        effective
            .cluster_ref
            .as_ref()
            .map(|reference| ConfigRef::Cluster {
                name: reference.name.clone(),
            })
    }

    /// The reference to `config`.
    pub fn namespaced(config: &RuntimeConfig) -> ConfigRef {
        ConfigRef::Namespaced {
            namespace: config.metadata.namespace.clone().unwrap_or_default(),
            name: config.metadata.name.clone().unwrap_or_default(),
        }
    }

    /// The reference to `config`.
    pub fn cluster(config: &ClusterRuntimeConfig) -> ConfigRef {
        ConfigRef::Cluster {
            name: config.metadata.name.clone().unwrap_or_default(),
        }
    }
}

impl fmt::Display for ConfigRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigRef::Namespaced { namespace, name } => {
                write!(f, "RuntimeConfig {namespace}/{name}")
            }
            ConfigRef::Cluster { name } => write!(f, "ClusterRuntimeConfig {name}"),
        }
    }
}

/// Why a deployment is not rendered yet: the config its status names is not in this
/// provider's cache as the core published it. Nothing is written; the next event of the
/// config (the cache catching up) or of the deployment (the core publishing the new hash)
/// wakes it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigWait {
    /// The status names a config with neither a namespaced nor a cluster reference.
    #[error("status.effectiveRuntimeConfig names no config")]
    Unnamed,
    /// The config is not in the cache (not listed yet, or deleted before the core noticed), or
    /// is a `RuntimeConfig` of another namespace (never followed).
    #[error("{0} is not in the provider's cache")]
    Missing(ConfigRef),
    /// The cached config's spec does not hash to the published hash: the core has not
    /// published the change yet, or this cache has not received it yet.
    #[error("{config} hashes to {cached}, the core published {published}")]
    HashMismatch {
        /// The config.
        config: ConfigRef,
        /// `status.effectiveRuntimeConfig.hash`.
        published: String,
        /// The hash of the cached spec.
        cached: String,
    },
}

impl ConfigWait {
    /// A short, static label for logs and metrics.
    pub fn category(&self) -> &'static str {
        match self {
            ConfigWait::Unnamed => "runtime_config_unnamed",
            ConfigWait::Missing(_) => "runtime_config_missing",
            ConfigWait::HashMismatch { .. } => "runtime_config_hash_mismatch",
        }
    }
}

/// The deployment as the provider renders it (pure): without a published config,
/// [`runtime_config::apply`] with none (the deployment unchanged); with one, the config looked
/// up (`namespaced(namespace, name)`, `cluster(name)`: the caches), its spec hash checked
/// against the published one, then applied. A `RuntimeConfig` outside the deployment's
/// namespace is never followed.
pub fn effective(
    md: &ModelDeployment,
    namespaced: impl FnOnce(&str, &str) -> Option<Arc<RuntimeConfig>>,
    cluster: impl FnOnce(&str) -> Option<Arc<ClusterRuntimeConfig>>,
) -> Result<Effective, ConfigWait> {
    let Some(published) = md
        .status
        .as_ref()
        .and_then(|s| s.effective_runtime_config.as_ref())
    else {
        return Ok(runtime_config::apply(md, None));
    };
    let reference = ConfigRef::published(md).ok_or(ConfigWait::Unnamed)?;
    let found = match &reference {
        ConfigRef::Namespaced { namespace, name } => (md.metadata.namespace.as_deref()
            == Some(namespace.as_str()))
        .then(|| namespaced(namespace, name))
        .flatten()
        .map(|config| config.spec.defaults.clone()),
        ConfigRef::Cluster { name } => cluster(name).map(|config| config.spec.defaults.clone()),
    };
    let defaults = found.ok_or_else(|| ConfigWait::Missing(reference.clone()))?;
    let cached = runtime_config::spec_hash(&defaults);
    if cached != published.hash {
        return Err(ConfigWait::HashMismatch {
            config: reference,
            published: published.hash.clone(),
            cached,
        });
    }
    Ok(runtime_config::apply(md, Some(&defaults)))
}

/// The watch caches of both kinds (trimmed: no `managedFields`).
#[derive(Clone)]
pub struct ConfigStores {
    /// Every `RuntimeConfig`.
    pub namespaced: Store<RuntimeConfig>,
    /// Every `ClusterRuntimeConfig`.
    pub cluster: Store<ClusterRuntimeConfig>,
}

impl ConfigStores {
    /// [`effective`] with the lookups in these caches.
    pub fn effective(&self, md: &ModelDeployment) -> Result<Effective, ConfigWait> {
        effective(
            md,
            |namespace, name| self.namespaced.get(&ObjectRef::new(name).within(namespace)),
            |name| self.cluster.get(&ObjectRef::new(name)),
        )
    }
}

/// The deployments of `deployments` assigned to `provider` whose `status.effectiveRuntimeConfig`
/// names `config`: the ones a change of `config` re-renders (no other deployment is woken).
pub fn deployments_using<'a>(
    deployments: impl IntoIterator<Item = &'a ModelDeployment>,
    provider: &str,
    config: &ConfigRef,
) -> Vec<ObjectRef<ModelDeployment>> {
    deployments
        .into_iter()
        .filter(|md| md.selected_provider() == Some(provider))
        .filter(|md| ConfigRef::published(md).as_ref() == Some(config))
        .map(ObjectRef::from_obj)
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use serde_json::{Value, json};

    fn md(name: &str, provider: &str, effective: Value) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": "team-a",
                         "labels": {"org.example/cost-center": "ml-42"}},
            "spec": {"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"}},
            "status": {"provider": {"name": provider}, "effectiveRuntimeConfig": effective},
        }))
        .unwrap()
    }

    fn namespaced_config(namespace: &str, name: &str, spec: Value) -> Arc<RuntimeConfig> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "airunway.ai/v1alpha1", "kind": "RuntimeConfig",
                "metadata": {"name": name, "namespace": namespace}, "spec": spec,
            }))
            .unwrap(),
        )
    }

    fn cluster_config(name: &str, spec: Value) -> Arc<ClusterRuntimeConfig> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "airunway.ai/v1alpha1", "kind": "ClusterRuntimeConfig",
                "metadata": {"name": name}, "spec": spec,
            }))
            .unwrap(),
        )
    }

    fn spec_a() -> Value {
        json!({"nodeSelector": {"pool": "a"}, "env": [{"name": "LOG", "value": "debug"}],
               "labelPropagation": {"enabled": true, "match": ["org.example/*"]}})
    }

    fn hash_of(spec: &Value) -> String {
        runtime_config::spec_hash(&serde_json::from_value(spec.clone()).unwrap())
    }

    fn namespace_ref(name: &str, hash: &str) -> Value {
        json!({"namespaceRef": {"kind": "RuntimeConfig", "namespace": "team-a", "name": name},
               "scope": "Namespace", "hash": hash})
    }

    #[test]
    fn without_a_published_config_the_deployment_renders_as_it_is() {
        let plain = md("m", "vllm", Value::Null);
        let effective = effective(
            &plain,
            |_, _| panic!("no lookup without a reference"),
            |_| panic!("no lookup without a reference"),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&effective.deployment).unwrap(),
            serde_json::to_value(&plain).unwrap()
        );
        assert!(effective.propagated_labels.is_empty());
    }

    #[test]
    fn a_published_config_is_applied_when_the_cache_holds_it_as_published() {
        let config = namespaced_config("team-a", "gpu", spec_a());
        let deployment = md("m", "vllm", namespace_ref("gpu", &hash_of(&spec_a())));
        let effective = effective(
            &deployment,
            |namespace, name| (namespace == "team-a" && name == "gpu").then(|| config.clone()),
            |_| None,
        )
        .unwrap();
        let spec = &effective.deployment.spec;
        assert_eq!(spec.node_selector.as_ref().unwrap()["pool"], "a");
        assert_eq!(spec.env.as_ref().unwrap()[0].name, "LOG");
        assert_eq!(
            effective.propagated_labels.get("org.example/cost-center"),
            Some(&"ml-42".to_string())
        );
        // The metadata and the status stay the deployment's.
        assert_eq!(effective.deployment.metadata, deployment.metadata);
        assert_eq!(
            serde_json::to_value(&effective.deployment.status).unwrap(),
            serde_json::to_value(&deployment.status).unwrap()
        );
    }

    #[test]
    fn a_cluster_config_is_looked_up_by_name() {
        let spec = json!({"tolerations": [{"key": "gpu", "operator": "Exists"}]});
        let config = cluster_config("platform", spec.clone());
        let deployment = md(
            "m",
            "vllm",
            json!({"clusterRef": {"kind": "ClusterRuntimeConfig", "name": "platform"},
                   "scope": "Cluster", "hash": hash_of(&spec)}),
        );
        let effective = effective(
            &deployment,
            |_, _| panic!("a cluster reference reads the cluster cache"),
            |name| (name == "platform").then(|| config.clone()),
        )
        .unwrap();
        assert_eq!(effective.deployment.spec.tolerations.unwrap().len(), 1);
    }

    #[test]
    fn a_config_missing_from_the_cache_or_hashing_otherwise_waits() {
        let published = hash_of(&spec_a());
        let deployment = md("m", "vllm", namespace_ref("gpu", &published));
        // Not in the cache (not listed yet, or deleted): wait.
        let missing = effective(&deployment, |_, _| None, |_| None).unwrap_err();
        assert_eq!(
            missing,
            ConfigWait::Missing(ConfigRef::Namespaced {
                namespace: "team-a".into(),
                name: "gpu".into()
            })
        );
        assert_eq!(
            missing.to_string(),
            "RuntimeConfig team-a/gpu is not in the provider's cache"
        );
        // The cache holds a newer spec than the core published (or an older one): wait.
        let changed = json!({"nodeSelector": {"pool": "b"}});
        let newer = namespaced_config("team-a", "gpu", changed.clone());
        let mismatch = effective(&deployment, |_, _| Some(newer.clone()), |_| None).unwrap_err();
        assert_eq!(
            mismatch,
            ConfigWait::HashMismatch {
                config: ConfigRef::Namespaced {
                    namespace: "team-a".into(),
                    name: "gpu".into()
                },
                published: published.clone(),
                cached: hash_of(&changed),
            }
        );
        assert_eq!(mismatch.category(), "runtime_config_hash_mismatch");
        // Once the core publishes the new hash, the same cache entry renders.
        let republished = md("m", "vllm", namespace_ref("gpu", &hash_of(&changed)));
        let effective = effective(&republished, |_, _| Some(newer.clone()), |_| None).unwrap();
        assert_eq!(
            effective.deployment.spec.node_selector.unwrap()["pool"],
            "b"
        );
    }

    #[test]
    fn a_reference_to_another_namespace_or_to_nothing_is_never_followed() {
        let elsewhere = md(
            "m",
            "vllm",
            json!({"namespaceRef": {"kind": "RuntimeConfig", "namespace": "team-b", "name": "gpu"},
                   "scope": "Namespace", "hash": hash_of(&spec_a())}),
        );
        let config = namespaced_config("team-b", "gpu", spec_a());
        assert!(matches!(
            effective(&elsewhere, |_, _| Some(config.clone()), |_| None),
            Err(ConfigWait::Missing(_))
        ));
        let unnamed = md("m", "vllm", json!({"scope": "Cluster", "hash": "00"}));
        assert_eq!(
            effective(&unnamed, |_, _| None, |_| None).unwrap_err(),
            ConfigWait::Unnamed
        );
    }

    #[test]
    fn a_config_change_wakes_exactly_the_deployments_of_this_provider_that_use_it() {
        let a = namespace_ref("a", "1");
        let deployments = [
            md("uses-a", "vllm", a.clone()),
            md("also-a", "vllm", a.clone()),
            md("uses-b", "vllm", namespace_ref("b", "1")),
            md("other-provider", "llmd", a.clone()),
            md("none", "vllm", Value::Null),
            md(
                "cluster-a",
                "vllm",
                json!({"clusterRef": {"kind": "ClusterRuntimeConfig", "name": "a"},
                       "scope": "Cluster", "hash": "1"}),
            ),
        ];
        let names = |config: &ConfigRef| -> Vec<String> {
            deployments_using(&deployments, "vllm", config)
                .into_iter()
                .map(|r| r.name)
                .collect()
        };
        let namespaced_a = ConfigRef::namespaced(&namespaced_config("team-a", "a", json!({})));
        assert_eq!(names(&namespaced_a), ["uses-a", "also-a"]);
        let cluster_a = ConfigRef::cluster(&cluster_config("a", json!({})));
        assert_eq!(names(&cluster_a), ["cluster-a"]);
        let other_namespace = ConfigRef::Namespaced {
            namespace: "team-b".into(),
            name: "a".into(),
        };
        assert!(names(&other_namespace).is_empty());
    }
}
