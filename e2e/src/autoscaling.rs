//! Autoscaling with real parts: KEDA's operator and its external metrics API server
//! (`github.com/kedacore/keda/v2`, built by `e2e/go/keda/build.sh`), Debian's Prometheus, and a
//! played model server whose `/metrics` (vLLM's metric names and labels) the test sets.
//!
//! The path a metric takes is the one of a cluster: Prometheus scrapes the played server (the
//! target carries the `namespace` and `pod` labels a Kubernetes service discovery gives it) →
//! KEDA's operator queries Prometheus (its `prometheus` scaler) → kube-controller-manager's HPA
//! controller reads the metric from `external.metrics.k8s.io` through the API aggregation
//! layer of kube-apiserver (front-proxy certificates, [`crate::control_plane`]) → KEDA's metrics
//! server (an APIService behind a selector-less Service whose EndpointSlice points at this
//! machine's non-loopback address: loopback endpoints are refused by validation) → KEDA's
//! operator over mutual TLS → the HPA (or KEDA itself, between zero and one) writes
//! `spec.scaling.replicas` through the ModelDeployment's scale subresource.
//!
//! One [`Autoscaling`] per test binary ([`Autoscaling::shared`]), started on first use beside
//! the shared control plane; its processes' logs are in the control plane's `logs/`.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use airunway_api::apply_body;
use anyhow::{Context, Result, anyhow, bail};
use axum::Router;
use axum::routing::get;
use base64::Engine;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PatchParams};
use serde_json::{Value, json};

use crate::control_plane::{ControlPlane, HARNESS_FIELD_MANAGER};
use crate::paths;
use crate::process::{Lifetime, ProcessHandle, Spawn};

/// The namespace KEDA's objects live in (its leader lease, its Service and EndpointSlice).
pub const KEDA_NAMESPACE: &str = "keda";

/// The Service the external metrics APIService points at (the name KEDA's manifests use).
pub const KEDA_METRICS_SERVICE: &str = "keda-metrics-apiserver";

/// The APIService KEDA's metrics server answers.
pub const EXTERNAL_METRICS_APISERVICE: &str = "v1beta1.external.metrics.k8s.io";

/// How often Prometheus scrapes the played model servers (and re-reads its target files).
pub const SCRAPE_INTERVAL: &str = "1s";

/// The metric names the played model server exports, as vLLM (V1 engine) names them.
pub mod vllm_metrics {
    /// Requests waiting in the scheduler queue (gauge).
    pub const NUM_REQUESTS_WAITING: &str = "vllm:num_requests_waiting";
    /// Requests in model execution batches (gauge).
    pub const NUM_REQUESTS_RUNNING: &str = "vllm:num_requests_running";
    /// KV-cache usage, 1 = 100 % (gauge; `vllm:gpu_cache_usage_perc` before vLLM 0.10).
    pub const KV_CACHE_USAGE_PERC: &str = "vllm:kv_cache_usage_perc";
}

/// How long the start of each part took.
#[derive(Clone, Debug, Default)]
pub struct AutoscalingTimings {
    /// KEDA's binaries found (or built).
    pub binaries: Duration,
    /// Prometheus answering `/-/ready`.
    pub prometheus: Duration,
    /// KEDA's operator answering `/readyz`.
    pub operator: Duration,
    /// The external metrics APIService `Available` (KEDA's metrics server started and reached
    /// through the aggregation layer).
    pub metrics_api: Duration,
    /// Everything.
    pub total: Duration,
}

/// KEDA and Prometheus running against a control plane.
pub struct Autoscaling {
    /// `http://127.0.0.1:<port>`: Prometheus's address (the `serverAddress` of a KEDA
    /// `prometheus` trigger, the core's `--autoscaling-prometheus-address`).
    pub prometheus_url: String,
    /// The address KEDA's metrics server listens on (this machine's non-loopback address).
    pub metrics_server: SocketAddr,
    /// How long the start took.
    pub timings: AutoscalingTimings,
    /// Prometheus's file service discovery directory: one `<name>.json` per played server.
    targets_dir: PathBuf,
    processes: Vec<ProcessHandle>,
}

impl std::fmt::Debug for Autoscaling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Autoscaling")
            .field("prometheus_url", &self.prometheus_url)
            .field("metrics_server", &self.metrics_server)
            .finish()
    }
}

static SHARED: OnceLock<std::result::Result<Autoscaling, String>> = OnceLock::new();

impl Autoscaling {
    /// KEDA and Prometheus of this test binary, started on first use against
    /// [`ControlPlane::shared`]. Panics with the reason (and the log tails) when they cannot
    /// start.
    pub fn shared() -> &'static Autoscaling {
        let result = SHARED.get_or_init(|| {
            let control_plane = ControlPlane::shared();
            // On its own thread with its own runtime: the caller is inside a test's runtime.
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                runtime.block_on(Autoscaling::start(control_plane, Lifetime::WithTestProcess))
            })
            .join()
            .map_err(|_| "the autoscaling start panicked".to_string())
            .and_then(|r| r.map_err(|e| format!("{e:#}")))
        });
        match result {
            Ok(autoscaling) => autoscaling,
            Err(e) => panic!("KEDA and Prometheus did not start: {e}"),
        }
    }

    /// Starts Prometheus, KEDA's operator and KEDA's metrics server against `control_plane`,
    /// registers the metrics server as the external metrics APIService, and waits until the
    /// APIService is `Available`.
    pub async fn start(control_plane: &ControlPlane, lifetime: Lifetime) -> Result<Autoscaling> {
        let started = Instant::now();
        let mut timings = AutoscalingTimings::default();
        let logs = control_plane.dir.join("logs");
        let dir = control_plane.dir.join("autoscaling");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;

        let step = Instant::now();
        let keda = keda_bin_dir()?;
        timings.binaries = step.elapsed();

        let step = Instant::now();
        let targets_dir = dir.join("targets");
        std::fs::create_dir_all(&targets_dir)?;
        let (prometheus, prometheus_url) =
            start_prometheus(&dir, &targets_dir, &logs, lifetime).await?;
        timings.prometheus = step.elapsed();
        let mut processes = vec![prometheus];

        let client = control_plane.client().await?;
        let result = async {
            let step = Instant::now();
            let host = host_address()?;
            apply(
                &client,
                &json!({"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": KEDA_NAMESPACE}}),
            )
            .await?;
            // One certificate for both ends of the operator ↔ metrics server gRPC (mutual TLS,
            // the layout of KEDA's `kedaorg-certs` Secret: ca.crt, tls.crt, tls.key) and for
            // the metrics server's serving endpoint, which kube-apiserver reaches as
            // `<service>.<namespace>.svc` at `host`.
            let certs = dir.join("keda-certs");
            std::fs::create_dir_all(&certs)?;
            let service_dns = format!("{KEDA_METRICS_SERVICE}.{KEDA_NAMESPACE}.svc");
            let operator_dns = format!("keda-operator.{KEDA_NAMESPACE}.svc");
            let cert = control_plane.peer_cert(
                "keda",
                &[service_dns.as_str(), operator_dns.as_str()],
                &[host],
            )?;
            std::fs::write(certs.join("ca.crt"), control_plane.ca_pem())?;
            std::fs::write(certs.join("tls.crt"), &cert.cert_pem)?;
            std::fs::write(certs.join("tls.key"), &cert.key_pem)?;
            // KEDA runs as a user of its own (full rights), so the audit log tells its
            // requests apart.
            let kubeconfig = control_plane.kubeconfig_for("keda", &["system:masters"])?;
            let keda_env = |pod: &str| -> BTreeMap<String, String> {
                [
                    ("KUBECONFIG", kubeconfig.display().to_string()),
                    ("WATCH_NAMESPACE", String::new()),
                    ("KEDA_CLUSTER_OBJECT_NAMESPACE", KEDA_NAMESPACE.to_string()),
                    ("POD_NAMESPACE", KEDA_NAMESPACE.to_string()),
                    ("POD_NAME", pod.to_string()),
                    ("GOMAXPROCS", "2".to_string()),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect()
            };

            let (metrics, health, grpc) = (free_port()?, free_port()?, free_port()?);
            let operator = Spawn {
                name: "keda-operator".into(),
                program: keda.join("keda-operator"),
                args: vec![
                    format!("--metrics-bind-address=127.0.0.1:{metrics}"),
                    format!("--health-probe-bind-address=127.0.0.1:{health}"),
                    format!("--metrics-service-bind-address=127.0.0.1:{grpc}"),
                    format!("--cert-dir={}", certs.display()),
                    format!("--ca-dir={}", certs.display()),
                    "--enable-cert-rotation=false".into(),
                    "--leader-elect=false".into(),
                    "--zap-encoder=console".into(),
                ],
                env: keda_env("keda-operator"),
                log: logs.join("keda-operator.log"),
                lifetime,
            }
            .start()?;
            wait_http_ok(
                &format!("http://127.0.0.1:{health}/readyz"),
                &operator,
                Duration::from_secs(60),
            )
            .await?;
            processes.push(operator);
            let operator_ready = step.elapsed();

            let step = Instant::now();
            let (secure, adapter_metrics) = (free_port()?, free_port()?);
            let metrics_server = SocketAddr::new(host, secure);
            let adapter = Spawn {
                name: "keda-adapter".into(),
                program: keda.join("keda-adapter"),
                args: vec![
                    format!("--bind-address={host}"),
                    format!("--secure-port={secure}"),
                    format!("--cert-dir={}", certs.display()),
                    format!("--tls-cert-file={}", certs.join("tls.crt").display()),
                    format!("--tls-private-key-file={}", certs.join("tls.key").display()),
                    format!("--lister-kubeconfig={}", kubeconfig.display()),
                    format!("--authentication-kubeconfig={}", kubeconfig.display()),
                    format!("--authorization-kubeconfig={}", kubeconfig.display()),
                    format!("--metrics-service-address=127.0.0.1:{grpc}"),
                    format!("--port={adapter_metrics}"),
                    "--zap-encoder=console".into(),
                ],
                env: keda_env("keda-metrics-apiserver"),
                log: logs.join("keda-adapter.log"),
                lifetime,
            }
            .start()?;
            processes.push(adapter);
            register_metrics_api(&client, control_plane.ca_pem(), metrics_server).await?;
            let adapter = processes.last().context("no adapter process")?;
            wait_apiservice_available(&client, adapter, Duration::from_secs(90)).await?;
            Ok::<_, anyhow::Error>((operator_ready, step.elapsed(), metrics_server))
        }
        .await;
        let (operator_ready, metrics_api, metrics_server) = match result {
            Ok(ok) => ok,
            Err(e) => {
                let tails: Vec<String> = processes
                    .iter()
                    .map(|p| format!("--- {} ---\n{}", p.name(), p.log_tail(30)))
                    .collect();
                return Err(e.context(tails.join("\n")));
            }
        };
        timings.operator = operator_ready;
        timings.metrics_api = metrics_api;
        timings.total = started.elapsed();
        eprintln!(
            "KEDA and Prometheus ready in {:.1}s (binaries {:.1}s, Prometheus {:.1}s, KEDA operator {:.1}s, external metrics API Available {:.1}s) at {prometheus_url}, metrics server {metrics_server}",
            timings.total.as_secs_f64(),
            timings.binaries.as_secs_f64(),
            timings.prometheus.as_secs_f64(),
            timings.operator.as_secs_f64(),
            timings.metrics_api.as_secs_f64(),
        );
        Ok(Autoscaling {
            prometheus_url,
            metrics_server,
            timings,
            targets_dir,
            processes,
        })
    }

    /// The processes (prometheus, keda-operator, keda-adapter).
    pub fn processes(&self) -> &[ProcessHandle] {
        &self.processes
    }

    /// The tails of their logs, for failure reports.
    pub fn log_tails(&self, lines: usize) -> String {
        self.processes
            .iter()
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

    /// Runs an instant PromQL query made of a metric name (no characters a URL query must
    /// escape) and returns each series' labels and value.
    pub async fn series(&self, metric: &str) -> Result<Vec<(BTreeMap<String, String>, f64)>> {
        let (code, body) = crate::http::get(&format!(
            "{}/api/v1/query?query={metric}",
            self.prometheus_url
        ))
        .await?;
        if code != 200 {
            bail!("Prometheus answered {code} to the query {metric}: {body}");
        }
        let answer: Value = serde_json::from_str(&body)?;
        let mut out = Vec::new();
        for series in answer["data"]["result"].as_array().into_iter().flatten() {
            let labels: BTreeMap<String, String> =
                serde_json::from_value(series["metric"].clone())?;
            let value = series["value"][1]
                .as_str()
                .ok_or_else(|| anyhow!("a series without a value: {series}"))?
                .parse::<f64>()?;
            out.push((labels, value));
        }
        Ok(out)
    }
}

/// The values a played model server exports.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ModelServerMetrics {
    /// `vllm:num_requests_waiting`.
    pub waiting: f64,
    /// `vllm:num_requests_running`.
    pub running: f64,
    /// `vllm:kv_cache_usage_perc` (0 to 1).
    pub kv_cache_usage: f64,
}

/// A played vLLM model server: `/metrics` in the Prometheus text format with vLLM's metric
/// names and labels (`model_name`, `engine`), values set by the test; registered with
/// Prometheus as a target labelled like a Kubernetes pod (`namespace`, `pod`). Stops and
/// leaves Prometheus's targets when dropped.
pub struct PlayedModelServer {
    /// `127.0.0.1:<port>`.
    pub address: SocketAddr,
    /// The namespace label of its series.
    pub namespace: String,
    /// The `model_name` label (vLLM's served model name).
    pub model_name: String,
    values: Arc<Mutex<ModelServerMetrics>>,
    target_file: PathBuf,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl PlayedModelServer {
    /// Serves `/metrics` on a free loopback port (on the caller's tokio runtime) and adds it
    /// to Prometheus's targets with the labels `namespace` and `pod`.
    pub async fn start(
        autoscaling: &Autoscaling,
        namespace: &str,
        pod: &str,
        model_name: &str,
    ) -> Result<PlayedModelServer> {
        let values = Arc::new(Mutex::new(ModelServerMetrics::default()));
        let served = values.clone();
        let model = model_name.to_string();
        let router = Router::new().route(
            "/metrics",
            get(move || {
                let values = served.lock().map(|v| *v).unwrap_or_default();
                let text = exposition(&model, values);
                async move {
                    (
                        [(
                            http::header::CONTENT_TYPE,
                            "text/plain; version=0.0.4; charset=utf-8",
                        )],
                        text,
                    )
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        let target_file = autoscaling
            .targets_dir
            .join(format!("{namespace}-{pod}.json"));
        let target = json!([{
            "targets": [address.to_string()],
            "labels": {"namespace": namespace, "pod": pod, "container": "vllm"},
        }]);
        // Written beside and renamed: Prometheus never reads a half-written file.
        let partial = target_file.with_extension("json.partial");
        std::fs::write(&partial, serde_json::to_vec(&target)?)?;
        std::fs::rename(&partial, &target_file)?;
        Ok(PlayedModelServer {
            address,
            namespace: namespace.to_string(),
            model_name: model_name.to_string(),
            values,
            target_file,
            shutdown: Some(shutdown),
        })
    }

    /// Sets the values the next scrape reads.
    pub fn set(&self, metrics: ModelServerMetrics) {
        if let Ok(mut values) = self.values.lock() {
            *values = metrics;
        }
    }

    /// Sets `vllm:num_requests_waiting` (the queue depth), the others unchanged.
    pub fn set_waiting(&self, waiting: f64) {
        if let Ok(mut values) = self.values.lock() {
            values.waiting = waiting;
        }
    }

    /// Waits until Prometheus holds `vllm:num_requests_waiting` = `waiting` for this server
    /// (its namespace and model name); returns how long that took.
    pub async fn wait_scraped(
        &self,
        autoscaling: &Autoscaling,
        waiting: f64,
        timeout: Duration,
    ) -> Result<Duration> {
        let started = Instant::now();
        let mut last = String::from("no query answered yet");
        while started.elapsed() < timeout {
            match autoscaling.series(vllm_metrics::NUM_REQUESTS_WAITING).await {
                Ok(series) => {
                    let mine: Vec<f64> = series
                        .iter()
                        .filter(|(labels, _)| {
                            labels.get("namespace") == Some(&self.namespace)
                                && labels.get("model_name") == Some(&self.model_name)
                        })
                        .map(|(_, v)| *v)
                        .collect();
                    if mine.iter().any(|v| (v - waiting).abs() < 1e-9) {
                        return Ok(started.elapsed());
                    }
                    last = format!("the series of {}: {mine:?}", self.namespace);
                }
                Err(e) => last = format!("{e:#}"),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        bail!(
            "Prometheus did not show {} = {waiting} for namespace {} within {timeout:?}: {last}",
            vllm_metrics::NUM_REQUESTS_WAITING,
            self.namespace
        )
    }
}

impl Drop for PlayedModelServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.target_file);
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// The text a vLLM V1 server's `/metrics` holds for these gauges (one engine, index 0).
pub fn exposition(model_name: &str, values: ModelServerMetrics) -> String {
    let labels = format!("engine=\"0\",model_name=\"{model_name}\"");
    let gauge = |name: &str, help: &str, value: f64| {
        format!("# HELP {name} {help}\n# TYPE {name} gauge\n{name}{{{labels}}} {value:?}\n")
    };
    [
        gauge(
            vllm_metrics::NUM_REQUESTS_RUNNING,
            "Number of requests in model execution batches.",
            values.running,
        ),
        gauge(
            vllm_metrics::NUM_REQUESTS_WAITING,
            "Number of requests waiting to be processed.",
            values.waiting,
        ),
        gauge(
            vllm_metrics::KV_CACHE_USAGE_PERC,
            "KV-cache usage. 1 means 100 percent usage.",
            values.kv_cache_usage,
        ),
    ]
    .concat()
}

/// `$AIRUNWAY_KEDA_BIN_DIR`, else the directory `e2e/go/keda/build.sh` prints (instant when
/// cached; `e2e/run-tests` builds it in the background with the control plane).
pub fn keda_bin_dir() -> Result<PathBuf> {
    let dir = match std::env::var_os("AIRUNWAY_KEDA_BIN_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let stdout = paths::run_script("e2e/go/keda/build.sh")?;
            PathBuf::from(stdout.trim())
        }
    };
    for binary in ["keda-operator", "keda-adapter"] {
        if !dir.join(binary).is_file() {
            bail!(
                "{} is missing: build it with `e2e/go/keda/build.sh`",
                dir.join(binary).display()
            );
        }
    }
    Ok(dir)
}

/// This machine's address on its default route: what an EndpointSlice may point at (the API
/// server refuses loopback endpoints). No packet is sent (a UDP socket is only connected).
pub fn host_address() -> Result<IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0")?;
    socket
        .connect("192.0.2.1:9")
        .or_else(|_| socket.connect("10.255.255.254:9"))
        .context("no route to find this machine's non-loopback address")?;
    let ip = socket.local_addr()?.ip();
    if ip.is_loopback() || ip.is_unspecified() {
        bail!("this machine has no non-loopback IPv4 address ({ip}) for KEDA's metrics server");
    }
    Ok(ip)
}

/// A free port for a process started later (see [`crate::binaries::free_port`]).
fn free_port() -> Result<u16> {
    Ok(crate::binaries::free_port())
}

async fn start_prometheus(
    dir: &Path,
    targets_dir: &Path,
    logs: &Path,
    lifetime: Lifetime,
) -> Result<(ProcessHandle, String)> {
    let program = which("prometheus").ok_or_else(|| {
        anyhow!("prometheus not found on PATH: install Debian's prometheus package (e2e/prerequisites does)")
    })?;
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: {SCRAPE_INTERVAL}\n  scrape_timeout: {SCRAPE_INTERVAL}\n  evaluation_interval: {SCRAPE_INTERVAL}\nscrape_configs:\n- job_name: model-servers\n  file_sd_configs:\n  - files: ['{}/*.json']\n    refresh_interval: {SCRAPE_INTERVAL}\n",
            targets_dir.display()
        ),
    )?;
    let port = free_port()?;
    let url = format!("http://127.0.0.1:{port}");
    let process = Spawn {
        name: "prometheus".into(),
        program,
        args: vec![
            format!("--config.file={}", config.display()),
            format!(
                "--storage.tsdb.path={}",
                dir.join("prometheus-data").display()
            ),
            format!("--web.listen-address=127.0.0.1:{port}"),
            "--storage.tsdb.retention.time=1h".into(),
            "--log.level=warn".into(),
        ],
        env: [("GOMAXPROCS".to_string(), "2".to_string())].into(),
        log: logs.join("prometheus.log"),
        lifetime,
    }
    .start()?;
    wait_http_ok(&format!("{url}/-/ready"), &process, Duration::from_secs(60)).await?;
    Ok((process, url))
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())
    })
}

async fn wait_http_ok(url: &str, process: &ProcessHandle, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = process.exit_status() {
            bail!(
                "{} exited ({status}) before {url} answered:\n{}",
                process.name(),
                process.log_tail(40)
            );
        }
        let last = match crate::http::get(url).await {
            Ok((200, _)) => return Ok(()),
            Ok((code, body)) => format!("{code} {body}"),
            Err(e) => format!("{e:#}"),
        };
        if Instant::now() > deadline {
            bail!(
                "{} not ready at {url} after {timeout:?} (last: {last}):\n{}",
                process.name(),
                process.log_tail(40)
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Server-side applies `object` (its apiVersion, kind and plural are known here: no discovery).
async fn apply(client: &Client, object: &Value) -> Result<()> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let plural = match kind {
        "Namespace" => "namespaces",
        "Service" => "services",
        "EndpointSlice" => "endpointslices",
        "APIService" => "apiservices",
        other => bail!("the harness does not apply {other} here"),
    };
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    api.patch(
        name,
        &PatchParams::apply(HARNESS_FIELD_MANAGER).force(),
        &apply_body::apply(object),
    )
    .await
    .with_context(|| format!("applying {kind} {name}"))?;
    Ok(())
}

/// The selector-less Service, its EndpointSlice (this machine's address) and the APIService
/// that make KEDA's metrics server `external.metrics.k8s.io`.
async fn register_metrics_api(client: &Client, ca_pem: &str, server: SocketAddr) -> Result<()> {
    apply(
        client,
        &json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": KEDA_METRICS_SERVICE, "namespace": KEDA_NAMESPACE},
            "spec": {"ports": [{"name": "https", "port": 443, "protocol": "TCP",
                                "targetPort": server.port()}]}}),
    )
    .await?;
    let address_type = if server.is_ipv4() { "IPv4" } else { "IPv6" };
    apply(
        client,
        &json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": format!("{KEDA_METRICS_SERVICE}-host"), "namespace": KEDA_NAMESPACE,
                         "labels": {"kubernetes.io/service-name": KEDA_METRICS_SERVICE,
                                    "endpointslice.kubernetes.io/managed-by": HARNESS_FIELD_MANAGER}},
            "addressType": address_type,
            "endpoints": [{"addresses": [server.ip().to_string()], "conditions": {"ready": true}}],
            "ports": [{"name": "https", "port": server.port(), "protocol": "TCP"}]}),
    )
    .await?;
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    apply(
        client,
        &json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": EXTERNAL_METRICS_APISERVICE},
            "spec": {"group": "external.metrics.k8s.io", "version": "v1beta1",
                     "groupPriorityMinimum": 100, "versionPriority": 100,
                     "caBundle": ca_bundle,
                     "service": {"name": KEDA_METRICS_SERVICE, "namespace": KEDA_NAMESPACE,
                                 "port": 443}}}),
    )
    .await
}

async fn wait_apiservice_available(
    client: &Client,
    adapter: &ProcessHandle,
    timeout: Duration,
) -> Result<()> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiregistration.k8s.io", "v1", "APIService"),
        "apiservices",
    );
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = adapter.exit_status() {
            bail!(
                "KEDA's metrics server exited ({status}):\n{}",
                adapter.log_tail(40)
            );
        }
        let service = api.get(EXTERNAL_METRICS_APISERVICE).await?;
        let available = service.data["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Available")
            .cloned();
        if available.as_ref().is_some_and(|c| c["status"] == "True") {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "APIService {EXTERNAL_METRICS_APISERVICE} not Available after {timeout:?}: {}\n{}",
                available.map(|c| c.to_string()).unwrap_or_default(),
                adapter.log_tail(40)
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_has_vllm_names_labels_and_values() {
        let text = exposition(
            "qwen3",
            ModelServerMetrics {
                waiting: 7.0,
                running: 2.0,
                kv_cache_usage: 0.25,
            },
        );
        assert!(
            text.contains("vllm:num_requests_waiting{engine=\"0\",model_name=\"qwen3\"} 7.0\n"),
            "{text}"
        );
        assert!(
            text.contains("vllm:num_requests_running{engine=\"0\",model_name=\"qwen3\"} 2.0\n"),
            "{text}"
        );
        assert!(
            text.contains("vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"qwen3\"} 0.25\n"),
            "{text}"
        );
        assert_eq!(text.matches("# TYPE ").count(), 3, "{text}");
    }
}
