//! What model calls cost: a model's [`Price`], and the [`PriceTable`] an agent reads.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Cost, Usage};

/// What a model charges, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Price {
    /// Input tokens that are not read from the prompt cache.
    pub input: f64,
    /// Input tokens read from the prompt cache (the input price when the vendor has none).
    pub cached_input: f64,
    /// Input tokens written to the prompt cache (the input price when the vendor has none).
    pub cache_write_input: f64,
    /// Output tokens, reasoning included.
    pub output: f64,
}

impl Price {
    /// A price of `input` and `output` dollars per million tokens; cached input at the input
    /// price until [`cached_input`](Self::cached_input) says otherwise.
    pub const fn new(input: f64, output: f64) -> Self {
        Self {
            input,
            cached_input: input,
            cache_write_input: input,
            output,
        }
    }

    /// Sets the price of cached input tokens read.
    #[must_use]
    pub const fn cached_input(mut self, per_million: f64) -> Self {
        self.cached_input = per_million;
        self
    }

    /// Sets the price of input tokens written to the cache.
    #[must_use]
    pub const fn cache_write_input(mut self, per_million: f64) -> Self {
        self.cache_write_input = per_million;
        self
    }

    /// What a call with this usage costs. Cached and cache-written tokens are counted among
    /// the input tokens (as [`Usage`] reports them) and priced apart.
    pub fn cost(&self, usage: &Usage) -> Cost {
        let count = |n: Option<u64>| n.unwrap_or(0) as f64;
        let cached = count(usage.cached_input_tokens);
        let written = count(usage.cache_write_input_tokens);
        let plain = (count(usage.input_tokens) - cached - written).max(0.0);
        let usd = (plain * self.input
            + cached * self.cached_input
            + written * self.cache_write_input
            + count(usage.output_tokens) * self.output)
            / 1e6;
        Cost::from_usd(usd)
    }
}

/// When the built-in prices were taken from the vendors' published list prices. Prices
/// change: check yours, and override them with [`PriceTable::price`].
pub const PRICES_AS_OF: &str = "2025-08";

/// Prices by model name, for the cost of each model call (see
/// `LlmAgentBuilder::prices`).
///
/// A model's name matches an entry when it is the same, or when it is the entry followed by
/// a version suffix (`-2024-07-18`, `-20250514`, `@20250514`, `-latest`), so dated snapshots
/// cost what their model costs. A model that matches nothing has no cost (its usage's
/// [`cost`](Usage::cost) stays `None`).
///
/// [`PriceTable::default`] holds list prices of common OpenAI, Anthropic and Google models as
/// of [`PRICES_AS_OF`] (standard tier, no batch discount, Gemini's prompts up to 200k
/// tokens); the embedded local model costs nothing and is not listed.
///
/// ```
/// use tinyagent::Usage;
/// use tinyagent::model::{Cost, Price, PriceTable};
///
/// let prices = PriceTable::default().price("my-finetune", Price::new(1.0, 4.0));
/// let usage = Usage::new(1_000_000, 500_000);
/// assert_eq!(prices.cost("my-finetune", &usage), Some(Cost::from_usd(3.0)));
/// // A dated snapshot costs what its model costs.
/// let mini = prices.cost("gpt-4o-mini-2024-07-18", &usage).unwrap();
/// assert_eq!(mini, Cost::from_usd(0.15 + 0.30));
/// assert_eq!(prices.cost("some-local-model", &usage), None);
/// ```
#[derive(Debug, Clone)]
pub struct PriceTable(Arc<BTreeMap<String, Price>>);

impl Default for PriceTable {
    fn default() -> Self {
        let mut table = BTreeMap::new();
        for (name, price) in BUILT_IN {
            table.insert((*name).to_owned(), *price);
        }
        Self(Arc::new(table))
    }
}

impl PriceTable {
    /// A table with no prices.
    pub fn empty() -> Self {
        Self(Arc::new(BTreeMap::new()))
    }

    /// Sets (or replaces) the price of `model`.
    #[must_use]
    pub fn price(mut self, model: impl Into<String>, price: Price) -> Self {
        Arc::make_mut(&mut self.0).insert(model.into(), price);
        self
    }

    /// The price of `model`, by its name or the name it is a version of.
    pub fn get(&self, model: &str) -> Option<&Price> {
        if let Some(price) = self.0.get(model) {
            return Some(price);
        }
        self.0
            .iter()
            .filter(|(name, _)| {
                model
                    .strip_prefix(name.as_str())
                    .is_some_and(is_version_suffix)
            })
            .max_by_key(|(name, _)| name.len())
            .map(|(_, price)| price)
    }

    /// What a call of `model` with this usage cost, when the table knows the model.
    pub fn cost(&self, model: &str, usage: &Usage) -> Option<Cost> {
        self.get(model).map(|price| price.cost(usage))
    }
}

/// Whether `rest` (what follows a known model's name) is a version of that model.
fn is_version_suffix(rest: &str) -> bool {
    let dated = |s: &str| s.len() >= 6 && s.chars().take(6).all(|c| c.is_ascii_digit() || c == '-');
    match rest.strip_prefix('-').or_else(|| rest.strip_prefix('@')) {
        Some("latest") => true,
        Some(version) => version.starts_with("20") && dated(version),
        None => false,
    }
}

/// List prices, dollars per million tokens: input, cached input read, cache write, output.
const BUILT_IN: &[(&str, Price)] = &[
    // OpenAI
    ("gpt-4o", Price::new(2.50, 10.00).cached_input(1.25)),
    ("gpt-4o-mini", Price::new(0.15, 0.60).cached_input(0.075)),
    ("gpt-4.1", Price::new(2.00, 8.00).cached_input(0.50)),
    ("gpt-4.1-mini", Price::new(0.40, 1.60).cached_input(0.10)),
    ("gpt-4.1-nano", Price::new(0.10, 0.40).cached_input(0.025)),
    ("o3", Price::new(2.00, 8.00).cached_input(0.50)),
    ("o4-mini", Price::new(1.10, 4.40).cached_input(0.275)),
    // Anthropic
    (
        "claude-opus-4-1",
        Price::new(15.00, 75.00)
            .cached_input(1.50)
            .cache_write_input(18.75),
    ),
    (
        "claude-opus-4",
        Price::new(15.00, 75.00)
            .cached_input(1.50)
            .cache_write_input(18.75),
    ),
    (
        "claude-sonnet-4",
        Price::new(3.00, 15.00)
            .cached_input(0.30)
            .cache_write_input(3.75),
    ),
    (
        "claude-3-7-sonnet",
        Price::new(3.00, 15.00)
            .cached_input(0.30)
            .cache_write_input(3.75),
    ),
    (
        "claude-3-5-haiku",
        Price::new(0.80, 4.00)
            .cached_input(0.08)
            .cache_write_input(1.00),
    ),
    // Google
    ("gemini-2.5-pro", Price::new(1.25, 10.00).cached_input(0.31)),
    (
        "gemini-2.5-flash",
        Price::new(0.30, 2.50).cached_input(0.075),
    ),
    (
        "gemini-2.5-flash-lite",
        Price::new(0.10, 0.40).cached_input(0.025),
    ),
    (
        "gemini-2.0-flash",
        Price::new(0.10, 0.40).cached_input(0.025),
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_and_written_tokens_are_priced_apart() {
        let price = Price::new(3.0, 15.0)
            .cached_input(0.3)
            .cache_write_input(3.75);
        let usage = Usage::new(1_000_000, 100_000)
            .cached_input_tokens(600_000)
            .cache_write_input_tokens(100_000);
        // 300k plain input, 600k read, 100k written, 100k output.
        let expected = 0.3 * 3.0 + 0.6 * 0.3 + 0.1 * 3.75 + 0.1 * 15.0;
        assert_eq!(price.cost(&usage), Cost::from_usd(expected));
        assert_eq!(price.cost(&Usage::default()), Cost::ZERO);
    }

    #[test]
    fn versions_match_their_model_and_nothing_else() {
        let table = PriceTable::default();
        let price = |m: &str| table.get(m).map(|p| p.input);
        assert_eq!(price("gpt-4o"), Some(2.5));
        assert_eq!(price("gpt-4o-2024-08-06"), Some(2.5));
        assert_eq!(price("gpt-4o-mini-2024-07-18"), Some(0.15));
        assert_eq!(price("claude-sonnet-4-20250514"), Some(3.0));
        assert_eq!(price("claude-sonnet-4@20250514"), Some(3.0));
        assert_eq!(price("claude-3-5-haiku-latest"), Some(0.8));
        assert_eq!(price("gemini-2.5-flash-lite"), Some(0.1));
        assert_eq!(price("gpt-4o-audio-preview"), None);
        assert_eq!(price("o3-pro"), None);
        assert_eq!(price("Qwen2.5 Coder 0.5B Instruct AWQ"), None);
    }

    #[test]
    fn costs_serialize_as_dollars() {
        let cost = Cost::from_usd(0.0125);
        assert_eq!(serde_json::to_string(&cost).unwrap(), "0.0125");
        assert_eq!(serde_json::from_str::<Cost>("0.0125").unwrap(), cost);
        assert_eq!(Cost::from_usd(-1.0), Cost::ZERO);
        assert_eq!(Cost::from_usd(f64::NAN), Cost::ZERO);
    }
}
