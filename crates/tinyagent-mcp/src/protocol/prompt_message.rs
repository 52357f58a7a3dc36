//! The messages of a rendered prompt ([`McpPromptMessage`]): what a served prompt renders
//! and what a client gets from a server's prompt.

use tinyagent::ContentPart;

/// Who says a prompt's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptRole {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// One message of a rendered prompt: who says it and what (text, an image, audio or an
/// embedded resource).
#[derive(Debug, Clone, PartialEq)]
pub struct McpPromptMessage {
    /// Who says it.
    pub role: PromptRole,
    /// What is said.
    pub content: ContentPart,
}

impl McpPromptMessage {
    /// A message of the user with this text.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: PromptRole::User,
            content: ContentPart::text(text),
        }
    }

    /// A message of the assistant with this text.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: PromptRole::Assistant,
            content: ContentPart::text(text),
        }
    }

    /// A message of `role` with any content.
    pub fn new(role: PromptRole, content: ContentPart) -> Self {
        Self { role, content }
    }

    /// The message as a [`tinyagent::Message`]: text as it is, other content said in words
    /// (an embedded resource's text is kept whole).
    pub fn to_message(&self) -> tinyagent::Message {
        let text = match &self.content {
            ContentPart::Resource {
                text: Some(text), ..
            } => text.clone(),
            other => other
                .as_text()
                .map_or_else(|| other.describe(), str::to_owned),
        };
        match self.role {
            PromptRole::User => tinyagent::Message::user(text),
            PromptRole::Assistant => tinyagent::Message::assistant(text),
        }
    }
}
