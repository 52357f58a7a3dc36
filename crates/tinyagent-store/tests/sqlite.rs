//! The conformance suite against SQLite files, and what is SQLite's own: restarts, the
//! schema's migrations, corrupt rows.
#![cfg(feature = "sqlite")]

mod conformance;

use std::time::Duration;

use tinyagent::Message;
use tinyagent::store::{SessionStore, StoreError};
use tinyagent_store::{SCHEMA_VERSION, SqliteStore};

/// A store on a new file in a temporary directory that lives as long as the test process.
async fn store() -> SqliteStore {
    let dir = tempfile::tempdir().unwrap().keep();
    SqliteStore::open(dir.join("sessions.db")).await.unwrap()
}

conformance_tests!(store().await);

#[tokio::test]
async fn the_stores_ttl_applies() {
    let mut ttl = Duration::from_millis(60);
    while !conformance::store_ttl(&store().await.ttl(ttl), ttl).await {
        ttl = conformance::longer_ttl(ttl);
    }
}

#[tokio::test]
async fn the_history_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    conformance::restart_between_turns(|| {
        let path = path.clone();
        async move { SqliteStore::open(path).await.unwrap() }
    })
    .await;
}

#[tokio::test]
async fn migrations_run_once_and_record_their_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = SqliteStore::open(&path).await.unwrap();
    assert_eq!(store.schema_version().await.unwrap(), SCHEMA_VERSION);
    store
        .append("s", 0, vec![Message::user("kept")])
        .await
        .unwrap();
    drop(store);
    // Opening again migrates nothing and loses nothing.
    let store = SqliteStore::open(&path).await.unwrap();
    assert_eq!(store.schema_version().await.unwrap(), SCHEMA_VERSION);
    assert_eq!(store.load("s").await.unwrap().unwrap().messages.len(), 1);

    // A file written by a newer build is refused with a clear error.
    sqlx::query("UPDATE tinyagent_schema SET version = 99")
        .execute(store.pool())
        .await
        .unwrap();
    drop(store);
    let err = SqliteStore::open(&path).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("schema is at version 99, newer than"),
        "{err}"
    );
}

#[tokio::test]
async fn corrupt_rows_are_clear_errors() {
    let store = store().await;
    store
        .append("s", 0, vec![Message::user("a"), Message::user("b")])
        .await
        .unwrap();
    store
        .set_state("s", "k", serde_json::json!(1))
        .await
        .unwrap();

    sqlx::query(
        "UPDATE tinyagent_messages SET body = '{\"id\":\"m\",\"role\":\"robot\"}' WHERE seq = 1",
    )
    .execute(store.pool())
    .await
    .unwrap();
    let err = store.load("s").await.unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("message #1"), "{err}");
    assert!(err.to_string().contains("robot"), "{err}");

    sqlx::query("DELETE FROM tinyagent_messages WHERE seq = 0")
        .execute(store.pool())
        .await
        .unwrap();
    let err = store.load("s").await.unwrap_err();
    assert!(
        err.to_string().contains("message #0 of 2 is missing"),
        "{err}"
    );

    sqlx::query("UPDATE tinyagent_state SET value = 'not json' WHERE key = 'k'")
        .execute(store.pool())
        .await
        .unwrap();
    let err = store.get_state("s", "k").await.unwrap_err();
    assert!(
        err.to_string()
            .contains("state key \"k\" does not hold JSON"),
        "{err}"
    );

    // The store goes on serving other sessions.
    store
        .append("t", 0, vec![Message::user("fine")])
        .await
        .unwrap();
    assert!(store.load("t").await.unwrap().is_some());
}

#[tokio::test]
async fn a_lock_holds_against_another_store_on_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let one = SqliteStore::open(&path).await.unwrap();
    let two = SqliteStore::open(&path).await.unwrap();
    conformance::lock_across_processes(&one, &two).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_answer_turns_of_one_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let one = SqliteStore::open(&path).await.unwrap();
    let two = SqliteStore::open(&path).await.unwrap();
    conformance::runners_on_two_stores(std::sync::Arc::new(one), std::sync::Arc::new(two)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_paused_in_one_process_is_resumed_in_another_and_pays_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let one = SqliteStore::open(&path).await.unwrap();
    let two = SqliteStore::open(&path).await.unwrap();
    conformance::pause_in_one_process_resume_in_another(
        std::sync::Arc::new(one),
        std::sync::Arc::new(two),
    )
    .await;
}

#[tokio::test]
async fn a_lease_whose_process_died_expires() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let one = SqliteStore::open(&path)
        .await
        .unwrap()
        .lease(Duration::from_millis(100));
    let two = SqliteStore::open(&path).await.unwrap();
    // Before the lease is taken: it runs out 100 ms after a moment later than this.
    let started = std::time::Instant::now();
    let held = one.lock("s", None).await.unwrap();
    // A process that dies neither renews nor releases: forget the guard, stop the renewals.
    std::mem::forget(held);
    one.pool().close().await;
    two.lock("s", Some(Duration::from_secs(30)))
        .await
        .expect("the dead process's lease ran out");
    // A lower bound only (a loaded machine makes it later, never earlier): the lease cannot
    // have been taken before it ran out. (95, not 100: the lease is kept in wall-clock
    // milliseconds, the elapsed time is monotonic.)
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(95),
        "taken after {waited:?}"
    );
}

#[tokio::test]
async fn a_file_of_schema_1_migrates_and_its_sessions_have_no_owner() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    // A file as schema 1 (before owners) left it, with one session in it.
    {
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true);
        let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
        for statement in [
            "CREATE TABLE tinyagent_schema (version BIGINT NOT NULL)",
            "INSERT INTO tinyagent_schema (version) VALUES (1)",
            "CREATE TABLE tinyagent_sessions (id TEXT PRIMARY KEY, version BIGINT NOT NULL, \
             message_count BIGINT NOT NULL, created_at BIGINT NOT NULL, \
             updated_at BIGINT NOT NULL, expires_at BIGINT, ttl_us BIGINT)",
            "CREATE INDEX tinyagent_sessions_recency ON tinyagent_sessions (updated_at DESC, id)",
            "CREATE TABLE tinyagent_messages (session_id TEXT NOT NULL, seq BIGINT NOT NULL, \
             body TEXT NOT NULL, PRIMARY KEY (session_id, seq))",
            "CREATE TABLE tinyagent_state (session_id TEXT NOT NULL, key TEXT NOT NULL, \
             value TEXT NOT NULL, PRIMARY KEY (session_id, key))",
            "CREATE TABLE tinyagent_locks (id TEXT PRIMARY KEY, token TEXT NOT NULL, \
             until_us BIGINT NOT NULL)",
            "INSERT INTO tinyagent_sessions VALUES ('old', 1, 1, 1700000000000000, \
             1700000000000000, NULL, NULL)",
            "INSERT INTO tinyagent_messages VALUES ('old', 0, \
             '{\"id\":\"m1\",\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"from before\"}]}')",
        ] {
            sqlx::query(statement).execute(&pool).await.unwrap();
        }
        pool.close().await;
    }
    let store = SqliteStore::open(&path).await.unwrap();
    assert_eq!(store.schema_version().await.unwrap(), SCHEMA_VERSION);
    let old = store.load("old").await.unwrap().expect("kept");
    assert_eq!(old.messages[0].text(), "from before");
    assert_eq!(
        old.owner, "",
        "a session from before owners belongs to no tenant"
    );
    // Listed for no owner (and unscoped), never for a named one.
    let ids = |page: tinyagent::store::SessionPage| {
        page.sessions.into_iter().map(|s| s.id).collect::<Vec<_>>()
    };
    let options = tinyagent::store::ListOptions::new();
    assert_eq!(ids(store.list(&options).await.unwrap()), ["old"]);
    assert_eq!(
        ids(store.list(&options.clone().owner("")).await.unwrap()),
        ["old"]
    );
    assert!(ids(store.list(&options.clone().owner("key-1")).await.unwrap()).is_empty());
    // A named owner cannot write to it; an owner-less write can.
    let theirs = tinyagent::store::Changes::new()
        .append([Message::user("mine now?")])
        .owner("key-1");
    assert!(matches!(
        store.commit("old", Some(1), &theirs).await,
        Err(StoreError::NotFound { .. })
    ));
    let unowned = tinyagent::store::Changes::new()
        .append([Message::user("still here")])
        .owner("");
    assert_eq!(store.commit("old", Some(1), &unowned).await.unwrap(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_died_is_finished_in_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let one = SqliteStore::open(&path).await.unwrap();
    let two = SqliteStore::open(&path).await.unwrap();
    conformance::a_run_that_died_is_finished_in_another_process(
        std::sync::Arc::new(one),
        std::sync::Arc::new(two),
    )
    .await;
}
