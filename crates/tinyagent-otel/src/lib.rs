//! # tinyagent-otel
//!
//! OpenTelemetry for tinyagent: the spans every run makes (`invoke_agent {agent}`,
//! `chat {model}`, `execute_tool {tool}`, in the GenAI semantic conventions; see
//! [`tinyagent::telemetry`](tinyagent_core::telemetry)) exported as OpenTelemetry spans over OTLP, the metrics they
//! imply (token usage and cost, operation and tool durations, runs in flight, HTTP requests of a
//! server), a Prometheus text endpoint's contents, and W3C trace context in and out.
//!
//! It is configured the standard way, by the `OTEL_*` environment variables, and is off and
//! free when none is set:
//!
//! | variable | what it does |
//! |---|---|
//! | `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`, `..._METRICS_ENDPOINT`) | turns export on, to this collector (`http://127.0.0.1:4318` for OTLP over HTTP) |
//! | `OTEL_EXPORTER_OTLP_PROTOCOL` | `http/protobuf` (the default) or `grpc` (port 4317) |
//! | `OTEL_EXPORTER_OTLP_HEADERS` | `key=value,...` sent with every export (an API key) |
//! | `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` | who the telemetry is from |
//! | `OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG` | which traces are kept (decided at a trace's first span: one not kept costs almost nothing) |
//! | `OTEL_METRIC_EXPORT_INTERVAL` | how often metrics are sent (ms; 60 000) |
//! | `OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none`, `OTEL_METRICS_EXPORTER=none` | turn export off |
//! | `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` | record answers, tool arguments and results on spans (redacted; off by default) |
//!
//! ```no_run
//! use tracing_subscriber::prelude::*;
//!
//! # fn main() -> Result<(), tinyagent_otel::TelemetryError> {
//! let telemetry = tinyagent_otel::Telemetry::from_env()?;
//! tracing_subscriber::registry().with(telemetry.layer()).init();
//! // ... run agents; their spans and metrics go to the collector ...
//! telemetry.shutdown(); // sends what is still buffered (dropping it does too)
//! # Ok(())
//! # }
//! ```
//!
//! Spans are sent in batches from a thread of their own; a run never waits on the collector.

/// The name of the instrumentation scope of tinyagent's spans and metrics (and the prefix of
/// their `tracing` targets).
const SCOPE: &str = "tinyagent";

mod metrics;
mod propagation;
mod sampling;
mod setup;

pub use metrics::Prometheus;
pub use propagation::{continue_trace, inject_context};
pub use setup::{Protocol, Telemetry, TelemetryBuilder, TelemetryError};
