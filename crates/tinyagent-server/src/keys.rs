//! [`KeyRing`]: the API keys a server knows, found by value in constant time, by name.

use std::sync::Arc;

use subtle::{Choice, ConstantTimeEq};

/// The id under which requests are counted and logged when the server has no keys.
pub(crate) const ANONYMOUS: &str = "anonymous";

/// The configured keys: `(id, secret)` pairs. Names are shared (`Arc<str>`): every request
/// carries its key's name to the handlers and the log without copying it.
pub(crate) struct KeyRing {
    pub(crate) keys: Vec<(Arc<str>, Vec<u8>)>,
    pub(crate) anonymous: Arc<str>,
}

impl KeyRing {
    pub(crate) fn new(keys: Vec<(String, String)>) -> Self {
        Self {
            keys: keys
                .into_iter()
                .map(|(id, key)| (Arc::from(id), key.into_bytes()))
                .collect(),
            anonymous: Arc::from(ANONYMOUS),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The id of the key `given` is, comparing it with every key in constant time (no early
    /// exit on the first match, nor on the first differing byte).
    pub(crate) fn find(&self, given: &[u8]) -> Option<&Arc<str>> {
        let mut found: Option<&Arc<str>> = None;
        for (id, key) in &self.keys {
            let equal: Choice = key.as_slice().ct_eq(given);
            if bool::from(equal) && found.is_none() {
                found = Some(id);
            }
        }
        found
    }
}
