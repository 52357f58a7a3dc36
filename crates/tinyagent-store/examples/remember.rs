//! A conversation that survives restarts: each run of this program is one turn of session
//! `ID`, kept in the SQLite file `FILE`.
//!
//!     cargo run -p tinyagent-store --example remember -- FILE ID "MESSAGE"
//!
//! The model is a stand-in that answers from the history it is sent (what a real model reads
//! too): how many turns came before and what the user said last time. Run it twice with the
//! same file and id, and the second run remembers the first.

use std::process::ExitCode;

use tinyagent::agent::SessionRunner;
use tinyagent::store::SessionStore;
use tinyagent::{
    BoxFuture, LlmAgent, Message, Model, ModelError, ModelRequest, ModelResponse, Role, Usage,
    model::FinishReason,
};
use tinyagent_store::SqliteStore;

/// Answers from the conversation's history.
struct Recall;

impl Model for Recall {
    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        let said: Vec<String> = req
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .map(Message::text)
            .collect();
        let answer = match said.len() {
            0 | 1 => "This is our first turn: I will remember it.".to_owned(),
            n => format!("This is turn {n}; last time you said {:?}.", said[n - 2]),
        };
        Box::pin(async move {
            Ok(ModelResponse::new(
                Message::assistant(answer),
                Usage::default(),
                FinishReason::Stop,
            ))
        })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [file, id, message] = args.as_slice() else {
        eprintln!("usage: remember FILE ID MESSAGE");
        return ExitCode::from(2);
    };
    let store = match SqliteStore::open(file).await {
        Ok(store) => store,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    };
    let agent = LlmAgent::builder("recall")
        .model(Recall)
        .build()
        .expect("the agent has a model");
    let runner = SessionRunner::new(agent, store.clone());
    match runner.ask(id.as_str(), message.as_str()).await {
        Ok(answer) => println!("{answer}"),
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    }
    match store.load(id).await {
        Ok(Some(session)) => println!(
            "(session {id}: {} messages, version {})",
            session.messages.len(),
            session.version
        ),
        Ok(None) => println!("(session {id} is gone)"),
        Err(err) => eprintln!("error: {err}"),
    }
    ExitCode::SUCCESS
}
