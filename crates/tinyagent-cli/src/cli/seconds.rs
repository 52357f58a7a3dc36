//! A number of seconds on the command line.

/// Seconds, such as `30` or `2.5`, as a duration (at least a millisecond, at most a day).
pub fn parse_secs(text: &str) -> Result<std::time::Duration, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds, such as 30 or 2.5"))?;
    if !(0.001..=86_400.0).contains(&secs) {
        return Err(format!(
            "{text:?} is out of range: give between 0.001 and 86400 seconds"
        ));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}
