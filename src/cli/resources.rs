//! `agent mcp resources` and `agent mcp read SERVER URI`: what servers offer as resources (and
//! resource templates), and one resource's contents. Text is printed; binary contents are
//! written byte for byte with `--output` or summarised, never dumped on a terminal.
//!
//! Also the pieces `mcp prompts`/`prompt`/`complete` (`server_prompts`) and `agent run`'s
//! `@server:uri` attachments share: gathering one answer from each selected server, starting
//! one server under a spinner, and which manager errors are the user's (exit code 2).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use base64::Engine as _;
use clap::Args;
use rmcp::model::{ReadResourceResult, ResourceContents};

use super::output::{for_stderr, write_stdout};
use super::{Context, EXIT_FAILURE, EXIT_OK, ServerFilter, usage};
use crate::mcp::primitives::Resources;
use crate::mcp::{McpError, McpManager};
use crate::util::fs::{Access, write_atomic};
use crate::util::size::human_bytes;

pub const RESOURCES_AFTER_HELP: &str = "\
Examples:
  agent mcp resources
  agent mcp resources --server everything --json

Each server's resources (URI, name, MIME type, description) and resource templates (an RFC 6570
URI template: fill in the {variables} and `agent mcp read` the URI). Servers that offer no
resources are named in the last line. On a terminal, control characters in what servers sent
are shown as \u{FFFD}, not obeyed; to a pipe the output is byte-exact.

JSON output (--json) is an array with one object per server that offers resources, in the
order of the configuration; the resources and templates are MCP's objects as the server sent them:
  [{\"server\": \"...\", \"resources\": [{\"uri\", \"name\", \"title\"?, \"description\"?, \"mimeType\"?, \"size\"?}],
    \"resourceTemplates\": [{\"uriTemplate\", \"name\", \"title\"?, \"description\"?, \"mimeType\"?}]}]

Exit codes:
  0  every selected server answered
  1  at least one server failed to start or to list its resources (said on stderr)
  2  usage or configuration error (e.g. unknown --server)";

pub const READ_AFTER_HELP: &str = "\
Examples:
  agent mcp read everything demo://resource/static/document/architecture.md
  agent mcp read everything demo://resource/dynamic/text/1 --json
  agent mcp read everything demo://resource/dynamic/blob/1 --output blob.bin

Text contents are printed (with a final newline when they have none). Binary (blob) contents
are never printed: without --output they are summarised (MIME type and size); --output FILE
writes the bytes exactly (base64-decoded), atomically (a temporary file renamed into place, so
FILE is never half-written). A resource with several contents prints each under a
`--- URI (MIME type)` line; --output takes a resource with one. --json prints the MCP
ReadResourceResult as the server sent it: {\"contents\": [{\"uri\", \"mimeType\"?, \"text\" | \"blob\"}]}.
A URI made from a template (`agent mcp resources` lists them) is read like a listed one.

Exit codes:
  0  the resource was read
  1  the server failed (crashed, timed out, an answer over mcp.max_result_bytes), or FILE
     could not be written
  2  usage or configuration error: unknown server or URI (with suggestions), a server that
     offers no resources, --output with several contents";

#[derive(Debug, Args)]
pub struct ResourcesArgs {
    #[command(flatten)]
    pub filter: ServerFilter,
    /// Print a JSON array, one object per server (see below).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReadArgs {
    /// The server to ask.
    pub server: String,
    /// The resource's URI (listed by `agent mcp resources`, or made from a template).
    pub uri: String,
    /// Write the contents to FILE (atomically, byte for byte; binary contents base64-decoded).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print the MCP ReadResourceResult as JSON.
    #[arg(long, conflicts_with = "output")]
    pub json: bool,
}

/// What a command asked each selected server, once they started.
pub struct Gathered<T> {
    /// Each server that answered, in the order of the selection, with its answer.
    pub answers: Vec<(String, T)>,
    /// The servers that failed to start or to answer (each said on stderr already).
    pub failed: Vec<String>,
}

/// Opens a session, starts the servers of `filter` under a spinner, asks each with `ask`,
/// closes the session. Failures are said on stderr as they come. `Err(code)` when a signal
/// stopped it (the exit code to return) or nothing is configured (0; `json`: `[]` printed).
pub async fn gather<T, Fut>(
    ctx: &Context,
    filter: &ServerFilter,
    json: bool,
    ask: impl Fn(Arc<McpManager>, String) -> Fut,
) -> anyhow::Result<Result<Gathered<T>, u8>>
where
    Fut: Future<Output = Result<T, McpError>>,
{
    let session = super::session::Session::open(&ctx.config)?;
    let manager = session.manager().clone();
    let servers = super::select_servers(&manager, filter)?;
    if servers.is_empty() {
        eprintln!("no MCP servers configured: add some under `mcp.servers` (see config.sample.yaml) or in .mcp.json");
        session.close().await;
        if json {
            write_stdout("[]\n")?;
        }
        return Ok(Err(EXIT_OK));
    }
    let work = async {
        let (_, mut failed) = super::list::collect_tools(&manager, &servers).await;
        let mut answers = Vec::new();
        let started: Vec<String> = servers.iter().filter(|s| !failed.contains(s)).cloned().collect();
        for server in started {
            match ask(manager.clone(), server.clone()).await {
                Ok(answer) => answers.push((server, answer)),
                Err(e) => {
                    eprintln!("error: {}", for_stderr(&e.to_string()));
                    failed.push(server);
                }
            }
        }
        Gathered { answers, failed }
    };
    let outcome = tokio::select! {
        r = work => Ok(r),
        signal = ctx.signals.received() => Err(signal),
    };
    session.close().await;
    Ok(outcome.map_err(super::signal::exit_after))
}

/// Starts `server` under a spinner (so the request after it is not counted as start-up).
pub async fn start_one(manager: &McpManager, server: &str) -> Result<(), McpError> {
    let spinner = super::output::Spinner::start(format!("starting {server}"));
    let started = manager.connection(server).await;
    spinner.finish();
    started.map(|_| ())
}

/// A manager error as the command's error: the user's own mistakes (an unknown server, prompt
/// or URI, missing arguments, asking a server for what it does not offer) are usage errors
/// (exit code 2), the rest are failures (1; 3 for a sign-in).
pub fn command_error(e: McpError) -> anyhow::Error {
    match e {
        McpError::UnknownServer { .. }
        | McpError::Disabled(_)
        | McpError::UnknownPrompt { .. }
        | McpError::UnknownResource { .. }
        | McpError::InvalidArguments { .. }
        | McpError::NotOffered { .. } => usage(e.to_string()),
        other => other.into(),
    }
}

/// A resource's text as part of a task or prompt, delimited so the model can tell it from the
/// words around it: `--- resource `server:uri` ---` ... `--- end of resource `server:uri` ---`.
pub fn attachment(server: Option<&str>, uri: &str, text: &str) -> String {
    let name = match server {
        Some(s) => format!("`{s}:{uri}`"),
        None => format!("`{uri}`"),
    };
    let nl = if text.ends_with('\n') { "" } else { "\n" };
    format!("--- resource {name} ---\n{text}{nl}--- end of resource {name} ---")
}

/// `text` on one line for a listing: carriage returns dropped, newlines and tabs become spaces
/// (as `output::terminal_line` has them). Nothing else changes:
/// `output::write_stdout` makes the whole listing safe on a terminal and leaves it byte-exact
/// in a pipe.
pub fn one_line(text: &str) -> String {
    text.replace('\r', "").replace(['\n', '\t'], " ")
}

/// `n thing` / `n things`.
pub fn count(n: usize, thing: &str) -> String {
    format!("{n} {thing}{}", if n == 1 { "" } else { "s" })
}

/// The first non-empty line of `text`, cut at 100 characters.
pub fn first_line(text: Option<&str>) -> String {
    let first = text.and_then(|d| d.lines().map(str::trim).find(|l| !l.is_empty())).unwrap_or("");
    let cut: String = first.chars().take(100).collect();
    if first.chars().count() > 100 { format!("{cut}…") } else { cut }
}

pub async fn run_resources(ctx: Context, args: &ResourcesArgs) -> anyhow::Result<u8> {
    let gathered = match gather(&ctx, &args.filter, args.json, |m, s| async move { m.resources(&s).await }).await? {
        Ok(g) => g,
        Err(code) => return Ok(code),
    };
    let (offering, none): (Vec<_>, Vec<_>) =
        gathered.answers.iter().partition(|(_, r)| !r.resources.is_empty() || !r.templates.is_empty());
    let none: Vec<&str> = none.iter().map(|(s, _)| s.as_str()).collect();
    if !none.is_empty() {
        tracing::info!("no resources on: {}", none.join(", "));
    }
    if args.json {
        let doc: Vec<serde_json::Value> = offering
            .iter()
            .map(|(server, r)| {
                serde_json::json!({"server": server, "resources": r.resources, "resourceTemplates": r.templates})
            })
            .collect();
        print_json(&doc)?;
    } else {
        write_stdout(&human_resources(&offering, &none, &gathered.failed))?;
    }
    Ok(if gathered.failed.is_empty() { EXIT_OK } else { EXIT_FAILURE })
}

fn human_resources(offering: &[&(String, Arc<Resources>)], none: &[&str], failed: &[String]) -> String {
    let mut s = String::new();
    let (mut n_resources, mut n_templates) = (0, 0);
    for (server, r) in offering {
        n_resources += r.resources.len();
        n_templates += r.templates.len();
        let mut head = format!("{server} ({}", count(r.resources.len(), "resource"));
        if !r.templates.is_empty() {
            head.push_str(&format!(", {}", count(r.templates.len(), "template")));
        }
        s.push_str(&format!("{head})\n"));
        let width = r.resources.iter().map(|r| r.uri.chars().count()).max().unwrap_or(0).min(60);
        for res in &r.resources {
            let label = res.title.as_deref().unwrap_or(&res.name);
            let mime = res.mime_type.as_deref().map(|m| format!(" ({m})")).unwrap_or_default();
            let desc = first_line(res.description.as_deref());
            let desc = if desc.is_empty() { desc } else { format!(": {desc}") };
            s.push_str(&format!("  {:width$}  {}\n", one_line(&res.uri), one_line(&format!("{label}{mime}{desc}"))));
        }
        if !r.templates.is_empty() {
            s.push_str("  templates:\n");
            let width = r.templates.iter().map(|t| t.uri_template.chars().count()).max().unwrap_or(0).min(60);
            for t in &r.templates {
                let label = t.title.as_deref().unwrap_or(&t.name);
                let desc = first_line(t.description.as_deref());
                let desc = if desc.is_empty() { desc } else { format!(": {desc}") };
                s.push_str(&format!(
                    "  {:width$}  {}\n",
                    one_line(&t.uri_template),
                    one_line(&format!("{label}{desc}"))
                ));
            }
        }
        s.push('\n');
    }
    s.push_str(&format!(
        "{}, {} on {}",
        count(n_resources, "resource"),
        count(n_templates, "template"),
        count(offering.len(), "server")
    ));
    if !none.is_empty() {
        s.push_str(&format!("; none on {}", none.join(", ")));
    }
    if !failed.is_empty() {
        s.push_str(&format!("; {} failed (see above)", failed.len()));
    }
    s.push('\n');
    s
}

/// Pretty JSON of `value` on stdout.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut s = serde_json::to_string_pretty(value).context("cannot serialise the answer as JSON")?;
    s.push('\n');
    write_stdout(&s)
}

/// One request to one server inside a session (the server started under a spinner first),
/// raced against signals: `Err(code)` after a signal. Manager errors as [`command_error`].
pub async fn one_request<T, Fut>(
    ctx: &Context,
    server: &str,
    ask: impl FnOnce(Arc<McpManager>) -> Fut,
) -> anyhow::Result<Result<T, u8>>
where
    Fut: Future<Output = Result<T, McpError>>,
{
    let session = super::session::Session::open(&ctx.config)?;
    let manager = session.manager().clone();
    if let Err(e) = manager.check_server(server) {
        session.close().await;
        return Err(command_error(e));
    }
    let work = async {
        start_one(&manager, server).await?;
        ask(manager.clone()).await
    };
    let outcome = tokio::select! {
        r = work => Ok(r),
        signal = ctx.signals.received() => Err(signal),
    };
    session.close().await;
    match outcome {
        Ok(r) => Ok(Ok(r.map_err(command_error)?)),
        Err(signal) => Ok(Err(super::signal::exit_after(signal))),
    }
}

pub async fn run_read(ctx: Context, args: &ReadArgs) -> anyhow::Result<u8> {
    let (server, uri) = (args.server.clone(), args.uri.clone());
    let read = match one_request(&ctx, &args.server, |m| async move { m.read_resource(&server, &uri).await }).await? {
        Ok(read) => read,
        Err(code) => return Ok(code),
    };
    if args.json {
        print_json(&read)?;
        return Ok(EXIT_OK);
    }
    match &args.output {
        Some(path) => write_output(&args.server, &read, path),
        None => print_contents(&args.server, &read),
    }
}

/// One content of a resource, borrowed.
pub struct Part<'a> {
    pub uri: &'a str,
    pub mime: Option<&'a str>,
    pub body: Body<'a>,
}

/// What a content holds.
pub enum Body<'a> {
    Text(&'a str),
    /// Base64, as the server sent it.
    Blob(&'a str),
    /// A kind of content this version does not know.
    Unknown,
}

pub fn part(content: &ResourceContents) -> Part<'_> {
    match content {
        ResourceContents::TextResourceContents { uri, mime_type, text, .. } => {
            Part { uri, mime: mime_type.as_deref(), body: Body::Text(text) }
        }
        ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
            Part { uri, mime: mime_type.as_deref(), body: Body::Blob(blob) }
        }
        _ => Part { uri: "?", mime: None, body: Body::Unknown },
    }
}

/// The bytes of one content: a text's UTF-8, a blob's base64 decoded.
pub fn content_bytes(server: &str, part: &Part<'_>) -> anyhow::Result<Vec<u8>> {
    match part.body {
        Body::Text(text) => Ok(text.as_bytes().to_vec()),
        Body::Blob(blob) => base64::engine::general_purpose::STANDARD.decode(blob.trim()).map_err(|e| {
            anyhow::anyhow!("server `{server}` sent `{}` as a blob that is not valid base64: {e}", part.uri)
        }),
        Body::Unknown => Err(anyhow::anyhow!("server `{server}` sent a kind of content this version does not know")),
    }
}

/// `--output FILE`: the one content's bytes, atomically.
fn write_output(server: &str, read: &ReadResourceResult, path: &std::path::Path) -> anyhow::Result<u8> {
    let [content] = read.contents.as_slice() else {
        return Err(usage(format!(
            "the resource has {} contents; --output writes a resource with one (use --json for all)",
            read.contents.len()
        )));
    };
    let bytes = content_bytes(server, &part(content))?;
    write_atomic(path, &bytes, Access::Shared).with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!("wrote {} to {}", human_bytes(bytes.len() as u64), path.display());
    Ok(EXIT_OK)
}

/// Text printed, blobs summarised; a header per content when there are several.
fn print_contents(server: &str, read: &ReadResourceResult) -> anyhow::Result<u8> {
    let several = read.contents.len() > 1;
    let mut out = String::new();
    for content in &read.contents {
        let part = part(content);
        if several {
            let mime = part.mime.map(|m| format!(" ({m})")).unwrap_or_default();
            out.push_str(&format!("--- {}\n", one_line(&format!("{}{mime}", part.uri))));
        }
        match part.body {
            Body::Text(text) => {
                out.push_str(text);
                if !text.ends_with('\n') {
                    out.push('\n');
                }
            }
            Body::Blob(_) | Body::Unknown => {
                let size = content_bytes(server, &part)?.len() as u64;
                let mime = part.mime.unwrap_or("application/octet-stream");
                out.push_str(&format!(
                    "[binary: {}, {}; save it with --output FILE]\n",
                    one_line(mime),
                    human_bytes(size)
                ));
            }
        }
    }
    if read.contents.is_empty() {
        eprintln!("the server sent no contents for this resource");
    }
    write_stdout(&out)?;
    Ok(EXIT_OK)
}
