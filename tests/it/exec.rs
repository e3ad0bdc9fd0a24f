//! `agent exec` end to end: the real binary running TypeScript in the embedded isolate, calling
//! the rmcp fixture server and server-everything through the generated tree (`agent mcp
//! generate`) and the bridge; every limit (and that the next run still works); escape attempts;
//! which servers start and when the tree is regenerated; output and exit codes.

use crate::support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Project, Run, everything_yaml, fixture_stdio_yaml, pids_matching, wait_until};

fn unique_tag(name: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    format!("{name}-{}-{nanos}", std::process::id())
}

const WS: &str = ".kodelet/mcp";

/// Generates the TypeScript tree with the real `agent mcp generate` (starts the servers once).
fn generate(p: &Project) {
    let r = p.run(&["mcp", "generate"]);
    r.assert_ok();
}

fn fixture_project() -> Project {
    let p = Project::with_fixture();
    generate(&p);
    p
}

fn exec_stdin(p: &Project, script: &str, flags: &[&str]) -> Run {
    let mut args = vec!["exec"];
    args.extend_from_slice(flags);
    args.push("-");
    p.run_stdin(&args, script)
}

fn exec_json(p: &Project, script: &str, flags: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(flags);
    let r = exec_stdin(p, script, &all);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", r.stdout, r.stderr))
}

/// A script that must keep working after a limit was hit.
fn assert_next_run_works(p: &Project) {
    let r = exec_stdin(
        p,
        "import { echo } from './servers/fixture/index.ts';\nconsole.log(await echo({ message: 'still alive' }));",
        &[],
    );
    r.assert_ok();
    assert_eq!(r.stdout, "still alive\n");
}

// ---------------------------------------------------------------------------------------------
// Running scripts

#[test]
fn a_script_calls_the_fixture_through_the_tree_and_prints() {
    let p = fixture_project();
    p.write(
        "job.ts",
        "import { echo, add } from './.kodelet/mcp/servers/fixture/index.ts';\n\
         interface Sum { sum: number }\n\
         const s: Sum = await add({ a: 2, b: 40 });\n\
         console.log('echo:', await echo({ message: 'hi' }));\n\
         console.error('to stderr');\n\
         export default { sum: s.sum, items: [1, 'two'] };\n",
    );
    let r = p.run(&["exec", "job.ts"]);
    r.assert_ok();
    assert_eq!(r.stdout, "echo: hi\n{\n  \"sum\": 42,\n  \"items\": [\n    1,\n    \"two\"\n  ]\n}\n");
    assert_eq!(r.stderr, "to stderr\n");
}

/// A text answer comes back parsed when it is JSON and as the text itself otherwise, the same
/// through the global `callMCPTool` and through the generated tree (client.ts), including texts
/// that merely start like JSON.
#[test]
fn text_answers_are_parsed_only_when_they_are_json() {
    let p = fixture_project();
    let cases = json!([
        ["ping", "ping"],
        ["  {\"a\": 1}", {"a": 1}],
        ["\n[1, 2]", [1, 2]],
        ["-3", -3],
        ["7", 7],
        ["\"q\"", "q"],
        ["true", true],
        ["false", false],
        ["null", null],
        ["trueish", "trueish"],
        ["{oops", "{oops"],
        ["", ""],
        ["\u{a0}1", "\u{a0}1"],
    ]);
    let script = format!(
        "import {{ echo }} from './servers/fixture/index.ts';\n\
         const cases: [string, unknown][] = {cases};\n\
         const viaGlobal = [], viaTree = [];\n\
         for (const [message] of cases) {{\n\
           viaGlobal.push(await callMCPTool('fixture', 'echo', {{ message }}));\n\
           viaTree.push(await echo({{ message }}));\n\
         }}\n\
         export default {{ viaGlobal, viaTree }};\n"
    );
    let out = exec_json(&p, &script, &[]);
    assert_eq!(out["error"], Value::Null, "{out}");
    let expected: Vec<Value> = cases.as_array().unwrap().iter().map(|c| c[1].clone()).collect();
    assert_eq!(out["value"]["viaGlobal"], Value::Array(expected.clone()));
    assert_eq!(out["value"]["viaTree"], Value::Array(expected));
}

/// The Rust decoder (`mcp::tools::decode`, what result handlers and learned types see) and
/// `runtime-js/result.js`'s `decodeResult` (what scripts see), run on the same results, agree:
/// the Rust one mirrors the JavaScript one case by case.
#[test]
fn the_rust_decoder_mirrors_result_js() {
    let cases = vec![
        json!({"content": [{"type": "text", "text": "{\"a\": 1}"}], "structuredContent": {"b": 2}}),
        json!({"content": [{"type": "text", "text": "{\"a\": 1}"}], "structuredContent": null}),
        json!({"content": [{"type": "text", "text": "42"}]}),
        json!({"content": [{"type": "text", "text": "1.5"}]}),
        json!({"content": [{"type": "text", "text": "not json"}]}),
        json!({"content": [{"type": "text", "text": "  {\"a\": [1, \"x\"]}"}]}),
        json!({"content": [{"type": "text", "text": "{oops"}]}),
        json!({"content": [{"type": "text", "text": ""}]}),
        json!({"content": [{"type": "text", "text": "true"}]}),
        json!({"content": [{"type": "text", "text": "null"}]}),
        json!({"content": [{"type": "text", "text": "[1,"}, {"type": "text", "text": "2]"}]}),
        json!({"content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}),
        json!({"content": [{"type": "text", "text": "{\"n\": 1}"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}]}),
        json!({"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}),
        json!({"content": [{"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hi"}}]}),
        json!({"content": []}),
    ];
    let results: Vec<rmcp::model::CallToolResult> =
        cases.iter().map(|c| serde_json::from_value(c.clone()).expect("a CallToolResult")).collect();
    let rust: Vec<Value> = results.iter().map(agent::mcp::tools::decode).collect();
    // The isolate gets results as the bridge sends them.
    let wire: Vec<Value> = results.iter().map(agent::mcp::tools::result_json).collect();
    let result_js = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/runtime-js/result.js")).unwrap();
    let script = format!("{result_js}\nexport default ({}).map((r) => decodeResult(r));\n", Value::Array(wire));
    let dir = tempfile::tempdir().unwrap();
    let limits = agent::runtime::Limits::from_config(&agent::config::CodeExecutionConfig::default());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let outcome = rt.block_on(agent::runtime::Executor::with_limits(&limits).execute(agent::runtime::ExecRequest {
        workspace: dir.path().to_path_buf(),
        script: agent::runtime::Script::Inline(script),
        limits: limits.clone(),
        bridge: None,
    }));
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let js = outcome.value.expect("the decoded values");
    for (i, (r, j)) in rust.iter().zip(js.as_array().unwrap()).enumerate() {
        assert_eq!(r, j, "case {i}: {}", cases[i]);
    }
    assert_eq!(js.as_array().unwrap().len(), cases.len());
}

/// The global `callMCPTool` and the tree's functions decode every kind of result alike
/// (structured content, images, tool errors): both use runtime-js/result.js.
#[test]
fn the_global_and_the_tree_decode_results_and_errors_alike() {
    let p = fixture_project();
    let script = "import { add, image, fail } from './servers/fixture/index.ts';\n\
         const errorOf = async (f: () => Promise<unknown>) => {\n\
           try { await f(); return null; } catch (e: any) {\n\
             return { name: e.name, message: e.message, server: e.server, tool: e.tool, content: e.content };\n\
           }\n\
         };\n\
         export default {\n\
           add: [await callMCPTool('fixture', 'add', { a: 2, b: 3 }), await add({ a: 2, b: 3 })],\n\
           image: [await callMCPTool('fixture', 'image', {}), await image()],\n\
           fail: [await errorOf(() => callMCPTool('fixture', 'fail', {})), await errorOf(() => fail())],\n\
         };\n";
    let out = exec_json(&p, script, &[]);
    assert_eq!(out["error"], Value::Null, "{out}");
    let v = &out["value"];
    assert_eq!(v["add"][0], json!({"sum": 5}));
    assert_eq!(v["image"][0][0]["type"], "image", "{v}");
    assert_eq!(v["fail"][0]["name"], "MCPToolError", "{v}");
    assert!(v["fail"][0]["message"].as_str().unwrap().starts_with("fixture.fail failed: "), "{v}");
    for case in ["add", "image", "fail"] {
        assert_eq!(v[case][0], v[case][1], "{case}: the global and the tree differ");
    }
}

/// The runner polls for the answer of a lone call for `call_spin` at most: a script waiting
/// 1.5 s for a slow tool leaves `agent exec` nearly idle, and the polling cannot be set past
/// its cap.
#[test]
fn waiting_for_a_slow_call_does_not_keep_a_cpu_busy() {
    let p = fixture_project();
    let script = p.write("slow.ts", "await callMCPTool('fixture', 'sleep', { ms: 1500 });\nconsole.log('done');\n");
    let mut child = p
        .cmd(&["exec", script.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The script runs in agent's worker process: its CPU counts (the fixture server's too).
    let mut cpu = 0.0f64;
    while child.try_wait().unwrap().is_none() {
        cpu = cpu.max(support::procs::tree_cpu_seconds(child.id()));
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n");
    // Start-up (servers, isolate) takes some CPU; polling through the whole call would take 1.5 s.
    assert!(cpu < 0.75, "agent exec used {cpu:.2} s of CPU while a tool call slept for 1.5 s");

    p.write_config(&format!(
        "mcp:\n  code_execution:\n    call_spin: 1s\n  servers:\n{}",
        fixture_stdio_yaml("fixture", &[])
    ));
    let r = p.run(&["exec", script.to_str().unwrap()]);
    r.assert_code(2);
    assert!(r.stderr.contains("mcp.code_execution.call_spin: at most 10ms"), "{}", r.stderr);
}

#[test]
fn stdin_scripts_run_as_workspace_main_ts_and_json_has_every_field() {
    let p = fixture_project();
    let out = exec_json(
        &p,
        "import { add } from './servers/fixture/index.ts';\n\
         const r = await callMCPTool('fixture', 'add', { a: 1, b: 2 });\n\
         console.log(import.meta.url.endsWith('/.kodelet/mcp/main.ts'));\n\
         export default async () => (await add({ a: r.sum, b: 10 })).sum;\n",
        &[],
    );
    assert_eq!(out["stdout"], "true\n");
    assert_eq!(out["stderr"], "");
    assert_eq!(out["value"], 13);
    assert_eq!(out["error"], Value::Null);
    assert_eq!(out["tool_calls"], 2);
    assert_eq!(out["output_truncated_bytes"], 0);
    assert!(out["duration_ms"].as_f64().unwrap() > 0.0);
}

#[test]
fn server_everything_through_the_tree() {
    let p = Project::with_servers(&everything_yaml("everything"));
    generate(&p);
    let out = exec_json(
        &p,
        "import * as ev from './servers/everything/index.ts';\n\
         import { everything } from './index.ts';\n\
         const echoed = await ev.echo({ message: 'hello everything' });\n\
         const sum = await everything.getSum({ a: 20, b: 22 });\n\
         const structured = await ev.getStructuredContent({ location: 'New York' });\n\
         const all = await Promise.all([1, 2, 3].map((i) => ev.getSum({ a: i, b: i })));\n\
         export default { echoed, sum, structured: typeof structured, all };\n",
        &[],
    );
    assert_eq!(out["error"], Value::Null, "{out}");
    assert_eq!(out["value"]["echoed"], "Echo: hello everything");
    assert!(out["value"]["sum"].to_string().contains("42"), "{out}");
    assert_eq!(out["value"]["structured"], "object", "{out}");
    assert_eq!(out["tool_calls"], 6);
}

#[test]
fn promise_all_of_200_calls_matches_sequential_and_beats_it_with_sleep() {
    let p = fixture_project();
    let out = exec_json(
        &p,
        "import { echo, add, sleep } from './servers/fixture/index.ts';\n\
         const n = 200;\n\
         const seq = [];\n\
         for (let i = 0; i < n; i++) seq.push(await add({ a: i, b: i }));\n\
         const par = await Promise.all(Array.from({ length: n }, (_, i) => add({ a: i, b: i })));\n\
         const echoes = await Promise.all(Array.from({ length: n }, (_, i) => echo({ message: `m${i}` })));\n\
         let t = performance.now();\n\
         for (let i = 0; i < 10; i++) await sleep({ ms: 100 });\n\
         const sequentialMs = performance.now() - t;\n\
         t = performance.now();\n\
         await Promise.all(Array.from({ length: 10 }, () => sleep({ ms: 100 })));\n\
         const concurrentMs = performance.now() - t;\n\
         export default { same: JSON.stringify(seq) === JSON.stringify(par), last: par[n - 1], \
                          echoesOk: echoes.every((e, i) => e.raw === `m${i}`), sequentialMs, concurrentMs };\n",
        &["--timeout", "60s"],
    );
    assert_eq!(out["error"], Value::Null, "{out}");
    let v = &out["value"];
    assert_eq!(v["same"], true);
    assert_eq!(v["last"], json!({"sum": 398}));
    assert_eq!(v["echoesOk"], true);
    assert_eq!(out["tool_calls"], 620);
    let (seq, conc) = (v["sequentialMs"].as_f64().unwrap(), v["concurrentMs"].as_f64().unwrap());
    assert!(seq >= 1000.0, "10 sequential 100 ms sleeps took {seq} ms");
    assert!(conc < seq / 2.0, "concurrent {conc} ms vs sequential {seq} ms");
}

#[test]
fn concurrent_calls_are_capped_by_max_concurrent_calls() {
    let p = Project::new();
    p.write_config(&format!(
        "mcp:\n  code_execution:\n    max_concurrent_calls: 2\n  servers:\n{}",
        fixture_stdio_yaml("fixture", &[])
    ));
    generate(&p);
    // Warm the server first so its start-up does not count; then 6 calls of 300 ms with 2 in
    // flight need at least three rounds.
    let out = exec_json(
        &p,
        "import { sleep } from './servers/fixture/index.ts';\n\
         await sleep({ ms: 1 });\n\
         const t = performance.now();\n\
         await Promise.all(Array.from({ length: 6 }, () => sleep({ ms: 300 })));\n\
         export default performance.now() - t;\n",
        &[],
    );
    assert_eq!(out["error"], Value::Null, "{out}");
    let ms = out["value"].as_f64().unwrap();
    assert!(ms >= 880.0, "6 x 300 ms with at most 2 in flight finished in {ms} ms");
}

#[test]
fn tool_errors_and_bridge_errors_reach_the_script() {
    let p = fixture_project();
    let out = exec_json(
        &p,
        "const seen: Record<string, unknown> = {};\n\
         try { await callMCPTool('fixture', 'fail', {}); } catch (e: any) { seen.fail = [e.name, e.message]; }\n\
         try { await callMCPTool('fixture', 'ech', { message: 'x' }); } catch (e: any) { seen.unknownTool = [e.name, e.code, e.status, e.suggestions]; }\n\
         try { await callMCPTool('fixtur', 'echo', {}); } catch (e: any) { seen.unknownServer = [e.code, e.status, e.suggestions]; }\n\
         try { await callMCPTool('fixture', 'add', { a: 'x' }); } catch (e: any) { seen.invalid = [e.code, e.status]; }\n\
         const raw = await __agentCallTool('fixture', 'fail', {});\n\
         seen.raw = raw.isError;\n\
         export default seen;\n",
        &[],
    );
    assert_eq!(out["error"], Value::Null, "{out}");
    let v = &out["value"];
    assert_eq!(v["fail"][0], "MCPToolError");
    assert!(v["fail"][1].as_str().unwrap().starts_with("fixture.fail failed: "), "{v}");
    assert_eq!(v["unknownTool"], json!(["BridgeError", "unknown_tool", 404, ["echo"]]));
    assert_eq!(v["unknownServer"], json!(["unknown_server", 404, ["fixture"]]));
    assert_eq!(v["invalid"], json!(["invalid_arguments", 400]));
    assert_eq!(v["raw"], true);
    assert_eq!(out["tool_calls"], 5);
}

#[test]
fn errors_point_at_typescript_lines_with_a_mapped_stack() {
    let p = Project::new();
    p.write(
        "err.ts",
        "type Input = {\n  n: number;\n};\n\ninterface Unused { x: string }\n\nfunction explode(i: Input): never {\n  throw new Error(`bad ${i.n}`);\n}\n\nexplode({ n: 7 });\n",
    );
    let r = p.run(&["exec", "err.ts"]);
    r.assert_code(1);
    let file = p.path().join("err.ts").canonicalize().unwrap();
    assert_eq!(r.stderr, format!("error: Error: bad 7 at {}:8:9\n", file.display()));
    let r = p.run(&["-v", "exec", "err.ts"]);
    assert!(r.stderr.contains(&format!("    at explode ({}:8:9)\n", file.display())), "{}", r.stderr);
    assert!(r.stderr.contains(&format!("    at {}:11:1", file.display())), "{}", r.stderr);
    // Inside the workspace, positions read relative to it.
    let out = exec_json(&p, "\n\nconst x: number = 1;\nthrow new TypeError('nope ' + x);\n", &[]);
    assert_eq!(out["error"]["kind"], "script");
    assert_eq!(out["error"]["message"], "TypeError: nope 1 at main.ts:4:7");
    assert!(out["error"]["stack"].as_str().unwrap().contains("at main.ts:4:7"), "{out}");
}

#[test]
fn compile_errors_and_unhandled_rejections() {
    let p = Project::new();
    let out = exec_json(&p, "const a: number = ;\n", &[]);
    assert_eq!(out["error"]["kind"], "compile");
    let msg = out["error"]["message"].as_str().unwrap();
    assert!(msg.contains("Expression expected") && msg.contains("main.ts:1:19"), "{msg}");
    let out =
        exec_json(&p, "Promise.reject(new RangeError('later'));\nawait new Promise((r) => setTimeout(r, 10));\n", &[]);
    assert_eq!(out["error"]["kind"], "script");
    assert!(out["error"]["message"].as_str().unwrap().starts_with("RangeError: later"), "{out}");
    // A top-level await that can never settle is reported at once, not after the timeout.
    let started = Instant::now();
    let out = exec_json(&p, "await new Promise(() => {});\n", &["--timeout", "20s"]);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(out["error"]["kind"], "script");
    assert!(out["error"]["message"].as_str().unwrap().contains("never resolved"), "{out}");
}

#[test]
fn globals_work() {
    let p = Project::new();
    let out = exec_json(
        &p,
        "const u = new URL('../c?x=1#h', 'https://user:pw@example.com:8080/a/b');\n\
         u.searchParams.set('y', 'a b&c');\n\
         u.hash = 'top';\n\
         const enc = new TextEncoder().encode('héllo €');\n\
         let fired = 0;\n\
         const id = setTimeout(() => { fired = -1; }, 5);\n\
         clearTimeout(id);\n\
         await new Promise((r) => setTimeout(() => { fired++; r(null); }, 10));\n\
         let ticks = 0;\n\
         await new Promise((r) => { const iv = setInterval(() => { if (++ticks === 3) { clearInterval(iv); r(null); } }, 1); });\n\
         const cloned = structuredClone({ m: new Map([[1, { d: new Date(5) }]]), s: new Set([1]) });\n\
         let fatal = '';\n\
         try { new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array([0xff])); } catch (e: any) { fatal = e.name; }\n\
         enum Color { Red = 'r', Green = 'g' }\n\
         export default {\n\
           href: u.href, host: u.host, origin: u.origin, q: u.searchParams.get('y'),\n\
           bytes: enc.length, text: new TextDecoder().decode(enc), fired, ticks,\n\
           map: cloned.m instanceof Map && cloned.m.get(1).d instanceof Date && cloned.m.get(1).d.getTime(),\n\
           set: cloned.s.has(1), fatal, color: Color.Green,\n\
           params: [...new URLSearchParams('a=1&a=2&b=%20x').entries()],\n\
           badUrl: URL.canParse('not a url'),\n\
         };\n",
        &[],
    );
    assert_eq!(out["error"], Value::Null, "{out}");
    assert_eq!(
        out["value"],
        json!({
            "href": "https://user:pw@example.com:8080/c?x=1&y=a+b%26c#top",
            "host": "example.com:8080", "origin": "https://example.com:8080", "q": "a b&c",
            "bytes": 10, "text": "héllo €", "fired": 1, "ticks": 3, "map": 5, "set": true,
            "fatal": "TypeError", "color": "g",
            "params": [["a", "1"], ["a", "2"], ["b", " x"]], "badUrl": false,
        })
    );
}

#[test]
fn console_formats_values_like_json_and_splits_streams() {
    let p = Project::new();
    let out = exec_json(
        &p,
        "const o: any = { a: 1, s: 'x', n: null, u: undefined, nested: { arr: [1, [2]] } };\n\
         o.self = o;\n\
         console.log(o);\n\
         console.log('%s is %d', 'answer', 42, 'extra');\n\
         console.info(new Map([['k', [1]]]), new Set(['v']), 10n, Symbol('s'), () => 1, function named() {});\n\
         console.debug([undefined, NaN, -0]);\n\
         console.warn('careful');\n\
         console.error(new Error('shown with stack'));\n",
        &[],
    );
    assert_eq!(
        out["stdout"],
        "{\"a\":1,\"s\":\"x\",\"n\":null,\"nested\":{\"arr\":[1,[2]]},\"self\":[Circular]}\n\
         answer is 42 extra\n\
         Map(1) {\"k\" => [1]} Set(1) {\"v\"} 10n Symbol(s) [Function (anonymous)] [Function: named]\n\
         [null,NaN,-0]\n"
    );
    let stderr = out["stderr"].as_str().unwrap();
    assert!(stderr.starts_with("careful\nError: shown with stack\n    at main.ts:8:15"), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// Limits: each ends with its own clear error, and the next run works

#[test]
fn an_infinite_loop_times_out() {
    let p = fixture_project();
    let started = Instant::now();
    let r = exec_stdin(&p, "let i = 0;\nwhile (true) { i++; }\n", &["--timeout", "1s"]);
    r.assert_code(1);
    assert_eq!(r.stderr, "error: timed out after 1s\n");
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    // A bare number is seconds; a loop that catches everything is still stopped.
    let out = exec_json(
        &p,
        "for (;;) { try { while (true) {} } catch (e) { console.log('caught'); } }\n",
        &["--timeout", "1"],
    );
    assert_eq!(out["error"]["kind"], "timeout");
    assert_eq!(out["error"]["message"], "timed out after 1s");
    assert_eq!(out["stdout"], "");
    assert_next_run_works(&p);
}

#[test]
fn an_infinite_microtask_loop_times_out() {
    let p = fixture_project();
    let out = exec_json(
        &p,
        "const spin = () => queueMicrotask(spin);\nspin();\nwhile (true) { await Promise.resolve(); }\n",
        &["--timeout", "1s"],
    );
    assert_eq!(out["error"]["kind"], "timeout", "{out}");
    assert_eq!(out["error"]["message"], "timed out after 1s");
    assert_next_run_works(&p);
}

/// A script stuck inside a native builtin, where the engine never checks for termination: an
/// `includes` over 2^32 - 1 (absent) indices takes minutes.
const STUCK_IN_A_BUILTIN: &str = "const a: number[] = [];\na.length = 2 ** 32 - 1;\nconsole.log(a.includes(2));\n";

/// Two scripts stuck in a builtin through `serve`'s `execute_code` (a remote client playing the
/// hostile script) are answered "timed out", and then nothing of `serve` (its worker processes
/// included) keeps computing; the next script runs as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_stuck_in_a_builtin_stop_using_the_cpu_in_serve() {
    use rmcp::ServiceExt;
    let p = Project::new();
    p.write_config(&format!(
        "mcp:\n  code_execution:\n    timeout: 1s\n  servers:\n{}",
        fixture_stdio_yaml("fixture", &[])
    ));
    let transport =
        rmcp::transport::TokioChildProcess::new(tokio::process::Command::from(p.cmd(&["mcp", "serve"]))).unwrap();
    let serve_pid = transport.id().unwrap();
    let client = ().serve(transport).await.unwrap();
    let run = |code: &str| {
        let args = json!({ "code": code });
        client.call_tool(
            rmcp::model::CallToolRequestParams::new("execute_code").with_arguments(args.as_object().unwrap().clone()),
        )
    };
    let (a, b) = tokio::join!(run(STUCK_IN_A_BUILTIN), run(STUCK_IN_A_BUILTIN));
    for r in [a.unwrap(), b.unwrap()] {
        assert_eq!(r.is_error, Some(true), "{r:?}");
        assert!(r.content[0].as_text().unwrap().text.contains("timed out after 1s"), "{r:?}");
    }
    let settled = tokio::task::spawn_blocking(move || {
        support::procs::cpu_settles(serve_pid, Duration::from_secs(2), 0.25, Duration::from_secs(20))
    })
    .await
    .unwrap();
    if let Err(grew) = settled {
        panic!("serve kept computing after the scripts were stopped: {grew:.2} s of CPU in the last two seconds");
    }
    let r = run("console.log(6 * 7);").await.unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    assert!(r.content[0].as_text().unwrap().text.contains("42"), "{r:?}");
    client.cancel().await.unwrap();
}

/// `agent exec` of a stuck script: the timeout error, promptly (a grace of a second to unwind,
/// then its worker process is killed), and no worker left behind.
#[test]
fn a_script_stuck_in_a_builtin_is_killed_after_a_short_grace() {
    let p = fixture_project();
    let mut child = spawn_fed(p.cmd(&["exec", "--timeout", "1s", "-"]), STUCK_IN_A_BUILTIN);
    let started = Instant::now();
    let mut workers = Vec::new();
    while child.try_wait().unwrap().is_none() {
        for w in support::procs::descendants_with(child.id(), "__js-worker") {
            if !workers.contains(&w) {
                workers.push(w);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = started.elapsed();
    let _cleanup: Vec<_> = workers.iter().map(|&w| support::procs::KillOnDrop(w)).collect();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).ends_with("error: timed out after 1s\n"), "{:?}", out);
    assert!(took < Duration::from_secs(8), "exec took {took:?}");
    assert!(!workers.is_empty(), "the script did not run in a worker process");
    std::thread::sleep(Duration::from_millis(200));
    for w in workers {
        assert!(!support::procs::running(w), "worker {w} still runs after agent exec ended");
    }
}

/// A script that runs long enough (1.5 s) for a test to look at its worker, then prints `done`.
const SLOW_DONE: &str = "await new Promise((r) => setTimeout(r, 1500));\nconsole.log('done');\n";

/// `cmd` started with piped stdio and `script` written to its stdin (then closed).
fn spawn_fed(mut cmd: std::process::Command, script: &str) -> std::process::Child {
    use std::io::Write;
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    child
}

/// `agent exec` starts its script worker before it has read its arguments: one that is never
/// given a script (the file does not exist; only `--help` was asked) still ends with `agent`.
#[test]
fn an_early_worker_no_script_takes_ends_with_agent() {
    let p = fixture_project();
    let home = format!("HOME={}", p.path().join("home").display());
    for args in [&["exec", "no-such-script.ts"][..], &["exec", "--help"][..]] {
        let out = p.run(args);
        assert_eq!(out.code == 0, args[1] == "--help", "{out:?}");
        let t = Instant::now();
        while !support::procs::with_env("__js-worker", &home).is_empty() && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let left = support::procs::with_env("__js-worker", &home);
        let _cleanup: Vec<_> = left.iter().map(|&w| support::procs::KillOnDrop(w)).collect();
        assert!(left.is_empty(), "`agent {}` left script workers behind: {left:?}", args.join(" "));
    }
}

/// The worker started early logs as the command line (read later) asks: with `-vv` the script
/// runs in a worker started at debug level, not in the early one started before logging was set.
#[test]
fn the_worker_logs_at_the_verbosity_the_command_asked_for() {
    let p = fixture_project();
    let mut child = spawn_fed(p.cmd(&["-vv", "exec", "-"]), SLOW_DONE);
    let mut seen = Vec::new();
    while child.try_wait().unwrap().is_none() {
        for w in support::procs::descendants_with(child.id(), "__js-worker") {
            // An ended worker not reaped yet has an empty command line.
            if let Ok(c) = std::fs::read(format!("/proc/{w}/cmdline"))
                && !c.is_empty()
            {
                let args: Vec<String> = c.split(|&b| b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
                if !seen.contains(&args) {
                    seen.push(args);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n", "{out:?}");
    // The last worker seen is the one that ran the script (an early one is ended first).
    let ran = seen.last().expect("no script worker was seen while the script ran");
    assert_eq!(ran.get(3).map(String::as_str), Some("2"), "the worker's arguments: {ran:?}");
}

/// The process that runs scripts holds none of `agent`'s environment (an LLM key, a token) but
/// the few variables the engine reads: a script that found a way out of the sandbox would still
/// find no secret in its own process.
#[test]
fn the_script_worker_holds_none_of_agents_secrets() {
    let p = fixture_project();
    let secret = "sk-worker-env-secret-3f9a";
    let mut cmd = p.cmd(&["exec", "-"]);
    cmd.env("ANTHROPIC_API_KEY", secret).env("AGENT_TEST_TOKEN", secret);
    let mut child = spawn_fed(cmd, SLOW_DONE);
    let mut environ = None;
    while environ.is_none() && child.try_wait().unwrap().is_none() {
        if let Some(&w) = support::procs::descendants_with(child.id(), "__js-worker").first() {
            environ = std::fs::read(format!("/proc/{w}/environ")).ok();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n", "{out:?}");
    let environ = environ.expect("no script worker was seen while the script ran");
    let names: Vec<String> = environ
        .split(|&b| b == 0)
        .filter(|e| !e.is_empty())
        .map(|e| String::from_utf8_lossy(e.split(|&b| b == b'=').next().unwrap_or_default()).into_owned())
        .collect();
    assert!(!environ.windows(secret.len()).any(|w| w == secret.as_bytes()), "the worker holds a secret: {names:?}");
    assert!(names.iter().all(|n| !n.contains("KEY") && !n.contains("TOKEN")), "{names:?}");
    assert!(names.iter().any(|n| n == "HOME"), "the engine's caches need HOME: {names:?}");
}

/// `agent exec` runs its script in the worker it forked from itself first thing (no second load
/// of the binary), made what a spawned worker is: named `__js-worker`, in a process group of
/// its own (Ctrl-C reaches `agent`, which stops the script), stdin and stdout `/dev/null`,
/// stderr a pipe `agent` relays.
#[test]
fn agent_exec_runs_its_script_in_a_worker_forked_from_itself() {
    let p = fixture_project();
    let mut child = spawn_fed(p.cmd(&["exec", "-"]), SLOW_DONE);
    let agent = child.id();
    let mut seen = None;
    while seen.is_none() && child.try_wait().unwrap().is_none() {
        if let Some(&w) = support::procs::children_with(agent, "__js-worker").first() {
            let read = |f: &str| std::fs::read(format!("/proc/{w}/{f}")).unwrap_or_default();
            let fd = |n: u32| std::fs::read_link(format!("/proc/{w}/fd/{n}")).map(|l| l.display().to_string());
            seen = Some((
                read("cmdline") == std::fs::read(format!("/proc/{agent}/cmdline")).unwrap_or_default(),
                read("comm"),
                support::procs::group(w) == Some(w),
                [fd(0), fd(1), fd(2)].map(|l| l.unwrap_or_default()),
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n", "{out:?}");
    let (forked, comm, own_group, fds) = seen.expect("no script worker was seen while the script ran");
    assert_eq!(String::from_utf8_lossy(&comm), "__js-worker\n");
    assert!(forked, "the worker was started anew, not forked");
    assert!(own_group, "the worker is not in a process group of its own");
    assert_eq!(fds[..2], ["/dev/null", "/dev/null"], "stdin and stdout: {fds:?}");
    assert!(fds[2].starts_with("pipe:"), "stderr: {fds:?}");
}

/// In-process, with a worker process of the real binary: a stuck script whose future is dropped
/// (a caller's own timeout, Ctrl-C) is stopped, its worker killed within the grace and replaced;
/// the next script runs at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_stuck_script_has_its_worker_killed_and_replaced() {
    use agent::runtime::{ExecRequest, Executor, Isolation, Limits, Script};
    let p = Project::new();
    let limits = Limits { timeout: Duration::from_secs(600), ..Limits::default() };
    let executor = Executor::with_isolation(&limits, Isolation::Process(support::agent_bin()));
    let req = |code: &str| ExecRequest {
        workspace: p.path().join(WS),
        script: Script::Inline(code.into()),
        limits: limits.clone(),
        bridge: None,
    };
    let me = std::process::id();
    // Only this test's executor starts workers as direct children of the test process (the
    // other tests' workers are children of their `agent` processes).
    let workers = || support::procs::children_with(me, "__js-worker");
    let o = executor.execute(req("console.log('warm')")).await;
    assert_eq!(o.stdout, "warm\n", "{:?}", o.error);
    let first = workers();
    assert_eq!(first.len(), 1, "{first:?}");
    let dropped = tokio::time::timeout(Duration::from_millis(500), executor.execute(req(STUCK_IN_A_BUILTIN))).await;
    assert!(dropped.is_err());
    let gone = tokio::task::spawn_blocking(move || {
        let t = Instant::now();
        while support::procs::running(first[0]) && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        !support::procs::running(first[0])
    });
    assert!(gone.await.unwrap(), "the stuck worker was not killed");
    let started = Instant::now();
    let o = executor.execute(req("console.log('next')")).await;
    assert_eq!(o.stdout, "next\n", "{:?}", o.error);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(workers().len(), 1, "one worker, the replacement");
}

#[test]
fn unbounded_allocation_hits_the_memory_limit() {
    let p = fixture_project();
    let r = exec_stdin(
        &p,
        "const keep = [];\nwhile (true) { keep.push(new Array(100000).fill(1)); }\n",
        &["--memory-limit", "64MB"],
    );
    r.assert_code(1);
    assert_eq!(r.stderr, "error: memory limit of 64 MB exceeded\n");
    for script in [
        // strings, with the out-of-memory errors caught
        "const a = []; for (;;) { try { while (true) a.push('x'.repeat(1e6) + Math.random()); } catch {} }",
        // array buffers count too
        "const a = []; while (true) a.push(new Uint8Array(1 << 24));",
        // one huge allocation
        "const x = new Array(1e9).fill(0); console.log(x.length);",
        // an array doubling its storage: one reallocation jumps past the limit
        "const a = []; while (true) a.push(1);",
    ] {
        let out = exec_json(&p, script, &["--memory-limit", "64", "--timeout", "60s"]);
        assert_eq!(out["error"]["kind"], "memory", "{script}: {out}");
        assert_eq!(out["error"]["message"], "memory limit of 64 MB exceeded");
    }
    assert_next_run_works(&p);
}

#[test]
fn huge_output_is_cut_with_a_marker() {
    let p = fixture_project();
    let r = exec_stdin(&p, "for (let i = 0; i < 100000; i++) console.log('line ' + i);\n", &["--max-output", "1KB"]);
    r.assert_code(1);
    assert!(r.stdout.len() < 1100, "{} bytes printed", r.stdout.len());
    let total: usize = (0..100000).map(|i| format!("line {i}\n").len()).sum();
    let omitted = total - 1024;
    assert!(r.stdout.ends_with(&format!("\n[output truncated: {omitted} bytes omitted]\n")), "{}", r.stdout);
    assert!(r.stdout.starts_with("line 0\nline 1\n"));
    assert!(r.stderr.contains("error: output limit of 1.0 KB exceeded"), "{}", r.stderr);
    // The default cap is 100 KB; a 5 MB tool result printed whole is cut too.
    let out = exec_json(&p, "import { big } from './servers/fixture/index.ts';\nconsole.log(await big());\n", &[]);
    assert_eq!(out["error"], Value::Null);
    let stdout = out["stdout"].as_str().unwrap();
    assert!(stdout.len() < 100 * 1024 + 100);
    assert!(out["output_truncated_bytes"].as_u64().unwrap() > 4_000_000, "{}", out["output_truncated_bytes"]);
    assert!(stdout.ends_with(&format!("[output truncated: {} bytes omitted]\n", out["output_truncated_bytes"])));
    assert_next_run_works(&p);
}

#[test]
fn a_hanging_tool_call_is_abandoned_at_the_timeout() {
    let tag = unique_tag("hang");
    let p = Project::with_servers(&fixture_stdio_yaml("fixture", &["--tag", &tag]));
    generate(&p);
    let started = Instant::now();
    let r = exec_stdin(
        &p,
        "import { sleep } from './servers/fixture/index.ts';\nconsole.log('before');\nawait sleep({ ms: 600000 });\nconsole.log('never');\n",
        &["--timeout", "2s"],
    );
    r.assert_code(1);
    assert_eq!(r.stdout, "before\n");
    assert_eq!(r.stderr, "error: timed out after 2s\n");
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    std::thread::sleep(Duration::from_millis(100));
    assert!(pids_matching(&tag).is_empty(), "server left running");
    assert_next_run_works(&p);
}

/// A result over `mcp.max_result_bytes` is an error the script can catch, at once, and the
/// server keeps answering in the same script.
#[test]
fn an_oversized_result_is_an_error_the_script_catches() {
    let p = Project::with_servers(&format!(
        "{}      call_timeout: 60s\n  max_result_bytes: 1048576\n",
        fixture_stdio_yaml("fixture", &[])
    ));
    generate(&p);
    let started = Instant::now();
    let r = exec_stdin(
        &p,
        "import { big, echo } from './servers/fixture/index.ts';\n\
         try { await big({ bytes: 3000000 }); } catch (e) { console.log(`${e.name}: ${e.message}`); }\n\
         console.log(await echo({ message: 'next call works' }));\n",
        &["--timeout", "50s"],
    );
    r.assert_ok();
    assert_eq!(r.stdout, "MCPBridgeError: result of fixture.big is larger than the 1 MiB limit\nnext call works\n");
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
}

#[test]
fn a_server_crashing_mid_call_is_a_clear_error() {
    let p = fixture_project();
    let r = exec_stdin(&p, "import { crash } from './servers/fixture/index.ts';\nawait crash();\n", &["-v"]);
    r.assert_code(1);
    assert!(
        r.stderr.contains(
            "\nerror: MCPBridgeError: server `fixture` failed during `crash`: the server exited during the call \
             (Transport closed) (stderr: fixture: crashing on purpose) at main.ts:2:1\n"
        ),
        "{}",
        r.stderr
    );
    // The mapped stack runs through the generated tree back to the script's line.
    assert!(r.stderr.contains("    at async crash (servers/fixture/crash.ts:"), "{}", r.stderr);
    assert!(r.stderr.contains("    at async main.ts:2:1"), "{}", r.stderr);
    // Within one script, the next call restarts the server.
    let out = exec_json(
        &p,
        "import { crash, echo } from './servers/fixture/index.ts';\n\
         let code = '';\n\
         try { await crash(); } catch (e: any) { code = `${e.name} ${e.code}`; }\n\
         export default [code, await echo({ message: 'back' })];\n",
        &[],
    );
    assert_eq!(out["value"], json!(["MCPBridgeError server_error", "back"]), "{out}");
    assert_next_run_works(&p);
}

#[tokio::test]
async fn one_executor_survives_limits_and_cancellation_and_isolates_runs() {
    use agent::runtime::{ExecRequest, Executor, FailureKind, Limits, Script};
    let p = Project::new();
    let executor = Executor::new();
    let req = |code: &str, limits: Limits| ExecRequest {
        workspace: p.path().join(WS),
        script: Script::Inline(code.into()),
        limits,
        bridge: None,
    };
    let short = Limits { timeout: Duration::from_millis(500), ..Limits::default() };
    let o = executor.execute(req("globalThis.leak = 41; while (true) {}", short.clone())).await;
    assert_eq!(o.error.as_ref().map(|e| e.kind), Some(FailureKind::Timeout));
    assert_eq!(o.error.unwrap().message, "timed out after 500ms");
    let small = Limits { memory_limit_mb: 32, ..Limits::default() };
    let o = executor.execute(req("const a = []; while (true) a.push(new Array(1e5).fill(0));", small)).await;
    assert_eq!(o.error.as_ref().map(|e| e.message.as_str()), Some("memory limit of 32 MB exceeded"));
    // Dropping the future stops the script; the executor is ready again at once.
    let dropped =
        tokio::time::timeout(Duration::from_millis(200), executor.execute(req("for (;;) {}", Limits::default())));
    assert!(dropped.await.is_err());
    let started = Instant::now();
    let o = executor.execute(req("export default typeof (globalThis as any).leak;", short)).await;
    assert!(o.error.is_none(), "{:?}", o.error);
    assert_eq!(o.value, Some(json!("undefined")), "globals must not leak between runs");
    assert!(started.elapsed() < Duration::from_secs(5));
    // A heap limit too small for the runtime itself fails cleanly, and the next run is fine.
    let tiny = Limits { memory_limit_mb: 1, ..Limits::default() };
    let o = executor.execute(req("console.log('hi')", tiny)).await;
    let e = o.error.unwrap();
    assert_eq!(e.kind, FailureKind::Memory);
    assert!(e.message.starts_with("memory limit of 1 MB exceeded while starting the runtime"), "{}", e.message);
    let o = executor.execute(req("console.log('hi')", Limits::default())).await;
    assert_eq!(o.stdout, "hi\n", "{:?}", o.error);
    // Without a bridge, tool calls fail with a clear code.
    let o = executor
        .execute(req(
            "try { await callMCPTool('x', 'y', {}); } catch (e: any) { console.log(e.name, e.code, e.message); }",
            Limits::default(),
        ))
        .await;
    assert_eq!(o.stdout, "BridgeError bridge_unreachable no MCP bridge: tool calls are not available here\n");
    assert_eq!(o.tool_calls, 1);
}

#[tokio::test]
async fn one_executor_runs_hundreds_of_scripts() {
    use agent::runtime::{ExecRequest, Executor, Limits, Script};
    // The engine keeps per-thread state that breaks new isolates after ~150 on one thread; the
    // executor moves to a fresh thread well before that.
    let p = Project::new();
    let executor = Executor::new();
    for i in 0..400 {
        let o = executor
            .execute(ExecRequest {
                workspace: p.path().join(WS),
                script: Script::Inline(format!("const n: number = {i};\nconsole.log(`run ${{n}}`);\n")),
                limits: Limits::default(),
                bridge: None,
            })
            .await;
        assert_eq!(o.stdout, format!("run {i}\n"), "run {i}: {:?}", o.error);
    }
}

#[test]
fn tool_calls_run_on_the_callers_runtime_and_tokio_is_required() {
    use agent::runtime::{ExecRequest, Executor, Limits, Script};
    // The calls' socket I/O runs on the caller's runtime, a current-thread one here; outside
    // tokio the executor says it needs one instead of panicking.
    let p = Project::with_servers(&fixture_stdio_yaml("fixture", &[]));
    let config = p.library_config();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let manager = std::sync::Arc::new(agent::mcp::McpManager::new(&config));
    let bridge = rt.block_on(agent::bridge::BridgeServer::start(manager.clone())).unwrap();
    let executor = Executor::new();
    let req = || ExecRequest {
        workspace: p.path().join(WS),
        script: Script::Inline(
            "const r = await Promise.all([1, 2, 3].map((a) => callMCPTool('fixture', 'add', { a, b: 40 })));\n\
             console.log(JSON.stringify(r));\n"
                .into(),
        ),
        limits: Limits::default(),
        bridge: Some(bridge.endpoint().clone()),
    };
    let current_thread = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let o = current_thread.block_on(executor.execute(req()));
    let outside = futures::executor::block_on(executor.execute(req()));
    rt.block_on(async {
        bridge.stop().await;
        manager.shutdown().await;
    });
    assert!(o.error.is_none(), "{:?}", o.error);
    assert_eq!(o.stdout, "[{\"sum\":41},{\"sum\":42},{\"sum\":43}]\n");
    assert_eq!(o.tool_calls, 3);
    let e = outside.error.expect("an error outside tokio");
    assert_eq!(e.message, "internal error: Executor::execute must run inside a tokio runtime");
}

// ---------------------------------------------------------------------------------------------
// Escape attempts

#[test]
fn imports_outside_the_workspace_or_by_url_fail_clearly() {
    let p = fixture_project();
    p.write("outside.ts", "export const secret = 1;\n");
    p.write(&format!("{WS}/lib/ok.ts"), "export const ok = 'inside';\n");
    std::os::unix::fs::symlink("/etc/passwd", p.path().join(WS).join("passwd.ts")).unwrap();
    let cases: &[(&str, &str)] = &[
        ("import x from '/etc/passwd'; console.log(x);", "/etc/passwd is outside the workspace"),
        ("import { secret } from '../outside.ts'; console.log(secret);", "outside.ts is outside the workspace"),
        ("import { secret } from '../../outside.ts'; console.log(secret);", "outside.ts is outside the workspace"),
        ("import x from './passwd.ts'; console.log(x);", "passwd.ts leads outside the workspace;"),
        ("import fs from 'node:fs'; console.log(fs);", "node: modules are not available"),
        ("import { readFile } from 'fs'; console.log(readFile);", "package imports are not available"),
        ("import x from 'npm:left-pad'; console.log(x);", "npm: packages are not available"),
        ("import x from 'jsr:@std/fs'; console.log(x);", "jsr: packages are not available"),
        ("import x from 'https://deno.land/x/mod.ts'; console.log(x);", "remote modules are not available"),
        ("import x from 'http://localhost/x.ts'; console.log(x);", "remote modules are not available"),
        ("import x from 'file:///etc/passwd'; console.log(x);", "file: URLs are not allowed"),
        ("import { core } from 'ext:core/mod.js'; console.log(core);", "ext: specifiers are not allowed"),
        ("import x from 'data:text/javascript,export default 1'; console.log(x);", "data: specifiers are not allowed"),
        ("import { ok } from './lib/nope.ts'; console.log(ok);", "no such module lib/nope.ts in the workspace"),
    ];
    for (script, expected) in cases {
        let r = exec_stdin(&p, script, &[]);
        r.assert_code(1);
        assert!(r.stderr.starts_with("error: cannot import "), "{script}: {}", r.stderr);
        assert!(r.stderr.contains(expected), "{script}: expected {expected:?} in\n{}", r.stderr);
        assert!(!r.stdout.contains("root:"), "{script} leaked {}", r.stdout);
    }
    let out = exec_json(&p, "import { ok } from './lib/ok.ts';\nconsole.log(ok);\n", &[]);
    assert_eq!(out["stdout"], "inside\n");
    // A typo in a server directory gets a suggestion; the kind says it was an import.
    let out = exec_json(&p, "import { echo } from './servers/fixtur/index.ts';\nconsole.log(echo);\n", &[]);
    assert_eq!(out["error"]["kind"], "import");
    assert!(out["error"]["message"].as_str().unwrap().ends_with("did you mean servers/fixture?"), "{out}");
}

/// A newcomer's script next to the project imports `./servers/...` as the docs' stdin examples
/// do: the refusal names the import that works from where the script is and the workspace to
/// move it to, and the import it names does work.
#[test]
fn a_script_outside_the_workspace_is_told_the_import_that_works() {
    let p = fixture_project();
    let script = |import: &str| {
        format!("import {{ echo }} from \"{import}\";\nconsole.log(String(await echo({{ message: \"hi\" }})));\n")
    };
    p.write("script.ts", &script("./servers/fixture/index.ts"));
    let r = p.run(&["exec", "script.ts"]);
    r.assert_code(1);
    let ws = std::fs::canonicalize(p.path().join(WS)).unwrap();
    let hint = format!(
        "(this script is outside it: import \"./.kodelet/mcp/servers/fixture/index.ts\", or put the script in {}/)",
        ws.display()
    );
    assert!(r.stderr.contains(&hint), "{}", r.stderr);

    p.write("script.ts", &script("./.kodelet/mcp/servers/fixture/index.ts"));
    let r = p.run(&["exec", "script.ts"]);
    r.assert_ok();
    assert_eq!(r.stdout, "hi\n");
}

#[test]
fn no_file_network_environment_or_process_access() {
    let p = fixture_project();
    let out = exec_json(
        &p,
        "const attempts: Record<string, () => unknown> = {\n\
           fetch: () => fetch('https://example.com'),\n\
           fetchFile: () => fetch('file:///etc/passwd'),\n\
           processEnv: () => (globalThis as any).process.env.HOME,\n\
           processBare: () => eval('process.env'),\n\
           require: () => eval(\"require('fs')\"),\n\
           denoRead: () => eval(\"Deno.readTextFileSync('/etc/passwd')\"),\n\
           denoCoreOps: () => eval('Deno.core.ops'),\n\
           dynamicNodeFs: () => import('node:fs'),\n\
           dynamicFile: () => import('file:///etc/passwd'),\n\
           dynamicEtc: () => import('/etc/passwd'),\n\
           dynamicOutside: () => import('../../outside.ts'),\n\
           xhr: () => new (globalThis as any).XMLHttpRequest(),\n\
           worker: () => new (globalThis as any).Worker('./x.ts'),\n\
           webSocket: () => new (globalThis as any).WebSocket('ws://localhost'),\n\
           wasm: () => (globalThis as any).WebAssembly.Memory,\n\
           shadowRealm: () => new (globalThis as any).ShadowRealm(),\n\
           atomicsWait: () => Atomics.wait(new Int32Array(4), 0, 0),\n\
           bootstrap: () => (globalThis as any).__bootstrap.core.ops,\n\
         };\n\
         const results: Record<string, string> = {};\n\
         for (const [name, attempt] of Object.entries(attempts)) {\n\
           try { const v = await attempt(); results[name] = 'SUCCEEDED: ' + String(v); }\n\
           catch (e: any) { results[name] = `${e.name}: ${e.message}`; }\n\
         }\n\
         export default results;\n",
        &[],
    );
    assert_eq!(out["error"], Value::Null, "{out}");
    let v = out["value"].as_object().unwrap();
    let expect = |name: &str, needle: &str| {
        let got = v[name].as_str().unwrap();
        assert!(got.contains(needle), "{name}: expected {needle:?}, got {got:?}");
    };
    expect("fetch", "fetch() is not available: scripts have no network access");
    expect("fetchFile", "fetch() is not available");
    expect("processEnv", "TypeError");
    expect("processBare", "ReferenceError: process is not defined");
    expect("require", "ReferenceError: require is not defined");
    expect("denoRead", "ReferenceError: Deno is not defined");
    expect("denoCoreOps", "ReferenceError: Deno is not defined");
    expect("dynamicNodeFs", "node: modules are not available");
    expect("dynamicFile", "file: URLs are not allowed");
    expect("dynamicEtc", "/etc/passwd is outside the workspace");
    expect("dynamicOutside", "outside.ts is outside the workspace");
    expect("xhr", "TypeError");
    expect("worker", "TypeError");
    expect("webSocket", "TypeError");
    expect("wasm", "TypeError");
    expect("shadowRealm", "TypeError");
    expect("atomicsWait", "Atomics.wait is not available");
    expect("bootstrap", "TypeError");
    for (name, got) in v {
        assert!(!got.as_str().unwrap().starts_with("SUCCEEDED"), "{name}: {got}");
    }
    // Uncaught, the error names what is missing and why.
    let r = exec_stdin(&p, "console.log(process.env.HOME);\n", &[]);
    r.assert_code(1);
    assert!(
        r.stderr.starts_with("error: ReferenceError: process is not defined at main.ts:1:13 (scripts run without file system, network, environment or process access"),
        "{}",
        r.stderr
    );
    let r = exec_stdin(&p, "await fetch('https://example.com');\n", &[]);
    assert!(r.stderr.starts_with("error: TypeError: fetch() is not available"), "{}", r.stderr);
    assert!(r.stderr.contains("at main.ts:1:7"), "{}", r.stderr);
}

#[test]
fn no_path_from_script_code_to_raw_ops_or_the_bridge_token() {
    let p = fixture_project();
    // Walk everything reachable from globalThis: own properties (strings and symbols, getters
    // included), prototypes, and the properties of every function found on the way.
    let out = exec_json(
        &p,
        "await callMCPTool('fixture', 'echo', { message: 'warm the bridge up' });\n\
         const seen = new Set<unknown>();\n\
         const found: string[] = [];\n\
         const hexStrings: string[] = [];\n\
         const queue: [unknown, string][] = [[globalThis, 'globalThis']];\n\
         while (queue.length) {\n\
           const [v, path] = queue.pop()!;\n\
           if ((typeof v !== 'object' && typeof v !== 'function') || v === null || seen.has(v)) continue;\n\
           seen.add(v);\n\
           if (typeof v === 'function' && /^op_/.test(v.name)) found.push(path);\n\
           for (const key of Reflect.ownKeys(v as object)) {\n\
             const name = typeof key === 'symbol' ? key.toString() : key;\n\
             if (/^op_|^ops$|^__bootstrap$|^Deno$|token/i.test(name)) found.push(path + '.' + name);\n\
             let child: unknown;\n\
             try { child = (v as any)[key]; } catch { continue; }\n\
             if (typeof child === 'string' && /^[0-9a-f]{64}$/.test(child)) hexStrings.push(path + '.' + name);\n\
             queue.push([child, path + '.' + name]);\n\
           }\n\
           queue.push([Object.getPrototypeOf(v), path + '.__proto__']);\n\
         }\n\
         export default { objects: seen.size, found, hexStrings };\n",
        &[],
    );
    assert_eq!(out["error"], Value::Null, "{out}");
    assert!(out["value"]["objects"].as_u64().unwrap() > 500, "{out}");
    assert_eq!(out["value"]["found"], json!([]), "{out}");
    assert_eq!(out["value"]["hexStrings"], json!([]), "{out}");
}

#[test]
fn globals_the_bridge_depends_on_cannot_be_replaced() {
    let p = fixture_project();
    let out = exec_json(
        &p,
        "'use strict';\n\
         const results: string[] = [];\n\
         try { (globalThis as any).__agentCallTool = () => 'hijacked'; } catch (e: any) { results.push(e.name); }\n\
         try { delete (globalThis as any).__agentCallTool; } catch (e: any) { results.push(e.name); }\n\
         try { Object.defineProperty(globalThis, 'callMCPTool', { value: 1 }); } catch (e: any) { results.push(e.name); }\n\
         export default { results, still: await callMCPTool('fixture', 'echo', { message: 'ok' }) };\n",
        &[],
    );
    assert_eq!(out["value"], json!({"results": ["TypeError", "TypeError", "TypeError"], "still": "ok"}), "{out}");
}

// ---------------------------------------------------------------------------------------------
// Servers, usage errors, Ctrl-C

#[test]
fn only_the_servers_a_script_refers_to_are_started() {
    let (a, b) = (unique_tag("needed"), unique_tag("unneeded"));
    let p = Project::with_servers(&format!(
        "{}{}",
        fixture_stdio_yaml("fixture", &["--tag", &a]),
        fixture_stdio_yaml("other", &["--tag", &b])
    ));
    generate(&p);
    // Generating started both; from here on, a server start shows as a new log file.
    std::fs::remove_dir_all(p.path().join(WS).join("logs")).unwrap();
    // No server: nothing starts.
    let r = exec_stdin(&p, "console.log(1 + 1);\n", &["-v"]);
    r.assert_ok();
    assert_eq!(r.stdout, "2\n");
    assert!(!p.path().join(WS).join("logs").exists(), "a script without tool calls started a server");
    // One server imported: only that one starts.
    let script = "import { echo } from './servers/fixture/index.ts';\n\
                  const t0 = Date.now();\n\
                  while (Date.now() - t0 < 300) await new Promise((r) => setTimeout(r, 20));\n\
                  console.log(await echo({ message: 'x' }));\n";
    let child = p
        .cmd(&["exec", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.as_ref().unwrap();
        stdin.write_all(script.as_bytes()).unwrap();
    }
    let mut child = child;
    drop(child.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids_matching(&a).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!pids_matching(&a).is_empty(), "the imported server never started");
    assert!(pids_matching(&b).is_empty(), "a server the script does not use was started");
    let out = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "x\n");
    assert!(pids_matching(&a).is_empty() && pids_matching(&b).is_empty());
    // A literal callMCPTool("other", ...) counts too.
    let r = exec_stdin(&p, "console.log(await callMCPTool('other', 'echo', { message: 'lit' }));\n", &[]);
    r.assert_ok();
    assert_eq!(r.stdout, "lit\n");
}

#[test]
fn the_tree_is_generated_when_missing_and_regenerated_when_tools_change() {
    let p = Project::with_fixture();
    let ws = p.path().join(WS);
    // A script that calls no server does not touch the tree.
    exec_stdin(&p, "console.log('no tools');\n", &[]).assert_ok();
    assert!(!ws.exists(), "the workspace was created for a script without tool calls");
    // No tree yet: it is generated before the script runs.
    let script = "import { add } from './servers/fixture/index.ts';\nconsole.log((await add({ a: 20, b: 22 })).sum);\n";
    let r = exec_stdin(&p, script, &[]);
    r.assert_ok();
    assert_eq!(r.stdout, "42\n");
    assert!(ws.join(".agent-manifest.json").is_file() && ws.join("servers/fixture/add.ts").is_file());
    // Up to date: nothing is rewritten.
    let echo = ws.join("servers/fixture/echo.ts");
    let mtime = std::fs::metadata(&echo).unwrap().modified().unwrap();
    std::thread::sleep(Duration::from_millis(20));
    exec_stdin(&p, script, &[]).assert_ok();
    assert_eq!(std::fs::metadata(&echo).unwrap().modified().unwrap(), mtime, "an up-to-date tree was rewritten");
    // A tree generated from an older tool list (no `add`) is regenerated before the script runs.
    let tools = p.run(&["mcp", "list", "--json"]).json();
    let stale: Vec<&Value> = tools.as_array().unwrap().iter().filter(|t| t["name"] != "add").collect();
    std::fs::write(p.path().join("stale.json"), serde_json::to_vec(&stale).unwrap()).unwrap();
    p.run(&["mcp", "generate", "--from-tools", "stale.json"]).assert_ok();
    assert!(!ws.join("servers/fixture/add.ts").exists());
    let r = exec_stdin(&p, script, &[]);
    r.assert_ok();
    assert_eq!(r.stdout, "42\n");
    assert!(ws.join("servers/fixture/add.ts").is_file(), "the stale tree was not regenerated");

    // With regenerate_on_startup off, a stale tree stays as it is.
    p.run(&["mcp", "generate", "--from-tools", "stale.json"]).assert_ok();
    p.write_config(&format!(
        "mcp:\n  code_execution:\n    regenerate_on_startup: false\n  servers:\n{}",
        fixture_stdio_yaml("fixture", &[])
    ));
    let out = exec_json(&p, script, &[]);
    assert_eq!(out["error"]["kind"], "import", "{out}");
    assert!(out["error"]["message"].as_str().unwrap().contains("does not provide an export named"), "{out}");
    assert!(!ws.join("servers/fixture/add.ts").exists());
}

#[test]
fn usage_errors_exit_2() {
    let p = Project::new();
    let r = p.run(&["exec", "missing.ts"]);
    r.assert_code(2);
    assert_eq!(r.stderr, "error: no such file: missing.ts\n");
    p.write("ok.ts", "console.log('ok')\n");
    for (flags, expected) in [
        (&["--timeout", "soon"][..], "error: --timeout: invalid duration \"soon\""),
        (&["--timeout", "0"][..], "error: --timeout: the timeout must be greater than zero"),
        (&["--memory-limit", "lots"][..], "error: --memory-limit: invalid size"),
        (&["--memory-limit", "1"][..], "error: --memory-limit: 1 MB is too small"),
        (&["--max-output", "5 parsecs"][..], "error: --max-output: invalid size unit"),
        (&["--max-output", "0"][..], "error: --max-output: must be at least 1"),
    ] {
        let mut args = vec!["exec"];
        args.extend_from_slice(flags);
        args.push("ok.ts");
        let r = p.run(&args);
        r.assert_code(2);
        assert!(r.stderr.starts_with(expected), "{flags:?}: {}", r.stderr);
    }
    let r = p.run(&["exec", "ok.ts"]);
    r.assert_ok();
    assert_eq!(r.stdout, "ok\n");
}

#[test]
fn ctrl_c_stops_the_script_removes_the_socket_and_stops_servers() {
    stops_cleanly_on(libc::SIGINT, "interrupted\n");
}

/// SIGTERM and SIGHUP are handled like Ctrl-C: exit 128+n, no server or socket left behind.
#[test]
fn sigterm_and_sighup_stop_cleanly_too() {
    stops_cleanly_on(libc::SIGTERM, "terminated (SIGTERM)\n");
    stops_cleanly_on(libc::SIGHUP, "hung up (SIGHUP)\n");
}

fn stops_cleanly_on(signal: i32, message: &str) {
    let tag = unique_tag("exec-signal");
    let p = Project::with_servers(&fixture_stdio_yaml("fixture", &["--tag", &tag]));
    generate(&p);
    let tmp = p.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut child = p
        .cmd(&["exec", "-"])
        .env("TMPDIR", &tmp)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"import { sleep } from './servers/fixture/index.ts';\nawait sleep({ ms: 60000 });\n").unwrap();
    }
    let sockets = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&tmp)
            .unwrap()
            .flatten()
            .map(|e| e.path().join("bridge.sock"))
            .filter(|s| s.exists())
            .collect()
    };
    // The call is in flight once the server has logged it.
    let in_flight = wait_until(Duration::from_secs(15), || p.server_logged("fixture", "sleep 60000 ms started"));
    assert!(in_flight, "the script's call never reached the server");
    assert!(!pids_matching(&tag).is_empty(), "server never started");
    assert_eq!(sockets().len(), 1, "the bridge socket should exist while the script runs");
    // SAFETY: sending a signal to our own child.
    unsafe { libc::kill(child.id() as i32, signal) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(128 + signal), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stderr), message);
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "bridge directory left behind");
    assert!(
        wait_until(Duration::from_secs(5), || pids_matching(&tag).is_empty()),
        "server left running after signal {signal}"
    );
}

/// A script importing a server that failed to start is told why (the server's error and its
/// stderr), not only that the module is missing; the same with regeneration off, where the
/// server starts in the background.
#[test]
fn importing_a_server_that_failed_to_start_says_why() {
    let servers =
        "    exitstart:\n      command: sh\n      args: [\"-c\", \"echo 'cannot open the database' >&2; exit 1\"]\n";
    let p = Project::with_servers(servers);
    let script = "import { anything } from './servers/exitstart/index.ts';\nconsole.log(anything);\n";
    for regenerate in ["true", "false"] {
        p.write_config(&format!(
            "mcp:\n  code_execution:\n    regenerate_on_startup: {regenerate}\n  servers:\n{servers}"
        ));
        let r = exec_stdin(&p, script, &[]);
        r.assert_code(1);
        assert!(r.stderr.contains("no such module servers/exitstart/index.ts"), "{}", r.stderr);
        assert!(r.stderr.contains("server `exitstart` failed to start"), "regenerate {regenerate}: {}", r.stderr);
        assert!(r.stderr.contains("cannot open the database"), "regenerate {regenerate}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "one line: {}", r.stderr);
    }
}

/// Endless or huge input ends in a usage error, not in memory filling up.
#[test]
fn endless_script_input_is_capped() {
    let p = Project::new();
    let r = p.run_stdin_from(&["exec", "-"], "/dev/zero");
    r.assert_code(2);
    assert_eq!(r.stderr, "error: the script on stdin is larger than 16.0 MB\n");
    let big = p.path().join("big.ts");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(17 << 20).unwrap();
    let r = p.run(&["exec", "big.ts"]);
    r.assert_code(2);
    assert_eq!(r.stderr, "error: big.ts is larger than 16.0 MB\n");
}

// ---------------------------------------------------------------------------------------------
// Hardening: memory outside the heap, paths outside the workspace, private caches

/// Runs `agent exec -` with `script` on stdin; returns what it printed and its peak resident set
/// in KB: the kernel's high-water mark of the process's own memory (`VmHWM` in
/// `/proc/<pid>/status`), read every millisecond until it exits. (`wait4`'s `ru_maxrss` would
/// count the test process it was forked from.)
fn exec_measured(p: &Project, script: &str, flags: &[&str]) -> (Run, u64) {
    use std::io::Write;
    let mut args = vec!["exec"];
    args.extend_from_slice(flags);
    args.push("-");
    let mut child = p
        .cmd(&args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut peak = 0u64;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                let hwm = status
                    .lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
                peak = peak.max(hwm.unwrap_or(0));
                std::thread::sleep(Duration::from_millis(1));
            }
            peak
        })
    };
    let mut stdin = child.stdin.take().unwrap();
    let script = script.to_string();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(script.as_bytes());
    });
    let out = child.wait_with_output().unwrap();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let _ = writer.join();
    (Run::from(out), watcher.join().unwrap())
}

/// Every way a script can allocate, under a 64 MB limit: each ends in the one-line memory-limit
/// error (or cannot be done at all), and the process's peak RSS stays within a few times the
/// limit, never the gigabytes the script asked for.
#[test]
fn every_allocator_is_bounded_by_the_memory_limit() {
    let p = fixture_project();
    const MEMORY: &str = "error: memory limit of 64 MB exceeded\n";
    // Peak RSS allowed: the runtime (~25 MB), the heap (64 MB), the headroom to unwind (16 MB),
    // tool-call requests held outside the heap (up to the limit again), allocator slack.
    const MAX_RSS_KB: u64 = 300 * 1024;
    let cases: &[(&str, &str, &str)] = &[
        (
            "SharedArrayBuffer",
            "const keep = []; for (let i = 0; i < 3; i++) { const b = new SharedArrayBuffer(2 ** 28); \
             new Uint8Array(b).fill(1); keep.push(b); } console.log('allocated');",
            "error: ReferenceError: SharedArrayBuffer is not defined at main.ts:1:",
        ),
        (
            "growable SharedArrayBuffer",
            "const b = new (globalThis as any).SharedArrayBuffer(1, { maxByteLength: 2 ** 30 }); console.log(b);",
            "error: TypeError: not a function",
        ),
        ("ArrayBuffer", "const keep = []; for (;;) keep.push(new ArrayBuffer(2 ** 24));", MEMORY),
        ("one huge ArrayBuffer", "const b = new ArrayBuffer(2 ** 31); console.log(b.byteLength);", MEMORY),
        ("typed arrays", "const keep = []; for (;;) keep.push(new Float64Array(2 ** 21).fill(1.5));", MEMORY),
        (
            "resizable ArrayBuffer grown",
            "const b = new ArrayBuffer(0, { maxByteLength: 2 ** 32 }); \
             for (let n = 2 ** 20; ; n *= 2) { b.resize(n); new Uint8Array(b).fill(1); }",
            MEMORY,
        ),
        (
            "many resizable ArrayBuffers",
            "const keep = []; for (;;) { const b = new ArrayBuffer(1, { maxByteLength: 2 ** 32 }); \
             b.resize(2 ** 20); keep.push(b); }",
            MEMORY,
        ),
        (
            "structuredClone of one string referenced many times",
            "const s = 'x'.repeat(2 ** 20); const c = structuredClone(new Array(4096).fill(s)); console.log(c.length);",
            MEMORY,
        ),
        (
            "structuredClone kept",
            "const o = { s: 'y'.repeat(2 ** 20) + 1, a: [1, 2, 3] }; const keep = []; for (;;) keep.push(structuredClone(o));",
            MEMORY,
        ),
        ("string repeat", "const s = 'x'.repeat(2 ** 29); console.log(s.length);", MEMORY),
        // Concatenation builds ropes: the engine's maximum length comes first.
        (
            "string doubling",
            "let s = 'ab'; for (;;) s += s; console.log(s.length);",
            "error: InternalError: string too long",
        ),
        ("string concat kept", "const keep = []; let i = 0; for (;;) keep.push('x'.repeat(2 ** 16) + i++);", MEMORY),
        ("Array", "const a = new Array(2 ** 28).fill(0); console.log(a.length);", MEMORY),
        ("Map", "const m = new Map(); for (let i = 0; ; i++) m.set(i, { i });", MEMORY),
        (
            "TextEncoder",
            "const e = new TextEncoder(); const s = 'x'.repeat(2 ** 22); const keep = []; for (;;) keep.push(e.encode(s));",
            MEMORY,
        ),
        ("Errors", "const keep = []; for (;;) keep.push(new Error('x'.repeat(100)));", MEMORY),
        ("timers", "const f = () => {}; for (;;) setTimeout(f, 1e9);", MEMORY),
        ("microtasks", "const f = () => {}; for (;;) queueMicrotask(f);", MEMORY),
        ("promise reactions", "const p = Promise.resolve(); const f = () => {}; for (;;) p.then(f);", MEMORY),
        (
            "queued tool calls",
            "const s = 'x'.repeat(2 ** 20); \
             for (let i = 0; i < 600; i++) callMCPTool('fixture', 'echo', { message: s }).catch(() => {}); \
             console.log('queued');",
            MEMORY,
        ),
    ];
    let mut failures = Vec::new();
    for (name, script, expected) in cases {
        let started = Instant::now();
        let (r, rss_kb) = exec_measured(&p, script, &["--memory-limit", "64MB", "--timeout", "20s"]);
        let took = started.elapsed();
        let one_line = r.stderr.lines().count() == 1;
        if r.code != 1 || !r.stderr.starts_with(expected) || !one_line || rss_kb > MAX_RSS_KB {
            failures.push(format!(
                "{name}: exit {}, peak RSS {} MB, {took:?}\n  stdout: {:?}\n  stderr: {:?}",
                r.code,
                rss_kb / 1024,
                r.stdout,
                r.stderr
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_next_run_works(&p);
}

#[test]
fn shared_memory_and_webassembly_are_absent() {
    let p = fixture_project();
    let out = exec_json(
        &p,
        "const g = globalThis as any;\n\
         let atomics = 'works', waitAsync = 'works';\n\
         try { Atomics.add(new Int32Array(4), 0, 1); } catch (e: any) { atomics = e.message; }\n\
         try { (Atomics as any).waitAsync(new Int32Array(4), 0, 0); } catch (e: any) { waitAsync = e.message; }\n\
         export default { sab: typeof g.SharedArrayBuffer, wasm: typeof g.WebAssembly, atomics, waitAsync };\n",
        &[],
    );
    assert_eq!(
        out["value"],
        json!({"sab": "undefined", "wasm": "undefined", "atomics": "works",
               "waitAsync": "Atomics.waitAsync is not available in scripts"}),
        "{out}"
    );
}

/// The engine is built without the Temporal polyfill and without WebAssembly (vendor/v8x): a
/// script reaching for either gets a ReferenceError it can catch, or, uncaught, one line naming
/// what is missing, exit 1, and the next script runs as usual.
#[test]
fn temporal_and_webassembly_are_reference_errors_not_crashes() {
    let p = fixture_project();
    let out = exec_json(
        &p,
        "const tries: Record<string, () => unknown> = {\n\
           temporal: () => Temporal.Now.instant(),\n\
           toTemporal: () => (new Date(0) as any).toTemporalInstant(),\n\
           wasm: () => new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])),\n\
         };\n\
         const results: Record<string, string> = {};\n\
         for (const [name, attempt] of Object.entries(tries)) {\n\
           try { results[name] = 'SUCCEEDED: ' + String(attempt()); }\n\
           catch (e: any) { results[name] = `${e.name}: ${e.message}`; }\n\
         }\n\
         export default { ...results, date: new Date(Date.UTC(2026, 0, 2)).toISOString() };\n",
        &[],
    );
    assert_eq!(
        out["value"],
        json!({"temporal": "ReferenceError: Temporal is not defined",
               "toTemporal": "TypeError: toTemporalInstant is not a function",
               "wasm": "ReferenceError: WebAssembly is not defined",
               "date": "2026-01-02T00:00:00.000Z"}),
        "{out}"
    );
    let r = exec_stdin(&p, "const now = Temporal.Now.instant();\nconsole.log(String(now));\n", &[]);
    r.assert_code(1);
    assert_eq!(
        r.stderr,
        "error: ReferenceError: Temporal is not defined at main.ts:1:13 (scripts have no Temporal; use Date)\n"
    );
    assert_next_run_works(&p);
}

/// A directory inside the workspace that is a link out of it: nothing behind the link is
/// imported, named in an error, or offered as a suggestion, and the link's target never printed.
#[test]
fn imports_never_suggest_or_name_files_outside_the_workspace() {
    let p = fixture_project();
    p.write("private/credentials.ts", "export const key = 'outside-secret';\n");
    p.write("private/secret-module.ts", "export const key = 'outside-secret';\n");
    let ws = p.path().join(WS);
    std::os::unix::fs::symlink(p.path().join("private"), ws.join("lib")).unwrap();
    std::os::unix::fs::symlink(p.path().join("private/credentials.ts"), ws.join("credentialz.ts")).unwrap();
    std::os::unix::fs::symlink("/etc", ws.join("etc")).unwrap();
    let outside = std::fs::canonicalize(p.path()).unwrap().display().to_string();
    let cases: &[(&str, &str)] = &[
        ("import { key } from './lib/secret-modul.ts'; console.log(key);", "lib/secret-modul.ts leads outside"),
        ("import { key } from './lib/secret-module.ts'; console.log(key);", "lib/secret-module.ts leads outside"),
        ("import { key } from './lib/nothing-here.ts'; console.log(key);", "lib/nothing-here.ts leads outside"),
        ("import { key } from './lib/sub/x.ts'; console.log(key);", "lib/sub/x.ts leads outside"),
        ("import { key } from './lib'; console.log(key);", "lib leads outside"),
        ("import { key } from './credentials.ts'; console.log(key);", "no such module credentials.ts"),
        ("import { key } from './credentialz.ts'; console.log(key);", "credentialz.ts leads outside"),
        ("import x from './etc/passwd'; console.log(x);", "etc/passwd leads outside"),
        ("import x from './etc/passw'; console.log(x);", "etc/passw leads outside"),
        ("const m = await import('./lib/secret-modul.ts'); console.log(m);", "lib/secret-modul.ts leads outside"),
    ];
    for (script, expected) in cases {
        let r = exec_stdin(&p, script, &[]);
        r.assert_code(1);
        assert_eq!(r.stderr.lines().count(), 1, "{script}: {}", r.stderr);
        assert!(r.stderr.contains(expected), "{script}: expected {expected:?} in\n{}", r.stderr);
        for leak in [outside.as_str(), "private", "credentials.ts?", "did you mean", "(to "] {
            assert!(!r.stderr.contains(leak), "{script}: leaked {leak:?}:\n{}", r.stderr);
        }
        assert!(!r.stdout.contains("outside-secret") && !r.stdout.contains("root:"), "{script}: {}", r.stdout);
    }
    // Suggestions still work inside.
    let r = exec_stdin(&p, "import { echo } from './servers/fixture/ech.ts';\nconsole.log(echo);\n", &[]);
    assert!(r.stderr.contains("did you mean servers/fixture/echo.ts?"), "{}", r.stderr);

    // With no workspace at all, nothing next to where it would be is suggested.
    p.write_config(&format!(
        "mcp:\n  code_execution:\n    workspace_dir: missing-ws\n  servers:\n{}",
        fixture_stdio_yaml("fixture", &[])
    ));
    let r = exec_stdin(&p, "import x from './agent.yam';\nconsole.log(x);\n", &[]);
    r.assert_code(1);
    assert!(r.stderr.contains("no such module agent.yam in the workspace"), "{}", r.stderr);
    assert!(!r.stderr.contains("did you mean") && !r.stderr.contains(&outside), "{}", r.stderr);
}

/// The engine's cache of compiled scripts (their string literals included) is private: an
/// existing world-readable one is tightened on use (directory 0700, files 0600), and new files
/// are 0600 from the start.
#[test]
fn the_compiled_script_caches_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let p = fixture_project();
    let cache = p.path().join("cache");
    let bytecode = cache.join("bc");
    let snapshots = cache.join("agent");
    for dir in [&bytecode, &snapshots] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let old = dir.join("0000000000000000.qbc");
        std::fs::write(&old, b"old").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    p.write("job.ts", &format!("const token = 'sk-{}';\nconsole.log(token.length);\n", unique_tag("secret")));
    // One run: the directories and the old files are tightened when it starts, and what it adds
    // is written 0600 (the engine's files no longer wait for the next run to be tightened).
    let out = p
        .cmd(&["exec", "job.ts"])
        .env("V82JSC_BC_CACHE_DIR", &bytecode)
        .env("XDG_CACHE_HOME", &cache)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    for dir in [&bytecode, &snapshots] {
        assert_eq!(mode(dir), 0o700, "{}", dir.display());
        let files: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).collect();
        assert!(files.len() >= 2, "this run added nothing to {}: {files:?}", dir.display());
        for f in files {
            assert_eq!(mode(&f), 0o600, "{}", f.display());
        }
    }
}

/// The walks file beside the snapshot (where a restored context's builtins are found, recorded by
/// one process for the next): written private on first use, followed later, and a damaged one
/// is refused and written again while the script runs as usual. A file of another kind in its
/// place (a link, as a racing local process could plant) is not followed, and one that cannot
/// be written costs nothing but the saving.
#[test]
fn the_snapshot_walks_file_is_private_and_a_damaged_one_is_replaced() {
    use std::os::unix::fs::PermissionsExt;
    let p = fixture_project();
    let cache = p.path().join("cache");
    let walks = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(cache.join("agent"))
            .map(|d| d.flatten().map(|e| e.path()).filter(|f| f.extension().is_some_and(|x| x == "walks")).collect())
            .unwrap_or_default()
    };
    p.write("job.ts", "console.log(6 * 7);\n");
    let run = || {
        let out = p.cmd(&["exec", "job.ts"]).env("XDG_CACHE_HOME", &cache).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "42\n", "{out:?}");
    };
    run();
    let [file] = walks().try_into().expect("one walks file beside the snapshot");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    // The process that made the snapshot recorded some walks in the state making it left; the
    // next one finds those do not hold, and writes what it recorded instead. From then on the
    // file is read and followed, and left as it is.
    run();
    let settled = std::fs::read(&file).unwrap();
    let valid = |b: &[u8]| b.starts_with(b"AGWALK01") && b.len() > 1024;
    assert!(valid(&settled), "{} bytes", settled.len());
    let inode = |f: &std::path::Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(f).unwrap());
    let before = inode(&file);
    run();
    assert_eq!(inode(&file), before, "a process that read the walks wrote them again");
    for damaged in [b"AGWALK01 not a walk".to_vec(), settled[..settled.len() / 2].to_vec()] {
        std::fs::write(&file, &damaged).unwrap();
        run();
        let now = std::fs::read(&file).unwrap();
        assert!(valid(&now) && now != damaged, "the damaged file was not written again ({} bytes)", now.len());
    }
    let elsewhere = p.path().join("elsewhere.walks");
    std::fs::write(&elsewhere, &settled).unwrap();
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &file).unwrap();
    run();
    assert!(std::fs::symlink_metadata(&file).unwrap().is_file(), "the link was followed, not replaced");
    // Where the file cannot be written (a directory holds its name), scripts run as before.
    std::fs::remove_file(&file).unwrap();
    std::fs::create_dir(&file).unwrap();
    run();
    assert!(file.is_dir());
}

/// The engine's bytecode cache lives in agent's own cache directory: nothing is written to the
/// engine's default `~/.cache/v8x` (outside our cache and its trimming).
#[test]
fn the_engine_writes_compiled_scripts_only_into_agents_own_cache() {
    use std::os::unix::fs::PermissionsExt;
    let p = fixture_project();
    let cache = p.path().join("cache");
    p.write("job.ts", &format!("console.log('{}'.length);\n", unique_tag("own-cache")));
    let out =
        p.cmd(&["exec", "job.ts"]).env("XDG_CACHE_HOME", &cache).env_remove("V82JSC_BC_CACHE_DIR").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!cache.join("v8x").exists(), "the engine wrote to its own default cache");
    assert!(!p.path().join("home/.cache").exists(), "something was written under HOME/.cache");
    let ours = cache.join("agent/quickjs-bytecode");
    let files = std::fs::read_dir(&ours)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "qbc"))
        .count();
    assert!(files > 0, "no compiled script in {}", ours.display());
    assert_eq!(std::fs::metadata(&ours).unwrap().permissions().mode() & 0o777, 0o700);
}

/// With no cache directory of its own (neither `XDG_CACHE_HOME` nor `HOME`), `agent` runs with no
/// bytecode cache rather than the engine's old fallback in the shared temporary directory, where
/// another local user could have made the directory first and planted compiled code for it to
/// load. The attacker's directory is there beforehand; it is left exactly as it was, and nothing
/// else is written beside it.
#[test]
fn without_a_cache_directory_the_shared_temp_dir_is_not_used() {
    let p = fixture_project();
    let shared_tmp = p.path().join("shared-tmp");
    let planted = shared_tmp.join("v8x/quickjs-bytecode");
    std::fs::create_dir_all(&planted).unwrap();
    std::fs::write(planted.join("0000000000000000.qbc"), b"planted").unwrap();
    let before = support::paths_under(&shared_tmp);
    p.write("job.ts", &format!("console.log('{}'.length);\n", unique_tag("no-cache-dir")));
    let out = p
        .cmd(&["exec", "job.ts"])
        .env_remove("XDG_CACHE_HOME")
        .env_remove("HOME")
        .env_remove("V82JSC_BC_CACHE_DIR")
        .env("TMPDIR", &shared_tmp)
        // (the project's trust is recorded under HOME, gone here)
        .env("AGENT_TRUST_PROJECT", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(support::paths_under(&shared_tmp), before, "the shared temporary directory was written to");
}

// ---------------------------------------------------------------------------------------------
// The tool catalog: searchTools / describeTool

#[test]
fn search_tools_and_describe_tool_reach_every_enabled_server() {
    let yaml = format!(
        "{}{}{}      disabled: true\n",
        fixture_stdio_yaml("fixture", &[]),
        fixture_stdio_yaml("other", &[]),
        fixture_stdio_yaml("off", &[])
    );
    let p = Project::with_servers(&yaml);
    // The script names no server: using the catalog starts every enabled one (and the tree is
    // generated for them), not only what it imports.
    let out = exec_json(
        &p,
        "const hits = await searchTools('add two numbers', { limit: 3 });\n\
         const servers = hits.slice(0, 2).map((h) => `${h.server}.${h.tool}`).sort();\n\
         const ts = await describeTool('other.add');\n\
         const dotted = await describeTool('fixture', 'text.upper');\n\
         const seen: Record<string, unknown> = {};\n\
         try { await describeTool('fixture.ad'); } catch (e: any) { seen.unknown = [e.name, e.code, e.status, e.suggestions.includes('add')]; }\n\
         try { await describeTool('off.add'); } catch (e: any) { seen.disabled = e.code; }\n\
         try { await describeTool('nodot'); } catch (e: any) { seen.nodot = [e.name, e.message]; }\n\
         try { await searchTools(''); } catch (e: any) { seen.empty = e.name; }\n\
         try { await searchTools('x', { limit: 0 }); } catch (e: any) { seen.limit = e.name; }\n\
         try { await searchTools('the'); } catch (e: any) { seen.noWords = [e.code, e.message]; }\n\
         export default { servers, keys: Object.keys(hits[0]), first: hits[0], count: hits.length,\n\
           head: ts.split('\\n')[0], typed: ts.includes('export interface AddInput'),\n\
           dotted: dotted.includes('text.upper'), seen };\n",
        &[],
    );
    assert_eq!(out["error"], Value::Null, "{out}");
    let v = &out["value"];
    assert_eq!(v["servers"], json!(["fixture.add", "other.add"]), "{v}");
    assert_eq!(v["keys"], json!(["server", "tool", "score", "signature", "description"]));
    assert_eq!(v["first"]["description"], "Add two integers; returns {sum}.");
    assert!(v["count"].as_u64().unwrap() <= 3);
    assert_eq!(v["head"], "// import { add } from \"./servers/other/index.ts\";  (file servers/other/add.ts)");
    assert_eq!(v["typed"], true);
    assert_eq!(v["dotted"], true);
    let seen = &v["seen"];
    assert_eq!(seen["unknown"], json!(["BridgeError", "unknown_tool", 404, true]));
    assert_eq!(seen["disabled"], "unknown_server");
    assert_eq!(seen["nodot"][0], "TypeError");
    assert!(seen["nodot"][1].as_str().unwrap().contains("expected \"server.tool\""), "{seen}");
    assert_eq!(seen["empty"], "TypeError");
    assert_eq!(seen["limit"], "TypeError");
    assert_eq!(seen["noWords"][0], "bad_request");
    assert!(p.path().join(WS).join("servers/other/add.ts").is_file(), "the tree covers every enabled server");
    assert!(!p.path().join(WS).join("servers/off").exists(), "a disabled server is not started");
}

#[test]
fn a_script_without_the_catalog_still_starts_only_what_it_names() {
    let yaml = format!("{}{}", fixture_stdio_yaml("fixture", &[]), fixture_stdio_yaml("other", &[]));
    let p = Project::with_servers(&yaml);
    let r = exec_stdin(
        &p,
        "// searchToolsX is not the catalog\nconsole.log(await callMCPTool('fixture', 'echo', { message: 'hi' }));",
        &[],
    );
    r.assert_ok();
    assert!(p.path().join(WS).join("servers/fixture").is_dir());
    assert!(!p.path().join(WS).join("servers/other").exists());
}

/// The `agent` binary's relative relocations are packed (`DT_RELR`, from build.rs): as a plain
/// table they were 1.6 MB that the dynamic loader read at every start, once in `agent` and once
/// in its script worker, resident in both for the whole run.
#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64", target_endian = "little"))]
#[test]
fn the_binary_packs_its_relative_relocations() {
    const DT_RELASZ: u64 = 8;
    const DT_RELR: u64 = 36;
    let elf = std::fs::read(support::agent_bin()).expect("read the agent binary");
    let dynamic = dynamic_entries(&elf);
    assert!(dynamic.iter().any(|&(tag, _)| tag == DT_RELR), "the agent binary has no DT_RELR entry");
    let rela = dynamic.iter().find(|&&(tag, _)| tag == DT_RELASZ).map_or(0, |&(_, v)| v);
    assert!(rela < 64 * 1024, "its RELA table is still {rela} bytes");
}

/// The (tag, value) entries of a 64-bit little-endian ELF file's dynamic section.
#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64", target_endian = "little"))]
fn dynamic_entries(elf: &[u8]) -> Vec<(u64, u64)> {
    const PT_DYNAMIC: u32 = 2;
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().expect("8 bytes"));
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().expect("4 bytes"));
    let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().expect("2 bytes"));
    assert_eq!(&elf[..5], b"\x7fELF\x02", "not a 64-bit ELF file");
    let (phoff, phentsize, phnum) = (u64_at(0x20) as usize, u16_at(0x36) as usize, u16_at(0x38) as usize);
    let header = (0..phnum)
        .map(|i| phoff + i * phentsize)
        .find(|&ph| u32_at(ph) == PT_DYNAMIC)
        .expect("a PT_DYNAMIC program header");
    let (offset, size) = (u64_at(header + 8) as usize, u64_at(header + 32) as usize);
    (offset..offset + size).step_by(16).map(|e| (u64_at(e), u64_at(e + 8))).take_while(|&(tag, _)| tag != 0).collect()
}

/// The functions a cold `agent exec` runs (`linker/hot-symbols.txt`) are linked next to each
/// other (build.rs). Spread over the binary's code, a page fault in each process mapped the 64 KB
/// around every one of them: ~10 MB of code resident in `agent` and again in its worker, most of
/// it never run. Only the names this build has are checked (a debug build shares the C engine's
/// and the standard library's with the release build the list was made from).
#[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
#[test]
fn the_functions_a_cold_exec_runs_are_linked_together() {
    let list = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/linker/hot-symbols.txt"))
        .expect("read linker/hot-symbols.txt");
    let hot: std::collections::HashSet<&str> = list.lines().collect();
    let out = std::process::Command::new("nm")
        .args(["-S", "--defined-only"])
        .arg(support::agent_bin())
        .output()
        .expect("run nm (binutils)");
    assert!(out.status.success(), "nm failed: {}", String::from_utf8_lossy(&out.stderr));
    let (mut lowest, mut highest, mut size, mut found) = (u64::MAX, 0u64, 0u64, 0usize);
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [addr, len, kind, name] = f[..] else { continue };
        if !matches!(kind, "t" | "T" | "w" | "W") || !hot.contains(name) {
            continue;
        }
        let (addr, len) =
            (u64::from_str_radix(addr, 16).expect("address"), u64::from_str_radix(len, 16).expect("size"));
        lowest = lowest.min(addr);
        highest = highest.max(addr + len);
        size += len;
        found += 1;
    }
    assert!(found >= 200, "only {found} of the listed functions are in the binary");
    // Packed, they span their own size plus alignment padding and the few functions that share
    // a section with one of them; scattered, they span most of the code.
    let span = highest - lowest;
    assert!(
        span <= 2 * size + (256 << 10),
        "{found} listed functions ({size} bytes) are spread over {span} bytes: was the binary linked \
         without the list (another linker configured, or AGENT_NO_SYMBOL_ORDER set)?"
    );
}
