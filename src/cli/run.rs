//! `agent run "task"`: flags onto config, the provider made, the run (`crate::agent::run`) raced
//! against signals inside a command session, and what the user sees: streamed assistant text on stdout, one
//! line per tool call on stderr, the final answer last, then a one-line summary; or the whole
//! transcript as JSON (`--json`), or only the final answer (`--quiet`).
//!
//! Before the model is called, the task is completed from the servers: `--prompt SERVER.NAME`
//! makes a server's prompt the task's text (`server_prompts::prompt_task`), and each
//! `@SERVER:URI` token the user typed attaches that resource's text after the task
//! ([`attachments`]). Only the user's own words are searched for tokens, never a prompt's text:
//! a server must not make `agent` read another server's resources into the conversation.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use tokio_util::sync::CancellationToken;

use super::output::write_stdout;
use super::{Context, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, ServerFilter, usage};
use crate::agent::key_env_var;
use crate::agent::provider;
use crate::agent::run::Run;
use crate::agent::session::{Observer, Outcome, ToolCallRecord, Transcript, TurnRecord};
use crate::agent::tokens;
use crate::codemode::Options;
use crate::config::{Config, ExecutionMode, Provider};
use crate::util::read::{CapError, read_capped};
use crate::util::size::{human_bytes, parse_bytes};

pub const AFTER_HELP: &str = "\
Modes (--mode, else mcp.execution_mode):
  direct  every MCP tool is an LLM tool named mcp_<server>_<tool>
  code    the model gets `code_execution` (TypeScript against the generated API in
          mcp.code_execution.workspace_dir) plus read-only list_files/read_file/grep_files
          over that tree; MCP tool definitions are not sent
  auto    per server, smallest first: direct while the run's direct definitions take at
          most mcp.auto_threshold_tokens (default 4,000), else code; one request can offer
          small servers' tools directly and the rest through code_execution (mode `mixed`)
  progressive  the model gets search_tools(query, limit) over every tool and
          call_tool(name: \"server.tool\", arguments), plus mcp.pinned_tools as
          direct tools; a few hundred tokens of definitions however many tools
  A server's own `mode: direct|code|auto` (mcp.servers.<name>.mode) wins over the run's
  (not in progressive mode).
  When modes are decided per server, each server's choice goes to stderr
  (`server github: code (117 tools, 27,921 tokens; auto: direct definitions 29,142 > 4,000)`)
  and into --json as `modes`; `agent mcp list --tokens` shows the same choice

Output: assistant text streams to stdout, tool activity goes to stderr (one line per call),
the final answer is printed last, then a summary on stderr:
  turns 4 · tool calls 3 · tokens in 5,210 / out 812 · 7.4 s
--json prints the whole transcript (messages, tool calls with durations and results, usage per
turn and in total) as one JSON document on stdout; --quiet prints only the final answer.

Provider: llm.provider (anthropic | openai-compatible), llm.model, llm.base_url, llm.api_key
(else ANTHROPIC_API_KEY / OPENAI_API_KEY; a custom base_url may go without a key).
429, 5xx and network errors are retried (llm.max_retries) with backoff, honouring retry-after.

Resources and prompts (docs/resources.md):
  `@SERVER:URI` in the task (a URI with its scheme, e.g. @everything:demo://resource/...)
  attaches that resource's text after the task, between `--- resource `SERVER:URI` ---` and
  `--- end of resource `SERVER:URI` ---` lines. Binary resources and answers over
  mcp.max_result_bytes are refused, as are unknown servers and URIs (with suggestions): exit 2
  before the model is called. --prompt SERVER.NAME (with --args JSON) starts from a server's
  prompt: its text becomes the task (several messages each under `[user]` / `[assistant]`);
  a task given too follows it. `@` tokens are looked for only in the task you typed.

Examples:
  agent run \"What is 40 + 2? Use the add tool.\"
  agent run \"Summarise @everything:demo://resource/static/document/architecture.md\"
  agent run --prompt everything.args-prompt --args '{\"city\": \"Oslo\"}'
  agent run --mode code \"Find the open issues labelled bug and summarise them\"
  agent run --provider openai --base-url http://localhost:11434/v1 --model qwen3 \"...\"
  echo \"long task text\" | agent run - --json > transcript.json

Calls of tools that need approval (mcp.approvals: destructive tools) are asked on the
terminal; without one mcp.approvals.policy decides (deny by default). --yes approves them all.

Exit codes:
  0    the model gave a final answer
  1    the turn limit was hit, or the provider failed (after retries)
  2    usage or configuration error (e.g. no API key, unknown --server), also when the
       provider rejects the key, the access or the model (HTTP 401, 403, 404)
  130  interrupted (Ctrl-C); 143 on SIGTERM, 129 on SIGHUP. Servers are stopped and the
       bridge socket removed in every case";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    Direct,
    Code,
    Auto,
    Progressive,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderArg {
    Anthropic,
    Openai,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The task, in words; `-` reads it from stdin. `@SERVER:URI` attaches a resource's text.
    #[arg(required_unless_present = "prompt")]
    pub task: Option<String>,
    /// Start from a server's prompt (SERVER.NAME): its messages become the task (the TASK
    /// argument, when given, follows them).
    #[arg(long, value_name = "SERVER.NAME")]
    pub prompt: Option<String>,
    /// The prompt's arguments: a JSON object, inline, @FILE or - for stdin.
    #[arg(long = "args", value_name = "JSON", requires = "prompt")]
    pub prompt_args: Option<String>,
    /// How tools reach the model (default: mcp.execution_mode).
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// LLM API (default: llm.provider).
    #[arg(long, value_enum)]
    pub provider: Option<ProviderArg>,
    /// Model name (default: llm.model).
    #[arg(long, short = 'm')]
    pub model: Option<String>,
    /// API base URL, e.g. http://localhost:11434/v1 (default: llm.base_url, else the provider's).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Model turns before giving up (default: agent.max_turns).
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,
    /// Output token limit per model call (default: llm.max_tokens).
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u32>,
    /// Extra instructions appended to the built-in system prompt (replaces agent.system_prompt).
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,
    #[command(flatten)]
    pub filter: ServerFilter,
    /// Direct mode: cut tool results past this size (default: agent.max_tool_result_bytes).
    #[arg(long, value_name = "SIZE")]
    pub max_tool_result: Option<String>,
    /// Ask for complete responses instead of streamed ones (for servers that stream badly).
    #[arg(long)]
    pub no_stream: bool,
    /// Print the whole transcript as one JSON document on stdout.
    #[arg(long, conflicts_with = "quiet")]
    pub json: bool,
    /// Print only the final answer.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Remove what earlier scripts stored (<workspace>/data/) before the run.
    #[arg(long)]
    pub fresh_state: bool,
    /// Approve the calls that need approval (`mcp.approvals`: destructive tools) without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// Applies the flags on top of the configuration.
fn apply_flags(config: &mut Config, args: &RunArgs) -> anyhow::Result<()> {
    if let Some(p) = args.provider {
        let p = match p {
            ProviderArg::Anthropic => Provider::Anthropic,
            ProviderArg::Openai => Provider::Openai,
        };
        if p != config.llm.provider
            && args.model.is_none()
            && config.llm.model == crate::config::LlmConfig::default().model
        {
            return Err(usage(format!(
                "--provider {p} needs a model: pass --model or set llm.model (the default `{}` is an Anthropic model)",
                config.llm.model
            )));
        }
        config.llm.provider = p;
    }
    if let Some(m) = &args.model {
        config.llm.model = m.clone();
    }
    if let Some(u) = &args.base_url {
        config.llm.base_url = Some(u.clone());
    }
    if let Some(n) = args.max_tokens {
        if n == 0 {
            return Err(usage("--max-tokens must be at least 1"));
        }
        config.llm.max_tokens = n;
    }
    if let Some(n) = args.max_turns {
        config.agent.max_turns = n;
    }
    if config.agent.max_turns == 0 {
        return Err(usage("the turn limit (--max-turns / agent.max_turns) must be at least 1"));
    }
    if let Some(s) = &args.system {
        config.agent.system_prompt = Some(s.clone());
    }
    if let Some(m) = args.mode {
        config.mcp.execution_mode = match m {
            ModeArg::Direct => ExecutionMode::Direct,
            ModeArg::Code => ExecutionMode::Code,
            ModeArg::Auto => ExecutionMode::Auto,
            ModeArg::Progressive => ExecutionMode::Progressive,
        };
    }
    if let Some(s) = &args.max_tool_result {
        let n = parse_bytes(s).map_err(|e| usage(format!("--max-tool-result: {e}")))?;
        config.agent.max_tool_result_bytes = usize::try_from(n).unwrap_or(usize::MAX).max(1);
    }
    Ok(())
}

/// Largest task `agent run -` reads from stdin.
const MAX_TASK_BYTES: u64 = 16 << 20;

fn read_task(arg: &str) -> anyhow::Result<String> {
    let task = if arg == "-" {
        let bytes = read_capped(std::io::stdin().lock(), MAX_TASK_BYTES).map_err(|e| match e {
            CapError::TooLarge => usage(format!("the task on stdin is larger than {}", human_bytes(MAX_TASK_BYTES))),
            CapError::Io(e) => usage(format!("cannot read the task from stdin: {e}")),
        })?;
        String::from_utf8(bytes).map_err(|_| usage("the task on stdin is not valid UTF-8"))?
    } else {
        arg.to_string()
    };
    let task = task.trim().to_string();
    if task.is_empty() {
        return Err(usage("the task is empty: say what to do, e.g. `agent run \"list my open issues\"`"));
    }
    Ok(task)
}

/// An `@SERVER:URI` token of the task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRef {
    pub server: String,
    pub uri: String,
}

/// The `@SERVER:URI` tokens of `task`, each once, in order. A token starts the task or follows
/// whitespace (or an opening bracket or quote); the URI carries its scheme (`@everything:demo://x`, `@files:file:///a.txt`), so
/// `@10:30` or a mail address is no token; sentence punctuation after it is not part of it.
pub fn resource_refs(task: &str) -> Vec<ResourceRef> {
    let mut refs: Vec<ResourceRef> = Vec::new();
    for word in task.split_whitespace() {
        let word = word.trim_start_matches(['(', '[', '"', '\'']);
        let Some(rest) = word.strip_prefix('@') else { continue };
        let Some((server, uri)) = rest.split_once(':') else { continue };
        let uri = uri.trim_end_matches(['.', ',', ';', '!', '?', ')', '\'', '"']);
        let server_ok =
            !server.is_empty() && server.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        let scheme_ok = uri.split_once(':').is_some_and(|(scheme, rest)| {
            !rest.is_empty()
                && scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        });
        let r = ResourceRef { server: server.to_string(), uri: uri.to_string() };
        if server_ok && scheme_ok && !refs.contains(&r) {
            refs.push(r);
        }
    }
    refs
}

/// The task with each `@SERVER:URI` token's resource text appended (`resources::attachment`).
/// An unknown server or URI, a server without resources, binary contents, an answer over
/// `mcp.max_result_bytes` are usage errors (exit 2): the model is not called.
async fn attachments(manager: &crate::mcp::McpManager, task: &str) -> anyhow::Result<String> {
    use super::resources::{Body, attachment, command_error, content_bytes, part, start_one};
    let mut out = task.to_string();
    for r in resource_refs(task) {
        let token = format!("@{}:{}", r.server, r.uri);
        manager.check_server(&r.server).map_err(|e| usage(format!("{token}: {e}")))?;
        start_one(manager, &r.server).await.map_err(|e| command_error(e).context(format!("cannot attach {token}")))?;
        let read = match manager.read_resource(&r.server, &r.uri).await {
            Ok(read) => read,
            Err(e @ crate::mcp::McpError::TooLarge { .. }) => {
                return Err(usage(format!("cannot attach {token}: {e}")));
            }
            Err(e) => return Err(command_error(e).context(format!("cannot attach {token}"))),
        };
        if read.contents.is_empty() {
            return Err(usage(format!("cannot attach {token}: the server sent no contents")));
        }
        for content in &read.contents {
            let p = part(content);
            match p.body {
                Body::Text(text) => {
                    out.push_str("\n\n");
                    out.push_str(&attachment(Some(&r.server), p.uri, text));
                }
                _ => {
                    let size = content_bytes(&r.server, &p).map(|b| human_bytes(b.len() as u64)).unwrap_or_default();
                    let mime = p.mime.unwrap_or("application/octet-stream");
                    return Err(usage(format!(
                        "cannot attach {token}: it is binary ({}, {size}); only text resources can be attached \
                         (`agent mcp read {} URI --output FILE` saves it)",
                        super::output::terminal_line(mime),
                        r.server
                    )));
                }
            }
        }
        tracing::info!("attached {token}");
    }
    Ok(out)
}

/// The task the model gets: the prompt's text (`--prompt`), then the typed task with its
/// attachments.
async fn compose_task(
    manager: &crate::mcp::McpManager,
    prompt: Option<(&str, &str, serde_json::Map<String, serde_json::Value>)>,
    typed: Option<&str>,
) -> anyhow::Result<String> {
    let mut parts = Vec::new();
    if let Some((server, name, arguments)) = prompt {
        manager.check_server(server).map_err(|e| usage(e.to_string()))?;
        super::resources::start_one(manager, server).await.map_err(super::resources::command_error)?;
        let got = manager.get_prompt(server, name, arguments).await.map_err(super::resources::command_error)?;
        parts.push(super::server_prompts::prompt_task(&format!("{server}.{name}"), &got)?);
    }
    if let Some(typed) = typed {
        parts.push(attachments(manager, typed).await?);
    }
    Ok(parts.join("\n\n"))
}

pub async fn run(ctx: Context, args: &RunArgs) -> anyhow::Result<u8> {
    let mut config = ctx.config;
    apply_flags(&mut config, args)?;
    if args.task.as_deref() == Some("-") && args.prompt_args.as_deref() == Some("-") {
        return Err(usage("the task and --args cannot both come from stdin"));
    }
    let typed = args.task.as_deref().map(read_task).transpose()?;
    let prompt = match &args.prompt {
        Some(target) => {
            let (server, name) = super::server_prompts::split_prompt(target)?;
            let arguments = super::call::parse_args(args.prompt_args.as_deref().unwrap_or("{}"))?;
            Some((server, name, arguments))
        }
        None => None,
    };
    let env_key = std::env::var(key_env_var(config.llm.provider)).ok();
    let llm = crate::agent::provider_from_config(&config.llm, env_key).map_err(usage)?;
    if args.fresh_state {
        let workspace = Options::from_config(&config)?.workspace;
        let state = crate::runtime::state::State::new(&workspace, crate::runtime::state::Quota::default());
        if state.clear().map_err(|e| anyhow::anyhow!(e))? {
            tracing::info!("--fresh-state: removed {}", workspace.join("data").display());
        }
    }

    let session = super::session::Session::open(&config)?;
    if args.yes {
        super::approve::approve_all(session.manager());
    }
    let servers = match super::select_servers(session.manager(), &args.filter) {
        Ok(s) => s,
        Err(e) => {
            session.close().await;
            return Err(e);
        }
    };
    let composed = tokio::select! {
        t = compose_task(session.manager(), prompt, typed.as_deref()) => Ok(t),
        signal = ctx.signals.received() => Err(signal),
    };
    let task = match composed {
        Ok(Ok(task)) => task,
        Ok(Err(e)) => {
            session.close().await;
            return Err(e);
        }
        Err(signal) => {
            session.close().await;
            return Ok(super::signal::exit_after(signal));
        }
    };

    // A signal cancels the loop (which returns what it has) or the set-up before it.
    let cancel = CancellationToken::new();
    let signal = Arc::new(AtomicI32::new(0));
    let watcher = {
        let (cancel, signal, signals) = (cancel.clone(), signal.clone(), ctx.signals.clone());
        tokio::spawn(async move {
            signal.store(signals.received().await, Ordering::SeqCst);
            cancel.cancel();
        })
    };
    let printer = Printer::new(args);
    let mut plan = None;
    let run = Run {
        config: &config,
        task: &task,
        servers: &servers,
        manager: session.manager(),
        llm: llm.as_ref(),
        observer: &printer,
        cancel: &cancel,
        stream: !args.no_stream,
        recorder: session.recorder(),
    };
    let result = run.drive(&mut plan).await;
    // Sampling requests the servers sent during the run count as the run's tokens.
    let sampled = session.sampled();
    session.close().await;
    watcher.abort();
    let signal = signal.load(Ordering::SeqCst);
    let mut transcript = match result? {
        Some(t) => t,
        None => return Ok(super::signal::exit_after(signal)),
    };
    transcript.usage.add(&sampled);
    report(&transcript, plan.as_ref(), &printer, args, signal)
}

/// Prints the outcome and returns the exit code.
fn report(
    t: &Transcript,
    plan: Option<&tokens::ModePlan>,
    printer: &Printer,
    args: &RunArgs,
    signal: i32,
) -> anyhow::Result<u8> {
    if args.json {
        let mut doc = serde_json::to_value(t).context("cannot serialise the transcript")?;
        if let (Some(plan), Some(map)) = (plan, doc.as_object_mut()) {
            map.insert("modes".into(), serde_json::to_value(plan).context("cannot serialise the modes")?);
        }
        let mut s = serde_json::to_string_pretty(&doc).context("cannot serialise the transcript")?;
        s.push('\n');
        write_stdout(&s)?;
    } else if args.quiet {
        if let Some(answer) = t.final_answer.as_deref().filter(|a| !a.is_empty()) {
            let nl = if answer.ends_with('\n') { "" } else { "\n" };
            write_stdout(&format!("{answer}{nl}"))?;
        }
    } else {
        printer.end_line();
    }
    if !args.quiet && !args.json {
        eprintln!("{}", printer.dim(&t.summary()));
    }
    Ok(match t.outcome {
        Outcome::Answer => {
            if t.final_answer.as_deref().is_some_and(str::is_empty) {
                eprintln!("warning: the model ended without any text");
            }
            EXIT_OK
        }
        Outcome::MaxTurns | Outcome::ProviderError => {
            eprintln!("error: {}", super::output::for_stderr(t.error.as_deref().unwrap_or("the run failed")));
            if t.configuration_error { EXIT_USAGE } else { EXIT_FAILURE }
        }
        Outcome::Interrupted => super::signal::exit_after(signal),
    })
}

/// The CLI's [`Observer`]: streams text to stdout and tool activity to stderr. On a terminal, the
/// model's text and what tools said are shown as `output::terminal_text` has them: a tool's
/// result can steer what the model writes.
struct Printer {
    stream_text: bool,
    /// Whether stdout is a terminal (the streamed text is sanitised then).
    stdout_terminal: bool,
    activity: bool,
    color: bool,
    /// Whether stdout ends in a newline (so stderr lines don't land mid-sentence).
    at_line_start: AtomicBool,
    /// Whether the model call in progress has streamed text (a retry then repeats it).
    streamed: AtomicBool,
}

impl Printer {
    fn new(args: &RunArgs) -> Printer {
        let color = super::log::stderr_color();
        Printer {
            stream_text: !args.json && !args.quiet,
            stdout_terminal: std::io::stdout().is_terminal(),
            activity: !args.quiet,
            color,
            streamed: AtomicBool::new(false),
            at_line_start: AtomicBool::new(true),
        }
    }

    fn dim(&self, s: &str) -> String {
        if self.color { format!("\x1b[2m{s}\x1b[0m") } else { s.to_string() }
    }

    /// Ends the current stdout line if text is pending on it.
    fn end_line(&self) {
        if self.stream_text && !self.at_line_start.swap(true, Ordering::SeqCst) {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(b"\n").and_then(|_| out.flush());
        }
    }
}

fn duration_text(ms: f64) -> String {
    if ms < 1000.0 { format!("{} ms", ms.round() as u64) } else { format!("{:.1} s", ms / 1000.0) }
}

impl Observer for Printer {
    /// A dimmed note on stderr (not with --quiet).
    fn note(&self, msg: &str) {
        if self.activity {
            self.end_line();
            eprintln!("{}", self.dim(&super::output::for_stderr(msg)));
        }
    }

    fn text(&self, delta: &str) {
        if !self.stream_text || delta.is_empty() {
            return;
        }
        let shown = if self.stdout_terminal { super::output::terminal_text(delta) } else { delta.into() };
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(shown.as_bytes()).and_then(|_| out.flush());
        self.at_line_start.store(delta.ends_with('\n'), Ordering::SeqCst);
        self.streamed.store(true, Ordering::SeqCst);
    }

    fn retrying(&self, attempt: u32, delay: Duration, reason: &str) {
        let cut = self.streamed.swap(false, Ordering::SeqCst);
        if self.activity {
            self.end_line();
            let secs = delay.as_secs_f64();
            let restart = if cut { "; the reply above was cut off and starts over" } else { "" };
            eprintln!("{}", self.dim(&format!("⟳ {reason}; retrying in {secs:.1} s (retry {attempt}){restart}")));
        }
    }

    fn turn_done(&self, _turn: &TurnRecord) {
        self.streamed.store(false, Ordering::SeqCst);
        self.end_line();
    }

    fn tool_started(&self, label: &str) {
        if self.activity {
            self.end_line();
            eprintln!("{}", self.dim(&format!("→ {}", super::output::terminal_line(label))));
        }
    }

    fn tool_finished(&self, r: &ToolCallRecord, several: bool) {
        if !self.activity {
            return;
        }
        let who = if several { format!("{}: ", r.name) } else { String::new() };
        let took = duration_text(r.duration_ms);
        let calls = r
            .detail
            .as_ref()
            .and_then(|d| d.get("tool_calls"))
            .and_then(serde_json::Value::as_u64)
            .map(|n| format!(", {n} MCP call{}", if n == 1 { "" } else { "s" }))
            .unwrap_or_default();
        let cut = if r.truncated { ", truncated" } else { "" };
        let line = if r.is_error {
            let first = r.result.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            format!("← {who}error in {took}{calls}: {}", provider::short(first.trim(), 160))
        } else {
            format!("← {who}{} in {took}{calls}{cut}", human_bytes(r.result_bytes as u64))
        };
        // The tool's name comes from the model, its error from a server.
        eprintln!("{}", self.dim(&super::output::terminal_line(&line)));
    }
}

#[cfg(test)]
mod tests {
    use super::{ResourceRef, resource_refs};

    fn r(server: &str, uri: &str) -> ResourceRef {
        ResourceRef { server: server.into(), uri: uri.into() }
    }

    #[test]
    fn at_tokens_need_a_server_and_a_uri_with_its_scheme() {
        assert_eq!(
            resource_refs("Compare @docs:file:///a.txt, and (@everything:demo://x/1). Again @docs:file:///a.txt"),
            [r("docs", "file:///a.txt"), r("everything", "demo://x/1")]
        );
        // No token: a time, a mail address, a bare mention, a URI without a scheme.
        assert!(resource_refs("at @10:30 mail me@host:demo://x or @alice, see @s:plain @s:1x:y").is_empty());
        assert_eq!(resource_refs("@s:a:b"), [r("s", "a:b")]);
    }
}
