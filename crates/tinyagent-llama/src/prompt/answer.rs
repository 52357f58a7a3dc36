//! Checks on a free-text answer: whether it quotes the tool results, repeats the instruction,
//! follows the question's language; what can be salvaged from broken output.

use serde_json::Value;
use tinyagent::model::ToolDefinition;
use tinyagent::{Message, ModelRequest, Role};

/// The tool results given since the user's last message.
pub(crate) fn recent_results(req: &ModelRequest) -> Vec<String> {
    recent_outputs(req, false)
}

/// The failed tool results given since the user's last message.
pub(crate) fn recent_errors(req: &ModelRequest) -> Vec<String> {
    recent_outputs(req, true)
}

fn recent_outputs(req: &ModelRequest, failed: bool) -> Vec<String> {
    req.messages
        .iter()
        .rev()
        .take_while(|m| m.role != Role::User)
        .flat_map(|m| {
            m.tool_results()
                .filter(|r| r.is_error == failed)
                .map(|r| r.content.clone())
        })
        .collect()
}

/// Whether `answer` states a number written nowhere in the request: not in the instruction,
/// the messages (text, tool calls, tool results and errors) or the tool definitions. A small
/// model that cannot read a value in a tool's result, or whose tool failed, tends to invent
/// one ("the temperature in Tokyo is 23 degrees"); such an answer is not given.
pub(crate) fn invents_numbers(answer: &str, req: &ModelRequest) -> bool {
    let mut known: Vec<f64> = numbers_of(&req.instruction);
    for message in &req.messages {
        known.extend(numbers_of(&message.text()));
        for result in message.tool_results() {
            known.extend(numbers_of(&result.content));
        }
        for call in message.tool_calls() {
            known.extend(numbers_of(&call.arguments));
        }
    }
    for tool in req.tools.iter() {
        known.extend(numbers_of(&tool.description));
    }
    numbers_of(answer).iter().any(|n| {
        !known
            .iter()
            .any(|k| (k - n).abs() <= 1e-9 * k.abs().max(1.0))
    })
}

/// The decimal numbers written in `text` (`7`, `-3`, `56.00`, `3.5`), in order.
pub(crate) fn numbers_of(text: &str) -> Vec<f64> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let negative = i > 0 && bytes[i - 1] == b'-' && (i < 2 || !bytes[i - 2].is_ascii_digit());
        let start = if negative { i - 1 } else { i };
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
            i += 1;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
        }
        if let Ok(n) = text[start..i].parse::<f64>() {
            if n.is_finite() {
                out.push(n);
            }
        }
    }
    out
}

/// `answer` without copies of the `echoes` the model wrote before it (small models sometimes
/// start an answer by repeating their instruction, or the question); `None` when it has none,
/// or when the copies are all there is. A copy counts only as a whole sentence (it ends with
/// sentence punctuation, or a line break follows it): an answer that restates a question
/// ("2 + 3" → "2 + 3 = 5") keeps it.
pub(crate) fn without_echoes(answer: &str, echoes: &[&str]) -> Option<String> {
    const SENTENCE_END: [char; 8] = ['?', '？', '.', '。', '!', '！', ':', '：'];
    let mut rest = answer.trim_start();
    let mut found = false;
    while let Some(after) = echoes
        .iter()
        .map(|e| e.trim())
        .filter(|e| !e.is_empty())
        .find_map(|e| {
            let after = rest.strip_prefix(e)?;
            (e.ends_with(SENTENCE_END) || after.starts_with(['\n', '\r'])).then_some(after)
        })
    {
        rest = after.trim_start();
        found = true;
    }
    (found && !rest.is_empty()).then(|| rest.to_owned())
}

/// Whether `answer` quotes at least one value of the tool `results` (a number, or a string of
/// two characters or more), or the results hold no such value.
pub(crate) fn quotes_results(answer: &str, results: &[String]) -> bool {
    fn values(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Number(n) => {
                out.push(n.to_string());
                if let Some(f) = n.as_f64() {
                    if f.fract() == 0.0 && f.abs() < 1e15 {
                        out.push(format!("{}", f as i64));
                    }
                }
            }
            Value::String(s) if s.chars().count() >= 2 => out.push(s.clone()),
            Value::Array(items) => items.iter().for_each(|v| values(v, out)),
            Value::Object(map) => map.values().for_each(|v| values(v, out)),
            _ => {}
        }
    }
    let mut wanted = Vec::new();
    for result in results {
        match serde_json::from_str::<Value>(result) {
            Ok(value) => values(&value, &mut wanted),
            Err(_) => values(&Value::String(result.trim().to_owned()), &mut wanted),
        }
    }
    wanted.is_empty() || wanted.iter().any(|w| answer.contains(w.as_str()))
}

/// The text of the user's last message.
pub(crate) fn last_user_text(req: &ModelRequest) -> Option<String> {
    req.messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(Message::text)
}

/// The language a question is written in, told by its script (the answer follows it): the
/// scripts whose language is unambiguous, or `None` (the model's default, usually English).
pub(crate) fn language_of(text: &str) -> Option<&'static str> {
    let (mut han, mut kana, mut hangul, mut cyrillic, mut arabic, mut letters) = (0, 0, 0, 0, 0, 0);
    for c in text.chars() {
        match c {
            '\u{3040}'..='\u{30ff}' => kana += 1,
            '\u{ac00}'..='\u{d7af}' | '\u{1100}'..='\u{11ff}' => hangul += 1,
            '\u{4e00}'..='\u{9fff}' | '\u{3400}'..='\u{4dbf}' => han += 1,
            '\u{0400}'..='\u{04ff}' => cyrillic += 1,
            '\u{0600}'..='\u{06ff}' => arabic += 1,
            c if c.is_alphabetic() => letters += 1,
            _ => {}
        }
    }
    if kana > 0 {
        Some("Japanese")
    } else if hangul > 0 {
        Some("Korean")
    } else if han > 0 {
        Some("Chinese (中文)")
    } else if cyrillic > letters {
        Some("Russian")
    } else if arabic > letters {
        Some("Arabic")
    } else {
        None
    }
}

/// What can be saved of a JSON output cut off by the token limit: the start of an answer,
/// written `{"answer": "…` or as a call to the listed answer option,
/// `{"name": "<answer_name>", "arguments": {"text": "…`.
pub(crate) fn salvage_answer(text: &str, answer_name: &str) -> Option<String> {
    let rest = text.trim_start().strip_prefix('{')?.trim_start();
    let rest = match rest.strip_prefix("\"answer\"") {
        Some(rest) => rest,
        None => {
            let name = serde_json::to_string(answer_name).ok()?;
            let rest = rest.strip_prefix("\"name\"")?.trim_start();
            let rest = rest.strip_prefix(':')?.trim_start();
            let rest = rest.strip_prefix(name.as_str())?.trim_start();
            let rest = rest.strip_prefix(',')?.trim_start();
            let rest = rest.strip_prefix("\"arguments\"")?.trim_start();
            let rest = rest.strip_prefix(':')?.trim_start();
            let rest = rest.strip_prefix('{')?.trim_start();
            rest.strip_prefix("\"text\"")?
        }
    };
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    // Close the string at the longest prefix that still parses.
    for end in (0..=rest.len()).rev() {
        if !rest.is_char_boundary(end) {
            continue;
        }
        if let Ok(Value::String(s)) = serde_json::from_str(&format!("\"{}\"", &rest[..end])) {
            return Some(s);
        }
    }
    None
}

/// The name the option of answering directly goes by in the tool list: `answer`, or, when a
/// tool has that name, the first of a few others that none has.
pub(crate) fn answer_name(tools: &[ToolDefinition]) -> &'static str {
    [
        "answer",
        "reply",
        "answer_directly",
        "reply_directly",
        "direct_answer",
    ]
    .into_iter()
    .find(|name| tools.iter().all(|t| t.name != *name))
    .unwrap_or("__answer")
}
