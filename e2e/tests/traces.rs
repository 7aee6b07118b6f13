//! Traces, proven against a real trace receiver: a minimal OpenTelemetry Collector built from
//! its Go module (`e2e/go/otelcol`: the OTLP receiver and the debug exporter) receives OTLP/gRPC
//! from the real core and a real SDK provider (the example `configmap-provider`: the reconcile
//! and its spans are the SDK's, the same in every provider) on the real control plane. The test
//! reads the spans back and checks one trace per reconcile, the deployment key, the decision
//! (engine, provider, reasons), the status and upstream applies, and the provider's reconcile
//! linked to the core's decision through `status.provider.traceparent`
//! (docs/observability.md "Traces").
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use airunway_api::constants::traces;
use airunway_api::runtime::trace_context;
use airunway_api::v1alpha1::{InferenceProviderConfig, ModelDeployment, Phase};
use airunway_e2e::stack::{self, FAST_HEALTH};
use airunway_e2e::traces::{Collector, ExportedSpan};
use airunway_e2e::wait::{eventually, wait_for};
use airunway_e2e::{TestEnv, cluster_lock};
use kube::api::{Api, PostParams};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);
const CORE_SERVICE: &str = "airunway-core-traces-e2e";
const PROVIDER_SERVICE: &str = "configmap-provider";
/// kube-runtime's span around each reconcile (`kube_runtime::controller`).
const KUBE_RECONCILE_SPAN: &str = "reconciling object";

fn find(spans: &[ExportedSpan], what: impl Fn(&ExportedSpan) -> bool) -> Option<&ExportedSpan> {
    spans.iter().find(|s| what(s))
}

#[tokio::test]
async fn reconcile_traces_reach_a_real_collector_with_the_decision_linked_to_the_provider() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("traces").await;
    airunway_e2e::providers::delete_all(&env.client).await;
    let started = Instant::now();
    let collector = Collector::start(
        &env.control_plane
            .dir
            .join(format!("otelcol-{}", env.namespace)),
    )
    .await
    .unwrap();
    eprintln!(
        "collector ready in {:.1}s at {}",
        started.elapsed().as_secs_f64(),
        collector.endpoint
    );
    // The standard variables only; a short batch delay so the test does not wait 5 s a batch.
    let otel = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "200"),
        ("OTEL_TRACES_SAMPLER", "always_on"),
    ];
    let mut core_env = otel.to_vec();
    core_env.push(("OTEL_SERVICE_NAME", CORE_SERVICE));
    let _core = stack::start_core_with_env(
        &env,
        &env.control_plane.kubeconfig,
        &FAST_HEALTH,
        "core",
        &core_env,
    )
    .await;
    let identity = stack::service_account_identity(
        &env,
        "examples/configmap-provider/deploy/rbac.yaml",
        "configmap-provider",
    )
    .await;
    let _provider = stack::start_provider_with_env(
        &env,
        "configmap-provider",
        &identity,
        &["--heartbeat-interval=1s"],
        "configmap-0",
        &otel,
    )
    .await;
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, "configmap", WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;

    // The provider is chosen by the core's selection (no provider named in the spec).
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let md: ModelDeployment = serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "chat"},
        "spec": {"model": {"id": "example/chat"}, "engine": {"type": "llamacpp"}}}))
    .unwrap();
    mds.create(&PostParams::default(), &md).await.unwrap();
    let md = wait_for(&mds, "chat", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    let key = format!("{}/chat", env.namespace);
    let provider_status = md.status.clone().unwrap().provider.unwrap();
    assert_eq!(provider_status.name.as_deref(), Some("configmap"));
    let selected_reason = provider_status.selected_reason.clone().unwrap();
    // The core wrote its decision's context with the selection, in the W3C format.
    let traceparent = provider_status
        .traceparent
        .clone()
        .expect("status.provider.traceparent written with the selection");
    let decision = trace_context::parse(&traceparent)
        .unwrap_or_else(|| panic!("{traceparent:?} is not a W3C traceparent"));
    let decision_trace = decision.trace_id().to_string();
    let decision_span = decision.span_id().to_string();

    let spans = eventually(
        "the core's decision and the provider's linked reconcile at the collector",
        WAIT,
        || async {
            let spans = collector.spans();
            // The decision, and its parent: the core's reconcile span ends (and is exported)
            // after the decision within it, so it may arrive a batch later.
            let decided = find(&spans, |s| s.id == decision_span)
                .is_some_and(|d| find(&spans, |s| s.id == d.parent_id).is_some());
            let linked = find(&spans, |s| {
                s.service == PROVIDER_SERVICE
                    && s.name == traces::RECONCILE_SPAN
                    && s.links
                        .iter()
                        .any(|(t, i)| *t == decision_trace && *i == decision_span)
            })
            .is_some();
            if decided && linked {
                Ok(spans)
            } else {
                Err(format!(
                    "{} spans so far (decision and its parent seen: {decided}, linked provider reconcile seen: {linked}); collector log:\n{}",
                    spans.len(),
                    collector.log_tail(10)
                ))
            }
        },
    )
    .await;
    eprintln!(
        "{} spans received; decision and linked provider reconcile after {:.1}s",
        spans.len(),
        started.elapsed().as_secs_f64()
    );

    // The decision: named, in the core's trace, with engine, provider and their reasons.
    let decide = find(&spans, |s| s.id == decision_span).unwrap();
    assert_eq!(decide.service, CORE_SERVICE, "OTEL_SERVICE_NAME names it");
    assert_eq!(decide.name, traces::DECIDE_SPAN);
    assert_eq!(decide.trace_id, decision_trace);
    assert_eq!(decide.attribute(traces::ENGINE), Some("llamacpp"));
    assert!(
        decide
            .attribute(traces::ENGINE_REASON)
            .is_some_and(|r| !r.is_empty()),
        "{decide:?}"
    );
    assert_eq!(decide.attribute(traces::PROVIDER), Some("configmap"));
    assert_eq!(
        decide.attribute(traces::PROVIDER_REASON),
        Some(selected_reason.as_str())
    );
    // Its parent: the core's reconcile span of this deployment, in the same trace.
    let core_reconcile = find(&spans, |s| s.id == decide.parent_id).unwrap_or_else(|| {
        panic!(
            "the decision's parent {} was not received",
            decide.parent_id
        )
    });
    assert_eq!(core_reconcile.name, traces::RECONCILE_SPAN);
    assert_eq!(core_reconcile.trace_id, decision_trace);
    assert_eq!(
        core_reconcile.attribute(traces::DEPLOYMENT),
        Some(key.as_str())
    );
    assert_eq!(
        core_reconcile.attribute(traces::COMPONENT),
        Some(traces::CORE_COMPONENT)
    );
    // Each trace's root: kube-runtime's span around the reconcile (no span of ours encloses
    // the controllers, so every reconcile is a trace of its own).
    let core_root = find(&spans, |s| s.id == core_reconcile.parent_id)
        .unwrap_or_else(|| panic!("the parent of {core_reconcile:?} was not received"));
    assert_eq!(core_root.name, KUBE_RECONCILE_SPAN);
    assert_eq!(core_root.parent_id, "", "{core_root:?} is not a root");
    // The status apply that carried the decision: a sibling of the decision.
    let apply_status = find(&spans, |s| {
        s.name == traces::APPLY_STATUS_SPAN && s.parent_id == core_reconcile.id
    })
    .unwrap_or_else(|| panic!("no {} under {core_reconcile:?}", traces::APPLY_STATUS_SPAN));
    assert_eq!(apply_status.trace_id, decision_trace);

    // The provider's reconcile: a trace of its own, linked to the decision.
    let provider_reconcile = find(&spans, |s| {
        s.service == PROVIDER_SERVICE
            && s.name == traces::RECONCILE_SPAN
            && s.links
                .iter()
                .any(|(t, i)| *t == decision_trace && *i == decision_span)
    })
    .unwrap();
    assert_ne!(provider_reconcile.trace_id, decision_trace);
    assert_eq!(
        provider_reconcile.attribute(traces::DEPLOYMENT),
        Some(key.as_str())
    );
    assert_eq!(
        provider_reconcile.attribute(traces::COMPONENT),
        Some("configmap")
    );
    let provider_root = find(&spans, |s| s.id == provider_reconcile.parent_id)
        .unwrap_or_else(|| panic!("the parent of {provider_reconcile:?} was not received"));
    assert_eq!(provider_root.name, KUBE_RECONCILE_SPAN);
    assert_eq!(provider_root.parent_id, "");
    // The upstream apply that created the ConfigMap: in a provider reconcile trace of this
    // deployment, under its reconcile span.
    let apply = find(&spans, |s| {
        s.service == PROVIDER_SERVICE
            && s.name == traces::APPLY_SPAN
            && s.attribute(traces::UPSTREAM_WRITE) == Some(traces::WRITE_CREATE)
    })
    .unwrap_or_else(|| panic!("no creating {} span received", traces::APPLY_SPAN));
    assert_eq!(apply.attribute(traces::UPSTREAM_KIND), Some("ConfigMap"));
    assert_eq!(apply.attribute(traces::UPSTREAM_NAME), Some("chat"));
    let apply_parent = find(&spans, |s| s.id == apply.parent_id)
        .unwrap_or_else(|| panic!("the apply's parent {} was not received", apply.parent_id));
    assert_eq!(apply_parent.name, traces::RECONCILE_SPAN);
    assert_eq!(apply_parent.service, PROVIDER_SERVICE);
    assert_eq!(apply_parent.trace_id, apply.trace_id);
    assert_eq!(
        apply_parent.attribute(traces::DEPLOYMENT),
        Some(key.as_str())
    );

    // One trace per reconcile: no two reconcile spans of a service share a trace.
    let reconciles: Vec<&ExportedSpan> = spans
        .iter()
        .filter(|s| s.name == traces::RECONCILE_SPAN)
        .collect();
    for (i, a) in reconciles.iter().enumerate() {
        for b in &reconciles[i + 1..] {
            assert!(
                a.trace_id != b.trace_id,
                "two reconciles in one trace: {a:?} and {b:?}"
            );
        }
    }
    eprintln!(
        "{} reconcile traces ({} of the core, {} of the provider)",
        reconciles.len(),
        reconciles
            .iter()
            .filter(|s| s.service == CORE_SERVICE)
            .count(),
        reconciles
            .iter()
            .filter(|s| s.service == PROVIDER_SERVICE)
            .count()
    );
}
