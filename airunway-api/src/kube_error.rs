//! One classification of [`kube::Error`] for every AI Runway binary: the `error_type` metrics
//! label ([`ErrorClass::category`]) and whether a reconcile that failed with it is retried with
//! backoff ([`ErrorClass::is_transient`]) or waits for a change of the object.

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
}
