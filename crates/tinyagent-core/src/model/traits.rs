//! [`Model`], a language model behind an agent.

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::{self, BoxStream};

use super::{ModelError, ModelEvent, ModelRequest, ModelResponse, SamplingOption};
use crate::util::BoxFuture;

/// A language model: given the instruction, the history and the tool definitions, it returns
/// the next assistant message.
///
/// Object safe; agents hold it as `Arc<dyn Model>`. Implement [`generate`](Self::generate);
/// a provider that can stream also overrides [`stream`](Self::stream), whose default is one
/// `generate` call replayed as events (see [`ModelResponse::into_events`]).
///
/// ```
/// use tinyagent::{BoxFuture, Message, Model, ModelError, ModelRequest, ModelResponse, Usage, model::FinishReason};
///
/// /// Answers every question with the last user message, reversed.
/// struct Reverse;
///
/// impl Model for Reverse {
///     fn generate<'a>(&'a self, req: &'a ModelRequest)
///         -> BoxFuture<'a, Result<ModelResponse, ModelError>>
///     {
///         Box::pin(async move {
///             let last = req.messages.last().map(|m| m.text()).unwrap_or_default();
///             let text: String = last.chars().rev().collect();
///             Ok(ModelResponse::new(Message::assistant(text), Usage::default(), FinishReason::Stop))
///         })
///     }
/// }
/// # tokio_test::block_on(async {
/// let req = ModelRequest::new(vec![Message::user("abc")]);
/// assert_eq!(Reverse.generate(&req).await.unwrap().message.text(), "cba");
/// # });
/// ```
pub trait Model: Send + Sync {
    /// The model's name, for logs (`gen_ai.request.model`).
    fn name(&self) -> &str {
        "model"
    }

    /// Who serves the model, in OpenTelemetry's words (`gen_ai.provider.name`: `"openai"`,
    /// `"anthropic"`, `"gcp.gemini"`, ...); `None` (the default) when it is not known.
    fn provider(&self) -> Option<&str> {
        None
    }

    /// Produces the next assistant message.
    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>>;

    /// Produces the next assistant message as a stream of events that ends with
    /// [`ModelEvent::Done`]. The agent loop calls this one.
    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        Box::pin(stream::once(self.generate(req)).flat_map(|res| {
            let events: Vec<Result<ModelEvent, ModelError>> = match res {
                Ok(resp) => resp.into_events().into_iter().map(Ok).collect(),
                Err(err) => vec![Err(err)],
            };
            stream::iter(events)
        }))
    }

    /// Whether the model takes `option` when a request sets it. The default takes only
    /// [`SamplingOption::Temperature`]: a model that takes more says so, and an agent refuses
    /// a run that asks a model for an option it would drop
    /// (`AgentError::Options`).
    fn supports(&self, option: SamplingOption) -> bool {
        option == SamplingOption::Temperature
    }

    /// How many tokens `text` is for this model, by its own tokenizer, when the model has one
    /// at hand (the embedded model does); `None` (the default) otherwise, and a
    /// `ContextPolicy` estimates instead.
    fn count_tokens(&self, text: &str) -> Option<u64> {
        let _ = text;
        None
    }
}

impl<M: Model + ?Sized> Model for Arc<M> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn provider(&self) -> Option<&str> {
        (**self).provider()
    }

    fn supports(&self, option: SamplingOption) -> bool {
        (**self).supports(option)
    }

    fn count_tokens(&self, text: &str) -> Option<u64> {
        (**self).count_tokens(text)
    }

    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        (**self).generate(req)
    }

    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        (**self).stream(req)
    }
}

impl<M: Model + ?Sized> Model for Box<M> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn provider(&self) -> Option<&str> {
        (**self).provider()
    }

    fn supports(&self, option: SamplingOption) -> bool {
        (**self).supports(option)
    }

    fn count_tokens(&self, text: &str) -> Option<u64> {
        (**self).count_tokens(text)
    }

    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        (**self).generate(req)
    }

    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        (**self).stream(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Message, Part};
    use crate::message::{Role, ToolCall};
    use crate::model::{FinishReason, Usage};

    struct Fixed(ModelResponse);

    impl Model for Fixed {
        fn generate<'a>(
            &'a self,
            _req: &'a ModelRequest,
        ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
            Box::pin(async move { Ok(self.0.clone()) })
        }
    }

    #[test]
    fn the_default_stream_replays_generate_as_events() {
        let message = Message::new(
            Role::Assistant,
            vec![
                Part::text("看看"),
                ToolCall::new("c1", "get_weather", r#"{"city":"北京"}"#).into(),
            ],
        );
        let response = ModelResponse::new(message, Usage::new(3, 4), FinishReason::ToolCalls);
        let model = Fixed(response.clone());
        let req = ModelRequest::new(vec![Message::user("hi")]);
        let events: Vec<ModelEvent> =
            futures::executor::block_on(model.stream(&req).map(|e| e.unwrap()).collect::<Vec<_>>());
        assert_eq!(
            events,
            [
                ModelEvent::TextDelta("看看".into()),
                ModelEvent::ToolCallStart {
                    id: "c1".into(),
                    name: "get_weather".into()
                },
                ModelEvent::ToolCallDelta {
                    id: "c1".into(),
                    arguments_fragment: r#"{"city":"北京"}"#.into()
                },
                ModelEvent::Done(response),
            ]
        );
    }
}
