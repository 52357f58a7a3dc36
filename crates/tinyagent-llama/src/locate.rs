//! Finding the model file and checking it before llama.cpp sees it.

use std::io::Read;
use std::path::{Path, PathBuf};

use tinyagent::{ModelError, model::ModelErrorKind};

/// The environment variable naming a GGUF file to use instead of the default model.
pub const ENV_MODEL: &str = "TINYAGENT_GGUF";

/// The variable's former name, still read when [`ENV_MODEL`] is unset and it names a GGUF
/// file (a model *name* in it, as other tools put there, is not taken for a path).
const ENV_MODEL_FORMER: &str = "TINYAGENT_MODEL";

/// The file name of the default model, looked for in the repository's `models/` folder.
pub const DEFAULT_MODEL_FILE: &str = "Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf";

/// What to do when no model is found: the end of every "not found" message.
const HOW_TO_GET_ONE: &str = "run `bash scripts/fetch-model.sh` in the tinyagent repository \
     (it downloads Qwen2.5-Coder-1.5B-Instruct, about 1.1 GB, into models/), or set TINYAGENT_GGUF \
     to the path of a .gguf file";

/// The smallest file accepted as a model: a GGUF header plus something.
const MIN_MODEL_BYTES: u64 = 1024;

/// Where the default model is: `TINYAGENT_GGUF` if it is set, else the first
/// `models/Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf` found in the current directory or one of its
/// parents, else in this crate's repository.
///
/// # Errors
///
/// A [`ModelError`] whose message lists the places searched and says how to get the model:
/// run `bash scripts/fetch-model.sh`, or set `TINYAGENT_GGUF`.
///
/// ```no_run
/// let path = tinyagent_llama::find_default_model().unwrap();
/// println!("using {}", path.display());
/// ```
pub fn find_default_model() -> Result<PathBuf, ModelError> {
    if let Some(path) = std::env::var_os(ENV_MODEL).filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        if path.is_file() {
            return Ok(path);
        }
        return Err(not_found(format!(
            "{ENV_MODEL} is set to {}, which is not a file; fix it or unset it and {HOW_TO_GET_ONE}",
            path.display()
        )));
    }
    if let Some(path) = std::env::var_os(ENV_MODEL_FORMER).map(PathBuf::from) {
        if path.is_file() {
            tracing::warn!("{ENV_MODEL_FORMER} is the former name of {ENV_MODEL}; rename it");
            return Ok(path);
        }
        if path
            .extension()
            .is_some_and(|ext| ext.eq_ignore_ascii_case("gguf"))
        {
            return Err(not_found(format!(
                "{ENV_MODEL_FORMER} (now {ENV_MODEL}) is set to {}, which is not a file; fix it \
                 or unset it and {HOW_TO_GET_ONE}",
                path.display()
            )));
        }
    }
    let candidates = default_candidates();
    if let Some(found) = candidates.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    let searched = candidates
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    Err(not_found(format!(
        "no local model found (looked for {searched}); to get one, {HOW_TO_GET_ONE}"
    )))
}

fn default_candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        out.extend(
            cwd.ancestors()
                .map(|dir| dir.join("models").join(DEFAULT_MODEL_FILE)),
        );
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let repo = repo.canonicalize().unwrap_or(repo).join(DEFAULT_MODEL_FILE);
    if !out.contains(&repo) {
        out.push(repo);
    }
    out
}

fn not_found(message: String) -> ModelError {
    ModelError::new(ModelErrorKind::InvalidRequest, message).retryable(false)
}

/// Checks that `path` is a readable GGUF file (magic bytes, version, size) so that a wrong or
/// truncated file gives an error here rather than inside llama.cpp.
pub(crate) fn check_gguf(path: &Path) -> Result<(), ModelError> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| {
        let hint = if e.kind() == std::io::ErrorKind::NotFound {
            format!("; to get the default model, {HOW_TO_GET_ONE}")
        } else {
            String::new()
        };
        not_found(format!("cannot read model file {shown}: {e}{hint}")).with_source(e)
    })?;
    if !meta.is_file() {
        return Err(not_found(format!("model path {shown} is not a file")));
    }
    if meta.len() < MIN_MODEL_BYTES {
        return Err(not_found(format!(
            "{shown} is not a GGUF model: it is only {} bytes long",
            meta.len()
        )));
    }
    let mut header = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut header))
        .map_err(|e| not_found(format!("cannot read model file {shown}: {e}")).with_source(e))?;
    if &header[..4] != b"GGUF" {
        return Err(not_found(format!(
            "{shown} is not a GGUF model (it does not start with the bytes \"GGUF\"); \
             tinyagent-llama loads llama.cpp's GGUF format only"
        )));
    }
    let version = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    if !(2..=3).contains(&version) {
        return Err(not_found(format!(
            "{shown} is GGUF version {version}, which this build of llama.cpp does not read \
             (versions 2 and 3 are supported)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tinyagent-llama-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn missing_file_says_how_to_get_a_model() {
        let err = check_gguf(Path::new("/nonexistent/model.gguf")).unwrap_err();
        assert!(err.message().contains("scripts/fetch-model.sh"), "{err}");
        assert!(!err.is_retryable());
    }

    #[test]
    fn wrong_magic_is_rejected() {
        let path = temp_file("not-gguf.gguf", &[b'x'; 4096]);
        let err = check_gguf(&path).unwrap_err();
        assert!(err.message().contains("not a GGUF model"), "{err}");
    }

    #[test]
    fn tiny_file_is_rejected() {
        let path = temp_file("tiny.gguf", b"GGUF\x03\0\0\0");
        let err = check_gguf(&path).unwrap_err();
        assert!(err.message().contains("bytes long"), "{err}");
    }

    #[test]
    fn unknown_version_is_rejected() {
        let mut bytes = b"GGUF\x09\0\0\0".to_vec();
        bytes.resize(4096, 0);
        let path = temp_file("v9.gguf", &bytes);
        let err = check_gguf(&path).unwrap_err();
        assert!(err.message().contains("version 9"), "{err}");
    }

    #[test]
    fn a_directory_is_rejected() {
        let err = check_gguf(&std::env::temp_dir()).unwrap_err();
        assert!(err.message().contains("not a file"), "{err}");
    }
}
