//! [`with_cache`]: results of read-only or idempotent tools, cached by canonical input.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::canonical::canonical_json;
use super::layer::ToolLayer;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::util::BoxFuture;
use crate::{Handler, Tool, ToolInput, ToolOutput};

/// Caches successful results of tools whose hints say a repeat is harmless.
///
/// Only tools marked [read-only or idempotent](crate::ToolHints::is_repeatable) are cached;
/// any other tool is passed through untouched (a cached answer would hide the effect the
/// caller asked for), unless [`ignore_hints`](Self::ignore_hints) says otherwise.
///
/// The key is the tool's name and the exact [canonical JSON](canonical_json) of the arguments,
/// so `{"a":1,"b":2}` and `{ "b": 2, "a": 1 }` share an entry while numbers that differ in any
/// digit do not; arguments that are not JSON, or have no one meaning (duplicate keys, lone
/// surrogates), are never cached and go on to the tool, whose validation refuses them. Errors are never cached. An entry lives for the [`ttl`](Self::ttl) (default
/// 5 minutes); when the cache holds [`capacity`](Self::capacity) entries (default 1024),
/// expired entries are dropped first, then the least recently used. The call context (call
/// id, extensions) is not part of the key. Two identical calls that miss at the same time both
/// run. Each wrapped tool gets its own cache.
///
/// ```
/// use std::time::Duration;
/// use tinyagent::tools::{self, middleware::CacheLayer};
///
/// let weather = tools::wrap_tool(tinyagent_demo::weather_tool(),
///     [CacheLayer::new().ttl(Duration::from_secs(60)).capacity(100).into()]);
/// # let _ = weather;
/// ```
#[derive(Debug, Clone, Copy)]
pub struct CacheLayer {
    ttl: Duration,
    capacity: usize,
    ignore_hints: bool,
}

impl Default for CacheLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl CacheLayer {
    /// A cache of 1024 entries per tool, each kept for 5 minutes.
    pub fn new() -> Self {
        Self {
            ttl: Duration::from_secs(300),
            capacity: 1024,
            ignore_hints: false,
        }
    }

    /// How long an entry is served after it was stored.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The most entries kept per tool; 0 turns caching off.
    #[must_use]
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// Caches every tool, even one whose hints say repeating it is not safe (default `false`).
    #[must_use]
    pub fn ignore_hints(mut self, ignore: bool) -> Self {
        self.ignore_hints = ignore;
        self
    }
}

impl ToolLayer for CacheLayer {
    fn layer(&self, tool: &dyn Tool, next: Arc<dyn Handler>) -> Arc<dyn Handler> {
        if self.capacity == 0 || !(self.ignore_hints || tool.hints().is_repeatable()) {
            return next;
        }
        Arc::new(CacheHandler {
            next,
            tool_name: tool.name().into(),
            config: *self,
            store: Mutex::new(Store::default()),
        })
    }
}

struct Entry {
    value: ToolOutput,
    expires: Instant,
    last_used: u64,
}

#[derive(Default)]
struct Store {
    entries: HashMap<String, Entry>,
    clock: u64,
}

impl Store {
    fn get(&mut self, key: &str, now: Instant) -> Option<ToolOutput> {
        self.clock += 1;
        let entry = self.entries.get_mut(key)?;
        if entry.expires <= now {
            self.entries.remove(key);
            return None;
        }
        entry.last_used = self.clock;
        Some(entry.value.clone())
    }

    fn insert(
        &mut self,
        key: String,
        value: ToolOutput,
        expires: Instant,
        capacity: usize,
        now: Instant,
    ) {
        self.clock += 1;
        if self.entries.len() >= capacity && !self.entries.contains_key(&key) {
            self.entries.retain(|_, e| e.expires > now);
            if self.entries.len() >= capacity
                && let Some(oldest) = self
                    .entries
                    .iter()
                    .min_by_key(|(_, e)| e.last_used)
                    .map(|(k, _)| k.clone())
            {
                self.entries.remove(&oldest);
            }
        }
        self.entries.insert(
            key,
            Entry {
                value,
                expires,
                last_used: self.clock,
            },
        );
    }
}

struct CacheHandler {
    next: Arc<dyn Handler>,
    tool_name: Arc<str>,
    config: CacheLayer,
    store: Mutex<Store>,
}

impl CacheHandler {
    fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Handler for CacheHandler {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let Some(canonical) = canonical_json(input.text()) else {
            return self.next.call(ctx, input);
        };
        let key = format!("{}\u{0}{canonical}", self.tool_name);
        if let Some(hit) = self.store().get(&key, Instant::now()) {
            tracing::debug!(
                gen_ai.tool.name = &*self.tool_name,
                "tool result served from cache"
            );
            return Box::pin(std::future::ready(Ok(hit)));
        }
        Box::pin(async move {
            let output = self.next.call(ctx, input).await?;
            let now = Instant::now();
            let expires = now
                .checked_add(self.config.ttl)
                .unwrap_or(now + Duration::from_secs(86_400 * 365));
            self.store()
                .insert(key, output.clone(), expires, self.config.capacity, now);
            Ok(output)
        })
    }
}
