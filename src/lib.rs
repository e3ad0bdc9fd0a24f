//! `agent`: an MCP agent harness with a TypeScript code mode.
//!
//! Two peers on top: `agent` (the LLM loop: `agent run` in direct, code, progressive or auto
//! mode) and `serve` (`agent mcp serve`: `agent` as an MCP server, with the same code mode,
//! search and result handlers for any MCP client); `cli` parses, races signals and prints.
//!
//! Layering (one direction only; `tests/it/layers.rs` checks it against ARCHITECTURE.md's table):
//! `util` (leaf helpers) ← (`config`, `search` (the tool catalog index), `skills` (the skill file
//! format), `types` (learned result shapes, the type registry)) ← `mcp` (the client side: servers,
//! connections, calls, catalog) ← (`codegen` (the TypeScript tree), `bridge` (the Unix-socket RPC),
//! `learn` (records call results into the registry)) ← `runtime` (the isolate; speaks only the
//! bridge protocol) ← (`codemode` (a script's whole path), `handler` (result handlers)) ←
//! (`agent`, `serve`) ← `cli`. Only `cli` (and the binaries) print. See ARCHITECTURE.md for the
//! map.

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
