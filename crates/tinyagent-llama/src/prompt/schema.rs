//! Schemas for the model's output (a call, an answer, one of them) and what the prompt says
//! about a tool's arguments: simple fields, example calls, argument descriptions.

use serde_json::{Map, Value, json};
use tinyagent::ToolCall;
use tinyagent::model::ToolDefinition;

/// The schema of one tool-call branch: `{"name": <const>, "arguments": <input schema>}`.
pub(crate) fn call_schema(name: &str, arguments: &Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"const": name},
            "arguments": arguments,
        },
        "required": ["name", "arguments"],
    })
}

/// The schema of an answer given directly: a call to the listed answer option (see
/// [`answer_name`](super::answer::answer_name)) with the answer's text.
pub(crate) fn answer_schema(tools: &[ToolDefinition]) -> Value {
    call_schema(
        super::answer::answer_name(tools),
        &json!({
            "type": "object",
            "properties": {"text": {"type": "string", "minLength": 1}},
            "required": ["text"],
        }),
    )
}

/// The schema of every allowed output: one branch per tool, plus the answer if allowed.
pub(crate) fn output_schema(tools: &[ToolDefinition], allow_answer: bool) -> Value {
    let mut branches: Vec<Value> = tools
        .iter()
        .map(|t| call_schema(&t.name, &t.input_schema))
        .collect();
    if allow_answer {
        branches.push(answer_schema(tools));
    }
    one_of(branches)
}

/// `{"oneOf": branches}`, or the branch itself when there is one.
pub(crate) fn one_of(mut branches: Vec<Value>) -> Value {
    if branches.len() == 1 {
        branches.remove(0)
    } else {
        json!({ "oneOf": branches })
    }
}

/// The top-level arguments of a plain object schema (`properties` only, no combinators),
/// in order, or `None` for any other schema (then the arguments are generated as a whole).
pub(crate) fn simple_fields(schema: &Value) -> Option<Vec<(String, Value)>> {
    let object = schema.as_object()?;
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    let allowed = [
        "type",
        "properties",
        "required",
        "additionalProperties",
        "description",
        "title",
        "$schema",
    ];
    if object.keys().any(|k| !allowed.contains(&k.as_str())) {
        return None;
    }
    let properties = object.get("properties")?.as_object()?;
    if properties.is_empty() {
        return None;
    }
    Some(
        properties
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

/// Whether `schema` lists `name` among its required properties.
pub(crate) fn is_required(schema: &Value, name: &str) -> bool {
    schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| r.iter().any(|v| v == name))
}

/// A tool as text for noisy-channel scoring: name, description, and each argument with its
/// description.
pub(crate) fn channel_text(tool: &ToolDefinition) -> String {
    let mut text = format!("{}: {}", tool.name, tool.description.trim());
    if let Some(properties) = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    {
        let args: Vec<String> = properties
            .iter()
            .map(
                |(name, p)| match p.get("description").and_then(Value::as_str) {
                    Some(d) => format!("{name} ({})", d.trim()),
                    None => name.clone(),
                },
            )
            .collect();
        if !args.is_empty() {
            text.push_str(&format!(". Arguments: {}.", args.join(", ")));
        }
    }
    text
}

/// A call to `tool` with every argument, its value taken from the schema: each property's first
/// `examples` entry, its `default`, `const` or first `enum` value, else a value of its type.
/// Strings without a listed value become `<name>`, so no made-up value is there to copy.
pub(crate) fn example_call(tool: &ToolDefinition) -> ToolCall {
    let mut arguments = Map::new();
    if let Some(properties) = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    {
        for (i, (name, property)) in properties.iter().enumerate() {
            arguments.insert(name.clone(), example_value(name, property, i));
        }
    }
    ToolCall::new(
        "example",
        tool.name.clone(),
        Value::Object(arguments).to_string(),
    )
}

pub(super) fn example_value(name: &str, schema: &Value, index: usize) -> Value {
    if let Some(v) = schema.get("examples").and_then(|e| e.get(0)) {
        return v.clone();
    }
    for key in ["default", "const"] {
        if let Some(v) = schema.get(key) {
            return v.clone();
        }
    }
    if let Some(v) = schema.get("enum").and_then(|e| e.get(0)) {
        return v.clone();
    }
    let kind = match schema.get("type") {
        Some(Value::Array(kinds)) => kinds.iter().find(|k| *k != "null").cloned(),
        other => other.cloned(),
    };
    match kind.as_ref().and_then(Value::as_str) {
        Some("integer" | "number") => json!(index + 1),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        Some("object") => json!({}),
        _ => Value::String(format!("<{name}>")),
    }
}

/// A schema without `description` keywords below its top level.
pub(super) fn without_descriptions(schema: &Value) -> Value {
    fn strip(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(k, _)| k.as_str() != "description")
                    .map(|(k, v)| (k.clone(), strip(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(strip).collect()),
            other => other.clone(),
        }
    }
    strip(schema)
}

/// One line per top-level argument: name, type or allowed values, required or optional, and
/// (unless `terse`) its description. The full schema is enforced by the grammar, not the prompt.
pub(super) fn describe_arguments(out: &mut String, schema: &Value, terse: bool) {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, property) in properties {
        let kind = property
            .get("enum")
            .or_else(|| property.get("type"))
            .map_or_else(|| "any".to_owned(), Value::to_string);
        let need = if required.contains(&name.as_str()) {
            "required"
        } else {
            "optional"
        };
        out.push_str(&format!("  - {name} ({kind}, {need})"));
        match property.get("description").and_then(Value::as_str) {
            Some(description) if !terse => out.push_str(&format!(": {description}\n")),
            _ => out.push('\n'),
        }
    }
}
