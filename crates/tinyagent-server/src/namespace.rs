//! Each tenant's own session ids: the store key of a tenant's id.
//!
//! A tenant's `chat-1` and another tenant's `chat-1` are two sessions, so that no tenant can
//! learn which ids another uses, nor take one before it. The sessions of no owner (a server
//! without keys, an admin key's own) are stored under their id, as they always were; a named
//! tenant's under `~` + 16 hex digits of a SHA-256 of its name + `/` + the id. The store keeps
//! the owner beside each session, so a key is read back (for lists) only when its prefix is
//! its owner's.
//!
//! Sessions a named tenant stored before ids were per tenant are under their bare id: a
//! tenant's id is looked up there first, and used there while that session is the tenant's
//! (see [`Scoped`](crate::scoped::Scoped)).

use sha2::{Digest, Sha256};

/// What hashes an owner's name into its prefix.
const LABEL: &[u8] = b"tinyagent session owner\0";

/// How many bytes a tenant's prefix takes: `~`, 16 hex digits, `/`.
pub(crate) const PREFIX_LEN: usize = 18;

/// The prefix of `owner`'s store keys (empty for no owner).
fn prefix(owner: &str) -> String {
    if owner.is_empty() {
        return String::new();
    }
    let digest = Sha256::new()
        .chain_update(LABEL)
        .chain_update(owner.as_bytes())
        .finalize();
    let mut prefix = String::with_capacity(PREFIX_LEN);
    prefix.push('~');
    for byte in &digest[..8] {
        prefix.push_str(&format!("{byte:02x}"));
    }
    prefix.push('/');
    prefix
}

/// The key in the server's store of the session a tenant (the API key named `owner`; `""`
/// for no owner: a server without keys, an admin key's own sessions) knows as `id`: for
/// tools that read the store itself. Sessions a named tenant stored before ids were per
/// tenant stay under their bare id.
///
/// ```
/// use tinyagent_server::store_key;
///
/// assert_eq!(store_key("", "chat-1"), "chat-1");
/// let alices = store_key("alice", "chat-1");
/// assert!(alices.starts_with('~') && alices.ends_with("/chat-1"));
/// assert_ne!(alices, store_key("bob", "chat-1"));
/// ```
pub fn store_key(owner: &str, id: &str) -> String {
    let mut key = prefix(owner);
    key.push_str(id);
    key
}

/// The id a client uses for the session stored under `key` and owned by `owner`: the key
/// without its owner's prefix (a key stored before ids were per tenant, or of no owner, is
/// its own id).
pub(crate) fn client_id(key: &str, owner: &str) -> String {
    if owner.is_empty() || key.len() < PREFIX_LEN || !key.starts_with('~') {
        return key.to_owned();
    }
    match key.strip_prefix(prefix(owner).as_str()) {
        Some(id) => id.to_owned(),
        None => key.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_have_their_own_keys_and_get_their_ids_back() {
        assert_eq!(store_key("", "chat-1"), "chat-1");
        let alice = store_key("alice", "chat-1");
        let bob = store_key("bob", "chat-1");
        assert_ne!(alice, bob);
        assert_eq!(alice.len(), PREFIX_LEN + "chat-1".len());
        assert!(
            alice.starts_with('~') && alice.ends_with("/chat-1"),
            "{alice}"
        );
        assert_eq!(client_id(&alice, "alice"), "chat-1");
        // Another owner's prefix is not stripped; a bare key is its own id.
        assert_eq!(client_id(&alice, "bob"), alice);
        assert_eq!(client_id("chat-1", "alice"), "chat-1");
        assert_eq!(client_id("~x/y", ""), "~x/y");
    }
}
