//! The suite's report: each check's outcome, duration and message, and the upstream versions
//! tested; printed as a table and written as JSON.

use std::fmt::Write as _;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A check's outcome.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The provider keeps this part of the contract.
    Passed,
    /// It does not: the message says what was expected and what was seen.
    Failed,
    /// Not run: the message says why (nothing declared, a built-in kind, no audit log).
    Skipped,
}

impl Outcome {
    /// `PASS`, `FAIL` or `SKIP`.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Passed => "PASS",
            Outcome::Failed => "FAIL",
            Outcome::Skipped => "SKIP",
        }
    }
}

/// One check's result.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CheckResult {
    /// The check's name, e.g. `idempotence`.
    pub name: String,
    /// Its outcome.
    pub outcome: Outcome,
    /// How long it took, in seconds.
    pub seconds: f64,
    /// What was seen (the reason of a failure or a skip; what was measured for a pass).
    pub message: String,
}

/// The upstream version a provider was tested against.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamTested {
    /// `status.upstreamCrdVersion` of the registration.
    pub crd_version: Option<String>,
    /// `status.upstreamSchemaHash` of the registration.
    pub schema_fingerprint: Option<String>,
    /// `<apiVersion> <kind>` of the upstream objects created.
    pub kind: Option<String>,
}

/// The whole report of one provider.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The provider's registration name.
    pub provider: String,
    /// The version it reported (`<name>-provider:<version>`).
    pub provider_version: Option<String>,
    /// The upstream it was tested against.
    pub upstream: UpstreamTested,
    /// Every check, in the order run.
    pub checks: Vec<CheckResult>,
}

impl Report {
    /// A report for `provider` with no checks yet.
    pub fn new(provider: &str) -> Report {
        Report {
            provider: provider.to_string(),
            ..Default::default()
        }
    }

    /// Records a check.
    pub fn record(&mut self, name: &str, outcome: Outcome, took: Duration, message: String) {
        self.checks.push(CheckResult {
            name: name.to_string(),
            outcome,
            seconds: (took.as_secs_f64() * 10.0).round() / 10.0,
            message,
        });
    }

    /// Whether no check failed.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.outcome != Outcome::Failed)
    }

    /// The check named `name`.
    pub fn check(&self, name: &str) -> Option<&CheckResult> {
        self.checks.iter().find(|c| c.name == name)
    }

    /// One line per failed check: `<provider>: check <name> failed: <message>`.
    pub fn failures(&self) -> Vec<String> {
        self.checks
            .iter()
            .filter(|c| c.outcome == Outcome::Failed)
            .map(|c| format!("{}: check {} failed: {}", self.provider, c.name, c.message))
            .collect()
    }

    /// The report as a plain-text table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "conformance of provider {} ({}), upstream {} (version {}, schema {})",
            self.provider,
            self.provider_version
                .as_deref()
                .unwrap_or("version unknown"),
            self.upstream.kind.as_deref().unwrap_or("unknown"),
            self.upstream.crd_version.as_deref().unwrap_or("-"),
            self.upstream.schema_fingerprint.as_deref().unwrap_or("-"),
        );
        let width = self
            .checks
            .iter()
            .map(|c| c.name.len())
            .max()
            .unwrap_or(5)
            .max(5);
        let _ = writeln!(out, "{:<width$}  result  {:>6}  message", "check", "secs");
        for c in &self.checks {
            let _ = writeln!(
                out,
                "{:<width$}  {:<6}  {:>6.1}  {}",
                c.name,
                c.outcome.label(),
                c.seconds,
                c.message
            );
        }
        let count = |o| self.checks.iter().filter(|c| c.outcome == o).count();
        let _ = writeln!(
            out,
            "{} passed, {} failed, {} skipped",
            count(Outcome::Passed),
            count(Outcome::Failed),
            count(Outcome::Skipped)
        );
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn failures_name_the_check_and_the_table_counts() {
        let mut report = Report::new("configmap");
        report.record(
            "registration",
            Outcome::Passed,
            Duration::from_millis(1234),
            "ok".into(),
        );
        report.record(
            "idempotence",
            Outcome::Failed,
            Duration::from_secs(5),
            "3 writes".into(),
        );
        report.record(
            "status-fixtures",
            Outcome::Skipped,
            Duration::ZERO,
            "none declared".into(),
        );
        assert!(!report.passed());
        assert_eq!(
            report.failures(),
            ["configmap: check idempotence failed: 3 writes"]
        );
        let table = report.table();
        assert!(
            table.contains("idempotence      FAIL       5.0  3 writes"),
            "{table}"
        );
        assert!(
            table.ends_with("1 passed, 1 failed, 1 skipped\n"),
            "{table}"
        );
        assert_eq!(report.check("registration").unwrap().seconds, 1.2);
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["checks"][1]["outcome"], "failed");
    }
}
