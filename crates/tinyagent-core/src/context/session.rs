//! [`Session`]: a conversation's history and its state map, kept in memory.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value};

use crate::message::{Message, new_id};
use crate::util::lock;

/// The state map of a session: string keys, JSON values.
pub type State = Map<String, Value>;

struct Inner {
    id: String,
    state: Mutex<State>,
    history: Mutex<Vec<Message>>,
}

/// A conversation: an id, the history of messages of finished runs, and a state map that the
/// application, tools and resolvers read and write (a resolver may read the user's role with
/// `inv.session().get_str("role")`, say).
///
/// A `Session` is a cheap handle: clones share the same conversation. It lives in memory; to
/// keep conversations across restarts, or share them between processes, keep them in a
/// [`SessionStore`](crate::store::SessionStore) and run agents on them with a
/// `SessionRunner`.
///
/// An agent run reads the history before its first model call and appends the run's messages
/// (the user message, the assistant's and the tools') when it finishes with an answer; a run
/// that fails or is cancelled leaves the history as it was. State changes take effect at once.
///
/// ```
/// use serde_json::json;
/// use tinyagent::Session;
///
/// let session = Session::new();
/// session.set("role", "admin");
/// assert_eq!(session.get("role"), Some(json!("admin")));
/// assert_eq!(session.state()["role"], "admin");
///
/// let other = session.clone();
/// other.set("visits", 2);
/// assert_eq!(session.get("visits"), Some(json!(2)));
/// ```
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

impl Default for Session {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.inner.id)
            .field("state", &*self.state())
            .field("history_len", &self.len())
            .finish()
    }
}

impl Session {
    /// A new, empty session with a fresh id.
    pub fn new() -> Self {
        Self::from_id(new_id("ses"))
    }

    /// A new, empty session with this id.
    pub fn from_id(id: impl Into<String>) -> Self {
        Self {
            inner: Arc::new(Inner {
                id: id.into(),
                state: Mutex::new(State::new()),
                history: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The state map, locked for reading and writing. Keep the guard short: do not hold it
    /// across an `.await` (the compiler refuses to, in a `Send` future).
    pub fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.inner.state)
    }

    /// A copy of the value under `key`.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.state().get(key).cloned()
    }

    /// The value under `key` as a string, if it is one.
    pub fn get_str(&self, key: &str) -> Option<String> {
        match self.state().get(key) {
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        }
    }

    /// Sets `key` to `value`, returning the previous value.
    pub fn set(&self, key: impl Into<String>, value: impl Into<Value>) -> Option<Value> {
        self.state().insert(key.into(), value.into())
    }

    /// Removes `key`, returning its value.
    pub fn remove(&self, key: &str) -> Option<Value> {
        self.state().remove(key)
    }

    /// A copy of the history, oldest first.
    pub fn messages(&self) -> Vec<Message> {
        lock(&self.inner.history).clone()
    }

    /// Copies of the messages appended after `earlier`, when the history still begins with
    /// `earlier` (`None` when one of those messages was changed or removed): what a run added
    /// to a history it was given, copied once.
    ///
    /// ```
    /// use tinyagent::{Message, Session};
    ///
    /// let stored = vec![Message::user("hi"), Message::assistant("hello")];
    /// let session = Session::new();
    /// session.append(stored.clone());
    /// session.append([Message::user("how are you?")]);
    /// let new = session.appended_since(&stored).unwrap();
    /// assert_eq!(new.len(), 1);
    /// assert_eq!(new[0].text(), "how are you?");
    /// assert!(session.appended_since(&[Message::user("bye")]).is_none());
    /// ```
    pub fn appended_since(&self, earlier: &[Message]) -> Option<Vec<Message>> {
        let history = lock(&self.inner.history);
        let new = history.get(earlier.len()..)?;
        (history[..earlier.len()] == *earlier).then(|| new.to_vec())
    }

    /// The number of messages in the history.
    pub fn len(&self) -> usize {
        lock(&self.inner.history).len()
    }

    /// Whether the history is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends messages to the history.
    pub fn append(&self, messages: impl IntoIterator<Item = Message>) {
        lock(&self.inner.history).extend(messages);
    }

    /// Empties the history (the state stays).
    pub fn clear_history(&self) {
        lock(&self.inner.history).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_is_shared_between_clones() {
        let s = Session::new();
        assert!(s.is_empty());
        s.clone()
            .append([Message::user("hi"), Message::assistant("hello")]);
        assert_eq!(s.len(), 2);
        assert_eq!(s.messages()[1].text(), "hello");
        s.clear_history();
        assert!(s.is_empty());
        assert!(s.id().starts_with("ses_"));
        assert_eq!(s.get_str("missing"), None);
        s.set("n", 1);
        assert_eq!(s.get_str("n"), None);
        assert_eq!(s.remove("n"), Some(Value::from(1)));
    }
}
