//! The conformance suite against a real Redis server (started by `scripts/services.sh`), and
//! what is Redis's own: processes sharing it, corrupt values.
#![cfg(feature = "redis")]

mod conformance;
mod services;

use std::time::Duration;

use tinyagent::Message;
use tinyagent::store::{SessionStore, StoreError};
use tinyagent_store::RedisStore;

/// A store on the test server, or `None` when service tests are skipped.
async fn try_store() -> Option<RedisStore> {
    let url = services::url("TINYAGENT_TEST_REDIS_URL", "Redis")?;
    let store = RedisStore::connect(&url).await.unwrap_or_else(|err| {
        panic!("cannot use the Redis of TINYAGENT_TEST_REDIS_URL ({url}): {err}; start it with `bash scripts/services.sh start`")
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

#[tokio::test]
async fn a_lock_holds_across_processes() {
    let one = store!();
    conformance::lock_across_processes(&one, &try_store().await.unwrap()).await;
}

#[tokio::test]
async fn a_lease_whose_process_died_expires() {
    let one = store!().lease(Duration::from_millis(100));
    let two = try_store().await.unwrap();
    let id = conformance::fresh("dead");
    // A dead process neither renews nor releases: its guard is never dropped. (Its renewal
    // task would go on in this process: it stops when the lease is found taken by another.)
    let lease_key = one.key("lock", &id);
    std::mem::forget(one.lock(&id, None).await.unwrap());
    let mut conn = one.connection().clone();
    // Stand-in for the dead process's renewals stopping: overwrite its lease with one that
    // runs out.
    let _: () = redis::cmd("SET")
        .arg(&lease_key)
        .arg("dead-process")
        .arg("PX")
        .arg(100)
        .query_async(&mut conn)
        .await
        .unwrap();
    two.lock(&id, Some(Duration::from_secs(30)))
        .await
        .expect("the dead process's lease ran out");
}

#[tokio::test]
async fn keys_of_different_prefixes_do_not_meet() {
    let a = store!().prefix(&conformance::fresh("pa"));
    let b = try_store().await.unwrap().prefix(&conformance::fresh("pb"));
    a.append("same-id", 0, vec![Message::user("a")])
        .await
        .unwrap();
    assert!(b.load("same-id").await.unwrap().is_none());
    assert!(a.delete("same-id").await.unwrap());
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
async fn corrupt_values_are_clear_errors() {
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
    let mut conn = store.connection().clone();
    let _: () = redis::cmd("LSET")
        .arg(store.key("msgs", &id))
        .arg(1)
        .arg("[1, 2")
        .query_async(&mut conn)
        .await
        .unwrap();
    let err = store.load(&id).await.unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("message #1"), "{err}");

    let _: () = redis::cmd("HSET")
        .arg(store.key("state", &id))
        .arg("k")
        .arg("{")
        .query_async(&mut conn)
        .await
        .unwrap();
    let err = store.get_state(&id, "k").await.unwrap_err();
    assert!(err.to_string().contains("does not hold JSON"), "{err}");

    let _: () = redis::cmd("HSET")
        .arg(store.key("meta", &id))
        .arg("version")
        .arg("many")
        .query_async(&mut conn)
        .await
        .unwrap();
    let err = store.load(&id).await.unwrap_err();
    assert!(
        err.to_string().contains("its version is not a number"),
        "{err}"
    );
    let err = store
        .append(&id, 0, vec![Message::user("c")])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    // Neither lists nor deletion break on it.
    assert!(!conformance::all_ids(&store).await.contains(&id));
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
