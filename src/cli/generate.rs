//! `agent mcp generate`.
use clap::Args;
use std::path::PathBuf;

pub const AFTER_HELP: &str = "";

#[derive(Debug, Args)]
pub struct GenerateArgs {
    #[command(flatten)]
    pub filter: super::ServerFilter,
    /// Remove generated files (only files carrying the generated-by-agent header) before writing.
    #[arg(long)]
    pub clean: bool,
    /// Output directory (default: mcp.code_execution.workspace_dir).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Generate from a saved tools list instead of connecting to servers.
    #[arg(long, value_name = "FILE")]
    pub from_tools: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(_ctx: super::Context, _args: &GenerateArgs) -> anyhow::Result<u8> {
    Err(super::usage("`agent mcp generate` is not built yet"))
}
