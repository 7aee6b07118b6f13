//! Dynamo >= 1.5's DynamoGraphDeployment CRD on the real control plane (`v1alpha1` deprecated,
//! `v1beta1` storage, conversion webhook) with the played conversion webhook
//! (`airunway_e2e::dynamo_conversion`): an object created in one version reads back in the
//! other through the webhook, and whole in its own; a change made in the other version keeps
//! what only the first version holds.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airunway_e2e::dynamo_conversion::{CRD_NAME, KIND, SPEC_ANNOTATION, V1ALPHA1, V1BETA1};
use airunway_e2e::{ControlPlane, TestEnv, paths};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

fn api(env: &TestEnv, version: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("nvidia.com", version, KIND),
        "dynamographdeployments",
    );
    Api::namespaced_with(env.client.clone(), &env.namespace, &resource)
}

fn yaml(path: &std::path::Path) -> Value {
    serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A sample without its status, named `name` in the test's namespace.
fn object(path: &std::path::Path, name: &str, env: &TestEnv) -> (DynamicObject, Value) {
    let mut sample = yaml(path);
    let status = sample.as_object_mut().unwrap().remove("status");
    sample["metadata"] = json!({"name": name, "namespace": env.namespace});
    (
        serde_json::from_value(sample).unwrap(),
        status.unwrap_or(Value::Null),
    )
}

fn spec(object: &DynamicObject) -> Value {
    object.data["spec"].clone()
}

#[tokio::test]
async fn the_crd_stores_v1beta1_and_converts_through_the_played_webhook() {
    let env = TestEnv::new("dgd-crd").await;
    let crd = Api::<CustomResourceDefinition>::all(env.client.clone())
        .get(CRD_NAME)
        .await
        .unwrap();
    let versions: Vec<(String, bool, bool, Option<bool>)> = crd
        .spec
        .versions
        .iter()
        .map(|v| (v.name.clone(), v.served, v.storage, v.deprecated))
        .collect();
    assert_eq!(
        versions,
        [
            ("v1alpha1".to_string(), true, false, Some(true)),
            ("v1beta1".to_string(), true, true, None),
        ]
    );
    let conversion = crd.spec.conversion.unwrap();
    assert_eq!(conversion.strategy, "Webhook");
    let client_config = conversion.webhook.unwrap().client_config.unwrap();
    assert_eq!(
        client_config.url.as_deref(),
        Some(ControlPlane::shared().dynamo_conversion.url.as_str())
    );
    assert!(client_config.service.is_none());
}

#[tokio::test]
async fn a_dgd_created_as_v1alpha1_reads_back_as_v1beta1_and_whole_as_v1alpha1() {
    let env = TestEnv::new("dgd-alpha").await;
    let (created, status) = object(
        &paths::status_samples_dir().join("dgd-successful.yaml"),
        "qwen3",
        &env,
    );
    let alpha = api(&env, "v1alpha1");
    alpha
        .create(&PostParams::default(), &created)
        .await
        .unwrap();

    let beta = api(&env, "v1beta1").get("qwen3").await.unwrap();
    assert_eq!(beta.types.as_ref().unwrap().api_version, V1BETA1);
    let components = beta.data["spec"]["components"].as_array().unwrap();
    let names: Vec<&str> = components
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Frontend", "VllmWorker"]);
    let worker = &components[1];
    assert_eq!(worker["type"], "worker");
    let main = &worker["podTemplate"]["spec"]["containers"][0];
    assert_eq!(main["name"], "main");
    assert_eq!(main["image"], "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.1.1");
    assert_eq!(main["resources"]["limits"]["nvidia.com/gpu"], "1");
    assert_eq!(beta.data["spec"]["backendFramework"], "vllm");

    let read = alpha.get("qwen3").await.unwrap();
    assert_eq!(
        spec(&read),
        spec(&created),
        "v1alpha1 -> storage -> v1alpha1"
    );

    // The operator's status, written through v1alpha1, reads back in v1beta1's shape.
    alpha
        .patch_status(
            "qwen3",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": status})),
        )
        .await
        .unwrap();
    let beta = api(&env, "v1beta1").get("qwen3").await.unwrap();
    let worker = &beta.data["status"]["components"]["VllmWorker"];
    assert_eq!(
        worker["componentNames"],
        json!(["qwen3-vllmworker-7f3c9a1e"])
    );
    assert_eq!(worker["availableReplicas"], 1);
    assert_eq!(beta.data["status"]["state"], "successful");
    let read = alpha.get("qwen3").await.unwrap();
    assert_eq!(read.data["status"]["services"], status["services"]);
}

#[tokio::test]
async fn a_dgd_created_as_v1beta1_reads_back_as_v1alpha1_and_a_v1alpha1_change_keeps_the_rest() {
    let env = TestEnv::new("dgd-beta").await;
    let (mut created, _) = object(
        &paths::fixtures_dir().join("upstream-samples/dynamo-1.6/vllm/disagg.yaml"),
        "vllm-disagg",
        &env,
    );
    // An order v1alpha1's map cannot hold.
    created.data["spec"]["components"]
        .as_array_mut()
        .unwrap()
        .reverse();
    let beta_api = api(&env, "v1beta1");
    beta_api
        .create(&PostParams::default(), &created)
        .await
        .unwrap();

    let alpha_api = api(&env, "v1alpha1");
    let alpha = alpha_api.get("vllm-disagg").await.unwrap();
    let services = alpha.data["spec"]["services"].as_object().unwrap();
    assert_eq!(services["decode"]["componentType"], "worker");
    assert_eq!(services["decode"]["subComponentType"], "decode");
    assert_eq!(services["prefill"]["envFromSecret"], "hf-token-secret");
    assert_eq!(services["prefill"]["resources"]["limits"]["gpu"], "1");
    assert!(
        alpha.metadata.annotations.as_ref().unwrap()[SPEC_ANNOTATION].contains(V1BETA1),
        "the order is kept in Dynamo's private annotation: {:?}",
        alpha.metadata.annotations
    );

    // A change through v1alpha1: the live value wins, the rest of the v1beta1 object stays.
    alpha_api
        .patch(
            "vllm-disagg",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"services": {"decode": {"replicas": 3}}}})),
        )
        .await
        .unwrap();
    let read = beta_api.get("vllm-disagg").await.unwrap();
    let mut expected = spec(&created);
    expected["components"][1]["replicas"] = json!(3);
    assert_eq!(spec(&read), expected);

    // And in v1alpha1 the object is what the v1beta1 one says.
    let alpha = alpha_api.get("vllm-disagg").await.unwrap();
    assert_eq!(alpha.data["spec"]["services"]["decode"]["replicas"], 3);
    assert_eq!(alpha.types.unwrap().api_version, V1ALPHA1);
}

#[tokio::test]
async fn what_only_v1alpha1_holds_survives_a_v1beta1_change() {
    let env = TestEnv::new("dgd-alpha-only").await;
    let (mut created, _) = object(
        &paths::status_samples_dir().join("dgd-successful.yaml"),
        "qwen3",
        &env,
    );
    created.data["spec"]["pvcs"] = json!([{"name": "model-cache", "create": false}]);
    created.data["spec"]["services"]["VllmWorker"]["dynamoNamespace"] = json!("qwen3");
    let alpha_api = api(&env, "v1alpha1");
    alpha_api
        .create(&PostParams::default(), &created)
        .await
        .unwrap();
    let beta_api = api(&env, "v1beta1");
    let stored = beta_api.get("qwen3").await.unwrap();
    assert!(stored.data["spec"].get("pvcs").is_none());
    assert!(
        stored.metadata.annotations.as_ref().unwrap()[SPEC_ANNOTATION].contains("pvcs"),
        "{:?}",
        stored.metadata.annotations
    );

    let mut components = stored.data["spec"]["components"].clone();
    assert_eq!(components[1]["name"], "VllmWorker");
    components[1]["replicas"] = json!(2);
    beta_api
        .patch(
            "qwen3",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"components": components}})),
        )
        .await
        .unwrap();
    let read = alpha_api.get("qwen3").await.unwrap();
    let mut expected = spec(&created);
    expected["services"]["VllmWorker"]["replicas"] = json!(2);
    assert_eq!(spec(&read), expected);
}
