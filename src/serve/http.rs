//! `agent mcp serve --http ADDR`: rmcp's Streamable HTTP server at `/mcp`, on hyper's HTTP/1.
//!
//! Every request to `/mcp` is checked in this order: the bearer token when one is set (401,
//! compared in constant time; `serve` always sets one unless `--no-auth`), then rmcp's own
//! checks with `Host` limited to loopback names (unless a token guards a non-loopback address)
//! and `Origin` absent or a loopback origin (403): the DNS-rebinding defence a local server needs.
//! Any other path is 404. A POST body is read here first, within `serve.max_message_bytes` and
//! `serve.read_timeout` (413, 408): what is not one JSON-RPC message gets 400 with a JSON-RPC
//! error (`-32700` for bad JSON, `-32600` for a batch or another shape) and a short message, and
//! an `initialize` over `serve.max_sessions` gets 503 while the open sessions go on.
//!
//! Connections: hyper's header timeout (`serve.read_timeout`) closes a client that is slow to
//! send its headers, or idle between requests, and [`conns`](super::conns) caps how many are
//! open: at the cap the one idle longest makes room, so a flood of half-open or slow connections
//! cannot lock real clients out, nor use up the process's file descriptors.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorCode, ErrorData, JsonRpcError, RequestId};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::Server;
use super::conns::{Busy, Conn, Conns, Tracked};
use super::sessions::Sessions;
use crate::config::ServeConfig;

/// The path the MCP endpoint is served at.
pub const PATH: &str = "/mcp";

/// Origins a browser page on this machine sends.
const LOOPBACK_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];

/// Descriptors kept out of the connection budget: upstream servers' pipes, bridges, logs.
const RESERVED_FDS: u64 = 64;

/// The limits of one HTTP endpoint (`serve:` in the config).
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_connections: usize,
    pub max_sessions: usize,
    pub session_idle_timeout: Duration,
    pub read_timeout: Duration,
    pub max_message_bytes: usize,
}

impl Limits {
    pub fn from_config(c: &ServeConfig) -> Limits {
        Limits {
            max_connections: c.max_connections,
            max_sessions: c.max_sessions,
            session_idle_timeout: c.session_idle_timeout,
            read_timeout: c.read_timeout,
            max_message_bytes: usize::try_from(c.max_message_bytes).unwrap_or(usize::MAX),
        }
    }
}

/// A bound, not yet serving, HTTP endpoint.
pub struct HttpServer {
    listener: tokio::net::TcpListener,
    local: SocketAddr,
    shared: Arc<Shared>,
    cancel: CancellationToken,
    /// Set when the open-file limit lowered `max_connections` (for the command to say).
    pub lowered_connections: Option<(usize, u64)>,
}

/// What every connection's handler needs.
struct Shared {
    service: StreamableHttpService<Server, Sessions>,
    sessions: Arc<Sessions>,
    conns: Conns,
    token: Option<String>,
    limits: Limits,
}

/// `ADDR` as typed: `HOST:PORT`, `:PORT` (loopback) or `PORT`; `localhost` means 127.0.0.1.
pub fn parse_addr(addr: &str) -> Result<SocketAddr, String> {
    let a = addr.trim();
    let a = if let Some(port) = a.strip_prefix(':') {
        format!("127.0.0.1:{port}")
    } else if a.parse::<u16>().is_ok() {
        format!("127.0.0.1:{a}")
    } else if let Some(port) = a.strip_prefix("localhost:") {
        format!("127.0.0.1:{port}")
    } else {
        a.to_string()
    };
    a.parse::<SocketAddr>()
        .map_err(|_| format!("`{addr}` is not an address (expected HOST:PORT, :PORT or PORT, e.g. 127.0.0.1:8808)"))
}

impl HttpServer {
    /// Binds `addr`. A non-loopback address without a token is refused.
    pub async fn bind(
        server: Server,
        addr: SocketAddr,
        token: Option<String>,
        limits: Limits,
    ) -> anyhow::Result<HttpServer> {
        let loopback = addr.ip().is_loopback();
        if !loopback && token.is_none() {
            anyhow::bail!(
                "refusing to listen on {addr} without a token: anyone who can reach it could run code here \
                 (drop --no-auth, or use a loopback address such as 127.0.0.1:{})",
                addr.port()
            );
        }
        let listener =
            tokio::net::TcpListener::bind(addr).await.map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
        let local = listener.local_addr().map_err(|e| anyhow::anyhow!("cannot read the bound address: {e}"))?;
        let cancel = CancellationToken::new();
        let mut config = StreamableHttpServerConfig::default()
            .with_allowed_origins(LOOPBACK_ORIGINS.iter().copied())
            .enforce_origin_validation()
            // A plain JSON answer where nothing comes before it (SSE only when progress or a
            // request precedes the result): one response body instead of an event stream.
            .with_json_response(true)
            .with_max_request_body_bytes(limits.max_message_bytes)
            .with_cancellation_token(cancel.clone());
        if !loopback {
            // Behind a token, a rebinding page cannot authenticate; the Host may be any name.
            config = config.disable_allowed_hosts();
        }
        let sessions = Arc::new(Sessions::new(limits.max_sessions, limits.session_idle_timeout));
        let service = StreamableHttpService::new(move || Ok(server.for_session()), sessions.clone(), config);
        let (max_connections, lowered_connections) = match connection_budget() {
            Some(budget) if (budget as usize) < limits.max_connections => {
                (budget.max(1) as usize, Some((limits.max_connections, budget)))
            }
            _ => (limits.max_connections, None),
        };
        let shared = Arc::new(Shared { service, sessions, conns: Conns::new(max_connections), token, limits });
        Ok(HttpServer { listener, local, shared, cancel, lowered_connections })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Accepts connections until the future is dropped (sessions end with it).
    pub async fn run(self) -> anyhow::Result<()> {
        let _stop = self.cancel.clone().drop_guard();
        let mut last_warning: Option<std::time::Instant> = None;
        loop {
            let (stream, _) = match self.listener.accept().await {
                Ok(s) => s,
                Err(e) => {
                    // Out of file descriptors and the like (the cap should keep this from
                    // happening): keep serving the others, and say so once in a while.
                    if last_warning.is_none_or(|t| t.elapsed() > Duration::from_secs(10)) {
                        tracing::warn!("accept failed: {e}");
                        last_warning = Some(std::time::Instant::now());
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            // Answers go out as a header write and a body write; with Nagle on, a client that keeps
            // its connection (httpx, browsers, curl) waited 40 ms for each answer's second
            // segment (delayed ACK), measured.
            if let Err(e) = stream.set_nodelay(true) {
                tracing::debug!("cannot set TCP_NODELAY: {e}");
            }
            let Some((conn, evicted)) = self.shared.conns.admit() else {
                // Every connection has a request in flight: say so and close this one.
                let _ = stream.try_write(BUSY);
                continue;
            };
            tokio::spawn(serve_connection(self.shared.clone(), conn, stream));
            if let Some(old) = evicted {
                // Its descriptor is freed by its own task: wait for it, so a burst of new
                // connections cannot outrun the closing of old ones.
                let _ = tokio::time::timeout(Duration::from_secs(1), old.done.cancelled()).await;
            }
        }
    }
}

/// The answer to a connection over the cap when no open one can make room.
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 55\r\n\
Retry-After: 1\r\nConnection: close\r\n\r\ntoo many connections, all busy (serve.max_connections)\n";

/// How many connections the open-file limit leaves room for (after raising the soft limit to
/// the hard one); `None` when it cannot be read.
fn connection_budget() -> Option<u64> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `lim` is a valid rlimit for the calls to fill and read.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return None;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
    }
    if lim.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    let open = std::fs::read_dir("/proc/self/fd").map(|d| d.count() as u64).unwrap_or(0);
    Some(lim.rlim_cur.saturating_sub(open + RESERVED_FDS))
}

/// Serves one connection until it ends, or until the table closes it to make room.
async fn serve_connection(shared: Arc<Shared>, conn: Arc<Conn>, stream: tokio::net::TcpStream) {
    let handler = {
        let shared = shared.clone();
        let conn = conn.clone();
        hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
            let shared = shared.clone();
            let busy = conn.begin();
            async move { Ok::<_, std::convert::Infallible>(handle(&shared, req, busy).await) }
        })
    };
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(shared.limits.read_timeout)
        .serve_connection(TokioIo::new(stream), handler);
    tokio::select! {
        _ = connection => {}
        // Dropping the connection closes the socket.
        _ = conn.close.cancelled() => {}
    }
    shared.conns.remove(&conn);
}

type Body = http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>;
type Response = http::Response<Tracked<Body>>;

/// One request to the endpoint (see the module doc for the order of checks).
async fn handle(shared: &Shared, req: http::Request<hyper::body::Incoming>, busy: Busy) -> Response {
    let answer = route(shared, req).await;
    answer.map(|b| Tracked::new(b, busy))
}

async fn route(shared: &Shared, req: http::Request<hyper::body::Incoming>) -> http::Response<Body> {
    if req.uri().path() != PATH {
        return plain(http::StatusCode::NOT_FOUND, "not found: MCP is at /mcp\n");
    }
    if let Some(token) = &shared.token
        && !authorized(req.headers(), token)
    {
        let mut r = plain(http::StatusCode::UNAUTHORIZED, "missing or wrong bearer token\n");
        r.headers_mut().insert(http::header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer"));
        return r;
    }
    let (parts, body) = req.into_parts();
    let body = if parts.method == http::Method::POST && is_json(&parts.headers) {
        match read_message(shared, &parts, body).await {
            Ok(bytes) => bytes,
            Err(answer) => return answer,
        }
    } else {
        // GET and DELETE carry no body; a POST of another type gets rmcp's 415.
        Bytes::new()
    };
    let delete = parts.method == http::Method::DELETE;
    let req = http::Request::from_parts(parts, Full::new(body));
    let mut service = shared.service.clone();
    let mut answer = match tower_service::Service::call(&mut service, req).await {
        Ok(r) => r,
        Err(never) => match never {},
    };
    // rmcp ends a session on DELETE with `202 Accepted`; the SDKs take 200/204 as "ended" (the
    // Python SDK warns `Session termination failed: 202` on anything else), and the session
    // is ended by then, so it is said as 204 No Content.
    if delete && answer.status() == http::StatusCode::ACCEPTED {
        *answer.status_mut() = http::StatusCode::NO_CONTENT;
        answer.headers_mut().remove(http::header::CONTENT_LENGTH);
        answer.headers_mut().remove(http::header::CONTENT_TYPE);
    }
    answer
}

fn is_json(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

/// The body of a POST, when it is one JSON-RPC message this endpoint takes; else the answer.
async fn read_message(
    shared: &Shared,
    parts: &http::request::Parts,
    body: hyper::body::Incoming,
) -> Result<Bytes, http::Response<Body>> {
    let max = shared.limits.max_message_bytes;
    let too_large = || {
        plain_owned(
            http::StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body over {max} bytes (serve.max_message_bytes)\n"),
        )
    };
    let declared = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    let collected =
        tokio::time::timeout(shared.limits.read_timeout, http_body_util::Limited::new(body, max).collect()).await;
    let bytes = match collected {
        Err(_) => {
            return Err(plain_owned(
                http::StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive within {:?} (serve.read_timeout)\n",
                    shared.limits.read_timeout
                ),
            ));
        }
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => return Err(too_large()),
        Ok(Err(_)) => return Err(plain(http::StatusCode::BAD_REQUEST, "the request body could not be read\n")),
        Ok(Ok(c)) => c.to_bytes(),
    };
    let message = classify(&bytes).map_err(|r| jsonrpc_error(http::StatusCode::BAD_REQUEST, r.id, r.error))?;
    if let ClientJsonRpcMessage::Request(r) = &message
        && matches!(r.request, ClientRequest::InitializeRequest(_))
        && !parts.headers.contains_key("mcp-session-id")
    {
        let open = shared.sessions.open().await;
        if open >= shared.sessions.max() {
            let error = ErrorData::new(
                ErrorCode(-32000),
                format!(
                    "too many sessions: {open} are open (serve.max_sessions); end one (HTTP DELETE) or wait until \
                     idle ones expire"
                ),
                None,
            );
            let mut answer = jsonrpc_error(http::StatusCode::SERVICE_UNAVAILABLE, Some(r.id.clone()), error);
            answer.headers_mut().insert(http::header::RETRY_AFTER, http::HeaderValue::from_static("5"));
            return Err(answer);
        }
    }
    Ok(bytes)
}

/// A body that is not one JSON-RPC message: the error to answer with, and the id when readable.
struct Rejection {
    id: Option<RequestId>,
    error: ErrorData,
}

/// One JSON-RPC message from a client, or why not.
fn classify(bytes: &[u8]) -> Result<ClientJsonRpcMessage, Box<Rejection>> {
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
        Box::new(Rejection {
            id: None,
            error: ErrorData::new(ErrorCode::PARSE_ERROR, format!("Parse error: {e}"), None),
        })
    })?;
    let invalid = |id, why: String| {
        Box::new(Rejection {
            id,
            error: ErrorData::new(ErrorCode::INVALID_REQUEST, format!("Invalid Request: {why}"), None),
        })
    };
    let object = match &value {
        serde_json::Value::Array(_) => {
            return Err(invalid(None, "batches are not supported; send one JSON-RPC message per request".into()));
        }
        serde_json::Value::Object(o) => o,
        _ => return Err(invalid(None, "a JSON-RPC message is a JSON object".into())),
    };
    let id = object.get("id").and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok());
    if object.get("jsonrpc").and_then(|v| v.as_str()) != Some("2.0") {
        return Err(invalid(id, "`jsonrpc` must be \"2.0\"".into()));
    }
    serde_json::from_value::<ClientJsonRpcMessage>(value.clone()).map_err(|_| {
        let why = match object.get("method").and_then(|m| m.as_str()) {
            // The method name goes back only when it is a plain short name.
            Some(m) if m.len() <= 64 && m.bytes().all(|b| b.is_ascii_alphanumeric() || b"/_-.".contains(&b)) => {
                format!("a `{m}` message of a shape this server does not take")
            }
            Some(_) => "a message of a shape this server does not take".into(),
            None => "neither a request, a notification nor a response".into(),
        };
        invalid(id, why)
    })
}

fn jsonrpc_error(status: http::StatusCode, id: Option<RequestId>, error: ErrorData) -> http::Response<Body> {
    let body = serde_json::to_vec(&JsonRpcError::new(id, error)).unwrap_or_default();
    let mut r = http::Response::new(Full::new(Bytes::from(body)).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    r
}

fn plain(status: http::StatusCode, text: &'static str) -> http::Response<Body> {
    let mut r = http::Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *r.status_mut() = status;
    r
}

fn plain_owned(status: http::StatusCode, text: String) -> http::Response<Body> {
    let mut r = http::Response::new(Full::new(Bytes::from(text)).boxed());
    *r.status_mut() = status;
    r
}

/// `Authorization: Bearer <token>` (see `util::bearer`).
fn authorized(headers: &http::HeaderMap, token: &str) -> bool {
    crate::util::bearer::matches(headers.get(http::header::AUTHORIZATION).map(|v| v.as_bytes()), token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse() {
        assert_eq!(parse_addr(":0").unwrap().to_string(), "127.0.0.1:0");
        assert_eq!(parse_addr("8808").unwrap().to_string(), "127.0.0.1:8808");
        assert_eq!(parse_addr("localhost:9").unwrap().to_string(), "127.0.0.1:9");
        assert_eq!(parse_addr("[::1]:9").unwrap().to_string(), "[::1]:9");
        assert!(parse_addr("nope").unwrap_err().contains("not an address"));
    }

    #[test]
    fn only_single_json_rpc_messages_pass() {
        let code = |b: &str| classify(b.as_bytes()).err().map(|r| (r.id, r.error.code.0));
        assert_eq!(code("{not json"), Some((None, -32700)));
        assert_eq!(code(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#), Some((None, -32600)));
        assert_eq!(code("42"), Some((None, -32600)));
        assert_eq!(code(r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#), Some((Some(RequestId::Number(3)), -32600)));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":"a"}"#), Some((Some(RequestId::String("a".into())), -32600)));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), None);
        let e = classify(b"{\"a\": tru").err().unwrap().error;
        assert!(e.message.len() < 80 && e.message.starts_with("Parse error: "), "{}", e.message);
    }

    #[test]
    fn the_busy_answer_says_its_length() {
        let text = std::str::from_utf8(BUSY).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("Content-Length: {}\r\n", body.len())), "{text}");
    }

    #[test]
    fn tokens_compare() {
        let mut h = http::HeaderMap::new();
        assert!(!authorized(&h, "s3"));
        h.insert(http::header::AUTHORIZATION, http::HeaderValue::from_static("Bearer s3"));
        assert!(authorized(&h, "s3"));
        assert!(!authorized(&h, "s4"));
        assert!(!authorized(&h, "s33"));
        for scheme in ["bearer", "BEARER"] {
            h.insert(http::header::AUTHORIZATION, http::HeaderValue::from_str(&format!("{scheme} s3")).unwrap());
            assert!(authorized(&h, "s3"), "{scheme}");
        }
    }
}
