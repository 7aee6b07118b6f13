//! Watch restarts and controller progress.
//!
//! kube's default watch backoff (800 ms doubling to 30 s, reset only by an event the watch
//! delivers) turns an API server restart into a silence of a minute and more: every refused
//! connection while the server is down doubles the wait, the fresh server's first answers are
//! often `403` (its authorization cache is not warm yet), and a watch that resumes quietly
//! delivers no event to reset the backoff. [`WatchBackoff`] bounds the wait at
//! [`WATCH_BACKOFF_MAX`], so a watch is back within seconds of the API server.
//!
//! [`Progress`] records what a controller's streams deliver (events, watch errors, finished
//! reconciles) and says, as a pure verdict over timestamps, when the controller cannot make
//! progress: a watch failing without pause, or work waiting while no reconcile finishes.
//! Providers report that verdict in their heartbeat and probe, so the core stops sending work
//! to a provider that cannot do it.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::constants::reasons;
use jiff::Timestamp;
use kube::runtime::utils::Backoff;

/// The first wait after a watch error.
pub const WATCH_BACKOFF_MIN: Duration = Duration::from_millis(250);
/// The longest wait between two attempts of a failing watch.
pub const WATCH_BACKOFF_MAX: Duration = Duration::from_secs(5);
/// Errors of one watch no further apart than this belong to one run of failures: a watch that
/// keeps failing reports an error at least every [`WATCH_BACKOFF_MAX`] (plus the request).
pub const ERROR_RUN_GAP: Duration = Duration::from_secs(15);

/// The backoff of a watch stream: [`WATCH_BACKOFF_MIN`] doubling up to [`WATCH_BACKOFF_MAX`],
/// each wait lengthened by up to a fifth (so replicas do not retry in step); reset by any
/// event the watch delivers.
#[derive(Clone, Debug)]
pub struct WatchBackoff {
    next: Duration,
}

impl Default for WatchBackoff {
    fn default() -> Self {
        WatchBackoff {
            next: WATCH_BACKOFF_MIN,
        }
    }
}

impl WatchBackoff {
    /// The wait before jitter: what [`Iterator::next`] returns, less the jitter.
    pub fn base(&self) -> Duration {
        self.next
    }
}

/// Up to a fifth of `delay`, from the clock's nanoseconds (spread, not secrecy).
fn jitter(delay: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let fifth = (delay.as_millis() / 5).max(1) as u64;
    Duration::from_millis(u64::from(nanos) % fifth)
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let delay = self.next;
        self.next = (self.next * 2).min(WATCH_BACKOFF_MAX);
        Some(delay + jitter(delay))
    }
}

impl Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.next = WATCH_BACKOFF_MIN;
    }
}

/// One watch's current run of errors.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ErrorRun {
    first: Timestamp,
    last: Timestamp,
    error: String,
}

/// Why a controller cannot make progress.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stalled {
    /// A watch has been failing without pause since `since`.
    WatchFailing {
        /// The watched resource (e.g. `workspaces.kaito.sh`).
        watch: String,
        /// When its run of errors started.
        since: Timestamp,
        /// Its latest error.
        error: String,
    },
    /// Work has been waiting since `since` and no reconcile finished.
    QueueStalled {
        /// When the oldest waiting change arrived.
        since: Timestamp,
    },
}

impl Stalled {
    /// A short reason (a condition reason).
    pub fn reason(&self) -> &'static str {
        match self {
            Stalled::WatchFailing { .. } => reasons::WATCH_FAILING,
            Stalled::QueueStalled { .. } => reasons::QUEUE_STALLED,
        }
    }

    /// What an operator reads: what fails, since when, and the error.
    pub fn message(&self) -> String {
        match self {
            Stalled::WatchFailing {
                watch,
                since,
                error,
            } => format!(
                "The provider cannot make progress: its watch of {watch} has been failing since {since}: {error}"
            ),
            Stalled::QueueStalled { since } => format!(
                "The provider cannot make progress: changes have been waiting since {since} and no reconcile has finished"
            ),
        }
    }
}

/// What a controller's streams delivered, for [`Progress::verdict`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    failing: BTreeMap<String, ErrorRun>,
    waiting_since: Option<Timestamp>,
}

impl Progress {
    /// Watch `watch` delivered an event: it works.
    pub fn watch_ok(&mut self, watch: &str) {
        self.failing.remove(watch);
    }

    /// Watch `watch` reported `error` at `now`.
    pub fn watch_error(&mut self, watch: &str, error: String, now: Timestamp) {
        match self.failing.get_mut(watch) {
            Some(run) if !older_than(run.last, now, ERROR_RUN_GAP) => {
                run.last = now;
                run.error = error;
            }
            _ => {
                self.failing.insert(
                    watch.to_string(),
                    ErrorRun {
                        first: now,
                        last: now,
                        error,
                    },
                );
            }
        }
    }

    /// A change arrived at `now` that queues a reconcile.
    pub fn arrived(&mut self, now: Timestamp) {
        self.waiting_since.get_or_insert(now);
    }

    /// A reconcile finished (successfully or not): the queue moves.
    pub fn completed(&mut self) {
        self.waiting_since = None;
    }

    /// Whether the controller cannot make progress at `now`: a watch whose errors have come
    /// without a pause of [`ERROR_RUN_GAP`] for at least `deadline` (the longest-failing one),
    /// else work waiting for at least `deadline` with no reconcile finished.
    pub fn verdict(&self, now: Timestamp, deadline: Duration) -> Option<Stalled> {
        let failing = self
            .failing
            .iter()
            .filter(|(_, run)| {
                !older_than(run.last, now, ERROR_RUN_GAP) && older_than(run.first, now, deadline)
            })
            .min_by_key(|(_, run)| run.first);
        if let Some((watch, run)) = failing {
            return Some(Stalled::WatchFailing {
                watch: watch.clone(),
                since: run.first,
                error: run.error.clone(),
            });
        }
        self.waiting_since
            .filter(|since| older_than(*since, now, deadline))
            .map(|since| Stalled::QueueStalled { since })
    }
}

/// Whether `then` is at least `age` before `now`.
fn older_than(then: Timestamp, now: Timestamp, age: Duration) -> bool {
    now.duration_since(then)
        .try_into()
        .is_ok_and(|elapsed: Duration| elapsed >= age)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    const DEADLINE: Duration = Duration::from_secs(30);

    #[test]
    fn backoff_is_bounded_and_resets() {
        let mut backoff = WatchBackoff::default();
        let waits: Vec<Duration> = (0..12).map(|_| backoff.next().unwrap()).collect();
        assert!(
            (250..300).contains(&waits[0].as_millis()),
            "first wait 250 ms (+ up to 50): {:?}",
            waits[0]
        );
        assert!(
            waits
                .iter()
                .all(|w| *w <= WATCH_BACKOFF_MAX + WATCH_BACKOFF_MAX / 5)
        );
        let total: Duration = waits.iter().sum();
        // kube's default would wait 0.8+1.6+...+30+30... ≈ 230 s for the same 12 errors (42.75 s here before jitter).
        assert!(total < Duration::from_secs(52), "{total:?}");
        assert_eq!(backoff.base(), WATCH_BACKOFF_MAX);
        backoff.reset();
        assert_eq!(backoff.base(), WATCH_BACKOFF_MIN);
    }

    #[test]
    fn a_watch_failing_without_pause_is_reported_after_the_deadline() {
        let mut p = Progress::default();
        for s in (0..=25).step_by(5) {
            p.watch_error("workspaces.kaito.sh", format!("403 at {s}"), at(s));
        }
        assert_eq!(p.verdict(at(29), DEADLINE), None, "not yet for 30 s");
        p.watch_error("workspaces.kaito.sh", "403 forbidden".into(), at(30));
        let stalled = p.verdict(at(31), DEADLINE).unwrap();
        assert_eq!(
            stalled,
            Stalled::WatchFailing {
                watch: "workspaces.kaito.sh".into(),
                since: at(0),
                error: "403 forbidden".into()
            }
        );
        assert_eq!(stalled.reason(), reasons::WATCH_FAILING);
        assert!(
            stalled
                .message()
                .contains("watch of workspaces.kaito.sh has been failing since 2027-01-15T08:00:00Z: 403 forbidden"),
            "{}",
            stalled.message()
        );
        // The stable verdict: the same message at the next tick.
        assert_eq!(p.verdict(at(32), DEADLINE), Some(stalled));
        // An event: the watch works again.
        p.watch_ok("workspaces.kaito.sh");
        assert_eq!(p.verdict(at(33), DEADLINE), None);
    }

    #[test]
    fn a_watch_that_resumed_quietly_is_not_failing() {
        let mut p = Progress::default();
        // Errors for 40 s, then the watch resumes and delivers nothing (no event to say so).
        for s in (0..=40).step_by(4) {
            p.watch_error("modeldeployments", "connection refused".into(), at(s));
        }
        assert!(p.verdict(at(41), DEADLINE).is_some());
        assert_eq!(
            p.verdict(at(40 + ERROR_RUN_GAP.as_secs() as i64), DEADLINE),
            None,
            "no error for the gap: no longer failing"
        );
        // A lone error later starts a new run: not reported at once.
        p.watch_error("modeldeployments", "403".into(), at(100));
        assert_eq!(p.verdict(at(101), DEADLINE), None);
    }

    #[test]
    fn one_blip_is_never_reported() {
        let mut p = Progress::default();
        p.watch_error("workspaces.kaito.sh", "403".into(), at(0));
        for s in 0..60 {
            assert_eq!(p.verdict(at(s), DEADLINE), None, "at {s}");
        }
    }

    #[test]
    fn the_longest_failing_watch_is_named() {
        let mut p = Progress::default();
        for s in (0..=40).step_by(5) {
            p.watch_error("b", "later".into(), at(s + 5));
            p.watch_error("a", "first".into(), at(s));
        }
        match p.verdict(at(45), DEADLINE) {
            Some(Stalled::WatchFailing { watch, .. }) => assert_eq!(watch, "a"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn work_waiting_without_a_finished_reconcile_is_a_stalled_queue() {
        let mut p = Progress::default();
        p.arrived(at(0));
        p.arrived(at(10));
        assert_eq!(p.verdict(at(29), DEADLINE), None);
        let stalled = p.verdict(at(30), DEADLINE).unwrap();
        assert_eq!(stalled, Stalled::QueueStalled { since: at(0) });
        assert_eq!(stalled.reason(), reasons::QUEUE_STALLED);
        p.completed();
        assert_eq!(p.verdict(at(31), DEADLINE), None);
        // Work that keeps arriving while reconciles keep finishing never stalls.
        for s in 31..200 {
            p.arrived(at(s));
            if s % 5 == 0 {
                p.completed();
            }
            assert_eq!(p.verdict(at(s), DEADLINE), None);
        }
    }
}
