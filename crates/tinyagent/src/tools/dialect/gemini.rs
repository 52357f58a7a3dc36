//! Gemini's `parameters`: a subset of OpenAPI 3.0's schema object.

use serde_json::{Map, Value, json};

use super::repair::repair;
use super::{DialectSchema, MAX_REF_DEPTH, flatten_all_of, lookup, merge_into, pointer_segment};

/// The `format`s Gemini accepts, by type.
fn gemini_format(kind: &str, format: &str) -> bool {
    matches!(
        (kind, format),
        ("NUMBER", "float" | "double")
            | ("INTEGER", "int32" | "int64")
            | ("STRING", "enum" | "date-time")
    )
}

/// Keywords Gemini's schema object has (besides `type`, handled apart).
const GEMINI_KEYWORDS: &[&str] = &[
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "items",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
];

/// Keywords whose loss changes nothing a model needs (annotations, identifiers).
const SILENT_DROPS: &[&str] = &[
    "$schema",
    "$id",
    "$defs",
    "definitions",
    "$comment",
    "readOnly",
    "writeOnly",
    "deprecated",
    "examples",
    "x-stainless-naming",
];

/// A tool's input schema as Gemini's `parameters` (an OpenAPI 3.0 schema object subset)
/// accepts it.
///
/// `$ref`s are inlined (a recursive one is cut after 8 levels, to an object schema);
/// `["string", "null"]` becomes `STRING` with `nullable: true`, and an `anyOf` with a `null`
/// branch a nullable schema; other type arrays and `oneOf` become `anyOf`; an `allOf` of
/// object schemas is merged; `const` becomes a one-value `enum`; enums of other values than
/// strings become text in the description; `exclusiveMinimum`/`exclusiveMaximum` become
/// `minimum`/`maximum`; `additionalProperties`, unsupported `format`s and other keywords are
/// dropped. Every change that loses meaning is listed in [`dropped`](DialectSchema::dropped);
/// annotations (`$schema`, `examples`, `readOnly`…) go silently.
///
/// ```
/// use serde_json::json;
/// use tinyagent::tools::schema::gemini_schema;
///
/// let out = gemini_schema(&json!({
///     "type": "object",
///     "properties": {
///         "city": {"type": "string"},
///         "unit": {"anyOf": [{"$ref": "#/$defs/Unit"}, {"type": "null"}]},
///     },
///     "required": ["city"],
///     "additionalProperties": false,
///     "$defs": {"Unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
/// }));
/// assert_eq!(out.schema, json!({
///     "type": "OBJECT",
///     "properties": {
///         "city": {"type": "STRING"},
///         "unit": {"type": "STRING", "enum": ["celsius", "fahrenheit"], "nullable": true},
///     },
///     "required": ["city"],
/// }));
/// assert_eq!(out.dropped, ["/additionalProperties: false dropped (Gemini has no such keyword)"]);
/// ```
pub fn gemini_schema(schema: &Value) -> DialectSchema {
    let mut dropped = Vec::new();
    let mut repaired = schema.clone();
    repair(&mut repaired, &mut dropped);
    let mut converter = Gemini {
        root: repaired.clone(),
        dropped,
    };
    let mut out = converter.convert(&repaired, "", 0);
    if let Value::Object(map) = &mut out {
        if map.get("type").and_then(Value::as_str) != Some("OBJECT") {
            if map.contains_key("type") || map.contains_key("anyOf") {
                converter
                    .dropped
                    .push("/type: not an object at the root; an object schema is sent".into());
            }
            map.clear();
            map.insert("type".into(), "OBJECT".into());
            map.insert("properties".into(), Value::Object(Map::new()));
        }
    }
    DialectSchema {
        schema: out,
        dropped: converter.dropped,
    }
}

struct Gemini {
    root: Value,
    dropped: Vec<String>,
}

impl Gemini {
    fn drop(&mut self, at: &str, what: impl std::fmt::Display) {
        self.dropped
            .push(format!("{}: {what}", if at.is_empty() { "/" } else { at }));
    }

    /// One schema, at JSON pointer `at`, `depth` `$ref`s deep.
    fn convert(&mut self, schema: &Value, at: &str, depth: usize) -> Value {
        let Value::Object(map) = schema else {
            // `true` (anything) or `false` (nothing): the closest is an untyped schema.
            if schema != &Value::Bool(true) {
                self.drop(
                    at,
                    format!("the schema {schema} is not a schema object; any value accepted"),
                );
            }
            return json!({});
        };
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            let target = lookup(&self.root, reference).cloned();
            let Some(mut target) = target else {
                self.drop(
                    at,
                    format!("$ref {reference:?} names nothing; any value accepted"),
                );
                return json!({});
            };
            if depth >= MAX_REF_DEPTH {
                self.drop(
                    at,
                    format!("$ref {reference:?} recursive beyond {MAX_REF_DEPTH} levels; cut to an object"),
                );
                return json!({"type": "OBJECT"});
            }
            // Siblings of `$ref` (a description, say) apply too.
            if let Value::Object(target_map) = &mut target {
                for (k, v) in map {
                    if k != "$ref" {
                        target_map.insert(k.clone(), v.clone());
                    }
                }
            }
            return self.convert(&target, at, depth + 1);
        }
        let mut map = map.clone();
        if let Some(Value::Array(branches)) = map.remove("allOf") {
            let merged = flatten_all_of(&self.root, branches, depth);
            merge_into(&mut map, Value::Object(merged), true);
        }
        if let Some(branches) = map.remove("oneOf") {
            if map.contains_key("anyOf") {
                self.drop(&format!("{at}/oneOf"), "beside anyOf; dropped");
            } else {
                map.insert("anyOf".into(), branches);
            }
        }
        let mut out = Map::new();
        let mut nullable = map.get("nullable").and_then(Value::as_bool) == Some(true);
        // The type: a name, or a list whose `null` becomes `nullable`.
        let mut kinds: Vec<String> = match map.get("type") {
            Some(Value::String(t)) => vec![t.clone()],
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        if kinds.len() > 1 && kinds.iter().any(|k| k == "null") {
            nullable = true;
            kinds.retain(|k| k != "null");
        }
        if kinds.is_empty() {
            // Untyped: inferred from what it describes.
            if map.contains_key("properties") {
                kinds.push("object".into());
            } else if map.contains_key("items") {
                kinds.push("array".into());
            } else if map
                .get("enum")
                .and_then(Value::as_array)
                .is_some_and(|values| values.iter().all(Value::is_string))
                || map.get("const").is_some_and(Value::is_string)
            {
                kinds.push("string".into());
            }
        }
        if kinds.len() > 1 {
            // Several types: one branch each.
            let branches: Vec<Value> = kinds
                .iter()
                .map(|k| {
                    let mut branch = map.clone();
                    branch.insert("type".into(), Value::String(k.clone()));
                    branch.remove("description");
                    branch.remove("title");
                    Value::Object(branch)
                })
                .collect();
            let mut any = Map::new();
            for key in ["description", "title"] {
                if let Some(v) = map.get(key) {
                    any.insert(key.into(), v.clone());
                }
            }
            any.insert("anyOf".into(), Value::Array(branches));
            if nullable {
                any.insert("nullable".into(), true.into());
            }
            return self.convert(&Value::Object(any), at, depth);
        }
        let kind = kinds.first().map(|k| k.to_ascii_uppercase());
        if let Some(kind) = &kind {
            let known = [
                "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL",
            ];
            if known.contains(&kind.as_str()) {
                out.insert("type".into(), Value::String(kind.clone()));
            } else {
                self.drop(
                    &format!("{at}/type"),
                    format!("{kind:?} is no type; left untyped"),
                );
            }
        }
        // `anyOf`: a `null` branch becomes `nullable`; one branch left is the schema itself.
        if let Some(Value::Array(branches)) = map.remove("anyOf") {
            let (nulls, rest): (Vec<Value>, Vec<Value>) = branches.into_iter().partition(|b| {
                b.get("type").and_then(Value::as_str) == Some("null")
                    && b.as_object().is_some_and(|m| m.len() == 1)
            });
            if !nulls.is_empty() {
                nullable = true;
            }
            if rest.len() == 1 && kind.is_none() {
                let mut only = rest.into_iter().next().unwrap_or_default();
                if let Value::Object(only_map) = &mut only {
                    for key in ["description", "title", "default", "example"] {
                        if let Some(v) = map.get(key) {
                            only_map.insert(key.into(), v.clone());
                        }
                    }
                }
                let mut converted = self.convert(&only, at, depth);
                if nullable {
                    if let Value::Object(c) = &mut converted {
                        c.insert("nullable".into(), true.into());
                    }
                }
                return converted;
            }
            let converted: Vec<Value> = rest
                .iter()
                .enumerate()
                .map(|(i, b)| self.convert(b, &format!("{at}/anyOf/{i}"), depth))
                .collect();
            if !converted.is_empty() {
                out.insert("anyOf".into(), Value::Array(converted));
            }
        }
        if let Some(value) = map.remove("const") {
            if map.contains_key("enum") {
                self.drop(&format!("{at}/const"), "beside enum; dropped");
            } else {
                map.insert("enum".into(), Value::Array(vec![value]));
            }
        }
        for key in ["exclusiveMinimum", "exclusiveMaximum"] {
            if let Some(value) = map.remove(key) {
                let plain = if key == "exclusiveMinimum" {
                    "minimum"
                } else {
                    "maximum"
                };
                if value.is_number() && !map.contains_key(plain) {
                    map.insert(plain.into(), value);
                    self.drop(
                        &format!("{at}/{key}"),
                        format!("sent as {plain} (the bound itself allowed)"),
                    );
                } else {
                    self.drop(&format!("{at}/{key}"), "dropped");
                }
            }
        }
        let kind_str = kind.clone().unwrap_or_default();
        let mut items_enum: Option<Vec<Value>> = None;
        let mut enum_note: Option<Vec<Value>> = None;
        for (key, value) in map {
            let here = format!("{at}/{}", pointer_segment(&key));
            match key.as_str() {
                "type" | "nullable" => {}
                "properties" => {
                    let mut props = Map::new();
                    if let Value::Object(given) = value {
                        for (name, prop) in given {
                            let sub = format!("{here}/{}", pointer_segment(&name));
                            props.insert(name, self.convert(&prop, &sub, depth));
                        }
                    }
                    out.insert(key, Value::Object(props));
                }
                "items" => {
                    let items = match value {
                        Value::Array(tuple) => {
                            self.drop(
                                &here,
                                "a tuple of item schemas; items of any of them accepted",
                            );
                            let branches: Vec<Value> = tuple;
                            json!({"anyOf": branches})
                        }
                        other => other,
                    };
                    out.insert(key, self.convert(&items, &here, depth));
                }
                "prefixItems" => {
                    if !out.contains_key("items") {
                        let branches = value.as_array().cloned().unwrap_or_default();
                        self.drop(
                            &here,
                            "a tuple of item schemas; items of any of them accepted",
                        );
                        out.insert(
                            "items".into(),
                            self.convert(&json!({"anyOf": branches}), &here, depth),
                        );
                    }
                }
                "enum" => {
                    let values = value.as_array().cloned().unwrap_or_default();
                    if values.iter().any(Value::is_null) {
                        nullable = true;
                    }
                    let strings: Vec<Value> =
                        values.iter().filter(|v| !v.is_null()).cloned().collect();
                    let all_strings = !strings.is_empty() && strings.iter().all(Value::is_string);
                    match kind_str.as_str() {
                        "" | "STRING" if all_strings => {
                            out.insert(key, Value::Array(strings));
                            out.insert("type".into(), "STRING".into());
                        }
                        "ARRAY" if all_strings => {
                            // An enum on an array of strings means its items.
                            items_enum = Some(strings);
                            self.drop(&here, "on an array; moved to its items");
                        }
                        _ if !strings.is_empty() => {
                            enum_note = Some(strings);
                            self.drop(
                                &here,
                                "an enum of values other than strings; listed in the description",
                            );
                        }
                        _ => {}
                    }
                }
                "format" => {
                    let format = value.as_str().unwrap_or_default();
                    if gemini_format(&kind_str, format) {
                        out.insert(key, value);
                    } else {
                        self.drop(
                            &here,
                            format!(
                                "{format:?} is not a format Gemini accepts for this type; dropped"
                            ),
                        );
                    }
                }
                "required" => {
                    out.insert(key, value);
                }
                "description" => {
                    out.insert(key, value);
                }
                "maxItems" | "minItems" | "minProperties" | "maxProperties" | "minLength"
                | "maxLength" => {
                    if value.is_u64() {
                        out.insert(key, value);
                    } else {
                        self.drop(&here, format!("{value} is not a count; dropped"));
                    }
                }
                "minimum" | "maximum" => {
                    if value.is_number() {
                        out.insert(key, value);
                    } else {
                        self.drop(&here, format!("{value} is not a number; dropped"));
                    }
                }
                "title" | "pattern" | "propertyOrdering" => {
                    if (key == "propertyOrdering" && value.is_array()) || value.is_string() {
                        out.insert(key, value);
                    } else {
                        self.drop(&here, "not a string; dropped");
                    }
                }
                "example" | "default" => {
                    out.insert(key, value);
                }
                "additionalProperties" => {
                    if value != Value::Bool(true) {
                        let what = if value == Value::Bool(false) {
                            "false".to_owned()
                        } else {
                            "a schema for other keys".to_owned()
                        };
                        self.drop(
                            &here,
                            format!("{what} dropped (Gemini has no such keyword)"),
                        );
                    }
                }
                k if SILENT_DROPS.contains(&k) || k.starts_with("x-") => {}
                k if GEMINI_KEYWORDS.contains(&k) => {
                    out.insert(key, value);
                }
                _ => self.drop(&here, "not a keyword Gemini accepts; dropped"),
            }
        }
        if let Some(values) = items_enum {
            match out.get_mut("items") {
                Some(Value::Object(items))
                    if !items.contains_key("enum")
                        && items.get("type").is_none_or(|t| t == "STRING") =>
                {
                    items.insert("type".into(), "STRING".into());
                    items.insert("enum".into(), Value::Array(values));
                }
                _ => enum_note = Some(values),
            }
        }
        if let Some(values) = enum_note {
            let listed: Vec<String> = values.iter().map(Value::to_string).collect();
            let note = format!("One of: {}.", listed.join(", "));
            let description = match out.get("description").and_then(Value::as_str) {
                Some(d) => format!("{d} {note}"),
                None => note,
            };
            out.insert("description".into(), Value::String(description));
        }
        // `required` names the properties it lists, and no others.
        if let Some(Value::Array(required)) = out.get("required").cloned() {
            let props = out.get("properties").and_then(Value::as_object);
            let (kept, gone): (Vec<Value>, Vec<Value>) = required.into_iter().partition(|name| {
                name.as_str()
                    .is_some_and(|n| props.is_some_and(|p| p.contains_key(n)))
            });
            if !gone.is_empty() {
                self.drop(
                    &format!("{at}/required"),
                    format!(
                        "{} names no property; dropped from required",
                        Value::Array(gone)
                    ),
                );
            }
            if kept.is_empty() {
                out.remove("required");
            } else {
                out.insert("required".into(), Value::Array(kept));
            }
        }
        if nullable {
            out.insert("nullable".into(), true.into());
        }
        // `type` first, as people write it.
        let mut ordered = Map::new();
        if let Some(t) = out.remove("type") {
            ordered.insert("type".into(), t);
        }
        ordered.extend(out);
        Value::Object(ordered)
    }
}
