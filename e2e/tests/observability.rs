//! The metrics of each binary after a burst of deployments, on the real control plane: the
//! core (with its admission webhooks) and two providers (KAITO with its controller stand-in,
//! Dynamo) serve deployments across phases (Running, Deploying, Failed by the upstream,
//! Pending); each binary's `/metrics` is scraped and its values checked
//! against the objects in the API server. Then Debian's Prometheus scrapes the three binaries
//! and every panel query of the Grafana dashboard (deploy/components/grafana/
//! airunway-dashboard.json, read generically: every `targets[].expr`) must return data through
//! Prometheus' HTTP API.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use airunway_api::metric_names::{apply_results, webhook_results, webhooks};
use airunway_api::v1alpha1::{ModelDeployment, Phase};
use airunway_e2e::admission::{deployment, install_webhooks, remove_webhooks, wait_webhook_active};
use airunway_e2e::binaries::free_port;
use airunway_e2e::process::{Lifetime, Spawn, remove_at_exit};
use airunway_e2e::providers::delete_all;
use airunway_e2e::sandbox::kaito;
use airunway_e2e::stack::{self, FAST_HEALTH, Running};
use airunway_e2e::wait::{eventually, wait_for};
use airunway_e2e::{TestEnv, cluster_lock, http, paths};
use kube::Api;
use kube::api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);
/// Prometheus' scrape interval here (and the evaluation step of the panel queries).
const SCRAPE: &str = "1s";

/// One sample of a text exposition.
#[derive(Clone, Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Parses a Prometheus text exposition (the label values our binaries write hold no escaped
/// quotes or commas).
fn parse(text: &str) -> Vec<Sample> {
    let mut samples = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap();
        let value: f64 = value.parse().unwrap_or_else(|e| panic!("{line}: {e}"));
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => (name, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        let labels = labels
            .split("\",")
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                let (key, value) = pair.split_once('=').unwrap();
                (key.to_string(), value.trim_matches('"').to_string())
            })
            .collect();
        samples.push(Sample {
            name: name.to_string(),
            labels,
            value,
        });
    }
    samples
}

/// The sum of the samples of `name` whose labels include `with`.
fn sum(samples: &[Sample], name: &str, with: &[(&str, &str)]) -> f64 {
    matching(samples, name, with).map(|s| s.value).sum()
}

fn matching<'a>(
    samples: &'a [Sample],
    name: &'a str,
    with: &'a [(&'a str, &'a str)],
) -> impl Iterator<Item = &'a Sample> + 'a {
    samples.iter().filter(move |s| {
        s.name == name
            && with
                .iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
    })
}

async fn scrape(binary: &Running) -> Vec<Sample> {
    let (code, body) = http::get(&binary.metrics_url()).await.unwrap();
    assert_eq!(code, 200, "{body}");
    parse(&body)
}

fn phase_name(md: &ModelDeployment) -> &'static str {
    md.status
        .as_ref()
        .and_then(|s| s.phase)
        .map(Phase::as_str)
        .unwrap_or("Unknown")
}

fn provider_name(md: &ModelDeployment) -> String {
    md.selected_provider().unwrap_or("none").to_string()
}

fn cpu_llamacpp() -> Value {
    json!({"model": {"id": "google/gemma-3-1b-it-qat-q8_0-gguf"},
           "engine": {"type": "llamacpp", "args": {"model-file": "gemma-3-1b-it-q8_0.gguf"}},
           "resources": {"gpu": {"count": 0}, "memory": "16Gi", "cpu": "8"},
           "image": "ghcr.io/sozercan/llama-cpp-runner:latest", "provider": {"name": "kaito"}})
}

fn upstream(env: &TestEnv, group: &str, version: &str, kind: &str) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: format!("{}s", kind.to_lowercase()),
    };
    Api::namespaced_with(env.client.clone(), &env.namespace, &resource)
}

/// Percent-encodes a URL query value.
/// When set, the directory the panels' queries are photographed into, each in Prometheus' own
/// graph page, by headless Chromium (Debian's `chromium`): the figures of docs/observability.md.
/// Not part of CI (`AIRUNWAY_SCREENSHOTS_DIR=docs/images e2e/run-tests --e2e -- --test
/// observability`).
const SCREENSHOTS_ENV: &str = "AIRUNWAY_SCREENSHOTS_DIR";

/// The panels photographed (titles of the dashboard's panels).
const PHOTOGRAPHED: [&str; 6] = [
    "Deployments by provider and phase",
    "Selection latency",
    "Heartbeat age",
    "Upstream writes per second",
    "Webhook requests per second",
    "Deployments served by each provider",
];

/// One PNG per photographed panel's first query: `<dir>/<panel title as a file name>.png`.
fn screenshots(dir: &std::path::Path, prometheus_url: &str, queries: &[(String, String)]) {
    std::fs::create_dir_all(dir).unwrap();
    for title in PHOTOGRAPHED {
        let Some((_, expr)) = queries.iter().find(|(t, _)| t == title) else {
            panic!("no panel titled {title:?} in the dashboard");
        };
        let file = dir.join(format!(
            "panel-{}.png",
            title.to_lowercase().replace(' ', "-")
        ));
        let url = format!(
            "{prometheus_url}/graph?g0.expr={}&g0.tab=0&g0.range_input=2m",
            encode(&instantiate(expr))
        );
        let status = std::process::Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--window-size=1400,900",
                "--virtual-time-budget=8000",
                &format!("--screenshot={}", file.display()),
                &url,
            ])
            .status()
            .unwrap_or_else(|e| panic!("chromium: {e} (install Debian's chromium package)"));
        assert!(status.success(), "chromium failed for {title}: {status}");
        eprintln!("screenshot of {title:?}: {}", file.display());
    }
}

fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Every `targets[].expr` of every panel (rows' nested panels included), with the panel title.
fn panel_queries(dashboard: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    fn walk(value: &Value, title: &str, out: &mut Vec<(String, String)>) {
        match value {
            Value::Object(object) => {
                let title = object
                    .get("title")
                    .and_then(Value::as_str)
                    .unwrap_or(title)
                    .to_string();
                if let Some(targets) = object.get("targets").and_then(Value::as_array) {
                    for target in targets {
                        if let Some(expr) = target.get("expr").and_then(Value::as_str) {
                            out.push((title.clone(), expr.to_string()));
                        }
                    }
                }
                for (key, child) in object {
                    if key != "targets" {
                        walk(child, &title, out);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| walk(item, title, out)),
            _ => {}
        }
    }
    walk(dashboard, "", &mut out);
    out
}

/// A panel query as Grafana would send it: its interval variables as durations, a template
/// variable as "any value" (`=~".*"`; `$var` inside a regex matcher as `.*`).
fn instantiate(expr: &str) -> String {
    let mut q = expr
        .replace("$__rate_interval", "1m")
        .replace("${__rate_interval}", "1m")
        .replace("$__interval", "15s")
        .replace("${__interval}", "15s")
        .replace("$__range", "5m")
        .replace("${__range}", "5m");
    // `label="$var"` → `label=~".*"`, then any other `$var` / `${var}` → `.*`.
    let mut out = String::new();
    let mut rest = q.as_str();
    while let Some(at) = rest.find('$') {
        let (before, after) = rest.split_at(at);
        let name_len = if after.starts_with("${") {
            after.find('}').map(|end| end + 1).unwrap_or(after.len())
        } else {
            1 + after[1..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len() - 1)
        };
        let mut before = before.to_string();
        if before.ends_with("=\"") && !before.ends_with("~\"") && !before.ends_with("!=\"") {
            before.truncate(before.len() - 2);
            before.push_str("=~\"");
        }
        out.push_str(&before);
        out.push_str(".*");
        rest = &after[name_len..];
    }
    out.push_str(rest);
    q = out;
    q
}

#[test]
fn panel_queries_are_read_from_any_nesting_and_instantiated() {
    let dashboard = json!({"panels": [
        {"title": "a", "targets": [{"expr": "sum(x)"}]},
        {"type": "row", "title": "r", "panels": [{"title": "b", "targets": [{"expr": "rate(y{provider=\"$provider\"}[$__rate_interval])"}, {"refId": "B"}]}]}
    ]});
    let queries = panel_queries(&dashboard);
    assert_eq!(
        queries,
        vec![
            ("a".to_string(), "sum(x)".to_string()),
            (
                "b".to_string(),
                "rate(y{provider=\"$provider\"}[$__rate_interval])".to_string()
            )
        ]
    );
    assert_eq!(instantiate(&queries[1].1), "rate(y{provider=~\".*\"}[1m])");
    assert_eq!(instantiate("x{a=~\"${ns}\"}"), "x{a=~\".*\"}");
}

fn which(program: &str) -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(program))
                .find(|candidate| candidate.is_file())
        })
        .unwrap_or_else(|| {
            panic!("{program} not found on PATH: install Debian's prometheus package (e2e/prerequisites does)")
        })
}

#[tokio::test]
async fn metrics_after_a_burst_match_the_api_server_and_every_panel_returns_data() {
    let _lock = cluster_lock().await;
    let started = Instant::now();
    let env = TestEnv::new("observability").await;
    delete_all(&env.client).await;
    kaito::install_controller_stand_in(&env.client)
        .await
        .unwrap();

    // The core with its webhooks (the shipped configurations pointed at it), as in a cluster.
    let port = free_port();
    install_webhooks(&env, port).await;
    let webhook = format!("--webhook-bind-address=127.0.0.1:{port}");
    let namespace = format!("--webhook-namespace={}", env.namespace);
    let mut core_args = vec![
        webhook.as_str(),
        namespace.as_str(),
        "--webhook-extra-san=127.0.0.1",
    ];
    core_args.extend_from_slice(&FAST_HEALTH);
    let core = stack::start_core(&env, &env.control_plane.kubeconfig, &core_args, "core").await;
    wait_webhook_active(&env).await;
    let kaito = stack::start_provider(
        &env,
        "airunway-provider-kaito",
        &env.control_plane.kubeconfig,
        &["--heartbeat-interval=1s"],
        "kaito-0",
    )
    .await;
    let dynamo = stack::start_provider(
        &env,
        "airunway-provider-dynamo",
        &env.control_plane.kubeconfig,
        &["--heartbeat-interval=1s"],
        "dynamo-0",
    )
    .await;

    // The burst.
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let mut specs: Vec<(String, Value)> = Vec::new();
    for i in 0..4 {
        specs.push((format!("running-{i}"), cpu_llamacpp()));
    }
    for i in 0..2 {
        specs.push((format!("deploying-{i}"), cpu_llamacpp()));
    }
    for i in 0..2 {
        specs.push((
            format!("upstream-failed-{i}"),
            json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"},
                "resources": {"gpu": {"count": 1}}, "provider": {"name": "dynamo"}}),
        ));
    }
    // Pending: the named provider is not registered.
    specs.push((
        "waiting".into(),
        json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"},
            "resources": {"gpu": {"count": 1}}, "provider": {"name": "llmd"}}),
    ));
    let created = specs.len();
    let creating = futures::future::join_all(specs.iter().map(|(name, spec)| {
        let mds = mds.clone();
        async move {
            let md: ModelDeployment =
                serde_json::from_value(deployment(name, spec.clone())).unwrap();
            mds.create(&PostParams::default(), &md).await.unwrap();
        }
    }));
    creating.await;

    // The upstream operators' statuses on the objects the providers created.
    let ws = upstream(&env, "kaito.sh", "v1beta1", "Workspace");
    let dgds = upstream(&env, "nvidia.com", "v1beta1", "DynamoGraphDeployment");
    let mut statuses: Vec<(&Api<DynamicObject>, String, &str)> = Vec::new();
    for i in 0..4 {
        statuses.push((&ws, format!("running-{i}"), "workspace-ready.yaml"));
    }
    for i in 0..2 {
        statuses.push((&ws, format!("deploying-{i}"), "workspace-pending.yaml"));
        statuses.push((
            &dgds,
            format!("upstream-failed-{i}"),
            "dgd-v1beta1-failed.yaml",
        ));
    }
    for (api, name, sample) in &statuses {
        wait_for(*api, name, WAIT, "the upstream object", |_| true).await;
        api.patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": paths::upstream_status_sample(sample).unwrap()})),
        )
        .await
        .unwrap();
    }
    for (prefix, phase, count) in [
        ("running-", Phase::Running, 4),
        ("deploying-", Phase::Deploying, 2),
        ("upstream-failed-", Phase::Failed, 2),
    ] {
        for i in 0..count {
            wait_for(&mds, &format!("{prefix}{i}"), WAIT, phase.as_str(), |md| {
                md.phase() == Some(phase)
            })
            .await;
        }
    }
    wait_for(&mds, "waiting", WAIT, "Pending", |md| {
        md.phase() == Some(Phase::Pending)
    })
    .await;

    // A denial by the validating webhook.
    let denied_before = sum(
        &scrape(&core).await,
        "airunway_webhook_requests_total",
        &[
            ("webhook", webhooks::VALIDATE_MODELDEPLOYMENT),
            ("result", webhook_results::DENIED),
        ],
    );
    let hostile: ModelDeployment = serde_json::from_value(deployment(
        "hostile",
        json!({"model": {"id": "a/b"}, "provider": {"overrides": {"hostPID": true}}}),
    ))
    .unwrap();
    let refused = mds.create(&PostParams::default(), &hostile).await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("admission webhook")),
        "{refused:?}"
    );
    let burst_done = started.elapsed();

    // The core against the API server (cluster-wide aggregates against every deployment).
    let all: Api<ModelDeployment> = Api::all(env.client.clone());
    let ours = mds.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(ours.len(), created);
    let core_samples = eventually("the core's metrics to match the API server", WAIT, || async {
        let everything = all.list(&ListParams::default()).await.unwrap().items;
        let samples = scrape(&core).await;
        let mut by_namespace_phase: BTreeMap<(String, String), f64> = BTreeMap::new();
        let mut by_provider_phase: BTreeMap<(String, String), f64> = BTreeMap::new();
        for md in &everything {
            *by_namespace_phase
                .entry((md.metadata.namespace.clone().unwrap(), phase_name(md).into()))
                .or_default() += 1.0;
            *by_provider_phase
                .entry((provider_name(md), phase_name(md).into()))
                .or_default() += 1.0;
        }
        let mut seen: BTreeMap<(String, String), f64> = BTreeMap::new();
        for s in matching(&samples, "airunway_modeldeployment_total", &[]) {
            seen.insert((s.labels["namespace"].clone(), s.labels["phase"].clone()), s.value);
        }
        if seen != by_namespace_phase {
            return Err(format!("modeldeployment_total {seen:?} != API {by_namespace_phase:?}"));
        }
        let mut seen: BTreeMap<(String, String), f64> = BTreeMap::new();
        for s in matching(&samples, "airunway_deployment_status", &[]) {
            seen.insert((s.labels["provider"].clone(), s.labels["phase"].clone()), s.value);
        }
        if seen != by_provider_phase {
            return Err(format!("deployment_status {seen:?} != API {by_provider_phase:?}"));
        }
        for md in &ours {
            let name = md.metadata.name.clone().unwrap();
            let fresh = mds.get(&name).await.unwrap();
            let labels = [
                ("name", name.as_str()),
                ("namespace", env.namespace.as_str()),
            ];
            let phases: Vec<&Sample> =
                matching(&samples, "airunway_deployment_phase", &labels).collect();
            if phases.len() != 1 || phases[0].labels["phase"] != phase_name(&fresh) || phases[0].value != 1.0 {
                return Err(format!("{name}: deployment_phase {phases:?}, API {}", phase_name(&fresh)));
            }
            let replicas = fresh.status.as_ref().and_then(|s| s.replicas.clone());
            for (state, value) in [
                ("desired", replicas.as_ref().and_then(|r| r.desired)),
                ("ready", replicas.as_ref().and_then(|r| r.ready)),
                ("available", replicas.as_ref().and_then(|r| r.available)),
            ] {
                let with = [labels[0], labels[1], ("state", state)];
                let got: Vec<f64> = matching(&samples, "airunway_modeldeployment_replicas", &with)
                    .map(|s| s.value)
                    .collect();
                let want: Vec<f64> = value.map(f64::from).into_iter().collect();
                if got != want {
                    return Err(format!("{name}: modeldeployment_replicas{{state={state}}} {got:?}, API {want:?}"));
                }
            }
        }
        Ok(samples)
    })
    .await;
    let c = &core_samples;
    let kaito_served = ours
        .iter()
        .filter(|md| provider_name(md) == "kaito")
        .count() as f64;
    let dynamo_served = ours
        .iter()
        .filter(|md| provider_name(md) == "dynamo")
        .count() as f64;
    let ours_fresh = mds.list(&ListParams::default()).await.unwrap().items;
    let count = |provider: &str, phase: Phase| {
        ours_fresh
            .iter()
            .filter(|md| provider_name(md) == provider && md.phase() == Some(phase))
            .count() as f64
    };
    assert_eq!(count("kaito", Phase::Running), 4.0);
    // Selections, their latency, transitions and ready times: at least ours (the core started
    // in this test; deployments of other namespaces already had their provider).
    for (provider, served) in [("kaito", kaito_served), ("dynamo", dynamo_served)] {
        let selections = sum(
            c,
            "airunway_provider_selection_total",
            &[("provider", provider)],
        );
        assert!(
            selections >= served,
            "{provider}: {selections} selections < {served}"
        );
        let timed = sum(
            c,
            "airunway_selection_duration_seconds_count",
            &[("provider", provider)],
        );
        assert!(
            timed >= served,
            "{provider}: {timed} selection durations < {served}"
        );
    }
    let to_running = sum(
        c,
        "airunway_deployment_phase_transitions_total",
        &[("provider", "kaito"), ("to_phase", "Running")],
    );
    assert!(to_running >= 4.0, "{to_running} transitions to Running");
    let to_failed = sum(
        c,
        "airunway_deployment_phase_transitions_total",
        &[("provider", "dynamo"), ("to_phase", "Failed")],
    );
    assert!(to_failed >= 2.0, "{to_failed} transitions to Failed");
    let ready = sum(
        c,
        "airunway_deployment_ready_duration_seconds_count",
        &[("provider", "kaito")],
    );
    assert!(ready >= 4.0, "{ready} ready durations");
    let ready_sum = sum(
        c,
        "airunway_deployment_ready_duration_seconds_sum",
        &[("provider", "kaito")],
    );
    assert!(
        ready_sum / ready <= burst_done.as_secs_f64() + 5.0,
        "mean ready time {} beyond the burst's {burst_done:?}",
        ready_sum / ready
    );
    // Webhooks: every creation admitted by both, the hostile one denied once.
    for webhook in [
        webhooks::MUTATE_MODELDEPLOYMENT,
        webhooks::VALIDATE_MODELDEPLOYMENT,
    ] {
        let allowed = sum(
            c,
            "airunway_webhook_requests_total",
            &[
                ("webhook", webhook),
                ("operation", "CREATE"),
                ("result", webhook_results::ALLOWED),
            ],
        );
        assert!(
            allowed >= created as f64,
            "{webhook}: {allowed} CREATE allowed < {created}"
        );
        let timed = sum(
            c,
            "airunway_webhook_request_duration_seconds_count",
            &[("webhook", webhook), ("operation", "CREATE")],
        );
        assert!(
            timed >= allowed,
            "{webhook}: {timed} timed < {allowed} answered"
        );
    }
    let denied = sum(
        c,
        "airunway_webhook_requests_total",
        &[
            ("webhook", webhooks::VALIDATE_MODELDEPLOYMENT),
            ("result", webhook_results::DENIED),
        ],
    );
    assert_eq!(
        denied - denied_before,
        1.0,
        "the hostile deployment's denial"
    );
    let registrations = sum(
        c,
        "airunway_webhook_requests_total",
        &[
            ("webhook", webhooks::VALIDATE_INFERENCEPROVIDERCONFIG),
            ("result", webhook_results::ALLOWED),
        ],
    );
    assert!(
        registrations >= 2.0,
        "{registrations} registrations admitted"
    );
    // Provider health in the core's view: fresh heartbeats (1 s interval), not stale.
    for provider in ["kaito", "dynamo"] {
        let stale: Vec<f64> = matching(c, "airunway_provider_stale", &[("provider", provider)])
            .map(|s| s.value)
            .collect();
        assert_eq!(stale, vec![0.0], "{provider} stale");
        let age = sum(
            c,
            "airunway_provider_heartbeat_age_seconds",
            &[("provider", provider)],
        );
        assert!(
            age.is_finite() && (0.0..10.0).contains(&age),
            "{provider}: core sees heartbeat age {age}"
        );
    }

    // Each provider against the API server: its served deployments by phase (cluster-wide),
    // its applies, its reconciles, its own heartbeat age.
    for (binary, provider, kind, applied_at_least) in [
        (&kaito, "kaito", "Workspace", 6.0),
        (&dynamo, "dynamo", "DynamoGraphDeployment", 2.0),
    ] {
        let samples = eventually(
            &format!("{provider}'s metrics to match the API server"),
            WAIT,
            || async {
                let everything = all.list(&ListParams::default()).await.unwrap().items;
                let mut want: BTreeMap<String, f64> = BTreeMap::new();
                for md in everything.iter().filter(|md| provider_name(md) == provider) {
                    *want.entry(phase_name(md).into()).or_default() += 1.0;
                }
                let samples = scrape(binary).await;
                let got: BTreeMap<String, f64> = matching(
                    &samples,
                    "airunway_provider_deployments",
                    &[("provider", provider)],
                )
                .map(|s| (s.labels["phase"].clone(), s.value))
                .collect();
                if got == want {
                    Ok(samples)
                } else {
                    Err(format!("provider_deployments {got:?} != API {want:?}"))
                }
            },
        )
        .await;
        let applied = sum(
            &samples,
            "airunway_upstream_applies_total",
            &[
                ("provider", provider),
                ("kind", kind),
                ("result", apply_results::APPLIED),
            ],
        );
        assert!(
            applied >= applied_at_least,
            "{provider}: {applied} {kind} applies"
        );
        let reconciles = sum(
            &samples,
            "airunway_reconciliation_duration_seconds_count",
            &[("provider", provider)],
        );
        assert!(
            reconciles >= applied_at_least,
            "{provider}: {reconciles} reconciles"
        );
        let age = sum(
            &samples,
            "airunway_provider_heartbeat_age_seconds",
            &[("provider", provider)],
        );
        assert!(
            age.is_finite() && (0.0..5.0).contains(&age),
            "{provider}: own heartbeat age {age}"
        );
        eprintln!(
            "{provider}: {applied} {kind} applied, {} unchanged, {reconciles} reconciles, heartbeat {age:.2}s old",
            sum(
                &samples,
                "airunway_upstream_applies_total",
                &[("provider", provider), ("result", apply_results::UNCHANGED)]
            )
        );
    }
    eprintln!(
        "burst of {created} deployments settled in {:.1}s; core: {to_running} transitions to Running, {denied} denials, selection mean {:.2}s, ready mean {:.2}s",
        burst_done.as_secs_f64(),
        sum(c, "airunway_selection_duration_seconds_sum", &[])
            / sum(c, "airunway_selection_duration_seconds_count", &[]),
        ready_sum / ready,
    );

    // Prometheus scraping the three binaries; every panel query of the dashboard returns data.
    let dir = std::env::temp_dir().join(format!("airunway-observability-{}", env.namespace));
    std::fs::create_dir_all(&dir).unwrap();
    remove_at_exit(&dir);
    let targets = [core.metrics, kaito.metrics, dynamo.metrics]
        .iter()
        .map(|port| format!("'127.0.0.1:{port}'"))
        .collect::<Vec<_>>()
        .join(", ");
    std::fs::write(
        dir.join("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: {SCRAPE}\n  scrape_timeout: {SCRAPE}\n  evaluation_interval: {SCRAPE}\nscrape_configs:\n- job_name: airunway\n  static_configs:\n  - targets: [{targets}]\n"
        ),
    )
    .unwrap();
    let prometheus_port = free_port();
    let prometheus_url = format!("http://127.0.0.1:{prometheus_port}");
    let prometheus = Spawn {
        name: "prometheus".into(),
        program: which("prometheus"),
        args: vec![
            format!("--config.file={}", dir.join("prometheus.yml").display()),
            format!("--storage.tsdb.path={}", dir.join("data").display()),
            format!("--web.listen-address=127.0.0.1:{prometheus_port}"),
            "--storage.tsdb.retention.time=1h".into(),
            "--log.level=warn".into(),
        ],
        env: [("GOMAXPROCS".to_string(), "2".to_string())].into(),
        log: dir.join("prometheus.log"),
        lifetime: Lifetime::WithTestProcess,
    }
    .start()
    .unwrap();
    env.report_log("prometheus", dir.join("prometheus.log"));
    let query = |q: String| {
        let url = format!("{prometheus_url}/api/v1/query?query={}", encode(&q));
        async move {
            match http::get(&url).await {
                Ok((200, body)) => {
                    let answer: Value =
                        serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
                    Ok(answer["data"]["result"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default())
                }
                other => Err(format!("{other:?}")),
            }
        }
    };
    // Every target up, and a few scrapes in, so `rate()` has two samples in its window.
    let prometheus_started = Instant::now();
    eventually("Prometheus to scrape the three binaries", WAIT, || async {
        if let Some(status) = prometheus.exit_status() {
            panic!("prometheus exited ({status}):\n{}", prometheus.log_tail(30));
        }
        let up = query("sum(up)".into()).await?;
        let value = up
            .first()
            .and_then(|s| s["value"][1].as_str())
            .unwrap_or("0")
            .to_string();
        if value == "3" && prometheus_started.elapsed() > Duration::from_secs(5) {
            Ok(())
        } else {
            Err(format!("up = {value}"))
        }
    })
    .await;
    let dashboard_path =
        paths::workspace_root().join("deploy/components/grafana/airunway-dashboard.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(&dashboard_path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", dashboard_path.display()));
    let queries = panel_queries(&dashboard);
    assert!(
        !queries.is_empty(),
        "{}: no panel queries",
        dashboard_path.display()
    );
    let mut empty = Vec::new();
    for (title, expr) in &queries {
        let q = instantiate(expr);
        // A counter's rate needs two scrapes after the burst: a few seconds more at most.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match query(q.clone()).await {
                Ok(result) if !result.is_empty() => {
                    eprintln!("panel {title:?}: {q} -> {} series", result.len());
                    break;
                }
                last if Instant::now() > deadline => {
                    empty.push(format!("{title}: {q} ({last:?})"));
                    break;
                }
                _ => tokio::time::sleep(Duration::from_millis(500)).await,
            }
        }
    }
    assert!(empty.is_empty(), "panel queries without data: {empty:#?}");
    if let Some(dir) = std::env::var_os(SCREENSHOTS_ENV) {
        screenshots(&PathBuf::from(dir), &prometheus_url, &queries);
    }
    eprintln!(
        "{} panel queries of {} returned data; the test took {:.1}s",
        queries.len(),
        dashboard_path.display(),
        started.elapsed().as_secs_f64()
    );
    prometheus.terminate(Duration::from_secs(5));
    remove_webhooks(&env.client).await;
    delete_all(&env.client).await;
}

/// The schema node at `path` in an OpenAPI v3 schema (`None` when the path leaves it).
fn schema_at<'a>(schema: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut node = schema;
    for step in path {
        node = node["properties"].get(step)?;
    }
    Some(node)
}

/// kube-state-metrics' configuration (deploy/components/kube-state-metrics) names only fields
/// the ModelDeployment schema has, with the shapes its metric types need (kube-state-metrics
/// itself is not available to run it).
#[test]
fn the_kube_state_metrics_configuration_reads_fields_the_schema_has() {
    let root = paths::workspace_root();
    let objects = airunway_e2e::manifests::read(
        &root.join("deploy/components/kube-state-metrics/custom-resource-state.yaml"),
    );
    let config: Value =
        serde_saphyr::from_str(objects[0]["data"]["config.yaml"].as_str().unwrap()).unwrap();
    assert_eq!(config["kind"], "CustomResourceStateMetrics");
    let crd =
        &airunway_e2e::manifests::read(&root.join("deploy/crds/airunway.ai_modeldeployments.yaml"))
            [0];
    let resource = &config["spec"]["resources"][0];
    let gvk = &resource["groupVersionKind"];
    assert_eq!(
        (gvk["group"].as_str(), gvk["kind"].as_str()),
        (
            crd["spec"]["group"].as_str(),
            crd["spec"]["names"]["kind"].as_str()
        )
    );
    let version = crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == gvk["version"])
        .unwrap_or_else(|| panic!("version {} not served", gvk["version"]));
    let schema = &version["schema"]["openAPIV3Schema"];
    let path = |value: &Value| -> Vec<String> { serde_json::from_value(value.clone()).unwrap() };
    for (label, p) in resource["labelsFromPath"].as_object().unwrap() {
        let p = path(p);
        // metadata's fields are not in a CRD's schema.
        if p[0] != "metadata" {
            assert!(schema_at(schema, &p).is_some(), "label {label}: {p:?}");
        }
    }
    for metric in resource["metrics"].as_array().unwrap() {
        let each = &metric["each"];
        let (p, shape) = match each["type"].as_str().unwrap() {
            "StateSet" => {
                let p = path(&each["stateSet"]["path"]);
                let node = schema_at(schema, &p).unwrap_or_else(|| panic!("{p:?}"));
                let listed: Vec<String> = path(&each["stateSet"]["list"]);
                let phases: Vec<&str> = Phase::ALL.iter().map(|p| p.as_str()).collect();
                assert_eq!(listed, phases, "every phase");
                (p, node["type"].clone())
            }
            "Gauge" => {
                let p = path(&each["gauge"]["path"]);
                if p[0] == "metadata" {
                    continue;
                }
                let node = schema_at(schema, &p).unwrap_or_else(|| panic!("{p:?}"));
                if let Some(from) = each["gauge"].get("valueFrom") {
                    let item = &node["items"];
                    assert!(
                        schema_at(item, &path(from)).is_some(),
                        "{} valueFrom {from}",
                        metric["name"]
                    );
                    for (_, label) in each["gauge"]["labelsFromPath"].as_object().unwrap() {
                        assert!(schema_at(item, &path(label)).is_some(), "{label}");
                    }
                }
                (p, node["type"].clone())
            }
            other => panic!("unexpected metric type {other}"),
        };
        assert!(shape.is_string(), "{p:?}: {shape}");
    }
}
