//! [`SamplingOption`]: the sampling settings of a [`ModelRequest`](super::ModelRequest) that
//! not every model takes, so that a caller can ask before sending one.

use std::fmt;

/// A sampling setting of a [`ModelRequest`](super::ModelRequest) that a model may or may not
/// take ([`Model::supports`](super::Model::supports)).
///
/// A model that does not take one would drop it without a word; asking first lets an agent
/// refuse the request instead ([`AgentError::Options`](crate::AgentError::Options)), and a
/// server answer `400` naming the field.
///
/// ```
/// use tinyagent::model::SamplingOption;
///
/// assert_eq!(SamplingOption::TopP.name(), "top_p");
/// assert_eq!(SamplingOption::from_name("seed"), Some(SamplingOption::Seed));
/// assert_eq!(SamplingOption::from_name("n"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SamplingOption {
    /// [`ModelRequest::temperature`](super::ModelRequest::temperature).
    Temperature,
    /// [`ModelRequest::top_p`](super::ModelRequest::top_p): nucleus sampling.
    TopP,
    /// [`ModelRequest::stop`](super::ModelRequest::stop): stop sequences.
    Stop,
    /// [`ModelRequest::seed`](super::ModelRequest::seed): repeatable sampling.
    Seed,
    /// [`ModelRequest::presence_penalty`](super::ModelRequest::presence_penalty).
    PresencePenalty,
    /// [`ModelRequest::frequency_penalty`](super::ModelRequest::frequency_penalty).
    FrequencyPenalty,
}

impl SamplingOption {
    /// Every option, in the order of the request's fields.
    pub const ALL: [SamplingOption; 6] = [
        Self::Temperature,
        Self::TopP,
        Self::Stop,
        Self::Seed,
        Self::PresencePenalty,
        Self::FrequencyPenalty,
    ];

    /// The option's name: its field in a request (and in OpenAI's API).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Temperature => "temperature",
            Self::TopP => "top_p",
            Self::Stop => "stop",
            Self::Seed => "seed",
            Self::PresencePenalty => "presence_penalty",
            Self::FrequencyPenalty => "frequency_penalty",
        }
    }

    /// The option named `name`, if it is one.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.name() == name)
    }
}

impl fmt::Display for SamplingOption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
