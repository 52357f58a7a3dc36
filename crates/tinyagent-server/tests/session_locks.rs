//! Another key can never hold a key's session: while eight tasks of key B post to the id of
//! key A's session as fast as they can, with no waiting for busy sessions (`--session-wait
//! 0`), no request of B's ever asks the store for the lock of A's session (so none waits for
//! it or holds it), and every one of A's posts is answered, on every store.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Running, client};
use serde_json::json;
use tinyagent::agent::OnBusy;
use tinyagent::store::{
    Changes, ListOptions, SessionInfo, SessionLock, SessionPage, SessionStore, StoreError,
    StoredSession,
};
use tinyagent::{BoxFuture, LlmAgent, Model, ModelError, ModelRequest, ModelResponse};
use tinyagent_server::{Server, store_key};
use tinyagent_store::SqliteStore;

/// A model that answers every request at once.
struct Echo;

impl Model for Echo {
    fn name(&self) -> &str {
        "echo"
    }

    fn generate<'a>(
        &'a self,
        _req: &'a ModelRequest,
    ) -> tinyagent::BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async { Ok(tinyagent::testing::reply::text("ok")) })
    }
}

/// A store that records the key of every lock asked of it.
struct Recording {
    inner: Arc<dyn SessionStore>,
    locks: Mutex<Vec<String>>,
}

impl Recording {
    fn locks_of(&self, key: &str) -> usize {
        self.locks
            .lock()
            .unwrap()
            .iter()
            .filter(|k| *k == key)
            .count()
    }
}

impl SessionStore for Recording {
    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<StoredSession>, StoreError>> {
        self.inner.load(id)
    }
    fn create<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionInfo, StoreError>> {
        self.inner.create(id)
    }
    fn commit<'a>(
        &'a self,
        id: &'a str,
        expected: Option<u64>,
        changes: &'a Changes,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        self.inner.commit(id, expected, changes)
    }
    fn list<'a>(
        &'a self,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, Result<SessionPage, StoreError>> {
        self.inner.list(options)
    }
    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.inner.delete(id)
    }
    fn set_ttl<'a>(
        &'a self,
        id: &'a str,
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.set_ttl(id, ttl)
    }
    fn lock<'a>(
        &'a self,
        id: &'a str,
        wait: Option<Duration>,
    ) -> BoxFuture<'a, Result<SessionLock, StoreError>> {
        self.locks.lock().unwrap().push(id.to_owned());
        self.inner.lock(id, wait)
    }
}

/// How many posts of A's, one after another.
const A_POSTS: usize = 60;
/// How many tasks of B's post at once.
const B_TASKS: usize = 8;

async fn post(http: &reqwest::Client, base: &str, key: &str, id: &str) -> (u16, String) {
    let response = http
        .post(format!("{base}/v1/sessions/{id}/messages"))
        .bearer_auth(key)
        .json(&json!({"input": "hi"}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

async fn another_key_never_holds_a_keys_session(store: Arc<dyn SessionStore>) {
    let agent = LlmAgent::builder("echo").model(Echo).build().unwrap();
    let recording = Arc::new(Recording {
        inner: store.clone(),
        locks: Mutex::default(),
    });
    let server = Running::start(
        Server::new()
            .agent(agent)
            .store(recording.clone())
            .named_api_key("alice", "sk-alice")
            .named_api_key("bob", "sk-bob")
            .on_busy(OnBusy::Fail)
            .max_concurrent_per_key(64),
    )
    .await;
    let id = tinyagent::store::new_id("ses");
    let done = Arc::new(AtomicBool::new(false));
    let b_posts = Arc::new(AtomicUsize::new(0));
    let mut b = Vec::new();
    for _ in 0..B_TASKS {
        let (base, id, done, b_posts) = (
            server.base.clone(),
            id.clone(),
            done.clone(),
            b_posts.clone(),
        );
        b.push(tokio::spawn(async move {
            let http = client();
            while !done.load(Ordering::SeqCst) {
                // B's posts may find B's own session busy (409): what matters is A's.
                let (status, _) = post(&http, &base, "sk-bob", &id).await;
                assert!(status == 200 || status == 409, "{status}");
                b_posts.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    let mut lost = Vec::new();
    let mut a_locks = 0;
    let http = client();
    for n in 0..A_POSTS {
        // A store gives a lease back in the background once a run has ended, so A's post
        // right after its own answer may find A's session still held by A's previous run:
        // that (and only that, as the locks below show) is retried.
        let mut answer = post(&http, &server.base, "sk-alice", &id).await;
        a_locks += 1;
        for _ in 0..50 {
            if answer.0 != 409 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            answer = post(&http, &server.base, "sk-alice", &id).await;
            a_locks += 1;
        }
        let (status, body) = answer;
        if status != 200 || !body.contains("event: finished") {
            lost.push((n, status, body));
        }
    }
    done.store(true, Ordering::SeqCst);
    for task in b {
        task.await.unwrap();
    }
    assert!(
        lost.is_empty(),
        "{} of A's {A_POSTS} posts failed: {lost:?}",
        lost.len()
    );
    // No request of B's asked for the lock of A's session: every lock of it was A's.
    let (alice_key, bob_key) = (store_key("alice", &id), store_key("bob", &id));
    assert_eq!(recording.locks_of(&alice_key), a_locks);
    assert!(recording.locks_of(&bob_key) >= B_TASKS);
    assert_eq!(recording.locks_of(&id), 0, "nobody locks the bare id");
    assert!(
        b_posts.load(Ordering::SeqCst) >= B_TASKS,
        "B's tasks posted alongside"
    );
    let alices = store.load(&alice_key).await.unwrap().unwrap();
    assert_eq!(alices.messages.len(), 2 * A_POSTS);
    assert_eq!(alices.owner, "alice");
    let bobs = store.load(&bob_key).await.unwrap().unwrap();
    assert_eq!(bobs.owner, "bob");
    store.delete(&alice_key).await.unwrap();
    store.delete(&bob_key).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_key_never_holds_a_keys_session_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("sessions.db"))
        .await
        .unwrap();
    another_key_never_holds_a_keys_session(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_key_never_holds_a_keys_session_in_postgres() {
    let Some(store) = common::postgres().await else {
        return;
    };
    another_key_never_holds_a_keys_session(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_key_never_holds_a_keys_session_in_redis() {
    let Some(store) = common::redis().await else {
        return;
    };
    another_key_never_holds_a_keys_session(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_key_never_holds_a_keys_session_in_memory() {
    another_key_never_holds_a_keys_session(Arc::new(tinyagent::store::MemoryStore::new())).await;
}
