//! Where `tinyagent chat` reads its lines: [`Input`], a line editor with history on a
//! terminal, or plain lines from a pipe.

use std::io;
use std::path::PathBuf;

use crate::error::CliError;

/// Where chat lines come from: a line editor with history, or plain lines.
pub enum Input {
    Editor {
        editor: Box<rustyline::DefaultEditor>,
        history: Option<PathBuf>,
    },
    Lines(io::Lines<io::StdinLock<'static>>),
}

impl Input {
    pub fn editor() -> Result<Self, CliError> {
        let mut editor = rustyline::DefaultEditor::new().map_err(|e| {
            CliError::failure("terminal", format!("cannot start the line editor: {e}"))
        })?;
        let history = history_path();
        if let Some(path) = &history {
            let _ = editor.load_history(path);
        }
        Ok(Self::Editor {
            editor: Box::new(editor),
            history,
        })
    }

    /// The next line; `None` at the end of input.
    pub fn read_line(&mut self) -> Result<Option<String>, CliError> {
        match self {
            Self::Editor { editor, .. } => loop {
                match editor.readline("› ") {
                    Ok(line) => {
                        if !line.trim().is_empty() {
                            let _ = editor.add_history_entry(line.as_str());
                        }
                        return Ok(Some(line));
                    }
                    Err(rustyline::error::ReadlineError::Interrupted) => continue,
                    Err(rustyline::error::ReadlineError::Eof) => return Ok(None),
                    Err(e) => {
                        return Err(CliError::failure(
                            "terminal",
                            format!("cannot read a line: {e}"),
                        ));
                    }
                }
            },
            Self::Lines(lines) => match lines.next() {
                Some(Ok(line)) => Ok(Some(line)),
                Some(Err(e)) => Err(CliError::failure(
                    "input",
                    format!("cannot read standard input: {e}"),
                )),
                None => Ok(None),
            },
        }
    }

    /// Saves the history, if there is one.
    pub fn save(&mut self) {
        if let Self::Editor {
            editor,
            history: Some(path),
        } = self
        {
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = editor.save_history(path);
        }
    }
}

/// The chat history file: `TINYAGENT_HISTORY` (empty: none), else `tinyagent/history.txt` in
/// the user's data folder.
fn history_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("TINYAGENT_HISTORY") {
        return (!path.is_empty()).then(|| PathBuf::from(path));
    }
    let non_empty = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let data = if cfg!(windows) {
        non_empty("APPDATA")
    } else if cfg!(target_os = "macos") {
        non_empty("HOME").map(|h| h.join("Library/Application Support"))
    } else {
        non_empty("XDG_DATA_HOME").or_else(|| non_empty("HOME").map(|h| h.join(".local/share")))
    }?;
    Some(data.join("tinyagent").join("history.txt"))
}
