//! Keeps the layering of `src/` true, as ARCHITECTURE.md states it: its "Layers" table (one row
//! per top-level module: its layer and the modules it knows) is read here, never copied. Fails
//! when a module uses a module of its own or a higher layer (which also rules out two modules
//! importing each other), when a module uses one its row does not list or its row lists one it
//! does not use (the doc is exact), and on a cycle between files of one module (`a.rs` uses
//! `b.rs`, which uses `a.rs` back). Lower layers learn about higher ones only through traits or
//! events they define themselves.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One row of the table: the module's layer and the modules it knows.
struct Row {
    layer: u32,
    knows: BTreeSet<String>,
}

/// The "Layers" table of ARCHITECTURE.md: `| `module` | layer | `a`, `b` (or nothing) |`.
fn layer_table() -> BTreeMap<String, Row> {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md")).unwrap();
    let section = doc.split("\n## Layers\n").nth(1).expect("ARCHITECTURE.md has a \"## Layers\" section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut rows = BTreeMap::new();
    let mut in_table = false;
    for line in section.lines() {
        let line = line.trim();
        if in_table && !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells == ["module", "layer", "knows"] {
            in_table = true;
            continue;
        }
        if !in_table || cells.len() != 3 || cells[0].starts_with("---") {
            continue;
        }
        let module = cells[0].trim_matches('`').to_string();
        let layer = cells[1].parse().unwrap_or_else(|_| panic!("layer of `{module}` is not a number: {}", cells[1]));
        let knows = backticked(cells[2]);
        assert!(
            !knows.is_empty() || cells[2].starts_with("nothing"),
            "the knows column of `{module}` names no module in backticks and is not `nothing`: {}",
            cells[2]
        );
        rows.insert(module, Row { layer, knows });
    }
    assert!(rows.len() > 5, "the layer table of ARCHITECTURE.md was not found or is nearly empty");
    rows
}

/// The names in backticks of a table cell.
fn backticked(cell: &str) -> BTreeSet<String> {
    cell.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a Rust file without comments, string literals and char literals (so doc links
/// and messages that mention `crate::x` do not count).
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'r' if matches!(b.get(i + 1), Some(b'"') | Some(b'#')) && (i == 0 || !is_ident(b[i - 1])) => {
                // Raw string: r"..." or r#"..."#.
                let mut j = i + 1;
                let mut hashes = 0;
                while b.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                j += 1;
                let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
                while j < b.len() && !b[j..].starts_with(&close) {
                    j += 1;
                }
                i = j + close.len();
                out.push_str("\"\"");
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            b'\'' => {
                // A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a): skip only the former.
                let rest = &b[i + 1..];
                let len = if rest.first() == Some(&b'\\') {
                    rest.iter().position(|&c| c == b'\'').map(|p| p + 1)
                } else {
                    let ch_len = std::str::from_utf8(&rest[..rest.len().min(4)])
                        .map(|s| s.chars().next().map_or(1, char::len_utf8))
                        .unwrap_or(1);
                    (rest.get(ch_len) == Some(&b'\'')).then_some(ch_len + 1)
                };
                match len {
                    Some(n) => {
                        i += n + 1;
                        out.push_str("' '");
                    }
                    None => {
                        out.push('\'');
                        i += 1;
                    }
                }
            }
            c => {
                out.push(c as char);
                i += 1;
            }
        }
    }
    out
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The top-level modules that `code` names after `crate::`, including those inside
/// `crate::{a::X, b}` groups.
fn referenced_modules(code: &str) -> Vec<String> {
    paths_after(code, "crate")
}

/// The first names of the paths that start with `prefix::` in `code` (`prefix::a::X` → `a`,
/// `prefix::{a::X, b}` → `a`, `b`); `prefix` must not end another name or path.
fn paths_after(code: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(pos) = code[from..].find(prefix) {
        let at = from + pos;
        from = at + prefix.len();
        if at > 0 && (is_ident(bytes[at - 1]) || bytes[at - 1] == b'$' || bytes[at - 1] == b':') {
            continue;
        }
        let rest = code[at + prefix.len()..].trim_start();
        let Some(rest) = rest.strip_prefix("::") else { continue };
        out.extend(heads(rest.trim_start()));
    }
    out.retain(|m| !m.is_empty() && m != "self");
    out
}

/// The first names of one path's tail: `a::X` → `a`, `{a::X, b}` → `a`, `b`.
fn heads(rest: &str) -> Vec<String> {
    let Some(group) = rest.strip_prefix('{') else { return vec![first_ident(rest)] };
    // Top-level names of the group: split on commas at brace depth 0.
    let mut out = Vec::new();
    let mut depth = 0;
    let mut item = String::new();
    for c in group.chars() {
        match c {
            '{' => {
                depth += 1;
                item.push(c);
            }
            '}' if depth == 0 => {
                out.push(first_ident(&item));
                break;
            }
            '}' => {
                depth -= 1;
                item.push(c);
            }
            ',' if depth == 0 => {
                out.push(first_ident(&item));
                item.clear();
            }
            _ => item.push(c),
        }
    }
    out
}

fn first_ident(s: &str) -> String {
    s.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
}

/// The top-level module a file under `src/` belongs to (`None` for lib.rs, main.rs, bin/).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main" | "bin")).then(|| name.to_string())
}

/// (from, to) → the files of `from` that use `to`.
type Edges = BTreeMap<(String, String), Vec<String>>;

/// Every `crate::<module>` reference between top-level modules, and the modules seen.
fn module_edges(src: &Path) -> (Edges, BTreeSet<String>) {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut edges = Edges::new();
    let mut modules = BTreeSet::new();
    for file in &files {
        let Some(module) = module_of(src, file) else { continue };
        modules.insert(module.clone());
        let text = std::fs::read_to_string(file).unwrap();
        for used in referenced_modules(&code_only(&text)) {
            if used != module {
                let at = file.display().to_string();
                let at = at.rsplit("/src/").next().unwrap_or(&at).to_string();
                edges.entry((module.clone(), used)).or_default().push(at);
            }
        }
    }
    (edges, modules)
}

#[test]
fn modules_use_only_lower_layers_and_exactly_what_the_table_says() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let table = layer_table();
    let (edges, modules) = module_edges(&src);
    let mut problems = Vec::new();
    for m in &modules {
        if !table.contains_key(m) {
            problems.push(format!("`{m}` has no row in ARCHITECTURE.md's layer table"));
        }
    }
    for m in table.keys() {
        if !modules.contains(m) {
            problems.push(format!("the layer table names `{m}`, which is not a module of src/"));
        }
    }
    for ((from, to), files) in &edges {
        let (Some(f), Some(t)) = (table.get(from), table.get(to)) else {
            problems.push(format!("{from} -> {to}: not both in the layer table ({})", files[0]));
            continue;
        };
        if t.layer >= f.layer {
            problems.push(format!("{from} (layer {}) uses {to} (layer {}) in {}", f.layer, t.layer, files.join(", ")));
        }
        if !f.knows.contains(to) {
            problems.push(format!("{from} uses {to} (in {}), which its row's knows column does not list", files[0]));
        }
    }
    for (from, row) in &table {
        for to in &row.knows {
            if !edges.contains_key(&(from.clone(), to.clone())) {
                problems.push(format!("the row of `{from}` says it knows `{to}`, but no file of {from} uses it"));
            }
        }
    }
    assert!(problems.is_empty(), "the layer table and src/ disagree:\n  {}", problems.join("\n  "));
    // The check sees the edges it should (a parser that found nothing would pass every tree).
    assert!(edges.contains_key(&("cli".to_string(), "codemode".to_string())), "{:?}", edges.keys());
    assert!(edges.contains_key(&("codemode".to_string(), "runtime".to_string())), "{:?}", edges.keys());
}

/// Files of a module directory that are test modules (`#[cfg(test)]` then `mod x;`, maybe with
/// `#[path = "..."]`): they use what they test, which never uses them back.
fn test_files(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        let mut rest = text.as_str();
        while let Some(i) = rest.find("#[cfg(test)]") {
            rest = &rest[i + "#[cfg(test)]".len()..];
            let decl: Vec<&str> = rest.trim_start().lines().take(2).map(str::trim).collect();
            if let Some(p) = decl[0].strip_prefix("#[path = \"").and_then(|p| p.split('"').next()) {
                out.insert(p.trim_end_matches(".rs").to_string());
            } else if let Some(name) = decl[0].strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
                out.insert(name.trim().to_string());
            }
        }
    }
    out
}

/// The sibling files one file of `module` uses: `super::x` and `crate::<module>::x` where `x.rs`
/// is one of `siblings`. Inline test modules (after the first `#[cfg(test)]`) are skipped: their
/// `super` is the file itself.
fn sibling_uses(module: &str, text: &str, siblings: &BTreeSet<String>) -> BTreeSet<String> {
    let code = code_only(text);
    let code = code.split("#[cfg(test)]").next().unwrap_or(&code);
    let own = format!("crate::{module}");
    paths_after(code, "super").into_iter().chain(paths_after(code, &own)).filter(|n| siblings.contains(n)).collect()
}

#[test]
fn no_files_of_a_module_use_each_other_in_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut cycles = Vec::new();
    let mut checked = 0;
    for entry in std::fs::read_dir(&src).unwrap().flatten() {
        let dir = entry.path();
        if !dir.is_dir() || dir.file_name().is_some_and(|n| n == "bin") {
            continue;
        }
        let module = dir.file_name().unwrap().to_string_lossy().to_string();
        let tests = test_files(&dir);
        let files: BTreeSet<String> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_suffix(".rs").map(str::to_string))
            .filter(|f| f != "mod" && !tests.contains(f))
            .collect();
        let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for f in &files {
            let text = std::fs::read_to_string(dir.join(format!("{f}.rs"))).unwrap();
            let mut used = sibling_uses(&module, &text, &files);
            used.remove(f);
            checked += used.len();
            uses.insert(f.clone(), used);
        }
        let mut seen_cycles: Vec<BTreeSet<String>> = Vec::new();
        for start in &files {
            let mut path = vec![start.clone()];
            if let Some(cycle) = reaches(start, start, &uses, &mut path, &mut BTreeSet::new()) {
                let members: BTreeSet<String> = cycle.iter().cloned().collect();
                if !seen_cycles.contains(&members) {
                    seen_cycles.push(members);
                    cycles.push(format!("{module}: {}", cycle.join(" -> ")));
                }
            }
        }
    }
    assert!(cycles.is_empty(), "files of one module that use each other:\n  {}", cycles.join("\n  "));
    assert!(checked > 10, "the file-level reader found almost no uses ({checked})");
}

/// A path of uses from `at` back to `target`, depth first.
fn reaches(
    at: &str,
    target: &str,
    uses: &BTreeMap<String, BTreeSet<String>>,
    path: &mut Vec<String>,
    seen: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    for next in uses.get(at).into_iter().flatten() {
        if next == target {
            let mut cycle = path.clone();
            cycle.push(target.to_string());
            return Some(cycle);
        }
        if seen.insert(next.clone()) {
            path.push(next.clone());
            if let Some(c) = reaches(next, target, uses, path, seen) {
                return Some(c);
            }
            path.pop();
        }
    }
    None
}

#[test]
fn the_file_reader_sees_sibling_uses_and_the_search_finds_a_cycle() {
    let siblings: BTreeSet<String> = ["call", "handler"].map(String::from).into();
    let one = |s: &str| -> BTreeSet<String> { [s.to_string()].into() };
    assert_eq!(sibling_uses("mcp", "use super::handler::H;", &siblings), one("handler"));
    assert_eq!(sibling_uses("mcp", "use crate::mcp::{call::drive, other::X};", &siblings), one("call"));
    assert!(sibling_uses("mcp", "use super::*;\n// super::call\nlet s = \"super::call\";", &siblings).is_empty());
    assert!(sibling_uses("mcp", "fn f() {}\n#[cfg(test)]\nmod tests { use super::call; }", &siblings).is_empty());
    let uses: BTreeMap<String, BTreeSet<String>> =
        [("call".to_string(), one("handler")), ("handler".to_string(), one("call"))].into();
    let cycle = reaches("call", "call", &uses, &mut vec!["call".into()], &mut BTreeSet::new());
    assert_eq!(cycle, Some(vec!["call".to_string(), "handler".to_string(), "call".to_string()]));
}

#[test]
fn the_reference_reader_sees_groups_and_ignores_comments_and_strings() {
    let code = code_only(
        "use crate::{config::Config, mcp::{McpManager, ToolInfo}};\n\
         // crate::cli in a comment\n\
         /* crate::agent */\n\
         let s = \"crate::cli\"; let r = r#\"crate::cli\"#; let c = '\"';\n\
         fn f<'a>(x: &'a str) { crate::util::size::human_bytes(1); }\n\
         macro_rules! m { () => { $crate::x } }",
    );
    assert_eq!(referenced_modules(&code), vec!["config", "mcp", "util"]);
}
