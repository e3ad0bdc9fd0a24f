//! Module resolution and loading for scripts: everything resolves inside the workspace.
//!
//! Only relative (`./x.ts`, `../x.ts`) and absolute paths are accepted, and the file they name
//! (after following symlinks) must lie inside the workspace directory. URL specifiers (`node:`,
//! `npm:`, `jsr:`, `http(s):`, `file:`, ...) and bare package names fail with a message that says
//! why. The entry script itself may live anywhere; it is handed over as source text.
//!
//! Workspace files are opened through [`super::confine`]: where a file really is is checked on
//! the open file, so a link swapped in between cannot lead out. A path that leads out through a
//! link is refused before anything behind the link is looked at, and no message (errors, "did
//! you mean" suggestions) ever names a file outside the workspace or a link's target there.
//!
//! `.ts`/`.mts` modules are transpiled (type-stripped) with deno_ast on load, keeping source maps
//! so stack traces point at TypeScript lines. Transpiled output is cached across executions by
//! path, size and modification time.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;
use std::time::SystemTime;

use deno_core::{
    ModuleLoadOptions, ModuleLoadReferrer, ModuleLoadResponse, ModuleLoader, ModuleSource, ModuleSourceCode,
    ModuleSpecifier, ModuleType, ResolutionKind,
};
use deno_error::JsErrorBox;

use super::FailureKind;
use super::confine::{self, Refusal};
use crate::util::suggest::suggest;

/// Largest module the loader reads (generated tool files are a few KB).
const MAX_MODULE_BYTES: u64 = 16 * 1024 * 1024;

/// Transpiled modules shared by every isolate of one runner thread.
pub(crate) type TranspileCache = Rc<RefCell<HashMap<PathBuf, Cached>>>;

pub(crate) struct Cached {
    modified: Option<SystemTime>,
    len: u64,
    code: String,
    source_map: Option<Vec<u8>>,
}

/// A failed resolution or load, remembered so a failed static import is reported as such.
#[derive(Debug, Clone)]
pub(crate) struct LoadFailure {
    pub kind: FailureKind,
    pub message: String,
}

/// The directory scripts may import from, fixed when a job starts.
struct Job {
    /// Canonical when the directory exists (so symlinks cannot lead out of it).
    root: PathBuf,
}

pub(crate) struct WorkspaceLoader {
    job: RefCell<Option<Job>>,
    cache: TranspileCache,
    source_maps: RefCell<HashMap<String, Vec<u8>>>,
    failure: RefCell<Option<LoadFailure>>,
    /// The entry script being loaded from source: a session's later steps load it as a side
    /// module, which deno_core resolves like an import.
    entry: RefCell<Option<String>>,
}

impl WorkspaceLoader {
    pub(crate) fn new(cache: TranspileCache) -> WorkspaceLoader {
        WorkspaceLoader {
            job: RefCell::new(None),
            cache,
            source_maps: RefCell::new(HashMap::new()),
            failure: RefCell::new(None),
            entry: RefCell::new(None),
        }
    }

    /// Confines this loader to `root` (the workspace, absolute).
    pub(crate) fn set_root(&self, root: PathBuf) {
        *self.job.borrow_mut() = Some(Job { root });
    }

    /// The first resolution or load failure of this job, if any.
    pub(crate) fn take_failure(&self) -> Option<LoadFailure> {
        self.failure.borrow_mut().take()
    }

    fn fail(&self, kind: FailureKind, message: String) -> JsErrorBox {
        let mut slot = self.failure.borrow_mut();
        if slot.is_none() {
            *slot = Some(LoadFailure { kind, message: message.clone() });
        }
        JsErrorBox::type_error(message)
    }

    fn root(&self) -> PathBuf {
        self.job.borrow().as_ref().map(|j| j.root.clone()).unwrap_or_default()
    }

    /// Transpiles the entry script (source text) and remembers its source map. `Err` is a
    /// compile failure, already recorded.
    pub(crate) fn transpile_entry(&self, specifier: &ModuleSpecifier, text: String) -> Result<String, LoadFailure> {
        self.transpile_script(specifier, text, false)
    }

    /// [`WorkspaceLoader::transpile_entry`]; with `keep` (a session step), the script's
    /// top-level bindings are carried over to later steps (`runtime::keep`).
    pub(crate) fn transpile_script(
        &self,
        specifier: &ModuleSpecifier,
        text: String,
        keep: bool,
    ) -> Result<String, LoadFailure> {
        *self.entry.borrow_mut() = Some(specifier.to_string());
        let path = specifier.to_file_path().unwrap_or_default();
        let kind = media_kind(&path).unwrap_or(MediaKind::TypeScript);
        let transpiled =
            if keep { self.transpile_keeping(specifier, text, kind) } else { self.transpile(specifier, text, kind) };
        match transpiled {
            Ok(code) => Ok(code),
            Err(message) => {
                let failure = LoadFailure { kind: FailureKind::Compile, message };
                *self.failure.borrow_mut() = Some(failure.clone());
                Err(failure)
            }
        }
    }

    /// [`WorkspaceLoader::transpile`] for a session step: the code with its top-level bindings
    /// (and the imports transpiling dropped as unused) carried over to later steps, its source
    /// map shifted to match.
    fn transpile_keeping(&self, specifier: &ModuleSpecifier, text: String, kind: MediaKind) -> Result<String, String> {
        let (code, map, imports) = if kind == MediaKind::JavaScript {
            (text, None, Vec::new())
        } else {
            transpile_ts(specifier, text, true).map_err(|e| self.rewrite_urls(&e))?
        };
        let (code, map) = super::keep::carry_over(specifier, code, map, &imports);
        if let Some(map) = map {
            self.source_maps.borrow_mut().insert(specifier.to_string(), map);
        }
        Ok(code)
    }

    fn transpile(&self, specifier: &ModuleSpecifier, text: String, kind: MediaKind) -> Result<String, String> {
        if kind == MediaKind::JavaScript {
            return Ok(text);
        }
        let (code, map, _) = transpile_ts(specifier, text, false).map_err(|e| self.rewrite_urls(&e))?;
        if let Some(map) = map {
            self.source_maps.borrow_mut().insert(specifier.to_string(), map);
        }
        Ok(code)
    }

    /// Replaces `file://<workspace>/` in diagnostics by nothing, so they read `main.ts:3:9`.
    fn rewrite_urls(&self, text: &str) -> String {
        let root = self.root();
        match ModuleSpecifier::from_directory_path(&root) {
            Ok(url) => text.replace(url.as_str(), ""),
            Err(()) => text.to_string(),
        }
    }

    fn resolve_path(&self, specifier: &str, referrer: &str) -> Result<ModuleSpecifier, JsErrorBox> {
        let root = self.root();
        let referrer_path = ModuleSpecifier::parse(referrer).ok().and_then(|u| u.to_file_path().ok());
        let from = referrer_path.as_deref().map(|p| display_path(&root, p)).unwrap_or_else(|| "the script".into());
        let deny =
            |why: String| self.fail(FailureKind::Import, format!("cannot import \"{specifier}\" from {from}: {why}"));

        if let Some(scheme) = url_scheme(specifier) {
            return Err(deny(scheme_reason(&scheme)));
        }
        if !(specifier.starts_with("./") || specifier.starts_with("../") || specifier.starts_with('/')) {
            return Err(deny(
                "package imports are not available; import relative paths inside the workspace, \
                 such as \"./servers/<server>/index.ts\""
                    .into(),
            ));
        }
        let base =
            referrer_path.as_deref().and_then(Path::parent).map(Path::to_path_buf).unwrap_or_else(|| root.clone());
        let joined =
            normalize(&if specifier.starts_with('/') { PathBuf::from(specifier) } else { base.join(specifier) });
        if !joined.starts_with(&root) {
            return Err(deny(format!(
                "{} is outside the workspace {}; scripts may only import modules inside it{}",
                joined.display(),
                root.display(),
                outside_script_hint(&root, &base, specifier)
            )));
        }
        // A path that leads out through a link (itself or a directory on the way) is refused
        // before anything behind the link is looked at: what exists there is no script's business.
        if leads_outside(&root, &joined) {
            return Err(deny(format!(
                "{} leads outside the workspace; scripts may only import modules inside it",
                display_path(&root, &joined)
            )));
        }
        let Some(found) = candidates(&joined).into_iter().find(|p| p.is_file()) else {
            return Err(deny(not_found(&root, &joined)));
        };
        // Where it really leads is checked on the opened file; a target outside is never named.
        let real = match confine::open_inside(&root, &found) {
            Ok(opened) => opened.real,
            Err(Refusal::Outside) => {
                return Err(deny(format!(
                    "{} leads outside the workspace; scripts may only import modules inside it",
                    display_path(&root, &found)
                )));
            }
            Err(Refusal::Special) => {
                return Err(deny(format!("{} is not a regular file", display_path(&root, &found))));
            }
            Err(Refusal::Missing(e)) => return Err(deny(format!("cannot read {}: {e}", display_path(&root, &found)))),
        };
        if media_kind(&real).is_none() {
            return Err(deny(format!(
                "{} is not a module scripts can import (only .ts, .mts, .js and .mjs files)",
                display_path(&root, &real)
            )));
        }
        ModuleSpecifier::from_file_path(&real).map_err(|()| deny(format!("{} is not a valid path", real.display())))
    }

    fn load_module(&self, specifier: &ModuleSpecifier) -> Result<ModuleSource, JsErrorBox> {
        let root = self.root();
        let path = specifier
            .to_file_path()
            .map_err(|()| self.fail(FailureKind::Import, format!("cannot load {specifier}: not a file")))?;
        // Resolution already checked this; checking where the opened file really is keeps load()
        // safe on its own (and against a symlink swapped in between). What is read is that file.
        let shown = if path.starts_with(&root) { display_path(&root, &path) } else { "a module".to_string() };
        let file = confine::open_inside(&root, &path).map_err(|r| {
            let why = match r {
                Refusal::Outside => "it leads outside the workspace".to_string(),
                Refusal::Special => "not a regular file".to_string(),
                Refusal::Missing(e) => e.to_string(),
            };
            self.fail(FailureKind::Import, format!("cannot load {shown}: {why}"))
        })?;
        let path = file.real.clone();
        let kind = media_kind(&path)
            .ok_or_else(|| self.fail(FailureKind::Import, format!("cannot load {shown}: not a module")))?;
        if file.is_dir() {
            return Err(self.fail(FailureKind::Import, format!("cannot load {shown}: a directory")));
        }
        let meta = file.meta.clone();
        let modified = meta.modified().ok();
        if let Some(hit) = self.cache.borrow().get(&path)
            && hit.len == meta.len()
            && hit.modified == modified
            && modified.is_some()
        {
            if let Some(map) = &hit.source_map {
                self.source_maps.borrow_mut().insert(specifier.to_string(), map.clone());
            }
            return Ok(module_source(specifier, hit.code.clone()));
        }
        let text = file
            .read_text(MAX_MODULE_BYTES)
            .map_err(|e| self.fail(FailureKind::Import, format!("cannot read {}: {e}", display_path(&root, &path))))?;
        let code = self.transpile(specifier, text, kind).map_err(|m| self.fail(FailureKind::Compile, m))?;
        let source_map = self.source_maps.borrow().get(specifier.as_str()).cloned();
        self.cache.borrow_mut().insert(path, Cached { modified, len: meta.len(), code: code.clone(), source_map });
        Ok(module_source(specifier, code))
    }
}

fn module_source(specifier: &ModuleSpecifier, code: String) -> ModuleSource {
    ModuleSource::new(ModuleType::JavaScript, ModuleSourceCode::String(code.into()), specifier, None)
}

impl ModuleLoader for WorkspaceLoader {
    fn resolve(
        &self,
        specifier: &str,
        referrer: &str,
        kind: ResolutionKind,
    ) -> Result<ModuleSpecifier, deno_core::error::ModuleLoaderError> {
        // The entry is loaded from source under its own file URL; it resolves to itself.
        if kind == ResolutionKind::MainModule
            && let Ok(url) = ModuleSpecifier::parse(specifier)
            && url.scheme() == "file"
        {
            return Ok(url);
        }
        if self.entry.borrow().as_deref() == Some(specifier)
            && let Ok(url) = ModuleSpecifier::parse(specifier)
        {
            return Ok(url);
        }
        self.resolve_path(specifier, referrer)
    }

    fn load(
        &self,
        specifier: &ModuleSpecifier,
        _referrer: Option<&ModuleLoadReferrer>,
        _options: ModuleLoadOptions,
    ) -> ModuleLoadResponse {
        ModuleLoadResponse::Sync(self.load_module(specifier))
    }

    fn get_source_map(&self, specifier: &str) -> Option<Cow<'_, [u8]>> {
        self.source_maps.borrow().get(specifier).map(|m| Cow::Owned(m.clone()))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MediaKind {
    TypeScript,
    JavaScript,
}

fn media_kind(path: &Path) -> Option<MediaKind> {
    let name = path.file_name()?.to_str()?;
    if name.ends_with(".d.ts") || name.ends_with(".d.mts") {
        return None;
    }
    match path.extension()?.to_str()? {
        "ts" | "mts" => Some(MediaKind::TypeScript),
        "js" | "mjs" => Some(MediaKind::JavaScript),
        _ => None,
    }
}

/// Whether `source` transpiles as the module `rel` (a workspace-relative path, used in the
/// error's position).
pub(crate) fn check_transpiles(rel: &str, source: &str) -> Result<(), String> {
    let specifier =
        ModuleSpecifier::parse(&format!("file:///{rel}")).map_err(|e| format!("invalid module name {rel}: {e}"))?;
    transpile_ts(&specifier, source.to_string(), false).map(|_| ()).map_err(|e| e.replace("file:///", ""))
}

/// Transpiles a small module that uses the common TypeScript forms, once per process, on a
/// thread of its own, and returns at once. The first transpile in a process costs ~1.5 ms more
/// than later ones (the transpiler's code paged in, its lazily made tables); a worker calls this
/// when it starts, so that cost is paid beside its first isolate's restore rather than after
/// it, on the way to the first script's answer.
pub(crate) fn warm_transpiler() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let warm = || {
            crate::util::sched::only_when_idle();
            let Ok(specifier) = ModuleSpecifier::parse("file:///warm.ts") else { return };
            let _ = transpile_ts(&specifier, WARM_SOURCE.to_string(), false);
        };
        if let Err(e) = std::thread::Builder::new().name("agent-js-warm".into()).spawn(warm) {
            tracing::debug!("cannot warm the transpiler: {e}");
        }
    });
}

const WARM_SOURCE: &str = r#"import type { Row } from "./row.ts";
import { helper } from "./helper.ts";
interface Item { id: number; name?: string; tags: string[] }
type Pair<T> = [T, T];
enum Kind { A = 1, B }
class Box<T> {
  constructor(private readonly value: T) {}
  get(): T { return this.value; }
}
export async function main(items: Item[], n: number): Promise<string> {
  const ids: number[] = await Promise.resolve(items.map((x: Item) => x.id * n));
  const pair = [ids[0], ids.at(-1)] as Pair<number | undefined>;
  const { name = "none", ...rest } = items[0] ?? { id: 0, tags: [] };
  for (const [i, t] of Object.entries(rest)) if (t !== undefined) console.log(`${i}: ${t}`);
  return `${new Box<string>(name).get()} ${pair.join(",")} ${Kind.B} ${helper?.(1)! satisfies unknown}`;
}
export default { main } as Record<string, unknown> as unknown as Row;
"#;

/// What [`transpile_ts`] returns: the JavaScript, its source map, and (when asked) the value
/// imports of the TypeScript.
type Transpiled = (String, Option<Vec<u8>>, Vec<super::keep::Import>);

/// Strips types; returns the JavaScript and its source map, and with `imports` the imports of
/// the source that could be values (transpiling drops those the module does not use).
fn transpile_ts(specifier: &ModuleSpecifier, text: String, imports: bool) -> Result<Transpiled, String> {
    let parsed = deno_ast::parse_module(deno_ast::ParseParams {
        specifier: specifier.clone(),
        text: text.into(),
        media_type: deno_ast::MediaType::TypeScript,
        capture_tokens: false,
        scope_analysis: false,
        maybe_syntax: None,
    })
    .map_err(|e| e.to_string())?;
    let imports = if imports { super::keep::value_imports(parsed.program_ref()) } else { Vec::new() };
    let emitted = parsed
        .transpile(
            &deno_ast::TranspileOptions {
                imports_not_used_as_values: deno_ast::ImportsNotUsedAsValues::Remove,
                ..Default::default()
            },
            &deno_ast::TranspileModuleOptions { module_kind: None },
            &deno_ast::EmitOptions {
                source_map: deno_ast::SourceMapOption::Separate,
                inline_sources: false,
                ..Default::default()
            },
        )
        .map_err(|e| e.to_string())?
        .into_source();
    Ok((emitted.text, emitted.source_map.map(String::into_bytes), imports))
}

/// `node` for `node:fs`, `https` for `https://x`; `None` for paths. A one-letter "scheme" is
/// not one (Windows drive letters never reach here, but `c:` is not a module scheme anyway).
fn url_scheme(specifier: &str) -> Option<String> {
    let colon = specifier.find(':')?;
    let scheme = &specifier[..colon];
    let valid = scheme.len() > 1
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| scheme.to_ascii_lowercase())
}

fn scheme_reason(scheme: &str) -> String {
    let tail = "scripts may only import relative paths inside the workspace";
    match scheme {
        "node" => format!("node: modules are not available (no file system, network or process access); {tail}"),
        "npm" | "jsr" => format!("{scheme}: packages are not available; {tail}"),
        "http" | "https" => format!("remote modules are not available (no network access); {tail}"),
        "file" => format!("file: URLs are not allowed; {tail}"),
        other => format!("{other}: specifiers are not allowed; {tail}"),
    }
}

/// What the import might have meant: the path as written plus the usual extension fallbacks.
fn candidates(path: &Path) -> Vec<PathBuf> {
    let mut out = vec![path.to_path_buf()];
    if media_kind(path).is_none() {
        let s = path.as_os_str().to_string_lossy();
        out.push(PathBuf::from(format!("{s}.ts")));
        out.push(PathBuf::from(format!("{s}.js")));
        out.push(path.join("index.ts"));
        out.push(path.join("index.js"));
    }
    out
}

/// Whether the deepest existing one of `path` and its ancestors (up to `root`) really is outside
/// `root`, through a symlink.
fn leads_outside(root: &Path, path: &Path) -> bool {
    let mut p = path;
    loop {
        match confine::open_inside(root, p) {
            Err(Refusal::Outside) => return true,
            Err(Refusal::Missing(_)) => {}
            Ok(_) | Err(Refusal::Special) => return false,
        }
        match p.parent() {
            Some(parent) if parent.starts_with(root) => p = parent,
            _ => return false,
        }
    }
}

/// "No such module", with a suggestion from the deepest existing ancestor (a typo in the server
/// or tool name). Only the workspace is searched: an ancestor or a suggested entry whose links
/// lead out of it is never listed or named.
fn not_found(root: &Path, path: &Path) -> String {
    let mut msg = format!("no such module {} in the workspace", display_path(root, path));
    let mut missing = path;
    while let Some(parent) = missing.parent() {
        if !parent.starts_with(root) {
            break;
        }
        if let Ok(dir) = confine::open_inside(root, parent)
            && dir.is_dir()
        {
            let wanted = missing.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let names: Vec<String> = dir
                .names()
                .map(|names| names.into_iter().filter_map(|n| n.into_string().ok()).collect())
                .unwrap_or_default();
            let best = suggest(wanted, names.iter().map(String::as_str))
                .into_iter()
                .find(|name| confine::open_inside(root, &dir.real.join(name)).is_ok());
            if let Some(best) = best {
                msg.push_str(&format!("; did you mean {}?", display_path(root, &parent.join(best))));
            }
            break;
        }
        missing = parent;
    }
    msg
}

/// `a/./b/../c` → `a/c`, without touching the file system.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// For a script that lives outside the workspace and imports a path meant from inside it
/// (`./servers/github/index.ts` next to `~/notes/report.ts`): the import that reaches the same
/// module from where the script is, and the directory to move the script to. Names only the
/// workspace (which the error names anyway) and a path inside it; looks at nothing on disk.
fn outside_script_hint(root: &Path, script_dir: &Path, specifier: &str) -> String {
    if script_dir.starts_with(root) || !(specifier.starts_with("./") || specifier.starts_with("../")) {
        return String::new();
    }
    let meant = normalize(&root.join(specifier));
    if !meant.starts_with(root) || meant == root {
        return String::new();
    }
    format!(
        " (this script is outside it: import \"{}\", or put the script in {}/)",
        relative_import(script_dir, &meant),
        root.display()
    )
}

/// The relative import specifier of `target` from a module in `from_dir` (both absolute and
/// normalised): `./a/b.ts` or `../../a/b.ts`.
fn relative_import(from_dir: &Path, target: &Path) -> String {
    let from: Vec<Component> = from_dir.components().collect();
    let to: Vec<Component> = target.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let ups = from.len() - common;
    let rest: PathBuf = to[common..].iter().collect();
    if ups == 0 { format!("./{}", rest.display()) } else { format!("{}{}", "../".repeat(ups), rest.display()) }
}

fn display_path(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if !root.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The warm-up module transpiles (a syntax error would end the warm-up at the parser, leaving
    /// the transforms cold for the first script) and keeps its runtime parts.
    #[test]
    fn the_warm_up_module_transpiles_through_every_transform() {
        let specifier = ModuleSpecifier::parse("file:///warm.ts").unwrap();
        let (js, _, _) = transpile_ts(&specifier, WARM_SOURCE.to_string(), false).unwrap();
        for kept in ["class Box", "Kind[Kind[\"B\"]", "this.value = value", "import { helper }"] {
            assert!(js.contains(kept), "{kept} not in:\n{js}");
        }
        assert!(!js.contains("interface") && !js.contains(": number"), "{js}");
    }

    #[test]
    fn schemes() {
        assert_eq!(url_scheme("node:fs").as_deref(), Some("node"));
        assert_eq!(url_scheme("https://x.y/z.ts").as_deref(), Some("https"));
        assert_eq!(url_scheme("./a:b.ts"), None);
        assert_eq!(url_scheme("/etc/passwd"), None);
        assert_eq!(url_scheme("lodash"), None);
    }

    #[test]
    fn a_script_outside_the_workspace_is_told_the_import_that_works() {
        let ws = Path::new("/p/.kodelet/mcp");
        assert_eq!(
            outside_script_hint(ws, Path::new("/p"), "./servers/gh/index.ts"),
            " (this script is outside it: import \"./.kodelet/mcp/servers/gh/index.ts\", or put the script in /p/.kodelet/mcp/)"
        );
        assert_eq!(relative_import(Path::new("/home/me/notes"), Path::new("/p/ws/a.ts")), "../../../p/ws/a.ts");
        // Inside the workspace, or a path that leaves it from there too: nothing to suggest.
        assert_eq!(outside_script_hint(ws, Path::new("/p/.kodelet/mcp/lib"), "../../x.ts"), "");
        assert_eq!(outside_script_hint(ws, Path::new("/p"), "../../etc/passwd"), "");
        assert_eq!(outside_script_hint(ws, Path::new("/p"), "/etc/passwd"), "");
    }

    #[test]
    fn normalizes_lexically() {
        assert_eq!(normalize(Path::new("/ws/a/../b/./c.ts")), PathBuf::from("/ws/b/c.ts"));
        assert_eq!(normalize(Path::new("/ws/../../etc/passwd")), PathBuf::from("/etc/passwd"));
    }

    #[test]
    fn media_kinds() {
        assert_eq!(media_kind(Path::new("a.ts")), Some(MediaKind::TypeScript));
        assert_eq!(media_kind(Path::new("a.mjs")), Some(MediaKind::JavaScript));
        assert_eq!(media_kind(Path::new("a.d.ts")), None);
        assert_eq!(media_kind(Path::new("passwd")), None);
    }
}
