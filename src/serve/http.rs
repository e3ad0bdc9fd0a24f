//! `agent mcp serve --http ADDR`: rmcp's Streamable HTTP server at `/mcp` on hyper.
//!
//! Loopback by default; a non-loopback address needs a bearer token. Every request to `/mcp`
//! is checked in this order: the bearer token when one is set (401, compared in constant
//! time), then rmcp's own checks with `Host` limited to loopback names (unless a token guards a
//! non-loopback address) and `Origin` absent or a loopback origin (403): the DNS-rebinding
//! defence a local server needs. Any other path is 404.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::Server;

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

/// A bound, not yet serving, HTTP endpoint.
pub struct HttpServer {
    listener: tokio::net::TcpListener,
    local: SocketAddr,
    service: StreamableHttpService<Server, LocalSessionManager>,
    token: Option<Arc<String>>,
    cancel: CancellationToken,
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
    pub async fn bind(server: Server, addr: SocketAddr, token: Option<String>) -> anyhow::Result<HttpServer> {
        let loopback = addr.ip().is_loopback();
        if !loopback && token.is_none() {
            anyhow::bail!(
                "refusing to listen on {addr} without a token: anyone who can reach it could run code here \
                 (use --token-env VAR, or a loopback address such as 127.0.0.1:{})",
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
            .with_cancellation_token(cancel.clone());
        if !loopback {
            // Behind a token, a rebinding page cannot authenticate; the Host may be any name.
            config = config.disable_allowed_hosts();
        }
        let service =
            StreamableHttpService::new(move || Ok(server.clone()), Arc::new(LocalSessionManager::default()), config);
        Ok(HttpServer { listener, local, service, token: token.map(Arc::new), cancel })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Accepts connections until the future is dropped (sessions end with it).
    pub async fn run(self) -> anyhow::Result<()> {
        let _stop = self.cancel.clone().drop_guard();
        loop {
            let (stream, _) = match self.listener.accept().await {
                Ok(s) => s,
                Err(e) => {
                    // Out of file descriptors and the like: keep serving the others.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            // Answers go out as a header write and a body write; with Nagle on, a client that keeps
            // its connection (httpx, browsers, curl) waited 40 ms for each answer's second
            // segment (delayed ACK), measured.
            if let Err(e) = stream.set_nodelay(true) {
                tracing::debug!("cannot set TCP_NODELAY: {e}");
            }
            let service = self.service.clone();
            let token = self.token.clone();
            let handler = hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                let mut service = service.clone();
                let token = token.clone();
                async move {
                    if req.uri().path() != PATH {
                        return Ok::<_, std::convert::Infallible>(plain(
                            http::StatusCode::NOT_FOUND,
                            "not found: MCP is at /mcp\n",
                        ));
                    }
                    if let Some(token) = &token
                        && !authorized(req.headers(), token)
                    {
                        let mut r = plain(http::StatusCode::UNAUTHORIZED, "missing or wrong bearer token\n");
                        r.headers_mut()
                            .insert(http::header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer"));
                        return Ok(r);
                    }
                    tower_service::Service::call(&mut service, req).await
                }
            });
            tokio::spawn(async move {
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), handler)
                    .await;
            });
        }
    }
}

type Body = http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>;

fn plain(status: http::StatusCode, text: &'static str) -> http::Response<Body> {
    let mut r = http::Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
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
    fn tokens_compare() {
        let mut h = http::HeaderMap::new();
        assert!(!authorized(&h, "s3"));
        h.insert(http::header::AUTHORIZATION, http::HeaderValue::from_static("Bearer s3"));
        assert!(authorized(&h, "s3"));
        assert!(!authorized(&h, "s4"));
        assert!(!authorized(&h, "s33"));
    }
}
