//! A real control plane on free ports in a temporary directory: etcd, kube-apiserver (secure
//! serving on 127.0.0.1, admin client certificate, service-account keys),
//! kube-controller-manager with the workload controllers ([`KCM_CONTROLLERS`]), kube-scheduler,
//! and KWOK with simulated CPU and GPU nodes ([`workloads`]), so Pods are scheduled and become
//! Running and Ready, Deployments become Available and Endpoints/EndpointSlices fill.
//!
//! Start order: etcd → kube-apiserver (wait for `/readyz` and the `default` namespace) → start
//! kube-scheduler and KWOK → install our CRDs and every upstream CRD and wait until they are
//! Established → start kube-controller-manager (so its garbage collector discovers the CRDs at
//! start, not 30 s later) → create the simulated nodes and wait until they are Ready → prove
//! garbage collection works with an owner/dependent pair.

pub mod operators;
pub mod workloads;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use airunway_api::apply_body;
use anyhow::{Context, Result, anyhow, bail};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, ObjectMeta, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::dynamo_conversion::{self, server::PlayedConversionWebhook};
use crate::paths;
use crate::pki::{self, CertAndKey, TestCa};
use crate::process::{self, Lifetime, ProcessHandle, Spawn};

/// The API server's audit policy: every request at `Metadata` level (who, verb, resource,
/// object, response code; no bodies), recorded once it completes (and when a watch starts).
pub const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
";

/// The API server's audit log of a control plane in `dir` (JSON lines, see [`AUDIT_POLICY`]).
pub fn audit_log_path(dir: &Path) -> PathBuf {
    dir.join("logs").join("kube-apiserver-audit.log")
}

/// The kube-controller-manager controllers the harness runs: what Deployments, ReplicaSets,
/// StatefulSets, Jobs (the model cache's downloads), Services (Endpoints, EndpointSlices),
/// ServiceAccounts, garbage collection, namespace deletion, HorizontalPodAutoscalers (the
/// autoscaling suite: KEDA's HPAs and the core's) and ResourceQuotas (their usage, which the
/// quota admission needs: the `status_truth` suite's quota) need. Nodes are KWOK's (no node
/// lifecycle, IPAM or taint controllers).
pub const KCM_CONTROLLERS: [&str; 12] = [
    "garbage-collector-controller",
    "namespace-controller",
    "deployment-controller",
    "replicaset-controller",
    "statefulset-controller",
    "job-controller",
    "endpoints-controller",
    "endpointslice-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "horizontal-pod-autoscaler-controller",
    "resourcequota-controller",
];

/// How often the HPA controller evaluates every HorizontalPodAutoscaler (15 s in a cluster):
/// short, so an autoscaling test sees a metric change acted on within seconds.
pub const HPA_SYNC_PERIOD: &str = "1s";

/// How long the HPA controller keeps the highest recommendation before scaling down (5 min in a
/// cluster, for an HPA without `behavior`): short for the tests.
pub const HPA_DOWNSCALE_STABILIZATION: &str = "3s";

/// The front-proxy client's user name: kube-apiserver proxies requests to aggregated API
/// servers (KEDA's external metrics server) with a client certificate of this name, signed by
/// the front-proxy CA, carrying the requesting user in the `X-Remote-*` headers.
pub const FRONT_PROXY_CLIENT: &str = "front-proxy-client";

/// Field manager the harness uses to install CRDs.
pub const HARNESS_FIELD_MANAGER: &str = "airunway-e2e";

/// How to start a control plane.
#[derive(Clone, Debug)]
pub struct ControlPlaneOptions {
    /// Tied to the test process, or detached (sandbox).
    pub lifetime: Lifetime,
    /// Directory for certificates, data and logs; a fresh temporary directory when `None`.
    pub dir: Option<PathBuf>,
}

impl Default for ControlPlaneOptions {
    fn default() -> Self {
        ControlPlaneOptions {
            lifetime: Lifetime::WithTestProcess,
            dir: None,
        }
    }
}

/// How long each start step took.
#[derive(Clone, Debug, Default)]
pub struct StartTimings {
    /// etcd accepting connections.
    pub etcd: Duration,
    /// kube-apiserver `/readyz` and the `default` namespace.
    pub apiserver: Duration,
    /// CRDs applied and Established.
    pub crds: Duration,
    /// kube-controller-manager started and garbage collection proven.
    pub controller_manager: Duration,
    /// Simulated nodes created and reported Ready by KWOK (kube-scheduler and KWOK start with
    /// the CRD installation).
    pub nodes: Duration,
    /// Everything.
    pub total: Duration,
}

/// A running control plane.
pub struct ControlPlane {
    /// Its directory (certificates, etcd data, logs, kubeconfig).
    pub dir: PathBuf,
    /// Admin kubeconfig (`system:masters`).
    pub kubeconfig: PathBuf,
    /// `https://127.0.0.1:<port>`.
    pub server: String,
    /// How long the start took.
    pub timings: StartTimings,
    /// Names of the CRDs installed at start.
    pub installed_crds: Vec<String>,
    /// The played Dynamo conversion webhook the DynamoGraphDeployment CRD points at.
    pub dynamo_conversion: PlayedConversionWebhook,
    ca: TestCa,
    processes: Vec<ProcessHandle>,
    /// How kube-apiserver was started (to restart it the same way).
    apiserver_spawn: Spawn,
    /// The kube-apiserver processes started by [`ControlPlane::restart_apiserver`].
    apiserver_restarts: std::sync::Mutex<Vec<ProcessHandle>>,
}

/// What a [`ControlPlane::restart_apiserver`] took.
#[derive(Clone, Copy, Debug)]
pub struct ApiServerRestart {
    /// When the old process was killed.
    pub killed_at: Instant,
    /// From the kill until the new process answered `/readyz` and read the `default` namespace.
    pub down: Duration,
}

impl std::fmt::Debug for ControlPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlPlane")
            .field("dir", &self.dir)
            .field("server", &self.server)
            .finish()
    }
}

static SHARED: OnceLock<std::result::Result<ControlPlane, String>> = OnceLock::new();

impl ControlPlane {
    /// The control plane of this test binary, started on first use. Panics with the reason (and
    /// the component log tails) when it cannot start.
    pub fn shared() -> &'static ControlPlane {
        let result = SHARED.get_or_init(|| {
            // Started on its own thread: the caller is usually inside a tokio test runtime.
            std::thread::spawn(|| ControlPlane::start(ControlPlaneOptions::default()))
                .join()
                .map_err(|_| "control plane start panicked".to_string())
                .and_then(|r| r.map_err(|e| format!("{e:#}")))
        });
        match result {
            Ok(cp) => cp,
            Err(e) => panic!("the test control plane did not start: {e}"),
        }
    }

    /// Starts a control plane (blocking). Retries with new ports when one was taken.
    pub fn start(options: ControlPlaneOptions) -> Result<ControlPlane> {
        let bin = paths::control_plane_bin_dir()?;
        let mut last_error = None;
        for _attempt in 0..3 {
            match start_once(&bin, &options) {
                Ok(cp) => return Ok(cp),
                Err(e) if format!("{e:#}").contains("address already in use") => {
                    last_error = Some(e)
                }
                Err(e) => return Err(e),
            }
        }
        Err(last_error.unwrap_or_else(|| anyhow!("control plane did not start")))
    }

    /// A new client for the admin user. Create one per test: a client is bound to the tokio
    /// runtime it was made on.
    pub async fn client(&self) -> Result<Client> {
        client_from_kubeconfig(&self.kubeconfig).await
    }

    /// The component processes (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
    /// kwok).
    pub fn processes(&self) -> &[ProcessHandle] {
        &self.processes
    }

    /// `kill -9` the running kube-apiserver, wait `pause`, and start it again with the same
    /// flags, ports, certificates and etcd (its log goes to `kube-apiserver-restart-<n>.log`;
    /// the audit log continues in the same file). Returns once it is ready again.
    pub async fn restart_apiserver(&self, pause: Duration) -> Result<ApiServerRestart> {
        let n = {
            let restarts = self
                .apiserver_restarts
                .lock()
                .map_err(|_| anyhow!("restart lock poisoned"))?;
            match restarts.last() {
                Some(current) => {
                    current.kill();
                }
                None => {
                    self.processes
                        .iter()
                        .find(|p| p.name() == "kube-apiserver")
                        .ok_or_else(|| anyhow!("no kube-apiserver process"))?
                        .kill();
                }
            }
            restarts.len() + 1
        };
        let killed_at = Instant::now();
        tokio::time::sleep(pause).await;
        let mut spawn = self.apiserver_spawn.clone();
        spawn.log = self
            .dir
            .join("logs")
            .join(format!("kube-apiserver-restart-{n}.log"));
        let handle = spawn.start()?;
        let ready = wait_for_apiserver(&self.kubeconfig, &handle, Duration::from_secs(120)).await;
        self.apiserver_restarts
            .lock()
            .map_err(|_| anyhow!("restart lock poisoned"))?
            .push(handle);
        ready?;
        Ok(ApiServerRestart {
            killed_at,
            down: killed_at.elapsed(),
        })
    }

    /// How many times [`ControlPlane::restart_apiserver`] restarted kube-apiserver.
    pub fn apiserver_restarts(&self) -> usize {
        self.apiserver_restarts.lock().map(|r| r.len()).unwrap_or(0)
    }

    /// The tails of the component logs, for failure reports.
    pub fn log_tails(&self, lines: usize) -> String {
        let restarts = self.apiserver_restarts.lock();
        self.processes
            .iter()
            .chain(restarts.iter().flat_map(|r| r.iter()))
            .map(|p| {
                format!(
                    "----- {} ({}) -----\n{}",
                    p.name(),
                    p.log().display(),
                    p.log_tail(lines)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The PEM of the CA that signs the API server, client and webhook certificates.
    pub fn ca_pem(&self) -> &str {
        &self.ca.cert_pem
    }

    /// A serving certificate for 127.0.0.1 signed by the test CA (for test webhooks).
    pub fn serving_cert(&self, common_name: &str) -> Result<CertAndKey> {
        self.ca.serving_cert(common_name)
    }

    /// A certificate signed by the test CA for a host process reached both as a Service name
    /// and an address (server and client authentication; see [`TestCa::peer_cert`]).
    pub fn peer_cert(
        &self,
        common_name: &str,
        dns_names: &[&str],
        ips: &[std::net::IpAddr],
    ) -> Result<CertAndKey> {
        self.ca.peer_cert(common_name, dns_names, ips)
    }

    /// Writes a kubeconfig for `user` in `groups` (client certificate signed by the test CA)
    /// into the control plane directory and returns its path. Used to run a binary with exactly
    /// the permissions RBAC grants its ServiceAccount.
    pub fn kubeconfig_for(&self, user: &str, groups: &[&str]) -> Result<PathBuf> {
        write_kubeconfig_for(&self.ca, &self.dir, &self.server, user, groups)
    }
}

fn write_kubeconfig_for(
    ca: &TestCa,
    dir: &Path,
    server: &str,
    user: &str,
    groups: &[&str],
) -> Result<PathBuf> {
    let cert = ca.client_cert(user, groups)?;
    let slug: String = user
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let cert_path = dir.join(format!("{slug}.crt"));
    let key_path = dir.join(format!("{slug}.key"));
    std::fs::write(&cert_path, &cert.cert_pem)?;
    std::fs::write(&key_path, &cert.key_pem)?;
    let path = dir.join(format!("{slug}.kubeconfig"));
    std::fs::write(
        &path,
        kubeconfig_yaml(server, &dir.join("ca.crt"), &cert_path, &key_path),
    )?;
    Ok(path)
}

/// A free port for a process started later (see [`crate::binaries::free_port`]).
fn free_port() -> Result<u16> {
    Ok(crate::binaries::free_port())
}

fn kubeconfig_yaml(server: &str, ca: &Path, cert: &Path, key: &Path) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: airunway-e2e\n  cluster:\n    server: {server}\n    certificate-authority: {}\nusers:\n- name: user\n  user:\n    client-certificate: {}\n    client-key: {}\ncontexts:\n- name: airunway-e2e\n  context:\n    cluster: airunway-e2e\n    user: user\ncurrent-context: airunway-e2e\n",
        ca.display(),
        cert.display(),
        key.display()
    )
}

/// A client from a kubeconfig file.
pub async fn client_from_kubeconfig(path: &Path) -> Result<Client> {
    let kubeconfig =
        Kubeconfig::read_from(path).with_context(|| format!("reading {}", path.display()))?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
}

fn new_dir(options: &ControlPlaneOptions) -> Result<PathBuf> {
    let dir = match &options.dir {
        Some(dir) => dir.clone(),
        None => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or_default();
            sweep_stale_dirs();
            std::env::temp_dir().join(format!("airunway-e2e-{}-{nanos}", std::process::id()))
        }
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    if options.lifetime == Lifetime::WithTestProcess {
        process::remove_at_exit(&dir);
    }
    Ok(dir)
}

/// Removes directories left by test processes that were killed before their exit hook ran.
fn sweep_stale_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(pid) = name
            .strip_prefix("airunway-e2e-")
            .and_then(|r| r.split('-').next())
        else {
            continue;
        };
        if let Ok(pid) = pid.parse::<i32>()
            && !process::is_alive(pid)
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn wait_for_tcp(port: u16, process: &ProcessHandle, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        if let Some(status) = process.exit_status() {
            bail!(
                "{} exited ({status}) before listening:\n{}",
                process.name(),
                process.log_tail(30)
            );
        }
        if Instant::now() > deadline {
            bail!(
                "{} not listening on {port} after {timeout:?}:\n{}",
                process.name(),
                process.log_tail(30)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn start_once(bin: &Path, options: &ControlPlaneOptions) -> Result<ControlPlane> {
    let started_at = Instant::now();
    let dir = new_dir(options)?;
    let logs = dir.join("logs");
    let mut timings = StartTimings::default();

    let ca = TestCa::new()?;
    std::fs::write(dir.join("ca.crt"), &ca.cert_pem)?;
    let serving = ca.serving_cert("kube-apiserver")?;
    std::fs::write(dir.join("apiserver.crt"), &serving.cert_pem)?;
    std::fs::write(dir.join("apiserver.key"), &serving.key_pem)?;
    let admin = ca.client_cert("admin", &["system:masters"])?;
    std::fs::write(dir.join("admin.crt"), &admin.cert_pem)?;
    std::fs::write(dir.join("admin.key"), &admin.key_pem)?;
    pki::write_service_account_keys(&dir)?;
    // The API aggregation layer: a CA of its own for the front proxy (an aggregated API server
    // trusts only this CA for the `X-Remote-*` headers, not every client certificate).
    let front_proxy_ca = TestCa::new()?;
    std::fs::write(dir.join("front-proxy-ca.crt"), &front_proxy_ca.cert_pem)?;
    let front_proxy_client = front_proxy_ca.client_cert(FRONT_PROXY_CLIENT, &[])?;
    std::fs::write(
        dir.join("front-proxy-client.crt"),
        &front_proxy_client.cert_pem,
    )?;
    std::fs::write(
        dir.join("front-proxy-client.key"),
        &front_proxy_client.key_pem,
    )?;

    let (etcd_port, etcd_peer_port, api_port) = (free_port()?, free_port()?, free_port()?);
    let server = format!("https://127.0.0.1:{api_port}");
    let kubeconfig = dir.join("admin.kubeconfig");
    std::fs::write(
        &kubeconfig,
        kubeconfig_yaml(
            &server,
            &dir.join("ca.crt"),
            &dir.join("admin.crt"),
            &dir.join("admin.key"),
        ),
    )?;
    let go_env = [("GOMAXPROCS".to_string(), "2".to_string())]
        .into_iter()
        .collect();

    // etcd
    let step = Instant::now();
    let etcd = Spawn {
        name: "etcd".into(),
        program: bin.join("etcd"),
        args: vec![
            "--name=default".into(),
            format!("--data-dir={}", dir.join("etcd").display()),
            format!("--listen-client-urls=http://127.0.0.1:{etcd_port}"),
            format!("--advertise-client-urls=http://127.0.0.1:{etcd_port}"),
            format!("--listen-peer-urls=http://127.0.0.1:{etcd_peer_port}"),
            format!("--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer_port}"),
            format!("--initial-cluster=default=http://127.0.0.1:{etcd_peer_port}"),
            "--unsafe-no-fsync=true".into(),
            "--log-level=warn".into(),
        ],
        env: go_env,
        log: logs.join("etcd.log"),
        lifetime: options.lifetime,
    }
    .start()?;
    wait_for_tcp(etcd_port, &etcd, Duration::from_secs(30))?;
    timings.etcd = step.elapsed();

    // kube-apiserver
    let step = Instant::now();
    let audit_policy = dir.join("audit-policy.yaml");
    std::fs::write(&audit_policy, AUDIT_POLICY)?;
    std::fs::create_dir_all(&logs)?;
    let apiserver_spawn = Spawn {
        name: "kube-apiserver".into(),
        program: bin.join("kube-apiserver"),
        args: vec![
            format!("--etcd-servers=http://127.0.0.1:{etcd_port}"),
            "--bind-address=127.0.0.1".into(),
            format!("--secure-port={api_port}"),
            "--advertise-address=127.0.0.1".into(),
            "--endpoint-reconciler-type=none".into(),
            format!("--cert-dir={}", dir.join("apiserver-certs").display()),
            format!("--tls-cert-file={}", dir.join("apiserver.crt").display()),
            format!(
                "--tls-private-key-file={}",
                dir.join("apiserver.key").display()
            ),
            format!("--client-ca-file={}", dir.join("ca.crt").display()),
            format!("--service-account-issuer={server}"),
            format!(
                "--service-account-key-file={}",
                dir.join("sa.pub").display()
            ),
            format!(
                "--service-account-signing-key-file={}",
                dir.join("sa.key").display()
            ),
            "--service-cluster-ip-range=10.0.0.0/24".into(),
            "--authorization-mode=RBAC".into(),
            // No ServiceAccount token mounts (no kubelet reads them), and no not-ready taint on
            // new nodes: KWOK marks them Ready, and no node lifecycle controller runs to lift
            // the taint.
            "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition".into(),
            "--allow-privileged=true".into(),
            "--profiling=false".into(),
            format!("--audit-policy-file={}", audit_policy.display()),
            format!("--audit-log-path={}", audit_log_path(&dir).display()),
            "--audit-log-format=json".into(),
            // One file, never rotated (lumberjack rotates at 100 MB when the size is 0).
            "--audit-log-maxsize=1000000".into(),
            "--audit-log-maxbackup=0".into(),
            // The aggregation layer (KEDA's external metrics API in the autoscaling suite):
            // requests proxied to an APIService's server carry the user in these headers and
            // this client certificate; the APIService's Service resolves to its endpoints (the
            // server runs as a host process behind a selector-less Service).
            format!(
                "--requestheader-client-ca-file={}",
                dir.join("front-proxy-ca.crt").display()
            ),
            format!("--requestheader-allowed-names={FRONT_PROXY_CLIENT}"),
            "--requestheader-username-headers=X-Remote-User".into(),
            "--requestheader-group-headers=X-Remote-Group".into(),
            "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
            format!(
                "--proxy-client-cert-file={}",
                dir.join("front-proxy-client.crt").display()
            ),
            format!(
                "--proxy-client-key-file={}",
                dir.join("front-proxy-client.key").display()
            ),
            "--enable-aggregator-routing=true".into(),
            "--v=0".into(),
        ],
        env: [("GOMAXPROCS".to_string(), "2".to_string())]
            .into_iter()
            .collect(),
        log: logs.join("kube-apiserver.log"),
        lifetime: options.lifetime,
    };
    let apiserver = apiserver_spawn.clone().start()?;

    // Dynamo's conversion webhook, played (docs/testing.md): `install_crds` points the DGD CRD
    // at it.
    let dynamo_conversion =
        PlayedConversionWebhook::start(ca.serving_cert("dynamo-operator-webhook")?, &ca.cert_pem)?;

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut processes = vec![etcd, apiserver];
    let result: Result<(Vec<String>, Vec<ProcessHandle>)> = runtime.block_on(async {
        wait_for_apiserver(&kubeconfig, &processes[1], Duration::from_secs(120)).await?;
        timings.apiserver = step.elapsed();

        let nodes_step = Instant::now();
        // Each component under a user of its own (full rights through `system:masters`), so
        // the audit log tells their requests apart.
        let component =
            |user: &str| write_kubeconfig_for(&ca, &dir, &server, user, &["system:masters"]);
        let scheduler_kubeconfig = component("system:kube-scheduler")?;
        let kcm_kubeconfig = component("system:kube-controller-manager")?;
        let kwok_kubeconfig = component("kwok")?;
        let scheduler =
            workloads::spawn_scheduler(bin, &scheduler_kubeconfig, &logs, options.lifetime)?;
        let kwok = workloads::spawn_kwok(&kwok_kubeconfig, &logs, options.lifetime)?;

        let step = Instant::now();
        let client = client_from_kubeconfig(&kubeconfig).await?;
        let installed = install_crds(&client, &crd_files()?).await?;
        timings.crds = step.elapsed();

        let step = Instant::now();
        let kcm = Spawn {
            name: "kube-controller-manager".into(),
            program: bin.join("kube-controller-manager"),
            args: vec![
                format!("--kubeconfig={}", kcm_kubeconfig.display()),
                format!("--controllers={}", KCM_CONTROLLERS.join(",")),
                format!(
                    "--service-account-private-key-file={}",
                    dir.join("sa.key").display()
                ),
                format!("--root-ca-file={}", dir.join("ca.crt").display()),
                "--leader-elect=false".into(),
                "--secure-port=0".into(),
                "--use-service-account-credentials=false".into(),
                "--kube-api-qps=100".into(),
                "--kube-api-burst=200".into(),
                format!("--horizontal-pod-autoscaler-sync-period={HPA_SYNC_PERIOD}"),
                format!(
                    "--horizontal-pod-autoscaler-downscale-stabilization={HPA_DOWNSCALE_STABILIZATION}"
                ),
                "--v=0".into(),
            ],
            env: [("GOMAXPROCS".to_string(), "2".to_string())]
                .into_iter()
                .collect(),
            log: logs.join("kube-controller-manager.log"),
            lifetime: options.lifetime,
        }
        .start()?;
        let nodes_created = workloads::create_nodes(&client, &kwok);
        let gc_proven = prove_garbage_collection(&client, &kcm);
        let (nodes, gc) = tokio::join!(nodes_created, gc_proven);
        nodes?;
        timings.nodes = nodes_step.elapsed();
        gc?;
        timings.controller_manager = step.elapsed();
        if let Some(status) = scheduler.exit_status() {
            bail!(
                "kube-scheduler exited ({status}):\n{}",
                scheduler.log_tail(40)
            );
        }
        Ok((installed, vec![kcm, scheduler, kwok]))
    });
    let (installed_crds, started) = match result {
        Ok(ok) => ok,
        Err(e) => {
            let tails: Vec<String> = processes
                .iter()
                .map(|p| format!("--- {} ---\n{}", p.name(), p.log_tail(20)))
                .collect();
            return Err(e.context(tails.join("\n")));
        }
    };
    processes.extend(started);
    timings.total = started_at.elapsed();
    eprintln!(
        "control plane ready in {:.1}s (etcd {:.1}s, kube-apiserver {:.1}s, {} CRDs {:.1}s, kube-controller-manager + GC probe {:.1}s, kube-scheduler + KWOK + {} nodes Ready {:.1}s) at {server}",
        timings.total.as_secs_f64(),
        timings.etcd.as_secs_f64(),
        timings.apiserver.as_secs_f64(),
        installed_crds.len(),
        timings.crds.as_secs_f64(),
        timings.controller_manager.as_secs_f64(),
        workloads::simulated_nodes().len(),
        timings.nodes.as_secs_f64(),
    );
    Ok(ControlPlane {
        dir,
        kubeconfig,
        server,
        timings,
        installed_crds,
        dynamo_conversion,
        ca,
        processes,
        apiserver_spawn,
        apiserver_restarts: std::sync::Mutex::new(Vec::new()),
    })
}

async fn wait_for_apiserver(
    kubeconfig: &Path,
    apiserver: &ProcessHandle,
    timeout: Duration,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    let client = client_from_kubeconfig(kubeconfig).await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut last;
    loop {
        if let Some(status) = apiserver.exit_status() {
            bail!(
                "kube-apiserver exited ({status}):\n{}",
                apiserver.log_tail(40)
            );
        }
        let request = http::Request::get("/readyz").body(Vec::new())?;
        match client.request_text(request).await {
            Ok(body) if body.trim() == "ok" => {
                if namespaces.get_opt("default").await?.is_some() {
                    return Ok(());
                }
                last = "waiting for the default namespace".into();
            }
            Ok(body) => last = body,
            Err(e) => last = e.to_string(),
        }
        if Instant::now() > deadline {
            bail!(
                "kube-apiserver not ready after {timeout:?}: {last}\n{}",
                apiserver.log_tail(40)
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every CRD file to install: `deploy/crds/*.yaml` and every `*.yaml` under the upstream CRD
/// directories ([`paths::upstream_crd_dirs`]) except status samples.
pub fn crd_files() -> Result<Vec<PathBuf>> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n == "status-samples") {
                    continue;
                }
                walk(&path, out)?;
            } else if path.extension().is_some_and(|e| e == "yaml") {
                out.push(path);
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    walk(&paths::our_crds_dir(), &mut files)?;
    for dir in paths::upstream_crd_dirs()? {
        walk(&dir, &mut files)?;
    }
    Ok(files)
}

/// Reads every CustomResourceDefinition in `path` (multi-document YAML).
pub fn read_crds(path: &Path) -> Result<Vec<CustomResourceDefinition>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text)
        .with_context(|| format!("parsing {}", path.display()))?;
    docs.into_iter()
        .filter(|d| d.get("kind").and_then(|k| k.as_str()) == Some("CustomResourceDefinition"))
        .map(|d| {
            serde_json::from_value(d)
                .with_context(|| format!("decoding a CRD in {}", path.display()))
        })
        .collect()
}

/// Installs the CRDs in `files` with server-side apply (several are too large for client-side
/// apply) and waits until each is Established. Returns their names. Dynamo's DGD CRD gets the
/// played conversion webhook ([`dynamo_conversion::server::installable`]).
pub async fn install_crds(client: &Client, files: &[PathBuf]) -> Result<Vec<String>> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply(HARNESS_FIELD_MANAGER).force();
    let mut names = Vec::new();
    for file in files {
        for crd in read_crds(file)? {
            let crd = dynamo_conversion::server::installable(crd);
            let name = crd.metadata.name.clone().context("CRD without a name")?;
            api.patch(&name, &params, &apply_body::apply(&crd))
                .await
                .with_context(|| format!("applying CRD {name} from {}", file.display()))?;
            names.push(name);
        }
    }
    for name in &names {
        wait_crd_established(client, name, Duration::from_secs(60)).await?;
    }
    Ok(names)
}

/// Waits until CRD `name` is Established.
pub async fn wait_crd_established(client: &Client, name: &str, timeout: Duration) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let deadline = Instant::now() + timeout;
    loop {
        let crd = api.get(name).await?;
        let established = crd
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
        if established {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "CRD {name} not Established after {timeout:?}: {:?}",
                crd.status
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Creates ConfigMap A, ConfigMap B owned by A, deletes A and waits until the garbage
/// collector deletes B.
async fn prove_garbage_collection(client: &Client, kcm: &ProcessHandle) -> Result<()> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let owner = api
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    generate_name: Some("gc-probe-owner-".into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await?;
    let owner_name = owner.metadata.name.clone().context("owner without name")?;
    let dependent = api
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    generate_name: Some("gc-probe-dependent-".into()),
                    owner_references: Some(vec![OwnerReference {
                        api_version: "v1".into(),
                        kind: "ConfigMap".into(),
                        name: owner_name.clone(),
                        uid: owner.metadata.uid.clone().context("owner without uid")?,
                        ..Default::default()
                    }]),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await?;
    let dependent_name = dependent.metadata.name.context("dependent without name")?;
    api.delete(&owner_name, &DeleteParams::default()).await?;
    let deadline = Instant::now() + Duration::from_secs(90);
    while api.get_opt(&dependent_name).await?.is_some() {
        if let Some(status) = kcm.exit_status() {
            bail!(
                "kube-controller-manager exited ({status}):\n{}",
                kcm.log_tail(40)
            );
        }
        if Instant::now() > deadline {
            bail!(
                "garbage collection did not delete {dependent_name}:\n{}",
                kcm.log_tail(40)
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}
