//! JSON Schemas for tool inputs: one pipeline for every way of making a tool.
//!
//! [`generate_schema`] derives a schema from a Rust type with [schemars] and normalizes it into
//! the small, inline dialect that model providers accept; [`strict_schema`] rewrites a schema
//! into OpenAI's strict dialect.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// Generates the JSON Schema of a tool input type.
///
/// The result is what model providers accept:
///
/// - the root is `{"type": "object", ...}`; subschemas are inlined (`$ref`/`$defs` only remain
///   for recursive types); there is no `$schema` and no `title`;
/// - doc comments and `#[schemars(description = "...")]` on fields and nested types become
///   `description` (the root type's own doc comment is left out: the tool's description
///   speaks for it);
/// - an enum of unit variants becomes `{"type": "string", "enum": [...]}` honouring serde
///   renames (variant doc comments are Rust documentation, not part of the schema);
///   `#[schemars(extend("enum" = ["a", "b"]))]` on a `String` field limits it to those values;
/// - `Option<T>` fields and `#[serde(default)]` fields are not `required`, and an `Option<T>`
///   field's schema is `T`'s (no `"null"`);
/// - integers are `"integer"` with the `minimum` and `maximum` of their Rust type (so a
///   `u32` field refuses `4294967296` before the decoder has to), floats `"number"`, sequences
///   and sets `"array"` with `items`, string-keyed maps `"object"` with `additionalProperties`;
///   Rust-specific `format`s such as `uint32` or `double` are dropped.
///
/// Schemas are cached per type: calling this twice for the same `T` generates once.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use serde_json::json;
///
/// #[derive(Deserialize, JsonSchema)]
/// #[serde(rename_all = "lowercase")]
/// enum Unit { Celsius, Fahrenheit }
///
/// #[derive(Deserialize, JsonSchema)]
/// struct WeatherInput {
///     /// City name, such as Beijing, Shanghai or Guangzhou
///     city: String,
///     /// Temperature unit
///     unit: Option<Unit>,
/// }
///
/// assert_eq!(
///     tinyagent::tools::generate_schema::<WeatherInput>(),
///     json!({
///         "type": "object",
///         "properties": {
///             "city": {"type": "string",
///                      "description": "City name, such as Beijing, Shanghai or Guangzhou"},
///             "unit": {"type": "string", "description": "Temperature unit",
///                      "enum": ["celsius", "fahrenheit"]}
///         },
///         "required": ["city"]
///     })
/// );
/// ```
pub fn generate_schema<T: JsonSchema + ?Sized + 'static>() -> Value {
    static CACHE: OnceLock<RwLock<HashMap<TypeId, Value>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = TypeId::of::<T>();
    if let Some(found) = cache
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .get(&key)
    {
        return found.clone();
    }
    let schema = generate_uncached::<T>();
    cache
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .entry(key)
        .or_insert(schema)
        .clone()
}

fn generate_uncached<T: JsonSchema + ?Sized>() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let root = settings.into_generator().into_root_schema_for::<T>();
    let mut value = root.to_value();
    normalize_root(&mut value);
    value
}

/// Normalizes a whole generated schema, root included.
fn normalize_root(value: &mut Value) {
    normalize(value);
    let Value::Object(root) = value else {
        // `true`/`false` schemas: an input that accepts anything (or nothing) as an object.
        *value = serde_json::json!({"type": "object", "properties": {}});
        return;
    };
    // The input type's own doc comment documents Rust code; the tool's description is what
    // the model reads about the tool as a whole.
    root.remove("description");
    if let Some(defs) = root.get_mut("$defs").and_then(Value::as_object_mut) {
        for def in defs.values_mut() {
            normalize(def);
        }
    }
    match root.get("type") {
        // A unit type (`()` or `struct NoArgs;`) takes no arguments: an empty object.
        Some(Value::String(t)) if t == "null" => {
            root.insert("type".into(), "object".into());
            root.insert("properties".into(), Value::Object(Map::new()));
        }
        None if all_branches_are_objects(root) => {
            root.insert("type".into(), "object".into());
        }
        _ => {}
    }
}

fn all_branches_are_objects(schema: &Map<String, Value>) -> bool {
    ["oneOf", "anyOf"].iter().any(|key| {
        schema
            .get(*key)
            .and_then(Value::as_array)
            .is_some_and(|branches| {
                !branches.is_empty()
                    && branches
                        .iter()
                        .all(|b| b.get("type").and_then(Value::as_str) == Some("object"))
            })
    })
}

/// Keywords whose value is a single subschema.
const SUBSCHEMA_KEYS: &[&str] = &[
    "items",
    "additionalProperties",
    "not",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
];
/// Keywords whose value is an array of subschemas.
const SUBSCHEMA_LIST_KEYS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];
/// Keywords whose value is a map of subschemas.
const SUBSCHEMA_MAP_KEYS: &[&str] = &["properties", "patternProperties", "$defs"];

/// Calls `f` on every direct subschema of `schema`.
fn for_each_subschema(schema: &mut Map<String, Value>, mut f: impl FnMut(&mut Value)) {
    for key in SUBSCHEMA_KEYS {
        if let Some(sub) = schema.get_mut(*key) {
            f(sub);
        }
    }
    for key in SUBSCHEMA_LIST_KEYS {
        if let Some(Value::Array(subs)) = schema.get_mut(*key) {
            subs.iter_mut().for_each(&mut f);
        }
    }
    for key in SUBSCHEMA_MAP_KEYS {
        if let Some(Value::Object(subs)) = schema.get_mut(*key) {
            subs.values_mut().for_each(&mut f);
        }
    }
}

/// Formats schemars emits for Rust's numeric types; they are not JSON Schema formats and some
/// providers reject them.
fn is_rust_numeric_format(format: &str) -> bool {
    matches!(
        format,
        "int"
            | "int8"
            | "int16"
            | "int32"
            | "int64"
            | "int128"
            | "uint"
            | "uint8"
            | "uint16"
            | "uint32"
            | "uint64"
            | "uint128"
            | "float"
            | "double"
    )
}

/// The range of the Rust integer type behind a schemars `format`, when JSON numbers can
/// state it exactly (128-bit types cannot).
fn integer_bounds(format: &str) -> Option<(Value, Value)> {
    let (min, max): (Value, Value) = match format {
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "int64" | "int" => (i64::MIN.into(), i64::MAX.into()),
        "uint8" => (0.into(), u8::MAX.into()),
        "uint16" => (0.into(), u16::MAX.into()),
        "uint32" => (0.into(), u32::MAX.into()),
        "uint64" | "uint" => (0.into(), u64::MAX.into()),
        _ => return None,
    };
    Some((min, max))
}

/// The property names an object schema lists as `required`.
fn required_names(schema: &Map<String, Value>) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Normalizes one schema and, first, all of its subschemas (bottom-up).
fn normalize(value: &mut Value) {
    let Value::Object(schema) = value else {
        return;
    };
    for_each_subschema(schema, normalize);

    schema.remove("title");
    if let Some(format) = schema
        .get("format")
        .and_then(Value::as_str)
        .map(str::to_owned)
    {
        let format = format.as_str();
        if let Some((min, max)) = integer_bounds(format) {
            // The decoder refuses what does not fit the Rust type; so must the schema.
            schema.entry("minimum").or_insert(min);
            schema.entry("maximum").or_insert(max);
        }
        if is_rust_numeric_format(format) {
            schema.remove("format");
        }
    }
    merge_unit_enum(schema);

    // Fields that are not required (`Option<T>`, `#[serde(default)]`) take the inner type's
    // schema: a model should leave them out rather than send `null`.
    let required = required_names(schema);
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            if !required.iter().any(|r| r == name) {
                strip_null(prop);
            }
        }
    }
}

/// Turns `oneOf`/`anyOf` branches that are all string constants (a Rust enum of unit variants,
/// some with doc comments) into one `{"type": "string", "enum": [...]}`. Variant doc comments
/// are dropped: the field's own description is what the model reads.
fn merge_unit_enum(schema: &mut Map<String, Value>) {
    for key in ["oneOf", "anyOf"] {
        let Some(Value::Array(branches)) = schema.get(key) else {
            continue;
        };
        let mut values = Vec::new();
        let mut has_null = false;
        for branch in branches {
            let Value::Object(b) = branch else { return };
            if b.get("type").and_then(Value::as_str) == Some("null") && b.len() == 1 {
                has_null = true;
                continue;
            }
            if b.get("type").and_then(Value::as_str) != Some("string")
                || b.keys()
                    .any(|k| !matches!(k.as_str(), "type" | "enum" | "const" | "description"))
            {
                return;
            }
            let consts: Vec<Value> = match (b.get("const"), b.get("enum")) {
                (Some(c), None) => vec![c.clone()],
                (None, Some(Value::Array(e))) => e.clone(),
                _ => return,
            };
            values.extend(consts);
        }
        if values.is_empty() {
            return;
        }
        schema.remove(key);
        if has_null {
            values.push(Value::Null);
            schema.insert("type".into(), serde_json::json!(["string", "null"]));
        } else {
            schema.insert("type".into(), "string".into());
        }
        schema.insert("enum".into(), Value::Array(values));
        return;
    }
}

/// Removes `null` from a schema's accepted values: `type` arrays, `enum`, and `{"type":"null"}`
/// branches of `anyOf`/`oneOf` (a lone remaining branch is merged into the schema).
fn strip_null(value: &mut Value) {
    let Value::Object(schema) = value else {
        return;
    };
    if let Some(Value::Array(types)) = schema.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            schema.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = schema.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = schema.get_mut(key) else {
            continue;
        };
        branches.retain(|b| {
            b.get("type").and_then(Value::as_str) != Some("null")
                || b.as_object().is_some_and(|o| o.len() > 1)
        });
        if branches.len() == 1 {
            let Some(Value::Object(only)) = branches.pop() else {
                continue;
            };
            schema.remove(key);
            for (k, v) in only {
                // The field's own keywords (its description) win over the inner type's.
                schema.entry(k).or_insert(v);
            }
        }
    }
}

/// Rewrites a schema into OpenAI's strict dialect (`"strict": true` function calling).
///
/// On every object: every property becomes `required`, the ones that were optional become
/// nullable (`"type": ["string", "null"]`, `null` added to an `enum`, or an `anyOf` with
/// `{"type": "null"}`), and `additionalProperties` is set to `false` (also when it held
/// something that is not a schema). A name listed as `required` without a schema in
/// `properties` stays required, with the schema `{}`. `default` is removed, since every field
/// is now sent.
///
/// A map (an object whose `additionalProperties` is itself a schema) cannot be expressed in
/// the strict dialect; it is left as it is, and providers should not send such a tool as strict.
///
/// ```
/// use serde_json::json;
/// use tinyagent::tools::schema::strict_schema;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
///     "required": ["city"]
/// });
/// assert_eq!(strict_schema(&schema), json!({
///     "type": "object",
///     "properties": {
///         "city": {"type": "string"},
///         "unit": {"type": ["string", "null"], "enum": ["c", "f", null]}
///     },
///     "required": ["city", "unit"],
///     "additionalProperties": false
/// }));
/// ```
pub fn strict_schema(schema: &Value) -> Value {
    let mut out = schema.clone();
    make_strict(&mut out);
    out
}

fn make_strict(value: &mut Value) {
    let Value::Object(schema) = value else {
        return;
    };
    for_each_subschema(schema, make_strict);
    schema.remove("default");

    let is_object = schema.get("type").and_then(Value::as_str) == Some("object")
        || schema.contains_key("properties");
    if !is_object {
        return;
    }
    let required = required_names(schema);
    if !matches!(schema.get("properties"), Some(Value::Object(_))) {
        schema.insert("properties".into(), Value::Object(Map::new()));
    }
    let mut all = Vec::new();
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            if !required.iter().any(|r| r == name) {
                make_nullable(prop);
            }
            all.push(Value::String(name.clone()));
        }
        // A required name the schema does not describe stays required (as any value), rather
        // than becoming forbidden by `additionalProperties: false`.
        for name in &required {
            if !props.contains_key(name) {
                props.insert(name.clone(), Value::Object(Map::new()));
                all.push(Value::String(name.clone()));
            }
        }
    }
    schema.insert("required".into(), Value::Array(all));
    match schema.get("additionalProperties") {
        // A schema for the values of a map: not expressible in the strict dialect, kept.
        Some(Value::Object(_)) | Some(Value::Bool(false)) => {}
        // Absent, `true`, or not a schema at all.
        _ => {
            schema.insert("additionalProperties".into(), Value::Bool(false));
        }
    }
}

fn make_nullable(value: &mut Value) {
    let Value::Object(schema) = value else {
        return;
    };
    match schema.get_mut("type") {
        Some(Value::String(t)) => {
            if t != "null" {
                let t = std::mem::take(t);
                schema.insert("type".into(), serde_json::json!([t, "null"]));
            }
        }
        Some(Value::Array(types)) => {
            if !types.iter().any(|t| t == "null") {
                types.push("null".into());
            }
        }
        _ => {
            // No `type` (a `$ref`, `anyOf`, ...): offer `null` as another branch.
            let description = schema.remove("description");
            let inner = Value::Object(std::mem::take(schema));
            schema.insert("anyOf".into(), serde_json::json!([inner, {"type": "null"}]));
            if let Some(d) = description {
                schema.insert("description".into(), d);
            }
            return;
        }
    }
    if let Some(Value::Array(values)) = schema.get_mut("enum")
        && !values.iter().any(Value::is_null)
    {
        values.push(Value::Null);
    }
}
impl crate::model::ResponseFormat {
    /// The format of `T`'s JSON: its schema from [`generate_schema`](crate::schema_gen::generate_schema), named after the type.
    pub fn of<T: JsonSchema + 'static>() -> Self {
        Self::json_schema(&T::schema_name(), generate_schema::<T>())
    }
}
