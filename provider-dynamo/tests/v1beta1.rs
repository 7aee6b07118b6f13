//! The `v1beta1` DynamoGraphDeployment (Dynamo ≥ 1.5): every shape rendered today as
//! `spec.components[]` with native pod templates, the same component names as on `v1alpha1`
//! (Dynamo keys its status by them), the native endpoint picker, storage as pod volumes and `compilationCache`, `spec.components`
//! overrides, and status and workload read from a `v1beta1` graph.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::{Provider, RenderError, UpstreamSchema};
use airunway_api::serde_json::{self, Value, json};
use airunway_api::v1alpha1::{ModelDeployment, Phase};
use airunway_provider_dynamo::DynamoProvider;
use airunway_provider_dynamo::render::spec_overrides;

fn beta() -> UpstreamSchema {
    UpstreamSchema {
        version: "v1beta1".into(),
        api_version: "nvidia.com/v1beta1".into(),
        fingerprint: "f".into(),
    }
}

fn alpha() -> UpstreamSchema {
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

fn render(spec: Value) -> Value {
    DynamoProvider
        .render(&md(spec), &beta())
        .unwrap()
        .objects
        .remove(0)
}

fn component<'a>(graph: &'a Value, name: &str) -> &'a Value {
    graph["spec"]["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no component {name} in {graph}"))
}

fn main_container(component: &Value) -> &Value {
    &component["podTemplate"]["spec"]["containers"][0]
}

fn names(graph: &Value) -> Vec<String> {
    let mut names: Vec<String> = graph["spec"]["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

#[test]
fn aggregated_vllm_in_native_pod_templates() {
    let graph = render(
        json!({"model": {"id": "Qwen/Qwen3-8B", "servedName": "qwen"},
        "engine": {"type": "vllm", "contextLength": 4096}, "resources": {"gpu": {"count": 2}, "memory": "80Gi", "cpu": "8"},
        "scaling": {"replicas": 3}, "secrets": {"huggingFaceToken": "hf"},
        "env": [{"name": "A", "value": "1"}], "nodeSelector": {"pool": "gpu"},
        "tolerations": [{"key": "gpu", "operator": "Exists"}],
        "podTemplate": {"metadata": {"labels": {"team": "a"}, "annotations": {"x": "y"}}}}),
    );
    assert_eq!(graph["apiVersion"], "nvidia.com/v1beta1");
    assert_eq!(graph["spec"]["backendFramework"], "vllm");
    assert_eq!(graph["spec"]["services"], Value::Null);
    assert_eq!(graph["spec"]["pvcs"], Value::Null);
    assert_eq!(
        graph["metadata"]["labels"]["airunway.ai/engine-type"],
        "vllm"
    );
    assert_eq!(names(&graph), ["Frontend", "VllmWorker"]);

    let frontend = component(&graph, "Frontend");
    assert_eq!(frontend["type"], "frontend");
    assert_eq!(frontend["replicas"], 1);
    assert_eq!(
        main_container(frontend),
        &json!({"name": "main", "image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1",
            "env": [{"name": "DYN_ROUTER_MODE", "value": "round-robin"}],
            "envFrom": [{"secretRef": {"name": "hf"}}],
            "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}})
    );

    let worker = component(&graph, "VllmWorker");
    assert_eq!(worker["type"], "worker");
    assert_eq!(worker["replicas"], 3);
    assert_eq!(
        worker["podTemplate"]["metadata"],
        json!({"labels": {"team": "a"}, "annotations": {"x": "y"}})
    );
    assert_eq!(
        worker["podTemplate"]["spec"]["nodeSelector"],
        json!({"pool": "gpu"})
    );
    assert_eq!(
        worker["podTemplate"]["spec"]["tolerations"],
        json!([{"key": "gpu", "operator": "Exists"}])
    );
    let main = main_container(worker);
    assert_eq!(main["name"], "main");
    assert_eq!(main["command"], json!(["python3", "-m", "dynamo.vllm"]));
    assert_eq!(main["envFrom"], json!([{"secretRef": {"name": "hf"}}]));
    assert_eq!(main["env"], json!([{"name": "A", "value": "1"}]));
    assert_eq!(
        main["resources"],
        json!({"limits": {"nvidia.com/gpu": "2", "memory": "80Gi", "cpu": "8"},
               "requests": {"nvidia.com/gpu": "2"}})
    );
    // The same command line as on v1alpha1.
    let old = DynamoProvider
        .render(
            &md(
                json!({"model": {"id": "Qwen/Qwen3-8B", "servedName": "qwen"},
        "engine": {"type": "vllm", "contextLength": 4096}, "resources": {"gpu": {"count": 2}}}),
            ),
            &alpha(),
        )
        .unwrap();
    assert_eq!(
        main["args"],
        old.objects[0]["spec"]["services"]["VllmWorker"]["extraPodSpec"]["mainContainer"]["args"]
    );
}

#[test]
fn disaggregated_workers_are_typed_prefill_and_decode() {
    for engine in ["vllm", "sglang"] {
        let graph = render(
            json!({"model": {"id": "Qwen/Qwen3-8B"}, "engine": {"type": engine},
            "serving": {"mode": "disaggregated"}, "scaling": {"replicas": 2,
            "prefill": {"replicas": 1, "gpu": {"count": 1}}, "decode": {"replicas": 2, "gpu": {"count": 2}, "memory": "40Gi"}}}),
        );
        let prefix = if engine == "vllm" { "Vllm" } else { "Sglang" };
        let prefill = component(&graph, &format!("{prefix}PrefillWorker"));
        let decode = component(&graph, &format!("{prefix}DecodeWorker"));
        assert_eq!(
            (&prefill["type"], &prefill["replicas"]),
            (&json!("prefill"), &json!(2))
        );
        assert_eq!(
            (&decode["type"], &decode["replicas"]),
            (&json!("decode"), &json!(4))
        );
        assert_eq!(
            main_container(decode)["resources"],
            json!({"limits": {"nvidia.com/gpu": "2", "memory": "40Gi"}, "requests": {"nvidia.com/gpu": "2"}})
        );
        let args = main_container(prefill)["args"].as_array().unwrap();
        assert!(
            args.contains(&json!("--disaggregation-mode")) && args.contains(&json!("prefill")),
            "{args:?}"
        );
    }
}

#[test]
fn trtllm_with_a_custom_image_names_its_runtime_and_gpu_type() {
    let graph = render(
        json!({"model": {"id": "Qwen/Qwen3-8B"}, "engine": {"type": "trtllm", "image": "registry.example/trtllm:custom"},
        "resources": {"gpu": {"count": 1, "type": "amd.com/gpu"}}}),
    );
    assert_eq!(names(&graph), ["Frontend", "TrtllmWorker"]);
    let worker = component(&graph, "TrtllmWorker");
    assert_eq!(
        main_container(worker)["image"],
        "registry.example/trtllm:custom"
    );
    assert_eq!(
        main_container(worker)["command"],
        json!(["python3", "-m", "dynamo.trtllm"])
    );
    // The schema tested against has no runtimeVersionOverride: never written.
    assert_eq!(worker["runtimeVersionOverride"], Value::Null);
    assert_eq!(
        main_container(worker)["resources"],
        json!({"limits": {"amd.com/gpu": "1"}, "requests": {"amd.com/gpu": "1"}})
    );
    // The default TensorRT-LLM runtime image on v1beta1.
    let default = render(
        json!({"model": {"id": "a/b"}, "engine": {"type": "trtllm"}, "resources": {"gpu": {"count": 1}}}),
    );
    assert_eq!(
        main_container(component(&default, "TrtllmWorker"))["image"],
        "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:1.6.1"
    );
}

#[test]
fn the_gateway_gets_the_native_endpoint_picker_and_frontend_sidecars() {
    let spec = |mode: &str, overrides: Value| {
        let mut spec = json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"},
            "resources": {"gpu": {"count": 1}}, "serving": {"mode": mode},
            "secrets": {"huggingFaceToken": "hf"}, "gateway": {"enabled": true},
            "provider": {"name": "dynamo", "overrides": overrides}});
        if mode == "disaggregated" {
            spec["scaling"] =
                json!({"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}});
        }
        spec
    };
    let graph = render(spec("aggregated", json!({})));
    assert_eq!(names(&graph), ["Epp", "Frontend", "VllmWorker"]);
    let epp = component(&graph, "Epp");
    assert_eq!(epp["type"], "epp");
    assert_eq!(
        epp["eppConfig"],
        Value::Null,
        "Dynamo >= 1.5 runs its native picker"
    );
    assert_eq!(
        main_container(epp)["image"],
        "nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.6.1"
    );
    assert_eq!(
        main_container(epp)["env"],
        json!([{"name": "DYN_DECODE_FALLBACK", "value": "true"}, {"name": "DYN_ENFORCE_DISAGG", "value": "false"}])
    );
    let worker = component(&graph, "VllmWorker");
    assert_eq!(worker["frontendSidecar"], "sidecar-frontend");
    assert_eq!(
        worker["podTemplate"]["spec"]["containers"][1],
        json!({"name": "sidecar-frontend", "image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1",
            "args": ["-m", "dynamo.frontend", "--router-mode", "direct"],
            "envFrom": [{"secretRef": {"name": "hf"}}]})
    );
    let disaggregated = render(spec("disaggregated", json!({})));
    assert_eq!(
        component(&disaggregated, "VllmDecodeWorker")["podTemplate"]["spec"]["containers"][1]["args"],
        json!(["-m", "dynamo.frontend"])
    );
    // A Go picker image (before 1.5) keeps its configuration; a tag naming no release is
    // taken as current (native).
    let go = render(spec(
        "aggregated",
        json!({"epp": {"image": "registry.example/epp:1.1.1", "replicas": 2}}),
    ));
    let epp = component(&go, "Epp");
    assert_eq!(epp["replicas"], 2);
    assert_eq!(
        epp["eppConfig"]["config"]["schedulingProfiles"][0]["name"],
        "decode"
    );
    let custom = render(spec(
        "aggregated",
        json!({"epp": {"image": "registry.example/epp:mine"}}),
    ));
    let epp = component(&custom, "Epp");
    assert_eq!(epp["eppConfig"], Value::Null);
}

#[test]
fn storage_is_pod_volumes_and_the_compilation_cache() {
    let deployment = md(
        json!({"model": {"id": "Qwen/Qwen3-0.6B", "storage": {"volumes": [
            {"name": "weights", "purpose": "modelCache"},
            {"name": "compiled", "purpose": "compilationCache", "size": "10Gi"},
            {"name": "data", "claimName": "team-data", "mountPath": "/data", "readOnly": true}]}},
        "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"},
        "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}}}),
    );
    let shared = airunway_api::storage::volume_for(
        &deployment,
        airunway_api::storage::VolumePurpose::ModelCache,
    )
    .unwrap()
    .claim_name;
    let graph = DynamoProvider
        .render(&deployment, &beta())
        .unwrap()
        .objects
        .remove(0);
    assert_eq!(graph["spec"]["pvcs"], Value::Null);
    for name in ["VllmPrefillWorker", "VllmDecodeWorker"] {
        let worker = component(&graph, name);
        assert_eq!(
            worker["compilationCache"],
            json!({"pvcName": "m-compiled", "mountPath": "/compilation-cache"})
        );
        assert_eq!(
            worker["podTemplate"]["spec"]["volumes"],
            json!([{"name": shared, "persistentVolumeClaim": {"claimName": shared}},
                   {"name": "team-data", "persistentVolumeClaim": {"claimName": "team-data"}}])
        );
        assert_eq!(
            main_container(worker)["volumeMounts"],
            json!([{"name": shared, "mountPath": "/model-cache"}, {"name": "team-data", "mountPath": "/data"}])
        );
        assert_eq!(
            main_container(worker)["env"],
            json!([{"name": "HF_HOME", "value": "/model-cache"}])
        );
    }
    assert_eq!(
        component(&graph, "Frontend")["podTemplate"]["spec"]["volumes"],
        Value::Null
    );
}

/// Every shape keeps its component names across versions (Dynamo keys status by them, and the
/// upgrade re-renders the same graph).
#[test]
fn the_same_component_names_in_both_versions() {
    let shapes = [
        json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}}),
        json!({"model": {"id": "a/b"}, "engine": {"type": "sglang"}, "resources": {"gpu": {"count": 1}}, "gateway": {"enabled": true}}),
        json!({"model": {"id": "a/b"}, "engine": {"type": "trtllm"}, "resources": {"gpu": {"count": 1}}}),
        json!({"model": {"id": "a/b"}, "engine": {"type": "sglang"}, "serving": {"mode": "disaggregated"},
            "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}}, "gateway": {"enabled": true}}),
    ];
    for spec in shapes {
        let old = DynamoProvider
            .render(&md(spec.clone()), &alpha())
            .unwrap()
            .objects
            .remove(0);
        let mut old_names: Vec<String> = old["spec"]["services"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        old_names.sort();
        assert_eq!(names(&render(spec)), old_names);
    }
}

#[test]
fn component_overrides_merge_by_name_and_the_wrong_shape_is_refused() {
    let spec = |overrides: Value| {
        json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}},
        "provider": {"name": "dynamo", "overrides": overrides}})
    };
    let graph = render(spec(json!({"spec": {"components": [{"name": "VllmWorker",
        "podTemplate": {"spec": {"containers": [{"name": "main", "workingDir": "/workspace"}]}}}]}})));
    let main = main_container(component(&graph, "VllmWorker"));
    assert_eq!(main["workingDir"], "/workspace");
    assert_eq!(
        main["command"],
        json!(["python3", "-m", "dynamo.vllm"]),
        "the rest of main stays"
    );

    let refused = |overrides: Value, schema: UpstreamSchema| match DynamoProvider
        .render(&md(spec(overrides)), &schema)
    {
        Err(RenderError::InvalidOverrides(message)) => message,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        refused(
            json!({"spec": {"services": {"VllmWorker": {"replicas": 2}}, "components": []}}),
            beta()
        ),
        spec_overrides::MIXED
    );
    assert_eq!(
        refused(
            json!({"spec": {"services": {"VllmWorker": {"replicas": 2}}}}),
            beta()
        ),
        spec_overrides::SERVICES_ON_V1BETA1
    );
    assert_eq!(
        refused(
            json!({"spec": {"components": [{"name": "VllmWorker", "replicas": 2}]}}),
            alpha()
        ),
        "spec.components overrides require the v1beta1 DGD API; use spec.services on v1alpha1"
    );
    // The legacy shape on v1alpha1 merges into the service.
    let old = DynamoProvider
        .render(
            &md(spec(
                json!({"spec": {"services": {"VllmWorker": {"sharedMemory": {"size": "16Gi"}}}}}),
            )),
            &alpha(),
        )
        .unwrap();
    assert_eq!(
        old.objects[0]["spec"]["services"]["VllmWorker"]["sharedMemory"],
        json!({"size": "16Gi"})
    );
    assert_eq!(
        old.objects[0]["spec"]["services"]["VllmWorker"]["componentType"],
        "worker"
    );
}

/// Status and workload read a `v1beta1` graph: `spec.components[]` and Dynamo ≥ 1.5's
/// `status.components`.
#[test]
fn status_and_workload_of_a_v1beta1_graph() {
    let deployment = md(
        json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"},
        "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"replicas": 2, "gpu": {"count": 1}}}}),
    );
    let mut graph = DynamoProvider
        .render(&deployment, &beta())
        .unwrap()
        .objects
        .remove(0);
    graph["metadata"]["namespace"] = json!("ns");
    graph["metadata"]["generation"] = json!(1);
    let live = |status: Value| {
        let mut object = graph.clone();
        object["status"] = status;
        serde_json::from_value::<DynamicObject>(object).unwrap()
    };
    // Before the operator reports: the spec's replicas.
    let waiting =
        DynamoProvider.translate_status(&deployment, &[Some(&live(json!({"state": "pending"})))]);
    assert_eq!(waiting.phase, Phase::Deploying);
    assert_eq!(waiting.replicas.unwrap().desired, Some(4));
    let component = |kind: &str, name: &str, replicas: i32, ready: i32| {
        json!({"componentKind": kind, "componentNames": [name], "replicas": replicas,
            "readyReplicas": ready, "updatedReplicas": replicas, "availableReplicas": ready})
    };
    let serving = live(json!({"state": "successful", "observedGeneration": 1,
        "conditions": [{"type": "Ready", "status": "True", "reason": "all_resources_are_ready", "message": "All resources are ready"}],
        "components": {
            "Frontend": component("Deployment", "m-frontend", 1, 1),
            "VllmPrefillWorker": component("Deployment", "m-vllmprefillworker-1a2b3c4d", 1, 1),
            "VllmDecodeWorker": component("Deployment", "m-vllmdecodeworker-1a2b3c4d", 2, 2)}}));
    let translated = DynamoProvider.translate_status(&deployment, &[Some(&serving)]);
    assert_eq!(translated.phase, Phase::Running);
    let replicas = translated.replicas.unwrap();
    assert_eq!((replicas.desired, replicas.ready), (Some(4), Some(4)));
    let workload = DynamoProvider
        .workload(&deployment, &[Some(&serving)])
        .unwrap();
    let roles: Vec<(String, Option<String>)> = workload
        .workloads
        .unwrap()
        .into_iter()
        .map(|w| (w.name, w.role))
        .collect();
    assert_eq!(
        roles,
        [
            ("m-frontend".to_string(), Some("frontend".to_string())),
            (
                "m-vllmdecodeworker-1a2b3c4d".to_string(),
                Some("decode".to_string())
            ),
            (
                "m-vllmprefillworker-1a2b3c4d".to_string(),
                Some("prefill".to_string())
            ),
        ]
    );
    // Dynamo >= 1.5 labels the workers by their type; the decode workers are selected.
    assert_eq!(
        workload
            .pod_selector
            .unwrap()
            .get("nvidia.com/dynamo-component-type")
            .map(String::as_str),
        Some("decode")
    );
    // The prefill workers down while the decode workers serve: degraded, naming them.
    let degraded = live(json!({"state": "pending", "components": {
        "Frontend": component("Deployment", "m-frontend", 1, 1),
        "VllmPrefillWorker": component("Deployment", "m-p", 1, 0),
        "VllmDecodeWorker": component("Deployment", "m-d", 2, 2)}}));
    let degradation = DynamoProvider
        .degradation(&deployment, &[Some(&degraded)])
        .unwrap();
    assert_eq!(
        degradation.message,
        "Dynamo worker VllmPrefillWorker 0/1 has no ready replica while the others serve"
    );
}

/// Tool calling and reasoning parsers (`provider-dynamo/src/parsers.rs`): Dynamo's parser flags
/// on every worker, in both graph versions, disaggregated too, and no vLLM or SGLang parser flag.
#[test]
fn parsers_on_every_worker_of_both_versions() {
    let aggregated = json!({"model": {"id": "Qwen/Qwen3-8B"},
        "engine": {"type": "vllm", "toolCalling": true, "extraArgs": ["--max-num-seqs", "8"]},
        "resources": {"gpu": {"count": 1}}});
    let disaggregated = json!({"model": {"id": "openai/gpt-oss-20b"}, "serving": {"mode": "disaggregated"},
        "engine": {"type": "sglang", "toolCalling": true, "reasoningParser": "basic"},
        "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}}});
    let alpha_args = |spec: &Value, service: &str| -> Vec<String> {
        let graph = DynamoProvider
            .render(&md(spec.clone()), &alpha())
            .unwrap()
            .objects
            .remove(0);
        serde_json::from_value(
            graph["spec"]["services"][service]["extraPodSpec"]["mainContainer"]["args"].clone(),
        )
        .unwrap()
    };
    let beta_args = |spec: &Value, service: &str| -> Vec<String> {
        serde_json::from_value(
            main_container(component(&render(spec.clone()), service))["args"].clone(),
        )
        .unwrap()
    };
    for args in [
        alpha_args(&aggregated, "VllmWorker"),
        beta_args(&aggregated, "VllmWorker"),
    ] {
        let at = args
            .iter()
            .position(|a| a == "--dyn-tool-call-parser")
            .unwrap();
        assert_eq!(
            args[at..at + 4],
            [
                "--dyn-tool-call-parser",
                "hermes",
                "--dyn-reasoning-parser",
                "qwen3"
            ],
            "{args:?}"
        );
        assert_eq!(args[args.len() - 2..], ["--max-num-seqs", "8"]);
        assert!(
            !args
                .iter()
                .any(|a| a == "--enable-auto-tool-choice" || a == "--tool-call-parser")
        );
    }
    for service in ["SglangPrefillWorker", "SglangDecodeWorker"] {
        for args in [
            alpha_args(&disaggregated, service),
            beta_args(&disaggregated, service),
        ] {
            let at = args
                .iter()
                .position(|a| a == "--dyn-tool-call-parser")
                .unwrap();
            assert_eq!(
                args[at..at + 4],
                [
                    "--dyn-tool-call-parser",
                    "harmony",
                    "--dyn-reasoning-parser",
                    "basic"
                ],
                "{service}: {args:?}"
            );
        }
    }
    // Tool calling on a model without a known parser: refused (validation's text).
    let unknown = DynamoProvider.render(
        &md(
            json!({"model": {"id": "acme/model"}, "engine": {"type": "vllm", "toolCalling": true},
            "resources": {"gpu": {"count": 1}}}),
        ),
        &beta(),
    );
    assert!(matches!(unknown, Err(RenderError::Unsupported(m)) if m.contains("toolCallParser")));
}
