//! The behaviour every session store must show, as async functions run against each store
//! by the `conformance_tests!` macro.
#![allow(dead_code)]

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tinyagent::store::{Changes, ListOptions, SessionStore, StoreError};
use tinyagent::{Message, Part, Role, ToolCall, ToolResult, store::new_id};

/// A fresh session id: stores on shared servers hold other tests' sessions too.
pub fn fresh(prefix: &str) -> String {
    new_id(prefix)
}

/// One message of every kind of part and role, with the text a real conversation has.
pub fn every_kind_of_message() -> Vec<Message> {
    vec![
        Message::system("You are terse."),
        Message::user("北京天气怎么样？ 🌤 \"quotes\" \\ back\nslash"),
        Message::new(
            Role::Assistant,
            vec![
                Part::text("让我查一下。"),
                ToolCall::new("call_1", "get_weather", r#"{"city":"北京"}"#).into(),
                // Arguments are the model's raw text, not necessarily JSON.
                ToolCall::new("call_2", "calculator", r#"{"a": 1, "b": "#).into(),
            ],
        ),
        Message::from_tool_results([
            ToolResult::ok("call_1", "get_weather", r#"{"temperature":22.5}"#),
            ToolResult::error("call_2", "calculator", "invalid JSON: EOF while parsing"),
        ]),
        Message::new(
            Role::Assistant,
            vec![Part::text("北京"), Part::text("晴。")],
        ),
        Message::new(Role::User, vec![]),
        Message::assistant("").id("msg_custom-id"),
    ]
}

pub async fn round_trip(store: &dyn SessionStore) {
    let id = fresh("rt");
    let messages = every_kind_of_message();
    let state = json!({
        "null": null, "yes": true, "int": -42, "big": 9007199254740993u64, "float": 22.5,
        "text": "北京 🌤", "list": [1, "two", [3]], "nested": {"a": {"b": [true, null]}},
        "": "empty key",
    });
    let mut changes = Changes::new().append(messages.clone());
    for (k, v) in state.as_object().unwrap() {
        changes = changes.set(k.clone(), v.clone());
    }
    assert_eq!(store.commit(&id, Some(0), &changes).await.unwrap(), 1);
    let loaded = store.load(&id).await.unwrap().expect("the session exists");
    assert_eq!(loaded.id, id);
    assert_eq!(
        loaded.messages, messages,
        "every message comes back as it was"
    );
    assert_eq!(serde_json::Value::Object(loaded.state.clone()), state);
    assert_eq!(loaded.version, 1);
    assert!(loaded.created_at <= loaded.updated_at);
    assert_eq!(loaded.expires_at, None);
    let info = loaded.info();
    assert_eq!(info.message_count, messages.len() as u64);
}

pub async fn versions_and_conflicts(store: &dyn SessionStore) {
    let id = fresh("ver");
    assert!(store.load(&id).await.unwrap().is_none());
    let err = store
        .append(&id, 3, vec![Message::user("late")])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::NotFound { session } if *session == id),
        "{err:?}"
    );

    let info = store.create(&id).await.unwrap();
    assert_eq!((info.version, info.message_count), (0, 0));
    let err = store.create(&id).await.unwrap_err();
    assert!(matches!(err, StoreError::AlreadyExists { .. }), "{err:?}");
    let empty = store.load(&id).await.unwrap().unwrap();
    assert!(empty.messages.is_empty() && empty.state.is_empty());
    assert_eq!(empty.version, 0);

    assert_eq!(
        store
            .append(&id, 0, vec![Message::user("a")])
            .await
            .unwrap(),
        1
    );
    let err = store
        .append(&id, 0, vec![Message::user("b")])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Conflict { session, expected: 0, actual: 1 } if *session == id),
        "{err:?}"
    );
    assert!(err.is_retryable());
    assert!(err.to_string().contains(&format!("{id:?}")), "{err}");
    // State alone does not move the version; an unconditional commit always lands.
    store.set_state(&id, "k", json!(1)).await.unwrap();
    let changes = Changes::new().append([Message::user("c"), Message::assistant("d")]);
    assert_eq!(store.commit(&id, None, &changes).await.unwrap(), 2);
    let loaded = store.load(&id).await.unwrap().unwrap();
    let texts: Vec<String> = loaded.messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["a", "c", "d"], "the refused write left nothing");
    assert_eq!(loaded.version, 2);
    assert_eq!(
        store.commit(&id, Some(2), &Changes::new()).await.unwrap(),
        2
    );
}

pub async fn state(store: &dyn SessionStore) {
    let id = fresh("st");
    assert_eq!(store.get_state(&id, "role").await.unwrap(), None);
    store.set_state(&id, "role", json!("admin")).await.unwrap();
    assert!(
        store.load(&id).await.unwrap().is_some(),
        "setting state creates the session"
    );
    assert_eq!(
        store.get_state(&id, "role").await.unwrap(),
        Some(json!("admin"))
    );
    store
        .set_state(&id, "role", json!({"name": "user"}))
        .await
        .unwrap();
    store.set_state(&id, "n", json!(1)).await.unwrap();
    assert_eq!(
        store.get_state(&id, "role").await.unwrap(),
        Some(json!({"name": "user"}))
    );
    store.remove_state(&id, "role").await.unwrap();
    store.remove_state(&id, "never-set").await.unwrap();
    let ghost = fresh("ghost");
    store.remove_state(&ghost, "k").await.unwrap();
    assert!(
        store.load(&ghost).await.unwrap().is_none(),
        "removing a key creates no session"
    );
    assert_eq!(store.get_state(&id, "role").await.unwrap(), None);
    let loaded = store.load(&id).await.unwrap().unwrap();
    assert_eq!(serde_json::Value::Object(loaded.state), json!({"n": 1}));
    assert_eq!(loaded.version, 0);

    // A commit that must find its session creates none, whatever it carries; on a session
    // that exists it writes as any commit.
    let must = |changes: Changes| changes.must_exist(true);
    for expected in [None, Some(0), Some(3)] {
        let changes = must(
            Changes::new()
                .append([Message::user("hi")])
                .set("k", json!(1)),
        );
        let err = store.commit(&ghost, expected, &changes).await.unwrap_err();
        assert!(
            matches!(err, StoreError::NotFound { .. }),
            "{expected:?}: {err}"
        );
        assert!(store.load(&ghost).await.unwrap().is_none(), "{expected:?}");
    }
    let changes = must(Changes::new().append([Message::user("hi")]));
    assert_eq!(store.commit(&id, Some(0), &changes).await.unwrap(), 1);
    let changes = must(Changes::new().set("k", json!(2)));
    assert_eq!(store.commit(&id, None, &changes).await.unwrap(), 1);
    assert_eq!(store.get_state(&id, "k").await.unwrap(), Some(json!(2)));
}

pub async fn list_and_delete(store: &dyn SessionStore) {
    let prefix = fresh("ls");
    let ids: Vec<String> = (0..5).map(|i| format!("{prefix}-{i}")).collect();
    for id in &ids {
        store
            .append(id, 0, vec![Message::user(id.as_str())])
            .await
            .unwrap();
        // Distinct write times, so that recency orders them.
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    // Writing the first again makes it the most recent.
    store
        .set_state(&ids[0], "touched", json!(true))
        .await
        .unwrap();

    let mut seen = Vec::new();
    let mut options = ListOptions::new().limit(2);
    let mut pages = 0;
    loop {
        let page = store.list(&options).await.unwrap();
        assert!(page.sessions.len() <= 2);
        pages += 1;
        seen.extend(
            page.sessions
                .into_iter()
                .filter(|s| s.id.starts_with(&prefix)),
        );
        // The store may hold many other sessions (a shared server); these five are among the
        // most recent, so a few pages find them.
        if seen.len() >= ids.len() {
            break;
        }
        match page.next {
            Some(next) => options = options.cursor(next),
            None => break,
        }
        assert!(pages < 10_000, "the pages never end");
    }
    let order: Vec<&str> = seen.iter().map(|s| s.id.as_str()).collect();
    let expected: Vec<&str> = [0, 4, 3, 2, 1].iter().map(|&i| ids[i].as_str()).collect();
    assert_eq!(order, expected, "most recently written first, each once");
    assert!(seen.iter().all(|s| s.message_count == 1 && s.version == 1));

    let err = store
        .list(&ListOptions::new().cursor("not a cursor"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::InvalidInput { what: "cursor", .. }),
        "{err:?}"
    );

    assert!(store.delete(&ids[2]).await.unwrap());
    assert!(!store.delete(&ids[2]).await.unwrap(), "already gone");
    assert!(store.load(&ids[2]).await.unwrap().is_none());
    assert_eq!(store.get_state(&ids[2], "touched").await.unwrap(), None);
    // A deleted session starts again from nothing.
    assert_eq!(
        store
            .append(&ids[2], 0, vec![Message::user("again")])
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store.load(&ids[2]).await.unwrap().unwrap().messages.len(),
        1
    );
}

pub async fn expiry(store: &dyn SessionStore) {
    let id = fresh("exp");
    let keep = fresh("keep");
    let err = store
        .set_ttl(&id, Some(Duration::from_secs(1)))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
    store
        .append(&id, 0, vec![Message::user("soon gone")])
        .await
        .unwrap();
    store.set_state(&id, "k", json!(1)).await.unwrap();
    store
        .append(&keep, 0, vec![Message::user("kept")])
        .await
        .unwrap();
    store
        .set_ttl(&keep, Some(Duration::from_secs(3600)))
        .await
        .unwrap();
    let kept = store.load(&keep).await.unwrap().unwrap();
    assert!(kept.expires_at.is_some());

    store
        .set_ttl(&id, Some(Duration::from_millis(50)))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(store.load(&id).await.unwrap().is_none(), "expired");
    assert_eq!(store.get_state(&id, "k").await.unwrap(), None);
    let listed = all_ids(store).await;
    assert!(!listed.contains(&id), "an expired session is not listed");
    assert!(listed.contains(&keep));
    let err = store
        .append(&id, 1, vec![Message::user("late")])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
    // A write to an expired id starts a new session.
    assert_eq!(
        store
            .append(&id, 0, vec![Message::user("new")])
            .await
            .unwrap(),
        1
    );
    let fresh_session = store.load(&id).await.unwrap().unwrap();
    assert_eq!(fresh_session.messages.len(), 1);
    assert!(fresh_session.state.is_empty());

    store.set_ttl(&keep, None).await.unwrap();
    assert_eq!(store.load(&keep).await.unwrap().unwrap().expires_at, None);
}

/// For a store whose sessions live `ttl` (short) unless written: the store's TTL applies to a new session, and a session's own TTL (none) wins over it.
///
/// Returns `false`, having checked nothing, when the machine was too slow to set the sessions
/// up within `ttl` (one may then have expired before its own TTL was set); the caller tries
/// again with a longer one ([`longer_ttl`]).
pub async fn store_ttl(store: &dyn SessionStore, ttl: Duration) -> bool {
    let started = std::time::Instant::now();
    let id = fresh("sttl");
    let forever = fresh("forever");
    let setup = async {
        store.append(&id, 0, vec![Message::user("a")]).await?;
        store.append(&forever, 0, vec![Message::user("a")]).await?;
        store.set_ttl(&forever, None).await?;
        store.load(&id).await
    }
    .await;
    if started.elapsed() >= ttl {
        return false;
    }
    let loaded = setup.unwrap().expect("a session within its TTL loads");
    let expires = loaded.expires_at.expect("the store's TTL applies");
    assert!(expires > loaded.updated_at);
    // Past the TTL (a lower bound: a slow machine only waits longer).
    tokio::time::sleep(ttl * 4).await;
    assert!(
        store.load(&id).await.unwrap().is_none(),
        "expired with the store's TTL"
    );
    assert!(
        store.load(&forever).await.unwrap().is_some(),
        "its own TTL wins"
    );
    true
}

/// The next TTL to try [`store_ttl`] with, after `ttl` was too short for this machine.
pub fn longer_ttl(ttl: Duration) -> Duration {
    assert!(
        ttl < Duration::from_secs(10),
        "setting two sessions up took longer than {ttl:?}"
    );
    ttl * 4
}

pub async fn all_ids(store: &dyn SessionStore) -> HashSet<String> {
    let mut ids = HashSet::new();
    let mut options = ListOptions::new().limit(500);
    loop {
        let page = store.list(&options).await.unwrap();
        ids.extend(page.sessions.into_iter().map(|s| s.id));
        match page.next {
            Some(next) => options = options.cursor(next),
            None => return ids,
        }
    }
}

/// 100 tasks append three messages each to one session at once, unconditionally.
pub async fn concurrent_appends(store: Arc<dyn SessionStore>) {
    let id = fresh("conc");
    let tasks: Vec<_> = (0..100)
        .map(|t| {
            let store = store.clone();
            let id = id.clone();
            tokio::spawn(async move {
                let messages = (0..3).map(|k| Message::user(format!("{t}-{k}")));
                let changes = Changes::new().append(messages);
                store.commit(&id, None, &changes).await.unwrap()
            })
        })
        .collect();
    let mut versions = HashSet::new();
    for task in tasks {
        versions.insert(task.await.unwrap());
    }
    assert_eq!(
        versions,
        (1..=100).collect(),
        "each commit got its own version"
    );
    check_runs(&*store, &id, 100).await;
}

/// 100 tasks each lock the session, load it, and append three messages at the version they
/// loaded (what an agent run does): none conflicts, none is lost.
pub async fn concurrent_locked_runs(store: Arc<dyn SessionStore>) {
    let id = fresh("runs");
    let tasks: Vec<_> = (0..100)
        .map(|t| {
            let store = store.clone();
            let id = id.clone();
            tokio::spawn(async move {
                let lock = store
                    .lock(&id, Some(Duration::from_secs(120)))
                    .await
                    .unwrap();
                let version = store.load(&id).await.unwrap().map_or(0, |s| s.version);
                let messages = (0..3).map(|k| Message::user(format!("{t}-{k}"))).collect();
                store.append(&id, version, messages).await.unwrap();
                drop(lock);
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    check_runs(&*store, &id, 100).await;
}

/// The session holds `n` runs of three messages `t-0, t-1, t-2`, each contiguous and in order.
async fn check_runs(store: &dyn SessionStore, id: &str, n: usize) {
    let loaded = store.load(id).await.unwrap().unwrap();
    assert_eq!(loaded.messages.len(), 3 * n, "nothing lost");
    assert_eq!(loaded.version, n as u64);
    let mut runs = HashSet::new();
    for chunk in loaded.messages.chunks(3) {
        let texts: Vec<String> = chunk.iter().map(Message::text).collect();
        let run = texts[0].split('-').next().unwrap().to_owned();
        assert_eq!(
            texts,
            [0, 1, 2].map(|k| format!("{run}-{k}")),
            "a run's messages stay together"
        );
        assert!(runs.insert(run), "no run twice");
    }
}

pub async fn locks(store: &dyn SessionStore) {
    let id = fresh("lock");
    let held = store.lock(&id, None).await.unwrap();
    assert_eq!(held.session(), id);
    let err = store.lock(&id, None).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Busy { waited: None, .. }),
        "{err:?}"
    );
    let err = store
        .lock(&id, Some(Duration::from_millis(100)))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            StoreError::Busy {
                waited: Some(_),
                ..
            }
        ),
        "{err:?}"
    );
    let other = store
        .lock(&fresh("lock"), None)
        .await
        .expect("other sessions are free");
    drop(other);
    drop(held);
    let again = store.lock(&id, Some(Duration::from_secs(30))).await;
    assert!(again.is_ok(), "released: {again:?}");
}

/// Two stores on the same database (two processes): a lock taken through one holds against
/// the other, and is given back when dropped.
pub async fn lock_across_processes(one: &dyn SessionStore, two: &dyn SessionStore) {
    let id = fresh("shared");
    let held = one.lock(&id, None).await.unwrap();
    let err = two.lock(&id, None).await.unwrap_err();
    assert!(matches!(err, StoreError::Busy { .. }), "{err:?}");
    drop(held);
    two.lock(&id, Some(Duration::from_secs(30)))
        .await
        .expect("the lease was given back");
    // What one writes, the other reads.
    one.append(&id, 0, vec![Message::user("from one")])
        .await
        .unwrap();
    let seen = two.load(&id).await.unwrap().unwrap();
    assert_eq!(seen.messages[0].text(), "from one");
}

/// Answers every user message with `re: ` and its text.
struct Echo;

impl tinyagent::Model for Echo {
    fn generate<'a>(
        &'a self,
        req: &'a tinyagent::ModelRequest,
    ) -> tinyagent::BoxFuture<'a, Result<tinyagent::ModelResponse, tinyagent::ModelError>> {
        let last = req.messages.last().map(Message::text).unwrap_or_default();
        Box::pin(async move {
            Ok(tinyagent::ModelResponse::new(
                Message::assistant(format!("re: {last}")),
                tinyagent::Usage::default(),
                tinyagent::model::FinishReason::Stop,
            ))
        })
    }
}

/// Agents on two stores of one database (two server processes) answer turns of one
/// conversation at once: every turn is stored whole and none is lost. (A run that started
/// from a stale history would fail its version-checked commit, and its `ask` here.)
pub async fn runners_on_two_stores(one: Arc<dyn SessionStore>, two: Arc<dyn SessionStore>) {
    use tinyagent::LlmAgent;
    use tinyagent::agent::SessionRunner;

    let id = fresh("alt");
    let agent = LlmAgent::builder("echo").model(Echo).build().unwrap();
    let runners = [
        SessionRunner::new(agent.clone(), one),
        SessionRunner::new(agent, two.clone()),
    ];
    let turns: Vec<_> = (0..20)
        .map(|k| {
            let runner = runners[k % 2].clone();
            let id = id.clone();
            tokio::spawn(async move { runner.ask(&id, format!("turn {k}")).await })
        })
        .collect();
    for (k, turn) in turns.into_iter().enumerate() {
        assert_eq!(turn.await.unwrap().unwrap(), format!("re: turn {k}"));
    }
    let stored = two.load(&id).await.unwrap().unwrap();
    assert_eq!(stored.messages.len(), 40, "nothing lost");
    assert_eq!(stored.version, 20);
    let mut seen = HashSet::new();
    for pair in stored.messages.chunks(2) {
        assert_eq!(pair[0].role, Role::User);
        assert_eq!(
            pair[1].text(),
            format!("re: {}", pair[0].text()),
            "a turn stays whole"
        );
        assert!(seen.insert(pair[0].text()), "no turn twice");
    }
}

/// A store whose `nth` commit from now (counted from 1) fails as if the process died there:
/// neither it nor any later commit is made.
pub struct FailingCommit {
    pub inner: Arc<dyn SessionStore>,
    pub countdown: std::sync::atomic::AtomicUsize,
}

impl SessionStore for FailingCommit {
    fn load<'a>(
        &'a self,
        id: &'a str,
    ) -> tinyagent::BoxFuture<'a, Result<Option<tinyagent::store::StoredSession>, StoreError>> {
        self.inner.load(id)
    }
    fn create<'a>(
        &'a self,
        id: &'a str,
    ) -> tinyagent::BoxFuture<'a, Result<tinyagent::store::SessionInfo, StoreError>> {
        self.inner.create(id)
    }
    fn commit<'a>(
        &'a self,
        id: &'a str,
        expected: Option<u64>,
        changes: &'a Changes,
    ) -> tinyagent::BoxFuture<'a, Result<u64, StoreError>> {
        use std::sync::atomic::Ordering;
        // Once dead, always dead: no later write is made either.
        if self.countdown.load(Ordering::SeqCst) == 0
            || self.countdown.fetch_sub(1, Ordering::SeqCst) == 1
        {
            self.countdown.store(0, Ordering::SeqCst);
            return Box::pin(async { Err(StoreError::backend("test", "the process died")) });
        }
        self.inner.commit(id, expected, changes)
    }
    fn list<'a>(
        &'a self,
        options: &'a ListOptions,
    ) -> tinyagent::BoxFuture<'a, Result<tinyagent::store::SessionPage, StoreError>> {
        self.inner.list(options)
    }
    fn delete<'a>(&'a self, id: &'a str) -> tinyagent::BoxFuture<'a, Result<bool, StoreError>> {
        self.inner.delete(id)
    }
    fn set_ttl<'a>(
        &'a self,
        id: &'a str,
        ttl: Option<Duration>,
    ) -> tinyagent::BoxFuture<'a, Result<(), StoreError>> {
        self.inner.set_ttl(id, ttl)
    }
    fn is_durable(&self) -> bool {
        self.inner.is_durable()
    }

    fn lock<'a>(
        &'a self,
        id: &'a str,
        wait: Option<Duration>,
    ) -> tinyagent::BoxFuture<'a, Result<tinyagent::store::SessionLock, StoreError>> {
        self.inner.lock(id, wait)
    }
}

/// A run that pauses for approval in one process (store `one`) is resumed in another (store
/// `two`, the same data); the approved call runs exactly once even when the first resume dies
/// after running it and before recording its result, and the resume is retried.
pub async fn pause_in_one_process_resume_in_another(
    one: Arc<dyn SessionStore>,
    two: Arc<dyn SessionStore>,
) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tinyagent::agent::{Decisions, SessionRunner};
    use tinyagent::testing::{ScriptedModel, reply};
    use tinyagent::tools::middleware::{Approval, ApprovalLayer, approval_fn};
    use tinyagent::{AgentError, LlmAgent, ToolError, tools};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Payment {
        cents: u64,
    }
    let paid = Arc::new(AtomicUsize::new(0));
    let agent = |model: Arc<ScriptedModel>| {
        let paid = paid.clone();
        let pay = tools::new_func("pay", "Pays an amount", move |p: Payment| {
            let paid = paid.clone();
            async move {
                paid.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>(format!("paid {} cents", p.cents))
            }
        });
        LlmAgent::builder("cashier")
            .model(model)
            .tool(pay)
            .middleware([ApprovalLayer::new(approval_fn(|_| async {
                Approval::defer("payments need a person's approval")
            }))
            .into()])
            .build()
            .unwrap()
    };

    // Pay twice, in two sessions: one resumed cleanly, one whose first resume dies.
    for dies in [false, true] {
        let id = fresh("pay");
        let model = Arc::new(ScriptedModel::new([
            reply::tool_call("call_1", "pay", r#"{"cents": 500}"#),
            reply::text("Done: paid."),
        ]));
        let first = SessionRunner::new(agent(model.clone()), one.clone());
        let err = first.ask(&id, "Pay 5 dollars").await.unwrap_err();
        assert!(
            matches!(&err, AgentError::Paused { pending, .. } if pending.len() == 1 && pending[0].call.name == "pay"),
            "{err}"
        );
        let before = paid.load(Ordering::SeqCst);

        // Another process sees the waiting call.
        let second = SessionRunner::new(agent(model.clone()), two.clone());
        let paused = second.paused(&id).await.unwrap().expect("a paused run");
        assert_eq!(paused.pending()[0].call.arguments, r#"{"cents": 500}"#);
        assert_eq!(
            paused.pending()[0].reason,
            "payments need a person's approval"
        );
        // A new message waits for the decision.
        let err = second.ask(&id, "and 3 more").await.unwrap_err();
        assert!(matches!(err, AgentError::Paused { .. }), "{err}");

        let approve = Decisions::new().approve("call_1");
        if dies {
            // The first resume dies after running the call, before recording its result
            // (its second commit: the first records that the call starts).
            let dying = FailingCommit {
                inner: two.clone(),
                countdown: AtomicUsize::new(2),
            };
            // (Its journal off: the commits counted are the resume's own records.)
            let err = SessionRunner::new(agent(model.clone()), dying)
                .journal(false)
                .resume_answer(&id, approve.clone())
                .await
                .unwrap_err();
            assert!(matches!(err, AgentError::Store(_)), "{err}");
            assert_eq!(paid.load(Ordering::SeqCst), before + 1, "the call ran");
        }
        let answer = second.resume_answer(&id, approve.clone()).await.unwrap();
        assert_eq!(answer, "Done: paid.");
        assert_eq!(
            paid.load(Ordering::SeqCst),
            before + 1,
            "the payment ran once"
        );
        // The model read the result, or that the call may have run.
        let results = model.requests()[1].messages.last().unwrap().clone();
        let result = results.tool_results().next().unwrap();
        if dies {
            assert!(
                result.is_error && result.content.contains("may have run"),
                "{result:?}"
            );
        } else {
            assert_eq!(result.content, "paid 500 cents");
        }
        // A retried resume finds nothing to resume and runs nothing.
        let err = first.resume_answer(&id, approve).await.unwrap_err();
        assert!(matches!(err, AgentError::Resume { .. }), "{err}");
        assert_eq!(paid.load(Ordering::SeqCst), before + 1);

        // The whole turn is stored once, every call paired with its result.
        let stored = one.load(&id).await.unwrap().unwrap();
        let roles: Vec<Role> = stored.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
        );
        assert!(!stored.state.contains_key(tinyagent::agent::PAUSED_KEY));
    }
}

pub async fn bad_ids(store: &dyn SessionStore) {
    for id in ["", "a\u{0}b", &"x".repeat(300)] {
        let err = store.load(id).await.unwrap_err();
        assert!(
            matches!(
                err,
                StoreError::InvalidInput {
                    what: "session id",
                    ..
                }
            ),
            "{err:?}"
        );
        let err = store
            .append(id, 0, vec![Message::user("x")])
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::InvalidInput { .. }), "{err:?}");
    }
}

/// Turns of one conversation through an agent, with the store made anew (a restarted
/// process) between them.
pub async fn restart_between_turns<S, F, Fut>(make: F)
where
    S: SessionStore + 'static,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    use tinyagent::LlmAgent;
    use tinyagent::agent::SessionRunner;
    use tinyagent::testing::{ScriptedModel, reply};

    let id = fresh("restart");
    let first = Arc::new(ScriptedModel::new([reply::text("Nice to meet you, Ada.")]));
    let agent = LlmAgent::builder("host").model(first).build().unwrap();
    let runner = SessionRunner::new(agent, make().await);
    assert_eq!(
        runner.ask(&id, "I am Ada.").await.unwrap(),
        "Nice to meet you, Ada."
    );
    drop(runner);

    let second = Arc::new(ScriptedModel::new([reply::text("You are Ada.")]));
    let agent = LlmAgent::builder("host")
        .model(second.clone())
        .build()
        .unwrap();
    let runner = SessionRunner::new(agent, make().await);
    assert_eq!(runner.ask(&id, "Who am I?").await.unwrap(), "You are Ada.");
    let seen: Vec<String> = second.requests()[0]
        .messages
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(seen, ["I am Ada.", "Nice to meet you, Ada.", "Who am I?"]);
    let stored = make().await.load(&id).await.unwrap().unwrap();
    assert_eq!(stored.messages.len(), 4);
    assert_eq!(stored.version, 2);
}

/// Sessions belong to the owner whose commit created them: another owner's commit is refused
/// as if the session did not exist, and an owner's list holds only its own sessions.
pub async fn ownership(store: &dyn SessionStore) {
    let alice = fresh("owner-a");
    let bob = fresh("owner-b");
    let (a, b) = (format!("a-{alice}"), format!("b-{alice}"));
    let mine = Changes::new()
        .append([Message::user("mine")])
        .owner(alice.as_str());
    assert_eq!(store.commit(&a, Some(0), &mine).await.unwrap(), 1);
    let stored = store.load(&a).await.unwrap().unwrap();
    assert_eq!(stored.owner, alice);
    assert_eq!(stored.info().owner, alice);

    // Another owner can neither append to it nor set its state, whatever version it gives.
    for expected in [Some(0), Some(1), None] {
        let theirs = Changes::new()
            .append([Message::user("theirs")])
            .set("k", json!(1))
            .owner(bob.as_str());
        let err = store.commit(&a, expected, &theirs).await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
    }
    let stored = store.load(&a).await.unwrap().unwrap();
    assert_eq!((stored.version, stored.messages.len()), (1, 1));
    assert!(stored.state.is_empty());

    // Its owner can; so can an unscoped writer, which leaves the owner as it was.
    store.commit(&a, Some(1), &mine).await.unwrap();
    store
        .commit(&a, None, &Changes::new().set("k", json!(2)))
        .await
        .unwrap();
    let stored = store.load(&a).await.unwrap().unwrap();
    assert_eq!((stored.version, stored.owner.as_str()), (2, alice.as_str()));

    // An unscoped commit creates a session of no owner.
    store
        .commit(&b, Some(0), &Changes::new().append([Message::user("x")]))
        .await
        .unwrap();
    assert_eq!(store.load(&b).await.unwrap().unwrap().owner, "");

    // Lists: an owner's holds its own sessions only; an unscoped one holds them all.
    let theirs = Changes::new()
        .append([Message::user("theirs")])
        .owner(bob.as_str());
    let c = format!("c-{alice}");
    store.commit(&c, Some(0), &theirs).await.unwrap();
    let listed = |owner: Option<&str>| {
        let mut options = ListOptions::new().limit(200);
        if let Some(owner) = owner {
            options = options.owner(owner);
        }
        let suffix = alice.clone();
        async move {
            let mut found = HashSet::new();
            loop {
                let page = store.list(&options).await.unwrap();
                found.extend(
                    page.sessions
                        .into_iter()
                        .filter(|s| s.id.ends_with(suffix.as_str()))
                        .map(|s| (s.id, s.owner)),
                );
                match page.next {
                    Some(next) => options = options.cursor(next),
                    None => return found,
                }
            }
        }
    };
    assert_eq!(
        listed(Some(&alice)).await,
        HashSet::from([(a.clone(), alice.clone())])
    );
    assert_eq!(
        listed(Some(&bob)).await,
        HashSet::from([(c.clone(), bob.clone())])
    );
    assert!(listed(Some("")).await.contains(&(b.clone(), String::new())));
    assert_eq!(listed(None).await.len(), 3);
    // One owner's list pages like any other.
    let first = store
        .list(&ListOptions::new().limit(1).owner(bob.as_str()))
        .await
        .unwrap();
    assert_eq!(first.sessions.len(), 1);
    if let Some(next) = first.next {
        let rest = store
            .list(&ListOptions::new().limit(1).owner(bob.as_str()).cursor(next))
            .await
            .unwrap();
        assert!(rest.sessions.iter().all(|s| s.owner == bob));
    }

    // A deleted session's id may be taken by another owner, whose list then holds it.
    assert!(store.delete(&a).await.unwrap());
    store.commit(&a, Some(0), &theirs).await.unwrap();
    assert_eq!(store.load(&a).await.unwrap().unwrap().owner, bob);
    assert!(listed(Some(&alice)).await.is_empty());
    assert_eq!(listed(Some(&bob)).await.len(), 2);
}

/// Writes the tests of the suite for a store made by `$make` (an async expression).
#[macro_export]
macro_rules! conformance_tests {
    ($make:expr) => {
        #[tokio::test]
        async fn round_trip_of_every_message_and_state_value() {
            conformance::round_trip(&$make).await;
        }

        #[tokio::test]
        async fn versions_and_conflicts() {
            conformance::versions_and_conflicts(&$make).await;
        }

        #[tokio::test]
        async fn state_get_set_remove() {
            conformance::state(&$make).await;
        }

        #[tokio::test]
        async fn list_by_recency_in_pages_and_delete() {
            conformance::list_and_delete(&$make).await;
        }

        #[tokio::test]
        async fn expired_sessions_vanish() {
            conformance::expiry(&$make).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_hundred_concurrent_appends_lose_nothing() {
            conformance::concurrent_appends(std::sync::Arc::new($make)).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_hundred_locked_runs_lose_nothing() {
            conformance::concurrent_locked_runs(std::sync::Arc::new($make)).await;
        }

        #[tokio::test]
        async fn locks_wait_or_fail() {
            conformance::locks(&$make).await;
        }

        #[tokio::test]
        async fn bad_ids_are_refused() {
            conformance::bad_ids(&$make).await;
        }

        #[tokio::test]
        async fn sessions_belong_to_their_owner() {
            conformance::ownership(&$make).await;
        }
    };
}

/// A cashier's model: looks up the balance, then pays, then answers; what it asks depends only
/// on the conversation, so a repeated request is seen (`asked` counts requests by how many
/// tool results they carry).
struct Cashier {
    asked: std::sync::Mutex<Vec<usize>>,
}

impl tinyagent::Model for Cashier {
    fn generate<'a>(
        &'a self,
        req: &'a tinyagent::ModelRequest,
    ) -> tinyagent::BoxFuture<'a, Result<tinyagent::ModelResponse, tinyagent::ModelError>> {
        use tinyagent::{Part, ToolCall};
        let results: Vec<String> = req
            .messages
            .iter()
            .flat_map(|m| {
                m.tool_results()
                    .map(|r| r.content.clone())
                    .collect::<Vec<_>>()
            })
            .collect();
        self.asked.lock().unwrap().push(results.len());
        let call = |id: &str, name: &str, args: &str| {
            Message::new(
                Role::Assistant,
                vec![Part::ToolCall(ToolCall::new(id, name, args))],
            )
        };
        let (message, finish) = match results.len() {
            0 => (
                call("call_look", "balance", "{}"),
                tinyagent::model::FinishReason::ToolCalls,
            ),
            1 => (
                call("call_pay", "pay", r#"{"cents": 500}"#),
                tinyagent::model::FinishReason::ToolCalls,
            ),
            _ => (
                Message::assistant(format!("Done: {}", results.join("; "))),
                tinyagent::model::FinishReason::Stop,
            ),
        };
        Box::pin(async move {
            Ok(tinyagent::ModelResponse::new(
                message,
                tinyagent::Usage::new(10, 5),
                finish,
            ))
        })
    }
}

/// A run whose process dies after each of its journal's writes in turn (store `one`, which
/// then takes no write: the dying process's last words are lost too) is finished by another
/// process (store `two`, the same data): the turn is stored whole and once, no model request
/// whose answer was recorded is asked again, the read-only lookup runs again only when it
/// started without a recorded result, and the payment (not idempotent) never runs twice —
/// when it started and its result was not recorded, the model reads that it may have run.
pub async fn a_run_that_died_is_finished_in_another_process(
    one: Arc<dyn SessionStore>,
    two: Arc<dyn SessionStore>,
) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tinyagent::agent::{JOURNAL_KEY, SessionRunner};

    let looked = Arc::new(AtomicUsize::new(0));
    let paid = Arc::new(AtomicUsize::new(0));
    let agent = |model: Arc<Cashier>| cashier(model, looked.clone(), paid.clone());
    // The journal's writes: the question, the lookup step, its start, its end, the payment
    // step, its start, its end, the answer; then the turn is stored.
    for writes in 1..=8 {
        let id = fresh("died");
        let model = Arc::new(Cashier {
            asked: std::sync::Mutex::new(Vec::new()),
        });
        let (looked_before, paid_before) =
            (looked.load(Ordering::SeqCst), paid.load(Ordering::SeqCst));
        let dying = FailingCommit {
            inner: one.clone(),
            countdown: AtomicUsize::new(writes + 1),
        };
        let err = SessionRunner::new(agent(model.clone()), dying)
            .ask(&id, "Pay 5 dollars")
            .await
            .unwrap_err();
        assert!(matches!(err, tinyagent::AgentError::Store(_)), "{err}");
        let journal = two.load(&id).await.unwrap().unwrap();
        assert!(
            journal.state.contains_key(JOURNAL_KEY),
            "{writes}: {journal:?}"
        );
        assert!(journal.messages.is_empty());

        // Another process finishes the turn, then answers the next message.
        let other = SessionRunner::new(agent(model.clone()), two.clone());
        let answer = other
            .recover_answer(&id)
            .await
            .unwrap()
            .expect("a turn to finish");
        assert!(
            answer.starts_with("Done: balance 900 cents; "),
            "{writes}: {answer}"
        );
        let looked_now = looked.load(Ordering::SeqCst) - looked_before;
        let paid_now = paid.load(Ordering::SeqCst) - paid_before;
        assert_eq!(paid_now, 1, "{writes}: the payment ran once");
        // The lookup runs again only when it had started without a recorded end (write 3).
        assert_eq!(looked_now, if writes == 3 { 2 } else { 1 }, "{writes}");
        if writes == 6 {
            // The payment started and its end was not recorded: not run again.
            assert!(answer.contains("may have run"), "{writes}: {answer}");
        } else {
            assert!(answer.ends_with("paid 500 cents"), "{writes}: {answer}");
        }
        // A model answer is asked again only when it had not been recorded.
        let asked = model.asked.lock().unwrap().clone();
        let repeated = asked.len() - 3;
        let unrecorded = match writes {
            1 => 1, // the lookup step's answer
            4 => 1, // the payment step's
            7 => 1, // the final answer
            _ => 0,
        };
        assert_eq!(repeated, unrecorded, "{writes}: requests {asked:?}");

        // Stored whole and once; the journal is gone.
        let stored = two.load(&id).await.unwrap().unwrap();
        let roles: Vec<Role> = stored.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Assistant,
                Role::Tool,
                Role::Assistant
            ],
            "{writes}"
        );
        assert!(!stored.state.contains_key(JOURNAL_KEY), "{writes}");
        assert_eq!(other.recover_answer(&id).await.unwrap(), None);
        assert!(other.ask(&id, "thanks").await.unwrap().starts_with("Done"));
    }

    a_dead_turn_is_finished_before_the_next_message(one, two, agent).await;
}

/// A run that died before anything but its question was recorded is finished by the next
/// message's run, first.
async fn a_dead_turn_is_finished_before_the_next_message(
    one: Arc<dyn SessionStore>,
    two: Arc<dyn SessionStore>,
    agent: impl Fn(Arc<Cashier>) -> tinyagent::LlmAgent,
) {
    use std::sync::atomic::AtomicUsize;
    use tinyagent::agent::SessionRunner;

    let id = fresh("died");
    let model = Arc::new(Cashier {
        asked: std::sync::Mutex::new(Vec::new()),
    });
    let dying = FailingCommit {
        inner: one.clone(),
        countdown: AtomicUsize::new(2),
    };
    let err = SessionRunner::new(agent(model.clone()), dying)
        .ask(&id, "Pay 5 dollars")
        .await
        .unwrap_err();
    assert!(matches!(err, tinyagent::AgentError::Store(_)), "{err}");
    let other = SessionRunner::new(agent(model.clone()), two.clone());
    other.ask(&id, "and thanks").await.unwrap();
    let stored = two.load(&id).await.unwrap().unwrap();
    assert_eq!(stored.messages[0].text(), "Pay 5 dollars");
    assert_eq!(stored.messages.len(), 8, "{:?}", stored.messages);
    assert_eq!(stored.messages[6].text(), "and thanks");
}

/// The cashier agent: a read-only balance lookup and a payment, counting how often each runs.
fn cashier(
    model: Arc<Cashier>,
    looked: Arc<std::sync::atomic::AtomicUsize>,
    paid: Arc<std::sync::atomic::AtomicUsize>,
) -> tinyagent::LlmAgent {
    use std::sync::atomic::Ordering;
    use tinyagent::{LlmAgent, ToolError, tools};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Payment {
        cents: u64,
    }
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Nothing {}
    let balance = tools::new_func("balance", "The balance", move |_: Nothing| {
        let looked = looked.clone();
        async move {
            looked.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ToolError>("balance 900 cents".to_owned())
        }
    })
    .read_only();
    let pay = tools::new_func("pay", "Pays an amount", move |p: Payment| {
        let paid = paid.clone();
        async move {
            paid.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ToolError>(format!("paid {} cents", p.cents))
        }
    });
    LlmAgent::builder("cashier")
        .model(model)
        .tool(balance)
        .tool(pay)
        .build()
        .unwrap()
}
