//! The conformance suite against the core's in-memory store.

mod conformance;

use std::time::Duration;

use tinyagent::store::MemoryStore;

conformance_tests!(MemoryStore::new());

#[tokio::test]
async fn the_stores_ttl_applies() {
    let mut ttl = Duration::from_millis(60);
    while !conformance::store_ttl(&MemoryStore::new().ttl(ttl), ttl).await {
        ttl = conformance::longer_ttl(ttl);
    }
}

#[tokio::test]
async fn a_restart_keeps_nothing_in_memory_but_one_store_keeps_all() {
    let store = MemoryStore::new();
    conformance::restart_between_turns(|| {
        let store = store.clone();
        async move { store }
    })
    .await;
}
