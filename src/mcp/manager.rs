//! The MCP manager: the configured servers, their live connections, and the calls that go through
//! them.
//!
//! Servers start lazily (only what a command needs, see `connect`), each under its own connect
//! timeout. Calls are validated against the tool's `inputSchema`, approved when `mcp.approvals`
//! says so, bounded by the server's `call_timeout`, and a server that died is restarted on the
//! next call. Every successful call is told to the [`CallObserver`]s (usage counts, learned
//! types). Each stdio server runs in its own process group (`process`), so shutdown (or drop)
//! leaves no orphans, including grandchildren such as `npx` → `node`.
//!
//! This is the one place tool calls go through: the CLI, the bridge, direct mode and `serve`
//! all use it.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex as StdMutex, RwLock};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Map, Value};
use tokio::sync::Mutex;

use super::approval::{Approvals, Approver};
use super::catalog::{Catalog, Catalogs, LeftOut, SearchResult};
use super::connect::{Connection, Env, Failure, capped, connect, list_tools, validate, wait_closed};
use super::context::CallContext;
use super::error::{McpError, service_error};
use super::handler::ClientEvents;
use super::observe::CallObserver;
use super::process::{Logs, kill_group};
use super::tools::ToolInfo;
use super::usage::Usage;
use crate::config::{Config, ServerConfig};

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

struct ServerSlot {
    name: String,
    config: ServerConfig,
    conn: Mutex<Option<Arc<Connection>>>,
}

/// Sign-ins for more scopes one call makes at most (the spec's retry limit).
pub const MAX_STEP_UPS: u32 = 3;

/// Holds the configured servers and their live connections.
pub struct McpManager {
    slots: BTreeMap<String, Arc<ServerSlot>>,
    logs: Logs,
    events: ClientEvents,
    /// Process groups of live stdio servers, for the synchronous kill in `Drop`.
    pgids: Arc<StdMutex<HashMap<String, i32>>>,
    /// What marks this manager's server processes (and stops what a killed `agent` left).
    run: super::reap::Run,
    /// `mcp.max_result_bytes`.
    max_result_bytes: usize,
    /// The searchable catalog, kept while no tool list changes.
    catalogs: Catalogs,
    /// Successful calls per tool (`search.usage`): the first observer, and the search's prior.
    usage: Arc<Usage>,
    /// Told about every successful call, in order.
    observers: RwLock<Vec<Arc<dyn CallObserver>>>,
    /// Who answers elicitation and sampling (installed by the CLI; see `host`).
    host: Arc<super::host::Host>,
    /// `mcp.approvals`: asked before a call runs (see [`super::approval`]).
    approvals: Approvals,
    /// This user's OAuth tokens (`None` without a configuration directory).
    tokens: Option<super::auth::store::TokenStore>,
    /// `<workspace>/.tools_cache.json`, where [`Self::save_tool_lists`] keeps the lists got here.
    saved_file: PathBuf,
    /// The latest tool list of each server this manager listed.
    listed: StdMutex<BTreeMap<String, Arc<Vec<ToolInfo>>>>,
}

impl McpManager {
    /// Creates the manager; no server is started until it is needed.
    pub fn new(config: &Config) -> McpManager {
        Self::with_log_dir(config, config.mcp.code_execution.workspace_dir.join("logs"))
    }

    pub fn with_log_dir(config: &Config, log_dir: PathBuf) -> McpManager {
        let usage = config.search.usage.then(|| config.mcp.code_execution.workspace_dir.join(super::usage::FILE));
        let usage = Arc::new(Usage::new(usage));
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
            run: super::reap::Run::new(&log_dir),
            logs: Logs::new(log_dir),
            events: ClientEvents::default(),
            pgids: Default::default(),
            max_result_bytes: config.mcp.max_result_bytes,
            catalogs: Catalogs::new(config, usage.clone()),
            observers: RwLock::new(vec![usage.clone() as Arc<dyn CallObserver>]),
            usage,
            host: Default::default(),
            approvals: Approvals::new(&config.mcp.approvals),
            tokens: super::auth::store::TokenStore::for_user().ok(),
            saved_file: config.mcp.code_execution.workspace_dir.join(super::saved::FILE),
            listed: StdMutex::new(BTreeMap::new()),
        }
    }

    /// Who answers the servers' elicitation and sampling requests.
    pub fn host(&self) -> &Arc<super::host::Host> {
        &self.host
    }

    /// Adds an observer of successful calls (after the usage counts, which are always one).
    pub fn add_observer(&self, observer: Arc<dyn CallObserver>) {
        if let Ok(mut o) = self.observers.write() {
            o.push(observer);
        }
    }

    /// Sets who approves calls that need approval (without one, `mcp.approvals.policy` decides).
    pub fn set_approver(&self, approver: Arc<dyn Approver>) {
        self.approvals.set_approver(approver);
    }

    /// What a call denied by `mcp.approvals.policy` for want of a terminal tells the user to do
    /// (by default: pass `--yes` or set `mcp.approvals`).
    pub fn set_no_terminal_fix(&self, fix: &'static str) {
        self.approvals.set_no_terminal_fix(fix);
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
        let env = Env {
            events: &self.events,
            host: &self.host,
            logs: &self.logs,
            run: &self.run,
            max_result_bytes: self.max_result_bytes,
            tokens: &self.tokens,
        };
        let conn = Arc::new(connect(&slot.name, &slot.config, &env).await?);
        if let Some(pgid) = conn.pgid
            && let Ok(mut map) = self.pgids.lock()
        {
            map.insert(slot.name.clone(), pgid);
        }
        *guard = Some(conn.clone());
        Ok(conn)
    }

    /// The live connection to `server` if it is running; never starts it.
    pub(super) async fn running(&self, server: &str) -> Option<Arc<Connection>> {
        let slot = self.slot(server).ok()?;
        slot.conn.lock().await.as_ref().filter(|c| c.is_alive()).cloned()
    }

    /// The tools of one server (after `tool_white_list`), starting it if needed.
    pub async fn tools(&self, server: &str) -> Result<Arc<Vec<ToolInfo>>, McpError> {
        let conn = self.connection(server).await?;
        let tools = self.current_tools(server, &conn).await?;
        if let Ok(mut listed) = self.listed.lock() {
            listed.insert(server.to_string(), tools.clone());
        }
        Ok(tools)
    }

    /// Merges the tool lists this manager got into `<workspace>/.tools_cache.json` (see
    /// `saved`), for commands that answer without starting servers.
    pub fn save_tool_lists(&self) -> std::io::Result<()> {
        let listed = self.listed.lock().map(|l| l.clone()).unwrap_or_default();
        let entries = listed
            .into_iter()
            .filter_map(|(name, tools)| {
                let slot = self.slots.get(&name)?;
                Some((name, super::saved::Entry::new(&slot.config, tools.as_ref().clone())))
            })
            .collect();
        super::saved::save(&self.saved_file, entries, &self.configured_names())
    }

    /// Where [`Self::save_tool_lists`] writes.
    pub fn saved_file(&self) -> &std::path::Path {
        &self.saved_file
    }

    /// `conn`'s tools, re-listed first when the server said its list changed.
    async fn current_tools(&self, server: &str, conn: &Connection) -> Result<Arc<Vec<ToolInfo>>, McpError> {
        if conn.tools_stale.swap(false, Ordering::AcqRel) {
            let slot = self.slot(server)?.clone();
            // A server that announced a change and then never lists its tools must not hang the call.
            let listed = tokio::time::timeout(slot.config.call_timeout, list_tools(&slot.name, &slot.config, conn))
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
    /// yet (a server that failed to start for a catalog once is skipped by later ones). Built
    /// again only when a tool list changed since the last one: a server announced
    /// `tools/list_changed` (its list is re-read here) or was restarted. Also returns the servers
    /// left out and why.
    pub async fn catalog(&self) -> (Arc<Catalog>, LeftOut) {
        self.catalog_of(&self.server_names()).await
    }

    /// [`McpManager::catalog`] over `servers` only (progressive mode's `--server` selection).
    pub async fn catalog_of(&self, servers: &[String]) -> (Arc<Catalog>, LeftOut) {
        let mut failed = self.catalogs.skipped(servers);
        let wanted: Vec<String> = servers.iter().filter(|s| !failed.iter().any(|(f, _)| f == *s)).cloned().collect();
        let mut lists = Vec::new();
        for (name, result) in self.tools_of(&wanted).await {
            match result {
                Ok(list) => lists.push(list),
                Err(e) => {
                    self.catalogs.skip(&name, &e);
                    failed.push((name, e));
                }
            }
        }
        failed.sort_by(|a, b| a.0.cmp(&b.0));
        (self.catalogs.of_lists(lists).await, failed)
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
    ) -> (Vec<SearchResult>, LeftOut) {
        let (catalog, failed) = self.catalog_of(servers).await;
        (self.catalogs.search(&catalog, query, limit, only).await, failed)
    }

    /// The catalog cache (to add tools that are no server's).
    pub fn catalogs(&self) -> &Catalogs {
        &self.catalogs
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

    /// Drops the connection to `server` (if any), so the next call connects again: with the
    /// tokens of a sign-in that happened since, say.
    pub async fn disconnect(&self, server: &str) {
        if let Ok(slot) = self.slot(server)
            && let Some(conn) = slot.conn.lock().await.take()
        {
            conn.service.cancellation_token().cancel();
        }
    }

    /// [`Self::call_tool`] with the call's own context: its progress goes to `cx.progress` (as
    /// well as to [`Self::events`]), an elicitation during it asks `cx.asker` first, and
    /// `cx.cancel` stops it (the server is told, as when the returned future is dropped).
    ///
    /// A `403 insufficient_scope` with a [`super::host::Signer`] installed (a terminal) signs the
    /// user in again for the granted plus the required scopes and retries, at most
    /// [`MAX_STEP_UPS`] times (the spec's retry limit), with the call and script timeouts paused
    /// while the user signs in; without one it is the caller's error (exit code 3).
    pub async fn call_tool_with(
        &self,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
        cx: &CallContext,
    ) -> Result<CallToolResult, McpError> {
        // Without a signer (no terminal, `serve`) there is no retry, and the arguments are not copied.
        let Some(signer) = self.host.signer() else { return self.call_signed_in(server, tool, args, cx).await };
        let mut step_ups = 0;
        loop {
            let result = self.call_signed_in(server, tool, args.clone(), cx).await;
            let Err(McpError::NeedsSignIn { scopes: Some(scopes), .. }) = &result else { return result };
            if step_ups >= MAX_STEP_UPS {
                return result;
            }
            step_ups += 1;
            let signed = {
                let _paused = crate::util::clock::user_wait().pause();
                signer.sign_in(server, scopes, step_ups).await
            };
            if let Err(e) = signed {
                tracing::warn!("{e}");
                return result;
            }
            self.disconnect(server).await;
        }
    }

    async fn call_signed_in(
        &self,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
        cx: &CallContext,
    ) -> Result<CallToolResult, McpError> {
        // A machine identity's token expires without a refresh token: on the server's `401`
        // the connection is made again, which fetches a new token, and the call is retried once.
        let machine =
            self.slot(server).is_ok_and(|s| s.config.auth.grant == crate::config::AuthGrant::ClientCredentials);
        // The call's own future lives on the heap: it is large (the call's rounds, its timeout, its
        // cap), and two of them inline made `serve`'s worker threads overflow their stack in a
        // debug build when a machine identity's token expired.
        if !machine {
            return Box::pin(self.call_once(server, tool, args, cx)).await;
        }
        match Box::pin(self.call_once(server, tool, args.clone(), cx)).await {
            Err(McpError::NeedsSignIn { scopes: None, .. }) => {
                self.disconnect(server).await;
                Box::pin(self.call_once(server, tool, args, cx)).await
            }
            other => other,
        }
    }

    async fn call_once(
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
        if let Some(denied) = self.approvals.check(info, &args, cx.approval.as_deref()).await {
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
                if result.is_error != Some(true)
                    && let Ok(observers) = self.observers.read()
                {
                    for o in observers.iter() {
                        o.finished(info, &result);
                    }
                }
                Ok(result)
            }
            Ok(Err(Failure::TooLarge)) => Err(too_large()),
            Ok(Err(Failure::Service(e))) => {
                // A `401` that a refresh could not cure, or a `403 insufficient_scope` (the hint
                // then asks for the granted scopes plus the required ones).
                if let Some(sign_in) = super::error::sign_in_needed(server, &e) {
                    return Err(match (sign_in, &self.tokens, &slot.config.url) {
                        (McpError::NeedsSignIn { server, scopes: Some(required) }, Some(store), Some(url)) => {
                            let scopes = Some(super::auth::step_up_scopes(store, url, &required));
                            McpError::NeedsSignIn { server, scopes }
                        }
                        (other, _, _) => other,
                    });
                }
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
                    stderr: if died { self.logs.tail(&slot.name, conn.log_offset) } else { Vec::new() },
                })
            }
            Ok(Err(Failure::Timeout)) | Err(_) => {
                Err(McpError::Timeout { server: server.into(), tool: tool.into(), timeout })
            }
        }
    }

    /// Closes every connection and stops every stdio server (SIGTERM to its process group and to
    /// the processes marked as this manager's, then SIGKILL after a grace period).
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
        super::process::stop_groups(&groups, &self.run).await;
    }

    /// The server's `call_timeout` (the default for an unknown name).
    pub(super) fn call_timeout(&self, server: &str) -> Duration {
        self.slot(server).map(|s| s.config.call_timeout).unwrap_or_else(|_| ServerConfig::default().call_timeout)
    }

    /// Path of a server's stderr log (for messages that point the user at it).
    pub fn log_file(&self, server: &str) -> PathBuf {
        self.logs.path(server)
    }
}

impl Drop for McpManager {
    fn drop(&mut self) {
        // Last resort when `shutdown` was not awaited (early error, panic): no orphans.
        let groups: Vec<i32> = self.pgids.lock().map(|m| m.values().copied().collect()).unwrap_or_default();
        super::process::kill_now(&groups, &self.run);
    }
}

/// The index entry named `tool`, or `UnknownTool` with suggestions.
fn find_tool<'a>(server: &str, tool: &str, tools: &'a [ToolInfo]) -> Result<&'a ToolInfo, McpError> {
    tools.iter().find(|t| t.name == tool).ok_or_else(|| McpError::UnknownTool {
        server: server.to_string(),
        tool: tool.to_string(),
        suggestions: crate::util::suggest::suggest(tool, tools.iter().map(|t| t.name.as_str())),
    })
}
