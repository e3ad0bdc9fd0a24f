//! The provider boundary: a provider-neutral conversation (messages, tool calls, tool results),
//! the [`LlmProvider`] trait the loop talks to, and what every HTTP provider shares: building the
//! client from `llm.*`, turning HTTP failures into readable errors that quote the provider's own
//! message, and retrying 429/5xx/network failures with backoff that honours `retry-after`.
//!
//! Providers know nothing of MCP; the loop knows nothing of wire formats.

use std::future::Future;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;

use crate::config::LlmConfig;

/// Who said it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text {
        text: String,
    },
    /// The model asks for a tool call. `input` is always a JSON object.
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// What a tool call produced, sent back to the model.
    ToolResult {
        tool_use_id: String,
        content: String,
        is_error: bool,
    },
}

/// One message of the conversation, provider-neutral.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Part>,
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Message {
        Message { role: Role::User, content: vec![Part::Text { text: text.into() }] }
    }
}

/// A tool the model may call: name, description and JSON Schema of its input.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// Everything a provider needs for one model call.
#[derive(Debug, Clone, Copy)]
pub struct ChatRequest<'a> {
    pub model: &'a str,
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
    pub max_tokens: u32,
    pub stream: bool,
    /// Stop sequences (sampling requests from MCP servers); usually empty.
    pub stop: &'a [String],
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    Other(String),
}

impl StopReason {
    pub fn from_anthropic(s: &str) -> StopReason {
        match s {
            "end_turn" | "stop_sequence" => StopReason::EndTurn,
            "tool_use" => StopReason::ToolUse,
            "max_tokens" => StopReason::MaxTokens,
            other => StopReason::Other(other.to_string()),
        }
    }

    pub fn from_openai(s: &str) -> StopReason {
        match s {
            "stop" => StopReason::EndTurn,
            "tool_calls" | "function_call" => StopReason::ToolUse,
            "length" => StopReason::MaxTokens,
            other => StopReason::Other(other.to_string()),
        }
    }
}

/// Token usage of one model call, from the provider's usage fields. `input_tokens` includes
/// prompt-cache reads and writes, so it is what the model was given in total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Part of `input_tokens` read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Part of `input_tokens` written to the provider's prompt cache.
    pub cache_write_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}

/// A tool call as the model sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments (a JSON object; `{}` when the model sent none or sent garbage).
    pub input: Value,
    /// Set when the model's arguments were not a JSON object; the call is answered with this error.
    pub input_error: Option<String>,
}

impl ToolCall {
    /// Parses streamed argument text (`""` means no arguments).
    pub fn from_raw(id: String, name: String, raw: &str) -> ToolCall {
        let (input, input_error) = parse_arguments(raw);
        ToolCall { id, name, input, input_error }
    }
}

/// `(object, None)` for a JSON object (or empty text), `({}, Some(why))` otherwise.
pub fn parse_arguments(raw: &str) -> (Value, Option<String>) {
    if raw.trim().is_empty() {
        return (Value::Object(Default::default()), None);
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ Value::Object(_)) => (v, None),
        Ok(other) => (
            Value::Object(Default::default()),
            Some(format!("the tool arguments must be a JSON object, got `{}`", short(&other.to_string(), 200))),
        ),
        Err(e) => (
            Value::Object(Default::default()),
            Some(format!("the tool arguments were not valid JSON ({e}): `{}`", short(raw, 200))),
        ),
    }
}

/// What one model call produced.
#[derive(Debug, Clone, Default)]
pub struct ChatResponse {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub stop_reason: Option<StopReason>,
    /// `None` when the provider did not report usage.
    pub usage: Option<Usage>,
    pub model: Option<String>,
}

/// Things a provider reports while a call is in flight.
#[derive(Debug, Clone, Copy)]
pub enum ProviderEvent<'a> {
    /// A piece of assistant text, as it arrives.
    Text(&'a str),
    /// The call failed in a way worth retrying; the next attempt starts after `delay`.
    Retrying { attempt: u32, delay: Duration, reason: &'a str },
}

/// Callback for [`ProviderEvent`]s.
pub type EventSink<'a> = &'a (dyn Fn(ProviderEvent<'_>) + Sync);

/// An LLM API. Implementations own their wire format and retries.
pub trait LlmProvider: Send + Sync {
    /// `anthropic` or `openai`.
    fn name(&self) -> &'static str;
    /// One model call; text is reported through `events` as it streams in.
    fn complete<'a>(
        &'a self,
        req: ChatRequest<'a>,
        events: EventSink<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>>;
}

/// A failed model call. `Display` is the one line users see.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProviderError {
    #[error("{}", http_message(*status, message, url))]
    Http { status: u16, message: String, url: String, retry_after: Option<Duration> },
    #[error("cannot reach {url}: {message}")]
    Network { url: String, message: String },
    #[error("no response from {url} within {}", humantime::format_duration(*timeout))]
    Timeout { url: String, timeout: Duration },
    #[error("the provider at {url} sent an error in the middle of its answer: {message}")]
    Stream { url: String, message: String, retryable: bool },
    #[error("unexpected response from {url}: {message}")]
    Protocol { url: String, message: String },
    #[error("{last} (gave up after {attempts} attempts)")]
    GaveUp { attempts: u32, last: Box<ProviderError> },
    #[error("{last} (the provider asks to retry after {} s; not waiting that long)", wait.as_secs())]
    WaitTooLong { wait: Duration, last: Box<ProviderError> },
}

fn http_message(status: u16, message: &str, url: &str) -> String {
    let what = match status {
        400 => "the provider rejected the request",
        401 => "the provider rejected the API key",
        403 => "the provider refused access",
        404 => "not found (check llm.model / --model and llm.base_url)",
        408 => "the provider timed out",
        413 => "the request is too large for the provider",
        429 => "rate limited by the provider",
        529 => "the provider is overloaded",
        s if s >= 500 => "the provider failed",
        _ => "the provider returned an error",
    };
    let hint = if status == 401 { "; check llm.api_key (or ANTHROPIC_API_KEY / OPENAI_API_KEY)" } else { "" };
    let msg = if message.is_empty() { String::new() } else { format!(": {message}") };
    format!("{what} (HTTP {status} from {url}){msg}{hint}")
}

impl ProviderError {
    /// 408, 409, 429, 5xx (incl. Anthropic's 529 "overloaded"), network failures and timeouts.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Http { status, .. } => matches!(status, 408 | 409 | 429) || *status >= 500,
            ProviderError::Network { .. } | ProviderError::Timeout { .. } => true,
            ProviderError::Stream { retryable, .. } => *retryable,
            ProviderError::Protocol { .. } | ProviderError::GaveUp { .. } | ProviderError::WaitTooLong { .. } => false,
        }
    }

    /// 401, 403 and 404: the key, the account's access or the model/base URL is wrong; fixing
    /// the configuration is the only cure (`agent run` exits 2 for these).
    pub fn is_configuration(&self) -> bool {
        match self {
            ProviderError::Http { status, .. } => matches!(status, 401 | 403 | 404),
            _ => false,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// A short reason for the retry notice: `HTTP 429`, `network error`.
    fn short_reason(&self) -> String {
        match self {
            ProviderError::Http { status, .. } => format!("HTTP {status}"),
            ProviderError::Network { .. } => "network error".into(),
            ProviderError::Timeout { .. } => "timeout".into(),
            ProviderError::Stream { .. } => "stream error".into(),
            _ => "error".into(),
        }
    }
}

/// Longest server-requested wait we honour; a longer `retry-after` ends the run instead of
/// leaving the user staring at a silent terminal.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// How retries are spaced.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl RetryPolicy {
    pub fn from_config(c: &LlmConfig) -> RetryPolicy {
        RetryPolicy {
            max_retries: c.max_retries,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }

    /// Exponential backoff with ±25% jitter, so parallel agents don't retry in lockstep.
    fn backoff(&self, attempt: u32) -> Duration {
        let exp = self.base_delay.saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        let capped = exp.min(self.max_delay);
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let jitter = 0.75 + (nanos % 1000) as f64 / 2000.0;
        capped.mul_f64(jitter)
    }
}

/// Runs `attempt` until it succeeds, fails for good, or the retries are used up.
pub async fn with_retries<T, F, Fut>(
    policy: RetryPolicy,
    events: EventSink<'_>,
    mut attempt: F,
) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ProviderError>>,
{
    let mut n = 0u32;
    loop {
        let err = match attempt().await {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        if !err.is_retryable() {
            return Err(err);
        }
        if let Some(wait) = err.retry_after()
            && wait > MAX_RETRY_AFTER
        {
            return Err(ProviderError::WaitTooLong { wait, last: Box::new(err) });
        }
        if n >= policy.max_retries {
            return Err(if n == 0 { err } else { ProviderError::GaveUp { attempts: n + 1, last: Box::new(err) } });
        }
        n += 1;
        let delay = err.retry_after().unwrap_or_else(|| policy.backoff(n));
        let reason = err.short_reason();
        tracing::info!("retrying in {delay:?} after: {err}");
        events(ProviderEvent::Retrying { attempt: n, delay, reason: &reason });
        tokio::time::sleep(delay).await;
    }
}

/// The HTTP side every provider shares.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    pub client: reqwest::Client,
    pub retry: RetryPolicy,
    /// Wait at most this long for the response to start, and between two chunks of a stream.
    pub idle_timeout: Duration,
}

impl HttpSettings {
    pub fn from_config(c: &LlmConfig) -> Result<HttpSettings, String> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .user_agent(concat!("agent/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(HttpSettings { client, retry: RetryPolicy::from_config(c), idle_timeout: c.request_timeout })
    }

    /// Sends the request and returns the response if its status is a success; otherwise the
    /// error with the provider's own message.
    pub async fn send(&self, url: &str, req: reqwest::RequestBuilder) -> Result<reqwest::Response, ProviderError> {
        let resp = match tokio::time::timeout(self.idle_timeout, req.send()).await {
            Err(_) => return Err(ProviderError::Timeout { url: url.to_string(), timeout: self.idle_timeout }),
            Ok(Err(e)) => return Err(ProviderError::Network { url: url.to_string(), message: reqwest_reason(&e) }),
            Ok(Ok(r)) => r,
        };
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let retry_after = retry_after(resp.headers());
        // Only the start of an error body is read: its message is all we show.
        let body = match tokio::time::timeout(self.idle_timeout, read_capped(resp, MAX_ERROR_BODY_BYTES)).await {
            Ok(Ok(b) | Err(BodyError::TooLarge(b))) => String::from_utf8_lossy(&b).into_owned(),
            _ => String::new(),
        };
        Err(ProviderError::Http {
            status: status.as_u16(),
            message: error_message(&body),
            url: url.to_string(),
            retry_after,
        })
    }

    /// Reads a whole (non-streamed) response body as JSON, within the idle timeout.
    /// A body past [`MAX_RESPONSE_BYTES`] is a protocol error, read no further.
    pub async fn read_json(&self, url: &str, resp: reqwest::Response) -> Result<Value, ProviderError> {
        let bytes = match tokio::time::timeout(self.idle_timeout, read_capped(resp, MAX_RESPONSE_BYTES)).await {
            Err(_) => return Err(ProviderError::Timeout { url: url.to_string(), timeout: self.idle_timeout }),
            Ok(Err(BodyError::Read(e))) => {
                return Err(ProviderError::Network { url: url.to_string(), message: reqwest_reason(&e) });
            }
            Ok(Err(BodyError::TooLarge(_))) => {
                return Err(ProviderError::Protocol { url: url.to_string(), message: too_large() });
            }
            Ok(Ok(b)) => b,
        };
        serde_json::from_slice(&bytes)
            .map_err(|e| ProviderError::Protocol { url: url.to_string(), message: format!("invalid JSON ({e})") })
    }
}

/// The most a model endpoint's response may hold (a whole reply, or all events of a stream).
/// Replies are bounded by `max_tokens`, so this is far above any real one; it bounds what a
/// broken or hostile endpoint can make `agent` hold in memory.
pub const MAX_RESPONSE_BYTES: usize = 64 << 20;
/// The most of an error response's body that is read (for its message).
const MAX_ERROR_BODY_BYTES: usize = 64 << 10;

fn too_large() -> String {
    format!("the response is larger than {} MiB; it was not read further", MAX_RESPONSE_BYTES >> 20)
}

/// Why a body was not read whole.
#[derive(Debug)]
pub enum BodyError {
    Read(reqwest::Error),
    /// More than the cap came; what was read up to it.
    TooLarge(Vec<u8>),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::Read(e) => f.write_str(&reqwest_reason(e)),
            BodyError::TooLarge(_) => f.write_str(&too_large()),
        }
    }
}

impl std::error::Error for BodyError {}

/// The body, chunk by chunk, until it ends or passes `cap` bytes.
async fn read_capped(mut resp: reqwest::Response, cap: usize) -> Result<Vec<u8>, BodyError> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(BodyError::Read)? {
        if body.len() + chunk.len() > cap {
            body.extend_from_slice(&chunk[..cap - body.len()]);
            return Err(BodyError::TooLarge(body));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A streamed body's chunks, ending in [`BodyError::TooLarge`] once more than
/// [`MAX_RESPONSE_BYTES`] came (an event that never ends, a stream that never stops).
pub fn capped_stream(
    resp: reqwest::Response,
) -> impl futures::Stream<Item = Result<bytes::Bytes, BodyError>> + Unpin + Send {
    use futures::StreamExt;
    let mut seen = 0usize;
    resp.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(BodyError::Read)?;
        seen = seen.saturating_add(chunk.len());
        if seen > MAX_RESPONSE_BYTES { Err(BodyError::TooLarge(Vec::new())) } else { Ok(chunk) }
    })
}

/// `retry-after-ms` (OpenAI) or `retry-after` in seconds. HTTP-date values are ignored (backoff applies).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite() && *v >= 0.0) {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    get("retry-after")
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| v.is_finite() && (0.0..1e7).contains(v))
        .map(Duration::from_secs_f64)
}

/// The human part of an error body: `error.message` (Anthropic and OpenAI), `message`,
/// `error` as a string (Ollama), `detail` (vLLM/FastAPI), else the body itself, shortened.
pub fn error_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        let candidates = [
            v.pointer("/error/message"),
            v.get("message"),
            v.get("error").filter(|e| e.is_string()),
            v.get("detail").filter(|e| e.is_string()),
        ];
        if let Some(msg) = candidates.into_iter().flatten().find_map(Value::as_str) {
            return short(msg.trim(), 500);
        }
        if let Some(detail) = v.get("detail") {
            return short(&detail.to_string(), 500);
        }
    }
    short(body.trim(), 500)
}

/// Why a reqwest call failed, without the URL (we print it ourselves).
fn reqwest_reason(e: &reqwest::Error) -> String {
    use std::error::Error as _;
    let mut parts = Vec::new();
    let mut cur: Option<&dyn std::error::Error> = e.source();
    while let Some(c) = cur {
        let s = c.to_string();
        if !parts.contains(&s) {
            parts.push(s);
        }
        cur = c.source();
    }
    if parts.is_empty() {
        return e.to_string();
    }
    parts.join(": ")
}

/// Reads the next chunk of a streamed body, bounded by the idle timeout.
pub async fn next_chunk<S, T, E>(stream: &mut S, url: &str, idle: Duration) -> Result<Option<T>, ProviderError>
where
    S: futures::Stream<Item = Result<T, E>> + Unpin,
    E: std::error::Error + 'static,
{
    use futures::StreamExt;
    match tokio::time::timeout(idle, stream.next()).await {
        Err(_) => Err(ProviderError::Timeout { url: url.to_string(), timeout: idle }),
        Ok(None) => Ok(None),
        Ok(Some(Err(e))) => {
            // Past the cap is the endpoint's fault, not the network's: not retried.
            let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&e);
            while let Some(c) = cause {
                if matches!(c.downcast_ref::<BodyError>(), Some(BodyError::TooLarge(_))) {
                    return Err(ProviderError::Protocol { url: url.to_string(), message: too_large() });
                }
                cause = c.source();
            }
            Err(ProviderError::Network { url: url.to_string(), message: format!("the stream broke off: {e}") })
        }
        Ok(Some(Ok(v))) => Ok(Some(v)),
    }
}

/// `s` cut to at most `max` bytes (on a char boundary) with `…` when cut.
pub fn short(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Joins a base URL and a path without doubling or dropping slashes.
pub fn join_url(base: &str, path: &str) -> String {
    format!("{}/{}", base.trim_end_matches('/'), path.trim_start_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_quote_the_provider() {
        let anthropic = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
        assert_eq!(error_message(anthropic), "invalid x-api-key");
        let openai = r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#;
        assert_eq!(error_message(openai), "Incorrect API key provided");
        assert_eq!(error_message(r#"{"error":"model 'x' not found"}"#), "model 'x' not found");
        assert_eq!(error_message("upstream exploded"), "upstream exploded");
        let e = ProviderError::Http {
            status: 401,
            message: "invalid x-api-key".into(),
            url: "u".into(),
            retry_after: None,
        };
        assert!(e.to_string().starts_with("the provider rejected the API key (HTTP 401 from u): invalid x-api-key"));
        assert!(!e.is_retryable());
        let e = ProviderError::Http { status: 529, message: String::new(), url: "u".into(), retry_after: None };
        assert!(e.is_retryable());
    }

    #[test]
    fn arguments_must_be_objects() {
        assert_eq!(parse_arguments("").0, serde_json::json!({}));
        assert_eq!(parse_arguments(r#"{"a":1}"#), (serde_json::json!({"a":1}), None));
        assert!(parse_arguments("[1]").1.unwrap().contains("must be a JSON object"));
        assert!(parse_arguments("{\"a\":").1.unwrap().contains("not valid JSON"));
    }

    #[test]
    fn retry_after_headers() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&h), None);
    }

    #[tokio::test]
    async fn retries_until_success_and_gives_up() {
        let policy =
            RetryPolicy { max_retries: 2, base_delay: Duration::from_millis(1), max_delay: Duration::from_millis(2) };
        let seen = std::sync::Mutex::new(Vec::new());
        let sink = |e: ProviderEvent<'_>| {
            if let ProviderEvent::Retrying { attempt, reason, .. } = e {
                seen.lock().unwrap().push(format!("{attempt} {reason}"));
            }
        };
        let calls = std::sync::atomic::AtomicU32::new(0);
        let r: Result<u32, _> = with_retries(policy, &sink, || async {
            let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if n == 0 {
                Err(ProviderError::Http {
                    status: 429,
                    message: "slow down".into(),
                    url: "u".into(),
                    retry_after: Some(Duration::ZERO),
                })
            } else {
                Ok(n)
            }
        })
        .await;
        assert_eq!(r.unwrap(), 1);
        assert_eq!(*seen.lock().unwrap(), vec!["1 HTTP 429"]);

        let r: Result<(), _> = with_retries(policy, &sink, || async {
            Err(ProviderError::Network { url: "u".into(), message: "refused".into() })
        })
        .await;
        let e = r.unwrap_err();
        assert_eq!(e.to_string(), "cannot reach u: refused (gave up after 3 attempts)");

        let r: Result<(), _> = with_retries(policy, &sink, || async {
            let wait = Some(Duration::from_secs(3600));
            Err(ProviderError::Http { status: 429, message: "quota".into(), url: "u".into(), retry_after: wait })
        })
        .await;
        assert!(
            r.unwrap_err()
                .to_string()
                .ends_with("quota (the provider asks to retry after 3600 s; not waiting that long)")
        );

        let r: Result<(), _> = with_retries(policy, &sink, || async {
            Err(ProviderError::Http { status: 400, message: "bad".into(), url: "u".into(), retry_after: None })
        })
        .await;
        assert!(matches!(r.unwrap_err(), ProviderError::Http { status: 400, .. }));
    }
}
