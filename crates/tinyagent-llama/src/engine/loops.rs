//! Loops at the end of generated output: what the repetition guard and a looping string
//! argument are cut at.

use llama_cpp_2::token::LlamaToken;

/// A loop at the end of the output: `period` tokens repeated from token `first` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Loop {
    /// The index of the loop's first copy's first token.
    pub first: usize,
    /// The loop's length in tokens.
    pub period: usize,
}

/// Whether the output ends in a loop: the same run of 1–3 tokens eight times over, of 4–15
/// tokens three times, or of 16 to 64 tokens twice.
pub(crate) fn repeating_tail(tokens: &[LlamaToken]) -> Option<Loop> {
    let n = tokens.len();
    for k in 1..=64usize {
        let times = match k {
            1..=3 => 8,
            4..=15 => 3,
            _ => 2,
        };
        if n < k * times {
            continue;
        }
        let tail = &tokens[n - k..];
        if (2..=times).all(|t| &tokens[n - k * t..n - k * (t - 1)] == tail) {
            return Some(Loop {
                first: n - k * times,
                period: k,
            });
        }
    }
    None
}
