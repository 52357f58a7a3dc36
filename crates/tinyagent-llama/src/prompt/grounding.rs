//! Whether a call's arguments come from the conversation. A required value the tool takes as
//! given (a string its schema does not draw from a set or a pattern, a number) that nothing
//! the user, the instruction or an earlier tool said holds was made up by the model: a request
//! no offered tool serves tends to get such a call ("苹果公司的股价是多少？" → the weather of
//! 北京, "Order a pizza for me." → 2 × 3), where a request the tool serves gives it its
//! values.

use serde_json::Value;
use tinyagent::{ModelRequest, Role, model::ToolDefinition};

use super::{is_required, numbers_of};

/// The required arguments of a call to `tool` with `arguments` whose values nothing in `req`
/// holds (see the module's docs), by name; an optional one is often derived ("15 的平方" →
/// `b: 2`) or a default filled in unasked, and is not checked. A
/// value written in a script the user never wrote in (a city named in English after a question
/// in Chinese) cannot be checked, and counts as given.
pub(crate) fn invented_arguments(
    tool: &ToolDefinition,
    arguments: &Value,
    req: &ModelRequest,
) -> Vec<String> {
    let Some(properties) = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    let said = Said::of(req);
    properties
        .iter()
        .filter(|(name, schema)| is_required(&tool.input_schema, name) && is_free(schema))
        .filter(|(name, _)| match arguments.get(name.as_str()) {
            Some(Value::String(text)) => !said.holds_text(text),
            Some(Value::Number(n)) => n.as_f64().is_some_and(|n| !said.holds_number(n)),
            _ => false,
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// Whether a value of `schema` is taken as given: a string or a number not drawn from a set
/// (`enum`, `const`) or constrained to a pattern or format (a time zone, a date, which the
/// model derives rather than copies).
fn is_free(schema: &Value) -> bool {
    let derived = ["enum", "const", "pattern", "format"]
        .iter()
        .any(|k| schema.get(*k).is_some());
    let kind = schema.get("type").and_then(Value::as_str);
    !derived && matches!(kind, Some("string" | "number" | "integer"))
}

/// What the conversation holds: its text (lowercased), its words, its numbers, and the
/// scripts the user wrote in.
struct Said {
    text: String,
    words: Vec<String>,
    numbers: Vec<f64>,
    user_latin: bool,
    user_cjk: bool,
}

impl Said {
    fn of(req: &ModelRequest) -> Self {
        let mut texts = vec![req.instruction.clone()];
        let (mut user_latin, mut user_cjk) = (false, false);
        for message in &req.messages {
            let text = message.text();
            if message.role == Role::User {
                user_latin |= text.chars().any(|c| c.is_ascii_alphabetic());
                user_cjk |= text.chars().any(is_cjk);
            }
            texts.push(text);
            texts.extend(message.tool_calls().map(|c| c.arguments.clone()));
            texts.extend(message.tool_results().map(|r| r.content.clone()));
        }
        let text = texts.join("\n").to_lowercase();
        let mut numbers: Vec<f64> = texts.iter().flat_map(|t| numbers_of(t)).collect();
        // Numbers spelled in words count from the conversation only: in an instruction they
        // are articles far more often than data ("你是一个助手", "You are a ... one").
        numbers.extend(texts.iter().skip(1).flat_map(|t| spelled_numbers(t)));
        Self {
            words: latin_words(&text),
            text,
            numbers,
            user_latin,
            user_cjk,
        }
    }

    /// Whether `value` was said: one of its words (Latin script) or one of its pairs of
    /// adjacent characters (CJK) for a short value; at least half of them for a longer one (a
    /// text to translate is copied, a poem the model wrote into it is not); or it is in a
    /// script the user never wrote in.
    fn holds_text(&self, value: &str) -> bool {
        let value = value.to_lowercase();
        let words = latin_words(&value);
        let cjk: Vec<char> = value.chars().filter(|c| is_cjk(*c)).collect();
        if words.is_empty() && cjk.is_empty() {
            return true;
        }
        if (!words.is_empty() && !self.user_latin) || (!cjk.is_empty() && !self.user_cjk) {
            return true;
        }
        let pairs: Vec<String> = value
            .chars()
            .collect::<Vec<_>>()
            .windows(2)
            .filter(|pair| pair.iter().all(|c| is_cjk(*c)))
            .map(|pair| pair.iter().collect())
            .collect();
        let mut parts: Vec<bool> = words.iter().map(|w| self.words.contains(w)).collect();
        match cjk.len() {
            0 => {}
            1 => parts.push(self.text.contains(cjk[0])),
            _ => parts.extend(pairs.iter().map(|pair| self.text.contains(pair.as_str()))),
        }
        let said = parts.iter().filter(|said| **said).count();
        if parts.len() <= LONG_VALUE_PARTS {
            said > 0
        } else {
            2 * said >= parts.len()
        }
    }

    fn holds_number(&self, value: f64) -> bool {
        self.numbers
            .iter()
            .any(|n| (n - value).abs() <= 1e-9 * value.abs().max(1.0))
    }
}

/// A text value of more parts (words, pairs of characters) than this must have half of them
/// said, not just one.
const LONG_VALUE_PARTS: usize = 4;

/// Han, kana and hangul characters.
fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30ff}' | '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}'
        | '\u{ac00}'..='\u{d7af}')
}

/// The words of three or more Latin letters or digits in `text` (lowercase text expected).
fn latin_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() || is_cjk(c))
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_owned)
        .collect()
}

/// The numbers `text` spells out in English or Chinese words ("seven", "twenty one", "三",
/// "两", "一百零五").
fn spelled_numbers(text: &str) -> Vec<f64> {
    let mut out = chinese_numbers(text);
    let lower = text.to_lowercase();
    // (the thousands and more, the group below them), and what the last word was.
    let mut run: Option<(f64, f64)> = None;
    let (mut after_scale, mut after_ten) = (false, false);
    for word in lower.split(|c: char| !c.is_ascii_alphabetic()) {
        match english_number_word(word) {
            Some(NumberWord::Unit(n)) => {
                // "twenty one", "hundred and five" go on; "three four" are two numbers.
                if !(after_scale || (after_ten && n < 10.0)) {
                    out.extend(run.take().map(|(total, group)| total + group));
                }
                let (total, group) = run.unwrap_or((0.0, 0.0));
                run = Some((total, group + n));
                (after_scale, after_ten) = (false, n >= 20.0);
            }
            Some(NumberWord::Scale(scale)) => {
                let (total, group) = run.unwrap_or((0.0, 0.0));
                let group = if group == 0.0 { 1.0 } else { group };
                run = Some(if scale >= 1000.0 {
                    (total + group * scale, 0.0)
                } else {
                    (total, group * scale)
                });
                (after_scale, after_ten) = (true, false);
            }
            None if word.is_empty() || (word == "and" && after_scale) => {}
            None => {
                out.extend(run.take().map(|(total, group)| total + group));
                (after_scale, after_ten) = (false, false);
            }
        }
    }
    if let Some((total, group)) = run {
        out.push(total + group);
    }
    out
}

enum NumberWord {
    Unit(f64),
    Scale(f64),
}

fn english_number_word(word: &str) -> Option<NumberWord> {
    const UNITS: [&str; 20] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
    ];
    const TENS: [&str; 8] = [
        "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    ];
    if let Some(n) = UNITS.iter().position(|u| *u == word) {
        return Some(NumberWord::Unit(n as f64));
    }
    if let Some(n) = TENS.iter().position(|t| *t == word) {
        return Some(NumberWord::Unit((n as f64 + 2.0) * 10.0));
    }
    match word {
        "hundred" => Some(NumberWord::Scale(100.0)),
        "thousand" => Some(NumberWord::Scale(1000.0)),
        "million" => Some(NumberWord::Scale(1e6)),
        _ => None,
    }
}

/// The numbers written in Chinese numerals in `text` (each run of numeral characters).
fn chinese_numbers(text: &str) -> Vec<f64> {
    let digit = |c: char| "零〇一二三四五六七八九".chars().position(|d| d == c);
    let digit = |c: char| match c {
        '两' => Some(2),
        '〇' => Some(0),
        c => digit(c).map(|i| if i == 0 { 0 } else { i - 1 }),
    };
    let scale = |c: char| match c {
        '十' => Some(10.0),
        '百' => Some(100.0),
        '千' => Some(1000.0),
        '万' => Some(1e4),
        '亿' => Some(1e8),
        _ => None,
    };
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if digit(chars[i]).is_none() && scale(chars[i]).is_none() {
            i += 1;
            continue;
        }
        // total: the 万 and 亿 parts; section: the part below 万; pending: a digit not yet scaled.
        let (mut total, mut section, mut pending, mut any) = (0.0, 0.0, None::<f64>, false);
        while i < chars.len() {
            let c = chars[i];
            if let Some(d) = digit(c) {
                pending = Some(d as f64);
            } else if let Some(s) = scale(c) {
                if s >= 1e4 {
                    // 三千万: the part before is scaled; 万 alone is ten thousand.
                    let before = section + pending.take().unwrap_or(0.0);
                    let before = if before == 0.0 { 1.0 } else { before };
                    total = if s == 1e4 {
                        total + before * s
                    } else {
                        (total + before) * s
                    };
                    section = 0.0;
                } else {
                    // 十二: 十 alone is ten.
                    section += pending.take().unwrap_or(1.0) * s;
                }
            } else {
                break;
            }
            any = true;
            i += 1;
        }
        if any {
            out.push(total + section + pending.unwrap_or(0.0));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tinyagent::{Message, ModelRequest, Part, Role, ToolCall, ToolResult};

    use super::*;

    fn demo(tool: std::sync::Arc<dyn tinyagent::Tool>) -> ToolDefinition {
        tool.definition()
    }

    fn asked(question: &str) -> ModelRequest {
        ModelRequest::new(vec![Message::user(question)]).instruction("你是一个全能助手。")
    }

    #[test]
    fn a_value_nothing_in_the_conversation_holds_is_invented() {
        let weather = demo(tinyagent_demo::weather_tool());
        let calculator = demo(tinyagent_demo::calculator_tool());
        // The description's example city, for a question about something else.
        let city = json!({"city": "北京"});
        assert_eq!(
            invented_arguments(&weather, &city, &asked("苹果公司的股价是多少？")),
            ["city"]
        );
        assert!(invented_arguments(&weather, &city, &asked("北京天气怎么样？")).is_empty());
        let city = json!({"city": "New York City, NY, USA", "unit": "celsius"});
        assert_eq!(
            invented_arguments(
                &weather,
                &city,
                &asked("What's the price of Bitcoin right now?")
            ),
            ["city"]
        );
        let city = json!({"city": "new york"});
        assert!(
            invented_arguments(&weather, &city, &asked("Weather in New York please")).is_empty()
        );
        // Numbers: the first operand is required, the second is not checked.
        let product = json!({"operation": "multiply", "a": 2, "b": 3});
        assert_eq!(
            invented_arguments(&calculator, &product, &asked("Order a pizza for me.")),
            ["a"]
        );
        let square = json!({"operation": "power", "a": 15, "b": 2});
        assert!(invented_arguments(&calculator, &square, &asked("15 的平方是多少？")).is_empty());
    }

    #[test]
    fn values_said_in_words_other_scripts_or_earlier_turns_are_given() {
        let weather = demo(tinyagent_demo::weather_tool());
        let calculator = demo(tinyagent_demo::calculator_tool());
        let product = json!({"operation": "multiply", "a": 7, "b": 8});
        for question in ["What is seven times eight?", "七乘以八等于多少？"] {
            assert!(
                invented_arguments(&calculator, &product, &asked(question)).is_empty(),
                "{question}"
            );
        }
        // A city named in English after a question in Chinese cannot be checked.
        let london = json!({"city": "London"});
        assert!(invented_arguments(&weather, &london, &asked("伦敦今天天气怎么样？")).is_empty());
        // A result of an earlier call is the conversation's.
        let call = ToolCall::new(
            "c1",
            "calculator",
            r#"{"operation":"multiply","a":7,"b":8}"#,
        );
        let req = ModelRequest::new(vec![
            Message::user("帮我算一下 7 乘以 8 等于多少。"),
            Message::new(Role::Assistant, vec![Part::ToolCall(call)]),
            Message::from_tool_results([ToolResult::ok("c1", "calculator", r#"{"result":56.0}"#)]),
            Message::assistant("7乘以8等于56。"),
            Message::user("再乘以 2 呢？"),
        ]);
        let again = json!({"operation": "multiply", "a": 56, "b": 2});
        assert!(invented_arguments(&calculator, &again, &req).is_empty());
        // A time zone is derived from the question, not copied: not checked.
        let time = demo(tinyagent_demo::time_tool());
        let zone = json!({"timezone": "Asia/Tokyo"});
        assert!(invented_arguments(&time, &zone, &asked("东京现在几点？")).is_empty());
    }

    #[test]
    fn numbers_are_read_from_english_and_chinese_words() {
        let cases: [(&str, &[f64]); 8] = [
            ("seven times eight", &[7.0, 8.0]),
            ("twenty one and three hundred and five", &[21.0, 305.0]),
            ("two thousand five hundred", &[2500.0]),
            ("十二加两百", &[12.0, 200.0]),
            ("一百零五", &[105.0]),
            ("二十", &[20.0]),
            ("一万五千", &[15000.0]),
            ("三千万", &[3e7]),
        ];
        for (text, want) in cases {
            assert_eq!(spelled_numbers(text), want, "{text}");
        }
        assert_eq!(spelled_numbers("一亿三千万"), [1.3e8]);
        assert!(spelled_numbers("no numbers here").is_empty());
    }
}
