//! `agent mcp serve [--stdio | --http ADDR]`: flags, start-up messages on stderr, racing the
//! server against signals and stdin close, then stopping every upstream server. In stdio mode
//! nothing but the protocol goes to stdout.

use clap::Args;

use super::{Context, EXIT_OK, usage};
use crate::serve::http::{HttpServer, parse_addr};
use crate::serve::{Expose, Server};

pub const AFTER_HELP: &str = "\
Examples:
  agent mcp serve                                   # stdio, for Claude Desktop / Claude Code / Cursor
  agent mcp serve --http 127.0.0.1:8808             # Streamable HTTP at http://127.0.0.1:8808/mcp
  AGENT_TOKEN=s3cret agent mcp serve --http :0 --token-env AGENT_TOKEN
  agent mcp serve --expose code,search              # no proxied tools

Tools: every enabled server's tools as <server>_<tool> (each with an optional `result_handler`,
see docs/handlers.md), `execute_code` (TypeScript as in `agent exec`), `search_tools` and
`describe_tool`. The generated tree is refreshed at start.

HTTP binds loopback by default, accepts only loopback Host names and Origins (403 otherwise),
and with --token-env VAR wants `Authorization: Bearer $VAR` (401 otherwise). A non-loopback
address is refused without a token. The bound address is printed on stderr as
`listening on http://HOST:PORT/mcp`.

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
    /// Require `Authorization: Bearer <token>` over HTTP, the token read from this environment
    /// variable.
    #[arg(long, value_name = "VAR", requires = "http")]
    pub token_env: Option<String>,
    /// Scripts that may run at once (default: CPUs, 2 to 8).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
}

pub async fn run(ctx: Context, args: &ServeArgs) -> anyhow::Result<u8> {
    let expose = Expose::parse(&args.expose).map_err(|e| usage(format!("--expose: {e}")))?;
    let token = match &args.token_env {
        None => None,
        Some(var) => match std::env::var(var) {
            Ok(t) if !t.trim().is_empty() => Some(t.trim().to_string()),
            _ => return Err(usage(format!("--token-env: the environment variable {var} is not set or empty"))),
        },
    };
    let addr = match &args.http {
        Some(a) => Some(parse_addr(a).map_err(|e| usage(format!("--http: {e}")))?),
        None => None,
    };
    if let Some(addr) = addr
        && !addr.ip().is_loopback()
        && token.is_none()
    {
        return Err(usage(format!(
            "--http: refusing to listen on {addr} without a token (use --token-env VAR, or a loopback address)"
        )));
    }
    let workers = match args.workers {
        Some(0) => return Err(usage("--workers: must be at least 1")),
        Some(n) => n,
        None => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(2, 8),
    };
    let session = super::session::Session::headless(&ctx.config);
    let manager = session.manager().clone();
    let started = tokio::select! {
        r = Server::start(&ctx.config, manager, session.recorder().clone(), expose, workers) => Ok(r),
        signal = ctx.signals.received() => Err(signal),
    };
    let server = match started {
        Ok(Ok((server, report))) => {
            for (name, e) in &report.failed {
                eprintln!("warning: {e} (`{name}` is tried again when one of its tools is used)");
            }
            tracing::info!("serving {} servers ({} tree files written)", report.started.len(), report.files_written);
            server
        }
        Ok(Err(e)) => {
            session.close().await;
            return Err(e);
        }
        Err(signal) => {
            session.close().await;
            return Ok(super::signal::exit_after(signal));
        }
    };
    let outcome = tokio::select! {
        r = serve(server.clone(), addr, token) => Ok(r),
        signal = ctx.signals.received() => Err(signal),
    };
    // Bridges and executors first, then every upstream server with its process group.
    server.stop().await;
    session.close().await;
    match outcome {
        Ok(r) => r.map(|()| EXIT_OK),
        Err(signal) => Ok(super::signal::exit_after(signal)),
    }
}

/// Serves until stdin closes (stdio) or forever (HTTP).
async fn serve(server: Server, addr: Option<std::net::SocketAddr>, token: Option<String>) -> anyhow::Result<()> {
    match addr {
        None => server.serve_stdio().await,
        Some(addr) => {
            let http = HttpServer::bind(server, addr, token).await?;
            eprintln!("listening on http://{}/mcp", http.local_addr());
            http.run().await
        }
    }
}
