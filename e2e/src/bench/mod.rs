//! The scale benchmark (`e2e/bench`): the real control plane, the release binaries of the core
//! and the providers under their shipped RBAC, N ModelDeployments created in a burst, the
//! upstream operators played by writing the status they really write, and figures for latency,
//! memory, CPU, watches and every API request by identity (from the API server's audit log).

pub mod audit;
pub mod floor;
pub mod observe;
pub mod procs;
pub mod relist;
pub mod report;
pub mod stats;
pub mod workload;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use airunway_api::v1alpha1::{InferenceProviderConfig, ModelDeployment};
use anyhow::{Context as _, Result, bail};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use serde_json::json;

use crate::control_plane::{ControlPlane, audit_log_path, client_from_kubeconfig};
use crate::env::TestEnv;
use crate::stack::{self, Running};
use crate::{manifests, paths};
use observe::{Timeline, Times};
use report::{ProcessFigures, Report};
use stats::Distribution;
use workload::{BENCH_LABEL, Target};

/// The namespace the components run in (their ServiceAccounts and the webhook Secret).
const SYSTEM_NAMESPACE: &str = "airunway-system";

/// How a run is shaped.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Deployments to create.
    pub count: usize,
    /// Concurrent creating clients.
    pub clients: usize,
    /// Namespaces to spread them over.
    pub namespaces: usize,
    /// Providers, in the order deployments cycle through them.
    pub targets: Vec<Target>,
    /// The steady-state window after everything is Running.
    pub steady: Duration,
    /// After the steady state, restart kube-apiserver and watch the controllers relist for
    /// this long (peak RSS against settled); `None` skips it.
    pub relist: Option<Duration>,
    /// Give up waiting for a phase after this long.
    pub timeout: Duration,
    /// Concurrent connections of the floor's plain client.
    pub floor_connections: usize,
    /// Where to write the JSON report.
    pub json: Option<PathBuf>,
    /// Where to copy the API server's audit log (it is removed with the control plane).
    pub keep_audit_log: Option<PathBuf>,
    /// Default with the mutating-admission-policy component (its MutatingAdmissionPolicy, no
    /// mutating webhook) instead of the core's mutating webhook.
    pub mutating_policy: bool,
}

/// A started component and its identity in the audit log.
struct Component {
    name: String,
    running: Running,
}

fn seconds(from: Instant, to: Option<Instant>) -> Option<f64> {
    to.map(|t| t.saturating_duration_since(from).as_secs_f64())
}

async fn wait_for(
    what: &str,
    timeout: Duration,
    mut done: impl FnMut() -> bool,
) -> Option<Instant> {
    let deadline = Instant::now() + timeout;
    let mut last_report = Instant::now();
    while Instant::now() < deadline {
        if done() {
            return Some(Instant::now());
        }
        if last_report.elapsed() > Duration::from_secs(15) {
            eprintln!("  ... still waiting for {what}");
            last_report = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("  gave up waiting for {what} after {timeout:?}");
    None
}

async fn create_namespace(client: &Client, name: &str) -> Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(e) => Err(e).with_context(|| format!("creating namespace {name}")),
    }
}

/// The Hugging Face token Secret the GPU deployments name (`workload::TOKEN_SECRET`), as a
/// user would have created it: the core checks that it exists (`SecretsFound`).
async fn create_token_secret(client: &Client, namespace: &str) -> Result<()> {
    let api: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), namespace);
    let secret = serde_json::from_value(json!({
        "metadata": {"name": workload::TOKEN_SECRET},
        "stringData": {"HF_TOKEN": "bench"},
    }))?;
    match api.create(&PostParams::default(), &secret).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(e) => Err(e)
            .with_context(|| format!("creating Secret {namespace}/{}", workload::TOKEN_SECRET)),
    }
}

/// Starts the core (webhooks on) and the providers, each as its ServiceAccount with the
/// shipped RBAC, and installs the shipped webhook configurations pointing at the core (with
/// `mutating_policy`, the mutating-admission-policy component's policy in place of the mutating
/// webhook configuration).
async fn start_components(
    env: &TestEnv,
    targets: &[Target],
    mutating_policy: bool,
) -> Result<Vec<Component>> {
    let cp = env.control_plane;
    let client = &env.client;
    create_namespace(client, SYSTEM_NAMESPACE).await?;
    let root = paths::workspace_root();
    let identity = |account: &str| {
        cp.kubeconfig_for(
            &format!("system:serviceaccount:{SYSTEM_NAMESPACE}:{account}"),
            &["system:serviceaccounts"],
        )
    };
    let mut objects = manifests::read(&root.join("deploy/core/rbac.yaml"));
    manifests::retarget_namespace(&mut objects, SYSTEM_NAMESPACE);
    manifests::apply(client, &objects).await;
    let webhook_port = crate::binaries::free_port();
    let core = stack::start_core(
        env,
        &identity("airunway-core")?,
        &[
            &format!("--webhook-bind-address=127.0.0.1:{webhook_port}"),
            &format!("--webhook-namespace={SYSTEM_NAMESPACE}"),
            "--webhook-extra-san=127.0.0.1",
        ],
        "airunway-core-bench",
    )
    .await;
    let mut components = vec![Component {
        name: "airunway-core".into(),
        running: core,
    }];
    // The KAITO provider is ready only while a KAITO controller runs: the simulator's stand-in.
    if targets.iter().any(|t| t.name() == "kaito") {
        crate::sandbox::kaito::install_controller_stand_in(client).await?;
    }
    for target in targets {
        let binary = format!("airunway-provider-{}", target.name());
        let mut objects =
            manifests::read(&root.join(format!("deploy/providers/{}/rbac.yaml", target.name())));
        manifests::retarget_namespace(&mut objects, SYSTEM_NAMESPACE);
        manifests::apply(client, &objects).await;
        let running = stack::start_provider(
            env,
            &binary,
            &identity(&binary)?,
            &[],
            &format!("{binary}-bench"),
        )
        .await;
        components.push(Component {
            name: binary,
            running,
        });
    }
    let mut webhooks = manifests::read(&root.join("deploy/core/webhooks.yaml"));
    if mutating_policy {
        // What the component does: its policy in, the mutating webhook configuration out.
        webhooks.retain(|object| object["kind"] != "MutatingWebhookConfiguration");
        manifests::apply(
            client,
            &manifests::read(
                &root.join("deploy/components/mutating-admission-policy/defaults-policy.yaml"),
            ),
        )
        .await;
    }
    for object in &mut webhooks {
        for webhook in object["webhooks"].as_array_mut().into_iter().flatten() {
            let path = webhook["clientConfig"]["service"]["path"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            webhook["clientConfig"] =
                json!({"url": format!("https://127.0.0.1:{webhook_port}{path}")});
        }
    }
    manifests::apply(client, &webhooks).await;
    // Ready providers, and webhooks that answer (an invalid dry-run create is refused by them).
    let ipcs: Api<InferenceProviderConfig> = Api::all(client.clone());
    let names: Vec<&str> = targets.iter().map(|t| t.name()).collect();
    let mut ready = false;
    let deadline = Instant::now() + Duration::from_secs(90);
    while !ready && Instant::now() < deadline {
        let list = ipcs.list(&ListParams::default()).await?;
        ready = names.iter().all(|n| {
            list.items.iter().any(|i| {
                i.metadata.name.as_deref() == Some(n)
                    && i.status.as_ref().and_then(|s| s.ready) == Some(true)
            })
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    if !ready {
        bail!("the providers {names:?} did not report ready within 90s");
    }
    let probe: ModelDeployment = serde_json::from_value(
        json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "webhook-probe", "namespace": "default"},
        "spec": {"model": {"id": "a/b"}, "provider": {"overrides": {"hostPID": true}}}}),
    )?;
    let mds: Api<ModelDeployment> = Api::namespaced(client.clone(), "default");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let dry = PostParams {
            dry_run: true,
            ..Default::default()
        };
        match mds.create(&dry, &probe).await {
            Err(e) if e.to_string().contains("admission webhook") => break,
            _ if Instant::now() > deadline => {
                bail!("the admission webhooks did not answer within 60s")
            }
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    Ok(components)
}

fn latencies(times: &[Times], pick: fn(&Times) -> Option<Instant>) -> Distribution {
    Distribution::of(
        times
            .iter()
            .filter_map(|t| Some(pick(t)?.saturating_duration_since(t.sent?).as_secs_f64()))
            .collect(),
    )
}

fn last(times: &[Times], pick: fn(&Times) -> Option<Instant>) -> Option<Instant> {
    times
        .iter()
        .map(pick)
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .max()
}

async fn admission_latency(client: &Client) -> BTreeMap<String, (f64, f64)> {
    let mut out = BTreeMap::new();
    let Ok(request) = http::Request::get("/metrics").body(Vec::new()) else {
        return out;
    };
    let Ok(text) = client.request_text(request).await else {
        return out;
    };
    for kind in ["validating", "admit"] {
        let buckets = stats::histogram_buckets(
            &text,
            "apiserver_admission_webhook_admission_duration_seconds",
            &[&format!("type=\"{kind}\""), "operation=\"CREATE\""],
        );
        if let (Some(p50), Some(p99)) = (
            stats::histogram_quantile(0.5, &buckets),
            stats::histogram_quantile(0.99, &buckets),
        ) {
            let label = if kind == "admit" { "mutating" } else { kind };
            out.insert(label.to_string(), (p50, p99));
        }
    }
    out
}

/// Runs the benchmark and returns its report (also printed, and written as JSON if asked).
pub async fn run(options: BenchOptions) -> Result<Report> {
    let env = TestEnv::new("bench").await;
    let cp: &'static ControlPlane = env.control_plane;
    let run_id = env.namespace.clone();
    let client = env.client.clone();
    println!("control plane up; starting the core and the providers (release builds) ...");
    let components = start_components(&env, &options.targets, options.mutating_policy).await?;
    let bench_client =
        client_from_kubeconfig(&cp.kubeconfig_for("bench-client", &["system:masters"])?).await?;
    let simulator =
        client_from_kubeconfig(&cp.kubeconfig_for("upstream-simulator", &["system:masters"])?)
            .await?;
    let observer =
        client_from_kubeconfig(&cp.kubeconfig_for("bench-observer", &["system:masters"])?).await?;
    for i in 0..options.namespaces.max(1) {
        let namespace = workload::namespace_of(i, options.namespaces);
        create_namespace(&client, &namespace).await?;
        create_token_secret(&client, &namespace).await?;
    }
    let selector = format!("{BENCH_LABEL}={run_id}");
    let timeline = Timeline::default();
    observe::watch_deployments(observer.clone(), selector.clone(), timeline.clone());
    for target in &options.targets {
        observe::watch_upstream(
            observer.clone(),
            target.upstream(),
            selector.clone(),
            timeline.clone(),
        );
        workload::simulate_operator(simulator.clone(), *target, run_id.clone());
    }
    tokio::time::sleep(Duration::from_secs(1)).await;

    let n = options.count;
    println!(
        "creating {n} ModelDeployments with {} clients ...",
        options.clients
    );
    let burst_wall = Timestamp::now();
    let t0 = Instant::now();
    let failures = workload::burst(
        &bench_client,
        &run_id,
        n,
        options.clients,
        options.namespaces,
        &options.targets,
        &timeline,
    )
    .await;
    let created = Instant::now();
    let expected = n - failures;
    let all_running = wait_for("all deployments to be Running", options.timeout, || {
        timeline.progress().2 >= expected
    })
    .await;
    let running_wall = Timestamp::now();
    let readings_burst: Vec<_> = components
        .iter()
        .map(|c| procs::read(c.running.process.pid()))
        .collect();
    let control_plane_burst: Vec<_> = cp
        .processes()
        .iter()
        .map(|p| (p.name().to_string(), procs::read(p.pid())))
        .collect();
    let snapshot = timeline.snapshot();
    let times: Vec<Times> = snapshot.values().cloned().collect();
    println!(
        "  all Running after {:?}; steady state for {:?} ...",
        all_running.map(|t| t - t0),
        options.steady
    );

    // Steady state: nothing changes; count what is written anyway.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let steady_from = Timestamp::now();
    tokio::time::sleep(options.steady).await;
    let steady_to = Timestamp::now();
    let readings_settled: Vec<_> = components
        .iter()
        .map(|c| procs::read(c.running.process.pid()))
        .collect();
    let control_plane_settled: Vec<_> = cp
        .processes()
        .iter()
        .map(|p| (p.name().to_string(), procs::read(p.pid())))
        .collect();
    let admission = admission_latency(&client).await;

    // A relist: kube-apiserver restarted, every watch lists everything again.
    let relist_from = Timestamp::now();
    let relist = match &options.relist {
        Some(window) => {
            let pids: Vec<(String, u32)> = components
                .iter()
                .map(|c| (c.name.clone(), c.running.process.pid()))
                .collect();
            match relist::measure(cp, &pids, *window).await {
                Ok(readings) => readings,
                Err(e) => {
                    eprintln!("relist not measured: {e:#}");
                    BTreeMap::new()
                }
            }
        }
        None => BTreeMap::new(),
    };
    let relist_to = Timestamp::now();

    // What the providers created, for the floor.
    let mut floor_items = Vec::new();
    for target in &options.targets {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &target.upstream());
        let listed = api.list(&ListParams::default().labels(&selector)).await?;
        let mds: Api<ModelDeployment> = Api::all(client.clone());
        let sample_status = mds
            .list(&ListParams::default().labels(&selector).limit(50))
            .await?
            .items
            .into_iter()
            .find(|m| m.selected_provider() == Some(target.name()))
            .and_then(|m| serde_json::to_value(m.status).ok())
            .unwrap_or_default();
        for object in listed.items {
            floor_items.push(floor::FloorItem {
                resource: target.upstream(),
                upstream: floor::creatable(serde_json::to_value(&object)?),
                status: sample_status.clone(),
            });
        }
    }

    println!("deleting every deployment ...");
    let delete_wall = Timestamp::now();
    let deleting = Instant::now();
    for i in 0..options.namespaces.max(1) {
        let api: Api<ModelDeployment> = Api::namespaced(
            bench_client.clone(),
            &workload::namespace_of(i, options.namespaces),
        );
        api.delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels(&selector),
        )
        .await?;
    }
    let gone = wait_for(
        "deployments and upstream objects to be gone",
        options.timeout,
        || timeline.live_counts() == (0, 0),
    )
    .await;
    let deleted_wall = Timestamp::now();

    // The floor, with no controller running.
    for c in &components {
        c.running.process.terminate(Duration::from_secs(10));
    }
    if let Err(e) = delete_webhook_configurations(&client).await {
        eprintln!("removing the webhook configurations: {e:#}");
    }
    create_namespace(&client, "bench-floor").await?;
    floor_items.truncate(n);
    println!(
        "measuring the floor ({} upstream objects, {} status writes) ...",
        floor_items.len(),
        2 * floor_items.len()
    );
    let floor_seconds = match floor::measure(
        &bench_client,
        "bench-floor",
        &floor_items,
        options.floor_connections,
    )
    .await
    {
        Ok(d) => Some(d.as_secs_f64()),
        Err(e) => {
            eprintln!("floor not measured: {e:#}");
            None
        }
    };

    // The audit log.
    let audit_text =
        std::fs::read_to_string(audit_log_path(&cp.dir)).context("reading the audit log")?;
    if let Some(path) = &options.keep_audit_log {
        std::fs::write(path, &audit_text).with_context(|| format!("writing {}", path.display()))?;
    }
    let requests: Vec<audit::Request> = audit_text.lines().filter_map(audit::parse_line).collect();
    let burst_counts = audit::Counts::of(&requests, burst_wall, running_wall);
    let steady_counts = audit::Counts::of(&requests, steady_from, steady_to);
    let delete_counts = audit::Counts::of(&requests, delete_wall, deleted_wall);
    let relist_counts = audit::Counts::of(&requests, relist_from, relist_to);
    let open = audit::open_watches(&requests, steady_to);

    let mut processes = BTreeMap::new();
    for ((c, burst), settled) in components.iter().zip(readings_burst).zip(readings_settled) {
        processes.insert(
            c.name.clone(),
            ProcessFigures {
                after_burst: burst,
                settled,
                open_watches: open.get(&c.name).copied().unwrap_or_default(),
                relist: relist.get(&c.name).cloned(),
                writes_per_deployment: burst_counts.writes(&c.name) as f64 / expected.max(1) as f64,
                reads_per_deployment: burst_counts.reads(&c.name) as f64 / expected.max(1) as f64,
            },
        );
    }
    for ((name, burst), (_, settled)) in control_plane_burst.into_iter().zip(control_plane_settled)
    {
        processes.insert(
            name,
            ProcessFigures {
                after_burst: burst,
                settled,
                ..Default::default()
            },
        );
    }
    let all_selected = last(&times, |t| t.selected);
    let all_upstream = last(&times, |t| t.upstream);
    let all_running_at = all_running.and(last(&times, |t| t.running));
    let all_running_seconds = seconds(t0, all_running_at);
    let report = Report {
        count: n,
        clients: options.clients,
        namespaces: options.namespaces,
        providers: options
            .targets
            .iter()
            .map(|t| t.name().to_string())
            .collect(),
        create_failures: failures,
        create_seconds: (created - t0).as_secs_f64(),
        creates_per_second: n as f64 / (created - t0).as_secs_f64().max(1e-9),
        selection_latency: latencies(&times, |t| t.selected),
        upstream_latency: latencies(&times, |t| t.upstream),
        running_latency: latencies(&times, |t| t.running),
        all_selected_seconds: seconds(t0, all_selected),
        all_upstream_seconds: seconds(t0, all_upstream),
        all_running_seconds,
        after_last_create: (
            seconds(created, all_selected),
            seconds(created, all_upstream),
        ),
        admission_webhook_seconds: admission,
        processes,
        burst_requests: burst_counts,
        steady_seconds: options.steady.as_secs_f64(),
        steady_writes: steady_counts.write_lines(),
        relist_seconds: options.relist.map(|w| w.as_secs_f64()),
        relist_writes: relist_counts.write_lines(),
        delete_seconds: seconds(deleting, gone),
        delete_requests: delete_counts,
        floor_seconds,
        floor_ratio: match (all_running_seconds, floor_seconds) {
            (Some(ours), Some(floor)) if floor > 0.0 => Some(ours / floor),
            _ => None,
        },
        mutating_policy: options.mutating_policy,
    };
    println!("{}", report.table());
    if let Some(path) = &options.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
        println!("JSON report: {}", path.display());
    }
    Ok(report)
}

/// Removes the shipped webhook configurations (`airunway-core`), so nothing calls the stopped
/// core.
async fn delete_webhook_configurations(client: &Client) -> Result<()> {
    for (group, kind, plural) in [
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
        ),
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
        ),
    ] {
        let resource = kube::api::ApiResource {
            group: group.into(),
            version: "v1".into(),
            api_version: format!("{group}/v1"),
            kind: kind.into(),
            plural: plural.into(),
        };
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        match api.delete("airunway-core", &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
