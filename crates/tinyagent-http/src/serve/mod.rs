//! Serving HTTP safely (feature `server`): the accept loop both of tinyagent's servers run
//! (`tinyagent serve` and an MCP server over HTTP), and the `Host` rule that keeps a loopback
//! server from being driven through DNS rebinding.
//!
//! - [`serve`]: HTTP/1 connections with a header-read timeout (also the idle keep-alive time),
//!   at most [`ConnLimits::max_connections`] at once (one more gets the caller's refusal and is
//!   closed), `TCP_NODELAY`, a write timeout that drops a client that reads nothing, and a
//!   graceful shutdown;
//! - [`Arrival`]: where a connection arrived, set on every request;
//! - [`host_allowed`] and [`split_host`]: the `Host` rule.

mod listen;
mod site;
mod write_timeout;

pub use listen::{ConnLimits, serve};
pub use site::{Arrival, host_allowed, is_loopback_name, split_host};
pub use write_timeout::WriteTimeout;
