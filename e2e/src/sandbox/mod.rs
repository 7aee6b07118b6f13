//! The local sandbox: the real control plane, `airunway-core` (with its webhooks) and every
//! provider shim as local processes, the example deployments applied, and a status table.
//!
//! State lives in one folder (default `<workspace>/.sandbox`): the control plane's certificates,
//! etcd data and kubeconfig, every process's log under `logs/`, and `processes` (name and
//! process-group id of everything started). `down` stops those process groups and removes the
//! folder; `up` runs `down` first, so starting twice never leaves strays.

pub mod kaito;
pub mod simulate;
pub mod table;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use airunway_api::apply_body;
use airunway_api::v1alpha1::{InferenceProviderConfig, ModelDeployment};
use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, ListParams, ObjectMeta, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::control_plane::{ControlPlane, ControlPlaneOptions, client_from_kubeconfig};
use crate::process::{Lifetime, Spawn, is_alive, stop_process_group};
use crate::{manifests, paths};

/// Namespace the sandbox runs AI Runway's components as (Secrets, Leases, ServiceAccounts).
pub const SYSTEM_NAMESPACE: &str = "airunway-system";
/// Namespace the examples are applied to.
pub const EXAMPLES_NAMESPACE: &str = "default";
/// The provider shims the sandbox runs (each with its ServiceAccount and shipped RBAC).
pub const PROVIDERS: [&str; 5] = ["kaito", "dynamo", "kuberay", "llmd", "vllm"];

/// The sandbox's folder layout.
#[derive(Clone, Debug)]
pub struct State {
    /// The folder.
    pub root: PathBuf,
}

impl State {
    /// `dir`, or `<workspace>/.sandbox`.
    pub fn new(dir: Option<PathBuf>) -> State {
        State {
            root: dir.unwrap_or_else(|| paths::workspace_root().join(".sandbox")),
        }
    }

    fn processes_file(&self) -> PathBuf {
        self.root.join("processes")
    }

    /// Logs of every process.
    pub fn logs(&self) -> PathBuf {
        self.root.join("logs")
    }

    /// The admin kubeconfig.
    pub fn kubeconfig(&self) -> PathBuf {
        self.root.join("control-plane").join("admin.kubeconfig")
    }

    fn record(&self, name: &str, pid: u32) -> Result<()> {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.processes_file())?;
        writeln!(file, "{name} {pid}")?;
        Ok(())
    }

    /// `(name, process-group id)` of everything started.
    pub fn processes(&self) -> Vec<(String, i32)> {
        std::fs::read_to_string(self.processes_file())
            .unwrap_or_default()
            .lines()
            .filter_map(|line| {
                let (name, pid) = line.split_once(' ')?;
                Some((name.to_string(), pid.trim().parse().ok()?))
            })
            .collect()
    }
}

/// Options of `up`.
#[derive(Clone, Debug)]
pub struct UpOptions {
    /// Play the upstream operators (`--simulate-upstream`).
    pub simulate_upstream: bool,
    /// Skip building (the binaries and the control plane are already built).
    pub no_build: bool,
    /// Give up waiting for the table to settle after this long.
    pub timeout: Duration,
    /// Folder of example ModelDeployments to apply.
    pub examples: PathBuf,
}

/// Stops everything a sandbox in `state` started and removes its folder.
pub fn down(state: &State) -> Result<()> {
    let processes = state.processes();
    // Components first, the control plane last (so controllers shut down cleanly).
    for (name, pgid) in processes.iter().rev() {
        if is_alive(*pgid) {
            println!("stopping {name} (pid {pgid})");
            stop_process_group(*pgid, Duration::from_secs(10));
        }
    }
    let left: Vec<&(String, i32)> = processes.iter().filter(|(_, p)| is_alive(*p)).collect();
    if !left.is_empty() {
        bail!("processes still running after stop: {left:?}");
    }
    if state.root.exists() {
        std::fs::remove_dir_all(&state.root)
            .with_context(|| format!("removing {}", state.root.display()))?;
    }
    Ok(())
}

fn run_checked(command: &mut std::process::Command, what: &str) -> Result<String> {
    let output = command
        .output()
        .with_context(|| format!("running {what}"))?;
    if !output.status.success() {
        bail!(
            "{what} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

fn build() -> Result<()> {
    let root = paths::workspace_root();
    println!(
        "building the test control plane (cached under $HOME/.cache after the first time) ..."
    );
    let bin = run_checked(
        std::process::Command::new(root.join("e2e/control-plane/build.sh")).current_dir(&root),
        "e2e/control-plane/build.sh",
    )?;
    println!("  {bin}");
    println!("building airunway-core and the providers ...");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    // The same build as `e2e/sandbox` and `e2e/run-tests` (so it is a no-op after them). Run
    // through `cargo run -p airunway-e2e` it rebuilds this executable with the workspace's
    // features, which is why the simulator's path is resolved before the build.
    let status = std::process::Command::new(cargo)
        .args(["build", "--workspace", "--bins", "--locked"])
        .current_dir(&root)
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("cargo build failed");
    }
    Ok(())
}

/// A free port for a process started later (see [`crate::binaries::free_port`]).
fn free_port() -> Result<u16> {
    Ok(crate::binaries::free_port())
}

/// Starts the played Dynamo conversion webhook detached (`airunway-sandbox dynamo-conversion`)
/// and points the DynamoGraphDeployment CRD at it.
async fn start_dynamo_conversion(
    state: &State,
    cp: &ControlPlane,
    sandbox_exe: &Path,
    client: &Client,
) -> Result<()> {
    let dir = state.root.join("dynamo-conversion");
    std::fs::create_dir_all(&dir)?;
    let cert = cp.serving_cert("dynamo-operator-webhook")?;
    std::fs::write(dir.join("tls.crt"), &cert.cert_pem)?;
    std::fs::write(dir.join("tls.key"), &cert.key_pem)?;
    let port = free_port()?;
    let handle = Spawn {
        name: "dynamo-conversion".into(),
        program: sandbox_exe.to_path_buf(),
        args: vec![
            "dynamo-conversion".into(),
            format!("--dir={}", dir.display()),
            format!("--port={port}"),
        ],
        env: Default::default(),
        log: state.logs().join("dynamo-conversion.log"),
        lifetime: Lifetime::Detached,
    }
    .start()?;
    state.record("dynamo-conversion", handle.pid())?;
    wait_until(
        "the played Dynamo conversion webhook to listen",
        Duration::from_secs(30),
        || async {
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
        },
    )
    .await?;
    let url = format!(
        "https://127.0.0.1:{port}{}",
        crate::dynamo_conversion::server::PATH
    );
    crate::dynamo_conversion::server::register_at(client, &url, cp.ca_pem().as_bytes()).await
}

/// Serves the played Dynamo conversion webhook until the process is stopped (`down`).
pub async fn serve_dynamo_conversion(dir: &Path, port: u16) -> Result<()> {
    let cert = crate::pki::CertAndKey {
        cert_pem: std::fs::read_to_string(dir.join("tls.crt"))?,
        key_pem: std::fs::read_to_string(dir.join("tls.key"))?,
    };
    let listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
    crate::dynamo_conversion::server::serve(cert, listener, axum_server::Handle::new(), || {}).await
}

/// Starts one of our binaries detached, logging into the sandbox folder.
fn start_detached(
    state: &State,
    name: &str,
    binary: &str,
    kubeconfig: &Path,
    args: Vec<String>,
) -> Result<()> {
    let handle = Spawn {
        name: name.to_string(),
        program: paths::our_binary(binary)?,
        args,
        env: [
            ("KUBECONFIG".to_string(), kubeconfig.display().to_string()),
            ("RUST_LOG".to_string(), "info".to_string()),
            ("POD_NAMESPACE".to_string(), SYSTEM_NAMESPACE.to_string()),
            ("POD_NAME".to_string(), name.to_string()),
        ]
        .into_iter()
        .collect(),
        log: state.logs().join(format!("{name}.log")),
        lifetime: Lifetime::Detached,
    }
    .start()?;
    state.record(name, handle.pid())
}

async fn apply_file(client: &Client, path: &Path, transform: impl Fn(&mut Value)) -> Result<()> {
    let mut objects = manifests::read(path);
    for object in &mut objects {
        transform(object);
    }
    manifests::apply(client, &objects).await;
    Ok(())
}

async fn wait_until<F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !check().await {
        if Instant::now() > deadline {
            bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    Ok(())
}

/// Brings the sandbox up and prints the table until the examples settle.
pub async fn up(state: &State, options: &UpOptions) -> Result<()> {
    if !state.processes().is_empty() || state.root.exists() {
        println!("stopping the previous sandbox first");
        down(state)?;
    }
    // Resolved before the build, so the simulator is started from a path that exists.
    let sandbox_exe = std::env::current_exe().context("locating the sandbox executable")?;
    if !options.no_build {
        build()?;
    }
    std::fs::create_dir_all(state.logs())?;
    let started = Instant::now();
    println!(
        "starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK with {} simulated nodes ...",
        crate::control_plane::workloads::simulated_nodes().len()
    );
    let options_cp = ControlPlaneOptions {
        lifetime: Lifetime::Detached,
        dir: Some(state.root.join("control-plane")),
    };
    let cp = tokio::task::spawn_blocking(move || ControlPlane::start(options_cp)).await??;
    for process in cp.processes() {
        state.record(process.name(), process.pid())?;
    }
    let client = cp.client().await?;
    // Dynamo's conversion webhook, played: the harness's one ends with this command.
    start_dynamo_conversion(state, &cp, &sandbox_exe, &client).await?;

    // Components run as their ServiceAccounts with the shipped RBAC.
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(SYSTEM_NAMESPACE.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    namespaces
        .create(&PostParams::default(), &namespace)
        .await?;
    let root = paths::workspace_root();
    let mut identities = Vec::new();
    for (rbac, account) in [
        ("deploy/core/rbac.yaml", "airunway-core"),
        (
            "deploy/providers/kaito/rbac.yaml",
            "airunway-provider-kaito",
        ),
        (
            "deploy/providers/dynamo/rbac.yaml",
            "airunway-provider-dynamo",
        ),
        (
            "deploy/providers/kuberay/rbac.yaml",
            "airunway-provider-kuberay",
        ),
        ("deploy/providers/llmd/rbac.yaml", "airunway-provider-llmd"),
        ("deploy/providers/vllm/rbac.yaml", "airunway-provider-vllm"),
    ] {
        apply_file(&client, &root.join(rbac), |_| {}).await?;
        let user = format!("system:serviceaccount:{SYSTEM_NAMESPACE}:{account}");
        identities.push(cp.kubeconfig_for(&user, &["system:serviceaccounts"])?);
    }

    let webhook_port = free_port()?;
    println!(
        "starting airunway-core (webhooks on https://127.0.0.1:{webhook_port}) and the KAITO, Dynamo, KubeRay, llm-d and vLLM providers ..."
    );
    start_detached(
        state,
        "airunway-core",
        "airunway-core",
        &identities[0],
        vec![
            format!("--webhook-bind-address=127.0.0.1:{webhook_port}"),
            "--webhook-extra-san=127.0.0.1".to_string(),
            format!("--metrics-bind-address=127.0.0.1:{}", free_port()?),
            format!("--health-probe-bind-address=127.0.0.1:{}", free_port()?),
            "--provider-probe-interval=2s".to_string(),
        ],
    )?;
    for (index, provider) in PROVIDERS.iter().enumerate() {
        start_detached(
            state,
            &format!("airunway-provider-{provider}"),
            &format!("airunway-provider-{provider}"),
            &identities[index + 1],
            vec![
                format!("--probe-bind-address=127.0.0.1:{}", free_port()?),
                format!("--metrics-bind-address=127.0.0.1:{}", free_port()?),
                format!("--health-probe-bind-address=127.0.0.1:{}", free_port()?),
                "--heartbeat-interval=5s".to_string(),
                "--status-sync-interval=3s".to_string(),
            ],
        )?;
    }
    // The shipped webhook configurations, reaching the local core by URL.
    apply_file(&client, &root.join("deploy/core/webhooks.yaml"), |object| {
        for webhook in object["webhooks"].as_array_mut().into_iter().flatten() {
            let path = webhook["clientConfig"]["service"]["path"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            webhook["clientConfig"] =
                json!({"url": format!("https://127.0.0.1:{webhook_port}{path}")});
        }
    })
    .await?;
    if options.simulate_upstream {
        // The KAITO provider is ready only while a KAITO controller runs: the simulator's
        // stand-in (its Pod runs on a simulated node; the simulator does KAITO's work).
        kaito::install_controller_stand_in(&client).await?;
    } else {
        println!(
            "starting the KubeRay operator v{} (built from its Go module) ...",
            paths::pinned_version("KUBERAY_VERSION")?
        );
        let kubeconfig = state.kubeconfig();
        let log = state.logs().join("kuberay-operator.log");
        let operator = tokio::task::spawn_blocking(move || {
            crate::control_plane::operators::start_kuberay_operator(
                &kubeconfig,
                &log,
                Lifetime::Detached,
                None,
            )
        })
        .await??;
        state.record("kuberay-operator", operator.process.pid())?;
    }
    // Without a KAITO controller the KAITO provider registers but is not ready (as in a cluster
    // without KAITO), so only the others are waited for then.
    let must_be_ready: Vec<&str> = PROVIDERS
        .iter()
        .copied()
        .filter(|p| options.simulate_upstream || *p != "kaito")
        .collect();
    let ipcs: Api<InferenceProviderConfig> = Api::all(client.clone());
    wait_until(
        "the providers to register and report ready",
        Duration::from_secs(90),
        || async {
            let Ok(list) = ipcs.list(&ListParams::default()).await else {
                return false;
            };
            PROVIDERS.iter().all(|name| {
                list.items.iter().any(|i| {
                    i.metadata.name.as_deref() == Some(name)
                        && (!must_be_ready.contains(name)
                            || i.status.as_ref().and_then(|s| s.ready) == Some(true))
                })
            })
        },
    )
    .await?;
    let mds: Api<ModelDeployment> = Api::namespaced(client.clone(), EXAMPLES_NAMESPACE);
    wait_until("the admission webhooks to answer", Duration::from_secs(60), || async {
        let probe: Result<ModelDeployment, _> = serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "webhook-probe"}, "spec": {"model": {"id": "a/b"}, "provider": {"overrides": {"hostPID": true}}}}));
        let Ok(probe) = probe else { return false };
        matches!(mds.create(&PostParams { dry_run: true, ..Default::default() }, &probe).await, Err(e) if e.to_string().contains("admission webhook"))
    })
    .await?;
    if options.simulate_upstream {
        let handle = Spawn {
            name: "simulate-upstream".into(),
            program: sandbox_exe,
            args: vec![
                "simulate".into(),
                format!("--kubeconfig={}", state.kubeconfig().display()),
            ],
            env: Default::default(),
            log: state.logs().join("simulate-upstream.log"),
            lifetime: Lifetime::Detached,
        }
        .start()?;
        state.record("simulate-upstream", handle.pid())?;
    }
    println!("ready in {:.0}s\n", started.elapsed().as_secs_f64());
    println!("{}", what_is_real(options.simulate_upstream));

    // Apply the examples (sorted for a stable order); invalid ones show the webhook's message.
    let mut files: Vec<PathBuf> = std::fs::read_dir(&options.examples)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut expected = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file)?;
        let object: Value = serde_saphyr::from_str(&text)?;
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let shown = file
            .strip_prefix(&root)
            .unwrap_or(file)
            .display()
            .to_string();
        match mds
            .patch(
                &name,
                &PatchParams::apply("airunway-sandbox"),
                &apply_body::apply(&object),
            )
            .await
        {
            Ok(_) => {
                println!("applied  {shown} -> modeldeployment/{name}");
                expected.push(name);
            }
            Err(kube::Error::Api(status)) => println!("REJECTED {shown}: {}", status.message),
            Err(e) => println!("REJECTED {shown}: {e}"),
        }
    }
    if !options.simulate_upstream {
        println!(
            "\nNo KAITO or Dynamo operator runs here (their Go modules are not served), and the real KubeRay operator stops where it needs a Ray dashboard: their deployments stop at Deploying (KAITO's at Pending: its provider is not ready without a KAITO controller). The llm-d and vLLM examples reach Running: Kubernetes is their operator."
        );
        println!(
            "Run with --simulate-upstream to play the operators with their real status and see deployments reach Running."
        );
    }

    // The table, reprinted whenever it changes, until everything settled.
    let deadline = Instant::now() + options.timeout;
    let mut last = String::new();
    let settled = loop {
        let list = mds.list(&ListParams::default()).await?.items;
        let rows: Vec<table::Row> = list.iter().map(table::row).collect();
        let rendered = table::render(&rows);
        if rendered != last {
            println!("\n{rendered}");
            last = rendered;
        }
        // Without simulation the real KubeRay operator's work is part of the final state: its
        // RayCluster for each RayService, ready (it can be slow on a loaded machine).
        if table::settled(&list, &expected, options.simulate_upstream)
            && (options.simulate_upstream || kuberay_clusters_ready(&client).await)
        {
            break true;
        }
        if Instant::now() > deadline {
            break false;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    if !options.simulate_upstream {
        print!("{}", kuberay_summary(&client).await);
    }
    let kubeconfig = state.kubeconfig();
    println!(
        "\n{}\n\nThe sandbox keeps running.\n  kubeconfig:   export KUBECONFIG={}\n  look:         kubectl get modeldeployments,inferenceproviderconfigs -A\n  your own:     kubectl apply -f my-modeldeployment.yaml   (see examples/)\n  logs:         {}\n  stop:         e2e/sandbox down",
        if settled {
            "SETTLED: every example reached its final state."
        } else {
            "NOT SETTLED before the timeout (see the logs)."
        },
        kubeconfig.display(),
        state.logs().display(),
    );
    if !settled {
        bail!("the examples did not settle within {:?}", options.timeout);
    }
    Ok(())
}

/// Which parts of the sandbox are real and which are simulated.
pub fn what_is_real(simulate_upstream: bool) -> String {
    let mut lines = vec![
        "REAL       etcd, kube-apiserver, kube-controller-manager, kube-scheduler (Kubernetes Go modules), airunway-core and the KAITO, Dynamo, KubeRay, llm-d and vLLM providers".to_string(),
        "REAL       llm-d and direct vLLM upstream: the deployment and replicaset controllers run their vLLM Deployments; the Pods run on the simulated GPU nodes and the deployments reach Running from the real Deployment conditions".to_string(),
        "SIMULATED  nodes and kubelets: KWOK (sigs.k8s.io/kwok) keeps 2 CPU and 2 GPU nodes Ready and reports Pods bound to them Running/Ready; no container runs".to_string(),
    ];
    if simulate_upstream {
        lines.push("SIMULATED  KAITO controller: e2e's simulator creates the Deployment/StatefulSet KAITO would (its Pods run on the simulated nodes) and writes the Workspace status from their readiness".into());
        lines.push("SIMULATED  Dynamo and KubeRay operators: the status they write (e2e/fixtures/status-samples), not ready then ready".into());
    } else {
        lines.push("REAL       KubeRay operator (github.com/ray-project/kuberay/ray-operator): RayService -> RayCluster -> Ray Pods on the simulated nodes; stops at the Ray dashboard (no Ray runs in a KWOK Pod)".into());
        lines.push("ABSENT     KAITO and Dynamo operators (their Go modules are not served here; --simulate-upstream plays them)".into());
    }
    lines.join("\n")
}

/// The `ray.io/v1` kind `kind` (plural `plural`) in the examples namespace.
fn ray_api(client: &Client, kind: &str, plural: &str) -> Api<kube::api::DynamicObject> {
    let resource = kube::api::ApiResource {
        group: "ray.io".into(),
        version: "v1".into(),
        api_version: "ray.io/v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    };
    Api::namespaced_with(client.clone(), EXAMPLES_NAMESPACE, &resource)
}

/// Whether the real KubeRay operator made a RayCluster for every RayService in the examples
/// namespace and all of them are ready.
async fn kuberay_clusters_ready(client: &Client) -> bool {
    let params = ListParams::default();
    let (Ok(services), Ok(clusters)) = (
        ray_api(client, "RayService", "rayservices")
            .list(&params)
            .await,
        ray_api(client, "RayCluster", "rayclusters")
            .list(&params)
            .await,
    ) else {
        return false;
    };
    clusters.items.len() >= services.items.len()
        && clusters
            .items
            .iter()
            .all(|c| c.data["status"]["state"].as_str() == Some("ready"))
}

/// What the real KubeRay operator made of the RayServices in the examples namespace.
async fn kuberay_summary(client: &Client) -> String {
    use k8s_openapi::api::core::v1::Pod;
    let pods: Api<Pod> = Api::namespaced(client.clone(), EXAMPLES_NAMESPACE);
    let mut out = String::from("\nThe real KubeRay operator:\n");
    let Ok(list) = ray_api(client, "RayCluster", "rayclusters")
        .list(&ListParams::default())
        .await
    else {
        return out + "  (RayClusters could not be listed)\n";
    };
    if list.items.is_empty() {
        out.push_str("  no RayCluster yet\n");
    }
    for cluster in list.items {
        let name = cluster.metadata.name.clone().unwrap_or_default();
        let running = pods
            .list(&ListParams::default().labels(&format!("ray.io/cluster={name}")))
            .await
            .map(|l| {
                l.items
                    .iter()
                    .filter(|p| {
                        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
                    })
                    .count()
            })
            .unwrap_or(0);
        let state = cluster.data["status"]["state"].as_str().unwrap_or("(none)");
        out.push_str(&format!(
            "  RayCluster {name}: state {state}, {running} Ray Pods Running on simulated nodes; the Serve application is never deployed (no Ray dashboard)\n"
        ));
    }
    out
}

/// Runs the upstream simulation against the sandbox until stopped.
pub async fn simulate(kubeconfig: &Path) -> Result<()> {
    let client = client_from_kubeconfig(kubeconfig).await?;
    simulate::run(client, Duration::from_secs(3)).await
}
