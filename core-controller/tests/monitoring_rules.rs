//! The shipped alerts and dashboard (docs/observability.md, "## Alerts" and "## Dashboard"):
//! the `PrometheusRule`'s groups pass `promtool check rules` and the rule unit tests of
//! `deploy/components/monitoring/tests/` (`promtool test rules`, each alert firing and not firing
//! on series written there); every panel query of the Grafana dashboard is valid PromQL (each as
//! a recording rule through `promtool check rules`); both use only the metric names the binaries
//! export.
//!
//! promtool is Debian's `prometheus` package (e2e/prerequisites installs it for the end-to-end
//! and full runs, and e2e/run-tests then sets `AIRUNWAY_REQUIRE_PROMTOOL=1`, so a missing
//! promtool fails there). Without it and without that variable (`e2e/run-tests --unit` on a
//! machine without Prometheus) the promtool checks say that they were skipped; the checks that
//! need no promtool run everywhere.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The metric names of the contract between the binaries, the dashboard and the alerts
/// (docs/observability.md, "## Metrics"): the core's and every provider's, with the
/// `airunway_` prefix and the `_total` suffix of counters. Histograms are named without their
/// `_bucket`, `_count` and `_sum` series.
const CONTRACT: [&str; 19] = [
    "airunway_modeldeployment_total",
    "airunway_deployment_phase",
    "airunway_deployment_status",
    "airunway_deployment_replicas",
    "airunway_reconciliation_duration_seconds",
    "airunway_reconciliation_errors_total",
    "airunway_provider_selection_total",
    "airunway_selection_rule_errors_total",
    "airunway_gateway_actions_total",
    "airunway_modeldeployment_replicas",
    "airunway_selection_duration_seconds",
    "airunway_deployment_phase_transitions_total",
    "airunway_deployment_ready_duration_seconds",
    "airunway_provider_stale",
    "airunway_provider_heartbeat_age_seconds",
    "airunway_webhook_requests_total",
    "airunway_webhook_request_duration_seconds",
    "airunway_upstream_applies_total",
    "airunway_provider_deployments",
];

/// The histograms of [`CONTRACT`] (their `_bucket`, `_count` and `_sum` series are valid).
const HISTOGRAMS: [&str; 4] = [
    "airunway_reconciliation_duration_seconds",
    "airunway_selection_duration_seconds",
    "airunway_deployment_ready_duration_seconds",
    "airunway_webhook_request_duration_seconds",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn monitoring() -> PathBuf {
    root().join("deploy/components/monitoring")
}

fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `spec` of the shipped PrometheusRule: a Prometheus rules file (`groups:`).
fn rule_groups() -> Value {
    let rule = yaml(&monitoring().join("prometheus-rule.yaml"));
    assert_eq!(rule["kind"], "PrometheusRule");
    let spec = rule["spec"].clone();
    assert!(spec["groups"].as_array().is_some_and(|g| !g.is_empty()));
    spec
}

fn alerts() -> Vec<Value> {
    rule_groups()["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap().clone())
        .filter(|r| r["alert"].is_string())
        .collect()
}

/// The rule unit test files kept beside the PrometheusRule.
fn rule_test_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(monitoring().join("tests"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".test.yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no *.test.yaml rule tests");
    files
}

fn dashboard() -> Value {
    let path = root().join("deploy/components/grafana/airunway-dashboard.json");
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every panel of the dashboard, those inside rows included.
fn panels(dashboard: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        out.push(panel.clone());
        out.extend(panel["panels"].as_array().cloned().unwrap_or_default());
    }
    out
}

/// `(panel title, refId, expr)` of every query of every panel.
fn panel_queries(dashboard: &Value) -> Vec<(String, String, String)> {
    panels(dashboard)
        .iter()
        .flat_map(|p| {
            let title = p["title"].as_str().unwrap_or_default().to_string();
            p["targets"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |t| {
                    (
                        title.clone(),
                        t["refId"].as_str().unwrap().to_string(),
                        t["expr"].as_str().unwrap().to_string(),
                    )
                })
        })
        .collect()
}

/// promtool, or `None` after saying why the check is skipped. With
/// `AIRUNWAY_REQUIRE_PROMTOOL` set a missing promtool is a failure.
fn promtool(check: &str) -> Option<&'static str> {
    if Command::new("promtool").arg("--version").output().is_ok() {
        return Some("promtool");
    }
    if std::env::var_os("AIRUNWAY_REQUIRE_PROMTOOL").is_some() {
        panic!(
            "promtool not found and AIRUNWAY_REQUIRE_PROMTOOL is set: install Debian's \
             prometheus package (sudo apt-get install --no-install-recommends prometheus; \
             e2e/prerequisites does)"
        );
    }
    // Straight to stderr, past libtest's capture, so the skip shows in a passing run.
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {check}: promtool not found (Debian's prometheus package; e2e/prerequisites \
         installs it for the e2e and full runs, where this check is required)"
    );
    None
}

/// A fresh empty directory for promtool's input files.
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("airunway-monitoring-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(promtool: &str, dir: &Path, args: &[&str]) {
    let out = Command::new(promtool)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool {} failed:\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_prometheus_rule_passes_promtool_check_rules_and_its_rule_unit_tests() {
    let Some(promtool) = promtool("promtool check/test rules of the PrometheusRule") else {
        return;
    };
    let dir = scratch("rules");
    // JSON is YAML: the PrometheusRule's spec is the rules file the tests name (rules.yaml).
    std::fs::write(
        dir.join("rules.yaml"),
        serde_json::to_string_pretty(&rule_groups()).unwrap(),
    )
    .unwrap();
    run(promtool, &dir, &["check", "rules", "rules.yaml"]);
    for test in rule_test_files() {
        let name = test.file_name().unwrap().to_str().unwrap().to_string();
        std::fs::copy(&test, dir.join(&name)).unwrap();
        run(promtool, &dir, &["test", "rules", &name]);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_alert_is_tested_firing_and_not_firing_and_says_what_to_do() {
    let tests: Vec<Value> = rule_test_files()
        .iter()
        .flat_map(|f| yaml(f)["tests"].as_array().unwrap().clone())
        .flat_map(|t| t["alert_rule_test"].as_array().cloned().unwrap_or_default())
        .collect();
    let docs = std::fs::read_to_string(root().join("docs/observability.md"))
        .expect("docs/observability.md (its \"## Alerts\" section is each alert's runbook)");
    let alerts = alerts();
    assert!(alerts.len() >= 6, "{alerts:?}");
    for alert in &alerts {
        let name = alert["alert"].as_str().unwrap();
        let cases: Vec<&Value> = tests.iter().filter(|t| t["alertname"] == name).collect();
        assert!(
            cases
                .iter()
                .any(|t| t["exp_alerts"].as_array().is_some_and(|a| !a.is_empty())),
            "{name}: no rule test where it fires"
        );
        assert!(
            cases
                .iter()
                .any(|t| t["exp_alerts"].as_array().is_some_and(Vec::is_empty)),
            "{name}: no rule test where it does not fire"
        );
        // A firing case names the annotations exactly (promtool compares them whole), so the
        // text an operator reads is under test too.
        assert!(
            cases
                .iter()
                .flat_map(|t| t["exp_alerts"].as_array().cloned().unwrap_or_default())
                .any(|a| a["exp_annotations"]["description"].is_string()),
            "{name}: no firing case checks the annotations"
        );
        let annotations = &alert["annotations"];
        for field in ["summary", "description", "runbook_url"] {
            assert!(
                annotations[field].as_str().is_some_and(|s| !s.is_empty()),
                "{name}: annotation {field} missing"
            );
        }
        assert!(
            annotations["description"]
                .as_str()
                .unwrap()
                .contains("kubectl"),
            "{name}: the description should say what to look at (a kubectl command)"
        );
        let anchor = format!("#{}", name.to_lowercase());
        assert!(
            annotations["runbook_url"]
                .as_str()
                .unwrap()
                .ends_with(&format!("docs/observability.md{anchor}")),
            "{name}: runbook_url should point at docs/observability.md{anchor}"
        );
        assert!(
            docs.contains(&format!("\n### {name}\n")),
            "docs/observability.md has no section ### {name} (the runbook_url's target)"
        );
        assert!(
            alert["labels"]["severity"].is_string(),
            "{name}: no severity"
        );
    }
}

#[test]
fn every_dashboard_panel_query_is_valid_promql() {
    let Some(promtool) = promtool("promtool check rules of the dashboard's panel queries") else {
        return;
    };
    let queries = panel_queries(&dashboard());
    // Each query as a recording rule: promtool parses it as the Prometheus that evaluates it.
    let rules: Vec<Value> = queries
        .iter()
        .enumerate()
        .map(|(i, (_, _, expr))| {
            serde_json::json!({"record": format!("airunway:dashboard_panel_query:{i}"), "expr": expr})
        })
        .collect();
    let file = serde_json::json!({"groups": [{"name": "dashboard", "rules": rules}]});
    let dir = scratch("dashboard");
    std::fs::write(
        dir.join("dashboard.yaml"),
        serde_json::to_string_pretty(&file).unwrap(),
    )
    .unwrap();
    run(promtool, &dir, &["check", "rules", "dashboard.yaml"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The `airunway_...` metric names `expr` uses.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = expr;
    while let Some(i) = rest.find("airunway_") {
        // Not inside a longer identifier (`foo_airunway_x`) or a recording rule's `a:b` name.
        let before = rest[..i].chars().last();
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(tail.len());
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            names.insert(tail[..end].to_string());
        }
        rest = &tail[end..];
    }
    names
}

fn is_contract_name(name: &str) -> bool {
    CONTRACT.contains(&name)
        || HISTOGRAMS.iter().any(|h| {
            ["_bucket", "_count", "_sum"]
                .iter()
                .any(|s| name == format!("{h}{s}"))
        })
}

#[test]
fn the_alerts_and_the_dashboard_use_only_the_exported_metric_names() {
    assert_eq!(
        metric_names("sum(rate(airunway_x_total[5m])) / a:airunway_y + airunway_z_bucket"),
        BTreeSet::from(["airunway_x_total".into(), "airunway_z_bucket".into()])
    );
    let mut used = BTreeSet::new();
    for alert in alerts() {
        let names = metric_names(alert["expr"].as_str().unwrap());
        let off: Vec<&String> = names.iter().filter(|n| !is_contract_name(n)).collect();
        assert!(
            off.is_empty(),
            "alert {}: not exported: {off:?}",
            alert["alert"]
        );
        used.extend(names);
    }
    for (title, ref_id, expr) in panel_queries(&dashboard()) {
        let names = metric_names(&expr);
        assert!(
            !names.is_empty(),
            "panel {title:?} {ref_id}: no airunway_ metric"
        );
        let off: Vec<&String> = names.iter().filter(|n| !is_contract_name(n)).collect();
        assert!(
            off.is_empty(),
            "panel {title:?} {ref_id}: not exported: {off:?}"
        );
        used.extend(names);
    }
    // What the issue asks the dashboard and the alerts to show.
    for wanted in [
        "airunway_modeldeployment_total",
        "airunway_deployment_status",
        "airunway_selection_duration_seconds_bucket",
        "airunway_provider_stale",
        "airunway_provider_heartbeat_age_seconds",
        "airunway_reconciliation_errors_total",
        "airunway_upstream_applies_total",
        "airunway_webhook_request_duration_seconds_bucket",
        "airunway_webhook_requests_total",
        "airunway_deployment_phase",
    ] {
        assert!(used.contains(wanted), "nothing shows {wanted}");
    }
}

#[test]
fn the_dashboard_asks_for_its_prometheus_data_source_and_every_panel_uses_it() {
    let dashboard = dashboard();
    assert!(dashboard["uid"].as_str().is_some_and(|u| !u.is_empty()));
    assert!(dashboard["schemaVersion"].as_u64().is_some_and(|v| v >= 36));
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    assert!(
        variables.iter().any(|v| v["name"] == "datasource"
            && v["type"] == "datasource"
            && v["query"] == "prometheus"),
        "no `datasource` variable of type datasource (prometheus)"
    );
    let mut ids = BTreeSet::new();
    for panel in panels(&dashboard) {
        let title = panel["title"].as_str().unwrap();
        assert!(
            ids.insert(panel["id"].as_u64().unwrap()),
            "{title}: id repeated"
        );
        for field in ["h", "w", "x", "y"] {
            assert!(panel["gridPos"][field].is_u64(), "{title}: gridPos.{field}");
        }
        if panel["type"] == "row" {
            continue;
        }
        assert_eq!(panel["datasource"]["uid"], "${datasource}", "{title}");
        assert!(panel["description"].is_string(), "{title}: no description");
        let targets = panel["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "{title}: no query");
        for target in targets {
            assert_eq!(target["datasource"]["uid"], "${datasource}", "{title}");
            // Grafana's own variables ($__rate_interval, ...) are not PromQL: the queries
            // stay plain so that Prometheus evaluates them as they are (e2e).
            assert!(
                !target["expr"].as_str().unwrap().contains('$'),
                "{title}: a Grafana variable in the query"
            );
        }
    }
}
