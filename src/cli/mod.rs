//! Command-line interface: argument parsing (clap), exit codes and error printing. One module per
//! command; they parse, race the work against signals and print, and leave the work to `mcp`,
//! `codegen`, `codemode`, `agent` and `serve`. Every command that starts servers runs inside a
//! [`session::Session`] (the lifecycle in one right order).
//!
//! Exit codes (documented in `--help` and README): 0 success, 1 the tool or script reported an
//! error or the call failed, 2 usage or configuration error, 3 a server needs sign-in.

pub mod approve;
pub mod auth;
pub mod call;
pub mod completions;
pub mod doctor;
pub mod examples;
pub mod exec;
pub mod generate;
pub mod host;
pub mod list;
pub mod log;
pub mod manage;
pub mod output;
pub mod prompt;
pub mod resources;
pub mod run;
pub mod search;
pub mod serve;
pub mod server_prompts;
pub mod session;
pub mod signal;
pub mod skill;
pub mod state;
pub mod trust;
pub mod types;

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};

use crate::config::{Config, ConfigError, LoadOptions, WorkspaceKind};
use crate::mcp::McpManager;

/// Exit code: success.
pub const EXIT_OK: u8 = 0;
/// Exit code: the tool or script reported an error, a limit was hit, or the call failed.
pub const EXIT_FAILURE: u8 = 1;
/// Exit code: usage or configuration error.
pub const EXIT_USAGE: u8 = 2;

/// Exit code: a server needs sign-in (`agent mcp login SERVER`), or more scopes than granted.
pub const EXIT_SIGN_IN: u8 = 3;

/// An error in how `agent` was invoked or configured (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Shorthand for returning a usage error.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

const EXIT_CODES_HELP: &str = "\
Exit codes:
  0    success
  1    the tool or script reported an error, a limit was hit, or the call failed
  2    usage or configuration error
  3    a server needs sign-in: run `agent mcp login SERVER`
  130  interrupted (Ctrl-C); 143 on SIGTERM, 129 on SIGHUP (servers are stopped first)";

#[derive(Debug, Parser)]
#[command(
    name = "agent",
    version,
    about = "An MCP agent harness: call MCP tools directly or through generated TypeScript (code mode)",
    long_about = "An MCP agent harness. It connects to the MCP servers in your configuration and lets a \
model use their tools either directly (one LLM tool per MCP tool) or in code mode, where the model \
writes TypeScript against a generated API and only what the script prints reaches the model.\n\n\
Configuration: ~/.config/agent/config.yaml, then the project's agent.yaml (or --config / \
AGENT_CONFIG), then AGENT_<SECTION>__<KEY> environment variables, then flags. The project root is \
the first directory up from the current one holding agent.yaml, agent.yml or .mcp.json; its \
`.mcp.json` (Claude/Cursor format) is imported too, unless --config names a file. A project's own \
servers start only once trusted (asked on a terminal, or --trust-project). See config.sample.yaml.",
    after_help = EXIT_CODES_HELP
)]
pub struct Cli {
    /// Configuration file to use instead of ./agent.yaml (also AGENT_CONFIG).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// More logging on stderr, one `level: message` line per event (-v info, -vv debug with
    /// time and module); RUST_LOG overrides; colour only on a terminal, never with NO_COLOR.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Use this project's own agent.yaml / .mcp.json (its servers and guarded settings such as
    /// llm.base_url) without asking (also AGENT_TRUST_PROJECT=1); see `trusted_projects` in
    /// config.sample.yaml.
    #[arg(long, global = true)]
    pub trust_project: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inspect and call MCP tools, generate the TypeScript API.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Run a TypeScript file in the code-mode sandbox (no LLM involved).
    #[command(after_help = exec::AFTER_HELP)]
    Exec(exec::ExecArgs),
    /// Work on a task with an LLM and the configured MCP servers.
    #[command(after_help = run::AFTER_HELP)]
    Run(run::RunArgs),
    /// What scripts kept under <workspace>/data/ (store/load keys, files).
    #[command(subcommand, after_help = state::AFTER_HELP)]
    State(state::StateCommand),
    /// Reusable TypeScript modules under <workspace>/skills/.
    #[command(subcommand, after_help = skill::AFTER_HELP)]
    Skill(skill::SkillCommand),
    /// Check the setup: config files, servers, sign-in, Node/tsc, directories, LLM endpoint.
    #[command(after_help = doctor::AFTER_HELP)]
    Doctor(doctor::DoctorArgs),
    /// Print the shell completion script (bash, zsh or fish) to stdout.
    #[command(after_help = completions::AFTER_HELP)]
    Completions(completions::CompletionsArgs),
    /// Server or tool names for the completion scripts (no server started).
    #[command(name = "__complete", hide = true)]
    Complete(completions::CompleteArgs),
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// List the tools of the configured MCP servers.
    #[command(after_help = list::AFTER_HELP)]
    List(list::ListArgs),
    /// Call one MCP tool and print its result.
    #[command(after_help = call::AFTER_HELP)]
    Call(call::CallArgs),
    /// List the resources and resource templates of the configured MCP servers.
    #[command(after_help = resources::RESOURCES_AFTER_HELP)]
    Resources(resources::ResourcesArgs),
    /// Read one resource: text printed, binary written with --output or summarised.
    #[command(after_help = resources::READ_AFTER_HELP)]
    Read(resources::ReadArgs),
    /// List the prompts of the configured MCP servers, with their arguments.
    #[command(after_help = server_prompts::PROMPTS_AFTER_HELP)]
    Prompts(server_prompts::PromptsArgs),
    /// Get one prompt's messages, with its arguments filled in.
    #[command(after_help = server_prompts::PROMPT_AFTER_HELP)]
    Prompt(server_prompts::PromptArgs),
    /// Complete an argument of a prompt or a resource template (the server's suggestions).
    #[command(after_help = server_prompts::COMPLETE_AFTER_HELP)]
    Complete(server_prompts::CompleteArgs),
    /// Write the TypeScript API tree for the configured MCP tools.
    #[command(after_help = generate::AFTER_HELP)]
    Generate(generate::GenerateArgs),
    /// Find the tools that fit a task, best first.
    #[command(after_help = search::AFTER_HELP)]
    Search(search::SearchArgs),
    /// Have the model write example queries per tool, cached to steer searches.
    #[command(after_help = examples::AFTER_HELP)]
    Examples(examples::ExamplesArgs),
    /// Report (or discover, or reset) the learned output types of MCP tools.
    #[command(after_help = types::AFTER_HELP)]
    Types(types::TypesArgs),
    /// Be an MCP server: the configured servers' tools, code mode and search for any MCP client.
    #[command(after_help = serve::AFTER_HELP)]
    Serve(serve::ServeArgs),
    /// Sign in to an HTTP server with OAuth (opens the browser; tokens kept for later runs).
    #[command(after_help = auth::LOGIN_AFTER_HELP)]
    Login(auth::LoginArgs),
    /// Remove the stored sign-in of a server.
    Logout(auth::LogoutArgs),
    /// Sign-in state of the HTTP servers.
    #[command(subcommand)]
    Auth(auth::AuthCommand),
    /// Add a server to .mcp.json (or --scope user): `add NAME -- COMMAND [ARGS...]`, `add -t http NAME URL`.
    #[command(after_help = manage::ADD_AFTER_HELP)]
    Add(manage::AddArgs),
    /// Add a server from one mcpServers JSON entry.
    #[command(name = "add-json", after_help = manage::ADD_JSON_AFTER_HELP)]
    AddJson(manage::AddJsonArgs),
    /// Show one server's configuration and where it comes from (secrets masked).
    #[command(after_help = manage::GET_AFTER_HELP)]
    Get(manage::GetArgs),
    /// Remove a server from .mcp.json or ~/.config/agent/mcp.json.
    #[command(after_help = manage::REMOVE_AFTER_HELP)]
    Remove(manage::NameArgs),
    /// Turn a server back on (removes its `"disabled": true`).
    #[command(after_help = manage::TOGGLE_AFTER_HELP)]
    Enable(manage::NameArgs),
    /// Turn a server off without removing it (`"disabled": true` in its entry).
    #[command(after_help = manage::TOGGLE_AFTER_HELP)]
    Disable(manage::NameArgs),
}

/// Options shared by commands that start servers.
#[derive(Debug, Clone, Args, Default)]
pub struct ServerFilter {
    /// Only this server (repeatable).
    #[arg(long = "server", short = 's', value_name = "SERVER")]
    pub servers: Vec<String>,
}

/// What every command gets: the loaded configuration, global flags, and the termination
/// signals to race its work against.
pub struct Context {
    pub config: Config,
    pub verbose: u8,
    pub signals: signal::Signals,
}

impl Context {
    /// Loads the configuration (see [`Config::load`]), applies `--trust-project`, says at `-v`
    /// which files were read, and creates a per-user workspace (`0700`).
    pub fn load(cli: &Cli, signals: signal::Signals) -> Result<Context, ConfigError> {
        let opts = LoadOptions { config_file: cli.config.clone(), ..Default::default() };
        let mut config = Config::load(&opts)?;
        config.project.trusted_by_flag =
            cli.trust_project || std::env::var("AGENT_TRUST_PROJECT").is_ok_and(|v| v == "1");
        for source in &config.sources {
            tracing::info!("config: {} ({})", source.path.display(), source.kind.as_str());
        }
        let workspace = &config.mcp.code_execution.workspace_dir;
        if config.project.workspace == WorkspaceKind::User {
            tracing::info!("workspace: {} (per user: the project has no agent.yaml)", workspace.display());
            if let Err(e) = crate::util::fs::private_dir(workspace, true) {
                tracing::warn!("cannot create the workspace {}: {e}", workspace.display());
            }
        } else {
            tracing::info!("workspace: {}", workspace.display());
        }
        Ok(Context { config, verbose: cli.verbose, signals })
    }
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

/// Parses arguments, runs the command, prints errors, and returns the process exit code.
pub fn main() -> u8 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
            let _ = e.print();
            return code;
        }
    };
    log::init(cli.verbose);
    // Needs no configuration and no runtime: a broken agent.yaml must not break completion.
    let completion = match &cli.command {
        Command::Completions(args) => Some(completions::run(args)),
        Command::Complete(args) => Some(completions::names(cli.config.clone(), args)),
        _ => None,
    };
    if let Some(result) = completion {
        return finish(result);
    }
    // Editing an mcpServers file needs no configuration either: a broken agent.yaml must not
    // stop anyone from fixing their servers.
    let edited = match &cli.command {
        Command::Mcp(McpCommand::Add(args)) => Some(manage::add(args)),
        Command::Mcp(McpCommand::AddJson(args)) => Some(manage::add_json(args)),
        Command::Mcp(McpCommand::Remove(args)) => Some(manage::remove(args)),
        Command::Mcp(McpCommand::Enable(args)) => Some(manage::toggle(args, false)),
        Command::Mcp(McpCommand::Disable(args)) => Some(manage::toggle(args, true)),
        _ => None,
    };
    if let Some(result) = edited {
        return finish(result);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return EXIT_FAILURE;
        }
    };
    let result = runtime.block_on(async {
        // Before anything starts a server: a signal must never take the default action.
        let signals = signal::Signals::install().context("cannot install the signal handlers")?;
        let ctx = Context::load(&cli, signals)?;
        dispatch(&cli, ctx).await
    });
    // Child processes are killed by the manager's shutdown; don't wait on stray blocking tasks.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    finish(result)
}

/// The exit code of a command's outcome, its error printed as one line.
fn finish(result: anyhow::Result<u8>) -> u8 {
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", output::error_chain(&err));
            exit_code_for(&err)
        }
    }
}

async fn dispatch(cli: &Cli, ctx: Context) -> anyhow::Result<u8> {
    match &cli.command {
        Command::Mcp(McpCommand::List(args)) => list::run(ctx, args).await,
        Command::Mcp(McpCommand::Call(args)) => call::run(ctx, args).await,
        Command::Mcp(McpCommand::Resources(args)) => resources::run_resources(ctx, args).await,
        Command::Mcp(McpCommand::Read(args)) => resources::run_read(ctx, args).await,
        Command::Mcp(McpCommand::Prompts(args)) => server_prompts::run_prompts(ctx, args).await,
        Command::Mcp(McpCommand::Prompt(args)) => server_prompts::run_prompt(ctx, args).await,
        Command::Mcp(McpCommand::Complete(args)) => server_prompts::run_complete(ctx, args).await,
        Command::Mcp(McpCommand::Generate(args)) => generate::run(ctx, args).await,
        Command::Mcp(McpCommand::Search(args)) => search::run(ctx, args).await,
        Command::Mcp(McpCommand::Examples(args)) => examples::run(ctx, args).await,
        Command::Mcp(McpCommand::Types(args)) => types::run(ctx, args).await,
        Command::Mcp(McpCommand::Serve(args)) => serve::run(ctx, args).await,
        Command::Mcp(McpCommand::Login(args)) => auth::login(ctx, args).await,
        Command::Mcp(McpCommand::Logout(args)) => auth::logout(ctx, args).await,
        Command::Mcp(McpCommand::Auth(cmd)) => auth::run(ctx, cmd).await,
        Command::Mcp(McpCommand::Get(args)) => manage::get(&ctx.config, args),
        Command::Mcp(McpCommand::Add(args)) => manage::add(args),
        Command::Mcp(McpCommand::AddJson(args)) => manage::add_json(args),
        Command::Mcp(McpCommand::Remove(args)) => manage::remove(args),
        Command::Mcp(McpCommand::Enable(args)) => manage::toggle(args, false),
        Command::Mcp(McpCommand::Disable(args)) => manage::toggle(args, true),
        Command::Exec(args) => exec::run(ctx, args).await,
        Command::Run(args) => run::run(ctx, args).await,
        Command::State(cmd) => state::run(ctx, cmd).await,
        Command::Skill(cmd) => skill::run(ctx, cmd).await,
        Command::Doctor(args) => doctor::run(ctx, args).await,
        Command::Completions(args) => completions::run(args),
        Command::Complete(args) => completions::names(cli.config.clone(), args),
    }
}

/// 2 for usage and configuration errors, 3 for a server that needs sign-in, 1 for everything else.
pub fn exit_code_for(err: &anyhow::Error) -> u8 {
    if err.chain().any(|e| e.is::<UsageError>() || e.is::<ConfigError>()) {
        EXIT_USAGE
    } else if err.chain().any(|e| matches!(e.downcast_ref(), Some(crate::mcp::McpError::NeedsSignIn { .. }))) {
        EXIT_SIGN_IN
    } else {
        EXIT_FAILURE
    }
}
