//! The Streamable HTTP client of a server: rmcp's reqwest client (no idle pooling, same-origin
//! 307/308 redirects only, as rmcp's default), with an answer over `mcp.max_result_bytes`
//! failing its call at once with the limit named, as on stdio.
//!
//! rmcp itself refuses an over-long JSON body or SSE event (`max_json_response_size`,
//! `max_sse_event_size`), but the call then fails as "Transport closed". [`CappedHttp`] sits
//! under rmcp's transport: when the answer to a request (a JSON body, or an event of the
//! request's SSE stream) is over the limit, the request gets a JSON-RPC error answer in its
//! place, marked with the connection's [`ResultCap`] nonce, so the manager reports
//! `result of S.T is larger than the N MiB limit` and the session stays usable. An over-long
//! event on a GET stream (the server's own stream, or a request's stream resumed) cannot be
//! tied to a request: every call in flight on the server fails, as on stdio without an id.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use super::stdio::ResultCap;

/// Most redirects followed for one request (rmcp's default client follows as many).
const MAX_REDIRECTS: usize = 10;

type SseStream = BoxStream<'static, Result<Sse, SseError>>;
type HttpResult<T> = Result<T, StreamableHttpError<reqwest::Error>>;

/// rmcp's HTTP client with over-long answers turned into the cap's error (see the module doc).
#[derive(Clone)]
pub struct CappedHttp {
    inner: reqwest::Client,
    cap: Arc<ResultCap>,
}

impl CappedHttp {
    pub fn new(cap: Arc<ResultCap>) -> CappedHttp {
        let inner = reqwest::Client::builder()
            // rmcp's choice: a reused connection whose last body was not read to the end
            // stalls ~40 ms on delayed ACKs.
            .pool_max_idle_per_host(0)
            .redirect(same_origin_redirects())
            .build()
            .unwrap_or_default();
        CappedHttp { inner, cap }
    }

    /// The answer to request `id` in place of one that was too large: the cap's error.
    fn too_large(&self, id: &RequestId) -> Option<ServerJsonRpcMessage> {
        let error = serde_json::to_value(self.cap.error_data()).ok()?;
        serde_json::from_value(serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error})).ok()
    }

    /// `stream` with an over-long event replaced by the cap's error for request `id`, or, when
    /// it belongs to no known request, passed on after failing every call in flight.
    fn capped_stream(&self, stream: SseStream, id: Option<RequestId>) -> SseStream {
        let this = self.clone();
        stream
            .map(move |item| match item {
                Err(e) if is_event_too_large(&e) => {
                    tracing::info!(limit = this.cap.limit, "dropped an HTTP event over the size limit");
                    match id.as_ref().and_then(|id| this.too_large(id)) {
                        Some(answer) => {
                            Ok(Sse { event: None, data: serde_json::to_string(&answer).ok(), id: None, retry: None })
                        }
                        None => {
                            this.cap.fail_all_in_flight();
                            Err(e)
                        }
                    }
                }
                other => other,
            })
            .boxed()
    }
}

/// Whether rmcp's SSE reader refused an event for its size. rmcp does not export the error
/// type, so its message is what identifies it (rmcp is pinned; a test fails if it changes).
fn is_event_too_large(e: &SseError) -> bool {
    matches!(e, SseError::Body(inner) if inner.to_string().starts_with("SSE event exceeded the maximum size"))
}

fn request_id(message: &ClientJsonRpcMessage) -> Option<RequestId> {
    match message {
        ClientJsonRpcMessage::Request(r) => Some(r.id.clone()),
        _ => None,
    }
}

/// rmcp's redirect rule: only 307 and 308 (they keep the method and the body) to the same
/// origin (a session id and custom headers never go to another host), at most
/// [`MAX_REDIRECTS`] hops.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("exceeded {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

impl StreamableHttpClient for CappedHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits).await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits).await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let id = request_id(&message);
        let answer = self
            .inner
            .post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await;
        match answer {
            Err(StreamableHttpError::ResponseBodyTooLarge { max_size }) => {
                tracing::info!(limit = max_size, "dropped an HTTP answer over the size limit");
                match id.as_ref().and_then(|id| self.too_large(id)) {
                    Some(error) => Ok(StreamableHttpPostResponse::Json(error, None)),
                    None => Err(StreamableHttpError::ResponseBodyTooLarge { max_size }),
                }
            }
            Ok(StreamableHttpPostResponse::Sse(stream, session)) => {
                Ok(StreamableHttpPostResponse::Sse(self.capped_stream(stream, id), session))
            }
            other => other,
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        self.inner.delete_session(uri, session_id, auth_header, custom_headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<SseStream> {
        let max = self.cap.limit;
        self.get_stream_with_max_sse_event_size(uri, session_id, last_event_id, auth_header, custom_headers, max).await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<SseStream> {
        let stream = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await?;
        Ok(self.capped_stream(stream, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rmcp's SSE reader over `body` with an event limit: what it yields.
    async fn read_events(body: &'static [u8], limit: usize) -> Vec<Result<Sse, SseError>> {
        use rmcp::transport::streamable_http_client::StreamableHttpPostResponse;
        // The reader rmcp uses is reached through its own client: serve `body` once.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 65536];
            let _ = s.read(&mut buf).await;
            let head =
                format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n", body.len());
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(body).await;
        });
        let cap = ResultCap::new(limit);
        let client = CappedHttp::new(cap.clone());
        let ping: ClientJsonRpcMessage =
            serde_json::from_value(serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "ping"})).unwrap();
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = limit;
        let answer = client
            .post_message_with_response_limits(
                format!("http://{addr}/mcp").into(),
                ping,
                None,
                None,
                HashMap::new(),
                limits,
            )
            .await
            .unwrap();
        let StreamableHttpPostResponse::Sse(stream, _) = answer else { panic!("not an SSE answer") };
        let events = stream.collect::<Vec<_>>().await;
        // The replacement carries the cap's nonce: the manager recognises it.
        for e in events.iter().flatten() {
            let msg: serde_json::Value = serde_json::from_str(e.data.as_deref().unwrap_or("null")).unwrap();
            if let Some(err) = msg.get("error") {
                let data: rmcp::model::ErrorData = serde_json::from_value(err.clone()).unwrap();
                assert!(cap.is_ours(&data));
            }
        }
        events
    }

    #[tokio::test]
    async fn an_over_long_event_of_a_request_becomes_its_error_answer() {
        let ok = read_events(b"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n", 1000).await;
        assert_eq!(ok.len(), 1);
        assert!(ok[0].as_ref().unwrap().data.as_deref().unwrap().contains("\"result\""));
        let big: &'static [u8] = Box::leak(format!("data: {}\n\n", "x".repeat(5000)).into_bytes().into_boxed_slice());
        let events = read_events(big, 1000).await;
        assert_eq!(events.len(), 1, "the error answer, then the end");
        let answer: serde_json::Value =
            serde_json::from_str(events[0].as_ref().unwrap().data.as_deref().unwrap()).unwrap();
        assert_eq!(answer["id"], 7);
        assert_eq!(answer["error"]["message"], "the response is larger than the 1000 bytes limit");
    }
}
