//! `agent exec FILE.ts | -`: runs one script in the code-mode runtime, no LLM involved.
//!
//! Order of work, arranged so a script that calls no server pays for nothing but the isolate:
//! the runtime starts bootstrapping first (on its own thread), the script is scanned for the
//! servers it refers to, only those are started (and the tree regenerated for them when
//! `regenerate_on_startup` says so and their tools changed), the bridge comes up, the script runs.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;

use super::output::{human_bytes, parse_bytes};
use super::{Context, EXIT_FAILURE, EXIT_OK, usage};
use crate::bridge::BridgeServer;
use crate::codegen::{self, GenerateOptions};
use crate::mcp::{McpManager, ToolInfo};
use crate::runtime::{ExecOutcome, ExecRequest, Executor, Limits, Script, scan};

pub const AFTER_HELP: &str = "\
Examples:
  agent exec script.ts
  echo 'console.log(1 + 1)' | agent exec -
  agent exec --timeout 5s --memory-limit 64MB --json script.ts

`-` reads the script from stdin and runs it as if it were <workspace>/main.ts, so
`./servers/<server>/index.ts` and `./client.ts` resolve. A FILE may live anywhere, but what it
imports must resolve inside the workspace (mcp.code_execution.workspace_dir, default .kodelet/mcp).
Only the servers the script refers to are started.

Output: the script's console.log/info/debug on stdout, console.warn/error on stderr, then the
default export's value (a function is called first) as JSON on stdout. A failure prints one line,
`error: <message>` (the TypeScript-mapped stack too with -v). --json prints the whole result as
one JSON object instead: {stdout, stderr, value, error: {kind, message, stack}, tool_calls,
duration_ms, output_truncated_bytes}.

Exit codes:
  0    the script ran to completion
  1    the script threw, or a limit was hit (timeout, memory, output)
  2    usage error (no such file, bad flag value, bad configuration)
  130  interrupted (Ctrl-C)";

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
}

/// Exit code after Ctrl-C.
const EXIT_INTERRUPTED: u8 = 130;

/// Below this the bootstrap alone does not fit.
const MIN_MEMORY_MB: u64 = crate::runtime::MIN_HEAP_MB;

pub async fn run(ctx: Context, args: &ExecArgs) -> anyhow::Result<u8> {
    let exec_config = &ctx.config.mcp.code_execution;
    let limits = limits_from(args, Limits::from_config(exec_config))?;
    // Bootstrapping the isolate (~25 ms) overlaps with everything below.
    let executor = Executor::with_limits(&limits);

    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let workspace = cwd.join(&exec_config.workspace_dir);
    let (script, source, entry) = read_script(&args.file, &cwd, &workspace)?;
    let servers = needed_servers(&ctx, &source, &entry, &workspace);
    tracing::info!("servers this script refers to: {servers:?}");

    let manager = Arc::new(McpManager::new(&ctx.config));
    let prepared = tokio::select! {
        r = prepare_servers(&ctx, &manager, &servers, &workspace) => Some(r),
        _ = tokio::signal::ctrl_c() => None,
    };
    let outcome = match prepared {
        Some(Ok(())) => run_script(&manager, &executor, &workspace, script, &limits, &ctx).await,
        Some(Err(e)) => Err(e),
        None => Ok(None),
    };
    manager.shutdown().await;
    let Some(outcome) = outcome? else {
        eprintln!("interrupted");
        return Ok(EXIT_INTERRUPTED);
    };
    print_outcome(&outcome, args.json, ctx.verbose > 0, &limits)
}

/// Starts the bridge and runs the script; `None` when interrupted.
async fn run_script(
    manager: &Arc<McpManager>,
    executor: &Executor,
    workspace: &Path,
    script: Script,
    limits: &Limits,
    ctx: &Context,
) -> anyhow::Result<Option<ExecOutcome>> {
    // The bridge is cheap (a socket) and lets a script reach a server named at run time.
    let bridge = if ctx.config.mcp.servers.is_empty() {
        None
    } else {
        Some(BridgeServer::start(manager.clone()).await.context("cannot start the MCP bridge")?)
    };
    let req = ExecRequest {
        workspace: workspace.to_path_buf(),
        script,
        limits: limits.clone(),
        bridge: bridge.as_ref().map(|b| b.endpoint().clone()),
    };
    let outcome = tokio::select! {
        o = executor.execute(req) => Some(o),
        _ = tokio::signal::ctrl_c() => None,
    };
    if let Some(bridge) = bridge {
        bridge.stop().await;
    }
    Ok(outcome)
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
        limits.max_output_bytes =
            usize::try_from(bytes).map_err(|_| usage(format!("--max-output: {o} is too large")))?;
    }
    Ok(limits)
}

/// `30s`, `2m`, `1h 30m`; a bare number is seconds (fractions allowed).
pub fn parse_timeout(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let d = match t.parse::<f64>() {
        Ok(secs) if (0.0..1e9).contains(&secs) => Duration::from_secs_f64(secs),
        Ok(_) => return Err(format!("invalid duration {s:?}")),
        Err(_) => {
            humantime::parse_duration(t).map_err(|e| format!("invalid duration {s:?} ({e}); use e.g. 30s, 2m"))?
        }
    };
    if d.is_zero() {
        return Err("the timeout must be greater than zero".into());
    }
    Ok(d)
}

/// `256MB`, `1GB`, `512 MiB`; a bare number is MB.
pub fn parse_memory_mb(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if let Ok(mb) = t.parse::<u64>() {
        return Ok(mb);
    }
    let bytes = parse_bytes(t)?;
    Ok(bytes.div_ceil(1024 * 1024))
}

/// The script to run, its source (for scanning), and the path it runs as.
fn read_script(file: &str, cwd: &Path, workspace: &Path) -> anyhow::Result<(Script, String, PathBuf)> {
    if file == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| usage(format!("cannot read the script from stdin: {e}")))?;
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
    let source = std::fs::read(&path).map_err(|e| usage(format!("cannot read {file}: {e}")))?;
    let source = String::from_utf8(source).map_err(|_| usage(format!("{file} is not valid UTF-8")))?;
    Ok((Script::File(path.clone()), source, path))
}

/// The configured servers the script refers to, by directory under `servers/` or by name.
fn needed_servers(ctx: &Context, source: &str, entry: &Path, workspace: &Path) -> Vec<String> {
    let refs = scan::scan(source, entry, workspace);
    let configured: Vec<&str> = ctx.config.mcp.servers.keys().map(String::as_str).collect();
    // The directory each server gets in the tree (codegen's naming, collisions included).
    let dirs = crate::codegen::server_names(configured.iter().copied());
    configured
        .into_iter()
        .filter(|name| {
            refs.called_servers.contains(*name) || dirs.get(*name).is_some_and(|n| refs.server_dirs.contains(&n.dir))
        })
        .map(str::to_string)
        .collect()
}

/// Starts the servers the script needs and, when `regenerate_on_startup` is set, regenerates
/// their part of the tree if their tools differ from what it was generated from (or there is no
/// tree yet). Without regeneration the servers start in the background, overlapping the
/// script's own start. A server that fails to start is left for the script's first call to
/// report.
async fn prepare_servers(
    ctx: &Context,
    manager: &Arc<McpManager>,
    servers: &[String],
    workspace: &Path,
) -> anyhow::Result<()> {
    if servers.is_empty() {
        return Ok(());
    }
    if !ctx.config.mcp.code_execution.regenerate_on_startup {
        let warm = manager.clone();
        let names = servers.to_vec();
        tokio::spawn(async move {
            let _ = warm.tools_of(&names).await;
        });
        return Ok(());
    }
    let mut fresh: Vec<ToolInfo> = Vec::new();
    let mut started: Vec<String> = Vec::new();
    for (name, result) in manager.tools_of(servers).await {
        match result {
            Ok(tools) => {
                fresh.extend(tools.iter().cloned());
                started.push(name);
            }
            Err(e) => tracing::info!("not regenerating `{name}`: {e}"),
        }
    }
    if started.is_empty() {
        return Ok(());
    }
    let by_key = |a: &ToolInfo, b: &ToolInfo| (&a.server, &a.name).cmp(&(&b.server, &b.name));
    fresh.sort_by(by_key);
    let current = codegen::generated_tools(workspace).map(|tools| {
        let mut ours: Vec<ToolInfo> = tools.into_iter().filter(|t| started.contains(&t.server)).collect();
        ours.sort_by(by_key);
        ours
    });
    if current.as_ref() == Some(&fresh) {
        tracing::info!("the tree in {} is up to date for {started:?}", workspace.display());
        return Ok(());
    }
    let opts = GenerateOptions { output_dir: workspace.to_path_buf(), clean: false, only_servers: Some(started) };
    match codegen::generate(&fresh, &opts) {
        Ok(report) => tracing::info!(
            "regenerated {} tools in {} ({} files written)",
            report.tools,
            workspace.display(),
            report.files_written
        ),
        // The script may still run against the tree as it is; say why it could be stale.
        Err(e) => eprintln!("warning: cannot regenerate the TypeScript API in {}: {e:#}", workspace.display()),
    }
    Ok(())
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
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(outcome.stderr.as_bytes());
        let _ = err.flush();
    }
    if let Some(value) = &outcome.value {
        let mut text = serde_json::to_string_pretty(value).context("cannot serialise the default export")?;
        text.push('\n');
        write_stdout(&text)?;
    }
    if let Some(error) = &outcome.error {
        eprintln!("error: {}", error.message);
        if verbose && let Some(stack) = &error.stack {
            eprintln!("{stack}");
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

fn write_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e).context("cannot write to stdout"),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_timeout("0.5").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_timeout("1m 30s").unwrap(), Duration::from_secs(90));
        assert!(parse_timeout("0").is_err());
        assert!(parse_timeout("soon").is_err());
        assert!(parse_timeout("-1").is_err());
    }

    #[test]
    fn memory_limits() {
        assert_eq!(parse_memory_mb("64").unwrap(), 64);
        assert_eq!(parse_memory_mb("64MB").unwrap(), 64);
        assert_eq!(parse_memory_mb("1GB").unwrap(), 1024);
        assert!(parse_memory_mb("lots").is_err());
    }
}
