//! The `Host` rule: which names a server answers to on the address a connection arrived at.

use std::net::{IpAddr, SocketAddr};

/// Where a connection arrived: its local address (the one the client connected to), put in
/// every request's extensions by [`serve`](super::serve).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// The local address of the connection.
    pub local: SocketAddr,
}

/// `name[:port]` of a `Host` header or a host entry (IPv6 without brackets), or `None` when
/// malformed. Names keep their case: compare them without it. Nothing is allocated.
///
/// ```
/// use tinyagent_http::serve::split_host;
///
/// assert_eq!(split_host("Example.com:8080"), Some(("Example.com", Some(8080))));
/// assert_eq!(split_host("[::1]:3000"), Some(("::1", Some(3000))));
/// assert_eq!(split_host("localhost"), Some(("localhost", None)));
/// assert_eq!(split_host("user@host"), None);
/// ```
pub fn split_host(text: &str) -> Option<(&str, Option<u16>)> {
    let text = text.trim();
    if text.is_empty() || text.contains(['/', '@', ' ']) {
        return None;
    }
    if let Some(v6) = text.strip_prefix('[') {
        let (addr, rest) = v6.split_once(']')?;
        let port = match rest.strip_prefix(':') {
            Some(p) => Some(p.parse().ok()?),
            None if rest.is_empty() => None,
            None => return None,
        };
        return Some((addr, port));
    }
    match text.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') => Some((name, Some(port.parse().ok()?))),
        _ => Some((text, None)),
    }
}

/// Whether `name` is a loopback name or address: `localhost`, `*.localhost`, `127.0.0.0/8`,
/// `::1`.
pub fn is_loopback_name(name: &str) -> bool {
    name.eq_ignore_ascii_case("localhost")
        || name.to_ascii_lowercase().ends_with(".localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether a request naming `host` may be served on a connection that arrived at `local`: a
/// listed host (`name` for any port, `name:port`, or `*`), the address connected to (as an IP
/// literal, with its port), or `localhost` with the right port when that address is loopback.
/// A client off the machine cannot pass by sending `Host: localhost`, and no DNS name can
/// rebind to a loopback server.
///
/// ```
/// use tinyagent_http::serve::host_allowed;
///
/// let local = "127.0.0.1:8080".parse().unwrap();
/// assert!(host_allowed("localhost:8080", &[], local));
/// assert!(host_allowed("127.0.0.1:8080", &[], local));
/// assert!(!host_allowed("attacker.example:8080", &[], local));
/// assert!(host_allowed("agent.example", &["agent.example".into()], local));
/// let public = "10.0.0.5:8080".parse().unwrap();
/// assert!(!host_allowed("localhost:8080", &[], public));
/// ```
pub fn host_allowed(host: &str, listed: &[String], local: SocketAddr) -> bool {
    if listed.iter().any(|h| h.trim() == "*") {
        return true;
    }
    let Some((name, port)) = split_host(host) else {
        return false;
    };
    let in_list = listed.iter().any(|entry| match split_host(entry) {
        Some((n, Some(p))) => n.eq_ignore_ascii_case(name) && Some(p) == port,
        Some((n, None)) => n.eq_ignore_ascii_case(name),
        None => false,
    });
    if in_list {
        return true;
    }
    if port.unwrap_or(80) != local.port() {
        return false;
    }
    if let Ok(ip) = name.parse::<IpAddr>() {
        return ip == local.ip() || (ip.is_loopback() && local.ip().is_loopback());
    }
    name.eq_ignore_ascii_case("localhost") && local.ip().is_loopback()
}
