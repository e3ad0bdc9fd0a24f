//! Offline token estimates (tiktoken's `o200k_base`, embedded in the binary) of what the model
//! is sent: the tool definitions of direct mode vs the fixed code-mode tools and prompt lines vs
//! progressive mode's two tools, prompt and pinned tools, per server and in total
//! (`agent mcp list --tokens`).
//!
//! o200k is OpenAI's tokenizer; Claude's differs, so these are estimates for choosing a mode,
//! not bills. The provider's own usage fields are the real counts.

use serde::Serialize;

use super::code::ServerEntry;
use super::direct::{SchemaFlavor, ToolMap};
use super::provider::ToolSpec;
use crate::codemode::tool::LimitsText;
use crate::config::{ExecutionMode, Provider};
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
    let specs_of = |m: &ToolMap, server: &str| -> Vec<ToolSpec> {
        m.tools.iter().zip(&m.specs).filter(|(t, _)| t.server == server).map(|(_, s)| s.clone()).collect()
    };
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

/// What `execution_mode: auto` picks for a set of tools, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AutoChoice {
    /// `direct` or `code`.
    pub mode: ExecutionMode,
    /// Tools offered in direct mode.
    pub tools: usize,
    /// Tokens of their direct-mode definitions.
    pub definition_tokens: usize,
    /// `mcp.auto_threshold_tokens`.
    pub threshold_tokens: usize,
}

impl AutoChoice {
    /// Direct while the definitions take at most `threshold` tokens, else code.
    pub fn new(tools: usize, definition_tokens: usize, threshold: usize) -> AutoChoice {
        let mode = if definition_tokens <= threshold { ExecutionMode::Direct } else { ExecutionMode::Code };
        AutoChoice { mode, tools, definition_tokens, threshold_tokens: threshold }
    }

    /// Counts the definitions of `tools` as `provider` receives them, then decides.
    /// `result_handlers`: direct mode would offer the `result_handler` argument on every tool
    /// (`mcp.result_handlers.enabled`), which is part of what it costs.
    pub fn for_tools(tools: &[ToolInfo], provider: Provider, threshold: usize, result_handlers: bool) -> AutoChoice {
        AutoChoice::new(tools.len(), direct_tokens(tools, provider, result_handlers), threshold)
    }

    /// `auto: 41 tools, 25,310 tokens of definitions > 4,000`
    pub fn reason(&self) -> String {
        let t = super::session::thousands;
        let plural = if self.tools == 1 { "" } else { "s" };
        let cmp = if self.mode == ExecutionMode::Direct { "<=" } else { ">" };
        format!(
            "auto: {} tool{plural}, {} tokens of definitions {cmp} {}",
            self.tools,
            t(self.definition_tokens as u64),
            t(self.threshold_tokens as u64)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_tokens_offline() {
        assert_eq!(count(""), 0);
        assert_eq!(count("hello world"), 2);
    }

    #[test]
    fn direct_grows_with_tools_and_code_does_not() {
        let tool = |name: &str| ToolInfo {
            server: "s".into(),
            name: name.into(),
            title: None,
            description: Some("Search the issues of a repository by label, state and text.".into()),
            input_schema: json!({"type":"object","properties":{"q":{"type":"string","description":"query text"}}}),
            output_schema: None,
            annotations: None,
        };
        let limits = LimitsText { timeout: "30s".into(), memory_mb: 256, max_output: "100 KB".into() };
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
        let limits = LimitsText { timeout: "30s".into(), memory_mb: 256, max_output: "100 KB".into() };
        let entries = crate::codegen::server_entries(&["github".into()], &tools);
        for provider in [Provider::Anthropic, Provider::Openai] {
            let est = estimate_with(&tools, &entries, &limits, provider, &[], false);
            assert!(est.progressive_total <= 400, "{provider}: {} tokens", est.progressive_total);
            assert!(est.direct_total > 20 * est.progressive_total, "{provider}: {est:?}");
        }
    }

    #[test]
    fn auto_picks_direct_up_to_the_threshold_and_code_past_it() {
        let at = AutoChoice::new(3, 4_000, 4_000);
        assert_eq!(at.mode, ExecutionMode::Direct);
        assert_eq!(at.reason(), "auto: 3 tools, 4,000 tokens of definitions <= 4,000");
        let past = AutoChoice::new(41, 25_310, 4_000);
        assert_eq!(past.mode, ExecutionMode::Code);
        assert_eq!(past.reason(), "auto: 41 tools, 25,310 tokens of definitions > 4,000");
        assert_eq!(AutoChoice::new(1, 0, 0).reason(), "auto: 1 tool, 0 tokens of definitions <= 0");
        let json = serde_json::to_value(past).unwrap();
        assert_eq!(json, json!({"mode": "code", "tools": 41, "definition_tokens": 25310, "threshold_tokens": 4000}));
    }
}
