//! The check behind the `mcp_content` fuzz target in `fuzz/`, here so that the stable test
//! suite can replay the inputs the fuzzer found (`fuzz/regressions/`). Not part of the API.

use rmcp::model::{CallToolResult, ContentBlock};

/// A `tools/call` result as a server may send it, turned into the text a model reads: no
/// panic, and every text block's text is in the output.
pub fn content(data: &[u8]) {
    let Ok(result) = serde_json::from_slice::<CallToolResult>(data) else {
        return;
    };
    let text = crate::result_text(&result);
    for block in &result.content {
        if let ContentBlock::Text(t) = block {
            assert!(text.contains(&t.text), "a text block is missing");
        }
    }
}
