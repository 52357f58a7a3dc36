//! Models named in one option: the fallbacks of `--fallback` (and `TINYAGENT_FALLBACK`) and the
//! summarizer of `--summarizer`, each as `PROVIDER[:MODEL][,base-url=URL][,api-key-env=VAR]`.
//!
//! A comma-separated list: an item without `=` starts a model (`openai:gpt-4o-mini`), and the
//! `key=value` items after it are that model's settings. So one value may hold several models
//! (`anthropic,openai:gpt-4o-mini,base-url=http://127.0.0.1:8000/v1`), and the environment
//! variable takes the same form as the flag.

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::{ModelArgs, Provider};
use crate::error::CliError;

use super::model_choice::{ENV_FALLBACK, ENV_TIMEOUT, ModelChoice, vendor};

/// The settings a model named in an option may carry.
const KEYS: &str = "base-url and api-key-env";

/// One model as an option names it, before its provider's variables are read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    /// The option's text for this model, for messages (never a key: only a variable's name).
    pub shown: String,
    /// The provider, as written.
    pub provider: String,
    /// The model, when one is named.
    pub model: Option<String>,
    /// `base-url=`: the model's own server.
    pub base_url: Option<String>,
    /// `api-key-env=`: the variable its key is read from.
    pub api_key_env: Option<String>,
}

/// Reads the models of an option's values. `flag` names the option in messages.
pub fn parse_specs(values: &[String], flag: &str) -> Result<Vec<ModelSpec>, CliError> {
    let mut specs: Vec<ModelSpec> = Vec::new();
    for item in values.iter().flat_map(|v| v.split(',')) {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let Some((key, value)) = item.split_once('=') else {
            let (provider, model) = match item.split_once(':') {
                Some((provider, model)) => (provider.trim(), Some(model.trim())),
                None => (item, None),
            };
            specs.push(ModelSpec {
                shown: item.to_owned(),
                provider: provider.to_owned(),
                model: model.filter(|m| !m.is_empty()).map(str::to_owned),
                base_url: None,
                api_key_env: None,
            });
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        let Some(spec) = specs.last_mut() else {
            return Err(CliError::usage(format!(
                "{flag}: `{key}=` must follow the model it is for"
            ))
            .with_hint(format!(
                "{flag} PROVIDER[:MODEL][,base-url=URL][,api-key-env=VAR], such as \
                 openai:gpt-4o-mini,base-url=http://127.0.0.1:8000/v1"
            )));
        };
        let slot = match key {
            "base-url" | "base_url" => &mut spec.base_url,
            "api-key-env" | "api_key_env" => &mut spec.api_key_env,
            _ => {
                return Err(CliError::usage(format!(
                    "{flag} {:?}: unknown setting {key:?}",
                    spec.shown
                ))
                .with_hint(format!("a model named in {flag} takes {KEYS}")));
            }
        };
        if value.is_empty() {
            return Err(CliError::usage(format!(
                "{flag} {:?}: {key}= is empty",
                spec.shown
            )));
        }
        // The text shown in messages names a URL without its credentials, a variable by name.
        let shown_value = if key.starts_with("base") {
            tinyagent::redact::url(value)
        } else {
            value.to_owned()
        };
        spec.shown = format!("{},{key}={shown_value}", spec.shown);
        *slot = Some(value.to_owned());
    }
    Ok(specs)
}

/// The models `--fallback` (or `TINYAGENT_FALLBACK`) names, in order, each with the same
/// `--timeout` (see [`resolve`]).
pub fn choose_fallbacks(
    args: &ModelArgs,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Vec<ModelChoice>, CliError> {
    let env = nonblank(env);
    let values = if args.fallback.is_empty() {
        env(ENV_FALLBACK).into_iter().collect()
    } else {
        args.fallback.clone()
    };
    let timeout = timeout(args, &env);
    parse_specs(&values, "--fallback")?
        .iter()
        .map(|spec| resolve(spec, "--fallback", args.threads, timeout, &env))
        .collect()
}

/// The summarizer `--summarizer` names: `None` for `off` (no summaries) or when it is not
/// given (the agent's own model), else the model.
pub fn choose_summarizer(
    text: &str,
    args: &ModelArgs,
    env: impl Fn(&str) -> Option<String>,
) -> Result<ModelChoice, CliError> {
    let env = nonblank(env);
    let specs = parse_specs(&[text.to_owned()], "--summarizer")?;
    let [spec] = specs.as_slice() else {
        return Err(CliError::usage(format!(
            "--summarizer {text:?} names {} models; give one (or off)",
            specs.len()
        )));
    };
    resolve(
        spec,
        "--summarizer",
        args.threads,
        timeout(args, &env),
        &env,
    )
}

/// Empty or blank variables count as unset.
fn nonblank(env: impl Fn(&str) -> Option<String>) -> impl Fn(&str) -> Option<String> {
    move |name| {
        env(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }
}

/// `--timeout`, else `TINYAGENT_TIMEOUT` (the main model's choice reports a bad value).
fn timeout(args: &ModelArgs, env: &impl Fn(&str) -> Option<String>) -> Option<Duration> {
    match (args.timeout, env(ENV_TIMEOUT)) {
        (Some(t), _) => Some(t),
        (None, Some(text)) => crate::cli::parse_secs(&text).ok(),
        (None, None) => None,
    }
}

/// A named model as a [`ModelChoice`]: its provider's default model unless it names one; its
/// server and key from `base-url=` and `api-key-env=`, or else from the provider's variables.
/// With `base-url=` the provider's key variable is not read: a key goes only to the server it
/// was given for. A name that is not a provider, a variable that is not set, or a server
/// model with neither key nor URL is a usage error naming the model.
fn resolve(
    spec: &ModelSpec,
    flag: &str,
    threads: Option<u32>,
    timeout: Option<Duration>,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<ModelChoice, CliError> {
    let shown = &spec.shown;
    let provider = <Provider as clap::ValueEnum>::from_str(&spec.provider, true).map_err(|_| {
        CliError::usage(format!(
            "{flag} {shown:?}: {:?} is not a provider",
            spec.provider
        ))
        .with_hint(
            "use openai, openai-responses, anthropic, gemini or local, with :MODEL to pick a \
             model",
        )
    })?;
    if provider == Provider::Local {
        if spec.base_url.is_some() || spec.api_key_env.is_some() {
            return Err(CliError::usage(format!(
                "{flag} {shown:?}: the embedded model has no server or key"
            ))
            .with_hint("local or local:PATH-TO-GGUF"));
        }
        return Ok(ModelChoice::Local {
            file: spec.model.as_ref().map(PathBuf::from),
            threads,
            context_size: None,
            prompt_cache: None,
        });
    }
    let v = vendor(provider);
    if let Some(url) = &spec.base_url {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(CliError::usage(format!(
                "{flag} {shown:?}: base-url must start with http:// or https://"
            )));
        }
    }
    let api_key = match &spec.api_key_env {
        Some(var) => Some(env(var).ok_or_else(|| {
            CliError::usage(format!(
                "{flag} {shown:?}: the variable {var} (api-key-env) is not set"
            ))
            .with_hint(format!(
                "export {var}=... before running, or name another variable"
            ))
        })?),
        None if spec.base_url.is_some() => None,
        None => env(v.api_key_env),
    };
    let base_url = spec.base_url.clone().or_else(|| env(v.base_url_env));
    if base_url.is_none() && api_key.is_none() {
        return Err(CliError::usage(format!(
            "{flag} {shown:?} needs an API key, and {} is not set",
            v.api_key_env
        ))
        .with_hint(format!(
            "set {} (or add ,api-key-env=VAR naming another variable, or ,base-url=URL for a \
             server of your own)",
            v.api_key_env
        )));
    }
    Ok(ModelChoice::Server {
        provider,
        base_url: base_url.unwrap_or_else(|| v.default_base_url.to_owned()),
        api_key,
        model: spec
            .model
            .clone()
            .or_else(|| env(v.model_env))
            .unwrap_or_else(|| v.default_model.to_owned()),
        timeout,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs(text: &str) -> Vec<ModelSpec> {
        parse_specs(&[text.to_owned()], "--fallback").unwrap()
    }

    #[test]
    fn settings_belong_to_the_model_before_them() {
        let found = specs(
            "anthropic, openai:qwen2.5:7b,base-url=http://127.0.0.1:8000/v1,api-key-env=VLLM_KEY,local",
        );
        assert_eq!(found.len(), 3);
        assert_eq!(found[0].provider, "anthropic");
        assert_eq!(found[0].base_url, None);
        assert_eq!(found[1].provider, "openai");
        assert_eq!(found[1].model.as_deref(), Some("qwen2.5:7b"));
        assert_eq!(
            found[1].base_url.as_deref(),
            Some("http://127.0.0.1:8000/v1")
        );
        assert_eq!(found[1].api_key_env.as_deref(), Some("VLLM_KEY"));
        assert_eq!(found[2].provider, "local");
    }

    #[test]
    fn misplaced_or_unknown_settings_are_usage_errors() {
        for bad in [
            "base-url=http://x/v1",
            "openai,api_key=sk-1",
            "openai,base-url=",
        ] {
            let err = parse_specs(&[bad.to_owned()], "--fallback").unwrap_err();
            assert_eq!(err.code, 2, "{bad}");
            assert!(!err.to_string().contains("sk-1"), "{err}");
        }
    }

    #[test]
    fn a_key_goes_only_to_the_server_it_was_given_for() {
        let env = |name: &str| match name {
            "OPENAI_API_KEY" => Some("sk-openai".to_owned()),
            "GW_KEY" => Some("sk-gw".to_owned()),
            _ => None,
        };
        let resolved = |text: &str| {
            let spec = &specs(text)[0];
            resolve(spec, "--fallback", None, None, &env)
        };
        let key = |choice: ModelChoice| match choice {
            ModelChoice::Server {
                api_key, base_url, ..
            } => (api_key, base_url),
            ModelChoice::Local { .. } => panic!("not a server"),
        };
        assert_eq!(
            key(resolved("openai:m").unwrap()),
            (
                Some("sk-openai".to_owned()),
                "https://api.openai.com/v1".to_owned()
            )
        );
        assert_eq!(
            key(resolved("openai:m,base-url=http://127.0.0.1:9/v1").unwrap()),
            (None, "http://127.0.0.1:9/v1".to_owned())
        );
        assert_eq!(
            key(resolved("openai:m,base-url=https://gw/v1,api-key-env=GW_KEY").unwrap()),
            (Some("sk-gw".to_owned()), "https://gw/v1".to_owned())
        );
        let unset = resolved("openai,api-key-env=NOPE").unwrap_err();
        assert_eq!(unset.code, 2);
        assert!(unset.to_string().contains("NOPE"), "{unset}");
        let local = resolved("local,base-url=http://x/v1").unwrap_err();
        assert_eq!(local.code, 2);
    }
}
