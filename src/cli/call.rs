//! `agent mcp call SERVER.TOOL`: one tool call from the terminal. Starts only that server.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value};

use super::output::write_stdout;
use super::{Context, EXIT_FAILURE, EXIT_OK, usage};
use crate::handler::{Handler, HandlerRunner};
use crate::mcp::handler::ClientEvent;
use crate::mcp::tools::{Reader, result_text};
use crate::mcp::{McpError, McpManager};
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
  agent mcp call everything.get-sum --args '{\"a\": 1, \"b\": 2}' --jq '.content[0].text'
  agent mcp call github.list_issues --js 'tool_output.map(i => i.title)'

Output: text content as text, structuredContent as pretty JSON, images/audio/resources summarised
(mime type and size, or uri). --json prints the whole MCP CallToolResult instead.
SERVER.TOOL splits at the first dot, so tool names may contain dots.

Result handlers (--jq, --js, --handler; docs/handlers.md): checked before the tool is called, run
over its result afterwards; only the handler's value is printed (a string as it is, anything else
as pretty JSON). --handler FILE: `.jq` is jq, `.js`/`.mjs`/`.ts` JavaScript, `.json` a handler
object {\"language\", \"script\"}; any other name or - (stdin): a handler object when the text
is one, else JavaScript. A jq filter with several outputs gives an array.

Exit codes:
  0  success
  1  the tool reported an error (isError) or the call failed (server crashed, timed out)
  1  also: the result handler failed after the tool ran (the message says so)
  2  usage or configuration error (bad JSON, unknown server or tool, invalid arguments, a
     result handler that does not parse or compile: the tool was not called)";

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
    /// Result handler from FILE (or - for stdin): .jq, .js, or a JSON handler object.
    #[arg(long, value_name = "FILE", group = "result_handler")]
    pub handler: Option<String>,
    /// Result handler: a JavaScript expression or function body over `tool_output` and `result`.
    #[arg(long, value_name = "EXPR", group = "result_handler")]
    pub js: Option<String>,
    /// Result handler: a jq filter over the tool's output.
    #[arg(long, value_name = "FILTER", group = "result_handler")]
    pub jq: Option<String>,
}

pub async fn run(ctx: Context, args: &CallArgs) -> anyhow::Result<u8> {
    let (server, tool) = split_target(&args.target)?;
    let arguments = parse_args(&args.args)?;
    let handler = read_handler(args)?;
    let manager = std::sync::Arc::new(McpManager::new(&ctx.config));
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
        let result = match started {
            Ok(_) => manager.call_tool(server, tool, arguments).await,
            Err(e) => Err(e),
        };
        let handled = match (&runner, &compiled, &result) {
            (Some(r), Some(c), Ok(res)) => Some(r.apply(c, server, tool, res).await),
            _ => None,
        };
        (result, handled)
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
    manager.shutdown().await;
    let (result, handled) = match outcome {
        Ok(r) => r,
        Err(signal) => return Ok(super::signal::exit_after(signal)),
    };
    let result = match result {
        Ok(r) => r,
        Err(
            e @ (McpError::UnknownServer { .. }
            | McpError::UnknownTool { .. }
            | McpError::InvalidArguments { .. }
            | McpError::Disabled(_)),
        ) => {
            return Err(usage(e.to_string()));
        }
        Err(e) => {
            if let McpError::Start { server, .. } | McpError::Call { server, .. } = &e {
                tracing::info!("stderr of `{server}` is in {}", manager.log_file(server).display());
            }
            return Err(e.into());
        }
    };

    let result = match handled {
        Some(Err(e)) => {
            eprintln!("error: {e}");
            return Ok(EXIT_FAILURE);
        }
        Some(Ok(Some(value))) if !args.json => {
            let mut text = crate::handler::value_text(&value);
            if !text.ends_with('\n') {
                text.push('\n');
            }
            return emit(args, &text).map(|()| EXIT_OK);
        }
        Some(Ok(Some(value))) => crate::handler::value_result(value),
        Some(Ok(None)) | None => result,
    };
    let is_error = result.is_error == Some(true);
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
        eprint!("{rendered}");
    } else {
        emit(args, &rendered)?;
    }
    if is_error {
        eprintln!("error: `{server}.{tool}` reported an error");
        return Ok(EXIT_FAILURE);
    }
    Ok(EXIT_OK)
}

/// Writes `rendered` to `--output` (atomically) or stdout.
fn emit(args: &CallArgs, rendered: &str) -> anyhow::Result<()> {
    match &args.output {
        Some(path) => {
            write_atomic(path, rendered.as_bytes(), Access::Shared)
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("wrote {} to {}", human_bytes(rendered.len() as u64), path.display());
        }
        None => write_stdout(rendered)?,
    }
    Ok(())
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

/// `server.tool` → (`server`, `tool`), splitting at the first dot.
pub fn split_target(target: &str) -> anyhow::Result<(&str, &str)> {
    match target.split_once('.') {
        Some((s, t)) if !s.is_empty() && !t.is_empty() => Ok((s, t)),
        _ => Err(usage(format!("expected SERVER.TOOL (e.g. `everything.echo`), got `{target}`"))),
    }
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

/// Prints server progress notifications to stderr while a call runs.
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
                let msg = message.map(|m| format!(" {m}")).unwrap_or_default();
                if tty {
                    eprint!("\r\x1b[2K{server}: progress {amount}{msg}");
                } else {
                    eprintln!("{server}: progress {amount}{msg}");
                }
            }
        }
    })
}
