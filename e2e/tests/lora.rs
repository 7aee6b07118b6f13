//! LoRA adapters (`spec.adapters`, docs/lora.md) with the real core and the real llm-d, vLLM,
//! Dynamo and KubeRay providers (each as its ServiceAccount with the shipped RBAC) on the
//! harness's cluster: kube-scheduler places the vLLM Pods on KWOK's simulated GPU nodes and the
//! real deployment controller writes the conditions the providers translate; KubeRay's
//! RayServices are checked by the real RayService CRD's schema. No test writes a Deployment,
//! a RayService or a ModelDeployment status.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use airunway_api::constants::{condition_types, labels, reasons};
use airunway_api::v1alpha1::{
    AdapterState, ConditionStatus, InferenceProviderConfig, ModelDeployment, Phase,
};
use airunway_e2e::control_plane::{crd_files, install_crds};
use airunway_e2e::stack::{self, FAST_HEALTH, Running};
use airunway_e2e::wait::{eventually, wait_for};
use airunway_e2e::{TestEnv, cluster_lock};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

/// An image pinned by digest: the vLLM provider resolves nothing over the network.
const PINNED_IMAGE: &str = "vllm/vllm-openai:v0.11.0@sha256:0000000000000000000000000000000000000000000000000000000000000001";

/// Starts the core and the providers `names` (each as its ServiceAccount), ready.
async fn start(env: &TestEnv, names: &[&str]) -> (Running, Vec<Running>) {
    airunway_e2e::providers::delete_all(&env.client).await;
    let core = stack::start_core(env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let mut providers = Vec::new();
    for name in names {
        let binary = format!("airunway-provider-{name}");
        let identity = stack::service_account_identity(
            env,
            &format!("deploy/providers/{name}/rbac.yaml"),
            &binary,
        )
        .await;
        providers.push(
            stack::start_provider(
                env,
                &binary,
                &identity,
                &["--heartbeat-interval=1s", "--finalizer-timeout=30s"],
                &format!("{name}-0"),
            )
            .await,
        );
    }
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    for name in names {
        wait_for(&ipcs, name, WAIT, "ready", |i| {
            i.status.as_ref().and_then(|s| s.ready) == Some(true)
        })
        .await;
    }
    (core, providers)
}

fn deployment(name: &str, spec: Value) -> ModelDeployment {
    serde_json::from_value(
        json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": name}, "spec": spec}),
    )
    .unwrap()
}

fn two_adapters() -> Value {
    json!([{"name": "sql", "source": "hf://org/sql-lora", "maxRank": 8},
           {"name": "support", "source": "org/support-lora", "maxRank": 16}])
}

fn with_adapters(provider: Option<&str>) -> Value {
    let mut spec = json!({"model": {"id": "Qwen/Qwen3-0.6B"},
        "engine": {"type": "vllm", "image": PINNED_IMAGE},
        "resources": {"gpu": {"count": 1}, "memory": "8Gi"},
        "adapters": two_adapters()});
    if let Some(provider) = provider {
        spec["provider"] = json!({"name": provider});
    }
    spec
}

fn args(deployment: &Deployment) -> Vec<String> {
    deployment
        .spec
        .clone()
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers[0]
        .args
        .clone()
        .unwrap_or_default()
}

/// The LoRA flags of a vLLM command line: from `--enable-lora` to the last `--lora-modules`
/// value.
fn lora_flags(args: &[String]) -> Vec<String> {
    let Some(start) = args.iter().position(|a| a == "--enable-lora") else {
        return Vec::new();
    };
    args[start..]
        .iter()
        .take_while(|a| {
            !a.starts_with("--")
                || [
                    "--enable-lora",
                    "--max-loras",
                    "--max-lora-rank",
                    "--lora-modules",
                ]
                .contains(&a.as_str())
        })
        .cloned()
        .collect()
}

/// `(name, state)` of every entry of `status.adapters`.
fn adapter_states(md: &ModelDeployment) -> Vec<(String, Option<AdapterState>)> {
    md.status
        .as_ref()
        .and_then(|s| s.adapters.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|a| (a.name, a.state))
        .collect()
}

fn all_ready(md: &ModelDeployment, names: &[&str]) -> bool {
    adapter_states(md)
        == names
            .iter()
            .map(|n| (n.to_string(), Some(AdapterState::Ready)))
            .collect::<Vec<_>>()
}

/// Two adapters on llm-d and on the direct vLLM provider: the flags rendered from them, both
/// shown `Ready` in `status.adapters` once the pods are; the status is then left alone (no
/// churn). Adding a third adapter to the running llm-d deployment re-renders it: the same
/// Deployment (same uid) gets the new flags and rolls its pods (a new ReplicaSet), and the new
/// adapter shows `Loading` until the rolled pods are ready, then `Ready`.
#[tokio::test]
async fn two_adapters_on_llmd_and_vllm_render_show_in_status_and_one_more_rolls_in_place() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("lora-render").await;
    let (core, providers) = start(&env, &["llmd", "vllm"]).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let started = std::time::Instant::now();
    for provider in ["llmd", "vllm"] {
        mds.create(
            &PostParams::default(),
            &deployment(&format!("on-{provider}"), with_adapters(Some(provider))),
        )
        .await
        .unwrap();
    }
    let expected = [
        "--enable-lora",
        "--max-loras",
        "2",
        "--max-lora-rank",
        "16",
        "--lora-modules",
        "sql=org/sql-lora",
        "support=org/support-lora",
    ];
    for provider in ["llmd", "vllm"] {
        let name = format!("on-{provider}");
        let md = wait_for(
            &mds,
            &name,
            WAIT,
            "Running with both adapters Ready",
            |md| md.phase() == Some(Phase::Running) && all_ready(md, &["sql", "support"]),
        )
        .await;
        let adapters = md.status.as_ref().unwrap().adapters.clone().unwrap();
        assert_eq!(
            serde_json::to_value(&adapters).unwrap(),
            json!([{"name": "sql", "source": "hf://org/sql-lora", "state": "Ready"},
                   {"name": "support", "source": "org/support-lora", "state": "Ready"}]),
            "{provider}"
        );
        let rendered = deployments.get(&name).await.unwrap();
        assert_eq!(lora_flags(&args(&rendered)), expected, "{provider}");
        // The provider's field manager owns status.adapters.
        let managers: Vec<String> = md
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .filter(|f| {
                f.subresource.as_deref() == Some("status")
                    && f.fields_v1
                        .as_ref()
                        .is_some_and(|v| v.0.to_string().contains("\"f:adapters\""))
            })
            .filter_map(|f| f.manager.clone())
            .collect();
        assert_eq!(managers, [format!("{provider}-provider")]);
    }
    println!(
        "lora: both deployments Running with 2 adapters Ready after {:.1}s",
        started.elapsed().as_secs_f64()
    );

    // No churn: nothing changes, nothing is written.
    let before = mds.get("on-llmd").await.unwrap().metadata.resource_version;
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(
        mds.get("on-llmd").await.unwrap().metadata.resource_version,
        before,
        "a settled deployment with adapters is not rewritten"
    );

    // One more adapter on the running llm-d deployment: re-rendered in place.
    let uid = deployments.get("on-llmd").await.unwrap().metadata.uid;
    let replica_sets: Api<ReplicaSet> = Api::namespaced(env.client.clone(), &env.namespace);
    let sets_before = replica_sets
        .list(&ListParams::default().labels(&format!("{}=on-llmd", labels::DEPLOYMENT)))
        .await
        .unwrap()
        .items
        .len();
    let mut adapters = two_adapters();
    adapters
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "tone", "source": "org/tone-lora", "maxRank": 64}));
    mds.patch(
        "on-llmd",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"adapters": adapters}})),
    )
    .await
    .unwrap();
    let rolled = eventually("the new flags on the same Deployment", WAIT, || async {
        let d = deployments
            .get("on-llmd")
            .await
            .map_err(|e| e.to_string())?;
        let flags = lora_flags(&args(&d));
        (flags.contains(&"tone=org/tone-lora".to_string()))
            .then_some(d)
            .ok_or(format!("{flags:?}"))
    })
    .await;
    assert_eq!(
        rolled.metadata.uid, uid,
        "updated in place, never recreated"
    );
    assert_eq!(
        lora_flags(&args(&rolled)),
        [
            "--enable-lora",
            "--max-loras",
            "3",
            "--max-lora-rank",
            "64",
            "--lora-modules",
            "sql=org/sql-lora",
            "support=org/support-lora",
            "tone=org/tone-lora"
        ]
    );
    let md = wait_for(&mds, "on-llmd", WAIT, "all three adapters Ready", |md| {
        md.phase() == Some(Phase::Running) && all_ready(md, &["sql", "support", "tone"])
    })
    .await;
    assert!(
        md.condition(condition_types::READY).unwrap().is_true(),
        "the rolled pods serve"
    );
    let sets_after = replica_sets
        .list(&ListParams::default().labels(&format!("{}=on-llmd", labels::DEPLOYMENT)))
        .await
        .unwrap()
        .items
        .len();
    assert!(
        sets_after > sets_before,
        "the pods rolled: a new ReplicaSet ({sets_before} before, {sets_after} after)"
    );
    assert_eq!(deployments.get("on-llmd").await.unwrap().metadata.uid, uid);

    // Removing every adapter removes the flags and status.adapters.
    mds.patch(
        "on-llmd",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"adapters": null}})),
    )
    .await
    .unwrap();
    let md = wait_for(&mds, "on-llmd", WAIT, "no status.adapters", |md| {
        md.status.as_ref().is_some_and(|s| s.adapters.is_none())
    })
    .await;
    assert!(md.status.unwrap().adapters.is_none());
    let plain = deployments.get("on-llmd").await.unwrap();
    assert!(lora_flags(&args(&plain)).is_empty(), "{:?}", args(&plain));
    assert_eq!(plain.metadata.uid, uid);

    for name in ["on-llmd", "on-vllm"] {
        mds.delete(name, &DeleteParams::default()).await.unwrap();
    }
    for name in ["on-llmd", "on-vllm"] {
        airunway_e2e::wait::wait_deleted(&mds, name, WAIT).await;
    }
    for provider in providers {
        provider.process.terminate(Duration::from_secs(10));
    }
    core.process.terminate(Duration::from_secs(10));
}

/// Selection passes over a provider whose registration does not declare `loraSupport`
/// (Dynamo, which the same spec without adapters selects), and Dynamo named explicitly refuses
/// the deployment: `ProviderCompatible=False` with its message, each adapter `Failed` with it.
/// A source vLLM cannot load is refused by the vLLM provider naming the field.
#[tokio::test]
async fn selection_skips_providers_without_lora_and_a_named_one_is_refused() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("lora-selection").await;
    let (core, providers) = start(&env, &["dynamo", "llmd", "vllm"]).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);

    let mut without = with_adapters(None);
    without.as_object_mut().unwrap().remove("adapters");
    let mut s3 = with_adapters(Some("vllm"));
    s3["adapters"] = json!([{"name": "sql", "source": "s3://bucket/loras/sql"}]);
    for (name, spec) in [
        ("auto", with_adapters(None)),
        ("auto-plain", without),
        ("named-dynamo", with_adapters(Some("dynamo"))),
        ("s3-on-vllm", s3),
    ] {
        mds.create(&PostParams::default(), &deployment(name, spec))
            .await
            .unwrap();
    }

    // The same spec without adapters goes to Dynamo; with them no provider fits.
    let plain = wait_for(&mds, "auto-plain", WAIT, "selection", |md| {
        md.selected_provider().is_some()
    })
    .await;
    assert_eq!(plain.selected_provider(), Some("dynamo"));
    let auto = wait_for(&mds, "auto", WAIT, "selection failed", |md| {
        md.condition(condition_types::PROVIDER_SELECTED)
            .is_some_and(|c| c.status == ConditionStatus::False)
    })
    .await;
    let message = auto
        .status
        .as_ref()
        .unwrap()
        .message
        .clone()
        .unwrap_or_default();
    assert!(
        message.contains("dynamo: engine vllm does not serve LoRA adapters (spec.adapters)"),
        "{message}"
    );
    assert_eq!(auto.selected_provider(), None);
    assert!(
        auto.status.as_ref().unwrap().adapters.is_none(),
        "no provider, no adapter status"
    );

    // Dynamo named explicitly refuses it, saying why and what to do.
    let refused = wait_for(&mds, "named-dynamo", WAIT, "refused", |md| {
        md.condition(condition_types::PROVIDER_COMPATIBLE)
            .is_some_and(|c| c.status == ConditionStatus::False)
    })
    .await;
    let compatible = refused
        .condition(condition_types::PROVIDER_COMPATIBLE)
        .unwrap();
    assert_eq!(
        compatible.message.as_deref(),
        Some(airunway_provider_dynamo::compat::NO_ADAPTERS)
    );
    assert_eq!(
        compatible.reason.as_deref(),
        Some(reasons::INCOMPATIBLE_CONFIGURATION)
    );
    assert_eq!(refused.phase(), Some(Phase::Failed));
    let adapters = refused.status.as_ref().unwrap().adapters.clone().unwrap();
    assert_eq!(adapters.len(), 2);
    for adapter in &adapters {
        assert_eq!(adapter.state, Some(AdapterState::Failed));
        assert_eq!(
            adapter.message.as_deref(),
            Some(airunway_provider_dynamo::compat::NO_ADAPTERS)
        );
    }

    // A source vLLM cannot fetch is refused naming the field.
    let s3 = wait_for(&mds, "s3-on-vllm", WAIT, "refused", |md| {
        md.condition(condition_types::PROVIDER_COMPATIBLE)
            .is_some_and(|c| c.status == ConditionStatus::False)
    })
    .await;
    let message = s3
        .condition(condition_types::PROVIDER_COMPATIBLE)
        .unwrap()
        .message
        .clone()
        .unwrap();
    assert!(
        message.starts_with("spec.adapters[0].source: vLLM loads adapters from Hugging Face or a pvc:// claim, not from a s3 source"),
        "{message}"
    );
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    assert!(
        deployments.get_opt("s3-on-vllm").await.unwrap().is_none(),
        "nothing rendered"
    );

    for name in ["auto", "auto-plain", "named-dynamo", "s3-on-vllm"] {
        mds.delete(name, &DeleteParams::default()).await.unwrap();
    }
    for name in ["auto", "auto-plain", "named-dynamo", "s3-on-vllm"] {
        airunway_e2e::wait::wait_deleted(&mds, name, WAIT).await;
    }
    for provider in providers {
        provider.process.terminate(Duration::from_secs(10));
    }
    core.process.terminate(Duration::from_secs(10));
}

/// The RayServices of the test's namespace.
fn rayservices(env: &TestEnv) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "ray.io".into(),
        version: "v1".into(),
        api_version: "ray.io/v1".into(),
        kind: "RayService".into(),
        plural: "rayservices".into(),
    };
    Api::namespaced_with(env.client.clone(), &env.namespace, &resource)
}

/// Two `s3://` adapters in one prefix on KubeRay: the RayService is created and accepted by the
/// real RayService CRD, its `serveConfigV2` holds Ray Serve LLM's `lora_config` and vLLM's LoRA
/// engine keyword arguments, and `status.adapters` lists both (no KubeRay operator runs here, so
/// nothing becomes ready: they show `Loading`). A Hugging Face adapter is refused by the
/// provider with its message, each adapter `Failed` with it, and nothing is rendered.
#[tokio::test]
async fn kuberay_renders_s3_adapters_as_lora_config_and_refuses_hugging_face() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("lora-kuberay").await;
    let rayservice_crd: Vec<_> = crd_files()
        .unwrap()
        .into_iter()
        .filter(|f| f.ends_with("ray.io_rayservices.yaml"))
        .collect();
    install_crds(&env.client, &rayservice_crd).await.unwrap();
    let (core, providers) = start(&env, &["kuberay"]).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let rs = rayservices(&env);

    let s3 = json!({"model": {"id": "Qwen/Qwen3-0.6B", "servedName": "qwen"},
        "engine": {"type": "vllm"}, "provider": {"name": "kuberay"},
        "resources": {"gpu": {"count": 1}, "memory": "8Gi"},
        "adapters": [{"name": "sql", "source": "s3://bucket/loras/sql", "maxRank": 8},
                     {"name": "support", "source": "s3://bucket/loras/support", "maxRank": 16}]});
    let mut hf = s3.clone();
    hf["adapters"] = two_adapters();
    for (name, spec) in [("s3-on-kuberay", s3), ("hf-on-kuberay", hf)] {
        mds.create(&PostParams::default(), &deployment(name, spec))
            .await
            .unwrap();
    }

    let md = wait_for(
        &mds,
        "s3-on-kuberay",
        WAIT,
        "the RayService created, both adapters listed",
        |md| {
            md.condition(condition_types::RESOURCE_CREATED)
                .is_some_and(|c| c.is_true())
                && adapter_states(md).len() == 2
        },
    )
    .await;
    assert_eq!(
        md.condition(condition_types::PROVIDER_COMPATIBLE)
            .map(|c| c.status),
        Some(ConditionStatus::True)
    );
    let adapters = md.status.as_ref().unwrap().adapters.clone().unwrap();
    assert_eq!(
        adapters
            .iter()
            .map(|a| (a.name.as_str(), a.source.as_deref(), a.state))
            .collect::<Vec<_>>(),
        [
            (
                "sql",
                Some("s3://bucket/loras/sql"),
                Some(AdapterState::Loading)
            ),
            (
                "support",
                Some("s3://bucket/loras/support"),
                Some(AdapterState::Loading)
            ),
        ]
    );
    // Created, so accepted by the real RayService schema.
    let ray_service = rs.get("s3-on-kuberay").await.unwrap();
    let config: Value =
        serde_saphyr::from_str(ray_service.data["spec"]["serveConfigV2"].as_str().unwrap())
            .unwrap();
    let llm = &config["applications"][0]["args"]["llm_configs"][0];
    assert_eq!(
        llm["model_loading_config"],
        json!({"model_id": "qwen", "model_source": "Qwen/Qwen3-0.6B"}),
        "clients request qwen:sql and qwen:support"
    );
    assert_eq!(
        llm["lora_config"],
        json!({"dynamic_lora_loading_path": "s3://bucket/loras", "max_num_adapters_per_replica": 2})
    );
    assert_eq!(
        (
            &llm["engine_kwargs"]["enable_lora"],
            &llm["engine_kwargs"]["max_loras"],
            &llm["engine_kwargs"]["max_lora_rank"]
        ),
        (&json!(true), &json!(2), &json!(16))
    );

    // A Hugging Face adapter: refused naming the field and the fix, nothing rendered.
    let refused = wait_for(&mds, "hf-on-kuberay", WAIT, "refused", |md| {
        md.condition(condition_types::PROVIDER_COMPATIBLE)
            .is_some_and(|c| c.status == ConditionStatus::False)
    })
    .await;
    let message = airunway_provider_kuberay::lora::source_refused(0, "Hugging Face", "sql");
    assert_eq!(
        message,
        "spec.adapters[0].source: KubeRay's Ray Serve LLM loads LoRA adapters from one s3:// or gs:// prefix (lora_config.dynamic_lora_loading_path), not from a Hugging Face source: copy the adapter to s3://<bucket>/<prefix>/sql (or gs://), or name a provider that loads it in spec.provider.name (vllm, llmd or kaito)"
    );
    let compatible = refused
        .condition(condition_types::PROVIDER_COMPATIBLE)
        .unwrap();
    assert_eq!(compatible.message.as_deref(), Some(message.as_str()));
    assert_eq!(
        compatible.reason.as_deref(),
        Some(reasons::INCOMPATIBLE_CONFIGURATION)
    );
    assert_eq!(refused.phase(), Some(Phase::Failed));
    let adapters = refused.status.as_ref().unwrap().adapters.clone().unwrap();
    assert_eq!(adapters.len(), 2);
    for adapter in &adapters {
        assert_eq!(adapter.state, Some(AdapterState::Failed));
        assert_eq!(adapter.message.as_deref(), Some(message.as_str()));
    }
    assert!(
        rs.get_opt("hf-on-kuberay").await.unwrap().is_none(),
        "nothing rendered"
    );

    for name in ["s3-on-kuberay", "hf-on-kuberay"] {
        mds.delete(name, &DeleteParams::default()).await.unwrap();
    }
    for name in ["s3-on-kuberay", "hf-on-kuberay"] {
        airunway_e2e::wait::wait_deleted(&mds, name, WAIT).await;
    }
    for provider in providers {
        provider.process.terminate(Duration::from_secs(10));
    }
    core.process.terminate(Duration::from_secs(10));
}
