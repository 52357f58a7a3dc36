//! The grammars a model's output is held to, made from JSON Schemas by llama.cpp and cached
//! per schema: a call to one of the tools (or the answer), or one value.

use serde_json::json;
use tinyagent::ModelError;
use tinyagent::tools::schema::SchemaValidator;

use super::LlamaModel;
use crate::engine::other;
use crate::prompt::{self, JsonOutput};

impl LlamaModel {
    /// The grammar for `out`, and a validator per tool for the arguments.
    pub(super) fn grammar(
        &self,
        out: &JsonOutput,
    ) -> Result<(String, Vec<(String, SchemaValidator)>), ModelError> {
        let validators = out
            .tools
            .iter()
            .filter_map(|t| Some((t.name.clone(), SchemaValidator::new(&t.input_schema).ok()?)))
            .collect();
        let grammar = self.cached(out.schema.to_string(), |key| match llama_cpp_2::json_schema_to_grammar(key) {
            Ok(grammar) => Ok(grammar),
            Err(error) => {
                // Some keyword of some tool's schema has no grammar equivalent: constrain that
                // tool's arguments to "any object" and rely on the validators after decoding.
                tracing::warn!(%error, "a tool schema cannot be turned into a grammar; falling back");
                let mut branches: Vec<_> = out
                    .tools
                    .iter()
                    .map(|t| {
                        let exact = prompt::call_schema(&t.name, &t.input_schema);
                        if llama_cpp_2::json_schema_to_grammar(&exact.to_string()).is_ok() {
                            exact
                        } else {
                            tracing::warn!(tool = %t.name, "arguments constrained to any JSON object");
                            prompt::call_schema(&t.name, &json!({"type": "object"}))
                        }
                    })
                    .collect();
                if out.allow_answer {
                    branches.push(prompt::answer_schema(&out.tools));
                }
                llama_cpp_2::json_schema_to_grammar(&prompt::one_of(branches).to_string())
                    .map_err(|e| other(format!("cannot build the tool-call grammar: {e}")))
            }
        })?;
        Ok((grammar, validators))
    }

    /// The grammar of one JSON Schema (cached); when some keyword has no grammar equivalent,
    /// the grammar of any JSON object (the validator then decides).
    pub(super) fn schema_grammar(&self, schema: &serde_json::Value) -> Result<String, ModelError> {
        self.cached(schema.to_string(), |key| match llama_cpp_2::json_schema_to_grammar(key) {
            Ok(grammar) => Ok(grammar),
            Err(error) => {
                tracing::warn!(%error, "a tool schema cannot be turned into a grammar; arguments constrained to any JSON object");
                llama_cpp_2::json_schema_to_grammar(r#"{"type": "object"}"#)
                    .map_err(|e| other(format!("cannot build an argument grammar: {e}")))
            }
        })
    }

    /// The grammar cached for the schema text `key`, or the one `build` makes from it (then
    /// cached; a failure is not).
    fn cached(
        &self,
        key: String,
        build: impl FnOnce(&str) -> Result<String, ModelError>,
    ) -> Result<String, ModelError> {
        let mut cache = self
            .weights
            .grammars
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(grammar) = cache.get(&key) {
            return Ok(grammar.clone());
        }
        let grammar = build(&key)?;
        cache.insert(key, grammar.clone());
        Ok(grammar)
    }
}
