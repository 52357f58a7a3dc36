//! What the decoder reads out of llama.cpp's logits and tokens: log-probabilities, the best
//! token, the token array a sampler takes, text as it becomes valid UTF-8, whole JSON.

use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;

/// Natural-log probabilities from logits.
pub(super) fn log_softmax(logits: &[f32]) -> Vec<f64> {
    let max = logits
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = logits
        .iter()
        .filter(|v| v.is_finite())
        .map(|&v| (v as f64 - max).exp())
        .sum();
    let log_sum = max + sum.ln();
    logits.iter().map(|&v| v as f64 - log_sum).collect()
}

/// Whether `text` is one whole JSON value.
pub(super) fn is_json(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok()
}

/// Takes the longest valid UTF-8 prefix out of `pending`; an incomplete character at the end
/// waits for the next token, invalid bytes become U+FFFD.
pub(super) fn take_utf8(pending: &mut Vec<u8>) -> String {
    let mut out = String::new();
    loop {
        match std::str::from_utf8(pending) {
            Ok(s) => {
                out.push_str(s);
                pending.clear();
                return out;
            }
            Err(e) => {
                let valid = e.valid_up_to();
                // The valid part is valid UTF-8 by construction.
                out.push_str(&String::from_utf8_lossy(&pending[..valid]));
                match e.error_len() {
                    // Invalid bytes: give them up now and go on.
                    Some(len) => {
                        out.push(char::REPLACEMENT_CHARACTER);
                        pending.drain(..valid + len);
                    }
                    // An incomplete character at the end: keep it for the next token.
                    None => {
                        pending.drain(..valid);
                        return out;
                    }
                }
            }
        }
    }
}

/// Every token with its logit, for a sampler.
pub(super) fn full_array(logits: &[f32]) -> LlamaTokenDataArray {
    LlamaTokenDataArray::new(
        logits
            .iter()
            .enumerate()
            .map(|(i, &l)| LlamaTokenData::new(LlamaToken(i32::try_from(i).unwrap_or(0)), l, 0.0))
            .collect(),
        false,
    )
}

/// The index of the largest finite value.
pub(super) fn argmax(values: impl Iterator<Item = (usize, f32)>) -> Option<usize> {
    values
        .filter(|(_, v)| v.is_finite())
        .fold(None, |best: Option<(usize, f32)>, (i, v)| match best {
            Some((_, b)) if b >= v => best,
            _ => Some((i, v)),
        })
        .map(|(i, _)| i)
}
