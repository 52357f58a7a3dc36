use super::*;
use tinyagent_llama::ENV_PROMPT_CACHE;

fn model_args(argv: &[&str]) -> ModelArgs {
    use clap::Parser;
    let mut full = vec!["tinyagent", "run"];
    full.extend(argv);
    full.push("q");
    match crate::cli::Cli::parse_from(full).command {
        crate::cli::Command::Run { agent, .. } => agent.model,
        _ => unreachable!(),
    }
}

fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |name| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| (*v).to_owned())
    }
}

#[test]
fn nothing_set_means_the_embedded_model() {
    let choice = choose_model(&model_args(&[]), env(&[("OPENAI_MODEL", "x")])).unwrap();
    assert_eq!(
        choice,
        ModelChoice::Local {
            file: None,
            threads: None,
            context_size: None,
            prompt_cache: None
        }
    );
}

#[test]
fn flags_override_the_environment() {
    let choice = choose_model(
        &model_args(&["--base-url", "http://a/v1", "--model", "m"]),
        env(&[
            ("OPENAI_BASE_URL", "http://b/v1"),
            ("OPENAI_API_KEY", "k"),
            ("OPENAI_MODEL", "e"),
            ("TINYAGENT_TIMEOUT", "9"),
        ]),
    )
    .unwrap();
    assert_eq!(
        choice,
        ModelChoice::Server {
            provider: Provider::Openai,
            base_url: "http://a/v1".into(),
            api_key: Some("k".into()),
            model: "m".into(),
            timeout: Some(Duration::from_secs(9)),
        }
    );
}

#[test]
fn the_environment_alone_chooses_a_server() {
    let choice = choose_model(
        &model_args(&[]),
        env(&[("OPENAI_API_KEY", "k"), ("OPENAI_BASE_URL", " ")]),
    )
    .unwrap();
    assert_eq!(
        choice,
        ModelChoice::Server {
            provider: Provider::Openai,
            base_url: tinyagent_openai::DEFAULT_BASE_URL.into(),
            api_key: Some("k".into()),
            model: tinyagent_openai::DEFAULT_MODEL.into(),
            timeout: None,
        }
    );
}

#[test]
fn a_model_name_alone_is_a_usage_error_not_a_call_to_openai() {
    let err = choose_model(&model_args(&["--model", "qwen2.5:7b"]), env(&[])).unwrap_err();
    assert_eq!(err.code, 2);
    assert_eq!(
        err.message,
        "--model \"qwen2.5:7b\" names a model on a server, and no server is given"
    );
    assert!(err.hint.unwrap().contains("--base-url"));
    // With a server from the environment it is fine.
    let choice = choose_model(
        &model_args(&["--model", "qwen2.5:7b", "--timeout", "2.5"]),
        env(&[("OPENAI_BASE_URL", "http://h/v1")]),
    )
    .unwrap();
    assert!(matches!(
        choice,
        ModelChoice::Server { ref model, timeout: Some(t), .. }
            if model == "qwen2.5:7b" && t == Duration::from_millis(2500)
    ));
}

#[test]
fn a_bad_timeout_variable_is_a_usage_error() {
    let err = choose_model(
        &model_args(&[]),
        env(&[("OPENAI_API_KEY", "k"), ("TINYAGENT_TIMEOUT", "soon")]),
    )
    .unwrap_err();
    assert_eq!(err.code, 2);
    assert!(err.message.starts_with("TINYAGENT_TIMEOUT: "), "{err:?}");
}

#[test]
fn local_wins_over_the_environment() {
    let choice = choose_model(
        &model_args(&["--local", "--threads", "1"]),
        env(&[("OPENAI_API_KEY", "k")]),
    )
    .unwrap();
    assert_eq!(
        choice,
        ModelChoice::Local {
            file: None,
            threads: Some(1),
            context_size: None,
            prompt_cache: None
        }
    );
}

#[test]
fn a_providers_key_chooses_it_and_openai_settings_come_first() {
    let choice = choose_model(&model_args(&[]), env(&[("ANTHROPIC_API_KEY", "a")])).unwrap();
    assert_eq!(
        choice,
        ModelChoice::Server {
            provider: Provider::Anthropic,
            base_url: tinyagent_anthropic::DEFAULT_BASE_URL.into(),
            api_key: Some("a".into()),
            model: tinyagent_anthropic::DEFAULT_MODEL.into(),
            timeout: None,
        }
    );
    let choice = choose_model(
        &model_args(&[]),
        env(&[("GEMINI_API_KEY", "g"), ("GEMINI_MODEL", "gemini-2.5-pro")]),
    )
    .unwrap();
    assert!(matches!(
        choice,
        ModelChoice::Server { provider: Provider::Gemini, ref model, .. } if model == "gemini-2.5-pro"
    ));
    // Several keys: OpenAI's settings win unless --provider says otherwise.
    let both = [("OPENAI_API_KEY", "o"), ("ANTHROPIC_API_KEY", "a")];
    let choice = choose_model(&model_args(&[]), env(&both)).unwrap();
    assert!(matches!(
        choice,
        ModelChoice::Server {
            provider: Provider::Openai,
            ..
        }
    ));
    let choice = choose_model(&model_args(&["--provider", "anthropic"]), env(&both)).unwrap();
    assert!(matches!(
        choice,
        ModelChoice::Server { provider: Provider::Anthropic, ref api_key, .. } if api_key.as_deref() == Some("a")
    ));
    let choice = choose_model(
        &model_args(&[]),
        env(&[("ANTHROPIC_API_KEY", "a"), ("TINYAGENT_PROVIDER", "Local")]),
    )
    .unwrap();
    assert!(matches!(choice, ModelChoice::Local { .. }));
}

#[test]
fn a_provider_without_a_key_or_a_bad_provider_variable_is_a_usage_error() {
    let err = choose_model(&model_args(&["--provider", "gemini"]), env(&[])).unwrap_err();
    assert_eq!(err.code, 2);
    assert_eq!(
        err.message,
        "--provider gemini needs an API key, and none is given"
    );
    assert!(err.hint.unwrap().contains("GEMINI_API_KEY"));
    let err = choose_model(&model_args(&[]), env(&[("TINYAGENT_PROVIDER", "claude")])).unwrap_err();
    assert_eq!(err.code, 2);
    assert!(
        err.message.contains("\"claude\" is not a provider"),
        "{err:?}"
    );
    // --api-key with --provider goes to that provider.
    let choice = choose_model(
        &model_args(&[
            "--provider",
            "anthropic",
            "--api-key",
            "k",
            "--model",
            "claude-haiku-4-5",
        ]),
        env(&[]),
    )
    .unwrap();
    assert!(matches!(
        choice,
        ModelChoice::Server { provider: Provider::Anthropic, ref model, .. } if model == "claude-haiku-4-5"
    ));
}

#[test]
fn the_context_size_comes_from_the_flag_or_the_environment() {
    let local =
        |flags: &[&str], vars: &[(&str, &str)]| match choose_model(&model_args(flags), env(vars)) {
            Ok(ModelChoice::Local { context_size, .. }) => Ok(context_size),
            Ok(other) => panic!("{other:?}"),
            Err(err) => Err(err),
        };
    assert_eq!(local(&["--local"], &[]).unwrap(), None);
    assert_eq!(
        local(
            &["--context-size", "8192"],
            &[("TINYAGENT_CONTEXT_SIZE", "4096")]
        )
        .unwrap(),
        Some(8192),
        "the flag wins"
    );
    assert_eq!(
        local(&[], &[("TINYAGENT_CONTEXT_SIZE", "4096")]).unwrap(),
        Some(4096)
    );
    assert_eq!(
        local(&[], &[("TINYAGENT_CONTEXT_SIZE", "0")]).unwrap(),
        Some(0),
        "0 is the model's own"
    );
    let err = local(&[], &[("TINYAGENT_CONTEXT_SIZE", "big")]).unwrap_err();
    assert_eq!(err.code, 2);
    assert!(err.message.contains("TINYAGENT_CONTEXT_SIZE"), "{err:?}");
    // Not read at all when a server answers.
    let server = choose_model(
        &model_args(&["--base-url", "http://a/v1"]),
        env(&[("TINYAGENT_CONTEXT_SIZE", "big")]),
    )
    .unwrap();
    assert!(matches!(server, ModelChoice::Server { .. }));
    let too_small = ["tinyagent", "run", "--context-size", "10", "q"];
    assert!(<crate::cli::Cli as clap::Parser>::try_parse_from(too_small).is_err());
}

#[test]
fn prompts_are_saved_in_the_flag_the_variable_or_the_users_cache_directory() {
    let cache =
        |args: &[&str], vars: &[(&str, &str)]| match choose_model(&model_args(args), env(vars)) {
            Ok(ModelChoice::Local { prompt_cache, .. }) => prompt_cache,
            other => panic!("{other:?}"),
        };
    let home = [("HOME", "/home/ada")];
    assert_eq!(
        cache(&[], &home),
        Some(PathBuf::from("/home/ada/.cache/tinyagent/prompts"))
    );
    assert_eq!(
        cache(
            &[],
            &[("HOME", "/home/ada"), ("XDG_CACHE_HOME", "/var/cache/ada")]
        ),
        Some(PathBuf::from("/var/cache/ada/tinyagent/prompts"))
    );
    assert_eq!(
        cache(&[], &[("HOME", "/home/ada"), (ENV_PROMPT_CACHE, "/tmp/p")]),
        Some(PathBuf::from("/tmp/p"))
    );
    assert_eq!(
        cache(
            &["--prompt-cache", "/srv/p"],
            &[(ENV_PROMPT_CACHE, "/tmp/p")]
        ),
        Some(PathBuf::from("/srv/p"))
    );
    assert_eq!(cache(&["--prompt-cache", "off"], &home), None);
    assert_eq!(
        cache(&[], &[("HOME", "/home/ada"), (ENV_PROMPT_CACHE, "off")]),
        None
    );
    assert_eq!(cache(&[], &[]), None, "no cache directory: nothing saved");
}
