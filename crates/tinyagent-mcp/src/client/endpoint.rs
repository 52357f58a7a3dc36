//! Where an MCP server is: a child process or a streamable HTTP URL; and the secrets sent to
//! it, kept out of `Debug` output and logs.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// A header value or token: kept out of `Debug` output and logs.
#[derive(Clone)]
pub(super) struct Secret(pub(super) Arc<str>);

/// Where the server is.
#[derive(Clone)]
pub(super) enum Endpoint {
    /// A child process speaking MCP over its stdin and stdout.
    Command {
        program: OsString,
        args: Vec<OsString>,
        envs: Vec<(OsString, Option<OsString>)>,
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http { url: String },
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Command { program, args, .. } => f
                .debug_struct("Command")
                .field("program", program)
                .field("args", args)
                .finish_non_exhaustive(),
            Self::Http { url } => f
                .debug_struct("Http")
                .field("url", &tinyagent::redact::url(url))
                .finish(),
        }
    }
}
