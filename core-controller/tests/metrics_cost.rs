//! What the core's per-deployment metrics cost (docs/observability.md, "Cost at 10,000
//! deployments"): for N generated deployments in the watch cache, the bytes of one scrape's
//! exposition, the allocations one scrape makes (all freed when it ends), its time, and the
//! memory the core keeps between scrapes for the ready-duration histogram (the set of
//! deployments seen `Running`). Prints the figures; asserts they stay linear and bounded.
//!
//! `cargo test -p airunway-core --test metrics_cost -- --nocapture` (debug build: the time is
//! an upper bound of the release binary's).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]
// A counting allocator needs `unsafe impl GlobalAlloc`; it only forwards to the system's.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use airunway_api::metric_names::PREFIX;
use airunway_api::v1alpha1::ModelDeployment;
use airunway_core::metrics::{CoreMetrics, DeploymentCollector};
use kube::runtime::reflector;
use kube::runtime::watcher::Event;
use prometheus_client::registry::Registry;
use serde_json::json;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static ALLOCATED: AtomicU64 = AtomicU64::new(0);
static FREED: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        ALLOCATED.fetch_add(layout.size() as u64, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        FREED.fetch_add(layout.size() as u64, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// (allocations, bytes allocated, bytes freed) so far.
fn counters() -> (u64, u64, u64) {
    (
        ALLOCATIONS.load(Ordering::Relaxed),
        ALLOCATED.load(Ordering::Relaxed),
        FREED.load(Ordering::Relaxed),
    )
}

const PHASES: [&str; 4] = ["Running", "Deploying", "Pending", "Failed"];
const PROVIDERS: [&str; 4] = ["kaito", "dynamo", "kuberay", "llmd"];

/// Deployment `i` of a fleet: 100 namespaces, names as long as a team's usual ones, every
/// phase and provider, replicas reported.
fn deployment(i: usize) -> ModelDeployment {
    serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": format!("llama-3-1-8b-instruct-{i:05}"), "namespace": format!("team-{:03}", i % 100),
            "uid": format!("0b1d8f0e-6a7c-4c52-9d1e-{i:012}"), "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"model": {"id": "meta-llama/Llama-3.1-8B-Instruct"}},
        "status": {"phase": PHASES[i % 4], "provider": {"name": PROVIDERS[i % 4]},
            "replicas": {"desired": 2, "ready": 2, "available": 2}}}))
    .unwrap()
}

struct Figures {
    exposition_bytes: usize,
    allocations: u64,
    allocated: u64,
    seconds: f64,
    kept_bytes: u64,
}

fn measure(n: usize) -> Figures {
    let (store, mut writer) = reflector::store();
    let mut registry = Registry::with_prefix(PREFIX);
    let metrics = CoreMetrics::register(&mut registry);
    for i in 0..n {
        let event = Event::Apply(deployment(i));
        metrics.observe_watch(&event, &store);
        writer.apply_watcher_event(&event);
    }
    // What the watch keeps per deployment seen Running (the ready-duration set), measured on
    // its own: the same events through fresh metrics, net of what each call freed.
    let kept_bytes = {
        let (fresh_store, mut fresh_writer) = reflector::store();
        let mut fresh_registry = Registry::with_prefix(PREFIX);
        let fresh = CoreMetrics::register(&mut fresh_registry);
        let events: Vec<Event<ModelDeployment>> =
            (0..n).map(|i| Event::Apply(deployment(i))).collect();
        let mut kept = 0u64;
        for event in &events {
            let (_, a0, f0) = counters();
            fresh.observe_watch(event, &fresh_store);
            let (_, a1, f1) = counters();
            kept += (a1 - a0).saturating_sub(f1 - f0);
            fresh_writer.apply_watcher_event(event);
        }
        kept
    };
    registry.register_collector(Box::new(DeploymentCollector::new(store)));
    // One scrape to warm up, then the measured one.
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    let mut text = String::with_capacity(text.len());
    let (c0, a0, _) = counters();
    let started = Instant::now();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    let seconds = started.elapsed().as_secs_f64();
    let (c1, a1, _) = counters();
    Figures {
        exposition_bytes: text.len(),
        allocations: c1 - c0,
        allocated: a1 - a0,
        seconds,
        kept_bytes,
    }
}

#[test]
fn per_deployment_series_cost_is_linear_and_bounded() {
    let mut per_deployment = Vec::new();
    for n in [100usize, 1_000, 10_000] {
        let f = measure(n);
        println!(
            "{n:>6} deployments: exposition {} bytes ({:.0} per deployment), one scrape allocates {} bytes in {} allocations ({:.0} bytes per deployment, freed when it ends), {:.1} ms (debug build); kept between scrapes {} bytes ({:.0} per deployment)",
            f.exposition_bytes,
            f.exposition_bytes as f64 / n as f64,
            f.allocated,
            f.allocations,
            f.allocated as f64 / n as f64,
            f.seconds * 1000.0,
            f.kept_bytes,
            f.kept_bytes as f64 / n as f64,
        );
        per_deployment.push((
            f.exposition_bytes as f64 / n as f64,
            f.allocated as f64 / n as f64,
            f.kept_bytes as f64 / n as f64,
        ));
    }
    let (exposition, allocated, kept) = per_deployment[2];
    // One phase line and three replica lines of about 100 bytes each, plus the aggregates.
    assert!(
        exposition < 600.0,
        "{exposition} bytes of exposition per deployment"
    );
    assert!(
        allocated < 2_000.0,
        "{allocated} bytes allocated per deployment per scrape"
    );
    assert!(kept < 200.0, "{kept} bytes kept per deployment");
    // Linear: the cost per deployment at 10,000 is within 50% of the one at 1,000.
    let (exposition_1k, allocated_1k, _) = per_deployment[1];
    assert!(exposition < exposition_1k * 1.5 && allocated < allocated_1k * 1.5);
}
