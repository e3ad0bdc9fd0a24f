//! The child processes of stdio servers: each spawned as the leader of its own process group
//! (so stopping it stops what it started too, e.g. `npx` → `node`), with an environment of its
//! own (`envs`, the names in `env_passthrough` and a short safe list of `agent`'s variables:
//! never `agent`'s API keys or tokens) plus its run's marker (`reap`), its stderr appended to
//! `<log dir>/<server>.stderr.log` (never the user's terminal; errors quote its tail), and
//! stopped with SIGTERM to the group and to every process that carries the run's marker, then
//! SIGKILL after a grace period.

use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::reap::{RUN_VAR, Run, stat};
use super::stdio::{ChildTransport, ResultCap};
use crate::config::{INHERITED_ENV, ServerConfig};

/// How many stderr lines a start/call error quotes.
const STDERR_TAIL_LINES: usize = 5;
/// Grace period between SIGTERM and SIGKILL at shutdown.
const KILL_GRACE: Duration = Duration::from_millis(1500);
/// Log files over this size are truncated when their server starts again.
const MAX_LOG_BYTES: u64 = 4 << 20;

/// Where the servers' stderr goes: one file per server in one directory.
pub struct Logs {
    dir: PathBuf,
}

impl Logs {
    pub fn new(dir: PathBuf) -> Logs {
        Logs { dir }
    }

    /// Path of a server's stderr log (for messages that point the user at it).
    pub fn path(&self, server: &str) -> PathBuf {
        self.dir.join(format!("{}.stderr.log", sanitize_file_name(server)))
    }

    /// Opens the server's stderr log for appending; returns it and the offset this run starts at.
    fn open(&self, server: &str) -> Result<(std::fs::File, u64), String> {
        crate::util::fs::create_private_dirs(&self.dir)
            .map_err(|e| format!("cannot create the log directory {}: {e}", self.dir.display()))?;
        let path = self.path(server);
        let too_big = std::fs::metadata(&path).map(|m| m.len() > MAX_LOG_BYTES).unwrap_or(false);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(!too_big)
            .write(true)
            .truncate(too_big)
            .open(&path)
            .map_err(|e| format!("cannot open the log file {}: {e}", path.display()))?;
        let offset = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok((file, offset))
    }

    /// The last lines the server wrote to stderr since `offset`.
    pub fn tail(&self, server: &str, offset: u64) -> Vec<String> {
        tail_lines(&self.path(server), offset, STDERR_TAIL_LINES)
    }
}

/// A stdio server's child, running in its own process group.
pub struct Child {
    pub transport: ChildTransport,
    /// The process group (the child's pid: it leads its group).
    pub pgid: Option<i32>,
    /// Where this run's stderr starts in the log file.
    pub log_offset: u64,
}

/// Spawns the stdio server `name` as configured, stdin and stdout piped to the transport (which
/// caps message size at `cap`), stderr to its log, its environment as the module doc says and
/// marked as one of `run`'s. The error is one line.
pub fn spawn(
    name: &str,
    cfg: &ServerConfig,
    logs: &Logs,
    cap: &std::sync::Arc<ResultCap>,
    run: &Run,
) -> Result<Child, String> {
    let command = cfg.command.clone().unwrap_or_default();
    if is_this_binary(&command, cfg) {
        return Err(format!("skipped: `{command}` is agent itself, which would start itself again as its own server"));
    }
    let (log, log_offset) = logs.open(name)?;
    warn_not_passed(name, cfg);
    let mut cmd = tokio::process::Command::new(&command);
    cmd.args(&cfg.args).env_clear().envs(child_env(cfg, &|v| std::env::var_os(v))).kill_on_drop(true);
    cmd.env(RUN_VAR, run.marker());
    if let Some(cwd) = &cfg.cwd {
        cmd.current_dir(cwd);
    }
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::from(log));
    let mut wrap = process_wrap::tokio::CommandWrap::from(cmd);
    wrap.wrap(process_wrap::tokio::ProcessGroup::leader());
    run.before_spawn();
    let spawned = wrap.spawn().and_then(|c| ChildTransport::new(c, cap.clone(), name));
    let transport = spawned.map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("command `{command}` not found"),
        std::io::ErrorKind::PermissionDenied => format!("command `{command}` is not executable"),
        _ => format!("cannot run `{command}`: {e}"),
    })?;
    let pgid = transport.id().map(|p| p as i32);
    if let Some(pid) = pgid {
        run.spawned(pid);
    }
    Ok(Child { transport, pgid, log_offset })
}

/// Whether `command` is this very binary, resolved as the child would resolve it (relative to its
/// `cwd`, or on the `PATH` it gets) and compared by device and inode, so a copy reached through a
/// link or another name is found too. `agent` never starts itself as a server: a project
/// `.mcp.json` naming `agent mcp serve` (what Claude Code writes for a project-scoped `agent`)
/// would have every command in that directory start a `serve` that reads the same file and starts
/// another, without end.
fn is_this_binary(command: &str, cfg: &ServerConfig) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let id = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    let Some(me) = id(Path::new("/proc/self/exe")) else { return false };
    if command.is_empty() {
        return false;
    }
    if command.contains('/') {
        let path = Path::new(command);
        let path = match &cfg.cwd {
            Some(cwd) if path.is_relative() => Path::new(cwd).join(path),
            _ => path.to_path_buf(),
        };
        return id(&path) == Some(me);
    }
    let path_var = cfg.envs.get("PATH").map(std::ffi::OsString::from).or_else(|| std::env::var_os("PATH"));
    // The first match on the `PATH` is what the child would run.
    let first = path_var.and_then(|paths| std::env::split_paths(&paths).find_map(|dir| id(&dir.join(command))));
    first == Some(me)
}

/// A stdio server's environment, `get` reading `agent`'s: the [`INHERITED_ENV`] names and
/// `env_passthrough` that are set (a value starting with `()`, an exported shell function, is
/// left out of the safe list as the MCP SDKs do), then `envs`.
fn child_env(
    cfg: &ServerConfig,
    get: &dyn Fn(&str) -> Option<std::ffi::OsString>,
) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    for name in INHERITED_ENV {
        if let Some(v) = get(name).filter(|v| !v.as_bytes().starts_with(b"()")) {
            out.push((name.into(), v));
        }
    }
    for name in &cfg.env_passthrough {
        if let Some(v) = get(name) {
            out.push((name.into(), v));
        }
    }
    out.extend(cfg.envs.iter().map(|(k, v)| (k.into(), v.into())));
    out
}

/// Once per server and process: an imported server reads variables when it runs that `agent`
/// has and no longer passes (see `ServerConfig::not_passed`).
fn warn_not_passed(name: &str, cfg: &ServerConfig) {
    static WARNED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let missing: Vec<&str> = cfg.not_passed().into_iter().filter(|v| std::env::var_os(v).is_some()).collect();
    let Some(file) = cfg.imported_from.as_ref().filter(|_| !missing.is_empty()) else { return };
    let Ok(mut warned) = WARNED.lock() else { return };
    if !warned.get_or_insert_default().insert(name.to_string()) {
        return;
    }
    let names = missing.iter().map(|v| format!("${v}")).collect::<Vec<_>>().join(", ");
    let example = missing.iter().map(|v| format!("\"{v}\": \"${{{v}}}\"")).collect::<Vec<_>>().join(", ");
    tracing::warn!(
        "server `{name}` ({}) reads {names} from its environment, which agent does not pass to servers; \
         add it to the entry's \"env\" ({example})",
        file.display()
    );
}

/// Stops process groups and `run`'s marked processes: SIGTERM to each, SIGKILL to those still
/// alive after a grace period; then `run` is finished (its record removed).
pub async fn stop_groups(groups: &[i32], run: &Run) {
    let marked = run.marked();
    for &g in groups {
        kill_group(g, libc::SIGTERM);
    }
    for t in &marked {
        t.signal(libc::SIGTERM);
    }
    let deadline = Instant::now() + KILL_GRACE;
    while (groups.iter().any(|&g| group_alive(g)) || marked.iter().any(|t| t.alive())) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for &g in groups {
        if group_alive(g) {
            kill_group(g, libc::SIGKILL);
        }
    }
    // Also what was started while the others were stopping.
    for t in marked.iter().filter(|t| t.alive()).chain(run.marked().iter()) {
        t.signal(libc::SIGKILL);
    }
    run.finished();
}

/// [`stop_groups`] at once and without waiting (a manager dropped without `shutdown`).
pub fn kill_now(groups: &[i32], run: &Run) {
    for &g in groups {
        kill_group(g, libc::SIGKILL);
    }
    for t in run.marked() {
        t.signal(libc::SIGKILL);
    }
    run.finished();
}

fn sanitize_file_name(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

/// The last `n` non-empty lines of `path` from byte `offset` on (reads at most the last 64 KB).
fn tail_lines(path: &Path, offset: u64, n: usize) -> Vec<String> {
    let Ok(mut f) = std::fs::File::open(path) else { return Vec::new() };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = offset.max(len.saturating_sub(64 * 1024));
    if start >= len || f.seek(SeekFrom::Start(start)).is_err() {
        return Vec::new();
    }
    let mut buf = Vec::new();
    if f.read_to_end(&mut buf).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&buf);
    let lines: Vec<String> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.chars().take(500).collect())
        .collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}

pub(super) fn kill_group(pgid: i32, signal: i32) {
    if pgid > 1 {
        // SAFETY: killpg has no memory-safety preconditions; errors (ESRCH) are expected and ignored.
        unsafe {
            libc::killpg(pgid, signal);
        }
    }
}

/// Whether any non-zombie process is left in the group (zombies wait to be reaped and are harmless).
fn group_alive(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence.
    if unsafe { libc::killpg(pgid, 0) } != 0 {
        return false;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else { return true };
    entries.flatten().any(|e| {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { return false };
        stat(pid).is_some_and(|st| st.pgrp == pgid && !st.zombie)
    })
}

/// Whether `pid` runs (a zombie does not; it still "exists" for kill(0)). Checked before every
/// call, hence one read of `/proc/<pid>/stat`.
pub(super) fn process_alive(pid: i32) -> bool {
    pid > 1 && stat(pid).is_some_and(|st| !st.zombie)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_gets_the_safe_list_its_passthrough_and_its_envs_only() {
        let parent: std::collections::BTreeMap<&str, &str> = [
            ("HOME", "/home/u"),
            ("PATH", "/bin"),
            ("TERM", "() { :; }; echo pwned"),
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("OPENAI_API_KEY", "sk-oai"),
            ("GITHUB_TOKEN", "ghp"),
        ]
        .into();
        let get = |v: &str| parent.get(v).map(std::ffi::OsString::from);
        let cfg = ServerConfig {
            env_passthrough: vec!["GITHUB_TOKEN".into(), "NOT_SET".into()],
            envs: [("X".to_string(), "1".to_string())].into(),
            ..ServerConfig::default()
        };
        let env: Vec<(String, String)> = child_env(&cfg, &get)
            .into_iter()
            .map(|(k, v)| (k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned()))
            .collect();
        let want = [("HOME", "/home/u"), ("PATH", "/bin"), ("GITHUB_TOKEN", "ghp"), ("X", "1")];
        assert_eq!(env, want.map(|(k, v)| (k.to_string(), v.to_string())));
    }
}
