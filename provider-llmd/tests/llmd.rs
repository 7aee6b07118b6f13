//! llm-d provider: compatibility messages, the rendered Deployments and Services (aggregated
//! and disaggregated), the override rules, status translation from Deployment conditions, the
//! registration, and the SDK's pure cycle over the set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airunway_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::BUILTIN_FINGERPRINT;
use airunway_api::provider::Incompatible;
use airunway_api::provider::plan::{self, Write};
use airunway_api::provider::{Provider, SchemaDetection, UpstreamSchema, cycle};
use airunway_api::serde_json::{self, Value, json};
use airunway_api::v1alpha1::{ConditionStatus, EngineCapabilityEntry, ModelDeployment, Phase};
use airunway_provider_llmd::{ENDPOINT_PICKER_IMAGE, LlmdProvider, compat};

fn schema() -> UpstreamSchema {
    match LlmdProvider.detect_schema(None) {
        SchemaDetection::Supported(schema) => schema,
        other => panic!("{other:?}"),
    }
}

fn md(spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "m", "namespace": "ns", "uid": "u", "labels": {"airunway.ai/team": "t"}},
        "spec": spec, "status": {"provider": {"name": "llmd"}}}))
    .unwrap()
}

fn aggregated(extra: Value) -> ModelDeployment {
    let mut spec = json!({"model": {"id": "Qwen/Qwen3-8B"}, "engine": {"type": "vllm"},
        "resources": {"gpu": {"count": 1}}, "provider": {"name": "llmd"}});
    for (key, value) in extra.as_object().unwrap() {
        spec[key] = value.clone();
    }
    md(spec)
}

fn disaggregated() -> ModelDeployment {
    md(
        json!({"model": {"id": "Qwen/Qwen3-8B"}, "engine": {"type": "vllm"},
        "serving": {"mode": "disaggregated"},
        "scaling": {"prefill": {"replicas": 2, "gpu": {"count": 1}, "memory": "32Gi"},
                    "decode": {"replicas": 1, "gpu": {"count": 4}}},
        "provider": {"name": "llmd"}}),
    )
}

fn objects(md: &ModelDeployment) -> Vec<Value> {
    LlmdProvider.render(md, &schema()).unwrap().objects
}

fn names(objects: &[Value]) -> Vec<(String, String)> {
    objects
        .iter()
        .map(|o| {
            (
                o["kind"].as_str().unwrap().to_string(),
                o["metadata"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn container(deployment: &Value) -> &Value {
    &deployment["spec"]["template"]["spec"]["containers"][0]
}

fn args(deployment: &Value) -> Vec<String> {
    serde_json::from_value(container(deployment)["args"].clone()).unwrap()
}

/// The message of the hold the checked render (the SDK's override check, then the render)
/// shows for `md`.
fn render_error(md: &ModelDeployment) -> String {
    match cycle::checked(&LlmdProvider, md, &schema_detection()) {
        Err(held) => held.status.message,
        Ok(checked) => panic!("{:?}", checked.desired),
    }
}

#[test]
fn compatibility_messages_are_the_specs() {
    assert_eq!(
        LlmdProvider.check_compatibility(&aggregated(json!({}))),
        Ok(())
    );
    assert_eq!(LlmdProvider.check_compatibility(&disaggregated()), Ok(()));
    let sglang = aggregated(json!({"engine": {"type": "sglang"}}));
    assert_eq!(
        LlmdProvider.check_compatibility(&sglang),
        Err(Incompatible::new("llm-d only supports vllm engine"))
    );
    let no_gpu = aggregated(json!({"resources": {"gpu": {"count": 0}}}));
    assert_eq!(
        LlmdProvider.check_compatibility(&no_gpu),
        Err(Incompatible::new("llm-d requires GPU"))
    );
    let mut missing = disaggregated();
    missing.spec.scaling.as_mut().unwrap().prefill = None;
    assert_eq!(
        compat::check(&missing),
        Err(Incompatible::new(
            "spec.scaling.prefill is required for disaggregated serving mode"
        ))
    );
    let mut decode_without_gpu = disaggregated();
    decode_without_gpu
        .spec
        .scaling
        .as_mut()
        .unwrap()
        .decode
        .as_mut()
        .unwrap()
        .gpu = None;
    assert_eq!(
        compat::check(&decode_without_gpu),
        Err(Incompatible::new(
            "llm-d requires GPU for decode (spec.scaling.decode.gpu.count > 0)"
        ))
    );
}

#[test]
fn aggregated_is_one_deployment_and_one_service_named_after_the_deployment() {
    let md = aggregated(
        json!({"engine": {"type": "vllm", "image": "registry.example/vllm:1",
        "enablePrefixCaching": false, "enforceEager": true, "contextLength": 8192,
        "args": {"gpu-memory-utilization": "0.9"}, "extraArgs": ["--seed", "7"]},
        "resources": {"gpu": {"count": 2}, "memory": "64Gi"},
        "scaling": {"replicas": 3},
        "podTemplate": {"metadata": {"labels": {"team": "a"}}}}),
    );
    let objects = objects(&md);
    assert_eq!(
        names(&objects),
        [
            ("Deployment".to_string(), "m".to_string()),
            ("Service".to_string(), "m".to_string())
        ]
    );
    let deployment = &objects[0];
    assert_eq!(deployment["spec"]["replicas"], 3);
    assert_eq!(
        deployment["spec"]["template"]["metadata"]["labels"],
        json!({"team": "a", "llm-d.ai/role": "both", "airunway.ai/model-deployment": "m",
               "airunway.ai/deployment": "m", "app": "m"})
    );
    assert_eq!(container(deployment)["image"], "registry.example/vllm:1");
    assert_eq!(
        args(deployment),
        [
            "--model",
            "Qwen/Qwen3-8B",
            "--max-model-len",
            "8192",
            "--no-enable-prefix-caching",
            "--enforce-eager",
            "--tensor-parallel-size",
            "2",
            "--gpu-memory-utilization",
            "0.9",
            "--seed",
            "7"
        ]
    );
    assert_eq!(
        deployment["spec"]["template"]["spec"]["volumes"][0]["name"],
        "shm"
    );
    let default_image = objects_image(&aggregated(json!({})));
    assert_eq!(default_image, "vllm/vllm-openai:v0.9.1");
    let service = &objects[1];
    assert_eq!(service["spec"]["ports"][0]["port"], 8000);
    assert_eq!(
        service["spec"]["selector"],
        json!({"airunway.ai/deployment": "m", "app": "m"})
    );
}

fn objects_image(md: &ModelDeployment) -> String {
    container(&objects(md)[0])["image"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn disaggregated_is_decode_and_prefill_with_their_kv_roles() {
    let objects = objects(&disaggregated());
    assert_eq!(
        names(&objects),
        [
            ("Deployment".to_string(), "m-decode".to_string()),
            ("Deployment".to_string(), "m-prefill".to_string()),
            ("Service".to_string(), "m-decode".to_string()),
            ("Service".to_string(), "m-prefill".to_string()),
        ]
    );
    let (decode, prefill) = (&objects[0], &objects[1]);
    assert_eq!(decode["spec"]["replicas"], 1);
    assert_eq!(prefill["spec"]["replicas"], 2);
    assert_eq!(
        container(decode)["resources"]["limits"],
        json!({"nvidia.com/gpu": "4"})
    );
    assert_eq!(
        container(prefill)["resources"]["limits"],
        json!({"nvidia.com/gpu": "1", "memory": "32Gi"})
    );
    let decode_args = args(decode);
    assert!(
        decode_args
            .windows(2)
            .any(|w| w == ["--tensor-parallel-size", "4"])
    );
    assert!(decode_args.windows(2).any(|w| w
        == [
            "--kv-transfer-config",
            r#"{"kv_connector":"PyNcclConnector","kv_role":"kv_consumer"}"#
        ]));
    assert!(args(prefill).windows(2).any(|w| w
        == [
            "--kv-transfer-config",
            r#"{"kv_connector":"PyNcclConnector","kv_role":"kv_producer"}"#
        ]));
    assert!(!args(prefill).contains(&"--tensor-parallel-size".to_string()));
    assert_eq!(
        decode["spec"]["template"]["metadata"]["labels"]["llm-d.ai/role"],
        "decode"
    );
    assert_eq!(
        prefill["spec"]["selector"]["matchLabels"],
        json!({"airunway.ai/deployment": "m", "app": "m-prefill"})
    );
    assert_eq!(objects[3]["spec"]["selector"]["app"], "m-prefill");
}

#[test]
fn overrides_deep_merge_with_null_deletes_into_every_deployment_only() {
    let md = {
        let mut md = disaggregated();
        md.spec.node_selector = Some([("pool".to_string(), "a100".to_string())].into());
        md.spec.provider.as_mut().unwrap().overrides = json!({"spec": {"minReadySeconds": 10,
            "progressDeadlineSeconds": 60,
            "template": {"metadata": {"annotations": {"a": "b"}},
                         "spec": {"terminationGracePeriodSeconds": 5, "nodeSelector": null}}}})
        .as_object()
        .cloned();
        md
    };
    let objects = objects(&md);
    for deployment in &objects[..2] {
        assert_eq!(deployment["spec"]["minReadySeconds"], 10);
        assert_eq!(deployment["spec"]["progressDeadlineSeconds"], 60);
        let pod = &deployment["spec"]["template"];
        assert_eq!(pod["metadata"]["annotations"], json!({"a": "b"}));
        assert_eq!(pod["spec"]["terminationGracePeriodSeconds"], 5);
        assert!(pod["spec"].get("nodeSelector").is_none(), "null deletes");
        assert_eq!(container(deployment)["name"], "vllm");
    }
    assert!(objects[2]["spec"].get("minReadySeconds").is_none());
}

#[test]
fn overrides_that_escalate_or_replace_the_pod_spec_are_refused_naming_the_key() {
    let with = |overrides: Value| {
        let mut md = aggregated(json!({}));
        md.spec.provider.as_mut().unwrap().overrides = overrides.as_object().cloned();
        render_error(&md)
    };
    for (overrides, named) in [
        (
            json!({"spec": {"template": {"spec": {"hostNetwork": true}}}}),
            "provider.overrides.spec.template.spec.hostNetwork",
        ),
        (
            json!({"spec": {"template": {"spec": {"hostPID": true}}}}),
            "provider.overrides.spec.template.spec.hostPID",
        ),
        (
            json!({"spec": {"template": {"spec": {"hostIPC": true}}}}),
            "provider.overrides.spec.template.spec.hostIPC",
        ),
        (
            json!({"spec": {"template": {"spec": {"serviceAccountName": "admin"}}}}),
            "provider.overrides.spec.template.spec.serviceAccountName",
        ),
        (
            json!({"spec": {"template": {"spec": {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}}}}),
            "provider.overrides.spec.template.spec.volumes[0].hostPath",
        ),
        (
            json!({"spec": {"template": {"spec": {"securityContext": {"privileged": true}}}}}),
            "provider.overrides.spec.template.spec.securityContext",
        ),
        (
            json!({"x": {"privileged": true}}),
            "provider.overrides.x.privileged",
        ),
        (
            json!({"x": {"capabilities": {"add": ["SYS_ADMIN"]}}}),
            "provider.overrides.x.capabilities",
        ),
        (
            json!({"spec": {"template": {"spec": null}}}),
            "provider.overrides.spec.template.spec would replace the pod spec wholesale",
        ),
        (
            json!({"spec": {"template": "x"}}),
            "provider.overrides.spec.template would replace the pod spec wholesale",
        ),
        (
            json!({"spec": {"template": {"spec": {"containers": []}}}}),
            "provider.overrides.spec.template.spec.containers would replace the vLLM container wholesale",
        ),
        (
            json!({"spec": {"selector": {"matchLabels": {"a": "b"}}}}),
            "provider.overrides.spec.selector",
        ),
        (
            json!({"metadata": {"name": "x"}}),
            "provider.overrides.metadata",
        ),
    ] {
        let message = with(overrides.clone());
        assert!(
            message.starts_with("invalid provider.overrides: "),
            "{message}"
        );
        assert!(message.contains(named), "{overrides}: {message}");
    }
}

fn live(object: &Value, status: Value) -> DynamicObject {
    let mut object = object.clone();
    object["metadata"]["namespace"] = json!("ns");
    object["status"] = status;
    serde_json::from_value(object).unwrap()
}

fn available(replicas: i64) -> Value {
    json!({"replicas": replicas, "updatedReplicas": replicas, "readyReplicas": replicas,
        "availableReplicas": replicas, "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": "ReplicaSet \"m-1\" has successfully progressed."}]})
}

#[test]
fn status_follows_the_deployment_conditions() {
    let md = aggregated(json!({}));
    let objects = objects(&md);
    let none = LlmdProvider.translate_status(&md, &[None, None]);
    assert_eq!(none.phase, Phase::Pending);
    let fresh = live(&objects[0], json!({}));
    // Created, no conditions yet: Deploying with Go's text (parity S3).
    let created = LlmdProvider.translate_status(&md, &[Some(&fresh), None]);
    assert_eq!(
        (created.phase, created.message.as_deref()),
        (
            Phase::Deploying,
            Some("Deployments created, waiting for pods to be ready")
        )
    );
    let progressing = live(
        &objects[0],
        json!({"replicas": 1, "conditions": [
            {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "Deployment does not have minimum availability."},
            {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated", "message": "ReplicaSet \"m-1\" is progressing."}]}),
    );
    let status = LlmdProvider.translate_status(&md, &[Some(&progressing), None]);
    assert_eq!(status.phase, Phase::Deploying);
    assert_eq!(
        status.message.as_deref(),
        Some("ReplicaSet \"m-1\" is progressing.")
    );
    let running = live(&objects[0], available(1));
    let status = LlmdProvider.translate_status(&md, &[Some(&running), None]);
    assert_eq!((status.phase, status.ready), (Phase::Running, true));
    let endpoint = status.endpoint.unwrap();
    assert_eq!(
        (endpoint.service.as_deref(), endpoint.port),
        (Some("m"), Some(8000))
    );
    let deadline = live(
        &objects[0],
        json!({"conditions": [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "ReplicaSet \"m-1\" has timed out progressing."}]}),
    );
    let status = LlmdProvider.translate_status(&md, &[Some(&deadline), None]);
    assert_eq!(status.phase, Phase::Failed);
    assert_eq!(
        status.message.as_deref(),
        Some("ReplicaSet \"m-1\" has timed out progressing.")
    );

    let md = disaggregated();
    let objects = objects_of(&md);
    let decode = live(&objects[0], available(1));
    let prefill = live(&objects[1], available(2));
    let status = LlmdProvider.translate_status(&md, &[Some(&decode), Some(&prefill), None, None]);
    assert_eq!(status.phase, Phase::Running);
    let replicas = status.replicas.unwrap();
    assert_eq!(
        (replicas.desired, replicas.ready, replicas.available),
        (Some(3), Some(3), Some(3))
    );
    assert_eq!(
        status.endpoint.unwrap().service.as_deref(),
        Some("m-decode")
    );
}

fn objects_of(md: &ModelDeployment) -> Vec<Value> {
    objects(md)
}

#[test]
fn registration_is_explicit_only_always_ready_with_an_endpoint_picker() {
    let registration = LlmdProvider.registration();
    assert!(registration.selection_rules.is_none());
    let engines = registration.capabilities.unwrap().engines.unwrap();
    let EngineCapabilityEntry::Detailed(vllm) = &engines[0] else {
        panic!("{engines:?}")
    };
    assert_eq!(vllm.requires_crd, Some(false));
    assert!(vllm.gpu_support && !vllm.cpu_support);
    assert_eq!(vllm.serving_modes.len(), 2);
    let picker = vllm
        .gateway
        .as_ref()
        .unwrap()
        .endpoint_picker
        .as_ref()
        .unwrap();
    assert_eq!(picker.image.as_deref(), Some(ENDPOINT_PICKER_IMAGE));
    let config = picker.config_data.as_deref().unwrap();
    for plugin in [
        "prefix-cache-scorer",
        "decode-filter",
        "max-score-picker",
        "single-profile-handler",
    ] {
        assert!(config.contains(plugin), "{plugin}");
    }
    assert_eq!(schema().fingerprint, BUILTIN_FINGERPRINT);
    assert_eq!(schema().api_version, "apps/v1");
    assert!(LlmdProvider.secondary_kinds()[0].kind == "Service");
}

fn now() -> Time {
    Time("2026-01-01T00:00:00Z".parse().unwrap())
}

#[test]
fn sdk_cycle_over_the_set_drift_and_identity() {
    let md = aggregated(json!({}));
    let checked = cycle::checked(&LlmdProvider, &md, &LlmdProvider.detect_schema(None)).unwrap();
    assert_eq!(checked.desired.len(), 2);
    let deployment = &checked.desired[0];
    assert_eq!(
        deployment.object["metadata"]["ownerReferences"][0]["uid"],
        "u"
    );
    assert_eq!(
        deployment.object["metadata"]["labels"]["airunway.ai/team"],
        "t"
    );
    let writes = |live: &[Option<&DynamicObject>]| -> Vec<Write> {
        cycle::apply_set(&LlmdProvider, &md, &schema(), live, &now())
            .unwrap()
            .objects
            .into_iter()
            .map(|(_, write)| write)
            .collect()
    };
    assert_eq!(writes(&[]), [Write::Create, Write::Create]);
    let served = cycle::served(deployment, available(1)).unwrap();
    let service = cycle::served(&checked.desired[1], json!({})).unwrap();
    assert_eq!(
        writes(&[Some(&served), Some(&service)]),
        [Write::InSync, Write::InSync]
    );
    let mut edited = serde_json::to_value(&served).unwrap();
    edited["spec"]["replicas"] = json!(5);
    let edited: DynamicObject = serde_json::from_value(edited).unwrap();
    assert_eq!(
        writes(&[Some(&edited), Some(&service)]),
        [Write::Update { drifted: true }, Write::InSync]
    );
    let mut other_model = md.clone();
    other_model.spec.model.id = Some("other/model".into());
    let replaced = cycle::run(
        &LlmdProvider,
        &other_model,
        &schema(),
        &[&served, &service],
        &now(),
    );
    let plan::Plan::Recreate { objects, .. } = replaced.plan else {
        panic!("{:?}", replaced.plan)
    };
    assert_eq!(objects.len(), 2, "both objects carry the old identity");
    let applied = cycle::apply(&LlmdProvider, &md, &schema(), Some(&served), &now()).unwrap();
    assert!(!applied.applies);
    assert_eq!(
        applied.status.resource,
        Some(("m".to_string(), "Deployment".to_string()))
    );
    let refused = cycle::checked(
        &LlmdProvider,
        &aggregated(json!({"engine": {"type": "sglang"}})),
        &schema_detection(),
    )
    .unwrap_err();
    assert_eq!(refused.status.message, "llm-d only supports vllm engine");
}

fn schema_detection() -> SchemaDetection {
    LlmdProvider.detect_schema(None)
}

#[test]
fn sdk_set_cycle_creates_then_settles_every_object() {
    let md = disaggregated();
    let first = cycle::apply_set(&LlmdProvider, &md, &schema(), &[], &now()).unwrap();
    assert_eq!(first.objects.len(), 4);
    assert!(first.objects.iter().all(|(_, step)| *step == Write::Create));
    assert_eq!(first.status.phase, Phase::Pending);
    assert_eq!(
        first.status.resource,
        Some(("m-decode".to_string(), "Deployment".to_string()))
    );
    let served: Vec<DynamicObject> = first
        .objects
        .iter()
        .map(|(desired, _)| {
            let status = if desired.kind() == "Deployment" {
                available(1)
            } else {
                json!({})
            };
            cycle::served(desired, status).unwrap()
        })
        .collect();
    let live: Vec<Option<&DynamicObject>> = served.iter().map(Some).collect();
    let settled = cycle::apply_set(&LlmdProvider, &md, &schema(), &live, &now()).unwrap();
    assert!(
        settled
            .objects
            .iter()
            .all(|(_, step)| *step == Write::InSync)
    );
    assert_eq!(settled.status.phase, Phase::Running);
    let created = settled
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "ResourceCreated")
        .unwrap();
    assert_eq!(
        created.message,
        "Deployments and Services created successfully"
    );
    assert!(matches!(
        cycle::apply_set(
            &LlmdProvider,
            &aggregated(json!({"engine": {"type": "sglang"}})),
            &schema(),
            &[], &now()
        ),
        Err(cycle::CycleError::Incompatible(message)) if message == "llm-d only supports vllm engine"
    ));
}

#[test]
fn what_the_merge_produces_is_checked_against_pod_security_before_anything_is_applied() {
    // Keys llm-d's own refusal list does not name, but that loosen the pods once merged: the
    // SDK's check of the rendered Deployment holds the deployment, naming the rendered field,
    // the rule and the override path.
    // (A pod spec key such as an ephemeral container's host port is refused by the render
    // before the check: `pod_spec_overrides_other_than_scheduling_are_refused_naming_the_key`.)
    let overrides = json!({"spec": {"template": {"metadata": {"annotations": {"container.apparmor.security.beta.kubernetes.io/vllm": "unconfined"}}}}});
    let field =
        "spec.template.metadata.annotations[container.apparmor.security.beta.kubernetes.io/vllm]";
    let rule = "AppArmor may not be unconfined";
    let mut md = aggregated(json!({}));
    md.spec.provider.as_mut().unwrap().overrides = overrides.as_object().cloned();
    let status = cycle::checked(&LlmdProvider, &md, &schema_detection())
        .unwrap_err()
        .status;
    assert!(
        status.message.contains(&format!("Deployment m {field}")) && status.message.contains(rule),
        "{}",
        status.message
    );
}

/// Issue 32, bug 5: the Go project refuses overrides of `spec.template.spec`; here only its
/// scheduling keys stay open, and any other pod spec key (an ephemeral container with a host
/// port, host aliases, volumes) is refused by the render, naming the key, before the Pod
/// Security check would see it. Before the fix these were merged into the Deployment.
#[test]
fn pod_spec_overrides_other_than_scheduling_are_refused_naming_the_key() {
    for (key, value) in [
        (
            "ephemeralContainers",
            json!([{"name": "debug", "image": "busybox", "ports": [{"containerPort": 22, "hostPort": 22}]}]),
        ),
        (
            "hostAliases",
            json!([{"ip": "10.0.0.1", "hostnames": ["huggingface.co"]}]),
        ),
        ("volumes", json!([{"name": "scratch", "emptyDir": {}}])),
        ("dnsPolicy", json!("None")),
    ] {
        let mut md = aggregated(json!({}));
        md.spec.provider.as_mut().unwrap().overrides =
            json!({"spec": {"template": {"spec": {key: value}}}})
                .as_object()
                .cloned();
        let status = cycle::checked(&LlmdProvider, &md, &schema_detection())
            .unwrap_err()
            .status;
        assert_eq!(status.phase, Phase::Failed, "{key}");
        assert!(
            status.message.starts_with(&format!(
                "invalid provider.overrides: overriding \"spec.template.spec.{key}\" is not allowed"
            )),
            "{key}: {}",
            status.message
        );
    }
    let mut md = aggregated(json!({}));
    md.spec.provider.as_mut().unwrap().overrides = json!({"spec": {"template": {"spec": {
        "tolerations": [{"key": "gpu", "operator": "Exists"}],
        "affinity": {}, "terminationGracePeriodSeconds": 60}}}})
    .as_object()
    .cloned();
    let checked = cycle::checked(&LlmdProvider, &md, &schema_detection()).unwrap();
    assert_eq!(
        checked.desired[0].object["spec"]["template"]["spec"]["terminationGracePeriodSeconds"],
        60
    );
}

/// The scale subresource's `scaling.replicas` scales a disaggregated deployment in units of
/// its prefill:decode ratio (2:1 here); 0 stops both roles.
#[test]
fn disaggregated_roles_follow_scaling_replicas_in_units_of_their_ratio() {
    let replicas = |scale: Option<i32>| -> Vec<(String, i64)> {
        let mut md = disaggregated();
        if let Some(scale) = scale {
            md.spec.scaling.as_mut().unwrap().replicas = Some(scale);
        }
        objects(&md)
            .iter()
            .filter(|o| o["kind"] == "Deployment")
            .map(|o| {
                (
                    o["metadata"]["name"].as_str().unwrap().to_string(),
                    o["spec"]["replicas"].as_i64().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(
        replicas(None),
        [("m-decode".into(), 1), ("m-prefill".into(), 2)]
    );
    assert_eq!(
        replicas(Some(3)),
        [("m-decode".into(), 3), ("m-prefill".into(), 6)]
    );
    assert_eq!(
        replicas(Some(0)),
        [("m-decode".into(), 0), ("m-prefill".into(), 0)]
    );
    let three = aggregated(json!({"scaling": {"replicas": 3}}));
    assert_eq!(objects(&three)[0]["spec"]["replicas"], 3);
}

/// The set's status through the SDK, every Deployment with `deployment_status`.
fn set_status(
    md: &ModelDeployment,
    deployment_status: impl Fn(&str) -> Value,
) -> airunway_api::provider::desired::ProviderStatus {
    let first = cycle::apply_set(&LlmdProvider, md, &schema(), &[], &now()).unwrap();
    let served: Vec<DynamicObject> = first
        .objects
        .iter()
        .map(|(desired, _)| {
            let status = if desired.kind() == "Deployment" {
                deployment_status(desired.name())
            } else {
                json!({})
            };
            cycle::served(desired, status).unwrap()
        })
        .collect();
    let live: Vec<Option<&DynamicObject>> = served.iter().map(Some).collect();
    cycle::apply_set(&LlmdProvider, md, &schema(), &live, &now())
        .unwrap()
        .status
}

fn condition<'a>(
    status: &'a airunway_api::provider::desired::ProviderStatus,
    type_: &str,
) -> &'a airunway_api::conditions::DesiredCondition {
    status.conditions.iter().find(|c| c.type_ == type_).unwrap()
}

/// `status.workload` of a disaggregated deployment: both Deployments with their roles, the
/// pods of both selected by `airunway.ai/deployment` (the label both selectors share, which
/// every pod of both carries); aggregated: the Deployment's own selector.
#[test]
fn workload_lists_both_roles_and_selects_the_pods_of_both() {
    let md = disaggregated();
    let status = set_status(&md, |name| {
        available(if name == "m-decode" { 1 } else { 2 })
    });
    let workload = status.workload.clone().unwrap();
    let roles: Vec<(String, Option<String>)> = workload
        .workloads
        .clone()
        .unwrap()
        .into_iter()
        .map(|w| (w.name, w.role))
        .collect();
    assert_eq!(
        roles,
        [
            ("m-decode".into(), Some("decode".into())),
            ("m-prefill".into(), Some("prefill".into()))
        ]
    );
    assert_eq!(workload.upstream.as_ref().unwrap().name, "m-decode");
    assert_eq!(
        workload.selector_string().as_deref(),
        Some("airunway.ai/deployment=m")
    );
    assert_eq!(
        (workload.container.as_deref(), workload.port),
        (Some("vllm"), Some(8000))
    );
    for deployment in objects(&md).iter().filter(|o| o["kind"] == "Deployment") {
        assert_eq!(
            deployment["spec"]["template"]["metadata"]["labels"]["airunway.ai/deployment"],
            "m"
        );
    }
    let aggregated = aggregated(json!({}));
    let status = set_status(&aggregated, |_| available(1));
    assert_eq!(
        status.workload.unwrap().selector_string().as_deref(),
        Some("airunway.ai/deployment=m,app=m")
    );
}

/// Both roles at zero: `Running` with `Ready=True` `ScaledToZero` (ready to be scaled up); one
/// of three pods down: `Degraded=True` (and the phase is what the Deployments say).
#[test]
fn zero_is_running_ready_to_scale_and_a_pod_down_is_degraded() {
    let mut md = disaggregated();
    md.spec.scaling.as_mut().unwrap().replicas = Some(0);
    let zero = set_status(
        &md,
        |_| json!({"conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "ok"}]}),
    );
    assert_eq!(zero.phase, Phase::Running);
    let ready = condition(&zero, "Ready");
    assert_eq!(
        (ready.status, ready.reason.as_str()),
        (ConditionStatus::True, "ScaledToZero")
    );
    assert_eq!(condition(&zero, "Degraded").status, ConditionStatus::False);

    let md = disaggregated();
    let one_down = set_status(&md, |name| {
        if name == "m-prefill" {
            json!({"replicas": 2, "updatedReplicas": 2, "readyReplicas": 1, "availableReplicas": 1, "conditions": [
                {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "Deployment does not have minimum availability."},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": "ok"}]})
        } else {
            available(1)
        }
    });
    let degraded = condition(&one_down, "Degraded");
    assert_eq!(
        (degraded.status, degraded.message.as_str()),
        (
            ConditionStatus::True,
            "2 of 3 replicas ready: serving at reduced capacity"
        )
    );
}
