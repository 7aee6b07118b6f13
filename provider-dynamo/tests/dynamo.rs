//! Dynamo provider: the §4.2 examples as full objects, every engine, every override rule, every
//! status sample, compatibility, schema detection and registration.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airunway_api::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::Incompatible;
use airunway_api::provider::{
    Provider, RenderError, SchemaDetection, UpstreamSchema, cycle, registration_spec, testing,
};
use airunway_api::serde_json::{self, Value, json};
use airunway_api::v1alpha1::{ModelDeployment, Phase};
use airunway_provider_dynamo::DynamoProvider;

fn yaml(text: &str) -> Value {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).unwrap();
    docs.into_iter().find(Value::is_object).unwrap()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn schema() -> UpstreamSchema {
    UpstreamSchema {
        version: "v1alpha1".into(),
        api_version: "nvidia.com/v1alpha1".into(),
        fingerprint: "b988c5e17d5c5ec9".into(),
    }
}

fn md(spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "m", "namespace": "ns", "uid": "u"}, "spec": spec, "status": {"provider": {"name": "dynamo"}}}))
    .unwrap()
}

fn example(name: &str) -> ModelDeployment {
    let mut value = yaml(&read(&format!(
        "../airunway-api/tests/fixtures/design-doc/{name}"
    )));
    value["metadata"]["namespace"] = json!("default");
    serde_json::from_value(value).unwrap()
}

#[test]
fn example_1_full_object() {
    let rendered = DynamoProvider
        .render(&example("modeldeployment-example1.yaml"), &schema())
        .unwrap();
    assert_eq!(
        rendered.objects[0],
        yaml(&read("tests/fixtures/example1-dgd.yaml"))
    );
    assert!(rendered.warnings.is_empty());
}

#[test]
fn example_3_full_object() {
    let rendered = DynamoProvider
        .render(&example("modeldeployment-example3.yaml"), &schema())
        .unwrap();
    assert_eq!(
        rendered.objects[0],
        yaml(&read("tests/fixtures/example3-dgd.yaml"))
    );
}

fn worker(rendered: &Value, service: &str) -> Value {
    rendered["spec"]["services"][service].clone()
}

#[test]
fn every_engine() {
    let gpu2 = json!({"gpu": {"count": 2}, "memory": "80Gi", "cpu": "8"});
    let sglang = DynamoProvider
        .render(&md(json!({"model": {"id": "Qwen/Qwen3-8B", "servedName": "qwen"}, "engine": {"type": "sglang", "contextLength": 4096, "trustRemoteCode": true},
            "resources": gpu2, "scaling": {"replicas": 3}})), &schema())
        .unwrap();
    assert_eq!(sglang.objects[0]["spec"]["backendFramework"], "sglang");
    let w = worker(&sglang.objects[0], "SglangWorker");
    assert_eq!(
        w["extraPodSpec"]["mainContainer"]["image"],
        "nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.1.1"
    );
    assert_eq!(
        w["extraPodSpec"]["mainContainer"]["command"],
        json!(["python3", "-m", "dynamo.sglang"])
    );
    assert_eq!(
        w["extraPodSpec"]["mainContainer"]["args"],
        json!([
            "--model-path",
            "Qwen/Qwen3-8B",
            "--served-model-name",
            "qwen",
            "--context-length",
            "4096",
            "--trust-remote-code",
            "--tp",
            "2"
        ])
    );
    assert_eq!(w["replicas"], 3);
    assert_eq!(
        w["resources"],
        json!({"limits": {"gpu": "2", "memory": "80Gi", "cpu": "8"}, "requests": {"gpu": "2"}}),
        "the Go AI Runway's shape: GPUs as limits and requests, memory and CPU as limits"
    );

    let trt = DynamoProvider
        .render(&md(json!({"model": {"id": "nvidia/Llama-3.1-8B-FP8"}, "engine": {"type": "trtllm", "contextLength": 4096},
            "resources": {"gpu": {"count": 1}}, "image": "registry.example/trtllm:custom"})), &schema())
        .unwrap();
    let w = worker(&trt.objects[0], "TrtllmWorker");
    assert_eq!(
        w["extraPodSpec"]["mainContainer"]["image"], "registry.example/trtllm:custom",
        "spec.image overrides the default"
    );
    assert_eq!(
        w["extraPodSpec"]["mainContainer"]["args"],
        json!(["--model-path", "nvidia/Llama-3.1-8B-FP8"])
    );
    assert_eq!(trt.warnings.len(), 1);
    assert_eq!(trt.warnings[0].reason, "SettingIgnored");
    assert!(
        trt.warnings[0]
            .message
            .starts_with("engine.contextLength is ignored for TensorRT-LLM")
    );

    // engine.args in key order; "", "true" and "false" are flags; reserved keys refused.
    let vllm = DynamoProvider
        .render(&md(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm", "args": {"quantization": "awq", "enforce-eager": "true",
            "enable-prefix-caching": "false", "gpu-memory-utilization": "0.9"}}, "resources": {"gpu": {"count": 1, "type": "amd.com/gpu"}},
            "scaling": {"replicas": 0}, "env": [{"name": "X", "value": "1"}], "nodeSelector": {"pool": "h100"},
            "tolerations": [{"key": "gpu", "operator": "Exists"}], "podTemplate": {"metadata": {"labels": {"team": "a"}}}})), &schema())
        .unwrap();
    let w = worker(&vllm.objects[0], "VllmWorker");
    assert_eq!(
        w["extraPodSpec"]["mainContainer"]["args"],
        json!([
            "--model",
            "a/b",
            "--no-enable-prefix-caching",
            "--enforce-eager",
            "--gpu-memory-utilization",
            "0.9",
            "--quantization",
            "awq"
        ])
    );
    assert_eq!(w["replicas"], 0, "scale to zero is honoured");
    assert_eq!(
        w["resources"]["limits"],
        json!({"gpu": "1", "gpuType": "amd.com/gpu"})
    );
    assert_eq!(w["envs"], json!([{"name": "X", "value": "1"}]));
    assert_eq!(w["extraPodSpec"]["nodeSelector"], json!({"pool": "h100"}));
    assert_eq!(
        w["extraPodSpec"]["tolerations"],
        json!([{"key": "gpu", "operator": "Exists"}])
    );
    assert_eq!(w["extraPodMetadata"], json!({"labels": {"team": "a"}}));
    let reserved = DynamoProvider.render(
        &md(
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm", "args": {"model": "other"}},
        "resources": {"gpu": {"count": 1}}}),
        ),
        &schema(),
    );
    assert!(
        matches!(reserved, Err(RenderError::Unsupported(m)) if m.starts_with("engine.args.model is set by the Dynamo provider"))
    );

    // SGLang disaggregated workers.
    let disagg = DynamoProvider
        .render(&md(json!({"model": {"id": "a/b"}, "engine": {"type": "sglang"}, "serving": {"mode": "disaggregated"},
            "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"replicas": 2, "gpu": {"count": 1}}}})), &schema())
        .unwrap();
    let prefill = worker(&disagg.objects[0], "SglangPrefillWorker");
    assert_eq!(prefill["subComponentType"], "prefill");
    assert_eq!(
        prefill["extraPodSpec"]["mainContainer"]["args"],
        json!([
            "--model-path",
            "a/b",
            "--disaggregation-mode",
            "prefill",
            "--disaggregation-transfer-backend",
            "nixl"
        ])
    );
    assert_eq!(
        worker(&disagg.objects[0], "SglangDecodeWorker")["replicas"],
        2
    );
}

#[test]
fn override_rules() {
    let base = |overrides: Value| {
        md(
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}},
        "provider": {"name": "dynamo", "overrides": overrides}}),
        )
    };
    // Defaults.
    let rendered = DynamoProvider.render(&base(json!({})), &schema()).unwrap();
    let frontend = worker(&rendered.objects[0], "Frontend");
    assert_eq!(frontend["replicas"], 1);
    assert_eq!(
        frontend["resources"],
        json!({"requests": {"cpu": "2", "memory": "4Gi"}})
    );
    assert_eq!(
        frontend["envs"],
        json!([{"name": "DYN_ROUTER_MODE", "value": "round-robin"}])
    );
    // routerMode none leaves Dynamo's default.
    let rendered = DynamoProvider
        .render(&base(json!({"routerMode": "none"})), &schema())
        .unwrap();
    assert!(
        worker(&rendered.objects[0], "Frontend")
            .get("envs")
            .is_none()
    );
    // Unknown keys at any depth are warnings naming the path (the SDK checks the declared
    // overrides before the render).
    let rendered = cycle::checked(
        &DynamoProvider,
        &base(json!({"routrMode": "kv", "frontend": {"replicsa": 3}})),
        &SchemaDetection::Supported(schema()),
    )
    .unwrap();
    let messages: Vec<&str> = rendered
        .warnings
        .iter()
        .map(|w| w.message.as_str())
        .collect();
    assert_eq!(messages.len(), 2);
    assert!(
        messages[0].starts_with("unknown key provider.overrides.frontend.replicsa is ignored"),
        "{messages:?}"
    );
    assert!(
        messages[1].starts_with("unknown key provider.overrides.routrMode is ignored"),
        "{messages:?}"
    );
    assert!(
        rendered
            .warnings
            .iter()
            .all(|w| w.reason == "UnknownOverride")
    );
    // Wrong types fail with the path and the expected type.
    for (overrides, message) in [
        (
            json!({"routerMode": "random"}),
            "invalid provider.overrides: provider.overrides.routerMode must be one of kv, round-robin, none, got \"random\"",
        ),
        (
            json!({"frontend": {"replicas": "two"}}),
            "invalid provider.overrides: provider.overrides.frontend.replicas must be a non-negative integer, got \"two\"",
        ),
        (
            json!({"frontend": {"resources": {"cpu": 4}}}),
            "invalid provider.overrides: provider.overrides.frontend.resources.cpu must be a quantity string such as \"4\" or \"8Gi\", got 4",
        ),
        (
            json!({"frontend": "big"}),
            "invalid provider.overrides: provider.overrides.frontend must be an object, got \"big\"",
        ),
    ] {
        let held = cycle::checked(
            &DynamoProvider,
            &base(overrides),
            &SchemaDetection::Supported(schema()),
        )
        .unwrap_err();
        assert_eq!(held.status.message, message);
        assert_eq!(held.status.phase, Phase::Failed);
    }
}

#[test]
fn compatibility_messages() {
    for (spec, message) in [
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "image": "i", "resources": {"gpu": {"count": 1}}}),
            "Dynamo does not support llamacpp engine",
        ),
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"cpu": "2"}}),
            "Dynamo requires GPU (set resources.gpu.count > 0)",
        ),
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"}, "scaling": {"prefill": {}, "decode": {"gpu": {"count": 1}}}}),
            "Dynamo disaggregated mode requires scaling.prefill.gpu.count > 0",
        ),
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"}, "scaling": {"prefill": {"gpu": {"count": 1}}}}),
            "Dynamo disaggregated mode requires scaling.decode.gpu.count > 0",
        ),
    ] {
        assert_eq!(
            DynamoProvider.check_compatibility(&md(spec)),
            Err(Incompatible::new(message))
        );
    }
    assert_eq!(
        DynamoProvider.check_compatibility(&example("modeldeployment-example3.yaml")),
        Ok(())
    );
}

fn sample(name: &str) -> DynamicObject {
    testing::upstream(
        env!("CARGO_MANIFEST_DIR"),
        &format!("status-samples/{name}"),
    )
    .unwrap()
}

#[test]
fn status_translation_of_every_sample() {
    let deployment = md(
        json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}}),
    );
    let cases = [
        (
            "dgd-initializing.yaml",
            Phase::Deploying,
            Some("Dynamo state: initializing"),
            false,
            0,
        ),
        (
            "dgd-pending.yaml",
            Phase::Deploying,
            Some(
                "Resources not ready: qwen3-frontend: Component deployment not ready - Available condition not true; qwen3-vllmworker-7f3c9a1e: Component deployment not ready - Available condition not true",
            ),
            false,
            0,
        ),
        (
            "dgd-pending-grove.yaml",
            Phase::Deploying,
            Some(
                "Resources not ready: qwen3: podclique/qwen3-0-frontend: desired=1, ready=0; podclique/qwen3-0-vllmworker: desired=1, ready=0",
            ),
            false,
            0,
        ),
        ("dgd-successful.yaml", Phase::Running, None, true, 2),
        (
            "dgd-failed.yaml",
            Phase::Failed,
            Some(
                "failed to reconcile Dynamo components deployments: no multinode orchestrator available",
            ),
            false,
            0,
        ),
    ];
    for (file, phase, message, ready, ready_replicas) in cases {
        let translated = DynamoProvider.translate_status(&deployment, &[Some(&sample(file))]);
        assert_eq!(
            (
                translated.phase,
                translated.message.as_deref(),
                translated.ready
            ),
            (phase, message, ready),
            "{file}"
        );
        let replicas = translated.replicas.unwrap();
        assert_eq!(
            (replicas.desired, replicas.ready, replicas.available),
            (Some(2), Some(ready_replicas), Some(ready_replicas)),
            "{file}: every service (frontend and worker) is counted"
        );
        let endpoint = translated.endpoint.unwrap();
        assert_eq!(
            (endpoint.service.as_deref(), endpoint.port),
            (Some("m-frontend"), Some(8000)),
            "{file}"
        );
    }
    // Disaggregated: every service is summed (design doc example 3: frontend 2 + prefill 2 +
    // decode 4 = 8); a PodClique has no availableReplicas (ready counts), a
    // PodCliqueScalingGroup no readyReplicas (available counts).
    let mut dgd = yaml(&read("tests/fixtures/example3-dgd.yaml"));
    dgd["status"] = json!({"state": "successful", "conditions": [{"type": "Ready", "status": "True", "reason": "all_resources_are_ready",
        "message": "All resources are ready", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "services": {"Frontend": {"componentKind": "Deployment", "componentName": "f", "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2},
                     "VllmPrefillWorker": {"componentKind": "Deployment", "componentName": "p", "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2},
                     "VllmDecodeWorker": {"componentKind": "PodClique", "componentName": "d", "replicas": 4, "updatedReplicas": 4, "readyReplicas": 4}}});
    let translated = DynamoProvider.translate_status(
        &example("modeldeployment-example3.yaml"),
        &[Some(&serde_json::from_value(dgd).unwrap())],
    );
    let replicas = translated.replicas.unwrap();
    assert_eq!(
        (replicas.desired, replicas.ready, replicas.available),
        (Some(8), Some(8), Some(8))
    );
    assert_eq!(
        translated.endpoint.unwrap().service.as_deref(),
        Some("llama-70b-pd-frontend")
    );
}

#[test]
fn schema_detection_and_registration() {
    // Dynamo >= 1.5 (both versions served): v1beta1; Dynamo 1.1 (v1alpha1 only): v1alpha1.
    for (path, expected) in [
        (
            "upstream-crds/dynamo/nvidia.com_dynamographdeployments.yaml",
            ("nvidia.com/v1beta1", "d622d1fe971b40da"),
        ),
        (
            "upstream-crd-versions/dynamo-1.1/nvidia.com_dynamographdeployments.yaml",
            ("nvidia.com/v1alpha1", "b988c5e17d5c5ec9"),
        ),
    ] {
        let crd: CustomResourceDefinition =
            testing::established_crd(env!("CARGO_MANIFEST_DIR"), path).unwrap();
        match DynamoProvider.detect_schema(Some(&crd)) {
            SchemaDetection::Supported(s) => assert_eq!(
                (s.api_version.as_str(), s.fingerprint.as_str()),
                expected,
                "{path}"
            ),
            other => panic!("{path}: {other:?}"),
        }
    }
    let fixture = yaml(&read(
        "../core-controller/tests/fixtures/shipped-providers/dynamo.yaml",
    ));
    assert_eq!(
        serde_json::to_value(registration_spec(&DynamoProvider)).unwrap(),
        fixture["spec"]
    );
}

fn args_of(rendered: &Value, service: &str) -> Value {
    worker(rendered, service)["extraPodSpec"]["mainContainer"]["args"].clone()
}

#[test]
fn engine_fields_prefix_caching_eager_extra_args_and_image() {
    // vLLM: both fields rendered, extraArgs verbatim after every derived flag, engine.image
    // preferred over the legacy spec.image.
    let vllm = DynamoProvider
        .render(&md(json!({"model": {"id": "a/b", "servedName": "b"}, "engine": {"type": "vllm", "enablePrefixCaching": false, "enforceEager": true,
            "args": {"quantization": "awq"}, "extraArgs": ["--kv-cache-dtype=fp8", "--max-num-seqs", "64"], "image": "registry.example/vllm:2"},
            "image": "registry.example/legacy:1", "resources": {"gpu": {"count": 2}}})), &schema())
        .unwrap();
    assert_eq!(
        args_of(&vllm.objects[0], "VllmWorker"),
        json!([
            "--model",
            "a/b",
            "--served-model-name",
            "b",
            "--no-enable-prefix-caching",
            "--enforce-eager",
            "--tensor-parallel-size",
            "2",
            "--quantization",
            "awq",
            "--kv-cache-dtype=fp8",
            "--max-num-seqs",
            "64"
        ])
    );
    let w = worker(&vllm.objects[0], "VllmWorker");
    assert_eq!(
        w["extraPodSpec"]["mainContainer"]["image"],
        "registry.example/vllm:2"
    );
    assert_eq!(
        worker(&vllm.objects[0], "Frontend")["extraPodSpec"]["mainContainer"]["image"],
        "registry.example/vllm:2"
    );
    assert!(vllm.warnings.is_empty(), "{:?}", vllm.warnings);

    // Defaults: prefix caching on (written, as the Go AI Runway does), not eager.
    let default = DynamoProvider
        .render(
            &md(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}})),
            &schema(),
        )
        .unwrap();
    assert_eq!(
        args_of(&default.objects[0], "VllmWorker"),
        json!(["--model", "a/b", "--enable-prefix-caching"])
    );
    assert_eq!(
        worker(&default.objects[0], "VllmWorker")["resources"],
        json!({"limits": {"gpu": "1"}, "requests": {"gpu": "1"}}),
        "the defaulted GPU of {{engine: vllm}}"
    );

    // Disaggregated vLLM: every worker gets the flags and the extra args, after the role flags.
    let disagg = DynamoProvider
        .render(&md(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm", "enforceEager": true, "extraArgs": ["--block-size=32"]},
            "serving": {"mode": "disaggregated"}, "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}}})), &schema())
        .unwrap();
    assert_eq!(
        args_of(&disagg.objects[0], "VllmDecodeWorker"),
        json!([
            "--model",
            "a/b",
            "--enable-prefix-caching",
            "--enforce-eager",
            "--disaggregation-mode",
            "decode",
            "--block-size=32"
        ])
    );
    assert_eq!(
        args_of(&disagg.objects[0], "VllmPrefillWorker")
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
        "--block-size=32"
    );

    // SGLang: its own flags (radix cache, CUDA graphs); nothing when prefix caching is on.
    let sglang = DynamoProvider
        .render(&md(json!({"model": {"id": "a/b"}, "engine": {"type": "sglang", "enablePrefixCaching": false, "enforceEager": true,
            "extraArgs": ["--mem-fraction-static", "0.8"]}, "resources": {"gpu": {"count": 1}}})), &schema())
        .unwrap();
    assert_eq!(
        args_of(&sglang.objects[0], "SglangWorker"),
        json!([
            "--model-path",
            "a/b",
            "--disable-radix-cache",
            "--disable-cuda-graph",
            "--mem-fraction-static",
            "0.8"
        ])
    );
    let sglang_default = DynamoProvider
        .render(
            &md(json!({"model": {"id": "a/b"}, "engine": {"type": "sglang"}})),
            &schema(),
        )
        .unwrap();
    assert_eq!(
        args_of(&sglang_default.objects[0], "SglangWorker"),
        json!(["--model-path", "a/b"])
    );

    // TensorRT-LLM: the real runtime image name; no flags for either field (warnings), extra
    // args still appended.
    let trt = DynamoProvider
        .render(&md(json!({"model": {"id": "a/b"}, "engine": {"type": "trtllm", "enablePrefixCaching": false, "enforceEager": true,
            "extraArgs": ["--max-batch-size", "8"]}, "resources": {"gpu": {"count": 1}}})), &schema())
        .unwrap();
    let w = worker(&trt.objects[0], "TrtllmWorker");
    assert_eq!(
        w["extraPodSpec"]["mainContainer"]["image"],
        "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:1.1.1"
    );
    assert_eq!(
        w["extraPodSpec"]["mainContainer"]["args"],
        json!(["--model-path", "a/b", "--max-batch-size", "8"])
    );
    let messages: Vec<(&str, &str)> = trt
        .warnings
        .iter()
        .map(|w| (w.reason, w.message.as_str()))
        .collect();
    assert_eq!(
        messages,
        vec![
            (
                "SettingIgnored",
                "engine.enablePrefixCaching: false is ignored: the Dynamo trtllm worker has no flag for it (configure KV cache block reuse in the engine configuration)"
            ),
            (
                "SettingIgnored",
                "engine.enforceEager is ignored: the Dynamo trtllm worker has no flag for it (configure CUDA graphs in the engine configuration)"
            ),
        ]
    );
    assert_eq!(
        airunway_provider_dynamo::render::default_image(airunway_api::v1alpha1::EngineType::Trtllm),
        "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:1.1.1"
    );

    // The user's own flag wins; a field saying otherwise is reported, not doubled.
    let both = DynamoProvider
        .render(&md(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm", "enablePrefixCaching": true, "enforceEager": false,
            "args": {"enable-prefix-caching": "false"}, "extraArgs": ["--enforce-eager"]}, "resources": {"gpu": {"count": 1}}})), &schema())
        .unwrap();
    assert_eq!(
        args_of(&both.objects[0], "VllmWorker"),
        json!([
            "--model",
            "a/b",
            "--no-enable-prefix-caching",
            "--enforce-eager"
        ])
    );
    let messages: Vec<&str> = both.warnings.iter().map(|w| w.message.as_str()).collect();
    assert_eq!(
        messages,
        vec![
            "engine.enablePrefixCaching: true is ignored: engine.args or engine.extraArgs turn prefix caching off",
            "engine.enforceEager: false is ignored: engine.args or engine.extraArgs set eager mode on",
        ]
    );
    // Agreeing flags: no warning, no duplicate.
    let agree = DynamoProvider
        .render(&md(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm", "enablePrefixCaching": false,
            "extraArgs": ["--no-enable-prefix-caching"]}, "resources": {"gpu": {"count": 1}}})), &schema())
        .unwrap();
    assert_eq!(
        args_of(&agree.objects[0], "VllmWorker"),
        json!(["--model", "a/b", "--no-enable-prefix-caching"])
    );
    assert!(agree.warnings.is_empty());

    // spec.gateway is the core's: nothing rendered, no warning.
    let gateway = DynamoProvider
        .render(&md(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}},
            "gateway": {"enabled": true, "modelName": "x", "httpRouteRef": "r"}})), &schema())
        .unwrap();
    assert!(gateway.warnings.is_empty());
}

#[test]
fn model_and_engine_labels() {
    let rendered = DynamoProvider
        .render(&md(json!({"model": {"id": "org/Some Model:v1@main"}, "engine": {"type": "sglang"}, "resources": {"gpu": {"count": 1}}})), &schema())
        .unwrap();
    assert_eq!(
        rendered.objects[0]["metadata"]["labels"],
        json!({"airunway.ai/model-deployment": "m", "airunway.ai/model-id": "org-Some-Model-v1-main", "airunway.ai/engine-type": "sglang"})
    );
    use airunway_provider_dynamo::render::label_value;
    assert_eq!(label_value("_.-a/b-._"), "a-b");
    let long = format!("org/{}", "x".repeat(80));
    assert_eq!(label_value(&long).len(), 63);
    assert_eq!(
        label_value(&format!("{}/-tail", "y".repeat(61))),
        "y".repeat(61)
    );
    // Labelled through the SDK onto the applied object.
    let deployment = md(
        json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}}),
    );
    let rendered = DynamoProvider.render(&deployment, &schema()).unwrap();
    let desired = airunway_api::provider::desired::desired_object(
        &deployment,
        "dynamo",
        &Default::default(),
        &rendered.objects[0],
    );
    let labels = &desired.object["metadata"]["labels"];
    assert_eq!(labels["airunway.ai/model-id"], "a-b");
    assert_eq!(labels["airunway.ai/engine-type"], "vllm");
    assert_eq!(labels["airunway.ai/model-deployment"], "m");
    assert_eq!(labels["airunway.ai/managed-by"], "airunway");
    assert_eq!(labels["airunway.ai/provider"], "dynamo");
}

#[test]
fn replicas_and_message_from_every_service() {
    let deployment = md(
        json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}}),
    );
    let mut dgd = serde_json::to_value(sample("dgd-pending-grove.yaml")).unwrap();
    // No Ready message: the message is summed from every service.
    dgd["status"]["conditions"] = json!([]);
    dgd["status"]["services"]["Frontend"]["readyReplicas"] = json!(1);
    dgd["status"]["services"]["Epp"] = json!({"componentKind": "PodCliqueScalingGroup", "componentName": "e", "replicas": 2, "updatedReplicas": 2, "availableReplicas": 1});
    let translated = DynamoProvider
        .translate_status(&deployment, &[Some(&serde_json::from_value(dgd).unwrap())]);
    assert_eq!(translated.phase, Phase::Deploying);
    assert_eq!(
        translated.message.as_deref(),
        Some("2/4 replicas ready (Epp 1/2, Frontend 1/1, VllmWorker 0/1)")
    );
    let replicas = translated.replicas.unwrap();
    assert_eq!(
        (replicas.desired, replicas.ready, replicas.available),
        (Some(4), Some(2), Some(2))
    );
}

#[test]
fn gateway_asked_adds_the_endpoint_picker_the_operator_makes_the_pool_for() {
    let spec = |gateway: Value, mode: &str| {
        let mut spec = json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"},
            "resources": {"gpu": {"count": 1}}, "serving": {"mode": mode},
            "secrets": {"huggingFaceToken": "hf"}, "gateway": gateway});
        if mode == "disaggregated" {
            spec["scaling"] = json!({"prefill": {"replicas": 1, "gpu": {"count": 1}},
                                     "decode": {"replicas": 1, "gpu": {"count": 1}}});
        }
        DynamoProvider
            .render(&md(spec), &schema())
            .unwrap()
            .objects
            .remove(0)
    };
    let asked = spec(json!({"enabled": true}), "aggregated");
    let epp = &asked["spec"]["services"]["Epp"];
    assert_eq!(epp["componentType"], "epp");
    assert_eq!(epp["replicas"], 1);
    assert_eq!(epp["dynamoNamespace"], "m");
    assert_eq!(
        epp["extraPodSpec"]["mainContainer"]["image"],
        "nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.1.1"
    );
    // Go's picker environment (parity D1): decode fallback for an aggregated graph.
    assert_eq!(
        epp["extraPodSpec"]["mainContainer"]["env"],
        json!([{"name": "DYN_DECODE_FALLBACK", "value": "true"}, {"name": "DYN_ENFORCE_DISAGG", "value": "false"}])
    );
    let disaggregated = spec(json!({"enabled": true}), "disaggregated");
    assert_eq!(
        disaggregated["spec"]["services"]["Epp"]["extraPodSpec"]["mainContainer"]["env"],
        json!([{"name": "DYN_DECODE_FALLBACK", "value": "false"}, {"name": "DYN_ENFORCE_DISAGG", "value": "true"}])
    );
    let config = &epp["eppConfig"]["config"];
    assert_eq!(config["schedulingProfiles"].as_array().unwrap().len(), 1);
    assert_eq!(config["schedulingProfiles"][0]["name"], "decode");
    assert_eq!(config["plugins"][1]["parameters"]["allowsNoLabel"], true);
    assert_eq!(
        worker(&asked, "VllmWorker")["frontendSidecar"],
        json!({"image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.1.1",
               "args": ["-m", "dynamo.frontend", "--router-mode", "direct"], "envFromSecret": "hf"})
    );
    assert_eq!(
        asked["spec"]["services"]["Frontend"]["componentType"], "frontend",
        "the frontend stays (the deployment's endpoint)"
    );

    let disaggregated = spec(json!({"enabled": true}), "disaggregated");
    let config = &disaggregated["spec"]["services"]["Epp"]["eppConfig"]["config"];
    let profiles: Vec<&str> = config["schedulingProfiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(profiles, ["prefill", "decode"]);
    assert_eq!(
        worker(&disaggregated, "VllmPrefillWorker")["frontendSidecar"]["args"],
        json!(["-m", "dynamo.frontend"])
    );

    // Not asked (unset or false): no endpoint picker, no sidecar — the operator would create
    // an InferencePool without checking that the cluster serves them.
    for gateway in [json!({}), json!({"enabled": false})] {
        let rendered = spec(gateway, "aggregated");
        assert!(rendered["spec"]["services"].get("Epp").is_none());
        assert!(
            worker(&rendered, "VllmWorker")
                .get("frontendSidecar")
                .is_none()
        );
    }
    let registration = serde_json::to_value(DynamoProvider.registration()).unwrap();
    for engine in registration["capabilities"]["engines"].as_array().unwrap() {
        assert_eq!(
            engine["gateway"],
            json!({"managesInferencePool": true, "inferencePoolNamePattern": "{name}-pool"})
        );
    }
}

/// Go's multi-node manifest sets `engine.args.tensor-parallel-size` with two GPUs (parity D9):
/// the user's value wins and the derived flag is left out, for each derived flag; the keys that
/// would break the graph stay refused.
#[test]
fn user_engine_args_win_over_derived_flags() {
    let rendered = DynamoProvider
        .render(
            &md(json!({"model": {"id": "Qwen/Qwen3-0.6B", "servedName": "qwen"}, "engine": {"type": "vllm",
                "contextLength": 4096, "trustRemoteCode": true,
                "args": {"tensor-parallel-size": "2", "max-model-len": "8192"}},
                "resources": {"gpu": {"count": 2}}, "secrets": {"huggingFaceToken": "hf"}})),
            &schema(),
        )
        .unwrap();
    let args: Vec<String> =
        serde_json::from_value(args_of(&rendered.objects[0], "VllmWorker")).unwrap();
    let count = |flag: &str| args.iter().filter(|a| a.as_str() == flag).count();
    assert_eq!(count("--tensor-parallel-size"), 1, "{args:?}");
    assert_eq!(count("--max-model-len"), 1, "{args:?}");
    let at = args.iter().position(|a| a == "--max-model-len").unwrap();
    assert_eq!(args[at + 1], "8192", "the user's value: {args:?}");
    assert_eq!(count("--served-model-name"), 1, "{args:?}");
    assert_eq!(count("--trust-remote-code"), 1, "{args:?}");
    for key in ["model", "disaggregation-mode"] {
        let error = DynamoProvider
            .render(
                &md(json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm", "args": {key: "x"}},
                    "resources": {"gpu": {"count": 1}}})),
                &schema(),
            )
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "engine.args.{key} is set by the Dynamo provider from the ModelDeployment spec; remove it from engine.args"
            )
        );
    }
}

/// Top-level replica counts, when the operator writes them, win over the per-service sums
/// (parity D7).
#[test]
fn top_level_replica_counts_win() {
    let mut dgd = sample("dgd-successful.yaml");
    dgd.data["status"]["readyReplicas"] = json!(3);
    dgd.data["status"]["desiredReplicas"] = json!(3);
    let translated =
        DynamoProvider.translate_status(&md(json!({"model": {"id": "a/b"}})), &[Some(&dgd)]);
    let replicas = translated.replicas.unwrap();
    assert_eq!((replicas.desired, replicas.ready), (Some(3), Some(3)));
}

/// The endpoint picker's typed overrides (parity D3); an invalid image refused naming the key.
#[test]
fn epp_overrides() {
    let spec = |overrides: Value| {
        md(
            json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"},
            "resources": {"gpu": {"count": 1}}, "gateway": {"enabled": true},
            "provider": {"name": "dynamo", "overrides": overrides}}),
        )
    };
    let detection = SchemaDetection::Supported(schema());
    let rendered = cycle::checked(
        &DynamoProvider,
        &spec(json!({"epp": {"image": "registry.example/epp:1", "replicas": 2}})),
        &detection,
    )
    .unwrap();
    let services = &rendered.desired[0].object["spec"]["services"];
    assert_eq!(services["Epp"]["replicas"], 2);
    assert_eq!(
        services["Epp"]["extraPodSpec"]["mainContainer"]["image"],
        "registry.example/epp:1"
    );
    assert!(rendered.warnings.is_empty(), "{:?}", rendered.warnings);
    let bad_image = cycle::checked(
        &DynamoProvider,
        &spec(json!({"epp": {"image": "app:.v1"}})),
        &detection,
    )
    .unwrap_err();
    assert!(
        bad_image
            .status
            .message
            .starts_with("invalid provider.overrides: provider.overrides.epp.image"),
        "{}",
        bad_image.status.message
    );
}

/// Storage as the Go AI Runway maps it: every claim in `spec.pvcs` (`create: false`), every
/// worker (prefill and decode alike) mounting each volume with the compilation cache marked,
/// `HF_HOME` at the model cache unless `env` sets it; the frontend mounts nothing.
#[test]
fn storage_volumes_mounted_on_every_worker() {
    let spec = json!({"model": {"id": "Qwen/Qwen3-0.6B", "storage": {"volumes": [
            {"name": "weights", "purpose": "modelCache"},
            {"name": "compiled", "purpose": "compilationCache", "size": "10Gi"},
            {"name": "data", "claimName": "team-data", "mountPath": "/data", "readOnly": true}]}},
        "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"},
        "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}},
        "env": [{"name": "A", "value": "1"}]});
    let deployment = md(spec.clone());
    let shared = airunway_api::storage::volume_for(
        &deployment,
        airunway_api::storage::VolumePurpose::ModelCache,
    )
    .unwrap()
    .claim_name;
    let rendered = &DynamoProvider
        .render(&deployment, &schema())
        .unwrap()
        .objects[0];
    assert_eq!(
        rendered["spec"]["pvcs"],
        json!([{"name": shared, "create": false},
               {"name": "m-compiled", "create": false},
               {"name": "team-data", "create": false}])
    );
    for service in ["VllmPrefillWorker", "VllmDecodeWorker"] {
        let worker = worker(rendered, service);
        assert_eq!(
            worker["volumeMounts"],
            json!([{"name": shared, "mountPoint": "/model-cache"},
                   {"name": "m-compiled", "mountPoint": "/compilation-cache", "useAsCompilationCache": true},
                   {"name": "team-data", "mountPoint": "/data"}]),
            "{service}"
        );
        assert_eq!(
            worker["envs"],
            json!([{"name": "A", "value": "1"}, {"name": "HF_HOME", "value": "/model-cache"}]),
            "{service}"
        );
    }
    assert_eq!(worker(rendered, "Frontend")["volumeMounts"], Value::Null);
    let mut own = spec;
    own["env"] = json!([{"name": "HF_HOME", "value": "/mine"}]);
    let rendered = &DynamoProvider.render(&md(own), &schema()).unwrap().objects[0];
    assert_eq!(
        worker(rendered, "VllmDecodeWorker")["envs"],
        json!([{"name": "HF_HOME", "value": "/mine"}])
    );
    let none = &DynamoProvider
        .render(&md(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}})), &schema())
        .unwrap()
        .objects[0];
    assert_eq!(none["spec"]["pvcs"], Value::Null);
    assert_eq!(worker(none, "VllmWorker")["volumeMounts"], Value::Null);
}

/// The scale subresource writes `scaling.replicas`: the aggregated worker takes it (0 too), a
/// disaggregated graph scales in units of its prefill:decode ratio, the frontend stays.
#[test]
fn scaling_replicas_scales_the_workers_in_units_of_the_ratio() {
    let disaggregated = |replicas: i32| {
        md(
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"},
            "scaling": {"replicas": replicas,
                        "prefill": {"replicas": 1, "gpu": {"count": 1}},
                        "decode": {"replicas": 2, "gpu": {"count": 1}}}}),
        )
    };
    for (units, prefill, decode) in [(1, 1, 2), (3, 3, 6), (0, 0, 0)] {
        let rendered = DynamoProvider
            .render(&disaggregated(units), &schema())
            .unwrap()
            .objects
            .remove(0);
        assert_eq!(
            (
                worker(&rendered, "VllmPrefillWorker")["replicas"].clone(),
                worker(&rendered, "VllmDecodeWorker")["replicas"].clone(),
                worker(&rendered, "Frontend")["replicas"].clone(),
            ),
            (json!(prefill), json!(decode), json!(1)),
            "scaling.replicas {units}"
        );
    }
    for replicas in [0, 3] {
        let rendered = DynamoProvider
            .render(
                &md(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"},
                    "resources": {"gpu": {"count": 1}}, "scaling": {"replicas": replicas}})),
                &schema(),
            )
            .unwrap()
            .objects
            .remove(0);
        assert_eq!(worker(&rendered, "VllmWorker")["replicas"], json!(replicas));
    }
}

/// Through the SDK's status path: one of two workers ready gives `Degraded=True` with the
/// counts (frontend included), all ready `False`; the status carries `workload` and `selector`.
#[test]
fn one_of_two_workers_ready_is_degraded_through_the_sdk() {
    use airunway_api::constants::condition_types::DEGRADED;
    use airunway_api::v1alpha1::ConditionStatus;
    let now = airunway_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        "2026-01-01T00:00:00Z".parse().unwrap(),
    );
    let deployment = md(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"},
        "resources": {"gpu": {"count": 1}}, "scaling": {"replicas": 2}}));
    let first = cycle::apply(&DynamoProvider, &deployment, &schema(), None, &now).unwrap();
    let served = |worker_ready: i32| {
        cycle::served(
            &first.desired,
            json!({"state": "pending", "services": {
                "Frontend": {"componentKind": "Deployment", "componentName": "m-frontend", "replicas": 1, "readyReplicas": 1, "availableReplicas": 1},
                "VllmWorker": {"componentKind": "Deployment", "componentName": "m-vllmworker", "replicas": 2, "readyReplicas": worker_ready, "availableReplicas": worker_ready},
            }}),
        )
        .unwrap()
    };
    let (status, _) = cycle::status_sync(&DynamoProvider, &deployment, &first.desired, &served(1));
    let degraded = status
        .conditions
        .iter()
        .find(|c| c.type_ == DEGRADED)
        .unwrap();
    assert_eq!(
        (degraded.status, degraded.message.as_str()),
        (
            ConditionStatus::True,
            "2 of 3 replicas ready: serving at reduced capacity"
        )
    );
    let patch = status.patch(&deployment, &now);
    assert_eq!(
        patch["status"]["selector"],
        "nvidia.com/dynamo-component-type=worker,nvidia.com/dynamo-graph-deployment-name=m"
    );
    assert_eq!(
        patch["status"]["workload"]["upstream"]["kind"],
        "DynamoGraphDeployment"
    );
    assert_eq!(
        patch["status"]["workload"]["workloads"][1]["name"],
        "m-vllmworker"
    );
    let (status, _) = cycle::status_sync(&DynamoProvider, &deployment, &first.desired, &served(2));
    let degraded = status
        .conditions
        .iter()
        .find(|c| c.type_ == DEGRADED)
        .unwrap();
    assert_eq!(degraded.status, ConditionStatus::False);
}

#[test]
fn successful_is_not_ready_while_a_service_rolls_out() {
    use airunway_api::v1alpha1::NotReadyReason;
    let deployment = md(
        json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}}),
    );
    let translate =
        |object: &DynamicObject| DynamoProvider.translate_status(&deployment, &[Some(object)]);
    let ok = sample("dgd-successful.yaml");
    assert!(translate(&ok).ready);

    // "successful" while the worker's new revision has 1 of 2 replicas: not Ready.
    let mut mid = ok.clone();
    mid.data["status"]["services"]["VllmWorker"]["replicas"] = json!(2);
    mid.data["status"]["services"]["VllmWorker"]["readyReplicas"] = json!(2);
    let translated = translate(&mid);
    assert_eq!(
        (translated.phase, translated.ready),
        (Phase::Running, false)
    );
    let not_ready = translated.not_ready.unwrap();
    assert_eq!(not_ready.reason, NotReadyReason::Updating);
    assert_eq!(
        not_ready.message,
        "Updating DynamoGraphDeployment qwen3: services rolling out: VllmWorker 1/2 updated; the previous version keeps serving"
    );
    let source = not_ready.object.unwrap();
    assert_eq!(
        (source.kind.as_str(), source.name.as_str()),
        ("DynamoGraphDeployment", "qwen3")
    );

    // A generation the operator has not reported on.
    let mut behind = ok.clone();
    behind.metadata.generation = Some(3);
    behind.data["status"]["observedGeneration"] = json!(2);
    let not_ready = translate(&behind).not_ready.unwrap();
    assert_eq!(
        not_ready.message,
        "Updating DynamoGraphDeployment qwen3: the operator has not acted on generation 3 yet (it reports generation 2); the previous version keeps serving"
    );

    // The operator's reconcile error, with its words.
    let failed = translate(&sample("dgd-failed.yaml"));
    assert_eq!(failed.phase, Phase::Failed);
    let not_ready = failed.not_ready.unwrap();
    assert_eq!(
        (not_ready.reason, not_ready.message.as_str()),
        (
            NotReadyReason::UpstreamReconcileError,
            "failed to reconcile Dynamo components deployments: no multinode orchestrator available"
        )
    );
}
