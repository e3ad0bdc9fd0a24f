//! `agent mcp login`, `agent mcp logout` and `agent mcp auth status`: signing in to hosted HTTP
//! servers with OAuth (the flow itself is `mcp::auth`). This module opens the browser or prints
//! the URL, waits for the redirect (racing Ctrl-C), and prints one line of result; tokens never
//! reach its output.

use clap::{Args, Subcommand};

use super::{Context, EXIT_OK, usage};
use crate::config::{ServerConfig, Transport};
use crate::mcp::McpManager;
use crate::mcp::auth::{self, login, store::TokenStore};

pub const LOGIN_AFTER_HELP: &str = "\
Runs the OAuth 2.1 authorization code flow (PKCE) for an HTTP server: reads the server's 401 \
challenge, discovers its authorization server, registers `agent` when it must (a configured \
auth.client_id first, then a client metadata document, then dynamic registration), opens the \
browser and waits up to 5 minutes for the redirect to http://127.0.0.1:PORT/callback. Tokens are \
kept in ~/.config/agent/credentials.json (0600) and refreshed when they expire.

Examples:
  agent mcp login notion
  agent mcp login github --scopes \"repo read:org\" --no-browser";

/// `agent mcp login`.
#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The configured HTTP server to sign in to.
    pub server: String,
    /// Scopes to ask for, space-separated (default: auth.scopes, else what the server asks).
    #[arg(long, value_name = "SCOPES")]
    pub scopes: Option<String>,
    /// Print the sign-in URL instead of opening a browser.
    #[arg(long)]
    pub no_browser: bool,
}

/// `agent mcp logout`.
#[derive(Debug, Args)]
pub struct LogoutArgs {
    /// The server whose stored tokens to remove.
    pub server: String,
}

/// `agent mcp auth ...`.
#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// The sign-in state of each HTTP server.
    Status(StatusArgs),
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// One object per server: {"server", "url", "status", "detail"}.
    #[arg(long)]
    pub json: bool,
}

/// The HTTP server `name` of the configuration (unknown or stdio: a usage error).
fn http_server<'a>(ctx: &'a Context, name: &str) -> anyhow::Result<&'a ServerConfig> {
    McpManager::new(&ctx.config).check_server(name).map_err(|e| usage(e.to_string()))?;
    let cfg = ctx.config.mcp.servers.get(name).ok_or_else(|| usage(format!("unknown server `{name}`")))?;
    if cfg.transport() != Ok(Transport::Http) {
        return Err(usage(format!("server `{name}` is not an HTTP server: sign-in is for servers with a `url`")));
    }
    if let Some(first) = cfg.unresolved.first() {
        return Err(usage(first.clone()));
    }
    Ok(cfg)
}

fn store() -> anyhow::Result<TokenStore> {
    TokenStore::for_user().map_err(|e| anyhow::anyhow!(e))
}

pub async fn login(ctx: Context, args: &LoginArgs) -> anyhow::Result<u8> {
    let cfg = http_server(&ctx, &args.server)?;
    let name = &args.server;
    if auth::has_static_authorization(cfg) {
        return Err(usage(format!("server `{name}` sends a static `Authorization` header: remove it to sign in")));
    }
    let store = store()?;
    if cfg.auth.grant == crate::config::AuthGrant::ClientCredentials {
        // A machine identity: no browser, the token is fetched (and stored) now.
        return match auth::for_connect(cfg, &store).await {
            Ok(_) => {
                eprintln!("signed in to {name} (client credentials)");
                Ok(EXIT_OK)
            }
            Err(e) => Err(anyhow::anyhow!("cannot sign in to `{name}`: {e}")),
        };
    }
    let scopes = args.scopes.as_deref().map(|s| s.split_whitespace().map(str::to_string).collect());
    let granted = tokio::select! {
        r = sign_in(cfg, name, &store, scopes, args.no_browser) => r?,
        signal = ctx.signals.received() => return Ok(super::signal::exit_after(signal)),
    };
    let scopes = if granted.is_empty() { "none".to_string() } else { granted.join(" ") };
    eprintln!("signed in to {name} (scopes: {})", super::output::terminal_line(&scopes));
    Ok(EXIT_OK)
}

/// The browser flow for server `name` (see `mcp::auth::login`): the URL opened or printed on
/// stderr, the redirect awaited; the scopes granted.
pub async fn sign_in(
    cfg: &ServerConfig,
    name: &str,
    store: &TokenStore,
    scopes: Option<Vec<String>>,
    no_browser: bool,
) -> anyhow::Result<Vec<String>> {
    let pending =
        login::start(name, cfg, store, scopes).await.map_err(|e| anyhow::anyhow!("cannot sign in to `{name}`: {e}"))?;
    // The URL is built from the server's metadata: shown with control characters made visible.
    let url = super::output::terminal_line(&pending.auth_url).into_owned();
    if no_browser || !open_browser(&pending.auth_url) {
        eprintln!("open this URL to sign in: {url}");
    } else {
        eprintln!("a browser window is open to sign in to {name} (else open this URL to sign in: {url})");
    }
    let signed_in =
        pending.finish(login::WAIT).await.map_err(|e| anyhow::anyhow!("cannot sign in to `{name}`: {e}"))?;
    Ok(signed_in.scopes)
}

/// Opens `url` in the user's browser (`$BROWSER`, else `xdg-open`, else `open`); whether a
/// program took it. Never with a display-less session's text browser: without `DISPLAY` or
/// `WAYLAND_DISPLAY` (and not on macOS) the URL is printed instead.
fn open_browser(url: &str) -> bool {
    let graphical = std::env::var_os("DISPLAY").is_some()
        || std::env::var_os("WAYLAND_DISPLAY").is_some()
        || cfg!(target_os = "macos");
    let configured = std::env::var("BROWSER").ok().filter(|b| !b.trim().is_empty());
    if !graphical && configured.is_none() {
        return false;
    }
    let candidates: Vec<String> = configured.into_iter().chain(["xdg-open".to_string(), "open".to_string()]).collect();
    for program in candidates {
        let Some(path) = crate::util::dirs::find_on_path(&program) else { continue };
        let spawned = std::process::Command::new(path)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        if spawned.is_ok_and(|s| s.success()) {
            return true;
        }
    }
    false
}

pub async fn logout(ctx: Context, args: &LogoutArgs) -> anyhow::Result<u8> {
    let cfg = http_server(&ctx, &args.server)?;
    let url = cfg.url.clone().unwrap_or_default();
    let removed = store()?.remove_url(&url).map_err(|e| anyhow::anyhow!("cannot update the credentials file: {e}"))?;
    if removed == 0 {
        eprintln!("not signed in to {}", args.server);
    } else {
        eprintln!("signed out of {}", args.server);
    }
    Ok(EXIT_OK)
}

pub async fn run(ctx: Context, cmd: &AuthCommand) -> anyhow::Result<u8> {
    let AuthCommand::Status(args) = cmd;
    let store = store()?;
    let mut rows = Vec::new();
    for (name, cfg) in &ctx.config.mcp.servers {
        if cfg.disabled || cfg.transport() != Ok(Transport::Http) {
            continue;
        }
        let url = cfg.url.clone().unwrap_or_default();
        let status = match auth::stored_status(cfg, &store).map_err(|e| anyhow::anyhow!(e))? {
            Some(s) => Ok(s),
            None => {
                tokio::select! {
                    r = auth::probe(&url, cfg.connect_timeout) => r,
                    signal = ctx.signals.received() => return Ok(super::signal::exit_after(signal)),
                }
            }
        };
        rows.push((name.clone(), url, status));
    }
    if args.json {
        let items: Vec<serde_json::Value> = rows
            .iter()
            .map(|(name, url, status)| match status {
                Ok(s) => serde_json::json!({"server": name, "url": url, "status": s.key(), "detail": s.to_string()}),
                Err(e) => serde_json::json!({"server": name, "url": url, "status": "unknown", "detail": e}),
            })
            .collect();
        let mut text = serde_json::to_string_pretty(&items)?;
        text.push('\n');
        super::output::write_stdout(&text)?;
        return Ok(EXIT_OK);
    }
    if rows.is_empty() {
        eprintln!("no HTTP servers configured");
        return Ok(EXIT_OK);
    }
    let width = rows.iter().map(|(n, _, _)| n.chars().count()).max().unwrap_or(0);
    let mut text = String::new();
    for (name, _, status) in &rows {
        let word = match status {
            Ok(s) => s.to_string(),
            Err(e) => format!("unknown ({e})"),
        };
        text.push_str(&format!("  {name:<width$}  {word}\n"));
    }
    super::output::write_stdout(&super::output::terminal_text(&text))?;
    Ok(EXIT_OK)
}
