//! Saving a skill from a script (`saveSkill`) or `agent skill add`: the checks before anything is
//! written (a valid name and size, as the skill format has them in `skills`, and source that
//! transpiles with the transpiler scripts get) and the write, only where `skills/` really is
//! inside the workspace.

/// Checks a skill before it is saved: a valid name, and source that transpiles (the same
/// transpile scripts get). The error is one line, with the position of a syntax error.
pub fn check_skill(name: &str, source: &str) -> Result<(), String> {
    crate::skills::validate_name(name)?;
    if source.len() as u64 > crate::skills::MAX_SKILL_BYTES {
        return Err(format!("skill `{name}` is larger than {} MB", crate::skills::MAX_SKILL_BYTES >> 20));
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
/// leading TSDoc comment), only where `skills/` really is inside the workspace. Returns
/// whether a skill of that name was replaced.
pub fn save_skill(workspace: &std::path::Path, name: &str, source: &str, description: &str) -> Result<bool, String> {
    check_skill(name, source)?;
    let dir = workspace.join(crate::skills::SKILLS_DIR);
    if let Err(e) = std::fs::create_dir_all(&dir)
        && e.kind() != std::io::ErrorKind::AlreadyExists
    {
        return Err(format!("cannot create {}: {e}", dir.display()));
    }
    let ws = std::fs::canonicalize(workspace)
        .map_err(|e| format!("cannot open the workspace {}: {e}", workspace.display()))?;
    let real = match super::confine::open_inside(&ws, &ws.join(crate::skills::SKILLS_DIR)) {
        Ok(d) if d.is_dir() => d.real,
        Ok(_) | Err(super::confine::Refusal::Special) => return Err(format!("{} is not a directory", dir.display())),
        Err(super::confine::Refusal::Outside) => {
            return Err(format!(
                "{} leads outside the workspace (a symbolic link); skills are kept only inside it",
                dir.display()
            ));
        }
        Err(super::confine::Refusal::Missing(e)) => return Err(format!("cannot open {}: {e}", dir.display())),
    };
    crate::skills::write(&real, name, &crate::skills::compose(source, description))
}
