//! `agent doctor`: is this setup able to work? One line per check, `ok`, `warn` or `problem`
//! (each problem with its fix): the configuration files read and where each server was
//! declared, each enabled server started (time, tools, or its one-line error), the sign-in of
//! HTTP servers, Node and `tsc` for `agent exec --check`, the workspace and per-user directories
//! (writable, ours, 0700), and the LLM endpoint (reachable, key present). `--json` for machines.
//!
//! The API key is never printed, logged or sent: the endpoint is probed with a plain `GET` of
//! its base URL, and every line is scrubbed of the key's value before it is shown.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{Context, EXIT_FAILURE, EXIT_OK};
use crate::config::{Config, SourceKind, Transport};
use crate::mcp::McpError;
use crate::mcp::auth::{self, Status};

pub const AFTER_HELP: &str = "\
Checks, one line each (`ok`, `warn`, or `problem` with its fix):
  config    the configuration files read, in layer order (user, explicit, project, import)
  server    each enabled server started: time and tool count, or the one-line error, and
            where it was declared (a YAML file, an imported mcpServers file, the environment)
  sign-in   HTTP servers: signed in, static headers, client credentials, or needs sign-in
  tool      node and tsc: what `agent exec --check` (mcp.code_execution.typecheck) needs; a problem only
            when type-checking is on
  dir       the workspace (mcp.code_execution.workspace_dir), the cache and the credentials
            directory: ours, writable, and not readable by others (0700); one that does not
            exist yet is fine
  llm       the provider's API key is present (its value is never printed) and the base URL
            answers an HTTP GET within 5 s (the key is not sent)

--json prints {\"ok\": bool, \"problems\": N, \"warnings\": N, \"checks\": [{\"check\", \"name\",
\"status\", \"detail\", \"fix\", ...}]}. Colour only on a terminal without NO_COLOR.

Exit codes:
  0  no problem (warnings allowed)
  1  at least one problem
  2  the configuration cannot be read";

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print the checks as one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// How long the LLM endpoint and `node --version` / `tsc --version` may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// One check's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Level {
    Ok,
    Warn,
    Problem,
}

impl Level {
    fn word(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Problem => "problem",
        }
    }
}

/// One line of the report.
#[derive(Debug, Serialize)]
struct Check {
    check: &'static str,
    name: String,
    status: Level,
    detail: String,
    fix: Option<String>,
    /// Facts for `--json` (path, layer, milliseconds, tool count, declared_in).
    #[serde(flatten)]
    data: Map<String, Value>,
}

impl Check {
    fn new(check: &'static str, name: impl Into<String>, status: Level, detail: impl Into<String>) -> Check {
        Check { check, name: name.into(), status, detail: detail.into(), fix: None, data: Map::new() }
    }
    fn fix(mut self, fix: impl Into<String>) -> Check {
        self.fix = Some(fix.into());
        self
    }
    fn with(mut self, key: &str, value: Value) -> Check {
        self.data.insert(key.into(), value);
        self
    }
}

pub async fn run(ctx: Context, args: &DoctorArgs) -> anyhow::Result<u8> {
    let config = &ctx.config;
    let mut checks = config_checks(config);
    // An untrusted project's servers are not started by doctor either: that is the problem shown.
    match super::session::Session::open(config) {
        Ok(session) => {
            let gathered = tokio::select! {
                c = server_checks(config, session.manager()) => Ok(c),
                signal = ctx.signals.received() => Err(signal),
            };
            session.close().await;
            match gathered {
                Ok(c) => checks.extend(c),
                Err(signal) => return Ok(super::signal::exit_after(signal)),
            }
        }
        Err(e) => checks.push(
            Check::new("trust", "project", Level::Problem, format!("{e:#}"))
                .fix("trust the project (see docs/servers.md), then run doctor again"),
        ),
    }
    checks.extend(tool_checks(config).await);
    checks.extend(dir_checks(config));
    let llm = tokio::select! {
        c = llm_checks(config) => c,
        signal = ctx.signals.received() => return Ok(super::signal::exit_after(signal)),
    };
    checks.extend(llm);
    let key = llm_key(config).map(|(k, _)| k);
    let problems = checks.iter().filter(|c| c.status == Level::Problem).count();
    let warnings = checks.iter().filter(|c| c.status == Level::Warn).count();
    let text = if args.json {
        let doc = json!({"ok": problems == 0, "problems": problems, "warnings": warnings, "checks": checks});
        let mut s = serde_json::to_string_pretty(&doc).context("cannot serialise the checks")?;
        s.push('\n');
        s
    } else {
        human(&checks, problems, warnings)
    };
    // Whatever a line quotes (a server's error, a URL), the key's value never leaves.
    let text = match key.filter(|k| k.len() >= 4) {
        Some(k) => text.replace(&k, "[redacted]"),
        None => text,
    };
    if args.json || !std::io::stdout().is_terminal() {
        super::output::write_stdout(&text)?;
    } else {
        // Each line is sanitised already (`human`); written as it is so the colour stays.
        write_terminal(&text)?;
    }
    Ok(if problems == 0 { EXIT_OK } else { EXIT_FAILURE })
}

/// Writes `text` (sanitised line by line, with colour codes of our own) to the terminal.
fn write_terminal(text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|_| out.flush()).context("cannot write to stdout")
}

/// The human report: `status  check name: detail; fix: ...`, one line per check. On a
/// terminal what servers said is sanitised and the status word coloured (not with `NO_COLOR`).
fn human(checks: &[Check], problems: usize, warnings: usize) -> String {
    let terminal = std::io::stdout().is_terminal();
    let color = terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let mut s = String::new();
    for c in checks {
        let word = c.status.word();
        let padded = format!("{word:<7}");
        let shown = match (color, c.status) {
            (false, _) => padded,
            (true, Level::Ok) => format!("\x1b[32m{padded}\x1b[0m"),
            (true, Level::Warn) => format!("\x1b[33m{padded}\x1b[0m"),
            (true, Level::Problem) => format!("\x1b[31m{padded}\x1b[0m"),
        };
        let mut line = format!("{} {}: {}", c.check, c.name, c.detail);
        if let Some(fix) = &c.fix {
            line.push_str(&format!("; fix: {fix}"));
        }
        // One line per check, whatever the server's message holds.
        let line = if terminal { super::output::terminal_line(&line).into_owned() } else { line.replace('\n', " ") };
        s.push_str(&format!("{shown}  {line}\n"));
    }
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    s.push_str(&format!("\n{}, {}\n", plural(problems, "problem"), plural(warnings, "warning")));
    s
}

/// The configuration files read, in layer order.
fn config_checks(config: &Config) -> Vec<Check> {
    if config.sources.is_empty() {
        return vec![Check::new(
            "config",
            "defaults",
            Level::Ok,
            "no configuration file found: built-in defaults and AGENT_* variables",
        )];
    }
    config
        .sources
        .iter()
        .map(|s| {
            Check::new("config", s.path.display().to_string(), Level::Ok, format!("read ({} layer)", s.kind.as_str()))
                .with("path", json!(s.path))
                .with("layer", json!(s.kind.as_str()))
        })
        .collect()
}

/// Where server `name` was declared: its imported `mcpServers` file, else the last YAML file
/// whose `mcp.servers` names it (later layers win), else the environment.
fn declared_in(config: &Config, name: &str) -> String {
    if let Some(file) = config.mcp.servers.get(name).and_then(|c| c.imported_from.as_ref()) {
        return file.display().to_string();
    }
    let mut yaml_files = config.sources.iter().filter(|s| s.kind != SourceKind::Import).map(|s| &s.path);
    yaml_files
        .rfind(|path| yaml_declares(path, name))
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "the environment (AGENT_MCP__SERVERS__...)".into())
}

/// Whether the YAML file at `path` has `mcp.servers.<name>`.
fn yaml_declares(path: &Path, name: &str) -> bool {
    let Ok(text) = crate::util::read::read_text_file(path, crate::config::MAX_CONFIG_BYTES as u64) else {
        return false;
    };
    let Ok(docs) = yaml_rust2::YamlLoader::load_from_str(&text) else { return false };
    docs.iter().any(|d| !d["mcp"]["servers"][name].is_badvalue())
}

/// Each enabled server started (concurrently, each timed), and the sign-in of the HTTP ones.
async fn server_checks(config: &Config, manager: &crate::mcp::McpManager) -> Vec<Check> {
    let mut checks = Vec::new();
    for name in config.mcp.servers.iter().filter(|(_, c)| c.disabled).map(|(name, _)| name) {
        let declared = declared_in(config, name);
        checks.push(
            Check::new("server", name, Level::Ok, format!("disabled (declared in {declared})"))
                .with("declared_in", json!(declared)),
        );
    }
    let enabled: Vec<String> = manager.server_names();
    let spinner = super::output::Spinner::start(format!("starting {} server(s)", enabled.len()));
    let started = futures::future::join_all(enabled.iter().map(|name| async move {
        let t = Instant::now();
        let r = manager.start_servers(std::slice::from_ref(name)).await;
        (name, t.elapsed(), r)
    }))
    .await;
    spinner.finish();
    let store = crate::mcp::auth::store::TokenStore::for_user();
    for (name, took, r) in started {
        let declared = declared_in(config, name);
        let ms = took.as_millis() as u64;
        let failed = r.failed.into_iter().next().map(|(_, e)| e);
        let check = match &failed {
            None => {
                let n = r.tools.len();
                Check::new(
                    "server",
                    name,
                    Level::Ok,
                    format!("started in {ms} ms, {n} tool{} (declared in {declared})", if n == 1 { "" } else { "s" }),
                )
                .with("tools", json!(n))
            }
            Some(e @ McpError::NeedsSignIn { .. }) => {
                Check::new("server", name, Level::Problem, e.to_string()).fix(format!("agent mcp login {name}"))
            }
            Some(e) => Check::new("server", name, Level::Problem, e.to_string()).fix(format!(
                "check mcp.servers.{name} in {declared}; its stderr is in {}",
                config.mcp.code_execution.workspace_dir.join("logs").join(format!("{name}.stderr.log")).display()
            )),
        };
        checks.push(check.with("ms", json!(ms)).with("declared_in", json!(declared)));
        let Some(cfg) = config.mcp.servers.get(name.as_str()) else { continue };
        if cfg.transport() != Ok(Transport::Http) {
            continue;
        }
        let stored = match &store {
            Ok(store) => auth::stored_status(cfg, store),
            Err(e) => Err(e.clone()),
        };
        let status = match (stored, &failed) {
            (Ok(Some(s)), _) => Ok(s),
            (Ok(None), Some(McpError::NeedsSignIn { .. })) => Ok(Status::NeedsSignIn),
            (Ok(None), None) => Ok(Status::NoAuth),
            (Ok(None), Some(_)) => Err("unknown: the server did not start".to_string()),
            (Err(e), _) => Err(e),
        };
        checks.push(match status {
            Ok(Status::NeedsSignIn) => Check::new("sign-in", name, Level::Problem, Status::NeedsSignIn.to_string())
                .fix(format!("agent mcp login {name}"))
                .with("auth", json!(Status::NeedsSignIn.key())),
            Ok(s) => Check::new("sign-in", name, Level::Ok, s.to_string()).with("auth", json!(s.key())),
            Err(e) => Check::new("sign-in", name, Level::Warn, e),
        });
    }
    checks
}

/// Node and `tsc` (what `agent exec --check` runs); a problem only when type-checking is on.
async fn tool_checks(config: &Config) -> Vec<Check> {
    let cc = &config.mcp.code_execution;
    let missing = if cc.typecheck { Level::Problem } else { Level::Warn };
    let needed = if cc.typecheck {
        "mcp.code_execution.typecheck is on"
    } else {
        "only `agent exec --check` and mcp.code_execution.typecheck need it"
    };
    let mut checks = Vec::new();
    checks.push(match crate::util::dirs::find_on_path("node") {
        Some(node) => version_check("node", &node, missing, needed).await,
        None => Check::new("tool", "node", missing, format!("not on PATH ({needed})"))
            .fix("install Node.js 20 or later (https://nodejs.org)"),
    });
    checks.push(match crate::codemode::typecheck::Checker::resolve(true, cc.tsc.as_deref()) {
        crate::codemode::typecheck::Checker::Tsc(tsc) => version_check("tsc", &tsc, missing, needed).await,
        crate::codemode::typecheck::Checker::Missing(why) => {
            let why = why.split(':').next().unwrap_or("no TypeScript compiler").to_string();
            Check::new("tool", "tsc", missing, format!("{why} ({needed})"))
                .fix("npm install -g typescript, or set mcp.code_execution.tsc")
        }
        crate::codemode::typecheck::Checker::Off => Check::new("tool", "tsc", Level::Ok, "not needed"),
    });
    checks
}

/// `<program> --version`, with a timeout.
async fn version_check(name: &'static str, program: &Path, missing: Level, needed: &str) -> Check {
    let mut cmd = tokio::process::Command::new(program);
    cmd.arg("--version").stdin(std::process::Stdio::null()).kill_on_drop(true);
    match tokio::time::timeout(PROBE_TIMEOUT, cmd.output()).await {
        Ok(Ok(out)) if out.status.success() => {
            let version = String::from_utf8_lossy(&out.stdout).trim().chars().take(80).collect::<String>();
            Check::new("tool", name, Level::Ok, format!("{version} ({})", program.display()))
                .with("path", json!(program))
                .with("version", json!(version))
        }
        Ok(Ok(out)) => {
            Check::new("tool", name, missing, format!("{} --version failed ({})", program.display(), out.status))
                .fix(format!("reinstall {name} ({needed})"))
        }
        Ok(Err(e)) => Check::new("tool", name, missing, format!("cannot run {}: {e}", program.display()))
            .fix(format!("reinstall {name} ({needed})")),
        Err(_) => Check::new("tool", name, missing, format!("{} --version took over 5 s", program.display()))
            .fix(format!("reinstall {name} ({needed})")),
    }
}

/// The directories agent writes: ours, writable, private.
fn dir_checks(config: &Config) -> Vec<Check> {
    let mut dirs: Vec<(&'static str, Option<PathBuf>)> = vec![
        ("workspace", std::path::absolute(&config.mcp.code_execution.workspace_dir).ok()),
        ("cache", crate::util::dirs::cache_home().map(|c| c.join("agent"))),
        ("credentials", crate::util::dirs::config_home().map(|c| c.join("agent"))),
    ];
    dirs.dedup_by(|a, b| a.1 == b.1);
    dirs.into_iter()
        .map(|(what, dir)| match dir {
            Some(dir) => dir_check(what, &dir).with("path", json!(dir)),
            None => Check::new("dir", what, Level::Problem, "neither XDG nor HOME says where it goes")
                .fix("set HOME (or XDG_CACHE_HOME / XDG_CONFIG_HOME)"),
        })
        .collect()
}

fn dir_check(what: &'static str, dir: &Path) -> Check {
    use std::os::unix::fs::MetadataExt as _;
    let shown = dir.display();
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Check::new("dir", what, Level::Ok, format!("{shown} does not exist yet (made on first use)"));
        }
        Err(e) => return Check::new("dir", what, Level::Problem, format!("cannot read {shown}: {e}")),
    };
    if meta.file_type().is_symlink() || !meta.is_dir() {
        return Check::new("dir", what, Level::Problem, format!("{shown} is not a directory (a link or a file)"))
            .fix(format!("move it away and let agent make the directory: mv {shown} {shown}.old"));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Check::new(
            "dir",
            what,
            Level::Problem,
            format!("{shown} belongs to another user (uid {})", meta.uid()),
        )
        .fix(format!("use a directory of your own, or chown $(id -u) {shown}"));
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Check::new(
            "dir",
            what,
            Level::Problem,
            format!("{shown} is readable or writable by others (mode {mode:o})"),
        )
        .fix(format!("chmod 700 {shown}"))
        .with("mode", json!(format!("{mode:o}")));
    }
    // An unnamed temporary file: nothing is left behind, even when agent is killed here.
    if let Err(e) = tempfile::tempfile_in(dir) {
        return Check::new("dir", what, Level::Problem, format!("cannot write in {shown}: {e}"))
            .fix(format!("chmod u+w {shown}"));
    }
    Check::new("dir", what, Level::Ok, format!("{shown} (0700, writable)")).with("mode", json!(format!("{mode:o}")))
}

/// The key and where it came from (`llm.api_key` or the provider's variable).
fn llm_key(config: &Config) -> Option<(String, String)> {
    let var = crate::agent::key_env_var(config.llm.provider);
    if let Some(k) = config.llm.api_key.clone().filter(|k| !k.is_empty()) {
        return Some((k, "llm.api_key".into()));
    }
    std::env::var(var).ok().filter(|k| !k.is_empty()).map(|k| (k, var.to_string()))
}

/// The key present, the base URL answering.
async fn llm_checks(config: &Config) -> Vec<Check> {
    let llm = &config.llm;
    let var = crate::agent::key_env_var(llm.provider);
    let mut checks = Vec::new();
    if let Some(first) = llm.unresolved.first() {
        checks.push(Check::new("llm", "config", Level::Problem, first.clone()).fix("set the variable it names"));
    }
    let custom_base = llm.base_url.as_deref().is_some_and(|b| !b.trim().is_empty());
    checks.push(match llm_key(config) {
        Some((_, from)) => Check::new("llm", "key", Level::Ok, format!("set (from {from}; not shown)")),
        None if custom_base => Check::new("llm", "key", Level::Ok, "none (a custom llm.base_url may go without one)"),
        None => Check::new("llm", "key", Level::Problem, format!("no API key for provider `{}`", llm.provider))
            .fix(format!("export {var}=... or set `llm.api_key: ${var}` in agent.yaml")),
    });
    let base = match llm.base_url.clone().filter(|b| !b.trim().is_empty()) {
        Some(b) => b,
        None => match llm.provider {
            crate::config::Provider::Anthropic => crate::agent::anthropic::DEFAULT_BASE_URL.to_string(),
            crate::config::Provider::Openai => crate::agent::openai::DEFAULT_BASE_URL.to_string(),
        },
    };
    checks.push(probe_endpoint(&base).await.with("model", json!(llm.model)));
    checks
}

/// A plain `GET` of the base URL (no key, no redirects): any HTTP answer means reachable.
async fn probe_endpoint(base: &str) -> Check {
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        return Check::new("llm", "endpoint", Level::Problem, format!("llm.base_url `{base}` is not an http(s) URL"))
            .fix("set llm.base_url to an http:// or https:// URL");
    }
    let client =
        match reqwest::Client::builder().timeout(PROBE_TIMEOUT).redirect(reqwest::redirect::Policy::none()).build() {
            Ok(c) => c,
            Err(e) => return Check::new("llm", "endpoint", Level::Problem, format!("cannot make an HTTP client: {e}")),
        };
    let t = Instant::now();
    match client.get(base).send().await {
        Ok(answer) => {
            let ms = t.elapsed().as_millis() as u64;
            Check::new(
                "llm",
                "endpoint",
                Level::Ok,
                format!("{base} answered HTTP {} in {ms} ms", answer.status().as_u16()),
            )
            .with("url", json!(base))
            .with("ms", json!(ms))
        }
        Err(e) => {
            let why = if e.is_timeout() { "no answer within 5 s".to_string() } else { error_root(&e) };
            Check::new("llm", "endpoint", Level::Problem, format!("cannot reach {base}: {why}"))
                .fix("check llm.base_url, the network and any proxy (HTTPS_PROXY)")
                .with("url", json!(base))
        }
    }
}

/// The innermost cause of an HTTP error (`Connection refused`), not reqwest's wrapper text.
fn error_root(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}
