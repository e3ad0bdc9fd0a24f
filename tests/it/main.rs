//! The integration tests, one binary (as uv, cargo and rust-analyzer do): every module below was
//! its own test binary once, each linking the whole library. They drive the real `agent` binary,
//! real MCP servers (the fixture server, npm's server-everything), real sockets, real clients
//! (the Python SDK, the MCP Inspector, the conformance suite) and a real pseudo-terminal;
//! `support` holds the harness. Run one area with `cargo test --test it exec::`.

mod support;

mod approvals;
mod auth;
mod auto;
mod bridge;
mod call;
mod codemode_resources;
mod completions;
mod conformance;
mod doctor;
mod examples;
mod exec;
mod fixture;
mod generate;
mod handlers;
mod host;
mod interactive;
mod json_engine;
mod layers;
mod manage;
mod mcp;
mod primitives;
mod project;
mod resource_tools;
mod resources;
mod run;
mod search;
mod search_examples;
mod serve;
mod sessions;
mod state;
mod terminal;
mod typecheck;
mod types;
