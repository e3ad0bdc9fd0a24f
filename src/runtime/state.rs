//! What scripts keep between executions: `<workspace>/data/`, behind a fence.
//!
//! Scripts reach it through `store(key, value)` / `load(key)` (one JSON file per key under
//! `data/.store/`, so scripts storing different keys never touch the same file) and a small file
//! API (`readText`, `writeText`, `readJson`, `writeJson`, `list`) over paths relative to `data/`;
//! `agent state` and `agent run --fresh-state` use the same [`State`].
//!
//! The fence: a path is refused when it is empty, absolute, holds a NUL byte or a `..` component,
//! or names the reserved `.store/`. It is then resolved component by component through
//! [`super::confine`]: every directory on the way and the file itself are opened and kept only
//! when the kernel says (through `/proc/self/fd`) that they really are inside `data/`, so a
//! symlink inside `data/` that leads out (to `/etc`, to the workspace, anywhere) is refused, and
//! a `data/` that is itself a link is refused as a whole. Writes never open the target: they go
//! through `util::fs::write_atomic` (a temp file in the checked real directory, renamed over the
//! name), so a link planted at the name is replaced, never written through; readers and
//! concurrent scripts see the old file or the new one, never a mix.
//!
//! Quotas (`mcp.code_execution.state`): before each write the files under `data/` are counted
//! (links not followed); a write that would take the total past `max_bytes`, or add a file past
//! `max_files`, fails with `state quota exceeded: ...`. Concurrent writers are each checked
//! against what is on disk, so together they can overshoot by at most their own writes.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::confine::{self, Refusal};
use crate::config::StateConfig;
use crate::util::fs::{Access, write_atomic};
use crate::util::size::human_bytes;

/// The directory under the workspace.
pub const DATA_DIR: &str = "data";
/// Where `store` keeps its keys, inside `data/`.
pub const STORE_DIR: &str = ".store";
/// Longest file name a key may take once escaped.
const MAX_KEY_FILE: usize = 250;

/// The quotas of `data/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub max_bytes: u64,
    pub max_files: u64,
}

impl Quota {
    pub fn from_config(c: &StateConfig) -> Quota {
        Quota { max_bytes: c.max_bytes, max_files: c.max_files }
    }
}

impl Default for Quota {
    fn default() -> Self {
        Quota::from_config(&StateConfig::default())
    }
}

/// One thing in `data/`, as `agent state ls` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// `key` (from `store`) or `file`.
    pub kind: &'static str,
    /// The key, or the path relative to `data/`.
    pub name: String,
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

impl State {
    /// `workspace` should be absolute.
    pub fn new(workspace: &Path, quota: Quota) -> State {
        State { workspace: workspace.to_path_buf(), quota }
    }

    /// Where `data/` really is; `None` when it does not exist and `create` is false.
    fn data(&self, create: bool) -> Result<Option<PathBuf>> {
        let shown = self.workspace.join(DATA_DIR);
        if create {
            // Creating a missing directory does not follow a link at that name (it fails instead).
            if let Err(e) = std::fs::create_dir_all(&shown)
                && e.kind() != ErrorKind::AlreadyExists
            {
                return Err(format!("cannot create {}: {e}", shown.display()));
            }
        }
        let ws = match std::fs::canonicalize(&self.workspace) {
            Ok(p) => p,
            Err(e) if e.kind() == ErrorKind::NotFound && !create => return Ok(None),
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
            Err(Refusal::Missing(e)) if e.kind() == ErrorKind::NotFound && !create => Ok(None),
            Err(Refusal::Missing(e)) => Err(format!("cannot open {}: {e}", shown.display())),
        }
    }

    /// The value stored under `key` (JSON text), `None` when there is none.
    pub fn load(&self, key: &str) -> Result<Option<String>> {
        let file = key_file(key)?;
        let Some(data) = self.data(false)? else { return Ok(None) };
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
            Some(text) => {
                let data = self.data(true)?.unwrap_or_default();
                self.write_at(&data, &[STORE_DIR, &file], text.as_bytes(), &format!("key {key:?}"))
            }
            None => {
                let Some(data) = self.data(false)? else { return Ok(()) };
                match self.parent(&data, &[STORE_DIR, &file], false)? {
                    Some(dir) => remove_file(&dir.join(&file)),
                    None => Ok(()),
                }
            }
        }
    }

    /// The bytes of `data/<path>`.
    pub fn read(&self, path: &str) -> Result<Vec<u8>> {
        let parts = check_path(path)?;
        let missing = || format!("data/{} does not exist", parts.join("/"));
        let Some(data) = self.data(false)? else { return Err(missing()) };
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
        let data = self.data(true)?.unwrap_or_default();
        self.write_at(&data, &parts, bytes, &format!("data/{}", parts.join("/")))
    }

    /// The names in `data/<dir>` (`""`: `data/` itself), sorted; directories end in `/`. The
    /// reserved `.store/` is not listed.
    pub fn list(&self, dir: &str) -> Result<Vec<String>> {
        let parts = if dir.is_empty() || dir == "." || dir == "./" { Vec::new() } else { check_path(dir)? };
        let Some(data) = self.data(false)? else {
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

    /// Every key and every file under `data/`, keys first, each sorted.
    pub fn entries(&self) -> Result<Vec<Entry>> {
        let Some(data) = self.data(false)? else { return Ok(Vec::new()) };
        let mut keys = Vec::new();
        let mut files = Vec::new();
        walk(&data, &data, &mut |rel, len| {
            let rel = rel.to_string_lossy().into_owned();
            match rel.strip_prefix(&format!("{STORE_DIR}/")) {
                Some(file) => {
                    if let Some(key) = key_from_file(file) {
                        keys.push(Entry { kind: "key", name: key, bytes: len });
                    }
                }
                None if rel.rsplit('/').next().is_some_and(|n| n.starts_with(".agent-tmp-")) => {}
                None => files.push(Entry { kind: "file", name: rel, bytes: len }),
            }
        });
        keys.sort_by(|a, b| a.name.cmp(&b.name));
        files.sort_by(|a, b| a.name.cmp(&b.name));
        keys.extend(files);
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
        let Some(data) = self.data(false)? else { return Ok(None) };
        if let Ok(file) = key_file(name)
            && let Some(dir) = self.parent(&data, &[STORE_DIR, &file], false)?
            && std::fs::symlink_metadata(dir.join(&file)).is_ok()
        {
            remove_file(&dir.join(&file))?;
            return Ok(Some(Kind::Key));
        }
        let Ok(parts) = check_path(name) else { return Ok(None) };
        let Some(dir) = self.parent(&data, &parts, false)? else { return Ok(None) };
        let last = parts.last().copied().unwrap_or_default();
        let path = dir.join(last);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&path)
                .map(|()| Some(Kind::Directory))
                .map_err(|e| format!("cannot remove data/{name}: {e}")),
            Ok(_) => remove_file(&path).map(|()| Some(Kind::File)),
            Err(_) => Ok(None),
        }
    }

    /// Removes `data/` and everything in it (a link at `data` is removed, not followed).
    /// Returns whether there was anything.
    pub fn clear(&self) -> Result<bool> {
        let data = self.workspace.join(DATA_DIR);
        match std::fs::symlink_metadata(&data) {
            Err(_) => Ok(false),
            Ok(m) if m.is_dir() => {
                std::fs::remove_dir_all(&data).map_err(|e| format!("cannot clear {}: {e}", data.display()))?;
                Ok(true)
            }
            Ok(_) => {
                std::fs::remove_file(&data).map_err(|e| format!("cannot remove {}: {e}", data.display()))?;
                Ok(true)
            }
        }
    }

    /// Bytes and files under `data/` (links count as files of their own size, never followed).
    pub fn usage(&self) -> Result<(u64, u64)> {
        let Some(data) = self.data(false)? else { return Ok((0, 0)) };
        Ok(usage_of(&data))
    }

    /// Opens `data/<parts>` where it really is inside `data/`; `None` when it does not exist.
    fn open(&self, data: &Path, parts: &[&str]) -> Result<Option<confine::Confined>> {
        let Some(dir) = self.parent(data, parts, false)? else { return Ok(None) };
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
    /// `data/` at each step; created with `create`. `None` when it does not exist.
    fn parent(&self, data: &Path, parts: &[&str], create: bool) -> Result<Option<PathBuf>> {
        let mut real = data.to_path_buf();
        let dirs = parts.len().saturating_sub(1);
        for (i, part) in parts[..dirs].iter().enumerate() {
            let next = real.join(part);
            let upto = &parts[..=i];
            match confine::open_inside(data, &next) {
                Ok(d) if d.is_dir() => real = d.real,
                Ok(_) => return Err(format!("data/{} is a file, not a directory", shown(upto))),
                Err(Refusal::Missing(e)) if e.kind() == ErrorKind::NotFound => {
                    if !create {
                        return Ok(None);
                    }
                    if let Err(e) = std::fs::create_dir(&next)
                        && e.kind() != ErrorKind::AlreadyExists
                    {
                        return Err(format!("cannot create data/{}: {e}", shown(upto)));
                    }
                    match confine::open_inside(data, &next) {
                        Ok(d) if d.is_dir() => real = d.real,
                        Ok(_) => return Err(format!("data/{} is a file, not a directory", shown(upto))),
                        Err(r) => return Err(refusal(r, upto)),
                    }
                }
                Err(r) => return Err(refusal(r, upto)),
            }
        }
        Ok(Some(real))
    }

    fn write_at(&self, data: &Path, parts: &[&str], bytes: &[u8], what: &str) -> Result<()> {
        let dir = self.parent(data, parts, true)?.unwrap_or_default();
        let last = parts.last().copied().unwrap_or_default();
        let mut target = dir.join(last);
        let mut old_len = None;
        if let Ok(m) = std::fs::symlink_metadata(&target) {
            if m.file_type().is_symlink() {
                // A link inside data/ to a file inside data/ writes that file; anything else is refused.
                match confine::open_inside(data, &target) {
                    Ok(c) if c.meta.is_file() => {
                        old_len = Some(c.meta.len());
                        target = c.real;
                    }
                    Ok(_) => return Err(format!("{what} is a directory")),
                    Err(Refusal::Missing(_)) => {
                        return Err(format!("{what} is a symbolic link that leads nowhere"));
                    }
                    Err(r) => return Err(refusal(r, parts)),
                }
            } else if m.is_dir() {
                return Err(format!("{what} is a directory"));
            } else {
                old_len = Some(m.len());
            }
        }
        let (used, files) = usage_of(data);
        let after = used.saturating_sub(old_len.unwrap_or(0)).saturating_add(bytes.len() as u64);
        if after > self.quota.max_bytes {
            return Err(format!(
                "state quota exceeded: writing {} would bring data/ to {} of {} (mcp.code_execution.state.max_bytes)",
                human_bytes(bytes.len() as u64),
                human_bytes(after),
                human_bytes(self.quota.max_bytes)
            ));
        }
        if old_len.is_none() && files >= self.quota.max_files {
            return Err(format!(
                "state quota exceeded: data/ already holds {files} files of {} (mcp.code_execution.state.max_files)",
                self.quota.max_files
            ));
        }
        write_atomic(&target, bytes, Access::Private).map_err(|e| format!("cannot write {what}: {e}"))
    }
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

fn remove_file(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot remove {}: {e}", path.display())),
    }
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

fn usage_of(data: &Path) -> (u64, u64) {
    let mut bytes = 0u64;
    let mut files = 0u64;
    walk(data, data, &mut |_, len| {
        bytes = bytes.saturating_add(len);
        files += 1;
    });
    (bytes, files)
}

/// Calls `f(path relative to root, size)` for every non-directory under `dir`, links not followed.
fn walk(root: &Path, dir: &Path, f: &mut dyn FnMut(&Path, u64)) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let path = e.path();
        let Ok(m) = std::fs::symlink_metadata(&path) else { continue };
        if m.is_dir() {
            walk(root, &path, f);
        } else {
            f(path.strip_prefix(root).unwrap_or(&path), m.len());
        }
    }
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
        let s = State::new(ws.path(), Quota { max_bytes: 100, max_files: 3 });
        assert_eq!(s.load("k").unwrap(), None);
        s.store("k", Some("[1,2]")).unwrap();
        assert_eq!(s.load("k").unwrap().as_deref(), Some("[1,2]"));
        s.write("a/b.txt", b"hello").unwrap();
        assert_eq!(s.read_text("a/b.txt").unwrap(), "hello");
        assert_eq!(s.list("").unwrap(), ["a/"]);
        let err = s.write("big", &[b'x'; 200]).unwrap_err();
        assert!(err.starts_with("state quota exceeded: writing 200 B would bring data/ to"), "{err}");
        s.write("c", b"1").unwrap();
        let err = s.write("d", b"1").unwrap_err();
        assert!(err.contains("already holds 3 files of 3"), "{err}");
        s.write("c", b"22").unwrap();
        let names: Vec<String> = s.entries().unwrap().into_iter().map(|e| format!("{}:{}", e.kind, e.name)).collect();
        assert_eq!(names, ["key:k", "file:a/b.txt", "file:c"]);
        s.store("k", None).unwrap();
        assert_eq!(s.load("k").unwrap(), None);
        assert!(s.clear().unwrap());
        assert_eq!(s.usage().unwrap(), (0, 0));
    }

    #[test]
    fn links_out_of_data_are_refused() {
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
    }
}
