//! `execution_mode: auto` end to end: the real binary, the scripted fake LLM and real servers
//! (the fixture, and the fixture serving the GitHub MCP server's 117 tool definitions). `auto`
//! decides per server: small catalogs run in direct mode, large ones in code mode, both in one
//! request when a run has one of each; the choice and its numbers are on stderr, in
//! `agent run --json` (`modes`) and in `agent mcp list --tokens`.

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

/// The `auto` plan of `agent mcp list --tokens --json`.
fn listed_auto(p: &Project) -> Value {
    let r = p.run(&["mcp", "list", "--tokens", "--json"]);
    r.assert_ok();
    r.json()["auto"].clone()
}

#[test]
fn a_small_catalog_runs_in_direct_mode_and_says_why() {
    let fake =
        FakeLlm::start(vec![Reply::tool("mcp_fixture_add", json!({"a": 40, "b": 2})), Reply::text("The sum is 42.")]);
    let p = project(&fake, "", &fixture_stdio_yaml("fixture", &[]));
    let r = p.run(&["run", "--mode", "auto", "--json", "What is 40 + 2?"]);
    r.assert_ok();
    let listed = listed_auto(&p);
    let t = r.json();
    assert_eq!(t["mode"], "direct");
    let tokens = t["modes"]["servers"][0]["definition_tokens"].as_u64().unwrap();
    assert!(tokens > 500 && tokens <= 4000, "{tokens}");
    assert_eq!(
        t["modes"],
        json!({"servers": [{"server": "fixture", "mode": "direct", "tools": 12, "definition_tokens": tokens,
            "by": "auto", "direct_tokens_with": tokens}], "threshold_tokens": 4000, "direct_tokens": tokens})
    );
    // `mcp list --tokens` predicts exactly what the run chose.
    assert_eq!(listed, t["modes"]);
    let t_ = thousands(tokens);
    let line = format!("server fixture: direct (12 tools, {t_} tokens; auto: direct definitions {t_} <= 4,000)");
    assert!(r.stderr.contains(&line), "{line} not in:\n{}", r.stderr);
    assert!(r.stderr.contains("mode: direct\n"), "{}", r.stderr);
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
    let listed = listed_auto(&p);
    let t = r.json();
    assert_eq!(t["mode"], "code");
    let choice = &t["modes"]["servers"][0];
    assert_eq!((&choice["mode"], &choice["by"]), (&json!("code"), &json!("auto")));
    assert_eq!(t["modes"]["threshold_tokens"], 500);
    assert_eq!(listed, t["modes"]);
    let tokens = choice["definition_tokens"].as_u64().unwrap();
    assert!(tokens > 500, "{tokens}");
    let t_ = thousands(tokens);
    let line = format!("server fixture: code (12 tools, {t_} tokens; auto: direct definitions {t_} > 500)");
    assert!(r.stderr.contains(&line), "{line} not in:\n{}", r.stderr);
    let reqs = fake.requests();
    assert_eq!(reqs[0].tool_names(), CODE_TOOLS);
    assert_eq!(reqs[1].tool_results(), vec![("toolu_1_0".to_string(), "3\n".to_string(), false)]);
}

/// `auto` per server: the fixture's 12 tools fit the default budget and go direct, the GitHub
/// catalog (117 tools) does not and goes behind `code_execution`, in the same request. The model
/// calls a direct tool and runs a script against the code-mode server in one turn; a hostile
/// model's guess at a direct name for the code-mode server's tool reaches no server.
#[test]
fn auto_offers_a_small_server_directly_and_a_large_one_through_code_in_one_request() {
    let script = "import { getMe } from \"./servers/github/index.ts\";\nconsole.log(await getMe({}));\n";
    let fake = FakeLlm::start(vec![
        Reply::tools(
            "",
            &[
                ("mcp_fixture_add", json!({"a": 40, "b": 2})),
                ("code_execution", json!({"code": script})),
                ("mcp_github_get_me", json!({})),
            ],
        ),
        Reply::text("done"),
    ]);
    let servers = format!("{}{}", github_yaml(), fixture_stdio_yaml("fixture", &[]));
    let p = project(&fake, "  execution_mode: auto\n", &servers);
    let r = p.run(&["run", "--json", "Who am I on GitHub, and what is 40 + 2?"]);
    r.assert_ok();
    let t = r.json();
    assert_eq!(t["mode"], "mixed");
    let modes: Vec<(&str, &str, u64)> = t["modes"]["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["server"].as_str().unwrap(), c["mode"].as_str().unwrap(), c["tools"].as_u64().unwrap()))
        .collect();
    assert_eq!(modes, [("fixture", "direct", 12), ("github", "code", 117)]);
    assert_eq!(listed_auto(&p), t["modes"], "mcp list --tokens predicts the run");
    let line = plan_line(&t["modes"], 1);
    assert!(line.starts_with("server github: code (117 tools, ") && line.contains(" > 4,000)"), "{line}");
    assert!(r.stderr.contains(&line), "{line} not in:\n{}", r.stderr);
    assert!(r.stderr.contains(&plan_line(&t["modes"], 0)), "{}", r.stderr);
    assert!(t["modes"]["servers"][1]["definition_tokens"].as_u64().unwrap() > 20_000);
    assert!(r.stderr.contains("mode: mixed"), "{}", r.stderr);

    let reqs = fake.requests();
    let names = reqs[0].tool_names();
    assert_eq!(names.iter().filter(|n| n.starts_with("mcp_fixture_")).count(), 12, "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("mcp_fixture_") || CODE_TOOLS.contains(&n.as_str())), "{names:?}");
    assert!(CODE_TOOLS.iter().all(|c| names.contains(&c.to_string())), "{names:?}");
    assert!(!reqs[0].raw.contains("mcp_github_"), "no GitHub definition is sent");
    // The code-mode prompt lists only the code-mode server; the direct one is named as such.
    let system = reqs[0].system();
    assert!(system.contains("servers/github/ (117 tools)"), "{system}");
    assert!(!system.contains("servers/fixture/"), "{system}");
    assert!(system.contains("call the MCP servers fixture directly"), "{system}");

    let results = reqs[1].tool_results();
    assert_eq!(results[0], ("toolu_1_0".to_string(), "{\"sum\":42}".to_string(), false));
    assert_eq!(results[1], ("toolu_1_1".to_string(), "called get_me with {}\n".to_string(), false));
    assert!(results[2].2 && results[2].1.starts_with("unknown tool `mcp_github_get_me`"), "{results:?}");
    assert_eq!(t["mcp_calls"], 2, "the guessed name called nothing");
}

/// The human `mcp list --tokens` report: each server's run mode and the `auto` lines.
#[test]
fn list_tokens_shows_each_servers_mode_and_the_numbers_behind_it() {
    let fake = FakeLlm::start(vec![]);
    let servers = format!("{}{}", github_yaml(), fixture_stdio_yaml("fixture", &[]));
    let p = project(&fake, "  execution_mode: auto\n", &servers);
    let est = p.run(&["mcp", "list", "--tokens", "--json"]);
    est.assert_ok();
    let est = est.json();
    let r = p.run(&["mcp", "list", "--tokens"]);
    r.assert_ok();
    let row = |server: &str| -> Vec<String> {
        let line = r.stdout.lines().find(|l| l.starts_with(&format!("{server} "))).unwrap();
        line.split_whitespace().map(String::from).collect()
    };
    assert_eq!(row("github").last().unwrap(), "code");
    assert_eq!(row("fixture").last().unwrap(), "direct");
    for (i, server) in ["fixture", "github"].iter().enumerate() {
        // The direct column is the number the choice was made on.
        let direct = est["servers"][i]["direct"].as_u64().unwrap();
        assert_eq!(row(server)[2].replace(',', ""), direct.to_string());
        assert_eq!(est["auto"]["servers"][i]["definition_tokens"], direct);
        let line = plan_line(&est["auto"], i);
        assert!(r.stdout.contains(&line), "{line} not in:\n{}", r.stdout);
    }
    assert_eq!(est["modes"], est["auto"], "the configured mode is auto");
    // `--server fixture` alone: still direct; a server's own key wins over auto.
    let r = p.run(&["mcp", "list", "--tokens", "--server", "fixture"]);
    assert!(r.stdout.contains("  server fixture: direct (12 tools, "), "{}", r.stdout);
    let keyed = servers.replace("      connect_timeout: 10s\n", "      connect_timeout: 10s\n      mode: code\n");
    p.write_config(&format!("{}mcp:\n  servers:\n{keyed}", fake.llm_yaml(Api::Anthropic)));
    let r = p.run(&["mcp", "list", "--tokens", "--server", "fixture"]);
    r.assert_ok();
    assert!(r.stdout.contains("server fixture: code (12 tools, "), "{}", r.stdout);
    assert!(r.stdout.contains("; mcp.servers.fixture.mode)"), "{}", r.stdout);
    assert!(r.stdout.contains("agent run would use:"), "{}", r.stdout);
}

/// The line a plan's `i`th server gets (stderr of `agent run`, `mcp list --tokens`), from its JSON.
fn plan_line(plan: &Value, i: usize) -> String {
    let c = &plan["servers"][i];
    let with = c["direct_tokens_with"].as_u64().unwrap();
    let cmp = if c["mode"] == "direct" { "<=" } else { ">" };
    format!(
        "server {}: {} ({} tools, {} tokens; auto: direct definitions {} {cmp} {})",
        c["server"].as_str().unwrap(),
        c["mode"].as_str().unwrap(),
        c["tools"],
        thousands(c["definition_tokens"].as_u64().unwrap()),
        thousands(with),
        thousands(plan["threshold_tokens"].as_u64().unwrap())
    )
}

/// `25,310`: the CLI's own number format.
fn thousands(n: u64) -> String {
    agent::agent::session::thousands(n)
}
