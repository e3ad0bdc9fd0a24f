//! The bridge client of one script run: what the isolate's `callMCPTool` op sends through (and
//! `listResources`/`readResource`/`listPrompts`/`getPrompt` through `POST`s beside it,
//! `searchTools`/`describeTool` through `GET`s).
//!
//! Same protocol and same socket as [`BridgeClient`](super::BridgeClient) (hyper's HTTP/1 client
//! over a connection opened by hyperlocal's Unix connector), built for a single-threaded owner:
//! it keeps its own idle keep-alive connections, and each request drives its connection inside
//! the calling future instead of a spawned connection task. A sequential tool call then costs
//! at most one wakeup of the isolate's thread (the answer arriving; none while the runner polls
//! for a lone call, see `runtime::wait`) rather than a round of hand-offs between the op, a
//! connection task and the event loop (`cargo bench --bench runtime`, section 3, has the
//! numbers; `docs/exec.md` the history).
//!
//! Dropping a request's future mid-call (a script stopped by its timeout) drops its connection,
//! which closes the socket; the bridge sees the client go away.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper::header::HeaderValue;
use hyper::{Method, Request, StatusCode};
use tower_service::Service;

use super::client::{BridgeError, answer};
use super::server::BridgeEndpoint;

type Body = Full<Bytes>;

/// One keep-alive connection to the bridge. Nobody polls it while it sits idle in the pool;
/// HTTP/1 has nothing to do between requests.
struct Conn {
    tx: http1::SendRequest<Body>,
    /// `None` once the connection future finished (the socket closed or failed). Dropping it
    /// then hands a request that was queued but never written back to its sender.
    conn: Option<Pin<Box<http1::Connection<hyperlocal::UnixStream, Body>>>>,
}

/// How one exchange on a connection failed.
enum Failure {
    /// The request never left: safe to send again on another connection.
    NotSent(Box<Request<Body>>, String),
    /// It may have reached the bridge (a tool call must not run twice).
    Failed(String),
}

/// A bridge client for one thread (not `Send`): idle connections in a `RefCell`.
pub struct LocalBridgeClient {
    endpoint: BridgeEndpoint,
    authorization: HeaderValue,
    idle: RefCell<Vec<Conn>>,
}

impl LocalBridgeClient {
    pub fn new(endpoint: BridgeEndpoint) -> Self {
        // The token is hex (see the server); a token that is no header value gets a 401.
        let authorization =
            HeaderValue::try_from(format!("Bearer {}", endpoint.token)).unwrap_or(HeaderValue::from_static(""));
        Self { endpoint, authorization, idle: RefCell::new(Vec::new()) }
    }

    /// `POST /call` with a pre-encoded JSON body, answering the raw JSON bytes of the result
    /// (including `isError: true` results); any other answer becomes a [`BridgeError`].
    pub async fn call_bytes(&self, body: Bytes) -> Result<Bytes, BridgeError> {
        self.post_bytes("/call", body).await
    }

    /// A `POST` of a pre-encoded JSON body to `path` (`/call`, `/resources`, `/resources/read`,
    /// `/prompts`, `/prompts/get`), answering the raw JSON bytes of a 2xx answer; any other
    /// answer becomes a [`BridgeError`].
    pub async fn post_bytes(&self, path: &'static str, body: Bytes) -> Result<Bytes, BridgeError> {
        let req = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header(hyper::header::HOST, "bridge")
            .header(hyper::header::AUTHORIZATION, self.authorization.clone())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(body))
            .map_err(|e| BridgeError::transport(format!("cannot build the request: {e}")))?;
        let (status, bytes) = self.send(req).await?;
        answer(status, bytes)
    }

    /// A `GET` of `path` (with its query, already encoded), answering the raw JSON bytes of a
    /// 2xx answer; any other answer becomes a [`BridgeError`]. `searchTools`/`describeTool` use it.
    pub async fn get_bytes(&self, path: &str) -> Result<Bytes, BridgeError> {
        let req = Request::builder()
            .method(Method::GET)
            .uri(path)
            .header(hyper::header::HOST, "bridge")
            .header(hyper::header::AUTHORIZATION, self.authorization.clone())
            .body(Full::new(Bytes::new()))
            .map_err(|e| BridgeError::transport(format!("cannot build the request: {e}")))?;
        let (status, bytes) = self.send(req).await?;
        answer(status, bytes)
    }

    /// Connections kept open for the next request.
    pub fn idle_connections(&self) -> usize {
        self.idle.borrow().len()
    }

    /// Sends on an idle connection, or a new one when none is left. A request that an idle
    /// connection could not take (the bridge closed it meanwhile) moves on to the next one.
    async fn send(&self, mut req: Request<Body>) -> Result<(StatusCode, Bytes), BridgeError> {
        loop {
            let pooled = self.idle.borrow_mut().pop();
            let reused = pooled.is_some();
            let mut conn = match pooled {
                Some(conn) => conn,
                None => self.connect().await?,
            };
            match conn.exchange(req).await {
                Ok(answer) => {
                    if conn.conn.is_some() && !conn.tx.is_closed() {
                        self.idle.borrow_mut().push(conn);
                    }
                    return Ok(answer);
                }
                Err(Failure::NotSent(back, _)) if reused => req = *back,
                Err(Failure::NotSent(_, e) | Failure::Failed(e)) => {
                    return Err(BridgeError::transport(format!("the bridge connection failed: {e}")));
                }
            }
        }
    }

    async fn connect(&self) -> Result<Conn, BridgeError> {
        let uri: hyper::Uri = hyperlocal::Uri::new(&self.endpoint.socket, "/").into();
        let stream = hyperlocal::UnixConnector.call(uri).await.map_err(|e| {
            BridgeError::transport(format!("cannot reach the bridge at {}: {e}", self.endpoint.socket.display()))
        })?;
        let (tx, conn) = http1::handshake(stream)
            .await
            .map_err(|e| BridgeError::transport(format!("cannot start HTTP on the bridge socket: {e}")))?;
        Ok(Conn { tx, conn: Some(Box::pin(conn)) })
    }
}

impl Conn {
    /// One request and its whole answer, driving the connection in this future.
    async fn exchange(&mut self, req: Request<Body>) -> Result<(StatusCode, Bytes), Failure> {
        let Conn { tx, conn } = self;
        // Held outside the exchange so a request still unsent when the connection ends is handed
        // back, whether the exchange noticed the end or not.
        let unsent = Cell::new(Some(req));
        let exchange = async {
            if let Err(e) = tx.ready().await {
                return Err(e.to_string());
            }
            let Some(req) = unsent.take() else { return Err("no request to send".to_string()) };
            let resp = match tx.try_send_request(req).await {
                Ok(resp) => resp,
                Err(mut e) => {
                    if let Some(req) = e.take_message() {
                        unsent.set(Some(req));
                    }
                    return Err(e.into_error().to_string());
                }
            };
            let status = resp.status();
            let body = resp.into_body().collect().await.map_err(|e| format!("the answer was cut off: {e}"))?;
            Ok((status, body.to_bytes()))
        };
        let mut exchange = std::pin::pin!(exchange);
        let outcome = std::future::poll_fn(|cx| {
            if conn.as_mut().is_some_and(|c| c.as_mut().poll(cx).is_ready()) {
                *conn = None;
            }
            match exchange.as_mut().poll(cx) {
                Poll::Pending if conn.is_none() => Poll::Ready(Err("the bridge closed the connection".to_string())),
                other => other,
            }
        })
        .await;
        outcome.map_err(|e| match unsent.take() {
            Some(req) => Failure::NotSent(Box::new(req), e),
            None => Failure::Failed(e),
        })
    }
}
