//! Shared helpers for the integration tests: a temporary project directory with its own
//! `agent.yaml`, the real `agent` binary run inside it (hermetic: its own HOME, no AGENT_*
//! variables from the outer environment), the rmcp fixture server over stdio and HTTP, and npm
//! packages (server-everything, typescript) installed once into `<target>/node-tools`.
#![allow(dead_code)]

pub mod fake_embeddings;
pub mod fake_http;
pub mod fake_llm;
pub mod procs;
pub mod pty;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// Pinned versions of the npm packages the tests use.
pub const SERVER_EVERYTHING: (&str, &str) = ("@modelcontextprotocol/server-everything", "2026.8.31");
pub const TYPESCRIPT: (&str, &str) = ("typescript", "7.0.2");
/// The MCP Inspector, whose `--cli` drives `agent mcp serve` (tests/serve.rs); 0.15.x runs on Node 20.
pub const INSPECTOR: (&str, &str) = ("@modelcontextprotocol/inspector", "0.15.0");

pub fn agent_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_agent"))
}

pub fn fixture_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_agent-fixture-server"))
}

/// YAML for a stdio fixture server entry (indented for `mcp.servers`).
pub fn fixture_stdio_yaml(name: &str, extra_args: &[&str]) -> String {
    let args: Vec<String> = extra_args.iter().map(|a| format!("{a:?}")).collect();
    format!(
        "    {name}:\n      command: {:?}\n      args: [{}]\n      connect_timeout: 10s\n",
        fixture_bin().display().to_string(),
        args.join(", ")
    )
}

/// A temporary project: a directory with an `agent.yaml`, where `agent` runs.
pub struct Project {
    pub dir: tempfile::TempDir,
}

impl Project {
    /// An empty project whose own config files the user trusts (the one place the suite
    /// trusts its projects: every `agent` run with `HOME` = `<project>/home` sees it).
    /// It has an (empty) `agent.yaml`, so its workspace is its own `.kodelet/mcp`.
    pub fn new() -> Project {
        let p = Project::untrusted();
        p.write_config("");
        p.write_user_config("");
        p
    }

    /// An empty directory nobody vouched for, without an `agent.yaml`: a project's servers start
    /// only once trusted (a cloned repository).
    pub fn untrusted() -> Project {
        let dir = tempfile::Builder::new().prefix("agent-test-").tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("home")).expect("home");
        Project { dir }
    }

    /// Writes the user's own config file (`home/.config/agent/config.yaml`): `yaml`, plus
    /// `trusted_projects` naming this project unless `yaml` sets that key itself.
    pub fn write_user_config(&self, yaml: &str) {
        let trust = if yaml.contains("trusted_projects:") {
            String::new()
        } else {
            format!("trusted_projects: [{:?}]\n", self.path().display().to_string())
        };
        self.write("home/.config/agent/config.yaml", &format!("{trust}{yaml}"));
        // Private, as a user's config directory (which holds credentials) should be.
        use std::os::unix::fs::PermissionsExt as _;
        let dir = self.path().join("home/.config/agent");
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    }

    /// A project whose config has the given `mcp.servers` entries (already indented YAML).
    pub fn with_servers(servers_yaml: &str) -> Project {
        let p = Project::new();
        p.write_config(&format!("mcp:\n  servers:\n{servers_yaml}"));
        p
    }

    /// A project with one stdio fixture server called `fixture`.
    pub fn with_fixture() -> Project {
        Project::with_servers(&fixture_stdio_yaml("fixture", &[]))
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The project's config as the binary would load it from this directory (no user config, no
    /// environment overrides), its workspace at `.kodelet/mcp`: for tests that drive the manager
    /// or the bridge in-process.
    pub fn library_config(&self) -> agent::config::Config {
        let opts = agent::config::LoadOptions {
            project_dir: Some(self.path().to_path_buf()),
            skip_user_config: true,
            ..Default::default()
        };
        let mut config = agent::config::Config::load_with_env(&opts, &Default::default()).expect("load the config");
        config.mcp.code_execution.workspace_dir = self.path().join(".kodelet/mcp");
        config
    }

    pub fn write_config(&self, yaml: &str) {
        std::fs::write(self.path().join("agent.yaml"), yaml).expect("write agent.yaml");
    }

    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.path().join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&p, text).expect("write");
        p
    }

    /// `agent` with the given arguments, run in the project directory, hermetic environment.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(agent_bin());
        c.args(args);
        self.hermetic(c)
    }

    /// `bash -c SCRIPT` in the project directory with `agent` first in `PATH`, in the same
    /// hermetic environment as [`Project::cmd`] (documented examples run this way).
    pub fn shell(&self, script: &str) -> Command {
        let mut c = Command::new("bash");
        c.args(["-c", script]);
        let bin_dir = agent_bin().parent().map(Path::to_path_buf).unwrap_or_default();
        let path = std::env::var("PATH").unwrap_or_default();
        c.env("PATH", format!("{}:{path}", bin_dir.display()));
        self.hermetic(c)
    }

    fn hermetic(&self, mut c: Command) -> Command {
        c.current_dir(self.path());
        for (k, _) in std::env::vars() {
            if k.starts_with("AGENT_") || k == "RUST_LOG" || k.ends_with("_API_KEY") {
                c.env_remove(k);
            }
        }
        c.env("HOME", self.path().join("home")).env_remove("XDG_CONFIG_HOME").env("NO_COLOR", "1");
        // One cache for all test runs: the runtime snapshot is made once per binary, not per test.
        c.env("XDG_CACHE_HOME", test_cache_dir());
        c.stdin(Stdio::null());
        c
    }

    /// Runs `agent` and returns its output (never panics on a non-zero exit).
    pub fn run(&self, args: &[&str]) -> Run {
        let out = self.cmd(args).output().expect("run agent");
        Run::from(out)
    }

    /// Runs `agent` with `input` on stdin.
    pub fn run_stdin(&self, args: &[&str], input: &str) -> Run {
        use std::io::Write;
        let mut c = self.cmd(args);
        c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = c.spawn().expect("spawn agent");
        let mut stdin = child.stdin.take().expect("stdin");
        let input = input.to_string();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(input.as_bytes());
        });
        let out = child.wait_with_output().expect("wait agent");
        let _ = writer.join();
        Run::from(out)
    }

    /// Runs `agent` with stdin read from the file at `path` (e.g. `/dev/zero`).
    pub fn run_stdin_from(&self, args: &[&str], path: &str) -> Run {
        let stdin = std::fs::File::open(path).expect("open stdin file");
        Run::from(
            self.cmd(args).stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped()).output().expect("run agent"),
        )
    }
}

/// What a finished `agent` run printed.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Run {
    #[track_caller]
    pub fn assert_code(&self, code: i32) -> &Run {
        assert_eq!(self.code, code, "unexpected exit code\n--- stdout:\n{}\n--- stderr:\n{}", self.stdout, self.stderr);
        self
    }

    #[track_caller]
    pub fn assert_ok(&self) -> &Run {
        self.assert_code(0)
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

/// The fixture server over Streamable HTTP on a free port; killed on drop.
pub struct HttpFixture {
    child: Child,
    pub url: String,
}

impl HttpFixture {
    pub fn start() -> HttpFixture {
        Self::start_with(&[])
    }

    /// The fixture over HTTP with more arguments (`--oauth`, ...).
    pub fn start_with(args: &[&str]) -> HttpFixture {
        Self::start_at("127.0.0.1:0", args)
    }

    /// The same on `addr` (a server restarted where it was).
    pub fn start_at(addr: &str, args: &[&str]) -> HttpFixture {
        let mut child = Command::new(fixture_bin())
            .args(["--http", addr])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn fixture --http");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).expect("read listening line");
        let url = line.trim().strip_prefix("listening on ").expect("listening line").to_string();
        HttpFixture { child, url }
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every file and directory under `dir` (none when it cannot be read), sorted.
pub fn paths_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(paths_under(&path));
        }
        out.push(path);
    }
    out.sort();
    out
}

/// Where npm packages for the tests are installed.
/// The `XDG_CACHE_HOME` of every `agent` a test runs (shared by all tests).
pub fn test_cache_dir() -> PathBuf {
    node_tools_dir().with_file_name("test-cache")
}

fn node_tools_dir() -> PathBuf {
    agent::util::dirs::build_target_dir().join("node-tools")
}

/// Whether Node and npm are available for a check that needs them. Without them the check is
/// skipped with a loud notice on a developer's machine, and fails when `CI` is set: CI must
/// never pass without running it (`bin/setup` installs Node and npm).
pub fn node_or_skip(what: &str) -> bool {
    let npm = Command::new("npm").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status();
    if npm.is_ok_and(|s| s.success()) {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none_or(|v| v.is_empty()),
        "npm/Node not found, and CI is set: {what} cannot be skipped (run bin/setup)"
    );
    eprintln!("SKIPPED: npm/Node not available: {what}");
    false
}

/// Installs `pkg@version` once (under a file lock shared by all test processes) and returns the
/// path of its `node_modules/.bin/<bin>`. Panics with npm's output if the install fails.
pub fn npm_bin(pkg: (&str, &str), bin: &str) -> PathBuf {
    let (name, version) = pkg;
    let dir = node_tools_dir().join(format!("{}@{version}", name.replace('/', "+")));
    let bin_path = dir.join("node_modules/.bin").join(bin);
    if bin_path.exists() {
        return bin_path;
    }
    std::fs::create_dir_all(&dir).expect("node-tools dir");
    let lock = std::fs::File::create(dir.join(".lock")).expect("lock file");
    lock.lock().expect("lock");
    if !bin_path.exists() {
        let out = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix"])
            .arg(&dir)
            .arg(format!("{name}@{version}"))
            .output()
            .expect("run npm");
        assert!(
            out.status.success() && bin_path.exists(),
            "npm install {name}@{version} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    bin_path
}

/// YAML for a stdio `server-everything` entry.
pub fn everything_yaml(name: &str) -> String {
    let bin = npm_bin(SERVER_EVERYTHING, "mcp-server-everything");
    format!(
        "    {name}:\n      command: {:?}\n      args: [\"stdio\"]\n      connect_timeout: 30s\n",
        bin.display().to_string()
    )
}

/// Polls `cond` every 10 ms until it holds or `timeout` has passed; whether it held. Tests wait
/// on conditions like this, never on a fixed sleep.
pub fn wait_until(timeout: std::time::Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

impl Project {
    /// Whether the stderr log of `server` (under the default workspace) has a line containing
    /// `needle`: the fixture logs `fixture: sleep N ms started` when a `sleep` call arrives.
    pub fn server_logged(&self, server: &str, needle: &str) -> bool {
        let log = self.path().join(".kodelet/mcp/logs").join(format!("{server}.stderr.log"));
        std::fs::read_to_string(log).is_ok_and(|t| t.contains(needle))
    }
}

/// Process ids whose command line mentions `needle` (to check for orphans).
pub fn pids_matching(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return out };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { continue };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie = state.rsplit_once(')').map(|(_, r)| r.trim_start().starts_with('Z')).unwrap_or(false);
        if cmdline.contains(needle) && !zombie {
            out.push(pid);
        }
    }
    out
}

/// The pinned Python MCP SDK the serve tests drive `agent mcp serve` with.
pub const PYTHON_MCP: (&str, &str) = ("mcp", "2.3.0");

/// The Python of a venv under `<target>/py-tools` with the pinned `mcp` SDK, installed once
/// (under a file lock). `None` (with a loud notice) when python3 or its venv module is missing
/// on a developer's machine; fails under `CI` (`bin/setup` installs them).
pub fn python_mcp_or_skip(what: &str) -> Option<PathBuf> {
    let (name, version) = PYTHON_MCP;
    let dir = node_tools_dir().with_file_name("py-tools").join(format!("{name}@{version}"));
    let python = dir.join("venv/bin/python");
    let ready = dir.join(".installed");
    if ready.exists() {
        return Some(python);
    }
    let venv_ok = Command::new("python3")
        .args(["-c", "import venv, ensurepip"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !venv_ok {
        assert!(
            std::env::var_os("CI").is_none_or(|v| v.is_empty()),
            "python3 with venv/pip not found, and CI is set: {what} cannot be skipped (run bin/setup)"
        );
        eprintln!("SKIPPED: python3 with venv/pip not available: {what}");
        return None;
    }
    std::fs::create_dir_all(&dir).expect("py-tools dir");
    let lock = std::fs::File::create(dir.join(".lock")).expect("lock file");
    lock.lock().expect("lock");
    if !ready.exists() {
        let steps: [Vec<String>; 2] = [
            vec!["python3".into(), "-m".into(), "venv".into(), dir.join("venv").display().to_string()],
            vec![
                python.display().to_string(),
                "-m".into(),
                "pip".into(),
                "install".into(),
                "--quiet".into(),
                "--disable-pip-version-check".into(),
                format!("{name}=={version}"),
            ],
        ];
        for step in steps {
            let out = Command::new(&step[0]).args(&step[1..]).output().expect("run python3");
            assert!(
                out.status.success(),
                "{} failed:\n{}\n{}",
                step.join(" "),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::fs::write(&ready, version).expect("mark installed");
    }
    Some(python)
}
