//! Tool calling and reasoning parsers as Ray Serve LLM engine keyword arguments (pure):
//! `enable_auto_tool_choice: true` and `tool_call_parser` with tool calling, and
//! `reasoning_parser`, with vLLM's parser names (Ray Serve LLM hands `engine_kwargs` to vLLM;
//! tool calling through them needs Ray 2.49 or later, the default image is 2.55).

use airunway_api::engine_parsers::{self, Dialect};
use airunway_api::serde_json::{Map, Value, json};
use airunway_api::v1alpha1::ModelDeployment;

/// The keyword argument turning automatic tool choice on.
pub const AUTO_TOOL_CHOICE: &str = "enable_auto_tool_choice";
/// The keyword argument naming the tool-call parser.
pub const TOOL_CALL_PARSER: &str = "tool_call_parser";
/// The keyword argument naming the reasoning parser.
pub const REASONING_PARSER: &str = "reasoning_parser";

/// Adds `md`'s parser keyword arguments to `kwargs`; `Err` with the validation's text when
/// tool calling has no parser.
pub fn add_engine_kwargs(
    md: &ModelDeployment,
    kwargs: &mut Map<String, Value>,
) -> Result<(), String> {
    let parsers = engine_parsers::resolve(&md.spec, Dialect::Vllm)?;
    if let Some(parser) = parsers.tool_call_parser {
        kwargs.insert(AUTO_TOOL_CHOICE.into(), json!(true));
        kwargs.insert(TOOL_CALL_PARSER.into(), json!(parser));
    }
    if let Some(parser) = parsers.reasoning_parser {
        kwargs.insert(REASONING_PARSER.into(), json!(parser));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use airunway_api::serde_json;

    fn md(id: &str, engine: Value) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "n"},
            "spec": {"model": {"id": id}, "engine": engine, "resources": {"gpu": {"count": 1}}}
        }))
        .unwrap()
    }

    fn kwargs(md: &ModelDeployment) -> Result<Value, String> {
        let mut map = Map::new();
        add_engine_kwargs(md, &mut map)?;
        Ok(Value::Object(map))
    }

    #[test]
    fn parsers_become_engine_kwargs() {
        assert_eq!(
            kwargs(&md(
                "Qwen/Qwen3-0.6B",
                json!({"type": "vllm", "toolCalling": true})
            ))
            .unwrap(),
            json!({"enable_auto_tool_choice": true, "tool_call_parser": "hermes", "reasoning_parser": "qwen3"})
        );
        assert_eq!(
            kwargs(&md(
                "meta-llama/Llama-3.1-8B-Instruct",
                json!({"type": "vllm", "toolCalling": true})
            ))
            .unwrap(),
            json!({"enable_auto_tool_choice": true, "tool_call_parser": "llama3_json"})
        );
        assert_eq!(
            kwargs(&md(
                "acme/r",
                json!({"type": "vllm", "reasoningParser": "deepseek_r1"})
            ))
            .unwrap(),
            json!({"reasoning_parser": "deepseek_r1"})
        );
        assert_eq!(
            kwargs(&md("Qwen/Qwen3-0.6B", json!({"type": "vllm"}))).unwrap(),
            json!({})
        );
        assert!(
            kwargs(&md(
                "acme/model",
                json!({"type": "vllm", "toolCalling": true})
            ))
            .is_err()
        );
    }
}
