//! Schema dialects: a tool's input schema (JSON Schema, as [`generate_schema`] or a
//! hand-written tool gives it) in the form each vendor accepts.
//!
//! - [`anthropic_schema`]: Anthropic's `input_schema` takes JSON Schema, but its root must be
//!   an object schema without `anyOf`, `oneOf` or `allOf` at the top level;
//! - [`gemini_schema`]: Gemini's `parameters` take a subset of OpenAPI 3.0's schema object:
//!   upper-case `type`s, `nullable` instead of type arrays, no `$ref` (inlined here), no
//!   `additionalProperties`, `const`, `oneOf`, `allOf`, `$schema`/`$defs`…, enums of strings
//!   only, and a few `format`s.
//!
//! A schema that cannot be said exactly in a dialect is sent in the closest form: what was
//! dropped or changed is listed in [`DialectSchema::dropped`] (each entry names the place as
//! a JSON pointer), for the provider to log at WARN with [`DialectSchema::warn`]. No property
//! is ever dropped: arguments the tool accepts stay expressible.
//!
//! [`generate_schema`]: crate::generate_schema

use serde_json::{Map, Value};

mod anthropic;
mod gemini;
mod repair;
#[cfg(test)]
mod tests;

pub use anthropic::anthropic_schema;
pub use gemini::gemini_schema;

/// A schema in a vendor's dialect, and what had to change to get there.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DialectSchema {
    /// The schema to send.
    pub schema: Value,
    /// What was dropped or changed, each as `"<JSON pointer>: <what>"`; empty when the schema
    /// says exactly what the original said.
    pub dropped: Vec<String>,
}

impl DialectSchema {
    /// Logs at WARN, once, what was dropped from `tool`'s schema for `vendor`; nothing when
    /// nothing was.
    pub fn warn(&self, vendor: &str, tool: &str) {
        if !self.dropped.is_empty() {
            tracing::warn!(
                gen_ai.tool.name = tool,
                vendor,
                dropped = %self.dropped.join("; "),
                "the tool's input schema cannot be said exactly in the vendor's dialect; \
                 sent in the closest form",
            );
        }
    }
}

/// The most `$ref`s followed inside each other before a recursive schema is cut.
pub(crate) const MAX_REF_DEPTH: usize = 8;

/// `branch` with a local `$ref` (`#/$defs/…`) replaced by what it names in `root`.
pub(crate) fn resolve_local(root: &Map<String, Value>, branch: Value) -> Value {
    if let Some(target) = branch.get("$ref").and_then(Value::as_str) {
        if let Some(found) = lookup(&Value::Object(root.clone()), target) {
            return found.clone();
        }
    }
    branch
}

/// Merges an object schema `from` into `into`: properties united (a property both have keeps
/// `into`'s), `required` united when `union_required`.
pub(crate) fn merge_into(into: &mut Map<String, Value>, from: Value, union_required: bool) {
    let Value::Object(from) = from else {
        return;
    };
    for (key, value) in from {
        match (key.as_str(), into.get_mut(&key)) {
            ("properties", Some(Value::Object(props))) => {
                if let Value::Object(more) = value {
                    for (name, prop) in more {
                        props.entry(name).or_insert(prop);
                    }
                }
            }
            ("required", Some(Value::Array(names))) => {
                if union_required {
                    if let Value::Array(more) = value {
                        for name in more {
                            if !names.contains(&name) {
                                names.push(name);
                            }
                        }
                    }
                }
            }
            ("$defs" | "definitions", Some(Value::Object(defs))) => {
                if let Value::Object(more) = value {
                    for (name, def) in more {
                        defs.entry(name).or_insert(def);
                    }
                }
            }
            (_, Some(_)) => {}
            (_, None) => {
                if key != "required" || union_required {
                    into.insert(key, value);
                }
            }
        }
    }
}

/// What a JSON pointer reference (`#/$defs/Name`, `#/definitions/Name`) names in `root`.
pub(crate) fn lookup<'v>(root: &'v Value, reference: &str) -> Option<&'v Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    root.pointer(pointer)
}

/// `name` as one segment of a JSON pointer (`~` and `/` escaped).
pub(crate) fn pointer_segment(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// The branches of an `allOf` merged into one schema: `$ref`s resolved in `root` (with the
/// siblings of a `$ref` laid over what it names), nested `allOf`s merged too, properties and
/// `required` united.
pub(crate) fn flatten_all_of(
    root: &Value,
    branches: Vec<Value>,
    depth: usize,
) -> Map<String, Value> {
    let mut merged = Map::new();
    for branch in branches {
        let mut branch = match branch {
            Value::Object(mut map) if depth < MAX_REF_DEPTH => {
                match map
                    .remove("$ref")
                    .and_then(|r| r.as_str().and_then(|r| lookup(root, r)).cloned())
                {
                    Some(Value::Object(mut target)) => {
                        target.extend(map);
                        target
                    }
                    _ => map,
                }
            }
            Value::Object(map) => map,
            _ => continue,
        };
        if let Some(Value::Array(inner)) = branch.remove("allOf") {
            let inner = flatten_all_of(root, inner, depth + 1);
            merge_into(&mut branch, Value::Object(inner), true);
        }
        merge_into(&mut merged, Value::Object(branch), true);
    }
    merged
}
