//! A request's sampling options as an API's body fields.

use serde_json::Value;
use tinyagent_core::ModelRequest;
use tinyagent_core::model::SamplingOption;

/// The sampling options `req` sets, as `(field, value)` pairs in the order of
/// [`SamplingOption::ALL`]: `field` gives each option's name in the API's body (`None` leaves
/// it out, for an option the provider writes itself). Numbers go through their shortest
/// decimal, so `0.7f32` is sent as `0.7`, not `0.699999988`.
///
/// ```
/// use tinyagent::ModelRequest;
/// use tinyagent::model::{Sampling, SamplingOption};
///
/// let req = ModelRequest::new(vec![]).sampling(Sampling::new().top_p(0.9).seed(7).stop(["END"]));
/// let fields = tinyagent_http::sampling_fields(&req, |o| match o {
///     SamplingOption::TopP => Some("topP"),
///     SamplingOption::Stop => Some("stopSequences"),
///     _ => None,
/// });
/// assert_eq!(fields, [("topP", serde_json::json!(0.9)), ("stopSequences", serde_json::json!(["END"]))]);
/// ```
pub fn sampling_fields(
    req: &ModelRequest,
    field: impl Fn(SamplingOption) -> Option<&'static str>,
) -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    let sampling = &req.sampling;
    for option in sampling.options() {
        let Some(name) = field(option) else { continue };
        let value = match option {
            SamplingOption::Temperature => sampling.temperature.and_then(decimal),
            SamplingOption::TopP => sampling.top_p.and_then(decimal),
            SamplingOption::PresencePenalty => sampling.presence_penalty.and_then(decimal),
            SamplingOption::FrequencyPenalty => sampling.frequency_penalty.and_then(decimal),
            SamplingOption::Seed => sampling.seed.map(Value::from),
            SamplingOption::Stop => Some(Value::from(sampling.stop.clone())),
            _ => None,
        };
        if let Some(value) = value {
            out.push((name, value));
        }
    }
    out
}

/// `x` as a JSON number through its shortest decimal; `None` for NaN and infinities.
pub fn decimal(x: f32) -> Option<Value> {
    let x: f64 = x.to_string().parse().unwrap_or(f64::from(x));
    serde_json::Number::from_f64(x).map(Value::Number)
}
