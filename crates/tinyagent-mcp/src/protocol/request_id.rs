//! JSON-RPC request ids as text, for spans and call ids.

/// A request id as text: a number's digits, or the string.
pub(crate) fn request_id_text(id: &rmcp::model::RequestId) -> String {
    match id {
        rmcp::model::NumberOrString::Number(n) => n.to_string(),
        rmcp::model::NumberOrString::String(s) => s.to_string(),
    }
}
