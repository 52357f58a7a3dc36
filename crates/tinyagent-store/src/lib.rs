//! Session stores for [tinyagent](https://docs.rs/tinyagent): conversations that survive
//! restarts and that several processes share.
//!
//! | store | feature | for |
//! |---|---|---|
//! | [`MemoryStore`](tinyagent_core::store::MemoryStore) | (the core) | tests, one process, nothing kept |
//! | [`SqliteStore`] | `sqlite` (default) | one machine: a file that survives restarts |
//! | [`PostgresStore`] | `postgres` | several processes or machines |
//! | [`RedisStore`] | `redis` | several processes, expiry by Redis's own TTLs |
//!
//! Every store implements [`SessionStore`](tinyagent_core::store::SessionStore): version-checked commits,
//! state, paged lists by recency, deletion, expiry and per-session locks. Messages and state
//! values are kept as JSON text in the documented serde shape of
//! [`Message`](tinyagent_core::Message), so other programs can read them. The SQL stores migrate
//! their schema on connect ([`SCHEMA_VERSION`]); data a store cannot read back is reported as
//! [`StoreError::Corrupt`](tinyagent_core::store::StoreError::Corrupt), never by a panic.
//!
//! Run an agent on a stored session with [`SessionRunner`](https://docs.rs/tinyagent/latest/tinyagent/agent/struct.SessionRunner.html):
//!
//! ```
//! use tinyagent::LlmAgent;
//! use tinyagent::agent::SessionRunner;
//! use tinyagent::testing::{ScriptedModel, reply};
//! use tinyagent_store::SqliteStore;
//!
//! # tokio_test::block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! let store = SqliteStore::open(dir.path().join("sessions.db")).await.unwrap();
//! let model = ScriptedModel::new([reply::text("Hello!")]);
//! let agent = LlmAgent::builder("greeter").model(model).build().unwrap();
//! let runner = SessionRunner::new(agent, store);
//! assert_eq!(runner.ask("ses_1", "hi").await.unwrap(), "Hello!");
//! # });
//! ```

#[cfg(any(feature = "sqlite", feature = "postgres", feature = "redis"))]
mod codec;
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "redis"))]
mod keeping;
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "redis"))]
mod lease;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "redis")]
mod redis_scripts;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql_store;
#[cfg(feature = "sqlite")]
mod sqlite;

#[cfg(any(feature = "sqlite", feature = "postgres", feature = "redis"))]
pub use lease::DEFAULT_LEASE;
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
#[cfg(feature = "redis")]
pub use redis::RedisStore;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use sql::Dialect;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use sql::SCHEMA_VERSION;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use sql_store::SqlStore;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;
