//! Anthropic Messages API (`POST {base}/v1/messages`), streaming (SSE) or not.
//!
//! Streaming assembles text from `text_delta` events and each tool call from its
//! `content_block_start` (id, name) plus the `input_json_delta` fragments of its block; usage comes
//! from `message_start` (input, cache reads/writes) and `message_delta` (output). The system
//! prompt, the last tool and the newest message carry `cache_control` breakpoints so a long run
//! re-reads its growing prefix from the prompt cache instead of paying for it every turn.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::provider::{
    ChatRequest, ChatResponse, EventSink, HttpSettings, LlmProvider, Message, Part, ProviderError, ProviderEvent, Role,
    StopReason, ToolCall, Usage, join_url, next_chunk, with_retries,
};

pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
const API_VERSION: &str = "2023-06-01";

pub struct Anthropic {
    url: String,
    key: Option<String>,
    http: HttpSettings,
}

impl Anthropic {
    pub fn new(base: String, key: Option<String>, http: HttpSettings) -> Anthropic {
        // Accept both `https://api.anthropic.com` and `.../v1` as the base URL.
        let url = if base.trim_end_matches('/').ends_with("/v1") {
            join_url(&base, "messages")
        } else {
            join_url(&base, "v1/messages")
        };
        Anthropic { url, key, http }
    }

    async fn attempt(
        &self,
        req: ChatRequest<'_>,
        body: &Value,
        events: EventSink<'_>,
    ) -> Result<ChatResponse, ProviderError> {
        let mut rb = self
            .http
            .client
            .post(&self.url)
            .header("anthropic-version", API_VERSION)
            .header("content-type", "application/json")
            .json(body);
        if let Some(k) = &self.key {
            rb = rb.header("x-api-key", k);
        }
        let resp = self.http.send(&self.url, rb).await?;
        if !req.stream {
            let v = self.http.read_json(&self.url, resp).await?;
            let r = parse_message(&v).map_err(|m| self.protocol(m))?;
            if !r.text.is_empty() {
                events(ProviderEvent::Text(&r.text));
            }
            return Ok(r);
        }
        let mut stream = sse_stream::SseStream::from_bytes_stream(super::provider::capped_stream(resp));
        let mut acc = StreamState::default();
        while let Some(ev) = next_chunk(&mut stream, &self.url, self.http.idle_timeout).await? {
            let Some(data) = ev.data.as_deref() else { continue };
            if data.trim().is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(data)
                .map_err(|e| self.protocol(format!("invalid JSON in a stream event ({e})")))?;
            if acc.apply(&v, events).map_err(|e| self.stream_error(e))? {
                return acc.finish().map_err(|m| self.protocol(m));
            }
        }
        Err(ProviderError::Network { url: self.url.clone(), message: "the stream ended before `message_stop`".into() })
    }

    fn protocol(&self, message: String) -> ProviderError {
        ProviderError::Protocol { url: self.url.clone(), message }
    }

    fn stream_error(&self, (message, retryable): (String, bool)) -> ProviderError {
        ProviderError::Stream { url: self.url.clone(), message, retryable }
    }
}

impl LlmProvider for Anthropic {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn complete<'a>(
        &'a self,
        req: ChatRequest<'a>,
        events: EventSink<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let body = request_body(&req);
            with_retries(self.http.retry, events, || self.attempt(req, &body, events)).await
        })
    }
}

/// The JSON body of a Messages API request.
pub fn request_body(req: &ChatRequest<'_>) -> Value {
    let mut messages: Vec<Value> = req.messages.iter().filter_map(message_json).collect();
    // Cache breakpoint on the newest block: the next turn re-reads everything up to here.
    if let Some(last) = messages.last_mut().and_then(|m| m.get_mut("content")).and_then(Value::as_array_mut)
        && let Some(Value::Object(block)) = last.last_mut()
    {
        block.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
    let mut body = json!({
        "model": req.model,
        "max_tokens": req.max_tokens,
        "messages": messages,
    });
    if !req.system.is_empty() {
        body["system"] = json!([{"type": "text", "text": req.system, "cache_control": {"type": "ephemeral"}}]);
    }
    if !req.tools.is_empty() {
        body["tools"] = tools_json(req.tools);
    }
    if !req.stop.is_empty() {
        body["stop_sequences"] = json!(req.stop);
    }
    if req.stream {
        body["stream"] = Value::Bool(true);
    }
    body
}

/// The `tools` array as Anthropic receives it (also what the token estimates count).
pub fn tools_json(tools: &[super::provider::ToolSpec]) -> Value {
    let mut out: Vec<Value> = tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
        .collect();
    if let Some(Value::Object(last)) = out.last_mut() {
        last.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
    Value::Array(out)
}

fn message_json(m: &Message) -> Option<Value> {
    let role = match m.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let blocks: Vec<Value> = m
        .content
        .iter()
        .filter_map(|p| match p {
            // The API rejects empty text blocks.
            Part::Text { text } if text.is_empty() => None,
            Part::Text { text } => Some(json!({"type": "text", "text": text})),
            Part::ToolUse { id, name, input } => {
                Some(json!({"type": "tool_use", "id": id, "name": name, "input": input}))
            }
            Part::ToolResult { tool_use_id, content, is_error } => Some(json!({
                "type": "tool_result", "tool_use_id": tool_use_id, "content": content, "is_error": is_error
            })),
        })
        .collect();
    (!blocks.is_empty()).then(|| json!({"role": role, "content": blocks}))
}

fn usage_of(u: &Value, into: &mut Usage) {
    let get = |k: &str| u.get(k).and_then(Value::as_u64);
    let cache_write = get("cache_creation_input_tokens").unwrap_or(0);
    let cache_read = get("cache_read_input_tokens").unwrap_or(0);
    if let Some(input) = get("input_tokens") {
        into.input_tokens = input + cache_write + cache_read;
        into.cache_write_tokens = cache_write;
        into.cache_read_tokens = cache_read;
    }
    if let Some(out) = get("output_tokens") {
        into.output_tokens = into.output_tokens.max(out);
    }
}

/// A complete (non-streamed) Messages API response.
pub fn parse_message(v: &Value) -> Result<ChatResponse, String> {
    if v.get("type").and_then(Value::as_str) == Some("error") {
        return Err(super::provider::error_message(&v.to_string()));
    }
    let content = v.get("content").and_then(Value::as_array).ok_or("no `content` array in the response")?;
    let mut r = ChatResponse { model: v.get("model").and_then(Value::as_str).map(String::from), ..Default::default() };
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => r.text.push_str(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => {
                let id = block.get("id").and_then(Value::as_str).unwrap_or("").to_string();
                let name = block.get("name").and_then(Value::as_str).unwrap_or("").to_string();
                let input = block.get("input").cloned().unwrap_or(Value::Null);
                let raw = if input.is_null() { String::new() } else { input.to_string() };
                r.tool_calls.push(ToolCall::from_raw(id, name, &raw));
            }
            _ => {}
        }
    }
    r.stop_reason = v.get("stop_reason").and_then(Value::as_str).map(StopReason::from_anthropic);
    if let Some(u) = v.get("usage") {
        let mut usage = Usage::default();
        usage_of(u, &mut usage);
        r.usage = Some(usage);
    }
    Ok(r)
}

enum Block {
    Text,
    ToolUse { id: String, name: String, json: String },
    Other,
}

/// Assembles a streamed response event by event.
#[derive(Default)]
pub struct StreamState {
    blocks: BTreeMap<u64, Block>,
    text: String,
    usage: Option<Usage>,
    stop: Option<StopReason>,
    model: Option<String>,
}

impl StreamState {
    /// Applies one event; `Ok(true)` at `message_stop`. An `error` event is `Err((message, retryable))`.
    pub fn apply(&mut self, v: &Value, events: EventSink<'_>) -> Result<bool, (String, bool)> {
        let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
        match v.get("type").and_then(Value::as_str).unwrap_or("") {
            "message_start" => {
                let msg = v.get("message").unwrap_or(&Value::Null);
                self.model = msg.get("model").and_then(Value::as_str).map(String::from);
                let mut u = Usage::default();
                if let Some(usage) = msg.get("usage") {
                    usage_of(usage, &mut u);
                    self.usage = Some(u);
                }
            }
            "content_block_start" => {
                let cb = v.get("content_block").unwrap_or(&Value::Null);
                let block = match cb.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let t = cb.get("text").and_then(Value::as_str).unwrap_or("");
                        if !t.is_empty() {
                            self.text.push_str(t);
                            events(ProviderEvent::Text(t));
                        }
                        Block::Text
                    }
                    Some("tool_use") => Block::ToolUse {
                        id: cb.get("id").and_then(Value::as_str).unwrap_or("").to_string(),
                        name: cb.get("name").and_then(Value::as_str).unwrap_or("").to_string(),
                        json: String::new(),
                    },
                    _ => Block::Other,
                };
                self.blocks.insert(index, block);
            }
            "content_block_delta" => {
                let d = v.get("delta").unwrap_or(&Value::Null);
                match (d.get("type").and_then(Value::as_str), self.blocks.get_mut(&index)) {
                    (Some("text_delta"), _) => {
                        let t = d.get("text").and_then(Value::as_str).unwrap_or("");
                        self.text.push_str(t);
                        events(ProviderEvent::Text(t));
                    }
                    (Some("input_json_delta"), Some(Block::ToolUse { json, .. })) => {
                        json.push_str(d.get("partial_json").and_then(Value::as_str).unwrap_or(""));
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(s) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(StopReason::from_anthropic(s));
                }
                if let Some(u) = v.get("usage") {
                    let usage = self.usage.get_or_insert_with(Usage::default);
                    usage_of(u, usage);
                }
            }
            "message_stop" => return Ok(true),
            "error" => {
                let kind = v.pointer("/error/type").and_then(Value::as_str).unwrap_or("error");
                let msg = v.pointer("/error/message").and_then(Value::as_str).unwrap_or("");
                let retryable = matches!(kind, "overloaded_error" | "api_error" | "rate_limit_error");
                return Err((format!("{kind}: {msg}"), retryable));
            }
            _ => {} // ping, content_block_stop, and event types added later
        }
        Ok(false)
    }

    pub fn finish(self) -> Result<ChatResponse, String> {
        let tool_calls = self
            .blocks
            .into_values()
            .filter_map(|b| match b {
                Block::ToolUse { id, name, json } => Some(ToolCall::from_raw(id, name, &json)),
                Block::Text | Block::Other => None,
            })
            .collect();
        Ok(ChatResponse { text: self.text, tool_calls, stop_reason: self.stop, usage: self.usage, model: self.model })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::provider::ToolSpec;

    #[test]
    fn assembles_streamed_tool_calls() {
        let events = [
            json!({"type":"message_start","message":{"model":"m","usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me "}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"add."}}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"mcp_fixture_add","input":{}}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\": 4"}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"0, \"b\": 2}"}}),
            json!({"type":"content_block_stop","index":1}),
            json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}),
            json!({"type":"message_stop"}),
        ];
        let seen = std::sync::Mutex::new(String::new());
        let sink = |e: ProviderEvent<'_>| {
            if let ProviderEvent::Text(t) = e {
                seen.lock().unwrap().push_str(t);
            }
        };
        let mut st = StreamState::default();
        let mut done = false;
        for e in &events {
            done = st.apply(e, &sink).unwrap();
        }
        assert!(done);
        let r = st.finish().unwrap();
        assert_eq!(r.text, "Let me add.");
        assert_eq!(*seen.lock().unwrap(), "Let me add.");
        assert_eq!(r.tool_calls, vec![ToolCall::from_raw("t1".into(), "mcp_fixture_add".into(), r#"{"a":40,"b":2}"#)]);
        assert_eq!(r.stop_reason, Some(StopReason::ToolUse));
        let u = r.usage.unwrap();
        assert_eq!((u.input_tokens, u.output_tokens, u.cache_read_tokens), (15, 30, 5));
    }

    #[test]
    fn stream_errors_say_whether_to_retry() {
        let sink = |_: ProviderEvent<'_>| {};
        let mut st = StreamState::default();
        let e = st.apply(&json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}), &sink);
        assert_eq!(e.unwrap_err(), ("overloaded_error: Overloaded".to_string(), true));
    }

    #[test]
    fn request_shape() {
        let msgs = vec![
            Message::user_text("hi"),
            Message {
                role: Role::Assistant,
                content: vec![
                    Part::Text { text: String::new() },
                    Part::ToolUse { id: "t1".into(), name: "x".into(), input: json!({}) },
                ],
            },
            Message {
                role: Role::User,
                content: vec![Part::ToolResult { tool_use_id: "t1".into(), content: "ok".into(), is_error: false }],
            },
        ];
        let tools =
            vec![ToolSpec { name: "x".into(), description: "d".into(), input_schema: json!({"type":"object"}) }];
        let req = ChatRequest {
            model: "m",
            system: "sys",
            messages: &msgs,
            tools: &tools,
            max_tokens: 100,
            stream: true,
            stop: &[],
        };
        let b = request_body(&req);
        assert_eq!(b["messages"][1]["content"].as_array().unwrap().len(), 1, "empty text blocks are dropped");
        assert_eq!(b["messages"][2]["content"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(b["tools"][0]["input_schema"]["type"], "object");
        assert_eq!(b["system"][0]["text"], "sys");
        assert_eq!(b["stream"], true);
    }
}
