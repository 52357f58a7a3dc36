use super::*;

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
    let weather = tinyagent_demo::weather_tool();
    assert_eq!(argument_summary(weather.input_schema()), "city*, unit");
}
