//! `agent mcp call SERVER.TOOL`: one tool call from the terminal. Starts only that server.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value};

use super::output::{for_stderr, terminal_line, terminal_text, write_stderr, write_stdout};
use super::{Context, EXIT_FAILURE, EXIT_OK, usage};
use crate::handler::{CallError, Called, Handler, HandlerRunner, Source};
use crate::mcp::approval::PreApproved;
use crate::mcp::handler::ClientEvent;
use crate::mcp::tools::{Reader, result_text};
use crate::mcp::{CallContext, McpError, McpManager};
use crate::util::fs::{Access, write_atomic};
use crate::util::json::json_kind;
use crate::util::read::{CapError, read_capped};
use crate::util::size::human_bytes;

pub const AFTER_HELP: &str = "\
Examples:
  agent mcp call everything.echo --args '{\"message\": \"hi\"}'
  agent mcp call github.get_me --json
  agent mcp call fixture.big --output big.txt
  echo '{\"a\": 1, \"b\": 2}' | agent mcp call fixture.add --args -
  agent mcp call fixture.add --interactive
  agent mcp call everything.get-sum --args '{\"a\": 1, \"b\": 2}' --jq 'capture(\"is (?<sum>[0-9]+)\").sum | tonumber'
  agent mcp call github.list_issues --js 'tool_output.map(i => i.title)'

--interactive asks for each argument of the tool's input schema on the terminal: its
description, a `*` when required, its type; enums and booleans are picked from a list, other
values typed (a wrong type is said and asked again; Enter takes the default; arrays and objects
as JSON text). The arguments are validated as with --args, the JSON is shown, and the call is
made once you confirm (declining exits 1 without calling). Needs stdin and stderr to be a
terminal; not with --args.

Output: the result once, in one form: structuredContent as pretty JSON when the tool's text is
that JSON (or it sent no text), else the text; images/audio/resources summarised (mime type and
size, or uri). stdout gets a final newline when the result has none; --output FILE gets the
result exactly, byte for byte. --json prints the whole MCP CallToolResult instead. On a terminal,
control characters in what the server sent (escape sequences, carriage returns) are shown as
\u{FFFD}, not obeyed; to a pipe or --output FILE the output is byte-exact.

--yes approves this one call when the tool needs approval (docs/approvals.md); calls its result
handler makes are asked on the terminal, or decided by mcp.approvals.policy, like any other.
SERVER.TOOL splits at the first dot, so tool names may contain dots.

Result handlers (--jq, --js, --handler; docs/handlers.md): checked before the tool is called, run
over its result afterwards; only the handler's value is printed (a string as it is, anything else
as pretty JSON). --handler FILE: `.jq` is jq, `.js`/`.mjs`/`.ts` JavaScript, `.json` a handler
object {\"language\", \"script\"}; any other name or - (stdin): a handler object when the text
is one, else JavaScript. A jq filter with several outputs gives an array.

Exit codes:
  0  success
  1  the tool reported an error (isError) or the call failed (server crashed, timed out)
  1  also: the result handler failed after the tool ran (the message says so), or the call
     was denied (`denied by the user: SERVER.TOOL`, or without a terminal `denied (no
     terminal to ask; pass --yes or set mcp.approvals): SERVER.TOOL`; docs/approvals.md)
  2  usage or configuration error (bad JSON, unknown server or tool, invalid arguments,
     --interactive without a terminal, a result handler that does not parse or compile: the
     tool was not called)";

#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool to call, as SERVER.TOOL.
    #[arg(value_name = "SERVER.TOOL")]
    pub target: String,
    /// Arguments: inline JSON, @FILE to read a file, or - for stdin.
    #[arg(long, short = 'a', value_name = "JSON", default_value = "{}")]
    pub args: String,
    /// Print the full CallToolResult as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write the output to FILE (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Ask for each argument on the terminal (from the tool's input schema), show the JSON,
    /// call after confirmation.
    #[arg(long, short = 'i', conflicts_with = "args")]
    pub interactive: bool,
    /// Result handler from FILE (or - for stdin): .jq, .js, or a JSON handler object.
    #[arg(long, value_name = "FILE", group = "result_handler")]
    pub handler: Option<String>,
    /// Result handler: a JavaScript expression or function body over `tool_output` and `result`.
    #[arg(long, value_name = "EXPR", group = "result_handler")]
    pub js: Option<String>,
    /// Result handler: a jq filter over the tool's output.
    #[arg(long, value_name = "FILTER", group = "result_handler")]
    pub jq: Option<String>,
    /// Approve this call if the tool needs approval (`mcp.approvals`: destructive tools); not
    /// the calls its result handler makes.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// How the arguments of a call are had.
enum Asked {
    /// Answered (or given with --args): call with these.
    Call(Map<String, Value>),
    /// The user declined at the confirmation.
    Declined,
}

pub async fn run(ctx: Context, args: &CallArgs) -> anyhow::Result<u8> {
    let (server, tool) = split_target(&args.target)?;
    if args.interactive && !super::prompt::interactive() {
        return Err(usage(
            "--interactive needs a terminal: stdin and stderr must be a TTY (pass the arguments with --args instead)",
        ));
    }
    let arguments = if args.interactive { Map::new() } else { parse_args(&args.args)? };
    let handler = read_handler(args)?;
    let session = super::session::Session::open(&ctx.config)?;
    let manager = session.manager().clone();
    manager.check_server(server).map_err(|e| usage(e.to_string()))?;
    let runner = match &handler {
        Some(_) => Some(HandlerRunner::from_config(&ctx.config, Some(manager.clone()))?),
        None => None,
    };
    let compiled = match (&runner, &handler) {
        (Some(r), Some(h)) => Some(r.compile(h).map_err(|e| usage(format!("{e} (the tool was not called)")))?),
        _ => None,
    };

    let progress = spawn_progress_printer(&manager);
    let call = async {
        // Start the server under a spinner first, so the call itself is not counted as start-up.
        let spinner = super::output::Spinner::start(format!("starting {server}"));
        let started = manager.connection(server).await;
        spinner.finish();
        if let Err(e) = started {
            return Ok(Some(Err(CallError::Mcp(e))));
        }
        let asked = if args.interactive {
            match ask_arguments(&manager, server, tool).await? {
                Ok(asked) => asked,
                Err(e) => return Ok(Some(Err(CallError::Mcp(e)))),
            }
        } else {
            Asked::Call(arguments)
        };
        let source = compiled.as_ref().map_or(Source::None, Source::Compiled);
        // --yes approves this call, and only this one (not what its handler calls).
        let approval = args.yes.then(|| Arc::new(PreApproved::new(server, tool)));
        let cx = CallContext { approval, ..Default::default() };
        Ok::<_, anyhow::Error>(match asked {
            // A `403 insufficient_scope` on a terminal signs in again and retries inside the
            // manager (`McpManager::call_tool_with`), as for scripts and `agent run`.
            Asked::Call(arguments) => {
                Some(crate::handler::call(runner.as_ref(), &manager, server, tool, arguments, source, &cx).await)
            }
            Asked::Declined => None,
        })
    };
    let outcome = tokio::select! {
        r = call => Ok(r),
        signal = ctx.signals.received() => Err(signal),
    };
    progress.abort();
    if std::io::stderr().is_terminal() {
        eprint!("\r\x1b[2K");
    }
    if let Some(r) = runner {
        r.stop().await;
    }
    session.close().await;
    let called = match outcome {
        Ok(Ok(r)) => r,
        Ok(Err(e)) if is_interrupt(&e) => return Ok(super::signal::exit_after(libc::SIGINT)),
        Ok(Err(e)) => return Err(e),
        Err(signal) => {
            if args.interactive {
                // A list prompt hides the cursor while it waits.
                let _ = dialoguer::console::Term::stderr().show_cursor();
                eprintln!();
            }
            return Ok(super::signal::exit_after(signal));
        }
    };
    let called = match called {
        Some(c) => c,
        None => {
            eprintln!("not called: `{server}.{tool}` was not confirmed");
            return Ok(EXIT_FAILURE);
        }
    };
    let result = match called {
        Ok(Called::Result(r)) => r,
        Ok(Called::Value(value)) if !args.json => {
            return emit(args, &crate::handler::value_text(&value)).map(|()| EXIT_OK);
        }
        Ok(Called::Value(value)) => crate::handler::value_result(value),
        Err(CallError::After(e) | CallError::Handler(e)) => {
            // Quotes the raw result: server text.
            eprintln!("error: {}", for_stderr(&e));
            return Ok(EXIT_FAILURE);
        }
        Err(CallError::Mcp(
            e @ (McpError::UnknownServer { .. }
            | McpError::UnknownTool { .. }
            | McpError::InvalidArguments { .. }
            | McpError::Disabled(_)),
        )) => {
            return Err(usage(e.to_string()));
        }
        Err(CallError::Mcp(e)) => {
            if let McpError::Start { server, .. } | McpError::Call { server, .. } = &e {
                tracing::info!("stderr of `{server}` is in {}", manager.log_file(server).display());
            }
            return Err(e.into());
        }
    };
    let is_error = result.is_error == Some(true);
    if let Some(denied) = crate::mcp::approval::denied(&result).filter(|_| !args.json) {
        // The message says who denied it: the user, or the policy when nobody could be asked.
        eprintln!("error: {denied}");
        return Ok(EXIT_FAILURE);
    }
    let rendered = if args.json {
        let mut s = serde_json::to_string_pretty(&crate::mcp::tools::result_json(&result))
            .context("cannot serialise the result")?;
        s.push('\n');
        s
    } else {
        render(&result)
    };
    if is_error && !args.json && args.output.is_none() {
        // The tool's own words go to stderr with the error, so stdout stays a clean result.
        write_stderr(&with_newline(&rendered));
    } else {
        emit(args, &rendered)?;
    }
    if is_error {
        match crate::mcp::approval::denied(&result) {
            Some(denied) => eprintln!("error: {denied}"),
            None => eprintln!("error: `{server}.{tool}` reported an error"),
        }
        return Ok(EXIT_FAILURE);
    }
    Ok(EXIT_OK)
}

/// `--interactive`: the tool's input schema asked on the terminal until the answers validate
/// (only the properties a violation names are asked again), the JSON shown, then confirmed.
/// The inner `Err` is the manager's (unknown tool, server failure), reported as for a call.
async fn ask_arguments(manager: &McpManager, server: &str, tool: &str) -> anyhow::Result<Result<Asked, McpError>> {
    let info = match manager.tool(server, tool).await {
        Ok(info) => info,
        Err(e) => return Ok(Err(e)),
    };
    let heading = info.title.as_deref().or(info.description.as_deref().and_then(|d| d.lines().next())).unwrap_or("");
    let heading = terminal_line(heading);
    eprintln!("{server}.{tool}{}{heading}", if heading.is_empty() { "" } else { ": " });
    let mut answers = Map::new();
    let mut only: Option<Vec<String>> = None;
    loop {
        let (schema, previous, ask) = (info.input_schema.clone(), answers.clone(), only.clone());
        answers = tokio::task::spawn_blocking(move || {
            let mut answers = previous;
            super::prompt::ask_object(&schema, &mut answers, ask.as_deref()).map(|_| answers)
        })
        .await
        .context("the prompt stopped")?
        .map_err(prompt_error)?;
        let violations = match manager.check_arguments(server, tool, &answers).await {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        };
        if violations.is_empty() {
            break;
        }
        eprintln!("invalid arguments for `{server}.{tool}`:");
        for v in &violations {
            eprintln!("  - {}", terminal_line(v));
        }
        let named: Vec<String> = violations.iter().filter_map(|v| violation_property(v)).collect();
        only = if named.is_empty() { None } else { Some(named) };
    }
    let json = serde_json::to_string_pretty(&Value::Object(answers.clone())).context("cannot show the arguments")?;
    eprintln!("{}", terminal_text(&json));
    let question = format!("Call {server}.{tool} with these arguments?");
    let yes = tokio::task::spawn_blocking(move || super::prompt::confirm(&question, true))
        .await
        .context("the prompt stopped")?
        .map_err(prompt_error)?;
    Ok(Ok(if yes { Asked::Call(answers) } else { Asked::Declined }))
}

/// The top-level property a validation message is about (`/hours: ...` → `hours`).
fn violation_property(violation: &str) -> Option<String> {
    let path = violation.split_once(": ")?.0;
    let first = path.strip_prefix('/')?.split('/').next()?;
    Some(first.replace("~1", "/").replace("~0", "~")).filter(|s| !s.is_empty())
}

/// Ctrl-C at a prompt (the terminal is raw then, so it arrives as a key, not a signal).
#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
struct PromptInterrupted;

fn prompt_error(e: std::io::Error) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::Interrupted {
        // Raw mode may have hidden the cursor.
        let _ = dialoguer::console::Term::stderr().show_cursor();
        eprintln!();
        anyhow::Error::new(PromptInterrupted)
    } else {
        anyhow::Error::new(e).context("cannot prompt on the terminal")
    }
}

fn is_interrupt(e: &anyhow::Error) -> bool {
    e.is::<PromptInterrupted>()
}

/// Writes `rendered` to `--output` (atomically) exactly as it is, or to stdout with a final
/// newline when it has none (so a prompt does not follow it on the same line).
fn emit(args: &CallArgs, rendered: &str) -> anyhow::Result<()> {
    match &args.output {
        Some(path) => {
            write_atomic(path, rendered.as_bytes(), Access::Shared)
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("wrote {} to {}", human_bytes(rendered.len() as u64), path.display());
        }
        None => write_stdout(&with_newline(rendered))?,
    }
    Ok(())
}

fn with_newline(text: &str) -> std::borrow::Cow<'_, str> {
    if text.is_empty() || text.ends_with('\n') { text.into() } else { format!("{text}\n").into() }
}

/// The result handler of `--jq`, `--js` or `--handler FILE|-` (see [`AFTER_HELP`]).
fn read_handler(args: &CallArgs) -> anyhow::Result<Option<Handler>> {
    if let Some(f) = &args.jq {
        return Handler::parse(&serde_json::json!({"language": "jq", "script": f})).map(Some).map_err(usage);
    }
    if let Some(js) = &args.js {
        return Handler::parse(&Value::String(js.clone())).map(Some).map_err(usage);
    }
    let Some(spec) = &args.handler else { return Ok(None) };
    let text = if spec == "-" {
        read_args(std::io::stdin().lock(), "--handler from stdin")?
    } else {
        let file = std::fs::File::open(spec).map_err(|e| usage(format!("cannot read --handler file {spec}: {e}")))?;
        read_args(file, &format!("--handler file {spec}"))?
    };
    let ext = std::path::Path::new(spec).extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    let value = match ext.as_str() {
        "jq" => serde_json::json!({"language": "jq", "script": text}),
        "js" | "mjs" | "ts" => Value::String(text),
        "json" => {
            serde_json::from_str(&text).map_err(|e| usage(format!("--handler file {spec} is not valid JSON: {e}")))?
        }
        _ => match serde_json::from_str::<Value>(&text) {
            Ok(v @ Value::Object(_)) => v,
            _ => Value::String(text),
        },
    };
    Handler::parse(&value).map(Some).map_err(usage)
}

/// `server.tool` → (`server`, `tool`), splitting at the first dot. The spellings other tools use
/// for the same thing (`server:tool`, `server/tool`, Claude Code's `mcp__server__tool`) get a
/// "did you mean".
pub fn split_target(target: &str) -> anyhow::Result<(&str, &str)> {
    crate::mcp::tools::split_qualified(target).ok_or_else(|| {
        let meant = target
            .strip_prefix("mcp__")
            .and_then(|rest| rest.split_once("__"))
            .or_else(|| target.split_once(':'))
            .or_else(|| target.split_once('/'))
            .filter(|(s, t)| !s.is_empty() && !t.is_empty());
        let hint = match meant {
            Some((s, t)) => format!("; did you mean `{s}.{t}`?"),
            None => " (`agent mcp list` shows each server's tools)".to_string(),
        };
        usage(format!("expected SERVER.TOOL (e.g. `everything.echo`), got `{target}`{hint}"))
    })
}

/// `--args` from a file or stdin may hold this much (what the bridge accepts for one request).
pub const MAX_ARGS_BYTES: usize = 16 << 20;

/// Reads `--args`: inline JSON, `@file`, or `-` (stdin), at most [`MAX_ARGS_BYTES`]. Must be a
/// JSON object.
pub fn parse_args(spec: &str) -> anyhow::Result<Map<String, Value>> {
    let (text, origin) = if spec == "-" {
        let s = read_args(std::io::stdin().lock(), "--args from stdin")?;
        (s, "stdin".to_string())
    } else if let Some(path) = spec.strip_prefix('@') {
        let file = std::fs::File::open(path).map_err(|e| usage(format!("cannot read --args file {path}: {e}")))?;
        let s = read_args(file, &format!("--args file {path}"))?;
        (s, path.to_string())
    } else {
        (spec.to_string(), "--args".to_string())
    };
    let text = if text.trim().is_empty() { "{}".to_string() } else { text };
    let value: Value = serde_json::from_str(&text).map_err(|e| usage(format!("{origin} is not valid JSON: {e}")))?;
    match value {
        Value::Object(map) => Ok(map),
        other => Err(usage(format!("{origin} must be a JSON object of named arguments, got {}", json_kind(&other)))),
    }
}

/// All of `input` as text, or a usage error naming `what` when it holds more than
/// [`MAX_ARGS_BYTES`] (`@/dev/zero` would otherwise grow without end) or is not UTF-8.
fn read_args(input: impl Read, what: &str) -> anyhow::Result<String> {
    let bytes = read_capped(input, MAX_ARGS_BYTES as u64).map_err(|e| match e {
        CapError::TooLarge => usage(format!("{what} is larger than {} MB", MAX_ARGS_BYTES >> 20)),
        CapError::Io(e) => usage(format!("cannot read {what}: {e}")),
    })?;
    String::from_utf8(bytes).map_err(|_| usage(format!("{what} is not valid UTF-8")))
}

/// Human rendering (see [`Reader::Terminal`]).
pub fn render(result: &CallToolResult) -> String {
    result_text(result, Reader::Terminal)
}

/// Prints server progress notifications to stderr while a call runs (the server's message on one
/// line, sanitised: on a terminal it follows `\r`, which a server's own `\r` must not imitate).
pub fn spawn_progress_printer(manager: &McpManager) -> tokio::task::JoinHandle<()> {
    let mut rx = manager.events().subscribe();
    let tty = std::io::stderr().is_terminal();
    tokio::spawn(async move {
        while let Ok(ev) = rx.recv().await {
            if let ClientEvent::Progress { server, progress, total, message } = ev {
                let amount = match total {
                    Some(t) => format!("{progress}/{t}"),
                    None => format!("{progress}"),
                };
                let msg = message.map(|m| format!(" {}", terminal_line(&m))).unwrap_or_default();
                if tty {
                    eprint!("\r\x1b[2K{server}: progress {amount}{msg}");
                } else {
                    eprintln!("{server}: progress {amount}{msg}");
                }
            }
        }
    })
}
