//! The checks behind the fuzz targets in `fuzz/`, here so that the stable test suite can replay
//! the inputs the fuzzer found (`fuzz/regressions/`). Not part of the API: each function takes
//! arbitrary bytes and panics when an invariant breaks.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};

use futures::FutureExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::context::ToolContext;
use crate::tools::middleware::validation::without_nulls;
use crate::tools::{self, IntoTool, schema::SchemaValidator};

/// Runs `check` on every file of `<regressions>/<target>/` (the `fuzz/regressions` folder of
/// the workspace), naming the file whose check panics. The stable tests of each crate with
/// fuzz targets replay their cases through this.
///
/// # Panics
///
/// When the folder is missing or empty, or a check panics.
pub fn replay(regressions: &std::path::Path, target: &str, check: fn(&[u8])) {
    let dir = regressions.join(target);
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            entry
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .path()
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no cases in {}", dir.display());
    for file in files {
        let data = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        if let Err(panic) = std::panic::catch_unwind(|| check(&data)) {
            let why = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic");
            panic!("{}: {why}", file.display());
        }
    }
}

/// The longest error message a check accepts, whatever the input.
const MAX_MESSAGE: usize = 8 * 1024;

/// Polls a future that never waits (the tools here do not) to its end.
fn ready<F: Future>(fut: F) -> F::Output {
    fut.now_or_never()
        .expect("the checked tools never wait, so their futures are ready at once")
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Inner {
    id: u32,
    ratio: Option<f64>,
}

/// A typed input with most of what tool inputs use.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Input {
    city: String,
    unit: Option<Unit>,
    #[schemars(extend("enum" = ["fast", "slow"]))]
    mode: Option<String>,
    count: Option<u8>,
    offset: Option<i32>,
    values: Option<Vec<i64>>,
    inner: Option<Inner>,
    tags: Option<HashMap<String, bool>>,
    #[serde(default)]
    flag: bool,
}

fn check_message(what: &str, message: &str) {
    assert!(
        message.len() <= MAX_MESSAGE,
        "{what}: an error message of {} bytes",
        message.len()
    );
}

/// The tools and validators [`tool_input`] checks, made once: compiling schemas on every input
/// would leave little time for the inputs.
struct Fixture {
    typed: Arc<dyn crate::Tool>,
    checked: Arc<dyn crate::Tool>,
    validator: SchemaValidator,
    seen: Arc<Mutex<Option<Value>>>,
    manual: Arc<dyn crate::Tool>,
    manual_validator: SchemaValidator,
    got: Arc<Mutex<Option<String>>>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let seen: Arc<Mutex<Option<Value>>> = Arc::default();
        let record = seen.clone();
        let typed = tools::new_func("typed", "typed", move |i: Input| {
            *record.lock().unwrap() = Some(serde_json::to_value(&i).unwrap());
            async move { Ok::<_, crate::ToolError>("ok") }
        })
        .into_tool();
        let validator =
            SchemaValidator::new(typed.input_schema()).expect("generated schemas compile");
        let checked = tools::wrap_tool(
            typed.clone(),
            [tools::middleware::ValidationLayer::new().into()],
        );
        let manual_schema = json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 64},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "n": {"type": "integer", "minimum": 0, "maximum": 10}
            },
            "required": ["city"],
            "additionalProperties": false
        });
        let manual_validator = SchemaValidator::new(&manual_schema).unwrap();
        let got: Arc<Mutex<Option<String>>> = Arc::default();
        let record = got.clone();
        let manual = tools::new_tool(
            "manual",
            "manual",
            manual_schema,
            move |_ctx: ToolContext, raw: String| {
                *record.lock().unwrap() = Some(raw.clone());
                async move { Ok::<_, crate::ToolError>(raw) }
            },
        );
        let manual = tools::wrap_tool(manual, [tools::middleware::ValidationLayer::new().into()]);
        Fixture {
            typed,
            checked,
            validator,
            seen,
            manual,
            manual_validator,
            got,
        }
    })
}

/// Tool input decoding, typed and hand-written, behind validation: a tool runs only on
/// arguments that are strict JSON and pass its schema, and gets exactly what was checked.
pub fn tool_input(data: &[u8]) {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let f = fixture();
    let ctx = ToolContext::default();
    let strict = tools::parse_arguments(input);

    // The typed tool, bare: it may decode leniently, but never panics and stays bounded.
    if let Err(err) = ready(f.typed.handle(&ctx, input)) {
        check_message("bare typed tool", err.message());
    }

    // The same tool behind validation: it runs only when the schema check passed.
    *f.seen.lock().unwrap() = None;
    match ready(f.checked.handle(&ctx, input)) {
        Ok(_) => {
            let value = strict
                .as_ref()
                .expect("a tool ran on arguments that are not strict JSON");
            // The arguments pass the schema, or do without their `null`s (read as left out).
            assert!(
                f.validator.is_valid(value)
                    || without_nulls(value).is_some_and(|c| f.validator.is_valid(&c)),
                "a tool ran on arguments its schema refuses: {input:?}"
            );
            let decoded = f.seen.lock().unwrap().take().expect("the tool ran");
            // What the tool decoded is what was checked: every field it read has the checked
            // value (absent fields their defaults; numbers compared by value).
            assert!(
                decoded_from(value, &decoded),
                "checked {value}, decoded {decoded}"
            );
        }
        Err(err) => check_message("validated typed tool", err.message()),
    }

    // A hand-written tool behind validation gets strict JSON that passes its schema.
    *f.got.lock().unwrap() = None;
    match ready(f.manual.handle(&ctx, input)) {
        Ok(_) => {
            let raw = f.got.lock().unwrap().take().expect("the tool ran");
            let value = tools::parse_arguments(&raw).expect("the tool got strict JSON");
            // … which the tool's own `serde_json` reads too: one definition of JSON.
            assert!(
                serde_json::from_str::<Value>(&raw).is_ok(),
                "{raw:?} passed validation but serde_json refuses it"
            );
            assert!(f.manual_validator.is_valid(&value), "{raw:?} passed");
            // Exactly the arguments, or the arguments without `null`s the schema refuses.
            let strict = strict.as_ref().expect("the tool got strict JSON");
            let cleaned = without_nulls(strict);
            assert!(
                &value == strict || Some(&value) == cleaned.as_ref(),
                "{raw:?} from {input:?}"
            );
        }
        Err(err) => check_message("validated hand-written tool", err.message()),
    }

    // Exact cache keys agree with the strict reader (both trim JSON's whitespace only).
    if let Ok(value) = &strict {
        let canonical = tools::canonical_json(input).expect("strict JSON has a canonical form");
        let again: Value = serde_json::from_str(&canonical).expect("canonical text is JSON");
        assert!(same_json(value, &again), "{input:?} -> {canonical}");
        assert_eq!(
            tools::canonical_json(&canonical).as_deref(),
            Some(&*canonical)
        );
    }

    // Redaction never panics, and a password is never printed.
    let _ = crate::redact::text(input);
    let text = json!({"password": input, "city": "x"}).to_string();
    assert_eq!(
        crate::redact::text(&text),
        r#"{"password":"[REDACTED]","city":"x"}"#
    );
}

/// Whether `got` (a decoded input, encoded again) holds the values of `sent` wherever it has a
/// field that `sent` gave a value.
fn decoded_from(sent: &Value, got: &Value) -> bool {
    match (sent, got) {
        (Value::Object(s), Value::Object(g)) => g.iter().all(|(k, gv)| match s.get(k) {
            None | Some(Value::Null) => true,
            Some(sv) => decoded_from(sv, gv),
        }),
        (Value::Array(s), Value::Array(g)) => {
            s.len() == g.len() && s.iter().zip(g).all(|(a, b)| decoded_from(a, b))
        }
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => sent == got,
    }
}

/// JSON equality that treats numbers by value (`1` and `1.0` alike).
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b))
        }
        (Value::Object(x), Value::Object(y)) => x
            .iter()
            .filter(|(_, v)| !v.is_null())
            .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w))),
        _ => a == b,
    }
}

/// `strict_schema` on any JSON: no panic, idempotent, and every object with properties
/// requires all of them.
pub fn strict_schema(data: &[u8]) {
    let Ok(schema) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let strict = tools::schema::strict_schema(&schema);
    assert_eq!(
        tools::schema::strict_schema(&strict),
        strict,
        "strict_schema is not idempotent on {schema}"
    );
    if let Some(Value::Object(props)) = strict.get("properties") {
        let required: Vec<&str> = strict["required"]
            .as_array()
            .expect("required is a list")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for name in props.keys() {
            assert!(required.contains(&name.as_str()), "{name} is not required");
        }
        if let Some(Value::Array(before)) = schema.get("required") {
            for name in before.iter().filter_map(Value::as_str) {
                assert!(
                    required.contains(&name),
                    "{name} was required and is no more"
                );
            }
        }
    }
}

/// `SchemaValidator` on a fuzzed schema (the first line) and fuzzed arguments (the rest):
/// no panic, bounded messages, and `validate` agrees with `is_valid`.
pub fn schema_validator(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (schema, input) = text.split_once('\n').unwrap_or((text, ""));
    let Ok(schema) = serde_json::from_str::<Value>(schema) else {
        return;
    };
    let validator = match SchemaValidator::new(&schema) {
        Ok(v) => v,
        Err(err) => return check_message("schema", err.message()),
    };
    match validator.validate_str(input) {
        Ok(value) => assert!(validator.is_valid(&value)),
        Err(err) => {
            check_message("arguments", err.message());
            if let Ok(value) = tools::parse_arguments(input) {
                assert!(
                    !validator.is_valid(&value),
                    "validate and is_valid disagree"
                );
            }
        }
    }
}
