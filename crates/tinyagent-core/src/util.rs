//! Small pieces every layer shares.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// A boxed, `Send` future: what object-safe async methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Locks a mutex, going on with the data when another thread panicked while holding it: every
/// mutex of the crate guards data that stays consistent between statements.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Cuts `text` to at most `max` characters (at a character boundary), saying how much was
/// left out.
#[doc(hidden)]
pub fn cut(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    match text.char_indices().nth(max) {
        None => Cow::Borrowed(text),
        Some((end, _)) => Cow::Owned(format!(
            "{}… ({} more bytes)",
            &text[..end],
            text.len() - end
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_is_bounded_and_char_safe() {
        assert_eq!(cut("abc", 3), "abc");
        let long = "上".repeat(1000);
        let c = cut(&long, 10);
        assert!(
            c.starts_with(&"上".repeat(10)) && c.contains("more bytes"),
            "{c}"
        );
        assert!(c.chars().count() < 40);
    }
}
