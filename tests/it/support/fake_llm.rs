//! A scripted fake LLM endpoint inside the test process: an HTTP server that speaks both the
//! Anthropic Messages API (`POST /v1/messages`) and OpenAI Chat Completions
//! (`POST /v1/chat/completions`), streamed (SSE, events split across network writes) or not,
//! replaying a script of replies (text, tool calls, HTTP errors, a hang, a dropped connection)
//! and recording every request it receives. Usage figures it reports are o200k token counts of the request body
//! and of what it answers, so `agent run`'s accounting can be checked against them.
#![allow(dead_code)]

use super::fake_http;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response};
use serde_json::{Value, json};

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A final answer (no tool calls).
    Text(String),
    /// Optional text, then tool calls `(name, arguments)`.
    Tools(String, Vec<(String, Value)>),
    /// A tool call whose argument text is sent verbatim (e.g. broken JSON).
    RawTool(String, String),
    /// An HTTP error with this status and body, and an optional `retry-after` header.
    Status(u16, String, Option<String>),
    /// Never answer (until the connection is dropped).
    Hang,
    /// Close the connection without answering (a network error for the client).
    Disconnect,
    /// Stream this text, then end the stream before it is complete (OpenAI streaming only;
    /// otherwise the same as `Disconnect`).
    CutOff(String),
    /// Answer with this status and a body that never ends: the start of a JSON reply (or of a
    /// stream event) and then the same bytes for as long as the client reads (a hostile or
    /// broken endpoint).
    Endless(u16),
}

impl Reply {
    pub fn text(s: &str) -> Reply {
        Reply::Text(s.to_string())
    }
    pub fn tool(name: &str, args: Value) -> Reply {
        Reply::Tools(String::new(), vec![(name.to_string(), args)])
    }
    pub fn tools(text: &str, calls: &[(&str, Value)]) -> Reply {
        Reply::Tools(text.to_string(), calls.iter().map(|(n, a)| (n.to_string(), a.clone())).collect())
    }
}

/// Which API a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Anthropic,
    OpenAi,
}

/// A request as received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub api: Api,
    pub path: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub raw: String,
    pub body: Value,
    /// What the fake reported as usage for it (input, output), when it answered with a reply.
    pub usage: Option<(u64, u64)>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Names of the tools offered in this request, in order.
    pub fn tool_names(&self) -> Vec<String> {
        let tools = self.body.get("tools").and_then(Value::as_array).cloned().unwrap_or_default();
        tools
            .iter()
            .filter_map(|t| t.get("name").or_else(|| t.pointer("/function/name")).and_then(Value::as_str))
            .map(String::from)
            .collect()
    }

    /// The tool results sent back in this request: `(tool call id, content, is_error)`.
    /// OpenAI has no error flag; `agent` marks errors with a `[tool error]` first line there.
    pub fn tool_results(&self) -> Vec<(String, String, bool)> {
        let msgs = self.body.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut out = Vec::new();
        match self.api {
            Api::Anthropic => {
                // Only the newest user message: the results of the previous turn.
                if let Some(last) = msgs.last() {
                    for b in last.get("content").and_then(Value::as_array).into_iter().flatten() {
                        if b["type"] == "tool_result" {
                            out.push((
                                b["tool_use_id"].as_str().unwrap_or("").to_string(),
                                b["content"].as_str().unwrap_or("").to_string(),
                                b["is_error"].as_bool().unwrap_or(false),
                            ));
                        }
                    }
                }
            }
            Api::OpenAi => {
                for m in msgs.iter().rev().take_while(|m| m["role"] == "tool") {
                    let content = m["content"].as_str().unwrap_or("").to_string();
                    let is_error = content.starts_with("[tool error]\n");
                    out.push((m["tool_call_id"].as_str().unwrap_or("").to_string(), content, is_error));
                }
                out.reverse();
            }
        }
        out
    }

    /// The system prompt of this request.
    pub fn system(&self) -> String {
        match self.api {
            Api::Anthropic => self.body.pointer("/system/0/text").and_then(Value::as_str).unwrap_or("").to_string(),
            Api::OpenAi => self.body.pointer("/messages/0/content").and_then(Value::as_str).unwrap_or("").to_string(),
        }
    }
}

#[derive(Default)]
struct State {
    script: VecDeque<Reply>,
    requests: Vec<Recorded>,
    counter: u64,
}

/// The running fake; stops when dropped.
pub struct FakeLlm {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    _server: fake_http::HttpServer,
}

impl FakeLlm {
    /// Starts a fake on 127.0.0.1 (a free port) with this script.
    pub fn start(script: Vec<Reply>) -> FakeLlm {
        let state = Arc::new(Mutex::new(State { script: script.into(), ..Default::default() }));
        let st = state.clone();
        let server = fake_http::HttpServer::start(move |req| handle(req, st.clone()));
        FakeLlm { addr: server.addr, state, _server: server }
    }

    /// Base URL for `provider: anthropic`.
    pub fn anthropic_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Base URL for `provider: openai`.
    pub fn openai_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// An `llm:` config section pointing at this fake.
    pub fn llm_yaml(&self, api: Api) -> String {
        let (provider, url) = match api {
            Api::Anthropic => ("anthropic", self.anthropic_url()),
            Api::OpenAi => ("openai", self.openai_url()),
        };
        format!(
            "llm:\n  provider: {provider}\n  model: fake-model\n  base_url: {url}\n  api_key: test-key\n  max_retries: 3\n  request_timeout: 60s\n"
        )
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().map(|s| s.requests.clone()).unwrap_or_default()
    }

    /// Replies not used yet.
    pub fn remaining(&self) -> usize {
        self.state.lock().map(|s| s.script.len()).unwrap_or(0)
    }
}

pub fn count_tokens(s: &str) -> u64 {
    tiktoken_rs::o200k_base_singleton().encode_ordinary(s).len() as u64
}

type Body = BoxBody<Bytes, Infallible>;

fn full(status: u16, content_type: &str, body: String) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(body)).boxed());
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert("content-type", content_type.parse().expect("content type"));
    r
}

/// An SSE body sent as many small writes; each event is split in two so the client's parser
/// must join pieces across reads.
fn sse(events: Vec<String>) -> Response<Body> {
    let mut frames: Vec<Bytes> = Vec::new();
    for e in events {
        let mid = e.len() / 2;
        let mid = (0..=mid).rev().find(|&i| e.is_char_boundary(i)).unwrap_or(0);
        frames.push(Bytes::from(e[..mid].to_string()));
        frames.push(Bytes::from(e[mid..].to_string()));
    }
    let stream = futures::stream::iter(frames).then(|b| async move {
        tokio::time::sleep(Duration::from_micros(300)).await;
        Ok::<_, Infallible>(Frame::data(b))
    });
    let mut r = Response::new(BodyExt::boxed(StreamBody::new(stream)));
    r.headers_mut().insert("content-type", "text/event-stream".parse().expect("content type"));
    r
}

use futures::StreamExt as _;

async fn handle(req: Request<Incoming>, state: Arc<Mutex<State>>) -> Result<Response<Body>, std::io::Error> {
    let path = req.uri().path().to_string();
    let api = if path.ends_with("/v1/messages") {
        Api::Anthropic
    } else if path.ends_with("/chat/completions") {
        Api::OpenAi
    } else {
        return Ok(full(
            404,
            "application/json",
            json!({"error": {"message": format!("no route {path}")}}).to_string(),
        ));
    };
    let headers = req
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_ascii_lowercase(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let raw = match req.into_body().collect().await {
        Ok(b) => String::from_utf8_lossy(&b.to_bytes()).into_owned(),
        Err(_) => String::new(),
    };
    let body: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
    let stream = body.get("stream").and_then(Value::as_bool) == Some(true);
    let (reply, n, index) = {
        let mut s = state.lock().expect("state");
        s.counter += 1;
        let reply = s.script.pop_front();
        s.requests.push(Recorded { api, path, headers, raw: raw.clone(), body, usage: None });
        (reply, s.counter, s.requests.len() - 1)
    };
    let Some(reply) = reply else {
        return Ok(full(
            400,
            "application/json",
            error_body(api, "invalid_request_error", "fake LLM: the script has no reply left"),
        ));
    };
    let (text, calls) = match reply {
        Reply::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            return Ok(full(500, "text/plain", "hung".into()));
        }
        // hyper closes the connection when the service fails.
        Reply::Disconnect => return Err(std::io::Error::other("fake LLM: disconnecting on purpose")),
        Reply::CutOff(text) => {
            if matches!(api, Api::OpenAi) && stream {
                let mut events = openai_chunks(n, &text, &[], 0, 0);
                // Without the finish chunk, the usage chunk and `[DONE]`.
                events.truncate(events.len() - 3);
                return Ok(sse(events));
            }
            return Err(std::io::Error::other("fake LLM: cutting off on purpose"));
        }
        Reply::Endless(status) => {
            let start = match (status, stream) {
                (200, true) => "data: {\"x\": \"",
                _ => "{\"error\": {\"message\": \"",
            };
            let chunk = Bytes::from(vec![b'x'; 64 << 10]);
            let body = futures::stream::once(async move { Bytes::from(start) })
                .chain(futures::stream::repeat(chunk))
                .map(|b| Ok::<_, Infallible>(Frame::data(b)));
            let content_type = if status == 200 && stream { "text/event-stream" } else { "application/json" };
            let mut r = Response::new(BodyExt::boxed(StreamBody::new(body)));
            *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
            r.headers_mut().insert("content-type", content_type.parse().expect("content type"));
            return Ok(r);
        }
        Reply::Status(status, msg, retry_after) => {
            let mut r = full(status, "application/json", error_body(api, "error", &msg));
            if let Some(ra) = retry_after {
                r.headers_mut().insert("retry-after", ra.parse().expect("retry-after"));
            }
            return Ok(r);
        }
        Reply::Text(t) => (t, vec![]),
        Reply::Tools(t, calls) => (t, calls.into_iter().map(|(n, a)| (n, a.to_string())).collect()),
        Reply::RawTool(name, raw_args) => (String::new(), vec![(name, raw_args)]),
    };
    let input_tokens = count_tokens(&raw);
    let output_tokens =
        count_tokens(&text) + calls.iter().map(|(n, a)| count_tokens(n) + count_tokens(a)).sum::<u64>() + 1;
    if let Ok(mut s) = state.lock() {
        s.requests[index].usage = Some((input_tokens, output_tokens));
    }
    Ok(match (api, stream) {
        (Api::Anthropic, false) => {
            full(200, "application/json", anthropic_message(n, &text, &calls, input_tokens, output_tokens).to_string())
        }
        (Api::Anthropic, true) => sse(anthropic_events(n, &text, &calls, input_tokens, output_tokens)),
        (Api::OpenAi, false) => {
            full(200, "application/json", openai_completion(n, &text, &calls, input_tokens, output_tokens).to_string())
        }
        (Api::OpenAi, true) => sse(openai_chunks(n, &text, &calls, input_tokens, output_tokens)),
    })
}

fn error_body(api: Api, kind: &str, msg: &str) -> String {
    match api {
        Api::Anthropic => json!({"type": "error", "error": {"type": kind, "message": msg}}).to_string(),
        Api::OpenAi => json!({"error": {"message": msg, "type": kind, "code": null}}).to_string(),
    }
}

/// `s` in pieces of about `n` characters.
fn pieces(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

fn anthropic_message(n: u64, text: &str, calls: &[(String, String)], input: u64, output: u64) -> Value {
    let mut content = Vec::new();
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text}));
    }
    for (i, (name, args)) in calls.iter().enumerate() {
        let input: Value = serde_json::from_str(args).unwrap_or(json!({}));
        content.push(json!({"type": "tool_use", "id": format!("toolu_{n}_{i}"), "name": name, "input": input}));
    }
    let stop = if calls.is_empty() { "end_turn" } else { "tool_use" };
    json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant", "model": "fake-model",
           "content": content, "stop_reason": stop,
           "usage": {"input_tokens": input, "output_tokens": output}})
}

fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn anthropic_events(n: u64, text: &str, calls: &[(String, String)], input: u64, output: u64) -> Vec<String> {
    let mut ev = vec![event(
        "message_start",
        json!({"type": "message_start", "message": {"id": format!("msg_{n}"), "type": "message", "role": "assistant",
               "model": "fake-model", "content": [], "stop_reason": null,
               "usage": {"input_tokens": input, "output_tokens": 1}}}),
    )];
    ev.push(event("ping", json!({"type": "ping"})));
    let mut index = 0;
    if !text.is_empty() {
        ev.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        ));
        for p in pieces(text, 7) {
            ev.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}}),
            ));
        }
        ev.push(event("content_block_stop", json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    for (i, (name, args)) in calls.iter().enumerate() {
        ev.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "tool_use", "id": format!("toolu_{n}_{i}"), "name": name, "input": {}}}),
        ));
        for p in pieces(args, 5) {
            ev.push(event("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": p}})));
        }
        ev.push(event("content_block_stop", json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    let stop = if calls.is_empty() { "end_turn" } else { "tool_use" };
    ev.push(event("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": output}})));
    ev.push(event("message_stop", json!({"type": "message_stop"})));
    ev
}

fn openai_completion(n: u64, text: &str, calls: &[(String, String)], input: u64, output: u64) -> Value {
    let tool_calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| json!({"id": format!("call_{n}_{i}"), "type": "function", "function": {"name": name, "arguments": args}}))
        .collect();
    let mut message = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    let finish = if calls.is_empty() { "stop" } else { "tool_calls" };
    json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion", "model": "fake-model",
           "choices": [{"index": 0, "message": message, "finish_reason": finish}],
           "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}})
}

fn openai_chunks(n: u64, text: &str, calls: &[(String, String)], input: u64, output: u64) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        let c = json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion.chunk", "model": "fake-model",
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {c}\n\n")
    };
    let mut ev = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    for p in pieces(text, 7) {
        ev.push(chunk(json!({"content": p}), Value::Null));
    }
    for (i, (name, args)) in calls.iter().enumerate() {
        ev.push(chunk(
            json!({"tool_calls": [{"index": i, "id": format!("call_{n}_{i}"), "type": "function", "function": {"name": name, "arguments": ""}}]}),
            Value::Null,
        ));
        for p in pieces(args, 5) {
            ev.push(chunk(json!({"tool_calls": [{"index": i, "function": {"arguments": p}}]}), Value::Null));
        }
    }
    let finish = if calls.is_empty() { "stop" } else { "tool_calls" };
    ev.push(chunk(json!({}), json!(finish)));
    let usage = json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion.chunk", "model": "fake-model", "choices": [],
                       "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}});
    ev.push(format!("data: {usage}\n\n"));
    ev.push("data: [DONE]\n\n".to_string());
    ev
}
