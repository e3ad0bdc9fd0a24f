//! Code mode, model side: the `code_execution` tool whose description teaches the contract, the
//! read-only discovery tools over the generated tree (`list_files`, `read_file`, `grep_files`),
//! and the system prompt that names the servers and where their API lives.
//!
//! Discovery is confined to the tree: paths are relative to its root, `..` and absolute paths are
//! refused, every path touched (walks included) is checked where its symlinks really lead and
//! must stay inside, and `logs/` (server stderr) and dot-files (the generator's manifest) are not
//! part of it. MCP tool definitions are never sent in code mode.

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

use super::provider::ToolSpec;
pub use crate::codegen::ServerEntry;
use crate::codemode::tool::LimitsText;
use crate::runtime::confine::{self, Confined, Refusal};

pub const CODE_EXECUTION: &str = "code_execution";
pub const LIST_FILES: &str = "list_files";
pub const READ_FILE: &str = "read_file";
pub const GREP_FILES: &str = "grep_files";

/// Most bytes one `read_file` returns; the model pages with `offset`/`limit`.
const MAX_READ_BYTES: usize = 48 * 1024;
/// Most lines one `grep_files` returns.
const MAX_GREP_RESULTS: usize = 200;
/// Most entries one `list_files` returns.
const MAX_LIST_ENTRIES: usize = 1000;
/// Largest file `read_file` and `grep_files` read (generated files are a few KB).
const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// `code_execution` plus the discovery tools. Descriptions are terse on purpose: they are sent
/// with every request, and code mode's point is a small fixed cost.
pub fn tool_specs(limits: &LimitsText) -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: CODE_EXECUTION.into(),
            description: crate::codemode::tool::description(limits),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "code": {
                        "type": "string",
                        "description": crate::codemode::tool::CODE_ARG_DESCRIPTION
                    },
                    "description": {"type": "string", "description": "What the code does, in a few words."}
                },
                "required": ["code"]
            }),
        },
        ToolSpec {
            name: LIST_FILES.into(),
            description: "List files of the generated TypeScript API tree (read-only); directories end in `/`. \
                          Start with `servers/`."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Directory relative to the tree root (default: root)."},
                    "recursive": {"type": "boolean"}
                }
            }),
        },
        ToolSpec {
            name: READ_FILE.into(),
            description: "Read a file of the API tree: `servers/<server>/index.ts` lists a server's tools, \
                          `servers/<server>/<tool>.ts` has a tool's types and docs. Read only what you need."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Relative to the tree root."},
                    "offset": {"type": "integer", "description": "First line (1-based)."},
                    "limit": {"type": "integer", "description": "Number of lines."}
                },
                "required": ["path"]
            }),
        },
        ToolSpec {
            name: GREP_FILES.into(),
            description: "Search the API tree with a case-insensitive regular expression; returns `path:line: text` \
                          per matching line."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string"},
                    "path": {"type": "string", "description": "File or directory to search (default: whole tree)."},
                    "max_results": {"type": "integer", "description": "Default 50."}
                },
                "required": ["pattern"]
            }),
        },
    ]
}

/// The built-in system prompt of code mode.
pub fn system_prompt(tree: &Path, servers: &[ServerEntry]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "You complete tasks by writing TypeScript that calls MCP tools through a generated API, and running it with \
         the `{CODE_EXECUTION}` tool."
    );
    let _ = writeln!(s, "\nThe API tree is at {} (scripts run at its root). Servers:", tree.display());
    if servers.is_empty() {
        let _ = writeln!(s, "  (none: no MCP server is configured)");
    }
    for e in servers {
        s.push_str(&server_line(e));
    }
    let _ = writeln!(
        s,
        "\nTo find tools, search first: run `console.log(await searchTools(\"what you need\", {{ limit: 5 }}))` with \
         `{CODE_EXECUTION}`, then `console.log(await describeTool(\"server.tool\"))` for the exact types of the \
         ones you will use. servers/<server>/index.ts (one line per tool) and \
         `{GREP_FILES}` work too. Do the work in as few `{CODE_EXECUTION}` runs as you can, print only what you need, \
         and give the final answer as plain text without calling a tool."
    );
    s
}

/// One server's line in the system prompt.
pub fn server_line(e: &ServerEntry) -> String {
    let plural = if e.tools == 1 { "" } else { "s" };
    if e.names.dir == e.name {
        format!("  servers/{}/ ({} tool{plural})\n", e.names.dir, e.tools)
    } else {
        format!("  servers/{}/ (MCP server `{}`, {} tool{plural})\n", e.names.dir, e.name, e.tools)
    }
}

/// The discovery tools over one tree.
///
/// Every path they touch is opened through `runtime::confine` and used only where it really is
/// part of the tree (links resolved): inside it, not under `logs/`, no dot-file on the way. Walks
/// (`list_files` with `recursive`, `grep_files`) follow a link only when it leads inside the tree
/// and enter each real directory once, so a link to an ancestor cannot loop; links leading out
/// are left out of listings and searches.
#[derive(Debug, Clone)]
pub struct Discovery {
    root: PathBuf,
}

/// One entry met by a walk.
struct Entry {
    /// The path as shown: under the tree root, through the links the walk followed.
    shown: PathBuf,
    /// Where it really is, inside the tree.
    real: PathBuf,
    dir: bool,
    len: u64,
}

impl Discovery {
    pub fn new(root: &Path) -> Discovery {
        Discovery { root: std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf()) }
    }

    /// Runs one discovery tool; `Err` is an error result for the model.
    pub fn call(&self, tool: &str, input: &Value) -> Result<String, String> {
        let s = |k: &str| input.get(k).and_then(Value::as_str);
        let n = |k: &str| input.get(k).and_then(Value::as_u64);
        match tool {
            LIST_FILES => {
                self.list(s("path").unwrap_or("."), input.get("recursive").and_then(Value::as_bool) == Some(true))
            }
            READ_FILE => self.read(s("path").ok_or("`path` is required")?, n("offset"), n("limit")),
            GREP_FILES => self.grep(
                s("pattern").ok_or("`pattern` is required")?,
                s("path").unwrap_or("."),
                n("max_results").map(|m| m as usize).unwrap_or(50).clamp(1, MAX_GREP_RESULTS),
            ),
            other => Err(format!("unknown discovery tool `{other}`")),
        }
    }

    /// Opens a path the model gave: relative, inside the tree, not in `logs/` or a dot-file,
    /// neither as written nor where its links lead. Returns the path as shown and the open file.
    fn resolve(&self, rel: &str) -> Result<(PathBuf, Confined), String> {
        let p = Path::new(rel.trim());
        let mut clean = PathBuf::new();
        for c in p.components() {
            match c {
                Component::CurDir => {}
                Component::Normal(x) => clean.push(x),
                Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                    return Err(format!(
                        "`{rel}` is outside the API tree: use a path relative to its root, without `..`"
                    ));
                }
            }
        }
        if let Some(why) = hidden(&clean) {
            return Err(format!("`{rel}` is not part of the API tree{why}"));
        }
        let shown = self.root.join(&clean);
        let opened = self.open(&shown).map_err(|r| match r {
            Refusal::Missing(_) => format!("`{rel}` does not exist in the API tree"),
            Refusal::Outside => format!("`{rel}` is outside the API tree"),
            Refusal::Special => format!("`{rel}` is not a regular file or directory"),
        })?;
        Ok((shown, opened))
    }

    /// Opens `path` if it really is part of the tree: inside it and, links resolved, neither
    /// under `logs/` nor a dot-file.
    fn open(&self, path: &Path) -> Result<Confined, Refusal> {
        let opened = confine::open_inside(&self.root, path)?;
        match opened.real.strip_prefix(&self.root) {
            Ok(rel) if hidden(rel).is_none() => Ok(opened),
            _ => Err(Refusal::Outside),
        }
    }

    fn rel<'a>(&self, p: &'a Path) -> std::borrow::Cow<'a, str> {
        p.strip_prefix(&self.root).unwrap_or(p).to_string_lossy()
    }

    /// The entries of a directory that are part of the tree, each opened (and closed again) to
    /// learn where it really is; links leading out, broken links and special files are skipped.
    fn entries(&self, shown: &Path, dir: &Confined) -> Vec<Entry> {
        let Ok(names) = dir.names() else { return Vec::new() };
        names
            .into_iter()
            .filter(|name| hidden(shown.join(name).strip_prefix(&self.root).unwrap_or(Path::new(""))).is_none())
            .filter_map(|name| {
                let opened = self.open(&dir.real.join(&name)).ok()?;
                Some(Entry {
                    shown: shown.join(&name),
                    dir: opened.is_dir(),
                    len: opened.meta.len(),
                    real: opened.real,
                })
            })
            .collect()
    }

    /// Walks below `start` (depth first; the whole subtree when `recursive`), calling `visit` for
    /// each entry until it returns false. Each real directory is entered once.
    fn walk(&self, shown: PathBuf, start: Confined, recursive: bool, mut visit: impl FnMut(&Entry) -> bool) {
        let mut entered = std::collections::HashSet::new();
        entered.insert(start.real.clone());
        let mut stack = vec![(shown, start.real.clone())];
        let mut first = Some(start);
        while let Some((shown, real)) = stack.pop() {
            // Opened when its turn comes (and checked again), so pending directories hold no
            // descriptor.
            let dir = match first.take() {
                Some(dir) => dir,
                None => match self.open(&real) {
                    Ok(dir) if dir.is_dir() => dir,
                    _ => continue,
                },
            };
            let entries = self.entries(&shown, &dir);
            drop(dir);
            for e in entries.into_iter().rev() {
                if !visit(&e) {
                    return;
                }
                if recursive && e.dir && entered.insert(e.real.clone()) {
                    stack.push((e.shown, e.real));
                }
            }
        }
    }

    fn list(&self, rel: &str, recursive: bool) -> Result<String, String> {
        let (shown, dir) = self.resolve(rel)?;
        if !dir.is_dir() {
            return Err(format!("`{rel}` is a file; use {READ_FILE} to read it"));
        }
        let mut lines = Vec::new();
        let mut more = false;
        self.walk(shown, dir, recursive, |e| {
            if lines.len() >= MAX_LIST_ENTRIES {
                more = true;
                return false;
            }
            if e.dir {
                lines.push(format!("{}/", self.rel(&e.shown)));
            } else {
                lines.push(format!("{}  ({} B)", self.rel(&e.shown), e.len));
            }
            true
        });
        lines.sort();
        if lines.is_empty() {
            return Ok(format!("`{rel}` is empty"));
        }
        if more {
            lines.push(format!("[more than {MAX_LIST_ENTRIES} entries; list a subdirectory]"));
        }
        Ok(lines.join("\n"))
    }

    fn read(&self, rel: &str, offset: Option<u64>, limit: Option<u64>) -> Result<String, String> {
        let (_, file) = self.resolve(rel)?;
        if file.is_dir() {
            return Err(format!("`{rel}` is a directory; use {LIST_FILES} to list it"));
        }
        let text = file.read_text(MAX_FILE_BYTES).map_err(|e| format!("cannot read `{rel}`: {e}"))?;
        if text.is_empty() {
            return Ok(format!("`{rel}` is empty"));
        }
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let total = lines.len();
        let start = offset.unwrap_or(1).max(1) as usize - 1;
        if start >= total {
            return Err(format!("`{rel}` has only {total} lines"));
        }
        let want = limit.map(|l| l as usize).unwrap_or(usize::MAX);
        let mut out = String::new();
        let mut end = start;
        for line in lines.iter().skip(start).take(want) {
            if out.len() + line.len() > MAX_READ_BYTES {
                break;
            }
            out.push_str(line);
            end += 1;
        }
        if end < total {
            let _ = write!(
                out,
                "{}[lines {}-{end} of {total}; call {READ_FILE} with offset {} for more]",
                if out.ends_with('\n') || out.is_empty() { "" } else { "\n" },
                start + 1,
                end + 1
            );
        }
        Ok(out)
    }

    fn grep(&self, pattern: &str, rel: &str, max: usize) -> Result<String, String> {
        let re = regex::RegexBuilder::new(pattern)
            .case_insensitive(true)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| format!("invalid pattern: {e}"))?;
        let (shown, start) = self.resolve(rel)?;
        // (shown, real) of every file to search: each real file once, under its own path when the
        // walk met it there too, else under the first link that led to it.
        let mut files: Vec<(PathBuf, PathBuf)> = Vec::new();
        if start.is_dir() {
            let mut by_real: std::collections::BTreeMap<PathBuf, PathBuf> = std::collections::BTreeMap::new();
            self.walk(shown, start, true, |e| {
                if !e.dir && (e.shown == e.real || !by_real.contains_key(&e.real)) {
                    by_real.insert(e.real.clone(), e.shown.clone());
                }
                true
            });
            files = by_real.into_iter().map(|(real, shown)| (shown, real)).collect();
        } else {
            files.push((shown, start.real.clone()));
        }
        files.sort();
        let mut out = Vec::new();
        let mut total = 0usize;
        for (shown, real) in files {
            // Opened again through the check: what is read is what was listed, or nothing.
            let Ok(file) = self.open(&real) else { continue };
            let Ok(text) = file.read_text(MAX_FILE_BYTES) else { continue };
            for (i, line) in text.lines().enumerate() {
                if re.is_match(line) {
                    total += 1;
                    if out.len() < max {
                        let line = super::provider::short(line.trim(), 300);
                        out.push(format!("{}:{}: {line}", self.rel(&shown), i + 1));
                    }
                }
            }
        }
        if out.is_empty() {
            return Ok(format!("no match for `{pattern}`"));
        }
        if total > out.len() {
            out.push(format!("[{} more matches; narrow the pattern or the path]", total - out.len()));
        }
        Ok(out.join("\n"))
    }
}

/// Why a path relative to the tree root is not part of the tree: a dot-file or dot-directory
/// anywhere on it (the generator's manifest), or the top-level `logs/` (server stderr).
fn hidden(rel: &Path) -> Option<&'static str> {
    for (i, c) in rel.components().enumerate() {
        let Component::Normal(name) = c else { return Some("") };
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            return Some("");
        }
        if i == 0 && name == "logs" {
            return Some(" (logs/ holds server logs)");
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        fill_tree(d.path());
        d
    }

    fn fill_tree(root: &Path) {
        let w = |p: &str, s: &str| {
            let f = root.join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, s).unwrap();
        };
        w("client.ts", "export class MCPToolError extends Error {}\n");
        w("servers/fixture/index.ts", "// echo — Echo the message\nexport { echo } from \"./echo.ts\";\n");
        w(
            "servers/fixture/echo.ts",
            "export async function echo(input: EchoInput) {}\nexport interface EchoInput { message: string }\n",
        );
        w("logs/fixture.stderr.log", "secret token in a log\n");
        w(".agent-manifest.json", "{}");
    }

    /// A tree at `<tmp>/ws` next to files it must never show, with links of every kind.
    fn tree_with_links() -> (tempfile::TempDir, PathBuf) {
        use std::os::unix::fs::symlink;
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("ws");
        fill_tree(&root);
        std::fs::write(outer.path().join("agent.yaml"), "api_key: outside-secret\n").unwrap();
        std::fs::create_dir_all(outer.path().join("elsewhere")).unwrap();
        std::fs::write(outer.path().join("elsewhere/passwd"), "root:x:0:0:outside-secret\n").unwrap();
        let link = |target: &str, at: &str| symlink(target, root.join(at)).unwrap();
        link("/etc/passwd", "pw.ts");
        link("../../../elsewhere/passwd", "servers/fixture/passwd.ts");
        link("..", "up");
        link("../../elsewhere", "servers/escape");
        link("..", "servers/loop");
        link(".", "servers/fixture/self");
        link("../logs", "servers/logs_alias");
        link("../.agent-manifest.json", "servers/manifest.ts");
        link("fixture/echo.ts", "servers/alias.ts");
        link("nowhere.ts", "servers/broken.ts");
        (outer, root)
    }

    #[test]
    fn lists_reads_and_greps_inside_the_tree() {
        let t = tree();
        let d = Discovery::new(t.path());
        let root = d.call(LIST_FILES, &json!({})).unwrap();
        assert_eq!(root, "client.ts  (43 B)\nservers/");
        let all = d.call(LIST_FILES, &json!({"path": "servers", "recursive": true})).unwrap();
        assert!(all.contains("servers/fixture/echo.ts"), "{all}");
        let idx = d.call(READ_FILE, &json!({"path": "./servers/fixture/index.ts"})).unwrap();
        assert!(idx.starts_with("// echo — Echo"));
        let part = d.call(READ_FILE, &json!({"path": "servers/fixture/echo.ts", "offset": 2, "limit": 1})).unwrap();
        assert_eq!(part, "export interface EchoInput { message: string }\n");
        let first = d.call(READ_FILE, &json!({"path": "servers/fixture/echo.ts", "limit": 1})).unwrap();
        assert!(first.ends_with("[lines 1-1 of 2; call read_file with offset 2 for more]"), "{first}");
        let hits = d.call(GREP_FILES, &json!({"pattern": "ECHO\\b.*input"})).unwrap();
        assert_eq!(hits, "servers/fixture/echo.ts:1: export async function echo(input: EchoInput) {}");
        assert_eq!(d.call(GREP_FILES, &json!({"pattern": "secret"})).unwrap(), "no match for `secret`");
    }

    #[test]
    fn refuses_paths_outside_the_tree() {
        let t = tree();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.ts"), "outside").unwrap();
        std::os::unix::fs::symlink(outside.path(), t.path().join("servers/escape")).unwrap();
        let d = Discovery::new(t.path());
        for (tool, args) in [
            (READ_FILE, json!({"path": "../x.ts"})),
            (READ_FILE, json!({"path": "/etc/passwd"})),
            (READ_FILE, json!({"path": "servers/escape/x.ts"})),
            (READ_FILE, json!({"path": "logs/fixture.stderr.log"})),
            (READ_FILE, json!({"path": ".agent-manifest.json"})),
            (LIST_FILES, json!({"path": "logs"})),
            (GREP_FILES, json!({"pattern": "x", "path": "servers/../../"})),
        ] {
            let e = d.call(tool, &args).unwrap_err();
            assert!(e.contains("outside the API tree") || e.contains("not part of the API tree"), "{tool} {args}: {e}");
        }
        assert!(d.call(GREP_FILES, &json!({"pattern": "("})).unwrap_err().starts_with("invalid pattern"));
        assert!(d.call(READ_FILE, &json!({"path": "nope.ts"})).unwrap_err().contains("does not exist"));
    }

    #[test]
    fn walks_never_follow_links_out_of_the_tree_and_never_loop() {
        let (_outer, root) = tree_with_links();
        let d = Discovery::new(&root);
        let leaks = |what: &str, text: &str| {
            for needle in ["root:x", "outside-secret", "agent.yaml", "elsewhere", "secret token", "pw.ts", "passwd"] {
                assert!(!text.contains(needle), "{what} leaked {needle:?}:\n{text}");
            }
        };
        let all = d.call(LIST_FILES, &json!({"recursive": true})).unwrap();
        leaks("list_files recursive", &all);
        for hidden in ["up/", "escape", "logs_alias", "manifest.ts", "broken.ts"] {
            assert!(!all.contains(hidden), "{hidden} listed:\n{all}");
        }
        // Links that stay inside are followed (a link to an ancestor is listed, entered once).
        assert!(all.contains("servers/alias.ts  (95 B)"), "{all}");
        assert!(all.contains("servers/loop/"), "{all}");
        assert!(all.lines().count() < 40, "{all}");
        for pattern in ["root", "secret", "api_key", "x:0:0", "."] {
            let hits = d.call(GREP_FILES, &json!({"pattern": pattern, "max_results": 200})).unwrap();
            leaks(&format!("grep_files {pattern}"), &hits);
        }
        // A file met through a link and at its own path is searched once, under its own path.
        let echo = d.call(GREP_FILES, &json!({"pattern": "interface EchoInput"})).unwrap();
        assert_eq!(echo, "servers/fixture/echo.ts:2: export interface EchoInput { message: string }");
        let echo = d.call(GREP_FILES, &json!({"pattern": "interface EchoInput", "path": "servers/alias.ts"})).unwrap();
        assert_eq!(echo, "servers/alias.ts:2: export interface EchoInput { message: string }");
        for path in ["servers", "servers/fixture", "servers/loop", "servers/fixture/self"] {
            let listed = d.call(LIST_FILES, &json!({"path": path, "recursive": true})).unwrap();
            leaks(&format!("list_files {path}"), &listed);
            let hits = d.call(GREP_FILES, &json!({"pattern": "root|secret", "path": path})).unwrap();
            leaks(&format!("grep_files in {path}"), &hits);
        }
        for path in [
            "pw.ts",
            "up/agent.yaml",
            "servers/fixture/passwd.ts",
            "servers/escape/passwd",
            "servers/logs_alias/fixture.stderr.log",
            "servers/manifest.ts",
            "servers/loop/logs/fixture.stderr.log",
        ] {
            let e = d.call(READ_FILE, &json!({"path": path})).unwrap_err();
            assert!(e.contains("outside the API tree") || e.contains("not part of the API tree"), "{path}: {e}");
            let e = d.call(GREP_FILES, &json!({"pattern": ".", "path": path})).unwrap_err();
            assert!(e.contains("outside the API tree") || e.contains("not part of the API tree"), "{path}: {e}");
        }
        assert_eq!(
            d.call(READ_FILE, &json!({"path": "servers/alias.ts", "limit": 1})).unwrap(),
            "export async function echo(input: EchoInput) {}\n[lines 1-1 of 2; call read_file with offset 2 for more]"
        );
    }

    #[test]
    fn prompt_names_servers_and_the_tree() {
        let p = system_prompt(
            Path::new("/w/.kodelet/mcp"),
            &[ServerEntry {
                name: "my-gh".into(),
                names: crate::codegen::ServerNames { dir: "myGh".into(), namespace: "myGh".into() },
                tools: 117,
            }],
        );
        assert!(p.contains("/w/.kodelet/mcp"));
        assert!(p.contains("servers/myGh/ (MCP server `my-gh`, 117 tools)"));
        let specs = tool_specs(&LimitsText {
            timeout: "30s".into(),
            memory_mb: 256,
            max_output: "100 KB".into(),
            sessions: crate::codemode::tool::Sessions::Run,
        });
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, [CODE_EXECUTION, LIST_FILES, READ_FILE, GREP_FILES]);
        for needle in [
            "./servers/<server>/index.ts",
            "Promise.all",
            "MCPToolError",
            "try/catch",
            "30s wall-clock",
            "searchTools(query, { limit })",
            "describeTool(\"server.tool\")",
        ] {
            assert!(specs[0].description.contains(needle), "{needle}");
        }
        assert!(
            p.contains("search first: run `console.log(await searchTools(\"what you need\", { limit: 5 }))`"),
            "{p}"
        );
    }
}
