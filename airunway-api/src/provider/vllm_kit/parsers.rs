//! Tool calling and reasoning parsers on the vLLM command line (pure):
//! `--enable-auto-tool-choice --tool-call-parser <parser>` with tool calling, and
//! `--reasoning-parser <parser>`, with vLLM's parser names ([`engine_parsers::resolve`]).
//!
//! [`engine_parsers::resolve`]: crate::engine_parsers::resolve

use crate::engine_parsers::{self, Dialect};
use crate::v1alpha1::ModelDeployment;

/// `--enable-auto-tool-choice`.
pub const AUTO_TOOL_CHOICE_FLAG: &str = "enable-auto-tool-choice";
/// `--tool-call-parser <parser>`.
pub const TOOL_CALL_PARSER_FLAG: &str = "tool-call-parser";
/// `--reasoning-parser <parser>`.
pub const REASONING_PARSER_FLAG: &str = "reasoning-parser";

/// The derived flags (key without dashes, value) for `md`'s parsers, in command-line order;
/// empty without them, or when tool calling has no parser (validation refuses that
/// deployment before any render).
pub fn derived_flags(md: &ModelDeployment) -> Vec<(&'static str, Option<String>)> {
    let parsers = engine_parsers::resolve(&md.spec, Dialect::Vllm).unwrap_or_default();
    let mut flags = Vec::new();
    if let Some(parser) = parsers.tool_call_parser {
        flags.push((AUTO_TOOL_CHOICE_FLAG, None));
        flags.push((TOOL_CALL_PARSER_FLAG, Some(parser)));
    }
    if let Some(parser) = parsers.reasoning_parser {
        flags.push((REASONING_PARSER_FLAG, Some(parser)));
    }
    flags
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::provider::vllm_kit::render::{Component, vllm_args};
    use serde_json::json;

    fn md(engine: serde_json::Value) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "n"},
            "spec": {"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": engine,
                     "resources": {"gpu": {"count": 1}}}
        }))
        .unwrap()
    }

    #[test]
    fn tool_calling_and_reasoning_reach_the_command_line() {
        let md = md(json!({"type": "vllm", "toolCalling": true, "extraArgs": ["--seed", "7"]}));
        let args = vllm_args(&md, &Component::aggregated(&md));
        let at = args
            .iter()
            .position(|a| a == "--enable-auto-tool-choice")
            .unwrap();
        assert_eq!(
            args[at..at + 5],
            [
                "--enable-auto-tool-choice",
                "--tool-call-parser",
                "hermes",
                "--reasoning-parser",
                "qwen3"
            ]
        );
        // Before engine.extraArgs, which stay last.
        assert_eq!(args[args.len() - 2..], ["--seed", "7"]);
    }

    #[test]
    fn explicit_parsers_and_reasoning_alone() {
        let named = md(json!({"type": "vllm", "toolCalling": true, "toolCallParser": "pythonic"}));
        assert_eq!(
            derived_flags(&named),
            [
                (AUTO_TOOL_CHOICE_FLAG, None),
                (TOOL_CALL_PARSER_FLAG, Some("pythonic".to_string())),
                (REASONING_PARSER_FLAG, Some("qwen3".to_string())),
            ]
        );
        let reasoning = md(json!({"type": "vllm", "reasoningParser": "deepseek_r1"}));
        assert_eq!(
            derived_flags(&reasoning),
            [(REASONING_PARSER_FLAG, Some("deepseek_r1".to_string()))]
        );
        let args = vllm_args(&reasoning, &Component::aggregated(&reasoning));
        assert!(
            !args.iter().any(|a| a == "--enable-auto-tool-choice"),
            "{args:?}"
        );
        assert!(derived_flags(&md(json!({"type": "vllm"}))).is_empty());
        assert!(derived_flags(&md(json!({"type": "vllm", "toolCalling": false}))).is_empty());
    }
}
