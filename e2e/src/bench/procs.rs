//! Memory and CPU of a running process from `/proc` (Linux).

use serde::Serialize;

/// A reading of one process.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ProcessReading {
    /// Resident set size now, MB.
    pub rss_mb: f64,
    /// Peak resident set size so far (`VmHWM`), MB.
    pub peak_rss_mb: f64,
    /// Of the resident set now: anonymous memory (`RssAnon`: the heap, stacks), MB.
    pub rss_anon_mb: f64,
    /// Of the resident set now: file-backed pages (`RssFile`: mostly the executable's code and
    /// read-only data the process touched), MB.
    pub rss_file_mb: f64,
    /// User + system CPU time so far, seconds.
    pub cpu_seconds: f64,
}

/// Clock ticks per second of `/proc/<pid>/stat` (`USER_HZ`, 100 on every Linux ABI).
const USER_HZ: f64 = 100.0;

fn status_kb(status: &str, key: &str) -> Option<f64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse().ok())
}

/// Parses `/proc/<pid>/status` and `/proc/<pid>/stat` contents.
pub fn parse(status: &str, stat: &str) -> ProcessReading {
    // Fields after the command name (which may contain spaces) in parentheses.
    let after_comm = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .unwrap_or_default();
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat, i.e. 11 and 12 after the state field.
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or_default()
    };
    ProcessReading {
        rss_mb: status_kb(status, "VmRSS:").unwrap_or_default() / 1024.0,
        peak_rss_mb: status_kb(status, "VmHWM:").unwrap_or_default() / 1024.0,
        rss_anon_mb: status_kb(status, "RssAnon:").unwrap_or_default() / 1024.0,
        rss_file_mb: status_kb(status, "RssFile:").unwrap_or_default() / 1024.0,
        cpu_seconds: (ticks(11) + ticks(12)) / USER_HZ,
    }
}

/// Reads process `pid` (zeros when it is gone).
pub fn read(pid: u32) -> ProcessReading {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    parse(&status, &stat)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rss_peak_and_cpu() {
        let status = "Name:\tairunway-core\nVmHWM:\t   40960 kB\nVmRSS:\t   20480 kB\nRssAnon:\t   15360 kB\nRssFile:\t    5120 kB\n";
        let stat = "4242 (airunway core) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0";
        let r = parse(status, stat);
        assert_eq!(r.rss_mb, 20.0);
        assert_eq!(r.peak_rss_mb, 40.0);
        assert_eq!((r.rss_anon_mb, r.rss_file_mb), (15.0, 5.0));
        assert_eq!(r.cpu_seconds, 3.0);
    }
}
