//! A bounded pre-scan of an AdmissionReview body, run before it is parsed (pure).
//!
//! A JSON parser recurses once per nesting level, so a ModelDeployment whose `provider.overrides`
//! nests a thousand levels deep would fail to parse and the API server would report only
//! `failed calling webhook`. This scan walks the bytes once, iteratively, keeps only the path of
//! keys down to the current position (bounded by [`MAX_DEPTH`]), and finds the request's `uid`,
//! so the webhook can answer with a denial that names the field.

/// Deepest nesting accepted in an AdmissionReview (the object itself sits at depth 3:
/// review → request → object). Well above what any valid ModelDeployment needs and below the
/// JSON parser's own recursion limit.
pub const MAX_DEPTH: usize = 64;

/// Longest key kept in a reported path.
const MAX_KEY_LENGTH: usize = 128;

/// What the scan found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// `request.uid`, when found before the scan stopped.
    pub uid: Option<String>,
    /// The path (from the object, e.g. `spec.provider.overrides.a.b`) where the nesting went
    /// deeper than [`MAX_DEPTH`].
    pub too_deep_at: Option<String>,
}

enum Frame {
    Object { key: Option<String> },
    Array { index: usize },
}

/// Scans all of `body` (linear, constant memory beyond [`MAX_DEPTH`] frames). When the nesting
/// goes deeper than [`MAX_DEPTH`] in several places, the first one under the object's `spec` is
/// reported (`metadata.managedFields` mirrors the spec's shape and comes first).
pub fn scan(body: &[u8]) -> Scan {
    let mut stack: Vec<Frame> = Vec::new();
    // Levels opened beyond MAX_DEPTH, counted but not kept.
    let mut beyond = 0usize;
    let mut expect_key = false;
    let mut out = Scan::default();
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'{' | b'[' if beyond > 0 || stack.len() >= MAX_DEPTH => {
                if beyond == 0 {
                    let at = path(&stack);
                    let better = out
                        .too_deep_at
                        .as_deref()
                        .is_none_or(|found| !found.starts_with("spec") && at.starts_with("spec"));
                    if better {
                        out.too_deep_at = Some(at);
                    }
                }
                beyond += 1;
            }
            b'{' | b'[' => {
                stack.push(if body[i] == b'{' {
                    Frame::Object { key: None }
                } else {
                    Frame::Array { index: 0 }
                });
                expect_key = body[i] == b'{';
            }
            b'}' | b']' if beyond > 0 => beyond -= 1,
            b'}' | b']' => {
                stack.pop();
                expect_key = false;
            }
            b',' if beyond == 0 => match stack.last_mut() {
                Some(Frame::Object { .. }) => expect_key = true,
                Some(Frame::Array { index }) => *index += 1,
                None => {}
            },
            b':' => expect_key = false,
            b'"' => {
                let start = i + 1;
                i = start;
                while i < body.len() && body[i] != b'"' {
                    i += if body[i] == b'\\' { 2 } else { 1 };
                }
                let text = body.get(start..i.min(body.len())).unwrap_or_default();
                if beyond > 0 {
                    // Inside a level that is not kept: nothing to record.
                } else if expect_key {
                    if let Some(Frame::Object { key }) = stack.last_mut() {
                        let end = text.len().min(MAX_KEY_LENGTH);
                        *key = Some(String::from_utf8_lossy(&text[..end]).into_owned());
                    }
                } else if stack.len() == 2 && is_request_uid(&stack) {
                    out.uid = Some(String::from_utf8_lossy(text).into_owned());
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

fn is_request_uid(stack: &[Frame]) -> bool {
    matches!(
        (stack.first(), stack.get(1)),
        (Some(Frame::Object { key: Some(outer) }), Some(Frame::Object { key: Some(inner) }))
            if outer == "request" && inner == "uid"
    )
}

/// The path of `stack`, relative to `request.object` when inside it.
fn path(stack: &[Frame]) -> String {
    let mut parts = String::new();
    for frame in stack {
        match frame {
            Frame::Object { key: Some(key) } => {
                if !parts.is_empty() {
                    parts.push('.');
                }
                parts.push_str(key);
            }
            Frame::Object { key: None } => {}
            Frame::Array { index } => parts.push_str(&format!("[{index}]")),
        }
    }
    parts
        .strip_prefix("request.object.")
        .or_else(|| parts.strip_prefix("request.oldObject."))
        .unwrap_or(&parts)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(object: &str) -> Vec<u8> {
        format!(r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"abc-123","kind":{{"group":"airunway.ai"}},"object":{object}}}}}"#).into_bytes()
    }

    #[test]
    fn a_normal_review_passes_and_gives_its_uid() {
        let body = review(
            r#"{"metadata":{"name":"x","annotations":{"a":"{[\"}"}},"spec":{"env":[{"name":"A","value":"x\"y"}]}}"#,
        );
        assert_eq!(
            scan(&body),
            Scan {
                uid: Some("abc-123".into()),
                too_deep_at: None
            }
        );
    }

    #[test]
    fn deep_overrides_are_named() {
        let deep = format!(
            r#"{{"spec":{{"provider":{{"overrides":{}1{}}}}}}}"#,
            r#"{"a":"#.repeat(1000),
            "}".repeat(1000)
        );
        let found = scan(&review(&deep));
        assert_eq!(found.uid.as_deref(), Some("abc-123"));
        let at = found.too_deep_at.unwrap();
        assert!(at.starts_with("spec.provider.overrides.a.a.a"), "{at}");
        // review, request, object, spec and provider take five levels.
        assert_eq!(at.matches(".a").count(), MAX_DEPTH - 5);
    }

    #[test]
    fn the_spec_path_is_preferred_to_managed_fields() {
        let deep = |open: &str, close: &str| format!("{}1{}", open.repeat(200), close.repeat(200));
        let object = format!(
            r#"{{"metadata":{{"managedFields":[{{"fieldsV1":{}}}]}},"spec":{{"provider":{{"overrides":{}}}}}}}"#,
            deep(r#"{"f:a":"#, "}"),
            deep(r#"{"a":"#, "}")
        );
        let found = scan(&review(&object));
        assert_eq!(found.uid.as_deref(), Some("abc-123"));
        assert!(
            found
                .too_deep_at
                .as_deref()
                .is_some_and(|at| at.starts_with("spec.provider.overrides.a.a")),
            "{found:?}"
        );
    }

    #[test]
    fn deep_arrays_are_named_with_indexes() {
        let deep = format!(
            r#"{{"spec":{{"provider":{{"overrides":{{"x":{}{}}}}}}}}}"#,
            "[".repeat(100),
            "]".repeat(100)
        );
        let at = scan(&review(&deep)).too_deep_at.unwrap();
        assert!(at.starts_with("spec.provider.overrides.x[0][0]"), "{at}");
    }
}
