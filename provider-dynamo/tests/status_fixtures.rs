//! Every entry of `conformance/status-fixtures.yaml` (the upstream status, and the phase and
//! Ready reason it must produce; the conformance suite reads the same file) through the
//! provider's real `translate_status` and `ProviderStatus::from_translation`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airunway_api::constants::{condition_types, reasons};
use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::desired::ProviderStatus;
use airunway_api::provider::{Provider, testing};
use airunway_api::serde_json::{self, Value, json};
use airunway_api::v1alpha1::{ConditionStatus, ModelDeployment, NotReadyReason};
use airunway_provider_dynamo::DynamoProvider;

/// One fixture, as the conformance suite reads it: `name`, `upstreamStatus`, `phase`, `reason`.
struct Fixture {
    name: String,
    upstream_status: Value,
    phase: String,
    reason: String,
}

fn fixtures(path: &str) -> Vec<Fixture> {
    let list: Vec<Value> = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    list.into_iter()
        .map(|f| {
            let text = |key: &str| {
                f[key]
                    .as_str()
                    .unwrap_or_else(|| panic!("{key}: {f}"))
                    .to_string()
            };
            Fixture {
                name: text("name"),
                phase: text("phase"),
                reason: text("reason"),
                upstream_status: f["upstreamStatus"].clone(),
            }
        })
        .collect()
}

#[test]
fn every_status_fixture_produces_its_phase_and_reason() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/conformance/status-fixtures.yaml"
    );
    let fixtures = fixtures(path);
    assert!(fixtures.len() >= 5, "{path}: {} fixtures", fixtures.len());
    let provider = DynamoProvider;
    let deployment: ModelDeployment = serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "m", "namespace": "ns", "uid": "u", "generation": 1},
        "spec": json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}}),
        "status": {"provider": {"name": "dynamo"}}}))
    .unwrap();
    // The object the provider created, as the operator holds it (generation 1).
    let mut base: Value = testing::upstream(
        env!("CARGO_MANIFEST_DIR"),
        "status-samples/dgd-v1beta1-pending.yaml",
    )
    .unwrap();
    base["metadata"]["generation"] = json!(1);
    let mut seen = std::collections::BTreeSet::new();
    for fixture in fixtures {
        assert!(
            seen.insert(fixture.name.clone()),
            "duplicate {}",
            fixture.name
        );
        assert!(
            fixture.reason == reasons::DEPLOYMENT_READY
                || NotReadyReason::parse(&fixture.reason).is_some(),
            "{}: {} is no NotReadyReason",
            fixture.name,
            fixture.reason
        );
        let mut object = base.clone();
        object["status"] = fixture.upstream_status;
        let live: DynamicObject = serde_json::from_value(object).unwrap();
        let translated = provider.translate_status(&deployment, &[Some(&live)]);
        let status = ProviderStatus::from_translation(
            provider.display_name(),
            ("m".to_string(), "DynamoGraphDeployment".to_string()),
            &translated,
        );
        let ready = status
            .conditions
            .iter()
            .find(|c| c.type_ == condition_types::READY)
            .unwrap();
        assert_eq!(status.phase.as_str(), fixture.phase, "{}", fixture.name);
        assert_eq!(ready.reason, fixture.reason, "{}", fixture.name);
        assert_eq!(
            ready.status == ConditionStatus::True,
            fixture.reason == reasons::DEPLOYMENT_READY,
            "{}",
            fixture.name
        );
        match &status.not_ready {
            Some(not_ready) => {
                assert_eq!(
                    not_ready.reason.as_str(),
                    fixture.reason,
                    "{}",
                    fixture.name
                );
                assert!(!not_ready.message.is_empty(), "{}", fixture.name);
            }
            None => assert_eq!(
                fixture.reason,
                reasons::DEPLOYMENT_READY,
                "{}",
                fixture.name
            ),
        }
    }
}
