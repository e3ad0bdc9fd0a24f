//! `agent mcp search`: the tools of the configured servers (or of a saved tool list) ranked for
//! a query by the catalog index (`crate::search`). Building the index documents from
//! [`ToolInfo`]s ([`doc_for`]) and the result records ([`SearchResult`]) live here, so later
//! callers (bridge, progressive mode) share them.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use serde::Serialize;
use serde_json::Value;

use super::{Context, EXIT_FAILURE, EXIT_OK, ServerFilter, usage};
use crate::codegen;
use crate::mcp::{McpManager, ToolInfo};
use crate::search::{Doc, Index};
use crate::util::suggest::{did_you_mean, suggest};

pub const AFTER_HELP: &str = "\
Ranks the tools of every enabled server (or of --server, or of a --from-tools file) for the
query: BM25F over tool name, title, server, parameters and description, with light stemming
(`logs` finds `get_job_logs`), abbreviations (`PR`, `repo`) and name matches ranked higher.
Each result shows its score (comparable within one query only), a one-line signature and the
first sentence of its description.

JSON output (--json) is an array, best first:
  {\"server\": \"...\", \"tool\": \"<MCP tool name>\", \"score\": 1.234,
   \"signature\": \"server.tool(a: string, b?: number)\", \"description\": \"<first sentence>\"}

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
}

/// One ranked tool, as `--json` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct SearchResult {
    pub server: String,
    pub tool: String,
    pub score: f64,
    pub signature: String,
    pub description: String,
}

/// The index document of a tool: parameter descriptions carry their enum values (a `method`
/// parameter's values often name what a tool can do), annotations become words.
pub fn doc_for(t: &ToolInfo) -> Doc {
    let params = t
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(name, p)| {
                    let mut text = p.get("description").and_then(Value::as_str).unwrap_or("").to_string();
                    let values = p.get("enum").or_else(|| p.get("items").and_then(|i| i.get("enum")));
                    for v in values.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
                        text.push(' ');
                        text.push_str(v);
                    }
                    (name.clone(), text)
                })
                .collect()
        })
        .unwrap_or_default();
    let annotations = t.hint_labels().into_iter().map(String::from).collect();
    Doc {
        server: t.server.clone(),
        tool: t.name.clone(),
        title: t.title.clone().unwrap_or_default(),
        description: t.description.clone().unwrap_or_default(),
        params,
        annotations,
    }
}

/// `server.tool(a: string, b?: number)`.
pub fn signature(t: &ToolInfo) -> String {
    let params = super::list::param_summary(&t.input_schema);
    let params = if params == "(none)" { "" } else { params.as_str() };
    format!("{}({params})", t.qualified_name())
}

/// The first sentence of a description (its first non-empty line, up to the first `. `), at
/// most 200 characters.
pub fn first_sentence(description: Option<&str>) -> String {
    let line = description.and_then(|d| d.lines().map(str::trim).find(|l| !l.is_empty())).unwrap_or("");
    let sentence = match line.find(". ") {
        Some(i) => &line[..=i],
        None => line,
    };
    if sentence.chars().count() > 200 {
        let cut: String = sentence.chars().take(199).collect();
        format!("{cut}…")
    } else {
        sentence.to_string()
    }
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

/// Ranks `tools` for `query`: the best `limit`, only of `servers` unless it is empty.
pub fn search_tools(tools: &[ToolInfo], query: &str, limit: usize, servers: &[String]) -> Vec<SearchResult> {
    let index = Index::build(tools.iter().map(doc_for).collect());
    index
        .search(query, limit, servers)
        .into_iter()
        .map(|h| {
            let t = &tools[h.doc];
            SearchResult {
                server: t.server.clone(),
                tool: t.name.clone(),
                score: (h.score as f64 * 1000.0).round() / 1000.0,
                signature: signature(t),
                description: first_sentence(t.description.as_deref()),
            }
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
    let (tools, failed) = match &args.from_tools {
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
            (tools, Vec::new())
        }
        None => {
            let manager = McpManager::new(&ctx.config);
            let servers = super::select_servers(&manager, &args.filter)?;
            if servers.is_empty() {
                eprintln!(
                    "no MCP servers configured: add some under `mcp.servers` (see config.sample.yaml) or in .mcp.json"
                );
            }
            let collected = tokio::select! {
                r = super::list::collect_tools(&manager, &servers) => Ok(r),
                signal = ctx.signals.received() => Err(signal),
            };
            manager.shutdown().await;
            match collected {
                Ok((mut tools, failed)) => {
                    if selected.is_empty() {
                        tools.extend(skill_tools(&ctx.config));
                    }
                    (tools, failed)
                }
                Err(signal) => return Ok(super::signal::exit_after(signal)),
            }
        }
    };
    let results = search_tools(&tools, &args.query, args.limit as usize, selected);
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&results).context("cannot serialise the results")?;
        s.push('\n');
        s
    } else {
        human(&results, tools.len())
    };
    super::output::write_stdout(&text)?;
    Ok(if failed.is_empty() { EXIT_OK } else { EXIT_FAILURE })
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn first_sentence_and_signature() {
        assert_eq!(first_sentence(Some("\n  Get a file. Then more.\nSecond line.")), "Get a file.");
        assert_eq!(first_sentence(Some("v1.2 is out")), "v1.2 is out");
        assert_eq!(first_sentence(None), "");
        let t = ToolInfo {
            server: "github".into(),
            name: "get_job_logs".into(),
            title: None,
            description: None,
            input_schema: json!({
                "type": "object",
                "properties": {"owner": {"type": "string"}, "job_id": {"type": "number"}},
                "required": ["owner"]
            }),
            output_schema: None,
            annotations: Some(json!({"readOnlyHint": true})),
        };
        assert_eq!(signature(&t), "github.get_job_logs(owner: string, job_id?: number)");
        let d = doc_for(&t);
        assert_eq!(d.annotations, ["read-only"]);
        assert_eq!(d.params[0].0, "owner");
        let none = ToolInfo { input_schema: json!({"type": "object"}), ..t };
        assert_eq!(signature(&none), "github.get_job_logs()");
    }
}
