//! Tool calling and reasoning parsers (`spec.engine.toolCalling`, `toolCallParser`,
//! `reasoningParser`), shared by the core's validation and every provider's render (pure):
//!
//! - the grammar of a parser name ([`name_error`]): not empty, not `auto` or `none`, at most
//!   [`MAX_PARSER_LENGTH`] characters, lower case, only `[a-z0-9_.-]` (it reaches an engine's
//!   command line or Ray Serve's engine keyword arguments);
//! - the model families whose parsers are known ([`Family`]), with the names of each
//!   [`Dialect`]: vLLM's parsers (`vllm serve`, Ray Serve LLM) and Dynamo's own (its
//!   `--dyn-*` flags, the same for every Dynamo engine);
//! - what a render asks the engine for ([`resolve`]): with `toolCalling: true`, the explicit
//!   tool-call parser or the family's, and the explicit reasoning parser or the family's; without
//!   it, only an explicit reasoning parser (a reasoning model served without tools);
//! - the launch flags a render derives from these fields ([`rendered_field_of_flag`]), which
//!   `engine.args`/`engine.extraArgs` may then not set.
//!
//! The texts are AI Runway's own: the Go AI Runway's exact messages were not readable when
//! this was written (docs/validation.md).

use crate::v1alpha1::{EngineType, ModelDeploymentSpec};

/// Longest parser name.
pub const MAX_PARSER_LENGTH: usize = 64;

/// Values that look like parser names but ask for a choice: refused, the field is omitted
/// instead.
pub const NOT_PARSER_NAMES: [&str; 2] = ["auto", "none"];

/// A parser field set to the empty string.
pub const PARSER_EMPTY: &str =
    "a parser name must not be empty: omit the field to let AI Runway choose";
/// A parser field set to `auto` or `none`.
pub const PARSER_RESERVED: &str = "\"auto\" and \"none\" are not parser names: omit the field to let AI Runway choose (the parser known for the model family, or none), or name the engine's parser, e.g. hermes";
/// A parser name over [`MAX_PARSER_LENGTH`] characters.
pub const PARSER_TOO_LONG: &str =
    "a parser name is at most 64 characters: name the engine's parser, e.g. hermes";
/// A parser name with upper-case letters.
pub const PARSER_LOWER_CASE: &str =
    "parser names are lower case: write it as the engine lists it, e.g. hermes or llama3_json";
/// A parser name with characters outside `[a-z0-9_.-]`.
pub const PARSER_CHARACTERS: &str = "a parser name may contain only lower-case letters, digits, '_', '.' and '-' (it is passed to the engine's command line): remove the other characters";
/// `toolCallParser` without `toolCalling: true`.
pub const TOOL_CALL_PARSER_NEEDS_TOOL_CALLING: &str = "toolCallParser needs toolCalling: true: set spec.engine.toolCalling: true, or remove spec.engine.toolCallParser";

/// `toolCalling: true` with no `toolCallParser` and no parser known for the model.
pub fn tool_call_parser_unknown(model: &str) -> String {
    format!(
        "spec.engine.toolCalling: true needs a tool-call parser and none is known for model {model:?} (known: Qwen3, Llama 3.1 to 3.3, Mistral, gpt-oss): set spec.engine.toolCallParser to the engine's parser for this model, e.g. hermes"
    )
}

/// Parsers asked of an engine that has none to choose.
pub fn engine_has_no_parsers(engine: EngineType) -> String {
    format!(
        "engine {engine} has no tool-call or reasoning parser to choose: remove spec.engine.toolCalling, toolCallParser and reasoningParser, or use engine vllm, sglang or trtllm"
    )
}

/// A launch flag in `engine.args`/`engine.extraArgs` that the render derives from `field`.
pub fn flag_rendered_from_field(flag: &str, field: &str) -> String {
    format!(
        "launch flag {flag:?} is rendered from spec.engine.{field}: remove it from spec.engine.args and spec.engine.extraArgs and set spec.engine.{field} instead"
    )
}

/// The first thing wrong with the parser name `value`, or `None` when it is a valid name.
pub fn name_error(value: &str) -> Option<&'static str> {
    if value.is_empty() {
        Some(PARSER_EMPTY)
    } else if NOT_PARSER_NAMES.contains(&value) {
        Some(PARSER_RESERVED)
    } else if value.chars().count() > MAX_PARSER_LENGTH {
        Some(PARSER_TOO_LONG)
    } else if value.chars().any(|c| c.is_ascii_uppercase()) {
        Some(PARSER_LOWER_CASE)
    } else if !value
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '.' | '-'))
    {
        Some(PARSER_CHARACTERS)
    } else {
        None
    }
}

/// Whose parser names a render uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// vLLM's parsers: `vllm serve --tool-call-parser/--reasoning-parser`, and Ray Serve LLM's
    /// `engine_kwargs`, which it hands to vLLM.
    Vllm,
    /// Dynamo's own parsers (`--dyn-tool-call-parser`, `--dyn-reasoning-parser` on every
    /// worker, whatever the engine: Dynamo's frontend parses the output).
    Dynamo,
}

/// A model family whose parsers are known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Qwen3 (`Qwen/Qwen3-*`, not Qwen3-Coder or Qwen3.5, whose formats differ).
    Qwen3,
    /// Llama 3.1, 3.2 and 3.3 (JSON tool calls).
    Llama3,
    /// Mistral (`mistralai/Mistral-*`).
    Mistral,
    /// DeepSeek-R1 and its distillations (reasoning only).
    DeepSeekR1,
    /// OpenAI gpt-oss (the harmony format).
    GptOss,
}

impl Family {
    /// The family of `model_id` (a Hugging Face id or a path: its last segment, any case).
    pub fn of(model_id: &str) -> Option<Family> {
        let name = model_id
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        if name.starts_with("gpt-oss") {
            Some(Family::GptOss)
        } else if let Some(rest) = name.strip_prefix("qwen3")
            && (rest.is_empty() || rest.starts_with('-'))
            && !rest.starts_with("-coder")
        {
            Some(Family::Qwen3)
        } else if ["llama-3.1", "llama-3.2", "llama-3.3"]
            .iter()
            .any(|v| name.contains(v))
        {
            Some(Family::Llama3)
        } else if name.starts_with("mistral-") {
            Some(Family::Mistral)
        } else if name.starts_with("deepseek-r1") {
            Some(Family::DeepSeekR1)
        } else {
            None
        }
    }

    /// The family's tool-call parser in `dialect`, if it calls tools in a known format.
    pub fn tool_call_parser(self, dialect: Dialect) -> Option<&'static str> {
        match (self, dialect) {
            (Family::Qwen3, _) => Some("hermes"),
            (Family::Llama3, _) => Some("llama3_json"),
            (Family::Mistral, _) => Some("mistral"),
            (Family::DeepSeekR1, _) => None,
            (Family::GptOss, Dialect::Vllm) => Some("openai"),
            (Family::GptOss, Dialect::Dynamo) => Some("harmony"),
        }
    }

    /// The family's reasoning parser in `dialect`, if it is a reasoning model.
    pub fn reasoning_parser(self, dialect: Dialect) -> Option<&'static str> {
        match (self, dialect) {
            (Family::Qwen3, _) => Some("qwen3"),
            (Family::DeepSeekR1, _) => Some("deepseek_r1"),
            (Family::GptOss, Dialect::Vllm) => Some("openai_gptoss"),
            (Family::GptOss, Dialect::Dynamo) => Some("gpt_oss"),
            (Family::Llama3 | Family::Mistral, _) => None,
        }
    }
}

/// What a render asks the engine to parse, names resolved for one [`Dialect`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsers {
    /// The tool-call parser; `Some` means tool calling on (vLLM `--enable-auto-tool-choice`).
    pub tool_call_parser: Option<String>,
    /// The reasoning parser.
    pub reasoning_parser: Option<String>,
}

impl Parsers {
    /// Whether nothing is rendered.
    pub fn is_empty(&self) -> bool {
        self.tool_call_parser.is_none() && self.reasoning_parser.is_none()
    }
}

/// Whether `spec` asks for tool calling (`spec.engine.toolCalling: true`).
pub fn tool_calling(spec: &ModelDeploymentSpec) -> bool {
    spec.engine.as_ref().and_then(|e| e.tool_calling) == Some(true)
}

/// The parsers `spec` asks of an engine speaking `dialect`: with tool calling, the explicit
/// `toolCallParser` or the model family's (`Err` with [`tool_call_parser_unknown`] when there is
/// neither) and the explicit `reasoningParser` or the family's; without it, the explicit
/// `reasoningParser` only (`toolCallParser` alone is refused by validation and renders nothing).
pub fn resolve(spec: &ModelDeploymentSpec, dialect: Dialect) -> Result<Parsers, String> {
    let engine = spec.engine.as_ref();
    let explicit_reasoning = engine.and_then(|e| e.reasoning_parser.clone());
    if !tool_calling(spec) {
        return Ok(Parsers {
            tool_call_parser: None,
            reasoning_parser: explicit_reasoning,
        });
    }
    let model = spec.model.id.as_deref().unwrap_or_default();
    let family = Family::of(model);
    let tool_call_parser = engine
        .and_then(|e| e.tool_call_parser.clone())
        .or_else(|| {
            family
                .and_then(|f| f.tool_call_parser(dialect))
                .map(str::to_string)
        })
        .ok_or_else(|| tool_call_parser_unknown(model))?;
    let reasoning_parser = explicit_reasoning.or_else(|| {
        family
            .and_then(|f| f.reasoning_parser(dialect))
            .map(str::to_string)
    });
    Ok(Parsers {
        tool_call_parser: Some(tool_call_parser),
        reasoning_parser,
    })
}

/// Launch flags (without dashes, `-` or `_` spelled alike) a render derives from
/// `toolCalling`/`toolCallParser`, in any engine's or Dynamo's spelling.
pub const TOOL_CALL_FLAGS: [&str; 3] = [
    "enable-auto-tool-choice",
    "tool-call-parser",
    "dyn-tool-call-parser",
];
/// Launch flags a render derives from `reasoningParser` (or the family's with tool calling).
pub const REASONING_FLAGS: [&str; 3] = [
    "reasoning-parser",
    "dyn-reasoning-parser",
    "enable-reasoning",
];

/// The `spec.engine` field a render derives the launch flag `key` (`--key`, `key` or `key_x`
/// spellings alike) from, when `spec` asks for it: `toolCalling` for the tool-call flags with
/// tool calling on, `reasoningParser` for the reasoning flags with a reasoning parser or tool
/// calling on (the family's reasoning parser may be rendered). `None` when the flag is the
/// user's to set.
pub fn rendered_field_of_flag(spec: &ModelDeploymentSpec, key: &str) -> Option<&'static str> {
    let key = key.trim_start_matches('-').replace('_', "-");
    let calling = tool_calling(spec);
    let reasoning = calling
        || spec
            .engine
            .as_ref()
            .is_some_and(|e| e.reasoning_parser.is_some());
    if calling && TOOL_CALL_FLAGS.contains(&key.as_str()) {
        Some("toolCalling")
    } else if reasoning && REASONING_FLAGS.contains(&key.as_str()) {
        Some("reasoningParser")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn spec(value: serde_json::Value) -> ModelDeploymentSpec {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn parser_names_follow_the_grammar() {
        assert_eq!(name_error("hermes"), None);
        assert_eq!(name_error("llama3_json"), None);
        assert_eq!(name_error("deepseek-r1"), None);
        assert_eq!(name_error("v1.2"), None);
        assert_eq!(name_error(&"a".repeat(64)), None);
        assert_eq!(name_error(""), Some(PARSER_EMPTY));
        assert_eq!(name_error("auto"), Some(PARSER_RESERVED));
        assert_eq!(name_error("none"), Some(PARSER_RESERVED));
        assert_eq!(name_error("AUTO"), Some(PARSER_LOWER_CASE));
        assert_eq!(name_error("Hermes"), Some(PARSER_LOWER_CASE));
        assert_eq!(name_error(&"a".repeat(65)), Some(PARSER_TOO_LONG));
        for hostile in [
            "hermes;rm -rf /",
            "a b",
            "$(id)",
            "`id`",
            "a|b",
            "a&b",
            "a>b",
            "a/b",
            "é",
            "a\nb",
        ] {
            assert_eq!(name_error(hostile), Some(PARSER_CHARACTERS), "{hostile:?}");
        }
    }

    #[test]
    fn families_are_recognised_by_the_model_name() {
        for (id, family) in [
            ("Qwen/Qwen3-0.6B", Some(Family::Qwen3)),
            ("Qwen/Qwen3-235B-A22B-Instruct-2507", Some(Family::Qwen3)),
            ("qwen3", Some(Family::Qwen3)),
            ("/models/qwen3-8b", Some(Family::Qwen3)),
            ("Qwen/Qwen3-Coder-30B-A3B-Instruct", None),
            ("Qwen/Qwen3.5", None),
            ("Qwen/Qwen2.5-7B", None),
            ("meta-llama/Llama-3.1-8B-Instruct", Some(Family::Llama3)),
            (
                "meta-llama/Meta-Llama-3.1-70B-Instruct",
                Some(Family::Llama3),
            ),
            ("meta-llama/Llama-3.3-70B-Instruct", Some(Family::Llama3)),
            ("meta-llama/Meta-Llama-3-8B-Instruct", None),
            ("mistralai/Mistral-7B-Instruct-v0.3", Some(Family::Mistral)),
            (
                "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
                Some(Family::DeepSeekR1),
            ),
            ("openai/gpt-oss-20b", Some(Family::GptOss)),
            ("acme/model", None),
            ("", None),
        ] {
            assert_eq!(Family::of(id), family, "{id}");
        }
    }

    #[test]
    fn tool_calling_resolves_the_family_parsers_per_dialect() {
        let qwen =
            spec(json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"toolCalling": true}}));
        for dialect in [Dialect::Vllm, Dialect::Dynamo] {
            assert_eq!(
                resolve(&qwen, dialect),
                Ok(Parsers {
                    tool_call_parser: Some("hermes".into()),
                    reasoning_parser: Some("qwen3".into())
                })
            );
        }
        let oss =
            spec(json!({"model": {"id": "openai/gpt-oss-20b"}, "engine": {"toolCalling": true}}));
        assert_eq!(
            resolve(&oss, Dialect::Vllm).unwrap(),
            Parsers {
                tool_call_parser: Some("openai".into()),
                reasoning_parser: Some("openai_gptoss".into())
            }
        );
        assert_eq!(
            resolve(&oss, Dialect::Dynamo).unwrap(),
            Parsers {
                tool_call_parser: Some("harmony".into()),
                reasoning_parser: Some("gpt_oss".into())
            }
        );
        let llama = spec(
            json!({"model": {"id": "meta-llama/Llama-3.1-8B-Instruct"}, "engine": {"toolCalling": true}}),
        );
        assert_eq!(
            resolve(&llama, Dialect::Vllm).unwrap(),
            Parsers {
                tool_call_parser: Some("llama3_json".into()),
                reasoning_parser: None
            }
        );
    }

    #[test]
    fn explicit_parsers_win_and_unknown_models_need_one() {
        let explicit = spec(json!({"model": {"id": "Qwen/Qwen3-0.6B"},
            "engine": {"toolCalling": true, "toolCallParser": "qwen3_coder", "reasoningParser": "deepseek_r1"}}));
        assert_eq!(
            resolve(&explicit, Dialect::Dynamo).unwrap(),
            Parsers {
                tool_call_parser: Some("qwen3_coder".into()),
                reasoning_parser: Some("deepseek_r1".into())
            }
        );
        let unknown = spec(json!({"model": {"id": "acme/model"}, "engine": {"toolCalling": true}}));
        assert_eq!(
            resolve(&unknown, Dialect::Vllm),
            Err("spec.engine.toolCalling: true needs a tool-call parser and none is known for model \"acme/model\" (known: Qwen3, Llama 3.1 to 3.3, Mistral, gpt-oss): set spec.engine.toolCallParser to the engine's parser for this model, e.g. hermes".into())
        );
        // A reasoning model without a tool format: tool calling needs an explicit parser.
        let r1 = spec(
            json!({"model": {"id": "deepseek-ai/DeepSeek-R1"}, "engine": {"toolCalling": true}}),
        );
        assert!(resolve(&r1, Dialect::Vllm).is_err());
        let unknown_named = spec(json!({"model": {"id": "acme/model"},
            "engine": {"toolCalling": true, "toolCallParser": "hermes"}}));
        assert_eq!(
            resolve(&unknown_named, Dialect::Vllm).unwrap(),
            Parsers {
                tool_call_parser: Some("hermes".into()),
                reasoning_parser: None
            }
        );
    }

    #[test]
    fn without_tool_calling_only_an_explicit_reasoning_parser_is_rendered() {
        let reasoning = spec(json!({"model": {"id": "Qwen/Qwen3-0.6B"},
            "engine": {"reasoningParser": "qwen3"}}));
        assert_eq!(
            resolve(&reasoning, Dialect::Vllm).unwrap(),
            Parsers {
                tool_call_parser: None,
                reasoning_parser: Some("qwen3".into())
            }
        );
        for off in [
            json!({"model": {"id": "Qwen/Qwen3-0.6B"}}),
            json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"toolCalling": false}}),
            json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"toolCalling": false, "toolCallParser": "hermes"}}),
        ] {
            assert!(resolve(&spec(off), Dialect::Vllm).unwrap().is_empty());
        }
    }

    #[test]
    fn flags_derived_from_the_fields_are_named() {
        let calling = spec(json!({"model": {"id": "a/b"}, "engine": {"toolCalling": true}}));
        assert_eq!(
            rendered_field_of_flag(&calling, "tool-call-parser"),
            Some("toolCalling")
        );
        assert_eq!(
            rendered_field_of_flag(&calling, "tool_call_parser"),
            Some("toolCalling")
        );
        assert_eq!(
            rendered_field_of_flag(&calling, "--enable-auto-tool-choice"),
            Some("toolCalling")
        );
        assert_eq!(
            rendered_field_of_flag(&calling, "dyn-reasoning-parser"),
            Some("reasoningParser")
        );
        assert_eq!(rendered_field_of_flag(&calling, "max-num-seqs"), None);
        let reasoning =
            spec(json!({"model": {"id": "a/b"}, "engine": {"reasoningParser": "qwen3"}}));
        assert_eq!(rendered_field_of_flag(&reasoning, "tool-call-parser"), None);
        assert_eq!(
            rendered_field_of_flag(&reasoning, "reasoning-parser"),
            Some("reasoningParser")
        );
        // Tool calling off: the flags are the user's escape hatch.
        let off = spec(json!({"model": {"id": "a/b"}, "engine": {"toolCalling": false}}));
        assert_eq!(rendered_field_of_flag(&off, "tool-call-parser"), None);
        assert_eq!(rendered_field_of_flag(&off, "reasoning-parser"), None);
    }
}
