//! `agent exec FILE.ts | -`: runs one script in the code-mode runtime, no LLM involved.
//!
//! Order of work, arranged so a script that calls no server pays for nothing but the isolate:
//! the runtime starts bootstrapping first (on its own thread), the script is scanned for the
//! servers it refers to, only those are started (and the tree regenerated for them when
//! `regenerate_on_startup` says so and their tools changed), the bridge comes up, the script runs.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::Args;

use super::output::{for_stderr, write_stderr, write_stdout};
use super::{Context, EXIT_FAILURE, EXIT_OK, usage};
use crate::codemode::{CodeMode, Options};
use crate::runtime::{ExecOutcome, FailureKind, Limits, Script};
use crate::util::read::{CapError, read_capped};
use crate::util::size::{human_bytes, parse_bytes, parse_memory_mb, parse_timeout};

pub const AFTER_HELP: &str = "\
Examples:
  agent exec script.ts
  echo 'console.log(1 + 1)' | agent exec -
  agent exec --timeout 5s --memory-limit 64MB --json script.ts

`-` reads the script from stdin and runs it as if it were <workspace>/main.ts, so
`./servers/<server>/index.ts` and `./client.ts` resolve. A FILE may live anywhere, but what it
imports must resolve inside the workspace (mcp.code_execution.workspace_dir; by default
the project's .kodelet/mcp, or a per-user one: at -v agent names it; docs/state.md).
Only the servers the script refers to are started.

Output: the script's console.log/info/debug on stdout, console.warn/error on stderr, then the
default export's value (a function is called first) as JSON on stdout. On a terminal, control
characters in what the script printed (escape sequences, carriage returns: it may print what a
server sent) are shown as \u{FFFD}, not obeyed; to a pipe or file the output is byte-exact. A failure prints one line,
`error: <message>` (the TypeScript-mapped stack too with -v). --json prints the whole result as
one JSON object instead: {stdout, stderr, value, error: {kind, message, stack}, tool_calls,
duration_ms, output_truncated_bytes}.

--check (or mcp.code_execution.typecheck: true) type-checks the script with tsc against the
generated tree first (strict; `tsc` on PATH or mcp.code_execution.tsc). Errors are printed at
the script's own lines, `script.ts:3:14: error TS2339: Property 'nme' does not exist on type
...`, and the script does not run (exit 1; --json: error.kind \"typecheck\"). Without a
compiler: a one-line warning, and the script runs unchecked.

Calls of tools that need approval (mcp.approvals: destructive tools) are asked on the
terminal; without one mcp.approvals.policy decides (deny by default). --yes approves them all.

Exit codes:
  0    the script ran to completion
  1    the script threw, did not type-check (--check), or a limit was hit (timeout, memory,
       output)
  2    usage error (no such file, bad flag value, bad configuration)
  130  interrupted (Ctrl-C); 143 on SIGTERM, 129 on SIGHUP. Servers are stopped and the
       bridge socket removed in every case";

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The TypeScript file to run, or `-` to read it from stdin.
    pub file: String,
    /// Wall-clock limit (humantime: 30s, 2m; a bare number means seconds).
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Heap limit (e.g. 256MB; a bare number means MB).
    #[arg(long, value_name = "SIZE")]
    pub memory_limit: Option<String>,
    /// Output cap for stdout+stderr (e.g. 100KB; a bare number means bytes).
    #[arg(long, value_name = "SIZE")]
    pub max_output: Option<String>,
    /// Print the whole result as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Type-check the script with tsc against the generated tree first; do not run it when it
    /// has type errors (also mcp.code_execution.typecheck).
    #[arg(long)]
    pub check: bool,
    /// Approve the calls that need approval (`mcp.approvals`: destructive tools) without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// Below this the bootstrap alone does not fit.
const MIN_MEMORY_MB: u64 = crate::runtime::MIN_HEAP_MB;

pub async fn run(ctx: Context, args: &ExecArgs) -> anyhow::Result<u8> {
    let mut options = Options::from_config(&ctx.config)?;
    options.limits = limits_from(args, options.limits)?;
    options.typecheck |= args.check;
    let limits = options.limits.clone();
    let session = super::session::Session::open(&ctx.config)?;
    if args.yes {
        super::approve::approve_all(session.manager());
    }
    // Bootstrapping the isolate (~25 ms) overlaps with everything below.
    let mut code = CodeMode::new(session.manager().clone(), options);
    code.set_recorder(session.recorder().clone());
    if let Some(why) = code.typecheck_notice() {
        eprintln!("warning: {why}");
    }

    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let (script, source, entry) = read_script(&args.file, &cwd, code.workspace())?;
    let servers = CodeMode::servers_for_script(&ctx.config, &source, &entry, code.workspace());
    tracing::info!("servers this script refers to: {servers:?}");
    let outcome = tokio::select! {
        r = prepare_and_run(&mut code, &servers, script, !ctx.config.mcp.servers.is_empty()) => Ok(r),
        signal = ctx.signals.received() => Err(signal),
    };
    code.stop().await;
    session.close().await;
    match outcome {
        Ok(outcome) => print_outcome(&outcome?, args.json, ctx.verbose > 0, &limits),
        Err(signal) => Ok(super::signal::exit_after(signal)),
    }
}

/// Starts the servers the script needs (refreshing their part of the tree), the bridge when any
/// server is configured (a script may name a server only at run time), and runs the script.
/// A server that fails to start is left for the script's first call to report.
async fn prepare_and_run(
    code: &mut CodeMode,
    servers: &[String],
    script: Script,
    bridge: bool,
) -> anyhow::Result<ExecOutcome> {
    match code.prepare(servers, true).await {
        Ok(prepared) => {
            for (name, e) in &prepared.failed {
                tracing::info!("not regenerating `{name}`: {e}");
            }
        }
        // The script may still run against the tree as it is; say why it could be stale.
        Err(e) => eprintln!("warning: {}", super::output::error_chain(&e)),
    }
    if bridge {
        code.start_bridge().await?;
    }
    Ok(code.run(script).await)
}

/// The configured limits with the command-line flags applied.
fn limits_from(args: &ExecArgs, mut limits: Limits) -> anyhow::Result<Limits> {
    if let Some(t) = &args.timeout {
        limits.timeout = parse_timeout(t).map_err(|e| usage(format!("--timeout: {e}")))?;
    }
    if let Some(m) = &args.memory_limit {
        let mb = parse_memory_mb(m).map_err(|e| usage(format!("--memory-limit: {e}")))?;
        if mb < MIN_MEMORY_MB {
            return Err(usage(format!(
                "--memory-limit: {mb} MB is too small; the runtime needs at least {MIN_MEMORY_MB} MB"
            )));
        }
        limits.memory_limit_mb = mb;
    }
    if let Some(o) = &args.max_output {
        let bytes = parse_bytes(o).map_err(|e| usage(format!("--max-output: {e}")))?;
        if bytes == 0 {
            return Err(usage("--max-output: must be at least 1 (0 would drop everything the script prints)"));
        }
        limits.max_output_bytes =
            usize::try_from(bytes).map_err(|_| usage(format!("--max-output: {o} is too large")))?;
    }
    Ok(limits)
}

/// Largest script `agent exec` reads (from a file or stdin).
pub const MAX_SCRIPT_BYTES: u64 = 16 << 20;

/// The script to run, its source (for scanning), and the path it runs as.
fn read_script(file: &str, cwd: &Path, workspace: &Path) -> anyhow::Result<(Script, String, PathBuf)> {
    let too_large = |what: &str| usage(format!("{what} is larger than {}", human_bytes(MAX_SCRIPT_BYTES)));
    if file == "-" {
        let bytes = read_capped(std::io::stdin().lock(), MAX_SCRIPT_BYTES).map_err(|e| match e {
            CapError::TooLarge => too_large("the script on stdin"),
            CapError::Io(e) => usage(format!("cannot read the script from stdin: {e}")),
        })?;
        let source = String::from_utf8(bytes).map_err(|_| usage("the script on stdin is not valid UTF-8"))?;
        return Ok((Script::Inline(source.clone()), source, workspace.join("main.ts")));
    }
    let path = cwd.join(file);
    if !path.exists() {
        return Err(usage(format!("no such file: {file}")));
    }
    if !path.is_file() {
        return Err(usage(format!("not a file: {file}")));
    }
    let source = crate::util::read::read_text_file(&path, MAX_SCRIPT_BYTES).map_err(|e| match e {
        crate::util::read::FileError::TooLarge(_) => too_large(file),
        e => usage(e.message(file)),
    })?;
    Ok((Script::File(path.clone()), source, path))
}

fn print_outcome(outcome: &ExecOutcome, json: bool, verbose: bool, limits: &Limits) -> anyhow::Result<u8> {
    let truncated = outcome.output_truncated_bytes > 0;
    let failed = outcome.error.is_some() || truncated;
    if json {
        let mut text = serde_json::to_string_pretty(outcome).context("cannot serialise the result")?;
        text.push('\n');
        write_stdout(&text)?;
        return Ok(if failed { EXIT_FAILURE } else { EXIT_OK });
    }
    write_stdout(&outcome.stdout)?;
    if !outcome.stderr.is_empty() {
        write_stderr(&outcome.stderr);
    }
    if let Some(value) = &outcome.value {
        let mut text = serde_json::to_string_pretty(value).context("cannot serialise the default export")?;
        text.push('\n');
        write_stdout(&text)?;
    }
    if let Some(error) = &outcome.error {
        if error.kind == FailureKind::Typecheck
            && let Some(errors) = &error.stack
        {
            // The diagnostics are the point: always shown, before the summary line.
            eprintln!("{}", for_stderr(errors));
            eprintln!("error: {}", for_stderr(&error.message));
            return Ok(EXIT_FAILURE);
        }
        // What a script throws may quote a server.
        eprintln!("error: {}", for_stderr(&error.message));
        if verbose && let Some(stack) = &error.stack {
            eprintln!("{}", for_stderr(stack));
        }
    } else if truncated {
        eprintln!(
            "error: output limit of {} exceeded ({} omitted)",
            human_bytes(limits.max_output_bytes as u64),
            human_bytes(outcome.output_truncated_bytes)
        );
    }
    Ok(if failed { EXIT_FAILURE } else { EXIT_OK })
}
