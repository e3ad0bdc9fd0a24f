//! The user and the host's model in the loop (elicitation and sampling), end to end: the real binary and the
//! fixture server's `--host-tools` (`elicit_form`, `elicit_url`, `sample`, `reflect`), each over
//! both paths a server can ask by: a classic server-to-client request (a 2025-11-25 session,
//! `--protocol 2025-11-25`) and an `input_required` result (a 2026-07-28 session). Policies
//! without a terminal, sampling answered by the scripted fake LLM in `mcp call`, `exec` and
//! `run`, denials and budgets, malformed requests, the reflection precondition; terminal flows
//! through a real pseudo-terminal.

use crate::support;
use crate::support::fake_llm;
use crate::support::pty;

use fake_llm::{Api, FakeLlm, Reply};
use pty::{key, spawn, spawn_command};
use rexpect::session::PtySession;
use serde_json::{Value, json};
use support::{Project, Run, everything_yaml, fixture_stdio_yaml, node_or_skip};

/// Both ways a server asks: (label, extra fixture arguments).
const PATHS: [(&str, &[&str]); 2] = [("classic", &["--protocol", "2025-11-25"]), ("mrtr", &[])];

/// A project with the fixture (`--host-tools` + `args`) and `keys` on its entry (YAML lines
/// without indentation), and the fake LLM as provider when given. The `mrtr` path connects with
/// `handshake: discover`, so `agent` and the fixture really hold a 2026-07-28 session.
fn project(fake: Option<&FakeLlm>, args: &[&str], keys: &[&str]) -> Project {
    let mut all = vec!["--host-tools"];
    all.extend_from_slice(args);
    let mut server = fixture_stdio_yaml("fixture", &all);
    if !args.contains(&"2025-11-25") {
        server.push_str("      handshake: discover\n");
    }
    for k in keys {
        server.push_str(&format!("      {k}\n"));
    }
    let llm = fake.map(|f| f.llm_yaml(Api::Anthropic)).unwrap_or_default();
    let p = Project::new();
    p.write_config(&format!("{llm}mcp:\n  servers:\n{server}"));
    p
}

fn call(p: &Project, tool: &str, args: Value) -> Run {
    p.run(&["mcp", "call", &format!("fixture.{tool}"), "--args", &args.to_string()])
}

/// The content of the fixture's `accept: {..}` line.
fn accepted(r: &Run, path: &str) -> Value {
    let line =
        r.stdout.lines().find(|l| l.starts_with("accept: ")).unwrap_or_else(|| panic!("{path}: {}", all_output(r)));
    serde_json::from_str(&line["accept: ".len()..]).unwrap()
}

fn all_output(r: &Run) -> String {
    format!("{}\n{}", r.stdout, r.stderr)
}

// ---------------------------------------------------------------------------------------------
// Elicitation policies without a terminal

#[test]
fn without_a_terminal_elicitation_is_declined_by_default_and_by_policy() {
    for (path, args) in PATHS {
        for keys in [&[][..], &["elicitation: decline"][..]] {
            let p = project(None, args, keys);
            let r = call(&p, "elicit_form", json!({}));
            r.assert_ok();
            assert!(r.stdout.contains("decline"), "{path} {keys:?}: {}", all_output(&r));
            let r = call(&p, "elicit_url", json!({}));
            r.assert_ok();
            assert!(r.stdout.contains("url: decline"), "{path} {keys:?}: {}", all_output(&r));
        }
    }
}

#[test]
fn accept_defaults_fills_every_field_from_its_default() {
    for (path, args) in PATHS {
        let p = project(None, args, &["elicitation: accept_defaults"]);
        let r = call(&p, "elicit_form", json!({}));
        r.assert_ok();
        let content = accepted(&r, path);
        assert_eq!(
            content,
            json!({"name": "Ada", "count": 3, "ratio": 0.5, "color": "g", "size": "l", "subscribe": true}),
            "{path}"
        );
        assert!(r.stderr.contains("fixture: elicitation accepted with defaults"), "{path}: {}", r.stderr);
        // URL mode cannot be answered with defaults.
        let r = call(&p, "elicit_url", json!({}));
        assert!(r.stdout.contains("url: decline"), "{path}: {}", all_output(&r));
    }
}

#[test]
fn accept_defaults_declines_when_a_required_field_has_no_default() {
    for (path, args) in PATHS {
        let p = project(None, args, &["elicitation: accept_defaults"]);
        let r = call(&p, "elicit_form", json!({"require_note": true}));
        r.assert_ok();
        assert!(r.stdout.contains("decline"), "{path}: {}", all_output(&r));
        assert!(!r.stdout.contains("accept"), "{path}: {}", all_output(&r));
    }
}

#[test]
fn accept_defaults_sends_the_default_array_of_a_multi_select() {
    for (path, args) in PATHS {
        let p = project(None, args, &["elicitation: accept_defaults"]);
        let r = call(&p, "elicit_form", json!({"multi": true}));
        r.assert_ok();
        let content = accepted(&r, path);
        assert_eq!(content, json!({"tags": ["docs"], "days": ["mon", "wed"]}), "{path}");
    }
}

#[test]
fn accept_defaults_refuses_a_default_outside_the_choices() {
    for (path, args) in PATHS {
        let p = project(None, args, &["elicitation: accept_defaults"]);
        let r = call(&p, "elicit_form", json!({"multi": true, "bad_default": true}));
        r.assert_ok();
        assert!(r.stdout.contains("decline"), "{path}: {}", all_output(&r));
        assert!(!r.stdout.contains("urgent"), "{path}: nothing outside the schema was sent: {}", all_output(&r));
        assert!(
            r.stderr.contains(
                "fixture: elicitation declined (policy `accept_defaults`): the defaults do not fit the requested schema: /tags/1: "
            ),
            "{path}: {}",
            r.stderr
        );
        assert!(r.stderr.contains("\"urgent\""), "{path}: {}", r.stderr);
    }
}

// ---------------------------------------------------------------------------------------------
// Sampling

#[test]
fn sampling_allow_is_answered_by_the_configured_provider() {
    for (path, args) in PATHS {
        let fake = FakeLlm::start(vec![Reply::text("forty-two")]);
        let p = project(Some(&fake), args, &["sampling: allow", "sampling_max_tokens: 64"]);
        let r = call(&p, "sample", json!({"prompt": "What is 6*7?", "max_tokens": 5000, "stop": ["END"]}));
        r.assert_ok();
        assert!(r.stdout.contains("said: forty-two"), "{path}: {}", all_output(&r));
        let reqs = fake.requests();
        assert_eq!(reqs.len(), 1, "{path}");
        let body = &reqs[0].body;
        assert_eq!(reqs[0].system(), "You are terse.", "{path}");
        assert_eq!(body["max_tokens"], 64, "{path}: capped by sampling_max_tokens");
        assert_eq!(body["stop_sequences"], json!(["END"]), "{path}");
        assert!(body["messages"].to_string().contains("What is 6*7?"), "{path}: {body}");
        assert!(body.get("tools").is_none(), "{path}: no tools offered to a sampling request");
        // What was asked and answered, shortened, on stderr.
        assert!(r.stderr.contains("fixture: sampling asked: What is 6*7?"), "{path}: {}", r.stderr);
        assert!(r.stderr.contains("fixture: sampling answered"), "{path}: {}", r.stderr);
    }
}

#[test]
fn sampling_denied_by_default_is_a_clear_error_and_the_model_is_not_asked() {
    for (path, args) in PATHS {
        let fake = FakeLlm::start(vec![Reply::text("never")]);
        let p = project(Some(&fake), args, &[]);
        let r = call(&p, "sample", json!({"prompt": "hi"}));
        assert_ne!(r.code, 0, "{path}: {}", all_output(&r));
        assert!(
            all_output(&r).contains("sampling is not allowed for server `fixture` (its entry says `sampling: deny`)"),
            "{path}: {}",
            all_output(&r)
        );
        assert!(fake.requests().is_empty(), "{path}");
    }
}

#[test]
fn sampling_ask_without_a_terminal_is_refused_not_hung() {
    let fake = FakeLlm::start(vec![Reply::text("never")]);
    let p = project(Some(&fake), PATHS[0].1, &["sampling: ask"]);
    let r = call(&p, "sample", json!({"prompt": "hi"}));
    assert!(
        all_output(&r).contains("needs the user's approval (`sampling: ask`), but there is no terminal"),
        "{}",
        all_output(&r)
    );
    assert!(fake.requests().is_empty());
}

#[test]
fn a_spent_sampling_budget_refuses_further_requests() {
    for (path, args) in PATHS {
        let fake = FakeLlm::start(vec![Reply::text("first"), Reply::text("second")]);
        // One request's worst case (its text, framing and 100 maxTokens: under 200) fits; what
        // it used plus a second one's worst case does not.
        let p = project(Some(&fake), args, &["sampling: allow", "sampling_budget: 200"]);
        // Two calls in one process (the budget is per run): a script.
        let r = p.run(&["mcp", "generate"]);
        r.assert_ok();
        let script = "import { sample } from './servers/fixture/index.ts';\n\
                      console.log(await sample({ prompt: 'one' }));\n\
                      try { console.log(await sample({ prompt: 'two' })); } catch (e) { console.log('ERR ' + e.message); }";
        let r = p.run_stdin(&["exec", "-"], script);
        let out = all_output(&r);
        assert!(out.contains("said: first"), "{path}: {out}");
        assert!(out.contains("the sampling budget of server `fixture` does not cover this request"), "{path}: {out}");
        assert_eq!(fake.requests().len(), 1, "{path}: the second request never reached the model");
    }
}

/// A hostile server asks for far more than the budget in one request: the request is refused
/// before the provider is called, by the budget (its worst case does not fit) or, without a
/// budget, by `sampling_max_input_bytes`.
#[test]
fn an_oversized_sampling_request_never_reaches_the_model() {
    for (path, args) in PATHS {
        for (keys, prompt_bytes, expected) in [
            (&["sampling: allow", "sampling_budget: 200"][..], 2_000, "does not cover this request: it may use up to"),
            (
                &["sampling: allow"][..],
                400_000,
                "the sampling request of server `fixture` is too large: 390.6 KB of text",
            ),
            (&["sampling: allow", "sampling_budget: 200"][..], 400_000, "is too large"),
        ] {
            let fake = FakeLlm::start(vec![Reply::text("never")]);
            let p = project(Some(&fake), args, keys);
            p.write("args.json", &json!({"prompt": "x".repeat(prompt_bytes)}).to_string());
            let r = p.run(&["mcp", "call", "fixture.sample", "--args", "@args.json"]);
            let out = all_output(&r);
            assert!(out.contains(expected), "{path} {keys:?} {prompt_bytes}: {out}");
            assert!(fake.requests().is_empty(), "{path} {keys:?} {prompt_bytes}: the provider was called");
        }
    }
}

/// A hostile server sends 20 sampling requests at once: together they never use more than the
/// budget (each reserves its worst case before the model is asked).
#[test]
fn concurrent_sampling_requests_never_exceed_the_budget() {
    const BUDGET: u64 = 600;
    for (path, args) in PATHS {
        let fake = FakeLlm::start((0..20).map(|_| Reply::text("ok")).collect());
        let p = project(Some(&fake), args, &["sampling: allow", &format!("sampling_budget: {BUDGET}")]);
        p.run(&["mcp", "generate"]).assert_ok();
        let script = "import { sample } from './servers/fixture/index.ts';\n\
                      const all = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => sample({ prompt: 'p' + i, max_tokens: 50 })));\n\
                      for (const r of all) console.log(r.status === 'fulfilled' ? String(r.value) : 'ERR ' + r.reason.message);";
        let r = p.run_stdin(&["exec", "-"], script);
        let out = all_output(&r);
        let reqs = fake.requests();
        let spent: u64 = reqs.iter().filter_map(|q| q.usage).map(|(i, o)| i + o).sum();
        assert!(!reqs.is_empty(), "{path}: none ran: {out}");
        assert!(spent <= BUDGET, "{path}: {} requests spent {spent} of {BUDGET} tokens: {out}", reqs.len());
        let refused = r.stdout.lines().filter(|l| l.contains("the sampling budget of server `fixture`")).count();
        assert_eq!(refused + reqs.len(), 20, "{path}: every request either ran or was refused: {out}");
    }
}

#[test]
fn a_malformed_sampling_request_gets_an_error_and_the_next_call_works() {
    for (path, args) in PATHS {
        let fake = FakeLlm::start(vec![Reply::text("fine")]);
        let p = project(Some(&fake), args, &["sampling: allow"]);
        let r = p.run(&["mcp", "generate"]);
        r.assert_ok();
        let script = "import { sample } from './servers/fixture/index.ts';\n\
                      try { console.log(await sample({ prompt: 'x', image: true })); } catch (e) { console.log('ERR ' + e.message); }\n\
                      console.log(await sample({ prompt: 'ok?' }));";
        let r = p.run_stdin(&["exec", "-"], script);
        let out = all_output(&r);
        assert!(out.contains("only text can be sampled; got `image` content"), "{path}: {out}");
        assert!(out.contains("said: fine"), "{path}: {out}");
    }
}

#[test]
fn roots_only_when_configured() {
    for (path, args) in PATHS {
        let p = project(None, args, &[]);
        let r = call(&p, "roots", json!({}));
        r.assert_ok();
        assert!(r.stdout.contains("advertised: false; roots: []"), "{path}: {}", all_output(&r));
        let p = project(None, args, &["roots: [shared]"]);
        std::fs::create_dir_all(p.path().join("shared")).unwrap();
        let r = call(&p, "roots", json!({}));
        r.assert_ok();
        let dir = std::fs::canonicalize(p.path().join("shared")).unwrap();
        let expected = json!([{"uri": format!("file://{}", dir.display()), "name": "shared"}]);
        assert!(r.stdout.contains(&format!("advertised: true; roots: {expected}")), "{path}: {}", all_output(&r));
    }
}

// ---------------------------------------------------------------------------------------------
// Other modes

#[test]
fn a_code_mode_script_whose_tool_call_elicits_and_samples() {
    for (path, args) in PATHS {
        let fake = FakeLlm::start(vec![Reply::text("sampled in exec")]);
        let p = project(Some(&fake), args, &["elicitation: accept_defaults", "sampling: allow"]);
        p.run(&["mcp", "generate"]).assert_ok();
        let script = "import { elicitForm, sample } from './servers/fixture/index.ts';\n\
                      console.log(await elicitForm({}));\nconsole.log(await sample({ prompt: 'p' }));";
        let r = p.run_stdin(&["exec", "-"], script);
        r.assert_ok();
        assert!(r.stdout.contains("accept: {"), "{path}: {}", all_output(&r));
        assert!(r.stdout.contains("said: sampled in exec"), "{path}: {}", all_output(&r));
    }
}

#[test]
fn run_direct_mode_counts_sampling_tokens_in_the_run() {
    for (path, args) in PATHS {
        let fake = FakeLlm::start(vec![
            Reply::tool("mcp_fixture_sample", json!({"prompt": "inner question"})),
            Reply::text("inner answer"),
            Reply::text("all done"),
        ]);
        let p = project(Some(&fake), args, &["sampling: allow"]);
        let mut cfg = std::fs::read_to_string(p.path().join("agent.yaml")).unwrap();
        cfg = cfg.replace("mcp:\n", "mcp:\n  execution_mode: direct\n");
        p.write_config(&cfg);
        let r = p.run(&["run", "--json", "use the sample tool"]);
        r.assert_ok();
        let t = r.json();
        assert_eq!(t["final_answer"], "all done", "{path}: {}", r.stderr);
        assert!(t.to_string().contains("said: inner answer"), "{path}: {t}");
        let reqs = fake.requests();
        assert_eq!(reqs.len(), 3, "{path}");
        let (inp, out) = reqs.iter().filter_map(|q| q.usage).fold((0, 0), |(a, b), (i, o)| (a + i, b + o));
        assert_eq!(t["usage"]["input_tokens"], inp, "{path}: sampling counted: {}", t["usage"]);
        assert_eq!(t["usage"]["output_tokens"], out, "{path}");
    }
}

// ---------------------------------------------------------------------------------------------
// server-everything (its sampling and elicitation tools exist only for clients that advertise them)

#[test]
fn server_everything_sampling_and_elicitation_tools() {
    if !node_or_skip("server-everything sampling and elicitation") {
        return;
    }
    let fake = FakeLlm::start(vec![Reply::text("hello from the host model")]);
    let mut server = everything_yaml("everything");
    server.push_str("      sampling: allow\n      elicitation: accept_defaults\n");
    let p = Project::new();
    p.write_config(&format!("{}mcp:\n  servers:\n{server}", fake.llm_yaml(Api::Anthropic)));
    let r = p.run(&["mcp", "call", "everything.trigger-sampling-request", "--args", r#"{"prompt": "say hi"}"#]);
    r.assert_ok();
    assert!(r.stdout.contains("hello from the host model"), "{}", all_output(&r));
    assert_eq!(fake.requests()[0].system(), "You are a helpful test server.");
    // Its form has a required `name` without a default: accept_defaults declines.
    let r = p.run(&["mcp", "call", "everything.trigger-elicitation-request", "--args", "{}"]);
    r.assert_ok();
    assert!(r.stdout.contains("User declined"), "{}", all_output(&r));
    // Without the policies the tools are not offered at all (capabilities not advertised).
    let q = Project::with_servers(&everything_yaml("everything"));
    let r = q.run(&["mcp", "call", "everything.trigger-sampling-request", "--args", r#"{"prompt": "x"}"#]);
    assert!(r.stderr.contains("unknown tool `everything.trigger-sampling-request`"), "{}", all_output(&r));
}

// ---------------------------------------------------------------------------------------------
// Reflection before a tool runs

#[test]
fn reflect_asks_the_model_on_a_cache_miss_only() {
    for (path, args) in PATHS {
        let fake = FakeLlm::start(vec![
            Reply::text(r#"{"reason": "the user asked to clean up", "risk": "low"}"#),
            Reply::text("not json at all"),
        ]);
        let p = project(Some(&fake), args, &["sampling: allow"]);
        p.run(&["mcp", "generate"]).assert_ok();
        let script = "import { reflect } from './servers/fixture/index.ts';\n\
                      console.log(await reflect({ action: 'delete', target: 'tmp' }));\n\
                      console.log(await reflect({ action: 'delete', target: 'tmp' }));\n\
                      try { console.log(await reflect({ action: 'delete', target: 'prod' })); } catch (e) { console.log('ERR ' + e.message); }";
        let r = p.run_stdin(&["exec", "-"], script);
        let out = all_output(&r);
        let lines: Vec<&str> = r.stdout.lines().collect();
        assert!(lines.first().is_some_and(|l| l.contains("did delete to tmp (cache miss")), "{path}: {out}");
        assert!(lines.get(1).is_some_and(|l| l.contains("did delete to tmp (cache hit")), "{path}: {out}");
        assert!(out.contains("reflection rejected: not JSON"), "{path}: {out}");
        let reqs = fake.requests();
        assert_eq!(reqs.len(), 2, "{path}: one request per miss, none for the hit");
        assert!(reqs[0].body["messages"].to_string().contains("justify the call"), "{path}");
    }
}

// ---------------------------------------------------------------------------------------------
// Terminal flows (a real pseudo-terminal)

const DOWN: &str = "\x1b[B";

#[test]
fn terminal_form_shows_the_fields_and_sends_the_validated_answer() {
    for (path, args) in PATHS {
        let p = project(None, args, &[]);
        let mut s = spawn(&p, &["mcp", "call", "fixture.elicit_form", "--args", "{}"]);
        s.exp_string("fixture asks: Tell me about the order").unwrap_or_else(|e| panic!("{path}: {e}"));
        s.exp_string("fill in the form").unwrap();
        key(&mut s, "\r");
        // Properties come in the schema's order: name, count, ratio, color, size, subscribe.
        let fill = |s: &mut PtySession, count: &str| {
            s.exp_string("Your name").unwrap();
            s.exp_string("name* (string) [Ada]").unwrap();
            s.send_line("Grace").unwrap();
            s.exp_string("count (integer)").unwrap();
            s.send_line(count).unwrap();
            s.exp_string("ratio (number) [0.5]").unwrap();
            s.send_line("").unwrap();
            // Choices are listed by their titles (`enumNames`, `oneOf` titles); their values are sent.
            s.exp_string("color (choice)").unwrap();
            s.exp_string("Blue").unwrap();
            key(s, "\r");
            s.exp_string("size (choice)").unwrap();
            s.exp_string("Large").unwrap();
            key(s, "\r");
            s.exp_string("subscribe (boolean)").unwrap();
            key(s, "\r");
            s.exp_string("Send this answer?").unwrap();
            key(s, "\r");
        };
        // 11 is an integer but over the schema's maximum: the form comes again with the reason.
        fill(&mut s, "11");
        s.exp_string("/count").unwrap_or_else(|e| panic!("{path}: {e}"));
        s.exp_string("fill in the form").unwrap();
        key(&mut s, "\r");
        fill(&mut s, "7");
        s.exp_string("\"name\":\"Grace\",\"count\":7,\"ratio\":0.5,\"color\":\"g\",\"size\":\"l\"")
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        s.exp_eof().unwrap();
    }
}

#[test]
fn terminal_multi_select_picks_several_choices_within_the_bounds() {
    for (path, args) in PATHS {
        let p = project(None, args, &[]);
        let mut s = spawn(&p, &["mcp", "call", "fixture.elicit_form", "--args", r#"{"multi": true}"#]);
        s.exp_string("fill in the form").unwrap_or_else(|e| panic!("{path}: {e}"));
        key(&mut s, "\r");
        s.exp_string("Labels").unwrap();
        s.exp_string("tags* (choices, 1 to 2)").unwrap();
        s.exp_string("Performance").unwrap();
        // `Documentation` is pre-selected (the default); add `Bug report` and `Performance`: three.
        key(&mut s, " ");
        key(&mut s, DOWN);
        key(&mut s, DOWN);
        key(&mut s, " ");
        key(&mut s, "\r");
        s.exp_string("`tags`: choose at most 2 (got 3)").unwrap_or_else(|e| panic!("{path}: {e}"));
        // Asked again with those three checked: uncheck them all, which is too few.
        for k in [" ", DOWN, " ", DOWN, " ", "\r"] {
            key(&mut s, k);
        }
        s.exp_string("`tags`: choose at least 1 (got 0)").unwrap_or_else(|e| panic!("{path}: {e}"));
        // Two of three: the first and the last.
        for k in [" ", DOWN, DOWN, " ", "\r"] {
            key(&mut s, k);
        }
        s.exp_string("days (choices)").unwrap();
        s.exp_string("wed").unwrap();
        key(&mut s, "\r");
        s.exp_string("Send this answer?").unwrap();
        key(&mut s, "\r");
        let (_, line) = s.exp_regex(r"accept: \{[^\r\n]*\}").unwrap_or_else(|e| panic!("{path}: {e}"));
        let content: Value = serde_json::from_str(&line["accept: ".len()..]).unwrap();
        assert_eq!(content, json!({"tags": ["bug", "perf"], "days": ["mon", "wed"]}), "{path}");
        s.exp_eof().unwrap();
    }
}

#[test]
fn terminal_url_mode_shows_the_url_and_waits_for_confirmation() {
    let p = project(None, PATHS[0].1, &[]);
    let mut cmd = p.cmd(&["mcp", "call", "fixture.elicit_url", "--args", "{}"]);
    // No browser opener: the URL is shown, and only confirmation is asked.
    cmd.env("PATH", "/nonexistent");
    let mut s = spawn_command(cmd, 30_000);
    s.exp_string("fixture asks you to open a URL: Connect your account").unwrap();
    s.exp_string("https://example.com/connect?id=42").unwrap();
    s.exp_string("When you are done there:").unwrap();
    key(&mut s, DOWN);
    key(&mut s, "\r");
    s.exp_string("url: decline").unwrap();
    s.exp_eof().unwrap();
}

#[test]
fn terminal_sampling_ask_shows_the_request_before_it_is_sent() {
    for (answer, expect, asked) in [("y", "said: approved", 1), ("n", "the user declined the sampling request", 0)] {
        let fake = FakeLlm::start(vec![Reply::text("approved")]);
        let p = project(Some(&fake), PATHS[1].1, &["sampling: ask"]);
        let mut s = spawn(&p, &["mcp", "call", "fixture.sample", "--args", r#"{"prompt": "secret plans"}"#]);
        s.exp_string("fixture wants to ask the model (max 100 tokens):").unwrap();
        s.exp_string("system: You are terse.").unwrap();
        s.exp_string("user: secret plans").unwrap();
        s.exp_string("Send this to the model?").unwrap();
        key(&mut s, answer);
        key(&mut s, "\r");
        s.exp_string(expect).unwrap();
        s.exp_eof().unwrap();
        assert_eq!(fake.requests().len(), asked);
    }
}

#[test]
fn waiting_for_the_user_pauses_the_call_and_script_timeouts() {
    let p = project(None, PATHS[1].1, &["call_timeout: 1s"]);
    let cfg = std::fs::read_to_string(p.path().join("agent.yaml")).unwrap();
    p.write_config(&cfg.replace("mcp:\n", "mcp:\n  code_execution:\n    timeout: 1s\n"));
    p.run(&["mcp", "generate"]).assert_ok();
    p.write(
        "s.ts",
        "import { elicitUrl } from './.kodelet/mcp/servers/fixture/index.ts';\nconsole.log(await elicitUrl({}));\n",
    );
    let mut cmd = p.cmd(&["exec", "s.ts"]);
    cmd.env("PATH", "/nonexistent");
    let mut s = spawn_command(cmd, 30_000);
    s.exp_string("When you are done there:").unwrap();
    // The user takes longer than both timeouts (1 s each): that delay is what is tested.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    key(&mut s, "\r");
    s.exp_string("url: accept").unwrap();
    s.exp_eof().unwrap();
}
