//! `airunway-bench`: the scale benchmark on the real control plane (run it with `e2e/bench`,
//! which builds the release binaries first). Prints a table and optionally writes JSON; see
//! docs/performance.md.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use airunway_e2e::bench::workload::Target;
use airunway_e2e::bench::{self, BenchOptions};
use clap::Parser;

/// Create N ModelDeployments in a burst against the real control plane with the core and the
/// providers running, and report latency, memory, CPU, watches and API writes.
#[derive(Parser, Debug)]
#[command(name = "airunway-bench", version)]
struct Cli {
    /// ModelDeployments to create.
    #[arg(long, default_value_t = 1000)]
    count: usize,
    /// Concurrent creating clients.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Namespaces to spread the deployments over.
    #[arg(long, default_value_t = 10)]
    namespaces: usize,
    /// Providers the deployments cycle through (comma-separated).
    #[arg(long, default_value = "kaito,dynamo,kuberay", value_delimiter = ',')]
    providers: Vec<String>,
    /// Seconds of steady state in which writes are counted after everything is Running.
    #[arg(long, default_value_t = 300)]
    steady_seconds: u64,
    /// Seconds of relist after the steady state: kube-apiserver is restarted and each
    /// controller's peak RSS over this window is read against its settled RSS (0 skips it).
    #[arg(long, default_value_t = 20)]
    relist_seconds: u64,
    /// Seconds to wait for each phase before giving up (default: 120 + count / 10).
    #[arg(long)]
    timeout_seconds: Option<u64>,
    /// Concurrent connections of the floor's plain client.
    #[arg(long, default_value_t = 4)]
    floor_connections: usize,
    /// Also write the report as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Keep a copy of the API server's audit log here.
    #[arg(long)]
    keep_audit_log: Option<PathBuf>,
    /// Default the deployments with the MutatingAdmissionPolicy of
    /// deploy/components/mutating-admission-policy instead of the core's mutating webhook (the
    /// component's setup: one webhook call per create).
    #[arg(long)]
    mutating_policy: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut targets = Vec::new();
    for name in &cli.providers {
        match Target::parse(name) {
            Some(t) => targets.push(t),
            None => {
                eprintln!(
                    "error: --providers: unknown provider '{name}' (known: kaito, dynamo, kuberay)"
                );
                return ExitCode::from(2);
            }
        }
    }
    if targets.is_empty() || cli.count == 0 {
        eprintln!("error: --count and --providers must not be empty");
        return ExitCode::from(2);
    }
    let options = BenchOptions {
        count: cli.count,
        clients: cli.clients,
        namespaces: cli.namespaces,
        targets,
        steady: Duration::from_secs(cli.steady_seconds),
        relist: (cli.relist_seconds > 0).then(|| Duration::from_secs(cli.relist_seconds)),
        timeout: Duration::from_secs(cli.timeout_seconds.unwrap_or(120 + cli.count as u64 / 10)),
        floor_connections: cli.floor_connections,
        json: cli.json,
        keep_audit_log: cli.keep_audit_log,
        mutating_policy: cli.mutating_policy,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(bench::run(options)) {
        Ok(report) if report.all_running_seconds.is_some() && report.create_failures == 0 => {
            ExitCode::SUCCESS
        }
        Ok(_) => {
            eprintln!("error: not every deployment was created and reached Running");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
