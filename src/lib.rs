//! `agent`: an MCP agent harness with a TypeScript code mode.
//!
//! Layering (one direction only; `tests/layers.rs` checks it): `util` (leaf helpers) ← (`config`,
//! `search` (the tool catalog index), `skills` (the skill file format), `types` (learned result
//! shapes, the type registry)) ← `mcp` ← (`codegen`, `bridge`, `learn` (records call results into
//! the registry)) ← `runtime` (speaks only the bridge protocol) ← (`codemode`, `handler` (result
//! handlers)) ← `agent` ← `cli`. Only `cli` (and the binaries) print. See
//! ARCHITECTURE.md for the map.

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod agent;
pub mod bridge;
#[allow(clippy::print_stdout, clippy::print_stderr)]
pub mod cli;
pub mod codegen;
pub mod codemode;
pub mod config;
pub mod handler;
pub mod learn;
pub mod mcp;
pub mod runtime;
pub mod search;
pub mod serve;
pub mod skills;
pub mod types;
pub mod util;
