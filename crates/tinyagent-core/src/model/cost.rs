//! [`Cost`]: an amount of money, exact.

use std::fmt;
use std::ops::{Add, AddAssign};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An amount of money in US dollars, held exactly as a whole number of nano-dollars
/// (10⁻⁹ USD), so that sums of many small calls do not drift and usages stay comparable.
/// Serialized as a number of dollars.
///
/// ```
/// use tinyagent::model::Cost;
///
/// let cost = Cost::from_usd(0.0015) + Cost::from_usd(0.0005);
/// assert_eq!(cost, Cost::from_usd(0.002));
/// assert_eq!(cost.to_string(), "$0.002000");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cost(u64);

impl Cost {
    /// Nothing.
    pub const ZERO: Self = Self(0);

    /// `usd` dollars (negative or not-a-number amounts are zero).
    pub fn from_usd(usd: f64) -> Self {
        if usd.is_finite() && usd > 0.0 {
            Self((usd * 1e9).round() as u64)
        } else {
            Self::ZERO
        }
    }

    /// An amount of nano-dollars.
    pub const fn from_nano_usd(nano: u64) -> Self {
        Self(nano)
    }

    /// The amount in dollars.
    pub fn usd(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// The amount in nano-dollars.
    pub const fn nano_usd(self) -> u64 {
        self.0
    }
}

impl Add for Cost {
    type Output = Cost;

    fn add(self, rhs: Cost) -> Cost {
        Cost(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for Cost {
    fn add_assign(&mut self, rhs: Cost) {
        *self = *self + rhs;
    }
}

impl fmt::Display for Cost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${:.6}", self.usd())
    }
}

impl Serialize for Cost {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.usd())
    }
}

impl<'de> Deserialize<'de> for Cost {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        f64::deserialize(deserializer).map(Cost::from_usd)
    }
}
