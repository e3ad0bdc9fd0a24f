//! `agent mcp search`: the tools of the configured servers (or of a saved tool list) ranked for
//! a query by the catalog index (`crate::search`). The index documents and result records come
//! from `mcp::catalog`, shared with the bridge's `GET /search` and progressive mode.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;

use super::{Context, EXIT_FAILURE, EXIT_OK, ServerFilter, usage};
use crate::codegen;
use crate::mcp::ToolInfo;
use crate::mcp::catalog::{Catalogs, SearchResult};
use crate::mcp::usage::Usage;
use crate::search::Index;
use crate::util::suggest::{did_you_mean, suggest};

pub const AFTER_HELP: &str = "\
Ranks the tools of every enabled server (or of --server, or of a --from-tools file) for the
query: BM25F over tool name, title, server, parameters and description, with light stemming
(`logs` finds `get_job_logs`), abbreviations (`PR`, `repo`) and name matches ranked higher.
Each result shows its score (comparable within one query only), a one-line signature and the
first sentence of its description. Tools called successfully in earlier runs rank a little
higher (search.usage, counted in <workspace>/usage.json); search.embeddings adds a semantic
ranking from an OpenAI-compatible /v1/embeddings endpoint, fused with the word ranking.

JSON output (--json) is an array, best first:
  {\"server\": \"...\", \"tool\": \"<MCP tool name>\", \"score\": 1.234,
   \"signature\": \"server.tool(a: string, b?: number)\", \"description\": \"<first sentence>\"}

Servers are not started when an earlier command (`agent mcp list`, `call`, `search`, `run`,
...) saved their tool lists (<workspace>/.tools_cache.json): the search answers from those. A
list is stale once its server's configuration changed (command, args, URL, env or header names,
tool_white_list) or after 24 hours; a stale list still answers, with a note on stderr.
--refresh starts the servers and saves their current lists; a server with no saved list is
started anyway.

--from-tools FILE searches a saved tool list without starting servers (as `agent mcp generate
--from-tools` reads it: the `agent mcp list --json` array, a plain array of MCP Tool objects, or
an object with a `tools` array).

Examples:
  agent mcp search \"list pull requests\"
  agent mcp search \"logs of a failed job\" --server github --limit 3
  agent mcp list --json > tools.json && agent mcp search \"create issue\" --from-tools tools.json --json

Exit codes:
  0  the search ran (also when nothing matched)
  1  a server failed to start (the others were searched)
  2  usage or configuration error (empty query, bad --limit, unknown --server, unreadable file)";

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What you are looking for, in your own words.
    #[arg(value_name = "QUERY")]
    pub query: String,
    #[command(flatten)]
    pub filter: ServerFilter,
    /// How many results to show.
    #[arg(long, short = 'n', default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub limit: u32,
    /// Print a JSON array of results.
    #[arg(long)]
    pub json: bool,
    /// Search a saved tool list instead of connecting to servers.
    #[arg(long, value_name = "FILE")]
    pub from_tools: Option<PathBuf>,
    /// Start the servers for their current tool lists instead of answering from the lists saved
    /// by earlier commands.
    #[arg(long, conflicts_with = "from_tools")]
    pub refresh: bool,
}

/// The workspace's skills as tools of the pseudo-server `skills` (name, description, exports
/// as words), so a search finds them next to MCP tools.
fn skill_tools(config: &crate::config::Config) -> Vec<ToolInfo> {
    let Ok(options) = crate::codemode::Options::from_config(config) else { return Vec::new() };
    crate::skills::list(&options.workspace)
        .into_iter()
        .map(|s| ToolInfo {
            server: "skills".into(),
            name: s.name,
            title: None,
            description: Some(format!(
                "{} (import from ./{}; exports {})",
                s.description,
                s.file,
                s.exports.join(", ")
            )),
            input_schema: serde_json::json!({"type": "object"}),
            output_schema: None,
            annotations: None,
        })
        .collect()
}

pub async fn run(ctx: Context, args: &SearchArgs) -> anyhow::Result<u8> {
    if args.query.trim().is_empty() {
        return Err(usage("the query is empty: say what the tool should do, e.g. agent mcp search \"list issues\""));
    }
    if !Index::has_terms(&args.query) {
        return Err(usage(format!(
            "the query {:?} has no words to search for (only punctuation or words like `the`)",
            args.query
        )));
    }
    let selected = &args.filter.servers;
    let limit = args.limit as usize;
    let (results, searched, failed) = match &args.from_tools {
        Some(file) => {
            let default_server = match selected.as_slice() {
                [one] => Some(one.as_str()),
                _ => None,
            };
            let tools =
                codegen::load_tools_file(file, default_server).map_err(|e| usage(super::output::error_chain(&e)))?;
            let mut present: Vec<&str> = tools.iter().map(|t| t.server.as_str()).collect();
            present.sort_unstable();
            present.dedup();
            for s in selected {
                if !present.contains(&s.as_str()) {
                    return Err(usage(format!(
                        "no tools of server `{s}` in {}{}",
                        file.display(),
                        did_you_mean(&suggest(s, present.iter().copied()))
                    )));
                }
            }
            // The same ranking as over live servers: usage prior, semantic ranking when set up.
            let usage_file = ctx.config.mcp.code_execution.workspace_dir.join(crate::mcp::usage::FILE);
            let counts = Arc::new(Usage::new(ctx.config.search.usage.then_some(usage_file)));
            let catalogs = Catalogs::new(&ctx.config, counts);
            let ranked = async {
                let catalog = catalogs.of_lists(vec![Arc::new(tools)]).await;
                (catalogs.search(&catalog, &args.query, limit, selected).await, catalog.tools().len())
            };
            let (results, searched) = tokio::select! {
                r = ranked => r,
                signal = ctx.signals.received() => return Ok(super::signal::exit_after(signal)),
            };
            (results, searched, Vec::new())
        }
        None => {
            let session = super::session::Session::open(&ctx.config)?;
            let manager = session.manager();
            let servers = super::select_servers(manager, &args.filter)?;
            if servers.is_empty() {
                eprintln!(
                    "no MCP servers configured: add some under `mcp.servers` (see config.sample.yaml) or in .mcp.json"
                );
            }
            if selected.is_empty() {
                manager.catalogs().add_extra(skill_tools(&ctx.config));
            }
            // Servers with a saved tool list answer from it; only the others start.
            let (cached, to_start) =
                if args.refresh { (Vec::new(), servers.clone()) } else { from_cache(&ctx.config, manager, &servers) };
            let ranked = async {
                // Started under a spinner, failures said once; the catalog then skips them.
                let (started, failed) = if to_start.is_empty() {
                    (Vec::new(), Vec::new())
                } else {
                    super::list::collect_tools(manager, &to_start).await
                };
                let mut lists = cached;
                lists.push(Arc::new(started));
                let catalog = manager.catalogs().of_lists(lists).await;
                let results = manager.catalogs().search(&catalog, &args.query, limit, selected).await;
                (results, catalog.tools().len(), failed)
            };
            let ranked = tokio::select! {
                r = ranked => Ok(r),
                signal = ctx.signals.received() => Err(signal),
            };
            session.close().await;
            match ranked {
                Ok(r) => r,
                Err(signal) => return Ok(super::signal::exit_after(signal)),
            }
        }
    };
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&results).context("cannot serialise the results")?;
        s.push('\n');
        s
    } else {
        human(&results, searched)
    };
    super::output::write_stdout(&text)?;
    Ok(if failed.is_empty() { EXIT_OK } else { EXIT_FAILURE })
}

/// Of `servers`, the tool lists saved by earlier commands (`mcp::saved`), and the servers that
/// have none (to be started). Stale lists are used too, with one note on stderr naming them.
fn from_cache(
    config: &crate::config::Config,
    manager: &crate::mcp::McpManager,
    servers: &[String],
) -> (Vec<Arc<Vec<ToolInfo>>>, Vec<String>) {
    use crate::mcp::saved::{self, Freshness};
    let mut saved = saved::load(manager.saved_file());
    let (mut lists, mut missing, mut stale) = (Vec::new(), Vec::new(), Vec::new());
    for name in servers {
        let (Some(entry), Some(cfg)) = (saved.remove(name), config.mcp.servers.get(name)) else {
            missing.push(name.clone());
            continue;
        };
        match entry.freshness(cfg) {
            Freshness::Fresh => {}
            Freshness::ConfigChanged => stale.push(format!("`{name}` (its configuration changed since)")),
            Freshness::Old(age) => stale.push(format!(
                "`{name}` (listed {} ago)",
                humantime::format_duration(Duration::from_secs(age.as_secs() / 3600 * 3600))
            )),
        }
        lists.push(Arc::new(entry.tools));
    }
    if !stale.is_empty() {
        eprintln!(
            "note: stale tool lists of {} answered this search; `--refresh` starts the servers for their current tools",
            stale.join(", ")
        );
    }
    (lists, missing)
}

/// Where a signature is cut in the human output.
const SIGNATURE_WIDTH: usize = 110;

fn human(results: &[SearchResult], searched: usize) -> String {
    if results.is_empty() {
        return format!("no tool matches (searched {searched} tools)\n");
    }
    let mut s = String::new();
    for r in results {
        // One line: long enum lists are cut here (--json keeps the whole signature).
        let sig = if r.signature.chars().count() > SIGNATURE_WIDTH {
            let cut: String = r.signature.chars().take(SIGNATURE_WIDTH - 2).collect();
            format!("{cut}…)")
        } else {
            r.signature.clone()
        };
        s.push_str(&format!("{:>7.3}  {sig}\n", r.score));
        if !r.description.is_empty() {
            s.push_str(&format!("         {}\n", r.description));
        }
    }
    s
}
