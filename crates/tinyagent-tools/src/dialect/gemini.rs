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

/// One schema object while it is converted: what is written so far and what the keywords
/// read earlier decided for the ones read later.
struct Node {
    out: Map<String, Value>,
    nullable: bool,
    /// The upper-case type, when the schema has one.
    kind: Option<String>,
    /// An enum of strings found on an array, for its items.
    items_enum: Option<Vec<Value>>,
    /// Enum values Gemini cannot take as an enum, for the description.
    enum_note: Option<Vec<Value>>,
}

/// The types Gemini knows, upper-case.
const GEMINI_TYPES: [&str; 7] = [
    "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL",
];

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
            return self.follow_ref(map, reference, at, depth);
        }
        let mut map = self.merge_branches(map.clone(), at, depth);
        let (kinds, nullable) = kinds_of(&map);
        if kinds.len() > 1 {
            return self.convert(&one_branch_per_kind(&map, &kinds, nullable), at, depth);
        }
        let mut node = Node {
            out: Map::new(),
            nullable,
            kind: kinds.first().map(|k| k.to_ascii_uppercase()),
            items_enum: None,
            enum_note: None,
        };
        if let Some(kind) = &node.kind {
            if GEMINI_TYPES.contains(&kind.as_str()) {
                node.out.insert("type".into(), Value::String(kind.clone()));
            } else {
                self.drop(
                    &format!("{at}/type"),
                    format!("{kind:?} is no type; left untyped"),
                );
            }
        }
        if let Some(Value::Array(branches)) = map.remove("anyOf") {
            if let Some(only) = self.any_of(&mut node, &map, branches, at, depth) {
                return only;
            }
        }
        self.plain_bounds(&mut map, at);
        for (key, value) in map {
            let here = format!("{at}/{}", pointer_segment(&key));
            self.keyword(&mut node, key, value, &here, depth);
        }
        self.finish(node, at)
    }

    /// A `$ref`, inlined with its siblings (a description, say), which apply too.
    fn follow_ref(
        &mut self,
        map: &Map<String, Value>,
        reference: &str,
        at: &str,
        depth: usize,
    ) -> Value {
        let Some(mut target) = lookup(&self.root, reference).cloned() else {
            self.drop(
                at,
                format!("$ref {reference:?} names nothing; any value accepted"),
            );
            return json!({});
        };
        if depth >= MAX_REF_DEPTH {
            self.drop(
                at,
                format!(
                    "$ref {reference:?} recursive beyond {MAX_REF_DEPTH} levels; cut to an object"
                ),
            );
            return json!({"type": "OBJECT"});
        }
        if let Value::Object(target_map) = &mut target {
            for (k, v) in map {
                if k != "$ref" {
                    target_map.insert(k.clone(), v.clone());
                }
            }
        }
        self.convert(&target, at, depth + 1)
    }

    /// `allOf` merged into the schema, `oneOf` said as `anyOf`.
    fn merge_branches(
        &mut self,
        mut map: Map<String, Value>,
        at: &str,
        depth: usize,
    ) -> Map<String, Value> {
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
        map
    }

    /// `anyOf`: a `null` branch becomes `nullable`; one branch left, on an untyped schema, is
    /// the schema itself (returned whole); other branches are converted into `node`.
    fn any_of(
        &mut self,
        node: &mut Node,
        map: &Map<String, Value>,
        branches: Vec<Value>,
        at: &str,
        depth: usize,
    ) -> Option<Value> {
        let (nulls, rest): (Vec<Value>, Vec<Value>) = branches.into_iter().partition(|b| {
            b.get("type").and_then(Value::as_str) == Some("null")
                && b.as_object().is_some_and(|m| m.len() == 1)
        });
        if !nulls.is_empty() {
            node.nullable = true;
        }
        if rest.len() == 1 && node.kind.is_none() {
            let mut only = rest.into_iter().next().unwrap_or_default();
            if let Value::Object(only_map) = &mut only {
                for key in ["description", "title", "default", "example"] {
                    if let Some(v) = map.get(key) {
                        only_map.insert(key.into(), v.clone());
                    }
                }
            }
            let mut converted = self.convert(&only, at, depth);
            if node.nullable {
                if let Value::Object(c) = &mut converted {
                    c.insert("nullable".into(), true.into());
                }
            }
            return Some(converted);
        }
        let converted: Vec<Value> = rest
            .iter()
            .enumerate()
            .map(|(i, b)| self.convert(b, &format!("{at}/anyOf/{i}"), depth))
            .collect();
        if !converted.is_empty() {
            node.out.insert("anyOf".into(), Value::Array(converted));
        }
        None
    }

    /// `const` as a one-value `enum`; exclusive bounds as inclusive ones.
    fn plain_bounds(&mut self, map: &mut Map<String, Value>, at: &str) {
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
    }

    /// One keyword of the schema at `here`: the ones holding schemas and `enum` here, the
    /// rest in [`plain_keyword`](Self::plain_keyword).
    fn keyword(&mut self, node: &mut Node, key: String, value: Value, here: &str, depth: usize) {
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
                node.out.insert(key, Value::Object(props));
            }
            "items" => {
                let items = match value {
                    Value::Array(tuple) => {
                        self.drop(
                            here,
                            "a tuple of item schemas; items of any of them accepted",
                        );
                        json!({"anyOf": tuple})
                    }
                    other => other,
                };
                node.out.insert(key, self.convert(&items, here, depth));
            }
            "prefixItems" => {
                if !node.out.contains_key("items") {
                    let branches = value.as_array().cloned().unwrap_or_default();
                    self.drop(
                        here,
                        "a tuple of item schemas; items of any of them accepted",
                    );
                    let items = self.convert(&json!({"anyOf": branches}), here, depth);
                    node.out.insert("items".into(), items);
                }
            }
            "enum" => self.enum_keyword(node, value, here),
            _ => {
                let kind = node.kind.as_deref().unwrap_or_default();
                if let Some(value) = self.plain_keyword(kind, &key, value, here) {
                    node.out.insert(key, value);
                }
            }
        }
    }

    /// `enum`: strings stay an enum (on an array, of its items); other values go to the
    /// description; a `null` among them makes the schema nullable.
    fn enum_keyword(&mut self, node: &mut Node, value: Value, here: &str) {
        let values = value.as_array().cloned().unwrap_or_default();
        if values.iter().any(Value::is_null) {
            node.nullable = true;
        }
        let strings: Vec<Value> = values.iter().filter(|v| !v.is_null()).cloned().collect();
        let all_strings = !strings.is_empty() && strings.iter().all(Value::is_string);
        match node.kind.as_deref().unwrap_or_default() {
            "" | "STRING" if all_strings => {
                node.out.insert("enum".into(), Value::Array(strings));
                node.out.insert("type".into(), "STRING".into());
            }
            "ARRAY" if all_strings => {
                // An enum on an array of strings means its items.
                node.items_enum = Some(strings);
                self.drop(here, "on an array; moved to its items");
            }
            _ if !strings.is_empty() => {
                node.enum_note = Some(strings);
                self.drop(
                    here,
                    "an enum of values other than strings; listed in the description",
                );
            }
            _ => {}
        }
    }

    /// A keyword that holds no schema: the value to keep, or `None` when Gemini cannot take it
    /// (said in [`dropped`](DialectSchema::dropped) unless nothing a model needs is lost).
    fn plain_keyword(&mut self, kind: &str, key: &str, value: Value, here: &str) -> Option<Value> {
        let fault = match key {
            "format" => {
                let format = value.as_str().unwrap_or_default();
                if gemini_format(kind, format) {
                    return Some(value);
                }
                format!("{format:?} is not a format Gemini accepts for this type; dropped")
            }
            "required" | "description" | "example" | "default" => return Some(value),
            "maxItems" | "minItems" | "minProperties" | "maxProperties" | "minLength"
            | "maxLength" => {
                if value.is_u64() {
                    return Some(value);
                }
                format!("{value} is not a count; dropped")
            }
            "minimum" | "maximum" => {
                if value.is_number() {
                    return Some(value);
                }
                format!("{value} is not a number; dropped")
            }
            "title" | "pattern" | "propertyOrdering" => {
                if (key == "propertyOrdering" && value.is_array()) || value.is_string() {
                    return Some(value);
                }
                "not a string; dropped".to_owned()
            }
            "additionalProperties" => {
                if value == Value::Bool(true) {
                    return None;
                }
                let what = if value == Value::Bool(false) {
                    "false"
                } else {
                    "a schema for other keys"
                };
                format!("{what} dropped (Gemini has no such keyword)")
            }
            k if SILENT_DROPS.contains(&k) || k.starts_with("x-") => return None,
            k if GEMINI_KEYWORDS.contains(&k) => return Some(value),
            _ => "not a keyword Gemini accepts; dropped".to_owned(),
        };
        self.drop(here, fault);
        None
    }

    /// The converted schema: an enum moved to the items or the description, `required`
    /// naming only properties there are, `nullable`, and `type` first, as people write it.
    fn finish(&mut self, node: Node, at: &str) -> Value {
        let Node {
            mut out,
            nullable,
            items_enum,
            mut enum_note,
            ..
        } = node;
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
        self.known_required(&mut out, at);
        if nullable {
            out.insert("nullable".into(), true.into());
        }
        let mut ordered = Map::new();
        if let Some(t) = out.remove("type") {
            ordered.insert("type".into(), t);
        }
        ordered.extend(out);
        Value::Object(ordered)
    }

    /// `required` names the properties it lists, and no others.
    fn known_required(&mut self, out: &mut Map<String, Value>, at: &str) {
        let Some(Value::Array(required)) = out.get("required").cloned() else {
            return;
        };
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
}

/// A schema's types, lower-case (a list's `null` taken out as `nullable`; an untyped schema's
/// inferred from what it describes), and whether it is nullable.
fn kinds_of(map: &Map<String, Value>) -> (Vec<String>, bool) {
    let mut nullable = map.get("nullable").and_then(Value::as_bool) == Some(true);
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
    (kinds, nullable)
}

/// A schema of several types as an `anyOf` of one branch per type, the description and title
/// kept on the whole.
fn one_branch_per_kind(map: &Map<String, Value>, kinds: &[String], nullable: bool) -> Value {
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
    Value::Object(any)
}
