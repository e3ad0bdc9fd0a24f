//! `agent mcp serve [--stdio | --http ADDR] [--names prefixed|bare]`: flags, start-up messages on stderr, racing the
//! server against signals and stdin close, then stopping every upstream server. Serve answers
//! at once; upstream servers start in the background and are reported as they come up. Over
//! HTTP a bearer token is always required unless `--no-auth`: from `--token-env`, or generated
//! and written to a file only this user can read (its path is printed, never the token). In
//! stdio mode nothing but the protocol goes to stdout.

use std::sync::Arc;

use clap::Args;

use super::{Context, EXIT_OK, usage};
use crate::config::ServeNames;
use crate::serve::http::{HttpServer, Limits, parse_addr};
use crate::serve::{Expose, Server, StartReporter, token};

pub const AFTER_HELP: &str = "\
Examples:
  agent mcp serve                                   # stdio, for Claude Desktop / Claude Code / Cursor
  agent mcp serve --http 127.0.0.1:8808             # Streamable HTTP at http://127.0.0.1:8808/mcp
  AGENT_TOKEN=s3cret agent mcp serve --http :0 --token-env AGENT_TOKEN
  agent mcp serve --expose code,search              # no proxied tools

Tools: every enabled server's tools as <server>_<tool> (each with an optional `result_handler`,
see docs/handlers.md), `execute_code` (TypeScript as in `agent exec`), `search_tools` and
`describe_tool`. Upstream servers start in the background; clients hear tools/list_changed as
each comes up. Resources, resource templates, prompts (<server>_<prompt>), completions,
subscriptions, logging and sampling pass through too; a URI two servers could answer becomes
agent:<server>/<uri>.

--names bare keeps upstream's names and URIs (tools without `result_handler`) and refuses to
start (exit 2) when two enabled servers share a tool, prompt, resource URI or template; with
one server and --expose proxy a client sees that server (docs/serve.md).

HTTP wants `Authorization: Bearer <token>` on every request (401 otherwise): the token is read
from --token-env VAR, or generated at start and written (mode 0600) to
$XDG_RUNTIME_DIR/agent/serve-PORT.token (else ~/.cache/agent/), whose path is printed on
stderr; --no-auth turns this off (loopback only). Loopback by default; only loopback Host
names and Origins (403 otherwise). The `serve:` config section caps connections, sessions and
message sizes. The bound address is printed on stderr as `listening on http://HOST:PORT/mcp`.

Stops on Ctrl-C, SIGTERM, SIGHUP, or (stdio) when stdin closes; upstream servers are stopped.";

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve one client on stdin/stdout (the default).
    #[arg(long, conflicts_with = "http")]
    pub stdio: bool,
    /// Serve Streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:8808, :0 for any free port).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// What to offer: any of proxy, code, search (comma-separated; default all).
    #[arg(long, value_name = "LIST", default_value = "proxy,code,search")]
    pub expose: String,
    /// Require `Authorization: Bearer <token>` over HTTP with the token read from this
    /// environment variable (default: a generated token, written to a private file).
    #[arg(long, value_name = "VAR", requires = "http")]
    pub token_env: Option<String>,
    /// Serve HTTP without a token: any local user can then run code as you (loopback only).
    #[arg(long, requires = "http", conflicts_with = "token_env")]
    pub no_auth: bool,
    /// Scripts that may run at once (default: CPUs, 2 to 8).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// How upstream names reach clients: prefixed (`<server>_<name>`, the default) or bare
    /// (upstream's own names; refused when two enabled servers share one). Default:
    /// `serve.names`.
    #[arg(long, value_name = "MODE", value_parser = ["prefixed", "bare"])]
    pub names: Option<String>,
}

/// The token HTTP wants: given in the environment, generated (written to a file once the port
/// is known), or none (`--no-auth`).
enum Auth {
    Given(String),
    Generate,
    Off,
}

pub async fn run(ctx: Context, args: &ServeArgs) -> anyhow::Result<u8> {
    let expose = Expose::parse(&args.expose).map_err(|e| usage(format!("--expose: {e}")))?;
    let auth = match (&args.token_env, args.no_auth) {
        (Some(var), _) => match std::env::var(var) {
            Ok(t) if !t.trim().is_empty() => Auth::Given(t.trim().to_string()),
            _ => return Err(usage(format!("--token-env: the environment variable {var} is not set or empty"))),
        },
        (None, true) => Auth::Off,
        (None, false) => Auth::Generate,
    };
    let addr = match &args.http {
        Some(a) => Some(parse_addr(a).map_err(|e| usage(format!("--http: {e}")))?),
        None => None,
    };
    if let Some(addr) = addr
        && !addr.ip().is_loopback()
        && matches!(auth, Auth::Off)
    {
        return Err(usage(format!(
            "--http: refusing to listen on {addr} without a token (drop --no-auth, or use a loopback address)"
        )));
    }
    let workers = match args.workers {
        Some(0) => return Err(usage("--workers: must be at least 1")),
        Some(n) => n,
        None => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(2, 8),
    };
    let mut config = ctx.config.clone();
    match args.names.as_deref() {
        Some("bare") => config.serve.names = ServeNames::Bare,
        Some("prefixed") => config.serve.names = ServeNames::Prefixed,
        _ => {}
    }
    let session = super::session::Session::headless(&ctx.config)?;
    let manager = session.manager().clone();
    // A client cannot pass `--yes` to serve; only serve's own configuration can allow the call.
    manager.set_no_terminal_fix("set mcp.approvals in the configuration `agent mcp serve` runs with");
    let server = match Server::start(&config, manager, session.recorder().clone(), expose, workers).await {
        Ok(server) => server,
        Err(e) => {
            session.close().await;
            return Err(e);
        }
    };
    // Upstream servers start while serve already answers.
    let report: StartReporter = Arc::new(|name: &str, outcome: Result<usize, &crate::mcp::McpError>| match outcome {
        Ok(n) => tracing::info!("`{name}` is up ({n} tools)"),
        Err(e) => eprintln!(
            "warning: {e} (`{name}` is left out; tried again at most once a minute when a client lists tools)"
        ),
    });
    let up = tokio::spawn({
        let server = server.clone();
        async move { server.bring_up(report).await }
    });
    // Bare mode stands in for its servers under their own names: two servers sharing one
    // cannot both be reached, so serve does not start (servers still starting after
    // `serve.startup_wait` are not waited for).
    if config.serve.names == ServeNames::Bare {
        let clashes = tokio::select! {
            c = server.clashes() => c,
            signal = ctx.signals.received() => {
                up.abort();
                server.stop().await;
                session.close().await;
                return Ok(super::signal::exit_after(signal));
            }
        };
        if !clashes.is_empty() {
            up.abort();
            server.stop().await;
            session.close().await;
            let said: Vec<String> =
                clashes.iter().map(|c| super::output::terminal_line(&c.to_string()).into_owned()).collect();
            return Err(usage(format!(
                "--names bare: {}; use --names prefixed, or disable one of them",
                said.join("; ")
            )));
        }
    }
    let limits = Limits::from_config(&config.serve);
    let mut token_file = None;
    let outcome = tokio::select! {
        r = serve(server.clone(), addr, auth, limits, &mut token_file) => Ok(r),
        signal = ctx.signals.received() => Err(signal),
    };
    up.abort();
    if let Some(path) = &token_file {
        token::remove(path);
    }
    // Bridges and executors first, then every upstream server with its process group.
    server.stop().await;
    session.close().await;
    match outcome {
        Ok(r) => r.map(|()| EXIT_OK),
        Err(signal) => Ok(super::signal::exit_after(signal)),
    }
}

/// Serves until stdin closes (stdio) or forever (HTTP).
async fn serve(
    server: Server,
    addr: Option<std::net::SocketAddr>,
    auth: Auth,
    limits: Limits,
    token_file: &mut Option<std::path::PathBuf>,
) -> anyhow::Result<()> {
    let Some(addr) = addr else {
        return server.serve_stdio(limits.max_message_bytes).await;
    };
    let generate = matches!(auth, Auth::Generate);
    let token = match auth {
        Auth::Given(t) => Some(t),
        Auth::Generate => Some(token::generate()),
        Auth::Off => None,
    };
    let http = HttpServer::bind(server, addr, token.clone(), limits.clone()).await?;
    let local = http.local_addr();
    if let (true, Some(t)) = (generate, &token) {
        let path = token::write(local.port(), t).map_err(|e| anyhow::anyhow!("{e} (or pass --token-env VAR)"))?;
        eprintln!("bearer token in {} (clients send `Authorization: Bearer <its content>`)", path.display());
        *token_file = Some(path);
    } else if token.is_none() {
        eprintln!("warning: --no-auth: any local user can call this server and run code as you");
    }
    if let Some((wanted, budget)) = http.lowered_connections {
        eprintln!(
            "warning: serve.max_connections lowered from {wanted} to {budget}: the open-file limit leaves room for no more"
        );
    }
    eprintln!("listening on http://{local}/mcp");
    http.run().await
}
