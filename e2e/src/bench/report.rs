//! The benchmark's figures, as a table for people and JSON for tools.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::audit::Counts;
use super::procs::ProcessReading;
use super::stats::Distribution;

/// Figures of one process.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ProcessFigures {
    /// After the burst (everything Running).
    pub after_burst: ProcessReading,
    /// After the steady-state window.
    pub settled: ProcessReading,
    /// Watches open at the end of the steady-state window (from the audit log).
    pub open_watches: i64,
    /// Writes during the burst, per deployment.
    pub writes_per_deployment: f64,
    /// Reads (get, list) during the burst, per deployment.
    pub reads_per_deployment: f64,
    /// Across the relist after the steady state (a controller only).
    pub relist: Option<super::relist::RelistReading>,
}

/// Everything a run measured.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// Deployments created.
    pub count: usize,
    /// Concurrent creating clients.
    pub clients: usize,
    /// Namespaces they were spread over.
    pub namespaces: usize,
    /// Providers exercised.
    pub providers: Vec<String>,
    /// Creates that failed.
    pub create_failures: usize,
    /// Seconds the burst of creates took.
    pub create_seconds: f64,
    /// Creates per second the API server (with the webhooks) allowed.
    pub creates_per_second: f64,
    /// Creation → `status.provider.name`.
    pub selection_latency: Distribution,
    /// Creation → upstream object exists.
    pub upstream_latency: Distribution,
    /// Creation → `Running` (simulated upstream status).
    pub running_latency: Distribution,
    /// From the first create: all selected.
    pub all_selected_seconds: Option<f64>,
    /// From the first create: all upstream objects exist.
    pub all_upstream_seconds: Option<f64>,
    /// From the first create: all Running.
    pub all_running_seconds: Option<f64>,
    /// Seconds after the last create until all were selected / had upstream objects.
    pub after_last_create: (Option<f64>, Option<f64>),
    /// Validating and mutating webhook latency as the API server measures it: p50, p99 (s).
    pub admission_webhook_seconds: BTreeMap<String, (f64, f64)>,
    /// Per process.
    pub processes: BTreeMap<String, ProcessFigures>,
    /// Requests during the burst (until all Running).
    pub burst_requests: Counts,
    /// Seconds of the steady-state window.
    pub steady_seconds: f64,
    /// Writes in the steady-state window.
    pub steady_writes: Vec<String>,
    /// Seconds of the relist window after kube-apiserver's restart (none when skipped).
    pub relist_seconds: Option<f64>,
    /// Writes from the restart to the end of the relist window.
    pub relist_writes: Vec<String>,
    /// Seconds from deleting every deployment until all and their upstream objects are gone.
    pub delete_seconds: Option<f64>,
    /// Writes during the deletion.
    pub delete_requests: Counts,
    /// The floor: seconds for the minimum writes by a plain client (see `floor`).
    pub floor_seconds: Option<f64>,
    /// All-Running time as a multiple of the floor.
    pub floor_ratio: Option<f64>,
    /// Whether the defaults came from the MutatingAdmissionPolicy (no mutating webhook).
    pub mutating_policy: bool,
}

fn opt(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.1} s"))
        .unwrap_or_else(|| "not reached".into())
}

fn dist(d: &Distribution) -> String {
    format!(
        "{:.2} / {:.2} / {:.2} / {:.2} s (n={})",
        d.p50, d.p90, d.p99, d.max, d.count
    )
}

impl Report {
    /// The human-readable table.
    pub fn table(&self) -> String {
        let mut t = String::new();
        let _ = writeln!(
            t,
            "AI Runway scale benchmark: {} ModelDeployments, {} clients, {} namespaces, providers {}; defaults by {}",
            self.count,
            self.clients,
            self.namespaces,
            self.providers.join(", "),
            if self.mutating_policy {
                "the MutatingAdmissionPolicy"
            } else {
                "the mutating webhook"
            }
        );
        let rows: Vec<(String, String)> = vec![
            (
                "creates (failed)".into(),
                format!(
                    "{:.1} s, {:.0}/s ({} failed)",
                    self.create_seconds, self.creates_per_second, self.create_failures
                ),
            ),
            (
                "selection latency p50/p90/p99/max".into(),
                dist(&self.selection_latency),
            ),
            (
                "upstream object latency p50/p90/p99/max".into(),
                dist(&self.upstream_latency),
            ),
            (
                "Running latency p50/p90/p99/max".into(),
                dist(&self.running_latency),
            ),
            (
                "all selected / all upstream / all Running".into(),
                format!(
                    "{} / {} / {}",
                    opt(self.all_selected_seconds),
                    opt(self.all_upstream_seconds),
                    opt(self.all_running_seconds)
                ),
            ),
            (
                "after the last create: all selected / all upstream".into(),
                format!(
                    "{} / {}",
                    opt(self.after_last_create.0),
                    opt(self.after_last_create.1)
                ),
            ),
            (
                "floor (plain client, minimum writes)".into(),
                format!(
                    "{} (all Running = {} × floor)",
                    opt(self.floor_seconds),
                    self.floor_ratio
                        .map(|r| format!("{r:.2}"))
                        .unwrap_or_else(|| "-".into())
                ),
            ),
            ("delete all → gone".into(), opt(self.delete_seconds)),
        ];
        for (k, v) in rows {
            let _ = writeln!(t, "  {k:<52} {v}");
        }
        for (kind, (p50, p99)) in &self.admission_webhook_seconds {
            let _ = writeln!(
                t,
                "  {:<52} {:.1} / {:.1} ms",
                format!("{kind} webhook p50/p99 (apiserver metric)"),
                p50 * 1000.0,
                p99 * 1000.0
            );
        }
        let _ = writeln!(
            t,
            "  {:<24} {:>12} {:>12} {:>12} {:>11} {:>8} {:>10} {:>10}",
            "process",
            "RSS burst MB",
            "RSS peak MB",
            "RSS settled",
            "anon/file",
            "CPU s",
            "writes/md",
            "reads/md"
        );
        for (name, p) in &self.processes {
            let _ = writeln!(
                t,
                "  {:<24} {:>12.1} {:>12.1} {:>12.1} {:>11} {:>8.1} {:>10.2} {:>10.2}   watches open: {}",
                name,
                p.after_burst.rss_mb,
                p.settled.peak_rss_mb,
                p.settled.rss_mb,
                format!("{:.1}/{:.1}", p.settled.rss_anon_mb, p.settled.rss_file_mb),
                p.settled.cpu_seconds,
                p.writes_per_deployment,
                p.reads_per_deployment,
                p.open_watches
            );
        }
        let _ = writeln!(
            t,
            "  writes in {:.0} s of steady state:",
            self.steady_seconds
        );
        if self.steady_writes.is_empty() {
            let _ = writeln!(t, "    none");
        }
        for line in &self.steady_writes {
            let _ = writeln!(t, "    {line}");
        }
        if let Some(window) = self.relist_seconds {
            let _ = writeln!(
                t,
                "  relist (kube-apiserver restarted, {window:.0} s): RSS before / peak / after MB, peak ÷ before"
            );
            for (name, p) in &self.processes {
                if let Some(r) = &p.relist {
                    let _ = writeln!(
                        t,
                        "    {:<24} {:>8.1} {:>8.1} {:>8.1}   {:.2} ×",
                        name,
                        r.before_mb,
                        r.peak_mb,
                        r.after_mb,
                        r.peak_ratio()
                    );
                }
            }
            let _ = writeln!(t, "  writes from the restart to the end of the relist:");
            if self.relist_writes.is_empty() {
                let _ = writeln!(t, "    none");
            }
            for line in &self.relist_writes {
                let _ = writeln!(t, "    {line}");
            }
        }
        let _ = writeln!(t, "  writes while deleting everything:");
        for line in self.delete_requests.write_lines() {
            let _ = writeln!(t, "    {line}");
        }
        t
    }
}
