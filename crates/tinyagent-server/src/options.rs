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
        "top_p",
        Treatment::Refused("this server does not pass nucleus sampling to its models"),
    ),
    (
        "stop",
        Treatment::Refused("this server does not pass stop sequences to its models"),
    ),
    (
        "seed",
        Treatment::Refused("this server cannot make an agent's run deterministic"),
    ),
    (
        "presence_penalty",
        Treatment::Refused("this server does not pass penalties to its models"),
    ),
    (
        "frequency_penalty",
        Treatment::Refused("this server does not pass penalties to its models"),
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

/// The run options of a request's `extra` fields, and the shape its answer must have; a `400`
/// naming the field that is refused or malformed. Fields in `ignored` (the operator's
/// `--ignore-parameter`) are accepted whatever they hold.
pub(crate) fn read(
    extra: &Map<String, Value>,
    ignored: &[String],
) -> Result<(RunOptions, Option<AnswerShape>), ApiError> {
    let mut options = RunOptions::new();
    let mut shape = None;
    for (name, value) in extra {
        if value.is_null() || ignored.iter().any(|i| i == name) {
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
            Some(Treatment::Honoured) => match name.as_str() {
                "max_tokens" | "max_completion_tokens" => {
                    let max = positive_u32(name, value)?;
                    options.max_tokens = Some(options.max_tokens.map_or(max, |m| m.min(max)));
                }
                "temperature" => {
                    let t = value
                        .as_f64()
                        .filter(|t| (0.0..=2.0).contains(t))
                        .ok_or_else(|| invalid(name, "a number from 0 to 2"))?;
                    options.temperature = Some(t as f32);
                }
                "tool_choice" => options.tool_choice = Some(tool_choice(value)?),
                "parallel_tool_calls" => {
                    let parallel = value
                        .as_bool()
                        .ok_or_else(|| invalid(name, "true or false"))?;
                    options.parallel_tool_calls = Some(parallel);
                }
                "response_format" => {
                    if let Some(s) = answer_shape(value)? {
                        options.response_format = Some(s.format.clone());
                        shape = Some(s);
                    }
                }
                _ => unreachable!("every honoured field is read"),
            },
        }
    }
    Ok((options, shape))
}

/// Whether a refused field's value is its default, which asks for nothing.
fn changes_nothing(name: &str, value: &Value) -> bool {
    match name {
        "n" => value.as_u64() == Some(1),
        "top_p" => value.as_f64() == Some(1.0),
        "presence_penalty" | "frequency_penalty" => value.as_f64() == Some(0.0),
        "logprobs" => value == &Value::Bool(false),
        "top_logprobs" => value.as_u64() == Some(0),
        "tools" | "functions" | "stop" => value.as_array().is_some_and(Vec::is_empty),
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
mod tests {
    use super::*;

    #[test]
    fn every_field_is_honoured_refused_or_ignored_by_name() {
        let read = |body: Value| read(body.as_object().unwrap(), &[]);
        let (options, shape) = read(serde_json::json!({
            "max_tokens": 50, "max_completion_tokens": 20, "temperature": 0.5,
            "tool_choice": "none", "parallel_tool_calls": false, "user": "u1",
            "metadata": {"a": "b"}, "store": true, "top_p": 1, "n": 1, "stop": [], "seed": null,
            "response_format": {"type": "json_object"}
        }))
        .unwrap();
        assert_eq!(options.max_tokens, Some(20));
        assert_eq!(options.temperature, Some(0.5));
        assert_eq!(options.tool_choice, Some(ToolChoice::None));
        assert_eq!(options.parallel_tool_calls, Some(false));
        let shape = shape.unwrap();
        assert!(shape.check("[1]").is_err());
        assert_eq!(
            shape.check("```json\n{\"a\": 1}\n```").unwrap(),
            "{\"a\": 1}"
        );
        for (body, field) in [
            (serde_json::json!({"top_p": 0.5}), "top_p"),
            (serde_json::json!({"stop": ["\n"]}), "stop"),
            (serde_json::json!({"seed": 7}), "seed"),
            (serde_json::json!({"logprobs": true}), "logprobs"),
            (serde_json::json!({"n": 2}), "n"),
            (serde_json::json!({"frobnicate": 1}), "frobnicate"),
            (serde_json::json!({"max_tokens": 0}), "max_tokens"),
            (serde_json::json!({"tool_choice": "maybe"}), "tool_choice"),
        ] {
            let err = read(body).unwrap_err();
            assert_eq!(err.param.as_deref(), Some(field), "{err:?}");
        }
        // The operator may accept a field as a hint.
        let extra = serde_json::json!({"seed": 7});
        assert!(super::read(extra.as_object().unwrap(), &["seed".to_owned()]).is_ok());
    }
}
