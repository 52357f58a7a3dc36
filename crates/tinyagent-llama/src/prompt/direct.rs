//! What an answer given instead of a tool call is told about the tools: what the agent can
//! do, so that a request none of them serves is answered with that, or with "I cannot do
//! that", never as if it had been done.

use tinyagent::model::ToolDefinition;

/// The most tools the note lists by name; the rest are counted.
const LISTED_TOOLS: usize = 12;

/// The most characters of a tool's description the note shows (its first sentence or line,
/// cut there).
const DESCRIPTION_CHARS: usize = 120;

/// The note for an answer chosen over `tools`, to follow the instruction; empty when no tool
/// is offered.
pub(crate) fn capabilities_note(tools: &[ToolDefinition]) -> String {
    if tools.is_empty() {
        return String::new();
    }
    let mut text =
        String::from("\n\nYou can act for the user, or look anything up, only with these tools:\n");
    for tool in tools.iter().take(LISTED_TOOLS) {
        text.push_str(&format!(
            "- {}: {}\n",
            tool.name,
            summary(&tool.description)
        ));
    }
    if tools.len() > LISTED_TOOLS {
        text.push_str(&format!("- and {} more\n", tools.len() - LISTED_TOOLS));
    }
    text.push_str(
        "None of them is called for the user's last message: reply to it yourself, briefly. \
         If it asks you to do something for the user outside this chat, or for current \
         information, that these tools do not give, say that you cannot do that and what you \
         can do with them. Never write as if it had been done, and never make up such \
         information.",
    );
    text
}

/// The first sentence or line of `description`, at most [`DESCRIPTION_CHARS`] characters.
pub(super) fn summary(description: &str) -> String {
    let description = description.trim();
    let first = description
        .split_inclusive(['\n', '。'])
        .next()
        .unwrap_or(description);
    let first = match first.find(". ") {
        Some(at) => &first[..=at],
        None => first,
    };
    shorten(first.trim(), DESCRIPTION_CHARS)
}

/// `text` cut to at most `max` characters, with `…` where it was cut.
pub(super) fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
