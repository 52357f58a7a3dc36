use super::*;

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
            threads: None
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
            base_url: DEFAULT_BASE_URL.into(),
            api_key: Some("k".into()),
            model: DEFAULT_MODEL.into(),
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
            threads: Some(1)
        }
    );
}

#[test]
fn tool_options_pick_tools() {
    let names = |args: ToolArgs| -> Vec<String> {
        builtin_tools(&args)
            .unwrap()
            .iter()
            .map(|t| t.name().to_owned())
            .collect()
    };
    assert_eq!(names(ToolArgs::default()), DEMO_TOOLS);
    let mcp_only = ToolArgs {
        mcp: vec!["python3 s.py".into()],
        ..ToolArgs::default()
    };
    assert!(names(mcp_only).is_empty());
    let some = ToolArgs {
        tools: vec!["calculator".into(), "all".into()],
        ..ToolArgs::default()
    };
    assert_eq!(
        names(some),
        [
            "calculator",
            "get_weather",
            "get_current_time",
            "translator"
        ]
    );
    let bad = ToolArgs {
        tools: vec!["nope".into()],
        ..ToolArgs::default()
    };
    assert_eq!(builtin_tools(&bad).err().unwrap().code, 2);
}

#[test]
fn arguments_are_summarized() {
    let weather = tinyagent::demo::weather_tool();
    assert_eq!(argument_summary(weather.input_schema()), "city*, unit");
}
