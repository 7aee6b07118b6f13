//! The relist phase of the benchmark: kube-apiserver is killed and started again, every
//! controller's watches list all their objects again, and each controller's peak RSS in that
//! window is read against its settled RSS before it (issue 41: peak ≤ 2 × settled).

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use super::procs::{self, ProcessReading};
use crate::control_plane::ControlPlane;

/// How long kube-apiserver stays down.
const DOWN: Duration = Duration::from_secs(2);

/// One controller across a relist.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RelistReading {
    /// RSS just before kube-apiserver was killed, MB.
    pub before_mb: f64,
    /// Peak RSS from the kill until the end of the window, MB (`VmHWM`, reset at the kill).
    pub peak_mb: f64,
    /// RSS at the end of the window, MB.
    pub after_mb: f64,
}

impl RelistReading {
    /// Peak as a multiple of the RSS before.
    pub fn peak_ratio(&self) -> f64 {
        self.peak_mb / self.before_mb.max(f64::EPSILON)
    }
}

/// Resets the peak RSS (`VmHWM`) of `pid` to its RSS now (`/proc/<pid>/clear_refs`, value 5).
fn reset_peak(pid: u32) -> std::io::Result<()> {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5")
}

/// Restarts kube-apiserver and reads each of `controllers` (name, pid) over `window` after it
/// is ready again.
pub async fn measure(
    cp: &ControlPlane,
    controllers: &[(String, u32)],
    window: Duration,
) -> Result<BTreeMap<String, RelistReading>> {
    let mut before = BTreeMap::new();
    for (name, pid) in controllers {
        let reading: ProcessReading = procs::read(*pid);
        if let Err(e) = reset_peak(*pid) {
            eprintln!("cannot reset the peak RSS of {name} ({e}); its peak is the run's");
        }
        before.insert(name.clone(), reading.rss_mb);
    }
    let restart = cp.restart_apiserver(DOWN).await?;
    println!(
        "  kube-apiserver down for {:?}; {:?} of relist ...",
        restart.down, window
    );
    tokio::time::sleep(window).await;
    Ok(controllers
        .iter()
        .map(|(name, pid)| {
            let now = procs::read(*pid);
            let reading = RelistReading {
                before_mb: before.get(name).copied().unwrap_or_default(),
                peak_mb: now.peak_rss_mb,
                after_mb: now.rss_mb,
            };
            (name.clone(), reading)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_ratio_is_against_the_rss_before() {
        let r = RelistReading {
            before_mb: 20.0,
            peak_mb: 30.0,
            after_mb: 21.0,
        };
        assert_eq!(r.peak_ratio(), 1.5);
    }
}
