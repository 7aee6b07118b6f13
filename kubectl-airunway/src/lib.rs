//! `kubectl airunway`: the kubectl plugin of AI Runway (docs/gitops.md). It holds no decision
//! of its own: each command runs the binary that owns the code, so the plugin cannot drift
//! from the controllers.
//!
//! - `validate`, `select`, `explain` → `airunway-core <command> ...`;
//! - `render` → `airunway-provider-<name> render ...`, the provider named by `--provider`, else
//!   the one `airunway-core select` gives every deployment of the inputs (with the engine it
//!   selected, as `--engine`).
//!
//! Binaries are found by `--core-binary` / `AIRUNWAY_CORE_BINARY` and `--provider-binary` /
//! `AIRUNWAY_PROVIDER_BINARY`, else in `--bin-dir` / `AIRUNWAY_BIN_DIR`, else beside the plugin
//! itself, else on `PATH`. Exit codes are the command's ([`airunway_api::offline::exit`]); a
//! binary that cannot be found or started exits with 2.
//!
//! Two commands read the cluster directly (kubeconfig, `--context` and `-n/--namespace` the
//! usual way; read-only, never a Secret): `why <deployment>` ([`why::Report`]) and `providers`
//! ([`why::ProviderRow`]). `why` exits with 1 when the deployment is not `Running`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command as Process;

use airunway_api::offline::{OutputFormat, exit};

pub mod cluster;
pub mod why;

/// The plugin's command line.
#[derive(clap::Parser, Clone, Debug)]
#[command(
    name = "kubectl-airunway",
    version,
    about = "AI Runway from kubectl: validate, select, explain and render ModelDeployments offline; why and providers from the cluster"
)]
pub struct Args {
    /// The `airunway-core` binary.
    #[arg(long, env = "AIRUNWAY_CORE_BINARY", global = true)]
    pub core_binary: Option<PathBuf>,

    /// The provider binary for `render` (default `airunway-provider-<name>`).
    #[arg(long, env = "AIRUNWAY_PROVIDER_BINARY", global = true)]
    pub provider_binary: Option<PathBuf>,

    /// A directory holding `airunway-core` and `airunway-provider-<name>`.
    #[arg(long, env = "AIRUNWAY_BIN_DIR", global = true)]
    pub bin_dir: Option<PathBuf>,

    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The plugin's commands.
#[derive(clap::Subcommand, Clone, Debug)]
pub enum Command {
    /// Check manifests as the cluster would (`airunway-core validate`).
    Validate(Passed),
    /// Which engine and provider each ModelDeployment gets (`airunway-core select`).
    Select(Passed),
    /// Why each provider was or was not chosen (`airunway-core explain`).
    Explain(Passed),
    /// The upstream objects a provider would create (`airunway-provider-<name> render`).
    Render(RenderPassed),
    /// Why a ModelDeployment is in its state: decision, provider health, upstream objects and
    /// the not-ready chain, read from the cluster.
    Why(WhyArgs),
    /// Every registered provider: health, heartbeat, version, engines and deployments served.
    Providers(ClusterArgs),
}

/// The cluster and output options of `why` and `providers`.
#[derive(clap::Args, Clone, Debug)]
pub struct ClusterArgs {
    /// The kubeconfig context (default: the current one).
    #[arg(long)]
    pub context: Option<String>,

    /// The namespace (default: the context's).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,

    /// Output format: `table` (human), `json` or `yaml`.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    pub output: OutputFormat,
}

/// `why`'s arguments.
#[derive(clap::Args, Clone, Debug)]
pub struct WhyArgs {
    /// The ModelDeployment.
    pub name: String,

    /// Cluster and output options.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// Arguments handed on unchanged.
#[derive(clap::Args, Clone, Debug)]
pub struct Passed {
    /// Files, directories and options of the command (see `airunway-core <command> --help`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<OsString>,
}

/// `render`'s arguments.
#[derive(clap::Args, Clone, Debug)]
pub struct RenderPassed {
    /// The provider (default: the one `airunway-core select` gives every deployment).
    #[arg(long)]
    pub provider: Option<String>,

    /// Files, directories and options of the render (see `airunway-provider-<name> render
    /// --help`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<OsString>,
}

/// Why the plugin could not run a command (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The binary was not found.
    #[error(
        "{0} not found: put it on PATH or beside kubectl-airunway, or give --bin-dir (AIRUNWAY_BIN_DIR) or the binary's own flag"
    )]
    NotFound(String),
    /// The binary could not be started.
    #[error("running {binary}: {source}")]
    Start {
        /// The binary.
        binary: String,
        /// The error.
        source: std::io::Error,
    },
    /// `select` did not say which provider to render with.
    #[error("{0}")]
    NoProvider(String),
    /// A cluster command could not read the cluster.
    #[error(transparent)]
    Cluster(#[from] cluster::ClusterError),
    /// The report could not be written.
    #[error(transparent)]
    Output(#[from] airunway_api::offline::InputError),
}

impl PluginError {
    /// A short, static label.
    pub fn category(&self) -> &'static str {
        match self {
            PluginError::NotFound(_) => "not_found",
            PluginError::Start { .. } => "start",
            PluginError::NoProvider(_) => "no_provider",
            PluginError::Cluster(e) => e.category(),
            PluginError::Output(e) => e.category(),
        }
    }
}

/// Where binary `name` is: `explicit`, else in `bin_dir`, else beside `own` (the plugin's
/// path), else on `path` (`PATH`'s value).
pub fn locate(
    name: &str,
    explicit: Option<&Path>,
    bin_dir: Option<&Path>,
    own: Option<&Path>,
    path: Option<&std::ffi::OsStr>,
) -> Result<PathBuf, PluginError> {
    if let Some(explicit) = explicit {
        return Ok(explicit.to_path_buf());
    }
    let beside = own.and_then(Path::parent).map(Path::to_path_buf);
    let searched = bin_dir
        .map(Path::to_path_buf)
        .into_iter()
        .chain(beside)
        .chain(path.into_iter().flat_map(std::env::split_paths));
    for dir in searched {
        let candidate = dir.join(name);
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(PluginError::NotFound(name.to_string()))
}

impl Args {
    fn find(&self, name: &str, explicit: Option<&Path>) -> Result<PathBuf, PluginError> {
        let own = std::env::current_exe().ok();
        locate(
            name,
            explicit,
            self.bin_dir.as_deref(),
            own.as_deref(),
            std::env::var_os("PATH").as_deref(),
        )
    }
}

/// Runs the command; the exit code.
pub fn run(args: &Args) -> Result<i32, PluginError> {
    let (core_command, passed) = match &args.command {
        Command::Validate(p) => ("validate", &p.args),
        Command::Select(p) => ("select", &p.args),
        Command::Explain(p) => ("explain", &p.args),
        Command::Render(render) => return run_render(args, render),
        Command::Why(why) => return run_cluster(|| run_why(why)),
        Command::Providers(cluster) => return run_cluster(|| run_providers(cluster)),
    };
    let core = args.find("airunway-core", args.core_binary.as_deref())?;
    status(Process::new(&core).arg(core_command).args(passed), &core)
}

/// Runs a cluster command on a runtime of its own.
fn run_cluster<F, Fut>(command: F) -> Result<i32, PluginError>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<i32, PluginError>>,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| PluginError::Start {
            binary: "the async runtime".into(),
            source,
        })?;
    runtime.block_on(command())
}

async fn run_why(args: &WhyArgs) -> Result<i32, PluginError> {
    let (client, namespace) = cluster::connect(
        args.cluster.context.as_deref(),
        args.cluster.namespace.as_deref(),
    )
    .await?;
    let inputs = cluster::why_inputs(&client, &namespace, &args.name).await?;
    let report = why::build(&inputs, jiff::Timestamp::now());
    print!(
        "{}",
        airunway_api::offline::format(&report, args.cluster.output, || report.human())?
    );
    Ok(if report.running() {
        exit::CLEAN
    } else {
        exit::FINDINGS
    })
}

async fn run_providers(args: &ClusterArgs) -> Result<i32, PluginError> {
    let (client, _) = cluster::connect(args.context.as_deref(), args.namespace.as_deref()).await?;
    let (ipcs, deployments) = cluster::providers_inputs(&client).await?;
    let rows = why::provider_rows(&ipcs, &deployments, jiff::Timestamp::now());
    print!(
        "{}",
        airunway_api::offline::format(&rows, args.output, || why::providers_table(&rows))?
    );
    Ok(exit::CLEAN)
}

fn status(process: &mut Process, binary: &Path) -> Result<i32, PluginError> {
    process
        .status()
        .map(|s| s.code().unwrap_or(exit::USAGE))
        .map_err(|source| PluginError::Start {
            binary: binary.display().to_string(),
            source,
        })
}

fn run_render(args: &Args, render: &RenderPassed) -> Result<i32, PluginError> {
    let (provider, engine) = match &render.provider {
        Some(provider) => (provider.clone(), None),
        None => selected(args, &render.args)?,
    };
    let binary = args.find(
        &format!("airunway-provider-{provider}"),
        args.provider_binary.as_deref(),
    )?;
    let mut process = Process::new(&binary);
    process.arg("render");
    if let Some(engine) = engine {
        process.arg(format!("--engine={engine}"));
    }
    status(process.args(&render.args), &binary)
}

/// The provider (and auto-selected engine) `airunway-core select` gives every deployment of
/// the inputs, when they all get the same.
fn selected(args: &Args, passed: &[OsString]) -> Result<(String, Option<String>), PluginError> {
    let core = args.find("airunway-core", args.core_binary.as_deref())?;
    // The inputs without an output flag of the caller's: select's JSON is read here.
    let inputs = without_output(passed);
    let output = Process::new(&core)
        .arg("select")
        .args(&inputs)
        .arg("--output=json")
        .output()
        .map_err(|source| PluginError::Start {
            binary: core.display().to_string(),
            source,
        })?;
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).map_err(|_| {
        PluginError::NoProvider(format!(
            "airunway-core select failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    })?;
    choose(&report)
}

/// The provider and engine of every deployment of a `select` report, when all agree (the
/// engine only when the core selected it: an explicit one is in the spec already).
pub fn choose(report: &serde_json::Value) -> Result<(String, Option<String>), PluginError> {
    let mut choices: Vec<(String, Option<String>)> = report["deployments"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| {
            let provider = d["provider"].as_str()?.to_string();
            let auto = d["engine_reason"].as_str() != Some("explicit engine selection");
            let engine = d["engine"].as_str().filter(|_| auto).map(str::to_string);
            Some((provider, engine))
        })
        .collect();
    choices.sort();
    choices.dedup();
    match choices.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(PluginError::NoProvider(
            "no deployment of the inputs gets a provider (see `kubectl airunway select`); name one with --provider".into(),
        )),
        _ => Err(PluginError::NoProvider(format!(
            "the deployments get different providers or engines ({}): render them one provider at a time with --provider",
            choices
                .iter()
                .map(|(p, e)| match e {
                    Some(e) => format!("{p} ({e})"),
                    None => p.clone(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// `args` without `-o X`, `--output X` and `--output=X`.
fn without_output(args: &[OsString]) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut skip = false;
    for arg in args {
        if skip {
            skip = false;
            continue;
        }
        let text = arg.to_string_lossy();
        if text == "-o" || text == "--output" {
            skip = true;
            continue;
        }
        if text.starts_with("--output=") || (text.starts_with("-o") && text.len() > 2) {
            continue;
        }
        out.push(arg.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn binaries_are_found_by_flag_then_directory_then_path() {
        let dir = std::env::temp_dir().join(format!("kubectl-airunway-{}", std::process::id()));
        let bin = dir.join("bin");
        let on_path = dir.join("path");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&on_path).unwrap();
        std::fs::write(on_path.join("airunway-core"), "").unwrap();
        let path = std::env::join_paths([&on_path]).unwrap();
        assert_eq!(
            locate("airunway-core", None, Some(&bin), None, Some(&path)).unwrap(),
            on_path.join("airunway-core")
        );
        std::fs::write(bin.join("airunway-core"), "").unwrap();
        assert_eq!(
            locate("airunway-core", None, Some(&bin), None, Some(&path)).unwrap(),
            bin.join("airunway-core")
        );
        assert_eq!(
            locate("x", Some(Path::new("/given")), None, None, None).unwrap(),
            PathBuf::from("/given")
        );
        assert_eq!(
            locate("airunway-provider-x", None, Some(&bin), None, Some(&path))
                .unwrap_err()
                .category(),
            "not_found"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn render_uses_the_one_provider_select_gives() {
        let report = json!({"deployments": [
            {"provider": "dynamo", "engine": "vllm", "engine_reason": "explicit engine selection"},
            {"provider": "dynamo", "engine": "vllm", "engine_reason": "explicit engine selection"},
        ]});
        assert_eq!(choose(&report).unwrap(), ("dynamo".to_string(), None));
        let auto = json!({"deployments": [{"provider": "kaito", "engine": "llamacpp", "engine_reason": "auto-selected: ..."}]});
        assert_eq!(
            choose(&auto).unwrap(),
            ("kaito".to_string(), Some("llamacpp".to_string()))
        );
        let mixed = json!({"deployments": [
            {"provider": "kaito", "engine": "llamacpp", "engine_reason": "explicit engine selection"},
            {"provider": "dynamo", "engine": "vllm", "engine_reason": "explicit engine selection"},
        ]});
        assert!(
            choose(&mixed)
                .unwrap_err()
                .to_string()
                .contains("dynamo, kaito")
        );
        assert_eq!(
            choose(&json!({"deployments": []})).unwrap_err().category(),
            "no_provider"
        );
    }

    #[test]
    fn the_output_flag_is_left_out_for_select() {
        let args: Vec<OsString> = ["a.yaml", "-o", "yaml", "--output=json", "-ojson", "-f", "b"]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(
            without_output(&args),
            ["a.yaml", "-f", "b"].map(OsString::from).to_vec()
        );
    }
}
