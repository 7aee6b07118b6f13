//! The provider conformance suite (`airunway_api::conformance`, the code the
//! `airunway-conformance` binary runs) on the real control plane with the real core: the
//! example third-party provider passes it, and deliberately broken providers
//! (`e2e/broken-provider`) fail it with a message naming the check they break. Each provider
//! runs as its kustomize base's ServiceAccount (a TokenRequest token), in a namespace of its
//! own; the idempotence and permission checks read the API server's audit log.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use airunway_api::conformance::{self, Options, Outcome, Report};
use airunway_e2e::control_plane::audit_log_path;
use airunway_e2e::stack::{FAST_HEALTH, start_core};
use airunway_e2e::{TestEnv, cluster_lock, kustomize, paths};

/// How long a check waits for an expected state (each takes under a second when it passes).
const WAIT: Duration = Duration::from_secs(45);

/// One provider to put through the suite.
struct Subject {
    /// Its binary (found like our other binaries: `AIRUNWAY_BIN_<NAME>` or the bin dir).
    binary: &'static str,
    /// Its kustomize base (a directory under the workspace root).
    base: &'static str,
    /// Its conformance.yaml (under the workspace root).
    data: &'static str,
    /// Extra environment for the binary (the broken provider's `BROKEN_PROVIDER_MODE`).
    env: Vec<(&'static str, &'static str)>,
    /// Suffix of the namespace it runs in.
    tag: &'static str,
    /// How long a check waits for an expected state.
    timeout: Duration,
}

async fn run_suite(env: &TestEnv, subject: &Subject) -> Report {
    let root = paths::workspace_root();
    let dir: PathBuf = env.control_plane.dir.join("conformance").join(subject.tag);
    std::fs::create_dir_all(&dir).unwrap();
    let base = dir.join("base.yaml");
    std::fs::write(
        &base,
        kustomize::render_yaml(&root.join(subject.base))
            .unwrap_or_else(|e| panic!("rendering {}: {e:#}", subject.base)),
    )
    .unwrap();
    let data = if subject.env.is_empty() {
        root.join(subject.data)
    } else {
        // A copy of the data with the extra environment (its fixtures path made absolute).
        let original = root.join(subject.data);
        let mut value: serde_json::Value =
            serde_saphyr::from_str(&std::fs::read_to_string(&original).unwrap()).unwrap();
        // The broken provider registers under a name of its own per fault
        // (BROKEN_PROVIDER_NAME), which the data and the messages naming it follow.
        if let Some((_, name)) = subject
            .env
            .iter()
            .find(|(k, _)| *k == "BROKEN_PROVIDER_NAME")
        {
            let text = serde_json::to_string(&value)
                .unwrap()
                .replace("provider broken ", &format!("provider {name} "));
            value = serde_json::from_str(&text).unwrap();
            value["provider"] = serde_json::json!(name);
        }
        value["env"] = subject
            .env
            .iter()
            .map(|(k, v)| (k.to_string(), serde_json::json!(v)))
            .collect::<serde_json::Map<_, _>>()
            .into();
        let path = dir.join("conformance.yaml");
        if let Some(fixtures) = value["statusFixtures"].as_str() {
            value["statusFixtures"] = serde_json::json!(
                original
                    .parent()
                    .unwrap()
                    .join(fixtures)
                    .display()
                    .to_string()
            );
        }
        std::fs::write(&path, serde_json::to_string(&value).unwrap()).unwrap();
        path
    };
    let namespace = format!("{}-{}", env.namespace, subject.tag);
    let mut options = Options::new(base, data, &namespace);
    options.kubeconfig = Some(env.control_plane.kubeconfig.clone());
    options.provider_binary =
        Some(paths::our_binary(subject.binary).unwrap_or_else(|e| panic!("{e:#}")));
    options.audit_log = Some(audit_log_path(&env.control_plane.dir));
    options.work_dir = Some(dir.clone());
    options.timeout = subject.timeout;
    if subject.timeout < WAIT {
        options.quiet_window = Duration::from_secs(3);
    }
    let started = Instant::now();
    let report = conformance::run(&options)
        .await
        .unwrap_or_else(|e| panic!("the conformance run of {} did not start: {e}", subject.tag));
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        if entry.path().extension().is_some_and(|e| e == "log") {
            env.report_log(
                &format!("{} ({})", subject.binary, subject.tag),
                entry.path(),
            );
        }
    }
    println!(
        "{}({}: {:.1} s)\n",
        report.table(),
        subject.tag,
        started.elapsed().as_secs_f64()
    );
    report
}

fn example() -> Subject {
    Subject {
        binary: "configmap-provider",
        base: "examples/configmap-provider/deploy",
        data: "examples/configmap-provider/conformance/conformance.yaml",
        env: Vec::new(),
        tag: "configmap",
        timeout: WAIT,
    }
}

/// A shipped provider: its binary, its base under `deploy/providers/` and its data.
fn shipped(name: &'static str) -> Subject {
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    Subject {
        binary: leak(format!("airunway-provider-{name}")),
        base: leak(format!("deploy/providers/{name}")),
        data: leak(format!("provider-{name}/conformance/conformance.yaml")),
        env: Vec::new(),
        tag: name,
        timeout: WAIT,
    }
}

/// The checks each provider is expected to skip, and why (from its data and upstream kind).
fn expected_skips(tag: &str) -> &'static [&'static str] {
    match tag {
        // A ConfigMap has no status, and no CRD.
        "configmap" => &["status-fixtures", "deletion-without-crd"],
        // apps/v1 Deployments: kube-controller-manager owns their status; no CRD.
        "llmd" | "vllm" => &["status-fixtures", "deletion-without-crd"],
        // KAITO holds a scale (a Workspace's resource.count is immutable), so the pause
        // check has no in-place change to hold back.
        "kaito" => &["pause"],
        _ => &[],
    }
}

#[tokio::test]
async fn every_provider_conforms() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("conformance").await;
    // The KAITO provider is ready only while a KAITO workspace controller runs: the
    // simulator's stand-in Deployment (its Pod runs on a simulated node).
    airunway_e2e::sandbox::kaito::install_controller_stand_in(&env.client)
        .await
        .unwrap();
    let core = start_core(&env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let subjects = [
        example(),
        shipped("kaito"),
        shipped("dynamo"),
        shipped("kuberay"),
        shipped("llmd"),
        shipped("vllm"),
    ];
    // Each in a namespace of its own, all at once (each registers its own name).
    let started = Instant::now();
    let reports = futures::future::join_all(subjects.iter().map(|s| run_suite(&env, s))).await;
    println!(
        "{} providers through the suite in {:.1} s",
        reports.len(),
        started.elapsed().as_secs_f64()
    );
    let mut failures = Vec::new();
    for (subject, report) in subjects.iter().zip(&reports) {
        failures.extend(report.failures());
        for check in conformance::CHECKS {
            let result = report
                .check(check)
                .unwrap_or_else(|| panic!("{}: no check {check}", subject.tag));
            if result.outcome == Outcome::Skipped && !expected_skips(subject.tag).contains(&check) {
                failures.push(format!(
                    "{}: check {check} skipped: {}",
                    subject.tag, result.message
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    core.process.terminate(Duration::from_secs(10));
}

/// The broken provider with one fault: `mode` (`BROKEN_PROVIDER_MODE`) with the base
/// `deploy`, or (`missing-permission`) no fault in the binary with the base lacking one.
fn broken(mode: &'static str) -> Subject {
    let name: &'static str = Box::leak(format!("broken-{mode}").into_boxed_str());
    let (env_mode, base) = match mode {
        "missing-permission" => ("none", "e2e/broken-provider/deploy-missing-permission"),
        _ => (mode, "e2e/broken-provider/deploy"),
    };
    Subject {
        binary: "broken-provider",
        base,
        data: "e2e/broken-provider/conformance/conformance.yaml",
        env: vec![
            ("BROKEN_PROVIDER_MODE", env_mode),
            ("BROKEN_PROVIDER_NAME", name),
        ],
        tag: mode,
        // Shorter: these runs wait out the checks that fail.
        timeout: Duration::from_secs(12),
    }
}

/// Asserts that exactly the checks `failing` failed in `report`, each with a message holding
/// `words`, and that every other check but those in `either` passed or was skipped.
fn assert_fails(report: &Report, failing: &[(&str, &str)], either: &[&str]) {
    let failures = report.failures();
    for (check, words) in failing {
        let result = report
            .check(check)
            .unwrap_or_else(|| panic!("no check {check}"));
        assert_eq!(
            result.outcome,
            Outcome::Failed,
            "{check} should fail: {}",
            result.message
        );
        assert!(
            result.message.contains(words),
            "{check}: {:?} does not say {words:?}",
            result.message
        );
        assert!(
            failures
                .iter()
                .any(|f| f.contains(&format!("check {check} failed: "))),
            "{failures:?}"
        );
    }
    for result in &report.checks {
        if !failing.iter().any(|(c, _)| *c == result.name)
            && !either.contains(&result.name.as_str())
        {
            assert_ne!(
                result.outcome,
                Outcome::Failed,
                "{} failed unexpectedly: {}",
                result.name,
                result.message
            );
        }
    }
}

#[tokio::test]
async fn broken_providers_fail_the_check_they_break() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("conformance-broken").await;
    let core = start_core(&env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    // Each fault under a registration name of its own, all at once.
    let subjects = [
        broken("reapply"),
        broken("ignore-deletion"),
        broken("failed-as-running"),
        broken("missing-permission"),
    ];
    let started = Instant::now();
    let reports = futures::future::join_all(subjects.iter().map(|s| run_suite(&env, s))).await;
    println!(
        "{} faults through the suite in {:.1} s",
        reports.len(),
        started.elapsed().as_secs_f64()
    );
    // Never settling: idempotence fails. Whether its drift repair is noticed depends on the
    // moment (an edit within the same 2 s is restored with DriftDetected, one across a change
    // of the rendered value is overwritten as one more re-apply), so drift is not asserted.
    assert_fails(
        &reports[0],
        &[("idempotence", "writes by system:serviceaccount:")],
        &["drift"],
    );
    // Its Widgets never go, so an identity change cannot recreate one either.
    assert_fails(
        &reports[1],
        &[
            ("deletion", "still there, Terminating"),
            ("identity-change", "recreated (a new uid)"),
        ],
        &[],
    );
    assert_fails(
        &reports[2],
        &[(
            "status-fixtures",
            "fixture failed: expected phase Failed and Ready reason Unclassified",
        )],
        &[],
    );
    // Without `delete` its Widgets cannot go either: the deployment is released by the
    // finalizer timeout (and the Widget by the garbage collector), the identity change never.
    assert_fails(
        &reports[3],
        &[
            ("permissions", "refused (403)"),
            ("deletion", "released only by the finalizer timeout"),
            ("identity-change", "recreated (a new uid)"),
        ],
        &[],
    );
    core.process.terminate(Duration::from_secs(10));
}

/// The check `runtime-config` (pure, no cluster): each shipped provider renders its first
/// accepted deployment, through the SDK, with a runtime configuration's node selector, env and
/// propagated label, and `airunway.ai/provider` on every object.
#[test]
fn runtime_config_defaults_reach_every_render() {
    use airunway_api::conformance::data::ProviderData;
    use airunway_api::conformance::runtime_config::check;
    let root = paths::workspace_root();
    let data = |provider: &str| {
        ProviderData::load(&root.join(format!("provider-{provider}/conformance/conformance.yaml")))
            .unwrap()
    };
    let results = [
        (
            "kaito",
            check(
                &airunway_provider_kaito::KaitoProvider::default(),
                &data("kaito"),
            ),
        ),
        (
            "dynamo",
            check(&airunway_provider_dynamo::DynamoProvider, &data("dynamo")),
        ),
        (
            "kuberay",
            check(
                &airunway_provider_kuberay::KubeRayProvider,
                &data("kuberay"),
            ),
        ),
        (
            "llmd",
            check(&airunway_provider_llmd::LlmdProvider, &data("llmd")),
        ),
        (
            "vllm",
            check(
                &airunway_provider_vllm::VllmProvider::default(),
                &data("vllm"),
            ),
        ),
    ];
    for (provider, result) in &results {
        eprintln!("{provider}: {result:?}");
    }
    let failed: Vec<String> = results
        .iter()
        .filter_map(|(provider, result)| result.as_ref().err().map(|e| format!("{provider}: {e}")))
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    // Every shipped provider renders a Pod template: the whole check ran.
    for (provider, result) in &results {
        assert!(
            result
                .as_ref()
                .is_ok_and(|m| m.contains("the Pod template has")),
            "{provider}: {result:?}"
        );
    }
}
