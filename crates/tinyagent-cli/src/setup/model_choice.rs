//! Which model answers: a provider chosen by `--provider`, by the options given, or by which
//! provider's key is set; and making it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tinyagent::Model;
use tinyagent_llama::{LlamaConfig, LlamaModel};

use crate::cli::{ModelArgs, Provider};
use crate::error::CliError;
use tinyagent_openai::HttpConfig;

/// The environment variable giving `--timeout`'s default, in seconds.
pub const ENV_TIMEOUT: &str = "TINYAGENT_TIMEOUT";

/// The environment variable giving `--provider`'s default.
pub const ENV_PROVIDER: &str = "TINYAGENT_PROVIDER";

/// The environment variable giving `--fallback`'s default, comma-separated.
pub const ENV_FALLBACK: &str = "TINYAGENT_FALLBACK";

/// The environment variable giving `--context-size`'s default (the embedded model's context
/// window in tokens; `0` is the model's own trained context).
pub const ENV_CONTEXT_SIZE: &str = "TINYAGENT_CONTEXT_SIZE";

/// Which model answers, decided from the options and the environment.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelChoice {
    /// The embedded model: a GGUF file (`None`: the default search) and a thread count
    /// (`None`: the default).
    Local {
        /// The file given with `--model-file`.
        file: Option<PathBuf>,
        /// The threads given with `--threads`.
        threads: Option<u32>,
        /// The context window given with `--context-size` or `TINYAGENT_CONTEXT_SIZE` (`None`:
        /// the default, the model's trained context).
        context_size: Option<u32>,
        /// Where prompts read are saved for later runs (`None`: nowhere), from
        /// `--prompt-cache`, `TINYAGENT_PROMPT_CACHE` or the user's cache directory.
        prompt_cache: Option<PathBuf>,
    },
    /// A model behind an HTTP API.
    Server {
        /// Whose API (never [`Provider::Local`]).
        provider: Provider,
        /// The base URL.
        base_url: String,
        /// The API key.
        api_key: Option<String>,
        /// The model name.
        model: String,
        /// How long the server may stay silent (`None`: the provider's default).
        timeout: Option<Duration>,
    },
}

/// A provider's environment variables and defaults.
pub(super) struct Vendor {
    pub(super) base_url_env: &'static str,
    pub(super) api_key_env: &'static str,
    pub(super) model_env: &'static str,
    pub(super) default_base_url: &'static str,
    pub(super) default_model: &'static str,
}

pub(super) fn vendor(provider: Provider) -> Vendor {
    match provider {
        Provider::Anthropic => Vendor {
            base_url_env: tinyagent_anthropic::ENV_BASE_URL,
            api_key_env: tinyagent_anthropic::ENV_API_KEY,
            model_env: tinyagent_anthropic::ENV_MODEL,
            default_base_url: tinyagent_anthropic::DEFAULT_BASE_URL,
            default_model: tinyagent_anthropic::DEFAULT_MODEL,
        },
        Provider::Gemini => Vendor {
            base_url_env: tinyagent_gemini::ENV_BASE_URL,
            api_key_env: tinyagent_gemini::ENV_API_KEY,
            model_env: tinyagent_gemini::ENV_MODEL,
            default_base_url: tinyagent_gemini::DEFAULT_BASE_URL,
            default_model: tinyagent_gemini::DEFAULT_MODEL,
        },
        Provider::Openai | Provider::OpenaiResponses | Provider::Local => Vendor {
            base_url_env: tinyagent_openai::ENV_BASE_URL,
            api_key_env: tinyagent_openai::ENV_API_KEY,
            model_env: tinyagent_openai::ENV_MODEL,
            default_base_url: tinyagent_openai::DEFAULT_BASE_URL,
            default_model: tinyagent_openai::DEFAULT_MODEL,
        },
    }
}

/// Decides the model.
///
/// `--local` (or `--model-file`) means the embedded model. Else the provider is `--provider`,
/// or `TINYAGENT_PROVIDER`, or guessed: OpenAI-compatible when `--base-url`/`--api-key` or an
/// `OPENAI_*` variable is set, Anthropic when `ANTHROPIC_API_KEY`/`ANTHROPIC_BASE_URL` is,
/// Gemini when `GEMINI_API_KEY`/`GEMINI_BASE_URL` is, else the embedded model. `--model` alone
/// is a usage error: it would otherwise send the question to a vendor without a word. Empty
/// variables count as unset; a `TINYAGENT_TIMEOUT` that is not a number of seconds is a usage
/// error.
pub fn choose_model(
    args: &ModelArgs,
    env: impl Fn(&str) -> Option<String>,
) -> Result<ModelChoice, CliError> {
    let env = |name: &str| {
        env(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    if args.local || args.model_file.is_some() {
        return local_choice(args, &env);
    }
    let from_env = match env(ENV_PROVIDER) {
        None => None,
        Some(name) => Some(
            <Provider as clap::ValueEnum>::from_str(&name, true).map_err(|_| {
                CliError::usage(format!("{ENV_PROVIDER}={name:?} is not a provider"))
                    .with_hint("use openai, openai-responses, anthropic, gemini or local")
            })?,
        ),
    };
    let provider = match args.provider.or(from_env).or_else(|| guess(args, &env)) {
        Some(Provider::Local) => return local_choice(args, &env),
        Some(provider) => provider,
        None => {
            if let Some(model) = &args.model {
                return Err(CliError::usage(format!(
                    "--model {model:?} names a model on a server, and no server is given"
                ))
                .with_hint(
                    "add --provider openai|anthropic|gemini with --api-key KEY (or the \
                     provider's key variable), or --base-url URL for an OpenAI-compatible \
                     server; for the embedded model use --model-file PATH",
                ));
            }
            return local_choice(args, &env);
        }
    };
    let v = vendor(provider);
    let base_url = args.base_url.clone().or_else(|| env(v.base_url_env));
    let api_key = api_key(args, &v, &env)?;
    if base_url.is_none() && api_key.is_none() {
        return Err(CliError::usage(format!(
            "--provider {} needs an API key, and none is given",
            provider.name()
        ))
        .with_hint(format!(
            "add --api-key KEY (or set {}), or --base-url URL (or {}) for a gateway",
            v.api_key_env, v.base_url_env
        )));
    }
    let timeout = match (args.timeout, env(ENV_TIMEOUT)) {
        (Some(t), _) => Some(t),
        (None, Some(text)) => Some(crate::cli::parse_secs(&text).map_err(|e| {
            CliError::usage(format!("{ENV_TIMEOUT}: {e}")).with_hint(format!(
                "set {ENV_TIMEOUT} to a number of seconds, such as 60"
            ))
        })?),
        (None, None) => None,
    };
    Ok(ModelChoice::Server {
        provider,
        base_url: base_url.unwrap_or_else(|| v.default_base_url.to_owned()),
        api_key,
        model: args
            .model
            .clone()
            .or_else(|| env(v.model_env))
            .unwrap_or_else(|| v.default_model.to_owned()),
        timeout,
    })
}

/// The embedded model, with the file, threads and context window the options give.
fn local_choice(
    args: &ModelArgs,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<ModelChoice, CliError> {
    let context_size = match (args.context_size, env(ENV_CONTEXT_SIZE)) {
        (Some(n), _) => Some(n),
        (None, Some(text)) => Some(text.parse::<u32>().map_err(|_| {
            CliError::usage(format!(
                "{ENV_CONTEXT_SIZE}={text:?} is not a number of tokens"
            ))
            .with_hint(format!(
                "set {ENV_CONTEXT_SIZE} to a whole number such as 8192 (0: the model's own \
                 trained context)"
            ))
        })?),
        (None, None) => None,
    };
    Ok(ModelChoice::Local {
        file: args.model_file.clone(),
        threads: args.threads,
        context_size,
        prompt_cache: prompt_cache(args.prompt_cache.as_deref(), env),
    })
}

/// Where the embedded model saves prompts: the flag (`off`: nowhere), else as
/// [`LlamaConfig::prompt_cache_dir_in`] says from the environment.
fn prompt_cache(flag: Option<&Path>, env: &impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    match flag {
        Some(dir) if dir.as_os_str() == "off" => None,
        Some(dir) => Some(dir.to_owned()),
        None => LlamaConfig::prompt_cache_dir_in(env),
    }
}

/// The provider the options and the variables set point to, if any: OpenAI-compatible for a
/// URL or key given or an `OPENAI_*` variable, then Anthropic's, then Gemini's variables.
fn guess(args: &ModelArgs, env: &impl Fn(&str) -> Option<String>) -> Option<Provider> {
    let set = |p: Provider| {
        let v = vendor(p);
        env(v.base_url_env).is_some() || env(v.api_key_env).is_some()
    };
    if args.base_url.is_some()
        || args.api_key.is_some()
        || args.api_key_env.is_some()
        || set(Provider::Openai)
    {
        Some(Provider::Openai)
    } else if set(Provider::Anthropic) {
        Some(Provider::Anthropic)
    } else if set(Provider::Gemini) {
        Some(Provider::Gemini)
    } else {
        None
    }
}

/// The key: `--api-key`, else the variable `--api-key-env` names (which must be set), else
/// the provider's variable.
fn api_key(
    args: &ModelArgs,
    v: &Vendor,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<Option<String>, CliError> {
    Ok(match (&args.api_key, &args.api_key_env) {
        (Some(key), _) => Some(key.clone()),
        (None, Some(var)) => Some(env(var).ok_or_else(|| {
            CliError::usage(format!(
                "--api-key-env {var}: the variable {var} is not set"
            ))
            .with_hint(format!(
                "export {var}=... before running, or name another variable"
            ))
        })?),
        (None, None) => env(v.api_key_env),
    })
}

/// Makes the chosen model; loading the embedded one reads its file.
pub fn make_model(choice: &ModelChoice) -> Result<Arc<dyn Model>, CliError> {
    match choice {
        ModelChoice::Local {
            file,
            threads,
            context_size,
            prompt_cache,
        } => {
            // Every core up to 4 unless told: the model answers one question at a time.
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let all = u32::try_from(cores.clamp(1, 4)).unwrap_or(1);
            let mut config = LlamaConfig::default().threads(threads.unwrap_or(all));
            if let Some(dir) = prompt_cache {
                config = config.prompt_cache_dir(dir);
            }
            if let Some(context_size) = context_size {
                config = config.context_size(*context_size);
            }
            let loaded = match file {
                Some(file) => LlamaModel::load(file, config),
                None => LlamaModel::default_model_with(config),
            };
            let model = loaded.map_err(|e| {
                CliError::failure(
                    "model_file",
                    format!("cannot load the local model: {}", e.message()),
                )
                .with_hint(
                    "or use a model server: --provider openai|anthropic|gemini with its key, or \
                     --base-url URL for an OpenAI-compatible server",
                )
            })?;
            Ok(Arc::new(model))
        }
        ModelChoice::Server {
            provider,
            base_url,
            api_key,
            model,
            timeout,
        } => {
            // The three configurations have the same setters (base URL, key), and their HTTP
            // settings' through `HttpConfig`.
            // A longer silence allowed also lengthens the whole call's limit (600 s by default
            // for every provider).
            macro_rules! configure {
                ($config:expr) => {{
                    let mut config = $config.base_url(base_url.as_str());
                    if let Some(key) = api_key {
                        config = config.api_key(key.as_str());
                    }
                    if let Some(timeout) = *timeout {
                        let whole = config.http.request_timeout.unwrap_or_default();
                        config = config
                            .silence_timeout(timeout)
                            .request_timeout(timeout.max(whole));
                    }
                    config
                }};
            }
            // What the user typed wrong is a usage error; the rest (a header the HTTP client
            // refuses) a failure. Every provider's configuration fails alike.
            let refused = |e: tinyagent_openai::ConfigError| {
                use tinyagent_openai::ConfigError::{InvalidBaseUrl, InvalidModel, InvalidSetting};
                if matches!(
                    e,
                    InvalidBaseUrl { .. } | InvalidModel { .. } | InvalidSetting { .. }
                ) {
                    CliError::usage(e.to_string())
                } else {
                    CliError::failure("config", e.to_string())
                }
            };
            match provider {
                Provider::Anthropic => {
                    use tinyagent_anthropic::{AnthropicConfig, AnthropicModel};
                    let config = configure!(AnthropicConfig::new(model.as_str()));
                    let model = AnthropicModel::new(config).map_err(refused)?;
                    Ok(Arc::new(model))
                }
                Provider::Gemini => {
                    use tinyagent_gemini::{GeminiConfig, GeminiModel};
                    let config = configure!(GeminiConfig::new(model.as_str()));
                    let model = GeminiModel::new(config).map_err(refused)?;
                    Ok(Arc::new(model))
                }
                Provider::OpenaiResponses => {
                    use tinyagent_openai::{ResponsesConfig, ResponsesModel};
                    let config = configure!(ResponsesConfig::new(model.as_str()));
                    let model = ResponsesModel::new(config).map_err(refused)?;
                    Ok(Arc::new(model))
                }
                Provider::Openai | Provider::Local => {
                    use tinyagent_openai::{OpenAiConfig, OpenAiModel};
                    let config = configure!(OpenAiConfig::new(model.as_str()));
                    let model = OpenAiModel::new(config).map_err(refused)?;
                    Ok(Arc::new(model))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
