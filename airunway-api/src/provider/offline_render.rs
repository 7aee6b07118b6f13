//! `render`, the offline command every provider binary built on the SDK has
//! (`airunway-provider-<name> render FILE...`; docs/gitops.md): the upstream objects the
//! provider would apply for each ModelDeployment, from the same checked render the reconcile
//! runs ([`checked_render`](super::checked_render::checked_render): compatibility, the storage
//! gate, the declared overrides, the provider's render, the Pod Security check), as YAML or
//! JSON, or the message the deployment would show instead. No cluster is read.
//!
//! What the reconcile knows from the cluster is taken as follows: the deployment is defaulted
//! as the mutating webhook does; its runtime configuration is resolved among the
//! `RuntimeConfig`s and `ClusterRuntimeConfig`s of the inputs (none: no defaults apply); the
//! engine is `spec.engine.type`, else `--engine` (the core's choice, which `airunway-core
//! select` gives); the storage and model cache are taken as ready (`StorageReady` and
//! `ModelDownloaded` true); the upstream schema is the preferred version the provider declares;
//! [`Provider::prepare`] (I/O, e.g. resolving an image digest) is not run.

use serde::Serialize;
use serde_json::{Value, json};

use super::checked_render::checked_render;
use super::traits::{Provider, SchemaDetection, UpstreamSchema};
use crate::constants::condition_types;
use crate::offline::{self, Document, Finding, InputArgs, InputError, OutputFormat, Severity};
use crate::runtime_config as rc;
use crate::v1alpha1::{ClusterRuntimeConfig, EngineType, ModelDeployment, RuntimeConfig};

/// The offline commands of every provider binary.
#[derive(clap::Subcommand, Clone, Debug)]
pub enum SdkCommand {
    /// Render the upstream objects this provider would create for each ModelDeployment, with
    /// no cluster (docs/gitops.md).
    Render(RenderArgs),
}

/// The options of `render`.
#[derive(clap::Args, Clone, Debug)]
pub struct RenderArgs {
    /// The inputs and output format (`table` prints the objects as a YAML stream).
    #[command(flatten)]
    pub input: InputArgs,

    /// The engine of deployments whose `spec.engine.type` is not set (the core selects it in
    /// a cluster: `airunway-core select` says which).
    #[arg(long)]
    pub engine: Option<String>,
}

/// What `render` produced for one ModelDeployment.
#[derive(Clone, Debug, Serialize)]
pub struct RenderedDeployment {
    /// The file.
    pub file: String,
    /// The document's position in the file.
    pub document: usize,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// The objects to apply, the primary first (empty when refused).
    pub objects: Vec<Value>,
}

/// The result of `render`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RenderReport {
    /// The provider.
    pub provider: String,
    /// Every deployment rendered.
    pub deployments: Vec<RenderedDeployment>,
    /// Refusals (errors) and the render's notes (warnings).
    pub findings: Vec<Finding>,
}

/// The schema the provider renders for offline: a built-in kind's, else the first version
/// its schema adapters declare (with the first fingerprint it was tested against), else the
/// upstream kind's default version.
pub fn offline_schema<P: Provider>(provider: &P) -> SchemaDetection {
    let upstream = provider.upstream();
    if !upstream.from_crd {
        return provider.detect_schema(None);
    }
    let (version, fingerprint) = match provider.schema_adapters().first() {
        Some(adapter) => (
            adapter.version.to_string(),
            adapter
                .known_fingerprints
                .first()
                .map_or_else(|| "offline".to_string(), |f| f.to_string()),
        ),
        None => (upstream.default_version.clone(), "offline".to_string()),
    };
    SchemaDetection::Supported(UpstreamSchema {
        api_version: upstream.api_version(&version),
        version,
        fingerprint,
    })
}

/// Renders every ModelDeployment of `documents` that names this provider or none.
pub fn render_documents<P: Provider>(
    provider: &P,
    documents: &[Document],
    engine: Option<EngineType>,
    policy: &crate::pod_security::Policy,
) -> RenderReport {
    let namespaced: Vec<RuntimeConfig> = parsed(documents, "RuntimeConfig");
    let cluster: Vec<ClusterRuntimeConfig> = parsed(documents, "ClusterRuntimeConfig");
    let detection = offline_schema(provider);
    let mut report = RenderReport {
        provider: provider.name().to_string(),
        ..RenderReport::default()
    };
    for document in documents.iter().filter(|d| d.is("ModelDeployment")) {
        let refuse = |message: String| Finding::new(document, Severity::Error, "", message);
        let md = match deployment(provider, document, engine) {
            Ok(Some(md)) => md,
            Ok(None) => {
                report.findings.push(Finding::new(
                    document,
                    Severity::Warning,
                    "spec.provider.name",
                    format!(
                        "names another provider: not rendered by {}",
                        provider.name()
                    ),
                ));
                continue;
            }
            Err((field, message)) => {
                report
                    .findings
                    .push(Finding::new(document, Severity::Error, field, message));
                continue;
            }
        };
        let resolution = rc::resolve(
            &md,
            |namespace, name| {
                namespaced
                    .iter()
                    .find(|c| {
                        c.metadata.namespace.as_deref() == Some(namespace)
                            && c.metadata.name.as_deref() == Some(name)
                    })
                    .cloned()
                    .map(std::sync::Arc::new)
            },
            |name| {
                cluster
                    .iter()
                    .find(|c| c.metadata.name.as_deref() == Some(name))
                    .cloned()
                    .map(std::sync::Arc::new)
            },
        );
        if let rc::Resolution::NamedMissing(name) = &resolution {
            report.findings.push(Finding::new(
                document,
                Severity::Error,
                "spec.runtimeConfigName",
                format!(
                    "names {name:?}, which is neither a RuntimeConfig in the deployment's namespace nor a ClusterRuntimeConfig among the inputs"
                ),
            ));
            continue;
        }
        let effective = rc::apply(&md, resolution.defaults());
        let mut rendered = RenderedDeployment {
            file: document.file.clone(),
            document: document.index,
            namespace: md.metadata.namespace.clone().unwrap_or_default(),
            name: md.metadata.name.clone().unwrap_or_default(),
            objects: vec![],
        };
        match checked_render(
            provider,
            &effective.deployment,
            &effective.propagated_labels,
            &detection,
            policy,
        ) {
            Ok(checked) => {
                rendered.objects = checked.desired.into_iter().map(|d| d.object).collect();
                for warning in checked.warnings {
                    report.findings.push(Finding::new(
                        document,
                        Severity::Warning,
                        "",
                        format!("{}: {}", warning.reason, warning.message),
                    ));
                }
            }
            Err(hold) => report.findings.push(refuse(hold.status.message)),
        }
        report.deployments.push(rendered);
    }
    report
}

/// The deployment as the reconcile gives it to the render (defaulted, this provider and the
/// engine recorded, storage ready); `None` when it names another provider.
fn deployment<P: Provider>(
    provider: &P,
    document: &Document,
    engine: Option<EngineType>,
) -> Result<Option<ModelDeployment>, (&'static str, String)> {
    let mut object = document.value.clone();
    let name = document.name().to_string();
    if name.is_empty() {
        return Err(("metadata.name", "Required value".into()));
    }
    if let Some(spec) = object.get_mut("spec") {
        crate::resolve::apply_spec_defaults_named(spec, Some(&name));
    }
    let named = object["spec"]["provider"]["name"].as_str();
    if named.is_some_and(|n| n != provider.name()) {
        return Ok(None);
    }
    let engine = match object["spec"]["engine"]["type"].as_str() {
        Some(engine) => engine.to_string(),
        None => match engine {
            Some(engine) => engine.as_str().to_string(),
            None => {
                return Err((
                    "spec.engine.type",
                    "not set: give --engine (the core selects it in a cluster; `airunway-core select` says which)".into(),
                ));
            }
        },
    };
    let ready = |type_: &str| {
        json!({"type": type_, "status": "True", "reason": "Offline", "observedGeneration": 1,
            "message": "taken as ready by the offline render", "lastTransitionTime": "1970-01-01T00:00:00Z"})
    };
    object["metadata"]["generation"] = json!(1);
    object["status"] = json!({
        "provider": {"name": provider.name()},
        "engine": {"type": engine},
        "conditions": [ready(condition_types::STORAGE_READY), ready(condition_types::MODEL_DOWNLOADED)],
    });
    serde_json::from_value(object)
        .map(Some)
        .map_err(|e| ("spec", format!("does not parse: {e}")))
}

fn parsed<T: serde::de::DeserializeOwned>(documents: &[Document], kind: &str) -> Vec<T> {
    documents
        .iter()
        .filter(|d| d.is(kind))
        .filter_map(|d| serde_json::from_value(d.value.clone()).ok())
        .collect()
}

/// `report` as `format`: `table` is a YAML stream of the objects (each preceded by a comment
/// naming its deployment), then the findings as comments on stderr's behalf (`# file:doc: ...`).
pub fn format_report(report: &RenderReport, format: OutputFormat) -> Result<String, InputError> {
    if format != OutputFormat::Table {
        return offline::format(report, format, String::new);
    }
    let mut text = String::new();
    for deployment in &report.deployments {
        for object in &deployment.objects {
            text.push_str(&format!(
                "---\n# {}:{} {}/{}\n",
                deployment.file, deployment.document, deployment.namespace, deployment.name
            ));
            text.push_str(&offline::to_yaml(object)?);
        }
    }
    for finding in &report.findings {
        text.push_str(&format!("# {}\n", finding.line()));
    }
    Ok(text)
}

/// Runs `render` for `provider` and prints the result; the exit code ([`offline::exit`]).
pub fn run_render<P: Provider>(
    provider: &P,
    args: &RenderArgs,
    policy: &crate::pod_security::Policy,
) -> i32 {
    let engine = match args.engine.as_deref().map(parse_engine).transpose() {
        Ok(engine) => engine,
        Err(message) => {
            eprintln!("error: {message}");
            return offline::exit::USAGE;
        }
    };
    let documents = match args.input.read() {
        Ok(documents) => documents,
        Err(e) => {
            eprintln!("error: {e}");
            return offline::exit::USAGE;
        }
    };
    let report = render_documents(provider, &documents, engine, policy);
    match format_report(&report, args.input.output) {
        Ok(text) => {
            print!("{text}");
            offline::exit_code(&report.findings)
        }
        Err(e) => {
            eprintln!("error: {e}");
            offline::exit::USAGE
        }
    }
}

fn parse_engine(text: &str) -> Result<EngineType, String> {
    EngineType::ALL
        .into_iter()
        .find(|e| e.as_str() == text)
        .ok_or_else(|| {
            let known: Vec<&str> = EngineType::ALL.iter().map(|e| e.as_str()).collect();
            format!("--engine {text}: must be one of {}", known.join(", "))
        })
}
