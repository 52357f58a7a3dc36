//! Which log messages of a served call go to the client: the session's `logging/setLevel`,
//! or on protocol 2026-07-28 and later the request's own level.

use std::sync::{Arc, Mutex, PoisonError};

use tinyagent::host::LogLevel;

use crate::protocol::logging::log_level;

/// The log level a session's client asked for with `logging/setLevel` (`None`: every message
/// is sent). Sessions of the initialize handshake keep it; on connections of protocol
/// 2026-07-28 and later each request says its level in `_meta` instead.
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionLogLevel(Arc<Mutex<Option<LogLevel>>>);

impl SessionLogLevel {
    pub(crate) fn set(&self, level: LogLevel) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(level);
    }

    fn allows(&self, level: LogLevel) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none_or(|min| level >= min)
    }
}

/// Which log messages of one request go to the client.
#[derive(Debug, Clone)]
pub(crate) enum LogFilter {
    /// The request's own `_meta` level (protocol 2026-07-28 and later): at or above it.
    Request(LogLevel),
    /// A request of protocol 2026-07-28 or later that did not opt in: none.
    Off,
    /// The session's `logging/setLevel` (the initialize handshake's sessions).
    Session(SessionLogLevel),
}

impl LogFilter {
    /// The filter of a request: its `_meta` level, else none on connections that have
    /// per-request levels, else the session's.
    pub(crate) fn for_request(
        meta: &rmcp::model::RequestMetaObject,
        stateless: bool,
        session: &SessionLogLevel,
    ) -> Self {
        if let Some(level) = meta.log_level() {
            Self::Request(log_level(level))
        } else if stateless {
            Self::Off
        } else {
            Self::Session(session.clone())
        }
    }

    pub(crate) fn allows(&self, level: LogLevel) -> bool {
        match self {
            Self::Request(min) => level >= *min,
            Self::Off => false,
            Self::Session(session) => session.allows(level),
        }
    }
}
