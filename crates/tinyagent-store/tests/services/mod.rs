//! Where the test servers are: the URLs `scripts/services.sh` exports. A test whose server is
//! not configured fails with the way to start it, unless TINYAGENT_SKIP_SERVICE_TESTS=1 says
//! to skip it.
#![allow(dead_code)]

/// The URL in `var`, or `None` when the tests are told to skip; panics with the way to start
/// the servers otherwise.
pub fn url(var: &str, server: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("TINYAGENT_SKIP_SERVICE_TESTS").is_ok_and(|v| v == "1") => {
            eprintln!("skipped: {var} is not set and TINYAGENT_SKIP_SERVICE_TESTS=1");
            None
        }
        _ => panic!(
            "{var} is not set: this test needs a {server} server. Run the tests with \
             `bash scripts/test.sh`, or start the servers with `bash scripts/services.sh start` \
             and `eval \"$(bash scripts/services.sh env)\"` (set TINYAGENT_SKIP_SERVICE_TESTS=1 \
             to skip such tests)"
        ),
    }
}
