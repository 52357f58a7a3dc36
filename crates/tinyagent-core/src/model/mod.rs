//! The model behind an agent, beyond the [`Model`] trait and its request and response: the events
//! of a streamed answer, why it finished, the tools it is offered and how it must choose, and typed
//! answers.

mod breaker;
mod cost;
#[doc(hidden)]
pub mod error;
mod events;
mod fallback;
mod price;
#[doc(hidden)]
pub mod request;
#[doc(hidden)]
pub mod response;
mod response_builder;
mod response_format;
#[doc(hidden)]
pub mod run_options;
mod sampling;
#[doc(hidden)]
pub mod traits;

pub use breaker::CircuitBreakerModel;
pub use cost::Cost;
#[doc(hidden)]
pub use error::ModelError;
pub use error::ModelErrorKind;
pub use events::ModelEvent;
pub use fallback::FallbackModel;
pub use price::{PRICES_AS_OF, Price, PriceTable};
#[doc(hidden)]
pub use request::ModelRequest;
pub use request::{ToolChoice, ToolDefinition};
pub use response::FinishReason;
#[doc(hidden)]
pub use response::{ModelResponse, Usage};
pub use response_builder::ModelResponseBuilder;
pub use response_format::ResponseFormat;
#[doc(hidden)]
pub use run_options::RunOptions;
pub use sampling::{Sampling, SamplingOption};
#[doc(hidden)]
pub use traits::Model;
