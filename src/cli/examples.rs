//! `agent mcp examples`: the configured model writes, once per tool definition, a few queries
//! someone needing the tool might type; they are cached in `<workspace>/search_examples.json`
//! (`search::examples`) and steer every catalog search (`search.examples: auto`).
//!
//! The model's answer is not trusted: it must be one JSON object of `"server.tool"` → strings;
//! names that are no tool of the batch are dropped, every query is cleaned and bounded before it
//! is stored, and none of it is printed (only counts are). The examples never reach a model.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context as _;
use clap::Args;
use serde::Serialize;
use serde_json::{Value, json};

use super::{Context, EXIT_FAILURE, EXIT_OK, ServerFilter, usage};
use crate::agent::provider::{ChatRequest, LlmProvider, Message, ProviderEvent};
use crate::mcp::ToolInfo;
use crate::mcp::catalog::{definition_hash, first_sentence};
use crate::search::examples::{self, Examples};

pub const AFTER_HELP: &str = "\
Asks the configured model (llm.*) for up to 5 example queries per tool: what someone who needs
the tool might type, in their own words. They are cached in <workspace>/search_examples.json
(0600) under the server, the tool and a hash of its name, description and input schema, so only
tools without examples, or whose definition changed, are asked (--refresh asks all of them
again). Tools are sent 16 to a request (their names, titles and descriptions); the answer must
be a JSON object of \"server.tool\" -> [strings]. Searches (`agent mcp search`, code mode's
searchTools, progressive mode, serve's search_tools) then match a task against these queries
too, unless search.examples is off. The examples only steer ranking: no model is shown them.

Progress goes to stderr; the summary (tools asked, written, skipped because cached, failed) to
stdout, or as one JSON object with --json:
  {\"file\": \"...\", \"asked\": 16, \"written\": 15, \"skipped\": 3, \"failed\": 1,
   \"failed_tools\": [\"server.tool\"]}

--reset forgets the cached examples (of --server, or all) without asking the model or starting
servers.

Examples:
  agent mcp examples --server everything
  agent mcp examples --refresh --json
  agent mcp examples --reset

Exit codes:
  0  every tool asked got examples (or none needed asking)
  1  a request failed, the model left tools out, or a server failed to start (the rest is kept)
  2  usage or configuration error (no model configured, the model or key refused)";

/// Tools per request.
const BATCH: usize = 16;
/// Longest description sent per tool (characters).
const MAX_DESCRIPTION_CHARS: usize = 600;
/// Largest answer taken (bytes): 16 tools' examples are a few KiB.
const MAX_ANSWER_BYTES: usize = 256 << 10;

#[derive(Debug, Args)]
pub struct ExamplesArgs {
    #[command(flatten)]
    pub filter: ServerFilter,
    /// Ask again for every tool, also those with cached examples.
    #[arg(long)]
    pub refresh: bool,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Forget the cached examples (of --server, or all); asks nothing, starts nothing.
    #[arg(long, conflicts_with = "refresh")]
    pub reset: bool,
}

#[derive(Debug, Default, Serialize)]
struct Summary {
    file: String,
    asked: usize,
    written: usize,
    skipped: usize,
    failed: usize,
    failed_tools: Vec<String>,
}

const SYSTEM: &str = "You help a search engine find tools for tasks. For each tool you are given, write up to 5 short, \
different requests a user might type when they need that tool: tasks and goals in the user's own words, not the \
tool's name or API terms. Each under 120 characters. Answer with one JSON object and nothing else: its keys are the \
tools' names exactly as given (\"server.tool\"), its values arrays of strings.";

pub async fn run(ctx: Context, args: &ExamplesArgs) -> anyhow::Result<u8> {
    let file = ctx.config.mcp.code_execution.workspace_dir.join(examples::FILE);
    if args.reset {
        return reset(&file, &args.filter.servers, args.json);
    }
    let env_key = std::env::var(crate::agent::key_env_var(ctx.config.llm.provider)).ok();
    let llm = crate::agent::provider_from_config(&ctx.config.llm, env_key)
        .map_err(|e| usage(format!("no model to write search examples with: {e}")))?;
    let session = super::session::Session::open(&ctx.config)?;
    let work = async {
        let servers = super::select_servers(session.manager(), &args.filter)?;
        if servers.is_empty() {
            eprintln!(
                "no MCP servers configured: add some under `mcp.servers` (see config.sample.yaml) or in .mcp.json"
            );
        }
        let (tools, failed_servers) = if servers.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            super::list::collect_tools(session.manager(), &servers).await
        };
        let summary = ask(&ctx.config, llm.as_ref(), &file, tools, args.refresh).await?;
        anyhow::Ok((summary, failed_servers))
    };
    let done = tokio::select! {
        r = work => Ok(r),
        signal = ctx.signals.received() => Err(signal),
    };
    session.close().await;
    let (summary, failed_servers) = match done {
        Ok(r) => r?,
        Err(signal) => return Ok(super::signal::exit_after(signal)),
    };
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&summary).context("cannot serialise the summary")?;
        s.push('\n');
        s
    } else {
        format!(
            "search examples: {} tools asked, {} written, {} skipped (cached), {} failed ({})\n",
            summary.asked, summary.written, summary.skipped, summary.failed, summary.file
        )
    };
    super::output::write_stdout(&text)?;
    Ok(if summary.failed == 0 && failed_servers.is_empty() { EXIT_OK } else { EXIT_FAILURE })
}

/// `--reset`: drops the entries of `servers` (all when empty).
fn reset(file: &Path, servers: &[String], json: bool) -> anyhow::Result<u8> {
    let mut warnings = Vec::new();
    let mut removed = 0;
    Examples::edit(file, &mut warnings, |e| {
        removed = if servers.is_empty() {
            e.remove_server(None)
        } else {
            servers.iter().map(|s| e.remove_server(Some(s))).sum()
        };
    })
    .with_context(|| format!("cannot write {}", file.display()))?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    let text = if json {
        format!("{}\n", json!({"file": file.display().to_string(), "removed": removed}))
    } else {
        format!("search examples: forgot those of {removed} tools ({})\n", file.display())
    };
    super::output::write_stdout(&text)?;
    Ok(EXIT_OK)
}

/// Asks the model, batch by batch, for the tools of `tools` without current examples (all with
/// `refresh`), saving after each batch so an interrupted run keeps what it got.
async fn ask(
    config: &crate::config::Config,
    llm: &dyn LlmProvider,
    file: &Path,
    tools: Vec<ToolInfo>,
    refresh: bool,
) -> anyhow::Result<Summary> {
    let mut summary = Summary { file: file.display().to_string(), ..Summary::default() };
    let cached = match Examples::load(file) {
        Ok(e) => e,
        Err(why) => {
            eprintln!("warning: {why}; it is set aside when the new examples are written");
            Examples::default()
        }
    };
    // What the file will hold for these servers: the current tools' valid examples and the new.
    let mut current = Examples::default();
    let mut todo: Vec<&ToolInfo> = Vec::new();
    for t in &tools {
        current.touch_server(&t.server);
        let hash = definition_hash(t);
        match cached.get(&t.server, &t.name, &hash).filter(|_| !refresh) {
            Some(found) => {
                current.set(&t.server, &t.name, &hash, found);
                summary.skipped += 1;
            }
            None => todo.push(t),
        }
    }
    let mut warnings = Vec::new();
    if todo.is_empty() {
        Examples::save(file, &current, &mut warnings).with_context(|| format!("cannot write {}", file.display()))?;
    }
    let batches = todo.len().div_ceil(BATCH);
    for (n, batch) in todo.chunks(BATCH).enumerate() {
        let first = n * BATCH + 1;
        eprintln!(
            "asking {} for example queries: tools {first}-{} of {} (request {} of {batches})",
            config.llm.model,
            first + batch.len() - 1,
            todo.len(),
            n + 1
        );
        summary.asked += batch.len();
        let got = match request(config, llm, batch).await {
            Ok(got) => got,
            Err(Failure::Configuration(e)) => return Err(usage(e)),
            Err(Failure::Batch(e)) => {
                eprintln!("error: request {} of {batches}: {}", n + 1, super::output::for_stderr(&e));
                BTreeMap::new()
            }
        };
        for t in batch {
            let qualified = t.qualified_name();
            let kept = got.get(&qualified).map(|q| current.set(&t.server, &t.name, &definition_hash(t), q));
            if kept.unwrap_or(0) > 0 {
                summary.written += 1;
            } else {
                summary.failed += 1;
                summary.failed_tools.push(qualified);
            }
        }
        Examples::save(file, &current, &mut warnings).with_context(|| format!("cannot write {}", file.display()))?;
    }
    for w in warnings {
        eprintln!("warning: {w}");
    }
    Ok(summary)
}

enum Failure {
    /// The key, the access or the model is wrong: asking again cannot help.
    Configuration(String),
    /// This request failed (network, answer not usable); the next may work.
    Batch(String),
}

/// One request for `batch`: the examples by qualified name, only for the batch's tools.
async fn request(
    config: &crate::config::Config,
    llm: &dyn LlmProvider,
    batch: &[&ToolInfo],
) -> Result<BTreeMap<String, Vec<String>>, Failure> {
    let listed: Vec<Value> = batch
        .iter()
        .map(|t| {
            let description: String =
                t.description.as_deref().unwrap_or("").chars().take(MAX_DESCRIPTION_CHARS).collect();
            let mut o = json!({"name": t.qualified_name(), "description": description});
            if let Some(title) = &t.title {
                o["title"] = json!(first_sentence(Some(title)));
            }
            o
        })
        .collect();
    let user = format!("The tools:\n{}", serde_json::to_string_pretty(&listed).unwrap_or_default());
    let messages = [Message::user_text(user)];
    let req = ChatRequest {
        model: &config.llm.model,
        system: SYSTEM,
        messages: &messages,
        tools: &[],
        max_tokens: config.llm.max_tokens.clamp(1024, 8192),
        stream: false,
        stop: &[],
    };
    let events = |e: ProviderEvent<'_>| {
        if let ProviderEvent::Retrying { attempt, delay, reason } = e {
            tracing::info!("the model failed ({reason}); retry {attempt} in {}", humantime::format_duration(delay));
        }
    };
    let answer = llm.complete(req, &events).await.map_err(|e| {
        if e.is_configuration() { Failure::Configuration(e.to_string()) } else { Failure::Batch(e.to_string()) }
    })?;
    let names: Vec<String> = batch.iter().map(|t| t.qualified_name()).collect();
    parse_answer(&answer.text, &names).map_err(Failure::Batch)
}

/// The model's answer as examples per tool name: one JSON object (a code fence or words around
/// it are tolerated), names not in `names` dropped, values that are not strings skipped.
/// Errors never quote the answer.
fn parse_answer(text: &str, names: &[String]) -> Result<BTreeMap<String, Vec<String>>, String> {
    if text.len() > MAX_ANSWER_BYTES {
        return Err(format!("the model's answer is larger than {} KiB", MAX_ANSWER_BYTES >> 10));
    }
    let (Some(start), Some(end)) = (text.find('{'), text.rfind('}')) else {
        return Err(format!("the model's answer ({} bytes) holds no JSON object", text.len()));
    };
    let object = text
        .get(start..=end)
        .and_then(|s| serde_json::from_str::<serde_json::Map<String, Value>>(s).ok())
        .ok_or_else(|| format!("the model's answer ({} bytes) is not one JSON object", text.len()))?;
    let mut out = BTreeMap::new();
    let mut unknown = 0;
    for (name, value) in object {
        if !names.contains(&name) {
            unknown += 1;
            continue;
        }
        let texts: Vec<String> =
            value.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect();
        out.insert(name, texts);
    }
    if unknown > 0 {
        tracing::info!("dropped the examples of {unknown} names that are no tool of the request");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_taken_only_as_a_json_object_of_the_batchs_tools() {
        let names = vec!["s.a".to_string(), "s.b".to_string()];
        let got = parse_answer("```json\n{\"s.a\": [\"one\", 2, \"two\"], \"x.y\": [\"z\"]}\n```", &names).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got["s.a"], ["one", "two"]);
        let err = parse_answer("Sure! \x1b[2J no json here", &names).unwrap_err();
        assert!(!err.contains('\x1b') && err.contains("no JSON object"), "{err}");
        assert!(parse_answer("[1, 2]", &names).is_err());
        assert!(parse_answer("{\"s.a\": [\"x\"]} and {\"s.b\": []}", &names).is_err());
        let huge = format!("{{\"s.a\": [\"{}\"]}}", "x".repeat(MAX_ANSWER_BYTES));
        assert!(parse_answer(&huge, &names).unwrap_err().contains("larger than"));
    }
}
