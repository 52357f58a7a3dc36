//! The checks behind the fuzz targets in `fuzz/` (the SSE stream and the response body), here
//! so that the stable test suite can replay the inputs the fuzzer found
//! (`fuzz/regressions/`). Not part of the API: each function takes arbitrary bytes and panics
//! when an invariant breaks.

use eventsource_stream::Eventsource;
use futures::{FutureExt, StreamExt, stream};
use serde_json::json;
use tinyagent::{
    ModelError, ModelResponse, Part,
    model::{ModelEvent, ToolDefinition},
};

use crate::stream::Assembler;
use crate::wire;
use tinyagent_http::{strip_bom, without_bom};

/// The longest error message accepted, whatever the server sent.
const MAX_MESSAGE: usize = 8 * 1024;

fn offered() -> Vec<ToolDefinition> {
    ["get_weather", "calculator"]
        .into_iter()
        .map(|name| ToolDefinition::new(name, "", json!({"type": "object"})))
        .collect()
}

fn check_error(err: &ModelError) {
    let text = err.to_string();
    assert!(
        text.len() <= MAX_MESSAGE,
        "an error of {} bytes",
        text.len()
    );
}

fn check_response(response: &ModelResponse) {
    for part in &response.message.parts {
        if let Part::ToolCall(call) = part {
            assert!(!call.name.is_empty(), "a tool call without a name");
            assert!(!call.id.is_empty(), "a tool call without an id");
        }
    }
}

/// A streamed body, cut into two chunks at the position the first byte gives, read the way
/// the provider reads a response: byte order mark dropped, server-sent events parsed, each
/// `data` payload assembled, `[DONE]` or the end of the stream closing it. No panic; errors
/// stay bounded; a finished response has named tool calls.
pub fn sse(data: &[u8]) {
    let Some((&cut, body)) = data.split_first() else {
        return;
    };
    let cut = usize::from(cut).min(body.len());
    let chunks = [
        bytes::Bytes::copy_from_slice(&body[..cut]),
        bytes::Bytes::copy_from_slice(&body[cut..]),
    ];
    let chunks = stream::iter(chunks.map(Ok::<_, std::convert::Infallible>));
    let mut events = without_bom(chunks).eventsource();
    let tools = offered();
    let mut assembler = Assembler::default();
    let mut text = String::new();
    let result = loop {
        let next = events
            .next()
            .now_or_never()
            .expect("an in-memory stream is always ready");
        match next {
            Some(Ok(event)) => {
                let data = event.data.trim();
                if data.is_empty() {
                    continue;
                }
                if data == "[DONE]" {
                    break std::mem::take(&mut assembler).finish();
                }
                let mut out = Vec::new();
                let pushed = assembler.push_data(data, &tools, &mut out);
                for event in out {
                    if let ModelEvent::TextDelta(delta) = event {
                        text.push_str(&delta);
                    }
                }
                if let Err(err) = pushed {
                    break Err(err);
                }
            }
            Some(Err(_)) if assembler.has_finished() => {
                break std::mem::take(&mut assembler).finish();
            }
            Some(Err(err)) => {
                break Err(ModelError::invalid_response(format!(
                    "the event stream could not be read: {err}"
                )));
            }
            None if assembler.has_finished() => break std::mem::take(&mut assembler).finish(),
            None => break Err(assembler.truncation_error("ended")),
        }
    };
    match result {
        Ok(response) => check_response(&response),
        Err(err) => check_error(&err),
    }
}

/// A whole (non-streamed) response body: no panic; errors stay bounded; tool calls are named.
pub fn body(data: &[u8]) {
    let body = strip_bom(bytes::Bytes::copy_from_slice(data));
    match wire::parse_response(&body, &offered()) {
        Ok(response) => check_response(&response),
        Err(err) => check_error(&err),
    }
}
