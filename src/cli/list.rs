//! `agent mcp list`: the tools of the configured servers, for people (`--detailed`) and
//! scripts (`--json`, the stable [`ToolInfo`] array that `agent mcp generate --from-tools` reads).

use anyhow::Context as _;
use clap::Args;

use super::{Context, EXIT_FAILURE, EXIT_OK, ServerFilter};
use crate::agent::tokens;
use crate::config::{Config, ExecutionMode};
use crate::mcp::tools::param_summary;
use crate::mcp::{McpManager, ToolInfo};

pub const AFTER_HELP: &str = "\
On a terminal, control characters in what servers sent (escape sequences, carriage returns in
names and descriptions) are shown as \u{FFFD}, not obeyed; to a pipe the output is byte-exact.

JSON output (--json) is an array sorted by server then tool name, one object per tool:
  {\"server\": \"...\", \"name\": \"...\", \"title\": \"...\"|null, \"description\": \"...\"|null,
   \"inputSchema\": {...}, \"outputSchema\": {...}|null, \"annotations\": {...}|null}
The same file feeds `agent mcp generate --from-tools FILE`.

A server that fails to start is reported on stderr with the reason and the last lines of its
stderr (full log: <workspace>/logs/<server>.stderr.log); the others are still listed, and the
exit code is 1.

Exit codes:
  0  every selected server listed its tools
  1  at least one server failed
  2  usage or configuration error (e.g. unknown --server)";

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub filter: ServerFilter,
    /// Add each tool's description and a one-line parameter summary.
    #[arg(long, short = 'd')]
    pub detailed: bool,
    /// Print a JSON array of tool definitions.
    #[arg(long)]
    pub json: bool,
    /// Estimate the context cost (tokens) of the tool definitions in direct, code and
    /// progressive mode, per server and in total (tiktoken o200k, offline); with --json as a JSON object.
    #[arg(long, conflicts_with = "detailed")]
    pub tokens: bool,
}

/// Starts the selected servers under a spinner and collects their tools; failures are printed
/// to stderr (`error: ...`) and named in the second list.
pub async fn collect_tools(manager: &McpManager, servers: &[String]) -> (Vec<ToolInfo>, Vec<String>) {
    let (tools, failed) = collect_tools_why(manager, servers).await;
    (tools, failed.into_iter().map(|(name, _)| name).collect())
}

/// [`collect_tools`] with, for each failed server, whether it failed for want of a sign-in.
async fn collect_tools_why(manager: &McpManager, servers: &[String]) -> (Vec<ToolInfo>, Vec<(String, bool)>) {
    let spinner = super::output::Spinner::start(match servers {
        [one] => format!("starting {one}"),
        many => format!("starting {} servers", many.len()),
    });
    let started = manager.start_servers(servers).await;
    spinner.finish();
    let mut failed = Vec::new();
    for (name, e) in started.failed {
        // Quotes the server's stderr.
        eprintln!("error: {}", super::output::for_stderr(&e.to_string()));
        failed.push((name, matches!(e, crate::mcp::McpError::NeedsSignIn { .. })));
    }
    (started.tools, failed)
}

pub async fn run(ctx: Context, args: &ListArgs) -> anyhow::Result<u8> {
    let session = super::session::Session::open(&ctx.config)?;
    let manager = session.manager();
    let servers = super::select_servers(manager, &args.filter)?;
    if servers.is_empty() {
        eprintln!("no MCP servers configured: add some under `mcp.servers` (see config.sample.yaml) or in .mcp.json");
        if args.json {
            println!("[]");
        }
        return Ok(EXIT_OK);
    }
    let collected = tokio::select! {
        r = collect_tools_why(manager, &servers) => Ok(r),
        signal = ctx.signals.received() => Err(signal),
    };
    session.close().await;
    let (tools, failed_why) = match collected {
        Ok(r) => r,
        Err(signal) => return Ok(super::signal::exit_after(signal)),
    };
    let failed: Vec<String> = failed_why.iter().map(|(name, _)| name.clone()).collect();
    let sign_in: Vec<String> = failed_why.iter().filter(|(_, s)| *s).map(|(name, _)| name.clone()).collect();

    let text = if args.tokens {
        let ok: Vec<String> = servers.iter().filter(|s| !failed.contains(s)).cloned().collect();
        token_report(&ctx.config, &ok, &tools, args.json)?
    } else if args.json {
        let mut s = serde_json::to_string_pretty(&tools).context("cannot serialise the tool list")?;
        s.push('\n');
        s
    } else {
        human(&servers, &failed, &sign_in, &tools, args.detailed)
    };
    super::output::write_stdout(&text)?;
    Ok(if failed.is_empty() {
        EXIT_OK
    } else if sign_in.len() == failed.len() {
        // Every failure wants a sign-in: the exit code says so.
        super::EXIT_SIGN_IN
    } else {
        EXIT_FAILURE
    })
}

fn human(servers: &[String], failed: &[String], sign_in: &[String], tools: &[ToolInfo], detailed: bool) -> String {
    let mut s = String::new();
    let mut shown_servers = 0;
    for server in servers {
        if sign_in.contains(server) {
            s.push_str(&format!("{server} (needs sign-in: agent mcp login {server})\n\n"));
            continue;
        }
        if failed.contains(server) {
            s.push_str(&format!("{server} (failed to start, see above)\n\n"));
            continue;
        }
        shown_servers += 1;
        let mine: Vec<&ToolInfo> = tools.iter().filter(|t| &t.server == server).collect();
        let plural = if mine.len() == 1 { "" } else { "s" };
        s.push_str(&format!("{server} ({} tool{plural})\n", mine.len()));
        let width = mine.iter().map(|t| t.name.chars().count()).max().unwrap_or(0).min(40);
        for t in &mine {
            let first =
                t.description.as_deref().and_then(|d| d.lines().map(str::trim).find(|l| !l.is_empty())).unwrap_or("");
            if detailed {
                s.push_str(&format!("  {}\n", t.name));
                if let Some(title) = &t.title {
                    s.push_str(&format!("    title: {title}\n"));
                }
                if let Some(d) = &t.description {
                    for line in d.trim().lines() {
                        s.push_str(&format!("    {}\n", line.trim_end()));
                    }
                }
                s.push_str(&format!("    params: {}\n", param_summary(&t.input_schema)));
                let hints = t.hint_labels();
                if !hints.is_empty() {
                    s.push_str(&format!("    hints: {}\n", hints.join(", ")));
                }
                if t.output_schema.is_some() {
                    s.push_str("    output: structured (outputSchema)\n");
                }
            } else {
                let desc: String = first.chars().take(100).collect();
                let ell = if first.chars().count() > 100 { "…" } else { "" };
                s.push_str(&format!("  {:width$}  {desc}{ell}\n", t.name));
            }
        }
        s.push('\n');
    }
    let failed_note = if failed.is_empty() { String::new() } else { format!(", {} failed", failed.len()) };
    s.push_str(&format!("{} tools on {shown_servers} server(s){failed_note}\n", tools.len()));
    s
}

/// `agent mcp list --tokens`: direct vs code vs progressive mode context cost of the listed tools.
pub fn token_report(config: &Config, servers: &[String], tools: &[ToolInfo], json: bool) -> anyhow::Result<String> {
    let entries = crate::codegen::server_entries(servers, tools);
    let limits = crate::codemode::tool::LimitsText::from_config(&config.mcp.code_execution);
    let est = tokens::estimate_with(
        tools,
        &entries,
        &limits,
        config.llm.provider,
        &config.mcp.pinned_tools,
        config.mcp.result_handlers.enabled,
    );
    let n_tools: usize = est.servers.iter().map(|e| e.tools).sum();
    // What `agent run` would do with the configured mode, and with `--mode auto`.
    let run_mode = config.mcp.execution_mode;
    let configured =
        (run_mode != ExecutionMode::Progressive).then(|| tokens::ModePlan::for_run(config, run_mode, servers, tools));
    let auto = tokens::ModePlan::for_run(config, ExecutionMode::Auto, servers, tools);
    if json {
        let mut doc = serde_json::to_value(&est).context("cannot serialise the estimate")?;
        if let Some(map) = doc.as_object_mut() {
            map.insert("modes".into(), serde_json::to_value(&configured).context("cannot serialise the modes")?);
            map.insert("auto".into(), serde_json::to_value(&auto).context("cannot serialise the modes")?);
        }
        let mut s = serde_json::to_string_pretty(&doc).context("cannot serialise the estimate")?;
        s.push('\n');
        return Ok(s);
    }
    let t = crate::agent::session::thousands;
    let width = est.servers.iter().map(|s| s.server.chars().count()).max().unwrap_or(0).max(8);
    let mut s = format!(
        "Context cost of the tool definitions per request ({} estimate, {} request format):\n\n",
        est.tokenizer, est.provider
    );
    s.push_str(&format!(
        "{:width$}  {:>6}  {:>10}  {:>10}  {:>11}  {}\n",
        "server", "tools", "direct", "code", "progressive", "run mode"
    ));
    for e in &est.servers {
        let mode = match &configured {
            Some(plan) => plan.servers.iter().find(|c| c.server == e.server).map(|c| c.mode.to_string()),
            None => Some(run_mode.to_string()),
        };
        s.push_str(&format!(
            "{:width$}  {:>6}  {:>10}  {:>10}  {:>11}  {}\n",
            e.server,
            e.tools,
            t(e.direct as u64),
            t(e.code as u64),
            t(e.progressive as u64),
            mode.unwrap_or_default()
        ));
    }
    s.push_str(&format!(
        "{:width$}  {:>6}  {:>10}  {:>10}  {:>11}\n",
        "(shared)",
        "",
        "",
        t(est.code_fixed as u64),
        t(est.progressive_fixed as u64)
    ));
    s.push_str(&format!(
        "{:width$}  {:>6}  {:>10}  {:>10}  {:>11}\n",
        "total",
        n_tools,
        t(est.direct_total as u64),
        t(est.code_total as u64),
        t(est.progressive_total as u64)
    ));
    s.push_str(&format!(
        "\ndirect: every tool definition is sent with every request.\n\
         code: `code_execution` + list_files/read_file/grep_files and one prompt line per server (shared row); \
         the model reads the TypeScript of the tools it needs on demand, and large results stay in the sandbox.\n\
         progressive: search_tools + call_tool and a short prompt (shared row), plus mcp.pinned_tools as direct tools; \
         the model searches for the tools it needs.\n\
         code mode sends {:.0}% {} tool-definition tokens per request, progressive mode {:.0}% {}.\n",
        est.saving_percent().abs(),
        if est.saving_percent() >= 0.0 { "fewer" } else { "more" },
        est.progressive_saving_percent().abs(),
        if est.progressive_saving_percent() >= 0.0 { "fewer" } else { "more" }
    ));
    s.push_str(&format!(
        "run mode: how `agent run` offers each server now (mcp.execution_mode {run_mode}, and each server's own `mode`).\n"
    ));
    if let Some(plan) = configured.as_ref().filter(|_| run_mode != ExecutionMode::Auto) {
        s.push_str("\nagent run would use:\n");
        for c in &plan.servers {
            s.push_str(&format!("  {}\n", plan.line(c)));
        }
    }
    s.push_str(&format!(
        "\nexecution_mode auto would pick (smallest servers first, direct within mcp.auto_threshold_tokens {}):\n",
        t(auto.threshold_tokens as u64)
    ));
    for c in &auto.servers {
        s.push_str(&format!("  {}\n", auto.line(c)));
    }
    Ok(s)
}
