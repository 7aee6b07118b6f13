//! Every YAML example of the design doc (§4.1, §4.2 examples 1–3 and their statuses, §3.9, §3.4),
//! with the group read as `airunway.ai`, parses into the types and serialises back unchanged.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airunway_api::v1alpha1::{
    EngineCapabilityEntry, EngineType, InferenceProviderConfig, ModelDeployment,
    ModelDeploymentStatus, Phase, ServingMode,
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

/// Loads a fixture; the status-only examples are written as `status: {...}`, so their inner
/// object is returned.
fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/design-doc/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let value: Value = serde_saphyr::from_str(&text).unwrap();
    if name.starts_with("status-") {
        value["status"].clone()
    } else {
        value
    }
}

/// Parses `value` as `T` and asserts that serialising it gives back exactly `value`.
fn round_trip<T: DeserializeOwned + Serialize>(name: &str) -> T {
    let original = fixture(name);
    let typed: T = serde_json::from_value(original.clone())
        .unwrap_or_else(|e| panic!("{name} does not parse: {e}"));
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(
        back, original,
        "{name} lost or changed fields in a round trip"
    );
    typed
}

#[test]
fn full_model_deployment_of_section_4_1() {
    let md: ModelDeployment = round_trip("modeldeployment-4.1.yaml");
    assert_eq!(md.spec.explicit_engine(), Some(EngineType::Vllm));
    assert_eq!(
        md.spec.engine.as_ref().and_then(|e| e.trust_remote_code),
        Some(false)
    );
    assert_eq!(
        md.spec.image.as_deref(),
        Some(""),
        "an explicit empty string survives"
    );
    assert_eq!(
        md.spec.env.as_deref().map(<[_]>::len),
        Some(0),
        "an explicit empty list survives"
    );
    assert!(!md.is_reconcile_paused());
    let status = md.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Running));
    assert_eq!(status.conditions.unwrap().len(), 5);
}

#[test]
fn example_1_gpu_vllm() {
    let md: ModelDeployment = round_trip("modeldeployment-example1.yaml");
    assert!(md.spec.gpu_requested());
    assert_eq!(
        md.spec.secrets.unwrap().hugging_face_token.as_deref(),
        Some("hf-token")
    );
    round_trip::<ModelDeploymentStatus>("status-example1.yaml");
}

#[test]
fn example_2_cpu_llamacpp_keeps_explicit_zero() {
    let md: ModelDeployment = round_trip("modeldeployment-example2.yaml");
    assert_eq!(
        md.spec
            .resources
            .as_ref()
            .and_then(|r| r.gpu.as_ref())
            .and_then(|g| g.count),
        Some(0)
    );
    assert!(!md.spec.gpu_requested());
    round_trip::<ModelDeploymentStatus>("status-example2.yaml");
}

#[test]
fn example_3_disaggregated_with_overrides() {
    let md: ModelDeployment = round_trip("modeldeployment-example3.yaml");
    assert_eq!(md.spec.serving_mode(), ServingMode::Disaggregated);
    assert!(md.spec.gpu_requested());
    let overrides = md.spec.provider.and_then(|p| p.overrides).unwrap();
    assert_eq!(
        overrides.get("routerMode").and_then(Value::as_str),
        Some("kv")
    );
    let status: ModelDeploymentStatus = round_trip("status-example3.yaml");
    assert_eq!(status.replicas.and_then(|r| r.desired), Some(6));
}

#[test]
fn provider_config_of_section_3_9() {
    let ipc: InferenceProviderConfig = round_trip("ipc-3.9.yaml");
    let capabilities = ipc.spec.capabilities.unwrap();
    assert!(matches!(
        capabilities.engines.as_deref(),
        Some([
            EngineCapabilityEntry::Name(EngineType::Vllm),
            EngineCapabilityEntry::Name(EngineType::Llamacpp)
        ])
    ));
    let expanded = capabilities.engine_capabilities();
    assert_eq!(expanded.len(), 2);
    assert!(expanded.iter().all(|e| e.cpu_support && e.gpu_support));
    assert!(
        expanded
            .iter()
            .all(|e| e.serving_modes == vec![ServingMode::Aggregated])
    );
    assert_eq!(ipc.spec.selection_rules.unwrap().len(), 2);
    assert_eq!(
        ipc.status.unwrap().upstream_crd_version.as_deref(),
        Some("kaito.sh/v1alpha1")
    );
}

#[test]
fn status_of_section_3_4() {
    let status: ModelDeploymentStatus = round_trip("status-3.4.yaml");
    let provider = status.provider.unwrap();
    assert_eq!(
        provider.selected_reason.as_deref(),
        Some("matched capabilities: engine=vllm, gpu=true, mode=aggregated")
    );
}

#[test]
fn per_engine_capabilities_round_trip() {
    let value = serde_json::json!({
        "engines": [
            {"name": "vllm", "servingModes": ["aggregated"], "gpuSupport": true, "cpuSupport": false},
            {"name": "llamacpp", "servingModes": ["aggregated"], "gpuSupport": true, "cpuSupport": true}
        ]
    });
    let caps: airunway_api::v1alpha1::ProviderCapabilities =
        serde_json::from_value(value.clone()).unwrap();
    assert_eq!(serde_json::to_value(&caps).unwrap(), value);
    let expanded = caps.engine_capabilities();
    assert!(!expanded[0].cpu_support && expanded[1].cpu_support);
}
