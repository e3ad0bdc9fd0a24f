//! The bridge server: HTTP/1.1 on a Unix socket in front of [`McpManager`].
//!
//! The socket (0600) lives in a fresh 0700 directory under the temp dir, named after our pid so
//! stale ones left by a killed run are swept on the next start. Every request but `/health`
//! needs the per-run bearer token. Own accept loop, one task per connection (hyperlocal's
//! `serve` helper is serial), keep-alive on. Dropping or stopping the server removes the socket
//! and its directory.

use std::convert::Infallible;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio_util::sync::CancellationToken;

use super::protocol::{
    CallRequest, DEFAULT_SEARCH_LIMIT, ErrorBody, ErrorCode, ErrorDetail, ListRequest, MAX_REQUEST_BYTES,
    MAX_SEARCH_LIMIT, PromptArgument, PromptInfo, PromptRequest, ReadRequest, ResourceInfo, ResourceList, TemplateInfo,
    ToolDescription, decode_component, query_pairs,
};
use crate::mcp::catalog::signature;
use crate::mcp::{CallContext, McpError, McpManager, ToolInfo};

/// Renders a tool's TypeScript for `GET /tools/<server>/<tool>`, given the tool and every tool of
/// its server (generated names depend on the whole server). Code mode passes the generator's
/// rendering (the bridge cannot use `codegen`, a module of its own layer); without one the
/// bridge answers a TSDoc comment and the one-line signature.
pub type Describer = Arc<dyn Fn(&ToolInfo, &[ToolInfo]) -> String + Send + Sync>;

/// Where a bridge listens and the token it wants: everything a client needs.
#[derive(Debug, Clone)]
pub struct BridgeEndpoint {
    pub socket: PathBuf,
    pub token: String,
}

/// A running bridge. Stop it with [`BridgeServer::stop`]; dropping it also cleans up.
pub struct BridgeServer {
    endpoint: BridgeEndpoint,
    dir: PathBuf,
    cancel: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
    calls: Arc<AtomicU64>,
    context: CurrentContext,
}

/// The context `POST /call` gives its calls (see [`BridgeServer::set_context`]).
type CurrentContext = Arc<std::sync::RwLock<Option<CallContext>>>;

struct State {
    manager: Arc<McpManager>,
    token: String,
    calls: Arc<AtomicU64>,
    describer: Option<Describer>,
    context: CurrentContext,
}

impl BridgeServer {
    /// Binds a new socket in a private directory and starts serving.
    pub async fn start(manager: Arc<McpManager>) -> std::io::Result<BridgeServer> {
        Self::start_with(manager, None).await
    }

    /// [`BridgeServer::start`] with the renderer of `GET /tools/<server>/<tool>`.
    pub async fn start_with(manager: Arc<McpManager>, describer: Option<Describer>) -> std::io::Result<BridgeServer> {
        sweep_stale_dirs();
        let dir = std::env::temp_dir().join(format!("agent-{}-{}", std::process::id(), random_hex(6)));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let socket = dir.join("bridge.sock");
        let result = Self::bind(manager, &socket, describer).await;
        match result {
            Ok(mut server) => {
                server.dir = dir;
                Ok(server)
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                Err(e)
            }
        }
    }

    /// Serves on an explicit socket path (a stale socket file there is replaced).
    pub async fn start_at(manager: Arc<McpManager>, socket: &Path) -> std::io::Result<BridgeServer> {
        Self::bind(manager, socket, None).await
    }

    async fn bind(
        manager: Arc<McpManager>,
        socket: &Path,
        describer: Option<Describer>,
    ) -> std::io::Result<BridgeServer> {
        if let Ok(meta) = std::fs::symlink_metadata(socket) {
            use std::os::unix::fs::FileTypeExt;
            if meta.file_type().is_socket() {
                std::fs::remove_file(socket)?;
            } else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not a socket", socket.display()),
                ));
            }
        }
        let listener = tokio::net::UnixListener::bind(socket)?;
        std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
        let token = random_hex(32);
        let cancel = CancellationToken::new();
        let calls = Arc::new(AtomicU64::new(0));
        let context = CurrentContext::default();
        let state = Arc::new(State {
            manager,
            token: token.clone(),
            calls: calls.clone(),
            describer,
            context: context.clone(),
        });
        let task = tokio::spawn(accept_loop(listener, state, cancel.clone()));
        Ok(BridgeServer {
            endpoint: BridgeEndpoint { socket: socket.to_path_buf(), token },
            dir: PathBuf::new(),
            cancel,
            task: Some(task),
            calls,
            context,
        })
    }

    /// The context of the tool calls served from now on (`None`: plain calls): who made the
    /// script's request (`serve`'s downstream client, asked when a server elicits) and the
    /// token that cancels its calls. For a bridge that serves one script at a time.
    pub fn set_context(&self, cx: Option<CallContext>) {
        if let Ok(mut c) = self.context.write() {
            *c = cx;
        }
    }

    pub fn endpoint(&self) -> &BridgeEndpoint {
        &self.endpoint
    }

    /// `POST /call` requests served so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Stops accepting, and removes the socket and its directory.
    pub async fn stop(mut self) {
        self.cancel.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        self.cleanup();
    }

    fn cleanup(&self) {
        let _ = std::fs::remove_file(&self.endpoint.socket);
        if !self.dir.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl Drop for BridgeServer {
    fn drop(&mut self) {
        self.cancel.cancel();
        self.cleanup();
    }
}

async fn accept_loop(listener: tokio::net::UnixListener, state: Arc<State>, cancel: CancellationToken) {
    loop {
        let stream = tokio::select! {
            _ = cancel.cancelled() => return,
            r = listener.accept() => match r {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning or dying.
                    tracing::warn!("bridge accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    continue;
                }
            },
        };
        let state = state.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| handle(req, state.clone()));
            let conn =
                hyper::server::conn::http1::Builder::new().keep_alive(true).serve_connection(TokioIo::new(stream), svc);
            tokio::select! {
                _ = conn => {}
                _ = cancel.cancelled() => {}
            }
        });
    }
}

type Resp = Response<Full<Bytes>>;

fn json_response(status: StatusCode, body: &impl serde::Serialize) -> Resp {
    let bytes = serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec());
    let mut resp = Response::new(Full::new(Bytes::from(bytes)));
    *resp.status_mut() = status;
    resp.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    resp
}

fn error(code: ErrorCode, message: impl Into<String>, suggestions: Vec<String>) -> Resp {
    let status = StatusCode::from_u16(code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(status, &ErrorBody { error: ErrorDetail { code, message: message.into(), suggestions } })
}

async fn handle(req: Request<Incoming>, state: Arc<State>) -> Result<Resp, Infallible> {
    let path = req.uri().path().to_string();
    if path == "/health" {
        return Ok(json_response(StatusCode::OK, &serde_json::json!({"ok": true})));
    }
    if !authorized(&req, &state.token) {
        return Ok(error(ErrorCode::Unauthorized, "missing or wrong bearer token", Vec::new()));
    }
    Ok(match (req.method().clone(), path.as_str()) {
        (Method::POST, "/call") => call(req, &state).await,
        (Method::POST, "/resources") => list_resources(req, &state).await,
        (Method::POST, "/resources/read") => read_resource(req, &state).await,
        (Method::POST, "/prompts") => list_prompts(req, &state).await,
        (Method::POST, "/prompts/get") => get_prompt(req, &state).await,
        (Method::GET, "/tools") => tools(req, &state).await,
        (Method::GET, "/search") => search(req, &state).await,
        (Method::GET, p) if p.starts_with("/tools/") => describe(p, &state).await,
        (_, "/call" | "/tools" | "/search" | "/resources" | "/resources/read" | "/prompts" | "/prompts/get") => error(
            ErrorCode::MethodNotAllowed,
            "use POST /call, POST /resources, POST /resources/read, POST /prompts, POST /prompts/get, GET /tools, GET /search",
            Vec::new(),
        ),
        (_, p) if p.starts_with("/tools/") => {
            error(ErrorCode::MethodNotAllowed, "use GET /tools/<server>/<tool>", Vec::new())
        }
        _ => error(
            ErrorCode::NotFound,
            format!(
                "no endpoint {path}; use POST /call, POST /resources, POST /resources/read, POST /prompts, \
                 POST /prompts/get, GET /tools, GET /tools/<server>/<tool>, GET /search, GET /health"
            ),
            Vec::new(),
        ),
    })
}

fn authorized(req: &Request<Incoming>, token: &str) -> bool {
    crate::util::bearer::matches(req.headers().get(hyper::header::AUTHORIZATION).map(|v| v.as_bytes()), token)
}

async fn call(req: Request<Incoming>, state: &State) -> Resp {
    let request: CallRequest =
        match read_json(req, "{\"server\": \"...\", \"tool\": \"...\", \"arguments\": {...}}").await {
            Ok(r) => r,
            Err(resp) => return resp,
        };
    state.calls.fetch_add(1, Ordering::Relaxed);
    let cx = state.context.read().ok().and_then(|c| c.clone()).unwrap_or_default();
    match state.manager.call_tool_with(&request.server, &request.tool, request.arguments, &cx).await {
        Ok(result) => json_response(StatusCode::OK, &crate::mcp::tools::result_json(&result)),
        // The tool's error, so `callMCPTool` rejects with an `MCPToolError` that says what to run.
        Err(e @ McpError::NeedsSignIn { .. }) => {
            let result = rmcp::model::CallToolResult::error(vec![rmcp::model::ContentBlock::text(e.to_string())]);
            json_response(StatusCode::OK, &crate::mcp::tools::result_json(&result))
        }
        Err(e) => mcp_error(e),
    }
}

/// The JSON body of a request, under [`MAX_REQUEST_BYTES`]; `Err` is the answer to send
/// instead (413 over the cap, 400 naming `expected` when it is not that shape).
async fn read_json<T: serde::de::DeserializeOwned>(req: Request<Incoming>, expected: &str) -> Result<T, Resp> {
    if let Some(len) =
        req.headers().get(hyper::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
        && len > MAX_REQUEST_BYTES
    {
        return Err(too_large());
    }
    let body = match Limited::new(req.into_body(), MAX_REQUEST_BYTES).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => return Err(too_large()),
        Err(e) => {
            return Err(error(ErrorCode::BadRequest, format!("cannot read the request body: {e}"), Vec::new()));
        }
    };
    serde_json::from_slice(&body).map_err(|e| {
        error(ErrorCode::BadRequest, format!("invalid request body: {e}; expected {expected}"), Vec::new())
    })
}

/// Runs one manager request other than a tool call under the running script's context: it ends
/// (as a failed request) when that context is cancelled, like a tool call would.
async fn in_context<T>(
    state: &State,
    server: &str,
    what: &str,
    fut: impl Future<Output = Result<T, McpError>>,
) -> Result<T, McpError> {
    let Some(cancel) = cancel_token(state) else { return fut.await };
    tokio::select! {
        r = fut => r,
        _ = cancel.cancelled() => Err(McpError::Request {
            server: server.to_string(),
            what: what.to_string(),
            reason: "cancelled".to_string(),
            upstream: None,
        }),
    }
}

/// The token that cancels the running script's requests, if it has one.
fn cancel_token(state: &State) -> Option<CancellationToken> {
    state.context.read().ok().and_then(|c| c.as_ref().and_then(|cx| cx.cancel.clone()))
}

/// Whether the running script's requests were cancelled (a list over every server then stops
/// instead of leaving the rest out).
fn cancelled(state: &State) -> bool {
    cancel_token(state).is_some_and(|c| c.is_cancelled())
}

/// The servers a list request covers: the one named (checked), or every enabled one.
fn list_servers(state: &State, request: &ListRequest) -> Result<Vec<String>, McpError> {
    match &request.server {
        Some(s) => state.manager.check_server(s).map(|()| vec![s.clone()]),
        None => Ok(state.manager.server_names()),
    }
}

/// The lists of `POST /resources` or `POST /prompts` (`what`), by server: of the one the
/// request names, or of every enabled one (a server that fails is then left out, as a search
/// leaves it out, unless the script was cancelled). `Err` is the answer to send instead.
async fn listed<T, Fut>(
    req: Request<Incoming>,
    state: &State,
    what: &str,
    list: impl Fn(String) -> Fut,
) -> Result<Vec<(String, T)>, Resp>
where
    Fut: Future<Output = Result<T, McpError>>,
{
    let request: ListRequest = read_json(req, "{\"server\"?: \"...\"}").await?;
    let servers = list_servers(state, &request).map_err(mcp_error)?;
    let mut out = Vec::with_capacity(servers.len());
    for server in servers {
        match in_context(state, &server, what, list(server.clone())).await {
            Ok(l) => out.push((server, l)),
            Err(e) if request.server.is_some() || cancelled(state) => return Err(mcp_error(e)),
            Err(e) => tracing::info!("`{what}` leaves out `{server}`: {e}"),
        }
    }
    Ok(out)
}

/// `POST /resources`: the resources and templates of one server or of every enabled one.
async fn list_resources(req: Request<Incoming>, state: &State) -> Resp {
    let manager = &state.manager;
    let lists = match listed(req, state, "resources/list", |s| async move { manager.resources(&s).await }).await {
        Ok(l) => l,
        Err(resp) => return resp,
    };
    let mut out = ResourceList::default();
    for (server, listed) in lists {
        out.resources.extend(listed.resources.iter().map(|r| ResourceInfo {
            server: server.clone(),
            uri: r.uri.clone(),
            name: r.name.clone(),
            title: r.title.clone(),
            description: r.description.clone(),
            mime_type: r.mime_type.clone(),
            size: r.size,
        }));
        out.templates.extend(listed.templates.iter().map(|t| TemplateInfo {
            server: server.clone(),
            uri_template: t.uri_template.clone(),
            name: t.name.clone(),
            title: t.title.clone(),
            description: t.description.clone(),
            mime_type: t.mime_type.clone(),
        }));
    }
    json_response(StatusCode::OK, &out)
}

/// `POST /prompts`: the prompts of one server or of every enabled one.
async fn list_prompts(req: Request<Incoming>, state: &State) -> Resp {
    let manager = &state.manager;
    let lists = match listed(req, state, "prompts/list", |s| async move { manager.prompts(&s).await }).await {
        Ok(l) => l,
        Err(resp) => return resp,
    };
    let mut out = Vec::new();
    for (server, listed) in lists {
        out.extend(listed.iter().map(|p| {
            PromptInfo {
                server: server.clone(),
                name: p.name.clone(),
                title: p.title.clone(),
                description: p.description.clone(),
                arguments: p
                    .arguments
                    .iter()
                    .flatten()
                    .map(|a| PromptArgument {
                        name: a.name.clone(),
                        description: a.description.clone(),
                        required: a.required == Some(true),
                    })
                    .collect(),
            }
        }));
    }
    json_response(StatusCode::OK, &out)
}

/// `POST /resources/read`: one resource's contents (the MCP `ReadResourceResult`).
async fn read_resource(req: Request<Incoming>, state: &State) -> Resp {
    let request: ReadRequest = match read_json(req, "{\"server\": \"...\", \"uri\": \"...\"}").await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let (server, uri) = (&request.server, &request.uri);
    match in_context(state, server, "resources/read", state.manager.read_resource(server, uri)).await {
        Ok(result) => json_response(StatusCode::OK, &result),
        Err(e) => mcp_error(e),
    }
}

/// `POST /prompts/get`: one prompt's messages (the MCP `GetPromptResult`).
async fn get_prompt(req: Request<Incoming>, state: &State) -> Resp {
    let request: PromptRequest =
        match read_json(req, "{\"server\": \"...\", \"name\": \"...\", \"arguments\"?: {...}}").await {
            Ok(r) => r,
            Err(resp) => return resp,
        };
    let PromptRequest { server, name, arguments } = request;
    match in_context(state, &server, "prompts/get", state.manager.get_prompt(&server, &name, arguments)).await {
        Ok(result) => json_response(StatusCode::OK, &result),
        Err(e) => mcp_error(e),
    }
}

fn too_large() -> Resp {
    error(ErrorCode::PayloadTooLarge, format!("request body over the limit of {} bytes", MAX_REQUEST_BYTES), Vec::new())
}

/// Maps a manager error to its bridge error code and status.
pub fn mcp_error(e: McpError) -> Resp {
    let message = e.to_string();
    match e {
        McpError::UnknownServer { suggestions, .. } => error(ErrorCode::UnknownServer, message, suggestions),
        McpError::Disabled(_) => error(ErrorCode::UnknownServer, message, Vec::new()),
        McpError::UnknownTool { suggestions, .. } => error(ErrorCode::UnknownTool, message, suggestions),
        McpError::InvalidArguments { .. } => error(ErrorCode::InvalidArguments, message, Vec::new()),
        McpError::Timeout { .. } => error(ErrorCode::Timeout, message, Vec::new()),
        McpError::UnknownPrompt { suggestions, .. } => error(ErrorCode::UnknownPrompt, message, suggestions),
        McpError::UnknownResource { suggestions, .. } => error(ErrorCode::UnknownResource, message, suggestions),
        McpError::NotOffered { .. } => error(ErrorCode::NotOffered, message, Vec::new()),
        McpError::Start { .. }
        | McpError::Call { .. }
        | McpError::ResultTooLarge { .. }
        | McpError::TooLarge { .. }
        | McpError::Request { .. }
        | McpError::NeedsSignIn { .. } => error(ErrorCode::ServerError, message, Vec::new()),
    }
}

async fn tools(req: Request<Incoming>, state: &State) -> Resp {
    let wanted: Vec<String> = req
        .uri()
        .query()
        .unwrap_or("")
        .split('&')
        .filter_map(|kv| kv.strip_prefix("server="))
        .map(|s| s.to_string())
        .collect();
    let servers = if wanted.is_empty() { state.manager.server_names() } else { wanted };
    let mut all = Vec::new();
    for name in servers {
        match state.manager.tools(&name).await {
            Ok(list) => all.extend(list.iter().cloned()),
            Err(e) => return mcp_error(e),
        }
    }
    json_response(StatusCode::OK, &all)
}

/// `GET /search?q=..&limit=..&server=..`: the catalog of every enabled server, ranked.
async fn search(req: Request<Incoming>, state: &State) -> Resp {
    let bad = |m: String| error(ErrorCode::BadRequest, m, Vec::new());
    let pairs = match query_pairs(req.uri().query().unwrap_or("")) {
        Ok(p) => p,
        Err(e) => return bad(e),
    };
    let (mut query, mut limit, mut servers) = (None, DEFAULT_SEARCH_LIMIT, Vec::new());
    for (key, value) in pairs {
        match key.as_str() {
            "q" => query = Some(value),
            "limit" => match value.parse::<usize>() {
                Ok(n) if (1..=MAX_SEARCH_LIMIT).contains(&n) => limit = n,
                _ => return bad(format!("`limit` must be a whole number from 1 to {MAX_SEARCH_LIMIT}, got `{value}`")),
            },
            "server" => servers.push(value),
            other => return bad(format!("unknown parameter `{other}`; GET /search takes q, limit and server")),
        }
    }
    let Some(query) = query.filter(|q| !q.trim().is_empty()) else {
        return bad("missing query: GET /search?q=<what the tool should do>".into());
    };
    if !crate::search::Index::has_terms(&query) {
        return bad(format!("the query {query:?} has no words to search for (only punctuation or words like `the`)"));
    }
    for s in &servers {
        if let Err(e) = state.manager.check_server(s) {
            return mcp_error(e);
        }
    }
    let (results, _) = state.manager.search_all(&state.manager.server_names(), &query, limit, &servers).await;
    json_response(StatusCode::OK, &results)
}

/// `GET /tools/<server>/<tool>`: one tool's TypeScript declaration and doc.
async fn describe(path: &str, state: &State) -> Resp {
    let rest = path.strip_prefix("/tools/").unwrap_or("");
    let parts =
        rest.split_once('/').and_then(|(s, t)| Some((decode_component(s, false)?, decode_component(t, false)?)));
    let Some((server, tool)) = parts.filter(|(s, t)| !s.is_empty() && !t.is_empty()) else {
        return error(
            ErrorCode::BadRequest,
            format!("expected GET /tools/<server>/<tool> (percent-encoded), got {path}"),
            Vec::new(),
        );
    };
    let tools = match state.manager.tools(&server).await {
        Ok(t) => t,
        Err(e) => return mcp_error(e),
    };
    let Some(info) = tools.iter().find(|t| t.name == tool) else {
        let suggestions = crate::util::suggest::suggest(&tool, tools.iter().map(|t| t.name.as_str()));
        return mcp_error(McpError::UnknownTool { server, tool, suggestions });
    };
    let typescript = match &state.describer {
        Some(render) => render(info, &tools),
        None => plain_declaration(info),
    };
    json_response(
        StatusCode::OK,
        &ToolDescription {
            server: info.server.clone(),
            tool: info.name.clone(),
            signature: signature(info),
            description: info.description.clone().unwrap_or_default(),
            typescript,
        },
    )
}

/// A TSDoc comment with the description and the one-line signature (no describer given).
fn plain_declaration(t: &ToolInfo) -> String {
    let mut s = String::from("/**\n");
    for line in t.description.as_deref().unwrap_or("(no description)").lines() {
        s.push_str(&format!(" * {}\n", line.replace("*/", "*\\/")));
    }
    s.push_str(" */\n");
    s.push_str(&signature(t));
    s.push('\n');
    s
}

/// Hex string of `n` random bytes.
pub fn random_hex(n: usize) -> String {
    (0..n).map(|_| format!("{:02x}", rand::random::<u8>())).collect()
}

/// Removes `agent-<pid>-*` bridge directories left in the temp dir by runs that no longer exist.
fn sweep_stale_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("agent-")) else { continue };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else { continue };
        let path = e.path();
        let ours = std::fs::symlink_metadata(&path).map(|m| {
            use std::os::unix::fs::MetadataExt;
            // SAFETY: getuid has no preconditions.
            m.is_dir() && m.uid() == unsafe { libc::getuid() }
        });
        // SAFETY: kill with signal 0 only checks whether the process exists.
        let alive =
            unsafe { libc::kill(pid, 0) } == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if ours.unwrap_or(false) && !alive && path.join("bridge.sock").exists() {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}
