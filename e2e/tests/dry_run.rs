//! The dry-run preview (issue 40) on the real control plane, with the real core and the real
//! `airunway-provider-vllm` (running as its ServiceAccount with the shipped RBAC): a
//! ModelDeployment annotated `airunway.ai/dry-run: "true"` is selected and validated by the
//! core, rendered and checked by the provider, and nothing is created upstream; the render is in
//! the ConfigMap `<name>-preview` (owned by the deployment, labelled managed-by), a
//! `DryRunRendered` event lists it, and the status says it is a preview. Removing the
//! annotation deploys for real and deletes the ConfigMap. The core creates nothing for a dry run
//! either (no model cache, claim or autoscaler); its conditions say what it would create.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use airunway_api::constants::{
    annotations, condition_types, dry_run, event_reasons, labels, reasons,
};
use airunway_api::v1alpha1::{
    ConditionStatus, InferenceProviderConfig, ModelCache, ModelDeployment, NotReadyReason, Phase,
};
use airunway_e2e::stack::{self, FAST_HEALTH, Running};
use airunway_e2e::wait::{eventually, wait_deleted, wait_for};
use airunway_e2e::{TestEnv, cluster_lock};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Service};
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

/// The core and the vLLM provider.
async fn start(env: &TestEnv) -> (Running, Running) {
    airunway_e2e::providers::delete_all(&env.client).await;
    let core = stack::start_core(env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let identity = stack::service_account_identity(
        env,
        "deploy/providers/vllm/rbac.yaml",
        "airunway-provider-vllm",
    )
    .await;
    let provider = stack::start_provider(
        env,
        "airunway-provider-vllm",
        &identity,
        &["--heartbeat-interval=1s", "--finalizer-timeout=30s"],
        "vllm-0",
    )
    .await;
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, "vllm", WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    (core, provider)
}

/// A Qwen3 deployment on the vLLM provider, its image pinned by digest (nothing to resolve),
/// with the dry-run annotation.
fn previewed(name: &str) -> ModelDeployment {
    serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": name, "annotations": {annotations::DRY_RUN: "true"}},
        "spec": {"model": {"id": "Qwen/Qwen3-0.6B"},
                 "engine": {"type": "vllm",
                            "image": format!("vllm/vllm-openai@sha256:{}", "a".repeat(64))},
                 "resources": {"gpu": {"count": 1}},
                 "provider": {"name": "vllm"}},
    }))
    .unwrap()
}

/// The autoscalers of `kind` (`ScaledObject` or `HorizontalPodAutoscaler`) in the test's
/// namespace.
fn autoscalers(env: &TestEnv, kind: &str) -> Api<DynamicObject> {
    let (gvk, plural) = match kind {
        "ScaledObject" => (
            GroupVersionKind::gvk("keda.sh", "v1alpha1", kind),
            "scaledobjects",
        ),
        _ => (
            GroupVersionKind::gvk("autoscaling", "v2", kind),
            "horizontalpodautoscalers",
        ),
    };
    let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
    Api::namespaced_with(env.client.clone(), &env.namespace, &resource)
}

fn not_ready_reason(md: &ModelDeployment) -> Option<NotReadyReason> {
    md.status
        .as_ref()
        .and_then(|s| s.not_ready.as_ref())
        .map(|n| n.reason)
}

fn condition(md: &ModelDeployment, type_: &str) -> Option<(ConditionStatus, String, String)> {
    md.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == type_))
        .map(|c| {
            (
                c.status,
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

#[tokio::test]
async fn a_dry_run_renders_into_a_config_map_and_removing_the_annotation_deploys() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("dry-run").await;
    let (_core, _provider) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let services: Api<Service> = Api::namespaced(env.client.clone(), &env.namespace);
    let config_maps: Api<ConfigMap> = Api::namespaced(env.client.clone(), &env.namespace);
    let preview_name = format!("preview{}", dry_run::CONFIG_MAP_SUFFIX);

    mds.create(&PostParams::default(), &previewed("preview"))
        .await
        .unwrap();
    let md = wait_for(&mds, "preview", WAIT, "the dry-run status", |md| {
        not_ready_reason(md) == Some(NotReadyReason::DryRun)
    })
    .await;

    // The core selected and validated as usual.
    let status = md.status.clone().unwrap();
    assert_eq!(
        status.provider.as_ref().and_then(|p| p.name.as_deref()),
        Some("vllm")
    );
    assert_eq!(md.phase(), Some(Phase::Pending));
    let (ready, reason, message) = condition(&md, condition_types::READY).unwrap();
    assert_eq!(
        (ready, reason.as_str()),
        (ConditionStatus::False, reasons::DRY_RUN)
    );
    assert!(
        message.contains(&preview_name) && message.contains(annotations::DRY_RUN),
        "{message}"
    );
    let (created, reason, _) = condition(&md, condition_types::RESOURCE_CREATED).unwrap();
    assert_eq!(
        (created, reason.as_str()),
        (ConditionStatus::False, reasons::DRY_RUN)
    );
    let (stalled, ..) = condition(&md, condition_types::STALLED).unwrap();
    assert_eq!(
        stalled,
        ConditionStatus::True,
        "a preview waits for someone"
    );

    // The render, in the ConfigMap owned by the deployment.
    let preview = config_maps.get(&preview_name).await.unwrap();
    let owner = &preview.metadata.owner_references.clone().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("ModelDeployment", "preview", Some(true))
    );
    assert_eq!(owner.uid, md.metadata.uid.clone().unwrap());
    assert_eq!(
        preview
            .metadata
            .labels
            .clone()
            .unwrap()
            .get(labels::MANAGED_BY)
            .map(String::as_str),
        Some(labels::MANAGED_BY_VALUE)
    );
    let data = preview.data.clone().unwrap();
    assert_eq!(
        data.get(dry_run::PROVIDER_KEY).map(String::as_str),
        Some("vllm")
    );
    let documents: Vec<Value> =
        serde_saphyr::from_multiple(data.get(dry_run::RENDER_KEY).unwrap()).unwrap();
    let kinds: Vec<(&str, &str)> = documents
        .iter()
        .map(|d| {
            (
                d["kind"].as_str().unwrap(),
                d["metadata"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(
        kinds.contains(&("Deployment", "preview")) && kinds.contains(&("Service", "preview")),
        "{kinds:?}"
    );
    let rendered = documents
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .unwrap();
    assert_eq!(rendered["metadata"]["namespace"], env.namespace.as_str());
    assert_eq!(
        rendered["metadata"]["ownerReferences"][0]["uid"],
        md.metadata.uid.clone().unwrap()
    );

    // The event lists the objects.
    env.wait_for_event(event_reasons::DRY_RUN_RENDERED, |note| {
        note.contains(&preview_name) && note.contains("Deployment preview")
    })
    .await;

    // Nothing upstream, also after the provider had time for more reconciles.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(deployments.get_opt("preview").await.unwrap().is_none());
    assert!(services.get_opt("preview").await.unwrap().is_none());
    assert_eq!(
        env.event_notes(event_reasons::RESOURCE_CREATED).await,
        Vec::<String>::new()
    );
    // Written once: the same render is not written again.
    let again = config_maps.get(&preview_name).await.unwrap();
    assert_eq!(
        again.metadata.resource_version,
        preview.metadata.resource_version
    );

    // Removing the annotation deploys for real and deletes the preview.
    mds.patch(
        "preview",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {annotations::DRY_RUN: null}}})),
    )
    .await
    .unwrap();
    wait_for(&deployments, "preview", WAIT, "created", |_| true).await;
    wait_for(&services, "preview", WAIT, "created", |_| true).await;
    wait_deleted(&config_maps, &preview_name, WAIT).await;
    eventually("the status to leave the dry run", WAIT, || async {
        let md = mds.get("preview").await.map_err(|e| e.to_string())?;
        match not_ready_reason(&md) {
            Some(NotReadyReason::DryRun) => Err("still DryRun".to_string()),
            _ => Ok(()),
        }
    })
    .await;
}

/// The core's side: a dry run of a deployment with a shared model cache and an autoscaler gets
/// neither (no `ModelCache`, claim, ScaledObject or HorizontalPodAutoscaler), its conditions name what the core
/// would create, and the provider still renders the preview (the storage gate does not wait on
/// storage the core will not create). Removing the annotation creates them.
#[tokio::test]
async fn a_dry_run_gets_no_cache_claim_or_autoscaler_from_the_core() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("dry-run-core").await;
    let (_core, _provider) = start(&env).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let caches: Api<ModelCache> = Api::namespaced(env.client.clone(), &env.namespace);
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(env.client.clone(), &env.namespace);
    let config_maps: Api<ConfigMap> = Api::namespaced(env.client.clone(), &env.namespace);

    let mut md = previewed("cached");
    md.spec = serde_json::from_value(json!({
        "model": {"id": "Qwen/Qwen3-0.6B",
                  "storage": {"volumes": [{"name": "weights", "purpose": "modelCache"}]}},
        "engine": {"type": "vllm",
                   "image": format!("vllm/vllm-openai@sha256:{}", "a".repeat(64))},
        "resources": {"gpu": {"count": 1}},
        "provider": {"name": "vllm"},
        "scaling": {"replicas": 1, "autoscaling": {"maxReplicas": 2,
            "metrics": [{"type": "queueDepth", "target": "3"}]}},
    }))
    .unwrap();
    mds.create(&PostParams::default(), &md).await.unwrap();
    let held_back = |md: &ModelDeployment, type_: &str| {
        condition(md, type_).is_some_and(|(status, reason, message)| {
            status == ConditionStatus::False
                && reason == reasons::DRY_RUN
                && message.contains(annotations::DRY_RUN)
        })
    };
    let md = wait_for(&mds, "cached", WAIT, "the core's DryRun conditions", |md| {
        not_ready_reason(md) == Some(NotReadyReason::DryRun)
            && held_back(md, condition_types::STORAGE_READY)
            && held_back(md, condition_types::MODEL_DOWNLOADED)
            && held_back(md, condition_types::SCALING_READY)
    })
    .await;
    let (_, _, storage) = condition(&md, condition_types::STORAGE_READY).unwrap();
    assert!(storage.contains("create ModelCache '"), "{storage}");
    // A ScaledObject where KEDA's CRD is installed (the harness installs the upstream CRDs),
    // else a HorizontalPodAutoscaler: the status names which.
    let kind = md
        .status
        .as_ref()
        .and_then(|s| s.autoscaling.as_ref())
        .and_then(|a| a.kind.clone())
        .unwrap();
    let (_, _, scaling) = condition(&md, condition_types::SCALING_READY).unwrap();
    assert!(
        scaling.ends_with(&format!("it would apply {kind} 'cached'")),
        "{scaling}"
    );
    let autoscalers = autoscalers(&env, &kind);

    // The preview mounts the cache's claim, which does not exist.
    let preview = config_maps
        .get(&format!("cached{}", dry_run::CONFIG_MAP_SUFFIX))
        .await
        .unwrap();
    let render = preview.data.unwrap()[dry_run::RENDER_KEY].clone();
    assert!(render.contains("persistentVolumeClaim"), "{render}");

    // Nothing created by the core, also after more reconciles.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        caches.list(&Default::default()).await.unwrap().items.len(),
        0
    );
    assert_eq!(
        claims.list(&Default::default()).await.unwrap().items.len(),
        0
    );
    assert!(autoscalers.get_opt("cached").await.unwrap().is_none());

    // Deployed: the cache and the autoscaler are created.
    mds.patch(
        "cached",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {annotations::DRY_RUN: null}}})),
    )
    .await
    .unwrap();
    wait_for(&autoscalers, "cached", WAIT, "created", |_| true).await;
    eventually("the shared ModelCache", WAIT, || async {
        let listed = caches
            .list(&Default::default())
            .await
            .map_err(|e| e.to_string())?;
        if listed.items.len() == 1 {
            Ok(())
        } else {
            Err(format!("{} caches", listed.items.len()))
        }
    })
    .await;
    let md = mds.get("cached").await.unwrap();
    assert!(!held_back(&md, condition_types::SCALING_READY));
}
