//! Kubernetes events (`events.k8s.io/v1`) published as one reporting controller, aggregated by
//! the events API's own series rather than flooding, without losing notes.
//!
//! An event is identified by its type, reason, action, regarding object (with its uid) **and
//! note**: the same note again within [`SERIES_WINDOW`] of its last sighting is one Event
//! object whose `series.count` and `series.lastObservedTime` grow (a merge patch of `series`
//! only); a different note is an Event of its own. (kube's `Recorder` keys on reason and action
//! only and keeps the first note: two `SecretNotFound` events for two Secrets would show the
//! first Secret twice.) After the window a repeat starts a new Event, as client-go's recorder
//! does; the API server removes Events after its `--event-ttl` (1 h by default).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};

use crate::kube_error::ErrorClass;

/// How long after its last sighting a repeat of an event still counts in its series (client-go's
/// recorder uses the same 6 minutes).
pub const SERIES_WINDOW: Duration = Duration::from_secs(6 * 60);

/// The most series a publisher remembers; beyond it the longest-unseen are forgotten (a repeat
/// of a forgotten one starts a new Event). Bounds memory at about 1.5 kB a series.
pub const MAX_SERIES: usize = 20_000;

/// The longest note the events API accepts (bytes).
pub const MAX_NOTE_BYTES: usize = 1024;

/// Normal or Warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Something expected happened.
    Normal,
    /// Something needs a look.
    Warning,
}

impl EventType {
    /// The events API's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// What makes two publications the same event (pure; see the module doc).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SeriesKey {
    type_: EventType,
    reason: String,
    action: String,
    regarding: [Option<String>; 5],
    note: String,
}

impl SeriesKey {
    /// The key of `note` (already cut to [`MAX_NOTE_BYTES`]) about `regarding`.
    pub fn new(
        type_: EventType,
        reason: &str,
        action: &str,
        regarding: &ObjectReference,
        note: &str,
    ) -> SeriesKey {
        SeriesKey {
            type_,
            reason: reason.to_string(),
            action: action.to_string(),
            regarding: [
                regarding.api_version.clone(),
                regarding.kind.clone(),
                regarding.namespace.clone(),
                regarding.name.clone(),
                regarding.uid.clone(),
            ],
            note: note.to_string(),
        }
    }
}

/// The Event object a series is counted on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Series {
    /// The Event's name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// How often the event was seen (1: created, no `series` yet).
    pub count: i32,
    /// The last sighting.
    pub last_seen: Timestamp,
}

/// What a publication writes (pure decision, [`next_write`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Write {
    /// A new Event object.
    Create,
    /// The existing Event `name` in `namespace`: `series.count` becomes `count`.
    Repeat {
        /// The Event's name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// The new `series.count` (2 on the first repeat).
        count: i32,
    },
}

/// Whether a publication at `now` repeats `previous` (seen within [`SERIES_WINDOW`]) or starts
/// a new Event.
pub fn next_write(previous: Option<&Series>, now: Timestamp) -> Write {
    match previous {
        Some(series) if within_window(series, now) => Write::Repeat {
            name: series.name.clone(),
            namespace: series.namespace.clone(),
            count: series.count.saturating_add(1),
        },
        _ => Write::Create,
    }
}

fn within_window(series: &Series, now: Timestamp) -> bool {
    let window = SignedDuration::try_from(SERIES_WINDOW).unwrap_or(SignedDuration::MAX);
    now.duration_since(series.last_seen) < window
}

/// The note cut to what the events API accepts ([`MAX_NOTE_BYTES`], at a character boundary,
/// ending in `...` when cut).
pub fn truncate_note(note: String) -> String {
    if note.len() <= MAX_NOTE_BYTES {
        return note;
    }
    let mut cut = MAX_NOTE_BYTES - 3;
    while !note.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", &note[..cut])
}

/// The name of a new Event about `regarding_name` at `now` (`<name>.<nanoseconds in hex>`,
/// the convention of client-go and kube).
pub fn event_name(regarding_name: &str, now: Timestamp) -> String {
    format!("{regarding_name}.{:x}", now.as_nanosecond())
}

/// Forgets the series last seen outside the window, then the longest-unseen beyond `max`.
pub fn prune(cache: &mut HashMap<SeriesKey, Series>, now: Timestamp, max: usize) {
    cache.retain(|_, series| within_window(series, now));
    if cache.len() > max {
        let mut seen: Vec<(Timestamp, SeriesKey)> = cache
            .iter()
            .map(|(key, series)| (series.last_seen, key.clone()))
            .collect();
        seen.sort_by_key(|(last_seen, _)| *last_seen);
        let excess = cache.len() - max;
        for (_, key) in seen.into_iter().take(excess) {
            cache.remove(&key);
        }
    }
}

/// Publishes Kubernetes events (`events.k8s.io/v1`) as one reporting controller. Failures are
/// logged, never returned: an event must not fail a reconcile.
#[derive(Clone)]
pub struct EventPublisher {
    client: Client,
    controller: String,
    instance: String,
    series: Arc<Mutex<HashMap<SeriesKey, Series>>>,
}

impl EventPublisher {
    /// A publisher reporting as `controller` (instance: `POD_NAME` when set, else
    /// `controller`).
    pub fn new(client: Client, controller: &str) -> Self {
        EventPublisher {
            client,
            controller: controller.to_string(),
            instance: std::env::var("POD_NAME")
                .ok()
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| controller.to_string()),
            series: Arc::default(),
        }
    }

    /// A Normal event.
    pub async fn normal(
        &self,
        regarding: &ObjectReference,
        reason: &str,
        action: &str,
        note: impl Into<String>,
    ) {
        self.publish(regarding, EventType::Normal, reason, action, note.into())
            .await;
    }

    /// A Warning event.
    pub async fn warning(
        &self,
        regarding: &ObjectReference,
        reason: &str,
        action: &str,
        note: impl Into<String>,
    ) {
        self.publish(regarding, EventType::Warning, reason, action, note.into())
            .await;
    }

    async fn publish(
        &self,
        regarding: &ObjectReference,
        type_: EventType,
        reason: &str,
        action: &str,
        note: String,
    ) {
        let note = truncate_note(note);
        let key = SeriesKey::new(type_, reason, action, regarding, &note);
        let now = Timestamp::now();
        let write = {
            let mut cache = self.series.lock().unwrap_or_else(PoisonError::into_inner);
            prune(&mut cache, now, MAX_SERIES);
            next_write(cache.get(&key), now)
        };
        let written = match write {
            Write::Repeat {
                name,
                namespace,
                count,
            } => match self.repeat(&name, &namespace, count, now).await {
                Ok(()) => Ok(Series {
                    name,
                    namespace,
                    count,
                    last_seen: now,
                }),
                // Expired (the API server's event TTL) or deleted: start a new one.
                Err(e) if ErrorClass::of(&e) == ErrorClass::NotFound => {
                    self.create(regarding, type_, reason, action, &note, now)
                        .await
                }
                Err(e) => Err(e),
            },
            Write::Create => {
                self.create(regarding, type_, reason, action, &note, now)
                    .await
            }
        };
        match written {
            Ok(series) => {
                self.series
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(key, series);
            }
            Err(e) => tracing::warn!(error = %e, reason, "could not publish event"),
        }
    }

    async fn create(
        &self,
        regarding: &ObjectReference,
        type_: EventType,
        reason: &str,
        action: &str,
        note: &str,
        now: Timestamp,
    ) -> Result<Series, kube::Error> {
        let namespace = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_string());
        let name = event_name(regarding.name.as_deref().unwrap_or(&self.controller), now);
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            action: Some(action.to_string()),
            reason: Some(reason.to_string()),
            note: Some(note.to_string()),
            type_: Some(type_.as_str().to_string()),
            regarding: Some(regarding.clone()),
            event_time: Some(MicroTime(now)),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            ..Event::default()
        };
        Api::<Event>::namespaced(self.client.clone(), &namespace)
            .create(&PostParams::default(), &event)
            .await?;
        Ok(Series {
            name,
            namespace,
            count: 1,
            last_seen: now,
        })
    }

    async fn repeat(
        &self,
        name: &str,
        namespace: &str,
        count: i32,
        now: Timestamp,
    ) -> Result<(), kube::Error> {
        let series = EventSeries {
            count,
            last_observed_time: MicroTime(now),
        };
        let body = serde_json::json!({ "series": series });
        Api::<Event>::namespaced(self.client.clone(), namespace)
            .patch(name, &PatchParams::default(), &Patch::Merge(&body))
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(uid: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("airunway.ai/v1alpha1".into()),
            kind: Some("ModelDeployment".into()),
            namespace: Some("team".into()),
            name: Some("llm".into()),
            uid: Some(uid.into()),
            ..ObjectReference::default()
        }
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    fn series(count: i32, last_seen: Timestamp) -> Series {
        Series {
            name: "llm.1".into(),
            namespace: "team".into(),
            count,
            last_seen,
        }
    }

    #[test]
    fn distinct_notes_are_distinct_series_and_the_same_note_is_one() {
        let r = reference("u1");
        let key = |note: &str| {
            SeriesKey::new(
                EventType::Warning,
                "SecretNotFound",
                "SecretsFound",
                &r,
                note,
            )
        };
        let a = key("Secret 'a' not found in namespace 'team'");
        let b = key("Secret 'b' not found in namespace 'team'");
        assert_ne!(a, b);
        assert_eq!(a, key("Secret 'a' not found in namespace 'team'"));
        // Type, reason, action and the object (a new uid: a new object of the same name)
        // each make an event of its own too.
        let note = "n";
        let base = SeriesKey::new(EventType::Warning, "R", "A", &r, note);
        assert_ne!(base, SeriesKey::new(EventType::Normal, "R", "A", &r, note));
        assert_ne!(
            base,
            SeriesKey::new(EventType::Warning, "R2", "A", &r, note)
        );
        assert_ne!(
            base,
            SeriesKey::new(EventType::Warning, "R", "A2", &r, note)
        );
        assert_ne!(
            base,
            SeriesKey::new(EventType::Warning, "R", "A", &reference("u2"), note)
        );
    }

    #[test]
    fn repeats_within_the_window_count_on_one_event_then_a_new_one_starts() {
        assert_eq!(next_write(None, at(0)), Write::Create);
        assert_eq!(
            next_write(Some(&series(1, at(0))), at(10)),
            Write::Repeat {
                name: "llm.1".into(),
                namespace: "team".into(),
                count: 2
            }
        );
        assert_eq!(
            next_write(Some(&series(7, at(0))), at(359)),
            Write::Repeat {
                name: "llm.1".into(),
                namespace: "team".into(),
                count: 8
            }
        );
        assert_eq!(next_write(Some(&series(7, at(0))), at(360)), Write::Create);
        assert_eq!(
            next_write(Some(&series(i32::MAX, at(0))), at(1)),
            Write::Repeat {
                name: "llm.1".into(),
                namespace: "team".into(),
                count: i32::MAX
            }
        );
    }

    #[test]
    fn prune_forgets_expired_then_the_longest_unseen() {
        let r = reference("u1");
        let mut cache = HashMap::new();
        for (i, seen) in [0, 100, 200, 300].into_iter().enumerate() {
            cache.insert(
                SeriesKey::new(EventType::Normal, "R", "A", &r, &format!("note {i}")),
                series(1, at(seen)),
            );
        }
        prune(&mut cache, at(400), 10);
        assert_eq!(
            cache.len(),
            3,
            "the one seen at 0 is outside the window at 400"
        );
        prune(&mut cache, at(400), 2);
        let mut left: Vec<i64> = cache
            .values()
            .map(|s| s.last_seen.as_second() - 1_800_000_000)
            .collect();
        left.sort();
        assert_eq!(left, [200, 300]);
    }

    #[test]
    fn notes_are_cut_to_the_api_limit_at_a_character_boundary() {
        assert_eq!(truncate_note("short".into()), "short");
        let exact = "a".repeat(MAX_NOTE_BYTES);
        assert_eq!(truncate_note(exact.clone()), exact);
        let long = "é".repeat(MAX_NOTE_BYTES);
        let cut = truncate_note(long);
        assert!(cut.len() <= MAX_NOTE_BYTES, "{}", cut.len());
        assert!(cut.ends_with("..."));
        assert!(cut.trim_end_matches("...").chars().all(|c| c == 'é'));
    }

    #[test]
    fn event_names_follow_the_object_and_the_time() {
        let now = at(0);
        assert_eq!(
            event_name("llm", now),
            format!("llm.{:x}", now.as_nanosecond())
        );
    }
}
