//! Deterministic names for the generated tree: server directories, namespace identifiers, tool
//! function/type identifiers and file names.
//!
//! The mapping (documented in docs/generate.md and the generated README.md):
//! - a tool name is split into ASCII letter/digit words (any other character separates words)
//!   and joined in camelCase: `get-file.contents` → `getFileContents`, `GET_ME` → `getMe`;
//!   all-caps words are title-cased (`list_PRs` keeps `PRs`, `API_key` → `apiKey`);
//! - a leading digit gets a `_` prefix (`2fa` → `_2fa`); a name with no letters or digits
//!   becomes `tool`; a JavaScript reserved word (or `callMCPTool`) gets a `_` suffix;
//! - types are the PascalCase of the function plus `Input` / `Output`;
//! - names that still collide within a server (compared case-insensitively, because they are
//!   also file names) get `_2`, `_3`, ... in the order of the original MCP names; `index` is
//!   taken by the server's index file;
//! - a server directory keeps `[A-Za-z0-9_-]` and turns every other character into `_`
//!   (a leading `-` too); collisions, compared case-insensitively, get `_2`, ... in order of
//!   the original server names. Its namespace identifier is the camelCase of the server name.
//!
//! The original MCP names are kept in the calls (`callMCPTool("server", "tool", ...)`) and in
//! the TSDoc; these names only exist on the TypeScript side.

use std::collections::{BTreeMap, HashMap, HashSet};

/// Words that cannot name a function or namespace in an ES module (strict mode, `await`),
/// plus identifiers the generated files themselves use.
const RESERVED: &[&str] = &[
    "arguments",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "eval",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "implements",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "static",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "undefined",
    "var",
    "void",
    "while",
    "with",
    "yield",
    // Used by the generated code itself.
    "callMCPTool",
    "MCPToolError",
    "MCPBridgeError",
];

/// Whether `s` is reserved (a JS reserved word or a name the generated code uses).
pub fn is_reserved(s: &str) -> bool {
    RESERVED.contains(&s)
}

/// ASCII letter/digit runs of `name`; everything else separates words.
fn words(name: &str) -> Vec<&str> {
    name.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect()
}

fn is_all_caps(w: &str) -> bool {
    w.len() > 1 && w.chars().any(|c| c.is_ascii_uppercase()) && !w.chars().any(|c| c.is_ascii_lowercase())
}

/// `first` word of a camelCase name: a leading capital run is lowered (`URLFetch` → `urlFetch`,
/// `GetMe` → `getMe`).
fn lower_first_word(w: &str) -> String {
    if is_all_caps(w) {
        return w.to_ascii_lowercase();
    }
    let run = w.chars().take_while(|c| c.is_ascii_uppercase()).count();
    let lower_n = if run <= 1 || run == w.len() { run } else { run - 1 };
    let (head, tail) = w.split_at(lower_n);
    format!("{}{tail}", head.to_ascii_lowercase())
}

fn capitalize_word(w: &str) -> String {
    let w = if is_all_caps(w) { w.to_ascii_lowercase() } else { w.to_string() };
    let mut chars = w.chars();
    match chars.next() {
        Some(c) => format!("{}{}", c.to_ascii_uppercase(), chars.as_str()),
        None => String::new(),
    }
}

/// camelCase of `name` (ASCII words joined; a leading digit gets `_`), or `fallback` when
/// `name` has no ASCII letters or digits. Reserved words are *not* handled here.
pub fn camel_case(name: &str, fallback: &str) -> String {
    let ws = words(name);
    let Some((first, rest)) = ws.split_first() else {
        return fallback.to_string();
    };
    let mut out = lower_first_word(first);
    for w in rest {
        out.push_str(&capitalize_word(w));
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// PascalCase of an identifier produced by [`camel_case`] (first letter upper-cased).
pub fn pascal_case(ident: &str) -> String {
    let mut chars = ident.chars();
    match chars.next() {
        Some(c) => format!("{}{}", c.to_ascii_uppercase(), chars.as_str()),
        None => String::new(),
    }
}

/// The identifiers and file of one tool inside its server directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolNames {
    /// The exported function, e.g. `getFileContents`.
    pub function: String,
    /// `GetFileContentsInput`.
    pub input_type: String,
    /// `GetFileContentsOutput`.
    pub output_type: String,
    /// `getFileContents.ts`.
    pub file: String,
}

impl ToolNames {
    fn from_function(function: String) -> ToolNames {
        // `delete_` (reserved word) → `DeleteInput`, not `Delete_Input`.
        let base = pascal_case(function.strip_suffix('_').unwrap_or(&function));
        ToolNames {
            input_type: format!("{base}Input"),
            output_type: format!("{base}Output"),
            file: format!("{function}.ts"),
            function,
        }
    }
}

/// Names for every tool of one server, keyed by the original MCP tool name. Deterministic:
/// collisions are resolved in the order of the original names, whatever the input order.
pub fn tool_names<'a>(tools: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, ToolNames> {
    let mut sorted: Vec<&str> = tools.into_iter().collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut used: HashSet<String> = HashSet::new();
    used.insert("index".into());
    let mut out = BTreeMap::new();
    // Where the search for a free suffix resumes, per base: names are never freed, so every
    // smaller suffix is still taken (this keeps thousands of colliding names linear).
    let mut next: HashMap<String, usize> = HashMap::new();
    for name in sorted {
        let base = camel_case(name, "tool");
        let start = next.get(&base).copied().unwrap_or(1);
        let (k, names) = (start..)
            .map(|k| {
                let candidate = if k == 1 { base.clone() } else { format!("{base}_{k}") };
                let function = if is_reserved(&candidate) { format!("{candidate}_") } else { candidate };
                (k, ToolNames::from_function(function))
            })
            .find(|(_, n)| {
                [&n.function, &n.input_type, &n.output_type].iter().all(|s| !used.contains(&s.to_ascii_lowercase()))
            })
            .unwrap_or_else(|| (start, ToolNames::from_function(base.clone())));
        next.insert(base, k + 1);
        for s in [&names.function, &names.input_type, &names.output_type] {
            used.insert(s.to_ascii_lowercase());
        }
        out.insert(name.to_string(), names);
    }
    out
}

/// Where a server's files live and how `index.ts` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerNames {
    /// Directory under `servers/`, e.g. `github-mcp-server`.
    pub dir: String,
    /// Namespace identifier in the top-level `index.ts`, e.g. `githubMcpServer`.
    pub namespace: String,
}

/// The directory-name form of a server name, before collisions are resolved.
pub fn sanitize_dir_name(server: &str) -> String {
    let mut out: String =
        server.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    if out.starts_with('-') {
        out.replace_range(0..1, "_");
    }
    if out.is_empty() {
        out.push_str("server");
    }
    out
}

/// Names for every server, keyed by the original server name (deterministic, unique).
pub fn server_names<'a>(servers: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, ServerNames> {
    let mut sorted: Vec<&str> = servers.into_iter().collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut used_dirs: HashSet<String> = HashSet::new();
    let mut used_ns: HashSet<String> = HashSet::new();
    let mut out = BTreeMap::new();
    for name in sorted {
        let dir_base = sanitize_dir_name(name);
        let dir = unique(&dir_base, |c| !used_dirs.contains(&c.to_ascii_lowercase()));
        used_dirs.insert(dir.to_ascii_lowercase());
        let ns_base = camel_case(name, "server");
        let namespace = unique(&ns_base, |c| !is_reserved(c) && !used_ns.contains(c));
        used_ns.insert(namespace.clone());
        out.insert(name.to_string(), ServerNames { dir, namespace });
    }
    out
}

/// `base`, or `base_2`, `base_3`, ... (a reserved `base` itself becomes `base_`).
fn unique(base: &str, free: impl Fn(&str) -> bool) -> String {
    if free(base) {
        return base.to_string();
    }
    let reserved_form = format!("{base}_");
    if is_reserved(base) && free(&reserved_form) {
        return reserved_form;
    }
    (2..).map(|k| format!("{base}_{k}")).find(|c| free(c)).unwrap_or(reserved_form)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(names: &[&str]) -> Vec<(String, String)> {
        tool_names(names.iter().copied()).into_iter().map(|(k, v)| (k, v.function)).collect()
    }

    #[test]
    fn camel_case_of_typical_tool_names() {
        assert_eq!(camel_case("get-file.contents", "tool"), "getFileContents");
        assert_eq!(camel_case("get_file_contents", "tool"), "getFileContents");
        assert_eq!(camel_case("getFileContents", "tool"), "getFileContents");
        assert_eq!(camel_case("GetMe", "tool"), "getMe");
        assert_eq!(camel_case("GET_ME", "tool"), "getMe");
        assert_eq!(camel_case("URLFetch", "tool"), "urlFetch");
        assert_eq!(camel_case("list_PRs", "tool"), "listPRs");
        assert_eq!(camel_case("API_key", "tool"), "apiKey");
        assert_eq!(camel_case("2fa-verify", "tool"), "_2faVerify");
        assert_eq!(camel_case("--", "tool"), "tool");
        assert_eq!(camel_case("搜索", "tool"), "tool");
        assert_eq!(camel_case("text.upper", "tool"), "textUpper");
    }

    #[test]
    fn tool_names_are_unique_reserved_safe_and_ordered_by_original_name() {
        assert_eq!(
            f(&["get_file", "get-file", "getFile", "delete", "index", "callMCPTool", "9"]),
            vec![
                ("9".into(), "_9".into()),
                ("callMCPTool".into(), "callMCPTool_".into()),
                ("delete".into(), "delete_".into()),
                ("get-file".into(), "getFile".into()),
                ("getFile".into(), "getFile_2".into()),
                ("get_file".into(), "getFile_3".into()),
                ("index".into(), "index_2".into()),
            ]
        );
        // Same result whatever the input order.
        assert_eq!(f(&["getFile", "get_file", "get-file"]), f(&["get-file", "get_file", "getFile"]));
        let n = &tool_names(["delete"])["delete"];
        assert_eq!(
            (n.input_type.as_str(), n.output_type.as_str(), n.file.as_str()),
            ("DeleteInput", "DeleteOutput", "delete_.ts")
        );
    }

    #[test]
    fn thousands_of_colliding_names_stay_unique() {
        let raw: Vec<String> = (1..=3000).map(|i| "é".repeat(i)).collect();
        let names = tool_names(raw.iter().map(String::as_str));
        let files: HashSet<String> = names.values().map(|n| n.file.to_ascii_lowercase()).collect();
        assert_eq!(files.len(), 3000);
        assert_eq!(names["é"].function, "tool");
        assert_eq!(names["éé"].function, "tool_2");
    }

    #[test]
    fn names_differing_only_in_case_get_distinct_files() {
        let names = f(&["foo_bar", "foobar", "FOOBAR"]);
        let lower: HashSet<String> = names.iter().map(|(_, v)| v.to_ascii_lowercase()).collect();
        assert_eq!(lower.len(), 3, "{names:?}");
    }

    #[test]
    fn server_directories_are_sanitised_and_unique() {
        let s = server_names(["github", "GitHub", "my server/1", "-x", "", "class"]);
        assert_eq!(s["github"].dir, "github_2");
        assert_eq!(s["GitHub"].dir, "GitHub");
        assert_eq!(s["my server/1"].dir, "my_server_1");
        assert_eq!(s["-x"].dir, "_x");
        assert_eq!(s[""].dir, "server");
        assert_eq!(s["class"].namespace, "class_");
        assert_eq!(s["my server/1"].namespace, "myServer1");
        assert_eq!(s["GitHub"].namespace, "gitHub");
    }
}
