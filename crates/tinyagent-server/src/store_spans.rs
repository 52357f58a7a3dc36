//! [`TracedStore`]: the session store of a server, each operation a span (`session_store
//! {operation}`, kind client, `db.operation.name`, `error.type`), so its latency shows in the
//! traces and in `db.client.operation.duration`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tinyagent::BoxFuture;
use tinyagent::Message;
use tinyagent::store::{
    Changes, ListOptions, SessionInfo, SessionLock, SessionPage, SessionStore, StoreError,
    StoredSession,
};
use tracing::Instrument as _;
use tracing::field::Empty;

/// A store whose every operation runs in a span of its own.
pub(crate) struct TracedStore(pub(crate) Arc<dyn SessionStore>);

/// `error.type` of a store's failure.
fn error_type(err: &StoreError) -> &'static str {
    match err {
        StoreError::Conflict { .. } => "conflict",
        StoreError::Busy { .. } => "busy",
        StoreError::NotFound { .. } => "not_found",
        StoreError::AlreadyExists { .. } => "already_exists",
        StoreError::InvalidInput { .. } => "invalid_input",
        StoreError::Corrupt { .. } => "corrupt",
        _ => "backend",
    }
}

/// `operation` run in its span, its failure recorded there.
fn traced<'a, T: Send + 'a>(
    operation: &'static str,
    work: BoxFuture<'a, Result<T, StoreError>>,
) -> BoxFuture<'a, Result<T, StoreError>> {
    let span = tracing::info_span!(
        target: "tinyagent_server",
        "session_store",
        otel.name = format!("session_store {operation}"),
        otel.kind = "client",
        db.operation.name = operation,
        error.type = Empty,
        otel.status_code = Empty,
    );
    let recorder = span.clone();
    Box::pin(
        async move {
            let result = work.await;
            if let Err(err) = &result {
                recorder.record("error.type", error_type(err));
                recorder.record("otel.status_code", "ERROR");
            }
            result
        }
        .instrument(span),
    )
}

impl SessionStore for TracedStore {
    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<StoredSession>, StoreError>> {
        traced("load", self.0.load(id))
    }

    fn create<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionInfo, StoreError>> {
        traced("create", self.0.create(id))
    }

    fn commit<'a>(
        &'a self,
        id: &'a str,
        expected: Option<u64>,
        changes: &'a Changes,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        traced("commit", self.0.commit(id, expected, changes))
    }

    fn list<'a>(
        &'a self,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, Result<SessionPage, StoreError>> {
        traced("list", self.0.list(options))
    }

    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        traced("delete", self.0.delete(id))
    }

    fn set_ttl<'a>(
        &'a self,
        id: &'a str,
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        traced("set_ttl", self.0.set_ttl(id, ttl))
    }

    fn is_durable(&self) -> bool {
        self.0.is_durable()
    }

    fn lock<'a>(
        &'a self,
        id: &'a str,
        wait: Option<Duration>,
    ) -> BoxFuture<'a, Result<SessionLock, StoreError>> {
        traced("lock", self.0.lock(id, wait))
    }

    fn append<'a>(
        &'a self,
        id: &'a str,
        expected: u64,
        messages: Vec<Message>,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        traced("append", self.0.append(id, expected, messages))
    }

    fn get_state<'a>(
        &'a self,
        id: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>, StoreError>> {
        traced("get_state", self.0.get_state(id, key))
    }

    fn set_state<'a>(
        &'a self,
        id: &'a str,
        key: &'a str,
        value: Value,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        traced("set_state", self.0.set_state(id, key, value))
    }

    fn remove_state<'a>(
        &'a self,
        id: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        traced("remove_state", self.0.remove_state(id, key))
    }
}
