//! [`Telemetry`]: the tracer and meter providers the `OTEL_*` variables (or the builder) ask
//! for, and the `tracing` layer that feeds them.

use std::fmt;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{KeyValue, metrics::MeterProvider as _};
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::{Level, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{FilterExt as _, Targets};
use tracing_subscriber::registry::LookupSpan;

use crate::SCOPE;
use crate::metrics::{GenAiMetrics, MetricsLayer, Prometheus};
use crate::sampling::{HeadSampler, Sampling};

/// How telemetry is sent to the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Protocol {
    /// OTLP over HTTP, protobuf bodies (`http/protobuf`; port 4318), the default.
    #[default]
    HttpProtobuf,
    /// OTLP over gRPC (`grpc`; port 4317).
    Grpc,
}

/// Why telemetry could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// The exporter could not be built (a bad endpoint, a protocol this build lacks).
    #[error("OpenTelemetry export could not be set up: {0}")]
    Exporter(String),
    /// The Prometheus reader could not be built.
    #[error("the Prometheus metrics could not be set up: {0}")]
    Prometheus(String),
}

/// What to export, and where: the `OTEL_*` variables by default, or set in code.
#[derive(Debug, Clone)]
#[must_use]
pub struct TelemetryBuilder {
    env: bool,
    endpoint: Option<String>,
    protocol: Option<Protocol>,
    prometheus: bool,
    service_name: Option<String>,
    capture_content: Option<bool>,
    sampling: Option<f64>,
    traces: bool,
    metrics: bool,
    lookup: Lookup,
}

/// Where the variables are read from: the process's environment (tests give another).
type Lookup = fn(&str) -> Option<String>;

fn environment(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

impl TelemetryBuilder {
    fn new() -> Self {
        Self {
            env: true,
            endpoint: None,
            protocol: None,
            prometheus: false,
            service_name: None,
            capture_content: None,
            sampling: None,
            traces: true,
            metrics: true,
            lookup: environment,
        }
    }

    /// A variable's value, when set and not blank.
    fn var(&self, name: &str) -> Option<String> {
        (self.lookup)(name).filter(|v| !v.trim().is_empty())
    }

    fn var_is(&self, name: &str, value: &str) -> bool {
        self.var(name)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case(value))
    }

    /// Whether the `OTEL_*` variables decide what is exported, where, how, by whom and which
    /// traces are kept (on by default): off, only what is set in code counts for those. The
    /// OpenTelemetry SDK and exporter still read their own tuning variables (`OTEL_BSP_*`,
    /// `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS` and timeouts) either way.
    pub fn env(mut self, read: bool) -> Self {
        self.env = read;
        self
    }

    /// Exports traces and metrics to this collector (its base URL, such as
    /// `http://127.0.0.1:4318`), whatever the environment says.
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }

    /// Sends with this protocol (instead of `OTEL_EXPORTER_OTLP_PROTOCOL`'s).
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = Some(protocol);
        self
    }

    /// Whether spans are exported when an endpoint is known (on by default).
    pub fn traces(mut self, export: bool) -> Self {
        self.traces = export;
        self
    }

    /// Whether metrics are exported when an endpoint is known (on by default); a Prometheus
    /// endpoint still gets them when [`prometheus`](Self::prometheus) asks.
    pub fn metrics(mut self, export: bool) -> Self {
        self.metrics = export;
        self
    }

    /// Keeps the metrics for a Prometheus endpoint too ([`Telemetry::prometheus`]), whether
    /// or not they are exported.
    pub fn prometheus(mut self, on: bool) -> Self {
        self.prometheus = on;
        self
    }

    /// The service name used when `OTEL_SERVICE_NAME` sets none (`tinyagent` by default).
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = Some(name.into());
        self
    }

    /// Records content (answers, tool arguments and results) on spans, redacted; by default
    /// only when `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`. See
    /// [`tinyagent::telemetry::capture_content`](tinyagent_core::telemetry::capture_content).
    pub fn capture_content(mut self, on: bool) -> Self {
        self.capture_content = Some(on);
        self
    }

    /// Keeps this fraction of the traces that start in this process (0 to 1; instead of what
    /// `OTEL_TRACES_SAMPLER` says), parent-based: a caller's `traceparent` marked not sampled
    /// is not kept either. The decision is made when a trace's first span starts, so a trace
    /// not kept costs almost nothing; metrics count every run either way.
    ///
    /// # Panics
    ///
    /// If `ratio` is not between 0 and 1.
    pub fn sampling(mut self, ratio: f64) -> Self {
        assert!(
            (0.0..=1.0).contains(&ratio),
            "a sampling ratio is between 0 and 1, not {ratio}"
        );
        self.sampling = Some(ratio);
        self
    }

    /// Which traces are kept: the builder's ratio, else the `OTEL_TRACES_SAMPLER` variables.
    fn trace_sampling(&self) -> Sampling {
        Sampling::chosen(
            self.sampling,
            self.env.then_some(&|name: &str| self.var(name)),
        )
    }

    /// Whether a signal (`TRACES` or `METRICS`) is to be exported.
    fn exports(&self, signal: &str) -> bool {
        let wanted = if signal == "TRACES" {
            self.traces
        } else {
            self.metrics
        };
        if !wanted {
            return false;
        }
        if self.endpoint.is_some() {
            return true;
        }
        if !self.env || self.var_is("OTEL_SDK_DISABLED", "true") {
            return false;
        }
        // OTLP is the only exporter here: `none`, or one this crate does not have (`console`,
        // `zipkin`), exports nothing.
        let exporter = format!("OTEL_{signal}_EXPORTER");
        if self.var(&exporter).is_some_and(|named| {
            !named
                .split(',')
                .any(|e| e.trim().eq_ignore_ascii_case("otlp"))
        }) {
            return false;
        }
        self.var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
            || self
                .var(&format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT"))
                .is_some()
            || self.var_is(&exporter, "otlp")
    }

    fn protocol_for(&self, signal: &str) -> Protocol {
        if let Some(protocol) = self.protocol {
            return protocol;
        }
        if !self.env {
            return Protocol::HttpProtobuf;
        }
        let named = self
            .var(&format!("OTEL_EXPORTER_OTLP_{signal}_PROTOCOL"))
            .or_else(|| self.var("OTEL_EXPORTER_OTLP_PROTOCOL"));
        match named.as_deref().map(str::trim) {
            Some("grpc") => Protocol::Grpc,
            _ => Protocol::HttpProtobuf,
        }
    }

    /// The URL a signal goes to when set in code (`None`: the exporter reads the variables).
    fn url(&self, path: &str, protocol: Protocol) -> Option<String> {
        let base = self.endpoint.as_deref()?.trim_end_matches('/');
        Some(match protocol {
            Protocol::HttpProtobuf => format!("{base}{path}"),
            Protocol::Grpc => base.to_owned(),
        })
    }

    /// The service name to set: none when the environment names the service (the SDK reads
    /// `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` itself), else the builder's or
    /// `tinyagent`.
    fn service_name_to_set(&self) -> Option<&str> {
        let from_env = self.env
            && (self.var("OTEL_SERVICE_NAME").is_some()
                || self
                    .var("OTEL_RESOURCE_ATTRIBUTES")
                    .is_some_and(|attributes| {
                        attributes
                            .split(',')
                            .any(|kv| kv.trim_start().starts_with("service.name="))
                    }));
        (!from_env).then(|| self.service_name.as_deref().unwrap_or("tinyagent"))
    }

    fn resource(&self) -> Resource {
        let mut resource = Resource::builder();
        if let Some(name) = self.service_name_to_set() {
            resource = resource.with_service_name(name.to_owned());
        }
        resource
            .with_attribute(KeyValue::new(
                "telemetry.distro.name",
                "tinyagent-otel".to_owned(),
            ))
            .build()
    }

    fn tracer_provider(
        &self,
        resource: Resource,
        sampling: Sampling,
    ) -> Result<SdkTracerProvider, TelemetryError> {
        let protocol = self.protocol_for("TRACES");
        let url = self.url("/v1/traces", protocol);
        let exporter = match protocol {
            Protocol::HttpProtobuf => {
                let builder = opentelemetry_otlp::SpanExporter::builder()
                    .with_http()
                    .with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
                match url {
                    Some(url) => builder.with_endpoint(url).build(),
                    None => builder.build(),
                }
            }
            Protocol::Grpc => {
                let builder = opentelemetry_otlp::SpanExporter::builder().with_tonic();
                match url {
                    Some(url) => builder.with_endpoint(url).build(),
                    None => builder.build(),
                }
            }
        }
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        Ok(SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_sampler(sampling.sdk_sampler())
            .with_resource(resource)
            .build())
    }

    fn metric_exporter(&self) -> Result<opentelemetry_otlp::MetricExporter, TelemetryError> {
        let protocol = self.protocol_for("METRICS");
        let url = self.url("/v1/metrics", protocol);
        match protocol {
            Protocol::HttpProtobuf => {
                let builder = opentelemetry_otlp::MetricExporter::builder()
                    .with_http()
                    .with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
                match url {
                    Some(url) => builder.with_endpoint(url).build(),
                    None => builder.build(),
                }
            }
            Protocol::Grpc => {
                let builder = opentelemetry_otlp::MetricExporter::builder().with_tonic();
                match url {
                    Some(url) => builder.with_endpoint(url).build(),
                    None => builder.build(),
                }
            }
        }
        .map_err(|e| TelemetryError::Exporter(e.to_string()))
    }

    /// Builds the providers. A gRPC exporter must be built inside a Tokio runtime.
    pub fn build(self) -> Result<Telemetry, TelemetryError> {
        let capture = self.capture_content.unwrap_or_else(|| {
            self.env && self.var_is("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
        });
        tinyagent_core::telemetry::capture_content(capture);
        let resource = self.resource();
        let sampling = self.trace_sampling();
        let tracer = if self.exports("TRACES") {
            tinyagent_core::telemetry::propagate_with(crate::propagation::current_headers);
            tinyagent_core::telemetry::continue_with(crate::propagation::continue_from);
            Some(self.tracer_provider(resource.clone(), sampling)?)
        } else {
            None
        };
        let export_metrics = self.exports("METRICS");
        let disabled = self.env && self.var_is("OTEL_SDK_DISABLED", "true");
        let mut prometheus = None;
        let meter = if export_metrics || (self.prometheus && !disabled) {
            let mut builder = SdkMeterProvider::builder().with_resource(resource);
            if export_metrics {
                builder = builder.with_periodic_exporter(self.metric_exporter()?);
            }
            if self.prometheus && !disabled {
                let registry = prometheus::Registry::new();
                let reader = opentelemetry_prometheus::exporter()
                    .with_registry(registry.clone())
                    .build()
                    .map_err(|e| TelemetryError::Prometheus(e.to_string()))?;
                builder = builder.with_reader(reader);
                prometheus = Some(Prometheus { registry });
            }
            Some(builder.build())
        } else {
            None
        };
        Ok(Telemetry {
            sampler: tracer.as_ref().and_then(|_| sampling.filter()),
            tracer,
            meter,
            prometheus,
        })
    }
}

/// Whether a span or event goes to the exporter: every span (their content attributes are
/// gated by the content switch where they are made); of the events inside them, a provider's
/// retry and failure warnings, and the rest (log lines that may quote tool arguments, results
/// or a server's logs) only when content is captured.
fn exported(meta: &tracing::Metadata<'_>) -> bool {
    meta.is_span()
        || tinyagent_core::telemetry::captures_content()
        || (meta.target().starts_with("tinyagent_http") && *meta.level() <= Level::WARN)
}

/// The telemetry of a process: spans exported over OTLP when asked, metrics exported and/or
/// kept for Prometheus when asked, nothing at all otherwise. Add [`layer`](Self::layer) to
/// the process's `tracing` subscriber. Dropping it sends what is still buffered.
pub struct Telemetry {
    tracer: Option<SdkTracerProvider>,
    /// Drops the traces not kept, at their first span (`None`: every trace is kept).
    sampler: Option<HeadSampler>,
    meter: Option<SdkMeterProvider>,
    prometheus: Option<Prometheus>,
}

impl fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Telemetry")
            .field("traces", &self.tracer.is_some())
            .field("sampler", &self.sampler)
            .field("metrics", &self.meter.is_some())
            .field("prometheus", &self.prometheus.is_some())
            .finish()
    }
}

impl Telemetry {
    /// What the `OTEL_*` variables ask for (see the [crate docs](crate)); nothing when none
    /// is set.
    pub fn from_env() -> Result<Self, TelemetryError> {
        Self::builder().build()
    }

    /// A builder, reading the `OTEL_*` variables unless told not to.
    pub fn builder() -> TelemetryBuilder {
        TelemetryBuilder::new()
    }

    /// Telemetry that exports nothing and keeps nothing.
    pub fn disabled() -> Self {
        Self {
            tracer: None,
            sampler: None,
            meter: None,
            prometheus: None,
        }
    }

    /// Whether spans are exported.
    pub fn exports_traces(&self) -> bool {
        self.tracer.is_some()
    }

    /// Whether metrics are kept (exported, or for Prometheus).
    pub fn keeps_metrics(&self) -> bool {
        self.meter.is_some()
    }

    /// The metrics for a Prometheus endpoint, when the builder asked for them.
    pub fn prometheus(&self) -> Option<&Prometheus> {
        self.prometheus.as_ref()
    }

    /// The `tracing` layer that turns tinyagent's spans into OpenTelemetry spans and metrics:
    /// spans of targets `tinyagent*` at `INFO` and above, with the events logged inside them.
    /// When nothing is exported or kept, a layer that does nothing.
    pub fn layer<S>(&self) -> Box<dyn Layer<S> + Send + Sync + 'static>
    where
        S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        let spans = self.tracer.as_ref().map(|provider| {
            // No thread, code location (the spans are made in one helper module) or busy/idle
            // timings: attributes no GenAI backend reads, paid for on every span and poll.
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer(SCOPE))
                .with_threads(false)
                .with_location(false)
                .with_target(false)
                .with_tracked_inactivity(false)
                .with_context_activation(false)
                .with_filter(
                    Targets::new()
                        .with_target(SCOPE, Level::INFO)
                        .and(tracing_subscriber::filter::filter_fn(exported))
                        .and(self.sampler),
                )
        });
        let metrics = self.meter.as_ref().map(|provider| {
            MetricsLayer {
                metrics: GenAiMetrics::new(&provider.meter(SCOPE)),
            }
            .with_filter(Targets::new().with_target(SCOPE, Level::INFO))
        });
        // No `Option` layers: a `None` beside a filtered layer turns the filter's level hint
        // off, and with it every span. With nothing to do, a layer that wants no span, so that
        // a subscriber with no other layer makes none.
        match (spans, metrics) {
            (Some(spans), Some(metrics)) => Box::new(spans.and_then(metrics)),
            (Some(spans), None) => Box::new(spans),
            (None, Some(metrics)) => Box::new(metrics),
            (None, None) => Box::new(
                tracing_subscriber::layer::Identity::new()
                    .with_filter(tracing_subscriber::filter::LevelFilter::OFF),
            ),
        }
    }

    /// Sends what is buffered (spans, metrics) now, without shutting down.
    pub fn flush(&self) {
        if let Some(tracer) = &self.tracer
            && let Err(err) = tracer.force_flush()
        {
            tracing::debug!(error = %err, "spans could not be flushed");
        }
        if let Some(meter) = &self.meter
            && let Err(err) = meter.force_flush()
        {
            tracing::debug!(error = %err, "metrics could not be flushed");
        }
    }

    /// Sends what is buffered and stops exporting.
    pub fn shutdown(&self) {
        if let Some(tracer) = &self.tracer {
            let _ = tracer.shutdown();
        }
        if let Some(meter) = &self.meter {
            let _ = meter.shutdown();
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(lookup: Lookup) -> TelemetryBuilder {
        TelemetryBuilder {
            lookup,
            ..TelemetryBuilder::new()
        }
    }

    #[test]
    fn nothing_set_exports_nothing() {
        let builder = with(|_| None);
        assert!(!builder.exports("TRACES") && !builder.exports("METRICS"));
    }

    #[test]
    fn an_endpoint_exports_both_signals_unless_one_is_turned_off() {
        let builder = with(|name| {
            (name == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "http://127.0.0.1:4318".into())
        });
        assert!(builder.exports("TRACES") && builder.exports("METRICS"));
        let builder = with(|name| match name {
            "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://127.0.0.1:4318".into()),
            "OTEL_METRICS_EXPORTER" => Some("none".into()),
            _ => None,
        });
        assert!(builder.exports("TRACES") && !builder.exports("METRICS"));
        // An exporter this crate does not have exports nothing rather than OTLP.
        let builder = with(|name| match name {
            "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://127.0.0.1:4318".into()),
            "OTEL_TRACES_EXPORTER" => Some("console".into()),
            _ => None,
        });
        assert!(!builder.exports("TRACES") && builder.exports("METRICS"));
    }

    #[test]
    fn a_signal_endpoint_exports_that_signal_only() {
        let builder = with(|name| {
            (name == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").then(|| "http://c:4318/v1/traces".into())
        });
        assert!(builder.exports("TRACES") && !builder.exports("METRICS"));
    }

    #[test]
    fn the_sdk_disabled_turns_everything_off() {
        let builder = with(|name| match name {
            "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://127.0.0.1:4318".into()),
            "OTEL_SDK_DISABLED" => Some("TRUE".into()),
            _ => None,
        });
        assert!(!builder.exports("TRACES") && !builder.exports("METRICS"));
        let telemetry = builder.prometheus(true).build().unwrap();
        assert!(!telemetry.keeps_metrics() && telemetry.prometheus().is_none());
    }

    #[test]
    fn the_protocol_comes_from_the_signal_then_the_general_variable_unless_ignored() {
        let builder = with(|name| match name {
            "OTEL_EXPORTER_OTLP_PROTOCOL" => Some("grpc".into()),
            "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL" => Some("http/protobuf".into()),
            _ => None,
        });
        assert_eq!(builder.protocol_for("TRACES"), Protocol::Grpc);
        assert_eq!(builder.protocol_for("METRICS"), Protocol::HttpProtobuf);
        let builder = builder.env(false);
        assert_eq!(builder.protocol_for("TRACES"), Protocol::HttpProtobuf);
    }

    #[test]
    fn a_service_name_from_the_environment_is_not_overwritten() {
        let builder = with(|name| {
            (name == "OTEL_RESOURCE_ATTRIBUTES").then(|| "team=ai, service.name=from-env".into())
        });
        assert_eq!(builder.service_name_to_set(), None);
        let builder = with(|name| (name == "OTEL_SERVICE_NAME").then(|| "svc".into()));
        assert_eq!(builder.service_name_to_set(), None);
        let builder = with(|_| None).service_name("mine");
        assert_eq!(builder.service_name_to_set(), Some("mine"));
        assert_eq!(with(|_| None).service_name_to_set(), Some("tinyagent"));
    }
}
