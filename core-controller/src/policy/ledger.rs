//! The GPU ledger of a namespace (pure): which deployments hold how many GPUs of its quota.
//! Kept in a ConfigMap `airunway-gpu-ledger-<namespace>` in the core's namespace, one data key
//! per deployment (`{"gpus":2,"uid":"…","at":"…"}`), read and written by the webhook of any
//! replica with the read `resourceVersion`: two writers that read the same version cannot both
//! succeed, so two creates that each fit but not together cannot both pass (docs/policy.md).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// Prefix of a ledger ConfigMap's name; the namespace follows.
pub const NAME_PREFIX: &str = "airunway-gpu-ledger-";

/// Label on a ledger ConfigMap: the namespace whose GPUs it counts.
pub const LEDGER_OF_LABEL: &str = "airunway.ai/gpu-ledger-of";

/// How long an entry without a deployment in the leader's cache is kept: the time a create
/// admitted by the webhook takes to be stored and reach the watch. After it, the entry belongs
/// to a deployment that was never created (refused after admission) and is pruned.
pub const IN_FLIGHT_GRACE: Duration = Duration::from_secs(30);

/// The ledger ConfigMap's name for `namespace`.
pub fn configmap_name(namespace: &str) -> String {
    format!("{NAME_PREFIX}{namespace}")
}

/// One deployment's reservation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The GPUs it holds.
    pub gpus: i64,
    /// The deployment's uid when known (a re-created deployment of the same name has another).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// When it was last reserved or raised.
    pub at: Timestamp,
}

/// A deployment the leader's cache holds, for [`Ledger::sync`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Live {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
    /// Its GPU demand.
    pub gpus: i64,
}

/// A namespace's reservations, by deployment name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ledger {
    /// The entries.
    pub entries: BTreeMap<String, Entry>,
}

impl Ledger {
    /// Reads a ConfigMap's data. An entry that does not parse counts as a bare number of GPUs
    /// when it is one (written by hand), else it is dropped with a log line.
    pub fn from_data(data: &BTreeMap<String, String>) -> Ledger {
        let entries = data
            .iter()
            .filter_map(|(name, value)| {
                let entry = serde_json::from_str::<Entry>(value).ok().or_else(|| {
                    value.trim().parse::<i64>().ok().map(|gpus| Entry {
                        gpus,
                        uid: String::new(),
                        at: Timestamp::UNIX_EPOCH,
                    })
                });
                if entry.is_none() {
                    tracing::warn!(deployment = %name, %value, "GPU ledger entry does not parse; dropped");
                }
                entry.map(|e| (name.clone(), e))
            })
            .collect();
        Ledger { entries }
    }

    /// The ConfigMap data.
    pub fn to_data(&self) -> BTreeMap<String, String> {
        self.entries
            .iter()
            .map(|(name, entry)| {
                // Serialising a plain struct cannot fail.
                let value = serde_json::to_string(entry).unwrap_or_default();
                (name.clone(), value)
            })
            .collect()
    }

    /// The GPUs every deployment but `name` holds.
    pub fn reserved_by_others(&self, name: &str) -> i64 {
        self.entries
            .iter()
            .filter(|(n, _)| n.as_str() != name)
            .fold(0i64, |sum, (_, e)| sum.saturating_add(e.gpus.max(0)))
    }

    /// The GPUs all deployments hold.
    pub fn total(&self) -> i64 {
        self.reserved_by_others("")
    }

    /// Reserves `gpus` for `name`, replacing what it held (none: the entry goes).
    pub fn reserve(&mut self, name: &str, uid: &str, gpus: i64, now: Timestamp) {
        if gpus <= 0 {
            self.entries.remove(name);
            return;
        }
        self.entries.insert(
            name.to_string(),
            Entry {
                gpus,
                uid: uid.to_string(),
                at: now,
            },
        );
    }

    /// Releases what `name` holds.
    pub fn release(&mut self, name: &str) {
        self.entries.remove(name);
    }

    /// Brings the ledger in step with the deployments the leader's cache holds (`live`), given
    /// the uids of deployments it saw deleted (`deleted`, by name):
    /// - a live deployment without an entry (admitted while the webhook was down) is added;
    /// - an entry reserved within [`IN_FLIGHT_GRACE`] is never lowered (its change may not
    ///   have reached the cache yet); an older one takes the live demand;
    /// - an entry without a live deployment goes when the deployment was seen deleted, or once
    ///   it is older than the grace (admitted but never created); a younger one stays.
    ///
    /// Returns when the first fresh entry that differs from its deployment (or has none)
    /// stops being fresh, for a recheck.
    pub fn sync(
        &mut self,
        live: &[Live],
        deleted: &HashMap<String, String>,
        now: Timestamp,
        grace: Duration,
    ) -> Option<Timestamp> {
        let grace = jiff::SignedDuration::try_from(grace).unwrap_or(jiff::SignedDuration::MAX);
        // An entry from a replica whose clock runs ahead counts as fresh.
        let fresh = |entry: &Entry| now.duration_since(entry.at) < grace;
        let mut next_expiry: Option<Timestamp> = None;
        let expires = |next: &mut Option<Timestamp>, entry: &Entry| {
            let expiry = entry.at.checked_add(grace).unwrap_or(now);
            *next = Some(next.map_or(expiry, |n: Timestamp| n.min(expiry)));
        };
        let live_names: BTreeMap<&str, &Live> = live.iter().map(|l| (l.name.as_str(), l)).collect();
        self.entries.retain(|name, entry| {
            if live_names.contains_key(name.as_str()) {
                return true;
            }
            if deleted
                .get(name)
                .is_some_and(|uid| uid == &entry.uid || entry.uid.is_empty())
            {
                return false;
            }
            if fresh(entry) {
                expires(&mut next_expiry, entry);
                return true;
            }
            false
        });
        for deployment in live {
            match self.entries.get_mut(&deployment.name) {
                None => {
                    if deployment.gpus > 0 {
                        self.reserve(&deployment.name, &deployment.uid, deployment.gpus, now);
                    }
                }
                Some(entry) if fresh(entry) => {
                    if deployment.gpus > entry.gpus {
                        entry.gpus = deployment.gpus;
                    } else if deployment.gpus < entry.gpus {
                        // Lowered once it is no longer fresh.
                        expires(&mut next_expiry, entry);
                    }
                }
                Some(entry) => {
                    entry.gpus = deployment.gpus;
                    entry.uid.clone_from(&deployment.uid);
                }
            }
        }
        self.entries.retain(|_, e| e.gpus > 0);
        next_expiry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    fn live(name: &str, uid: &str, gpus: i64) -> Live {
        Live {
            name: name.into(),
            uid: uid.into(),
            gpus,
        }
    }

    #[test]
    fn reserve_replace_release() {
        let mut ledger = Ledger::default();
        ledger.reserve("a", "u1", 2, at(0));
        ledger.reserve("b", "u2", 1, at(0));
        assert_eq!(ledger.total(), 3);
        assert_eq!(ledger.reserved_by_others("a"), 1);
        assert_eq!(ledger.reserved_by_others("c"), 3);
        // An update replaces, it does not add.
        ledger.reserve("a", "u1", 4, at(1));
        assert_eq!(ledger.total(), 5);
        // Down to zero GPUs: the entry goes.
        ledger.reserve("b", "u2", 0, at(2));
        assert_eq!(ledger.entries.len(), 1);
        ledger.release("a");
        assert_eq!(ledger.total(), 0);
    }

    #[test]
    fn data_round_trips_and_hand_written_numbers_count() {
        let mut ledger = Ledger::default();
        ledger.reserve("a", "u1", 2, at(0));
        let mut data = ledger.to_data();
        assert_eq!(Ledger::from_data(&data), ledger);
        data.insert("by-hand".into(), "3".into());
        data.insert("garbage".into(), "{".into());
        let read = Ledger::from_data(&data);
        assert_eq!(read.total(), 5);
        assert!(!read.entries.contains_key("garbage"));
    }

    #[test]
    fn sync_adds_missing_and_prunes_gone() {
        let grace = Duration::from_secs(30);
        let mut ledger = Ledger::default();
        ledger.reserve("deleted", "u-del", 1, at(0));
        ledger.reserve("never-created", "u-nc", 2, at(0));
        ledger.reserve("in-flight", "u-if", 1, at(95));
        ledger.reserve("stale-value", "u-s", 4, at(0));
        let deleted: HashMap<String, String> = [("deleted".to_string(), "u-del".to_string())]
            .into_iter()
            .collect();
        let next = ledger.sync(
            &[
                live("admitted-while-down", "u-w", 2),
                live("stale-value", "u-s", 1),
            ],
            &deleted,
            at(100),
            grace,
        );
        let names: Vec<&str> = ledger.entries.keys().map(String::as_str).collect();
        assert_eq!(names, ["admitted-while-down", "in-flight", "stale-value"]);
        assert_eq!(ledger.entries["admitted-while-down"].gpus, 2);
        assert_eq!(
            ledger.entries["stale-value"].gpus, 1,
            "an old entry takes the live demand"
        );
        assert_eq!(
            next,
            Some(at(125)),
            "the in-flight entry is looked at again when it expires"
        );
        // Past the grace the in-flight entry was never created: pruned.
        assert_eq!(
            ledger.sync(
                &[
                    live("admitted-while-down", "u-w", 2),
                    live("stale-value", "u-s", 1)
                ],
                &HashMap::new(),
                at(126),
                grace
            ),
            None
        );
        assert_eq!(ledger.total(), 3);
    }

    #[test]
    fn sync_never_lowers_a_fresh_reservation() {
        let grace = Duration::from_secs(30);
        let mut ledger = Ledger::default();
        // The webhook raised "a" to 4 a moment ago; the cache still shows its old 1.
        ledger.reserve("a", "u1", 4, at(10));
        let next = ledger.sync(&[live("a", "u1", 1)], &HashMap::new(), at(12), grace);
        assert_eq!(ledger.entries["a"].gpus, 4);
        assert_eq!(next, Some(at(40)), "looked at again once no longer fresh");
        let mut later = ledger.clone();
        later.sync(&[live("a", "u1", 1)], &HashMap::new(), at(41), grace);
        assert_eq!(later.entries["a"].gpus, 1);
        // Once the cache shows more, the entry follows.
        ledger.sync(&[live("a", "u1", 6)], &HashMap::new(), at(13), grace);
        assert_eq!(ledger.entries["a"].gpus, 6);
        // A deletion of another uid (an earlier deployment of the name) leaves a fresh entry.
        let deleted: HashMap<String, String> =
            [("b".to_string(), "old".to_string())].into_iter().collect();
        ledger.reserve("b", "new", 1, at(14));
        ledger.sync(&[live("a", "u1", 6)], &deleted, at(15), grace);
        assert!(ledger.entries.contains_key("b"));
    }
}
