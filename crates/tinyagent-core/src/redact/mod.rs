//! Redaction of text meant for logs and for people: secrets under sensitive keys and
//! credentials inside values, in JSON and in free text alike ([`text`], [`json`]), and the
//! credentials of URLs ([`url`]).

use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde_json::Value;
use unicode_normalization::UnicodeNormalization;

/// What replaces a redacted value.
pub(crate) const REDACTED: &str = "[REDACTED]";

/// Key fragments whose values are always redacted (compared lower-case, letters and digits
/// only, anywhere in the key).
const SENSITIVE_FRAGMENTS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "secret",
    "apikey",
    "accesskey",
    "privatekey",
    "secretkey",
    "signingkey",
    "encryptionkey",
    "sshkey",
    "authorization",
    "credential",
    "cookie",
    "sessionid",
    "connectionstring",
    "creditcard",
    "cardnumber",
];

/// Words (parts of a key split at punctuation and camelCase) whose values are redacted: too
/// short to look for inside other words (`pin` but not `shipping`, `pass` but not `bypass`).
const SENSITIVE_WORDS: &[&str] = &[
    "pwd", "pass", "pin", "otp", "totp", "auth", "bearer", "jwt", "cvv", "cvc", "ssn", "key",
];

/// Compatibility-normalized (NFKC), lower-case, letters and digits only: `X-Api-Key`,
/// `api_key` and the full-width `ａｐｉ＿ｋｅｙ` all become `apikey`.
#[doc(hidden)]
pub fn normalize_key(key: &str) -> String {
    key.nfkc()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The words of a key (compatibility-normalized first, so full-width letters count as
/// theirs): split at anything not a letter or digit and where a lower-case letter or digit is
/// followed by an upper-case one (`refreshToken`, `DB_PASS`).
fn words(key: &str) -> impl Iterator<Item = String> + '_ {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in key.nfkc() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out.into_iter()
}

/// Whether the values of `key` are secrets: see [`LoggingLayer`](crate::tools::middleware::LoggingLayer) for the list.
pub(crate) fn is_sensitive(key: &str, extra: &[String]) -> bool {
    let normalized = normalize_key(key);
    SENSITIVE_FRAGMENTS.iter().any(|f| normalized.contains(f))
        || normalized.ends_with("token")
        || words(key).any(|w| SENSITIVE_WORDS.contains(&w.as_str()))
        || extra.contains(&normalized)
}

fn redact_value(value: &mut Value, extra: &[String]) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if is_sensitive(key, extra) {
                    *v = Value::String(REDACTED.to_owned());
                } else {
                    redact_value(v, extra);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_value(v, extra)),
        Value::String(s) => {
            if let std::borrow::Cow::Owned(clean) = redact_free_text(s, extra) {
                *s = clean;
            }
        }
        _ => {}
    }
}

/// `Bearer xxx`, `Basic xxx`, `Token xxx` (authorization schemes).
static AUTH_SCHEME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(bearer|basic|token|digest)(\s+)([A-Za-z0-9\-._~+/]{6,}=*)")
        .expect("a valid pattern")
});

/// The userinfo of `scheme://user:password@host`.
static URL_USERINFO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"([A-Za-z][A-Za-z0-9+.\-]*://)[^\s:/?#@"'\\]*:[^\s/?#@"'\\]*@"#)
        .expect("a valid pattern")
});

/// Tokens whose shape gives them away, wherever they are.
static KNOWN_TOKENS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(?:",
        r"sk-[A-Za-z0-9_\-]{16,}",      // OpenAI-style secret keys
        r"|sk-ant-[A-Za-z0-9_\-]{16,}", // Anthropic keys
        r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}", // GitHub tokens
        r"|xox[abprs]-[A-Za-z0-9\-]{10,}", // Slack tokens
        r"|AKIA[0-9A-Z]{16}",           // AWS access key ids
        r"|AIza[0-9A-Za-z_\-]{30,}",    // Google API keys
        r"|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*", // JWTs
        r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}", // Stripe secret and restricted keys
        r"|glpat-[A-Za-z0-9_\-]{20,}",  // GitLab personal access tokens
        r"|hf_[A-Za-z0-9]{30,}",        // Hugging Face tokens
        r"|npm_[A-Za-z0-9]{36}",        // npm tokens
        r"|ya29\.[A-Za-z0-9_\-]{20,}",  // Google OAuth access tokens
        r")",
    ))
    .expect("a valid pattern")
});

/// PEM blocks of private keys (and PGP private key blocks).
static PEM_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"-----BEGIN ([A-Z ]*)PRIVATE KEY( BLOCK)?-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY( BLOCK)?-----|$)")
        .expect("a valid pattern")
});

/// The key of `key: value`, `key=value`, `"key": "value"` and the same with escaped quotes
/// (`\"key\":\"value\"`, as a quoted input inside an error message has them); the value is
/// read by [`value_end`].
static KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:\\?["'])?([\w][\w.\-]*)(?:\\?["'])?\s*[:=：＝]\s*"#).expect("a valid pattern")
});

/// Where the value starting at the beginning of `rest` ends, and how it is quoted.
fn value_end(rest: &str) -> (usize, &'static str) {
    let bytes = rest.as_bytes();
    if let Some(inner) = rest.strip_prefix("\\\"") {
        // An escaped quote inside a quoted string: up to the next escaped quote.
        let end = inner.find("\\\"").map_or(rest.len(), |i| i + 4);
        return (end, "\\\"");
    }
    match bytes.first() {
        Some(b'"') => {
            let mut i = 1;
            while i < bytes.len() {
                match bytes[i] {
                    b'\\' => i += 2,
                    b'"' => return (i + 1, "\""),
                    _ => i += 1,
                }
            }
            (rest.len(), "\"")
        }
        Some(b'\'') => (rest[1..].find('\'').map_or(rest.len(), |i| i + 2), "'"),
        Some(b'[' | b'{') => {
            // A structured value: up to its closing bracket (brackets inside strings count
            // too, which can only make the redaction longer).
            let mut depth = 0usize;
            for (i, b) in bytes.iter().enumerate() {
                match b {
                    b'[' | b'{' => depth += 1,
                    b']' | b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            return (i + 1, "");
                        }
                    }
                    _ => {}
                }
            }
            (rest.len(), "")
        }
        _ => (
            rest.find(|c: char| {
                c.is_whitespace()
                    || matches!(c, ',' | ';' | '&' | '"' | '\'' | '}' | ']' | ')' | '\\')
            })
            .unwrap_or(rest.len()),
            "",
        ),
    }
}

/// Replaces the values of sensitive keys in free text.
fn redact_key_values(text: &str, extra: &[String]) -> Option<String> {
    let mut out = String::new();
    let mut copied = 0;
    let mut at = 0;
    while let Some(c) = KEY.captures_at(text, at) {
        let whole = c.get(0).expect("a match");
        if !is_sensitive(&c[1], extra) {
            // Go on right after the key: its value may hold a `key=value` of its own
            // (`https://host/?api_key=…`).
            at = c.get(1).expect("a key").end();
            continue;
        }
        let (len, quote) = value_end(&text[whole.end()..]);
        let value = &text[whole.end()..whole.end() + len];
        if value.is_empty() || value.contains(REDACTED) {
            at = whole.end();
            continue;
        }
        out.push_str(&text[copied..whole.end()]);
        out.push_str(quote);
        out.push_str(REDACTED);
        out.push_str(quote);
        copied = whole.end() + len;
        at = copied;
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// Redacts credentials in free text: values of sensitive keys (`password=…`, `"token": "…"`,
/// `?api_key=…`), authorization schemes (`Bearer …`), passwords in URLs and tokens whose shape
/// gives them away.
fn redact_free_text<'a>(text: &'a str, extra: &[String]) -> std::borrow::Cow<'a, str> {
    let mut out = std::borrow::Cow::Borrowed(text);
    let replace = |out: &mut std::borrow::Cow<'a, str>,
                   re: &Regex,
                   f: &dyn Fn(&Captures) -> String| {
        if re.is_match(out) {
            *out = std::borrow::Cow::Owned(re.replace_all(out, |c: &Captures| f(c)).into_owned());
        }
    };
    replace(&mut out, &PEM_KEY, &|c| {
        format!("-----BEGIN {}PRIVATE KEY----- {REDACTED}", &c[1])
    });
    replace(&mut out, &AUTH_SCHEME, &|c| {
        let credential = &c[3];
        // `Bearer` is hardly ever prose; `basic`, `token` and `digest` are, so their
        // credential must look like one.
        let looks_secret = c[1].eq_ignore_ascii_case("bearer")
            || credential.len() >= 20
            || credential.contains(|ch: char| ch.is_ascii_digit() || ch == '=');
        if looks_secret {
            format!("{}{}{REDACTED}", &c[1], &c[2])
        } else {
            c[0].to_owned()
        }
    });
    replace(&mut out, &URL_USERINFO, &|c| {
        format!("{}{REDACTED}@", &c[1])
    });
    replace(&mut out, &KNOWN_TOKENS, &|_| REDACTED.to_owned());
    if let Some(clean) = redact_key_values(&out, extra) {
        out = std::borrow::Cow::Owned(clean);
    }
    out
}

/// Redacts a text for logs, whatever it is: JSON gets the values of sensitive keys replaced at
/// any depth and its strings scanned like free text; anything else (truncated JSON, JSON
/// nested too deeply, plain text, an error message quoting the input) is scanned for
/// `key: value` pairs with sensitive keys, authorization schemes, passwords in URLs and
/// well-known token shapes.
#[doc(hidden)]
pub fn redact_with(text: &str, extra: &[String]) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(mut value) if value.is_object() || value.is_array() => {
            redact_value(&mut value, extra);
            value.to_string()
        }
        _ => redact_free_text(text, extra).into_owned(),
    }
}

/// An error message (or any text) as it may appear in a log line: redacted, and cut to 2048
/// characters.
#[doc(hidden)]
pub fn for_log(text: &str) -> String {
    let cut = crate::util::cut(text, 2048);
    redact_with(&cut, &[])
}

/// Redacts a text for logs: the values of sensitive keys, in JSON at any depth and in free
/// text (`password=…`, `"token": "…"`, `?api_key=…`), and credentials inside values
/// (`Authorization: Bearer …`, `https://user:password@host`, well-known token shapes such as
/// `sk-…`, `ghp_…`, `AKIA…`, JWTs, PEM private keys) are replaced by `[REDACTED]`.
///
/// This is what `LoggingLayer` applies to everything it logs: arguments,
/// results and error messages. Keys are those listed on `LoggingLayer`.
///
/// ```
/// use tinyagent::redact;
///
/// assert_eq!(redact::text(r#"{"user":"ann","pwd":"hunter2"}"#), r#"{"user":"ann","pwd":"[REDACTED]"}"#);
/// let line = redact::text("GET https://ann:hunter2@example.com/x?api_key=k123&q=1 with Bearer abcdef123456");
/// assert!(!line.contains("hunter2") && !line.contains("k123") && !line.contains("abcdef123456"), "{line}");
/// assert!(line.contains("q=1"), "{line}");
/// // Truncated JSON is still redacted.
/// assert!(!redact::text(r#"{"password": "S3CR3T", "city": "Bei"#).contains("S3CR3T"));
/// ```
pub fn text(text: &str) -> String {
    redact_with(text, &[])
}

/// Replaces the values of sensitive keys in a JSON text with `[REDACTED]`, at any depth, with
/// the built-in list of keys described on `LoggingLayer`, and credentials inside
/// its strings; text that is not JSON is redacted as free text (see [`text`]).
///
/// ```
/// use tinyagent::redact;
///
/// let out = redact::json(r#"{"user":"ann","password":"hunter2","auth":{"API-Key":"k"}}"#);
/// assert_eq!(out, r#"{"user":"ann","password":"[REDACTED]","auth":"[REDACTED]"}"#);
/// ```
pub fn json(text: &str) -> String {
    redact_with(text, &[])
}

/// A URL anywhere in a text: a scheme, `://`, and everything up to whitespace, a quote or a
/// bracket that cannot be part of it.
static URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s"'<>`()\[\]{}]+"#).expect("a valid pattern")
});

/// Query parameters that carry credentials in URLs beyond the sensitive keys (signed URLs).
const SENSITIVE_QUERY: &[&str] = &[
    "sig",
    "signature",
    "xamzsignature",
    "xamzcredential",
    "xamzsecuritytoken",
    "xgoogsignature",
    "xgoogcredential",
];

fn redact_one_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let mut out = String::with_capacity(url.len() + REDACTED.len());
    out.push_str(scheme);
    out.push_str("://");
    match authority.rsplit_once('@') {
        // `user:password@` or `token@`: the whole userinfo goes (a user name alone is often
        // a token, and a user name is no business of a log reader's either).
        Some((_userinfo, host)) => {
            out.push_str(REDACTED);
            out.push('@');
            out.push_str(host);
        }
        None => out.push_str(authority),
    }
    let Some((path, query)) = tail.split_once('?') else {
        out.push_str(tail);
        return out;
    };
    out.push_str(path);
    out.push('?');
    let (query, fragment) = match query.split_once('#') {
        Some((q, f)) => (q, Some(f)),
        None => (query, None),
    };
    for (i, pair) in query.split('&').enumerate() {
        if i > 0 {
            out.push('&');
        }
        match pair.split_once('=') {
            Some((key, value))
                if !value.is_empty()
                    && (is_sensitive(key, &[])
                        || SENSITIVE_QUERY.contains(&normalize_key(key).as_str())) =>
            {
                out.push_str(key);
                out.push('=');
                out.push_str(REDACTED);
            }
            _ => out.push_str(pair),
        }
    }
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

/// Redacts the credentials of every URL in `text`, for display: the whole userinfo of
/// `scheme://user:password@host` (`scheme://[REDACTED]@host`: the user name goes with the
/// password, and a user name alone, often a token, goes too) and the values of
/// query parameters that carry keys (`?key=…`, `api_key=…`, `access_token=…`, signed-URL
/// signatures). Everything else, the text around the URLs included, is kept as it is.
///
/// Every place this project shows a URL it was given (error messages, logs, events, the
/// command line's `--json` output, the server's pages) shows it through this function.
///
/// ```
/// use tinyagent::redact;
///
/// assert_eq!(
///     redact::url("could not connect to http://ann:hunter2@127.0.0.1:1/v1"),
///     "could not connect to http://[REDACTED]@127.0.0.1:1/v1"
/// );
/// assert_eq!(
///     redact::url("https://g.example/v1beta/models?key=AIzaK3Y&alt=sse"),
///     "https://g.example/v1beta/models?key=[REDACTED]&alt=sse"
/// );
/// assert_eq!(redact::url("https://ghp_T0K3N@git.example/x"), "https://[REDACTED]@git.example/x");
/// assert_eq!(redact::url("http://127.0.0.1:8080/v1"), "http://127.0.0.1:8080/v1");
/// ```
pub fn url(text: &str) -> String {
    if !text.contains("://") {
        return text.to_owned();
    }
    URL.replace_all(text, |c: &Captures| redact_one_url(&c[0]))
        .into_owned()
}

#[cfg(test)]
mod tests;
