//! State across executions (`store`/`load`, the `data/` file API, its fence and quotas, `agent
//! state`, `agent run --fresh-state`) and skills (`saveSkill`, `agent skill`, imports by later
//! scripts, the README and catalog search), with the real binary.

use crate::support;
use crate::support::fake_llm;

use std::io::Write;
use std::process::Stdio;

use fake_llm::{Api, FakeLlm, Reply};
use serde_json::json;
use support::{Project, Run, fixture_stdio_yaml};

fn exec(p: &Project, script: &str) -> Run {
    p.run_stdin(&["exec", "-"], script)
}

fn data(p: &Project) -> std::path::PathBuf {
    p.path().join(".kodelet/mcp/data")
}

#[test]
fn store_load_and_a_5mb_file_survive_into_the_next_exec() {
    let p = Project::new();
    exec(
        &p,
        r#"
store("totals", { open: 3, labels: ["bug", "ui"] });
store("weekly report/v1", "text value");
writeText("reports/big.txt", "x".repeat(5 * 1024 * 1024));
writeJson("reports/summary.json", { n: 5 });
console.log("stored");
"#,
    )
    .assert_ok();
    let r = exec(
        &p,
        r#"
const t = load("totals");
console.log(t.open, t.labels.join(","), load("weekly report/v1"));
console.log(load("never stored") === undefined);
const big = readText("reports/big.txt");
console.log(big.length, big[0], big[big.length - 1]);
console.log(readJson("reports/summary.json").n, JSON.stringify(list()), JSON.stringify(list("reports")));
store("totals", undefined);
console.log(load("totals") === undefined);
"#,
    );
    r.assert_ok();
    assert_eq!(
        r.stdout,
        "3 bug,ui text value\ntrue\n5242880 x x\n5 [\"reports/\"] [\"big.txt\",\"summary.json\"]\ntrue\n"
    );

    // agent state ls / show / rm.
    let ls = p.run(&["state", "ls", "--json"]);
    ls.assert_ok();
    assert_eq!(
        ls.json(),
        json!([
            {"kind": "key", "name": "weekly report/v1", "bytes": 12},
            {"kind": "dir", "name": ".store", "bytes": 0},
            {"kind": "dir", "name": "reports", "bytes": 0},
            {"kind": "file", "name": "reports/big.txt", "bytes": 5242880},
            {"kind": "file", "name": "reports/summary.json", "bytes": 7},
        ])
    );
    let show = p.run(&["state", "show", "weekly report/v1"]);
    show.assert_ok();
    assert_eq!(show.stdout, "\"text value\"\n");
    assert_eq!(p.run(&["state", "show", "reports/summary.json"]).stdout, "{\"n\":5}\n");
    let missing = p.run(&["state", "show", "reports/sumary.json"]);
    missing.assert_code(2);
    assert!(missing.stderr.contains("did you mean `reports/summary.json`?"), "{}", missing.stderr);
    p.run(&["state", "rm", "reports/big.txt"]).assert_ok();
    assert!(!data(&p).join("reports/big.txt").exists());
    p.run(&["state", "rm", "weekly report/v1"]).assert_ok();
    assert_eq!(
        p.run(&["state", "ls", "--json"]).json().as_array().unwrap().len(),
        3,
        "summary.json and two directories"
    );
    p.run(&["state", "rm", "--all", "--yes"]).assert_ok();
    assert!(!data(&p).exists());
}

/// `state rm --all` run by someone who did not mean everything (a pasted command, a script in a
/// pipeline): on a terminal it asks first and No (the default) keeps the data; without a
/// terminal it needs --yes and otherwise removes nothing (exit 2, naming the flag).
#[test]
fn rm_all_asks_on_a_terminal_and_needs_yes_without_one() {
    use crate::support::pty::{exit_code, key, spawn};
    let p = Project::new();
    exec(&p, "store(\"k\", 1); writeText(\"a.txt\", \"abc\");").assert_ok();

    let r = p.run(&["state", "rm", "--all"]);
    r.assert_code(2);
    assert_eq!(
        r.stderr,
        "error: `agent state rm --all` removes everything under data/ and there is no terminal to confirm it: pass --yes\n"
    );
    assert!(data(&p).join("a.txt").exists());

    let mut s = spawn(&p, &["state", "rm", "--all"]);
    s.exp_string("remove everything under data/ (3 entries").unwrap();
    key(&mut s, "\r");
    s.exp_string("nothing removed").unwrap();
    assert_eq!(exit_code(&mut s), 1);
    assert!(data(&p).join("a.txt").exists());

    let mut s = spawn(&p, &["state", "rm", "--all"]);
    s.exp_string("remove everything under data/").unwrap();
    key(&mut s, "y");
    s.exp_string("removed everything under data/").unwrap();
    assert_eq!(exit_code(&mut s), 0);
    assert!(!data(&p).exists());
}

#[test]
fn escapes_from_data_are_refused_with_clear_errors() {
    let p = Project::new();
    exec(&p, "writeText(\"ok.txt\", \"fine\");").assert_ok();
    let secret = p.write("secret.txt", "untouched");
    let d = data(&p);
    std::os::unix::fs::symlink("/etc", d.join("etc")).unwrap();
    std::os::unix::fs::symlink(&secret, d.join("out")).unwrap();
    std::os::unix::fs::symlink("..", d.join("ws")).unwrap();
    // Writes are tried through a link to a directory of the test's own (never to /etc: a broken
    // fence must not write into the system).
    let outside = p.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, d.join("outdir")).unwrap();
    std::os::unix::fs::symlink("ok.txt", d.join("alias")).unwrap();
    let abs = outside.join("abs.txt").display().to_string();
    let abs_error = format!("Error: invalid path {abs:?}: absolute paths are not allowed");
    let script = r#"
const attempts = [
  () => readText("../secret.txt"),
  () => readText("/etc/passwd"),
  () => writeText(ABS, "x"),
  () => readText("etc/passwd"),
  () => readText("out"),
  () => writeText("out", "pwned"),
  () => writeText("outdir/evil", "x"),
  () => list("ws"),
  () => writeText("ws/README.md", "x"),
  () => readText("a\0b"),
  () => readText(".store/x.json"),
  () => readText("nope.txt"),
];
for (const f of attempts) {
  try { f(); console.log("ALLOWED"); } catch (e) { console.log(`${e.constructor.name}: ${e.message}`); }
}
console.log(readText("alias"));
"#
    .replace("ABS", &format!("{abs:?}"));
    let r = exec(&p, &script);
    r.assert_ok();
    let lines: Vec<&str> = r.stdout.lines().collect();
    let expected = [
        "Error: invalid path \"../secret.txt\": `..` is not allowed; scripts may only use files inside data/",
        "Error: invalid path \"/etc/passwd\": absolute paths are not allowed; paths are relative to data/ (e.g. \"reports/week.json\")",
        abs_error.as_str(),
        "Error: data/etc leads outside data/ (a symbolic link); scripts may only use files inside data/",
        "Error: data/out leads outside data/ (a symbolic link)",
        "Error: data/out leads outside data/ (a symbolic link)",
        "Error: data/outdir leads outside data/ (a symbolic link)",
        "Error: data/ws leads outside data/ (a symbolic link)",
        "Error: data/ws leads outside data/ (a symbolic link)",
        "Error: invalid path \"a\\0b\": it contains a NUL byte",
        "Error: invalid path \".store/x.json\": data/.store/ is reserved for store()/load()",
        "Error: data/nope.txt does not exist",
        "fine",
    ];
    assert_eq!(lines.len(), expected.len(), "{}", r.stdout);
    for (line, want) in lines.iter().zip(expected) {
        assert!(line.starts_with(want), "got {line:?}, want {want:?}");
    }
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "untouched");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "nothing was written through the link");
    assert!(std::fs::symlink_metadata(d.join("out")).unwrap().file_type().is_symlink(), "the link was not replaced");

    // data/ itself a link out of the workspace: nothing goes through it.
    let q = Project::new();
    std::fs::create_dir_all(q.path().join(".kodelet/mcp")).unwrap();
    std::fs::create_dir_all(q.path().join("elsewhere")).unwrap();
    std::os::unix::fs::symlink(q.path().join("elsewhere"), q.path().join(".kodelet/mcp/data")).unwrap();
    let r = exec(&q, "store(\"k\", 1);");
    r.assert_code(1);
    assert!(
        r.stderr
            .contains("data is a symbolic link; script state is kept only in a real directory inside the workspace"),
        "{}",
        r.stderr
    );
    assert_eq!(std::fs::read_dir(q.path().join("elsewhere")).unwrap().count(), 0);
}

#[test]
fn quotas_stop_writes_with_a_clear_error() {
    let p = Project::new();
    p.write_config("mcp:\n  code_execution:\n    state:\n      max_bytes: 1MB\n      max_files: 4\n");
    let r = exec(
        &p,
        r#"
writeText("a.txt", "x".repeat(600 * 1024));
try { writeText("b.txt", "x".repeat(500 * 1024)); } catch (e) { console.log(e.message); }
writeText("a.txt", "y".repeat(900 * 1024));
store("k1", 1);
store("k1", 2);
writeText("c.txt", "");
try { store("k2", 3); } catch (e) { console.log(e.message); }
"#,
    );
    r.assert_ok();
    assert_eq!(
        r.stdout,
        "state quota exceeded: writing data/b.txt (500.0 KB) would bring data/ and skills/ to 1.1 MB of 1.0 MB (mcp.code_execution.state.max_bytes)\n\
         state quota exceeded: data/ and skills/ hold 4 of 4 files and directories and writing key \"k2\" adds 1 (mcp.code_execution.state.max_files)\n"
    );
    // An uncaught one fails the script with the same message.
    let r = exec(&p, "writeText(\"a.txt\", \"z\".repeat(2 * 1024 * 1024));");
    r.assert_code(1);
    assert!(
        r.stderr.contains("error: Error: state quota exceeded: writing data/a.txt (2.0 MB) would bring data/ and skills/ to 2.0 MB of 1.0 MB"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("main.ts:1"), "the error points at the script's line: {}", r.stderr);
}

#[test]
fn concurrent_execs_storing_different_keys_lose_nothing() {
    let p = Project::new();
    exec(&p, "store(\"init\", 0);").assert_ok();
    let script = |n: usize| {
        format!(
            "for (let i = 0; i < 40; i++) {{ store(`k-{n}-${{i}}`, {{ n: {n}, i }}); writeText(\"shared.txt\", \"{}\".repeat(256 * 1024)); }}",
            char::from(b'a' + n as u8)
        )
    };
    let children: Vec<_> = (0..4)
        .map(|n| {
            let mut c = p.cmd(&["exec", "-"]);
            c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
            let mut child = c.spawn().unwrap();
            child.stdin.take().unwrap().write_all(script(n).as_bytes()).unwrap();
            child
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let r = exec(
        &p,
        r#"
let found = 0;
for (let n = 0; n < 4; n++) for (let i = 0; i < 40; i++) { const v = load(`k-${n}-${i}`); if (v && v.n === n && v.i === i) found++; }
const s = readText("shared.txt");
console.log(found, s.length, s.split(s[0]).length - 1 === s.length);
"#,
    );
    r.assert_ok();
    assert_eq!(r.stdout, "160 262144 true\n", "every key is there and the shared file is one writer's whole file");
    let leftovers: Vec<_> = std::fs::read_dir(data(&p).join(".store"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".agent-tmp-"))
        .collect();
    assert!(leftovers.is_empty());
}

fn code_project(fake: &FakeLlm) -> Project {
    let p = Project::new();
    p.write_config(&format!(
        "{}mcp:\n  servers:\n{}",
        fake.llm_yaml(Api::Anthropic),
        fixture_stdio_yaml("fixture", &[])
    ));
    p
}

#[test]
fn a_skill_saved_by_one_run_is_imported_by_the_next() {
    let skill = r#"import { add } from "../servers/fixture/index.ts";

/** Adds and doubles. */
export async function addTwice(a: number, b: number): Promise<number> {
  const r = await add({ a, b });
  return r.sum * 2;
}
"#;
    let save = format!(
        "const path = saveSkill(\"add-twice\", {}, \"Adds two numbers, then doubles the sum.\");\nconsole.log(`saved ${{path}}`);\nstore(\"last\", \"add-twice\");\n",
        serde_json::to_string(skill).unwrap()
    );
    let fake = FakeLlm::start(vec![Reply::tool("code_execution", json!({"code": save})), Reply::text("Saved.")]);
    let p = code_project(&fake);
    p.run(&["run", "--mode", "code", "save a skill"]).assert_ok();
    let (_, result, is_error) = fake.requests()[1].tool_results().remove(0);
    assert!(!is_error && result.contains("saved skills/add-twice.ts"), "{result}");
    let file = std::fs::read_to_string(p.path().join(".kodelet/mcp/skills/add-twice.ts")).unwrap();
    assert!(file.starts_with("/**\n * Adds two numbers, then doubles the sum.\n */\nimport { add }"), "{file}");
    let readme = std::fs::read_to_string(p.path().join(".kodelet/mcp/README.md")).unwrap();
    assert!(
        readme.contains("- `skills/add-twice.ts` (`addTwice`): Adds two numbers, then doubles the sum."),
        "the README lists the new skill:\n{readme}"
    );

    let use_it =
        "import { addTwice } from \"./skills/add-twice.ts\";\nconsole.log(load(\"last\"), await addTwice(20, 1));\n";
    let fake2 = FakeLlm::start(vec![Reply::tool("code_execution", json!({"code": use_it})), Reply::text("42")]);
    p.write_config(&format!(
        "{}mcp:\n  servers:\n{}",
        fake2.llm_yaml(Api::Anthropic),
        fixture_stdio_yaml("fixture", &[])
    ));
    p.run(&["run", "--mode", "code", "use the skill"]).assert_ok();
    let (_, result, is_error) = fake2.requests()[1].tool_results().remove(0);
    assert!(!is_error, "{result}");
    assert_eq!(result.trim(), "add-twice 42");

    // --fresh-state clears data/ (skills stay).
    let fake3 = FakeLlm::start(vec![Reply::text("ok")]);
    p.write_config(&format!(
        "{}mcp:\n  servers:\n{}",
        fake3.llm_yaml(Api::Anthropic),
        fixture_stdio_yaml("fixture", &[])
    ));
    assert!(data(&p).join(".store").exists());
    p.run(&["run", "--mode", "code", "--fresh-state", "anything"]).assert_ok();
    assert!(!data(&p).exists());
    assert!(p.path().join(".kodelet/mcp/skills/add-twice.ts").exists());
}

#[test]
fn skill_names_and_sources_are_checked_and_the_cli_manages_them() {
    let p = Project::new();
    let r = exec(
        &p,
        r#"
for (const [name, src] of [["Weekly_Report", "export const a = 1;"], ["../x", "export const a = 1;"], ["broken", "export const = ;"]]) {
  try { saveSkill(name, src, ""); console.log("ALLOWED"); } catch (e) { console.log(e.message); }
}
console.log(saveSkill("weekly-report", "export function weeklyReport() { return 7; }", "Seven, weekly."));
"#,
    );
    r.assert_ok();
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(
        lines[0]
            .starts_with("invalid skill name \"Weekly_Report\": it must start with a lowercase letter; use kebab-case"),
        "{}",
        lines[0]
    );
    assert!(lines[1].starts_with("invalid skill name \"../x\""), "{}", lines[1]);
    assert!(
        lines[2].starts_with("skill `broken` does not transpile: ") && lines[2].contains("skills/broken.ts:1:"),
        "{}",
        lines[2]
    );
    assert_eq!(lines[3], "skills/weekly-report.ts");
    assert!(!p.path().join(".kodelet/mcp/skills/broken.ts").exists());

    // agent skill add / ls / show / rm.
    let file =
        p.write("tools/top-items.ts", "/** The top N items. */\nexport function topItems(n: number) { return n; }\n");
    p.run(&["skill", "add", file.to_str().unwrap()]).assert_ok();
    let bad = p.write("Bad Name.ts", "export const a = 1;");
    let r = p.run(&["skill", "add", bad.to_str().unwrap()]);
    r.assert_code(2);
    assert!(
        r.stderr.contains("invalid skill name \"Bad Name\"") && r.stderr.contains("(or pass --name)"),
        "{}",
        r.stderr
    );
    let broken = p.write("broken.ts", "export function (\n");
    let r = p.run(&["skill", "add", broken.to_str().unwrap(), "--name", "fine-name"]);
    r.assert_code(2);
    assert!(r.stderr.contains("error: skill `fine-name` does not transpile: "), "{}", r.stderr);
    let ls = p.run(&["skill", "ls", "--json"]);
    ls.assert_ok();
    assert_eq!(
        ls.json(),
        json!([
            {"name": "top-items", "description": "The top N items.", "file": "skills/top-items.ts", "exports": ["topItems"], "bytes": 74},
            {"name": "weekly-report", "description": "Seven, weekly.", "file": "skills/weekly-report.ts", "exports": ["weeklyReport"], "bytes": 71},
        ])
    );
    let show = p.run(&["skill", "show", "weekly-report"]);
    show.assert_ok();
    assert!(show.stdout.contains("export function weeklyReport()"));
    let search = p.run(&["mcp", "search", "top items", "--json"]);
    search.assert_ok();
    assert_eq!(search.json()[0]["server"], "skills");
    assert_eq!(search.json()[0]["tool"], "top-items");
    let r = p.run(&["skill", "rm", "weekly-reprt"]);
    r.assert_code(2);
    assert!(r.stderr.contains("did you mean `weekly-report`?"), "{}", r.stderr);
    p.run(&["skill", "rm", "weekly-report"]).assert_ok();
    assert_eq!(p.run(&["skill", "ls", "--json"]).json().as_array().unwrap().len(), 1);
}

/// Every name under `dir` (recursively, links not followed) that starts with `.agent-tmp-`.
fn temp_files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for e in entries.flatten() {
        let path = e.path();
        if e.file_name().to_string_lossy().starts_with(".agent-tmp-") {
            out.push(path.clone());
        }
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(temp_files_under(&path));
        }
    }
    out
}

/// Moves `dir` aside, puts a link to `outside` in its place, then puts it back: the racing local
/// process. Errors are ignored (the script may have created or filled a directory meanwhile).
fn swap_for_a_link(dir: &std::path::Path, aside: &std::path::Path, outside: &std::path::Path) {
    if std::fs::rename(dir, aside).is_ok() {
        let _ = std::os::unix::fs::symlink(outside, dir);
        std::thread::yield_now();
        let _ = std::fs::remove_file(dir);
        let _ = std::fs::rename(aside, dir);
    }
}

#[test]
fn a_racing_process_swapping_directories_for_links_never_gets_a_write_outside() {
    const WRITES: usize = 800;
    const MAX_ROUNDS: usize = 1_000_000;
    let p = Project::new();
    exec(&p, "writeText(\"sub/seed.txt\", \"x\"); saveSkill(\"seed\", \"export const a = 1;\", \"\");").assert_ok();
    let ws = p.path().join(".kodelet/mcp");
    let outside_data = p.path().join("outside-data");
    let outside_skills = p.path().join("outside-skills");
    std::fs::create_dir_all(&outside_data).unwrap();
    std::fs::create_dir_all(&outside_skills).unwrap();

    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let racer = {
        let (ws, outside_data, outside_skills, done) =
            (ws.clone(), outside_data.clone(), outside_skills.clone(), done.clone());
        std::thread::spawn(move || {
            let mut rounds = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) && rounds < MAX_ROUNDS {
                swap_for_a_link(&ws.join("data/sub"), &ws.join(format!("data/sub-aside-{rounds}")), &outside_data);
                swap_for_a_link(&ws.join("skills"), &ws.join(format!("skills-aside-{rounds}")), &outside_skills);
                rounds += 1;
            }
            rounds
        })
    };
    let script = format!(
        r#"
let wrote = 0, saved = 0, refused = 0;
for (let i = 0; i < {WRITES}; i++) {{
  try {{ writeText(`sub/f${{i % 40}}.txt`, `round ${{i}}`); wrote++; }} catch (e) {{ refused++; }}
  try {{ saveSkill(`s-${{i % 40}}`, `export const n = ${{i}};`, ""); saved++; }} catch (e) {{ refused++; }}
}}
console.log(wrote, saved, refused);
"#
    );
    let r = exec(&p, &script);
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let rounds = racer.join().unwrap();
    r.assert_ok();
    let counts: Vec<usize> = r.stdout.split_whitespace().map(|n| n.parse().unwrap()).collect();
    assert!(counts[0] > 0 && counts[1] > 0, "some writes got through the race: {}", r.stdout);
    assert!(rounds > 0);
    let landed: Vec<_> = std::fs::read_dir(&outside_data)
        .unwrap()
        .chain(std::fs::read_dir(&outside_skills).unwrap())
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(landed.is_empty(), "{} writes landed outside the workspace: {landed:?}", landed.len());
    let temps = temp_files_under(p.path());
    assert!(temps.is_empty(), "temp files left behind: {temps:?}");
}

/// What is really under `data/` and `skills/`: (bytes of files and links, files + directories +
/// links), walked by the test itself without following links.
fn on_disk(p: &Project) -> (u64, u64) {
    fn walk(dir: &std::path::Path, total: &mut (u64, u64)) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            total.1 += 1;
            if m.is_dir() {
                walk(&e.path(), total);
            } else {
                total.0 += m.len();
            }
        }
    }
    let mut total = (0, 0);
    walk(&data(p), &mut total);
    walk(&p.path().join(".kodelet/mcp/skills"), &mut total);
    total
}

/// Spawns `agent exec -` with `script` on stdin.
fn spawn_exec(p: &Project, script: &str) -> std::process::Child {
    let mut c = p.cmd(&["exec", "-"]);
    c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    child
}

#[test]
fn a_flood_of_directories_files_and_skills_from_concurrent_scripts_never_passes_the_quota() {
    const MAX_FILES: u64 = 50;
    const MAX_BYTES: u64 = 1 << 20;
    let p = Project::new();
    p.write_config("mcp:\n  code_execution:\n    state:\n      max_bytes: 1MB\n      max_files: 50\n");
    // Each flood counts what got through and what the quota refused; any other error fails it.
    let flood = |body: &str| {
        format!(
            "let ok = 0, refused = 0;\nfor (let i = 0; i < 120; i++) {{\n  try {{ {body}; ok++; }}\n  catch (e) {{ if (!e.message.startsWith(\"state quota exceeded\")) throw e; refused++; }}\n}}\nconsole.log(ok, refused);\n"
        )
    };
    let scripts = [
        // Directories: each write makes three.
        flood("writeText(`d${i}/e/f/g.txt`, \"x\")"),
        // Skills of 100 KB.
        flood("saveSkill(`big-${i}`, `export const s = \"${\"s\".repeat(100 * 1024)}\";`, \"\")"),
        // Files and keys.
        flood("writeText(`f${i}.txt`, \"y\".repeat(10 * 1024)); store(`k${i}`, i)"),
    ];
    let children: Vec<_> = scripts.iter().map(|s| spawn_exec(&p, s)).collect();
    let outputs: Vec<_> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    let (bytes, entries) = on_disk(&p);
    assert!(entries <= MAX_FILES, "{entries} files and directories on disk, quota {MAX_FILES}");
    assert!(bytes <= MAX_BYTES, "{bytes} bytes on disk, quota {MAX_BYTES}");
    for out in outputs {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
        let counts: Vec<u64> = stdout.split_whitespace().map(|n| n.parse().unwrap()).collect();
        assert!(counts[1] > 0, "the flood reached the quota: {stdout}");
    }
    assert!(entries > MAX_FILES - 5 || bytes > MAX_BYTES - 110 * 1024, "the floods filled the quota");
    let temps = temp_files_under(p.path());
    assert!(temps.is_empty(), "temp files left behind: {temps:?}");

    // A refused write makes no directory, even a deep one.
    let r = exec(&p, "writeText(\"new/deeper/still/x.txt\", \"1\".repeat(2 * 1024 * 1024));");
    r.assert_code(1);
    assert!(r.stderr.contains("state quota exceeded"), "{}", r.stderr);
    assert!(!data(&p).join("new").exists());
    assert_eq!(on_disk(&p), (bytes, entries));
}

#[test]
fn state_ls_reports_what_is_on_disk_and_recounts_after_changes_by_hand() {
    let p = Project::new();
    p.write_config("mcp:\n  code_execution:\n    state:\n      max_bytes: 1MB\n      max_files: 12\n");
    exec(
        &p,
        r#"
writeText("a/b/c.txt", "x".repeat(3000));
writeJson("a/list.json", [1, 2, 3]);
store("k", { v: 1 });
saveSkill("one", "export const one = 1;", "One.");
for (let i = 0; ; i++) { try { writeText(`fill/${i}`, "z"); } catch (e) { console.log(e.message); break; } }
"#,
    )
    .assert_ok();
    let summary = |r: &Run| r.stderr.lines().last().unwrap_or_default().to_string();
    let check = |p: &Project, skills: bool| {
        let (bytes, entries) = on_disk(p);
        let ls = p.run(&["state", "ls", "--json"]);
        ls.assert_ok();
        let listed = ls.json();
        let listed = listed.as_array().unwrap();
        assert_eq!(listed.len() as u64, entries, "one entry per file and directory: {listed:?}");
        assert_eq!(listed.iter().map(|e| e["bytes"].as_u64().unwrap()).sum::<u64>(), bytes);
        let text = p.run(&["state", "ls"]);
        text.assert_ok();
        let want = format!(
            "{} of 1.0 MB used, {entries} of 12 files and directories (data/ and skills/ together)",
            agent::util::size::human_bytes(bytes)
        );
        assert_eq!(summary(&text), want);
        assert!(text.stdout.contains("dir           -  .store/\n"), "{}", text.stdout);
        assert_eq!(text.stdout.contains("skill      38 B  skills/one.ts\n"), skills, "{}", text.stdout);
        entries
    };
    assert_eq!(check(&p, true), 12, "full");
    // Files removed by hand: the next ls counts again, and writes fit again.
    std::fs::remove_dir_all(data(&p).join("fill")).unwrap();
    assert!(
        exec(&p, "writeText(\"more.txt\", \"m\");").stderr.contains("state quota exceeded"),
        "the total is kept, not recounted on each write"
    );
    assert!(check(&p, true) < 12);
    exec(&p, "writeText(\"more.txt\", \"m\");").assert_ok();
    // agent state rm and agent skill rm give the room back.
    let before = on_disk(&p).1;
    p.run(&["state", "rm", "a"]).assert_ok();
    p.run(&["skill", "rm", "one"]).assert_ok();
    assert_eq!(check(&p, false), before - 5);
}
