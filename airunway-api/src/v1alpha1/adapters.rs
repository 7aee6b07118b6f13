//! LoRA adapters served beside a deployment's base model (`spec.adapters[]`,
//! `status.adapters[]`), and the engine features a deployment asks of its provider.

use serde::{Deserialize, Serialize};

/// One LoRA adapter loaded beside the base model and served under its own model name.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LoraAdapter {
    /// The model name clients request to use the adapter (the OpenAI `model` field), unique
    /// within the deployment: lower-case letters, digits, `-`, `.` and `_`, at most 63
    /// characters.
    #[schemars(length(min = 1, max = 63))]
    pub name: String,

    /// Where the adapter's weights come from: a Hugging Face repository id (`org/name`), an
    /// `hf://org/name` URI, or an `https://`, `s3://`, `gs://` or `pvc://<claim>/<path>` URI.
    #[schemars(length(min = 1, max = 512))]
    pub source: String,

    /// The revision (branch, tag or commit) of a Hugging Face adapter; omitted means `main`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 128))]
    pub revision: Option<String>,

    /// The adapter's LoRA rank, when known; the engine's maximum rank is the largest rank of
    /// the deployment's adapters (vLLM `--max-lora-rank`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 512))]
    pub max_rank: Option<i32>,
}

/// The observed state of one adapter of `spec.adapters[]`.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AdapterStatus {
    /// The adapter's name (`spec.adapters[].name`).
    pub name: String,
    /// The adapter's source as requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Where the adapter is: `Pending`, `Downloading`, `Loading`, `Ready` or `Failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<AdapterState>,
    /// Why the adapter is in its state, when that needs saying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The state of one LoRA adapter.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AdapterState {
    /// Not yet rendered or waiting for the serving pods.
    Pending,
    /// Its weights are being fetched (model cache).
    Downloading,
    /// Rendered for (or being loaded into) the engine, not yet confirmed served.
    Loading,
    /// Served: requests naming it are answered.
    Ready,
    /// Could not be fetched or loaded; `message` says why.
    Failed,
}

impl AdapterState {
    /// The state as written in `status.adapters[].state`.
    pub fn as_str(self) -> &'static str {
        match self {
            AdapterState::Pending => "Pending",
            AdapterState::Downloading => "Downloading",
            AdapterState::Loading => "Loading",
            AdapterState::Ready => "Ready",
            AdapterState::Failed => "Failed",
        }
    }
}

impl std::fmt::Display for AdapterState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl super::ModelDeploymentSpec {
    /// The LoRA adapters of `spec.adapters`, empty when none are listed.
    pub fn lora_adapters(&self) -> &[LoraAdapter] {
        self.adapters.as_deref().unwrap_or_default()
    }

    /// Whether the deployment asks its engine for tool calling or a reasoning parser
    /// (`spec.engine.toolCalling: true`, `toolCallParser` or `reasoningParser`), which only a
    /// provider declaring `toolCallingSupport` for the engine renders.
    pub fn wants_engine_parsers(&self) -> bool {
        self.engine.as_ref().is_some_and(|e| {
            e.tool_calling == Some(true)
                || e.tool_call_parser.is_some()
                || e.reasoning_parser.is_some()
        })
    }
}
