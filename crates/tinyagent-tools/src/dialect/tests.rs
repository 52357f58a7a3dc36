//! The dialects on hand-picked schemas.

use serde_json::json;

use super::*;

#[test]
fn anthropic_keeps_what_it_accepts() {
    let schema = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "string", "format": "uri"}}, "additionalProperties": false});
    let out = anthropic_schema(&schema);
    assert_eq!(out.schema, schema);
    assert!(out.dropped.is_empty());
    let out = anthropic_schema(&json!({"allOf": [
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
        {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]},
    ]}));
    assert_eq!(
        out.schema,
        json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a", "b"]})
    );
    assert!(out.dropped.is_empty(), "allOf merges exactly");
    let out = anthropic_schema(&json!({"type": "string"}));
    assert_eq!(out.schema, json!({"type": "object"}));
    assert_eq!(
        out.dropped,
        ["/type: \"string\" at the root; an object schema is sent"]
    );
}

#[test]
fn gemini_inlines_refs_and_rewrites_types() {
    let out = gemini_schema(&json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "n": {"type": ["integer", "null"], "format": "uint32", "minimum": 0},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
            "mode": {"const": "fast"},
            "level": {"type": "integer", "enum": [1, 2, 3], "description": "How hard."},
            "either": {"type": ["string", "number"]},
            "node": {"$ref": "#/$defs/Node"},
        },
        "required": ["n", "ghost"],
        "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
    }));
    let s = &out.schema;
    assert_eq!(
        s["properties"]["n"],
        json!({"type": "INTEGER", "minimum": 0, "nullable": true})
    );
    assert_eq!(
        s["properties"]["tags"],
        json!({"type": "ARRAY", "items": {"type": "STRING"}})
    );
    assert_eq!(
        s["properties"]["mode"],
        json!({"type": "STRING", "enum": ["fast"]})
    );
    assert_eq!(
        s["properties"]["level"],
        json!({"type": "INTEGER", "description": "How hard. One of: 1, 2, 3."})
    );
    assert_eq!(
        s["properties"]["either"],
        json!({"anyOf": [{"type": "STRING"}, {"type": "NUMBER"}]})
    );
    assert_eq!(s["required"], json!(["n"]));
    assert!(s.get("$defs").is_none() && s.get("$schema").is_none());
    // The recursive node is cut deep down, not forever.
    let mut node = &s["properties"]["node"];
    let mut depth = 0;
    while let Some(next) = node.get("properties").and_then(|p| p.get("next")) {
        node = next;
        depth += 1;
    }
    assert_eq!(depth, MAX_REF_DEPTH);
    let dropped = out.dropped.join("\n");
    for expected in [
        "/properties/n/format: \"uint32\" is not a format Gemini accepts",
        "/properties/tags/uniqueItems: not a keyword Gemini accepts; dropped",
        "/properties/level/enum: an enum of values other than strings",
        "/required: [\"ghost\"] names no property",
        "recursive beyond 8 levels",
    ] {
        assert!(dropped.contains(expected), "{expected} in\n{dropped}");
    }
}
