//! One `agent run`: the mode chosen (`direct`, `code`, `progressive`, or per server: `auto`
//! picks by the size of each server's tool definitions, and a server's own `mode` key wins),
//! the servers and the tools set up for it (direct, code, or both in one request), and the
//! loop (`session::run`) over them. The CLI parses the flags, races signals and
//! prints; everything between is here.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::code;
use super::code_host::CodeHost;
use super::direct::{DirectHost, ToolMap};
use super::mixed::MixedHost;
use super::progressive::{self, ProgressiveHost};
use super::provider::LlmProvider;
use super::resources::{ResourceTools, WithResources};
use super::session::{self, Observer, Settings, ToolHost, Transcript};
use super::tokens;
use crate::codemode::tool::LimitsText;
use crate::codemode::{CodeMode, Options};
use crate::config::{Config, ConfigError, ExecutionMode, ServerMode};
use crate::handler::HandlerRunner;
use crate::learn::Recorder;
use crate::mcp::McpManager;

/// What one run works with, handed to each step (all borrowed; `Copy`, so a step can narrow
/// the servers, as a run decided per server does).
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
    /// started. When the run is `auto` or a selected server has its own `mode`, the servers
    /// start first, each gets its mode (`plan`, also told to the observer, one line each), and
    /// the run goes on in direct mode, code mode, or both at once (its transcript says `direct`,
    /// `code` or `mixed`).
    pub async fn drive(self, plan: &mut Option<tokens::ModePlan>) -> anyhow::Result<Option<Transcript>> {
        let config = self.config;
        let run_mode = config.mcp.execution_mode;
        if run_mode == ExecutionMode::Progressive {
            for s in self.servers.iter().filter(|s| self.server_mode(s).is_some()) {
                tracing::warn!(
                    "mcp.servers.{s}.mode is not used in progressive mode (search_tools reaches every server)"
                );
            }
        } else if run_mode == ExecutionMode::Code && !self.per_server() {
            return self.code("code").await;
        }
        let started = tokio::select! {
            s = self.manager.start_servers(self.servers) => s,
            _ = self.cancel.cancelled() => return Ok(None),
        };
        warn_failed(&started.failed);
        if run_mode == ExecutionMode::Progressive {
            return self.progressive(&started).await;
        }
        if !self.per_server() {
            return self.direct(&started.tools, "direct").await;
        }
        let chosen = tokens::ModePlan::for_run(config, run_mode, &started.ok, &started.tools);
        let direct_servers = chosen.servers_in(ExecutionMode::Direct);
        let code_servers = chosen.servers_in(ExecutionMode::Code);
        let mode = match (direct_servers.is_empty(), code_servers.is_empty()) {
            (false, false) => "mixed",
            (_, true) => "direct",
            (true, false) => "code",
        };
        self.observer.note(&format!("mode: {mode}"));
        for c in &chosen.servers {
            self.observer.note(&chosen.line(c));
        }
        *plan = Some(chosen);
        let direct_tools: Vec<_> =
            started.tools.iter().filter(|t| direct_servers.contains(&t.server)).cloned().collect();
        match mode {
            "code" => Run { servers: &code_servers, ..self }.code(mode).await,
            "mixed" => self.mixed(&direct_servers, &direct_tools, &code_servers).await,
            _ => Run { servers: &direct_servers, ..self }.direct(&direct_tools, mode).await,
        }
    }

    /// The `mode` key of `server`, if it has one.
    fn server_mode(&self, server: &str) -> Option<ServerMode> {
        self.config.mcp.servers.get(server).and_then(|c| c.mode)
    }

    /// Whether modes are decided per server: the run is `auto`, or a selected server has a `mode`.
    fn per_server(&self) -> bool {
        self.config.mcp.execution_mode == ExecutionMode::Auto
            || self.servers.iter().any(|s| self.server_mode(s).is_some())
    }

    /// The direct tools of `tools` as a host (with result handlers when enabled), and the
    /// prompt text that explains them.
    fn direct_host(self, tools: &[crate::mcp::ToolInfo]) -> anyhow::Result<(DirectHost, bool)> {
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
        if handlers {
            host = host.with_result_handlers(HandlerRunner::from_config(config, Some(self.manager.clone()))?);
        }
        Ok((host, handlers))
    }

    /// Both at once: the tools of `direct_servers` as LLM tools, `code_servers` behind
    /// `code_execution` (the tree refreshed and the prompt written for them only).
    async fn mixed(
        self,
        direct_servers: &[String],
        direct_tools: &[crate::mcp::ToolInfo],
        code_servers: &[String],
    ) -> anyhow::Result<Option<Transcript>> {
        let (direct, handlers) = self.direct_host(direct_tools)?;
        let resources = self.resource_tools(direct_servers).await;
        let code_run = Run { servers: code_servers, ..self };
        let mut code = CodeMode::new(self.manager.clone(), Options::for_run(self.config)?);
        code.set_recorder(self.recorder.clone());
        let transcript = match code_run.code_setup(&mut code).await {
            Ok(Some((prompt, specs))) => {
                let mut prompt = format!("{prompt}{}", mixed_prompt_extra(direct_servers));
                add_resources_line(&mut prompt, &resources);
                if handlers {
                    prompt.push_str(crate::handler::PROMPT);
                }
                let host = WithResources::new(MixedHost::new(direct, CodeHost::new(specs, &code)), resources);
                let transcript = self.run_loop(prompt, &host, "mixed").await;
                host.into_inner().stop().await;
                Ok(Some(transcript))
            }
            other => {
                direct.stop().await;
                other.map(|_| None)
            }
        };
        code.stop().await;
        transcript
    }

    /// Direct mode over the tools of the servers that started.
    async fn direct(self, tools: &[crate::mcp::ToolInfo], mode: &str) -> anyhow::Result<Option<Transcript>> {
        let (host, handlers) = self.direct_host(tools)?;
        let resources = self.resource_tools(self.servers).await;
        let mut prompt = direct_system_prompt(self.servers);
        add_resources_line(&mut prompt, &resources);
        if handlers {
            prompt.push_str(crate::handler::PROMPT);
        }
        let host = WithResources::new(host, resources);
        let transcript = self.run_loop(prompt, &host, mode).await;
        host.into_inner().stop().await;
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
        let mut prompt = progressive::system_prompt(&started.ok, started.tools.len(), &pinned_names);
        let resources = self.resource_tools(&started.ok).await;
        add_resources_line(&mut prompt, &resources);
        let host =
            ProgressiveHost::new(self.manager.clone(), started.ok.clone(), pinned, config.agent.max_tool_result_bytes);
        let host = WithResources::new(host, resources);
        Ok(Some(self.run_loop(prompt, &host, "progressive").await))
    }

    /// `list_resources` / `read_resource` when a running server among `servers` offers resources.
    async fn resource_tools(&self, servers: &[String]) -> Option<ResourceTools> {
        ResourceTools::discover(self.manager, servers, self.config.agent.max_tool_result_bytes).await
    }

    /// Code mode: its own [`CodeMode`] for the run, stopped at the end.
    async fn code(self, mode: &str) -> anyhow::Result<Option<Transcript>> {
        let mut code = CodeMode::new(self.manager.clone(), Options::for_run(self.config)?);
        code.set_recorder(self.recorder.clone());
        let transcript = match self.code_setup(&mut code).await {
            Ok(Some((prompt, specs))) => {
                let host = CodeHost::new(specs, &code);
                Ok(Some(self.run_loop(prompt, &host, mode).await))
            }
            other => other.map(|_| None),
        };
        code.stop().await;
        transcript
    }

    /// Code mode's set-up: the tree refreshed for the servers that start, the bridge; returns
    /// the system prompt (listing the run's servers that the tree has) and the tools, or `None`
    /// when cancelled.
    async fn code_setup(
        self,
        code: &mut CodeMode,
    ) -> anyhow::Result<Option<(String, Vec<crate::agent::provider::ToolSpec>)>> {
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
        Ok(Some((code::system_prompt(&workspace, &entries), specs)))
    }

    /// The loop over `host`, with `prompt` (+ `agent.system_prompt`) as the system prompt.
    async fn run_loop(self, prompt: String, host: &dyn ToolHost, mode: &str) -> Transcript {
        let config = self.config;
        let settings = Settings {
            model: config.llm.model.clone(),
            system: with_extra(prompt, extra_prompt(config)),
            max_turns: config.agent.max_turns,
            max_tokens: config.llm.max_tokens,
            stream: self.stream,
            mode: mode.to_string(),
        };
        session::run(self.task, &settings, self.llm, host, self.observer, self.cancel).await
    }
}

/// The system prompt's sentence on the resource meta-tools, before its last newline.
fn add_resources_line(prompt: &mut String, resources: &Option<ResourceTools>) {
    if let Some(r) = resources {
        let had_newline = prompt.ends_with('\n');
        if had_newline {
            prompt.pop();
        }
        prompt.push_str(&r.prompt_line());
        if had_newline {
            prompt.push('\n');
        }
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

/// What the code-mode prompt of a mixed run adds: the servers whose tools are direct.
fn mixed_prompt_extra(direct_servers: &[String]) -> String {
    format!(
        "\nThe tools named mcp_<server>_<tool> call the MCP servers {} directly: call them as tools, not from \
         code (they are not in the API tree).\n",
        direct_servers.join(", ")
    )
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
