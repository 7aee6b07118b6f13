//! Tool calling and reasoning parsers on a Dynamo graph (pure): every worker gets
//! `--dyn-tool-call-parser <parser>` (tool calling on) and `--dyn-reasoning-parser <parser>`,
//! with Dynamo's own parser names ([`Dialect::Dynamo`]), whatever the engine (vLLM, SGLang,
//! TensorRT-LLM): Dynamo's frontend parses the model's output with the parsers the workers
//! register, so no engine flag (`--enable-auto-tool-choice`, SGLang's `--tool-call-parser`) is
//! rendered. Intent mode (a DynamoGraphDeploymentRequest, whose graph Dynamo's profiler writes)
//! carries no worker flags: a deployment asking for parsers there is refused.

use airunway_api::engine_parsers::{self, Dialect};
use airunway_api::v1alpha1::ModelDeployment;

/// Dynamo's worker flag naming the tool-call parser.
pub const TOOL_CALL_PARSER_FLAG: &str = "--dyn-tool-call-parser";
/// Dynamo's worker flag naming the reasoning parser.
pub const REASONING_PARSER_FLAG: &str = "--dyn-reasoning-parser";

/// Why intent mode refuses parsers.
pub const INTENT_MODE_HAS_NO_PARSERS: &str = "Dynamo intent mode (provider.overrides.deploymentMode: intent) does not render spec.engine.toolCalling, toolCallParser or reasoningParser: Dynamo's profiler writes the graph; use deploymentMode: manual, or remove the parser fields";

/// The worker flags for `md`'s parsers; `Err` with the validation's text when tool calling has
/// no parser.
pub fn worker_flags(md: &ModelDeployment) -> Result<Vec<String>, String> {
    let parsers = engine_parsers::resolve(&md.spec, Dialect::Dynamo)?;
    let mut flags = Vec::new();
    if let Some(parser) = parsers.tool_call_parser {
        flags.extend([TOOL_CALL_PARSER_FLAG.to_string(), parser]);
    }
    if let Some(parser) = parsers.reasoning_parser {
        flags.extend([REASONING_PARSER_FLAG.to_string(), parser]);
    }
    Ok(flags)
}

/// `Err` when an intent-mode deployment asks for parsers.
pub fn check_intent(md: &ModelDeployment) -> Result<(), String> {
    if md.spec.wants_engine_parsers() {
        return Err(INTENT_MODE_HAS_NO_PARSERS.to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use airunway_api::serde_json::{self, json};

    fn md(id: &str, engine: serde_json::Value) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "n"},
            "spec": {"model": {"id": id}, "engine": engine, "resources": {"gpu": {"count": 1}}}
        }))
        .unwrap()
    }

    #[test]
    fn dynamo_names_reach_the_workers() {
        assert_eq!(
            worker_flags(&md(
                "Qwen/Qwen3-0.6B",
                json!({"type": "sglang", "toolCalling": true})
            ))
            .unwrap(),
            [
                "--dyn-tool-call-parser",
                "hermes",
                "--dyn-reasoning-parser",
                "qwen3"
            ]
        );
        assert_eq!(
            worker_flags(&md(
                "openai/gpt-oss-20b",
                json!({"type": "vllm", "toolCalling": true})
            ))
            .unwrap(),
            [
                "--dyn-tool-call-parser",
                "harmony",
                "--dyn-reasoning-parser",
                "gpt_oss"
            ]
        );
        assert_eq!(
            worker_flags(&md(
                "acme/r",
                json!({"type": "trtllm", "reasoningParser": "deepseek_r1"})
            ))
            .unwrap(),
            ["--dyn-reasoning-parser", "deepseek_r1"]
        );
        assert!(
            worker_flags(&md("Qwen/Qwen3-0.6B", json!({"type": "vllm"})))
                .unwrap()
                .is_empty()
        );
        assert!(
            worker_flags(&md(
                "acme/model",
                json!({"type": "vllm", "toolCalling": true})
            ))
            .is_err()
        );
    }

    #[test]
    fn intent_mode_refuses_parsers() {
        assert_eq!(
            check_intent(&md(
                "Qwen/Qwen3-0.6B",
                json!({"type": "vllm", "toolCalling": true})
            )),
            Err(INTENT_MODE_HAS_NO_PARSERS.to_string())
        );
        assert_eq!(
            check_intent(&md("Qwen/Qwen3-0.6B", json!({"type": "vllm"}))),
            Ok(())
        );
    }
}
