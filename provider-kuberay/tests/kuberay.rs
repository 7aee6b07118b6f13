//! KubeRay provider: the rendered RayService (aggregated and disaggregated) as full objects,
//! every mapped field, the override rules, compatibility messages, every status sample (and
//! the situations KubeRay reports only through its application statuses), schema detection
//! and registration.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airunway_api::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::Incompatible;
use airunway_api::provider::{
    Provider, RenderError, SchemaDetection, UpstreamSchema, cycle, registration_spec, testing,
};
use airunway_api::serde_json::{self, Value, json};
use airunway_api::v1alpha1::{ModelDeployment, NotReadyReason, Phase};
use airunway_provider_kuberay::KubeRayProvider;
use airunway_provider_kuberay::schema::{V1_KUBERAY_1_3, V1ALPHA1_KUBERAY_1_3};

fn schema() -> UpstreamSchema {
    UpstreamSchema {
        version: "v1".into(),
        api_version: "ray.io/v1".into(),
        fingerprint: V1_KUBERAY_1_3.into(),
    }
}

fn md(spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "m", "namespace": "ns", "uid": "u"}, "spec": spec, "status": {"provider": {"name": "kuberay"}}}))
    .unwrap()
}

fn gpu_vllm(extra: Value) -> ModelDeployment {
    let mut spec = json!({"model": {"id": "Qwen/Qwen3-8B"}, "engine": {"type": "vllm"},
        "resources": {"gpu": {"count": 1}}, "provider": {"name": "kuberay"}});
    for (key, value) in extra.as_object().unwrap() {
        spec[key] = value.clone();
    }
    md(spec)
}

/// The rendered RayService and the warnings of the checked render (the SDK's override check,
/// then the render's own).
fn render(md: &ModelDeployment) -> (Value, Vec<(String, String)>) {
    let rendered = KubeRayProvider.render(md, &schema()).unwrap();
    let checked =
        cycle::checked(&KubeRayProvider, md, &SchemaDetection::Supported(schema())).unwrap();
    let warnings = checked
        .warnings
        .iter()
        .map(|w| (w.reason.to_string(), w.message.clone()))
        .collect();
    (rendered.objects[0].clone(), warnings)
}

/// The message of the hold the checked render shows instead of rendering `md`.
fn held(md: &ModelDeployment) -> String {
    let held =
        cycle::checked(&KubeRayProvider, md, &SchemaDetection::Supported(schema())).unwrap_err();
    assert_eq!(held.status.phase, Phase::Failed);
    held.status.message
}

fn fixture(name: &str) -> Value {
    testing::read_yaml(format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR")).as_ref())
        .unwrap()
}

/// The serveConfigV2 text parsed back.
fn serve_config(object: &Value) -> Value {
    let text = object["spec"]["serveConfigV2"].as_str().unwrap();
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).unwrap();
    docs.into_iter().next().unwrap()
}

fn llm_config(object: &Value) -> Value {
    serve_config(object)["applications"][0]["args"]["llm_configs"][0].clone()
}

fn head(object: &Value) -> Value {
    object["spec"]["rayClusterConfig"]["headGroupSpec"].clone()
}

fn workers(object: &Value) -> Vec<Value> {
    object["spec"]["rayClusterConfig"]["workerGroupSpecs"]
        .as_array()
        .unwrap()
        .clone()
}

fn container(group: &Value) -> Value {
    group["template"]["spec"]["containers"][0].clone()
}

#[test]
fn aggregated_full_object() {
    let deployment = gpu_vllm(json!({
        "model": {"id": "Qwen/Qwen3-8B", "servedName": "qwen3"},
        "engine": {"type": "vllm", "contextLength": 8192, "trustRemoteCode": true,
                   "args": {"gpu-memory-utilization": "0.85", "enable-prefix-caching": "true", "enforce-eager": "", "quantization": "fp8", "max-num-seqs": "64"}},
        "resources": {"gpu": {"count": 2}, "memory": "64Gi", "cpu": "8"},
        "scaling": {"replicas": 2},
        "env": [{"name": "VLLM_LOGGING_LEVEL", "value": "DEBUG"}],
        "secrets": {"huggingFaceToken": "hf-token"},
        "nodeSelector": {"pool": "h100"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "podTemplate": {"metadata": {"labels": {"team": "search"}, "annotations": {"prometheus.io/scrape": "true"}}},
    }));
    let (object, warnings) = render(&deployment);
    assert!(warnings.is_empty(), "{warnings:?}");
    let mut without_text = object.clone();
    without_text["spec"]["serveConfigV2"] = json!("(compared parsed)");
    let expected = fixture("aggregated-rayservice.yaml");
    let mut expected_without_text = expected.clone();
    expected_without_text["spec"]["serveConfigV2"] = json!("(compared parsed)");
    assert_eq!(without_text, expected_without_text);
    // The YAML text says what the fixture's text says.
    let fixture_text = expected["spec"]["serveConfigV2"].as_str().unwrap();
    let fixture_config: Vec<Value> = serde_saphyr::from_multiple(fixture_text).unwrap();
    assert_eq!(serve_config(&object), fixture_config[0]);
}

#[test]
fn pod_template_metadata_reaches_the_rayservice_without_airunway_keys() {
    // As the Go project renders it; `airunway.ai/` keys stay AI Runway's.
    let (object, _) = render(&gpu_vllm(json!({"podTemplate": {"metadata": {
        "labels": {"airunway.ai/model-deployment": "other", "team": "a"},
        "annotations": {"airunway.ai/spec-hash": "x"}}}})));
    assert_eq!(object["metadata"]["labels"]["team"], "a");
    assert_eq!(
        object["metadata"]["labels"]["airunway.ai/model-deployment"],
        "m"
    );
    assert!(object["metadata"]["annotations"].is_null());
}

#[test]
fn engine_arguments_are_typed_and_in_key_order() {
    let (object, _) = render(&gpu_vllm(json!({
        "model": {"id": "Qwen/Qwen3-8B", "servedName": "chat"},
        "engine": {"type": "vllm", "contextLength": 4096, "trustRemoteCode": true,
                   "args": {"enable-prefix-caching": "false", "enforce-eager": "true", "quantization": "awq", "gpu-memory-utilization": "0.9", "max-num-seqs": "128"}},
    })));
    let config = llm_config(&object);
    assert_eq!(
        config["model_loading_config"],
        json!({"model_id": "chat", "model_source": "Qwen/Qwen3-8B"})
    );
    let kwargs = &config["engine_kwargs"];
    assert_eq!(
        kwargs,
        &json!({"max_model_len": 4096, "trust_remote_code": true, "enable_prefix_caching": false,
                "enforce_eager": true, "quantization": "awq", "gpu_memory_utilization": 0.9, "max_num_seqs": 128})
    );
    let keys: Vec<&String> = kwargs.as_object().unwrap().keys().collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "engine_kwargs are written in key order");
    // Prefix caching on, eager by a bare flag.
    let (object, _) = render(&gpu_vllm(
        json!({"engine": {"type": "vllm", "args": {"enable-prefix-caching": "true", "enforce-eager": ""}}}),
    ));
    assert_eq!(
        llm_config(&object)["engine_kwargs"],
        json!({"enable_prefix_caching": true, "enforce_eager": true})
    );
    // Without a served name the model id is the API name; one GPU sets no tensor parallelism.
    assert_eq!(
        llm_config(&object)["model_loading_config"]["model_id"],
        "Qwen/Qwen3-8B"
    );
    // Flags the provider sets are refused; vLLM HTTP server flags have no equivalent.
    for key in [
        "model",
        "served-model-name",
        "max-model-len",
        "tensor-parallel-size",
    ] {
        let result = KubeRayProvider.render(
            &gpu_vllm(json!({"engine": {"type": "vllm", "args": {key: "x"}}})),
            &schema(),
        );
        assert_eq!(
            result,
            Err(RenderError::Unsupported(format!(
                "engine.args.{key} is set by the KubeRay provider from the ModelDeployment spec; remove it from engine.args"
            )))
        );
    }
    let (object, warnings) = render(&gpu_vllm(
        json!({"engine": {"type": "vllm", "args": {"port": "9000", "dtype": "bfloat16"}}}),
    ));
    assert_eq!(
        llm_config(&object)["engine_kwargs"],
        json!({"dtype": "bfloat16", "enable_prefix_caching": true})
    );
    assert_eq!(
        warnings,
        [(
            "SettingIgnored".to_string(),
            "engine.args.port is ignored: it configures the vLLM HTTP server, which Ray Serve's OpenAI ingress replaces on KubeRay".to_string()
        )]
    );
}

#[test]
fn replicas_image_and_defaults() {
    // scaling.replicas goes to Serve and to the worker group (0 is refused by the
    // compatibility check, see `compatibility_messages`).
    let (object, _) = render(&gpu_vllm(json!({"scaling": {"replicas": 3}})));
    assert_eq!(
        llm_config(&object)["deployment_config"],
        json!({"num_replicas": 3})
    );
    let group = &workers(&object)[0];
    assert_eq!(
        (
            &group["replicas"],
            &group["minReplicas"],
            &group["maxReplicas"]
        ),
        (&json!(3), &json!(3), &json!(3))
    );
    // Defaults: one replica, the Ray LLM image, head 4 CPUs / 16Gi, workers 32Gi.
    let (object, _) = render(&gpu_vllm(json!({})));
    assert_eq!(
        llm_config(&object)["deployment_config"],
        json!({"num_replicas": 1})
    );
    assert_eq!(
        container(&head(&object))["image"],
        "rayproject/ray-llm:2.55.0-py311-cu128"
    );
    assert_eq!(
        container(&head(&object))["resources"],
        json!({"limits": {"cpu": "4", "memory": "16Gi"}, "requests": {"cpu": "4", "memory": "16Gi"}})
    );
    assert_eq!(
        head(&object)["rayStartParams"],
        json!({"dashboard-host": "0.0.0.0"})
    );
    let worker = &workers(&object)[0];
    assert_eq!(worker["groupName"], "gpu-workers");
    assert_eq!(worker["rayStartParams"], json!({}));
    assert_eq!(
        container(worker)["resources"],
        json!({"limits": {"memory": "32Gi", "nvidia.com/gpu": "1"}, "requests": {"memory": "32Gi", "nvidia.com/gpu": "1"}})
    );
    assert_eq!(object["spec"]["rayClusterConfig"]["rayVersion"], "2.55.0");
    assert!(container(worker).get("env").is_none());
    assert_eq!(
        worker["template"]["metadata"],
        json!({"labels": {"airunway.ai/deployment": "m", "airunway.ai/model-deployment": "m"}})
    );
    // spec.image replaces the image of every Ray pod.
    let (object, _) = render(&gpu_vllm(
        json!({"image": "registry.example/ray-llm:custom"}),
    ));
    assert_eq!(
        container(&head(&object))["image"],
        "registry.example/ray-llm:custom"
    );
    assert_eq!(
        container(&workers(&object)[0])["image"],
        "registry.example/ray-llm:custom"
    );
    // Another GPU type: its resource name, and Ray is told the count.
    let (object, _) = render(&gpu_vllm(
        json!({"resources": {"gpu": {"count": 2, "type": "amd.com/gpu"}}}),
    ));
    let worker = &workers(&object)[0];
    assert_eq!(container(worker)["resources"]["limits"]["amd.com/gpu"], "2");
    assert_eq!(worker["rayStartParams"], json!({"num-gpus": "2"}));
    assert_eq!(
        llm_config(&object)["engine_kwargs"],
        json!({"enable_prefix_caching": true, "tensor_parallel_size": 2}),
        "prefix caching is written from engine.enablePrefixCaching (default true)"
    );
}

#[test]
fn token_secret_env_and_scheduling_on_every_pod() {
    let (object, _) = render(&gpu_vllm(json!({
        "secrets": {"huggingFaceToken": "my-hf"},
        "env": [{"name": "HF_TOKEN", "value": "plain"}, {"name": "A", "value": "1"},
                {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "b"}}}],
        "nodeSelector": {"pool": "a100"},
        "tolerations": [{"key": "gpu", "operator": "Exists"}],
    })));
    for group in [head(&object), workers(&object)[0].clone()] {
        assert_eq!(
            container(&group)["env"],
            json!([
                {"name": "A", "value": "1"},
                {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "b"}}},
                {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "my-hf", "key": "HF_TOKEN"}}},
            ]),
            "the Secret is referenced, never read, and replaces a plain HF_TOKEN"
        );
        assert_eq!(
            group["template"]["spec"]["nodeSelector"],
            json!({"pool": "a100"})
        );
        assert_eq!(
            group["template"]["spec"]["tolerations"],
            json!([{"key": "gpu", "operator": "Exists"}])
        );
    }
}

#[test]
fn disaggregated_full_object() {
    let deployment = md(json!({
        "model": {"id": "meta-llama/Llama-3.1-70B-Instruct"},
        "engine": {"type": "vllm", "contextLength": 16384},
        "serving": {"mode": "disaggregated"},
        "scaling": {"prefill": {"replicas": 2, "gpu": {"count": 4}, "memory": "128Gi"},
                    "decode": {"replicas": 3, "gpu": {"count": 2}}},
        "provider": {"name": "kuberay"},
    }));
    let (object, warnings) = render(&deployment);
    assert!(warnings.is_empty(), "{warnings:?}");
    let expected = fixture("disaggregated-rayservice.yaml");
    let mut a = object.clone();
    let mut b = expected.clone();
    a["spec"]["serveConfigV2"] = Value::Null;
    b["spec"]["serveConfigV2"] = Value::Null;
    assert_eq!(a, b);
    let fixture_text = expected["spec"]["serveConfigV2"].as_str().unwrap();
    let fixture_config: Vec<Value> = serde_saphyr::from_multiple(fixture_text).unwrap();
    assert_eq!(serve_config(&object), fixture_config[0]);

    let app = &serve_config(&object)["applications"][0];
    assert_eq!(app["import_path"], "ray.serve.llm:build_pd_openai_app");
    assert_eq!(
        app["args"]["prefill_config"]["deployment_config"]["num_replicas"],
        2
    );
    assert_eq!(
        app["args"]["decode_config"]["deployment_config"]["num_replicas"],
        3
    );
    assert_eq!(
        app["args"]["prefill_config"]["engine_kwargs"]["tensor_parallel_size"],
        4
    );
    let groups = workers(&object);
    let names: Vec<&str> = groups
        .iter()
        .map(|g| g["groupName"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["prefill-workers", "decode-workers"]);
    assert_eq!(groups[0]["replicas"], 2);
    assert_eq!(
        container(&groups[0])["resources"]["limits"],
        json!({"memory": "128Gi", "nvidia.com/gpu": "4"})
    );
    assert_eq!(groups[1]["replicas"], 3);
    assert_eq!(
        container(&groups[1])["resources"]["limits"],
        json!({"memory": "32Gi", "nvidia.com/gpu": "2"})
    );

    // Settings of the other mode are ignored with a warning naming them.
    let (_, warnings) = render(&md(json!({
        "model": {"id": "a/b"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"},
        "scaling": {"replicas": 4, "prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}},
        "resources": {"memory": "10Gi"},
    })));
    let messages: Vec<&str> = warnings.iter().map(|(_, m)| m.as_str()).collect();
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert!(messages[0].starts_with(
        "resources.cpu and resources.memory are ignored in disaggregated mode on KubeRay"
    ));
    assert!(
        warnings
            .iter()
            .all(|(reason, _)| reason == "SettingIgnored")
    );
}

#[test]
fn override_rules() {
    let with = |overrides: Value| {
        gpu_vllm(json!({"provider": {"name": "kuberay", "overrides": overrides}}))
    };
    // The design doc's example: head resources and start parameters.
    let (object, warnings) = render(&with(
        json!({"head": {"resources": {"cpu": "4", "memory": "8Gi"},
        "rayStartParams": {"dashboard-host": "0.0.0.0", "num-cpus": "0"}}}),
    ));
    assert!(warnings.is_empty());
    assert_eq!(
        container(&head(&object))["resources"],
        json!({"limits": {"cpu": "4", "memory": "8Gi"}, "requests": {"cpu": "4", "memory": "8Gi"}})
    );
    assert_eq!(
        head(&object)["rayStartParams"],
        json!({"dashboard-host": "0.0.0.0", "num-cpus": "0"})
    );
    // Deep merge: only what is given changes; null deletes a default.
    let (object, _) = render(&with(
        json!({"head": {"resources": {"memory": "12Gi", "cpu": null},
        "rayStartParams": {"dashboard-host": null, "num-cpus": "0"}}}),
    ));
    assert_eq!(
        container(&head(&object))["resources"],
        json!({"limits": {"memory": "12Gi"}, "requests": {"memory": "12Gi"}})
    );
    assert_eq!(head(&object)["rayStartParams"], json!({"num-cpus": "0"}));
    let (object, _) = render(&with(
        json!({"head": {"resources": null, "rayStartParams": null}}),
    ));
    assert_eq!(container(&head(&object))["resources"], json!({}));
    assert_eq!(head(&object)["rayStartParams"], json!({}));
    // Worker groups: CPU and memory where the deployment does not set them, start parameters.
    let (object, warnings) = render(&with(
        json!({"worker": {"resources": {"cpu": "16", "memory": "48Gi"},
        "rayStartParams": {"object-store-memory": "1000000000"}}}),
    ));
    assert!(warnings.is_empty());
    let worker = &workers(&object)[0];
    assert_eq!(
        container(worker)["resources"]["requests"],
        json!({"cpu": "16", "memory": "48Gi", "nvidia.com/gpu": "1"})
    );
    assert_eq!(
        worker["rayStartParams"],
        json!({"object-store-memory": "1000000000"})
    );
    let (object, _) = render(&gpu_vllm(
        json!({"resources": {"gpu": {"count": 1}, "memory": "20Gi", "cpu": "2"},
        "provider": {"name": "kuberay", "overrides": {"worker": {"resources": {"cpu": "16", "memory": "48Gi"}}}}}),
    ));
    assert_eq!(
        container(&workers(&object)[0])["resources"]["requests"],
        json!({"cpu": "2", "memory": "20Gi", "nvidia.com/gpu": "1"}),
        "the deployment's own resources win over the override"
    );
    // Unknown keys at any depth: warnings naming the path.
    let (_, warnings) = render(&with(
        json!({"haed": {"resources": {"cpu": "1"}}, "head": {"replicsa": 2, "resources": {"gpu": null}}}),
    ));
    let messages: Vec<&str> = warnings.iter().map(|(_, m)| m.as_str()).collect();
    assert_eq!(
        messages,
        [
            "unknown key provider.overrides.head.resources.gpu is ignored (KubeRay supports head.resources.cpu, head.resources.memory, head.rayStartParams, worker.resources.cpu, worker.resources.memory, worker.rayStartParams)",
            "unknown key provider.overrides.head.replicsa is ignored (KubeRay supports head.resources.cpu, head.resources.memory, head.rayStartParams, worker.resources.cpu, worker.resources.memory, worker.rayStartParams)",
            "unknown key provider.overrides.haed is ignored (KubeRay supports head.resources.cpu, head.resources.memory, head.rayStartParams, worker.resources.cpu, worker.resources.memory, worker.rayStartParams)",
        ]
    );
    assert!(
        warnings
            .iter()
            .all(|(reason, _)| reason == "UnknownOverride")
    );
    // Wrong types: the render fails naming the path and the expected type.
    for (overrides, message) in [
        (
            json!({"head": {"resources": {"cpu": 4}}}),
            "invalid provider.overrides: provider.overrides.head.resources.cpu must be a quantity string such as \"4\" or \"8Gi\", got 4",
        ),
        (
            json!({"head": {"rayStartParams": {"num-cpus": 0}}}),
            "invalid provider.overrides: provider.overrides.head.rayStartParams must be a map of strings, got {\"num-cpus\":0}",
        ),
        (
            json!({"worker": "big"}),
            "invalid provider.overrides: provider.overrides.worker must be an object, got \"big\"",
        ),
    ] {
        assert_eq!(held(&with(overrides)), message);
    }
    // Privilege-escalating keys are refused wherever they are.
    for (overrides, path) in [
        (
            json!({"head": {"securityContext": {"privileged": true}}}),
            "provider.overrides.head.securityContext",
        ),
        (
            json!({"worker": {"template": {"spec": {"hostNetwork": true}}}}),
            "provider.overrides.worker.template.spec.hostNetwork",
        ),
        (
            json!({"serviceAccountName": "admin"}),
            "provider.overrides.serviceAccountName",
        ),
    ] {
        assert_eq!(
            held(&with(overrides)),
            format!(
                "invalid provider.overrides: {path} would escalate the privileges of the Ray pods and is not allowed"
            )
        );
    }
}

#[test]
fn compatibility_messages() {
    for (spec, message) in [
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "image": "i", "resources": {"gpu": {"count": 1}}}),
            "KubeRay does not support llamacpp engine",
        ),
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "sglang"}, "resources": {"gpu": {"count": 1}}}),
            "KubeRay does not support sglang engine",
        ),
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "trtllm"}, "resources": {"gpu": {"count": 1}}}),
            "KubeRay does not support trtllm engine",
        ),
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm", "image": "my/ray:1"}}),
            "KubeRay requires GPU (set resources.gpu.count > 0)",
        ),
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 0}}}),
            "KubeRay requires GPU (set resources.gpu.count > 0)",
        ),
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"},
                "scaling": {"prefill": {"replicas": 1}, "decode": {"gpu": {"count": 1}}}}),
            "KubeRay disaggregated mode requires scaling.prefill.gpu.count > 0",
        ),
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"},
                "scaling": {"prefill": {"gpu": {"count": 1}}}}),
            "KubeRay disaggregated mode requires scaling.decode.gpu.count > 0",
        ),
        (
            json!({"model": {"source": "custom"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}}),
            "KubeRay requires model.id (the model the Ray Serve application loads)",
        ),
        // No zero: the Ray head always runs (aggregated and disaggregated alike).
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}, "scaling": {"replicas": 0}}),
            airunway_provider_kuberay::compat::NO_ZERO,
        ),
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"},
                "scaling": {"replicas": 0, "prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}}}),
            airunway_provider_kuberay::compat::NO_ZERO,
        ),
    ] {
        assert_eq!(
            KubeRayProvider.check_compatibility(&md(spec)),
            Err(Incompatible::new(message))
        );
    }
    assert_eq!(
        KubeRayProvider.check_compatibility(&gpu_vllm(json!({}))),
        Ok(())
    );
    assert_eq!(
        KubeRayProvider.check_compatibility(&md(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"},
            "serving": {"mode": "disaggregated"}, "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}}}))),
        Ok(())
    );
}

fn sample(name: &str) -> Value {
    testing::upstream(
        env!("CARGO_MANIFEST_DIR"),
        &format!("status-samples/{name}"),
    )
    .unwrap()
}

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

/// (phase, message, ready, (desired, ready, available) replicas)
type Seen = (
    Phase,
    Option<String>,
    bool,
    (Option<i32>, Option<i32>, Option<i32>),
);

fn translate(value: Value) -> Seen {
    let deployment = gpu_vllm(json!({}));
    let t = KubeRayProvider.translate_status(&deployment, &[Some(&object(value))]);
    let endpoint = t.endpoint.unwrap();
    assert_eq!(
        (endpoint.service.as_deref(), endpoint.port),
        (Some("m-serve-svc"), Some(8000))
    );
    let r = t.replicas.unwrap();
    (
        t.phase,
        t.message,
        t.ready,
        (r.desired, r.ready, r.available),
    )
}

const TRACEBACK: &str = "Deploying app 'llm' failed with exception:\nTraceback (most recent call last):\n  File \"/home/ray/anaconda3/lib/python3.11/site-packages/ray/serve/_private/application_state.py\", line 1193, in build_serve_application\n    app = call_user_app_builder_with_args_if_necessary(\nModuleNotFoundError: No module named 'vllm_serve'";

#[test]
fn status_translation_of_every_sample() {
    assert_eq!(
        translate(sample("rayservice-pending.yaml")),
        (
            Phase::Deploying,
            Some(
                "RayService is initializing: RayCluster Pods are being provisioned for first time"
                    .into()
            ),
            false,
            (Some(1), Some(0), Some(0))
        )
    );
    assert_eq!(
        translate(sample("rayservice-running.yaml")),
        (Phase::Running, None, true, (Some(1), Some(1), Some(1)))
    );
    // The failure is only in the pending cluster's application status; Ready says "initializing".
    assert_eq!(
        translate(sample("rayservice-deploy-failed.yaml")),
        (
            Phase::Failed,
            Some(TRACEBACK.into()),
            false,
            (Some(1), Some(0), Some(0))
        )
    );
    // No status yet.
    let mut fresh = sample("rayservice-running.yaml");
    fresh.as_object_mut().unwrap().remove("status");
    assert_eq!(
        translate(fresh),
        (
            Phase::Deploying,
            Some("Waiting for the KubeRay operator to reconcile RayService m".into()),
            false,
            (Some(1), Some(0), Some(0))
        )
    );
    // Not created yet.
    let t = KubeRayProvider.translate_status(&gpu_vllm(json!({})), &[None]);
    assert_eq!(
        (t.phase, t.ready, t.endpoint),
        (Phase::Deploying, false, None)
    );
}

/// The running sample with the active application in `status`/`message`.
fn running_with_app(status: &str, message: Option<&str>) -> Value {
    let mut value = sample("rayservice-running.yaml");
    let app = &mut value["status"]["activeServiceStatus"]["applicationStatuses"]["llm"];
    app["status"] = json!(status);
    if let Some(message) = message {
        app["message"] = json!(message);
    }
    value
}

#[test]
fn ready_is_not_application_health() {
    // Ready=True (serve endpoints exist) but the active application failed: Failed, not Running.
    assert_eq!(
        translate(running_with_app(
            "DEPLOY_FAILED",
            Some("Deploying app 'llm' failed: CUDA out of memory")
        )),
        (
            Phase::Failed,
            Some("Deploying app 'llm' failed: CUDA out of memory".into()),
            false,
            (Some(1), Some(0), Some(0))
        )
    );
    assert_eq!(
        translate(running_with_app("DEPLOY_FAILED", None)),
        (
            Phase::Failed,
            Some("Serve application llm is DEPLOY_FAILED".into()),
            false,
            (Some(1), Some(0), Some(0))
        )
    );
    // Unhealthy after it ran: Serve restarts replicas, so Deploying with the message.
    assert_eq!(
        translate(running_with_app("UNHEALTHY", Some("The deployment VLLMDeployment is UNHEALTHY: replica health check failed"))),
        (
            Phase::Deploying,
            Some("Serve application llm is UNHEALTHY: The deployment VLLMDeployment is UNHEALTHY: replica health check failed".into()),
            false,
            (Some(1), Some(0), Some(0))
        )
    );
    // Still deploying behind Ready=True.
    assert_eq!(
        translate(running_with_app("DEPLOYING", None)),
        (
            Phase::Deploying,
            Some("Serve application llm is DEPLOYING".into()),
            false,
            (Some(1), Some(0), Some(0))
        )
    );
    // Serve endpoints dropped to 0 after promotion.
    let mut value = sample("rayservice-running.yaml");
    value["status"]["conditions"][0] = json!({"type": "Ready", "status": "False", "reason": "ZeroServeEndpoints",
        "message": "Number of serve endpoints dropped to 0", "lastTransitionTime": "2026-05-14T10:09:00Z"});
    assert_eq!(
        translate(value),
        (
            Phase::Deploying,
            Some("Number of serve endpoints dropped to 0".into()),
            false,
            (Some(1), Some(0), Some(0))
        )
    );
}

#[test]
fn upgrades() {
    // An update rolling out on a pending cluster while the active one serves.
    let running = sample("rayservice-running.yaml");
    let pending = sample("rayservice-pending.yaml");
    let mut upgrading = running.clone();
    upgrading["status"]["pendingServiceStatus"] = pending["status"]["pendingServiceStatus"].clone();
    upgrading["status"]["pendingServiceStatus"]["rayClusterName"] = json!("qwen3-raycluster-b9q4z");
    assert_eq!(
        translate(upgrading),
        (
            Phase::Running,
            Some("Updating: a new Ray cluster is being prepared and the previous one keeps serving: RayCluster Pods are being provisioned for first time".into()),
            false,
            (Some(1), Some(1), Some(1))
        )
    );
    // The update failed on the pending cluster: surfaced, while the previous version serves.
    let failed = sample("rayservice-deploy-failed.yaml");
    let mut upgrade_failed = running.clone();
    upgrade_failed["status"]["pendingServiceStatus"] =
        failed["status"]["pendingServiceStatus"].clone();
    upgrade_failed["status"]["pendingServiceStatus"]["rayClusterName"] =
        json!("qwen3-raycluster-b9q4z");
    assert_eq!(
        translate(upgrade_failed),
        (
            Phase::Running,
            Some(format!(
                "The update failed to deploy; the previous version keeps serving: {TRACEBACK}"
            )),
            false,
            (Some(1), Some(1), Some(1))
        )
    );
}

#[test]
fn replicas_sum_the_worker_groups() {
    let mut value = sample("rayservice-running.yaml");
    let group = value["spec"]["rayClusterConfig"]["workerGroupSpecs"][0].clone();
    let mut second = group.clone();
    second["groupName"] = json!("decode-workers");
    second["replicas"] = json!(3);
    value["spec"]["rayClusterConfig"]["workerGroupSpecs"] = json!([group, second]);
    value["status"]["activeServiceStatus"]["rayClusterStatus"]["readyWorkerReplicas"] = json!(4);
    value["status"]["activeServiceStatus"]["rayClusterStatus"]["availableWorkerReplicas"] =
        json!(3);
    assert_eq!(translate(value).3, (Some(4), Some(4), Some(3)));
}

fn crd() -> CustomResourceDefinition {
    testing::established_crd(
        env!("CARGO_MANIFEST_DIR"),
        "kuberay/ray.io_rayservices.yaml",
    )
    .unwrap()
}

#[test]
fn schema_detection() {
    match KubeRayProvider.detect_schema(Some(&crd())) {
        SchemaDetection::Supported(s) => assert_eq!(
            (s.api_version.as_str(), s.fingerprint.as_str()),
            ("ray.io/v1", V1_KUBERAY_1_3)
        ),
        other => panic!("{other:?}"),
    }
    // Only v1alpha1 served: rendered for v1alpha1.
    let mut old = crd();
    for version in &mut old.spec.versions {
        version.served = version.name == "v1alpha1";
    }
    match KubeRayProvider.detect_schema(Some(&old)) {
        SchemaDetection::Supported(s) => assert_eq!(
            (s.api_version.as_str(), s.fingerprint.as_str()),
            ("ray.io/v1alpha1", V1ALPHA1_KUBERAY_1_3)
        ),
        other => panic!("{other:?}"),
    }
    let rendered = KubeRayProvider
        .render(
            &gpu_vllm(json!({})),
            &UpstreamSchema {
                version: "v1alpha1".into(),
                api_version: "ray.io/v1alpha1".into(),
                fingerprint: V1ALPHA1_KUBERAY_1_3.into(),
            },
        )
        .unwrap();
    assert_eq!(rendered.objects[0]["apiVersion"], "ray.io/v1alpha1");
    // A changed schema (a field this provider writes retyped): refused, naming the schema.
    let mut changed = serde_json::to_value(crd()).unwrap();
    changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["serveConfigV2"]["type"] = json!("object");
    let changed: CustomResourceDefinition = serde_json::from_value(changed).unwrap();
    match KubeRayProvider.detect_schema(Some(&changed)) {
        SchemaDetection::Unsupported {
            api_version,
            message,
            ..
        } => {
            assert_eq!(api_version, "ray.io/v1");
            assert!(
                message
                    .starts_with("unsupported rayservices.ray.io schema ray.io/v1 (fingerprint "),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        KubeRayProvider.detect_schema(None),
        SchemaDetection::CrdNotInstalled {
            crd: "rayservices.ray.io".into()
        }
    );
}

#[test]
fn registration_is_explicit_only() {
    let fixture: Value = testing::read_yaml(
        format!(
            "{}/../core-controller/tests/fixtures/shipped-providers/kuberay.yaml",
            env!("CARGO_MANIFEST_DIR")
        )
        .as_ref(),
    )
    .unwrap();
    let registration = serde_json::to_value(registration_spec(&KubeRayProvider)).unwrap();
    assert_eq!(registration, fixture["spec"]);
    assert!(registration.get("selectionRules").is_none());
    assert_eq!(KubeRayProvider.upstream().crd_name(), "rayservices.ray.io");
}

#[test]
fn engine_fields_prefix_caching_eager_image_and_extra_args() {
    // Both fields as engine keyword arguments; engine.image preferred over spec.image.
    let (object, warnings) = render(&gpu_vllm(json!({
        "engine": {"type": "vllm", "enablePrefixCaching": false, "enforceEager": true, "image": "registry.example/ray-llm:2"},
        "image": "registry.example/ray-llm:legacy",
    })));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        llm_config(&object)["engine_kwargs"],
        json!({"enable_prefix_caching": false, "enforce_eager": true})
    );
    assert_eq!(
        container(&head(&object))["image"],
        "registry.example/ray-llm:2"
    );
    assert_eq!(
        container(&workers(&object)[0])["image"],
        "registry.example/ray-llm:2"
    );
    // Disaggregated: both configs get them.
    let (object, _) = render(&md(json!({
        "model": {"id": "a/b"}, "engine": {"type": "vllm", "enablePrefixCaching": false, "enforceEager": true},
        "serving": {"mode": "disaggregated"},
        "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}},
    })));
    let config = serve_config(&object);
    for role in ["prefill_config", "decode_config"] {
        let kwargs = &config["applications"][0]["args"][role]["engine_kwargs"];
        assert_eq!(kwargs["enable_prefix_caching"], false, "{role}");
        assert_eq!(kwargs["enforce_eager"], true, "{role}");
    }
    // engine.args win over the fields; a contradicting field is reported.
    let (object, warnings) = render(&gpu_vllm(json!({
        "engine": {"type": "vllm", "enablePrefixCaching": true, "enforceEager": true, "args": {"enable-prefix-caching": "false", "enforce-eager": "true"}},
    })));
    assert_eq!(
        llm_config(&object)["engine_kwargs"],
        json!({"enable_prefix_caching": false, "enforce_eager": true})
    );
    assert_eq!(
        warnings,
        [(
            "SettingIgnored".to_string(),
            "engine.enablePrefixCaching: true is ignored: engine.args.enable-prefix-caching sets enable_prefix_caching to false".to_string()
        )]
    );
    // extraArgs: no command line on KubeRay, so a warning naming them; nothing rendered.
    let (object, warnings) = render(&gpu_vllm(json!({
        "engine": {"type": "vllm", "extraArgs": ["--kv-cache-dtype=fp8", "--max-num-seqs", "8"]},
    })));
    assert_eq!(
        llm_config(&object)["engine_kwargs"],
        json!({"enable_prefix_caching": true})
    );
    assert_eq!(
        warnings,
        [(
            "SettingIgnored".to_string(),
            "engine.extraArgs (--kv-cache-dtype=fp8 --max-num-seqs 8) is ignored: Ray Serve LLM takes vLLM engine keyword arguments, not a command line (set them in engine.args, e.g. kv-cache-dtype: fp8)".to_string()
        )]
    );
    // spec.gateway is the core's: no warning.
    let (_, warnings) = render(&gpu_vllm(
        json!({"gateway": {"enabled": false, "modelName": "m"}}),
    ));
    assert!(warnings.is_empty(), "{warnings:?}");
    // The engine and model labels.
    assert_eq!(
        object["metadata"]["labels"],
        json!({"airunway.ai/engine-type": "vllm", "airunway.ai/model-deployment": "m", "airunway.ai/model-source": "huggingface"})
    );
}

/// Every Ray pod (head and each worker group) mounts the `model.storage` claims where they
/// resolve, and vLLM is pointed at the caches unless `env` sets the variables.
#[test]
fn storage_volumes_on_every_ray_pod() {
    let deployment = md(
        json!({"model": {"id": "Qwen/Qwen3-8B", "storage": {"volumes": [
            {"name": "weights", "purpose": "modelCache"},
            {"name": "compiled", "purpose": "compilationCache", "size": "10Gi"}]}},
        "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"},
        "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}},
        "provider": {"name": "kuberay"}, "env": [{"name": "A", "value": "1"}]}),
    );
    let shared = airunway_api::storage::volume_for(
        &deployment,
        airunway_api::storage::VolumePurpose::ModelCache,
    )
    .unwrap()
    .claim_name;
    let object = KubeRayProvider
        .render(&deployment, &schema())
        .unwrap()
        .objects[0]
        .clone();
    let groups: Vec<Value> = [head(&object)]
        .into_iter()
        .chain(workers(&object))
        .collect();
    assert_eq!(groups.len(), 3);
    for group in &groups {
        assert_eq!(
            group["template"]["spec"]["volumes"],
            json!([{"name": "weights", "persistentVolumeClaim": {"claimName": shared}},
                   {"name": "compiled", "persistentVolumeClaim": {"claimName": "m-compiled"}}])
        );
        let container = container(group);
        assert_eq!(
            container["volumeMounts"],
            json!([{"name": "weights", "mountPath": "/model-cache"},
                   {"name": "compiled", "mountPath": "/compilation-cache"}])
        );
        assert_eq!(
            container["env"],
            json!([{"name": "A", "value": "1"},
                   {"name": "HF_HOME", "value": "/model-cache"},
                   {"name": "VLLM_CACHE_ROOT", "value": "/compilation-cache"}])
        );
    }
    let plain = KubeRayProvider
        .render(&gpu_vllm(json!({})), &schema())
        .unwrap()
        .objects[0]
        .clone();
    assert_eq!(head(&plain)["template"]["spec"]["volumes"], Value::Null);
    assert_eq!(container(&head(&plain))["volumeMounts"], Value::Null);
}

/// The scale subresource writes `scaling.replicas`: a disaggregated deployment scales in units
/// of its prefill:decode ratio, in the worker groups and in Serve alike.
#[test]
fn scaling_replicas_scales_a_disaggregated_deployment_in_units_of_its_ratio() {
    for (units, prefill, decode) in [(1, 1, 2), (3, 3, 6)] {
        let (object, _) = render(&md(json!({
            "model": {"id": "a/b"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"},
            "scaling": {"replicas": units, "prefill": {"replicas": 1, "gpu": {"count": 1}},
                        "decode": {"replicas": 2, "gpu": {"count": 1}}},
        })));
        let groups = workers(&object);
        assert_eq!(
            (groups[0]["replicas"].clone(), groups[1]["replicas"].clone()),
            (json!(prefill), json!(decode))
        );
        let args = &serve_config(&object)["applications"][0]["args"];
        assert_eq!(
            (
                args["prefill_config"]["deployment_config"]["num_replicas"].clone(),
                args["decode_config"]["deployment_config"]["num_replicas"].clone()
            ),
            (json!(prefill), json!(decode))
        );
    }
}

/// Through the SDK's status path: one of two GPU workers ready on a serving cluster gives
/// `Degraded=True` from the counts; a failed application on a ready cluster gives
/// `ApplicationUnhealthy`; the status carries `workload` and `selector` of the cluster's workers.
#[test]
fn one_of_two_workers_ready_and_a_failed_application_are_degraded_through_the_sdk() {
    use airunway_api::constants::condition_types::DEGRADED;
    use airunway_api::v1alpha1::ConditionStatus;
    let now = airunway_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        "2026-01-01T00:00:00Z".parse().unwrap(),
    );
    let deployment = gpu_vllm(json!({"scaling": {"replicas": 2}}));
    let first = cycle::apply(&KubeRayProvider, &deployment, &schema(), None, &now).unwrap();
    let serving = |ready: i32, app: &str| {
        cycle::served(
            &first.desired,
            json!({
                "conditions": [{"type": "Ready", "status": "True", "reason": "NonZeroServeEndpoints"}],
                "activeServiceStatus": {
                    "rayClusterName": "m-raycluster-a1",
                    "applicationStatuses": {"llm": {"status": app, "message": "replica crashed"}},
                    "rayClusterStatus": {"readyWorkerReplicas": ready, "availableWorkerReplicas": ready},
                },
            }),
        )
        .unwrap()
    };
    let degraded = |ready: i32, app: &str| {
        let (status, _) = cycle::status_sync(
            &KubeRayProvider,
            &deployment,
            &first.desired,
            &serving(ready, app),
        );
        let condition = status
            .conditions
            .iter()
            .find(|c| c.type_ == DEGRADED)
            .unwrap()
            .clone();
        (
            condition.status,
            condition.reason,
            condition.message,
            status,
        )
    };
    let (state, reason, message, status) = degraded(1, "RUNNING");
    assert_eq!(
        (state, reason.as_str(), message.as_str()),
        (
            ConditionStatus::True,
            "ReplicasUnavailable",
            "1 of 2 replicas ready: serving at reduced capacity"
        )
    );
    let patch = status.patch(&deployment, &now);
    assert_eq!(
        patch["status"]["selector"],
        "ray.io/cluster=m-raycluster-a1,ray.io/node-type=worker"
    );
    assert_eq!(
        patch["status"]["workload"]["workloads"][0]["kind"],
        "RayCluster"
    );
    let (state, reason, ..) = degraded(2, "RUNNING");
    assert_eq!(
        (state, reason.as_str()),
        (ConditionStatus::False, "NotDegraded")
    );
    let (state, reason, message, _) = degraded(2, "UNHEALTHY");
    assert_eq!(
        (state, reason.as_str(), message.as_str()),
        (
            ConditionStatus::True,
            "ApplicationUnhealthy",
            "Serve application llm is UNHEALTHY while the Ray cluster serves: replica crashed"
        )
    );
}

/// The not-ready reason (and the kind and name of the object it was read from) of a RayService
/// status.
fn not_ready(value: Value) -> Option<(NotReadyReason, String, String, String)> {
    let deployment = gpu_vllm(json!({}));
    let t = KubeRayProvider.translate_status(&deployment, &[Some(&object(value))]);
    t.not_ready.map(|n| {
        let source = n.object.unwrap();
        (n.reason, source.kind, source.name, n.message)
    })
}

#[test]
fn not_ready_reasons_from_what_kuberay_and_serve_write() {
    let running = sample("rayservice-running.yaml");
    let pending = sample("rayservice-pending.yaml");
    let reason_of = |value: Value| not_ready(value).map(|n| n.0);
    assert_eq!(reason_of(running.clone()), None);
    assert_eq!(
        reason_of(pending.clone()),
        Some(NotReadyReason::InProgress),
        "pods provisioning: nothing wrong seen"
    );
    assert_eq!(
        reason_of(sample("rayservice-deploy-failed.yaml")),
        Some(NotReadyReason::Unclassified),
        "a Python error Serve reports, no reason of ours: the catch-all with Serve's words"
    );

    // The Serve application's message names the cause.
    for (message, expected) in [
        (
            "Deploying app 'llm' failed with exception:\nTraceback (most recent call last):\nhuggingface_hub.errors.GatedRepoError: 403 Client Error.\nCannot access gated repo for url https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json.",
            NotReadyReason::ModelAuthFailed,
        ),
        (
            "Deploying app 'llm' failed: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            NotReadyReason::OomKilled,
        ),
        (
            "huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. Repository Not Found for url: https://huggingface.co/api/models/nobody/nothing",
            NotReadyReason::ModelDownloadFailed,
        ),
    ] {
        let mut failed = running.clone();
        failed["status"]["activeServiceStatus"]["applicationStatuses"]["llm"] =
            json!({"status": "DEPLOY_FAILED", "message": message});
        let (reason, kind, name, text) = not_ready(failed).unwrap();
        assert_eq!(reason, expected, "{message}");
        assert_eq!((kind.as_str(), name.as_str()), ("RayService", "qwen3"));
        assert_eq!(text, message);
    }

    // Serve's own words for replicas that wait for GPUs, on a deploying application's
    // deployment: the capacity that is missing.
    let unscheduled = "Deployment 'LLMServer:qwen' in application 'llm' has 1 replicas that have taken more than 30s to be scheduled. This may be due to waiting for the cluster to auto-scale or for a runtime environment to be installed. Resources required for each replica: [{\"CPU\": 1.0, \"GPU\": 1.0}], total resources available: {}. Use `ray status` for more details.";
    let mut waiting = pending.clone();
    waiting["status"]["pendingServiceStatus"]["applicationStatuses"] = json!({"llm": {
        "status": "DEPLOYING", "message": "",
        "serveDeploymentStatuses": {"LLMServer:qwen": {"status": "UPDATING", "message": unscheduled}}}});
    let (reason, _, _, text) = not_ready(waiting).unwrap();
    assert_eq!(
        (reason, text.as_str()),
        (NotReadyReason::InsufficientCapacity, unscheduled)
    );

    // KubeRay cannot create the worker Pods: a quota, read from the RayCluster.
    let mut quota = pending.clone();
    quota["status"]["pendingServiceStatus"]["rayClusterStatus"]["conditions"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "ReplicaFailure", "status": "True", "reason": "FailedCreateWorkerPod",
            "message": "FailedCreateWorkerPod\npods \"qwen3-raycluster-x7k2p-gpu-workers-worker-abcde\" is forbidden: exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=8, limited: requests.nvidia.com/gpu=8",
            "lastTransitionTime": "2026-05-14T10:00:09Z"}));
    let (reason, kind, name, text) = not_ready(quota.clone()).unwrap();
    assert_eq!(
        (reason, kind.as_str(), name.as_str()),
        (
            NotReadyReason::QuotaExceeded,
            "RayCluster",
            "qwen3-raycluster-x7k2p"
        )
    );
    assert!(
        text.starts_with("KubeRay cannot create the Pods of RayCluster qwen3-raycluster-x7k2p: FailedCreateWorkerPod: pods "),
        "{text}"
    );
    // Any other Pod creation failure is the operator's error.
    let mut refused = quota;
    refused["status"]["pendingServiceStatus"]["rayClusterStatus"]["conditions"][4]["message"] =
        json!("FailedCreateHeadPod\nadmission webhook \"x\" denied the request");
    assert_eq!(
        reason_of(refused),
        Some(NotReadyReason::UpstreamReconcileError)
    );
    // The deprecated state `failed`, should a KubeRay write it.
    let mut failed_cluster = pending.clone();
    failed_cluster["status"]["pendingServiceStatus"]["rayClusterStatus"]["state"] = json!("failed");
    failed_cluster["status"]["pendingServiceStatus"]["rayClusterStatus"]["reason"] =
        json!("head pod deleted");
    assert_eq!(
        reason_of(failed_cluster),
        Some(NotReadyReason::UpstreamReconcileError)
    );

    // Serve endpoints dropped to 0: it served and stopped, KubeRay does not say why.
    let mut dropped = running.clone();
    dropped["status"]["conditions"][0] = json!({"type": "Ready", "status": "False", "reason": "ZeroServeEndpoints",
        "message": "Number of serve endpoints dropped to 0", "lastTransitionTime": "2026-05-14T10:09:00Z"});
    assert_eq!(reason_of(dropped), Some(NotReadyReason::Unclassified));

    // Upgrades: rolling → Updating; failed while the previous version serves → RolloutStalled.
    let mut upgrading = running.clone();
    upgrading["status"]["pendingServiceStatus"] = pending["status"]["pendingServiceStatus"].clone();
    assert_eq!(reason_of(upgrading), Some(NotReadyReason::Updating));
    let mut upgrade_failed = running.clone();
    upgrade_failed["status"]["pendingServiceStatus"] =
        sample("rayservice-deploy-failed.yaml")["status"]["pendingServiceStatus"].clone();
    assert_eq!(
        reason_of(upgrade_failed),
        Some(NotReadyReason::RolloutStalled)
    );
    // A generation KubeRay has not reported on while the previous one serves: Updating, Running.
    let mut behind = running;
    behind["metadata"]["generation"] = json!(2);
    let deployment = gpu_vllm(json!({}));
    let t = KubeRayProvider.translate_status(&deployment, &[Some(&object(behind))]);
    assert_eq!(
        (t.phase, t.ready, t.not_ready.map(|n| n.reason)),
        (Phase::Running, false, Some(NotReadyReason::Updating))
    );
}

fn two_s3_adapters() -> Value {
    json!([{"name": "sql", "source": "s3://bucket/loras/sql", "maxRank": 8},
           {"name": "support", "source": "s3://bucket/loras/support", "maxRank": 12}])
}

/// Adapters under one `s3://` prefix: Ray Serve LLM's `lora_config` and vLLM's LoRA keyword
/// arguments on the LLM config, nothing else of the object changes.
#[test]
fn adapters_render_as_lora_config_and_engine_kwargs() {
    let deployment = gpu_vllm(json!({"adapters": two_s3_adapters()}));
    assert_eq!(KubeRayProvider.check_compatibility(&deployment), Ok(()));
    let (object, warnings) = render(&deployment);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        llm_config(&object),
        json!({
            "model_loading_config": {"model_id": "Qwen/Qwen3-8B", "model_source": "Qwen/Qwen3-8B"},
            "deployment_config": {"num_replicas": 1},
            "engine_kwargs": {"enable_prefix_caching": true, "enable_lora": true,
                              "max_loras": 2, "max_lora_rank": 16},
            "lora_config": {"dynamic_lora_loading_path": "s3://bucket/loras",
                            "max_num_adapters_per_replica": 2},
        })
    );
    // Without adapters the same object, minus the LoRA keys.
    let (plain, _) = render(&gpu_vllm(json!({})));
    let mut without = object.clone();
    without["spec"]["serveConfigV2"] = Value::Null;
    let mut plain_object = plain.clone();
    plain_object["spec"]["serveConfigV2"] = Value::Null;
    assert_eq!(without, plain_object);
    assert!(llm_config(&plain).get("lora_config").is_none());

    // gs://, no rank: no max_lora_rank (vLLM's default).
    let (object, _) = render(&gpu_vllm(
        json!({"adapters": [{"name": "tone", "source": "gs://b/tone"}]}),
    ));
    let config = llm_config(&object);
    assert_eq!(
        config["lora_config"],
        json!({"dynamic_lora_loading_path": "gs://b", "max_num_adapters_per_replica": 1})
    );
    assert_eq!(config["engine_kwargs"]["enable_lora"], true);
    assert_eq!(config["engine_kwargs"]["max_loras"], 1);
    assert!(config["engine_kwargs"].get("max_lora_rank").is_none());

    // The served name is the model id clients put before `:<adapter>`.
    let (object, _) = render(&gpu_vllm(
        json!({"model": {"id": "Qwen/Qwen3-8B", "servedName": "qwen"},
        "adapters": two_s3_adapters()}),
    ));
    assert_eq!(
        llm_config(&object)["model_loading_config"]["model_id"],
        "qwen"
    );
}

/// Both the prefill and the decode config load the adapters (a request for `<model>:<adapter>`
/// reaches both).
#[test]
fn disaggregated_adapters_on_both_configs() {
    let deployment = md(json!({
        "model": {"id": "a/b"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"},
        "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}},
        "provider": {"name": "kuberay"}, "adapters": two_s3_adapters(),
    }));
    let (object, warnings) = render(&deployment);
    assert!(warnings.is_empty(), "{warnings:?}");
    let args = &serve_config(&object)["applications"][0]["args"];
    for role in ["prefill_config", "decode_config"] {
        assert_eq!(
            args[role]["lora_config"],
            json!({"dynamic_lora_loading_path": "s3://bucket/loras", "max_num_adapters_per_replica": 2}),
            "{role}"
        );
        assert_eq!(args[role]["engine_kwargs"]["enable_lora"], true, "{role}");
        assert_eq!(args[role]["engine_kwargs"]["max_loras"], 2, "{role}");
        assert_eq!(args[role]["engine_kwargs"]["max_lora_rank"], 16, "{role}");
        assert!(
            args[role]["engine_kwargs"]
                .get("kv_transfer_config")
                .is_some()
        );
    }
}

/// `engine.args` setting a LoRA keyword argument wins over the derived one; turning LoRA off
/// is kept and reported.
#[test]
fn the_users_lora_engine_args_win() {
    let (object, warnings) = render(&gpu_vllm(json!({
        "engine": {"type": "vllm", "args": {"max-loras": "4", "max-lora-rank": "64"}},
        "adapters": two_s3_adapters()})));
    assert!(warnings.is_empty(), "{warnings:?}");
    let kwargs = &llm_config(&object)["engine_kwargs"];
    assert_eq!(kwargs["max_loras"], 4);
    assert_eq!(kwargs["max_lora_rank"], 64);
    assert_eq!(kwargs["enable_lora"], true);
    assert_eq!(
        llm_config(&object)["lora_config"]["max_num_adapters_per_replica"],
        2
    );

    let (object, warnings) = render(&gpu_vllm(json!({
        "engine": {"type": "vllm", "args": {"enable-lora": "false"}},
        "adapters": two_s3_adapters()})));
    assert_eq!(llm_config(&object)["engine_kwargs"]["enable_lora"], false);
    assert_eq!(
        warnings,
        [(
            "SettingIgnored".to_string(),
            "engine.args.enable-lora is false: vLLM will not load spec.adapters on KubeRay (requests for <model>:<adapter> fail); remove it, or remove spec.adapters".to_string()
        )]
    );
}

/// Every refusal, exactly, as the deployment's message (the SDK's checked render holds it).
#[test]
fn adapters_ray_cannot_load_are_refused_with_the_field_and_the_fix() {
    for (adapters, message) in [
        (
            json!([{"name": "sql", "source": "hf://org/sql-lora"}]),
            "spec.adapters[0].source: KubeRay's Ray Serve LLM loads LoRA adapters from one s3:// or gs:// prefix (lora_config.dynamic_lora_loading_path), not from a Hugging Face source: copy the adapter to s3://<bucket>/<prefix>/sql (or gs://), or name a provider that loads it in spec.provider.name (vllm, llmd or kaito)",
        ),
        (
            json!([{"name": "sql", "source": "s3://bucket/loras/sql"}, {"name": "chat", "source": "pvc://loras/chat"}]),
            "spec.adapters[1].source: KubeRay's Ray Serve LLM loads LoRA adapters from one s3:// or gs:// prefix (lora_config.dynamic_lora_loading_path), not from a pvc source: copy the adapter to s3://<bucket>/<prefix>/chat (or gs://), or name a provider that loads it in spec.provider.name (vllm, llmd or kaito)",
        ),
        (
            json!([{"name": "sql", "source": "https://example.com/loras/sql"}]),
            "spec.adapters[0].source: KubeRay's Ray Serve LLM loads LoRA adapters from one s3:// or gs:// prefix (lora_config.dynamic_lora_loading_path), not from a https source: copy the adapter to s3://<bucket>/<prefix>/sql (or gs://), or name a provider that loads it in spec.provider.name (vllm, llmd or kaito)",
        ),
        (
            json!([{"name": "sql", "source": "s3://bucket/loras/sql"}, {"name": "chat", "source": "s3://bucket/chat"}]),
            "spec.adapters[1].source: KubeRay's Ray Serve LLM loads all adapters of a model from one prefix (lora_config.dynamic_lora_loading_path), and s3://bucket/chat is not in s3://bucket/loras, the prefix of spec.adapters[0]: copy the adapter to s3://bucket/loras/chat",
        ),
        (
            json!([{"name": "sql", "source": "s3://bucket/loras/sql-v2"}]),
            "spec.adapters[0].source: KubeRay's Ray Serve LLM serves the adapter in s3://bucket/loras/sql-v2 under its directory's name \"sql-v2\", not \"sql\": name the adapter sql-v2, or copy it to s3://bucket/loras/sql",
        ),
        (
            json!([{"name": "sql", "source": "s3://bucket/loras/sql", "revision": "v2"}]),
            "spec.adapters[0].revision: KubeRay's Ray Serve LLM loads an adapter as its storage prefix holds it and takes no revision: remove the revision, or copy that revision to its own directory under the prefix",
        ),
    ] {
        let deployment = gpu_vllm(json!({"adapters": adapters}));
        assert_eq!(
            KubeRayProvider.check_compatibility(&deployment),
            Err(Incompatible::new(message)),
            "{adapters}"
        );
        assert_eq!(held(&deployment), message, "{adapters}");
        assert!(matches!(
            KubeRayProvider.render(&deployment, &schema()),
            Err(RenderError::Unsupported(m)) if m == message
        ));
    }
    let colon = gpu_vllm(
        json!({"model": {"id": "Qwen/Qwen3-8B", "servedName": "qwen:8b"},
        "adapters": two_s3_adapters()}),
    );
    assert_eq!(
        held(&colon),
        "model.servedName: \"qwen:8b\" contains ':', which KubeRay's Ray Serve LLM reads as the separator of <model>:<adapter>: set model.servedName to a name without ':' to serve spec.adapters"
    );
}
