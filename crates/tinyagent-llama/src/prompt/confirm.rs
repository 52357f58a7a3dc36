//! Whether a chosen call serves the request, asked of the model in a prompt of its own. A
//! small model that prefers some tool to answering often picks one that shares a word with
//! the request: a hotel booking in 北京 gets the weather of 北京, an alarm the current time.
//! The values of such a call come from the conversation, so the argument check passes it;
//! asked the narrower question — is this call's result what the user's last message asks
//! for? — the same model tells the two apart, and a request the tool serves keeps its call.

use tinyagent::{ModelRequest, Role, model::ToolDefinition};

use super::ChatTurn;
use super::direct::{shorten, summary};

/// The most characters of one message the transcript shows.
const MESSAGE_CHARS: usize = 300;

/// The most messages (and tool calls, and results) the transcript shows, the last ones.
const TRANSCRIPT_LINES: usize = 8;

/// What the checker is told after the examples, before the tools (all of it the same for every
/// call of an agent, so its reading is kept by the prompt cache).
const CHECKER: &str = "You check the tool calls of an assistant. The assistant can act for \
     the user, or look something up, only with these tools:\n";

/// Worked examples, with tools of their own (none of them an agent's usual tools, so that no
/// answer is copied), before [`CHECKER`]: without them the model says yes or no with a lead of
/// a few tenths of a nat either way, with them a request no tool serves leads "no" by about
/// one nat.
const EXAMPLES: &str = "Examples of checked calls, with other tools than yours:\n\
     - User: 美元兑人民币的汇率是多少？ Call: get_exchange_rate({\"from\": \"USD\", \"to\": \"CNY\"}) → yes\n\
     - User: 帮我把 100 美元换成人民币。 Call: get_exchange_rate({\"from\": \"USD\", \"to\": \"CNY\"}) → no (it only tells the rate; it exchanges nothing)\n\
     - User: Find flights from Rome to Paris on Friday. Call: search_flights({\"from\": \"Rome\", \"to\": \"Paris\"}) → yes\n\
     - User: Book me a hotel in Paris. Call: search_flights({\"to\": \"Paris\"}) → no (a hotel is not a flight)\n\
     - User: Which restaurants in Rome are good? Call: search_flights({\"to\": \"Rome\"}) → no\n\
     - User: Remind me to call Anna at 5 pm. Call: get_stock_price({\"symbol\": \"ANNA\"}) → no\n\
     - User: How is Apple's stock doing? Call: get_stock_price({\"symbol\": \"AAPL\"}) → yes\n\n";

/// The question after the call.
const QUESTION: &str = "Is the result of this call what the user's last message asks for, or \
     needed to answer it? Answer no when the user asks for something this tool does not do — \
     to book, buy, order, send, remind, play, write or recommend something, or for \
     information the tool does not return — even when the call uses a place, a time or a \
     number from the message. Answer yes or no.";

/// The continuations that keep the call.
pub(crate) const CONFIRM_YES: [&str; 2] = ["yes", "Yes"];

/// The continuations that give it up for an answer.
pub(crate) const CONFIRM_NO: [&str; 2] = ["no", "No"];

/// The chat asking whether the call to `tool` with `arguments` (JSON text) serves the last
/// user message of `req`, among the offered `tools`.
pub(crate) fn confirm_chat(
    req: &ModelRequest,
    tools: &[ToolDefinition],
    tool: &ToolDefinition,
    arguments: &str,
) -> Vec<ChatTurn> {
    let mut system = String::from(EXAMPLES);
    system.push_str(CHECKER);
    for offered in tools {
        system.push_str(&format!(
            "- {}: {}\n",
            offered.name,
            summary(&offered.description)
        ));
    }
    let user = format!(
        "Conversation:\n{}\n\nThe assistant calls {}({}) — {}\n\n{QUESTION}",
        transcript(req),
        tool.name,
        arguments.trim(),
        summary(&tool.description),
    );
    vec![
        ChatTurn {
            role: "system",
            content: system.trim_end().to_owned(),
        },
        ChatTurn {
            role: "user",
            content: user,
        },
    ]
}

/// The conversation's last [`TRANSCRIPT_LINES`] messages, calls and results, one per line.
fn transcript(req: &ModelRequest) -> String {
    let mut lines = Vec::new();
    for message in &req.messages {
        let text = message.text();
        let text = text.trim();
        match message.role {
            Role::User if !text.is_empty() => lines.push(format!("User: {}", cut(text))),
            Role::Assistant => {
                if !text.is_empty() {
                    lines.push(format!("Assistant: {}", cut(text)));
                }
                for call in message.tool_calls() {
                    lines.push(format!(
                        "Assistant called {}({})",
                        call.name,
                        cut(&call.arguments)
                    ));
                }
            }
            _ => {}
        }
        for result in message.tool_results() {
            lines.push(format!("Tool result: {}", cut(&result.content)));
        }
    }
    let skip = lines.len().saturating_sub(TRANSCRIPT_LINES);
    lines[skip..].join("\n")
}

/// `text` on one line, at most [`MESSAGE_CHARS`] characters.
fn cut(text: &str) -> String {
    shorten(
        &text.split_whitespace().collect::<Vec<_>>().join(" "),
        MESSAGE_CHARS,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tinyagent::{Message, Part, ToolCall, ToolResult};

    fn weather() -> ToolDefinition {
        ToolDefinition::new(
            "get_weather",
            "Get the current weather of a city. Returns the temperature.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        )
    }

    #[test]
    fn the_checker_reads_the_conversation_and_the_call() {
        let call = ToolCall::new("c1", "get_weather", r#"{"city":"北京"}"#);
        let req = ModelRequest::new(vec![
            Message::user("北京天气怎么样？"),
            Message::new(Role::Assistant, vec![Part::ToolCall(call)]),
            Message::from_tool_results([ToolResult::ok("c1", "get_weather", r#"{"temp": 25}"#)]),
            Message::assistant("北京 25 度。"),
            Message::user("帮我预订一间北京的酒店。"),
        ])
        .tools(vec![weather()]);
        let chat = confirm_chat(&req, &req.tools, &req.tools[0], r#" {"city": "北京"} "#);
        assert_eq!(chat.len(), 2);
        let system = &chat[0].content;
        let examples = system
            .find("Examples of checked calls")
            .unwrap_or(usize::MAX);
        let tools = system
            .find("- get_weather: Get the current weather of a city.")
            .unwrap_or(usize::MAX);
        assert!(examples < tools && tools < usize::MAX, "{system}");
        // The system message is the same whatever is asked: its reading is cached.
        let other = confirm_chat(&req, &req.tools, &req.tools[0], "{}");
        assert_eq!(other[0], chat[0]);
        let user = &chat[1].content;
        let order = [
            "User: 北京天气怎么样？",
            r#"Assistant called get_weather({"city":"北京"})"#,
            r#"Tool result: {"temp": 25}"#,
            "Assistant: 北京 25 度。",
            "User: 帮我预订一间北京的酒店。",
            r#"The assistant calls get_weather({"city": "北京"})"#,
            "Answer yes or no.",
        ];
        let mut from = 0;
        for part in order {
            let at = user[from..]
                .find(part)
                .unwrap_or_else(|| panic!("{part:?} missing or out of order in {user}"));
            from += at + part.len();
        }
    }

    #[test]
    fn a_long_conversation_shows_its_end_and_long_messages_are_cut() {
        let mut messages: Vec<Message> = (0..20).map(|i| Message::user(format!("q{i}"))).collect();
        messages.push(Message::user("x".repeat(1000)));
        let req = ModelRequest::new(messages);
        let text = transcript(&req);
        assert_eq!(text.lines().count(), TRANSCRIPT_LINES);
        assert!(!text.contains("q12\n") && text.contains("q13\n"));
        let last = text.lines().last().unwrap_or_default();
        assert_eq!(last.chars().count(), "User: ".len() + MESSAGE_CHARS + 1);
        assert!(last.ends_with('…'));
    }
}
