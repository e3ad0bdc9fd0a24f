//! Offline token estimates (tiktoken's `o200k_base`, embedded in the binary) of what the model
//! is sent: the tool definitions of direct mode vs the fixed code-mode tools and prompt lines vs
//! progressive mode's two tools, prompt and pinned tools, per server and in total
//! (`agent mcp list --tokens`); and [`ModePlan`], each server's mode in a run (`auto` decides
//! by these counts).
//!
//! o200k is OpenAI's tokenizer; Claude's differs, so these are estimates for choosing a mode,
//! not bills. The provider's own usage fields are the real counts.

use serde::Serialize;

use super::code::ServerEntry;
use super::direct::{SchemaFlavor, ToolMap};
use super::provider::ToolSpec;
use crate::codemode::tool::LimitsText;
use crate::config::{Config, ExecutionMode, Provider, ServerMode};
use crate::mcp::ToolInfo;

/// Tokens of `text` under o200k_base.
pub fn count(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton().encode_ordinary(text).len()
}

/// Tokens of a `tools` array as `provider` receives it in the request body.
pub fn tools_tokens(specs: &[ToolSpec], provider: Provider) -> usize {
    let json = match provider {
        Provider::Anthropic => super::anthropic::tools_json(specs),
        Provider::Openai => super::openai::tools_json(specs),
    };
    count(&json.to_string())
}

pub fn flavor(provider: Provider) -> SchemaFlavor {
    match provider {
        Provider::Anthropic => SchemaFlavor::Anthropic,
        Provider::Openai => SchemaFlavor::OpenAi,
    }
}

/// One server's share.
#[derive(Debug, Clone, Serialize)]
pub struct ServerTokens {
    pub server: String,
    pub tools: usize,
    /// Its tool definitions in direct mode.
    pub direct: usize,
    /// Its line in the code-mode system prompt.
    pub code: usize,
    /// Its pinned tools' definitions in progressive mode (`mcp.pinned_tools`).
    pub progressive: usize,
}

/// The estimate for a set of servers.
#[derive(Debug, Clone, Serialize)]
pub struct TokenEstimate {
    pub tokenizer: &'static str,
    pub provider: String,
    pub servers: Vec<ServerTokens>,
    /// Code mode's fixed cost: `code_execution` + discovery tools + the prompt around the server list.
    pub code_fixed: usize,
    pub direct_total: usize,
    pub code_total: usize,
    /// Progressive mode's fixed cost: `search_tools` + `call_tool` + its system prompt.
    pub progressive_fixed: usize,
    pub progressive_total: usize,
}

impl TokenEstimate {
    /// How much smaller code mode is, in percent (negative when it is bigger).
    pub fn saving_percent(&self) -> f64 {
        if self.direct_total == 0 {
            return 0.0;
        }
        100.0 * (1.0 - self.code_total as f64 / self.direct_total as f64)
    }

    /// How much smaller progressive mode is, in percent (negative when it is bigger).
    pub fn progressive_saving_percent(&self) -> f64 {
        if self.direct_total == 0 {
            return 0.0;
        }
        100.0 * (1.0 - self.progressive_total as f64 / self.direct_total as f64)
    }
}

/// Estimates direct vs code vs progressive mode for `tools`; `entries` are the servers as code
/// mode lists them, `pinned` the `mcp.pinned_tools` (`server.tool`; unknown ones count nothing),
/// with direct mode's optional `result_handler` argument on every tool when `result_handlers`
/// (`mcp.result_handlers.enabled`).
pub fn estimate_with(
    tools: &[ToolInfo],
    entries: &[ServerEntry],
    limits: &LimitsText,
    provider: Provider,
    pinned: &[String],
    result_handlers: bool,
) -> TokenEstimate {
    let map = ToolMap::build(tools, flavor(provider));
    let map = if result_handlers { map.with_result_handlers() } else { map };
    let code_specs = super::code::tool_specs(limits);
    let (pins, _) = super::progressive::resolve_pins(pinned, tools);
    let pin_map = ToolMap::build(&pins, flavor(provider));
    let tree = std::path::Path::new(".kodelet/mcp");
    let mut servers = Vec::new();
    for e in entries {
        let specs = specs_of(&map, &e.name);
        let direct = if specs.is_empty() { 0 } else { tools_tokens(&specs, provider) };
        let code = count(&super::code::server_line(e));
        let pinned_specs = specs_of(&pin_map, &e.name);
        let progressive = if pinned_specs.is_empty() { 0 } else { tools_tokens(&pinned_specs, provider) };
        servers.push(ServerTokens { server: e.name.clone(), tools: specs.len(), direct, code, progressive });
    }
    let direct_total = if map.specs.is_empty() { 0 } else { tools_tokens(&map.specs, provider) };
    let code_total = tools_tokens(&code_specs, provider) + count(&super::code::system_prompt(tree, entries));
    let code_fixed = code_total.saturating_sub(servers.iter().map(|s| s.code).sum());
    let names: Vec<String> = entries.iter().map(|e| e.name.clone()).collect();
    let pin_names: Vec<String> = pin_map.names().map(String::from).collect();
    let mut progressive_specs = super::progressive::tool_specs();
    progressive_specs.extend(pin_map.specs.iter().cloned());
    let progressive_total = tools_tokens(&progressive_specs, provider)
        + count(&super::progressive::system_prompt(&names, tools.len(), &pin_names));
    let progressive_fixed = progressive_total.saturating_sub(servers.iter().map(|s| s.progressive).sum());
    TokenEstimate {
        tokenizer: "o200k_base",
        provider: provider.to_string(),
        servers,
        code_fixed,
        direct_total,
        code_total,
        progressive_fixed,
        progressive_total,
    }
}

/// Tokens of the direct-mode definitions of `tools` (what `direct_total` counts).
pub fn direct_tokens(tools: &[ToolInfo], provider: Provider, result_handlers: bool) -> usize {
    let map = ToolMap::build(tools, flavor(provider));
    let map = if result_handlers { map.with_result_handlers() } else { map };
    if map.specs.is_empty() { 0 } else { tools_tokens(&map.specs, provider) }
}

/// How one server's mode was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModeSource {
    /// The run's mode (`--mode` / `mcp.execution_mode`).
    Run,
    /// The server's own `mode` key.
    Server,
    /// `auto`, by the size of its definitions.
    Auto,
}

/// One server's mode in a run, and the numbers behind it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerChoice {
    pub server: String,
    /// `direct` or `code`.
    pub mode: ExecutionMode,
    pub tools: usize,
    /// Tokens of its tools' direct-mode definitions.
    pub definition_tokens: usize,
    pub by: ModeSource,
    /// For `auto`: the run's direct definitions, this server's included when it went direct, or
    /// what they would have been when it went code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direct_tokens_with: Option<usize>,
}

/// Each server's mode for one run (`agent run`, `agent mcp list --tokens`).
///
/// Servers with their own `mode` key keep it; the others follow the run's mode. `auto` servers
/// are decided smallest first (by tokens, then name): one goes direct while the direct
/// definitions of the run, those of the `direct` servers included, stay within
/// `threshold_tokens` (`mcp.auto_threshold_tokens`), else it goes code. Small servers so cost a
/// few hundred tokens and no script; large ones cost one prompt line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModePlan {
    pub servers: Vec<ServerChoice>,
    pub threshold_tokens: usize,
    /// Tokens of the direct definitions the run sends (sum over the direct servers).
    pub direct_tokens: usize,
}

impl ModePlan {
    /// Decides for `wanted` (each started server and the mode asked for it, in order) given
    /// their `tools`; definitions counted as `provider` receives them, with the
    /// `result_handler` argument when `result_handlers` (`mcp.result_handlers.enabled`).
    pub fn decide(
        wanted: &[(String, ServerMode, ModeSource)],
        tools: &[ToolInfo],
        provider: Provider,
        threshold: usize,
        result_handlers: bool,
    ) -> ModePlan {
        let sizes = per_server_direct(tools, provider, result_handlers);
        let size = |s: &str| sizes.iter().find(|(n, _, _)| n == s).map(|(_, t, k)| (*t, *k)).unwrap_or((0, 0));
        let mut direct_tokens: usize =
            wanted.iter().filter(|(_, m, _)| *m == ServerMode::Direct).map(|(s, _, _)| size(s).1).sum();
        let mut auto: Vec<(usize, &str)> =
            wanted.iter().filter(|(_, m, _)| *m == ServerMode::Auto).map(|(s, _, _)| (size(s).1, s.as_str())).collect();
        auto.sort();
        let mut decided = std::collections::BTreeMap::new();
        for (tokens, server) in auto {
            let with = direct_tokens + tokens;
            let mode = if with <= threshold {
                direct_tokens = with;
                ExecutionMode::Direct
            } else {
                ExecutionMode::Code
            };
            decided.insert(server, (mode, with));
        }
        let servers = wanted
            .iter()
            .map(|(server, mode, by)| {
                let (tools, definition_tokens) = size(server);
                let (mode, by, direct_tokens_with) = match mode {
                    ServerMode::Direct => (ExecutionMode::Direct, *by, None),
                    ServerMode::Code => (ExecutionMode::Code, *by, None),
                    ServerMode::Auto => {
                        let (m, with) = decided.get(server.as_str()).copied().unwrap_or((ExecutionMode::Code, 0));
                        (m, ModeSource::Auto, Some(with))
                    }
                };
                ServerChoice { server: server.clone(), mode, tools, definition_tokens, by, direct_tokens_with }
            })
            .collect();
        ModePlan { servers, threshold_tokens: threshold, direct_tokens }
    }

    /// [`ModePlan::decide`] for `servers` (those that started) as a run in `run_mode` under
    /// `config` asks: each server's own `mode` key, else the run's mode.
    pub fn for_run(config: &Config, run_mode: ExecutionMode, servers: &[String], tools: &[ToolInfo]) -> ModePlan {
        let wanted: Vec<_> = servers.iter().map(|s| wanted(config, run_mode, s)).collect();
        ModePlan::decide(
            &wanted,
            tools,
            config.llm.provider,
            config.mcp.auto_threshold_tokens,
            config.mcp.result_handlers.enabled,
        )
    }

    /// The servers that went `mode`, in order.
    pub fn servers_in(&self, mode: ExecutionMode) -> Vec<String> {
        self.servers.iter().filter(|c| c.mode == mode).map(|c| c.server.clone()).collect()
    }

    /// `server github: code (117 tools, 27,921 tokens; auto: direct definitions 29,142 > 4,000)`
    pub fn line(&self, c: &ServerChoice) -> String {
        let t = |n: usize| super::session::thousands(n as u64);
        let plural = if c.tools == 1 { "" } else { "s" };
        let why = match (c.by, c.direct_tokens_with) {
            (ModeSource::Auto, Some(with)) => {
                let cmp = if c.mode == ExecutionMode::Direct { "<=" } else { ">" };
                format!("auto: direct definitions {} {cmp} {}", t(with), t(self.threshold_tokens))
            }
            (ModeSource::Server, _) => format!("mcp.servers.{}.mode", c.server),
            _ => "the run's mode".to_string(),
        };
        format!("server {}: {} ({} tool{plural}, {} tokens; {why})", c.server, c.mode, c.tools, t(c.definition_tokens))
    }
}

/// The mode asked for `server` in a run in `run_mode`, and by whom: its own key, else the run's.
fn wanted(config: &Config, run_mode: ExecutionMode, server: &str) -> (String, ServerMode, ModeSource) {
    let (mode, by) = match config.mcp.servers.get(server).and_then(|c| c.mode) {
        Some(m) => (m, ModeSource::Server),
        None => {
            let m = match run_mode {
                ExecutionMode::Code => ServerMode::Code,
                ExecutionMode::Auto => ServerMode::Auto,
                _ => ServerMode::Direct,
            };
            (m, ModeSource::Run)
        }
    };
    (server.to_string(), mode, by)
}

/// Each server's tool count and direct-definition tokens, as [`estimate_with`] counts them
/// (one [`ToolMap`] over all tools, so names are the ones the run uses).
fn per_server_direct(tools: &[ToolInfo], provider: Provider, result_handlers: bool) -> Vec<(String, usize, usize)> {
    let map = ToolMap::build(tools, flavor(provider));
    let map = if result_handlers { map.with_result_handlers() } else { map };
    let mut servers: Vec<&str> = map.tools.iter().map(|t| t.server.as_str()).collect();
    servers.dedup();
    servers
        .into_iter()
        .map(|server| {
            let specs = specs_of(&map, server);
            let tokens = if specs.is_empty() { 0 } else { tools_tokens(&specs, provider) };
            (server.to_string(), specs.len(), tokens)
        })
        .collect()
}

/// The definitions of `server`'s tools in `map`.
fn specs_of(map: &ToolMap, server: &str) -> Vec<ToolSpec> {
    map.tools.iter().zip(&map.specs).filter(|(t, _)| t.server == server).map(|(_, s)| s.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::session;
    use serde_json::json;

    #[test]
    fn counts_tokens_offline() {
        assert_eq!(count(""), 0);
        assert_eq!(count("hello world"), 2);
    }

    /// A tool with a one-line description and one parameter, as many real tools are.
    fn search_tool(server: &str, name: &str) -> ToolInfo {
        ToolInfo {
            server: server.into(),
            name: name.into(),
            title: None,
            description: Some("Search the issues of a repository by label, state and text.".into()),
            input_schema: json!({"type":"object","properties":{"q":{"type":"string","description":"query text"}}}),
            output_schema: None,
            annotations: None,
        }
    }

    #[test]
    fn direct_grows_with_tools_and_code_does_not() {
        let tool = |name: &str| search_tool("s", name);
        let limits = LimitsText {
            timeout: "30s".into(),
            memory_mb: 256,
            max_output: "100 KB".into(),
            sessions: crate::codemode::tool::Sessions::Run,
        };
        let entries = [ServerEntry {
            name: "s".into(),
            names: crate::codegen::ServerNames { dir: "s".into(), namespace: "s".into() },
            tools: 1,
        }];
        let one = estimate_with(&[tool("a")], &entries, &limits, Provider::Anthropic, &[], false);
        let many: Vec<ToolInfo> = (0..50).map(|i| tool(&format!("t{i}"))).collect();
        let fifty = estimate_with(&many, &entries, &limits, Provider::Anthropic, &[], false);
        assert!(fifty.direct_total > 40 * one.direct_total / 2, "{} vs {}", fifty.direct_total, one.direct_total);
        assert_eq!(fifty.code_total, one.code_total);
        assert_eq!(fifty.servers[0].tools, 50);
        assert_eq!(fifty.servers[0].direct, fifty.direct_total);
        assert!(fifty.servers[0].code > 0 && fifty.servers[0].code < 20);
        // Progressive mode: a fixed cost (the prompt says how many tools there are), plus pins.
        assert!(fifty.progressive_total.abs_diff(one.progressive_total) <= 2);
        assert_eq!(fifty.progressive_fixed, fifty.progressive_total);
        let pinned =
            estimate_with(&many, &entries, &limits, Provider::Anthropic, &["s.t1".into(), "s.nope".into()], false);
        assert!(pinned.servers[0].progressive > 0);
        assert_eq!(pinned.progressive_total, pinned.progressive_fixed + pinned.servers[0].progressive);
        // Direct mode's optional result_handler argument costs tokens on every tool.
        let handled = estimate_with(&many, &entries, &limits, Provider::Anthropic, &[], true);
        assert!(
            handled.direct_total > fifty.direct_total + 50 * 10,
            "{} vs {}",
            handled.direct_total,
            fifty.direct_total
        );
        assert_eq!(handled.code_total, fifty.code_total);
    }

    #[test]
    fn progressive_mode_sends_at_most_400_tokens_for_the_github_corpus() {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/github-mcp-server.json");
        let tools = crate::codegen::load_tools_file(&file, Some("github")).unwrap();
        assert!(tools.len() > 100);
        let limits = LimitsText {
            timeout: "30s".into(),
            memory_mb: 256,
            max_output: "100 KB".into(),
            sessions: crate::codemode::tool::Sessions::Run,
        };
        let entries = crate::codegen::server_entries(&["github".into()], &tools);
        for provider in [Provider::Anthropic, Provider::Openai] {
            let est = estimate_with(&tools, &entries, &limits, provider, &[], false);
            assert!(est.progressive_total <= 400, "{provider}: {} tokens", est.progressive_total);
            assert!(est.direct_total > 20 * est.progressive_total, "{provider}: {est:?}");
        }
    }

    #[test]
    fn auto_gives_small_servers_direct_mode_within_the_budget_and_keeps_configured_modes() {
        let tool = search_tool;
        let mut tools: Vec<ToolInfo> = (0..40).map(|i| tool("big", &format!("t{i}"))).collect();
        tools.extend((0..2).map(|i| tool("small", &format!("t{i}"))));
        tools.extend((0..3).map(|i| tool("mid", &format!("t{i}"))));
        tools.push(tool("pinned", "only"));
        let p = Provider::Anthropic;
        let one = direct_tokens(&tools[..1], p, false);
        let (a, r) = (ServerMode::Auto, ModeSource::Run);
        let wanted = vec![
            ("big".to_string(), a, r),
            ("small".to_string(), a, r),
            ("mid".to_string(), a, r),
            ("pinned".to_string(), ServerMode::Code, ModeSource::Server),
        ];
        // Room for `small` and `mid` (5 tools), not for `big`.
        let plan = ModePlan::decide(&wanted, &tools, p, one * 6, false);
        let modes: Vec<(&str, ExecutionMode, usize)> =
            plan.servers.iter().map(|c| (c.server.as_str(), c.mode, c.tools)).collect();
        assert_eq!(
            modes,
            [
                ("big", ExecutionMode::Code, 40),
                ("small", ExecutionMode::Direct, 2),
                ("mid", ExecutionMode::Direct, 3),
                ("pinned", ExecutionMode::Code, 1),
            ]
        );
        assert_eq!(plan.servers_in(ExecutionMode::Direct), ["small", "mid"]);
        let small = &plan.servers[1];
        let mid = &plan.servers[2];
        assert_eq!(plan.direct_tokens, small.definition_tokens + mid.definition_tokens);
        assert_eq!(mid.direct_tokens_with, Some(plan.direct_tokens), "mid is larger, so decided second");
        assert_eq!(plan.servers[3].by, ModeSource::Server);
        assert_eq!(
            plan.line(&plan.servers[0]),
            format!(
                "server big: code (40 tools, {} tokens; auto: direct definitions {} > {})",
                session::thousands(plan.servers[0].definition_tokens as u64),
                session::thousands((plan.direct_tokens + plan.servers[0].definition_tokens) as u64),
                session::thousands((one * 6) as u64),
            )
        );
        assert_eq!(
            plan.line(&plan.servers[3]),
            format!(
                "server pinned: code (1 tool, {} tokens; mcp.servers.pinned.mode)",
                plan.servers[3].definition_tokens
            )
        );
        // A `direct` server spends the budget first: then nothing else fits.
        let mut forced = wanted.clone();
        forced[0] = ("big".to_string(), ServerMode::Direct, ModeSource::Server);
        let plan = ModePlan::decide(&forced, &tools, p, one * 6, false);
        assert_eq!(plan.servers_in(ExecutionMode::Direct), ["big"]);
        assert_eq!(plan.servers_in(ExecutionMode::Code), ["small", "mid", "pinned"]);
        let json = serde_json::to_value(&plan).unwrap();
        assert_eq!(json["servers"][1]["by"], "auto");
        assert_eq!(json["servers"][1]["mode"], "code");
        assert!(json["servers"][0].get("direct_tokens_with").is_none());
    }
}
