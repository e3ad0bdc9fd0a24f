//! Unit tests of the whole generator on a temporary directory: determinism, incremental writes,
//! deletion rules, partial regeneration, and hostile metadata.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use super::*;

fn tool(server: &str, name: &str, input: Value) -> ToolInfo {
    ToolInfo {
        server: server.into(),
        name: name.into(),
        title: None,
        description: Some(format!("The {name} tool.")),
        input_schema: input,
        output_schema: None,
        annotations: None,
    }
}

fn sample() -> Vec<ToolInfo> {
    vec![
        tool(
            "alpha",
            "echo",
            json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
        ),
        tool("alpha", "get-file.contents", json!({"type": "object", "properties": {"path": {"type": "string"}}})),
        tool("alpha", "get_file_contents", json!({"type": "object"})),
        tool("beta", "list", json!({"type": "object"})),
        tool(
            "beta",
            "delete",
            json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}),
        ),
    ]
}

fn opts(dir: &Path) -> GenerateOptions {
    GenerateOptions { output_dir: dir.to_path_buf(), clean: false, only_servers: None, learned: Default::default() }
}

/// Every file under `dir`, relative path → bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(p.strip_prefix(root).unwrap().display().to_string(), std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn mtimes(dir: &Path) -> BTreeMap<String, SystemTime> {
    snapshot(dir).keys().map(|k| (k.clone(), std::fs::metadata(dir.join(k)).unwrap().modified().unwrap())).collect()
}

/// Sets every file's mtime to the distant past, so a rewrite is visible.
fn age_files(dir: &Path) {
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    for k in snapshot(dir).keys() {
        std::fs::File::options().write(true).open(dir.join(k)).unwrap().set_modified(old).unwrap();
    }
}

fn tmpdir() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("mcp");
    (t, dir)
}

#[test]
fn the_tree_has_the_documented_layout() {
    let (_t, dir) = tmpdir();
    let r = generate(&sample(), &opts(&dir)).unwrap();
    let files: Vec<String> = snapshot(&dir).into_keys().collect();
    assert_eq!(
        files,
        [
            ".agent-manifest.json",
            "README.md",
            "client.ts",
            "example.ts",
            "globals.d.ts",
            "index.ts",
            "result.d.mts",
            "result.mjs",
            "servers/alpha/echo.ts",
            "servers/alpha/getFileContents.ts",
            "servers/alpha/getFileContents_2.ts",
            "servers/alpha/index.ts",
            "servers/beta/delete_.ts",
            "servers/beta/index.ts",
            "servers/beta/list.ts",
            "tsconfig.json",
        ]
    );
    assert_eq!((r.servers, r.tools, r.files_written, r.files_unchanged, r.files_deleted), (2, 5, 16, 0, 0));
    for (path, bytes) in snapshot(&dir) {
        assert!(render::is_generated(&bytes), "{path} lacks the generated header");
    }
    let index = std::fs::read_to_string(dir.join("servers/alpha/index.ts")).unwrap();
    assert!(index.contains("//   getFileContents — The get-file.contents tool.\n"), "{index}");
    assert!(index.contains(
        "export { getFileContents, type GetFileContentsInput, type GetFileContentsOutput } from \"./getFileContents.ts\";"
    ));
    let f = std::fs::read_to_string(dir.join("servers/alpha/getFileContents_2.ts")).unwrap();
    assert!(f.contains("callResponse<GetFileContents_2Output>(\"alpha\", \"get_file_contents\", input)"), "{f}");
    let top = std::fs::read_to_string(dir.join("index.ts")).unwrap();
    assert!(top.contains("import * as alpha from \"./servers/alpha/index.ts\";"));
    assert!(top.contains("export { alpha, beta };"));
}

#[test]
fn same_tools_give_byte_identical_files_whatever_the_order() {
    let (_t, dir) = tmpdir();
    generate(&sample(), &opts(&dir)).unwrap();
    let first = snapshot(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    let mut reversed = sample();
    reversed.reverse();
    generate(&reversed, &opts(&dir)).unwrap();
    assert_eq!(first, snapshot(&dir));
}

#[test]
fn unchanged_files_are_not_rewritten() {
    let (_t, dir) = tmpdir();
    generate(&sample(), &opts(&dir)).unwrap();
    age_files(&dir);
    let before = mtimes(&dir);
    let r = generate(&sample(), &opts(&dir)).unwrap();
    assert_eq!((r.files_written, r.files_unchanged, r.files_deleted), (0, 16, 0));
    assert_eq!(before, mtimes(&dir));

    // One changed tool rewrites its file, and the manifest; nothing else.
    let mut changed = sample();
    changed[0].description = Some("Echo, changed.".into());
    let r = generate(&changed, &opts(&dir)).unwrap();
    assert_eq!(r.files_written, 3, "echo.ts, servers/alpha/index.ts (summary line) and the manifest");
    let after = mtimes(&dir);
    let rewritten: Vec<&String> = after.keys().filter(|k| after[*k] != before[*k]).collect();
    assert_eq!(rewritten, [".agent-manifest.json", "servers/alpha/echo.ts", "servers/alpha/index.ts"]);
    assert!(!snapshot(&dir).keys().any(|k| k.contains(".agent-tmp-")), "no temp files left");
}

#[test]
fn files_of_removed_tools_and_servers_are_deleted() {
    let (_t, dir) = tmpdir();
    generate(&sample(), &opts(&dir)).unwrap();
    let fewer: Vec<ToolInfo> = sample().into_iter().filter(|t| t.server == "alpha" && t.name != "echo").collect();
    let r = generate(&fewer, &opts(&dir)).unwrap();
    assert_eq!(r.files_deleted, 4, "echo.ts and beta's three files");
    assert!(!dir.join("servers/alpha/echo.ts").exists());
    assert!(!dir.join("servers/beta").exists(), "an emptied server directory is removed");
    let top = std::fs::read_to_string(dir.join("index.ts")).unwrap();
    assert!(!top.contains("beta"));
}

#[test]
fn files_without_the_header_are_never_touched() {
    let (_t, dir) = tmpdir();
    generate(&sample(), &opts(&dir)).unwrap();
    std::fs::write(dir.join("servers/alpha/echo.ts"), "// my version of echo\n").unwrap();
    std::fs::write(dir.join("servers/beta/notes.ts"), "export const mine = 1;\n").unwrap();
    std::fs::write(dir.join("main.ts"), "console.log(1);\n").unwrap();
    std::fs::write(dir.join("stale.ts"), format!("{}\nexport {{}};\n", render::ts_header(None))).unwrap();

    let only_alpha: Vec<ToolInfo> = sample().into_iter().filter(|t| t.server == "alpha").collect();
    let r = generate(&only_alpha, &opts(&dir)).unwrap();
    assert_eq!(std::fs::read_to_string(dir.join("servers/alpha/echo.ts")).unwrap(), "// my version of echo\n");
    assert!(
        r.warnings.iter().any(|w| w.contains("echo.ts") && w.contains("not generated by agent")),
        "{:?}",
        r.warnings
    );
    assert!(dir.join("servers/beta/notes.ts").exists(), "user file kept");
    assert!(!dir.join("servers/beta/list.ts").exists(), "generated file deleted");
    assert!(dir.join("main.ts").exists());
    assert!(!dir.join("stale.ts").exists(), "a stale generated top-level file is deleted");

    let c = generate(&only_alpha, &GenerateOptions { clean: true, ..opts(&dir) }).unwrap();
    assert!(dir.join("servers/beta/notes.ts").exists() && dir.join("main.ts").exists());
    assert_eq!(std::fs::read_to_string(dir.join("servers/alpha/echo.ts")).unwrap(), "// my version of echo\n");
    assert_eq!(c.files_unchanged, 0, "--clean rewrites every generated file");
}

#[test]
fn clean_rewrites_everything_and_removes_stray_generated_files() {
    let (_t, dir) = tmpdir();
    generate(&sample(), &opts(&dir)).unwrap();
    std::fs::create_dir_all(dir.join("servers/old")).unwrap();
    std::fs::write(dir.join("servers/old/gone.ts"), format!("{}\n", render::ts_header(Some("old")))).unwrap();
    age_files(&dir);
    let before = mtimes(&dir);
    let r = generate(&sample(), &GenerateOptions { clean: true, ..opts(&dir) }).unwrap();
    assert_eq!((r.files_written, r.files_unchanged, r.files_deleted), (16, 0, 1));
    assert!(!dir.join("servers/old").exists());
    let after = mtimes(&dir);
    assert!(after.iter().all(|(k, t)| before.get(k) != Some(t)), "every file rewritten");
}

#[test]
fn only_servers_regenerates_those_and_keeps_the_others_from_the_manifest() {
    let (_t, dir) = tmpdir();
    generate(&sample(), &opts(&dir)).unwrap();
    age_files(&dir);
    let before = mtimes(&dir);

    // `alpha` changed (echo removed, one tool added); `beta` is not passed at all.
    let mut alpha: Vec<ToolInfo> = sample().into_iter().filter(|t| t.server == "alpha" && t.name != "echo").collect();
    alpha.push(tool("alpha", "fresh", json!({"type": "object"})));
    let only = GenerateOptions { only_servers: Some(vec!["alpha".into()]), ..opts(&dir) };
    let r = generate(&alpha, &only).unwrap();
    assert_eq!((r.servers, r.tools), (2, 5));
    assert!(!dir.join("servers/alpha/echo.ts").exists());
    assert!(dir.join("servers/alpha/fresh.ts").exists());
    let after = mtimes(&dir);
    for f in ["servers/beta/list.ts", "servers/beta/delete_.ts", "servers/beta/index.ts", "client.ts"] {
        assert_eq!(before[f], after[f], "{f} must not be rewritten");
    }
    assert!(std::fs::read_to_string(dir.join("index.ts")).unwrap().contains("export { alpha, beta };"));
    let manifest = generated_tools(&dir).unwrap();
    assert_eq!(manifest.iter().filter(|t| t.server == "beta").count(), 2);

    // Without a manifest, the other servers' files are still never deleted.
    std::fs::remove_file(dir.join(MANIFEST)).unwrap();
    generate(&alpha, &only).unwrap();
    assert!(dir.join("servers/beta/list.ts").exists());
    // A selected server without tools loses its directory.
    generate(&[], &GenerateOptions { only_servers: Some(vec!["beta".into()]), ..opts(&dir) }).unwrap();
    assert!(!dir.join("servers/beta").exists());
    assert!(dir.join("servers/alpha/fresh.ts").exists());
}

#[test]
fn the_manifest_holds_the_tools_and_the_version() {
    let (_t, dir) = tmpdir();
    assert!(generated_tools(&dir).is_none());
    generate(&sample(), &opts(&dir)).unwrap();
    let mut expected = sample();
    expected.sort_by(|a, b| (&a.server, &a.name).cmp(&(&b.server, &b.name)));
    assert_eq!(generated_tools(&dir).unwrap(), expected);
    let text = std::fs::read_to_string(dir.join(MANIFEST)).unwrap();
    std::fs::write(dir.join(MANIFEST), text.replace(&generator_id(), "agent 0.0.0-other")).unwrap();
    assert!(generated_tools(&dir).is_none(), "a tree from another version is not trusted");
}

#[test]
fn a_bad_tool_never_fails_the_batch() {
    let (_t, dir) = tmpdir();
    let mut tools = sample();
    tools.push(tool("alpha", "broken", json!("not a schema")));
    tools.push(tool("alpha", "stringy", json!({"type": "string"})));
    tools.push(tools[0].clone());
    let r = generate(&tools, &opts(&dir)).unwrap();
    assert_eq!(r.tools, 7);
    assert_eq!(r.degraded.len(), 2, "{:?}", r.degraded);
    assert!(r.degraded[0].starts_with("alpha.broken: inputSchema is a string"), "{:?}", r.degraded);
    assert!(r.warnings.iter().any(|w| w.contains("alpha.echo: listed twice")), "{:?}", r.warnings);
    let broken = std::fs::read_to_string(dir.join("servers/alpha/broken.ts")).unwrap();
    assert!(broken.contains("export type BrokenInput = Record<string, unknown>;"));
    assert!(broken.contains("export type BrokenOutput = unknown;"));
    assert!(
        broken.contains("export async function broken(input: BrokenInput = {}): Promise<ToolResponse<BrokenOutput>>")
    );
}

/// The code of a generated TS file with comments and string literals removed (template literals
/// keep their `${...}` code). Errors on unterminated comments/strings or raw line terminators in
/// strings: those would mean the file does not say what we meant.
fn code_only(src: &str) -> Result<String, String> {
    fn lex(chars: &[char], mut i: usize, code: &mut String, stop_at_brace: bool) -> Result<usize, String> {
        let mut depth = 0usize;
        while i < chars.len() {
            let c = chars[i];
            let next = chars.get(i + 1).copied();
            match c {
                '/' if next == Some('/') => {
                    while i < chars.len() && !matches!(chars[i], '\n' | '\r' | '\u{2028}' | '\u{2029}') {
                        i += 1;
                    }
                }
                '/' if next == Some('*') => {
                    i += 2;
                    loop {
                        if i + 1 >= chars.len() {
                            return Err("unterminated block comment".into());
                        }
                        if chars[i] == '*' && chars[i + 1] == '/' {
                            i += 2;
                            break;
                        }
                        i += 1;
                    }
                    code.push(' ');
                }
                '"' | '\'' => {
                    i += 1;
                    loop {
                        match chars.get(i) {
                            None => return Err("unterminated string".into()),
                            Some('\\') => i += 2,
                            Some(q) if *q == c => break,
                            Some('\n' | '\r' | '\u{2028}' | '\u{2029}') => {
                                return Err("raw line terminator in a string".into());
                            }
                            Some(_) => i += 1,
                        }
                    }
                    i += 1;
                    code.push_str("\"\"");
                }
                '`' => {
                    i += 1;
                    loop {
                        match chars.get(i) {
                            None => return Err("unterminated template".into()),
                            Some('\\') => i += 2,
                            Some('`') => break,
                            Some('$') if chars.get(i + 1) == Some(&'{') => {
                                i = lex(chars, i + 2, code, true)?;
                            }
                            Some(_) => i += 1,
                        }
                    }
                    i += 1;
                    code.push_str("``");
                }
                '{' => {
                    depth += 1;
                    code.push(c);
                    i += 1;
                }
                '}' if stop_at_brace && depth == 0 => return Ok(i + 1),
                '}' => {
                    depth = depth.saturating_sub(1);
                    code.push(c);
                    i += 1;
                }
                _ => {
                    code.push(c);
                    i += 1;
                }
            }
        }
        Ok(i)
    }
    let chars: Vec<char> = src.chars().collect();
    let mut code = String::new();
    lex(&chars, 0, &mut code, false)?;
    Ok(code)
}

#[test]
fn the_lexer_used_below_finds_injected_code() {
    assert_eq!(code_only("a /* x */ b // y\nc \"s\" `t${d}`").unwrap(), "a   b \nc \"\" d``");
    assert!(code_only("/** x */ pwned()").unwrap().contains("pwned"));
    assert!(code_only("// x\u{2028}pwned()").unwrap().contains("pwned"));
    assert!(code_only("\"a\u{2028}b\"").is_err());
}

#[test]
fn hostile_metadata_cannot_change_the_generated_code() {
    let (_t, dir) = tmpdir();
    let tools = load::parse_tools(
        &serde_json::from_str(include_str!("../../tests/data/hostile-tools.json")).unwrap(),
        None,
        "hostile",
    )
    .unwrap();
    let r = generate(&tools, &opts(&dir)).unwrap();
    assert!(r.degraded.is_empty(), "{:?}", r.degraded);
    let files = snapshot(&dir);
    assert!(files.len() >= 12);
    for (path, bytes) in &files {
        let text = String::from_utf8(bytes.clone()).unwrap();
        if path == MANIFEST {
            continue; // data for agent itself (serde_json keeps U+2028 raw, which JSON allows)
        }
        for c in ['\u{2028}', '\u{2029}', '\u{202e}', '\u{0}'] {
            assert!(!text.contains(c), "{path} contains raw {c:?}");
        }
        if path.ends_with(".ts") {
            let code = code_only(&text).unwrap_or_else(|e| panic!("{path}: {e}\n{text}"));
            assert!(!code.contains("$$pwn$$"), "{path}: metadata escaped into code:\n{code}");
        }
    }
    // The hostile names still reach the server verbatim, as escaped string literals.
    let tool_file =
        files.iter().find(|(p, _)| p.ends_with("/xPwnPwn.ts")).map(|(_, b)| String::from_utf8_lossy(b)).unwrap();
    assert!(
        tool_file.contains(
            r#"callMCPTool<XPwnPwnOutput>("evil\"; $$pwn$$(); \"\n*/ $$pwn$$(); /*", "x\"; $$pwn$$(); //\u2028$$pwn$$();", input)"#
        ),
        "{tool_file}"
    );
}

#[test]
fn the_render_cache_never_trusts_a_file_that_changed() {
    let (_t, dir) = tmpdir();
    let mut tools = sample();
    tools.push(tool("alpha", "broken", json!("not a schema")));
    tools[0].output_schema = Some(json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}));
    tools[1].output_schema = Some(json!(42));
    let first = generate(&tools, &opts(&dir)).unwrap();
    let pristine = snapshot(&dir);

    // A re-run served from the cache reports exactly what the first run found.
    let again = generate(&tools, &opts(&dir)).unwrap();
    assert_eq!(again.files_written, 0);
    assert_eq!(
        (&again.degraded, &again.warnings, again.with_output_schema),
        (&first.degraded, &first.warnings, first.with_output_schema)
    );
    assert_eq!((first.degraded.len(), first.warnings.len(), first.with_output_schema), (1, 1, 1));

    // A generated file edited by hand (header kept), or deleted, is regenerated.
    let echo = dir.join("servers/alpha/echo.ts");
    let edited = std::fs::read_to_string(&echo).unwrap().replace("message", "msg");
    std::fs::write(&echo, edited).unwrap();
    std::fs::remove_file(dir.join("servers/beta/list.ts")).unwrap();
    let r = generate(&tools, &opts(&dir)).unwrap();
    assert_eq!(r.files_written, 2);
    assert_eq!(snapshot(&dir), pristine);

    // A manifest from another build of agent: everything is re-rendered (and found identical).
    let text = std::fs::read_to_string(dir.join(MANIFEST)).unwrap();
    std::fs::write(dir.join(MANIFEST), text.replace(cache::salt(), "0123")).unwrap();
    let r = generate(&tools, &opts(&dir)).unwrap();
    assert_eq!(r.files_written, 1, "only the manifest (its salt) changes");
    assert_eq!(snapshot(&dir), pristine);
}

#[test]
fn the_cache_is_read_from_the_head_of_the_manifest() {
    let (_t, dir) = tmpdir();
    for tools in [Vec::new(), sample()] {
        generate(&tools, &opts(&dir)).unwrap();
        let text = std::fs::read_to_string(dir.join(MANIFEST)).unwrap();
        let end = text.find(TOOLS_LINE).unwrap();
        let head: cache::Head = serde_json::from_str(&format!("{}\n}}", text[..end].trim_end_matches(','))).unwrap();
        assert_eq!(head.files.len(), tools.len());
        assert_eq!(read_cache(&dir).unwrap().files, head.files);
        let full: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(full["tools"].as_array().unwrap().len(), tools.len());
    }
}

/// A link planted in the tree (`servers/alpha -> elsewhere`) never redirects generation: no file
/// is written or deleted through it, and the report says why.
#[test]
fn generation_never_writes_or_deletes_through_a_linked_directory() {
    let (_t, dir) = tmpdir();
    let outside = dir.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let victim = outside.join("old.ts");
    std::fs::write(&victim, format!("{}\n", render::ts_header(Some("alpha")))).unwrap();
    std::fs::create_dir_all(dir.join("servers")).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("servers/alpha")).unwrap();
    let r = generate(&sample(), &GenerateOptions { clean: true, ..opts(&dir) }).unwrap();
    let names: Vec<String> =
        std::fs::read_dir(&outside).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["old.ts"], "nothing written through the link");
    assert!(victim.exists(), "nothing deleted through the link");
    assert!(r.warnings.iter().any(|w| w.contains("servers/alpha is a symbolic link")), "{:?}", r.warnings);
    assert!(dir.join("servers/beta/index.ts").is_file(), "other servers are generated as usual");
}

#[test]
fn the_readme_lists_skills_escaped_and_refresh_leaves_tool_files_alone() {
    let dir = tempfile::tempdir().unwrap();
    assert!(!refresh_readme(dir.path()).unwrap(), "no tree, nothing to refresh");
    generate(&sample(), &opts(dir.path())).unwrap();
    let skills = dir.path().join("skills");
    std::fs::create_dir_all(&skills).unwrap();
    let hostile = "[click](http://evil) <img src=x> `code` *bold*\nsecond line";
    std::fs::write(
        skills.join("weekly-report.ts"),
        crate::skills::compose("export function weeklyReport() {}", hostile),
    )
    .unwrap();
    std::fs::write(skills.join("a-first.ts"), "export const x = 1;\n").unwrap();
    std::fs::write(skills.join("Not_A_Skill.ts"), "export const y = 1;\n").unwrap();
    let before = snapshot(dir.path());
    assert!(refresh_readme(dir.path()).unwrap());
    let after = snapshot(dir.path());
    let changed: Vec<&String> = after.keys().filter(|k| before.get(*k) != after.get(*k)).collect();
    assert_eq!(changed, ["README.md"], "only the README changes");
    let readme = String::from_utf8(after["README.md"].clone()).unwrap();
    let listed: Vec<&str> = readme.lines().filter(|l| l.starts_with("- `skills/") && !l.contains("<name>")).collect();
    assert_eq!(
        listed,
        [
            "- `skills/a-first.ts` (`x`)",
            "- `skills/weekly-report.ts` (`weeklyReport`): \\[click\\]\\(http://evil\\) \\<img src=x\\> \\`code\\` \\*bold\\*",
        ]
    );
    // Deterministic: the same skills give the same README.
    assert!(refresh_readme(dir.path()).unwrap());
    assert_eq!(snapshot(dir.path()), after);
}

/// A registry entry for `tool` learned from `values` (quality from the default thresholds).
fn learned_entry(tool: &ToolInfo, values: &[serde_json::Value]) -> crate::types::Entry {
    let def = crate::types::definition_hash(serde_json::to_string(tool).unwrap().as_bytes());
    let mut pending = crate::types::Pending::with_key(crate::types::HashKey::new([7; 16]));
    for v in values {
        pending.add(&tool.server, &tool.name, &def, v);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = crate::types::registry_path(dir.path());
    let t = crate::types::Thresholds::default();
    crate::types::Registry::record(&path, &pending, &t, &mut Vec::new()).unwrap();
    let reg = crate::types::Registry::load(&path, &mut Vec::new());
    reg.get(&tool.server, &tool.name, Some(&def)).unwrap().clone()
}

#[test]
fn learned_types_render_by_quality_and_escape_result_text() {
    let (_t, dir) = tmpdir();
    let t = tool("alpha", "hostile", json!({"type": "object"}));
    let evil = "x\"; $$pwn$$(); //\u{2028}*/ $$pwn$$();";
    let values: Vec<serde_json::Value> = (0..120)
        .map(|i| {
            let mut m = serde_json::Map::new();
            m.insert(evil.to_string(), json!(i));
            m.insert("kind".into(), json!(["a\"$$pwn$$()", "b"][i % 2]));
            if i % 3 == 0 {
                m.insert("rare".into(), json!({"deep": [1, 2]}));
            }
            serde_json::Value::Object(m)
        })
        .collect();
    for (n, quality, required) in [(3, "low", false), (40, "medium", false), (120, "high", true)] {
        let entry = learned_entry(&t, &values[..n]);
        assert_eq!(entry.quality.as_str(), quality);
        let mut o = opts(&dir);
        o.learned.insert((t.server.clone(), t.name.clone()), entry);
        generate(std::slice::from_ref(&t), &o).unwrap();
        let text = std::fs::read_to_string(dir.join("servers/alpha/hostile.ts")).unwrap();
        let code = code_only(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert!(!code.contains("$$pwn$$"), "result text escaped into code:\n{text}");
        assert!(!text.contains('\u{2028}'));
        assert!(
            text.contains(&format!("Output type inferred from {n} observed results (quality: {quality}")),
            "{text}"
        );
        assert!(text.contains("Promise<WithHelpers<HostileOutput>>"), "{text}");
        assert_eq!(text.contains("  kind: "), required, "{text}");
        assert!(text.contains("  rare?: {\n"), "{text}");
        assert!(text.contains(if required { "    deep: number[];\n" } else { "    deep?: number[];\n" }), "{text}");
        assert!(!text.contains("any"), "{text}");
        if n >= 20 {
            assert!(
                text.contains(r#"kind: "a\"$$pwn$$()" | "b";"#) || text.contains(r#"kind?: "a\"$$pwn$$()" | "b";"#),
                "{text}"
            );
        }
    }
}

/// A manifest written before enum candidates were hashed copies them in clear: the tool counts as
/// gone up, and its regeneration writes the manifest without them.
#[test]
fn a_manifest_with_plaintext_enum_candidates_is_written_again_without_them() {
    let (_t, dir) = tmpdir();
    let t = tool("alpha", "graph", json!({"type": "object"}));
    let values: Vec<Value> = (0..4).map(|i| json!({"i": i, "name": "n"})).collect();
    let entry = learned_entry(&t, &values);
    let mut o = opts(&dir);
    o.learned.insert((t.server.clone(), t.name.clone()), entry.clone());
    generate(std::slice::from_ref(&t), &o).unwrap();
    // As an earlier agent wrote it: the candidate in clear.
    let path = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&path).unwrap();
    let at = r#""string":{"count":4,"#;
    assert_eq!(text.matches(at).count(), 1, "{text}");
    std::fs::write(&path, text.replace(at, &format!(r#"{at}"values":["Zed-Secret-Value-4711"],"#))).unwrap();
    let mut registry = crate::types::Registry::empty();
    registry.tools.insert(crate::types::key(&t.server, &t.name), entry);
    let (learned, raised) = learned_for_tree(&dir, &registry);
    assert_eq!(raised, ["alpha.graph"]);
    let mut o = opts(&dir);
    o.learned = learned;
    generate(std::slice::from_ref(&t), &o).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("Zed-Secret-Value-4711"), "{text}");
    assert!(learned_for_tree(&dir, &registry).1.is_empty(), "once rewritten, nothing to do");
}

/// server-everything's kind of listing: a resource, a template and a prompt with arguments.
fn offered() -> Primitives {
    let mut resource = rmcp::model::Resource::new("demo://doc/a.md", "a.md");
    resource.description = Some("The first document.\nMore.".into());
    let template = rmcp::model::ResourceTemplate::new("demo://item/{id}", "item");
    let mut prompt = rmcp::model::Prompt::new("greet", Some("Greets someone `by name`"), None);
    let mut who = rmcp::model::PromptArgument::new("who");
    who.required = Some(true);
    prompt.arguments = Some(vec![who, rmcp::model::PromptArgument::new("tone")]);
    BTreeMap::from([("alpha".to_string(), ServerPrimitives::from_lists(&[resource], &[template], &[prompt]))])
}

#[test]
fn the_readme_lists_resources_and_prompts_only_for_servers_that_offer_them_and_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    generate(&sample(), &opts(dir.path())).unwrap();
    let tool_only = snapshot(dir.path());
    // Nothing offered: byte for byte the tree of tools only (README and manifest included).
    let r = generate_with(&sample(), &opts(dir.path()), Some(&Primitives::new())).unwrap();
    assert_eq!(r.files_written, 0);
    assert_eq!(snapshot(dir.path()), tool_only);
    let readme = String::from_utf8(tool_only["README.md"].clone()).unwrap();
    assert!(!readme.contains("Resources and prompts") && !readme.contains("readResource("), "{readme}");

    generate_with(&sample(), &opts(dir.path()), Some(&offered())).unwrap();
    let with = snapshot(dir.path());
    let changed: Vec<&String> = with.keys().filter(|k| tool_only.get(*k) != with.get(*k)).collect();
    assert_eq!(changed, [".agent-manifest.json", "README.md"], "tool files do not change");
    let readme = String::from_utf8(with["README.md"].clone()).unwrap();
    let expected = [
        "`alpha`:",
        "- resource `readResource(\"alpha\", \"demo://doc/a.md\")` (a.md): The first document.",
        "- template `readResource(\"alpha\", \"demo://item/{id}\")` (item)",
        "- prompt `getPrompt(\"alpha\", \"greet\", { \"who\": string, \"tone\"?: string })`: Greets someone \\`by name\\`",
    ];
    for line in expected {
        assert!(readme.lines().any(|l| l == line), "{line:?} missing from\n{readme}");
    }
    assert_eq!(generated_primitives(dir.path()), offered());

    // Kept by everything that renders the tree again without asking the servers.
    assert!(refresh_readme(dir.path()).unwrap());
    generate(&sample(), &opts(dir.path())).unwrap();
    let only_beta = GenerateOptions { only_servers: Some(vec!["beta".into()]), ..opts(dir.path()) };
    generate_with(&sample(), &only_beta, Some(&Primitives::new())).unwrap();
    assert_eq!(snapshot(dir.path()), with);
    // A server that stops offering them loses its lines.
    let only_alpha = GenerateOptions { only_servers: Some(vec!["alpha".into()]), ..opts(dir.path()) };
    generate_with(&sample(), &only_alpha, Some(&Primitives::new())).unwrap();
    assert_eq!(snapshot(dir.path()), tool_only);
}
