//! The MCP manager: live rmcp client connections to any number of configured servers.
//!
//! Servers start lazily (only what a command needs), each under its own connect timeout; a
//! server that fails is reported with its name, the reason and the tail of its stderr (which
//! goes to `<workspace>/logs/<server>.stderr.log`, never to the user's terminal). Calls are
//! validated against the tool's `inputSchema`, bounded by the server's `call_timeout`, and a
//! server that died is restarted on the next call. Each stdio server runs in its own process
//! group so shutdown (or drop) leaves no orphans, including grandchildren such as `npx` → `node`.
//!
//! This is the one place tool calls go through: the CLI, the bridge and direct mode all use it.

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value};
use tokio::sync::Mutex;

use super::approval::{Approvals, Approver};
use super::call::CallContext;
use super::catalog::{Catalog, SearchResult};
use super::handler::{ClientEvents, McpClientHandler};
use super::stdio::{ChildTransport, ResultCap, all_in_flight_failed, size_label};
use super::tools::ToolInfo;
use super::usage::Usage;
use crate::config::{Config, ServerConfig, Transport};
use crate::search::embed::Embedder;

/// Why a server or a call failed. The `Display` form is the one-line message users see.
#[derive(Debug, Clone, thiserror::Error)]
pub enum McpError {
    #[error("unknown server `{name}`{}", did_you_mean_or_list(suggestions, configured))]
    UnknownServer { name: String, suggestions: Vec<String>, configured: Vec<String> },
    #[error("server `{0}` is disabled in the configuration (`disabled: true`)")]
    Disabled(String),
    #[error("unknown tool `{server}.{tool}`{}", qualified_hint(server, suggestions))]
    UnknownTool { server: String, tool: String, suggestions: Vec<String> },
    #[error("invalid arguments for `{server}.{tool}`:\n{}", bullet(violations))]
    InvalidArguments { server: String, tool: String, violations: Vec<String> },
    #[error("server `{server}` failed to start: {reason}{}", stderr_suffix(stderr))]
    Start { server: String, reason: String, stderr: Vec<String> },
    #[error("`{server}.{tool}` timed out after {}", humantime::format_duration(*timeout))]
    Timeout { server: String, tool: String, timeout: Duration },
    #[error("server `{server}` failed during `{tool}`: {reason}{}", stderr_suffix(stderr))]
    Call { server: String, tool: String, reason: String, stderr: Vec<String> },
    #[error("result of {server}.{tool} is larger than the {} limit", size_label(*limit))]
    ResultTooLarge { server: String, tool: String, limit: usize },
}

fn qualified_hint(server: &str, tools: &[String]) -> String {
    let qualified: Vec<String> = tools.iter().map(|t| format!("{server}.{t}")).collect();
    crate::util::suggest::did_you_mean(&qualified)
}

fn bullet(lines: &[String]) -> String {
    lines.iter().map(|l| format!("  - {l}")).collect::<Vec<_>>().join("\n")
}

fn did_you_mean_or_list(suggestions: &[String], configured: &[String]) -> String {
    if !suggestions.is_empty() {
        crate::util::suggest::did_you_mean(suggestions)
    } else if configured.is_empty() {
        "; no servers are configured (see config.sample.yaml)".into()
    } else {
        format!("; configured: {}", configured.join(", "))
    }
}

fn stderr_suffix(lines: &[String]) -> String {
    if lines.is_empty() { String::new() } else { format!(" (stderr: {})", lines.join(" | ")) }
}

/// How many stderr lines a start/call error quotes.
const STDERR_TAIL_LINES: usize = 5;
/// Grace period between SIGTERM and SIGKILL at shutdown.
const KILL_GRACE: Duration = Duration::from_millis(1500);
/// Log files over this size are truncated when their server starts again.
const MAX_LOG_BYTES: u64 = 4 << 20;

/// What [`McpManager::start_servers`] found: sorted by server name.
#[derive(Debug, Default)]
pub struct Started {
    /// The tools of the servers that started.
    pub tools: Vec<ToolInfo>,
    /// The servers that started.
    pub ok: Vec<String>,
    /// The servers that did not, with the reason.
    pub failed: Vec<(String, McpError)>,
}

/// A live connection to one server.
pub struct Connection {
    service: RunningService<RoleClient, McpClientHandler>,
    tools: std::sync::RwLock<Arc<Vec<ToolInfo>>>,
    tools_stale: Arc<AtomicBool>,
    validators: StdMutex<HashMap<String, Arc<Option<jsonschema::Validator>>>>,
    /// Process group of a stdio server (its pid; the child leads its own group).
    pgid: Option<i32>,
    /// Where this run's stderr starts in the log file.
    log_offset: u64,
    /// The size limit of the server's messages (enforced on stdio by `stdio::CappedReader`).
    cap: Arc<ResultCap>,
    /// Time spent waiting for the user or the host's model (not counted by `call_timeout`).
    clock: Arc<super::host::PauseClock>,
    pub started_at: Instant,
}

impl Connection {
    pub fn tools(&self) -> Arc<Vec<ToolInfo>> {
        self.tools.read().map(|t| t.clone()).unwrap_or_default()
    }

    fn is_alive(&self) -> bool {
        // A stdio server that exited between calls may not have closed the transport yet.
        !self.service.is_closed() && self.pgid.is_none_or(process_alive)
    }
}

struct ServerSlot {
    name: String,
    config: ServerConfig,
    conn: Mutex<Option<Arc<Connection>>>,
}

/// A catalog and the tool lists it was built from (kept, so their pointers identify them).
type BuiltCatalog = (Vec<Arc<Vec<ToolInfo>>>, Arc<Catalog>);

/// Holds the configured servers and their live connections.
pub struct McpManager {
    slots: BTreeMap<String, Arc<ServerSlot>>,
    log_dir: PathBuf,
    events: ClientEvents,
    /// Process groups of live stdio servers, for the synchronous kill in `Drop`.
    pgids: Arc<StdMutex<HashMap<String, i32>>>,
    /// `mcp.max_result_bytes`.
    max_result_bytes: usize,
    /// The last catalog [`McpManager::catalog`] built, with the tool lists it was built from.
    catalog: StdMutex<Option<BuiltCatalog>>,
    /// Servers that failed to start while a catalog was built: later catalogs skip them (a call
    /// still tries to start them).
    catalog_failed: StdMutex<BTreeMap<String, McpError>>,
    /// Successful calls per tool (`search.usage`), the search's usage prior.
    usage: Usage,
    /// `search.embeddings`: semantic ranking, until the endpoint fails once (then words only).
    embedder: Option<Embedder>,
    embeddings_failed: AtomicBool,
    /// Told about every successful call (see [`CallObserver`]).
    observer: std::sync::RwLock<Option<Arc<dyn CallObserver>>>,
    /// Who answers elicitation and sampling (installed by the CLI; see `host`).
    host: Arc<super::host::Host>,
    /// `mcp.approvals`: asked before a call runs (see [`super::approval`]).
    approvals: Approvals,
}

/// Told about every tool call that returned a result that is not an error (`isError`), from
/// every path (CLI, direct mode, the bridge). How the type registry learns result shapes
/// while the manager knows nothing of it. Runs on the call path: implementations must only
/// hand the result over (e.g. to a channel) and return.
pub trait CallObserver: Send + Sync {
    fn finished(&self, tool: &ToolInfo, result: &CallToolResult);
}

impl McpManager {
    /// Creates the manager; no server is started until it is needed.
    pub fn new(config: &Config) -> McpManager {
        Self::with_log_dir(config, config.mcp.code_execution.workspace_dir.join("logs"))
    }

    pub fn with_log_dir(config: &Config, log_dir: PathBuf) -> McpManager {
        let usage = config.search.usage.then(|| config.mcp.code_execution.workspace_dir.join(super::usage::FILE));
        let slots = config
            .mcp
            .servers
            .iter()
            .map(|(name, cfg)| {
                (name.clone(), Arc::new(ServerSlot { name: name.clone(), config: cfg.clone(), conn: Mutex::new(None) }))
            })
            .collect();
        McpManager {
            slots,
            log_dir,
            events: ClientEvents::default(),
            pgids: Default::default(),
            max_result_bytes: config.mcp.max_result_bytes,
            catalog: Default::default(),
            catalog_failed: Default::default(),
            usage: Usage::new(usage),
            embedder: super::catalog::embedder(config),
            embeddings_failed: AtomicBool::new(false),
            observer: std::sync::RwLock::new(None),
            host: Default::default(),
            approvals: Approvals::new(&config.mcp.approvals),
        }
    }

    /// Who answers the servers' elicitation and sampling requests.
    pub fn host(&self) -> &Arc<super::host::Host> {
        &self.host
    }

    /// Sets the observer of finished calls (replacing any previous one).
    pub fn set_observer(&self, observer: Arc<dyn CallObserver>) {
        if let Ok(mut o) = self.observer.write() {
            *o = Some(observer);
        }
    }

    /// Sets who approves calls that need approval (without one, `mcp.approvals.policy` decides).
    pub fn set_approver(&self, approver: Arc<dyn Approver>) {
        self.approvals.set_approver(approver);
    }

    /// Receives progress and log notifications from every server (for CLI display).
    pub fn events(&self) -> &ClientEvents {
        &self.events
    }

    /// The usage counts: this process's successful calls, and those of earlier runs
    /// (`Usage::save` merges the former into the workspace's file).
    pub fn usage(&self) -> &Usage {
        &self.usage
    }

    /// Names of the enabled servers, sorted.
    pub fn server_names(&self) -> Vec<String> {
        self.slots.values().filter(|s| !s.config.disabled).map(|s| s.name.clone()).collect()
    }

    /// Names of all configured servers, including disabled ones.
    pub fn configured_names(&self) -> Vec<String> {
        self.slots.keys().cloned().collect()
    }

    /// The configuration of a server, if it is configured.
    pub fn server_config(&self, name: &str) -> Option<&ServerConfig> {
        self.slots.get(name).map(|s| &s.config)
    }

    fn slot(&self, name: &str) -> Result<&Arc<ServerSlot>, McpError> {
        match self.slots.get(name) {
            Some(slot) if slot.config.disabled => Err(McpError::Disabled(name.to_string())),
            Some(slot) => Ok(slot),
            None => Err(McpError::UnknownServer {
                name: name.to_string(),
                suggestions: crate::util::suggest::suggest(name, self.server_names().iter().map(String::as_str)),
                configured: self.server_names(),
            }),
        }
    }

    /// Resolves a server name, with suggestions when it is unknown.
    pub fn check_server(&self, name: &str) -> Result<(), McpError> {
        self.slot(name).map(|_| ())
    }

    /// The live connection to `server`, starting (or restarting) it when needed.
    pub async fn connection(&self, server: &str) -> Result<Arc<Connection>, McpError> {
        let slot = self.slot(server)?.clone();
        let mut guard = slot.conn.lock().await;
        if let Some(conn) = guard.as_ref() {
            if conn.is_alive() {
                return Ok(conn.clone());
            }
            tracing::info!(server, "server connection closed; restarting");
            if let Some(pgid) = conn.pgid {
                kill_group(pgid, libc::SIGKILL);
            }
            *guard = None;
        }
        let conn = Arc::new(self.start(&slot).await?);
        if let Some(pgid) = conn.pgid
            && let Ok(mut map) = self.pgids.lock()
        {
            map.insert(slot.name.clone(), pgid);
        }
        *guard = Some(conn.clone());
        Ok(conn)
    }

    /// The tools of one server (after `tool_white_list`), starting it if needed.
    pub async fn tools(&self, server: &str) -> Result<Arc<Vec<ToolInfo>>, McpError> {
        let conn = self.connection(server).await?;
        self.current_tools(server, &conn).await
    }

    /// `conn`'s tools, re-listed first when the server said its list changed.
    async fn current_tools(&self, server: &str, conn: &Connection) -> Result<Arc<Vec<ToolInfo>>, McpError> {
        if conn.tools_stale.swap(false, Ordering::AcqRel) {
            let slot = self.slot(server)?.clone();
            // A server that announced a change and then never lists its tools must not hang the call.
            let listed = tokio::time::timeout(slot.config.call_timeout, list_tools(&slot, conn))
                .await
                .unwrap_or(Err(Failure::Timeout));
            match listed {
                Ok(tools) => {
                    if let Ok(mut w) = conn.tools.write() {
                        *w = Arc::new(tools);
                    }
                    if let Ok(mut v) = conn.validators.lock() {
                        v.clear();
                    }
                }
                Err(e) => tracing::warn!(server, "refreshing the tool list failed: {}", e.describe(&conn.cap)),
            }
        }
        Ok(conn.tools())
    }

    /// Starts the given servers concurrently and returns each one's tools or error, by name.
    pub async fn tools_of(&self, servers: &[String]) -> Vec<(String, Result<Arc<Vec<ToolInfo>>, McpError>)> {
        let futs = servers.iter().map(|name| async move { (name.clone(), self.tools(name).await) });
        let mut out = futures::future::join_all(futs).await;
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Starts the given servers concurrently and sorts the outcome: the tools of those that
    /// started, and why the others did not. The one place start-up failures are collected; the
    /// callers decide how to report them.
    pub async fn start_servers(&self, servers: &[String]) -> Started {
        let mut out = Started::default();
        for (name, result) in self.tools_of(servers).await {
            match result {
                Ok(tools) => {
                    out.tools.extend(tools.iter().cloned());
                    out.ok.push(name);
                }
                Err(e) => out.failed.push((name, e)),
            }
        }
        out
    }

    /// The searchable catalog of every enabled server's tools, starting the servers not started
    /// yet (a server that failed to start for a catalog once is skipped by later ones, so a
    /// broken server does not slow every search). Built again only when a tool list changed
    /// since the last one: a server announced `tools/list_changed` (its list is re-read here) or
    /// was restarted. Also returns the servers left out and why.
    pub async fn catalog(&self) -> (Arc<Catalog>, Vec<(String, McpError)>) {
        self.catalog_of(&self.server_names()).await
    }

    /// [`McpManager::catalog`] over `servers` only (progressive mode's `--server` selection).
    pub async fn catalog_of(&self, servers: &[String]) -> (Arc<Catalog>, Vec<(String, McpError)>) {
        let skipped: BTreeMap<String, McpError> = self
            .catalog_failed
            .lock()
            .map(|f| f.iter().filter(|(k, _)| servers.contains(k)).map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        let wanted: Vec<String> = servers.iter().filter(|s| !skipped.contains_key(*s)).cloned().collect();
        let mut lists = Vec::new();
        let mut failed: Vec<(String, McpError)> = skipped.into_iter().collect();
        for (name, result) in self.tools_of(&wanted).await {
            match result {
                Ok(list) => lists.push(list),
                Err(e) => {
                    if let Ok(mut f) = self.catalog_failed.lock() {
                        f.insert(name.clone(), e.clone());
                    }
                    failed.push((name, e));
                }
            }
        }
        failed.sort_by(|a, b| a.0.cmp(&b.0));
        if let Ok(cache) = self.catalog.lock()
            && let Some((built_from, catalog)) = cache.as_ref()
            && built_from.len() == lists.len()
            && built_from.iter().zip(&lists).all(|(a, b)| Arc::ptr_eq(a, b))
        {
            return (catalog.clone(), failed);
        }
        let tools: Vec<ToolInfo> = lists.iter().flat_map(|l| l.iter().cloned()).collect();
        let mut catalog = Catalog::build(tools).with_usage(self.usage.earlier());
        if let Some(embedder) = self.embedder()
            && let Err(e) = catalog.embed(embedder).await
        {
            self.embeddings_failed(&e);
        }
        let catalog = Arc::new(catalog);
        if let Ok(mut cache) = self.catalog.lock() {
            *cache = Some((lists, catalog.clone()));
        }
        (catalog, failed)
    }

    /// Searches the catalog of `servers` ([`McpManager::catalog_of`]) for `query`: the best
    /// `limit` tools, of `only` unless it is empty; fused with semantic ranking when
    /// `search.embeddings` is set and its endpoint works (a failure is one warning per process,
    /// and words only from then on). Also returns the servers left out and why.
    pub async fn search(
        &self,
        servers: &[String],
        query: &str,
        limit: usize,
        only: &[String],
    ) -> (Vec<SearchResult>, Vec<(String, McpError)>) {
        let (catalog, failed) = self.catalog_of(servers).await;
        let results = match super::catalog::search_with(&catalog, self.embedder(), query, limit, only).await {
            Ok(r) => r,
            Err((e, lexical)) => {
                self.embeddings_failed(&e);
                lexical
            }
        };
        (results, failed)
    }

    fn embedder(&self) -> Option<&Embedder> {
        self.embedder.as_ref().filter(|_| !self.embeddings_failed.load(Ordering::Acquire))
    }

    fn embeddings_failed(&self, e: &str) {
        if !self.embeddings_failed.swap(true, Ordering::AcqRel) {
            tracing::warn!("the embeddings endpoint failed ({e}); searching by words only");
        }
    }

    /// The index entry of one tool, with a suggestion when it does not exist.
    pub async fn tool(&self, server: &str, tool: &str) -> Result<ToolInfo, McpError> {
        let tools = self.tools(server).await?;
        find_tool(server, tool, &tools).cloned()
    }

    /// The violations of `args` against the tool's `inputSchema`, exactly as [`Self::call_tool`]
    /// would report them (empty: valid), without calling it. For callers that ask before they
    /// call (`agent mcp call --interactive`).
    pub async fn check_arguments(
        &self,
        server: &str,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Result<Vec<String>, McpError> {
        let conn = self.connection(server).await?;
        let tools = self.current_tools(server, &conn).await?;
        Ok(validate(&conn, find_tool(server, tool, &tools)?, args))
    }

    /// Calls a tool: checks that it exists, validates the arguments against its `inputSchema`,
    /// asks for approval when `mcp.approvals` says so (a denial is an `isError` result `denied by
    /// the user: server.tool`), and waits at most the server's `call_timeout`. A tool that reports an error is `Ok` with
    /// `is_error: Some(true)`; `Err` means the call itself failed.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<CallToolResult, McpError> {
        self.call_tool_with(server, tool, args, &CallContext::default()).await
    }

    /// [`Self::call_tool`] with the call's own context: its progress goes to `cx.progress` (as
    /// well as to [`Self::events`]), an elicitation during it asks `cx.asker` first, and
    /// `cx.cancel` stops it (the server is told, as when the returned future is dropped).
    pub async fn call_tool_with(
        &self,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
        cx: &CallContext,
    ) -> Result<CallToolResult, McpError> {
        let conn = self.connection(server).await?;
        let tools = self.current_tools(server, &conn).await?;
        let info = find_tool(server, tool, &tools)?;
        let violations = validate(&conn, info, &args);
        if !violations.is_empty() {
            return Err(McpError::InvalidArguments { server: server.into(), tool: tool.into(), violations });
        }
        // Destructive tools wait for the user's approval; a denial is the tool's error.
        if let Some(denied) = self.approvals.check(info, &args).await {
            return Ok(denied);
        }
        let slot = self.slot(server)?.clone();
        let timeout = slot.config.call_timeout;
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        let too_large = || McpError::ResultTooLarge { server: server.into(), tool: tool.into(), limit: conn.cap.limit };
        // Every round through `call::drive`: per-call progress, `input_required` rounds answered
        // with the call's context, `notifications/cancelled` when dropped.
        let call = capped(&conn.cap, super::call::drive(&conn.service, params, Arc::new(cx.clone())));
        match conn.clock.timeout(timeout, call).await.ok_or(()) {
            Ok(Ok(result)) => {
                if result.is_error != Some(true) {
                    self.usage.record(server, tool);
                    if let Ok(o) = self.observer.read()
                        && let Some(o) = o.as_ref()
                    {
                        o.finished(info, &result);
                    }
                }
                Ok(result)
            }
            Ok(Err(Failure::TooLarge)) => Err(too_large()),
            Ok(Err(Failure::Service(e))) => {
                // Give the transport a moment to notice a dead process so the next call restarts it.
                let died = wait_closed(&conn, Duration::from_millis(200)).await;
                if died {
                    // Forget the dead connection so the next call starts the server again.
                    let mut guard = slot.conn.lock().await;
                    if guard.as_ref().is_some_and(|c| Arc::ptr_eq(c, &conn)) {
                        *guard = None;
                    }
                }
                let reason = if died {
                    format!("the server exited during the call ({})", service_error(&e))
                } else {
                    service_error(&e)
                };
                Err(McpError::Call {
                    server: server.into(),
                    tool: tool.into(),
                    reason,
                    stderr: if died { self.stderr_tail(&slot.name, conn.log_offset) } else { Vec::new() },
                })
            }
            Ok(Err(Failure::Timeout)) | Err(_) => {
                Err(McpError::Timeout { server: server.into(), tool: tool.into(), timeout })
            }
        }
    }

    /// Closes every connection and stops every stdio server (SIGTERM to its process group, then
    /// SIGKILL after a grace period).
    pub async fn shutdown(&self) {
        let mut groups = Vec::new();
        for slot in self.slots.values() {
            let conn = slot.conn.lock().await.take();
            if let Some(conn) = conn {
                conn.service.cancellation_token().cancel();
                if let Some(pgid) = conn.pgid {
                    groups.push(pgid);
                }
            }
        }
        if let Ok(mut map) = self.pgids.lock() {
            map.clear();
        }
        for &g in &groups {
            kill_group(g, libc::SIGTERM);
        }
        let deadline = Instant::now() + KILL_GRACE;
        while groups.iter().any(|&g| group_alive(g)) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for &g in &groups {
            if group_alive(g) {
                kill_group(g, libc::SIGKILL);
            }
        }
    }

    async fn start(&self, slot: &ServerSlot) -> Result<Connection, McpError> {
        let name = slot.name.as_str();
        let cfg = &slot.config;
        let fail = |reason: String, stderr: Vec<String>| McpError::Start { server: name.to_string(), reason, stderr };
        if let Some(first) = cfg.unresolved.first() {
            return Err(fail(first.clone(), Vec::new()));
        }
        let transport = cfg.transport().map_err(|e| fail(e, Vec::new()))?;
        let tools_stale = Arc::new(AtomicBool::new(false));
        let clock = Arc::new(super::host::PauseClock::default());
        let handler = McpClientHandler::new(name, self.events.clone(), tools_stale.clone()).with_host(
            self.host.clone(),
            cfg.clone(),
            clock.clone(),
        );
        let timeout = cfg.connect_timeout;
        let cap = ResultCap::new(self.max_result_bytes);
        let started_at = Instant::now();
        let (service, pgid, log_offset) = match transport {
            Transport::Sse => {
                return Err(fail(
                    "it uses the legacy HTTP+SSE transport, which is not supported; point `url` at the server's \
                     Streamable HTTP endpoint (often `/mcp`) or run it behind a proxy such as `mcp-proxy`"
                        .into(),
                    Vec::new(),
                ));
            }
            Transport::Http => {
                let url = cfg.url.clone().unwrap_or_default();
                let mut headers = HashMap::new();
                for (k, v) in &cfg.headers {
                    let hn = http::HeaderName::from_bytes(k.as_bytes())
                        .map_err(|_| fail(format!("invalid header name `{k}`"), Vec::new()))?;
                    let hv = http::HeaderValue::from_str(v)
                        .map_err(|_| fail(format!("invalid value for header `{k}`"), Vec::new()))?;
                    headers.insert(hn, hv);
                }
                let tcfg = StreamableHttpClientTransportConfig::with_uri(url.clone())
                    .custom_headers(headers)
                    .max_json_response_size(self.max_result_bytes)
                    .max_sse_event_size(self.max_result_bytes);
                let transport = StreamableHttpClientTransport::from_config(tcfg);
                let service = match tokio::time::timeout(
                    timeout,
                    handler.serve_with_lifecycle(transport, lifecycle(cfg.handshake)),
                )
                .await
                {
                    Ok(Ok(s)) => s,
                    Ok(Err(e)) => return Err(fail(format!("cannot connect to {url}: {}", init_error(&e)), Vec::new())),
                    Err(_) => {
                        return Err(fail(
                            format!("no answer from {url} within {}", humantime::format_duration(timeout)),
                            Vec::new(),
                        ));
                    }
                };
                (service, None, 0)
            }
            Transport::Stdio => {
                let command = cfg.command.clone().unwrap_or_default();
                let (log, log_offset) = self.open_log(name).map_err(|e| fail(e, Vec::new()))?;
                let mut cmd = tokio::process::Command::new(&command);
                cmd.args(&cfg.args).envs(&cfg.envs).kill_on_drop(true);
                if let Some(cwd) = &cfg.cwd {
                    cmd.current_dir(cwd);
                }
                cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::from(log));
                let mut wrap = process_wrap::tokio::CommandWrap::from(cmd);
                wrap.wrap(process_wrap::tokio::ProcessGroup::leader());
                let spawned = wrap.spawn().and_then(|c| ChildTransport::new(c, cap.clone(), name));
                let child = spawned.map_err(|e| {
                    let reason = match e.kind() {
                        std::io::ErrorKind::NotFound => format!("command `{command}` not found"),
                        std::io::ErrorKind::PermissionDenied => format!("command `{command}` is not executable"),
                        _ => format!("cannot run `{command}`: {e}"),
                    };
                    fail(reason, Vec::new())
                })?;
                let pgid = child.id().map(|p| p as i32);
                let served =
                    tokio::time::timeout(timeout, handler.serve_with_lifecycle(child, lifecycle(cfg.handshake))).await;
                let service = match served {
                    Ok(Ok(s)) => s,
                    other => {
                        if let Some(g) = pgid {
                            kill_group(g, libc::SIGKILL);
                        }
                        // Let the child's last words reach the log file.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        let reason = match other {
                            Ok(Err(e)) => format!("the MCP handshake failed: {}", init_error(&e)),
                            _ => format!(
                                "no MCP handshake within {} (connect_timeout)",
                                humantime::format_duration(timeout)
                            ),
                        };
                        return Err(fail(reason, self.stderr_tail(name, log_offset)));
                    }
                };
                (service, pgid, log_offset)
            }
        };
        let conn = Connection {
            service,
            tools: Default::default(),
            tools_stale,
            validators: Default::default(),
            pgid,
            log_offset,
            cap,
            clock,
            started_at,
        };
        let remaining = timeout.saturating_sub(started_at.elapsed()).max(Duration::from_secs(1));
        match tokio::time::timeout(remaining, list_tools(slot, &conn)).await {
            Ok(Ok(tools)) => {
                if let Ok(mut w) = conn.tools.write() {
                    *w = Arc::new(tools);
                }
                // A list_changed that raced the first listing is already reflected in it.
                conn.tools_stale.store(false, Ordering::Release);
                tracing::info!(server = name, elapsed = ?started_at.elapsed(), "server ready");
                Ok(conn)
            }
            other => {
                conn.service.cancellation_token().cancel();
                if let Some(g) = conn.pgid {
                    kill_group(g, libc::SIGKILL);
                }
                let reason = match other {
                    Ok(Err(e)) => format!("tools/list failed: {}", e.describe(&conn.cap)),
                    _ => "tools/list did not answer within connect_timeout".to_string(),
                };
                Err(fail(reason, self.stderr_tail(name, log_offset)))
            }
        }
    }

    fn log_path(&self, server: &str) -> PathBuf {
        self.log_dir.join(format!("{}.stderr.log", sanitize_file_name(server)))
    }

    /// Opens the server's stderr log for appending; returns it and the offset this run starts at.
    fn open_log(&self, server: &str) -> Result<(std::fs::File, u64), String> {
        std::fs::create_dir_all(&self.log_dir)
            .map_err(|e| format!("cannot create the log directory {}: {e}", self.log_dir.display()))?;
        let path = self.log_path(server);
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
    fn stderr_tail(&self, server: &str, offset: u64) -> Vec<String> {
        tail_lines(&self.log_path(server), offset, STDERR_TAIL_LINES)
    }

    /// Path of a server's stderr log (for messages that point the user at it).
    pub fn log_file(&self, server: &str) -> PathBuf {
        self.log_path(server)
    }
}

/// rmcp's lifecycle for a server's `handshake` key.
fn lifecycle(h: crate::config::Handshake) -> rmcp::service::ClientLifecycleMode {
    use crate::config::Handshake;
    use rmcp::model::ProtocolVersion;
    use rmcp::service::ClientLifecycleMode;
    match h {
        Handshake::Initialize => ClientLifecycleMode::Initialize,
        Handshake::Discover => {
            ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }
        }
        Handshake::Auto => {
            ClientLifecycleMode::Auto { preferred_versions: vec![ProtocolVersion::V_2026_07_28], legacy_version: None }
        }
    }
}

impl Drop for McpManager {
    fn drop(&mut self) {
        // Last resort when `shutdown` was not awaited (early error, panic): no orphans.
        if let Ok(map) = self.pgids.lock() {
            for &g in map.values() {
                kill_group(g, libc::SIGKILL);
            }
        }
    }
}

/// Why a request to a server got no usable answer.
enum Failure {
    /// Its answer was over `mcp.max_result_bytes` and was dropped (see `stdio`).
    TooLarge,
    Timeout,
    Service(rmcp::ServiceError),
}

impl Failure {
    fn describe(&self, cap: &ResultCap) -> String {
        match self {
            Failure::TooLarge => format!("the answer is larger than the {} limit", size_label(cap.limit)),
            Failure::Timeout => "no answer in time".into(),
            Failure::Service(e) => service_error(e),
        }
    }
}

/// Runs one request to a server and fails it at once when its answer was dropped for its size.
async fn capped<T>(
    cap: &ResultCap,
    request: impl Future<Output = Result<T, rmcp::ServiceError>>,
) -> Result<T, Failure> {
    // Subscribed before the request is sent, so a drop while it is in flight is seen.
    let mut dropped = cap.subscribe();
    tokio::select! {
        r = request => match r {
            Ok(v) => Ok(v),
            Err(rmcp::ServiceError::McpError(e)) if cap.is_ours(&e) => Err(Failure::TooLarge),
            Err(e) => Err(Failure::Service(e)),
        },
        () = all_in_flight_failed(&mut dropped) => Err(Failure::TooLarge),
    }
}

async fn list_tools(slot: &ServerSlot, conn: &Connection) -> Result<Vec<ToolInfo>, Failure> {
    let tools = capped(&conn.cap, conn.service.list_all_tools()).await?;
    let white = slot.config.tool_white_list.as_ref();
    let mut out: Vec<ToolInfo> = tools
        .iter()
        .filter(|t| white.is_none_or(|w| w.iter().any(|n| n == t.name.as_ref())))
        .map(|t| ToolInfo::from_rmcp(&slot.name, t))
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

async fn wait_closed(conn: &Connection, max: Duration) -> bool {
    let deadline = Instant::now() + max;
    loop {
        if conn.service.is_closed() {
            return true;
        }
        if let Some(g) = conn.pgid
            && !process_alive(g)
        {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// One line for a failed request, without the transport's Rust type name.
fn service_error(e: &rmcp::ServiceError) -> String {
    use rmcp::ServiceError as E;
    match e {
        E::TransportSend(t) => format!("cannot send the request: {}", error_chain(t.error.as_ref())),
        other => one_line(&other.to_string()),
    }
}

/// One line for a failed MCP handshake, without rmcp's type names or message dumps.
fn init_error(e: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::service::ClientInitializeError as E;
    match e {
        E::ConnectionClosed(_) => "the server closed the connection (it exited or is not an MCP server)".into(),
        E::TransportError { error, .. } => error_chain(error.error.as_ref()),
        E::ExpectedInitResponse(_) | E::ExpectedInitResult(_) => {
            "the server did not answer `initialize` with its capabilities (is it an MCP server?)".into()
        }
        E::JsonRpcError(data) => format!("the server refused `initialize`: {}", one_line(&data.message)),
        E::LegacyFallbackFailed { fallback, .. } => init_error(fallback),
        other => one_line(&other.to_string()),
    }
}

/// The most telling line of an error and its causes: `connection refused`, `dns error: ...`,
/// `HTTP 404 Not Found`, a TLS error. Transport wrappers (whose messages name Rust types) and
/// HTTP client boilerplate (`error sending request for url ...`) are skipped.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let mut chain = Vec::new();
    let mut cur = Some(e);
    while let Some(c) = cur {
        chain.push(c);
        // rmcp's HTTP client error does not expose reqwest's error as its source.
        cur = match c.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            Some(StreamableHttpError::Client(inner)) => Some(inner as &(dyn std::error::Error + 'static)),
            _ => c.source(),
        };
    }
    if let Some(io) = chain.iter().find_map(|c| c.downcast_ref::<std::io::Error>()) {
        use std::io::ErrorKind as K;
        let known = match io.kind() {
            K::ConnectionRefused => Some("connection refused"),
            K::ConnectionReset => Some("connection reset by the server"),
            K::ConnectionAborted => Some("connection aborted"),
            K::TimedOut => Some("connection timed out"),
            K::HostUnreachable => Some("host unreachable"),
            K::NetworkUnreachable => Some("network unreachable"),
            K::BrokenPipe => Some("the server closed the connection"),
            _ => None,
        };
        if let Some(k) = known {
            return k.into();
        }
    }
    let texts: Vec<String> = chain.iter().map(|c| lower_first(one_line(&c.to_string()))).collect();
    let Some(innermost) = texts.last() else { return String::new() };
    let innermost = innermost.clone();
    // `unexpected server response: HTTP 404 Not Found: <body>`: the status says it.
    if let Some(rest) = innermost.strip_prefix("unexpected server response: HTTP ") {
        let status = rest.split(": ").next().unwrap_or(rest);
        return format!("the server answered HTTP {status}");
    }
    // hyper-util says `dns error` and puts the resolver's message below it.
    if texts.iter().any(|t| t == "dns error") && innermost != "dns error" {
        return format!("DNS lookup failed: {innermost}");
    }
    innermost
}

/// The first line of `s`, at most 300 characters, without ` (os error N)`.
fn one_line(s: &str) -> String {
    let mut line: String = s.lines().next().unwrap_or_default().chars().take(300).collect();
    if let Some(i) = line.find(" (os error ") {
        line.truncate(i);
    }
    line
}

/// `Connection reset` → `connection reset` (a cause read after a colon); `HTTP`, `TLS` stay.
fn lower_first(s: String) -> String {
    let mut chars = s.chars();
    match (chars.next(), chars.next()) {
        (Some(a), Some(b)) if a.is_ascii_uppercase() && b.is_ascii_lowercase() => {
            format!("{}{}", a.to_ascii_lowercase(), &s[1..])
        }
        _ => s,
    }
}

/// Validates `args` against the tool's input schema; one line per violation, with its path.
fn validate(conn: &Connection, info: &ToolInfo, args: &Map<String, Value>) -> Vec<String> {
    let validator = {
        let Ok(mut cache) = conn.validators.lock() else { return Vec::new() };
        cache
            .entry(info.name.clone())
            .or_insert_with(|| {
                Arc::new(match jsonschema::validator_for(&info.input_schema) {
                    Ok(v) => Some(v),
                    Err(e) => {
                        tracing::warn!(tool = %info.qualified_name(), "input schema not usable for validation: {e}");
                        None
                    }
                })
            })
            .clone()
    };
    let Some(v) = validator.as_ref() else { return Vec::new() };
    let instance = Value::Object(args.clone());
    v.iter_errors(&instance)
        .map(|err| {
            let path = err.instance_path().to_string();
            let path = if path.is_empty() { "(root)".to_string() } else { path };
            format!("{path}: {err}")
        })
        .collect()
}

fn sanitize_file_name(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

/// The last `n` non-empty lines of `path` from byte `offset` on (reads at most the last 64 KB).
pub fn tail_lines(path: &Path, offset: u64, n: usize) -> Vec<String> {
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

fn kill_group(pgid: i32, signal: i32) {
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
        let Some(stat) = proc_stat(pid) else { return false };
        // Fields after the `(comm)`: state, ppid, pgrp, ...
        let mut rest = stat.rsplit_once(')').map(|(_, r)| r.split_whitespace()).into_iter().flatten();
        let state = rest.next();
        let pgrp = rest.nth(1).and_then(|s| s.parse::<i32>().ok());
        pgrp == Some(pgid) && !matches!(state, Some("Z") | Some("X"))
    })
}

/// The index entry named `tool`, or `UnknownTool` with suggestions.
fn find_tool<'a>(server: &str, tool: &str, tools: &'a [ToolInfo]) -> Result<&'a ToolInfo, McpError> {
    tools.iter().find(|t| t.name == tool).ok_or_else(|| McpError::UnknownTool {
        server: server.to_string(),
        tool: tool.to_string(),
        suggestions: crate::util::suggest::suggest(tool, tools.iter().map(|t| t.name.as_str())),
    })
}

fn process_alive(pid: i32) -> bool {
    if pid <= 1 {
        return false;
    }
    // A zombie still "exists" for kill(0); look at its state instead.
    match proc_stat(pid) {
        Some(stat) => {
            let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X") | None)
        }
        None => false,
    }
}

/// `/proc/<pid>/stat` in one read (it is checked before every call; `read_to_string` would
/// take five reads, since procfs reports a size of 0).
fn proc_stat(pid: i32) -> Option<String> {
    use std::io::Read;
    let mut buf = [0u8; 1024];
    let n = std::fs::File::open(format!("/proc/{pid}/stat")).ok()?.read(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf[..n]).into_owned())
}
