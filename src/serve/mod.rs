//! `agent mcp serve`: `agent` as an MCP server, so any MCP client gets code mode, catalog
//! search and result handlers over every configured server (docs/serve.md).
//!
//! [`Server`] is the rmcp `ServerHandler` (written by hand: the tool list is dynamic). It
//! exposes, by [`Expose`]:
//!
//! - **proxy**: every enabled server's tools as `<server>_<tool>` ([`ProxyNames`]), each with the
//!   optional `result_handler` argument (compiled before the upstream call, run by the shared
//!   [`HandlerRunner`]) and without `outputSchema` (a handler's value would not match it);
//! - **code**: `execute_code`, TypeScript run as in `agent exec` through a small pool of
//!   [`CodeMode`]s (one executor runs one script at a time); with a `session` name, in that
//!   client's code session instead, whose isolate lives across its calls ([`code_sessions`]);
//! - **search**: `search_tools` / `describe_tool` over [`McpManager::search`] and the describer.
//!
//! Upstream `tools/list_changed` reaches every downstream peer. Each proxied call carries its
//! own [`CallContext`]: upstream progress reaches the downstream request that asked for it, an
//! upstream elicitation goes to the downstream client when it declared `elicitation` (else the
//! server's policy answers), and a downstream cancellation cancels the upstream request.
//! Upstream sampling, where the server's policy allows it, asks the client of the calls in
//! flight ([`sampling`]).
//!
//! Resources, templates, prompts, completions, subscriptions and logging pass through
//! ([`gateway`]) under the naming mode (`--names prefixed|bare`, [`listing`], [`uris`]); in
//! `bare` mode proxied tools are upstream's exactly, and with one server serve answers
//! `initialize` as that server.
//!
//! Serve answers at once: upstream servers start in the background ([`Server::bring_up`]);
//! `initialize`, the lists and `search_tools` wait for them at most `serve.startup_wait` after start, then
//! answer with those that are up, and each server that comes up later is announced with
//! `notifications/tools/list_changed`; `execute_code` waits for the servers its script uses.
//! Texts serve writes itself carry no absolute path of the machine ([`scrub`]).
//!
//! [`http`] serves it over Streamable HTTP at `/mcp` (loopback, bearer token, `Host` and
//! `Origin` checks, caps on connections and sessions, timeouts); stdio is
//! [`Server::serve_stdio`] ([`stdio`]: a line limit that answers).

mod code_sessions;
mod conns;
mod gateway;
pub mod http;
pub mod listing;
mod sampling;
pub mod scrub;
mod sessions;
pub mod stdio;
pub mod token;
pub mod uris;

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
#[allow(deprecated)] // SetLevelRequestParams (SEP-2577): clients still send logging/setLevel.
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult, ContentBlock,
    GetPromptRequestParams, GetPromptResponse, Implementation, InitializeRequestParams, InitializeResult, JsonObject,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, SetLevelRequestParams,
    SubscribeRequestParams, Tool, UnsubscribeRequestParams,
};
use rmcp::model::{ElicitRequestParams, ElicitResult};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

use crate::codemode::{CodeMode, Options};
use crate::config::{Config, ServeNames};
use crate::handler::{self, HandlerRunner, Source};
use crate::mcp::handler::ClientEvent;
use crate::mcp::naming::unique_name;
use crate::mcp::{Asker, CallContext, McpError, McpManager, ProgressUpdate, ToolInfo};
use crate::runtime::Script;

/// The code-execution tool.
pub const EXECUTE_CODE: &str = "execute_code";
/// The catalog search tool.
pub const SEARCH_TOOLS: &str = "search_tools";
/// A tool's TypeScript description.
pub const DESCRIBE_TOOL: &str = "describe_tool";

/// The `instructions` serve gives in `initialize` (unless it stands in for one server).
pub const INSTRUCTIONS: &str =
    "agent: the tools of every configured MCP server, code mode (execute_code) and tool search.";

/// What `serve` exposes (`--expose proxy,code,search`; default all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expose {
    pub proxy: bool,
    pub code: bool,
    pub search: bool,
}

impl Default for Expose {
    fn default() -> Self {
        Expose { proxy: true, code: true, search: true }
    }
}

impl Expose {
    /// `proxy,code,search` (any subset, at least one).
    pub fn parse(list: &str) -> Result<Expose, String> {
        let mut e = Expose { proxy: false, code: false, search: false };
        for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part {
                "proxy" => e.proxy = true,
                "code" => e.code = true,
                "search" => e.search = true,
                other => {
                    let hint = crate::util::suggest::did_you_mean(&crate::util::suggest::suggest(
                        other,
                        ["proxy", "code", "search"],
                    ));
                    return Err(format!("unknown part `{other}` (expected proxy, code or search){hint}"));
                }
            }
        }
        if !(e.proxy || e.code || e.search) {
            return Err("nothing to expose (expected proxy, code and/or search)".into());
        }
        Ok(e)
    }
}

/// Exposed names of proxied tools. `prefixed`: `<server>_<tool>` with every character outside
/// `[a-zA-Z0-9_-]` replaced by `_`, cut at 64 characters with a hash of the original, `_2`,
/// `_3`, … on a collision, in (server, tool) order; never one of serve's own tool names.
/// `bare`: the tool's own name; a name already taken (by an earlier server in name order, or
/// by one of serve's own exposed tools) is a [`listing::Clash`] and the tool is left out.
#[derive(Debug, Clone, Default)]
pub struct ProxyNames {
    by_name: BTreeMap<String, (String, String)>,
    by_tool: BTreeMap<(String, String), String>,
    /// `bare` mode: the names two servers (or a server and serve) share.
    pub clashes: Vec<listing::Clash>,
}

impl ProxyNames {
    /// Prefixed names (serve's own three names always taken).
    pub fn build<'a>(tools: impl IntoIterator<Item = &'a ToolInfo>) -> ProxyNames {
        ProxyNames::build_as(ServeNames::Prefixed, Expose::default(), tools)
    }

    /// Names under `mode`; in `bare` mode only the tools `expose` offers take their names.
    pub fn build_as<'a>(mode: ServeNames, expose: Expose, tools: impl IntoIterator<Item = &'a ToolInfo>) -> ProxyNames {
        let mut sorted: Vec<&ToolInfo> = tools.into_iter().collect();
        sorted.sort_by(|a, b| (&a.server, &a.name).cmp(&(&b.server, &b.name)));
        let own: Vec<&str> = match mode {
            ServeNames::Prefixed => vec![EXECUTE_CODE, SEARCH_TOOLS, DESCRIBE_TOOL],
            ServeNames::Bare => {
                let mut own = Vec::new();
                if expose.code {
                    own.push(EXECUTE_CODE);
                }
                if expose.search {
                    own.extend([SEARCH_TOOLS, DESCRIBE_TOOL]);
                }
                own
            }
        };
        let mut taken: HashSet<String> = own.iter().map(|s| s.to_string()).collect();
        let mut names = ProxyNames::default();
        for t in sorted {
            let name = match mode {
                ServeNames::Prefixed => unique_name("", &t.server, &t.name, &mut taken),
                ServeNames::Bare => {
                    if let Some((first, _)) = names.by_name.get(&t.name) {
                        let clash = listing::Clash {
                            kind: "tool",
                            name: t.name.clone(),
                            first: first.clone(),
                            second: Some(t.server.clone()),
                        };
                        names.clashes.push(clash);
                        continue;
                    }
                    if own.contains(&t.name.as_str()) {
                        let clash = listing::Clash {
                            kind: "tool",
                            name: t.name.clone(),
                            first: t.server.clone(),
                            second: None,
                        };
                        names.clashes.push(clash);
                        continue;
                    }
                    t.name.clone()
                }
            };
            names.by_name.insert(name.clone(), (t.server.clone(), t.name.clone()));
            names.by_tool.insert((t.server.clone(), t.name.clone()), name);
        }
        names
    }

    /// The upstream (server, tool) behind an exposed name.
    pub fn resolve(&self, name: &str) -> Option<(&str, &str)> {
        self.by_name.get(name).map(|(s, t)| (s.as_str(), t.as_str()))
    }

    /// The exposed name of an upstream tool.
    pub fn name_of(&self, server: &str, tool: &str) -> Option<&str> {
        self.by_tool.get(&(server.to_string(), tool.to_string())).map(String::as_str)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }
}

/// Code-mode executors that run scripts side by side (each runs one at a time).
struct CodePool {
    slots: Vec<tokio::sync::Mutex<Option<CodeMode>>>,
    next: AtomicUsize,
}

impl CodePool {
    /// A free code mode, else the next one in turn once it is free.
    async fn acquire(&self) -> tokio::sync::MutexGuard<'_, Option<CodeMode>> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let n = self.slots.len();
        for i in 0..n {
            if let Ok(g) = self.slots[(start + i) % n].try_lock() {
                return g;
            }
        }
        self.slots[start % n].lock().await
    }
}

/// Where an upstream server is, as serve sees it.
#[derive(Debug, Clone)]
enum Upstream {
    Starting,
    Up,
    /// Its last start failed (when, and why): left out of the lists.
    Failed(Instant, String),
}

/// A failed server is tried again (when a client lists tools) at most this often.
const RETRY_FAILED_AFTER: Duration = Duration::from_secs(60);

/// Told how the first start of each upstream server went: its tool count, or why it failed.
pub type StartReporter = Arc<dyn Fn(&str, Result<usize, &McpError>) + Send + Sync>;

/// Proxied names and the tool lists they were made from.
type BuiltNames = (Vec<Arc<Vec<ToolInfo>>>, Arc<ProxyNames>);

struct Inner {
    manager: Arc<McpManager>,
    expose: Expose,
    code: Option<CodePool>,
    /// `execute_code` calls that name a `session`: each client's own code sessions.
    code_sessions: code_sessions::CodeSessions,
    /// What a code session's code mode is made with (the pool's options, as a session).
    session_options: Options,
    handlers: HandlerRunner,
    handlers_enabled: bool,
    code_description: String,
    describer: crate::bridge::server::Describer,
    /// The proxied names, and the tool lists they were made from (their pointers identify them).
    names: Mutex<Option<BuiltNames>>,
    /// `serve.names` (or `--names`).
    names_mode: ServeNames,
    /// The resource and prompt listing, and the lists it was made from.
    listing: Mutex<Option<(gateway::ListingKey, Arc<listing::Listing>)>>,
    /// The last `initialize` answer made, for rmcp's synchronous `get_info`.
    last_info: Mutex<Option<ServerConfig>>,
    /// Each live session's peer, log level and subscriptions.
    sessions: Mutex<BTreeMap<u64, gateway::SessionState>>,
    /// Held while an upstream subscription is changed for a session.
    subscribing: tokio::sync::Mutex<()>,
    /// Proxied calls and scripts in flight, by server: who an upstream sampling request asks.
    in_flight: Arc<sampling::InFlight>,
    next_session: AtomicU64,
    forwarder: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The enabled upstream servers and where each is.
    upstream: tokio::sync::watch::Sender<BTreeMap<String, Upstream>>,
    /// Servers that were not up when a tool list or search went out: their coming up is news.
    listed_without: Mutex<HashSet<String>>,
    /// When serve started, and how long after it lists wait for servers still starting.
    started_at: Instant,
    startup_wait: Duration,
    /// Which servers a script uses (`CodeMode::servers_for_script` reads the server entries).
    config: Config,
    workspace: std::path::PathBuf,
    scrubber: scrub::Scrubber,
}

/// The MCP server `agent mcp serve` runs; cheap to clone. Each session (the stdio one, each
/// HTTP session) has its own [`Server::for_session`] clone: when its last clone is gone, the
/// session's peer is forgotten, so nothing of an ended session stays.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
    session: Option<Arc<SessionMark>>,
}

/// One session's mark; dropping it removes the session's state and gives up the upstream
/// subscriptions no other session holds.
struct SessionMark {
    id: u64,
    inner: Weak<Inner>,
    /// What `initialize` told this session.
    info: OnceLock<ServerConfig>,
}

impl Drop for SessionMark {
    fn drop(&mut self) {
        let Some(inner) = self.inner.upgrade() else { return };
        // Its code sessions end with it (their worker processes too).
        let ended = inner.code_sessions.end_client(self.id);
        if !ended.is_empty()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            rt.spawn(code_sessions::stop(ended));
        }
        let orphaned = match inner.sessions.lock() {
            Ok(mut sessions) => match sessions.remove(&self.id) {
                Some(ended) => gateway::orphaned(&ended, &sessions),
                None => Vec::new(),
            },
            Err(_) => Vec::new(),
        };
        if orphaned.is_empty() {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _turn = inner.subscribing.lock().await;
                for (server, uri) in orphaned {
                    // A session may have taken it up since.
                    let key = (server, uri);
                    let held =
                        inner.sessions.lock().is_ok_and(|s| s.values().any(|st| st.subscriptions.contains_key(&key)));
                    if !held {
                        let _ = inner.manager.unsubscribe(&key.0, &key.1).await;
                    }
                }
            });
        }
    }
}

impl Server {
    /// Makes `workers` code-mode executors ready (and their bridges); no upstream server is
    /// started yet: [`Server::bring_up`] does that, in the background of a serve that answers.
    /// `recorder` is told each script's calls (the first executor's; the manager tells it every
    /// other call as its observer).
    pub async fn start(
        config: &Config,
        manager: Arc<McpManager>,
        recorder: Option<Arc<crate::learn::Recorder>>,
        expose: Expose,
        workers: usize,
    ) -> anyhow::Result<Server> {
        let mut options = Options::from_config(config)?;
        let names = manager.server_names();
        let code = if expose.code {
            options.regenerate = true;
            let mut slots = Vec::new();
            for i in 0..workers.max(1) {
                let mut code = CodeMode::new(manager.clone(), options.clone());
                if i == 0 {
                    code.set_recorder(recorder.clone());
                }
                if !names.is_empty() {
                    code.start_bridge().await?;
                }
                slots.push(tokio::sync::Mutex::new(Some(code)));
            }
            Some(CodePool { slots, next: AtomicUsize::new(0) })
        } else {
            None
        };
        let mut limits = crate::codemode::tool::LimitsText::from_config(&config.mcp.code_execution);
        // Calls share an isolate only when they name a session.
        limits.sessions = crate::codemode::tool::Sessions::Named;
        let code_description = crate::codemode::tool::description(&limits);
        let describer = crate::codemode::describer(manager.configured_names(), options.workspace.clone());
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let session_options = Options { session: true, ..options.clone() };
        let caps = code_sessions::Caps {
            per_client: config.serve.code_sessions_per_client,
            total: config.serve.max_code_sessions,
            idle: config.serve.code_session_idle_timeout,
        };
        let upstream = names.iter().map(|n| (n.clone(), Upstream::Starting)).collect();
        let inner = Arc::new(Inner {
            handlers: HandlerRunner::from_config(config, Some(manager.clone()))?,
            handlers_enabled: config.mcp.result_handlers.enabled,
            manager,
            expose,
            code,
            code_sessions: code_sessions::CodeSessions::new(caps),
            session_options,
            code_description,
            describer,
            names: Mutex::new(None),
            names_mode: config.serve.names,
            listing: Mutex::new(None),
            last_info: Mutex::new(None),
            sessions: Mutex::new(BTreeMap::new()),
            subscribing: tokio::sync::Mutex::new(()),
            in_flight: Arc::default(),
            next_session: AtomicU64::new(1),
            forwarder: Mutex::new(None),
            upstream: tokio::sync::watch::Sender::new(upstream),
            listed_without: Mutex::new(HashSet::new()),
            started_at: Instant::now(),
            startup_wait: config.serve.startup_wait,
            config: config.clone(),
            workspace: options.workspace.clone(),
            scrubber: scrub::Scrubber::new(&options.workspace, home.as_deref()),
        });
        // Upstream sampling (where a server's policy allows it) asks serve's own client.
        let host = inner.manager.host();
        if host.sampler().is_none() {
            host.set_sampler(Arc::new(sampling::Forward(inner.in_flight.clone())));
        }
        let server = Server { inner, session: None };
        server.forward_events();
        if expose.code {
            server.sweep_code_sessions();
        }
        Ok(server)
    }

    /// A clone for one session (see [`Server`]).
    pub fn for_session(&self) -> Server {
        let id = self.inner.next_session.fetch_add(1, Ordering::Relaxed);
        Server {
            inner: self.inner.clone(),
            session: Some(Arc::new(SessionMark { id, inner: Arc::downgrade(&self.inner), info: OnceLock::new() })),
        }
    }

    /// Starts every enabled upstream server, concurrently; as each comes up, its part of the
    /// tree is refreshed (when `code` is exposed), its tools are offered and the clients are told
    /// (`tools/list_changed`). `report` hears how each start went. Returns when all are done.
    pub async fn bring_up(&self, report: StartReporter) {
        let names = self.inner.manager.server_names();
        futures::future::join_all(names.iter().map(|n| self.start_upstream(n, Some(&report)))).await;
    }

    /// One start (or retry) of `server`.
    async fn start_upstream(&self, server: &str, report: Option<&StartReporter>) {
        let inner = &self.inner;
        inner.upstream.send_modify(|m| {
            m.insert(server.to_string(), Upstream::Starting);
        });
        let state = match inner.manager.tools(server).await {
            Ok(tools) => {
                if let Some(pool) = &inner.code
                    && let Some(slot) = pool.slots.first()
                    && let Some(code) = slot.lock().await.as_mut()
                    && let Err(e) = code.prepare(&[server.to_string()], false).await
                {
                    tracing::warn!("cannot refresh the tree for `{server}`: {e:#}");
                }
                if let Some(report) = report {
                    report(server, Ok(tools.len()));
                }
                Upstream::Up
            }
            Err(e) => {
                match report {
                    Some(report) => report(server, Err(&e)),
                    None => tracing::info!("`{server}` still does not start: {e}"),
                }
                Upstream::Failed(Instant::now(), e.to_string())
            }
        };
        let up = matches!(state, Upstream::Up);
        // Clients hear of it when a list went out without it (not of what they have seen). The
        // lock makes the change and the check one step against `up_servers`.
        let missed = {
            let mut listed = inner.listed_without.lock().ok();
            inner.upstream.send_modify(|m| {
                m.insert(server.to_string(), state);
            });
            listed.as_mut().map(|l| l.remove(server)).unwrap_or(true)
        };
        if up {
            // A level a session asked for before this server was up.
            self.apply_upstream_level(Some(server)).await;
        }
        if up && missed {
            self.notify_tools_changed().await;
            if let Ok(o) = inner.manager.offers(server).await {
                if o.resources {
                    self.notify_list_changed(false).await;
                }
                if o.prompts {
                    self.notify_list_changed(true).await;
                }
            }
        }
    }

    /// Servers that failed long enough ago are started again, in the background.
    fn retry_failed(&self) {
        let now = Instant::now();
        let mut due = Vec::new();
        self.inner.upstream.send_modify(|m| {
            for (name, state) in m.iter_mut() {
                if let Upstream::Failed(at, _) = state
                    && now.duration_since(*at) >= RETRY_FAILED_AFTER
                {
                    *state = Upstream::Starting;
                    due.push(name.clone());
                }
            }
        });
        for name in due {
            let server = self.clone();
            tokio::spawn(async move { server.start_upstream(&name, None).await });
        }
    }

    /// Waits until none of `servers` is starting, or until `deadline`.
    async fn settled(&self, servers: &[String], deadline: Option<Instant>) {
        let mut rx = self.inner.upstream.subscribe();
        let done = rx.wait_for(|m| servers.iter().all(|s| !matches!(m.get(s), Some(Upstream::Starting))));
        match deadline {
            Some(d) => {
                let _ = tokio::time::timeout_at(d.into(), done).await;
            }
            None => {
                let _ = done.await;
            }
        }
    }

    /// Waits (at most until `serve.startup_wait` after start) for the servers still starting;
    /// then the servers that are up, and why each other one is not.
    async fn up_servers(&self) -> (Vec<String>, Vec<(String, String)>) {
        let all = self.inner.manager.server_names();
        self.settled(&all, Some(self.inner.started_at + self.inner.startup_wait)).await;
        self.retry_failed();
        let mut up = Vec::new();
        let mut not = Vec::new();
        let mut listed = self.inner.listed_without.lock().ok();
        for (name, state) in self.inner.upstream.borrow().iter() {
            match state {
                Upstream::Up => up.push(name.clone()),
                Upstream::Starting => not.push((name.clone(), "still starting".to_string())),
                Upstream::Failed(_, why) => not.push((name.clone(), why.clone())),
            }
        }
        if let Some(l) = listed.as_mut() {
            l.extend(not.iter().map(|(n, _)| n.clone()));
        }
        drop(listed);
        (up, not)
    }

    /// Tells every downstream peer that the tool list changed (and forgets peers that are gone).
    async fn notify_tools_changed(&self) {
        let mut dead = Vec::new();
        for (id, peer) in self.peers() {
            if peer.notify_tool_list_changed().await.is_err() {
                dead.push(id);
            }
        }
        if !dead.is_empty()
            && let Ok(mut p) = self.inner.sessions.lock()
        {
            for id in dead {
                if let Some(s) = p.get_mut(&id) {
                    s.peer = None;
                }
            }
        }
    }

    /// Passes upstream notifications on: tool, resource and prompt list changes to every
    /// session (a tool list change also refreshes the tree), resource updates to the sessions
    /// that subscribed, log messages to the sessions that set a level.
    fn forward_events(&self) {
        let mut rx = self.inner.manager.events().subscribe();
        let weak = Arc::downgrade(&self.inner);
        let handle = tokio::spawn(async move {
            loop {
                let event = match rx.recv().await {
                    Ok(e) => e,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(_) => break,
                };
                let Some(inner) = weak.upgrade() else { break };
                let this = Server { inner, session: None };
                let server = match event {
                    ClientEvent::ToolsChanged { server } => server,
                    ClientEvent::ResourcesChanged { .. } => {
                        this.notify_list_changed(false).await;
                        continue;
                    }
                    ClientEvent::PromptsChanged { .. } => {
                        this.notify_list_changed(true).await;
                        continue;
                    }
                    ClientEvent::ResourceUpdated { server, uri } => {
                        this.forward_updated(&server, &uri).await;
                        continue;
                    }
                    ClientEvent::Log { server, level, logger, data } => {
                        this.forward_log(&server, &level, logger, data).await;
                        continue;
                    }
                    _ => continue,
                };
                let inner = this.inner;
                // Re-read the list now so the next tools/list (and the tree) has it.
                let _ = inner.manager.tools(&server).await;
                if let Some(pool) = &inner.code
                    && let Some(slot) = pool.slots.first()
                    && let Some(code) = slot.lock().await.as_mut()
                    && let Err(e) = code.prepare(std::slice::from_ref(&server), false).await
                {
                    tracing::warn!("cannot refresh the tree for `{server}`: {e:#}");
                }
                Server { inner, session: None }.notify_tools_changed().await;
            }
        });
        if let Ok(mut f) = self.inner.forwarder.lock() {
            *f = Some(handle);
        }
    }

    /// Serves one client on stdin/stdout until stdin closes. A line over `max_line` bytes is
    /// answered with an error for its id; one whose id cannot be read ends the session (`Err`).
    pub async fn serve_stdio(&self, max_line: usize) -> anyhow::Result<()> {
        let closed = Arc::new(Mutex::new(None));
        let transport = stdio::StdioTransport::new(tokio::io::stdin(), tokio::io::stdout(), max_line, closed.clone());
        let running = match self.for_session().serve(transport).await {
            Ok(r) => r,
            // The client went away before the handshake: nothing to serve.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => anyhow::bail!("the MCP handshake on stdio failed: {e}"),
        };
        running.waiting().await.map_err(|e| anyhow::anyhow!("the stdio session failed: {e}"))?;
        if let Some(why) = closed.lock().ok().and_then(|mut c| c.take()) {
            anyhow::bail!("{why}");
        }
        Ok(())
    }

    /// Ends idle code sessions, in the background, until serve stops.
    fn sweep_code_sessions(&self) {
        let inner = Arc::downgrade(&self.inner);
        let every = self.inner.code_sessions.sweep_every();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(inner) = inner.upgrade() else { return };
                let expired = inner.code_sessions.expire();
                drop(inner);
                code_sessions::stop(expired).await;
            }
        });
    }

    /// Stops the code-mode bridges and the handler runner (servers belong to the manager).
    pub async fn stop(self) {
        if let Some(h) = self.inner.forwarder.lock().ok().and_then(|mut f| f.take()) {
            h.abort();
        }
        code_sessions::stop(self.inner.code_sessions.end_all()).await;
        if let Some(pool) = &self.inner.code {
            for slot in &pool.slots {
                if let Some(code) = slot.lock().await.take() {
                    code.stop().await;
                }
            }
        }
        if let Ok(inner) = Arc::try_unwrap(self.inner) {
            inner.handlers.stop().await;
        }
    }

    /// The current proxied names (rebuilt when a tool list changed) and the tool lists they
    /// were made from (shared, not copied: this runs on every proxied call).
    async fn proxy_names(&self) -> (Arc<ProxyNames>, Vec<Arc<Vec<ToolInfo>>>) {
        let manager = &self.inner.manager;
        let (up, _) = self.up_servers().await;
        let mut lists = Vec::new();
        for (server, r) in manager.tools_of(&up).await {
            match r {
                Ok(list) => lists.push(list),
                Err(e) => tracing::warn!("`{server}` is left out of the tool list: {e}"),
            }
        }
        if let Ok(cache) = self.inner.names.lock()
            && let Some((from, names)) = cache.as_ref()
            && from.len() == lists.len()
            && from.iter().zip(&lists).all(|(a, b)| Arc::ptr_eq(a, b))
        {
            return (names.clone(), lists);
        }
        let names = Arc::new(ProxyNames::build_as(
            self.inner.names_mode,
            self.inner.expose,
            lists.iter().flat_map(|l| l.iter()),
        ));
        if let Ok(mut cache) = self.inner.names.lock() {
            *cache = Some((lists.clone(), names.clone()));
        }
        (names, lists)
    }

    /// The tools serve offers right now.
    pub async fn tool_list(&self) -> Vec<Tool> {
        let mut out = Vec::new();
        let e = self.inner.expose;
        if e.code {
            out.push(tool(
                EXECUTE_CODE,
                &self.inner.code_description,
                json!({
                    "type": "object",
                    "properties": {
                        "code": {"type": "string", "description": crate::codemode::tool::CODE_ARG_DESCRIPTION},
                        "session": {
                            "type": "string",
                            "pattern": "^[A-Za-z0-9._:-]{1,64}$",
                            "description": "Optional: a name of your choosing. Calls that pass the same name share \
                                            an isolate: what one declares at its top level is a global in the next. \
                                            Without it each call starts fresh."
                        }
                    },
                    "required": ["code"]
                }),
            ));
        }
        if e.search {
            out.push(tool(
                SEARCH_TOOLS,
                "Search the tools of every configured MCP server for a task, best first: [{server, tool, \
                 signature, description}]; their resources and prompts too (with `kind`, and as `signature` \
                 the execute_code call that uses them). Then describe_tool for a tool's exact types.",
                json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "What you need, in words."},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Default 5."}
                    },
                    "required": ["query"]
                }),
            ));
            out.push(tool(
                DESCRIBE_TOOL,
                "A tool's TypeScript declaration (import, input and output types, docs), by `server.tool`.",
                json!({
                    "type": "object",
                    "properties": {"name": {"type": "string", "description": "`server.tool`"}},
                    "required": ["name"]
                }),
            ));
        }
        if e.proxy {
            let (names, lists) = self.proxy_names().await;
            for t in lists.iter().flat_map(|l| l.iter()) {
                let Some(name) = names.name_of(&t.server, &t.name) else { continue };
                out.push(self.proxied_tool(name, t));
            }
        }
        out
    }

    fn proxied_tool(&self, name: &str, t: &ToolInfo) -> Tool {
        if self.inner.names_mode == ServeNames::Bare
            && let Some(tool) = bare_tool(t)
        {
            return tool;
        }
        let mut schema = match &t.input_schema {
            Value::Object(m) => m.clone(),
            _ => JsonObject::new(),
        };
        schema.entry("type").or_insert_with(|| json!("object"));
        if self.inner.handlers_enabled {
            let props = schema.entry("properties").or_insert_with(|| json!({}));
            if let Value::Object(props) = props
                && !props.contains_key(handler::ARG)
            {
                props.insert(handler::ARG.into(), handler::arg_schema());
            }
        }
        let description = t
            .description
            .clone()
            .filter(|d| !d.trim().is_empty())
            .unwrap_or_else(|| format!("The `{}` tool of the MCP server `{}`.", t.name, t.server));
        let mut out = Tool::new(name.to_string(), description, Arc::new(schema));
        out.title = t.title.clone();
        out.annotations = t.annotations.clone().and_then(|a| serde_json::from_value(a).ok());
        out
    }

    /// Runs one `tools/call` (every failure is a tool error result, never a dead server).
    pub async fn call(
        &self,
        name: &str,
        args: Map<String, Value>,
        ct: &tokio_util::sync::CancellationToken,
        progress: Option<Progress>,
        peer: Option<&Peer<RoleServer>>,
    ) -> CallToolResult {
        let e = self.inner.expose;
        let own = matches!((name, e.code, e.search), (EXECUTE_CODE, true, _) | (SEARCH_TOOLS | DESCRIBE_TOOL, _, true));
        let work = async {
            match name {
                EXECUTE_CODE if e.code => self.execute_code(args, ct, peer).await,
                SEARCH_TOOLS if e.search => self.search_tools(args).await,
                DESCRIBE_TOOL if e.search => self.describe_tool(args).await,
                _ if e.proxy => self.proxy_call(name, args, ct, progress, peer).await,
                _ => error_result(format!("unknown tool `{name}`")),
            }
        };
        let mut r = tokio::select! {
            r = work => r,
            _ = ct.cancelled() => error_result("cancelled by the client"),
        };
        // What serve says itself, and every error: no absolute path of this machine. A proxied
        // tool's successful result is the upstream server's data and stays as it is.
        if own || r.is_error == Some(true) {
            self.scrub(&mut r);
        }
        r
    }

    fn scrub(&self, r: &mut CallToolResult) {
        let s = &self.inner.scrubber;
        for block in &mut r.content {
            if let ContentBlock::Text(t) = block
                && let std::borrow::Cow::Owned(clean) = s.text(&t.text)
            {
                t.text = clean;
            }
        }
        if let Some(v) = r.structured_content.as_mut() {
            s.json(v);
        }
    }

    async fn proxy_call(
        &self,
        name: &str,
        args: Map<String, Value>,
        ct: &tokio_util::sync::CancellationToken,
        progress: Option<Progress>,
        peer: Option<&Peer<RoleServer>>,
    ) -> CallToolResult {
        let (names, _) = self.proxy_names().await;
        let Some((server, tool)) = names.resolve(name) else {
            let hint = crate::util::suggest::did_you_mean(&crate::util::suggest::suggest(name, names.names()));
            return error_result(format!("unknown tool `{name}`{hint}"));
        };
        // Bare mode offers upstream's tools as they are: no `result_handler` argument.
        let bare = self.inner.names_mode == ServeNames::Bare;
        let runner = (self.inner.handlers_enabled && !bare).then_some(&self.inner.handlers);
        let source = if runner.is_some() { Source::Argument } else { Source::None };
        let _asking = peer.map(|p| self.inner.in_flight.enter(server, self.session_id(), p.clone()));
        let (cx, forwarding) = call_context(ct, progress, peer);
        let called = handler::call(runner, &self.inner.manager, server, tool, args, source, &cx).await;
        drop(cx);
        if let Some(f) = forwarding {
            // Ends when the call's progress sink is gone: what arrived before the answer goes first.
            let _ = f.await;
        }
        match called {
            Ok(c) => c.into_result(),
            Err(e) => e.into_result(),
        }
    }

    async fn execute_code(
        &self,
        args: Map<String, Value>,
        ct: &tokio_util::sync::CancellationToken,
        peer: Option<&Peer<RoleServer>>,
    ) -> CallToolResult {
        let Some(code) = args.get("code").and_then(Value::as_str) else {
            return error_result("execute_code: `code` (a string) is required");
        };
        let Some(pool) = &self.inner.code else { return error_result("code execution is not exposed") };
        let session = match args.get("session") {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => match code_sessions::check_name(name) {
                Ok(()) => Some(name.as_str()),
                Err(e) => return error_result(e),
            },
            Some(_) => return error_result("execute_code: `session` must be a string"),
        };
        // The servers the script uses must have started (or failed) before it runs against the tree.
        let workspace = &self.inner.workspace;
        let uses = CodeMode::servers_for_script(&self.inner.config, code, &workspace.join("main.ts"), workspace);
        self.settled(&uses, None).await;
        let _asking: Vec<_> = match peer {
            Some(p) => uses.iter().map(|s| self.inner.in_flight.enter(s, self.session_id(), p.clone())).collect(),
            None => Vec::new(),
        };
        // The script's tool calls: cancelled with this request, eliciting through its client
        // (their progress is not forwarded: several calls would share one token).
        let (cx, _) = call_context(ct, None, peer);
        let script = Script::Inline(code.to_string());
        let outcome = match session {
            Some(name) => match self.run_in_session(name, script, cx).await {
                Ok(o) => o,
                Err(e) => return error_result(e),
            },
            None => {
                let guard = pool.acquire().await;
                let Some(mode) = guard.as_ref() else { return error_result("the server is stopping") };
                mode.run_with(script, cx).await
            }
        };
        let (text, is_error) = crate::codemode::tool::script_result(&outcome);
        let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
        if is_error {
            r.is_error = Some(true);
        }
        r
    }

    /// Runs `script` as the next step of this client's code session `name` (opened, and its code
    /// mode made, on first use). `Err`: the session could not be opened (a cap, no bridge).
    async fn run_in_session(
        &self,
        name: &str,
        script: Script,
        cx: CallContext,
    ) -> Result<crate::runtime::ExecOutcome, String> {
        let session = self.inner.code_sessions.open(self.session_id(), name)?;
        let mut mode = session.mode.lock().await;
        if mode.is_none() {
            let mut code = CodeMode::new(self.inner.manager.clone(), self.inner.session_options.clone());
            if !self.inner.manager.server_names().is_empty() {
                code.start_bridge().await.map_err(|e| format!("execute_code: cannot open the session: {e:#}"))?;
            }
            *mode = Some(code);
        }
        let Some(code) = mode.as_ref() else { return Err("execute_code: the session is gone".into()) };
        let mut outcome = code.run_with(script, cx).await;
        drop(mode);
        session.touch();
        // The first step after this name's previous session ended (unused too long) says so.
        if let Some(why) = session.restarted.lock().ok().and_then(|mut r| r.take()) {
            outcome.session.get_or_insert_with(Default::default).restarted.get_or_insert(why);
        }
        Ok(outcome)
    }

    async fn search_tools(&self, args: Map<String, Value>) -> CallToolResult {
        let Some(query) = args.get("query").and_then(Value::as_str) else {
            return error_result("search_tools: `query` (a string) is required");
        };
        let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(5).clamp(1, 50) as usize;
        let manager = &self.inner.manager;
        let (up, mut unavailable) = self.up_servers().await;
        let (results, failed) = manager.search_all(&up, query, limit, &[]).await;
        unavailable.extend(failed.iter().map(|(s, e)| (s.clone(), e.to_string())));
        unavailable.sort();
        let (names, _) = self.proxy_names().await;
        let results: Vec<Value> = results
            .into_iter()
            .map(|r| {
                let mut v = serde_json::to_value(&r).unwrap_or(Value::Null);
                if self.inner.expose.proxy
                    && r.kind == crate::mcp::catalog::Kind::Tool
                    && let (Value::Object(m), Some(n)) = (&mut v, names.name_of(&r.server, &r.tool))
                {
                    m.insert("call_as".into(), json!(n));
                }
                v
            })
            .collect();
        let mut out = json!({ "results": results });
        if !unavailable.is_empty() {
            out["unavailable"] = unavailable.iter().map(|(s, e)| json!({"server": s, "error": e})).collect();
        }
        let mut r = CallToolResult::success(vec![ContentBlock::text(out.to_string())]);
        r.structured_content = Some(out);
        r
    }

    async fn describe_tool(&self, args: Map<String, Value>) -> CallToolResult {
        // `name`, as progressive mode's `call_tool` has it; `tool`, its name before, still works
        // for clients written against it.
        let Some(q) = args.get("name").or_else(|| args.get("tool")).and_then(Value::as_str) else {
            return error_result("describe_tool: `name` (`server.tool`) is required");
        };
        let Some((server, tool)) = crate::mcp::tools::split_qualified(q) else {
            return error_result(format!("describe_tool: expected `server.tool`, got `{q}`"));
        };
        let manager = &self.inner.manager;
        if matches!(self.inner.upstream.borrow().get(server), Some(Upstream::Starting)) {
            return error_result(format!("`{server}` is still starting; try again when it is listed"));
        }
        let info = match manager.tool(server, tool).await {
            Ok(i) => i,
            Err(e) => return error_result(e.to_string()),
        };
        let siblings = manager.tools(server).await.map(|l| l.to_vec()).unwrap_or_default();
        let mut text = (self.inner.describer)(&info, &siblings);
        if self.inner.expose.proxy {
            let (names, _) = self.proxy_names().await;
            if let Some(n) = names.name_of(server, tool) {
                text.push_str(&format!("// As an MCP tool of this server: `{n}`\n"));
            }
        }
        CallToolResult::success(vec![ContentBlock::text(text)])
    }

    /// Whether `name` is one of the tools serve offers now.
    async fn is_tool(&self, name: &str) -> bool {
        let e = self.inner.expose;
        match name {
            EXECUTE_CODE if e.code => true,
            SEARCH_TOOLS | DESCRIBE_TOOL if e.search => true,
            _ => e.proxy && self.proxy_names().await.0.resolve(name).is_some(),
        }
    }

    fn remember_peer(&self, peer: Peer<RoleServer>) {
        let id = self.session.as_ref().map(|s| s.id).unwrap_or(0);
        if let Ok(mut p) = self.inner.sessions.lock() {
            p.entry(id).or_default().peer = Some(peer);
        }
    }
}

/// Upstream's tool exactly as it declared it (name, title, description, input and output
/// schemas, annotations): `bare` mode.
fn bare_tool(t: &ToolInfo) -> Option<Tool> {
    let mut v = json!({ "name": t.name, "inputSchema": t.input_schema });
    if let Some(title) = &t.title {
        v["title"] = json!(title);
    }
    if let Some(d) = &t.description {
        v["description"] = json!(d);
    }
    if let Some(o) = &t.output_schema {
        v["outputSchema"] = o.clone();
    }
    if let Some(a) = &t.annotations {
        v["annotations"] = a.clone();
    }
    serde_json::from_value(v).ok()
}

/// Where a downstream request wants its progress notifications.
pub struct Progress {
    pub token: rmcp::model::ProgressToken,
    pub peer: Peer<RoleServer>,
}

/// The context of one proxied call: its progress goes to the downstream request that asked for
/// it (in order, through one task that ends when the call's sink is dropped), an elicitation
/// during it goes to the downstream client when that client can answer it, and the downstream
/// cancellation stops it (the upstream server is told).
fn call_context(
    ct: &tokio_util::sync::CancellationToken,
    progress: Option<Progress>,
    peer: Option<&Peer<RoleServer>>,
) -> (CallContext, Option<tokio::task::JoinHandle<()>>) {
    let mut cx = CallContext { cancel: Some(ct.clone()), ..Default::default() };
    let mut task = None;
    if let Some(p) = progress {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ProgressUpdate>();
        task = Some(tokio::spawn(async move {
            while let Some(u) = rx.recv().await {
                let mut n = rmcp::model::ProgressNotificationParam::new(p.token.clone(), u.progress);
                n.total = u.total;
                n.message = u.message;
                let _ = p.peer.notify_progress(n).await;
            }
        }));
        cx.progress = Some(Arc::new(move |u| {
            let _ = tx.send(u);
        }));
    }
    if let Some(peer) = peer {
        cx.asker = Some(Arc::new(Downstream(peer.clone())));
    }
    (cx, task)
}

/// The downstream client, asked when an upstream server elicits during its call.
struct Downstream(Peer<RoleServer>);

impl Asker for Downstream {
    fn elicit<'a>(
        &'a self,
        _server: &'a str,
        request: ElicitRequestParams,
    ) -> BoxFuture<'a, Option<Result<ElicitResult, String>>> {
        Box::pin(async move {
            let info = self.0.peer_info()?;
            // rmcp refuses server-to-client requests on 2026-07-28 sessions.
            if info.protocol_version >= rmcp::model::ProtocolVersion::V_2026_07_28 {
                return None;
            }
            let caps = info.capabilities.elicitation.as_ref()?;
            if matches!(request, ElicitRequestParams::UrlElicitationParams { .. }) && caps.url.is_none() {
                return None;
            }
            // `Peer::create_elicitation` needs rmcp's `elicitation` feature; this is its body.
            let asked = rmcp::model::ServerRequest::ElicitRequest(rmcp::model::ElicitRequest::new(request));
            Some(match self.0.send_request(asked).await {
                Ok(rmcp::model::ClientResult::ElicitResult(r)) => Ok(r),
                Ok(_) => Err("the client answered an elicitation with something else".into()),
                Err(e) => Err(e.to_string()),
            })
        })
    }

    fn origin(&self) -> u64 {
        // One downstream session: its client info is one allocation for the session's life.
        self.0.peer_info().map(|i| Arc::as_ptr(&i) as usize as u64).unwrap_or(0)
    }
}

fn tool(name: &str, description: &str, schema: Value) -> Tool {
    let schema = match schema {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    };
    Tool::new(name.to_string(), description.to_string(), Arc::new(schema))
}

fn error_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text.into())])
}

#[allow(deprecated)] // logging/setLevel and resources/subscribe: clients of 2025-11-25 send them.
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        if let Some(info) = self.session.as_ref().and_then(|s| s.info.get()) {
            return info.clone();
        }
        if let Some(info) = self.inner.last_info.lock().ok().and_then(|l| l.clone()) {
            return info;
        }
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
            .with_server_info(Implementation::new("agent", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    /// Answers once the upstream servers are up (at most `serve.startup_wait` after start), so
    /// the capabilities declared are those they offer.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        cx.peer.set_peer_info(request.clone());
        let info = self.server_config().await;
        if let Some(s) = &self.session {
            let _ = s.info.set(info);
        }
        self.negotiate_initialize(&request)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Server::list_resources(self, request).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Server::list_resource_templates(self, request).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        Server::read_resource(self, request).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Server::subscribe(self, request, &cx.peer).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Server::unsubscribe(self, request, &cx.peer).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Server::list_prompts(self, request).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        Server::get_prompt(self, request).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Server::complete(self, request).await
    }

    async fn set_level(&self, request: SetLevelRequestParams, cx: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        Server::set_level(self, request, &cx.peer).await
    }

    async fn on_initialized(&self, cx: NotificationContext<RoleServer>) {
        self.remember_peer(cx.peer);
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        gateway::list_result("tools", &self.tool_list().await, request.as_ref())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Bare mode answers an unknown tool as an MCP server does: a protocol error (-32602).
        if self.inner.names_mode == ServeNames::Bare && !self.is_tool(&request.name).await {
            return Err(ErrorData::invalid_params(format!("unknown tool `{}`", request.name.escape_debug()), None));
        }
        let args = request.arguments.unwrap_or_default();
        let progress = cx.meta.get_progress_token().map(|token| Progress { token, peer: cx.peer.clone() });
        Ok(CallToolResponse::Complete(self.call(&request.name, args, &cx.ct, progress, Some(&cx.peer)).await))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(server: &str, name: &str) -> ToolInfo {
        ToolInfo {
            server: server.into(),
            name: name.into(),
            title: None,
            description: None,
            input_schema: json!({}),
            output_schema: None,
            annotations: None,
        }
    }

    #[test]
    fn proxied_names_are_stable_unique_and_keep_the_tool_name() {
        let long = "x".repeat(80);
        let tools = [
            info("fixture", "text.upper"),
            info("fixture", "text_upper"),
            info("execute", "code"),
            info("s", &long),
            info("s", &format!("{long}y")),
        ];
        let names = ProxyNames::build(&tools);
        assert_eq!(names.resolve("fixture_text_upper"), Some(("fixture", "text.upper")));
        assert_eq!(names.resolve("fixture_text_upper_2"), Some(("fixture", "text_upper")));
        assert_eq!(names.resolve("execute_code_2"), Some(("execute", "code")), "serve's own names are taken");
        assert_eq!(names.names().count(), 5);
        assert!(names.names().all(|n| n.len() <= crate::mcp::naming::MAX_NAME_LEN));
        let again = ProxyNames::build(tools.iter().rev());
        assert_eq!(again.names().collect::<Vec<_>>(), names.names().collect::<Vec<_>>());
    }

    #[test]
    fn bare_names_are_upstreams_and_a_shared_one_is_a_clash() {
        let tools = [info("b", "echo"), info("a", "echo"), info("a", "search_tools"), info("a", "x.y")];
        let names = ProxyNames::build_as(ServeNames::Bare, Expose::default(), &tools);
        assert_eq!(names.resolve("echo"), Some(("a", "echo")), "the first server in name order keeps it");
        assert_eq!(names.resolve("x.y"), Some(("a", "x.y")));
        let said: Vec<String> = names.clashes.iter().map(|c| c.to_string()).collect();
        assert_eq!(
            said,
            [
                "server `a` offers the tool `search_tools`, a name serve itself uses",
                "servers `a` and `b` both offer the tool `echo`",
            ]
        );
        let proxy_only = Expose { proxy: true, code: false, search: false };
        let names = ProxyNames::build_as(ServeNames::Bare, proxy_only, &tools);
        assert_eq!(names.resolve("search_tools"), Some(("a", "search_tools")), "not exposed: upstream's");
    }

    #[test]
    fn expose_parses() {
        assert_eq!(Expose::parse("proxy,code,search").unwrap(), Expose::default());
        assert_eq!(Expose::parse("code").unwrap(), Expose { proxy: false, code: true, search: false });
        assert!(Expose::parse("cod").unwrap_err().contains("did you mean `code`"));
        assert!(Expose::parse("").is_err());
    }
}
