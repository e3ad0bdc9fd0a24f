//! One tool call's own context, and the loop that drives it (issue 15/16, `agent mcp serve`).
//!
//! A [`CallContext`] travels with a call: where its progress goes ([`ProgressSink`]), who is
//! asked when the server elicits during it ([`Asker`]: the downstream client of `serve`), and a
//! token that stops it. The manager sends every round of a `tools/call` itself
//! ([`drive`]): each round's request gets rmcp's own progress token, which is routed to the
//! call's sink by the client handler ([`Calls`]); `input_required` rounds are answered by the
//! handler with the call's context (so an elicitation reaches the caller that caused it), a
//! refusal is answered as the spec has it (a declined elicitation is an `ElicitResult`; a denied
//! sampling request is left out of `inputResponses`, so the server decides, and fails the call
//! only when the server asks for it again); and a call that is dropped or cancelled tells the
//! server with `notifications/cancelled`. Nothing here knows who the caller is.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification, CancelledNotificationParam,
    ClientNotification, ClientRequest, ElicitRequestParams, ElicitResult, InputRequest, ProgressToken, RequestId,
    ServerResult,
};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::{ErrorData, Peer, RoleClient, ServiceError};
use tokio_util::sync::CancellationToken;

use super::handler::McpClientHandler;

/// At most this many `input_required` rounds per call (rmcp's default cap).
pub const MAX_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// One progress notification of a call.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressUpdate {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// Where a call's progress goes (called in order of arrival; must not block).
pub type ProgressSink = Arc<dyn Fn(ProgressUpdate) + Send + Sync>;

/// Who made a call, asked when the server elicits during it (e.g. `serve`'s downstream client).
pub trait Asker: Send + Sync {
    /// The answer of whoever made the call; `None` when they cannot be asked (then the server's
    /// `elicitation` policy answers), `Some(Err)` when asking failed (the policy answers too).
    fn elicit<'a>(
        &'a self,
        server: &'a str,
        request: ElicitRequestParams,
    ) -> BoxFuture<'a, Option<Result<ElicitResult, String>>>;
    /// Identifies who is asked (one downstream session): calls of one origin may share an asker
    /// when a server's request cannot be tied to one of them.
    fn origin(&self) -> u64;
}

/// The per-call context; `Default` is a plain call (progress only broadcast, the policy answers).
#[derive(Clone, Default)]
pub struct CallContext {
    pub progress: Option<ProgressSink>,
    pub asker: Option<Arc<dyn Asker>>,
    /// Cancelling it stops the call (the server is told).
    pub cancel: Option<CancellationToken>,
}

/// The calls in flight on one connection: progress routes by token, and the contexts a classic
/// (non-`input_required`) server request may belong to.
#[derive(Default)]
pub struct Calls {
    routes: Mutex<HashMap<ProgressToken, Arc<CallContext>>>,
    in_flight: Mutex<BTreeMap<u64, Arc<CallContext>>>,
    next: AtomicU64,
}

impl Calls {
    /// The call a progress token belongs to.
    pub fn by_token(&self, token: &ProgressToken) -> Option<Arc<CallContext>> {
        self.routes.lock().ok()?.get(token).cloned()
    }

    /// The context a server's request during a call is answered with, when it can be tied to
    /// one: the one call in flight, or several whose askers share one origin.
    pub fn for_request(&self) -> Option<Arc<CallContext>> {
        let calls = self.in_flight.lock().ok()?;
        let mut it = calls.values();
        let first = it.next()?.clone();
        let origin = first.asker.as_ref().map(|a| a.origin());
        it.all(|c| origin.is_some() && c.asker.as_ref().map(|a| a.origin()) == origin).then_some(first)
    }

    fn route(&self, token: ProgressToken, cx: Arc<CallContext>) -> Registered<'_> {
        if let Ok(mut r) = self.routes.lock() {
            r.insert(token.clone(), cx);
        }
        Registered { calls: self, key: Key::Token(token) }
    }

    fn enter(&self, cx: Arc<CallContext>) -> Registered<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut c) = self.in_flight.lock() {
            c.insert(id, cx);
        }
        Registered { calls: self, key: Key::Call(id) }
    }
}

enum Key {
    Token(ProgressToken),
    Call(u64),
}

/// Removes a route or an in-flight entry when dropped.
struct Registered<'a> {
    calls: &'a Calls,
    key: Key,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        match &self.key {
            Key::Token(t) => {
                if let Ok(mut r) = self.calls.routes.lock() {
                    r.remove(t);
                }
            }
            Key::Call(id) => {
                if let Ok(mut c) = self.calls.in_flight.lock() {
                    c.remove(id);
                }
            }
        }
    }
}

/// Sends `notifications/cancelled` for a request whose answer nobody waits for any more.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        let note = CancelledNotification::new(CancelledNotificationParam::new(
            Some(id),
            Some("the caller stopped waiting".into()),
        ));
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = peer.send_notification(ClientNotification::CancelledNotification(note)).await;
            });
        }
    }
}

/// Runs one `tools/call` to its final result: every round through the peer (its own progress
/// token routed to `cx`), `input_required` rounds answered by the handler with `cx`, at most
/// [`MAX_ROUNDS`]; dropped or cancelled, the server is told.
pub async fn drive(
    service: &RunningService<RoleClient, McpClientHandler>,
    mut params: CallToolRequestParams,
    cx: Arc<CallContext>,
) -> Result<CallToolResult, ServiceError> {
    let handler = service.service();
    let calls = handler.calls();
    let _in_flight = calls.enter(cx.clone());
    // Keys of input requests already refused once.
    let mut refused: HashSet<String> = HashSet::new();
    let mut state_only = 0u32;
    for _ in 0..MAX_ROUNDS {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params.clone()));
        let handle = service.peer().send_request_with_option(request, PeerRequestOptions::no_options()).await?;
        let _route = calls.route(handle.progress_token.clone(), cx.clone());
        let mut guard = CancelOnDrop { peer: service.peer().clone(), id: Some(handle.id.clone()) };
        let answer = match &cx.cancel {
            Some(ct) => tokio::select! {
                r = handle.await_response() => r,
                () = ct.cancelled() => return Err(ServiceError::Cancelled { reason: Some("cancelled by the caller".into()) }),
            },
            None => handle.await_response().await,
        };
        guard.id = None;
        let required = match answer? {
            ServerResult::CallToolResult(r) => return Ok(r),
            ServerResult::EmptyResult(_) => return Ok(CallToolResult::success(Vec::new())),
            ServerResult::InputRequiredResult(r) => r,
            _ => return Err(ServiceError::UnexpectedResponse),
        };
        let requests = required.input_requests.unwrap_or_default();
        if requests.is_empty() {
            if required.request_state.is_none() {
                return Err(ServiceError::UnexpectedResponse);
            }
            // Only state to echo (the server is still working): back off as rmcp does.
            let ms = (50u64 << state_only.min(3)).min(250);
            state_only += 1;
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        } else {
            state_only = 0;
        }
        let mut responses = BTreeMap::new();
        for (key, request) in requests {
            let answered = match request {
                InputRequest::Elicitation(r) => handler.elicit(r.params, Some(&cx)).await.and_then(|v| to_json(&v)),
                InputRequest::CreateMessage(r) => handler.sample(r.params).await.and_then(|v| to_json(&v)),
                InputRequest::ListRoots(_) => handler.roots().and_then(|v| to_json(&v)),
                _ => Err(ErrorData::invalid_params("an input request of an unknown kind", None)),
            };
            match answered {
                Ok(v) => {
                    responses.insert(key, v);
                }
                // Refused again after the server saw the first refusal: the call fails with why.
                Err(e) if refused.contains(&key) => return Err(ServiceError::McpError(e)),
                // A refusal has no place in `inputResponses`: left out, the server decides.
                Err(e) => {
                    handler.refused(&e.message);
                    refused.insert(key);
                }
            }
        }
        params.input_responses = (!responses.is_empty()).then_some(responses);
        params.request_state = required.request_state;
    }
    Err(ServiceError::InputRequiredRoundsExceeded { max_rounds: MAX_ROUNDS })
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<serde_json::Value, ErrorData> {
    serde_json::to_value(v)
        .map_err(|e| ErrorData::internal_error(format!("cannot encode an input response: {e}"), None))
}
