//! The seeded fault schedule (pure): which fault at which moment of the run.

use std::fmt;
use std::time::Duration;

use crate::bench::workload::Target;

/// One fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// `kill -9` the core's leader (a replacement starts at once).
    KillCore,
    /// `kill -9` the leader of a provider (a replacement starts at once).
    KillProvider(Target),
    /// `kill -9` kube-apiserver and start it again with the same flags.
    RestartApiServer,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::KillCore => f.write_str("kill -9 core leader"),
            Fault::KillProvider(t) => write!(f, "kill -9 {} leader", t.name()),
            Fault::RestartApiServer => f.write_str("kill -9 + restart kube-apiserver"),
        }
    }
}

/// A fault at an offset from the start of the burst.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scheduled {
    /// When, from the start of the burst.
    pub at: Duration,
    /// What.
    pub fault: Fault,
}

/// splitmix64: a small, well-known generator; the same seed gives the same schedule.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
}

/// `count` faults at seeded random moments within `span`, at least `gap` apart, sorted. Every
/// kind of fault appears when `count` allows (the core, each of `targets`, the API server),
/// then the rest are drawn at random.
pub fn schedule(
    seed: u64,
    count: usize,
    targets: &[Target],
    span: Duration,
    gap: Duration,
) -> Vec<Scheduled> {
    let mut rng = SplitMix(seed);
    let mut kinds: Vec<Fault> = std::iter::once(Fault::KillCore)
        .chain(targets.iter().map(|t| Fault::KillProvider(*t)))
        .chain(std::iter::once(Fault::RestartApiServer))
        .collect();
    let all = kinds.clone();
    // Shuffle the first round (Fisher-Yates), then draw.
    for i in (1..kinds.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        kinds.swap(i, j);
    }
    while kinds.len() < count {
        kinds.push(all[rng.below(all.len() as u64) as usize]);
    }
    kinds.truncate(count);
    // Moments: `count` slots of span/count each, one moment drawn inside each slot (so faults
    // are spread over the whole burst yet random), at least `gap` apart.
    let slot = span.checked_div(count.max(1) as u32).unwrap_or_default();
    let mut out: Vec<Scheduled> = Vec::with_capacity(count);
    for (i, fault) in kinds.into_iter().enumerate() {
        let start = slot * i as u32;
        let jitter = Duration::from_millis(rng.below(slot.as_millis().max(1) as u64));
        let mut at = start + jitter;
        if let Some(previous) = out.last()
            && at < previous.at + gap
        {
            at = previous.at + gap;
        }
        out.push(Scheduled { at, fault });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_schedule_and_every_fault_kind_appears() {
        let targets = [Target::Kaito, Target::Dynamo, Target::Kuberay];
        let span = Duration::from_secs(60);
        let gap = Duration::from_secs(4);
        let a = schedule(42, 8, &targets, span, gap);
        assert_eq!(a, schedule(42, 8, &targets, span, gap));
        assert_ne!(a, schedule(43, 8, &targets, span, gap));
        assert_eq!(a.len(), 8);
        for kind in [
            Fault::KillCore,
            Fault::KillProvider(Target::Kaito),
            Fault::KillProvider(Target::Dynamo),
            Fault::KillProvider(Target::Kuberay),
            Fault::RestartApiServer,
        ] {
            assert!(
                a.iter().any(|s| s.fault == kind),
                "{kind} missing from {a:?}"
            );
        }
        for pair in a.windows(2) {
            assert!(pair[1].at >= pair[0].at + gap, "{a:?}");
        }
        assert!(a.iter().all(|s| s.at < span + gap * 8));
    }

    #[test]
    fn fewer_faults_than_kinds() {
        let s = schedule(
            7,
            2,
            &[Target::Kaito],
            Duration::from_secs(10),
            Duration::ZERO,
        );
        assert_eq!(s.len(), 2);
        assert!(
            schedule(
                7,
                0,
                &[Target::Kaito],
                Duration::from_secs(10),
                Duration::ZERO
            )
            .is_empty()
        );
    }
}
