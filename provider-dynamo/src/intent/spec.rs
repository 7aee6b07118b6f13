//! The typed `provider.overrides.intent` block and what intent mode refuses (pure), with the
//! Go AI Runway's field names, bounds and messages (`controller/pkg/dynamointent`).

use airunway_api::serde_json::{self, Value};
use airunway_api::v1alpha1::{ModelDeployment, ServingMode};
use serde::{Deserialize, Serialize};

use super::{DEPLOYMENT_MODE, INTENT, IntentError, MODE_INTENT, overrides};

/// The only profiling search depth intent mode offers (as the Go AI Runway).
pub const SEARCH_STRATEGY_RAPID: &str = "rapid";
/// The fewest GPUs an intent may budget.
pub const MIN_TOTAL_GPUS: i32 = 1;
/// The most GPUs an intent may budget.
pub const MAX_TOTAL_GPUS: i32 = 64;
/// The Hugging Face token Secret Dynamo's profiler reads; no other name is accepted.
pub const HF_TOKEN_SECRET: &str = "hf-token-secret";
/// Override keys of a rendered graph, refused with intent.
const MANUAL_ONLY_KEYS: &[&str] = &["routerMode", "frontend", "epp"];
/// The raw upstream spec override (the `spec.services`/`spec.components` escape hatch).
const RAW_SPEC_KEY: &str = "spec";

/// What the user states instead of a topology.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Intent {
    /// The GPUs profiling and serving may use.
    #[serde(default)]
    pub hardware: Hardware,
    /// The profiling search depth (only `rapid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_strategy: Option<String>,
    /// The expected traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<Workload>,
    /// The latency targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sla: Option<Sla>,
    /// Settings passed to the request's `spec.overrides`: the profiling Job and the generated
    /// graph.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overrides: Option<RequestOverrides>,
}

/// The GPU budget and, optionally, what the GPUs are (Dynamo discovers what is left out).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Hardware {
    /// GPUs for profiling and serving, 1 to 64.
    #[serde(default)]
    pub total_gpus: i32,
    /// The GPU model, e.g. `h100_sxm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_sku: Option<String>,
    /// Memory per GPU in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vram_mb: Option<f64>,
    /// GPUs per node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_gpus_per_node: Option<i32>,
}

/// Token lengths and either a request rate or a concurrency.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Workload {
    /// Input sequence length (tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isl: Option<i32>,
    /// Output sequence length (tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub osl: Option<i32>,
    /// Requests per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_rate: Option<f64>,
    /// Concurrent requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<f64>,
}

/// Time to first token and inter-token latency, or an end-to-end latency (milliseconds).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Sla {
    /// Time to first token (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft: Option<f64>,
    /// Inter-token latency (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl: Option<f64>,
    /// End-to-end request latency (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_latency: Option<f64>,
}

/// The request's `spec.overrides`, passed as given (Dynamo merges them).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestOverrides {
    /// Merged into the profiling Job's spec (a `batch/v1` JobSpec).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiling_job: Option<Value>,
    /// A partial DynamoGraphDeployment merged into the generated one (`apiVersion`
    /// `nvidia.com/v1alpha1` or `nvidia.com/v1beta1`, `kind: DynamoGraphDeployment`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dgd: Option<Value>,
}

/// The typed intent of `md`: `Ok(None)` for a manual deployment, an error for an `intent`
/// block without `deploymentMode: intent`, next to the raw `spec` override, or that does not
/// decode into [`Intent`] (unknown fields included).
pub fn parse(md: &ModelDeployment) -> Result<Option<Intent>, IntentError> {
    let Some(overrides) = overrides(md) else {
        return Ok(None);
    };
    let intent_mode = overrides.get(DEPLOYMENT_MODE).and_then(Value::as_str) == Some(MODE_INTENT);
    let Some(raw) = overrides.get(INTENT) else {
        if intent_mode {
            return Err(IntentError::Refused(
                "deploymentMode: intent requires provider.overrides.intent",
            ));
        }
        return Ok(None);
    };
    if !intent_mode {
        return Err(IntentError::Refused(
            "provider.overrides.intent requires deploymentMode: intent",
        ));
    }
    if overrides.contains_key(RAW_SPEC_KEY) {
        return Err(IntentError::Refused(
            "intent and legacy overrides.spec cannot be combined",
        ));
    }
    if !raw.is_object() {
        return Err(IntentError::Refused("intent must be an object"));
    }
    serde_json::from_value(raw.clone())
        .map(Some)
        .map_err(|e| IntentError::Malformed(e.to_string()))
}

fn positive(v: f64) -> bool {
    v > 0.0 && v.is_finite()
}

/// The intent's own bounds: GPU budget, search strategy, hardware, workload and SLA values.
pub fn check_intent(intent: &Intent) -> Result<(), IntentError> {
    let hardware = &intent.hardware;
    if !(MIN_TOTAL_GPUS..=MAX_TOTAL_GPUS).contains(&hardware.total_gpus) {
        return Err(IntentError::Refused(
            "intent.hardware.totalGpus must be between 1 and 64",
        ));
    }
    if intent
        .search_strategy
        .as_deref()
        .is_some_and(|s| !s.is_empty() && s != SEARCH_STRATEGY_RAPID)
    {
        return Err(IntentError::Refused(
            "automatic configuration currently supports searchStrategy: rapid only",
        ));
    }
    if hardware.num_gpus_per_node.is_some_and(|n| n <= 0) {
        return Err(IntentError::Refused(
            "intent.hardware.numGpusPerNode must be positive",
        ));
    }
    if hardware.vram_mb.is_some_and(|v| !positive(v)) {
        return Err(IntentError::Refused(
            "intent.hardware.vramMb must be positive",
        ));
    }
    if let Some(w) = &intent.workload {
        if w.isl.is_some_and(|l| l <= 0) || w.osl.is_some_and(|l| l <= 0) {
            return Err(IntentError::Refused(
                "intent workload token lengths must be positive",
            ));
        }
        if w.concurrency.is_some() && w.request_rate.is_some() {
            return Err(IntentError::Refused(
                "specify requestRate or concurrency, not both",
            ));
        }
        if w.concurrency.is_some_and(|v| !positive(v))
            || w.request_rate.is_some_and(|v| !positive(v))
        {
            return Err(IntentError::Refused(
                "intent workload traffic must be positive",
            ));
        }
    }
    if let Some(s) = &intent.sla {
        if s.e2e_latency.is_some() && (s.ttft.is_some() || s.itl.is_some()) {
            return Err(IntentError::Refused(
                "specify e2eLatency or ttft/itl, not both",
            ));
        }
        if [s.ttft, s.itl, s.e2e_latency]
            .into_iter()
            .flatten()
            .any(|v| !positive(v))
        {
            return Err(IntentError::Refused(
                "intent latency targets must be positive",
            ));
        }
    }
    if let Some(dgd) = intent.overrides.as_ref().and_then(|o| o.dgd.as_ref()) {
        let api_version = dgd["apiVersion"].as_str().unwrap_or_default();
        if !dgd.is_object()
            || dgd["kind"].as_str() != Some("DynamoGraphDeployment")
            || !matches!(api_version, "nvidia.com/v1alpha1" | "nvidia.com/v1beta1")
        {
            return Err(IntentError::InvalidOverride(
                "intent.overrides.dgd must be a DynamoGraphDeployment with apiVersion nvidia.com/v1alpha1 or nvidia.com/v1beta1".into(),
            ));
        }
    }
    if intent
        .overrides
        .as_ref()
        .and_then(|o| o.profiling_job.as_ref())
        .is_some_and(|job| !job.is_object())
    {
        return Err(IntentError::InvalidOverride(
            "intent.overrides.profilingJob must be a Job spec object".into(),
        ));
    }
    Ok(())
}

/// What the rest of the deployment may not set with intent: Dynamo's profiler chooses the
/// resources, replicas, topology, images and arguments, and the generated graph has no place
/// for the deployment's env, scheduling, secret, storage or pod metadata.
pub fn check_deployment(md: &ModelDeployment) -> Result<(), IntentError> {
    let spec = &md.spec;
    if spec.resources.is_some() {
        return Err(IntentError::Refused(
            "automatic configuration uses intent.hardware.totalGpus, not resources",
        ));
    }
    // The CRD defaults `scaling` to `{replicas: 1}`: only what differs is the user's.
    if let Some(scaling) = &spec.scaling
        && (scaling.replicas.is_some_and(|r| r != 1)
            || scaling.prefill.is_some()
            || scaling.decode.is_some()
            || scaling.autoscaling.is_some())
    {
        return Err(IntentError::Refused(
            "automatic configuration chooses replicas; omit scaling",
        ));
    }
    if spec.serving_mode() == ServingMode::Disaggregated {
        return Err(IntentError::Refused(
            "automatic configuration chooses topology; omit serving.mode",
        ));
    }
    let engine = spec.engine.as_ref();
    if spec.image.as_deref().is_some_and(|i| !i.is_empty())
        || engine
            .and_then(|e| e.image.as_deref())
            .is_some_and(|i| !i.is_empty())
        || engine.and_then(|e| e.context_length).is_some()
        || engine.and_then(|e| e.trust_remote_code) == Some(true)
        || engine.and_then(|e| e.enforce_eager) == Some(true)
        || engine
            .and_then(|e| e.args.as_ref())
            .is_some_and(|a| !a.is_empty())
        || !spec.extra_args().is_empty()
    {
        return Err(IntentError::Refused(
            "custom engine images and arguments require manual configuration",
        ));
    }
    if spec
        .model
        .served_name
        .as_deref()
        .is_some_and(|n| !n.is_empty())
    {
        return Err(IntentError::Refused(
            "custom servedName requires manual configuration",
        ));
    }
    if spec.env.as_ref().is_some_and(|e| !e.is_empty())
        || spec.node_selector.as_ref().is_some_and(|n| !n.is_empty())
        || spec.tolerations.as_ref().is_some_and(|t| !t.is_empty())
    {
        return Err(IntentError::Refused(
            "custom env, nodeSelector and tolerations require manual configuration",
        ));
    }
    if spec
        .secrets
        .as_ref()
        .and_then(|s| s.hugging_face_token.as_deref())
        .is_some_and(|name| !name.is_empty() && name != HF_TOKEN_SECRET)
    {
        return Err(IntentError::Refused(
            "automatic configuration uses hf-token-secret; custom secret names require manual configuration",
        ));
    }
    if spec
        .model
        .storage
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .is_some_and(|v| !v.is_empty())
    {
        return Err(IntentError::Refused(
            "automatic configuration does not support storage volumes; use manual configuration or legacy overrides with an explicit modelCache.pvcModelPath",
        ));
    }
    if let Some(metadata) = spec.pod_template.as_ref().and_then(|t| t.metadata.as_ref())
        && (metadata.labels.as_ref().is_some_and(|l| !l.is_empty())
            || metadata.annotations.as_ref().is_some_and(|a| !a.is_empty()))
    {
        return Err(IntentError::Refused(
            "custom pod metadata requires manual configuration",
        ));
    }
    if spec.gateway.as_ref().and_then(|g| g.enabled) == Some(true) {
        return Err(IntentError::Refused(
            "automatic configuration does not manage the inference gateway; set gateway.enabled: false or use manual configuration",
        ));
    }
    if let Some(overrides) = overrides(md)
        && MANUAL_ONLY_KEYS.iter().any(|k| overrides.contains_key(*k))
    {
        return Err(IntentError::Refused(
            "routerMode, frontend and epp overrides are supported only when deploymentMode is \"manual\"",
        ));
    }
    Ok(())
}

/// The checked intent of an intent deployment (`Ok(None)`: a manual one): [`parse`],
/// [`check_intent`], then [`check_deployment`], the first refusal winning.
pub fn validate(md: &ModelDeployment) -> Result<Option<Intent>, IntentError> {
    let Some(intent) = parse(md)? else {
        return Ok(None);
    };
    check_intent(&intent)?;
    check_deployment(md)?;
    Ok(Some(intent))
}
