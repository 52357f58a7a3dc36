//! What odd servers send: byte order marks, cut-off tool calls, streams lost after the reply
//! finished, duplicate call ids, streamed refusals; and what Debug output must not show.

use std::time::Duration;

use futures::StreamExt;
use tinyagent::{
    Message, Model, ModelRequest, ModelResponse,
    model::{FinishReason, ModelErrorKind, ModelEvent},
};
use tinyagent_openai::HttpConfig;
use tinyagent_openai::{OpenAiConfig, OpenAiModel};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn config(base: &str) -> OpenAiConfig {
    OpenAiConfig::new("m")
        .base_url(format!("{base}/v1"))
        .api_key("sk-test")
        .backoff(Duration::from_millis(1), Duration::from_millis(5))
        .silence_timeout(Duration::from_secs(3))
}

async fn serve(body: &str, content_type: &str) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body.to_owned(), content_type))
        .mount(&server)
        .await;
    server
}

/// Streams one request and returns the final response, or the error.
async fn streamed(model: &OpenAiModel) -> Result<ModelResponse, String> {
    let req = ModelRequest::new(vec![Message::user("hi")]);
    let mut events = model.stream(&req);
    while let Some(event) = events.next().await {
        match event {
            Ok(ModelEvent::Done(response)) => return Ok(response),
            Ok(_) => {}
            Err(err) => return Err(err.to_string()),
        }
    }
    Err("the stream ended without Done".into())
}

const TEXT_CHUNK: &str =
    r#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}"#;

#[tokio::test]
async fn a_byte_order_mark_before_events_or_json_is_skipped() {
    let sse = format!("\u{feff}data: {TEXT_CHUNK}\n\ndata: [DONE]\n\n");
    let server = serve(&sse, "text/event-stream").await;
    let model = OpenAiModel::new(config(&server.uri())).unwrap();
    assert_eq!(streamed(&model).await.unwrap().message.text(), "hi");

    let json =
        "\u{feff}{\"choices\":[{\"message\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}";
    let server = serve(json, "application/json").await;
    let model = OpenAiModel::new(config(&server.uri())).unwrap();
    assert_eq!(streamed(&model).await.unwrap().message.text(), "hi");
}

#[tokio::test]
async fn a_tool_call_cut_off_by_the_token_limit_says_length() {
    let json = r#"{"choices":[{"message":{"content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"city\":\"Bei"}}]},"finish_reason":"length"}]}"#;
    let server = serve(json, "application/json").await;
    let model = OpenAiModel::new(config(&server.uri())).unwrap();
    let req = ModelRequest::new(vec![Message::user("hi")]);
    assert_eq!(
        model.generate(&req).await.unwrap().finish_reason,
        FinishReason::Length
    );

    let sse = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n",
        "data: [DONE]\n\n"
    );
    let server = serve(sse, "text/event-stream").await;
    let model = OpenAiModel::new(config(&server.uri())).unwrap();
    assert_eq!(
        streamed(&model).await.unwrap().finish_reason,
        FinishReason::Length
    );
}

#[tokio::test]
async fn two_streamed_calls_with_one_id_stay_two_calls() {
    let sse = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_0\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}},{\"index\":1,\"id\":\"call_0\",\"function\":{\"name\":\"g\",\"arguments\":\"{\\\"b\\\":2}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: [DONE]\n\n"
    );
    let server = serve(sse, "text/event-stream").await;
    let model = OpenAiModel::new(config(&server.uri())).unwrap();
    let response = streamed(&model).await.unwrap();
    let calls: Vec<(String, String)> = response
        .message
        .tool_calls()
        .map(|c| (c.name.clone(), c.arguments.clone()))
        .collect();
    assert_eq!(
        calls,
        [
            ("f".into(), r#"{"a":1}"#.into()),
            ("g".into(), r#"{"b":2}"#.into())
        ]
    );
}

#[tokio::test]
async fn a_streamed_refusal_is_the_replys_text() {
    let sse = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"refusal\":\"I cannot help with that.\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n"
    );
    let server = serve(sse, "text/event-stream").await;
    let model = OpenAiModel::new(config(&server.uri())).unwrap();
    assert_eq!(
        streamed(&model).await.unwrap().message.text(),
        "I cannot help with that."
    );
}

#[tokio::test]
async fn a_stream_lost_after_the_reply_finished_still_gives_the_reply() {
    // The event with the finish reason, then the connection drops mid-body.
    let event = format!("data: {TEXT_CHUNK}\n\n");
    let mut reply = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
    reply.extend_from_slice(format!("{:x}\r\n{event}\r\n", event.len()).as_bytes());
    let (base, _) = raw_server(vec![reply]).await;
    let model = OpenAiModel::new(config(&base).max_retries(0)).unwrap();
    let response = streamed(&model).await.unwrap();
    assert_eq!(response.message.text(), "hi");
    assert_eq!(response.finish_reason, FinishReason::Stop);
}

#[test]
fn debug_output_hides_extra_headers_and_the_key() {
    let model = OpenAiModel::new(
        OpenAiConfig::new("m")
            .api_key("sk-AUTHSECRET")
            .header("api-key", "AZURESECRET42"),
    )
    .unwrap();
    let debug = format!("{model:?}");
    assert!(!debug.contains("AZURESECRET42"), "{debug}");
    assert!(!debug.contains("sk-AUTHSECRET"), "{debug}");
}

/// A raw server answering the i-th request with `replies[i % len]`, then closing (without
/// ending a chunked body: the body is cut); returns its address and the number of requests.
async fn raw_server(
    replies: Vec<Vec<u8>>,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let count = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = count.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let i = counter.fetch_add(1, Ordering::SeqCst);
            let reply = replies[i % replies.len()].clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buf[..n]);
                    if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
                        let length: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse().ok())
                            .unwrap_or(0);
                        if request.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                let _ = socket.write_all(&reply).await;
                let _ = socket.flush().await;
            });
        }
    });
    (format!("http://{addr}"), count)
}

#[tokio::test]
async fn retries_of_a_failed_request_and_of_a_cut_body_share_one_budget() {
    let error = b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}".to_vec();
    let cut = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n{\"choi".to_vec();
    let (base, requests) = raw_server(vec![error, cut]).await;
    let model = OpenAiModel::new(config(&base).max_retries(1)).unwrap();
    let req = ModelRequest::new(vec![Message::user("hi")]);
    let err = model
        .generate(&req)
        .await
        .expect_err("both tries failed: a 500, then a body cut short");
    // The error is the last failure's, the cut body, and says so; another try may pass.
    assert_eq!(err.kind(), ModelErrorKind::Unavailable, "{err}");
    assert!(err.is_retryable(), "{err}");
    let text = err.to_string();
    assert!(
        text.contains(&format!(
            "the connection failed while reading from {base}/v1/chat/completions"
        )),
        "{text}"
    );
    assert_eq!(
        requests.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "one try and one retry in all"
    );
}
