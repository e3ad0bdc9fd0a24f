//! `agent mcp add`, `add-json`, `get`, `remove`, `enable`, `disable`: managing servers without an
//! editor, in the shapes of `claude mcp ...`. They write the `mcpServers` files `agent` imports:
//! the project's `.mcp.json` (shared with Claude Code and Cursor; `--scope project`, the default)
//! or the user's own `~/.config/agent/mcp.json` (`--scope user`).
//!
//! A file is edited in place ([`crate::util::jsonedit`]: every byte outside the server's entry
//! kept, so key order, formatting and other hosts' keys survive), under a lock on its directory,
//! and replaced atomically with its mode kept ([`crate::util::fs::Dir`]). A file that is a
//! symbolic link is refused: `agent` never writes through a link a checkout may have planted.
//! Secrets given with `--env`/`--header` go only into the chosen file; `get` shows them masked.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use serde_json::{Map, Value, json};

use super::output::{write_stderr, write_stdout};
use super::{EXIT_OK, usage};
use crate::config::{self, Config, LoadOptions, MAX_CONFIG_BYTES, ServerConfig};
use crate::util::fs::{Access, Dir, Lock, Node};
use crate::util::jsonedit;
use crate::util::redact::{mask, secret_name, url as masked_url};
use crate::util::suggest::{did_you_mean, suggest};

pub const ADD_AFTER_HELP: &str = "\
Examples:
  agent mcp add github --env GITHUB_TOKEN=ghp_xxx -- npx -y @modelcontextprotocol/server-github
  agent mcp add --scope user fs -- npx -y @modelcontextprotocol/server-filesystem ~/notes
  agent mcp add --transport http linear https://mcp.linear.app/mcp --header 'Authorization: Bearer xxx'
  agent mcp add --force github -- docker run -i --rm ghcr.io/github/github-mcp-server

Scopes:
  project  ./.mcp.json (default): the file Claude Code and Cursor read too
  user     ~/.config/agent/mcp.json ($XDG_CONFIG_HOME/agent/mcp.json): every project of yours
Claude Code's `local` scope lives in its own ~/.claude.json, which agent reads but never writes.

The file is edited in place: other servers, unknown keys, key order and formatting are kept.
A new file holding --env or --header values is made 0600; an existing file keeps its mode (a
note says so when others can read the secrets in it). Prefer `${VAR}` references in the file
for secrets you share it with.

Exit codes:
  0  added
  1  the file could not be written (it is left as it was)
  2  usage error: bad name or value, the server exists (use --force), the file is a link or
     not an mcpServers object";

pub const ADD_JSON_AFTER_HELP: &str = "\
Examples:
  agent mcp add-json weather '{\"command\": \"uvx\", \"args\": [\"mcp-weather\"], \"env\": {\"KEY\": \"${WEATHER_KEY}\"}}'
  agent mcp add-json --scope user docs '{\"type\": \"http\", \"url\": \"https://docs.example.com/mcp\"}'

The JSON is one entry of the mcpServers format (command/args/env/cwd, or type/url/headers, plus
any keys other hosts use); it is checked as agent would load it and written as given.

Exit codes: as for `agent mcp add`.";

pub const GET_AFTER_HELP: &str = "\
Shows one server as agent loads it from every layer: where it comes from (agent.yaml, the
project's .mcp.json, ~/.config/agent/mcp.json, Claude Code's ~/.claude.json), whether it is
enabled, and how it starts. Values of env and of secret-looking headers (Authorization, *key*,
*token*, ...) are masked (`***`, or their first 2 characters and `***`), in --json too.

Examples:
  agent mcp add github --env GITHUB_TOKEN=ghp_xxx -- npx -y @modelcontextprotocol/server-github
  agent mcp get github            # the token shown as gh***
  agent mcp get github --json

Exit codes:
  0  shown
  2  unknown server or configuration error";

pub const REMOVE_AFTER_HELP: &str = "\
Removes the server from .mcp.json (project) or ~/.config/agent/mcp.json (user); without
--scope, from whichever of the two has it (both: say which). Servers declared in agent.yaml or
in Claude Code's ~/.claude.json are not removed here: the message says where they are.

Examples:
  agent mcp add github -- npx -y @modelcontextprotocol/server-github
  agent mcp remove github
  agent mcp add --scope user fs -- npx -y @modelcontextprotocol/server-filesystem ~/notes
  agent mcp remove fs --scope user

Exit codes:
  0  removed
  1  the file could not be written
  2  no such server in the files agent writes";

pub const TOGGLE_AFTER_HELP: &str = "\
`disable` writes `\"disabled\": true` into the server's entry (the key Claude Desktop and Cline
use; Claude Code ignores it), `enable` removes it. A disabled server is not started or listed;
`agent mcp get` shows it as disabled. Servers of agent.yaml take `disabled: true` there.

Examples:
  agent mcp add github -- npx -y @modelcontextprotocol/server-github
  agent mcp disable github        # \"disabled\": true in its entry
  agent mcp enable github         # the key removed again

Exit codes:
  0  done (also when it already was)
  1  the file could not be written
  2  no such server in the files agent writes";

/// Which file a command writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scope {
    /// The project's `.mcp.json`.
    Project,
    /// The user's `~/.config/agent/mcp.json`.
    User,
    /// Claude Code's `~/.claude.json` project entry: read, never written (refused).
    Local,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// `stdio` (a command) or `http` (Streamable HTTP at a URL).
    #[arg(long, short = 't', default_value = "stdio", value_parser = ["stdio", "http", "sse"])]
    pub transport: String,
    /// A variable for a stdio server (repeatable); its value is masked in output.
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// A header for an HTTP server (repeatable); secret-looking values are masked in output.
    #[arg(long = "header", short = 'H', value_name = "'NAME: VALUE'")]
    pub headers: Vec<String>,
    /// Which file to write.
    #[arg(long, short = 's', value_enum, default_value = "project")]
    pub scope: Scope,
    /// Replace a server of the same name in that file.
    #[arg(long, short = 'f')]
    pub force: bool,
    /// The server's name (no dots, slashes or whitespace).
    pub name: String,
    /// The command and its arguments (stdio; after `--` when they start with `-`), or the URL (http).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "COMMAND|URL")]
    pub target: Vec<String>,
}

#[derive(Debug, Args)]
pub struct AddJsonArgs {
    /// Which file to write.
    #[arg(long, short = 's', value_enum, default_value = "project")]
    pub scope: Scope,
    /// Replace a server of the same name in that file.
    #[arg(long, short = 'f')]
    pub force: bool,
    /// The server's name.
    pub name: String,
    /// The server's entry, as JSON.
    pub json: String,
}

#[derive(Debug, Args)]
pub struct GetArgs {
    /// The server's name.
    pub name: String,
    /// Print a JSON object (values masked as in the text output).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct NameArgs {
    /// The server's name.
    pub name: String,
    /// Which file to change (default: the one that has the server).
    #[arg(long, short = 's', value_enum)]
    pub scope: Option<Scope>,
}

/// How long a command waits for another `agent` editing the same file.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// The process environment, as the configuration reads it.
fn env() -> BTreeMap<String, String> {
    std::env::vars().collect()
}

/// The file of `scope`.
fn scope_file(scope: Scope) -> anyhow::Result<PathBuf> {
    match scope {
        Scope::Project => Ok(std::env::current_dir().context("cannot read the current directory")?.join(".mcp.json")),
        Scope::User => config::user_mcp_file(&env())
            .ok_or_else(|| usage("--scope user needs HOME or XDG_CONFIG_HOME to find ~/.config/agent/mcp.json")),
        Scope::Local => Err(usage(
            "--scope local is Claude Code's ~/.claude.json, which agent reads but never writes: use --scope project or user",
        )),
    }
}

fn scope_word(scope: Scope) -> &'static str {
    match scope {
        Scope::Project => "project",
        Scope::User => "user",
        Scope::Local => "local",
    }
}

/// An `mcpServers` file opened for a read-modify-write: its directory held and locked, its text.
struct ServersFile {
    path: PathBuf,
    dir: Dir,
    name: OsString,
    /// `None`: there is no file yet.
    text: Option<String>,
    mode: Option<u32>,
    _lock: Lock,
}

impl ServersFile {
    /// Opens `path` (its directory created when `create`), refusing a link, a non-file, a file
    /// over the config size cap, and a file that is not a JSON object with an `mcpServers` object.
    fn open(path: &Path, create: bool) -> anyhow::Result<ServersFile> {
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = path.file_name().context("the file has no name")?.to_os_string();
        if create && !parent.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        let dir = Dir::open(parent).with_context(|| format!("cannot open {}", parent.display()))?;
        let lock = dir
            .lock_self(LOCK_WAIT)
            .with_context(|| format!("cannot lock {} (another agent is editing it?)", parent.display()))?;
        let shown = path.display();
        let (text, mode) = match dir.node(&name).with_context(|| format!("cannot read {shown}"))? {
            None => (None, None),
            Some(Node::Link { .. }) => {
                let target = dir.read_link(&name).map(|t| PathBuf::from(t).display().to_string()).unwrap_or_default();
                return Err(usage(format!(
                    "{shown} is a symbolic link (to {target}); agent does not write through links: edit the file it points to, or replace the link with a file"
                )));
            }
            Some(Node::File { .. }) => {
                let file = dir.open_file(&name).with_context(|| format!("cannot read {shown}"))?;
                let mode = file.metadata().map(|m| m.permissions().mode() & 0o777).ok();
                let bytes = match crate::util::read::read_capped(file, MAX_CONFIG_BYTES as u64) {
                    Ok(b) => b,
                    Err(crate::util::read::CapError::Io(e)) => {
                        return Err(anyhow::Error::new(e).context(format!("cannot read {shown}")));
                    }
                    Err(crate::util::read::CapError::TooLarge) => {
                        return Err(usage(format!("{shown} is larger than {} MB", MAX_CONFIG_BYTES >> 20)));
                    }
                };
                let text = String::from_utf8(bytes).map_err(|_| usage(format!("{shown} is not valid UTF-8")))?;
                (Some(text), mode)
            }
            Some(_) => return Err(usage(format!("{shown} is not a regular file"))),
        };
        let file = ServersFile { path: path.to_path_buf(), dir, name, text, mode, _lock: lock };
        file.servers()?;
        Ok(file)
    }

    /// The `mcpServers` object (empty when the file or the key is missing).
    fn servers(&self) -> anyhow::Result<Map<String, Value>> {
        let Some(text) = &self.text else { return Ok(Map::new()) };
        let shown = self.path.display();
        let doc: Value = serde_json::from_str(text).map_err(|e| usage(format!("{shown}: invalid JSON: {e}")))?;
        let Some(root) = doc.as_object() else {
            return Err(usage(format!("{shown}: expected a JSON object with an `mcpServers` object")));
        };
        match root.get("mcpServers") {
            None => Ok(Map::new()),
            Some(Value::Object(m)) => Ok(m.clone()),
            Some(_) => Err(usage(format!("{shown}: `mcpServers` is not an object"))),
        }
    }

    fn text_or_empty(&self) -> &str {
        self.text.as_deref().unwrap_or("{\n  \"mcpServers\": {}\n}\n")
    }

    /// Replaces the file with `text` atomically; a new file is `0600` when `secret` (it holds
    /// `--env`/`--header` values) or in the user's scope, else `0644`; an existing one keeps its mode.
    fn write(&self, text: &str, secret: bool, scope: Scope) -> anyhow::Result<()> {
        let mode = self.mode.unwrap_or(if secret || scope == Scope::User { 0o600 } else { 0o644 });
        self.dir
            .write_atomic(&self.name, text.as_bytes(), Access::Mode(mode))
            .with_context(|| format!("cannot write {} (it is left as it was)", self.path.display()))?;
        if secret && mode & 0o044 != 0 {
            write_stderr(&format!(
                "note: {} is readable by other users (mode {mode:o}) and now holds the values given with --env/--header; `${{VAR}}` references keep them out of the file\n",
                self.path.display()
            ));
        }
        Ok(())
    }
}

/// `KEY=VALUE` with a variable name for KEY.
fn parse_env(items: &[String]) -> anyhow::Result<Map<String, Value>> {
    let mut out = Map::new();
    for item in items {
        let Some((k, v)) = item.split_once('=') else {
            return Err(usage(format!("--env {:?}: expected KEY=VALUE", k_only(item))));
        };
        let valid = k.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(usage(format!(
                "--env: {k:?} is not a variable name (letters, digits and `_`, not starting with a digit)"
            )));
        }
        out.insert(k.to_string(), Value::String(v.to_string()));
    }
    Ok(out)
}

/// What of a malformed `--env` item may be shown: nothing past 20 characters (it may be a secret).
fn k_only(item: &str) -> String {
    if item.chars().count() > 20 { format!("{}…", item.chars().take(2).collect::<String>()) } else { item.into() }
}

/// `Name: value` (HTTP token characters in the name).
fn parse_headers(items: &[String]) -> anyhow::Result<Map<String, Value>> {
    let mut out = Map::new();
    for item in items {
        let Some((k, v)) = item.split_once(':') else {
            return Err(usage("--header: expected 'Name: value'"));
        };
        let k = k.trim();
        if k.is_empty() || !k.bytes().all(|c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c)) {
            return Err(usage(format!("--header: {:?} is not a header name", k_only(k))));
        }
        out.insert(k.to_string(), Value::String(v.trim().to_string()));
    }
    Ok(out)
}

/// The entry `agent mcp add` writes.
fn entry_for(args: &AddArgs) -> anyhow::Result<Value> {
    match args.transport.as_str() {
        "sse" => Err(usage(
            "the legacy SSE transport is not supported (agent speaks Streamable HTTP): use --transport http with the server's Streamable HTTP URL",
        )),
        "http" => {
            if !args.env.is_empty() {
                return Err(usage("--env is for stdio servers; an HTTP server takes --header"));
            }
            // `add -t http NAME URL --header 'K: V'`: options after the URL end up in `target`.
            let (url, rest) = args.target.split_first().context("no URL")?;
            let mut headers = args.headers.clone();
            let mut rest = rest.iter();
            while let Some(a) = rest.next() {
                match a.as_str() {
                    "-H" | "--header" => {
                        headers.push(rest.next().cloned().ok_or_else(|| usage("--header needs a value"))?)
                    }
                    other if other.starts_with("--header=") => headers.push(other["--header=".len()..].to_string()),
                    _ => return Err(usage("--transport http takes one URL after the name (and --header options)")),
                }
            }
            match url::Url::parse(url) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                _ => return Err(usage(format!("{:?} is not an http:// or https:// URL", k_only(url)))),
            }
            let mut entry = json!({"type": "http", "url": url});
            let headers = parse_headers(&headers)?;
            if !headers.is_empty() {
                entry["headers"] = Value::Object(headers);
            }
            Ok(entry)
        }
        _ => {
            if !args.headers.is_empty() {
                return Err(usage("--header is for HTTP servers (--transport http); a stdio server takes --env"));
            }
            let (command, rest) = args.target.split_first().context("no command")?;
            if command.starts_with("http://") || command.starts_with("https://") {
                return Err(usage(format!(
                    "{command:?} looks like a URL: add an HTTP server with --transport http NAME URL"
                )));
            }
            let mut entry = json!({"type": "stdio", "command": command, "args": rest});
            let env = parse_env(&args.env)?;
            if !env.is_empty() {
                entry["env"] = Value::Object(env);
            }
            Ok(entry)
        }
    }
}

/// Checks that `entry` loads as a server called `name` would (transport, key types).
fn check_entry(file: &Path, name: &str, entry: &Value) -> anyhow::Result<()> {
    config::validate_server_name(name).map_err(|e| usage(e.0.replacen("mcp.servers: ", "", 1)))?;
    if !entry.is_object() {
        return Err(usage("the server's entry must be a JSON object"));
    }
    let doc = json!({ "mcpServers": { name: entry } });
    let servers = config::import_mcp_value(file, doc, &env()).map_err(|e| usage(e.0))?;
    for (_, server) in servers {
        server.transport().map_err(|e| usage(format!("server `{name}`: {e}")))?;
    }
    Ok(())
}

pub fn add(args: &AddArgs) -> anyhow::Result<u8> {
    let entry = entry_for(args)?;
    let secret = !args.env.is_empty() || !args.headers.is_empty();
    write_entry(args.scope, &args.name, entry, secret, args.force)
}

pub fn add_json(args: &AddJsonArgs) -> anyhow::Result<u8> {
    // serde_json's message names a line and column, never the text (which may hold secrets).
    let entry: Value = serde_json::from_str(&args.json).map_err(|e| usage(format!("invalid JSON: {e}")))?;
    let secret =
        ["env", "headers"].iter().any(|k| entry.get(k).and_then(Value::as_object).is_some_and(|m| !m.is_empty()));
    write_entry(args.scope, &args.name, entry, secret, args.force)
}

fn write_entry(scope: Scope, name: &str, entry: Value, secret: bool, force: bool) -> anyhow::Result<u8> {
    let path = scope_file(scope)?;
    check_entry(&path, name, &entry)?;
    let file = ServersFile::open(&path, scope == Scope::User)?;
    let exists = file.servers()?.contains_key(name);
    if exists && !force {
        return Err(usage(format!(
            "server `{name}` already exists in {}; --force replaces it (or `agent mcp remove {name}` first)",
            path.display()
        )));
    }
    let text = jsonedit::set(file.text_or_empty(), &["mcpServers", name], &entry)
        .with_context(|| format!("cannot edit {}", path.display()))?;
    file.write(&text, secret, scope)?;
    let kind = if entry.get("url").or_else(|| entry.get("serverUrl")).is_some() { "HTTP" } else { "stdio" };
    let verb = if exists { "Replaced" } else { "Added" };
    write_stdout(&format!("{verb} {kind} server `{name}`: {} ({} scope)\n", path.display(), scope_word(scope)))?;
    shadow_note(name, &path);
    Ok(EXIT_OK)
}

/// Tells when the server just written is not the one agent will use: agent.yaml (or a file
/// imported before) declares the same name and wins.
fn shadow_note(name: &str, written: &Path) {
    let Ok(config) = Config::load(&LoadOptions::default()) else { return };
    let Some(server) = config.mcp.servers.get(name) else { return };
    let winner = match &server.imported_from {
        Some(p) if p == written => return,
        Some(p) => p.display().to_string(),
        None => "the YAML configuration (agent.yaml)".to_string(),
    };
    write_stderr(&format!("note: {winner} also declares `{name}`, and that one is used\n"));
}

/// The files `remove`/`enable`/`disable` look in: `scope`'s, or both, with those that have `name`.
fn locate(name: &str, scope: Option<Scope>) -> anyhow::Result<(Scope, ServersFile)> {
    let scopes = match scope {
        Some(s) => vec![s],
        None => vec![Scope::Project, Scope::User],
    };
    let mut found = Vec::new();
    let mut known: Vec<String> = Vec::new();
    for s in scopes {
        let path = scope_file(s)?;
        // A missing user directory is just an empty scope.
        if s == Scope::User && !path.parent().is_some_and(Path::exists) {
            continue;
        }
        let file = ServersFile::open(&path, false)?;
        let servers = file.servers()?;
        if servers.contains_key(name) {
            found.push((s, file));
        } else {
            known.extend(servers.keys().cloned());
        }
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(not_here(name, &known)),
        _ => Err(usage(format!(
            "server `{name}` is in both .mcp.json (project) and ~/.config/agent/mcp.json (user): pass --scope project or --scope user"
        ))),
    }
}

/// Why `name` is not in a file agent writes: where it is instead, or a suggestion.
fn not_here(name: &str, known: &[String]) -> anyhow::Error {
    if let Ok(config) = Config::load(&LoadOptions::default())
        && let Some(server) = config.mcp.servers.get(name)
    {
        let claude = config::claude_file(&env());
        return match &server.imported_from {
            Some(p) if Some(p) == claude.as_ref() => usage(format!(
                "server `{name}` comes from Claude Code's {}, which agent does not write: use `claude mcp remove {name}` (or declare `{name}` with `disabled: true` in agent.yaml)",
                p.display()
            )),
            Some(p) => usage(format!("server `{name}` comes from {} (mcp.import): edit that file", p.display())),
            None => usage(format!(
                "server `{name}` is declared in the YAML configuration (agent.yaml): edit it there (`disabled: true` turns it off)"
            )),
        };
    }
    usage(format!(
        "no server `{name}` in .mcp.json or ~/.config/agent/mcp.json{}",
        did_you_mean(&suggest(name, known.iter().map(String::as_str)))
    ))
}

pub fn remove(args: &NameArgs) -> anyhow::Result<u8> {
    let (scope, file) = locate(&args.name, args.scope)?;
    let text = jsonedit::remove(file.text_or_empty(), &["mcpServers", &args.name])
        .with_context(|| format!("cannot edit {}", file.path.display()))?;
    file.write(&text, false, scope)?;
    write_stdout(&format!(
        "Removed server `{}` from {} ({} scope)\n",
        args.name,
        file.path.display(),
        scope_word(scope)
    ))?;
    Ok(EXIT_OK)
}

/// `agent mcp enable` (`disable == false`) and `agent mcp disable`.
pub fn toggle(args: &NameArgs, disable: bool) -> anyhow::Result<u8> {
    let name = args.name.as_str();
    let (scope, file) = locate(name, args.scope)?;
    let entry = file.servers()?.get(name).cloned().unwrap_or(Value::Null);
    if !entry.is_object() {
        return Err(usage(format!("{}: the entry of `{name}` is not an object", file.path.display())));
    }
    let is_disabled = entry.get("disabled").and_then(Value::as_bool).unwrap_or(false);
    let word = if disable { "disabled" } else { "enabled" };
    if is_disabled == disable {
        write_stdout(&format!("Server `{name}` is already {word} ({})\n", file.path.display()))?;
        return Ok(EXIT_OK);
    }
    let path = ["mcpServers", name, "disabled"];
    let edited = if disable {
        jsonedit::set(file.text_or_empty(), &path, &Value::Bool(true))
    } else {
        jsonedit::remove(file.text_or_empty(), &path)
    };
    let text = edited.with_context(|| format!("cannot edit {}", file.path.display()))?;
    file.write(&text, false, scope)?;
    write_stdout(&format!("Server `{name}` {word} in {} ({} scope)\n", file.path.display(), scope_word(scope)))?;
    Ok(EXIT_OK)
}

/// `args` with the value of a secret-looking flag masked (`--token X`, `--api-key=X`).
fn masked_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut hide_next = false;
    for a in args {
        if hide_next {
            out.push(mask(a));
            hide_next = false;
            continue;
        }
        match a.strip_prefix('-').and_then(|f| f.split_once('=')) {
            Some((flag, v)) if secret_name(flag) => out.push(format!("-{flag}={}", mask(v))),
            _ => {
                hide_next = a.starts_with('-') && secret_name(a);
                out.push(a.clone());
            }
        }
    }
    out
}

/// The `get` record of one server, values masked.
fn record(config: &Config, name: &str, s: &ServerConfig) -> Value {
    let (scope, source) = source_of(config, s);
    let kind = match s.transport() {
        Ok(config::Transport::Stdio) => "stdio",
        Ok(config::Transport::Http) => "http",
        Ok(config::Transport::Sse) => "sse",
        Err(_) => "invalid",
    };
    let env: Map<String, Value> = s.envs.iter().map(|(k, v)| (k.clone(), Value::String(mask(v)))).collect();
    let headers: Map<String, Value> = s
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(if secret_name(k) { mask(v) } else { v.clone() })))
        .collect();
    json!({
        "name": name,
        "scope": scope,
        "source": source,
        "disabled": s.disabled,
        "type": kind,
        "command": s.command,
        "args": masked_args(&s.args),
        "env": env,
        "cwd": s.cwd,
        "url": s.url.as_deref().map(masked_url),
        "headers": headers,
    })
}

/// Which layer a server came from (a word) and its file (or the YAML files).
fn source_of(config: &Config, s: &ServerConfig) -> (&'static str, String) {
    let e = env();
    match &s.imported_from {
        Some(p) if config::claude_file(&e).as_ref() == Some(p) => ("claude-code", p.display().to_string()),
        Some(p) if config::user_mcp_file(&e).as_ref() == Some(p) => ("user", p.display().to_string()),
        Some(p) if p.file_name().is_some_and(|n| n == ".mcp.json") => ("project", p.display().to_string()),
        Some(p) => ("import", p.display().to_string()),
        None => {
            let yaml: Vec<String> = config
                .sources
                .iter()
                .filter(|c| c.kind != config::SourceKind::Import)
                .map(|c| c.path.display().to_string())
                .collect();
            ("yaml", yaml.join(", "))
        }
    }
}

pub fn get(config: &Config, args: &GetArgs) -> anyhow::Result<u8> {
    let Some(server) = config.mcp.servers.get(&args.name) else {
        let names: Vec<&str> = config.mcp.servers.keys().map(String::as_str).collect();
        return Err(usage(format!("unknown server `{}`{}", args.name, did_you_mean(&suggest(&args.name, names)))));
    };
    let r = record(config, &args.name, server);
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&r).context("cannot serialise the server")?;
        s.push('\n');
        s
    } else {
        human(&r)
    };
    write_stdout(&text)?;
    Ok(EXIT_OK)
}

fn human(r: &Value) -> String {
    let field = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    let mut s = format!("{}\n", field("name"));
    s.push_str(&format!("  scope:    {} ({})\n", field("scope"), field("source")));
    let disabled = r.get("disabled").and_then(Value::as_bool).unwrap_or(false);
    s.push_str(&format!("  status:   {}\n", if disabled { "disabled" } else { "enabled" }));
    s.push_str(&format!("  type:     {}\n", field("type")));
    if !field("command").is_empty() {
        s.push_str(&format!("  command:  {}\n", field("command")));
        let args: Vec<&str> = r["args"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        if !args.is_empty() {
            s.push_str(&format!("  args:     {}\n", args.join(" ")));
        }
    }
    if !field("cwd").is_empty() {
        s.push_str(&format!("  cwd:      {}\n", field("cwd")));
    }
    if !field("url").is_empty() {
        s.push_str(&format!("  url:      {}\n", field("url")));
    }
    for (label, key, sep) in [("env", "env", "="), ("headers", "headers", ": ")] {
        let Some(m) = r[key].as_object().filter(|m| !m.is_empty()) else { continue };
        for (i, (k, v)) in m.iter().enumerate() {
            let head = if i == 0 { format!("{label}:") } else { String::new() };
            s.push_str(&format!("  {head:9} {k}{sep}{}\n", v.as_str().unwrap_or("")));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_flags_of_a_command_are_masked() {
        assert_eq!(
            masked_args(&["--token".into(), "abcdefghijklmnop".into(), "--api-key=xyzxyzxyzxyz1".into(), "-v".into()]),
            ["--token", "ab***", "--api-key=xy***", "-v"]
        );
    }
}
