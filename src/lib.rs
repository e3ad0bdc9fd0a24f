//! `agent`: an MCP agent harness with a TypeScript code mode.
//!
//! Layering (one direction only): `config` ← `mcp` ← (`codegen`, `bridge`) ← `runtime` (speaks
//! only the bridge protocol) ← `agent` ← `cli`. See ARCHITECTURE.md for the map.

pub mod agent;
pub mod bridge;
pub mod cli;
pub mod codegen;
pub mod config;
pub mod mcp;
pub mod runtime;
