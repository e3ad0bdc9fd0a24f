//! Code-mode sessions: the steps of one `agent run` share an isolate (what a step defines at its
//! top level is there in the next), and `serve`'s `execute_code` keeps one per `session` name,
//! per MCP session. Driven through the real binary: a scripted fake LLM for `run`, an HTTP MCP
//! client for `serve`; the worker processes that hold sessions are looked up in `/proc`.

use crate::support;
use crate::support::fake_llm;

use fake_llm::{Api, FakeLlm, Reply};
use serde_json::json;
use support::{Project, fixture_stdio_yaml};

/// A project whose `agent run` talks to `fake`, with the fixture server and `code_execution`
/// settings `extra` (YAML lines under `mcp.code_execution`, indented by four spaces).
fn run_project(fake: &FakeLlm, extra: &str) -> Project {
    let p = Project::new();
    p.write_config(&format!(
        "{}mcp:\n  code_execution:\n    regenerate_on_startup: true\n{extra}  servers:\n{}",
        fake.llm_yaml(Api::Anthropic),
        fixture_stdio_yaml("fixture", &[])
    ));
    p
}

fn step(code: &str) -> Reply {
    Reply::tool("code_execution", json!({ "code": code }))
}

/// The result of each `code_execution` step, in order: (text, is_error).
fn step_results(fake: &FakeLlm) -> Vec<(String, bool)> {
    fake.requests().iter().skip(1).flat_map(|r| r.tool_results()).map(|(_, text, err)| (text, err)).collect()
}

const DEFINE: &str = r#"
import { add } from "./servers/fixture/index.ts";
function double(n: number): number { return n * 2; }
const data = { base: 20 };
let counter = 1;
console.log("defined");
"#;

const USE: &str = r#"
counter += 1;
const sum = await add({ a: double(data.base), b: counter });
console.log(`sum ${sum.sum} counter ${counter}`);
"#;

/// A model defines a function, a constant, a variable and an import in one step and uses them in
/// the next (assigning the variable too); with `session: script` the next step knows none of them.
#[test]
fn a_runs_steps_share_definitions_and_session_script_keeps_them_apart() {
    let fake = FakeLlm::start(vec![step(DEFINE), step(USE), step("console.log(counter);"), Reply::text("done")]);
    let p = run_project(&fake, "");
    p.run(&["run", "--mode", "code", "add things"]).assert_ok();
    let results = step_results(&fake);
    assert_eq!(results.len(), 3, "{results:?}");
    assert_eq!(results[0], ("defined\n".to_string(), false));
    assert_eq!(results[1], ("sum 42 counter 2\n".to_string(), false), "the second step sees the first's names");
    assert_eq!(results[2], ("2\n".to_string(), false), "an assignment reaches the first step's binding");

    let fake = FakeLlm::start(vec![step(DEFINE), step(USE), Reply::text("done")]);
    let p = run_project(&fake, "    session: script\n");
    p.run(&["run", "--mode", "code", "add things"]).assert_ok();
    let results = step_results(&fake);
    assert_eq!(results[0], ("defined\n".to_string(), false));
    let (text, is_error) = &results[1];
    assert!(*is_error, "{text}");
    assert!(text.contains("ReferenceError") && text.contains("is not defined"), "{text}");
    assert!(text.contains("main.ts:2:"), "the position is the step's own line: {text}");
}

/// A session's later steps are modules of their own (`main.ts#step-N`) that never come back, so
/// the engine keeps no compiled copy of them: writing one cost each step a new file (0.1-0.3 ms
/// here, a third of a trivial step). Its first step (`main.ts`) and scripts run one
/// per isolate (`session: script`, `agent exec`) are still cached, which also shows the markers
/// below are found where they are written.
#[test]
fn later_session_steps_leave_no_compiled_copy_in_the_bytecode_cache() {
    let cached_steps = |session: &str| -> Vec<usize> {
        let marker = |n: usize| format!("step-marker-7f3a-{n}");
        let fake = FakeLlm::start(vec![
            step(&format!("const a = '{}';\nconsole.log(a.length);\n", marker(1))),
            step(&format!("console.log('{}'.length);\n", marker(2))),
            step(&format!("console.log('{}'.length);\n", marker(3))),
            Reply::text("done"),
        ]);
        let p = run_project(&fake, session);
        let cache = p.path().join("cache");
        let out = p
            .cmd(&["run", "--mode", "code", "count"])
            .env("XDG_CACHE_HOME", &cache)
            .env_remove("V82JSC_BC_CACHE_DIR")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(step_results(&fake).len(), 3);
        let files: Vec<Vec<u8>> = support::paths_under(&cache.join("agent/quickjs-bytecode"))
            .iter()
            .filter(|f| f.extension().is_some_and(|x| x == "qbc"))
            .filter_map(|f| std::fs::read(f).ok())
            .collect();
        let holds = |b: &[u8], m: &str| b.windows(m.len()).any(|w| w == m.as_bytes());
        (1..=3).filter(|&n| files.iter().any(|b| holds(b, &marker(n)))).collect()
    };
    assert_eq!(cached_steps(""), [1], "only the session's first step (main.ts) is cached");
    assert_eq!(cached_steps("    session: script\n"), [1, 2, 3], "each one-off script is cached");
}

/// A step that runs past the timeout ends the session and says so; the next step says it runs in
/// a fresh session, and the earlier names are gone. Errors in a step that is not stopped (a throw)
/// keep the session, and what the step defined before it threw stays.
#[test]
fn a_step_stopped_by_the_timeout_ends_the_session_and_the_next_says_it_is_fresh() {
    let fake = FakeLlm::start(vec![
        step("const kept = 'here';\nthrow new Error('boom');\n"),
        step("console.log(kept);\nwhile (true) {}\n"),
        step("console.log(typeof kept);\nconst again = 1;\n"),
        step("console.log(again);\n"),
        Reply::text("done"),
    ]);
    let p = run_project(&fake, "    timeout: 1s\n");
    p.run(&["run", "--mode", "code", "loop"]).assert_ok();
    let results = step_results(&fake);
    assert_eq!(results.len(), 4, "{results:?}");
    assert!(results[0].1 && results[0].0.contains("Error: boom"), "{:?}", results[0]);
    assert!(!results[0].0.contains("session"), "a throw does not end the session: {:?}", results[0]);
    let (stopped, is_error) = &results[1];
    assert!(*is_error, "{stopped}");
    assert!(stopped.starts_with("here\n"), "the name defined before the throw was kept: {stopped}");
    assert!(
        stopped.ends_with(
            "[the session ended: timed out after 1s; the next step starts in a fresh isolate, earlier definitions \
             are gone]"
        ),
        "{stopped}"
    );
    assert_eq!(
        results[2],
        (
            "[a fresh session: the previous one ended (timed out after 1s); its definitions are gone]\nundefined\n"
                .to_string(),
            false
        )
    );
    assert_eq!(results[3], ("1\n".to_string(), false), "the fresh session is a session too");
}

/// The heap limit is the session's: steps that each add a little to a kept array are stopped once
/// the session as a whole is over the limit, although no step alone comes near it.
#[test]
fn the_memory_limit_applies_to_the_whole_session() {
    let grow = "hold.push(new Array(1 << 20).fill(7));\nconsole.log(hold.length);\n";
    let mut replies = vec![step("const hold: number[][] = [];\nconsole.log(0);\n")];
    replies.extend((0..8).map(|_| step(grow)));
    replies.push(Reply::text("done"));
    let fake = FakeLlm::start(replies);
    let p = run_project(&fake, "    memory_limit_mb: 48\n");
    p.run(&["run", "--mode", "code", "grow"]).assert_ok();
    let results = step_results(&fake);
    assert_eq!(results.len(), 9, "{results:?}");
    let stopped = results.iter().position(|(_, err)| *err).expect("no step was stopped");
    assert!(stopped >= 2, "a single step alone must fit: {results:?}");
    for (i, (text, _)) in results[1..stopped].iter().enumerate() {
        assert_eq!(text, &format!("{}\n", i + 1), "{results:?}");
    }
    let (text, _) = &results[stopped];
    assert!(text.contains("memory limit of 48 MB exceeded"), "{text}");
    assert!(text.contains("[the session ended: memory limit of 48 MB exceeded;"), "{text}");
    let (next, is_error) = &results[stopped + 1];
    assert!(*is_error, "{next}");
    assert!(
        next.starts_with(
            "[a fresh session: the previous one ended (memory limit of 48 MB exceeded); its definitions \
             are gone]\n"
        ),
        "{next}"
    );
    assert!(next.contains("ReferenceError: hold is not defined"), "{next}");
}

// ---------------------------------------------------------------------------------------------
// serve's execute_code sessions

use crate::serve::{Mcp, Serving, tool_text};
use std::time::Duration;
use support::procs::children_with;

/// A fixture project whose serve has the given `serve:` lines (indented by two spaces).
fn serve_project(serve_yaml: &str) -> Project {
    let p = Project::new();
    p.write_config(&format!("mcp:\n  servers:\n{}serve:\n{serve_yaml}", fixture_stdio_yaml("fixture", &[])));
    p
}

/// Serve over HTTP with the given `serve:` lines, its client, and two MCP sessions.
async fn serve_two_clients(serve_yaml: &str) -> (Project, Serving, Mcp, String, String) {
    let p = serve_project(serve_yaml);
    let s = Serving::start(&p, &[], &[]);
    let mcp = s.client();
    let (a, b) = (mcp.initialize().await.unwrap(), mcp.initialize().await.unwrap());
    (p, s, mcp, a, b)
}

/// The script worker processes of serve right now.
fn workers(s: &Serving) -> Vec<u32> {
    let mut w = children_with(s.pid(), "__js-worker");
    w.sort();
    w
}

async fn exec(mcp: &Mcp, client: &str, session: Option<&str>, code: &str) -> (String, bool) {
    let mut args = json!({ "code": code });
    if let Some(name) = session {
        args["session"] = json!(name);
    }
    tool_text(&mcp.call(client, "execute_code", args).await)
}

/// A remote client that names another client's session (guessing or knowing its name) gets a
/// session of its own: it sees none of the other's definitions, and what it defines does not
/// reach the other. Calls without `session` keep nothing, and a bad name is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_naming_the_same_session_never_see_each_others_state() {
    let (_p, _s, mcp, alice, mallory) = serve_two_clients("  code_sessions_per_client: 4\n").await;
    let define = "import { add } from \"./servers/fixture/index.ts\";\nconst secret = 'alice-secret';\nlet n = 1;";
    assert_eq!(exec(&mcp, &alice, Some("work"), define).await, (String::from("(the script printed nothing)"), false));
    let (seen, is_error) =
        exec(&mcp, &mallory, Some("work"), "console.log(typeof secret, typeof add, typeof n);\nvar n = 99;").await;
    assert_eq!((seen.as_str(), is_error), ("undefined undefined undefined\n", false), "another client's state leaked");
    let (own, _) =
        exec(&mcp, &alice, Some("work"), "n += 1;\nconsole.log(secret, n, (await add({ a: 1, b: 1 })).sum);").await;
    assert_eq!(own, "alice-secret 2 2\n", "the owner keeps its state, untouched by the other client");
    // Without a session nothing carries over, even for the owner.
    let (fresh, _) = exec(&mcp, &alice, None, "console.log(typeof secret);").await;
    assert_eq!(fresh, "undefined\n");
    for bad in ["", "has space", "\u{1b}[2J", &"x".repeat(65)] {
        let (text, is_error) = exec(&mcp, &alice, Some(bad), "console.log(1)").await;
        assert!(is_error && text.contains("`session` must be 1 to 64 letters"), "{bad:?}: {text}");
    }
}

/// A client cannot hold more than its share of sessions, nor all clients more than the total;
/// a refused call names the setting, and no session another client holds is evicted for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_capped_per_client_and_in_all_and_nothing_is_evicted() {
    let (_p, _s, mcp, a, b) = serve_two_clients("  code_sessions_per_client: 2\n  max_code_sessions: 3\n").await;
    for name in ["one", "two"] {
        assert!(!exec(&mcp, &a, Some(name), &format!("const mark = '{name}';")).await.1);
    }
    let (text, is_error) = exec(&mcp, &a, Some("three"), "1").await;
    assert!(is_error && text.contains("serve.code_sessions_per_client"), "{text}");
    assert!(!exec(&mcp, &b, Some("mine"), "const mark = 'b';").await.1);
    let (text, is_error) = exec(&mcp, &b, Some("more"), "1").await;
    assert!(is_error && text.contains("serve.max_code_sessions"), "{text}");
    // Everything already open still works, with its state.
    assert_eq!(exec(&mcp, &a, Some("one"), "console.log(mark)").await.0, "one\n");
    assert_eq!(exec(&mcp, &a, Some("two"), "console.log(mark)").await.0, "two\n");
    assert_eq!(exec(&mcp, &b, Some("mine"), "console.log(mark)").await.0, "b\n");
}

/// A session unused past `serve.code_session_idle_timeout` ends and its worker process is gone;
/// the client's next call under that name runs in a fresh session and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_ends_with_its_worker_and_the_next_call_says_it_is_fresh() {
    let p = serve_project("  code_session_idle_timeout: 1s\n");
    let s = Serving::start(&p, &[], &[]);
    let mcp = s.client();
    let a = mcp.initialize().await.unwrap();
    assert!(!exec(&mcp, &a, None, "1").await.1);
    let before = workers(&s);
    assert!(!exec(&mcp, &a, Some("idle"), "const x = 1;").await.1);
    let during = workers(&s);
    let session_worker: Vec<u32> = during.iter().copied().filter(|p| !before.contains(p)).collect();
    assert_eq!(session_worker.len(), 1, "one worker process per session: {before:?} -> {during:?}");
    assert!(
        support::wait_until(Duration::from_secs(10), || !workers(&s).contains(&session_worker[0])),
        "the idle session's worker {session_worker:?} is still there"
    );
    let (text, is_error) = exec(&mcp, &a, Some("idle"), "console.log(typeof x);").await;
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        "[a fresh session: the previous one ended (unused for 1s); its definitions are gone]\nundefined\n"
    );
}

/// When a client's MCP session ends (DELETE), its code sessions end with it: their worker
/// processes are gone; another client's session lives on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ending_the_mcp_session_ends_its_code_sessions_and_their_workers() {
    let (_p, s, mcp, a, b) = serve_two_clients("  code_sessions_per_client: 4\n").await;
    assert!(!exec(&mcp, &a, None, "1").await.1);
    let before = workers(&s);
    for name in ["s1", "s2"] {
        assert!(!exec(&mcp, &a, Some(name), "const v = 1;").await.1);
    }
    let with_a = workers(&s);
    assert!(!exec(&mcp, &b, Some("s1"), "const v = 'b';").await.1);
    let a_workers: Vec<u32> = with_a.iter().copied().filter(|p| !before.contains(p)).collect();
    assert_eq!(a_workers.len(), 2, "{before:?} -> {with_a:?}");
    assert_eq!(mcp.delete(&a).await, 204);
    assert!(
        support::wait_until(Duration::from_secs(10), || a_workers.iter().all(|p| !workers(&s).contains(p))),
        "the ended client's session workers {a_workers:?} are still there: {:?}",
        workers(&s)
    );
    assert_eq!(exec(&mcp, &b, Some("s1"), "console.log(v)").await.0, "b\n", "the other client's session lives on");
}
