//! `airunway-conformance`: runs the provider conformance suite against a provider and a
//! cluster where the AI Runway core runs, prints the report as a table (and JSON with
//! `--report-json`), and exits non-zero when a check failed
//! (docs/providers/writing-a-provider.md).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use airunway_api::conformance::{self, Options};
use anyhow::Context;
use clap::Parser;

/// Runs the AI Runway provider conformance suite.
#[derive(Debug, Parser)]
#[command(name = "airunway-conformance", version)]
struct Args {
    /// The cluster's admin kubeconfig (default: KUBECONFIG or ~/.kube/config).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The provider binary; the runner starts it as its base's ServiceAccount.
    #[arg(long)]
    provider_binary: Option<PathBuf>,
    /// The kubeconfig the provider runs with (default: a token of its base's ServiceAccount).
    #[arg(long)]
    provider_kubeconfig: Option<PathBuf>,
    /// The provider's kustomize base, rendered (`kustomize build deploy/ > base.yaml`).
    #[arg(long)]
    manifests: PathBuf,
    /// The provider's conformance.yaml.
    #[arg(long)]
    data: PathBuf,
    /// The namespace to run in (created when missing, deleted afterwards then).
    #[arg(long, default_value = "airunway-conformance")]
    namespace: String,
    /// The kube-apiserver's audit log (JSON lines, Metadata level): enables the request
    /// counts of the idempotence and permission checks.
    #[arg(long)]
    audit_log: Option<PathBuf>,
    /// Where the provider's log and kubeconfig go (default: a temporary directory).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Writes the report as JSON to this file.
    #[arg(long)]
    report_json: Option<PathBuf>,
    /// How long a check waits for an expected state, in seconds.
    #[arg(long, default_value_t = 60)]
    timeout_seconds: u64,
}

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}

async fn run() -> anyhow::Result<bool> {
    let args = Args::parse();
    airunway_api::runtime::install_crypto_provider()?;
    let mut options = Options::new(args.manifests, args.data, &args.namespace);
    options.kubeconfig = args.kubeconfig;
    options.provider_binary = args.provider_binary;
    options.provider_kubeconfig = args.provider_kubeconfig;
    options.audit_log = args.audit_log;
    options.work_dir = args.work_dir;
    options.timeout = Duration::from_secs(args.timeout_seconds);
    let report = conformance::run(&options)
        .await
        .context("the conformance run could not start")?;
    print!("{}", report.table());
    if let Some(path) = args.report_json {
        let json = serde_json::to_string_pretty(&report)?;
        std::fs::write(&path, json).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(report.passed())
}
