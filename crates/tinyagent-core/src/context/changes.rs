//! [`Changes`]: what one run wrote to a session, committed in one version-checked write.

use serde_json::Value;

use super::session::State;
use crate::message::Message;

/// One write to a session: messages to append to its history and state keys to set or
/// remove, applied together or not at all by [`SessionStore::commit`].
///
/// [`SessionStore::commit`]: crate::store::SessionStore::commit
///
/// ```
/// use serde_json::json;
/// use tinyagent::Message;
/// use tinyagent::store::Changes;
///
/// let changes = Changes::new()
///     .append([Message::user("hi"), Message::assistant("hello")])
///     .set("role", json!("admin"))
///     .remove("draft");
/// assert_eq!(changes.messages.len(), 2);
/// assert_eq!(changes.state[1], ("draft".to_owned(), None));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Changes {
    /// Messages to append, in order.
    pub messages: Vec<Message>,
    /// State changes in order: `Some(value)` sets the key, `None` removes it.
    pub state: Vec<(String, Option<Value>)>,
    /// The tenant the write is made for. With `Some(owner)`, the commit only applies to a
    /// session of that owner: a session that exists with another owner is
    /// [`StoreError::NotFound`] (nothing written), and a session the commit creates belongs to
    /// `owner`. With `None` (the default) ownership is neither checked nor set: a session the
    /// commit creates has no owner (the empty string).
    ///
    /// [`StoreError::NotFound`]: crate::store::StoreError::NotFound
    pub owner: Option<String>,
    /// Whether the commit applies only to a session that exists: with `true`, a session that
    /// does not exist (or has expired) is [`StoreError::NotFound`] and nothing is created.
    /// With `false` (the default) the commit creates a missing session. Every store honours
    /// it; [`SessionStore::remove_state`](crate::store::SessionStore::remove_state) relies on it.
    ///
    /// [`StoreError::NotFound`]: crate::store::StoreError::NotFound
    pub must_exist: bool,
}

impl Changes {
    /// No changes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds messages to append.
    #[must_use]
    pub fn append(mut self, messages: impl IntoIterator<Item = Message>) -> Self {
        self.messages.extend(messages);
        self
    }

    /// Adds a state key to set.
    #[must_use]
    pub fn set(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.state.push((key.into(), Some(value.into())));
        self
    }

    /// Adds a state key to remove.
    #[must_use]
    pub fn remove(mut self, key: impl Into<String>) -> Self {
        self.state.push((key.into(), None));
        self
    }

    /// Makes the write one for this tenant (see [`Changes::owner`]).
    #[must_use]
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }

    /// Makes the commit apply only to a session that exists (see [`Changes::must_exist`]).
    #[must_use]
    pub fn must_exist(mut self, must_exist: bool) -> Self {
        self.must_exist = must_exist;
        self
    }

    /// Whether the commit may touch a session of `owner`: always without an owner of its
    /// own, else only when the owners are the same.
    pub fn may_write(&self, owner: &str) -> bool {
        self.owner.as_deref().is_none_or(|o| o == owner)
    }

    /// Whether there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty() && self.state.is_empty()
    }

    /// The changes that turn state `before` into state `after`: keys whose value differs are
    /// set, keys gone from `after` are removed; keys equal in both are left out, so a writer
    /// never overwrites a key it did not change.
    pub fn state_diff(before: &State, after: &State) -> Self {
        let mut changes = Self::new();
        for (key, value) in after {
            if before.get(key) != Some(value) {
                changes.state.push((key.clone(), Some(value.clone())));
            }
        }
        for key in before.keys() {
            if !after.contains_key(key) {
                changes.state.push((key.clone(), None));
            }
        }
        changes
    }
}
