//! The page at `/`: one static HTML file, inline CSS and script, over the session API.

/// The page's HTML.
pub(crate) const INDEX_HTML: &str = include_str!("index.html");
