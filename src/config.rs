//! Layered configuration: built-in defaults, `~/.config/agent/config.yaml`, the project's
//! `agent.yaml` (or `--config` / `AGENT_CONFIG`), `AGENT_<SECTION>__<KEY>` environment overrides,
//! then CLI flags (applied by the caller on the returned [`Config`]). Also imports the
//! `mcpServers` JSON format of Claude Desktop, Claude Code and Cursor (`.mcp.json`, `mcp.import`,
//! the user's `~/.config/agent/mcp.json`) and, as the lowest layer, Claude Code's own servers in
//! `~/.claude.json` (this project's, then the user's).
//!
//! The project root is found as git and cargo find theirs: the first directory up from the
//! current one holding `agent.yaml`, `agent.yml` or `.mcp.json` ([`find_project_root`]); relative
//! paths in the configuration resolve against it, and [`ProjectInfo`] records what of the
//! configuration came from the project's own files (for the trust check before their servers
//! start) and where the workspace goes.
//!
//! `$VAR` / `${VAR}` / `${VAR:-default}` in string values expand from the environment (`$$` is a
//! literal `$`). A missing variable is an error naming the variable and the key; under
//! `mcp.servers.<name>` and `llm` the error is deferred until that server or the model is used,
//! so one server's missing token never blocks the others. Unknown keys and wrong types are
//! errors naming the key path. This module knows nothing of the rest of the crate.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// A configuration problem; the CLI reports it as one line and exits with code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

impl ConfigError {
    fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

/// The whole configuration after all layers are merged.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub llm: LlmConfig,
    pub agent: AgentConfig,
    pub mcp: McpConfig,
    pub search: SearchConfig,
    pub serve: ServeConfig,
    /// Project directories whose own configuration files may start their servers without
    /// asking. Honoured only from the user's config file (`~/.config/agent/config.yaml`): a
    /// project's own file cannot vouch for itself, so the key is ignored anywhere else.
    pub trusted_projects: Vec<PathBuf>,
    /// The files this configuration was read from, in the order they were layered (later ones
    /// win); filled by [`Config::load`], never read from a file.
    #[serde(skip)]
    pub sources: Vec<ConfigSource>,
    /// The project this configuration belongs to; filled by [`Config::load`].
    #[serde(skip)]
    pub project: ProjectInfo,
}

/// The files whose presence makes a directory a project root ([`find_project_root`]).
pub const PROJECT_MARKERS: [&str; 3] = ["agent.yaml", "agent.yml", ".mcp.json"];

/// Where a command's project is and what of its configuration came from the project's own files.
#[derive(Debug, Clone, Default)]
pub struct ProjectInfo {
    /// The project root ([`find_project_root`], or `LoadOptions::project_dir`); `None` when no
    /// directory up from the current one holds a project file.
    pub root: Option<PathBuf>,
    /// The directory relative paths resolve against: the root, else the current directory.
    pub base: PathBuf,
    /// The project's own files that were read (its `agent.yaml`, its `.mcp.json`, the files its
    /// `agent.yaml` imports), each with the hash of the bytes that were parsed.
    pub files: Vec<(PathBuf, String)>,
    /// Servers the project's files declare, or change when the user's config declares them.
    pub servers: Vec<String>,
    /// The project's `agent.yaml` sets `mcp.code_execution.tsc` (a program `agent` runs).
    pub sets_tsc: bool,
    /// Settings of the project's `agent.yaml` that send a key somewhere or relax a check
    /// ([`GUARDED_SETTINGS`]), with their values as written: they need trust as servers do.
    pub guarded: Vec<(&'static str, String)>,
    /// Where the workspace is, and why.
    pub workspace: WorkspaceKind,
    /// `--trust-project` or `AGENT_TRUST_PROJECT=1`: set by the caller, like every flag.
    pub trusted_by_flag: bool,
}

impl ProjectInfo {
    /// One hash of the root and of every project file's content: a changed file changes it.
    pub fn fingerprint(&self) -> String {
        let base = self.base.as_os_str().as_encoded_bytes();
        let mut parts: Vec<&[u8]> = vec![base];
        for (path, hash) in &self.files {
            parts.push(path.as_os_str().as_encoded_bytes());
            parts.push(hash.as_bytes());
        }
        crate::util::hash::stable_hex(&parts)
    }

    /// Whether the project's files start anything (a server, a compiler) or set a
    /// [`GUARDED_SETTINGS`] key, so they need trust.
    pub fn runs_anything(&self) -> bool {
        !self.servers.is_empty() || self.sets_tsc || !self.guarded.is_empty()
    }
}

/// Settings a cloned project's `agent.yaml` may not change without trust: where the API keys
/// go (a hostile `llm.base_url` receives your key with the first request) and the checks that
/// stand between a model and a destructive call.
pub const GUARDED_SETTINGS: &[(&str, &str)] = &[
    ("llm.base_url", "/llm/base_url"),
    ("search.embeddings.url", "/search/embeddings/url"),
    ("mcp.approvals", "/mcp/approvals"),
    ("mcp.result_handlers.tool_calls", "/mcp/result_handlers/tool_calls"),
];

/// Why the workspace (`mcp.code_execution.workspace_dir`) is where it is (docs/state.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WorkspaceKind {
    /// `mcp.code_execution.workspace_dir` was set (relative: against the project root).
    Explicit,
    /// `<project root>/.kodelet/mcp`: the root has an `agent.yaml` or a `.kodelet/` already.
    #[default]
    Project,
    /// The per-user directory `$XDG_STATE_HOME/agent/workspaces/<name>-<hash>/`.
    User,
}

/// One file [`Config::load`] read, and which layer it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSource {
    pub path: PathBuf,
    pub kind: SourceKind,
}

/// The layer a configuration file belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// The user's own `~/.config/agent/config.yaml`.
    User,
    /// `--config FILE` or `AGENT_CONFIG`.
    Explicit,
    /// The project's `agent.yaml`.
    Project,
    /// An imported `mcpServers` file: the project's `.mcp.json` or an `mcp.import` entry.
    Import,
}

impl SourceKind {
    /// A short word for messages and `--json` output.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::User => "user",
            SourceKind::Explicit => "explicit",
            SourceKind::Project => "project",
            SourceKind::Import => "import",
        }
    }
}

/// `serve`: the limits of `agent mcp serve` (docs/serve.md). Every default is safe for a server
/// that any process on the machine can reach.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServeConfig {
    /// HTTP connections open at once. At the cap, the connection idle longest (no request in
    /// flight: a half-open or slow client, or a kept-alive one) is closed for a new one; when
    /// every connection has a request in flight, the new one gets 503. Lowered at start to what
    /// the process's open-file limit allows.
    pub max_connections: usize,
    /// MCP sessions open at once (over HTTP); an `initialize` over the cap gets 503 and the
    /// open sessions keep working.
    pub max_sessions: usize,
    /// A session without a request for this long is closed (its client must initialize again).
    #[serde(with = "duration")]
    pub session_idle_timeout: Duration,
    /// Time a client has for a request's headers, and again for its body; also how long a
    /// kept-alive connection may sit idle.
    #[serde(with = "duration")]
    pub read_timeout: Duration,
    /// Largest message from a client: an HTTP request body, or a line on stdio (`4MB`, or a
    /// number of bytes).
    #[serde(with = "byte_size")]
    pub max_message_bytes: u64,
    /// At start, `tools/list` and `search_tools` wait at most this long for upstream servers
    /// that are still starting, then answer with those that are up (the others follow with
    /// `notifications/tools/list_changed`).
    #[serde(with = "duration")]
    pub startup_wait: Duration,
    /// How upstream names reach serve's clients: `prefixed` (default: `<server>_<name>` for
    /// tools and prompts, resource URIs kept unless two servers could serve one) or `bare`
    /// (upstream names and URIs as they are; serve refuses to start when two enabled servers
    /// offer the same one). `--names` wins.
    pub names: ServeNames,
    /// `execute_code` sessions (a `session` name whose definitions carry over between calls)
    /// one MCP session may hold at once; over it a call naming a new one is refused.
    pub code_sessions_per_client: usize,
    /// `execute_code` sessions of all clients together (each holds a worker process and its
    /// isolate); over it a call naming a new one is refused, nothing of another client evicted.
    pub max_code_sessions: usize,
    /// An `execute_code` session unused for this long ends (its worker process with it).
    #[serde(with = "duration")]
    pub code_session_idle_timeout: Duration,
}

/// `serve.names`: how upstream names reach serve's clients (docs/serve.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServeNames {
    /// `<server>_<tool>`, `<server>_<prompt>`; URIs kept, or `agent:<server>/<uri>` when ambiguous.
    #[default]
    Prefixed,
    /// Upstream's own names and URIs; a clash between two enabled servers refuses the start.
    Bare,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            max_connections: 256,
            max_sessions: 64,
            session_idle_timeout: Duration::from_secs(300),
            read_timeout: Duration::from_secs(10),
            max_message_bytes: 4 << 20,
            startup_wait: Duration::from_secs(5),
            names: ServeNames::Prefixed,
            code_sessions_per_client: 4,
            max_code_sessions: 16,
            code_session_idle_timeout: Duration::from_secs(300),
        }
    }
}

/// Upper bound of `serve.max_message_bytes` (rmcp's own limit on a stdio line).
pub const MAX_SERVE_MESSAGE_BYTES: u64 = 16 << 20;

/// The tool catalog search (`agent mcp search`, `searchTools`, progressive mode).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SearchConfig {
    /// Count successful calls per tool in `<workspace>/usage.json` and rank used tools higher.
    pub usage: bool,
    /// Semantic ranking through an OpenAI-compatible embeddings endpoint (none: words only).
    pub embeddings: Option<EmbeddingsConfig>,
    /// Example queries per tool written by the model (`agent mcp examples`, cached in
    /// `<workspace>/search_examples.json`): `auto` ranks with the cached ones wherever the
    /// catalog is searched, `off` ignores them.
    pub examples: ExamplesMode,
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self { usage: true, embeddings: None, examples: ExamplesMode::Auto }
    }
}

/// `search.examples`: whether searches use the cached example queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExamplesMode {
    /// Use the examples `agent mcp examples` cached (none cached: nothing changes).
    #[default]
    Auto,
    /// Rank without them.
    Off,
}

/// `search.embeddings`: an OpenAI-compatible `/v1/embeddings` endpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingsConfig {
    /// API base (`http://localhost:11434/v1`) or the endpoint itself (`.../v1/embeddings`).
    pub url: String,
    pub model: String,
    /// The environment variable holding the API key (none: no key is sent).
    #[serde(default)]
    pub api_key_env: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    #[default]
    Anthropic,
    Openai,
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Provider::Anthropic => "anthropic",
            Provider::Openai => "openai",
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmConfig {
    pub provider: Provider,
    pub model: String,
    /// Defaults per provider: `https://api.anthropic.com` / `https://api.openai.com/v1`.
    pub base_url: Option<String>,
    /// Falls back to `ANTHROPIC_API_KEY` / `OPENAI_API_KEY` when unset.
    pub api_key: Option<String>,
    pub max_tokens: u32,
    /// Retries on 429, 5xx and network errors, with exponential backoff.
    pub max_retries: u32,
    #[serde(with = "duration")]
    pub request_timeout: Duration,
    /// Errors from `$VAR` expansion under `llm`, reported when the model is used.
    #[serde(skip)]
    pub unresolved: Vec<String>,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            provider: Provider::Anthropic,
            model: "claude-sonnet-4-5".into(),
            base_url: None,
            api_key: None,
            max_tokens: 4096,
            max_retries: 4,
            request_timeout: Duration::from_secs(300),
            unresolved: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// Model turns before `agent run` stops.
    pub max_turns: u32,
    /// Direct mode: tool results longer than this are cut with an explicit marker.
    pub max_tool_result_bytes: usize,
    /// Extra text appended to the built-in system prompt.
    pub system_prompt: Option<String>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self { max_turns: 20, max_tool_result_bytes: 20_000, system_prompt: None }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionMode {
    #[default]
    Direct,
    Code,
    /// Per server: direct while the run's direct definitions fit `mcp.auto_threshold_tokens`
    /// (smallest servers first), else code.
    Auto,
    /// `search_tools` + `call_tool` (+ `mcp.pinned_tools` as direct tools).
    Progressive,
}

impl fmt::Display for ExecutionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ExecutionMode::Direct => "direct",
            ExecutionMode::Code => "code",
            ExecutionMode::Auto => "auto",
            ExecutionMode::Progressive => "progressive",
        })
    }
}

/// `mcp.servers.<name>.mode`: one server's mode in `agent run`, whatever the run's mode is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerMode {
    /// Its tools are LLM tools (`mcp_<server>_<tool>`).
    Direct,
    /// Its tools are in the generated TypeScript API behind `code_execution`.
    Code,
    /// Direct while it fits the run's budget of direct definitions (`mcp.auto_threshold_tokens`,
    /// smallest servers first), else code.
    Auto,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpConfig {
    pub execution_mode: ExecutionMode,
    /// Extra `mcpServers` JSON files to import (Claude Desktop / Claude Code / Cursor format);
    /// relative paths resolve against the project root.
    pub import: Vec<PathBuf>,
    /// Import the project root's `.mcp.json` implicitly (never with `--config` / `AGENT_CONFIG`:
    /// then only what that file imports is read).
    pub import_mcp_json: bool,
    /// Largest message (a tool result, a tool list) accepted from a server, in bytes; a call
    /// whose result is larger fails at once.
    pub max_result_bytes: usize,
    pub code_execution: CodeExecutionConfig,
    pub servers: BTreeMap<String, ServerConfig>,
    /// `execution_mode: auto` picks direct mode while the enabled tools' direct-mode definitions
    /// take at most this many tokens (o200k estimate, as `agent mcp list --tokens` counts).
    pub auto_threshold_tokens: usize,
    /// Learned output types (`mcp.types`).
    pub types: TypesConfig,
    /// Progressive mode: tools (`server.tool`) the model always sees as direct tools.
    pub pinned_tools: Vec<String>,
    pub result_handlers: ResultHandlersConfig,
    /// Which tool calls need the user's approval (docs/approvals.md).
    pub approvals: ApprovalsConfig,
}

/// `mcp.approvals`: tools with `destructiveHint: true` (not `readOnlyHint`) and `require`
/// patterns need approval, `exempt` patterns never; patterns match `server.tool` (`*`, `?`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApprovalsConfig {
    /// Without a terminal to ask on: `deny` (default) or `allow`.
    pub policy: ApprovalPolicy,
    pub require: Vec<String>,
    pub exempt: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalPolicy {
    #[default]
    Deny,
    Allow,
}

/// `mcp.result_handlers`: handlers over a tool's result (`agent mcp call --jq/--js/--handler`,
/// direct mode's `result_handler` argument; see docs/handlers.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ResultHandlersConfig {
    /// Direct mode offers the optional `result_handler` argument on every tool.
    pub enabled: bool,
    /// A JavaScript handler may call other tools (`callMCPTool`); off: only its one result.
    pub tool_calls: bool,
}

impl Default for ResultHandlersConfig {
    fn default() -> Self {
        Self { enabled: true, tool_calls: false }
    }
}

/// `mcp.types`: the type registry that learns result shapes of tools without an output schema.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TypesConfig {
    /// Record the shapes of successful results (`false` turns recording off).
    pub learn: bool,
    /// Observations at which a tool's type reaches `low`, `medium`, `high`.
    pub low: u64,
    pub medium: u64,
    pub high: u64,
    /// Mean field consistency (0..1) a tool needs for `high`.
    pub consistency: f64,
    /// A string field becomes an enum (its values written in the registry and the generated
    /// type) only with at least this many distinct values...
    pub enum_min_values: usize,
    /// ... over at least this many observed strings...
    pub enum_min_observations: u64,
    /// ... each value seen in at least this many distinct results (1 to 16; a result returned
    /// twice counts once). Until then values are kept only as keyed hashes.
    pub enum_min_results: usize,
    /// `agent mcp types --discover`: arguments per `server.tool` for tools that need some (a tool
    /// listed here is called even without `readOnlyHint`).
    pub discover: BTreeMap<String, Map<String, Value>>,
}

/// Most `mcp.types.enum_min_results` can be: the distinct results the registry counts per value.
pub const MAX_ENUM_MIN_RESULTS: usize = 16;

impl Default for TypesConfig {
    fn default() -> Self {
        Self {
            learn: true,
            low: 1,
            medium: 10,
            high: 100,
            consistency: 0.8,
            enum_min_values: 2,
            enum_min_observations: 20,
            enum_min_results: 3,
            discover: BTreeMap::new(),
        }
    }
}

/// Default of `mcp.auto_threshold_tokens` (see docs/run.md for why 4,000).
pub const DEFAULT_AUTO_THRESHOLD_TOKENS: usize = 4_000;

/// Default of `mcp.max_result_bytes`: 16 MiB.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 16 << 20;
/// Lower bound of `mcp.max_result_bytes` (a handshake or a tool list must fit).
pub const MIN_MAX_RESULT_BYTES: usize = 64 << 10;

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            execution_mode: ExecutionMode::default(),
            import: Vec::new(),
            import_mcp_json: true,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            code_execution: CodeExecutionConfig::default(),
            servers: BTreeMap::new(),
            auto_threshold_tokens: DEFAULT_AUTO_THRESHOLD_TOKENS,
            types: TypesConfig::default(),
            pinned_tools: Vec::new(),
            result_handlers: ResultHandlersConfig::default(),
            approvals: ApprovalsConfig::default(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CodeExecutionConfig {
    /// Where generated files, logs and what scripts keep go. Unset: `<project root>/.kodelet/mcp`
    /// when the root has an `agent.yaml` or a `.kodelet/`, else a per-user directory (see
    /// [`WorkspaceKind`]); [`Config::load`] fills in the absolute path.
    pub workspace_dir: PathBuf,
    pub regenerate_on_startup: bool,
    #[serde(with = "duration")]
    pub timeout: Duration,
    pub memory_limit_mb: u64,
    pub max_output_bytes: usize,
    pub max_concurrent_calls: usize,
    /// How long a script's thread polls for the answer of a lone tool call before it sleeps.
    #[serde(with = "duration")]
    pub call_spin: Duration,
    /// Type-check every script with `tsc` against the generated tree before it runs
    /// (`agent exec --check` for one run); without a compiler, a notice and the script runs.
    pub typecheck: bool,
    /// The TypeScript compiler to use (default: `tsc` on PATH).
    pub tsc: Option<PathBuf>,
    /// The quota of what scripts keep: `<workspace>/data/` (`store`, `writeText`, ...) and
    /// `<workspace>/skills/` (`saveSkill`, `agent skill add`) together.
    pub state: StateConfig,
    /// Whether the code-mode steps of one `agent run` share an isolate (`run`: what a step
    /// defines at its top level is there in the next) or each gets a fresh one (`script`).
    /// `agent exec` always runs one script per isolate.
    pub session: CodeSession,
}

/// `mcp.code_execution.session`: how long an `agent run`'s code-mode isolate lives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeSession {
    /// One isolate for the whole run: top-level definitions carry over between steps; the
    /// memory limit is the session's, the timeout each step's.
    #[default]
    Run,
    /// A fresh isolate for every step.
    Script,
}

/// `mcp.code_execution.state`: the one quota of `<workspace>/data/` and `<workspace>/skills/`
/// together, checked before a write creates anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StateConfig {
    /// Total bytes of the files (and links) under `data/` and `skills/` (`100MB`, or a number
    /// of bytes).
    #[serde(with = "byte_size")]
    pub max_bytes: u64,
    /// Files, directories and links under `data/` and `skills/` (stored keys, `.store/` and
    /// every directory a write creates included), so a flood of directories stops as a flood of
    /// files does.
    pub max_files: u64,
}

impl Default for StateConfig {
    fn default() -> Self {
        Self { max_bytes: 100 << 20, max_files: 10_000 }
    }
}

/// Upper bound of `call_spin`: it is a busy wait, worth it only for answers that come quickly.
pub const MAX_CALL_SPIN: Duration = Duration::from_millis(10);

/// The smallest script heap (`memory_limit_mb`, `--memory-limit`): below it the runtime's
/// bootstrap alone does not fit. The runtime uses this number too.
pub const MIN_HEAP_MB: u64 = 16;

/// A configuration file (or an imported `mcpServers` file) may hold this much, and a YAML file
/// may expand to this much once its aliases are replaced by what they name ("billion laughs").
pub const MAX_CONFIG_BYTES: usize = 4 << 20;

impl Default for CodeExecutionConfig {
    fn default() -> Self {
        Self {
            workspace_dir: PathBuf::from(".kodelet/mcp"),
            regenerate_on_startup: true,
            timeout: Duration::from_secs(30),
            memory_limit_mb: 256,
            max_output_bytes: 100 * 1024,
            max_concurrent_calls: 16,
            call_spin: Duration::from_micros(500),
            typecheck: false,
            tsc: None,
            state: StateConfig::default(),
            session: CodeSession::Run,
        }
    }
}

/// One MCP server: stdio (`command`) or Streamable HTTP (`url`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    pub command: Option<String>,
    pub args: Vec<String>,
    /// Variables set for a stdio server's process. Its environment is these, the names in
    /// `env_passthrough`, and a short safe list of `agent`'s own (`HOME`, `LOGNAME`, `PATH`,
    /// `SHELL`, `TERM`, `USER`); nothing else of `agent`'s environment (API keys, tokens) reaches it.
    pub envs: BTreeMap<String, String>,
    /// Names of `agent`'s environment variables a stdio server also gets (when they are set),
    /// e.g. `[GITHUB_TOKEN, HTTPS_PROXY]`. Exact names; none by default.
    pub env_passthrough: Vec<String>,
    pub cwd: Option<PathBuf>,
    pub url: Option<String>,
    pub headers: BTreeMap<String, String>,
    /// OAuth sign-in for an HTTP server (`agent mcp login`); all keys optional. Without it a
    /// server that answers `401` still gets the browser flow with the client identity picked
    /// from its metadata (a client metadata document or dynamic registration).
    pub auth: AuthConfig,
    /// `stdio`, `http` (Streamable HTTP) or `sse` (legacy, rejected with a clear message).
    /// Inferred from `command` / `url` when absent.
    pub transport: Option<String>,
    /// Only these tools are exposed (exact names); all when absent.
    pub tool_white_list: Option<Vec<String>>,
    /// How this server's tools reach the model in `agent run` (`direct`, `code` or `auto`);
    /// absent: the run's mode (`--mode` / `mcp.execution_mode`). Ignored in progressive runs.
    pub mode: Option<ServerMode>,
    pub disabled: bool,
    #[serde(with = "duration")]
    pub connect_timeout: Duration,
    #[serde(with = "duration")]
    pub call_timeout: Duration,
    /// Elicitation requests from this server: `ask` (a terminal form), `accept_defaults`
    /// or `decline`; absent: `ask` when stdin and stderr are terminals, else `decline`.
    pub elicitation: Option<ElicitationPolicy>,
    /// Sampling requests from this server: `deny` (default; capability not advertised), `ask`, `allow`.
    pub sampling: SamplingPolicy,
    /// Cap on a sampling request's `maxTokens`.
    pub sampling_max_tokens: u32,
    /// Cap on the text of one sampling request (system prompt, messages, stop sequences), in
    /// bytes; a larger request is refused before the model is asked.
    pub sampling_max_input_bytes: usize,
    /// Model for sampling (default: `llm.model`).
    pub sampling_model: Option<String>,
    /// Tokens (input + output) this server's sampling requests may use per run; unlimited when absent.
    pub sampling_budget: Option<u64>,
    /// Directories offered as roots (the roots capability only when set).
    pub roots: Vec<PathBuf>,
    /// The least severe log message this server should send (`logging/setLevel` right after
    /// connecting, when the server offers logging): `debug`, `info`, `notice`, `warning`,
    /// `error`, `critical`, `alert` or `emergency`. Absent: the server's own default.
    pub log_level: Option<LogLevel>,
    /// How a connection starts: `initialize` (default; a 2025-11-25 session), `discover`
    /// (`server/discover`, a 2026-07-28 session: servers ask by `input_required` results) or
    /// `auto` (discover, falling back to initialize for a server that does not know it).
    pub handshake: Handshake,
    /// Errors from `$VAR` expansion inside this server's keys, reported when it is started.
    #[serde(skip)]
    pub unresolved: Vec<String>,
    /// For a server imported from an `mcpServers` file: the variables its command, args or env
    /// values still name after expansion (written `$$NAME` or `$${NAME}`, so the server or its
    /// shell reads them from its own environment when it runs). See [`ServerConfig::not_passed`].
    #[serde(skip)]
    pub reads_at_run_time: Vec<String>,
    /// The `mcpServers` file this server was imported from (none: declared in YAML).
    #[serde(skip)]
    pub imported_from: Option<PathBuf>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            command: None,
            args: Vec::new(),
            envs: BTreeMap::new(),
            env_passthrough: Vec::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            auth: AuthConfig::default(),
            transport: None,
            tool_white_list: None,
            mode: None,
            disabled: false,
            connect_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(120),
            elicitation: None,
            sampling: SamplingPolicy::Deny,
            sampling_max_tokens: 1024,
            sampling_max_input_bytes: DEFAULT_SAMPLING_MAX_INPUT_BYTES,
            sampling_model: None,
            sampling_budget: None,
            roots: Vec::new(),
            log_level: None,
            handshake: Handshake::Initialize,
            unresolved: Vec::new(),
            reads_at_run_time: Vec::new(),
            imported_from: None,
        }
    }
}

/// Default of `mcp.servers.X.sampling_max_input_bytes`: 64 KiB of text per sampling request.
pub const DEFAULT_SAMPLING_MAX_INPUT_BYTES: usize = 64 << 10;

/// What a stdio server inherits from `agent`'s environment besides `envs` and `env_passthrough`:
/// the list the official MCP SDKs pass by default (on Unix). A value that starts with `()` (an
/// exported shell function) is not passed.
pub const INHERITED_ENV: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// `mcp.servers.X.elicitation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElicitationPolicy {
    Ask,
    AcceptDefaults,
    Decline,
}

/// `mcp.servers.X.log_level`: the syslog severities MCP's logging uses, least severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

/// `mcp.servers.X.sampling`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SamplingPolicy {
    #[default]
    Deny,
    Ask,
    Allow,
}

/// `mcp.servers.X.auth`: OAuth 2.1 for an HTTP server. Secrets come through `${VAR}`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// A client ID registered with the authorization server out of band; used before a client
    /// metadata document or dynamic registration.
    pub client_id: Option<String>,
    /// The secret of `client_id` (a confidential client; `client_credentials` with a secret).
    pub client_secret: Option<String>,
    /// Scopes to ask for; absent: the server's `401` challenge, else its `scopes_supported`,
    /// else none.
    pub scopes: Option<Vec<String>>,
    /// Port of the loopback redirect listener (`http://127.0.0.1:PORT/callback`); absent: a
    /// random free port. Set it for an authorization server that pins redirect URIs.
    pub redirect_port: Option<u16>,
    /// HTTPS URL of this client's metadata document, used as the client ID when the
    /// authorization server supports client ID metadata documents.
    pub client_metadata_url: Option<String>,
    /// `authorization_code` (default: a person signs in with `agent mcp login`) or
    /// `client_credentials` (a machine identity, fetched and refreshed without a person).
    pub grant: AuthGrant,
    /// PEM file of the private key for `client_credentials` with `private_key_jwt`.
    pub private_key_file: Option<PathBuf>,
    /// Algorithm of `private_key_file`: RS256, RS384, RS512, ES256 (default) or ES384.
    pub signing_algorithm: Option<String>,
}

/// `mcp.servers.X.auth.grant`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthGrant {
    #[default]
    AuthorizationCode,
    ClientCredentials,
}

/// `mcp.servers.X.handshake`: how a connection starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Handshake {
    /// `initialize` / `notifications/initialized`: every server knows it.
    #[default]
    Initialize,
    /// `server/discover` and per-request metadata (MCP 2026-07-28).
    Discover,
    /// `server/discover` first; `initialize` when the server says it is older (or stays silent
    /// for rmcp's 10 s probe).
    Auto,
}

/// How to reach a server, after validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    Stdio,
    Http,
    /// The legacy HTTP+SSE transport (spec 2024-11-05); not supported by rmcp any more.
    Sse,
}

impl ServerConfig {
    /// Of the variables this imported server reads when it runs ([`Self::reads_at_run_time`]),
    /// those it no longer gets: not in [`INHERITED_ENV`], `envs` or `env_passthrough`. Hosts
    /// such as Claude Code pass their whole environment to a server; `agent` does not.
    pub fn not_passed(&self) -> Vec<&str> {
        self.reads_at_run_time
            .iter()
            .map(String::as_str)
            .filter(|v| {
                !INHERITED_ENV.contains(v)
                    && !self.envs.contains_key(*v)
                    && !self.env_passthrough.iter().any(|p| p == v)
            })
            .collect()
    }

    /// The transport this server uses, or why its declaration is unusable.
    pub fn transport(&self) -> Result<Transport, String> {
        let kind = self.transport.as_deref().map(str::to_ascii_lowercase);
        match (kind.as_deref(), &self.command, &self.url) {
            (Some("sse"), _, _) => Ok(Transport::Sse),
            (_, Some(_), Some(_)) => Err("set either `command` (stdio) or `url` (HTTP), not both".into()),
            (None | Some("stdio"), Some(_), None) => Ok(Transport::Stdio),
            (None | Some("http" | "streamable-http" | "streamablehttp"), None, Some(_)) => Ok(Transport::Http),
            (Some("stdio"), None, _) => Err("`transport: stdio` needs a `command`".into()),
            (Some("http" | "streamable-http" | "streamablehttp"), _, None) => {
                Err("`transport: http` needs a `url`".into())
            }
            (Some(other), _, _) => Err(format!("unknown transport `{other}` (expected stdio or http)")),
            (None, None, None) => Err("needs `command` (stdio) or `url` (Streamable HTTP)".into()),
        }
    }
}

/// Where to look for configuration and how to override it.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// `--config FILE` (falls back to `AGENT_CONFIG`, then the project's `agent.yaml`).
    pub config_file: Option<PathBuf>,
    /// The project root, taken as it is (default: found from the current directory by
    /// [`find_project_root`]).
    pub project_dir: Option<PathBuf>,
    /// Skip `~/.config/agent/config.yaml` (tests use this to stay hermetic).
    pub skip_user_config: bool,
}

impl Config {
    /// Loads every layer. Environment overrides come from the process environment.
    pub fn load(opts: &LoadOptions) -> Result<Config, ConfigError> {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        Self::load_with_env(opts, &env)
    }

    /// Like [`Config::load`], with an explicit environment (for tests).
    pub fn load_with_env(opts: &LoadOptions, env: &BTreeMap<String, String>) -> Result<Config, ConfigError> {
        let (root, base) = match &opts.project_dir {
            Some(d) => (Some(d.clone()), d.clone()),
            None => {
                let cwd = std::env::current_dir()
                    .map_err(|e| ConfigError::new(format!("cannot read the current directory: {e}")))?;
                let home = env.get("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
                let root = find_project_root(&cwd, home.as_deref());
                let base = root.clone().unwrap_or(cwd);
                (root, base)
            }
        };
        let mut builder = config::Config::builder();
        let mut sources = Vec::new();
        let mut project = ProjectInfo { root: root.clone(), base: base.clone(), ..Default::default() };
        let mut user_trusted = Vec::new();
        // The project's agent.yaml on its own: which servers and imports it names.
        let mut project_tree = Value::Null;

        if !opts.skip_user_config
            && let Some(user) = user_config_path(env)
            && user.is_file()
        {
            let text = yaml_text(&user)?;
            user_trusted = trusted_projects_of(&parse_yaml(&text), &user)?;
            builder = builder.add_source(config::File::from_str(&text, config::FileFormat::Yaml));
            sources.push(ConfigSource { path: user, kind: SourceKind::User });
        }
        let explicit =
            opts.config_file.clone().or_else(|| env.get("AGENT_CONFIG").filter(|s| !s.is_empty()).map(PathBuf::from));
        let is_explicit = explicit.is_some();
        match explicit {
            Some(path) => {
                match std::fs::metadata(&path) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        return Err(ConfigError::new(format!("config file {} does not exist", path.display())));
                    }
                    Ok(m) if m.is_dir() => {
                        return Err(ConfigError::new(format!(
                            "config file {} is a directory, not a file",
                            path.display()
                        )));
                    }
                    // Anything else (a FIFO such as `<(...)` included) is read, up to the cap.
                    _ => {}
                }
                builder = builder.add_source(yaml_file(&path)?);
                sources.push(ConfigSource { path, kind: SourceKind::Explicit });
            }
            None => {
                for name in ["agent.yaml", "agent.yml"] {
                    let Some(root) = &root else { break };
                    let path = root.join(name);
                    if path.is_file() {
                        let text = yaml_text(&path)?;
                        project_tree = parse_yaml(&text);
                        project.files.push((path.clone(), crate::util::hash::stable_hex(&[text.as_bytes()])));
                        builder = builder.add_source(config::File::from_str(&text, config::FileFormat::Yaml));
                        sources.push(ConfigSource { path, kind: SourceKind::Project });
                        break;
                    }
                }
            }
        }
        let overrides: config::Map<String, String> = env
            .iter()
            .filter(|(k, _)| k.starts_with("AGENT_") && k["AGENT_".len()..].contains("__"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        builder = builder.add_source(
            config::Environment::with_prefix("AGENT")
                .prefix_separator("_")
                .separator("__")
                .try_parsing(true)
                .source(Some(overrides)),
        );
        let merged = builder.build().map_err(|e| ConfigError::new(format!("invalid configuration: {e}")))?;
        let mut tree: Value =
            merged.try_deserialize().map_err(|e| ConfigError::new(format!("invalid configuration: {e}")))?;
        if tree.is_null() {
            tree = Value::Object(Map::new());
        }

        // Expand $VAR. Errors under a server or `llm` are deferred to where they matter.
        let mut deferred: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut errors = Vec::new();
        expand_tree(&mut tree, &mut String::new(), env, &mut |path, msg| {
            let line = format!("{path}: {msg}");
            match deferral_key(path) {
                Some(key) => deferred.entry(key).or_default().push(line),
                None => errors.push(line),
            }
        });
        if let Some(first) = errors.into_iter().next() {
            return Err(ConfigError(first));
        }
        let workspace_set = tree.pointer("/mcp/code_execution/workspace_dir").is_some();

        let mut config: Config = deserialize_at(tree, "")?;
        config.expand_home_paths(env)?;
        config.llm.unresolved = deferred.remove("llm").unwrap_or_default();
        for (name, server) in config.mcp.servers.iter_mut() {
            server.unresolved = deferred.remove(&format!("mcp.servers.{name}")).unwrap_or_default();
        }
        // Only the user's own file may say which projects are trusted.
        config.trusted_projects = user_trusted
            .iter()
            .enumerate()
            .map(|(i, p)| expand_home(&format!("trusted_projects[{i}]"), p, env))
            .collect::<Result<_, _>>()?;
        if let Some(servers) = project_tree.pointer("/mcp/servers").and_then(Value::as_object) {
            project.servers.extend(servers.keys().cloned());
        }
        project.sets_tsc = project_tree.pointer("/mcp/code_execution/tsc").is_some_and(|v| !v.is_null());
        project.guarded = GUARDED_SETTINGS
            .iter()
            .filter_map(|(key, pointer)| {
                let v = project_tree.pointer(pointer).filter(|v| !v.is_null())?;
                Some((*key, v.as_str().map_or_else(|| v.to_string(), str::to_string)))
            })
            .collect();
        let project_imports: Vec<PathBuf> = match project_tree.pointer("/mcp/import") {
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(|p| base.join(p)).collect(),
            _ => Vec::new(),
        };

        // Imported `mcpServers` files: the project root's `.mcp.json` (unless a config file was
        // named, or `mcp.import_mcp_json` is off), then `mcp.import`.
        let mut imports: Vec<(PathBuf, bool)> = Vec::new();
        if let Some(root) = &root
            && !is_explicit
            && config.mcp.import_mcp_json
        {
            let dot_mcp = root.join(".mcp.json");
            if dot_mcp.is_file() {
                imports.push((dot_mcp, true));
            }
        }
        for p in &config.mcp.import {
            let p = base.join(p);
            if p.is_dir() {
                return Err(ConfigError::new(format!("mcp.import: {} is a directory, not a file", p.display())));
            }
            if !p.exists() {
                return Err(ConfigError::new(format!("mcp.import: {} does not exist", p.display())));
            }
            let from_project = project_imports.contains(&p);
            imports.push((p, from_project));
        }
        // The user's own `mcpServers` file (`agent mcp add --scope user`): below the project's.
        if !opts.skip_user_config
            && let Some(user) = user_mcp_file(env)
            && user.is_file()
        {
            imports.push((user, false));
        }
        for (file, from_project) in imports {
            let text = read_capped(&file, "mcpServers file")?;
            let servers = parse_mcp_servers(&file, &text, env)?;
            if from_project {
                project.files.push((file.clone(), crate::util::hash::stable_hex(&[text.as_bytes()])));
                project.servers.extend(servers.iter().map(|(name, _)| name.clone()));
            }
            for (name, server) in servers {
                // Servers declared in YAML win over imported ones of the same name.
                config.mcp.servers.entry(name).or_insert(server);
            }
            sources.push(ConfigSource { path: file, kind: SourceKind::Import });
        }
        project.servers.sort();
        project.servers.dedup();
        // Claude Code's own servers, the lowest layer: this project's (`claude mcp add`'s
        // default `local` scope), then the user's.
        if !opts.skip_user_config
            && let Some(file) = claude_file(env)
            && let Some(servers) = import_claude_servers(&file, &base, env)
        {
            for (name, server) in servers {
                config.mcp.servers.entry(name).or_insert(server);
            }
            sources.push(ConfigSource { path: file, kind: SourceKind::Import });
        }
        project.workspace = config.place_workspace(workspace_set, root.as_deref(), &base, env);
        config.resolve_paths(&base, root.is_some());
        config.sources = sources;
        config.project = project;
        config.validate()?;
        Ok(config)
    }

    /// `~/` at the start of every path key, as a shell would expand it (YAML does not): the
    /// sample's `mcp.import` entries and anyone's `workspace_dir: ~/agent` mean the home directory.
    fn expand_home_paths(&mut self, env: &BTreeMap<String, String>) -> Result<(), ConfigError> {
        for (i, p) in self.mcp.import.iter_mut().enumerate() {
            *p = expand_home(&format!("mcp.import[{i}]"), p, env)?;
        }
        let ce = &mut self.mcp.code_execution;
        ce.workspace_dir = expand_home("mcp.code_execution.workspace_dir", &ce.workspace_dir, env)?;
        if let Some(tsc) = &mut ce.tsc {
            *tsc = expand_home("mcp.code_execution.tsc", tsc, env)?;
        }
        for (name, server) in self.mcp.servers.iter_mut() {
            if let Some(cwd) = &mut server.cwd {
                *cwd = expand_home(&format!("mcp.servers.{name}.cwd"), cwd, env)?;
            }
            for (i, root) in server.roots.iter_mut().enumerate() {
                *root = expand_home(&format!("mcp.servers.{name}.roots[{i}]"), root, env)?;
            }
            if let Some(key) = &mut server.auth.private_key_file {
                *key = expand_home(&format!("mcp.servers.{name}.auth.private_key_file"), key, env)?;
            }
        }
        Ok(())
    }

    /// Sets `mcp.code_execution.workspace_dir` to an absolute path by the rule of docs/state.md:
    /// the configured one (relative: against `base`); else `<root>/.kodelet/mcp` when the root has
    /// an `agent.yaml` or a `.kodelet/`; else a per-user directory under `$XDG_STATE_HOME/agent`.
    fn place_workspace(
        &mut self,
        set: bool,
        root: Option<&Path>,
        base: &Path,
        env: &BTreeMap<String, String>,
    ) -> WorkspaceKind {
        let ws = &mut self.mcp.code_execution.workspace_dir;
        if set {
            *ws = base.join(&*ws);
            return WorkspaceKind::Explicit;
        }
        let project_workspace = root.is_some_and(|r| {
            ["agent.yaml", "agent.yml"].iter().any(|m| r.join(m).is_file()) || r.join(".kodelet").is_dir()
        });
        match state_home(env) {
            Some(state) if !project_workspace => {
                *ws = state.join("agent/workspaces").join(workspace_name(base));
                WorkspaceKind::User
            }
            _ => {
                *ws = base.join(".kodelet/mcp");
                WorkspaceKind::Project
            }
        }
    }

    /// Relative paths resolve against the project root (or the current directory without one),
    /// not wherever the command runs; stdio servers without a `cwd` start in the project root.
    fn resolve_paths(&mut self, base: &Path, in_project: bool) {
        let ce = &mut self.mcp.code_execution;
        if let Some(tsc) = &mut ce.tsc
            && tsc.components().count() > 1
        {
            // A bare name (`tsc`) is looked up on PATH; a path with a directory is a file.
            *tsc = base.join(&*tsc);
        }
        for server in self.mcp.servers.values_mut() {
            match &mut server.cwd {
                Some(cwd) => *cwd = base.join(&*cwd),
                None if in_project && server.command.is_some() => server.cwd = Some(base.to_path_buf()),
                None => {}
            }
            for root in &mut server.roots {
                *root = base.join(&*root);
            }
            if let Some(key) = &mut server.auth.private_key_file {
                *key = base.join(&*key);
            }
        }
    }

    /// Values that parse but cannot work: zero timeouts and sizes, a heap too small to start.
    fn validate(&self) -> Result<(), ConfigError> {
        for (name, server) in &self.mcp.servers {
            validate_server_name(name)?;
            if server.tool_white_list.as_ref().is_some_and(|l| l.is_empty()) {
                return Err(ConfigError::new(format!(
                    "mcp.servers.{name}.tool_white_list: an empty list would hide every tool; remove the key or set `disabled: true`"
                )));
            }
            positive_duration(
                &format!("mcp.servers.{name}.connect_timeout"),
                server.connect_timeout,
                "the server could never start",
            )?;
            positive_duration(
                &format!("mcp.servers.{name}.call_timeout"),
                server.call_timeout,
                "every call would time out",
            )?;
            for (i, var) in server.env_passthrough.iter().enumerate() {
                if !is_var_name(var) {
                    return Err(ConfigError::new(format!(
                        "mcp.servers.{name}.env_passthrough[{i}]: {var:?} is not a variable name (letters, digits and `_`, not starting with a digit)"
                    )));
                }
            }
            if server.sampling_max_tokens == 0 {
                return Err(ConfigError::new(format!(
                    "mcp.servers.{name}.sampling_max_tokens: must be greater than zero"
                )));
            }
            if server.sampling_max_input_bytes == 0 {
                return Err(ConfigError::new(format!(
                    "mcp.servers.{name}.sampling_max_input_bytes: must be greater than zero"
                )));
            }
        }
        let t = &self.mcp.types;
        if !(t.low <= t.medium && t.medium <= t.high && (0.0..=1.0).contains(&t.consistency)) {
            return Err(ConfigError::new(
                "mcp.types: needs low <= medium <= high and a consistency between 0 and 1".to_string(),
            ));
        }
        if t.enum_min_values < 2 || !(1..=MAX_ENUM_MIN_RESULTS).contains(&t.enum_min_results) {
            return Err(ConfigError::new(format!(
                "mcp.types: enum_min_values must be at least 2 and enum_min_results between 1 and {MAX_ENUM_MIN_RESULTS}"
            )));
        }
        for (i, pinned) in self.mcp.pinned_tools.iter().enumerate() {
            if !pinned.split_once('.').is_some_and(|(s, t)| !s.is_empty() && !t.is_empty()) {
                return Err(ConfigError::new(format!(
                    "mcp.pinned_tools[{i}]: expected SERVER.TOOL (e.g. `github.get_me`), got `{pinned}`"
                )));
            }
        }
        if self.mcp.max_result_bytes < MIN_MAX_RESULT_BYTES {
            return Err(ConfigError::new(format!(
                "mcp.max_result_bytes: must be at least {MIN_MAX_RESULT_BYTES} (64 KiB)"
            )));
        }
        let ce = &self.mcp.code_execution;
        positive_duration("mcp.code_execution.timeout", ce.timeout, "every script would time out")?;
        if ce.memory_limit_mb < MIN_HEAP_MB {
            return Err(ConfigError::new(format!(
                "mcp.code_execution.memory_limit_mb: {} MB is too small; the runtime needs at least {MIN_HEAP_MB} MB",
                ce.memory_limit_mb
            )));
        }
        if ce.max_output_bytes == 0 {
            return Err(ConfigError::new(
                "mcp.code_execution.max_output_bytes: must be at least 1 (0 would drop everything a script prints)",
            ));
        }
        if ce.max_concurrent_calls == 0 {
            return Err(ConfigError::new("mcp.code_execution.max_concurrent_calls: must be at least 1"));
        }
        if ce.call_spin > MAX_CALL_SPIN {
            return Err(ConfigError::new(format!(
                "mcp.code_execution.call_spin: at most {} (it is a busy wait; `0s` turns it off)",
                humantime::format_duration(MAX_CALL_SPIN)
            )));
        }
        if ce.state.max_bytes == 0 || ce.state.max_files == 0 {
            return Err(ConfigError::new(
                "mcp.code_execution.state: max_bytes and max_files must be at least 1 (scripts could store nothing)",
            ));
        }
        positive_duration("llm.request_timeout", self.llm.request_timeout, "every model request would time out")?;
        if self.llm.max_tokens == 0 {
            return Err(ConfigError::new("llm.max_tokens: must be at least 1"));
        }
        if self.agent.max_turns == 0 {
            return Err(ConfigError::new("agent.max_turns: must be at least 1"));
        }
        if self.agent.max_tool_result_bytes == 0 {
            return Err(ConfigError::new(
                "agent.max_tool_result_bytes: must be at least 1 (0 would cut every tool result to nothing)",
            ));
        }
        self.serve.validate()
    }
}

impl ServeConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if self.max_connections == 0 || self.max_sessions == 0 {
            return Err(ConfigError::new(
                "serve: max_connections and max_sessions must be at least 1 (serve could answer no one)",
            ));
        }
        positive_duration(
            "serve.session_idle_timeout",
            self.session_idle_timeout,
            "every session would close at once",
        )?;
        positive_duration("serve.read_timeout", self.read_timeout, "no request could be read")?;
        positive_duration(
            "serve.code_session_idle_timeout",
            self.code_session_idle_timeout,
            "every execute_code session would end at once",
        )?;
        if !(1024..=MAX_SERVE_MESSAGE_BYTES).contains(&self.max_message_bytes) {
            return Err(ConfigError::new(format!(
                "serve.max_message_bytes: must be between 1KB and {} MB",
                MAX_SERVE_MESSAGE_BYTES >> 20
            )));
        }
        Ok(())
    }
}

fn positive_duration(key: &str, d: Duration, why: &str) -> Result<(), ConfigError> {
    if d.is_zero() {
        return Err(ConfigError::new(format!("{key}: must be greater than zero ({why})")));
    }
    Ok(())
}

/// The path of config key `key` with a leading `~` or `~/` replaced by `$HOME` (the one place
/// config paths get the shell's home expansion). `~user/...` is an error naming the key, as is
/// `~` without a `HOME`; any other path is returned as it is.
pub fn expand_home(key: &str, path: &Path, env: &BTreeMap<String, String>) -> Result<PathBuf, ConfigError> {
    let mut parts = path.components();
    let first = match parts.next() {
        Some(std::path::Component::Normal(first)) if first.as_encoded_bytes().starts_with(b"~") => first,
        _ => return Ok(path.to_path_buf()),
    };
    if first != "~" {
        return Err(ConfigError::new(format!(
            "{key}: {} starts with `~user`, which is not expanded (write `~/...` or the full path)",
            path.display()
        )));
    }
    let home = env
        .get("HOME")
        .filter(|h| !h.is_empty())
        .ok_or_else(|| ConfigError::new(format!("{key}: {} starts with `~`, but HOME is not set", path.display())))?;
    Ok(Path::new(home).join(parts.as_path()))
}

fn user_config_path(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    if let Some(x) = env.get("XDG_CONFIG_HOME").filter(|s| !s.is_empty()) {
        return Some(Path::new(x).join("agent/config.yaml"));
    }
    env.get("HOME").filter(|s| !s.is_empty()).map(|h| Path::new(h).join(".config/agent/config.yaml"))
}

/// The user's own `mcpServers` file, `~/.config/agent/mcp.json` (`$XDG_CONFIG_HOME/agent/mcp.json`):
/// what `agent mcp add --scope user` writes; imported below the project's `.mcp.json`.
pub fn user_mcp_file(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    user_config_path(env).map(|p| p.with_file_name("mcp.json"))
}

/// Claude Code's state file: `$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`.
pub fn claude_file(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    if let Some(dir) = env.get("CLAUDE_CONFIG_DIR").filter(|s| !s.is_empty()) {
        return Some(Path::new(dir).join(".claude.json"));
    }
    env.get("HOME").filter(|s| !s.is_empty()).map(|h| Path::new(h).join(".claude.json"))
}

/// Largest `~/.claude.json` read: Claude Code keeps every project's history in it.
const MAX_CLAUDE_FILE_BYTES: u64 = 64 << 20;

/// The servers of Claude Code's `~/.claude.json` that apply in `project_dir`: those of its
/// `projects["<project_dir>"].mcpServers` entry (`claude mcp add`'s default `local` scope), then
/// its top-level `mcpServers` (the `user` scope); a name in both is the project's. `None` when
/// the file is missing or names no server here. It is Claude Code's file, not ours: when it
/// cannot be read or parsed, it is left out with a warning instead of failing every command.
fn import_claude_servers(
    file: &Path,
    project_dir: &Path,
    env: &BTreeMap<String, String>,
) -> Option<Vec<(String, ServerConfig)>> {
    let text = match crate::util::read::read_text_file(file, MAX_CLAUDE_FILE_BYTES) {
        Ok(t) => t,
        Err(crate::util::read::FileError::Missing(_)) => return None,
        Err(e) => {
            tracing::warn!("{}; its servers are left out", e.message(&format!("Claude Code's {}", file.display())));
            return None;
        }
    };
    let mut root: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!("{}: invalid JSON ({e}); its servers are left out", file.display());
            return None;
        }
    };
    // Claude Code keys projects by their absolute path as the shell had it, or resolved.
    let mut keys = vec![project_dir.to_path_buf()];
    if let Ok(real) = project_dir.canonicalize() {
        keys.push(real);
    }
    let key = root
        .get("projects")
        .and_then(Value::as_object)
        .and_then(|projects| keys.iter().filter_map(|k| k.to_str()).find(|k| projects.contains_key(*k)))
        .map(str::to_string);
    let project = key.and_then(|k| root.get_mut("projects")?.get_mut(&k)?.get_mut("mcpServers"));
    let mut layers = Vec::new();
    if let Some(servers) = project.map(Value::take) {
        layers.push(servers);
    }
    if let Some(servers) = root.get_mut("mcpServers").map(Value::take) {
        layers.push(servers);
    }
    let mut out: Vec<(String, ServerConfig)> = Vec::new();
    for servers in layers {
        if servers.as_object().is_none_or(Map::is_empty) {
            continue;
        }
        let doc = serde_json::json!({ "mcpServers": servers });
        match import_mcp_value(file, doc, env) {
            Ok(found) => {
                for (name, server) in found {
                    if let Err(e) = validate_server_name(&name) {
                        tracing::warn!("{}: {e}; left out", file.display());
                        continue;
                    }
                    if !out.iter().any(|(n, _)| *n == name) {
                        out.push((name, server));
                    }
                }
            }
            Err(e) => tracing::warn!("{e}; those servers are left out"),
        }
    }
    (!out.is_empty()).then_some(out)
}

fn yaml_file(path: &Path) -> Result<config::File<config::FileSourceString, config::FileFormat>, ConfigError> {
    Ok(config::File::from_str(&yaml_text(path)?, config::FileFormat::Yaml))
}

/// The text of a YAML config file, checked: within the cap, not an alias bomb, and parsing (so a
/// syntax error names the file).
fn yaml_text(path: &Path) -> Result<String, ConfigError> {
    let text = read_capped(path, "config file")?;
    // The config crate builds the whole YAML tree, copying every alias: measure that first.
    if yaml_expands_past(&text, MAX_CONFIG_BYTES as u64) {
        return Err(ConfigError::new(format!(
            "config file {} expands past {} MB once its YAML aliases are resolved",
            path.display(),
            MAX_CONFIG_BYTES >> 20
        )));
    }
    // Parse once here so a syntax error names the file (the config crate's message does not).
    if let Err(e) =
        config::Config::builder().add_source(config::File::from_str(&text, config::FileFormat::Yaml)).build()
    {
        return Err(ConfigError::new(format!("{}: {e}", path.display())));
    }
    Ok(text)
}

/// One checked YAML file's tree on its own (keys as the layered load sees them).
fn parse_yaml(text: &str) -> Value {
    config::Config::builder()
        .add_source(config::File::from_str(text, config::FileFormat::Yaml))
        .build()
        .and_then(|c| c.try_deserialize::<Value>())
        .unwrap_or(Value::Null)
}

/// `trusted_projects` of the user's config file (`path`, for errors).
fn trusted_projects_of(tree: &Value, path: &Path) -> Result<Vec<PathBuf>, ConfigError> {
    match tree.get("trusted_projects") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(v) => serde_json::from_value(v.clone()).map_err(|_| {
            ConfigError::new(format!("{}: trusted_projects: expected a list of directories", path.display()))
        }),
    }
}

/// The first directory from `start` up (itself included) that holds one of [`PROJECT_MARKERS`],
/// as git and cargo find their roots. The walk stops at the filesystem root, and at `home` when
/// `start` is below it (a stray `~/../agent.yaml` is nobody's project).
pub fn find_project_root(start: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let stop = home.filter(|h| start.starts_with(h));
    let mut dir = start;
    loop {
        if PROJECT_MARKERS.iter().any(|m| dir.join(m).is_file()) {
            return Some(dir.to_path_buf());
        }
        if stop.is_some_and(|h| dir == h) {
            return None;
        }
        dir = dir.parent()?;
    }
}

/// `$XDG_STATE_HOME` when it is absolute, else `$HOME/.local/state`.
pub fn state_home(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    env.get("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| env.get("HOME").filter(|h| !h.is_empty()).map(|h| Path::new(h).join(".local/state")))
}

/// The per-user workspace's directory name for the project at `dir`: its last component (letters,
/// digits, `.`, `-`, `_`; others `_`) and a short hash of the whole path, so two `app/` dirs differ.
fn workspace_name(dir: &Path) -> String {
    let name: String = dir
        .file_name()
        .map(|n| {
            n.to_string_lossy()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' })
                .collect()
        })
        .unwrap_or_else(|| "root".to_string());
    let hash = crate::util::hash::stable_hex(&[dir.as_os_str().as_encoded_bytes()]);
    format!("{}-{}", name.trim_start_matches('.'), &hash[..12])
}

/// The text of `path`, refused past [`MAX_CONFIG_BYTES`] (so `/dev/zero` or a runaway file
/// cannot exhaust memory). `what` names the file in errors ("config file").
fn read_capped(path: &Path, what: &str) -> Result<String, ConfigError> {
    crate::util::read::read_text_file(path, MAX_CONFIG_BYTES as u64)
        .map_err(|e| ConfigError::new(e.message(&format!("{what} {}", path.display()))))
}

/// Whether the YAML document would take more than `max` bytes once every alias is replaced by
/// a copy of its anchor. Measured on the parser's events (linear in the text, nothing is
/// copied): a scalar counts its length, and every node [`YAML_NODE_BYTES`] more (that is
/// roughly what the tree holds per node). A syntax error ends the measurement: the config
/// crate reports it.
fn yaml_expands_past(text: &str, max: u64) -> bool {
    use yaml_rust2::parser::{Event, Parser};
    let mut parser = Parser::new_from_str(text);
    // Expanded size of each anchor, and of each collection still open (with its anchor id).
    let mut anchors: HashMap<usize, u64> = HashMap::new();
    let mut open: Vec<(usize, u64)> = Vec::new();
    let mut total: u64 = 0;
    loop {
        let Ok((event, _)) = parser.next_token() else { return false };
        // A finished node: (its anchor id or 0, its expanded size).
        let finished = match event {
            Event::StreamEnd => return false,
            Event::Scalar(value, _, anchor, _) => {
                let size = value.len() as u64 + YAML_NODE_BYTES;
                total = total.saturating_add(size);
                Some((anchor, size))
            }
            Event::Alias(id) => {
                let size = anchors.get(&id).copied().unwrap_or(YAML_NODE_BYTES);
                total = total.saturating_add(size);
                Some((0, size))
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                total = total.saturating_add(YAML_NODE_BYTES);
                open.push((anchor, YAML_NODE_BYTES));
                None
            }
            Event::SequenceEnd | Event::MappingEnd => open.pop(),
            _ => None,
        };
        if total > max {
            return true;
        }
        if let Some((anchor, size)) = finished {
            if anchor != 0 {
                anchors.insert(anchor, size);
            }
            if let Some((_, parent)) = open.last_mut() {
                *parent = parent.saturating_add(size);
            }
        }
    }
}

/// What one YAML node costs in [`yaml_expands_past`], besides its text.
const YAML_NODE_BYTES: u64 = 8;

/// `mcp.servers.<name>.…` → `mcp.servers.<name>`; `llm.…` → `llm`; anything else → None.
fn deferral_key(path: &str) -> Option<String> {
    if path == "llm" || path.starts_with("llm.") {
        return Some("llm".into());
    }
    let rest = path.strip_prefix("mcp.servers.")?;
    let name = rest.split('.').next()?;
    Some(format!("mcp.servers.{name}"))
}

fn deserialize_at<T: serde::de::DeserializeOwned>(tree: Value, prefix: &str) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(tree).map_err(|e| {
        let inner = e.path().to_string();
        let path = match (prefix.is_empty(), inner == ".") {
            (true, _) => inner,
            (false, true) => prefix.to_string(),
            (false, false) => format!("{prefix}.{inner}"),
        };
        let msg = with_suggestion(e.into_inner().to_string());
        if path == "." || path.is_empty() {
            ConfigError(format!("invalid configuration: {msg}"))
        } else {
            ConfigError(format!("{path}: {msg}"))
        }
    })
}

/// serde's "unknown field `x`, expected one of `a`, `b`" (or "unknown variant") with the closest
/// known name put first: "unknown field `x`; did you mean `a`? (known: `a`, `b`)". Other messages,
/// and unknown names with nothing close, pass unchanged.
fn with_suggestion(msg: String) -> String {
    let Some((what, rest)) = ["unknown field `", "unknown variant `"]
        .into_iter()
        .find_map(|prefix| msg.strip_prefix(prefix).map(|rest| (&prefix[..prefix.len() - 2], rest)))
    else {
        return msg;
    };
    let Some((name, expected)) = rest.split_once("`, expected ") else { return msg };
    let known: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    let hint = crate::util::suggest::did_you_mean(&crate::util::suggest::suggest(name, known.iter().copied()));
    if hint.is_empty() {
        return msg;
    }
    let listed: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
    format!("{what} `{name}`{hint} (known: {})", listed.join(", "))
}

/// A server name `agent` accepts (also what `agent mcp add` checks before it writes one).
pub fn validate_server_name(name: &str) -> Result<(), ConfigError> {
    let ok = !name.is_empty()
        && !name.contains('.')
        && !name.contains('/')
        && name.chars().all(|c| !c.is_control() && !c.is_whitespace());
    if ok {
        Ok(())
    } else {
        Err(ConfigError::new(format!(
            "mcp.servers: invalid server name {name:?} (no dots, slashes or whitespace: `agent mcp call SERVER.TOOL` splits at the first dot)"
        )))
    }
}

fn expand_tree(v: &mut Value, path: &mut String, env: &BTreeMap<String, String>, report: &mut dyn FnMut(&str, &str)) {
    match v {
        Value::String(s) => match expand_vars(s, env) {
            Ok(expanded) => *s = expanded,
            Err(msg) => report(path, &msg),
        },
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                expand_tree(item, path, env, report);
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (k, item) in map.iter_mut() {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
                expand_tree(item, path, env, report);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// Expands `$VAR`, `${VAR}` and `${VAR:-default}`; `$$` is a literal `$`. A `$` not followed by
/// a name is kept as is. Unset variables (without a default) are an error naming the variable.
pub fn expand_vars(s: &str, env: &BTreeMap<String, String>) -> Result<String, String> {
    if !s.contains('$') {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{') {
            let Some(end) = body.find('}') else {
                return Err(format!("unterminated `${{` in {s:?}"));
            };
            let inner = &body[..end];
            let (name, default) = match inner.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (inner, None),
            };
            if !is_var_name(name) {
                return Err(format!("invalid variable name `${{{inner}}}`"));
            }
            match (env.get(name), default) {
                (Some(val), _) if !(val.is_empty() && default.is_some()) => out.push_str(val),
                (_, Some(d)) => out.push_str(d),
                (None, None) => return Err(format!("${name} is not set")),
                (Some(val), None) => out.push_str(val),
            }
            rest = &body[end + 1..];
        } else {
            let len = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
            let name = &after[..len];
            if is_var_name(name) {
                match env.get(name) {
                    Some(val) => out.push_str(val),
                    None => return Err(format!("${name} is not set")),
                }
            } else {
                out.push('$');
                out.push_str(name);
            }
            rest = &after[len..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The variables `s` names as `$$NAME`, `$${NAME}` or `$${NAME:-default}`: after expansion they
/// are `$NAME` / `${NAME}` text, which the program (often `sh -c`) expands from its own
/// environment when it runs.
fn escaped_references(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(pos) = rest.find('$') {
        let after = &rest[pos + 1..];
        let Some(escaped) = after.strip_prefix('$') else {
            // `$NAME` or `${...}` is expanded by `agent`; skip past the `$`.
            rest = after;
            continue;
        };
        let name = match escaped.strip_prefix('{') {
            Some(body) => body.split(['}', ':']).next().unwrap_or(""),
            None => {
                &escaped[..escaped.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(escaped.len())]
            }
        };
        if is_var_name(name) {
            out.push(name.to_string());
        }
        rest = escaped;
    }
    out
}

fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Reads an `mcpServers` JSON file (Claude Desktop, Claude Code, Cursor). Unknown per-server
/// keys are ignored (each host adds its own); structural problems are errors naming the file.
pub fn import_mcp_servers(
    file: &Path,
    env: &BTreeMap<String, String>,
) -> Result<Vec<(String, ServerConfig)>, ConfigError> {
    parse_mcp_servers(file, &read_capped(file, "mcpServers file")?, env)
}

/// [`import_mcp_servers`] on the `text` already read from `file`.
fn parse_mcp_servers(
    file: &Path,
    text: &str,
    env: &BTreeMap<String, String>,
) -> Result<Vec<(String, ServerConfig)>, ConfigError> {
    let tree: Value =
        serde_json::from_str(text).map_err(|e| ConfigError::new(format!("{}: invalid JSON: {e}", file.display())))?;
    import_mcp_value(file, tree, env)
}

/// [`import_mcp_servers`] over a parsed document (`{"mcpServers": {...}}`) read from `file`.
pub fn import_mcp_value(
    file: &Path,
    mut tree: Value,
    env: &BTreeMap<String, String>,
) -> Result<Vec<(String, ServerConfig)>, ConfigError> {
    #[derive(Deserialize)]
    struct Root {
        #[serde(rename = "mcpServers", default)]
        mcp_servers: BTreeMap<String, Entry>,
    }
    #[derive(Deserialize)]
    struct Entry {
        command: Option<String>,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
        url: Option<String>,
        #[serde(rename = "serverUrl")]
        server_url: Option<String>,
        #[serde(default)]
        headers: BTreeMap<String, String>,
        #[serde(rename = "type", alias = "transport")]
        kind: Option<String>,
        #[serde(default)]
        disabled: bool,
    }
    // Before expansion: what `$$NAME` leaves for the server to read from its own environment.
    let mut run_time: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, entry) in tree.get("mcpServers").and_then(Value::as_object).into_iter().flatten() {
        let texts = ["command", "args", "env"].into_iter().filter_map(|k| entry.get(k)).flat_map(|v| match v {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            Value::Object(m) => m.values().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        });
        let mut vars: Vec<String> = texts.flat_map(escaped_references).collect();
        vars.sort();
        vars.dedup();
        run_time.insert(name.clone(), vars);
    }
    let mut deferred: BTreeMap<String, Vec<String>> = BTreeMap::new();
    expand_tree(&mut tree, &mut String::new(), env, &mut |path, msg| {
        let server = path.strip_prefix("mcpServers.").and_then(|r| r.split('.').next()).unwrap_or("");
        deferred.entry(server.to_string()).or_default().push(format!("{} {path}: {msg}", file.display()));
    });
    if let Some(lines) = deferred.get("") {
        return Err(ConfigError(lines[0].clone()));
    }
    let root: Root = serde_path_to_error::deserialize(tree)
        .map_err(|e| ConfigError::new(format!("{}: {}: {}", file.display(), e.path(), e.inner())))?;
    let mut out = Vec::new();
    for (name, e) in root.mcp_servers {
        let url = e.url.or(e.server_url);
        let kind = e.kind.map(|k| k.to_ascii_lowercase());
        let transport = match kind.as_deref() {
            Some("sse") => Some("sse".to_string()),
            Some("http" | "streamable-http" | "streamablehttp") => Some("http".to_string()),
            Some("stdio") | None => None,
            Some(other) => Some(other.to_string()),
        };
        let server = ServerConfig {
            command: e.command,
            args: e.args,
            envs: e.env,
            cwd: e.cwd,
            url,
            headers: e.headers,
            transport,
            disabled: e.disabled,
            unresolved: deferred.remove(&name).unwrap_or_default(),
            reads_at_run_time: run_time.remove(&name).unwrap_or_default(),
            imported_from: Some(file.to_path_buf()),
            ..ServerConfig::default()
        };
        out.push((name, server));
    }
    Ok(out)
}

/// Durations as humantime strings (`30s`, `2m`, `1h 30m`) or bare numbers of seconds.
pub mod duration {
    use super::*;

    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = Value::deserialize(d)?;
        parse_value(&v).map_err(serde::de::Error::custom)
    }

    pub fn parse_value(v: &Value) -> Result<Duration, String> {
        match v {
            Value::Number(n) => n
                .as_f64()
                .filter(|f| (0.0..1e9).contains(f))
                .map(Duration::from_secs_f64)
                .ok_or_else(|| format!("invalid duration {n}")),
            Value::String(s) => parse(s),
            other => Err(format!("invalid type: expected a duration like \"30s\", got {other}")),
        }
    }

    /// Parses `30s`, `1m 30s`, `250ms` or a bare number of seconds (`30`, `0.5`).
    pub fn parse(s: &str) -> Result<Duration, String> {
        let t = s.trim();
        if let Ok(secs) = t.parse::<f64>() {
            if (0.0..1e9).contains(&secs) {
                return Ok(Duration::from_secs_f64(secs));
            }
            return Err(format!("invalid duration {s:?}"));
        }
        humantime::parse_duration(t).map_err(|e| format!("invalid duration {s:?} ({e}); use e.g. 30s, 500ms, 2m"))
    }
}

/// Byte sizes as strings (`100MB`, `5 KiB`) or bare numbers of bytes.
pub mod byte_size {
    use super::*;

    pub fn serialize<S: serde::Serializer>(n: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(*n)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        match Value::deserialize(d)? {
            Value::Number(n) => n.as_u64().ok_or_else(|| serde::de::Error::custom(format!("invalid size {n}"))),
            Value::String(s) => crate::util::size::parse_bytes(&s).map_err(serde::de::Error::custom),
            other => {
                Err(serde::de::Error::custom(format!("invalid type: expected a size like \"100MB\", got {other}")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_quotas() {
        let dir = tempfile::tempdir().unwrap();
        let c = load(dir.path(), "", &[]).unwrap();
        assert_eq!(c.mcp.code_execution.state, StateConfig { max_bytes: 100 << 20, max_files: 10_000 });
        let y = "mcp:\n  code_execution:\n    state:\n      max_bytes: 5MB\n      max_files: 3\n";
        let c = load(dir.path(), y, &[]).unwrap();
        assert_eq!(c.mcp.code_execution.state, StateConfig { max_bytes: 5 << 20, max_files: 3 });
        let bad = load(dir.path(), "mcp:\n  code_execution:\n    state:\n      max_bytes: lots\n", &[]).unwrap_err();
        assert!(bad.0.contains("mcp.code_execution.state.max_bytes"), "{}", bad.0);
        let zero = load(dir.path(), "mcp:\n  code_execution:\n    state:\n      max_files: 0\n", &[]).unwrap_err();
        assert!(zero.0.contains("mcp.code_execution.state"), "{}", zero.0);
    }

    #[test]
    fn serve_limits() {
        let dir = tempfile::tempdir().unwrap();
        let c = load(dir.path(), "", &[]).unwrap();
        assert_eq!((c.serve.max_connections, c.serve.max_sessions), (256, 64));
        assert_eq!(c.serve.read_timeout, Duration::from_secs(10));
        let y = "serve:\n  max_sessions: 3\n  read_timeout: 1500ms\n  max_message_bytes: 64KB\n";
        let c = load(dir.path(), y, &[("AGENT_SERVE__MAX_CONNECTIONS", "9")]).unwrap();
        assert_eq!((c.serve.max_connections, c.serve.max_sessions), (9, 3));
        assert_eq!(c.serve.read_timeout, Duration::from_millis(1500));
        assert_eq!(c.serve.max_message_bytes, 64 << 10);
        for bad in ["serve:\n  max_sessions: 0\n", "serve:\n  read_timeout: 0s\n", "serve:\n  max_message_bytes: 1GB\n"]
        {
            let e = load(dir.path(), bad, &[]).unwrap_err();
            assert!(e.0.starts_with("serve"), "{bad}: {}", e.0);
        }
        let unknown = load(dir.path(), "serve:\n  max_sesions: 3\n", &[]).unwrap_err();
        assert!(unknown.0.contains("max_sesions"), "{}", unknown.0);
    }

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn load(dir: &Path, yaml: &str, e: &[(&str, &str)]) -> Result<Config, ConfigError> {
        std::fs::write(dir.join("agent.yaml"), yaml).unwrap();
        let opts = LoadOptions { project_dir: Some(dir.to_path_buf()), skip_user_config: true, ..Default::default() };
        Config::load_with_env(&opts, &env(e))
    }

    #[test]
    fn expands_the_home_directory_in_path_keys() {
        let e = env(&[("HOME", "/home/me")]);
        let x = |p: &str| expand_home("k", Path::new(p), &e);
        assert_eq!(x("~/a/b.json").unwrap(), PathBuf::from("/home/me/a/b.json"));
        assert_eq!(x("~").unwrap(), PathBuf::from("/home/me"));
        assert_eq!(x("a/~/b").unwrap(), PathBuf::from("a/~/b"));
        assert_eq!(x("/abs/~x").unwrap(), PathBuf::from("/abs/~x"));
        assert_eq!(x(".kodelet/mcp").unwrap(), PathBuf::from(".kodelet/mcp"));
        let user = x("~bob/a").unwrap_err();
        assert_eq!(user.0, "k: ~bob/a starts with `~user`, which is not expanded (write `~/...` or the full path)");
        let no_home = expand_home("k", Path::new("~/a"), &env(&[])).unwrap_err();
        assert_eq!(no_home.0, "k: ~/a starts with `~`, but HOME is not set");

        // Through a whole load: the import is read from the home directory, the other keys expanded.
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".config/claude")).unwrap();
        let imported = r#"{"mcpServers": {"imported": {"command": "true"}}}"#;
        std::fs::write(home.join(".config/claude/servers.json"), imported).unwrap();
        let yaml = "mcp:\n  import: [~/.config/claude/servers.json]\n  code_execution:\n    workspace_dir: ~/ws\n    tsc: ~/bin/tsc\n  servers:\n    s:\n      command: x\n      cwd: ~/work\n      roots: [~/r, rel]\n      auth:\n        private_key_file: ~/key.pem\n";
        std::fs::write(dir.path().join("agent.yaml"), yaml).unwrap();
        let opts =
            LoadOptions { project_dir: Some(dir.path().to_path_buf()), skip_user_config: true, ..Default::default() };
        let h = home.display().to_string();
        let c = Config::load_with_env(&opts, &env(&[("HOME", &h)])).unwrap();
        assert!(c.mcp.servers.contains_key("imported"));
        assert_eq!(c.mcp.import, vec![home.join(".config/claude/servers.json")]);
        assert_eq!(c.mcp.code_execution.workspace_dir, home.join("ws"));
        assert_eq!(c.mcp.code_execution.tsc, Some(home.join("bin/tsc")));
        let s = &c.mcp.servers["s"];
        assert_eq!(s.cwd, Some(home.join("work")));
        // A relative path (no `~`) resolves against the project root.
        assert_eq!(s.roots, vec![home.join("r"), dir.path().join("rel")]);
        assert_eq!(s.auth.private_key_file, Some(home.join("key.pem")));
    }

    #[test]
    fn expands_variables() {
        let e = env(&[("A", "x"), ("EMPTY", "")]);
        assert_eq!(expand_vars("$A-${A}", &e).unwrap(), "x-x");
        assert_eq!(expand_vars("${B:-dflt}", &e).unwrap(), "dflt");
        assert_eq!(expand_vars("${EMPTY:-d}", &e).unwrap(), "d");
        assert_eq!(expand_vars("cost $$5 and $ alone", &e).unwrap(), "cost $5 and $ alone");
        assert_eq!(expand_vars("$B", &e).unwrap_err(), "$B is not set");
        assert!(expand_vars("${A", &e).is_err());
    }

    #[test]
    fn layers_and_env_overrides() {
        let dir = tempfile::tempdir().unwrap();
        let c = load(
            dir.path(),
            "mcp:\n  execution_mode: direct\n  servers:\n    GitHub:\n      command: gh-mcp\n      call_timeout: 5s\n",
            &[
                ("AGENT_MCP__EXECUTION_MODE", "code"),
                ("AGENT_MCP__CODE_EXECUTION__TIMEOUT", "7"),
                ("AGENT_CONFIG_IGNORED", "1"),
            ],
        )
        .unwrap();
        assert_eq!(c.mcp.execution_mode, ExecutionMode::Code);
        assert_eq!(c.mcp.code_execution.timeout, Duration::from_secs(7));
        let gh = &c.mcp.servers["GitHub"];
        assert_eq!(gh.call_timeout, Duration::from_secs(5));
        assert_eq!(gh.transport().unwrap(), Transport::Stdio);
    }

    #[test]
    fn call_spin_takes_microseconds_and_is_capped() {
        let dir = tempfile::tempdir().unwrap();
        let c = load(dir.path(), "mcp:\n  servers: {}\n", &[]).unwrap();
        assert_eq!(c.mcp.code_execution.call_spin, Duration::from_micros(500));
        let c = load(dir.path(), "mcp:\n  code_execution:\n    call_spin: 800us\n", &[]).unwrap();
        assert_eq!(c.mcp.code_execution.call_spin, Duration::from_micros(800));
        let c = load(dir.path(), "mcp:\n  code_execution:\n    call_spin: 0s\n", &[]).unwrap();
        assert!(c.mcp.code_execution.call_spin.is_zero());
        let err = load(dir.path(), "mcp:\n  code_execution:\n    call_spin: 11ms\n", &[]).unwrap_err();
        assert_eq!(err.0, "mcp.code_execution.call_spin: at most 10ms (it is a busy wait; `0s` turns it off)");
    }

    #[test]
    fn result_handlers_default_on_without_tool_calls() {
        let dir = tempfile::tempdir().unwrap();
        let c = load(dir.path(), "", &[]).unwrap();
        assert!(c.mcp.result_handlers.enabled && !c.mcp.result_handlers.tool_calls);
        let c = load(dir.path(), "mcp:\n  result_handlers:\n    enabled: false\n    tool_calls: true\n", &[]).unwrap();
        assert!(!c.mcp.result_handlers.enabled && c.mcp.result_handlers.tool_calls);
        let err = load(dir.path(), "mcp:\n  result_handlers:\n    tool_call: true\n", &[]).unwrap_err();
        assert!(err.0.contains("tool_call"), "{}", err.0);
    }

    #[test]
    fn max_result_bytes_has_a_default_and_a_floor() {
        let dir = tempfile::tempdir().unwrap();
        let c = load(dir.path(), "mcp:\n  servers: {}\n", &[]).unwrap();
        assert_eq!(c.mcp.max_result_bytes, 16 << 20);
        let c = load(dir.path(), "mcp:\n  max_result_bytes: 1048576\n", &[]).unwrap();
        assert_eq!(c.mcp.max_result_bytes, 1 << 20);
        let c = load(dir.path(), "", &[("AGENT_MCP__MAX_RESULT_BYTES", "2097152")]).unwrap();
        assert_eq!(c.mcp.max_result_bytes, 2 << 20);
        let err = load(dir.path(), "mcp:\n  max_result_bytes: 1000\n", &[]).unwrap_err();
        assert_eq!(err.0, "mcp.max_result_bytes: must be at least 65536 (64 KiB)");
    }

    #[test]
    fn unknown_keys_and_wrong_types_name_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let err = load(dir.path(), "mcp:\n  servers:\n    gh:\n      comand: x\n", &[]).unwrap_err();
        assert!(
            err.0.starts_with(
                "mcp.servers.gh.comand: unknown field `comand`; did you mean `command`? (known: `command`"
            ),
            "{err}"
        );
        let err = load(dir.path(), "mcp:\n  code_execution:\n    memory_limit_mb: lots\n", &[]).unwrap_err();
        assert!(err.0.starts_with("mcp.code_execution.memory_limit_mb: invalid"), "{err}");
        let err = load(dir.path(), "mcp:\n  execution_mode: fast\n", &[]).unwrap_err();
        assert!(err.0.starts_with("mcp.execution_mode: unknown variant `fast`, expected one of"), "{err}");
        let err = load(dir.path(), "mcp:\n  execution_mode: dirct\n", &[]).unwrap_err();
        assert!(err.0.starts_with("mcp.execution_mode: unknown variant `dirct`; did you mean `direct`?"), "{err}");
    }

    #[test]
    fn progressive_mode_and_pinned_tools() {
        let dir = tempfile::tempdir().unwrap();
        let c =
            load(dir.path(), "mcp:\n  execution_mode: progressive\n  pinned_tools: [github.get_me]\n", &[]).unwrap();
        assert_eq!(c.mcp.execution_mode, ExecutionMode::Progressive);
        assert_eq!(c.mcp.execution_mode.to_string(), "progressive");
        assert_eq!(c.mcp.pinned_tools, ["github.get_me"]);
        assert!(load(dir.path(), "", &[]).unwrap().mcp.pinned_tools.is_empty());
        let c = load(
            dir.path(),
            "search:\n  usage: false\n  embeddings: {url: \"http://localhost:11434/v1\", model: nomic-embed-text}\n",
            &[],
        )
        .unwrap();
        assert!(!c.search.usage);
        let e = c.search.embeddings.unwrap();
        assert_eq!(
            (e.url.as_str(), e.model.as_str(), e.api_key_env),
            ("http://localhost:11434/v1", "nomic-embed-text", None)
        );
        assert!(load(dir.path(), "", &[]).unwrap().search.usage, "usage counts are on by default");
        let err = load(dir.path(), "search:\n  embeddings: {url: x}\n", &[]).unwrap_err();
        assert!(err.0.contains("search.embeddings") && err.0.contains("model"), "{err}");
        let err = load(dir.path(), "mcp:\n  pinned_tools: [github.get_me, get_me]\n", &[]).unwrap_err();
        assert_eq!(err.0, "mcp.pinned_tools[1]: expected SERVER.TOOL (e.g. `github.get_me`), got `get_me`");
    }

    #[test]
    fn missing_variables_are_deferred_per_server() {
        let dir = tempfile::tempdir().unwrap();
        let c = load(
            dir.path(),
            "mcp:\n  servers:\n    github:\n      command: x\n      envs:\n        GITHUB_TOKEN: $GITHUB_TOKEN\n    ok:\n      command: y\n",
            &[],
        )
        .unwrap();
        assert_eq!(
            c.mcp.servers["github"].unresolved,
            vec!["mcp.servers.github.envs.GITHUB_TOKEN: $GITHUB_TOKEN is not set"]
        );
        assert!(c.mcp.servers["ok"].unresolved.is_empty());
        let err = load(dir.path(), "mcp:\n  code_execution:\n    workspace_dir: $NOPE/x\n", &[]).unwrap_err();
        assert_eq!(err.0, "mcp.code_execution.workspace_dir: $NOPE is not set");
    }

    #[test]
    fn a_misspelled_key_gets_the_closest_known_one() {
        let dir = tempfile::tempdir().unwrap();
        let yaml = "mcp:\n  servers:\n    s:\n      command: x\n      tool_whitelist: [a]\n";
        let err = load(dir.path(), yaml, &[]).unwrap_err().0;
        assert!(
            err.starts_with(
                "mcp.servers.s.tool_whitelist: unknown field `tool_whitelist`; did you mean `tool_white_list`?"
            ),
            "{err}"
        );
        let err = load(dir.path(), "llm:\n  reqest_timeout: 5s\n", &[]).unwrap_err().0;
        assert!(err.contains("did you mean `request_timeout`?"), "{err}");
        // Nothing close: serde's own list of known keys, unchanged.
        let err = load(dir.path(), "mcp:\n  zzzzqqq: 1\n", &[]).unwrap_err().0;
        assert!(err.contains("unknown field `zzzzqqq`, expected one of"), "{err}");
    }

    #[test]
    fn imports_mcp_json() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "x"], "env": {"K": "${V}"}},
                "remote": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer t"}},
                "old": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
                "dup": {"command": "from-json"}}}"#,
        )
        .unwrap();
        let c = load(dir.path(), "mcp:\n  servers:\n    dup:\n      command: from-yaml\n", &[("V", "v")]).unwrap();
        assert_eq!(c.mcp.servers["fs"].envs["K"], "v");
        assert_eq!(c.mcp.servers["remote"].transport().unwrap(), Transport::Http);
        assert_eq!(c.mcp.servers["old"].transport().unwrap(), Transport::Sse);
        assert_eq!(c.mcp.servers["dup"].command.as_deref(), Some("from-yaml"));
        let sources: Vec<(PathBuf, SourceKind)> = c.sources.iter().map(|s| (s.path.clone(), s.kind)).collect();
        assert_eq!(
            sources,
            [(dir.path().join("agent.yaml"), SourceKind::Project), (dir.path().join(".mcp.json"), SourceKind::Import)]
        );
    }

    #[test]
    fn env_passthrough_takes_variable_names() {
        let dir = tempfile::tempdir().unwrap();
        let y = "mcp:\n  servers:\n    gh:\n      command: x\n      env_passthrough: [GITHUB_TOKEN, HTTPS_PROXY]\n";
        let c = load(dir.path(), y, &[]).unwrap();
        assert_eq!(c.mcp.servers["gh"].env_passthrough, ["GITHUB_TOKEN", "HTTPS_PROXY"]);
        assert!(
            load(dir.path(), "mcp:\n  servers:\n    gh:\n      command: x\n", &[]).unwrap().mcp.servers["gh"]
                .env_passthrough
                .is_empty()
        );
        let err = load(
            dir.path(),
            "mcp:\n  servers:\n    gh:\n      command: x\n      env_passthrough: [OK, \"A=B\"]\n",
            &[],
        )
        .unwrap_err();
        assert_eq!(
            err.0,
            "mcp.servers.gh.env_passthrough[1]: \"A=B\" is not a variable name (letters, digits and `_`, not starting with a digit)"
        );
    }

    #[test]
    fn imported_servers_record_the_variables_they_read_when_they_run() {
        assert_eq!(escaped_references("exec srv --key $$KEY --url $${URL:-x} $HOME $$$EXPANDED $${}"), ["KEY", "URL"]);
        assert!(escaped_references("plain $VAR ${VAR} $$ 5$$").is_empty());
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {
                "sh": {"command": "sh", "args": ["-c", "exec srv --token \"$$API_TOKEN\" --home $$HOME"], "env": {"A": "$$EXTRA", "B": "${V}"}},
                "named": {"command": "srv", "args": ["$$GIVEN"], "env": {"GIVEN": "x"}},
                "plain": {"command": "srv", "args": ["--key", "${V}"]}}}"#,
        )
        .unwrap();
        let c = load(dir.path(), "", &[("V", "v")]).unwrap();
        let sh = &c.mcp.servers["sh"];
        assert_eq!(sh.args[1], "exec srv --token \"$API_TOKEN\" --home $HOME");
        assert_eq!(sh.reads_at_run_time, ["API_TOKEN", "EXTRA", "HOME"]);
        assert_eq!(sh.not_passed(), ["API_TOKEN", "EXTRA"], "HOME is on the inherited list");
        assert_eq!(sh.imported_from.as_deref(), Some(dir.path().join(".mcp.json").as_path()));
        assert!(c.mcp.servers["named"].not_passed().is_empty(), "named in env: passed");
        assert!(c.mcp.servers["plain"].reads_at_run_time.is_empty(), "`${{V}}` is expanded by agent and passed");
    }

    /// A "billion laughs" document: `levels` anchors, each a list of `fan` aliases of the last.
    fn alias_bomb(levels: usize, fan: usize) -> String {
        let mut y = format!("l0: &l0 [{}]\n", vec!["\"lol\""; fan].join(", "));
        for i in 1..levels {
            y.push_str(&format!("l{i}: &l{i} [{}]\n", vec![format!("*l{}", i - 1); fan].join(", ")));
        }
        y
    }

    #[test]
    fn yaml_alias_bombs_are_refused_before_they_expand() {
        let dir = tempfile::tempdir().unwrap();
        // 10^6 copies of "lol": past the cap, though the file is 400 bytes.
        let started = std::time::Instant::now();
        let err = load(dir.path(), &alias_bomb(6, 10), &[]).unwrap_err();
        let file = dir.path().join("agent.yaml");
        assert_eq!(
            err.0,
            format!("config file {} expands past 4 MB once its YAML aliases are resolved", file.display())
        );
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
        // A handful of aliases is fine (and a real config may use some).
        assert!(!yaml_expands_past(&alias_bomb(3, 10), MAX_CONFIG_BYTES as u64));
        let c = load(dir.path(), "x: &t 5s\nmcp:\n  servers:\n    a:\n      command: c\n      call_timeout: *t\n", &[]);
        assert!(c.unwrap_err().0.contains("unknown field `x`"), "the document itself still loads");
        // Nested aliases count at every use; a syntax error is left to the YAML parser's message.
        assert!(yaml_expands_past(&alias_bomb(4, 100), MAX_CONFIG_BYTES as u64));
        assert!(!yaml_expands_past("a: [unclosed", MAX_CONFIG_BYTES as u64));
        assert!(yaml_expands_past(&"k: v\n".repeat(1000), 1000));
    }

    #[test]
    fn oversized_config_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let big = format!("agent:\n  system_prompt: \"{}\"\n", "x".repeat(MAX_CONFIG_BYTES));
        // (Not `unwrap_err`: a loaded config would print its 4 MB prompt.)
        let err = load(dir.path(), &big, &[]).err().map(|e| e.0);
        let want = format!("config file {} is larger than 4 MB", dir.path().join("agent.yaml").display());
        assert_eq!(err.as_deref(), Some(want.as_str()));
        let opts = LoadOptions {
            config_file: Some(PathBuf::from("/dev/zero")),
            project_dir: Some(dir.path().to_path_buf()),
            skip_user_config: true,
        };
        let err = Config::load_with_env(&opts, &env(&[])).unwrap_err();
        assert_eq!(err.0, "config file /dev/zero is larger than 4 MB");
    }

    #[test]
    fn zero_durations_and_sizes_are_refused_with_their_key() {
        let dir = tempfile::tempdir().unwrap();
        let server = |key: &str| format!("mcp:\n  servers:\n    gh:\n      command: x\n      {key}\n");
        let cases = [
            (
                server("call_timeout: 0s"),
                "mcp.servers.gh.call_timeout: must be greater than zero (every call would time out)",
            ),
            (
                server("call_timeout: 0"),
                "mcp.servers.gh.call_timeout: must be greater than zero (every call would time out)",
            ),
            (
                server("connect_timeout: 0ms"),
                "mcp.servers.gh.connect_timeout: must be greater than zero (the server could never start)",
            ),
            (
                "mcp:\n  code_execution:\n    timeout: 0s\n".into(),
                "mcp.code_execution.timeout: must be greater than zero (every script would time out)",
            ),
            (
                "mcp:\n  code_execution:\n    memory_limit_mb: 1\n".into(),
                "mcp.code_execution.memory_limit_mb: 1 MB is too small; the runtime needs at least 16 MB",
            ),
            (
                "mcp:\n  code_execution:\n    max_output_bytes: 0\n".into(),
                "mcp.code_execution.max_output_bytes: must be at least 1 (0 would drop everything a script prints)",
            ),
            (
                "llm:\n  request_timeout: 0s\n".into(),
                "llm.request_timeout: must be greater than zero (every model request would time out)",
            ),
            ("llm:\n  max_tokens: 0\n".into(), "llm.max_tokens: must be at least 1"),
            ("agent:\n  max_turns: 0\n".into(), "agent.max_turns: must be at least 1"),
            (
                "agent:\n  max_tool_result_bytes: 0\n".into(),
                "agent.max_tool_result_bytes: must be at least 1 (0 would cut every tool result to nothing)",
            ),
        ];
        for (yaml, want) in cases {
            assert_eq!(load(dir.path(), &yaml, &[]).unwrap_err().0, want, "{yaml}");
        }
        // The same from the environment; negative values do not parse at all.
        let err = load(dir.path(), &server("disabled: false"), &[("AGENT_MCP__SERVERS__GH__CALL_TIMEOUT", "0")]);
        assert!(err.unwrap_err().0.starts_with("mcp.servers.gh.call_timeout: must be greater than zero"));
        let err = load(dir.path(), &server("call_timeout: -1"), &[]).unwrap_err();
        assert!(err.0.starts_with("mcp.servers.gh.call_timeout: invalid duration"), "{err}");
        let err = load(dir.path(), "mcp:\n  code_execution:\n    max_output_bytes: -5\n", &[]).unwrap_err();
        assert!(err.0.starts_with("mcp.code_execution.max_output_bytes: invalid value"), "{err}");
        // The smallest accepted values.
        let c = load(dir.path(), "mcp:\n  code_execution:\n    memory_limit_mb: 16\n    timeout: 1ms\n", &[]).unwrap();
        assert_eq!(c.mcp.code_execution.memory_limit_mb, MIN_HEAP_MB);
    }

    #[test]
    fn a_directory_is_not_a_config_file() {
        let dir = tempfile::tempdir().unwrap();
        let opts = |p: &Path| LoadOptions {
            config_file: Some(p.to_path_buf()),
            project_dir: Some(dir.path().to_path_buf()),
            skip_user_config: true,
        };
        let err = Config::load_with_env(&opts(dir.path()), &env(&[])).unwrap_err();
        assert_eq!(err.0, format!("config file {} is a directory, not a file", dir.path().display()));
        let err = Config::load_with_env(&opts(&dir.path().join("nope.yaml")), &env(&[])).unwrap_err();
        assert!(err.0.ends_with("nope.yaml does not exist"), "{err}");
        std::fs::create_dir(dir.path().join("imports")).unwrap();
        let err = load(dir.path(), "mcp:\n  import: [imports]\n", &[]).unwrap_err();
        assert!(err.0.starts_with("mcp.import: ") && err.0.ends_with("imports is a directory, not a file"), "{err}");
    }

    #[test]
    fn the_sample_config_loads_and_every_handshake_parses() {
        let dir = tempfile::tempdir().unwrap();
        let sample = include_str!("../config.sample.yaml");
        let c = load(dir.path(), sample, &[]).unwrap();
        assert_eq!(c.mcp.servers["everything"].handshake, Handshake::Initialize);
        for (word, h) in [("discover", Handshake::Discover), ("auto", Handshake::Auto)] {
            let c = load(
                dir.path(),
                &format!("mcp:\n  servers:\n    x:\n      command: x\n      handshake: {word}\n"),
                &[],
            )
            .unwrap();
            assert_eq!(c.mcp.servers["x"].handshake, h);
        }
        let err =
            load(dir.path(), "mcp:\n  servers:\n    x:\n      command: x\n      handshake: hello\n", &[]).unwrap_err();
        assert!(err.0.contains("handshake") && err.0.contains("discover"), "{err}");
    }

    #[test]
    fn durations() {
        assert_eq!(duration::parse("30").unwrap(), Duration::from_secs(30));
        assert_eq!(duration::parse("1m 30s").unwrap(), Duration::from_secs(90));
        assert_eq!(duration::parse("250ms").unwrap(), Duration::from_millis(250));
        assert!(duration::parse("soon").is_err());
        assert!(duration::parse("-1").is_err());
    }
    #[test]
    fn elicitation_and_sampling_keys() {
        let dir = tempfile::tempdir().unwrap();
        let y = "mcp:\n  servers:\n    gh:\n      command: x\n      elicitation: accept_defaults\n      sampling: ask\n      \
                 sampling_max_tokens: 50\n      sampling_budget: 900\n      roots: [a, /b]\n";
        let c = load(dir.path(), y, &[]).unwrap();
        let gh = &c.mcp.servers["gh"];
        assert_eq!(gh.elicitation, Some(ElicitationPolicy::AcceptDefaults));
        assert_eq!((gh.sampling, gh.sampling_max_tokens, gh.sampling_budget), (SamplingPolicy::Ask, 50, Some(900)));
        // A relative root is the project root's directory, wherever the command runs.
        assert_eq!(gh.roots, vec![dir.path().join("a"), PathBuf::from("/b")]);
        let d = load(dir.path(), "mcp:\n  servers:\n    gh:\n      command: x\n", &[]).unwrap();
        assert_eq!((d.mcp.servers["gh"].elicitation, d.mcp.servers["gh"].sampling), (None, SamplingPolicy::Deny));
        let bad = load(dir.path(), "mcp:\n  servers:\n    gh:\n      command: x\n      sampling: maybe\n", &[]);
        assert!(bad.unwrap_err().0.contains("sampling"));
        let zero = load(dir.path(), "mcp:\n  servers:\n    gh:\n      command: x\n      sampling_max_tokens: 0\n", &[]);
        assert!(zero.unwrap_err().0.contains("mcp.servers.gh.sampling_max_tokens: must be greater than zero"));
        assert_eq!(d.mcp.servers["gh"].sampling_max_input_bytes, 64 << 10);
        let input = "mcp:\n  servers:\n    gh:\n      command: x\n      sampling_max_input_bytes: 4096\n";
        assert_eq!(load(dir.path(), input, &[]).unwrap().mcp.servers["gh"].sampling_max_input_bytes, 4096);
        let zero = load(dir.path(), &input.replace("4096", "0"), &[]);
        assert!(zero.unwrap_err().0.contains("mcp.servers.gh.sampling_max_input_bytes: must be greater than zero"));
    }

    #[test]
    fn a_server_mode_is_direct_code_or_auto_and_absent_by_default() {
        let dir = tempfile::tempdir().unwrap();
        let d = load(dir.path(), "mcp:\n  servers:\n    x:\n      command: x\n", &[]).unwrap();
        assert_eq!(d.mcp.servers["x"].mode, None);
        for (word, m) in [("direct", ServerMode::Direct), ("code", ServerMode::Code), ("auto", ServerMode::Auto)] {
            let y = format!("mcp:\n  servers:\n    x:\n      command: x\n      mode: {word}\n");
            assert_eq!(load(dir.path(), &y, &[]).unwrap().mcp.servers["x"].mode, Some(m));
        }
        let bad = load(dir.path(), "mcp:\n  servers:\n    x:\n      command: x\n      mode: progressive\n", &[]);
        let err = bad.unwrap_err().0;
        assert!(err.contains("mcp.servers.x.mode") && err.contains("auto"), "{err}");
    }

    #[test]
    fn the_project_root_is_the_first_directory_up_with_a_project_file_and_never_above_home() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let deep = home.join("proj/a/b");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(find_project_root(&deep, Some(&home)), None, "nothing up to HOME");
        // A project file above HOME is not the project of a directory below HOME.
        std::fs::write(t.path().join("agent.yaml"), "").unwrap();
        assert_eq!(find_project_root(&deep, Some(&home)), None);
        assert_eq!(find_project_root(&deep, None), Some(t.path().to_path_buf()), "without HOME: up to /");
        for marker in PROJECT_MARKERS {
            let proj = home.join("proj");
            std::fs::write(proj.join(marker), "").unwrap();
            assert_eq!(find_project_root(&deep, Some(&home)), Some(proj.clone()), "{marker}");
            std::fs::remove_file(proj.join(marker)).unwrap();
        }
        // The nearest one wins; a directory named like a marker is not one.
        std::fs::write(home.join("proj/.mcp.json"), "{}").unwrap();
        std::fs::create_dir(home.join("proj/a/agent.yaml")).unwrap();
        assert_eq!(find_project_root(&deep, Some(&home)), Some(home.join("proj")));
        std::fs::write(home.join("proj/a/b/agent.yml"), "").unwrap();
        assert_eq!(find_project_root(&deep, Some(&home)), Some(deep.clone()));
    }

    #[test]
    fn the_workspace_is_explicit_or_the_projects_or_per_user() {
        let t = tempfile::tempdir().unwrap();
        let state = t.path().join("state");
        let e = [("XDG_STATE_HOME", state.to_str().unwrap())];
        let proj = t.path().join("my proj");
        std::fs::create_dir(&proj).unwrap();
        let c = load(&proj, "", &e).unwrap();
        assert_eq!(
            (c.project.workspace, c.mcp.code_execution.workspace_dir.clone()),
            (WorkspaceKind::Project, proj.join(".kodelet/mcp"))
        );
        let c = load(&proj, "mcp:\n  code_execution:\n    workspace_dir: ws\n", &e).unwrap();
        assert_eq!(
            (c.project.workspace, c.mcp.code_execution.workspace_dir.clone()),
            (WorkspaceKind::Explicit, proj.join("ws"))
        );
        // Only a `.mcp.json`: the project's state goes to the user's directory.
        std::fs::remove_file(proj.join("agent.yaml")).unwrap();
        std::fs::write(proj.join(".mcp.json"), r#"{"mcpServers": {}}"#).unwrap();
        let opts = LoadOptions { project_dir: Some(proj.clone()), skip_user_config: true, ..Default::default() };
        let c = Config::load_with_env(&opts, &env(&e)).unwrap();
        let ws = c.mcp.code_execution.workspace_dir.clone();
        assert_eq!(c.project.workspace, WorkspaceKind::User);
        assert_eq!(ws.parent(), Some(state.join("agent/workspaces").as_path()));
        let name = ws.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("my_proj-") && name.len() == "my_proj-".len() + 12, "{name}");
        // ... unless the project already keeps a `.kodelet/`.
        std::fs::create_dir(proj.join(".kodelet")).unwrap();
        let c = Config::load_with_env(&opts, &env(&e)).unwrap();
        assert_eq!(c.mcp.code_execution.workspace_dir, proj.join(".kodelet/mcp"));
        // Another directory of the same name elsewhere gets another workspace.
        let other = t.path().join("x/my proj");
        std::fs::create_dir_all(&other).unwrap();
        let o = LoadOptions { project_dir: Some(other), skip_user_config: true, ..Default::default() };
        let c2 = Config::load_with_env(&o, &env(&e)).unwrap();
        assert_ne!(c2.mcp.code_execution.workspace_dir, ws);
    }

    #[test]
    fn the_projects_mcp_json_is_imported_unless_turned_off_or_a_config_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".mcp.json"), r#"{"mcpServers": {"cloned": {"command": "evil"}}}"#).unwrap();
        let c = load(dir.path(), "", &[]).unwrap();
        assert!(c.mcp.servers.contains_key("cloned"));
        assert_eq!(c.project.servers, ["cloned"]);
        let c = load(dir.path(), "mcp:\n  import_mcp_json: false\n", &[]).unwrap();
        assert!(!c.mcp.servers.contains_key("cloned") && c.project.servers.is_empty());
        assert!(!c.project.runs_anything());
        let mine = dir.path().join("mine.yaml");
        std::fs::write(&mine, "mcp:\n  servers:\n    own:\n      command: ok\n").unwrap();
        for opts in [
            LoadOptions {
                config_file: Some(mine.clone()),
                project_dir: Some(dir.path().into()),
                skip_user_config: true,
            },
            LoadOptions { project_dir: Some(dir.path().into()), skip_user_config: true, ..Default::default() },
        ] {
            let e =
                if opts.config_file.is_some() { env(&[]) } else { env(&[("AGENT_CONFIG", mine.to_str().unwrap())]) };
            let c = Config::load_with_env(&opts, &e).unwrap();
            let names: Vec<&String> = c.mcp.servers.keys().collect();
            assert_eq!(names, ["own"], "the named file only");
            assert!(c.project.files.is_empty() && c.project.servers.is_empty());
        }
        // ... but what the named file imports is read.
        std::fs::write(&mine, "mcp:\n  import: [.mcp.json]\n").unwrap();
        let e = env(&[("AGENT_CONFIG", mine.to_str().unwrap())]);
        let opts = LoadOptions { project_dir: Some(dir.path().into()), skip_user_config: true, ..Default::default() };
        assert!(Config::load_with_env(&opts, &e).unwrap().mcp.servers.contains_key("cloned"));
    }

    #[test]
    fn trusted_projects_count_only_from_the_users_file() {
        let t = tempfile::tempdir().unwrap();
        let xdg = t.path().join("cfg");
        std::fs::create_dir_all(xdg.join("agent")).unwrap();
        let proj = t.path().join("proj");
        std::fs::create_dir(&proj).unwrap();
        let e = [("XDG_CONFIG_HOME", xdg.to_str().unwrap())];
        let opts = LoadOptions { project_dir: Some(proj.clone()), ..Default::default() };
        // A hostile project vouching for itself.
        std::fs::write(proj.join("agent.yaml"), format!("trusted_projects: [{:?}]\n", proj.display().to_string()))
            .unwrap();
        assert!(Config::load_with_env(&opts, &env(&e)).unwrap().trusted_projects.is_empty());
        std::fs::write(xdg.join("agent/config.yaml"), "trusted_projects: [/srv/a]\n").unwrap();
        assert_eq!(Config::load_with_env(&opts, &env(&e)).unwrap().trusted_projects, [PathBuf::from("/srv/a")]);
        std::fs::write(xdg.join("agent/config.yaml"), "trusted_projects: yes\n").unwrap();
        let err = Config::load_with_env(&opts, &env(&e)).unwrap_err();
        assert!(err.0.ends_with("config.yaml: trusted_projects: expected a list of directories"), "{err}");
    }

    #[test]
    fn the_project_fingerprint_follows_the_content_of_its_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("more.json"), r#"{"mcpServers": {"b": {"command": "b"}}}"#).unwrap();
        let y = "mcp:\n  import: [more.json]\n  servers:\n    a:\n      command: a\n";
        let c = load(dir.path(), y, &[]).unwrap();
        assert_eq!(c.project.servers, ["a", "b"]);
        assert_eq!(c.project.files.len(), 2);
        let before = c.project.fingerprint();
        assert_eq!(load(dir.path(), y, &[]).unwrap().project.fingerprint(), before);
        std::fs::write(dir.path().join("more.json"), r#"{"mcpServers": {"b": {"command": "c"}}}"#).unwrap();
        assert_ne!(load(dir.path(), y, &[]).unwrap().project.fingerprint(), before, "an imported file changed");
        let c = load(dir.path(), "mcp:\n  code_execution:\n    tsc: ./node_modules/.bin/tsc\n", &[]).unwrap();
        assert!(c.project.sets_tsc && c.project.runs_anything());
        assert_eq!(c.mcp.code_execution.tsc, Some(dir.path().join("node_modules/.bin/tsc")));
    }
}
