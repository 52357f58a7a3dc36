//! The conformance suite against a real PostgreSQL server (started by `scripts/services.sh`),
//! and what is PostgreSQL's own: replicas sharing it, migrations, corrupt rows.
#![cfg(feature = "postgres")]

mod conformance;
mod services;

use std::time::Duration;

use tinyagent::Message;
use tinyagent::store::{SessionStore, StoreError};
use tinyagent_store::{PostgresStore, SCHEMA_VERSION};

/// A store on the test server, or `None` when service tests are skipped.
async fn try_store() -> Option<PostgresStore> {
    let url = services::url("TINYAGENT_TEST_POSTGRES_URL", "PostgreSQL")?;
    let store = PostgresStore::connect(&url).await.unwrap_or_else(|err| {
        panic!("cannot use the PostgreSQL of TINYAGENT_TEST_POSTGRES_URL ({url}): {err}; start it with `bash scripts/services.sh start`")
    });
    Some(store)
}

macro_rules! store {
    () => {
        match try_store().await {
            Some(store) => store,
            None => return,
        }
    };
}

conformance_tests!(store!());

#[tokio::test]
async fn the_stores_ttl_applies() {
    let mut ttl = Duration::from_millis(60);
    while !conformance::store_ttl(&store!().ttl(ttl), ttl).await {
        ttl = conformance::longer_ttl(ttl);
    }
}

#[tokio::test]
async fn the_history_survives_a_reconnect() {
    let _ = store!();
    conformance::restart_between_turns(|| async { try_store().await.unwrap() }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_connecting_at_once_migrate_once() {
    let _ = store!();
    let stores = futures::future::join_all((0..4).map(|_| try_store())).await;
    for store in stores {
        assert_eq!(
            store.unwrap().schema_version().await.unwrap(),
            SCHEMA_VERSION
        );
    }
}

#[tokio::test]
async fn a_lock_holds_across_replicas() {
    let one = store!();
    conformance::lock_across_processes(&one, &try_store().await.unwrap()).await;
}

#[tokio::test]
async fn a_lease_whose_replica_died_expires() {
    let one = store!().lease(Duration::from_millis(100));
    let two = try_store().await.unwrap();
    let id = conformance::fresh("dead");
    std::mem::forget(one.lock(&id, None).await.unwrap());
    one.pool().close().await;
    two.lock(&id, Some(Duration::from_secs(30)))
        .await
        .expect("the dead replica's lease ran out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_paused_in_one_process_is_resumed_in_another_and_pays_once() {
    let one = store!();
    let two = try_store().await.unwrap();
    conformance::pause_in_one_process_resume_in_another(
        std::sync::Arc::new(one),
        std::sync::Arc::new(two),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_answer_turns_of_one_conversation() {
    let one = store!();
    let two = try_store().await.unwrap();
    conformance::runners_on_two_stores(std::sync::Arc::new(one), std::sync::Arc::new(two)).await;
}

#[tokio::test]
async fn corrupt_rows_are_clear_errors() {
    let store = store!();
    let id = conformance::fresh("corrupt");
    store
        .append(&id, 0, vec![Message::user("a"), Message::user("b")])
        .await
        .unwrap();
    store
        .set_state(&id, "k", serde_json::json!(1))
        .await
        .unwrap();
    sqlx::query("UPDATE tinyagent_messages SET body = '[1, 2' WHERE session_id = $1 AND seq = 1")
        .bind(&id)
        .execute(store.pool())
        .await
        .unwrap();
    let err = store.load(&id).await.unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("message #1"), "{err}");
    sqlx::query("UPDATE tinyagent_sessions SET version = -5 WHERE id = $1")
        .bind(&id)
        .execute(store.pool())
        .await
        .unwrap();
    let err = store.load(&id).await.unwrap_err();
    assert!(
        err.to_string().contains("its version is negative (-5)"),
        "{err}"
    );
    sqlx::query("UPDATE tinyagent_state SET value = '{' WHERE session_id = $1")
        .bind(&id)
        .execute(store.pool())
        .await
        .unwrap();
    let err = store.get_state(&id, "k").await.unwrap_err();
    assert!(err.to_string().contains("does not hold JSON"), "{err}");
    // A corrupt session neither breaks lists nor resists deletion.
    let listed = conformance::all_ids(&store).await;
    assert!(!listed.contains(&id), "left out of lists");
    assert!(store.delete(&id).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_died_is_finished_in_another_process() {
    let one = store!();
    let two = try_store().await.unwrap();
    conformance::a_run_that_died_is_finished_in_another_process(
        std::sync::Arc::new(one),
        std::sync::Arc::new(two),
    )
    .await;
}
