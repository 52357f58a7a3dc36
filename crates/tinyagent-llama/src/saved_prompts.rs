//! Prompts read before, saved on disk: the prefix cache's states in files, so that a new
//! process (a one-shot `tinyagent run`, the demo run again) begins where an earlier one
//! stopped instead of reading the instruction and the tool list again.
//!
//! A model's saved prompts are in a directory of their own under the configured one, named
//! after the model file (its path, size and modification time): another file, or the same
//! file changed, never reads them. Each prompt is two files named after its tokens: `H.state`,
//! the llama.cpp sequence state (`llama_state_seq_save_file`, which checks its own format
//! and version on load), and `H.tokens`, its tokens, written last, so that a prompt is listed
//! only once its state is whole. Both are written under temporary names and renamed, so that
//! concurrent processes never see half a file. The most recently used
//! [`MAX_SAVED`] prompts are kept.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::token::LlamaToken;

use crate::prefix::{MIN_SHARED_TOKENS, shared_len};

/// How many prompts a model keeps on disk.
pub(crate) const MAX_SAVED: usize = 8;

/// The fewest tokens a prompt must have read (rather than restored) to be saved: a prompt
/// mostly restored is one saved already, or quick to read again.
pub(crate) const MIN_READ_TOKENS: usize = 256;

/// What a tokens file begins with (and its format's version).
const MAGIC: &[u8; 8] = b"tatoks01";

/// A model's saved prompts: the directory they are in.
#[derive(Debug, Clone)]
pub(crate) struct SavedPrompts {
    dir: PathBuf,
}

/// A saved prompt that shares a beginning with the one being read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// Its state file.
    pub state: PathBuf,
    /// Its tokens.
    pub tokens: Vec<LlamaToken>,
    /// How many leading tokens it shares with the prompt being read.
    pub shared: usize,
}

/// FNV-1a, 64 bits: stable across builds and platforms, which names on disk need.
pub(crate) fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

fn token_bytes(tokens: &[LlamaToken]) -> impl Iterator<Item = u8> + '_ {
    tokens.iter().flat_map(|t| t.0.to_le_bytes())
}

/// The directory name of the model file at `path`: from its full path, size and modification
/// time, so that a replaced file does not read another's states.
pub(crate) fn model_dir_name(path: &Path) -> String {
    let full = fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let meta = fs::metadata(&full).ok();
    let size = meta.as_ref().map_or(0, fs::Metadata::len);
    let modified = meta
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let stem = full
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let key = format!("{}\0{size}\0{modified}", full.display());
    format!("{stem}-{:016x}", fnv1a(key.bytes()))
}

/// The tokens file's text for `tokens`.
fn encode_tokens(tokens: &[LlamaToken]) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAGIC.len() + tokens.len() * 4);
    out.extend_from_slice(MAGIC);
    out.extend(token_bytes(tokens));
    out
}

/// The tokens of a tokens file; `None` when it is not one.
fn decode_tokens(bytes: &[u8]) -> Option<Vec<LlamaToken>> {
    let body = bytes.strip_prefix(MAGIC)?;
    if body.len() % 4 != 0 {
        return None;
    }
    Some(
        body.chunks_exact(4)
            .map(|c| LlamaToken(i32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect(),
    )
}

/// Writes `bytes` to `path` through a temporary file renamed into place.
pub(crate) fn write_whole(
    path: &Path,
    write: impl FnOnce(&Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let temporary = path.with_extension(format!(
        "{}.tmp{}",
        path.extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default(),
        std::process::id()
    ));
    let written = write(&temporary).and_then(|()| fs::rename(&temporary, path));
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    written
}

impl SavedPrompts {
    /// The saved prompts of the model whose directory (see [`model_dir_name`]) is `dir`.
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// Every saved prompt: its name (the files' stem) and tokens, unreadable ones left out.
    fn entries(&self) -> Vec<(PathBuf, Vec<LlamaToken>)> {
        let Ok(listing) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        listing
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|e| e == "tokens"))
            .filter_map(|path| {
                let tokens = decode_tokens(&fs::read(&path).ok()?)?;
                Some((path.with_extension(""), tokens))
            })
            .collect()
    }

    /// The saved prompt sharing the longest beginning with `tokens`, at least
    /// [`MIN_SHARED_TOKENS`] and never all of them (the last token is read again so that its
    /// logits are fresh).
    pub(crate) fn longest(&self, tokens: &[LlamaToken]) -> Option<Found> {
        let (stem, saved, shared) = self
            .entries()
            .into_iter()
            .map(|(stem, saved)| {
                let shared = shared_len(&saved, tokens).min(tokens.len().saturating_sub(1));
                (stem, saved, shared)
            })
            .max_by(|a, b| (a.2, &a.0).cmp(&(b.2, &b.0)))?;
        (shared >= MIN_SHARED_TOKENS).then(|| Found {
            state: stem.with_extension("state"),
            tokens: saved,
            shared,
        })
    }

    /// Loads `found` into `ctx`'s sequence 0 and keeps its first `found.shared` tokens;
    /// returns how many were kept (0, with the context cleared, when the file cannot be read
    /// into this context: the prompt is then read whole).
    pub(crate) fn load(&self, ctx: &mut LlamaContext<'_>, found: &Found) -> usize {
        let kept = u32::try_from(found.shared).unwrap_or(u32::MAX);
        let loaded = match ctx.state_seq_load_file(&found.state, 0, found.tokens.len()) {
            Ok((tokens, _)) if tokens == found.tokens => {
                matches!(ctx.clear_kv_cache_seq(Some(0), Some(kept), None), Ok(true))
            }
            Ok(_) => false,
            Err(error) => {
                tracing::debug!(file = %found.state.display(), %error, "saved prompt not loaded");
                false
            }
        };
        if loaded {
            self.touch(found);
            tracing::debug!(file = %found.state.display(), tokens = found.shared, "saved prompt loaded");
            found.shared
        } else {
            ctx.clear_kv_cache();
            0
        }
    }

    /// Marks a saved prompt as just used, so that it is kept longest.
    pub(crate) fn touch(&self, found: &Found) {
        let now = SystemTime::now();
        for path in [found.state.clone(), found.state.with_extension("tokens")] {
            if let Ok(file) = fs::File::options().append(true).open(&path) {
                let _ = file.set_modified(now);
            }
        }
    }

    /// Saves the state of `ctx`'s sequence 0, which has read `tokens`, unless a saved prompt
    /// already begins with all of them; then keeps the [`MAX_SAVED`] most recently used.
    pub(crate) fn save(&self, ctx: &LlamaContext<'_>, tokens: &[LlamaToken]) -> Result<(), String> {
        if self
            .entries()
            .iter()
            .any(|(_, saved)| saved.starts_with(tokens))
        {
            return Ok(());
        }
        fs::create_dir_all(&self.dir)
            .map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
        let stem = self
            .dir
            .join(format!("{:016x}", fnv1a(token_bytes(tokens))));
        let state = stem.with_extension("state");
        write_whole(&state, |temporary| {
            ctx.state_seq_save_file(temporary, 0, tokens)
                .map(drop)
                .map_err(|e| std::io::Error::other(e.to_string()))
        })
        .map_err(|e| format!("cannot save a prompt state to {}: {e}", state.display()))?;
        let listed = stem.with_extension("tokens");
        write_whole(&listed, |temporary| {
            fs::File::create(temporary)?.write_all(&encode_tokens(tokens))
        })
        .map_err(|e| format!("cannot save a prompt's tokens to {}: {e}", listed.display()))?;
        self.keep_newest();
        tracing::debug!(file = %state.display(), tokens = tokens.len(), "prompt saved");
        Ok(())
    }

    /// Deletes all but the [`MAX_SAVED`] most recently used prompts (tokens file first, so
    /// that a prompt stops being listed before its state goes).
    fn keep_newest(&self) {
        let mut saved: Vec<(SystemTime, PathBuf)> = self
            .entries()
            .into_iter()
            .map(|(stem, _)| {
                let listed = stem.with_extension("tokens");
                let used = fs::metadata(&listed)
                    .and_then(|m| m.modified())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                (used, stem)
            })
            .collect();
        saved.sort_by(|a, b| b.cmp(a));
        for (_, stem) in saved.into_iter().skip(MAX_SAVED) {
            let _ = fs::remove_file(stem.with_extension("tokens"));
            let _ = fs::remove_file(stem.with_extension("state"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(range: std::ops::Range<i32>) -> Vec<LlamaToken> {
        range.map(LlamaToken).collect()
    }

    /// A saved prompt's files as `save` writes them, without a model: an empty state file.
    fn put(saved: &SavedPrompts, tokens: &[LlamaToken]) -> PathBuf {
        fs::create_dir_all(&saved.dir).unwrap();
        let stem = saved
            .dir
            .join(format!("{:016x}", fnv1a(token_bytes(tokens))));
        fs::write(stem.with_extension("state"), b"").unwrap();
        fs::write(stem.with_extension("tokens"), encode_tokens(tokens)).unwrap();
        stem
    }

    #[test]
    fn tokens_files_read_back_and_others_are_refused() {
        let tokens = t(-3..300);
        assert_eq!(decode_tokens(&encode_tokens(&tokens)), Some(tokens));
        assert_eq!(decode_tokens(b"tatoks01\x01\x02"), None);
        assert_eq!(decode_tokens(b"not ours"), None);
        assert_eq!(decode_tokens(&encode_tokens(&[])), Some(Vec::new()));
    }

    #[test]
    fn the_longest_shared_beginning_is_found_and_short_ones_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let saved = SavedPrompts::new(dir.path().join("model"));
        assert_eq!(
            saved.longest(&t(0..100)),
            None,
            "nothing saved, nothing found"
        );
        let short = put(&saved, &t(0..20));
        let long = put(&saved, &t(0..80));
        // A question after the instruction and tools: 0..80 then new tokens.
        let mut prompt = t(0..80);
        prompt.extend(t(500..520));
        let found = saved.longest(&prompt).unwrap();
        assert_eq!(found.state, long.with_extension("state"));
        assert_eq!((found.shared, found.tokens.len()), (80, 80));
        // Never all of the prompt: its last token is read again.
        assert_eq!(saved.longest(&t(0..80)).unwrap().shared, 79);
        // Sharing fewer than MIN_SHARED_TOKENS is not worth a load.
        let _ = short;
        assert_eq!(saved.longest(&t(0..MIN_SHARED_TOKENS as i32 - 1)), None);
        // Unreadable tokens files are left out.
        fs::write(saved.dir.join("junk.tokens"), b"garbage").unwrap();
        assert_eq!(saved.longest(&prompt).unwrap().shared, 80);
    }

    #[test]
    fn only_the_most_recently_used_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let saved = SavedPrompts::new(dir.path().join("model"));
        let old = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        let mut stems = Vec::new();
        for i in 0..(MAX_SAVED as i32 + 2) {
            let stem = put(&saved, &t(i * 1000..i * 1000 + 40));
            let age = old + std::time::Duration::from_secs(i as u64);
            for ext in ["tokens", "state"] {
                let file = fs::File::options()
                    .append(true)
                    .open(stem.with_extension(ext))
                    .unwrap();
                file.set_modified(age).unwrap();
            }
            stems.push(stem);
        }
        // The oldest one is used again: it is kept, the next two oldest go.
        let first = saved.longest(&t(0..41)).unwrap();
        saved.touch(&first);
        saved.keep_newest();
        assert_eq!(saved.entries().len(), MAX_SAVED);
        for (i, stem) in stems.iter().enumerate() {
            let kept = stem.with_extension("tokens").exists();
            assert_eq!(kept, !(i == 1 || i == 2), "prompt {i}");
            assert_eq!(stem.with_extension("state").exists(), kept, "prompt {i}");
        }
    }

    #[test]
    fn a_model_file_changed_gets_another_directory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("Model Q4.gguf");
        fs::write(&file, b"one").unwrap();
        let first = model_dir_name(&file);
        assert!(first.starts_with("Model_Q4-"), "{first}");
        assert_eq!(model_dir_name(&file), first, "stable");
        fs::write(&file, b"a longer one").unwrap();
        assert_ne!(model_dir_name(&file), first);
    }
}
