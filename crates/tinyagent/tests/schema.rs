//! The schema pipeline: the tutorial's three schemas and each rule of `generate_schema`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tinyagent::Tool;
use tinyagent::tools::{self, generate_schema, schema::strict_schema};

fn seed_schema(text: &str) -> Value {
    serde_json::from_str(text).expect("the tutorial's schema is JSON")
}

#[test]
fn seed_weather_schema() {
    let tool = tinyagent_demo::weather_tool();
    assert_eq!(
        *tool.input_schema(),
        seed_schema(
            r#"{"type":"object","properties":{"city":{"type":"string","description":"城市名称，如北京、上海、广州"},"unit":{"type":"string","description":"温度单位","enum":["celsius","fahrenheit"]}},"required":["city"]}"#
        )
    );
}

#[test]
fn seed_calculator_schema() {
    let tool = tinyagent_demo::calculator_tool();
    assert_eq!(
        *tool.input_schema(),
        json!({
            "type": "object",
            "properties": {
                "operation": {"type": "string", "description": "运算类型",
                    "enum": ["add", "subtract", "multiply", "divide", "sqrt", "power"]},
                "a": {"type": "number", "description": "第一个操作数"},
                "b": {"type": "number", "description": "第二个操作数（sqrt 操作不需要）"}
            },
            "required": ["operation", "a"]
        })
    );
}

#[test]
fn seed_agent_tool_schema() {
    let expected = seed_schema(
        r#"{"type":"object","properties":{"message":{"type":"string","description":"要发送给此 Agent 的消息"}},"required":["message"]}"#,
    );
    assert_eq!(*tinyagent_demo::translator_tool().input_schema(), expected);
    assert_eq!(
        tools::agent_tool_schema_described(tinyagent_demo::TRANSLATOR_MESSAGE_DESCRIPTION),
        expected
    );
}

#[test]
fn agent_tools_describe_their_message_in_english_unless_told_otherwise() {
    let schema = tools::agent_tool_schema();
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {"message": {
                "type": "string",
                "description": tools::DEFAULT_AGENT_MESSAGE_DESCRIPTION,
            }},
            "required": ["message"],
        })
    );
    assert_eq!(
        tools::DEFAULT_AGENT_MESSAGE_DESCRIPTION,
        "The task or question for the agent, in plain words."
    );
    let fr = tools::new_agent_tool_fn("traducteur", "Traduit", |_ctx, m: String| async move {
        Ok::<_, tinyagent::ToolError>(m)
    })
    .message_description("Le texte à traduire");
    assert_eq!(
        fr.input_schema()["properties"]["message"]["description"],
        "Le texte à traduire"
    );
}

/// Walks a schema and collects every key used anywhere in it.
fn all_keys(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                out.insert(k.clone());
                all_keys(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| all_keys(v, out)),
        _ => {}
    }
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Inner {
    /// The x coordinate
    x: i32,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
/// This doc comment documents Rust code and is not in the schema.
struct Outer {
    inner: Inner,
    more: Vec<Inner>,
}

#[test]
fn root_is_an_inline_object_without_noise() {
    let schema = generate_schema::<Outer>();
    assert_eq!(schema["type"], "object");
    let mut keys = BTreeSet::new();
    all_keys(&schema, &mut keys);
    for banned in ["$ref", "$defs", "$schema", "title", "format"] {
        assert!(!keys.contains(banned), "{banned} in {schema:#}");
    }
    assert!(schema.get("description").is_none());
    assert_eq!(
        schema["properties"]["inner"],
        json!({"type": "object", "properties": {"x": {"type": "integer", "description": "The x coordinate", "minimum": i32::MIN, "maximum": i32::MAX}}, "required": ["x"]})
    );
    assert_eq!(
        schema["properties"]["more"]["items"],
        schema["properties"]["inner"]
    );
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Tree {
    label: String,
    children: Vec<Tree>,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Forest {
    trees: Vec<Tree>,
}

#[test]
fn recursive_types_keep_refs() {
    let schema = generate_schema::<Forest>();
    let defs = schema["$defs"]
        .as_object()
        .expect("recursive types need $defs");
    let tree = &defs["Tree"];
    assert_eq!(
        tree["properties"]["children"]["items"]["$ref"],
        "#/$defs/Tree"
    );
    assert!(tree.get("title").is_none());
    // And the schema is usable: a validator accepts a real forest.
    let validator = tools::schema::SchemaValidator::new(&schema).unwrap();
    validator
        .validate_str(r#"{"trees":[{"label":"a","children":[{"label":"b","children":[]}]}]}"#)
        .unwrap();
    assert!(
        validator
            .validate_str(r#"{"trees":[{"label":"a","children":[{"label":1,"children":[]}]}]}"#)
            .is_err()
    );
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Described {
    /// From a doc comment
    a: String,
    #[schemars(description = "From an attribute")]
    b: String,
}

#[test]
fn doc_comments_and_attributes_become_descriptions() {
    let schema = generate_schema::<Described>();
    assert_eq!(
        schema["properties"]["a"]["description"],
        "From a doc comment"
    );
    assert_eq!(
        schema["properties"]["b"]["description"],
        "From an attribute"
    );
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[allow(dead_code)]
enum Level {
    /// Documented variant
    LowPriority,
    #[serde(rename = "urgent!")]
    High,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct WithEnums {
    level: Level,
    maybe_level: Option<Level>,
    #[schemars(extend("enum" = ["celsius", "fahrenheit"]))]
    unit_as_string: String,
}

#[test]
fn unit_enums_become_string_enums_with_serde_renames() {
    let schema = generate_schema::<WithEnums>();
    // Values as a set: schemars lists variants with doc comments after the others.
    let values = |v: &Value| -> BTreeSet<String> {
        v["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_owned())
            .collect()
    };
    for field in ["level", "maybe_level"] {
        let prop = &schema["properties"][field];
        assert_eq!(prop.as_object().unwrap().len(), 2, "{prop}");
        assert_eq!(prop["type"], "string");
        assert_eq!(
            values(prop),
            BTreeSet::from(["LOW_PRIORITY".into(), "urgent!".into()])
        );
    }
    // The tutorial's comma-list `enum:"a,b"` tag on a string field.
    assert_eq!(
        schema["properties"]["unit_as_string"],
        json!({"type": "string", "enum": ["celsius", "fahrenheit"]})
    );
    assert_eq!(schema["required"], json!(["level", "unit_as_string"]));
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Optionals {
    plain: String,
    maybe: Option<String>,
    #[serde(default)]
    defaulted: u32,
    maybe_inner: Option<Inner>,
    maybe_list: Option<Vec<f64>>,
}

#[test]
fn option_and_default_fields_are_not_required_and_not_nullable() {
    let schema = generate_schema::<Optionals>();
    assert_eq!(schema["required"], json!(["plain"]));
    let props = &schema["properties"];
    assert_eq!(props["maybe"], json!({"type": "string"}));
    assert_eq!(props["defaulted"]["type"], "integer");
    assert_eq!(props["maybe_inner"]["type"], "object");
    assert_eq!(
        props["maybe_list"],
        json!({"type": "array", "items": {"type": "number"}})
    );
    let mut keys = BTreeSet::new();
    all_keys(&schema, &mut keys);
    let text = schema.to_string();
    assert!(!text.contains("null"), "no null anywhere: {text}");
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Numbers {
    small: u8,
    count: u64,
    size: usize,
    signed: i64,
    ratio: f32,
    precise: f64,
    flag: bool,
}

#[test]
fn numbers_map_to_integer_and_number() {
    let schema = generate_schema::<Numbers>();
    let p = &schema["properties"];
    for unsigned in ["small", "count", "size"] {
        assert_eq!(p[unsigned]["type"], "integer", "{unsigned}");
        assert_eq!(p[unsigned]["minimum"], 0, "{unsigned}");
        assert!(p[unsigned].get("format").is_none());
    }
    assert_eq!(p["small"]["maximum"], 255);
    // Every bounded integer states its range: the decoder refuses what does not fit.
    assert_eq!(p["count"]["maximum"], u64::MAX);
    assert_eq!(p["size"]["maximum"], u64::MAX);
    assert_eq!(
        p["signed"],
        json!({"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX})
    );
    assert_eq!(p["ratio"], json!({"type": "number"}));
    assert_eq!(p["precise"], json!({"type": "number"}));
    assert_eq!(p["flag"], json!({"type": "boolean"}));
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Collections {
    list: Vec<String>,
    fixed: [i32; 2],
    set: BTreeSet<String>,
    scores: HashMap<String, f64>,
    nested: BTreeMap<String, Inner>,
}

#[test]
fn collections_and_maps() {
    let schema = generate_schema::<Collections>();
    let p = &schema["properties"];
    assert_eq!(
        p["list"],
        json!({"type": "array", "items": {"type": "string"}})
    );
    assert_eq!(p["fixed"]["type"], "array");
    assert_eq!(
        p["fixed"]["items"],
        json!({"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX})
    );
    assert_eq!(p["set"]["type"], "array");
    assert_eq!(p["set"]["items"], json!({"type": "string"}));
    assert_eq!(
        p["scores"],
        json!({"type": "object", "additionalProperties": {"type": "number"}})
    );
    assert_eq!(p["nested"]["type"], "object");
    assert_eq!(
        p["nested"]["additionalProperties"]["properties"]["x"]["type"],
        "integer"
    );
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct Renamed {
    first_name: String,
    #[serde(rename = "years")]
    age: u32,
    #[serde(skip)]
    internal: String,
}

#[test]
fn serde_rename_rename_all_and_skip_are_honoured() {
    let schema = generate_schema::<Renamed>();
    let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["firstName", "years"]);
    assert_eq!(schema["required"], json!(["firstName", "years"]));
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct NoArgs {}

#[test]
fn empty_and_unit_inputs_are_empty_objects() {
    assert_eq!(generate_schema::<NoArgs>()["type"], "object");
    assert_eq!(
        generate_schema::<()>(),
        json!({"type": "object", "properties": {}})
    );
}

#[test]
fn schemas_are_cached_per_type() {
    let a = generate_schema::<Outer>();
    let b = generate_schema::<Outer>();
    assert_eq!(a, b);
    assert_ne!(a, generate_schema::<Inner>());
}

#[test]
fn strict_dialect() {
    let schema = generate_schema::<Optionals>();
    let strict = strict_schema(&schema);
    assert_eq!(
        strict["required"],
        json!(["plain", "maybe", "defaulted", "maybe_inner", "maybe_list"])
    );
    assert_eq!(strict["additionalProperties"], false);
    let p = &strict["properties"];
    assert_eq!(p["plain"], json!({"type": "string"}));
    assert_eq!(p["maybe"], json!({"type": ["string", "null"]}));
    assert_eq!(p["defaulted"]["type"], json!(["integer", "null"]));
    assert!(p["defaulted"].get("default").is_none());
    assert_eq!(p["maybe_inner"]["type"], json!(["object", "null"]));
    assert_eq!(
        p["maybe_inner"]["additionalProperties"], false,
        "nested objects too"
    );
    assert_eq!(p["maybe_inner"]["required"], json!(["x"]));

    let weather = strict_schema(tinyagent_demo::weather_tool().input_schema());
    assert_eq!(
        weather["properties"]["unit"]["enum"],
        json!(["celsius", "fahrenheit", null])
    );

    // A nullable `$ref` (recursive type) gets an `anyOf` with null.
    let anyof = strict_schema(&json!({
        "type": "object",
        "properties": {"t": {"$ref": "#/$defs/T", "description": "d"}},
        "$defs": {"T": {"type": "object", "properties": {"v": {"type": "string"}}}}
    }));
    assert_eq!(
        anyof["properties"]["t"],
        json!({"anyOf": [{"$ref": "#/$defs/T"}, {"type": "null"}], "description": "d"})
    );
    assert_eq!(anyof["$defs"]["T"]["additionalProperties"], false);
    assert_eq!(anyof["$defs"]["T"]["required"], json!(["v"]));
}

#[test]
fn strict_dialect_leaves_maps_alone() {
    let strict = strict_schema(&generate_schema::<Collections>());
    assert_eq!(
        strict["properties"]["scores"]["additionalProperties"],
        json!({"type": "number"})
    );
    assert_eq!(strict["additionalProperties"], false);
}
