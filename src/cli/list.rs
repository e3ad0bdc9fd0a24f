//! `agent mcp list`: the tools of the configured servers, for people (`--detailed`) and
//! scripts (`--json`, the stable [`ToolInfo`] array that `agent mcp generate --from-tools` reads).

use std::io::Write;

use anyhow::Context as _;
use clap::Args;
use serde_json::Value;

use super::{Context, EXIT_FAILURE, EXIT_OK, ServerFilter, usage};
use crate::mcp::{McpManager, ToolInfo};

pub const AFTER_HELP: &str = "\
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
    /// Estimate the context cost (tokens) of the tool definitions in direct vs code mode, per
    /// server and in total (tiktoken o200k, offline); with --json as a JSON object.
    #[arg(long, conflicts_with = "detailed")]
    pub tokens: bool,
}

/// The servers a command should start: the `--server` selection (checked) or every enabled one.
pub fn select_servers(manager: &McpManager, filter: &ServerFilter) -> anyhow::Result<Vec<String>> {
    if filter.servers.is_empty() {
        return Ok(manager.server_names());
    }
    let mut out = Vec::new();
    for s in &filter.servers {
        manager.check_server(s).map_err(|e| usage(e.to_string()))?;
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    Ok(out)
}

/// Starts the selected servers and collects their tools; failures are printed to stderr.
pub async fn collect_tools(manager: &McpManager, servers: &[String]) -> (Vec<ToolInfo>, Vec<String>) {
    let mut tools = Vec::new();
    let mut failed = Vec::new();
    let spinner = super::output::Spinner::start(match servers {
        [one] => format!("starting {one}"),
        many => format!("starting {} servers", many.len()),
    });
    let results = manager.tools_of(servers).await;
    spinner.finish();
    for (name, result) in results {
        match result {
            Ok(list) => tools.extend(list.iter().cloned()),
            Err(e) => {
                eprintln!("error: {e}");
                failed.push(name);
            }
        }
    }
    (tools, failed)
}

pub async fn run(ctx: Context, args: &ListArgs) -> anyhow::Result<u8> {
    let manager = McpManager::new(&ctx.config);
    let servers = select_servers(&manager, &args.filter)?;
    if servers.is_empty() {
        eprintln!("no MCP servers configured: add some under `mcp.servers` (see config.sample.yaml) or in .mcp.json");
        if args.json {
            println!("[]");
        }
        return Ok(EXIT_OK);
    }
    let (tools, failed) = tokio::select! {
        r = collect_tools(&manager, &servers) => r,
        _ = tokio::signal::ctrl_c() => { manager.shutdown().await; return Ok(130); }
    };
    manager.shutdown().await;

    let mut out = std::io::stdout().lock();
    let text = if args.tokens {
        let ok: Vec<String> = servers.iter().filter(|s| !failed.contains(s)).cloned().collect();
        super::run::token_report(&ctx.config, &ok, &tools, args.json)?
    } else if args.json {
        let mut s = serde_json::to_string_pretty(&tools).context("cannot serialise the tool list")?;
        s.push('\n');
        s
    } else {
        human(&servers, &failed, &tools, args.detailed)
    };
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush())
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err(e).context("cannot write to stdout");
    }
    Ok(if failed.is_empty() { EXIT_OK } else { EXIT_FAILURE })
}

fn human(servers: &[String], failed: &[String], tools: &[ToolInfo], detailed: bool) -> String {
    let mut s = String::new();
    let mut shown_servers = 0;
    for server in servers {
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
                if let Some(hints) = annotation_summary(t.annotations.as_ref()) {
                    s.push_str(&format!("    hints: {hints}\n"));
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

/// `a: integer, b: integer, mode?: "upper" | "lower"`.
pub fn param_summary(schema: &Value) -> String {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return "(none)".into();
    };
    if props.is_empty() {
        return "(none)".into();
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    props
        .iter()
        .map(|(name, p)| {
            let opt = if required.contains(&name.as_str()) { "" } else { "?" };
            format!("{name}{opt}: {}", short_type(p, schema))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn short_type(p: &Value, root: &Value) -> String {
    if let Some(r) = p.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap_or(r);
        let target = r.strip_prefix("#/").and_then(|path| path.split('/').try_fold(root, |acc, seg| acc.get(seg)));
        return match target {
            Some(t) if t.get("enum").is_some() => short_type(t, root),
            _ => name.to_string(),
        };
    }
    if let Some(e) = p.get("enum").and_then(Value::as_array) {
        let vals: Vec<String> = e.iter().take(6).map(|v| v.to_string()).collect();
        let more = if e.len() > 6 { " | …" } else { "" };
        return format!("{}{more}", vals.join(" | "));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = p.get(key).and_then(Value::as_array) {
            return alts.iter().map(|a| short_type(a, root)).collect::<Vec<_>>().join(" | ");
        }
    }
    match p.get("type") {
        Some(Value::String(t)) if t == "array" => {
            let item = p.get("items").map(|i| short_type(i, root)).unwrap_or_else(|| "any".into());
            format!("{item}[]")
        }
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" | "),
        _ => "any".into(),
    }
}

fn annotation_summary(a: Option<&Value>) -> Option<String> {
    let a = a?.as_object()?;
    let mut hints = Vec::new();
    for (key, label) in [
        ("readOnlyHint", "read-only"),
        ("destructiveHint", "destructive"),
        ("idempotentHint", "idempotent"),
        ("openWorldHint", "open-world"),
    ] {
        if a.get(key).and_then(Value::as_bool) == Some(true) {
            hints.push(label);
        }
    }
    (!hints.is_empty()).then(|| hints.join(", "))
}
