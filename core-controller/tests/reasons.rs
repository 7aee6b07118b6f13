//! Every condition and event reason (and event action) the core writes is a constant of
//! `airunway_api::constants`: no string literal in a reason's place anywhere in the core's
//! sources outside their tests.
//!
//! The sources are split into tokens (comments dropped, string literals kept whole) and these
//! places are looked at:
//! - a field or JSON key `reason` followed by `:` and a string literal (`reason: "X"`,
//!   `"reason": "X"` in `json!`);
//! - `.reason("X")`;
//! - the reason (and action) argument of the calls that take one: `.normal(..)`,
//!   `.warning(..)` (event publisher), `DesiredCondition::new(..)`,
//!   `DesiredGateway::condition(..)`, the gateway route plan's `event(..)` and the status
//!   module's `Verdict` constructors, `stalled(..)` and `in_progress(..)`.
//!
//! `#[cfg(test)]` items are skipped (tests write foreign reasons into route statuses).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Str(String),
    Ident(String),
    Punct(char),
}

/// The tokens of Rust source `text` (enough of the grammar to find string literals, idents and
/// punctuation; numbers and lifetimes become idents).
fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == '"' {
            let mut value = String::new();
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    value.push(chars[i]);
                    i += 1;
                }
                if i < chars.len() {
                    value.push(chars[i]);
                }
                i += 1;
            }
            i += 1;
            out.push(Token::Str(value));
        } else if c == 'r' && matches!(next, Some('"') | Some('#')) && {
            let mut j = i + 1;
            while chars.get(j) == Some(&'#') {
                j += 1;
            }
            chars.get(j) == Some(&'"')
        } {
            let mut hashes = 0;
            i += 1;
            while chars[i] == '#' {
                hashes += 1;
                i += 1;
            }
            i += 1;
            let closing: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let rest: String = chars[i..].iter().collect();
            let end = rest.find(&closing).unwrap_or(rest.len());
            out.push(Token::Str(rest[..end].to_string()));
            i += rest[..end].chars().count() + closing.chars().count();
        } else if c == '\'' {
            // A char literal ('x', '\n', '\'') or a lifetime ('a).
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Ident(chars[start..i].iter().collect()));
        } else {
            out.push(Token::Punct(c));
            i += 1;
        }
    }
    out
}

/// `tokens` without the items under `#[cfg(test)]`.
fn without_tests(tokens: Vec<Token>) -> Vec<Token> {
    let cfg_test = [
        Token::Punct('#'),
        Token::Punct('['),
        Token::Ident("cfg".into()),
        Token::Punct('('),
        Token::Ident("test".into()),
        Token::Punct(')'),
        Token::Punct(']'),
    ];
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i..].starts_with(&cfg_test) {
            i += cfg_test.len();
            // The item: up to its first `;` or its balanced `{ .. }`.
            while i < tokens.len() && !matches!(tokens[i], Token::Punct('{') | Token::Punct(';')) {
                i += 1;
            }
            if tokens.get(i) == Some(&Token::Punct('{')) {
                let mut depth = 0;
                while i < tokens.len() {
                    match tokens[i] {
                        Token::Punct('{') => depth += 1,
                        Token::Punct('}') => depth -= 1,
                        _ => {}
                    }
                    i += 1;
                    if depth == 0 {
                        break;
                    }
                }
            } else {
                i += 1;
            }
        } else {
            out.push(tokens[i].clone());
            i += 1;
        }
    }
    out
}

/// The first token of each top-level argument of the call whose `(` is at `open`.
fn argument_starts(tokens: &[Token], open: usize) -> Vec<&Token> {
    let mut starts = Vec::new();
    let mut depth = 0;
    let mut expect_start = true;
    for token in &tokens[open + 1..] {
        match token {
            Token::Punct('(' | '[' | '{') => {
                if depth == 0 && expect_start {
                    starts.push(token);
                    expect_start = false;
                }
                depth += 1;
            }
            Token::Punct(')' | ']' | '}') => {
                if depth == 0 {
                    break;
                }
                depth -= 1;
            }
            Token::Punct(',') if depth == 0 => expect_start = true,
            _ => {
                if depth == 0 && expect_start {
                    starts.push(token);
                    expect_start = false;
                }
            }
        }
    }
    starts
}

/// The reason literals of `tokens`, with what they were found in.
fn reason_literals(tokens: &[Token]) -> Vec<String> {
    let ident = |i: usize, name: &str| matches!(tokens.get(i), Some(Token::Ident(n)) if n == name);
    let punct = |i: usize, c: char| tokens.get(i) == Some(&Token::Punct(c));
    let string = |i: usize| match tokens.get(i) {
        Some(Token::Str(s)) => Some(s.clone()),
        _ => None,
    };
    // `Type::function(` at `i`: the index of `(`.
    let path_call = |i: usize, ty: &str, function: &str| {
        (ident(i, ty)
            && punct(i + 1, ':')
            && punct(i + 2, ':')
            && ident(i + 3, function)
            && punct(i + 4, '('))
        .then_some(i + 4)
    };
    let mut found = Vec::new();
    for i in 0..tokens.len() {
        // `reason: "X"` and `"reason": "X"`.
        let key = ident(i, "reason") || string(i).as_deref() == Some("reason");
        if key
            && punct(i + 1, ':')
            && !punct(i + 2, ':')
            && let Some(literal) = string(i + 2)
        {
            found.push(format!("reason: {literal:?}"));
        }
        // `.reason("X")`.
        if punct(i, '.')
            && ident(i + 1, "reason")
            && punct(i + 2, '(')
            && let Some(literal) = string(i + 3)
        {
            found.push(format!(".reason({literal:?})"));
        }
        // Calls and the indexes of their reason (and action) arguments.
        let mut calls: Vec<(usize, &str, &[usize])> = Vec::new();
        for method in ["normal", "warning"] {
            if punct(i, '.') && ident(i + 1, method) && punct(i + 2, '(') {
                calls.push((i + 2, method, &[1, 2][..]));
            }
        }
        if let Some(open) = path_call(i, "DesiredCondition", "new") {
            calls.push((open, "DesiredCondition::new", &[2][..]));
        }
        if let Some(open) = path_call(i, "DesiredGateway", "condition") {
            calls.push((open, "DesiredGateway::condition", &[1][..]));
        }
        // The gateway route plan's `event(warning, reason, action, note)` and the status
        // module's `stalled(reason, message)` / `in_progress(reason, message)`.
        if ident(i, "event") && punct(i + 1, '(') {
            calls.push((i + 1, "event", &[1, 2][..]));
        }
        for function in ["stalled", "in_progress"] {
            if ident(i, function) && punct(i + 1, '(') {
                calls.push((i + 1, function, &[0][..]));
            }
        }
        for function in ["passes", "waits", "stalls", "in_progress"] {
            if let Some(open) = path_call(i, "Verdict", function) {
                calls.push((open, "Verdict", &[1][..]));
            }
        }
        for (open, what, indexes) in calls {
            let arguments = argument_starts(tokens, open);
            for &index in indexes {
                if let Some(Token::Str(literal)) = arguments.get(index) {
                    found.push(format!("{what}(.., {literal:?}, ..)"));
                }
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            // `tests.rs`: a test module's file (`#[cfg(test)] mod tests;`), whose fixtures hold
            // other controllers' reasons (e.g. KEDA's and the HPA's) as input.
            && path.file_name().is_some_and(|n| n != "tests.rs")
        {
            out.push(path);
        }
    }
}

/// Literals not ours to move yet, each with the file it is in.
const NOT_YET_MOVED: [(&str, &str); 1] = [
    // The admission response's cause (Kubernetes' CauseType), in the webhook module another
    // change is splitting: `airunway_api::constants::cause_types::FIELD_VALUE_INVALID`.
    ("webhook/admission.rs", "reason: \"FieldValueInvalid\""),
];

#[test]
fn no_reason_is_a_string_literal_in_the_core() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    assert!(files.len() > 20, "the core's sources: {files:?}");
    let mut offenders = Vec::new();
    for file in &files {
        let relative = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .to_string();
        let text = std::fs::read_to_string(file).unwrap();
        for literal in reason_literals(&without_tests(tokens(&text))) {
            if !NOT_YET_MOVED.contains(&(relative.as_str(), literal.as_str())) {
                offenders.push(format!("{relative}: {literal}"));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "reasons written as literals (name them in airunway_api::constants): {offenders:#?}"
    );
}

#[test]
fn the_scanner_finds_each_form_and_skips_tests_and_comments() {
    let source = r##"
        // reason: "InAComment"
        /* .normal(&r, "InABlock", "A", n) */
        fn f() {
            DesiredCondition::new(t, false, "Literal1", format!("{a}, {b}"));
            DesiredCondition::new(t, false, reasons::X, "a message, not a reason");
            events.normal(&md.object_ref(&()), "Literal2", event_actions::A, note);
            events.warning(&r, event_reasons::B, "Literal3", note);
            let c = Cause { reason: "Literal4".into() };
            json!({"reason": "Literal5", "message": "m"});
            builder.reason("Literal6");
            DesiredGateway::condition(false, "Literal7", message);
            Verdict::stalls(t, "Literal8", message);
            steps.push(event(false, "Literal9", "Literal10", note));
            let p = stalled("Literal11", &message);
            let ok = DesiredGateway::condition(false, reasons::NO_GATEWAY, "text");
            let fine = c.reason == "compared, not written";
            let path = reason::CONSTANT;
            let s = r#"reason: "InARawString""#;
            let ch = '"';
        }
        #[cfg(test)]
        mod tests {
            fn t() { DesiredCondition::new(t, false, "InATest", m); }
        }
    "##;
    let found = reason_literals(&without_tests(tokens(source)));
    let literals: Vec<&str> = found.iter().filter_map(|f| f.split('"').nth(1)).collect();
    assert_eq!(
        literals,
        [
            "Literal1",
            "Literal2",
            "Literal3",
            "Literal4",
            "Literal5",
            "Literal6",
            "Literal7",
            "Literal8",
            "Literal9",
            "Literal10",
            "Literal11"
        ],
        "{found:#?}"
    );
}
