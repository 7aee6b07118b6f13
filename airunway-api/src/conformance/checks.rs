//! The checks, run in order against the live cluster, and the run around them (setup and
//! cleanup).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
    ValidationDirective,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::{Value, json};

use super::audit;
use super::cluster::{self, FIELD_MANAGER, wait_until};
use super::data::{ProviderData, ScaleMode, StatusFixture};
use super::fields;
use super::process::{HEARTBEAT_INTERVAL, Launch, ProviderProcess};
use super::report::{Outcome, Report};
use super::{ConformanceError, Options};
use crate::constants::{annotations, condition_types, event_reasons, finalizers, labels, reasons};
use crate::v1alpha1::{InferenceProviderConfig, ModelDeployment};

/// The checks, in the order they run (their names in the report).
pub const CHECKS: [&str; 16] = [
    "registration",
    "accept",
    "assignment",
    "dry-run-strict",
    "idempotence",
    "drift",
    "scale",
    "pause",
    "status-fixtures",
    "identity-change",
    "compatibility",
    "deletion",
    "deletion-without-crd",
    "finalizer-timeout",
    "permissions",
    "stale-detection",
];

/// The annotation the idempotence check sets on a deployment to make the provider reconcile
/// it once more without changing its spec.
const POKE: &str = "conformance.airunway.ai/poke";

/// The provider a deployment of the assignment check names (never registered).
const OTHER_PROVIDER: &str = "conformance-absent";

/// A passing or skipped check (`Err`: failed, with the message).
enum Verdict {
    Pass(String),
    Skip(String),
}

type Checked = Result<Verdict, String>;

/// The upstream object of the deployment the lifecycle checks work on.
#[derive(Clone)]
struct Upstream {
    api: Api<DynamicObject>,
    /// `<apiVersion> <kind>`.
    kind: String,
    name: String,
    /// Its CRD, when the kind comes from one.
    crd: Option<String>,
}

struct Run<'a> {
    options: &'a Options,
    client: Client,
    data: ProviderData,
    fixtures: Vec<StatusFixture>,
    namespace: String,
    user: String,
    manager: String,
    finalizer: String,
    started_at: Timestamp,
    audit_offset: u64,
    process: Option<ProviderProcess>,
    report: Report,
    mds: Api<DynamicObject>,
    accepted: Vec<String>,
    primary: Option<Upstream>,
}

pub(super) async fn run(options: &Options) -> Result<Report, ConformanceError> {
    let data = ProviderData::load(&options.data)?;
    let fixtures = data.fixtures(&options.data)?;
    let admin = match &options.kubeconfig {
        Some(path) => Kubeconfig::read_from(path),
        None => Kubeconfig::read(),
    }
    .map_err(|e| ConformanceError::Kubeconfig(e.to_string()))?;
    let client = client_for(admin.clone()).await?;
    let namespace = options.namespace.clone();
    let created_namespace = ensure_namespace(&client, &namespace).await?;
    let base = cluster::adjust_base(&cluster::read_manifests(&options.manifests)?, &namespace);
    cluster::apply_all(&client, &base, &namespace).await?;

    let temp = tempfile::tempdir().map_err(|source| ConformanceError::Write {
        path: std::env::temp_dir(),
        source,
    })?;
    let work: PathBuf = options
        .work_dir
        .clone()
        .unwrap_or_else(|| temp.path().to_path_buf());
    std::fs::create_dir_all(&work).map_err(|source| ConformanceError::Write {
        path: work.clone(),
        source,
    })?;
    let (kubeconfig, user) = match &options.provider_kubeconfig {
        Some(path) => (path.clone(), whoami(path).await?),
        None => {
            let account = match &data.service_account {
                Some(account) => account.clone(),
                None => single_service_account(&base, &options.manifests)?,
            };
            let path = cluster::service_account_kubeconfig(
                &client,
                &admin,
                &namespace,
                &account,
                Duration::from_secs(3600),
                &work,
            )
            .await?;
            (path, format!("system:serviceaccount:{namespace}:{account}"))
        }
    };
    let started_at = Timestamp::now();
    let audit_offset = match &options.audit_log {
        Some(path) => audit::length(path)?,
        None => 0,
    };
    let mut args = data.args.clone();
    if let Some(seconds) = data.finalizer_timeout_seconds {
        args.push(format!("--finalizer-timeout={seconds}s"));
    }
    let process = match &options.provider_binary {
        Some(binary) => Some(
            ProviderProcess::start(
                &Launch {
                    binary,
                    kubeconfig: &kubeconfig,
                    namespace: &namespace,
                    args: &args,
                    env: &data.env,
                    log: work.join(format!("{}-provider.log", data.provider)),
                },
                options.timeout,
            )
            .await?,
        ),
        None => None,
    };
    let mds = Api::namespaced_with(
        client.clone(),
        &namespace,
        &ApiResource::erase::<ModelDeployment>(&()),
    );
    let mut run = Run {
        options,
        client,
        manager: format!("{}-provider", data.provider),
        finalizer: finalizers::provider(&data.provider),
        report: Report::new(&data.provider),
        data,
        fixtures,
        namespace,
        user,
        started_at,
        audit_offset,
        process,
        mds,
        accepted: Vec::new(),
        primary: None,
    };
    run.all().await;
    run.cleanup(&base, created_namespace).await;
    drop(temp);
    Ok(run.report)
}

macro_rules! check {
    ($run:ident, $name:literal, $method:ident) => {{
        let start = Instant::now();
        let result = $run.$method().await;
        $run.record($name, start, result);
    }};
}

impl Run<'_> {
    async fn all(&mut self) {
        check!(self, "registration", registration);
        check!(self, "accept", accept);
        check!(self, "assignment", assignment);
        check!(self, "dry-run-strict", dry_run_strict);
        check!(self, "idempotence", idempotence);
        check!(self, "drift", drift);
        check!(self, "scale", scale);
        check!(self, "pause", pause);
        check!(self, "status-fixtures", status_fixtures);
        check!(self, "identity-change", identity_change);
        check!(self, "compatibility", compatibility);
        check!(self, "deletion", deletion);
        check!(self, "deletion-without-crd", deletion_without_crd);
        check!(self, "finalizer-timeout", finalizer_timeout);
        check!(self, "permissions", permissions);
        check!(self, "stale-detection", stale_detection);
    }

    fn record(&mut self, name: &str, start: Instant, result: Checked) {
        let (outcome, message) = match result {
            Ok(Verdict::Pass(m)) => (Outcome::Passed, m),
            Ok(Verdict::Skip(m)) => (Outcome::Skipped, m),
            Err(m) => (Outcome::Failed, m),
        };
        self.report.record(name, outcome, start.elapsed(), message);
    }

    fn primary(&self) -> Result<(String, Upstream), String> {
        match (self.accepted.first(), &self.primary) {
            (Some(name), Some(upstream)) => Ok((name.clone(), upstream.clone())),
            _ => Err("no deployment was accepted (see check accept)".into()),
        }
    }

    async fn md(&self, name: &str) -> Result<Value, String> {
        self.mds
            .get(name)
            .await
            .map(|o| to_value(&o))
            .map_err(|e| format!("reading ModelDeployment {name}: {e}"))
    }

    async fn patch_md(&self, name: &str, patch: Value) -> Result<Value, String> {
        self.mds
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(|o| to_value(&o))
            .map_err(|e| format!("patching ModelDeployment {name} with {patch}: {e}"))
    }

    async fn create_md(&self, manifest: &Value) -> Result<String, String> {
        let mut manifest = manifest.clone();
        manifest["metadata"]["namespace"] = json!(self.namespace);
        if !manifest["spec"]["provider"].is_object() {
            manifest["spec"]["provider"] = json!({});
        }
        if manifest["spec"]["provider"]["name"].is_null() {
            manifest["spec"]["provider"]["name"] = json!(self.data.provider);
        }
        let name = manifest["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let object: DynamicObject =
            serde_json::from_value(manifest).map_err(|e| format!("ModelDeployment {name}: {e}"))?;
        self.mds
            .create(&PostParams::default(), &object)
            .await
            .map_err(|e| format!("creating ModelDeployment {name}: {e}"))?;
        Ok(name)
    }

    /// Waits for `accept` on deployment `name`; on timeout, fails with `what` and the
    /// deployment's status.
    async fn wait_md(
        &self,
        name: &str,
        what: &str,
        timeout: Duration,
        accept: impl Fn(&Value) -> bool,
    ) -> Result<Value, String> {
        let waited = wait_until(what, timeout, || async {
            let md = self.md(name).await.ok()?;
            accept(&md).then_some(md)
        })
        .await;
        match waited {
            Ok(md) => Ok(md),
            Err(e) => {
                let seen = self
                    .md(name)
                    .await
                    .map(|md| summary(&md))
                    .unwrap_or_else(|e| e);
                Err(format!("{e}; ModelDeployment {name}: {seen}"))
            }
        }
    }

    async fn live(&self, upstream: &Upstream) -> Result<Option<Value>, String> {
        upstream
            .api
            .get_opt(&upstream.name)
            .await
            .map(|o| o.map(|o| to_value(&o)))
            .map_err(|e| format!("reading {} {}: {e}", upstream.kind, upstream.name))
    }

    async fn audit(&self) -> Result<Option<Vec<audit::Request>>, String> {
        match &self.options.audit_log {
            Some(path) => audit::read(path, self.audit_offset, &self.user, self.started_at)
                .map(Some)
                .map_err(|e| e.to_string()),
            None => Ok(None),
        }
    }

    // --- the checks ---

    async fn registration(&mut self) -> Checked {
        let ipcs: Api<InferenceProviderConfig> = Api::all(self.client.clone());
        let name = self.data.provider.clone();
        let ipc = wait_until(
            &format!("InferenceProviderConfig {name} with status.ready=true and a heartbeat"),
            self.options.timeout,
            || async {
                let ipc = ipcs.get_opt(&name).await.ok().flatten()?;
                let status = ipc.status.as_ref()?;
                (status.ready == Some(true) && status.last_heartbeat.is_some()).then_some(ipc)
            },
        )
        .await
        .map_err(|e| e.to_string())?;
        let status = ipc.status.clone().unwrap_or_default();
        let mut problems = Vec::new();
        let want = format!("{name}-provider:{}", self.data.version);
        self.report.provider_version = status.version.clone();
        self.report.upstream.crd_version = status.upstream_crd_version.clone();
        self.report.upstream.schema_fingerprint = status.upstream_schema_hash.clone();
        if status.version.as_deref() != Some(want.as_str()) {
            problems.push(format!(
                "status.version is {:?}, expected {want}",
                status.version
            ));
        }
        let engines: Vec<String> = ipc
            .spec
            .capabilities
            .as_ref()
            .map(|c| {
                c.engine_capabilities()
                    .iter()
                    .map(|e| e.name.as_str().to_string())
                    .collect()
            })
            .unwrap_or_default();
        if !self.data.registration.engines.is_empty() && engines != self.data.registration.engines {
            problems.push(format!(
                "engines {engines:?}, expected {:?}",
                self.data.registration.engines
            ));
        }
        if let Some(version) = &self.data.registration.upstream_crd_version
            && status.upstream_crd_version.as_ref() != Some(version)
        {
            problems.push(format!(
                "status.upstreamCrdVersion {:?}, expected {version}",
                status.upstream_crd_version
            ));
        }
        if status.upstream_schema_hash.is_none() {
            problems.push("no status.upstreamSchemaHash (schema fingerprint)".into());
        }
        // The probe: its endpoint in the registration, GetInfo and the health service.
        let endpoint = ipc
            .spec
            .probe
            .as_ref()
            .and_then(|p| p.endpoint.clone())
            .unwrap_or_default();
        if let Some(process) = &self.process {
            let expected = format!("127.0.0.1:{}", process.probe_port);
            if endpoint != expected {
                problems.push(format!(
                    "spec.probe.endpoint {endpoint:?}, expected {expected}"
                ));
            }
            if !super::process::serving(process.probe_port).await {
                problems.push("the probe's gRPC health service does not answer SERVING".into());
            }
        }
        match get_info(&endpoint).await {
            Ok((info_name, info_version)) => {
                if info_name != name || info_version != want {
                    problems.push(format!(
                        "GetInfo answers {info_name} {info_version}, expected {name} {want}"
                    ));
                }
            }
            Err(e) => problems.push(format!("GetInfo on {endpoint}: {e}")),
        }
        // The heartbeat's cadence, from two successive beats.
        let beat = |after: Option<Timestamp>| {
            let ipcs = ipcs.clone();
            let name = name.clone();
            async move {
                wait_until(
                    "a later heartbeat",
                    HEARTBEAT_INTERVAL * 5 + Duration::from_secs(5),
                    || async {
                        let ipc = ipcs.get_opt(&name).await.ok().flatten()?;
                        let at = ipc.status?.last_heartbeat?.0;
                        (after.is_none_or(|a| at > a)).then_some(at)
                    },
                )
                .await
            }
        };
        let cadence = match beat(None).await {
            Ok(first) => match beat(Some(first)).await {
                Ok(second) => match beat(Some(second)).await {
                    Ok(third) => Some(third.duration_since(second).as_secs_f64()),
                    Err(e) => {
                        problems.push(e.to_string());
                        None
                    }
                },
                Err(e) => {
                    problems.push(e.to_string());
                    None
                }
            },
            Err(e) => {
                problems.push(e.to_string());
                None
            }
        };
        if let (Some(cadence), Some(_)) = (cadence, &self.process) {
            let limit = (HEARTBEAT_INTERVAL * 3).as_secs_f64();
            if cadence > limit {
                problems.push(format!(
                    "heartbeats {cadence:.0} s apart with --heartbeat-interval={}s",
                    HEARTBEAT_INTERVAL.as_secs()
                ));
            }
        }
        // The core takes it as available (and so is running).
        let available = wait_until(
            "Available=True from the core",
            self.options.timeout,
            || async {
                let ipc = ipcs.get_opt(&name).await.ok().flatten()?;
                ipc.status?
                    .conditions?
                    .iter()
                    .any(|c| c.type_ == condition_types::AVAILABLE && c.is_true())
                    .then_some(())
            },
        )
        .await;
        if available.is_err() {
            problems.push(
                "the core did not mark it Available=True (is the AI Runway core running?)".into(),
            );
        }
        if problems.is_empty() {
            Ok(Verdict::Pass(format!(
                "{want}, engines {engines:?}, upstream {} (schema {}), probe GetInfo and health answer, heartbeat every {} s, Available",
                status.upstream_crd_version.as_deref().unwrap_or("-"),
                status.upstream_schema_hash.as_deref().unwrap_or("-"),
                cadence.map_or("?".to_string(), |c| format!("{c:.0}")),
            )))
        } else {
            Err(problems.join("; "))
        }
    }

    async fn accept(&mut self) -> Checked {
        let mut seen = Vec::new();
        for accepted in self.data.accept.clone() {
            let name = self.create_md(&accepted.deployment).await?;
            let phases = if accepted.phases.is_empty() {
                vec!["Deploying".to_string(), "Running".to_string()]
            } else {
                accepted.phases.clone()
            };
            let finalizer = self.finalizer.clone();
            let md = self
                .wait_md(
                    &name,
                    &format!(
                        "the finalizer {finalizer}, ProviderCompatible=True, status.workload.upstream and a phase in {phases:?}"
                    ),
                    self.options.timeout,
                    |md| {
                        has_finalizer(md, &finalizer)
                            && condition_is(md, condition_types::PROVIDER_COMPATIBLE, "True")
                            && md["status"]["workload"]["upstream"]["name"].is_string()
                            && phases.iter().any(|p| md["status"]["phase"] == p.as_str())
                    },
                )
                .await?;
            let reference = &md["status"]["workload"]["upstream"];
            let (api_version, kind, object) = (
                reference["apiVersion"].as_str().unwrap_or_default(),
                reference["kind"].as_str().unwrap_or_default(),
                reference["name"].as_str().unwrap_or_default(),
            );
            let (resource, capabilities) = cluster::resource_of(&self.client, api_version, kind)
                .await
                .map_err(|e| e.to_string())?;
            let upstream = Upstream {
                api: cluster::api_for(&self.client, &resource, &capabilities, &self.namespace),
                kind: format!("{api_version} {kind}"),
                name: object.to_string(),
                crd: crd_of(&self.client, &resource).await,
            };
            let live = self.live(&upstream).await?.ok_or_else(|| {
                format!("{kind} {object} named in status.workload does not exist")
            })?;
            let uid = md["metadata"]["uid"].as_str().unwrap_or_default();
            let owned = live["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|refs| {
                    refs.iter()
                        .any(|r| r["uid"] == uid && r["controller"] == true)
                });
            if !owned {
                return Err(format!(
                    "{kind} {object} has no controller owner reference to ModelDeployment {name}"
                ));
            }
            seen.push(format!(
                "{name} {} ({kind} {object})",
                md["status"]["phase"].as_str().unwrap_or_default()
            ));
            if self.primary.is_none() {
                self.report.upstream.kind = Some(upstream.kind.clone());
                self.primary = Some(upstream);
            }
            self.accepted.push(name);
        }
        Ok(Verdict::Pass(format!(
            "{} accepted: {}",
            seen.len(),
            seen.join(", ")
        )))
    }

    async fn assignment(&mut self) -> Checked {
        let (_, upstream) = self.primary()?;
        let mut manifest = self.data.accept[0].deployment.clone();
        let name = "conformance-other".to_string();
        manifest["metadata"] = json!({"name": name});
        manifest["spec"]["provider"] = json!({"name": OTHER_PROVIDER});
        self.create_md(&manifest).await?;
        self.wait_md(
            &name,
            "the core's ProviderSelected condition",
            self.options.timeout,
            |md| condition(md, condition_types::PROVIDER_SELECTED).is_some(),
        )
        .await?;
        tokio::time::sleep(self.options.quiet_window).await;
        let md = self.md(&name).await?;
        let mut problems = Vec::new();
        if has_finalizer(&md, &self.finalizer) {
            problems.push(format!("it has the finalizer {}", self.finalizer));
        }
        let other = Upstream {
            name: name.clone(),
            ..upstream.clone()
        };
        if self.live(&other).await?.is_some() {
            problems.push(format!("a {} {name} exists", upstream.kind));
        }
        if md["status"]["provider"]["resourceName"].is_string() {
            problems.push("status.provider.resourceName is set".into());
        }
        let _ = self.mds.delete(&name, &DeleteParams::default()).await;
        if problems.is_empty() {
            Ok(Verdict::Pass(format!(
                "ModelDeployment {name} naming provider {OTHER_PROVIDER} (not registered): no finalizer, no object, no status from it after {} s",
                self.options.quiet_window.as_secs()
            )))
        } else {
            Err(format!(
                "ModelDeployment {name} names provider {OTHER_PROVIDER}, yet {}",
                problems.join(", ")
            ))
        }
    }

    async fn dry_run_strict(&mut self) -> Checked {
        let (_, upstream) = self.primary()?;
        let live = self
            .live(&upstream)
            .await?
            .ok_or_else(|| format!("{} {} is gone", upstream.kind, upstream.name))?;
        let applied = fields::applied_by(&live, &self.manager).ok_or_else(|| {
            format!(
                "{} {} has no fields applied (server-side apply) by field manager {}",
                upstream.kind, upstream.name, self.manager
            )
        })?;
        let mut params = PatchParams::apply(&self.manager).force();
        params.dry_run = true;
        params.field_validation = Some(ValidationDirective::Strict);
        upstream
            .api
            .patch(&upstream.name, &params, &Patch::Apply(&applied))
            .await
            .map_err(|e| {
                format!(
                    "the fields {} applied to {} {}, applied again with dryRun=All and fieldValidation=Strict, are refused: {e}",
                    self.manager, upstream.kind, upstream.name
                )
            })?;
        let mut message = format!(
            "the fields {} applied to {} {} pass server-side dry-run with fieldValidation=Strict",
            self.manager, upstream.kind, upstream.name
        );
        if let Some(requests) = self.audit().await? {
            let plural = upstream
                .api
                .resource_url()
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_string();
            let writes: Vec<&audit::Request> = requests
                .iter()
                .filter(|r| r.is_write() && r.resource == plural)
                .collect();
            let invalid: Vec<String> = writes
                .iter()
                .filter(|r| matches!(r.code, 400 | 422))
                .map(|r| r.describe())
                .collect();
            if !invalid.is_empty() {
                return Err(format!(
                    "the API server refused the provider's writes to {plural} as invalid: {}",
                    invalid.join(", ")
                ));
            }
            let strict = writes
                .iter()
                .filter(|r| r.uri.contains("fieldValidation=Strict"))
                .count();
            message.push_str(&format!(
                "; audit log: {} writes to {plural}, none refused as invalid, {strict} with fieldValidation=Strict",
                writes.len()
            ));
        }
        Ok(Verdict::Pass(message))
    }

    /// Waits until the provider has written nothing but keep-alives for 3 s (audit log), or
    /// the deployment's and the upstream object's resourceVersions stay put for 3 s.
    async fn settle(&self, name: &str, upstream: &Upstream) -> Result<(), String> {
        let quiet = Duration::from_secs(3);
        let start = Instant::now();
        let mut last = (String::new(), String::new());
        let mut since = Instant::now();
        let mut recent = Vec::new();
        while start.elapsed() < self.options.timeout {
            if let Some(requests) = self.audit().await? {
                let now = Timestamp::now();
                let from = now - jiff::SignedDuration::from_secs(3);
                recent = audit::writes_between(&requests, from, now)
                    .iter()
                    .map(|r| r.describe())
                    .collect();
                if recent.is_empty() && start.elapsed() >= quiet {
                    return Ok(());
                }
            } else {
                let md = self.md(name).await?;
                let live = self.live(upstream).await?.unwrap_or_default();
                let now = (
                    md["metadata"]["resourceVersion"].to_string(),
                    live["metadata"]["resourceVersion"].to_string(),
                );
                if now != last {
                    last = now;
                    since = Instant::now();
                } else if since.elapsed() >= quiet {
                    return Ok(());
                }
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        Err(if recent.is_empty() {
            format!(
                "ModelDeployment {name} or {} {} kept changing for {} s with nothing to change (no audit log to tell who wrote)",
                upstream.kind,
                upstream.name,
                self.options.timeout.as_secs()
            )
        } else {
            format!(
                "the provider never settled: {} writes by {} in the last 3 s of {} s with nothing to change (expected none besides heartbeat and lease): {}",
                recent.len(),
                self.user,
                self.options.timeout.as_secs(),
                recent
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }

    async fn idempotence(&mut self) -> Checked {
        let (name, upstream) = self.primary()?;
        self.settle(&name, &upstream).await?;
        let before = self.live(&upstream).await?.unwrap_or_default();
        let poked_at = Timestamp::now();
        let poked = self
            .patch_md(
                &name,
                json!({"metadata": {"annotations": {POKE: poked_at.to_string()}}}),
            )
            .await?;
        tokio::time::sleep(self.options.quiet_window).await;
        let window = self.options.quiet_window.as_secs();
        match self.audit().await? {
            Some(requests) => {
                let writes = audit::writes_between(&requests, poked_at, Timestamp::now());
                if writes.is_empty() {
                    Ok(Verdict::Pass(format!(
                        "no write by {} in the {window} s after a reconcile was triggered (audit log; heartbeat and lease excluded)",
                        self.user
                    )))
                } else {
                    Err(format!(
                        "{} writes by {} in the {window} s after a reconcile was triggered with nothing to change (expected none besides heartbeat and lease): {}",
                        writes.len(),
                        self.user,
                        writes
                            .iter()
                            .take(5)
                            .map(|r| r.describe())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                }
            }
            None => {
                let md = self.md(&name).await?;
                let after = self.live(&upstream).await?.unwrap_or_default();
                let rv = |v: &Value| v["metadata"]["resourceVersion"].to_string();
                if rv(&before) != rv(&after) || rv(&poked) != rv(&md) {
                    Err(format!(
                        "a reconcile with nothing to change wrote: resourceVersion of {} {} {} -> {}, of ModelDeployment {name} {} -> {}",
                        upstream.kind,
                        upstream.name,
                        rv(&before),
                        rv(&after),
                        rv(&poked),
                        rv(&md)
                    ))
                } else {
                    Ok(Verdict::Pass(format!(
                        "weaker form (no audit log): resourceVersions of ModelDeployment {name} and {} {} unchanged {window} s after a reconcile was triggered",
                        upstream.kind, upstream.name
                    )))
                }
            }
        }
    }

    async fn drift(&mut self) -> Checked {
        let (name, upstream) = self.primary()?;
        upstream
            .api
            .patch(
                &upstream.name,
                &PatchParams::apply(FIELD_MANAGER),
                &Patch::Merge(
                    json!({"metadata": {"labels": {labels::MANAGED_BY: "conformance-drift"}}}),
                ),
            )
            .await
            .map_err(|e| format!("editing {} {}: {e}", upstream.kind, upstream.name))?;
        let start = Instant::now();
        wait_until(
            &format!(
                "the label {} of {} {} to be restored",
                labels::MANAGED_BY,
                upstream.kind,
                upstream.name
            ),
            self.options.timeout,
            || async {
                let live = self.live(&upstream).await.ok().flatten()?;
                (live["metadata"]["labels"][labels::MANAGED_BY] == labels::MANAGED_BY_VALUE)
                    .then_some(())
            },
        )
        .await
        .map_err(|e| format!("a direct edit was not reverted: {e}"))?;
        let restored = start.elapsed();
        let events: Api<Event> = Api::namespaced(self.client.clone(), &self.namespace);
        wait_until(
            &format!(
                "a {} event on ModelDeployment {name}",
                event_reasons::DRIFT_DETECTED
            ),
            self.options.timeout,
            || async {
                events
                    .list(&ListParams::default())
                    .await
                    .ok()?
                    .items
                    .iter()
                    .any(|e| {
                        e.reason.as_deref() == Some(event_reasons::DRIFT_DETECTED)
                            && e.regarding.as_ref().and_then(|r| r.name.as_deref())
                                == Some(name.as_str())
                    })
                    .then_some(())
            },
        )
        .await
        .map_err(|e| format!("the edit was reverted but {e}"))?;
        Ok(Verdict::Pass(format!(
            "an edited label of {} {} restored in {:.1} s with a {} event",
            upstream.kind,
            upstream.name,
            restored.as_secs_f64(),
            event_reasons::DRIFT_DETECTED
        )))
    }

    /// What the provider applied to `live` (its managed fields), to tell whether it applied a
    /// change.
    fn applied(&self, live: &Value) -> String {
        fields::applied_by(live, &self.manager)
            .map(|v| v.to_string())
            .unwrap_or_default()
    }

    async fn scale(&mut self) -> Checked {
        let scale = self.data.scale.clone();
        if scale.mode == ScaleMode::Unsupported {
            return Ok(Verdict::Skip(
                "the provider declares scale unsupported".into(),
            ));
        }
        let (name, upstream) = self.primary()?;
        let before = self
            .live(&upstream)
            .await?
            .ok_or_else(|| format!("{} {} is gone", upstream.kind, upstream.name))?;
        let replicas = scale.replicas.unwrap_or(2);
        let md_before = self.md(&name).await?;
        self.patch_md(&name, json!({"spec": {"scaling": {"replicas": replicas}}}))
            .await?;
        match scale.mode {
            ScaleMode::Held => {
                let message = scale.message.unwrap_or_default();
                self.wait_md(
                    &name,
                    &format!("the hold message {message:?}"),
                    self.options.timeout,
                    |md| {
                        md["status"]["message"].as_str() == Some(message.as_str())
                            || md["status"]["conditions"].as_array().is_some_and(|cs| {
                                cs.iter()
                                    .any(|c| c["message"].as_str() == Some(message.as_str()))
                            })
                    },
                )
                .await?;
                // Back to what it was, and the hold lifts (the later checks need the
                // deployment served again).
                let shows = |md: &Value| {
                    md["status"]["message"].as_str() == Some(message.as_str())
                        || md["status"]["conditions"].as_array().is_some_and(|cs| {
                            cs.iter()
                                .any(|c| c["message"].as_str() == Some(message.as_str()))
                        })
                };
                self.patch_md(
                    &name,
                    json!({"spec": {"scaling": {"replicas": md_before["spec"]["scaling"]["replicas"]}}}),
                )
                .await?;
                self.wait_md(
                    &name,
                    "the hold to lift once scaling.replicas was set back",
                    self.options.timeout,
                    |md| !shows(md),
                )
                .await?;
                Ok(Verdict::Pass(format!(
                    "replicas {replicas} held with {message:?}; lifted when set back"
                )))
            }
            _ => {
                let hash = self.applied(&before);
                let after = wait_until(
                    &format!(
                        "{} {} updated for replicas {replicas}",
                        upstream.kind, upstream.name
                    ),
                    self.options.timeout,
                    || async {
                        let live = self.live(&upstream).await.ok().flatten()?;
                        (self.applied(&live) != hash).then_some(live)
                    },
                )
                .await
                .map_err(|e| e.to_string())?;
                if after["metadata"]["uid"] != before["metadata"]["uid"] {
                    return Err(format!(
                        "scaling to {replicas} recreated {} {} (new uid) instead of updating it in place",
                        upstream.kind, upstream.name
                    ));
                }
                Ok(Verdict::Pass(format!(
                    "replicas {replicas} applied in place (same uid)"
                )))
            }
        }
    }

    async fn pause(&mut self) -> Checked {
        if self.data.scale.mode != ScaleMode::InPlace {
            return Ok(Verdict::Skip(
                "needs a spec change applied in place (scale mode inPlace)".into(),
            ));
        }
        let (name, upstream) = self.primary()?;
        let md = self
            .patch_md(
                &name,
                json!({"metadata": {"annotations": {annotations::RECONCILE_PAUSED: "true"}}}),
            )
            .await?;
        let replicas = md["spec"]["scaling"]["replicas"].as_i64().unwrap_or(1) + 1;
        let before = self.live(&upstream).await?.unwrap_or_default();
        self.patch_md(&name, json!({"spec": {"scaling": {"replicas": replicas}}}))
            .await?;
        tokio::time::sleep(self.options.quiet_window).await;
        let during = self.live(&upstream).await?.unwrap_or_default();
        if self.applied(&during) != self.applied(&before) {
            return Err(format!(
                "replicas {replicas} were applied to {} {} while {} was set",
                upstream.kind,
                upstream.name,
                annotations::RECONCILE_PAUSED
            ));
        }
        self.patch_md(
            &name,
            json!({"metadata": {"annotations": {annotations::RECONCILE_PAUSED: null}}}),
        )
        .await?;
        let hash = self.applied(&before);
        wait_until(
            "the change to be applied once the pause annotation was removed",
            self.options.timeout,
            || async {
                let live = self.live(&upstream).await.ok().flatten()?;
                (self.applied(&live) != hash).then_some(())
            },
        )
        .await
        .map_err(|e| e.to_string())?;
        Ok(Verdict::Pass(format!(
            "nothing applied for {} s while paused; replicas {replicas} applied once resumed",
            self.options.quiet_window.as_secs()
        )))
    }

    async fn status_fixtures(&mut self) -> Checked {
        if self.fixtures.is_empty() {
            return Ok(Verdict::Skip("no status fixtures declared".into()));
        }
        let (name, upstream) = self.primary()?;
        if upstream.crd.is_none() {
            return Ok(Verdict::Skip(format!(
                "{} is a built-in kind: kube-controller-manager owns its status (the pod-state suite covers it)",
                upstream.kind
            )));
        }
        let mut problems = Vec::new();
        let per_fixture = self.options.timeout.min(Duration::from_secs(20));
        for fixture in self.fixtures.clone() {
            let patch: json_patch::Patch = serde_json::from_value(
                json!([{"op": "add", "path": "/status", "value": fixture.upstream_status}]),
            )
            .map_err(|e| format!("fixture {}: {e}", fixture.name))?;
            let params = PatchParams::default();
            let written = match upstream
                .api
                .patch_status(&upstream.name, &params, &Patch::<()>::Json(patch.clone()))
                .await
            {
                Err(kube::Error::Api(e)) if e.code == 404 => upstream
                    .api
                    .patch(&upstream.name, &params, &Patch::<()>::Json(patch))
                    .await
                    .map(|_| ()),
                other => other.map(|_| ()),
            };
            written.map_err(|e| {
                format!(
                    "writing fixture {} to {} {}: {e}",
                    fixture.name, upstream.kind, upstream.name
                )
            })?;
            let seen = self
                .wait_md(
                    &name,
                    &format!("fixture {}", fixture.name),
                    per_fixture,
                    |md| {
                        md["status"]["phase"] == fixture.phase.as_str()
                            && condition(md, condition_types::READY)
                                .is_some_and(|c| c["reason"] == fixture.reason.as_str())
                    },
                )
                .await;
            if let Err(e) = seen {
                problems.push(format!(
                    "fixture {}: expected phase {} and Ready reason {}: {e}",
                    fixture.name, fixture.phase, fixture.reason
                ));
            }
        }
        if problems.is_empty() {
            Ok(Verdict::Pass(format!(
                "{} fixtures gave their phase and Ready reason",
                self.fixtures.len()
            )))
        } else {
            Err(problems.join("; "))
        }
    }

    async fn identity_change(&mut self) -> Checked {
        let Some(change) = self.data.identity_change.clone() else {
            return Ok(Verdict::Skip("no identity change declared".into()));
        };
        let (name, upstream) = self.primary()?;
        let before = self
            .live(&upstream)
            .await?
            .ok_or_else(|| format!("{} {} is gone", upstream.kind, upstream.name))?;
        let uid = before["metadata"]["uid"].clone();
        self.patch_md(&name, change.clone()).await?;
        wait_until(
            &format!(
                "{} {} recreated (a new uid) after {change}",
                upstream.kind, upstream.name
            ),
            self.options.timeout,
            || async {
                let live = self.live(&upstream).await.ok().flatten()?;
                (live["metadata"]["uid"] != uid).then_some(())
            },
        )
        .await
        .map_err(|e| e.to_string())?;
        Ok(Verdict::Pass(format!(
            "{change} recreated {} {} (new uid)",
            upstream.kind, upstream.name
        )))
    }

    async fn compatibility(&mut self) -> Checked {
        if self.data.refuse.is_empty() {
            return Ok(Verdict::Skip("no refused deployments declared".into()));
        }
        let mut problems = Vec::new();
        let mut names = Vec::new();
        for refused in self.data.refuse.clone() {
            let name = self.create_md(&refused.deployment).await?;
            let refusing = refused.condition.as_str();
            let md = self
                .wait_md(
                    &name,
                    &format!("{refusing}=False"),
                    self.options.timeout,
                    |md| condition_is(md, refusing, "False"),
                )
                .await;
            match md {
                Ok(md) => {
                    let message = condition(&md, refusing)
                        .and_then(|c| c["message"].as_str())
                        .unwrap_or_default()
                        .to_string();
                    if message != refused.message {
                        problems.push(format!(
                            "{name}: message {message:?}, expected {:?}",
                            refused.message
                        ));
                    }
                }
                Err(e) => problems.push(e),
            }
            if let Some(upstream) = &self.primary {
                let other = Upstream {
                    name: name.clone(),
                    ..upstream.clone()
                };
                if self.live(&other).await?.is_some() {
                    problems.push(format!(
                        "{name}: refused, yet a {} {name} exists",
                        upstream.kind
                    ));
                }
            }
            let _ = self.mds.delete(&name, &DeleteParams::default()).await;
            names.push(name);
        }
        if problems.is_empty() {
            Ok(Verdict::Pass(format!(
                "{} refused with their exact messages and no object: {}",
                names.len(),
                names.join(", ")
            )))
        } else {
            Err(problems.join("; "))
        }
    }

    async fn deletion(&mut self) -> Checked {
        let (_, upstream) = self.primary()?;
        let mut problems = Vec::new();
        let start = Instant::now();
        for name in self.accepted.clone() {
            let object = Upstream {
                name: name.clone(),
                ..upstream.clone()
            };
            let before = self.live(&object).await?;
            if let Err(e) = self.mds.delete(&name, &DeleteParams::default()).await {
                problems.push(format!("deleting {name}: {e}"));
                continue;
            }
            let gone = wait_until(
                &format!("ModelDeployment {name} to be deleted"),
                self.options.timeout,
                || async {
                    match self.mds.get_opt(&name).await {
                        Ok(None) => Some(()),
                        _ => None,
                    }
                },
            )
            .await;
            if let Err(e) = gone {
                let md = self.md(&name).await.unwrap_or_default();
                problems.push(format!("{e} (finalizers {})", md["metadata"]["finalizers"]));
            }
            if let Some(before) = before {
                let uid = before["metadata"]["uid"].clone();
                let removed = wait_until(
                    &format!("{} {name} to be deleted", upstream.kind),
                    self.options.timeout,
                    || async {
                        match self.live(&object).await {
                            Ok(None) => Some(()),
                            Ok(Some(live)) if live["metadata"]["uid"] != uid => Some(()),
                            _ => None,
                        }
                    },
                )
                .await;
                if let Err(e) = removed {
                    let live = self.live(&object).await.ok().flatten().unwrap_or_default();
                    let terminating = live["metadata"]["deletionTimestamp"].is_string();
                    problems.push(format!(
                        "{e}: it is still there{} (finalizers {})",
                        if terminating { ", Terminating" } else { "" },
                        live["metadata"]["finalizers"]
                    ));
                }
            }
        }
        // Released by the provider's cleanup, not by its finalizer timeout.
        let events: Api<Event> = Api::namespaced(self.client.clone(), &self.namespace);
        if let Ok(list) = events.list(&ListParams::default()).await {
            for name in &self.accepted {
                let timed_out = list.items.iter().any(|e| {
                    e.reason.as_deref() == Some(event_reasons::FINALIZER_TIMEOUT)
                        && e.regarding.as_ref().and_then(|r| r.name.as_deref())
                            == Some(name.as_str())
                });
                if timed_out {
                    problems.push(format!(
                        "ModelDeployment {name} was released only by the finalizer timeout (a {} event): the provider did not finish its cleanup",
                        event_reasons::FINALIZER_TIMEOUT
                    ));
                }
            }
        }
        if problems.is_empty() {
            Ok(Verdict::Pass(format!(
                "{} deployments and their {} objects deleted in {:.1} s",
                self.accepted.len(),
                upstream.kind,
                start.elapsed().as_secs_f64()
            )))
        } else {
            Err(problems.join("; "))
        }
    }

    async fn deletion_without_crd(&mut self) -> Checked {
        let (_, upstream) = self.primary()?;
        let Some(crd_name) = upstream.crd.clone() else {
            return Ok(Verdict::Skip(format!(
                "{} is a built-in kind (no CRD to delete)",
                upstream.kind
            )));
        };
        if !self.data.crd_deletion {
            return Ok(Verdict::Skip(
                "crdDeletion not declared (the CRD may be shared)".into(),
            ));
        }
        let mut manifest = self.data.accept[0].deployment.clone();
        let name = "conformance-no-crd".to_string();
        manifest["metadata"] = json!({"name": name});
        self.create_md(&manifest).await?;
        let finalizer = self.finalizer.clone();
        self.wait_md(
            &name,
            "the finalizer and status.workload.upstream",
            self.options.timeout,
            |md| {
                has_finalizer(md, &finalizer)
                    && md["status"]["workload"]["upstream"]["name"].is_string()
            },
        )
        .await?;
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        let crd = crds
            .get(&crd_name)
            .await
            .map_err(|e| format!("reading CRD {crd_name}: {e}"))?;
        let mut saved = to_value(&crd);
        saved["metadata"] = json!({"name": crd_name, "labels": saved["metadata"]["labels"], "annotations": saved["metadata"]["annotations"]});
        if let Some(map) = saved.as_object_mut() {
            map.remove("status");
        }
        crds.delete(&crd_name, &DeleteParams::default())
            .await
            .map_err(|e| format!("deleting CRD {crd_name}: {e}"))?;
        let gone = wait_until(
            &format!("CRD {crd_name} to be deleted"),
            self.options.timeout,
            || async { matches!(crds.get_opt(&crd_name).await, Ok(None)).then_some(()) },
        )
        .await;
        let start = Instant::now();
        let released = match gone {
            Ok(()) => {
                let _ = self.mds.delete(&name, &DeleteParams::default()).await;
                wait_until(
                    &format!("ModelDeployment {name} to be deleted while CRD {crd_name} is absent"),
                    self.options.timeout,
                    || async { matches!(self.mds.get_opt(&name).await, Ok(None)).then_some(()) },
                )
                .await
                .map_err(|e| {
                    format!("{e} (the provider kept its finalizer {finalizer} without the CRD)")
                })
            }
            Err(e) => Err(e.to_string()),
        };
        let took = start.elapsed();
        // The CRD back, as it was, for the checks after this one.
        let restored = crds
            .patch(
                &crd_name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&saved),
            )
            .await
            .map_err(|e| format!("re-creating CRD {crd_name}: {e}"));
        let established = wait_until(
            &format!("CRD {crd_name} Established again"),
            self.options.timeout,
            || async {
                let crd = crds.get_opt(&crd_name).await.ok().flatten()?;
                crd.status?
                    .conditions?
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
                    .then_some(())
            },
        )
        .await;
        released?;
        restored?;
        established.map_err(|e| e.to_string())?;
        // The provider sees the CRD again (its detection runs with the heartbeat) before the
        // next check.
        let back = Timestamp::now() + jiff::SignedDuration::from_secs(2);
        let ipcs: Api<InferenceProviderConfig> = Api::all(self.client.clone());
        let provider = self.data.provider.clone();
        wait_until(
            "the provider to report ready with the CRD back",
            self.options.timeout,
            || async {
                let status = ipcs.get_opt(&provider).await.ok().flatten()?.status?;
                (status.ready == Some(true) && status.last_heartbeat?.0 >= back).then_some(())
            },
        )
        .await
        .map_err(|e| e.to_string())?;
        Ok(Verdict::Pass(format!(
            "with CRD {crd_name} deleted, a deleted deployment was released in {:.1} s; the CRD re-created",
            took.as_secs_f64()
        )))
    }

    async fn finalizer_timeout(&mut self) -> Checked {
        let Some(seconds) = self.data.finalizer_timeout_seconds else {
            return Ok(Verdict::Skip("no finalizerTimeoutSeconds declared".into()));
        };
        if self.process.is_none() {
            return Ok(Verdict::Skip(
                "the provider was not started by the runner (no --provider-binary)".into(),
            ));
        }
        let (_, upstream) = self.primary()?;
        let mut manifest = self.data.accept[0].deployment.clone();
        let name = "conformance-stuck".to_string();
        manifest["metadata"] = json!({"name": name});
        self.create_md(&manifest).await?;
        let finalizer = self.finalizer.clone();
        let md = self
            .wait_md(
                &name,
                "the finalizer and status.workload.upstream",
                self.options.timeout,
                |md| {
                    has_finalizer(md, &finalizer)
                        && md["status"]["workload"]["upstream"]["name"].is_string()
                },
            )
            .await?;
        // The "upstream operator" never finishes deleting its object.
        let object = Upstream {
            name: md["status"]["workload"]["upstream"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            ..upstream.clone()
        };
        let stuck = "conformance.airunway.ai/stuck";
        object
            .api
            .patch(
                &object.name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"finalizers": [stuck]}})),
            )
            .await
            .map_err(|e| {
                format!(
                    "adding a finalizer to {} {}: {e}",
                    upstream.kind, object.name
                )
            })?;
        let start = Instant::now();
        self.mds
            .delete(&name, &DeleteParams::default())
            .await
            .map_err(|e| format!("deleting ModelDeployment {name}: {e}"))?;
        let timeout = Duration::from_secs(seconds);
        let released = wait_until(
            &format!("ModelDeployment {name} released by the finalizer timeout ({seconds} s)"),
            self.options.timeout + timeout,
            || async {
                match self.mds.get_opt(&name).await {
                    Ok(None) => Some(()),
                    _ => None,
                }
            },
        )
        .await;
        let took = start.elapsed();
        let events: Api<Event> = Api::namespaced(self.client.clone(), &self.namespace);
        let event = wait_until(
            &format!("a {} event", event_reasons::FINALIZER_TIMEOUT),
            Duration::from_secs(10),
            || async {
                events
                    .list(&ListParams::default())
                    .await
                    .ok()?
                    .items
                    .iter()
                    .any(|e| {
                        e.reason.as_deref() == Some(event_reasons::FINALIZER_TIMEOUT)
                            && e.regarding.as_ref().and_then(|r| r.name.as_deref())
                                == Some(name.as_str())
                    })
                    .then_some(())
            },
        )
        .await;
        // Let the object go.
        let _ = object
            .api
            .patch(
                &object.name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"finalizers": null}})),
            )
            .await;
        released.map_err(|e| e.to_string())?;
        if took < timeout {
            return Err(format!(
                "released after {:.1} s, before the {seconds} s timeout, while its {} was still there",
                took.as_secs_f64(),
                upstream.kind
            ));
        }
        event.map_err(|e| format!("released, but no {e}"))?;
        Ok(Verdict::Pass(format!(
            "a deletion whose {} never went was released after {:.1} s (timeout {seconds} s) with a {} event",
            upstream.kind,
            took.as_secs_f64(),
            event_reasons::FINALIZER_TIMEOUT
        )))
    }

    async fn permissions(&mut self) -> Checked {
        let Some(requests) = self.audit().await? else {
            return Ok(Verdict::Skip(
                "no audit log: 403s cannot be counted (pass --audit-log)".into(),
            ));
        };
        let refused = audit::forbidden(&requests);
        if refused.is_empty() {
            Ok(Verdict::Pass(format!(
                "{} requests by {} with its base's RBAC, none refused (403)",
                requests.len(),
                self.user
            )))
        } else {
            Err(format!(
                "{} requests by {} refused (403) with its base's RBAC: {}",
                refused.len(),
                self.user,
                refused
                    .iter()
                    .take(5)
                    .map(|r| r.describe())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        }
    }

    async fn stale_detection(&mut self) -> Checked {
        let Some(process) = self.process.as_mut() else {
            return Ok(Verdict::Skip(
                "the provider was not started by the runner (no --provider-binary)".into(),
            ));
        };
        process.kill().await;
        let start = Instant::now();
        let ipcs: Api<InferenceProviderConfig> = Api::all(self.client.clone());
        let name = self.data.provider.clone();
        let reason = wait_until(
            "the core to mark the killed provider Available=False",
            self.options.timeout,
            || async {
                let ipc = ipcs.get_opt(&name).await.ok().flatten()?;
                let available = ipc
                    .status?
                    .conditions?
                    .into_iter()
                    .find(|c| c.type_ == condition_types::AVAILABLE)?;
                (!available.is_true()).then_some(available.reason.unwrap_or_default())
            },
        )
        .await
        .map_err(|e| e.to_string())?;
        let expected = [reasons::PROBE_FAILED, reasons::PROVIDER_STALE];
        if !expected.contains(&reason.as_str()) {
            return Err(format!(
                "Available=False with reason {reason}, expected one of {expected:?}"
            ));
        }
        Ok(Verdict::Pass(format!(
            "killed; Available=False ({reason}) after {:.1} s",
            start.elapsed().as_secs_f64()
        )))
    }

    async fn cleanup(&mut self, base: &[Value], created_namespace: bool) {
        if let Some(process) = self.process.as_mut() {
            process.kill().await;
        }
        // What a broken provider left behind: finalizers on deployments and upstream objects.
        if let Ok(list) = self.mds.list(&ListParams::default()).await {
            for md in list.items {
                if let Some(name) = md.metadata.name.clone() {
                    let _ = self
                        .mds
                        .patch(
                            &name,
                            &PatchParams::default(),
                            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
                        )
                        .await;
                    let _ = self.mds.delete(&name, &DeleteParams::default()).await;
                }
            }
        }
        if let Some(upstream) = &self.primary
            && let Ok(list) = upstream.api.list(&ListParams::default()).await
        {
            for object in list.items {
                if object.metadata.deletion_timestamp.is_some()
                    && let Some(name) = object.metadata.name.clone()
                {
                    let _ = upstream
                        .api
                        .patch(
                            &name,
                            &PatchParams::default(),
                            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
                        )
                        .await;
                }
            }
        }
        if self.process.is_some() {
            let ipcs: Api<InferenceProviderConfig> = Api::all(self.client.clone());
            let _ = ipcs
                .delete(&self.data.provider, &DeleteParams::default())
                .await;
        }
        cluster::delete_cluster_rbac(&self.client, base).await;
        if created_namespace {
            let namespaces: Api<Namespace> = Api::all(self.client.clone());
            let _ = namespaces
                .delete(&self.namespace, &DeleteParams::default())
                .await;
        }
    }
}

async fn client_for(config: Kubeconfig) -> Result<Client, ConformanceError> {
    let config = Config::from_custom_kubeconfig(config, &KubeConfigOptions::default())
        .await
        .map_err(|e| ConformanceError::Kubeconfig(e.to_string()))?;
    Client::try_from(config).map_err(|e| ConformanceError::Kubeconfig(e.to_string()))
}

/// The user `kubeconfig` authenticates as (SelfSubjectReview).
async fn whoami(kubeconfig: &Path) -> Result<String, ConformanceError> {
    let config = Kubeconfig::read_from(kubeconfig)
        .map_err(|e| ConformanceError::Kubeconfig(e.to_string()))?;
    let client = client_for(config).await?;
    let api: Api<SelfSubjectReview> = Api::all(client);
    let review = api
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .map_err(|source| ConformanceError::Api {
            action: "asking who the provider's kubeconfig is (SelfSubjectReview)".into(),
            source,
        })?;
    review
        .status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username)
        .ok_or_else(|| ConformanceError::Setup("SelfSubjectReview returned no user".into()))
}

/// Creates `namespace` when missing; whether it did.
async fn ensure_namespace(client: &Client, namespace: &str) -> Result<bool, ConformanceError> {
    let api: Api<Namespace> = Api::all(client.clone());
    let exists = api
        .get_opt(namespace)
        .await
        .map_err(|source| ConformanceError::Api {
            action: format!("reading namespace {namespace}"),
            source,
        })?
        .is_some();
    if exists {
        return Ok(false);
    }
    let object: Namespace = serde_json::from_value(json!({"metadata": {"name": namespace}}))
        .map_err(|e| ConformanceError::Setup(e.to_string()))?;
    api.create(&PostParams::default(), &object)
        .await
        .map_err(|source| ConformanceError::Api {
            action: format!("creating namespace {namespace}"),
            source,
        })?;
    Ok(true)
}

fn single_service_account(base: &[Value], path: &Path) -> Result<String, ConformanceError> {
    let accounts: Vec<&str> = base
        .iter()
        .filter(|o| o["kind"] == "ServiceAccount")
        .filter_map(|o| o["metadata"]["name"].as_str())
        .collect();
    match accounts.as_slice() {
        [one] => Ok(one.to_string()),
        other => Err(ConformanceError::Data {
            path: path.to_path_buf(),
            message: format!(
                "{} ServiceAccounts in the base ({other:?}): name the provider's as serviceAccount in conformance.yaml",
                other.len()
            ),
        }),
    }
}

/// The CRD of `resource`, when one defines it.
async fn crd_of(client: &Client, resource: &ApiResource) -> Option<String> {
    if resource.group.is_empty() {
        return None;
    }
    let name = format!("{}.{}", resource.plural, resource.group);
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    api.get_opt(&name).await.ok().flatten().map(|_| name)
}

/// GetInfo's name and version.
async fn get_info(endpoint: &str) -> Result<(String, String), String> {
    use crate::probe::v1::GetInfoRequest;
    use crate::probe::v1::provider_service_client::ProviderServiceClient;
    let mut client = ProviderServiceClient::connect(format!("http://{endpoint}"))
        .await
        .map_err(|e| e.to_string())?;
    let info = client
        .get_info(GetInfoRequest {})
        .await
        .map_err(|e| e.to_string())?
        .into_inner();
    Ok((info.name, info.version))
}

fn to_value<T: serde::Serialize>(object: &T) -> Value {
    serde_json::to_value(object).unwrap_or_default()
}

fn condition<'a>(md: &'a Value, type_: &str) -> Option<&'a Value> {
    md["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

fn condition_is(md: &Value, type_: &str, status: &str) -> bool {
    condition(md, type_).is_some_and(|c| c["status"] == status)
}

fn has_finalizer(md: &Value, finalizer: &str) -> bool {
    md["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|x| x == finalizer))
}

/// A deployment's status in one line: phase, message and the provider-owned conditions.
fn summary(md: &Value) -> String {
    let status = &md["status"];
    let conditions: Vec<String> = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| {
            c["type"].as_str().is_some_and(|t| {
                condition_types::PROVIDER_OWNED.contains(&t)
                    || t == condition_types::PROVIDER_SELECTED
                    || t == condition_types::VALIDATED
            })
        })
        .map(|c| {
            format!(
                "{}={} {} {:?}",
                c["type"].as_str().unwrap_or_default(),
                c["status"].as_str().unwrap_or_default(),
                c["reason"].as_str().unwrap_or_default(),
                c["message"].as_str().unwrap_or_default()
            )
        })
        .collect();
    format!(
        "phase {}, message {:?}, finalizers {}, conditions [{}]",
        status["phase"].as_str().unwrap_or("(none)"),
        status["message"].as_str().unwrap_or_default(),
        md["metadata"]["finalizers"],
        conditions.join("; ")
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_summary_names_phase_and_provider_conditions() {
        let md = json!({"metadata": {"finalizers": ["airunway.ai/x-provider"]}, "status": {"phase": "Failed", "message": "m",
            "conditions": [{"type": "ProviderCompatible", "status": "False", "reason": "Incompatible", "message": "no"},
                           {"type": "EngineSelected", "status": "True"}]}});
        assert_eq!(
            summary(&md),
            "phase Failed, message \"m\", finalizers [\"airunway.ai/x-provider\"], conditions [ProviderCompatible=False Incompatible \"no\"]"
        );
        assert!(has_finalizer(&md, "airunway.ai/x-provider"));
        assert!(condition_is(&md, "ProviderCompatible", "False"));
        assert_eq!(CHECKS.len(), 16);
    }
}
