//! What the store memory benchmark (`benches/store_memory.rs`) and its CI short form
//! (`tests/store_memory.rs`) share: generated ModelDeployments as the API server lists them,
//! the stores the controllers keep of them, and an allocator wrapper that counts live bytes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use airunway_api::cache_trim;
use airunway_api::compact_object::CompactObject;
use airunway_api::compact_resource::{CompactResource, compact_resource_event};
use airunway_api::guarded_decode::decode;
use airunway_api::kube::api::{ApiResource, DynamicObject};
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
    /// A provider serving half the deployments, as the SDK keeps them
    /// ([`cache_trim::provider_deployment`], and of the events only those of deployments it
    /// serves: [`cache_trim::provider_deployment_event`]), each held compactly
    /// ([`CompactResource`]).
    Provider,
    /// The same deployments as [`Keeper::Provider`], held as typed objects (what the SDK kept
    /// before session 46).
    ProviderTyped,
    /// Nobody trims (what a store of the objects as listed would hold).
    Untrimmed,
}

/// A store of deployments, typed or compact.
pub enum Held {
    /// Typed `ModelDeployment`s.
    Typed(Writer<ModelDeployment>),
    /// Compact ones.
    Compact(Writer<CompactResource<ModelDeployment>>),
}

impl Held {
    /// How many deployments the store holds.
    pub fn len(&self) -> usize {
        match self {
            Held::Typed(writer) => writer.as_reader().len(),
            Held::Compact(writer) => writer.as_reader().len(),
        }
    }
}

/// A reflector store of the deployments in `texts`, each decoded as the watches decode it
/// ([`decode`]) and trimmed and held as `keeper` does.
pub fn store(texts: &[String], keeper: Keeper) -> Held {
    let mut writer = Writer::<ModelDeployment>::default();
    let mut compact = Writer::<CompactResource<ModelDeployment>>::default();
    writer.apply_watcher_event(&Event::Init);
    compact.apply_watcher_event(&Event::Init);
    for text in texts {
        let Ok(mut md) = decode::<ModelDeployment>(text).into_valid() else {
            continue;
        };
        match keeper {
            Keeper::Core => cache_trim::keep_status_ownership(&mut md.metadata),
            Keeper::Provider | Keeper::ProviderTyped => {
                cache_trim::provider_deployment(&mut md, PROVIDER)
            }
            Keeper::Untrimmed => {}
        }
        let event = match keeper {
            // A provider's store holds only what it serves (the runner filters before it
            // trims; the order changes nothing stored).
            Keeper::Provider | Keeper::ProviderTyped => {
                cache_trim::provider_deployment_event(Event::InitApply(md), PROVIDER, |_| false)
            }
            Keeper::Core | Keeper::Untrimmed => Some(Event::InitApply(md)),
        };
        match (keeper, event) {
            (_, None) => {}
            (Keeper::Provider, Some(event)) => {
                if let Some(event) = compact_resource_event(event) {
                    compact.apply_watcher_event(&event);
                }
            }
            (_, Some(event)) => writer.apply_watcher_event(&event),
        }
    }
    writer.apply_watcher_event(&Event::InitDone);
    compact.apply_watcher_event(&Event::InitDone);
    match keeper {
        Keeper::Provider => Held::Compact(compact),
        _ => Held::Typed(writer),
    }
}

/// Bytes a store of `n` generated deployments kept by `keeper` holds, per deployment.
pub fn bytes_per_deployment(n: usize, keeper: Keeper) -> f64 {
    let texts: Vec<String> = (0..n).map(deployment_text).collect();
    let before = live_bytes();
    let writer = store(&texts, keeper);
    let held = live_bytes() - before;
    let expected = match keeper {
        Keeper::Provider | Keeper::ProviderTyped => n.div_ceil(2),
        Keeper::Core | Keeper::Untrimmed => n,
    };
    assert_eq!(writer.len(), expected, "every deployment kept is stored");
    drop(writer);
    held as f64 / n as f64
}

/// Upstream object `i` as a provider's watch lists it: a KubeRay `RayService` the KubeRay
/// provider rendered for deployment `i` (its labels, hashes and owner), with the status the
/// KubeRay operator writes while it serves (about 3.3 KB of JSON).
pub fn upstream_text(i: usize) -> String {
    let name = format!("bench-{i:05}");
    let time = "2026-11-27T12:00:00Z";
    let container = |role: &str, cpu: &str, memory: &str, gpu: bool| {
        let mut limits = json!({"cpu": cpu, "memory": memory});
        if gpu {
            limits["nvidia.com/gpu"] = json!("1");
        }
        json!({"name": format!("ray-{role}"), "image": "rayproject/ray-llm:2.43.0-py311-cu124",
            "resources": {"limits": limits, "requests": limits},
            "env": [{"name": "MODEL_ID", "value": format!("Qwen/Qwen3-{}B", i % 7 + 1)},
                {"name": "HF_HOME", "value": "/model-cache"}],
            "ports": [{"containerPort": 6379, "name": "gcs-server"},
                {"containerPort": 8265, "name": "dashboard"},
                {"containerPort": 8000, "name": "serve"}]})
    };
    let condition = |t: &str, status: &str, reason: &str| {
        json!({"type": t, "status": status, "reason": reason, "message": "",
            "lastTransitionTime": time})
    };
    json!({
        "apiVersion": "ray.io/v1", "kind": "RayService",
        "metadata": {
            "name": name, "namespace": format!("bench-{}", i % 10),
            "uid": format!("7a1c2d3e-4b5a-4c6d-8e7f-{i:012}"),
            "resourceVersion": format!("{}", 200_000 + i * 3), "generation": 1,
            "creationTimestamp": time,
            "labels": {"airunway.ai/managed-by": "airunway", "airunway.ai/deployment": name,
                "app.kubernetes.io/name": name},
            "annotations": {"airunway.ai/spec-hash": format!("{:016x}", i * 7919),
                "airunway.ai/identity-hash": format!("{:016x}", i * 104_729)},
            "ownerReferences": [{"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
                "name": name, "uid": format!("6f1c2d3e-4b5a-4c6d-8e7f-{i:012}"),
                "controller": true, "blockOwnerDeletion": true}],
        },
        "spec": {
            "serveConfigV2": "applications:\n- name: llm\n  route_prefix: /\n  import_path: vllm_serve:deployment\n  deployments:\n  - name: VLLMDeployment\n    num_replicas: 1\n",
            "rayClusterConfig": {
                "rayVersion": "2.43.0",
                "headGroupSpec": {"rayStartParams": {"dashboard-host": "0.0.0.0"},
                    "template": {"spec": {"containers": [container("head", "4", "16Gi", false)]}}},
                "workerGroupSpecs": [{"groupName": "gpu-group", "replicas": 1, "minReplicas": 1,
                    "maxReplicas": 1, "rayStartParams": {},
                    "template": {"spec": {"containers": [container("worker", "8", "32Gi", true)]}}}],
            },
        },
        "status": {
            "conditions": [condition("Ready", "True", "NonZeroServeEndpoints"),
                condition("UpgradeInProgress", "False", "NoPendingCluster")],
            "numServeEndpoints": 2, "observedGeneration": 1, "serviceStatus": "Running",
            "activeServiceStatus": {
                "applicationStatuses": {"llm": {"status": "RUNNING",
                    "serveDeploymentStatuses": {"VLLMDeployment": {"status": "HEALTHY"}}}},
                "rayClusterName": format!("{name}-raycluster-x7k2p"),
                "rayClusterStatus": {
                    "availableWorkerReplicas": 1, "desiredCPU": "12", "desiredGPU": "1",
                    "desiredMemory": "48Gi", "desiredTPU": "0", "desiredWorkerReplicas": 1,
                    "conditions": [condition("HeadPodReady", "True", "HeadPodRunningAndReady"),
                        condition("RayClusterProvisioned", "True", "AllPodRunningAndReadyFirstTime")],
                    "endpoints": {"client": "10001", "dashboard": "8265", "gcs-server": "6379",
                        "metrics": "8080", "serve": "8000"},
                    "head": {"podIP": "10.244.1.17", "podName": format!("{name}-head-r8vnl"),
                        "serviceIP": "10.0.145.22", "serviceName": format!("{name}-head-svc")},
                    "maxWorkerReplicas": 1, "minWorkerReplicas": 1, "observedGeneration": 1,
                    "readyWorkerReplicas": 1, "state": "ready",
                },
            },
        },
    })
    .to_string()
}

/// How a provider's watch cache holds its upstream objects.
#[derive(Clone, Copy, Debug)]
pub enum UpstreamHeld {
    /// As `DynamicObject`s (a `serde_json::Value` body).
    Dynamic,
    /// As [`CompactObject`]s (the body as compact JSON text), what the SDK keeps.
    Compact,
}

/// Bytes a watch cache of `n` generated upstream objects ([`upstream_text`]) holds, per object.
pub fn upstream_bytes_per_object(n: usize, held: UpstreamHeld) -> f64 {
    let resource = ApiResource {
        group: "ray.io".into(),
        version: "v1".into(),
        api_version: "ray.io/v1".into(),
        kind: "RayService".into(),
        plural: "rayservices".into(),
    };
    let texts: Vec<String> = (0..n).map(upstream_text).collect();
    let objects = |texts: &[String]| -> Vec<DynamicObject> {
        texts
            .iter()
            .map(|text| serde_json::from_str(text).expect("a generated object decodes"))
            .collect()
    };
    match held {
        UpstreamHeld::Dynamic => {
            let before = live_bytes();
            let mut writer = Writer::<DynamicObject>::new(resource);
            writer.apply_watcher_event(&Event::Init);
            for object in objects(&texts) {
                writer.apply_watcher_event(&Event::InitApply(object));
            }
            writer.apply_watcher_event(&Event::InitDone);
            let held = live_bytes() - before;
            assert_eq!(writer.as_reader().len(), n);
            held as f64 / n as f64
        }
        UpstreamHeld::Compact => {
            let before = live_bytes();
            let mut writer = Writer::<CompactObject>::new(resource);
            writer.apply_watcher_event(&Event::Init);
            for object in objects(&texts) {
                writer.apply_watcher_event(&Event::InitApply(CompactObject::from(object)));
            }
            writer.apply_watcher_event(&Event::InitDone);
            let held = live_bytes() - before;
            assert_eq!(writer.as_reader().len(), n);
            held as f64 / n as f64
        }
    }
}
