//! The tests of `engine`.

use super::logits::log_softmax;
use super::loops::Loop;
use super::score::shared_beginning;
use super::*;

#[test]
fn the_context_allocated_fits_the_prompt_within_the_window() {
    // Short prompts: the 2048 tokens every call had before.
    assert_eq!(context_to_allocate(32_768, 300, 256), 2048);
    // A long prompt (500 tools): what it needs, rounded up, within the window.
    let n = context_to_allocate(32_768, 22_960, 256);
    assert!(
        n >= 22_960 + 256 && n.is_multiple_of(512) && n <= 32_768,
        "{n}"
    );
    // Never more than the window, however long the prompt.
    assert_eq!(context_to_allocate(4096, 30_000, 256), 4096);
    assert_eq!(context_to_allocate(1024, 10, 256), 1024);
    assert_eq!(
        context_to_allocate(u32::MAX, usize::MAX, u32::MAX),
        u32::MAX
    );
}

#[test]
fn utf8_split_across_tokens_waits_for_the_rest() {
    let bytes = "北京".as_bytes();
    let mut pending = bytes[..2].to_vec();
    assert_eq!(take_utf8(&mut pending), "");
    pending.extend_from_slice(&bytes[2..4]);
    assert_eq!(take_utf8(&mut pending), "北");
    pending.extend_from_slice(&bytes[4..]);
    assert_eq!(take_utf8(&mut pending), "京");
    let mut bad = vec![b'a', 0xff, b'b'];
    assert_eq!(take_utf8(&mut bad), "a\u{fffd}b");
}

#[test]
fn argmax_skips_masked_tokens() {
    let v = [
        (0, 1.0),
        (1, f32::INFINITY),
        (2, 3.0),
        (3, f32::NEG_INFINITY),
    ];
    assert_eq!(argmax(v.into_iter()), Some(2));
    assert_eq!(argmax([(0, f32::NEG_INFINITY)].into_iter()), None);
}

#[test]
fn loops_are_found_and_varied_text_is_not() {
    let t = |v: &[i32]| v.iter().map(|&i| LlamaToken(i)).collect::<Vec<_>>();
    assert_eq!(repeating_tail(&t(&[1, 2, 3, 4, 5, 6, 7, 8, 9])), None);
    assert_eq!(repeating_tail(&t(&[9; 7])), None);
    assert_eq!(
        repeating_tail(&t(&[7, 9, 9, 9, 9, 9, 9, 9, 9])),
        Some(Loop {
            first: 1,
            period: 1
        })
    );
    let mut phrase: Vec<i32> = (100..120).collect();
    let once = phrase.clone();
    assert_eq!(repeating_tail(&t(&phrase)), None);
    phrase.extend(&once);
    assert_eq!(
        repeating_tail(&t(&phrase)),
        Some(Loop {
            first: 0,
            period: 20
        })
    );
    // A short run must come back three times before it counts.
    assert_eq!(repeating_tail(&t(&[5, 1, 2, 3, 4, 1, 2, 3, 4])), None);
    assert_eq!(
        repeating_tail(&t(&[5, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4])),
        Some(Loop {
            first: 1,
            period: 4
        })
    );
}

#[test]
fn log_softmax_is_a_distribution() {
    let lp = log_softmax(&[1.0, 2.0, 3.0, f32::NEG_INFINITY]);
    let total: f64 = lp.iter().map(|v| v.exp()).sum();
    assert!((total - 1.0).abs() < 1e-9, "{lp:?}");
    assert!(lp[2] > lp[1] && lp[1] > lp[0]);
    assert_eq!(lp[3], f64::NEG_INFINITY);
}

#[test]
fn candidates_share_their_common_beginning_but_one_token_each() {
    let t = |ids: &[i32]| ids.iter().map(|&i| LlamaToken(i)).collect::<Vec<_>>();
    // `{"name": "` then each tool's name.
    assert_eq!(
        shared_beginning(&[t(&[1, 2, 3, 7]), t(&[1, 2, 3, 8, 9])]),
        3
    );
    // One candidate the start of another: each keeps a token of its own.
    assert_eq!(shared_beginning(&[t(&[1, 2]), t(&[1, 2, 3])]), 1);
    assert_eq!(shared_beginning(&[t(&[1]), t(&[1, 2])]), 0);
    // Nothing shared, one candidate, none, an empty one.
    assert_eq!(shared_beginning(&[t(&[1, 2]), t(&[3, 2])]), 0);
    assert_eq!(shared_beginning(&[t(&[1, 2, 3])]), 0);
    assert_eq!(shared_beginning(&[]), 0);
    assert_eq!(shared_beginning(&[t(&[]), t(&[1, 2])]), 0);
}
