//! MCP's log levels as tinyagent's, and back: for the log messages a server sends its client.

#![allow(deprecated)] // rmcp marks logging deprecated (SEP-2577); both ends use it.

use tinyagent::host::LogLevel;

/// rmcp's level for ours, and back.
pub(crate) fn log_level(level: rmcp::model::LoggingLevel) -> LogLevel {
    use rmcp::model::LoggingLevel as L;
    match level {
        L::Debug => LogLevel::Debug,
        L::Info => LogLevel::Info,
        L::Notice => LogLevel::Notice,
        L::Warning => LogLevel::Warning,
        L::Error => LogLevel::Error,
        L::Critical => LogLevel::Critical,
        L::Alert => LogLevel::Alert,
        L::Emergency => LogLevel::Emergency,
    }
}

/// Our level for rmcp's.
pub(crate) fn wire_level(level: LogLevel) -> rmcp::model::LoggingLevel {
    use rmcp::model::LoggingLevel as L;
    match level {
        LogLevel::Debug => L::Debug,
        LogLevel::Info => L::Info,
        LogLevel::Notice => L::Notice,
        LogLevel::Warning => L::Warning,
        LogLevel::Error => L::Error,
        LogLevel::Critical => L::Critical,
        LogLevel::Alert => L::Alert,
        LogLevel::Emergency => L::Emergency,
    }
}
