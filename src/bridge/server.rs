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

use super::protocol::{CallRequest, ErrorBody, ErrorCode, ErrorDetail, MAX_REQUEST_BYTES};
use crate::mcp::{McpError, McpManager};

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
}

struct State {
    manager: Arc<McpManager>,
    token: String,
    calls: Arc<AtomicU64>,
}

impl BridgeServer {
    /// Binds a new socket in a private directory and starts serving.
    pub async fn start(manager: Arc<McpManager>) -> std::io::Result<BridgeServer> {
        sweep_stale_dirs();
        let dir = std::env::temp_dir().join(format!("agent-{}-{}", std::process::id(), random_hex(6)));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let socket = dir.join("bridge.sock");
        let result = Self::start_at(manager, &socket).await;
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
        let state = Arc::new(State { manager, token: token.clone(), calls: calls.clone() });
        let task = tokio::spawn(accept_loop(listener, state, cancel.clone()));
        Ok(BridgeServer {
            endpoint: BridgeEndpoint { socket: socket.to_path_buf(), token },
            dir: PathBuf::new(),
            cancel,
            task: Some(task),
            calls,
        })
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
        (Method::GET, "/tools") => tools(req, &state).await,
        (_, "/call" | "/tools") => error(ErrorCode::MethodNotAllowed, "use POST /call or GET /tools", Vec::new()),
        _ => error(
            ErrorCode::NotFound,
            format!("no endpoint {path}; use POST /call, GET /tools, GET /health"),
            Vec::new(),
        ),
    })
}

fn authorized(req: &Request<Incoming>, token: &str) -> bool {
    let Some(value) = req.headers().get(hyper::header::AUTHORIZATION).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let Some(given) = value.strip_prefix("Bearer ") else { return false };
    constant_time_eq(given.trim().as_bytes(), token.as_bytes())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn call(req: Request<Incoming>, state: &State) -> Resp {
    if let Some(len) =
        req.headers().get(hyper::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
        && len > MAX_REQUEST_BYTES
    {
        return too_large();
    }
    let body = match Limited::new(req.into_body(), MAX_REQUEST_BYTES).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => return too_large(),
        Err(e) => return error(ErrorCode::BadRequest, format!("cannot read the request body: {e}"), Vec::new()),
    };
    let request: CallRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return error(
                ErrorCode::BadRequest,
                format!(
                    "invalid request body: {e}; expected {{\"server\": \"...\", \"tool\": \"...\", \"arguments\": {{...}}}}"
                ),
                Vec::new(),
            );
        }
    };
    state.calls.fetch_add(1, Ordering::Relaxed);
    match state.manager.call_tool(&request.server, &request.tool, request.arguments).await {
        Ok(result) => json_response(StatusCode::OK, &crate::mcp::tools::result_json(&result)),
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
        McpError::Start { .. } | McpError::Call { .. } | McpError::ResultTooLarge { .. } => {
            error(ErrorCode::ServerError, message, Vec::new())
        }
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
