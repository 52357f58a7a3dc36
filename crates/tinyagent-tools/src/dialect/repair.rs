//! What both dialects do first: a schema written for another draft or by hand, made valid
//! JSON Schema 2020-12 without losing what it says where it can.
//!
//! - `type` names that are no JSON Schema type are read as what they mean (`"Boolean"`,
//!   `"dict"`, `"float"`, `"list"`…) or, when they mean nothing, dropped (any value);
//! - draft-04 boolean `exclusiveMinimum`/`exclusiveMaximum` become the 2020-12 numbers;
//! - draft 2019-09's `$recursiveRef` becomes a `$ref` to the schema with the
//!   `$recursiveAnchor`.

use serde_json::{Map, Value};

use super::pointer_segment;

/// Repairs `schema` in place; every change is pushed to `dropped`.
pub(crate) fn repair(schema: &mut Value, dropped: &mut Vec<String>) {
    walk(schema, "", None, dropped);
}

/// The JSON Schema type a type name means, if any.
fn type_name(name: &str) -> Option<&'static str> {
    Some(match name.to_ascii_lowercase().as_str() {
        "string" | "str" | "char" => "string",
        "number" | "float" | "double" | "decimal" => "number",
        "integer" | "int" | "long" | "short" | "byte" | "bigint" => "integer",
        "boolean" | "bool" => "boolean",
        "array" | "list" | "tuple" | "arraylist" | "queue" | "stack" | "set" => "array",
        "object" | "dict" | "map" | "hashmap" | "hashtable" => "object",
        "null" => "null",
        _ => return None,
    })
}

fn walk(value: &mut Value, at: &str, anchor: Option<&str>, dropped: &mut Vec<String>) {
    let Value::Object(map) = value else { return };
    let own_anchor;
    let anchor = if map.remove("$recursiveAnchor") == Some(Value::Bool(true)) {
        own_anchor = at.to_owned();
        Some(own_anchor.as_str())
    } else {
        anchor
    };
    if let Some(target) = map.remove("$recursiveRef") {
        match anchor {
            Some(pointer) if target == "#" => {
                map.insert("$ref".into(), Value::String(format!("#{pointer}")));
            }
            _ => dropped.push(format!(
                "{at}/$recursiveRef: {target} names no $recursiveAnchor; any value accepted"
            )),
        }
    }
    fix_type(map, at, dropped);
    for (key, plain) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        match map.get(key) {
            Some(Value::Bool(true)) => {
                map.remove(key);
                if let Some(bound) = map.remove(plain) {
                    map.insert(key.into(), bound);
                }
            }
            Some(Value::Bool(false)) => {
                map.remove(key);
            }
            _ => {}
        }
    }
    for key in [
        "items",
        "additionalProperties",
        "not",
        "if",
        "then",
        "else",
        "contains",
    ] {
        if let Some(sub) = map.get_mut(key) {
            match sub {
                Value::Array(subs) => {
                    for (i, s) in subs.iter_mut().enumerate() {
                        walk(s, &format!("{at}/{key}/{i}"), anchor, dropped);
                    }
                }
                _ => walk(sub, &format!("{at}/{key}"), anchor, dropped),
            }
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(subs)) = map.get_mut(key) {
            for (i, s) in subs.iter_mut().enumerate() {
                walk(s, &format!("{at}/{key}/{i}"), anchor, dropped);
            }
        }
    }
    for key in ["properties", "patternProperties", "$defs", "definitions"] {
        if let Some(Value::Object(subs)) = map.get_mut(key) {
            // Definitions start their own recursion scope.
            let scope = if key.starts_with('$') || key == "definitions" {
                None
            } else {
                anchor
            };
            for (name, s) in subs.iter_mut() {
                let here = format!("{at}/{key}/{}", pointer_segment(name));
                walk(s, &here, scope, dropped);
            }
        }
    }
}

fn fix_type(map: &mut Map<String, Value>, at: &str, dropped: &mut Vec<String>) {
    let fixed = match map.get("type") {
        Some(Value::String(t)) => match type_name(t) {
            Some(name) if name == t => return,
            Some(name) => {
                dropped.push(format!("{at}/type: {t:?} read as {name:?}"));
                Value::String(name.into())
            }
            None => {
                dropped.push(format!("{at}/type: {t:?} is no type; any value accepted"));
                map.remove("type");
                return;
            }
        },
        Some(Value::Array(types)) => {
            let mut names: Vec<Value> = Vec::new();
            for t in types {
                match t.as_str().and_then(type_name) {
                    Some(name) if !names.iter().any(|n| n == name) => names.push(name.into()),
                    Some(_) => {}
                    None => dropped.push(format!("{at}/type: {t} is no type; dropped")),
                }
            }
            if names == *types {
                return;
            }
            if names.is_empty() {
                map.remove("type");
                return;
            }
            Value::Array(names)
        }
        Some(other) => {
            dropped.push(format!("{at}/type: {other} is no type; any value accepted"));
            map.remove("type");
            return;
        }
        None => return,
    };
    map.insert("type".into(), fixed);
}
