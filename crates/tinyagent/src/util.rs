//! Small pieces every layer shares.

use std::future::Future;
use std::pin::Pin;

/// A boxed, `Send` future: what object-safe async methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
