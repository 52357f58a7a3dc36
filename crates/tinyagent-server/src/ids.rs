//! What a session id on this server may be: the store's rules (1 to 256 bytes, no control
//! characters), no invisible format characters, and short enough for a tenant's store key.

use tinyagent::store::{MAX_SESSION_ID_LEN, StoreError, check_session_id};
use unicode_general_category::{GeneralCategory, get_general_category};

use crate::error::ApiError;

/// The longest session id a client may use, in bytes: the store's limit, less the tenant's
/// prefix of its store key ([`crate::namespace`]).
pub(crate) const MAX_ID_LEN: usize = MAX_SESSION_ID_LEN - crate::namespace::PREFIX_LEN;

/// Whether `c` is a format character (Unicode category Cf): invisible, it makes two ids look
/// alike (`U+200B ZERO WIDTH SPACE`), or reorders how text around it shows (`U+202E
/// RIGHT-TO-LEFT OVERRIDE`, the isolates `U+2066..U+2069`).
pub(crate) fn is_format(c: char) -> bool {
    // No ASCII character is in category Cf: most ids are checked without a table lookup.
    !c.is_ascii() && get_general_category(c) == GeneralCategory::Format
}

/// The name of a format character people meet, for error messages.
fn format_name(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{00AD}' => "SOFT HYPHEN",
        '\u{200B}' => "ZERO WIDTH SPACE",
        '\u{200C}' => "ZERO WIDTH NON-JOINER",
        '\u{200D}' => "ZERO WIDTH JOINER",
        '\u{200E}' => "LEFT-TO-RIGHT MARK",
        '\u{200F}' => "RIGHT-TO-LEFT MARK",
        '\u{202A}' => "LEFT-TO-RIGHT EMBEDDING",
        '\u{202B}' => "RIGHT-TO-LEFT EMBEDDING",
        '\u{202C}' => "POP DIRECTIONAL FORMATTING",
        '\u{202D}' => "LEFT-TO-RIGHT OVERRIDE",
        '\u{202E}' => "RIGHT-TO-LEFT OVERRIDE",
        '\u{2060}' => "WORD JOINER",
        '\u{2066}' => "LEFT-TO-RIGHT ISOLATE",
        '\u{2067}' => "RIGHT-TO-LEFT ISOLATE",
        '\u{2068}' => "FIRST STRONG ISOLATE",
        '\u{2069}' => "POP DIRECTIONAL ISOLATE",
        '\u{FEFF}' => "ZERO WIDTH NO-BREAK SPACE",
        _ => return None,
    })
}

/// Checks a session id a client sent, as the store sees it: the store's rules, at most
/// [`MAX_ID_LEN`] bytes, no format characters.
pub(crate) fn check_id(id: &str) -> Result<(), StoreError> {
    check_session_id(id)?;
    let reason = if id.len() > MAX_ID_LEN {
        format!(
            "it is {} bytes long; at most {MAX_ID_LEN} are allowed",
            id.len()
        )
    } else if let Some((at, c)) = id.char_indices().find(|(_, c)| is_format(*c)) {
        let name = format_name(c)
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        format!(
            "it holds U+{:04X}{name} at byte {at}, an invisible format character (Unicode \
             category Cf) that makes ids look alike, or reorders them, in logs and on the page",
            u32::from(c)
        )
    } else {
        return Ok(());
    };
    Err(StoreError::InvalidInput {
        what: "session id",
        reason,
    })
}

/// [`check_id`], as an answer: `400 invalid_session_id`, naming the problem.
pub(crate) fn checked(id: &str) -> Result<(), ApiError> {
    check_id(id).map_err(|err| ApiError::from(err).param("id").code("invalid_session_id"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_characters_are_refused_by_name() {
        for (id, named) in [
            ("chat\u{202E}1", "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
            ("chat\u{200B}1", "U+200B (ZERO WIDTH SPACE)"),
            ("\u{2066}chat", "U+2066 (LEFT-TO-RIGHT ISOLATE)"),
            ("\u{FEFF}chat", "U+FEFF (ZERO WIDTH NO-BREAK SPACE)"),
            ("chat\u{E0001}", "U+E0001"),
        ] {
            let err = check_id(id).unwrap_err().to_string();
            assert!(err.contains(named), "{id:?}: {err}");
        }
        for fine in ["chat-1", "北京", "ses_ünïcödé", "a b", "emoji🙂"] {
            assert!(check_id(fine).is_ok(), "{fine}");
        }
        assert!(check_id(&"a".repeat(MAX_ID_LEN)).is_ok());
        let long = check_id(&"a".repeat(MAX_ID_LEN + 1))
            .unwrap_err()
            .to_string();
        assert!(long.contains(&format!("at most {MAX_ID_LEN}")), "{long}");
        assert!(check_id("").is_err());
        assert!(check_id("a\nb").is_err());
    }
}
