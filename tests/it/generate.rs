//! `agent mcp generate` end to end: the real binary against the fixture server,
//! server-everything and saved tool lists (the GitHub corpus, the schema constructs, hostile
//! metadata); every generated tree compiled with `tsc --strict`; `client.ts` run under Node
//! against a real bridge socket.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use serde_json::Value;
use support::{Project, everything_yaml, fixture_stdio_yaml};

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name).display().to_string()
}

/// `tsc`, or `None` (with a printed notice) when Node is not available.
fn tsc() -> Option<PathBuf> {
    if !support::node_or_skip("the generated TypeScript is not compiled with tsc") {
        return None;
    }
    Some(support::npm_bin(support::TYPESCRIPT, "tsc"))
}

/// Type-checks the tree in `dir` (its own strict tsconfig.json) plus `check.ts` written into it.
fn assert_compiles(tsc: &Path, dir: &Path, check_ts: &str) {
    std::fs::write(dir.join("check.ts"), check_ts).unwrap();
    let tsconfig: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("tsconfig.json")).unwrap()).unwrap();
    assert_eq!(tsconfig["compilerOptions"]["strict"], true);
    assert_eq!(tsconfig["compilerOptions"]["noEmit"], true);
    let out = Command::new(tsc).args(["-p", ".", "--pretty", "false"]).current_dir(dir).output().unwrap();
    assert!(
        out.status.success(),
        "tsc failed in {}:\n{}{}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn read(p: impl AsRef<Path>) -> String {
    std::fs::read_to_string(p.as_ref()).unwrap_or_else(|e| panic!("{}: {e}", p.as_ref().display()))
}

/// A generated file for a snapshot, without the agent version (so releases do not churn them).
fn for_snapshot(text: &str) -> String {
    text.replace(env!("CARGO_PKG_VERSION"), "[version]")
}

/// How many tools the project's servers have, and how many declare an output schema, as
/// `agent mcp list --json` reports them (the fixture grows; the tests follow it).
fn listed_counts(p: &Project) -> (usize, usize) {
    let r = p.run(&["mcp", "list", "--json"]);
    r.assert_ok();
    let list = r.json();
    let tools = list.as_array().unwrap();
    (tools.len(), tools.iter().filter(|t| t["outputSchema"].is_object()).count())
}

/// Files of a one-server tree: the tools, the server's index, and the top-level files
/// (client.ts, result.mjs, result.d.mts, globals.d.ts, index.ts, example.ts, tsconfig.json,
/// README.md, the manifest).
fn tree_files(tools: usize) -> usize {
    tools + 1 + 9
}

fn mtime(p: &Path) -> SystemTime {
    std::fs::metadata(p).unwrap().modified().unwrap()
}

// ---------------------------------------------------------------------------------------------
// The fixture server

#[test]
fn fixture_tree_has_the_documented_files_and_compiles() {
    let p = Project::with_fixture();
    let (n, typed) = listed_counts(&p);
    assert!(n >= 10 && typed >= 2, "{n} {typed}");
    let r = p.run(&["mcp", "generate"]);
    r.assert_ok();
    assert!(
        r.stdout.contains(&format!(
            "Generated {n} tools on 1 server ({typed} with an output schema, 0 degraded) in .kodelet/mcp\n"
        )),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains(&format!("Files: {} written, 0 unchanged, 0 deleted\n", tree_files(n))), "{}", r.stdout);
    let dir = p.path().join(".kodelet/mcp");
    for f in [
        "client.ts",
        "result.mjs",
        "result.d.mts",
        "index.ts",
        "example.ts",
        "tsconfig.json",
        "README.md",
        "globals.d.ts",
        ".agent-manifest.json",
    ] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    for f in ["add", "big", "complex", "crash", "echo", "fail", "image", "progress", "sleep", "textUpper", "index"] {
        assert!(dir.join(format!("servers/fixture/{f}.ts")).is_file(), "{f}.ts");
    }
    let index = read(dir.join("servers/fixture/index.ts"));
    assert!(index.contains("//   textUpper — Upper-case the text (a tool name with a dot).\n"), "{index}");
    let upper = read(dir.join("servers/fixture/textUpper.ts"));
    assert!(upper.contains(r#"callResponse<TextUpperOutput>("fixture", "text.upper", input)"#), "{upper}");
    let readme = read(dir.join("README.md"));
    assert!(readme.contains(&format!("- `fixture`: {n} tools, listed in `servers/fixture/index.ts`")), "{readme}");
    assert!(readme.contains("Only what the script prints"));
    assert!(readme.contains("Promise.all"));
    assert!(readme.contains("MCPToolError"));

    insta::assert_snapshot!("fixture_complex_ts", for_snapshot(&read(dir.join("servers/fixture/complex.ts"))));
    insta::assert_snapshot!("fixture_add_ts", for_snapshot(&read(dir.join("servers/fixture/add.ts"))));
    insta::assert_snapshot!("fixture_index_ts", for_snapshot(&index));

    let Some(tsc) = tsc() else { return };
    assert_compiles(
        &tsc,
        &dir,
        r#"
import { add, complex, echo, textUpper, type ComplexInput } from "./servers/fixture/index.ts";
import { fixture } from "./index.ts";
import { MCPToolError } from "./client.ts";

const sum: number = (await add({ a: 1, b: 2 })).sum;
const found: ToolSearchResult[] = await searchTools("add numbers", { limit: 3 });
const firstSignature: string = found[0].signature;
const declaration: string = (await describeTool("fixture.add")) + (await describeTool("fixture", "add"));
const input: ComplexInput = {
  query: "q",
  mode: "fast",
  filters: [{ field: "f", op: "eq", value: 1 }],
  matrix: [[1, 2], [3]],
  labels: { a: "b" },
  tree: { name: "root", children: [{ name: "leaf" }] },
};
const out = await complex(input);
const nodes: number = out.nodes;
// Not observed yet: a ToolResponse (no field of the result type-checks without it).
const text: unknown = (await echo({ message: "hi" })).raw;
const greeting: string = (await echo({ message: "hi" })).get("x", "fallback");
await textUpper({ text: "x" });
await fixture.big();
// @ts-expect-error -- `a` is a number
await add({ a: "1", b: 2 });
// @ts-expect-error -- `message` is required
await echo({});
// @ts-expect-error -- not a Mode
await complex({ query: "q", mode: "FAST" });
// @ts-expect-error -- AddOutput has no `total`
(await add({ a: 1, b: 2 })).total;
try {
  await fixture.fail();
} catch (e) {
  if (e instanceof MCPToolError) console.log(e.server, e.tool, e.content.length, sum, nodes, text, firstSignature, declaration);
}
"#,
    );
}

/// The tree decodes results with the very source agent's runtime uses (runtime-js/result.js),
/// under the generated header, and `client.ts` takes its decoding from there.
#[test]
fn the_tree_ships_the_runtime_result_decoder() {
    let p = Project::new();
    p.run(&["mcp", "generate"]).assert_ok();
    let dir = p.path().join(".kodelet/mcp");
    let shipped = read(dir.join("result.mjs"));
    let source = read(Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime-js/result.js"));
    let (header, body) = shipped.split_once('\n').unwrap();
    assert!(header.starts_with("// Generated by agent "), "{header}");
    assert_eq!(body, source);
    let client = read(dir.join("client.ts"));
    assert!(client.contains("import { decodeResult, MCPToolError } from \"./result.mjs\";"), "{client}");
    assert!(!client.contains("function decodeResult") && !client.contains("class MCPToolError"), "one copy only");
}

#[test]
fn the_generated_example_and_tree_run_under_agent_exec() {
    let p = Project::with_fixture();
    let (n, _) = listed_counts(&p);
    p.run(&["mcp", "generate"]).assert_ok();
    let r = p.run(&["exec", ".kodelet/mcp/example.ts"]);
    r.assert_ok();
    assert!(r.stdout.starts_with(&format!("fixture: {n} tools\n")), "{}", r.stdout);

    let script = r#"
import { add, fail, textUpper } from "./servers/fixture/index.ts";
import { MCPToolError } from "./client.ts";
const { sum } = await add({ a: 20, b: 22 });
let failed = "";
try { await fail(); } catch (e) { if (e instanceof MCPToolError) failed = e.tool; }
console.log(sum, await textUpper({ text: "ok" }), failed);
"#;
    let r = p.run_stdin(&["exec", "-"], script);
    r.assert_ok();
    assert_eq!(r.stdout, "42 OK fail\n");
}

#[test]
fn regenerating_rewrites_nothing_and_prints_json_on_request() {
    let p = Project::with_fixture();
    let (n, typed) = listed_counts(&p);
    p.run(&["mcp", "generate", "--output", "api"]).assert_ok();
    let dir = p.path().join("api");
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    for f in ["servers/fixture/add.ts", "client.ts", "index.ts", ".agent-manifest.json"] {
        std::fs::File::options().write(true).open(dir.join(f)).unwrap().set_modified(old).unwrap();
    }
    let r = p.run(&["mcp", "generate", "--output", "api", "--json"]);
    r.assert_ok();
    let report = r.json();
    assert_eq!(report["files_written"], 0, "{report}");
    assert_eq!(report["files_unchanged"], tree_files(n));
    assert_eq!(report["files_deleted"], 0);
    assert_eq!(report["servers"], 1);
    assert_eq!(report["tools"], n);
    assert_eq!(report["with_output_schema"], typed);
    assert_eq!(report["degraded"], serde_json::json!([]));
    assert_eq!(report["output_dir"], "api");
    assert_eq!(report["per_server"][0]["directory"], "fixture");
    for f in ["servers/fixture/add.ts", "client.ts", "index.ts", ".agent-manifest.json"] {
        assert_eq!(mtime(&dir.join(f)), old, "{f} was rewritten");
    }
}

#[test]
fn a_failing_server_is_reported_and_its_files_are_kept() {
    let both = format!("{}{}", fixture_stdio_yaml("fixture", &[]), fixture_stdio_yaml("other", &[]));
    let p = Project::with_servers(&both);
    let per_server = listed_counts(&p).0 / 2;
    p.run(&["mcp", "generate"]).assert_ok();
    let dir = p.path().join(".kodelet/mcp");
    let echo = dir.join("servers/other/echo.ts");
    let before = read(&echo);

    p.write_config(&format!(
        "mcp:\n  servers:\n{}{}",
        fixture_stdio_yaml("fixture", &[]),
        fixture_stdio_yaml("other", &["--exit-on-start"])
    ));
    let r = p.run(&["mcp", "generate"]);
    r.assert_code(1);
    assert!(r.stderr.contains("server `other` failed to start"), "{}", r.stderr);
    assert!(r.stderr.contains("their previously generated files were kept"), "{}", r.stderr);
    assert!(
        r.stdout.contains(&format!(
            "  other    {per_server:>4} tools  (failed to start: files from the last generation kept)\n"
        )),
        "{}",
        r.stdout
    );
    assert_eq!(read(&echo), before);
    assert!(read(dir.join("index.ts")).contains("import * as other from \"./servers/other/index.ts\";"));

    // The same with --server: only the named server is touched.
    let r = p.run(&["mcp", "generate", "--server", "other"]);
    r.assert_code(1);
    assert!(echo.exists());
}

#[test]
fn usage_errors_exit_2_with_a_precise_message() {
    let p = Project::with_fixture();
    let r = p.run(&["mcp", "generate", "--server", "fixtur"]);
    r.assert_code(2);
    assert!(r.stderr.contains("unknown server `fixtur`; did you mean `fixture`?"), "{}", r.stderr);

    let r = p.run(&["mcp", "generate", "--from-tools", "nope.json"]);
    r.assert_code(2);
    assert!(r.stderr.contains("cannot read nope.json"), "{}", r.stderr);

    p.write("bad.json", "{\"tools\": [");
    let r = p.run(&["mcp", "generate", "--from-tools", "bad.json"]);
    r.assert_code(2);
    assert!(r.stderr.contains("bad.json is not valid JSON: EOF while parsing"), "{}", r.stderr);

    p.write("shape.json", "[{\"name\": \"a\"}, {\"name\": 3}]");
    let r = p.run(&["mcp", "generate", "--from-tools", "shape.json"]);
    r.assert_code(2);
    assert_eq!(r.stderr, "error: shape.json: [1].name: expected a string\n");

    let r = p.run(&["mcp", "generate", "--from-tools", &data("schema-constructs.json"), "--server", "construct"]);
    r.assert_code(2);
    assert!(r.stderr.contains("no tools of server `construct` in"), "{}", r.stderr);
    assert!(r.stderr.contains("; did you mean `constructs`?"), "{}", r.stderr);
    assert!(!p.path().join(".kodelet").exists(), "nothing written on a usage error");
}

#[test]
fn without_servers_the_tree_has_only_the_client_and_says_why() {
    let p = Project::new();
    let r = p.run(&["mcp", "generate"]);
    r.assert_ok();
    assert!(r.stderr.contains("no MCP servers configured"), "{}", r.stderr);
    assert!(r.stdout.contains("Generated 0 tools on 0 servers"), "{}", r.stdout);
    let dir = p.path().join(".kodelet/mcp");
    assert!(dir.join("client.ts").is_file() && !dir.join("servers").exists());
    let Some(tsc) = tsc() else { return };
    assert_compiles(&tsc, &dir, "import { callMCPTool } from \"./index.ts\";\nconsole.log(typeof callMCPTool);\n");
}

#[test]
fn clean_removes_only_generated_files() {
    let p = Project::with_fixture();
    let (n, _) = listed_counts(&p);
    p.run(&["mcp", "generate"]).assert_ok();
    let dir = p.path().join(".kodelet/mcp");
    p.write(".kodelet/mcp/main.ts", "console.log('mine');\n");
    p.write(".kodelet/mcp/servers/fixture/notes.md", "my notes\n");
    let stale = format!("// Generated by agent {} from MCP server \"gone\". Do not edit.\n", env!("CARGO_PKG_VERSION"));
    p.write(".kodelet/mcp/servers/gone/tool.ts", &stale);

    let r = p.run(&["mcp", "generate", "--clean", "--json"]);
    r.assert_ok();
    let report = r.json();
    assert_eq!(report["files_written"], tree_files(n), "{report}");
    assert_eq!(report["files_deleted"], 1);
    assert!(!dir.join("servers/gone").exists());
    assert_eq!(read(dir.join("main.ts")), "console.log('mine');\n");
    assert_eq!(read(dir.join("servers/fixture/notes.md")), "my notes\n");
}

// ---------------------------------------------------------------------------------------------
// Saved tool lists

#[test]
fn a_saved_tool_list_reproduces_the_live_tree_byte_for_byte() {
    let p = Project::with_fixture();
    p.run(&["mcp", "generate"]).assert_ok();
    let dir = p.path().join(".kodelet/mcp");
    let live: Vec<(PathBuf, String)> = walk(&dir).into_iter().map(|f| (f.clone(), read(&f))).collect();
    let listed = p.run(&["mcp", "list", "--json"]);
    listed.assert_ok();
    p.write("tools.json", &listed.stdout);
    std::fs::remove_dir_all(&dir).unwrap();

    let r = p.run(&["mcp", "generate", "--from-tools", "tools.json"]);
    r.assert_ok();
    let offline: Vec<(PathBuf, String)> = walk(&dir).into_iter().map(|f| (f.clone(), read(&f))).collect();
    assert_eq!(live.len(), offline.len());
    for ((a, x), (b, y)) in live.iter().zip(&offline) {
        assert_eq!(a, b);
        assert!(x == y, "{} differs", a.display());
    }
}

#[test]
fn a_tools_list_dump_with_the_server_info_generates() {
    // What MCP clients save: the server's info (`serverInfo`) next to the `tools/list` result.
    let p = Project::new();
    let tools =
        r#"[{"name": "echo", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}}]"#;
    p.write("dump.json", &format!(r#"{{"server": {{"name": "everything", "version": "2.0.0"}}, "tools": {tools}}}"#));
    let r = p.run(&["mcp", "generate", "--from-tools", "dump.json"]);
    r.assert_ok();
    assert!(r.stdout.contains("Generated 1 tool on 1 server ("), "{}", r.stdout);
    assert!(p.path().join(".kodelet/mcp/servers/everything/echo.ts").is_file(), "{}", r.stdout);
    // Without a name, `--server` names the server.
    p.write("nameless.json", &format!(r#"{{"server": {{"version": "2.0.0"}}, "tools": {tools}}}"#));
    let r = p.run(&["mcp", "generate", "--from-tools", "nameless.json", "--server", "mine", "-o", "other"]);
    r.assert_ok();
    assert!(p.path().join("other/servers/mine/echo.ts").is_file(), "{}", r.stdout);
    p.write("bad.json", r#"{"server": {"name": 3}, "tools": []}"#);
    let r = p.run(&["mcp", "generate", "--from-tools", "bad.json"]);
    r.assert_code(2);
    assert_eq!(r.stderr, "error: bad.json: `server.name` must be a string\n");
}

#[test]
fn github_corpus_generates_offline_and_compiles() {
    let p = Project::new();
    let r =
        p.run(&["mcp", "generate", "--from-tools", &data("github-mcp-server.json"), "--server", "github", "-o", "gh"]);
    r.assert_ok();
    assert!(
        r.stdout.contains("Generated 117 tools on 1 server (0 with an output schema, 0 degraded) in gh\n"),
        "{}",
        r.stdout
    );
    let dir = p.path().join("gh");
    let files = std::fs::read_dir(dir.join("servers/github")).unwrap().count();
    assert_eq!(files, 118, "117 tools + index.ts");
    for tool in ["actionsList", "createPullRequest", "pushFiles"] {
        insta::assert_snapshot!(
            format!("github_{tool}_ts"),
            for_snapshot(&read(dir.join(format!("servers/github/{tool}.ts"))))
        );
    }

    let Some(tsc) = tsc() else { return };
    assert_compiles(
        &tsc,
        &dir,
        r#"
import { createPullRequest, getMe, listIssues, pushFiles } from "./servers/github/index.ts";
import * as servers from "./index.ts";

const pr = await createPullRequest({ owner: "o", repo: "r", title: "t", head: "h", base: "main" });
console.log(pr);
await getMe();
await listIssues({ owner: "o", repo: "r", state: "OPEN" });
await pushFiles({ owner: "o", repo: "r", branch: "b", message: "m", files: [{ path: "a", content: "b" }] });
await servers.github.getMe({});
// @ts-expect-error -- `state` is an enum
await listIssues({ owner: "o", repo: "r", state: "whatever" });
// @ts-expect-error -- `owner` is required
await createPullRequest({ repo: "r", title: "t", head: "h", base: "main" });
"#,
    );
}

#[test]
fn every_schema_construct_compiles() {
    let p = Project::new();
    let r = p.run(&["mcp", "generate", "--from-tools", &data("schema-constructs.json")]);
    r.assert_ok();
    assert!(r.stdout.contains("(1 with an output schema, 2 degraded)"), "{}", r.stdout);
    assert!(
        r.stderr.contains("warning: generated untyped: constructs.not-an-object: inputSchema has type \"string\""),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("warning: constructs.bad-output: outputSchema is a string"), "{}", r.stderr);
    let Some(tsc) = tsc() else { return };
    assert_compiles(
        &tsc,
        &p.path().join(".kodelet/mcp"),
        r#"
import * as c from "./servers/constructs/index.ts";

await c.types({ s: "x", i: 1, multi: null });
await c.arrays({ list: [], pair: ["a", 1], rgb: [1, 2, 3], draft4: ["x"] });
await c.recursion({ tree: { name: "a", children: [{ name: "b" }] }, json: { a: [1, "x", { b: 2 }] } });
await c.unions({ one_of: { kind: "a", a: "x" }, all_of: { x: "y" }, at_least_one: { a: "x" } });
await c.emptyInput();
await c.notAnObject({ anything: 1 });
const out: { sum: number } = await c.withOutput({ mode: "upper" });
console.log(out.sum);
// @ts-expect-error -- 3 items exactly
await c.arrays({ list: [], rgb: [1, 2] });
// @ts-expect-error -- `kind` must match its branch
await c.unions({ one_of: { kind: "a", b: 1 } });
// @ts-expect-error -- takes no arguments
await c.emptyProperties({ x: 1 });
"#,
    );
}

#[test]
fn hostile_metadata_compiles_and_appears_only_escaped() {
    let p = Project::new();
    p.run(&["mcp", "generate", "--from-tools", &data("hostile-tools.json")]).assert_ok();
    let dir = p.path().join(".kodelet/mcp");
    let mut all = String::new();
    for entry in walk(&dir) {
        all.push_str(&read(&entry));
    }
    for raw in ['\u{2028}', '\u{2029}', '\u{202e}', '\u{0}'] {
        assert!(!all.contains(raw), "raw {raw:?} in the tree");
    }
    // The server and tool names reach the call verbatim, as escaped string literals.
    assert!(all.contains(r#""evil\"; $$pwn$$(); \"\n*/ $$pwn$$(); /*", "x\"; $$pwn$$(); //\u2028$$pwn$$();", input)"#));
    // In comments, `*/` is always broken up.
    assert!(all.contains(r"*\/ $$pwn$$(); /*"));
    // Optional properties named like `Object.prototype` members admit the inherited member.
    let ctor = read(dir.join("servers/__proto__/constructor.ts"));
    assert!(ctor.contains("  constructor?: string | Object[\"constructor\"];\n"), "{ctor}");
    assert!(ctor.contains("  __proto__?: string;\n"), "{ctor}");
    // Any text that escaped a comment or string would call the undeclared `$$pwn$$` and fail tsc.
    let Some(tsc) = tsc() else { return };
    assert_compiles(
        &tsc,
        &dir,
        r#"
import * as all from "./index.ts";
import { constructor, toString, type ConstructorInput } from "./servers/__proto__/index.ts";

console.log(Object.keys(all));
// Every `Object.prototype` name as an optional property: omitted, given, and the `= {}` default.
await constructor();
await constructor({});
await constructor({ q: "x" });
const all_given: ConstructorInput = {
  constructor: "c", toString: "s", toLocaleString: 1, valueOf: 2, hasOwnProperty: true,
  isPrototypeOf: { constructor: "c" }, propertyIsEnumerable: ["p"], ["__proto__"]: "p",
  __defineGetter__: "g", __defineSetter__: "s", __lookupGetter__: "g", __lookupSetter__: "s",
  nested: { toString: "t", valueOf: "a", other: "o" },
};
const out = await constructor(all_given);
const v: number = out.valueOf;
console.log(v, out.constructor, out.__proto__);
await toString({ constructor: {} });
await toString({ constructor: { hasOwnProperty: true }, toString: { __proto__: 1, valueOf: "x" } });
// @ts-expect-error -- `constructor` is required here
await toString({});
// @ts-expect-error -- `valueOf` is an integer when given
await constructor({ valueOf: "2" });
"#,
    );
}

/// Every file under `dir` but the manifest and the MCP manager's `logs/` (it logs server stderr
/// under the workspace), sorted.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "logs") {
                out.extend(walk(&p));
            }
        } else if p.file_name().is_some_and(|n| n != ".agent-manifest.json" && n != ".tools_cache.json") {
            out.push(p);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// server-everything (npm)

#[test]
fn server_everything_tree_compiles() {
    if !support::node_or_skip("server-everything's tree") {
        return;
    }
    let p = Project::with_servers(&everything_yaml("everything"));
    let r = p.run(&["mcp", "generate"]);
    r.assert_ok();
    assert!(r.stdout.contains(" 0 degraded) in .kodelet/mcp"), "{}", r.stdout);
    let dir = p.path().join(".kodelet/mcp");
    assert!(dir.join("servers/everything/getStructuredContent.ts").is_file());
    let Some(tsc) = tsc() else { return };
    assert_compiles(
        &tsc,
        &dir,
        r#"
import { echo, getStructuredContent, getSum } from "./servers/everything/index.ts";

const s = await getStructuredContent({ location: "New York" });
const t: number = s.temperature;
await echo({ message: "hi" });
await getSum({ a: 1, b: 2 });
// @ts-expect-error -- numbers
await getSum({ a: "1", b: 2 });
console.log(t);
"#,
    );
}

// ---------------------------------------------------------------------------------------------
// client.ts under Node: both transports

/// Emits the tree as JavaScript (next to it, in `js/`) so Node 20 can run it.
fn emit_js(tsc: &Path, dir: &Path, script_name: &str, script: &str) -> PathBuf {
    std::fs::write(dir.join(script_name), script).unwrap();
    std::fs::write(
        dir.join("tsconfig.emit.json"),
        r#"{"extends": "./tsconfig.json", "compilerOptions": {"noEmit": false, "outDir": "../js",
            "rewriteRelativeImportExtensions": true}}"#,
    )
    .unwrap();
    let out =
        Command::new(tsc).args(["-p", "tsconfig.emit.json", "--pretty", "false"]).current_dir(dir).output().unwrap();
    assert!(out.status.success(), "tsc emit failed:\n{}", String::from_utf8_lossy(&out.stdout));
    let js = dir.parent().unwrap().join("js");
    std::fs::write(js.join("package.json"), "{\"type\": \"module\"}").unwrap();
    // tsc emits only what it compiles; the tree's JavaScript module goes alongside as it is.
    std::fs::copy(dir.join("result.mjs"), js.join("result.mjs")).unwrap();
    js
}

fn node(js_dir: &Path, script: &str, env: &[(&str, &str)]) -> support::Run {
    let mut c = Command::new("node");
    c.arg(script).current_dir(js_dir).env_remove("AGENT_BRIDGE_SOCKET").env_remove("AGENT_BRIDGE_TOKEN");
    for (k, v) in env {
        c.env(k, v);
    }
    support::Run::from(c.output().unwrap())
}

#[test]
fn client_decodes_results_and_maps_errors_in_agents_isolate_mode() {
    let Some(tsc) = tsc() else { return };
    let p = Project::new();
    p.run(&["mcp", "generate", "--from-tools", &data("github-mcp-server.json"), "--server", "github"]).assert_ok();
    let dir = p.path().join(".kodelet/mcp");
    // What agent's runtime installs, simulated: canned results per tool name, and a BridgeError.
    let js = emit_js(
        &tsc,
        &dir,
        "isolate.ts",
        r#"
import { callMCPTool, MCPToolError, MCPBridgeError } from "./client.ts";
import { getMe } from "./servers/github/index.ts";

const results: Record<string, unknown> = {
  structured: { content: [{ type: "text", text: "{\"a\":1}" }], structuredContent: { sum: 3 }, isError: false },
  json: { content: [{ type: "text", text: "{\"a\":" }, { type: "text", text: "1}" }], isError: false },
  text: { content: [{ type: "text", text: "hello" }], isError: false },
  number: { content: [{ type: "text", text: "42" }] },
  image: { content: [{ type: "image", data: "AAAA", mimeType: "image/png" }], isError: false },
  mixed: { content: [{ type: "text", text: "a" }, { type: "image", data: "AAAA", mimeType: "image/png" }] },
  empty: { content: [], isError: false },
  failing: { content: [{ type: "text", text: "boom" }], structuredContent: { why: "x" }, isError: true },
  get_me: { content: [{ type: "text", text: "{\"login\":\"octo\"}" }] },
};
const calls: unknown[] = [];
Object.defineProperty(globalThis, "__agentCallTool", {
  value: async (server: string, tool: string, args: object) => {
    calls.push([server, tool, args]);
    if (tool === "missing") {
      const e = Object.assign(new Error("unknown tool `s.missing`"), { name: "BridgeError", code: "unknown_tool", status: 404, suggestions: ["s.mission"] });
      throw e;
    }
    return results[tool];
  },
});
const out: Record<string, unknown> = {};
for (const t of ["structured", "json", "text", "number", "image", "mixed", "empty"]) {
  out[t] = await callMCPTool("s", t, { x: 1 });
}
try { await callMCPTool("s", "failing"); } catch (e) {
  out.failing = e instanceof MCPToolError ? [e.name, e.message, e.server, e.tool, e.content.length, e.structuredContent] : String(e);
}
try { await callMCPTool("s", "missing"); } catch (e) {
  out.missing = e instanceof MCPBridgeError ? [e.name, e.code, e.status, e.suggestions, e.message] : String(e);
}
out.getMe = await getMe();
out.calls = calls;
console.log(JSON.stringify(out));
"#,
    );
    let r = node(&js, "isolate.js", &[]);
    r.assert_ok();
    let v: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["structured"], serde_json::json!({"sum": 3}));
    assert_eq!(v["json"], serde_json::json!({"a": 1}), "text blocks joined, then parsed");
    assert_eq!(v["text"], "hello");
    assert_eq!(v["number"], 42);
    assert_eq!(v["image"][0]["mimeType"], "image/png");
    assert_eq!(v["mixed"].as_array().unwrap().len(), 2, "mixed content comes back as blocks");
    assert_eq!(v["empty"], serde_json::json!([]));
    assert_eq!(
        v["failing"],
        serde_json::json!(["MCPToolError", "s.failing failed: boom", "s", "failing", 1, {"why": "x"}])
    );
    assert_eq!(
        v["missing"],
        serde_json::json!(["MCPBridgeError", "unknown_tool", 404, ["s.mission"], "unknown tool `s.missing`"])
    );
    assert_eq!(v["getMe"], serde_json::json!({"login": "octo"}));
    assert_eq!(v["calls"][0], serde_json::json!(["s", "structured", {"x": 1}]));
    assert_eq!(v["calls"][9], serde_json::json!(["github", "get_me", {}]), "original MCP names in the call");

    // Neither the isolate nor a socket: a clear error.
    std::fs::write(js.join("nobridge.js"), "import { callMCPTool } from './client.js';\ntry { await callMCPTool('s', 't', {}); } catch (e) { console.log(e.name, e.code, e.message); }\n").unwrap();
    let r = node(&js, "nobridge.js", &[]);
    r.assert_ok();
    assert!(
        r.stdout.starts_with("MCPBridgeError no_bridge no MCP bridge: run this script with `agent exec`"),
        "{}",
        r.stdout
    );
}

#[test]
fn client_calls_a_real_bridge_over_the_unix_socket() {
    let Some(tsc) = tsc() else { return };
    let p = Project::with_fixture();
    p.run(&["mcp", "generate"]).assert_ok();
    let dir = p.path().join(".kodelet/mcp");
    let js = emit_js(
        &tsc,
        &dir,
        "socket.ts",
        r#"
import { add, echo, fail, textUpper, image } from "./servers/fixture/index.ts";
import { callMCPTool, MCPToolError, MCPBridgeError } from "./client.ts";

const out: Record<string, unknown> = {};
out.add = await add({ a: 2, b: 40 });
out.echo = await echo({ message: "héllo ✓" });
out.upper = await textUpper({ text: "dot" });
out.image = ((await image()).raw as { type: string }[])[0].type;
const [x, y] = await Promise.all([add({ a: 1, b: 1 }), add({ a: 2, b: 2 })]);
out.parallel = [x.sum, y.sum];
try { await fail(); } catch (e) { out.fail = e instanceof MCPToolError ? e.message : String(e); }
try { await callMCPTool("fixture", "ech", {}); } catch (e) {
  out.unknown = e instanceof MCPBridgeError ? [e.code, e.status, e.suggestions] : String(e);
}
try { await callMCPTool("fixture", "add", { a: "x" }); } catch (e) {
  out.invalid = e instanceof MCPBridgeError ? [e.code, e.status] : String(e);
}
console.log(JSON.stringify(out));
"#,
    );

    let config = p.library_config();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let manager = std::sync::Arc::new(agent::mcp::McpManager::new(&config));
    let bridge = rt.block_on(agent::bridge::BridgeServer::start(manager.clone())).unwrap();
    let socket = bridge.endpoint().socket.display().to_string();
    let token = bridge.endpoint().token.clone();

    let r = node(&js, "socket.js", &[("AGENT_BRIDGE_SOCKET", &socket), ("AGENT_BRIDGE_TOKEN", &token)]);
    let wrong = node(&js, "socket.js", &[("AGENT_BRIDGE_SOCKET", &socket), ("AGENT_BRIDGE_TOKEN", "nope")]);
    rt.block_on(async {
        bridge.stop().await;
        manager.shutdown().await;
    });

    r.assert_ok();
    let v: Value = serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", r.stdout));
    assert_eq!(v["add"], serde_json::json!({"sum": 42}));
    assert_eq!(v["echo"], "héllo ✓");
    assert_eq!(v["upper"], "DOT");
    assert_eq!(v["image"], "image");
    assert_eq!(v["parallel"], serde_json::json!([2, 4]));
    assert_eq!(v["fail"], "fixture.fail failed: boom: this tool always fails");
    assert_eq!(v["unknown"], serde_json::json!(["unknown_tool", 404, ["echo"]]));
    assert_eq!(v["invalid"], serde_json::json!(["invalid_arguments", 400]));

    assert_ne!(wrong.code, 0);
    assert!(wrong.stderr.contains("MCPBridgeError") && wrong.stderr.contains("unauthorized"), "{}", wrong.stderr);
}

#[test]
fn an_oversized_tools_file_is_a_usage_error() {
    let p = Project::new();
    let f = std::fs::File::create(p.path().join("huge.json")).unwrap();
    f.set_len(65 << 20).unwrap();
    let r = p.run(&["mcp", "generate", "--from-tools", "huge.json"]);
    r.assert_code(2);
    assert_eq!(r.stderr, "error: huge.json is larger than 64 MB\n");
    assert!(!p.path().join(".kodelet").exists(), "nothing written");
}

/// `agent mcp generate` lists what a server offers besides tools in the tree's README, fresh
/// from the server, as the code-mode commands do.
#[test]
fn generate_lists_a_servers_resources_and_prompts_in_the_readme() {
    if !support::node_or_skip("server-everything") {
        return;
    }
    let p = Project::with_servers(&format!("{}{}", everything_yaml("everything"), fixture_stdio_yaml("fixture", &[])));
    p.run(&["mcp", "generate"]).assert_ok();
    let readme = std::fs::read_to_string(p.path().join(".kodelet/mcp/README.md")).unwrap();
    let doc = "demo://resource/static/document/architecture.md";
    assert!(readme.contains(&format!("readResource(\"everything\", \"{doc}\")")), "{readme}");
    assert!(readme.contains("getPrompt(\"everything\", \"args-prompt\""), "{readme}");
    assert!(!readme.contains("readResource(\"fixture\""), "a tools-only server lists nothing: {readme}");
}
