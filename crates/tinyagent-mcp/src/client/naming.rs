//! The names an MCP server's tools are offered under.
//!
//! MCP allows tool names that model APIs do not (`files.read`, `files read`, `météo`), and a
//! toolset may add a prefix. Every remote tool must stay reachable under a name that is valid
//! (1 to 64 of `a-z A-Z 0-9 _ -`), unique within the server, and stable: the same remote name
//! gives the same offered name whatever order the server lists its tools in.
//!
//! The rule:
//! 1. a name that is valid with the prefix is offered unchanged;
//! 2. any other name is sanitized: `.`, spaces and other ASCII punctuation become `_`, every
//!    non-ASCII character becomes `u` and its code point in hex, set apart by `_`
//!    (`météo` → `m_ue9_t_ue9_o`), and the result is cut to 64 bytes;
//! 3. when a sanitized name is taken by an unchanged name, or several remote names sanitize
//!    to the same name, each of those sanitized names gets `_` and six hex digits of a hash of
//!    its remote name (`files.read` → `files_read_1c3a7e`), so no name wins by list order.

use std::collections::{HashMap, HashSet};

use tinyagent::tools::validate_tool_name;

/// The longest tool name.
const MAX_NAME: usize = 64;

/// Offered names for `remote` names (in order; a duplicate remote name gets `None`: the server
/// listed the same tool twice and only the first can be called).
pub(crate) fn offered_names(prefix: &str, remote: &[&str]) -> Vec<Option<String>> {
    let mut seen_remote = HashSet::new();
    let mut out: Vec<Option<String>> = Vec::with_capacity(remote.len());
    // Unchanged names first: they are never renamed because of another tool.
    let mut taken: HashSet<String> = HashSet::new();
    let mut pending: Vec<(usize, String)> = Vec::new();
    for (i, name) in remote.iter().enumerate() {
        if !seen_remote.insert(*name) {
            out.push(None);
            continue;
        }
        let full = format!("{prefix}{name}");
        if validate_tool_name(&full).is_ok() {
            taken.insert(full.clone());
            out.push(Some(full));
        } else {
            out.push(None);
            pending.push((i, sanitize(&full, name)));
        }
    }
    let mut count: HashMap<&str, usize> = HashMap::new();
    for (_, base) in &pending {
        *count.entry(base.as_str()).or_default() += 1;
    }
    let contested: HashSet<String> = count
        .iter()
        .filter(|(base, n)| **n > 1 || taken.contains(**base))
        .map(|(base, _)| (*base).to_owned())
        .collect();
    for (i, base) in &pending {
        let name = if contested.contains(base) {
            with_suffix(base, remote[*i], &taken)
        } else {
            base.clone()
        };
        taken.insert(name.clone());
        out[*i] = Some(name);
    }
    out
}

/// `name` made valid: see the module docs. A name with nothing usable left becomes `tool`.
fn sanitize(full: &str, remote: &str) -> String {
    let mut out = String::with_capacity(full.len());
    // After a code point, the next character is separated from it by one `_`.
    let mut after_code = false;
    for c in full.chars() {
        if c.is_ascii_alphanumeric() || c == '-' {
            if after_code {
                out.push('_');
            }
            out.push(c);
            after_code = false;
        } else if c.is_ascii() {
            out.push('_');
            after_code = false;
        } else {
            if after_code || (!out.is_empty() && !out.ends_with('_')) {
                out.push('_');
            }
            out.push_str(&format!("u{:x}", u32::from(c)));
            after_code = true;
        }
    }
    let mut out = if out.chars().any(|c| c.is_ascii_alphanumeric()) {
        out
    } else {
        // Nothing meaningful: a neutral name, made unique by the hash suffix.
        format!("tool_{:06x}", hash(remote) & 0x00ff_ffff)
    };
    out.truncate(MAX_NAME);
    out
}

/// `base` cut to leave room for `_` and six hex digits of the remote name's hash; longer
/// hashes on the (astronomically rare) collision.
fn with_suffix(base: &str, remote: &str, taken: &HashSet<String>) -> String {
    let h = hash(remote);
    for digits in [6usize, 8, 16] {
        let suffix = format!("_{:016x}", h);
        let suffix = &suffix[..=digits];
        let mut name = base.to_owned();
        name.truncate(MAX_NAME - suffix.len());
        name.push_str(suffix);
        if !taken.contains(&name) {
            return name;
        }
    }
    let mut n = 2u32;
    loop {
        let suffix = format!("_{:016x}_{n}", h);
        let mut name = base.to_owned();
        name.truncate(MAX_NAME.saturating_sub(suffix.len()));
        name.push_str(&suffix);
        if !taken.contains(&name) {
            return name;
        }
        n += 1;
    }
}

/// FNV-1a, 64 bits: stable across runs, platforms and versions (unlike `DefaultHasher`).
fn hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(prefix: &str, remote: &[&str]) -> Vec<String> {
        offered_names(prefix, remote)
            .into_iter()
            .map(|n| n.unwrap_or_default())
            .collect()
    }

    #[test]
    fn valid_names_are_kept_and_prefixed() {
        assert_eq!(names("fs_", &["read", "write"]), ["fs_read", "fs_write"]);
    }

    #[test]
    fn clashing_names_are_all_reachable_and_independent_of_order() {
        let a = names("", &["files.read", "files read", "files_read", "天气"]);
        assert_eq!(a[2], "files_read", "the valid name is kept");
        assert!(a[0].starts_with("files_read_") && a[0].len() == "files_read_".len() + 6);
        assert!(a[1].starts_with("files_read_") && a[1] != a[0]);
        assert_eq!(a[3], "u5929_u6c14");
        let unique: HashSet<&String> = a.iter().collect();
        assert_eq!(unique.len(), 4);
        for name in &a {
            validate_tool_name(name).unwrap();
        }
        let b = names("", &["天气", "files_read", "files read", "files.read"]);
        assert_eq!((&b[3], &b[2], &b[1], &b[0]), (&a[0], &a[1], &a[2], &a[3]));
    }

    #[test]
    fn a_lone_sanitized_name_gets_no_suffix() {
        assert_eq!(names("", &["dotted.name"]), ["dotted_name"]);
        assert_eq!(names("my ", &["天气 today"]), ["my_u5929_u6c14_today"]);
    }

    #[test]
    fn names_with_nothing_usable_long_names_and_duplicates() {
        let n = names("", &["...", "", &"a".repeat(80), &"a".repeat(81)]);
        assert!(n[0].starts_with("tool_") && n[1].starts_with("tool_") && n[0] != n[1]);
        assert_eq!(n[2].len(), 64);
        assert_eq!(n[3].len(), 64);
        assert_ne!(n[2], n[3]);
        for name in &n {
            validate_tool_name(name).unwrap();
        }
        assert_eq!(offered_names("", &["x", "x"]), [Some("x".to_owned()), None]);
    }
}
