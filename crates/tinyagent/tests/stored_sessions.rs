//! Agents running on sessions of a store: what is written, when, and what two runs on one
//! session do.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use tinyagent::agent::{OnBusy, SessionRunner};
use tinyagent::store::{Changes, MemoryStore, SessionStore, StoreError, StoredSession};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::{AgentError, Event, LlmAgent, Message, Role, Tool, ToolError, tools};
use tokio::sync::Semaphore;

/// A tool that waits until the test adds a permit to `gate`, and records `role` in the state.
fn gate_tool(gate: Arc<Semaphore>) -> Arc<dyn Tool> {
    tools::new_tool(
        "hold",
        "Waits for the test",
        json!({"type": "object", "properties": {}}),
        move |ctx, _input: String| {
            let gate = gate.clone();
            async move {
                let permit = gate
                    .acquire()
                    .await
                    .map_err(|e| ToolError::failed(e.to_string()))?;
                permit.forget();
                if let Some(session) = ctx.session() {
                    session.set("held", true);
                    session.remove("draft");
                }
                Ok("released".to_owned())
            }
        },
    )
}

fn runner(model: Arc<ScriptedModel>, gate: Arc<Semaphore>, store: MemoryStore) -> SessionRunner {
    let agent = LlmAgent::builder("keeper")
        .model(model)
        .tool(gate_tool(gate))
        .build()
        .unwrap();
    SessionRunner::new(agent, store)
}

/// Polls `events` until a `ToolCallStarted`, failing with a message rather than hanging.
async fn until_tool_started(
    events: &mut futures::stream::BoxStream<'static, Result<Event, AgentError>>,
) {
    let wait = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(event) = events.next().await {
            if matches!(event.unwrap(), Event::ToolCallStarted { .. }) {
                return;
            }
        }
        panic!("the run ended before calling its tool");
    });
    wait.await
        .expect("the run did not reach its tool call within 30 s");
}

async fn answer(
    mut events: futures::stream::BoxStream<'static, Result<Event, AgentError>>,
) -> Result<String, AgentError> {
    while let Some(event) = events.next().await {
        if let Event::Finished { answer, .. } = event? {
            return Ok(answer);
        }
    }
    panic!("the stream ended without an answer or an error")
}

#[tokio::test]
async fn a_second_run_waits_and_starts_from_the_first_runs_history() {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("call_1", "hold", "{}"),
        reply::text("first answer"),
        reply::text("second answer"),
    ]));
    let gate = Arc::new(Semaphore::new(0));
    let store = MemoryStore::new();
    let runner = runner(model.clone(), gate.clone(), store.clone());

    let mut first = runner.run("ses_a", "one");
    until_tool_started(&mut first).await;
    let second = tokio::spawn(answer(runner.run("ses_a", "two")));
    // The second run cannot start: the first holds the session.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(model.request_count(), 1, "the second run did not wait");
    // Nothing is stored while the run is in flight (a memory store keeps no journal: it
    // would die with the process).
    assert_eq!(store.load("ses_a").await.unwrap(), None);
    gate.add_permits(1);
    assert_eq!(answer(first).await.unwrap(), "first answer");
    assert_eq!(second.await.unwrap().unwrap(), "second answer");
    // The second run's model call saw the first run's four messages, then its own.
    assert_eq!(model.requests()[2].messages.len(), 5);

    let stored = store.load("ses_a").await.unwrap().unwrap();
    assert_eq!(stored.version, 2);
    let roles: Vec<Role> = stored.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::User,
            Role::Assistant
        ]
    );
    assert_eq!(stored.messages[0].text(), "one");
    assert_eq!(stored.messages[4].text(), "two");
    assert_eq!(stored.messages[5].text(), "second answer");
    assert_eq!(stored.state["held"], true);
}

#[tokio::test]
async fn a_second_run_fails_at_once_when_told_to() {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("call_1", "hold", "{}"),
        reply::text("first answer"),
    ]));
    let gate = Arc::new(Semaphore::new(0));
    let store = MemoryStore::new();
    let runner = runner(model, gate.clone(), store.clone()).on_busy(OnBusy::Fail);

    let mut first = runner.run("ses_b", "one");
    until_tool_started(&mut first).await;
    let err = runner.ask("ses_b", "two").await.unwrap_err();
    assert!(
        matches!(&err, AgentError::Store(StoreError::Busy { session, waited: None }) if session == "ses_b"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "session store: session \"ses_b\" is busy: another run on it is in flight"
    );
    gate.add_permits(1);
    assert_eq!(answer(first).await.unwrap(), "first answer");
    assert_eq!(
        store.load("ses_b").await.unwrap().unwrap().messages.len(),
        4
    );
}

#[tokio::test]
async fn failed_and_cancelled_runs_write_nothing_and_free_the_session() {
    let model = Arc::new(ScriptedModel::new([reply::text("kept")]));
    let gate = Arc::new(Semaphore::new(0));
    let store = MemoryStore::new();
    let runner = runner(model, gate.clone(), store.clone());
    assert_eq!(runner.ask("ses_c", "hi").await.unwrap(), "kept");
    store.set_state("ses_c", "draft", json!("x")).await.unwrap();
    let before = store.load("ses_c").await.unwrap().unwrap();

    // The model has no reply left: the run fails.
    let err = runner.ask("ses_c", "again").await.unwrap_err();
    assert!(matches!(err, AgentError::Model(_)), "{err:?}");
    assert_same(&store.load("ses_c").await.unwrap().unwrap(), &before);

    // A run dropped while its tool waits: the tool changed the state in memory, nothing is
    // written, and the session is free again.
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("call_1", "hold", "{}"),
        reply::text("ok"),
    ]));
    let runner = self::runner(model, gate.clone(), store.clone()).on_busy(OnBusy::Fail);
    let mut cancelled = runner.run("ses_c", "cancel me");
    until_tool_started(&mut cancelled).await;
    drop(cancelled);
    // The session is freed once the cancelled run's journal is removed.
    let lock = store
        .lock("ses_c", Some(Duration::from_secs(30)))
        .await
        .expect("the session is free");
    drop(lock);
    assert_same(&store.load("ses_c").await.unwrap().unwrap(), &before);
}

/// The same history, state and version (a run's journal, written and removed, moves only the
/// time of the last write).
fn assert_same(now: &StoredSession, before: &StoredSession) {
    assert_eq!(
        (&now.messages, &now.state, now.version),
        (&before.messages, &before.state, before.version)
    );
}

#[tokio::test]
async fn a_run_writes_only_the_state_keys_it_changed() {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("call_1", "hold", "{}"),
        reply::text("ok"),
    ]));
    let gate = Arc::new(Semaphore::new(0));
    let store = MemoryStore::new();
    store.set_state("ses_d", "draft", json!("x")).await.unwrap();
    store
        .set_state("ses_d", "theme", json!("dark"))
        .await
        .unwrap();
    let runner = runner(model, gate.clone(), store.clone());

    let mut run = runner.run("ses_d", "go");
    until_tool_started(&mut run).await;
    // Someone else writes a key the run does not touch while it is in flight.
    store
        .set_state("ses_d", "theme", json!("light"))
        .await
        .unwrap();
    gate.add_permits(1);
    assert_eq!(answer(run).await.unwrap(), "ok");

    let stored = store.load("ses_d").await.unwrap().unwrap();
    assert_eq!(stored.state.get("draft"), None, "removed by the tool");
    assert_eq!(stored.state["held"], true, "set by the tool");
    assert_eq!(
        stored.state["theme"], "light",
        "the other writer's value stays"
    );
}

#[tokio::test]
async fn a_write_that_slipped_past_the_lock_makes_the_run_fail_with_a_conflict() {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("call_1", "hold", "{}"),
        reply::text("ok"),
    ]));
    let gate = Arc::new(Semaphore::new(0));
    let store = MemoryStore::new();
    let runner = runner(model, gate.clone(), store.clone());

    let mut run = runner.run("ses_e", "go");
    until_tool_started(&mut run).await;
    // Another process (not taking the lock) appends meanwhile.
    let changes = Changes::new().append([Message::user("elsewhere")]);
    assert_eq!(store.commit("ses_e", Some(0), &changes).await.unwrap(), 1);
    gate.add_permits(1);
    let err = answer(run).await.unwrap_err();
    assert!(
        matches!(
            &err,
            AgentError::Store(StoreError::Conflict { session, expected: 0, actual: 1 }) if session == "ses_e"
        ),
        "{err:?}"
    );
    let stored = store.load("ses_e").await.unwrap().unwrap();
    assert_eq!(stored.messages.len(), 1, "the other writer's message alone");
    assert_eq!(stored.messages[0].text(), "elsewhere");
}

#[tokio::test]
async fn bad_session_ids_are_refused_clearly() {
    let model = Arc::new(ScriptedModel::new([reply::text("never")]));
    let runner = runner(model, Arc::new(Semaphore::new(0)), MemoryStore::new());
    let err = runner.ask("", "hi").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "session store: invalid session id: it is empty"
    );
    let long = "x".repeat(300);
    let err = runner.ask(long, "hi").await.unwrap_err();
    assert!(err.to_string().contains("300 bytes long"), "{err}");
}
