//! The command line's parsing: flags, values and their errors.

use super::*;
use clap::CommandFactory;

#[test]
fn the_command_line_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn run_takes_the_question_and_options() {
    let cli = Cli::try_parse_from([
        "tinyagent",
        "run",
        "--tools",
        "demo,translator",
        "--mcp",
        "python3 s.py",
        "--json",
        "北京天气怎么样？",
    ])
    .unwrap();
    let Command::Run { question, agent } = cli.command else {
        panic!("not run")
    };
    assert_eq!(question, ["北京天气怎么样？"]);
    assert_eq!(agent.tools.tools, ["demo", "translator"]);
    assert_eq!(agent.tools.mcp, ["python3 s.py"]);
    assert!(agent.output.json);
}

#[test]
fn headers_are_parsed_and_their_values_kept_out_of_debug() {
    let cli = Cli::try_parse_from([
        "tinyagent",
        "tools",
        "--mcp-url",
        "http://x/mcp",
        "--mcp-header",
        "Authorization: Bearer s3cret",
    ])
    .unwrap();
    let Command::Tools { tools, .. } = &cli.command else {
        panic!("not tools")
    };
    assert_eq!(tools.mcp_header[0].name, "Authorization");
    assert_eq!(tools.mcp_header[0].value, "Bearer s3cret");
    assert!(!format!("{cli:?}").contains("s3cret"));
    for bad in ["X-Key s3cret", ": s3cret", "bad name: s3cret"] {
        let cli = Cli::try_parse_from(["tinyagent", "tools", "--mcp-header", bad]).unwrap();
        let Command::Tools { tools, .. } = &cli.command else {
            panic!("not tools")
        };
        let problem = tools.mcp_header[0].problem.clone().unwrap();
        assert!(!problem.contains("s3cret"), "{problem}");
    }
}

#[test]
fn local_conflicts_with_a_server() {
    assert!(Cli::try_parse_from(["tinyagent", "run", "--local", "--base-url", "x", "q"]).is_err());
    assert!(Cli::try_parse_from(["tinyagent", "run", "--json", "--quiet", "q"]).is_err());
}
