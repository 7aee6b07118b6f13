//! Direct vLLM provider: compatibility messages, the rendered Deployment and Service (the
//! direct vLLM command line, user keys winning over derived flags, host/port refused, scale to
//! zero), overrides, status translation from Deployment conditions, the registration, and the
//! SDK's pure cycle over the set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::BUILTIN_FINGERPRINT;
use airunway_api::provider::Incompatible;
use airunway_api::provider::plan::Write;
use airunway_api::provider::vllm_kit::status;
use airunway_api::provider::{Provider, RenderError, SchemaDetection, UpstreamSchema, cycle};
use airunway_api::serde_json::{self, Value, json};
use airunway_api::v1alpha1::{
    ConditionStatus, EngineCapabilityEntry, ModelDeployment, Phase, ServingMode,
};
use airunway_provider_vllm::{VllmProvider, compat, image};

fn schema() -> UpstreamSchema {
    match VllmProvider::default().detect_schema(None) {
        SchemaDetection::Supported(schema) => schema,
        other => panic!("{other:?}"),
    }
}

fn md(spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "m", "namespace": "ns", "uid": "u", "labels": {"airunway.ai/team": "t"}},
        "spec": spec, "status": {"provider": {"name": "vllm"}}}))
    .unwrap()
}

fn aggregated(extra: Value) -> ModelDeployment {
    let mut spec = json!({"model": {"id": "Qwen/Qwen3-8B"}, "engine": {"type": "vllm"},
        "resources": {"gpu": {"count": 1}}, "provider": {"name": "vllm"}});
    for (key, value) in extra.as_object().unwrap() {
        spec[key] = value.clone();
    }
    md(spec)
}

fn objects(md: &ModelDeployment) -> Vec<Value> {
    VllmProvider::default()
        .render(md, &schema())
        .unwrap()
        .objects
}

fn container(deployment: &Value) -> &Value {
    &deployment["spec"]["template"]["spec"]["containers"][0]
}

fn args(deployment: &Value) -> Vec<String> {
    serde_json::from_value(container(deployment)["args"].clone()).unwrap()
}

fn unsupported(md: &ModelDeployment) -> String {
    match VllmProvider::default().render(md, &schema()) {
        Err(RenderError::Unsupported(message)) => message,
        other => panic!("{other:?}"),
    }
}

#[test]
fn compatibility_messages_are_the_references() {
    assert_eq!(
        VllmProvider::default().check_compatibility(&aggregated(json!({}))),
        Ok(())
    );
    assert_eq!(
        VllmProvider::default()
            .check_compatibility(&aggregated(json!({"engine": {"type": "sglang"}}))),
        Err(Incompatible::new(
            "vLLM provider only supports vllm engine, got sglang"
        ))
    );
    assert_eq!(
        compat::check(&aggregated(
            json!({"serving": {"mode": "disaggregated"}, "resources": null})
        )),
        Err(Incompatible::new(
            "vLLM provider does not support disaggregated serving mode; use spec.serving.mode: aggregated"
        ))
    );
    assert_eq!(
        compat::check(&aggregated(json!({"resources": {"gpu": {"count": 0}}}))),
        Err(Incompatible::new(
            "vLLM provider requires GPU resources (spec.resources.gpu.count > 0)"
        ))
    );
    assert_eq!(
        compat::check(&aggregated(json!({"model": {"source": "custom"}}))),
        Err(Incompatible::new(compat::REQUIRES_MODEL_ID))
    );
}

#[test]
fn one_deployment_and_one_service_named_after_the_deployment() {
    let md = aggregated(
        json!({"model": {"id": "Qwen/Qwen3-8B", "servedName": "qwen3",
            "storage": {"volumes": [{"name": "cache", "claimName": "models", "mountPath": "/models"}]}},
        "engine": {"type": "vllm", "contextLength": 8192, "trustRemoteCode": true, "enforceEager": true,
                   "args": {"gpu-memory-utilization": "0.9"}, "extraArgs": ["--seed", "7"]},
        "resources": {"gpu": {"count": 2}, "memory": "32Gi"},
        "secrets": {"huggingFaceToken": "hf"},
        "env": [{"name": "HF_TOKEN", "value": "leak"}, {"name": "A", "value": "1"}]}),
    );
    let objects = objects(&md);
    let kinds: Vec<(&str, &str)> = objects
        .iter()
        .map(|o| {
            (
                o["kind"].as_str().unwrap(),
                o["metadata"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(kinds, [("Deployment", "m"), ("Service", "m")]);
    let deployment = &objects[0];
    assert_eq!(
        args(deployment),
        [
            "--host",
            "0.0.0.0",
            "--port",
            "8000",
            "--model",
            "Qwen/Qwen3-8B",
            "--served-model-name",
            "qwen3",
            "--max-model-len",
            "8192",
            "--trust-remote-code",
            "--enable-prefix-caching",
            "--enforce-eager",
            "--tensor-parallel-size",
            "2",
            "--gpu-memory-utilization",
            "0.9",
            "--seed",
            "7"
        ]
    );
    let c = container(deployment);
    assert_eq!(c["image"], image::DEFAULT_IMAGE);
    assert_eq!(
        c["env"],
        json!([{"name": "A", "value": "1"},
               {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "HF_TOKEN"}}}]),
        "the token only by reference; a user HF_TOKEN value is dropped"
    );
    for (probe, delay, period, failures) in [
        ("startupProbe", 15, 10, 60),
        ("livenessProbe", 15, 10, 3),
        ("readinessProbe", 15, 5, 3),
    ] {
        assert_eq!(
            (
                &c[probe]["httpGet"]["path"],
                &c[probe]["initialDelaySeconds"],
                &c[probe]["periodSeconds"],
                &c[probe]["failureThreshold"]
            ),
            (
                &json!("/health"),
                &json!(delay),
                &json!(period),
                &json!(failures)
            ),
            "{probe}"
        );
    }
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(
        pod["volumes"],
        json!([{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "20Gi"}},
               {"name": "cache", "persistentVolumeClaim": {"claimName": "models"}}])
    );
    assert_eq!(
        c["volumeMounts"],
        json!([{"name": "shm", "mountPath": "/dev/shm"}, {"name": "cache", "mountPath": "/models"}])
    );
    let service = &objects[1];
    assert_eq!(
        service["spec"]["ports"],
        json!([{"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}])
    );
    assert_eq!(
        service["spec"]["selector"],
        deployment["spec"]["selector"]["matchLabels"]
    );
    // One GPU: no /dev/shm, no tensor parallelism; prefix caching off writes no flag.
    let one = aggregated(json!({"engine": {"type": "vllm", "enablePrefixCaching": false}}));
    let one = &objects_of(&one)[0];
    assert!(one["spec"]["template"]["spec"]["volumes"].is_null());
    assert_eq!(
        args(one),
        [
            "--host",
            "0.0.0.0",
            "--port",
            "8000",
            "--model",
            "Qwen/Qwen3-8B"
        ]
    );
}

fn objects_of(md: &ModelDeployment) -> Vec<Value> {
    objects(md)
}

#[test]
fn user_keys_suppress_the_derived_flags() {
    let md = aggregated(json!({"model": {"id": "a/b", "servedName": "served"},
        "engine": {"type": "vllm", "contextLength": 4096,
                   "args": {"max-model-len": "2048", "served-model-name": "mine"},
                   "extraArgs": ["--tensor-parallel-size=4", "--enable-prefix-caching"]},
        "resources": {"gpu": {"count": 2}}}));
    assert_eq!(
        args(&objects(&md)[0]),
        [
            "--host",
            "0.0.0.0",
            "--port",
            "8000",
            "--model",
            "a/b",
            "--max-model-len",
            "2048",
            "--served-model-name",
            "mine",
            "--tensor-parallel-size=4",
            "--enable-prefix-caching"
        ]
    );
}

#[test]
fn host_and_port_are_refused_with_the_references_message() {
    let tail = "conflicts with Direct vLLM generated networking; Direct vLLM currently requires host 0.0.0.0 and port 8000 to keep the container, Service, and probes aligned";
    for (engine, message) in [
        (
            json!({"type": "vllm", "args": {"port": "9000"}}),
            format!("engine arg \"port\" {tail}"),
        ),
        (
            json!({"type": "vllm", "args": {"--host": "127.0.0.1"}}),
            format!("engine arg \"--host\" {tail}"),
        ),
        (
            json!({"type": "vllm", "extraArgs": ["--port=9000"]}),
            format!("engine extraArg \"--port=9000\" {tail}"),
        ),
        (
            json!({"type": "vllm", "extraArgs": ["--host", "::"]}),
            format!("engine extraArg \"--host\" {tail}"),
        ),
    ] {
        assert_eq!(unsupported(&aggregated(json!({"engine": engine}))), message);
    }
    // A value that happens to read "port" is not a flag.
    let fine = aggregated(
        json!({"engine": {"type": "vllm", "extraArgs": ["--served-model-name", "port"]}}),
    );
    assert!(VllmProvider::default().render(&fine, &schema()).is_ok());
}

#[test]
fn replicas_zero_scales_to_zero_and_images_come_from_the_spec() {
    let zero = aggregated(json!({"scaling": {"replicas": 0}}));
    assert_eq!(objects(&zero)[0]["spec"]["replicas"], 0);
    let three = aggregated(json!({"scaling": {"replicas": 3}}));
    assert_eq!(objects(&three)[0]["spec"]["replicas"], 3);
    let own = aggregated(json!({"engine": {"type": "vllm", "image": "registry.example/vllm:v1"}}));
    assert_eq!(
        container(&objects(&own)[0])["image"],
        "registry.example/vllm:v1"
    );
    let legacy = aggregated(json!({"image": "registry.example/vllm:legacy"}));
    assert_eq!(
        container(&objects(&legacy)[0])["image"],
        "registry.example/vllm:legacy"
    );
}

#[test]
fn overrides_merge_into_the_deployment_with_the_shared_refusals() {
    let md = aggregated(json!({"provider": {"name": "vllm",
        "overrides": {"spec": {"minReadySeconds": 5, "template": {"spec": {"tolerations": null}}}}},
        "tolerations": [{"key": "k", "operator": "Exists"}]}));
    let objects = objects(&md);
    assert_eq!(objects[0]["spec"]["minReadySeconds"], 5);
    assert!(
        objects[0]["spec"]["template"]["spec"]["tolerations"].is_null(),
        "null deletes"
    );
    assert!(objects[1]["spec"]["minReadySeconds"].is_null());
    let escalating = aggregated(json!({"provider": {"name": "vllm",
        "overrides": {"spec": {"template": {"spec": {"hostNetwork": true}}}}}}));
    match cycle::checked(
        &VllmProvider::default(),
        &escalating,
        &SchemaDetection::Supported(schema()),
    ) {
        Err(held) => {
            let message = held.status.message;
            assert!(
                message.contains("provider.overrides.spec.template.spec.hostNetwork"),
                "{message}"
            )
        }
        Ok(checked) => panic!("{:?}", checked.desired),
    }
}

fn available(replicas: i64) -> Value {
    json!({"replicas": replicas, "updatedReplicas": replicas, "readyReplicas": replicas,
        "availableReplicas": replicas, "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": "ReplicaSet \"m-1\" has successfully progressed."}]})
}

fn live(object: &Value, status: Value) -> DynamicObject {
    let mut object = object.clone();
    object["metadata"]["namespace"] = json!("ns");
    object["status"] = status;
    serde_json::from_value(object).unwrap()
}

#[test]
fn status_follows_the_deployment_conditions() {
    let md = aggregated(json!({}));
    let objects = objects(&md);
    let none = VllmProvider::default().translate_status(&md, &[None, None]);
    assert_eq!(none.phase, Phase::Pending);
    let progressing = live(
        &objects[0],
        json!({"replicas": 1, "conditions": [
            {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated", "message": "ReplicaSet \"m-1\" is progressing."}]}),
    );
    let status = VllmProvider::default().translate_status(&md, &[Some(&progressing), None]);
    assert_eq!(
        (status.phase, status.message.as_deref()),
        (Phase::Deploying, Some("ReplicaSet \"m-1\" is progressing."))
    );
    let deadline = live(
        &objects[0],
        json!({"conditions": [
            {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "ReplicaSet \"m-1\" has timed out progressing."}]}),
    );
    assert_eq!(
        VllmProvider::default()
            .translate_status(&md, &[Some(&deadline), None])
            .phase,
        Phase::Failed
    );
    let running = live(&objects[0], available(1));
    let status = VllmProvider::default().translate_status(&md, &[Some(&running), None]);
    assert_eq!((status.phase, status.ready), (Phase::Running, true));
    let endpoint = status.endpoint.unwrap();
    assert_eq!(
        (endpoint.service.as_deref(), endpoint.port),
        (Some("m"), Some(8000))
    );
    assert_eq!(status.replicas.unwrap().ready, Some(1));
    // Scaled to zero: the deployment controller reports it Available with no pods.
    let zero = live(
        &objects[0],
        json!({"conditions": [
        {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."}]}),
    );
    let mut zero_value = serde_json::to_value(&zero).unwrap();
    zero_value["spec"]["replicas"] = json!(0);
    let zero: DynamicObject = serde_json::from_value(zero_value).unwrap();
    let status = VllmProvider::default().translate_status(&md, &[Some(&zero)]);
    assert_eq!(status.phase, Phase::Running);
    assert_eq!(status.replicas.unwrap().desired, Some(0));
}

#[test]
fn registration_is_explicit_only_always_ready_vllm_on_gpus_aggregated() {
    let spec = VllmProvider::default().registration();
    assert!(spec.selection_rules.is_none());
    let engines = spec.capabilities.unwrap().engines.unwrap();
    let EngineCapabilityEntry::Detailed(vllm) = &engines[0] else {
        panic!("{engines:?}")
    };
    assert_eq!(vllm.serving_modes, vec![ServingMode::Aggregated]);
    assert_eq!(vllm.requires_crd, Some(false));
    assert_eq!(
        serde_json::to_value(vllm).unwrap()["gpuSupport"],
        json!(true)
    );
    assert!(
        spec.documentation
            .unwrap()
            .ends_with("docs/providers/vllm.md")
    );
    let SchemaDetection::Supported(schema) = VllmProvider::default().detect_schema(None) else {
        panic!()
    };
    assert_eq!(
        (schema.api_version.as_str(), schema.fingerprint.as_str()),
        ("apps/v1", BUILTIN_FINGERPRINT)
    );
}

fn now() -> airunway_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    airunway_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        "2026-01-01T00:00:00Z".parse().unwrap(),
    )
}

#[test]
fn sdk_set_cycle_creates_then_settles_both_objects() {
    let md = aggregated(json!({}));
    let first = cycle::apply_set(&VllmProvider::default(), &md, &schema(), &[], &now()).unwrap();
    assert_eq!(first.objects.len(), 2);
    assert!(first.objects.iter().all(|(_, step)| *step == Write::Create));
    assert_eq!(
        first.status.resource,
        Some(("m".to_string(), "Deployment".to_string()))
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
    let settled =
        cycle::apply_set(&VllmProvider::default(), &md, &schema(), &live, &now()).unwrap();
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
        "Deployment and Service created successfully"
    );
    assert!(matches!(
        cycle::apply_set(
            &VllmProvider::default(),
            &aggregated(json!({"engine": {"type": "sglang"}})),
            &schema(),
            &[], &now()
        ),
        Err(cycle::CycleError::Incompatible(message)) if message == "vLLM provider only supports vllm engine, got sglang"
    ));
}

mod image_status {
    use super::*;
    use airunway_api::v1alpha1::{ConditionStatus, ImageStatus};
    use airunway_provider_vllm::image::parse;
    use airunway_provider_vllm::prepare::{
        Outcome, Step, image_to_run, next_step, preparation, requested,
    };

    const DIGEST: &str = "sha256:9701b03c5c595b1b37ade54343095f27a84dcae686a93a4a8c087a3894bb19f4";

    fn with_image(image: Option<&str>, status_image: Option<Value>) -> ModelDeployment {
        let mut engine = json!({"type": "vllm"});
        if let Some(image) = image {
            engine["image"] = json!(image);
        }
        let mut md = aggregated(json!({ "engine": engine }));
        if let Some(status_image) = status_image {
            md.status.as_mut().unwrap().image = Some(serde_json::from_value(status_image).unwrap());
        }
        md
    }

    fn condition<'a>(
        p: &'a airunway_api::provider::Preparation,
        type_: &str,
    ) -> &'a airunway_api::conditions::DesiredCondition {
        p.conditions.iter().find(|c| c.type_ == type_).unwrap()
    }

    fn status_image(p: &airunway_api::provider::Preparation) -> ImageStatus {
        serde_json::from_value(p.status["image"].clone()).unwrap()
    }

    #[test]
    fn resolution_is_reused_while_the_requested_reference_is_unchanged() {
        let fresh = with_image(Some("127.0.0.1:5000/vllm/vllm-openai:test"), None);
        let Step::Resolve(parsed) = next_step(&fresh, image::DEFAULT_IMAGE) else {
            panic!()
        };
        assert_eq!(parsed.path, "vllm/vllm-openai");
        let resolved = preparation(
            &fresh,
            image::DEFAULT_IMAGE,
            &Outcome::Resolved(parsed, DIGEST.into()),
        );
        let image = status_image(&resolved);
        let wanted = format!("127.0.0.1:5000/vllm/vllm-openai@{DIGEST}");
        assert_eq!(image.resolved.as_deref(), Some(wanted.as_str()));
        assert_eq!(image.digest.as_deref(), Some(DIGEST));
        assert_eq!(image.tag.as_deref(), Some("test"));
        assert_eq!(
            (image.source.as_deref(), image.in_nightly, image.verified),
            (Some("custom"), Some(false), Some(false))
        );
        let cond = condition(&resolved, "ImageResolved");
        assert_eq!(
            (cond.status, cond.reason.as_str()),
            (ConditionStatus::True, "ImageResolved")
        );
        assert_eq!(
            cond.message,
            format!(
                "Resolved Direct vLLM image \"127.0.0.1:5000/vllm/vllm-openai:test\" to \"{wanted}\" from custom selection."
            )
        );
        assert_eq!(
            condition(&resolved, "ImageVerified").status,
            ConditionStatus::Unknown
        );
        assert_eq!(
            condition(&resolved, "UnsupportedImage").reason,
            "CustomImage"
        );
        assert!(resolved.hold.is_none());
        // Next reconcile: the status shows it, nothing is asked again.
        let settled = with_image(
            Some("127.0.0.1:5000/vllm/vllm-openai:test"),
            Some(resolved.status["image"].clone()),
        );
        let Step::Reuse(previous) = next_step(&settled, image::DEFAULT_IMAGE) else {
            panic!()
        };
        let reused = preparation(&settled, image::DEFAULT_IMAGE, &Outcome::Reused(previous));
        assert_eq!(status_image(&reused), image);
        assert_eq!(
            condition(&reused, "ImageResolved").reason,
            "ImageResolutionReused"
        );
        // A changed reference is resolved again; a digest-pinned one needs no registry.
        let changed = with_image(
            Some("127.0.0.1:5000/vllm/vllm-openai:other"),
            Some(resolved.status["image"].clone()),
        );
        assert!(matches!(
            next_step(&changed, image::DEFAULT_IMAGE),
            Step::Resolve(_)
        ));
        let pinned = with_image(Some(&format!("127.0.0.1:5000/a/b@{DIGEST}")), None);
        assert!(matches!(
            next_step(&pinned, image::DEFAULT_IMAGE),
            Step::Pinned(_)
        ));
        // The user's image runs as given (the tag), not the digest.
        assert_eq!(
            image_to_run(&settled, image::DEFAULT_IMAGE),
            "127.0.0.1:5000/vllm/vllm-openai:test"
        );
    }

    #[test]
    fn a_user_image_failure_is_not_fatal_the_default_image_failure_is() {
        let user = with_image(Some("vllm/vllm-openai:latest"), None);
        let failed = preparation(
            &user,
            image::DEFAULT_IMAGE,
            &Outcome::Failed(
                Some(parse("vllm/vllm-openai:latest").unwrap()),
                "cannot reach the registry docker.io: dns".into(),
            ),
        );
        assert!(failed.hold.is_none());
        let cond = condition(&failed, "ImageResolved");
        assert_eq!(
            (cond.status, cond.reason.as_str()),
            (ConditionStatus::False, "ImageResolutionFailed")
        );
        assert_eq!(
            cond.message,
            "Failed to resolve Direct vLLM image \"vllm/vllm-openai:latest\" from stable selection: cannot reach the registry docker.io: dns. Continuing with the user-specified image reference."
        );
        assert_eq!(
            condition(&failed, "UnsupportedImage").reason,
            "SupportedImage"
        );
        assert_eq!(status_image(&failed).resolved, None);
        assert_eq!(
            image_to_run(&user, image::DEFAULT_IMAGE),
            "vllm/vllm-openai:latest"
        );

        let default = with_image(None, None);
        assert_eq!(
            requested(&default, image::DEFAULT_IMAGE),
            image::DEFAULT_IMAGE
        );
        let failed = preparation(
            &default,
            image::DEFAULT_IMAGE,
            &Outcome::Failed(Some(parse(image::DEFAULT_IMAGE).unwrap()), "timeout".into()),
        );
        assert_eq!(
            failed.hold.as_ref().map(|h| h.message.as_str()),
            Some(
                "failed to resolve default vLLM image \"vllm/vllm-openai:cu130-nightly\": timeout"
            )
        );
        assert_eq!(status_image(&failed).in_nightly, Some(true));
        // Resolved, the default image runs pinned to its digest.
        let Step::Resolve(parsed) = next_step(&default, image::DEFAULT_IMAGE) else {
            panic!()
        };
        let resolved = preparation(
            &default,
            image::DEFAULT_IMAGE,
            &Outcome::Resolved(parsed, DIGEST.into()),
        );
        let pinned = with_image(None, Some(resolved.status["image"].clone()));
        assert_eq!(
            image_to_run(&pinned, image::DEFAULT_IMAGE),
            format!("vllm/vllm-openai@{DIGEST}")
        );
        assert_eq!(
            container(&objects(&pinned)[0])["image"],
            format!("vllm/vllm-openai@{DIGEST}")
        );
    }

    #[test]
    fn build_metadata_is_published_and_kept_while_reused() {
        use airunway_provider_vllm::registry::Resolved;
        let fresh = with_image(Some("127.0.0.1:5000/vllm/vllm-openai:test"), None);
        let Step::Resolve(parsed) = next_step(&fresh, image::DEFAULT_IMAGE) else {
            panic!()
        };
        let found = Resolved {
            digest: DIGEST.into(),
            created_at: Some("2026-11-20T10:00:00Z".into()),
            revision: Some("0123abc".into()),
            age: Some("4d".into()),
        };
        let resolved = preparation(
            &fresh,
            image::DEFAULT_IMAGE,
            &Outcome::Resolved(parsed, found),
        );
        let published = status_image(&resolved);
        assert_eq!(
            (
                published.created_at.as_deref(),
                published.revision.as_deref(),
                published.age.as_deref()
            ),
            (Some("2026-11-20T10:00:00Z"), Some("0123abc"), Some("4d"))
        );
        assert_eq!(
            resolved.status["image"]["createdAt"],
            "2026-11-20T10:00:00Z"
        );
        assert_eq!(resolved.status["image"]["age"], "4d");
        // Reused later (however much older the image is by then): the same status, no churn.
        let settled = with_image(
            Some("127.0.0.1:5000/vllm/vllm-openai:test"),
            Some(resolved.status["image"].clone()),
        );
        let Step::Reuse(previous) = next_step(&settled, image::DEFAULT_IMAGE) else {
            panic!()
        };
        let reused = preparation(&settled, image::DEFAULT_IMAGE, &Outcome::Reused(previous));
        assert_eq!(reused.status["image"], resolved.status["image"]);
        // A failure publishes none of them.
        let failed = preparation(
            &fresh,
            image::DEFAULT_IMAGE,
            &Outcome::Failed(None, "refused".into()),
        );
        let failed = status_image(&failed);
        assert_eq!((failed.created_at, failed.age), (None, None));
    }

    #[test]
    fn a_configured_default_image_is_the_one_resolved_pinned_and_held() {
        let own = "127.0.0.1:5000/mirror/vllm-openai:cu130-nightly";
        let default = with_image(None, None);
        assert_eq!(requested(&default, own), own);
        let Step::Resolve(parsed) = next_step(&default, own) else {
            panic!()
        };
        assert_eq!(parsed.registry, "127.0.0.1:5000");
        let failed = preparation(
            &default,
            own,
            &Outcome::Failed(Some(parsed.clone()), "refused".into()),
        );
        assert_eq!(
            failed.hold.as_ref().map(|h| h.message.as_str()),
            Some(format!("failed to resolve default vLLM image \"{own}\": refused").as_str())
        );
        assert_eq!(status_image(&failed).source.as_deref(), Some("nightly"));
        let resolved = preparation(&default, own, &Outcome::Resolved(parsed, DIGEST.into()));
        let pinned = with_image(None, Some(resolved.status["image"].clone()));
        let wanted = format!("127.0.0.1:5000/mirror/vllm-openai@{DIGEST}");
        assert_eq!(image_to_run(&pinned, own), wanted);
        let provider = VllmProvider::with_default_image(own);
        assert_eq!(provider.default_image(), own);
        assert_eq!(provider.image_for(&pinned), wanted);
        // The status of another default does not pin this one.
        assert_eq!(
            image_to_run(&pinned, image::DEFAULT_IMAGE),
            image::DEFAULT_IMAGE
        );
    }

    #[test]
    fn recipe_provenance_is_reported() {
        let mut md = with_image(Some("vllm/vllm-openai:v1-launch"), None);
        md.metadata.annotations = Some(
            [
                (
                    "airunway.ai/generated-by".to_string(),
                    "vllm-recipe-resolver".to_string(),
                ),
                ("airunway.ai/recipe.id".to_string(), "qwen3".to_string()),
                (
                    "airunway.ai/recipe.hardware".to_string(),
                    "a100".to_string(),
                ),
            ]
            .into(),
        );
        let p = preparation(
            &md,
            image::DEFAULT_IMAGE,
            &Outcome::Resolved(parse("vllm/vllm-openai:v1-launch").unwrap(), DIGEST.into()),
        );
        let recipe = condition(&p, "RecipeResolved");
        assert_eq!(
            (recipe.reason.as_str(), recipe.message.as_str()),
            (
                "RecipeProvenanceResolved",
                "generated-by=vllm-recipe-resolver, id=qwen3, hardware=a100"
            )
        );
        assert!(status_image(&p).message.unwrap().ends_with(
            " Recipe provenance: generated-by=vllm-recipe-resolver, id=qwen3, hardware=a100"
        ));
        assert_eq!(status_image(&p).source.as_deref(), Some("launch"));
        let plain = preparation(
            &with_image(None, None),
            image::DEFAULT_IMAGE,
            &Outcome::Resolved(parse(image::DEFAULT_IMAGE).unwrap(), DIGEST.into()),
        );
        assert!(plain.conditions.iter().all(|c| c.type_ != "RecipeResolved"));
    }
}

/// The SDK's status of the set over `live` Deployment status `deployment` (and the Service).
fn settled_status(
    md: &ModelDeployment,
    deployment: Value,
) -> airunway_api::provider::desired::ProviderStatus {
    let first = cycle::apply_set(&VllmProvider::default(), md, &schema(), &[], &now()).unwrap();
    let served: Vec<DynamicObject> = first
        .objects
        .iter()
        .map(|(desired, _)| {
            let status = if desired.kind() == "Deployment" {
                deployment.clone()
            } else {
                json!({})
            };
            cycle::served(desired, status).unwrap()
        })
        .collect();
    let live: Vec<Option<&DynamicObject>> = served.iter().map(Some).collect();
    cycle::apply_set(&VllmProvider::default(), md, &schema(), &live, &now())
        .unwrap()
        .status
}

fn condition<'a>(
    status: &'a airunway_api::provider::desired::ProviderStatus,
    type_: &str,
) -> &'a airunway_api::conditions::DesiredCondition {
    status.conditions.iter().find(|c| c.type_ == type_).unwrap()
}

/// `status.workload`: the Deployment (its uid, role `aggregated`) as upstream and workload,
/// the Deployment's own selector as the pod selector (and `status.selector`), container and
/// port.
#[test]
fn workload_is_the_deployment_and_its_selector() {
    let md = aggregated(json!({"scaling": {"replicas": 3},
        "podTemplate": {"metadata": {"labels": {"app": "mine", "team": "a"}}}}));
    let status = settled_status(&md, available(3));
    let workload = status.workload.clone().unwrap();
    assert_eq!(
        serde_json::to_value(&workload).unwrap(),
        json!({"upstream": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "m",
                            "uid": "00000000-0000-0000-0000-000000000001"},
               "workloads": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "m",
                              "uid": "00000000-0000-0000-0000-000000000001", "role": "aggregated"}],
               "podSelector": {"airunway.ai/deployment": "m", "app": "m"},
               "container": "vllm", "port": 8000})
    );
    assert_eq!(
        workload.selector_string().as_deref(),
        Some("airunway.ai/deployment=m,app=m"),
        "status.selector"
    );
    let deployment = &objects(&md)[0];
    assert_eq!(
        deployment["spec"]["selector"]["matchLabels"],
        json!(workload.pod_selector),
        "the pod selector is the Deployment's own"
    );
    for (key, value) in workload.pod_selector.unwrap() {
        assert_eq!(
            deployment["spec"]["template"]["metadata"]["labels"][&key],
            json!(value),
            "every pod carries {key}"
        );
    }
    assert_eq!(
        container(deployment)["name"],
        workload.container.unwrap().as_str()
    );
}

/// Scaled to zero: `Running` (settled) with `Ready=True` `ScaledToZero` (ready to be scaled
/// up), not degraded; one replica of two ready: `Running`, `Ready=True`, `Degraded=True`.
#[test]
fn zero_replicas_is_running_ready_to_scale_and_a_replica_down_is_degraded() {
    let zero = aggregated(json!({"scaling": {"replicas": 0}}));
    let status = settled_status(
        &zero,
        json!({"conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "ok"}]}),
    );
    assert_eq!(status.phase, Phase::Running);
    let ready = condition(&status, "Ready");
    assert_eq!(
        (ready.status, ready.reason.as_str()),
        (ConditionStatus::True, "ScaledToZero")
    );
    assert_eq!(ready.message, status::SCALED_TO_ZERO);
    assert_eq!(status.message, status::SCALED_TO_ZERO);
    let degraded = condition(&status, "Degraded");
    assert_eq!(
        (degraded.status, degraded.message.as_str()),
        (ConditionStatus::False, "0 of 0 replicas ready")
    );
    assert!(
        status
            .workload
            .as_ref()
            .and_then(|w| w.selector_string())
            .is_some(),
        "the selector stays at zero, for an autoscaler to scale it up again"
    );

    let two = aggregated(json!({"scaling": {"replicas": 2}}));
    let one_down = settled_status(
        &two,
        json!({"replicas": 2, "updatedReplicas": 2, "readyReplicas": 1, "availableReplicas": 1, "conditions": [
            {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "Deployment does not have minimum availability."},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": "ok"}]}),
    );
    let degraded = condition(&one_down, "Degraded");
    assert_eq!(
        (
            degraded.status,
            degraded.reason.as_str(),
            degraded.message.as_str()
        ),
        (
            ConditionStatus::True,
            "ReplicasUnavailable",
            "1 of 2 replicas ready: serving at reduced capacity"
        )
    );
    assert_eq!(one_down.phase, Phase::Running);
    assert_eq!(
        condition(&one_down, "Ready").message,
        "Serving: 1 of 2 replicas ready (see Degraded)"
    );
    let all = settled_status(&two, available(2));
    assert_eq!(condition(&all, "Degraded").status, ConditionStatus::False);
    assert_eq!(condition(&all, "Ready").status, ConditionStatus::True);
}
