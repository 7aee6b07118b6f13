//! `kubectl airunway why <deployment>` and `kubectl airunway providers`: the reports, built by
//! pure functions from the objects as the API server returns them (JSON), so they are tested
//! from fixtures; [`crate::cluster`] fetches the objects.

use airunway_api::constants::{condition_types, reasons};
use serde::Serialize;
use serde_json::Value;

/// The objects `why` reads, as fetched.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    /// The ModelDeployment.
    pub deployment: Value,
    /// The InferenceProviderConfig of its provider, when it has one and it is registered.
    pub provider: Option<Value>,
    /// The upstream objects labelled with the deployment's name, of the kinds the
    /// provider's registration names.
    pub upstream: Vec<Value>,
    /// The object `status.notReady.object` names, when it could be read.
    pub source: Option<Value>,
}

/// One condition, as printed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConditionLine {
    /// `type`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `status`.
    pub status: String,
    /// `reason`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// `message`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
}

impl ConditionLine {
    /// `Type=Status Reason: message`.
    pub fn line(&self) -> String {
        let mut out = format!("{}={}", self.type_, self.status);
        if !self.reason.is_empty() {
            out.push(' ');
            out.push_str(&self.reason);
        }
        if !self.message.is_empty() {
            out.push_str(": ");
            out.push_str(&self.message);
        }
        out
    }
}

/// The engine and provider decision the core recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// `status.engine.type`.
    pub engine: Option<String>,
    /// `status.engine.selectedReason`.
    pub engine_reason: Option<String>,
    /// `status.provider.name`.
    pub provider: Option<String>,
    /// `status.provider.selectedReason`.
    pub provider_reason: Option<String>,
    /// The `EngineSelected` condition.
    pub engine_selected: Option<ConditionLine>,
    /// The `ProviderSelected` condition (its message says why no other provider was chosen
    /// when selection failed).
    pub provider_selected: Option<ConditionLine>,
    /// The `ProviderCompatible` condition (the provider's own verdict on the spec).
    pub provider_compatible: Option<ConditionLine>,
    /// `status.provider.resourceKind`/`resourceName`: the upstream object the provider
    /// recorded, as `Kind/name`.
    pub resource: Option<String>,
}

/// A provider's health, from its InferenceProviderConfig.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderHealth {
    /// The provider.
    pub name: String,
    /// Whether an InferenceProviderConfig of that name exists.
    pub registered: bool,
    /// `healthy`, `stale` (heartbeat too old), `not ready`, another `Available` reason, or
    /// `not registered`.
    pub state: String,
    /// `status.ready`.
    pub ready: Option<bool>,
    /// Seconds since `status.lastHeartbeat`.
    pub heartbeat_age_seconds: Option<i64>,
    /// `status.version`.
    pub version: Option<String>,
    /// The `Available` condition.
    pub available: Option<ConditionLine>,
}

/// An upstream object of the deployment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamObject {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// Its state: `Ready`/`Available` conditions, else `status.phase`.
    pub state: String,
}

/// The object a not-ready reason was read from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceObject {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// Whether it could be read.
    pub found: bool,
    /// What is wrong with it: conditions not True, containers waiting or terminated.
    pub details: Vec<String>,
}

/// `status.notReady` and its source.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotReadyChain {
    /// The reason (also `Ready`'s).
    pub reason: String,
    /// The message.
    pub message: String,
    /// The object it was read from.
    pub source: Option<SourceObject>,
}

/// Everything `why` prints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `status.phase` (`Unknown` when the core has not written one).
    pub phase: String,
    /// `status.message`.
    pub message: Option<String>,
    /// The decision.
    pub decision: Decision,
    /// The selected provider's health.
    pub provider: Option<ProviderHealth>,
    /// The upstream objects.
    pub upstream: Vec<UpstreamObject>,
    /// Why it is not ready.
    pub not_ready: Option<NotReadyChain>,
    /// Every condition.
    pub conditions: Vec<ConditionLine>,
}

fn text(value: &Value) -> Option<String> {
    value.as_str().map(str::to_string)
}

/// The conditions of an object's `status.conditions`.
pub fn conditions(object: &Value) -> Vec<ConditionLine> {
    object["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| ConditionLine {
            type_: text(&c["type"]).unwrap_or_default(),
            status: text(&c["status"]).unwrap_or_default(),
            reason: text(&c["reason"]).unwrap_or_default(),
            message: text(&c["message"]).unwrap_or_default(),
        })
        .collect()
}

fn condition(object: &Value, type_: &str) -> Option<ConditionLine> {
    conditions(object).into_iter().find(|c| c.type_ == type_)
}

/// Seconds from `at` (RFC 3339) to `now`.
pub fn age_seconds(at: &Value, now: jiff::Timestamp) -> Option<i64> {
    let at: jiff::Timestamp = at.as_str()?.parse().ok()?;
    Some(now.as_second().saturating_sub(at.as_second()).max(0))
}

/// An age as kubectl prints one: `42s`, `5m`, `3h`, `2d`.
pub fn age(seconds: i64) -> String {
    match seconds {
        s if s < 120 => format!("{s}s"),
        s if s < 2 * 3600 => format!("{}m", s / 60),
        s if s < 2 * 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// The health of provider `name`, from its InferenceProviderConfig (`None`: not registered).
pub fn provider_health(name: &str, ipc: Option<&Value>, now: jiff::Timestamp) -> ProviderHealth {
    let Some(ipc) = ipc else {
        return ProviderHealth {
            name: name.to_string(),
            registered: false,
            state: "not registered".into(),
            ready: None,
            heartbeat_age_seconds: None,
            version: None,
            available: None,
        };
    };
    let ready = ipc["status"]["ready"].as_bool();
    let available = condition(ipc, condition_types::AVAILABLE);
    let state = match &available {
        Some(c) if c.status == "True" => "healthy".to_string(),
        Some(c) if c.reason == reasons::HEARTBEAT_STALE => "stale".to_string(),
        Some(c) if c.reason == reasons::NOT_READY => "not ready".to_string(),
        Some(c) if !c.reason.is_empty() => c.reason.clone(),
        _ if ready == Some(true) => "ready".to_string(),
        _ => "not ready".to_string(),
    };
    ProviderHealth {
        name: name.to_string(),
        registered: true,
        state,
        ready,
        heartbeat_age_seconds: age_seconds(&ipc["status"]["lastHeartbeat"], now),
        version: text(&ipc["status"]["version"]),
        available,
    }
}

/// An upstream object's state: its `Ready` and `Available` conditions, else `status.phase`,
/// else `-`.
fn upstream_state(object: &Value) -> String {
    let shown: Vec<String> = conditions(object)
        .into_iter()
        .filter(|c| c.type_ == condition_types::READY || c.type_ == condition_types::AVAILABLE)
        .map(|c| format!("{}={}", c.type_, c.status))
        .collect();
    if !shown.is_empty() {
        return shown.join(",");
    }
    text(&object["status"]["phase"]).unwrap_or_else(|| "-".into())
}

/// What is wrong with a source object: its conditions that are not True, and (for a Pod)
/// its containers waiting or last terminated with a reason.
pub fn source_details(object: &Value) -> Vec<String> {
    let mut details: Vec<String> = conditions(object)
        .into_iter()
        .filter(|c| c.status != "True")
        .map(|c| c.line())
        .collect();
    let statuses = ["initContainerStatuses", "containerStatuses"];
    for container in statuses
        .iter()
        .flat_map(|key| object["status"][key].as_array().into_iter().flatten())
    {
        let name = container["name"].as_str().unwrap_or_default();
        for (state, label) in [
            (&container["state"]["waiting"], "waiting"),
            (&container["state"]["terminated"], "terminated"),
            (&container["lastState"]["terminated"], "last terminated"),
        ] {
            if let Some(reason) = state["reason"].as_str() {
                let mut line = format!("container {name} {label}: {reason}");
                if let Some(message) = state["message"].as_str().filter(|m| !m.is_empty()) {
                    line.push_str(": ");
                    line.push_str(message);
                }
                details.push(line);
            }
        }
    }
    details
}

/// The report of the fetched objects at `now`.
pub fn build(inputs: &Inputs, now: jiff::Timestamp) -> Report {
    let md = &inputs.deployment;
    let status = &md["status"];
    let provider = text(&status["provider"]["name"]);
    let resource = match (
        status["provider"]["resourceKind"].as_str(),
        status["provider"]["resourceName"].as_str(),
    ) {
        (Some(kind), Some(name)) => Some(format!("{kind}/{name}")),
        _ => None,
    };
    let decision = Decision {
        engine: text(&status["engine"]["type"]),
        engine_reason: text(&status["engine"]["selectedReason"]),
        provider: provider.clone(),
        provider_reason: text(&status["provider"]["selectedReason"]),
        engine_selected: condition(md, condition_types::ENGINE_SELECTED),
        provider_selected: condition(md, condition_types::PROVIDER_SELECTED),
        provider_compatible: condition(md, condition_types::PROVIDER_COMPATIBLE),
        resource,
    };
    let mut upstream: Vec<UpstreamObject> = inputs
        .upstream
        .iter()
        .map(|o| UpstreamObject {
            api_version: text(&o["apiVersion"]).unwrap_or_default(),
            kind: text(&o["kind"]).unwrap_or_default(),
            name: text(&o["metadata"]["name"]).unwrap_or_default(),
            state: upstream_state(o),
        })
        .collect();
    upstream.sort_by(|a, b| (&a.kind, &a.name).cmp(&(&b.kind, &b.name)));
    let not_ready = status["notReady"]["reason"].as_str().map(|reason| {
        let object = &status["notReady"]["object"];
        let source = object["kind"].as_str().map(|kind| SourceObject {
            api_version: text(&object["apiVersion"]).unwrap_or_default(),
            kind: kind.to_string(),
            name: text(&object["name"]).unwrap_or_default(),
            found: inputs.source.is_some(),
            details: inputs
                .source
                .as_ref()
                .map(source_details)
                .unwrap_or_default(),
        });
        NotReadyChain {
            reason: reason.to_string(),
            message: text(&status["notReady"]["message"]).unwrap_or_default(),
            source,
        }
    });
    Report {
        namespace: text(&md["metadata"]["namespace"]).unwrap_or_default(),
        name: text(&md["metadata"]["name"]).unwrap_or_default(),
        phase: text(&status["phase"]).unwrap_or_else(|| "Unknown".into()),
        message: text(&status["message"]),
        decision,
        provider: provider.map(|p| provider_health(&p, inputs.provider.as_ref(), now)),
        upstream,
        not_ready,
        conditions: conditions(md),
    }
}

fn with_reason(value: &Option<String>, reason: &Option<String>) -> String {
    match (value, reason) {
        (Some(v), Some(r)) if !r.is_empty() => format!("{v} ({r})"),
        (Some(v), _) => v.clone(),
        (None, _) => "none".into(),
    }
}

impl Report {
    /// Whether the deployment is `Running`.
    pub fn running(&self) -> bool {
        self.phase == "Running"
    }

    /// The human form.
    pub fn human(&self) -> String {
        let mut out = String::new();
        let mut line = |label: &str, value: &str| {
            out.push_str(&format!("{label:<12}{value}\n"));
        };
        line("Deployment:", &format!("{}/{}", self.namespace, self.name));
        line("Phase:", &self.phase);
        if let Some(message) = &self.message {
            line("Message:", message);
        }
        let d = &self.decision;
        line("Engine:", &with_reason(&d.engine, &d.engine_reason));
        line("Provider:", &with_reason(&d.provider, &d.provider_reason));
        for c in [
            &d.engine_selected,
            &d.provider_selected,
            &d.provider_compatible,
        ]
        .into_iter()
        .flatten()
        {
            line("Decision:", &c.line());
        }
        if let Some(resource) = &d.resource {
            line("Resource:", resource);
        }
        if let Some(p) = &self.provider {
            let mut health = format!("{}: {}", p.name, p.state);
            if let Some(seconds) = p.heartbeat_age_seconds {
                health.push_str(&format!(", heartbeat {} ago", age(seconds)));
            }
            if let Some(version) = &p.version {
                health.push_str(&format!(", version {version}"));
            }
            if let Some(c) = p.available.as_ref().filter(|c| c.status != "True") {
                health.push_str(&format!(" ({})", c.line()));
            }
            line("Health:", &health);
        }
        if let Some(n) = &self.not_ready {
            line("Not ready:", &format!("{}: {}", n.reason, n.message));
            if let Some(s) = &n.source {
                let found = if s.found { "" } else { " (not found)" };
                line("  from:", &format!("{}/{}{found}", s.kind, s.name));
                for detail in &s.details {
                    line("", detail);
                }
            }
        }
        if !self.upstream.is_empty() {
            out.push_str("\nUpstream objects:\n");
            let mut rows = vec![vec!["KIND".into(), "NAME".into(), "STATE".into()]];
            rows.extend(
                self.upstream
                    .iter()
                    .map(|u| vec![u.kind.clone(), u.name.clone(), u.state.clone()]),
            );
            out.push_str(&indent(&airunway_api::offline::table(&rows)));
        }
        if !self.conditions.is_empty() {
            out.push_str("\nConditions:\n");
            let mut rows = vec![vec![
                "TYPE".into(),
                "STATUS".into(),
                "REASON".into(),
                "MESSAGE".into(),
            ]];
            rows.extend(self.conditions.iter().map(|c| {
                vec![
                    c.type_.clone(),
                    c.status.clone(),
                    c.reason.clone(),
                    c.message.clone(),
                ]
            }));
            out.push_str(&indent(&airunway_api::offline::table(&rows)));
        }
        out
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// One row of `providers`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderRow {
    /// The provider's health (name, state, ready, heartbeat, version).
    #[serde(flatten)]
    pub health: ProviderHealth,
    /// The engines of `spec.capabilities.engines`.
    pub engines: Vec<String>,
    /// How many ModelDeployments name it in `status.provider.name`.
    pub deployments: usize,
}

/// The rows of `providers`: every InferenceProviderConfig in name order, with the number of
/// `deployments` each serves.
pub fn provider_rows(
    ipcs: &[Value],
    deployments: &[Value],
    now: jiff::Timestamp,
) -> Vec<ProviderRow> {
    let mut rows: Vec<ProviderRow> = ipcs
        .iter()
        .map(|ipc| {
            let name = ipc["metadata"]["name"].as_str().unwrap_or_default();
            let engines = ipc["spec"]["capabilities"]["engines"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e.as_str().or_else(|| e["name"].as_str()))
                .map(str::to_string)
                .collect();
            let served = deployments
                .iter()
                .filter(|d| d["status"]["provider"]["name"].as_str() == Some(name))
                .count();
            ProviderRow {
                health: provider_health(name, Some(ipc), now),
                engines,
                deployments: served,
            }
        })
        .collect();
    rows.sort_by(|a, b| a.health.name.cmp(&b.health.name));
    rows
}

/// The human form of `providers`.
pub fn providers_table(rows: &[ProviderRow]) -> String {
    let mut table = vec![
        [
            "NAME",
            "STATE",
            "READY",
            "HEARTBEAT",
            "VERSION",
            "ENGINES",
            "DEPLOYMENTS",
        ]
        .map(String::from)
        .to_vec(),
    ];
    table.extend(rows.iter().map(|r| {
        vec![
            r.health.name.clone(),
            r.health.state.clone(),
            r.health.ready.map(|b| b.to_string()).unwrap_or_default(),
            r.health.heartbeat_age_seconds.map(age).unwrap_or_default(),
            r.health.version.clone().unwrap_or_default(),
            r.engines.join(","),
            r.deployments.to_string(),
        ]
    }));
    airunway_api::offline::table(&table)
}
