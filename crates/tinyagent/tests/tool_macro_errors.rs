//! Compile errors of `#[tool]` (tinyagent-macros), pointing at the user's code.

#[test]
fn mistakes_are_compile_errors_at_the_users_code() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
