//! [`KeyRing`]: the API keys a server knows, found by value in constant time; and the names of
//! keys given without one.

use std::collections::HashMap;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};

/// The id under which requests are counted and logged when the server has no keys.
pub(crate) const ANONYMOUS: &str = "anonymous";

/// What hashes a secret into the name of a key given without one (so that the name is no
/// plain SHA-256 of the secret, which tables of common secrets might list).
const NAME_LABEL: &[u8] = b"tinyagent api key name\0";

/// A key as configured: its name (the tenant), its secret, and whether it is an admin key.
#[derive(Clone)]
pub(crate) struct ApiKey {
    pub(crate) name: String,
    pub(crate) secret: String,
    pub(crate) admin: bool,
}

/// The name of a key given without one: `key-` and 8 hex digits of a SHA-256 of the secret.
/// The same secret always has the same name (across restarts, whatever other keys come and
/// go), and 32 bits of a hash say nothing of the secret.
pub(crate) fn derived_name(secret: &str) -> String {
    let digest = Sha256::new()
        .chain_update(NAME_LABEL)
        .chain_update(secret.as_bytes())
        .finalize();
    let mut name = String::from("key-");
    for byte in &digest[..4] {
        name.push_str(&format!("{byte:02x}"));
    }
    name
}

/// Why keys cannot be served together, if they cannot: two of one name, one secret twice, a
/// name with control or format characters.
pub(crate) fn check(keys: &[ApiKey]) -> Result<(), crate::serve_error::ServeError> {
    let mut names: HashMap<&str, &ApiKey> = HashMap::new();
    for key in keys {
        if let Some(bad) = key
            .name
            .chars()
            .find(|c| c.is_control() || crate::ids::is_format(*c))
        {
            return Err(crate::serve_error::ServeError::KeyName {
                name: key.name.clone(),
                problem: format!(
                    "it holds the invisible character U+{:04X}, which would look like another \
                     name in logs and on the page",
                    u32::from(bad)
                ),
            });
        }
        if let Some(first) = names.insert(&key.name, key) {
            return Err(crate::serve_error::ServeError::DuplicateKeyName {
                name: key.name.clone(),
                admin: first.admin || key.admin,
            });
        }
    }
    for (i, key) in keys.iter().enumerate() {
        if let Some(other) = keys[i + 1..].iter().find(|o| o.secret == key.secret) {
            return Err(crate::serve_error::ServeError::DuplicateKey {
                names: (key.name.clone(), other.name.clone()),
            });
        }
    }
    Ok(())
}

/// A configured key, as the ring holds it. Names are shared (`Arc<str>`): every request carries
/// its key's name to the handlers and the log without copying it.
pub(crate) struct Entry {
    pub(crate) name: Arc<str>,
    secret: Vec<u8>,
    pub(crate) admin: bool,
}

/// The configured keys.
pub(crate) struct KeyRing {
    pub(crate) keys: Vec<Entry>,
    pub(crate) anonymous: Arc<str>,
    /// Whether the server was given no keys (refused keys do not make it keyless).
    keyless: bool,
}

impl KeyRing {
    /// The ring of `keys`. Keys that [`check`] refuses are all left out (each is refused:
    /// two keys of one name must not share a tenant, nor one secret two), so that a server
    /// mounted with [`Server::router`](crate::Server::router), which cannot refuse to start,
    /// fails closed.
    pub(crate) fn new(keys: Vec<ApiKey>) -> Self {
        let keyless = keys.is_empty();
        let mut keys = keys;
        while let Err(err) = check(&keys) {
            tracing::error!(error = %err, "API keys refused");
            let refused: Vec<String> = match &err {
                crate::serve_error::ServeError::DuplicateKeyName { name, .. }
                | crate::serve_error::ServeError::KeyName { name, .. } => vec![name.clone()],
                crate::serve_error::ServeError::DuplicateKey { names } => {
                    vec![names.0.clone(), names.1.clone()]
                }
                _ => Vec::new(),
            };
            let secrets: Vec<String> = keys
                .iter()
                .filter(|k| refused.contains(&k.name))
                .map(|k| k.secret.clone())
                .collect();
            let before = keys.len();
            keys.retain(|k| !refused.contains(&k.name) && !secrets.contains(&k.secret));
            if keys.len() == before {
                break;
            }
        }
        Self {
            keys: keys
                .into_iter()
                .map(|key| Entry {
                    name: Arc::from(key.name),
                    secret: key.secret.into_bytes(),
                    admin: key.admin,
                })
                .collect(),
            anonymous: Arc::from(ANONYMOUS),
            keyless,
        }
    }

    /// Whether the server has no keys (one tenant, open to whoever reaches it).
    pub(crate) fn is_empty(&self) -> bool {
        self.keyless
    }

    /// The key `given` is, comparing it with every key in constant time (no early exit on the
    /// first match, nor on the first differing byte).
    pub(crate) fn find(&self, given: &[u8]) -> Option<&Entry> {
        let mut found: Option<&Entry> = None;
        for entry in &self.keys {
            let equal: Choice = entry.secret.as_slice().ct_eq(given);
            if bool::from(equal) && found.is_none() {
                found = Some(entry);
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str, secret: &str, admin: bool) -> ApiKey {
        ApiKey {
            name: name.into(),
            secret: secret.into(),
            admin,
        }
    }

    #[test]
    fn derived_names_are_stable_short_and_hide_the_secret() {
        let name = derived_name("sk-erin-secret");
        assert_eq!(name, derived_name("sk-erin-secret"));
        assert_ne!(name, derived_name("sk-dave-secret"));
        assert_eq!(name.len(), 12, "{name}");
        assert!(name.starts_with("key-"), "{name}");
        assert!(name[4..].bytes().all(|b| b.is_ascii_hexdigit()), "{name}");
        assert!(!name.contains("erin"), "{name}");
    }

    #[test]
    fn duplicate_names_and_secrets_are_refused_and_left_out() {
        let keys = vec![
            key("admin", "sk-low", false),
            key("admin", "sk-root", true),
            key("bob", "sk-bob", false),
        ];
        let err = check(&keys).unwrap_err();
        assert!(
            matches!(&err, crate::serve_error::ServeError::DuplicateKeyName { name, admin: true } if name == "admin"),
            "{err}"
        );
        let ring = KeyRing::new(keys);
        assert!(ring.find(b"sk-low").is_none());
        assert!(ring.find(b"sk-root").is_none());
        assert_eq!(&*ring.find(b"sk-bob").unwrap().name, "bob");

        let twice = vec![key("a", "sk-same", false), key("b", "sk-same", false)];
        assert!(matches!(
            check(&twice),
            Err(crate::serve_error::ServeError::DuplicateKey { .. })
        ));
        // Every key refused: the server fails closed, it does not become keyless.
        let ring = KeyRing::new(twice);
        assert!(!ring.is_empty());
        assert!(ring.find(b"sk-same").is_none());
        let hidden = vec![key("ali\u{202e}ce", "sk-x", false)];
        assert!(matches!(
            check(&hidden),
            Err(crate::serve_error::ServeError::KeyName { .. })
        ));
    }

    #[test]
    fn admin_rights_go_with_the_key() {
        let ring = KeyRing::new(vec![
            key("ops", "sk-root", true),
            key("alice", "sk-a", false),
        ]);
        assert!(ring.find(b"sk-root").unwrap().admin);
        assert!(!ring.find(b"sk-a").unwrap().admin);
    }
}
