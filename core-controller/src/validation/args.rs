//! Engine arguments: `spec.engine.args` and `spec.engine.extraArgs`.

use std::collections::BTreeMap;

use airunway_api::constants::messages;
use airunway_api::v1alpha1::ModelDeploymentSpec;

use super::{FieldError, MAX_ARG_VALUE_LENGTH};

/// The flag name of a raw `engine.extraArgs` token: `--key` or `--key=value` give `key`; other
/// tokens (values, `-x`, `---x`) name no flag.
pub fn extra_arg_flag(token: &str) -> Option<&str> {
    let rest = token.strip_prefix("--")?;
    if rest.is_empty() || rest.starts_with('-') {
        return None;
    }
    Some(rest.split_once('=').map_or(rest, |(key, _)| key))
}

/// `spec.engine.extraArgs`: no control characters, no flag also set in `spec.engine.args`.
pub(super) fn validate_extra_args(spec: &ModelDeploymentSpec, errors: &mut Vec<FieldError>) {
    let Some(engine) = spec.engine.as_ref() else {
        return;
    };
    let args = engine.args.as_ref();
    for (i, token) in engine.extra_args.iter().flatten().enumerate() {
        if token.chars().any(char::is_control) {
            errors.push(FieldError::new(
                format!("spec.engine.extraArgs[{i}]"),
                "must not contain control characters such as newlines",
            ));
        }
        if let Some(key) = extra_arg_flag(token)
            && args.is_some_and(|a| a.contains_key(key))
        {
            errors.push(FieldError::new(
                "spec.engine.extraArgs",
                messages::launch_flag_conflict(key, token),
            ));
        }
    }
}

/// `spec.engine.args`: key syntax, value length, no control characters.
pub(super) fn validate_args(args: &BTreeMap<String, String>, errors: &mut Vec<FieldError>) {
    for (key, value) in args {
        let field = format!("spec.engine.args[{key}]");
        let valid_key = key.len() <= 63
            && key
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric())
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid_key {
            errors.push(FieldError::new(
                field.clone(),
                "argument names are written without leading dashes and use letters, digits, '-', '_' or '.' (at most 63), e.g. gpu-memory-utilization",
            ));
        }
        if value.len() > MAX_ARG_VALUE_LENGTH {
            errors.push(FieldError::new(
                field.clone(),
                format!("value must be at most {MAX_ARG_VALUE_LENGTH} characters"),
            ));
        }
        if value.chars().any(char::is_control) {
            errors.push(FieldError::new(
                field,
                "value must not contain control characters such as newlines",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{errors, one};
    use super::*;
    use serde_json::json;

    #[test]
    fn extra_args_may_not_repeat_args() {
        assert_eq!(extra_arg_flag("--max-num-seqs=8"), Some("max-num-seqs"));
        assert_eq!(extra_arg_flag("--max-num-seqs"), Some("max-num-seqs"));
        assert_eq!(extra_arg_flag("8"), None);
        assert_eq!(extra_arg_flag("--"), None);
        assert_eq!(extra_arg_flag("---x"), None);
        assert_eq!(extra_arg_flag("-x"), None);
        for token in ["--max-num-seqs=8", "--max-num-seqs"] {
            let spec = json!({"model": {"id": "a/b"}, "engine": {"type": "vllm",
                "args": {"max-num-seqs": "4"}, "extraArgs": [token, "8"]}});
            assert_eq!(
                errors(spec),
                one(
                    "spec.engine.extraArgs",
                    &format!(
                        "launch flag \"max-num-seqs\" is set in both spec.engine.args and spec.engine.extraArgs (\"{token}\"); set it in exactly one place so the engine does not receive conflicting values"
                    )
                )
            );
        }
        let bare = json!({"model": {"id": "a/b"}, "engine": {"type": "vllm",
            "args": {"max-num-seqs": "4"}, "extraArgs": ["max-num-seqs", "--other=1"]}});
        assert_eq!(errors(bare), vec![]);
        let control =
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm", "extraArgs": ["--a\nb"]}});
        assert_eq!(errors(control)[0].field, "spec.engine.extraArgs[0]");
    }
}
