//! The DynamoGraphDeploymentRequest of an intent deployment (pure).
//!
//! `nvidia.com/v1beta1` (served by Dynamo 1.1 and 1.5 alike, whichever DynamoGraphDeployment
//! version the cluster serves), named by [`request_name`] (the attempt), with the model, the
//! backend (`vllm`, `sglang`, `trtllm`, else `auto`), the intent's `hardware`, `workload`,
//! `sla` and `overrides`, `searchStrategy: rapid`, `autoApply: true` (Dynamo creates the graph
//! it chose) and the profiler image of the Dynamo release this provider targets.

use airunway_api::constants::annotations::dynamo::{ATTEMPT, INTENT_HASH};
use airunway_api::constants::labels;
use airunway_api::serde_json::{self, Map, Value, json};
use airunway_api::v1alpha1::{EngineType, ModelDeployment};

use super::attempt::{attempt, input_hash, request_name};
use super::spec::{Intent, SEARCH_STRATEGY_RAPID};
use super::{GROUP, REQUEST_KIND, REQUEST_VERSION};
use crate::render::{DYNAMO_VERSION, ENGINE_TYPE_LABEL, MODEL_ID_LABEL, label_value};

/// The image of Dynamo's profiler (its planner image) for the targeted release.
pub fn profiler_image() -> String {
    format!("nvcr.io/nvidia/ai-dynamo/dynamo-planner:{DYNAMO_VERSION}")
}

/// The request's `spec.backend` for `engine`.
pub fn backend(engine: Option<EngineType>) -> &'static str {
    match engine {
        Some(EngineType::Vllm) => "vllm",
        Some(EngineType::Sglang) => "sglang",
        Some(EngineType::Trtllm) => "trtllm",
        _ => "auto",
    }
}

/// `value` without its nulls (absent optional fields).
fn object(value: impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The DynamoGraphDeploymentRequest for `md` and its checked `intent`.
pub fn render(md: &ModelDeployment, intent: &Intent) -> Value {
    let name = md.metadata.name.clone().unwrap_or_default();
    let engine = md.resolved_engine();
    let mut labels_map = Map::new();
    labels_map.insert(labels::MODEL_DEPLOYMENT.into(), json!(name));
    let model_id = label_value(md.spec.model.id.as_deref().unwrap_or_default());
    if !model_id.is_empty() {
        labels_map.insert(MODEL_ID_LABEL.into(), json!(model_id));
    }
    if let Some(engine) = engine {
        labels_map.insert(ENGINE_TYPE_LABEL.into(), json!(engine.as_str()));
    }
    let mut spec = json!({
        "model": md.spec.model.id.clone().unwrap_or_default(),
        "backend": backend(engine),
        "image": profiler_image(),
        "hardware": object(&intent.hardware),
        "searchStrategy": SEARCH_STRATEGY_RAPID,
        "autoApply": true,
    });
    if let Some(workload) = &intent.workload {
        spec["workload"] = object(workload);
    }
    if let Some(sla) = &intent.sla {
        spec["sla"] = object(sla);
    }
    if let Some(overrides) = &intent.overrides {
        spec["overrides"] = object(overrides);
    }
    json!({
        "apiVersion": format!("{GROUP}/{REQUEST_VERSION}"),
        "kind": REQUEST_KIND,
        "metadata": {
            "name": request_name(md),
            "labels": labels_map,
            "annotations": {
                INTENT_HASH: input_hash(md, intent),
                ATTEMPT: attempt(md),
            },
        },
        "spec": spec,
    })
}
