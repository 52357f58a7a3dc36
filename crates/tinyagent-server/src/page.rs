//! The page at `/`: one static HTML file, inline CSS and script, over the session API; and
//! the headers that keep it from being framed or turned against its own origin.

use std::sync::LazyLock;

use base64::Engine;
use sha2::{Digest, Sha256};

/// The page's HTML.
pub(crate) const INDEX_HTML: &str = include_str!("index.html");

/// The page's `Content-Security-Policy`: nothing but its own inline script and style (each
/// allowed by its SHA-256, never `'unsafe-inline'`), calls to its own origin, and no page may
/// frame it (`frame-ancestors 'none'`: another site cannot lure a click on Approve).
pub(crate) static PAGE_CSP: LazyLock<String> = LazyLock::new(|| {
    format!(
        "default-src 'none'; script-src {}; style-src {}; connect-src 'self'; img-src 'self'; \
         base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        hash_of(INDEX_HTML, "script"),
        hash_of(INDEX_HTML, "style"),
    )
});

/// The `Content-Security-Policy` of every other answer (JSON, event streams): nothing runs,
/// nothing frames it.
pub(crate) const API_CSP: &str = "default-src 'none'; frame-ancestors 'none'";

/// The CSP source of the inline `<tag>` element of `html`: `'sha256-…'` of its text.
fn hash_of(html: &str, tag: &str) -> String {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let text = html
        .split_once(&open)
        .and_then(|(_, rest)| rest.split_once(&close))
        .map_or("", |(text, _)| text);
    let digest = Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_one_inline_script_and_style_and_no_inline_handlers() {
        // The policy allows one script and one style by hash: a second one, an inline
        // handler or a style attribute would be refused by the browser.
        assert_eq!(INDEX_HTML.matches("<script").count(), 1);
        assert_eq!(INDEX_HTML.matches("<style").count(), 1);
        for attribute in [
            " onclick=",
            " onload=",
            " onsubmit=",
            " style=",
            "javascript:",
        ] {
            assert!(!INDEX_HTML.contains(attribute), "{attribute}");
        }
        let csp = &*PAGE_CSP;
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert!(!csp.contains("unsafe"), "{csp}");
        assert_eq!(csp.matches("'sha256-").count(), 2, "{csp}");
    }
}
