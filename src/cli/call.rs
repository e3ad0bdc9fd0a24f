//! `agent mcp call SERVER.TOOL`: one tool call from the terminal. Starts only that server.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value};

use super::output::write_stdout;
use super::{Context, EXIT_FAILURE, EXIT_OK, usage};
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

Output: text content as text, structuredContent as pretty JSON, images/audio/resources summarised
(mime type and size, or uri). --json prints the whole MCP CallToolResult instead.
SERVER.TOOL splits at the first dot, so tool names may contain dots.

Exit codes:
  0  success
  1  the tool reported an error (isError) or the call failed (server crashed, timed out)
  2  usage or configuration error (bad JSON, unknown server or tool, invalid arguments)";

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
}

pub async fn run(ctx: Context, args: &CallArgs) -> anyhow::Result<u8> {
    let (server, tool) = split_target(&args.target)?;
    let arguments = parse_args(&args.args)?;
    let manager = McpManager::new(&ctx.config);
    manager.check_server(server).map_err(|e| usage(e.to_string()))?;

    let progress = spawn_progress_printer(&manager);
    let call = async {
        // Start the server under a spinner first, so the call itself is not counted as start-up.
        let spinner = super::output::Spinner::start(format!("starting {server}"));
        let started = manager.connection(server).await;
        spinner.finish();
        match started {
            Ok(_) => manager.call_tool(server, tool, arguments).await,
            Err(e) => Err(e),
        }
    };
    let outcome = tokio::select! {
        r = call => Ok(r),
        signal = ctx.signals.received() => Err(signal),
    };
    progress.abort();
    if std::io::stderr().is_terminal() {
        eprint!("\r\x1b[2K");
    }
    super::save_usage(&manager);
    manager.shutdown().await;
    let result = match outcome {
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

    let is_error = result.is_error == Some(true);
    let rendered = if args.json {
        let mut s = serde_json::to_string_pretty(&crate::mcp::tools::result_json(&result))
            .context("cannot serialise the result")?;
        s.push('\n');
        s
    } else {
        render(&result)
    };
    match &args.output {
        Some(path) => {
            write_atomic(path, rendered.as_bytes(), Access::Shared)
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("wrote {} to {}", human_bytes(rendered.len() as u64), path.display());
        }
        None if is_error && !args.json => {
            // The tool's own words go to stderr with the error, so stdout stays a clean result.
            eprint!("{rendered}");
        }
        None => write_stdout(&rendered)?,
    }
    if is_error {
        eprintln!("error: `{server}.{tool}` reported an error");
        return Ok(EXIT_FAILURE);
    }
    Ok(EXIT_OK)
}

/// `server.tool` → (`server`, `tool`), splitting at the first dot.
pub fn split_target(target: &str) -> anyhow::Result<(&str, &str)> {
    crate::mcp::tools::split_qualified(target)
        .ok_or_else(|| usage(format!("expected SERVER.TOOL (e.g. `everything.echo`), got `{target}`")))
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
