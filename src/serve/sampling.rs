//! Upstream sampling requests, answered by serve's own client. An upstream server's
//! `sampling/createMessage` carries no link to the call that caused it, so it goes to the
//! downstream client when every proxied call in flight to that server comes from one session
//! and that client declared `sampling` (on a session before 2026-07-28, where rmcp still sends
//! server-to-client requests); else it is refused, with the reason, and the upstream server
//! sees a sampling error. The server's `sampling` policy is applied first, as always
//! (`deny`, the default, does not even offer sampling upstream; serve has no terminal for
//! `ask`): this is the model `allow` uses in serve, which has none of its own.

#![allow(deprecated)] // sampling (SEP-2577): servers still send it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use rmcp::model::{ClientResult, CreateMessageRequest, CreateMessageRequestParams, ServerRequest};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};

use crate::mcp::host::{SampleAnswer, SampleRequest, Sampler};

/// One proxied call (or script) in flight to a server, and the session it came from.
struct Call {
    id: u64,
    server: String,
    session: u64,
    peer: Peer<RoleServer>,
}

/// Proxied calls in flight.
#[derive(Default)]
pub(super) struct InFlight {
    calls: Mutex<Vec<Call>>,
    next: AtomicU64,
}

/// A call's place in [`InFlight`], given back when dropped.
pub(super) struct Entered {
    id: u64,
    of: Arc<InFlight>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        if let Ok(mut c) = self.of.calls.lock() {
            c.retain(|call| call.id != self.id);
        }
    }
}

impl InFlight {
    /// Notes a proxied call to `server` from `session` until the guard is dropped.
    pub(super) fn enter(self: &Arc<Self>, server: &str, session: u64, peer: Peer<RoleServer>) -> Entered {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut c) = self.calls.lock() {
            c.push(Call { id, server: server.to_string(), session, peer });
        }
        Entered { id, of: self.clone() }
    }

    /// The one session with calls to `server` in flight, or why there is none.
    fn asker_for(&self, server: &str) -> Result<Peer<RoleServer>, String> {
        let calls = self.calls.lock().map_err(|_| "serve is stopping".to_string())?;
        let mut of_server = calls.iter().filter(|c| c.server == server);
        let Some(first) = of_server.next() else {
            return Err(format!("no call of a client of serve is in flight to `{server}`"));
        };
        if of_server.any(|c| c.session != first.session) {
            return Err(format!("calls of several clients of serve are in flight to `{server}`; none is asked"));
        }
        Ok(first.peer.clone())
    }
}

/// The [`Sampler`] serve installs on its manager.
pub(super) struct Forward(pub Arc<InFlight>);

impl Sampler for Forward {
    fn sample<'a>(&'a self, request: &'a SampleRequest) -> BoxFuture<'a, Result<SampleAnswer, String>> {
        Box::pin(async move {
            let peer = self.0.asker_for(&request.server)?;
            let Some(info) = peer.peer_info() else { return Err("the client has not initialized".into()) };
            if info.protocol_version >= rmcp::model::ProtocolVersion::V_2026_07_28 {
                return Err("the client's session (2026-07-28) takes no requests from serve".into());
            }
            if info.capabilities.sampling.is_none() {
                return Err("the client of serve did not declare sampling".into());
            }
            let params: CreateMessageRequestParams =
                serde_json::from_value(to_params(request)).map_err(|e| format!("cannot forward the request: {e}"))?;
            let asked = ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params));
            match peer.send_request(asked).await {
                Ok(ClientResult::CreateMessageResult(r)) => {
                    from_result(&serde_json::to_value(&r).map_err(|e| e.to_string())?)
                }
                Ok(_) => Err("the client answered a sampling request with something else".into()),
                Err(e) => Err(format!("the client of serve failed to sample: {e}")),
            }
        })
    }
}

/// `sampling/createMessage` params for `request` (text messages, as the policy let through).
fn to_params(request: &SampleRequest) -> Value {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|m| {
            json!({"role": if m.assistant { "assistant" } else { "user" }, "content": {"type": "text", "text": m.text}})
        })
        .collect();
    let mut v = json!({"messages": messages, "maxTokens": request.max_tokens});
    if let Some(s) = &request.system {
        v["systemPrompt"] = json!(s);
    }
    if !request.stop.is_empty() {
        v["stopSequences"] = json!(request.stop);
    }
    if let Some(m) = &request.model {
        v["modelPreferences"] = json!({"hints": [{"name": m}]});
    }
    v
}

/// The client's answer: its text, model and stop reason.
fn from_result(v: &Value) -> Result<SampleAnswer, String> {
    let blocks = match &v["content"] {
        Value::Array(a) => a.clone(),
        other => vec![other.clone()],
    };
    let text: String = blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect();
    if text.is_empty() && !blocks.iter().any(|b| b.get("type").and_then(Value::as_str) == Some("text")) {
        return Err("the client's answer holds no text".into());
    }
    Ok(SampleAnswer {
        text,
        model: v["model"].as_str().unwrap_or_default().to_string(),
        stop_reason: v["stopReason"].as_str().map(String::from),
        tokens: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::host::SampleMessage;

    #[test]
    fn requests_and_answers_convert() {
        let r = SampleRequest {
            server: "s".into(),
            system: Some("be brief".into()),
            messages: vec![SampleMessage { assistant: false, text: "hi".into() }],
            max_tokens: 5,
            stop: vec![],
            model: None,
        };
        let v = to_params(&r);
        assert_eq!(v["messages"][0], json!({"role": "user", "content": {"type": "text", "text": "hi"}}));
        assert!(serde_json::from_value::<CreateMessageRequestParams>(v).is_ok());
        let a = from_result(&json!({"role": "assistant", "model": "m", "content": {"type": "text", "text": "yo"}}))
            .unwrap();
        assert_eq!((a.text.as_str(), a.model.as_str(), a.stop_reason), ("yo", "m", None));
        assert!(from_result(&json!({"model": "m", "content": {"type": "image", "data": ""}})).is_err());
    }
}
