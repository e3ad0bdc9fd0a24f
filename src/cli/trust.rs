//! Trusting a project's own configuration before it runs anything: a cloned repository's
//! `agent.yaml` or `.mcp.json` can name any command as a server. [`ensure`] runs before a session
//! starts servers. The project's servers are trusted by `--trust-project` /
//! `AGENT_TRUST_PROJECT=1`, by `trusted_projects` in the user's own config file, or by an earlier
//! "yes" for the same content of the same files (remembered per user in
//! `$XDG_STATE_HOME/agent/trusted-projects.json`, `0600` in a `0700` directory); otherwise the
//! user is asked on a terminal, and without one the command is refused (exit code 2) with the
//! ways to trust it. The user's own config file and an explicit `--config` never need trust.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::output::terminal_line;
use crate::config::Config;
use crate::util::fs::{Access, Dir};

/// The file of remembered answers, under `$XDG_STATE_HOME/agent/`.
pub const FILE: &str = "trusted-projects.json";
const LOCK: &str = "trusted-projects.lock";
const MAX_BYTES: u64 = 1 << 20;
/// At most this many of the project's commands are named in the question.
const SHOWN: usize = 8;

/// `{"projects": {"/canonical/root": "<fingerprint of its files>"}}`.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Remembered {
    #[serde(default)]
    projects: BTreeMap<PathBuf, String>,
}

/// Whether a command may ask on the terminal (`serve` may not: its stdin is the protocol).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asking {
    /// Ask when stdin and stderr are terminals.
    IfTerminal,
    /// Never ask; refuse when not trusted otherwise.
    Never,
}

/// Returns when the project's servers may start (see the module doc), else the usage error that
/// says how to trust them.
pub fn ensure(config: &Config, asking: Asking) -> anyhow::Result<()> {
    let project = &config.project;
    if project.files.is_empty() || !project.runs_anything() || project.trusted_by_flag {
        return Ok(());
    }
    let root = canonical(&project.base);
    if config.trusted_projects.iter().any(|t| canonical(t) == root) {
        return Ok(());
    }
    let fingerprint = project.fingerprint();
    let store = state_dir();
    if let Some(dir) = &store
        && remembered(dir).projects.get(&root) == Some(&fingerprint)
    {
        return Ok(());
    }
    let files = file_names(config);
    if asking == Asking::IfTerminal && super::prompt::interactive() {
        let question = format!(
            "Trust the {} of {} ({files})? They {}",
            what(config),
            terminal_line(&root.display().to_string()),
            runs(config)
        );
        if super::prompt::confirm(&question, false)? {
            if let Some(dir) = &store
                && let Err(e) = remember(dir, &root, &fingerprint)
            {
                tracing::warn!("cannot remember the answer in {}: {e}", dir.join(FILE).display());
            }
            return Ok(());
        }
        let verb = if what(config) == "settings" { "using" } else { "starting" };
        return Err(super::usage(format!(
            "not {verb} the {} of {} ({files}): not trusted",
            what(config),
            root.display()
        )));
    }
    Err(super::usage(format!(
        "the {} of {} ({files}) {} not trusted yet: answer once on a terminal, pass \
         --trust-project (or set AGENT_TRUST_PROJECT=1), or add the directory to trusted_projects \
         in your own config file (~/.config/agent/config.yaml)",
        what(config),
        root.display(),
        if config.project.servers.is_empty() && !config.project.sets_tsc { "is" } else { "are" }
    )))
}

/// What needs trust: the project's servers (or compiler), else its guarded settings.
fn what(config: &Config) -> &'static str {
    if config.project.servers.is_empty() && !config.project.sets_tsc { "settings" } else { "MCP servers" }
}

/// The project's files as the question names them: `agent.yaml, .mcp.json`.
fn file_names(config: &Config) -> String {
    let base = &config.project.base;
    let names: Vec<String> = config
        .project
        .files
        .iter()
        .map(|(p, _)| p.strip_prefix(base).unwrap_or(p).display().to_string())
        .map(|n| terminal_line(&n).into_owned())
        .collect();
    names.join(", ")
}

/// What the project's files start, one short entry each (`name: command args` or `name: url`),
/// and the guarded settings they change (`llm.base_url = URL`), as the question's end:
/// `run: a: cmd, b: url` and/or `set: llm.base_url = ...`.
fn runs(config: &Config) -> String {
    let started = started(config);
    let set: Vec<String> = config
        .project
        .guarded
        .iter()
        .map(|(key, value)| format!("{key} = {}", shorten(&terminal_line(value), 80)))
        .collect();
    match (started.is_empty(), set.is_empty()) {
        (false, true) => format!("run: {started}"),
        (true, _) => format!("set: {}", set.join(", ")),
        (false, false) => format!("run: {started}; and set: {}", set.join(", ")),
    }
}

/// What the project's files start, one short entry each: `name: command args` or `name: url`.
fn started(config: &Config) -> String {
    let mut out = Vec::new();
    for name in &config.project.servers {
        let Some(s) = config.mcp.servers.get(name) else { continue };
        let what = match (&s.command, &s.url) {
            (Some(cmd), _) => {
                std::iter::once(cmd.as_str()).chain(s.args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
            }
            (None, Some(url)) => url.clone(),
            (None, None) => "(nothing)".to_string(),
        };
        out.push(format!("{}: {}", terminal_line(name), shorten(&terminal_line(&what), 80)));
    }
    if config.project.sets_tsc
        && let Some(tsc) = &config.mcp.code_execution.tsc
    {
        out.push(format!("tsc: {}", shorten(&terminal_line(&tsc.display().to_string()), 80)));
    }
    let more = out.len().saturating_sub(SHOWN);
    out.truncate(SHOWN);
    if more > 0 {
        out.push(format!("and {more} more"));
    }
    out.join(", ")
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max { s.to_string() } else { format!("{}…", s.chars().take(max - 1).collect::<String>()) }
}

/// `path` with links resolved (as given when it does not exist).
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `$XDG_STATE_HOME/agent` (else `~/.local/state/agent`).
fn state_dir() -> Option<PathBuf> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    crate::config::state_home(&env).map(|s| s.join("agent"))
}

/// The remembered answers; none when the directory or the file is missing, unreadable, not
/// private to this user (another user could have written it) or malformed.
fn remembered(dir: &Path) -> Remembered {
    match crate::util::fs::private_dir(dir, false) {
        Ok(Some(d)) => read_in(&d).unwrap_or_default(),
        _ => Remembered::default(),
    }
}

fn read_in(dir: &Dir) -> std::io::Result<Remembered> {
    let mut file = match dir.open_file(FILE) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Remembered::default()),
        Err(e) => return Err(e),
    };
    {
        use std::os::unix::fs::MetadataExt as _;
        let meta = file.metadata()?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        if meta.uid() != unsafe { libc::geteuid() } || meta.mode() & 0o022 != 0 {
            return Err(std::io::Error::other("not private to this user"));
        }
    }
    let bytes = crate::util::read::read_capped(&mut file, MAX_BYTES).map_err(|e| match e {
        crate::util::read::CapError::Io(e) => e,
        crate::util::read::CapError::TooLarge => std::io::Error::other("too large"),
    })?;
    serde_json::from_slice(&bytes).map_err(std::io::Error::other)
}

/// Records "yes" for `root` with `fingerprint` (replacing an older answer for other content).
fn remember(dir: &Path, root: &Path, fingerprint: &str) -> std::io::Result<()> {
    let Some(d) = crate::util::fs::private_dir(dir, true)? else { return Err(std::io::ErrorKind::NotFound.into()) };
    let _lock = d.lock(LOCK, Duration::from_secs(5))?;
    let mut all = read_in(&d).unwrap_or_default();
    all.projects.insert(root.to_path_buf(), fingerprint.to_string());
    let text = serde_json::to_vec_pretty(&all).map_err(std::io::Error::other)?;
    d.write_atomic(FILE, &text, Access::Private)
}
