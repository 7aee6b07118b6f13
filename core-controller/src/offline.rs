//! The core's offline commands (docs/gitops.md): `airunway-core validate`, `select` and
//! `explain` over manifests in files, with no cluster. Each calls the controllers' own pure
//! functions, so a verdict here is the verdict there:
//!
//! - `validate`: the CRD's checks ([`crate::crd_schema`]: schema defaults, types, bounds, CEL
//!   rules), the mutating webhook's defaults ([`admission::apply_defaults`]), then the
//!   validating webhook's decision ([`admission::model_deployment_verdict`],
//!   [`admission::provider_config_verdict`]) against the providers given (the shipped
//!   registrations by default, see [`shipped_providers`]), as on a create.
//! - `select`: for each valid ModelDeployment, the runtime configuration it gets from the
//!   inputs ([`crate::runtime_config::plan`]), then the core's decision ([`status::decide`]):
//!   its engine and its provider, and why.
//! - `explain`: `select` with what became of every provider
//!   ([`crate::selection::provider::ProviderOutcome`]).
//!
//! Providers read from files are taken as ready unless their `status` says otherwise (the
//! shipped registrations always are): offline there is no heartbeat to age.

use std::path::PathBuf;
use std::sync::Arc;

use airunway_api::offline::{
    self, Document, Finding, InputArgs, InputError, OutputFormat, Severity, exit,
};
use airunway_api::runtime_config as rc;
use airunway_api::v1alpha1::{
    ClusterRuntimeConfig, InferenceProviderConfig, ModelDeployment, RuntimeConfig,
};
use serde::Serialize;
use serde_json::{Value, json};

use crate::selection::provider::{EXPLICIT_PROVIDER_REASON, ProviderOutcome};
use crate::selection::{EngineDecision, ProviderDecision, RuleSet, provider_views};
use crate::status;
use crate::webhook::admission;

/// The shipped providers' registrations (the specs they register; checked against the
/// providers' own registrations by each provider's tests), by name.
const SHIPPED: [(&str, &str); 5] = [
    (
        "dynamo",
        include_str!("../tests/fixtures/shipped-providers/dynamo.yaml"),
    ),
    (
        "kaito",
        include_str!("../tests/fixtures/shipped-providers/kaito.yaml"),
    ),
    (
        "kuberay",
        include_str!("../tests/fixtures/shipped-providers/kuberay.yaml"),
    ),
    (
        "llmd",
        include_str!("../tests/fixtures/shipped-providers/llmd.yaml"),
    ),
    (
        "vllm",
        include_str!("../tests/fixtures/shipped-providers/vllm.yaml"),
    ),
];

/// The offline subcommands of `airunway-core`.
#[derive(clap::Subcommand, Clone, Debug)]
pub enum Command {
    /// Check manifests as the cluster would on a create: the CRD's rules and the webhooks'.
    Validate(OfflineArgs),
    /// Say which engine and provider each ModelDeployment gets, and why.
    Select(OfflineArgs),
    /// `select`, with the reason each provider was or was not chosen.
    Explain(OfflineArgs),
}

/// The options of the offline subcommands.
#[derive(clap::Args, Clone, Debug)]
pub struct OfflineArgs {
    /// The inputs and output format.
    #[command(flatten)]
    pub input: InputArgs,

    /// Files or directories holding the InferenceProviderConfigs to decide with (default: the
    /// shipped providers' registrations); InferenceProviderConfigs among the inputs are
    /// added to them.
    #[arg(long = "providers", value_name = "FILE")]
    pub providers: Vec<PathBuf>,

    /// Decide as a core with the provider selector on (`false`: as
    /// `--enable-provider-selector=false`).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub enable_provider_selector: bool,
}

/// Why an offline command could not run (exit code [`exit::USAGE`]).
#[derive(Debug, thiserror::Error)]
pub enum OfflineError {
    /// An input could not be read.
    #[error(transparent)]
    Input(#[from] InputError),
    /// A provider registration does not parse as an InferenceProviderConfig.
    #[error("{location}: not an InferenceProviderConfig: {message}")]
    Provider {
        /// `file:document`.
        location: String,
        /// The parser's message.
        message: String,
    },
}

impl OfflineError {
    /// A short, static label.
    pub fn category(&self) -> &'static str {
        match self {
            OfflineError::Input(e) => e.category(),
            OfflineError::Provider { .. } => "provider",
        }
    }
}

/// The shipped providers' registrations, ready (as a running provider reports itself).
pub fn shipped_providers() -> Result<Vec<InferenceProviderConfig>, OfflineError> {
    let mut providers = Vec::new();
    for (name, text) in SHIPPED {
        for document in offline::parse_documents(&format!("shipped:{name}"), text)? {
            providers.push(provider_config(&document)?);
        }
    }
    Ok(providers)
}

/// `document` as an InferenceProviderConfig; without a `status` it is ready.
fn provider_config(document: &Document) -> Result<InferenceProviderConfig, OfflineError> {
    let mut value = document.value.clone();
    if value.get("status").is_none_or(Value::is_null) {
        value["status"] = json!({"ready": true});
    }
    serde_json::from_value(value).map_err(|e| OfflineError::Provider {
        location: document.location(),
        message: e.to_string(),
    })
}

/// Runs `command` and prints its result; the exit code ([`exit`]).
pub fn run(command: &Command) -> i32 {
    let (args, render): (&OfflineArgs, fn(&Report, OutputFormat) -> _) = match command {
        Command::Validate(args) => (args, render_validate),
        Command::Select(args) => (args, render_select),
        Command::Explain(args) => (args, render_explain),
    };
    let result = load(args).map(|(documents, providers)| {
        let report = match command {
            Command::Validate(_) => validate(&documents, &providers, args.enable_provider_selector),
            Command::Select(_) | Command::Explain(_) => {
                select(&documents, &providers, args.enable_provider_selector)
            }
        };
        let code = report.exit_code();
        (render(&report, args.input.output), code)
    });
    match result {
        Ok((Ok(text), code)) => {
            print!("{text}");
            code
        }
        Ok((Err(e), _)) => {
            eprintln!("error: {e}");
            exit::USAGE
        }
        Err(e) => {
            eprintln!("error: {e}");
            exit::USAGE
        }
    }
}

/// The documents and the providers to decide with: the `--providers` files (default: the
/// shipped ones) and the InferenceProviderConfigs among the inputs (an input replaces a
/// provider of the same name).
pub fn load(
    args: &OfflineArgs,
) -> Result<(Vec<Document>, Vec<InferenceProviderConfig>), OfflineError> {
    let documents = args.input.read()?;
    let mut providers = if args.providers.is_empty() {
        shipped_providers()?
    } else {
        let mut providers = Vec::new();
        for document in offline::read_documents(&args.providers)? {
            if document.is("InferenceProviderConfig") {
                providers.push(provider_config(&document)?);
            }
        }
        providers
    };
    for document in documents.iter().filter(|d| d.is("InferenceProviderConfig")) {
        // An invalid one is reported by `validate`; it is left out here.
        if let Ok(ipc) = provider_config(document) {
            providers.retain(|p| p.metadata.name != ipc.metadata.name);
            providers.push(ipc);
        }
    }
    Ok((documents, providers))
}

/// The result of an offline command.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// Every finding, in input order.
    pub findings: Vec<Finding>,
    /// The decisions for the ModelDeployments (`select` and `explain`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deployments: Vec<Decision>,
}

impl Report {
    /// [`exit::FINDINGS`] when a finding is an error, else [`exit::CLEAN`].
    pub fn exit_code(&self) -> i32 {
        offline::exit_code(&self.findings)
    }
}

/// What the core decides for one ModelDeployment.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Decision {
    /// The file.
    pub file: String,
    /// The document's position in the file.
    pub document: usize,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// Whether it passed `validate`.
    pub valid: bool,
    /// The runtime configuration applied (`None`: none).
    pub runtime_config: Option<String>,
    /// The engine (`status.engine.type`).
    pub engine: Option<String>,
    /// Why (`status.engine.selectedReason`).
    pub engine_reason: Option<String>,
    /// The provider (`status.provider.name`).
    pub provider: Option<String>,
    /// Why (`status.provider.selectedReason`), or why none.
    pub provider_reason: Option<String>,
    /// What became of each provider.
    pub providers: Vec<ProviderExplanation>,
}

/// Why one provider was or was not chosen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProviderExplanation {
    /// The provider.
    pub name: String,
    /// `chosen`, `named`, `not_named`, `not_available`, `incapable`, `no_rule_matched`,
    /// `lower_priority`, `tie_lost`, `not_considered`.
    pub outcome: String,
    /// The reason, for people.
    pub reason: String,
    /// Selection rules of this provider that failed to evaluate (CEL errors; they count as
    /// false).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rule_errors: Vec<String>,
}

/// The findings of `validate` for every document (documents of other API groups are skipped).
pub fn validate(
    documents: &[Document],
    providers: &[InferenceProviderConfig],
    selector_enabled: bool,
) -> Report {
    let findings = documents
        .iter()
        .flat_map(|d| validate_document(d, providers, selector_enabled).1)
        .collect();
    Report {
        findings,
        deployments: vec![],
    }
}

/// One document as the API server and the webhooks would take it on a create: the object
/// defaulted (CRD defaults, then the mutating webhook's) and the findings.
pub fn validate_document(
    document: &Document,
    providers: &[InferenceProviderConfig],
    selector_enabled: bool,
) -> (Value, Vec<Finding>) {
    let mut object = document.value.clone();
    let (api_version, kind) = document.kind();
    if !object.is_object() {
        return (
            object,
            vec![Finding::new(
                document,
                Severity::Error,
                "",
                "not a Kubernetes object (a YAML mapping with apiVersion and kind)",
            )],
        );
    }
    if !api_version.starts_with(&format!("{}/", airunway_api::constants::GROUP))
        || crate::crd_schema::schema_of(kind).is_none()
    {
        return (object, vec![]);
    }
    let finding =
        |severity, field: String, message: String| Finding::new(document, severity, field, message);
    if api_version != format!("{}/v1alpha1", airunway_api::constants::GROUP) {
        return (
            object,
            vec![finding(
                Severity::Error,
                "apiVersion".into(),
                format!("no matches for kind \"{kind}\" in version \"{api_version}\""),
            )],
        );
    }
    if document.name().is_empty() {
        return (
            object,
            vec![finding(
                Severity::Error,
                "metadata.name".into(),
                "Required value: name or generateName is required".into(),
            )],
        );
    }
    crate::crd_schema::apply_schema_defaults(kind, &mut object);
    if kind == "ModelDeployment" {
        admission::apply_defaults(&mut object);
    }
    let schema_errors = crate::crd_schema::check(kind, &object);
    if !schema_errors.is_empty() {
        // The API server stops here: no validating webhook sees an object its schema refuses.
        let findings = schema_errors
            .into_iter()
            .map(|e| finding(Severity::Error, e.field, e.message))
            .collect();
        return (object, findings);
    }
    let verdict = match kind {
        "ModelDeployment" => {
            admission::model_deployment_verdict(&object, None, providers, selector_enabled)
        }
        "InferenceProviderConfig" => {
            admission::provider_config_verdict(object.get("spec").unwrap_or(&Value::Null))
        }
        _ => admission::AdmissionVerdict::default(),
    };
    let mut findings: Vec<Finding> = verdict
        .errors
        .into_iter()
        .map(|e| finding(Severity::Error, e.field, e.message))
        .collect();
    findings.extend(
        verdict
            .warnings
            .into_iter()
            .map(|w| finding(Severity::Warning, String::new(), w)),
    );
    (object, findings)
}

/// `validate`, then the core's decision for every valid ModelDeployment.
pub fn select(
    documents: &[Document],
    providers: &[InferenceProviderConfig],
    selector_enabled: bool,
) -> Report {
    let views = provider_views(providers);
    let rules = RuleSet::default();
    let namespaced: Vec<Arc<RuntimeConfig>> = parsed(documents, "RuntimeConfig");
    let cluster: Vec<Arc<ClusterRuntimeConfig>> = parsed(documents, "ClusterRuntimeConfig");
    let mut report = Report::default();
    for document in documents {
        let (object, findings) = validate_document(document, providers, selector_enabled);
        let valid = !findings.iter().any(|f| f.severity == Severity::Error);
        report.findings.extend(findings);
        if !document.is("ModelDeployment") {
            continue;
        }
        let mut decision = Decision {
            file: document.file.clone(),
            document: document.index,
            namespace: object["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            name: document.name().to_string(),
            valid,
            ..Decision::default()
        };
        let md = match serde_json::from_value::<ModelDeployment>(object) {
            Ok(md) if valid => md,
            _ => {
                decision.provider_reason = Some("invalid: see the validation errors".into());
                report.deployments.push(decision);
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
            },
            |name| {
                cluster
                    .iter()
                    .find(|c| c.metadata.name.as_deref() == Some(name))
                    .cloned()
            },
        );
        let effective = match crate::runtime_config::plan(&md, &resolution) {
            crate::runtime_config::Plan::Proceed {
                effective, source, ..
            } => {
                decision.runtime_config = source;
                effective.deployment
            }
            other => {
                let message = other.condition().message.clone();
                report.findings.push(Finding::new(
                    document,
                    Severity::Error,
                    "spec.runtimeConfigName",
                    message.clone(),
                ));
                decision.provider_reason = Some(message);
                report.deployments.push(decision);
                continue;
            }
        };
        let core = status::decide(&effective, &views, selector_enabled, &rules);
        if let Some(engine) = &core.engine {
            decision.engine = engine.engine().map(|e| e.to_string());
            decision.engine_reason = Some(match engine {
                EngineDecision::Explicit(_) => {
                    crate::selection::engine::EXPLICIT_ENGINE_REASON.to_string()
                }
                EngineDecision::Auto { reason, .. } => reason.clone(),
                EngineDecision::Unavailable { message } => message.clone(),
            });
        }
        for error in &core.validation_errors {
            report.findings.push(Finding::new(
                document,
                Severity::Error,
                error.field.clone(),
                error.message.clone(),
            ));
        }
        match core.provider.as_ref() {
            Some(ProviderDecision::Explicit { provider }) => {
                decision.provider = Some(provider.clone());
                decision.provider_reason = Some(EXPLICIT_PROVIDER_REASON.to_string());
                let registered = views.iter().any(|v| &v.name == provider);
                if !registered {
                    report.findings.push(Finding::new(
                        document,
                        Severity::Error,
                        "spec.provider.name",
                        format!(
                            "provider '{provider}' is not among the providers given: the deployment would stay Pending until it registers"
                        ),
                    ));
                }
            }
            Some(ProviderDecision::Selected {
                provider, reason, ..
            }) => {
                decision.provider = Some(provider.clone());
                decision.provider_reason = Some(reason.clone());
            }
            Some(other) => {
                let message = other
                    .failure_message()
                    .unwrap_or_else(|| "no provider".to_string());
                report.findings.push(Finding::new(
                    document,
                    Severity::Error,
                    "spec.provider.name",
                    message.clone(),
                ));
                decision.provider_reason = Some(message);
            }
            None => {}
        }
        if let Some((name, Some(availability))) = &core.provider_availability
            && !availability.is_available()
        {
            report.findings.push(Finding::new(
                document,
                Severity::Warning,
                "spec.provider.name",
                format!("provider {name} is {}", availability.describe()),
            ));
        }
        decision.providers = explanations(&core, &views, &effective);
        report.deployments.push(decision);
    }
    report
}

/// The documents of `kind` that parse as `T`.
fn parsed<T: serde::de::DeserializeOwned>(documents: &[Document], kind: &str) -> Vec<Arc<T>> {
    documents
        .iter()
        .filter(|d| d.is(kind))
        .filter_map(|d| serde_json::from_value(d.value.clone()).ok())
        .map(Arc::new)
        .collect()
}

/// What became of every provider in `core`.
fn explanations(
    core: &status::CoreDecision,
    views: &[crate::selection::ProviderView],
    md: &ModelDeployment,
) -> Vec<ProviderExplanation> {
    let rule_errors = |name: &str| -> Vec<String> {
        core.rule_errors
            .iter()
            .filter(|e| e.provider == name)
            .map(|e| format!("rule {} ({}): {}", e.index, e.condition, e.message))
            .collect()
    };
    if !core.provider_outcomes.is_empty() {
        return core
            .provider_outcomes
            .iter()
            .map(|(name, outcome)| ProviderExplanation {
                name: name.clone(),
                outcome: outcome.category().to_string(),
                reason: match outcome {
                    ProviderOutcome::NoRuleMatched if !rule_errors(name).is_empty() => format!(
                        "{} (a rule failed to evaluate and counted as false)",
                        outcome.describe()
                    ),
                    _ => outcome.describe(),
                },
                rule_errors: rule_errors(name),
            })
            .collect();
    }
    let named = md.spec.explicit_provider();
    views
        .iter()
        .map(|view| {
            let (outcome, reason) = match (named, core.provider.as_ref()) {
                (Some(name), _) if name == view.name => (
                    "named",
                    "named in spec.provider.name (selection rules are not evaluated)".to_string(),
                ),
                (Some(name), _) => ("not_named", format!("spec.provider.name names {name}")),
                _ if !view.availability.is_available() => {
                    ("not_available", view.availability.describe())
                }
                (None, Some(decision)) => (
                    "not_considered",
                    decision
                        .failure_message()
                        .unwrap_or_else(|| "no rule was evaluated".to_string()),
                ),
                (None, None) => (
                    "not_considered",
                    "the deployment is invalid: nothing is selected".to_string(),
                ),
            };
            ProviderExplanation {
                name: view.name.clone(),
                outcome: outcome.to_string(),
                reason,
                rule_errors: vec![],
            }
        })
        .collect()
}

/// `validate`'s output: one line per finding (nothing when every document passed).
pub fn render_validate(report: &Report, format: OutputFormat) -> Result<String, InputError> {
    offline::format(report, format, || findings_text(&report.findings))
}

fn findings_text(findings: &[Finding]) -> String {
    findings.iter().map(|f| format!("{}\n", f.line())).collect()
}

/// `select`'s output: a table of the deployments, then the findings.
pub fn render_select(report: &Report, format: OutputFormat) -> Result<String, InputError> {
    offline::format(report, format, || {
        let mut rows = vec![
            ["FILE", "NAMESPACE", "NAME", "ENGINE", "PROVIDER", "REASON"]
                .map(String::from)
                .to_vec(),
        ];
        for d in &report.deployments {
            rows.push(vec![
                format!("{}:{}", d.file, d.document),
                d.namespace.clone(),
                d.name.clone(),
                d.engine.clone().unwrap_or_default(),
                d.provider.clone().unwrap_or_default(),
                d.provider_reason.clone().unwrap_or_default(),
            ]);
        }
        let mut text = offline::table(&rows);
        text.push_str(&findings_text(&report.findings));
        text
    })
}

/// `explain`'s output: per deployment, its engine and provider, then every provider with the
/// reason it was or was not chosen; then the findings.
pub fn render_explain(report: &Report, format: OutputFormat) -> Result<String, InputError> {
    offline::format(report, format, || {
        let mut text = String::new();
        for d in &report.deployments {
            text.push_str(&format!(
                "{}:{} {}/{}\n  engine:   {} ({})\n  provider: {} ({})\n",
                d.file,
                d.document,
                d.namespace,
                d.name,
                d.engine.as_deref().unwrap_or("-"),
                d.engine_reason.as_deref().unwrap_or("-"),
                d.provider.as_deref().unwrap_or("-"),
                d.provider_reason.as_deref().unwrap_or("-"),
            ));
            if let Some(config) = &d.runtime_config {
                text.push_str(&format!("  runtime configuration: {config}\n"));
            }
            let mut rows = vec![vec![
                "  PROVIDER".to_string(),
                "OUTCOME".to_string(),
                "REASON".to_string(),
            ]];
            for p in &d.providers {
                rows.push(vec![
                    format!("  {}", p.name),
                    p.outcome.clone(),
                    p.reason.clone(),
                ]);
                for error in &p.rule_errors {
                    rows.push(vec![String::from("  "), "cel_error".into(), error.clone()]);
                }
            }
            if !d.providers.is_empty() {
                text.push_str(&offline::table(&rows));
            }
            text.push('\n');
        }
        text.push_str(&findings_text(&report.findings));
        text
    })
}
