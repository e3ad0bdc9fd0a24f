//! The agent loop both modes share: ask the model, run the tool calls it asks for through a
//! [`ToolHost`] (direct: MCP tools; code: `code_execution` and discovery), feed the results back,
//! until the model answers without a tool call, the turn limit is hit, the provider fails, or the
//! user interrupts. Everything that happened is recorded in a [`Transcript`]; what is shown while
//! it happens is up to the [`Observer`] (the CLI prints, tests and benchmarks may not).

use std::time::Instant;

use futures::StreamExt;
use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::provider::{
    ChatRequest, LlmProvider, Message, Part, ProviderEvent, Role, StopReason, ToolCall, ToolSpec, Usage,
};

/// What a tool call produced.
#[derive(Debug, Clone, Default)]
pub struct ToolOutcome {
    /// The text the model gets back.
    pub content: String,
    pub is_error: bool,
    /// The MCP server and tool behind the call (direct mode).
    pub server: Option<String>,
    pub tool: Option<String>,
    /// Whether the content was cut at the size limit.
    pub truncated: bool,
    /// Mode-specific facts for the transcript (code mode: the script's stdout, stderr, tool calls).
    pub detail: Option<Value>,
    /// How many MCP tool calls this call made (1 in direct mode; the script's count in code mode).
    pub mcp_calls: u64,
}

/// Where tool calls go: the MCP tools (direct mode) or the code-mode tools.
pub trait ToolHost: Send + Sync {
    /// The tool definitions sent to the model.
    fn specs(&self) -> &[ToolSpec];
    /// Runs one call. Never fails: problems become error results the model can react to.
    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolOutcome>;
    /// Whether the calls of one turn may run concurrently.
    fn concurrent(&self) -> bool {
        true
    }
    /// A one-line label for the activity line (`→ label`).
    fn label(&self, call: &ToolCall) -> String {
        format!("{} {}", call.name, super::provider::short(&call.input.to_string(), 120))
    }
}

/// Hooks for showing progress; every method has a no-op default.
pub trait Observer: Sync {
    /// Assistant text as it streams in.
    fn text(&self, _delta: &str) {}
    fn retrying(&self, _attempt: u32, _delay: std::time::Duration, _reason: &str) {}
    /// A turn ended (its text is complete; tool calls, if any, follow).
    fn turn_done(&self, _turn: &TurnRecord) {}
    fn tool_started(&self, _label: &str) {}
    fn tool_finished(&self, _record: &ToolCallRecord, _several: bool) {}
    /// A note about the run itself (which mode `auto` chose, the tree generated).
    fn note(&self, _text: &str) {}
}

/// An observer that shows nothing.
#[cfg(test)]
pub struct Silent;
#[cfg(test)]
impl Observer for Silent {}

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The model answered without calling a tool.
    Answer,
    /// The turn limit was reached before a final answer.
    MaxTurns,
    /// The provider failed (after retries).
    ProviderError,
    /// The user pressed Ctrl-C.
    Interrupted,
}

/// One tool call, as run.
#[derive(Debug, Clone, Serialize)]
pub struct ToolCallRecord {
    pub id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    pub arguments: Value,
    pub result: String,
    pub is_error: bool,
    pub result_bytes: usize,
    pub truncated: bool,
    pub duration_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<Value>,
}

/// One model call and the tool calls it asked for.
#[derive(Debug, Clone, Serialize)]
pub struct TurnRecord {
    pub index: u32,
    /// Time spent waiting for the model.
    pub duration_ms: f64,
    /// `null` when the provider reported none.
    pub usage: Option<Usage>,
    pub stop_reason: Option<StopReason>,
    pub text: String,
    pub tool_calls: Vec<ToolCallRecord>,
}

/// Everything about one run; `agent run --json` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct Transcript {
    pub task: String,
    pub mode: String,
    pub provider: String,
    pub model: String,
    pub outcome: Outcome,
    pub final_answer: Option<String>,
    pub error: Option<String>,
    /// The provider error is a configuration problem (`ProviderError::is_configuration`).
    #[serde(skip)]
    pub configuration_error: bool,
    pub system: String,
    /// Names of the tools offered to the model.
    pub tools: Vec<String>,
    pub turns: Vec<TurnRecord>,
    pub messages: Vec<Message>,
    /// Sum over the turns that reported usage.
    pub usage: Usage,
    /// Turns whose provider response carried no usage (their tokens are not in `usage`).
    pub turns_without_usage: u32,
    pub tool_calls: usize,
    /// MCP tool calls made (directly, or by code-mode scripts).
    pub mcp_calls: u64,
    pub duration_ms: f64,
}

impl Transcript {
    /// `turns 4 · tool calls 3 · tokens in 5,210 / out 812 · 7.4 s`
    pub fn summary(&self) -> String {
        let tokens = if self.turns_without_usage as usize == self.turns.len() && !self.turns.is_empty() {
            "tokens n/a".to_string()
        } else {
            let partial = if self.turns_without_usage > 0 { " (partial)" } else { "" };
            format!(
                "tokens in {} / out {}{partial}",
                thousands(self.usage.input_tokens),
                thousands(self.usage.output_tokens)
            )
        };
        format!(
            "turns {} · tool calls {} · {tokens} · {:.1} s",
            self.turns.len(),
            self.tool_calls,
            self.duration_ms / 1000.0
        )
    }
}

/// `5210` → `5,210`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The fixed parameters of one run.
#[derive(Debug, Clone)]
pub struct Settings {
    pub model: String,
    pub system: String,
    pub max_turns: u32,
    pub max_tokens: u32,
    pub stream: bool,
    /// For the transcript.
    pub mode: String,
}

/// Runs the loop for `task` until it ends; never fails (failures are in the transcript).
pub async fn run(
    task: &str,
    settings: &Settings,
    provider: &dyn LlmProvider,
    host: &dyn ToolHost,
    observer: &dyn Observer,
    cancel: &CancellationToken,
) -> Transcript {
    let started = Instant::now();
    let mut t = Transcript {
        task: task.to_string(),
        mode: settings.mode.clone(),
        provider: provider.name().to_string(),
        model: settings.model.clone(),
        outcome: Outcome::Answer,
        final_answer: None,
        error: None,
        configuration_error: false,
        system: settings.system.clone(),
        tools: host.specs().iter().map(|s| s.name.clone()).collect(),
        turns: Vec::new(),
        messages: vec![Message::user_text(task)],
        usage: Usage::default(),
        turns_without_usage: 0,
        tool_calls: 0,
        mcp_calls: 0,
        duration_ms: 0.0,
    };
    let sink = |e: ProviderEvent<'_>| match e {
        ProviderEvent::Text(s) => observer.text(s),
        ProviderEvent::Retrying { attempt, delay, reason } => observer.retrying(attempt, delay, reason),
    };
    let mut turn = 0u32;
    loop {
        if turn >= settings.max_turns {
            t.outcome = Outcome::MaxTurns;
            t.error = Some(format!(
                "stopped after {turn} turn{} without a final answer (the limit is agent.max_turns / --max-turns)",
                if turn == 1 { "" } else { "s" }
            ));
            break;
        }
        turn += 1;
        let req = ChatRequest {
            model: &settings.model,
            system: &settings.system,
            messages: &t.messages,
            tools: host.specs(),
            max_tokens: settings.max_tokens,
            stream: settings.stream,
            stop: &[],
        };
        let asked = Instant::now();
        let resp = tokio::select! {
            r = provider.complete(req, &sink) => r,
            _ = cancel.cancelled() => {
                t.outcome = Outcome::Interrupted;
                break;
            }
        };
        let resp = match resp {
            Ok(r) => r,
            Err(e) => {
                t.outcome = Outcome::ProviderError;
                t.configuration_error = e.is_configuration();
                t.error = Some(e.to_string());
                break;
            }
        };
        match &resp.usage {
            Some(u) => t.usage.add(u),
            None => t.turns_without_usage += 1,
        }
        let mut record = TurnRecord {
            index: turn,
            duration_ms: ms(asked),
            usage: resp.usage,
            stop_reason: resp.stop_reason.clone(),
            text: resp.text.clone(),
            tool_calls: Vec::new(),
        };
        let mut parts = Vec::new();
        if !resp.text.is_empty() {
            parts.push(Part::Text { text: resp.text.clone() });
        }
        for c in &resp.tool_calls {
            parts.push(Part::ToolUse { id: c.id.clone(), name: c.name.clone(), input: c.input.clone() });
        }
        t.messages.push(Message { role: Role::Assistant, content: parts });
        observer.turn_done(&record);

        if resp.tool_calls.is_empty() {
            t.final_answer = Some(resp.text);
            t.turns.push(record);
            break;
        }
        if turn >= settings.max_turns {
            // No turn is left to read the results: don't run the calls.
            t.turns.push(record);
            continue;
        }

        let calls = tokio::select! {
            r = run_calls(host, &resp.tool_calls, observer) => r,
            _ = cancel.cancelled() => {
                t.turns.push(record);
                t.outcome = Outcome::Interrupted;
                break;
            }
        };
        let mut results = Vec::new();
        for (call, (outcome, dur)) in resp.tool_calls.iter().zip(calls) {
            t.tool_calls += 1;
            t.mcp_calls += outcome.mcp_calls;
            results.push(Part::ToolResult {
                tool_use_id: call.id.clone(),
                content: outcome.content.clone(),
                is_error: outcome.is_error,
            });
            record.tool_calls.push(to_record(call, outcome, dur));
        }
        t.turns.push(record);
        t.messages.push(Message { role: Role::User, content: results });
    }
    t.duration_ms = ms(started);
    t
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

fn to_record(call: &ToolCall, o: ToolOutcome, duration_ms: f64) -> ToolCallRecord {
    ToolCallRecord {
        id: call.id.clone(),
        name: call.name.clone(),
        server: o.server,
        tool: o.tool,
        arguments: call.input.clone(),
        result_bytes: o.content.len(),
        result: o.content,
        is_error: o.is_error,
        truncated: o.truncated,
        duration_ms,
        detail: o.detail,
    }
}

/// Runs the calls of one turn (concurrently when the host allows) and returns them in order.
async fn run_calls(host: &dyn ToolHost, calls: &[ToolCall], observer: &dyn Observer) -> Vec<(ToolOutcome, f64)> {
    let several = calls.len() > 1;
    let mut out: Vec<Option<(ToolOutcome, f64)>> = vec![None; calls.len()];
    if host.concurrent() {
        let mut pending: futures::stream::FuturesUnordered<_> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| async move { (i, run_one(host, c, observer, several).await) })
            .collect();
        while let Some((i, r)) = pending.next().await {
            out[i] = Some(r);
        }
    } else {
        for (i, c) in calls.iter().enumerate() {
            out[i] = Some(run_one(host, c, observer, several).await);
        }
    }
    out.into_iter().map(|x| x.unwrap_or_default()).collect()
}

async fn run_one(host: &dyn ToolHost, call: &ToolCall, observer: &dyn Observer, several: bool) -> (ToolOutcome, f64) {
    observer.tool_started(&host.label(call));
    let started = Instant::now();
    let outcome = match &call.input_error {
        Some(why) => ToolOutcome { content: why.clone(), is_error: true, ..Default::default() },
        None => host.call(call).await,
    };
    let dur = ms(started);
    observer.tool_finished(&to_record(call, outcome.clone(), dur), several);
    (outcome, dur)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::provider::{ChatResponse, EventSink, ProviderError};
    use std::sync::Mutex;

    /// A provider that replays canned responses and keeps the requests.
    struct Canned {
        replies: Mutex<Vec<Result<ChatResponse, ProviderError>>>,
        seen: Mutex<Vec<Vec<Message>>>,
    }

    impl LlmProvider for Canned {
        fn name(&self) -> &'static str {
            "canned"
        }
        fn complete<'a>(
            &'a self,
            req: ChatRequest<'a>,
            _: EventSink<'a>,
        ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
            self.seen.lock().unwrap().push(req.messages.to_vec());
            let r = self.replies.lock().unwrap().remove(0);
            Box::pin(async move { r })
        }
    }

    struct Echo(Vec<ToolSpec>);
    impl ToolHost for Echo {
        fn specs(&self) -> &[ToolSpec] {
            &self.0
        }
        fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolOutcome> {
            Box::pin(async move {
                ToolOutcome { content: format!("echo {}", call.input), mcp_calls: 1, ..Default::default() }
            })
        }
    }

    fn calls(n: usize) -> ChatResponse {
        ChatResponse {
            text: "calling".into(),
            tool_calls: (0..n)
                .map(|i| ToolCall::from_raw(format!("c{i}"), "echo".into(), &format!("{{\"i\":{i}}}")))
                .collect(),
            usage: Some(Usage { input_tokens: 10, output_tokens: 2, ..Default::default() }),
            ..Default::default()
        }
    }

    fn settings(max_turns: u32) -> Settings {
        Settings {
            model: "m".into(),
            system: "s".into(),
            max_turns,
            max_tokens: 10,
            stream: true,
            mode: "direct".into(),
        }
    }

    #[tokio::test]
    async fn runs_tools_until_an_answer() {
        let answer = ChatResponse { text: "done".into(), ..Default::default() };
        let p = Canned { replies: Mutex::new(vec![Ok(calls(2)), Ok(answer)]), seen: Mutex::new(vec![]) };
        let host = Echo(vec![]);
        let t = run("task", &settings(5), &p, &host, &Silent, &CancellationToken::new()).await;
        assert_eq!(t.outcome, Outcome::Answer);
        assert_eq!(t.final_answer.as_deref(), Some("done"));
        assert_eq!((t.turns.len(), t.tool_calls, t.mcp_calls), (2, 2, 2));
        assert_eq!(t.turns_without_usage, 1);
        assert_eq!(t.usage.input_tokens, 10);
        let second = &p.seen.lock().unwrap()[1];
        assert_eq!(
            second[2].content,
            vec![
                Part::ToolResult { tool_use_id: "c0".into(), content: "echo {\"i\":0}".into(), is_error: false },
                Part::ToolResult { tool_use_id: "c1".into(), content: "echo {\"i\":1}".into(), is_error: false },
            ]
        );
        assert!(t.summary().starts_with("turns 2 · tool calls 2 · tokens in 10 / out 2 (partial) · "));
    }

    #[tokio::test]
    async fn stops_at_max_turns_and_on_provider_errors() {
        let p = Canned { replies: Mutex::new(vec![Ok(calls(1)), Ok(calls(1))]), seen: Mutex::new(vec![]) };
        let t = run("task", &settings(2), &p, &Echo(vec![]), &Silent, &CancellationToken::new()).await;
        assert_eq!(t.outcome, Outcome::MaxTurns);
        assert_eq!(t.tool_calls, 1, "the last turn's calls are not run");
        assert!(t.error.unwrap().starts_with("stopped after 2 turns without a final answer"));

        let err = ProviderError::Http { status: 400, message: "bad".into(), url: "u".into(), retry_after: None };
        let p = Canned { replies: Mutex::new(vec![Err(err)]), seen: Mutex::new(vec![]) };
        let t = run("task", &settings(2), &p, &Echo(vec![]), &Silent, &CancellationToken::new()).await;
        assert_eq!(t.outcome, Outcome::ProviderError);
        assert!(t.error.unwrap().contains("HTTP 400"));
    }

    #[tokio::test]
    async fn bad_arguments_become_error_results() {
        let mut bad = calls(0);
        bad.tool_calls.push(ToolCall::from_raw("x".into(), "echo".into(), "{oops"));
        let answer = ChatResponse { text: "ok".into(), ..Default::default() };
        let p = Canned { replies: Mutex::new(vec![Ok(bad), Ok(answer)]), seen: Mutex::new(vec![]) };
        let t = run("task", &settings(3), &p, &Echo(vec![]), &Silent, &CancellationToken::new()).await;
        let rec = &t.turns[0].tool_calls[0];
        assert!(rec.is_error && rec.result.contains("not valid JSON"), "{rec:?}");
        assert_eq!(t.outcome, Outcome::Answer);
    }

    #[test]
    fn numbers_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(812), "812");
        assert_eq!(thousands(5210), "5,210");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
