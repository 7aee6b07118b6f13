use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use super::LogFormat;

/// Flushes and shuts down the trace pipeline when dropped.
pub struct TelemetryGuard {
    provider: Option<SdkTracerProvider>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(e) = provider.shutdown()
        {
            eprintln!("flushing traces failed: {e}");
        }
    }
}

/// Sets up logging (`RUST_LOG`, default `info`) in `format`, and OpenTelemetry trace export
/// over OTLP/gRPC when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the standard `OTEL_*` variables
/// configure it: `OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER`, `OTEL_EXPORTER_OTLP_TIMEOUT`, ...).
/// Without an endpoint no OpenTelemetry layer is installed: spans are only the log's context.
/// Must run inside the tokio runtime.
pub fn init_telemetry(service: &'static str, format: LogFormat) -> anyhow::Result<TelemetryGuard> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let fmt = match format {
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .boxed(),
        LogFormat::Text => tracing_subscriber::fmt::layer().boxed(),
    };
    let provider = if std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").is_some() {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .build()?;
        // `OTEL_SERVICE_NAME` (read by the SDK's resource detectors) names the service when
        // set; the binary's own name otherwise. The sampler follows `OTEL_TRACES_SAMPLER` and
        // `OTEL_TRACES_SAMPLER_ARG` (the SDK's default configuration reads them).
        let mut resource = opentelemetry_sdk::Resource::builder();
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name(service);
        }
        let resource = resource.build();
        Some(
            SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(resource)
                .build(),
        )
    } else {
        None
    };
    let otel = provider
        .as_ref()
        .map(|p| tracing_opentelemetry::layer().with_tracer(p.tracer(service)));
    tracing_subscriber::registry()
        .with(filter)
        .with(fmt)
        .with(otel)
        .try_init()?;
    if provider.is_some() {
        tracing::info!("exporting traces over OTLP");
    }
    Ok(TelemetryGuard { provider })
}
