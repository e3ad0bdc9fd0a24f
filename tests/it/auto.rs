//! `execution_mode: auto` end to end: the real binary, the scripted fake LLM and real servers
//! (the fixture, and the fixture serving the GitHub MCP server's 117 tool definitions). Small
//! catalogs run in direct mode, large ones in code mode; the choice and its numbers are on
//! stderr, in `agent run --json` and in `agent mcp list --tokens`.

use crate::support;
use crate::support::fake_llm;

use fake_llm::{Api, FakeLlm, Reply};
use serde_json::{Value, json};
use support::{Project, fixture_bin, fixture_stdio_yaml};

const CODE_TOOLS: [&str; 4] = ["code_execution", "list_files", "read_file", "grep_files"];

/// A `github` server: the fixture serving the GitHub MCP server's tool definitions.
fn github_yaml() -> String {
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/github-mcp-server.json");
    format!(
        "    github:\n      command: {:?}\n      args: [\"--tools-file\", {corpus:?}]\n      connect_timeout: 10s\n",
        fixture_bin().display().to_string()
    )
}

fn project(fake: &FakeLlm, mcp_extra: &str, servers_yaml: &str) -> Project {
    let p = Project::new();
    p.write_config(&format!("{}mcp:\n{mcp_extra}  servers:\n{servers_yaml}", fake.llm_yaml(Api::Anthropic)));
    p
}

/// `direct_total` and the `auto` object of `agent mcp list --tokens --json`.
fn listed_estimate(p: &Project) -> (u64, Value) {
    let r = p.run(&["mcp", "list", "--tokens", "--json"]);
    r.assert_ok();
    let est = r.json();
    (est["direct_total"].as_u64().unwrap(), est["auto"].clone())
}

#[test]
fn a_small_catalog_runs_in_direct_mode_and_says_why() {
    let fake =
        FakeLlm::start(vec![Reply::tool("mcp_fixture_add", json!({"a": 40, "b": 2})), Reply::text("The sum is 42.")]);
    let p = project(&fake, "", &fixture_stdio_yaml("fixture", &[]));
    let r = p.run(&["run", "--mode", "auto", "--json", "What is 40 + 2?"]);
    r.assert_ok();
    let (direct_total, listed_auto) = listed_estimate(&p);
    let t = r.json();
    assert_eq!(t["mode"], "direct");
    assert_eq!(
        t["auto"],
        json!({"mode": "direct", "tools": 12, "definition_tokens": direct_total, "threshold_tokens": 4000})
    );
    // `mcp list --tokens` predicts exactly what the run chose.
    assert_eq!(listed_auto, t["auto"]);
    let line = format!("mode: direct (auto: 12 tools, {} tokens of definitions <= 4,000)", thousands(direct_total));
    assert!(r.stderr.contains(&line), "{line} not in:\n{}", r.stderr);
    let reqs = fake.requests();
    assert_eq!(reqs[0].tool_names().len(), 12);
    assert!(reqs[0].tool_names().contains(&"mcp_fixture_add".to_string()));
    assert_eq!(reqs[1].tool_results(), vec![("toolu_1_0".to_string(), "{\"sum\":42}".to_string(), false)]);
}

#[test]
fn past_the_configured_threshold_the_run_is_in_code_mode() {
    let script = "import { add } from \"./servers/fixture/index.ts\";\nconsole.log((await add({ a: 1, b: 2 })).sum);\n";
    let fake = FakeLlm::start(vec![Reply::tool("code_execution", json!({"code": script})), Reply::text("3")]);
    // The same 12 tools, a threshold below their size: from the config, not a flag.
    let p =
        project(&fake, "  execution_mode: auto\n  auto_threshold_tokens: 500\n", &fixture_stdio_yaml("fixture", &[]));
    let r = p.run(&["run", "--json", "Add 1 and 2"]);
    r.assert_ok();
    let (direct_total, listed_auto) = listed_estimate(&p);
    assert!(direct_total > 500, "{direct_total}");
    let t = r.json();
    assert_eq!(t["mode"], "code");
    assert_eq!(t["auto"]["mode"], "code");
    assert_eq!(t["auto"]["threshold_tokens"], 500);
    assert_eq!(listed_auto, t["auto"]);
    let line = format!("mode: code (auto: 12 tools, {} tokens of definitions > 500)", thousands(direct_total));
    assert!(r.stderr.contains(&line), "{line} not in:\n{}", r.stderr);
    let reqs = fake.requests();
    assert_eq!(reqs[0].tool_names(), CODE_TOOLS);
    assert_eq!(reqs[1].tool_results(), vec![("toolu_1_0".to_string(), "3\n".to_string(), false)]);
}

#[test]
fn the_github_catalog_is_large_enough_for_code_mode_at_the_default_threshold() {
    let script = "import { getMe } from \"./servers/github/index.ts\";\nconsole.log(await getMe({}));\n";
    let fake = FakeLlm::start(vec![Reply::tool("code_execution", json!({"code": script})), Reply::text("done")]);
    let servers = format!("{}{}", github_yaml(), fixture_stdio_yaml("fixture", &[]));
    let p = project(&fake, "  execution_mode: auto\n", &servers);
    let r = p.run(&["run", "Who am I on GitHub?"]);
    r.assert_ok();
    let (direct_total, listed_auto) = listed_estimate(&p);
    assert!(direct_total > 20_000, "{direct_total}");
    assert_eq!(listed_auto["mode"], "code");
    assert_eq!(listed_auto["tools"], 129);
    let line = format!("mode: code (auto: 129 tools, {} tokens of definitions > 4,000)", thousands(direct_total));
    assert!(r.stderr.contains(&line), "{line} not in:\n{}", r.stderr);
    let reqs = fake.requests();
    assert_eq!(reqs[0].tool_names(), CODE_TOOLS);
    assert!(!reqs[0].raw.contains("mcp_github_"));
    assert_eq!(reqs[1].tool_results(), vec![("toolu_1_0".to_string(), "called get_me with {}\n".to_string(), false)]);

    // The human report says the same.
    let r = p.run(&["mcp", "list", "--tokens"]);
    r.assert_ok();
    assert!(r.stdout.contains("execution_mode auto would pick: code (auto: 129 tools, "), "{}", r.stdout);
    // `--server fixture` alone is small: auto would run it directly.
    let r = p.run(&["mcp", "list", "--tokens", "--server", "fixture"]);
    assert!(r.stdout.contains("execution_mode auto would pick: direct (auto: 12 tools, "), "{}", r.stdout);
}

/// `25,310`: the CLI's own number format.
fn thousands(n: u64) -> String {
    agent::agent::session::thousands(n)
}
