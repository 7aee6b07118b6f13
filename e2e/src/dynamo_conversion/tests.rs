//! The played conversion on real objects: Dynamo's own `v1beta1` DGDs (the ai-dynamo 1.6.1
//! profiler templates), the status samples, and the `v1alpha1` shapes AI Runway renders.

use serde_json::{Value, json};

use super::*;
use crate::paths;

fn yaml(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `*.yaml` under `dir` (recursively), sorted.
fn files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The DGD samples of `api_version`: the status samples and the upstream samples.
fn samples(api_version: &str) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = files(&paths::status_samples_dir())
        .into_iter()
        .chain(files(&paths::fixtures_dir().join("upstream-samples")))
        .map(|p| (p.display().to_string(), yaml(&p)))
        .filter(|(_, v)| v["kind"] == KIND && v["apiVersion"] == api_version)
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The object as the API server would hand it back: the private annotations are the
/// webhook's own business.
fn without_private(mut object: Value) -> Value {
    take_private_annotations(&mut object);
    object
}

#[test]
fn every_v1alpha1_sample_round_trips_through_v1beta1() {
    let alpha = samples(V1ALPHA1);
    assert!(alpha.len() >= 5, "v1alpha1 samples: {}", alpha.len());
    for (file, object) in alpha {
        let beta = convert(&object, V1BETA1).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(beta["apiVersion"], V1BETA1, "{file}");
        assert!(beta["spec"].get("services").is_none(), "{file}: {beta:#}");
        // The mapping itself is lossless for these shapes: nothing had to be kept aside.
        assert!(
            beta["metadata"].get("annotations").is_none(),
            "{file}: {beta:#}"
        );
        let back = convert(&beta, V1ALPHA1).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(back, object, "{file}: v1alpha1 -> v1beta1 -> v1alpha1");
    }
}

#[test]
fn every_v1beta1_sample_round_trips_through_v1alpha1() {
    let beta = samples(V1BETA1);
    // 7 profiler templates of ai-dynamo 1.6.1 and the 3 v1beta1 status samples.
    assert!(beta.len() >= 10, "v1beta1 samples: {}", beta.len());
    for (file, object) in beta {
        let alpha = convert(&object, V1ALPHA1).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(alpha["apiVersion"], V1ALPHA1, "{file}");
        assert!(
            alpha["spec"].get("components").is_none(),
            "{file}: {alpha:#}"
        );
        assert!(
            alpha["metadata"].get("annotations").is_none(),
            "{file}: {alpha:#}"
        );
        let back = convert(&alpha, V1BETA1).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(back, object, "{file}: v1beta1 -> v1alpha1 -> v1beta1");
    }
}

#[test]
fn the_profiler_templates_map_as_dynamo_maps_them() {
    let dir = paths::fixtures_dir().join("upstream-samples/dynamo-1.6");
    let object = yaml(&dir.join("vllm/disagg.yaml"));
    let alpha = without_private(convert(&object, V1ALPHA1).unwrap());
    let services = alpha["spec"]["services"].as_object().unwrap();
    assert_eq!(
        services.keys().collect::<Vec<_>>(),
        ["Frontend", "decode", "prefill"]
    );
    let prefill = &services["prefill"];
    assert_eq!(prefill["componentType"], "worker");
    assert_eq!(prefill["subComponentType"], "prefill");
    assert_eq!(prefill["replicas"], 1);
    assert_eq!(prefill["envFromSecret"], "hf-token-secret");
    assert_eq!(prefill["resources"]["limits"]["gpu"], "1");
    assert_eq!(
        prefill["resources"]["requests"]["custom"]["ephemeral-storage"],
        "2Gi"
    );
    let main = &prefill["extraPodSpec"]["mainContainer"];
    assert_eq!(main["image"], "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1");
    assert_eq!(main["command"], json!(["python3", "-m", "dynamo.vllm"]));
    assert_eq!(main["workingDir"], "/workspace/examples/backends/vllm");
    assert!(main.get("name").is_none(), "{main:#}");
    assert_eq!(services["Frontend"]["componentType"], "frontend");
}

/// What AI Runway's Dynamo provider writes on `v1alpha1` (every path of its `V1ALPHA1_PATHS`).
fn rendered_v1alpha1() -> Value {
    json!({
        "apiVersion": V1ALPHA1,
        "kind": KIND,
        "metadata": {"name": "llama", "namespace": "team-a", "labels": {"app": "llama"}},
        "spec": {
            "backendFramework": "vllm",
            "pvcs": [{"name": "model-cache", "create": false}],
            "services": {
                "Frontend": {
                    "componentType": "frontend",
                    "dynamoNamespace": "llama",
                    "replicas": 1,
                    "extraPodSpec": {"mainContainer": {"image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.1.1"}},
                },
                "VllmPrefillWorker": {
                    "componentType": "worker",
                    "subComponentType": "prefill",
                    "dynamoNamespace": "llama",
                    "replicas": 2,
                    "envFromSecret": "hf-token",
                    "envs": [{"name": "HF_HOME", "value": "/models"}],
                    "resources": {
                        "limits": {"gpu": "2", "gpuType": "nvidia.com/gpu", "memory": "64Gi"},
                        "requests": {"cpu": "8", "memory": "32Gi"},
                    },
                    "extraPodMetadata": {"labels": {"tier": "gpu"}, "annotations": {"a": "b"}},
                    "extraPodSpec": {
                        "nodeSelector": {"gpu": "h100"},
                        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
                        "mainContainer": {
                            "image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.1.1",
                            "command": ["python3", "-m", "dynamo.vllm"],
                            "args": ["--model", "meta-llama/Llama-3.1-8B"],
                        },
                    },
                    "volumeMounts": [
                        {"name": "model-cache", "mountPoint": "/models"},
                        {"name": "compile-cache", "mountPoint": "/cache", "useAsCompilationCache": true},
                    ],
                },
            },
        },
    })
}

#[test]
fn what_ai_runway_renders_on_v1alpha1_maps_to_v1beta1_and_back() {
    let alpha = rendered_v1alpha1();
    let beta = convert(&alpha, V1BETA1).unwrap();
    let components = beta["spec"]["components"].as_array().unwrap();
    assert_eq!(components.len(), 2);
    let prefill = &components[1];
    assert_eq!(prefill["name"], "VllmPrefillWorker");
    assert_eq!(prefill["type"], "prefill");
    assert_eq!(prefill["replicas"], 2);
    assert_eq!(
        prefill["compilationCache"],
        json!({"pvcName": "compile-cache", "mountPath": "/cache"})
    );
    let template = &prefill["podTemplate"];
    assert_eq!(template["metadata"]["labels"], json!({"tier": "gpu"}));
    assert_eq!(template["spec"]["nodeSelector"], json!({"gpu": "h100"}));
    let main = &template["spec"]["containers"][0];
    assert_eq!(main["name"], "main");
    assert_eq!(main["args"], json!(["--model", "meta-llama/Llama-3.1-8B"]));
    assert_eq!(
        main["envFrom"],
        json!([{"secretRef": {"name": "hf-token"}}])
    );
    assert_eq!(
        main["env"],
        json!([{"name": "HF_HOME", "value": "/models"}])
    );
    assert_eq!(
        main["resources"],
        json!({
            "limits": {"nvidia.com/gpu": "2", "memory": "64Gi"},
            "requests": {"cpu": "8", "memory": "32Gi"},
        })
    );
    assert_eq!(
        main["volumeMounts"][1],
        json!({"name": "compile-cache", "mountPath": "/cache"})
    );
    // pvcs, dynamoNamespace and the explicit gpuType have no v1beta1 field: kept in Dynamo's
    // private spec annotation, and the object comes back whole.
    assert!(beta["spec"].get("pvcs").is_none());
    assert!(
        beta["metadata"]["annotations"][SPEC_ANNOTATION].is_string(),
        "{beta:#}"
    );
    assert_eq!(beta["metadata"]["labels"], json!({"app": "llama"}));
    assert_eq!(convert(&beta, V1ALPHA1).unwrap(), alpha);
}

#[test]
fn live_fields_win_over_the_kept_payload() {
    let alpha = rendered_v1alpha1();
    let mut beta = convert(&alpha, V1BETA1).unwrap();
    // Changed in v1beta1 after the conversion: the replicas and the image.
    beta["spec"]["components"][1]["replicas"] = json!(5);
    beta["spec"]["components"][1]["podTemplate"]["spec"]["containers"][0]["image"] =
        json!("nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1");
    let back = without_private(convert(&beta, V1ALPHA1).unwrap());
    let prefill = &back["spec"]["services"]["VllmPrefillWorker"];
    assert_eq!(prefill["replicas"], 5);
    assert_eq!(
        prefill["extraPodSpec"]["mainContainer"]["image"],
        "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1"
    );
    // What v1beta1 cannot hold and Dynamo keeps by service name still comes back.
    assert_eq!(back["spec"]["pvcs"], alpha["spec"]["pvcs"]);
    assert_eq!(prefill["dynamoNamespace"], "llama");
    assert_eq!(prefill["subComponentType"], "prefill");
    // The explicit gpuType is not among them: it reads back as Dynamo's default resource.
    assert!(prefill["resources"]["limits"].get("gpuType").is_none());
    assert_eq!(prefill["resources"]["limits"]["gpu"], "2");
}

#[test]
fn status_services_and_components_map_both_ways() {
    let file = paths::status_samples_dir().join("dgd-successful.yaml");
    let alpha = yaml(&file);
    let beta = convert(&alpha, V1BETA1).unwrap();
    let worker = &beta["status"]["components"]["VllmWorker"];
    assert_eq!(
        worker["componentNames"],
        json!(["qwen3-vllmworker-7f3c9a1e"])
    );
    assert!(worker.get("componentName").is_none());
    assert_eq!(worker["readyReplicas"], 1);
    assert_eq!(beta["status"]["state"], "successful");
    // componentName is the last of componentNames: nothing to keep.
    assert!(
        beta["metadata"].get("annotations").is_none(),
        "{:#}",
        beta["metadata"]
    );

    let sample = yaml(&paths::status_samples_dir().join("dgd-v1beta1-pending.yaml"));
    let alpha = convert(&sample, V1ALPHA1).unwrap();
    assert_eq!(
        alpha["status"]["services"]["Frontend"]["componentName"],
        "qwen3-frontend"
    );
}

#[test]
fn refusals_name_the_problem() {
    let mut other = rendered_v1alpha1();
    other["kind"] = json!("DynamoComponentDeployment");
    let e = convert(&other, V1BETA1).unwrap_err();
    assert_eq!(e.category(), "wrong_kind");
    let e = convert(&rendered_v1alpha1(), "nvidia.com/v2").unwrap_err();
    assert_eq!(e.category(), "unsupported_version");
    assert!(e.to_string().contains("nvidia.com/v2"), "{e}");
    let mut broken = rendered_v1alpha1();
    broken["spec"]["services"] = json!(["not", "a", "map"]);
    let e = convert(&broken, V1BETA1).unwrap_err();
    assert_eq!(e.to_string(), "spec.services: expected an object");
    // Same version: unchanged.
    assert_eq!(
        convert(&rendered_v1alpha1(), V1ALPHA1).unwrap(),
        rendered_v1alpha1()
    );
}

#[test]
fn an_annotation_the_webhook_did_not_write_is_ignored() {
    let mut alpha = rendered_v1alpha1();
    alpha["metadata"]["annotations"] = json!({SPEC_ANNOTATION: "{not json", "keep": "me"});
    let beta = convert(&alpha, V1BETA1).unwrap();
    assert_eq!(beta["metadata"]["annotations"]["keep"], "me");
    let back = convert(&beta, V1ALPHA1).unwrap();
    assert_eq!(back["metadata"]["annotations"], json!({"keep": "me"}));
    assert_eq!(back["spec"], alpha["spec"]);
}

#[test]
fn a_conversion_review_is_answered_in_order() {
    let review: kube::core::conversion::ConversionReview = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": "0b8f1c7e",
            "desiredAPIVersion": V1BETA1,
            "objects": [rendered_v1alpha1(), rendered_v1alpha1()],
        },
    }))
    .unwrap();
    let answer = serde_json::to_value(server::answer(review)).unwrap();
    assert_eq!(answer["response"]["uid"], "0b8f1c7e");
    assert_eq!(answer["response"]["result"]["status"], "Success");
    let objects = answer["response"]["convertedObjects"].as_array().unwrap();
    assert_eq!(objects.len(), 2);
    assert!(objects.iter().all(|o| o["apiVersion"] == V1BETA1));

    let failing: kube::core::conversion::ConversionReview = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "1", "desiredAPIVersion": "nvidia.com/v9", "objects": [rendered_v1alpha1()]},
    }))
    .unwrap();
    let answer = serde_json::to_value(server::answer(failing)).unwrap();
    assert_eq!(answer["response"]["result"]["status"], "Failure");
    assert_eq!(
        answer["response"]["result"]["reason"],
        "unsupported_version"
    );
}

#[test]
fn the_order_of_v1beta1_components_survives_a_change_in_v1alpha1() {
    let dir = paths::fixtures_dir().join("upstream-samples/dynamo-1.6");
    let mut beta = yaml(&dir.join("vllm/disagg.yaml"));
    let components = beta["spec"]["components"].as_array_mut().unwrap();
    components.reverse();
    let mut alpha = convert(&beta, V1ALPHA1).unwrap();
    assert!(alpha["metadata"]["annotations"][SPEC_ANNOTATION].is_string());
    // Unchanged: identity.
    assert_eq!(convert(&alpha, V1BETA1).unwrap(), beta);
    // Changed in v1alpha1: the live value, in the kept order.
    alpha["spec"]["services"]["decode"]["replicas"] = json!(3);
    let back = convert(&alpha, V1BETA1).unwrap();
    let names: Vec<&str> = back["spec"]["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["prefill", "decode", "Frontend"]);
    let mut expected = beta["spec"].clone();
    expected["components"][1]["replicas"] = json!(3);
    assert_eq!(back["spec"], expected);
}

/// The Dynamo provider's renders of one deployment in both versions agree through Dynamo's
/// conversion: the `v1alpha1` graph converted is the `v1beta1` graph (components in another
/// order, which `v1beta1` keys by name), except the default engine image, Dynamo 1.1.1's
/// runtime on `v1alpha1` and 1.6.1's on `v1beta1` — so a deployment moved from one version to
/// the other keeps its pods only when it names its image.
#[test]
fn the_provider_renders_one_graph_in_both_versions_but_the_default_image() {
    use airunway_api::provider::{Provider, UpstreamSchema};
    use airunway_provider_dynamo::DynamoProvider;
    let schema = |version: &str| UpstreamSchema {
        version: version.into(),
        api_version: format!("nvidia.com/{version}"),
        fingerprint: "f".into(),
    };
    let by_name = |mut spec: Value| {
        if let Some(components) = spec["components"].as_array_mut() {
            components.sort_by_key(|c| c["name"].as_str().unwrap_or_default().to_string());
        }
        spec
    };
    let pinned = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1";
    for (spec, names_image) in [
        (
            json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"}, "image": pinned,
                "resources": {"gpu": {"count": 1}}, "provider": {"name": "dynamo"}}),
            true,
        ),
        (
            json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"},
                "provider": {"name": "dynamo"}, "scaling": {"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}}}),
            false,
        ),
    ] {
        let md: airunway_api::v1alpha1::ModelDeployment = serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns", "uid": "u"}, "spec": spec,
            "status": {"provider": {"name": "dynamo"}}}))
        .unwrap();
        let alpha = DynamoProvider
            .render(&md, &schema("v1alpha1"))
            .unwrap()
            .objects
            .remove(0);
        let beta = DynamoProvider
            .render(&md, &schema("v1beta1"))
            .unwrap()
            .objects
            .remove(0);
        let converted = serde_json::to_string(&convert(&alpha, V1BETA1).unwrap()["spec"]).unwrap();
        let converted = if names_image {
            converted
        } else {
            converted.replace("vllm-runtime:1.1.1", "vllm-runtime:1.6.1")
        };
        let converted: Value = serde_json::from_str(&converted).unwrap();
        assert_eq!(
            by_name(converted),
            by_name(beta["spec"].clone()),
            "{alpha:#}"
        );
    }
}

#[test]
fn a_partial_object_without_metadata_gets_one() {
    // What server-side apply converts for managed fields: the owned fields only.
    let pruned = json!({"apiVersion": V1ALPHA1, "kind": KIND,
        "spec": {"services": {"Frontend": {"replicas": 1, "dynamoNamespace": "m"}}}});
    let beta = convert(&pruned, V1BETA1).unwrap();
    assert!(beta["metadata"].is_object(), "{beta:#}");
    assert_eq!(
        beta["spec"]["components"][0],
        json!({"name": "Frontend", "replicas": 1})
    );
    let back = convert(&beta, V1ALPHA1).unwrap();
    assert_eq!(back["spec"], pruned["spec"]);
}

mod generated {
    //! Every graph the Dynamo provider renders from generated deployments, in both versions.

    use airunway_api::generate;
    use airunway_api::provider::{Provider, UpstreamSchema};
    use airunway_provider_dynamo::DynamoProvider;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::super::*;

    fn schema(version: &str) -> UpstreamSchema {
        UpstreamSchema {
            version: version.into(),
            api_version: format!("nvidia.com/{version}"),
            fingerprint: "f".into(),
        }
    }

    fn has_empty_string(value: &Value) -> bool {
        match value {
            Value::String(s) => s.is_empty(),
            Value::Array(items) => items.iter().any(has_empty_string),
            Value::Object(map) => map.values().any(has_empty_string),
            _ => false,
        }
    }

    fn by_name(mut spec: Value) -> Value {
        if let Some(components) = spec["components"].as_array_mut() {
            components.sort_by_key(|c| c["name"].as_str().unwrap_or_default().to_string());
        }
        spec
    }

    fn graphs(md: &airunway_api::v1alpha1::ModelDeployment, version: &str) -> Vec<Value> {
        DynamoProvider
            .render(md, &schema(version))
            .map(|set| {
                set.objects
                    .into_iter()
                    .filter(|o| o["kind"] == KIND)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The operations a payload kept for `object` (what the other version cannot hold).
    fn kept(object: &Value) -> Vec<Value> {
        let Some(text) = object["metadata"]["annotations"][SPEC_ANNOTATION].as_str() else {
            return Vec::new();
        };
        let payload: Value = serde_json::from_str(text).unwrap();
        payload["patch"].as_array().unwrap().clone()
    }

    proptest! {
        #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn every_rendered_graph_converts_both_ways_and_back(spec in generate::spec()) {
            let mut spec = spec;
            spec["provider"] = json!({"name": "dynamo"});
            let Some(md) = generate::model_deployment("m", &spec, Some("dynamo")) else {
                return Ok(());
            };
            for graph in graphs(&md, "v1beta1") {
                let alpha = convert(&graph, V1ALPHA1).unwrap();
                prop_assert_eq!(&convert(&alpha, V1BETA1).unwrap(), &graph);
                // Dynamo's mapping holds every v1beta1 field the provider writes: without the
                // kept payload the graph comes back but for the order of its components, which
                // v1alpha1's map cannot hold. (Empty values, such as a secret or memory of "",
                // are dropped by Dynamo's mapping and only come back through the payload.)
                if !has_empty_string(&graph["spec"]) {
                    let mut bare = alpha.clone();
                    take_private_annotations(&mut bare);
                    let back = convert(&bare, V1BETA1).unwrap();
                    prop_assert_eq!(by_name(back["spec"].clone()), by_name(graph["spec"].clone()), "{:#}", graph);
                }
            }
            for graph in graphs(&md, "v1alpha1") {
                let beta = convert(&graph, V1BETA1).unwrap();
                prop_assert_eq!(&convert(&beta, V1ALPHA1).unwrap(), &graph);
                // Only what v1beta1 has no field for is kept aside: `dynamoNamespace` (Dynamo
                // >= 1.5 derives it), `pvcs`, and `resources` that do not come back the same
                // from native requirements (a `gpuType`, an empty `resources: {}`), which Dynamo
                // keeps too (`resourcesNeedPreservation`). Empty values, as above, only come
                // back through the payload.
                for op in kept(&beta).into_iter().filter(|_| !has_empty_string(&graph["spec"])) {
                    let path = op["path"].as_str().unwrap();
                    let service_field = path.split('/').nth(3).unwrap_or_default();
                    prop_assert!(
                        path.starts_with("/pvcs")
                            || (path.starts_with("/services/")
                                && ["dynamoNamespace", "resources"].contains(&service_field)),
                        "{} in {:#}", op, graph
                    );
                }
            }
        }
    }
}
