//! Metrics read off the spans as they close: a model call's duration, tokens and cost, a tool
//! call's duration and failure, a run's duration and the runs in flight, a server's requests.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use opentelemetry::metrics::{Counter, Histogram, Meter, UpDownCounter};
use opentelemetry::{Key, KeyValue, StringValue, Value};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Subscriber, span};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// Buckets of `gen_ai.client.operation.duration` and the other durations, in seconds, as the
/// GenAI conventions advise.
const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// Buckets of `gen_ai.client.token.usage`, as the GenAI conventions advise.
const TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// What a span is, for its metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Agent,
    Chat,
    Tool,
    Http,
    McpClient,
    McpServer,
    Store,
    /// A span that only names the API key its runs are for (a server's task away from its
    /// request).
    Keyed,
}

/// The span fields the instruments read: their attributes, the token counts, a call's cost,
/// the API key a server's request or task is for, and whether a server's answer is a stream. No
/// other field is kept (ids, content, finish reasons), so a span costs the metrics only what
/// they use.
const USED: [&str; 18] = [
    "gen_ai.agent.name",
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "gen_ai.tool.name",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "error.type",
    "db.operation.name",
    "mcp.method.name",
    "http.request.method",
    "http.route",
    "http.response.status_code",
    "url.scheme",
    "tinyagent.stream",
    "tinyagent.cost",
    "tinyagent.api_key",
];

/// The fields of a span its metrics need, gathered as they are recorded: numbers as numbers,
/// text shared (an attribute set clones it without copying).
#[derive(Debug, Default)]
struct Fields(Vec<(&'static str, Value)>);

impl Fields {
    fn get(&self, name: &str) -> Option<&Value> {
        self.0
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
    }

    fn is(&self, name: &str, text: &str) -> bool {
        self.get(name).is_some_and(|value| value.as_str() == text)
    }

    fn number(&self, name: &str) -> Option<f64> {
        match self.get(name)? {
            Value::F64(n) => Some(*n),
            Value::I64(n) => Some(*n as f64),
            _ => None,
        }
    }

    fn count(&self, name: &str) -> Option<u64> {
        match self.get(name)? {
            Value::I64(n) => u64::try_from(*n).ok(),
            Value::String(s) => s.as_str().parse().ok(),
            _ => None,
        }
    }

    fn put(&mut self, field: &Field, value: impl FnOnce() -> Value) {
        let name = field.name();
        if let Some(&name) = USED.iter().find(|used| **used == name) {
            self.0.push((name, value()));
        }
    }

    fn attributes(&self, names: &[&'static str]) -> Vec<KeyValue> {
        names
            .iter()
            .filter_map(|&name| {
                let value = self.get(name)?.clone();
                Some(KeyValue::new(Key::from_static_str(name), value))
            })
            .collect()
    }
}

/// Text as an attribute value that clones without copying.
fn shared(text: &str) -> Value {
    Value::String(StringValue::from(Arc::<str>::from(text)))
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, || shared(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, || Value::Bool(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, || {
            i64::try_from(value).map_or_else(|_| shared(&value.to_string()), Value::I64)
        });
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, || Value::I64(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, || Value::F64(value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, || shared(&format!("{value:?}")));
    }
}

/// What the layer keeps in a span's extensions.
struct Timed {
    kind: Kind,
    started: Instant,
    fields: Fields,
    /// A server's answer that is a stream (counted in the active streams until it ends).
    streaming: bool,
}

/// The instruments.
pub(crate) struct GenAiMetrics {
    operation_duration: Histogram<f64>,
    token_usage: Histogram<u64>,
    cost: Counter<f64>,
    tool_duration: Histogram<f64>,
    agent_duration: Histogram<f64>,
    runs_active: UpDownCounter<i64>,
    http_duration: Histogram<f64>,
    http_active: UpDownCounter<i64>,
    streams_active: UpDownCounter<i64>,
    mcp_client_duration: Histogram<f64>,
    mcp_server_duration: Histogram<f64>,
    store_duration: Histogram<f64>,
}

impl GenAiMetrics {
    pub(crate) fn new(meter: &Meter) -> Self {
        let seconds = |name: &'static str, what: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(what)
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build()
        };
        Self {
            operation_duration: seconds(
                "gen_ai.client.operation.duration",
                "How long a model call took, retries included",
            ),
            token_usage: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Tokens a model call used, by gen_ai.token.type")
                .with_boundaries(TOKEN_BUCKETS.to_vec())
                .build(),
            cost: meter
                .f64_counter("tinyagent.cost")
                .with_unit("USD")
                .with_description(
                    "What model calls cost, in US dollars, where their price is known; by \
                     model and by the server's API key whose request ran them",
                )
                .build(),
            tool_duration: seconds(
                "tinyagent.tool.call.duration",
                "How long a tool call took; error.type is set on the failed ones",
            ),
            agent_duration: seconds("tinyagent.agent.run.duration", "How long a run took"),
            runs_active: meter
                .i64_up_down_counter("tinyagent.agent.runs.active")
                .with_unit("{run}")
                .with_description("Runs in flight")
                .build(),
            http_duration: seconds(
                "http.server.request.duration",
                "How long a server took to answer a request, to the last byte of its answer",
            ),
            http_active: meter
                .i64_up_down_counter("http.server.active_requests")
                .with_unit("{request}")
                .with_description("Requests being answered")
                .build(),
            mcp_client_duration: seconds(
                "mcp.client.operation.duration",
                "How long an MCP request took, as its client saw it",
            ),
            mcp_server_duration: seconds(
                "mcp.server.operation.duration",
                "How long an MCP request took to answer, as its server saw it",
            ),
            store_duration: seconds(
                "db.client.operation.duration",
                "How long a session store operation took (a server's store)",
            ),
            streams_active: meter
                .i64_up_down_counter("tinyagent.server.active_streams")
                .with_unit("{stream}")
                .with_description("Answers being streamed")
                .build(),
        }
    }

    fn opened(&self, timed: &Timed) {
        match timed.kind {
            Kind::Agent => self
                .runs_active
                .add(1, &timed.fields.attributes(&["gen_ai.agent.name"])),
            Kind::Http => self.http_active.add(
                1,
                &timed
                    .fields
                    .attributes(&["http.request.method", "http.route", "url.scheme"]),
            ),
            Kind::Chat
            | Kind::Tool
            | Kind::McpClient
            | Kind::McpServer
            | Kind::Store
            | Kind::Keyed => {}
        }
    }

    /// A field was recorded: a server's answer may have turned out to be a stream.
    fn recorded(&self, timed: &mut Timed) {
        if timed.kind == Kind::Http
            && !timed.streaming
            && timed.fields.is("tinyagent.stream", "true")
        {
            timed.streaming = true;
            self.streams_active
                .add(1, &timed.fields.attributes(&["http.route"]));
        }
    }

    /// A model call's cost, for the key its run was for (`key`, from a span around it).
    fn cost(&self, fields: &Fields, key: Option<Value>) {
        let Some(usd) = fields.number("tinyagent.cost") else {
            return;
        };
        let mut attributes = fields.attributes(&["gen_ai.provider.name", "gen_ai.request.model"]);
        if let Some(key) = key {
            attributes.push(KeyValue::new("tinyagent.api_key", key));
        }
        self.cost.add(usd, &attributes);
    }

    fn closed(&self, timed: &Timed) {
        let seconds = timed.started.elapsed().as_secs_f64();
        let fields = &timed.fields;
        match timed.kind {
            Kind::Chat => {
                let mut attributes = fields.attributes(&[
                    "gen_ai.operation.name",
                    "gen_ai.provider.name",
                    "gen_ai.request.model",
                    "gen_ai.response.model",
                    "error.type",
                ]);
                self.operation_duration.record(seconds, &attributes);
                for (field, kind) in [
                    ("gen_ai.usage.input_tokens", "input"),
                    ("gen_ai.usage.output_tokens", "output"),
                ] {
                    if let Some(n) = fields.count(field) {
                        attributes.push(KeyValue::new("gen_ai.token.type", kind));
                        self.token_usage.record(n, &attributes);
                        attributes.pop();
                    }
                }
            }
            Kind::Tool => self.tool_duration.record(
                seconds,
                &fields.attributes(&["gen_ai.tool.name", "error.type"]),
            ),
            Kind::Agent => {
                self.agent_duration.record(
                    seconds,
                    &fields.attributes(&["gen_ai.agent.name", "error.type"]),
                );
                self.runs_active
                    .add(-1, &fields.attributes(&["gen_ai.agent.name"]));
            }
            Kind::Keyed => {}
            Kind::Store => self.store_duration.record(
                seconds,
                &fields.attributes(&["db.operation.name", "error.type"]),
            ),
            Kind::McpClient | Kind::McpServer => {
                let histogram = if timed.kind == Kind::McpClient {
                    &self.mcp_client_duration
                } else {
                    &self.mcp_server_duration
                };
                histogram.record(
                    seconds,
                    &fields.attributes(&["mcp.method.name", "gen_ai.tool.name", "error.type"]),
                );
            }
            Kind::Http => {
                let opened = ["http.request.method", "http.route", "url.scheme"];
                self.http_active.add(-1, &fields.attributes(&opened));
                if timed.streaming {
                    self.streams_active
                        .add(-1, &fields.attributes(&["http.route"]));
                }
                self.http_duration.record(
                    seconds,
                    &fields.attributes(&[
                        "http.request.method",
                        "http.route",
                        "http.response.status_code",
                        "url.scheme",
                        "error.type",
                    ]),
                );
            }
        }
    }
}

/// The `tracing` layer that records [`GenAiMetrics`] from the spans of tinyagent (and of a
/// server's requests: spans with `otel.kind = "server"` and `http.route`).
pub(crate) struct MetricsLayer {
    pub(crate) metrics: GenAiMetrics,
}

fn kind_of(attrs: &Attributes<'_>) -> Option<Kind> {
    let meta = attrs.metadata();
    if !meta.target().starts_with("tinyagent") {
        return None;
    }
    match meta.name() {
        "invoke_agent" => Some(Kind::Agent),
        "chat" => Some(Kind::Chat),
        "execute_tool" => Some(Kind::Tool),
        "mcp_client" => Some(Kind::McpClient),
        "mcp_server" => Some(Kind::McpServer),
        "session_store" => Some(Kind::Store),
        _ if attrs.metadata().fields().field("http.route").is_some() => Some(Kind::Http),
        _ if attrs
            .metadata()
            .fields()
            .field("tinyagent.api_key")
            .is_some() =>
        {
            Some(Kind::Keyed)
        }
        _ => None,
    }
}

impl<S> Layer<S> for MetricsLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(kind) = kind_of(attrs) else {
            return;
        };
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let timed = Timed {
            kind,
            started: Instant::now(),
            fields,
            streaming: false,
        };
        self.metrics.opened(&timed);
        span.extensions_mut().insert(timed);
    }

    fn on_record(&self, id: &span::Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(timed) = span.extensions_mut().get_mut::<Timed>()
        {
            values.record(&mut timed.fields);
            self.metrics.recorded(timed);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(timed) = span.extensions_mut().remove::<Timed>() else {
            return;
        };
        if timed.kind == Kind::Chat {
            // The key of the nearest span around the call that names one (a server's request,
            // or its task).
            let key = span.scope().skip(1).find_map(|parent| {
                parent
                    .extensions()
                    .get::<Timed>()
                    .and_then(|t| t.fields.get("tinyagent.api_key").cloned())
            });
            self.metrics.cost(&timed.fields, key);
        }
        self.metrics.closed(&timed);
    }
}

/// The metrics in the Prometheus text format, for a `/metrics` endpoint (see
/// [`TelemetryBuilder::prometheus`](crate::TelemetryBuilder::prometheus)). Cheap to clone.
#[derive(Clone)]
pub struct Prometheus {
    pub(crate) registry: prometheus::Registry,
}

impl Prometheus {
    /// The metrics as they stand, in the Prometheus text exposition format (version 0.0.4).
    pub fn render(&self) -> String {
        prometheus::TextEncoder::new()
            .encode_to_string(&self.registry.gather())
            .unwrap_or_else(|err| format!("# the metrics could not be written: {err}\n"))
    }

    /// The `Content-Type` of [`render`](Self::render)'s text.
    pub const CONTENT_TYPE: &'static str = "text/plain; version=0.0.4; charset=utf-8";
}

impl fmt::Debug for Prometheus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prometheus").finish_non_exhaustive()
    }
}
