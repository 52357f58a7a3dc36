//! What a session store costs per agent turn: committing a turn's messages, loading a
//! session's history, and a whole stored turn (`SessionRunner::ask`) against the same turn on
//! an in-memory `Session`.
//!
//! Every benchmark checks what it did before it is timed (the session holds the messages
//! written, the answer is the model's), so a store that wrote nothing could not look fast.
//!
//! - `commit_turn/STORE`: one version-checked commit of a turn (4 messages, ~600 bytes of
//!   JSON) to a session of its own.
//! - `load_40/STORE`: loading a session of 40 messages and 3 state keys.
//! - `turn/in_memory_session` vs `turn/runner_STORE`: a one-step agent turn with an
//!   in-process model, on a plain `Session` and through a `SessionRunner` on a store (lock,
//!   load, run, commit, unlock). The difference is the store's share of a turn.
//!
//! SQLite writes to a temporary file (WAL mode). PostgreSQL and Redis are measured when
//! `TINYAGENT_TEST_POSTGRES_URL` / `TINYAGENT_TEST_REDIS_URL` are set
//! (`eval "$(bash scripts/services.sh env)"`), and left out otherwise.
//!
//! - `journal/on_STORE` vs `journal/off_STORE`: a three-step run with its journal kept and
//!   not (see `SessionRunner::journal`).
//!
//!     cargo bench -p tinyagent-store --all-features --bench store

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tinyagent::agent::SessionRunner;
use tinyagent::store::{Changes, MemoryStore, SessionStore};
use tinyagent::{
    AgentExt, BoxFuture, LlmAgent, Message, Model, ModelError, ModelRequest, ModelResponse, Part,
    Role, Session, ToolCall, ToolResult, Usage,
};

/// Answers every request with the same text.
struct Echo;

impl Model for Echo {
    fn generate<'a>(
        &'a self,
        _req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async {
            Ok(ModelResponse::new(
                Message::assistant("北京今天晴，22.5°C。"),
                Usage::default(),
                tinyagent::model::FinishReason::Stop,
            ))
        })
    }
}

fn turn() -> Vec<Message> {
    vec![
        Message::user("北京天气怎么样？"),
        Message::new(
            Role::Assistant,
            vec![Part::ToolCall(ToolCall::new(
                "call_1",
                "get_weather",
                r#"{"city":"北京"}"#,
            ))],
        ),
        Message::from_tool_results([ToolResult::ok(
            "call_1",
            "get_weather",
            r#"{"city":"北京","temperature":22.5,"condition":"晴","humidity":45}"#,
        )]),
        Message::assistant("北京今天晴，22.5°C，湿度 45%。"),
    ]
}

async fn stores() -> Vec<(&'static str, Arc<dyn SessionStore>)> {
    let mut stores: Vec<(&'static str, Arc<dyn SessionStore>)> =
        vec![("memory", Arc::new(MemoryStore::new()))];
    let dir = tempfile::tempdir().unwrap().keep();
    let sqlite = tinyagent_store::SqliteStore::open(dir.join("bench.db"))
        .await
        .unwrap();
    stores.push(("sqlite", Arc::new(sqlite)));
    #[cfg(feature = "postgres")]
    if let Ok(url) = std::env::var("TINYAGENT_TEST_POSTGRES_URL") {
        let store = tinyagent_store::PostgresStore::connect(&url).await.unwrap();
        stores.push(("postgres", Arc::new(store)));
    }
    #[cfg(feature = "redis")]
    if let Ok(url) = std::env::var("TINYAGENT_TEST_REDIS_URL") {
        let store = tinyagent_store::RedisStore::connect(&url).await.unwrap();
        stores.push(("redis", Arc::new(store)));
    }
    stores
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let stores = rt.block_on(stores());
    let prefix = tinyagent::store::new_id("bench");
    let n = AtomicU64::new(0);
    let fresh = || format!("{prefix}-{}", n.fetch_add(1, Ordering::Relaxed));

    let changes = Changes::new().append(turn());
    let mut group = c.benchmark_group("commit_turn");
    for (name, store) in &stores {
        let id = fresh();
        rt.block_on(store.commit(&id, Some(0), &changes)).unwrap();
        let loaded = rt.block_on(store.load(&id)).unwrap().unwrap();
        assert_eq!(loaded.messages, changes.messages, "{name} stored the turn");
        group.bench_function(*name, |b| {
            b.iter(|| {
                let id = fresh();
                black_box(rt.block_on(store.commit(&id, Some(0), &changes)).unwrap())
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("load_40");
    for (name, store) in &stores {
        let id = fresh();
        let mut long = Changes::new();
        for _ in 0..10 {
            long = long.append(turn());
        }
        let long = long
            .set("role", json!("admin"))
            .set("city", json!("北京"))
            .set("visits", json!(3));
        rt.block_on(store.commit(&id, Some(0), &long)).unwrap();
        group.bench_function(*name, |b| {
            b.iter(|| {
                let session = rt.block_on(store.load(&id)).unwrap().unwrap();
                assert_eq!(session.messages.len(), 40);
                black_box(session)
            })
        });
    }
    group.finish();

    let agent = LlmAgent::builder("bench").model(Echo).build().unwrap();
    let mut group = c.benchmark_group("turn");
    group.bench_function("in_memory_session", |b| {
        b.iter(|| {
            let session = Session::new();
            let answer = rt
                .block_on(agent.ask(&session, "北京天气怎么样？"))
                .unwrap();
            assert_eq!(session.len(), 2);
            black_box(answer)
        })
    });
    for (name, store) in &stores {
        let runner = SessionRunner::new(agent.clone(), store.clone());
        let id = fresh();
        rt.block_on(runner.ask(&id, "hi")).unwrap();
        assert_eq!(
            rt.block_on(store.load(&id))
                .unwrap()
                .unwrap()
                .messages
                .len(),
            2
        );
        group.bench_function(format!("runner_{name}"), |b| {
            b.iter(|| {
                let answer = rt
                    .block_on(runner.ask(fresh(), "北京天气怎么样？"))
                    .unwrap();
                black_box(answer)
            })
        });
    }
    group.finish();
}

/// Calls `lookup` twice, then answers: a three-step run.
struct TwoLookups;

impl Model for TwoLookups {
    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        let done = req.messages.iter().filter(|m| m.role == Role::Tool).count();
        Box::pin(async move {
            let (message, finish) = if done < 2 {
                let call = ToolCall::new(format!("call_{done}"), "lookup", "{}");
                (
                    Message::new(Role::Assistant, vec![Part::ToolCall(call)]),
                    tinyagent::model::FinishReason::ToolCalls,
                )
            } else {
                (
                    Message::assistant("done"),
                    tinyagent::model::FinishReason::Stop,
                )
            };
            Ok(ModelResponse::new(message, Usage::new(10, 5), finish))
        })
    }
}

/// `journal/on_STORE` vs `journal/off_STORE`: a three-step run (two tool calls, then the
/// answer) through a `SessionRunner` with its journal kept and not. The journal writes seven
/// entries for it (the question, two steps, two starts, two ends); the difference over 3 is
/// its cost per step.
fn journal(c: &mut Criterion) {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Nothing {}
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let stores = rt.block_on(stores());
    let prefix = tinyagent::store::new_id("bench");
    let n = AtomicU64::new(0);
    let fresh = || format!("{prefix}-{}", n.fetch_add(1, Ordering::Relaxed));
    let lookup = tinyagent::tools::new_func("lookup", "Looks up", |_: Nothing| async {
        Ok::<_, tinyagent::ToolError>("found".to_owned())
    });
    let agent = LlmAgent::builder("bench")
        .model(TwoLookups)
        .tool(lookup)
        .build()
        .unwrap();
    let mut group = c.benchmark_group("journal");
    // A memory store keeps no journal (it dies with the process).
    for (name, store) in stores.iter().filter(|(_, s)| s.is_durable()) {
        for on in [true, false] {
            let runner = SessionRunner::new(agent.clone(), store.clone()).journal(on);
            let id = fresh();
            assert_eq!(rt.block_on(runner.ask(&id, "go")).unwrap(), "done");
            let stored = rt.block_on(store.load(&id)).unwrap().unwrap();
            assert_eq!(stored.messages.len(), 6, "{name}: the turn is stored");
            assert!(!stored.state.contains_key(tinyagent::agent::JOURNAL_KEY));
            let label = format!("{}_{name}", if on { "on" } else { "off" });
            group.bench_function(label, |b| {
                b.iter(|| black_box(rt.block_on(runner.ask(fresh(), "go")).unwrap()))
            });
        }
    }
    group.finish();
}

criterion_group!(store, benches, journal);
criterion_main!(store);
