//! Skills: reusable TypeScript modules a script (`saveSkill`) or a user (`agent skill add`) keeps
//! in `<workspace>/skills/<name>.ts`, for later scripts to import
//! (`import { weeklyReport } from "./skills/weekly-report.ts"`).
//!
//! This module owns the format: names are kebab-case ([`validate_name`]), the description is the
//! file's leading TSDoc comment ([`compose`] writes it, [`description_of`] reads it back), and
//! [`list`] reads the directory for the generated README, catalog search and `agent skill ls`.
//! Reads and writes go through the `skills/` directory's descriptor and never through a link
//! (`skills` itself or a skill file that is a link is left out). It does not check that a skill
//! transpiles (the runtime's transpiler does that before anything is written) nor count it
//! against the quota (the runtime does, before it calls [`write`]).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::util::fs::{Access, Dir, Node};
use crate::util::read::{CapError, read_capped};

/// The directory of skills inside the workspace.
pub const SKILLS_DIR: &str = "skills";

/// Largest skill file (source and description).
pub const MAX_SKILL_BYTES: u64 = 1 << 20;

/// Longest skill name.
const MAX_NAME_LEN: usize = 64;

/// A skill as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skill {
    pub name: String,
    /// The leading TSDoc comment's text; empty when there is none.
    pub description: String,
    /// Relative to the workspace: `skills/<name>.ts`.
    pub file: String,
    /// Names the module exports (`export function f`, `export const c`, `export default`).
    pub exports: Vec<String>,
    pub bytes: u64,
}

/// Checks a skill name: kebab-case, `^[a-z][a-z0-9]*(-[a-z0-9]+)*$`, at most 64 characters.
pub fn validate_name(name: &str) -> Result<(), String> {
    let bad = |why: &str| {
        Err(format!(
            "invalid skill name {name:?}: {why}; use kebab-case: lowercase letters and digits in words joined by `-`, starting with a letter (e.g. `weekly-report`)"
        ))
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.len() > MAX_NAME_LEN {
        return bad(&format!("it is longer than {MAX_NAME_LEN} characters"));
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return bad("it must start with a lowercase letter");
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')) {
        return bad(&format!("{c:?} is not allowed"));
    }
    if name.ends_with('-') || name.contains("--") {
        return bad("`-` must join two words");
    }
    Ok(())
}

/// The path of skill `name` under `workspace` (the name must be valid).
pub fn path_of(workspace: &Path, name: &str) -> PathBuf {
    workspace.join(SKILLS_DIR).join(format!("{name}.ts"))
}

/// The file text of a skill: the description as a leading TSDoc comment (none when it is
/// empty), then the source.
pub fn compose(source: &str, description: &str) -> String {
    let description = description.trim();
    if description.is_empty() {
        return source.to_string();
    }
    let mut out = String::from("/**\n");
    for line in description.lines() {
        let line = line.trim_end().replace("*/", "*\\/");
        if line.is_empty() {
            out.push_str(" *\n");
        } else {
            out.push_str(" * ");
            out.push_str(&line);
            out.push('\n');
        }
    }
    out.push_str(" */\n");
    out.push_str(source);
    if !source.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// The text of the leading `/** ... */` comment, up to its first `@tag` line; empty when the
/// file does not start with one.
pub fn description_of(text: &str) -> String {
    let t = text.trim_start_matches('\u{feff}').trim_start();
    let Some(rest) = t.strip_prefix("/**") else { return String::new() };
    let Some(end) = rest.find("*/") else { return String::new() };
    let mut lines: Vec<String> = Vec::new();
    for line in rest[..end].lines() {
        let l = line.trim();
        let l = l.strip_prefix('*').map(|l| l.strip_prefix(' ').unwrap_or(l)).unwrap_or(l);
        if l.starts_with('@') {
            break;
        }
        lines.push(l.trim_end().replace("*\\/", "*/"));
    }
    lines.join("\n").trim().to_string()
}

/// What a module exports, by a line scan (`export [async] function f`, `export const|let|class x`,
/// `export default`).
pub fn exports_of(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix("export ") else { continue };
        let rest = rest.trim_start();
        if rest.starts_with("default") {
            out.push("default".to_string());
            continue;
        }
        let rest = rest.strip_prefix("async ").map(str::trim_start).unwrap_or(rest);
        let Some(rest) =
            ["function* ", "function ", "const ", "let ", "var ", "class "].iter().find_map(|k| rest.strip_prefix(k))
        else {
            continue;
        };
        let name: String =
            rest.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$').collect();
        if !name.is_empty() && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Reads one skill file (capped).
pub fn read(workspace: &Path, name: &str) -> Result<String, String> {
    validate_name(name)?;
    let missing = || format!("no skill named `{name}`");
    let dir = match Dir::open(workspace).and_then(|ws| ws.sub(SKILLS_DIR)) {
        Ok(dir) => dir,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(missing()),
        Err(e) => return Err(format!("cannot open {}: {e}", workspace.join(SKILLS_DIR).display())),
    };
    match dir.node(format!("{name}.ts")) {
        Ok(None) => Err(missing()),
        Ok(Some(Node::File { .. })) => read_file(&dir, name),
        Ok(Some(_)) => Err(format!("skill `{name}` is not a regular file (links are not followed)")),
        Err(e) => Err(format!("cannot read skill `{name}`: {e}")),
    }
}

fn read_file(dir: &Dir, name: &str) -> Result<String, String> {
    let file = dir.open_file(format!("{name}.ts")).map_err(|e| format!("cannot read skill `{name}`: {e}"))?;
    let bytes = read_capped(file, MAX_SKILL_BYTES).map_err(|e| match e {
        CapError::TooLarge => format!("skill `{name}` is larger than {} MB", MAX_SKILL_BYTES >> 20),
        CapError::Io(e) => format!("cannot read skill `{name}`: {e}"),
    })?;
    String::from_utf8(bytes).map_err(|_| format!("skill `{name}` is not UTF-8 text"))
}

/// The skills in `<workspace>/skills/`, sorted by name. Files whose name is not a valid skill
/// name, links and unreadable files are left out, and so is a `skills` that is a link.
pub fn list(workspace: &Path) -> Vec<Skill> {
    let Ok(dir) = Dir::open(workspace).and_then(|ws| ws.sub(SKILLS_DIR)) else { return Vec::new() };
    let Ok(entries) = dir.entries() else { return Vec::new() };
    let mut out: Vec<Skill> = entries
        .into_iter()
        .filter(|(_, node)| node.is_file())
        .filter_map(|(file, _)| {
            let file = file.into_string().ok()?;
            let name = file.strip_suffix(".ts")?.to_string();
            validate_name(&name).ok()?;
            let text = read_file(&dir, &name).ok()?;
            Some(Skill {
                description: description_of(&text),
                exports: exports_of(&text),
                file: format!("{SKILLS_DIR}/{file}"),
                bytes: text.len() as u64,
                name,
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Writes `text` (from [`compose`]) as skill `name` into the open `skills/` directory. Returns
/// whether a skill of that name was replaced (a link at the name is replaced, not followed).
pub fn write(dir: &Dir, name: &str, text: &str) -> Result<bool, String> {
    validate_name(name)?;
    if text.len() as u64 > MAX_SKILL_BYTES {
        return Err(format!("skill `{name}` is larger than {} MB", MAX_SKILL_BYTES >> 20));
    }
    let file = format!("{name}.ts");
    let existed = dir.node(&file).map_err(|e| format!("cannot write skills/{file}: {e}"))?.is_some();
    dir.write_atomic(&file, text.as_bytes(), Access::Shared).map_err(|e| format!("cannot write skills/{file}: {e}"))?;
    Ok(existed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["a", "weekly-report", "x2", "top-10-items"] {
            assert!(validate_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Weekly", "2x", "a_b", "a--b", "a-", "-a", "a/b", "../x", "a.ts", "weekly report"] {
            let err = validate_name(bad).unwrap_err();
            assert!(err.contains("kebab-case"), "{bad}: {err}");
        }
    }

    #[test]
    fn descriptions_round_trip() {
        let text = compose("export function f() {}\n", "Weekly report.\n\nSends */ nothing.");
        assert!(text.starts_with("/**\n * Weekly report.\n *\n * Sends *\\/ nothing.\n */\n"));
        assert_eq!(description_of(&text), "Weekly report.\n\nSends */ nothing.");
        assert_eq!(description_of("/** One line. @param x */\nexport const a = 1;"), "One line. @param x");
        assert_eq!(description_of("/**\n * Doc.\n * @param x y\n */"), "Doc.");
        assert_eq!(description_of("// not a doc\n"), "");
        assert_eq!(compose("x", "  "), "x");
    }

    #[test]
    fn exports() {
        let src = "export async function weeklyReport() {}\nexport const a = 1, b = 2;\nexport default 3;\nfunction no() {}\nexport class K {}";
        assert_eq!(exports_of(src), ["weeklyReport", "a", "default", "K"]);
    }
}
