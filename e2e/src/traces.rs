//! A real trace receiver for the traces suite: a minimal OpenTelemetry Collector
//! (`go.opentelemetry.io/collector/otelcol` with the OTLP receiver and the debug exporter,
//! built by `e2e/go/otelcol/build.sh`) receiving OTLP/gRPC on loopback, and the spans it wrote
//! read back from the debug exporter's detailed output.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Result, bail};

use crate::binaries::free_port;
use crate::paths;
use crate::process::{Lifetime, ProcessHandle, Spawn};
use crate::wait::eventually;

/// One span as the collector received it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExportedSpan {
    /// The `service.name` of the resource that sent it.
    pub service: String,
    /// Trace ID (hex).
    pub trace_id: String,
    /// Parent span ID (hex; empty for a trace's root).
    pub parent_id: String,
    /// Span ID (hex).
    pub id: String,
    /// Span name.
    pub name: String,
    /// Attributes, string values without their type (`Str(x)` is `x`), others as printed.
    pub attributes: BTreeMap<String, String>,
    /// Links: (trace ID, span ID).
    pub links: Vec<(String, String)>,
}

impl ExportedSpan {
    /// The attribute `key`.
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

/// `$AIRUNWAY_OTELCOL_BIN`, else the collector `e2e/go/otelcol/build.sh` builds (instant when
/// cached; `e2e/run-tests` builds it in the background with the control plane).
pub fn collector_binary() -> Result<PathBuf> {
    let path = match std::env::var_os("AIRUNWAY_OTELCOL_BIN") {
        Some(path) => PathBuf::from(path),
        None => {
            let stdout = paths::run_script("e2e/go/otelcol/build.sh")?;
            PathBuf::from(stdout.trim()).join("otelcol")
        }
    };
    if !path.is_file() {
        bail!(
            "{} is missing: build it with `e2e/go/otelcol/build.sh`",
            path.display()
        );
    }
    Ok(path)
}

/// A running collector.
pub struct Collector {
    /// `http://127.0.0.1:<port>`: its OTLP/gRPC endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub endpoint: String,
    spans_file: PathBuf,
    process: ProcessHandle,
}

impl Collector {
    /// Starts a collector writing into `dir` and waits until its OTLP port accepts connections.
    pub async fn start(dir: &Path) -> Result<Collector> {
        let program = collector_binary()?;
        std::fs::create_dir_all(dir)?;
        let port = free_port();
        let spans_file = dir.join("spans.txt");
        let config = dir.join("otelcol.yaml");
        // Internal metrics off: the collector would otherwise listen on :8888, which tests
        // running at the same time would share.
        std::fs::write(
            &config,
            format!(
                "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:{port}\n\
                 exporters:\n  debug:\n    verbosity: detailed\n    use_internal_logger: false\n    \
                 sampling_initial: 1000000\n    sampling_thereafter: 1\n    output_paths: [{}]\n\
                 service:\n  telemetry:\n    metrics:\n      level: none\n  pipelines:\n    traces:\n      \
                 receivers: [otlp]\n      exporters: [debug]\n",
                spans_file.display()
            ),
        )?;
        let process = Spawn {
            name: "otelcol".into(),
            program,
            args: vec![format!("--config={}", config.display())],
            env: BTreeMap::new(),
            log: dir.join("otelcol.log"),
            lifetime: Lifetime::WithTestProcess,
        }
        .start()?;
        eventually(
            "the collector's OTLP port to accept connections",
            Duration::from_secs(30),
            || async {
                if let Some(status) = process.exit_status() {
                    panic!(
                        "the collector exited during startup ({status}):\n{}",
                        process.log_tail(30)
                    );
                }
                tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            },
        )
        .await;
        Ok(Collector {
            endpoint: format!("http://127.0.0.1:{port}"),
            spans_file,
            process,
        })
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ExportedSpan> {
        std::fs::read_to_string(&self.spans_file)
            .map(|text| parse_debug_output(&text))
            .unwrap_or_default()
    }

    /// The collector's log tail (for failure reports).
    pub fn log_tail(&self, lines: usize) -> String {
        self.process.log_tail(lines)
    }
}

#[derive(PartialEq)]
enum Section {
    Resource,
    Span,
    Attributes,
    Links,
    Other,
}

/// `     -> key: value` (the debug exporter's attribute and link lines) as (key, value).
fn arrow(line: &str) -> Option<(&str, &str)> {
    line.trim_start().strip_prefix("-> ")?.split_once(": ")
}

/// `Str(x)` is `x`; values of other types stay as printed (`Int(3)`).
fn untyped(value: &str) -> String {
    value
        .strip_prefix("Str(")
        .and_then(|v| v.strip_suffix(')'))
        .unwrap_or(value)
        .to_string()
}

/// Parses the debug exporter's `detailed` trace output (collector v0.165.0,
/// `exporter/debugexporter/internal/otlptext`) into spans.
pub fn parse_debug_output(text: &str) -> Vec<ExportedSpan> {
    let mut spans = Vec::new();
    let mut service = String::new();
    let mut current: Option<ExportedSpan> = None;
    let mut section = Section::Other;
    for line in text.lines() {
        if line.starts_with("ResourceSpans #") {
            spans.extend(current.take());
            service.clear();
            section = Section::Other;
        } else if line == "Resource attributes:" {
            section = Section::Resource;
        } else if line.starts_with("ScopeSpans #") {
            spans.extend(current.take());
            section = Section::Other;
        } else if line.starts_with("Span #") {
            spans.extend(current.take());
            current = Some(ExportedSpan {
                service: service.clone(),
                ..Default::default()
            });
            section = Section::Span;
        } else if line == "Attributes:" && current.is_some() {
            section = Section::Attributes;
        } else if line == "Links:" && current.is_some() {
            section = Section::Links;
        } else if line == "Events:" {
            section = Section::Other;
        } else if let Some((key, value)) = arrow(line) {
            match (&section, current.as_mut()) {
                (Section::Resource, _) if key == "service.name" => service = untyped(value),
                (Section::Attributes, Some(span)) => {
                    span.attributes.insert(key.to_string(), untyped(value));
                }
                (Section::Links, Some(span)) if key == "Trace ID" => {
                    span.links.push((value.trim().to_string(), String::new()));
                }
                (Section::Links, Some(span)) if key == "ID" => {
                    if let Some(link) = span.links.last_mut() {
                        link.1 = value.trim().to_string();
                    }
                }
                _ => {}
            }
        } else if section == Section::Span
            && let Some(span) = current.as_mut()
            && let Some((label, value)) = line.trim_start().split_once(':')
        {
            let value = value.trim().to_string();
            match label.trim() {
                "Trace ID" => span.trace_id = value,
                "Parent ID" => span.parent_id = value,
                "ID" => span.id = value,
                "Name" => span.name = value,
                _ => {}
            }
        } else if !line.starts_with(' ') && !line.is_empty() {
            // Anything else at the start of a line (a log message of the exporter, a new
            // section header) ends the section.
            section = match section {
                Section::Span if line.starts_with("SpanLink #") => Section::Span,
                Section::Links if line.starts_with("SpanLink #") => Section::Links,
                _ => Section::Other,
            };
        }
    }
    spans.extend(current);
    spans
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The detailed output of the debug exporter of collector v0.165.0 for two resources.
    const OUTPUT: &str = "Traces\t{\"resource spans\": 2, \"spans\": 3}
ResourceSpans #0
Resource SchemaURL: 
Resource attributes:
     -> service.name: Str(airunway-core)
     -> telemetry.sdk.language: Str(rust)
ScopeSpans #0
ScopeSpans SchemaURL: 
InstrumentationScope airunway-core 
Span #0
    Trace ID       : 4bf92f3577b34da6a3ce929d0e0e4736
    Parent ID      : 
    ID             : 00f067aa0ba902b7
    Name           : airunway.reconcile
    Kind           : Internal
    Start time     : 2026-11-27 16:51:58.655 +0000 UTC
    End time       : 2026-11-27 16:51:58.700 +0000 UTC
    Status code    : Unset
    Status message : 
    DroppedAttributesCount: 0
    DroppedEventsCount: 0
    DroppedLinksCount: 0
Attributes:
     -> airunway.deployment: Str(ns/chat)
     -> busy_ns: Int(1200)
Events:
SpanEvent #0
     -> Name: reconciled
     -> Timestamp: 2026-11-27 16:51:58.690 +0000 UTC
     -> DroppedAttributesCount: 0
     -> Attributes::
          -> level: Str(DEBUG)
Span #1
    Trace ID       : 4bf92f3577b34da6a3ce929d0e0e4736
    Parent ID      : 00f067aa0ba902b7
    ID             : 1111111111111111
    Name           : airunway.decide
    Kind           : Internal
Attributes:
     -> airunway.provider: Str(configmap)
ResourceSpans #1
Resource SchemaURL: 
Resource attributes:
     -> service.name: Str(configmap-provider)
ScopeSpans #0
InstrumentationScope configmap-provider 
Span #0
    Trace ID       : 9999999999999999999999999999aaaa
    Parent ID      : 
    ID             : 2222222222222222
    Name           : airunway.reconcile
    Kind           : Internal
Attributes:
     -> airunway.component: Str(configmap)
Links:
SpanLink #0
     -> Trace ID: 4bf92f3577b34da6a3ce929d0e0e4736
     -> ID: 1111111111111111
     -> TraceState: 
     -> DroppedAttributesCount: 0
";

    #[test]
    fn reads_spans_with_their_service_attributes_and_links() {
        let spans = parse_debug_output(OUTPUT);
        assert_eq!(spans.len(), 3);
        let root = &spans[0];
        assert_eq!(root.service, "airunway-core");
        assert_eq!(root.name, "airunway.reconcile");
        assert_eq!(root.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(root.parent_id, "");
        assert_eq!(root.id, "00f067aa0ba902b7");
        assert_eq!(root.attribute("airunway.deployment"), Some("ns/chat"));
        assert_eq!(root.attribute("busy_ns"), Some("Int(1200)"));
        // An event's attributes are not the span's.
        assert_eq!(root.attribute("level"), None);
        assert!(root.links.is_empty());
        assert_eq!(spans[1].parent_id, "00f067aa0ba902b7");
        assert_eq!(spans[1].attribute("airunway.provider"), Some("configmap"));
        let provider = &spans[2];
        assert_eq!(provider.service, "configmap-provider");
        assert_eq!(
            provider.links,
            vec![(
                "4bf92f3577b34da6a3ce929d0e0e4736".to_string(),
                "1111111111111111".to_string()
            )]
        );
    }

    #[test]
    fn nothing_received_is_no_span() {
        assert!(parse_debug_output("").is_empty());
        assert!(parse_debug_output("Traces\t{\"resource spans\": 0, \"spans\": 0}\n").is_empty());
    }
}
