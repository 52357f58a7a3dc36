//! Money per key: [`CostLimit`], how much one key's runs may cost per period, and
//! [`Spending`], what each key has left.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::Duration;

use tinyagent::model::Cost;
use tokio::time::Instant;

/// How much one API key's runs may cost per period, in US dollars: `USD/h`, `USD/day`,
/// `USD/week` (or `/min`), such as `5/day` or `0.50/h`.
///
/// Counted like a bucket that holds the period's amount and fills up again at that rate: a
/// key may spend the whole amount at once, then what has come back since (a key that spent
/// `$5` of `5/day` may spend about `$0.21` an hour later). A key whose bucket holds less than
/// a hundredth of the amount gets `429 cost_limit_exceeded` with `Retry-After`; a run in
/// flight stops before a model call once it has spent what its key had left when it started.
/// Runs are priced by their agents' price tables (models without a price cost nothing).
///
/// ```
/// use std::time::Duration;
/// use tinyagent::model::Cost;
/// use tinyagent_server::CostLimit;
///
/// let limit: CostLimit = "0.50/h".parse().unwrap();
/// assert_eq!(limit, CostLimit::new(Cost::from_usd(0.5), Duration::from_secs(3600)));
/// assert_eq!("5/day".parse::<CostLimit>().unwrap().to_string(), "$5.00/day");
/// assert!("five/day".parse::<CostLimit>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CostLimit {
    cost: Cost,
    per: Duration,
}

impl CostLimit {
    /// `cost` per `per` (a period of at least one second).
    pub fn new(cost: Cost, per: Duration) -> Self {
        Self {
            cost,
            per: per.max(Duration::from_secs(1)),
        }
    }

    /// `usd` dollars a day.
    pub fn per_day(usd: f64) -> Self {
        Self::new(Cost::from_usd(usd), Duration::from_secs(86_400))
    }

    /// The amount per period.
    pub fn cost(&self) -> Cost {
        self.cost
    }

    /// The period.
    pub fn per(&self) -> Duration {
        self.per
    }
}

impl fmt::Display for CostLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let usd = self.cost.usd();
        let amount = if (usd * 100.0).fract().abs() < 1e-9 {
            format!("${usd:.2}")
        } else {
            format!("${usd}")
        };
        let unit = match self.per.as_secs() {
            60 => "min",
            3600 => "h",
            86_400 => "day",
            604_800 => "week",
            _ => return write!(f, "{amount} per {} s", self.per.as_secs()),
        };
        write!(f, "{amount}/{unit}")
    }
}

impl FromStr for CostLimit {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!(
                "{text:?} is not a money limit: give US dollars per period, USD/h, USD/day or \
                 USD/week, such as 5/day or 0.50/h"
            )
        };
        let (amount, unit) = text.trim().split_once('/').ok_or_else(bad)?;
        let amount = amount.trim().trim_start_matches('$');
        let usd: f64 = amount.parse().map_err(|_| bad())?;
        if !usd.is_finite() || usd <= 0.0 {
            return Err(format!("{text:?}: the amount must be more than 0 dollars"));
        }
        let per = match unit.trim() {
            "min" | "minute" => 60,
            "h" | "hour" => 3600,
            "d" | "day" => 86_400,
            "w" | "week" => 604_800,
            _ => return Err(bad()),
        };
        Ok(Self::new(Cost::from_usd(usd), Duration::from_secs(per)))
    }
}

/// One key's bucket: how many nano-dollars it held at `at` (less than nothing once a run
/// spent more than was left).
#[derive(Debug, Clone, Copy)]
struct Bucket {
    level: i128,
    at: Instant,
}

/// What each key has left of its [`CostLimit`], in this process's memory.
#[derive(Debug, Default)]
pub(crate) struct Spending {
    pub(crate) limit: Option<CostLimit>,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl Spending {
    pub(crate) fn new(limit: Option<CostLimit>) -> Self {
        Self {
            limit,
            buckets: Mutex::default(),
        }
    }

    /// `key`'s bucket now, filled up for the time since it was last seen.
    fn now(limit: CostLimit, bucket: Option<Bucket>) -> Bucket {
        let now = Instant::now();
        let full = i128::from(limit.cost.nano_usd());
        let Some(bucket) = bucket else {
            return Bucket {
                level: full,
                at: now,
            };
        };
        let elapsed = now.saturating_duration_since(bucket.at).as_nanos();
        let back =
            i128::try_from(elapsed * u128::from(limit.cost.nano_usd()) / limit.per.as_nanos())
                .unwrap_or(i128::MAX);
        Bucket {
            level: bucket.level.saturating_add(back).min(full),
            at: now,
        }
    }

    /// What `key` may still spend: `Ok(None)` without a limit, `Ok(Some(left))`, or how long
    /// until it may spend again (its bucket holds less than a hundredth of the limit).
    pub(crate) fn left(&self, key: &str) -> Result<Option<Cost>, Duration> {
        let Some(limit) = self.limit else {
            return Ok(None);
        };
        let mut buckets = crate::post::lock(&self.buckets);
        let bucket = Self::now(limit, buckets.get(key).copied());
        buckets.insert(key.to_owned(), bucket);
        let floor = i128::from(limit.cost.nano_usd() / 100).max(1);
        if bucket.level >= floor {
            return Ok(Some(Cost::from_nano_usd(
                u64::try_from(bucket.level).unwrap_or(u64::MAX),
            )));
        }
        // Until the bucket holds the floor again.
        let missing = u128::try_from(floor - bucket.level).unwrap_or(u128::MAX);
        let nanos =
            missing.saturating_mul(limit.per.as_nanos()) / u128::from(limit.cost.nano_usd()).max(1);
        Err(Duration::from_nanos(
            u64::try_from(nanos).unwrap_or(u64::MAX),
        ))
    }

    /// How long until `key` may spend again, if it may not now.
    pub(crate) fn wait(&self, key: &str) -> Option<Duration> {
        self.left(key).err()
    }

    /// Takes `cost` from `key`'s bucket.
    pub(crate) fn spend(&self, key: &str, cost: Cost) {
        let Some(limit) = self.limit else {
            return;
        };
        if cost == Cost::ZERO {
            return;
        }
        let mut buckets = crate::post::lock(&self.buckets);
        let mut bucket = Self::now(limit, buckets.get(key).copied());
        bucket.level = bucket.level.saturating_sub(i128::from(cost.nano_usd()));
        buckets.insert(key.to_owned(), bucket);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_parse_and_print() {
        assert_eq!(
            "5/day".parse::<CostLimit>().unwrap(),
            CostLimit::per_day(5.0)
        );
        assert_eq!(
            " $0.50 / h ".parse::<CostLimit>().unwrap(),
            CostLimit::new(Cost::from_usd(0.5), Duration::from_secs(3600))
        );
        assert_eq!(
            "0.125/week".parse::<CostLimit>().unwrap().to_string(),
            "$0.125/week"
        );
        for bad in [
            "", "5", "0/day", "-1/day", "5/month", "x/h", "NaN/h", "inf/h",
        ] {
            assert!(bad.parse::<CostLimit>().is_err(), "{bad}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_spends_its_amount_then_what_comes_back() {
        let spending = Spending::new(Some(CostLimit::new(
            Cost::from_usd(1.0),
            Duration::from_secs(100),
        )));
        assert_eq!(spending.left("a").unwrap(), Some(Cost::from_usd(1.0)));
        spending.spend("a", Cost::from_usd(0.75));
        assert_eq!(spending.left("a").unwrap(), Some(Cost::from_usd(0.25)));
        // A run may go past what was left: the key owes it.
        spending.spend("a", Cost::from_usd(0.5));
        let wait = spending.left("a").unwrap_err();
        // From -$0.25 to $0.01 at $0.01 a second.
        assert_eq!(wait, Duration::from_secs(26));
        assert_eq!(spending.wait("a"), Some(wait));
        // Another key has its own.
        assert_eq!(spending.left("b").unwrap(), Some(Cost::from_usd(1.0)));
        tokio::time::advance(Duration::from_secs(26)).await;
        assert_eq!(spending.left("a").unwrap(), Some(Cost::from_usd(0.01)));
        // Never more than the limit, however long a key waits.
        tokio::time::advance(Duration::from_secs(10_000)).await;
        assert_eq!(spending.left("a").unwrap(), Some(Cost::from_usd(1.0)));
        // Without a limit, nothing is counted.
        let free = Spending::new(None);
        free.spend("a", Cost::from_usd(100.0));
        assert_eq!(free.left("a").unwrap(), None);
    }
}
