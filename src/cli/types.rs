//! `agent mcp types`: the quality report of learned output types (every tool of the selected
//! servers, never-observed ones at `none`), `--discover` (first observations from tools that are
//! safe to call) and `--reset`.

use std::io::{BufRead as _, IsTerminal as _};

use clap::Args;
use serde::Serialize;
use serde_json::{Map, Value};

use super::{Context, EXIT_FAILURE, EXIT_OK, ServerFilter, usage};
use crate::mcp::{McpManager, ToolInfo};
use crate::types::{Quality, Registry, Source, definition_hash};

pub const AFTER_HELP: &str = "\
agent records the shape of every successful tool result (never the values: short strings only as
keyed hashes until a field earns an enum) in <workspace>/type_registry.json and generates sharper
result types as observations accumulate:
declared output schema → high; otherwise 0 observations → none, 1-9 → low, 10-99 → medium,
100+ with mean field consistency >= 0.8 → high (thresholds: mcp.types.*).

JSON output (--json) is an array, one object per tool:
  {\"server\": \"mem\", \"tool\": \"read_graph\", \"source\": \"declared|inferred|none\",
   \"quality\": \"none|low|medium|high\", \"observations\": 12,
   \"fields\": {\"name\": {\"presence\": 1.0, \"consistency\": 1.0}}}

--discover calls the tools that are safe to call to get first observations: annotated
readOnlyHint and without required arguments, or listed with their arguments under
mcp.types.discover (`server.tool: {arg: value}`). It lists them and asks first unless --yes.

Examples:
  agent mcp types
  agent mcp types --server github --json
  agent mcp types --discover --yes
  agent mcp types --reset github.list_issues

Exit codes:
  0  the report was printed (or the reset / discovery done)
  1  a server failed to start (the others are reported), or a discovery call failed
  2  usage or configuration error";

#[derive(Debug, Args)]
pub struct TypesArgs {
    #[command(flatten)]
    pub filter: ServerFilter,
    /// Print only a JSON array on stdout.
    #[arg(long)]
    pub json: bool,
    /// Call safe tools once to get first observations (asks first unless --yes).
    #[arg(long)]
    pub discover: bool,
    /// Do not ask before --discover calls tools.
    #[arg(long, requires = "discover")]
    pub yes: bool,
    /// Forget what was learned: about SERVER.TOOL, or about every tool (and the value key).
    #[arg(long, value_name = "SERVER.TOOL", num_args = 0..=1, default_missing_value = "", conflicts_with = "discover")]
    pub reset: Option<String>,
}

/// One row of the report (`--json`).
#[derive(Debug, Serialize)]
pub struct Row {
    pub server: String,
    pub tool: String,
    pub source: Source,
    pub quality: Quality,
    pub observations: u64,
    pub fields: Map<String, Value>,
}

pub async fn run(ctx: Context, args: &TypesArgs) -> anyhow::Result<u8> {
    let path = crate::learn::registry_path(&ctx.config);
    if let Some(target) = &args.reset {
        let only = match target.as_str() {
            "" => None,
            t => Some(t.split_once('.').ok_or_else(|| usage(format!("--reset: expected SERVER.TOOL, got `{t}`")))?),
        };
        let mut warnings = Vec::new();
        let removed = Registry::reset(&path, only, &mut warnings).map_err(anyhow::Error::msg)?;
        for w in warnings {
            eprintln!("warning: {w}");
        }
        if let Some((s, t)) = only.filter(|_| removed == 0) {
            // A name that matches nothing is a mistake to say, not a reset that went well.
            let known = Registry::load(&path, &mut Vec::new());
            let names: Vec<String> = known.tools.values().map(|e| format!("{}.{}", e.server, e.tool)).collect();
            let hint = crate::util::suggest::did_you_mean(&crate::util::suggest::suggest(
                &format!("{s}.{t}"),
                names.iter().map(String::as_str),
            ));
            return Err(usage(format!("--reset: nothing was learned about `{s}.{t}`{hint}")));
        }
        let what = match only {
            Some((s, t)) => format!("forgot the learned type of {s}.{t}"),
            None => format!("forgot the learned types of {removed} tool(s)"),
        };
        if args.json {
            super::output::write_stdout(&format!("{}\n", serde_json::json!({ "removed": removed })))?;
        } else {
            super::output::write_stdout(&format!("{what}\n"))?;
        }
        return Ok(EXIT_OK);
    }

    // `--yes` only skips the question before discovery; destructive tools still need approval.
    let session = super::session::Session::open(&ctx.config)?;
    let manager = session.manager();
    let servers = super::select_servers(manager, &args.filter)?;
    let work = async {
        let started = manager.start_servers(&servers).await;
        let mut discover_failed = false;
        if args.discover {
            discover_failed = discover(&ctx, manager, &started.tools, args).await?;
        }
        anyhow::Ok((started, discover_failed))
    };
    let outcome = tokio::select! {
        r = work => Ok(r),
        signal = ctx.signals.received() => Err(signal),
    };
    session.close().await;
    let (started, discover_failed) = match outcome {
        Ok(r) => r?,
        Err(signal) => return Ok(super::signal::exit_after(signal)),
    };
    for (name, e) in &started.failed {
        // Quotes the server's stderr.
        eprintln!("warning: {}", super::output::for_stderr(&e.to_string()));
        let _ = name;
    }
    let registry = crate::learn::load_registry(&ctx.config);
    let rows = report(&started.tools, &registry);
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&rows)?;
        s.push('\n');
        s
    } else {
        summary(&rows)
    };
    super::output::write_stdout(&text)?;
    Ok(if started.failed.is_empty() && !discover_failed { EXIT_OK } else { EXIT_FAILURE })
}

/// The report rows of `tools` (sorted by server, then tool).
pub fn report(tools: &[ToolInfo], registry: &Registry) -> Vec<Row> {
    let mut rows: Vec<Row> = tools
        .iter()
        .map(|t| {
            let mut fields = Map::new();
            if t.output_schema.is_some() {
                let props = t.output_schema.as_ref().and_then(|s| s.get("properties")).and_then(Value::as_object);
                for k in props.into_iter().flat_map(|p| p.keys()) {
                    fields.insert(k.clone(), serde_json::json!({"declared": true}));
                }
                return Row {
                    server: t.server.clone(),
                    tool: t.name.clone(),
                    source: Source::Declared,
                    quality: Quality::High,
                    observations: 0,
                    fields,
                };
            }
            let def = definition_hash(&serde_json::to_vec(t).unwrap_or_default());
            match registry.get(&t.server, &t.name, Some(&def)) {
                Some(e) => {
                    for (k, f) in &e.fields {
                        fields.insert(
                            k.clone(),
                            serde_json::json!({"presence": f.presence, "consistency": f.consistency}),
                        );
                    }
                    Row {
                        server: t.server.clone(),
                        tool: t.name.clone(),
                        source: e.source,
                        quality: e.quality,
                        observations: e.observations,
                        fields,
                    }
                }
                None => Row {
                    server: t.server.clone(),
                    tool: t.name.clone(),
                    source: Source::None,
                    quality: Quality::None,
                    observations: 0,
                    fields,
                },
            }
        })
        .collect();
    rows.sort_by(|a, b| (&a.server, &a.tool).cmp(&(&b.server, &b.tool)));
    rows
}

fn pct(n: usize, total: usize) -> String {
    if total == 0 { "0.0%".into() } else { format!("{:.1}%", n as f64 * 100.0 / total as f64) }
}

fn summary(rows: &[Row]) -> String {
    let width = rows.iter().map(|r| r.server.len() + r.tool.len() + 1).max().unwrap_or(0);
    let mut out = String::new();
    for r in rows {
        let name = format!("{}.{}", r.server, r.tool);
        let detail = match r.source {
            Source::Declared => format!("output schema, {} field(s)", r.fields.len()),
            Source::Inferred => format!("{} observation(s), {} field(s)", r.observations, r.fields.len()),
            Source::None => "never observed".into(),
        };
        out.push_str(&format!("{name:<width$}  {:<8}  {:<6}  {detail}\n", r.source.as_str(), r.quality.as_str()));
    }
    let total = rows.len();
    let declared = rows.iter().filter(|r| r.source == Source::Declared).count();
    let inferred = rows.iter().filter(|r| r.source == Source::Inferred).count();
    let unknown = total - declared - inferred;
    let high = rows.iter().filter(|r| r.quality == Quality::High).count();
    out.push_str(&format!(
        "Declared {declared} ({}) · inferred {inferred} · unknown {unknown} · high quality {high} ({})\n",
        pct(declared, total),
        pct(high, total)
    ));
    out
}

/// Whether `--discover` may call `tool`, and with which arguments.
fn discoverable(
    tool: &ToolInfo,
    configured: &std::collections::BTreeMap<String, Map<String, Value>>,
) -> Option<Map<String, Value>> {
    if let Some(args) = configured.get(&tool.qualified_name()) {
        return Some(args.clone());
    }
    let read_only =
        tool.annotations.as_ref().and_then(|a| a.get("readOnlyHint")).and_then(Value::as_bool) == Some(true);
    let required = tool.input_schema.get("required").and_then(Value::as_array).is_some_and(|r| !r.is_empty());
    (read_only && !required && tool.output_schema.is_none()).then(Map::new)
}

/// Calls the discoverable tools once; true when a call failed.
async fn discover(ctx: &Context, manager: &McpManager, tools: &[ToolInfo], args: &TypesArgs) -> anyhow::Result<bool> {
    let configured = &ctx.config.mcp.types.discover;
    let plan: Vec<(&ToolInfo, Map<String, Value>)> =
        tools.iter().filter_map(|t| discoverable(t, configured).map(|a| (t, a))).collect();
    if plan.is_empty() {
        eprintln!(
            "no tool to discover: none is annotated readOnlyHint without required arguments, and mcp.types.discover lists none"
        );
        return Ok(false);
    }
    eprintln!("will call {} tool(s) once to observe their results:", plan.len());
    // Tool names are the servers' text.
    let shown = |t: &ToolInfo| super::output::terminal_line(&t.qualified_name()).into_owned();
    for (t, a) in &plan {
        eprintln!("  {}({})", shown(t), Value::Object(a.clone()));
    }
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            return Err(usage("--discover: pass --yes to call these tools without a terminal to ask on"));
        }
        eprint!("call them? [y/N] ");
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            eprintln!("nothing called");
            return Ok(false);
        }
    }
    let mut failed = false;
    for (t, a) in plan {
        match manager.call_tool(&t.server, &t.name, a).await {
            Ok(r) if r.is_error == Some(true) => {
                failed = true;
                eprintln!("  {}: the tool reported an error", shown(t));
            }
            Ok(_) => eprintln!("  {}: observed", shown(t)),
            Err(e) => {
                failed = true;
                eprintln!("  {}: {}", shown(t), super::output::terminal_line(&e.to_string()));
            }
        }
    }
    Ok(failed)
}
