//! The kube-apiserver's audit log (JSON lines, `Metadata` level or more): the provider's own
//! requests, counted for the idempotence and permission checks.

use std::path::Path;

use jiff::Timestamp;
use serde::Deserialize;

use super::ConformanceError;

/// One audited request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// When the API server received it.
    pub at: Timestamp,
    /// The authenticated user.
    pub user: String,
    /// get, list, watch, create, update, patch, delete, deletecollection.
    pub verb: String,
    /// `resource` or `resource/subresource` (`(non-resource)` for a URL).
    pub resource: String,
    /// The object's namespace, if any.
    pub namespace: Option<String>,
    /// The object's name, if any.
    pub name: Option<String>,
    /// The request URI (with its query: `dryRun`, `fieldValidation`, `fieldManager`).
    pub uri: String,
    /// The response code (0 when the event has none).
    pub code: u16,
    /// The authorizer's decision (`allow`, `forbid`; the `authorization.k8s.io/decision`
    /// annotation), when recorded.
    pub decision: Option<String>,
}

impl Request {
    /// Whether the request writes.
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        ) && !self.uri.contains("dryRun=All")
    }

    /// Whether it is a write a provider makes in steady state: its registration's heartbeat
    /// (`inferenceproviderconfigs/status`) and its leader-election lease.
    pub fn is_keepalive(&self) -> bool {
        self.resource == "inferenceproviderconfigs/status" || self.resource == "leases"
    }

    /// `verb resource namespace/name -> code`.
    pub fn describe(&self) -> String {
        format!(
            "{} {} {}/{} -> {}",
            self.verb,
            self.resource,
            self.namespace.as_deref().unwrap_or(""),
            self.name.as_deref().unwrap_or(""),
            self.code
        )
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEvent {
    stage: String,
    verb: String,
    #[serde(default, rename = "requestURI")]
    request_uri: String,
    user: RawUser,
    object_ref: Option<RawObjectRef>,
    response_status: Option<RawStatus>,
    request_received_timestamp: Timestamp,
    #[serde(default)]
    annotations: std::collections::BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct RawUser {
    username: String,
}

#[derive(Deserialize)]
struct RawObjectRef {
    resource: Option<String>,
    subresource: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
}

#[derive(Deserialize)]
struct RawStatus {
    code: Option<u16>,
}

/// Parses one line (`None`: not a completed request).
pub fn parse_line(line: &str) -> Option<Request> {
    let raw: RawEvent = serde_json::from_str(line).ok()?;
    if raw.stage != "ResponseComplete" {
        return None;
    }
    let (resource, namespace, name) = match raw.object_ref {
        Some(o) => {
            let resource = match (o.resource, o.subresource) {
                (Some(r), Some(s)) => format!("{r}/{s}"),
                (Some(r), None) => r,
                (None, _) => "(non-resource)".to_string(),
            };
            (resource, o.namespace, o.name)
        }
        None => ("(non-resource)".to_string(), None, None),
    };
    Some(Request {
        at: raw.request_received_timestamp,
        user: raw.user.username,
        verb: raw.verb,
        resource,
        namespace,
        name,
        uri: raw.request_uri,
        code: raw.response_status.and_then(|s| s.code).unwrap_or(0),
        decision: raw
            .annotations
            .get("authorization.k8s.io/decision")
            .cloned(),
    })
}

/// The completed requests of `user` received at or after `since`, read from byte `offset` on
/// (the log's length when the run started: earlier lines are not read again).
pub fn read(
    path: &Path,
    offset: u64,
    user: &str,
    since: Timestamp,
) -> Result<Vec<Request>, ConformanceError> {
    use std::io::{Read, Seek, SeekFrom};
    let error = |source| ConformanceError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(error)?;
    file.seek(SeekFrom::Start(offset)).map_err(error)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(error)?;
    Ok(requests_of(&String::from_utf8_lossy(&bytes), user, since))
}

/// The log's current length (where a run starts reading).
pub fn length(path: &Path) -> Result<u64, ConformanceError> {
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|source| ConformanceError::Read {
            path: path.to_path_buf(),
            source,
        })
}

/// [`read`] on the log's text.
pub fn requests_of(text: &str, user: &str, since: Timestamp) -> Vec<Request> {
    text.lines()
        .filter(|l| l.contains(user))
        .filter_map(parse_line)
        .filter(|r| r.user == user && r.at >= since)
        .collect()
}

/// The writes among `requests` other than keep-alives, received in `[from, to)`.
pub fn writes_between(requests: &[Request], from: Timestamp, to: Timestamp) -> Vec<&Request> {
    requests
        .iter()
        .filter(|r| r.is_write() && !r.is_keepalive() && r.at >= from && r.at < to)
        .collect()
}

/// The requests refused for lack of permission: 403 from the authorizer (a 403 the authorizer
/// allowed comes from elsewhere, e.g. creating an object of a CRD being deleted).
pub fn forbidden(requests: &[Request]) -> Vec<&Request> {
    requests
        .iter()
        .filter(|r| r.code == 403 && r.decision.as_deref() != Some("allow"))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn line(
        stage: &str,
        verb: &str,
        resource: &str,
        sub: Option<&str>,
        code: u16,
        at: &str,
    ) -> String {
        serde_json::json!({
            "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "stage": stage,
            "verb": verb, "requestURI": format!("/api/v1/namespaces/ns/{resource}/x?fieldManager=p"),
            "user": {"username": "system:serviceaccount:ns:p", "groups": ["system:serviceaccounts"]},
            "objectRef": {"resource": resource, "subresource": sub, "namespace": "ns", "name": "x"},
            "responseStatus": {"metadata": {}, "code": code},
            "requestReceivedTimestamp": at, "stageTimestamp": at,
        })
        .to_string()
    }

    #[test]
    fn writes_exclude_keepalives_reads_other_users_and_other_times() {
        let text = [
            line(
                "ResponseComplete",
                "patch",
                "configmaps",
                None,
                200,
                "2026-01-01T00:00:01Z",
            ),
            line(
                "ResponseStarted",
                "watch",
                "configmaps",
                None,
                200,
                "2026-01-01T00:00:01Z",
            ),
            line(
                "ResponseComplete",
                "get",
                "configmaps",
                None,
                200,
                "2026-01-01T00:00:02Z",
            ),
            line(
                "ResponseComplete",
                "patch",
                "inferenceproviderconfigs",
                Some("status"),
                200,
                "2026-01-01T00:00:02Z",
            ),
            line(
                "ResponseComplete",
                "update",
                "leases",
                None,
                200,
                "2026-01-01T00:00:02Z",
            ),
            line(
                "ResponseComplete",
                "delete",
                "configmaps",
                None,
                403,
                "2026-01-01T00:00:09Z",
            ),
            line(
                "ResponseComplete",
                "patch",
                "configmaps",
                None,
                200,
                "2025-01-01T00:00:00Z",
            ),
            line(
                "ResponseComplete",
                "patch",
                "configmaps",
                None,
                200,
                "2026-01-01T00:00:03Z",
            )
            .replace(
                "system:serviceaccount:ns:p\"",
                "system:serviceaccount:ns:other\"",
            ),
        ]
        .join("\n");
        let since: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let requests = requests_of(&text, "system:serviceaccount:ns:p", since);
        assert_eq!(requests.len(), 5);
        let writes = writes_between(&requests, since, "2026-01-01T00:00:05Z".parse().unwrap());
        assert_eq!(writes.len(), 1);
        assert_eq!(writes[0].describe(), "patch configmaps ns/x -> 200");
        let refused = forbidden(&requests);
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].verb, "delete");
    }

    #[test]
    fn a_403_the_authorizer_allowed_is_not_a_missing_permission() {
        let at = "2026-01-01T00:00:01Z";
        let denied = line("ResponseComplete", "patch", "widgets", None, 403, at).replace(
            "\"level\"",
            "\"annotations\":{\"authorization.k8s.io/decision\":\"forbid\"},\"level\"",
        );
        let terminating = line("ResponseComplete", "patch", "widgets", None, 403, at).replace(
            "\"level\"",
            "\"annotations\":{\"authorization.k8s.io/decision\":\"allow\"},\"level\"",
        );
        let requests = requests_of(
            &[denied, terminating].join("\n"),
            "system:serviceaccount:ns:p",
            "2026-01-01T00:00:00Z".parse().unwrap(),
        );
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[0].decision.as_deref(), Some("forbid"));
        let refused = forbidden(&requests);
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].decision.as_deref(), Some("forbid"));
    }
}
