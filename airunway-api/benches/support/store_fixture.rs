//! What the store memory benchmark (`benches/store_memory.rs`) and its CI short form
//! (`tests/store_memory.rs`) share: generated ModelDeployments as the API server lists them,
//! the stores the controllers keep of them, and an allocator wrapper that counts live bytes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use airunway_api::cache_trim;
use airunway_api::guarded_decode::decode;
use airunway_api::kube::runtime::reflector::store::Writer;
use airunway_api::kube::runtime::watcher::Event;
use airunway_api::v1alpha1::ModelDeployment;
use serde_json::json;

/// Bytes currently allocated through [`Counting`].
static LIVE: AtomicIsize = AtomicIsize::new(0);

/// The system allocator, counting the bytes it holds.
pub struct Counting;

// The one unsafe code of the workspace outside dependencies, in benchmark and test code only: a
// live-bytes figure needs the global allocator hook, and divan's profiler exposes no counters.
// SAFETY: every call is forwarded to `System` unchanged; only a counter is updated beside it.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's pointer, layout and size.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        p
    }
}

/// Bytes live now.
pub fn live_bytes() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// The provider that serves every other generated deployment.
pub const PROVIDER: &str = "kaito";

/// Deployment `i` as the API server lists it after a `kubectl apply`, the core's selection and
/// a provider's reconcile: identity, labels, the last-applied copy of the spec, four
/// `managedFields` entries (kubectl's spec, the core's and the provider's status, the
/// provider's finalizer), a GPU vLLM spec, and a Running status with six conditions. Even
/// deployments are assigned to [`PROVIDER`], odd ones to another.
pub fn deployment_text(i: usize) -> String {
    let provider = if i.is_multiple_of(2) {
        PROVIDER
    } else {
        "dynamo"
    };
    let name = format!("bench-{i:05}");
    let spec = json!({
        "model": {"id": format!("Qwen/Qwen3-{}B", i % 7 + 1), "servedName": name},
        "engine": {"type": "vllm", "contextLength": 8192},
        "resources": {"gpu": {"count": 1}, "cpu": "4", "memory": "16Gi"},
        "scaling": {"replicas": 1},
        "provider": {"name": provider},
    });
    let time = "2026-11-27T12:00:00Z";
    let condition = |t: &str, reason: &str, message: &str| {
        json!({"type": t, "status": "True", "reason": reason, "message": message,
            "lastTransitionTime": time, "observedGeneration": 1})
    };
    let manager = format!("{provider}-provider");
    json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {
            "name": name, "namespace": format!("bench-{}", i % 10),
            "uid": format!("6f1c2d3e-4b5a-4c6d-8e7f-{i:012}"),
            "resourceVersion": format!("{}", 100_000 + i * 3), "generation": 1,
            "creationTimestamp": time,
            "labels": {"app.kubernetes.io/name": name, "airunway.ai/bench": "true"},
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration":
                    json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
                        "metadata": {"name": name, "namespace": format!("bench-{}", i % 10)},
                        "spec": spec}).to_string(),
            },
            "finalizers": [format!("airunway.ai/{provider}-provider")],
            "managedFields": [
                {"manager": "kubectl-client-side-apply", "operation": "Update",
                    "apiVersion": "airunway.ai/v1alpha1", "time": time, "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:annotations": {".": {},
                        "f:kubectl.kubernetes.io/last-applied-configuration": {}},
                        "f:labels": {".": {}, "f:app.kubernetes.io/name": {}, "f:airunway.ai/bench": {}}},
                    "f:spec": {".": {}, "f:engine": {".": {}, "f:type": {}, "f:contextLength": {}},
                        "f:model": {".": {}, "f:id": {}, "f:servedName": {}},
                        "f:provider": {".": {}, "f:name": {}}, "f:scaling": {".": {}, "f:replicas": {}},
                        "f:resources": {".": {}, "f:cpu": {}, "f:memory": {}, "f:gpu": {".": {}, "f:count": {}}}}}},
                {"manager": "airunway-core", "operation": "Apply", "subresource": "status",
                    "apiVersion": "airunway.ai/v1alpha1", "time": time, "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {"f:engine": {"f:type": {}, "f:selectedReason": {}},
                        "f:message": {}, "f:observedGeneration": {}, "f:phase": {},
                        "f:provider": {"f:name": {}, "f:selectedReason": {}},
                        "f:conditions": {
                            "k:{\"type\":\"Validated\"}": {".": {}, "f:type": {}, "f:status": {}, "f:reason": {}, "f:message": {}, "f:lastTransitionTime": {}, "f:observedGeneration": {}},
                            "k:{\"type\":\"EngineSelected\"}": {".": {}, "f:type": {}, "f:status": {}, "f:reason": {}, "f:message": {}, "f:lastTransitionTime": {}, "f:observedGeneration": {}},
                            "k:{\"type\":\"ProviderSelected\"}": {".": {}, "f:type": {}, "f:status": {}, "f:reason": {}, "f:message": {}, "f:lastTransitionTime": {}, "f:observedGeneration": {}}}}}},
                {"manager": manager, "operation": "Apply", "subresource": "status",
                    "apiVersion": "airunway.ai/v1alpha1", "time": time, "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {"f:endpoint": {"f:service": {}, "f:port": {}},
                        "f:replicas": {"f:desired": {}, "f:ready": {}, "f:available": {}},
                        "f:provider": {"f:resourceName": {}},
                        "f:conditions": {
                            "k:{\"type\":\"ProviderCompatible\"}": {".": {}, "f:type": {}, "f:status": {}, "f:reason": {}, "f:message": {}, "f:lastTransitionTime": {}, "f:observedGeneration": {}},
                            "k:{\"type\":\"ResourceCreated\"}": {".": {}, "f:type": {}, "f:status": {}, "f:reason": {}, "f:message": {}, "f:lastTransitionTime": {}, "f:observedGeneration": {}},
                            "k:{\"type\":\"Ready\"}": {".": {}, "f:type": {}, "f:status": {}, "f:reason": {}, "f:message": {}, "f:lastTransitionTime": {}, "f:observedGeneration": {}}}}}},
                {"manager": manager, "operation": "Update",
                    "apiVersion": "airunway.ai/v1alpha1", "time": time, "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:finalizers": {".": {},
                        format!("v:\"airunway.ai/{provider}-provider\""): {}}}}},
            ],
        },
        "spec": spec,
        "status": {
            "phase": "Running", "message": "Deployment is ready", "observedGeneration": 1,
            "provider": {"name": provider, "selectedReason": "explicit provider selection",
                "resourceName": name},
            "engine": {"type": "vllm", "selectedReason": "explicit engine selection"},
            "replicas": {"desired": 1, "ready": 1, "available": 1},
            "endpoint": {"service": name, "port": 8000},
            "conditions": [
                condition("Validated", "ValidationPassed", "Spec validation passed"),
                condition("EngineSelected", "EngineSelected", "Engine vllm selected"),
                condition("ProviderSelected", "ProviderSelected", "Provider selected explicitly"),
                condition("ProviderCompatible", "CompatibilityVerified", "Configuration compatible"),
                condition("ResourceCreated", "ResourceCreated", "Upstream resource created"),
                condition("Ready", "DeploymentReady", "Deployment is ready"),
            ],
        },
    })
    .to_string()
}

/// Who keeps the store.
#[derive(Clone, Copy, Debug)]
pub enum Keeper {
    /// The core ([`cache_trim::keep_status_ownership`]).
    Core,
    /// A provider serving half the deployments ([`cache_trim::provider_deployment`], and of
    /// the events only those of deployments it serves:
    /// [`cache_trim::provider_deployment_event`]).
    Provider,
    /// Nobody trims (what a store of the objects as listed would hold).
    Untrimmed,
}

/// A reflector store of the deployments in `texts`, each decoded as the watches decode it
/// ([`decode`]) and trimmed as `keeper` trims it.
pub fn store(texts: &[String], keeper: Keeper) -> Writer<ModelDeployment> {
    let mut writer = Writer::<ModelDeployment>::default();
    writer.apply_watcher_event(&Event::Init);
    for text in texts {
        let Ok(mut md) = decode::<ModelDeployment>(text).into_valid() else {
            continue;
        };
        match keeper {
            Keeper::Core => cache_trim::keep_status_ownership(&mut md.metadata),
            Keeper::Provider => cache_trim::provider_deployment(&mut md, PROVIDER),
            Keeper::Untrimmed => {}
        }
        let event = match keeper {
            // A provider's store holds only what it serves (the runner filters before it
            // trims; the order changes nothing stored).
            Keeper::Provider => {
                cache_trim::provider_deployment_event(Event::InitApply(md), PROVIDER, |_| false)
            }
            Keeper::Core | Keeper::Untrimmed => Some(Event::InitApply(md)),
        };
        if let Some(event) = event {
            writer.apply_watcher_event(&event);
        }
    }
    writer.apply_watcher_event(&Event::InitDone);
    writer
}

/// Bytes a store of `n` generated deployments kept by `keeper` holds, per deployment.
pub fn bytes_per_deployment(n: usize, keeper: Keeper) -> f64 {
    let texts: Vec<String> = (0..n).map(deployment_text).collect();
    let before = live_bytes();
    let writer = store(&texts, keeper);
    let held = live_bytes() - before;
    let expected = match keeper {
        Keeper::Provider => n.div_ceil(2),
        Keeper::Core | Keeper::Untrimmed => n,
    };
    assert_eq!(
        writer.as_reader().len(),
        expected,
        "every deployment kept is stored"
    );
    drop(writer);
    held as f64 / n as f64
}
