//! [`Sampling`]: how a model picks its tokens (temperature, nucleus, stop sequences, seed,
//! penalties), and [`SamplingOption`], each setting by name, so that a caller can ask a model
//! whether it takes one before sending it.

use std::fmt;

/// How a model picks its tokens; `None` (empty for `stop`) leaves each to the provider's
/// default. A [`ModelRequest`](super::ModelRequest) carries one, and so do an invocation's
/// `RunOptions`.
///
/// Not every model takes every setting: [`Model::supports`](super::Model::supports) says which.
///
/// ```
/// use tinyagent::model::{Sampling, SamplingOption};
///
/// let sampling = Sampling::new().top_p(0.9).seed(7);
/// assert_eq!(sampling.options().collect::<Vec<_>>(), [SamplingOption::TopP, SamplingOption::Seed]);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Sampling {
    /// Sampling temperature (0 picks the most likely token).
    pub temperature: Option<f32>,
    /// Nucleus sampling: only the most likely tokens whose probabilities add up to this.
    pub top_p: Option<f32>,
    /// Text at which the model stops (not included in its answer); empty for none.
    pub stop: Vec<String>,
    /// A seed for repeatable sampling (best effort: providers do not promise it).
    pub seed: Option<u64>,
    /// Penalises tokens that appeared at all so far (-2 to 2 where the API takes it).
    pub presence_penalty: Option<f32>,
    /// Penalises tokens by how often they appeared so far (-2 to 2 where the API takes it).
    pub frequency_penalty: Option<f32>,
}

impl Sampling {
    /// Nothing set: the provider's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`temperature`](Self::temperature).
    #[must_use]
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets [`top_p`](Self::top_p).
    #[must_use]
    pub fn top_p(mut self, top_p: f32) -> Self {
        self.top_p = Some(top_p);
        self
    }

    /// Sets the stop sequences.
    #[must_use]
    pub fn stop(mut self, stop: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.stop = stop.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the seed.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Sets the presence penalty.
    #[must_use]
    pub fn presence_penalty(mut self, penalty: f32) -> Self {
        self.presence_penalty = Some(penalty);
        self
    }

    /// Sets the frequency penalty.
    #[must_use]
    pub fn frequency_penalty(mut self, penalty: f32) -> Self {
        self.frequency_penalty = Some(penalty);
        self
    }

    /// The settings that are set, in the order of [`SamplingOption::ALL`].
    pub fn options(&self) -> impl Iterator<Item = SamplingOption> + use<> {
        use SamplingOption as O;
        let set = [
            (O::Temperature, self.temperature.is_some()),
            (O::TopP, self.top_p.is_some()),
            (O::Stop, !self.stop.is_empty()),
            (O::Seed, self.seed.is_some()),
            (O::PresencePenalty, self.presence_penalty.is_some()),
            (O::FrequencyPenalty, self.frequency_penalty.is_some()),
        ];
        set.into_iter().filter(|(_, on)| *on).map(|(o, _)| o)
    }

    /// Takes every setting `over` sets in place of this one's.
    pub fn overlay(&mut self, over: &Sampling) {
        self.temperature = over.temperature.or(self.temperature);
        self.top_p = over.top_p.or(self.top_p);
        if !over.stop.is_empty() {
            self.stop.clone_from(&over.stop);
        }
        self.seed = over.seed.or(self.seed);
        self.presence_penalty = over.presence_penalty.or(self.presence_penalty);
        self.frequency_penalty = over.frequency_penalty.or(self.frequency_penalty);
    }
}

/// A sampling setting of a [`ModelRequest`](super::ModelRequest) that a model may or may not
/// take ([`Model::supports`](super::Model::supports)).
///
/// A model that does not take one would drop it without a word; asking first lets an agent
/// refuse the request instead (`AgentError::Options`), and a
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
    /// [`Sampling::temperature`].
    Temperature,
    /// [`Sampling::top_p`]: nucleus sampling.
    TopP,
    /// [`Sampling::stop`]: stop sequences.
    Stop,
    /// [`Sampling::seed`]: repeatable sampling.
    Seed,
    /// [`Sampling::presence_penalty`].
    PresencePenalty,
    /// [`Sampling::frequency_penalty`].
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
