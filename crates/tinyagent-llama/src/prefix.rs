//! The prompt prefix cache: prompts read before, kept as llama.cpp sequence states, so that a
//! prompt that begins like an earlier one reads only the rest.
//!
//! Every step of a conversation begins with the same instruction and tool list, the
//! calibration's blank question shares all of it with the real one, and each turn's prompt
//! begins with the whole of the last one. Reading those tokens again is most of what a small
//! model spends on a step; restoring them is a copy.

use std::collections::VecDeque;
use std::sync::Mutex;

use llama_cpp_2::context::session::SeqState;
use llama_cpp_2::token::LlamaToken;

/// The fewest tokens a prompt must share with a cached one for the cache to be used: below
/// this, reading them is as quick as restoring.
pub(crate) const MIN_SHARED_TOKENS: usize = 32;

/// Prompts read before, most recently used last, within a byte budget.
pub(crate) struct PrefixCache {
    entries: Mutex<VecDeque<Entry>>,
}

struct Entry {
    tokens: Vec<LlamaToken>,
    state: SeqState,
}

/// How many leading tokens `a` and `b` share.
pub(crate) fn shared_len(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl PrefixCache {
    pub(crate) fn new() -> Self {
        Self {
            entries: Mutex::new(VecDeque::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Entry>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many leading tokens of `tokens` the cached state sharing the most with it shares
    /// (as [`with_longest`](Self::with_longest) counts them; 0 below [`MIN_SHARED_TOKENS`]).
    pub(crate) fn longest_shared(&self, tokens: &[LlamaToken]) -> usize {
        let shared = self
            .lock()
            .iter()
            .map(|e| shared_len(&e.tokens, tokens).min(tokens.len().saturating_sub(1)))
            .max()
            .unwrap_or(0);
        if shared < MIN_SHARED_TOKENS {
            0
        } else {
            shared
        }
    }

    /// The cached state sharing the longest beginning with `tokens` (at least
    /// [`MIN_SHARED_TOKENS`], and never all of them: the last token is read again so that its
    /// logits are fresh), and how many tokens it shares. `restore` gets the state and the
    /// count while the cache is locked, so the state is not copied.
    pub(crate) fn with_longest<R>(
        &self,
        tokens: &[LlamaToken],
        restore: impl FnOnce(&SeqState, usize) -> R,
    ) -> Option<R> {
        let mut entries = self.lock();
        let (index, shared) = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (i, shared_len(&e.tokens, tokens).min(tokens.len() - 1)))
            .max_by_key(|&(i, shared)| (shared, i))?;
        if shared < MIN_SHARED_TOKENS {
            return None;
        }
        let entry = entries.remove(index)?;
        let result = restore(&entry.state, shared);
        entries.push_back(entry);
        Some(result)
    }

    /// Keeps `state`, the context after reading `tokens`, dropping the least recently used
    /// entries beyond `max_bytes` and any entry `tokens` begins with (this one covers it).
    pub(crate) fn insert(&self, tokens: Vec<LlamaToken>, state: SeqState, max_bytes: usize) {
        if state.byte_len() > max_bytes || tokens.len() < MIN_SHARED_TOKENS {
            return;
        }
        let mut entries = self.lock();
        entries.retain(|e| !tokens.starts_with(&e.tokens));
        entries.push_back(Entry { tokens, state });
        let mut total: usize = entries.iter().map(|e| e.state.byte_len()).sum();
        while total > max_bytes {
            let Some(oldest) = entries.pop_front() else {
                break;
            };
            total -= oldest.state.byte_len();
        }
    }

    /// How many prompts are cached, and their bytes.
    pub(crate) fn size(&self) -> (usize, usize) {
        let entries = self.lock();
        (
            entries.len(),
            entries.iter().map(|e| e.state.byte_len()).sum(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: &[i32]) -> Vec<LlamaToken> {
        v.iter().map(|&i| LlamaToken(i)).collect()
    }

    #[test]
    fn shared_beginnings_are_counted() {
        assert_eq!(shared_len(&t(&[1, 2, 3]), &t(&[1, 2, 4])), 2);
        assert_eq!(shared_len(&t(&[1, 2]), &t(&[1, 2, 3])), 2);
        assert_eq!(shared_len(&t(&[]), &t(&[1])), 0);
        assert_eq!(shared_len(&t(&[5]), &t(&[1])), 0);
    }
}
