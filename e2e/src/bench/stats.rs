//! Percentiles over samples and quantiles of Prometheus histograms (pure).

use serde::Serialize;

/// A latency distribution in seconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Distribution {
    /// How many samples.
    pub count: usize,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

/// The nearest-rank percentile `p` (0–100) of sorted `samples`.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

impl Distribution {
    /// The distribution of `samples` (any order).
    pub fn of(mut samples: Vec<f64>) -> Distribution {
        samples.sort_by(f64::total_cmp);
        Distribution {
            count: samples.len(),
            p50: percentile(&samples, 50.0),
            p90: percentile(&samples, 90.0),
            p99: percentile(&samples, 99.0),
            max: samples.last().copied().unwrap_or_default(),
        }
    }
}

/// The `q` quantile (0–1) of a cumulative Prometheus histogram given as `(le, count)` pairs in
/// ascending `le` order, interpolated linearly within the bucket as PromQL's
/// `histogram_quantile` does. `None` without observations.
pub fn histogram_quantile(q: f64, buckets: &[(f64, f64)]) -> Option<f64> {
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let mut previous = (0.0, 0.0);
    for &(le, count) in buckets {
        if count >= rank {
            if le.is_infinite() {
                return Some(previous.0);
            }
            let in_bucket = count - previous.1;
            if in_bucket <= 0.0 {
                return Some(le);
            }
            return Some(previous.0 + (le - previous.0) * (rank - previous.1) / in_bucket);
        }
        previous = (le, count);
    }
    Some(previous.0)
}

/// Sums the buckets of every series of histogram `name` in Prometheus text `exposition` whose
/// labels contain all of `filter` (e.g. `type="validating"`), as `(le, cumulative count)`.
pub fn histogram_buckets(exposition: &str, name: &str, filter: &[&str]) -> Vec<(f64, f64)> {
    let prefix = format!("{name}_bucket{{");
    let mut sums: Vec<(f64, f64)> = Vec::new();
    for line in exposition.lines() {
        let Some(rest) = line.strip_prefix(&prefix) else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        if !filter.iter().all(|f| labels.contains(f)) {
            continue;
        }
        let Some(le) = labels
            .split(',')
            .find_map(|l| l.strip_prefix("le=\""))
            .map(|l| l.trim_end_matches('"'))
        else {
            continue;
        };
        let le = if le == "+Inf" {
            f64::INFINITY
        } else {
            le.parse().unwrap_or(f64::NAN)
        };
        let Ok(count) = value.trim().parse::<f64>() else {
            continue;
        };
        match sums.iter_mut().find(|(l, _)| *l == le) {
            Some(entry) => entry.1 += count,
            None => sums.push((le, count)),
        }
    }
    sums.retain(|(le, _)| !le.is_nan());
    sums.sort_by(|a, b| a.0.total_cmp(&b.0));
    sums
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let d = Distribution::of((1..=100).rev().map(f64::from).collect());
        assert_eq!((d.p50, d.p90, d.p99, d.max), (50.0, 90.0, 99.0, 100.0));
        assert_eq!(Distribution::of(vec![]).count, 0);
        assert_eq!(Distribution::of(vec![3.0]).p99, 3.0);
    }

    #[test]
    fn histogram_quantiles_interpolate_like_promql() {
        let buckets = [
            (0.1, 50.0),
            (0.5, 90.0),
            (1.0, 100.0),
            (f64::INFINITY, 100.0),
        ];
        assert!((histogram_quantile(0.5, &buckets).unwrap() - 0.1).abs() < 1e-9);
        assert!((histogram_quantile(0.7, &buckets).unwrap() - 0.3).abs() < 1e-9);
        assert!((histogram_quantile(0.99, &buckets).unwrap() - 0.95).abs() < 1e-9);
        assert_eq!(histogram_quantile(0.5, &[(f64::INFINITY, 0.0)]), None);
    }

    #[test]
    fn buckets_are_summed_across_matching_series() {
        let text = "# HELP x\n\
            apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"a\",type=\"validating\",le=\"0.1\"} 3\n\
            apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"a\",type=\"validating\",le=\"+Inf\"} 4\n\
            apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"b\",type=\"validating\",le=\"0.1\"} 1\n\
            apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"b\",type=\"validating\",le=\"+Inf\"} 1\n\
            apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"c\",type=\"admit\",le=\"0.1\"} 9\n";
        let b = histogram_buckets(
            text,
            "apiserver_admission_webhook_admission_duration_seconds",
            &["type=\"validating\""],
        );
        assert_eq!(b, vec![(0.1, 4.0), (f64::INFINITY, 5.0)]);
    }
}
