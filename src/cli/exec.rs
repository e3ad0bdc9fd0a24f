//! `agent exec`.
use clap::Args;

pub const AFTER_HELP: &str = "";

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The TypeScript file to run, or `-` to read it from stdin.
    pub file: String,
    /// Wall-clock limit (humantime: 30s, 2m; a bare number means seconds).
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Heap limit (e.g. 256MB; a bare number means MB).
    #[arg(long, value_name = "SIZE")]
    pub memory_limit: Option<String>,
    /// Output cap for stdout+stderr (e.g. 100KB; a bare number means bytes).
    #[arg(long, value_name = "SIZE")]
    pub max_output: Option<String>,
    /// Print the whole result as one JSON object.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(_ctx: super::Context, _args: &ExecArgs) -> anyhow::Result<u8> {
    Err(super::usage("`agent exec` is not built yet"))
}
