//! The core's decision with runtime configurations (pure): what each resolution outcome
//! writes, that a written status needs no second write, that a changed config does, and that
//! a deployment whose named config is gone keeps everything it has.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use airunway_api::constants::{condition_types, reasons};
use airunway_api::runtime_config::{Resolution, Source, spec_hash};
use airunway_api::v1alpha1::{
    ClusterRuntimeConfig, ConditionStatus, InferenceProviderConfig, ModelDeployment, Phase,
    RuntimeConfig,
};
use airunway_core::runtime_config::{self, Plan};
use airunway_core::selection::{RuleSet, provider_views};
use airunway_core::status::{
    DesiredCoreStatus, decide, desired_with_runtime_config, is_current, status_patch,
};
use serde_json::{Value, json};

const NOW: &str = "2026-06-01T12:00:00Z";

fn kaito() -> InferenceProviderConfig {
    let path = format!(
        "{}/tests/fixtures/shipped-providers/kaito.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut value: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    value["metadata"]["generation"] = json!(1);
    value["status"] = json!({"ready": true, "lastHeartbeat": "2026-06-01T11:59:40Z"});
    serde_json::from_value(value).unwrap()
}

fn md(spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "m", "namespace": "team-a", "generation": 2}, "spec": spec,
    }))
    .unwrap()
}

fn namespaced(spec: Value) -> Arc<RuntimeConfig> {
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "RuntimeConfig",
            "metadata": {"name": "default", "namespace": "team-a"}, "spec": spec,
        }))
        .unwrap(),
    )
}

fn cluster(spec: Value) -> Arc<ClusterRuntimeConfig> {
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ClusterRuntimeConfig",
            "metadata": {"name": "default"}, "spec": spec,
        }))
        .unwrap(),
    )
}

/// The whole pure decision, as the reconcile makes it.
fn decide_all(md: &ModelDeployment, resolution: &Resolution) -> (Plan, DesiredCoreStatus) {
    let plan = runtime_config::plan(md, resolution);
    let providers = provider_views(&[kaito()]);
    let decision = match &plan {
        Plan::Proceed { effective, .. } => Some(decide(
            &effective.deployment,
            &providers,
            true,
            &RuleSet::default(),
        )),
        _ => None,
    };
    let desired = desired_with_runtime_config(md, &plan, decision.as_ref());
    (plan, desired)
}

/// `md` after the core's apply of `desired`: the status the patch carries, owned by the core.
fn written(md: &ModelDeployment, desired: &DesiredCoreStatus) -> ModelDeployment {
    let patch = status_patch(md, desired, NOW.parse().unwrap());
    let mut value = serde_json::to_value(md).unwrap();
    value["status"] = patch["status"].clone();
    let mut fields = serde_json::Map::new();
    for (key, value) in patch["status"].as_object().unwrap() {
        if key != "conditions" {
            fields.insert(format!("f:{key}"), fields_of(value));
        }
    }
    let conditions: serde_json::Map<String, Value> = desired
        .conditions
        .iter()
        .map(|c| (format!("k:{{\"type\":\"{}\"}}", c.type_), json!({".": {}})))
        .collect();
    fields.insert("f:conditions".into(), Value::Object(conditions));
    value["metadata"]["managedFields"] = json!([
        {"manager": "airunway-core", "operation": "Apply", "subresource": "status",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:status": fields}},
    ]);
    serde_json::from_value(value).unwrap()
}

/// The `fieldsV1` set of a JSON value (objects by key, leaves empty).
fn fields_of(value: &Value) -> Value {
    match value.as_object() {
        Some(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (format!("f:{k}"), fields_of(v)))
                .collect(),
        ),
        None => json!({}),
    }
}

fn condition<'a>(
    d: &'a DesiredCoreStatus,
    t: &str,
) -> &'a airunway_api::conditions::DesiredCondition {
    d.conditions.iter().find(|c| c.type_ == t).unwrap()
}

#[test]
fn a_found_config_is_referenced_with_its_hash_and_its_defaults_reach_selection() {
    // The config gives the engine: the deployment alone would auto-select.
    let config = namespaced(json!({"env": [{"name": "LOG", "value": "debug"}]}));
    let before = md(json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}}));
    let (_, d) = decide_all(
        &before,
        &Resolution::Found(Source::Namespace(config.clone())),
    );
    let c = condition(&d, condition_types::RUNTIME_CONFIG_RESOLVED);
    assert_eq!(c.status, ConditionStatus::True);
    assert_eq!(c.reason, reasons::runtime_config::NAMESPACE_CONFIG);
    assert_eq!(
        d.conditions[0].type_,
        condition_types::RUNTIME_CONFIG_RESOLVED
    );
    let reference = d.runtime_config.clone().unwrap();
    assert_eq!(reference.hash, spec_hash(&config.spec.defaults));
    assert!(reference.cluster_ref.is_none());
    let patch = status_patch(&before, &d, NOW.parse().unwrap());
    assert_eq!(
        patch["status"]["effectiveRuntimeConfig"],
        json!({"namespaceRef": {"kind": "RuntimeConfig", "namespace": "team-a", "name": "default"},
               "scope": "Namespace", "hash": reference.hash})
    );
    assert_eq!(d.provider.as_ref().map(|p| p.0.as_str()), Some("kaito"));

    // Written once, nothing more to write; a changed config is one more write.
    let after = written(&before, &d);
    let (_, again) = decide_all(&after, &Resolution::Found(Source::Namespace(config)));
    assert!(is_current(&after, &again), "no second write");
    let changed = namespaced(json!({"env": [{"name": "LOG", "value": "info"}]}));
    let (plan, d2) = decide_all(&after, &Resolution::Found(Source::Namespace(changed)));
    assert!(!is_current(&after, &d2), "a new hash is written");
    let told = runtime_config::events(&after, &plan);
    assert_eq!(told.len(), 1);
    assert_eq!(told[0].reason, "RuntimeConfigChanged");

    // The cluster config instead: the other reference, only one of them.
    let (_, d3) = decide_all(
        &after,
        &Resolution::Found(Source::Cluster(cluster(json!({})))),
    );
    let reference = d3.runtime_config.unwrap();
    assert!(reference.namespace_ref.is_none());
    assert_eq!(reference.cluster_ref.unwrap().name, "default");
}

#[test]
fn a_missing_default_proceeds_and_removes_an_earlier_reference() {
    let before = md(json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}}));
    let (_, d) = decide_all(&before, &Resolution::DefaultMissing);
    let c = condition(&d, condition_types::RUNTIME_CONFIG_RESOLVED);
    assert_eq!(
        (c.status, c.reason.as_str()),
        (ConditionStatus::True, "DefaultRuntimeConfigNotFound")
    );
    assert!(d.runtime_config.is_none());
    assert_eq!(d.provider.as_ref().map(|p| p.0.as_str()), Some("kaito"));
    // A deployment that had a config whose `default` was deleted: the reference goes.
    let config = cluster(json!({}));
    let (_, found) = decide_all(&before, &Resolution::Found(Source::Cluster(config)));
    let had = written(&before, &found);
    let (_, gone) = decide_all(&had, &Resolution::DefaultMissing);
    assert!(!is_current(&had, &gone));
    let patch = status_patch(&had, &gone, NOW.parse().unwrap());
    assert!(patch["status"].get("effectiveRuntimeConfig").is_none());
}

#[test]
fn a_missing_named_config_holds_the_deployment_pending_without_selection() {
    let before = md(
        json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "runtimeConfigName": "gpu"}),
    );
    let (plan, d) = decide_all(&before, &Resolution::NamedMissing("gpu".into()));
    assert!(matches!(plan, Plan::Wait { .. }));
    let c = condition(&d, condition_types::RUNTIME_CONFIG_RESOLVED);
    assert_eq!(c.status, ConditionStatus::False);
    assert_eq!(c.reason, "RuntimeConfigNotFound");
    let (phase, message) = d.phase.clone().unwrap();
    assert_eq!(phase, Phase::Pending);
    assert!(message.contains("create one of them, or change spec.runtimeConfigName"));
    assert_eq!(d.engine, None);
    assert_eq!(d.provider, None);
    let reconciling = condition(&d, condition_types::RECONCILING);
    assert_eq!(
        (reconciling.status, reconciling.reason.as_str()),
        (ConditionStatus::True, "RuntimeConfigNotFound")
    );
    assert!(
        !d.conditions
            .iter()
            .any(|c| c.type_ == condition_types::PROVIDER_SELECTED)
    );
    let after = written(&before, &d);
    let (_, again) = decide_all(&after, &Resolution::NamedMissing("gpu".into()));
    assert!(is_current(&after, &again), "no write per reconcile");
    // The config appears: it proceeds.
    let config = cluster(json!({}));
    let (_, found) = decide_all(&after, &Resolution::Found(Source::Cluster(config)));
    assert_eq!(found.provider.as_ref().map(|p| p.0.as_str()), Some("kaito"));
    assert!(!is_current(&after, &found));
}

#[test]
fn a_running_deployment_whose_named_config_is_deleted_keeps_what_it_has() {
    let before = md(
        json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "runtimeConfigName": "gpu"}),
    );
    let config = cluster(json!({"nodeSelector": {"pool": "gpu"}}));
    let (_, found) = decide_all(&before, &Resolution::Found(Source::Cluster(config)));
    let running = written(&before, &found);
    let (plan, kept) = decide_all(&running, &Resolution::NamedMissing("gpu".into()));
    assert!(matches!(plan, Plan::Keep { .. }));
    assert_eq!(kept.provider, found.provider, "the provider stays");
    assert_eq!(kept.engine, found.engine);
    assert_eq!(
        kept.runtime_config, found.runtime_config,
        "the last config stays"
    );
    let c = condition(&kept, condition_types::RUNTIME_CONFIG_RESOLVED);
    assert_eq!(c.status, ConditionStatus::False);
    assert!(c.message.contains("keeps running as last applied"));
    // Every other condition the core wrote is there as it was.
    for before in &found.conditions {
        if before.type_ != condition_types::RUNTIME_CONFIG_RESOLVED {
            assert!(kept.conditions.contains(before), "{} kept", before.type_);
        }
    }
    let after = written(&running, &kept);
    let (_, again) = decide_all(&after, &Resolution::NamedMissing("gpu".into()));
    assert!(is_current(&after, &again));
}

#[test]
fn invalid_defaults_are_reported_naming_the_config() {
    // An env name the validation refuses, brought by the config.
    let before = md(json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}}));
    let config = namespaced(json!({"env": [{"name": "A=B", "value": "x"}]}));
    let plan = runtime_config::plan(&before, &Resolution::Found(Source::Namespace(config)));
    let Plan::Proceed {
        effective, source, ..
    } = &plan
    else {
        panic!("proceeds");
    };
    let providers = provider_views(&[kaito()]);
    let mut decision = decide(&effective.deployment, &providers, true, &RuleSet::default());
    let own = decide(&before, &providers, true, &RuleSet::default());
    assert!(own.validation_errors.is_empty());
    assert!(!decision.validation_errors.is_empty());
    runtime_config::attribute(
        &mut decision.validation_errors,
        &own.validation_errors,
        source.as_deref().unwrap(),
    );
    let d = desired_with_runtime_config(&before, &plan, Some(&decision));
    let validated = condition(&d, condition_types::VALIDATED);
    assert_eq!(validated.status, ConditionStatus::False);
    assert!(
        validated
            .message
            .contains("(from RuntimeConfig team-a/default)"),
        "{}",
        validated.message
    );
    assert_eq!(d.phase.unwrap().0, Phase::Failed);
}

/// A deployment labelled for cost allocation, with a managed model cache volume (its own
/// claim and cache, downloaded by a Job).
fn labelled() -> ModelDeployment {
    serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "m", "namespace": "team-a", "uid": "u-1",
                     "labels": {"org.example/team": "ml", "other": "x"}},
        "spec": {"model": {"id": "a/b", "storage": {"volumes": [
            {"name": "cache", "purpose": "modelCache", "size": "10Gi"}]}}},
    }))
    .unwrap()
}

fn propagating() -> std::collections::BTreeMap<String, String> {
    let config =
        namespaced(json!({"labelPropagation": {"enabled": true, "match": ["org.example/*"]}}));
    airunway_api::runtime_config::propagated_labels(&labelled(), &config.spec.defaults)
}

#[test]
fn labels_propagate_to_the_claim_the_cache_its_job_and_pod() {
    use airunway_core::model_cache::{CacheConfig, deployment, render};
    let labels = propagating();
    assert_eq!(labels.len(), 1);
    let md = labelled();
    let plan = deployment::plan_labeled(&md, &|_| None, None, &CacheConfig::default(), &labels);
    let claim = &plan.create_claims[0];
    assert_eq!(claim["metadata"]["labels"]["org.example/team"], "ml");
    assert!(claim["metadata"]["labels"].get("other").is_none());
    assert_eq!(
        claim["metadata"]["labels"]["airunway.ai/managed-by"],
        "airunway"
    );
    let cache_body = plan.create_cache.clone().unwrap();
    assert_eq!(cache_body["metadata"]["labels"]["org.example/team"], "ml");
    assert_eq!(
        cache_body["metadata"]["annotations"]["airunway.ai/propagated-labels"],
        "org.example/team"
    );
    // The cache's download Job and its Pod take them from the cache.
    let cache: airunway_api::v1alpha1::ModelCache = serde_json::from_value(cache_body).unwrap();
    let job = render::job(&cache, &CacheConfig::default(), "m-cache");
    assert_eq!(job["metadata"]["labels"]["org.example/team"], "ml");
    assert_eq!(
        job["spec"]["template"]["metadata"]["labels"]["org.example/team"],
        "ml"
    );
    // Without a config: nothing more than before.
    let plain = deployment::plan(&md, &|_| None, None, &CacheConfig::default());
    assert!(
        plain.create_claims[0]["metadata"]
            .get("annotations")
            .is_none()
    );
}

#[test]
fn a_changed_label_relabels_only_the_objects_that_carry_it() {
    use airunway_core::model_cache::{CacheConfig, deployment};
    let md = labelled();
    let labels = propagating();
    let first = deployment::plan_labeled(&md, &|_| None, None, &CacheConfig::default(), &labels);
    let mut claim = first.create_claims[0].clone();
    claim["status"] = json!({"phase": "Bound"});
    let claim: k8s_openapi::api::core::v1::PersistentVolumeClaim =
        serde_json::from_value(claim).unwrap();
    let claim = Arc::new(claim);
    let claims = |name: &str| (name == "m-cache").then(|| claim.clone());
    let cache: airunway_api::v1alpha1::ModelCache =
        serde_json::from_value(first.create_cache.clone().unwrap()).unwrap();
    // Unchanged labels: nothing to patch.
    let same =
        deployment::plan_labeled(&md, &claims, Some(&cache), &CacheConfig::default(), &labels);
    assert!(same.relabel.is_empty());
    assert!(same.create_claims.is_empty());
    // A new value: one patch each for the claim and the cache.
    let changed =
        std::collections::BTreeMap::from([("org.example/team".to_string(), "infra".to_string())]);
    let plan = deployment::plan_labeled(
        &md,
        &claims,
        Some(&cache),
        &CacheConfig::default(),
        &changed,
    );
    let kinds: Vec<deployment::Relabel> = plan.relabel.iter().map(|(k, _, _)| *k).collect();
    assert_eq!(
        kinds,
        [deployment::Relabel::Claim, deployment::Relabel::Cache]
    );
    assert_eq!(
        plan.relabel[0].2["metadata"]["labels"]["org.example/team"],
        "infra"
    );
}

#[test]
fn labels_propagate_to_the_gateway_objects_and_the_autoscaler() {
    use airunway_core::gateway::names::Names;
    use airunway_core::gateway::render::{self, Owner, PoolRef};
    use airunway_core::gateway::select::GatewayRef;
    let owner = Owner {
        name: "m".into(),
        namespace: "team-a".into(),
        uid: "u-1".into(),
        propagated: propagating(),
    };
    let names = Names::of("m");
    let gateway = GatewayRef {
        namespace: "gw".into(),
        name: "inference".into(),
    };
    let pool = PoolRef {
        namespace: "team-a".into(),
        name: names.pool.clone(),
    };
    let route = render::route(&owner, &names, &gateway, &pool, &["qwen"], "h");
    assert_eq!(route["metadata"]["labels"]["org.example/team"], "ml");
    let selector = render::pool_selector(None, "m");
    let rendered_pool = render::pool(&owner, &names, &selector, 8000, "h");
    assert_eq!(
        rendered_pool["metadata"]["labels"]["org.example/team"],
        "ml"
    );
    for object in render::endpoint_picker(&owner, &names, "epp:1", "config") {
        assert_eq!(
            object["metadata"]["labels"]["org.example/team"], "ml",
            "{}",
            object["kind"]
        );
    }
    assert_eq!(owner.label_inputs(), ["label:org.example/team=ml"]);

    let object = json!({"metadata": {"name": "m", "labels": {"airunway.ai/managed-by": "airunway"},
        "annotations": {"airunway.ai/autoscaling-inputs-hash": "old"}}, "spec": {"maxReplicaCount": 4}});
    let unlabelled =
        airunway_core::autoscaling::render::with_labels(object.clone(), &Default::default());
    assert_eq!(unlabelled, object);
    let labelled = airunway_core::autoscaling::render::with_labels(object, &propagating());
    assert_eq!(labelled["metadata"]["labels"]["org.example/team"], "ml");
    assert_ne!(
        labelled["metadata"]["annotations"]["airunway.ai/autoscaling-inputs-hash"], "old",
        "the hash covers the labels"
    );
}
