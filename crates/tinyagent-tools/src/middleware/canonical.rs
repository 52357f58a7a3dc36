//! [`canonical_json`]: one exact text per JSON value, for cache keys.

/// How deeply [`canonical_json`] follows nested arrays and objects (serde_json's limit).
const MAX_DEPTH: usize = 128;

/// The canonical form of a JSON text, exact: two texts have the same canonical form only when
/// every reader reads them the same way. Object keys are sorted at every depth, insignificant
/// whitespace is dropped, strings are re-escaped one way (`"\u0041"` is `"A"`), and numbers
/// are kept digit for digit as they were written, never rounded through `f64`
/// (`18446744073709551616` and `18446744073709551617`, or `0.1` and `0.10000000000000000555`,
/// stay apart; so do `1` and `1.0`, which a typed tool may read differently). Empty text
/// counts as `{}`.
///
/// Text without one meaning has no canonical form: text that is not JSON, an object with the
/// same key twice (`{"a":1,"a":2}`: which one a reader keeps differs), strings with lone
/// surrogates or raw control characters, nesting deeper than 128 levels.
///
/// ```
/// use tinyagent::tools::canonical_json;
///
/// assert_eq!(canonical_json(r#"{ "b": [ {"y":1,"x":2} ], "a": 1 }"#).unwrap(),
///            r#"{"a":1,"b":[{"x":2,"y":1}]}"#);
/// assert_eq!(canonical_json("").unwrap(), "{}");
/// assert_ne!(canonical_json(r#"{"id":18446744073709551616}"#),
///            canonical_json(r#"{"id":18446744073709551617}"#));
/// assert!(canonical_json(r#"{"a":1,"a":2}"#).is_none());
/// assert!(canonical_json("{oops").is_none());
/// ```
pub fn canonical_json(text: &str) -> Option<String> {
    if crate::arguments::trim_json_whitespace(text).is_empty() {
        return Some("{}".to_owned());
    }
    let mut reader = Reader {
        bytes: text.as_bytes(),
        text,
        at: 0,
    };
    let mut out = String::with_capacity(text.len());
    reader.value(0, &mut out)?;
    reader.skip_whitespace();
    (reader.at == reader.bytes.len()).then_some(out)
}

struct Reader<'a> {
    bytes: &'a [u8],
    text: &'a str,
    at: usize,
}

impl Reader<'_> {
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        self.skip_whitespace();
        (self.bytes.get(self.at) == Some(&byte)).then(|| self.at += 1)
    }

    fn value(&mut self, depth: usize, out: &mut String) -> Option<()> {
        self.skip_whitespace();
        match *self.bytes.get(self.at)? {
            b'{' => self.object(depth + 1, out),
            b'[' => self.array(depth + 1, out),
            b'"' => {
                let s = self.string()?;
                out.push_str(&serde_json::to_string(&s).ok()?);
                Some(())
            }
            b't' => self.literal("true", out),
            b'f' => self.literal("false", out),
            b'n' => self.literal("null", out),
            b'-' | b'0'..=b'9' => self.number(out),
            _ => None,
        }
    }

    fn literal(&mut self, word: &str, out: &mut String) -> Option<()> {
        if self.bytes[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            out.push_str(word);
            Some(())
        } else {
            None
        }
    }

    fn digits(&mut self) -> Option<()> {
        let from = self.at;
        while self.bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        (self.at > from).then_some(())
    }

    /// A number, checked against JSON's grammar and kept as written.
    fn number(&mut self, out: &mut String) -> Option<()> {
        let start = self.at;
        if self.bytes.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        if self.bytes.get(self.at) == Some(&b'0') {
            self.at += 1;
        } else {
            self.digits()?;
        }
        if self.bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            self.digits()?;
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.at) {
            self.at += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.at) {
                self.at += 1;
            }
            self.digits()?;
        }
        out.push_str(&self.text[start..self.at]);
        Some(())
    }

    /// A string token, decoded: escapes resolved, lone surrogates and raw control characters
    /// refused (by serde_json, which reads the token).
    fn string(&mut self) -> Option<String> {
        let start = self.at;
        self.at += 1;
        loop {
            match *self.bytes.get(self.at)? {
                b'"' => break,
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
        self.at += 1;
        serde_json::from_str(self.text.get(start..self.at)?).ok()
    }

    fn array(&mut self, depth: usize, out: &mut String) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.at += 1;
        out.push('[');
        if self.eat(b']').is_none() {
            loop {
                self.value(depth, out)?;
                if self.eat(b']').is_some() {
                    break;
                }
                self.eat(b',')?;
                out.push(',');
            }
        }
        out.push(']');
        Some(())
    }

    fn object(&mut self, depth: usize, out: &mut String) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.at += 1;
        let mut entries: Vec<(String, String)> = Vec::new();
        if self.eat(b'}').is_none() {
            loop {
                self.skip_whitespace();
                if self.bytes.get(self.at) != Some(&b'"') {
                    return None;
                }
                let key = self.string()?;
                self.eat(b':')?;
                let mut value = String::new();
                self.value(depth, &mut value)?;
                entries.push((key, value));
                if self.eat(b'}').is_some() {
                    break;
                }
                self.eat(b',')?;
            }
        }
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        if entries.windows(2).any(|w| w[0].0 == w[1].0) {
            return None;
        }
        out.push('{');
        for (i, (key, value)) in entries.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&serde_json::to_string(key).ok()?);
            out.push(':');
            out.push_str(value);
        }
        out.push('}');
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_stay_exact_and_keys_sorted() {
        for (a, b) in [
            (
                r#"{"id":18446744073709551616}"#,
                r#"{"id":18446744073709551617}"#,
            ),
            (r#"{"x":0.1}"#, r#"{"x":0.10000000000000000555}"#),
            (r#"{"x":1}"#, r#"{"x":1.0}"#),
            (r#"{"x":1e2}"#, r#"{"x":100}"#),
            (r#"{"s":"a"}"#, r#"{"s":"b"}"#),
        ] {
            assert_ne!(
                canonical_json(a).unwrap(),
                canonical_json(b).unwrap(),
                "{a} {b}"
            );
        }
        assert_eq!(
            canonical_json(" { \"b\" : [1 , {\"z\":null,\"a\":true}], \"a\":\"\\u0041\\n\" } ")
                .unwrap(),
            r#"{"a":"A\n","b":[1,{"a":true,"z":null}]}"#
        );
    }

    #[test]
    fn text_without_one_meaning_has_no_form() {
        for bad in [
            r#"{"a":1,"a":2}"#,
            r#"{"a":{"b":1,"b":1}}"#,
            r#"{"a":"\u0041","\u0061":1,"a":3}"#,
            r#"{"a":"\ud800"}"#,
            "{\"a\":\"raw\ncontrol\"}",
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":-}"#,
            r#"{"a":1} x"#,
            r#"{"a":tru}"#,
            r#"{a:1}"#,
            "[1,]",
            "\"unterminated",
        ] {
            assert!(canonical_json(bad).is_none(), "{bad}");
        }
        let deep = format!("{}{}", "[".repeat(129), "]".repeat(129));
        assert!(canonical_json(&deep).is_none());
        let ok = format!("{}{}", "[".repeat(128), "]".repeat(128));
        assert!(canonical_json(&ok).is_some());
    }
}
