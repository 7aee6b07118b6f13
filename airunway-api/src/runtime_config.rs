//! Runtime configurations (docs/platform.md): which config a deployment gets ([`resolve`], AIM's
//! algorithm), what it becomes with the config's defaults ([`apply`], the deployment's own
//! fields win), the hash published in `status.effectiveRuntimeConfig` ([`spec_hash`]), and which
//! labels propagate ([`propagated_labels`]). Pure: the core, every provider (through the SDK)
//! and the offline tools call the same functions.

use std::collections::BTreeMap;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::v1alpha1::{
    ClusterConfigRef, ClusterRuntimeConfig, EffectiveRuntimeConfig, EngineType, ModelCacheDefaults,
    ModelDeployment, NamespacedConfigRef, RuntimeConfig, RuntimeConfigScope, RuntimeDefaults,
};

/// The config a deployment names when it names none.
pub const DEFAULT_NAME: &str = "default";

/// The config a deployment names, and whether it named it (`spec.runtimeConfigName`) or gets
/// [`DEFAULT_NAME`] implicitly.
pub fn requested_name(md: &ModelDeployment) -> (&str, bool) {
    match md.spec.runtime_config_name.as_deref() {
        Some(name) => (name, true),
        None => (DEFAULT_NAME, false),
    }
}

/// A config found for a deployment.
#[derive(Clone, Debug)]
pub enum Source {
    /// The `RuntimeConfig` of the name in the deployment's namespace.
    Namespace(Arc<RuntimeConfig>),
    /// The `ClusterRuntimeConfig` of the name (no namespaced one exists).
    Cluster(Arc<ClusterRuntimeConfig>),
}

impl Source {
    /// The defaults it holds.
    pub fn defaults(&self) -> &RuntimeDefaults {
        match self {
            Source::Namespace(config) => &config.spec.defaults,
            Source::Cluster(config) => &config.spec.defaults,
        }
    }

    /// What `status.effectiveRuntimeConfig` says of it.
    pub fn effective(&self) -> EffectiveRuntimeConfig {
        let hash = spec_hash(self.defaults());
        match self {
            Source::Namespace(config) => EffectiveRuntimeConfig {
                namespace_ref: Some(NamespacedConfigRef {
                    kind: "RuntimeConfig".to_string(),
                    namespace: config.metadata.namespace.clone().unwrap_or_default(),
                    name: config.metadata.name.clone().unwrap_or_default(),
                }),
                cluster_ref: None,
                scope: RuntimeConfigScope::Namespace,
                hash,
            },
            Source::Cluster(config) => EffectiveRuntimeConfig {
                namespace_ref: None,
                cluster_ref: Some(ClusterConfigRef {
                    kind: "ClusterRuntimeConfig".to_string(),
                    name: config.metadata.name.clone().unwrap_or_default(),
                }),
                scope: RuntimeConfigScope::Cluster,
                hash,
            },
        }
    }
}

/// The outcome of resolving a deployment's runtime configuration.
#[derive(Clone, Debug)]
pub enum Resolution {
    /// A config applies.
    Found(Source),
    /// The deployment named none and no `default` exists: no defaults apply, no error.
    DefaultMissing,
    /// The deployment named a config that exists in neither scope: it waits for it.
    NamedMissing(String),
}

impl Resolution {
    /// The config's defaults, if one applies.
    pub fn defaults(&self) -> Option<&RuntimeDefaults> {
        match self {
            Resolution::Found(source) => Some(source.defaults()),
            _ => None,
        }
    }

    /// `status.effectiveRuntimeConfig`: `Some` when a config applies.
    pub fn effective(&self) -> Option<EffectiveRuntimeConfig> {
        match self {
            Resolution::Found(source) => Some(source.effective()),
            _ => None,
        }
    }
}

/// AIM's resolution: the `RuntimeConfig` named `spec.runtimeConfigName` (default `default`) in
/// the deployment's namespace, used alone when found; else the `ClusterRuntimeConfig` of that
/// name; else [`Resolution::DefaultMissing`] for the implicit name, [`Resolution::NamedMissing`]
/// for a given one. The lookups read the caches (`namespaced(namespace, name)`,
/// `cluster(name)`).
pub fn resolve(
    md: &ModelDeployment,
    namespaced: impl FnOnce(&str, &str) -> Option<Arc<RuntimeConfig>>,
    cluster: impl FnOnce(&str) -> Option<Arc<ClusterRuntimeConfig>>,
) -> Resolution {
    let (name, explicit) = requested_name(md);
    let namespace = md.metadata.namespace.as_deref().unwrap_or_default();
    if let Some(config) = namespaced(namespace, name) {
        return Resolution::Found(Source::Namespace(config));
    }
    if let Some(config) = cluster(name) {
        return Resolution::Found(Source::Cluster(config));
    }
    if explicit {
        Resolution::NamedMissing(name.to_string())
    } else {
        Resolution::DefaultMissing
    }
}

/// The hash of a config's defaults: the first 16 bytes of the sha256 of their JSON (fields in
/// declaration order, maps sorted), in hex. Equal defaults hash equal in either scope.
pub fn spec_hash(defaults: &RuntimeDefaults) -> String {
    // Serialising plain structs, `BTreeMap`s and `Vec`s cannot fail; an empty body would still
    // hash deterministically.
    let json = serde_json::to_vec(defaults).unwrap_or_default();
    let digest = Sha256::digest(&json);
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// A deployment with its config's defaults applied, and what is not part of a deployment's
/// spec.
#[derive(Clone, Debug)]
pub struct Effective {
    /// The deployment as every controller reads it: its spec merged with the defaults.
    pub deployment: ModelDeployment,
    /// The deployment's labels to copy to every object it causes (labels of the objects
    /// themselves; the Pod template already has them in `spec.podTemplate`).
    pub propagated_labels: BTreeMap<String, String>,
    /// Defaults of the shared model caches the core creates for the deployment.
    pub model_cache: Option<ModelCacheDefaults>,
}

/// The deployment with `defaults` applied (`None`: unchanged). The deployment's own fields win;
/// per field (docs/platform.md):
/// - `secrets.huggingFaceToken`, `gateway.enabled`: the deployment's when set;
/// - `nodeSelector`, `podTemplate.metadata.labels` and `.annotations`: merged per key, the
///   deployment's value wins; propagated labels join the pod labels below the deployment's own;
/// - `env`: merged by name, the config's entries first, the deployment's entry wins;
/// - `tolerations`, `scaling.autoscaling`: the deployment's replace the config's whole;
/// - `engineImages`: the image of the deployment's engine (`spec.engine.type`, else the one the
///   core selected) becomes `engine.image` when neither `image` nor `engine.image` is set;
/// - `modelCache.storageClassName`: given to volumes whose claim the controllers create
///   (`size`, or a shared `modelCache` volume) and that name no class.
pub fn apply(md: &ModelDeployment, defaults: Option<&RuntimeDefaults>) -> Effective {
    let Some(defaults) = defaults else {
        return Effective {
            deployment: md.clone(),
            propagated_labels: BTreeMap::new(),
            model_cache: None,
        };
    };
    let propagated = propagated_labels(md, defaults);
    let mut out = md.clone();
    let spec = &mut out.spec;

    if let Some(token) = defaults
        .secrets
        .as_ref()
        .and_then(|s| s.hugging_face_token.as_ref())
    {
        let secrets = spec.secrets.get_or_insert_with(Default::default);
        if secrets.hugging_face_token.is_none() {
            secrets.hugging_face_token = Some(token.clone());
        }
    }

    if let Some(selector) = &defaults.node_selector {
        let mut merged = selector.clone();
        merged.extend(spec.node_selector.take().unwrap_or_default());
        spec.node_selector = Some(merged);
    }

    if spec.tolerations.is_none() {
        spec.tolerations.clone_from(&defaults.tolerations);
    }

    let config_meta = defaults
        .pod_template
        .as_ref()
        .and_then(|t| t.metadata.as_ref());
    let config_labels = config_meta.and_then(|m| m.labels.clone());
    let config_annotations = config_meta.and_then(|m| m.annotations.clone());
    if config_labels.is_some() || config_annotations.is_some() || !propagated.is_empty() {
        let template = spec.pod_template.get_or_insert_with(Default::default);
        let meta = template.metadata.get_or_insert_with(Default::default);
        let mut labels = config_labels.unwrap_or_default();
        labels.extend(propagated.clone());
        labels.extend(meta.labels.take().unwrap_or_default());
        meta.labels = (!labels.is_empty()).then_some(labels);
        if let Some(config_annotations) = config_annotations {
            let mut annotations = config_annotations;
            annotations.extend(meta.annotations.take().unwrap_or_default());
            meta.annotations = Some(annotations);
        }
    }

    if let Some(config_env) = &defaults.env {
        let own = spec.env.take().unwrap_or_default();
        let mut merged: Vec<_> = config_env
            .iter()
            .filter(|e| !own.iter().any(|o| o.name == e.name))
            .cloned()
            .collect();
        merged.extend(own);
        spec.env = Some(merged);
    }

    let has_image = spec.image.is_some() || spec.engine.as_ref().is_some_and(|e| e.image.is_some());
    let engine = spec
        .engine
        .as_ref()
        .and_then(|e| e.engine_type)
        .or_else(|| {
            md.status
                .as_ref()
                .and_then(|s| s.engine.as_ref())
                .and_then(|e| e.engine_type)
        });
    if !has_image && let Some(image) = engine.and_then(|e| engine_image(defaults, e)) {
        spec.engine.get_or_insert_with(Default::default).image = Some(image.to_string());
    }

    if let Some(enabled) = defaults.gateway.as_ref().and_then(|g| g.enabled) {
        let gateway = spec.gateway.get_or_insert_with(Default::default);
        if gateway.enabled.is_none() {
            gateway.enabled = Some(enabled);
        }
    }

    if let Some(autoscaling) = &defaults.autoscaling {
        let scaling = spec.scaling.get_or_insert_with(Default::default);
        if scaling.autoscaling.is_none() {
            scaling.autoscaling = Some(autoscaling.clone());
        }
    }

    if let Some(class) = defaults
        .model_cache
        .as_ref()
        .and_then(|c| c.storage_class_name.as_ref())
    {
        let volumes = spec.model.storage.as_mut().and_then(|s| s.volumes.as_mut());
        for volume in volumes.into_iter().flatten() {
            let shared_cache = volume.claim_name.is_none()
                && volume.size.is_none()
                && volume.purpose.as_deref() == Some("modelCache");
            if volume.storage_class_name.is_none() && (volume.size.is_some() || shared_cache) {
                volume.storage_class_name = Some(class.clone());
            }
        }
    }

    Effective {
        deployment: out,
        propagated_labels: propagated,
        model_cache: defaults.model_cache.clone(),
    }
}

/// The config's image for `engine`.
pub fn engine_image(defaults: &RuntimeDefaults, engine: EngineType) -> Option<&str> {
    let images = defaults.engine_images.as_ref()?;
    match engine {
        EngineType::Vllm => images.vllm.as_deref(),
        EngineType::Sglang => images.sglang.as_deref(),
        EngineType::Trtllm => images.trtllm.as_deref(),
        EngineType::Llamacpp => images.llamacpp.as_deref(),
    }
}

/// The deployment's labels whose keys match one of the config's `labelPropagation.match`
/// patterns (when `enabled`). At most [`MAX_PROPAGATED_LABELS`] are taken, in key order.
pub fn propagated_labels(
    md: &ModelDeployment,
    defaults: &RuntimeDefaults,
) -> BTreeMap<String, String> {
    let Some(propagation) = defaults
        .label_propagation
        .as_ref()
        .filter(|p| p.enabled == Some(true))
    else {
        return BTreeMap::new();
    };
    let patterns: Vec<glob::Pattern> = propagation
        .patterns
        .iter()
        .filter_map(|p| glob::Pattern::new(p).ok())
        .collect();
    md.metadata
        .labels
        .iter()
        .flatten()
        .filter(|(key, _)| patterns.iter().any(|p| p.matches(key)))
        .take(MAX_PROPAGATED_LABELS)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The most labels a deployment propagates (a bound on what every object it causes gains).
pub const MAX_PROPAGATED_LABELS: usize = 32;

/// Whether `pattern` is a usable `labelPropagation.match` entry: `None`, or why not (the CRD
/// bounds its characters; a `*` run of two or more is refused here and by the CRD's rule).
pub fn pattern_error(pattern: &str) -> Option<String> {
    if pattern.contains("**") {
        return Some(format!(
            "label pattern '{pattern}': use a single '*' (it already matches any run of characters)"
        ));
    }
    glob::Pattern::new(pattern)
        .err()
        .map(|e| format!("label pattern '{pattern}': {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn md(value: serde_json::Value) -> ModelDeployment {
        let mut base = json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "team-a"},
            "spec": {"model": {"id": "Qwen/Qwen3-0.6B"}},
        });
        json_patch::merge(&mut base, &value);
        serde_json::from_value(base).expect("deployment")
    }

    fn defaults(value: serde_json::Value) -> RuntimeDefaults {
        serde_json::from_value(value).expect("defaults")
    }

    fn namespaced(name: &str, spec: serde_json::Value) -> Arc<RuntimeConfig> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "airunway.ai/v1alpha1", "kind": "RuntimeConfig",
                "metadata": {"name": name, "namespace": "team-a"}, "spec": spec,
            }))
            .expect("config"),
        )
    }

    fn cluster(name: &str, spec: serde_json::Value) -> Arc<ClusterRuntimeConfig> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "airunway.ai/v1alpha1", "kind": "ClusterRuntimeConfig",
                "metadata": {"name": name}, "spec": spec,
            }))
            .expect("config"),
        )
    }

    #[test]
    fn the_namespaced_config_wins_and_is_used_alone() {
        let ns = namespaced("default", json!({"secrets": {"huggingFaceToken": "team"}}));
        let cl = cluster("default", json!({"nodeSelector": {"pool": "gpu"}}));
        let resolution = resolve(
            &md(json!({})),
            |namespace, name| (namespace == "team-a" && name == "default").then(|| ns.clone()),
            |_| Some(cl.clone()),
        );
        let effective = resolution.effective().expect("found");
        assert_eq!(effective.scope, RuntimeConfigScope::Namespace);
        assert_eq!(
            effective.namespace_ref.expect("namespace ref").namespace,
            "team-a"
        );
        assert!(effective.cluster_ref.is_none());
        // Only the namespaced defaults apply: no node selector from the cluster config.
        let applied = apply(&md(json!({})), resolution.defaults());
        assert_eq!(applied.deployment.spec.node_selector, None);
        assert_eq!(
            applied
                .deployment
                .spec
                .secrets
                .and_then(|s| s.hugging_face_token),
            Some("team".to_string())
        );
    }

    #[test]
    fn the_cluster_config_applies_when_the_namespace_has_none_of_the_name() {
        let cl = cluster("gpu-pool", json!({}));
        let resolution = resolve(
            &md(json!({"spec": {"runtimeConfigName": "gpu-pool"}})),
            |_, _| None,
            |name| (name == "gpu-pool").then(|| cl.clone()),
        );
        let effective = resolution.effective().expect("found");
        assert_eq!(effective.scope, RuntimeConfigScope::Cluster);
        assert!(effective.namespace_ref.is_none());
        assert_eq!(effective.cluster_ref.expect("cluster ref").name, "gpu-pool");
    }

    #[test]
    fn a_missing_default_is_no_error_and_a_missing_named_config_is() {
        assert!(matches!(
            resolve(&md(json!({})), |_, _| None, |_| None),
            Resolution::DefaultMissing
        ));
        // Naming `default` explicitly makes it required.
        let named = |name: &str| {
            resolve(
                &md(json!({"spec": {"runtimeConfigName": name}})),
                |_, _| None,
                |_| None,
            )
        };
        assert!(matches!(named("default"), Resolution::NamedMissing(n) if n == "default"));
        assert!(matches!(named("team-x"), Resolution::NamedMissing(n) if n == "team-x"));
    }

    #[test]
    fn the_hash_follows_the_defaults_not_the_scope_or_metadata() {
        let a = namespaced("default", json!({"nodeSelector": {"pool": "a"}}));
        let b = cluster("other", json!({"nodeSelector": {"pool": "a"}}));
        let c = cluster("other", json!({"nodeSelector": {"pool": "b"}}));
        let hash = |s: Source| s.effective().hash;
        assert_eq!(
            hash(Source::Namespace(a.clone())),
            hash(Source::Cluster(b.clone()))
        );
        assert_ne!(hash(Source::Cluster(b)), hash(Source::Cluster(c)));
        let h = hash(Source::Namespace(a));
        assert_eq!(h.len(), 32);
        assert!(h.bytes().all(|b| b.is_ascii_hexdigit()));
        // Key order in the source document does not matter.
        let x = defaults(json!({"nodeSelector": {"a": "1", "b": "2"}}));
        let y = defaults(json!({"nodeSelector": {"b": "2", "a": "1"}}));
        assert_eq!(spec_hash(&x), spec_hash(&y));
    }

    #[test]
    fn scalars_default_only_what_the_deployment_left_out() {
        let config = defaults(json!({
            "secrets": {"huggingFaceToken": "platform-token"},
            "gateway": {"enabled": false},
        }));
        let own = md(json!({"spec": {"secrets": {"huggingFaceToken": "mine"},
                                     "gateway": {"enabled": true}}}));
        let out = apply(&own, Some(&config)).deployment.spec;
        assert_eq!(
            out.secrets.and_then(|s| s.hugging_face_token).as_deref(),
            Some("mine")
        );
        assert_eq!(out.gateway.and_then(|g| g.enabled), Some(true));
        let bare = apply(&md(json!({})), Some(&config)).deployment.spec;
        assert_eq!(
            bare.secrets.and_then(|s| s.hugging_face_token).as_deref(),
            Some("platform-token")
        );
        assert_eq!(bare.gateway.and_then(|g| g.enabled), Some(false));
    }

    #[test]
    fn maps_merge_per_key_and_lists_follow_their_rule() {
        let config = defaults(json!({
            "nodeSelector": {"pool": "gpu", "zone": "a"},
            "tolerations": [{"key": "gpu", "operator": "Exists"}],
            "podTemplate": {"metadata": {"labels": {"cost": "platform", "tier": "x"},
                                         "annotations": {"a": "config"}}},
            "env": [{"name": "HF_HUB_OFFLINE", "value": "0"}, {"name": "LOG", "value": "info"}],
        }));
        let own = md(json!({"spec": {
            "nodeSelector": {"zone": "b"},
            "tolerations": [{"key": "spot", "operator": "Exists"}],
            "podTemplate": {"metadata": {"labels": {"tier": "mine"}}},
            "env": [{"name": "LOG", "value": "debug"}, {"name": "X", "value": "1"}],
        }}));
        let spec = apply(&own, Some(&config)).deployment.spec;
        assert_eq!(
            spec.node_selector,
            Some(BTreeMap::from([
                ("pool".to_string(), "gpu".to_string()),
                ("zone".to_string(), "b".to_string()),
            ]))
        );
        let tolerations = spec.tolerations.expect("tolerations");
        assert_eq!(tolerations.len(), 1, "the deployment's list replaces");
        assert_eq!(tolerations[0].key.as_deref(), Some("spot"));
        let meta = spec
            .pod_template
            .and_then(|t| t.metadata)
            .expect("pod metadata");
        assert_eq!(
            meta.labels,
            Some(BTreeMap::from([
                ("cost".to_string(), "platform".to_string()),
                ("tier".to_string(), "mine".to_string()),
            ]))
        );
        assert_eq!(
            meta.annotations,
            Some(BTreeMap::from([("a".to_string(), "config".to_string())]))
        );
        let env: Vec<(String, Option<String>)> = spec
            .env
            .expect("env")
            .into_iter()
            .map(|e| (e.name, e.value))
            .collect();
        assert_eq!(
            env,
            vec![
                ("HF_HUB_OFFLINE".to_string(), Some("0".to_string())),
                ("LOG".to_string(), Some("debug".to_string())),
                ("X".to_string(), Some("1".to_string())),
            ],
            "config entries first, the deployment's entry wins by name"
        );
        // Without tolerations of its own, the deployment takes the config's.
        let bare = apply(&md(json!({})), Some(&config)).deployment.spec;
        assert_eq!(bare.tolerations.map(|t| t.len()), Some(1));
    }

    #[test]
    fn the_engine_image_follows_the_engine_and_never_overrides_an_image() {
        let config = defaults(json!({"engineImages": {"vllm": "registry.example/vllm:1",
                                                      "sglang": "registry.example/sglang:1"}}));
        let vllm = md(json!({"spec": {"engine": {"type": "vllm"}}}));
        let image = |m: &ModelDeployment| {
            apply(m, Some(&config))
                .deployment
                .spec
                .engine
                .and_then(|e| e.image)
        };
        assert_eq!(image(&vllm).as_deref(), Some("registry.example/vllm:1"));
        // The engine the core selected counts when the spec names none.
        let selected = md(json!({"status": {"engine": {"type": "sglang"}}}));
        assert_eq!(
            image(&selected).as_deref(),
            Some("registry.example/sglang:1")
        );
        // No engine known yet: no image.
        assert_eq!(image(&md(json!({}))), None);
        // An image of the deployment's own (either field) wins.
        let own = md(json!({"spec": {"engine": {"type": "vllm"}, "image": "mine:1"}}));
        assert_eq!(image(&own), None);
        assert_eq!(
            apply(&own, Some(&config)).deployment.spec.image.as_deref(),
            Some("mine:1")
        );
        // An engine without a configured image: nothing.
        let trt = md(json!({"spec": {"engine": {"type": "trtllm"}}}));
        assert_eq!(image(&trt), None);
    }

    #[test]
    fn autoscaling_and_storage_class_defaults() {
        let config = defaults(json!({
            "autoscaling": {"maxReplicas": 4, "metrics": [{"type": "queueDepth", "target": "5"}]},
            "modelCache": {"storageClassName": "fast-nvme", "size": "200Gi"},
        }));
        let own = md(
            json!({"spec": {"model": {"id": "Qwen/Qwen3-0.6B", "storage": {"volumes": [
                {"name": "shared", "purpose": "modelCache"},
                {"name": "sized", "size": "10Gi"},
                {"name": "existing", "claimName": "mine"},
                {"name": "classed", "size": "1Gi", "storageClassName": "slow"},
            ]}}}}),
        );
        let effective = apply(&own, Some(&config));
        let spec = &effective.deployment.spec;
        assert_eq!(
            spec.scaling
                .as_ref()
                .and_then(|s| s.autoscaling.as_ref())
                .map(|a| a.max_replicas),
            Some(4)
        );
        let classes: Vec<Option<&str>> = spec
            .model
            .storage
            .as_ref()
            .and_then(|s| s.volumes.as_ref())
            .expect("volumes")
            .iter()
            .map(|v| v.storage_class_name.as_deref())
            .collect();
        assert_eq!(
            classes,
            vec![Some("fast-nvme"), Some("fast-nvme"), None, Some("slow")]
        );
        assert_eq!(
            effective.model_cache.and_then(|c| c.size).as_deref(),
            Some("200Gi")
        );
        // The deployment's own autoscaling block replaces the config's whole.
        let scaled = md(
            json!({"spec": {"scaling": {"autoscaling": {"maxReplicas": 2,
            "metrics": [{"type": "kvCacheUsage", "target": "0.8"}]}}}}),
        );
        let spec = apply(&scaled, Some(&config)).deployment.spec;
        let autoscaling = spec.scaling.and_then(|s| s.autoscaling).expect("own");
        assert_eq!(autoscaling.max_replicas, 2);
        assert_eq!(autoscaling.metrics.len(), 1);
    }

    #[test]
    fn label_patterns_match_exact_keys_prefixes_and_inner_wildcards() {
        let config = defaults(json!({"labelPropagation": {"enabled": true, "match": [
            "org.example/cost-center", "compliance.example/*", "compliance.*/severity",
        ]}}));
        let own = md(json!({"metadata": {"labels": {
            "org.example/cost-center": "eng-ml",
            "org.example/team": "not-matched",
            "compliance.example/pci": "yes",
            "compliance.sec/severity": "high",
            "compliance.sec/other": "no",
            "app": "x",
        }}}));
        let propagated = propagated_labels(&own, &config);
        assert_eq!(
            propagated.keys().map(String::as_str).collect::<Vec<_>>(),
            vec![
                "compliance.example/pci",
                "compliance.sec/severity",
                "org.example/cost-center"
            ]
        );
        // They join the pod labels, below the deployment's own pod labels.
        let own_pod = md(json!({
            "metadata": {"labels": {"org.example/cost-center": "eng-ml"}},
            "spec": {"podTemplate": {"metadata": {"labels": {"org.example/cost-center": "pod"}}}},
        }));
        let effective = apply(&own_pod, Some(&config));
        assert_eq!(
            effective.propagated_labels.get("org.example/cost-center"),
            Some(&"eng-ml".to_string())
        );
        let pod_labels = effective
            .deployment
            .spec
            .pod_template
            .and_then(|t| t.metadata)
            .and_then(|m| m.labels)
            .expect("labels");
        assert_eq!(pod_labels["org.example/cost-center"], "pod");
        // Off unless enabled.
        let off = defaults(json!({"labelPropagation": {"match": ["*"]}}));
        assert!(propagated_labels(&own, &off).is_empty());
    }

    #[test]
    fn pattern_errors_name_the_pattern() {
        assert_eq!(pattern_error("org.example/*"), None);
        assert!(
            pattern_error("a**b")
                .expect("refused")
                .contains("label pattern 'a**b'")
        );
    }

    #[test]
    fn without_a_config_nothing_changes() {
        let own = md(json!({"metadata": {"labels": {"a": "b"}}}));
        let effective = apply(&own, None);
        assert_eq!(
            serde_json::to_value(&effective.deployment).expect("json"),
            serde_json::to_value(&own).expect("json")
        );
        assert!(effective.propagated_labels.is_empty());
        assert!(effective.model_cache.is_none());
    }
}
