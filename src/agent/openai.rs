//! OpenAI-compatible Chat Completions (`POST {base}/chat/completions`): OpenAI itself, and the
//! servers that copy its API (Ollama, vLLM, llama.cpp's server, LM Studio, OpenRouter).
//!
//! Streaming assembles `delta.content` text and `delta.tool_calls` fragments keyed by their
//! `index` (id and name arrive first, `arguments` in pieces); usage comes from the final chunk
//! (`stream_options.include_usage`). Compatibility choices: assistant `content` is `""` rather
//! than `null` (llama.cpp rejects null), tool calls without an `id` get one, and the token limit
//! is sent as `max_completion_tokens` to api.openai.com (newer models reject `max_tokens`) and as
//! `max_tokens` everywhere else (what the compatible servers understand).

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::provider::{
    ChatRequest, ChatResponse, EventSink, HttpSettings, LlmProvider, Message, Part, ProviderError, ProviderEvent, Role,
    StopReason, ToolCall, ToolSpec, Usage, join_url, next_chunk, with_retries,
};

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

pub struct OpenAi {
    url: String,
    key: Option<String>,
    http: HttpSettings,
    official: bool,
}

impl OpenAi {
    pub fn new(base: String, key: Option<String>, http: HttpSettings) -> OpenAi {
        let official = base.contains("://api.openai.com");
        OpenAi { url: join_url(&base, "chat/completions"), key, http, official }
    }

    async fn attempt(
        &self,
        req: ChatRequest<'_>,
        body: &Value,
        events: EventSink<'_>,
    ) -> Result<ChatResponse, ProviderError> {
        let mut rb = self.http.client.post(&self.url).header("content-type", "application/json").json(body);
        if let Some(k) = &self.key {
            rb = rb.bearer_auth(k);
        }
        let resp = self.http.send(&self.url, rb).await?;
        if !req.stream {
            let v = self.http.read_json(&self.url, resp).await?;
            let r = parse_completion(&v).map_err(|m| self.protocol(m))?;
            if !r.text.is_empty() {
                events(ProviderEvent::Text(&r.text));
            }
            return Ok(r);
        }
        let mut stream = sse_stream::SseStream::from_bytes_stream(super::provider::capped_stream(resp));
        let mut acc = StreamState::default();
        while let Some(ev) = next_chunk(&mut stream, &self.url, self.http.idle_timeout).await? {
            let Some(data) = ev.data.as_deref().map(str::trim) else { continue };
            if data.is_empty() {
                continue;
            }
            if data == "[DONE]" {
                return Ok(acc.finish());
            }
            let v: Value = serde_json::from_str(data)
                .map_err(|e| self.protocol(format!("invalid JSON in a stream chunk ({e})")))?;
            if let Some(err) = v.get("error") {
                let message = super::provider::error_message(&json!({ "error": err }).to_string());
                return Err(ProviderError::Stream { url: self.url.clone(), message, retryable: true });
            }
            acc.apply(&v, events);
        }
        // Some servers close the stream without `[DONE]`; accept it when the answer is complete.
        if acc.finish_reason.is_some() {
            return Ok(acc.finish());
        }
        Err(ProviderError::Network { url: self.url.clone(), message: "the stream ended before `[DONE]`".into() })
    }

    fn protocol(&self, message: String) -> ProviderError {
        ProviderError::Protocol { url: self.url.clone(), message }
    }
}

impl LlmProvider for OpenAi {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn complete<'a>(
        &'a self,
        req: ChatRequest<'a>,
        events: EventSink<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let body = request_body(&req, self.official);
            with_retries(self.http.retry, events, || self.attempt(req, &body, events)).await
        })
    }
}

/// The JSON body of a Chat Completions request.
pub fn request_body(req: &ChatRequest<'_>, official: bool) -> Value {
    let mut messages = Vec::new();
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    for m in req.messages {
        push_message(m, &mut messages);
    }
    let mut body = json!({"model": req.model, "messages": messages});
    let limit_key = if official { "max_completion_tokens" } else { "max_tokens" };
    body[limit_key] = json!(req.max_tokens);
    if !req.tools.is_empty() {
        body["tools"] = tools_json(req.tools);
    }
    if !req.stop.is_empty() {
        body["stop"] = json!(req.stop);
    }
    if req.stream {
        body["stream"] = Value::Bool(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

/// The `tools` array as an OpenAI-compatible server receives it.
pub fn tools_json(tools: &[ToolSpec]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.input_schema
                }})
            })
            .collect(),
    )
}

fn push_message(m: &Message, out: &mut Vec<Value>) {
    match m.role {
        Role::Assistant => {
            let text: String = m
                .content
                .iter()
                .filter_map(|p| match p {
                    Part::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            let calls: Vec<Value> = m
                .content
                .iter()
                .filter_map(|p| match p {
                    Part::ToolUse { id, name, input } => Some(json!({
                        "id": id, "type": "function", "function": {"name": name, "arguments": input.to_string()}
                    })),
                    _ => None,
                })
                .collect();
            let mut msg = json!({"role": "assistant", "content": text});
            if !calls.is_empty() {
                msg["tool_calls"] = Value::Array(calls);
            }
            out.push(msg);
        }
        Role::User => {
            // Tool results become `tool` messages; user text stays a user message.
            let mut text = String::new();
            for p in &m.content {
                match p {
                    Part::Text { text: t } => text.push_str(t),
                    Part::ToolResult { tool_use_id, content, is_error } => {
                        // The format has no error flag: say it in words.
                        let content = if *is_error { format!("[tool error]\n{content}") } else { content.clone() };
                        out.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": content}));
                    }
                    Part::ToolUse { .. } => {}
                }
            }
            if !text.is_empty() {
                out.push(json!({"role": "user", "content": text}));
            }
        }
    }
}

fn usage_of(u: &Value) -> Usage {
    let get = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: get("/prompt_tokens"),
        output_tokens: get("/completion_tokens"),
        cache_read_tokens: get("/prompt_tokens_details/cached_tokens"),
        cache_write_tokens: 0,
    }
}

fn content_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        // Some servers send content as an array of parts.
        Some(Value::Array(parts)) => parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect(),
        _ => String::new(),
    }
}

/// A complete (non-streamed) Chat Completions response.
pub fn parse_completion(v: &Value) -> Result<ChatResponse, String> {
    if let Some(err) = v.get("error") {
        return Err(super::provider::error_message(&json!({ "error": err }).to_string()));
    }
    let choice = v.pointer("/choices/0").ok_or("no `choices` in the response")?;
    let msg = choice.get("message").ok_or("no `message` in the first choice")?;
    let mut r = ChatResponse {
        text: content_text(msg.get("content")),
        model: v.get("model").and_then(Value::as_str).map(String::from),
        stop_reason: choice.get("finish_reason").and_then(Value::as_str).map(StopReason::from_openai),
        usage: v.get("usage").filter(|u| u.is_object()).map(usage_of),
        ..Default::default()
    };
    for (i, call) in msg.get("tool_calls").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let id = call.get("id").and_then(Value::as_str).filter(|s| !s.is_empty()).map(String::from);
        let name = call.pointer("/function/name").and_then(Value::as_str).unwrap_or("").to_string();
        let raw = match call.pointer("/function/arguments") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            // Ollama sends the arguments as an object.
            Some(other) => other.to_string(),
        };
        r.tool_calls.push(ToolCall::from_raw(id.unwrap_or_else(|| format!("call_{i}")), name, &raw));
    }
    Ok(r)
}

#[derive(Default)]
struct PendingCall {
    id: String,
    name: String,
    args: String,
}

/// Assembles a streamed response chunk by chunk.
#[derive(Default)]
pub struct StreamState {
    text: String,
    calls: BTreeMap<u64, PendingCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    model: Option<String>,
}

impl StreamState {
    pub fn apply(&mut self, v: &Value, events: EventSink<'_>) {
        if self.model.is_none() {
            self.model = v.get("model").and_then(Value::as_str).map(String::from);
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage_of(u));
        }
        let Some(choice) = v.pointer("/choices/0") else { return };
        if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(f.to_string());
        }
        let Some(delta) = choice.get("delta") else { return };
        let t = content_text(delta.get("content"));
        if !t.is_empty() {
            self.text.push_str(&t);
            events(ProviderEvent::Text(&t));
        }
        for c in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            // `index` identifies the call across chunks; servers that omit it send whole calls.
            let index = c.get("index").and_then(Value::as_u64).unwrap_or(self.calls.len() as u64);
            let entry = self.calls.entry(index).or_default();
            if let Some(id) = c.get("id").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                entry.id = id.to_string();
            }
            if let Some(name) = c.pointer("/function/name").and_then(Value::as_str) {
                entry.name.push_str(name);
            }
            match c.pointer("/function/arguments") {
                Some(Value::String(s)) => entry.args.push_str(s),
                Some(Value::Null) | None => {}
                Some(other) => entry.args.push_str(&other.to_string()),
            }
        }
    }

    pub fn finish(self) -> ChatResponse {
        let tool_calls = self
            .calls
            .into_iter()
            .map(|(i, c)| {
                let id = if c.id.is_empty() { format!("call_{i}") } else { c.id };
                ToolCall::from_raw(id, c.name, &c.args)
            })
            .collect();
        ChatResponse {
            text: self.text,
            tool_calls,
            stop_reason: self.finish_reason.as_deref().map(StopReason::from_openai),
            usage: self.usage,
            model: self.model,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assembles_streamed_tool_calls() {
        let chunks = [
            json!({"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Adding"}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"mcp_fixture_add","arguments":""}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"mcp_fixture_echo","arguments":"{}"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1,\"b\":2}"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
            json!({"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":64}}}),
        ];
        let sink = |_: ProviderEvent<'_>| {};
        let mut st = StreamState::default();
        for c in &chunks {
            st.apply(c, &sink);
        }
        let r = st.finish();
        assert_eq!(r.text, "Adding");
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].name, "mcp_fixture_add");
        assert_eq!(r.tool_calls[0].input, json!({"a":1,"b":2}));
        assert_eq!(r.tool_calls[1].id, "call_b");
        assert_eq!(r.stop_reason, Some(StopReason::ToolUse));
        assert_eq!(
            r.usage,
            Some(Usage { input_tokens: 100, output_tokens: 7, cache_read_tokens: 64, cache_write_tokens: 0 })
        );
    }

    #[test]
    fn request_shape() {
        let msgs = vec![
            Message::user_text("hi"),
            Message {
                role: Role::Assistant,
                content: vec![Part::ToolUse { id: "c1".into(), name: "x".into(), input: json!({"a": 1}) }],
            },
            Message {
                role: Role::User,
                content: vec![Part::ToolResult { tool_use_id: "c1".into(), content: "bad".into(), is_error: true }],
            },
        ];
        let req = ChatRequest {
            model: "m",
            system: "sys",
            messages: &msgs,
            tools: &[],
            max_tokens: 9,
            stream: false,
            stop: &[],
        };
        let b = request_body(&req, false);
        assert_eq!(b["messages"][0], json!({"role":"system","content":"sys"}));
        assert_eq!(b["messages"][2]["content"], "", "assistant content is never null");
        assert_eq!(b["messages"][2]["tool_calls"][0]["function"]["arguments"], r#"{"a":1}"#);
        assert_eq!(b["messages"][3], json!({"role":"tool","tool_call_id":"c1","content":"[tool error]\nbad"}));
        assert_eq!(b["max_tokens"], 9);
        assert!(b.get("tools").is_none());
        assert_eq!(request_body(&req, true)["max_completion_tokens"], 9);
    }

    #[test]
    fn parses_complete_responses() {
        let v = json!({"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
            {"function":{"name":"f","arguments":{"q":"x"}}}]},"finish_reason":"tool_calls"}],
            "usage":{"prompt_tokens":3,"completion_tokens":4}});
        let r = parse_completion(&v).unwrap();
        assert_eq!(r.tool_calls[0].id, "call_0");
        assert_eq!(r.tool_calls[0].input, json!({"q":"x"}));
        assert_eq!(r.usage.unwrap().output_tokens, 4);
        assert!(parse_completion(&json!({"error":{"message":"nope"}})).unwrap_err().contains("nope"));
    }
}
