//! `agent state ls|show|rm`: what scripts kept under `<workspace>/data/` (`store` keys and
//! files), through the same fenced [`State`] the scripts use.

use anyhow::Context as _;
use clap::{Args, Subcommand};

use super::output::write_stdout;
use super::{Context, EXIT_OK, usage};
use crate::codemode::Options;
use crate::runtime::state::{Kind, Quota, State};
use crate::util::size::human_bytes;
use crate::util::suggest::{did_you_mean, suggest};

pub const AFTER_HELP: &str = "\
Scripts keep state in <workspace>/data/ (mcp.code_execution.workspace_dir, default
.kodelet/mcp): `store(key, value)` keys (in data/.store/) and files written with writeText /
writeJson. KEY_OR_PATH names a key first, else a path relative to data/. `ls` lists what is on
disk, skills/ included (one quota, mcp.code_execution.state, covers both), and counts it again.

Examples:
  agent state ls
  agent state ls --json
  agent state show weekly-totals
  agent state rm reports/old.json
  agent state rm --all          (same as `agent run --fresh-state` does before a run)

JSON output of ls (--json): an array of
  {\"kind\": \"key\"|\"file\"|\"dir\"|\"skill\", \"name\": \"...\", \"bytes\": N}.";

#[derive(Debug, Subcommand)]
pub enum StateCommand {
    /// List stored keys and files.
    Ls(LsArgs),
    /// Print a stored key's JSON value or a file's content.
    Show(ShowArgs),
    /// Remove a key, a file or a directory under data/ (or everything with --all).
    Rm(RmArgs),
}

#[derive(Debug, Args)]
pub struct LsArgs {
    /// Print a JSON array.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    #[arg(value_name = "KEY_OR_PATH")]
    pub name: String,
}

#[derive(Debug, Args)]
pub struct RmArgs {
    #[arg(value_name = "KEY_OR_PATH", required_unless_present = "all", conflicts_with = "all")]
    pub name: Option<String>,
    /// Remove everything under data/.
    #[arg(long)]
    pub all: bool,
}

/// The state of the configured workspace.
pub fn state_of(ctx: &Context) -> anyhow::Result<State> {
    let options = Options::from_config(&ctx.config)?;
    Ok(State::new(&options.workspace, Quota::from_config(&ctx.config.mcp.code_execution.state)))
}

pub async fn run(ctx: Context, cmd: &StateCommand) -> anyhow::Result<u8> {
    let state = state_of(&ctx)?;
    let fail = |e: String| anyhow::anyhow!(e);
    match cmd {
        StateCommand::Ls(args) => {
            let entries = state.entries().map_err(fail)?;
            if args.json {
                let mut s = serde_json::to_string_pretty(&entries).context("cannot serialise the list")?;
                s.push('\n');
                write_stdout(&s)?;
            } else if entries.is_empty() {
                eprintln!("no state: scripts have stored nothing in data/ or skills/");
            } else {
                let used = state.usage().map_err(fail)?;
                let mut s = String::new();
                for e in &entries {
                    let size = if e.kind == "dir" { "-".to_string() } else { human_bytes(e.bytes) };
                    let slash = if e.kind == "dir" { "/" } else { "" };
                    s.push_str(&format!("{:<5} {:>9}  {}{slash}\n", e.kind, size, e.name));
                }
                write_stdout(&s)?;
                let q = state.quota();
                eprintln!(
                    "{} of {} used, {} of {} files and directories (data/ and skills/ together)",
                    human_bytes(used.bytes),
                    human_bytes(q.max_bytes),
                    used.entries,
                    q.max_files
                );
            }
        }
        StateCommand::Show(args) => match state.show(&args.name).map_err(fail)? {
            Some((Kind::Key, bytes)) => {
                let text = String::from_utf8_lossy(&bytes);
                let pretty = serde_json::from_str::<serde_json::Value>(&text)
                    .ok()
                    .and_then(|v| serde_json::to_string_pretty(&v).ok())
                    .unwrap_or_else(|| text.into_owned());
                write_stdout(&format!("{pretty}\n"))?;
            }
            Some((_, bytes)) => {
                let mut text = String::from_utf8_lossy(&bytes).into_owned();
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                write_stdout(&text)?;
            }
            None => return Err(not_found(&state, &args.name)),
        },
        StateCommand::Rm(args) => {
            if args.all {
                let had = state.clear().map_err(fail)?;
                eprintln!("{}", if had { "removed everything under data/" } else { "data/ was already empty" });
            } else if let Some(name) = &args.name {
                match state.remove(name).map_err(fail)? {
                    Some(Kind::Key) => eprintln!("removed key {name}"),
                    Some(Kind::File) => eprintln!("removed data/{name}"),
                    Some(Kind::Directory) => eprintln!("removed data/{name}/ and what it held"),
                    None => return Err(not_found(&state, name)),
                }
            }
        }
    }
    Ok(EXIT_OK)
}

fn not_found(state: &State, name: &str) -> anyhow::Error {
    let names: Vec<String> = state
        .entries()
        .unwrap_or_default()
        .into_iter()
        .filter(|e| matches!(e.kind, "key" | "file"))
        .map(|e| e.name)
        .collect();
    usage(format!(
        "no key or file named `{name}` in data/{}",
        did_you_mean(&suggest(name, names.iter().map(String::as_str)))
    ))
}
