//! `FallbackModel` and `CircuitBreakerModel` over the OpenAI provider, against loopback servers
//! replaying recorded API responses: which failures move on to the next model, which stop, and
//! a stream cut after it produced output restarting on the next model, and a breaker skipping a
//! dead provider (its timing is tested on a paused clock in the crate itself).

mod support;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use support::*;
use tinyagent::model::{CircuitBreakerModel, FallbackModel, ModelErrorKind, ModelEvent};
use tinyagent::{Agent, Event, Invocation, LlmAgent, Message, Model, ModelRequest, Session};
use tinyagent_openai::{HttpConfig, OpenAiModel};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn ask(text: &str) -> ModelRequest {
    ModelRequest::new(vec![Message::user(text)])
}

async fn serving(reply: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(reply)
        .mount(&server)
        .await;
    server
}

fn error_reply(status: u16, fixture_name: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_raw(fixture(fixture_name), "application/json")
}

/// A provider without retries of its own, so that each failure reaches the fallback at once.
fn no_retries(base: &str) -> Arc<dyn Model> {
    Arc::new(OpenAiModel::new(config_for(base).max_retries(0)).unwrap())
}

async fn requests(server: &MockServer) -> usize {
    server.received_requests().await.unwrap().len()
}

/// A loopback port bound but never listened on: connecting is refused.
fn refusing_port() -> (tokio::net::TcpSocket, String) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let base = format!("http://127.0.0.1:{}", socket.local_addr().unwrap().port());
    (socket, base)
}

#[tokio::test]
async fn rate_limits_server_errors_timeouts_and_refused_connections_go_to_the_next_model() {
    let backup = serving(json_reply("chat_default.json")).await;
    let expected = {
        let direct = no_retries(&backup.uri());
        direct
            .generate(&ask("Hello!"))
            .await
            .unwrap()
            .message
            .text()
    };
    let rate_limited = serving(error_reply(429, "error_429.json")).await;
    let failing = serving(error_reply(500, "error_503.json")).await;
    let overloaded = serving(error_reply(503, "error_503.json")).await;
    let silent = serving(json_reply("chat_default.json").set_delay(Duration::from_secs(30))).await;
    let (_held, refused) = refusing_port();
    let slow: Arc<dyn Model> = Arc::new(
        OpenAiModel::new(
            config_for(&silent.uri())
                .max_retries(0)
                .silence_timeout(Duration::from_millis(200)),
        )
        .unwrap(),
    );
    let cases: Vec<(&str, Arc<dyn Model>, ModelErrorKind)> = vec![
        (
            "429",
            no_retries(&rate_limited.uri()),
            ModelErrorKind::RateLimited,
        ),
        (
            "500",
            no_retries(&failing.uri()),
            ModelErrorKind::Unavailable,
        ),
        (
            "503",
            no_retries(&overloaded.uri()),
            ModelErrorKind::Unavailable,
        ),
        ("timeout", slow, ModelErrorKind::TimedOut),
        ("refused", no_retries(&refused), ModelErrorKind::Unavailable),
    ];
    for (case, primary, kind) in cases {
        // The primary alone fails with the kind the table says moves on.
        let err = primary.generate(&ask("Hello!")).await.unwrap_err();
        assert_eq!(err.kind(), kind, "{case}: {err}");
        let before = requests(&backup).await;
        let model = FallbackModel::new([primary, no_retries(&backup.uri())]);
        let answer = model.generate(&ask("Hello!")).await;
        assert_eq!(answer.unwrap().message.text(), expected, "{case}");
        assert_eq!(requests(&backup).await, before + 1, "{case}");
    }
}

#[tokio::test]
async fn invalid_requests_and_bad_keys_stop_at_the_first_model() {
    let backup = serving(json_reply("chat_default.json")).await;
    for (status, name, kind) in [
        (
            400,
            "error_400_context.json",
            ModelErrorKind::ContextLengthExceeded,
        ),
        (404, "error_404_model.json", ModelErrorKind::InvalidRequest),
        (401, "error_401.json", ModelErrorKind::Authentication),
    ] {
        let primary = serving(error_reply(status, name)).await;
        let model = FallbackModel::new([no_retries(&primary.uri()), no_retries(&backup.uri())]);
        let err = model.generate(&ask("Hello!")).await.unwrap_err();
        assert_eq!(err.kind(), kind, "{status}: {err}");
        assert_eq!(requests(&primary).await, 1, "{status}");
    }
    assert_eq!(requests(&backup).await, 0, "the backup is never called");
}

#[tokio::test]
async fn when_every_model_fails_the_error_names_each() {
    let first = serving(error_reply(429, "error_429.json")).await;
    let second = serving(error_reply(503, "error_503.json")).await;
    let model = FallbackModel::new([no_retries(&first.uri()), no_retries(&second.uri())]);
    let err = model.generate(&ask("Hello!")).await.unwrap_err();
    assert_eq!(
        err.kind(),
        ModelErrorKind::Unavailable,
        "the last model's failure"
    );
    assert!(err.message().contains("gpt-4o-mini: rate_limited"), "{err}");
    let (_, err) = collect(model.stream(&ask("Hello!"))).await;
    assert_eq!(err.unwrap().kind(), ModelErrorKind::Unavailable);
}

async fn collect<'a>(
    mut stream: futures::stream::BoxStream<'a, Result<ModelEvent, tinyagent::ModelError>>,
) -> (Vec<ModelEvent>, Option<tinyagent::ModelError>) {
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(err) => return (events, Some(err)),
        }
    }
    (events, None)
}

/// The first `n` events of a fixture, as a stream that stops there (no finish, no `[DONE]`).
fn first_events(name: &str, n: usize) -> String {
    fixture(name)
        .split("\n\n")
        .take(n)
        .map(|e| format!("{e}\n\n"))
        .collect()
}

#[tokio::test]
async fn a_stream_cut_after_output_restarts_on_the_next_model_and_says_so() {
    let cut = serving(
        ResponseTemplate::new(200)
            .set_body_raw(first_events("stream_text.sse", 3), "text/event-stream"),
    )
    .await;
    let backup = serving(sse_reply("stream_text.sse")).await;
    let direct = no_retries(&backup.uri());
    let (events, err) = collect(direct.stream(&ask("Hello!"))).await;
    assert!(err.is_none());
    let Some(ModelEvent::Done(done)) = events.last() else {
        panic!("{events:?}")
    };
    let expected = done.message.text();
    let agent = LlmAgent::builder("assistant")
        .model(FallbackModel::new([
            no_retries(&cut.uri()),
            no_retries(&backup.uri()),
        ]))
        .build()
        .unwrap();
    let events: Vec<Event> = agent
        .run(Invocation::new(Session::new(), "Hello!"))
        .map(|e| e.unwrap())
        .collect()
        .await;
    let restart = events
        .iter()
        .position(|e| matches!(e, Event::ReplyRestarted { .. }))
        .expect("a restart event");
    let first_delta = events
        .iter()
        .position(|e| matches!(e, Event::TextDelta(_)))
        .expect("text before the cut");
    assert!(first_delta < restart, "{events:?}");
    let Event::ReplyRestarted { reason } = &events[restart] else {
        unreachable!()
    };
    assert!(reason.contains("answers instead"), "{reason}");
    let Some(Event::Finished { answer, .. }) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(*answer, expected);
}

#[tokio::test]
async fn an_open_breaker_skips_a_dead_provider() {
    let dead = serving(error_reply(503, "error_503.json")).await;
    let backup = serving(json_reply("chat_default.json")).await;
    let guarded = Arc::new(
        CircuitBreakerModel::new(OpenAiModel::new(config_for(&dead.uri()).max_retries(0)).unwrap())
            .failures(2)
            .cool_down(Duration::from_secs(60)),
    );
    let model = FallbackModel::new([guarded.clone() as Arc<dyn Model>, no_retries(&backup.uri())]);
    for _ in 0..5 {
        model.generate(&ask("Hello!")).await.unwrap();
    }
    // Two failures opened the breaker; the other three calls never reached the dead server.
    assert_eq!(requests(&dead).await, 2);
    assert_eq!(requests(&backup).await, 5);
    let err = guarded.generate(&ask("Hello!")).await.unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::Unavailable);
    assert!(err.message().contains("circuit breaker is open"), "{err}");
}
