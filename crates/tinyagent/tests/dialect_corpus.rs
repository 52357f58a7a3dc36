//! Thousands of real-world tool definitions (tests/data/tool_corpus, see its README) through
//! each schema dialect: the result must be valid for the vendor, checked against the vendor's
//! own schema of a tool's parameters, and keep every property of the original.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;
use tinyagent::tools::schema::{DialectSchema, anthropic_schema, gemini_schema};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tool_corpus");

struct Tool {
    source: String,
    name: String,
    parameters: Value,
}

fn corpus() -> Vec<Tool> {
    let mut tools = Vec::new();
    for file in ["gorilla_bfcl.jsonl", "openapi_vendors.jsonl"] {
        let text = std::fs::read_to_string(Path::new(CORPUS).join(file)).expect("corpus file");
        for (i, line) in text.lines().enumerate() {
            let v: Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{file}:{}: {e}", i + 1));
            tools.push(Tool {
                source: v["source"].as_str().unwrap().to_owned(),
                name: v["name"].as_str().unwrap().to_owned(),
                parameters: v["parameters"].clone(),
            });
        }
    }
    tools
}

fn vendor_schema(file: &str) -> jsonschema::Validator {
    let text = std::fs::read_to_string(Path::new(CORPUS).join(file)).expect("vendor schema");
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).expect("the vendor's schema compiles")
}

/// How deep `$ref`s are followed when listing properties (the dialects inline deeper).
const REF_DEPTH: usize = 4;
/// The longest property path listed.
const MAX_PATH: usize = 10;

/// Every property path of `schema` (`a/b`, `list/[]/c`), through `$ref`s (resolved in
/// `root`), items and combinator branches.
fn property_paths(
    schema: &Value,
    root: &Value,
    prefix: &str,
    depth: usize,
    out: &mut BTreeSet<String>,
) {
    let Value::Object(map) = schema else { return };
    if prefix.matches('/').count() >= MAX_PATH {
        return;
    }
    if let Some(r) = map.get("$ref").and_then(Value::as_str) {
        if depth < REF_DEPTH {
            if let Some(target) = r.strip_prefix('#').and_then(|p| root.pointer(p)) {
                property_paths(target, root, prefix, depth + 1, out);
            }
        }
        return;
    }
    if let Some(Value::Object(props)) = map.get("properties") {
        for (name, prop) in props {
            let path = format!("{prefix}/{name}");
            out.insert(path.clone());
            property_paths(prop, root, &path, depth, out);
        }
    }
    match map.get("items") {
        Some(Value::Array(items)) => {
            for item in items {
                property_paths(item, root, &format!("{prefix}/[]"), depth, out);
            }
        }
        Some(item) => property_paths(item, root, &format!("{prefix}/[]"), depth, out),
        None => {}
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(branches)) = map.get(key) {
            let prefix = if key == "prefixItems" {
                format!("{prefix}/[]")
            } else {
                prefix.to_owned()
            };
            for branch in branches {
                property_paths(branch, root, &prefix, depth, out);
            }
        }
    }
}

fn paths(schema: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    property_paths(schema, schema, "", 0, &mut out);
    out
}

/// Gemini's rules the discovery document does not state: enums on strings only, `required`
/// naming listed properties, no keyword of JSON Schema it lacks (the vendor schema closes the
/// object, this checks nested ones too).
fn gemini_rules(schema: &Value, at: &str, problems: &mut Vec<String>) {
    let Value::Object(map) = schema else { return };
    if map.contains_key("enum") && map.get("type").and_then(Value::as_str) != Some("STRING") {
        problems.push(format!("{at}: an enum on a type other than STRING"));
    }
    if let Some(Value::Array(required)) = map.get("required") {
        let props = map.get("properties").and_then(Value::as_object);
        for name in required {
            if !name
                .as_str()
                .is_some_and(|n| props.is_some_and(|p| p.contains_key(n)))
            {
                problems.push(format!("{at}: required {name} is no property"));
            }
        }
    }
    if let Some(Value::Object(props)) = map.get("properties") {
        for (name, prop) in props {
            gemini_rules(prop, &format!("{at}/properties/{name}"), problems);
        }
    }
    if let Some(items) = map.get("items") {
        gemini_rules(items, &format!("{at}/items"), problems);
    }
    if let Some(Value::Array(branches)) = map.get("anyOf") {
        for (i, b) in branches.iter().enumerate() {
            gemini_rules(b, &format!("{at}/anyOf/{i}"), problems);
        }
    }
}

/// The kind of a dropped-entry (`/a/b/format: "uri" is not…` → `format`).
fn drop_kind(entry: &str) -> String {
    let (pointer, what) = entry.split_once(": ").unwrap_or((entry, ""));
    let last = pointer.rsplit('/').next().unwrap_or_default();
    if what.contains("$ref") {
        "$ref".into()
    } else if last.is_empty() {
        "root".into()
    } else {
        last.to_owned()
    }
}

struct Report {
    tools: usize,
    exact: usize,
    kinds: BTreeMap<String, usize>,
    failures: Vec<String>,
}

fn run(name: &str, dialect: fn(&Value) -> DialectSchema, check: impl Fn(&Value) -> Vec<String>) {
    let tools = corpus();
    let mut report = Report {
        tools: tools.len(),
        exact: 0,
        kinds: BTreeMap::new(),
        failures: Vec::new(),
    };
    let mut by_source: BTreeMap<String, usize> = BTreeMap::new();
    for tool in &tools {
        *by_source
            .entry(tool.source.split('/').next().unwrap().to_owned())
            .or_default() += 1;
        let out = dialect(&tool.parameters);
        if out.dropped.is_empty() {
            report.exact += 1;
        }
        let mut seen = BTreeSet::new();
        for entry in &out.dropped {
            let kind = drop_kind(entry);
            if seen.insert(kind.clone()) {
                *report.kinds.entry(kind).or_default() += 1;
            }
        }
        let mut problems = check(&out.schema);
        let before = paths(&tool.parameters);
        let after = paths(&out.schema);
        let lost: Vec<_> = before.difference(&after).collect();
        if !lost.is_empty() {
            problems.push(format!("properties lost: {lost:?}"));
        }
        for p in problems {
            report
                .failures
                .push(format!("{} ({}): {p}", tool.name, tool.source));
        }
    }
    eprintln!(
        "{name}: {} tools ({by_source:?}); {} sent exactly, {} in the closest form; tools \
         with each kind of change: {:?}; failures: {}",
        report.tools,
        report.exact,
        report.tools - report.exact,
        report.kinds,
        report.failures.len()
    );
    assert!(
        report.tools >= 1000,
        "the corpus has {} tools",
        report.tools
    );
    assert!(
        report.failures.is_empty(),
        "{} of {} tools fail the {name} dialect, the first:\n{}",
        report.failures.len(),
        report.tools,
        report.failures[..report.failures.len().min(20)].join("\n")
    );
}

#[test]
fn every_tool_of_the_corpus_is_valid_for_anthropic_and_keeps_its_properties() {
    let input_schema = vendor_schema("anthropic_InputSchema.json");
    run("anthropic", anthropic_schema, |schema| {
        let mut problems: Vec<String> = input_schema
            .iter_errors(schema)
            .map(|e| format!("not an InputSchema at {}: {e}", e.instance_path()))
            .collect();
        if let Err(e) = jsonschema::validator_for(schema) {
            problems.push(format!("not a valid JSON Schema: {e}"));
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if schema.get(key).is_some() {
                problems.push(format!("{key} at the top level"));
            }
        }
        problems
    });
}

#[test]
fn every_tool_of_the_corpus_is_valid_for_gemini_and_keeps_its_properties() {
    let gemini = vendor_schema("gemini_Schema.json");
    run("gemini", gemini_schema, |schema| {
        let mut problems: Vec<String> = gemini
            .iter_errors(schema)
            .take(3)
            .map(|e| format!("not a Gemini Schema at {}: {e}", e.instance_path()))
            .collect();
        if schema.get("type").and_then(Value::as_str) != Some("OBJECT") {
            problems.push("the root is not an OBJECT".into());
        }
        gemini_rules(schema, "", &mut problems);
        problems
    });
}
