//! The provider under test as a child process: started with its ServiceAccount's kubeconfig,
//! bind addresses on free loopback ports and a fast heartbeat; waited on until ready; killed.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

use super::ConformanceError;

/// The heartbeat interval the runner gives the provider (`--heartbeat-interval`).
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(1);

/// A running provider.
#[derive(Debug)]
pub struct ProviderProcess {
    child: Child,
    /// Its gRPC probe port on 127.0.0.1.
    pub probe_port: u16,
    /// Where its output goes.
    pub log: PathBuf,
}

/// How to start the provider.
#[derive(Clone, Debug)]
pub struct Launch<'a> {
    /// The binary.
    pub binary: &'a Path,
    /// The kubeconfig it runs with.
    pub kubeconfig: &'a Path,
    /// The namespace it runs in (`POD_NAMESPACE`: its leader-election lease).
    pub namespace: &'a str,
    /// Extra flags.
    pub args: &'a [String],
    /// Extra environment variables.
    pub env: &'a std::collections::BTreeMap<String, String>,
    /// Its log file.
    pub log: PathBuf,
}

fn free_port() -> Result<u16, ConformanceError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| ConformanceError::Setup(format!("no free port: {e}")))
}

impl ProviderProcess {
    /// Starts the provider and waits (up to `timeout`) until its probe's health service answers
    /// `SERVING`.
    pub async fn start(launch: &Launch<'_>, timeout: Duration) -> Result<Self, ConformanceError> {
        let (probe_port, health_port, metrics_port) = (free_port()?, free_port()?, free_port()?);
        let log = std::fs::File::create(&launch.log).map_err(|source| ConformanceError::Write {
            path: launch.log.clone(),
            source,
        })?;
        let log_err = log.try_clone().map_err(|source| ConformanceError::Write {
            path: launch.log.clone(),
            source,
        })?;
        let child = Command::new(launch.binary)
            .arg(format!("--probe-bind-address=127.0.0.1:{probe_port}"))
            .arg(format!(
                "--health-probe-bind-address=127.0.0.1:{health_port}"
            ))
            .arg(format!("--metrics-bind-address=127.0.0.1:{metrics_port}"))
            .arg(format!(
                "--heartbeat-interval={}s",
                HEARTBEAT_INTERVAL.as_secs()
            ))
            .args(launch.args)
            .envs(launch.env)
            .env("KUBECONFIG", launch.kubeconfig)
            .env("POD_NAMESPACE", launch.namespace)
            .env("POD_NAME", "conformance-0")
            .env(
                "RUST_LOG",
                std::env::var("AIRUNWAY_CONFORMANCE_RUST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| ConformanceError::Spawn {
                binary: launch.binary.to_path_buf(),
                source,
            })?;
        let mut process = ProviderProcess {
            child,
            probe_port,
            log: launch.log.clone(),
        };
        let start = std::time::Instant::now();
        loop {
            if let Ok(Some(status)) = process.child.try_wait() {
                return Err(ConformanceError::Setup(format!(
                    "the provider exited during start-up ({status}); its log, {}:\n{}",
                    process.log.display(),
                    process.log_tail(20)
                )));
            }
            if serving(probe_port).await {
                return Ok(process);
            }
            if start.elapsed() >= timeout {
                process.kill().await;
                return Err(ConformanceError::Setup(format!(
                    "the provider's probe did not answer SERVING within {timeout:?}; its log, {}:\n{}",
                    process.log.display(),
                    process.log_tail(20)
                )));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Whether it is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// SIGKILL, and wait for it.
    pub async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }

    /// The last `lines` lines of its log.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

/// Whether the provider's probe answers the standard gRPC health check with `SERVING`.
pub async fn serving(probe_port: u16) -> bool {
    use tonic_health::pb::health_client::HealthClient;
    use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus};
    let attempt = async {
        let channel =
            tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{probe_port}"))
                .ok()?
                .connect()
                .await
                .ok()?;
        let answer = HealthClient::new(channel)
            .check(HealthCheckRequest {
                service: String::new(),
            })
            .await
            .ok()?
            .into_inner();
        Some(answer.status == ServingStatus::Serving as i32)
    };
    tokio::time::timeout(Duration::from_secs(2), attempt)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}
