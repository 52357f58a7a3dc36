//! Anthropic's `input_schema`.

use serde_json::{Map, Value};

use super::repair::repair;
use super::{DialectSchema, flatten_all_of, merge_into, resolve_local};

/// A tool's input schema as Anthropic's `input_schema` accepts it.
///
/// The root becomes an object schema: a root `allOf` of object schemas is merged into it; a
/// root `anyOf` or `oneOf` of object schemas becomes one object with the properties of all
/// branches, requiring what every branch requires (listed in
/// [`dropped`](DialectSchema::dropped), since it accepts more than the original). Everything
/// else (`$ref`, `$defs`, formats, nested combinators) passes unchanged.
///
/// ```
/// use serde_json::json;
/// use tinyagent::tools::schema::anthropic_schema;
///
/// let out = anthropic_schema(&json!({"anyOf": [
///     {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
///     {"type": "object", "properties": {"zip": {"type": "string"}}, "required": ["zip"]},
/// ]}));
/// assert_eq!(out.schema, json!({"type": "object", "properties": {
///     "city": {"type": "string"}, "zip": {"type": "string"}
/// }}));
/// assert_eq!(out.dropped, ["/anyOf: merged into one object (properties of all branches, required only where all require)"]);
/// ```
pub fn anthropic_schema(schema: &Value) -> DialectSchema {
    let mut dropped = Vec::new();
    let root = match schema {
        Value::Object(map) => map.clone(),
        Value::Bool(true) => Map::new(),
        other => {
            dropped.push(format!(
                "/: the schema {other} is not an object schema; any object accepted"
            ));
            Map::new()
        }
    };
    let mut whole = Value::Object(root);
    repair(&mut whole, &mut dropped);
    let mut root = match whole {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    if let Some(Value::Array(branches)) = root.remove("allOf") {
        let merged = flatten_all_of(&Value::Object(root.clone()), branches, 0);
        merge_into(&mut root, Value::Object(merged), true);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = root.remove(key) {
            let mut merged = Map::new();
            let mut required: Option<Vec<Value>> = None;
            for branch in branches {
                let branch = resolve_local(&root, branch);
                let branch_required = branch
                    .get("required")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                required = Some(match required {
                    None => branch_required,
                    Some(r) => r
                        .into_iter()
                        .filter(|n| branch_required.contains(n))
                        .collect(),
                });
                merge_into(&mut merged, branch, false);
            }
            merged.remove("required");
            merge_into(&mut root, Value::Object(merged), true);
            if let Some(required) = required.filter(|r| !r.is_empty()) {
                let mut all = root
                    .get("required")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                for name in required {
                    if !all.contains(&name) {
                        all.push(name);
                    }
                }
                root.insert("required".into(), Value::Array(all));
            }
            dropped.push(format!(
                "/{key}: merged into one object (properties of all branches, required only \
                 where all require)"
            ));
        }
    }
    match root.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            dropped.push(format!(
                "/type: {other} at the root; an object schema is sent"
            ));
            root.insert("type".into(), "object".into());
        }
        None => {
            root.insert("type".into(), "object".into());
        }
    }
    // Put `type` first, as people (and the API's examples) write it.
    let mut out = Map::new();
    out.insert("type".into(), root.remove("type").unwrap_or_default());
    out.extend(root);
    DialectSchema {
        schema: Value::Object(out),
        dropped,
    }
}
