//! Result handlers end to end: `agent mcp call --jq/--js/--handler` on the fixture server and on
//! server-everything, hostile jq filters (bounded, never a crash), errors before and after the
//! call, and direct mode's `result_handler` argument in `agent run` against the fake LLM.

use crate::support;
use crate::support::fake_llm;

use fake_llm::{Api, FakeLlm, Reply};
use serde_json::{Value, json};
use support::procs::{KillOnDrop, descendants_with, peak_rss_kb, running};
use support::{Project, everything_yaml, fixture_stdio_yaml, node_or_skip};

#[test]
fn jq_and_js_print_only_the_handlers_value() {
    let p = Project::with_fixture();
    let r = p.run(&["mcp", "call", "fixture.add", "--args", r#"{"a": 2, "b": 40}"#, "--jq", ".sum"]);
    r.assert_ok();
    assert_eq!(r.stdout, "42\n");
    let r = p.run(&[
        "mcp",
        "call",
        "fixture.add",
        "--args",
        r#"{"a": 2, "b": 40}"#,
        "--js",
        "({double: tool_output.sum * 2})",
    ]);
    r.assert_ok();
    assert_eq!(serde_json::from_str::<Value>(&r.stdout).unwrap(), json!({"double": 84}));
    // A function body that returns; text that is not JSON is a string.
    let r = p.run(&[
        "mcp",
        "call",
        "fixture.echo",
        "--args",
        r#"{"message": "hello there"}"#,
        "--js",
        "const words = tool_output.split(' ');\nreturn words.length + ' words';",
    ]);
    r.assert_ok();
    assert_eq!(r.stdout, "2 words\n");
    // Several jq outputs: an array; a string output is printed as it is.
    let r = p.run(&["mcp", "call", "fixture.add", "--args", r#"{"a": 1, "b": 2}"#, "--jq", ".sum, .sum + 1"]);
    r.assert_ok();
    assert_eq!(serde_json::from_str::<Value>(&r.stdout).unwrap(), json!([3, 4]));
    let r = p.run(&["mcp", "call", "fixture.big", "--args", r#"{"bytes": 200000}"#, "--jq", "length | tostring"]);
    r.assert_ok();
    assert_eq!(r.stdout, "200000\n");
    // --json: the shaped CallToolResult (structuredContent for an object).
    let r = p.run(&["mcp", "call", "fixture.add", "--args", r#"{"a": 1, "b": 2}"#, "--jq", "{s: .sum}", "--json"]);
    r.assert_ok();
    assert_eq!(r.json()["structuredContent"], json!({"s": 3}));
}

#[test]
fn handler_files_and_stdin_are_read_by_extension_or_content() {
    let p = Project::with_fixture();
    p.write("sum.jq", ".sum * 10\n");
    p.write("sum.js", "tool_output.sum + 0.5");
    p.write("h.json", r#"{"language": "jq", "script": "[.sum]"}"#);
    let add = ["mcp", "call", "fixture.add", "--args", r#"{"a": 1, "b": 2}"#, "--handler"];
    let with = |f: &'static str| [&add[..], &[f]].concat();
    assert_eq!(p.run(&with("sum.jq")).assert_ok().stdout, "30\n");
    assert_eq!(p.run(&with("sum.js")).assert_ok().stdout, "3.5\n");
    assert_eq!(serde_json::from_str::<Value>(&p.run(&with("h.json")).assert_ok().stdout).unwrap(), json!([3]));
    let r = p.run_stdin(&with("-"), r#"{"language": "jq", "script": ".sum - 1"}"#);
    assert_eq!(r.assert_ok().stdout, "2\n");
    let r = p.run_stdin(&with("-"), "tool_output.sum * 3");
    assert_eq!(r.assert_ok().stdout, "9\n");
    // Only one handler at a time.
    let r = p.run(&["mcp", "call", "fixture.add", "--jq", ".", "--js", "1"]);
    r.assert_code(2);
    assert!(r.stderr.contains("cannot be used with"), "{}", r.stderr);
}

#[test]
fn a_handler_that_does_not_compile_fails_before_the_tool_is_called() {
    let p = Project::with_fixture();
    for (flag, script, why) in [
        ("--jq", ".a |", "jq filter: expected term"),
        ("--jq", "nosuch(1)", "undefined filter `nosuch`"),
        ("--js", "tool_output.(", "result handler (JavaScript) does not parse"),
    ] {
        let r = p.run(&["mcp", "call", "fixture.sleep", "--args", r#"{"ms": 1}"#, flag, script]);
        r.assert_code(2);
        assert!(r.stderr.contains(why), "{}", r.stderr);
        assert!(r.stderr.contains("(the tool was not called)"), "{}", r.stderr);
        assert!(!p.server_logged("fixture", "fixture: sleep 1 ms started"), "the tool ran for {script}");
    }
    let r = p.run(&["mcp", "call", "fixture.sleep", "--args", r#"{"ms": 1}"#, "--handler", "-"]);
    r.assert_code(2);
    // A good handler: the call arrives (the check above can fail).
    p.run(&["mcp", "call", "fixture.sleep", "--args", r#"{"ms": 1}"#, "--jq", "."]).assert_ok();
    assert!(p.server_logged("fixture", "fixture: sleep 1 ms started"));
}

#[test]
fn a_handler_that_fails_after_the_call_says_the_tool_ran() {
    let p = Project::with_fixture();
    let r = p.run(&["mcp", "call", "fixture.big", "--args", r#"{"bytes": 5000}"#, "--js", "tool_output.nope.deeper"]);
    r.assert_code(1);
    assert_eq!(r.stdout, "");
    assert!(
        r.stderr.contains("`fixture.big` ran (its side effects happened), but the result handler failed: JavaScript:"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("TypeError"), "{}", r.stderr);
    assert!(
        r.stderr.contains("raw result (first 300 of 5000 characters): line 00000000: the quick brown fox"),
        "{}",
        r.stderr
    );
    let r =
        p.run(&["mcp", "call", "fixture.add", "--args", r#"{"a": 1, "b": 2}"#, "--jq", ".sum | error(\"too small\")"]);
    r.assert_code(1);
    assert!(r.stderr.contains("but the result handler failed: jq error: too small"), "{}", r.stderr);
    assert!(r.stderr.contains(r#"raw result (9 characters): {"sum":3}"#), "{}", r.stderr);
    // Tool calls are off by default.
    let r = p.run(&[
        "mcp",
        "call",
        "fixture.add",
        "--args",
        r#"{"a": 1, "b": 2}"#,
        "--js",
        "await callMCPTool('fixture', 'echo', {message: 'x'})",
    ]);
    r.assert_code(1);
    assert!(
        r.stderr.contains("tool calls are off in result handlers (mcp.result_handlers.tool_calls)"),
        "{}",
        r.stderr
    );
    // A tool error is not handled: it comes back as it is.
    let r = p.run(&["mcp", "call", "fixture.fail", "--jq", "."]);
    r.assert_code(1);
    assert!(r.stderr.contains("boom: this tool always fails"), "{}", r.stderr);
}

#[test]
fn handlers_may_call_tools_when_the_config_allows() {
    let p = Project::new();
    p.write_config(&format!(
        "mcp:\n  result_handlers:\n    tool_calls: true\n  servers:\n{}",
        fixture_stdio_yaml("fixture", &[])
    ));
    let r = p.run(&[
        "mcp",
        "call",
        "fixture.add",
        "--args",
        r#"{"a": 1, "b": 2}"#,
        "--js",
        "const e = await callMCPTool('fixture', 'echo', {message: 'sum=' + tool_output.sum});\nreturn e;",
    ]);
    r.assert_ok();
    assert_eq!(r.stdout, "sum=3\n");
}

/// Hostile jq filters end as one-line errors within the limits; the process never crashes.
#[test]
fn hostile_jq_filters_are_bounded() {
    let p = Project::new();
    p.write_config(&format!(
        "mcp:\n  code_execution:\n    timeout: 3s\n    memory_limit_mb: 64\n  servers:\n{}",
        fixture_stdio_yaml("fixture", &[])
    ));
    let call = |filter: &str| p.run(&["mcp", "call", "fixture.add", "--args", r#"{"a": 1, "b": 2}"#, "--jq", filter]);
    for (filter, why) in [
        ("repeat(1)", "produced more than 10000 outputs"),
        ("def f: f; f", "timed out after 3s"),
        ("def f: 1 + f; f", "recursed too deeply (stack overflow)"),
        ("[range(1e9)]", "the jq filter "),
        ("[range(1e6)] | tostring", "larger than the output limit"),
        ("last(range(1e12))", "timed out after 3s"),
    ] {
        let started = std::time::Instant::now();
        let r = call(filter);
        r.assert_code(1);
        assert!(r.stderr.contains("but the result handler failed: "), "{filter}: {}", r.stderr);
        assert!(r.stderr.contains(why), "{filter}: {}", r.stderr);
        if filter == "[range(1e9)]" {
            assert!(r.stderr.contains("timed out") || r.stderr.contains("ran out of memory"), "{}", r.stderr);
        }
        assert!(!r.stderr.contains("panicked"), "{filter}: {}", r.stderr);
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{filter} took {:?}", started.elapsed());
    }
}

#[test]
fn handlers_over_server_everything() {
    if !node_or_skip("handlers_over_server_everything") {
        return;
    }
    let p = Project::with_servers(&everything_yaml("everything"));
    let r = p.run(&[
        "mcp",
        "call",
        "everything.echo",
        "--args",
        r#"{"message": "hi there"}"#,
        "--jq",
        ".content? // . | ascii_upcase",
    ]);
    r.assert_ok();
    assert_eq!(r.stdout, "ECHO: HI THERE\n");
    let r = p.run(&[
        "mcp",
        "call",
        "everything.get-sum",
        "--args",
        r#"{"a": 2, "b": 3}"#,
        "--js",
        "result.content[0].text.match(/(\\d+)\\.?$/)[1]",
    ]);
    r.assert_ok();
    assert_eq!(r.stdout, "5\n");
}

// ---------------------------------------------------------------------------------------------
// Direct mode in `agent run`

fn run_project(fake: &FakeLlm, extra: &str) -> Project {
    let p = Project::new();
    p.write_config(&format!(
        "{}mcp:\n{extra}  servers:\n{}",
        fake.llm_yaml(Api::Anthropic),
        fixture_stdio_yaml("fixture", &[])
    ));
    p
}

#[test]
fn direct_mode_runs_the_result_handler_and_the_model_sees_only_its_value() {
    let fake = FakeLlm::start(vec![
        Reply::tools(
            "Reading.",
            &[
                (
                    "mcp_fixture_big",
                    json!({"bytes": 100000, "result_handler": {"language": "jq", "script": "{n: length}"}}),
                ),
                ("mcp_fixture_sleep", json!({"ms": 1, "result_handler": "tool_output.("})),
                ("mcp_fixture_add", json!({"a": 1, "b": 2, "result_handler": "tool_output.sum * 100"})),
            ],
        ),
        Reply::text("done"),
    ]);
    let p = run_project(&fake, "");
    p.run(&["run", "read big"]).assert_ok();
    let reqs = fake.requests();
    assert!(reqs[0].system().contains("optional `result_handler`"), "{}", reqs[0].system());
    let tools = reqs[0].body["tools"].as_array().unwrap();
    assert!(tools.iter().all(|t| t["input_schema"]["properties"]["result_handler"].is_object()));
    let results = reqs[1].tool_results();
    assert_eq!(results[0].1, r#"{"n":100000}"#);
    assert!(!results[0].2);
    assert!(results[1].2 && results[1].1.contains("(the tool was not called)"), "{:?}", results[1]);
    assert!(!p.server_logged("fixture", "fixture: sleep 1 ms started"));
    assert_eq!(results[2].1, "300");
}

#[test]
fn direct_mode_without_result_handlers_offers_no_such_argument() {
    let fake = FakeLlm::start(vec![Reply::tool("mcp_fixture_add", json!({"a": 1, "b": 2})), Reply::text("done")]);
    let p = run_project(&fake, "  result_handlers:\n    enabled: false\n");
    p.run(&["run", "add"]).assert_ok();
    let reqs = fake.requests();
    assert!(!reqs[0].system().contains("result_handler"));
    let tools = reqs[0].body["tools"].as_array().unwrap();
    assert!(tools.iter().all(|t| t["input_schema"]["properties"].get("result_handler").is_none()));
    assert_eq!(reqs[1].tool_results()[0].1, r#"{"sum":3}"#);
}

// ---------------------------------------------------------------------------------------------
// What a handler may touch: nothing on disk

/// A handler trying every storage global (`store`, the `data/` file API, `saveSkill`): each is
/// absent, so calling it is a `ReferenceError`.
const PLANTING_HANDLER: &str = "const names = ['store', 'load', 'readText', 'writeText', 'readJson', 'writeJson', \
                                'list', 'saveSkill'];\n\
     const seen = names.map((n) => typeof (globalThis as any)[n]);\n\
     const tries: string[] = [];\n\
     for (const f of [() => writeText('planted.txt', 'x'), () => store('planted', 1), \
     () => saveSkill('planted-skill', 'export function plantedSkill() { return 1; }', 'Planted.')]) {\n\
       try { f(); tries.push('ALLOWED'); } catch (e: any) { tries.push(e.name); }\n\
     }\n\
     return { seen, tries };";

fn assert_nothing_planted(p: &Project, value: &Value) {
    assert_eq!(
        *value,
        json!({"seen": vec!["undefined"; 8], "tries": ["ReferenceError", "ReferenceError", "ReferenceError"]}),
        "a handler reached storage"
    );
    let ws = p.path().join(".kodelet/mcp");
    for rel in ["data/planted.txt", "data/.store", "skills/planted-skill.ts"] {
        assert!(!ws.join(rel).exists(), "a handler wrote {rel}");
    }
}

/// A model in direct mode or a remote `serve` client writes the handler: it must not keep state
/// or plant a skill that later scripts (and the tree's README) pick up.
#[test]
fn handlers_cannot_write_state_or_plant_skills_through_mcp_call() {
    let p = Project::with_fixture();
    let r = p.run(&["mcp", "call", "fixture.echo", "--args", r#"{"message": "hi"}"#, "--js", PLANTING_HANDLER]);
    r.assert_ok();
    assert_nothing_planted(&p, &serde_json::from_str(&r.stdout).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_cannot_write_state_or_plant_skills_through_serve() {
    use rmcp::ServiceExt;
    let p = Project::with_fixture();
    let transport =
        rmcp::transport::TokioChildProcess::new(tokio::process::Command::from(p.cmd(&["mcp", "serve"]))).unwrap();
    let client = ().serve(transport).await.unwrap();
    let args = json!({"message": "hi", "result_handler": PLANTING_HANDLER});
    let params =
        rmcp::model::CallToolRequestParams::new("fixture_echo").with_arguments(args.as_object().unwrap().clone());
    let r = client.call_tool(params).await.unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let text = r.content[0].as_text().unwrap().text.clone();
    client.cancel().await.unwrap();
    assert_nothing_planted(&p, &serde_json::from_str(&text).unwrap());
}

// ---------------------------------------------------------------------------------------------
// The jq worker holds itself to its limits

/// `agent` killed with SIGKILL (no clean-up) while its jq worker spins on an endless filter: the
/// worker is gone within moments, not at the timeout, not never.
#[test]
fn the_jq_worker_dies_with_a_killed_agent() {
    let p = Project::new();
    p.write_config(&format!(
        "mcp:\n  code_execution:\n    timeout: 300s\n  servers:\n{}",
        fixture_stdio_yaml("fixture", &[])
    ));
    let mut agent = p
        .cmd(&["mcp", "call", "fixture.add", "--args", r#"{"a": 1, "b": 2}"#, "--jq", "last(range(1e15))"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let worker = loop {
        if let Some(&w) = descendants_with(agent.id(), "__jq-worker").first() {
            break w;
        }
        assert!(std::time::Instant::now() < deadline, "no jq worker started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let _cleanup = KillOnDrop(worker);
    agent.kill().unwrap();
    agent.wait().unwrap();
    let killed = std::time::Instant::now();
    while running(worker) && killed.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!running(worker), "the jq worker still runs {:?} after agent was killed", killed.elapsed());
}

/// A filter that allocates without end is stopped near the memory limit: the worker's peak
/// resident memory stays close to it (the binary's own pages on top), not at the address-space
/// backstop.
#[test]
fn a_memory_hungry_jq_filter_is_stopped_near_the_limit() {
    let p = Project::new();
    p.write_config(&format!(
        "mcp:\n  code_execution:\n    timeout: 60s\n    memory_limit_mb: 128\n  servers:\n{}",
        fixture_stdio_yaml("fixture", &[])
    ));
    let mut agent = p
        .cmd(&["mcp", "call", "fixture.add", "--args", r#"{"a": 1, "b": 2}"#, "--jq", "[range(1e9) | [., .]] | length"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut peak_kb = 0u64;
    while agent.try_wait().unwrap().is_none() {
        for w in descendants_with(agent.id(), "__jq-worker") {
            peak_kb = peak_kb.max(peak_rss_kb(w).unwrap_or(0));
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let out = agent.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the jq filter ran out of memory (limit 128 MB)"), "{stderr}");
    assert!(peak_kb > 0, "the worker was never seen");
    assert!(peak_kb < (128 + 96) * 1024, "the worker's peak RSS was {} MB under a 128 MB limit", peak_kb / 1024);
}

/// The jq worker is kept between filters (no process start per call), and a hostile filter that
/// kills it (a stack overflow) or outlives its timeout costs only that worker: the next filter
/// gets a fresh one and works.
#[tokio::test(flavor = "multi_thread")]
async fn the_jq_worker_is_kept_between_filters_and_replaced_after_a_crash() {
    use agent::handler::jq::{self, Isolation, JqLimits};
    // A memory limit no other test uses keeps these workers apart from any other in the pool.
    let limits =
        JqLimits { timeout: std::time::Duration::from_secs(2), memory_limit_mb: 77, max_output_bytes: 1 << 20 };
    let needle = format!("{}\0{}\0{}\0", jq::WORKER_ARG, std::process::id(), limits.memory_limit_mb);
    let workers = || support::procs::children_with(std::process::id(), &needle);
    let isolation = Isolation::Process(support::agent_bin());
    let run = |filter: &'static str| {
        let (limits, isolation) = (limits.clone(), isolation.clone());
        async move { jq::run(filter, &json!({"a": [1, 2, 3]}), &limits, &isolation).await }
    };
    assert_eq!(run(".a | add").await, Ok(vec![json!(6)]));
    let first = workers();
    assert_eq!(first.len(), 1, "one worker waits for the next filter: {first:?}");
    for _ in 0..5 {
        assert_eq!(run(".a | length").await, Ok(vec![json!(3)]));
    }
    assert_eq!(workers(), first, "the same worker ran every filter");

    let e = run("def f: 1 + f; f").await.unwrap_err();
    assert_eq!(e, "the jq filter recursed too deeply (stack overflow)");
    assert!(!running(first[0]), "the crashed worker is gone");
    assert_eq!(run(".a[0]").await, Ok(vec![json!(1)]));
    let second = workers();
    assert!(second.len() == 1 && second != first, "a fresh worker: {second:?} after {first:?}");

    let e = run("def f: f; f").await.unwrap_err();
    assert_eq!(e, "the jq filter timed out after 2s");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while running(second[0]) && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(!running(second[0]), "the worker stuck at the timeout was killed");
    assert_eq!(run(".a[2]").await, Ok(vec![json!(3)]));
}
