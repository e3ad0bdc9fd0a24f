//! Type-checking a script against the generated tree before it runs (`agent exec --check`,
//! `mcp.code_execution.typecheck: true`).
//!
//! The compiler is `tsc` (TypeScript 5+, or the native TypeScript 7): `mcp.code_execution.tsc`
//! when set, else the first `tsc` on `PATH`. Each check writes a strict `tsconfig.json` (the
//! tree's own options, plus `moduleDetection: force` so top-level `await` is fine) into a
//! fresh temporary directory. A script given as text is written there as `main.ts`, and
//! `rootDirs` merges that directory with the tree, so `./servers/<server>/index.ts` resolves as
//! it does at run time (where such a script runs as `<workspace>/main.ts`); a script file is
//! checked where it is. The tree's `globals.d.ts` declares what the runtime offers.
//!
//! `tsc`'s diagnostics (`main.ts(3,15): error TS2551: ...`) come back as the script's own
//! positions, `main.ts:3:15: error TS2551: ...` (continuation lines kept, indented); the
//! script is not changed before checking, so its lines are the lines the user wrote.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use serde_json::json;

use crate::runtime::Script;
use crate::util::fs::{Access, write_atomic};

/// The longest a check may take before it is given up (and the script runs unchecked).
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// Which compiler checks scripts, or why none does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checker {
    /// Type-checking is not asked for.
    Off,
    /// Scripts are checked with this `tsc`.
    Tsc(PathBuf),
    /// Asked for, but no compiler: the one-line notice to show; scripts run unchecked.
    Missing(String),
}

impl Checker {
    /// The checker for `enabled` with the configured compiler path (`None`: `tsc` on `PATH`).
    pub fn resolve(enabled: bool, configured: Option<&Path>) -> Checker {
        if !enabled {
            return Checker::Off;
        }
        match configured {
            Some(p) if p.is_file() => Checker::Tsc(p.to_path_buf()),
            Some(p) => Checker::Missing(format!(
                "mcp.code_execution.tsc: {} is not a file; scripts run without a type check",
                p.display()
            )),
            None => match crate::util::dirs::find_on_path("tsc") {
                Some(p) => Checker::Tsc(p),
                None => Checker::Missing(
                    "no TypeScript compiler (`tsc` on PATH or mcp.code_execution.tsc): scripts run without \
                     a type check (npm install -g typescript)"
                        .into(),
                ),
            },
        }
    }
}

/// Checks `script` against the tree in `workspace`; the diagnostics, mapped to the script's
/// own name and lines (empty: it type-checks). `Err` when the compiler could not be run.
pub async fn check(tsc: &Path, workspace: &Path, script: &Script) -> anyhow::Result<Vec<String>> {
    let dir =
        tempfile::Builder::new().prefix("agent-check-").tempdir().context("cannot create a temporary directory")?;
    let dir_path = std::path::absolute(dir.path()).context("cannot resolve the temporary directory")?;
    let (entry, shown) = match script {
        Script::Inline(source) => {
            let entry = dir_path.join("main.ts");
            write_atomic(&entry, source.as_bytes(), Access::Private).context("cannot write the script to check")?;
            (entry, "main.ts".to_string())
        }
        Script::File(path) => {
            let abs = std::path::absolute(path).with_context(|| format!("invalid script path {}", path.display()))?;
            let shown = std::env::current_dir()
                .ok()
                .and_then(|cwd| abs.strip_prefix(cwd).ok().map(Path::to_path_buf))
                .unwrap_or_else(|| abs.clone());
            (abs, shown.display().to_string())
        }
    };
    let mut files = vec![entry.display().to_string()];
    let globals = workspace.join("globals.d.ts");
    if globals.is_file() {
        files.push(globals.display().to_string());
    }
    let tsconfig = json!({
        "compilerOptions": {
            "target": "es2022",
            "module": "esnext",
            "moduleResolution": "bundler",
            "moduleDetection": "force",
            "lib": ["es2023"],
            "types": [],
            "strict": true,
            "noEmit": true,
            "allowImportingTsExtensions": true,
            "isolatedModules": true,
            "skipLibCheck": true,
            "rootDirs": [dir_path.display().to_string(), workspace.display().to_string()],
        },
        "files": files,
    });
    write_atomic(&dir_path.join("tsconfig.json"), tsconfig.to_string().as_bytes(), Access::Private)
        .context("cannot write the temporary tsconfig.json")?;

    let mut cmd = tokio::process::Command::new(tsc);
    cmd.args(["-p", "tsconfig.json", "--pretty", "false"])
        .current_dir(&dir_path)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = match tokio::time::timeout(CHECK_TIMEOUT, cmd.output()).await {
        Ok(r) => r.with_context(|| format!("cannot run {}", tsc.display()))?,
        Err(_) => anyhow::bail!("{} took longer than {}s", tsc.display(), CHECK_TIMEOUT.as_secs()),
    };
    let text = String::from_utf8_lossy(&output.stdout);
    let errors = map_diagnostics(&text, &dir_path, &entry, &shown, workspace);
    if !output.status.success() && errors.is_empty() {
        let err = String::from_utf8_lossy(&output.stderr);
        let first = err.lines().chain(text.lines()).map(str::trim).find(|l| !l.is_empty()).unwrap_or("no output");
        anyhow::bail!("{} failed ({}): {first}", tsc.display(), output.status);
    }
    Ok(errors)
}

/// `path(line,col): error TSnnnn: message` lines → `shown:line:col: error TSnnnn: message`, the
/// path named as the user knows it: the script by `shown`, tree files relative to the tree.
/// Continuation lines (indented) stay with their diagnostic.
fn map_diagnostics(text: &str, cwd: &Path, entry: &Path, shown: &str, workspace: &Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with(' ')
            && let Some(last) = out.last_mut()
        {
            last.push('\n');
            last.push_str(line);
            continue;
        }
        out.push(map_line(line, cwd, entry, shown, workspace));
    }
    out
}

fn map_line(line: &str, cwd: &Path, entry: &Path, shown: &str, workspace: &Path) -> String {
    // `file(3,15): rest`; a diagnostic without a file (`error TS5023: ...`) stays as it is.
    let Some((head, rest)) = line.split_once("): ") else { return line.to_string() };
    let Some((file, pos)) = head.rsplit_once('(') else { return line.to_string() };
    let Some((row, col)) = pos.split_once(',') else { return line.to_string() };
    if row.parse::<u32>().is_err() || col.parse::<u32>().is_err() {
        return line.to_string();
    }
    let path = normalize(&cwd.join(file));
    let name = if path == normalize(entry) {
        shown.to_string()
    } else if let Ok(rel) = path.strip_prefix(normalize(workspace)) {
        rel.display().to_string()
    } else {
        path.display().to_string()
    };
    format!("{name}:{row}:{col}: {rest}")
}

/// `a/b/../c` → `a/c`, lexically (the files need not exist any more).
fn normalize(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagnostics_are_named_by_the_script_and_the_tree() {
        let cwd = Path::new("/tmp/agent-check-x");
        let ws = Path::new("/p/.kodelet/mcp");
        let text = "main.ts(3,15): error TS2551: Property 'summ' does not exist on type 'AddOutput'. Did you mean 'sum'?\n\
                    ../../p/.kodelet/mcp/servers/s/a.ts(1,2): error TS1005: ';' expected.\n\
                    main.ts(4,1): error TS2322: Type 'string' is not assignable to type 'number'.\n  \
                    Details follow.\n\
                    error TS5023: Unknown compiler option 'x'.\n";
        let got = map_diagnostics(text, cwd, &cwd.join("main.ts"), "main.ts", ws);
        assert_eq!(
            got,
            [
                "main.ts:3:15: error TS2551: Property 'summ' does not exist on type 'AddOutput'. Did you mean 'sum'?",
                "servers/s/a.ts:1:2: error TS1005: ';' expected.",
                "main.ts:4:1: error TS2322: Type 'string' is not assignable to type 'number'.\n  Details follow.",
                "error TS5023: Unknown compiler option 'x'.",
            ]
        );
        let file =
            map_diagnostics("../../home/u/s.ts(2,7): error TS2304: x\n", cwd, Path::new("/home/u/s.ts"), "s.ts", ws);
        assert_eq!(file, ["s.ts:2:7: error TS2304: x"]);
    }

    #[test]
    fn a_missing_compiler_is_a_notice_not_an_error() {
        assert_eq!(Checker::resolve(false, None), Checker::Off);
        let Checker::Missing(why) = Checker::resolve(true, Some(Path::new("/nonexistent/tsc"))) else { panic!() };
        assert!(why.starts_with("mcp.code_execution.tsc: /nonexistent/tsc is not a file"), "{why}");
    }
}
