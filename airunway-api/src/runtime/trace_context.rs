//! The W3C trace context carried from the core's decision to a provider's reconcile
//! (docs/observability.md "Traces").
//!
//! The core writes the `traceparent` of its decision span into `status.provider.traceparent`,
//! only in a status apply it makes anyway (a new selection, a phase change): never a write just
//! for tracing. A provider's reconcile span links to that context: each reconcile stays a trace
//! of its own (a provider reconciles a deployment many times per decision), and the link leads
//! from any of them to the decision that chose the provider. Both directions use the
//! OpenTelemetry crates' W3C propagator, so the value is the standard header's format.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanContext, TraceContextExt};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::constants::traces;
use crate::v1alpha1::ModelDeployment;

/// The W3C `traceparent` of `span`, or `None` when traces are not exported (the span then has
/// no valid OpenTelemetry context).
pub fn traceparent(span: &tracing::Span) -> Option<String> {
    let context = span.context();
    if !context.span().span_context().is_valid() {
        return None;
    }
    let mut carrier: HashMap<String, String> = HashMap::new();
    TraceContextPropagator::new().inject_context(&context, &mut carrier);
    carrier.remove(traces::TRACEPARENT_FIELD)
}

/// The span context a W3C `traceparent` value names, or `None` when the value is not a valid
/// `traceparent` (the trace is then not linked; nothing else depends on it).
pub fn parse(traceparent: &str) -> Option<SpanContext> {
    let carrier = HashMap::from([(
        traces::TRACEPARENT_FIELD.to_string(),
        traceparent.to_string(),
    )]);
    let context = TraceContextPropagator::new().extract(&carrier);
    let span_context = context.span().span_context().clone();
    span_context.is_valid().then_some(span_context)
}

/// The core's decision context a deployment carries (`status.provider.traceparent`), if any.
pub fn decision_context(md: &ModelDeployment) -> Option<SpanContext> {
    md.status
        .as_ref()
        .and_then(|s| s.provider.as_ref())
        .and_then(|p| p.traceparent.as_deref())
        .and_then(parse)
}

/// Links `span` to the core's decision context `md` carries; does nothing when it carries
/// none or traces are not exported.
pub fn link_to_decision(span: &tracing::Span, md: &ModelDeployment) {
    if let Some(decision) = decision_context(md) {
        span.add_link(decision);
    }
}

/// Records `key = value` on `span`'s exported OpenTelemetry span (a no-op when traces are not
/// exported).
pub fn record(span: &tracing::Span, key: &'static str, value: impl Into<String>) {
    span.set_attribute(key, value.into());
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::{SpanId, TraceFlags, TraceId, TraceState};

    use super::*;
    use crate::v1alpha1::{ModelDeploymentStatus, ProviderStatus};

    const VALUE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_w3c_traceparent_parses_to_its_trace_and_span() {
        let parsed = parse(VALUE).expect("a valid traceparent");
        assert_eq!(
            parsed.trace_id(),
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").expect("hex")
        );
        assert_eq!(
            parsed.span_id(),
            SpanId::from_hex("00f067aa0ba902b7").expect("hex")
        );
        assert!(parsed.is_sampled());
        assert!(parsed.is_remote());
    }

    #[test]
    fn malformed_or_zero_values_link_nothing() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "not a traceparent",
        ] {
            assert!(parse(bad).is_none(), "{bad:?} parsed");
        }
    }

    #[test]
    fn the_propagator_writes_what_it_reads() {
        let context = SpanContext::new(
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").expect("hex"),
            SpanId::from_hex("00f067aa0ba902b7").expect("hex"),
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        );
        let mut carrier: HashMap<String, String> = HashMap::new();
        TraceContextPropagator::new().inject_context(
            &opentelemetry::Context::new().with_remote_span_context(context),
            &mut carrier,
        );
        assert_eq!(
            carrier.get(traces::TRACEPARENT_FIELD).map(String::as_str),
            Some(VALUE)
        );
    }

    #[test]
    fn a_deployment_carries_the_decision_in_its_provider_status() {
        let mut md = ModelDeployment::new("m", Default::default());
        assert!(decision_context(&md).is_none());
        md.status = Some(ModelDeploymentStatus {
            provider: Some(ProviderStatus {
                name: Some("vllm".into()),
                traceparent: Some(VALUE.into()),
                ..Default::default()
            }),
            ..Default::default()
        });
        assert_eq!(
            decision_context(&md).map(|c| c.span_id()),
            SpanId::from_hex("00f067aa0ba902b7").ok()
        );
    }

    #[test]
    fn an_exported_span_carries_its_own_context() {
        use opentelemetry::trace::TracerProvider as _;
        use tracing_subscriber::layer::SubscriberExt;
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("decide");
            let written = traceparent(&span).expect("an exported span has a traceparent");
            let read = parse(&written).expect("what is written parses");
            let own = span.context().span().span_context().clone();
            assert_eq!(read.trace_id(), own.trace_id());
            assert_eq!(read.span_id(), own.span_id());
        });
    }

    #[test]
    fn without_an_exporter_a_span_has_no_traceparent() {
        // No OpenTelemetry layer is installed in unit tests: nothing to carry, no cost.
        let span = tracing::info_span!("no exporter");
        assert_eq!(traceparent(&span), None);
        record(&span, traces::DEPLOYMENT, "ns/m");
    }
}
