//! Real upstream operators built from their Go modules (`e2e/control-plane/build.sh`).
//!
//! Only KubeRay's is served as a Go module at the version we target
//! (`github.com/ray-project/kuberay/ray-operator` v1.3.0); KAITO's and Dynamo's are not, so
//! they are simulated (`crate::sandbox::simulate`).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::paths;
use crate::process::{Lifetime, ProcessHandle, Spawn};

/// A running KubeRay operator.
pub struct KubeRayOperator {
    /// The process.
    pub process: ProcessHandle,
    /// Its `/healthz` and `/readyz` port.
    pub health_port: u16,
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
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
