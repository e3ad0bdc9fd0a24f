//! `agent run`.
use clap::Args;

pub const AFTER_HELP: &str = "";

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The task, in words.
    pub task: String,
}

pub async fn run(_ctx: super::Context, _args: &RunArgs) -> anyhow::Result<u8> {
    Err(super::usage("`agent run` is not built yet"))
}
