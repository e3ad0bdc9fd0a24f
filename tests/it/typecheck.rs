//! Type-checking before running (`agent exec --check`, `mcp.code_execution.typecheck`): the
//! real binary, the fixture server, the generated tree and a real `tsc` (npm `typescript`, as
//! tests/generate.rs uses it); errors at the script's own lines, the script not run; and the
//! one-line warning when there is no compiler.

use crate::support;
use crate::support::fake_llm;

use std::path::PathBuf;

use fake_llm::{Api, FakeLlm, Reply};
use serde_json::json;
use support::{Project, fixture_stdio_yaml};

/// `tsc` from npm, or `None` (skipped with a notice; fails under CI) without Node.
fn tsc() -> Option<PathBuf> {
    if !support::node_or_skip("scripts are not type-checked without tsc") {
        return None;
    }
    Some(support::npm_bin(support::TYPESCRIPT, "tsc"))
}

/// PATH with `tsc`'s directory first (and the usual system directories for Node itself).
fn path_with(tsc: &std::path::Path) -> String {
    format!("{}:/usr/local/bin:/usr/bin:/bin", tsc.parent().unwrap().display())
}

/// A script that reads `summ` from `add`'s typed result (`AddOutput` has `sum`), after a print
/// that would show if it ran.
const WRONG_FIELD: &str = "import { add } from \"./.kodelet/mcp/servers/fixture/index.ts\";\n\
console.log(\"ran\");\n\
const r = await add({ a: 1, b: 2 });\n\
console.log(r.summ);\n";

#[test]
fn check_catches_a_wrong_field_of_a_typed_result_and_does_not_run_the_script() {
    let Some(tsc) = tsc() else { return };
    let p = Project::with_fixture();
    p.write("script.ts", WRONG_FIELD);
    let r = p.cmd(&["exec", "--check", "script.ts"]).env("PATH", path_with(&tsc)).output().unwrap();
    let r = support::Run::from(r);
    r.assert_code(1);
    assert_eq!(r.stdout, "", "the script must not run");
    assert_eq!(
        r.stderr,
        "script.ts:4:15: error TS2551: Property 'summ' does not exist on type 'AddOutput'. Did you mean 'sum'?\n\
         error: 1 type error; the script did not run\n"
    );

    // --json: the same, as an error of kind `typecheck`.
    let r = p.cmd(&["exec", "--check", "--json", "script.ts"]).env("PATH", path_with(&tsc)).output().unwrap();
    let r = support::Run::from(r);
    r.assert_code(1);
    let out = r.json();
    assert_eq!(out["error"]["kind"], "typecheck");
    assert_eq!(out["stdout"], "");
    assert_eq!(out["tool_calls"], 0);
    assert!(out["error"]["stack"].as_str().unwrap().starts_with("script.ts:4:15: error TS2551: "), "{out}");

    // Without --check the same script runs (and prints `undefined` for the missing field).
    let r = p.run(&["exec", "script.ts"]);
    r.assert_ok();
    assert_eq!(r.stdout, "ran\nundefined\n");
}

#[test]
fn a_correct_script_passes_the_check_and_runs() {
    let Some(tsc) = tsc() else { return };
    let p = Project::with_fixture();
    p.write("script.ts", &WRONG_FIELD.replace("r.summ", "r.sum"));
    let r = p.cmd(&["exec", "--check", "script.ts"]).env("PATH", path_with(&tsc)).output().unwrap();
    let r = support::Run::from(r);
    r.assert_ok();
    assert_eq!(r.stdout, "ran\n3\n");
    assert_eq!(r.stderr, "");
}

#[test]
fn typecheck_from_the_config_with_a_configured_compiler_checks_stdin_scripts_too() {
    let Some(tsc) = tsc() else { return };
    let p = Project::new();
    p.write_config(&format!(
        "mcp:\n  code_execution:\n    typecheck: true\n    tsc: {:?}\n  servers:\n{}",
        tsc.display().to_string(),
        fixture_stdio_yaml("fixture", &[])
    ));
    // Run as <workspace>/main.ts: its imports resolve from the tree, and so do its errors' names.
    let script = "import { add } from \"./servers/fixture/index.ts\";\n\
                  const n: number = await add({ a: 1, b: \"2\" });\n";
    let r = p.run_stdin(&["exec", "-"], script);
    r.assert_code(1);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("main.ts:2:7: error TS2322: Type 'AddOutput' is not assignable to type 'number'.")),
        "{}",
        r.stderr
    );
    assert!(
        lines.iter().any(|l| l.starts_with("main.ts:2:37: error TS2322: Type 'string' is not assignable")),
        "{}",
        r.stderr
    );
    assert_eq!(lines.last(), Some(&"error: 2 type errors; the script did not run"));
}

#[test]
fn without_a_compiler_a_one_line_warning_and_the_script_runs() {
    let p = Project::with_fixture();
    p.write("script.ts", WRONG_FIELD);
    let empty = p.path().join("no-tools");
    std::fs::create_dir_all(&empty).unwrap();
    let r = p.cmd(&["exec", "--check", "script.ts"]).env("PATH", &empty).output().unwrap();
    let r = support::Run::from(r);
    r.assert_ok();
    assert_eq!(r.stdout, "ran\nundefined\n");
    assert_eq!(
        r.stderr,
        "warning: no TypeScript compiler (`tsc` on PATH or mcp.code_execution.tsc): scripts run without a type \
         check (npm install -g typescript)\n"
    );
}

#[test]
fn in_code_mode_type_errors_go_back_to_the_model_in_place_of_running() {
    let Some(tsc) = tsc() else { return };
    let wrong = "import { add } from \"./servers/fixture/index.ts\";\nconst r = await add({ a: 40, b: 2 });\nconsole.log(r.total);\n";
    let right = wrong.replace("r.total", "r.sum");
    let fake = FakeLlm::start(vec![
        Reply::tool("code_execution", json!({"code": wrong})),
        Reply::tool("code_execution", json!({"code": right})),
        Reply::text("42"),
    ]);
    let p = Project::new();
    p.write_config(&format!(
        "{}mcp:\n  execution_mode: code\n  code_execution:\n    typecheck: true\n    tsc: {:?}\n  servers:\n{}",
        fake.llm_yaml(Api::Anthropic),
        tsc.display().to_string(),
        fixture_stdio_yaml("fixture", &[])
    ));
    let r = p.run(&["run", "What is 40 + 2?"]);
    r.assert_ok();
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3);
    let (_, first, is_error) = reqs[1].tool_results().remove(0);
    assert!(is_error);
    assert_eq!(
        first,
        "error: 1 type error; the script did not run\n\
         main.ts:3:15: error TS2339: Property 'total' does not exist on type 'AddOutput'."
    );
    assert_eq!(reqs[2].tool_results(), vec![("toolu_2_0".to_string(), "42\n".to_string(), false)]);
}
