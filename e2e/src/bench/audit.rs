//! The kube-apiserver's audit log (JSON lines at `Metadata` level): API requests per identity,
//! verb and resource within a time window (pure parsing and counting).

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// One audited request (the fields the benchmark reads).
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// When the API server received it.
    pub at: Timestamp,
    /// When it reached `stage` (for a watch: when it started or ended).
    pub stage_at: Timestamp,
    /// `ResponseStarted` (a watch began) or `ResponseComplete`.
    pub stage: String,
    /// get, list, watch, create, update, patch, delete, deletecollection.
    pub verb: String,
    /// The authenticated user.
    pub user: String,
    /// `resource` or `resource/subresource`.
    pub resource: String,
}

impl Request {
    /// Whether the request writes.
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        )
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEvent {
    stage: String,
    verb: String,
    user: RawUser,
    object_ref: Option<RawObjectRef>,
    request_received_timestamp: Timestamp,
    stage_timestamp: Timestamp,
}

#[derive(Deserialize)]
struct RawUser {
    username: String,
}

#[derive(Deserialize)]
struct RawObjectRef {
    resource: Option<String>,
    subresource: Option<String>,
}

/// Parses one audit log line (`None`: not an audit event of interest).
pub fn parse_line(line: &str) -> Option<Request> {
    let raw: RawEvent = serde_json::from_str(line).ok()?;
    let (resource, subresource) = raw
        .object_ref
        .map(|o| (o.resource, o.subresource))
        .unwrap_or_default();
    let resource = match (resource, subresource) {
        (Some(r), Some(s)) => format!("{r}/{s}"),
        (Some(r), None) => r,
        (None, _) => "(non-resource)".to_string(),
    };
    Some(Request {
        at: raw.request_received_timestamp,
        stage_at: raw.stage_timestamp,
        stage: raw.stage,
        verb: raw.verb,
        user: raw.user.username,
        resource,
    })
}

/// The short name of an identity: a ServiceAccount's name without its namespace.
pub fn short_user(user: &str) -> String {
    match user.strip_prefix("system:serviceaccount:") {
        Some(rest) => rest.rsplit(':').next().unwrap_or(rest).to_string(),
        None => user.to_string(),
    }
}

/// Completed requests counted by identity, then by `verb resource`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Counts {
    /// identity → `verb resource` → count.
    pub by_user: BTreeMap<String, BTreeMap<String, u64>>,
}

impl Counts {
    /// Counts the completed requests of `requests` received in `[from, to)`.
    pub fn of<'a>(
        requests: impl IntoIterator<Item = &'a Request>,
        from: Timestamp,
        to: Timestamp,
    ) -> Counts {
        let mut counts = Counts::default();
        for r in requests {
            if r.stage != "ResponseComplete" || r.at < from || r.at >= to || r.verb == "watch" {
                continue;
            }
            *counts
                .by_user
                .entry(short_user(&r.user))
                .or_default()
                .entry(format!("{} {}", r.verb, r.resource))
                .or_default() += 1;
        }
        counts
    }

    /// Writes by identity.
    pub fn writes(&self, user: &str) -> u64 {
        self.by_user
            .get(user)
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| {
                        let verb = k.split(' ').next().unwrap_or_default();
                        matches!(
                            verb,
                            "create" | "update" | "patch" | "delete" | "deletecollection"
                        )
                    })
                    .map(|(_, v)| *v)
                    .sum()
            })
            .unwrap_or_default()
    }

    /// Reads (get, list) by identity.
    pub fn reads(&self, user: &str) -> u64 {
        self.by_user
            .get(user)
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| k.starts_with("get ") || k.starts_with("list "))
                    .map(|(_, v)| *v)
                    .sum()
            })
            .unwrap_or_default()
    }

    /// Only the writes, as `identity: verb resource → count`.
    pub fn write_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (user, verbs) in &self.by_user {
            for (what, n) in verbs {
                let verb = what.split(' ').next().unwrap_or_default();
                if matches!(
                    verb,
                    "create" | "update" | "patch" | "delete" | "deletecollection"
                ) {
                    lines.push(format!("{user}: {what} × {n}"));
                }
            }
        }
        lines
    }
}

/// Watches open at `at` (started before it, not ended before it), by identity.
pub fn open_watches<'a>(
    requests: impl IntoIterator<Item = &'a Request>,
    at: Timestamp,
) -> BTreeMap<String, i64> {
    let mut open: BTreeMap<String, i64> = BTreeMap::new();
    for r in requests {
        if r.verb != "watch" || r.stage_at >= at {
            continue;
        }
        let delta = match r.stage.as_str() {
            "ResponseStarted" => 1,
            "ResponseComplete" => -1,
            _ => 0,
        };
        *open.entry(short_user(&r.user)).or_default() += delta;
    }
    open
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn line(
        stage: &str,
        verb: &str,
        user: &str,
        resource: &str,
        sub: Option<&str>,
        at: &str,
    ) -> String {
        serde_json::json!({"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata",
            "stage": stage, "verb": verb, "user": {"username": user},
            "objectRef": {"resource": resource, "subresource": sub, "namespace": "ns"},
            "requestReceivedTimestamp": at, "stageTimestamp": at})
        .to_string()
    }

    #[test]
    fn requests_are_counted_per_identity_within_the_window() {
        let sa = "system:serviceaccount:airunway-system:airunway-core";
        let lines = [
            line(
                "ResponseComplete",
                "patch",
                sa,
                "modeldeployments",
                Some("status"),
                "2026-01-01T00:00:01Z",
            ),
            line(
                "ResponseComplete",
                "patch",
                sa,
                "modeldeployments",
                Some("status"),
                "2026-01-01T00:00:02Z",
            ),
            line(
                "ResponseComplete",
                "get",
                sa,
                "leases",
                None,
                "2026-01-01T00:00:02Z",
            ),
            line(
                "ResponseComplete",
                "create",
                "admin",
                "modeldeployments",
                None,
                "2026-01-01T00:00:09Z",
            ),
            line(
                "ResponseStarted",
                "watch",
                sa,
                "modeldeployments",
                None,
                "2026-01-01T00:00:01Z",
            ),
            "not json".to_string(),
        ];
        let requests: Vec<Request> = lines.iter().filter_map(|l| parse_line(l)).collect();
        assert_eq!(requests.len(), 5);
        let counts = Counts::of(
            &requests,
            "2026-01-01T00:00:00Z".parse().unwrap(),
            "2026-01-01T00:00:05Z".parse().unwrap(),
        );
        assert_eq!(counts.writes("airunway-core"), 2);
        assert_eq!(counts.reads("airunway-core"), 1);
        assert_eq!(counts.writes("admin"), 0, "outside the window");
        assert_eq!(
            counts.write_lines(),
            ["airunway-core: patch modeldeployments/status × 2"]
        );
        let end = "2026-01-01T00:00:05Z".parse().unwrap();
        assert_eq!(open_watches(&requests, end)["airunway-core"], 1);
    }
}
