//! Calibration's scores after the blank question, kept: they depend on the instruction, the
//! tools and the call written so far, not on what the user asked, so the tool choice's
//! baseline is computed once per tool list rather than once per question. Kept in memory by
//! the loaded model and, when prompts are saved on disk ([`LlamaConfig::prompt_cache_dir`]),
//! beside them, so that a new process (a one-shot `tinyagent run`) computes none of them again.
//!
//! An entry is named after everything its scores depend on: the blank question's rendered
//! prompt, the text forced after it, and the candidates scored. The same text read again would
//! give the same scores but for the last digits a different split of the reading can change
//! (see the saved prompts); the kept ones are what reading gave once, so a question's choice
//! no longer depends on which prompts were read before it.
//!
//! [`LlamaConfig::prompt_cache_dir`]: crate::LlamaConfig::prompt_cache_dir

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use crate::saved_prompts::{fnv1a, write_whole};

/// How many entries a loaded model keeps in memory, and a model's directory on disk.
pub(crate) const MAX_KEPT: usize = 512;

/// What a scores file begins with (and its format's version).
const MAGIC: &[u8; 8] = b"tascor01";

/// The name of the directory, beside a model's saved prompts, that holds its kept scores.
const DIR: &str = "blank-scores";

/// The key of the scores of `candidates` after `parts` (the rendered prompt, then each text
/// forced after it), each part and candidate delimited so that no two lists share a key by
/// concatenation.
pub(crate) fn key(parts: &[&str], candidates: &[String]) -> u64 {
    let mut bytes = Vec::new();
    for part in parts {
        bytes.extend_from_slice(&(part.len() as u64).to_le_bytes());
        bytes.extend_from_slice(part.as_bytes());
    }
    bytes.push(0xff);
    for candidate in candidates {
        bytes.extend_from_slice(&(candidate.len() as u64).to_le_bytes());
        bytes.extend_from_slice(candidate.as_bytes());
    }
    fnv1a(bytes)
}

/// A loaded model's kept blank scores.
#[derive(Debug, Default)]
pub(crate) struct BlankScores {
    memory: Mutex<HashMap<u64, Vec<f64>>>,
}

impl BlankScores {
    /// The scores kept under `key`, in memory or in `dir` (a model's saved-prompts directory),
    /// with `count` of them; `None` when there are none (or the file is not one).
    pub(crate) fn get(&self, dir: Option<&Path>, key: u64, count: usize) -> Option<Vec<f64>> {
        if let Some(found) = self.lock().get(&key).filter(|s| s.len() == count) {
            return Some(found.clone());
        }
        let file = file_of(dir?, key);
        let scores = decode(&fs::read(&file).ok()?).filter(|s| s.len() == count)?;
        if let Ok(opened) = fs::File::options().append(true).open(&file) {
            let _ = opened.set_modified(SystemTime::now());
        }
        self.remember(key, scores.clone());
        Some(scores)
    }

    /// Keeps `scores` under `key`, in memory and in `dir` when there is one; a file that cannot
    /// be written is logged and left out (the scores are computed again next time).
    pub(crate) fn put(&self, dir: Option<&Path>, key: u64, scores: &[f64]) {
        self.remember(key, scores.to_vec());
        let Some(dir) = dir else { return };
        let dir = dir.join(DIR);
        let written = fs::create_dir_all(&dir).and_then(|()| {
            write_whole(&file_in(&dir, key), |temporary| {
                fs::File::create(temporary)?.write_all(&encode(scores))
            })
        });
        match written {
            Ok(()) => keep_newest(&dir),
            Err(error) => tracing::debug!(dir = %dir.display(), %error, "blank scores not saved"),
        }
    }

    fn remember(&self, key: u64, scores: Vec<f64>) {
        let mut memory = self.lock();
        if memory.len() >= MAX_KEPT && !memory.contains_key(&key) {
            // Rarely reached (a model serving many tool lists): start again.
            memory.clear();
        }
        memory.insert(key, scores);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Vec<f64>>> {
        self.memory
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn file_of(model_dir: &Path, key: u64) -> PathBuf {
    file_in(&model_dir.join(DIR), key)
}

fn file_in(dir: &Path, key: u64) -> PathBuf {
    dir.join(format!("{key:016x}.scores"))
}

fn encode(scores: &[f64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAGIC.len() + scores.len() * 8);
    out.extend_from_slice(MAGIC);
    for score in scores {
        out.extend_from_slice(&score.to_le_bytes());
    }
    out
}

fn decode(bytes: &[u8]) -> Option<Vec<f64>> {
    let body = bytes.strip_prefix(MAGIC)?;
    if body.len() % 8 != 0 {
        return None;
    }
    Some(
        body.chunks_exact(8)
            .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect(),
    )
}

/// Deletes all but the [`MAX_KEPT`] most recently used files of `dir`.
fn keep_newest(dir: &Path) {
    let Ok(listing) = fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(SystemTime, PathBuf)> = listing
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "scores"))
        .map(|path| {
            let used = fs::metadata(&path)
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            (used, path)
        })
        .collect();
    if files.len() <= MAX_KEPT {
        return;
    }
    files.sort_by(|a, b| b.cmp(a));
    for (_, path) in files.into_iter().skip(MAX_KEPT) {
        let _ = fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_tell_apart_what_concatenation_would_not() {
        let a = key(&["ab", "c"], &["x".into()]);
        let b = key(&["a", "bc"], &["x".into()]);
        let c = key(&["ab", "c"], &["x".into(), String::new()]);
        assert_ne!(a, b);
        assert_ne!(a, c);
        assert_eq!(a, key(&["ab", "c"], &["x".into()]));
    }

    #[test]
    fn scores_are_kept_in_memory_and_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let scores = [-1.5, -0.25, f64::NEG_INFINITY];
        let kept = BlankScores::default();
        let k = key(&["prompt"], &["a".into(), "b".into(), "c".into()]);
        assert_eq!(kept.get(Some(dir.path()), k, 3), None);
        kept.put(Some(dir.path()), k, &scores);
        assert_eq!(kept.get(None, k, 3).as_deref(), Some(&scores[..]));
        // A new process finds them on disk; a count that does not match is not them.
        let fresh = BlankScores::default();
        assert_eq!(
            fresh.get(Some(dir.path()), k, 3).as_deref(),
            Some(&scores[..])
        );
        assert_eq!(BlankScores::default().get(Some(dir.path()), k, 2), None);
        // A file that is not one is ignored.
        fs::write(file_of(dir.path(), k), b"garbage").unwrap();
        assert_eq!(BlankScores::default().get(Some(dir.path()), k, 3), None);
    }

    #[test]
    fn only_the_newest_files_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let kept = BlankScores::default();
        for i in 0..(MAX_KEPT as u64 + 5) {
            kept.put(Some(dir.path()), i, &[i as f64]);
        }
        let files = fs::read_dir(dir.path().join(DIR)).unwrap().count();
        assert_eq!(files, MAX_KEPT);
    }
}
