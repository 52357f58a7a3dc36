//! [`SqliteStore`]: sessions in an SQLite file.

use std::path::Path;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use tinyagent_core::store::StoreError;

#[cfg(doc)]
use crate::lease::DEFAULT_LEASE;
use crate::sql::db_err;
use crate::sql_store::SqlStore;

/// Sessions in an SQLite file: the embedded default. The history survives restarts of the
/// process; the file can be copied, inspected with `sqlite3`, and backed up.
///
/// The file is created if missing, opened in WAL mode (readers do not wait for the writer)
/// with `synchronous = NORMAL`, and its schema migrated on [`open`](Self::open). Writes are
/// transactions taken with `BEGIN IMMEDIATE`; a writer waits up to 5 s for another (the busy
/// timeout).
///
/// `synchronous = NORMAL` is SQLite's advice for WAL mode: a committed turn survives the
/// process being killed, and the file is never corrupted; a power cut may lose the last
/// turns. It spares a commit its disk flush (a turn's commit took 3.5 ms with `FULL` and
/// 1.0 ms with `NORMAL` on a loaded 2-core machine; the crate's `store` bench measures it).
/// For `FULL`, open a pool with your own options and use [`from_pool`](SqlStore::from_pool).
///
/// [`lock`](tinyagent_core::store::SessionStore::lock) takes an in-process lock, then a lease row in the
/// file, so it also holds against other processes using the same file. A lease lasts
/// [`DEFAULT_LEASE`] unless its run renews it (it does, every third of that), so a killed
/// process frees its sessions after at most that long.
///
/// ```
/// use tinyagent::Message;
/// use tinyagent::store::SessionStore;
/// use tinyagent_store::SqliteStore;
///
/// # tokio_test::block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("sessions.db");
/// let store = SqliteStore::open(&path).await.unwrap();
/// store.append("ses_1", 0, vec![Message::user("hi")]).await.unwrap();
/// drop(store);
///
/// // Another process, or the same after a restart.
/// let store = SqliteStore::open(&path).await.unwrap();
/// let session = store.load("ses_1").await.unwrap().unwrap();
/// assert_eq!(session.messages[0].text(), "hi");
/// # });
/// ```
pub type SqliteStore = SqlStore<sqlx::Sqlite>;

impl SqlStore<sqlx::Sqlite> {
    /// Opens (creating if needed) the SQLite file at `path` and migrates its schema.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(std::time::Duration::from_secs(5))
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .connect_with(options)
            .await
            .map_err(db_err::<sqlx::Sqlite>)?;
        Self::from_pool(pool).await
    }
}
