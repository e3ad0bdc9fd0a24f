//! `agent run`'s engine: LLM providers, the agent loop, and the two ways tools reach the model.
//!
//! - [`provider`]: the provider-neutral conversation and the [`provider::LlmProvider`] trait, with
//!   retries and readable HTTP errors; [`anthropic`] and [`openai`] speak the two wire formats.
//! - [`session`]: the loop both modes share, and the [`session::Transcript`] it records.
//! - [`direct`]: direct mode (one LLM tool per MCP tool, schema adaptation, result cutting).
//! - [`code`]: code mode's model-facing tools (`code_execution`, tree discovery) and prompt.
//! - [`tokens`]: offline token estimates of direct vs code mode.
//!
//! Tool calls go through `mcp::McpManager` (direct) or the code-mode runtime behind the bridge;
//! this module never talks to an MCP server itself. Printing is the CLI's job (an `Observer`).

pub mod anthropic;
pub mod code;
pub mod code_host;
pub mod direct;
pub mod openai;
pub mod provider;
pub mod session;
pub mod tokens;
