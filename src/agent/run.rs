//! One `agent run`: the mode chosen (`direct`, `code`, `progressive`, or `auto`, which starts the
//! servers and picks by the size of their tool definitions), the servers and the tools set up
//! for it, and the loop (`session::run`) over them. The CLI parses the flags, races signals and
//! prints; everything between is here.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::code;
use super::code_host::CodeHost;
use super::direct::{DirectHost, ToolMap};
use super::progressive::{self, ProgressiveHost};
use super::provider::LlmProvider;
use super::session::{self, Observer, Settings, ToolHost, Transcript};
use super::tokens;
use crate::codemode::tool::LimitsText;
use crate::codemode::{CodeMode, Options};
use crate::config::{Config, ConfigError, ExecutionMode};
use crate::handler::HandlerRunner;
use crate::learn::Recorder;
use crate::mcp::McpManager;

/// What one run works with, handed to each step (all borrowed; `Copy`, so a step can swap the
/// config, as `auto` does).
#[derive(Clone, Copy)]
pub struct Run<'a> {
    pub config: &'a Config,
    pub task: &'a str,
    /// The servers the run uses (the `--server` selection, or every enabled one).
    pub servers: &'a [String],
    pub manager: &'a Arc<McpManager>,
    pub llm: &'a dyn LlmProvider,
    /// Told what happens (streamed text, tool calls, notes such as the `auto` choice).
    pub observer: &'a dyn Observer,
    /// Cancelling it ends the set-up (the run returns `None`) or the loop (which returns what it has).
    pub cancel: &'a CancellationToken,
    /// Ask for streamed responses.
    pub stream: bool,
    pub recorder: &'a Option<Arc<Recorder>>,
}

impl Run<'_> {
    /// Sets up the chosen mode and runs the loop; `None` when interrupted before the loop
    /// started. In `auto` mode the servers start first, the choice lands in `auto`, and the run
    /// goes on in the mode chosen (its transcript names that mode).
    pub async fn drive(self, auto: &mut Option<tokens::AutoChoice>) -> anyhow::Result<Option<Transcript>> {
        let config = self.config;
        if config.mcp.execution_mode == ExecutionMode::Code {
            return self.code().await;
        }
        let started = tokio::select! {
            s = self.manager.start_servers(self.servers) => s,
            _ = self.cancel.cancelled() => return Ok(None),
        };
        warn_failed(&started.failed);
        match config.mcp.execution_mode {
            ExecutionMode::Auto => {
                let choice = tokens::AutoChoice::for_tools(
                    &started.tools,
                    config.llm.provider,
                    config.mcp.auto_threshold_tokens,
                    config.mcp.result_handlers.enabled,
                );
                self.observer.note(&format!("mode: {} ({})", choice.mode, choice.reason()));
                *auto = Some(choice);
                let mut chosen = config.clone();
                chosen.mcp.execution_mode = choice.mode;
                let run = Run { config: &chosen, ..self };
                if choice.mode == ExecutionMode::Code {
                    return run.code().await;
                }
                run.direct(&started.tools).await
            }
            ExecutionMode::Progressive => self.progressive(&started).await,
            _ => self.direct(&started.tools).await,
        }
    }

    /// Direct mode over the tools of the servers that started.
    async fn direct(self, tools: &[crate::mcp::ToolInfo]) -> anyhow::Result<Option<Transcript>> {
        let config = self.config;
        let mut map = ToolMap::build(tools, tokens::flavor(config.llm.provider));
        let handlers = config.mcp.result_handlers.enabled;
        if handlers {
            map = map.with_result_handlers();
        }
        for t in &map.tools {
            for note in &t.adaptations {
                tracing::info!("{}.{} → {}: {note}", t.server, t.tool, t.llm_name);
            }
        }
        let mut host = DirectHost::new(self.manager.clone(), map, config.agent.max_tool_result_bytes);
        let mut prompt = direct_system_prompt(self.servers);
        if handlers {
            host = host.with_result_handlers(HandlerRunner::from_config(config, Some(self.manager.clone()))?);
            prompt.push_str(crate::handler::PROMPT);
        }
        let transcript = self.run_loop(prompt, &host).await;
        host.stop().await;
        Ok(Some(transcript))
    }

    /// Progressive mode: `search_tools` + `call_tool`, plus the pinned tools.
    async fn progressive(self, started: &crate::mcp::Started) -> anyhow::Result<Option<Transcript>> {
        let config = self.config;
        let (pins, warnings) = progressive::resolve_pins(&config.mcp.pinned_tools, &started.tools);
        for w in warnings {
            tracing::warn!("{w}");
        }
        let pinned = ToolMap::build(&pins, tokens::flavor(config.llm.provider));
        let pinned_names: Vec<String> = pinned.names().map(String::from).collect();
        let prompt = progressive::system_prompt(&started.ok, started.tools.len(), &pinned_names);
        let host =
            ProgressiveHost::new(self.manager.clone(), started.ok.clone(), pinned, config.agent.max_tool_result_bytes);
        Ok(Some(self.run_loop(prompt, &host).await))
    }

    /// Code mode: its own [`CodeMode`] for the run, stopped at the end.
    async fn code(self) -> anyhow::Result<Option<Transcript>> {
        let mut code = CodeMode::new(self.manager.clone(), Options::from_config(self.config)?);
        code.set_recorder(self.recorder.clone());
        let transcript = self.code_mode(&mut code).await;
        code.stop().await;
        transcript
    }

    /// Code mode: the tree refreshed for the servers that start, the bridge, then the loop.
    async fn code_mode(self, code: &mut CodeMode) -> anyhow::Result<Option<Transcript>> {
        let config = self.config;
        let workspace = code.workspace().to_path_buf();
        if let Some(why) = code.typecheck_notice() {
            tracing::warn!("{why}");
        }
        let tree_tools = if config.mcp.code_execution.regenerate_on_startup {
            let prepared = tokio::select! {
                p = code.prepare(self.servers, false) => p?,
                _ = self.cancel.cancelled() => return Ok(None),
            };
            warn_failed(&prepared.failed);
            if let Some(report) = &prepared.regenerated {
                self.observer.note(&format!(
                    "generated the TypeScript API in {} ({} tools, {} files written)",
                    workspace.display(),
                    report.tools,
                    report.files_written
                ));
            }
            code.tree_tools().unwrap_or(prepared.tools)
        } else {
            code.tree_tools().ok_or_else(|| {
                ConfigError(format!(
                    "no generated API in {}: run `agent mcp generate` first, or set \
                     mcp.code_execution.regenerate_on_startup: true",
                    workspace.display()
                ))
            })?
        };
        // The servers the model is told about: the selected ones that the tree has.
        let listed: Vec<String> =
            self.servers.iter().filter(|s| tree_tools.iter().any(|t| &t.server == *s)).cloned().collect();
        let entries = crate::codegen::server_entries(&listed, &tree_tools);
        code.start_bridge().await?;
        let specs = code::tool_specs(&LimitsText::from_config(&config.mcp.code_execution));
        let host = CodeHost::new(specs, code);
        Ok(Some(self.run_loop(code::system_prompt(&workspace, &entries), &host).await))
    }

    /// The loop over `host`, with `prompt` (+ `agent.system_prompt`) as the system prompt.
    async fn run_loop(self, prompt: String, host: &dyn ToolHost) -> Transcript {
        let config = self.config;
        let settings = Settings {
            model: config.llm.model.clone(),
            system: with_extra(prompt, extra_prompt(config)),
            max_turns: config.agent.max_turns,
            max_tokens: config.llm.max_tokens,
            stream: self.stream,
            mode: config.mcp.execution_mode.to_string(),
        };
        session::run(self.task, &settings, self.llm, host, self.observer, self.cancel).await
    }
}

/// Says which servers failed to start; the run goes on without them.
fn warn_failed(failed: &[(String, crate::mcp::McpError)]) {
    for (name, e) in failed {
        tracing::warn!("{e} (continuing without `{name}`)");
    }
}

fn extra_prompt(config: &Config) -> Option<&str> {
    config.agent.system_prompt.as_deref().filter(|s| !s.trim().is_empty())
}

fn with_extra(base: String, extra: Option<&str>) -> String {
    match extra {
        Some(x) => format!("{base}\n{}\n", x.trim()),
        None => base,
    }
}

/// The built-in system prompt of direct mode.
pub fn direct_system_prompt(servers: &[String]) -> String {
    let list = if servers.is_empty() { "none are configured".to_string() } else { servers.join(", ") };
    format!(
        "You complete the user's task with tools. The tools named mcp_<server>_<tool> call MCP servers ({list}). \
         Call tools when they help (independent calls can go in one turn), and when you are done, give the final \
         answer as plain text without calling a tool.\n"
    )
}
