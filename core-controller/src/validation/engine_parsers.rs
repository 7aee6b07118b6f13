//! Tool calling and reasoning parsers (`spec.engine.toolCalling`, `toolCallParser`,
//! `reasoningParser`), with [`airunway_api::engine_parsers`]'s grammar and texts: each parser
//! name valid; `toolCallParser` only with `toolCalling: true`; tool calling with a parser known
//! or named; no parser asked of llama.cpp; no launch flag in `engine.args`/`engine.extraArgs`
//! that the render derives from these fields.

use airunway_api::engine_parsers::{self as parsers, Dialect};
use airunway_api::v1alpha1::{EngineType, ModelDeploymentSpec};

use super::{FieldError, extra_arg_flag};

/// Every error of `spec`'s parser fields.
pub(super) fn validate_engine_parsers(spec: &ModelDeploymentSpec, errors: &mut Vec<FieldError>) {
    let Some(engine) = spec.engine.as_ref() else {
        return;
    };
    for (field, value) in [
        ("toolCallParser", engine.tool_call_parser.as_deref()),
        ("reasoningParser", engine.reasoning_parser.as_deref()),
    ] {
        if let Some(message) = value.and_then(parsers::name_error) {
            errors.push(FieldError::new(format!("spec.engine.{field}"), message));
        }
    }
    if engine.tool_call_parser.is_some() && !parsers::tool_calling(spec) {
        errors.push(FieldError::new(
            "spec.engine.toolCallParser",
            parsers::TOOL_CALL_PARSER_NEEDS_TOOL_CALLING,
        ));
    }
    if !spec.wants_engine_parsers() {
        return;
    }
    if engine.engine_type == Some(EngineType::Llamacpp) {
        errors.push(FieldError::new(
            "spec.engine.type",
            parsers::engine_has_no_parsers(EngineType::Llamacpp),
        ));
    }
    // Whether a parser is known does not depend on the dialect: every family with a tool
    // format has a parser in each.
    if let Err(message) = parsers::resolve(spec, Dialect::Vllm) {
        errors.push(FieldError::new("spec.engine.toolCallParser", message));
    }
    for key in engine.args.iter().flat_map(|a| a.keys()) {
        if let Some(field) = parsers::rendered_field_of_flag(spec, key) {
            errors.push(FieldError::new(
                format!("spec.engine.args[{key}]"),
                parsers::flag_rendered_from_field(key, field),
            ));
        }
    }
    for (i, token) in engine.extra_args.iter().flatten().enumerate() {
        if let Some(key) = extra_arg_flag(token)
            && let Some(field) = parsers::rendered_field_of_flag(spec, key)
        {
            errors.push(FieldError::new(
                format!("spec.engine.extraArgs[{i}]"),
                parsers::flag_rendered_from_field(key, field),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{errors, one};
    use airunway_api::engine_parsers as parsers;
    use serde_json::json;

    fn qwen(engine: serde_json::Value) -> serde_json::Value {
        json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": engine, "resources": {"gpu": {"count": 1}}})
    }

    #[test]
    fn valid_parser_settings_pass() {
        for engine in [
            json!({"type": "vllm", "toolCalling": true}),
            json!({"type": "vllm", "toolCalling": true, "toolCallParser": "hermes", "reasoningParser": "qwen3"}),
            json!({"type": "sglang", "reasoningParser": "qwen3"}),
            json!({"type": "vllm", "toolCalling": false}),
            // Tool calling off: the flags are the user's own.
            json!({"type": "vllm", "toolCalling": false, "extraArgs": ["--tool-call-parser=hermes", "--enable-auto-tool-choice"]}),
            json!({"type": "vllm", "reasoningParser": "qwen3", "args": {"tool-call-parser": "hermes", "enable-auto-tool-choice": ""}}),
        ] {
            assert_eq!(errors(qwen(engine.clone())), vec![], "{engine}");
        }
        let named = json!({"model": {"id": "acme/model"}, "engine": {"toolCalling": true, "toolCallParser": "hermes"}});
        assert_eq!(errors(named), vec![]);
    }

    #[test]
    fn parser_names_are_checked_with_the_field() {
        for (value, message) in [
            ("auto", parsers::PARSER_RESERVED),
            ("none", parsers::PARSER_RESERVED),
            ("", parsers::PARSER_EMPTY),
            ("Hermes", parsers::PARSER_LOWER_CASE),
            ("hermes;id", parsers::PARSER_CHARACTERS),
            ("$(reboot)", parsers::PARSER_CHARACTERS),
        ] {
            assert_eq!(
                errors(qwen(
                    json!({"type": "vllm", "toolCalling": true, "toolCallParser": value})
                )),
                one("spec.engine.toolCallParser", message),
                "{value:?}"
            );
            assert_eq!(
                errors(qwen(json!({"type": "vllm", "reasoningParser": value}))),
                one("spec.engine.reasoningParser", message),
                "{value:?}"
            );
        }
        assert_eq!(
            errors(qwen(
                json!({"type": "vllm", "reasoningParser": "a".repeat(65)})
            )),
            one("spec.engine.reasoningParser", parsers::PARSER_TOO_LONG)
        );
    }

    #[test]
    fn a_tool_call_parser_needs_tool_calling() {
        for engine in [
            json!({"type": "vllm", "toolCallParser": "hermes"}),
            json!({"type": "vllm", "toolCalling": false, "toolCallParser": "hermes"}),
        ] {
            assert_eq!(
                errors(qwen(engine)),
                one(
                    "spec.engine.toolCallParser",
                    "toolCallParser needs toolCalling: true: set spec.engine.toolCalling: true, or remove spec.engine.toolCallParser"
                )
            );
        }
    }

    #[test]
    fn tool_calling_on_an_unknown_model_asks_for_a_parser() {
        for id in [
            "acme/model",
            "Qwen/Qwen2.5-7B",
            "Qwen/Qwen3.5",
            "deepseek-ai/DeepSeek-R1",
        ] {
            assert_eq!(
                errors(
                    json!({"model": {"id": id}, "engine": {"type": "vllm", "toolCalling": true}, "resources": {"gpu": {"count": 1}}})
                ),
                one(
                    "spec.engine.toolCallParser",
                    &parsers::tool_call_parser_unknown(id)
                ),
                "{id}"
            );
        }
    }

    #[test]
    fn llamacpp_has_no_parsers() {
        assert_eq!(
            errors(
                json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "llamacpp", "reasoningParser": "qwen3"}})
            ),
            one(
                "spec.engine.type",
                "engine llamacpp has no tool-call or reasoning parser to choose: remove spec.engine.toolCalling, toolCallParser and reasoningParser, or use engine vllm, sglang or trtllm"
            )
        );
    }

    #[test]
    fn rendered_flags_may_not_be_set_by_hand() {
        assert_eq!(
            errors(qwen(
                json!({"type": "vllm", "toolCalling": true, "args": {"tool-call-parser": "hermes"}})
            )),
            one(
                "spec.engine.args[tool-call-parser]",
                "launch flag \"tool-call-parser\" is rendered from spec.engine.toolCalling: remove it from spec.engine.args and spec.engine.extraArgs and set spec.engine.toolCalling instead"
            )
        );
        assert_eq!(
            errors(qwen(
                json!({"type": "vllm", "toolCalling": true, "extraArgs": ["--max-num-seqs=4", "--dyn-reasoning-parser=qwen3"]})
            )),
            one(
                "spec.engine.extraArgs[1]",
                &parsers::flag_rendered_from_field("dyn-reasoning-parser", "reasoningParser")
            )
        );
        assert_eq!(
            errors(qwen(
                json!({"type": "vllm", "reasoningParser": "qwen3", "args": {"reasoning_parser": "qwen3"}})
            )),
            one(
                "spec.engine.args[reasoning_parser]",
                &parsers::flag_rendered_from_field("reasoning_parser", "reasoningParser")
            )
        );
    }
}
