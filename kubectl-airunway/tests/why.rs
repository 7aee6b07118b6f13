//! The `why` and `providers` reports, built from fixtures of the objects as the API server
//! returns them: a Running deployment, one Pending on an unregistered provider, one no provider
//! is compatible with, and one not ready for lack of capacity (with its Pod).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kubectl_airunway::why::{self, Inputs, Report};
use serde_json::Value;

/// 2026-01-01T00:00:30Z: the fixtures' heartbeats are 30 s and 10 m 30 s old.
fn now() -> jiff::Timestamp {
    "2026-01-01T00:00:30Z".parse().unwrap()
}

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn inputs(fixture: &Value) -> Inputs {
    Inputs {
        deployment: fixture["deployment"].clone(),
        provider: fixture.get("provider").cloned(),
        upstream: fixture["upstream"].as_array().cloned().unwrap_or_default(),
        source: fixture.get("source").cloned(),
    }
}

fn report(name: &str) -> Report {
    why::build(&inputs(&fixture(name)), now())
}

#[test]
fn running_shows_the_decision_a_healthy_provider_and_the_upstream_objects() {
    let report = report("running");
    assert!(report.running());
    assert_eq!(
        (report.namespace.as_str(), report.name.as_str()),
        ("team-a", "qwen")
    );
    assert_eq!(report.decision.engine.as_deref(), Some("vllm"));
    assert_eq!(report.decision.provider.as_deref(), Some("vllm"));
    assert_eq!(report.decision.resource.as_deref(), Some("Deployment/qwen"));
    let provider = report.provider.clone().unwrap();
    assert_eq!(provider.state, "healthy");
    assert_eq!(provider.heartbeat_age_seconds, Some(30));
    assert_eq!(
        report
            .upstream
            .iter()
            .map(|u| format!("{}/{} {}", u.kind, u.name, u.state))
            .collect::<Vec<_>>(),
        ["Deployment/qwen Available=True", "Service/qwen -"]
    );
    assert!(report.not_ready.is_none());
    let human = report.human();
    for expected in [
        "Phase:      Running",
        "Provider:   vllm (explicit provider selection)",
        "Health:     vllm: healthy, heartbeat 30s ago, version 0.1.0",
        "Deployment  qwen  Available=True",
        "Decision:   ProviderSelected=True ExplicitSelection: Provider explicitly specified in spec",
    ] {
        assert!(human.contains(expected), "{expected:?} not in\n{human}");
    }
}

#[test]
fn pending_on_an_unregistered_provider_says_so() {
    let report = report("pending_no_provider");
    assert!(!report.running());
    assert_eq!(report.phase, "Pending");
    let provider = report.provider.clone().unwrap();
    assert!(!provider.registered);
    assert_eq!(provider.state, "not registered");
    assert!(report.upstream.is_empty());
    let human = report.human();
    assert!(
        human.contains("Health:     nobody: not registered"),
        "{human}"
    );
    assert!(
        human.contains("ProviderHealthy   False   ProviderNotRegistered"),
        "{human}"
    );
}

#[test]
fn incompatible_carries_the_selection_message_naming_each_provider() {
    let report = report("incompatible");
    assert_eq!(report.phase, "Failed");
    assert!(report.decision.provider.is_none());
    assert!(report.provider.is_none());
    let selected = report.decision.provider_selected.clone().unwrap();
    assert_eq!(
        (selected.status.as_str(), selected.reason.as_str()),
        ("False", "SelectionFailed")
    );
    let human = report.human();
    assert!(human.contains("Provider:   none"), "{human}");
    assert!(
        human.contains(
            "vllm: engine sglang not offered; kaito: disaggregated serving not supported"
        ),
        "{human}"
    );
}

#[test]
fn not_ready_follows_the_reason_to_its_pod_and_a_stale_provider() {
    let report = report("not_ready");
    let chain = report.not_ready.clone().unwrap();
    assert_eq!(chain.reason, "InsufficientCapacity");
    let source = chain.source.unwrap();
    assert_eq!(
        (source.kind.as_str(), source.name.as_str(), source.found),
        ("Pod", "hungry-5d9c-abcde", true)
    );
    assert_eq!(
        source.details,
        [
            "PodScheduled=False Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu",
            "container vllm waiting: ContainerCreating",
        ]
    );
    let provider = report.provider.clone().unwrap();
    assert_eq!(provider.state, "stale");
    assert_eq!(provider.heartbeat_age_seconds, Some(630));
    let human = report.human();
    assert!(
        human.contains("Health:     vllm: stale, heartbeat 10m ago"),
        "{human}"
    );
    assert!(
        human.contains("  from:     Pod/hungry-5d9c-abcde"),
        "{human}"
    );
    // The machine forms carry the same report.
    let json: Value = serde_json::to_value(&report).unwrap();
    assert_eq!(json["notReady"]["source"]["kind"], "Pod");
    assert_eq!(json["provider"]["state"], "stale");
}

#[test]
fn a_source_that_is_gone_is_marked_not_found() {
    let mut inputs = inputs(&fixture("not_ready"));
    inputs.source = None;
    let report = why::build(&inputs, now());
    let source = report.not_ready.unwrap().source.unwrap();
    assert!(!source.found && source.details.is_empty());
}

#[test]
fn providers_count_the_deployments_each_serves() {
    let running = fixture("running");
    let not_ready = fixture("not_ready");
    let ipcs = vec![
        running["provider"].clone(),
        serde_json::json!({"metadata": {"name": "kaito"},
                           "spec": {"capabilities": {"engines": [{"name": "vllm"}, "llamacpp"]}},
                           "status": {"ready": false}}),
    ];
    let deployments = vec![
        running["deployment"].clone(),
        not_ready["deployment"].clone(),
        fixture("incompatible")["deployment"].clone(),
    ];
    let rows = why::provider_rows(&ipcs, &deployments, now());
    assert_eq!(
        rows.iter()
            .map(|r| (
                r.health.name.as_str(),
                r.health.state.as_str(),
                r.deployments
            ))
            .collect::<Vec<_>>(),
        [("kaito", "not ready", 0), ("vllm", "healthy", 2)]
    );
    assert_eq!(rows[0].engines, ["vllm", "llamacpp"]);
    let table = why::providers_table(&rows);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("NAME   STATE      READY  HEARTBEAT"),
        "{table}"
    );
    assert!(
        lines[2].contains("vllm") && lines[2].ends_with("2"),
        "{table}"
    );
}

#[test]
fn ages_read_as_kubectl_prints_them() {
    assert_eq!(
        [5, 119, 120, 7199, 7200, 172_800].map(why::age),
        ["5s", "119s", "2m", "119m", "2h", "2d"].map(String::from)
    );
}
