//! `agent run`'s engine: LLM providers, the agent loop, and the ways tools reach the model.
//!
//! - [`run`]: one run, the chosen mode set up (direct, code, progressive, or `auto` choosing)
//!   and the loop run over it.
//! - [`provider`]: the provider-neutral conversation and the [`provider::LlmProvider`] trait, with
//!   retries and readable HTTP errors; [`anthropic`] and [`openai`] speak the two wire formats.
//! - [`session`]: the loop both modes share, and the [`session::Transcript`] it records.
//! - [`direct`]: direct mode (one LLM tool per MCP tool, schema adaptation, result cutting).
//! - [`code`]: code mode's model-facing tools (`code_execution`, tree discovery) and prompt.
//! - [`progressive`]: progressive mode (`search_tools`, `call_tool`, pinned direct tools).
//! - [`resources`]: `list_resources` / `read_resource` beside the tools of direct, progressive and
//!   mixed runs, when a server of the run offers resources.
//! - [`tokens`]: offline token estimates of direct vs code vs progressive mode, and `auto`'s choice.
//! - [`provider_from_config`]: the factory that picks a provider; it lives here, above the
//!   trait's module and both implementations, so none of them imports another.
//!
//! Tool calls go through `mcp::McpManager` (direct) or the code-mode runtime behind the bridge;
//! this module never talks to an MCP server itself. Printing is the CLI's job (an `Observer`).

pub mod anthropic;
pub mod code;
pub mod code_host;
pub mod direct;
pub mod mixed;
pub mod openai;
pub mod progressive;
pub mod provider;
pub mod resources;
pub mod run;
pub mod session;
pub mod tokens;

use crate::config::{LlmConfig, Provider};

/// Builds the configured provider. The API key comes from `llm.api_key`, else the provider's
/// usual environment variable; it may be absent only for a custom `base_url` (local servers).
pub fn provider_from_config(c: &LlmConfig, env_key: Option<String>) -> Result<Box<dyn provider::LlmProvider>, String> {
    if let Some(first) = c.unresolved.first() {
        return Err(first.clone());
    }
    let key = c.api_key.clone().filter(|k| !k.is_empty()).or(env_key.filter(|k| !k.is_empty()));
    let (env_name, default_base) = match c.provider {
        Provider::Anthropic => ("ANTHROPIC_API_KEY", anthropic::DEFAULT_BASE_URL),
        Provider::Openai => ("OPENAI_API_KEY", openai::DEFAULT_BASE_URL),
    };
    let base = c.base_url.clone().filter(|b| !b.trim().is_empty()).unwrap_or_else(|| default_base.to_string());
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        return Err(format!("llm.base_url: expected an http:// or https:// URL, got `{base}`"));
    }
    if key.is_none() && c.base_url.is_none() {
        return Err(format!(
            "no API key for provider `{}`: set {env_name} or `llm.api_key` in agent.yaml (e.g. `api_key: ${env_name}`)",
            c.provider
        ));
    }
    if c.model.trim().is_empty() {
        return Err("llm.model is empty: set it in agent.yaml or pass --model".into());
    }
    let http = provider::HttpSettings::from_config(c)?;
    Ok(match c.provider {
        Provider::Anthropic => Box::new(anthropic::Anthropic::new(base, key, http)),
        Provider::Openai => Box::new(openai::OpenAi::new(base, key, http)),
    })
}

/// The environment variable a provider's key falls back to.
pub fn key_env_var(p: Provider) -> &'static str {
    match p {
        Provider::Anthropic => "ANTHROPIC_API_KEY",
        Provider::Openai => "OPENAI_API_KEY",
    }
}
