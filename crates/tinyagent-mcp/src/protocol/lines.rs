//! MCP over standard input and output, as newline-delimited JSON-RPC: what both ends share.
//!
//! rmcp's own stdio transports skip a line that is not a JSON-RPC message without a word.
//! Ours do better: the server answers such a line with a JSON-RPC parse error (or an
//! invalid-request error), and the client notices a server that prints something other than
//! MCP on its standard output and can say so instead of waiting for a handshake that never
//! comes.

/// The longest line either end reads: 64 MiB.
pub(crate) const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// The longest piece of a bad line quoted in an error message.
const QUOTE_CHARS: usize = 120;

/// `line` shortened for an error message, on one line.
pub(crate) fn quote(line: &str) -> String {
    let one_line: String = line
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut chars = one_line.chars();
    let short: String = chars.by_ref().take(QUOTE_CHARS).collect();
    if chars.next().is_some() {
        format!("{short}…")
    } else {
        short
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_short_and_on_one_line() {
        assert_eq!(quote("a\nb"), "a b");
        let long = quote(&"x".repeat(500));
        assert_eq!(long.chars().count(), QUOTE_CHARS + 1);
        assert!(long.ends_with('…'));
    }
}
