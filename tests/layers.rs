//! Keeps the layering of `src/` true: reads every `crate::<module>` reference between the
//! top-level modules and fails when a module reaches a module of its own or a higher layer
//! (which is also what rules out two modules importing each other).
//!
//! The table below is the one in ARCHITECTURE.md ("Layers"); a new top-level module must be
//! given a place in both. Lower layers learn about higher ones only through traits or events
//! they define themselves.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Top-level modules by layer, lowest first. A module may use modules of lower layers only.
const LAYERS: &[(&str, u32)] = &[
    ("util", 0),
    ("config", 1),
    ("search", 1),
    ("skills", 1),
    ("types", 1),
    ("mcp", 2),
    ("codegen", 3),
    ("bridge", 3),
    ("learn", 3),
    ("runtime", 4),
    ("codemode", 5),
    ("handler", 5),
    ("agent", 6),
    ("serve", 7),
    ("cli", 8),
];

fn layer(module: &str) -> Option<u32> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
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
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(pos) = code[from..].find("crate") {
        let at = from + pos;
        from = at + 5;
        if at > 0 && (is_ident(bytes[at - 1]) || bytes[at - 1] == b'$') {
            continue;
        }
        let rest = code[at + 5..].trim_start();
        let Some(rest) = rest.strip_prefix("::") else { continue };
        let rest = rest.trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level names of the group: split on commas at brace depth 0.
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
        } else {
            out.push(first_ident(rest));
        }
    }
    out.retain(|m| !m.is_empty() && m != "self");
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

#[test]
fn no_module_imports_from_its_own_or_a_higher_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut edges: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut unknown = Vec::new();
    for file in &files {
        let Some(module) = module_of(&src, file) else { continue };
        let text = std::fs::read_to_string(file).unwrap();
        for used in referenced_modules(&code_only(&text)) {
            if used != module {
                edges.entry((module.clone(), used)).or_default().push(file.display().to_string());
            }
        }
        if layer(&module).is_none() {
            unknown.push(module);
        }
    }
    unknown.sort();
    unknown.dedup();
    assert!(
        unknown.is_empty(),
        "top-level modules without a layer (add them to LAYERS and ARCHITECTURE.md): {unknown:?}"
    );
    let mut violations = Vec::new();
    for ((from, to), where_) in &edges {
        let (Some(lf), Some(lt)) = (layer(from), layer(to)) else {
            violations.push(format!("{from} -> {to}: `{to}` is not a module with a layer ({})", where_[0]));
            continue;
        };
        if lt >= lf {
            violations.push(format!(
                "{from} (layer {lf}) uses {to} (layer {lt}) in {}",
                where_.iter().map(|w| w.rsplit("/src/").next().unwrap_or(w)).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    assert!(violations.is_empty(), "layering violations:\n  {}", violations.join("\n  "));
    // The check sees the edges it should: the top layer uses the code-mode owner, which uses
    // the runtime (a parser that found nothing would pass every tree).
    assert!(edges.contains_key(&("cli".to_string(), "codemode".to_string())), "{:?}", edges.keys());
    assert!(edges.contains_key(&("codemode".to_string(), "runtime".to_string())), "{:?}", edges.keys());
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
