//! One test's environment: a client, a fresh namespace, and failure reports with the tails of
//! every component log.

use std::path::PathBuf;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::events::v1::Event;
use kube::Client;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};

use crate::control_plane::ControlPlane;
use crate::process::tail;

/// Label put on every namespace the harness creates.
pub const TEST_NAMESPACE_LABEL: &str = "airunway.ai/e2e";

/// A test's environment. Dropping it during a panic prints the component log tails.
pub struct TestEnv {
    /// The shared control plane of this test binary.
    pub control_plane: &'static ControlPlane,
    /// An admin client bound to the test's runtime.
    pub client: Client,
    /// A namespace created for this test.
    pub namespace: String,
    extra_logs: Mutex<Vec<(String, PathBuf)>>,
}

impl TestEnv {
    /// An admin client that impersonates `user` with `groups` (the API server adds
    /// `system:authenticated` for a user, and the ServiceAccount groups for a ServiceAccount).
    pub async fn impersonating(&self, user: &str, groups: &[&str]) -> Client {
        let kubeconfig = kube::config::Kubeconfig::read_from(&self.control_plane.kubeconfig)
            .unwrap_or_else(|e| panic!("the control plane's kubeconfig: {e}"));
        let mut config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("a client config from the kubeconfig: {e}"));
        config.auth_info.impersonate = Some(user.to_string());
        config.auth_info.impersonate_groups =
            (!groups.is_empty()).then(|| groups.iter().map(|g| g.to_string()).collect());
        Client::try_from(config).unwrap_or_else(|e| panic!("a client impersonating {user}: {e}"))
    }

    /// Starts (or reuses) the control plane and creates a namespace named after the test.
    pub async fn new(test: &str) -> TestEnv {
        remember_panic_messages();
        let control_plane = ControlPlane::shared();
        let client = control_plane
            .client()
            .await
            .unwrap_or_else(|e| panic!("client: {e:#}"));
        let slug: String = test
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .take(40)
            .collect();
        let namespace = format!("{}-{}", slug.trim_matches('-'), random_suffix());
        let namespaces: Api<Namespace> = Api::all(client.clone());
        namespaces
            .create(
                &PostParams::default(),
                &Namespace {
                    metadata: ObjectMeta {
                        name: Some(namespace.clone()),
                        labels: Some(
                            [(TEST_NAMESPACE_LABEL.to_string(), "true".to_string())].into(),
                        ),
                        ..Default::default()
                    },
                    ..Default::default()
                },
            )
            .await
            .unwrap_or_else(|e| panic!("creating namespace {namespace}: {e}"));
        TestEnv {
            control_plane,
            client,
            namespace,
            extra_logs: Mutex::new(Vec::new()),
        }
    }

    /// The notes of the events in the test's namespace with `reason`.
    pub async fn event_notes(&self, reason: &str) -> Vec<String> {
        let api: Api<Event> = Api::namespaced(self.client.clone(), &self.namespace);
        api.list(&ListParams::default())
            .await
            .unwrap_or_else(|e| panic!("listing events in {}: {e}", self.namespace))
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some(reason))
            .filter_map(|e| e.note)
            .collect()
    }

    /// Waits (up to 20 s) for an event in the test's namespace with `reason` whose note
    /// `matches`, and returns the notes of all events with that reason. An event is posted after
    /// the status change it reports, so a test that has just seen the status waits for it.
    pub async fn wait_for_event(
        &self,
        reason: &str,
        matches: impl Fn(&str) -> bool,
    ) -> Vec<String> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let notes = self.event_notes(reason).await;
            if notes.iter().any(|n| matches(n)) {
                return notes;
            }
            if std::time::Instant::now() >= deadline {
                panic!("no {reason} event as expected within 20 s; the {reason} notes: {notes:?}");
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }

    /// Adds a log file to the failure report.
    pub fn report_log(&self, name: &str, path: PathBuf) {
        if let Ok(mut logs) = self.extra_logs.lock() {
            logs.push((name.to_string(), path));
        }
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        eprintln!(
            "\n===== component logs (namespace {}) =====",
            self.namespace
        );
        eprintln!("{}", self.control_plane.log_tails(15));
        if let Ok(logs) = self.extra_logs.lock() {
            for (name, path) in logs.iter() {
                eprintln!(
                    "----- {name} ({}) -----\n{}",
                    path.display(),
                    tail(path, 60)
                );
            }
        }
        // The log tails above push the failure itself out of a short view of the output (CI
        // shows the end): say it again, last.
        let failure = LAST_PANIC
            .with(|last| last.borrow().clone())
            .unwrap_or_else(|| "(no message recorded)".to_string());
        eprintln!(
            "===== the failure (namespace {}), repeated after the logs =====\n{failure}",
            self.namespace
        );
    }
}

thread_local! {
    /// The message and place of the last panic on this thread (what [`TestEnv`]'s failure
    /// report repeats after the log tails).
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Installs (once per process) a panic hook that records each panic's message and location on
/// its thread and then runs the hook that was there before (libtest's output is unchanged).
fn remember_panic_messages() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(a panic without a message)".to_string());
            let place = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            LAST_PANIC.with(|last| *last.borrow_mut() = Some(format!("{message}\n  at {place}")));
            previous(info);
        }));
    });
}

/// Four random hex digits (from the clock and a counter; tests only need uniqueness).
pub fn random_suffix() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let n = nanos
        ^ (COUNTER
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(2_654_435_761))
        ^ std::process::id();
    format!("{:04x}", n & 0xffff)
}

/// Serialises tests of one binary that touch cluster-scoped state (provider configs,
/// webhook configurations, running controllers).
pub async fn cluster_lock() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    LOCK.lock().await
}
