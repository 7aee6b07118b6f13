//! Faults injected while work is in flight (`e2e/tests/chaos.rs`): a seeded schedule of
//! `kill -9`s of the core, of provider leaders and of kube-apiserver (restarted with the same
//! flags), the fleet of replicas they hit, and the checks that follow (convergence, one
//! upstream object per deployment, no write after settle, no panic).
//!
//! The upstream operators of KAITO, Dynamo and KubeRay are played by [`play_operator`] (the
//! status they really write, once per object): they are not run here (KubeRay's runs in its
//! own suite; the others cannot be built here). llm-d's and the direct vLLM provider's
//! Deployments are real: kube-scheduler places their Pods on KWOK's simulated GPU nodes and the
//! real deployment controller writes their status.

pub mod rest;
pub mod schedule;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use airunway_api::v1alpha1::{InferenceProviderConfig, ModelDeployment};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams};

use crate::bench::audit;
use crate::bench::workload::Target;
use crate::control_plane::audit_log_path;
use crate::env::TestEnv;
use crate::stack::{self, Running};
pub use schedule::{Fault, Scheduled, schedule};

/// How a component's replicas run.
#[derive(Clone, Debug)]
pub struct Component {
    /// `airunway-core` or `airunway-provider-<name>`.
    pub binary: String,
    /// The leader election Lease name (`--leader-election-id`).
    pub lease: String,
    /// Flags of every replica.
    pub flags: Vec<String>,
}

/// The replicas of one component; a killed one is replaced (as its ReplicaSet would).
pub struct Replicas {
    /// What runs.
    pub component: Component,
    /// The live replicas.
    pub running: Vec<Running>,
    /// Replicas started so far (names the next one).
    pub started: usize,
    /// Log files of every replica ever started.
    pub logs: Vec<std::path::PathBuf>,
}

impl Replicas {
    /// Starts one more replica.
    pub async fn start_one(&mut self, env: &TestEnv) {
        let pod = format!(
            "{}-{}",
            self.component.binary.trim_start_matches("airunway-"),
            self.started
        );
        self.started += 1;
        let flags: Vec<&str> = self.component.flags.iter().map(String::as_str).collect();
        let kubeconfig = env.control_plane.kubeconfig.clone();
        let running = if self.component.binary == "airunway-core" {
            stack::start_core(env, &kubeconfig, &flags, &pod).await
        } else {
            stack::start_provider(env, &self.component.binary, &kubeconfig, &flags, &pod).await
        };
        self.logs.push(running.process.log().to_path_buf());
        self.running.push(running);
    }

    /// The pid of the replica holding the Lease in `namespace`, if one of these does.
    pub async fn leader_pid(&self, env: &TestEnv) -> Option<u32> {
        let holder = lease_holder(env, &self.component.lease).await?;
        // Identities are `<POD_NAME>-<pid>` (airunway_api::runtime::default_identity).
        self.running
            .iter()
            .map(|r| r.process.pid())
            .find(|pid| holder.ends_with(&format!("-{pid}")))
    }

    /// `kill -9` the leader (else the first replica); returns the killed pid.
    pub async fn kill_leader(&mut self, env: &TestEnv) -> Option<u32> {
        let pid = match self.leader_pid(env).await {
            Some(pid) => pid,
            None => self.running.first()?.process.pid(),
        };
        let index = self.running.iter().position(|r| r.process.pid() == pid)?;
        let victim = self.running.remove(index);
        victim.process.kill();
        Some(pid)
    }

    /// [`Replicas::kill_leader`], then start a replacement (as its ReplicaSet would).
    pub async fn kill_leader_and_replace(&mut self, env: &TestEnv) -> Option<u32> {
        let pid = self.kill_leader(env).await?;
        self.start_one(env).await;
        Some(pid)
    }
}

/// The holder of Lease `name` in the test namespace.
pub async fn lease_holder(env: &TestEnv, name: &str) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(env.client.clone(), &env.namespace);
    leases
        .get_opt(name)
        .await
        .ok()
        .flatten()?
        .spec?
        .holder_identity
}

/// The phase of every deployment labelled for run `run`, by name.
pub async fn phases(env: &TestEnv, run: &str) -> BTreeMap<String, String> {
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let Ok(list) = mds
        .list(
            &ListParams::default()
                .labels(&format!("{}={run}", crate::bench::workload::BENCH_LABEL)),
        )
        .await
    else {
        return BTreeMap::new();
    };
    list.items
        .into_iter()
        .map(|md| {
            let phase = md
                .phase()
                .map(|p| format!("{p:?}"))
                .unwrap_or_else(|| "-".into());
            (md.metadata.name.unwrap_or_default(), phase)
        })
        .collect()
}

/// Waits until every one of `count` deployments of run `run` is `Running` (or `timeout`);
/// returns when, or the phases seen last.
pub async fn wait_running(
    env: &TestEnv,
    run: &str,
    count: usize,
    timeout: Duration,
) -> Result<Instant, BTreeMap<String, usize>> {
    let deadline = Instant::now() + timeout;
    loop {
        let phases = phases(env, run).await;
        let running = phases.values().filter(|p| *p == "Running").count();
        if running == count && phases.len() == count {
            return Ok(Instant::now());
        }
        if Instant::now() > deadline {
            let mut by_phase = BTreeMap::new();
            for p in phases.values() {
                *by_phase.entry(p.clone()).or_insert(0) += 1;
            }
            return Err(by_phase);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Waits until the cluster is at rest ([`rest::unsettled`]: every Deployment in the test
/// namespace done, every provider available, every deployment's status caught up) or `timeout`;
/// returns how long it took, or the last reason it was not.
pub async fn wait_at_rest(env: &TestEnv, timeout: Duration) -> Result<Duration, String> {
    use k8s_openapi::api::apps::v1::Deployment;
    let started = Instant::now();
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let providers: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    loop {
        let why = match (
            mds.list(&ListParams::default()).await,
            deployments.list(&ListParams::default()).await,
            providers.list(&ListParams::default()).await,
        ) {
            (Ok(m), Ok(d), Ok(p)) => rest::unsettled(&m.items, &d.items, &p.items),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => Some(format!("listing: {e}")),
        };
        let Some(why) = why else {
            return Ok(started.elapsed());
        };
        if started.elapsed() > timeout {
            return Err(why);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Records, until dropped, every change of a deployment's status in the test namespace as a
/// line `HH:MM:SS.mmm <name>: <what changed>` (phase, message, conditions): what a "write after
/// settle" failure prints to say what was written.
pub struct StatusChanges {
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl StatusChanges {
    /// Starts watching.
    pub fn start(env: &TestEnv) -> StatusChanges {
        use futures::StreamExt;
        use kube::runtime::watcher;
        let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let task = tokio::spawn({
            let lines = lines.clone();
            async move {
                let mut last: BTreeMap<String, String> = BTreeMap::new();
                let mut stream = watcher(api, watcher::Config::default()).boxed();
                while let Some(event) = stream.next().await {
                    let Ok(watcher::Event::Apply(md) | watcher::Event::InitApply(md)) = event
                    else {
                        continue;
                    };
                    let name = md.metadata.name.clone().unwrap_or_default();
                    let now = rest::status_summary(&md);
                    if let Some(before) = last.insert(name.clone(), now.clone())
                        && before != now
                        && let Ok(mut lines) = lines.lock()
                    {
                        let at = jiff::Timestamp::now().strftime("%H:%M:%S%.3f");
                        lines.push(format!("{at} {name}: {}", rest::changed(&before, &now)));
                    }
                }
            }
        });
        StatusChanges { lines, task }
    }

    /// The changes seen so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl Drop for StatusChanges {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The Deployments in the test namespace whose Pods were rolled ([`rest::rolled`]).
pub async fn rolled_deployments(env: &TestEnv) -> BTreeMap<String, usize> {
    use k8s_openapi::api::apps::v1::ReplicaSet;
    let sets: Api<ReplicaSet> = Api::namespaced(env.client.clone(), &env.namespace);
    let items = sets
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    rest::rolled(&items)
}

/// The writes of our components (identities containing `airunway`) received in `[from, to)`
/// by `identity: verb resource → count`, leaving out Leases (leader election) and the
/// providers' heartbeats (`inferenceproviderconfigs/status`).
pub fn writes_between(
    env: &TestEnv,
    from: jiff::Timestamp,
    to: jiff::Timestamp,
) -> BTreeMap<String, u64> {
    let text = std::fs::read_to_string(audit_log_path(&env.control_plane.dir)).unwrap_or_default();
    let requests: Vec<audit::Request> = text.lines().filter_map(audit::parse_line).collect();
    let counts = audit::Counts::of(&requests, from, to);
    let mut out = BTreeMap::new();
    for (user, verbs) in counts.by_user {
        if !user.contains("airunway") {
            continue;
        }
        for (what, n) in verbs {
            let mut parts = what.split(' ');
            let verb = parts.next().unwrap_or_default();
            let resource = parts.next().unwrap_or_default();
            let write = matches!(
                verb,
                "create" | "update" | "patch" | "delete" | "deletecollection"
            );
            if !write || resource == "leases" || resource == "inferenceproviderconfigs/status" {
                continue;
            }
            *out.entry(format!("{user}: {what}")).or_default() += n;
        }
    }
    out
}

/// Lines of `logs` that say a thread panicked.
pub fn panics(logs: &[std::path::PathBuf]) -> Vec<String> {
    logs.iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            text.lines()
                .filter(|l| l.contains("panicked at"))
                .map(|l| format!("{}: {l}", path.display()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The upstream kind of each provider target.
pub fn upstream_of(target: Target) -> kube::api::ApiResource {
    target.upstream()
}

/// GPUs on the harness's simulated nodes (what the Pods of llm-d and vLLM deployments share).
pub fn simulated_gpus() -> usize {
    use crate::control_plane::workloads::{GPU_NODES, GPUS_PER_NODE};
    GPU_NODES.len() * GPUS_PER_NODE as usize
}

/// The target of each of `count` deployments: round-robin over `targets`, except that the
/// targets whose Pods run here ([`Target::pod_gpus`]) share `gpus` between them and a target
/// whose share is used up is skipped (its deployments would wait for a GPU forever, which is
/// not what a fault did). Deterministic.
pub fn assign(count: usize, targets: &[Target], gpus: usize) -> Vec<Target> {
    let with_pods = targets.iter().filter(|t| t.pod_gpus() > 0).count();
    let share = gpus.checked_div(with_pods).unwrap_or(0);
    let mut used: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut out = Vec::with_capacity(count);
    let mut next = 0;
    while out.len() < count && !targets.is_empty() {
        let candidates = targets.len();
        let mut chosen = None;
        for k in 0..candidates {
            let t = targets[(next + k) % candidates];
            let need = t.pod_gpus();
            let taken = used.get(t.name()).copied().unwrap_or(0);
            if need == 0 || taken + need <= share {
                chosen = Some((k, t));
                break;
            }
        }
        let Some((k, t)) = chosen else {
            break;
        };
        *used.entry(t.name()).or_default() += t.pod_gpus();
        out.push(t);
        next = (next + k + 1) % candidates;
    }
    out
}

/// The distinct upstream kinds of `targets` (llm-d and vLLM both create Deployments).
pub fn upstream_kinds(targets: &[Target]) -> Vec<kube::api::ApiResource> {
    let mut kinds: Vec<kube::api::ApiResource> = Vec::new();
    for t in targets {
        let kind = t.upstream();
        if !kinds
            .iter()
            .any(|k| k.api_version == kind.api_version && k.kind == kind.kind)
        {
            kinds.push(kind);
        }
    }
    kinds
}

/// The core and the providers, each with its replicas, and the webhook port.
pub struct Fleet {
    /// The core's replicas.
    pub core: Replicas,
    /// Each provider's replicas.
    pub providers: Vec<(Target, Replicas)>,
    /// The core's webhook port (every core replica serves on it in turn).
    pub webhook_port: u16,
}

impl Fleet {
    /// Every log file of every replica ever started.
    pub fn logs(&self) -> Vec<std::path::PathBuf> {
        self.core
            .logs
            .iter()
            .chain(self.providers.iter().flat_map(|(_, r)| r.logs.iter()))
            .cloned()
            .collect()
    }

    /// The pids of the live replicas.
    pub fn pids(&self) -> Vec<u32> {
        self.core
            .running
            .iter()
            .chain(self.providers.iter().flat_map(|(_, r)| r.running.iter()))
            .map(|r| r.process.pid())
            .collect()
    }

    /// The replicas of `target`.
    pub fn provider(&mut self, target: Target) -> Option<&mut Replicas> {
        self.providers
            .iter_mut()
            .find(|(t, _)| *t == target)
            .map(|(_, r)| r)
    }
}

/// Starts the core (one replica: its webhook port is fixed; leader election on) and
/// `replicas` replicas of each provider of `targets` (leader election on when more than one),
/// each under its ServiceAccount with the shipped RBAC; installs the shipped webhook
/// configurations pointing at the core and, for KAITO, the stand-in of its controller; waits
/// until every provider reports ready.
pub async fn start_fleet(
    env: &TestEnv,
    targets: &[Target],
    replicas: usize,
    provider_flags: &[&str],
) -> Fleet {
    let webhook_port = crate::binaries::free_port();
    let lease = ["--leader-elect", "--leader-election-lease-duration=6s"];
    let mut core_flags: Vec<String> = vec![
        format!("--webhook-bind-address=127.0.0.1:{webhook_port}"),
        format!("--webhook-namespace={}", env.namespace),
        "--webhook-extra-san=127.0.0.1".into(),
    ];
    core_flags.extend(stack::FAST_HEALTH.iter().map(|s| s.to_string()));
    core_flags.extend(lease.iter().map(|s| s.to_string()));
    let mut core = Replicas {
        component: Component {
            binary: "airunway-core".into(),
            lease: "airunway-core".into(),
            flags: core_flags,
        },
        running: Vec::new(),
        started: 0,
        logs: Vec::new(),
    };
    core.start_one(env).await;
    if targets.contains(&Target::Kaito) {
        crate::sandbox::kaito::install_controller_stand_in(&env.client)
            .await
            .unwrap_or_else(|e| panic!("KAITO controller stand-in: {e:#}"));
    }
    let mut providers = Vec::new();
    for target in targets {
        let mut flags: Vec<String> = vec!["--heartbeat-interval=2s".into()];
        if replicas > 1 {
            flags.extend(lease.iter().map(|s| s.to_string()));
        }
        flags.extend(provider_flags.iter().map(|s| s.to_string()));
        let mut set = Replicas {
            component: Component {
                binary: format!("airunway-provider-{}", target.name()),
                lease: format!("{}-provider", target.name()),
                flags,
            },
            running: Vec::new(),
            started: 0,
            logs: Vec::new(),
        };
        for _ in 0..replicas {
            set.start_one(env).await;
        }
        providers.push((*target, set));
    }
    let root = crate::paths::workspace_root();
    let mut webhooks = crate::manifests::read(&root.join("deploy/core/webhooks.yaml"));
    for object in &mut webhooks {
        for webhook in object["webhooks"].as_array_mut().into_iter().flatten() {
            let path = webhook["clientConfig"]["service"]["path"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            webhook["clientConfig"] =
                serde_json::json!({"url": format!("https://127.0.0.1:{webhook_port}{path}")});
        }
    }
    crate::manifests::apply(&env.client, &webhooks).await;
    let names: Vec<&str> = targets.iter().map(|t| t.name()).collect();
    crate::wait::eventually(
        "every provider to report ready",
        Duration::from_secs(90),
        || async {
            let ipcs: Api<airunway_api::v1alpha1::InferenceProviderConfig> =
                Api::all(env.client.clone());
            let list = ipcs
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            let ready: Vec<&str> = names
                .iter()
                .copied()
                .filter(|n| {
                    list.items.iter().any(|i| {
                        i.metadata.name.as_deref() == Some(*n)
                            && i.status.as_ref().and_then(|s| s.ready) == Some(true)
                    })
                })
                .collect();
            if ready.len() == names.len() {
                Ok(())
            } else {
                Err(format!("ready: {ready:?} of {names:?}"))
            }
        },
    )
    .await;
    webhook_refuses(env, Duration::from_secs(60)).await;
    Fleet {
        core,
        providers,
        webhook_port,
    }
}

/// Waits until the validating webhook refuses an invalid deployment (a dry-run create with a
/// privilege-escalating override); returns how long that took.
pub async fn webhook_refuses(env: &TestEnv, timeout: Duration) -> Duration {
    let started = Instant::now();
    let probe: ModelDeployment = serde_json::from_value(serde_json::json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "webhook-probe", "namespace": env.namespace},
        "spec": {"model": {"id": "a/b"}, "provider": {"overrides": {"hostPID": true}}}}))
    .unwrap_or_else(|e| panic!("probe deployment: {e}"));
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    crate::wait::eventually("the webhook to refuse hostPID", timeout, || async {
        let dry = kube::api::PostParams {
            dry_run: true,
            ..Default::default()
        };
        match mds.create(&dry, &probe).await {
            Err(e) if e.to_string().contains("admission webhook") => Ok(()),
            Err(e) => Err(e.to_string()),
            Ok(_) => Err("admitted".to_string()),
        }
    })
    .await;
    started.elapsed()
}

/// Creates deployments `from..to` of run `run` in the test namespace, cycling through
/// `targets` (8 at a time); panics on a failure.
pub async fn create_deployments(
    env: &TestEnv,
    run: &str,
    from: usize,
    to: usize,
    targets: &[Target],
) {
    use futures::StreamExt;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    futures::stream::iter(from..to)
        .for_each_concurrent(8, |i| {
            let mds = mds.clone();
            let body = crate::bench::workload::deployment(run, i, &env.namespace, targets);
            async move {
                let md: ModelDeployment =
                    serde_json::from_value(body).unwrap_or_else(|e| panic!("deployment {i}: {e}"));
                // Retried: the API server may be restarting.
                for attempt in 0..60 {
                    match mds.create(&kube::api::PostParams::default(), &md).await {
                        Ok(_) => return,
                        Err(kube::Error::Api(s)) if s.code == 409 => return,
                        Err(e) if attempt == 59 => panic!("creating deployment {i}: {e}"),
                        Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
                    }
                }
            }
        })
        .await;
}

/// The upstream objects of `target` in the test namespace labelled for run `run` (for llm-d
/// and vLLM: every Deployment of the run, theirs both).
pub async fn upstream_objects(
    env: &TestEnv,
    target: Target,
    run: &str,
) -> Vec<kube::api::DynamicObject> {
    objects_of_kind(env, &target.upstream(), run).await
}

/// The objects of `kind` in the test namespace labelled for run `run`.
pub async fn objects_of_kind(
    env: &TestEnv,
    kind: &kube::api::ApiResource,
    run: &str,
) -> Vec<kube::api::DynamicObject> {
    let api: Api<kube::api::DynamicObject> =
        Api::namespaced_with(env.client.clone(), &env.namespace, kind);
    api.list(
        &ListParams::default().labels(&format!("{}={run}", crate::bench::workload::BENCH_LABEL)),
    )
    .await
    .map(|l| l.items)
    .unwrap_or_default()
}

/// A watch backoff of at most 2 s (the simulator must not add kube's 30 s waits to the figures).
struct ShortBackoff(Duration);

impl Iterator for ShortBackoff {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        let d = self.0;
        self.0 = (self.0 * 2).min(Duration::from_secs(2));
        Some(d)
    }
}

impl kube::runtime::utils::Backoff for ShortBackoff {
    fn reset(&mut self) {
        self.0 = Duration::from_millis(100);
    }
}

/// Plays the upstream operator of `target` for run `run` through faults: every object gets the
/// ready status the real operator writes (the samples of
/// [`crate::bench::workload::Target::ready_status`]) once; a write that fails (the API server
/// restarting) is retried every second until it lands.
pub fn play_operator(client: kube::Client, target: Target, run: String) {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, watcher};
    tokio::spawn(async move {
        let resource = target.upstream();
        let api: Api<kube::api::DynamicObject> = Api::all_with(client.clone(), &resource);
        let config = watcher::Config::default()
            .labels(&format!("{}={run}", crate::bench::workload::BENCH_LABEL));
        let stream = watcher(api, config)
            .backoff(ShortBackoff(Duration::from_millis(100)))
            .applied_objects();
        futures::pin_mut!(stream);
        let mut done = std::collections::HashSet::new();
        let mut pending: BTreeMap<String, kube::api::DynamicObject> = BTreeMap::new();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                next = stream.next() => match next {
                    Some(Ok(object)) => {
                        if let Some(uid) = object.metadata.uid.clone()
                            && !done.contains(&uid)
                            && object.metadata.deletion_timestamp.is_none()
                        {
                            pending.insert(uid, object);
                        }
                    }
                    Some(Err(_)) => continue,
                    None => return,
                },
                _ = tick.tick() => {}
            }
            let due: Vec<(String, kube::api::DynamicObject)> = pending
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            for (uid, object) in due {
                let Ok(value) = serde_json::to_value(&object) else {
                    continue;
                };
                let Ok(status) = target.ready_status(&value) else {
                    continue;
                };
                let namespaced: Api<kube::api::DynamicObject> = Api::namespaced_with(
                    client.clone(),
                    object.metadata.namespace.as_deref().unwrap_or_default(),
                    &resource,
                );
                let name = object.metadata.name.clone().unwrap_or_default();
                let patch = kube::api::Patch::Merge(serde_json::json!({"status": status}));
                match namespaced
                    .patch_status(&name, &kube::api::PatchParams::default(), &patch)
                    .await
                {
                    Ok(_) => {
                        pending.remove(&uid);
                        done.insert(uid);
                    }
                    Err(kube::Error::Api(s)) if s.code == 404 => {
                        pending.remove(&uid);
                    }
                    Err(_) => {}
                }
            }
        }
    });
}

/// Copies every replica's log (and the API server logs) into `$AIRUNWAY_CHAOS_KEEP_LOGS/<name>/`
/// when that variable is set (the control plane directory is removed at exit).
pub fn keep_logs(env: &TestEnv, fleet: &Fleet, name: &str) {
    let Ok(dir) = std::env::var("AIRUNWAY_CHAOS_KEEP_LOGS") else {
        return;
    };
    let target = std::path::Path::new(&dir).join(name);
    let _ = std::fs::create_dir_all(&target);
    let mut logs = fleet.logs();
    if let Ok(entries) = std::fs::read_dir(env.control_plane.dir.join("logs")) {
        logs.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().contains("kube-apiserver")),
        );
    }
    for log in logs {
        if let Some(file) = log.file_name() {
            let _ = std::fs::copy(&log, target.join(file));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assign_round_robin_and_gpu_targets_share_the_gpus() {
        let targets = Target::EVERY_PROVIDER;
        // Few deployments: plain round-robin.
        let few = assign(10, &targets, 16);
        assert_eq!(few[..5], targets);
        assert_eq!(few[5..], targets);
        // Many: llm-d and vLLM get 8 GPUs each, the rest is spread over the others.
        let many = assign(300, &targets, 16);
        assert_eq!(many.len(), 300);
        let n = |t| many.iter().filter(|x| **x == t).count();
        assert_eq!((n(Target::Llmd), n(Target::Vllm)), (8, 8));
        assert_eq!(
            n(Target::Kaito) + n(Target::Dynamo) + n(Target::Kuberay),
            284
        );
        assert!(n(Target::Kaito).abs_diff(n(Target::Kuberay)) <= 1);
        // Only GPU targets and no GPUs: nothing can be assigned.
        assert!(assign(3, &[Target::Llmd], 0).is_empty());
        assert!(assign(3, &[], 16).is_empty());
        assert_eq!(upstream_kinds(&targets).len(), 4);
    }
}
