//! Structured outputs: a request's `ResponseFormat` is sent as `response_format` (json_schema,
//! strict when the schema allows), checked against OpenAI's OpenAPI spec; a hand-built
//! structured-output reply (fixtures/README.md) is replayed over loopback and decoded by
//! `LlmAgent::ask_as`.

mod support;

use serde_json::json;
use support::*;
use tinyagent::schemars::JsonSchema;
use tinyagent::{LlmAgent, Message, Model, ModelRequest, Session, model::ResponseFormat};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

#[derive(Debug, PartialEq, serde::Deserialize, JsonSchema)]
#[schemars(crate = "tinyagent::schemars")]
#[serde(rename_all = "snake_case")]
enum Sentiment {
    Positive,
    Negative,
}

/// How a review reads.
#[derive(Debug, PartialEq, serde::Deserialize, JsonSchema)]
#[schemars(crate = "tinyagent::schemars")]
struct Review {
    /// Whether the customer is happy
    sentiment: Sentiment,
    /// Stars, 1 to 5
    stars: u8,
    /// One sentence, if there is something to say
    summary: Option<String>,
}

async fn server_replying(fixture_name: &str) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(json_reply(fixture_name))
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn the_response_format_is_sent_as_strict_json_schema() {
    let server = server_replying("chat_structured_output.json").await;
    let format = ResponseFormat::of::<Review>();
    let req = ModelRequest::new(vec![Message::user("Broke after a week.")])
        .response_format(format.clone());
    let reply = model_for(&server).generate(&req).await.unwrap();
    assert_eq!(
        reply.message.text(),
        r#"{"sentiment":"negative","stars":2,"summary":"The phone broke after a week."}"#
    );

    let body = &validated_bodies(&server).await[0];
    let sent = &body["response_format"];
    assert_eq!(sent["type"], "json_schema");
    assert_eq!(sent["json_schema"]["name"], "Review");
    assert_eq!(sent["json_schema"]["strict"], true);
    assert_eq!(
        sent["json_schema"]["schema"],
        tinyagent::tools::schema::strict_schema(&format.schema)
    );
    // Strict: every property required (the optional one nullable), nothing else allowed.
    assert_eq!(
        sent["json_schema"]["schema"]["required"],
        json!(["sentiment", "stars", "summary"])
    );
    assert_eq!(sent["json_schema"]["schema"]["additionalProperties"], false);
}

#[tokio::test]
async fn a_schema_that_cannot_be_strict_is_sent_as_it_is() {
    let server = server_replying("chat_default.json").await;
    let map = json!({"type": "object", "additionalProperties": {"type": "integer"}});
    let req = ModelRequest::new(vec![Message::user("Count the words.")])
        .response_format(ResponseFormat::json_schema("word counts", map.clone()));
    model_for(&server).generate(&req).await.unwrap();
    let body = &validated_bodies(&server).await[0];
    assert_eq!(
        body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "word_counts", "schema": map, "strict": false}})
    );
}

#[tokio::test]
async fn a_request_without_a_format_sends_none() {
    let server = server_replying("chat_default.json").await;
    let req = ModelRequest::new(vec![Message::user("Hello")]);
    model_for(&server).generate(&req).await.unwrap();
    let body = &validated_bodies(&server).await[0];
    assert!(body.get("response_format").is_none(), "{body}");
}

#[tokio::test]
async fn ask_as_decodes_the_structured_reply() {
    let server = server_replying("chat_structured_output.json").await;
    let agent = LlmAgent::builder("reviewer")
        .instruction("Classify the review.")
        .model(model_for(&server))
        .build()
        .unwrap();
    let review: Review = agent
        .ask_as(&Session::new(), "Broke after a week.")
        .await
        .unwrap();
    assert_eq!(
        review,
        Review {
            sentiment: Sentiment::Negative,
            stars: 2,
            summary: Some("The phone broke after a week.".into()),
        }
    );
    let bodies = validated_bodies(&server).await;
    assert_eq!(bodies.len(), 1, "a valid answer needs no second request");
    assert_eq!(
        bodies[0]["response_format"]["json_schema"]["name"],
        "Review"
    );
}
