//! The OpenAI wire types, both ways: this provider writes its requests and reads answers with
//! them, and `tinyagent-server` reads its clients' requests and writes its answers with the
//! same types, so that what one side writes the other reads.
//!
//! Reading is lenient, since compatible servers and clients differ in what they send: every
//! field may be missing or `null`, text may come as a string or as parts, tool-call arguments
//! as a string (as the spec says) or as the object itself, ids as numbers. Writing gives what
//! the spec's strictest readers take: fields that are `None` are left out, except those the
//! spec wants present as `null`.
//!
//! - [Chat Completions](chat): [`ChatMessage`], [`ChatCompletion`], [`ChatCompletionChunk`],
//!   [`ChatUsage`];
//! - [the Responses API](responses): [`ResponseObject`], [`OutputItem`],
//!   [`ResponseStreamEvent`], [`ResponseUsage`].

pub mod chat;
mod lenient;
pub mod responses;

pub use chat::{
    AnswerMessage, CHAT_COMPLETION, CHAT_COMPLETION_CHUNK, ChatCompletion, ChatCompletionChunk,
    ChatFunction, ChatMessage, ChatToolCall, ChatUsage, Choice, ChunkChoice,
    CompletionTokensDetails, Content, ContentPart, ImageUrl, PromptTokensDetails, StreamOptions,
};
pub use responses::{
    FunctionCallItem, IncompleteDetails, InputTokensDetails, MessageItem, OutputContent,
    OutputItem, OutputTokensDetails, RESPONSE, ReasoningItem, ResponseObject, ResponseStreamEvent,
    ResponseUsage,
};
