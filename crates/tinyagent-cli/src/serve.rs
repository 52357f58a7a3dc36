//! `tinyagent serve`: the agent over HTTP, through the `tinyagent-server` crate.

use std::sync::Arc;
use std::time::Duration;

use tinyagent::agent::OnBusy;
use tinyagent::store::{MemoryStore, SessionStore};
use tinyagent_server::{DEFAULT_ADMIN_KEY_NAME, ENV_API_KEYS, ServeError, Server};
use tinyagent_store::{PostgresStore, RedisStore, SqliteStore};

use crate::cli::{AgentArgs, ServeArgs};
use crate::error::CliError;
use crate::setup;

/// Where `--store` says sessions are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
enum StoreChoice {
    Memory,
    Sqlite(String),
    Postgres(String),
    Redis(String),
}

fn parse_store(text: &str) -> Result<StoreChoice, CliError> {
    let text = text.trim();
    if text == "memory" {
        Ok(StoreChoice::Memory)
    } else if let Some(path) = text.strip_prefix("sqlite:") {
        let path = path.strip_prefix("//").unwrap_or(path);
        if path.is_empty() {
            return Err(CliError::usage(
                "--store sqlite: needs a file, such as sqlite:sessions.db",
            ));
        }
        Ok(StoreChoice::Sqlite(path.to_owned()))
    } else if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        Ok(StoreChoice::Postgres(text.to_owned()))
    } else if text.starts_with("redis://") || text.starts_with("rediss://") {
        Ok(StoreChoice::Redis(text.to_owned()))
    } else {
        Err(CliError::usage(format!("--store {text:?} is not a store"))
            .with_hint("--store memory, sqlite:PATH, postgres://USER@HOST/DB or redis://HOST/"))
    }
}

async fn open_store(
    choice: &StoreChoice,
    lease: Duration,
    ttl: Option<Duration>,
) -> Result<Arc<dyn SessionStore>, CliError> {
    let failed = |what: String, err: tinyagent::store::StoreError| {
        CliError::failure(
            "store",
            format!("cannot open the session store {what}: {err}"),
        )
    };
    // Each store's TTL: a session not written for this long vanishes.
    fn with_ttl<S>(store: S, ttl: Option<Duration>, set: fn(S, Duration) -> S) -> S {
        match ttl {
            Some(ttl) => set(store, ttl),
            None => store,
        }
    }
    Ok(match choice {
        StoreChoice::Memory => Arc::new(with_ttl(MemoryStore::new(), ttl, MemoryStore::ttl)),
        StoreChoice::Sqlite(path) => Arc::new(with_ttl(
            SqliteStore::open(path)
                .await
                .map_err(|e| failed(format!("sqlite:{path}"), e))?
                .lease(lease),
            ttl,
            SqliteStore::ttl,
        )),
        StoreChoice::Postgres(url) => Arc::new(with_ttl(
            PostgresStore::connect(url)
                .await
                .map_err(|e| failed(tinyagent::redact::url(url), e))?
                .lease(lease),
            ttl,
            PostgresStore::ttl,
        )),
        StoreChoice::Redis(url) => Arc::new(with_ttl(
            RedisStore::connect(url)
                .await
                .map_err(|e| failed(tinyagent::redact::url(url), e))?
                .lease(lease),
            ttl,
            RedisStore::ttl,
        )),
    })
}

/// The environment variable `tinyagent serve` reads its admin key from.
const ENV_ADMIN_KEY: &str = "TINYAGENT_ADMIN_KEY";

/// A key as given: `NAME=SECRET`, or the secret alone (`None` for its name). Only a name of
/// letters, digits, `-`, `_` and `.` (at most 64) before a non-empty secret makes a name, so
/// a secret that merely holds `=` (base64 padding, say) is taken whole.
fn split_key(text: &str) -> (Option<&str>, &str) {
    if let Some((name, secret)) = text.split_once('=') {
        let is_name = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if is_name && !secret.is_empty() && !secret.starts_with('=') {
            return (Some(name), secret);
        }
    }
    (None, text)
}

/// The keys of `--server-key` and of `TINYAGENT_API_KEYS` (comma-separated), blanks left
/// out, as (name, secret): a key given without a name has none here (the server names it
/// after its secret, the same whatever other keys come and go).
fn keys(args: &ServeArgs, env: Option<String>) -> Vec<(Option<String>, String)> {
    let mut given: Vec<String> = args
        .server_keys
        .iter()
        .map(|k| k.trim().to_owned())
        .collect();
    if let Some(env) = env {
        given.extend(env.split(',').map(|k| k.trim().to_owned()));
    }
    given.retain(|k| !k.is_empty());
    given.dedup();
    given
        .iter()
        .map(|text| {
            let (name, secret) = split_key(text);
            (name.map(str::to_owned), secret.to_owned())
        })
        .collect()
}

/// A server holding the keys, refused (exit 2) when they cannot be told apart: two of one
/// name (the admin key's included), one secret twice, a name with invisible characters.
fn keyed_server(
    keys: Vec<(Option<String>, String)>,
    admin: Option<(String, String)>,
) -> Result<Server, CliError> {
    let mut server = Server::new();
    for (name, secret) in keys {
        server = match name {
            Some(name) => server.named_api_key(name, secret),
            None => server.api_key(secret),
        };
    }
    if let Some((name, secret)) = admin {
        server = server.named_admin_key(name, secret);
    }
    // The keys are checked first, before the agents this server does not have yet.
    let err = match server.check(std::net::SocketAddr::from(([127, 0, 0, 1], 0))) {
        Err(err @ ServeError::DuplicateKeyName { admin: true, .. }) => CliError::usage(err)
            .with_hint("name the admin key apart: --admin-key NAME=KEY (or rename the other key)"),
        Err(err @ ServeError::DuplicateKeyName { .. }) => CliError::usage(err).with_hint(
            "give each key its own name: --server-key NAME=KEY (a key given alone is named \
             after its secret)",
        ),
        Err(err @ ServeError::DuplicateKey { .. }) => CliError::usage(err)
            .with_hint("a secret is one key: leave the second out, or give it a secret of its own"),
        Err(err @ ServeError::KeyName { .. }) => {
            CliError::usage(err).with_hint("key names are letters, digits, -, _ and .")
        }
        _ => return Ok(server),
    };
    Err(err)
}

/// The admin key of `--admin-key` or `TINYAGENT_ADMIN_KEY`, as (name, secret).
fn admin_key(args: &ServeArgs, env: Option<String>) -> Option<(String, String)> {
    let text = args.admin_key.clone().or(env)?;
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    Some(match split_key(text) {
        (Some(name), secret) => (name.to_owned(), secret.to_owned()),
        (None, secret) => (DEFAULT_ADMIN_KEY_NAME.to_owned(), secret.to_owned()),
    })
}

/// Waits for Ctrl-C or, on Unix, SIGTERM.
async fn stop_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Without keys, only loopback addresses, unless `--allow-unauthenticated`.
fn refuse_open(
    args: &ServeArgs,
    any_key: bool,
    addr: std::net::SocketAddr,
) -> Result<(), CliError> {
    if !any_key && !args.allow_unauthenticated && !addr.ip().is_loopback() {
        return Err(CliError::usage(format!(
            "refusing to serve on {addr} without API keys: anyone who can reach it could use the agent"
        ))
        .with_hint(
            "add --server-key KEY (or set TINYAGENT_API_KEYS), listen on 127.0.0.1, or pass --allow-unauthenticated",
        ));
    }
    Ok(())
}

/// `tinyagent serve`: checks the options, binds, opens the store, assembles the agent, and
/// serves until Ctrl-C or SIGTERM.
pub async fn serve(
    args: &ServeArgs,
    agent_args: &AgentArgs,
    metrics: Option<tinyagent_otel::Prometheus>,
) -> Result<(), CliError> {
    let store_choice = parse_store(&args.store)?;
    let keys = keys(args, std::env::var(ENV_API_KEYS).ok());
    let admin = admin_key(args, std::env::var(ENV_ADMIN_KEY).ok());
    let admin_name = admin.as_ref().map(|(name, _)| name.clone());
    let any_key = !keys.is_empty() || admin.is_some();
    let server = keyed_server(keys, admin)?;
    let name = args.agent_name.trim();
    if name.is_empty() {
        return Err(CliError::usage("--agent-name is empty"));
    }
    let (listener, addr) = bind(args, any_key).await?;
    let on_busy = on_busy(args)?;
    let store = open_store(&store_choice, args.session_lease, args.session_ttl).await?;
    let assembled = setup::assemble_named(agent_args, name).await?;
    let mut server = server;
    if let Some(metrics) = metrics {
        server = server.metrics(metrics);
    }
    let key_names: Vec<String> = server
        .key_names()
        .filter(|name| Some(*name) != admin_name.as_deref())
        .map(str::to_owned)
        .collect();
    let server = configure(server.agent(assembled.agent).store(store), args).on_busy(on_busy);
    server
        .check(addr)
        .map_err(|e| CliError::failure("serve", e))?;
    // The keys' names (never their secrets): an operator learns what a key given alone is
    // called, to name it so when it is renamed.
    let keys_text = keys_text(&key_names, admin_name.as_deref());
    let store_text = store_text(&store_choice);
    eprintln!(
        "tinyagent: serving agent {name:?} on http://{addr}/ (store: {store_text}; {keys_text})"
    );
    eprintln!("tinyagent: OpenAI API at http://{addr}/v1, A2A agent at http://{addr}/a2a/{name}");
    server
        .serve(listener, stop_signal())
        .await
        .map_err(|e| CliError::failure("serve", e))
}

/// The listener on `--listen`, and the address it is bound to; refused when open to others
/// without keys, checked before binding when the address is literal and again once bound (a
/// host name may resolve to anything).
async fn bind(
    args: &ServeArgs,
    any_key: bool,
) -> Result<(tokio::net::TcpListener, std::net::SocketAddr), CliError> {
    if let Ok(addr) = args.listen.parse::<std::net::SocketAddr>() {
        refuse_open(args, any_key, addr)?;
    }
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| {
            CliError::failure("listen", format!("cannot listen on {}: {e}", args.listen))
                .with_hint("--listen 127.0.0.1:8080 (port 0 picks a free port)")
        })?;
    let addr = listener.local_addr().map_err(|e| {
        CliError::failure("listen", format!("cannot read the listening address: {e}"))
    })?;
    refuse_open(args, any_key, addr)?;
    Ok((listener, addr))
}

/// What a request for a busy session does, from `--session-wait`: fail at once (0), or wait
/// up to that many seconds (at most a day).
fn on_busy(args: &ServeArgs) -> Result<OnBusy, CliError> {
    if !(0.0..=86_400.0).contains(&args.session_wait) {
        return Err(CliError::usage(format!(
            "--session-wait {} is out of range: give between 0 and 86400 seconds",
            args.session_wait
        )));
    }
    Ok(if args.session_wait == 0.0 {
        OnBusy::Fail
    } else {
        OnBusy::Wait(Duration::from_secs_f64(args.session_wait))
    })
}

/// The server's limits, timeouts and request rules, as the options give them.
fn configure(server: Server, args: &ServeArgs) -> Server {
    let mut server = server
        .max_cost_per_key(args.max_cost_per_key)
        .max_sessions_per_key(args.max_sessions_per_key.map(|n| n as usize))
        .max_history(args.max_history.map(|n| n as usize))
        .rate_limit(args.rate_limit)
        .allow_unauthenticated(args.allow_unauthenticated)
        .max_body_bytes(usize::try_from(args.max_body_bytes).unwrap_or(usize::MAX))
        .request_timeout(args.request_timeout)
        .body_timeout(args.body_timeout)
        .max_concurrent_per_key(args.max_concurrent_per_key as usize)
        .drain_timeout(args.drain_timeout)
        .header_timeout(args.header_timeout)
        .write_timeout(args.write_timeout)
        .max_connections(args.max_connections as usize)
        .client_instructions(args.client_instructions)
        .allow_client_tool_results(args.allow_client_tool_results);
    for (name, value) in &args.pin_parameters {
        server = server.pin_parameter(name.clone(), value.clone());
    }
    for (name, max) in &args.cap_parameters {
        server = server.cap_parameter(name.clone(), *max);
    }
    for name in &args.ignore_parameters {
        server = server.ignore_parameter(name.clone());
    }
    let server = args
        .allowed_hosts
        .iter()
        .fold(server, |server, host| server.allowed_host(host.as_str()));
    args.allowed_origins.iter().fold(server, |server, origin| {
        server.allowed_origin(origin.as_str())
    })
}

/// The store as the startup line names it (a URL's password left out).
fn store_text(choice: &StoreChoice) -> String {
    match choice {
        StoreChoice::Memory => "memory".to_owned(),
        StoreChoice::Sqlite(path) => format!("sqlite:{path}"),
        StoreChoice::Postgres(url) | StoreChoice::Redis(url) => tinyagent::redact::url(url),
    }
}

/// The keys as the startup line names them: their names, never their secrets.
fn keys_text(key_names: &[String], admin_name: Option<&str>) -> String {
    match (key_names.is_empty(), admin_name) {
        (true, None) => "no API keys".to_owned(),
        (false, None) => format!("API keys {}", key_names.join(", ")),
        (true, Some(admin)) => format!("admin key {admin}"),
        (false, Some(admin)) => {
            format!("API keys {}; admin key {admin}", key_names.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// `tinyagent serve` options as the command line gives them.
    fn serve_args(flags: &[&str]) -> ServeArgs {
        #[derive(Parser)]
        struct Command {
            #[command(flatten)]
            serve: ServeArgs,
        }
        Command::try_parse_from(std::iter::once("serve").chain(flags.iter().copied()))
            .expect("valid flags")
            .serve
    }

    #[test]
    fn stores_are_named_like_urls() {
        assert_eq!(parse_store("memory").unwrap(), StoreChoice::Memory);
        assert_eq!(
            parse_store("sqlite:a/b.db").unwrap(),
            StoreChoice::Sqlite("a/b.db".into())
        );
        assert_eq!(
            parse_store("sqlite:///tmp/b.db").unwrap(),
            StoreChoice::Sqlite("/tmp/b.db".into())
        );
        assert!(matches!(
            parse_store("postgresql://u@h/db").unwrap(),
            StoreChoice::Postgres(_)
        ));
        assert!(matches!(
            parse_store("redis://127.0.0.1/").unwrap(),
            StoreChoice::Redis(_)
        ));
        for bad in ["", "sqlite:", "mysql://h/db", "memoryy"] {
            assert!(parse_store(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn passwords_stay_out_of_messages() {
        assert_eq!(
            tinyagent::redact::url("postgres://app:hunter2@db:5432/x"),
            "postgres://[REDACTED]@db:5432/x"
        );
        assert_eq!(
            tinyagent::redact::url("redis://127.0.0.1/"),
            "redis://127.0.0.1/"
        );
    }

    #[test]
    fn keys_come_from_flags_and_the_environment() {
        let args = serve_args(&["--server-key", "a", "--server-key", " "]);
        let alone = |k: &str| (None, k.to_owned());
        assert_eq!(
            keys(&args, Some("b, c,,".into())),
            [alone("a"), alone("b"), alone("c")]
        );
        assert_eq!(keys(&args, None), [alone("a")]);
    }

    #[test]
    fn keys_may_be_named() {
        let mut args = serve_args(&["--server-key", "alice=sk-a", "--server-key", "sk-plain"]);
        let pair = |n: &str, k: &str| (n.to_owned(), k.to_owned());
        let named = |n: &str, k: &str| (Some(n.to_owned()), k.to_owned());
        let alone = |k: &str| (None, k.to_owned());
        assert_eq!(
            keys(&args, Some("bob=sk-b,c2VjcmV0==,=x,a b=c".into())),
            [
                named("alice", "sk-a"),
                alone("sk-plain"),
                named("bob", "sk-b"),
                // Base64 padding is no name; nor is an empty one or one with a space.
                alone("c2VjcmV0=="),
                alone("=x"),
                alone("a b=c"),
            ]
        );
        assert_eq!(admin_key(&args, None), None);
        assert_eq!(
            admin_key(&args, Some("sk-root".into())),
            Some(pair("admin", "sk-root"))
        );
        args.admin_key = Some("ops=sk-ops".into());
        assert_eq!(
            admin_key(&args, Some("sk-root".into())),
            Some(pair("ops", "sk-ops"))
        );
    }
}
