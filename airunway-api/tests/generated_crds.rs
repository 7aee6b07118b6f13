//! The generated CRDs carry what the cluster needs to protect itself and to be usable with
//! kubectl: CEL rules with the spec's messages, defaults, printer columns, short names,
//! categories and list-map conditions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airunway_api::constants::messages;
use airunway_api::kube::CustomResourceExt;
use airunway_api::v1alpha1::{InferenceProviderConfig, ModelDeployment};
use serde_json::Value;

fn schema<K: CustomResourceExt>() -> (Value, Value) {
    let crd = serde_json::to_value(K::crd()).unwrap();
    let version = crd["spec"]["versions"][0].clone();
    (crd, version)
}

fn rules(node: &Value) -> Vec<(String, String)> {
    node["x-kubernetes-validations"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["message"].as_str().unwrap_or("").to_string(),
                r["rule"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn model_deployment_crd() {
    let (crd, version) = schema::<ModelDeployment>();
    assert_eq!(crd["spec"]["group"], "airunway.ai");
    assert_eq!(crd["spec"]["scope"], "Namespaced");
    assert_eq!(
        crd["spec"]["names"]["shortNames"],
        serde_json::json!(["md"])
    );
    assert_eq!(
        crd["spec"]["names"]["categories"],
        serde_json::json!(["airunway"])
    );
    assert_eq!(version["subresources"]["status"], serde_json::json!({}));

    let columns: Vec<&str> = version["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        columns,
        [
            "Phase",
            "Provider",
            "Engine",
            "Ready",
            "Age",
            "Replicas-Ready",
            "Replicas-Desired",
            "Gateway-Endpoint",
            "Message"
        ]
    );
    // `kubectl get md` shows the first five; `-o wide` (priority 1) adds the replicas, the
    // gateway endpoint and the message, each from the status field that holds it.
    let wide: Vec<(&str, &str, &str)> = version["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["priority"] == 1)
        .map(|c| {
            (
                c["name"].as_str().unwrap(),
                c["jsonPath"].as_str().unwrap(),
                c["type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        wide,
        [
            ("Replicas-Ready", ".status.replicas.ready", "integer"),
            ("Replicas-Desired", ".status.replicas.desired", "integer"),
            ("Gateway-Endpoint", ".status.gateway.endpoint", "string"),
            ("Message", ".status.message", "string"),
        ]
    );

    let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"];
    let spec_messages: Vec<String> = rules(spec).into_iter().map(|(m, _)| m).collect();
    for expected in [
        messages::VLLM_REQUIRES_GPU,
        messages::SGLANG_REQUIRES_GPU,
        messages::TRTLLM_REQUIRES_GPU,
        messages::DISAGGREGATED_GPU_CONFLICT,
        messages::DISAGGREGATED_REQUIRES_COMPONENTS,
        messages::DISAGGREGATED_REQUIRES_PREFILL_GPU,
        messages::DISAGGREGATED_REQUIRES_DECODE_GPU,
    ] {
        assert!(
            spec_messages.iter().any(|m| m == expected),
            "missing CEL rule for {expected:?}"
        );
    }
    // The parser rules of `spec.engine` (docs/validation.md), each on both parser fields.
    let spec_rules = rules(spec);
    for (expected, fields) in [
        (airunway_api::engine_parsers::PARSER_EMPTY, 2),
        (airunway_api::engine_parsers::PARSER_RESERVED, 2),
        (airunway_api::engine_parsers::PARSER_LOWER_CASE, 2),
        (airunway_api::engine_parsers::PARSER_CHARACTERS, 2),
        (
            airunway_api::engine_parsers::TOOL_CALL_PARSER_NEEDS_TOOL_CALLING,
            1,
        ),
    ] {
        assert_eq!(
            spec_rules.iter().filter(|(m, _)| m == expected).count(),
            fields,
            "CEL rules for {expected:?}"
        );
    }
    let model_messages: Vec<String> = rules(&spec["properties"]["model"])
        .into_iter()
        .map(|(m, _)| m)
        .collect();
    assert_eq!(model_messages, [messages::MODEL_ID_REQUIRED]);

    let props = &spec["properties"];
    assert_eq!(
        props["model"]["properties"]["source"]["default"],
        "huggingface"
    );
    assert_eq!(
        props["serving"]["properties"]["mode"]["default"],
        "aggregated"
    );
    assert_eq!(props["scaling"]["properties"]["replicas"]["default"], 1);
    assert_eq!(
        props["resources"]["properties"]["gpu"]["properties"]["type"]["default"],
        "nvidia.com/gpu"
    );
    assert_eq!(
        props["engine"]["properties"]["type"]["enum"],
        serde_json::json!(["vllm", "sglang", "trtllm", "llamacpp"])
    );
    assert_eq!(
        props["provider"]["properties"]["overrides"]["x-kubernetes-preserve-unknown-fields"],
        true
    );
    // Unknown fields under spec are kept (and refused by name by the webhook), not pruned.
    assert_eq!(spec["x-kubernetes-preserve-unknown-fields"], true);
    assert_eq!(
        props["engine"]["x-kubernetes-preserve-unknown-fields"],
        true
    );
    assert_eq!(
        props["engine"]["properties"]["enablePrefixCaching"]["default"],
        true
    );
    assert_eq!(
        props["scaling"]["properties"]["replicas"]["maximum"].as_f64(),
        Some(f64::from(airunway_api::constants::limits::MAX_REPLICAS))
    );

    let conditions =
        &version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["conditions"];
    assert_eq!(conditions["x-kubernetes-list-type"], "map");
    assert_eq!(
        conditions["x-kubernetes-list-map-keys"],
        serde_json::json!(["type"])
    );
    assert_eq!(
        conditions["items"]["required"],
        serde_json::json!(["status", "type"])
    );
}

#[test]
fn provider_config_crd() {
    let (crd, version) = schema::<InferenceProviderConfig>();
    assert_eq!(crd["spec"]["scope"], "Cluster");
    assert_eq!(
        crd["spec"]["names"]["shortNames"],
        serde_json::json!(["ipc"])
    );
    let columns: Vec<&str> = version["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["Ready", "Version", "Heartbeat", "Age"]);
    let status = &version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"];
    assert!(status.get("upstreamCRDVersion").is_some());
    assert_eq!(status["conditions"]["x-kubernetes-list-type"], "map");
    let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    assert_eq!(
        spec["selectionRules"]["items"]["properties"]["priority"]["minimum"],
        0.0
    );
}

#[test]
fn every_schema_field_has_a_description() {
    fn walk(path: &str, node: &Value, missing: &mut Vec<String>) {
        if let Some(props) = node["properties"].as_object() {
            for (name, child) in props {
                let p = format!("{path}.{name}");
                if child.get("description").is_none()
                    && !matches!(name.as_str(), "apiVersion" | "kind" | "metadata")
                {
                    missing.push(p.clone());
                }
                walk(&p, child, missing);
            }
        }
        if let Some(items) = node.get("items") {
            walk(&format!("{path}[]"), items, missing);
        }
    }
    for (kind, (_, version)) in [
        ("md", schema::<ModelDeployment>()),
        ("ipc", schema::<InferenceProviderConfig>()),
    ] {
        let mut missing = Vec::new();
        walk(kind, &version["schema"]["openAPIV3Schema"], &mut missing);
        assert!(
            missing.is_empty(),
            "fields without a description: {missing:?}"
        );
    }
}
