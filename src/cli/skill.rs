//! `agent skill add|ls|show|rm`: the reusable modules in `<workspace>/skills/` (the format is
//! `crate::skills`; adding checks the source with the runtime's transpiler, as `saveSkill` does).
//! Adding or removing a skill re-renders the tree's README, which lists them.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Args, Subcommand};

use super::output::write_stdout;
use super::{Context, EXIT_OK, usage};
use crate::codegen;
use crate::skills::{self, MAX_SKILL_BYTES};
use crate::util::suggest::{did_you_mean, suggest};

pub const AFTER_HELP: &str = "\
Skills are TypeScript modules in <workspace>/skills/<name>.ts (workspace: mcp.code_execution.
workspace_dir; by default the project's .kodelet/mcp, or a per-user one: at -v agent names it; docs/state.md) that later scripts import, e.g.
  import { weeklyReport } from \"./skills/weekly-report.ts\";
Scripts save them with saveSkill(name, source, description); `agent skill add` does the same
from a file. Names are kebab-case (weekly-report); a skill that does not transpile is refused.
The description is kept as the file's leading /** ... */ comment; the tree's README lists the
skills and `agent mcp search` finds them (as server `skills`).

Examples:
  agent skill add weekly-report.ts --description \"Totals of the last 7 days per label\"
  agent skill add helpers.ts --name issue-helpers
  agent skill ls --json
  agent skill show weekly-report
  agent skill rm weekly-report

JSON output of ls (--json): an array of
  {\"name\", \"description\", \"file\": \"skills/<name>.ts\", \"exports\": [...], \"bytes\"}.";

#[derive(Debug, Subcommand)]
pub enum SkillCommand {
    /// Save a TypeScript file as a skill.
    Add(AddArgs),
    /// List the skills.
    Ls(LsArgs),
    /// Print a skill's source.
    Show(NameArg),
    /// Remove a skill.
    Rm(NameArg),
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The TypeScript file.
    pub file: PathBuf,
    /// The skill's name (default: the file name without `.ts`).
    #[arg(long, short = 'n')]
    pub name: Option<String>,
    /// What the skill does (kept as the leading doc comment).
    #[arg(long, short = 'd', default_value = "")]
    pub description: String,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    /// Print a JSON array.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct NameArg {
    pub name: String,
}

pub async fn run(ctx: Context, cmd: &SkillCommand) -> anyhow::Result<u8> {
    let state = super::state::state_of(&ctx)?;
    let workspace = state.workspace().to_path_buf();
    match cmd {
        SkillCommand::Add(args) => {
            let name = match &args.name {
                Some(n) => n.clone(),
                None => {
                    let stem = args.file.file_name().and_then(|n| n.to_str()).unwrap_or("");
                    stem.strip_suffix(".ts").or_else(|| stem.strip_suffix(".mts")).unwrap_or(stem).to_string()
                }
            };
            skills::validate_name(&name)
                .map_err(|e| usage(if args.name.is_none() { format!("{e} (or pass --name)") } else { e }))?;
            let source = crate::util::read::read_text_file(&args.file, MAX_SKILL_BYTES)
                .map_err(|e| usage(e.message(&args.file.display().to_string())))?;
            let replaced =
                crate::runtime::skill::save_skill(&state, &name, &source, &args.description).map_err(usage)?;
            refresh(&workspace);
            eprintln!(
                "{} skill {name}: {}",
                if replaced { "replaced" } else { "saved" },
                skills::path_of(&workspace, &name).display()
            );
        }
        SkillCommand::Ls(args) => {
            let list = skills::list(&workspace);
            if args.json {
                let mut s = serde_json::to_string_pretty(&list).context("cannot serialise the list")?;
                s.push('\n');
                write_stdout(&s)?;
            } else if list.is_empty() {
                eprintln!("no skills in {}", workspace.join(skills::SKILLS_DIR).display());
            } else {
                let width = list.iter().map(|s| s.name.len()).max().unwrap_or(0);
                let mut s = String::new();
                for k in &list {
                    let desc = k.description.lines().next().unwrap_or("");
                    s.push_str(&format!("{:<width$}  {desc}\n", k.name));
                }
                write_stdout(&s)?;
            }
        }
        SkillCommand::Show(arg) => {
            let text = skills::read(&workspace, &arg.name).map_err(|e| not_found(&workspace, &arg.name, e))?;
            write_stdout(&text)?;
        }
        SkillCommand::Rm(arg) => {
            skills::validate_name(&arg.name).map_err(usage)?;
            if !crate::runtime::skill::remove_skill(&state, &arg.name).map_err(|e| anyhow::anyhow!(e))? {
                return Err(not_found(&workspace, &arg.name, format!("no skill named `{}`", arg.name)));
            }
            refresh(&workspace);
            eprintln!("removed skill {}", arg.name);
        }
    }
    Ok(EXIT_OK)
}

fn refresh(workspace: &std::path::Path) {
    if let Err(e) = codegen::refresh_readme(workspace) {
        tracing::warn!("cannot update the skills list in the tree's README: {e:#}");
    }
}

fn not_found(workspace: &std::path::Path, name: &str, e: String) -> anyhow::Error {
    let names: Vec<String> = skills::list(workspace).into_iter().map(|s| s.name).collect();
    usage(format!("{e}{}", did_you_mean(&suggest(name, names.iter().map(String::as_str)))))
}
