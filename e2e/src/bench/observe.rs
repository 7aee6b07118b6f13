//! What the benchmark sees through its own watches: when each deployment was created, got its
//! provider, reached Running, and when its upstream object appeared — all on one clock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use airunway_api::v1alpha1::{ModelDeployment, Phase};
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};

/// Times of one deployment, from the benchmark's start.
#[derive(Clone, Debug, Default)]
pub struct Times {
    /// The create request was sent.
    pub sent: Option<Instant>,
    /// `status.provider.name` first seen.
    pub selected: Option<Instant>,
    /// The upstream object first seen.
    pub upstream: Option<Instant>,
    /// `phase: Running` first seen.
    pub running: Option<Instant>,
}

/// Everything seen so far, by `namespace/name`.
#[derive(Clone, Default)]
pub struct Timeline {
    inner: Arc<Mutex<TimelineState>>,
}

#[derive(Default)]
struct TimelineState {
    times: HashMap<String, Times>,
    deployments: usize,
    upstream: usize,
}

fn key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

impl Timeline {
    fn with<R>(&self, f: impl FnOnce(&mut TimelineState) -> R) -> Option<R> {
        self.inner.lock().ok().map(|mut s| f(&mut s))
    }

    /// Records that the create of `namespace/name` is being sent.
    pub fn sent(&self, namespace: &str, name: &str) {
        let now = Instant::now();
        self.with(|s| s.times.entry(key(namespace, name)).or_default().sent = Some(now));
    }

    /// A copy of every deployment's times.
    pub fn snapshot(&self) -> HashMap<String, Times> {
        self.with(|s| s.times.clone()).unwrap_or_default()
    }

    /// How many deployments and upstream objects exist now.
    pub fn live_counts(&self) -> (usize, usize) {
        self.with(|s| (s.deployments, s.upstream))
            .unwrap_or_default()
    }

    /// How many deployments reached each milestone: (selected, upstream, running).
    pub fn progress(&self) -> (usize, usize, usize) {
        self.with(|s| {
            let count = |f: fn(&Times) -> bool| s.times.values().filter(|t| f(t)).count();
            (
                count(|t| t.selected.is_some()),
                count(|t| t.upstream.is_some()),
                count(|t| t.running.is_some()),
            )
        })
        .unwrap_or_default()
    }
}

/// Watches the deployments labelled `selector` (every namespace).
pub fn watch_deployments(client: Client, selector: String, timeline: Timeline) {
    tokio::spawn(async move {
        let api: Api<ModelDeployment> = Api::all(client);
        let stream = watcher(api, watcher::Config::default().labels(&selector)).default_backoff();
        futures::pin_mut!(stream);
        let mut present: HashMap<String, ()> = HashMap::new();
        while let Some(event) = stream.next().await {
            let Ok(event) = event else { continue };
            let now = Instant::now();
            let (applied, deleted): (Vec<ModelDeployment>, Vec<ModelDeployment>) = match event {
                watcher::Event::Apply(md) | watcher::Event::InitApply(md) => (vec![md], vec![]),
                watcher::Event::Delete(md) => (vec![], vec![md]),
                watcher::Event::Init | watcher::Event::InitDone => (vec![], vec![]),
            };
            timeline.with(|s| {
                for md in applied {
                    let k = key(&md.namespace().unwrap_or_default(), &md.name_any());
                    present.insert(k.clone(), ());
                    let t = s.times.entry(k).or_default();
                    if t.selected.is_none() && md.selected_provider().is_some() {
                        t.selected = Some(now);
                    }
                    if t.running.is_none() && md.phase() == Some(Phase::Running) {
                        t.running = Some(now);
                    }
                }
                for md in deleted {
                    present.remove(&key(&md.namespace().unwrap_or_default(), &md.name_any()));
                }
                s.deployments = present.len();
            });
        }
    });
}

/// Watches the upstream objects of `resource` labelled `selector` (every namespace).
pub fn watch_upstream(client: Client, resource: ApiResource, selector: String, timeline: Timeline) {
    tokio::spawn(async move {
        let api: Api<DynamicObject> = Api::all_with(client, &resource);
        let stream = watcher(api, watcher::Config::default().labels(&selector)).default_backoff();
        futures::pin_mut!(stream);
        let mut present: HashMap<String, ()> = HashMap::new();
        let mut counted = 0usize;
        while let Some(event) = stream.next().await {
            let Ok(event) = event else { continue };
            let now = Instant::now();
            timeline.with(|s| {
                match event {
                    watcher::Event::Apply(o) | watcher::Event::InitApply(o) => {
                        let k = key(&o.namespace().unwrap_or_default(), &o.name_any());
                        present.insert(k.clone(), ());
                        let t = s.times.entry(k).or_default();
                        t.upstream.get_or_insert(now);
                    }
                    watcher::Event::Delete(o) => {
                        present.remove(&key(&o.namespace().unwrap_or_default(), &o.name_any()));
                    }
                    _ => {}
                }
                s.upstream = s.upstream.saturating_sub(counted) + present.len();
                counted = present.len();
            });
        }
    });
}
