//! Intent mode: every refusal, the attempt and hash rules, the request and its status.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use airunway_api::kube::core::DynamicObject;
use airunway_api::serde_json::{self, Value, json};
use airunway_api::v1alpha1::{ModelDeployment, Phase};

use super::attempt::{self, Accepted};
use super::spec::{self, Intent};
use super::{IntentError, request, status};

fn base() -> Value {
    json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "qwen", "namespace": "ns", "uid": "0b6f-uid"},
        "spec": {
            "model": {"id": "Qwen/Qwen3-0.6B", "source": "huggingface"},
            "engine": {"type": "vllm", "enablePrefixCaching": true},
            "serving": {"mode": "aggregated"},
            "scaling": {"replicas": 1},
            "provider": {"name": "dynamo", "overrides": {
                "deploymentMode": "intent",
                "intent": {
                    "hardware": {"totalGpus": 2, "gpuSku": "h100_sxm", "vramMb": 81920.0, "numGpusPerNode": 8},
                    "workload": {"isl": 3000, "osl": 150, "requestRate": 5.0},
                    "sla": {"ttft": 200.0, "itl": 20.0},
                },
            }},
        },
    })
}

fn md(value: Value) -> ModelDeployment {
    serde_json::from_value(value).unwrap()
}

fn with(mut value: Value, pointer: &str, field: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let target = value.pointer_mut(parent).unwrap();
    if field.is_null() {
        target.as_object_mut().unwrap().remove(key);
    } else {
        target[key] = field;
    }
    value
}

fn refusal(value: Value) -> String {
    spec::validate(&md(value)).unwrap_err().to_string()
}

const INTENT: &str = "/spec/provider/overrides/intent";

#[test]
fn a_complete_intent_is_accepted_and_typed() {
    let intent = spec::validate(&md(base())).unwrap().unwrap();
    assert_eq!(intent.hardware.total_gpus, 2);
    assert_eq!(intent.hardware.gpu_sku.as_deref(), Some("h100_sxm"));
    assert_eq!(intent.workload.unwrap().request_rate, Some(5.0));
    assert_eq!(intent.sla.unwrap().itl, Some(20.0));
}

#[test]
fn a_manual_deployment_has_no_intent() {
    let manual = with(
        base(),
        "/spec/provider/overrides",
        json!({"routerMode": "kv"}),
    );
    assert_eq!(spec::validate(&md(manual.clone())).unwrap(), None);
    assert!(!super::applies(&md(manual)));
    assert!(super::applies(&md(base())));
}

#[test]
fn every_refused_combination_has_the_go_message() {
    let cases: Vec<(Value, &str)> = vec![
        // The block itself.
        (
            with(
                base(),
                "/spec/provider/overrides/deploymentMode",
                Value::Null,
            ),
            "provider.overrides.intent requires deploymentMode: intent",
        ),
        (
            with(
                base(),
                "/spec/provider/overrides/deploymentMode",
                json!("manual"),
            ),
            "provider.overrides.intent requires deploymentMode: intent",
        ),
        (
            with(base(), INTENT, Value::Null),
            "deploymentMode: intent requires provider.overrides.intent",
        ),
        (
            with(
                base(),
                "/spec/provider/overrides/spec",
                json!({"services": {}}),
            ),
            "intent and legacy overrides.spec cannot be combined",
        ),
        (
            with(base(), INTENT, json!("fast")),
            "intent must be an object",
        ),
        // Ranges.
        (
            with(base(), &format!("{INTENT}/hardware/totalGpus"), json!(0)),
            "intent.hardware.totalGpus must be between 1 and 64",
        ),
        (
            with(base(), &format!("{INTENT}/hardware/totalGpus"), json!(65)),
            "intent.hardware.totalGpus must be between 1 and 64",
        ),
        (
            with(base(), &format!("{INTENT}/hardware"), Value::Null),
            "intent.hardware.totalGpus must be between 1 and 64",
        ),
        (
            with(
                base(),
                &format!("{INTENT}/searchStrategy"),
                json!("thorough"),
            ),
            "automatic configuration currently supports searchStrategy: rapid only",
        ),
        (
            with(
                base(),
                &format!("{INTENT}/hardware/numGpusPerNode"),
                json!(0),
            ),
            "intent.hardware.numGpusPerNode must be positive",
        ),
        (
            with(base(), &format!("{INTENT}/hardware/vramMb"), json!(-1.0)),
            "intent.hardware.vramMb must be positive",
        ),
        (
            with(base(), &format!("{INTENT}/workload/isl"), json!(0)),
            "intent workload token lengths must be positive",
        ),
        (
            with(base(), &format!("{INTENT}/workload/osl"), json!(-5)),
            "intent workload token lengths must be positive",
        ),
        (
            with(
                base(),
                &format!("{INTENT}/workload/concurrency"),
                json!(8.0),
            ),
            "specify requestRate or concurrency, not both",
        ),
        (
            with(
                base(),
                &format!("{INTENT}/workload/requestRate"),
                json!(0.0),
            ),
            "intent workload traffic must be positive",
        ),
        (
            with(base(), &format!("{INTENT}/sla/e2eLatency"), json!(1000.0)),
            "specify e2eLatency or ttft/itl, not both",
        ),
        (
            with(base(), &format!("{INTENT}/sla/ttft"), json!(0.0)),
            "intent latency targets must be positive",
        ),
        (
            with(
                base(),
                &format!("{INTENT}/sla"),
                json!({"e2eLatency": -3.0}),
            ),
            "intent latency targets must be positive",
        ),
        // The rest of the deployment.
        (
            with(base(), "/spec/resources", json!({"gpu": {"count": 1}})),
            "automatic configuration uses intent.hardware.totalGpus, not resources",
        ),
        (
            with(base(), "/spec/scaling/replicas", json!(3)),
            "automatic configuration chooses replicas; omit scaling",
        ),
        (
            with(base(), "/spec/scaling/prefill", json!({"replicas": 1})),
            "automatic configuration chooses replicas; omit scaling",
        ),
        (
            with(base(), "/spec/serving/mode", json!("disaggregated")),
            "automatic configuration chooses topology; omit serving.mode",
        ),
        (
            with(base(), "/spec/image", json!("registry.example/vllm:1")),
            "custom engine images and arguments require manual configuration",
        ),
        (
            with(
                base(),
                "/spec/engine/image",
                json!("registry.example/vllm:1"),
            ),
            "custom engine images and arguments require manual configuration",
        ),
        (
            with(base(), "/spec/engine/args", json!({"max-num-seqs": "8"})),
            "custom engine images and arguments require manual configuration",
        ),
        (
            with(
                base(),
                "/spec/engine/extraArgs",
                json!(["--quantization=fp8"]),
            ),
            "custom engine images and arguments require manual configuration",
        ),
        (
            with(base(), "/spec/engine/contextLength", json!(4096)),
            "custom engine images and arguments require manual configuration",
        ),
        (
            with(base(), "/spec/engine/trustRemoteCode", json!(true)),
            "custom engine images and arguments require manual configuration",
        ),
        (
            with(base(), "/spec/engine/enforceEager", json!(true)),
            "custom engine images and arguments require manual configuration",
        ),
        (
            with(base(), "/spec/model/servedName", json!("qwen")),
            "custom servedName requires manual configuration",
        ),
        (
            with(base(), "/spec/env", json!([{"name": "A", "value": "b"}])),
            "custom env, nodeSelector and tolerations require manual configuration",
        ),
        (
            with(base(), "/spec/nodeSelector", json!({"pool": "gpu"})),
            "custom env, nodeSelector and tolerations require manual configuration",
        ),
        (
            with(
                base(),
                "/spec/tolerations",
                json!([{"key": "gpu", "operator": "Exists"}]),
            ),
            "custom env, nodeSelector and tolerations require manual configuration",
        ),
        (
            with(
                base(),
                "/spec/secrets",
                json!({"huggingFaceToken": "my-token"}),
            ),
            "automatic configuration uses hf-token-secret; custom secret names require manual configuration",
        ),
        (
            with(
                base(),
                "/spec/model/storage",
                json!({"volumes": [{"name": "cache", "claimName": "c", "purpose": "modelCache"}]}),
            ),
            "automatic configuration does not support storage volumes; use manual configuration or legacy overrides with an explicit modelCache.pvcModelPath",
        ),
        (
            with(
                base(),
                "/spec/podTemplate",
                json!({"metadata": {"labels": {"team": "a"}}}),
            ),
            "custom pod metadata requires manual configuration",
        ),
        (
            with(base(), "/spec/provider/overrides/routerMode", json!("kv")),
            "routerMode, frontend and epp overrides are supported only when deploymentMode is \"manual\"",
        ),
        (
            with(
                base(),
                "/spec/provider/overrides/frontend",
                json!({"replicas": 2}),
            ),
            "routerMode, frontend and epp overrides are supported only when deploymentMode is \"manual\"",
        ),
        // Ours (docs/migrating.md).
        (
            with(base(), "/spec/gateway", json!({"enabled": true})),
            "automatic configuration does not manage the inference gateway; set gateway.enabled: false or use manual configuration",
        ),
        (
            with(
                base(),
                &format!("{INTENT}/overrides"),
                json!({"dgd": {"kind": "Deployment"}}),
            ),
            "intent.overrides.dgd must be a DynamoGraphDeployment with apiVersion nvidia.com/v1alpha1 or nvidia.com/v1beta1",
        ),
        (
            with(
                base(),
                &format!("{INTENT}/overrides"),
                json!({"profilingJob": []}),
            ),
            "intent.overrides.profilingJob must be a Job spec object",
        ),
    ];
    for (value, message) in cases {
        assert_eq!(refusal(value.clone()), message, "for {value}");
    }
}

#[test]
fn what_the_crd_defaults_or_allows_is_not_refused() {
    // The CRD's defaults, the accepted secret name, gateway off, aggregated serving, the
    // default search strategy spelled out.
    let mut value = base();
    value["spec"]["secrets"] = json!({"huggingFaceToken": "hf-token-secret"});
    value["spec"]["gateway"] = json!({"enabled": false});
    value["spec"]["engine"]["trustRemoteCode"] = json!(false);
    value["spec"]["engine"]["enforceEager"] = json!(false);
    value["spec"]["provider"]["overrides"]["intent"]["searchStrategy"] = json!("rapid");
    assert!(spec::validate(&md(value)).unwrap().is_some());
}

#[test]
fn unknown_intent_fields_and_wrong_types_are_refused() {
    let unknown = with(base(), &format!("{INTENT}/hardware/gpus"), json!(2));
    let error = spec::validate(&md(unknown)).unwrap_err();
    assert!(matches!(error, IntentError::Malformed(_)), "{error}");
    assert!(
        error
            .to_string()
            .starts_with("invalid Dynamo intent: unknown field `gpus`"),
        "{error}"
    );
    let wrong = with(base(), &format!("{INTENT}/workload/isl"), json!("long"));
    assert!(
        spec::validate(&md(wrong))
            .unwrap_err()
            .to_string()
            .starts_with("invalid Dynamo intent: ")
    );
    assert_eq!(IntentError::Locked.category(), "intent_locked");
}

#[test]
fn attempt_tokens_are_bounded_and_plain() {
    assert!(attempt::check_attempt("").is_ok());
    assert!(attempt::check_attempt("retry-2.b_c").is_ok());
    assert!(attempt::check_attempt(&"a".repeat(64)).is_ok());
    assert_eq!(
        attempt::check_attempt(&"a".repeat(65))
            .unwrap_err()
            .to_string(),
        "Dynamo attempt token must be at most 64 characters"
    );
    assert_eq!(
        attempt::check_attempt("two words").unwrap_err().to_string(),
        "Dynamo attempt token contains invalid characters"
    );
}

fn annotated(token: &str) -> ModelDeployment {
    let mut value = base();
    value["metadata"]["annotations"] = json!({"airunway.ai/dynamo-attempt": token});
    md(value)
}

#[test]
fn the_request_name_follows_the_attempt() {
    let first = attempt::request_name(&md(base()));
    assert_eq!(first, attempt::request_name(&annotated("")));
    let second = attempt::request_name(&annotated("2"));
    assert_ne!(first, second);
    for name in [&first, &second] {
        let (prefix, suffix) = name.split_once('-').unwrap();
        assert_eq!(prefix, "qwen");
        assert_eq!(suffix.len(), 16);
        assert!(suffix.chars().all(|c| c.is_ascii_hexdigit()));
    }
    // Another deployment (UID) of the same name gets another request.
    let mut other = base();
    other["metadata"]["uid"] = json!("another-uid");
    assert_ne!(attempt::request_name(&md(other)), first);
    // Long and dotted names: 15 characters, dots made dashes, no trailing dash; 32 at most.
    let mut long = base();
    long["metadata"]["name"] = json!("llama.3-1-8b-i-.nstruct-with-a-long-name");
    let name = attempt::request_name(&md(long));
    assert!(name.starts_with("llama-3-1-8b-i-"), "{name}");
    assert!(!name.contains("--"), "{name}");
    assert!(name.len() <= 32, "{name}");
}

fn hash(value: Value) -> String {
    let md = md(value);
    let intent = spec::validate(&md).unwrap().unwrap();
    attempt::input_hash(&md, &intent)
}

#[test]
fn the_input_hash_follows_the_inputs_only() {
    let original = hash(base());
    assert_eq!(original.len(), 64);
    // Metadata, routing and the default search strategy spelled out change nothing.
    let mut same = base();
    same["metadata"]["labels"] = json!({"team": "a"});
    same["metadata"]["annotations"] = json!({"airunway.ai/dynamo-attempt": "7"});
    same["spec"]["gateway"] = json!({"enabled": false});
    same["spec"]["provider"]["overrides"]["intent"]["searchStrategy"] = json!("rapid");
    assert_eq!(hash(same), original);
    // Key order in the intent block changes nothing.
    let reordered: Value = serde_json::from_str(&serde_json::to_string(&base()).unwrap().replace(
        r#""hardware":{"gpuSku":"h100_sxm","numGpusPerNode":8,"totalGpus":2,"vramMb":81920.0}"#,
        r#""hardware":{"vramMb":81920.0,"totalGpus":2,"numGpusPerNode":8,"gpuSku":"h100_sxm"}"#,
    ))
    .unwrap();
    assert_eq!(hash(reordered), original);
    // The targets, the budget, the model and the engine do.
    for (pointer, value) in [
        (format!("{INTENT}/sla/ttft"), json!(300.0)),
        (format!("{INTENT}/hardware/totalGpus"), json!(4)),
        ("/spec/model/id".to_string(), json!("Qwen/Qwen3-8B")),
        ("/spec/engine/type".to_string(), json!("sglang")),
    ] {
        assert_ne!(hash(with(base(), &pointer, value)), original, "{pointer}");
    }
}

#[test]
fn changed_inputs_are_locked_while_dynamo_profiles_or_serves() {
    let accepted = |phase| Accepted {
        attempt: "",
        input_hash: "h1",
        phase,
    };
    // Nothing accepted yet, or the same inputs: fine in every phase.
    assert!(attempt::check_unchanged(None, "", "h2").is_ok());
    for phase in [
        "",
        "Pending",
        "Profiling",
        "Ready",
        "Deploying",
        "Deployed",
        "Failed",
    ] {
        assert!(attempt::check_unchanged(Some(accepted(phase)), "", "h1").is_ok());
    }
    // Changed inputs: locked while profiling and after, free before and after a failure.
    for phase in attempt::LOCKED_PHASES {
        assert_eq!(
            attempt::check_unchanged(Some(accepted(phase)), "", "h2").unwrap_err(),
            IntentError::Locked
        );
    }
    for phase in ["", "Pending", "Failed"] {
        assert!(attempt::check_unchanged(Some(accepted(phase)), "", "h2").is_ok());
    }
    // A new attempt is a new request: never locked.
    assert!(attempt::check_unchanged(Some(accepted("Profiling")), "2", "h2").is_ok());
    // An unknown accepted hash locks nothing.
    let unknown = Accepted {
        attempt: "",
        input_hash: "",
        phase: "Profiling",
    };
    assert!(attempt::check_unchanged(Some(unknown), "", "h2").is_ok());
    assert_eq!(
        IntentError::Locked.to_string(),
        "Dynamo profiling inputs are locked; change the airunway.ai/dynamo-attempt annotation to explicitly reconfigure"
    );
}

#[test]
fn the_request_states_the_intent_and_applies_itself() {
    let md = annotated("2");
    let intent = spec::validate(&md).unwrap().unwrap();
    let dgdr = request::render(&md, &intent);
    assert_eq!(dgdr["apiVersion"], "nvidia.com/v1beta1");
    assert_eq!(dgdr["kind"], "DynamoGraphDeploymentRequest");
    assert_eq!(dgdr["metadata"]["name"], json!(attempt::request_name(&md)));
    assert_eq!(
        dgdr["metadata"]["annotations"]["airunway.ai/dynamo-attempt"],
        "2"
    );
    assert_eq!(
        dgdr["metadata"]["annotations"]["airunway.ai/dynamo-intent-hash"],
        json!(attempt::input_hash(&md, &intent))
    );
    assert_eq!(
        dgdr["metadata"]["labels"]["airunway.ai/model-deployment"],
        "qwen"
    );
    assert_eq!(
        dgdr["spec"],
        json!({
            "model": "Qwen/Qwen3-0.6B",
            "backend": "vllm",
            "image": request::profiler_image(),
            "hardware": {"totalGpus": 2, "gpuSku": "h100_sxm", "vramMb": 81920.0, "numGpusPerNode": 8},
            "workload": {"isl": 3000, "osl": 150, "requestRate": 5.0},
            "sla": {"ttft": 200.0, "itl": 20.0},
            "searchStrategy": "rapid",
            "autoApply": true,
        })
    );
}

#[test]
fn the_request_carries_the_profiling_job_and_graph_overrides() {
    let overrides = json!({
        "profilingJob": {"backoffLimit": 1},
        "dgd": {"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeployment",
            "metadata": {"labels": {"team": "a"}}},
    });
    let value = with(base(), &format!("{INTENT}/overrides"), overrides.clone());
    let md = md(value);
    let intent = spec::validate(&md).unwrap().unwrap();
    assert_eq!(
        request::render(&md, &intent)["spec"]["overrides"],
        overrides
    );
    // No engine yet: Dynamo chooses the backend.
    assert_eq!(request::backend(None), "auto");
    let typed: Intent = serde_json::from_value(json!({"hardware": {"totalGpus": 1}})).unwrap();
    assert!(spec::check_intent(&typed).is_ok());
}

fn request_with(status: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeploymentRequest",
        "metadata": {"name": "qwen-0123456789abcdef", "namespace": "ns", "uid": "r-1",
            "annotations": {"airunway.ai/dynamo-intent-hash": "h1", "airunway.ai/dynamo-attempt": "2"}},
        "spec": {"model": "Qwen/Qwen3-0.6B"},
        "status": status,
    }))
    .unwrap()
}

#[test]
fn the_phase_follows_profiling_then_deploying_then_running() {
    let missing = status::translate(None);
    assert_eq!((missing.phase, missing.ready), (Phase::Deploying, false));

    let pending = status::translate(Some(&request_with(json!({"phase": "Pending"}))));
    assert_eq!(pending.phase, Phase::Deploying);
    assert_eq!(pending.message.as_deref(), Some(status::PENDING_MESSAGE));

    let profiling =
        request_with(json!({"phase": "Profiling", "profilingPhase": "SweepingPrefill"}));
    let translated = status::translate(Some(&profiling));
    assert_eq!(translated.phase, Phase::Deploying);
    assert_eq!(
        translated.message.as_deref(),
        Some("Dynamo is profiling the model (SweepingPrefill)")
    );
    let state = status::state(&profiling);
    assert_eq!(
        (
            state.phase.as_str(),
            state.profiling_phase.as_str(),
            state.input_hash.as_str(),
            state.attempt.as_str()
        ),
        ("Profiling", "SweepingPrefill", "h1", "2")
    );
    assert_eq!(state.workload, None);

    let deploying = status::translate(Some(&request_with(
        json!({"phase": "Deploying", "dgdName": "qwen-dgd"}),
    )));
    assert_eq!(deploying.phase, Phase::Deploying);
    assert!(deploying.message.unwrap().contains("qwen-dgd"));

    let deployed = request_with(json!({"phase": "Deployed", "dgdName": "qwen-dgd",
        "deploymentInfo": {"replicas": 2, "availableReplicas": 2}}));
    let running = status::translate(Some(&deployed));
    assert_eq!((running.phase, running.ready), (Phase::Running, true));
    assert_eq!(
        running.endpoint.unwrap().service.as_deref(),
        Some("qwen-dgd-frontend")
    );
    assert_eq!(running.replicas.unwrap().ready, Some(2));
    assert_eq!(
        status::state(&deployed).workload.as_deref(),
        Some("qwen-dgd")
    );

    let failed = status::translate(Some(&request_with(
        json!({"phase": "Failed", "conditions": [
        {"type": "Succeeded", "status": "False", "reason": "ProfilingFailed", "message": "profiling job failed: OOM",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
    )));
    assert_eq!(failed.phase, Phase::Failed);
    assert_eq!(failed.message.as_deref(), Some("profiling job failed: OOM"));
    assert!(failed.not_ready.is_some());
}

mod through_the_sdk {
    //! The provider as the SDK runs it (offline cycle): an intent deployment is one request,
    //! compatible or refused with the message, and its status follows the request's.
    use super::*;
    use crate::DynamoProvider;
    use airunway_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use airunway_api::provider::{Provider, UpstreamSchema, cycle};

    fn schema() -> UpstreamSchema {
        UpstreamSchema {
            version: "v1alpha1".into(),
            api_version: "nvidia.com/v1alpha1".into(),
            fingerprint: "b988c5e17d5c5ec9".into(),
        }
    }

    fn assigned(mut value: Value) -> ModelDeployment {
        value["status"] = json!({"provider": {"name": "dynamo"}});
        md(value)
    }

    #[test]
    fn an_intent_deployment_is_one_request_reaching_running_through_its_graph() {
        let now = Time("2026-01-01T00:00:00Z".parse().unwrap());
        let deployment = assigned(base());
        assert!(DynamoProvider.check_compatibility(&deployment).is_ok());
        let first = cycle::apply(&DynamoProvider, &deployment, &schema(), None, &now).unwrap();
        assert!(first.applies);
        assert_eq!(first.desired.object["kind"], "DynamoGraphDeploymentRequest");
        assert_eq!(first.desired.object["apiVersion"], "nvidia.com/v1beta1");
        assert_eq!(first.status.phase, Phase::Deploying);
        for (status, phase) in [
            (
                json!({"phase": "Profiling", "profilingPhase": "SweepingDecode"}),
                Phase::Deploying,
            ),
            (
                json!({"phase": "Deploying", "dgdName": "qwen-dgd"}),
                Phase::Deploying,
            ),
            (
                json!({"phase": "Deployed", "dgdName": "qwen-dgd",
                "deploymentInfo": {"replicas": 1, "availableReplicas": 1}}),
                Phase::Running,
            ),
        ] {
            let live = cycle::served(&first.desired, status).unwrap();
            let (translated, _) =
                cycle::status_sync(&DynamoProvider, &deployment, &first.desired, &live);
            assert_eq!(translated.phase, phase);
        }
    }

    #[test]
    fn a_refused_intent_is_incompatible_with_the_message() {
        let refused = assigned(with(
            base(),
            "/spec/resources",
            json!({"gpu": {"count": 1}}),
        ));
        assert_eq!(
            DynamoProvider
                .check_compatibility(&refused)
                .unwrap_err()
                .message(),
            "automatic configuration uses intent.hardware.totalGpus, not resources"
        );
        let mut bad_attempt = base();
        bad_attempt["metadata"]["annotations"] = json!({"airunway.ai/dynamo-attempt": "a b"});
        assert_eq!(
            DynamoProvider
                .check_compatibility(&assigned(bad_attempt))
                .unwrap_err()
                .message(),
            "Dynamo attempt token contains invalid characters"
        );
    }

    #[test]
    fn a_manual_deployment_still_renders_its_graph() {
        let now = Time("2026-01-01T00:00:00Z".parse().unwrap());
        let manual = assigned(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns", "uid": "u"},
            "spec": {"model": {"id": "a/b"}, "engine": {"type": "vllm"},
                "resources": {"gpu": {"count": 1}}},
        }));
        let applied = cycle::apply(&DynamoProvider, &manual, &schema(), None, &now).unwrap();
        assert_eq!(applied.desired.object["kind"], "DynamoGraphDeployment");
    }
}

mod against_the_request_schema {
    //! Every request the provider renders passes Dynamo's DGDR schema (`v1beta1`, the CRD in
    //! `e2e/fixtures/upstream-crds/dynamo`), for generated intents.
    use super::*;
    use airunway_api::provider::testing::upstream_schema::{self, UpstreamValidator};
    use proptest::prelude::*;
    use std::sync::LazyLock;

    static DGDR: LazyLock<UpstreamValidator> = LazyLock::new(|| {
        upstream_schema::upstream_validator(
            env!("CARGO_MANIFEST_DIR"),
            "dynamo/nvidia.com_dynamographdeploymentrequests.yaml",
            "v1beta1",
        )
        .unwrap()
    });

    fn rendered(value: Value) -> Value {
        let md = md(value);
        let intent = spec::validate(&md).unwrap().unwrap();
        request::render(&md, &intent)
    }

    #[test]
    fn the_example_and_its_overrides_pass_the_schema() {
        assert_eq!(DGDR.errors(&rendered(base())), Vec::<String>::new());
        let overrides = json!({"profilingJob": {"backoffLimit": 1, "template": {"spec": {"containers": []}}},
            "dgd": {"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeployment",
                "metadata": {"labels": {"team": "a"}}}});
        let value = with(base(), &format!("{INTENT}/overrides"), overrides);
        assert_eq!(DGDR.errors(&rendered(value)), Vec::<String>::new());
        // The schema is the real one: a field it lacks is refused.
        let mut wrong = rendered(base());
        wrong["spec"]["hardware"]["gpus"] = json!(2);
        assert!(!DGDR.errors(&wrong).is_empty());
    }

    fn sku() -> impl Strategy<Value = Option<&'static str>> {
        proptest::option::of(proptest::sample::select(vec![
            "h100_sxm", "h200_sxm", "a100_sxm", "l40s", "b200_sxm",
        ]))
    }

    proptest! {
        #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn every_accepted_intent_renders_a_schema_valid_request(
            total in 1..=64i32,
            gpu_sku in sku(),
            vram in proptest::option::of(1.0f64..200_000.0),
            per_node in proptest::option::of(1..=16i32),
            isl in proptest::option::of(1..=128_000i32),
            osl in proptest::option::of(1..=32_000i32),
            traffic in proptest::option::of((any::<bool>(), 0.01f64..10_000.0)),
            latency in proptest::option::of((any::<bool>(), 0.1f64..60_000.0, 0.1f64..1_000.0)),
            engine in proptest::sample::select(vec!["vllm", "sglang", "trtllm"]),
            attempt in "[A-Za-z0-9._-]{0,64}",
        ) {
            let mut hardware = json!({"totalGpus": total});
            if let Some(s) = gpu_sku { hardware["gpuSku"] = json!(s); }
            if let Some(v) = vram { hardware["vramMb"] = json!(v); }
            if let Some(n) = per_node { hardware["numGpusPerNode"] = json!(n); }
            let mut intent = json!({"hardware": hardware});
            let mut workload = json!({});
            if let Some(l) = isl { workload["isl"] = json!(l); }
            if let Some(l) = osl { workload["osl"] = json!(l); }
            if let Some((rate, v)) = traffic {
                workload[if rate { "requestRate" } else { "concurrency" }] = json!(v);
            }
            intent["workload"] = workload;
            if let Some((e2e, a, b)) = latency {
                intent["sla"] = if e2e { json!({"e2eLatency": a}) } else { json!({"ttft": a, "itl": b}) };
            }
            let mut value = with(base(), INTENT, intent);
            value["spec"]["engine"]["type"] = json!(engine);
            value["metadata"]["annotations"] = json!({"airunway.ai/dynamo-attempt": attempt});
            let md = md(value);
            let checked = spec::validate(&md).unwrap().unwrap();
            let request = request::render(&md, &checked);
            prop_assert_eq!(DGDR.errors(&request), Vec::<String>::new());
            let name = request["metadata"]["name"].as_str().unwrap();
            prop_assert!(name.len() <= 32);
        }
    }
}

#[test]
fn the_graph_a_request_created_is_deleted_with_the_deployment() {
    use crate::DynamoProvider;
    use airunway_api::provider::Provider;
    let mut value = base();
    assert!(
        DynamoProvider
            .created_upstream(&md(value.clone()))
            .is_empty()
    );
    value["status"] = json!({"provider": {"name": "dynamo", "workloadRef": {
        "apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeployment",
        "name": "qwen-dgd", "namespace": "ns", "uid": "g-1"}}});
    assert_eq!(DynamoProvider.created_upstream(&md(value)), ["qwen-dgd"]);
}
