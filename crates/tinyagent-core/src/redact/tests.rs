//! Redaction's tests.
use super::*;

#[test]
fn urls_lose_their_credentials_and_nothing_else() {
    for (text, secret, kept) in [
        (
            "postgres://app:pa55@db:5432/x",
            "pa55",
            "postgres://[REDACTED]@db:5432/x",
        ),
        (
            "redis://:pa55@127.0.0.1:6379/0",
            "pa55",
            "redis://[REDACTED]@127.0.0.1:6379/0",
        ),
        (
            "error sending request for url (http://u:pa55@h/v1/chat?x=1)",
            "pa55",
            "(http://[REDACTED]@h/v1/chat?x=1)",
        ),
        (
            "https://s3.example/o?X-Amz-Signature=abc123&X-Amz-Date=1",
            "abc123",
            "X-Amz-Date=1",
        ),
        (
            "GET https://api.example/x?access_token=t0k&page=2#top and more",
            "t0k",
            "page=2#top and more",
        ),
        (
            "\"http://user:pa55@h:1\"",
            "pa55",
            "\"http://[REDACTED]@h:1\"",
        ),
        (
            "https://ann.lee@corp.example:8443/v1",
            "ann.lee",
            "https://[REDACTED]@corp.example:8443/v1",
        ),
    ] {
        let out = url(text);
        assert!(!out.contains(secret), "{text} -> {out}");
        assert!(out.contains(kept), "{text} -> {out}");
    }
    // The user name goes with the password: a log reader learns neither.
    for text in ["postgres://app:pa55@db/x", "http://user:pa55@h:1/v1"] {
        let out = url(text);
        assert!(
            !out.contains("app") && !out.contains("user"),
            "{text} -> {out}"
        );
    }
    for plain in [
        "http://127.0.0.1:8080/v1",
        "https://example.com/a@b",
        "mailto ann@example.com",
        "https://api.example/search?q=key&page=2",
        "no url here: a=b",
    ] {
        assert_eq!(url(plain), plain);
    }
}

#[test]
fn sensitive_keys() {
    for key in [
        "password",
        "Password",
        "db_password",
        "token",
        "access_token",
        "refreshToken",
        "secret",
        "client-secret",
        "api_key",
        "X-API-KEY",
        "authorization",
        "auth",
        "cookie",
        "pwd",
        "pass",
        "DB_PASS",
        "pin",
        "pin_code",
        "otp",
        "ssh_key",
        "aws_access_key_id",
        "aws_secret_access_key",
        "private_key",
        "session_id",
        "cvv",
    ] {
        assert!(is_sensitive(key, &[]), "{key}");
    }
    for key in [
        "max_tokens",
        "city",
        "author",
        "user",
        "tokens_used",
        "shipping",
        "bypass",
        "spinner",
        "pinned",
        "compass",
        "keyword",
    ] {
        assert!(!is_sensitive(key, &[]), "{key}");
    }
    assert!(is_sensitive("SSN", &[normalize_key("ssn")]));
}

#[test]
fn json_redaction_is_deep_and_keeps_other_values() {
    let out = json(r#"{"a":[{"token":"t1"},{"b":1}],"nested":{"secret":{"x":1}}}"#);
    assert_eq!(
        out,
        r#"{"a":[{"token":"[REDACTED]"},{"b":1}],"nested":{"secret":"[REDACTED]"}}"#
    );
    let out = json(r#"{"header":"Authorization: Bearer abc.def-ghi_123","n":1}"#);
    assert_eq!(
        out,
        r#"{"header":"Authorization: [REDACTED] [REDACTED]","n":1}"#
    );
}

#[test]
fn free_text_redaction() {
    for (text, secret, kept) in [
        ("not json password=1", "=1", "not json password="),
        (
            r#"{"password":"S3CR3T","city":"x""#,
            "S3CR3T",
            "\"city\":\"x\"",
        ),
        (
            r#"input was "{\"password\":\"S3CR3T\",\"a\":1}""#,
            "S3CR3T",
            r#"\"a\":1"#,
        ),
        (
            "curl -H 'Authorization: Bearer eyJabc.def' https://u:p4ss@h.example/x",
            "p4ss",
            "https://[REDACTED]@h.example/x",
        ),
        (
            "https://api.example/v1?api_key=k-123456&page=2",
            "k-123456",
            "page=2",
        ),
        (
            "key sk-abcdefghijklmnop1234 used",
            "sk-abcdefghijklmnop1234",
            "key ",
        ),
        ("AKIAABCDEFGHIJKLMNOP", "AKIAABCDEFGHIJKLMNOP", ""),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----",
            "MIIEabc",
            "BEGIN RSA PRIVATE KEY",
        ),
        ("pin: 1234, otp=987654; city: 北京", "1234", "city: 北京"),
        (
            r#"/password: ["S3CR3T", {"a": "]"}] is not of type "string"; /city: 1"#,
            "S3CR3T",
            "is not of type",
        ),
    ] {
        let out = super::text(text);
        assert!(!out.contains(secret), "{text} -> {out}");
        assert!(out.contains(kept), "{text} -> {out}");
        assert!(out.contains(REDACTED), "{text} -> {out}");
    }
    for harmless in [
        "北京 sunny, 22.5°C",
        "basic arithmetic: 2 + 2 = 4",
        "the token expired; ask again",
        r#"{"city":"北京","max_tokens":20,"author":"ann"}"#,
    ] {
        assert_eq!(text(harmless), harmless);
    }
}
