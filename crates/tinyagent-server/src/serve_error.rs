//! [`ServeError`]: why a [`Server`](crate::Server) could not start, or stopped.

use std::net::SocketAddr;

/// Why [`Server::serve`](crate::Server::serve) could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// No API keys, and an address that is not loopback.
    #[error(
        "refusing to serve on {addr} without API keys: anyone who can reach it could use the \
         agents; add API keys, listen on a loopback address (127.0.0.1), or allow \
         unauthenticated access explicitly"
    )]
    Unauthenticated {
        /// The address.
        addr: SocketAddr,
    },
    /// No agent to serve.
    #[error("no agent to serve: add one with Server::agent")]
    NoAgents,
    /// A pinned or capped request field cannot be used.
    #[error("the request fields the operator set cannot be used: {problem}")]
    Parameters {
        /// What is wrong.
        problem: String,
    },
    /// Two keys have one name (the admin key's included): they would be one tenant.
    #[error(
        "two API keys are named {name:?}{}: a key's name is the tenant whose sessions it sees, \
         so each key needs a name of its own",
        if *admin { " (one of them the admin key, named \"admin\" unless named otherwise)" } else { "" }
    )]
    DuplicateKeyName {
        /// The name.
        name: String,
        /// Whether one of the two is an admin key.
        admin: bool,
    },
    /// One secret is given as two keys.
    #[error("the keys named {:?} and {:?} have the same secret: give each key its own", names.0, names.1)]
    DuplicateKey {
        /// The names of the two keys.
        names: (String, String),
    },
    /// A key's name cannot be used.
    #[error("the API key name {name:?} cannot be used: {problem}")]
    KeyName {
        /// The name.
        name: String,
        /// Why.
        problem: String,
    },
    /// The listener failed.
    #[error("the server's listener failed: {0}")]
    Io(#[from] std::io::Error),
}
