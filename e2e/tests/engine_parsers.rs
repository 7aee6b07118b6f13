//! Tool calling and reasoning parsers (issue 38 item 2) on the real control plane: the core's
//! admission (CRD rules and the validating webhook) refuses bad parser settings naming the
//! field and the fix; the real providers render the parsers into the objects they apply —
//! llm-d's and the direct vLLM provider's Deployments (vLLM flags), Dynamo's
//! DynamoGraphDeployment workers (`--dyn-*` flags, vLLM and SGLang), KubeRay's RayService
//! (`engine_kwargs`) — read back from the API server; KAITO refuses them with its message; and
//! selection passes over a provider that does not declare `toolCallingSupport`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use airunway_api::constants::{condition_types, reasons};
use airunway_api::engine_parsers as parsers;
use airunway_api::v1alpha1::{ConditionStatus, InferenceProviderConfig, ModelDeployment};
use airunway_e2e::admission::{
    core_identity, create_raw, deployment, install_webhooks, rejection, remove_webhooks,
    start_core, wait_webhook_active,
};
use airunway_e2e::bench::workload::Target;
use airunway_e2e::binaries::free_port;
use airunway_e2e::dynamo_graph;
use airunway_e2e::providers::{delete_all, register};
use airunway_e2e::sandbox::kaito;
use airunway_e2e::stack::{self, FAST_HEALTH, Running};
use airunway_e2e::wait::{eventually, wait_for};
use airunway_e2e::{TestEnv, cluster_lock};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams, DynamicObject};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

/// A Qwen3 deployment on one GPU with `engine` (its `type` vLLM unless given) and `extra`
/// top-level fields.
fn qwen3(engine: Value, extra: Value) -> Value {
    let mut engine_spec = json!({"type": "vllm"});
    for (key, value) in engine.as_object().into_iter().flatten() {
        engine_spec[key] = value.clone();
    }
    let mut spec = json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": engine_spec,
        "resources": {"gpu": {"count": 1}}});
    for (key, value) in extra.as_object().into_iter().flatten() {
        spec[key] = value.clone();
    }
    spec
}

/// The core's admission, with the shipped webhooks: each refused setting names its field and
/// the fix (the CRD's rules answer first for the grammar, the webhook for the rest); a valid
/// one is admitted.
#[tokio::test]
async fn admission_refuses_bad_parser_settings_naming_the_field_and_the_fix() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("parsers-admission").await;
    delete_all(&env.client).await;
    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let core = start_core(&env, &kubeconfig, port, &[]).await;
    wait_webhook_active(&env).await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);

    let unknown = parsers::tool_call_parser_unknown("acme/model");
    let clash = parsers::flag_rendered_from_field("tool-call-parser", "toolCalling");
    let llamacpp = parsers::engine_has_no_parsers(airunway_api::v1alpha1::EngineType::Llamacpp);
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "auto",
            qwen3(
                json!({"toolCalling": true, "toolCallParser": "auto"}),
                json!({}),
            ),
            "spec.engine.toolCallParser",
            parsers::PARSER_RESERVED,
        ),
        (
            "none",
            qwen3(json!({"reasoningParser": "none"}), json!({})),
            "spec.engine.reasoningParser",
            parsers::PARSER_RESERVED,
        ),
        (
            "upper",
            qwen3(
                json!({"toolCalling": true, "toolCallParser": "Hermes"}),
                json!({}),
            ),
            "spec.engine.toolCallParser",
            parsers::PARSER_LOWER_CASE,
        ),
        (
            "shell",
            qwen3(json!({"reasoningParser": "qwen3;reboot"}), json!({})),
            "spec.engine.reasoningParser",
            parsers::PARSER_CHARACTERS,
        ),
        (
            "long",
            qwen3(json!({"reasoningParser": "p".repeat(65)}), json!({})),
            "spec.engine.reasoningParser",
            "64",
        ),
        (
            "no-calling",
            qwen3(json!({"toolCallParser": "hermes"}), json!({})),
            "spec.engine.toolCallParser",
            parsers::TOOL_CALL_PARSER_NEEDS_TOOL_CALLING,
        ),
        (
            "unknown",
            json!({"model": {"id": "acme/model"}, "engine": {"type": "vllm", "toolCalling": true},
                "resources": {"gpu": {"count": 1}}}),
            "spec.engine.toolCallParser",
            &unknown,
        ),
        (
            "clash",
            qwen3(
                json!({"toolCalling": true, "args": {"tool-call-parser": "hermes"}}),
                json!({}),
            ),
            "spec.engine.args[tool-call-parser]",
            &clash,
        ),
        (
            "llamacpp",
            json!({"model": {"id": "Qwen/Qwen3-0.6B"},
                "engine": {"type": "llamacpp", "reasoningParser": "qwen3"},
                "image": "ghcr.io/sozercan/llama-cpp-runner:latest"}),
            "spec.engine.type",
            &llamacpp,
        ),
    ];
    for (name, spec, field, message) in &cases {
        let (refusal, fields) = rejection(&api, deployment(name, spec.clone())).await;
        assert!(
            refusal.contains(message) && fields.iter().any(|f| f == field),
            "{name}: expected {field}: {message}; got {refusal} {fields:?}"
        );
    }
    // Valid: the family's parsers, named ones on an unknown model, reasoning alone, and the
    // flags by hand with tool calling off.
    for (name, spec) in [
        ("qwen", qwen3(json!({"toolCalling": true}), json!({}))),
        (
            "named",
            json!({"model": {"id": "acme/model"}, "engine": {"type": "vllm", "toolCalling": true,
                "toolCallParser": "pythonic", "reasoningParser": "deepseek_r1"},
                "resources": {"gpu": {"count": 1}}}),
        ),
        (
            "reasoning",
            qwen3(json!({"reasoningParser": "qwen3"}), json!({})),
        ),
        (
            "by-hand",
            qwen3(
                json!({"toolCalling": false, "extraArgs": ["--enable-auto-tool-choice", "--tool-call-parser=hermes"]}),
                json!({}),
            ),
        ),
    ] {
        let (code, _, body) =
            create_raw(&env.client, &env.namespace, &deployment(name, spec)).await;
        assert_eq!(code, 201, "{name} refused: {body}");
    }
    for name in ["qwen", "named", "reasoning", "by-hand"] {
        let _ = api.delete(name, &DeleteParams::default()).await;
    }
    remove_webhooks(&env.client).await;
    core.terminate(Duration::from_secs(10));
}

async fn provider(env: &TestEnv, binary: &str, name: &str) -> Running {
    stack::start_provider(
        env,
        binary,
        &env.control_plane.kubeconfig,
        &["--heartbeat-interval=1s"],
        &format!("{name}-0"),
    )
    .await
}

fn container_args(deployment: &Deployment) -> Vec<String> {
    deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.containers.first())
        .and_then(|c| c.args.clone())
        .unwrap_or_default()
}

/// `flag`'s value in `args` (the token after it).
fn value_of<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1).map(String::as_str)
}

/// Every provider that renders parsers, started for real, with the real upstream CRDs: the
/// applied objects carry the parsers; KAITO refuses them; selection skips a provider that does
/// not declare them.
#[tokio::test]
async fn tool_calling_renders_for_each_provider_and_is_refused_or_skipped_elsewhere() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("parsers-render").await;
    delete_all(&env.client).await;
    let crds: Vec<std::path::PathBuf> = airunway_e2e::control_plane::crd_files()
        .unwrap_or_else(|e| panic!("the CRD files: {e}"))
        .into_iter()
        .filter(|f| f.ends_with("ray.io_rayservices.yaml"))
        .collect();
    airunway_e2e::control_plane::install_crds(&env.client, &crds)
        .await
        .unwrap_or_else(|e| panic!("installing the RayService CRD: {e}"));
    kaito::install_controller_stand_in(&env.client)
        .await
        .unwrap_or_else(|e| panic!("the KAITO controller stand-in: {e:#}"));
    let core = stack::start_core(&env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let running = vec![
        provider(&env, "airunway-provider-llmd", "llmd").await,
        provider(&env, "airunway-provider-vllm", "vllm").await,
        provider(&env, "airunway-provider-dynamo", "dynamo").await,
        provider(&env, "airunway-provider-kuberay", "kuberay").await,
        provider(&env, "airunway-provider-kaito", "kaito").await,
    ];
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    for (name, declares) in [
        ("llmd", true),
        ("vllm", true),
        ("dynamo", true),
        ("kuberay", true),
        ("kaito", false),
    ] {
        let registration = wait_for(&ipcs, name, WAIT, "ready", |i| {
            i.status.as_ref().and_then(|s| s.ready) == Some(true)
        })
        .await;
        let engines = registration
            .spec
            .capabilities
            .as_ref()
            .map(|c| c.engine_capabilities())
            .unwrap_or_default();
        assert!(
            engines.iter().all(|e| e.tool_calling_support == declares) && !engines.is_empty(),
            "{name}: {engines:?}"
        );
    }

    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let create = |name: &'static str, spec: Value| {
        let api = api.clone();
        async move {
            let object: ModelDeployment = serde_json::from_value(deployment(name, spec))
                .unwrap_or_else(|e| panic!("the {name} deployment: {e}"));
            api.create(&Default::default(), &object)
                .await
                .unwrap_or_else(|e| panic!("creating {name}: {e}"));
        }
    };
    let calling = json!({"toolCalling": true});
    create(
        "on-llmd",
        qwen3(calling.clone(), json!({"provider": {"name": "llmd"}})),
    )
    .await;
    create(
        "on-vllm",
        json!({"model": {"id": "meta-llama/Llama-3.1-8B-Instruct"},
            "engine": {"type": "vllm", "toolCalling": true,
                "image": format!("vllm/vllm-openai@sha256:{}", "a".repeat(64))},
            "resources": {"gpu": {"count": 1}}, "provider": {"name": "vllm"}}),
    )
    .await;
    create(
        "on-dynamo",
        qwen3(calling.clone(), json!({"provider": {"name": "dynamo"}})),
    )
    .await;
    create(
        "on-dynamo-sglang",
        json!({"model": {"id": "openai/gpt-oss-20b"}, "engine": {"type": "sglang", "toolCalling": true},
            "resources": {"gpu": {"count": 1}}, "provider": {"name": "dynamo"}}),
    )
    .await;
    create(
        "on-kuberay",
        qwen3(
            json!({"toolCalling": true, "reasoningParser": "deepseek_r1"}),
            json!({"provider": {"name": "kuberay"}}),
        ),
    )
    .await;
    create(
        "on-kaito",
        qwen3(calling.clone(), json!({"provider": {"name": "kaito"}})),
    )
    .await;

    // llm-d and the direct vLLM provider: vLLM's flags on the served container.
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    for (name, tool, reasoning) in [
        ("on-llmd", "hermes", Some("qwen3")),
        ("on-vllm", "llama3_json", None),
    ] {
        let args = eventually(&format!("the Deployment {name}"), WAIT, || async {
            deployments
                .get(name)
                .await
                .map(|d| container_args(&d))
                .map_err(|e| e.to_string())
        })
        .await;
        assert!(
            args.iter().any(|a| a == "--enable-auto-tool-choice")
                && value_of(&args, "--tool-call-parser") == Some(tool)
                && value_of(&args, "--reasoning-parser") == reasoning,
            "{name}: {args:?}"
        );
    }

    // Dynamo: Dynamo's own parser names on the worker, for vLLM and SGLang alike.
    let dgds: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        &env.namespace,
        &Target::Dynamo.upstream(),
    );
    for (name, worker, tool, reasoning) in [
        ("on-dynamo", "VllmWorker", "hermes", "qwen3"),
        ("on-dynamo-sglang", "SglangWorker", "harmony", "gpt_oss"),
    ] {
        let dgd = eventually(
            &format!("the DynamoGraphDeployment {name}"),
            WAIT,
            || async { dgds.get(name).await.map_err(|e| e.to_string()) },
        )
        .await;
        let args: Vec<String> = serde_json::from_value(
            dynamo_graph::main_container(dynamo_graph::component(&dgd.data, worker))["args"]
                .clone(),
        )
        .unwrap_or_default();
        assert!(
            value_of(&args, "--dyn-tool-call-parser") == Some(tool)
                && value_of(&args, "--dyn-reasoning-parser") == Some(reasoning)
                && !args.iter().any(|a| a == "--enable-auto-tool-choice"),
            "{name}: {args:?}"
        );
    }

    // KubeRay: Ray Serve LLM's engine keyword arguments in the serve config.
    let rayservices: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        &env.namespace,
        &Target::Kuberay.upstream(),
    );
    let rayservice = eventually("the RayService on-kuberay", WAIT, || async {
        rayservices
            .get("on-kuberay")
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    let config: Value = rayservice.data["spec"]["serveConfigV2"]
        .as_str()
        .and_then(|text| serde_saphyr::from_str(text).ok())
        .unwrap_or(Value::Null);
    let kwargs = &config["applications"][0]["args"]["llm_configs"][0]["engine_kwargs"];
    assert!(
        kwargs["enable_auto_tool_choice"] == true
            && kwargs["tool_call_parser"] == "hermes"
            && kwargs["reasoning_parser"] == "deepseek_r1",
        "{config}"
    );

    // KAITO: named explicitly, refused with its message (a preset takes no vLLM flags).
    let refused = wait_for(&api, "on-kaito", WAIT, "ProviderCompatible False", |md| {
        md.condition(condition_types::PROVIDER_COMPATIBLE)
            .is_some_and(|c| c.status == ConditionStatus::False)
    })
    .await;
    let condition = refused
        .condition(condition_types::PROVIDER_COMPATIBLE)
        .cloned()
        .unwrap();
    assert_eq!(
        (condition.reason.as_deref(), condition.message.as_deref()),
        (
            Some(reasons::INCOMPATIBLE_CONFIGURATION),
            Some(airunway_provider_kaito::compat::NO_PARSERS_VLLM)
        ),
        "{condition:?}"
    );

    // Selection: a provider declaring vLLM without toolCallingSupport, with the highest rule,
    // wins a deployment without parsers and is passed over for one with them (Dynamo's GPU
    // rule wins that one).
    register(
        &env.client,
        &json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig",
            "metadata": {"name": "plain"},
            "spec": {"capabilities": {"engines": [{"name": "vllm", "servingModes": ["aggregated"],
                "gpuSupport": true, "cpuSupport": false}]},
                "selectionRules": [{"condition": "true", "priority": 200}]}}),
        true,
    )
    .await;
    create("picked-plain", qwen3(json!({}), json!({}))).await;
    create("picked-tools", qwen3(calling.clone(), json!({}))).await;
    for (name, provider) in [("picked-plain", "plain"), ("picked-tools", "dynamo")] {
        wait_for(&api, name, WAIT, &format!("provider {provider}"), |md| {
            md.status
                .as_ref()
                .and_then(|s| s.provider.as_ref())
                .and_then(|p| p.name.as_deref())
                == Some(provider)
        })
        .await;
    }

    for name in [
        "on-llmd",
        "on-vllm",
        "on-dynamo",
        "on-dynamo-sglang",
        "on-kuberay",
        "on-kaito",
        "picked-plain",
        "picked-tools",
    ] {
        let _ = api.delete(name, &DeleteParams::default()).await;
    }
    for process in running {
        process.process.terminate(Duration::from_secs(10));
    }
    core.process.terminate(Duration::from_secs(10));
}
