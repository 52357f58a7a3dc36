//! Tenants: who a request is for (the name of its API key), what it may see, and what one key
//! may keep and send — sessions, history and requests per unit of time.
//!
//! Every session belongs to the key that created it: its name is the session's
//! [owner](tinyagent::store::StoredSession::owner) in the store, and each tenant has ids of its
//! own ([`crate::namespace`]). A server without keys is one tenant, whose sessions have no
//! owner (the empty string), like the sessions stored before stores kept owners. An admin key
//! lists every session and addresses any tenant's with `?owner=NAME`; without it, its own
//! sessions, which have no owner.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use tokio::time::Instant;

use crate::error::ApiError;

/// The name of the admin key given by [`Server::admin_key`](crate::Server::admin_key).
pub const DEFAULT_ADMIN_KEY_NAME: &str = "admin";

/// Who a request is for: set by the auth middleware on every API request.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    /// The key's name (`anonymous` without keys), for logs and the page.
    pub(crate) name: Arc<str>,
    /// Whether the key is an admin key (the key itself, whatever its name).
    pub(crate) admin: bool,
    /// The owner of the sessions it creates and addresses by id: the key's name; none (the
    /// empty string) for an admin key and on a server without keys.
    pub(crate) tenant: Arc<str>,
}

/// Which sessions a request addresses: one tenant's ids, and for lists maybe every tenant's.
#[derive(Debug, Clone)]
pub(crate) struct Scope {
    /// The tenant whose ids the request's ids are.
    pub(crate) owner: Arc<str>,
    /// Whether a list shows every tenant's sessions (an admin key naming no tenant).
    pub(crate) everyone: bool,
    /// Whether the per-key session cap applies (not to admin keys).
    pub(crate) capped: bool,
}

impl Caller {
    pub(crate) fn is_admin(&self) -> bool {
        self.admin
    }

    /// The caller's own sessions (what a route without `?owner` addresses).
    pub(crate) fn tenant_scope(&self) -> Scope {
        Scope {
            owner: self.tenant.clone(),
            everyone: self.admin,
            capped: !self.admin,
        }
    }

    /// The sessions a request addresses, `asked` being its `?owner=`: another tenant's for an
    /// admin key only (`403` otherwise).
    pub(crate) fn scope(&self, asked: Option<&str>) -> Result<Scope, ApiError> {
        match asked {
            Some(owner) if self.admin => {
                crate::ids::check_id(owner).map_err(|_| {
                    ApiError::bad_request("`owner` must be the name of an API key")
                        .param("owner")
                        .code("invalid_owner")
                })?;
                Ok(Scope {
                    owner: Arc::from(owner),
                    everyone: false,
                    capped: false,
                })
            }
            Some(owner) if *owner != *self.tenant || self.tenant.is_empty() => Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "permission_error",
                "only an admin key may address another key's sessions (`owner`)",
            )
            .param("owner")
            .code("owner_not_allowed")),
            _ => Ok(self.tenant_scope()),
        }
    }
}

/// How many requests one key may make per unit of time: `N/s`, `N/min` or `N/h`.
///
/// Counted with a token bucket: a key may send a burst of up to `N` requests, then one more
/// each `1/N` of the period. A request beyond it gets `429` with `Retry-After`.
///
/// ```
/// use std::time::Duration;
/// use tinyagent_server::RateLimit;
///
/// let limit: RateLimit = "600/min".parse().unwrap();
/// assert_eq!(limit, RateLimit::new(600, Duration::from_secs(60)));
/// assert!("ten/s".parse::<RateLimit>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    requests: u32,
    per: Duration,
}

impl RateLimit {
    /// `requests` per `per` (at least 1 request, and a period of at least 1 ms).
    pub fn new(requests: u32, per: Duration) -> Self {
        Self {
            requests: requests.max(1),
            per: per.max(Duration::from_millis(1)),
        }
    }

    /// `requests` per second.
    pub fn per_second(requests: u32) -> Self {
        Self::new(requests, Duration::from_secs(1))
    }

    /// `requests` per minute.
    pub fn per_minute(requests: u32) -> Self {
        Self::new(requests, Duration::from_secs(60))
    }

    /// How long one request's token takes to come back.
    fn interval(&self) -> Duration {
        self.per / self.requests
    }
}

impl fmt::Display for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.per.as_secs() {
            1 if self.per.subsec_nanos() == 0 => write!(f, "{}/s", self.requests),
            60 if self.per.subsec_nanos() == 0 => write!(f, "{}/min", self.requests),
            3600 if self.per.subsec_nanos() == 0 => write!(f, "{}/h", self.requests),
            _ => write!(f, "{} per {:?}", self.requests, self.per),
        }
    }
}

impl FromStr for RateLimit {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || format!("{text:?} is not a rate: give N/s, N/min or N/h, such as 10/s");
        let (n, unit) = text.trim().split_once('/').ok_or_else(bad)?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        if n == 0 {
            return Err(format!("{text:?}: the rate must be at least 1 request"));
        }
        let per = match unit.trim() {
            "s" | "sec" | "second" => Duration::from_secs(1),
            "m" | "min" | "minute" => Duration::from_secs(60),
            "h" | "hour" => Duration::from_secs(3600),
            _ => return Err(bad()),
        };
        Ok(Self::new(n, per))
    }
}

/// Per-key token buckets.
#[derive(Debug, Default)]
pub(crate) struct Limiter {
    /// Per key name: when its bucket is full again (the "theoretical arrival time" of GCRA:
    /// a request is allowed when it is at most a burst's worth of intervals ahead of now).
    full_at: Mutex<HashMap<String, Instant>>,
}

impl Limiter {
    /// Takes a token of `key`'s bucket, or says how long until one is there.
    pub(crate) fn take(&self, key: &str, limit: RateLimit) -> Result<(), Duration> {
        let now = Instant::now();
        let interval = limit.interval();
        let burst = limit.per;
        let mut map = self.full_at.lock().unwrap_or_else(|e| e.into_inner());
        let full_at = map.get(key).copied().unwrap_or(now).max(now);
        let next = full_at + interval;
        if next > now + burst {
            return Err(next - (now + burst));
        }
        map.insert(key.to_owned(), next);
        Ok(())
    }
}

/// What [`Server`](crate::Server) enforces per tenant.
#[derive(Debug, Default)]
pub(crate) struct Tenancy {
    pub(crate) max_sessions_per_key: Option<usize>,
    pub(crate) max_history: Option<usize>,
    pub(crate) rate_limit: Option<RateLimit>,
    pub(crate) limiter: Limiter,
    /// The owner of a keyless server's sessions and of an admin key's own: none (the empty
    /// string), shared.
    pub(crate) no_owner: Arc<str>,
}

impl Tenancy {
    /// Who a request authenticated as `name` is for; `keyless` when the server has no keys.
    pub(crate) fn caller(&self, name: &Arc<str>, admin: bool, keyless: bool) -> Caller {
        let tenant = if keyless || admin {
            self.no_owner.clone()
        } else {
            name.clone()
        };
        Caller {
            name: name.clone(),
            admin,
            tenant,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_and_print() {
        assert_eq!(
            "10/s".parse::<RateLimit>().unwrap(),
            RateLimit::per_second(10)
        );
        assert_eq!(
            " 600 / min ".parse::<RateLimit>().unwrap(),
            RateLimit::per_minute(600)
        );
        assert_eq!(
            "5/h".parse::<RateLimit>().unwrap().to_string(),
            "5/h".to_owned()
        );
        for bad in ["", "10", "0/s", "-1/s", "10/day", "x/s"] {
            assert!(bad.parse::<RateLimit>().is_err(), "{bad}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_gets_a_burst_then_one_request_per_interval() {
        let limiter = Limiter::default();
        let limit = RateLimit::per_second(4);
        for _ in 0..4 {
            limiter.take("a", limit).unwrap();
        }
        let wait = limiter.take("a", limit).unwrap_err();
        assert_eq!(wait, Duration::from_millis(250));
        // Another key has a bucket of its own.
        limiter.take("b", limit).unwrap();
        tokio::time::advance(Duration::from_millis(250)).await;
        limiter.take("a", limit).unwrap();
        assert!(limiter.take("a", limit).is_err());
        // A key idle for a whole period has its full burst again, no more.
        tokio::time::advance(Duration::from_secs(10)).await;
        for _ in 0..4 {
            limiter.take("a", limit).unwrap();
        }
        assert!(limiter.take("a", limit).is_err());
    }

    #[test]
    fn callers_own_what_their_key_names_and_only_admins_name_another_owner() {
        let tenancy = Tenancy::default();
        let keyless = tenancy.caller(&Arc::from("anonymous"), false, true);
        assert_eq!(&*keyless.tenant, "");
        let alice = tenancy.caller(&Arc::from("alice"), false, false);
        assert_eq!(&*alice.tenant, "alice");
        let scope = alice.scope(None).unwrap();
        assert!(!scope.everyone && scope.capped);
        assert_eq!(&*alice.scope(Some("alice")).unwrap().owner, "alice");
        assert_eq!(alice.scope(Some("bob")).unwrap_err().status, 403);
        assert_eq!(keyless.scope(Some("bob")).unwrap_err().status, 403);
        // Admin rights are the key's, whatever its name.
        let root = tenancy.caller(&Arc::from("alice"), true, false);
        assert!(root.is_admin());
        assert_eq!(&*root.tenant, "");
        let all = root.scope(None).unwrap();
        assert!(all.everyone && !all.capped);
        let bobs = root.scope(Some("bob")).unwrap();
        assert_eq!((&*bobs.owner, bobs.everyone), ("bob", false));
    }
}
