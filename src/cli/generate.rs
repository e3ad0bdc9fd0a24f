//! `agent mcp generate`: writes the TypeScript API tree for the configured MCP tools (or for a
//! saved tool list with `--from-tools`). Collecting the tools and printing the summary live here;
//! the generation itself is `codegen::generate`.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;

use super::{Context, EXIT_FAILURE, EXIT_OK, usage};
use crate::codegen::{self, GenerateOptions, GenerateReport};
use crate::mcp::ToolInfo;
use crate::util::suggest::{did_you_mean, suggest};

pub const AFTER_HELP: &str = "\
Writes, under the output directory (default: the workspace, mcp.code_execution.workspace_dir;
the project's .kodelet/mcp, or a per-user one: at -v agent names it; docs/state.md):
  client.ts                      callMCPTool(server, tool, args), MCPToolError, MCPBridgeError
  servers/<server>/<tool>.ts     one async function per tool, with <Tool>Input / <Tool>Output types
  servers/<server>/index.ts      the server's tools, one per line, and their re-exports
  index.ts  example.ts  README.md  tsconfig.json  globals.d.ts  .agent-manifest.json

Generation is incremental: unchanged files are not rewritten, files of removed tools and servers
are deleted, and files that do not start with the generated-by-agent header are never touched.
A tool whose schema cannot be converted is generated untyped and reported as degraded.

--from-tools FILE reads a saved tool list instead of starting servers: the `agent mcp list --json`
array, a plain array of MCP Tool objects, or an object with a `tools` array (a `tools/list` dump;
its `server` may be a name or the server's info object {name, version}). Tools without a
`server` field belong to the file's top-level server, else to the only --server given, else to
the file name without extension. The file may be at most 64 MB. With --server, only those servers are regenerated; the others
keep what was generated for them before.

Examples:
  agent mcp generate
  agent mcp generate --server github --output ./api
  agent mcp list --json > tools.json && agent mcp generate --from-tools tools.json --json

Exit codes:
  0  the tree was generated (degraded tools are warnings)
  1  a server failed to start (its previous files are kept), or files could not be written
  2  usage or configuration error (unknown --server, unreadable or malformed --from-tools file)";

#[derive(Debug, Args)]
pub struct GenerateArgs {
    #[command(flatten)]
    pub filter: super::ServerFilter,
    /// Remove generated files (only files carrying the generated-by-agent header) before writing.
    #[arg(long)]
    pub clean: bool,
    /// Output directory (default: mcp.code_execution.workspace_dir).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Generate from a saved tools list instead of connecting to servers.
    #[arg(long, value_name = "FILE")]
    pub from_tools: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(ctx: Context, args: &GenerateArgs) -> anyhow::Result<u8> {
    let output_dir = args.output.clone().unwrap_or_else(|| ctx.config.mcp.code_execution.workspace_dir.clone());
    let selected = &args.filter.servers;

    // Resources and prompts come from the servers only (`--from-tools` keeps the manifest's).
    let (tools, failed, only_servers, primitives) = match &args.from_tools {
        Some(file) => {
            let (tools, only) = tools_from_file(file, selected)?;
            (tools, Vec::new(), only, None)
        }
        None => {
            let session = super::session::Session::open(&ctx.config)?;
            let manager = session.manager();
            let servers = super::select_servers(manager, &args.filter)?;
            if servers.is_empty() {
                eprintln!(
                    "no MCP servers configured: add some under `mcp.servers` (see config.sample.yaml) or in .mcp.json; \
                     writing a tree without servers"
                );
            }
            let collected = tokio::select! {
                r = async {
                    let (tools, failed) = super::list::collect_tools(manager, &servers).await;
                    let up: Vec<String> = servers.iter().filter(|s| !failed.contains(s)).cloned().collect();
                    (tools, failed, crate::codemode::primitives_of(manager, &up).await)
                } => Ok(r),
                signal = ctx.signals.received() => Err(signal),
            };
            session.close().await;
            let (tools, failed, primitives) = match collected {
                Ok(r) => r,
                Err(signal) => return Ok(super::signal::exit_after(signal)),
            };
            // A failed server is skipped: regenerate only the others so its files stay.
            let only = if selected.is_empty() && failed.is_empty() {
                None
            } else {
                Some(servers.iter().filter(|s| !failed.contains(s)).cloned().collect())
            };
            (tools, failed, only, Some(primitives))
        }
    };

    // Learned result types from the workspace's type registry, at their current quality.
    let learned = crate::learn::load_registry(&ctx.config)
        .tools
        .into_values()
        .map(|e| ((e.server.clone(), e.tool.clone()), e))
        .collect();
    let opts = GenerateOptions { output_dir, clean: args.clean, only_servers, learned };
    let report = tokio::task::spawn_blocking(move || codegen::generate_with(&tools, &opts, primitives.as_ref()))
        .await
        .context("code generation stopped unexpectedly")??;

    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&report).context("cannot serialise the report")?;
        s.push('\n');
        s
    } else {
        summary(&report, &failed)
    };
    super::output::write_stdout(&text)?;
    if !args.json {
        // Both name the servers' tools.
        for d in &report.degraded {
            eprintln!("warning: generated untyped: {}", super::output::for_stderr(d));
        }
        for w in &report.warnings {
            eprintln!("warning: {}", super::output::for_stderr(w));
        }
    }
    if !failed.is_empty() {
        eprintln!(
            "error: {} server(s) failed ({}); their previously generated files were kept",
            failed.len(),
            failed.join(", ")
        );
        return Ok(EXIT_FAILURE);
    }
    Ok(EXIT_OK)
}

/// Loads `--from-tools`, applying `--server` as a filter (and as the server name of tools
/// that have none when exactly one is given).
fn tools_from_file(
    file: &std::path::Path,
    selected: &[String],
) -> anyhow::Result<(Vec<ToolInfo>, Option<Vec<String>>)> {
    let default_server = match selected {
        [one] => Some(one.as_str()),
        _ => None,
    };
    let tools = codegen::load_tools_file(file, default_server).map_err(|e| usage(super::output::error_chain(&e)))?;
    if selected.is_empty() {
        return Ok((tools, None));
    }
    let present: Vec<&str> = {
        let mut v: Vec<&str> = tools.iter().map(|t| t.server.as_str()).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    for s in selected {
        if !present.contains(&s.as_str()) {
            let hint = did_you_mean(&suggest(s, present.iter().copied()));
            let hint = if hint.is_empty() { format!("; servers in the file: {}", present.join(", ")) } else { hint };
            return Err(usage(format!("no tools of server `{s}` in {}{hint}", file.display())));
        }
    }
    Ok((tools, Some(selected.to_vec())))
}

fn summary(r: &GenerateReport, failed: &[String]) -> String {
    let mut s = String::new();
    let names = r.per_server.iter().map(|p| p.name.as_str()).chain(failed.iter().map(String::as_str));
    let width = names.map(|n| display_name(n).chars().count()).max().unwrap_or(0).min(40);
    for p in &r.per_server {
        let name = display_name(&p.name);
        let tools = format!("{:>4} tool{}", p.tools, if p.tools == 1 { "" } else { "s" });
        let note = if failed.contains(&p.name) {
            "  (failed to start: files from the last generation kept)".to_string()
        } else if p.directory != p.name {
            format!("  (servers/{}/)", p.directory)
        } else {
            String::new()
        };
        s.push_str(&format!("  {name:width$}  {tools}{note}\n"));
    }
    for f in failed.iter().filter(|f| !r.per_server.iter().any(|p| &p.name == *f)) {
        s.push_str(&format!("  {:width$}  failed to start\n", display_name(f)));
    }
    let plural = |n: usize, one: &str, many: &str| if n == 1 { format!("{n} {one}") } else { format!("{n} {many}") };
    s.push_str(&format!(
        "Generated {} on {} ({} with an output schema, {} degraded) in {}\n",
        plural(r.tools, "tool", "tools"),
        plural(r.servers, "server", "servers"),
        r.with_output_schema,
        r.degraded.len(),
        shown_dir(&r.output_dir).display()
    ));
    s.push_str(&format!(
        "Files: {} written, {} unchanged, {} deleted\n",
        r.files_written, r.files_unchanged, r.files_deleted
    ));
    s
}

/// A server name for the terminal: as is, or quoted and escaped when it holds control characters.
fn display_name(name: &str) -> String {
    if name.chars().any(|c| c.is_control()) { crate::codegen::ts::string_literal(name) } else { name.to_string() }
}

/// `dir` relative to the current directory when it is below it (the workspace is an absolute
/// path, found from the project root): `.kodelet/mcp` reads better than `/home/me/p/.kodelet/mcp`.
fn shown_dir(dir: &std::path::Path) -> std::path::PathBuf {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| {
            dir.strip_prefix(cwd).ok().filter(|rel| !rel.as_os_str().is_empty()).map(|rel| rel.to_path_buf())
        })
        .unwrap_or_else(|| dir.to_path_buf())
}
