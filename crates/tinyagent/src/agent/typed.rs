//! Typed answers: [`LlmAgent::ask_as`] asks the final answer as JSON of a type's shape and
//! decodes it.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use super::{AgentError, LlmAgent};
use crate::context::{Invocation, Session};
use crate::message::Message;
use crate::model::ResponseFormat;
use crate::util::cut;
use tinyagent_tools::arguments::MAX_PROBLEM_CHARS;

impl LlmAgent {
    /// Runs the agent on a user message in `session` and returns its final answer decoded as
    /// `T`.
    ///
    /// The model is asked for JSON of `T`'s shape ([`ResponseFormat::of::<T>`], sent as the
    /// provider's structured output). An answer that does not decode as `T` is shown to the
    /// model once, with what is wrong, in the same session; a second miss is an
    /// [`AgentError::InvalidAnswer`] naming the problem. An answer wrapped in a Markdown code
    /// fence is read without the fence.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tinyagent::{LlmAgent, Session};
    /// use tinyagent::testing::{ScriptedModel, reply};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Weather {
    ///     city: String,
    ///     celsius: f64,
    /// }
    ///
    /// let model = Arc::new(ScriptedModel::new([reply::text(r#"{"city": "Beijing", "celsius": 22.5}"#)]));
    /// let agent = LlmAgent::builder("weather").model(model.clone()).build().unwrap();
    /// # tokio_test::block_on(async {
    /// let weather: Weather = agent.ask_as(&Session::new(), "Weather in Beijing?").await.unwrap();
    /// assert_eq!((weather.city.as_str(), weather.celsius), ("Beijing", 22.5));
    /// # });
    /// let asked = model.requests()[0].response_format.clone().unwrap();
    /// assert_eq!(asked.name, "Weather");
    /// ```
    pub async fn ask_as<T>(
        &self,
        session: &Session,
        message: impl Into<Message>,
    ) -> Result<T, AgentError>
    where
        T: DeserializeOwned + JsonSchema + 'static,
    {
        let format = ResponseFormat::of::<T>();
        let answer = self.answer_in(session, message.into(), &format).await?;
        let problem = match decode::<T>(&answer) {
            Ok(value) => return Ok(value),
            Err(problem) => problem,
        };
        let feedback = format.feedback(&problem);
        let answer = self
            .answer_in(session, Message::user(feedback), &format)
            .await?;
        decode::<T>(&answer).map_err(|problem| AgentError::InvalidAnswer {
            agent: self.config.name.to_string(),
            format: format.name.clone(),
            problem,
        })
    }

    async fn answer_in(
        &self,
        session: &Session,
        message: Message,
        format: &ResponseFormat,
    ) -> Result<String, AgentError> {
        let inv = Invocation::new(session.clone(), message);
        let events = super::run::run_with_format(self.config.clone(), inv, Some(format.clone()));
        super::traits::answer(&self.config.name, events).await
    }
}

/// Decodes an answer as `T`, or says what is wrong with it (where, and what), bounded.
fn decode<T: DeserializeOwned>(answer: &str) -> Result<T, String> {
    let text = ResponseFormat::unfenced(answer);
    if text.is_empty() {
        return Err("the answer is empty".to_owned());
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let decoded = serde_path_to_error::deserialize::<_, T>(&mut de);
    let (path, err) = match decoded {
        Ok(value) => match de.end() {
            Ok(()) => return Ok(value),
            Err(err) => (String::new(), err),
        },
        Err(err) => (err.path().to_string(), err.into_inner()),
    };
    let at = if path == "." || path.is_empty() {
        String::new()
    } else {
        format!(" at `{}`", cut(&path, MAX_PROBLEM_CHARS))
    };
    let what = if err.is_syntax() || err.is_eof() {
        "it is not valid JSON"
    } else {
        "it does not match"
    };
    Err(format!(
        "{what}{at}: {}",
        cut(&err.to_string(), MAX_PROBLEM_CHARS)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize, PartialEq)]
    struct P {
        x: i32,
    }

    #[test]
    fn answers_decode_or_say_what_is_wrong() {
        assert_eq!(decode::<P>(r#" {"x": 1} "#).unwrap(), P { x: 1 });
        assert_eq!(decode::<P>("```json\n{\"x\": 2}\n```").unwrap(), P { x: 2 });
        assert_eq!(decode::<P>("```\n{\"x\": 3}\n```").unwrap(), P { x: 3 });
        let err = decode::<P>(r#"{"x": "one"}"#).unwrap_err();
        assert!(
            err.starts_with("it does not match at `x`: invalid type"),
            "{err}"
        );
        let err = decode::<P>("The answer is 1").unwrap_err();
        assert!(err.starts_with("it is not valid JSON"), "{err}");
        let err = decode::<P>(r#"{"x": 1} and more"#).unwrap_err();
        assert!(err.contains("trailing characters"), "{err}");
        assert_eq!(decode::<P>("  ").unwrap_err(), "the answer is empty");
        let long = format!("{{\"x\": \"{}\"}}", "y".repeat(10_000));
        assert!(decode::<P>(&long).unwrap_err().len() < 1_000);
    }
}
