//! `agent mcp prompts`, `agent mcp prompt SERVER.NAME` and `agent mcp complete`: the prompts
//! servers offer (MCP's `prompts/*`, not the terminal questions of `prompt.rs`), one prompt's
//! messages, and argument completions for a prompt or a resource template. `prompt_task` turns
//! a prompt into `agent run`'s task.

use clap::Args;
use rmcp::model::{ContentBlock, GetPromptResult, PromptMessage, Role};
use serde_json::Value;

use super::output::{terminal_line, write_stdout};
use super::resources::{Body, Part, attachment, count, first_line, gather, one_line, one_request, part, print_json};
use super::{Context, EXIT_FAILURE, EXIT_OK, ServerFilter, usage};
use crate::mcp::McpManager;
use crate::mcp::primitives::CompletionRef;
use crate::util::size::human_bytes;

pub const PROMPTS_AFTER_HELP: &str = "\
Examples:
  agent mcp prompts
  agent mcp prompts --server everything --json

Each server's prompts with their arguments (`*` after a required one) and the first line of
their description; `agent mcp prompt SERVER.NAME` gets one. Servers that offer no prompts are
named in the last line. On a terminal, control characters in what servers sent are shown as
\u{FFFD}, not obeyed; to a pipe the output is byte-exact.

JSON output (--json) is an array with one object per server that offers prompts, in the order
of the configuration; the prompts are MCP's objects as the server sent them:
  [{\"server\": \"...\", \"prompts\": [{\"name\", \"title\"?, \"description\"?,
    \"arguments\"?: [{\"name\", \"description\"?, \"required\"?}]}]}]

Exit codes:
  0  every selected server answered
  1  at least one server failed to start or to list its prompts (said on stderr)
  2  usage or configuration error (e.g. unknown --server)";

pub const PROMPT_AFTER_HELP: &str = "\
Examples:
  agent mcp prompt everything.simple-prompt
  agent mcp prompt everything.args-prompt --args '{\"city\": \"Oslo\"}'
  agent mcp prompt everything.args-prompt --args '{\"city\": \"Oslo\", \"state\": \"Viken\"}' --json

Prints the prompt's messages, each under its role (`user:`, `assistant:`); images, audio and
embedded resources are summarised (MIME type and size, or URI). --args takes a JSON object
(inline, @FILE or - for stdin); values that are not strings are sent as their JSON text.
Missing required arguments are named before the server is asked. --json prints the MCP
GetPromptResult as the server sent it: {\"description\"?, \"messages\": [{\"role\", \"content\"}]}.
`agent run --prompt SERVER.NAME` starts a run from a prompt. SERVER.NAME splits at the first dot.

Exit codes:
  0  the prompt's messages were printed
  1  the server failed (crashed, timed out, an answer over mcp.max_result_bytes)
  2  usage or configuration error: unknown server or prompt (with suggestions), missing
     arguments, bad --args JSON, a server that offers no prompts";

pub const COMPLETE_AFTER_HELP: &str = "\
Examples:
  agent mcp complete everything.completable-prompt department ''
  agent mcp complete everything.completable-prompt name A --args '{\"department\": \"Engineering\"}'
  agent mcp complete everything.completable-prompt department E --json

Asks the server (completion/complete) for values of ARG of a prompt or a resource template that
start from PREFIX, one per line. NAME is a prompt's name, or a resource template's name or URI
template (`agent mcp resources` lists them; a name that is both is taken as the prompt). --args
gives the arguments already chosen, as context. --json prints MCP's completion object:
{\"values\": [...], \"total\"?, \"hasMore\"?}.

Exit codes:
  0  the server answered (possibly with no values)
  1  the server failed
  2  usage or configuration error: unknown server, prompt or template (with suggestions), a
     server that offers no completions, bad --args JSON";

#[derive(Debug, Args)]
pub struct PromptsArgs {
    #[command(flatten)]
    pub filter: ServerFilter,
    /// Print a JSON array, one object per server (see below).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PromptArgs {
    /// The prompt, as SERVER.NAME.
    #[arg(value_name = "SERVER.NAME")]
    pub target: String,
    /// The prompt's arguments: inline JSON, @FILE, or - for stdin.
    #[arg(long, short = 'a', value_name = "JSON", default_value = "{}")]
    pub args: String,
    /// Print the MCP GetPromptResult as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CompleteArgs {
    /// A prompt or a resource template, as SERVER.NAME (NAME: the template's name or URI template).
    #[arg(value_name = "SERVER.NAME")]
    pub target: String,
    /// The argument (or template variable) to complete.
    pub arg: String,
    /// What the user typed so far ('' for everything).
    pub prefix: String,
    /// The arguments already chosen (JSON object: inline, @FILE, or - for stdin).
    #[arg(long, short = 'a', value_name = "JSON", default_value = "{}")]
    pub args: String,
    /// Print MCP's completion object as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `SERVER.NAME` split at the first dot, or a usage error saying what is expected.
pub fn split_prompt(target: &str) -> anyhow::Result<(&str, &str)> {
    crate::mcp::tools::split_qualified(target).ok_or_else(|| {
        usage(format!(
            "expected SERVER.NAME (e.g. `everything.simple-prompt`), got `{target}` (`agent mcp prompts` lists them)"
        ))
    })
}

pub async fn run_prompts(ctx: Context, args: &PromptsArgs) -> anyhow::Result<u8> {
    let gathered = match gather(&ctx, &args.filter, args.json, |m, s| async move { m.prompts(&s).await }).await? {
        Ok(g) => g,
        Err(code) => return Ok(code),
    };
    let (offering, none): (Vec<_>, Vec<_>) = gathered.answers.iter().partition(|(_, p)| !p.is_empty());
    let none: Vec<&str> = none.iter().map(|(s, _)| s.as_str()).collect();
    if !none.is_empty() {
        tracing::info!("no prompts on: {}", none.join(", "));
    }
    if args.json {
        let doc: Vec<Value> =
            offering.iter().map(|(server, p)| serde_json::json!({"server": server, "prompts": p.as_slice()})).collect();
        print_json(&doc)?;
        return Ok(if gathered.failed.is_empty() { EXIT_OK } else { EXIT_FAILURE });
    }
    let text = {
        let mut s = String::new();
        let mut total = 0;
        for (server, prompts) in &offering {
            total += prompts.len();
            s.push_str(&format!("{server} ({})\n", count(prompts.len(), "prompt")));
            let sigs: Vec<String> = prompts
                .iter()
                .map(|p| {
                    let args: Vec<String> = p
                        .arguments
                        .iter()
                        .flatten()
                        .map(|a| format!("{}{}", a.name, if a.required == Some(true) { "*" } else { "" }))
                        .collect();
                    one_line(&format!("{}({})", p.name, args.join(", ")))
                })
                .collect();
            let width = sigs.iter().map(|g| g.chars().count()).max().unwrap_or(0).min(50);
            for (p, sig) in prompts.iter().zip(&sigs) {
                let desc = first_line(p.description.as_deref().or(p.title.as_deref()));
                s.push_str(&format!("  {sig:width$}  {}\n", one_line(&desc)));
            }
            s.push('\n');
        }
        s.push_str(&format!("{} on {}", count(total, "prompt"), count(offering.len(), "server")));
        if !none.is_empty() {
            s.push_str(&format!("; none on {}", none.join(", ")));
        }
        if !gathered.failed.is_empty() {
            s.push_str(&format!("; {} failed (see above)", gathered.failed.len()));
        }
        s.push('\n');
        s
    };
    write_stdout(&text)?;
    Ok(if gathered.failed.is_empty() { EXIT_OK } else { EXIT_FAILURE })
}

pub async fn run_prompt(ctx: Context, args: &PromptArgs) -> anyhow::Result<u8> {
    let (server, name) = split_prompt(&args.target)?;
    let arguments = super::call::parse_args(&args.args)?;
    let (name_owned, server_owned) = (name.to_string(), server.to_string());
    let got =
        match one_request(&ctx, server, |m| async move { m.get_prompt(&server_owned, &name_owned, arguments).await })
            .await?
        {
            Ok(got) => got,
            Err(code) => return Ok(code),
        };
    if args.json {
        print_json(&got)?;
    } else {
        write_stdout(&messages_text(&got))?;
    }
    Ok(EXIT_OK)
}

fn role_name(role: &Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

/// Bytes a base64 text stands for.
fn b64_size(data: &str) -> String {
    human_bytes(crate::util::size::base64_decoded_len(data))
}

/// One message's content as text: text as it is, the rest summarised on one line.
fn content_text(content: &ContentBlock) -> String {
    match content {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => format!("[image: {}, {}]", one_line(&i.mime_type), b64_size(&i.data)),
        ContentBlock::Audio(a) => format!("[audio: {}, {}]", one_line(&a.mime_type), b64_size(&a.data)),
        ContentBlock::Resource(r) => {
            let p = part(&r.resource);
            let mime = p.mime.map(|m| format!(", {}", one_line(m))).unwrap_or_default();
            let size = match p.body {
                Body::Text(text) => format!("{} of text", human_bytes(text.len() as u64)),
                Body::Blob(blob) => b64_size(blob),
                Body::Unknown => "unknown content".into(),
            };
            format!("[resource: {}{mime}, {size}]", one_line(p.uri))
        }
        ContentBlock::ResourceLink(l) => format!("[resource link: {}]", one_line(&l.uri)),
        _ => "[content of a kind this version does not know]".into(),
    }
}

/// The prompt's description (when it has one) and each message under its role.
pub fn messages_text(got: &GetPromptResult) -> String {
    let mut s = String::new();
    if let Some(d) = got.description.as_deref().filter(|d| !d.trim().is_empty()) {
        s.push_str(&format!("# {}\n\n", one_line(d.trim())));
    }
    for (i, m) in got.messages.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        s.push_str(&format!("{}:\n", role_name(&m.role)));
        let text = content_text(&m.content);
        for line in text.lines() {
            s.push_str(&format!("  {line}\n"));
        }
        if text.is_empty() {
            s.push('\n');
        }
    }
    if got.messages.is_empty() {
        s.push_str("(the prompt has no messages)\n");
    }
    s
}

/// `agent run --prompt`: the prompt's messages as one task. A prompt of one user message is its
/// text; otherwise each message's text is labelled with its role, so the model sees who said
/// what. Images, audio and binary resources cannot be a task's text: refused with a usage error.
/// Embedded text resources are attached with their URI.
pub fn prompt_task(target: &str, got: &GetPromptResult) -> anyhow::Result<String> {
    let part = |m: &PromptMessage| -> anyhow::Result<String> {
        match &m.content {
            ContentBlock::Text(t) => Ok(t.text.clone()),
            ContentBlock::Resource(r) => match part(&r.resource) {
                Part { uri, body: Body::Text(text), .. } => Ok(attachment(None, uri, text)),
                Part { uri, .. } => Err(usage(format!(
                    "prompt `{target}` embeds the binary resource `{}`, which cannot be part of a task's text",
                    terminal_line(uri)
                ))),
            },
            ContentBlock::ResourceLink(l) => Ok(format!("(resource {})", l.uri)),
            other => Err(usage(format!(
                "prompt `{target}` has a message with {}, which cannot be part of a task's text",
                content_text(other)
            ))),
        }
    };
    match got.messages.as_slice() {
        [] => Err(usage(format!("prompt `{target}` has no messages to start a run from"))),
        [one] if one.role == Role::User => part(one),
        many => {
            let mut parts = Vec::new();
            for m in many {
                parts.push(format!("[{}]\n{}", role_name(&m.role), part(m)?));
            }
            Ok(parts.join("\n\n"))
        }
    }
}

pub async fn run_complete(ctx: Context, args: &CompleteArgs) -> anyhow::Result<u8> {
    let (server, name) = split_prompt(&args.target)?;
    let context = super::call::parse_args(&args.args)?;
    let (server_owned, name_owned) = (server.to_string(), name.to_string());
    let (arg, prefix) = (args.arg.clone(), args.prefix.clone());
    let done = match one_request(&ctx, server, |m| async move {
        let reference = completion_ref(&m, &server_owned, &name_owned).await?;
        m.complete(&server_owned, &reference, &arg, &prefix, context).await
    })
    .await?
    {
        Ok(done) => done,
        Err(code) => return Ok(code),
    };
    if args.json {
        print_json(&done)?;
        return Ok(EXIT_OK);
    }
    let mut s = String::new();
    for v in &done.values {
        s.push_str(&one_line(v));
        s.push('\n');
    }
    write_stdout(&s)?;
    if done.has_more == Some(true) {
        let total = done.total.map(|t| format!(" of {t}")).unwrap_or_default();
        eprintln!("({} shown{total}; type more of the value to narrow them)", done.values.len());
    } else if done.values.is_empty() {
        eprintln!("(no completions)");
    }
    Ok(EXIT_OK)
}

/// What NAME refers to: a prompt of that name, else a resource template by its name or its URI
/// template; unknown names get suggestions from both lists.
async fn completion_ref(manager: &McpManager, server: &str, name: &str) -> Result<CompletionRef, crate::mcp::McpError> {
    let offers = manager.offers(server).await?;
    if !offers.completions {
        return Err(crate::mcp::McpError::NotOffered { server: server.into(), what: "completions" });
    }
    let prompts = manager.prompts(server).await?;
    if prompts.iter().any(|p| p.name == name) {
        return Ok(CompletionRef::Prompt(name.into()));
    }
    let resources = manager.resources(server).await?;
    if let Some(t) = resources.templates.iter().find(|t| t.name == name || t.uri_template == name) {
        return Ok(CompletionRef::Resource(t.uri_template.clone()));
    }
    let names = prompts
        .iter()
        .map(|p| p.name.as_str())
        .chain(resources.templates.iter().flat_map(|t| [t.name.as_str(), t.uri_template.as_str()]));
    Err(crate::mcp::McpError::UnknownPrompt {
        server: server.into(),
        prompt: name.into(),
        suggestions: crate::util::suggest::suggest(name, names),
    })
}
