//! Replica counts read from upstream objects (pure). Upstream status is written by other
//! operators and may hold anything: a count is clamped into `0..=i32::MAX` and sums saturate,
//! so a hostile or corrupt number never overflows a translation.

use serde_json::Value;

/// The replica count in `value`: a JSON integer clamped into `0..=i32::MAX`; `None` when
/// `value` is not an integer.
pub fn replica_count(value: &Value) -> Option<i32> {
    value
        .as_i64()
        .map(|n| i32::try_from(n.clamp(0, i64::from(i32::MAX))).unwrap_or(i32::MAX))
}

/// The saturating sum of replica counts.
pub fn sum_replicas(counts: impl IntoIterator<Item = i32>) -> i32 {
    counts.into_iter().fold(0, i32::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_are_clamped_into_the_i32_range() {
        assert_eq!(replica_count(&json!(3)), Some(3));
        assert_eq!(replica_count(&json!(-4)), Some(0));
        assert_eq!(replica_count(&json!(i64::MAX)), Some(i32::MAX));
        assert_eq!(replica_count(&json!("2")), None);
        assert_eq!(replica_count(&Value::Null), None);
    }

    #[test]
    fn sums_saturate() {
        assert_eq!(sum_replicas([1, 2, 3]), 6);
        assert_eq!(sum_replicas([i32::MAX, i32::MAX]), i32::MAX);
        assert_eq!(sum_replicas([]), 0);
    }
}
