//! When a failed reconcile runs again: a transient failure (see
//! [`ErrorClass::is_transient`](crate::kube_error::ErrorClass::is_transient)) is retried after
//! 5 s, doubling with each further consecutive failure of the same object up to a minute; a
//! success forgets the object's failures. Every controller of every binary retries the same way.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// The first retry of a failed reconcile; each further consecutive failure doubles it.
pub const RETRY_FIRST: Duration = Duration::from_secs(5);
/// The longest wait between retries of a failing reconcile.
pub const RETRY_MAX: Duration = Duration::from_secs(60);

/// The wait before retry `failures` (1: the first) of a transient failure.
pub fn retry_after(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    RETRY_FIRST.saturating_mul(1 << doublings).min(RETRY_MAX)
}

/// Consecutive failures per object (keyed by uid), for [`retry_after`].
#[derive(Debug, Default)]
pub struct FailureCounts {
    counts: Mutex<HashMap<String, u32>>,
}

impl FailureCounts {
    /// Counts one more failure of `uid` and returns the wait before its next retry.
    pub fn failed(&self, uid: &str) -> Duration {
        let mut counts = self
            .counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = counts.entry(uid.to_string()).or_default();
        *count = count.saturating_add(1);
        retry_after(*count)
    }

    /// Forgets the failures of `uid` (its reconcile succeeded, or it is gone).
    pub fn succeeded(&self, uid: &str) {
        let mut counts = self
            .counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        counts.remove(uid);
    }

    /// How many objects have failures on record.
    pub fn len(&self) -> usize {
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// Whether no object has failures on record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_failures_back_off_to_a_minute() {
        let waits: Vec<u64> = (1..=6).map(|n| retry_after(n).as_secs()).collect();
        assert_eq!(waits, [5, 10, 20, 40, 60, 60]);
        assert_eq!(retry_after(u32::MAX), RETRY_MAX);
    }

    #[test]
    fn failures_count_per_object_and_reset_on_success() {
        let counts = FailureCounts::default();
        assert_eq!(counts.failed("a").as_secs(), 5);
        assert_eq!(counts.failed("a").as_secs(), 10);
        assert_eq!(counts.failed("b").as_secs(), 5);
        assert_eq!(counts.len(), 2);
        counts.succeeded("a");
        assert_eq!(counts.failed("a").as_secs(), 5);
        counts.succeeded("a");
        counts.succeeded("b");
        assert!(counts.is_empty());
    }
}
