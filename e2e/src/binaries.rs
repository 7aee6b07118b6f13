//! Starting our real binaries as child processes with flags and a kubeconfig.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::env::TestEnv;
use crate::paths;
use crate::process::{Lifetime, ProcessHandle, Spawn};

/// Starts `binary` (e.g. `airunway-core`) with `--kubeconfig`-equivalent `KUBECONFIG` set to
/// `kubeconfig` and `args`; its log joins the test's failure report.
pub fn start_binary(
    env: &TestEnv,
    binary: &str,
    kubeconfig: &Path,
    args: &[String],
) -> ProcessHandle {
    start_binary_with_env(env, binary, kubeconfig, args, &[])
}

/// [`start_binary`] with extra environment variables.
pub fn start_binary_with_env(
    env: &TestEnv,
    binary: &str,
    kubeconfig: &Path,
    args: &[String],
    extra_env: &[(&str, &str)],
) -> ProcessHandle {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let program = paths::our_binary(binary).unwrap_or_else(|e| panic!("{e:#}"));
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let log = env
        .control_plane
        .dir
        .join("logs")
        .join(format!("{binary}-{n}.log"));
    let handle = Spawn {
        name: binary.to_string(),
        program,
        args: args.to_vec(),
        env: [
            ("KUBECONFIG".to_string(), kubeconfig.display().to_string()),
            (
                "RUST_LOG".to_string(),
                std::env::var("AIRUNWAY_E2E_RUST_LOG").unwrap_or_else(|_| "info".into()),
            ),
            ("RUST_BACKTRACE".to_string(), "1".to_string()),
        ]
        .into_iter()
        .chain(
            extra_env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string())),
        )
        .collect(),
        log: log.clone(),
        lifetime: Lifetime::WithTestProcess,
    }
    .start()
    .unwrap_or_else(|e| panic!("starting {binary}: {e:#}"));
    env.report_log(&format!("{binary} #{n}"), log);
    handle
}

/// A free TCP port on 127.0.0.1 for a process started later (flags like
/// `--metrics-bind-address`).
///
/// Chosen below the kernel's ephemeral range (`net.ipv4.ip_local_port_range`), where no
/// outgoing connection of any process can take it between the pick and the child's bind (a
/// port from `bind(0)` lies in that range, and a CI run once lost one that way: "Address
/// already in use"). Each test process walks its own stretch of that space (from its pid) and
/// skips a port it cannot bind, so two suites running side by side do not hand out the same
/// one.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32768);
    let low = 10_000u32;
    let span = ephemeral_low.saturating_sub(low).max(1);
    let start = std::process::id().wrapping_mul(7_919) % span;
    for _ in 0..span.min(4_096) {
        let offset = (start + NEXT.fetch_add(1, Ordering::Relaxed)) % span;
        let Ok(port) = u16::try_from(low + offset) else {
            continue;
        };
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}
