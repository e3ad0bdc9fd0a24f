//! Approvals for destructive tools (`mcp.approvals`, docs/approvals.md): the fixture server's
//! `delete_item` (`--destructive`, annotated `destructiveHint: true`) through every path that
//! calls tools — `mcp call`, a script through the bridge, `agent run` direct and progressive mode — under the
//! policy without a terminal, `--yes`, `require`/`exempt` patterns, and the prompt on a real
//! pseudo-terminal (approve once, approve for the run, deny; a script's timeout paused meanwhile).

use crate::support;
use crate::support::fake_llm;
use crate::support::pty;

use std::time::Duration;

use fake_llm::{Api, FakeLlm, Reply};
use pty::{exit_code, key, spawn, spawn_timeout};
use rexpect::session::PtySession;
use serde_json::json;
use support::{Project, fixture_stdio_yaml};

const UP: &str = "\x1b[A";
/// A call the user denied at the prompt.
const DENIED: &str = "denied by the user: fixture.delete_item";
/// A call the policy denied because there was no terminal to ask anyone.
const NO_TERMINAL: &str = "denied (no terminal to ask; pass --yes or set mcp.approvals): fixture.delete_item";

/// A project with the destructive fixture and `approvals` (YAML under `mcp:`, indented 2).
fn project(approvals: &str) -> Project {
    let p = Project::new();
    p.write_config(&format!("mcp:\n{approvals}  servers:\n{}", fixture_stdio_yaml("fixture", &["--destructive"])));
    p
}

// ---------------------------------------------------------------------------------------------
// Without a terminal: the policy

#[test]
fn mcp_call_is_denied_by_default_and_yes_or_policy_allow_runs_it() {
    let p = project("");
    let r = p.run(&["mcp", "call", "fixture.delete_item", "--args", r#"{"id": "a1"}"#]);
    r.assert_code(1);
    assert_eq!(r.stderr, format!("error: {NO_TERMINAL}\n"));
    assert!(!r.stdout.contains("deleted"), "{}", r.stdout);

    // --json: the isError result the model and scripts see.
    let r = p.run(&["mcp", "call", "fixture.delete_item", "--args", r#"{"id": "a1"}"#, "--json"]);
    r.assert_code(1);
    assert_eq!(r.json()["isError"], true);
    assert_eq!(r.json()["content"][0]["text"], NO_TERMINAL);

    let r = p.run(&["mcp", "call", "fixture.delete_item", "--args", r#"{"id": "a1"}"#, "--yes"]);
    r.assert_ok();
    assert_eq!(r.stdout, "deleted a1\n");

    let allow = project("  approvals:\n    policy: allow\n");
    let r = allow.run(&["mcp", "call", "fixture.delete_item", "--args", r#"{"id": "b2"}"#]);
    r.assert_ok();
    assert_eq!(r.stdout, "deleted b2\n");

    // Tools without a destructive hint are not asked about.
    p.run(&["mcp", "call", "fixture.add", "--args", r#"{"a": 1, "b": 2}"#]).assert_ok();
}

/// `--yes` approves the call named on the command line and nothing else: a result handler that
/// calls a destructive tool (one copied from a hostile server's docs, say) gets the policy's
/// answer, even when it calls the very tool `--yes` approved once.
#[test]
fn yes_approves_the_named_call_and_not_what_its_handler_calls() {
    let p = project("  result_handlers:\n    tool_calls: true\n");
    let handler = |id: &str| {
        format!(
            "const r = await callMCPTool('fixture', 'delete_item', {{ id: '{id}' }})\n\
             .then(v => 'ran: ' + String(v), e => 'refused: ' + e.message);\n\
             return String(tool_output) + ' | ' + r;"
        )
    };
    let r = p.run(&["mcp", "call", "fixture.echo", "--args", r#"{"message": "hi"}"#, "--yes", "--js", &handler("x9")]);
    r.assert_ok();
    assert_eq!(r.stdout, format!("hi | refused: fixture.delete_item failed: {NO_TERMINAL}\n"), "{}", r.stderr);

    // The named destructive call runs once; the handler's second call of the same tool does not.
    let r =
        p.run(&["mcp", "call", "fixture.delete_item", "--args", r#"{"id": "a1"}"#, "--yes", "--js", &handler("b2")]);
    r.assert_ok();
    assert_eq!(r.stdout, format!("deleted a1 | refused: fixture.delete_item failed: {NO_TERMINAL}\n"), "{}", r.stderr);
}

#[test]
fn require_and_exempt_patterns_decide_over_the_hints() {
    let p = project("  approvals:\n    require: [\"fixture.text.*\", \"fixture.ad?\"]\n    exempt: [\"*.delete_*\"]\n");
    let r = p.run(&["mcp", "call", "fixture.text.upper", "--args", r#"{"text": "x"}"#]);
    r.assert_code(1);
    assert!(
        r.stderr.contains("denied (no terminal to ask; pass --yes or set mcp.approvals): fixture.text.upper"),
        "{}",
        r.stderr
    );
    let r = p.run(&["mcp", "call", "fixture.add", "--args", r#"{"a": 1, "b": 2}"#]);
    r.assert_code(1);
    assert!(
        r.stderr.contains("denied (no terminal to ask; pass --yes or set mcp.approvals): fixture.add"),
        "{}",
        r.stderr
    );
    // Exempt although destructive; echo matches no pattern (read-only).
    p.run(&["mcp", "call", "fixture.delete_item", "--args", r#"{"id": "c3"}"#]).assert_ok();
    p.run(&["mcp", "call", "fixture.echo", "--args", r#"{"message": "hi"}"#]).assert_ok();
}

#[test]
fn a_script_reads_the_denial_as_a_tool_error() {
    let p = project("");
    let script = "let caught = 'none';\n\
         try { await callMCPTool('fixture', 'delete_item', { id: 'a1' }); }\n\
         catch (e: any) { caught = `${e.name}: ${e.message}`; }\n\
         console.log(caught);\n";
    let r = p.run_stdin(&["exec", "-"], script);
    r.assert_ok();
    assert!(r.stdout.starts_with("MCPToolError: "), "{}", r.stdout);
    assert!(r.stdout.contains(NO_TERMINAL), "{}", r.stdout);
}

/// Without a terminal nobody is asked, so nobody is blamed: the script and the model read that
/// there was no terminal and how to let the call run; `--yes` lets every call of the command run.
/// (A hostile or careless script or model would otherwise see the same denial as a considered no.)
#[test]
fn exec_and_run_without_a_terminal_say_why_and_yes_approves() {
    let p = project("");
    p.write("del.ts", "console.log(String(await callMCPTool('fixture', 'delete_item', { id: 'a1' })));\n");
    let r = p.run(&["exec", "del.ts"]);
    r.assert_code(1);
    assert!(r.stderr.contains(NO_TERMINAL), "{}", r.stderr);
    assert!(!r.stderr.contains(DENIED) && !r.stdout.contains("deleted"), "{r:?}");
    let r = p.run(&["exec", "--yes", "del.ts"]);
    r.assert_ok();
    assert_eq!(r.stdout, "deleted a1\n");

    for (flags, expected) in [(&[][..], (NO_TERMINAL, true)), (&["--yes"][..], ("deleted a1", false))] {
        let fake =
            FakeLlm::start(vec![Reply::tool("mcp_fixture_delete_item", json!({"id": "a1"})), Reply::text("Done.")]);
        let p = Project::new();
        p.write_config(&format!(
            "{}mcp:\n  servers:\n{}",
            fake.llm_yaml(Api::Anthropic),
            fixture_stdio_yaml("fixture", &["--destructive"])
        ));
        let mut args = vec!["run"];
        args.extend_from_slice(flags);
        args.push("Delete item a1");
        p.run(&args).assert_ok();
        let reqs = fake.requests();
        assert_eq!(reqs[1].tool_results(), vec![("toolu_1_0".to_string(), expected.0.to_string(), expected.1)]);
    }
}

#[test]
fn direct_mode_gives_the_model_the_denial() {
    let fake = FakeLlm::start(vec![
        Reply::tool("mcp_fixture_delete_item", json!({"id": "a1"})),
        Reply::text("The user said no."),
    ]);
    let p = Project::new();
    p.write_config(&format!(
        "{}mcp:\n  servers:\n{}",
        fake.llm_yaml(Api::Anthropic),
        fixture_stdio_yaml("fixture", &["--destructive"])
    ));
    let r = p.run(&["run", "Delete item a1"]);
    r.assert_ok();
    let reqs = fake.requests();
    assert_eq!(reqs[1].tool_results(), vec![("toolu_1_0".to_string(), NO_TERMINAL.to_string(), true)]);
}

#[test]
fn progressive_mode_gives_the_model_the_denial() {
    let fake = FakeLlm::start(vec![
        Reply::tool("call_tool", json!({"name": "fixture.delete_item", "arguments": {"id": "a1"}})),
        Reply::text("The user said no."),
    ]);
    let p = Project::new();
    p.write_config(&format!(
        "{}mcp:\n  execution_mode: progressive\n  servers:\n{}",
        fake.llm_yaml(Api::Anthropic),
        fixture_stdio_yaml("fixture", &["--destructive"])
    ));
    let r = p.run(&["run", "Delete item a1"]);
    r.assert_ok();
    let results = fake.requests()[1].tool_results();
    assert_eq!(results.len(), 1);
    assert!(results[0].1.contains(NO_TERMINAL) && results[0].2, "{results:?}");
}

// ---------------------------------------------------------------------------------------------
// On a terminal: the prompt

/// `needle` within 30 s on a session whose expectations time out sooner (output is kept).
fn wait_for(s: &mut PtySession, needle: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while let Err(e) = s.exp_string(needle) {
        assert!(std::time::Instant::now() < deadline, "no `{needle}`: {e}");
    }
}

const QUESTION: &str = "run `fixture.delete_item` (a destructive tool) with {\"id\":";

#[test]
fn the_prompt_approves_once_or_denies() {
    let p = project("");
    let mut s = spawn(&p, &["mcp", "call", "fixture.delete_item", "--args", r#"{"id": "a1"}"#]);
    s.exp_string(QUESTION).unwrap();
    s.exp_string("deny").unwrap();
    // Deny is the default; two up is `approve once`.
    key(&mut s, UP);
    key(&mut s, UP);
    key(&mut s, "\r");
    s.exp_string("deleted a1").unwrap();
    assert_eq!(exit_code(&mut s), 0);

    let mut s = spawn(&p, &["mcp", "call", "fixture.delete_item", "--args", r#"{"id": "a1"}"#]);
    s.exp_string(QUESTION).unwrap();
    s.exp_string("deny").unwrap();
    key(&mut s, "\r");
    s.exp_string(&format!("error: {DENIED}")).unwrap();
    assert_eq!(exit_code(&mut s), 1);
}

#[test]
fn ctrl_c_at_the_prompt_interrupts_without_calling() {
    let p = project("");
    let mut s = spawn(&p, &["mcp", "call", "fixture.delete_item", "--args", r#"{"id": "a1"}"#]);
    s.exp_string(QUESTION).unwrap();
    s.exp_string("deny").unwrap();
    s.send_control('c').unwrap();
    // The cursor the list hid is shown again.
    s.exp_string("\x1b[?25h").unwrap();
    s.exp_string("interrupted").unwrap();
    assert_eq!(exit_code(&mut s), 130);
}

/// Approved for the run: the script's second call is not asked. The script's 1 s timeout does
/// not fire while the question waits (longer than that).
#[test]
fn approve_for_the_run_asks_once_and_the_script_timeout_waits_for_the_user() {
    let p = project("");
    p.write(
        "twice.ts",
        "const a = await callMCPTool('fixture', 'delete_item', { id: 'one' });\n\
         const b = await callMCPTool('fixture', 'delete_item', { id: 'two' });\n\
         console.log(JSON.stringify([a, b]));\n",
    );
    // Every expectation times out after 2.5 s, over twice the script's timeout.
    let mut s = spawn_timeout(&p, &["exec", "--timeout", "1s", "twice.ts"], 2_500);
    wait_for(&mut s, QUESTION);
    wait_for(&mut s, "deny");
    let waited = std::time::Instant::now();
    let early = s.exp_regex("timed out|deleted");
    assert!(early.is_err(), "the script went on without an answer: {early:?}");
    assert!(waited.elapsed() >= Duration::from_secs(2));
    key(&mut s, UP);
    key(&mut s, "\r");
    wait_for(&mut s, "deleted one");
    wait_for(&mut s, "deleted two");
    assert_eq!(exit_code(&mut s), 0);
    let out = s.exp_eof().unwrap_or_default();
    assert!(!out.contains(QUESTION), "asked a second time: {out}");
}
