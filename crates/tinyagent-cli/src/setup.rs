//! From options to a model, tools and an agent.

mod assemble;
mod model_choice;
mod model_spec;
mod prices;
mod sources;
mod tool_search;

pub use assemble::{Assembled, DEFAULT_INSTRUCTION, assemble, assemble_named, load_with_fallbacks};
pub use model_choice::{ModelChoice, choose_model};
pub use model_spec::choose_fallbacks;
pub use sources::{SourcedTool, all_tools, argument_summary};
pub use tool_search::eval_search;
