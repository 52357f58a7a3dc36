//! Typed answers: `LlmAgent::ask_as` asks the model for JSON of a type's shape, decodes it,
//! shows a wrong answer to the model once, and fails clearly on a second.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::{AgentError, AgentExt, LlmAgent, Role, Session, model::ResponseFormat};

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Sentiment {
    Positive,
    Negative,
}

/// How a review reads.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Review {
    /// Whether the customer is happy
    sentiment: Sentiment,
    /// Stars, 1 to 5
    stars: u8,
}

fn agent(model: &Arc<ScriptedModel>) -> LlmAgent {
    LlmAgent::builder("reviewer")
        .instruction("Classify the review.")
        .model(model.clone())
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_shape_is_asked_and_the_answer_decoded() {
    let model = Arc::new(ScriptedModel::new([reply::text(
        r#"{"sentiment": "positive", "stars": 5}"#,
    )]));
    let review: Review = agent(&model)
        .ask_as(&Session::new(), "Great phone, fast delivery!")
        .await
        .unwrap();
    assert_eq!(
        review,
        Review {
            sentiment: Sentiment::Positive,
            stars: 5
        }
    );
    let format = model.requests()[0].response_format.clone().unwrap();
    assert_eq!(format, ResponseFormat::of::<Review>());
    assert_eq!(format.name, "Review");
    assert_eq!(
        format.schema["properties"]["sentiment"]["enum"],
        serde_json::json!(["positive", "negative"])
    );
    assert_eq!(
        format.schema["required"],
        serde_json::json!(["sentiment", "stars"])
    );
}

#[tokio::test]
async fn a_wrong_answer_is_shown_to_the_model_once() {
    let model = Arc::new(ScriptedModel::new([
        reply::text(r#"{"sentiment": "mixed", "stars": 3}"#),
        reply::text("```json\n{\"sentiment\": \"negative\", \"stars\": 2}\n```"),
    ]));
    let session = Session::new();
    let review: Review = agent(&model)
        .ask_as(&session, "Broke after a week.")
        .await
        .unwrap();
    assert_eq!(review.sentiment, Sentiment::Negative);
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let feedback = requests[1].messages.last().unwrap();
    assert_eq!(feedback.role, Role::User);
    let text = feedback.text();
    assert!(
        text.starts_with("Your answer is not JSON of the required shape (Review): it does not match at `sentiment`: unknown variant `mixed`"),
        "{text}"
    );
    assert!(requests[1].response_format.is_some());
    // The session keeps both turns.
    assert_eq!(session.messages().len(), 4);
}

#[tokio::test]
async fn a_second_wrong_answer_is_a_clear_error() {
    let model = Arc::new(ScriptedModel::new([
        reply::text("It is a positive review."),
        reply::text(r#"{"sentiment": "positive"}"#),
    ]));
    let err = agent(&model)
        .ask_as::<Review>(&Session::new(), "Love it")
        .await
        .unwrap_err();
    assert!(matches!(err, AgentError::InvalidAnswer { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "agent \"reviewer\" answered twice without the JSON shape asked for (Review): it does not match: missing field `stars` at line 1 column 25"
    );
    let first = model.requests()[1].messages.last().unwrap().text();
    assert!(first.contains("it is not valid JSON"), "{first}");
}

#[tokio::test]
async fn the_builder_asks_every_answer_in_a_shape() {
    let model = Arc::new(ScriptedModel::new([reply::text(
        r#"{"sentiment": "negative", "stars": 1}"#,
    )]));
    let agent = LlmAgent::builder("reviewer")
        .model(model.clone())
        .output_type::<Review>()
        .build()
        .unwrap();
    let answer = agent.ask(&Session::new(), "Never again").await.unwrap();
    assert_eq!(answer, r#"{"sentiment": "negative", "stars": 1}"#);
    assert_eq!(
        model.requests()[0].response_format,
        Some(ResponseFormat::of::<Review>())
    );
}

#[test]
fn format_names_are_made_acceptable() {
    let f = ResponseFormat::json_schema("my answer/v2", serde_json::json!({"type": "object"}));
    assert_eq!(f.name, "my_answer_v2");
    assert_eq!(
        ResponseFormat::json_schema("", serde_json::json!({})).name,
        "answer"
    );
    assert_eq!(
        ResponseFormat::json_schema(&"x".repeat(100), serde_json::json!({}))
            .name
            .len(),
        64
    );
    assert_eq!(ResponseFormat::of::<Vec<String>>().name, "Array_of_string");
}
