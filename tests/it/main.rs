//! The integration tests, one binary (as uv, cargo and rust-analyzer do): every module below was
//! its own test binary once, each linking the whole library. They drive the real `agent` binary,
//! real MCP servers (the fixture server, npm's server-everything), real sockets, real clients
//! (the Python SDK, the MCP Inspector, the conformance suite) and a real pseudo-terminal;
//! `support` holds the harness. Run one area with `cargo test --test it exec::`.

mod support;

/// Before `main`, while the process has one thread: what this process runs itself (executors,
/// runner threads, the workers they start) keeps its caches in the build's `test-cache`, as every
/// `agent` a test runs does, never in the home of whoever runs the tests. The linker calls each
/// entry of `.init_array` before `main`.
#[used]
#[unsafe(link_section = ".init_array")]
static KEEP_CACHES_IN_THE_BUILD: extern "C" fn() = keep_caches_in_the_build;

extern "C" fn keep_caches_in_the_build() {
    // SAFETY: runs before `main`, when no other thread exists to read the environment.
    unsafe {
        std::env::set_var("XDG_CACHE_HOME", support::test_cache_dir());
        std::env::remove_var("V82JSC_BC_CACHE_DIR");
    }
}

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
