//! `airunway-model-downloader`: the program a model cache's download Job runs.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use airunway_model_downloader::fetch::{RetryPolicy, Timeouts, Token};
use airunway_model_downloader::hub::FileFilter;
use airunway_model_downloader::progress::{
    JsonLinesSink, KubeStatusSink, ProgressSink, StatusTarget,
};
use airunway_model_downloader::{Config, Error, Layout, Source, run_until};
use anyhow::Context as _;
use clap::Parser;

/// Downloads a Hugging Face model (or one file by URI) into a directory: resumable, verified,
/// parallel, with progress as JSON lines on stdout and optionally in an object's status.
/// The token is read from the environment variable HF_TOKEN only.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Base URL of the Hub (or of a server with its file API).
    #[arg(long, env = "HF_ENDPOINT", default_value = "https://huggingface.co")]
    endpoint: String,
    /// The model, `namespace/name`.
    #[arg(long, required_unless_present = "uri", conflicts_with = "uri")]
    model_id: Option<String>,
    /// Branch, tag or commit of the model.
    #[arg(long, default_value = "main")]
    revision: String,
    /// Directory the files are written under, at their paths in the model.
    #[arg(long, required_unless_present = "hf_home", conflicts_with = "hf_home")]
    target_dir: Option<PathBuf>,
    /// `HF_HOME` of the engines that will read the model: the files go to its Hugging Face hub
    /// cache (`hub/models--<namespace>--<name>/snapshots/<commit>/`, then `refs/<revision>`),
    /// where they find it without downloading.
    #[arg(long, conflicts_with = "uri")]
    hf_home: Option<PathBuf>,
    /// Only files matching one of these globs (repeatable; `*` also matches `/`).
    #[arg(long)]
    include: Vec<String>,
    /// Not the files matching one of these globs (repeatable).
    #[arg(long)]
    exclude: Vec<String>,
    /// Files downloaded at once (1 to 64).
    #[arg(long, default_value_t = 4)]
    parallel: usize,
    /// A custom source: download this one http(s) file instead of a model.
    #[arg(long)]
    uri: Option<String>,
    /// The sha256 of the `--uri` file, verified when given.
    #[arg(long, requires = "uri")]
    sha256: Option<String>,
    /// Also write progress to `status.download` of this object:
    /// `<group>/<version>/<plural>/<namespace>/<name>`.
    #[arg(long, value_name = "GROUP/VERSION/PLURAL/NAMESPACE/NAME")]
    report_status: Option<String>,
    /// Attempts without progress before a transient error (5xx, broken connection) fails.
    #[arg(long, default_value_t = 5)]
    retries: u32,
    /// First retry delay in milliseconds (doubled each retry, at most 30 s).
    #[arg(long, default_value_t = 1000)]
    retry_delay_ms: u64,
    /// Seconds to wait for the next bytes before a transfer counts as broken.
    #[arg(long, default_value_t = 60)]
    read_timeout_secs: u64,
    /// Milliseconds between progress reports (at most 5000).
    #[arg(long, default_value_t = 5000)]
    progress_interval_ms: u64,
    /// Where the one-line failure reason is also written, when that file is writable.
    #[arg(long, default_value = "/dev/termination-log")]
    termination_log: PathBuf,
}

fn main() -> ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // Plain text in a Pod's log; colours only on a terminal.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let termination_log = args.termination_log.clone();
    let outcome = start(args);
    let (code, reason) = match outcome {
        Ok(()) => return ExitCode::SUCCESS,
        Err(e) => match e.downcast_ref::<Error>() {
            Some(err) => (err.exit_code(), format!("{} ({})", err, err.category())),
            None => (1, format!("{e:#}")),
        },
    };
    let reason = reason.replace('\n', " ");
    eprintln!("{reason}");
    // The kubelet shows this file as the container's termination message; it exists only in a
    // Pod, so a missing or read-only path is not an error.
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&termination_log)
    {
        use std::io::Write as _;
        let _ = writeln!(file, "{reason}");
    }
    ExitCode::from(code)
}

fn start(args: Args) -> anyhow::Result<()> {
    // One crypto provider for both HTTPS clients (reqwest and kube), ring as in the workspace.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    runtime.block_on(async move {
        let config = config(&args)?;
        let mut sinks: Vec<Box<dyn ProgressSink>> = vec![Box::new(JsonLinesSink)];
        if let Some(target) = &args.report_status {
            let target: StatusTarget = target.parse()?;
            sinks.push(Box::new(KubeStatusSink::new(target).await?));
        }
        let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("SIGTERM handler")?;
        let shutdown = async move {
            sigterm.recv().await;
        };
        let summary = run_until(config, sinks, shutdown).await?;
        tracing::info!(
            files = summary.files,
            already_present = summary.files_present,
            bytes = summary.bytes_total,
            fetched = summary.bytes_fetched,
            seconds = summary.elapsed.as_secs_f64(),
            "download complete"
        );
        Ok(())
    })
}

fn config(args: &Args) -> Result<Config, Error> {
    let endpoint = reqwest::Url::parse(&args.endpoint)
        .map_err(|e| Error::Config(format!("--endpoint {:?}: {e}", args.endpoint)))?;
    if !matches!(endpoint.scheme(), "http" | "https") {
        return Err(Error::Config("--endpoint must be http or https".into()));
    }
    let source = match (&args.uri, &args.model_id) {
        (Some(uri), _) => Source::Uri {
            uri: uri.clone(),
            endpoint,
            sha256: args.sha256.clone(),
        },
        (None, Some(model)) => Source::Hub {
            endpoint,
            model: model.clone(),
            revision: args.revision.clone(),
            filter: FileFilter::new(&args.include, &args.exclude)?,
        },
        (None, None) => return Err(Error::Config("--model-id or --uri is required".into())),
    };
    let (target_dir, layout) = match (&args.hf_home, &args.target_dir) {
        (Some(home), _) => (home.clone(), Layout::HubCache),
        (None, Some(dir)) => (dir.clone(), Layout::Flat),
        (None, None) => {
            return Err(Error::Config(
                "--target-dir or --hf-home is required".into(),
            ));
        }
    };
    Ok(Config {
        source,
        target_dir,
        layout,
        parallel: args.parallel,
        token: std::env::var("HF_TOKEN").ok().and_then(Token::new),
        retry: RetryPolicy {
            attempts: args.retries.max(1),
            base_delay: Duration::from_millis(args.retry_delay_ms),
            ..RetryPolicy::default()
        },
        timeouts: Timeouts {
            read: Duration::from_secs(args.read_timeout_secs.max(1)),
            ..Timeouts::default()
        },
        progress_interval: Duration::from_millis(args.progress_interval_ms),
    })
}
