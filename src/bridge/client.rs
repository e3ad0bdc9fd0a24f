//! The pooled bridge client, for any thread and any runtime (tests, benchmarks, other Rust
//! callers): hyper's legacy pooled client over hyperlocal's Unix connector, so concurrent calls
//! reuse keep-alive connections. The isolate uses [`LocalBridgeClient`](super::LocalBridgeClient)
//! instead. Both read answers through [`answer`].

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyperlocal::{UnixClientExt, UnixConnector};
use serde_json::Value;

use super::protocol::{CallRequest, ErrorBody, ErrorCode, ToolDescription, encode_component};
use super::server::BridgeEndpoint;
use crate::mcp::catalog::SearchResult;

/// A failed bridge request: the bridge's error code (or `None` when the bridge was unreachable).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct BridgeError {
    pub code: Option<ErrorCode>,
    pub status: Option<u16>,
    pub message: String,
    pub suggestions: Vec<String>,
}

impl BridgeError {
    pub(super) fn transport(message: String) -> Self {
        Self { code: None, status: None, message, suggestions: Vec::new() }
    }

    /// The code as the wire string (`"unknown_tool"`), or `"bridge_unreachable"`.
    pub fn code_str(&self) -> &'static str {
        self.code.map(ErrorCode::as_str).unwrap_or("bridge_unreachable")
    }
}

#[derive(Clone)]
pub struct BridgeClient {
    endpoint: BridgeEndpoint,
    client: Client<UnixConnector, Full<Bytes>>,
}

impl BridgeClient {
    pub fn new(endpoint: BridgeEndpoint) -> Self {
        Self { endpoint, client: Client::unix() }
    }

    /// `POST /call`; returns the raw `CallToolResult` JSON (including `isError: true` results).
    pub async fn call(&self, req: &CallRequest) -> Result<Value, BridgeError> {
        let body =
            serde_json::to_vec(req).map_err(|e| BridgeError::transport(format!("cannot encode the call: {e}")))?;
        self.request(Method::POST, "/call", Bytes::from(body)).await
    }

    /// `POST /call` with a pre-encoded JSON body, answering the raw JSON bytes of the result.
    pub async fn call_bytes(&self, body: Bytes) -> Result<Bytes, BridgeError> {
        self.request_bytes(Method::POST, "/call", body).await
    }

    /// `GET /search`: the tools of every enabled server ranked for `query`, best first.
    pub async fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchResult>, BridgeError> {
        let path = format!("/search?q={}&limit={limit}", encode_component(query));
        let bytes = self.request_bytes(Method::GET, &path, Bytes::new()).await?;
        serde_json::from_slice(&bytes).map_err(|e| BridgeError::transport(format!("bridge sent invalid JSON: {e}")))
    }

    /// `GET /tools/<server>/<tool>`: one tool's TypeScript declaration and doc.
    pub async fn describe(&self, server: &str, tool: &str) -> Result<ToolDescription, BridgeError> {
        let path = format!("/tools/{}/{}", encode_component(server), encode_component(tool));
        let bytes = self.request_bytes(Method::GET, &path, Bytes::new()).await?;
        serde_json::from_slice(&bytes).map_err(|e| BridgeError::transport(format!("bridge sent invalid JSON: {e}")))
    }

    /// `GET /health`.
    pub async fn health(&self) -> Result<Value, BridgeError> {
        self.request(Method::GET, "/health", Bytes::new()).await
    }

    async fn request(&self, method: Method, path: &str, body: Bytes) -> Result<Value, BridgeError> {
        let bytes = self.request_bytes(method, path, body).await?;
        serde_json::from_slice(&bytes).map_err(|e| BridgeError::transport(format!("bridge sent invalid JSON: {e}")))
    }

    /// The body of a successful (2xx) answer; anything else becomes a [`BridgeError`].
    async fn request_bytes(&self, method: Method, path: &str, body: Bytes) -> Result<Bytes, BridgeError> {
        let uri: hyper::Uri = hyperlocal::Uri::new(&self.endpoint.socket, path).into();
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .header(hyper::header::AUTHORIZATION, format!("Bearer {}", self.endpoint.token))
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(body))
            .map_err(|e| BridgeError::transport(format!("cannot build the request: {e}")))?;
        let resp = self.client.request(req).await.map_err(|e| {
            BridgeError::transport(format!("cannot reach the bridge at {}: {e}", self.endpoint.socket.display()))
        })?;
        let status = resp.status();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| BridgeError::transport(format!("bridge response cut off: {e}")))?
            .to_bytes();
        answer(status, bytes)
    }
}

/// The body of a successful (2xx) answer; anything else becomes a [`BridgeError`].
pub(super) fn answer(status: StatusCode, bytes: Bytes) -> Result<Bytes, BridgeError> {
    if status.is_success() {
        return Ok(bytes);
    }
    match serde_json::from_slice::<ErrorBody>(&bytes) {
        Ok(b) => Err(BridgeError {
            code: Some(b.error.code),
            status: Some(status.as_u16()),
            message: b.error.message,
            suggestions: b.error.suggestions,
        }),
        Err(_) => Err(BridgeError {
            code: None,
            status: Some(status.as_u16()),
            message: format!(
                "bridge answered {status}: {}",
                String::from_utf8_lossy(&bytes).chars().take(200).collect::<String>()
            ),
            suggestions: Vec::new(),
        }),
    }
}
