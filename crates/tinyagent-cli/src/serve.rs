//! `tinyagent serve`: the agent over HTTP, through the `tinyagent-server` crate.

use std::sync::Arc;
use std::time::Duration;

use tinyagent::agent::OnBusy;
use tinyagent::{MemoryStore, SessionStore};
use tinyagent_server::{ENV_API_KEYS, Server};
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

/// A URL with its credentials left out, for messages.
fn redacted(url: &str) -> String {
    tinyagent::tools::redact_url(url)
}

async fn open_store(
    choice: &StoreChoice,
    lease: Duration,
) -> Result<Arc<dyn SessionStore>, CliError> {
    let failed = |what: String, err: tinyagent::store::StoreError| {
        CliError::failure(
            "store",
            format!("cannot open the session store {what}: {err}"),
        )
    };
    Ok(match choice {
        StoreChoice::Memory => Arc::new(MemoryStore::new()),
        StoreChoice::Sqlite(path) => Arc::new(
            SqliteStore::open(path)
                .await
                .map_err(|e| failed(format!("sqlite:{path}"), e))?
                .lease(lease),
        ),
        StoreChoice::Postgres(url) => Arc::new(
            PostgresStore::connect(url)
                .await
                .map_err(|e| failed(redacted(url), e))?
                .lease(lease),
        ),
        StoreChoice::Redis(url) => Arc::new(
            RedisStore::connect(url)
                .await
                .map_err(|e| failed(redacted(url), e))?
                .lease(lease),
        ),
    })
}

/// The keys of `--server-key` and of `TINYAGENT_API_KEYS` (comma-separated), blanks left out.
fn keys(args: &ServeArgs, env: Option<String>) -> Vec<String> {
    let mut keys: Vec<String> = args
        .server_keys
        .iter()
        .map(|k| k.trim().to_owned())
        .collect();
    if let Some(env) = env {
        keys.extend(env.split(',').map(|k| k.trim().to_owned()));
    }
    keys.retain(|k| !k.is_empty());
    keys.dedup();
    keys
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
    keys: &[String],
    addr: std::net::SocketAddr,
) -> Result<(), CliError> {
    if keys.is_empty() && !args.allow_unauthenticated && !addr.ip().is_loopback() {
        return Err(CliError::usage(format!(
            "refusing to serve on {addr} without API keys: anyone who can reach it could use the agent"
        ))
        .with_hint(
            "add --server-key KEY (or set TINYAGENT_API_KEYS), listen on 127.0.0.1, or pass --allow-unauthenticated",
        ));
    }
    Ok(())
}

/// `tinyagent serve`.
pub async fn serve(args: &ServeArgs, agent_args: &AgentArgs) -> Result<(), CliError> {
    let store_choice = parse_store(&args.store)?;
    let keys = keys(args, std::env::var(ENV_API_KEYS).ok());
    let name = args.agent_name.trim();
    if name.is_empty() {
        return Err(CliError::usage("--agent-name is empty"));
    }
    // Checked before binding when the address is literal, and again once bound (a host name
    // may resolve to anything).
    if let Ok(addr) = args.listen.parse::<std::net::SocketAddr>() {
        refuse_open(args, &keys, addr)?;
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
    refuse_open(args, &keys, addr)?;
    if !(0.0..=86_400.0).contains(&args.session_wait) {
        return Err(CliError::usage(format!(
            "--session-wait {} is out of range: give between 0 and 86400 seconds",
            args.session_wait
        )));
    }
    let on_busy = if args.session_wait == 0.0 {
        OnBusy::Fail
    } else {
        OnBusy::Wait(Duration::from_secs_f64(args.session_wait))
    };
    let store = open_store(&store_choice, args.session_lease).await?;
    let assembled = setup::assemble_named(agent_args, name).await?;
    let server = Server::new()
        .agent(assembled.agent)
        .shared_store(store)
        .api_keys(keys.iter().cloned())
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
        .allow_client_tool_results(args.allow_client_tool_results)
        .on_busy(on_busy);
    let server = args
        .allowed_hosts
        .iter()
        .fold(server, |server, host| server.allowed_host(host.as_str()));
    let server = args.allowed_origins.iter().fold(server, |server, origin| {
        server.allowed_origin(origin.as_str())
    });
    let store_text = match &store_choice {
        StoreChoice::Memory => "memory".to_owned(),
        StoreChoice::Sqlite(path) => format!("sqlite:{path}"),
        StoreChoice::Postgres(url) | StoreChoice::Redis(url) => redacted(url),
    };
    eprintln!(
        "tinyagent: serving agent {name:?} on http://{addr}/ (store: {store_text}; {})",
        if keys.is_empty() {
            "no API keys".to_owned()
        } else {
            format!("{} API key(s)", keys.len())
        }
    );
    server
        .serve(listener, stop_signal())
        .await
        .map_err(|e| CliError::failure("serve", e))
}

#[cfg(test)]
mod tests {
    use super::*;

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
            redacted("postgres://app:hunter2@db:5432/x"),
            "postgres://app:[REDACTED]@db:5432/x"
        );
        assert_eq!(redacted("redis://127.0.0.1/"), "redis://127.0.0.1/");
    }

    #[test]
    fn keys_come_from_flags_and_the_environment() {
        let args = ServeArgs {
            listen: "127.0.0.1:0".into(),
            store: "memory".into(),
            server_keys: vec!["a".into(), " ".into()],
            allow_unauthenticated: false,
            agent_name: "x".into(),
            max_body_bytes: 1,
            request_timeout: Duration::from_secs(1),
            body_timeout: Duration::from_secs(1),
            max_concurrent_per_key: 1,
            session_lease: Duration::from_secs(1),
            session_wait: 1.0,
            drain_timeout: Duration::from_secs(1),
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            header_timeout: Duration::from_secs(1),
            write_timeout: Duration::from_secs(1),
            max_connections: 1,
            client_instructions: Default::default(),
            allow_client_tool_results: false,
        };
        assert_eq!(keys(&args, Some("b, c,,".into())), ["a", "b", "c"]);
        assert_eq!(keys(&args, None), ["a"]);
    }
}
