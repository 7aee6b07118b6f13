//! Real upstream operators built from their Go modules (`e2e/control-plane/build.sh`).
//!
//! Only KubeRay's is served as a Go module at the version we target
//! (`github.com/ray-project/kuberay/ray-operator` v1.3.0); KAITO's and Dynamo's are not, so
//! they are simulated (`crate::sandbox::simulate`). The Inference Extension's endpoint picker
//! (`sigs.k8s.io/gateway-api-inference-extension` v1.5.0, `cmd/epp`) is served too and runs
//! here against a pool the core created ([`start_endpoint_picker`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use crate::paths;
use crate::process::{Lifetime, ProcessHandle, Spawn};

/// A running KubeRay operator.
pub struct KubeRayOperator {
    /// The process.
    pub process: ProcessHandle,
    /// Its `/healthz` and `/readyz` port.
    pub health_port: u16,
}

/// A free port for a process started later (see [`crate::binaries::free_port`]).
fn free_port() -> Result<u16> {
    Ok(crate::binaries::free_port())
}

/// Starts the KubeRay operator (RayCluster, RayService and RayJob controllers) with
/// `kubeconfig`, watching `watch_namespace` only when given (tests that play the operator with
/// status samples run in other namespaces of the same control plane), and waits until its
/// health endpoint answers.
pub fn start_kuberay_operator(
    kubeconfig: &Path,
    log: &Path,
    lifetime: Lifetime,
    watch_namespace: Option<&str>,
) -> Result<KubeRayOperator> {
    let (metrics, health) = (free_port()?, free_port()?);
    // The operator reaches each Ray head's dashboard at
    // `http://<cluster>-head-svc.<namespace>.svc.cluster.local:8265`. No such name resolves
    // here and no Ray runs in a KWOK Pod; a proxy on a closed loopback port makes that request
    // fail at once without a DNS query leaving the machine.
    let no_dashboard = format!("http://127.0.0.1:{}", free_port()?);
    let mut args = vec![
        format!("--kubeconfig={}", kubeconfig.display()),
        format!("--metrics-addr=127.0.0.1:{metrics}"),
        format!("--health-probe-bind-address=127.0.0.1:{health}"),
        "--enable-leader-election=false".into(),
        "--log-stdout-encoder=console".into(),
    ];
    if let Some(namespace) = watch_namespace {
        args.push(format!("--watch-namespace={namespace}"));
    }
    let process = Spawn {
        name: "kuberay-operator".into(),
        program: paths::kuberay_operator_binary()?,
        args,
        env: [
            ("GOMAXPROCS".to_string(), "2".to_string()),
            ("HTTP_PROXY".to_string(), no_dashboard),
        ]
        .into(),
        log: log.to_path_buf(),
        lifetime,
    }
    .start()?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = process.exit_status() {
            bail!(
                "the KubeRay operator exited ({status}):\n{}",
                process.log_tail(40)
            );
        }
        if let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", health)) {
            use std::io::{Read, Write};
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let request = format!("GET /readyz HTTP/1.0\r\nHost: 127.0.0.1:{health}\r\n\r\n");
            let mut response = String::new();
            if stream.write_all(request.as_bytes()).is_ok()
                && stream.read_to_string(&mut response).is_ok()
                && response.starts_with("HTTP/1.")
                && response.contains(" 200 ")
            {
                return Ok(KubeRayOperator {
                    process,
                    health_port: health,
                });
            }
        }
        if Instant::now() > deadline {
            bail!(
                "the KubeRay operator not ready after 60s:\n{}",
                process.log_tail(40)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A running endpoint picker.
pub struct EndpointPicker {
    /// The process.
    pub process: ProcessHandle,
    /// Its gRPC health port (`grpc.health.v1.Health`, SERVING once the pool is loaded).
    pub health_port: u16,
    /// Its Prometheus `/metrics` port (served without authentication here).
    pub metrics_port: u16,
    /// How long from start until the health check said SERVING.
    pub ready_after: Duration,
}

impl EndpointPicker {
    /// `http://127.0.0.1:<metrics>/metrics`.
    pub fn metrics_url(&self) -> String {
        format!("http://127.0.0.1:{}/metrics", self.metrics_port)
    }

    /// The gRPC health status for `service` (the picker answers the same for every service
    /// name when leader election is off).
    pub async fn health(&self, service: &str) -> Result<ServingStatus> {
        let channel = tonic::transport::Endpoint::from_shared(format!(
            "http://127.0.0.1:{}",
            self.health_port
        ))?
        .connect_timeout(Duration::from_secs(2))
        .timeout(Duration::from_secs(2))
        .connect()
        .await?;
        let response = HealthClient::new(channel)
            .check(HealthCheckRequest {
                service: service.to_string(),
            })
            .await?;
        Ok(ServingStatus::try_from(response.into_inner().status)?)
    }
}

/// Starts the endpoint picker with `args` (the container arguments the core rendered, the
/// configuration file path already pointing at a local copy of the rendered ConfigMap) as the
/// identity in `kubeconfig`, on free loopback ports, and waits until its gRPC health check
/// answers SERVING, which it does once it has read its InferencePool.
///
/// Added to `args`: the ports; `--refresh-metrics-interval=1h`: the picker scrapes each
/// selected pod's model server at `<pod IP>:<target port>/metrics`, and the pod IPs KWOK hands
/// out route nowhere and no model server runs in a simulated pod, so the first scrape is put
/// beyond the test (no packet to a pod IP leaves the machine). Metrics authentication is what
/// the core rendered (`--metrics-endpoint-auth=false`): the tests read the metrics with no
/// token, as any scraper may.
pub async fn start_endpoint_picker(
    kubeconfig: &Path,
    mut args: Vec<String>,
    env: BTreeMap<String, String>,
    log: &Path,
    lifetime: Lifetime,
) -> Result<EndpointPicker> {
    let (grpc, health, metrics) = (free_port()?, free_port()?, free_port()?);
    args.extend([
        format!("--grpc-port={grpc}"),
        format!("--grpc-health-port={health}"),
        format!("--metrics-port={metrics}"),
        "--refresh-metrics-interval=1h".into(),
    ]);
    let mut env = env;
    env.insert("GOMAXPROCS".into(), "2".into());
    env.insert("KUBECONFIG".into(), kubeconfig.display().to_string());
    let started = Instant::now();
    let process = Spawn {
        name: "endpoint-picker".into(),
        program: paths::endpoint_picker_binary()?,
        args,
        env,
        log: log.to_path_buf(),
        lifetime,
    }
    .start()?;
    let mut picker = EndpointPicker {
        process,
        health_port: health,
        metrics_port: metrics,
        ready_after: Duration::ZERO,
    };
    let deadline = started + Duration::from_secs(60);
    loop {
        if let Some(status) = picker.process.exit_status() {
            bail!(
                "the endpoint picker exited ({status}):\n{}",
                picker.process.log_tail(40)
            );
        }
        if matches!(picker.health("").await, Ok(ServingStatus::Serving)) {
            picker.ready_after = started.elapsed();
            return Ok(picker);
        }
        if Instant::now() > deadline {
            bail!(
                "the endpoint picker not SERVING after 60s:\n{}",
                picker.process.log_tail(40)
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
