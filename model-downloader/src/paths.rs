//! Validation of the untrusted names the server sends: model file paths become local paths
//! under the target directory, so each must be a plain relative path.

use crate::error::Error;

/// The longest file path accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;
/// The longest single path component accepted, in bytes (the usual file-system limit).
pub const MAX_COMPONENT_BYTES: usize = 255;
/// The most files one listing may hold.
pub const MAX_FILES: usize = 100_000;
/// The suffix of a file being written (resumed from its length).
pub const PART_SUFFIX: &str = ".part";

/// Checks that `path` (a file name from the listing) is a safe relative path: not empty, not
/// absolute, no `.`/`..`/empty components, no backslash or control character, bounded length,
/// and not ending in the partial-file suffix.
pub fn validate_relative(path: &str) -> Result<(), Error> {
    let refuse = |reason| {
        Err(Error::UnsafePath {
            path: path.chars().take(200).collect(),
            reason,
        })
    };
    if path.is_empty() {
        return refuse("empty path");
    }
    if path.len() > MAX_PATH_BYTES {
        return refuse("path longer than 1024 bytes");
    }
    if path.starts_with('/') {
        return refuse("absolute path");
    }
    if path.chars().any(|c| c == '\\' || c.is_control()) {
        return refuse("backslash or control character");
    }
    if path.ends_with(PART_SUFFIX) {
        return refuse("name ends in the partial-file suffix .part");
    }
    for component in path.split('/') {
        match component {
            "" => return refuse("empty path component"),
            "." | ".." => return refuse("`.` or `..` component"),
            c if c.len() > MAX_COMPONENT_BYTES => {
                return refuse("path component longer than 255 bytes");
            }
            _ => {}
        }
    }
    Ok(())
}

/// Checks a Hugging Face model id: `name` or `namespace/name`, each of ASCII letters, digits,
/// `-`, `_` and `.`, not `.`/`..`, at most 96 characters in all.
pub fn validate_model_id(id: &str) -> Result<(), Error> {
    let bad = || {
        Err(Error::Config(format!(
            "model id {id:?} is not `namespace/name` of [A-Za-z0-9._-]"
        )))
    };
    if id.is_empty() || id.len() > 96 {
        return bad();
    }
    let parts: Vec<&str> = id.split('/').collect();
    if parts.len() > 2 {
        return bad();
    }
    for part in parts {
        if part.is_empty()
            || part == "."
            || part == ".."
            || !part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return bad();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_nested_paths_pass() {
        for ok in [
            "config.json",
            "a/b/c.safetensors",
            "tokenizer/vocab.txt",
            ".gitattributes",
            "a..b",
        ] {
            assert!(validate_relative(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn hostile_paths_are_refused() {
        let long_component = "x".repeat(256);
        let long_path = format!("{}/y", vec!["d"; 600].join("/"));
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a/./b",
            "a//b",
            "a/",
            "a\\..\\b",
            "a\u{0}b",
            "model.part",
            long_component.as_str(),
            long_path.as_str(),
        ] {
            let err = validate_relative(bad).err();
            assert!(
                matches!(err, Some(Error::UnsafePath { .. })),
                "{bad:?} accepted"
            );
        }
    }

    #[test]
    fn model_ids() {
        for ok in ["gpt2", "Qwen/Qwen2.5-0.5B-Instruct", "org/m_v1.0"] {
            assert!(validate_model_id(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a/b/c", "../x", "a/..", "a b", "/a", "a/", "a?b"] {
            assert!(validate_model_id(bad).is_err(), "{bad:?}");
        }
    }
}
