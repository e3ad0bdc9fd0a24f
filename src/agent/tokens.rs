//! Offline token estimates (tiktoken's `o200k_base`, embedded in the binary) of what the model
//! is sent: the tool definitions of direct mode vs the fixed code-mode tools and prompt lines,
//! per server and in total (`agent mcp list --tokens`).
//!
//! o200k is OpenAI's tokenizer; Claude's differs, so these are estimates for choosing a mode,
//! not bills. The provider's own usage fields are the real counts.

use serde::Serialize;

use super::code::{LimitsText, ServerEntry};
use super::direct::{SchemaFlavor, ToolMap};
use super::provider::ToolSpec;
use crate::config::Provider;
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
}

impl TokenEstimate {
    /// How much smaller code mode is, in percent (negative when it is bigger).
    pub fn saving_percent(&self) -> f64 {
        if self.direct_total == 0 {
            return 0.0;
        }
        100.0 * (1.0 - self.code_total as f64 / self.direct_total as f64)
    }
}

/// Estimates direct vs code mode for `tools`; `entries` are the servers as code mode lists them.
pub fn estimate(tools: &[ToolInfo], entries: &[ServerEntry], limits: &LimitsText, provider: Provider) -> TokenEstimate {
    estimate_with(tools, entries, limits, provider, false)
}

/// [`estimate`], with direct mode's optional `result_handler` argument on every tool when
/// `result_handlers` (`mcp.result_handlers.enabled`).
pub fn estimate_with(
    tools: &[ToolInfo],
    entries: &[ServerEntry],
    limits: &LimitsText,
    provider: Provider,
    result_handlers: bool,
) -> TokenEstimate {
    let map = ToolMap::build(tools, flavor(provider));
    let map = if result_handlers { map.with_result_handlers() } else { map };
    let code_specs = super::code::tool_specs(limits);
    let tree = std::path::Path::new(".kodelet/mcp");
    let mut servers = Vec::new();
    for e in entries {
        let specs: Vec<ToolSpec> =
            map.tools.iter().zip(&map.specs).filter(|(m, _)| m.server == e.name).map(|(_, s)| s.clone()).collect();
        let direct = if specs.is_empty() { 0 } else { tools_tokens(&specs, provider) };
        let code = count(&super::code::server_line(e));
        servers.push(ServerTokens { server: e.name.clone(), tools: specs.len(), direct, code });
    }
    let direct_total = if map.specs.is_empty() { 0 } else { tools_tokens(&map.specs, provider) };
    let code_total = tools_tokens(&code_specs, provider) + count(&super::code::system_prompt(tree, entries));
    let code_fixed = code_total.saturating_sub(servers.iter().map(|s| s.code).sum());
    TokenEstimate {
        tokenizer: "o200k_base",
        provider: provider.to_string(),
        servers,
        code_fixed,
        direct_total,
        code_total,
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
        let one = estimate(&[tool("a")], &entries, &limits, Provider::Anthropic);
        let many: Vec<ToolInfo> = (0..50).map(|i| tool(&format!("t{i}"))).collect();
        let fifty = estimate(&many, &entries, &limits, Provider::Anthropic);
        assert!(fifty.direct_total > 40 * one.direct_total / 2, "{} vs {}", fifty.direct_total, one.direct_total);
        assert_eq!(fifty.code_total, one.code_total);
        assert_eq!(fifty.servers[0].tools, 50);
        assert_eq!(fifty.servers[0].direct, fifty.direct_total);
        assert!(fifty.servers[0].code > 0 && fifty.servers[0].code < 20);
        let handled = estimate_with(&many, &entries, &limits, Provider::Anthropic, true);
        assert!(
            handled.direct_total > fifty.direct_total + 50 * 10,
            "{} vs {}",
            handled.direct_total,
            fifty.direct_total
        );
        assert_eq!(handled.code_total, fifty.code_total);
    }
}
