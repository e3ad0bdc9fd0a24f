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
Scripts keep state in <workspace>/data/ (mcp.code_execution.workspace_dir; by default
the project's .kodelet/mcp, or a per-user one: at -v agent names it; docs/state.md): `store(key, value)` keys (in data/.store/) and files written with writeText /
writeJson. KEY_OR_PATH names a key first, else a path relative to data/. `ls` lists what is on
disk, skills/ included (one quota, mcp.code_execution.state, covers both), and counts it again.

Examples:
  agent state ls
  agent state ls --json
  agent state show weekly-totals
  agent state rm reports/old.json
  agent state rm --all --yes    # what `agent run --fresh-state` does before a run

`rm --all` asks on a terminal first (the answer defaults to no); --yes removes without asking,
and without a terminal --yes is required (else exit 2, nothing removed).

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
    /// Remove everything under data/ (asks on a terminal first).
    #[arg(long)]
    pub all: bool,
    /// With --all: remove without asking (required without a terminal).
    #[arg(long, short = 'y', requires = "all")]
    pub yes: bool,
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
                if !args.yes && !confirm_clear(&state)? {
                    eprintln!("nothing removed");
                    return Ok(super::EXIT_FAILURE);
                }
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

/// `rm --all` without `--yes`: asks on the terminal (default no) and says whether to go on; without
/// a terminal nobody can confirm, so it is a usage error that names `--yes`.
fn confirm_clear(state: &State) -> anyhow::Result<bool> {
    if !super::prompt::interactive() {
        return Err(usage(
            "`agent state rm --all` removes everything under data/ and there is no terminal to confirm it: pass --yes",
        ));
    }
    let entries = state.entries().map_err(|e| anyhow::anyhow!(e))?;
    let data: Vec<_> = entries.iter().filter(|e| e.kind != "skill").collect();
    if data.is_empty() {
        return Ok(true);
    }
    let bytes: u64 = data.iter().map(|e| e.bytes).sum();
    let question = format!(
        "remove everything under data/ ({} {}, {})?",
        data.len(),
        if data.len() == 1 { "entry" } else { "entries" },
        human_bytes(bytes)
    );
    match super::prompt::confirm(&question, false) {
        Ok(yes) => Ok(yes),
        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
            let _ = dialoguer::console::Term::stderr().show_cursor();
            eprintln!();
            Ok(false)
        }
        Err(e) => Err(anyhow::Error::new(e).context("cannot ask on the terminal")),
    }
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
