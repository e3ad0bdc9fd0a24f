//! Saving a skill from a script (`saveSkill`) or `agent skill add`, and removing one: the checks
//! before anything is written (a valid name and size, as the skill format has them in `skills`,
//! and source that transpiles with the transpiler scripts get), the quota (`skills/` shares the
//! one of `data/`), and the write through the descriptor of a `skills/` that really is a
//! directory of the workspace (never a link).

use std::io::ErrorKind;

use super::quota::{Change, Ledger};
use super::state::State;
use crate::skills::{MAX_SKILL_BYTES, SKILLS_DIR};
use crate::util::fs::Node;

/// What is kept in `skills/`, for the error about a link there.
const KEPT: &str = "skills are kept";

/// Checks a skill before it is saved: a valid name, and source that transpiles (the same
/// transpile scripts get). The error is one line, with the position of a syntax error.
pub fn check_skill(name: &str, source: &str) -> Result<(), String> {
    crate::skills::validate_name(name)?;
    if source.len() as u64 > MAX_SKILL_BYTES {
        return Err(format!("skill `{name}` is larger than {} MB", MAX_SKILL_BYTES >> 20));
    }
    super::loader::check_transpiles(&format!("skills/{name}.ts"), source).map_err(|e| {
        // The diagnostic's first line and its position (the code excerpt between is dropped).
        let first = e.lines().next().unwrap_or("").trim();
        match e.lines().map(str::trim).rfind(|l| l.starts_with("at ")) {
            Some(at) => format!("skill `{name}` does not transpile: {first} {at}"),
            None => format!("skill `{name}` does not transpile: {first}"),
        }
    })
}

/// Checks and writes skill `name` as `<workspace>/skills/<name>.ts` (the description as its
/// leading TSDoc comment), within the quota of `state`. Returns whether a skill of that name
/// was replaced.
pub fn save_skill(state: &State, name: &str, source: &str, description: &str) -> Result<bool, String> {
    check_skill(name, source)?;
    let text = crate::skills::compose(source, description);
    if text.len() as u64 > MAX_SKILL_BYTES {
        return Err(format!("skill `{name}` is larger than {} MB", MAX_SKILL_BYTES >> 20));
    }
    let ws = state.open_workspace(true)?.ok_or_else(|| "the workspace disappeared".to_string())?;
    let mut ledger = Ledger::open(&ws)?;
    let dir = state.open_area(&ws, SKILLS_DIR, KEPT)?;
    let file = format!("{name}.ts");
    let old = match &dir {
        Some(d) => d.node(&file).map_err(|e| format!("cannot open skills/{file}: {e}"))?,
        None => None,
    };
    if let Some(Node::Dir | Node::Special) = old {
        return Err(format!("skills/{file} is not a regular file"));
    }
    let change = Change {
        added_bytes: text.len() as u64,
        freed_bytes: old.map_or(0, Node::bytes),
        new_entries: u64::from(old.is_none()),
        gone_entries: 0,
    };
    ledger.check(state.quota(), change, &format!("skills/{file}"))?;
    let dir = match dir {
        Some(d) => d,
        None => state.make_area(&ws, SKILLS_DIR, KEPT, 0o755)?,
    };
    let replaced = crate::skills::write(&dir, name, &text)?;
    ledger.commit(change);
    Ok(replaced)
}

/// Removes skill `name`; whether there was one.
pub fn remove_skill(state: &State, name: &str) -> Result<bool, String> {
    crate::skills::validate_name(name)?;
    let Some(ws) = state.open_workspace(false)? else { return Ok(false) };
    let Some(dir) = state.open_area(&ws, SKILLS_DIR, KEPT)? else { return Ok(false) };
    let file = format!("{name}.ts");
    let mut ledger = Ledger::open(&ws)?;
    match dir.node(&file).map_err(|e| format!("cannot open skills/{file}: {e}"))? {
        None => Ok(false),
        Some(Node::Dir) => Err(format!("skills/{file} is a directory")),
        Some(node) => match dir.remove_file(&file) {
            Ok(()) => {
                ledger.commit(Change::removal(node.bytes()));
                Ok(true)
            }
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(format!("cannot remove skills/{file}: {e}")),
        },
    }
}
