//! The request fields of Chat Completions besides `model`, `messages`, `stream` and
//! `stream_options`: each one is honoured, refused with a `400 unsupported_parameter` naming
//! it, or ignored on purpose (hints that change no answer). Nothing is dropped silently; the
//! table in `docs/serving.md` says the same.

use serde_json::{Map, Value};
use tinyagent::agent::RunOptions;
use tinyagent::model::{ResponseFormat, ToolChoice};
use tinyagent::tools::schema::SchemaValidator;

use crate::error::ApiError;

/// What the server does with a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Treatment {
    /// Applied to the run.
    Honoured,
    /// Refused unless its value changes nothing (the default), with why.
    Refused(&'static str),
    /// A hint with no effect on the answer: accepted and not used.
    Ignored,
}

/// Every request field of Chat Completions besides `model`, `messages`, `stream` and
/// `stream_options`, and what this server does with it.
pub(crate) const FIELDS: &[(&str, Treatment)] = &[
    ("max_tokens", Treatment::Honoured),
    ("max_completion_tokens", Treatment::Honoured),
    ("temperature", Treatment::Honoured),
    ("top_p", Treatment::Honoured),
    ("stop", Treatment::Honoured),
    ("seed", Treatment::Honoured),
    ("presence_penalty", Treatment::Honoured),
    ("frequency_penalty", Treatment::Honoured),
    ("tool_choice", Treatment::Honoured),
    ("parallel_tool_calls", Treatment::Honoured),
    ("response_format", Treatment::Honoured),
    (
        "n",
        Treatment::Refused("one choice per request is supported"),
    ),
    (
        "tools",
        Treatment::Refused(
            "the agent runs its own tools on the server and reports their calls as `tinyagent` \
             events",
        ),
    ),
    (
        "functions",
        Treatment::Refused("the agent runs its own tools on the server"),
    ),
    (
        "function_call",
        Treatment::Refused("use `tool_choice` (the agent's own tools)"),
    ),
    (
        "logit_bias",
        Treatment::Refused("this server does not pass logit biases to its models"),
    ),
    (
        "logprobs",
        Treatment::Refused("an agent's answer spans several model calls; no log probabilities"),
    ),
    (
        "top_logprobs",
        Treatment::Refused("an agent's answer spans several model calls; no log probabilities"),
    ),
    ("modalities", Treatment::Refused("answers are text only")),
    ("audio", Treatment::Refused("answers are text only")),
    (
        "prediction",
        Treatment::Refused("predicted outputs are not supported"),
    ),
    (
        "web_search_options",
        Treatment::Refused("the agent's tools are the server's; no built-in web search"),
    ),
    (
        "reasoning_effort",
        Treatment::Refused("this server does not pass reasoning effort to its models"),
    ),
    (
        "verbosity",
        Treatment::Refused("this server does not pass verbosity to its models"),
    ),
    ("user", Treatment::Ignored),
    ("safety_identifier", Treatment::Ignored),
    ("prompt_cache_key", Treatment::Ignored),
    ("metadata", Treatment::Ignored),
    ("store", Treatment::Ignored),
    ("service_tier", Treatment::Ignored),
];

/// The shape a request asks its answer in, checked when the run ends.
#[derive(Debug)]
pub(crate) struct AnswerShape {
    /// The format the model is asked for.
    pub(crate) format: ResponseFormat,
    /// Checks an answer against it.
    validator: SchemaValidator,
}

impl AnswerShape {
    /// The JSON of `answer` when it has the shape (read without a Markdown code fence around
    /// it, which models given the schema in their prompt add), or why it does not.
    pub(crate) fn check(&self, answer: &str) -> Result<String, String> {
        let text = ResponseFormat::unfenced(answer);
        let value: Value =
            serde_json::from_str(text).map_err(|err| format!("the answer is not JSON ({err})"))?;
        self.validator.validate(&value).map_err(|e| e.to_string())?;
        Ok(text.to_owned())
    }
}

/// What the operator says of request fields beyond the table: fields accepted and not used
/// (`--ignore-parameter`), values every request gets (`--pin-parameter`), and highest values
/// (`--cap-parameter`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Parameters {
    /// Fields accepted whatever they hold, and not used.
    pub(crate) ignored: Vec<String>,
    /// Fields whose value is the operator's: a client may leave them out or send the same.
    pub(crate) pinned: Vec<(String, Value)>,
    /// Fields with a highest value: `max_tokens` is lowered to it, others above it refused.
    pub(crate) caps: Vec<(String, f64)>,
}

/// Fields an operator may pin.
const PINNABLE: &[&str] = &[
    "temperature",
    "top_p",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "parallel_tool_calls",
];

/// Fields an operator may cap.
const CAPPABLE: &[&str] = &[
    "temperature",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "max_tokens",
];

impl Parameters {
    /// Why the operator's pins and caps cannot be used, if they cannot: an unknown field, a
    /// value the field does not take, a pin above a cap.
    pub(crate) fn check(&self) -> Result<RunOptions, String> {
        for (name, _) in &self.pinned {
            if !PINNABLE.contains(&name.as_str()) {
                return Err(format!(
                    "`{name}` cannot be pinned; these can: {}",
                    PINNABLE.join(", ")
                ));
            }
        }
        for (name, cap) in &self.caps {
            if !CAPPABLE.contains(&name.as_str()) {
                return Err(format!(
                    "`{name}` cannot be capped; these can: {}",
                    CAPPABLE.join(", ")
                ));
            }
            if !cap.is_finite() || (name == "max_tokens" && *cap < 1.0) {
                return Err(format!(
                    "the cap of `{name}` must be a number (at least 1 for max_tokens)"
                ));
            }
        }
        let (options, _) = read(&Map::new(), self).map_err(|e| e.message)?;
        Ok(options)
    }

    fn cap(&self, name: &str) -> Option<f64> {
        self.caps
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, c)| *c)
    }

    /// A `400` when `value` is above the cap of `name` (`max_tokens` is lowered instead; a
    /// neutral value, which sets nothing, is never above a cap).
    fn within_cap(&self, name: &str, value: &Value) -> Result<(), ApiError> {
        let neutral = match name {
            "top_p" => value.as_f64() == Some(1.0),
            "presence_penalty" | "frequency_penalty" => value.as_f64() == Some(0.0),
            _ => false,
        };
        match self.cap(name) {
            Some(cap)
                if name != "max_tokens" && !neutral && value.as_f64().is_some_and(|v| v > cap) =>
            {
                Err(invalid(name, &format!("at most {cap} on this server")))
            }
            _ => Ok(()),
        }
    }

    fn pin(&self, name: &str) -> Option<&Value> {
        self.pinned
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }
}

/// The run options of a request's `extra` fields, and the shape its answer must have; a `400`
/// naming the field that is refused or malformed. The operator's `parameters` apply: ignored
/// fields are accepted whatever they hold, pinned ones hold for every request, capped ones are
/// refused above their cap (`max_tokens` is lowered to it).
pub(crate) fn read(
    extra: &Map<String, Value>,
    parameters: &Parameters,
) -> Result<(RunOptions, Option<AnswerShape>), ApiError> {
    let mut options = RunOptions::new();
    let mut shape = None;
    for (name, value) in extra {
        if value.is_null() || parameters.ignored.iter().any(|i| i == name) {
            continue;
        }
        let treatment = FIELDS
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, t)| *t);
        match treatment {
            None => {
                return Err(ApiError::bad_request(format!(
                    "unrecognized request argument `{name}`"
                ))
                .param(name.clone())
                .code("unsupported_parameter"));
            }
            Some(Treatment::Ignored) => {}
            Some(Treatment::Refused(why)) if !changes_nothing(name, value) => {
                return Err(
                    ApiError::bad_request(format!("`{name}` is not supported: {why}"))
                        .param(name.clone())
                        .code("unsupported_parameter"),
                );
            }
            Some(Treatment::Refused(_)) => {}
            Some(Treatment::Honoured) => {
                if let Some(pinned) = parameters.pin(name) {
                    if !same_meaning(name, pinned, value) {
                        return Err(invalid(
                            name,
                            &format!("left out or {pinned}: this server's operator set it"),
                        ));
                    }
                }
                parameters.within_cap(name, value)?;
                honour(name, value, &mut options, &mut shape)?;
            }
        }
    }
    for (name, value) in &parameters.pinned {
        // A pin holds where the client said nothing, or sent a field the operator ignores.
        let ignored = parameters.ignored.iter().any(|i| i == name);
        if ignored || extra.get(name).is_none_or(Value::is_null) {
            parameters.within_cap(name, value)?;
            honour(name, value, &mut options, &mut shape)?;
        }
    }
    if let Some(cap) = parameters.cap("max_tokens") {
        // Lowered, never refused: a token limit is a highest value already.
        let cap = cap as u32;
        options.max_tokens = Some(options.max_tokens.map_or(cap, |m| m.min(cap)));
    }
    Ok((options, shape))
}

/// Applies honoured field `name` to `options` (and the answer's `shape`).
fn honour(
    name: &str,
    value: &Value,
    options: &mut RunOptions,
    shape: &mut Option<AnswerShape>,
) -> Result<(), ApiError> {
    match name {
        "max_tokens" | "max_completion_tokens" => {
            let max = positive_u32(name, value)?;
            options.max_tokens = Some(options.max_tokens.map_or(max, |m| m.min(max)));
        }
        "temperature" => options.sampling.temperature = Some(number(name, value, 0.0, 2.0)?),
        // A neutral value (top_p 1, a penalty of 0) asks for nothing, so a model that does not
        // take the option is not asked it.
        "top_p" => {
            options.sampling.top_p = Some(number(name, value, 0.0, 1.0)?).filter(|p| *p < 1.0)
        }
        "presence_penalty" => {
            options.sampling.presence_penalty =
                Some(number(name, value, -2.0, 2.0)?).filter(|p| *p != 0.0);
        }
        "frequency_penalty" => {
            options.sampling.frequency_penalty =
                Some(number(name, value, -2.0, 2.0)?).filter(|p| *p != 0.0);
        }
        "seed" => {
            // The spec's seed is an int64; negative ones are refused (no provider needs them).
            let seed = value
                .as_u64()
                .filter(|s| i64::try_from(*s).is_ok())
                .ok_or_else(|| invalid(name, "a whole number from 0 to 2^63 - 1"))?;
            options.sampling.seed = Some(seed);
        }
        "stop" => options.sampling.stop = stop(value)?,
        "tool_choice" => options.tool_choice = Some(tool_choice(value)?),
        "parallel_tool_calls" => {
            let parallel = value
                .as_bool()
                .ok_or_else(|| invalid(name, "true or false"))?;
            options.parallel_tool_calls = Some(parallel);
        }
        "response_format" => {
            *shape = answer_shape(value)?;
            options.response_format = shape.as_ref().map(|s| s.format.clone());
        }
        // Only a pin of a field that cannot be pinned gets here (`Server::router` does not
        // check pins the way `serve` does): the operator's mistake, not the client's.
        _ => {
            tracing::error!(
                field = name,
                "a pinned field this server cannot pin; ignored"
            );
        }
    }
    Ok(())
}

/// Whether two values of honoured field `name` ask for the same thing (`0` and `0.0`,
/// `"END"` and `["END"]`): compared as read, not as JSON.
fn same_meaning(name: &str, a: &Value, b: &Value) -> bool {
    let read = |v: &Value| {
        let (mut options, mut shape) = (RunOptions::new(), None);
        honour(name, v, &mut options, &mut shape)
            .ok()
            .map(|()| options)
    };
    match (read(a), read(b)) {
        (Some(a), Some(b)) => a == b,
        _ => a == b,
    }
}

fn number(name: &str, value: &Value, low: f64, high: f64) -> Result<f32, ApiError> {
    value
        .as_f64()
        .filter(|v| (low..=high).contains(v))
        .map(|v| v as f32)
        .ok_or_else(|| invalid(name, &format!("a number from {low} to {high}")))
}

/// Up to four stop sequences, as a string or an array of strings (OpenAI's limit).
fn stop(value: &Value) -> Result<Vec<String>, ApiError> {
    let stops: Vec<String> = match value {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or_else(|| invalid("stop", "a string or an array of strings"))?,
        _ => return Err(invalid("stop", "a string or an array of strings")),
    };
    if stops.len() > 4 || stops.iter().any(String::is_empty) {
        return Err(invalid("stop", "at most 4 sequences, none empty"));
    }
    Ok(stops)
}

/// Whether a refused field's value is its default, which asks for nothing.
fn changes_nothing(name: &str, value: &Value) -> bool {
    match name {
        "n" => value.as_u64() == Some(1),
        "logprobs" => value == &Value::Bool(false),
        "top_logprobs" => value.as_u64() == Some(0),
        "tools" | "functions" => value.as_array().is_some_and(Vec::is_empty),
        "logit_bias" => value.as_object().is_some_and(Map::is_empty),
        "modalities" => value
            .as_array()
            .is_some_and(|m| m.iter().all(|m| m == "text")),
        _ => false,
    }
}

fn invalid(name: &str, expected: &str) -> ApiError {
    ApiError::bad_request(format!("`{name}` must be {expected}"))
        .param(name.to_owned())
        .code("invalid_value")
}

fn positive_u32(name: &str, value: &Value) -> Result<u32, ApiError> {
    value
        .as_u64()
        .filter(|n| *n >= 1)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| invalid(name, "a whole number of at least 1"))
}

fn tool_choice(value: &Value) -> Result<ToolChoice, ApiError> {
    match value {
        Value::String(s) => match s.as_str() {
            "none" => Ok(ToolChoice::None),
            "auto" => Ok(ToolChoice::Auto),
            "required" => Ok(ToolChoice::Required),
            _ => Err(invalid(
                "tool_choice",
                "\"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": …}}",
            )),
        },
        Value::Object(o) => o
            .get("function")
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .filter(|_| o.get("type").and_then(Value::as_str) == Some("function"))
            .map(|name| ToolChoice::Tool(name.to_owned()))
            .ok_or_else(|| {
                invalid(
                    "tool_choice",
                    "{\"type\": \"function\", \"function\": {\"name\": …}} naming one of the agent's tools",
                )
            }),
        _ => Err(invalid("tool_choice", "a string or an object")),
    }
}

/// The shape `response_format` asks for: none for `text`.
fn answer_shape(value: &Value) -> Result<Option<AnswerShape>, ApiError> {
    let kind = value.get("type").and_then(Value::as_str);
    let (name, schema) = match kind {
        Some("text") => return Ok(None),
        Some("json_object") => ("json_object", serde_json::json!({"type": "object"})),
        Some("json_schema") => {
            let spec = value.get("json_schema").ok_or_else(|| {
                invalid(
                    "response_format",
                    "a `json_schema` object for type json_schema",
                )
            })?;
            let name = spec.get("name").and_then(Value::as_str).unwrap_or("answer");
            let schema = spec
                .get("schema")
                .cloned()
                .unwrap_or_else(|| serde_json::json!({}));
            (name, schema)
        }
        _ => {
            return Err(invalid(
                "response_format",
                "{\"type\": \"text\"}, {\"type\": \"json_object\"} or {\"type\": \"json_schema\", …}",
            ));
        }
    };
    let validator = SchemaValidator::new(&schema).map_err(|err| {
        ApiError::bad_request(format!(
            "the response_format schema does not compile: {err}"
        ))
        .param("response_format.json_schema.schema")
        .code("invalid_value")
    })?;
    Ok(Some(AnswerShape {
        format: ResponseFormat::json_schema(name, schema),
        validator,
    }))
}

#[cfg(test)]
mod tests;
