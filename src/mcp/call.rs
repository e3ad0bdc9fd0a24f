//! The loop that drives one tool call ([`drive`]) with its [`CallContext`].
//!
//! The manager sends every round of a `tools/call` itself: each round's request gets rmcp's own
//! progress token, which is routed to the call's sink by the client handler
//! ([`Calls`](super::context::Calls)); `input_required` rounds are answered by the
//! handler with the call's context (so an elicitation reaches the caller that caused it), a
//! refusal is answered as the spec has it (a declined elicitation is an `ElicitResult`; a denied
//! sampling request is left out of `inputResponses`, so the server decides, and fails the call
//! only when the server asks for it again); and a call that is dropped or cancelled tells the
//! server with `notifications/cancelled`. Nothing here knows who the caller is.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification, CancelledNotificationParam,
    ClientNotification, ClientRequest, InputRequest, RequestId, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::{ErrorData, Peer, RoleClient, ServiceError};

use super::context::CallContext;
use super::handler::McpClientHandler;

/// At most this many `input_required` rounds per call (rmcp's default cap).
pub const MAX_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

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
        if cx.progress.is_some() {
            settle_notifications().await;
        }
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

/// rmcp hands each notification to a task of its own but the answer straight to the waiting
/// call, so a progress notification the server sent just before its answer can still be queued
/// when the answer wakes the call; once the call returns, its progress route is gone and that
/// notification is dropped. Yielding a few times lets the queued handlers run first (they only
/// look up the route and pass the update on), so a call's progress reaches its caller before
/// its result, as the server sent them.
async fn settle_notifications() {
    for _ in 0..4 {
        tokio::task::yield_now().await;
    }
}
