//! KAITO provider: render, compatibility, status translation (with the real status samples),
//! schema detection and registration.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airunway_api::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::Incompatible;
use airunway_api::provider::{
    Provider, SchemaDetection, UpstreamSchema, cycle, registration_spec, testing,
};
use airunway_api::serde_json::{self, Value, json};
use airunway_api::v1alpha1::{ModelDeployment, Phase};
use airunway_provider_kaito::KaitoProvider;

fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text.trim_start_matches("---\n")).unwrap()
}

fn md(spec: Value) -> ModelDeployment {
    serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "m", "namespace": "ns", "uid": "u"}, "spec": spec, "status": {"provider": {"name": "kaito"}}}))
    .unwrap()
}

fn v1beta1() -> UpstreamSchema {
    UpstreamSchema {
        version: "v1beta1".into(),
        api_version: "kaito.sh/v1beta1".into(),
        fingerprint: "c122e829f70c5bc8".into(),
    }
}

#[test]
fn example_2_renders_the_documented_workspace() {
    let fixture = |name: &str| {
        std::fs::read_to_string(format!(
            "{}/../airunway-api/tests/fixtures/design-doc/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    };
    let mut deployment: ModelDeployment =
        serde_json::from_value(yaml(&fixture("modeldeployment-example2.yaml"))).unwrap();
    // The GGUF file of the example's runner argument (the design doc shows it; the spec has no
    // field for it, so the provider takes it from engine.args.model-file).
    deployment.spec.engine.as_mut().unwrap().args = Some(
        [(
            "model-file".to_string(),
            "gemma-3-1b-it-q8_0.gguf".to_string(),
        )]
        .into(),
    );
    let rendered = KaitoProvider::default()
        .render(&deployment, &v1beta1())
        .unwrap();
    let expected = yaml(&fixture("upstream-workspace-example2.yaml"));
    assert_eq!(rendered.objects[0]["apiVersion"], expected["apiVersion"]);
    assert_eq!(rendered.objects[0]["kind"], "Workspace");
    assert_eq!(rendered.objects[0]["metadata"]["name"], "gemma-cpu");
    // The documented labels, plus the engine and deployment labels the Go AI Runway sets.
    let mut labels = expected["metadata"]["labels"].clone();
    labels["airunway.ai/engine-type"] = json!("llamacpp");
    labels["airunway.ai/model-deployment"] = json!("gemma-cpu");
    assert_eq!(rendered.objects[0]["metadata"]["labels"], labels);
    assert_eq!(rendered.objects[0]["resource"], expected["resource"]);
    // The documented template, plus the pod label the Go AI Runway gives llama.cpp pods.
    let mut inference = expected["inference"].clone();
    inference["template"]["metadata"] =
        json!({"labels": {"airunway.ai/model-deployment": "gemma-cpu"}});
    assert_eq!(rendered.objects[0]["inference"], inference);
    assert!(rendered.warnings.is_empty());
}

#[test]
fn vllm_on_gpu_renders_the_preset_form() {
    let deployment = md(
        json!({"model": {"id": "microsoft/Phi-4-mini-instruct"}, "engine": {"type": "vllm"},
        "resources": {"gpu": {"count": 1}}, "scaling": {"replicas": 2}, "secrets": {"huggingFaceToken": "hf-token"}}),
    );
    let rendered = KaitoProvider::default()
        .render(&deployment, &v1beta1())
        .unwrap();
    assert_eq!(
        rendered.objects[0]["inference"],
        json!({"preset": {"name": "microsoft/Phi-4-mini-instruct", "presetOptions": {"modelAccessSecret": "hf-token"}}})
    );
    assert_eq!(
        rendered.objects[0]["resource"],
        json!({"count": 2, "labelSelector": {"matchLabels": {"nvidia.com/gpu.present": "true", "kubernetes.io/os": "linux"}}})
    );
    // v1alpha1 has no field for the token: a warning, never a silent drop.
    let old = UpstreamSchema {
        version: "v1alpha1".into(),
        api_version: "kaito.sh/v1alpha1".into(),
        fingerprint: "x".into(),
    };
    let rendered = KaitoProvider::default().render(&deployment, &old).unwrap();
    assert_eq!(rendered.objects[0]["apiVersion"], "kaito.sh/v1alpha1");
    assert_eq!(
        rendered.objects[0]["inference"],
        json!({"preset": {"name": "microsoft/Phi-4-mini-instruct"}})
    );
    assert_eq!(
        rendered.warnings[0].message,
        "secrets.huggingFaceToken is ignored: the KAITO kaito.sh/v1alpha1 API has no field for it"
    );
}

#[test]
fn template_carries_scheduling_pods_env_and_secret_reference() {
    let deployment = md(json!({
        "model": {"id": "org/model-gguf"}, "engine": {"type": "llamacpp", "contextLength": 4096, "args": {"threads": "8"}},
        "image": "example/llama:1", "scaling": {"replicas": 3}, "resources": {"gpu": {"count": 1}, "memory": "8Gi"},
        "nodeSelector": {"pool": "cpu"}, "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}],
        "podTemplate": {"metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}}},
        "env": [{"name": "LOG", "value": "debug"}], "secrets": {"huggingFaceToken": "hf"},
        "provider": {"overrides": {"replicsa": 2}}
    }));
    let rendered = KaitoProvider::default()
        .render(&deployment, &v1beta1())
        .unwrap();
    let o = &rendered.objects[0];
    assert_eq!(o["resource"]["count"], 3);
    assert_eq!(
        o["resource"]["labelSelector"]["matchLabels"],
        json!({"pool": "cpu", "kubernetes.io/os": "linux", "nvidia.com/gpu.present": "true"}),
        "a GPU workload always selects Linux GPU nodes, besides the user's node selector"
    );
    let template = &o["inference"]["template"];
    assert_eq!(
        template["metadata"],
        json!({"labels": {"team": "a", "airunway.ai/model-deployment": "m"}, "annotations": {"note": "x"}})
    );
    assert_eq!(
        o["metadata"],
        json!({"name": "m", "labels": {"team": "a", "airunway.ai/model-source": "huggingface", "airunway.ai/engine-type": "llamacpp",
            "airunway.ai/model-deployment": "m"}, "annotations": {"note": "x"}})
    );
    assert_eq!(template["spec"]["tolerations"][0]["key"], "dedicated");
    let container = &template["spec"]["containers"][0];
    assert_eq!(
        container["args"],
        json!([
            "huggingface://org/model-gguf",
            "--address=:5000",
            "--ctx-size",
            "4096",
            "--threads",
            "8"
        ])
    );
    assert_eq!(
        container["resources"],
        json!({"requests": {"memory": "8Gi"}, "limits": {"nvidia.com/gpu": "1"}})
    );
    // The token by reference to the Secret's HF_TOKEN key only (Go's form), never its contents.
    assert_eq!(
        container["env"],
        json!([{"name": "LOG", "value": "debug"},
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "HF_TOKEN"}}}])
    );
    assert!(container.get("envFrom").is_none());
    assert!(rendered.warnings.is_empty(), "{:?}", rendered.warnings);
    // The SDK reports the overrides (KAITO declares none) before the render.
    let warnings = cycle::checked(
        &KaitoProvider::default(),
        &deployment,
        &SchemaDetection::Supported(v1beta1()),
    )
    .unwrap()
    .warnings;
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].reason, "UnknownOverride");
    assert_eq!(
        warnings[0].message,
        "unknown key provider.overrides.replicsa is ignored (KAITO supports resource.instanceType, resource.labelSelector.matchLabels, inference.config, inference.preset.presetOptions.modelAccessSecret)"
    );
}

#[test]
fn compatibility_messages() {
    let cases = [
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "sglang"}, "resources": {"gpu": {"count": 1}}}),
            "KAITO does not support sglang engine",
        ),
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "trtllm"}, "resources": {"gpu": {"count": 1}}}),
            "KAITO does not support trtllm engine",
        ),
        (
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"}}),
            "KAITO does not support disaggregated mode",
        ),
    ];
    for (spec, message) in cases {
        assert_eq!(
            KaitoProvider::default().check_compatibility(&md(spec)),
            Err(Incompatible::new(message))
        );
    }
    let no_image = KaitoProvider::default()
        .check_compatibility(&md(
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}}),
        ))
        .unwrap_err()
        .to_string();
    assert!(
        no_image.starts_with(
            "engine.image (or the legacy spec.image) is required for the llamacpp engine on KAITO"
        ),
        "{no_image}"
    );
    let zero = KaitoProvider::default()
        .check_compatibility(&md(json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "image": "i", "scaling": {"replicas": 0}})))
        .unwrap_err()
        .to_string();
    assert!(
        zero.starts_with("KAITO cannot scale a Workspace to zero"),
        "replicas 0 is refused, never turned into 1: {zero}"
    );
    assert_eq!(
        KaitoProvider::default().check_compatibility(&md(
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "image": "i"})
        )),
        Ok(())
    );
    assert_eq!(
        KaitoProvider::default().check_compatibility(&md(
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp", "image": "i"}})
        )),
        Ok(()),
        "engine.image alone is enough (the Go AI Runway's spec.image-only check is not copied)"
    );
    assert_eq!(KaitoProvider::default().check_compatibility(&md(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}}))), Ok(()));
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
        json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}}),
    );
    let cases = [
        (
            "workspace-pending.yaml",
            Phase::Deploying,
            Some("Inference workload is not ready"),
            false,
        ),
        (
            "workspace-nodes-not-ready.yaml",
            Phase::Deploying,
            Some("Not enough Nodes are ready"),
            false,
        ),
        ("workspace-ready.yaml", Phase::Running, None, true),
        (
            "workspace-notready.yaml",
            Phase::Deploying,
            Some("Inference workload is not ready"),
            false,
        ),
        (
            "workspace-reconcile-error.yaml",
            Phase::Deploying,
            Some(
                "KAITO reconcile error: failed to get GPU config: missing required nvidia.com labels on node aks-gpu-31245678-vmss000000",
            ),
            false,
        ),
        (
            "workspace-failed.yaml",
            Phase::Failed,
            Some("tuning job failed"),
            false,
        ),
    ];
    for (file, phase, message, ready) in cases {
        let translated =
            KaitoProvider::default().translate_status(&deployment, &[Some(&sample(file))]);
        assert_eq!(translated.phase, phase, "{file}");
        assert_eq!(translated.message.as_deref(), message, "{file}");
        assert_eq!(translated.ready, ready, "{file}");
        let endpoint = translated.endpoint.unwrap();
        assert_eq!(
            (endpoint.service.as_deref(), endpoint.port),
            (Some("m"), Some(80)),
            "{file}"
        );
        let replicas = translated.replicas.unwrap();
        assert_eq!(replicas.desired, Some(1), "{file}");
        assert_eq!(
            replicas.ready,
            Some(if file == "workspace-ready.yaml" { 1 } else { 0 }),
            "{file}"
        );
    }
    let mut fresh = sample("workspace-pending.yaml");
    fresh.data.as_object_mut().unwrap().remove("status");
    let translated = KaitoProvider::default().translate_status(&deployment, &[Some(&fresh)]);
    assert_eq!(
        (translated.phase, translated.message.as_deref()),
        (
            Phase::Deploying,
            Some("Waiting for KAITO to reconcile Workspace m")
        )
    );
    // `state: Failed` without conditions is Failed, as in the Go AI Runway (parity K9).
    fresh.data["status"] = json!({"state": "Failed"});
    let translated = KaitoProvider::default().translate_status(&deployment, &[Some(&fresh)]);
    assert_eq!(
        (translated.phase, translated.message.as_deref()),
        (Phase::Failed, Some("KAITO reports Workspace m failed"))
    );
}

fn shipped_crd() -> CustomResourceDefinition {
    testing::upstream(env!("CARGO_MANIFEST_DIR"), "kaito/kaito.sh_workspaces.yaml").unwrap()
}

#[test]
fn schema_detection() {
    let mut crd = shipped_crd();
    crd.status = Some(
        serde_json::from_value(json!({"conditions": [{"type": "Established", "status": "True"}]}))
            .unwrap(),
    );
    match KaitoProvider::default().detect_schema(Some(&crd)) {
        SchemaDetection::Supported(s) => assert_eq!(
            (s.api_version.as_str(), s.fingerprint.as_str()),
            ("kaito.sh/v1beta1", "c122e829f70c5bc8")
        ),
        other => panic!("{other:?}"),
    }
    // Only v1alpha1 served: rendered for v1alpha1.
    let mut old = crd.clone();
    old.spec
        .versions
        .iter_mut()
        .filter(|v| v.name == "v1beta1")
        .for_each(|v| v.served = false);
    assert!(
        matches!(KaitoProvider::default().detect_schema(Some(&old)), SchemaDetection::Supported(s) if s.version == "v1alpha1")
    );
    // A schema that renamed a field the provider writes: refused, naming the field.
    let mut renamed: Value = serde_json::to_value(&crd).unwrap();
    for version in renamed["spec"]["versions"].as_array_mut().unwrap() {
        let resource =
            &mut version["schema"]["openAPIV3Schema"]["properties"]["resource"]["properties"];
        let count = resource.as_object_mut().unwrap().remove("count").unwrap();
        resource["replicas"] = count;
    }
    let renamed: CustomResourceDefinition = serde_json::from_value(renamed).unwrap();
    match KaitoProvider::default().detect_schema(Some(&renamed)) {
        SchemaDetection::Unsupported { message, .. } => {
            assert!(
                message.contains("fields this provider writes are missing: resource.count"),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        KaitoProvider::default().detect_schema(None),
        SchemaDetection::CrdNotInstalled {
            crd: "workspaces.kaito.sh".into()
        }
    );
    crd.status = None;
    assert!(matches!(
        KaitoProvider::default().detect_schema(Some(&crd)),
        SchemaDetection::NotEstablished { .. }
    ));
}

#[test]
fn registration_matches_the_shipped_fixture() {
    let path = format!(
        "{}/../core-controller/tests/fixtures/shipped-providers/kaito.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let fixture = yaml(&std::fs::read_to_string(path).unwrap());
    assert_eq!(
        serde_json::to_value(registration_spec(&KaitoProvider::default())).unwrap(),
        fixture["spec"]
    );
}

fn messages(rendered: &airunway_api::provider::Rendered) -> Vec<(&str, &str)> {
    rendered
        .warnings
        .iter()
        .map(|w| (w.reason, w.message.as_str()))
        .collect()
}

#[test]
fn gpu_workloads_always_select_linux_gpu_nodes() {
    // The user's selector cannot replace the forced labels; a conflict is reported.
    let rendered = KaitoProvider::default()
        .render(&md(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}},
            "nodeSelector": {"nvidia.com/gpu.present": "false", "kubernetes.io/os": "windows", "pool": "a100"}})), &v1beta1())
        .unwrap();
    assert_eq!(
        rendered.objects[0]["resource"]["labelSelector"],
        json!({"matchLabels": {"nvidia.com/gpu.present": "true", "kubernetes.io/os": "linux", "pool": "a100"}})
    );
    assert_eq!(
        messages(&rendered),
        vec![
            (
                "SettingIgnored",
                "nodeSelector.kubernetes.io/os: \"windows\" is replaced by \"linux\": KAITO workloads run on Linux nodes"
            ),
            (
                "SettingIgnored",
                "nodeSelector.nvidia.com/gpu.present: \"false\" is replaced by \"true\": KAITO workloads run on NVIDIA GPU nodes"
            ),
        ]
    );
    // {engine: vllm} with no resources: the defaulted GPU selects GPU nodes too.
    let rendered = KaitoProvider::default()
        .render(
            &md(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}})),
            &v1beta1(),
        )
        .unwrap();
    assert_eq!(
        rendered.objects[0]["resource"]["labelSelector"]["matchLabels"],
        json!({"nvidia.com/gpu.present": "true", "kubernetes.io/os": "linux"})
    );
    // CPU: Linux nodes plus the user's selector; another GPU vendor: no NVIDIA label.
    let cpu = KaitoProvider::default()
        .render(&md(json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "image": "i", "resources": {"cpu": "4"},
            "nodeSelector": {"pool": "cpu"}})), &v1beta1())
        .unwrap();
    assert_eq!(
        cpu.objects[0]["resource"]["labelSelector"]["matchLabels"],
        json!({"kubernetes.io/os": "linux", "pool": "cpu"})
    );
    let amd = KaitoProvider::default()
        .render(
            &md(
                json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "image": "i",
            "resources": {"gpu": {"count": 1, "type": "amd.com/gpu"}}}),
            ),
            &v1beta1(),
        )
        .unwrap();
    assert_eq!(
        amd.objects[0]["resource"]["labelSelector"]["matchLabels"],
        json!({"kubernetes.io/os": "linux"})
    );
}

#[test]
fn engine_fields_on_the_llamacpp_template() {
    let rendered = KaitoProvider::default()
        .render(&md(json!({"model": {"id": "org/model-gguf"}, "engine": {"type": "llamacpp", "image": "example/llama:2",
            "args": {"threads": "8"}, "extraArgs": ["--parallel", "4", "--cont-batching"]},
            "image": "example/llama:legacy", "gateway": {"enabled": true}})), &v1beta1())
        .unwrap();
    let container = &rendered.objects[0]["inference"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["image"], "example/llama:2",
        "engine.image is preferred over spec.image"
    );
    assert_eq!(
        container["args"],
        json!([
            "huggingface://org/model-gguf",
            "--address=:5000",
            "--threads",
            "8",
            "--parallel",
            "4",
            "--cont-batching"
        ]),
        "extraArgs verbatim after every derived argument"
    );
    assert!(
        rendered.warnings.is_empty(),
        "defaults and spec.gateway (the core's) give no warning: {:?}",
        rendered.warnings
    );
    // No llama.cpp switch for prefix caching or eager mode: warnings.
    let rendered = KaitoProvider::default()
        .render(&md(json!({"model": {"id": "org/model-gguf"}, "engine": {"type": "llamacpp", "image": "i",
            "enablePrefixCaching": false, "enforceEager": true}})), &v1beta1())
        .unwrap();
    assert_eq!(
        messages(&rendered),
        vec![
            (
                "SettingIgnored",
                "engine.enablePrefixCaching: false is ignored: the llama.cpp server has no switch for it (clients turn prompt caching off per request with cache_prompt: false)"
            ),
            (
                "SettingIgnored",
                "engine.enforceEager is ignored: it is a vLLM setting with no llama.cpp equivalent"
            ),
        ]
    );
}

#[test]
fn engine_fields_and_pod_metadata_on_a_vllm_preset() {
    let rendered = KaitoProvider::default()
        .render(&md(json!({"model": {"id": "microsoft/Phi-4-mini-instruct"}, "engine": {"type": "vllm", "image": "my/vllm:1",
            "enablePrefixCaching": false, "enforceEager": true, "extraArgs": ["--max-num-seqs=8"]},
            "resources": {"gpu": {"count": 1}},
            "podTemplate": {"metadata": {"labels": {"team": "a", "airunway.ai/managed-by": "me"}, "annotations": {"note": "x"}}}})), &v1beta1())
        .unwrap();
    assert_eq!(
        rendered.objects[0]["inference"],
        json!({"preset": {"name": "microsoft/Phi-4-mini-instruct"}})
    );
    // Pod labels and annotations go where the Workspace lets them: its own metadata (never
    // over the airunway.ai/ labels).
    assert_eq!(
        rendered.objects[0]["metadata"],
        json!({"name": "m", "labels": {"team": "a", "airunway.ai/model-source": "huggingface", "airunway.ai/engine-type": "vllm",
            "airunway.ai/model-deployment": "m"}, "annotations": {"note": "x"}})
    );
    assert_eq!(
        messages(&rendered),
        vec![
            (
                "SettingIgnored",
                "engine.enablePrefixCaching: false is ignored: KAITO vLLM presets keep vLLM's prefix caching on (configure it in a KAITO inference ConfigMap)"
            ),
            (
                "SettingIgnored",
                "engine.enforceEager is ignored: KAITO vLLM presets take no vLLM flags (configure it in a KAITO inference ConfigMap)"
            ),
            (
                "SettingIgnored",
                "engine.extraArgs (--max-num-seqs=8) is ignored: KAITO vLLM presets take no command line (configure them in a KAITO inference ConfigMap)"
            ),
            (
                "SettingIgnored",
                "engine.image (or spec.image) is ignored for KAITO vLLM presets: KAITO runs the preset's image"
            ),
            (
                "SettingIgnored",
                "podTemplate.metadata labels and annotations are set on the Workspace only: KAITO builds the preset's pods itself and gives them none of them"
            ),
        ]
    );
    // Through the SDK: the managed-by label stays the provider's.
    let deployment = md(
        json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}},
        "podTemplate": {"metadata": {"labels": {"airunway.ai/managed-by": "me"}}}}),
    );
    let rendered = KaitoProvider::default()
        .render(&deployment, &v1beta1())
        .unwrap();
    let desired = airunway_api::provider::desired::desired_object(
        &deployment,
        "kaito",
        &Default::default(),
        &rendered.objects[0],
    );
    assert_eq!(
        desired.object["metadata"]["labels"]["airunway.ai/managed-by"],
        "airunway"
    );
}

#[test]
fn replicas_come_from_the_workspace_when_ready() {
    let deployment = md(
        json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}, "scaling": {"replicas": 3}}),
    );
    let mut ready = sample("workspace-ready.yaml");
    ready.data["resource"]["count"] = json!(3);
    let translated = KaitoProvider::default().translate_status(&deployment, &[Some(&ready)]);
    let replicas = translated.replicas.unwrap();
    assert_eq!(
        (replicas.desired, replicas.ready, replicas.available),
        (Some(3), Some(3), Some(3))
    );
    // State Ready before any condition: Running with every replica.
    ready.data["status"]["conditions"] = json!([]);
    let translated = KaitoProvider::default().translate_status(&deployment, &[Some(&ready)]);
    assert_eq!((translated.phase, translated.ready), (Phase::Running, true));
    assert_eq!(translated.replicas.unwrap().ready, Some(3));
    // InferenceReady alone is not Ready: the Workspace is not.
    let mut not_yet = sample("workspace-notready.yaml");
    not_yet.data["status"]["conditions"][2]["status"] = json!("True");
    let translated = KaitoProvider::default().translate_status(&deployment, &[Some(&not_yet)]);
    assert_eq!(translated.phase, Phase::Deploying);
    assert_eq!(translated.replicas.unwrap().ready, Some(0));
    // Without resource.count (deprecated in v1beta1): the Workspace's target node count.
    let mut no_count = sample("workspace-ready.yaml");
    no_count.data["resource"]
        .as_object_mut()
        .unwrap()
        .remove("count");
    no_count.data["status"]["targetNodeCount"] = json!(2);
    let translated = KaitoProvider::default().translate_status(&deployment, &[Some(&no_count)]);
    assert_eq!(translated.replicas.unwrap().desired, Some(2));
}

#[test]
fn ready_only_while_the_kaito_controller_is() {
    use airunway_api::k8s_openapi::api::apps::v1::Deployment;
    use airunway_api::provider::registration::{
        ControllerHealth, controller_health, upstream_readiness,
    };
    let controller = KaitoProvider::default().upstream_controller().unwrap();
    assert_eq!(
        controller.label_selector,
        "app.kubernetes.io/name in (workspace, ai-toolchain-operator)"
    );
    let deployment = |ns: &str, name: &str, ready: i32| -> Deployment {
        serde_json::from_value(json!({"metadata": {"namespace": ns, "name": name}, "status": {"readyReplicas": ready}}))
            .unwrap()
    };
    let supported = SchemaDetection::Supported(v1beta1());
    let readiness = |health: &ControllerHealth| {
        let (ready, condition) = upstream_readiness(
            &supported,
            Some((&controller, health)),
            "KAITO",
            "Workspace",
        );
        (ready, condition.reason, condition.message)
    };

    // The Helm chart's controller with a ready replica: ready.
    let health = controller_health(&[
        deployment("kaito-workspace", "kaito-workspace", 1),
        deployment("other", "kaito-old", 0),
    ]);
    assert_eq!(
        health,
        ControllerHealth::Ready("kaito-workspace/kaito-workspace".into())
    );
    let (ready, reason, message) = readiness(&health);
    assert!(ready);
    assert_eq!(reason, "UpstreamCRDEstablished");
    assert!(
        message
            .ends_with("; the KAITO workspace controller kaito-workspace/kaito-workspace is ready"),
        "{message}"
    );

    // Installed but not ready, or not installed at all (CRD only): not ready, with why.
    let health = controller_health(&[deployment("kube-system", "ai-toolchain-operator", 0)]);
    assert_eq!(
        readiness(&health),
        (
            false,
            "UpstreamControllerNotReady".to_string(),
            "The KAITO workspace controller Deployment kube-system/ai-toolchain-operator exists but has no ready replicas".to_string()
        )
    );
    let (ready, reason, message) = readiness(&controller_health(&[]));
    assert!(!ready);
    assert_eq!(reason, "UpstreamControllerMissing");
    assert!(
        message.starts_with("The KAITO workspace controller is not running (no Deployment labelled app.kubernetes.io/name in (workspace, ai-toolchain-operator) in any namespace). Install it with: helm"),
        "{message}"
    );
    // A deployment reconciled meanwhile is held with the same advice (the Go AI Runway's
    // refuse-fast text: both install paths and where to look).
    let hold = airunway_api::provider::plan::controller_missing_hold(
        &airunway_provider_kaito::workspace_controller(),
    );
    assert_eq!(hold.reason, "UpstreamControllerMissing");
    let hold = hold.message;
    assert!(
        hold.starts_with("The KAITO workspace controller is not running")
            && hold.contains("so nothing is created for this deployment until it is")
            && hold.contains("helm install kaito-workspace kaito/workspace")
            && hold.contains("(check the kaito-workspace namespace)")
            && hold.contains("`az aks update --enable-ai-toolchain-operator ...` (check the kube-system namespace)"),
        "{hold}"
    );
    // The lookup failed (RBAC, say): not ready, with the error.
    let (ready, reason, message) = readiness(&ControllerHealth::LookupFailed("forbidden".into()));
    assert_eq!(
        (ready, reason.as_str(), message.as_str()),
        (
            false,
            "ProbeFailed",
            "Could not look up the KAITO workspace controller: forbidden"
        )
    );
    // The CRD is checked first: without it, the CRD's reason whatever the controller.
    let (ready, condition) = upstream_readiness(
        &SchemaDetection::CrdNotInstalled {
            crd: "workspaces.kaito.sh".into(),
        },
        Some((&controller, &ControllerHealth::Ready("a/b".into()))),
        "KAITO",
        "Workspace",
    );
    assert!(!ready);
    assert_eq!(condition.reason, "UpstreamCRDNotInstalled");
}

/// The Go AI Runway's llama.cpp model argument (parity K2): `engine.args.ggufUrl` verbatim and
/// not as a flag; none for a model in the image; both `ggufUrl` and `model-file` refused.
#[test]
fn llamacpp_model_argument_from_gguf_url_or_none_for_custom() {
    let base = json!({"model": {"id": "o/r"}, "engine": {"type": "llamacpp", "image": "ghcr.io/x/llama:1",
        "args": {"ggufUrl": "https://huggingface.co/o/r/resolve/main/m.gguf", "threads": "4"}},
        "resources": {"cpu": "4"}});
    let rendered = KaitoProvider::default()
        .render(&md(base.clone()), &v1beta1())
        .unwrap();
    assert_eq!(
        rendered.objects[0]["inference"]["template"]["spec"]["containers"][0]["args"],
        json!([
            "https://huggingface.co/o/r/resolve/main/m.gguf",
            "--address=:5000",
            "--threads",
            "4"
        ])
    );
    let mut custom = base.clone();
    custom["model"]["source"] = json!("custom");
    custom["engine"]["args"] = json!({});
    let rendered = KaitoProvider::default()
        .render(&md(custom), &v1beta1())
        .unwrap();
    assert_eq!(
        rendered.objects[0]["inference"]["template"]["spec"]["containers"][0]["args"],
        json!(["--address=:5000"])
    );
    let mut both = base;
    both["engine"]["args"]["model-file"] = json!("m.gguf");
    let incompatible = KaitoProvider::default()
        .check_compatibility(&md(both))
        .unwrap_err();
    assert_eq!(
        incompatible.to_string(),
        "engine.args.ggufUrl and engine.args.model-file both name the model file: set one"
    );
}

/// Node auto-provisioning (parity K8): the Go AI Runway's instance types, the GPU one for GPU
/// deployments and the CPU one otherwise; nothing without the setting.
#[test]
fn node_auto_provisioning_names_the_instance_type() {
    use airunway_provider_kaito::{NodeProvisioning, truthy};
    let provisioning = KaitoProvider {
        node_provisioning: Some(NodeProvisioning {
            gpu_instance_type: Some("Standard_NC24ads_A100_v4".into()),
            cpu_instance_type: None,
        }),
    };
    let gpu = md(
        json!({"model": {"id": "microsoft/Phi-4-mini-instruct"}, "engine": {"type": "vllm"},
        "resources": {"gpu": {"count": 1}}}),
    );
    let cpu = md(
        json!({"model": {"id": "o/r"}, "engine": {"type": "llamacpp", "image": "ghcr.io/x/llama:1"},
        "resources": {"cpu": "4"}}),
    );
    let rendered = provisioning.render(&gpu, &v1beta1()).unwrap();
    assert_eq!(
        rendered.objects[0]["resource"]["instanceType"],
        "Standard_NC24ads_A100_v4"
    );
    let rendered = provisioning.render(&cpu, &v1beta1()).unwrap();
    assert!(
        rendered.objects[0]["resource"]
            .get("instanceType")
            .is_none()
    );
    let rendered = KaitoProvider::default().render(&gpu, &v1beta1()).unwrap();
    assert!(
        rendered.objects[0]["resource"]
            .get("instanceType")
            .is_none()
    );
    for yes in ["1", "t", "TRUE", "y", "yes", " on ", "Enabled"] {
        assert!(truthy(yes), "{yes}");
    }
    for no in ["", "0", "false", "no", "off", "disabled", "2"] {
        assert!(!truthy(no), "{no}");
    }
}

/// KAITO's overrides, merged as the Go AI Runway merges them (parity K7): the inference
/// ConfigMap, a default node label deleted by `null`; `resource.count` refused.
#[test]
fn overrides_merge_into_the_workspace_as_go_does() {
    let gpu = |overrides: Value| {
        md(
            json!({"model": {"id": "microsoft/Phi-4-mini-instruct"}, "engine": {"type": "vllm"},
            "resources": {"gpu": {"count": 1}}, "provider": {"name": "kaito", "overrides": overrides}}),
        )
    };
    let detection = SchemaDetection::Supported(v1beta1());
    let rendered = cycle::checked(
        &KaitoProvider::default(),
        &gpu(json!({"inference": {"config": "my-cm", "preset": {"presetOptions": {"modelAccessSecret": "s"}}},
            "resource": {"labelSelector": {"matchLabels": {"nvidia.com/gpu.present": null}}}})),
        &detection,
    )
    .unwrap();
    let workspace = &rendered.desired[0].object;
    assert_eq!(workspace["inference"]["config"], "my-cm");
    assert_eq!(
        workspace["inference"]["preset"]["presetOptions"]["modelAccessSecret"],
        "s"
    );
    assert!(
        workspace["resource"]["labelSelector"]["matchLabels"]
            .get("nvidia.com/gpu.present")
            .is_none(),
        "{workspace}"
    );
    assert!(rendered.warnings.is_empty(), "{:?}", rendered.warnings);
    let refused = cycle::checked(
        &KaitoProvider::default(),
        &gpu(json!({"resource": {"count": 3}})),
        &detection,
    )
    .unwrap_err();
    assert_eq!(
        refused.status.message,
        "invalid provider.overrides: provider.overrides.resource.count is set from scaling.replicas (set scaling.replicas instead) and is not allowed"
    );
}

/// A Workspace cannot mount a claim on KAITO's inference pods: any `model.storage` volume is
/// refused with what KAITO cannot do and what to do instead (a preset and a llama.cpp template
/// alike), before the storage gate would hold it waiting for a cache KAITO would never read.
#[test]
fn storage_volumes_are_refused() {
    let volumes = json!({"volumes": [{"name": "weights", "purpose": "modelCache"}]});
    for spec in [
        json!({"model": {"id": "a/b", "storage": volumes}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}}),
        json!({"model": {"id": "a/b", "storage": {"volumes": [{"name": "d", "claimName": "data", "mountPath": "/data"}]}},
               "engine": {"type": "llamacpp"}, "image": "i"}),
    ] {
        let md = md(spec);
        assert_eq!(
            KaitoProvider::default().check_compatibility(&md),
            Err(Incompatible::new(
                airunway_provider_kaito::compat::NO_STORAGE
            ))
        );
        let held = cycle::checked(
            &KaitoProvider::default(),
            &md,
            &SchemaDetection::Supported(v1beta1()),
        )
        .unwrap_err();
        assert_eq!(held.status.phase, Phase::Failed);
        assert!(
            held.status
                .message
                .starts_with("KAITO cannot mount model.storage volumes")
        );
    }
    assert_eq!(
        registration_spec(&KaitoProvider::default())
            .capabilities
            .unwrap()
            .model_storage,
        Some(false)
    );
}

/// Through the SDK's status path: a Workspace of 2 that lost a pod is `NotReady` with 0 of 2
/// ready (KAITO's all-or-nothing readiness), so `Degraded` stays `False`; the status carries the
/// StatefulSet and `kaito.sh/workspace` selector.
#[test]
fn kaito_readiness_is_all_or_nothing_so_degraded_stays_false() {
    use airunway_api::constants::condition_types::DEGRADED;
    use airunway_api::v1alpha1::ConditionStatus;
    let now = airunway_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        "2026-01-01T00:00:00Z".parse().unwrap(),
    );
    let deployment = md(
        json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "image": "i",
        "scaling": {"replicas": 2}}),
    );
    let provider = KaitoProvider::default();
    let first = cycle::apply(&provider, &deployment, &v1beta1(), None, &now).unwrap();
    for (file, ready) in [("workspace-notready.yaml", 0), ("workspace-ready.yaml", 2)] {
        let live = cycle::served(&first.desired, sample(file).data["status"].clone()).unwrap();
        let (status, _) = cycle::status_sync(&provider, &deployment, &first.desired, &live);
        assert_eq!(
            status.replicas.as_ref().unwrap().ready,
            Some(ready),
            "{file}"
        );
        let degraded = status
            .conditions
            .iter()
            .find(|c| c.type_ == DEGRADED)
            .unwrap();
        assert_eq!(degraded.status, ConditionStatus::False, "{file}");
        let patch = status.patch(&deployment, &now);
        assert_eq!(
            patch["status"]["selector"], "kaito.sh/workspace=m",
            "{file}"
        );
        assert_eq!(
            patch["status"]["workload"]["workloads"][0]["kind"],
            "StatefulSet"
        );
        assert_eq!(patch["status"]["workload"]["container"], "model");
    }
}

#[test]
fn not_ready_reasons_name_the_workspace_and_what_is_missing() {
    use airunway_api::v1alpha1::NotReadyReason;
    let deployment = md(
        json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}}),
    );
    let translate = |object: &DynamicObject, deployment: &ModelDeployment| {
        KaitoProvider::default().translate_status(deployment, &[Some(object)])
    };

    // No node matches: capacity, naming the nodes KAITO waits for, read from the Workspace.
    let nodes = sample("workspace-nodes-not-ready.yaml");
    let not_ready = translate(&nodes, &deployment).not_ready.unwrap();
    assert_eq!(not_ready.reason, NotReadyReason::InsufficientCapacity);
    assert_eq!(
        not_ready.message,
        "KAITO: Not enough Nodes are ready: Workspace phi-4-mini needs 1 ready node(s) matching apps=phi-4-mini; 0 node(s) match"
    );
    let source = not_ready.object.unwrap();
    assert_eq!(
        (
            source.api_version.as_str(),
            source.kind.as_str(),
            source.name.as_str()
        ),
        ("kaito.sh/v1beta1", "Workspace", "phi-4-mini")
    );

    // Reconcile errors by what they say.
    for (error, reason) in [
        (
            "failed to get GPU config: missing required nvidia.com labels on node n",
            NotReadyReason::UpstreamReconcileError,
        ),
        (
            "error listing files: authentication required for accessing https://huggingface.co/api/models/x/y/tree/main?recursive=true",
            NotReadyReason::ModelAuthFailed,
        ),
        (
            "error fetching config: failed to fetch https://huggingface.co/x/y/resolve/main/config.json: status 401",
            NotReadyReason::ModelAuthFailed,
        ),
        (
            "error fetching config: failed to fetch https://huggingface.co/x/y/resolve/main/config.json: status 404",
            NotReadyReason::ModelDownloadFailed,
        ),
        (
            "statefulsets.apps \"w\" is forbidden: exceeded quota: q",
            NotReadyReason::QuotaExceeded,
        ),
    ] {
        assert_eq!(
            airunway_provider_kaito::status::reconcile_error_reason(error),
            reason,
            "{error}"
        );
    }

    // A new generation KAITO has not reported on while the previous one is Ready: Running,
    // not ready for this generation.
    let mut behind = sample("workspace-ready.yaml");
    behind.metadata.generation = Some(2);
    let translated = translate(&behind, &deployment);
    assert_eq!(
        (
            translated.phase,
            translated.ready,
            translated.not_ready.as_ref().map(|n| n.reason)
        ),
        (Phase::Running, false, Some(NotReadyReason::Updating))
    );
    assert_eq!(
        translated.not_ready.unwrap().message,
        "KAITO has not acted on Workspace phi-4-mini generation 2 yet (it reports generation 1); the previous version keeps serving"
    );

    // Then KAITO rolls the workload (state NotReady): still Updating while the deployment
    // shows it, the catch-all once it does not.
    let lost = sample("workspace-notready.yaml");
    assert_eq!(
        translate(&lost, &deployment).not_ready.unwrap().reason,
        NotReadyReason::Unclassified
    );
    let mut updating = deployment.clone();
    updating.status.as_mut().unwrap().conditions = Some(vec![
        serde_json::from_value(
            json!({"type": "Ready", "status": "False", "reason": "Updating",
            "message": "x", "lastTransitionTime": "2026-05-14T11:30:00Z"}),
        )
        .unwrap(),
    ]);
    assert_eq!(
        translate(&lost, &updating).not_ready.unwrap().reason,
        NotReadyReason::Updating
    );
    assert_eq!(
        translate(&sample("workspace-ready.yaml"), &updating).not_ready,
        None
    );
}

/// `spec.adapters` on a vLLM preset: `inference.adapters` from the root of a claim, a rank
/// above vLLM's default reported; every source or name KAITO cannot take refused naming the
/// field, and llama.cpp refused.
#[test]
fn adapters_from_claims_become_workspace_adapters() {
    let spec = |adapters: Value, engine: &str| {
        json!({"model": {"id": "microsoft/Phi-4-mini-instruct"}, "engine": {"type": engine},
            "resources": {"gpu": {"count": 1}}, "adapters": adapters})
    };
    let good = md(spec(
        json!([{"name": "sql", "source": "pvc://sql-lora", "maxRank": 32},
               {"name": "chat", "source": "pvc://chat-lora/"}]),
        "vllm",
    ));
    KaitoProvider::default().check_compatibility(&good).unwrap();
    let rendered = KaitoProvider::default().render(&good, &v1beta1()).unwrap();
    assert_eq!(
        rendered.objects[0]["inference"]["adapters"],
        json!([
            {"source": {"name": "sql", "volumeSource": {"persistentVolumeClaim": {"claimName": "sql-lora", "readOnly": true}}}},
            {"source": {"name": "chat", "volumeSource": {"persistentVolumeClaim": {"claimName": "chat-lora", "readOnly": true}}}}
        ])
    );
    let workspace_schema = airunway_api::provider::testing::upstream_schema::upstream_validator(
        env!("CARGO_MANIFEST_DIR"),
        "kaito/kaito.sh_workspaces.yaml",
        "v1beta1",
    )
    .unwrap();
    assert_eq!(
        workspace_schema.errors(&rendered.objects[0]),
        Vec::<String>::new(),
        "the real Workspace schema (KAITO v0.10.0) accepts the adapters"
    );
    assert!(
        messages(&rendered)
            .iter()
            .any(|(_, m)| m.contains("max-lora-rank: 32")),
        "{:?}",
        messages(&rendered)
    );
    let refused = |adapters: Value, engine: &str| {
        KaitoProvider::default()
            .check_compatibility(&md(spec(adapters, engine)))
            .unwrap_err()
            .message()
            .to_string()
    };
    assert_eq!(
        refused(json!([{"name": "sql", "source": "hf://org/sql"}]), "vllm"),
        "spec.adapters[0].source: KAITO loads adapters from an image or a volume, not from a Hugging Face source: copy the adapter to the root of a PersistentVolumeClaim and use pvc://<claim>, or name provider vllm or llmd"
    );
    assert!(
        refused(
            json!([{"name": "sql", "source": "pvc://loras/sql"}]),
            "vllm"
        )
        .starts_with("spec.adapters[0].source: KAITO mounts a volume adapter whole")
    );
    assert!(
        refused(json!([{"name": "s.q_l", "source": "pvc://loras"}]), "vllm")
            .starts_with("spec.adapters[0].name: KAITO names the adapter's volume")
    );
    assert_eq!(
        refused(
            json!([{"name": "sql", "source": "pvc://loras"}]),
            "llamacpp"
        ),
        "KAITO loads LoRA adapters into vLLM presets only: remove spec.adapters, or use engine vllm"
    );
    let eleven: Vec<Value> = (0..11)
        .map(|i| json!({"name": format!("a{i}"), "source": format!("pvc://c{i}")}))
        .collect();
    assert!(refused(json!(eleven), "vllm").starts_with("KAITO takes at most 10 adapters"));
}
