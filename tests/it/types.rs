//! Learned output types end to end: the real binary and the fixture's `profile` tool (JSON text
//! without an output schema, with stable, optional and varying fields) observed through
//! `agent exec` scripts, `agent mcp call` and discovery; the registry file, the regenerated tool
//! file, `agent mcp types` (text and `--json`), `tsc --strict` over the sharper tree, and the
//! compatibility of a script written before the type was learned.

use crate::support;
use crate::support::fake_llm;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::{Project, fixture_stdio_yaml};

const WS: &str = ".kodelet/mcp";

/// A fixture project with low thresholds (`medium` at 3, `high` at 6 observations), its tree generated.
fn project(types_yaml: &str) -> Project {
    let p = Project::new();
    p.write_config(&format!("mcp:\n  types:\n{types_yaml}  servers:\n{}", fixture_stdio_yaml("fixture", &[])));
    p.run(&["mcp", "generate"]).assert_ok();
    p
}

fn low_thresholds() -> Project {
    project("    medium: 3\n    high: 6\n")
}

fn registry(p: &Project) -> Value {
    let text = std::fs::read_to_string(p.path().join(WS).join("type_registry.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn profile_file(p: &Project) -> String {
    std::fs::read_to_string(p.path().join(WS).join("servers/fixture/profile.ts")).unwrap()
}

/// Runs a script calling `profile` `n` times (i = 0..n), as a file in the project.
fn calls(p: &Project, n: usize) {
    calls_from(p, 0, n);
}

/// Runs a script calling `profile` with i = start..start+n.
fn calls_from(p: &Project, start: usize, n: usize) {
    let script = format!(
        "import {{ profile }} from './{WS}/servers/fixture/index.ts';\nfor (let i = {start}; i < {start} + {n}; i++) await profile({{ i }});\n"
    );
    p.write("calls.ts", &script);
    p.run(&["exec", "calls.ts"]).assert_ok();
}

/// Written while `profile` was at `none`: only the ToolResponse helpers.
const NONE_SCRIPT: &str = "import { profile } from './.kodelet/mcp/servers/fixture/index.ts';\n\
const r = await profile({ i: 2 });\n\
console.log(r.get('name', '?'), r.has('email'), r.has('nope'), r.require('id'), JSON.stringify(r.raw));\n\
try { r.require('nope'); } catch (e) { console.log((e as Error).message); }\n";

const NONE_OUTPUT: &str = "user2 true false 2 \
{\"id\":2,\"name\":\"user2\",\"created\":\"2026-01-02T03:04:05Z\",\"status\":\"away\",\"tags\":[\"a\",\"b\"],\"email\":\"u2@example.com\",\"score\":20}\n\
fixture.profile: the result has no field \"nope\" (fields: id, name, created, status, tags, email, score)\n";

fn types_json(p: &Project) -> Vec<Value> {
    let r = p.run(&["mcp", "types", "--json"]);
    r.assert_ok();
    r.json().as_array().unwrap().clone()
}

fn row<'a>(rows: &'a [Value], tool: &str) -> &'a Value {
    rows.iter().find(|r| r["tool"] == tool).unwrap_or_else(|| panic!("no row for {tool}: {rows:?}"))
}

fn tsc_check(dir: &Path, check_ts: &str) -> Option<std::process::Output> {
    if !support::node_or_skip("learned types are not compiled with tsc") {
        return None;
    }
    let tsc = support::npm_bin(support::TYPESCRIPT, "tsc");
    std::fs::write(dir.join("check.ts"), check_ts).unwrap();
    Some(Command::new(tsc).args(["-p", ".", "--pretty", "false"]).current_dir(dir).output().unwrap())
}

#[test]
fn a_tool_walks_from_none_to_high_and_the_tree_follows() {
    let p = low_thresholds();
    let f = profile_file(&p);
    assert!(f.contains("Promise<ToolResponse<ProfileOutput>>"), "{f}");
    assert!(f.contains("export type ProfileOutput = unknown;"), "{f}");
    let rows = types_json(&p);
    assert_eq!(
        (row(&rows, "profile")["quality"].as_str(), row(&rows, "profile")["source"].as_str()),
        (Some("none"), Some("none"))
    );
    assert_eq!(row(&rows, "add")["source"], "declared");

    // none → low: the script written against `none` runs and observes one result.
    p.write("none.ts", NONE_SCRIPT);
    let r = p.run(&["exec", "none.ts"]);
    r.assert_ok();
    assert_eq!(r.stdout, NONE_OUTPUT);
    let reg = registry(&p);
    let e = &reg["tools"]["fixture.profile"];
    assert_eq!(
        (e["observations"].as_u64(), e["quality"].as_str(), e["source"].as_str()),
        (Some(1), Some("low"), Some("inferred"))
    );
    // Shapes only: no value of the result is in the file (short strings are keyed hashes).
    for value in ["u2@example.com", "2026-01-02", "user2", "away"] {
        assert!(!reg.to_string().contains(value), "{value}: {reg}");
    }
    let f = profile_file(&p);
    assert!(f.contains("Output type inferred from 1 observed result (quality: low; every field is optional)"), "{f}");
    assert!(f.contains("  id?: number;\n") && f.contains("  email?: string;\n"), "{f}");
    assert!(f.contains("Promise<WithHelpers<ProfileOutput>>"), "{f}");

    // low → medium after 3.
    calls(&p, 2);
    let rows = types_json(&p);
    assert_eq!(
        (row(&rows, "profile")["quality"].as_str(), row(&rows, "profile")["observations"].as_u64()),
        (Some("medium"), Some(3))
    );
    assert_eq!(row(&rows, "profile")["fields"]["id"]["presence"], 1.0);
    assert!(profile_file(&p).contains("from 3 observed results (quality: medium"));

    // medium → high after 6: fields seen every time are required, the optional one is not.
    calls_from(&p, 3, 3);
    let f = profile_file(&p);
    assert!(f.contains("from 6 observed results (quality: high"), "{f}");
    assert!(f.contains("  id: number;\n") && f.contains("  name: string;\n"), "{f}");
    assert!(f.contains("  email?: string;\n") && f.contains("  score: string | number;\n"), "{f}");
    assert!(!f.contains(": any") && !f.contains("<any>"), "{f}");
    let text = p.run(&["mcp", "types"]);
    text.assert_ok();
    assert!(
        text.stdout.contains("fixture.profile     inferred  high    6 observation(s), 7 field(s)"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains("Declared 3 (25.0%) · inferred 1 · unknown 8 · high quality 4 (33.3%)"),
        "{}",
        text.stdout
    );

    // The script written at `none` still runs, with the same output, at `high`.
    let r = p.run(&["exec", "none.ts"]);
    r.assert_ok();
    assert_eq!(r.stdout, NONE_OUTPUT);

    // A script written against the `high` type type-checks; a field never observed does not.
    let ws = p.path().join(WS);
    let good = "import { profile } from \"./servers/fixture/index.ts\";\n\
        const r = await profile({ i: 1 });\n\
        const n: number = r.id;\nconst s: string = r.name;\nconst e: string | undefined = r.email;\n\
        const g: unknown = r.get(\"x\");\nconsole.log(n, s, e, g, r.raw.id);\n";
    if let Some(out) = tsc_check(&ws, good) {
        assert!(
            out.status.success(),
            "tsc:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let bad = "import { profile } from \"./servers/fixture/index.ts\";\nconst r = await profile({ i: 1 });\nconsole.log(r.noSuchField);\n";
        let out = tsc_check(&ws, bad).unwrap();
        assert!(!out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("noSuchField"),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        std::fs::remove_file(ws.join("check.ts")).unwrap();
    }
    // And it runs.
    p.write("high.ts", &good.replace("./servers/", "./.kodelet/mcp/servers/"));
    let r = p.run(&["exec", "high.ts"]);
    r.assert_ok();
    assert_eq!(r.stdout, "1 user1 undefined undefined 1\n");
}

#[test]
fn only_the_files_of_tools_whose_quality_went_up_are_rewritten() {
    let p = low_thresholds();
    calls(&p, 1);
    let ws = p.path().join(WS);
    let echo_before = std::fs::metadata(ws.join("servers/fixture/echo.ts")).unwrap().modified().unwrap();
    let low = profile_file(&p);
    // Two more observations at `low`: the file keeps the type it was generated with.
    p.write(
        "two.ts",
        &format!("import {{ profile }} from './{WS}/servers/fixture/index.ts';\nawait profile({{ i: 1 }});\n"),
    );
    p.run(&["exec", "two.ts"]).assert_ok();
    assert_eq!(registry(&p)["tools"]["fixture.profile"]["observations"], 2);
    assert_eq!(profile_file(&p), low, "a file was rewritten without a quality change");
    assert_eq!(std::fs::metadata(ws.join("servers/fixture/echo.ts")).unwrap().modified().unwrap(), echo_before);
    // `agent mcp generate` renders the registry as it is.
    p.run(&["mcp", "generate"]).assert_ok();
    assert!(profile_file(&p).contains("from 2 observed results (quality: low"));
}

#[test]
fn twelve_calls_in_one_exec_are_twelve_observations_and_two_processes_lose_none() {
    let p = project("    learn: true\n");
    calls(&p, 12);
    assert_eq!(registry(&p)["tools"]["fixture.profile"]["observations"], 12);
    let script = format!(
        "import {{ profile }} from './{WS}/servers/fixture/index.ts';\nfor (let i = 0; i < 25; i++) await profile({{ i }});\n"
    );
    p.write("c.ts", &script);
    let spawn = || p.cmd(&["exec", "c.ts"]).stdout(std::process::Stdio::null()).spawn().unwrap();
    let (mut a, mut b) = (spawn(), spawn());
    assert!(a.wait().unwrap().success() && b.wait().unwrap().success());
    assert_eq!(registry(&p)["tools"]["fixture.profile"]["observations"], 62);
}

#[test]
fn every_call_path_records_but_errors_do_not_and_learn_false_turns_it_off() {
    let p = project("    learn: true\n");
    p.run(&["mcp", "call", "fixture.profile", "--args", "{\"i\": 3}"]).assert_ok();
    p.run(&["mcp", "call", "fixture.echo", "--args", "{\"message\": \"hi\"}"]).assert_ok();
    assert_eq!(p.run(&["mcp", "call", "fixture.fail"]).code, 1);
    // A script calling through the global callMCPTool (not the tree) is observed too.
    p.write("g.ts", "await callMCPTool('fixture', 'profile', { i: 5 });\n");
    p.run(&["exec", "g.ts"]).assert_ok();
    let reg = registry(&p);
    assert_eq!(reg["tools"]["fixture.profile"]["observations"], 2);
    assert_eq!(reg["tools"]["fixture.echo"]["shape"]["string"]["count"], 1, "{reg}");
    assert!(reg["tools"].get("fixture.fail").is_none(), "an error result was recorded");
    assert!(reg["tools"].get("fixture.add").is_none(), "a declared tool was recorded");

    let off = project("    learn: false\n");
    off.run(&["mcp", "call", "fixture.profile"]).assert_ok();
    assert!(!off.path().join(WS).join("type_registry.json").exists());
}

#[test]
fn a_corrupt_registry_is_set_aside_and_the_call_still_succeeds() {
    let p = project("    learn: true\n");
    let path = p.path().join(WS).join("type_registry.json");
    std::fs::write(&path, "{ this is not json").unwrap();
    let r = p.run(&["mcp", "call", "fixture.profile"]);
    r.assert_ok();
    assert!(r.stderr.contains("is corrupt") && r.stderr.contains("moved it to"), "{}", r.stderr);
    assert_eq!(registry(&p)["tools"]["fixture.profile"]["observations"], 1);
    let aside = std::fs::read_dir(p.path().join(WS)).unwrap().flatten();
    assert_eq!(aside.filter(|e| e.file_name().to_string_lossy().contains(".corrupt-")).count(), 1);
}

#[test]
fn discover_calls_only_safe_tools_and_reset_forgets() {
    let p = project("    discover:\n      fixture.echo: {message: hello}\n");
    let r = p.run(&["mcp", "types", "--discover"]);
    assert_eq!(r.code, 2, "without a terminal, --discover needs --yes: {}", r.stderr);
    let r = p.run(&["mcp", "types", "--discover", "--yes", "--json"]);
    r.assert_ok();
    assert!(
        r.stderr.contains("fixture.profile({})") && r.stderr.contains("fixture.echo({\"message\":\"hello\"})"),
        "{}",
        r.stderr
    );
    // Not read-only (crash, fail, big) or with required arguments (sleep): never called.
    assert!(!r.stderr.contains("fixture.crash") && !r.stderr.contains("fixture.sleep"), "{}", r.stderr);
    let rows = r.json();
    let rows = rows.as_array().unwrap();
    assert_eq!(row(rows, "profile")["observations"], 1);
    assert_eq!(row(rows, "echo")["quality"], "low");
    let r = p.run(&["mcp", "types", "--reset", "fixture.profile"]);
    r.assert_ok();
    assert_eq!(r.stdout, "forgot the learned type of fixture.profile\n");
    // A name that matches nothing learned is a usage error with a suggestion, not a silent 0.
    let r = p.run(&["mcp", "types", "--reset", "fixture.ech"]);
    r.assert_code(2);
    assert!(
        r.stderr.contains("--reset: nothing was learned about `fixture.ech`; did you mean `fixture.echo`?"),
        "{}",
        r.stderr
    );
    let rows = types_json(&p);
    assert_eq!(row(&rows, "profile")["quality"], "none");
    assert_eq!(row(&rows, "echo")["quality"], "low");
    p.run(&["mcp", "types", "--reset"]).assert_ok();
    assert_eq!(row(&types_json(&p), "echo")["quality"], "none");
}

/// `--discover` calls tools as every command does: a destructive tool listed for discovery still
/// needs approval (`--yes` only skips the question before discovery; without a terminal the
/// approvals policy denies), and the calls it makes are counted in the usage file.
#[test]
fn discover_asks_approval_for_destructive_tools_and_counts_usage() {
    let p = Project::new();
    p.write_config(&format!(
        "mcp:\n  types:\n    discover:\n      fixture.delete_item: {{id: x1}}\n      fixture.echo: {{message: hi}}\n  servers:\n{}",
        fixture_stdio_yaml("fixture", &["--destructive"])
    ));
    let r = p.run(&["mcp", "types", "--discover", "--yes"]);
    assert!(r.stderr.contains("fixture.delete_item: the tool reported an error"), "{}", r.stderr);
    assert!(r.stderr.contains("fixture.echo: observed"), "{}", r.stderr);
    assert_eq!(r.code, 1, "a denied discovery call is a failed one: {}", r.stderr);
    let usage: Value =
        serde_json::from_str(&std::fs::read_to_string(p.path().join(WS).join("usage.json")).unwrap()).unwrap();
    assert_eq!(usage["counts"], serde_json::json!({"fixture": {"echo": 1, "profile": 1}}), "the calls that ran count");
}

#[test]
fn one_hundred_calls_reach_high_with_the_default_thresholds() {
    let p = project("    learn: true\n");
    calls(&p, 9);
    assert!(profile_file(&p).contains("(quality: low"));
    calls(&p, 1);
    assert!(profile_file(&p).contains("from 10 observed results (quality: medium"));
    calls(&p, 90);
    let f = profile_file(&p);
    assert!(f.contains("Output type inferred from 100 observed results (quality: high"), "{f}");
    assert!(f.contains("  status: \"active\" | \"away\" | \"idle\";\n"), "a small enum: {f}");
}

#[test]
fn text_results_stay_usable_as_text_at_every_level() {
    let p = project("    learn: true\n");
    let script = "import { echo } from './.kodelet/mcp/servers/fixture/index.ts';\n\
        const r = await echo({ message: 'a b' });\n\
        console.log(r, r.raw, `${r}`, (r as unknown as string).split(' ').length, JSON.stringify({ r }), r.get('x', 'fb'), r.has('x'));\n";
    p.write("text.ts", script);
    let expected = "a b a b a b 2 {\"r\":\"a b\"} fb false\n";
    for _ in 0..2 {
        let r = p.run(&["exec", "text.ts"]);
        r.assert_ok();
        assert_eq!(r.stdout, expected);
    }
    let f = std::fs::read_to_string(p.path().join(WS).join("servers/fixture/echo.ts")).unwrap();
    assert!(f.contains("export type EchoOutput = String;") && f.contains("Promise<WithHelpers<EchoOutput>>"), "{f}");
    let ws = p.path().join(WS);
    let check = "import { echo } from \"./servers/fixture/index.ts\";\n\
        const t: string = String(await echo({ message: \"x\" }));\nconst n: number = (await echo({ message: \"y\" })).length;\n\
        console.log(t.toUpperCase(), n, (await echo({ message: \"z\" })).raw);\n";
    // The type says what the value is at run time: a String object, not a primitive string.
    let wrong =
        "import { echo } from \"./servers/fixture/index.ts\";\nconst t: string = await echo({ message: \"x\" });\n";
    if let Some(out) = tsc_check(&ws, wrong) {
        assert!(!out.status.success(), "a String object must not type-check as a primitive string");
    }
    if let Some(out) = tsc_check(&ws, check) {
        assert!(
            out.status.success(),
            "tsc:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn agent_run_records_in_direct_mode_and_sharpens_the_tree_after_a_code_step() {
    use fake_llm::{Api, FakeLlm, Reply};
    let fake =
        FakeLlm::start(vec![Reply::tool("mcp_fixture_profile", serde_json::json!({"i": 1})), Reply::text("done")]);
    let p = Project::new();
    p.write_config(&format!(
        "{}mcp:\n  servers:\n{}",
        fake.llm_yaml(Api::Anthropic),
        fixture_stdio_yaml("fixture", &[])
    ));
    p.run(&["run", "--mode", "direct", "look at profile 1"]).assert_ok();
    assert_eq!(registry(&p)["tools"]["fixture.profile"]["observations"], 1);

    let code =
        "import { profile } from './servers/fixture/index.ts';\nconsole.log((await profile({ i: 2 })).get('name'));";
    let fake =
        FakeLlm::start(vec![Reply::tool("code_execution", serde_json::json!({ "code": code })), Reply::text("done")]);
    let yaml = format!(
        "{}mcp:\n  types:\n    medium: 2\n  servers:\n{}",
        fake.llm_yaml(Api::Anthropic),
        fixture_stdio_yaml("fixture", &[])
    );
    p.write_config(&yaml);
    p.run(&["run", "--mode", "code", "look at profile 2"]).assert_ok();
    assert_eq!(registry(&p)["tools"]["fixture.profile"]["observations"], 2);
    // Generated at start-up from the registry (low, 1), regenerated after the step (medium, 2).
    assert!(profile_file(&p).contains("from 2 observed results (quality: medium"), "{}", profile_file(&p));
}

/// A hostile script feeds the recorder results whose field names are megabytes long (through
/// `fixture.echo`, whose text comes back parsed). Their shapes are skipped or cut: the registry
/// stays small, keeps what other tools taught it, and the next command reads it quickly.
#[test]
fn a_hostile_script_cannot_bloat_or_wipe_the_registry() {
    let p = project("    learn: true\n");
    calls(&p, 3);
    assert_eq!(registry(&p)["tools"]["fixture.profile"]["observations"], 3);
    // Four results with a 1 MB field name each, then one with 2,000 fields with 250-byte names.
    // Repeated (or with longer names, up to the 16 MiB result cap) they push the file past the
    // 64 MiB it is read up to, and it is set aside with everything it had learned.
    p.write(
        "hostile.ts",
        "import { echo } from './.kodelet/mcp/servers/fixture/index.ts';\n\
         for (let i = 0; i < 4; i++) await echo({ message: JSON.stringify({ [String(i).repeat(1_000_000)]: 1 }) });\n\
         const wide: Record<string, Record<string, number>> = {};\n\
         for (let i = 0; i < 200; i++) {\n\
           const inner: Record<string, number> = {};\n\
           for (let j = 0; j < 9; j++) inner[`${i}-${j}-`.padEnd(250, 'k')] = j;\n\
           wide[`${i}-`.padEnd(250, 'w')] = inner;\n\
         }\n\
         await echo({ message: JSON.stringify(wide) });\n",
    );
    p.run(&["exec", "hostile.ts", "--timeout", "60s"]).assert_ok();
    let path = p.path().join(WS).join("type_registry.json");
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size < 1 << 20, "the registry grew to {size} bytes");
    let started = std::time::Instant::now();
    calls_from(&p, 3, 1);
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "took {:?}", started.elapsed());
    let reg = registry(&p);
    assert_eq!(reg["tools"]["fixture.profile"]["observations"], 4, "observations were lost");
    let fields = reg["tools"]["fixture.echo"]["shape"]["object"]["fields"].as_object().unwrap();
    assert!(fields.keys().all(|k| k.len() <= 256), "a long field name was recorded");
    let aside = std::fs::read_dir(p.path().join(WS)).unwrap().flatten();
    assert_eq!(aside.filter(|e| e.file_name().to_string_lossy().contains(".corrupt-")).count(), 0);
}

/// Every file below `dir` (links not followed) whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &str, found: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            files_containing(&e.path(), needle, found);
        } else if kind.is_file()
            && let Ok(bytes) = std::fs::read(e.path())
            && bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
        {
            found.push(e.path().display().to_string());
        }
    }
}

/// A server's results carry a person's name, e-mail addresses and short tokens: the graph of a
/// memory server read twelve times (one entity name in twelve identical results), then forty
/// account records with a secret-looking token, an API key, an owner's name and e-mail, and
/// two fields that could be enums. After the calls, no file of the project (workspace, logs,
/// home) or of the cache holds any of these values; the one field that earned an enum (two
/// values, 40 strings, each in 20 distinct results) has its values written, in the registry
/// and in the generated type, and the fields that did not earn one stay `string`.
#[test]
fn result_values_never_reach_the_disk_until_a_field_earns_an_enum() {
    let p = project("    learn: true\n");
    // The script spells every value backwards (`r`), so neither it nor its cached bytecode holds
    // one: a value in a file got there from a result.
    p.write(
        "leak.ts",
        "import { echo } from './.kodelet/mcp/servers/fixture/index.ts';\n\
         const r = (s: string) => s.split('').reverse().join('');\n\
         const graph = { entities: [{ name: r('1174-eulaV-terceS-deZ'), entityType: 'person', observations: [r('riaf eht ta tem')] }], relations: [] };\n\
         for (let i = 0; i < 12; i++) await echo({ message: JSON.stringify(graph) });\n\
         for (let i = 0; i < 40; i++) {\n\
           const account: Record<string, unknown> = {\n\
             id: i, token: r('9LmP2xK8qZ-ks'), apiKey: r('1oI3uY5tR7wQ'), contact: r(i % 2 ? 'elpmaxe.liam-proc@q.ada' : 'elpmaxe.liam-proc@ob'),\n\
             state: r(i % 2 ? 'etats-nepo' : 'etats-desolc'), region: r(i < 2 ? 'enoz-htron' : 'enoz-htuos'),\n\
           };\n\
           if (i < 4) account.owner = r(i < 2 ? 'assetniuQ adA' : 'htrowsnevaR oB');\n\
           await echo({ message: JSON.stringify(account) });\n\
         }\n",
    );
    p.run(&["exec", "leak.ts"]).assert_ok();
    p.run(&["mcp", "types", "--json"]).assert_ok();
    p.run(&["mcp", "generate"]).assert_ok();

    for secret in [
        "Zed-Secret-Value-4711",
        "met at the fair",
        "sk-Zq8Kx2PmL9",
        "Qw7Rt5Yu3Io1",
        "corp-mail.example",
        "Ada Quintessa",
        "Bo Ravensworth",
        "north-zone",
        "south-zone",
    ] {
        let mut found = Vec::new();
        files_containing(p.path(), secret, &mut found);
        files_containing(&support::test_cache_dir(), secret, &mut found);
        assert!(found.is_empty(), "{secret:?} was written to {found:?}");
    }
    // The search sees what the recorder writes: the values of the earned enum are found.
    let mut found = Vec::new();
    files_containing(p.path(), "closed-state", &mut found);
    found.sort_unstable();
    assert!(
        found.iter().any(|f| f.ends_with("type_registry.json")) && found.iter().any(|f| f.ends_with("echo.ts")),
        "{found:?}"
    );
    let reg = registry(&p);
    let fields = &reg["tools"]["fixture.echo"]["shape"]["object"]["fields"];
    let state = fields["state"]["string"]["candidates"].as_object().unwrap();
    let mut values: Vec<&str> = state.values().map(|c| c["value"].as_str().unwrap()).collect();
    values.sort_unstable();
    assert_eq!(values, ["closed-state", "open-state"]);
    assert!(state.keys().all(|h| h.len() == 32), "{state:?}");
    assert!(fields["token"]["string"].get("candidates").is_none(), "a secret-looking value keeps no hash");
    let region = fields["region"]["string"]["candidates"].as_object().unwrap();
    assert_eq!(region.len(), 2);
    assert!(region.values().all(|c| c.get("value").is_none()), "{region:?}");
    let f = std::fs::read_to_string(p.path().join(WS).join("servers/fixture/echo.ts")).unwrap();
    assert!(f.contains("state?: \"closed-state\" | \"open-state\";"), "{f}");
    assert!(f.contains("region?: string;") && f.contains("token?: string;"), "{f}");
    // The registry and its key are private to the user.
    use std::os::unix::fs::PermissionsExt as _;
    for file in ["type_registry.json", "type_registry.key"] {
        let mode = std::fs::metadata(p.path().join(WS).join(file)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{file}");
    }
    // A full reset forgets the key with what was learned.
    p.run(&["mcp", "types", "--reset"]).assert_ok();
    assert!(!p.path().join(WS).join("type_registry.key").exists());
}

/// Another local user plants the value key before the first recording, as a file they can read
/// (so they could confirm guesses against the hashes), or as a link to one: the recorder does
/// not use it, says so once, and records shapes without enum candidates.
#[test]
fn a_value_key_another_user_could_read_is_not_used() {
    use std::os::unix::fs::PermissionsExt as _;
    let p = project("    learn: true\n");
    let key = p.path().join(WS).join("type_registry.key");
    std::fs::write(&key, "00112233445566778899aabbccddeeff\n").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let r = p.run(&["mcp", "call", "fixture.profile", "--args", "{\"i\": 1}"]);
    r.assert_ok();
    assert_eq!(r.stderr.matches("not recorded as enum candidates").count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("not private to this user"), "{}", r.stderr);
    let reg = registry(&p);
    let status = &reg["tools"]["fixture.profile"]["shape"]["object"]["fields"]["status"]["string"];
    assert_eq!(status["candidates"], serde_json::json!({}), "{reg}");
    assert_eq!(reg["key"], "");
    // A link to a private-looking file is refused the same way.
    std::fs::remove_file(&key).unwrap();
    let elsewhere = p.path().join("planted.key");
    std::fs::write(&elsewhere, "00112233445566778899aabbccddeeff\n").unwrap();
    std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &key).unwrap();
    let r = p.run(&["mcp", "call", "fixture.profile", "--args", "{\"i\": 2}"]);
    r.assert_ok();
    assert!(r.stderr.contains("is not a regular file"), "{}", r.stderr);
    assert_eq!(registry(&p)["key"], "");
}
