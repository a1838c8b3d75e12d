//! The OTLP exporter (cargo feature `otel`): when `OTEL_EXPORTER_OTLP_ENDPOINT` (or the
//! traces/metrics variants) is set, the request spans (target `mcp_router::mcp`), exec's
//! `execute_tool` spans (`mcp_router::exec`) and the `mcp.client.operation.duration`
//! histogram (`mcp_router::metrics`) are exported over OTLP/HTTP, protobuf or JSON as
//! `OTEL_EXPORTER_OTLP_PROTOCOL` says (`http/protobuf` by default). The exporters read the
//! standard `OTEL_EXPORTER_OTLP_*` variables themselves; `OTEL_SERVICE_NAME` defaults to
//! `mcp-router`.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;

/// The exporters, flushed and stopped by [`Exporters::shutdown`].
pub(crate) struct Exporters {
    tracer: SdkTracerProvider,
    meter: SdkMeterProvider,
}

impl Exporters {
    /// Sends what is still buffered and stops (call before the process exits).
    pub(crate) fn shutdown(self) {
        if let Err(e) = self.tracer.shutdown() {
            eprintln!("mcp-router: OTLP trace export did not finish: {e}");
        }
        if let Err(e) = self.meter.shutdown() {
            eprintln!("mcp-router: OTLP metric export did not finish: {e}");
        }
    }
}

/// Layers for a subscriber `S`.
pub(crate) type Layers<S> = Vec<Box<dyn Layer<S> + Send + Sync>>;

/// The layers that export spans and metrics, when an OTLP endpoint is configured. Must run
/// outside the async runtime (the exporters' blocking HTTP client starts its own).
pub(crate) fn layers<S>() -> anyhow::Result<Option<(Layers<S>, Exporters)>>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a> + Send + Sync,
{
    let configured = ["", "_TRACES", "_METRICS"]
        .iter()
        .any(|s| std::env::var_os(format!("OTEL_EXPORTER_OTLP{s}_ENDPOINT")).is_some());
    if !configured {
        return Ok(None);
    }
    let service = std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| "mcp-router".into());
    let resource = Resource::builder().with_service_name(service).build();
    let spans = opentelemetry_otlp::SpanExporter::builder().with_http().build()?;
    let tracer = SdkTracerProvider::builder()
        .with_resource(resource.clone())
        .with_batch_exporter(spans)
        .build();
    let metrics = opentelemetry_otlp::MetricExporter::builder().with_http().build()?;
    let meter =
        SdkMeterProvider::builder().with_resource(resource).with_periodic_exporter(metrics).build();
    let spans_wanted = Targets::new()
        .with_target("mcp_router::mcp", tracing::Level::INFO)
        .with_target("mcp_router::exec", tracing::Level::INFO);
    let metrics_wanted = Targets::new().with_target("mcp_router::metrics", tracing::Level::DEBUG);
    let trace_layer = tracing_opentelemetry::layer()
        .with_tracer(tracer.tracer("mcp-router"))
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_filter(spans_wanted);
    let metrics_layer =
        tracing_opentelemetry::MetricsLayer::new(meter.clone()).with_filter(metrics_wanted);
    let layers: Layers<S> = vec![Box::new(trace_layer), Box::new(metrics_layer)];
    Ok(Some((layers, Exporters { tracer, meter })))
}

/// `span` (exec's `execute_tool`) continues the host's trace: its parent is the host's span
/// that `trace` names, so the router's spans and the server's join the host's trace.
pub(crate) fn continue_trace(span: &tracing::Span, trace: &mcp_host::TraceContext) {
    use opentelemetry::propagation::TextMapPropagator as _;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    let mut carrier = std::collections::HashMap::new();
    carrier.insert("traceparent".to_string(), trace.traceparent().to_string());
    if let Some(state) = trace.tracestate() {
        carrier.insert("tracestate".to_string(), state.to_string());
    }
    let propagator = opentelemetry_sdk::propagation::TraceContextPropagator::new();
    let _ = span.set_parent(propagator.extract(&carrier));
}
