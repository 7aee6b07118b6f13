use std::net::SocketAddr;
use std::time::Duration;

/// Log output format.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable text.
    Text,
    /// One JSON object per line.
    Json,
}

/// Options every AI Runway binary takes (each also readable from the environment).
#[derive(clap::Args, Clone, Debug)]
pub struct CommonArgs {
    /// Address of the Prometheus `/metrics` endpoint (port 0 disables it).
    #[arg(
        long,
        env = "AIRUNWAY_METRICS_BIND_ADDRESS",
        default_value = "0.0.0.0:8080"
    )]
    pub metrics_bind_address: SocketAddr,

    /// Address of the `/healthz` and `/readyz` endpoints (port 0 disables them).
    #[arg(
        long,
        env = "AIRUNWAY_HEALTH_PROBE_BIND_ADDRESS",
        default_value = "0.0.0.0:8081"
    )]
    pub health_probe_bind_address: SocketAddr,

    /// Run controllers only while holding a Lease, so that several replicas can run.
    #[arg(long, env = "AIRUNWAY_LEADER_ELECT", default_value_t = false)]
    pub leader_elect: bool,

    /// Namespace of the leader election Lease (default: `POD_NAMESPACE`, else
    /// `airunway-system`).
    #[arg(long, env = "AIRUNWAY_LEADER_ELECTION_NAMESPACE")]
    pub leader_election_namespace: Option<String>,

    /// How long a leader's Lease stays valid without renewal; a new leader takes over within
    /// this time after the old one dies.
    #[arg(long, env = "AIRUNWAY_LEADER_ELECTION_LEASE_DURATION", default_value = "15s", value_parser = parse_duration)]
    pub leader_election_lease_duration: Duration,

    /// Log format.
    #[arg(long, env = "AIRUNWAY_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
}

impl CommonArgs {
    /// The Lease namespace: the flag, else `POD_NAMESPACE`, else `airunway-system`.
    pub fn lease_namespace(&self) -> String {
        self.leader_election_namespace
            .clone()
            .or_else(|| std::env::var("POD_NAMESPACE").ok())
            .unwrap_or_else(|| "airunway-system".to_string())
    }
}

/// Parses durations such as `30s`, `5m`, `1h`, `500ms` or a plain number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("invalid duration {text:?}: expected e.g. 30s, 5m, 1h or 500ms"))?;
    let seconds = match unit {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        "d" => value * 86400.0,
        other => {
            return Err(format!(
                "invalid duration unit {other:?} in {text:?}: use ms, s, m, h or d"
            ));
        }
    };
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(format!("invalid duration {text:?}"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert!(parse_duration("5 minutes").is_err());
        assert!(parse_duration("x").is_err());
    }
}
