//! One classification of [`kube::Error`] for every AI Runway binary: the `error_type` metrics
//! label ([`ErrorClass::category`]) and whether a reconcile that failed with it is retried with
//! backoff ([`ErrorClass::is_transient`]) or waits for a change of the object; and
//! [`undeclared_fields`], which reads from a refused write the fields the installed schema does
//! not declare (a write with `fieldValidation=Strict`, or any server-side apply).

/// What kind of failure a [`kube::Error`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorClass {
    /// 409: someone else wrote first (an optimistic update, a field-manager conflict).
    Conflict,
    /// 403: RBAC not (yet) granted.
    Forbidden,
    /// 404: the object or its kind is gone.
    NotFound,
    /// 429: the API server throttles us.
    Throttled,
    /// Another 4xx: the API server refused the request as it is (invalid, unprocessable).
    Rejected,
    /// 5xx: the API server failed.
    ServerError,
    /// No answer from the API server (connection, TLS, timeout, decoding).
    Transport,
}

impl ErrorClass {
    /// Classifies `error`.
    pub fn of(error: &kube::Error) -> ErrorClass {
        match error {
            kube::Error::Api(status) => ErrorClass::of_code(status.code),
            _ => ErrorClass::Transport,
        }
    }

    /// Classifies an API server response code (`>= 400`).
    pub fn of_code(code: u16) -> ErrorClass {
        match code {
            409 => ErrorClass::Conflict,
            403 => ErrorClass::Forbidden,
            404 => ErrorClass::NotFound,
            429 => ErrorClass::Throttled,
            400..=499 => ErrorClass::Rejected,
            _ => ErrorClass::ServerError,
        }
    }

    /// The `error_type` metrics label.
    pub fn category(self) -> &'static str {
        match self {
            ErrorClass::Conflict => "conflict",
            ErrorClass::Forbidden => "forbidden",
            ErrorClass::NotFound => "not_found",
            ErrorClass::Transport => "transport",
            ErrorClass::Throttled | ErrorClass::Rejected | ErrorClass::ServerError => "api_error",
        }
    }

    /// Whether the same request may succeed later without any change of the object: a
    /// conflict, throttling, RBAC being granted, a server or transport failure. A rejected
    /// request is not retried on a timer; it waits for the object (or its kind) to change.
    pub fn is_transient(self) -> bool {
        !matches!(self, ErrorClass::Rejected)
    }
}

/// The fields a refused write carried that the installed schema does not declare, read from
/// the API server's answer (`None`: the refusal is something else). The paths are as the
/// API server writes them, without a leading dot: `spec.services.Frontend.foo`,
/// `spec.template.spec.containers[name="x"].foo`.
///
/// Two answers are recognised, each only as the whole diagnostic of the message (an
/// `Invalid` answer echoes a user's value back, and a value may contain the same words):
/// - the strict decoder's, for a custom resource written with `fieldValidation=Strict`:
///   `... strict decoding error: unknown field "spec.foo", unknown field "spec.bar"` at the
///   end of the message;
/// - the field manager's typed conversion, for any server-side apply, with or without strict
///   validation, answered with a 500 (kube-apiserver v1.36.3 names one or all such fields):
///   `failed to create typed patch object (<object>; <gvk>): .spec.foo: field not declared in
///   schema` (one path, or `errors:` followed by one path per line), also `typed live object`
///   when the stored object itself carries a field the schema lost.
pub fn undeclared_fields(error: &kube::Error) -> Option<Vec<String>> {
    match error {
        kube::Error::Api(status) => undeclared_fields_in(&status.message),
        _ => None,
    }
}

/// The API server's message of `error` (its `Status.message`), else the error as text.
pub fn message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => status.message.clone(),
        other => other.to_string(),
    }
}

/// [`undeclared_fields`] of an API server message (pure).
/// The paths come sorted and without repeats: the API server lists them in no fixed order
/// (and may name only some), and a message built from them must not change between two
/// answers to the same write.
pub fn undeclared_fields_in(message: &str) -> Option<Vec<String>> {
    let mut fields = strict_decoding(message).or_else(|| typed_conversion(message))?;
    fields.sort();
    fields.dedup();
    Some(fields)
}

const STRICT_DECODING: &str = "strict decoding error: ";
const UNKNOWN_FIELD: &str = "unknown field \"";
const TYPED_OBJECT: [&str; 2] = [
    "failed to create typed patch object (",
    "failed to create typed live object (",
];
const NOT_DECLARED: &str = ": field not declared in schema";

/// `strict decoding error: unknown field "a", unknown field "b"` ending the message, preceded
/// by its start or `": "`.
fn strict_decoding(message: &str) -> Option<Vec<String>> {
    message
        .match_indices(STRICT_DECODING)
        .filter(|(at, _)| *at == 0 || message[..*at].ends_with(": "))
        .find_map(|(at, _)| unknown_fields(&message[at + STRICT_DECODING.len()..]))
}

/// `unknown field "a", unknown field "b"` and nothing after it.
fn unknown_fields(mut rest: &str) -> Option<Vec<String>> {
    let mut fields = Vec::new();
    loop {
        rest = rest.strip_prefix(UNKNOWN_FIELD)?;
        let (field, after) = quoted(rest)?;
        fields.push(field);
        if after.is_empty() {
            return Some(fields);
        }
        rest = after.strip_prefix(", ")?;
    }
}

/// The rest of a Go `%q` string whose opening quote is consumed: its text (backslash escapes
/// undone) and what follows the closing quote.
fn quoted(text: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &text[i + 1..])),
            '\\' => out.push(chars.next()?.1),
            c => out.push(c),
        }
    }
    None
}

/// The field manager's `failed to create typed patch object (...): <errors>` where every error
/// is `<path>: field not declared in schema`.
fn typed_conversion(message: &str) -> Option<Vec<String>> {
    let body = message
        .strip_prefix("Internal error occurred: ")
        .unwrap_or(message);
    let rest = TYPED_OBJECT
        .iter()
        .find_map(|prefix| body.strip_prefix(prefix))?;
    let (_, errors) = rest.split_once("): ")?;
    let errors = errors.strip_prefix("errors:").unwrap_or(errors);
    let fields: Option<Vec<String>> = errors
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(|line| {
            let path = line.strip_suffix(NOT_DECLARED)?;
            (!path.is_empty() && !path.contains(' '))
                .then(|| path.trim_start_matches('.').to_string())
        })
        .collect();
    fields.filter(|f| !f.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_one_label_and_one_retry_policy() {
        let cases = [
            (409, "conflict", true),
            (403, "forbidden", true),
            (404, "not_found", true),
            (429, "api_error", true),
            (422, "api_error", false),
            (400, "api_error", false),
            (500, "api_error", true),
            (503, "api_error", true),
        ];
        for (code, label, transient) in cases {
            let class = ErrorClass::of_code(code);
            assert_eq!(class.category(), label, "{code}");
            assert_eq!(class.is_transient(), transient, "{code}");
        }
        assert_eq!(
            ErrorClass::of(&kube::Error::LinesCodecMaxLineLengthExceeded),
            ErrorClass::Transport
        );
    }

    /// Answers of the real API server (kube-apiserver v1.36.3: a server-side apply is refused
    /// with a 500 naming one or all undeclared fields, in no fixed order, with or without
    /// `fieldValidation=Strict`; `e2e/tests/strict_writes.rs` prints them), the strict
    /// decoder's answer to a create or update (the Go AI Runway's tests), then look-alikes
    /// that are not refusals of an undeclared field.
    #[test]
    fn undeclared_fields_are_read_only_from_the_whole_diagnostic() {
        let fields = |list: &[&str]| Some(list.iter().map(|f| f.to_string()).collect::<Vec<_>>());
        let cases: [(&str, Option<Vec<String>>); 13] = [
            (
                "failed to create typed patch object (strict-dynamo-5682/chat; nvidia.com/v1alpha1, Kind=DynamoGraphDeployment): .spec.services.Epp.eppConfig: field not declared in schema",
                fields(&["spec.services.Epp.eppConfig"]),
            ),
            (
                "failed to create typed patch object (strict-kaito-ac4d/phi; kaito.sh/v1beta1, Kind=Workspace): .inference.config: field not declared in schema",
                fields(&["inference.config"]),
            ),
            (
                "failed to create typed patch object (/probe; /v1, Kind=ConfigMap): .spec: field not declared in schema",
                fields(&["spec"]),
            ),
            (
                r#"failed to create typed patch object (/probe; apps/v1, Kind=Deployment): .spec.template.spec.containers[name="main"].notAField: field not declared in schema"#,
                fields(&[r#"spec.template.spec.containers[name="main"].notAField"#]),
            ),
            (
                r#"DynamoGraphDeployment in version "v1alpha1" cannot be handled as a DynamoGraphDeployment: strict decoding error: unknown field "spec.services.VllmWorker.frontendSidecar""#,
                fields(&["spec.services.VllmWorker.frontendSidecar"]),
            ),
            (
                r#"X "x" is invalid: strict decoding error: unknown field "spec.a", unknown field "spec.b\"c""#,
                fields(&["spec.a", r#"spec.b"c"#]),
            ),
            (
                "failed to create typed patch object (/probe; nvidia.com/v1alpha1, Kind=DynamoGraphDeployment): errors:\n  .spec.services.Frontend.notAField: field not declared in schema\n  .spec.alsoNotAField: field not declared in schema",
                fields(&["spec.alsoNotAField", "spec.services.Frontend.notAField"]),
            ),
            (
                "Internal error occurred: failed to create typed patch object (ns/p; v1, Kind=X): errors:\n  .spec.b: field not declared in schema\n  .spec.a: field not declared in schema\n  .spec.b: field not declared in schema",
                fields(&["spec.a", "spec.b"]),
            ),
            // A user's value echoed back by an Invalid answer, with the same words in it.
            (
                r#"X.nvidia.com "x" is invalid: spec.engine.extraArgs: Invalid value: "--served-model-name=strict decoding error: unknown field \"spec.fake\"": must be a valid flag"#,
                None,
            ),
            (
                r#"X "x" is invalid: spec.args: Invalid value: "a: strict decoding error: unknown field "spec.fake"": must be a valid flag"#,
                None,
            ),
            (
                r#"failed to create typed patch object (default/x; apps/v1, Kind=Deployment): .spec.replicas: expected numeric (int or float), got string"#,
                None,
            ),
            (
                r#"admission webhook "x" denied the request: failed to create typed patch object (a/b; v1, Kind=X): .spec.x: field not declared in schema"#,
                None,
            ),
            (
                r#"Operation cannot be fulfilled on dynamographdeployments.nvidia.com "x": the object has been modified"#,
                None,
            ),
        ];
        for (message, expected) in cases {
            assert_eq!(undeclared_fields_in(message), expected, "{message}");
        }
    }
}
