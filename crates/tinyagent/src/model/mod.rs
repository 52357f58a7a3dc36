//! The model behind an agent, beyond the [`Model`] trait and its request and response: the events
//! of a streamed answer, why it finished, the tools it is offered and how it must choose, and typed
//! answers.

mod breaker;
mod cost;
pub(crate) mod error;
mod events;
mod fallback;
mod price;
pub(crate) mod request;
pub(crate) mod response;
mod response_builder;
mod response_format;
pub(crate) mod run_options;
mod sampling;
pub(crate) mod traits;

pub use breaker::CircuitBreakerModel;
pub use cost::Cost;
pub(crate) use error::ModelError;
pub use error::ModelErrorKind;
pub use events::ModelEvent;
pub use fallback::FallbackModel;
pub use price::{PRICES_AS_OF, Price, PriceTable};
pub(crate) use request::ModelRequest;
pub use request::{ToolChoice, ToolDefinition};
pub use response::FinishReason;
pub(crate) use response::{ModelResponse, Usage};
pub use response_builder::ModelResponseBuilder;
pub use response_format::ResponseFormat;
pub(crate) use run_options::RunOptions;
pub use sampling::{Sampling, SamplingOption};
pub(crate) use traits::Model;
