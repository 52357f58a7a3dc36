//! What model calls cost: the built-in list prices, a price file (`--prices`,
//! `TINYAGENT_PRICES`) and `--price` flags, in that order of precedence from last to first;
//! and the check that `--max-cost` can be kept.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use tinyagent::model::{Price, PriceTable};

use crate::cli::ModelArgs;
use crate::error::CliError;

use super::model_choice::ModelChoice;

/// The environment variable naming a price file (`--prices`'s default).
pub const ENV_PRICES: &str = "TINYAGENT_PRICES";

/// A model's entry in a price file: US dollars per million tokens.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FilePrice {
    input: f64,
    output: f64,
    #[serde(default)]
    cached_input: Option<f64>,
    #[serde(default)]
    cache_write_input: Option<f64>,
}

/// The price table the options give: the built-in list prices, then the price file's, then
/// each `--price`.
pub fn price_table(
    args: &ModelArgs,
    env: impl Fn(&str) -> Option<String>,
) -> Result<PriceTable, CliError> {
    let mut table = PriceTable::default();
    let file = args.price_file.clone().or_else(|| {
        env(ENV_PRICES)
            .filter(|v| !v.trim().is_empty())
            .map(Into::into)
    });
    if let Some(file) = file {
        for (model, price) in read_price_file(&file)? {
            table = table.price(model, price);
        }
    }
    for (model, price) in &args.prices {
        table = table.price(model.clone(), *price);
    }
    Ok(table)
}

/// The prices of a JSON file: `{"MODEL": {"input": IN, "output": OUT, "cached_input": ..,
/// "cache_write_input": ..}}`.
fn read_price_file(path: &Path) -> Result<Vec<(String, Price)>, CliError> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::usage(format!("cannot read the price file {shown}: {e}"))
            .with_hint("--prices FILE (or TINYAGENT_PRICES) names a JSON file")
    })?;
    let entries: BTreeMap<String, FilePrice> = serde_json::from_str(&text).map_err(|e| {
        CliError::usage(format!("the price file {shown} is not valid: {e}")).with_hint(
            r#"give {"MODEL": {"input": 0.5, "output": 1.5}} in US dollars per million tokens (also "cached_input", "cache_write_input")"#,
        )
    })?;
    entries
        .into_iter()
        .map(|(model, entry)| {
            let amounts = [
                Some(entry.input),
                Some(entry.output),
                entry.cached_input,
                entry.cache_write_input,
            ];
            if amounts.iter().flatten().any(|a| !a.is_finite() || *a < 0.0) {
                return Err(CliError::usage(format!(
                    "the price file {shown}: the prices of {model:?} must be amounts of zero or more"
                )));
            }
            let mut price = Price::new(entry.input, entry.output);
            if let Some(cached) = entry.cached_input {
                price = price.cached_input(cached);
            }
            if let Some(written) = entry.cache_write_input {
                price = price.cache_write_input(written);
            }
            Ok((model, price))
        })
        .collect()
}

/// With a money limit, every server model the run may call needs a price: a call of a model
/// without one would cost nothing as far as the limit knows. The embedded model is free.
pub fn check_priced(table: &PriceTable, models: &[&ModelChoice]) -> Result<(), CliError> {
    for choice in models {
        let ModelChoice::Server { model, .. } = choice else {
            continue;
        };
        if table.get(model).is_none() {
            return Err(CliError::usage(format!(
                "--max-cost: the price of the model {model:?} is unknown, so its calls could not \
                 be counted"
            ))
            .with_hint(format!(
                "give it, in US dollars per million tokens: --price {model}=INPUT/OUTPUT (or a \
                 --prices file)"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinyagent::Usage;
    use tinyagent::model::Cost;

    fn model_args(argv: &[&str]) -> ModelArgs {
        use clap::Parser;
        let mut full = vec!["tinyagent", "run"];
        full.extend(argv);
        full.push("q");
        match crate::cli::Cli::parse_from(full).command {
            crate::cli::Command::Run { agent, .. } => agent.model,
            _ => unreachable!(),
        }
    }

    #[test]
    fn flags_win_over_the_file_and_the_file_over_the_built_in_prices() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("prices.json");
        std::fs::write(
            &file,
            r#"{"gpt-4o-mini": {"input": 1, "output": 2}, "mine": {"input": 3, "output": 4, "cached_input": 0.5}}"#,
        )
        .unwrap();
        let args = model_args(&["--prices", file.to_str().unwrap(), "--price", "mine=10/20"]);
        let table = price_table(&args, |_| None).unwrap();
        let usage = Usage::new(1_000_000, 1_000_000);
        assert_eq!(table.cost("gpt-4o-mini", &usage), Some(Cost::from_usd(3.0)));
        assert_eq!(table.cost("mine", &usage), Some(Cost::from_usd(30.0)));
        assert_eq!(
            table.cost("gpt-4o", &usage),
            Some(Cost::from_usd(2.5 + 10.0))
        );
        // The variable names the file when the flag does not.
        let from_env = price_table(&model_args(&[]), |name| {
            (name == ENV_PRICES).then(|| file.to_str().unwrap().to_owned())
        })
        .unwrap();
        assert_eq!(from_env.cost("mine", &usage), Some(Cost::from_usd(7.0)));
    }

    #[test]
    fn a_bad_price_file_is_a_usage_error() {
        let dir = tempfile::tempdir().unwrap();
        for (text, says) in [
            (r#"{"m": {"input": 1}}"#, "missing field `output`"),
            (
                r#"{"m": {"input": 1, "output": 2, "outptu": 3}}"#,
                "unknown field",
            ),
            (r#"{"m": {"input": -1, "output": 2}}"#, "zero or more"),
            ("not json", "not valid"),
        ] {
            let file = dir.path().join("p.json");
            std::fs::write(&file, text).unwrap();
            let args = model_args(&["--prices", file.to_str().unwrap()]);
            let err = price_table(&args, |_| None).unwrap_err();
            assert_eq!(err.code, 2);
            assert!(err.to_string().contains(says), "{text}: {err}");
        }
        let missing = model_args(&["--prices", "/nonexistent/prices.json"]);
        assert_eq!(price_table(&missing, |_| None).unwrap_err().code, 2);
    }
}
