//! What scripts keep between executions: `<workspace>/data/`, behind a fence.
//!
//! Scripts reach it through `store(key, value)` / `load(key)` (one JSON file per key under
//! `data/.store/`, so scripts storing different keys never touch the same file) and a small file
//! API (`readText`, `writeText`, `readJson`, `writeJson`, `list`) over paths relative to `data/`;
//! `agent state` and `agent run --fresh-state` use the same [`State`].
//!
//! The fence: a path is refused when it is empty, absolute, holds a NUL byte or a `..` component,
//! has more than [`MAX_COMPONENTS`] components, or names the reserved `.store/`.
//!
//! Reads resolve it component by component through [`super::confine`]: every directory on the
//! way and the file itself are opened and kept only when the kernel says (through
//! `/proc/self/fd`) that they really are inside `data/`.
//!
//! Writes and removals never go by path once `data/` is open: `data` is opened from the
//! workspace's descriptor without following a link, each directory on the way below it with
//! `openat2(RESOLVE_BENEATH)` (a link is followed only while it stays inside `data/`; without
//! `openat2`, not at all), new directories are made with `mkdirat` and opened with `O_NOFOLLOW`,
//! and the file is replaced by a temp file renamed over it in that directory's descriptor
//! ([`Dir::write_atomic`]). A process that swaps a directory for a link after it was opened
//! changes nothing: the write lands in the directory that was opened. A link at the file's name
//! that stays inside `data/` is written through (its target replaced); any other link is refused.
//!
//! Quotas: one for `data/` and `skills/` together, kept as a running total under a lock
//! ([`super::quota`]); a write is checked, directories it needs included, before it creates
//! anything.

use std::ffi::{OsStr, OsString};
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::confine::{self, Refusal};
use super::quota::{Change, Ledger};
use crate::util::fs::{Access, Dir, Node};

pub use super::quota::{DATA_DIR, Quota, Usage};
/// Where `store` keeps its keys, inside `data/`.
pub const STORE_DIR: &str = ".store";
/// Longest file name a key may take once escaped.
const MAX_KEY_FILE: usize = 250;
/// Most components a path under `data/` may have.
pub const MAX_COMPONENTS: usize = 64;
/// Links followed at a file's name before a write gives up.
const MAX_LINK_HOPS: usize = 8;

/// One thing in `data/` or `skills/`, as `agent state ls` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// `key` (from `store`), `file`, `dir` (a directory of `data/`, `.store` included) or
    /// `skill` (anything under `skills/`).
    pub kind: &'static str,
    /// The key, the path relative to `data/`, or `skills/<path>`.
    pub name: String,
    /// Bytes of a file or link; 0 for a directory.
    pub bytes: u64,
}

/// What a name in `data/` turned out to be (`show`, `remove`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Key,
    File,
    Directory,
}

/// The state of one workspace.
#[derive(Debug, Clone)]
pub struct State {
    workspace: PathBuf,
    quota: Quota,
}

type Result<T> = std::result::Result<T, String>;

/// Where a write goes, found before anything is created.
struct Plan {
    /// The deepest directory on the way that exists (`None`: `data/` itself is missing).
    base: Option<Dir>,
    /// Directories still to make below `base`, in order.
    missing: Vec<OsString>,
    /// The file's name in the last directory.
    name: OsString,
    /// The size of what the write replaces.
    old: Option<u64>,
}

impl State {
    /// `workspace` should be absolute.
    pub fn new(workspace: &Path, quota: Quota) -> State {
        State { workspace: workspace.to_path_buf(), quota }
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    pub fn quota(&self) -> Quota {
        self.quota
    }

    /// The workspace held open, created first with `create`; `None` when it does not exist.
    pub(crate) fn open_workspace(&self, create: bool) -> Result<Option<Dir>> {
        if create && let Err(e) = crate::util::fs::create_private_dirs(&self.workspace) {
            return Err(format!("cannot create the workspace {}: {e}", self.workspace.display()));
        }
        match Dir::open(&self.workspace) {
            Ok(d) => Ok(Some(d)),
            Err(e) if e.kind() == ErrorKind::NotFound && !create => Ok(None),
            Err(e) => Err(format!("cannot open the workspace {}: {e}", self.workspace.display())),
        }
    }

    /// `<workspace>/<area>` (`data`, `skills`) held open, never through a link; `None` when
    /// it does not exist. `kept` says what is kept there, for the error about a link.
    pub(crate) fn open_area(&self, ws: &Dir, area: &str, kept: &str) -> Result<Option<Dir>> {
        let shown = self.workspace.join(area);
        match ws.sub(area) {
            Ok(d) => Ok(Some(d)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(match ws.node(area) {
                Ok(Some(Node::Link { .. })) => format!(
                    "{} is a symbolic link; {kept} only in a real directory inside the workspace",
                    shown.display()
                ),
                Ok(Some(Node::Dir)) | Err(_) => format!("cannot open {}: {e}", shown.display()),
                Ok(_) => format!("{} is not a directory", shown.display()),
            }),
        }
    }

    /// `<workspace>/<area>` open, made first (with `mode`) when it is missing.
    pub(crate) fn make_area(&self, ws: &Dir, area: &str, kept: &str, mode: u32) -> Result<Dir> {
        if let Err(e) = ws.create_dir(area, mode)
            && e.kind() != ErrorKind::AlreadyExists
        {
            return Err(format!("cannot create {}: {e}", self.workspace.join(area).display()));
        }
        self.open_area(ws, area, kept)?
            .ok_or_else(|| format!("{} disappeared while it was being made", self.workspace.join(area).display()))
    }

    /// Where `data/` really is (for reads); `None` when it does not exist.
    fn data(&self) -> Result<Option<PathBuf>> {
        let shown = self.workspace.join(DATA_DIR);
        let ws = match std::fs::canonicalize(&self.workspace) {
            Ok(p) => p,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot open the workspace {}: {e}", self.workspace.display())),
        };
        match confine::open_inside(&ws, &ws.join(DATA_DIR)) {
            Ok(d) if d.is_dir() => Ok(Some(d.real)),
            Ok(_) => Err(format!("{} is not a directory", shown.display())),
            Err(Refusal::Outside) => Err(format!(
                "{} leads outside the workspace (a symbolic link); script state is kept only inside it",
                shown.display()
            )),
            Err(Refusal::Special) => Err(format!("{} is not a directory", shown.display())),
            Err(Refusal::Missing(e)) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(Refusal::Missing(e)) => Err(format!("cannot open {}: {e}", shown.display())),
        }
    }

    /// The value stored under `key` (JSON text), `None` when there is none.
    pub fn load(&self, key: &str) -> Result<Option<String>> {
        let file = key_file(key)?;
        let Some(data) = self.data()? else { return Ok(None) };
        match self.open(&data, &[STORE_DIR, &file])? {
            Some(opened) => {
                let bytes = read(opened, &format!("key {key:?}"), self.quota.max_bytes)?;
                String::from_utf8(bytes).map(Some).map_err(|_| format!("the stored value of key {key:?} is not UTF-8"))
            }
            None => Ok(None),
        }
    }

    /// Stores `json` (JSON text) under `key`; `None` removes the key.
    pub fn store(&self, key: &str, json: Option<&str>) -> Result<()> {
        let file = key_file(key)?;
        match json {
            Some(text) => self.write_parts(&[STORE_DIR, &file], text.as_bytes(), &format!("key {key:?}")),
            None => self.remove_key(&file).map(|_| ()),
        }
    }

    /// The bytes of `data/<path>`.
    pub fn read(&self, path: &str) -> Result<Vec<u8>> {
        let parts = check_path(path)?;
        let missing = || format!("data/{} does not exist", parts.join("/"));
        let Some(data) = self.data()? else { return Err(missing()) };
        let opened = self.open(&data, &parts)?.ok_or_else(missing)?;
        if opened.is_dir() {
            return Err(format!("data/{} is a directory; list(...) it instead", parts.join("/")));
        }
        read(opened, &format!("data/{}", parts.join("/")), self.quota.max_bytes)
    }

    /// The text of `data/<path>` (UTF-8).
    pub fn read_text(&self, path: &str) -> Result<String> {
        let bytes = self.read(path)?;
        String::from_utf8(bytes).map_err(|_| format!("data/{} is not UTF-8 text", path.trim_start_matches("./")))
    }

    /// Replaces `data/<path>` with `bytes`, creating the directories on the way.
    pub fn write(&self, path: &str, bytes: &[u8]) -> Result<()> {
        let parts = check_path(path)?;
        self.write_parts(&parts, bytes, &format!("data/{}", parts.join("/")))
    }

    /// The names in `data/<dir>` (`""`: `data/` itself), sorted; directories end in `/`. The
    /// reserved `.store/` is not listed.
    pub fn list(&self, dir: &str) -> Result<Vec<String>> {
        let parts = if dir.is_empty() || dir == "." || dir == "./" { Vec::new() } else { check_path(dir)? };
        let Some(data) = self.data()? else {
            return if parts.is_empty() { Ok(Vec::new()) } else { Err(format!("data/{dir} does not exist")) };
        };
        let opened = if parts.is_empty() {
            confine::open_inside(&data, &data).map_err(|_| "cannot open data/".to_string())?
        } else {
            self.open(&data, &parts)?.ok_or_else(|| format!("data/{} does not exist", parts.join("/")))?
        };
        if !opened.is_dir() {
            return Err(format!("data/{} is a file, not a directory", parts.join("/")));
        }
        let names = opened.names().map_err(|e| format!("cannot list data/{}: {e}", parts.join("/")))?;
        let mut out = Vec::new();
        for name in names {
            let Ok(name) = name.into_string() else { continue };
            if (parts.is_empty() && name == STORE_DIR) || name.starts_with(".agent-tmp-") {
                continue;
            }
            let is_dir = std::fs::symlink_metadata(opened.real.join(&name)).is_ok_and(|m| m.is_dir());
            out.push(if is_dir { format!("{name}/") } else { name });
        }
        Ok(out)
    }

    /// Everything under `data/` (keys first, then files and directories, by name) and under
    /// `skills/`, as it is on disk.
    pub fn entries(&self) -> Result<Vec<Entry>> {
        let Some(ws) = self.open_workspace(false)? else { return Ok(Vec::new()) };
        let mut keys = Vec::new();
        let mut files = Vec::new();
        let mut skills = Vec::new();
        let store = OsString::from(STORE_DIR);
        if let Some(data) = self.open_area(&ws, DATA_DIR, "script state is kept")? {
            super::quota::walk(&data, &mut Vec::new(), &mut |rel, node| {
                let name = joined(rel);
                match (rel, node) {
                    ([first, file], Node::File { bytes } | Node::Link { bytes }) if *first == store => {
                        match file.to_str().and_then(key_from_file) {
                            Some(key) => keys.push(Entry { kind: "key", name: key, bytes }),
                            None => files.push(Entry { kind: "file", name, bytes }),
                        }
                    }
                    (_, Node::Dir) => files.push(Entry { kind: "dir", name, bytes: 0 }),
                    (_, node) => files.push(Entry { kind: "file", name, bytes: node.bytes() }),
                }
            })
            .map_err(|e| format!("cannot list data/: {e}"))?;
        }
        if let Some(dir) = self.open_area(&ws, crate::skills::SKILLS_DIR, "skills are kept")? {
            super::quota::walk(&dir, &mut Vec::new(), &mut |rel, node| {
                skills.push(Entry { kind: "skill", name: format!("skills/{}", joined(rel)), bytes: node.bytes() });
            })
            .map_err(|e| format!("cannot list skills/: {e}"))?;
        }
        keys.sort_by(|a, b| a.name.cmp(&b.name));
        keys.extend(files);
        keys.extend(skills);
        Ok(keys)
    }

    /// What `agent state show` prints: the stored value of key `name`, else the file
    /// `data/<name>`. `None` when neither exists.
    pub fn show(&self, name: &str) -> Result<Option<(Kind, Vec<u8>)>> {
        if key_file(name).is_ok()
            && let Some(v) = self.load(name)?
        {
            return Ok(Some((Kind::Key, v.into_bytes())));
        }
        if check_path(name).is_err() {
            return Ok(None);
        }
        match self.read(name) {
            Ok(bytes) => Ok(Some((Kind::File, bytes))),
            Err(e) if e.ends_with("does not exist") => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Removes key `name`, else `data/<name>` (a directory with what it holds). `None` when
    /// neither exists.
    pub fn remove(&self, name: &str) -> Result<Option<Kind>> {
        if let Ok(file) = key_file(name)
            && self.remove_key(&file)?
        {
            return Ok(Some(Kind::Key));
        }
        let Ok(parts) = check_path(name) else { return Ok(None) };
        let Some(ws) = self.open_workspace(false)? else { return Ok(None) };
        let Some(data) = self.open_area(&ws, DATA_DIR, "script state is kept")? else { return Ok(None) };
        let (dirs, last) = split(&parts);
        let dir = match data.beneath(dirs) {
            Ok(d) => d,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(open_error(&data, dirs, &e)),
        };
        let mut ledger = Ledger::open(&ws)?;
        let removed = match dir.node(last).map_err(|e| format!("cannot open data/{name}: {e}"))? {
            None => return Ok(None),
            Some(Node::Dir) => {
                dir.remove_dir_all(last).map_err(|e| format!("cannot remove data/{name}: {e}"))?;
                Kind::Directory
            }
            Some(_) => {
                dir.remove_file(last).map_err(|e| format!("cannot remove data/{name}: {e}"))?;
                Kind::File
            }
        };
        ledger.recount()?;
        Ok(Some(removed))
    }

    /// Removes `data/` and everything in it (a link at `data` is removed, not followed).
    /// Returns whether there was anything.
    pub fn clear(&self) -> Result<bool> {
        let Some(ws) = self.open_workspace(false)? else { return Ok(false) };
        let shown = self.workspace.join(DATA_DIR);
        let mut ledger = Ledger::open(&ws)?;
        let removed = match ws.node(DATA_DIR).map_err(|e| format!("cannot open {}: {e}", shown.display()))? {
            None => false,
            Some(Node::Dir) => {
                ws.remove_dir_all(DATA_DIR).map_err(|e| format!("cannot clear {}: {e}", shown.display()))?;
                true
            }
            Some(_) => {
                ws.remove_file(DATA_DIR).map_err(|e| format!("cannot remove {}: {e}", shown.display()))?;
                true
            }
        };
        ledger.recount()?;
        Ok(removed)
    }

    /// What `data/` and `skills/` hold, counted on disk now (the running total is set to it).
    pub fn usage(&self) -> Result<Usage> {
        let Some(ws) = self.open_workspace(false)? else { return Ok(Usage::default()) };
        Ledger::open(&ws)?.recount()
    }

    /// Opens `data/<parts>` where it really is inside `data/`; `None` when it does not exist.
    fn open(&self, data: &Path, parts: &[&str]) -> Result<Option<confine::Confined>> {
        let Some(dir) = self.parent(data, parts)? else { return Ok(None) };
        let last = parts.last().copied().unwrap_or_default();
        match confine::open_inside(data, &dir.join(last)) {
            Ok(c) => Ok(Some(c)),
            Err(Refusal::Missing(e)) if e.kind() == ErrorKind::NotFound => {
                if std::fs::symlink_metadata(dir.join(last)).is_ok_and(|m| m.file_type().is_symlink()) {
                    return Err(format!("data/{} is a symbolic link that leads nowhere", shown(parts)));
                }
                Ok(None)
            }
            Err(r) => Err(refusal(r, parts)),
        }
    }

    /// The real directory holding `data/<parts>` (all but the last part), checked inside
    /// `data/` at each step (for reads). `None` when it does not exist.
    fn parent(&self, data: &Path, parts: &[&str]) -> Result<Option<PathBuf>> {
        let mut real = data.to_path_buf();
        let dirs = parts.len().saturating_sub(1);
        for (i, part) in parts[..dirs].iter().enumerate() {
            match confine::open_inside(data, &real.join(part)) {
                Ok(d) if d.is_dir() => real = d.real,
                Ok(_) => return Err(format!("data/{} is a file, not a directory", shown(&parts[..=i]))),
                Err(Refusal::Missing(e)) if e.kind() == ErrorKind::NotFound => return Ok(None),
                Err(r) => return Err(refusal(r, &parts[..=i])),
            }
        }
        Ok(Some(real))
    }

    /// Removes the key stored in `.store/<file>`; whether there was one.
    fn remove_key(&self, file: &str) -> Result<bool> {
        let Some(ws) = self.open_workspace(false)? else { return Ok(false) };
        let Some(data) = self.open_area(&ws, DATA_DIR, "script state is kept")? else { return Ok(false) };
        let store = match data.sub(STORE_DIR) {
            Ok(d) => d,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(format!("cannot open data/{STORE_DIR}: {e}")),
        };
        let mut ledger = Ledger::open(&ws)?;
        match store.node(file).map_err(|e| format!("cannot open data/{STORE_DIR}/{file}: {e}"))? {
            None => Ok(false),
            Some(Node::Dir) => Err(format!("data/{STORE_DIR}/{file} is a directory")),
            Some(node) => {
                match store.remove_file(file) {
                    Ok(()) => ledger.commit(Change::removal(node.bytes())),
                    Err(e) if e.kind() == ErrorKind::NotFound => {}
                    Err(e) => return Err(format!("cannot remove data/{STORE_DIR}/{file}: {e}")),
                }
                Ok(true)
            }
        }
    }

    /// Replaces `data/<parts>` with `bytes`: the quota checked first, then the directories made
    /// and the file written, all through descriptors.
    fn write_parts(&self, parts: &[&str], bytes: &[u8], what: &str) -> Result<()> {
        let ws = self.open_workspace(true)?.ok_or_else(|| "the workspace disappeared".to_string())?;
        let mut ledger = Ledger::open(&ws)?;
        let data = self.open_area(&ws, DATA_DIR, "script state is kept")?;
        let plan = plan(data.as_ref(), parts, what)?;
        let new_entries = plan.missing.len() as u64 + u64::from(plan.old.is_none());
        let change = Change {
            added_bytes: bytes.len() as u64,
            freed_bytes: plan.old.unwrap_or(0),
            new_entries,
            gone_entries: 0,
        };
        ledger.check(self.quota, change, what)?;
        let mut made = 0;
        let written = (|| {
            let mut dir = match plan.base {
                Some(d) => d,
                None => self.make_area(&ws, DATA_DIR, "script state is kept", 0o700)?,
            };
            for (i, name) in plan.missing.iter().enumerate() {
                let upto = format!("data/{}", joined(&plan.missing[..=i]));
                match dir.create_dir(name, 0o700) {
                    Ok(()) => made += 1,
                    Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(format!("cannot create {upto}: {e}")),
                }
                dir = dir.sub(name).map_err(|e| format!("cannot open {upto}: {e}"))?;
            }
            dir.write_atomic(&plan.name, bytes, Access::Private).map_err(|e| format!("cannot write {what}: {e}"))
        })();
        match written {
            Ok(()) => ledger.commit(change),
            Err(_) => ledger.commit(Change { new_entries: made, ..Change::default() }),
        }
        written
    }
}

/// Where a write of `data/<parts>` goes. A link at the file's name is followed while it stays
/// inside `data/` (the write replaces its target); every directory is opened beneath `data/`.
fn plan(data: Option<&Dir>, parts: &[&str], what: &str) -> Result<Plan> {
    let (dirs, last) = split(parts);
    let Some(data) = data else {
        return Ok(Plan {
            base: None,
            missing: dirs.iter().map(OsString::from).collect(),
            name: last.into(),
            old: None,
        });
    };
    let mut rel: Vec<OsString> = parts.iter().map(OsString::from).collect();
    for hop in 0..=MAX_LINK_HOPS {
        let (name, dirs) = match rel.split_last() {
            Some((name, dirs)) if name != ".." && name != "." => (name.clone(), dirs),
            // A link to a directory, or one that climbs out.
            _ => {
                return Err(match data.beneath(&rel) {
                    Err(e) if is_escape(&e) => outside(what),
                    _ => format!("{what} is a directory"),
                });
            }
        };
        let mut base = data.beneath::<&OsStr>(&[]).map_err(|e| format!("cannot open data/: {e}"))?;
        for i in 0..dirs.len() {
            match data.beneath(&dirs[..=i]) {
                Ok(d) => base = d,
                Err(e) if e.kind() == ErrorKind::NotFound && hop == 0 => {
                    return Ok(Plan { base: Some(base), missing: dirs[i..].to_vec(), name, old: None });
                }
                Err(e) if hop == 0 => return Err(open_error(data, &dirs[..=i], &e)),
                Err(e) if is_escape(&e) => return Err(outside(what)),
                Err(_) => return Err(format!("{what} is a symbolic link that leads nowhere")),
            }
        }
        match base.node(&name).map_err(|e| format!("cannot open {what}: {e}"))? {
            None if hop == 0 => return Ok(Plan { base: Some(base), missing: Vec::new(), name, old: None }),
            None => return Err(format!("{what} is a symbolic link that leads nowhere")),
            Some(Node::File { bytes }) => {
                return Ok(Plan { base: Some(base), missing: Vec::new(), name, old: Some(bytes) });
            }
            Some(Node::Dir) => return Err(format!("{what} is a directory")),
            Some(Node::Special) => return Err(format!("{what} is not a regular file or directory")),
            Some(Node::Link { .. }) => {
                if !crate::util::fs::beneath_follows_links() {
                    return Err(format!("{what} is a symbolic link (links are not followed without openat2)"));
                }
                let target = base.read_link(&name).map_err(|e| format!("cannot read the link {what}: {e}"))?;
                if target.as_bytes().starts_with(b"/") {
                    return Err(outside(what));
                }
                let mut next = dirs.to_vec();
                next.extend(
                    target
                        .as_bytes()
                        .split(|b| *b == b'/')
                        .filter(|c| !c.is_empty() && *c != b".")
                        .map(|c| OsStr::from_bytes(c).to_os_string()),
                );
                rel = next;
            }
        }
    }
    Err(format!("{what}: too many levels of symbolic links"))
}

/// An error opening directory `data/<dirs>` for a write, in one line.
fn open_error<S: AsRef<OsStr>>(data: &Dir, dirs: &[S], e: &std::io::Error) -> String {
    let shown = format!("data/{}", joined(dirs));
    if is_escape(e) {
        return format!("{shown} leads outside data/ (a symbolic link); scripts may only use files inside data/");
    }
    if e.raw_os_error() == Some(libc::ENOTDIR) {
        // What is at the failing name: a file, or (without openat2) a link.
        let (parents, last) = match dirs.split_last() {
            Some((last, parents)) => (parents, last),
            None => return format!("cannot open {shown}: {e}"),
        };
        if let Ok(parent) = data.beneath(parents)
            && let Ok(Some(Node::Link { .. })) = parent.node(last)
        {
            if crate::util::fs::beneath_follows_links() {
                return format!("{shown} is a file, not a directory");
            }
            return format!("{shown} is a symbolic link (links are not followed without openat2)");
        }
        return format!("{shown} is a file, not a directory");
    }
    format!("cannot open {shown}: {e}")
}

/// Whether opening beneath `data/` failed because a link or `..` would leave it.
fn is_escape(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EXDEV) | Some(libc::ELOOP))
}

fn outside(what: &str) -> String {
    format!("{what} leads outside data/ (a symbolic link); scripts may only use files inside data/")
}

fn split<'a, 'b>(parts: &'a [&'b str]) -> (&'a [&'b str], &'b str) {
    match parts.split_last() {
        Some((last, dirs)) => (dirs, last),
        None => (&[], ""),
    }
}

fn joined<S: AsRef<OsStr>>(parts: &[S]) -> String {
    parts.iter().map(|p| p.as_ref().to_string_lossy()).collect::<Vec<_>>().join("/")
}

fn shown(parts: &[&str]) -> String {
    parts.join("/")
}

fn refusal(r: Refusal, parts: &[&str]) -> String {
    match r {
        Refusal::Outside => format!(
            "data/{} leads outside data/ (a symbolic link); scripts may only use files inside data/",
            shown(parts)
        ),
        Refusal::Special => format!("data/{} is not a regular file or directory", shown(parts)),
        Refusal::Missing(e) => format!("cannot open data/{}: {e}", shown(parts)),
    }
}

fn read(opened: confine::Confined, what: &str, max: u64) -> Result<Vec<u8>> {
    opened.read_bytes(max).map_err(|e| format!("cannot read {what}: {e}"))
}

/// Checks a path relative to `data/` and splits it into its components.
pub fn check_path(path: &str) -> Result<Vec<&str>> {
    if path.contains('\0') {
        return Err(format!("invalid path {path:?}: it contains a NUL byte"));
    }
    if path.starts_with('/') {
        return Err(format!(
            "invalid path {path:?}: absolute paths are not allowed; paths are relative to data/ (e.g. \"reports/week.json\")"
        ));
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                return Err(format!(
                    "invalid path {path:?}: `..` is not allowed; scripts may only use files inside data/"
                ));
            }
            p if p.len() > 255 => return Err(format!("invalid path {path:?}: a name is longer than 255 bytes")),
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Err(format!("invalid path {path:?}: it names no file"));
    }
    if parts.len() > MAX_COMPONENTS {
        return Err(format!(
            "invalid path {:?}…: more than {MAX_COMPONENTS} names deep",
            path.chars().take(40).collect::<String>()
        ));
    }
    if parts[0] == STORE_DIR {
        return Err(format!("invalid path {path:?}: data/{STORE_DIR}/ is reserved for store()/load()"));
    }
    Ok(parts)
}

/// The file name of `key` under `.store/`: letters, digits, `-` and `_` as they are, every
/// other byte as `%XX`, then `.json`.
pub fn key_file(key: &str) -> Result<String> {
    if key.is_empty() {
        return Err("invalid key \"\": keys are non-empty strings".into());
    }
    let mut out = String::with_capacity(key.len() + 5);
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.len() > MAX_KEY_FILE {
        return Err(format!(
            "invalid key {:?}…: too long (letters, digits, - and _ count 1, other bytes 3; at most {MAX_KEY_FILE})",
            key.chars().take(20).collect::<String>()
        ));
    }
    out.push_str(".json");
    Ok(out)
}

/// The key a `.store/` file name holds (the inverse of [`key_file`]).
pub fn key_from_file(name: &str) -> Option<String> {
    let enc = name.strip_suffix(".json")?;
    let mut bytes = Vec::with_capacity(enc.len());
    let b = enc.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = enc.get(i + 1..i + 3)?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            bytes.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip() {
        for key in ["a", "weekly report/v1", "ünï", "%41", "..", "x.json"] {
            let f = key_file(key).unwrap();
            assert!(!f.contains('/') && f != ".." && f.ends_with(".json"), "{f}");
            assert_eq!(key_from_file(&f).as_deref(), Some(key));
        }
        assert!(key_file("").is_err());
        assert!(key_file(&"é".repeat(100)).is_err());
    }

    #[test]
    fn paths_are_fenced() {
        assert_eq!(check_path("a/./b.json").unwrap(), ["a", "b.json"]);
        for bad in ["", "/etc/passwd", "../x", "a/../../x", "a\0b", ".store/k.json", "./"] {
            assert!(check_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn store_write_and_quota() {
        let ws = tempfile::tempdir().unwrap();
        let s = State::new(ws.path(), Quota { max_bytes: 100, max_files: 5 });
        assert_eq!(s.load("k").unwrap(), None);
        // .store/ and the key: two entries.
        s.store("k", Some("[1,2]")).unwrap();
        assert_eq!(s.load("k").unwrap().as_deref(), Some("[1,2]"));
        s.write("a/b.txt", b"hello").unwrap();
        assert_eq!(s.read_text("a/b.txt").unwrap(), "hello");
        assert_eq!(s.list("").unwrap(), ["a/"]);
        let err = s.write("big", &[b'x'; 200]).unwrap_err();
        assert!(
            err.starts_with("state quota exceeded: writing data/big (200 B) would bring data/ and skills/ to"),
            "{err}"
        );
        s.write("c", b"1").unwrap();
        let err = s.write("d/e", b"1").unwrap_err();
        assert!(
            err.contains("data/ and skills/ hold 5 of 5 files and directories and writing data/d/e adds 2"),
            "{err}"
        );
        assert!(!ws.path().join("data/d").exists(), "a refused write makes no directory");
        s.write("c", b"22").unwrap();
        let names: Vec<String> = s.entries().unwrap().into_iter().map(|e| format!("{}:{}", e.kind, e.name)).collect();
        assert_eq!(names, ["key:k", "dir:.store", "dir:a", "file:a/b.txt", "file:c"]);
        assert_eq!(s.usage().unwrap(), Usage { bytes: 12, entries: 5 });
        s.store("k", None).unwrap();
        assert_eq!(s.load("k").unwrap(), None);
        assert_eq!(s.usage().unwrap(), Usage { bytes: 7, entries: 4 });
        assert!(s.clear().unwrap());
        assert_eq!(s.usage().unwrap(), Usage::default());
    }

    #[test]
    fn links_are_followed_by_writes_only_while_they_stay_inside_data() {
        let base = tempfile::tempdir().unwrap();
        let ws = base.path().join("ws");
        let s = State::new(&ws, Quota::default());
        s.write("ok.txt", b"x").unwrap();
        std::fs::write(base.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink("/etc", ws.join("data/etc")).unwrap();
        std::os::unix::fs::symlink(base.path().join("secret"), ws.join("data/secret")).unwrap();
        std::os::unix::fs::symlink("ok.txt", ws.join("data/alias")).unwrap();
        for p in ["etc/passwd", "secret"] {
            let err = s.read(p).unwrap_err();
            assert!(err.contains("leads outside data/"), "{p}: {err}");
        }
        assert!(s.write("etc/x", b"1").unwrap_err().contains("leads outside data/"));
        assert!(s.write("secret", b"1").unwrap_err().contains("leads outside data/"));
        assert_eq!(std::fs::read_to_string(base.path().join("secret")).unwrap(), "s");
        assert_eq!(s.read_text("alias").unwrap(), "x");

        // Links that stay inside data/ are followed by writes too.
        s.write("sub/keep", b"k").unwrap();
        let d = ws.join("data");
        let link = |target: &str, at: &str| std::os::unix::fs::symlink(target, d.join(at)).unwrap();
        link("sub", "dirlink");
        link("../..", "sub/up");
        link("../../../secret", "sub/up2");
        link("nowhere/x", "dangling");
        link("../ok.txt", "sub/back");
        if !crate::util::fs::beneath_follows_links() {
            // Without openat2 no link is followed: each of them is refused.
            assert!(s.write("alias", b"y").unwrap_err().contains("symbolic link"));
            return;
        }
        // Written through: the target is replaced, the link stays.
        s.write("alias", b"y").unwrap();
        assert_eq!(std::fs::read(d.join("ok.txt")).unwrap(), b"y");
        assert!(std::fs::symlink_metadata(d.join("alias")).unwrap().file_type().is_symlink());
        s.write("sub/back", b"z").unwrap();
        assert_eq!(std::fs::read(d.join("ok.txt")).unwrap(), b"z");
        s.write("dirlink/new", b"n").unwrap();
        assert_eq!(std::fs::read(d.join("sub/new")).unwrap(), b"n");
        let err = |p: &str| s.write(p, b"1").unwrap_err();
        assert_eq!(err("dirlink"), "data/dirlink is a directory");
        assert!(err("sub/up").starts_with("data/sub/up leads outside data/"), "{}", err("sub/up"));
        assert!(err("sub/up2").starts_with("data/sub/up2 leads outside data/"), "{}", err("sub/up2"));
        assert!(err("sub/up/x").starts_with("data/sub/up leads outside data/"), "{}", err("sub/up/x"));
        assert_eq!(err("dangling"), "data/dangling is a symbolic link that leads nowhere");
        assert_eq!(err("ok.txt/x"), "data/ok.txt is a file, not a directory");
        assert_eq!(std::fs::read_to_string(base.path().join("secret")).unwrap(), "s");
    }
}
