//! Which MCP servers a script refers to, found without running it: imports of
//! `servers/<dir>/...` inside the workspace (followed through the script's own relative imports),
//! and literal `callMCPTool("<server>", ...)` / `__agentCallTool("<server>", ...)` calls and their
//! resource and prompt peers (`readResource`, `getPrompt`, `listResources`, `listPrompts`); and
//! whether it uses something that spans every server: the tool catalog (`searchTools`,
//! `describeTool`) or `listResources()` / `listPrompts()` without a server.
//!
//! This is a text scan, deliberately forgiving: a match inside a comment only starts a server
//! that was not needed, and a server named at run time is still started on demand by the bridge.
//! It never reads outside the workspace (the entry script aside) and never reads generated
//! server files (their directory already names the server).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::loader::normalize;

/// At most this many workspace files are scanned per script (imports are followed transitively).
const MAX_FILES: usize = 200;
/// Larger files are not scanned (the loader refuses them too).
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// What a script refers to.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ScriptRefs {
    /// Directory names under `<workspace>/servers/` the script imports from.
    pub server_dirs: BTreeSet<String>,
    /// Server names in literal `callMCPTool("...")` / `__agentCallTool("...")` calls (and
    /// `readResource`, `getPrompt`, `listResources`, `listPrompts`).
    pub called_servers: BTreeSet<String>,
    /// The script calls `searchTools(` or `describeTool(` (the catalog of every enabled server),
    /// or `listResources()` / `listPrompts()` with no server (the lists of every enabled server).
    pub uses_catalog: bool,
}

/// Scans `source` (the entry script, living at `entry_path`) and the workspace modules it
/// imports. `workspace` should be absolute.
pub fn scan(source: &str, entry_path: &Path, workspace: &Path) -> ScriptRefs {
    let root = std::fs::canonicalize(workspace).unwrap_or_else(|_| normalize(workspace));
    let servers_dir = root.join("servers");
    let mut refs = ScriptRefs::default();
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    let mut queue: Vec<(PathBuf, String)> = vec![(entry_path.to_path_buf(), source.to_string())];
    while let Some((path, text)) = queue.pop() {
        for name in called_servers(&text) {
            refs.called_servers.insert(name);
        }
        refs.uses_catalog |= uses_catalog(&text) || lists_every_server(&text);
        let base = path.parent().map(Path::to_path_buf).unwrap_or_else(|| root.clone());
        for spec in import_specifiers(&text) {
            if !(spec.starts_with("./") || spec.starts_with("../") || spec.starts_with('/')) {
                continue;
            }
            let target = normalize(&base.join(&spec));
            if let Ok(rest) = target.strip_prefix(&servers_dir) {
                if let Some(dir) = rest.components().next().and_then(|c| c.as_os_str().to_str()) {
                    refs.server_dirs.insert(dir.trim_end_matches(".ts").to_string());
                }
                continue;
            }
            if !target.starts_with(&root) || seen.len() >= MAX_FILES {
                continue;
            }
            let file = [target.clone(), PathBuf::from(format!("{}.ts", target.display())), target.join("index.ts")]
                .into_iter()
                .find(|p| p.is_file());
            let Some(file) = file else { continue };
            // Read only what really is inside the workspace (links resolved on the open file).
            let Ok(opened) = super::confine::open_inside(&root, &file) else { continue };
            let real = opened.real.clone();
            if opened.is_dir() || !seen.insert(real.clone()) {
                continue;
            }
            if let Ok(text) = opened.read_text(MAX_FILE_BYTES) {
                queue.push((real, text));
            }
        }
    }
    refs
}

/// The string literals after `from`, `import` and `import(` (static, side-effect, re-export and
/// dynamic imports).
fn import_specifiers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for keyword in ["from", "import"] {
        let mut at = 0;
        while let Some(pos) = text[at..].find(keyword) {
            let start = at + pos;
            at = start + keyword.len();
            let before_ok = text[..start].chars().next_back().is_none_or(|c| !is_ident(c));
            if !before_ok {
                continue;
            }
            let rest = text[at..].trim_start();
            let rest = rest.strip_prefix('(').map(str::trim_start).unwrap_or(rest);
            if let Some(lit) = string_literal(rest) {
                out.push(lit);
            }
        }
    }
    out
}

/// The globals whose first argument names the server they reach.
const SERVER_FUNCTIONS: [&str; 6] =
    ["callMCPTool", "__agentCallTool", "readResource", "getPrompt", "listResources", "listPrompts"];

/// Server names in `callMCPTool("server"`, `__agentCallTool("server"`, `readResource("server"`,
/// `getPrompt("server"`, `listResources("server"` and `listPrompts("server"` (a type argument such
/// as `callMCPTool<Out>("server"` is skipped).
fn called_servers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for func in SERVER_FUNCTIONS {
        let mut at = 0;
        while let Some(pos) = text[at..].find(func) {
            let start = at + pos;
            at = start + func.len();
            if text[..start].chars().next_back().is_some_and(is_ident) {
                continue;
            }
            let mut rest = text[at..].trim_start();
            if let Some(generic) = rest.strip_prefix('<') {
                let Some(close) = generic.find('>') else { continue };
                rest = generic[close + 1..].trim_start();
            }
            let Some(args) = rest.strip_prefix('(') else { continue };
            if let Some(lit) = string_literal(args.trim_start()) {
                out.push(lit);
            }
        }
    }
    out
}

/// Whether `text` calls `searchTools(` or `describeTool(` (not as part of a longer name).
fn uses_catalog(text: &str) -> bool {
    ["searchTools", "describeTool"].iter().any(|func| {
        text.match_indices(func).any(|(start, _)| {
            let before = text[..start].chars().next_back().is_some_and(is_ident);
            let rest = text[start + func.len()..].trim_start();
            !before && (rest.starts_with('(') || rest.starts_with('<'))
        })
    })
}

/// Whether `text` calls `listResources()` or `listPrompts()` with no argument (every server).
fn lists_every_server(text: &str) -> bool {
    ["listResources", "listPrompts"].iter().any(|func| {
        text.match_indices(func).any(|(start, _)| {
            let before = text[..start].chars().next_back().is_some_and(is_ident);
            let rest = text[start + func.len()..].trim_start();
            !before && rest.strip_prefix('(').is_some_and(|args| args.trim_start().starts_with(')'))
        })
    })
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// The content of a '...', "..." or `...` literal at the start of `s` (no escapes, no `${`).
fn string_literal(s: &str) -> Option<String> {
    let quote = s.chars().next().filter(|c| matches!(c, '"' | '\'' | '`'))?;
    let body = &s[1..];
    let end = body.find(quote)?;
    let lit = &body[..end];
    (!lit.contains('\\') && !lit.contains("${") && !lit.contains('\n')).then(|| lit.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_imports_and_literal_calls() {
        let src = r#"
            import { echo } from "./servers/fixture/index.ts";
            import * as gh from './servers/github/index.ts';
            export { x } from "./lib.ts";
            const m = await import("./servers/dyn/echo.ts");
            import "./side.ts";
            const r = await callMCPTool<{sum: number}>("everything", "add", {});
            await __agentCallTool('other', "t", {});
            myCallMCPTool("nope", "x");
            callMCPTool(server, "x");
        "#;
        let specs = import_specifiers(src);
        for s in [
            "./servers/fixture/index.ts",
            "./servers/github/index.ts",
            "./lib.ts",
            "./servers/dyn/echo.ts",
            "./side.ts",
        ] {
            assert!(specs.contains(&s.to_string()), "{s} missing from {specs:?}");
        }
        let mut called = called_servers(src);
        called.sort();
        assert_eq!(called, vec!["everything", "other"]);
        assert!(!uses_catalog(src));
        assert!(uses_catalog("const r = await searchTools (\"logs\", { limit: 3 });"));
        assert!(uses_catalog("console.log(await describeTool('a.b'))"));
        assert!(!uses_catalog("mySearchTools('x'); const describeTools = 1; searchToolsX()"));
    }

    #[test]
    fn resource_and_prompt_globals_name_their_server_or_every_server() {
        let src = r#"
            const r = await readResource("docs", "file:///a.md");
            const p = await getPrompt('prompts', "greet", { who: "x" });
            await listResources("listed");
            await listPrompts(`plisted`);
            myReadResource("nope", "x");
        "#;
        let mut called = called_servers(src);
        called.sort();
        assert_eq!(called, vec!["docs", "listed", "plisted", "prompts"]);
        assert!(!lists_every_server(src));
        assert!(lists_every_server("const all = await listResources();"));
        assert!(lists_every_server("await listPrompts( )"));
        assert!(!lists_every_server("await myListPrompts(); listResources(name)"));
        let dir = tempfile::tempdir().unwrap();
        let refs = scan("console.log(await listPrompts());", &dir.path().join("main.ts"), dir.path());
        assert!(refs.uses_catalog && refs.called_servers.is_empty());
    }

    #[test]
    fn follows_relative_imports_inside_the_workspace_only() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("lib")).unwrap();
        std::fs::write(
            ws.join("lib/util.ts"),
            "import { a } from '../servers/alpha/index.ts';\ncallMCPTool('beta', 't');",
        )
        .unwrap();
        std::fs::write(dir.path().join("outside.ts"), "import '../ws/servers/never/index.ts';").unwrap();
        let refs = scan(
            "import { u } from './lib/util.ts';\nimport '../outside.ts';\nimport './servers/gamma/x.ts';",
            &ws.join("main.ts"),
            &ws,
        );
        assert_eq!(refs.server_dirs.iter().cloned().collect::<Vec<_>>(), vec!["alpha", "gamma"]);
        assert_eq!(refs.called_servers.iter().cloned().collect::<Vec<_>>(), vec!["beta"]);
    }
}
